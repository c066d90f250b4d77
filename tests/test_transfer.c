/* Transfer learning (lib/nn/transfer.c, vt_model_set_classes, the trainer's pretrained= and
 * freeze=): fine-tuning across class counts for cls, det and seg (the transferred tensors equal
 * the source's, the head is a fresh model's, the counts and the message), other architectures
 * and channel counts refused, backbones shared between families (resnet18 -> det-r18, seg-r18),
 * the layer list, and freeze: frozen tensors bit-identical after training (with EMA and weight
 * decay), every other one moved, no gradient computed for them, resume keeps it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/exec.h"
#include "nn/model.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

static vt_dataset *synth(const char *name, vt_task task, const char *opts)
{
    const char *dir = vt_test_path("%s", name);
    ck_assert_msg(vt_synth_generate(dir, task, opts) == VT_OK, "synth %s: %s", name,
                  vt_last_error());
    vt_dataset *ds;
    ck_assert_msg(vt_dataset_open(&ds, task, dir) == VT_OK, "open %s: %s", name, vt_last_error());
    return ds;
}

static vt_model *create(const char *arch, int nc, const char *opts)
{
    vt_model *m;
    ck_assert_msg(vt_model_create(&m, arch, nc, opts) == VT_OK, "create %s: %s", arch,
                  vt_last_error());
    return m;
}

static vt_model *copy_of(vt_model *m)
{
    const char *p = vt_test_path("copy-%s.vtm", vt_model_arch(m));
    ck_assert_msg(vt_model_save(m, p) == VT_OK, "save: %s", vt_model_last_error(m));
    vt_model *c;
    ck_assert_msg(vt_model_load(&c, p) == VT_OK, "load: %s", vt_last_error());
    return c;
}

/* Bit-equality of node i's tensors in a and node j's in b: 1 all equal, 0 otherwise. */
static int node_equal(const vt_model *a, int i, const vt_model *b, int j)
{
    const vt_node *x = &a->graph.nodes[i], *y = &b->graph.nodes[j];
    if (x->w_n != y->w_n || x->b_n != y->b_n) return 0;
    if (x->w_n > 0 && memcmp(a->params + x->w_off, b->params + y->w_off, (size_t)x->w_n * 4))
        return 0;
    if (x->b_n > 0 && memcmp(a->params + x->b_off, b->params + y->b_off, (size_t)x->b_n * 4))
        return 0;
    if (x->op == VT_OP_BN &&
        memcmp(a->buffers + x->buf_off, b->buffers + y->buf_off, 2 * (size_t)x->out.c * 4))
        return 0;
    return 1;
}

/* Every tensor of node i differs somewhere from the same node of b (it moved in training). */
static int node_all_moved(const vt_model *a, const vt_model *b, int i)
{
    const vt_node *x = &a->graph.nodes[i];
    const float *pa = a->params, *pb = b->params;
    int w = memcmp(pa + x->w_off, pb + x->w_off, (size_t)x->w_n * 4) != 0;
    int bias = x->b_n <= 0 || memcmp(pa + x->b_off, pb + x->b_off, (size_t)x->b_n * 4) != 0;
    int stats = x->op != VT_OP_BN || memcmp(a->buffers + x->buf_off, b->buffers + x->buf_off,
                                             2 * (size_t)x->out.c * 4) != 0;
    return w && bias && stats;
}

static int has_params(const vt_node *nd)
{
    return nd->op == VT_OP_CONV || nd->op == VT_OP_LINEAR || nd->op == VT_OP_BN;
}

static vt_trainer *trainer(vt_model *m, vt_dataset *ds, const char *opts)
{
    vt_trainer *t;
    ck_assert_msg(vt_trainer_create(&t, m, ds) == VT_OK, "trainer: %s", vt_last_error());
    char buf[512];
    snprintf(buf, sizeof buf, "%s", opts);
    for (char *kv = strtok(buf, " "); kv; kv = strtok(NULL, " "))
        ck_assert_msg(vt_trainer_set(t, kv) == VT_OK, "%s: %s", kv, vt_trainer_last_error(t));
    return t;
}

/* Fine-tuning a model of 4 classes on a dataset of 3 (any task): every tensor outside the
 * class-dependent layers equals the source's, those equal a fresh 3-class model's, the
 * counts, the progress metrics and args.yaml say so, and training runs. */
