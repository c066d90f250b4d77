/* The CPU backend's GEMM paths (CBLAS split over the pool, and the portable kernel) against a
 * plain double-precision triple loop, for every transpose combination and awkward shapes; and
 * the thread pool split of GEMM against the single-threaded result. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu_impl.h"
#include "backend/device.h"
#include "backend/gemm.h"
#include "core/threads.h"
#include "testutil.h"
#include "vt_config.h"

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
                                {96, 700, 64}, {700, 40, 100} /* split over the pool */,
                                {40, 500, 1000} /* k over several blocks */,
                                {3100, 33, 40} /* rows past a column-preferring kernel's NC */,
                                /* every last group of 1-7 rows in a packed panel (6 rows of A,
                                 * 16 of B, 8 transposed at a time) */
                                {41, 55, 37}, {37, 45, 40}, {38, 35, 33}, {33, 51, 34}};

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

/* VT_CPU_GEMM picks the kernels (read once per process: Check runs each loop iteration in a
 * fresh child), each runnable one computes the same products, and one the processor cannot
 * run is refused in the description rather than executed. */
static const char *const gemm_paths[] = {"portable", "generic", "sandybridge", "haswell",
                                         "zen3", "skx", "nonsense"};

static int cpu_runs(const char *path)
{
#if defined(__x86_64__)
    if (!strcmp(path, "portable") || !strcmp(path, "generic")) return 1;
    if (!strcmp(path, "sandybridge")) return __builtin_cpu_supports("avx");
    if (!strcmp(path, "haswell") || !strcmp(path, "zen3"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(path, "skx"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return 0;
#else
    return !strcmp(path, "portable");
#endif
}

START_TEST(test_gemm_paths)
{
    const char *path = gemm_paths[_i];
    setenv("VT_CPU_GEMM", path, 1);
    const char *desc = vt_sgemm_kernels();
    if (!VT_HAVE_BLIS) {
        ck_assert_msg(!vt_sgemm_uses_blas() || strstr(desc, "CBLAS"), "%s", desc);
        return;
    }
    char want[32];
    snprintf(want, sizeof want, !strcmp(path, "portable") ? "%s" : " %s ", path);
    if (cpu_runs(path)) {
        ck_assert_msg(strstr(desc, want) && !strstr(desc, "ignored"), "VT_CPU_GEMM=%s: %s", path,
                      desc);
        ck_assert_int_eq(vt_sgemm_uses_blas(), strcmp(path, "portable") != 0);
    } else
        ck_assert_msg(strstr(desc, "not runnable here, ignored"), "VT_CPU_GEMM=%s: %s", path, desc);
    check(0, 2);
}
END_TEST

/* The products with BLIS's own packing (VT_CPU_GEMM_PACK=blis) agree too, and the
 * description says which packing runs (under the library's own choice of kernels, whatever
 * VT_CPU_GEMM the whole suite runs under). */
START_TEST(test_gemm_blis_packing)
{
    unsetenv("VT_CPU_GEMM");
    setenv("VT_CPU_GEMM_PACK", "blis", 1);
    const char *desc = vt_sgemm_kernels();
    if (VT_HAVE_BLIS) ck_assert_msg(strstr(desc, "BLIS packing"), "%s", desc);
    check(0, 2);
    unsetenv("VT_CPU_GEMM_PACK");
}
END_TEST

/* Left to itself, the library runs the widest kernels the processor has. */
START_TEST(test_gemm_auto)
{
    unsetenv("VT_CPU_GEMM");
    const char *desc = vt_sgemm_kernels();
    if (VT_HAVE_BLIS && cpu_runs("skx"))
        ck_assert_msg(strstr(desc, " skx "), "an AVX-512 CPU runs %s", desc);
    if (VT_HAVE_BLIS) ck_assert_msg(strncmp(desc, "BLIS ", 5) == 0, "%s", desc);
}
END_TEST

/* The backend reports which GEMM it uses; the build found a BLAS on this machine (Debian with
 * libopenblas-serial-dev) -- tolerated absent, but then the portable path is what runs. */
/* n floats ending VT_ALIGNED_SLACK bytes before an unreadable page (*map, *len: to unmap). */
static float *before_guard(size_t n, void **map, size_t *len)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float) + VT_ALIGNED_SLACK;
    size_t pages = (bytes + pg - 1) / pg + 1;
    char *m = mmap(NULL, pages * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(mprotect(m + (pages - 1) * pg, pg, PROT_NONE), 0);
    *map = m;
    *len = pages * pg;
    return (float *)(m + (pages - 1) * pg - bytes);
}

/* The products read at most VT_ALIGNED_SLACK bytes past an operand's last element (BLIS 0.9's
 * small-product kernels: 4 floats of C for a 2-column edge, a row of a transposed B; the
 * backend's buffers carry that slack), and the backend's allocations have it: operands ending
 * that far before an unreadable page, rows up to 1,024 floats, every transpose, beta 0 and 1
 * (a crash fails the test; without the slack 19% of these shapes fault). */
START_TEST(test_gemm_overread)
{
    static const int ms[] = {1, 2, 3, 5, 6, 7, 17, 40}, ns[] = {1, 2, 3, 5, 15, 17, 33, 147},
                     ks[] = {1, 9, 50, 1024};
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (int t = 0; t < 4; t++) {
                    int m = ms[mi], n = ns[ni], k = ks[ki], ta = t & 1, tb = t >> 1;
                    void *ma, *mb, *mc;
                    size_t la, lb, lc;
                    float *a = before_guard((size_t)m * k, &ma, &la),
                          *b = before_guard((size_t)k * n, &mb, &lb),
                          *c = before_guard((size_t)m * n, &mc, &lc);
                    for (int i = 0; i < m * k; i++) a[i] = 1.0f;
                    for (int i = 0; i < k * n; i++) b[i] = 1.0f;
                    for (int i = 0; i < m * n; i++) c[i] = 1.0f;
                    vt_sgemm(NULL, ta, tb, m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n,
                             (float)(t & 1), c, n);
                    ck_assert_msg(c[m * n - 1] == (float)(k + (t & 1)), "%dx%dx%d: %g", m, n, k,
                                  (double)c[m * n - 1]);
                    munmap(ma, la), munmap(mb, lb), munmap(mc, lc);
                }
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
    for (size_t bytes = 1; bytes < 20000; bytes = bytes * 3 + 7) {
        unsigned char *p = be->ops->alloc(be, bytes);
        ck_assert_ptr_nonnull(p);
        size_t end = ((bytes + 63) & ~(size_t)63) + VT_ALIGNED_SLACK;
        memset(p, 0xab, end); /* all of it ours (valgrind and ASan would say otherwise) */
        be->ops->free(be, p);
    }
    vt_backend_destroy(be);
}
END_TEST

/* An operand packed once (vt_sgemm_pack_a) for several products: vt_sgemm_packed_a gives
 * vt_sgemm's result bit for bit (the same micro-kernel calls on the same panels), over
 * transposes, beta 0 and 1, sizes across the kernel's blocks along m and k (BLIS's mc and kc:
 * 72-144 and 256 for its x86 sub-configurations), and leaves the packed operand reusable;
 * where products take no packed operand (a dimension under 32, the portable kernel) it says
 * so (0 floats, and 0 from the product, nothing written). */
START_TEST(test_gemm_packed_a)
{
    static const int shapes[][3] = {{96, 100, 64}, {64, 37, 300}, {150, 64, 96}, {33, 290, 520}};
    vt_rng r;
    vt_rng_seed(&r, 5);
    /* a dimension under 32: BLIS's small-product kernels, no packed operand */
    ck_assert_uint_eq(vt_sgemm_pack_a_floats(16, 64), 0);
    ck_assert_uint_eq(vt_sgemm_pack_a_floats(64, 27), 0);
    float one = 1.0f, out = 0.0f;
    ck_assert_int_eq(vt_sgemm_packed_a(64, 31, 64, 1.0f, &one, 0, &one, 31, 0.0f, &out, 31), 0);
    ck_assert(out == 0.0f);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (int t = 0; t < 4; t++) {
            int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], ta = t & 1, tb = t >> 1;
            size_t pf = vt_sgemm_pack_a_floats(m, k);
            if (!pf) { /* the portable kernel, another BLAS */
                ck_assert_int_eq(vt_sgemm_packed_a(m, n, k, 1.0f, NULL, tb, NULL, 1, 0.0f, NULL,
                                                   n), 0);
                continue;
            }
            ck_assert_uint_ge(pf, (size_t)m * k);
            float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n),
                  *c0 = malloc(sizeof(float) * m * n), *c1 = malloc(sizeof(float) * m * n),
                  *ap = malloc(sizeof(float) * pf);
            for (int i = 0; i < m * k; i++) a[i] = (float)vt_rng_normal(&r);
            for (int i = 0; i < k * n; i++) b[i] = (float)vt_rng_normal(&r);
            vt_sgemm_pack_a(ta, m, k, a, ta ? m : k, ap);
            for (int beta = 0; beta < 2; beta++) {
                for (int i = 0; i < m * n; i++) c0[i] = c1[i] = (float)i * 1e-3f;
                vt_sgemm(NULL, ta, tb, m, n, k, 0.75f, a, ta ? m : k, b, tb ? k : n,
                         (float)beta, c0, n);
                ck_assert_int_eq(vt_sgemm_packed_a(m, n, k, 0.75f, ap, tb, b, tb ? k : n,
                                                   (float)beta, c1, n), 1);
                ck_assert_msg(memcmp(c0, c1, sizeof(float) * m * n) == 0,
                              "%dx%dx%d ta %d tb %d beta %d: the packed product differs", m, n,
                              k, ta, tb, beta);
            }
            free(a), free(b), free(c0), free(c1), free(ap);
        }
}
END_TEST

START_TEST(test_gemm_kind)
{
    int blas = vt_sgemm_uses_blas();
    ck_assert(blas == 0 || blas == 1);
}
END_TEST

/* The tiled convolution (lib/backend/cpu_conv.c) against a direct double-precision convolution,
 * forward and backward, over thread counts, tile sizes (whole batch, several images per tile,
 * one image, a few output rows, one row), strides, padding and groups; and bitwise the same
 * result when run twice with the same thread count. */
typedef struct { int n, cin, h, w, cout, k, s, p, groups; } cshape;

