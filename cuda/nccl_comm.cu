/* The NCCL engine of the communicator interface (lib/dist/comm.h) for GPU ranks: one NCCL
 * communicator over the job's ranks, each on its CUDA backend's device and stream, NCCL loaded
 * with dlopen (nccl_load.h).  NOT YET RUN ON GPUs (docs/gpu.md): it builds here and its
 * loader is tested with fake NCCLs; the multi-GPU tests skip without GPUs.
 *
 * - Every NCCL call goes on the communicator's own stream, so NCCL sees them in the order they
 *   are made, the same on every rank.  A device collective (allreduce_scaled, bcast) first
 *   waits for the backend's stream as it is (an event: the gradients the backward has written
 *   so far), then runs beside the backward's later kernels; `join` makes the backend's stream
 *   wait for it before the optimizer reads the result.  That is the overlap of the gradient
 *   buckets (lib/train/dist.c).
 * - Host collectives (allreduce_host, bcast_host, allgather_host) go through a pinned host
 *   buffer and a device buffer of the communicator's, then wait for the communicator's stream.
 * - Waiting polls the stream and ncclCommGetAsyncError: a rank that failed or left (NCCL's
 *   remote error), or no progress for VT_DIST_TIMEOUT seconds, aborts the communicator
 *   (ncclCommAbort ends its kernels, so the stream drains) and every later call fails: each
 *   rank ends with a message instead of hanging. */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <pthread.h>

#include "cuda_internal.cuh"
#include "nccl_load.h"

extern "C" {
#include "dist/comm.h"
}

namespace {

struct nccl_comm {
    vt_comm base; /* must stay first */
    const vt_nccl *lib;
    vt_nccl_comm comm;
    vt_cuda_backend *cb;
    cudaStream_t cs;     /* the communicator's stream */
    cudaEvent_t ready;   /* on the backend's stream: what a device collective waits for */
    cudaEvent_t done;    /* on cs: what join makes the backend's stream wait for */
    int pending;         /* device collectives queued since the last join */
    double timeout_s;
    int dead;            /* aborted: every call fails */
    void *dev;           /* device staging of the host collectives */
    size_t dev_bytes;
    void *host;          /* pinned host staging */
    size_t host_bytes;
};

double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

vt_status nccl_fail(nccl_comm *c, vt_nccl_result r, const char *what)
{
    return vt_fail(VT_ERR_IO, "NCCL: %s failed on rank %d: %s", what, c->base.rank,
                   c->lib->error_string(r));
}

vt_status dead_fail(nccl_comm *c, const char *what)
{
    return vt_fail(VT_ERR_IO, "NCCL: %s on rank %d: the communicator was aborted after an "
                   "earlier failure; all ranks stop", what, c->base.rank);
}

void abort_comm(nccl_comm *c)
{
    if (c->dead) return;
    c->dead = 1;
    (void)c->lib->comm_abort(c->comm);
}

/* Wait for the communicator's stream, watching NCCL's asynchronous errors and the timeout. */
vt_status wait_stream(nccl_comm *c, const char *what)
{
    double start = now_s();
    long spins = 0;
    for (;;) {
        cudaError_t e = cudaStreamQuery(c->cs);
        if (e == cudaSuccess) return VT_OK;
        if (e != cudaErrorNotReady) {
            abort_comm(c);
            return vt_cuda_fail(e, what);
        }
        vt_nccl_result ar = VT_NCCL_SUCCESS;
        if (c->lib->comm_get_async_error(c->comm, &ar) == VT_NCCL_SUCCESS &&
            ar != VT_NCCL_SUCCESS && ar != VT_NCCL_IN_PROGRESS) {
            abort_comm(c);
            return vt_fail(VT_ERR_IO, "NCCL: %s on rank %d: %s%s; all ranks stop", what,
                           c->base.rank, c->lib->error_string(ar),
                           ar == VT_NCCL_REMOTE_ERROR ? " (another rank failed or ended)" : "");
        }
        if (now_s() - start > c->timeout_s) {
            abort_comm(c);
            return vt_fail(VT_ERR_IO, "NCCL: %s on rank %d waited %g s for the other ranks "
                           "(VT_DIST_TIMEOUT): a rank stopped or hangs; all ranks stop", what,
                           c->base.rank, c->timeout_s);
        }
        /* a collective of a step takes micro- to milliseconds: spin a little, then sleep */
        if (++spins > 100) {
            timespec ts = {0, spins > 10000 ? 1000000 : 20000};
            nanosleep(&ts, nullptr);
        }
    }
}

vt_status grow(nccl_comm *c, size_t bytes)
{
    if (bytes <= c->dev_bytes && bytes <= c->host_bytes) return VT_OK;
    size_t want = bytes < 4096 ? 4096 : bytes;
    VT_CUDA_GUARD(c->cb);
    if (want > c->dev_bytes) {
        if (c->dev) (void)cudaFree(c->dev);
        c->dev = nullptr;
        c->dev_bytes = 0;
        VT_CUDA_TRY(cudaMalloc(&c->dev, want), "cudaMalloc (NCCL staging)");
        c->dev_bytes = want;
    }
    if (want > c->host_bytes) {
        if (c->host) (void)cudaFreeHost(c->host);
        c->host = nullptr;
        c->host_bytes = 0;
        VT_CUDA_TRY(cudaHostAlloc(&c->host, want, cudaHostAllocDefault),
                    "cudaHostAlloc (NCCL staging)");
        c->host_bytes = want;
    }
    return VT_OK;
}

vt_nccl_stream stream_of(nccl_comm *c)
{
    return reinterpret_cast<vt_nccl_stream>(c->cs);
}

/* Before a device collective: the communicator's stream waits for the backend's as it is now,
 * and the next join has something to wait for. */
vt_status after_backend(nccl_comm *c)
{
    VT_CUDA_TRY(cudaEventRecord(c->ready, c->cb->stream), "cudaEventRecord (NCCL)");
    VT_CUDA_TRY(cudaStreamWaitEvent(c->cs, c->ready, 0), "cudaStreamWaitEvent (NCCL)");
    c->pending = 1;
    return VT_OK;
}

vt_status nccl_join(vt_comm *base)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    if (c->dead) return dead_fail(c, "join");
    if (!c->pending) return VT_OK;
    VT_CUDA_GUARD(c->cb);
    VT_CUDA_TRY(cudaEventRecord(c->done, c->cs), "cudaEventRecord (NCCL)");
    VT_CUDA_TRY(cudaStreamWaitEvent(c->cb->stream, c->done, 0), "cudaStreamWaitEvent (NCCL)");
    c->pending = 0;
    /* and the host waits for them, watching for a failed rank and the timeout: whatever reads
     * the result next (a download's cudaStreamSynchronize) could otherwise wait forever.  The
     * step's backward is all queued by now, so the buckets still overlap it on the device. */
    return wait_stream(c, "the gradients' all-reduce");
}

