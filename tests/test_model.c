/* lib/nn/model.c and lib/core/checkpoint.c: architectures, parameter and FLOP counts, the
 * initial weights (PyTorch's default), save and load (bit-exact predictions, class names), the
 * checkpoint container against truncation, corruption, foreign and newer files, prediction
 * errors, atomic saving, vt_model_forward and vt_model_export's errors and atomic writing
 * (tests/python/onnx_parity.py runs the files). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "core/core.h"
#include "backend/backend.h"
#include "image/image.h"
#include "image/letterbox.h"
#include "task/task.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "testutil.h"
#include "core/checkpoint.h"
#include "visiontrain/visiontrain.h"
#include "vt_config.h"

/* A fixed test image. */
static uint8_t fixed_img[20 * 20 * 4];
static void make_fixed(void)
{
    for (int i = 0; i < (int)sizeof fixed_img; i++)
        fixed_img[i] = (uint8_t)((i * 73 + (i / 80) * 29) ^ (i >> 3));
}

static void predict(vt_model *m, float *s, int n, const char *what)
{
    make_fixed();
    vt_status st = vt_model_predict_pixels(m, fixed_img, 20, 20, 3, 60, s, n);
    ck_assert_msg(st == VT_OK, "%s: predict: %d %s", what, st, vt_model_last_error(m));
}

/* ---- architectures -------------------------------------------------------------------------- */

START_TEST(test_archs)
{
    const char *archs[] = {"cls-n", "cls-s", "cls-m", "cnn-small"};
    uint64_t params[4];
    for (int a = 0; a < 4; a++) {
        vt_model *m = NULL;
        vt_status st = vt_model_create(&m, archs[a], 10, "imgsz=32");
        ck_assert_msg(st == VT_OK, "%s: create: %s", archs[a], vt_last_error());
        ck_assert_msg(strcmp(vt_model_arch(m), archs[a]) == 0, "%s: arch '%s'", archs[a],
                      vt_model_arch(m));
        ck_assert_msg(vt_model_task(m) == VT_TASK_CLASSIFY, "%s: task %d", archs[a], vt_model_task(m));
        ck_assert_msg(vt_model_num_classes(m) == 10, "%s: classes %d", archs[a], vt_model_num_classes(m));
        ck_assert_msg(vt_model_channels(m) == 3 && vt_model_imgsz(m) == 32, "%s: %d ch %d px",
                      archs[a], vt_model_channels(m), vt_model_imgsz(m));
        ck_assert_msg(vt_model_class_name(m, 0) == NULL, "%s: a fresh model has class names", archs[a]);
        params[a] = vt_model_num_params(m);
        ck_assert_msg(params[a] > 1000, "%s: %llu parameters", archs[a], (unsigned long long)params[a]);
        /* FLOPs: positive, growing roughly quadratically with the image size */
        double f32 = vt_model_flops(m, 32), f64 = vt_model_flops(m, 64), f40 = vt_model_flops(m, 40);
        double f128 = vt_model_flops(m, 128), f256 = vt_model_flops(m, 256);
        ck_assert_msg(f32 > 0 && f64 > 0 && f128 > 0 && f256 > 0, "%s: flops %g %g %g %g", archs[a],
                      f32, f64, f128, f256);
        ck_assert_msg(f40 > f32 && f40 < f64, "%s: flops(40)=%g not between flops(32)=%g and "
                      "flops(64)=%g", archs[a], f40, f32, f64);
        ck_assert_msg(f64 / f32 > 3.0 && f64 / f32 < 4.5, "%s: flops(64)/flops(32) = %g, expected ~4",
                      archs[a], f64 / f32);
        ck_assert_msg(f256 / f128 > 3.0 && f256 / f128 < 4.5,
                      "%s: flops(256)/flops(128) = %g, expected ~4", archs[a], f256 / f128);
        /* at least 2 FLOPs per parameter: every weight is used once per image at least */
        ck_assert_msg(f32 >= 2.0 * (double)params[a] * 0.9, "%s: %g FLOPs for %llu parameters",
                      archs[a], f32, (unsigned long long)params[a]);
        ck_assert_msg(vt_model_flops(m, 0) == 0 && vt_model_flops(m, -5) == 0,
                      "%s: flops of a bad size not 0", archs[a]);
        vt_model_destroy(m);
    }
    ck_assert_msg(params[0] < params[1] && params[1] < params[2],
                  "parameters do not grow n < s < m: %llu %llu %llu", (unsigned long long)params[0],
                  (unsigned long long)params[1], (unsigned long long)params[2]);
    /* parameters do not depend on the image size, but do on classes and channels */
    vt_model *a, *b, *c, *d;
    ck_assert_int_eq(vt_model_create(&a, "cls-n", 10, "imgsz=32"), VT_OK);
    ck_assert_int_eq(vt_model_create(&b, "cls-n", 10, "imgsz=64"), VT_OK);
    ck_assert_int_eq(vt_model_create(&c, "cls-n", 11, "imgsz=32"), VT_OK);
    ck_assert_int_eq(vt_model_create(&d, "cls-n", 10, "imgsz=32 channels=1"), VT_OK);
    ck_assert_msg(vt_model_num_params(a) == vt_model_num_params(b), "params depend on imgsz");
    ck_assert_msg(vt_model_num_params(c) == vt_model_num_params(a) + 128 + 1,
                  "one more class should add 129 parameters to cls-n: %llu vs %llu",
                  (unsigned long long)vt_model_num_params(c), (unsigned long long)vt_model_num_params(a));
    ck_assert_msg(vt_model_num_params(d) < vt_model_num_params(a), "1 channel not smaller than 3");
    vt_model_destroy(a);
    vt_model_destroy(b);
    vt_model_destroy(c);
    vt_model_destroy(d);
}
END_TEST

/* A new model starts as PyTorch's default layers: conv and linear weights and biases uniform
 * in +-1/sqrt(fan_in) (standard deviation bound/sqrt(3)); a detector's output convs at standard
 * deviation 0.01 with box biases 0 and class biases at the 0.01 prior; every batch norm at
 * scale 1 and shift 0, before a residual add too.  He-normal weights (sqrt(6) times larger) and
 * zero-scaled residual batch norms trained worse at the same learning rate (bench/README.md). */
static double sample_std(const float *w, int64_t n)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        s += w[i];
        s2 += (double)w[i] * w[i];
    }
    return sqrt(s2 / n - (s / n) * (s / n));
}

