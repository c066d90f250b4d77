/* lib/task/detect_eval.c: hand-computed AP cases (perfect, missed object, duplicate, wrong
 * class, IoU threshold sweep), P/R/F1 and the confusion matrix, mask IoU and the mask
 * evaluation (hand-made masks, and filled rectangles against the box evaluation), class-aware
 * NMS, decoding of a dense head in both layouts, and letterbox round trips. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "task/detect_eval.h"
#include "testutil.h"

#define EPS 1e-9

static vt_det B(float x0, float y0, float x1, float y1, int cls, float score)
{
    vt_det d = {x0, y0, x1, y1, score, cls};
    return d;
}

static int64_t cm(const vt_det_metrics *m, int nc, int pred, int truth)
{
    return m->confusion[pred * (nc + 1) + truth];
}

START_TEST(test_iou)
{
    vt_det a = B(0, 0, 10, 10, 0, 1), b = B(5, 0, 15, 10, 0, 1), c = B(20, 20, 30, 30, 0, 1);
    ck_assert_float_eq_tol(vt_det_iou(&a, &b), 50.0f / 150.0f, 1e-6f);
    ck_assert_float_eq(vt_det_iou(&a, &c), 0.0f);
    ck_assert_float_eq_tol(vt_det_iou(&a, &a), 1.0f, 1e-6f);
    vt_det e = B(3, 3, 3, 3, 0, 1); /* empty box: no NaN */
    ck_assert_float_eq(vt_det_iou(&e, &e), 0.0f);
}
END_TEST

START_TEST(test_perfect)
{
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 2), VT_OK);
    vt_det g1[2] = {B(0, 0, 10, 10, 0, 0), B(20, 20, 40, 50, 1, 0)};
    vt_det p1[2] = {B(20, 20, 40, 50, 1, 0.8f), B(0, 0, 10, 10, 0, 0.9f)};
    vt_det g2[1] = {B(5, 5, 25, 25, 0, 0)};
    vt_det p2[1] = {B(5, 5, 25, 25, 0, 0.7f)};
    ck_assert_int_eq(vt_det_eval_add(&ev, p1, 2, g1, 2), VT_OK);
    ck_assert_int_eq(vt_det_eval_add(&ev, p2, 1, g2, 1), VT_OK);
    vt_det_metrics m;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_double_eq_tol(m.map50, 1.0, EPS);
    ck_assert_double_eq_tol(m.map50_95, 1.0, EPS);
    ck_assert_double_eq_tol(m.precision, 1.0, EPS);
    ck_assert_double_eq_tol(m.recall, 1.0, EPS);
    ck_assert_double_eq_tol(m.f1, 1.0, EPS);
    ck_assert_int_eq(m.classes_with_gt, 2);
    ck_assert_int_eq(m.num_gt[0], 2);
    ck_assert_int_eq(cm(&m, 2, 0, 0), 2);
    ck_assert_int_eq(cm(&m, 2, 1, 1), 1);
    ck_assert_int_eq(cm(&m, 2, 2, 0) + cm(&m, 2, 0, 2) + cm(&m, 2, 0, 1), 0);
    /* reset forgets everything */
    vt_det_eval_reset(&ev);
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_int_eq(m.classes_with_gt, 0);
    ck_assert_double_eq(m.map50, 0.0);
    vt_det_eval_free(&ev);
}
END_TEST

/* Two objects, one found: recall 0.5 with precision 1 -> the 51 recall points 0.00..0.50 have
 * precision 1, the other 50 none: AP = 51/101 at every IoU threshold. */
START_TEST(test_missed_object)
{
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 1), VT_OK);
    vt_det g[2] = {B(0, 0, 10, 10, 0, 0), B(50, 50, 60, 60, 0, 0)};
    vt_det p[1] = {B(0, 0, 10, 10, 0, 0.9f)};
    ck_assert_int_eq(vt_det_eval_add(&ev, p, 1, g, 2), VT_OK);
    vt_det_metrics m;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_double_eq_tol(m.map50, 51.0 / 101.0, EPS);
    ck_assert_double_eq_tol(m.map50_95, 51.0 / 101.0, EPS);
    ck_assert_double_eq_tol(m.ap50[0], 51.0 / 101.0, EPS);
    ck_assert_double_eq_tol(m.recall, 0.5, EPS);
    ck_assert_double_eq_tol(m.precision, 1.0, EPS);
    ck_assert_double_eq_tol(m.f1, 2.0 / 3.0, EPS);
    ck_assert_int_eq(cm(&m, 1, 0, 0), 1);
    ck_assert_int_eq(cm(&m, 1, 1, 0), 1); /* missed: predicted background */
    vt_det_eval_free(&ev);
}
END_TEST

