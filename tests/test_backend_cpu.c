/* The CPU backend's GEMM paths (CBLAS split over the pool, and the portable kernel) against a
 * plain double-precision triple loop, for every transpose combination and awkward shapes; and
 * the thread pool split of GEMM against the single-threaded result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gemm.h"
#include "core/threads.h"
#include "testutil.h"

static void ref_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) *
                     (tb ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = (float)(alpha * s + (beta == 0.0f ? 0.0 : beta * c[i * ldc + j]));
        }
}

static const int shapes[][3] = {{1, 1, 1},   {3, 5, 7},     {17, 33, 9},  {64, 50, 288},
                                {128, 3, 576}, {33, 1025, 5}, {300, 40, 70}, {2, 3000, 16},
                                {96, 700, 64}, {700, 40, 100} /* split over the pool */};

static void check(int use_portable, int threads)
{
    vt_pool *pool;
    ck_assert_int_eq(vt_pool_create(&pool, threads), VT_OK);
    vt_rng r;
    vt_rng_seed(&r, 9);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
                size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb;
                float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc((size_t)m * ldc * 4),
                      *want = malloc((size_t)m * ldc * 4);
                for (size_t i = 0; i < na; i++) a[i] = (float)vt_rng_normal(&r);
                for (size_t i = 0; i < nb; i++) b[i] = (float)vt_rng_normal(&r);
                for (size_t i = 0; i < (size_t)m * ldc; i++) c[i] = want[i] = (float)vt_rng_normal(&r);
                float beta = (s % 2) ? 0.5f : 0.0f;
                ref_gemm(ta, tb, m, n, k, 1.5f, a, lda, b, ldb, beta, want, ldc);
                if (use_portable)
                    vt_sgemm_portable(pool, ta, tb, m, n, k, 1.5f, a, lda, b, ldb, beta, c, ldc);
                else
                    vt_sgemm(pool, ta, tb, m, n, k, 1.5f, a, lda, b, ldb, beta, c, ldc);
                double err = 0, ref = 0;
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++) {
                        double d = c[i * ldc + j] - want[i * ldc + j];
                        err += d * d;
                        ref += (double)want[i * ldc + j] * want[i * ldc + j];
                    }
                ck_assert_msg(sqrt(err / (ref + 1e-30)) < 1e-5,
                              "%s gemm %dx%dx%d ta=%d tb=%d threads=%d: relative error %.3g",
                              use_portable ? "portable" : "blas", m, n, k, ta, tb, threads,
                              sqrt(err / (ref + 1e-30)));
                /* padding columns of C are never written */
                for (int i = 0; i < m; i++)
                    for (int j = n; j < ldc; j++)
                        ck_assert_msg(c[i * ldc + j] == want[i * ldc + j],
                                      "gemm wrote outside C (row %d col %d)", i, j);
                free(a);
                free(b);
                free(c);
                free(want);
            }
    vt_pool_destroy(pool);
}

START_TEST(test_gemm_blas_1) { check(0, 1); }
END_TEST
START_TEST(test_gemm_blas_2) { check(0, 2); }
END_TEST
START_TEST(test_gemm_blas_3) { check(0, 3); }
END_TEST
START_TEST(test_gemm_portable_1) { check(1, 1); }
END_TEST
START_TEST(test_gemm_portable_2) { check(1, 2); }
END_TEST

/* The backend reports which GEMM it uses; the build found a BLAS on this machine (Debian with
 * libopenblas-serial-dev) -- tolerated absent, but then the portable path is what runs. */
START_TEST(test_gemm_kind)
{
    int blas = vt_sgemm_uses_blas();
    ck_assert(blas == 0 || blas == 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("backend_cpu");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_gemm_blas_1);
    tcase_add_test(tc, test_gemm_blas_2);
    tcase_add_test(tc, test_gemm_blas_3);
    tcase_add_test(tc, test_gemm_portable_1);
    tcase_add_test(tc, test_gemm_portable_2);
    tcase_add_test(tc, test_gemm_kind);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