START_TEST(test_init_pytorch_default)
{
    static const char *const archs[] = {"cnn-small", "cls-n", "det-n", "seg-n"};
    for (int a = 0; a < 4; a++) {
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, archs[a], 5, "imgsz=64 seed=3"), VT_OK);
        const vt_graph *g = &m->graph;
        int checked = 0, heads = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            const vt_node *nd = &g->nodes[i];
            const float *w = m->params + nd->w_off, *b = m->params + nd->b_off;
            if (nd->op == VT_OP_BN) {
                for (int64_t j = 0; j < nd->w_n; j++) {
                    ck_assert_float_eq(w[j], 1.0f);
                    ck_assert_float_eq(b[j], 0.0f);
                }
                continue;
            }
            if (nd->op != VT_OP_CONV && nd->op != VT_OP_LINEAR) continue;
            double bound = 1.0 / sqrt((double)nd->w_n / nd->cout);
            double sd = sample_std(w, nd->w_n);
            if (m->task == VT_TASK_DETECT && nd->b_n) { /* the head's output convs */
                heads++;
                ck_assert_msg(fabs(sd - 0.01) < 0.002, "%s node %d: head std %g", archs[a], i, sd);
                for (int64_t j = 0; j < nd->b_n; j++)
                    ck_assert(b[j] == 0.0f || fabsf(b[j] + 4.595f) < 1e-3f);
                continue;
            }
            for (int64_t j = 0; j < nd->w_n; j++)
                ck_assert_msg(fabs(w[j]) <= bound, "%s node %d: |%g| > %g", archs[a], i, w[j],
                              bound);
            for (int64_t j = 0; j < nd->b_n; j++) ck_assert(fabs(b[j]) <= bound);
            if (nd->w_n >= 1000) { /* std of U(-b, b) is b/sqrt(3); He-normal's is sqrt(6)x */
                ck_assert_msg(fabs(sd / (bound / sqrt(3.0)) - 1) < 0.1, "%s node %d: std %g, bound %g",
                              archs[a], i, sd, bound);
                checked++;
            }
        }
        ck_assert_int_ge(checked, 2);
        ck_assert_int_eq(heads, m->task == VT_TASK_DETECT ? 2 : 0);
        vt_model_destroy(m);
    }
}
END_TEST

START_TEST(test_create_errors)
{
    const char *bad_archs[] = {"cls-x", "", "CLS-N", "cls-n ", "resnet50",
                               "a-very-long-architecture-name-that-overflows-every-buffer-there-is"};
    for (size_t i = 0; i < sizeof bad_archs / sizeof bad_archs[0]; i++) {
        vt_model *m = (vt_model *)&m;
        vt_status st = vt_model_create(&m, bad_archs[i], 3, NULL);
        ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "arch '%s': status %d", bad_archs[i], st);
        ck_assert_msg(m == NULL, "arch '%s': *out not NULL", bad_archs[i]);
        const char *msg = vt_last_error();
        if (strlen(bad_archs[i]) < 30)
            ck_assert_msg(strstr(msg, "cls-n") && strstr(msg, "cls-s") && strstr(msg, "cls-m") &&
                              strstr(msg, "cnn-small"),
                          "arch '%s': message does not list the known models: '%s'", bad_archs[i],
                          msg);
        else
            ck_assert_msg(*msg, "arch '%s': empty message", bad_archs[i]);
    }
    int bad_nc[] = {1, 0, -1, -100000, 100001};
    for (size_t i = 0; i < sizeof bad_nc / sizeof bad_nc[0]; i++) {
        vt_model *m = (vt_model *)&m;
        vt_status st = vt_model_create(&m, "cnn-small", bad_nc[i], "imgsz=16");
        ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "num_classes=%d: status %d", bad_nc[i], st);
        ck_assert_msg(m == NULL, "num_classes=%d: *out not NULL", bad_nc[i]);
        ck_assert_msg(strstr(vt_last_error(), "num_classes"), "num_classes=%d: message '%s'",
                      bad_nc[i], vt_last_error());
    }
    vt_model *m;
    ck_assert_msg(vt_model_create(&m, "cnn-small", 2, "imgsz=16") == VT_OK, "2 classes: %s",
                  vt_last_error());
    vt_model_destroy(m);
    ck_assert_msg(vt_model_create(NULL, "cls-n", 3, NULL) == VT_ERR_INVALID_ARGUMENT, "NULL out");
    ck_assert_msg(vt_model_create(&m, NULL, 3, NULL) == VT_ERR_INVALID_ARGUMENT, "NULL arch");
    ck_assert_msg(m == NULL, "NULL arch: *out not NULL");
}
END_TEST

/* ---- save / load ----------------------------------------------------------------------------- */

START_TEST(test_save_load_roundtrip)
{
    const char *opts[] = {"imgsz=16 seed=5", "imgsz=24 channels=1 seed=2 dropout=0.3"};
    const char *archs[] = {"cls-n", "cnn-small"};
    for (int k = 0; k < 2; k++) {
        vt_model *m, *l;
        ck_assert_int_eq(vt_model_create(&m, archs[k], 3 + k, opts[k]), VT_OK);
        float s1[8], s2[8];
        predict(m, s1, 8, archs[k]);
        float sum = 0;
        for (int i = 0; i < 3 + k; i++) {
            ck_assert_msg(s1[i] >= 0 && s1[i] <= 1, "%s: score %d = %g", archs[k], i, s1[i]);
            sum += s1[i];
        }
        ck_assert_msg(fabsf(sum - 1) < 1e-4f, "%s: scores sum to %g", archs[k], sum);
        vt_status st = vt_model_save(m, vt_test_path("m.vtm"));
        ck_assert_msg(st == VT_OK, "%s: save: %s", archs[k], vt_model_last_error(m));
        st = vt_model_load(&l, vt_test_path("m.vtm"));
        ck_assert_msg(st == VT_OK, "%s: load: %s", archs[k], vt_last_error());
        ck_assert_msg(vt_model_num_params(l) == vt_model_num_params(m), "%s: params %llu vs %llu",
                      archs[k], (unsigned long long)vt_model_num_params(l),
                      (unsigned long long)vt_model_num_params(m));
        ck_assert_msg(strcmp(vt_model_arch(l), archs[k]) == 0 &&
                          vt_model_num_classes(l) == 3 + k &&
                          vt_model_channels(l) == vt_model_channels(m) &&
                          vt_model_imgsz(l) == vt_model_imgsz(m),
                      "%s: configuration not preserved (%s %d classes %d ch %d px)", archs[k],
                      vt_model_arch(l), vt_model_num_classes(l), vt_model_channels(l),
                      vt_model_imgsz(l));
        ck_assert_msg(vt_model_class_name(l, 0) == NULL, "%s: names appeared", archs[k]);
        predict(l, s2, 8, archs[k]);
        ck_assert_msg(memcmp(s1, s2, (size_t)(3 + k) * sizeof(float)) == 0,
                      "%s: predictions differ after save/load (%.9g vs %.9g)", archs[k], s1[0], s2[0]);
        ck_assert_msg(memcmp(m->params, l->params, (size_t)m->graph.n_params * 4) == 0 &&
                          memcmp(m->buffers, l->buffers, (size_t)m->graph.n_buffers * 4) == 0,
                      "%s: weights differ after save/load", archs[k]);
        /* saving the loaded model gives the same bytes */
        ck_assert_int_eq(vt_model_save(l, vt_test_path("m2.vtm")), VT_OK);
        size_t n1, n2;
        void *b1 = vt_test_read_file(vt_test_path("m.vtm"), &n1), *b2 = vt_test_read_file(vt_test_path("m2.vtm"), &n2);
        ck_assert_msg(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0,
                      "%s: re-saving a loaded model changes the file", archs[k]);
        free(b1);
        free(b2);
        vt_model_destroy(m);
        vt_model_destroy(l);
    }
}
END_TEST