static void ref_conv(const vt_conv_desc *d, const float *x, const float *w, const float *dy,
                     double *y, double *dx, double *dw)
{
    int cig = d->cin / d->groups, cog = d->cout / d->groups;
    size_t ny = (size_t)d->cout * d->n * d->ho * d->wo;
    memset(y, 0, ny * sizeof *y);
    memset(dx, 0, (size_t)d->cin * d->n * d->h * d->w * sizeof *dx);
    memset(dw, 0, (size_t)d->cout * cig * d->kh * d->kw * sizeof *dw);
    for (int co = 0; co < d->cout; co++)
        for (int n = 0; n < d->n; n++)
            for (int oy = 0; oy < d->ho; oy++)
                for (int ox = 0; ox < d->wo; ox++) {
                    size_t yi = (((size_t)co * d->n + n) * d->ho + oy) * d->wo + ox;
                    int g = co / cog;
                    for (int c = 0; c < cig; c++)
                        for (int ky = 0; ky < d->kh; ky++)
                            for (int kx = 0; kx < d->kw; kx++) {
                                int iy = oy * d->sh - d->ph + ky, ix = ox * d->sw - d->pw + kx;
                                if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
                                int ci = g * cig + c;
                                size_t xi = (((size_t)ci * d->n + n) * d->h + iy) * d->w + ix;
                                size_t wi = (((size_t)co * cig + c) * d->kh + ky) * d->kw + kx;
                                y[yi] += (double)w[wi] * x[xi];
                                dx[xi] += (double)w[wi] * dy[yi];
                                dw[wi] += (double)x[xi] * dy[yi];
                            }
                }
}

static double rel_err(const float *a, const double *b, size_t n)
{
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) e += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
    return sqrt(e / (r + 1e-30));
}

/* One test shape's buffers: x, w, dy (random normal), y, dx, dw and a second y1, dx1, dw1 (f[0..8]),
 * and the direct double-precision y, dx, dw of ref_conv (ref[0..2]). */
typedef struct conv_case {
    float *f[9];
    double *ref[3];
} conv_case;

static void conv_case_make(conv_case *c, const vt_conv_desc *d, size_t nx, size_t ny, size_t nw,
                           vt_rng *r)
{
    const size_t n[9] = {nx, nw, ny, ny, nx, nw, ny, nx, nw};
    for (int i = 0; i < 9; i++) ck_assert_ptr_nonnull(c->f[i] = malloc(n[i] * 4));
    for (int i = 0; i < 3; i++) ck_assert_ptr_nonnull(c->ref[i] = malloc(n[3 + i] * 8));
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < n[i]; j++) c->f[i][j] = (float)vt_rng_normal(r);
    ref_conv(d, c->f[0], c->f[1], c->f[2], c->ref[0], c->ref[1], c->ref[2]);
}

static void conv_case_free(conv_case *c)
{
    for (int i = 0; i < 9; i++) free(c->f[i]);
    for (int i = 0; i < 3; i++) free(c->ref[i]);
}

static void conv_run(vt_backend *be, const vt_conv_desc *d, const float *x, const float *w,
                     const float *dy, float *y, float *dx, float *dw, void *ws, size_t nx,
                     size_t nw)
{
    size_t ny = (size_t)d->cout * d->n * d->ho * d->wo;
    memset(dx, 0, nx * 4);
    for (size_t i = 0; i < ny; i++) y[i] = 123.0f; /* must be overwritten */
    for (size_t i = 0; i < nw; i++) dw[i] = 123.0f;
    ck_assert_int_eq(be->ops->conv_forward(be, d, x, w, NULL, y, ws), VT_OK);
    ck_assert_int_eq(be->ops->conv_backward(be, d, x, w, dy, dx, dw, NULL, ws), VT_OK);
}

START_TEST(test_conv_tiles)
{
    static const cshape shapes[] = {
        {5, 3, 9, 7, 4, 3, 1, 1, 1}, {7, 4, 6, 6, 6, 3, 2, 1, 2}, {3, 2, 11, 5, 3, 5, 2, 2, 1},
        {1, 3, 8, 8, 5, 3, 1, 1, 1}, {6, 4, 5, 5, 4, 3, 1, 1, 4}, {9, 2, 3, 3, 3, 3, 1, 0, 1},
        {2, 3, 6, 5, 4, 5, 1, 2, 1}, {2, 2, 2, 6, 3, 5, 1, 2, 1}, {3, 2, 5, 17, 3, 3, 1, 1, 1},
        {2, 2, 4, 33, 2, 5, 1, 2, 1}, {4, 2, 3, 16, 2, 3, 1, 1, 1},
        /* 3x3 stride 2 padding 1 on rows long enough for the vector deinterleave, even and
         * odd, and ending in a tail */
        {3, 3, 10, 24, 4, 3, 2, 1, 1}, {2, 2, 7, 21, 3, 3, 2, 1, 1}, {2, 3, 9, 18, 2, 3, 2, 1, 1},
        /* fewer tiles or images than threads (products over the pool), grouped too */
        {1, 4, 6, 6, 6, 3, 2, 1, 2}, {1, 6, 9, 7, 6, 3, 1, 1, 3},
    };
    /* cap 0: the default tiles; SIZE_MAX: the kept whole-batch columns (conv_columns) */
    static const size_t caps[] = {0, 1, 60, 400, 5000, SIZE_MAX};
    static const int threads[] = {1, 2, 4};
    vt_rng r;
    vt_rng_seed(&r, 5);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const cshape *c = &shapes[si];
        vt_conv_desc d = {c->n, c->cin, c->h, c->w, c->cout, 0, 0, c->k, c->k,
                          c->s, c->s, c->p, c->p, c->groups, 0};
        d.ho = (c->h + 2 * c->p - c->k) / c->s + 1;
        d.wo = (c->w + 2 * c->p - c->k) / c->s + 1;
        size_t nx = (size_t)c->cin * c->n * c->h * c->w, ny = (size_t)c->cout * c->n * d.ho * d.wo,
               nw = (size_t)c->cout * (c->cin / c->groups) * c->k * c->k;
        conv_case cc;
        conv_case_make(&cc, &d, nx, ny, nw, &r);
        float *x = cc.f[0], *w = cc.f[1], *dy = cc.f[2], *y = cc.f[3], *dx = cc.f[4],
              *dw = cc.f[5], *y1 = cc.f[6], *dx1 = cc.f[7], *dw1 = cc.f[8];
        double *ry = cc.ref[0], *rdx = cc.ref[1], *rdw = cc.ref[2];
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++)
            for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
                vt_backend *be;
                ck_assert_int_eq(vt_backend_cpu_create(&be, threads[ti]), VT_OK);
                int have_simd = vt_backend_cpu_set_conv_simd(be, 1), keep = caps[ci] == SIZE_MAX;
                if (keep && !be->ops->conv_columns(be, &d)) {
                    vt_backend_destroy(be);
                    continue; /* grouped: no kept columns */
                }
                if (caps[ci] && !keep) vt_backend_cpu_set_conv_cap(be, caps[ci]);
                d.keep_columns = keep;
                size_t wsb = keep ? be->ops->conv_columns(be, &d) : be->ops->conv_workspace(be, &d);
                void *ws = malloc(wsb ? wsb : 1);
                conv_run(be, &d, x, w, dy, y, dx, dw, ws, nx, nw);
                conv_run(be, &d, x, w, dy, y1, dx1, dw1, ws, nx, nw);
                double ey = rel_err(y, ry, ny), ex = rel_err(dx, rdx, nx), ew = rel_err(dw, rdw, nw);
                ck_assert_msg(ey < 1e-5 && ex < 1e-5 && ew < 1e-5,
                              "conv shape %zu threads %d cap %zu: relative errors y %.3g dx %.3g "
                              "dw %.3g", si, threads[ti], caps[ci], ey, ex, ew);
                ck_assert_msg(!memcmp(y, y1, ny * 4) && !memcmp(dx, dx1, nx * 4) &&
                                  !memcmp(dw, dw1, nw * 4),
                              "conv shape %zu threads %d cap %zu: two runs differ", si,
                              threads[ti], caps[ci]);
                /* where the same-padding runs were AVX-512's: the portable loops give the same
                 * values (a zero's sign aside: ==) */
                if (vt_backend_cpu_set_conv_simd(be, 0) == 0 && have_simd) {
                    conv_run(be, &d, x, w, dy, y1, dx1, dw1, ws, nx, nw);
                    int same = 1;
                    for (size_t i = 0; i < nx; i++) same &= dx[i] == dx1[i];
                    for (size_t i = 0; i < ny; i++) same &= y[i] == y1[i];
                    for (size_t i = 0; i < nw; i++) same &= dw[i] == dw1[i];
                    ck_assert_msg(same, "conv shape %zu threads %d cap %zu: AVX-512 and portable "
                                  "same-padding runs differ", si, threads[ti], caps[ci]);
                }
                free(ws);
                vt_backend_destroy(be);
            }
        conv_case_free(&cc);
    }
}
END_TEST

/* Winograd under bf16 products (vt_backend_cpu_set_winograd_bf16) against the direct
 * double-precision convolution, beside im2col with the same bf16 products, for inputs of
 * either sign and for ReLU outputs (all >= 0, where the transforms cancel most): 2x2 tiles
 * (bf16 products) within 2.5x im2col's relative error (measured 1.4-1.7x), 4x4 tiles (fp32
 * products) within the fp32 bound of test_conv_winograd; off: im2col.  On whichever bf16 kernel
 * the machine runs (the portable reference has the kernels' rounding). */
