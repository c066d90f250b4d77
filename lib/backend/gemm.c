#include "backend/gemm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_config.h"

#if VT_HAVE_BLIS
#include <blis.h>
#elif VT_HAVE_CBLAS
#include <cblas.h>
#endif

/* Blocking sizes of the portable kernel: a KC x NC panel of B (64 KiB..1 MiB) stays in L2 while
 * every row of A streams over it; the inner loop is a contiguous axpy the compiler vectorises. */
enum { KC = 256, NC = 2048 };

typedef struct {
    int transa, m, n, k;
    float alpha;
    const float *a;
    int lda;
    const float *bp; /* packed panel: kc rows of nc contiguous floats */
    int kc, nc, p0, j0;
    float *c;
    int ldc;
} panel_job;

static void panel_rows(void *ctx, size_t r0, size_t r1)
{
    const panel_job *J = ctx;
    for (size_t i = r0; i < r1; i++) {
        float *restrict crow = J->c + i * (size_t)J->ldc + J->j0;
        for (int p = 0; p < J->kc; p++) {
            size_t pi = (size_t)(J->p0 + p);
            float av = J->transa ? J->a[pi * (size_t)J->lda + i] : J->a[i * (size_t)J->lda + pi];
            av *= J->alpha;
            if (av == 0.0f) continue;
            const float *restrict brow = J->bp + (size_t)p * J->nc;
            for (int j = 0; j < J->nc; j++) crow[j] += av * brow[j];
        }
    }
}

void vt_sgemm_portable(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc)
{
    if (m <= 0 || n <= 0) return;
    for (int i = 0; i < m; i++) {
        float *crow = c + (size_t)i * ldc;
        if (beta == 0.0f) memset(crow, 0, (size_t)n * sizeof(float));
        else if (beta != 1.0f)
            for (int j = 0; j < n; j++) crow[j] *= beta;
    }
    if (k <= 0 || alpha == 0.0f) return;
    float *bp = malloc((size_t)KC * NC * sizeof(float));
    if (!bp) {
        /* No memory for packing: fall back to the unpacked triple loop. */
        for (int i = 0; i < m; i++)
            for (int p = 0; p < k; p++) {
                float av = alpha * (transa ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]);
                for (int j = 0; j < n; j++)
                    c[(size_t)i * ldc + j] +=
                        av * (transb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
            }
        return;
    }
    for (int j0 = 0; j0 < n; j0 += NC) {
        int nc = n - j0 < NC ? n - j0 : NC;
        for (int p0 = 0; p0 < k; p0 += KC) {
            int kc = k - p0 < KC ? k - p0 : KC;
            for (int p = 0; p < kc; p++) {
                float *dst = bp + (size_t)p * nc;
                if (transb)
                    for (int j = 0; j < nc; j++) dst[j] = b[(size_t)(j0 + j) * ldb + p0 + p];
                else
                    memcpy(dst, b + (size_t)(p0 + p) * ldb + j0, (size_t)nc * sizeof(float));
            }
            panel_job J = {transa, m, n, k, alpha, a, lda, bp, kc, nc, p0, j0, c, ldc};
            vt_pool_run(pool, (size_t)m, 4, panel_rows, &J);
        }
    }
    free(bp);
}

/* What the CPU and the OS allow (gemm.h); also used to pick the activation kernels
 * (cpu_act.c), so it is built with or without BLIS. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
int vt_cpu_x86_level(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    if (!osxsave || !avx) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return 0; /* xmm and ymm state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 1;
    int avx2 = (b >> 5) & 1;
    int avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
    if (!avx2 || !fma) return 1;
    return avx512 && (lo & 0xe0) == 0xe0 ? 3 : 2;
}
#else
int vt_cpu_x86_level(void) { return 0; }
#endif

#if VT_HAVE_BLIS
/* Which kernels run the products.  BLIS picks a sub-configuration from the CPU at start-up,
 * but falls back to 'haswell' (AVX2) on AVX-512 processors whose brand string it cannot map to
 * a number of FMA units (virtual machines report "Intel(R) Xeon(R) Processor"): 68.8 vs 99.7
 * GFLOP/s for a conv tile here.  BLIS is linked statically (meson.build), so the library can
 * hand each call the context of the sub-configuration it chooses, without touching the process
 * environment (BLIS itself reads BLIS_ARCH_TYPE, ours is VT_CPU_GEMM, docs/performance.md). */
