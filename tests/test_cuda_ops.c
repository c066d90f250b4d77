/* Every CUDA backend op against the CPU reference backend on random inputs.
 *
 * Each op runs on both backends with identical inputs; outputs are compared with the relative
 * error ||gpu - cpu|| / ||cpu||.  GPU output buffers are filled with NaN first (accumulation
 * targets get the same random contents on both sides instead), so an element the GPU fails to
 * write shows up as a non-finite value.  Shapes are deliberately odd (sizes not multiples of 32,
 * strides, padding, groups, depthwise, batch chunking).
 *
 * Check runs in no-fork mode: CUDA cannot be used in a child forked after the parent has
 * initialised it, and one context for all cases keeps the device time short.  Exits 77 (meson's
 * "skipped") when the build has no CUDA or the machine has no GPU. */
#include "vt_config.h"

#include <stdio.h>

#if VT_HAVE_CUDA
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda_device.h"
#include "backend/gemm.h" /* vt_bf16_round: the CPU's bf16 rounding, bf16_math.h's */
#include "testutil.h"

#define TOL_FP32 1e-5
#define TOL_TF32 2e-3
/* precision=bf16 (experimental): against the CPU's fp32 on the raw operands, 1e-2 relative L2
 * (bf16 keeps 8 mantissa bits: each operand is off by at most 2^-9 = 2e-3 relative, so a
 * product of two by at most about 4e-3, and a sum of random products by less); against the
 * CPU's fp32 on the same bf16-rounded operands, 2e-5: each product of two bf16 is exact in fp32,
 * so only the summation order differs (1e-5 for fp32 above), doubled for cuBLAS's bf16
 * kernels, which may split k differently. */
#define TOL_BF16 1e-2
#define TOL_BF16_SAME_OPERANDS 2e-5

static vt_backend *B[2]; /* [0] CPU reference, [1] CUDA */
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static float urand(float lo, float hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * (1.0 / 16777216.0));
}

#define OK(call)                                                                                 \
    do {                                                                                         \
        vt_status st_ = (call);                                                                  \
        ck_assert_msg(st_ == VT_OK, "%s failed (%d): %s", #call, (int)st_, vt_last_error());     \
    } while (0)

/* Run `call` on both backends; inside it `b` is the backend and `be` its index for T.d[be]. */
#define BOTH(call)                                                                               \
    for (int be = 0; be < 2; be++) {                                                             \
        vt_backend *b = B[be];                                                                   \
        OK(call);                                                                                \
    }

/* A buffer that exists on both backends. */
typedef struct {
    size_t n, bytes;
    void *d[2];
} tbuf;

static tbuf tb_alloc(size_t n, size_t elem)
{
    tbuf t = {n, n * elem, {NULL, NULL}};
    for (int be = 0; be < 2; be++) {
        t.d[be] = B[be]->ops->alloc(B[be], t.bytes ? t.bytes : 4);
        ck_assert_msg(t.d[be] != NULL, "alloc %zu bytes: %s", t.bytes, vt_last_error());
    }
    return t;
}

static void tb_upload(tbuf *t, const void *host)
{
    for (int be = 0; be < 2; be++) OK(B[be]->ops->upload(B[be], t->d[be], host, t->bytes));
}

/* Same random values on both sides: inputs and accumulation targets. */
static tbuf tb_rand(size_t n, float lo, float hi)
{
    tbuf t = tb_alloc(n, sizeof(float));
    float *h = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; i < n; i++) h[i] = urand(lo, hi);
    tb_upload(&t, h);
    free(h);
    return t;
}

/* test_gemm_bf16 / test_conv_bf16 (experimental precision=bf16 on the GPU): when set, the
 * products' operands (made by tb_operand) reach the CPU reference rounded to bf16 as the GPU
 * rounds them, and the GPU its raw values; the CPU's fp32 products of the rounded operands are
 * then what the GPU's bf16 products with fp32 accumulation compute, up to the summation order. */
static int round_cpu_operands;

/* An operand of a product: tb_rand's values (the same draws), rounded to bf16 on the CPU side
 * when round_cpu_operands is set. */
static tbuf tb_operand(size_t n, float lo, float hi)
{
    tbuf t = tb_alloc(n, sizeof(float));
    float *h = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; i < n; i++) h[i] = urand(lo, hi);
    OK(B[1]->ops->upload(B[1], t.d[1], h, t.bytes));
    if (round_cpu_operands)
        for (size_t i = 0; i < n; i++) h[i] = vt_bf16_to_float(vt_bf16_round(h[i]));
    OK(B[0]->ops->upload(B[0], t.d[0], h, t.bytes));
    free(h);
    return t;
}

/* An output: zeros on the CPU, NaN on the GPU. */
static tbuf tb_out(size_t n)
{
    tbuf t = tb_alloc(n, sizeof(float));
    OK(B[0]->ops->fill(B[0], t.d[0], n, 0.0f));
    OK(B[1]->ops->fill(B[1], t.d[1], n, NAN));
    return t;
}

static void tb_free(tbuf *t)
{
    for (int be = 0; be < 2; be++) B[be]->ops->free(B[be], t->d[be]);
    t->d[0] = t->d[1] = NULL;
}

static void *tb_get(const tbuf *t, int be)
{
    void *h = malloc(t->bytes + 4);
    OK(B[be]->ops->download(B[be], h, t->d[be], t->bytes));
    return h;
}

/* Relative error of the GPU copy against the CPU copy; infinite if the GPU left a non-finite
 * value where the CPU has a finite one. */
static double tb_relerr(const tbuf *t, size_t *bad)
{
    float *c = tb_get(t, 0), *g = tb_get(t, 1);
    double num = 0, den = 0;
    *bad = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (isfinite(c[i]) && !isfinite(g[i])) {
            if (++*bad == 1) fprintf(stderr, "  first bad element %zu: cpu %g gpu %g\n", i,
                                     (double)c[i], (double)g[i]);
            continue;
        }
        double dd = (double)g[i] - c[i];
        num += dd * dd;
        den += (double)c[i] * c[i];
    }
    free(c);
    free(g);
    if (*bad) return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void expect_close(const tbuf *t, double tol, const char *what)
{
    size_t bad;
    double e = tb_relerr(t, &bad);
    ck_assert_msg(e <= tol, "%s: relative error %.3g > %.1g (%zu unwritten/non-finite of %zu)",
                  what, e, tol, bad, t->n);
}

static void expect_equal_bytes(const tbuf *t, const char *what)
{
    void *c = tb_get(t, 0), *g = tb_get(t, 1);
    ck_assert_msg(memcmp(c, g, t->bytes) == 0, "%s: CPU and GPU differ", what);
    free(c);
    free(g);
}

static void set_tf32(int on)
{
    vt_backend_cuda_set_fp32(B[1], !on);
}

/* ---- memory and transfers ------------------------------------------------------------------ */

START_TEST(test_device_info)
{
    char name[128] = "";
    int ma = 0, mi = 0;
    size_t tot = 0, fr = 0;
    OK(vt_cuda_device_info(0, name, sizeof name, &ma, &mi, &tot, &fr));
    ck_assert_msg(name[0] != '\0', "device name is empty");
    ck_assert_msg(ma >= 8, "compute capability %d.%d", ma, mi);
    ck_assert_msg(tot > 0 && fr > 0 && fr <= tot, "memory total %zu free %zu", tot, fr);
    ck_assert_int_ne(vt_cuda_device_info(vt_cuda_device_count(), name, sizeof name, NULL, NULL,
                                         NULL, NULL), VT_OK);
    vt_backend *bad = NULL;
    ck_assert_int_eq(vt_backend_cuda_create(&bad, 999), VT_ERR_DEVICE);
    ck_assert_ptr_null(bad);
    ck_assert_str_eq(B[1]->ops->name, "cuda");
    ck_assert_int_eq(B[1]->ops->api_version, VT_BACKEND_API_VERSION);
    const char *missing = vt_backend_missing_op(B[1]->ops);
    ck_assert_msg(missing == NULL, "the CUDA backend has no %s op", missing);
}
END_TEST

