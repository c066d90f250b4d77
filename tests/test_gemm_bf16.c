/* vt_gemm_bf16 (lib/backend/gemm_bf16.c, gemm_bf16_amx.c): the bf16 rounding on edge values;
 * each kernel this machine runs (portable reference, AVX512_BF16, AMX, chosen with
 * vt_gemm_bf16_force; one the machine lacks is reported and skipped) against an fp64 product
 * of the bf16-rounded operands, within the bound of fp32 accumulation (|err| <= gamma_k
 * sum |a||b| with gamma_k = k 2^-24 / (1 - k 2^-24), k + 8 terms for alpha and beta, plus
 * 2^-120 for denormals the kernels flush), and against fp32 vt_sgemm within the bound of bf16
 * operands (|err| <= (2 2^-8 + 2 gamma_k) 1.02 sum |a||b|: each operand off by at most 2^-8
 * relative, the unit roundoff of bf16's 8-bit significand).  Shapes with m, n, k each of 1, 15,
 * 16, 17, 31, 33, 64, 100, 257 and others past the kernels' blocks (k over 2048 for AMX, 512 for
 * AVX512_BF16, n over 4096, m over 1024), all four transposes, alpha/beta, beta = 0 over NaN
 * garbage, padded leading dimensions holding NaN (never read) and a guard after C (never
 * written); 1 and 2 pool threads, and two threads calling at once.  Special operands: the
 * kernels' rounding is vt_bf16_round's (a denormal that rounds to 2^-126 counts), NaN and
 * infinities propagate.  Exits 77 (skipped) only where no bf16 path runs at all. */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/device.h"
#include "backend/gemm.h"
#include "visiontrain/visiontrain.h"
#include "core/core.h"
#include "core/threads.h"
#include "testutil.h"

static float fbits(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

START_TEST(test_round)
{
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f800000, 0x3f80}, /* 1 */
        {0x3f808000, 0x3f80}, /* tie, even below */
        {0x3f818000, 0x3f82}, /* tie, odd below: up */
        {0x3f808001, 0x3f81}, /* just above the tie */
        {0x3f807fff, 0x3f80}, /* just below */
        {0xbf808001, 0xbf81}, /* negative */
        {0x00000000, 0x0000}, {0x80000000, 0x8000}, /* signed zeros */
        {0x7f800000, 0x7f80}, {0xff800000, 0xff80}, /* infinities */
        {0x7f7fffff, 0x7f80},                       /* largest float rounds to inf */
        {0x7f7f7fff, 0x7f7f},                       /* largest below the tie stays finite */
        {0x00000001, 0x0000},                       /* smallest denormal */
        {0x00008000, 0x0000},                       /* denormal tie, even below */
        {0x00018000, 0x0002},                       /* denormal tie, odd below */
        {0x007fffff, 0x0080},                       /* largest denormal rounds to the min normal */
        {0x00400000, 0x0040},                       /* denormal, exact */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = vt_bf16_round(fbits(cases[i].in));
        ck_assert_msg(got == cases[i].out, "round(0x%08x) = 0x%04x, want 0x%04x",
                      (unsigned)cases[i].in, got, cases[i].out);
    }
    /* NaNs stay NaNs (quiet), sign kept, even those whose payload lies in the low half only */
    static const uint32_t nans[] = {0x7fc00000, 0x7f800001, 0x7fffffff, 0xff800001, 0xffc00000,
                                    0x7f80ffff};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = vt_bf16_round(fbits(nans[i]));
        ck_assert_msg(isnan(vt_bf16_to_float(h)) && (h & 0x0040) && (h >> 15) == (nans[i] >> 31),
                      "round(NaN 0x%08x) = 0x%04x", (unsigned)nans[i], h);
    }
    /* every bf16 is kept; the rounding is nearest (half an ulp, 2^-8 relative, at most) */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = vt_bf16_to_float((uint16_t)h);
        if (!isnan(x)) ck_assert_uint_eq(vt_bf16_round(x), h);
    }
    vt_rng r;
    vt_rng_seed(&r, 3);
    for (int i = 0; i < 100000; i++) {
        float x = (float)(vt_rng_normal(&r) * pow(2.0, (int)(vt_rng_uniform(&r) * 60) - 30));
        float y = vt_bf16_to_float(vt_bf16_round(x));
        ck_assert_msg(fabs((double)y - x) <= ldexp(fabs(x), -8), "%g -> %g", x, y);
    }
}
END_TEST