void nccl_destroy(vt_comm *base)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    {
        VT_CUDA_GUARD(c->cb);
        /* what is still queued finishes (or, past the timeout, is aborted) before NCCL's
         * resources go; an aborted communicator has nothing left to wait for */
        if (!c->dead && c->comm && wait_stream(c, "the end of distributed training") == VT_OK)
            (void)c->lib->comm_destroy(c->comm);
        if (c->cs) {
            (void)cudaStreamSynchronize(c->cb->stream);
            (void)cudaStreamDestroy(c->cs);
        }
        if (c->ready) (void)cudaEventDestroy(c->ready);
        if (c->done) (void)cudaEventDestroy(c->done);
        if (c->dev) (void)cudaFree(c->dev);
        if (c->host) (void)cudaFreeHost(c->host);
    }
    free(c);
}

vt_status nccl_allreduce_scaled(vt_comm *base, float *x, size_t n, float scale)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    if (c->dead) return dead_fail(c, "all-reduce of the gradients");
    if (!n) return VT_OK;
    VT_CUDA_GUARD(c->cb);
    VT_TRY(after_backend(c));
    vt_nccl_op op = VT_NCCL_SUM;
    vt_nccl_result r;
    /* x * scale summed over the ranks in one pass: NCCL's pre-multiplied sum, the scalar read
     * now (host immediate) */
    if (scale != 1.0f && (r = c->lib->red_op_create_pre_mul_sum(
                              &op, &scale, VT_NCCL_FLOAT32, VT_NCCL_SCALAR_HOST_IMMEDIATE,
                              c->comm)) != VT_NCCL_SUCCESS)
        return nccl_fail(c, r, "ncclRedOpCreatePreMulSum");
    r = c->lib->all_reduce(x, x, n, VT_NCCL_FLOAT32, op, c->comm, stream_of(c));
    if (op != VT_NCCL_SUM) (void)c->lib->red_op_destroy(op, c->comm);
    return r == VT_NCCL_SUCCESS ? VT_OK : nccl_fail(c, r, "ncclAllReduce of the gradients");
}