START_TEST(test_oom_then_usable)
{
    size_t absurd = (size_t)1 << 50; /* 1 PiB */
    void *p = B[1]->ops->alloc(B[1], absurd);
    ck_assert_ptr_null(p);
    char want[32];
    snprintf(want, sizeof want, "%zu", absurd);
    ck_assert_msg(strstr(vt_last_error(), want) != NULL, "OOM message lacks the size: %s",
                  vt_last_error());
    ck_assert_msg(strstr(vt_last_error(), "out of memory") != NULL, "OOM message: %s",
                  vt_last_error());
    /* The backend must still work afterwards. */
    tbuf x = tb_rand(1000, -1, 1), y = tb_rand(1000, -1, 1);
    BOTH(b->ops->axpy(b, 1000, 0.5f, x.d[be], y.d[be]));
    OK(B[1]->ops->synchronize(B[1]));
    expect_close(&y, TOL_FP32, "axpy after OOM");
    tb_free(&x);
    tb_free(&y);
}
END_TEST

START_TEST(test_cache_reuse)
{
    vt_backend *g = B[1];
    void *a = g->ops->alloc(g, 123457);
    ck_assert_ptr_nonnull(a);
    size_t held0, peak0;
    vt_backend_cuda_memory(g, &held0, &peak0);
    g->ops->free(g, a);
    void *c = g->ops->alloc(g, 123000); /* same size class */
    size_t held1, peak1;
    vt_backend_cuda_memory(g, &held1, &peak1);
    /* Served from the cache (not necessarily the same block if others of the class are free). */
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(held0, held1);
    ck_assert_msg(((uintptr_t)c & 63) == 0, "allocation not 64-byte aligned");
    g->ops->free(g, c);
    g->ops->free(g, NULL);
}
END_TEST

START_TEST(test_fill_copy_transfer)
{
    size_t n = 100003;
    tbuf x = tb_rand(n, -3, 3), y = tb_out(n), z = tb_out(n);
    BOTH(b->ops->copy(b, y.d[be], x.d[be], n * sizeof(float)));
    expect_close(&y, 0.0, "copy");
    BOTH(b->ops->fill(b, z.d[be], n, 2.5f));
    expect_close(&z, 0.0, "fill");
    BOTH(b->ops->fill(b, z.d[be], n, 0.0f));
    expect_close(&z, 0.0, "fill 0");
    /* upload_rows: channel 1 of a 3 x 7 x 11 "NCHW" host array into rows 13 floats apart of a
     * buffer filled with -99 (the gaps must keep it on both). */
    float host[3 * 7 * 11];
    for (int i = 0; i < 3 * 7 * 11; i++) host[i] = (float)i * 0.25f - 7.0f;
    tbuf r = tb_alloc(7 * 13, sizeof(float));
    BOTH(b->ops->fill(b, r.d[be], 7 * 13, -99.0f));
    BOTH(b->ops->upload_rows(b, r.d[be], 13 * sizeof(float), host + 11, 3 * 11 * sizeof(float),
                             11 * sizeof(float), 7));
    expect_equal_bytes(&r, "upload_rows");
    float *got = tb_get(&r, 1);
    ck_assert_float_eq(got[13 * 6 + 10], host[6 * 33 + 11 + 10]);
    ck_assert_float_eq(got[13 * 6 + 11], -99.0f);
    free(got);
    tb_free(&r);
    tb_free(&x);
    tb_free(&y);
    tb_free(&z);
}
END_TEST

/* ---- GEMM ------------------------------------------------------------------------------------ */

static void gemm_case(int ta, int tb, int m, int n, int k, int pad, float alpha, float beta,
                      double tol)
{
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    size_t arows = ta ? k : m, brows = tb ? n : k;
    tbuf a = tb_operand(arows * lda, -1, 1), bm = tb_operand(brows * ldb, -1, 1);
    /* beta == 0 must not read C: poison it (only possible when C has no padding to compare). */
    tbuf c = (beta == 0.0f && pad == 0) ? tb_out((size_t)m * ldc) : tb_rand((size_t)m * ldc, -1, 1);
    BOTH(b->ops->gemm(b, ta, tb, m, n, k, alpha, a.d[be], lda, bm.d[be], ldb, beta, c.d[be], ldc));
    char what[96];
    snprintf(what, sizeof what, "gemm ta=%d tb=%d m=%d n=%d k=%d pad=%d beta=%g", ta, tb, m, n, k,
             pad, (double)beta);
    expect_close(&c, tol, what);
    tb_free(&a);
    tb_free(&bm);
    tb_free(&c);
}

static void gemm_all(double tol)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(ta, tb, 37, 53, 29, 0, 1.0f, 0.0f, tol);
            gemm_case(ta, tb, 65, 17, 131, 3, 0.7f, 0.3f, tol);
            gemm_case(ta, tb, 1, 300, 7, 0, -1.5f, 0.0f, tol);
        }
    gemm_case(0, 0, 256, 200, 512, 0, 1.0f, 1.0f, tol);
}

START_TEST(test_gemm_fp32)
{
    set_tf32(0);
    gemm_all(TOL_FP32);
}
END_TEST

START_TEST(test_gemm_tf32)
{
    set_tf32(1);
    gemm_all(TOL_TF32);
    set_tf32(0);
}
END_TEST

/* Experimental precision=bf16: operands converted to bf16 (backend_cuda.cu, "bf16 operands"). */
START_TEST(test_gemm_bf16)
{
    vt_backend_cuda_set_bf16(B[1], 1);
    gemm_all(TOL_BF16); /* against fp32 on the raw operands */
    round_cpu_operands = 1;
    gemm_all(TOL_BF16_SAME_OPERANDS); /* the GPU's rounding is the CPU's */
    round_cpu_operands = 0;
    vt_backend_cuda_set_bf16(B[1], 0);
}
END_TEST

START_TEST(test_gemm_k0)
{
    /* k = 0: C = beta*C, and beta = 0 overwrites NaN. */
    vt_backend *g = B[1];
    float *c = g->ops->alloc(g, 12 * sizeof(float)), h[12];
    OK(g->ops->fill(g, c, 12, NAN));
    OK(g->ops->gemm(g, 0, 0, 3, 4, 0, 1.0f, c, 1, c, 4, 0.0f, c, 4));
    OK(g->ops->download(g, h, c, sizeof h));
    for (int i = 0; i < 12; i++) ck_assert_msg(h[i] == 0.0f, "k=0 beta=0: C[%d]=%g", i, h[i]);
    g->ops->free(g, c);
}
END_TEST

/* ---- convolution ----------------------------------------------------------------------------- */

typedef struct {
    int n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, groups;
} conv_shape;

static const conv_shape conv_cases[] = {
    {2, 3, 13, 11, 5, 3, 3, 1, 1, 1, 1, 1},    /* plain 3x3 */
    {3, 4, 17, 15, 6, 3, 3, 2, 2, 1, 1, 2},    /* stride 2, groups 2 */
    {2, 8, 9, 10, 8, 3, 3, 1, 1, 1, 1, 8},     /* depthwise */
    {2, 6, 7, 10, 10, 1, 1, 1, 1, 0, 0, 1},    /* 1x1 direct (no im2col) */
    {2, 4, 7, 5, 6, 1, 1, 1, 1, 0, 0, 2},      /* 1x1 grouped direct */
    {1, 3, 33, 35, 33, 5, 3, 2, 1, 2, 1, 1},   /* non-square kernel, mixed stride/pad */
    {2, 16, 10, 11, 40, 1, 1, 2, 2, 0, 0, 1},  /* strided 1x1 (im2col path) */
    {4, 32, 19, 19, 48, 3, 3, 1, 1, 1, 1, 1},  /* K = 288 */
    {3, 6, 12, 12, 9, 3, 3, 2, 2, 0, 0, 3},    /* no padding, groups 3 */
    {5, 4, 6, 7, 4, 7, 7, 1, 1, 3, 3, 4},      /* kernel bigger than the map, depthwise */
    {2, 5, 14, 13, 7, 3, 3, 3, 3, 1, 1, 1},    /* stride 3 (col2im's generic stride) */
    {2, 3, 30, 29, 8, 7, 7, 2, 2, 3, 3, 1},    /* a ResNet stem: 7x7, stride 2, pad 3 */
};