START_TEST(test_conv_winograd_bf16)
{
    static const struct {
        cshape s;
        int tile;
    } shapes[] = {
        {{2, 64, 14, 14, 64, 3, 1, 1, 1}, 2}, {{3, 64, 13, 15, 72, 3, 1, 1, 1}, 2},
        {{3, 64, 20, 20, 64, 3, 1, 1, 1}, 4}, {{1, 24, 47, 45, 16, 3, 1, 1, 1}, 4},
        {{4, 32, 14, 14, 64, 3, 1, 1, 1}, 0}, /* fp32's 2x2; narrow, 4x4 over 31 % more */
        {{1, 96, 40, 40, 96, 3, 1, 1, 1}, 2}, /* fp32's 4x4; wide maps of 96 channels */
    };
    vt_rng r;
    vt_rng_seed(&r, 13);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int relu = 0; relu < 2; relu++) {
            const cshape *c = &shapes[si].s;
            vt_conv_desc d = {c->n, c->cin, c->h, c->w, c->cout, c->h, c->w, 3, 3,
                              1,    1,      1,    1,    1,       0};
            size_t nx = (size_t)c->cin * c->n * c->h * c->w,
                   ny = (size_t)c->cout * c->n * c->h * c->w, nw = (size_t)c->cout * c->cin * 9;
            conv_case cc;
            conv_case_make(&cc, &d, nx, ny, nw, &r);
            float *x = cc.f[0], *w = cc.f[1], *dy = cc.f[2], *y = cc.f[3], *dx = cc.f[4],
                  *dw = cc.f[5];
            if (relu) {
                for (size_t i = 0; i < nx; i++) x[i] = x[i] > 0 ? x[i] : 0;
                ref_conv(&d, x, w, dy, cc.ref[0], cc.ref[1], cc.ref[2]);
            }
            double e[2][3];
            for (int wino = 0; wino < 2; wino++) {
                vt_backend *be;
                ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
                vt_backend_cpu_set_bf16(be, 1);
                ck_assert_int_eq(vt_backend_cpu_set_winograd_bf16(be, wino),
                                 vt_backend_cpu_winograd_bf16_default());
                ck_assert_int_eq(vt_cpu_wino_applies(be, &d), wino && shapes[si].tile);
                ck_assert_int_eq(vt_cpu_wino_tile(be, &d), wino ? shapes[si].tile : 0);
                ck_assert_int_eq(vt_backend_cpu_winograd_tile_bf16(&d), shapes[si].tile);
                size_t wsb = be->ops->conv_workspace(be, &d);
                void *ws = malloc(wsb ? wsb : 1);
                conv_run(be, &d, x, w, dy, y, dx, dw, ws, nx, nw);
                e[wino][0] = rel_err(y, cc.ref[0], ny);
                e[wino][1] = rel_err(dx, cc.ref[1], nx);
                e[wino][2] = rel_err(dw, cc.ref[2], nw);
                free(ws);
                vt_backend_destroy(be);
            }
            if (getenv("VT_TEST_PRINT_ERRORS"))
                printf("winograd bf16 shape %zu relu %d: im2col y %.3g dx %.3g dw %.3g, "
                       "winograd y %.3g dx %.3g dw %.3g\n",
                       si, relu, e[0][0], e[0][1], e[0][2], e[1][0], e[1][1], e[1][2]);
            for (int k = 0; k < 3; k++) {
                /* im2col's bf16 rounding: about 2^-9 relative, not fp32's */
                ck_assert_msg(e[0][k] > 5e-4 && e[0][k] < 5e-3,
                              "bf16 im2col shape %zu output %d: relative error %.3g", si, k,
                              e[0][k]);
                double bound = shapes[si].tile == 4   ? 1e-5
                               : shapes[si].tile == 2 ? 2.5 * e[0][k]
                                                      : e[0][k] * (1 + 1e-6);
                ck_assert_msg(e[1][k] < bound,
                              "bf16 winograd shape %zu relu %d output %d: relative error %.3g "
                              "(im2col's %.3g)", si, relu, k, e[1][k], e[0][k]);
            }
            conv_case_free(&cc);
        }
}
END_TEST

/* The tile under bf16 products: the fp32 rule's, but im2col where a side has fewer than 64
 * channels and 4x4 tiles cover more than 15 % beyond the map, and 2x2 tiles for 4x4 ones on
 * maps of 40 px a side and more with 96 channels or more on both sides; on by default with
 * the AVX512_BF16 products only (VT_CPU_WINOGRAD_BF16 decides where it is set). */