START_TEST(test_class_names_after_training)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path("syn"), VT_TASK_CLASSIFY,
                                       "classes=3 train=4 val=0 imgsz=16 seed=2"), VT_OK);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("syn")), VT_OK);
    vt_model *m, *l;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 3, "imgsz=16"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "epochs=1"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "batch=4"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "workers=0"), VT_OK);
    vt_status st = vt_trainer_run(t);
    ck_assert_msg(st == VT_OK, "training: %s", vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(vt_model_class_name(m, i) &&
                          strcmp(vt_model_class_name(m, i), vt_dataset_class_name(ds, i)) == 0,
                      "trained model: class %d is '%s', dataset says '%s'", i,
                      vt_model_class_name(m, i), vt_dataset_class_name(ds, i));
    ck_assert_msg(vt_model_class_name(m, 3) == NULL && vt_model_class_name(m, -1) == NULL,
                  "class name out of range not NULL");
    float s1[3], s2[3];
    predict(m, s1, 3, "trained");
    ck_assert_int_eq(vt_model_save(m, vt_test_path("named.vtm")), VT_OK);
    ck_assert_msg(vt_model_load(&l, vt_test_path("named.vtm")) == VT_OK, "load: %s", vt_last_error());
    for (int i = 0; i < 3; i++)
        ck_assert_msg(vt_model_class_name(l, i) &&
                          strcmp(vt_model_class_name(l, i), vt_dataset_class_name(ds, i)) == 0,
                      "loaded model: class %d is '%s', expected '%s'", i, vt_model_class_name(l, i),
                      vt_dataset_class_name(ds, i));
    predict(l, s2, 3, "loaded");
    ck_assert_msg(memcmp(s1, s2, sizeof s1) == 0, "trained model: predictions differ after load");
    vt_model_destroy(m);
    vt_model_destroy(l);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- the checkpoint container ---------------------------------------------------------------- */

static unsigned char *good;
static size_t good_n;

/* A saved cnn-small with class names (all four sections). */
static void make_good(void)
{
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 3, "imgsz=16 seed=1"), VT_OK);
    const char *names[3] = {"cat", "dog", "emu"};
    ck_assert_int_eq(vt_model_set_class_names(m, names, 3), VT_OK);
    ck_assert_int_eq(vt_model_save(m, vt_test_path("good.vtm")), VT_OK);
    vt_model_destroy(m);
    good = vt_test_read_file(vt_test_path("good.vtm"), &good_n);
    ck_assert_msg(good && good_n > 100, "good checkpoint of %zu bytes", good_n);
    vt_model *l;
    ck_assert_msg(vt_model_load(&l, vt_test_path("good.vtm")) == VT_OK, "the good file does not load: %s",
                  vt_last_error());
    vt_model_destroy(l);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Write bytes to bad.vtm and load them: must fail with `want` (0: any of CHECKPOINT/NOT_FOUND),
 * leave *out NULL and give a message naming the file. */
static void expect_load_fail(const void *bytes, size_t n, vt_status want, const char *needle,
                             const char *what, long arg)
{
    ck_assert_int_eq(vt_test_write_file(vt_test_path("bad.vtm"), bytes, n), 0);
    vt_model *m = (vt_model *)&m;
    vt_status st = vt_model_load(&m, vt_test_path("bad.vtm"));
    if (st == VT_OK) vt_model_destroy(m);
    ck_assert_msg(st == want, "%s %ld: status %d (%s), expected %d; message '%s'", what, arg, st,
                  vt_status_string(st), want, st ? vt_last_error() : "");
    ck_assert_msg(m == NULL, "%s %ld: *out not NULL after failure", what, arg);
    ck_assert_msg(strstr(vt_last_error(), "bad.vtm") != NULL, "%s %ld: message '%s' does not name "
                  "the file", what, arg, vt_last_error());
    ck_assert_msg(needle == NULL || strstr(vt_last_error(), needle) != NULL,
                  "%s %ld: message '%s' lacks '%s'", what, arg, vt_last_error(), needle);
}

START_TEST(test_ckpt_truncated)
{
    make_good();
    /* every byte offset in the first 256 bytes and the last 64, every 7th (or coarser on a big
     * file) in between */
    size_t step = good_n / 1500 > 7 ? good_n / 1500 : 7;
    int tried = 0;
    for (size_t len = 0; len < good_n; len += len < 256 || len + 64 >= good_n ? 1 : step) {
        expect_load_fail(good, len, VT_ERR_CHECKPOINT, NULL, "truncated at", (long)len);
        tried++;
    }
    ck_assert_msg(tried > 300, "only %d truncations tried", tried);
    /* an empty file, and one with bytes appended */
    expect_load_fail(good, 0, VT_ERR_CHECKPOINT, NULL, "empty file", 0);
    unsigned char *longer = malloc(good_n + 3);
    memcpy(longer, good, good_n);
    memcpy(longer + good_n, "xyz", 3);
    expect_load_fail(longer, good_n + 3, VT_ERR_CHECKPOINT, NULL, "3 bytes appended", 3);
    free(longer);
    free(good);
}
END_TEST

START_TEST(test_ckpt_flipped)
{
    make_good();
    /* offsets: every header byte (file header, each section header, the first and last bytes
     * of each payload, the trailer), plus a spread over the payloads */
    size_t *offs = malloc(sizeof(size_t) * 4096);
    int n = 0;
    for (size_t i = 0; i < 16; i++) offs[n++] = i;
    uint32_t nsec = rd32(good + 12);
    ck_assert_msg(nsec == 4, "the good file has %u sections, expected META NAME PARM BUFS", nsec);
    size_t off = 16;
    for (uint32_t s = 0; s < nsec; s++) {
        for (size_t i = 0; i < 28; i++) offs[n++] = off + i;
        uint64_t stored = rd32(good + off + 16) | (uint64_t)rd32(good + off + 20) << 32;
        off += 28;
        ck_assert_msg(off + stored + 4 <= good_n, "section %u overruns the file", s);
        for (size_t i = 0; i < 4 && i < stored; i++) {
            offs[n++] = off + i;
            offs[n++] = off + stored - 1 - i;
        }
        off += stored;
    }
    ck_assert_msg(off + 4 == good_n, "layout: %zu + 4 != %zu", off, good_n);
    for (size_t i = 0; i < 4; i++) offs[n++] = off + i;
    for (size_t i = 16; i < good_n && n < 4096; i += good_n / 600 + 1) offs[n++] = i;
    unsigned char *b = malloc(good_n);
    for (int k = 0; k < n; k++)
        for (int v = 0; v < 2; v++) {
            memcpy(b, good, good_n);
            b[offs[k]] ^= v ? 0xFF : 0x01;
            expect_load_fail(b, good_n, VT_ERR_CHECKPOINT, NULL, v ? "byte inverted at"
                             : "low bit flipped at", (long)offs[k]);
        }
    free(b);
    free(offs);
    free(good);
}
END_TEST

