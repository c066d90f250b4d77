/* bf16 GEMM with fp32 accumulation (gemm.h): the operands are rounded to bf16 while they are
 * packed, the products accumulate in fp32.  Kernels, the best the machine runs chosen at the
 * first product: AMX tiles (gemm_bf16_amx.c, on these packed B panels), a VDPBF16PS
 * micro-kernel where the processor has AVX512_BF16 (and the OS saves zmm state), else a
 * portable reference (same rounding, fp32 accumulation in C).  VT_CPU_BF16=portable|avx512|amx
 * asks for one (read once, at the first product); vt_gemm_bf16_force, for tests and benchmarks.
 *
 * Layout for VDPBF16PS, which multiplies pairs of bf16 and adds both products to one fp32 lane:
 * k is cut into pairs (an odd k padded with a zero).  A B micro-panel holds, for each pair,
 * NR columns x 2 bf16 (the two k of the pair adjacent): NR = 32 is two zmm per pair.  An A
 * micro-panel holds, for each pair, MR rows as 32-bit (bf16, bf16) words, each broadcast to a
 * zmm.  MR x NR = 14 x 32: 28 accumulators, 2 B registers, broadcasts from memory.  Blocking
 * KC (pairs) x MC x NC as BLIS does: a KC x NC block of B packed once, MC x KC of A per block of
 * rows, the micro-kernel sweeping the NR panels of B over each MR panel of A.  KC = 256 pairs:
 * a B micro-panel is 32 KiB (L1).  12 x 32 and KC 128 or 384 pairs measured the same within the
 * noise (bench/gemm_bf16.c, Zen 4: 188 vs 96 GFLOP/s fp32 for 2048^3 on one core).  The
 * rounding is VCVTNE(2)PS2BF16 with vt_bf16_round's result restored where they differ
 * (bf16_cvt.h).  Products are split over the pool in whole micro-tiles, by columns where
 * n >= m, else by rows. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bf16_math.h"
#include "backend/gemm.h"
#include "core/threads.h"

/* The rounding itself is bf16_math.h's, which the CUDA backend's operand conversion shares. */
uint16_t vt_bf16_round(float x) { return vt_bf16_rne(x); }

float vt_bf16_to_float(uint16_t h) { return vt_bf16_widen(h); }

static inline float bf16r(float x) { return vt_bf16_to_float(vt_bf16_round(x)); }

/* ---- portable reference ----------------------------------------------------------------------
 * op(B) rounded once into a k x n fp32 matrix; each row of C accumulates its products in fp32,
 * p = 0 .. k-1 in order (the product of two bf16 is exact in fp32, so FMA contraction or not
 * gives the same sums), then alpha and beta. */
typedef struct {
    int transa, m, n, k;
    float alpha, beta;
    const float *a;
    int lda;
    const float *b; /* rounded op(B), k x n, or NULL: round on the fly from braw */
    const float *braw;
    int ldb, transb;
    float *c;
    int ldc;
} ref_job;

static void ref_rows(void *ctx, size_t r0, size_t r1)
{
    const ref_job *J = ctx;
    float *acc = malloc((size_t)J->n * sizeof(float));
    for (size_t i = r0; i < r1; i++) {
        float *crow = J->c + i * (size_t)J->ldc;
        if (acc) {
            memset(acc, 0, (size_t)J->n * sizeof(float));
            for (int p = 0; p < J->k; p++) {
                float av = bf16r(J->transa ? J->a[(size_t)p * J->lda + i]
                                           : J->a[i * (size_t)J->lda + p]);
                if (J->b) {
                    const float *restrict brow = J->b + (size_t)p * J->n;
                    for (int j = 0; j < J->n; j++) acc[j] += av * brow[j];
                } else
                    for (int j = 0; j < J->n; j++)
                        acc[j] += av * bf16r(J->transb ? J->braw[(size_t)j * J->ldb + p]
                                                       : J->braw[(size_t)p * J->ldb + j]);
            }
        }
        for (int j = 0; j < J->n; j++) {
            float s = 0;
            if (acc) s = acc[j];
            else
                for (int p = 0; p < J->k; p++)
                    s += bf16r(J->transa ? J->a[(size_t)p * J->lda + i]
                                         : J->a[i * (size_t)J->lda + p]) *
                         bf16r(J->transb ? J->braw[(size_t)j * J->ldb + p]
                                         : J->braw[(size_t)p * J->ldb + j]);
            crow[j] = J->beta == 0.0f ? J->alpha * s : J->alpha * s + J->beta * crow[j];
        }
    }
    free(acc);
}