/* A duplicate between two true positives: precisions 1, 1/2, 2/3 at recalls 1/2, 1/2, 1;
 * envelope 1, 2/3, 2/3 -> AP = (51 * 1 + 50 * 2/3) / 101. */
START_TEST(test_duplicate)
{
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 1), VT_OK);
    vt_det g[2] = {B(0, 0, 10, 10, 0, 0), B(50, 50, 60, 60, 0, 0)};
    vt_det p[3] = {B(50, 50, 60, 60, 0, 0.7f), B(0, 0, 10, 10, 0, 0.9f),
                   B(0.5f, 0, 10.5f, 10, 0, 0.8f)};
    ck_assert_int_eq(vt_det_eval_add(&ev, p, 3, g, 2), VT_OK);
    vt_det_metrics m;
    /* at conf 0: 2 TP of 3 detections */
    ck_assert_int_eq(vt_det_eval_compute(&ev, 0.0, &m), VT_OK);
    double want = (51.0 + 50.0 * 2.0 / 3.0) / 101.0;
    ck_assert_double_eq_tol(m.ap50[0], want, EPS);
    ck_assert_double_eq_tol(m.precision, 2.0 / 3.0, EPS);
    ck_assert_double_eq_tol(m.recall, 1.0, EPS);
    ck_assert_double_eq(m.conf, 0.0);
    /* max F1: conf 0 gives 0.8; above 0.7 only the first TP remains (F1 1/2, then 2/3) */
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_double_eq_tol(m.f1, 0.8, EPS);
    ck_assert_double_eq_tol(m.ap50[0], want, EPS); /* compute twice: same answer */
    /* the duplicate is a false positive against background in the confusion matrix */
    ck_assert_int_eq(cm(&m, 1, 0, 0), 2);
    ck_assert_int_eq(cm(&m, 1, 0, 1), 1);
    vt_det_eval_free(&ev);
}
END_TEST

/* Image 1: a class-0 object detected as class 1 (FP for 1, FN for 0).  Image 2: a class-1
 * object found.  Class 0: AP 0.  Class 1: precisions 0, 1/2 at recalls 0, 1 -> AP 0.5. */
START_TEST(test_wrong_class)
{
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 2), VT_OK);
    vt_det g1[1] = {B(0, 0, 10, 10, 0, 0)}, p1[1] = {B(0, 0, 10, 10, 1, 0.9f)};
    vt_det g2[1] = {B(5, 5, 20, 20, 1, 0)}, p2[1] = {B(5, 5, 20, 20, 1, 0.8f)};
    ck_assert_int_eq(vt_det_eval_add(&ev, p1, 1, g1, 1), VT_OK);
    ck_assert_int_eq(vt_det_eval_add(&ev, p2, 1, g2, 1), VT_OK);
    vt_det_metrics m;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_double_eq_tol(m.ap50[0], 0.0, EPS);
    ck_assert_double_eq_tol(m.ap50[1], 0.5, EPS);
    ck_assert_double_eq_tol(m.map50, 0.25, EPS);
    ck_assert_int_eq(cm(&m, 2, 1, 0), 1); /* predicted 1, truly 0 */
    ck_assert_int_eq(cm(&m, 2, 1, 1), 1);
    ck_assert_int_eq(cm(&m, 2, 2, 0), 0);
    vt_det_eval_free(&ev);
}
END_TEST

/* IoU 0.72 is a hit at thresholds 0.50 .. 0.70 (5 of 10): mAP50-95 = 5/10 * 1. */
START_TEST(test_iou_sweep)
{
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 1), VT_OK);
    vt_det g[1] = {B(0, 0, 10, 10, 0, 0)}, p[1] = {B(0, 0, 10, 7.2f, 0, 0.9f)};
    ck_assert_float_eq_tol(vt_det_iou(&g[0], &p[0]), 0.72f, 1e-6f);
    ck_assert_int_eq(vt_det_eval_add(&ev, p, 1, g, 1), VT_OK);
    vt_det_metrics m;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_double_eq_tol(m.map50, 1.0, EPS);
    ck_assert_double_eq_tol(m.map50_95, 0.5, EPS);
    for (int t = 0; t < VT_DET_NUM_IOU; t++)
        ck_assert_double_eq_tol(ev.ap[t], t < 5 ? 1.0 : 0.0, EPS);
    vt_det_eval_free(&ev);
}
END_TEST

