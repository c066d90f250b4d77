/* Which communicator a process gets: its launcher read from the environment, the engine chosen
 * for it, and a clear refusal where no engine can join the ranks. */
#include <stdlib.h>
#include <string.h>

#include "dist/comm.h"

/* The MPI engine is in the shared library only (meson.build): in a static link without it
 * these are NULL, and the process trains alone or says why it cannot join its ranks. */
#pragma weak vt_comm_mpi_available
#pragma weak vt_comm_mpi_open

static int env_int(const char *name, int *v)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    long x = strtol(s, &end, 10);
    if (*end || x < 0 || x > 1 << 24) return 0;
    *v = (int)x;
    return 1;
}

void vt_comm_launch(int *size, int *rank, int *via_mpi)
{
    /* MPI launchers first: Open MPI's mpirun, then the PMI of MPICH's Hydra and of Slurm */
    static const char *const mpi_vars[][2] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                              {"PMI_SIZE", "PMI_RANK"},
                                              {"PMIX_SIZE", "PMIX_RANK"}};
    *size = 1;
    *rank = 0;
    *via_mpi = 0;
    for (size_t i = 0; i < sizeof mpi_vars / sizeof mpi_vars[0]; i++) {
        int s, r = 0;
        if (env_int(mpi_vars[i][0], &s) && s >= 1) {
            env_int(mpi_vars[i][1], &r);
            *size = s;
            *rank = r;
            *via_mpi = 1;
            return;
        }
    }
    /* the convention of torchrun and the trainers of this field */
    int s, r = 0;
    if (env_int("WORLD_SIZE", &s) && s >= 1) {
        env_int("RANK", &r);
        *size = s;
        *rank = r;
    }
}

vt_status vt_comm_open(vt_comm **out, const vt_backend *be)
{
    *out = NULL;
    int size, rank, via_mpi;
    vt_comm_launch(&size, &rank, &via_mpi);
    if (size <= 1) return VT_OK;
    if (!via_mpi)
        return vt_fail(VT_ERR_UNSUPPORTED,
                       "this process is rank %d of WORLD_SIZE=%d (a torchrun-style launch), "
                       "which needs the NCCL engine, not built yet: launch the ranks with "
                       "'mpirun -np %d ...' instead (or set dist=off to train each process "
                       "on its own)", rank, size, size);
    if (!vt_comm_mpi_available || !vt_comm_mpi_available())
        return vt_fail(VT_ERR_UNSUPPORTED,
                       "this process is rank %d of %d started by an MPI launcher, but this "
                       "%s of libvisiontrain has no MPI: %s, or set dist=off to train each "
                       "process on its own", rank, size,
                       vt_comm_mpi_available ? "build" : "static link",
                       vt_comm_mpi_available
                           ? "install Open MPI (openmpi-bin, libopenmpi-dev) and rebuild "
                             "(meson setup -Dmpi=enabled)"
                           : "link the shared library (the MPI engine is not in "
                             "libvisiontrain.a)");
    if (!be->ops->host_memory)
        return vt_fail(VT_ERR_UNSUPPORTED,
                       "rank %d of %d: distributed training over MPI runs CPU backends; GPU "
                       "ranks need the NCCL engine, not built yet (device=cpu, or dist=off)",
                       rank, size);
    vt_comm *c;
    vt_status st = vt_comm_mpi_open(&c);
    if (st) return st;
    if (c->size != size || c->rank != rank) {
        int cs = c->size, cr = c->rank;
        vt_comm_destroy(c);
        return vt_fail(VT_ERR_IO, "the MPI world (rank %d of %d) is not the one the launcher "
                       "announced (rank %d of %d)", cr, cs, rank, size);
    }
    *out = c;
    return VT_OK;
}

void vt_comm_destroy(vt_comm *c)
{
    if (c) c->ops->destroy(c);
}
