/* A small fork-join thread pool: vt_pool_run() splits [0, n) into contiguous ranges (up to 4
 * per thread, none under `grain` items), which the calling thread and the workers take in turn
 * until none is left, and returns when all are done.  Which thread runs which range varies
 * from run to run; the ranges themselves depend only on n, grain and the thread count. */
#ifndef VT_THREADS_H
#define VT_THREADS_H

#include <stddef.h>

#include "core/core.h"

typedef struct vt_pool vt_pool;
typedef void (*vt_range_fn)(void *ctx, size_t begin, size_t end);

/* threads: total threads including the caller (1 = no worker threads). */
vt_status vt_pool_create(vt_pool **out, int threads);
void vt_pool_destroy(vt_pool *p);
int vt_pool_threads(const vt_pool *p);
/* Runs fn over [0, n); ranges smaller than `grain` items are not split further. */
void vt_pool_run(vt_pool *p, size_t n, size_t grain, vt_range_fn fn, void *ctx);
/* Inside a range function: the index (0 .. threads-1) of the thread running it, 0 for the
 * caller of vt_pool_run, e.g. to pick per-thread scratch memory. */
int vt_pool_thread(void);
/* Number of online processors (>= 1). */
int vt_cpu_count(void);

#endif