START_TEST(test_winograd_bf16_rule)
{
    static const struct {
        vt_conv_desc d;
        int fp32, bf16;
    } rule[] = {
        {{256, 32, 14, 14, 64, 14, 14, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 0},  /* cnn-small's */
        {{256, 64, 7, 7, 128, 7, 7, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},     /* 64 channels */
        {{256, 64, 14, 14, 63, 14, 14, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 0},  /* 63 */
        {{16, 32, 64, 64, 32, 64, 64, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},   /* covered exactly */
        {{8, 32, 18, 18, 32, 18, 18, 3, 3, 1, 1, 1, 1, 1, 0}, 2, 0},    /* 23 % more */
        {{1, 24, 47, 45, 16, 47, 45, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},    /* 9 % more */
        {{8, 64, 10, 10, 64, 10, 10, 3, 3, 1, 1, 1, 1, 1, 0}, 2, 2},
        {{64, 128, 5, 5, 128, 5, 5, 3, 3, 1, 1, 1, 1, 1, 0}, 0, 0},
        {{8, 96, 80, 80, 96, 80, 80, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 2},     /* det-n's head */
        {{8, 192, 40, 40, 96, 40, 40, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 2},
        {{8, 96, 40, 40, 96, 40, 40, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 2},
        {{8, 96, 40, 39, 96, 40, 39, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},     /* 39 px */
        {{8, 96, 40, 40, 95, 40, 40, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},     /* 95 channels */
        {{16, 96, 32, 32, 96, 32, 32, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},   /* 32x32 */
        {{8, 64, 40, 40, 64, 40, 40, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},
        {{16, 96, 16, 16, 96, 16, 16, 3, 3, 1, 1, 1, 1, 1, 0}, 4, 4},   /* 16x16 */
    };
    for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
        ck_assert_int_eq(vt_backend_cpu_winograd_tile(&rule[i].d), rule[i].fp32);
        ck_assert_msg(vt_backend_cpu_winograd_tile_bf16(&rule[i].d) == rule[i].bf16,
                      "shape %zu: bf16 tile %d, want %d", i,
                      vt_backend_cpu_winograd_tile_bf16(&rule[i].d), rule[i].bf16);
    }
    /* a new backend's switch */
    const char *e = getenv("VT_CPU_WINOGRAD_BF16");
    char *was = e ? strdup(e) : NULL;
    unsetenv("VT_CPU_WINOGRAD_BF16");
    int avx512 = !strncmp(vt_gemm_bf16_kernel(), "AVX512_BF16", 11);
    ck_assert_int_eq(vt_backend_cpu_winograd_bf16_default(), avx512);
    static const char *const on[] = {"1", "on", "yes", "true"}, *const off[] = {"0", "off", "no",
                                                                               "false"};
    for (int i = 0; i < 4; i++) {
        setenv("VT_CPU_WINOGRAD_BF16", on[i], 1);
        ck_assert_int_eq(vt_backend_cpu_winograd_bf16_default(), 1);
        setenv("VT_CPU_WINOGRAD_BF16", off[i], 1);
        ck_assert_int_eq(vt_backend_cpu_winograd_bf16_default(), 0);
    }
    setenv("VT_CPU_WINOGRAD_BF16", "maybe", 1);
    ck_assert_int_eq(vt_backend_cpu_winograd_bf16_default(), avx512);
    if (vt_cpu_has_bf16()) { /* the portable products: im2col */
        unsetenv("VT_CPU_WINOGRAD_BF16");
        const char *k = vt_gemm_bf16_kernel();
        const char *name = !strncmp(k, "AMX", 3) ? "amx" : avx512 ? "avx512" : "portable";
        ck_assert(vt_gemm_bf16_force("portable"));
        ck_assert_int_eq(vt_backend_cpu_winograd_bf16_default(), 0);
        if (vt_gemm_bf16_force("avx512")) {
            ck_assert_int_eq(vt_backend_cpu_winograd_bf16_default(), 1);
            vt_backend *be;
            ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
            vt_backend_cpu_set_bf16(be, 1);
            /* cnn-small's second convolution: im2col under bf16, 4x4 tiles in fp32 */
            ck_assert(!vt_cpu_wino_applies(be, &rule[0].d));
            ck_assert_int_eq(vt_cpu_wino_tile(be, &rule[1].d), 4);
            vt_backend_cpu_set_bf16(be, 0);
            ck_assert_int_eq(vt_cpu_wino_tile(be, &rule[0].d), 4);
            vt_backend_destroy(be);
        }
        ck_assert(vt_gemm_bf16_force(name));
    }
    if (was) setenv("VT_CPU_WINOGRAD_BF16", was, 1);
    else unsetenv("VT_CPU_WINOGRAD_BF16");
    free(was);
}
END_TEST

/* Winograd F(2x2, 3x3) and F(4x4, 3x3) (lib/backend/cpu_winograd.c) against the direct
 * double-precision convolution: odd and even sizes, tiles overhanging the map, maps of one
 * pixel, a batch of one, several blocks of tile rows, 1-4 threads; backward with and without
 * dx; bitwise the same twice; the layer takes it only with fp32 products and its switch on
 * (bf16 products without vt_backend_cpu_set_winograd_bf16, and the switch off: im2col). */
START_TEST(test_conv_winograd)
{
    /* tile: the rule's; run: the largest tile the test lets the backend take (2: 2x2 tiles
     * where the rule takes 4x4 ones on enough work); force: vt_backend_cpu_force_winograd's */
    static const struct {
        cshape s;
        int tile, run, force;
    } shapes[] = {
        {{2, 16, 14, 14, 16, 3, 1, 1, 1}, 2, 4, 0}, {{3, 17, 13, 15, 19, 3, 1, 1, 1}, 2, 4, 0},
        {{1, 16, 13, 17, 16, 3, 1, 1, 1}, 0, 4, 2}, /* 63 2x2 tiles: the rule's im2col */
        {{2, 16, 1, 98, 16, 3, 1, 1, 1}, 2, 4, 0},
        {{5, 24, 15, 13, 16, 3, 1, 1, 1}, 2, 4, 0}, {{2, 16, 2, 97, 20, 3, 1, 1, 1}, 2, 4, 0},
        {{2, 16, 18, 18, 16, 3, 1, 1, 1}, 2, 4, 0}, /* 4x4 tiles would cover 23 % more */
        {{45, 16, 14, 14, 16, 3, 1, 1, 1}, 2, 2, 0}, /* 315 tile rows: forward in more than one block */
        {{24, 64, 14, 14, 64, 3, 1, 1, 1}, 4, 2, 0}, /* 1 thread: backward shares of 2 blocks (84 rows) */
        /* 4x4 tiles, transformed by chunks of tiles (up to 12 a row) or by rows */
        {{2, 16, 16, 16, 16, 3, 1, 1, 1}, 2, 4, 4}, /* 32 4x4 tiles: the rule's 2x2 */
        {{3, 17, 31, 30, 19, 3, 1, 1, 1}, 4, 4, 0},
        {{1, 24, 47, 45, 16, 3, 1, 1, 1}, 4, 4, 0}, {{2, 16, 30, 66, 20, 3, 1, 1, 1}, 4, 4, 0},
        {{60, 16, 16, 16, 16, 3, 1, 1, 1}, 4, 4, 0}, /* 240 tile rows: forward in two blocks */
        {{32, 64, 16, 16, 64, 3, 1, 1, 1}, 4, 4, 0}, /* 1 thread: backward shares of 2 blocks (64 rows) */
        /* small maps, on enough work: 7x7 (2 x 2 tiles an image, 31 % over), 11 x 9, 8x8;
         * with less, 2x2 tiles from 8x8 */
        {{64, 32, 7, 7, 32, 3, 1, 1, 1}, 4, 4, 0}, {{26, 48, 11, 9, 40, 3, 1, 1, 1}, 4, 4, 0},
        {{64, 64, 8, 8, 64, 3, 1, 1, 1}, 4, 4, 0}, {{8, 32, 8, 8, 32, 3, 1, 1, 1}, 2, 4, 0},
        /* forced against the rule: 4x4 on 2 and 5 px high maps, 2x2 where it takes 4x4 */
        {{2, 16, 2, 97, 20, 3, 1, 1, 1}, 2, 4, 4}, {{6, 16, 5, 5, 24, 3, 1, 1, 1}, 0, 4, 4},
        {{4, 32, 16, 16, 32, 3, 1, 1, 1}, 4, 4, 2},
        /* fewer images or blocks than threads: the steps over the pool (run_inner), 4x4 tiles
         * in chunks and by rows */
        {{1, 16, 10, 11, 20, 3, 1, 1, 1}, 0, 4, 4}, {{1, 16, 9, 53, 16, 3, 1, 1, 1}, 2, 4, 4},
    };
    static const int threads[] = {1, 2, 3, 4};
    vt_rng r;
    vt_rng_seed(&r, 9);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const cshape *c = &shapes[si].s;
        vt_conv_desc d = {c->n, c->cin, c->h, c->w, c->cout, c->h, c->w, 3, 3, 1, 1, 1, 1, 1, 0};
        ck_assert_int_eq(vt_backend_cpu_winograd_tile(&d), shapes[si].tile);
        /* the 4x4 transforms' larger coefficients (up to 8 and 1/24) cost more rounding */
        int tile = shapes[si].force ? shapes[si].force : shapes[si].tile;
        tile = tile < shapes[si].run ? tile : shapes[si].run;
        double bound = tile == 4 ? 1e-5 : 2e-6;
        size_t nx = (size_t)c->cin * c->n * c->h * c->w, ny = (size_t)c->cout * c->n * c->h * c->w,
               nw = (size_t)c->cout * c->cin * 9;
        conv_case cc;
        conv_case_make(&cc, &d, nx, ny, nw, &r);
        float *x = cc.f[0], *w = cc.f[1], *dy = cc.f[2], *y = cc.f[3], *dx = cc.f[4],
              *dw = cc.f[5], *y1 = cc.f[6], *dx1 = cc.f[7], *dw1 = cc.f[8];
        double *ry = cc.ref[0], *rdx = cc.ref[1], *rdw = cc.ref[2];
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            vt_backend *be;
            ck_assert_int_eq(vt_backend_cpu_create(&be, threads[ti]), VT_OK);
            vt_backend_cpu_set_winograd(be, shapes[si].run);
            ck_assert_int_eq(vt_backend_cpu_force_winograd(be, shapes[si].force), 0);
            ck_assert(vt_cpu_wino_applies(be, &d));
            ck_assert_int_eq(vt_cpu_wino_tile(be, &d), tile);
            ck_assert_uint_eq(be->ops->conv_columns(be, &d), 0); /* nothing kept */
            size_t wsb = be->ops->conv_workspace(be, &d);
            ck_assert_uint_ge(wsb, vt_cpu_wino_workspace(be, &d));
            void *ws = malloc(wsb);
            conv_run(be, &d, x, w, dy, y, dx, dw, ws, nx, nw);
            conv_run(be, &d, x, w, dy, y1, dx1, dw1, ws, nx, nw);
            double ey = rel_err(y, ry, ny), ex = rel_err(dx, rdx, nx), ew = rel_err(dw, rdw, nw);
            ck_assert_msg(ey < bound && ex < bound && ew < bound,
                          "winograd shape %zu threads %d: relative errors y %.3g dx %.3g dw %.3g",
                          si, threads[ti], ey, ex, ew);
            if (getenv("VT_TEST_PRINT_ERRORS"))
                printf("winograd shape %zu tile %d threads %d: y %.3g dx %.3g dw %.3g\n", si,
                       tile, threads[ti], ey, ex, ew);
            ck_assert_msg(!memcmp(y, y1, ny * 4) && !memcmp(dx, dx1, nx * 4) &&
                              !memcmp(dw, dw1, nw * 4),
                          "winograd shape %zu threads %d: two runs differ", si, threads[ti]);
            /* dx NULL (a first layer): the same dW */
            for (size_t i = 0; i < nw; i++) dw1[i] = 123.0f;
            ck_assert_int_eq(be->ops->conv_backward(be, &d, x, w, dy, NULL, dw1, NULL, ws), VT_OK);
            ck_assert_msg(!memcmp(dw, dw1, nw * 4), "winograd shape %zu: dW without dx differs",
                          si);
            /* dx is added to */
            for (size_t i = 0; i < nx; i++) dx1[i] = 1.0f;
            ck_assert_int_eq(be->ops->conv_backward(be, &d, x, w, dy, dx1, dw1, NULL, ws), VT_OK);
            for (size_t i = 0; i < nx; i++)
                ck_assert_float_eq_tol(dx1[i], dx[i] + 1.0f, 1e-5f * (1.0f + fabsf(dx[i])));
            /* off, or bf16 products: im2col + GEMM */
            ck_assert_int_eq(vt_backend_cpu_set_winograd(be, 2), shapes[si].run);
            ck_assert_int_eq(vt_cpu_wino_tile(be, &d), 2); /* 2x2 only */
            ck_assert_uint_ge(wsb, vt_cpu_wino_workspace(be, &d));
            ck_assert_int_eq(vt_backend_cpu_set_winograd(be, 0), 2);
            ck_assert(!vt_cpu_wino_applies(be, &d));
            vt_backend_cpu_set_winograd(be, 1);
            vt_backend_cpu_set_bf16(be, 1);
            vt_backend_cpu_set_winograd_bf16(be, 0);
            ck_assert(!vt_cpu_wino_applies(be, &d));
            vt_backend_cpu_set_bf16(be, 0);
            d.keep_columns = 1;
            ck_assert(!vt_cpu_wino_applies(be, &d));
            d.keep_columns = 0;
            /* back to the rule */
            ck_assert_int_eq(vt_backend_cpu_force_winograd(be, 0), shapes[si].force);
            ck_assert_int_eq(vt_cpu_wino_tile(be, &d), shapes[si].tile);
            free(ws);
            vt_backend_destroy(be);
        }
        conv_case_free(&cc);
    }
    /* the shapes it does not take */
    vt_conv_desc s2 = {2, 16, 28, 28, 16, 14, 14, 3, 3, 2, 2, 1, 1, 1, 0};
    vt_conv_desc g2 = {2, 16, 14, 14, 16, 14, 14, 3, 3, 1, 1, 1, 1, 2, 0};
    vt_conv_desc c8 = {2, 8, 14, 14, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 0};
    vt_conv_desc k5 = {2, 16, 14, 14, 16, 14, 14, 5, 5, 1, 1, 2, 2, 1, 0};
    vt_conv_desc sm = {2, 16, 6, 7, 16, 6, 7, 3, 3, 1, 1, 1, 1, 1, 0}; /* 12 2x2 tiles */
    /* small maps: 5x5 (4x4 tiles over 2.56x the map, 9 2x2 tiles), 4x4 maps (under 7 px) */
    vt_conv_desc m5 = {256, 128, 5, 5, 128, 5, 5, 3, 3, 1, 1, 1, 1, 1, 0};
    vt_conv_desc m4 = {256, 256, 4, 4, 256, 4, 4, 3, 3, 1, 1, 1, 1, 1, 0};
    ck_assert(!vt_backend_cpu_winograd_tile(&s2) && !vt_backend_cpu_winograd_tile(&g2) &&
              !vt_backend_cpu_winograd_tile(&c8) && !vt_backend_cpu_winograd_tile(&k5) &&
              !vt_backend_cpu_winograd_tile(&sm) && !vt_backend_cpu_winograd_tile(&m5) &&
              !vt_backend_cpu_winograd_tile(&m4));
    /* 10x10 maps (which 2x2 tiles cover exactly, 4x4 ones not): 4x4 tiles from a work of
     * 16384; 8x8 maps (4x4 tiles cover them too) from 6144 and 64 of them in the batch (16
     * images), as 7x7 ones (odd sides) */
    vt_conv_desc lw = {20, 128, 10, 10, 128, 10, 10, 3, 3, 1, 1, 1, 1, 1, 0}; /* 16000 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 2);
    lw.n = 21; /* 16800 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 4);
    lw.h = lw.w = lw.ho = lw.wo = 8, lw.n = 8; /* 4096 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 2);
    lw.n = 15; /* 7680, but 60 tiles */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 2);
    lw.n = 16; /* 8192 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 4);
    lw.cin = lw.cout = 64, lw.n = 23; /* 5888 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 2);
    lw.n = 24; /* 6144 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&lw), 4);
    vt_conv_desc l7 = {16, 128, 7, 7, 128, 7, 7, 3, 3, 1, 1, 1, 1, 1, 0}; /* 6272 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&l7), 4);
    l7.n = 15; /* 5880 */
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&l7), 2);
    /* a tile takes a batch of 64 of its tiles or more: 20x20 maps (25 4x4 tiles an image) 4x4
     * from 3 images, 2x2 below; 10x10 maps (25 2x2 tiles) 2x2 from 3 images, im2col below */
    vt_conv_desc sb = {3, 256, 20, 20, 256, 20, 20, 3, 3, 1, 1, 1, 1, 1, 0};
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&sb), 4);
    sb.n = 2;
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&sb), 2);
    sb.h = sb.w = sb.ho = sb.wo = 10;
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&sb), 0);
    sb.n = 3;
    ck_assert_int_eq(vt_backend_cpu_winograd_tile(&sb), 2);
    /* 512 -> 512 channels: 4x4 tiles' weight-gradient partials (36 x 512 x 512 floats a thread)
     * fit 64 MiB on one thread, 2x2 ones on 2-4, none on 5 (im2col) */
    vt_conv_desc big = {3, 512, 20, 20, 512, 20, 20, 3, 3, 1, 1, 1, 1, 1, 0};
    static const int big_tile[] = {4, 2, 2, 2, 0};
    for (int th = 1; th <= 5; th++) {
        vt_backend *be;
        ck_assert_int_eq(vt_backend_cpu_create(&be, th), VT_OK);
        ck_assert_int_eq(vt_cpu_wino_tile(be, &big), big_tile[th - 1]);
        ck_assert_int_eq(vt_cpu_wino_applies(be, &big), big_tile[th - 1] != 0);
        vt_backend_destroy(be);
    }
    /* backward shares: two a thread where each keeps 256 tiles and the partials fit 4M floats,
     * else one a thread, never more than the images */
    vt_conv_desc sh = {256, 32, 14, 14, 64, 14, 14, 3, 3, 1, 1, 1, 1, 1, 0}; /* 16 tiles each */
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&sh, 2, 4), 4);
    sh.n = 64; /* 1024 tiles: 256 a share */
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&sh, 2, 4), 4);
    sh.n = 63;
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&sh, 2, 4), 2);
    sh.n = 1;
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&sh, 2, 4), 1);
    vt_conv_desc d10 = {8, 256, 10, 10, 256, 10, 10, 3, 3, 1, 1, 1, 1, 1, 0}; /* 25 2x2 tiles */
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&d10, 2, 2), 2);
    d10.n = 64; /* 1600 tiles, but 4 x 1M floats of partials at most */
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&d10, 2, 2), 4);
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&d10, 3, 2), 3);
    ck_assert_int_eq(vt_backend_cpu_winograd_shares(&d10, 2, 3), 0);
}
END_TEST