START_TEST(test_eval_errors_and_backgrounds)
{
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 0), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_det_eval_init(&ev, 2), VT_OK);
    vt_det bad = B(0, 0, 1, 1, 2, 0.5f);
    ck_assert_int_eq(vt_det_eval_add(&ev, &bad, 1, NULL, 0), VT_ERR_INVALID_ARGUMENT);
    bad.cls = 0;
    bad.score = NAN;
    ck_assert_int_eq(vt_det_eval_add(&ev, &bad, 1, NULL, 0), VT_ERR_INVALID_ARGUMENT);
    /* a detection on a background image is a false positive */
    vt_det fp = B(0, 0, 5, 5, 0, 0.95f), g = B(10, 10, 20, 20, 0, 0), p = B(10, 10, 20, 20, 0, 0.5f);
    ck_assert_int_eq(vt_det_eval_add(&ev, &fp, 1, NULL, 0), VT_OK);
    ck_assert_int_eq(vt_det_eval_add(&ev, NULL, 0, NULL, 0), VT_OK);
    ck_assert_int_eq(vt_det_eval_add(&ev, &p, 1, &g, 1), VT_OK);
    vt_det_metrics m;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    /* precisions 0, 1/2 at recalls 0, 1 -> AP 0.5; class 1 has no ground truth: -1, excluded */
    ck_assert_double_eq_tol(m.ap50[0], 0.5, EPS);
    ck_assert_double_eq(m.ap50[1], -1.0);
    ck_assert_double_eq_tol(m.map50, 0.5, EPS);
    ck_assert_int_eq(m.classes_with_gt, 1);
    /* the false positive outscores the hit, so no threshold removes it: best F1 is at 0 */
    ck_assert_double_eq_tol(m.f1, 2.0 / 3.0, EPS);
    ck_assert_int_eq(cm(&m, 2, 0, 2), 1);
    vt_det_eval_free(&ev);
}
END_TEST

START_TEST(test_nms)
{
    vt_det d[6] = {
        B(0, 0, 10, 10, 0, 0.6f),   /* suppressed by the 0.9 box of class 0 (IoU 0.82) */
        B(0, 0, 10, 11, 0, 0.9f),
        B(0, 0, 10, 10, 1, 0.7f),   /* same place, other class: kept */
        B(30, 30, 40, 40, 0, 0.5f), /* far away: kept */
        B(30, 30, 40, 40, 1, 0.1f), /* below conf */
        B(31, 30, 41, 40, 0, 0.4f), /* IoU 0.82 with the 0.5 box: suppressed */
    };
    int n = vt_det_nms(d, 6, 0.25f, 0.45f, 100);
    ck_assert_int_eq(n, 3);
    ck_assert_float_eq(d[0].score, 0.9f);
    ck_assert_int_eq(d[1].cls, 1);
    ck_assert_float_eq(d[1].score, 0.7f);
    ck_assert_float_eq(d[2].score, 0.5f);
    /* max_det */
    vt_det e[3] = {B(0, 0, 1, 1, 0, 0.3f), B(5, 5, 6, 6, 0, 0.9f), B(9, 9, 10, 10, 0, 0.6f)};
    ck_assert_int_eq(vt_det_nms(e, 3, 0.0f, 0.5f, 2), 2);
    ck_assert_float_eq(e[0].score, 0.9f);
    ck_assert_float_eq(e[1].score, 0.6f);
    ck_assert_int_eq(vt_det_nms(e, 0, 0.0f, 0.5f, 2), 0);
}
END_TEST

