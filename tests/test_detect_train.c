/* The detector: target assignment, the det_loss op against finite differences, head decoding,
 * the det-n/s/m family, prediction, and a short training run that must learn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/det_loss_math.h"
#include "core/core.h"
#include "image/image.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "testutil.h"
#include "task/detect_eval.h"
#include "train/trainer_impl.h"
#include "visiontrain/visiontrain.h"

static void set_gt(float *g, int cls, float x0, float y0, float x1, float y1)
{
    g[0] = (float)cls;
    g[1] = x0;
    g[2] = y0;
    g[3] = x1;
    g[4] = y1;
}

/* A one-level descriptor over a 4x4 grid at stride 8 (cell centres at 4, 12, 20, 28). */
static vt_det_loss_desc grid_desc(int n, int nc, int max_gt, int topk)
{
    vt_det_loss_desc d = {.n = n, .nc = nc, .n_levels = 1, .max_gt = max_gt, .topk = topk,
                          .alpha = 0.5f, .beta = 6.0f, .box_gain = 5.0f, .cls_gain = 1.0f,
                          .grad_scale = 1.0f};
    d.level[0] = (vt_det_level){4, 4, 8.0f};
    return d;
}

START_TEST(test_anchors)
{
    /* Two levels: anchors 0..15 are the 4x4 grid at stride 8, 16..19 the 2x2 grid at 16. */
    vt_det_loss_desc d = grid_desc(1, 1, 1, 1);
    d.n_levels = 2;
    d.level[1] = (vt_det_level){2, 2, 16.0f};
    ck_assert_int_eq(vt_det_anchors(&d), 20);
    float cx, cy, s;
    ck_assert_int_eq(vt_det_anchor(&d, 6, &cx, &cy, &s), 0);
    ck_assert(cx == 20 && cy == 12 && s == 8);
    ck_assert_int_eq(vt_det_anchor(&d, 16, &cx, &cy, &s), 1);
    ck_assert(cx == 8 && cy == 8 && s == 16);
    ck_assert_int_eq(vt_det_anchor(&d, 19, &cx, &cy, &s), 1);
    ck_assert(cx == 24 && cy == 24 && s == 16);
}
END_TEST

START_TEST(test_assign)
{
    enum { A = 16, NC = 3 };
    float pred[(4 + NC) * A] = {0}; /* every class probability 1/2 */
    /* every box 8x8 on its cell: each edge half a stride from the centre */
    for (int k = 0; k < 4 * A; k++) pred[k] = logf(0.5f);
    /* cell (1,1) predicts A's box exactly: centre (12,12), 20x20, edges 1.25 strides away */
    for (int f = 0; f < 4; f++) pred[f * A + 5] = logf(1.25f);
    float gt[4 * 5];
    set_gt(gt, 0, 2, 2, 22, 22);          /* A: 9 cell centres inside */
    set_gt(gt + 5, 1, 25, 17, 27, 19);    /* B: tiny, no centre inside; its centre cell (3,2) */
    set_gt(gt + 10, -1, 0, 0, 32, 32);    /* padding */
    set_gt(gt + 15, 2, 18, 18, 30, 30);   /* C: overlaps A at cell (2,2) */
    int32_t asg[A];
    float sc[A];
    vt_det_loss_desc d = grid_desc(1, NC, 3, 4);
    /* A and B alone (C is beyond max_gt = 3): A takes 4 of its 9 candidates, B its centre cell. */
    int np = vt_det_assign_image(&d, pred, A, gt, asg, sc);
    int na = 0;
    for (int k = 0; k < A; k++) {
        na += asg[k] == 0;
        if (asg[k] >= 0) ck_assert_msg(sc[k] > 0 && sc[k] <= 1.0f, "score %g", (double)sc[k]);
        else ck_assert_float_eq(sc[k], 0.0f);
    }
    ck_assert_int_eq(np, 5);
    ck_assert_int_eq(na, 4);
    /* the best-aligned anchor is taught its IoU (1 here), the others less */
    ck_assert_int_eq(asg[5], 0);
    ck_assert_float_eq_tol(sc[5], 1.0f, 1e-5f);
    for (int k = 0; k < A; k++)
        if (asg[k] == 0 && k != 5) ck_assert_float_lt(sc[k], 0.5f);
    ck_assert_int_eq(asg[2 * 4 + 3], 1);
    for (int k = 0; k < A; k++)
        if (k != 2 * 4 + 3) ck_assert_int_ne(asg[k], 1);
    /* cells outside every box are negatives */
    ck_assert_int_eq(asg[3 * 4 + 0], -1);
    /* With C: cell (2,2) is a candidate of both; its 8x8 box at (16..24) overlaps C (12x12)
     * more than A (20x20), so C keeps it when both choose it. */
    d.max_gt = 4;
    d.topk = 9;
    vt_det_assign_image(&d, pred, A, gt, asg, sc);
    ck_assert_int_eq(asg[2 * 4 + 2], 3);
    ck_assert_int_eq(asg[1 * 4 + 1], 0);
    /* topk 1: only the best-aligned anchor of each object */
    d.topk = 1;
    ck_assert_int_eq(vt_det_assign_image(&d, pred, A, gt, asg, sc), 3);
    ck_assert_int_eq(asg[5], 0);
}
END_TEST