START_TEST(test_ckpt_foreign_and_newer)
{
    make_good();
    /* foreign files */
    uint8_t px[4 * 4 * 3] = {0};
    ck_assert_int_eq(vt_image_save_png(vt_test_path("img.png"), px, 4, 4, 3, 12), VT_OK);
    size_t pn;
    void *png = vt_test_read_file(vt_test_path("img.png"), &pn);
    expect_load_fail(png, pn, VT_ERR_CHECKPOINT, "checkpoint", "a PNG file", 0);
    free(png);
    const char *text = "arch=cls-n\nnum_classes=3\n";
    expect_load_fail(text, strlen(text), VT_ERR_CHECKPOINT, NULL, "a text file", 0);
    expect_load_fail("VTCKPT\r", 7, VT_ERR_CHECKPOINT, NULL, "7 magic bytes", 0);
    /* a newer (and a zero) format version, with a consistent file checksum */
    unsigned char *b = malloc(good_n);
    uint32_t versions[] = {2, 3, 1000, 0xFFFFFFFFu, 0};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        memcpy(b, good, good_n);
        wr32(b + 8, versions[i]);
        wr32(b + good_n - 4, (uint32_t)crc32(0L, b, (uInt)(good_n - 4)));
        expect_load_fail(b, good_n, VT_ERR_CHECKPOINT, "version", "format version",
                         (long)versions[i]);
    }
    /* a huge section count */
    memcpy(b, good, good_n);
    wr32(b + 12, 1u << 30);
    wr32(b + good_n - 4, (uint32_t)crc32(0L, b, (uInt)(good_n - 4)));
    expect_load_fail(b, good_n, VT_ERR_CHECKPOINT, NULL, "section count 2^30", 0);
    free(b);
    free(good);
    /* a missing file; a folder */
    vt_model *m = (vt_model *)&m;
    vt_status st = vt_model_load(&m, vt_test_path("no-such-file.vtm"));
    ck_assert_msg(st == VT_ERR_NOT_FOUND, "missing file: status %d", st);
    ck_assert_msg(m == NULL && strstr(vt_last_error(), "no-such-file.vtm"),
                  "missing file: out %p, message '%s'", (void *)m, vt_last_error());
    mkdir(vt_test_path("folder.vtm"), 0755);
    st = vt_model_load(&m, vt_test_path("folder.vtm"));
    ck_assert_msg(st != VT_OK && m == NULL, "a folder loads: status %d", st);
    ck_assert_msg(strstr(vt_last_error(), "folder.vtm"), "folder: message '%s'", vt_last_error());
}
END_TEST

/* Well-formed containers (valid CRCs) whose model sections are wrong. */
static void write_sections(const char *meta, int with_names, const char *names, int params,
                           long nparams, long nbufs)
{
    vt_ckpt_writer *w;
    ck_assert_int_eq(vt_ckw_create(&w), VT_OK);
    ck_assert_int_eq(vt_ckw_add(w, VT_TAG('M', 'E', 'T', 'A'), meta, strlen(meta), 0), VT_OK);
    if (with_names)
        ck_assert_int_eq(vt_ckw_add(w, VT_TAG('N', 'A', 'M', 'E'), names, strlen(names), 1), VT_OK);
    float *z = calloc((size_t)(nparams > nbufs ? nparams : nbufs) + 1, sizeof(float));
    if (params) {
        ck_assert_int_eq(vt_ckw_add(w, VT_TAG('P', 'A', 'R', 'M'), z, (size_t)nparams * 4, 1), VT_OK);
        ck_assert_int_eq(vt_ckw_add(w, VT_TAG('B', 'U', 'F', 'S'), z, (size_t)nbufs * 4, 1), VT_OK);
    }
    free(z);
    ck_assert_int_eq(vt_ckw_write(w, vt_test_path("crafted.vtm")), VT_OK);
    vt_ckw_destroy(w);
}

static void graph_sizes(int channels, int imgsz, long *np, long *nb)
{
    vt_graph g;
    int out[VT_MODEL_MAX_OUTPUTS], n_out;
    ck_assert_int_eq(vt_arch_build(&g, vt_arch_find("cnn-small"), 3, channels, imgsz, 0, out,
                                   &n_out), VT_OK);
    *np = (long)g.n_params;
    *nb = (long)g.n_buffers;
    vt_graph_free(&g);
}

static void expect_crafted_fail(const char *what)
{
    vt_model *m = (vt_model *)&m;
    vt_status st = vt_model_load(&m, vt_test_path("crafted.vtm"));
    if (st == VT_OK) vt_model_destroy(m);
    ck_assert_msg(st == VT_ERR_CHECKPOINT, "%s: status %d (%s), expected VT_ERR_CHECKPOINT", what,
                  st, st ? vt_last_error() : "loaded");
    ck_assert_msg(m == NULL, "%s: *out not NULL", what);
    ck_assert_msg(strstr(vt_last_error(), "crafted.vtm"), "%s: message '%s' does not name the file",
                  what, vt_last_error());
}