static vt_conv_desc make_desc(const conv_shape *s)
{
    vt_conv_desc d = {s->n, s->cin, s->h, s->w, s->cout, 0, 0, s->kh, s->kw,
                      s->sh, s->sw, s->ph, s->pw, s->groups, 0};
    d.ho = (s->h + 2 * s->ph - s->kh) / s->sh + 1;
    d.wo = (s->w + 2 * s->pw - s->kw) / s->sw + 1;
    return d;
}

/* test_conv_cudnn: switch the GPU backends from TF32 to plain fp32 between conv_workspace and
 * the passes (the cuDNN plan is then made by the pass, within im2col's bytes). */
static int conv_flip_math;

static void conv_case(const vt_conv_desc *d, int with_bias, double tol, const char *tag)
{
    size_t xn = (size_t)d->cin * d->n * d->h * d->w, yn = (size_t)d->cout * d->n * d->ho * d->wo;
    size_t wn = (size_t)d->cout * (d->cin / d->groups) * d->kh * d->kw;
    tbuf x = tb_operand(xn, -1, 1), w = tb_operand(wn, -0.5f, 0.5f), bias = tb_rand(d->cout, -1, 1);
    tbuf y = tb_out(yn), dy = tb_operand(yn, -1, 1), dx = tb_rand(xn, -1, 1);
    tbuf dw = tb_out(wn), db = tb_out(d->cout);
    void *ws[2] = {NULL, NULL};
    for (int be = 0; be < 2; be++) {
        size_t bytes = B[be]->ops->conv_workspace(B[be], d);
        if (bytes) {
            ws[be] = B[be]->ops->alloc(B[be], bytes);
            ck_assert_ptr_nonnull(ws[be]);
        }
    }
    if (conv_flip_math)
        for (int be = 0; be < 2; be++) vt_backend_cuda_set_fp32(B[be], 1);
    BOTH(b->ops->conv_forward(b, d, x.d[be], w.d[be], with_bias ? bias.d[be] : NULL, y.d[be],
                              ws[be]));
    BOTH(b->ops->conv_backward(b, d, x.d[be], w.d[be], dy.d[be], dx.d[be], dw.d[be],
                               with_bias ? db.d[be] : NULL, ws[be]));
    char what[160];
    snprintf(what, sizeof what, "%s conv n=%d cin=%d %dx%d cout=%d k=%dx%d s=%dx%d p=%dx%d g=%d",
             tag, d->n, d->cin, d->h, d->w, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph, d->pw,
             d->groups);
    char w2[200];
    snprintf(w2, sizeof w2, "%s: y", what);
    expect_close(&y, tol, w2);
    snprintf(w2, sizeof w2, "%s: dx", what);
    expect_close(&dx, tol, w2);
    snprintf(w2, sizeof w2, "%s: dw", what);
    expect_close(&dw, tol, w2);
    if (with_bias) { /* db sums dy in fp32 (the CPU's dy rounded when round_cpu_operands) */
        snprintf(w2, sizeof w2, "%s: db", what);
        expect_close(&db, round_cpu_operands ? TOL_BF16 : TOL_FP32, w2);
    }
    for (int be = 0; be < 2; be++) B[be]->ops->free(B[be], ws[be]);
    tb_free(&x); tb_free(&w); tb_free(&bias); tb_free(&y);
    tb_free(&dy); tb_free(&dx); tb_free(&dw); tb_free(&db);
}

static void conv_all(double tol, const char *tag)
{
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
        vt_conv_desc d = make_desc(&conv_cases[i]);
        conv_case(&d, (int)(i % 3 != 2), tol, tag);
    }
}

/* test_conv_cudnn's: with VT_CUDNN=1 B[1]'s convolutions are cuDNN's */
static int on_cudnn(vt_backend *b);
#define TOL_CUDNN_FP32 1e-4
#define TOL_CUDNN_TF32 4e-3

START_TEST(test_conv_fp32)
{
    set_tf32(0);
    conv_all(on_cudnn(B[1]) ? TOL_CUDNN_FP32 : TOL_FP32, "fp32");
}
END_TEST

START_TEST(test_conv_tf32)
{
    set_tf32(1);
    conv_all(on_cudnn(B[1]) ? TOL_CUDNN_TF32 : TOL_TF32, "tf32");
    set_tf32(0);
}
END_TEST

START_TEST(test_conv_chunked)
{
    /* A tiny im2col cap forces one image per chunk, then a cap holding two and a half images. */
    set_tf32(0);
    const conv_shape s[] = {{5, 3, 11, 9, 7, 3, 3, 1, 1, 1, 1, 1}, {4, 6, 9, 9, 6, 3, 3, 2, 2, 1, 1, 3}};
    for (int i = 0; i < 2; i++) {
        vt_conv_desc d = make_desc(&s[i]);
        size_t per_image = (size_t)d.cin * d.kh * d.kw * d.ho * d.wo * sizeof(float);
        double tol = on_cudnn(B[1]) ? TOL_CUDNN_FP32 : TOL_FP32; /* cuDNN: no chunks */
        vt_backend_cuda_set_conv_cap(B[1], 1);
        conv_case(&d, 1, tol, "chunk=1");
        vt_backend_cuda_set_conv_cap(B[1], per_image * 5 / 2);
        conv_case(&d, 1, tol, "chunk=2");
    }
    vt_backend_cuda_set_conv_cap(B[1], 0);
}
END_TEST

/* Experimental precision=bf16: every pass on im2col + bf16 GEMMs (groups: strided-batched;
 * 1x1: the activations as operands; chunks: dy's rows NP apart converted whole). */
START_TEST(test_conv_bf16)
{
    vt_backend_cuda_set_bf16(B[1], 1);
    conv_all(TOL_BF16, "bf16");
    round_cpu_operands = 1;
    conv_all(TOL_BF16_SAME_OPERANDS, "bf16 same operands");
    const conv_shape s = {5, 3, 11, 9, 7, 3, 3, 1, 1, 1, 1, 1};
    vt_conv_desc d = make_desc(&s);
    size_t per_image = (size_t)d.cin * d.kh * d.kw * d.ho * d.wo * sizeof(float);
    vt_backend_cuda_set_conv_cap(B[1], per_image * 5 / 2);
    conv_case(&d, 1, TOL_BF16_SAME_OPERANDS, "bf16 chunk=2");
    vt_backend_cuda_set_conv_cap(B[1], 0);
    round_cpu_operands = 0;
    vt_backend_cuda_set_bf16(B[1], 0);
}
END_TEST

/* ---- cuDNN against im2col (experimental: VT_CUDNN=1) ------------------------------------------ */

/* Two more CUDA backends (main): DNN made with VT_CUDNN=1, whose convolutions go through cuDNN
 * where a plan has an algorithm, and REF made without it (im2col + cuBLAS, whatever the
 * environment says), its reference on the same GPU.  B[1] follows the environment: with
 * VT_CUDNN=1 (scripts/gpu-run.sh runs the suite so too) every other test checks cuDNN's
 * convolutions against the CPU, with the tolerances below in place of TOL_FP32/TOL_TF32.
 * Tolerances (relative L2 error, as everywhere here): fp32 1e-4, above the 1e-5 of a changed
 * summation order because cuDNN may pick Winograd or FFT algorithms, whose transforms round
 * more; TF32 4e-3, both sides rounding their operands to TF32 independently (each ~1e-3 from
 * fp32, TOL_TF32 being against the CPU's fp32).  When cuDNN did not load the test says why
 * and passes, unless VT_TEST_EXPECT_CUDNN=1 (scripts/gpu-run.sh sets it once it has found
 * libcudnn.so.9).  (TOL_CUDNN_FP32 and TOL_CUDNN_TF32 are defined above test_conv_fp32.) */