vt_status nccl_bcast(vt_comm *base, void *x, size_t bytes, int root)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    if (c->dead) return dead_fail(c, "broadcast");
    if (!bytes) return VT_OK;
    VT_CUDA_GUARD(c->cb);
    VT_TRY(after_backend(c));
    vt_nccl_result r = c->lib->broadcast(x, x, bytes, VT_NCCL_UINT8, root, c->comm, stream_of(c));
    return r == VT_NCCL_SUCCESS ? VT_OK : nccl_fail(c, r, "ncclBroadcast");
}

vt_status nccl_allreduce_host(vt_comm *base, double *x, size_t n, vt_comm_op op)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    if (c->dead) return dead_fail(c, "all-reduce");
    if (!n) return VT_OK;
    size_t bytes = n * sizeof(double);
    VT_TRY(grow(c, bytes));
    VT_CUDA_GUARD(c->cb);
    memcpy(c->host, x, bytes);
    cudaStream_t s = c->cs;
    VT_CUDA_TRY(cudaMemcpyAsync(c->dev, c->host, bytes, cudaMemcpyHostToDevice, s),
                "cudaMemcpyAsync (NCCL staging)");
    vt_nccl_op o = op == VT_COMM_MAX ? VT_NCCL_MAX : op == VT_COMM_MIN ? VT_NCCL_MIN : VT_NCCL_SUM;
    vt_nccl_result r = c->lib->all_reduce(c->dev, c->dev, n, VT_NCCL_FLOAT64, o, c->comm,
                                          stream_of(c));
    if (r != VT_NCCL_SUCCESS) return nccl_fail(c, r, "ncclAllReduce");
    VT_CUDA_TRY(cudaMemcpyAsync(c->host, c->dev, bytes, cudaMemcpyDeviceToHost, s),
                "cudaMemcpyAsync (NCCL staging)");
    VT_TRY(wait_stream(c, "all-reduce"));
    memcpy(x, c->host, bytes);
    return VT_OK;
}

vt_status nccl_bcast_host(vt_comm *base, void *x, size_t bytes, int root)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    if (c->dead) return dead_fail(c, "broadcast");
    if (!bytes) return VT_OK;
    VT_TRY(grow(c, bytes));
    VT_CUDA_GUARD(c->cb);
    cudaStream_t s = c->cs;
    if (c->base.rank == root) {
        memcpy(c->host, x, bytes);
        VT_CUDA_TRY(cudaMemcpyAsync(c->dev, c->host, bytes, cudaMemcpyHostToDevice, s),
                    "cudaMemcpyAsync (NCCL staging)");
    }
    vt_nccl_result r = c->lib->broadcast(c->dev, c->dev, bytes, VT_NCCL_UINT8, root, c->comm,
                                         stream_of(c));
    if (r != VT_NCCL_SUCCESS) return nccl_fail(c, r, "ncclBroadcast");
    VT_CUDA_TRY(cudaMemcpyAsync(c->host, c->dev, bytes, cudaMemcpyDeviceToHost, s),
                "cudaMemcpyAsync (NCCL staging)");
    VT_TRY(wait_stream(c, "broadcast"));
    memcpy(x, c->host, bytes);
    return VT_OK;
}

/* NCCL's all-gather takes the same count from every rank: each sends its bytes padded to the
 * largest, and the slots are packed back into rank order on the host. */
vt_status nccl_allgather_host(vt_comm *base, const void *mine, const size_t *bytes, void *all)
{
    nccl_comm *c = reinterpret_cast<nccl_comm *>(base);
    if (c->dead) return dead_fail(c, "all-gather");
    int n = c->base.size;
    size_t slot = 0;
    for (int r = 0; r < n; r++)
        if (bytes[r] > slot) slot = bytes[r];
    if (!slot) return VT_OK;
    size_t total = slot * (size_t)(n + 1); /* n slots received, then this rank's send slot */
    VT_TRY(grow(c, total));
    VT_CUDA_GUARD(c->cb);
    cudaStream_t s = c->cs;
    char *send = static_cast<char *>(c->dev) + slot * (size_t)n;
    memcpy(c->host, mine, bytes[c->base.rank]);
    VT_CUDA_TRY(cudaMemcpyAsync(send, c->host, bytes[c->base.rank], cudaMemcpyHostToDevice, s),
                "cudaMemcpyAsync (NCCL staging)");
    vt_nccl_result r = c->lib->all_gather(send, c->dev, slot, VT_NCCL_UINT8, c->comm,
                                          stream_of(c));
    if (r != VT_NCCL_SUCCESS) return nccl_fail(c, r, "ncclAllGather");
    VT_CUDA_TRY(cudaMemcpyAsync(c->host, c->dev, slot * (size_t)n, cudaMemcpyDeviceToHost, s),
                "cudaMemcpyAsync (NCCL staging)");
    VT_TRY(wait_stream(c, "all-gather"));
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        memcpy(static_cast<char *>(all) + off, static_cast<char *>(c->host) + slot * (size_t)k,
               bytes[k]);
        off += bytes[k];
    }
    return VT_OK;
}

