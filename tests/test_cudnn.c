/* The experimental cuDNN convolutions' CPU-side parts, on any machine (no GPU, no cuDNN
 * needed): cuDNN's loader (cuda/cudnn_load.c, linked here directly) against fake libraries
 * built by the test setup (fake_cudnn.c), and the plans' arithmetic (cuda/cudnn_plan.c):
 * the CNHW strides given to cuDNN, the shape key, its hash and the table of plans, the
 * workspace limit and the choice among cudnnFind*'s results.  The GPU side is
 * test_cuda_ops.c's test_conv_cudnn (skipped without a GPU).  Each test runs in Check's own
 * forked child, so vt_dnn_shared loads afresh in each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "cudnn_load.h"
#include "cudnn_plan.h"
#include "testutil.h"

static const char *env_path(const char *name)
{
    const char *p = getenv(name);
    ck_assert_msg(p && *p, "%s is not set (run through meson test)", name);
    return p;
}

static const char *fake(const char *file)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", env_path("VT_TEST_FAKE_CUDNN_DIR"), file);
    return path;
}

/* ---- the loader ---------------------------------------------------------------------------- */

START_TEST(test_fake_cudnn_loads)
{
    char why[512] = "x";
    vt_dnn *d = vt_dnn_open(fake("fake-cudnn.so"), why, sizeof why);
    ck_assert_msg(d != NULL, "the fake cuDNN did not load: %s", why);
    ck_assert_str_eq(why, "");
    ck_assert_uint_eq(d->version, 91900);
    void *h = NULL;
    ck_assert_int_eq(d->create((vt_dnn_handle *)&h), VT_DNN_STATUS_SUCCESS);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(d->set_stream(h, NULL), VT_DNN_STATUS_NOT_SUPPORTED);
    ck_assert_str_eq(d->error_string(VT_DNN_STATUS_NOT_SUPPORTED),
                     "CUDNN_STATUS_NOT_SUPPORTED (fake)");
    ck_assert_int_eq(d->destroy(h), VT_DNN_STATUS_SUCCESS);
    ck_assert_ptr_nonnull(d->conv_bwd_filter);
    vt_dnn_close(d);
    vt_dnn_close(NULL);
}
END_TEST

START_TEST(test_cudnn_missing_or_broken)
{
    char why[512];
    vt_err_clear();
    ck_assert_ptr_null(vt_dnn_open("/nonexistent/" VT_DNN_FILE, why, sizeof why));
    ck_assert_msg(strstr(why, "cuDNN could not be loaded") && strstr(why, "/nonexistent/"), "%s",
                  why);
    ck_assert_ptr_null(vt_dnn_open("/nonexistent/" VT_DNN_FILE, NULL, 0)); /* no why */
    /* a function missing: named */
    ck_assert_ptr_null(vt_dnn_open(fake("fake-cudnn-incomplete.so"), why, sizeof why));
    ck_assert_msg(strstr(why, "has no cudnnConvolutionBackwardFilter"), "%s", why);
    /* another major version: refused with its number */
    ck_assert_ptr_null(vt_dnn_open(fake("fake-cudnn-v8.so"), why, sizeof why));
    ck_assert_msg(strstr(why, "version 8907") && strstr(why, "needs cuDNN 9"), "%s", why);
    ck_assert_str_eq(vt_last_error(), ""); /* not an error of the library: im2col runs */
}
END_TEST

START_TEST(test_cudnn_wanted)
{
    unsetenv("VT_CUDNN");
    ck_assert_int_eq(vt_dnn_wanted(), 0);
    const char *off[] = {"", "0", "yes", "true", "10", " 1"};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        setenv("VT_CUDNN", off[i], 1);
        ck_assert_msg(vt_dnn_wanted() == 0, "VT_CUDNN='%s' turned cuDNN on", off[i]);
    }
    setenv("VT_CUDNN", "1", 1);
    ck_assert_int_eq(vt_dnn_wanted(), 1);
}
END_TEST

START_TEST(test_cudnn_shared_from_env)
{
    setenv("VT_CUDNN_LIBRARY", fake("fake-cudnn.so"), 1);
    const char *why = "x";
    const vt_dnn *d = vt_dnn_shared(&why);
    ck_assert_msg(d != NULL, "%s", why);
    ck_assert_str_eq(why, "");
    ck_assert_uint_eq(d->version, 91900);
    setenv("VT_CUDNN_LIBRARY", "/nonexistent/" VT_DNN_FILE, 1); /* loaded once: kept */
    ck_assert_ptr_eq(vt_dnn_shared(NULL), d);
}
END_TEST