START_TEST(test_ckpt_bad_sections)
{
    long np, nb;
    graph_sizes(3, 16, &np, &nb);
    const char *meta_ok = "arch=cnn-small\ntask=1\nnum_classes=3\nchannels=3\nimgsz=16\n"
                          "dropout=0\nseed=0\n";
    write_sections(meta_ok, 1, "a\nb\nc\n", 1, np, nb);
    vt_model *m;
    ck_assert_msg(vt_model_load(&m, vt_test_path("crafted.vtm")) == VT_OK, "crafted good file: %s",
                  vt_last_error());
    ck_assert_msg(strcmp(vt_model_class_name(m, 2), "c") == 0, "crafted names: '%s'",
                  vt_model_class_name(m, 2));
    vt_model_destroy(m);
    write_sections(meta_ok, 1, "a\nb\n", 1, np, nb);
    expect_crafted_fail("2 class names for 3 classes");
    write_sections(meta_ok, 1, "a\nb\nc\nd\n", 1, np, nb);
    expect_crafted_fail("4 class names for 3 classes");
    write_sections(meta_ok, 0, NULL, 1, np - 1, nb);
    expect_crafted_fail("one parameter short");
    write_sections(meta_ok, 0, NULL, 1, np, nb + 1);
    expect_crafted_fail("one buffer too many");
    write_sections(meta_ok, 0, NULL, 0, 0, 0);
    expect_crafted_fail("no PARM/BUFS sections");
    write_sections("arch=cnn-small\nnum_classes=3\n", 0, NULL, 1, np, nb);
    expect_crafted_fail("incomplete META");
    write_sections("arch=cls-zz\ntask=1\nnum_classes=3\nchannels=3\nimgsz=16\ndropout=0\nseed=0\n",
                   0, NULL, 1, np, nb);
    expect_crafted_fail("unknown arch");
    write_sections("arch=cnn-small\ntask=1\nnum_classes=1\nchannels=3\nimgsz=16\ndropout=0\nseed=0\n",
                   0, NULL, 1, np, nb);
    expect_crafted_fail("num_classes=1");
    /* configurations vt_model_create refuses, with parameter sections of matching size */
    struct { int ch, sz; const char *meta; } bad[] = {
        {7, 16, "arch=cnn-small\ntask=1\nnum_classes=3\nchannels=7\nimgsz=16\ndropout=0\nseed=0\n"},
        {2, 16, "arch=cnn-small\ntask=1\nnum_classes=3\nchannels=2\nimgsz=16\ndropout=0\nseed=0\n"},
        {3, 16, "arch=cnn-small\ntask=1\nnum_classes=3\nchannels=3\nimgsz=16\ndropout=7\nseed=0\n"},
        {3, 16, "arch=cnn-small\ntask=1\nnum_classes=3\nchannels=3\nimgsz=16\ndropout=nan\nseed=0\n"},
        {3, 9000, "arch=cnn-small\ntask=1\nnum_classes=3\nchannels=3\nimgsz=9000\ndropout=0\nseed=0\n"},
        {3, 16, "arch=cnn-small\ntask=1\nnum_classes=3x\nchannels=3\nimgsz=16\ndropout=0\nseed=0\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        graph_sizes(bad[i].ch, bad[i].sz, &np, &nb);
        write_sections(bad[i].meta, 0, NULL, 1, np, nb);
        char what[64];
        snprintf(what, sizeof what, "invalid META #%zu", i);
        expect_crafted_fail(what);
    }
}
END_TEST

/* A det-s written before its layout changed (no "rev", rev=1: ReLU, rev=2: a centre and size
 * box code) has the same parameter count as today's but computes something else: refused,
 * naming the revisions; rev=3 loads.  det-n is at revision 4 (its widths changed too), seg-*
 * at 3 (their decoder). */
START_TEST(test_ckpt_layout_revision)
{
    vt_graph g;
    int out[VT_MODEL_MAX_OUTPUTS], n_out;
    ck_assert_int_eq(vt_arch_build(&g, vt_arch_find("det-s"), 3, 3, 64, 0, out, &n_out), VT_OK);
    long np = (long)g.n_params, nb = (long)g.n_buffers;
    vt_graph_free(&g);
    const char *base = "arch=det-s\ntask=2\nnum_classes=3\nchannels=3\nimgsz=64\ndropout=0\n"
                       "seed=0\n";
    char meta[256];
    snprintf(meta, sizeof meta, "%srev=3\n", base);
    write_sections(meta, 0, NULL, 1, np, nb);
    vt_model *m;
    ck_assert_msg(vt_model_load(&m, vt_test_path("crafted.vtm")) == VT_OK, "rev=3 det-s: %s",
                  vt_last_error());
    vt_model_destroy(m);
    write_sections(base, 0, NULL, 1, np, nb);
    expect_crafted_fail("det-s without rev");
    ck_assert_msg(strstr(vt_last_error(), "revision 1") && strstr(vt_last_error(), "revision 3"),
                  "message '%s' does not name both revisions", vt_last_error());
    snprintf(meta, sizeof meta, "%srev=2\n", base);
    write_sections(meta, 0, NULL, 1, np, nb);
    expect_crafted_fail("det-s rev=2");
    snprintf(meta, sizeof meta, "%srev=1\n", base);
    write_sections(meta, 0, NULL, 1, np, nb);
    expect_crafted_fail("det-s rev=1");
    /* a classifier has had one layout: no rev is revision 1, as every old file says */
    ck_assert_int_eq(vt_arch_find("cnn-small")->revision, 1);
    ck_assert_int_eq(vt_arch_find("seg-n")->revision, 3); /* the feature-pyramid decoder */
    ck_assert_int_eq(vt_arch_find("det-n")->revision, 4); /* 96 wide, edge box code */
    ck_assert_int_eq(vt_arch_find("iseg-n")->revision, 2);  /* the edge box code */
}
END_TEST

/* ---- prediction errors ------------------------------------------------------------------------ */

START_TEST(test_predict_errors)
{
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 4, "imgsz=16"), VT_OK);
    make_fixed();
    float s[8];
    vt_status st = vt_model_predict_pixels(m, fixed_img, 20, 20, 3, 60, s, 3);
    ck_assert_msg(st == VT_ERR_BUFFER_TOO_SMALL, "pixels, n=3 for 4 classes: %d", st);
    ck_assert_msg(strstr(vt_model_last_error(m), "4") != NULL, "buffer too small: message '%s'",
                  vt_model_last_error(m));
    st = vt_model_predict_pixels(m, fixed_img, 20, 20, 3, 60, s, 0);
    ck_assert_msg(st == VT_ERR_BUFFER_TOO_SMALL, "pixels, n=0: %d", st);
    st = vt_model_predict_pixels(m, fixed_img, 20, 20, 3, 60, s, -1);
    ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "pixels, n=-1: %d", st);
    ck_assert_int_eq(vt_image_save_png(vt_test_path("ok.png"), fixed_img, 20, 20, 3, 60), VT_OK);
    st = vt_model_predict_file(m, vt_test_path("ok.png"), s, 3);
    ck_assert_msg(st == VT_ERR_BUFFER_TOO_SMALL, "file, n=3 for 4 classes: %d", st);
    st = vt_model_predict_file(m, vt_test_path("ok.png"), s, 4);
    ck_assert_msg(st == VT_OK, "file, n=4: %s", vt_model_last_error(m));
    /* file errors */
    st = vt_model_predict_file(m, vt_test_path("missing.png"), s, 4);
    ck_assert_msg(st == VT_ERR_NOT_FOUND, "missing image: %d", st);
    ck_assert_msg(strstr(vt_model_last_error(m), "missing.png"), "missing image: message '%s'",
                  vt_model_last_error(m));
    ck_assert_msg(strcmp(vt_model_last_error(m), vt_last_error()) == 0,
                  "missing image: handle and thread messages differ");
    size_t n;
    unsigned char *b = vt_test_read_file(vt_test_path("ok.png"), &n);
    for (size_t i = 41; i < n; i++) b[i] ^= 0x5A;
    ck_assert_int_eq(vt_test_write_file(vt_test_path("corrupt.png"), b, n), 0);
    ck_assert_int_eq(vt_test_write_file(vt_test_path("half.png"), b, n / 2), 0);
    free(b);
    ck_assert_int_eq(vt_test_write_file(vt_test_path("text.jpg"), "hello", 5), 0);
    ck_assert_int_eq(vt_test_write_file(vt_test_path("empty.png"), "", 0), 0);
    const char *bad[] = {"corrupt.png", "half.png", "text.jpg", "empty.png"};
    for (int i = 0; i < 4; i++) {
        st = vt_model_predict_file(m, vt_test_path(bad[i]), s, 4);
        ck_assert_msg(st == VT_ERR_FORMAT, "%s: status %d (%s)", bad[i], st, vt_model_last_error(m));
        ck_assert_msg(strstr(vt_model_last_error(m), bad[i]), "%s: message '%s'", bad[i],
                      vt_model_last_error(m));
    }
    st = vt_model_predict_file(m, vt_test_scratch, s, 4);
    ck_assert_msg(st != VT_OK, "predicting a folder succeeded");
    /* geometry */
    struct { int w, h, c; size_t stride; } g[] = {
        {0, 20, 3, 60}, {20, 0, 3, 60}, {-1, 20, 3, 60}, {20, -5, 3, 60}, {20, 20, 2, 60},
        {20, 20, 0, 60}, {20, 20, 5, 100}, {20, 20, 3, 59}, {20, 20, 4, 79}, {40000, 1, 1, 40000}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        st = vt_model_predict_pixels(m, fixed_img, g[i].w, g[i].h, g[i].c, g[i].stride, s, 4);
        ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "geometry %dx%d c=%d stride %zu: status %d",
                      g[i].w, g[i].h, g[i].c, g[i].stride, st);
        ck_assert_msg(*vt_model_last_error(m), "geometry case %zu: no message", i);
    }
    /* the model still works, and the input forms agree: RGBA = RGB, padded rows = tight rows */
    float rgb[4], rgba[4], padded[4], gray[4];
    uint8_t px4[20 * 20 * 4], pad[20 * 64], g1[20 * 20];
    for (int i = 0; i < 400; i++) {
        memcpy(px4 + i * 4, fixed_img + i * 3, 3);
        px4[i * 4 + 3] = (uint8_t)(i * 11);
        g1[i] = fixed_img[i];
    }
    for (int y = 0; y < 20; y++) memcpy(pad + y * 64, fixed_img + y * 60, 60);
    ck_assert_int_eq(vt_model_predict_pixels(m, fixed_img, 20, 20, 3, 60, rgb, 4), VT_OK);
    ck_assert_int_eq(vt_model_predict_pixels(m, px4, 20, 20, 4, 80, rgba, 4), VT_OK);
    ck_assert_int_eq(vt_model_predict_pixels(m, pad, 20, 20, 3, 64, padded, 4), VT_OK);
    ck_assert_int_eq(vt_model_predict_pixels(m, g1, 20, 20, 1, 20, gray, 4), VT_OK);
    ck_assert_msg(memcmp(rgb, rgba, sizeof rgb) == 0, "RGBA input differs from RGB (alpha used?)");
    ck_assert_msg(memcmp(rgb, padded, sizeof rgb) == 0, "padded rows differ from tight rows");
    for (int i = 0; i < 4; i++) ck_assert_msg(isfinite(gray[i]), "gray input: score %d = %g", i, gray[i]);
    vt_model_destroy(m);
}
END_TEST