static void check_reclass(const char *arch, vt_task task, const char *synth_opts,
                          const char *model_opts, const char *train_opts, int head_tensors)
{
    vt_dataset *ds = synth(arch, task, synth_opts);
    int nc = vt_dataset_num_classes(ds);
    vt_model *m = create(arch, nc + 1, model_opts);
    vt_model *src = copy_of(m);
    vt_model *fresh = create(arch, nc, model_opts);
    vt_trainer *t = trainer(m, ds, train_opts);
    ck_assert_msg(vt_model_num_classes(m) == nc, "%s: %d classes after the trainer, not %d",
                  arch, vt_model_num_classes(m), nc);
    int same = 0, fresh_n = 0, total = 0;
    for (int i = 0; i < m->graph.n_nodes; i++) {
        const vt_node *nd = &m->graph.nodes[i];
        if (!has_params(nd)) continue;
        int k = nd->op == VT_OP_BN ? 4 : nd->op == VT_OP_LINEAR ? 2 : 1 + nd->has_bias;
        total += k;
        if (node_equal(m, i, src, i)) {
            same += k;
        } else {
            ck_assert_msg(node_equal(m, i, fresh, i), "%s: layer %d neither transferred nor "
                          "a fresh model's", arch, i);
            fresh_n += k;
        }
    }
    ck_assert_msg(fresh_n == head_tensors, "%s: %d tensors re-created, expected %d", arch,
                  fresh_n, head_tensors);
    ck_assert_int_eq(same + fresh_n, total);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s: run: %s", arch, vt_trainer_last_error(t));
    double k = 0, n = 0;
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TRANSFERRED, &k), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TOTAL, &n), VT_OK);
    ck_assert_msg(k == same && n == total, "%s: metrics %g/%g, expected %d/%d", arch, k, n, same,
                  total);
    char want[128];
    snprintf(want, sizeof want, "transferred: 'transferred %d/%d tensors (head re-created for "
             "%d classes)'", same, total, nc);
    size_t len;
    char apath[4200];
    snprintf(apath, sizeof apath, "%s/args.yaml", vt_trainer_run_dir(t));
    char *args = vt_test_read_file(apath, &len);
    ck_assert_msg(args && strstr(args, want), "%s: args.yaml lacks \"%s\"", arch, want);
    free(args);
    vt_trainer_destroy(t);
    vt_model_destroy(fresh);
    vt_model_destroy(src);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

START_TEST(test_reclass_classify)
{
    check_reclass("cls-n", VT_TASK_CLASSIFY, "classes=3 train=6 val=2 imgsz=32", "imgsz=32",
                  "epochs=1 batch=6 workers=0 plots=0 tensorboard=0", 2);
}
END_TEST

START_TEST(test_reclass_detect)
{
    /* the class convolution (weight, bias with the 0.01 prior) */
    check_reclass("det-n", VT_TASK_DETECT, "classes=3 train=8 val=2 imgsz=64", "imgsz=64",
                  "epochs=1 batch=8 workers=0 plots=0 tensorboard=0 mosaic=0", 2);
}
END_TEST

START_TEST(test_reclass_segment)
{
    /* the two logits convolutions (stride 2 and stride 8), weight and bias each */
    check_reclass("seg-n", VT_TASK_SEGMENT, "classes=3 train=8 val=2 imgsz=64", "imgsz=64",
                  "epochs=1 batch=8 workers=0 plots=0 tensorboard=0 mosaic=0", 4);
}
END_TEST

/* The same classes: nothing re-created, no transfer reported; other names with the same
 * count: the head is re-created. */