/* The CPU table offers every op of backend_ops.inc, the optional ones too, and
 * vt_backend_missing_op names a required op that a table leaves NULL but not an optional one. */
START_TEST(test_ops_table)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
    const vt_backend_ops *ops = be->ops;
    ck_assert_int_eq(ops->api_version, VT_BACKEND_API_VERSION);
    ck_assert_str_eq(ops->name, "cpu");
    ck_assert_int_eq(ops->host_memory, 1);
    const char *missing = vt_backend_missing_op(ops);
    ck_assert_msg(missing == NULL, "vt_backend_missing_op: the CPU backend has no %s op", missing);
#define VT_BACKEND_OP(ret, op, params)                                                           \
    ck_assert_msg(ops->op != NULL, "the CPU backend has no %s op", #op);
#include "backend/backend_ops.inc"
    vt_backend_ops t = *ops;
    t.conv_columns = NULL;
    t.bn_act_backward = NULL;
    ck_assert_ptr_null(vt_backend_missing_op(&t));
    t.softmax_dice = NULL;
    ck_assert_str_eq(vt_backend_missing_op(&t), "softmax_dice");
    t.destroy = NULL;
    ck_assert_str_eq(vt_backend_missing_op(&t), "destroy");
    vt_backend_destroy(be);
}
END_TEST

/* copy2d and axpy2d against plain loops, one thread and split over four (1000 rows of 100:
 * several ranges); the gaps between destination rows keep their contents. */
START_TEST(test_rows2d)
{
    static const size_t cases[][4] = {{7, 5, 5, 9}, {1000, 100, 130, 100}, {3, 20000, 20001, 20000},
                                      {1, 1, 1, 1}};
    for (int th = 1; th <= 4; th += 3) {
        vt_backend *be;
        ck_assert_int_eq(vt_backend_cpu_create(&be, th), VT_OK);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            size_t rows = cases[ci][0], cols = cases[ci][1], sp = cases[ci][2], dp = cases[ci][3];
            float *x = malloc(rows * sp * 4), *y = malloc(rows * dp * 4), *z = malloc(rows * dp * 4);
            for (size_t i = 0; i < rows * sp; i++) x[i] = (float)(i % 101) * 0.5f;
            for (size_t i = 0; i < rows * dp; i++) y[i] = -7.0f, z[i] = (float)(i % 7);
            ck_assert_int_eq(be->ops->copy2d(be, rows, cols, x, sp, y, dp), VT_OK);
            ck_assert_int_eq(be->ops->axpy2d(be, rows, cols, -2.0f, x, sp, z, dp), VT_OK);
            for (size_t r = 0; r < rows; r++)
                for (size_t j = 0; j < dp; j++) {
                    size_t i = r * dp + j;
                    float wy = j < cols ? x[r * sp + j] : -7.0f;
                    float wz = (float)(i % 7) + (j < cols ? -2.0f * x[r * sp + j] : 0.0f);
                    ck_assert_msg(y[i] == wy && z[i] == wz, "case %zu threads %d row %zu col %zu: "
                                  "copy %g (want %g), axpy %g (want %g)", ci, th, r, j,
                                  (double)y[i], (double)wy, (double)z[i], (double)wz);
                }
            free(x), free(y), free(z);
        }
        float t[8] = {0};
        ck_assert_int_eq(be->ops->copy2d(be, 2, 4, t, 3, t + 4, 4), VT_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(be->ops->axpy2d(be, 2, 4, 1.0f, t, 4, t, 2), VT_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(be->ops->copy2d(be, 0, 4, NULL, 4, NULL, 4), VT_OK);
        vt_backend_destroy(be);
    }
}
END_TEST

/* SiLU and sigmoid (four lanes at a time with the backend's own exp) against libm in double,
 * over the range where they change and beyond the clamp, odd lengths for the scalar tail; and
 * the fused BN + SiLU forward against BN then SiLU. */
START_TEST(test_silu_accuracy)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    enum { N = 20001 };
    float *x = malloc(N * 4), *y = malloc(N * 4), *s = malloc(N * 4), *dx = malloc(N * 4),
          *dy = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        x[i] = -100.0f + 200.0f * (float)i / (N - 1);
        if (i % 3 == 0) x[i] *= 0.05f; /* dense near 0 too */
        dy[i] = 1.0f;
        dx[i] = 0.5f;
    }
    ck_assert_int_eq(be->ops->act_forward(be, VT_ACT_SILU, 0, N, x, y), VT_OK);
    ck_assert_int_eq(be->ops->act_forward(be, VT_ACT_SIGMOID, 0, N, x, s), VT_OK);
    ck_assert_int_eq(be->ops->act_backward(be, VT_ACT_SILU, 0, N, x, y, dy, dx), VT_OK);
    for (int i = 0; i < N; i++) {
        double z = x[i], sg = 1.0 / (1.0 + exp(-z)), sl = z * sg;
        double dsl = 0.5 + sg * (1.0 + z * (1.0 - sg));
        ck_assert_msg(fabs(s[i] - sg) <= 3e-7 * sg + 1e-35, "sigmoid(%g) = %.9g, libm %.9g",
                      z, (double)s[i], sg);
        ck_assert_msg(fabs(y[i] - sl) <= 3e-7 * fabs(sl) + 1e-35, "silu(%g) = %.9g, libm %.9g",
                      z, (double)y[i], sl);
        ck_assert_msg(fabs(dx[i] - dsl) <= 1e-6 * fabs(dsl) + 1e-7, "silu'(%g) + 0.5 = %.9g, "
                      "libm %.9g", z, (double)dx[i], dsl);
    }
    /* fused BN + SiLU (eval: running statistics) = BN then SiLU, to the last few bits */
    float gamma[3] = {1.5f, -0.5f, 2.0f}, beta[3] = {0.25f, 1.0f, -3.0f}, rm[3] = {0.1f, -2, 7},
          rv[3] = {4, 0.5f, 9};
    size_t m = N / 3;
    ck_assert_int_eq(be->ops->bn_act_forward_eval(be, VT_ACT_SILU, 3, m, x, gamma, beta, 1e-5f, rm,
                                                  rv, y),
                     VT_OK);
    ck_assert_int_eq(be->ops->bn_forward_eval(be, 3, m, x, gamma, beta, 1e-5f, rm, rv, dx), VT_OK);
    ck_assert_int_eq(be->ops->act_forward(be, VT_ACT_SILU, 0, 3 * m, dx, s), VT_OK);
    /* the fused kernel may round z = BN(x) = a * x + b differently by a few ulps of its terms
     * (a multiply-add contracted or not: compilers differ), which SiLU carries on: relatively
     * amplified by about 1 + |z| (in the tail z * exp(z) moves by |z| ulps per ulp of z), and
     * absolutely about 1x where z is a small difference of larger terms */
    for (size_t i = 0; i < 3 * m; i++) {
        float z = dx[i], b = beta[i / m];
        float tol = 1e-6f * (1.0f + fabsf(z)) * fabsf(s[i]) + 1.2e-6f * (fabsf(b) + fabsf(z - b)) +
                    1e-30f;
        ck_assert_msg(fabsf(y[i] - s[i]) <= tol, "fused %zu: %.9g vs %.9g (z %g)", i,
                      (double)y[i], (double)s[i], (double)z);
    }
    ck_assert_int_eq(be->ops->bn_act_forward_eval(be, VT_ACT_LEAKY, 3, m, x, gamma, beta, 1e-5f,
                                                  rm, rv, y),
                     VT_ERR_INVALID_ARGUMENT);
    free(x), free(y), free(s), free(dx), free(dy);
    vt_backend_destroy(be);
}
END_TEST

/* Gradients assigned (dx_add = 0, over NaN) equal gradients added to zeros (dx_add = 1), bit for
 * bit, for every op that takes dx_add (the fast 2x2 pool, a general pool, BN, BN + ReLU, BN +
 * SiLU, global average pool); and BN + activation + 2x2 pool fused gives the bits of
 * bn_act_forward_train then maxpool_forward (odd and even maps), its backward those of
 * maxpool_backward then bn_act_backward, both refusing another window. */
static void fill_f(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 9) & 0xffff) / 32768.0f - 1.0f;
    }
}

static void expect_same(const float *a, const float *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof(float)) == 0, "%s [%zu]: %.9g vs %.9g", what, i,
                      (double)a[i], (double)b[i]);
}

/* sync_bn's hook (vt_backend_cpu_set_bn_sync) as if a second process had the same images:
 * every sum doubled.  The statistics are then those of the batch taken twice, so each op must
 * give what it gives on the duplicated batch (its first copy; dgamma and dbeta, this process's
 * own, half of the duplicated batch's). */
typedef struct { int fwd, bwd, channels; } sync_seen;

static vt_status double_sums(void *ctx, double *q, int channels, int backward)
{
    sync_seen *s = ctx;
    s->channels = channels;
    ++*(backward ? &s->bwd : &s->fwd);
    for (int i = 0; i < 3 * channels; i++) q[i] *= 2;
    return VT_OK;
}

static vt_status same_sums(void *ctx, double *q, int channels, int backward)
{
    (void)ctx, (void)q, (void)channels, (void)backward;
    return VT_OK;
}

static vt_status twin_loss(void *ctx, double *q, int n, double *scale)
{
    (void)ctx;
    for (int i = 0; i < n; i++) q[i] *= 2;
    *scale = 2;
    return VT_OK;
}

static vt_status failing_sync(void *ctx, double *q, int channels, int backward)
{
    (void)ctx, (void)q, (void)channels, (void)backward;
    return vt_fail(VT_ERR_IO, "the other ranks are gone");
}

static void expect_close(const float *a, const float *b, size_t n, double tol, const char *what)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)a[i] - b[i]) <= tol * (scale > 1 ? scale : 1),
                      "%s [%zu]: %.9g vs %.9g", what, i, (double)a[i], (double)b[i]);
}

/* Forward and backward of one of the training BN ops (act 0 plain, 1 ReLU, 2 SiLU, 3 ReLU
 * and the 2x2 pool, whose output y is also the gradient it is given back). */