START_TEST(test_cudnn_shared_missing)
{
    setenv("VT_CUDNN_LIBRARY", fake("fake-cudnn-incomplete.so"), 1);
    const char *why = NULL;
    ck_assert_ptr_null(vt_dnn_shared(&why));
    ck_assert_msg(why && strstr(why, "cudnnConvolutionBackwardFilter"), "%s", why);
    setenv("VT_CUDNN_LIBRARY", fake("fake-cudnn.so"), 1); /* one answer per process */
    ck_assert_ptr_null(vt_dnn_shared(&why));
    ck_assert_msg(strstr(why, "cudnnConvolutionBackwardFilter"), "%s", why);
}
END_TEST

/* ---- strides, keys, the table -------------------------------------------------------------- */

START_TEST(test_cnhw_strides)
{
    /* every element's offset through cuDNN's strides is backend.h's CNHW offset */
    const int C = 3, N = 4, H = 5, W = 7;
    int s[4];
    ck_assert_int_eq(vt_dnn_cnhw_strides(C, N, H, W, s), 1);
    ck_assert_int_eq(s[0], H * W);     /* n */
    ck_assert_int_eq(s[1], N * H * W); /* c */
    ck_assert_int_eq(s[2], W);         /* h */
    ck_assert_int_eq(s[3], 1);         /* w */
    static unsigned char seen[3 * 4 * 5 * 7];
    memset(seen, 0, sizeof seen);
    for (int c = 0; c < C; c++)
        for (int n = 0; n < N; n++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    long off = (long)n * s[0] + (long)c * s[1] + (long)y * s[2] + (long)x * s[3];
                    ck_assert_int_eq(off, ((c * N + n) * H + y) * W + x);
                    seen[off]++;
                }
    for (size_t i = 0; i < sizeof seen; i++) ck_assert_int_eq(seen[i], 1); /* packed */
    /* int strides: below 2^31 elements accepted, at 2^31 refused; no size may be < 1 */
    ck_assert_int_eq(vt_dnn_cnhw_strides(1 << 15, 1 << 8, 1 << 4, (1 << 3) - 1, s), 1);
    ck_assert_int_eq(s[1], (1 << 8) * (1 << 4) * ((1 << 3) - 1));
    ck_assert_int_eq(vt_dnn_cnhw_strides(1 << 16, 1 << 8, 1 << 4, 1 << 3, s), 0);
    ck_assert_int_eq(vt_dnn_cnhw_strides(0, 1, 1, 1, s), 0);
    ck_assert_int_eq(vt_dnn_cnhw_strides(1, 1, 1, -1, s), 0);
}
END_TEST

static vt_conv_desc desc(int n, int cin, int h, int w, int cout, int k, int s, int p, int g)
{
    vt_conv_desc d = {n, cin, h, w, cout, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1,
                      k, k, s, s, p, p, g, 0};
    return d;
}

START_TEST(test_shape_ok)
{
    const char *why = NULL;
    vt_conv_desc d = desc(128, 64, 56, 56, 64, 3, 1, 1, 1);
    ck_assert_int_eq(vt_dnn_shape_ok(&d, &why), 1);
    d = desc(1024, 256, 128, 128, 64, 3, 1, 1, 1); /* x: 2^32 elements */
    ck_assert_int_eq(vt_dnn_shape_ok(&d, &why), 0);
    ck_assert_msg(why && strstr(why, "2^31"), "%s", why);
    d = desc(1, 1024, 8, 8, 1 << 16, 7, 1, 3, 1); /* x, y fine; filter 2^16*1024*49 > 2^31 */
    why = NULL;
    ck_assert_int_eq(vt_dnn_shape_ok(&d, &why), 0);
    ck_assert_msg(why && strstr(why, "filter"), "%s", why);
}
END_TEST