void vt_gemm_bf16_portable(vt_pool *pool, int transa, int transb, int m, int n, int k,
                           float alpha, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (k < 0 || alpha == 0.0f) k = 0; /* C = beta C, A and B not read */
    float *bb = k > 0 ? malloc((size_t)k * n * sizeof(float)) : NULL;
    if (bb)
        for (int p = 0; p < k; p++)
            for (int j = 0; j < n; j++)
                bb[(size_t)p * n + j] =
                    bf16r(transb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
    ref_job J = {transa, m, n, k, alpha, beta, a, lda, bb, b, ldb, transb, c, ldc};
    vt_pool_run(pool, (size_t)m, 4, ref_rows, &J);
    free(bb);
}

/* ---- detection -------------------------------------------------------------------------------- */
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#include "backend/bf16_cvt.h"
#include "backend/transpose8.h"

int vt_cpu_has_bf16(void)
{
    if (vt_cpu_x86_level() < 3) return 0; /* AVX-512 F/DQ/BW/VL and zmm state enabled */
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1;
}

static int cpu_is_intel(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu; /* "GenuineIntel" */
}
#else
int vt_cpu_has_bf16(void) { return 0; }
static int cpu_is_intel(void) { return 0; }
#endif

/* ---- AVX512_BF16 kernel ---------------------------------------------------------------------- */
#if defined(__x86_64__)
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
enum { MR = 14, NR = 32, KCP = 256 /* pairs */, MC = 168, NC = 2048 };

/* An operand element (i, p) at x[i * rs + p * cs]: i along the micro-panel, p along k. */
typedef vt_bf16_view bview;

/* Rows i of X contiguous along the panel (rs == 1): the panels of mb rows (h each, kpad pairs,
 * zero past mb and kb): for pair q, the words (X(i, 2q), X(i, 2q + 1)).  A pass over the pairs
 * fills up to 256 rows' panels at a time, so that each row of k is read 1 KiB at a time rather
 * than h floats (a page a panel and row: TLB misses; 2.5x faster packing of a 2048-column B). */
BF16_TARGET static void pack_interleave(const bview *X, const float *src, int mb, int kb, int h,
                                        int kpad, uint32_t *dst)
{
    int kp = (kb + 1) / 2, per = 256 / h > 0 ? 256 / h : 1;
    for (int r = 0; r < mb; r += per * h) {
        int np = (mb - r + h - 1) / h < per ? (mb - r + h - 1) / h : per;
        uint32_t *d0 = dst + (size_t)(r / h) * kpad * h;
        /* whole panels of whole vectors (h a multiple of 16, as AMX's 32): no masks */
        int plain = h % 16 == 0 && mb - r >= np * h;
        for (int q = 0; q < kp; q++) {
            const float *s0 = src + (ptrdiff_t)(2 * q) * X->cs + r;
            const float *s1 = s0 + X->cs;
            int two = 2 * q + 1 < kb;
            if (plain && two) {
                for (int g = 0; g < np; g++) {
                    uint32_t *d = d0 + (size_t)g * kpad * h + (size_t)q * h;
                    for (int i = 0; i < h; i += 16)
                        _mm512_storeu_si512(d + i,
                                            vt_bf16_pairs16(_mm512_loadu_ps(s0 + g * h + i),
                                                            _mm512_loadu_ps(s1 + g * h + i)));
                }
                continue;
            }
            for (int g = 0; g < np; g++) {
                uint32_t *d = d0 + (size_t)g * kpad * h + (size_t)q * h;
                int hh = mb - r - g * h;
                for (int i = 0; i < h; i += 16) {
                    int w = hh - i < 16 ? (hh - i > 0 ? hh - i : 0) : 16;
                    int wh = h - i < 16 ? h - i : 16;
                    __mmask16 ml = (__mmask16)((1u << w) - 1), ms = (__mmask16)((1u << wh) - 1);
                    const float *a0 = s0 + g * h + i, *a1 = s1 + g * h + i;
                    __m512 x1 = two ? _mm512_maskz_loadu_ps(ml, a1) : _mm512_setzero_ps();
                    _mm512_mask_storeu_epi32(d + i, ms,
                                             vt_bf16_pairs16(_mm512_maskz_loadu_ps(ml, a0), x1));
                }
            }
        }
        if (kpad > kp)
            for (int g = 0; g < np; g++)
                memset(d0 + (size_t)g * kpad * h + (size_t)kp * h, 0,
                       (size_t)(kpad - kp) * h * sizeof *dst);
    }
}

/* Rows i of X contiguous along k (cs == 1): 16 floats of a row are 8 pairs, narrowed to 8 words;
 * 8 rows' words transposed (8 x 8 dwords) into the panel.  Zero past hh and kb. */
BF16_TARGET static void pack_transpose(const bview *X, const float *src, int hh, int kb, int h,
                                       uint32_t *dst)
{
    ptrdiff_t rs = X->rs;
    int kp = (kb + 1) / 2;
    for (int i = 0; i < h; i += 8) {
        int rows = hh - i < 8 ? (hh - i > 0 ? hh - i : 0) : 8;
        int wr = h - i < 8 ? h - i : 8;
        __mmask8 mst = (__mmask8)((1u << wr) - 1);
        for (int p = 0; p < kb; p += 16) {
            int w = kb - p < 16 ? kb - p : 16;
            __mmask16 ml = (__mmask16)((1u << w) - 1);
            __m256 r[8], o[8];
            for (int q = 0; q < 8; q++) {
                if (q < rows) {
                    r[q] = _mm256_castsi256_ps(
                        vt_bf16_cvt16(_mm512_maskz_loadu_ps(ml, src + (i + q) * rs + p)));
                } else
                    r[q] = _mm256_setzero_ps();
            }
            vt_transpose8_ps(r, o);
            int pp = p / 2, np = kp - pp < 8 ? kp - pp : 8;
            uint32_t *d = dst + (size_t)pp * h + i;
            for (int q = 0; q < np; q++)
                _mm256_mask_storeu_epi32(d + (size_t)q * h, mst, _mm256_castps_si256(o[q]));
        }
    }
}

/* Neither stride 1 (not produced by row-major operands; kept for completeness). */
static void pack_scalar(const bview *X, const float *src, int hh, int kb, int h, uint32_t *dst)
{
    int kp = (kb + 1) / 2;
    for (int q = 0; q < kp; q++)
        for (int i = 0; i < h; i++) {
            uint32_t lo = 0, hi = 0;
            if (i < hh) {
                lo = vt_bf16_round(src[i * X->rs + (ptrdiff_t)(2 * q) * X->cs]);
                if (2 * q + 1 < kb) hi = vt_bf16_round(src[i * X->rs + (ptrdiff_t)(2 * q + 1) * X->cs]);
            }
            dst[(size_t)q * h + i] = lo | hi << 16;
        }
}

/* Micro-panels of rows [i0, i0 + mb), k in [p0, p0 + kb), h rows each, kpad pairs a panel
 * (the pairs past kb zero: the AMX kernel's k steps of 16 pairs). */
BF16_TARGET static void pack_panels(const bview *X, int i0, int mb, int p0, int kb, int h,
                                    int kpad, uint32_t *dst)
{
    int kp = (kb + 1) / 2;
    if (X->rs == 1) {
        pack_interleave(X, X->x + i0 + (ptrdiff_t)p0 * X->cs, mb, kb, h, kpad, dst);
        return;
    }
    for (int r = 0; r < mb; r += h) {
        int hh = mb - r < h ? mb - r : h;
        const float *src = X->x + (ptrdiff_t)(i0 + r) * X->rs + (ptrdiff_t)p0 * X->cs;
        if (X->cs == 1) pack_transpose(X, src, hh, kb, h, dst);
        else pack_scalar(X, src, hh, kb, h, dst);
        if (kpad > kp) memset(dst + (size_t)kp * h, 0, (size_t)(kpad - kp) * h * sizeof *dst);
        dst += (size_t)kpad * h;
    }
}

void vt_bf16_pack_pairs(const vt_bf16_view *X, int i0, int mb, int p0, int kb, int h, int kpad,
                        uint32_t *dst)
{
    pack_panels(X, i0, mb, p0, kb, h, kpad, dst);
}

/* C[mm x nn] (row stride ldc) = alpha * Apanel Bpanel + beta C, kp pairs; beta 0: C not read. */
BF16_TARGET static void ukr(int kp, const uint32_t *restrict ap, const uint32_t *restrict bp,
                            int mm, int nn, float alpha, float beta, float *c, ptrdiff_t ldc)
{
    __m512 acc[MR][2];
#pragma GCC unroll 14
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int q = 0; q < kp; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp), b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
        _mm_prefetch((const char *)(bp + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 14
        for (int r = 0; r < MR; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)ap[r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
        ap += MR;
        bp += NR;
    }
    __mmask16 m0 = nn >= 16 ? 0xffff : (__mmask16)((1u << nn) - 1);
    __mmask16 m1 = nn >= 32 ? 0xffff : nn <= 16 ? 0 : (__mmask16)((1u << (nn - 16)) - 1);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int r = 0; r < MR; r++) {
        if (r >= mm) break;
        float *cr = c + r * ldc;
        __m512 v0 = _mm512_mul_ps(va, acc[r][0]), v1 = _mm512_mul_ps(va, acc[r][1]);
        if (beta != 0.0f) {
            v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), v0);
            v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), v1);
        }
        _mm512_mask_storeu_ps(cr, m0, v0);
        _mm512_mask_storeu_ps(cr + 16, m1, v1);
    }
}