enum { GN = 2, GNC = 3, GH = 4, GW = 4, GMAX = 3 };
#define GFS (GN * GH * GW)
#define GSZ ((4 + GNC) * GFS)

static double det_loss_at(vt_backend *be, const vt_det_loss_desc *d, const float *pred,
                          const float *gt, int32_t *assign, float *score)
{
    float loss[4];
    ck_assert_int_eq(be->ops->det_loss(be, d, pred, gt, assign, score, loss, NULL), VT_OK);
    return (double)loss[0] + loss[1];
}

/* Analytic gradient against central differences over the entries [f0*GFS, f1*GFS), with the
 * targets of the unperturbed prediction held (the gradient treats them as constants). */
static double grad_error(vt_backend *be, vt_det_loss_desc d, float *pred, const float *gt,
                         int f0, int f1)
{
    float dpred[GSZ], loss[4], score[GFS];
    int32_t assign[GFS];
    ck_assert_int_eq(be->ops->det_loss(be, &d, pred, gt, assign, score, loss, dpred), VT_OK);
    ck_assert_msg(loss[2] > 0, "no positive cell");
    d.reuse_targets = 1;
    double num2 = 0, diff2 = 0, h = 1e-3;
    for (int i = f0 * GFS; i < f1 * GFS; i++) {
        float save = pred[i];
        pred[i] = save + (float)h;
        double lp = det_loss_at(be, &d, pred, gt, assign, score);
        pred[i] = save - (float)h;
        double lm = det_loss_at(be, &d, pred, gt, assign, score);
        pred[i] = save;
        double num = (lp - lm) / (2 * h);
        num2 += num * num;
        diff2 += (num - dpred[i]) * (num - dpred[i]);
    }
    return sqrt(diff2) / fmax(sqrt(num2), 1e-9);
}

START_TEST(test_loss_gradient)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
    vt_rng r;
    vt_rng_seed(&r, 7);
    float pred[GSZ];
    for (int i = 0; i < GSZ; i++) pred[i] = (float)(vt_rng_normal(&r) * 0.5);
    float gt[GN * GMAX * 5];
    set_gt(gt, 0, 3, 4, 20, 25);
    set_gt(gt + 5, 2, 18, 10, 31, 17);
    set_gt(gt + 10, -1, 0, 0, 0, 0);
    set_gt(gt + 15, 1, 1, 1, 9, 12);
    set_gt(gt + 20, 1, 10, 12, 30, 30);
    set_gt(gt + 25, 0, 22, 2, 29, 8);
    /* Each term alone, then both.  The box term's bound is looser: CIoU's aspect-ratio weight
     * is held constant in the gradient (as its definition does), not in the differences. */
    vt_det_loss_desc d = grid_desc(GN, GNC, GMAX, 4);
    d.cls_gain = 0.0f;
    double e_box = grad_error(be, d, pred, gt, 0, 4 + GNC);
    ck_assert_msg(e_box < 6e-2, "box gradient error %g", e_box);
    d.box_gain = 0.0f;
    d.cls_gain = 1.0f;
    double e_cls = grad_error(be, d, pred, gt, 0, 4 + GNC);
    ck_assert_msg(e_cls < 2e-2, "class gradient error %g", e_cls);
    d.box_gain = 5.0f;
    double e_all = grad_error(be, d, pred, gt, 0, 4 + GNC);
    ck_assert_msg(e_all < 6e-2, "gradient error %g", e_all);
    /* grad_scale scales the gradient only; the loss's fourth value is the target-score sum
     * (at least 1) and the third the positives; a class out of range is an error. */
    float g1[GSZ], g2[GSZ], l1[4], l2[4], score[GFS];
    int32_t assign[GFS];
    ck_assert_int_eq(be->ops->det_loss(be, &d, pred, gt, assign, score, l1, g1), VT_OK);
    d.grad_scale = 0.5f;
    ck_assert_int_eq(be->ops->det_loss(be, &d, pred, gt, assign, score, l2, g2), VT_OK);
    ck_assert_float_eq(l1[0] + l1[1], l2[0] + l2[1]);
    for (int i = 0; i < GSZ; i++) ck_assert_float_eq_tol(g2[i], 0.5f * g1[i], 1e-6f);
    double tsum = 0;
    int np = 0;
    for (int i = 0; i < GFS; i++) {
        tsum += assign[i] >= 0 ? score[i] : 0;
        np += assign[i] >= 0;
    }
    ck_assert_float_eq_tol(l1[3], fmax(tsum, 1.0), 1e-5);
    ck_assert_int_eq((int)l1[2], np);
    ck_assert_int_le(np, 5 * 4); /* five objects, topk 4 */
    gt[0] = 3;
    ck_assert_int_eq(be->ops->det_loss(be, &d, pred, gt, assign, score, l1, g1),
                     VT_ERR_INVALID_ARGUMENT);
    gt[0] = 0;
    d.topk = VT_DET_TOPK_MAX + 1;
    ck_assert_int_eq(be->ops->det_loss(be, &d, pred, gt, assign, score, l1, g1),
                     VT_ERR_INVALID_ARGUMENT);
    vt_backend_destroy(be);
}
END_TEST