/* The chosen micro-kernel and its blocking, for our own packing (below). */
typedef struct ukr_info {
    sgemm_ukr_ft ukr;
    int mr, nr, kc, mc, nc, cols; /* cols: the kernel prefers writing columns of C */
} ukr_info;

typedef struct {
    int portable;  /* VT_CPU_GEMM=portable: BLIS is not called */
    cntx_t *packed; /* the chosen sub-configuration's context */
    cntx_t *sup;    /* its small/unpacked kernels: skx has only reference ones, haswell's serve */
    ukr_info ukr;   /* the micro-kernel products call with our packing (ukr_gemm) ... */
    int have_ukr;   /* ... when set (not with VT_CPU_GEMM_PACK=blis) */
    int avx2;       /* the transposing packer may use AVX2 */
    char desc[224];
} gemm_choice;

static gemm_choice G;
static pthread_once_t G_once = PTHREAD_ONCE_INIT;
static int ukr_get(const gemm_choice *g, ukr_info *u);


/* The instruction level a sub-configuration needs (BLIS's x86-64 family as Debian builds it);
 * -1 for those not offered (other vendors' extensions, Xeon Phi). */
static int arch_level(arch_t id)
{
    switch (id) {
    case BLIS_ARCH_GENERIC: return 0;
    case BLIS_ARCH_SANDYBRIDGE: return 1;
    case BLIS_ARCH_HASWELL:
    case BLIS_ARCH_ZEN:
    case BLIS_ARCH_ZEN2:
    case BLIS_ARCH_ZEN3: return 2;
    case BLIS_ARCH_SKX: return 3;
    default: return -1;
    }
}

static void choose_kernels(void)
{
    bli_init();
    arch_t blis_id = bli_arch_query_id(), id = blis_id;
    int level = vt_cpu_x86_level();
    const char *env = getenv("VT_CPU_GEMM");
    char why[96] = "";
    if (env && *env && strcmp(env, "auto") != 0) {
        if (!strcmp(env, "portable")) {
            G.portable = 1;
            snprintf(G.desc, sizeof G.desc, "portable (VT_CPU_GEMM=portable)");
            return;
        }
        arch_t want = BLIS_NUM_ARCHS;
        for (int i = 0; i < BLIS_NUM_ARCHS; i++)
            if (!strcmp(env, bli_arch_string((arch_t)i))) want = (arch_t)i;
        int need = want < BLIS_NUM_ARCHS ? arch_level(want) : -1;
        if (need < 0 || need > level || !bli_gks_lookup_nat_cntx(want))
            snprintf(why, sizeof why, "; VT_CPU_GEMM=%.40s not runnable here, ignored", env);
        else {
            id = want;
            snprintf(why, sizeof why, " (VT_CPU_GEMM)");
        }
    }
    if (id == blis_id && !*why && level >= 3 && arch_level(id) >= 0 && arch_level(id) < 3 &&
        bli_gks_lookup_nat_cntx(BLIS_ARCH_SKX)) {
        id = BLIS_ARCH_SKX;
        snprintf(why, sizeof why, " (AVX-512; BLIS alone picks %s here)", bli_arch_string(blis_id));
    }
    G.packed = bli_gks_lookup_nat_cntx(id);
    G.sup = G.packed;
    if (id == BLIS_ARCH_SKX && level >= 2 && bli_gks_lookup_nat_cntx(BLIS_ARCH_HASWELL))
        G.sup = bli_gks_lookup_nat_cntx(BLIS_ARCH_HASWELL);
    const char *pack = getenv("VT_CPU_GEMM_PACK");
    int own_pack = !(pack && !strcmp(pack, "blis"));
    G.have_ukr = own_pack && ukr_get(&G, &G.ukr);
    G.avx2 = level >= 2;
    const char *packing = G.have_ukr   ? "own packing"
                          : own_pack ? "BLIS packing"
                                       : "BLIS packing: VT_CPU_GEMM_PACK=blis";
    snprintf(G.desc, sizeof G.desc, "BLIS %s %s (%s)%s%s", bli_info_get_version_str(),
             bli_arch_string(id), packing, G.sup != G.packed ? " (small products: haswell)" : "",
             why);
}

