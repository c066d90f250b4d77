/* The private communicator interface: what data-parallel training needs from a collective
 * engine (MPI for CPU backends today; NCCL for CUDA backends behind the same table later),
 * beside the backend table and as small.
 *
 * CONVENTIONS
 * - A communicator joins the `size` processes (ranks) of one job; every rank calls every
 *   collective below in the same order with the same sizes, or the job hangs: the trainer
 *   keeps its ranks in lock step (lib/train/trainer.c, "distributed training").
 * - float* / void* arguments are memory of the backend the communicator was opened for (host
 *   memory for the CPU backend), unless the name ends in _host.
 * - Collectives block until this rank's part is done; results are identical on every rank.
 * - Every call returns VT_OK or a vt_status with the thread's error message set; an engine
 *   never aborts the process (MPI's errors are returned, not fatal, on its communicators).
 * - One communicator is used by one thread at a time. */
#ifndef VT_DIST_COMM_H
#define VT_DIST_COMM_H

#include <stddef.h>

#include "backend/backend.h"
#include "core/core.h"

typedef struct vt_comm vt_comm;

typedef enum vt_comm_op { VT_COMM_SUM = 0, VT_COMM_MAX = 1, VT_COMM_MIN = 2 } vt_comm_op;

typedef struct vt_comm_ops {
    void (*destroy)(vt_comm *c);
    /* x[i] = sum over ranks r of scale_r * x_r[i], in place, on every rank (scale_r: each
     * rank's own `scale`; 1/size gives the mean).  NCCL's ncclRedOpCreatePreMulSum is the same
     * operation. */
    vt_status (*allreduce_scaled)(vt_comm *c, float *x, size_t n, float scale);
    /* A few host values reduced with op, in place, on every rank (flags, counts, losses). */
    vt_status (*allreduce_host)(vt_comm *c, double *x_host, size_t n, vt_comm_op op);
    /* bytes of x from rank `root` to every rank. */
    vt_status (*bcast)(vt_comm *c, void *x, size_t bytes, int root);
    /* The same for host memory (always host, whatever the backend). */
    vt_status (*bcast_host)(vt_comm *c, void *x_host, size_t bytes, int root);
    /* Every rank's bytes of host memory, concatenated in rank order into all_host on every
     * rank: rank r sends bytes[r] (the same array on every rank) from mine_host. */
    vt_status (*allgather_host)(vt_comm *c, const void *mine_host, const size_t *bytes,
                                void *all_host);
} vt_comm_ops;

struct vt_comm {
    const vt_comm_ops *ops;
    int rank, size;           /* this process, of size >= 2 */
    int local_rank, local_size; /* on this host */
    char engine[64];          /* "MPI (Open MPI v4.1.4)", for the log */
};

/* How a process was launched, from its environment: the world size and this rank that a
 * launcher (mpirun / mpiexec / srun: OMPI_COMM_WORLD_*, PMI_*; torchrun: WORLD_SIZE, RANK)
 * set, 1 and 0 when none did.  *via_mpi: an MPI launcher set them. */
void vt_comm_launch(int *size, int *rank, int *via_mpi);

/* The communicator of this job for backend be, or *out = NULL when the process runs alone (no
 * launcher, or a world of 1).  Errors: VT_ERR_UNSUPPORTED with what to do when the process was
 * launched as one of several ranks and no engine can join them (a build without MPI, a
 * torchrun-style launch, a backend the engine cannot reach); VT_ERR_IO when the engine fails
 * to start.  Collective: every rank of the job calls it. */
vt_status vt_comm_open(vt_comm **out, const vt_backend *be);
void vt_comm_destroy(vt_comm *c); /* NULL is fine */

/* ---- engines (dist/comm_<engine>.c) ---- */
/* 1 when this build has the MPI engine. */
int vt_comm_mpi_available(void);
/* Starts MPI (once per process; the library then finalizes it at exit) unless the application
 * did, and joins its world on a communicator of its own. */
vt_status vt_comm_mpi_open(vt_comm **out);

#endif