static vt_backend *DNN, *REF;

/* Does backend b run its convolutions through cuDNN? */
static int on_cudnn(vt_backend *b)
{
    vt_cuda_conv_info info;
    vt_backend_cuda_conv_info(b, &info);
    return info.cudnn;
}

static const conv_shape cudnn_cases[] = {
    {8, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1},   /* a ResNet 3x3 */
    {8, 64, 28, 28, 128, 3, 3, 2, 2, 1, 1, 1},  /* its strided 3x3 */
    {8, 64, 28, 28, 128, 1, 1, 2, 2, 0, 0, 1},  /* and the 1x1 stride-2 downsample */
    {4, 32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 32},  /* depthwise */
    {4, 32, 17, 17, 32, 3, 3, 2, 2, 1, 1, 32},  /* depthwise, stride 2, odd size */
    {4, 48, 9, 9, 96, 1, 1, 1, 1, 0, 0, 1},     /* 1x1 direct */
    {3, 24, 11, 13, 36, 3, 3, 1, 1, 1, 1, 4},   /* groups 4 */
};

static void cudnn_case(const conv_shape *s, int with_bias, double tol, const char *tag, int *dnn,
                       int *total)
{
    vt_cuda_conv_info a, b;
    vt_conv_desc d = make_desc(s);
    vt_backend_cuda_conv_info(B[1], &a);
    conv_case(&d, with_bias, tol, tag);
    vt_backend_cuda_conv_info(B[1], &b);
    unsigned long long got = b.cudnn_passes - a.cudnn_passes;
    unsigned long long im = b.im2col_passes - a.im2col_passes;
    ck_assert_msg(got + im == 3, "%s: %llu cuDNN + %llu im2col passes, not 3", tag, got, im);
    fprintf(stderr, "  cudnn %s: %llu of 3 passes on cuDNN; %s\n", tag, got, b.last_plan);
    *dnn += (int)got;
    *total += 3;
}

START_TEST(test_conv_cudnn)
{
    vt_cuda_conv_info info;
    vt_backend_cuda_conv_info(DNN, &info);
    fprintf(stderr, "test_conv_cudnn: %s\n", info.engine);
    ck_assert_msg(info.engine[0], "the cuDNN backend describes no convolution engine");
    if (!info.cudnn) {
        const char *expect = getenv("VT_TEST_EXPECT_CUDNN");
        ck_assert_msg(!expect || strcmp(expect, "1") != 0,
                      "VT_TEST_EXPECT_CUDNN=1 but cuDNN is not on: %s", info.engine);
        fprintf(stderr, "test_conv_cudnn: cuDNN not on, nothing compared\n");
        return;
    }
    ck_assert_msg(strstr(info.engine, "EXPERIMENTAL"), "%s", info.engine);
    /* the reference is the im2col backend: B[0] for the rest of this test, B[1] cuDNN (restored
     * at the end; this is the suite's last test, so a failure that skips the restore harms
     * nothing) */
    ck_assert_msg(!on_cudnn(REF), "the reference backend runs cuDNN");
    vt_backend *cpu = B[0], *gpu = B[1];
    B[0] = REF;
    B[1] = DNN;
    int dnn = 0, total = 0, first = 0;
    for (int tf32 = 0; tf32 < 2; tf32++) {
        for (int be = 0; be < 2; be++) vt_backend_cuda_set_fp32(B[be], !tf32);
        double tol = tf32 ? TOL_CUDNN_TF32 : TOL_CUDNN_FP32;
        char tag[32];
        for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
            snprintf(tag, sizeof tag, "%s case %zu", tf32 ? "tf32" : "fp32", i);
            int before = dnn;
            cudnn_case(&conv_cases[i], (int)(i % 3 != 2), tol, tag, &dnn, &total);
            if (i == 0 && !tf32) first = dnn - before;
        }
        for (size_t i = 0; i < sizeof cudnn_cases / sizeof cudnn_cases[0]; i++) {
            snprintf(tag, sizeof tag, "%s resnet-like %zu", tf32 ? "tf32" : "fp32", i);
            cudnn_case(&cudnn_cases[i], (int)(i % 2), tol, tag, &dnn, &total);
        }
    }
    /* weights 4 bytes past a 16-byte boundary (as after an odd-sized weight in the packed
     * parameters): that pass runs on im2col, with the same result */
    {
        for (int be = 0; be < 2; be++) vt_backend_cuda_set_fp32(B[be], 1);
        vt_conv_desc d = make_desc(&conv_cases[0]);
        size_t xn = (size_t)d.cin * d.n * d.h * d.w, yn = (size_t)d.cout * d.n * d.ho * d.wo;
        size_t wn = (size_t)d.cout * (d.cin / d.groups) * d.kh * d.kw;
        tbuf x = tb_rand(xn, -1, 1), w = tb_rand(wn + 1, -0.5f, 0.5f), y = tb_out(yn);
        void *ws[2] = {NULL, NULL};
        for (int be = 0; be < 2; be++) {
            size_t bytes = B[be]->ops->conv_workspace(B[be], &d);
            if (bytes) ck_assert_ptr_nonnull(ws[be] = B[be]->ops->alloc(B[be], bytes));
        }
        vt_cuda_conv_info a, c;
        vt_backend_cuda_conv_info(B[1], &a);
        BOTH(b->ops->conv_forward(b, &d, x.d[be], (float *)w.d[be] + 1, NULL, y.d[be], ws[be]));
        vt_backend_cuda_conv_info(B[1], &c);
        ck_assert_msg(c.im2col_passes == a.im2col_passes + 1 && c.cudnn_passes == a.cudnn_passes,
                      "a misaligned weight pointer went to cuDNN");
        expect_close(&y, TOL_CUDNN_FP32, "misaligned weights: y");
        for (int be = 0; be < 2; be++) B[be]->ops->free(B[be], ws[be]);
        tb_free(&x);
        tb_free(&w);
        tb_free(&y);
    }
    /* the plan made by a pass (math mode changed after conv_workspace): within im2col's bytes */
    for (int be = 0; be < 2; be++) vt_backend_cuda_set_fp32(B[be], 0);
    conv_flip_math = 1;
    const conv_shape late = {2, 16, 10, 11, 24, 3, 3, 1, 1, 1, 1, 1};
    cudnn_case(&late, 1, TOL_CUDNN_FP32, "plan made by a pass", &dnn, &total);
    conv_flip_math = 0;
    vt_backend_cuda_conv_info(DNN, &info);
    fprintf(stderr, "test_conv_cudnn: %d of %d passes on cuDNN, %u shapes planned (%u with a "
            "cuDNN pass)\n", dnn, total, info.shapes, info.shapes_cudnn);
    B[0] = cpu;
    B[1] = gpu;
    /* a plain 3x3 convolution that cuDNN cannot take at all would make the whole path moot */
    ck_assert_msg(first == 3, "the plain 3x3 ran %d of its 3 passes on cuDNN", first);
    ck_assert_msg(info.shapes_cudnn > 0 && info.cudnn_passes > 0, "nothing ran on cuDNN");
}
END_TEST

/* ---- elementwise ----------------------------------------------------------------------------- */