static const gemm_choice *kernels(void)
{
    pthread_once(&G_once, choose_kernels);
    return &G;
}

int vt_sgemm_uses_blas(void) { return !kernels()->portable; }
const char *vt_sgemm_kernels(void) { return kernels()->desc; }

/* ---- our own packing around BLIS's micro-kernel ----------------------------------------------
 * BLIS 0.9's packed path copies operands into micro-panels with a kernel chosen by the panel
 * height; skx's sgemm micro-kernel is 32 x 12 and the kernel table stops below 32, so every A
 * panel went through the reference scal2m loop, one strided element at a time: 14 % of a
 * detector's training step (perf, Zen 4).  Here the library packs itself and calls the chosen
 * sub-configuration's micro-kernel, with the same blocking (KC, MC, NC) and the operand that
 * lies contiguous along the micro-panel copied with whole-row copies.  A micro-kernel that
 * prefers to write columns of C (skx) computes C^T = op(B)^T op(A)^T, so the wide operand of a
 * convolution (its columns, whose rows are contiguous) is the one packed by rows either way. */
static int ukr_get(const gemm_choice *g, ukr_info *u)
{
    if (g->portable || !g->packed) return 0;
    cntx_t *c = g->packed;
    u->ukr = (sgemm_ukr_ft)bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, c);
    u->mr = (int)bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MR, c);
    u->nr = (int)bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NR, c);
    u->kc = (int)bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_KC, c);
    u->mc = (int)bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MC, c);
    u->nc = (int)bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NC, c);
    u->cols = !bli_cntx_l3_nat_ukr_prefers_rows_dt(BLIS_FLOAT, BLIS_GEMM_UKR, c);
    if (u->mc % u->mr) u->mc -= u->mc % u->mr;
    if (u->nc % u->nr) u->nc -= u->nc % u->nr;
    if (u->nc > 4096) u->nc = 4096;
    return u->ukr && u->mr > 0 && u->nr > 0 && u->kc > 0 && u->mc > 0 && u->nc > 0;
}

/* A strided operand: element (i, p) at x[i * rs + p * cs]. */
typedef struct sview {
    const float *x;
    ptrdiff_t rs, cs;
} sview;

/* Rows of X contiguous along the panel (rs == 1): hh rows x kb columns copied a column at a
 * time into the panel, zeros past hh. */
static void pack_contig(const sview *X, const float *src, int hh, int kb, int h, float *dst)
{
    for (int p = 0; p < kb; p++, dst += h) {
        memcpy(dst, src + (ptrdiff_t)p * X->cs, (size_t)hh * sizeof(float));
        if (hh < h) memset(dst + hh, 0, (size_t)(h - hh) * sizeof(float));
    }
}

/* Rows of X that are not contiguous along the panel: hh rows x kb columns transposed into the
 * panel (dst[p * h + i] = X(i, p)). */
static void pack_strided(const sview *X, const float *src, int hh, int kb, int h, float *dst)
{
    for (int i = 0; i < hh; i++) {
        const float *s = src + (ptrdiff_t)i * X->rs;
        float *d = dst + i;
        if (X->cs == 1)
            for (int p = 0; p < kb; p++) d[(size_t)p * h] = s[p];
        else
            for (int p = 0; p < kb; p++) d[(size_t)p * h] = s[(ptrdiff_t)p * X->cs];
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/transpose8.h"
/* The first n (0-7) lanes of v at d. */
__attribute__((target("avx2"), always_inline)) static inline void store_lanes(float *d, __m256 v,
                                                                              int n)
{
    __m128 lo = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(d, lo);
        lo = _mm256_extractf128_ps(v, 1);
        d += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)d, lo);
        lo = _mm_movehl_ps(lo, lo);
        d += 2;
        n -= 2;
    }
    if (n) _mm_store_ss(d, lo);
}

/* pack_strided for rows contiguous along p (cs == 1), in 8 x 8 blocks transposed in AVX
 * registers: a weight-gradient product's columns (K rows of `cols` floats) pack 3.5x faster
 * than element by element.  A last group of 1-7 rows (all of a 6-row panel: the A side of
 * haswell's and zen3's 6 x 16 kernel, i.e. every untransposed weight, dY and dM operand) goes
 * through the same transpose with its rows' lanes stored (`gemm_shapes pack`, Zen 3: 96 x 864
 * untransposed 125 -> 21-37 us, 256 x 2304 410-470 -> 160-280 us). */
