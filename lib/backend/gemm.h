/* CPU single-precision GEMM: Debian's serial BLIS (linked statically, its sub-configuration
 * chosen per CPU: gemm.c), or another CBLAS when the build found only that, else a portable
 * blocked kernel parallelised over rows with the backend's thread pool.  Row-major, same
 * argument convention as vt_backend_ops.gemm.  VT_CPU_GEMM=portable|<BLIS sub-configuration>
 * overrides the choice for benchmarks and tests (read once, at the first product). */
#ifndef VT_GEMM_H
#define VT_GEMM_H

#include <stdint.h>

#include "core/threads.h"

void vt_sgemm(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* The portable kernel, always built (tests compare it with CBLAS). */
void vt_sgemm_portable(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc);
/* The calling thread's packing buffer of at least `bytes` (64-byte aligned; grown as needed,
 * freed when the thread ends), shared by the fp32 and bf16 products, which never nest; NULL when
 * memory runs out. */
void *vt_gemm_thread_scratch(size_t bytes);
/* 1 when vt_sgemm uses a BLAS (not the portable kernel). */
int vt_sgemm_uses_blas(void);
/* What runs the products, e.g. "BLIS 0.9.0 skx (small products: haswell) (AVX-512; BLIS alone
 * picks haswell here)".  Static string.  Thread-safe. */
const char *vt_sgemm_kernels(void);
/* What the x86 CPU and the OS allow: 0 baseline, 1 AVX, 2 AVX2 + FMA, 3 AVX-512 F/DQ/BW/VL
 * (zmm state enabled); 0 on other architectures.  Thread-safe. */
int vt_cpu_x86_level(void);

/* bf16 GEMM (gemm_bf16.c): vt_sgemm's contract (fp32 in and out, row-major, transposes), with
 * op(A) and op(B) rounded to bf16 (round to nearest even, NaN kept a NaN) and the products
 * accumulated in fp32.  An AVX512_BF16 (VDPBF16PS) kernel where vt_cpu_has_bf16(), else a
 * portable reference; VT_CPU_BF16=portable forces the reference (read once).  The kernel, like
 * the instruction, treats denormal operands as zero and flushes denormal sums (|x| < 2^-126);
 * the reference does not. */
void vt_gemm_bf16(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* The portable reference, always built (tests compare the kernel with it). */
void vt_gemm_bf16_portable(vt_pool *pool, int transa, int transb, int m, int n, int k,
                           float alpha, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc);
/* What vt_gemm_bf16 runs, e.g. "AVX512_BF16 14x32".  Static string.  Thread-safe. */
const char *vt_gemm_bf16_kernel(void);
/* 1 when the CPU has AVX512_BF16 (cpuid 7.1 EAX bit 5) and the AVX-512 state of level 3. */
int vt_cpu_has_bf16(void);
/* fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN. */
uint16_t vt_bf16_round(float x);
float vt_bf16_to_float(uint16_t h);

#endif