/* The kernels: the name vt_gemm_bf16_force takes and what vt_gemm_bf16_kernel() then says. */
enum { K_PORTABLE, K_AVX512, K_AMX, NKERN };
static const char *const kname[NKERN] = {"portable", "avx512", "amx"};
static const char *const kdesc[NKERN] = {"portable", "AVX512_BF16 14x32", "AMX 32x32"};

/* 1 when this machine runs kernel `kern` (now chosen), else says so and 0. */
static int use(int kern)
{
    if (!vt_gemm_bf16_force(kname[kern])) {
        fprintf(stderr, "%s kernel: not runnable on this machine (%s): skipped\n", kdesc[kern],
                kern == K_AMX ? "no AMX-BF16 / tile state" : "no AVX512_BF16");
        return 0;
    }
    ck_assert_ptr_nonnull(strstr(vt_gemm_bf16_kernel(), kdesc[kern]));
    return 1;
}

static const int shapes[][3] = {
    /* each of the edge sizes as m, as n, as k, and as all three */
    {1, 33, 17},   {15, 33, 17},  {16, 33, 17},  {17, 33, 17},  {31, 33, 17},   {33, 33, 17},
    {64, 33, 17},  {100, 33, 17}, {257, 33, 17}, {31, 1, 64},   {31, 15, 64},   {31, 16, 64},
    {31, 17, 64},  {31, 31, 64},  {31, 33, 64},  {31, 64, 64},  {31, 100, 64},  {31, 257, 64},
    {17, 64, 1},   {17, 64, 15},  {17, 64, 16},  {17, 64, 17},  {17, 64, 31},   {17, 64, 33},
    {17, 64, 64},  {17, 64, 100}, {17, 64, 257}, {1, 1, 1},     {15, 15, 15},   {16, 16, 16},
    {17, 17, 17},  {31, 31, 31},  {33, 33, 33},  {64, 64, 64},  {100, 100, 100}, {257, 257, 257},
    /* odd sizes against the micro-tiles (14 x 32, 32 x 32) and k blocks: AVX512_BF16's 512,
     * AMX's 2048 (k in equal blocks), AMX's row (1024) and column (4096) blocks */
    {14, 32, 2},   {13, 31, 3},   {29, 65, 65},  {128, 3, 577}, {300, 40, 70},  {2, 300, 16},
    {96, 171, 63}, {40, 97, 1030}, {100, 100, 513}, {33, 40, 2100}, {5, 4100, 40}, {1100, 20, 40}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* One product of shape s, transposes ta/tb, on kernel `kern` through vt_gemm_bf16 with the
 * pool; every element checked. */
typedef struct worst {
    double acc, fp32, units;
} worst;

static void check_one(vt_pool *pool, int kern, int threads, size_t s, int ta, int tb, vt_rng *r,
                      worst *w)
{
    int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    int ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    int lda = ca + (int)(s % 3), ldb = cb + (int)(s % 4), ldc = n + 1 + (int)(s % 2);
    size_t na = (size_t)ra * lda, nb = (size_t)rb * ldb, nc = (size_t)m * ldc, guard = 64;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc((nc + guard) * 4),
          *c0 = malloc((nc + guard) * 4), *f = malloc(nc * 4);
    double *ar = malloc((size_t)m * k * sizeof(double)), *br = malloc((size_t)k * n * sizeof(double));
    ck_assert(a && b && c && c0 && f && ar && br);
    /* the padding of each row: NaN, which any product that read it would show */
    for (size_t i = 0; i < na; i++) a[i] = i % lda < (size_t)ca ? (float)vt_rng_normal(r) : NAN;
    for (size_t i = 0; i < nb; i++)
        b[i] = i % ldb < (size_t)cb ? (float)(vt_rng_normal(r) * 3) : NAN;
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++)
            ar[(size_t)i * k + p] =
                vt_bf16_to_float(vt_bf16_round(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]));
    for (int p = 0; p < k; p++)
        for (int j = 0; j < n; j++)
            br[(size_t)p * n + j] =
                vt_bf16_to_float(vt_bf16_round(tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]));
    int variant = (int)((s + 2 * ta + tb) % 3);
    float alpha = variant == 0 ? 1.0f : variant == 1 ? -0.75f : 2.5f;
    float beta = variant == 0 ? 0.0f : variant == 1 ? 1.0f : 0.5f;
    for (size_t i = 0; i < nc + guard; i++)
        c0[i] = beta == 0.0f || i >= nc ? (i % 2 ? NAN : INFINITY) : (float)vt_rng_normal(r);
    memcpy(c, c0, (nc + guard) * 4);
    memcpy(f, c0, nc * 4);
    vt_gemm_bf16(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    vt_sgemm(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, f, ldc);
    double g = (k + 8) * ldexp(1, -24), gamma = g / (1 - g);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double s64 = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                double t = ar[(size_t)i * k + p] * br[(size_t)p * n + j];
                s64 += t;
                mag += fabs(t);
            }
            double cold = beta == 0.0f ? 0 : c0[(size_t)i * ldc + j];
            double want = alpha * s64 + beta * cold;
            /* the fp32 accumulation, alpha, beta and the final store */
            double bound = fabs(alpha) * (gamma + ldexp(1, -23)) * mag +
                           fabs(beta * cold) * ldexp(1, -23) + ldexp(1, -120);
            double got = c[(size_t)i * ldc + j], err = fabs(got - want);
            ck_assert_msg(isfinite(got) && err <= bound,
                          "%s %dx%dx%d ta=%d tb=%d alpha=%g beta=%g threads=%d "
                          "C(%d,%d) = %.9g, want %.9g (err %.3g > bound %.3g)",
                          kdesc[kern], m, n, k, ta, tb, alpha, beta, threads, i, j, got, want, err,
                          bound);
            double units = err / (ldexp(1, -24) * fabs(alpha) * mag);
            if (mag > 0 && k >= 64 && units > w->units) w->units = units;
            if (bound > 0 && err / bound > w->acc) w->acc = err / bound;
            /* against fp32 operands: each bf16 operand within 2^-8 relative */
            double fb = fabs(alpha) * (2 * ldexp(1, -8) + 2 * gamma) * mag * 1.02 +
                        fabs(beta * cold) * ldexp(1, -22) + ldexp(1, -100);
            double ef = fabs(got - f[(size_t)i * ldc + j]);
            ck_assert_msg(ef <= fb,
                          "%s %dx%dx%d ta=%d tb=%d vs fp32: C(%d,%d) %.9g vs %.9g (%.3g > %.3g)",
                          kdesc[kern], m, n, k, ta, tb, i, j, got, f[(size_t)i * ldc + j], ef, fb);
            if (fb > 0 && ef / fb > w->fp32) w->fp32 = ef / fb;
        }
        /* padding columns of C are never written */
        for (int j = n; j < ldc; j++)
            ck_assert_msg(!memcmp(&c[(size_t)i * ldc + j], &c0[(size_t)i * ldc + j], 4),
                          "%s %dx%dx%d ta=%d tb=%d: wrote outside C (row %d col %d)", kdesc[kern],
                          m, n, k, ta, tb, i, j);
    }
    ck_assert_msg(!memcmp(c + nc, c0 + nc, guard * 4), "%s %dx%dx%d ta=%d tb=%d: wrote past C",
                  kdesc[kern], m, n, k, ta, tb);
    free(a);
    free(b);
    free(c);
    free(c0);
    free(f);
    free(ar);
    free(br);
}