/* ---- atomic save ------------------------------------------------------------------------------- */

static int count_entries(const char *dir, const char *skip_prefix_ok)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            ck_assert_msg(!strstr(e->d_name, ".tmp"), "a temporary file was left: %s/%s", dir,
                          e->d_name);
            (void)skip_prefix_ok;
            n++;
        }
    closedir(d);
    return n;
}

START_TEST(test_atomic_save)
{
    vt_model *a, *b, *l;
    ck_assert_int_eq(vt_model_create(&a, "cnn-small", 3, "imgsz=16 seed=1"), VT_OK);
    ck_assert_int_eq(vt_model_create(&b, "cnn-small", 3, "imgsz=16 seed=2"), VT_OK);
    float sa[3], sb[3], sl[3];
    predict(a, sa, 3, "a");
    predict(b, sb, 3, "b");
    ck_assert_msg(memcmp(sa, sb, sizeof sa) != 0, "models of seeds 1 and 2 agree");
    mkdir(vt_test_path("out"), 0755);
    char path[4200];
    snprintf(path, sizeof path, "%s/out/model.vtm", vt_test_scratch);
    ck_assert_int_eq(vt_model_save(a, path), VT_OK);
    ck_assert_int_eq(vt_model_save(b, path), VT_OK); /* over the existing file */
    ck_assert_msg(vt_model_load(&l, path) == VT_OK, "load: %s", vt_last_error());
    predict(l, sl, 3, "reloaded");
    ck_assert_msg(memcmp(sl, sb, sizeof sl) == 0, "saving over a file did not replace it");
    vt_model_destroy(l);
    ck_assert_msg(count_entries(vt_test_path("out"), NULL) == 1, "the output folder holds extra files");
    /* a folder that does not exist */
    snprintf(path, sizeof path, "%s/out/no/such/dir/model.vtm", vt_test_scratch);
    vt_status st = vt_model_save(a, path);
    ck_assert_msg(st == VT_ERR_NOT_FOUND || st == VT_ERR_IO, "save into a missing folder: %d", st);
    ck_assert_msg(strstr(vt_model_last_error(a), "model.vtm"), "missing folder: message '%s'",
                  vt_model_last_error(a));
    ck_assert_msg(strcmp(vt_model_last_error(a), vt_last_error()) == 0,
                  "missing folder: handle and thread messages differ");
    /* the target is a folder: the rename fails, the temporary file must go */
    snprintf(path, sizeof path, "%s/out/adir", vt_test_scratch);
    mkdir(path, 0755);
    st = vt_model_save(a, path);
    ck_assert_msg(st == VT_ERR_IO, "save onto a folder: %d", st);
    ck_assert_msg(strstr(vt_model_last_error(a), "adir"), "save onto a folder: message '%s'",
                  vt_model_last_error(a));
    ck_assert_msg(count_entries(vt_test_path("out"), NULL) == 2, "save onto a folder left files behind");
    ck_assert_msg(count_entries(path, NULL) == 0, "save onto a folder wrote into it");
    /* the earlier file is intact */
    snprintf(path, sizeof path, "%s/out/model.vtm", vt_test_scratch);
    ck_assert_msg(vt_model_load(&l, path) == VT_OK, "after failed saves: %s", vt_last_error());
    predict(l, sl, 3, "after failed saves");
    ck_assert_msg(memcmp(sl, sb, sizeof sl) == 0, "a failed save changed the existing file");
    vt_model_destroy(l);
    vt_model_destroy(a);
    vt_model_destroy(b);
}
END_TEST

/* ---- forward and export ------------------------------------------------------------------- */

START_TEST(test_forward)
{
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 3, "imgsz=20"), VT_OK);
    int c, h, w;
    ck_assert_int_eq(vt_model_output_shape(m, &c, &h, &w), VT_OK);
    ck_assert(c == 3 && h == 1 && w == 1);
    ck_assert_int_eq(vt_model_output_shape(NULL, &c, &h, &w), VT_ERR_INVALID_ARGUMENT);
    /* the same floats as the predictor's own conversion give the same probabilities */
    make_fixed();
    float in[2][3 * 20 * 20], out[8], want[3];
    for (int i = 0; i < 20 * 20; i++)
        for (int k = 0; k < 3; k++) in[0][k * 400 + i] = in[1][k * 400 + i] = fixed_img[3 * i + k] * (1.0f / 255.0f);
    predict(m, want, 3, "reference");
    for (int i = 0; i < 8; i++) out[i] = -1;
    ck_assert_msg(vt_model_forward(m, in[0], 2, out, 8) == VT_OK, "forward: %s", vt_model_last_error(m));
    /* a batch of two may take other convolution kernels than one image: float rounding */
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabsf(out[i] - want[i % 3]) <= 1e-5f, "forward %g %g %g, predict %g %g %g",
                      out[i / 3 * 3], out[i / 3 * 3 + 1], out[i / 3 * 3 + 2], want[0], want[1],
                      want[2]);
    ck_assert(out[6] == -1 && out[7] == -1);
    ck_assert_int_eq(vt_model_forward(m, in[0], 2, out, 5), VT_ERR_BUFFER_TOO_SMALL);
    ck_assert_msg(strstr(vt_model_last_error(m), "6 output floats"), "%s", vt_model_last_error(m));
    ck_assert_int_eq(vt_model_forward(m, in[0], 0, out, 8), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_model_forward(m, NULL, 1, out, 8), VT_ERR_INVALID_ARGUMENT);
    vt_model_destroy(m);
}
END_TEST

/* vt_model_forward in batches (16 images at most at once): 20 different images give what each
 * gives alone, in their order, for a classifier's probabilities and a detector's head. */