/* CIoU against its definition, and its gradient against central differences. */
START_TEST(test_ciou)
{
    float p[4] = {2, 3, 14, 11}, g[4] = {5, 1, 17, 15}, dp[4];
    float c = vt_det_ciou(p, g, dp);
    /* I = 9*8 = 72, U = 96 + 168 - 72 = 192; centres (8,7), (11,8); enclosing 15 x 14 */
    double iou = 72.0 / 192.0, rho2 = 9 + 1, c2 = 15 * 15 + 14 * 14;
    double v = 4 / (M_PI * M_PI) * pow(atan(12.0 / 14.0) - atan(12.0 / 8.0), 2);
    double alpha = v / (1 - iou + v);
    ck_assert_double_eq_tol(c, iou - rho2 / c2 - alpha * v, 1e-5);
    for (int k = 0; k < 4; k++) {
        float q[4], unused[4];
        memcpy(q, p, sizeof q);
        q[k] += 1e-2f;
        double cp = vt_det_ciou(q, g, unused);
        q[k] -= 2e-2f;
        double cm = vt_det_ciou(q, g, unused);
        /* alpha is held constant in dp: compare with a finite difference of the same */
        double num = (cp - cm) / 2e-2;
        ck_assert_msg(fabs(num - dp[k]) < 2e-3 + 0.05 * fabs(num), "dCIoU/dp%d %g vs %g", k,
                      (double)dp[k], num);
    }
    /* identical boxes: CIoU 1 */
    ck_assert_float_eq_tol(vt_det_ciou(g, g, dp), 1.0f, 1e-6f);
}
END_TEST

START_TEST(test_head_decode)
{
    /* One image, 2 classes, 4x4 grid at stride 8: cell (1,1) (centre (12, 12)) encodes the box
     * (6, -4)..(22, 20), edges 0.75, 2, 1.25 and 1 strides away, class 1; every other logit is
     * very negative. */
    enum { NC = 2, HW = 16 };
    float out[(4 + NC) * HW], scratch[(4 + NC) * HW];
    for (int i = 0; i < (4 + NC) * HW; i++) out[i] = i < 4 * HW ? 0.0f : -10.0f;
    int k = 1 * 4 + 1;
    out[0 * HW + k] = logf(0.75f);
    out[1 * HW + k] = logf(2.0f);
    out[2 * HW + k] = logf(1.25f);
    out[3 * HW + k] = 0.0f;
    out[(4 + 1) * HW + k] = 2.0f;
    vt_det_list dets = {0};
    vt_det_level lv = {4, 4, 8.0f};
    ck_assert_int_eq(vt_det_head_decode(out, 1, 0, NC, &lv, 1, 0.25f, 0.7f, 300, scratch, &dets),
                     VT_OK);
    ck_assert_int_eq(dets.n, 1);
    ck_assert_int_eq(dets.v[0].cls, 1);
    ck_assert_float_eq_tol(dets.v[0].score, 1.0f / (1.0f + expf(-2.0f)), 1e-6f);
    ck_assert_float_eq_tol(dets.v[0].x0, 6.0f, 1e-4f);
    ck_assert_float_eq_tol(dets.v[0].y0, -4.0f, 1e-4f);
    ck_assert_float_eq_tol(dets.v[0].x1, 22.0f, 1e-4f);
    ck_assert_float_eq_tol(dets.v[0].y1, 20.0f, 1e-4f);
    vt_det_list_free(&dets);
}
END_TEST

