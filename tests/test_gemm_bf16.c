/* vt_gemm_bf16 (lib/backend/gemm_bf16.c): the bf16 rounding on edge values; the AVX512_BF16
 * kernel and the portable reference against an fp64 product of the bf16-rounded operands,
 * within the bound of fp32 accumulation (|err| <= gamma_k sum |a||b| with gamma_k = k 2^-24 /
 * (1 - k 2^-24), plus 2^-120 for denormals the kernel flushes), and against fp32 vt_sgemm within
 * the bound of bf16 operands (|err| <= (2 2^-8 + 2 gamma_k) 1.02 sum |a||b|: each operand off by
 * at most 2^-8 relative, the unit roundoff of bf16's 8-bit significand).  Shapes from 1 to a few hundred, odd k, all four
 * transposes, alpha/beta, beta = 0 over NaN garbage, padded leading dimensions, 1 and 2 threads.
 * Exits 77 (skipped) after the other checks pass where the CPU has no AVX512_BF16. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gemm.h"
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

/* 0: vt_gemm_bf16 as dispatched (the kernel where there is one), 1: the portable reference. */
static double worst_acc[2], worst_fp32[2], worst_units[2];

static const int shapes[][3] = {
    {1, 1, 1},     {1, 1, 2},     {3, 5, 7},      {14, 32, 2},    {15, 33, 3},   {13, 31, 1},
    {17, 33, 9},   {28, 64, 64},  {29, 65, 65},   {64, 50, 288},  {128, 3, 577}, {33, 200, 5},
    {300, 40, 70}, {2, 300, 16},  {96, 171, 63},  {170, 40, 101}, {40, 97, 1030} /* k blocks */,
    {1, 250, 33},  {250, 1, 33},  {100, 100, 513}};

static void check(int portable, int threads)
{
    vt_pool *pool;
    ck_assert_int_eq(vt_pool_create(&pool, threads), VT_OK);
    vt_rng r;
    vt_rng_seed(&r, 11 + threads);
    int cases = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                int lda = (ta ? m : k) + (int)(s % 3), ldb = (tb ? k : n) + (int)(s % 4),
                    ldc = n + 1 + (int)(s % 2);
                size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb,
                       nc = (size_t)m * ldc;
                float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4),
                      *c0 = malloc(nc * 4), *f = malloc(nc * 4);
                ck_assert(a && b && c && c0 && f);
                for (size_t i = 0; i < na; i++) a[i] = (float)vt_rng_normal(&r);
                for (size_t i = 0; i < nb; i++) b[i] = (float)(vt_rng_normal(&r) * 3);
                int variant = (int)((s + 2 * ta + tb) % 3);
                float alpha = variant == 0 ? 1.0f : variant == 1 ? -0.75f : 2.5f;
                float beta = variant == 0 ? 0.0f : variant == 1 ? 1.0f : 0.5f;
                for (size_t i = 0; i < nc; i++)
                    c0[i] = beta == 0.0f ? (i % 2 ? NAN : INFINITY) : (float)vt_rng_normal(&r);
                memcpy(c, c0, nc * 4);
                memcpy(f, c0, nc * 4);
                if (portable)
                    vt_gemm_bf16_portable(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                                          ldc);
                else
                    vt_gemm_bf16(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
                vt_sgemm(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, f, ldc);
                double g = (k + 8) * ldexp(1, -24), gamma = g / (1 - g);
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        double s64 = 0, mag = 0;
                        for (int p = 0; p < k; p++) {
                            float av = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
                            float bv = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                            double ar = vt_bf16_to_float(vt_bf16_round(av)),
                                   br = vt_bf16_to_float(vt_bf16_round(bv));
                            s64 += ar * br;
                            mag += fabs(ar * br);
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
                                      portable ? "portable" : vt_gemm_bf16_kernel(), m, n, k, ta,
                                      tb, alpha, beta, threads, i, j, got, want, err, bound);
                        if (mag > 0 && k >= 64 && err / (ldexp(1, -24) * fabs(alpha) * mag) >
                                                       worst_units[portable])
                            worst_units[portable] = err / (ldexp(1, -24) * fabs(alpha) * mag);
                        if (bound > 0 && err / bound > worst_acc[portable])
                            worst_acc[portable] = err / bound;
                        /* against fp32 operands: each bf16 operand within 2^-8 relative */
                        double fb = fabs(alpha) * (2 * ldexp(1, -8) + 2 * gamma) * mag * 1.02 +
                                    fabs(beta * cold) * ldexp(1, -22) + ldexp(1, -100);
                        double ef = fabs(got - f[(size_t)i * ldc + j]);
                        ck_assert_msg(ef <= fb,
                                      "%s %dx%dx%d ta=%d tb=%d vs fp32: C(%d,%d) %.9g vs %.9g "
                                      "(%.3g > %.3g)",
                                      portable ? "portable" : vt_gemm_bf16_kernel(), m, n, k, ta,
                                      tb, i, j, got, f[(size_t)i * ldc + j], ef, fb);
                        if (fb > 0 && ef / fb > worst_fp32[portable])
                            worst_fp32[portable] = ef / fb;
                    }
                    /* padding columns of C are never written */
                    for (int j = n; j < ldc; j++)
                        ck_assert_msg(!memcmp(&c[(size_t)i * ldc + j], &c0[(size_t)i * ldc + j], 4),
                                      "wrote outside C (row %d col %d)", i, j);
                }
                cases++;
                free(a);
                free(b);
                free(c);
                free(c0);
                free(f);
            }
    fprintf(stderr,
            "%s, %d threads: %d products; worst error / bound: %.3g (fp64 on bf16 operands), "
            "%.3g (fp32 vt_sgemm); worst error at k >= 64: %.3g x 2^-24 |alpha| sum|a||b|\n",
            portable ? "portable" : vt_gemm_bf16_kernel(), threads, cases, worst_acc[portable],
            worst_fp32[portable], worst_units[portable]);
    vt_pool_destroy(pool);
}