static void bn_train_op(vt_backend *be, int act, int C, size_t m, const float *x, const float *dy,
                        const float *gamma, const float *beta, float *rm, float *rv, float *sm,
                        float *si, float *y, float *dx, float *dg, float *db,
                        const vt_pool_desc *pd, int32_t *idx)
{
    const vt_backend_ops *o = be->ops;
    vt_act A = act == 0 ? VT_ACT_NONE : act == 2 ? VT_ACT_SILU : VT_ACT_RELU;
    if (act == 3) {
        ck_assert_int_eq(o->bn_act_pool_forward_train(be, A, C, m, x, gamma, beta, 1e-5f, 0.1f,
                                                      rm, rv, sm, si, pd, y, idx), VT_OK);
        ck_assert_int_eq(o->bn_act_pool_backward(be, A, C, m, x, gamma, beta, sm, si, pd, idx,
                                                 y, dx, 0, dg, db), VT_OK);
    } else if (act == 0) {
        ck_assert_int_eq(o->bn_forward_train(be, C, m, x, gamma, beta, 1e-5f, 0.1f, rm, rv, sm,
                                             si, y), VT_OK);
        ck_assert_int_eq(o->bn_backward(be, C, m, x, gamma, sm, si, dy, dx, 0, dg, db), VT_OK);
    } else {
        ck_assert_int_eq(o->bn_act_forward_train(be, A, C, m, x, gamma, beta, 1e-5f, 0.1f, rm,
                                                 rv, sm, si, y), VT_OK);
        ck_assert_int_eq(o->bn_act_backward(be, A, C, m, x, y, gamma, beta, sm, si, dy, dx, 0,
                                            dg, db), VT_OK);
    }
}

START_TEST(test_bn_sync)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    const vt_backend_ops *o = be->ops;
    enum { C = 3, N = 2, H = 6, W = 4 };
    size_t m = (size_t)N * H * W, n = C * m, m2 = 2 * m;
    float x[C * N * H * W], dy[C * N * H * W], x2[2 * C * N * H * W], dy2[2 * C * N * H * W];
    fill_f(x, n, 3);
    fill_f(dy, n, 4);
    for (int c = 0; c < C; c++) /* channel c of the duplicated batch: x_c twice */
        for (int k = 0; k < 2; k++) {
            memcpy(x2 + c * m2 + k * m, x + c * m, m * 4);
            memcpy(dy2 + c * m2 + k * m, dy + c * m, m * 4);
        }
    float gamma[C] = {1.5f, -0.5f, 0.8f}, beta[C] = {0.2f, -1.0f, 0.1f};
    for (int act = 0; act < 4; act++) { /* none, ReLU, SiLU, ReLU + 2x2 max pool */
        int pool = act == 3;
        vt_pool_desc pd = {C * N, H, W, H / 2, W / 2, 2, 2, 0}, pd2 = pd;
        pd2.planes = 2 * C * N;
        float rm[C] = {0.1f, 0, -0.2f}, rv[C] = {1, 1, 1}, rm2[C], rv2[C], sm[C], si[C], sm2[C],
              si2[C], dg[C], db[C], dg2[C], db2[C];
        memcpy(rm2, rm, sizeof rm), memcpy(rv2, rv, sizeof rv);
        float y[C * N * H * W], y2[2 * C * N * H * W], dx[C * N * H * W], dx2[2 * C * N * H * W];
        float py[C * N * H * W], py2[2 * C * N * H * W];
        int32_t idx[C * N * H * W], idx2[2 * C * N * H * W];
        size_t pn = (size_t)C * N * pd.ho * pd.wo;
        /* the duplicated batch, unsynchronised; then one copy, synchronised with its twin */
        bn_train_op(be, act, C, m2, x2, dy2, gamma, beta, rm2, rv2, sm2, si2, pool ? py2 : y2,
                    dx2, dg2, db2, &pd2, idx2);
        sync_seen seen = {0, 0, 0};
        vt_backend_cpu_set_bn_sync(be, double_sums, &seen);
        bn_train_op(be, act, C, m, x, dy, gamma, beta, rm, rv, sm, si, pool ? py : y, dx, dg, db,
                    &pd, idx);
        if (pool) /* the pooled outputs and argmax of the first copy: its planes */
            for (int c = 0; c < C; c++) {
                size_t per = pn / C;
                expect_close(py + c * per, py2 + c * 2 * per, per, 1e-5, "sync pooled output");
                ck_assert_int_eq(memcmp(idx + c * per, idx2 + c * 2 * per, per * 4), 0);
            }
        vt_backend_cpu_set_bn_sync(be, NULL, NULL);
        ck_assert_msg(seen.fwd == 1 && seen.bwd == 1 && seen.channels == C,
                      "act %d: the hook ran %d forward, %d backward, for %d channels", act,
                      seen.fwd, seen.bwd, seen.channels);
        for (int c = 0; c < C; c++) {
            if (!pool) expect_close(y + c * m, y2 + c * m2, m, 1e-5, "sync output");
            expect_close(dx + c * m, dx2 + c * m2, m, 1e-5, "sync dx");
        }
        expect_close(sm, sm2, C, 1e-6, "sync mean");
        expect_close(si, si2, C, 1e-5, "sync invstd");
        expect_close(rm, rm2, C, 1e-6, "sync running mean");
        expect_close(rv, rv2, C, 1e-5, "sync running var (unbiased over both)");
        for (int c = 0; c < C; c++) dg[c] *= 2, db[c] *= 2;
        expect_close(dg, dg2, C, 1e-5, "sync dgamma (this process's, half)");
        expect_close(db, db2, C, 1e-5, "sync dbeta");
    }
    /* values far from the running mean (0) against their spread: the synced statistics keep
     * the unsynced op's precision (a hook that changes nothing) */
    {
        float xo[C * N * H * W], rmA[C] = {0}, rvA[C] = {1, 1, 1}, rmB[C] = {0}, rvB[C] = {1, 1, 1};
        float smA[C], siA[C], smB[C], siB[C], yA[C * N * H * W], yB[C * N * H * W];
        for (size_t i = 0; i < n; i++) xo[i] = 3000.0f + x[i];
        ck_assert_int_eq(o->bn_forward_train(be, C, m, xo, gamma, beta, 1e-5f, 0.1f, rmA, rvA,
                                             smA, siA, yA), VT_OK);
        vt_backend_cpu_set_bn_sync(be, same_sums, NULL);
        ck_assert_int_eq(o->bn_forward_train(be, C, m, xo, gamma, beta, 1e-5f, 0.1f, rmB, rvB,
                                             smB, siB, yB), VT_OK);
        vt_backend_cpu_set_bn_sync(be, NULL, NULL);
        for (int c = 0; c < C; c++)
            ck_assert_msg(fabs(siB[c] / siA[c] - 1) < 1e-4, "synced invstd %.9g vs %.9g at an "
                          "offset of 3000", (double)siB[c], (double)siA[c]);
        expect_close(yB, yA, n, 1e-3, "synced BN output at an offset of 3000");
    }
    /* the Dice loss's hook: sums doubled as by a twin process, the gradient weighted by 2 (the
     * twin's share): the loss of the doubled pixels, and twice their gradient */
    {
        enum { K = 3, P = 40 };
        float probs[K * P], probs2[K * 2 * P], dz[K * P] = {0}, dz2[K * 2 * P] = {0}, l1, l2;
        int32_t lab[P], lab2[2 * P];
        fill_f(probs, K * P, 11);
        for (int i = 0; i < P; i++) {
            float t = 0;
            for (int k = 0; k < K; k++) t += probs[k * P + i] = fabsf(probs[k * P + i]) + 0.1f;
            for (int k = 0; k < K; k++) probs[k * P + i] /= t;
            lab[i] = i % 7 == 0 ? -1 : i % K;
        }
        for (int k = 0; k < K; k++)
            for (int c = 0; c < 2; c++) memcpy(probs2 + k * 2 * P + c * P, probs + k * P, P * 4);
        for (int c = 0; c < 2; c++) memcpy(lab2 + c * P, lab, sizeof lab);
        ck_assert_int_eq(o->softmax_dice(be, K, 2 * P, probs2, lab2, 0.7f, &l2, dz2), VT_OK);
        vt_backend_cpu_set_loss_sync(be, twin_loss, NULL);
        ck_assert_int_eq(o->softmax_dice(be, K, P, probs, lab, 0.7f, &l1, dz), VT_OK);
        vt_backend_cpu_set_loss_sync(be, NULL, NULL);
        ck_assert_msg(fabsf(l1 - l2) <= 1e-6f, "synced Dice loss %.9g vs %.9g", l1, l2);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < P; i++) dz2[k * 2 * P + i] *= 2;
        for (int k = 0; k < K; k++)
            expect_close(dz + k * P, dz2 + k * 2 * P, P, 1e-5, "synced Dice gradient");
    }
    /* the hook's error fails the op, named */
    vt_backend_cpu_set_bn_sync(be, failing_sync, NULL);
    float rm[C] = {0}, rv[C] = {1, 1, 1}, sm[C], si[C], y[C * N * H * W];
    ck_assert_int_eq(o->bn_forward_train(be, C, m, x, gamma, beta, 1e-5f, 0.1f, rm, rv, sm, si,
                                         y), VT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "ranks are gone"));
    vt_backend_cpu_set_bn_sync(be, NULL, NULL);
    vt_backend_destroy(be);
}
END_TEST