/* The calling thread's packing buffer (gemm.h; here, outside gemm.c's BLIS-only part), grown as needed, freed when the thread ends. */
static pthread_key_t ukr_key;
static pthread_once_t ukr_key_once = PTHREAD_ONCE_INIT;
typedef struct ukr_buf {
    void *p;
    size_t bytes;
} ukr_buf;

static void ukr_buf_free(void *v)
{
    ukr_buf *b = v;
    if (b) free(b->p);
    free(b);
}

static void ukr_key_make(void) { (void)pthread_key_create(&ukr_key, ukr_buf_free); }

void *vt_gemm_thread_scratch(size_t bytes)
{
    pthread_once(&ukr_key_once, ukr_key_make);
    ukr_buf *b = pthread_getspecific(ukr_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(ukr_key, b)) {
            free(b);
            return NULL;
        }
    }
    if (b->bytes < bytes) {
        free(b->p);
        b->p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        b->bytes = b->p ? bytes : 0;
    }
    return b->p;
}

/* Serial: C (m x n, row stride ldc) = alpha op(A) op(B) + beta C; 0 when no scratch. */
BF16_TARGET static int gemm_serial(int m, int n, int k, float alpha, const bview *A,
                                   const bview *B, float beta, float *c, int ldc)
{
    int KC = 2 * KCP;
    int nc_max = n < NC ? n : NC, mc_max = m < MC ? m : MC, kc_max = k < KC ? k : KC;
    int kp_max = (kc_max + 1) / 2;
    size_t bw = (size_t)kp_max * ((nc_max + NR - 1) / NR * NR);
    size_t aw = (size_t)kp_max * ((mc_max + MR - 1) / MR * MR);
    uint32_t *bp = vt_gemm_thread_scratch((bw + aw + 16) * sizeof(uint32_t));
    if (!bp) return 0;
    uint32_t *ap = bp + ((bw + 15) & ~(size_t)15);
    bview Bt = {B->x, B->cs, B->rs}; /* rows j, columns p */
    for (int jc = 0; jc < n; jc += NC) {
        int nb = n - jc < NC ? n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            int kb = k - pc < KC ? k - pc : KC, kp = (kb + 1) / 2;
            float bt = pc == 0 ? beta : 1.0f;
            pack_panels(&Bt, jc, nb, pc, kb, NR, kp, bp);
            for (int ic = 0; ic < m; ic += MC) {
                int mb = m - ic < MC ? m - ic : MC;
                pack_panels(A, ic, mb, pc, kb, MR, kp, ap);
                for (int jr = 0; jr < nb; jr += NR) {
                    int nn = nb - jr < NR ? nb - jr : NR;
                    const uint32_t *bpan = bp + (size_t)(jr / NR) * kp * NR;
                    for (int ir = 0; ir < mb; ir += MR) {
                        int mm = mb - ir < MR ? mb - ir : MR;
                        const uint32_t *apan = ap + (size_t)(ir / MR) * kp * MR;
                        ukr(kp, apan, bpan, mm, nn, alpha, bt,
                            c + (ptrdiff_t)(ic + ir) * ldc + jc + jr, ldc);
                    }
                }
            }
        }
    }
    return 1;
}