static void check(int kern, int threads)
{
    if (!use(kern)) return;
    vt_pool *pool;
    ck_assert_int_eq(vt_pool_create(&pool, threads), VT_OK);
    vt_rng r;
    vt_rng_seed(&r, 11 + threads);
    worst w = {0, 0, 0};
    int cases = 0;
    for (size_t s = 0; s < NSHAPES; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++, cases++) check_one(pool, kern, threads, s, ta, tb, &r, &w);
    fprintf(stderr,
            "%s, %d threads: %d products; worst error / bound: %.3g (fp64 on bf16 operands), "
            "%.3g (fp32 vt_sgemm); worst error at k >= 64: %.3g x 2^-24 |alpha| sum|a||b|\n",
            vt_gemm_bf16_kernel(), threads, cases, w.acc, w.fp32, w.units);
    vt_pool_destroy(pool);
}

START_TEST(test_portable_1) { check(K_PORTABLE, 1); }
END_TEST
START_TEST(test_portable_2) { check(K_PORTABLE, 2); }
END_TEST
START_TEST(test_avx512_1) { check(K_AVX512, 1); }
END_TEST
START_TEST(test_avx512_2) { check(K_AVX512, 2); }
END_TEST
START_TEST(test_amx_1) { check(K_AMX, 1); }
END_TEST
START_TEST(test_amx_2) { check(K_AMX, 2); }
END_TEST