START_TEST(test_family)
{
    static const char *const names[3] = {"det-n", "det-s", "det-m"};
    uint64_t prev = 0;
    for (int i = 0; i < 3; i++) {
        vt_model *m;
        ck_assert_msg(vt_model_create(&m, names[i], 3, "imgsz=128") == VT_OK, "%s: %s", names[i],
                      vt_last_error());
        ck_assert_int_eq(vt_model_task(m), VT_TASK_DETECT);
        ck_assert_int_eq(vt_model_imgsz(m), 128);
        ck_assert_msg(vt_model_num_params(m) > prev, "%s is not larger than the size before",
                      names[i]);
        prev = vt_model_num_params(m);
        const vt_node *o = &m->graph.nodes[m->output_node];
        ck_assert_int_eq(o->out.c, 4 + 3);
        ck_assert_int_eq(o->out.h, 16); /* one level at stride 8 */
        vt_det_level lv[VT_DET_MAX_LEVELS];
        ck_assert_int_eq(vt_det_head_levels(&m->graph, m->output_node, 128, lv), 1);
        ck_assert(lv[0].h == 16 && lv[0].w == 16 && lv[0].stride == 8);
        vt_model_destroy(m);
    }
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "det-n", 1, NULL), VT_OK); /* one class is fine */
    ck_assert_int_eq(vt_model_imgsz(m), 640);                        /* detector default */
    float s[4];
    ck_assert_int_eq(vt_model_predict_file(m, "x.png", s, 4), VT_ERR_NOT_FOUND);
    uint8_t px[3 * 40 * 30] = {0};
    ck_assert_int_eq(vt_model_predict_pixels(m, px, 40, 30, 3, 120, s, 4), VT_ERR_UNSUPPORTED);
    vt_model_destroy(m);
    ck_assert_int_eq(vt_model_create(&m, "det-n", 3, "imgsz=100"), VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "multiple of 32"));
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 3, "imgsz=32"), VT_OK);
    int n = -1;
    ck_assert_int_eq(vt_model_detect_pixels(m, px, 40, 30, 3, 120, 0.25f, 0.7f, 0, NULL, NULL,
                                            NULL, 0, &n), VT_ERR_UNSUPPORTED);
    vt_model_destroy(m);
}
END_TEST

/* det-n on generated shapes must learn within CI time; then prediction through the public
 * API finds the objects, and a saved and reloaded model predicts the same boxes. */