START_TEST(test_assign_grads_and_pool_fusion)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    const vt_backend_ops *o = be->ops;
    static const int shapes[][3] = {{3, 28, 28}, {4, 13, 11}, {2, 1, 6}}; /* images, h, w */
    for (int sh = 0; sh < 3; sh++) {
        int C = 5, N = shapes[sh][0], h = shapes[sh][1], w = shapes[sh][2];
        size_t m = (size_t)N * h * w, n = C * m;
        float *x = malloc(n * 4), *dy = malloc(n * 4), *a = malloc(n * 4), *z = malloc(n * 4);
        float *y = malloc(n * 4), *py = malloc(n * 4), *py2 = malloc(n * 4);
        int32_t *idx = malloc(n * 4), *idx2 = malloc(n * 4);
        float gamma[5] = {1.5f, -0.5f, 2.0f, 1, 0.7f}, beta[5] = {0.25f, 1.0f, -3.0f, 0, -0.1f};
        float rm[5] = {0}, rv[5] = {1, 1, 1, 1, 1}, rm2[5] = {0}, rv2[5] = {1, 1, 1, 1, 1};
        float sm[5], si[5], sm2[5], si2[5], dg[5], db[5], dg2[5], db2[5];
        fill_f(x, n, 7 + sh);
        fill_f(dy, n, 99 + sh);
        for (int act = 0; act < 3; act++) {
            vt_act A = act == 0 ? VT_ACT_NONE : act == 1 ? VT_ACT_RELU : VT_ACT_SILU;
            ck_assert_int_eq(o->bn_forward_train(be, C, m, x, gamma, beta, 1e-5f, 0.1f, rm, rv,
                                                 sm, si, y), VT_OK);
            for (size_t i = 0; i < n; i++) a[i] = NAN, z[i] = 0.0f;
            if (A == VT_ACT_NONE) {
                ck_assert_int_eq(o->bn_backward(be, C, m, x, gamma, sm, si, dy, a, 0, dg, db),
                                 VT_OK);
                ck_assert_int_eq(o->bn_backward(be, C, m, x, gamma, sm, si, dy, z, 1, dg2, db2),
                                 VT_OK);
            } else {
                ck_assert_int_eq(o->bn_act_forward_train(be, A, C, m, x, gamma, beta, 1e-5f, 0.1f,
                                                         rm, rv, sm, si, y), VT_OK);
                ck_assert_int_eq(o->bn_act_backward(be, A, C, m, x, y, gamma, beta, sm, si, dy, a,
                                                    0, dg, db), VT_OK);
                ck_assert_int_eq(o->bn_act_backward(be, A, C, m, x, y, gamma, beta, sm, si, dy, z,
                                                    1, dg2, db2), VT_OK);
                /* ReLU's mask, recomputed from x, is the output's: dL/dx is 0 where y is 0
                 * up to the BN's own terms, so compare with BN backward of dy masked by y */
                if (A == VT_ACT_RELU) {
                    float *g = malloc(n * 4), *r = malloc(n * 4);
                    for (size_t i = 0; i < n; i++) g[i] = y[i] > 0 ? dy[i] : 0.0f, r[i] = 0;
                    ck_assert_int_eq(o->bn_backward(be, C, m, x, gamma, sm, si, g, r, 1, dg2,
                                                    db2), VT_OK);
                    expect_same(a, r, n, "BN + ReLU backward vs BN backward of the masked dy");
                    free(g), free(r);
                }
            }
            expect_same(a, z, n, A == VT_ACT_NONE ? "bn_backward" : "bn_act_backward");
            if (A == VT_ACT_NONE || h < 2 || w < 2) continue;
            /* the fused pool: the same pooled values, argmax and statistics */
            vt_pool_desc d = {C * N, h, w, h / 2, w / 2, 2, 2, 0};
            ck_assert_int_eq(o->bn_act_forward_train(be, A, C, m, x, gamma, beta, 1e-5f, 0.1f,
                                                     rm, rv, sm, si, y), VT_OK);
            ck_assert_int_eq(o->maxpool_forward(be, &d, y, py, idx), VT_OK);
            ck_assert_int_eq(o->bn_act_pool_forward_train(be, A, C, m, x, gamma, beta, 1e-5f,
                                                          0.1f, rm2, rv2, sm2, si2, &d, py2,
                                                          idx2), VT_OK);
            size_t pn = (size_t)C * N * d.ho * d.wo;
            expect_same(py, py2, pn, "fused pool output");
            ck_assert_int_eq(memcmp(idx, idx2, pn * 4), 0);
            expect_same(sm, sm2, C, "fused pool mean");
            expect_same(si, si2, C, "fused pool invstd");
            /* and its backward: the pool's backward then BN + activation's, bit for bit */
            float *pdy = malloc(pn * 4), *ga = malloc(n * 4);
            fill_f(pdy, pn, 5 + sh);
            ck_assert_int_eq(o->maxpool_backward(be, &d, idx, pdy, ga, 0), VT_OK);
            for (size_t i = 0; i < n; i++) a[i] = NAN, z[i] = NAN;
            ck_assert_int_eq(o->bn_act_backward(be, A, C, m, x, y, gamma, beta, sm, si, ga, z, 0,
                                                dg, db), VT_OK);
            ck_assert_int_eq(o->bn_act_pool_backward(be, A, C, m, x, gamma, beta, sm, si, &d,
                                                     idx, pdy, a, 0, dg2, db2), VT_OK);
            expect_same(a, z, n, "bn_act_pool_backward dx");
            expect_same(dg, dg2, C, "bn_act_pool_backward dgamma");
            expect_same(db, db2, C, "bn_act_pool_backward dbeta");
            free(pdy), free(ga);
            vt_pool_desc d3 = {C * N, h, w, (h - 3) / 2 + 1, (w - 3) / 2 + 1, 3, 2, 0};
            ck_assert_int_eq(o->bn_act_pool_forward_train(be, A, C, m, x, gamma, beta, 1e-5f,
                                                          0.1f, rm2, rv2, sm2, si2, &d3, py2,
                                                          idx2), VT_ERR_INVALID_ARGUMENT);
            ck_assert_int_eq(o->bn_act_pool_backward(be, A, C, m, x, gamma, beta, sm, si, &d3,
                                                     idx, py, a, 0, dg2, db2),
                             VT_ERR_INVALID_ARGUMENT);
            /* pool backward: assigned vs added to zeros, fast and general windows */
            for (int k = 2; k <= 3; k++) {
                vt_pool_desc pd = k == 2 ? d : d3;
                if (pd.ho < 1 || pd.wo < 1) continue;
                ck_assert_int_eq(o->maxpool_forward(be, &pd, y, py, idx), VT_OK);
                for (size_t i = 0; i < n; i++) a[i] = NAN, z[i] = 0.0f;
                ck_assert_int_eq(o->maxpool_backward(be, &pd, idx, dy, a, 0), VT_OK);
                ck_assert_int_eq(o->maxpool_backward(be, &pd, idx, dy, z, 1), VT_OK);
                expect_same(a, z, n, k == 2 ? "maxpool 2x2 backward" : "maxpool 3x3 backward");
            }
        }
        for (size_t i = 0; i < n; i++) a[i] = NAN, z[i] = 0.0f;
        ck_assert_int_eq(o->gap_backward(be, (size_t)C * N, (size_t)h * w, dy, a, 0), VT_OK);
        ck_assert_int_eq(o->gap_backward(be, (size_t)C * N, (size_t)h * w, dy, z, 1), VT_OK);
        expect_same(a, z, n, "gap_backward");
        free(x), free(dy), free(a), free(z), free(y), free(py), free(py2), free(idx), free(idx2);
    }
    vt_backend_destroy(be);
}
END_TEST

/* Batch norm's and the 2x2 pool's loops give the same bits in the baseline build and in the
 * widest this CPU runs (AVX2 on x86-64 where allowed): plain BN, BN + ReLU, BN + ReLU + pool,
 * forward (outputs, saved and running statistics) and backward (dx assigned and added, dgamma,
 * dbeta), on channels of a block's remainder and of several blocks. */
typedef struct {
    float *y, *dx, *dxa, *py, sm[4], si[4], rm[4], rv[4], dg[4], db[4];
    int32_t *idx;
} bn_run_out;

static void bn_runs(vt_backend *be, vt_act A, int C, int N, int h, int w, const float *x,
                    const float *dy, const float *pdy, bn_run_out *r)
{
    const vt_backend_ops *o = be->ops;
    size_t m = (size_t)N * h * w, n = (size_t)C * m;
    float gamma[4] = {1.5f, -0.5f, 2.0f, 0.7f}, beta[4] = {0.25f, 1.0f, -3.0f, -0.1f};
    for (int c = 0; c < C; c++) r->rm[c] = 0.1f * (float)c, r->rv[c] = 1.0f;
    for (size_t i = 0; i < n; i++) r->dxa[i] = 0.5f;
    if (A == VT_ACT_NONE) {
        ck_assert_int_eq(o->bn_forward_train(be, C, m, x, gamma, beta, 1e-5f, 0.1f, r->rm, r->rv,
                                             r->sm, r->si, r->y), VT_OK);
        ck_assert_int_eq(o->bn_backward(be, C, m, x, gamma, r->sm, r->si, dy, r->dx, 0, r->dg,
                                        r->db), VT_OK);
        ck_assert_int_eq(o->bn_backward(be, C, m, x, gamma, r->sm, r->si, dy, r->dxa, 1, r->dg,
                                        r->db), VT_OK);
        return;
    }
    ck_assert_int_eq(o->bn_act_forward_train(be, A, C, m, x, gamma, beta, 1e-5f, 0.1f, r->rm,
                                             r->rv, r->sm, r->si, r->y), VT_OK);
    ck_assert_int_eq(o->bn_act_backward(be, A, C, m, x, r->y, gamma, beta, r->sm, r->si, dy,
                                        r->dxa, 1, r->dg, r->db), VT_OK);
    vt_pool_desc d = {C * N, h, w, h / 2, w / 2, 2, 2, 0};
    ck_assert_int_eq(o->bn_act_pool_forward_train(be, A, C, m, x, gamma, beta, 1e-5f, 0.1f,
                                                  r->rm, r->rv, r->sm, r->si, &d, r->py,
                                                  r->idx), VT_OK);
    ck_assert_int_eq(o->bn_act_pool_backward(be, A, C, m, x, gamma, beta, r->sm, r->si, &d,
                                             r->idx, pdy, r->dx, 0, r->dg, r->db), VT_OK);
}