/* Two threads of the caller's each running products at once (each its own pool of 2, or none):
 * the same bits as the same products run alone (a kernel's sums do not depend on the thread
 * that runs them, and each thread's tile configuration is its own). */
typedef struct conc {
    const float *a, *b;
    float *c;
    int m, n, k, reps, threads;
} conc;

static void *conc_run(void *v)
{
    conc *J = v;
    vt_pool *pool = NULL;
    if (J->threads > 1 && vt_pool_create(&pool, J->threads)) return NULL;
    for (int i = 0; i < J->reps; i++)
        vt_gemm_bf16(pool, 0, 1, J->m, J->n, J->k, 1.0f, J->a, J->k, J->b, J->k, 0.0f, J->c, J->n);
    vt_pool_destroy(pool);
    return J;
}

static void check_concurrent(int kern)
{
    if (!use(kern)) return;
    enum { M = 96, N = 130, K = 300 };
    vt_rng r;
    vt_rng_seed(&r, 9);
    float *a[2], *b[2], *c[2], *alone[2];
    for (int t = 0; t < 2; t++) {
        a[t] = malloc((size_t)M * K * 4);
        b[t] = malloc((size_t)N * K * 4);
        c[t] = malloc((size_t)M * N * 4);
        alone[t] = malloc((size_t)M * N * 4);
        ck_assert(a[t] && b[t] && c[t] && alone[t]);
        for (int i = 0; i < M * K; i++) a[t][i] = (float)vt_rng_normal(&r);
        for (int i = 0; i < N * K; i++) b[t][i] = (float)vt_rng_normal(&r);
        vt_gemm_bf16(NULL, 0, 1, M, N, K, 1.0f, a[t], K, b[t], K, 0.0f, alone[t], N);
    }
    for (int threads = 1; threads <= 2; threads++) {
        conc J[2];
        pthread_t th[2];
        for (int t = 0; t < 2; t++) {
            J[t] = (conc){a[t], b[t], c[t], M, N, K, 20, threads};
            ck_assert_int_eq(pthread_create(&th[t], NULL, conc_run, &J[t]), 0);
        }
        for (int t = 0; t < 2; t++) {
            void *ret;
            pthread_join(th[t], &ret);
            ck_assert_ptr_nonnull(ret);
            /* the product with 2 pool threads splits C: the same sums, per element */
            ck_assert_msg(!memcmp(c[t], alone[t], (size_t)M * N * 4),
                          "%s: thread %d's product (pools of %d) differs from its product alone",
                          kdesc[kern], t, threads);
        }
    }
    fprintf(stderr, "%s: two threads at once, the same bits as alone\n", kdesc[kern]);
    for (int t = 0; t < 2; t++) {
        free(a[t]);
        free(b[t]);
        free(c[t]);
        free(alone[t]);
    }
}

START_TEST(test_concurrent)
{
    for (int kern = 0; kern < NKERN; kern++) check_concurrent(kern);
}
END_TEST

/* Special operands through each kernel, 1 x 1 x 1 products: the rounding is vt_bf16_round's
 * even for a denormal that rounds up to 2^-126 (the instructions would flush it); a bf16
 * denormal is flushed by the kernels (documented), kept by the reference; NaN and infinities
 * propagate. */