/* Any failure of an op aborts the communicator: the other ranks' collectives then end with
 * NCCL's remote error instead of waiting out the timeout for one that will never come. */
vt_status aborting(vt_comm *base, vt_status st)
{
    if (st) abort_comm(reinterpret_cast<nccl_comm *>(base));
    return st;
}

vt_status op_allreduce_scaled(vt_comm *c, float *x, size_t n, float scale)
{
    return aborting(c, nccl_allreduce_scaled(c, x, n, scale));
}
vt_status op_allreduce_host(vt_comm *c, double *x, size_t n, vt_comm_op op)
{
    return aborting(c, nccl_allreduce_host(c, x, n, op));
}
vt_status op_bcast(vt_comm *c, void *x, size_t bytes, int root)
{
    return aborting(c, nccl_bcast(c, x, bytes, root));
}
vt_status op_bcast_host(vt_comm *c, void *x, size_t bytes, int root)
{
    return aborting(c, nccl_bcast_host(c, x, bytes, root));
}
vt_status op_allgather_host(vt_comm *c, const void *mine, const size_t *bytes, void *all)
{
    return aborting(c, nccl_allgather_host(c, mine, bytes, all));
}
vt_status op_join(vt_comm *c) { return aborting(c, nccl_join(c)); }

const vt_comm_ops nccl_ops = {
    nccl_destroy, op_allreduce_scaled, op_allreduce_host, op_bcast,
    op_bcast_host, op_allgather_host, op_join,
};

/* ncclCommInitRank blocks until every rank has called it, with no timeout of its own: a rank
 * that died after the rendezvous would hold the others there forever.  So it runs in a thread
 * of its own, which this one waits for until the timeout; past it the thread is left behind
 * (detached; it frees its job and aborts a communicator that comes too late) and the caller
 * gets an error, so the job can end. */
struct init_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const vt_nccl *lib;
    vt_nccl_id id;
    int size, rank, device;
    vt_nccl_comm comm;
    vt_nccl_result r;
    cudaError_t ce;
    int done, abandoned;
};

void *init_thread(void *arg)
{
    init_job *j = static_cast<init_job *>(arg);
    vt_nccl_comm comm = nullptr;
    vt_nccl_result r = VT_NCCL_SUCCESS;
    cudaError_t ce = cudaSetDevice(j->device); /* NCCL binds the communicator to it */
    if (ce == cudaSuccess) r = j->lib->comm_init_rank(&comm, j->size, j->id, j->rank);
    pthread_mutex_lock(&j->mu);
    int abandoned = j->abandoned;
    j->comm = comm;
    j->r = r;
    j->ce = ce;
    j->done = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (abandoned) { /* nobody waits for it any more */
        if (ce == cudaSuccess && r == VT_NCCL_SUCCESS) (void)j->lib->comm_abort(comm);
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
    }
    return nullptr;
}