typedef struct {
    int m, n, k, split_n, parts, amx, align;
    float alpha, beta;
    bview A, B;
    int ta, tb, lda, ldb;
    const float *a, *b;
    float *c;
    int ldc;
} bf16_job;

/* One part: a block of columns of C (and op(B)) or of rows of C (and op(A)). */
static void bf16_part(void *ctx, size_t p0, size_t p1)
{
    bf16_job *J = ctx;
    int total = J->split_n ? J->n : J->m, align = J->align;
    int per = (total + J->parts - 1) / J->parts;
    per = (per + align - 1) / align * align;
    for (size_t p = p0; p < p1; p++) {
        int lo = (int)p * per, hi = lo + per < total ? lo + per : total;
        if (lo >= hi) continue;
        int ok;
        if (J->split_n) {
            bview B = {J->B.x + (ptrdiff_t)lo * J->B.cs, J->B.rs, J->B.cs};
            ok = J->amx ? vt_gemm_bf16_amx_serial(J->m, hi - lo, J->k, J->alpha, &J->A, &B,
                                                  J->beta, J->c + lo, J->ldc)
                        : gemm_serial(J->m, hi - lo, J->k, J->alpha, &J->A, &B, J->beta,
                                      J->c + lo, J->ldc);
        } else {
            bview A = {J->A.x + (ptrdiff_t)lo * J->A.rs, J->A.rs, J->A.cs};
            float *c = J->c + (ptrdiff_t)lo * J->ldc;
            ok = J->amx ? vt_gemm_bf16_amx_serial(hi - lo, J->n, J->k, J->alpha, &A, &J->B,
                                                  J->beta, c, J->ldc)
                        : gemm_serial(hi - lo, J->n, J->k, J->alpha, &A, &J->B, J->beta, c,
                                      J->ldc);
        }
        if (!ok) /* no memory for the packing buffer (nothing written): the reference */
            vt_gemm_bf16_portable(NULL, J->ta, J->tb, J->split_n ? J->m : hi - lo,
                                  J->split_n ? hi - lo : J->n, J->k, J->alpha,
                                  J->split_n ? J->a : J->a + (ptrdiff_t)lo * J->A.rs, J->lda,
                                  J->split_n ? J->b + (ptrdiff_t)lo * J->B.cs : J->b, J->ldb,
                                  J->beta, J->split_n ? J->c + lo : J->c + (ptrdiff_t)lo * J->ldc,
                                  J->ldc);
    }
}
#endif