START_TEST(test_decode)
{
    /* 3 candidates, 2 classes, (4+nc, n) layout as Ultralytics heads emit */
    const int n = 3, nc = 2;
    float cf[6][3] = {
        {10, 10.5f, 50},     /* cx */
        {10, 10, 50},        /* cy */
        {8, 8, 10},          /* w */
        {8, 8, 10},          /* h */
        {0.9f, 0.8f, 0.05f}, /* class 0 */
        {0.3f, 0.6f, 0.1f},  /* class 1 */
    };
    vt_det_list out = {0};
    ck_assert_int_eq(vt_det_decode(&cf[0][0], n, nc, 1, n, 0.25f, 0.5f, 300, 0, &out), VT_OK);
    /* best class only: 0.9 (cls 0) kept, 0.8 (cls 0, same place) suppressed, third below conf */
    ck_assert_int_eq(out.n, 1);
    ck_assert_int_eq(out.v[0].cls, 0);
    ck_assert_float_eq_tol(out.v[0].x0, 6.0f, 1e-6f);
    ck_assert_float_eq_tol(out.v[0].y1, 14.0f, 1e-6f);
    /* multi-label: class 1 of candidates 0 and 1 also counts (0.6 kept, 0.3 suppressed by it) */
    ck_assert_int_eq(vt_det_decode(&cf[0][0], n, nc, 1, n, 0.25f, 0.5f, 300, 1, &out), VT_OK);
    ck_assert_int_eq(out.n, 2);
    ck_assert_int_eq(out.v[1].cls, 1);
    ck_assert_float_eq(out.v[1].score, 0.6f);
    /* the same in (n, 4+nc) layout */
    float rows[3][6];
    for (int i = 0; i < n; i++)
        for (int f = 0; f < 6; f++) rows[i][f] = cf[f][i];
    ck_assert_int_eq(vt_det_decode(&rows[0][0], n, nc, 6, 1, 0.25f, 0.5f, 300, 1, &out), VT_OK);
    ck_assert_int_eq(out.n, 2);
    ck_assert_float_eq(out.v[0].score, 0.9f);
    vt_det_list_free(&out);
}
END_TEST