/* The communicator, or an error after timeout_s seconds. */
vt_status init_comm(const vt_nccl *lib, const vt_nccl_id &id, int size, int rank, int device,
                    double timeout_s, vt_nccl_comm *out)
{
    init_job *j = static_cast<init_job *>(calloc(1, sizeof(init_job)));
    if (!j) return VT_ERR_OUT_OF_MEMORY;
    pthread_mutex_init(&j->mu, nullptr);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* a stepped wall clock moves no deadline */
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->lib = lib;
    j->id = id;
    j->size = size;
    j->rank = rank;
    j->device = device;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = pthread_create(&th, &attr, init_thread, j);
    pthread_attr_destroy(&attr);
    if (rc) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
        return vt_fail(VT_ERR_IO, "NCCL: no thread for ncclCommInitRank: %s", strerror(rc));
    }
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int forever = !(timeout_s < 1e9); /* VT_DIST_TIMEOUT=inf, or too far to count */
    if (!forever) {
        double s = (double)until.tv_sec + 1e-9 * (double)until.tv_nsec + timeout_s;
        until.tv_sec = (time_t)s;
        until.tv_nsec = (long)((s - (double)until.tv_sec) * 1e9);
    }
    pthread_mutex_lock(&j->mu);
    while (!j->done) {
        int w = forever ? pthread_cond_wait(&j->cv, &j->mu)
                        : pthread_cond_timedwait(&j->cv, &j->mu, &until);
        if (w != 0 && w != EINTR) break; /* ETIMEDOUT (or an error: give up likewise) */
    }
    int done = j->done;
    if (!done) j->abandoned = 1;
    pthread_mutex_unlock(&j->mu);
    if (!done)
        return vt_fail(VT_ERR_IO, "NCCL: rank %d of %d waited %g s in ncclCommInitRank for the "
                       "other ranks (VT_DIST_TIMEOUT): a rank stopped or hangs; all ranks stop",
                       rank, size, timeout_s);
    vt_status st = VT_OK;
    if (j->ce != cudaSuccess)
        st = vt_cuda_fail(j->ce, "cudaSetDevice (NCCL's set-up)");
    else if (j->r != VT_NCCL_SUCCESS)
        st = vt_fail(VT_ERR_IO, "NCCL: ncclCommInitRank failed on rank %d of %d (GPU %d): %s",
                     rank, size, device, lib->error_string(j->r));
    *out = j->comm;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
    return st;
}

const vt_nccl *need_nccl()
{
    const char *why = "";
    const vt_nccl *lib = vt_nccl_shared(&why);
    if (!lib)
        vt_fail(VT_ERR_UNSUPPORTED, "GPU ranks need NCCL 2.12 or newer: %s (install NCCL, or "
                "point VT_NCCL_LIBRARY at libnccl.so.2)", why);
    return lib;
}

} // namespace

extern "C" vt_status vt_cuda_nccl_unique_id(unsigned char *id)
{
    const vt_nccl *lib = need_nccl();
    if (!lib) return VT_ERR_UNSUPPORTED;
    vt_nccl_id u;
    vt_nccl_result r = lib->get_unique_id(&u);
    if (r != VT_NCCL_SUCCESS)
        return vt_fail(VT_ERR_IO, "NCCL: ncclGetUniqueId failed: %s", lib->error_string(r));
    memcpy(id, u.internal, VT_NCCL_ID_BYTES);
    return VT_OK;
}

extern "C" vt_status vt_cuda_nccl_open(vt_comm **out, vt_backend *be, const unsigned char *id,
                                       int rank, int size, int local_rank, int local_size,
                                       double timeout_s)
{
    *out = nullptr;
    vt_cuda_backend *cb = vt_cuda_of(be);
    if (!cb) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NCCL: the backend is not a CUDA backend");
    const vt_nccl *lib = need_nccl();
    if (!lib) return VT_ERR_UNSUPPORTED;
    nccl_comm *c = static_cast<nccl_comm *>(calloc(1, sizeof(nccl_comm)));
    if (!c) return VT_ERR_OUT_OF_MEMORY;
    c->base.ops = &nccl_ops;
    c->base.be = be;
    c->base.rank = rank;
    c->base.size = size;
    c->base.local_rank = local_rank;
    c->base.local_size = local_size;
    char ver[32];
    vt_nccl_version_text(lib->version, ver, sizeof ver);
    snprintf(c->base.engine, sizeof c->base.engine, "NCCL %s", ver);
    c->lib = lib;
    c->cb = cb;
    c->timeout_s = timeout_s > 0 ? timeout_s : 600;
    vt_nccl_id u;
    memcpy(u.internal, id, VT_NCCL_ID_BYTES);
    cudaError_t ce;
    {
        VT_CUDA_GUARD(cb);
        ce = cudaStreamCreateWithFlags(&c->cs, cudaStreamNonBlocking);
        if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming);
        if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming);
    }
    vt_status st = ce != cudaSuccess
                       ? vt_cuda_fail(ce, "the NCCL communicator's stream")
                       : init_comm(lib, u, size, rank, cb->device, c->timeout_s, &c->comm);
    if (st) {
        c->comm = nullptr;
        c->dead = 1;
        nccl_destroy(&c->base);
        return st;
    }
    *out = &c->base;
    return VT_OK;
}