/* ---- dispatch --------------------------------------------------------------------------------
 * The kernel is read once per product (a forced change takes effect at the next one). */
enum { K_PORTABLE, K_AVX512, K_AMX };
static int kernel;
static pthread_once_t choice_once = PTHREAD_ONCE_INIT;

static int runnable(int k)
{
    return k == K_PORTABLE || (k == K_AVX512 && vt_cpu_has_bf16()) || (k == K_AMX && vt_cpu_has_amx());
}

static void choose(void)
{
    const char *env = getenv("VT_CPU_BF16");
    int want = !env ? -1 : !strcmp(env, "portable") ? K_PORTABLE : !strcmp(env, "avx512") ? K_AVX512
             : !strcmp(env, "amx")                  ? K_AMX
                                                    : -1;
    if (want >= 0 && runnable(want)) kernel = want;
    else kernel = vt_cpu_has_amx() ? K_AMX : vt_cpu_has_bf16() ? K_AVX512 : K_PORTABLE;
}

int vt_gemm_bf16_force(const char *name)
{
    pthread_once(&choice_once, choose);
    int want = !name ? -1 : !strcmp(name, "portable") ? K_PORTABLE : !strcmp(name, "avx512") ? K_AVX512
             : !strcmp(name, "amx")                    ? K_AMX
                                                       : -1;
    if (want < 0 || !runnable(want)) return 0;
    kernel = want;
    return 1;
}