START_TEST(test_axpy_add_bias_sum)
{
    size_t n = 77777;
    tbuf x = tb_rand(n, -1, 1), y = tb_rand(n, -1, 1), z = tb_out(n);
    BOTH(b->ops->axpy(b, n, -0.37f, x.d[be], y.d[be]));
    expect_close(&y, TOL_FP32, "axpy");
    BOTH(b->ops->add(b, n, x.d[be], y.d[be], z.d[be]));
    expect_close(&z, TOL_FP32, "add");
    BOTH(b->ops->add(b, n, z.d[be], x.d[be], z.d[be])); /* y aliases a */
    expect_close(&z, TOL_FP32, "add in place");

    int ch = 37;
    size_t m = 1001;
    tbuf t = tb_rand(ch * m, -1, 1), bias = tb_rand(ch, -2, 2), s = tb_out(ch);
    BOTH(b->ops->bias_add(b, ch, m, bias.d[be], t.d[be]));
    expect_close(&t, TOL_FP32, "bias_add");
    BOTH(b->ops->channel_sum(b, ch, m, t.d[be], s.d[be]));
    expect_close(&s, TOL_FP32, "channel_sum");
    tbuf big = tb_rand(3 * 300001, 0, 1), s3 = tb_out(3);
    BOTH(b->ops->channel_sum(b, 3, 300001, big.d[be], s3.d[be]));
    expect_close(&s3, TOL_FP32, "channel_sum large m");
    tb_free(&x); tb_free(&y); tb_free(&z); tb_free(&t); tb_free(&bias); tb_free(&s);
    tb_free(&big); tb_free(&s3);
}
END_TEST

START_TEST(test_activations)
{
    const char *names[] = {"none", "relu", "silu", "leaky", "sigmoid"};
    size_t sizes[] = {1, 1023, 3000017};
    for (int si = 0; si < 3; si++) {
        size_t n = sizes[si];
        for (int a = VT_ACT_NONE; a <= VT_ACT_SIGMOID; a++) {
            char what[64];
            tbuf x = tb_rand(n, -6, 6), y = tb_out(n), dy = tb_rand(n, -1, 1),
                 dx = tb_rand(n, -1, 1);
            BOTH(b->ops->act_forward(b, (vt_act)a, 0.1f, n, x.d[be], y.d[be]));
            snprintf(what, sizeof what, "act_forward %s n=%zu", names[a], n);
            expect_close(&y, TOL_FP32, what);
            BOTH(b->ops->act_backward(b, (vt_act)a, 0.1f, n, x.d[be], y.d[be], dy.d[be], dx.d[be]));
            snprintf(what, sizeof what, "act_backward %s n=%zu", names[a], n);
            expect_close(&dx, TOL_FP32, what);
            /* In place: y aliases x. */
            BOTH(b->ops->act_forward(b, (vt_act)a, 0.1f, n, x.d[be], x.d[be]));
            snprintf(what, sizeof what, "act_forward in place %s n=%zu", names[a], n);
            expect_close(&x, TOL_FP32, what);
            tb_free(&x); tb_free(&y); tb_free(&dy); tb_free(&dx);
        }
    }
}
END_TEST

START_TEST(test_dropout)
{
    size_t n = 100003;
    float ps[] = {0.0f, 0.3f, 0.9f};
    for (int i = 0; i < 3; i++) {
        tbuf x = tb_rand(n, -1, 1), y = tb_out(n), mask = tb_out(n), dy = tb_rand(n, -1, 1),
             dx = tb_rand(n, -1, 1);
        BOTH(b->ops->dropout_forward(b, n, ps[i], 0xC0FFEEull + i, x.d[be], y.d[be], mask.d[be]));
        expect_equal_bytes(&mask, "dropout mask (must be bit-identical)");
        expect_close(&y, TOL_FP32, "dropout_forward");
        BOTH(b->ops->dropout_backward(b, n, mask.d[be], dy.d[be], dx.d[be]));
        expect_close(&dx, TOL_FP32, "dropout_backward");
        tb_free(&x); tb_free(&y); tb_free(&mask); tb_free(&dy); tb_free(&dx);
    }
}
END_TEST

START_TEST(test_optimisers)
{
    size_t n = 54321;
    for (int nest = 0; nest < 2; nest++) {
        tbuf p = tb_rand(n, -1, 1), g = tb_rand(n, -1, 1), m = tb_rand(n, -0.1f, 0.1f);
        for (int step = 0; step < 3; step++)
            BOTH(b->ops->sgd_step(b, n, p.d[be], g.d[be], m.d[be], 0.01f, 0.9f, 5e-4f, nest));
        expect_close(&p, TOL_FP32, nest ? "sgd nesterov p" : "sgd p");
        expect_close(&m, TOL_FP32, nest ? "sgd nesterov m" : "sgd m");
        tb_free(&p); tb_free(&g); tb_free(&m);
    }
    tbuf p = tb_rand(n, -1, 1), g = tb_rand(n, -1, 1), m = tb_rand(n, -0.1f, 0.1f),
         v = tb_rand(n, 0, 0.01f);
    for (int t = 1; t <= 3; t++) {
        float bc1 = 1.0f - powf(0.9f, (float)t), bc2 = 1.0f - powf(0.999f, (float)t);
        BOTH(b->ops->adamw_step(b, n, p.d[be], g.d[be], m.d[be], v.d[be], 1e-3f, 0.9f, 0.999f,
                                1e-8f, 0.01f, bc1, bc2));
    }
    expect_close(&p, TOL_FP32, "adamw p");
    expect_close(&m, TOL_FP32, "adamw m");
    expect_close(&v, TOL_FP32, "adamw v");
    tb_free(&p); tb_free(&g); tb_free(&m); tb_free(&v);
}
END_TEST

/* ---- batch norm ------------------------------------------------------------------------------ */

/* Batch norm alone (act = VT_ACT_NONE), or fused with the ReLU or SiLU after it. */
static void bn_case(int ch, size_t m, float shift, vt_act act)
{
    size_t n = (size_t)ch * m;
    char what[96];
    tbuf x = tb_rand(n, shift - 2, shift + 2), gamma = tb_rand(ch, 0.5f, 1.5f),
         beta = tb_rand(ch, -1, 1), rm = tb_rand(ch, -1, 1), rv = tb_rand(ch, 0.5f, 2),
         sm = tb_out(ch), si = tb_out(ch), y = tb_out(n);
    if (act) {
        BOTH(b->ops->bn_act_forward_train(b, act, ch, m, x.d[be], gamma.d[be], beta.d[be], 1e-5f,
                                          0.1f, rm.d[be], rv.d[be], sm.d[be], si.d[be],
                                          y.d[be]));
    } else {
        BOTH(b->ops->bn_forward_train(b, ch, m, x.d[be], gamma.d[be], beta.d[be], 1e-5f, 0.1f,
                                      rm.d[be], rv.d[be], sm.d[be], si.d[be], y.d[be]));
    }
#define BNCHK(buf, name)                                                                         \
    snprintf(what, sizeof what, "bn act %d C=%d m=%zu shift=%g: %s", (int)act, ch, m,          \
             (double)shift, name);                                                              \
    expect_close(&buf, TOL_FP32, what)
    BNCHK(y, "train y");
    BNCHK(sm, "save_mean");
    BNCHK(si, "save_invstd");
    BNCHK(rm, "running_mean");
    BNCHK(rv, "running_var");

    tbuf ye = tb_out(n);
    if (act) {
        BOTH(b->ops->bn_act_forward_eval(b, act, ch, m, x.d[be], gamma.d[be], beta.d[be], 1e-5f,
                                         rm.d[be], rv.d[be], ye.d[be]));
    } else {
        BOTH(b->ops->bn_forward_eval(b, ch, m, x.d[be], gamma.d[be], beta.d[be], 1e-5f,
                                     rm.d[be], rv.d[be], ye.d[be]));
    }
    BNCHK(ye, "eval y");

    /* Backward from the CPU's saved statistics (and, fused, the CPU's output, whose signs pick
     * the ReLU's mask; SiLU recomputes the BN's output from x, gamma and beta) on both sides,
     * to test backward alone. */
    float *hm = tb_get(&sm, 0), *hi = tb_get(&si, 0), *hy = tb_get(&y, 0);
    tb_upload(&sm, hm);
    tb_upload(&si, hi);
    tb_upload(&y, hy);
    free(hm);
    free(hi);
    free(hy);
    tbuf dy = tb_rand(n, -1, 1), dx = tb_rand(n, -1, 1), dg = tb_out(ch), dbt = tb_out(ch);
    /* dx added to (dx_add = 1), then assigned (0: what it held is never read) */
    for (int add = 1; add >= 0; add--) {
        if (act) {
            BOTH(b->ops->bn_act_backward(b, act, ch, m, x.d[be], y.d[be], gamma.d[be],
                                         beta.d[be], sm.d[be], si.d[be], dy.d[be], dx.d[be], add,
                                         dg.d[be], dbt.d[be]));
        } else {
            BOTH(b->ops->bn_backward(b, ch, m, x.d[be], gamma.d[be], sm.d[be], si.d[be],
                                     dy.d[be], dx.d[be], add, dg.d[be], dbt.d[be]));
        }
        BNCHK(dx, add ? "dx" : "dx (assigned)");
    }
    BNCHK(dg, "dgamma");
    BNCHK(dbt, "dbeta");
#undef BNCHK
    tb_free(&x); tb_free(&gamma); tb_free(&beta); tb_free(&rm); tb_free(&rv); tb_free(&sm);
    tb_free(&si); tb_free(&y); tb_free(&ye); tb_free(&dy); tb_free(&dx); tb_free(&dg);
    tb_free(&dbt);
}