START_TEST(test_same_classes)
{
    vt_dataset *ds = synth("same", VT_TASK_CLASSIFY, "classes=3 train=4 val=2 imgsz=32");
    vt_model *m = create("cls-n", 3, "imgsz=32");
    vt_model *src = copy_of(m);
    vt_trainer *t = trainer(m, ds, "epochs=1 save=0 workers=0");
    for (int i = 0; i < m->graph.n_nodes; i++)
        ck_assert_msg(node_equal(m, i, src, i), "layer %d changed for the same classes", i);
    double v;
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TRANSFERRED, &v), VT_ERR_NOT_FOUND);
    vt_trainer_destroy(t);
    /* m now has the dataset's names; other names of the same count re-create the head */
    const char *names[3] = {"cat", "dog", "fox"};
    int k = -1, n = -1;
    ck_assert_int_eq(vt_model_set_classes(m, 3, names, &k, &n), VT_OK);
    ck_assert_msg(k == n - 2 && n > 2, "other names: %d/%d", k, n);
    ck_assert_str_eq(vt_model_class_name(m, 2), "fox");
    ck_assert_int_eq(vt_model_set_classes(m, 3, names, &k, &n), VT_OK);
    ck_assert_msg(k == n, "the same names: %d/%d", k, n);
    /* a trainer made before the model changed its classes refuses to train it */
    vt_trainer *t2;
    ck_assert_int_eq(vt_trainer_create(&t2, m, ds), VT_OK); /* re-heads m for the data again */
    ck_assert_int_eq(vt_model_set_classes(m, 2, NULL, NULL, NULL), VT_OK);
    ck_assert_int_eq(vt_trainer_run(t2), VT_ERR_BAD_STATE);
    ck_assert_msg(strstr(vt_trainer_last_error(t2), "create the trainer again"), "message: %s",
                  vt_trainer_last_error(t2));
    vt_trainer_destroy(t2);
    vt_model_destroy(src);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