const char *vt_gemm_bf16_kernel(void)
{
    pthread_once(&choice_once, choose);
    if (kernel == K_AMX) return "AMX 32x32";
    if (kernel == K_AVX512) return "AVX512_BF16 14x32";
    return vt_cpu_has_bf16() ? "portable (asked for)" : "portable (no AVX512_BF16)";
}

/* Measured whole training runs (bench/README.md, "bf16 on the CPU"): AMX 1.6-1.9x fp32 (det-n,
 * cnn-small, Sapphire Rapids); AVX512_BF16 1.3x on AMD Zen 4, whose 512-bit FMAs issue at half
 * the rate of Intel's, but 0.7-0.85x on an Intel Xeon without AMX, whose two fp32 FMA ports
 * match VDPBF16PS's rate while the packing's casts come on top. */
int vt_gemm_bf16_slower_than_fp32(void)
{
    pthread_once(&choice_once, choose);
    return kernel == K_PORTABLE || (kernel == K_AVX512 && cpu_is_intel());
}

void vt_gemm_bf16(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    pthread_once(&choice_once, choose);
    int kern = kernel;
#if defined(__x86_64__)
    if (kern != K_PORTABLE && k > 0 && alpha != 0.0f) {
        bf16_job J = {.m = m, .n = n, .k = k, .split_n = n >= m, .parts = 1, .amx = kern == K_AMX,
                      .alpha = alpha, .beta = beta, .A = {a, transa ? 1 : lda, transa ? lda : 1},
                      .B = {b, transb ? 1 : ldb, transb ? ldb : 1}, .ta = transa, .tb = transb,
                      .lda = lda, .ldb = ldb, .a = a, .b = b, .c = c, .ldc = ldc};
        /* parts of whole micro-tiles: AMX's are 32 x 32 */
        J.align = J.amx ? 32 : J.split_n ? NR : MR;
        int threads = vt_pool_threads(pool);
        double work = (double)m * n * k;
        int len = J.split_n ? n : m;
        if (threads > 1 && work >= 2e6) {
            J.parts = threads;
            while (J.parts > 1 && (len + J.parts - 1) / J.parts < J.align) J.parts--;
        }
        vt_pool_run(J.parts > 1 ? pool : NULL, (size_t)J.parts, 1, bf16_part, &J);
        return;
    }
#endif
    vt_gemm_bf16_portable(pool, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
