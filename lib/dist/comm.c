/* Which communicator a process gets: its launcher read from the environment, the engine chosen
 * for its backend (MPI for CPU ranks, NCCL for GPU ranks), and a clear refusal where no engine
 * can join the ranks. */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_device.h"
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

void vt_comm_launch(vt_launch *L)
{
    memset(L, 0, sizeof *L);
    L->size = 1;
    /* MPI launchers first: Open MPI's mpirun, then the PMI of MPICH's Hydra and of Slurm;
     * then the convention of torchrun and the trainers of this field */
    static const char *const vars[][5] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE", "mpi"},
        {"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "mpi"},
        {"PMIX_SIZE", "PMIX_RANK", "SLURM_LOCALID", "", "mpi"},
        {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", ""}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        int s;
        if (!env_int(vars[i][0], &s) || s < 1) continue;
        L->size = s;
        env_int(vars[i][1], &L->rank);
        L->local_rank = L->rank;
        L->local_size = s;
        env_int(vars[i][2], &L->local_rank);
        if (vars[i][3][0]) env_int(vars[i][3], &L->local_size);
        L->via_mpi = vars[i][4][0] != 0;
        break;
    }
    const char *addr = getenv("MASTER_ADDR");
    int port = 0;
    if (addr && *addr && env_int("MASTER_PORT", &port) && port > 0 && port <= 65535) {
        L->master_addr = addr;
        L->master_port = port;
    }
}

double vt_comm_timeout(void)
{
    const char *s = getenv("VT_DIST_TIMEOUT");
    if (s && *s) {
        char *end;
        double v = strtod(s, &end);
        if (!*end && v > 0) return v;
    }
    return 600;
}

static vt_status need_mpi(const vt_launch *L, const char *what)
{
    if (vt_comm_mpi_available && vt_comm_mpi_available()) return VT_OK;
    return vt_fail(VT_ERR_UNSUPPORTED,
                   "this process is rank %d of %d started by an MPI launcher, but this %s of "
                   "libvisiontrain has no MPI for %s: %s, or set dist=off to train each process "
                   "on its own", L->rank, L->size, vt_comm_mpi_available ? "build" : "static link",
                   what,
                   vt_comm_mpi_available
                       ? "install Open MPI (openmpi-bin, libopenmpi-dev) and rebuild "
                         "(meson setup -Dmpi=enabled)"
                       : "link the shared library (the MPI engine is not in libvisiontrain.a)");
}

/* MPI's world must be the one the launcher announced. */
static vt_status open_mpi(vt_comm **out, const vt_launch *L)
{
    vt_comm *c = NULL;
    VT_TRY(vt_comm_mpi_open(&c));
    if (c->size != L->size || c->rank != L->rank) {
        int cs = c->size, cr = c->rank;
        vt_comm_destroy(c);
        return vt_fail(VT_ERR_IO, "the MPI world (rank %d of %d) is not the one the launcher "
                       "announced (rank %d of %d)", cr, cs, L->rank, L->size);
    }
    *out = c;
    return VT_OK;
}

/* GPU ranks: rank 0's NCCL id (with its status first, so that a rank 0 without NCCL stops the
 * others with a reason) handed out over MPI or the rendezvous, then NCCL's communicator. */
static vt_status open_nccl(vt_comm **out, const vt_backend *be, const vt_launch *L)
{
    unsigned char blob[4 + VT_NCCL_ID_BYTES];
    memset(blob, 0, sizeof blob);
    vt_status mine = L->rank == 0 ? vt_cuda_nccl_unique_id(blob + 4) : VT_OK;
    blob[0] = mine != VT_OK;
    double timeout = vt_comm_timeout();
    if (L->via_mpi) {
        VT_TRY(need_mpi(L, "GPU ranks (NCCL's id goes through MPI)"));
        vt_comm *mpi = NULL;
        VT_TRY(open_mpi(&mpi, L));
        vt_status st = mpi->ops->bcast_host(mpi, blob, sizeof blob, 0);
        vt_comm_destroy(mpi);
        if (st) return st;
    } else {
        if (!L->master_addr)
            return vt_fail(VT_ERR_UNSUPPORTED, "this process is rank %d of WORLD_SIZE=%d, but "
                           "MASTER_ADDR and MASTER_PORT (where rank 0 waits for the others) are "
                           "not both set: set them, launch with mpirun, or set dist=off to "
                           "train each process on its own", L->rank, L->size);
        VT_TRY(vt_dist_rendezvous(L->master_addr, L->master_port, L->rank, L->size, blob,
                                  sizeof blob, mine != VT_OK, timeout));
    }
    if (mine) return mine; /* rank 0's own error, still set */
    if (blob[0])
        return vt_fail(VT_ERR_IO, "rank 0 could not start NCCL (its log says why); all ranks "
                       "stop");
    return vt_cuda_nccl_open(out, (vt_backend *)be, blob + 4, L->rank, L->size, L->local_rank,
                             L->local_size, timeout);
}

vt_status vt_comm_open(vt_comm **out, const vt_backend *be)
{
    *out = NULL;
    vt_launch L;
    vt_comm_launch(&L);
    if (L.size <= 1) return VT_OK;
    if (L.rank >= L.size)
        return vt_fail(VT_ERR_UNSUPPORTED, "the launcher says rank %d of %d", L.rank, L.size);
    if (!be->ops->host_memory) return open_nccl(out, be, &L);
    if (!L.via_mpi)
        return vt_fail(VT_ERR_UNSUPPORTED,
                       "this process is rank %d of WORLD_SIZE=%d (a torchrun-style launch): "
                       "that launch joins GPU ranks (NCCL); CPU ranks are joined by MPI: "
                       "launch them with 'mpirun -np %d ...' instead (or set dist=off to train "
                       "each process on its own)", L.rank, L.size, L.size);
    VT_TRY(need_mpi(&L, "CPU ranks"));
    return open_mpi(out, &L);
}

void vt_comm_destroy(vt_comm *c)
{
    if (c) c->ops->destroy(c);
}