START_TEST(test_batchnorm)
{
    const vt_act acts[3] = {VT_ACT_NONE, VT_ACT_RELU, VT_ACT_SILU};
    for (int a = 0; a < 3; a++) {
        vt_act act = acts[a];
        bn_case(5, 2 * 7 * 9, 0.0f, act);
        bn_case(33, 3 * 13 * 13, 0.5f, act);
        bn_case(3, 2, 0.0f, act);
        /* large m with a non-zero mean: the variance must not cancel; many slices per channel */
        bn_case(4, 200003, 3.0f, act);
        bn_case(64, 2 * 56 * 56 + 5, -1.0f, act); /* slices of unequal length */
        bn_case(1, 5000000, 10.0f, act);          /* the most slices per channel */
    }
    /* an activation the fused ops do not have is refused, on both backends */
    for (int k = 0; k < 2; k++) {
        float *p = B[k]->ops->alloc(B[k], 64 * sizeof(float));
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(B[k]->ops->bn_act_forward_eval(B[k], VT_ACT_SIGMOID, 1, 8, p, p + 8,
                                                        p + 9, 1e-5f, p + 10, p + 11, p + 16),
                         VT_ERR_INVALID_ARGUMENT);
        B[k]->ops->free(B[k], p);
    }
}
END_TEST

/* ---- pooling, gap, upsample ------------------------------------------------------------------ */

static void pool_case(int planes, int h, int w, int k, int s, int p)
{
    vt_pool_desc d = {planes, h, w, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1, k, s, p};
    size_t xn = (size_t)planes * h * w, yn = (size_t)planes * d.ho * d.wo;
    char what[96];
    snprintf(what, sizeof what, "pool planes=%d %dx%d k=%d s=%d p=%d", planes, h, w, k, s, p);
    tbuf x = tb_rand(xn, -1, 1), y = tb_out(yn), idx = tb_alloc(yn, sizeof(int32_t));
    tbuf dy = tb_rand(yn, -1, 1), dx = tb_rand(xn, -1, 1);
    BOTH(b->ops->maxpool_forward(b, &d, x.d[be], y.d[be], idx.d[be]));
    expect_close(&y, 0.0, what);
    expect_equal_bytes(&idx, "maxpool idx");
    BOTH(b->ops->maxpool_backward(b, &d, idx.d[be], dy.d[be], dx.d[be], 1));
    expect_close(&dx, TOL_FP32, "maxpool_backward");
    BOTH(b->ops->maxpool_backward(b, &d, idx.d[be], dy.d[be], dx.d[be], 0));
    expect_close(&dx, TOL_FP32, "maxpool_backward (assigned)");
    tbuf ya = tb_out(yn), dxa = tb_rand(xn, -1, 1);
    BOTH(b->ops->avgpool_forward(b, &d, x.d[be], ya.d[be]));
    expect_close(&ya, TOL_FP32, "avgpool_forward");
    BOTH(b->ops->avgpool_backward(b, &d, dy.d[be], dxa.d[be]));
    expect_close(&dxa, TOL_FP32, "avgpool_backward");
    tb_free(&x); tb_free(&y); tb_free(&idx); tb_free(&dy); tb_free(&dx); tb_free(&ya);
    tb_free(&dxa);
}

START_TEST(test_pooling)
{
    pool_case(6, 13, 11, 3, 2, 1);
    pool_case(5, 8, 8, 2, 2, 0);
    pool_case(3, 9, 7, 5, 1, 2); /* SPPF-style, heavily overlapping windows */
    pool_case(70, 33, 31, 3, 3, 1);
}
END_TEST

START_TEST(test_gap_upsample)
{
    size_t planes = 333, hw = 49;
    tbuf x = tb_rand(planes * hw, -1, 1), y = tb_out(planes), dy = tb_rand(planes, -1, 1),
         dx = tb_rand(planes * hw, -1, 1);
    BOTH(b->ops->gap_forward(b, planes, hw, x.d[be], y.d[be]));
    expect_close(&y, TOL_FP32, "gap_forward");
    BOTH(b->ops->gap_backward(b, planes, hw, dy.d[be], dx.d[be], 1));
    expect_close(&dx, TOL_FP32, "gap_backward");
    BOTH(b->ops->gap_backward(b, planes, hw, dy.d[be], dx.d[be], 0));
    expect_close(&dx, TOL_FP32, "gap_backward (assigned)");
    tbuf x2 = tb_rand(7 * 1001, -1, 1), y2 = tb_out(7);
    BOTH(b->ops->gap_forward(b, 7, 1001, x2.d[be], y2.d[be]));
    expect_close(&y2, TOL_FP32, "gap_forward long planes");

    int h = 7, w = 5;
    size_t up = 11;
    tbuf ux = tb_rand(up * h * w, -1, 1), uy = tb_out(up * 4 * h * w),
         udy = tb_rand(up * 4 * h * w, -1, 1), udx = tb_rand(up * h * w, -1, 1);
    BOTH(b->ops->upsample2_forward(b, up, h, w, ux.d[be], uy.d[be]));
    expect_close(&uy, 0.0, "upsample2_forward");
    BOTH(b->ops->upsample2_backward(b, up, h, w, udy.d[be], udx.d[be]));
    expect_close(&udx, TOL_FP32, "upsample2_backward");
    tb_free(&x); tb_free(&y); tb_free(&dy); tb_free(&dx); tb_free(&x2); tb_free(&y2);
    tb_free(&ux); tb_free(&uy); tb_free(&udy); tb_free(&udx);
}
END_TEST

/* copy2d and axpy2d: odd row lengths into rows further apart (a flatcat's slices); the gaps
 * between destination rows hold -99 on both sides and must keep it. */
static void rows2d_case(size_t rows, size_t cols, size_t sp, size_t dp)
{
    char what[96];
    tbuf src = tb_rand(rows * sp, -1, 1), dst = tb_alloc(rows * dp, sizeof(float));
    BOTH(b->ops->fill(b, dst.d[be], rows * dp, -99.0f));
    BOTH(b->ops->copy2d(b, rows, cols, src.d[be], sp, dst.d[be], dp));
    snprintf(what, sizeof what, "copy2d rows=%zu cols=%zu pitches %zu %zu", rows, cols, sp, dp);
    expect_equal_bytes(&dst, what);
    tbuf y = tb_rand(rows * dp, -1, 1);
    BOTH(b->ops->axpy2d(b, rows, cols, 0.75f, src.d[be], sp, y.d[be], dp));
    snprintf(what, sizeof what, "axpy2d rows=%zu cols=%zu pitches %zu %zu", rows, cols, sp, dp);
    expect_close(&y, TOL_FP32, what);
    tb_free(&src);
    tb_free(&dst);
    tb_free(&y);
}

