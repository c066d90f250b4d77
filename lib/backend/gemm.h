/* CPU single-precision GEMM: CBLAS (OpenBLAS) when the build found it, else a portable blocked
 * kernel parallelised over rows with the backend's thread pool.  Row-major, same argument
 * convention as vt_backend_ops.gemm. */
#ifndef VT_GEMM_H
#define VT_GEMM_H

#include "core/threads.h"

void vt_sgemm(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* The portable kernel, always built (tests compare it with CBLAS). */
void vt_sgemm_portable(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc);
/* 1 when vt_sgemm uses CBLAS. */
int vt_sgemm_uses_blas(void);

#endif
