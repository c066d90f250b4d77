/* A small fork-join thread pool: vt_pool_run() splits [0, n) into one contiguous range per
 * thread, runs them (the calling thread takes the first) and returns when all are done. */
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
/* Number of online processors (>= 1). */
int vt_cpu_count(void);

#endif