START_TEST(test_copy2d_axpy2d)
{
    rows2d_case(37, 49, 49, 49 + 16 + 4);  /* a 7x7 level into a row of 69 */
    rows2d_case(70, 13, 20, 13);           /* gather: strided source, packed destination */
    rows2d_case(3, 40000, 40000, 50001);   /* long rows */
    rows2d_case(1, 1, 1, 1);
    rows2d_case(0, 5, 5, 5);               /* nothing to do */
    /* a pitch under the row is refused on both */
    tbuf t = tb_alloc(16, sizeof(float));
    for (int be = 0; be < 2; be++) {
        vt_backend *b = B[be];
        ck_assert_int_eq(b->ops->copy2d(b, 2, 8, t.d[be], 4, t.d[be], 8), VT_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(b->ops->axpy2d(b, 2, 8, 1.0f, t.d[be], 8, t.d[be], 4),
                         VT_ERR_INVALID_ARGUMENT);
    }
    tb_free(&t);
}
END_TEST

/* ---- loss ------------------------------------------------------------------------------------ */

static void xent_case(int classes, int batch, float smoothing, int want_probs)
{
    char what[96];
    snprintf(what, sizeof what, "softmax_xent C=%d N=%d s=%g", classes, batch, (double)smoothing);
    tbuf logits = tb_rand((size_t)classes * batch, -8, 8);
    tbuf labels = tb_alloc(batch, sizeof(int32_t));
    int32_t *hl = malloc(batch * sizeof(int32_t));
    for (int i = 0; i < batch; i++) hl[i] = (int32_t)(urand(0, 1) * classes) % classes;
    tb_upload(&labels, hl);
    free(hl);
    tbuf loss = tb_out(1), dl = tb_out((size_t)classes * batch),
         pr = tb_out((size_t)classes * batch);
    BOTH(b->ops->softmax_xent(b, classes, batch, logits.d[be], labels.d[be], smoothing,
                              1.0f / batch, loss.d[be], dl.d[be], want_probs ? pr.d[be] : NULL));
    expect_close(&loss, TOL_FP32, what);
    expect_close(&dl, TOL_FP32, "softmax_xent dlogits");
    if (want_probs) expect_close(&pr, TOL_FP32, "softmax_xent probs");
    /* Loss only. */
    tbuf loss2 = tb_out(1);
    BOTH(b->ops->softmax_xent(b, classes, batch, logits.d[be], labels.d[be], smoothing, 1.0f,
                              loss2.d[be], NULL, NULL));
    expect_close(&loss2, TOL_FP32, "softmax_xent loss only");
    tb_free(&logits); tb_free(&labels); tb_free(&loss); tb_free(&dl); tb_free(&pr);
    tb_free(&loss2);
}

START_TEST(test_softmax_xent)
{
    xent_case(10, 64, 0.0f, 1);
    xent_case(37, 67, 0.1f, 1);
    xent_case(2, 1, 0.0f, 0);
    xent_case(1000, 129, 0.05f, 1);
    xent_case(5, 5000, 0.0f, 0);
}
END_TEST

/* The soft Dice term: loss and added gradient against the CPU, ignored pixels included. */
static void dice_case(int classes, int batch, float weight)
{
    char what[96];
    snprintf(what, sizeof what, "softmax_dice C=%d N=%d w=%g", classes, batch, (double)weight);
    tbuf logits = tb_rand((size_t)classes * batch, -4, 4);
    tbuf labels = tb_alloc(batch, sizeof(int32_t));
    int32_t *hl = malloc(batch * sizeof(int32_t));
    for (int i = 0; i < batch; i++) hl[i] = i % 7 == 3 ? -1 : (int32_t)(urand(0, 1) * classes) % classes;
    tb_upload(&labels, hl);
    free(hl);
    tbuf xl = tb_out(1), pr = tb_out((size_t)classes * batch), loss = tb_out(1),
         dl = tb_rand((size_t)classes * batch, -1, 1);
    BOTH(b->ops->softmax_xent(b, classes, batch, logits.d[be], labels.d[be], 0, 1, xl.d[be],
                              NULL, pr.d[be]));
    BOTH(b->ops->softmax_dice(b, classes, batch, pr.d[be], labels.d[be], weight, loss.d[be],
                              dl.d[be]));
    expect_close(&loss, TOL_FP32, what);
    expect_close(&dl, TOL_FP32, "softmax_dice dlogits (added)");
    tb_free(&logits); tb_free(&labels); tb_free(&xl); tb_free(&pr); tb_free(&loss);
    tb_free(&dl);
}

START_TEST(test_softmax_dice)
{
    dice_case(5, 64, 1.0f);
    dice_case(11, 16 * 128 * 128, 1.0f);
    dice_case(2, 3, 0.5f);
}
END_TEST

START_TEST(test_softmax_bad_label_ignored)
{
    vt_backend *g = B[1];
    int32_t lab[2] = {7, 1};
    float logits[6] = {1, 2, 3, 4, 5, 6}, dl[6], loss;
    float *dlog = g->ops->alloc(g, sizeof logits), *dd = g->ops->alloc(g, sizeof dl),
          *dls = g->ops->alloc(g, 4);
    int32_t *dlab = g->ops->alloc(g, sizeof lab);
    OK(g->ops->upload(g, dlog, logits, sizeof logits));
    OK(g->ops->upload(g, dlab, lab, sizeof lab));
    OK(g->ops->softmax_xent(g, 3, 2, dlog, dlab, 0.0f, 1.0f, dls, dd, NULL));
    OK(g->ops->download(g, dl, dd, sizeof dl));
    OK(g->ops->download(g, &loss, dls, 4));
    for (int c = 0; c < 3; c++) ck_assert_msg(dl[c * 2] == 0.0f, "ignored sample has gradient");
    ck_assert_msg(isfinite(loss) && loss > 0.0f, "loss %g", (double)loss);
    g->ops->free(g, dlog); g->ops->free(g, dd); g->ops->free(g, dls); g->ops->free(g, dlab);
}
END_TEST

/* The detection loss: assignment, both terms and the gradient against the CPU backend (the two
 * share det_loss_math.h; this checks the kernels' indexing and reductions). */
static void det_case(int n, int nc, int gh, int gw, int max_gt, int levels)
{
    char what[112];
    snprintf(what, sizeof what, "det_loss n=%d nc=%d %dx%d gt=%d levels=%d", n, nc, gh, gw,
             max_gt, levels);
    vt_det_loss_desc d = {.n = n, .nc = nc, .n_levels = levels, .max_gt = max_gt, .topk = 10,
                          .alpha = 0.5f, .beta = 6.0f, .box_gain = 5.0f, .cls_gain = 1.0f,
                          .grad_scale = 0.5f};
    size_t A = 0;
    for (int l = 0; l < levels; l++) {
        d.level[l] = (vt_det_level){gh >> l, gw >> l, (float)(8 << l)};
        A += (size_t)(gh >> l) * (gw >> l);
    }
    float W = gw * 8.0f, H = gh * 8.0f;
    size_t cells = (size_t)n * A, np = (size_t)(4 + nc) * cells;
    tbuf pred = tb_rand(np, -2, 2);
    float *g = malloc((size_t)n * max_gt * 5 * sizeof(float) + 4);
    for (int i = 0; i < n * max_gt; i++) {
        float *r = g + (size_t)i * 5;
        float x0 = urand(0, W * 0.8f), y0 = urand(0, H * 0.8f);
        r[0] = urand(0, 1) < 0.2f ? -1.0f : (float)((int)urand(0, (float)nc) % nc);
        r[1] = x0;
        r[2] = y0;
        r[3] = x0 + urand(2, W - x0);
        r[4] = y0 + urand(2, H - y0);
        if (r[3] > W) r[3] = W;
        if (r[4] > H) r[4] = H;
    }
    tbuf gt = tb_alloc((size_t)n * max_gt * 5, sizeof(float));
    tb_upload(&gt, g);
    free(g);
    tbuf assign = tb_alloc(cells, sizeof(int32_t)), score = tb_out(cells);
    tbuf loss = tb_out(4), dp = tb_out(np);
    BOTH(b->ops->det_loss(b, &d, pred.d[be], gt.d[be], assign.d[be], score.d[be], loss.d[be],
                          dp.d[be]));
    expect_equal_bytes(&assign, "det_loss assignment");
    expect_close(&score, 1e-4, "det_loss target scores");
    expect_close(&loss, 1e-4, what);
    expect_close(&dp, 1e-4, "det_loss gradient");
    tbuf loss2 = tb_out(4);
    d.reuse_targets = 1;
    BOTH(b->ops->det_loss(b, &d, pred.d[be], gt.d[be], assign.d[be], score.d[be], loss2.d[be],
                          NULL));
    expect_close(&loss2, 1e-4, "det_loss without gradient, targets reused");
    tb_free(&pred); tb_free(&gt); tb_free(&assign); tb_free(&score); tb_free(&loss);
    tb_free(&dp); tb_free(&loss2);
}

START_TEST(test_det_loss)
{
    det_case(2, 3, 4, 4, 3, 1);
    det_case(5, 80, 20, 20, 17, 1);
    det_case(16, 1, 80, 80, 1, 1);
    det_case(4, 7, 16, 16, 9, 3);
}
END_TEST

/* The instance-mask loss against the CPU backend (both share mask_loss_math.h): the loss, the
 * positive count and both gradients (the prototypes' through atomics: a tolerance). */
static void mask_case(int n, int k, int gh, int gw, int max_gt, int mh, int mw)
{
    int A = gh * gw;
    float stride = 8.0f * gw / mw;
    vt_mask_loss_desc d = {.n = n, .k = k, .anchors = A, .mh = mh, .mw = mw, .mstride = stride,
                           .max_gt = max_gt, .gain = 2.0f};
    size_t cells = (size_t)n * A, HW = (size_t)mh * mw;
    tbuf coef = tb_rand((size_t)k * cells, -1, 1), proto = tb_rand((size_t)k * n * HW, -1, 1);
    float *g = malloc((size_t)n * max_gt * 5 * sizeof(float) + 4);
    float W = gw * 8.0f, H = gh * 8.0f;
    for (int i = 0; i < n * max_gt; i++) {
        float *r = g + (size_t)i * 5, x0 = urand(0, W * 0.8f), y0 = urand(0, H * 0.8f);
        r[0] = 0.0f;
        r[1] = x0;
        r[2] = y0;
        r[3] = x0 + urand(2, W - x0);
        r[4] = y0 + urand(2, H - y0);
    }
    int32_t *as = malloc(cells * sizeof *as);
    for (size_t c = 0; c < cells; c++) as[c] = urand(0, 1) < 0.7f ? -1 : (int)urand(0, (float)max_gt) % max_gt;
    uint16_t *im = malloc((size_t)n * HW * sizeof *im + 2);
    for (size_t p = 0; p < (size_t)n * HW; p++) im[p] = (uint16_t)((int)urand(0, (float)max_gt + 1) % (max_gt + 1));
    tbuf gt = tb_alloc((size_t)n * max_gt * 5, sizeof(float)), assign = tb_alloc(cells, 4),
         inst = tb_alloc((size_t)n * HW, 2);
    tb_upload(&gt, g);
    tb_upload(&assign, as);
    tb_upload(&inst, im);
    free(g);
    free(as);
    free(im);
    tbuf loss = tb_out(2), dc = tb_out((size_t)k * cells), dp = tb_out((size_t)k * n * HW);
    BOTH(b->ops->mask_loss(b, &d, coef.d[be], proto.d[be], assign.d[be], gt.d[be], inst.d[be],
                           loss.d[be], dc.d[be], dp.d[be]));
    expect_close(&loss, 1e-4, "mask_loss");
    expect_close(&dc, 1e-4, "mask_loss coefficient gradient");
    expect_close(&dp, 1e-4, "mask_loss prototype gradient");
    tb_free(&coef); tb_free(&proto); tb_free(&gt); tb_free(&assign); tb_free(&inst);
    tb_free(&loss); tb_free(&dc); tb_free(&dp);
}

START_TEST(test_mask_loss)
{
    mask_case(2, 4, 4, 4, 3, 8, 8);
    mask_case(3, 32, 16, 16, 7, 32, 32);
    mask_case(1, 32, 20, 20, 1, 40, 40);
}
END_TEST

static Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda_ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_device_info);
    tcase_add_test(tc, test_cache_reuse);
    tcase_add_test(tc, test_fill_copy_transfer);
    tcase_add_test(tc, test_gemm_fp32);
    tcase_add_test(tc, test_gemm_tf32);
    tcase_add_test(tc, test_gemm_k0);
    tcase_add_test(tc, test_conv_fp32);
    tcase_add_test(tc, test_conv_tf32);
    tcase_add_test(tc, test_conv_chunked);
    tcase_add_test(tc, test_axpy_add_bias_sum);
    tcase_add_test(tc, test_activations);
    tcase_add_test(tc, test_dropout);
    tcase_add_test(tc, test_optimisers);
    tcase_add_test(tc, test_batchnorm);
    tcase_add_test(tc, test_pooling);
    tcase_add_test(tc, test_gap_upsample);
    tcase_add_test(tc, test_copy2d_axpy2d);
    tcase_add_test(tc, test_softmax_xent);
    tcase_add_test(tc, test_softmax_dice);
    tcase_add_test(tc, test_softmax_bad_label_ignored);
    tcase_add_test(tc, test_det_loss);
    tcase_add_test(tc, test_mask_loss);
    tcase_add_test(tc, test_oom_then_usable);
    tcase_add_test(tc, test_conv_cudnn); /* last: it swaps B[] while it runs */
    suite_add_tcase(s, tc);
    /* the experimental precision=bf16 (CK_RUN_CASE=bf16 runs only these) */
    TCase *tb = tcase_create("bf16");
    tcase_set_timeout(tb, 300);
    tcase_add_test(tb, test_gemm_bf16);
    tcase_add_test(tb, test_conv_bf16);
    suite_add_tcase(s, tb);
    return s;
}