START_TEST(test_special)
{
    for (int kern = 0; kern < NKERN; kern++) {
        if (!use(kern)) continue;
        const struct {
            uint32_t a;
            float b;
            double want, alt; /* alt: also accepted from the kernels (flushed) */
        } cases[] = {
            {0x007fffff, 0x1p100f, 0x1p-26, 0x1p-26}, /* rounds to the smallest normal */
            {0x807f8000, 0x1p100f, -0x1p-26, -0x1p-26},
            {0x007f7fff, 0x1p100f, 0x1.fcp-27, 0},    /* rounds to a bf16 denormal */
            {0x3f800000, 0x1p-120f, 0x1p-120, 0x1p-120},
            {0x7fc00000, 1.0f, NAN, NAN},
            {0x7f800001, 1.0f, NAN, NAN},             /* signalling NaN: stays a NaN */
            {0x7f800000, 2.0f, INFINITY, INFINITY},
            {0xff800000, 2.0f, -INFINITY, -INFINITY},
            {0x7f7fffff, 1.0f, INFINITY, INFINITY},   /* the largest float rounds to inf */
            {0x7f800000, 0.0f, NAN, NAN},             /* inf x 0 */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            float a = fbits(cases[i].a), b = cases[i].b, c = 7.0f;
            vt_gemm_bf16(NULL, 0, 0, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
            double w = cases[i].want, alt = kern == K_PORTABLE ? w : cases[i].alt;
            int ok = isnan(w) ? isnan(c) : (c == w || c == alt);
            ck_assert_msg(ok, "%s: bits 0x%08x x %g = %a, want %a", kdesc[kern],
                          (unsigned)cases[i].a, (double)b, (double)c, w);
        }
        /* and inside a longer product, the same element among ordinary ones */
        float a[40], b[40], c = 0;
        for (int p = 0; p < 40; p++) a[p] = b[p] = 0;
        a[37] = fbits(0x007fffff);
        b[37] = 0x1p100f;
        vt_gemm_bf16(NULL, 0, 1, 1, 1, 40, 1.0f, a, 40, b, 40, 0.0f, &c, 1);
        ck_assert_msg(c == 0x1p-26f, "%s: k = 40: %a", kdesc[kern], (double)c);
    }
}
END_TEST

/* VT_CPU_BF16 (read at the first product; Check runs each test in a fresh child): portable runs
 * the reference (the same bits), avx512 and amx their kernel where the machine has it, else the
 * best it has; an unknown value is ignored. */
static const char *best(void)
{
    return vt_cpu_has_amx()    ? "AMX 32x32"
           : vt_cpu_has_bf16() ? "AVX512_BF16 14x32"
                               : "portable (no AVX512_BF16)";
}

START_TEST(test_env_portable)
{
    setenv("VT_CPU_BF16", "portable", 1);
    ck_assert_ptr_nonnull(strstr(vt_gemm_bf16_kernel(), "portable"));
    vt_rng r;
    vt_rng_seed(&r, 5);
    int m = 37, n = 45, k = 77;
    float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4),
          *c1 = malloc((size_t)m * n * 4), *c2 = malloc((size_t)m * n * 4);
    for (int i = 0; i < m * k; i++) a[i] = (float)vt_rng_normal(&r);
    for (int i = 0; i < k * n; i++) b[i] = (float)vt_rng_normal(&r);
    vt_gemm_bf16(NULL, 0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c1, n);
    vt_gemm_bf16_portable(NULL, 0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c2, n);
    ck_assert(!memcmp(c1, c2, (size_t)m * n * 4));
    free(a);
    free(b);
    free(c1);
    free(c2);
}
END_TEST

START_TEST(test_env_avx512)
{
    setenv("VT_CPU_BF16", "avx512", 1);
    ck_assert_str_eq(vt_gemm_bf16_kernel(), vt_cpu_has_bf16() ? "AVX512_BF16 14x32" : best());
}
END_TEST

START_TEST(test_env_amx)
{
    setenv("VT_CPU_BF16", "amx", 1);
    ck_assert_str_eq(vt_gemm_bf16_kernel(), best());
}
END_TEST

START_TEST(test_env_default)
{
    setenv("VT_CPU_BF16", "fastest-please", 1);
    const char *want = best();
    ck_assert_ptr_nonnull(strstr(vt_gemm_bf16_kernel(), want));
    ck_assert_int_eq(vt_gemm_bf16_force("no-such-kernel"), 0);
    ck_assert_ptr_nonnull(strstr(vt_gemm_bf16_kernel(), want)); /* unchanged */
    fprintf(stderr, "kernel here: %s (AVX512_BF16 %s, AMX %s)\n", vt_gemm_bf16_kernel(),
            vt_cpu_has_bf16() ? "yes" : "no", vt_cpu_has_amx() ? "yes" : "no");
}
END_TEST

/* Whether a kernel is reported slower than fp32 (the trainer's warning, vt_cpu_kernels): the
 * portable one always, AMX never, AVX512_BF16 on Intel processors only (the measured rule). */
static int cpu_vendor_is(const char *want)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = 0;
    return strcmp(v, want) == 0;
#else
    (void)want;
    return 0;
#endif
}