START_TEST(test_letterbox)
{
    vt_letterbox lb;
    ck_assert_int_eq(vt_letterbox_geometry(200, 100, 160, 160, 1, &lb), VT_OK);
    ck_assert_int_eq(lb.new_w, 160);
    ck_assert_int_eq(lb.new_h, 80);
    ck_assert_int_eq(lb.pad_x, 0);
    ck_assert_int_eq(lb.pad_y, 40);
    float box[4] = {20, 10, 100, 60};
    vt_letterbox_forward(&lb, box);
    ck_assert_float_eq_tol(box[0], 16, 1e-4f);
    ck_assert_float_eq_tol(box[1], 48, 1e-4f);
    ck_assert_float_eq_tol(box[2], 80, 1e-4f);
    ck_assert_float_eq_tol(box[3], 88, 1e-4f);
    vt_letterbox_inverse(&lb, box);
    ck_assert_float_eq_tol(box[0], 20, 1e-4f);
    ck_assert_float_eq_tol(box[1], 10, 1e-4f);
    ck_assert_float_eq_tol(box[2], 100, 1e-4f);
    ck_assert_float_eq_tol(box[3], 60, 1e-4f);
    /* a box reaching into the padding maps back clipped to the image */
    float pad_box[4] = {-5, 30, 170, 130};
    vt_letterbox_inverse(&lb, pad_box);
    ck_assert_float_eq(pad_box[0], 0);
    ck_assert_float_eq(pad_box[1], 0);
    ck_assert_float_eq(pad_box[2], 200);
    ck_assert_float_eq(pad_box[3], 100);
    /* no upscaling: a small odd-sized image is centred, the odd pixel of padding at the end */
    ck_assert_int_eq(vt_letterbox_geometry(63, 32, 160, 160, 0, &lb), VT_OK);
    ck_assert_int_eq(lb.new_w, 63);
    ck_assert_int_eq(lb.pad_x, 48);
    ck_assert_int_eq(lb.pad_y, 64);
    /* round trip through an odd scale */
    ck_assert_int_eq(vt_letterbox_geometry(333, 517, 640, 640, 1, &lb), VT_OK);
    float b2[4] = {12.5f, 100.25f, 300, 517}, b3[4];
    memcpy(b3, b2, sizeof b3);
    vt_letterbox_forward(&lb, b3);
    vt_letterbox_inverse(&lb, b3);
    for (int k = 0; k < 4; k++) ck_assert_float_eq_tol(b3[k], b2[k], 1e-3f);
    ck_assert_int_eq(vt_letterbox_geometry(0, 10, 10, 10, 1, &lb), VT_ERR_INVALID_ARGUMENT);

    /* the smallest canvas of multiples of 32 (the predictors'): a 4:3 image at 640 runs 640 x
     * 480 unpadded; 1000 x 701 scales to 640 x 449 (the square's scale), centred on 640 x 480
     * (15 rows above, 16 below); a tall small image is scaled up to 128 high, 43 wide, on 64 x
     * 128; a square one keeps the square; multiple 0: the resized image alone */
    static const struct {
        int sw, sh, size, mult, dw, dh, nw, nh, px, py;
    } fit[] = {
        {640, 480, 640, 32, 640, 480, 640, 480, 0, 0},
        {1000, 701, 640, 32, 640, 480, 640, 449, 0, 15},
        {100, 300, 128, 32, 64, 128, 43, 128, 10, 0},
        {50, 50, 640, 32, 640, 640, 640, 640, 0, 0},
        {1000, 701, 640, 0, 640, 449, 640, 449, 0, 0},
    };
    for (size_t i = 0; i < sizeof fit / sizeof fit[0]; i++) {
        vt_letterbox g, sq;
        ck_assert_int_eq(vt_letterbox_fit(fit[i].sw, fit[i].sh, fit[i].size, fit[i].mult, 1, &g),
                         VT_OK);
        ck_assert_int_eq(vt_letterbox_geometry(fit[i].sw, fit[i].sh, fit[i].size, fit[i].size, 1,
                                               &sq),
                         VT_OK);
        ck_assert_msg(g.dst_w == fit[i].dw && g.dst_h == fit[i].dh && g.new_w == fit[i].nw &&
                          g.new_h == fit[i].nh && g.pad_x == fit[i].px && g.pad_y == fit[i].py,
                      "fit %zu: canvas %dx%d, image %dx%d at (%d, %d)", i, g.dst_w, g.dst_h,
                      g.new_w, g.new_h, g.pad_x, g.pad_y);
        ck_assert(g.sx == sq.sx && g.sy == sq.sy && g.new_w == sq.new_w); /* the square's scale */
    }
    ck_assert_int_eq(vt_letterbox_fit(10, -1, 640, 32, 1, &lb), VT_ERR_INVALID_ARGUMENT);

    /* the image version: content in the middle, 114 in the padding */
    vt_image src = {40, 20, 3, malloc(40 * 20 * 3)};
    memset(src.data, 200, 40 * 20 * 3);
    vt_image dst;
    ck_assert_int_eq(vt_letterbox_image(&src, 64, 64, 1, 114, &dst, &lb), VT_OK);
    ck_assert_int_eq(dst.w, 64);
    ck_assert_int_eq(dst.h, 64);
    ck_assert_int_eq(lb.new_h, 32);
    ck_assert_int_eq(lb.pad_y, 16);
    ck_assert_int_eq(dst.data[0], 114);
    ck_assert_int_eq(dst.data[(size_t)(15 * 64 + 10) * 3], 114);
    ck_assert_int_eq(dst.data[(size_t)(16 * 64 + 10) * 3], 200);
    ck_assert_int_eq(dst.data[(size_t)(47 * 64 + 63) * 3 + 2], 200);
    ck_assert_int_eq(dst.data[(size_t)(48 * 64 + 10) * 3], 114);
    vt_image_free(&dst);
    vt_image_free(&src);
}
END_TEST

/* ---- mask IoU and mask evaluation -------------------------------------------------------- */

/* Fill the rectangle [x0, x1) x [y0, y1) of a w-wide plane with v. */
static void fill_rect(uint8_t *m, int w, int x0, int y0, int x1, int y1, uint8_t v)
{
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) m[y * w + x] = v;
}

static float mask_iou_one(const uint8_t *a, const uint8_t *b, int w, int h)
{
    float v = -1;
    void *scratch = malloc(vt_det_mask_iou_scratch(1, 1, w, h));
    ck_assert_ptr_nonnull(scratch);
    vt_det_mask_iou(a, 1, b, 1, w, h, scratch, &v);
    free(scratch);
    return v;
}

/* Hand-made masks across a 64-pixel word boundary (w = 70): known IoUs, nonzero bytes other
 * than 1, empty masks (IoU 0, no NaN). */
