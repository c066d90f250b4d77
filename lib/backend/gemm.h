/* CPU single-precision GEMM: Debian's serial BLIS (linked statically, its sub-configuration
 * chosen per CPU: gemm.c), or another CBLAS when the build found only that, else a portable
 * blocked kernel parallelised over rows with the backend's thread pool.  Row-major, same
 * argument convention as vt_backend_ops.gemm.  VT_CPU_GEMM=portable|<BLIS sub-configuration>
 * overrides the choice for benchmarks and tests (read once, at the first product). */
#ifndef VT_GEMM_H
#define VT_GEMM_H

#include "core/threads.h"

void vt_sgemm(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* The portable kernel, always built (tests compare it with CBLAS). */
void vt_sgemm_portable(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc);
/* 1 when vt_sgemm uses a BLAS (not the portable kernel). */
int vt_sgemm_uses_blas(void);
/* What runs the products, e.g. "BLIS 0.9.0 skx (small products: haswell) (AVX-512; BLIS alone
 * picks haswell here)".  Static string.  Thread-safe. */
const char *vt_sgemm_kernels(void);
/* What the x86 CPU and the OS allow: 0 baseline, 1 AVX, 2 AVX2 + FMA, 3 AVX-512 F/DQ/BW/VL
 * (zmm state enabled); 0 on other architectures.  Thread-safe. */
int vt_cpu_x86_level(void);

#endif