/* vt_model_transfer across architectures and channel counts. */
START_TEST(test_transfer_rules)
{
    vt_model *cls = create("cls-n", 4, "imgsz=64"), *det = create("det-n", 3, "imgsz=64");
    vt_model *seg = create("seg-n", 3, "imgsz=64 seed=5"), *gray = create("cls-n", 4,
                                                                          "imgsz=64 channels=1");
    int k = -1, n = -1;
    ck_assert_int_eq(vt_model_transfer(det, cls, &k, &n), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(vt_model_last_error(det), "det-n") &&
                  strstr(vt_model_last_error(det), "cls-n"), "message: %s",
                  vt_model_last_error(det));
    ck_assert_int_eq(k, 0);
    ck_assert_int_eq(vt_model_transfer(gray, cls, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(vt_model_last_error(gray), "1 input channels") &&
                  strstr(vt_model_last_error(gray), "of 3"), "message: %s",
                  vt_model_last_error(gray));
    ck_assert_int_eq(vt_model_transfer(NULL, cls, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    /* det-n and seg-n share their encoder: exactly its tensors move */
    ck_assert_int_eq(vt_model_transfer(det, seg, &k, &n), VT_OK);
    int bb = vt_model_backbone_layers(det), want = 0;
    ck_assert_int_eq(bb, vt_model_backbone_layers(seg));
    for (int i = 0; i < det->graph.n_nodes; i++) {
        const vt_node *nd = &det->graph.nodes[i];
        if (!has_params(nd)) continue;
        if (i < bb) {
            want += nd->op == VT_OP_BN ? 4 : 1 + nd->has_bias;
            ck_assert_msg(node_equal(det, i, seg, i), "encoder layer %d not transferred", i);
        } else {
            ck_assert_msg(!node_equal(det, i, seg, i) || nd->op == VT_OP_BN,
                          "layer %d past the encoder transferred", i);
        }
    }
    ck_assert_msg(k == want && n > k, "det <- seg: %d/%d, expected %d", k, n, want);
    vt_model_destroy(cls);
    vt_model_destroy(det);
    vt_model_destroy(seg);
    vt_model_destroy(gray);
}
END_TEST

/* resnet18's backbone starts det-r18 and seg-r18; their graphs run. */
START_TEST(test_r18_backbones)
{
    vt_model *r18 = create("resnet18", 10, "imgsz=64 seed=3");
    static const char *const archs[2] = {"det-r18", "seg-r18"};
    for (int a = 0; a < 2; a++) {
        vt_model *d = create(archs[a], 3, "imgsz=64");
        int bb = vt_model_backbone_layers(d), k, n;
        ck_assert_int_eq(bb, vt_model_backbone_layers(r18));
        ck_assert_int_eq(vt_model_transfer(d, r18, &k, &n), VT_OK);
        int want = 0;
        for (int i = 0; i < bb; i++) {
            const vt_node *nd = &d->graph.nodes[i];
            if (!has_params(nd)) continue;
            want += nd->op == VT_OP_BN ? 4 : 1 + nd->has_bias;
            ck_assert_msg(node_equal(d, i, r18, i), "%s: backbone layer %d differs", archs[a], i);
        }
        ck_assert_msg(k == want && want > 50 && n > k, "%s: %d/%d, expected %d", archs[a], k, n,
                      want);
        int c, h, w;
        ck_assert_int_eq(vt_model_output_shape(d, &c, &h, &w), VT_OK);
        size_t in = 3 * 64 * 64, out = (size_t)c * h * w;
        float *x = calloc(in, sizeof *x), *y = malloc(out * sizeof *y);
        for (size_t i = 0; i < in; i++) x[i] = (float)((i * 37) % 255) / 255.0f;
        ck_assert_msg(vt_model_forward(d, x, 1, y, out) == VT_OK, "%s: forward: %s", archs[a],
                      vt_model_last_error(d));
        for (size_t i = 0; i < out; i++) ck_assert_msg(isfinite(y[i]), "%s: output %zu", archs[a], i);
        free(x);
        free(y);
        vt_model_destroy(d);
    }
    vt_model_destroy(r18);
}
END_TEST

START_TEST(test_layer_list)
{
    vt_model *m = create("cls-n", 4, "imgsz=32");
    int n = vt_model_num_layers(m);
    ck_assert_int_eq(n, m->graph.n_nodes);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        const char *kind;
        uint64_t p;
        int c, h, w;
        ck_assert_int_eq(vt_model_layer(m, i, &kind, &c, &h, &w, &p), VT_OK);
        sum += p;
        if (i == 0) ck_assert_str_eq(kind, "input");
        if (i == n - 1) ck_assert_str_eq(kind, "linear");
    }
    ck_assert_msg(sum == vt_model_num_params(m), "layer params %llu, model %llu",
                  (unsigned long long)sum, (unsigned long long)vt_model_num_params(m));
    const char *kind;
    ck_assert_int_eq(vt_model_layer(m, 0, &kind, NULL, NULL, NULL, NULL), VT_OK);
    ck_assert_int_eq(vt_model_layer(m, n, &kind, NULL, NULL, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_model_layer(m, -1, &kind, NULL, NULL, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    /* the classifier's backbone ends before the global average pool */
    int bb = vt_model_backbone_layers(m);
    ck_assert_int_eq(vt_model_layer(m, bb, &kind, NULL, NULL, NULL, NULL), VT_OK);
    ck_assert_str_eq(kind, "gap");
    vt_model_destroy(m);
}
END_TEST

/* pretrained=FILE with a model given by name: the file's classes differ; an arch mismatch and
 * a missing file are refused with the file named. */
START_TEST(test_pretrained_option)
{
    vt_dataset *ds = synth("pre", VT_TASK_DETECT, "classes=3 train=8 val=2 imgsz=64");
    vt_model *old = create("det-n", 5, "imgsz=64 seed=9");
    const char *path = vt_test_path("old.vtm");
    ck_assert_int_eq(vt_model_save(old, path), VT_OK);
    vt_model *m = create("det-n", 3, "imgsz=64");
    char opts[600];
    snprintf(opts, sizeof opts, "epochs=1 batch=8 workers=0 save=0 mosaic=0 pretrained=%s", path);
    vt_trainer *t = trainer(m, ds, opts);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "run: %s", vt_trainer_last_error(t));
    double k, n;
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TRANSFERRED, &k), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TOTAL, &n), VT_OK);
    ck_assert_msg(k == n - 2, "pretrained det-n 5 -> 3 classes: %g/%g", k, n);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    /* the same count of other classes: the class convolution stays fresh too; the same
     * classes: every tensor */
    const char *other[3] = {"a", "b", "c"};
    for (int same = 0; same < 2; same++) {
        vt_model *o3 = create("det-n", 3, "imgsz=64 seed=4");
        const char *names[3] = {vt_dataset_class_name(ds, 0), vt_dataset_class_name(ds, 1),
                                vt_dataset_class_name(ds, 2)};
        ck_assert_int_eq(vt_model_set_classes(o3, 3, same ? names : other, NULL, NULL), VT_OK);
        ck_assert_int_eq(vt_model_save(o3, path), VT_OK);
        m = create("det-n", 3, "imgsz=64");
        t = trainer(m, ds, opts);
        ck_assert_msg(vt_trainer_run(t) == VT_OK, "run: %s", vt_trainer_last_error(t));
        ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TRANSFERRED, &k), VT_OK);
        ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_TENSORS_TOTAL, &n), VT_OK);
        ck_assert_msg(k == (same ? n : n - 2), "pretrained, %s names: %g/%g",
                      same ? "the same" : "other", k, n);
        vt_trainer_destroy(t);
        vt_model_destroy(m);
        vt_model_destroy(o3);
    }
    /* a classifier cannot start a detector */
    vt_model *cls = create("cls-n", 3, "imgsz=64");
    const char *cpath = vt_test_path("cls.vtm");
    ck_assert_int_eq(vt_model_save(cls, cpath), VT_OK);
    m = create("det-n", 3, "imgsz=64");
    snprintf(opts, sizeof opts, "epochs=1 batch=8 workers=0 save=0 pretrained=%s", cpath);
    t = trainer(m, ds, opts);
    ck_assert_int_eq(vt_trainer_run(t), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(vt_trainer_last_error(t), cpath) &&
                  strstr(vt_trainer_last_error(t), "cls-n"), "message: %s",
                  vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    snprintf(opts, sizeof opts, "epochs=1 save=0 workers=0 pretrained=%s",
             vt_test_path("missing.vtm"));
    t = trainer(m, ds, opts);
    ck_assert_int_ne(vt_trainer_run(t), VT_OK);
    ck_assert_msg(strstr(vt_trainer_last_error(t), "missing.vtm"), "message: %s",
                  vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_model_destroy(cls);
    vt_model_destroy(old);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_freeze_option_values)
{
    vt_model *m = create("cls-n", 3, "imgsz=32");
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, NULL), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "freeze=backbone"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "freeze=12"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "freeze=0"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "freeze="), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "freeze=-1"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_set(t, "freeze=neck"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_set(t, "freeze=3x"), VT_ERR_OPTION_VALUE);
    ck_assert_msg(strstr(vt_trainer_last_error(t), "backbone"), "message: %s",
                  vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
}
END_TEST