__attribute__((target("avx2"))) static void pack_strided_avx2(const sview *X, const float *src,
                                                               int hh, int kb, int h, float *dst)
{
    ptrdiff_t rs = X->rs;
    for (int i = 0; i < hh; i += 8) {
        const float *s = src + i * rs;
        int rows = hh - i < 8 ? hh - i : 8, p = 0;
        for (; p + 8 <= kb; p += 8) {
            __m256 r[8], o[8];
            for (int q = 0; q < 8; q++)
                r[q] = q < rows ? _mm256_loadu_ps(s + q * rs + p) : _mm256_setzero_ps();
            vt_transpose8_ps(r, o);
            float *d = dst + (size_t)p * h + i;
            if (rows == 8)
                for (int q = 0; q < 8; q++) _mm256_storeu_ps(d + (size_t)q * h, o[q]);
            else
                for (int q = 0; q < 8; q++) store_lanes(d + (size_t)q * h, o[q], rows);
        }
        for (; p < kb; p++)
            for (int q = 0; q < rows; q++) dst[(size_t)p * h + i + q] = s[q * rs + p];
    }
}

/* pack_contig for panels under 8 rows (the A side of the 6 x 16 kernel: a transposed weight,
 * U^T), the copies inline: a call of memcpy for 24 bytes costs more than it moves
 * (`gemm_shapes pack`, 96 x 864 transposed: 81 -> 25-44 us on Zen 3).  16-row panels (every
 * convolution's column operand) keep memcpy, which copied them as fast or faster (Zen 3). */
__attribute__((target("avx2"))) static void pack_contig_small(const sview *X, const float *src,
                                                               int hh, int kb, int h, float *dst)
{
    for (int p = 0; p < kb; p++, dst += h) {
        const float *s = src + (ptrdiff_t)p * X->cs;
        int i = 0;
        if (hh >= 4) {
            _mm_storeu_ps(dst, _mm_loadu_ps(s));
            i = 4;
        }
        for (; i < hh; i++) {
            dst[i] = s[i];
            __asm__("" : "+r"(i)); /* a few floats: not a call of memcpy */
        }
        for (; i < h; i++) {
            dst[i] = 0.0f;
            __asm__("" : "+r"(i));
        }
    }
}
#endif

/* Micro-panels of rows [i0, i0 + mb) and columns [p0, p0 + kb) of X, `h` rows each: panel r
 * holds, for each p, h consecutive rows (zeros past mb). */
static void pack_panels(const sview *X, int i0, int mb, int p0, int kb, int h, int avx2,
                        float *dst)
{
    for (int r = 0; r < mb; r += h) {
        int hh = mb - r < h ? mb - r : h;
        const float *src = X->x + (ptrdiff_t)(i0 + r) * X->rs + (ptrdiff_t)p0 * X->cs;
        if (X->rs != 1 && hh < h) memset(dst, 0, (size_t)kb * h * sizeof(float));
#if defined(__x86_64__)
        if (X->rs == 1 && avx2 && h < 8) pack_contig_small(X, src, hh, kb, h, dst);
        else if (X->rs == 1) pack_contig(X, src, hh, kb, h, dst);
        else if (X->cs == 1 && avx2) pack_strided_avx2(X, src, hh, kb, h, dst);
#else
        if (X->rs == 1) pack_contig(X, src, hh, kb, h, dst);
#endif
        else pack_strided(X, src, hh, kb, h, dst);
        dst += (size_t)kb * h;
    }
}


/* An operand packed once for a whole product (pack_whole): for each block of KC along k, its
 * rows [0, rows) in panels of h (rows rounded up to h), each panel kb x h.  The block at k
 * index pc (a multiple of KC) starts at pc * rows_up, and row i0 (a multiple of h) of it i0 /
 * h panels further. */
static size_t whole_offset(int rows, int h, int pc, int i0, int kb)
{
    size_t up = (size_t)(rows + h - 1) / h * h;
    return (size_t)pc * up + (size_t)(i0 / h) * kb * h;
}