START_TEST(test_key_and_hash)
{
    vt_conv_desc d = desc(32, 16, 20, 18, 24, 3, 2, 1, 4);
    vt_dnn_key a = vt_dnn_key_of(&d, 0), b = vt_dnn_key_of(&d, 0), c = vt_dnn_key_of(&d, 7);
    const int want[13] = {32, 16, 20, 18, 24, 3, 3, 2, 2, 1, 1, 4, 0};
    ck_assert_int_eq(memcmp(a.v, want, sizeof want), 0);
    ck_assert_int_eq(c.v[12], 1); /* the math mode is a flag */
    ck_assert(vt_dnn_key_eq(&a, &b));
    ck_assert(!vt_dnn_key_eq(&a, &c));
    ck_assert_uint_eq(vt_dnn_key_hash(&a), vt_dnn_key_hash(&b));
    /* keep_columns and ho/wo are not part of the key (ho/wo follow from the rest) */
    d.keep_columns = 1;
    b = vt_dnn_key_of(&d, 0);
    ck_assert(vt_dnn_key_eq(&a, &b));
    /* each field changes the key and its hash */
    uint64_t h[14];
    h[13] = vt_dnn_key_hash(&a);
    for (int i = 0; i < 13; i++) {
        vt_dnn_key k = a;
        k.v[i] += i == 12 ? 1 : 3;
        ck_assert(!vt_dnn_key_eq(&a, &k));
        h[i] = vt_dnn_key_hash(&k);
    }
    for (int i = 0; i < 14; i++)
        for (int j = i + 1; j < 14; j++)
            ck_assert_msg(h[i] != h[j], "fields %d and %d give the same hash", i, j);
    /* FNV-1a over little-endian bytes: the same value on every machine */
    vt_dnn_key z = {{0}};
    uint64_t ref = 0xcbf29ce484222325ull;
    for (int i = 0; i < 13 * 4; i++) ref = (ref ^ 0) * 0x100000001b3ull;
    ck_assert_uint_eq(vt_dnn_key_hash(&z), ref);
    vt_dnn_key one = {{1}};
    ref = 0xcbf29ce484222325ull;
    for (int i = 0; i < 13 * 4; i++) ref = (ref ^ (i == 0 ? 1u : 0u)) * 0x100000001b3ull;
    ck_assert_uint_eq(vt_dnn_key_hash(&one), ref);
}
END_TEST

/* The convolutions of resnet18 at 224 px (stem, the 3x3s of each stage, the strided 3x3s and
 * 1x1 downsamples) at the batch sizes a run meets, both math modes: distinct keys, distinct
 * hashes, and a table of the backend's size holds them all. */
START_TEST(test_resnet_shapes_distinct)
{
    enum { MAXK = 256 };
    static vt_dnn_key keys[MAXK];
    static vt_dnn_key tk[512];
    static unsigned char used[512];
    vt_dnn_table t = {tk, used, 512, 0};
    memset(used, 0, sizeof used);
    int nk = 0;
    const int batches[] = {1, 7, 64, 128};
    for (int bi = 0; bi < 4; bi++)
        for (int fp32 = 0; fp32 < 2; fp32++) {
            int n = batches[bi];
            vt_conv_desc s[] = {desc(n, 3, 224, 224, 64, 7, 2, 3, 1),
                                desc(n, 64, 56, 56, 64, 3, 1, 1, 1),
                                desc(n, 64, 56, 56, 128, 3, 2, 1, 1),
                                desc(n, 64, 56, 56, 128, 1, 2, 0, 1),
                                desc(n, 128, 28, 28, 128, 3, 1, 1, 1),
                                desc(n, 128, 28, 28, 256, 3, 2, 1, 1),
                                desc(n, 128, 28, 28, 256, 1, 2, 0, 1),
                                desc(n, 256, 14, 14, 256, 3, 1, 1, 1),
                                desc(n, 256, 14, 14, 512, 3, 2, 1, 1),
                                desc(n, 256, 14, 14, 512, 1, 2, 0, 1),
                                desc(n, 512, 7, 7, 512, 3, 1, 1, 1),
                                desc(n, 512, 7, 7, 512, 3, 1, 1, 512)}; /* and a depthwise */
            for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
                keys[nk++] = vt_dnn_key_of(&s[i], fp32);
        }
    for (int i = 0; i < nk; i++) {
        for (int j = i + 1; j < nk; j++) {
            ck_assert(!vt_dnn_key_eq(&keys[i], &keys[j]));
            ck_assert_msg(vt_dnn_key_hash(&keys[i]) != vt_dnn_key_hash(&keys[j]),
                          "keys %d and %d: one hash", i, j);
        }
        ck_assert_int_eq(vt_dnn_table_find(&t, &keys[i]), -1);
        ck_assert_int_ge(vt_dnn_table_insert(&t, &keys[i]), 0);
    }
    for (int i = 0; i < nk; i++) {
        long slot = vt_dnn_table_find(&t, &keys[i]);
        ck_assert_int_ge(slot, 0);
        ck_assert(vt_dnn_key_eq(&tk[slot], &keys[i]));
    }
    ck_assert_uint_eq(t.count, (size_t)nk);
}
END_TEST