START_TEST(test_slower_rule)
{
    const char *kernels = vt_cpu_kernels();
    ck_assert_ptr_nonnull(strstr(kernels, "; precision=bf16: "));
    ck_assert_ptr_nonnull(strstr(kernels, vt_backend_cpu_winograd_default()
                                              ? "; 3x3 stride-1 convolutions: Winograd"
                                              : "; 3x3 stride-1 convolutions: im2col"));
    vt_device cpu;
    ck_assert_int_eq(vt_device_parse("cpu", &cpu), VT_OK);
    char note[256];
    ck_assert_int_eq(vt_device_precision_note(&cpu, VT_DEVICE_PRECISION_FP32, note, sizeof note), 0);
    ck_assert_str_eq(note, "");
    if (!vt_cpu_has_bf16()) {
        ck_assert_ptr_nonnull(strstr(kernels, "precision=bf16: none"));
        ck_assert_int_eq(vt_device_precision_note(&cpu, VT_DEVICE_PRECISION_BF16, note, sizeof note), 0);
        ck_assert_str_eq(note, "");
    }
    for (int kern = 0; kern < NKERN; kern++) {
        if (!vt_gemm_bf16_force(kname[kern])) continue;
        int want = kern == 0 ? 1 : kern == 2 ? 0 : cpu_vendor_is("GenuineIntel");
        ck_assert_int_eq(vt_gemm_bf16_slower_than_fp32(), want);
        if (!vt_cpu_has_bf16()) continue;
        int slower = vt_device_precision_note(&cpu, VT_DEVICE_PRECISION_BF16, note, sizeof note);
        ck_assert_int_eq(slower, want);
        ck_assert_ptr_nonnull(strstr(note, "bf16 products: "));
        ck_assert_ptr_nonnull(strstr(note, vt_gemm_bf16_kernel()));
        ck_assert_int_eq(strstr(note, "precision=fp32 is faster") != NULL, want);
    }
}
END_TEST

/* Degenerate products: k = 0 and alpha = 0 scale C by beta without reading A or B (NaN there);
 * m or n = 0 write nothing. */
START_TEST(test_degenerate)
{
    float a[4] = {NAN, NAN, NAN, NAN}, b[4] = {NAN, NAN, NAN, NAN};
    for (int kern = 0; kern < NKERN; kern++) {
        if (!use(kern)) continue;
        float c[4] = {1, 2, 3, 4};
        vt_gemm_bf16(NULL, 0, 0, 2, 2, 0, 1.0f, a, 1, b, 2, 0.5f, c, 2);
        ck_assert(c[0] == 0.5f && c[3] == 2.0f);
        vt_gemm_bf16(NULL, 0, 0, 2, 2, 2, 0.0f, a, 2, b, 2, 2.0f, c, 2);
        ck_assert(c[0] == 1.0f && c[3] == 4.0f);
        float g[4] = {NAN, NAN, NAN, NAN};
        vt_gemm_bf16(NULL, 0, 0, 2, 2, 0, 1.0f, a, 1, b, 2, 0.0f, g, 2);
        ck_assert(g[0] == 0.0f && g[3] == 0.0f);
        vt_gemm_bf16(NULL, 0, 0, 0, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
        vt_gemm_bf16(NULL, 0, 0, 2, 0, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
        ck_assert(c[0] == 1.0f && c[3] == 4.0f);
    }
    /* and the reference called directly */
    float c[4] = {1, 2, 3, 4};
    vt_gemm_bf16_portable(NULL, 0, 0, 2, 2, 2, 0.0f, a, 2, b, 2, 2.0f, c, 2);
    ck_assert(c[0] == 2.0f && c[3] == 8.0f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_bf16");
    TCase *tc = tcase_create("gemm_bf16");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round);
    tcase_add_test(tc, test_portable_1);
    tcase_add_test(tc, test_portable_2);
    tcase_add_test(tc, test_avx512_1);
    tcase_add_test(tc, test_avx512_2);
    tcase_add_test(tc, test_amx_1);
    tcase_add_test(tc, test_amx_2);
    tcase_add_test(tc, test_concurrent);
    tcase_add_test(tc, test_special);
    tcase_add_test(tc, test_env_portable);
    tcase_add_test(tc, test_env_avx512);
    tcase_add_test(tc, test_env_amx);
    tcase_add_test(tc, test_env_default);
    tcase_add_test(tc, test_degenerate);
    tcase_add_test(tc, test_slower_rule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = vt_test_run(suite());
    /* the portable reference always runs: a skip would need a machine with no bf16 path */
    if (rc == 0 && !vt_gemm_bf16_force("portable") && !vt_cpu_has_bf16() && !vt_cpu_has_amx()) {
        fprintf(stderr, "no bf16 GEMM path runs here: skipped\n");
        return 77;
    }
    return rc;
}
