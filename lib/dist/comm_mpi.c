/* The MPI engine of the communicator interface (dist/comm.h), for CPU backends: the buffers are
 * host memory, reduced by MPI_Allreduce and sent by MPI_Bcast on a duplicate of
 * MPI_COMM_WORLD, so the library's traffic never meets the application's own.
 *
 * MPI is started here when the application has not started it (MPI_Init_thread, asking for
 * MPI_THREAD_SERIALIZED: the trainer may run in any thread, one call at a time) and finalized
 * at exit; an application that starts MPI itself also finalizes it, after destroying its
 * trainers.
 *
 * Every collective is started nonblocking and waited for with MPI_Test for at most
 * VT_DIST_TIMEOUT seconds (comm.h): a rank that failed between two collectives and so never
 * joins the next one (or joins another) would otherwise hold the others forever.  Past the
 * timeout the collective stays pending, so MPI cannot finalize cleanly: the communicator is
 * dead (every later call fails at once) and this process leaves MPI unfinalized at exit, which
 * makes mpirun end the whole job with its message. */
#include "vt_config.h"
#include "dist/comm.h"

#if VT_HAVE_MPI

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

typedef struct mpi_comm {
    vt_comm base;
    MPI_Comm comm;
    double timeout_s;
    int dead; /* a collective timed out: still pending */
} mpi_comm;

/* collectives move at most this many elements per call (MPI counts are int) */
#define CHUNK ((size_t)1 << 28)

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int we_started;
static int abandoned; /* a collective left pending: MPI_Finalize would wait for it forever */

static vt_status mpi_fail(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = 0;
    return vt_fail(VT_ERR_IO, "MPI: %s failed: %s (another rank may have ended)", what,
                   len ? msg : "unknown error");
}

static void finalize_at_exit(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && !abandoned) MPI_Finalize();
}

/* Wait for request *req of a collective (what: for the message), MPI_Test in a loop.  A
 * nonblocking collective moves only inside MPI calls (its rounds, and over TCP its bytes), so
 * for the first second the loop calls MPI_Test back to back as a blocking collective would spin,
 * yielding the processor between calls (ranks may share cores); a wait that long is a rank
 * busy elsewhere (validating, saving), polled every millisecond. */
static vt_status wait_req(mpi_comm *m, MPI_Request *req, int rc, const char *what)
{
    if (rc != MPI_SUCCESS) return mpi_fail(rc, what);
    double start = vt_now();
    for (;;) {
        int done = 0;
        rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, what);
        if (done) return VT_OK;
        double waited = vt_now() - start;
        if (waited > m->timeout_s) {
            m->dead = 1;
            abandoned = 1;
            return vt_fail(VT_ERR_IO, "MPI: %s on rank %d waited %g s for the other ranks "
                           "(VT_DIST_TIMEOUT): a rank stopped or took another path; all ranks "
                           "stop", what, m->base.rank, m->timeout_s);
        }
        if (waited < 1.0) {
            sched_yield();
        } else {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

static vt_status dead_fail(const mpi_comm *m, const char *what)
{
    return vt_fail(VT_ERR_IO, "MPI: %s on rank %d: an earlier collective timed out; all ranks "
                   "stop", what, m->base.rank);
}

static void mpi_destroy(vt_comm *c)
{
    mpi_comm *m = (mpi_comm *)c;
    int fin = 0;
    MPI_Finalized(&fin);
    /* a collective left pending (dead) may still use the communicator: it stays */
    if (!fin && !m->dead && m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
    free(m);
}

static vt_status mpi_allreduce_scaled(vt_comm *c, float *x, size_t n, float scale)
{
    mpi_comm *m = (mpi_comm *)c;
    if (m->dead) return dead_fail(m, "MPI_Allreduce of the gradients");
    if (scale != 1.0f)
        for (size_t i = 0; i < n; i++) x[i] *= scale;
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        MPI_Request req;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, x + off, (int)k, MPI_FLOAT, MPI_SUM, m->comm, &req);
        VT_TRY(wait_req(m, &req, rc, "MPI_Allreduce of the gradients"));
    }
    return VT_OK;
}

static vt_status mpi_allreduce_host(vt_comm *c, double *x, size_t n, vt_comm_op op)
{
    mpi_comm *m = (mpi_comm *)c;
    if (m->dead) return dead_fail(m, "MPI_Allreduce");
    MPI_Op o = op == VT_COMM_MAX ? MPI_MAX : op == VT_COMM_MIN ? MPI_MIN : MPI_SUM;
    if (n > CHUNK) return vt_fail(VT_ERR_INVALID_ARGUMENT, "MPI: %zu host values", n);
    MPI_Request req;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, o, m->comm, &req);
    return wait_req(m, &req, rc, "MPI_Allreduce");
}