/* Keys whose hashes share a slot of a small table: linear probing, wrap-around, the 3/4 limit. */
START_TEST(test_table_collisions)
{
    enum { CAP = 8 };
    vt_dnn_key tk[CAP];
    unsigned char used[CAP] = {0};
    vt_dnn_table t = {tk, used, CAP, 0};
    /* five keys that all hash to slot 7 (the last: probing wraps to 0, 1, ...) and one that
     * hashes to slot 0 */
    vt_dnn_key at7[5], at0;
    int n7 = 0, have0 = 0;
    for (int n = 1; n < 100000 && (n7 < 5 || !have0); n++) {
        vt_conv_desc d = desc(n, 8, 9, 9, 8, 3, 1, 1, 1);
        vt_dnn_key k = vt_dnn_key_of(&d, 0);
        unsigned slot = (unsigned)(vt_dnn_key_hash(&k) & (CAP - 1));
        if (slot == 7 && n7 < 5) at7[n7++] = k;
        else if (slot == 0 && !have0) {
            at0 = k;
            have0 = 1;
        }
    }
    ck_assert(n7 == 5 && have0);
    ck_assert_int_eq(vt_dnn_table_insert(&t, &at7[0]), 7);
    ck_assert_int_eq(vt_dnn_table_insert(&t, &at7[1]), 0); /* wraps */
    ck_assert_int_eq(vt_dnn_table_insert(&t, &at0), 1);    /* its home is taken by at7[1] */
    ck_assert_int_eq(vt_dnn_table_insert(&t, &at7[2]), 2);
    ck_assert_int_eq(vt_dnn_table_find(&t, &at7[0]), 7);
    ck_assert_int_eq(vt_dnn_table_find(&t, &at7[1]), 0);
    ck_assert_int_eq(vt_dnn_table_find(&t, &at0), 1);
    ck_assert_int_eq(vt_dnn_table_find(&t, &at7[2]), 2);
    ck_assert_int_eq(vt_dnn_table_find(&t, &at7[3]), -1); /* same home, absent: stops at 3 */
    ck_assert_int_eq(vt_dnn_table_insert(&t, &at7[3]), 3);
    ck_assert_int_eq(vt_dnn_table_insert(&t, &at7[4]), 4);
    ck_assert_uint_eq(t.count, 6);
    /* 6 of 8 is the limit: the next insert is refused, finds still work */
    vt_conv_desc d = desc(1, 1, 5, 5, 1, 1, 1, 0, 1);
    vt_dnn_key other = vt_dnn_key_of(&d, 1);
    ck_assert_int_eq(vt_dnn_table_insert(&t, &other), -1);
    ck_assert_uint_eq(t.count, 6);
    ck_assert_int_eq(vt_dnn_table_find(&t, &other), -1); /* terminates with free slots left */
    ck_assert_int_eq(vt_dnn_table_find(&t, &at7[4]), 4);
    /* an empty table of no slots */
    vt_dnn_table none = {NULL, NULL, 0, 0};
    ck_assert_int_eq(vt_dnn_table_find(&none, &other), -1);
    ck_assert_int_eq(vt_dnn_table_insert(&none, &other), -1);
}
END_TEST

/* ---- workspace and the choice of an algorithm ---------------------------------------------- */

START_TEST(test_workspace_limit)
{
    const size_t MiB = (size_t)1 << 20;
    /* announced by conv_workspace: up to the cap, or im2col's bytes when those are more */
    ck_assert_uint_eq(vt_dnn_ws_limit(0, VT_DNN_WS_CAP, 1), VT_DNN_WS_CAP);
    ck_assert_uint_eq(vt_dnn_ws_limit(10 * MiB, VT_DNN_WS_CAP, 1), VT_DNN_WS_CAP);
    ck_assert_uint_eq(vt_dnn_ws_limit(300 * MiB, VT_DNN_WS_CAP, 1), 300 * MiB);
    /* found by a pass: only what the caller surely has */
    ck_assert_uint_eq(vt_dnn_ws_limit(10 * MiB, VT_DNN_WS_CAP, 0), 10 * MiB);
    ck_assert_uint_eq(vt_dnn_ws_limit(0, VT_DNN_WS_CAP, 0), 0);
    ck_assert_uint_eq(VT_DNN_WS_CAP, 256 * MiB);
    /* what conv_workspace reports holds either path */
    ck_assert_uint_eq(vt_dnn_ws_report(10 * MiB, 0), 10 * MiB);
    ck_assert_uint_eq(vt_dnn_ws_report(10 * MiB, 40 * MiB), 40 * MiB);
    ck_assert_uint_eq(vt_dnn_ws_report(0, 0), 0);
    /* a plan chosen under an announced limit always fits what conv_workspace reports */
    for (size_t col = 0; col <= 512 * MiB; col += 64 * MiB) {
        size_t limit = vt_dnn_ws_limit(col, VT_DNN_WS_CAP, 1);
        ck_assert_uint_ge(vt_dnn_ws_report(col, limit), limit);
        ck_assert_uint_ge(vt_dnn_ws_report(col, limit), col);
    }
}
END_TEST