START_TEST(test_kernel_1)
{
    if (!vt_cpu_has_bf16()) {
        fprintf(stderr, "no AVX512_BF16 here: kernel not tested\n");
        return;
    }
    ck_assert_str_eq(vt_gemm_bf16_kernel(), "AVX512_BF16 14x32");
    check(0, 1);
}
END_TEST
START_TEST(test_kernel_2)
{
    if (!vt_cpu_has_bf16()) return;
    check(0, 2);
}
END_TEST
START_TEST(test_portable_1) { check(1, 1); }
END_TEST
START_TEST(test_portable_2) { check(1, 2); }
END_TEST

/* The dispatch under VT_CPU_BF16=portable runs the reference: the same bits.  (Check runs each
 * test in a fresh child, so the variable is read at this test's first product.) */
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

/* Degenerate products: k = 0 and alpha = 0 scale C by beta without reading A or B (NaN there);
 * m or n = 0 write nothing. */
START_TEST(test_degenerate)
{
    float a[4] = {NAN, NAN, NAN, NAN}, b[4] = {NAN, NAN, NAN, NAN};
    for (int portable = 0; portable < 2; portable++) {
        void (*fn)(vt_pool *, int, int, int, int, int, float, const float *, int, const float *,
                   int, float, float *, int) = portable ? vt_gemm_bf16_portable : vt_gemm_bf16;
        float c[4] = {1, 2, 3, 4};
        fn(NULL, 0, 0, 2, 2, 0, 1.0f, a, 1, b, 2, 0.5f, c, 2);
        ck_assert(c[0] == 0.5f && c[3] == 2.0f);
        fn(NULL, 0, 0, 2, 2, 2, 0.0f, a, 2, b, 2, 2.0f, c, 2);
        ck_assert(c[0] == 1.0f && c[3] == 4.0f);
        float g[4] = {NAN, NAN, NAN, NAN};
        fn(NULL, 0, 0, 2, 2, 0, 1.0f, a, 1, b, 2, 0.0f, g, 2);
        ck_assert(g[0] == 0.0f && g[3] == 0.0f);
        fn(NULL, 0, 0, 0, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
        fn(NULL, 0, 0, 2, 0, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
        ck_assert(c[0] == 1.0f && c[3] == 4.0f);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_bf16");
    TCase *tc = tcase_create("gemm_bf16");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round);
    tcase_add_test(tc, test_kernel_1);
    tcase_add_test(tc, test_kernel_2);
    tcase_add_test(tc, test_portable_1);
    tcase_add_test(tc, test_portable_2);
    tcase_add_test(tc, test_env_portable);
    tcase_add_test(tc, test_degenerate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = vt_test_run(suite());
    if (rc == 0 && !vt_cpu_has_bf16()) {
        fprintf(stderr, "AVX512_BF16 kernel not tested (no such CPU): skipped\n");
        return 77;
    }
    return rc;
}
