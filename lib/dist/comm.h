/* The private communicator interface: what data-parallel training needs from a collective
 * engine (MPI for CPU backends: comm_mpi.c; NCCL for CUDA backends: the CUDA module's
 * cuda/nccl_comm.cu), beside the backend table and as small.
 *
 * CONVENTIONS
 * - A communicator joins the `size` processes (ranks) of one job; every rank calls every
 *   collective below in the same order with the same sizes, or the job hangs: the trainer
 *   keeps its ranks in lock step (lib/train/trainer.c, "distributed training").
 * - float* / void* arguments are memory of the backend the communicator was opened for (host
 *   memory for the CPU backend), unless the name ends in _host.
 * - Collectives block until this rank's part is done; results are identical on every rank.
 *   On a GPU backend a collective on device memory is queued instead, and may run beside the
 *   backend's later ops until `join` (below): the caller neither writes nor reads its memory
 *   before then.  Host collectives wait.
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
    /* The backend's later ops wait for the device collectives queued so far (NCCL: its own
     * stream beside the backend's), and so does the caller.  NULL where collectives are done
     * when they return (MPI). */
    vt_status (*join)(vt_comm *c);
} vt_comm_ops;

struct vt_comm {
    const vt_comm_ops *ops;
    const vt_backend *be;     /* the backend whose memory it reduces, which must outlive it
                               * (NCCL: its device and stream); NULL: any CPU backend (MPI) */
    int rank, size;           /* this process, of size >= 2 */
    int local_rank, local_size; /* on this host */
    char engine[64];          /* "MPI (Open MPI v4.1.4)", for the log */
};

/* How a process was launched, from its environment. */
typedef struct vt_launch {
    int size, rank;   /* the world and this rank: 1 and 0 when no launcher set them */
    int local_rank;   /* on this host: the launcher's (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
                       * SLURM_LOCALID, LOCAL_RANK), else `rank` (one host assumed) */
    int local_size;   /* the launcher's (OMPI_COMM_WORLD_LOCAL_SIZE, LOCAL_WORLD_SIZE), else size */
    int via_mpi;      /* an MPI launcher (mpirun / mpiexec / srun: OMPI_COMM_WORLD_*, PMI_*) */
    const char *master_addr; /* torchrun's MASTER_ADDR and MASTER_PORT: the rendezvous of a */
    int master_port;         /* launch without MPI (NULL and 0 when unset or not a port) */
} vt_launch;
void vt_comm_launch(vt_launch *out);

/* Seconds a rank waits for the others (the rendezvous, a collective of the NCCL engine) before
 * it gives up: $VT_DIST_TIMEOUT when it is a number > 0, else 600. */
double vt_comm_timeout(void);

/* The rendezvous of a launch without MPI (rendezvous.c): rank 0 listens on MASTER_PORT (on
 * loopback when MASTER_ADDR is a loopback address, else on every interface), the other ranks
 * connect to MASTER_ADDR:MASTER_PORT (retrying until rank 0 listens) and receive `bytes` (at
 * most 64 KiB) of rank 0's `blob` (NCCL's unique id).  Rank 0 returns once every rank has it;
 * with root_failed it tells each rank that it failed instead and returns VT_OK (its own error
 * is the caller's).  A stray connection (no protocol greeting) is dropped; another
 * WORLD_SIZE, a rank out of range or twice, or a wait past timeout_s end it with VT_ERR_IO on
 * the ranks concerned.  Plain sockets, not a transport: only this exchange goes over it. */
vt_status vt_dist_rendezvous(const char *addr, int port, int rank, int size, void *blob,
                             size_t bytes, int root_failed, double timeout_s);

/* The communicator of this job for backend be, or *out = NULL when the process runs alone (no
 * launcher, or a world of 1).  CPU backends join over MPI (an MPI launcher); GPU backends over
 * NCCL, whose id rank 0 hands out through MPI under an MPI launcher, else through
 * vt_dist_rendezvous at MASTER_ADDR:MASTER_PORT.  Errors: VT_ERR_UNSUPPORTED with what to do
 * when the process was launched as one of several ranks and no engine can join them (a build
 * without MPI, CPU ranks without an MPI launcher, GPU ranks without NCCL or a rendezvous
 * address); VT_ERR_IO when the engine fails to start.  Collective: every rank of the job calls
 * it. */
vt_status vt_comm_open(vt_comm **out, const vt_backend *be);
void vt_comm_destroy(vt_comm *c); /* NULL is fine */

/* ---- engines (dist/comm_<engine>.c) ---- */
/* 1 when this build has the MPI engine. */
int vt_comm_mpi_available(void);
/* Starts MPI (once per process; the library then finalizes it at exit) unless the application
 * did, and joins its world on a communicator of its own. */
vt_status vt_comm_mpi_open(vt_comm **out);

#endif