START_TEST(test_forward_batches)
{
    static const char *const archs[] = {"cls-s", "det-n"};
    enum { N = 20, S = 32 };
    for (int a = 0; a < 2; a++) {
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, archs[a], 3, "imgsz=32 seed=5"), VT_OK);
        int c, h, w;
        ck_assert_int_eq(vt_model_output_shape(m, &c, &h, &w), VT_OK);
        size_t n_in = 3 * S * S, n_out = (size_t)c * h * w;
        float *in = malloc(N * n_in * sizeof *in), *all = malloc(N * n_out * sizeof *all),
              *one = malloc(n_out * sizeof *one);
        ck_assert(in && all && one);
        for (size_t i = 0; i < N * n_in; i++)
            in[i] = (float)((i * 2654435761u + i / n_in * 7919u) % 1000) / 1000.0f;
        ck_assert_msg(vt_model_forward(m, in, N, all, N * n_out) == VT_OK, "%s",
                      vt_model_last_error(m));
        for (int k = 0; k < N; k++) {
            ck_assert_int_eq(vt_model_forward(m, in + k * n_in, 1, one, n_out), VT_OK);
            double e = 0, r = 0, d = 0;
            for (size_t i = 0; i < n_out; i++) {
                e = fmax(e, fabs((double)all[k * n_out + i] - one[i]));
                r = fmax(r, fabs((double)one[i]));
                /* against the next image: it is further off than the image's own */
                d = fmax(d, fabs((double)all[(k + 1) % N * n_out + i] - one[i]));
            }
            ck_assert_msg(r > 0 && e <= 1e-4 * r && e < d,
                          "%s image %d of %d: max difference %g of %g (%g to another image)",
                          archs[a], k, N, e, r, d);
        }
        free(in), free(all), free(one);
        /* the predictor plans a forward only: no gradients, each activation freed after its
         * last reader; a training step's plan of the same graph needs several times more */
        vt_backend *be;
        vt_exec *train;
        ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
        ck_assert_int_eq(vt_exec_create(&train, &m->graph, be), VT_OK);
        ck_assert_int_eq(vt_exec_prepare(train, m->pred_exec->cap_n, S, S), VT_OK);
        ck_assert_msg(3 * m->pred_exec->arena_bytes < train->arena_bytes,
                      "%s: the predictor's activations take %zu bytes, a training step's %zu",
                      archs[a], m->pred_exec->arena_bytes, train->arena_bytes);
        vt_exec_destroy(train);
        vt_backend_destroy(be);
        vt_model_destroy(m);
    }
}
END_TEST

/* vt_model_set_threads: its errors, and the same outputs (up to float rounding) on 1, 2 and 3
 * threads, the weights carried to each new predictor. */
/* For a 3-channel model at imgsz 64: one input image of made-up values (*in) and two buffers
 * of one image's output (*ref, *out), malloc'd; returns the output's floats. */
static size_t forward_io(vt_model *m, float **in, float **ref, float **out)
{
    int c, h, w;
    ck_assert_int_eq(vt_model_output_shape(m, &c, &h, &w), VT_OK);
    size_t n_in = 3 * 64 * 64, n_out = (size_t)c * h * w;
    *in = malloc(n_in * sizeof **in), *ref = malloc(n_out * sizeof **ref);
    *out = malloc(n_out * sizeof **out);
    ck_assert(*in && *ref && *out);
    for (size_t i = 0; i < n_in; i++) (*in)[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    return n_out;
}

START_TEST(test_predict_threads)
{
    static const char *const archs[] = {"cls-s", "det-n"};
    for (int a = 0; a < 2; a++) {
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, archs[a], 3, "imgsz=64 seed=3"), VT_OK);
        ck_assert_int_eq(vt_model_set_threads(m, -1), VT_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(vt_model_last_error(m), "-1 threads"), "%s", vt_model_last_error(m));
        ck_assert_int_eq(vt_model_set_threads(m, 257), VT_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(vt_model_set_threads(NULL, 1), VT_ERR_INVALID_ARGUMENT);
        float *in, *ref, *out;
        size_t n_out = forward_io(m, &in, &ref, &out);
        static const int threads[] = {1, 2, 3, 0};
        for (int t = 0; t < 4; t++) {
            ck_assert_int_eq(vt_model_set_threads(m, threads[t]), VT_OK);
            float *o = t ? out : ref;
            ck_assert_msg(vt_model_forward(m, in, 1, o, n_out) == VT_OK, "%s",
                          vt_model_last_error(m));
            double e = 0, r = 0;
            for (size_t i = 0; i < n_out; i++)
                e = fmax(e, fabs((double)o[i] - ref[i])), r = fmax(r, fabs((double)ref[i]));
            ck_assert_msg(r > 0 && e <= 1e-4 * r, "%s on %d threads: max difference %g of %g",
                          archs[a], threads[t], e, r);
        }
        free(in), free(ref), free(out);
        vt_model_destroy(m);
    }
}
END_TEST

/* The letterboxing predictors run on the smallest canvas of multiples of 32 that holds the
 * image at the model's scale (vt_letterbox_fit), re-planned as it changes: images of extreme
 * aspects (1 x 1, 1 x 500, 500 x 1) and ordinary ones give results of the image's size, and
 * vt_model_forward afterwards (imgsz x imgsz) gives what it gave before. */
START_TEST(test_predict_canvas)
{
    static const char *const archs[] = {"det-n", "seg-n", "iseg-n"};
    static const int sizes[][2] = {{1, 1}, {500, 1}, {1, 500}, {70, 7}, {64, 64}, {40, 50}};
    enum { CAP = 4 };
    enum { BYTES = 64 * 64 * 3 }; /* the largest image's pixels, and CAP masks of 500 px */
    uint8_t *px = malloc(BYTES), *masks = malloc((size_t)CAP * 64 * 64);
    ck_assert(px && masks);
    for (int i = 0; i < BYTES; i++) px[i] = (uint8_t)(i * 37);
    for (int a = 0; a < 3; a++) {
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, archs[a], 3, "imgsz=64 seed=5"), VT_OK);
        float *in, *ref, *out;
        size_t n_out = forward_io(m, &in, &ref, &out);
        ck_assert_int_eq(vt_model_forward(m, in, 1, ref, n_out), VT_OK);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int iw = sizes[s][0], ih = sizes[s][1], cls[CAP], n = 0;
            float sc[CAP], bx[4 * CAP];
            /* the pixels: rows of iw, or 500 rows of one (stride 3) */
            size_t stride = ih > 1 && iw == 1 ? 3 : (size_t)iw * 3;
            vt_status st = a == 0   ? vt_model_detect_pixels(m, px, iw, ih, 3, stride, 0.0f, 0.7f,
                                                             CAP, cls, sc, bx, CAP, &n)
                           : a == 1 ? vt_model_segment_pixels(m, px, iw, ih, 3, stride, masks)
                                    : vt_model_instances_pixels(m, px, iw, ih, 3, stride, 0.0f,
                                                                0.7f, CAP, cls, sc, bx, masks,
                                                                CAP, &n);
            ck_assert_msg(st == VT_OK, "%s %dx%d: %s", archs[a], iw, ih, vt_model_last_error(m));
            vt_letterbox lb;
            ck_assert_int_eq(vt_letterbox_fit(iw, ih, 64, 32, 1, &lb), VT_OK);
            ck_assert_msg(m->pred_exec->w == lb.dst_w && m->pred_exec->h == lb.dst_h,
                          "%s %dx%d: canvas %dx%d, want %dx%d", archs[a], iw, ih,
                          m->pred_exec->w, m->pred_exec->h, lb.dst_w, lb.dst_h);
            for (int k = 0; k < n; k++) /* boxes in the image's pixels */
                ck_assert(bx[4 * k] >= 0 && bx[4 * k + 2] <= iw && bx[4 * k + 1] >= 0 &&
                          bx[4 * k + 3] <= ih);
            if (a == 1)
                for (int k = 0; k < iw * ih; k++) ck_assert_int_lt(masks[k], 3);
        }
        ck_assert_int_eq(vt_model_forward(m, in, 1, out, n_out), VT_OK);
        ck_assert_msg(!memcmp(out, ref, n_out * sizeof *out),
                      "%s: vt_model_forward differs after predictions on other canvases",
                      archs[a]);
        free(in), free(ref), free(out);
        vt_model_destroy(m);
    }
    free(px), free(masks);
}
END_TEST

