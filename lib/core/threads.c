#include "core/threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* Workers and the caller spin briefly before sleeping: a training step calls the pool hundreds
 * of times with a few hundred microseconds between calls, and a futex sleep/wake each time cost
 * several percent of a step.  The spin is bounded, so idle pools do sleep. */
enum { SPIN_ITERS = 4000 };

/* A job is cut into up to this many ranges per thread, taken in turn by whichever thread is
 * free: on a shared machine one core is often slower than the other for a while, and equal
 * static shares would leave the faster one waiting (measured: 10-16% of a small CNN step's
 * pool time was one thread waiting for the other). */
enum { CHUNKS_PER_THREAD = 4 };

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

struct vt_pool {
    int n;                 /* threads including the caller */
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    atomic_ulong gen;      /* bumped for each job */
    atomic_int pending;    /* workers still running the current job */
    atomic_int quit;
    int sleepers;          /* workers waiting on `go` (under mu) */
    int spin;              /* spin iterations before sleeping: 0 when threads exceed the cores,
                              where a spinning thread would take a core from a working one */
    vt_range_fn fn;
    void *ctx;
    size_t total;
    size_t chunks;         /* how many ranges the current job is split into */
    atomic_size_t next;    /* the next range to take */
};

/* The index of the pool thread running the current range (0: the caller); see vt_pool_thread. */
static _Thread_local int tl_thread;

typedef struct {
    vt_pool *p;
    int id;
} worker_arg;

/* Take ranges until none is left.  Range c is [c*n/chunks, (c+1)*n/chunks): the split depends
 * only on n, the grain and the thread count, never on which thread runs what. */
static void run_chunks(vt_pool *p)
{
    for (;;) {
        size_t c = atomic_fetch_add(&p->next, 1);
        if (c >= p->chunks) return;
        size_t per = p->total / p->chunks, extra = p->total % p->chunks;
        size_t b = c * per + (c < extra ? c : extra);
        size_t e = b + per + (c < extra ? 1 : 0);
        if (b < e) p->fn(p->ctx, b, e);
    }
}

static void *worker(void *arg)
{
    worker_arg *wa = arg;
    vt_pool *p = wa->p;
    int id = wa->id;
    free(wa);
    tl_thread = id;
    unsigned long seen = 0;
    for (;;) {
        for (int s = 0; s < p->spin && atomic_load(&p->gen) == seen && !atomic_load(&p->quit); s++)
            cpu_relax();
        if (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) {
            pthread_mutex_lock(&p->mu);
            p->sleepers++;
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->go, &p->mu);
            p->sleepers--;
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) break;
        seen = atomic_load(&p->gen);
        run_chunks(p);
        if (atomic_fetch_sub(&p->pending, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/* The online processors this process may run on: a process bound to fewer (taskset, a
 * container's cpuset, an MPI launcher binding each rank to its cores) gets that many. */
int vt_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int a = CPU_COUNT(&set);
        if (a >= 1 && a < n) n = a;
    }
#endif
    return (int)n;
}

vt_status vt_pool_create(vt_pool **out, int threads)
{
    *out = NULL;
    if (threads <= 0) threads = vt_cpu_count();
    vt_pool *p = vt_calloc(1, sizeof *p);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    p->n = 1;
    p->spin = threads <= vt_cpu_count() ? SPIN_ITERS : 0;
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->quit, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (threads > 1) {
        p->tids = vt_calloc((size_t)threads, sizeof *p->tids);
        if (!p->tids) {
            vt_pool_destroy(p);
            return VT_ERR_OUT_OF_MEMORY;
        }
        for (int i = 1; i < threads; i++) {
            worker_arg *wa = vt_malloc(sizeof *wa);
            if (!wa) {
                vt_pool_destroy(p);
                return VT_ERR_OUT_OF_MEMORY;
            }
            wa->p = p;
            wa->id = i;
            if (pthread_create(&p->tids[i], NULL, worker, wa) != 0) {
                free(wa);
                vt_pool_destroy(p);
                return vt_fail(VT_ERR_OUT_OF_MEMORY, "cannot start a worker thread");
            }
            p->n = i + 1; /* threads started so far, for destroy */
        }
    }
    *out = p;
    return VT_OK;
}

void vt_pool_destroy(vt_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->tids[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->tids);
    free(p);
}

int vt_pool_threads(const vt_pool *p) { return p ? p->n : 1; }

int vt_pool_thread(void) { return tl_thread; }

void vt_pool_run(vt_pool *p, size_t n, size_t grain, vt_range_fn fn, void *ctx)
{
    if (n == 0) return;
    if (grain < 1) grain = 1;
    size_t chunks = p && p->n > 1 ? (size_t)p->n * CHUNKS_PER_THREAD : 1;
    if (chunks > n / grain) chunks = n / grain;
    if (chunks <= 1) {
        fn(ctx, 0, n);
        return;
    }
    /* Publish the job, then bump gen (release) so spinning workers see a complete job. */
    p->fn = fn;
    p->ctx = ctx;
    p->total = n;
    p->chunks = chunks;
    atomic_store(&p->next, 0);
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->gen, 1);
    if (p->sleepers) pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    int outer = tl_thread; /* the caller may itself be a worker of another pool */
    tl_thread = 0;
    run_chunks(p);
    tl_thread = outer;
    for (int s = 0; s < p->spin && atomic_load(&p->pending) > 0; s++) cpu_relax();
    if (atomic_load(&p->pending) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
