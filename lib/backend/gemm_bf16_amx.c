/* The AMX kernel of the bf16 GEMM (gemm.h, dispatched by gemm_bf16.c): TDPBF16PS on tiles.
 *
 * TDPBF16PS C += A B takes A as 16 rows x 16 words, a word being the bf16 pair (A(i, 2q),
 * A(i, 2q + 1)), and B as 16 pair rows q x 16 columns j of words (B(2q, j), B(2q + 1, j)), one
 * k step of 32.  Eight tile registers: 2 x 2 accumulators of 16 x 16 fp32 (a 32 x 32 block of
 * C), two A tiles (rows 0-15, 16-31), two B tiles (columns 0-15, 16-31), so each tile loaded
 * serves two products.  Packing, as the operands are rounded to bf16 (vt_bf16_round's result,
 * bf16_cvt.h):
 *  - B: gemm_bf16.c's VDPBF16PS panels (vt_bf16_pack_pairs, 32 columns: pair row q is 32 words,
 *    128 bytes), k padded with zero pairs to a multiple of 16; a B tile is 16 pair rows x 64
 *    bytes of a panel, loaded with a 128-byte stride;
 *  - A: panels of 32 rows holding, per k step, the two A tiles row-major (16 x 64 bytes each,
 *    1 KiB, contiguous), zero past the rows and k.  A row along k (A not transposed) converts to
 *    a tile row directly; a column along k (A transposed) gives 16 rows' words of one pair,
 *    and 16 such vectors are transposed (16 x 16 words).
 * The micro-kernel prefetches its 32 x 32 of C, runs the k steps, then stores the accumulators
 * straight into C (alpha 1, beta 0, a whole 32 x 32) or into a 32 x 32 buffer from which alpha
 * and beta are applied to the mm x nn of C that exist (beta == 0: C not read).  Thin products
 * (m or n <= 16) skip the tiles they do not need.  On thin products the packing, not the tiles,
 * bounds the speed: a 64-row product uses each packed B element 64 times, about the time
 * packing it takes.
 *
 * The tile configuration (LDTILECFG) is per-thread state that other code of the thread (e.g.
 * another library's AMX kernels) may change between our calls, so each serial product loads
 * it and releases the tiles (TILERELEASE) when done: the thread's tile state is back to its
 * initial one between products, which also keeps context switches of non-AMX work cheap
 * (LDTILECFG + TILERELEASE: about 60 ns a product).
 * Linux hands a process the tile data state only when asked (arch_prctl ARCH_REQ_XCOMP_PERM;
 * without it the first tile instruction faults): asked once, at the first vt_cpu_has_amx().
 * Compiled out where the compiler has no AMX intrinsics (gcc < 11, clang < 11). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backend/gemm.h"

#if defined(__x86_64__) && defined(__linux__) && defined(__has_include)
#if (__has_include(<amxtileintrin.h>) && __has_include(<amxbf16intrin.h>)) || \
    __has_include(<amxintrin.h>)
#define VT_AMX 1
#endif
#endif

#if VT_AMX
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/bf16_cvt.h"

#define AMX_TARGET                                                                              \
    __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
/* gcc's tile intrinsics are asm statements that do not tell the compiler they read or write
 * memory: a compiler barrier orders them with the packing stores and the buffer reads. */
#define AMX_FENCE() __asm__ volatile("" ::: "memory")

/* Blocking (bench/gemm_bf16 and a 2048^3 product, one thread, Xeon with AMX, 2 MiB L2: KC 2048
 * against 1024 / 512: 960 against 780 / 570 GFLOP/s; A blocks of 1 MiB against 0.75 / 1.5 MiB:
 * 960 against 920 / 820; B blocks of 8 MiB against 4 / 32 MiB: 960 against 780 / 920; the
 * convolution shapes within 5% of each other over these):
 *  - k in as few blocks of at most KCMAX as it takes, of equal size: C is read and written once
 *    a block, and a micro-tile's epilogue comes once per KC / 32 k steps;
 *  - MC rows of A a block: the packed block about ABLK bytes (L2, the tiles' A operands stream
 *    from it), the B micro-panel (KC x 32 bf16, 128 KiB at KC 2048) beside it;
 *  - NC columns of B a block: about BBLK bytes (L3), so A is packed once for most products. */
enum { KCMAX = 2048, ABLK = 1 << 20, BBLK = 8 << 20 };

static int amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_probe(void)
{
    if (!vt_cpu_has_bf16()) return; /* AVX-512 state and AVX512_BF16: the packing and epilogue */
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    if (!((d >> 24) & 1) || !((d >> 22) & 1)) return; /* AMX-TILE, AMX-BF16 */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0x60000u) != 0x60000u) return; /* XTILECFG, XTILEDATA enabled by the OS */
    /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18): per process, idempotent */
    if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return;
    amx_ok = 1;
}