static vt_status mpi_bcast(vt_comm *c, void *x, size_t bytes, int root)
{
    mpi_comm *m = (mpi_comm *)c;
    if (m->dead) return dead_fail(m, "MPI_Bcast");
    for (size_t off = 0; off < bytes; off += CHUNK) {
        size_t k = bytes - off < CHUNK ? bytes - off : CHUNK;
        MPI_Request req;
        int rc = MPI_Ibcast((char *)x + off, (int)k, MPI_BYTE, root, m->comm, &req);
        VT_TRY(wait_req(m, &req, rc, "MPI_Bcast"));
    }
    return VT_OK;
}

static vt_status mpi_allgather(vt_comm *c, const void *mine, const size_t *bytes, void *all)
{
    mpi_comm *m = (mpi_comm *)c;
    if (m->dead) return dead_fail(m, "MPI_Allgatherv");
    int n = c->size;
    int *cnt = vt_malloc(2 * (size_t)n * sizeof(int));
    if (!cnt) return VT_ERR_OUT_OF_MEMORY;
    size_t off = 0;
    for (int r = 0; r < n; r++) {
        if (bytes[r] > INT_MAX || off > INT_MAX) {
            free(cnt);
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "MPI: gathering %zu bytes of rank %d at "
                           "offset %zu (more than 2 GB)", bytes[r], r, off);
        }
        cnt[r] = (int)bytes[r];
        cnt[n + r] = (int)off;
        off += bytes[r];
    }
    MPI_Request req;
    int rc = MPI_Iallgatherv(mine, cnt[c->rank], MPI_BYTE, all, cnt, cnt + n, MPI_BYTE, m->comm,
                             &req);
    vt_status st = wait_req(m, &req, rc, "MPI_Allgatherv");
    /* the counts must outlive a collective left pending */
    if (!m->dead) free(cnt);
    return st;
}

static const vt_comm_ops mpi_ops = {
    .destroy = mpi_destroy,
    .allreduce_scaled = mpi_allreduce_scaled,
    .allreduce_host = mpi_allreduce_host,
    .bcast = mpi_bcast,
    .bcast_host = mpi_bcast, /* the CPU backend's memory is host memory */
    .allgather_host = mpi_allgather,
};

int vt_comm_mpi_available(void) { return 1; }

static vt_status start_mpi(void)
{
    pthread_mutex_lock(&init_mu);
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    vt_status st = VT_OK;
    if (fin) {
        st = vt_fail(VT_ERR_BAD_STATE, "MPI was finalized in this process: it cannot be "
                     "started again for distributed training");
    } else if (!inited) {
        int provided = 0;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(rc, "MPI_Init_thread");
        } else if (!we_started) {
            we_started = 1;
            atexit(finalize_at_exit);
        }
    }
    pthread_mutex_unlock(&init_mu);
    return st;
}

vt_status vt_comm_mpi_open(vt_comm **out)
{
    *out = NULL;
    /* a collective left pending may still write into memory it was given: no more MPI in this
     * process (MPI_Comm_dup itself could wait forever for it) */
    if (abandoned)
        return vt_fail(VT_ERR_BAD_STATE, "MPI: a collective timed out earlier in this process "
                       "(VT_DIST_TIMEOUT); distributed training cannot start again here");
    vt_status st = start_mpi();
    if (st) return st;
    mpi_comm *m = vt_calloc(1, sizeof *m);
    if (!m) return VT_ERR_OUT_OF_MEMORY;
    m->base.ops = &mpi_ops;
    m->comm = MPI_COMM_NULL;
    m->timeout_s = vt_comm_timeout();
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    if (rc != MPI_SUCCESS) {
        free(m);
        return mpi_fail(rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &m->base.rank);
    MPI_Comm_size(m->comm, &m->base.size);
    MPI_Comm local;
    m->base.local_rank = 0;
    m->base.local_size = 1;
    if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, m->base.rank, MPI_INFO_NULL,
                            &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &m->base.local_rank);
        MPI_Comm_size(local, &m->base.local_size);
        MPI_Comm_free(&local);
    }
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(ver, &len) != MPI_SUCCESS) len = 0;
    ver[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING - 1] = 0;
    ver[strcspn(ver, ",\n")] = 0; /* "Open MPI v4.1.4, package: ..." */
    snprintf(m->base.engine, sizeof m->base.engine, "MPI (%s)", len ? ver : "unknown");
    *out = &m->base;
    return VT_OK;
}

#else /* no MPI in this build */

int vt_comm_mpi_available(void) { return 0; }

vt_status vt_comm_mpi_open(vt_comm **out)
{
    *out = NULL;
    return vt_fail(VT_ERR_UNSUPPORTED, "this build of libvisiontrain has no MPI (-Dmpi)");
}

#endif