/* freeze=N: after training (SGD with weight decay, EMA), every tensor of the first N layers is
 * bit-identical to the start, every tensor after them moved; resume keeps the freeze. */
static void check_freeze(const char *freeze, int ema)
{
    vt_dataset *ds = synth("fz", VT_TASK_CLASSIFY, "classes=3 train=8 val=2 imgsz=32");
    vt_model *m = create("cls-n", 3, "imgsz=32 seed=2");
    vt_model *start = copy_of(m);
    char opts[256];
    snprintf(opts, sizeof opts, "epochs=2 batch=8 workers=0 plots=0 tensorboard=0 freeze=%s "
             "ema=%d weight_decay=0.01 name=fz exist_ok=1", freeze, ema);
    vt_trainer *t = trainer(m, ds, opts);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "run: %s", vt_trainer_last_error(t));
    char last[4300];
    snprintf(last, sizeof last, "%s/weights/last.vtm", vt_trainer_run_dir(t));
    vt_trainer_destroy(t);
    int nf = strcmp(freeze, "backbone") == 0 ? vt_model_backbone_layers(m) : atoi(freeze);
    for (int i = 0; i < m->graph.n_nodes; i++) {
        if (!has_params(&m->graph.nodes[i])) continue;
        if (i < nf)
            ck_assert_msg(node_equal(m, i, start, i), "freeze=%s ema=%d: frozen layer %d moved",
                          freeze, ema, i);
        else
            ck_assert_msg(node_all_moved(m, start, i), "freeze=%s ema=%d: layer %d did not "
                          "train", freeze, ema, i);
    }
    /* resume: the checkpoint records freeze= and the continued run keeps it */
    vt_model *r;
    ck_assert_int_eq(vt_model_load(&r, last), VT_OK);
    t = trainer(r, ds, "epochs=3 workers=0");
    char kv[4400];
    snprintf(kv, sizeof kv, "resume=%s", last);
    ck_assert_int_eq(vt_trainer_set(t, kv), VT_OK);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "resume: %s", vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    for (int i = 0; i < nf; i++)
        ck_assert_msg(node_equal(r, i, start, i), "freeze=%s: frozen layer %d moved on resume",
                      freeze, i);
    vt_model_destroy(r);
    vt_model_destroy(start);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

START_TEST(test_freeze_backbone) { check_freeze("backbone", 0); }
END_TEST