START_TEST(test_bn_kernels_same_bits)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    cpu_backend *cb = (cpu_backend *)be;
    const vt_cpu_vec_kernels *widest = cb->k;
    /* vt_cpu_kernels says which build runs */
    char says[32];
    snprintf(says, sizeof says, "; element-wise: %s", widest->name);
    ck_assert_ptr_nonnull(strstr(vt_cpu_kernels(), says));
    ck_assert_str_eq(vt_cpu_vec_kernels_baseline()->name, "baseline");
    ck_assert_str_eq(widest->name, vt_cpu_x86_level() >= 2 ? "AVX2" : "baseline");
    static const int shapes[][3] = {{3, 13, 11}, {5, 28, 28}, {2, 33, 65}}; /* images, h, w */
    for (int sh = 0; sh < 3; sh++) {
        int C = 4, N = shapes[sh][0], h = shapes[sh][1], w = shapes[sh][2];
        size_t n = (size_t)C * N * h * w, pn = (size_t)C * N * (h / 2) * (w / 2);
        float *x = malloc(n * 4), *dy = malloc(n * 4), *pdy = malloc(pn * 4);
        fill_f(x, n, 3 + sh);
        fill_f(dy, n, 17 + sh);
        fill_f(pdy, pn, 29 + sh);
        for (int act = 0; act < 2; act++) {
            vt_act A = act ? VT_ACT_RELU : VT_ACT_NONE;
            bn_run_out r[2];
            for (int k = 0; k < 2; k++) {
                r[k].y = malloc(n * 4), r[k].dx = malloc(n * 4), r[k].dxa = malloc(n * 4);
                r[k].py = malloc(pn * 4), r[k].idx = malloc(pn * 4);
                memset(r[k].py, 0, pn * 4), memset(r[k].idx, 0, pn * 4);
                cb->k = k ? widest : vt_cpu_vec_kernels_baseline();
                bn_runs(be, A, C, N, h, w, x, dy, pdy, &r[k]);
            }
            cb->k = widest;
            expect_same(r[0].y, r[1].y, n, "BN output");
            expect_same(r[0].dxa, r[1].dxa, n, "BN dx added");
            expect_same(r[0].sm, r[1].sm, (size_t)C, "BN mean");
            expect_same(r[0].si, r[1].si, (size_t)C, "BN invstd");
            expect_same(r[0].rm, r[1].rm, (size_t)C, "BN running mean");
            expect_same(r[0].rv, r[1].rv, (size_t)C, "BN running var");
            expect_same(r[0].dg, r[1].dg, (size_t)C, "BN dgamma");
            expect_same(r[0].db, r[1].db, (size_t)C, "BN dbeta");
            expect_same(r[0].dx, r[1].dx, n, act ? "BN + ReLU + pool dx" : "BN dx");
            expect_same(r[0].py, r[1].py, pn, "pooled output");
            ck_assert_int_eq(memcmp(r[0].idx, r[1].idx, pn * 4), 0);
            for (int k = 0; k < 2; k++)
                free(r[k].y), free(r[k].dx), free(r[k].dxa), free(r[k].py), free(r[k].idx);
        }
        free(x), free(dy), free(pdy);
    }
    vt_backend_destroy(be);
}
END_TEST

/* The device layer: specs, the CPU's backend and what it does not offer. */
START_TEST(test_device_layer)
{
    static const struct {
        const char *spec;
        int ok, gpu, index;
        const char *name;
    } cases[] = {
        {"cpu", 1, 0, 0, "cpu"},      {"cuda", 1, 1, 0, "cuda:0"}, {"cuda:3", 1, 1, 3, "cuda:3"},
        {"2", 1, 1, 2, "cuda:2"},     {"255", 1, 1, 255, "cuda:255"}, {"256", 0, 0, 0, NULL},
        {"tpu", 0, 0, 0, NULL},       {"cuda:", 0, 0, 0, NULL},    {"cuda:x", 0, 0, 0, NULL},
        {"-1", 0, 0, 0, NULL},        {"cpu:0", 0, 0, 0, NULL},    {"cudax", 0, 0, 0, NULL},
        {"", 0, 0, 0, NULL},          {"cuda:+1", 0, 0, 0, NULL},  {"1x", 0, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vt_device d = {NULL, -1};
        vt_status st = vt_device_parse(cases[i].spec, &d);
        if (!cases[i].ok) {
            ck_assert_msg(st == VT_ERR_OPTION_VALUE && strstr(vt_last_error(), "expects"),
                          "'%s' is refused: %d %s", cases[i].spec, st, vt_last_error());
            continue;
        }
        ck_assert_msg(st == VT_OK, "'%s' parses: %s", cases[i].spec, vt_last_error());
        char name[32];
        vt_device_name(&d, name, sizeof name);
        ck_assert_msg(vt_device_is_gpu(&d) == cases[i].gpu && d.index == cases[i].index &&
                      strcmp(name, cases[i].name) == 0, "'%s': gpu %d index %d name %s",
                      cases[i].spec, vt_device_is_gpu(&d), d.index, name);
    }
    vt_device cpu;
    ck_assert_int_eq(vt_device_parse("cpu", &cpu), VT_OK);
    vt_backend *b = NULL;
    ck_assert_int_eq(vt_device_backend(&cpu, VT_DEVICE_PRECISION_FP32, &b), VT_OK);
    ck_assert_str_eq(b->ops->name, "cpu");
    ck_assert_int_eq(b->ops->host_memory, 1);
    size_t held = 1, peak = 1;
    ck_assert_int_eq(vt_device_memory(&cpu, b, &held, &peak), 0);
    ck_assert_msg(held == 0 && peak == 0, "the CPU counts no device memory");
    ck_assert_ptr_null(vt_device_host_alloc(&cpu, 64));
    ck_assert_msg(strstr(vt_last_error(), "no pinned host memory"), "%s", vt_last_error());
    vt_device_host_free(&cpu, NULL);
    vt_backend_destroy(b);
}
END_TEST

/* The instance-mask loss (mask_loss_math.h): its value against a direct double loop, its
 * gradients against central differences, and the box crop (pixels outside the box get none). */
static double mask_loss_ref(const vt_mask_loss_desc *d, const float *coef, const float *proto,
                            const int32_t *as, const float *gt, const uint16_t *im)
{
    int A = d->anchors, HW = d->mh * d->mw, P = 0;
    for (int c = 0; c < d->n * A; c++) P += as[c] >= 0;
    double L = 0;
    for (int i = 0; i < d->n; i++)
        for (int a = 0; a < A; a++) {
            int k = as[i * A + a];
            if (k < 0) continue;
            const float *bx = gt + (i * d->max_gt + k) * 5 + 1;
            double l = 0;
            int area = 0;
            for (int y = 0; y < d->mh; y++)
                for (int x = 0; x < d->mw; x++) {
                    double cx = (x + 0.5) * d->mstride, cy = (y + 0.5) * d->mstride;
                    if (cx < bx[0] || cx >= bx[2] || cy < bx[1] || cy >= bx[3]) continue;
                    area++;
                    double z = 0;
                    for (int c = 0; c < d->k; c++)
                        z += (double)coef[(c * d->n + i) * A + a] * proto[(c * d->n + i) * HW + y * d->mw + x];
                    double t = im[i * HW + y * d->mw + x] == k + 1;
                    l += (z > 0 ? z : 0) - z * t + log1p(exp(-fabs(z)));
                }
            if (area) L += l / area;
        }
    return d->gain * L / (P > 1 ? P : 1);
}

START_TEST(test_mask_loss)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    enum { N = 2, K = 3, GH = 3, GW = 3, MG = 2, MH = 6, MW = 6 };
    int A = GH * GW;
    vt_mask_loss_desc d = {.n = N, .k = K, .anchors = A, .mh = MH, .mw = MW, .mstride = 4.0f,
                           .max_gt = MG, .gain = 1.5f};
    float coef[K * N * GH * GW], proto[K * N * MH * MW], gt[N * MG * 5];
    float dcoef[K * N * GH * GW], dproto[K * N * MH * MW], loss[2];
    int32_t as[N * GH * GW];
    uint16_t im[N * MH * MW];
    vt_rng r;
    vt_rng_seed(&r, 7);
    for (size_t i = 0; i < sizeof coef / sizeof *coef; i++) coef[i] = (float)(2 * vt_rng_uniform(&r) - 1);
    for (size_t i = 0; i < sizeof proto / sizeof *proto; i++) proto[i] = (float)(2 * vt_rng_uniform(&r) - 1);
    for (int i = 0; i < N * GH * GW; i++) as[i] = vt_rng_uniform(&r) < 0.5 ? -1 : i % MG;
    for (int i = 0; i < N * MH * MW; i++) im[i] = (uint16_t)(i % 3);
    /* boxes of 1..4 mask pixels a side, one reaching past the grid */
    const float boxes[N * MG][4] = {{1, 2, 13, 9}, {4, 4, 30, 30}, {0, 0, 8, 24}, {9, 3, 23, 17}};
    for (int j = 0; j < N * MG; j++) {
        gt[j * 5] = 0;
        memcpy(gt + j * 5 + 1, boxes[j], sizeof boxes[j]);
    }
    ck_assert_int_eq(be->ops->mask_loss(be, &d, coef, proto, as, gt, im, loss, dcoef, dproto), VT_OK);
    double ref = mask_loss_ref(&d, coef, proto, as, gt, im);
    ck_assert_msg(fabs(loss[0] - ref) <= 1e-5 * (1 + fabs(ref)), "mask loss %g, reference %g",
                  (double)loss[0], ref);
    int P = 0;
    for (int i = 0; i < N * A; i++) P += as[i] >= 0;
    ck_assert_int_eq((int)loss[1], P);
    float *vars[2] = {coef, proto}, *grads[2] = {dcoef, dproto};
    size_t counts[2] = {sizeof coef / sizeof *coef, sizeof proto / sizeof *proto};
    for (int v = 0; v < 2; v++)
        for (size_t i = 0; i < counts[v]; i++) {
            float keep = vars[v][i], h = 1e-3f;
            vars[v][i] = keep + h;
            double lp = mask_loss_ref(&d, coef, proto, as, gt, im);
            vars[v][i] = keep - h;
            double lm = mask_loss_ref(&d, coef, proto, as, gt, im);
            vars[v][i] = keep;
            double num = (lp - lm) / (2.0 * h);
            ck_assert_msg(fabs(num - grads[v][i]) <= 2e-4 + 1e-3 * fabs(num),
                          "%s gradient %zu: %g, numerically %g", v ? "prototype" : "coefficient",
                          i, (double)grads[v][i], num);
        }
    /* without gradients: the same loss */
    float loss2[2];
    ck_assert_int_eq(be->ops->mask_loss(be, &d, coef, proto, as, gt, im, loss2, NULL, NULL), VT_OK);
    ck_assert_float_eq(loss2[0], loss[0]);
    as[0] = MG; /* a ground truth that does not exist */
    ck_assert_int_eq(be->ops->mask_loss(be, &d, coef, proto, as, gt, im, loss2, NULL, NULL),
                     VT_ERR_INVALID_ARGUMENT);
    vt_backend_destroy(be);
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
    tcase_add_test(tc, test_gemm_packed_a);
    tcase_add_test(tc, test_gemm_overread);
    tcase_add_loop_test(tc, test_gemm_paths, 0, (int)(sizeof gemm_paths / sizeof gemm_paths[0]));
    tcase_add_test(tc, test_gemm_auto);
    tcase_add_test(tc, test_gemm_blis_packing);
    tcase_add_test(tc, test_conv_tiles);
    tcase_add_test(tc, test_conv_winograd);
    tcase_add_test(tc, test_conv_winograd_bf16);
    tcase_add_test(tc, test_winograd_bf16_rule);
    tcase_add_test(tc, test_rows2d);
    tcase_add_test(tc, test_ops_table);
    tcase_add_test(tc, test_silu_accuracy);
    tcase_add_test(tc, test_assign_grads_and_pool_fusion);
    tcase_add_test(tc, test_bn_kernels_same_bits);
    tcase_add_test(tc, test_bn_sync);
    tcase_add_test(tc, test_device_layer);
    tcase_add_test(tc, test_mask_loss);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