static vt_dnn_algo_perf perf(int algo, int status, float ms, size_t mem, int math)
{
    vt_dnn_algo_perf p;
    memset(&p, 0, sizeof p);
    p.algo = algo;
    p.status = status;
    p.time = ms;
    p.memory = mem;
    p.math_type = math;
    return p;
}

START_TEST(test_pick)
{
    /* as cudnnFind* sorts them: fastest first, failures last */
    vt_dnn_algo_perf r[] = {
        perf(6, VT_DNN_STATUS_SUCCESS, 0.10f, (size_t)1 << 30, VT_DNN_TENSOR_OP_MATH), /* 1 GiB */
        perf(1, VT_DNN_STATUS_SUCCESS, 0.20f, 4096, VT_DNN_TENSOR_OP_MATH),
        perf(0, VT_DNN_STATUS_SUCCESS, 0.50f, 0, VT_DNN_FMA_MATH),
        perf(2, VT_DNN_STATUS_NOT_SUPPORTED, -1.0f, 0, VT_DNN_DEFAULT_MATH),
    };
    ck_assert_int_eq(vt_dnn_pick(r, 4, VT_DNN_WS_CAP, 0), 1);   /* 6 needs too much */
    ck_assert_int_eq(vt_dnn_pick(r, 4, (size_t)1 << 30, 0), 0); /* now it fits */
    ck_assert_int_eq(vt_dnn_pick(r, 4, VT_DNN_WS_CAP, 1), 2);   /* fp32: no tensor-op math */
    ck_assert_int_eq(vt_dnn_pick(r, 4, 0, 0), 2);               /* no workspace at all */
    ck_assert_int_eq(vt_dnn_pick(r, 2, 0, 0), -1);
    ck_assert_int_eq(vt_dnn_pick(r, 0, VT_DNN_WS_CAP, 0), -1);
    r[2].math_type = VT_DNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    ck_assert_int_eq(vt_dnn_pick(r, 4, VT_DNN_WS_CAP, 1), -1);
    r[2].math_type = VT_DNN_DEFAULT_MATH;
    ck_assert_int_eq(vt_dnn_pick(r, 4, VT_DNN_WS_CAP, 1), 2);
    /* only failures */
    vt_dnn_algo_perf bad[] = {perf(0, VT_DNN_STATUS_NOT_SUPPORTED, -1.0f, 0, 0),
                              perf(1, 4001, -1.0f, 0, 0), perf(-1, 0, 0.1f, 0, 0)};
    ck_assert_int_eq(vt_dnn_pick(bad, 3, VT_DNN_WS_CAP, 0), -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cudnn");
    TCase *tl = tcase_create("loader");
    tcase_add_test(tl, test_fake_cudnn_loads);
    tcase_add_test(tl, test_cudnn_missing_or_broken);
    tcase_add_test(tl, test_cudnn_wanted);
    tcase_add_test(tl, test_cudnn_shared_from_env);
    tcase_add_test(tl, test_cudnn_shared_missing);
    suite_add_tcase(s, tl);
    TCase *tp = tcase_create("plan");
    tcase_add_test(tp, test_cnhw_strides);
    tcase_add_test(tp, test_shape_ok);
    tcase_add_test(tp, test_key_and_hash);
    tcase_add_test(tp, test_resnet_shapes_distinct);
    tcase_add_test(tp, test_table_collisions);
    tcase_add_test(tp, test_workspace_limit);
    tcase_add_test(tp, test_pick);
    suite_add_tcase(s, tp);
    return s;
}

int main(void) { return vt_test_run(suite()); }