int vt_cpu_has_amx(void)
{
    pthread_once(&amx_once, amx_probe);
    return amx_ok;
}

/* Palette 1; tiles 0-3 accumulators, 4-5 A, 6-7 B: all 16 rows x 64 bytes.  A static object so
 * that all 64 bytes are in memory when gcc's LDTILECFG asm (which names only 8) reads them. */
static const _Alignas(64) struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} cfg = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

static inline __mmask16 mask16(int w) { return w >= 16 ? 0xffff : w <= 0 ? 0 : (__mmask16)((1u << w) - 1); }

/* One row of an A tile from 32 floats contiguous along k (w of them present): 16 words. */
AMX_TARGET static inline __m512i tile_row(const float *s, int w)
{
    return vt_bf16_cvt32(_mm512_maskz_loadu_ps(mask16(w), s),
                         _mm512_maskz_loadu_ps(mask16(w - 16), s + 16));
}

/* r[q][i] -> r[i][q], 16 x 16 32-bit words. */
AMX_TARGET static inline void transpose16(__m512i r[16])
{
    __m512i t[16];
    for (int j = 0; j < 16; j += 2) {
        t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
        t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
    }
    for (int j = 0; j < 16; j += 4) {
        r[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
        r[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
        r[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
        r[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_i32x4(r[j], r[j + 4], 0x88);
        t[j + 4] = _mm512_shuffle_i32x4(r[j], r[j + 4], 0xdd);
        t[j + 8] = _mm512_shuffle_i32x4(r[j + 8], r[j + 12], 0x88);
        t[j + 12] = _mm512_shuffle_i32x4(r[j + 8], r[j + 12], 0xdd);
    }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
    }
}

/* Panels of 32 rows of A, rows [i0, i0 + mb), k in [p0, p0 + kb), kpad pairs (a multiple of
 * 16) each: per k step, the tile of rows 0-15 then that of rows 16-31, zero past mb and kb.
 * Group g (rows 16 g ..) of step s at dst + (g / 2) 32 kpad + 512 s + 256 (g % 2). */
AMX_TARGET static void pack_a(const vt_bf16_view *X, int i0, int mb, int p0, int kb, int kpad,
                              uint32_t *dst)
{
    int steps = kpad / 16, groups = (mb + 31) / 32 * 2;
    ptrdiff_t rs = X->rs, cs = X->cs;
    const float *src = X->x + (ptrdiff_t)i0 * rs + (ptrdiff_t)p0 * cs;
#define TILE(g, s) (dst + (size_t)((g) / 2) * kpad * 32 + (size_t)(s) * 512 + 256 * ((g) % 2))
    if (cs == 1) { /* rows along k: each row narrowed, k step after k step */
        for (int i = 0; i < groups * 16; i++)
            for (int s = 0; s < steps; s++) {
                int w = kb - 32 * s;
                __m512i v = i < mb && w > 0 ? tile_row(src + i * rs + 32 * s, w)
                                            : _mm512_setzero_si512();
                _mm512_store_si512(TILE(i / 16, s) + 16 * (i % 16), v);
            }
    } else if (rs == 1) {
        /* columns along k: for a pair, 16 rows' words in one vector; 16 pairs' vectors
         * transposed.  Step outer, groups inner: the 32 rows of k of a step are read 64 bytes
         * per group, all groups while their pages are at hand */
        for (int s = 0; s < steps; s++)
            for (int g = 0; g < groups; g++) {
                __mmask16 mr = mask16(mb - 16 * g);
                __m512i r[16];
                for (int q = 0; q < 16; q++) {
                    int p = 32 * s + 2 * q;
                    const float *s0 = src + 16 * g + (ptrdiff_t)p * cs;
                    __m512 x0 = p < kb && mr ? _mm512_maskz_loadu_ps(mr, s0) : _mm512_setzero_ps();
                    __m512 x1 =
                        p + 1 < kb && mr ? _mm512_maskz_loadu_ps(mr, s0 + cs) : _mm512_setzero_ps();
                    r[q] = vt_bf16_pairs16(x0, x1);
                }
                transpose16(r);
                uint32_t *d = TILE(g, s);
                for (int i = 0; i < 16; i++) _mm512_store_si512(d + 16 * i, r[i]);
            }
    } else { /* neither stride 1 (not produced by row-major operands) */
        for (int g = 0; g < groups; g++)
            for (int s = 0; s < steps; s++)
                for (int i = 0; i < 16; i++)
                    for (int q = 0; q < 16; q++) {
                        int p = 32 * s + 2 * q, row = 16 * g + i;
                        uint32_t lo = 0, hi = 0;
                        if (row < mb && p < kb) lo = vt_bf16_round(src[row * rs + p * cs]);
                        if (row < mb && p + 1 < kb)
                            hi = vt_bf16_round(src[row * rs + (p + 1) * cs]);
                        TILE(g, s)[16 * i + q] = lo | hi << 16;
                    }
    }
#undef TILE
}

/* C[mm x nn] (row stride ldc) = alpha Apanel Bpanel + beta C (beta 0: C not read), steps k
 * steps; buf: 32 x 32 floats.  Rows 16-31 (columns 16-31) are skipped where mm (nn) <= 16. */
AMX_TARGET static void ukr(int steps, const uint32_t *ap, const uint32_t *bp, int mm, int nn,
                           float alpha, float beta, float *c, ptrdiff_t ldc, int ct, float *buf)
{
    int m2 = mm > 16, n2 = nn > 16;
    /* C's lines on their way while the tiles work (C is read or written once a k block) */
    for (int r = 0; r < (ct ? nn : mm); r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        if (ct ? m2 : n2) _mm_prefetch((const char *)(c + r * ldc + 16), _MM_HINT_T0);
    }
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if (m2 && n2)
        for (int s = 0; s < steps; s++, ap += 512, bp += 512) {
            _tile_loadd(4, ap, 64);
            _tile_loadd(6, bp, 128);
            _tile_loadd(7, bp + 16, 128);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(5, ap + 256, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    else if (n2)
        for (int s = 0; s < steps; s++, ap += 512, bp += 512) {
            _tile_loadd(4, ap, 64);
            _tile_loadd(6, bp, 128);
            _tile_loadd(7, bp + 16, 128);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
        }
    else if (m2)
        for (int s = 0; s < steps; s++, ap += 512, bp += 512) {
            _tile_loadd(4, ap, 64);
            _tile_loadd(5, ap + 256, 64);
            _tile_loadd(6, bp, 128);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(2, 5, 6);
        }
    else
        for (int s = 0; s < steps; s++, ap += 512, bp += 512) {
            _tile_loadd(4, ap, 64);
            _tile_loadd(6, bp, 128);
            _tile_dpbf16ps(0, 4, 6);
        }
    if (!ct && alpha == 1.0f && beta == 0.0f && mm == 32 && nn == 32) { /* C = the sums */
        _tile_stored(0, c, ldc * 4);
        _tile_stored(1, c + 16, ldc * 4);
        _tile_stored(2, c + 16 * ldc, ldc * 4);
        _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
        AMX_FENCE();
        return;
    }
    _tile_stored(0, buf, 128);
    if (n2) _tile_stored(1, buf + 16, 128);
    if (m2) _tile_stored(2, buf + 512, 128);
    if (m2 && n2) _tile_stored(3, buf + 528, 128);
    AMX_FENCE();
    if (ct) { /* the block is C's transpose: transpose the buffer, swap the sizes */
        __m512i t[4][16];
        for (int q = 0; q < 4; q++) {
            for (int i = 0; i < 16; i++)
                t[q][i] = _mm512_load_si512(buf + (q / 2) * 512 + (q % 2) * 16 + 32 * i);
            transpose16(t[q]);
        }
        for (int q = 0; q < 4; q++) /* block (r, c) of the buffer becomes block (c, r) */
            for (int i = 0; i < 16; i++)
                _mm512_store_si512(buf + (q % 2) * 512 + (q / 2) * 16 + 32 * i, t[q][i]);
        int t2 = mm;
        mm = nn;
        nn = t2;
        n2 = nn > 16;
    }
    __mmask16 k0 = mask16(nn), k1 = mask16(nn - 16);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int r = 0; r < mm; r++) {
        float *cr = c + r * ldc;
        __m512 v0 = _mm512_mul_ps(va, _mm512_load_ps(buf + 32 * r));
        if (beta != 0.0f) v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(k0, cr), v0);
        _mm512_mask_storeu_ps(cr, k0, v0);
        if (n2) {
            __m512 v1 = _mm512_mul_ps(va, _mm512_load_ps(buf + 32 * r + 16));
            if (beta != 0.0f) v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(k1, cr + 16), v1);
            _mm512_mask_storeu_ps(cr + 16, k1, v1);
        }
    }
}

/* KC (a multiple of 32), MC and NC for an m x n x k product (above). */
static void blocking(int m, int n, int k, int *kc, int *mc, int *nc)
{
    int nk = (k + KCMAX - 1) / KCMAX;
    *kc = ((k + nk - 1) / nk + 31) / 32 * 32;
    int kbytes = *kc * 2;
    int mcv = ABLK / kbytes / 32 * 32, ncv = BBLK / kbytes / 32 * 32;
    mcv = mcv < 32 ? 32 : mcv > 1024 ? 1024 : mcv;
    ncv = ncv < 64 ? 64 : ncv > 4096 ? 4096 : ncv;
    *mc = m < mcv ? m : mcv;
    *nc = n < ncv ? n : ncv;
}

/* C (m x n; element (i, j) at c[i rc + j cc], cc or rc 1) = alpha op(A) op(B) + beta C. */
AMX_TARGET static int amx_serial(int m, int n, int k, float alpha, const vt_bf16_view *A,
                                 const vt_bf16_view *B, float beta, float *c, ptrdiff_t rc,
                                 ptrdiff_t cc)
{
    int KC, MC, NC;
    blocking(m, n, k, &KC, &MC, &NC);
    size_t kpad_max = (size_t)KC / 2;
    size_t bw = kpad_max * (size_t)((NC + 31) / 32 * 32);
    size_t aw = kpad_max * (size_t)((MC + 31) / 32 * 32);
    /* B block, A block, the accumulators' buffer: each a multiple of 64 bytes */
    uint32_t *bp = vt_gemm_thread_scratch((bw + aw + 32 * 32) * sizeof(uint32_t));
    if (!bp) return 0;
    uint32_t *ap = bp + bw;
    float *buf = (float *)(ap + aw);
    vt_bf16_view Bt = {B->x, B->cs, B->rs}; /* rows j, columns p */
    int ct = cc != 1;
    ptrdiff_t ldc = ct ? cc : rc;
    _tile_loadconfig(&cfg);
    for (int jc = 0; jc < n; jc += NC) {
        int nb = n - jc < NC ? n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            int kb = k - pc < KC ? k - pc : KC, kpad = ((kb + 1) / 2 + 15) / 16 * 16;
            float bt = pc == 0 ? beta : 1.0f;
            vt_bf16_pack_pairs(&Bt, jc, nb, pc, kb, 32, kpad, bp);
            for (int ic = 0; ic < m; ic += MC) {
                int mb = m - ic < MC ? m - ic : MC;
                pack_a(A, ic, mb, pc, kb, kpad, ap);
                AMX_FENCE();
                for (int jr = 0; jr < nb; jr += 32) {
                    int nn = nb - jr < 32 ? nb - jr : 32;
                    const uint32_t *bpan = bp + (size_t)(jr / 32) * kpad * 32;
                    for (int ir = 0; ir < mb; ir += 32) {
                        int mm = mb - ir < 32 ? mb - ir : 32;
                        ukr(kpad / 16, ap + (size_t)(ir / 32) * kpad * 32, bpan, mm, nn, alpha,
                            bt, c + (ptrdiff_t)(ic + ir) * rc + (ptrdiff_t)(jc + jr) * cc, ldc,
                            ct, buf);
                    }
                }
                AMX_FENCE();
            }
        }
    }
    _tile_release();
    return 1;
}

/* op(A) not transposed and op(B) transposed (a weight gradient, dY col^T), the operand packed
 * as B needs a transpose and A does not; C^T = op(B)^T op(A)^T packs them the other way round:
 * where m < n, the smaller one is transposed (and each 32 x 32 of C in the epilogue): one
 * thread, 64 x 288 x 784 (the small CNN's conv2 dW) 1.06x, 64 x 576 x 3136 1.1-1.25x, 256 x
 * 2304 x 196 1.23x faster.  Elsewhere C = op(A) op(B) as it is. */
AMX_TARGET int vt_gemm_bf16_amx_serial(int m, int n, int k, float alpha, const vt_bf16_view *A,
                                       const vt_bf16_view *B, float beta, float *c, int ldc)
{
    if (A->cs == 1 && B->rs == 1 && A->rs != 1 && B->cs != 1 && m < n) {
        vt_bf16_view At = {B->x, B->cs, B->rs}, Bt = {A->x, A->cs, A->rs};
        return amx_serial(n, m, k, alpha, &At, &Bt, beta, c, 1, ldc);
    }
    return amx_serial(m, n, k, alpha, A, B, beta, c, ldc, 1);
}

#else /* no AMX intrinsics, or not x86-64 Linux */

int vt_cpu_has_amx(void) { return 0; }

int vt_gemm_bf16_amx_serial(int m, int n, int k, float alpha, const vt_bf16_view *A,
                            const vt_bf16_view *B, float beta, float *c, int ldc)
{
    (void)m, (void)n, (void)k, (void)alpha, (void)A, (void)B, (void)beta, (void)c, (void)ldc;
    return 0;
}
#endif