START_TEST(test_export)
{
    vt_model *a, *b, *d;
    ck_assert_int_eq(vt_model_create(&a, "cnn-small", 3, "imgsz=16 seed=1"), VT_OK);
    ck_assert_int_eq(vt_model_create(&b, "cnn-small", 3, "imgsz=16 seed=2"), VT_OK);
    ck_assert_int_eq(vt_model_create(&d, "det-n", 2, "imgsz=32"), VT_OK);
    mkdir(vt_test_path("out"), 0755);
    char path[4200];
    snprintf(path, sizeof path, "%s/out/m.onnx", vt_test_scratch);
    /* bad requests, in every build */
    ck_assert_int_eq(vt_model_export(NULL, path, VT_EXPORT_ONNX, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_model_export(a, NULL, VT_EXPORT_ONNX, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_model_export(a, path, (vt_export_format)2, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(vt_model_last_error(a), "unknown format 2"), "%s", vt_model_last_error(a));
    static const struct { const char *opts; vt_status st; const char *msg; } bad[] = {
        {"bogus=1", VT_ERR_UNKNOWN_OPTION, "'bogus'"},
        {"opset=12", VT_ERR_OPTION_VALUE, "opset=12"},
        {"opset=22", VT_ERR_OPTION_VALUE, "opset=22"},
        {"batch=0", VT_ERR_OPTION_VALUE, "batch=0"},
        {"batch=some", VT_ERR_OPTION_VALUE, "batch=some"},
        {"nms=2", VT_ERR_OPTION_VALUE, "nms=2"},
        {"conf=1.5", VT_ERR_OPTION_VALUE, "conf=1.5"},
        {"opset", VT_ERR_OPTION_VALUE, "key=value"},
        {"half=1", VT_ERR_UNSUPPORTED, "float16"},
        {"nms=1", VT_ERR_UNSUPPORTED, "detection models"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vt_status st = vt_model_export(a, path, VT_EXPORT_ONNX, bad[i].opts);
        ck_assert_msg(st == bad[i].st, "'%s': %d, expected %d", bad[i].opts, st, bad[i].st);
        ck_assert_msg(strstr(vt_model_last_error(a), bad[i].msg), "'%s': message '%s'",
                      bad[i].opts, vt_model_last_error(a));
    }
    ck_assert_int_eq(vt_model_export(d, path, VT_EXPORT_ONNX, "nms=1 batch=dynamic"), VT_ERR_UNSUPPORTED);
    ck_assert_int_eq(count_entries(vt_test_path("out"), NULL), 0);
#if VT_HAVE_ONNX
    ck_assert_msg(vt_model_export(a, path, VT_EXPORT_ONNX, NULL) == VT_OK, "%s", vt_model_last_error(a));
    size_t na, nb, n2;
    unsigned char *fa = vt_test_read_file(path, &na);
    ck_assert_ptr_nonnull(fa);
    ck_assert_msg(na > 4 * vt_model_num_params(a) && fa[0] == 0x08,
                  "%zu bytes, first 0x%02x (ir_version's tag)", na, fa[0]);
    /* over the existing file: replaced whole */
    ck_assert_int_eq(vt_model_export(b, path, VT_EXPORT_ONNX, "batch=dynamic"), VT_OK);
    unsigned char *fb = vt_test_read_file(path, &nb);
    ck_assert_ptr_nonnull(fb);
    ck_assert_msg(nb != na || memcmp(fa, fb, na), "a second export did not replace the file");
    /* failures leave it as it was and nothing beside it */
    ck_assert_int_eq(vt_model_export(a, path, VT_EXPORT_ONNX, "opset=99"), VT_ERR_OPTION_VALUE);
    snprintf(path, sizeof path, "%s/out/adir", vt_test_scratch);
    mkdir(path, 0755);
    ck_assert_int_eq(vt_model_export(a, path, VT_EXPORT_ONNX, NULL), VT_ERR_IO);
    ck_assert_msg(strstr(vt_model_last_error(a), "adir"), "%s", vt_model_last_error(a));
    snprintf(path, sizeof path, "%s/out/no/such/m.onnx", vt_test_scratch);
    ck_assert_int_eq(vt_model_export(a, path, VT_EXPORT_ONNX, NULL), VT_ERR_NOT_FOUND);
    ck_assert_msg(strstr(vt_model_last_error(a), "m.onnx"), "%s", vt_model_last_error(a));
    ck_assert_int_eq(count_entries(vt_test_path("out"), NULL), 2);
    snprintf(path, sizeof path, "%s/out/m.onnx", vt_test_scratch);
    unsigned char *f2 = vt_test_read_file(path, &n2);
    ck_assert_ptr_nonnull(f2);
    ck_assert_msg(n2 == nb && memcmp(fb, f2, nb) == 0, "a failed export changed the file");
    free(fa);
    free(fb);
    free(f2);
    /* the detector with its NMS tail */
    snprintf(path, sizeof path, "%s/out/det.onnx", vt_test_scratch);
    ck_assert_msg(vt_model_export(d, path, VT_EXPORT_ONNX, "nms=1 conf=0.1") == VT_OK, "%s",
                  vt_model_last_error(d));
#else
    ck_assert_int_eq(vt_model_export(a, path, VT_EXPORT_ONNX, NULL), VT_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(vt_model_last_error(a), "protobuf-c"), "%s", vt_model_last_error(a));
    ck_assert_int_eq(count_entries(vt_test_path("out"), NULL), 0);
#endif
    vt_model_destroy(a);
    vt_model_destroy(b);
    vt_model_destroy(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_archs);
    tcase_add_test(tc, test_init_pytorch_default);
    tcase_add_test(tc, test_create_errors);
    tcase_add_test(tc, test_save_load_roundtrip);
    tcase_add_test(tc, test_class_names_after_training);
    tcase_add_test(tc, test_ckpt_truncated);
    tcase_add_test(tc, test_ckpt_flipped);
    tcase_add_test(tc, test_ckpt_foreign_and_newer);
    tcase_add_test(tc, test_ckpt_bad_sections);
    tcase_add_test(tc, test_ckpt_layout_revision);
    tcase_add_test(tc, test_predict_errors);
    tcase_add_test(tc, test_atomic_save);
    tcase_add_test(tc, test_forward);
    tcase_add_test(tc, test_predict_threads);
    tcase_add_test(tc, test_forward_batches);
    tcase_add_test(tc, test_predict_canvas);
    tcase_add_test(tc, test_export);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
