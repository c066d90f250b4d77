/* CPU single-precision GEMM: Debian's serial BLIS (linked statically, its sub-configuration
 * chosen per CPU: gemm.c), or another CBLAS when the build found only that, else a portable
 * blocked kernel parallelised over rows with the backend's thread pool.  Row-major, same
 * argument convention as vt_backend_ops.gemm.  VT_CPU_GEMM=portable|<BLIS sub-configuration>
 * overrides the choice for benchmarks and tests (read once, at the first product). */
#ifndef VT_GEMM_H
#define VT_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/threads.h"

void vt_sgemm(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* The portable kernel, always built (tests compare it with CBLAS). */
void vt_sgemm_portable(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc);
/* One operand packed once for several products (a convolution's weights, multiplied by every
 * tile or block of tiles): op(A) (m x k, transa as vt_sgemm's) in the micro-kernel's panels.
 * vt_sgemm_pack_a_floats: the floats it takes, 0 where the products take no packed operand
 * (the portable kernel, another BLAS, VT_CPU_GEMM_PACK=blis, or m or k under 32, which BLIS's
 * small-product kernels run faster: call vt_sgemm).  vt_sgemm_packed_a: C = alpha op(A) op(B)
 * + beta C (row-major, m x n, as vt_sgemm's) with op(A) from vt_sgemm_pack_a of the same m and
 * k, on the calling thread, bit for bit vt_sgemm's result; 1 when done, 0 (nothing written)
 * when n is under 32, the packing buffer of op(B) cannot be had or packed operands are not
 * taken: call vt_sgemm. */
size_t vt_sgemm_pack_a_floats(int m, int k);
/* The larger of vt_sgemm_pack_a_floats(m, k) and (k, m): room for op(A) and its transpose
 * (a convolution's weights packed for forward and for the input gradient). */
size_t vt_sgemm_pack_a_floats_either(int m, int k);
void vt_sgemm_pack_a(int transa, int m, int k, const float *a, int lda, float *dst);
/* vt_sgemm_pack_a of `count` operands, a + i * a_stride into dst + i * dst_stride (at least
 * vt_sgemm_pack_a_floats(m, k) apart), split over the pool. */
void vt_sgemm_pack_a_many(vt_pool *pool, int count, int transa, int m, int k, const float *a,
                          size_t a_stride, int lda, float *dst, size_t dst_stride);
int vt_sgemm_packed_a(int m, int n, int k, float alpha, const float *ap, int transb,
                      const float *b, int ldb, float beta, float *c, int ldc);
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
 * accumulated in fp32.  Kernels, the best the CPU and the OS allow chosen at the first product:
 * AMX (TDPBF16PS tiles, gemm_bf16_amx.c) where vt_cpu_has_amx(), else AVX512_BF16 (VDPBF16PS)
 * where vt_cpu_has_bf16(), else a portable reference.  VT_CPU_BF16=portable|avx512|amx (read
 * once) asks for one; a kernel the machine lacks gives the best one it has.  The kernels, like
 * the instructions, treat denormal operands as zero and flush denormal sums (|x| < 2^-126); the
 * reference does not.  Results of the kernels and the reference differ only in the order of
 * the fp32 sums. */
void vt_gemm_bf16(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* The portable reference, always built (tests compare the kernel with it). */
void vt_gemm_bf16_portable(vt_pool *pool, int transa, int transb, int m, int n, int k,
                           float alpha, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc);
/* What vt_gemm_bf16 runs: "AMX 32x32", "AVX512_BF16 14x32" or "portable (why)".  Static
 * string.  Thread-safe. */
const char *vt_gemm_bf16_kernel(void);
/* 1 when the kernel vt_gemm_bf16 runs trains slower than vt_sgemm's fp32 on this CPU, as
 * measured: the portable one anywhere, AVX512_BF16 on an Intel processor (no AMX, or AMX
 * refused).  Thread-safe. */
int vt_gemm_bf16_slower_than_fp32(void);
/* For tests and benchmarks: makes vt_gemm_bf16 run the kernel named "amx", "avx512" or
 * "portable" from now on; 1 when done, 0 (choice unchanged) when this machine cannot run it or
 * the name is unknown.  Not to be called while another thread is inside vt_gemm_bf16. */
int vt_gemm_bf16_force(const char *kernel);
/* 1 when the CPU has AVX512_BF16 (cpuid 7.1 EAX bit 5) and the AVX-512 state of level 3. */
int vt_cpu_has_bf16(void);
/* 1 when the AMX kernel can run: built with a compiler that has the AMX intrinsics, the CPU has
 * AMX-TILE and AMX-BF16 (cpuid 7.0 EDX bits 24, 22) and AVX512_BF16, the OS enables the tile
 * state (XCR0 bits 17, 18), and Linux granted this process the tile data (arch_prctl
 * ARCH_REQ_XCOMP_PERM, asked once per process, at the first call).  Thread-safe. */
int vt_cpu_has_amx(void);

/* Between gemm_bf16.c and gemm_bf16_amx.c (x86-64, callable where vt_cpu_has_bf16()). */
typedef struct vt_bf16_view { /* element (i, p) at x[i * rs + p * cs]: i along a panel */
    const float *x;
    ptrdiff_t rs, cs;
} vt_bf16_view;
/* Panels of h rows of X, rows [i0, i0 + mb) and k in [p0, p0 + kb): panel after panel, each
 * kpad (>= (kb + 1) / 2) pairs q of h words (bf16(X(i, 2q)) | bf16(X(i, 2q + 1)) << 16), zero
 * past mb and kb. */
void vt_bf16_pack_pairs(const vt_bf16_view *X, int i0, int mb, int p0, int kb, int h, int kpad,
                        uint32_t *dst);
/* C (m x n, row stride ldc) = alpha op(A) op(B) + beta C on the calling thread with AMX (only
 * where vt_cpu_has_amx()); 0, with nothing written, when the packing buffer cannot be had. */
int vt_gemm_bf16_amx_serial(int m, int n, int k, float alpha, const vt_bf16_view *A,
                            const vt_bf16_view *B, float beta, float *c, int ldc);

/* fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN. */
uint16_t vt_bf16_round(float x);
float vt_bf16_to_float(uint16_t h);

#endif