START_TEST(test_train_learns)
{
    const char *dir = vt_test_path("shapes");
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_DETECT,
                                       "classes=3 train=300 val=60 imgsz=64 seed=3 max_objects=2"),
                     VT_OK);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, dir), VT_OK);
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "det-n", 3, "imgsz=64"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    ck_assert_int_eq(vt_trainer_class_ap(t, 0, NULL, NULL, NULL), VT_ERR_NOT_FOUND);
    ck_assert_ptr_null(vt_detect_last_eval(&t->tc));
    /* No mosaic: at 64 px it shrinks the smallest shapes to a few pixels, below what one
     * stride-8 grid resolves, and the figure then spreads with the GEMM path's rounding. */
    static const char *const opts[] = {"epochs=25", "batch=8", "optimizer=adamw", "lr0=0.003",
                                       "save=0", "workers=2", "seed=0", "mosaic=0"};
    for (int i = 0; i < 8; i++) ck_assert_int_eq(vt_trainer_set(t, opts[i]), VT_OK);
    vt_test_learning_opts(t);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
    double m50 = 0, m5095 = 0, p = 0, r = 0, best = 0;
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_MAP50, &m50), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_MAP50_95, &m5095), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_PRECISION, &p), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_RECALL, &r), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_BEST_FITNESS, &best), VT_OK);
    vt_test_learned("det-n", "mAP50 %.4f mAP50-95 %.4f", m50, m5095);
    /* With SiLU the GEMM paths (skx, haswell, zen3, generic, portable) reach 0.80..0.87 mAP50
     * and 0.63..0.69 mAP50-95 here, a frozen optimiser 0.00 (scripts/test-gemm-paths.sh); with
     * ReLU they spread over 0.55..0.79 / 0.41..0.61.  The bounds sit between, with margin on
     * both sides, since the figure follows each path's rounding. */
    ck_assert_msg(m50 > 0.55, "mAP50 %.4f after 25 epochs (mAP50-95 %.4f, P %.3f, R %.3f)", m50,
                  m5095, p, r);
    ck_assert_msg(m5095 > 0.40 && m5095 < m50, "mAP50-95 %.4f (mAP50 %.4f)", m5095, m50);
    ck_assert_msg(best >= m5095, "best fitness %.4f below the last mAP50-95 %.4f", best, m5095);
    /* Per-class AP: the mean over classes with boxes is the reported mAP. */
    double sum50 = 0, sum = 0, a50_0 = -1;
    int with_gt = 0;
    for (int c = 0; c < 3; c++) {
        double a50, a;
        int64_t ngt;
        ck_assert_int_eq(vt_trainer_class_ap(t, c, &a50, &a, &ngt), VT_OK);
        if (ngt == 0) continue;
        with_gt++;
        sum50 += a50;
        sum += a;
    }
    ck_assert_int_gt(with_gt, 0);
    /* the detect task's evaluator behind vt_trainer_class_ap, for the run's plots */
    const vt_det_eval *ev = vt_detect_last_eval(&t->tc);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(ev->nc, 3);
    ck_assert_int_eq(vt_trainer_class_ap(t, 0, &a50_0, NULL, NULL), VT_OK);
    ck_assert_msg(ev->ap50[0] == a50_0, "AP50 of class 0: %g vs %g", ev->ap50[0], a50_0);
    ck_assert_double_eq_tol(sum50 / with_gt, m50, 1e-9);
    ck_assert_double_eq_tol(sum / with_gt, m5095, 1e-9);
    ck_assert_int_eq(vt_trainer_class_ap(t, 3, NULL, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    /* vt_trainer_validate gives the same figures as the last epoch's validation. */
    double again = 0;
    ck_assert_int_eq(vt_trainer_validate(t, VT_SPLIT_VAL), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_MAP50, &again), VT_OK);
    ck_assert_double_eq_tol(again, m50, 1e-9);

    /* Predict on validation images: the best detection of an image with one object overlaps
     * it (IoU > 0.5) for most such images.  Also on the half of the image (64 x 32 or 32 x
     * 64) that holds the whole object: the predictor then runs that canvas (the smallest of
     * multiples of 32 that holds the image at the model's scale), and the box comes back in
     * the half's pixels. */
    int good = 0, tried = 0, good_half[2] = {0}, tried_half[2] = {0};
    for (int i = 0; i < vt_dataset_num_images(ds, VT_SPLIT_VAL) && tried < 20; i++) {
        if (vt_dataset_num_boxes(ds, VT_SPLIT_VAL, i) != 1) continue;
        int cls, dc[8], n = 0;
        float xywh[4], sc[8], bx[32];
        ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_VAL, i, 0, &cls, xywh), VT_OK);
        const char *path = vt_dataset_image_path(ds, VT_SPLIT_VAL, i);
        vt_status st = vt_model_detect_file(m, path, 0.25f, 0.7f, 8, dc, sc, bx, 8, &n);
        ck_assert_int_eq(st, VT_OK);
        tried++;
        vt_det g = {(xywh[0] - xywh[2] / 2) * 64, (xywh[1] - xywh[3] / 2) * 64,
                    (xywh[0] + xywh[2] / 2) * 64, (xywh[1] + xywh[3] / 2) * 64, 1, cls};
        if (n > 0) {
            vt_det a = {bx[0], bx[1], bx[2], bx[3], sc[0], dc[0]};
            good += dc[0] == cls && vt_det_iou(&a, &g) > 0.5f;
        }
        /* the top or bottom half (64 x 32), and the left or right one (32 x 64) */
        vt_image img;
        ck_assert_int_eq(vt_image_load(path, &img), VT_OK);
        ck_assert(img.w == 64 && img.h == 64 && img.c == 3);
        for (int o = 0; o < 2; o++) {
            float lo = o ? g.x0 : g.y0, hi = o ? g.x1 : g.y1;
            int at = hi <= 32 ? 0 : lo >= 32 ? 32 : -1, w = o ? 32 : 64, h = o ? 64 : 32;
            if (at < 0) continue; /* the object crosses the middle */
            int x0 = o ? at : 0, y0 = o ? 0 : at;
            ck_assert_int_eq(vt_model_detect_pixels(m, img.data + ((size_t)y0 * 64 + x0) * 3, w,
                                                    h, 3, 64 * 3, 0.25f, 0.7f, 8, dc, sc, bx, 8,
                                                    &n),
                             VT_OK);
            ck_assert(m->pred_exec->w == w && m->pred_exec->h == h);
            tried_half[o]++;
            vt_det a = {bx[0], bx[1], bx[2], bx[3], sc[0], dc[0]};
            vt_det gh = {g.x0 - (float)x0, g.y0 - (float)y0, g.x1 - (float)x0,
                         g.y1 - (float)y0, 1, cls};
            good_half[o] += n > 0 && dc[0] == cls && vt_det_iou(&a, &gh) > 0.5f;
        }
        vt_image_free(&img);
    }
    ck_assert_msg(tried >= 10 && good * 2 > tried, "%d of %d single-object images found", good,
                  tried);
    for (int o = 0; o < 2; o++) {
        if (getenv("VT_TEST_PRINT_ERRORS"))
            printf("%s halves: %d of %d\n", o ? "32 x 64" : "64 x 32", good_half[o], tried_half[o]);
        ck_assert_msg(tried_half[o] >= 5 && good_half[o] * 2 > tried_half[o],
                      "%d of %d objects found in the %s half of their image", good_half[o],
                      tried_half[o], o ? "32 x 64" : "64 x 32");
    }
    /* NULL arrays with cap = 0 ask for the count; a reloaded model gives the same detections. */
    const char *img = vt_dataset_image_path(ds, VT_SPLIT_VAL, 0), *path = vt_test_path("det.vtm");
    int n0 = -1, n1 = -1, c0[300], c1[300];
    float s0[300], s1[300], b0[1200], b1[1200];
    vt_status st = vt_model_detect_file(m, img, 0.01f, 0.7f, 0, NULL, NULL, NULL, 0, &n0);
    ck_assert_msg(st == VT_OK, "size query: %s", vt_model_last_error(m));
    int nq = n0;
    ck_assert_int_eq(vt_model_detect_file(m, img, 0.01f, 0.7f, 0, c0, s0, b0, 300, &n0), VT_OK);
    ck_assert_int_eq(n0, nq);
    ck_assert_int_eq(vt_model_save(m, path), VT_OK);
    vt_model *m2;
    ck_assert_int_eq(vt_model_load(&m2, path), VT_OK);
    ck_assert_int_eq(vt_model_task(m2), VT_TASK_DETECT);
    ck_assert_int_eq(vt_model_detect_file(m2, img, 0.01f, 0.7f, 0, c1, s1, b1, 300, &n1), VT_OK);
    ck_assert_int_eq(n0, n1);
    ck_assert_int_eq(memcmp(c0, c1, (size_t)n0 * sizeof c0[0]), 0);
    ck_assert_int_eq(memcmp(b0, b1, (size_t)n0 * 4 * sizeof b0[0]), 0);
    ck_assert_int_eq(vt_model_detect_file(m2, img, 2.0f, 0.7f, 0, c1, s1, b1, 300, &n1),
                     VT_ERR_INVALID_ARGUMENT);
    /* A detector cannot take class labels through vt_trainer_step. */
    float imgs[2 * 3 * 64 * 64] = {0};
    int32_t labels[2] = {0, 1};
    ck_assert_int_eq(vt_trainer_step(t, imgs, labels, 2, NULL), VT_ERR_UNSUPPORTED);
    vt_model_destroy(m2);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("detect_train");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_anchors);
    tcase_add_test(tc, test_assign);
    tcase_add_test(tc, test_ciou);
    tcase_add_test(tc, test_loss_gradient);
    tcase_add_test(tc, test_head_decode);
    tcase_add_test(tc, test_family);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("train");
    tcase_add_checked_fixture(tt, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tt, 600);
    tcase_add_test(tt, test_train_learns);
    suite_add_tcase(s, tt);
    return vt_test_run(s);
}