static void pack_whole(const ukr_info *u, const sview *X, int rows, int k, int h, float *dst)
{
    for (int pc = 0; pc < k; pc += u->kc) {
        int kb = k - pc < u->kc ? k - pc : u->kc;
        pack_panels(X, 0, rows, pc, kb, h, kernels()->avx2, dst + whole_offset(rows, h, pc, 0, kb));
    }
}

/* C (m x n, element (i, j) at c[i * rsc + j * csc]) = alpha A B + beta C for the kernel's
 * preferred orientation.  0 when the scratch could not be had (nothing written). */
/* apk, bpk (NULL: packed here): the A or B side already packed for the whole product, as
 * pack_whole leaves it (the A side in mr-row panels, the B side's transposed view in nr-row
 * panels), its view then unused. */
static int ukr_gemm(const ukr_info *u, int m, int n, int k, float alpha, const sview *A,
                    const sview *B, float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc,
                    const float *apk, const float *bpk)
{
    int KCb = u->kc, MCb = u->mc, NCb = u->nc;
    int nc_max = n < NCb ? n : NCb, mc_max = m < MCb ? m : MCb, kc_max = k < KCb ? k : KCb;
    size_t bfl = (size_t)kc_max * ((nc_max + u->nr - 1) / u->nr * u->nr);
    size_t afl = (size_t)kc_max * ((mc_max + u->mr - 1) / u->mr * u->mr);
    float *bp = vt_gemm_thread_scratch((bfl + afl + 16) * sizeof(float));
    if (!bp) return 0;
    float *ap = bp + ((bfl + 15) & ~(size_t)15);
    cntx_t *cntx = kernels()->packed;
    int avx2 = kernels()->avx2;
    auxinfo_t aux;
    memset(&aux, 0, sizeof aux);
    for (int jc = 0; jc < n; jc += NCb) {
        int nb = n - jc < NCb ? n - jc : NCb;
        for (int pc = 0; pc < k; pc += KCb) {
            int kb = k - pc < KCb ? k - pc : KCb;
            float bt = pc == 0 ? beta : 1.0f;
            /* B's block, transposed view: rows j, columns p */
            const float *bb = bpk ? bpk + whole_offset(n, u->nr, pc, jc, kb) : bp;
            if (!bpk) {
                sview Bt = {B->x, B->cs, B->rs};
                pack_panels(&Bt, jc, nb, pc, kb, u->nr, avx2, bp);
            }
            for (int ic = 0; ic < m; ic += MCb) {
                int mb = m - ic < MCb ? m - ic : MCb;
                const float *ab = apk ? apk + whole_offset(m, u->mr, pc, ic, kb) : ap;
                if (!apk) pack_panels(A, ic, mb, pc, kb, u->mr, avx2, ap);
                for (int jr = 0; jr < nb; jr += u->nr) {
                    int nn = nb - jr < u->nr ? nb - jr : u->nr;
                    float *bpan = (float *)bb + (size_t)(jr / u->nr) * kb * u->nr;
                    for (int ir = 0; ir < mb; ir += u->mr) {
                        int mm = mb - ir < u->mr ? mb - ir : u->mr;
                        float *apan = (float *)ab + (size_t)(ir / u->mr) * kb * u->mr;
                        float *cc = c + (ptrdiff_t)(ic + ir) * rsc + (ptrdiff_t)(jc + jr) * csc;
                        bli_auxinfo_set_next_ab(apan, bpan, &aux);
                        u->ukr(mm, nn, kb, &alpha, apan, bpan, &bt, cc, rsc, csc, &aux, cntx);
                    }
                }
            }
        }
    }
    return 1;
}

/* Row-major C = alpha op(A) op(B) + beta C through ukr_gemm with U (k > 0); 0 when it cannot
 * run (then the caller uses BLIS's own driver). */
static int own_packed(const ukr_info *U, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc)
{
    sview A = {a, ta ? 1 : lda, ta ? lda : 1}, B = {b, tb ? 1 : ldb, tb ? ldb : 1};
    if (!U->cols) return ukr_gemm(U, m, n, k, alpha, &A, &B, beta, c, ldc, 1, NULL, NULL);
    /* C^T (n x m) = op(B)^T op(A)^T, written with C's strides swapped */
    sview Bt = {B.x, B.cs, B.rs}, At = {A.x, A.cs, A.rs};
    return ukr_gemm(U, n, m, k, alpha, &Bt, &At, beta, c, 1, ldc, NULL, NULL);
}