START_TEST(test_freeze_layers_ema) { check_freeze("10", 1); }
END_TEST

/* The executor with a frozen prefix writes no gradient of it (sentinels stay), computes the
 * others, and leaves the frozen batch norms' running statistics alone in training. */
START_TEST(test_exec_frozen_gradients)
{
    vt_model *m = create("cls-n", 3, "imgsz=16");
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
    vt_exec *e;
    ck_assert_int_eq(vt_exec_create(&e, &m->graph, be), VT_OK);
    e->frozen = vt_model_backbone_layers(m) - 6;
    ck_assert_int_eq(vt_exec_prepare(e, 4, 16, 16), VT_OK);
    ck_assert_int_eq(vt_exec_set_params(e, m->params, m->buffers), VT_OK);
    size_t np = (size_t)m->graph.n_params, nb = (size_t)m->graph.n_buffers;
    for (size_t i = 0; i < np; i++) e->grads[i] = NAN; /* CPU backend: host memory */
    float *x = vt_exec_input(e);
    for (size_t i = 0; i < 3 * 4 * 16 * 16; i++) x[i] = (float)((i * 29) % 97) / 97.0f;
    ck_assert_int_eq(vt_exec_forward(e, 1), VT_OK);
    vt_node *out = &e->g->nodes[m->output_node];
    for (size_t i = 0; i < (size_t)out->out.c * 4; i++) out->dy[i] = (float)(i % 5) - 2.0f;
    ck_assert_int_eq(vt_exec_backward(e, m->output_node), VT_OK);
    for (int i = 1; i < e->frozen; i++)
        ck_assert_msg(e->g->nodes[i].dy == NULL, "frozen layer %d has a gradient buffer", i);
    for (int i = 0; i < m->graph.n_nodes; i++) {
        const vt_node *nd = &m->graph.nodes[i];
        if (!has_params(nd)) continue;
        int finite = 1;
        for (int64_t j = 0; j < nd->w_n; j++) finite &= isfinite(e->grads[nd->w_off + j]) != 0;
        if (i < e->frozen) {
            for (int64_t j = 0; j < nd->w_n; j++)
                ck_assert_msg(isnan(e->grads[nd->w_off + j]), "frozen layer %d got a gradient", i);
        } else {
            ck_assert_msg(finite, "layer %d: no gradient", i);
        }
    }
    float *buf = malloc(nb * sizeof *buf), *par = malloc(np * sizeof *par);
    ck_assert_int_eq(vt_exec_get_params(e, par, buf), VT_OK);
    for (int i = 0; i < e->frozen; i++) {
        const vt_node *nd = &m->graph.nodes[i];
        if (nd->op == VT_OP_BN)
            ck_assert_msg(!memcmp(buf + nd->buf_off, m->buffers + nd->buf_off,
                                  2 * (size_t)nd->out.c * 4), "frozen BN %d statistics moved", i);
    }
    /* the frozen prefix has no gradient buffers, and its activations are freed after the
     * forward: the arena is smaller than unfrozen (planned again when the count changes) */
    size_t frozen_bytes = e->arena_bytes;
    e->frozen = 0;
    ck_assert_int_eq(vt_exec_prepare(e, 4, 16, 16), VT_OK);
    ck_assert_msg(frozen_bytes < e->arena_bytes, "arena frozen %zu, unfrozen %zu", frozen_bytes,
                  e->arena_bytes);
    ck_assert_ptr_nonnull(e->g->nodes[1].dy);
    free(buf);
    free(par);
    vt_exec_destroy(e);
    vt_backend_destroy(be);
    vt_model_destroy(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("transfer");
    TCase *tc = tcase_create("transfer");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_reclass_classify);
    tcase_add_test(tc, test_reclass_detect);
    tcase_add_test(tc, test_reclass_segment);
    tcase_add_test(tc, test_same_classes);
    tcase_add_test(tc, test_transfer_rules);
    tcase_add_test(tc, test_r18_backbones);
    tcase_add_test(tc, test_layer_list);
    tcase_add_test(tc, test_pretrained_option);
    tcase_add_test(tc, test_freeze_option_values);
    tcase_add_test(tc, test_freeze_backbone);
    tcase_add_test(tc, test_freeze_layers_ema);
    tcase_add_test(tc, test_exec_frozen_gradients);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