int main(void)
{
    if (vt_cuda_device_count() == 0) {
        fprintf(stderr, "test_cuda_ops: no CUDA device, skipped\n");
        return 77;
    }
    int dev = 0;
    const char *env = getenv("VT_TEST_CUDA_DEVICE");
    if (env) dev = atoi(env);
    if (vt_backend_cpu_create(&B[0], 0) != VT_OK || vt_backend_cuda_create(&B[1], dev) != VT_OK) {
        fprintf(stderr, "test_cuda_ops: cannot create the backends: %s\n", vt_last_error());
        return 1;
    }
    vt_backend_cuda_set_fp32(B[1], 1);
    /* the experimental cuDNN convolutions, on only through the environment (test_conv_cudnn) */
    const char *was = getenv("VT_CUDNN");
    char saved[64];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    setenv("VT_CUDNN", "1", 1);
    vt_status dst = vt_backend_cuda_create(&DNN, dev);
    unsetenv("VT_CUDNN");
    if (dst == VT_OK) dst = vt_backend_cuda_create(&REF, dev);
    if (was) setenv("VT_CUDNN", saved, 1);
    if (dst != VT_OK) {
        fprintf(stderr, "test_cuda_ops: cannot create the cuDNN backends: %s\n", vt_last_error());
        return 1;
    }
    vt_backend_cuda_set_fp32(DNN, 1);
    vt_backend_cuda_set_fp32(REF, 1);
    vt_cuda_conv_info info;
    vt_backend_cuda_conv_info(B[1], &info);
    fprintf(stderr, "test_cuda_ops: convolutions: %s\n", info.engine);
    SRunner *sr = srunner_create(cuda_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    vt_backend_destroy(REF);
    vt_backend_destroy(DNN);
    vt_backend_destroy(B[1]);
    vt_backend_destroy(B[0]);
    return failed == 0 ? 0 : 1;
}

#else /* !VT_HAVE_CUDA */

int main(void)
{
    fprintf(stderr, "test_cuda_ops: built without CUDA, skipped\n");
    return 77;
}

#endif