/* op(A)'s panels: the A side's (mr rows) for a kernel that writes rows of C, else the B side's
 * (C^T = op(B)^T op(A)^T: op(A)^T's transposed view, i.e. op(A), in nr rows) */
static int packed_a_height(const gemm_choice *g) { return g->ukr.cols ? g->ukr.nr : g->ukr.mr; }

/* Products with a dimension under this run BLIS's small-product kernels (blas_call), which
 * take no packed operand */
enum { SUP_BELOW = 32 };

size_t vt_sgemm_pack_a_floats(int m, int k)
{
    const gemm_choice *g = kernels();
    if (!g->have_ukr || m < SUP_BELOW || k < SUP_BELOW) return 0;
    int h = packed_a_height(g);
    return (size_t)(m + h - 1) / h * h * (size_t)k;
}

void vt_sgemm_pack_a(int transa, int m, int k, const float *a, int lda, float *dst)
{
    const gemm_choice *g = kernels();
    sview A = {a, transa ? 1 : lda, transa ? lda : 1};
    pack_whole(&g->ukr, &A, m, k, packed_a_height(g), dst);
}

typedef struct {
    int transa, m, k, lda;
    const float *a;
    size_t a_stride, dst_stride;
    float *dst;
} pack_many_job;

static void pack_many(void *ctx, size_t i0, size_t i1)
{
    const pack_many_job *P = ctx;
    for (size_t i = i0; i < i1; i++)
        vt_sgemm_pack_a(P->transa, P->m, P->k, P->a + i * P->a_stride, P->lda,
                        P->dst + i * P->dst_stride);
}

void vt_sgemm_pack_a_many(vt_pool *pool, int count, int transa, int m, int k, const float *a,
                          size_t a_stride, int lda, float *dst, size_t dst_stride)
{
    pack_many_job P = {transa, m, k, lda, a, a_stride, dst_stride, dst};
    vt_pool_run(pool, (size_t)(count > 0 ? count : 0), 1, pack_many, &P);
}

int vt_sgemm_packed_a(int m, int n, int k, float alpha, const float *ap, int transb,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    const gemm_choice *g = kernels();
    const ukr_info *U = &g->ukr;
    if (!g->have_ukr || m < SUP_BELOW || n < SUP_BELOW || k < SUP_BELOW) return 0;
    sview B = {b, transb ? 1 : ldb, transb ? ldb : 1};
    if (!U->cols) return ukr_gemm(U, m, n, k, alpha, NULL, &B, beta, c, ldc, 1, ap, NULL);
    sview Bt = {B.x, B.cs, B.rs};
    return ukr_gemm(U, n, m, k, alpha, &Bt, NULL, beta, c, 1, ldc, NULL, ap);
}

/* BLIS's "sup" path (small/unpacked kernels, which BLIS picks by itself for shapes with a
 * dimension under a few hundred, i.e. every convolution tile here) runs our tiles' products
 * with a transposed operand at about half the speed of its packed path: 43 vs 81 GFLOP/s for
 * the dcol GEMM of a 32->64 conv (m 288, n 784, k 64, A transposed), 64 vs 74 for its dW
 * (build/bench/gemm_shapes, one thread, Zen 3).  It wins where a dimension is tiny (k 9 of a
 * first conv: 60 vs 27) and is about even on forward GEMMs.  So: packed unless a dimension is
 * under 32 (small CNN training step, interleaved A/B: +13% at batch 256, +4% to +15% at 64;
 * letting BLIS choose for untransposed products too made no difference beyond the noise). */