START_TEST(test_mask_iou)
{
    enum { W = 70, H = 5 };
    static uint8_t a[W * H], b[W * H], c[W * H], e[W * H], far[W * H];
    fill_rect(a, W, 60, 0, 70, 2, 1);   /* 20 px */
    fill_rect(b, W, 62, 1, 68, 4, 255); /* 18 px, 6 of them in a */
    fill_rect(c, W, 0, 0, 70, 5, 128);  /* everything: a inside it */
    fill_rect(far, W, 0, 3, 10, 5, 2);  /* no pixel of a */
    ck_assert_float_eq(mask_iou_one(a, b, W, H), 6.0f / 32.0f);
    ck_assert_float_eq(mask_iou_one(b, a, W, H), 6.0f / 32.0f);
    ck_assert_float_eq(mask_iou_one(a, a, W, H), 1.0f);
    ck_assert_float_eq(mask_iou_one(a, c, W, H), 20.0f / 350.0f);
    ck_assert_float_eq(mask_iou_one(a, far, W, H), 0.0f);
    ck_assert_float_eq(mask_iou_one(a, e, W, H), 0.0f);
    ck_assert_float_eq(mask_iou_one(e, e, W, H), 0.0f); /* empty union */
    ck_assert_uint_eq(vt_det_mask_iou_scratch(-1, 1, 4, 4), 0);
    ck_assert_uint_eq(vt_det_mask_iou_scratch(1, 1, 0, 4), 0);
    ck_assert_uint_gt(vt_det_mask_iou_scratch(0, 0, 4, 4), 0);

    /* a whole matrix of random blobs against a pixel-by-pixel count (157 x 150: rows of 3 words,
     * the last with 3 groups of 8 pixels and 5 more) */
    enum { MW = 157, MH = 150, NA = 7, NB = 5 };
    uint8_t *ma = calloc((size_t)NA * MW * MH, 1), *mb = calloc((size_t)NB * MW * MH, 1);
    ck_assert_ptr_nonnull(ma);
    ck_assert_ptr_nonnull(mb);
    unsigned seed = 12345;
    for (int i = 0; i < NA + NB; i++) {
        uint8_t *m = i < NA ? ma + (size_t)i * MW * MH : mb + (size_t)(i - NA) * MW * MH;
        if (i == 3) continue; /* one empty plane */
        for (int blob = 0; blob < 3; blob++) {
            seed = seed * 1103515245u + 12345u;
            int cx = (int)(seed >> 8) % MW, cy = (int)(seed >> 16) % MH, r = 5 + (int)(seed % 40);
            for (int y = 0; y < MH; y++)
                for (int x = 0; x < MW; x++)
                    if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r)
                        m[y * MW + x] = (uint8_t)(1 + (x * 7 + y) % 255); /* any nonzero */
        }
    }
    float iou[NA * NB];
    void *scratch = malloc(vt_det_mask_iou_scratch(NA, NB, MW, MH));
    ck_assert_ptr_nonnull(scratch);
    vt_det_mask_iou(ma, NA, mb, NB, MW, MH, scratch, iou);
    for (int i = 0; i < NA; i++)
        for (int j = 0; j < NB; j++) {
            long in = 0, un = 0;
            for (int k = 0; k < MW * MH; k++) {
                int x = ma[(size_t)i * MW * MH + k] != 0, y = mb[(size_t)j * MW * MH + k] != 0;
                in += x && y;
                un += x || y;
            }
            float want = un ? (float)in / (float)un : 0.0f;
            ck_assert_msg(iou[i * NB + j] == want, "blob pair %d,%d: IoU %g, want %g", i, j,
                          (double)iou[i * NB + j], (double)want);
        }
    free(scratch);
    free(ma);
    free(mb);
}
END_TEST

/* Masks are what is scored, not boxes (the boxes here are all zero): a 5 x 5 object and a
 * detection covering 18 of its pixels (IoU 0.72) hit at 0.50 .. 0.70; an empty ground-truth
 * mask is a ground truth nobody finds. */
START_TEST(test_mask_eval)
{
    enum { W = 9, H = 7 };
    vt_det_eval ev;
    ck_assert_int_eq(vt_det_eval_init(&ev, 2), VT_OK);
    uint8_t gm[2 * W * H] = {0}, pm[W * H] = {0};
    fill_rect(gm, W, 2, 1, 7, 6, 1);
    fill_rect(pm, W, 2, 1, 7, 4, 1);
    fill_rect(pm, W, 2, 4, 5, 5, 1);
    vt_det g[2] = {B(0, 0, 0, 0, 0, 0), B(0, 0, 0, 0, 1, 0)}, p = B(0, 0, 0, 0, 0, 0.9f);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &p, 1, pm, g, 2, gm, W, H), VT_OK);
    ck_assert_float_eq(ev.iou[0], 0.72f);
    vt_det_metrics m;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &m), VT_OK);
    ck_assert_double_eq_tol(m.ap50[0], 1.0, EPS);
    ck_assert_double_eq_tol(m.ap50_95[0], 0.5, EPS);
    ck_assert_double_eq_tol(m.ap50[1], 0.0, EPS);
    ck_assert_int_eq(m.classes_with_gt, 2);
    ck_assert_int_eq(cm(&m, 2, 0, 0), 1);
    ck_assert_int_eq(cm(&m, 2, 2, 1), 1); /* the empty mask: missed */
    /* without detections or ground truths the masks may be NULL; otherwise not */
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, NULL, 0, NULL, g, 1, gm, W, H), VT_OK);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &p, 1, pm, NULL, 0, NULL, W, H), VT_OK);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, NULL, 0, NULL, NULL, 0, NULL, W, H), VT_OK);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &p, 1, NULL, g, 1, gm, W, H),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &p, 1, pm, g, 1, NULL, W, H),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &p, 1, pm, g, 1, gm, 0, H),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &p, 1, pm, g, 1, gm, W, -1),
                     VT_ERR_INVALID_ARGUMENT);
    vt_det bad = B(0, 0, 0, 0, 2, 0.5f);
    ck_assert_int_eq(vt_det_eval_add_masks(&ev, &bad, 1, pm, g, 1, gm, W, H),
                     VT_ERR_INVALID_ARGUMENT);
    vt_det_eval_free(&ev);
}
END_TEST

/* Masks that are the filled rectangles of integer boxes give the box evaluation's figures
 * exactly: every metric, the confusion matrix and the curves (both IoUs are the correctly
 * rounded float quotient of the same two integers). */
static int rnd(unsigned *seed, int n)
{
    *seed = *seed * 1103515245u + 12345u;
    return (int)((*seed >> 8) % (unsigned)n);
}

/* A random integer box inside a w x h image. */
static vt_det rnd_box(unsigned *seed, int w, int h, int cls, float score)
{
    int x0 = rnd(seed, w - 2), y0 = rnd(seed, h - 2);
    int x1 = x0 + 1 + rnd(seed, w - x0 - 1), y1 = y0 + 1 + rnd(seed, h - y0 - 1);
    return B((float)x0, (float)y0, (float)x1, (float)y1, cls, score);
}

START_TEST(test_mask_eval_equals_box_eval)
{
    enum { NC = 3, IMAGES = 12, MAXN = 40 };
    vt_det_eval eb, em;
    ck_assert_int_eq(vt_det_eval_init(&eb, NC), VT_OK);
    ck_assert_int_eq(vt_det_eval_init(&em, NC), VT_OK);
    eb.cm_conf = em.cm_conf = 0.3f;
    unsigned seed = 777;
    for (int img = 0; img < IMAGES; img++) {
        int w = 40 + rnd(&seed, 60), h = 30 + rnd(&seed, 70); /* w != h: transpositions show */
        int ng = img == 3 ? 0 : rnd(&seed, 8), np = 0;         /* image 3: background only */
        vt_det g[MAXN], p[MAXN];
        for (int i = 0; i < ng; i++) g[i] = rnd_box(&seed, w, h, rnd(&seed, NC), 0);
        for (int i = 0; i < ng; i++) /* found, jittered, some twice, some as another class */
            for (int k = rnd(&seed, 3); k > 0; k--) {
                vt_det d = g[i];
                d.x0 = fmaxf(0, d.x0 - (float)rnd(&seed, 3));
                d.y0 = fmaxf(0, d.y0 - (float)rnd(&seed, 3));
                d.x1 = fminf((float)w, d.x1 + (float)rnd(&seed, 3));
                d.y1 = fminf((float)h, d.y1 + (float)rnd(&seed, 3));
                d.score = (float)(rnd(&seed, 1000) + 1) / 1000.0f;
                if (rnd(&seed, 5) == 0) d.cls = rnd(&seed, NC);
                p[np++] = d;
            }
        for (int k = rnd(&seed, 4); k > 0; k--) { /* false positives */
            int c = rnd(&seed, NC);
            p[np++] = rnd_box(&seed, w, h, c, (float)(rnd(&seed, 1000) + 1) / 1000.0f);
        }
        if (img == 5) np = 0; /* ground truths only */
        uint8_t *pm = calloc((size_t)(np + 1) * w * h, 1), *gm = calloc((size_t)(ng + 1) * w * h, 1);
        ck_assert_ptr_nonnull(pm);
        ck_assert_ptr_nonnull(gm);
        for (int i = 0; i < np; i++)
            fill_rect(pm + (size_t)i * w * h, w, (int)p[i].x0, (int)p[i].y0, (int)p[i].x1,
                      (int)p[i].y1, 1);
        for (int i = 0; i < ng; i++)
            fill_rect(gm + (size_t)i * w * h, w, (int)g[i].x0, (int)g[i].y0, (int)g[i].x1,
                      (int)g[i].y1, 1);
        ck_assert_int_eq(vt_det_eval_add(&eb, p, np, g, ng), VT_OK);
        vt_det shifted[MAXN]; /* the mask path must not look at the boxes */
        for (int i = 0; i < np; i++) shifted[i] = p[i], shifted[i].x0 += 1000, shifted[i].x1 += 1000;
        ck_assert_int_eq(vt_det_eval_add_masks(&em, shifted, np, pm, g, ng, gm, w, h), VT_OK);
        for (size_t k = 0; k < (size_t)np * ng; k++)
            ck_assert_msg(eb.iou[k] == em.iou[k], "image %d pair %zu: box IoU %g, mask IoU %g",
                          img, k, (double)eb.iou[k], (double)em.iou[k]);
        free(pm);
        free(gm);
    }
    vt_det_metrics mb, mm;
    ck_assert_int_eq(vt_det_eval_compute(&eb, -1, &mb), VT_OK);
    ck_assert_int_eq(vt_det_eval_compute(&em, -1, &mm), VT_OK);
    ck_assert_int_ge(mb.classes_with_gt, 2);
    /* a case with something to get wrong */
    ck_assert_msg(mb.map50 > 0.2 && mb.map50 < 1.0 && mb.map50_95 < mb.map50,
                  "mAP50 %g, mAP50-95 %g", mb.map50, mb.map50_95);
    ck_assert_double_eq(mm.map50, mb.map50);
    ck_assert_double_eq(mm.map50_95, mb.map50_95);
    ck_assert_double_eq(mm.precision, mb.precision);
    ck_assert_double_eq(mm.recall, mb.recall);
    ck_assert_double_eq(mm.f1, mb.f1);
    ck_assert_double_eq(mm.conf, mb.conf);
    for (int c = 0; c < NC; c++) {
        ck_assert_double_eq(mm.ap50[c], mb.ap50[c]);
        ck_assert_double_eq(mm.ap50_95[c], mb.ap50_95[c]);
        ck_assert_int_eq(mm.num_gt[c], mb.num_gt[c]);
    }
    for (int k = 0; k < (NC + 1) * (NC + 1); k++)
        ck_assert_int_eq(mm.confusion[k], mb.confusion[k]);
    enum { NCONF = 11 };
    double prb[NC * 101], prm[NC * 101], f1b[NC * NCONF], f1m[NC * NCONF];
    ck_assert_int_eq(vt_det_eval_curves(&eb, prb, NCONF, NULL, NULL, f1b), VT_OK);
    ck_assert_int_eq(vt_det_eval_curves(&em, prm, NCONF, NULL, NULL, f1m), VT_OK);
    ck_assert_mem_eq(prb, prm, sizeof prb);
    ck_assert_mem_eq(f1b, f1m, sizeof f1b);
    vt_det_eval_free(&eb);
    vt_det_eval_free(&em);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("detect_eval");
    TCase *tc = tcase_create("metrics");
    tcase_add_test(tc, test_iou);
    tcase_add_test(tc, test_perfect);
    tcase_add_test(tc, test_missed_object);
    tcase_add_test(tc, test_duplicate);
    tcase_add_test(tc, test_wrong_class);
    tcase_add_test(tc, test_iou_sweep);
    tcase_add_test(tc, test_eval_errors_and_backgrounds);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("masks");
    tcase_add_test(tm, test_mask_iou);
    tcase_add_test(tm, test_mask_eval);
    tcase_add_test(tm, test_mask_eval_equals_box_eval);
    suite_add_tcase(s, tm);
    TCase *tp = tcase_create("postprocess");
    tcase_add_test(tp, test_nms);
    tcase_add_test(tp, test_decode);
    tcase_add_test(tp, test_letterbox);
    suite_add_tcase(s, tp);
    return s;
}

int main(void) { return vt_test_run(suite()); }
