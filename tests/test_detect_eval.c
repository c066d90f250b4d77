/* lib/train/detect_eval.c: hand-computed AP cases (perfect, missed object, duplicate, wrong
 * class, IoU threshold sweep), P/R/F1 and the confusion matrix, class-aware NMS, decoding of
 * a dense head in both layouts, and letterbox round trips. */
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
    TCase *tp = tcase_create("postprocess");
    tcase_add_test(tp, test_nms);
    tcase_add_test(tp, test_decode);
    tcase_add_test(tp, test_letterbox);
    suite_add_tcase(s, tp);
    return s;
}

int main(void) { return vt_test_run(suite()); }