static void blas_call(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    const gemm_choice *g = kernels();
    rntm_t rntm;
    bli_rntm_init(&rntm);
    int sup = m < SUP_BELOW || n < SUP_BELOW || k < SUP_BELOW;
    if (sup) bli_rntm_enable_l3_sup(&rntm);
    else bli_rntm_disable_l3_sup(&rntm);
    if (!sup && g->have_ukr &&
        own_packed(&g->ukr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
    bli_sgemm_ex(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 m, n, k, &alpha, (float *)a, lda, 1, (float *)b, ldb, 1, &beta, c, ldc, 1,
                 sup ? g->sup : g->packed, &rntm);
}
#elif VT_HAVE_CBLAS
int vt_sgemm_uses_blas(void) { return 1; }
const char *vt_sgemm_kernels(void) { return "CBLAS (threaded by itself)"; }

static void blas_call(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif

size_t vt_sgemm_pack_a_floats_either(int m, int k)
{
    size_t a = vt_sgemm_pack_a_floats(m, k), b = vt_sgemm_pack_a_floats(k, m);
    return a > b ? a : b;
}

#if !VT_HAVE_BLIS /* no micro-kernel to hand packed operands to */
size_t vt_sgemm_pack_a_floats(int m, int k)
{
    (void)m, (void)k;
    return 0;
}

void vt_sgemm_pack_a(int transa, int m, int k, const float *a, int lda, float *dst)
{
    (void)transa, (void)m, (void)k, (void)a, (void)lda, (void)dst;
}

void vt_sgemm_pack_a_many(vt_pool *pool, int count, int transa, int m, int k, const float *a,
                          size_t a_stride, int lda, float *dst, size_t dst_stride)
{
    (void)pool, (void)count, (void)transa, (void)m, (void)k, (void)a, (void)a_stride, (void)lda,
        (void)dst, (void)dst_stride;
}

int vt_sgemm_packed_a(int m, int n, int k, float alpha, const float *ap, int transb,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    (void)m, (void)n, (void)k, (void)alpha, (void)ap, (void)transb, (void)b, (void)ldb, (void)beta,
        (void)c, (void)ldc;
    return 0;
}
#endif

#if VT_HAVE_CBLAS
typedef struct {
    int ta, tb, m, n, k;
    float alpha, beta;
    const float *a, *b;
    int lda, ldb, ldc;
    float *c;
    int split_n; /* split columns (else rows) */
    int parts;
} blas_job;

/* One thread's slice: a block of columns of C (and B) or of rows of C (and A). */
static void blas_part(void *ctx, size_t p0, size_t p1)
{
    const blas_job *J = ctx;
    int total = J->split_n ? J->n : J->m;
    for (size_t p = p0; p < p1; p++) {
        /* slices aligned to 16 so the kernels keep full vector widths */
        int per = ((total + J->parts - 1) / J->parts + 15) & ~15;
        int lo = (int)p * per, hi = lo + per < total ? lo + per : total;
        if (lo >= hi) continue;
        if (J->split_n) {
            const float *b = J->tb ? J->b + (size_t)lo * J->ldb : J->b + lo;
            blas_call(J->ta, J->tb, J->m, hi - lo, J->k, J->alpha, J->a, J->lda, b, J->ldb,
                      J->beta, J->c + lo, J->ldc);
        } else {
            const float *a = J->ta ? J->a + lo : J->a + (size_t)lo * J->lda;
            blas_call(J->ta, J->tb, hi - lo, J->n, J->k, J->alpha, a, J->lda, J->b, J->ldb,
                      J->beta, J->c + (size_t)lo * J->ldc, J->ldc);
        }
    }
}

void vt_sgemm(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    int threads = vt_pool_threads(pool);
    double work = (double)m * n * (k > 0 ? k : 1);
    /* With a single-threaded reentrant BLAS, large products are split over the pool by columns
     * or rows, whichever is longer.  Small ones are not worth waking threads for. */
    /* Only a reentrant BLAS may be called from several pool threads at once (meson.build). */
    if (!vt_sgemm_uses_blas()) {
        vt_sgemm_portable(pool, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (!VT_HAVE_BLIS || threads <= 1 || work < 2e6 || (m < 32 && n < 32)) {
        blas_call(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    blas_job J = {transa, transb, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c, n >= m, threads};
    vt_pool_run(pool, (size_t)threads, 1, blas_part, &J);
}
#else
int vt_sgemm_uses_blas(void) { return 0; }
const char *vt_sgemm_kernels(void) { return "portable (built without BLAS)"; }

void vt_sgemm(vt_pool *pool, int transa, int transb, int m, int n, int k, float alpha,
              const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    vt_sgemm_portable(pool, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif
