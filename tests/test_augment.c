/* lib/data/augment: parameters, and above all that every geometric transform moves the pixels
 * and the labels the same way.  The geometry tests paint objects (rectangles, triangles) of
 * unique colours, transform image and labels together, then find each colour's pixels in the
 * output and compare their bounding box with the transformed label. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/augment.h"
#include "task/detect_eval.h"
#include "testutil.h"

/* Corner colours of the RGB cube: any blend of two of them that is within TOL of a third is
 * within TOL of one of the two, so edge pixels are never taken for another object. */
#define NCOL 8
static const uint8_t COLS[NCOL][3] = {{250, 10, 10},  {10, 250, 10},  {10, 10, 250},
                                      {250, 250, 10}, {250, 10, 250}, {10, 250, 250},
                                      {250, 250, 250}, {10, 10, 10}};
static const uint8_t BG[3] = {100, 140, 180}; /* > TOL from every object colour and from 114 */
#define TOL 60

static vt_image new_image(int w, int h, int c)
{
    vt_image im = {w, h, c, malloc((size_t)w * h * c)};
    ck_assert_ptr_nonnull(im.data);
    for (size_t i = 0; i < (size_t)w * h; i++)
        for (int k = 0; k < c; k++) im.data[i * c + k] = BG[k % 3];
    return im;
}

static void fill_rect(vt_image *im, int x0, int y0, int x1, int y1, const uint8_t *col)
{
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            for (int k = 0; k < im->c; k++) im->data[((size_t)y * im->w + x) * im->c + k] = col[k];
}

/* Pixels whose centre is inside the polygon (even-odd rule). */
static void fill_poly(vt_image *im, const float *xy, int n, const uint8_t *col)
{
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            double px = x + 0.5, py = y + 0.5;
            int in = 0;
            for (int i = 0, j = n - 1; i < n; j = i++) {
                double xi = xy[2 * i], yi = xy[2 * i + 1], xj = xy[2 * j], yj = xy[2 * j + 1];
                if ((yi > py) != (yj > py) && px < (xj - xi) * (py - yi) / (yj - yi) + xi) in = !in;
            }
            if (in)
                for (int k = 0; k < im->c; k++)
                    im->data[((size_t)y * im->w + x) * im->c + k] = col[k];
        }
}

typedef struct pbox {
    int x0, y0, x1, y1; /* x1, y1 exclusive */
    long n;
} pbox;

static pbox find_colour(const vt_image *im, const uint8_t *col)
{
    pbox b = {im->w, im->h, 0, 0, 0};
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            const uint8_t *p = im->data + ((size_t)y * im->w + x) * im->c;
            int ok = 1;
            for (int k = 0; k < im->c && ok; k++) ok = abs((int)p[k] - col[k]) <= TOL;
            if (!ok) continue;
            b.n++;
            if (x < b.x0) b.x0 = x;
            if (y < b.y0) b.y0 = y;
            if (x + 1 > b.x1) b.x1 = x + 1;
            if (y + 1 > b.y1) b.y1 = y + 1;
        }
    return b;
}

/* Pixel-centre sampling cannot follow an object into a wedge thinner than a pixel: where a
 * slanted object edge meets the canvas edge at angle theta, the last pixel row with the colour
 * can end up to ~1.5 / tan(theta) pixels short of the exact (label) corner.  Returns that slack
 * for transform t (0 when its edges stay parallel to the axes, or t is NULL). */
static double wedge_slack(const vt_aug_transform *t)
{
    if (!t) return 0.0;
    double theta = M_PI / 2;
    const double d[2][2] = {{t->m[0], t->m[3]}, {t->m[1], t->m[4]}}; /* images of x and y axes */
    for (int i = 0; i < 2; i++) {
        double a = fabs(atan2(d[i][1], d[i][0])); /* 0..pi */
        a = fmod(a, M_PI / 2);
        theta = fmin(theta, fmin(a, M_PI / 2 - a));
    }
    return theta < 1e-4 ? 0.0 : 1.5 / tan(theta);
}

/* Every object k (class k = colour k, at most one per class) against the pixels: a kept label
 * contains its colour's pixel box and matches it within tol (plus the wedge slack of t on the
 * sides that end where the object is cut by the canvas); a class without a label has been
 * dropped, which the rule allows only when what is visible is thin or a small part of the
 * reference (its pixel count ref[k] before the transform, times the largest possible gain
 * squared).  Returns the number of labels checked. */
static int check_objects(const vt_image *im, const vt_aug_labels *l, int ncls, const long *ref,
                         double max_gain, double tol_box, double tol_poly,
                         const vt_aug_transform *t)
{
    int checked = 0;
    const double slack = wedge_slack(t);
    for (int k = 0; k < ncls; k++) {
        int li = -1;
        for (int i = 0; i < l->n; i++)
            if (l->box[i].cls == k) {
                ck_assert_msg(li < 0, "class %d has two labels", k);
                li = i;
            }
        pbox pb = find_colour(im, COLS[k]);
        if (li >= 0) {
            const vt_aug_box *b = &l->box[li];
            double tol = l->poly_n[li] ? tol_poly : tol_box;
            ck_assert_msg(pb.n > 0, "class %d: label (%g %g %g %g) but no pixels", k, b->x0, b->y0,
                          b->x1, b->y1);
            /* the pixels lie inside the label (give or take tol) */
            ck_assert_msg(pb.x0 >= b->x0 - tol && pb.x1 <= b->x1 + tol &&
                              pb.y0 >= b->y0 - tol && pb.y1 <= b->y1 + tol,
                          "class %d: label (%.1f %.1f %.1f %.1f) vs pixels (%d %d %d %d)", k,
                          b->x0, b->y0, b->x1, b->y1, pb.x0, pb.y0, pb.x1, pb.y1);
            /* and fill it: x sides get the wedge slack when the object is cut at the top or
             * bottom, y sides when it is cut left or right */
            int cut_y = b->y0 < 0.01 || b->y1 > im->h - 0.01;
            int cut_x = b->x0 < 0.01 || b->x1 > im->w - 0.01;
            double tx = tol + (cut_y ? slack : 0), ty = tol + (cut_x ? slack : 0);
            ck_assert_msg(fabs(pb.x0 - b->x0) <= tx && fabs(pb.x1 - b->x1) <= tx &&
                              fabs(pb.y0 - b->y0) <= ty && fabs(pb.y1 - b->y1) <= ty,
                          "class %d: label (%.1f %.1f %.1f %.1f) vs pixels (%d %d %d %d), "
                          "slack %.1f",
                          k, b->x0, b->y0, b->x1, b->y1, pb.x0, pb.y0, pb.x1, pb.y1, slack);
            ck_assert(b->x0 >= 0 && b->y0 >= 0 && b->x1 <= im->w && b->y1 <= im->h);
            checked++;
        } else if (pb.n > 0) {
            int pw = pb.x1 - pb.x0, ph = pb.y1 - pb.y0;
            double ar = fmax((double)pw / ph, (double)ph / pw);
            ck_assert_msg(pw <= 4 || ph <= 4 || ar > 15 ||
                              pb.n < 0.15 * ref[k] * max_gain * max_gain + 10,
                          "class %d dropped but %ld pixels visible in %dx%d (ref %ld)", k, pb.n,
                          pw, ph, ref[k]);
        }
    }
    return checked;
}

static void zero_geometry(vt_aug_params *p)
{
    p->degrees = p->translate = p->scale = p->shear = p->perspective = 0.0f;
}

static void no_colour(vt_aug_params *p) { p->hsv_h = p->hsv_s = p->hsv_v = 0.0f; }

/* A 160x120 scene: rectangle (class 0), triangle (class 1), rectangle (class 2). */
static vt_image scene(vt_aug_labels *l, long ref[3])
{
    vt_image im = new_image(160, 120, 3);
    vt_aug_labels_init(l);
    fill_rect(&im, 20, 15, 70, 50, COLS[0]);
    ck_assert_int_eq(vt_aug_labels_add_box(l, 0, 20, 15, 70, 50), VT_OK);
    const float tri[6] = {90, 20, 140, 35, 105, 75};
    fill_poly(&im, tri, 3, COLS[1]);
    ck_assert_int_eq(vt_aug_labels_add_poly(l, 1, tri, 3), VT_OK);
    fill_rect(&im, 30, 80, 60, 110, COLS[2]);
    ck_assert_int_eq(vt_aug_labels_add_box(l, 2, 30, 80, 60, 110), VT_OK);
    for (int k = 0; k < 3; k++) ref[k] = find_colour(&im, COLS[k]).n;
    return im;
}

/* ---- parameters -------------------------------------------------------------------------- */

START_TEST(test_params)
{
    vt_aug_params p;
    vt_aug_params_default(&p);
    /* the defaults the header documents: the training options' (Ultralytics' values, except
     * erasing and the random resized crop, off for classification by default) */
    ck_assert_float_eq(p.hsv_h, 0.015f);
    ck_assert_float_eq(p.hsv_s, 0.7f);
    ck_assert_float_eq(p.hsv_v, 0.4f);
    ck_assert_float_eq(p.translate, 0.1f);
    ck_assert_float_eq(p.scale, 0.5f);
    ck_assert_float_eq(p.fliplr, 0.5f);
    ck_assert_float_eq(p.mosaic, 1.0f);
    ck_assert_float_eq(p.degrees + p.shear + p.perspective + p.flipud + p.mixup, 0.0f);
    ck_assert_int_eq(p.close_mosaic, 10);
    ck_assert_float_eq(p.erasing, 0.0f);
    ck_assert_float_eq(p.crop_scale_min, 1.0f);
    /* every field an option sets has that option's default, from the one table */
    ck_assert_float_eq(p.hsv_s, (float)vt_optdef_by_id(VT_OPT_HSV_S)->def_num);
    ck_assert_int_eq(p.close_mosaic, (int)vt_optdef_by_id(VT_OPT_CLOSE_MOSAIC)->def_num);
    ck_assert_float_eq_tol(p.crop_ratio_min, 0.75f, 1e-6);
    ck_assert_float_eq_tol(p.crop_ratio_max, 4.0f / 3.0f, 1e-6);
    /* the training options' values, parsed and range-checked by the option table */
    vt_optvals v;
    vt_optvals_init(&v, VT_SCOPE_TRAINER);
    ck_assert_int_eq(vt_optvals_parse(&v, VT_SCOPE_TRAINER, "degrees=45 close_mosaic=3 "
                                      "shear=88.5 mixup=0.25 crop_scale=0.5"), VT_OK);
    vt_aug_params_from_options(&p, &v);
    ck_assert_float_eq(p.degrees, 45.0f);
    ck_assert_int_eq(p.close_mosaic, 3);
    ck_assert_float_eq(p.shear, 88.5f);
    ck_assert_float_eq(p.mixup, 0.25f);
    ck_assert_float_eq(p.crop_scale_min, 0.5f);
    ck_assert_float_eq(p.hsv_s, 0.7f); /* not set: the default */
    /* out of the table's ranges: refused where the value is set, with the option's name */
    const char *bad[] = {"degrees=181", "scale=1", "shear=90", "fliplr=-0.1", "mosaic=1.5",
                         "translate=2", "hsv_h=abc", "crop_scale=0", "close_mosaic=2.5",
                         "perspective=0.1", "erasing="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vt_optvals w;
        vt_optvals_init(&w, VT_SCOPE_TRAINER);
        ck_assert_msg(vt_optvals_parse(&w, VT_SCOPE_TRAINER, bad[i]) == VT_ERR_OPTION_VALUE,
                      "%s accepted", bad[i]);
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(bad[i], "="), bad[i]);
        ck_assert_ptr_nonnull(strstr(vt_last_error(), key));
    }
}
END_TEST

/* ---- flips ------------------------------------------------------------------------------- */

START_TEST(test_flips)
{
    vt_aug_labels l;
    long ref[3];
    vt_image im = scene(&l, ref);
    vt_image orig = {im.w, im.h, im.c, malloc((size_t)im.w * im.h * 3)};
    memcpy(orig.data, im.data, (size_t)im.w * im.h * 3);
    pbox tri0 = find_colour(&im, COLS[1]);
    vt_aug_fliplr(&im, &l);
    /* exact for the rectangles: a flip moves whole pixels; the triangle's pixels are only as
     * exact as its rasterisation (a sharp tip can miss a pixel centre) */
    ck_assert_int_eq(check_objects(&im, &l, 3, ref, 1.0, 0.0, 1.0, NULL), 3);
    pbox tri1 = find_colour(&im, COLS[1]);
    ck_assert_int_eq(tri1.x0, 160 - tri0.x1);
    ck_assert_int_eq(tri1.x1, 160 - tri0.x0);
    ck_assert_int_eq(tri1.y0, tri0.y0);
    ck_assert_int_eq(tri1.n, tri0.n);
    ck_assert_float_eq(l.box[0].x0, 160 - 70);
    ck_assert_float_eq(l.box[0].y0, 15);
    vt_aug_flipud(&im, &l);
    ck_assert_int_eq(check_objects(&im, &l, 3, ref, 1.0, 0.0, 1.0, NULL), 3);
    tri1 = find_colour(&im, COLS[1]);
    ck_assert_int_eq(tri1.y0, 120 - tri0.y1);
    ck_assert_int_eq(tri1.y1, 120 - tri0.y0);
    ck_assert_float_eq(l.box[0].y1, 120 - 15);
    int n;
    const float *tri = vt_aug_labels_poly(&l, 1, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_float_eq(tri[0], 160 - 90);
    ck_assert_float_eq(tri[1], 120 - 20);
    vt_aug_fliplr(&im, &l);
    vt_aug_flipud(&im, &l);
    ck_assert_int_eq(memcmp(im.data, orig.data, (size_t)im.w * im.h * 3), 0);
    ck_assert_float_eq(l.box[2].x0, 30);
    ck_assert_float_eq(l.box[2].y1, 110);
    vt_image_free(&im);
    vt_image_free(&orig);
    vt_aug_labels_free(&l);
}
END_TEST

/* ---- affine ------------------------------------------------------------------------------ */

START_TEST(test_affine_identity)
{
    vt_aug_labels l;
    long ref[3];
    vt_image im = scene(&l, ref);
    vt_aug_params p;
    vt_aug_params_default(&p);
    zero_geometry(&p);
    vt_rng r;
    vt_rng_seed(&r, 5);
    vt_image out;
    ck_assert_int_eq(vt_aug_affine(&im, &l, im.w, im.h, &p, &r, &out), VT_OK);
    /* pixel centres map to pixel centres: no blur, no half-pixel shift */
    ck_assert_int_eq(memcmp(out.data, im.data, (size_t)im.w * im.h * 3), 0);
    ck_assert_int_eq(l.n, 3);
    ck_assert_float_eq_tol(l.box[0].x0, 20, 1e-4);
    ck_assert_float_eq_tol(l.box[0].y1, 50, 1e-4);
    ck_assert_float_eq_tol(l.box[1].x1, 140, 1e-4);
    vt_image_free(&out);
    vt_image_free(&im);
    vt_aug_labels_free(&l);
}
END_TEST

/* Several seeds of rotation, shear, scale, translation (and perspective on odd seeds). */
START_TEST(test_affine_geometry)
{
    vt_aug_params p;
    vt_aug_params_default(&p);
    p.degrees = 35;
    p.translate = 0.2f;
    p.scale = 0.4f;
    p.shear = 10;
    int kept = 0, rotated = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        p.perspective = seed % 2 ? 0.0004f : 0.0f;
        vt_aug_labels l;
        long ref[3];
        vt_image im = scene(&l, ref);
        vt_rng r, r2;
        vt_rng_seed(&r, seed);
        r2 = r;
        vt_aug_transform t;
        vt_aug_transform_draw(&p, &r2, im.w, im.h, 150, 130, &t);
        if (fabs(t.m[1]) > 0.2) rotated++;
        vt_image out;
        ck_assert_int_eq(vt_aug_affine(&im, &l, 150, 130, &p, &r, &out), VT_OK);
        ck_assert_int_eq(out.w, 150);
        ck_assert_int_eq(out.h, 130);
        kept += check_objects(&out, &l, 3, ref, 1.0 + p.scale, 2.0, 3.0, &t);
        /* the canvas outside the source is the 114 fill */
        ck_assert_int_gt(find_colour(&out, (const uint8_t[]){114, 114, 114}).n, 0);
        vt_image_free(&out);
        vt_image_free(&im);
        vt_aug_labels_free(&l);
    }
    ck_assert_int_ge(kept, 24); /* most objects survive these moderate transforms */
    ck_assert_int_ge(rotated, 4);
}
END_TEST

/* The draw order and conventions the header documents: perspective x2, angle, gain, shear x2,
 * tx, ty; rotation counter-clockwise on screen (y down) for a positive angle, as OpenCV. */
START_TEST(test_transform_draw)
{
    vt_aug_params p;
    vt_aug_params_default(&p);
    p.degrees = 40;
    p.scale = 0.3f;
    p.translate = 0.1f;
    int ccw = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        vt_rng r, c;
        vt_rng_seed(&r, seed);
        c = r;
        vt_aug_transform t;
        vt_aug_transform_draw(&p, &r, 200, 100, 80, 60, &t);
        double u[8];
        for (int i = 0; i < 8; i++) u[i] = vt_rng_uniform(&c);
        ck_assert_int_eq(memcmp(&r, &c, sizeof r), 0); /* exactly 8 draws */
        const double sc = p.scale, tr = p.translate;
        double a = (-40 + 80 * u[2]) * M_PI / 180, g = 1 - sc + 2 * sc * u[3];
        double tx = (0.5 - tr + 2 * tr * u[6]) * 80, ty = (0.5 - tr + 2 * tr * u[7]) * 60;
        ck_assert_double_eq_tol(t.gain, g, 1e-12);
        ck_assert_double_eq_tol(t.m[0], g * cos(a), 1e-9);
        ck_assert_double_eq_tol(t.m[1], g * sin(a), 1e-9);
        ck_assert_double_eq_tol(t.m[3], -g * sin(a), 1e-9);
        ck_assert_double_eq_tol(t.m[4], g * cos(a), 1e-9);
        /* the source centre goes to (tx, ty) */
        ck_assert_double_eq_tol(t.m[0] * 100 + t.m[1] * 50 + t.m[2], tx, 1e-9);
        ck_assert_double_eq_tol(t.m[3] * 100 + t.m[4] * 50 + t.m[5], ty, 1e-9);
        ck_assert_double_eq_tol(t.m[6] + t.m[7] + fabs(t.m[8] - 1), 0, 1e-15);
        /* a point right of the centre moves up (smaller y) when a > 0 */
        double y_right = t.m[3] * 110 + t.m[4] * 50 + t.m[5];
        if (a > 0.05) {
            ck_assert(y_right < ty);
            ccw++;
        }
    }
    ck_assert_int_gt(ccw, 0);
}
END_TEST

/* A labelled rectangle under a pure translation, through the pixel and label paths. */
static int survives(float x0, float y0, float x1, float y1, double tx, double gain,
                    vt_aug_box *res)
{
    vt_aug_labels l;
    vt_aug_labels_init(&l);
    ck_assert_int_eq(vt_aug_labels_add_box(&l, 0, x0, y0, x1, y1), VT_OK);
    vt_aug_transform t = {{gain, 0, tx, 0, gain, 0, 0, 0, 1}, gain};
    ck_assert_int_eq(vt_aug_warp_labels(&l, &t, 200, 200), VT_OK);
    int n = l.n;
    if (n && res) *res = l.box[0];
    vt_aug_labels_free(&l);
    return n;
}

START_TEST(test_drop_rule)
{
    vt_aug_box b;
    /* 40x40 pushed left by 47: 3 px (7.5%) left in view -> dropped by the area rule */
    ck_assert_int_eq(survives(10, 10, 50, 50, -47, 1.0, NULL), 0);
    /* ... by 44: 6 px = 15% in view -> kept, clipped at the edge */
    ck_assert_int_eq(survives(10, 10, 50, 50, -44, 1.0, &b), 1);
    ck_assert_float_eq_tol(b.x0, 0, 1e-5);
    ck_assert_float_eq_tol(b.x1, 6, 1e-4);
    ck_assert_float_eq_tol(b.y1, 50, 1e-4);
    /* 2 px wide -> dropped; 3 px wide but 30 tall (ratio 10) -> kept */
    ck_assert_int_eq(survives(60, 10, 62, 50, 0, 1.0, NULL), 0);
    ck_assert_int_eq(survives(60, 10, 63, 40, 0, 1.0, NULL), 1);
    /* aspect ratio: 100x4 (25) dropped, 60x4 (15) kept */
    ck_assert_int_eq(survives(10, 60, 110, 64, 0, 1.0, NULL), 0);
    ck_assert_int_eq(survives(10, 70, 70, 74, 0, 1.0, NULL), 1);
    /* the area test is against the scaled size: 40x40 at gain 0.25 is 10x10, all in view */
    ck_assert_int_eq(survives(10, 10, 50, 50, 0, 0.25, &b), 1);
    ck_assert_float_eq_tol(b.x1, 12.5, 1e-4);

    /* pixels agree: the cut object's colour ends where its clipped label ends */
    vt_image im = new_image(200, 200, 3);
    fill_rect(&im, 10, 10, 50, 50, COLS[0]);
    vt_aug_labels l;
    vt_aug_labels_init(&l);
    ck_assert_int_eq(vt_aug_labels_add_box(&l, 0, 10, 10, 50, 50), VT_OK);
    vt_aug_transform t = {{1, 0, -30, 0, 1, 0, 0, 0, 1}, 1.0};
    vt_image out;
    ck_assert_int_eq(vt_aug_warp_image(&im, &t, 200, 200, 114, &out), VT_OK);
    ck_assert_int_eq(vt_aug_warp_labels(&l, &t, 200, 200), VT_OK);
    long ref = 1600;
    ck_assert_int_eq(check_objects(&out, &l, 1, &ref, 1.0, 0.0, 0.0, &t), 1);
    ck_assert_int_eq(find_colour(&out, COLS[0]).n, 20 * 40);
    vt_image_free(&out);
    vt_image_free(&im);
    vt_aug_labels_free(&l);
}
END_TEST

/* ---- mosaic ------------------------------------------------------------------------------ */

/* Four images of different sizes and shapes, two objects each (a rectangle, and a rectangle
 * or a triangle), classes 2i and 2i+1. */
static void mosaic_inputs(vt_image im[4], vt_aug_labels l[4], long ref[8], int s)
{
    const int sz[4][2] = {{200, 150}, {90, 180}, {128, 128}, {300, 100}};
    for (int i = 0; i < 4; i++) {
        int w = sz[i][0], h = sz[i][1];
        im[i] = new_image(w, h, 3);
        vt_aug_labels_init(&l[i]);
        int x0 = w / 8, y0 = h / 8, x1 = w / 2, y1 = h / 2;
        fill_rect(&im[i], x0, y0, x1, y1, COLS[2 * i]);
        ck_assert_int_eq(vt_aug_labels_add_box(&l[i], 2 * i, x0, y0, x1, y1), VT_OK);
        if (i % 2) {
            float tri[6] = {w * 0.55f, h * 0.6f, w * 0.95f, h * 0.7f, w * 0.7f, h * 0.97f};
            fill_poly(&im[i], tri, 3, COLS[2 * i + 1]);
            ck_assert_int_eq(vt_aug_labels_add_poly(&l[i], 2 * i + 1, tri, 3), VT_OK);
        } else {
            fill_rect(&im[i], w * 6 / 10, h * 6 / 10, w - 3, h - 3, COLS[2 * i + 1]);
            ck_assert_int_eq(vt_aug_labels_add_box(&l[i], 2 * i + 1, w * 6 / 10, h * 6 / 10,
                                                   w - 3, h - 3),
                             VT_OK);
        }
        /* reference pixel counts at mosaic scale (long side = s) */
        double r = (double)s / (w > h ? w : h);
        ref[2 * i] = find_colour(&im[i], COLS[2 * i]).n * r * r;
        ref[2 * i + 1] = find_colour(&im[i], COLS[2 * i + 1]).n * r * r;
    }
}

START_TEST(test_mosaic_geometry)
{
    const int s = 128;
    vt_image im[4];
    vt_aug_labels l[4];
    long ref[8];
    mosaic_inputs(im, l, ref, s);
    const vt_image *ims[4] = {&im[0], &im[1], &im[2], &im[3]};
    const vt_aug_labels *ls[4] = {&l[0], &l[1], &l[2], &l[3]};
    vt_aug_params p;
    vt_aug_params_default(&p);
    p.degrees = 20;
    p.shear = 5;
    int kept_canvas = 0, kept = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        vt_rng r, r2;
        vt_rng_seed(&r, seed);
        r2 = r;
        /* the canvas alone: resized, placed, clipped */
        vt_image canvas;
        vt_aug_labels cl;
        vt_aug_labels_init(&cl);
        ck_assert_int_eq(vt_aug_mosaic_canvas(ims, ls, s, &r2, &canvas, &cl), VT_OK);
        ck_assert_int_eq(canvas.w, 2 * s);
        {
            /* placement: the centre is drawn y then x in [s/2, 3s/2); image 3 (300x100, class
             * 6 at (37, 12)-(150, 50)) starts at the centre, cut by the canvas edge */
            vt_rng c = r;
            int yc = (int)(s / 2.0 + s * vt_rng_uniform(&c));
            int xc = (int)(s / 2.0 + s * vt_rng_uniform(&c));
            ck_assert(xc >= s / 2 && xc < 3 * s / 2 && yc >= s / 2 && yc < 3 * s / 2);
            vt_letterbox lb;
            ck_assert_int_eq(vt_letterbox_geometry(300, 100, s, s, 1, &lb), VT_OK);
            double e[4] = {37 * lb.sx + xc, 12 * lb.sy + yc, 150 * lb.sx + xc, 50 * lb.sy + yc};
            for (int k = 0; k < 4; k++) e[k] = fmin(e[k], 2 * s);
            int found = 0;
            for (int i = 0; i < cl.n; i++)
                if (cl.box[i].cls == 6) {
                    found = 1;
                    ck_assert_double_eq_tol(cl.box[i].x0, e[0], 1e-3);
                    ck_assert_double_eq_tol(cl.box[i].y0, e[1], 1e-3);
                    ck_assert_double_eq_tol(cl.box[i].x1, e[2], 1e-3);
                    ck_assert_double_eq_tol(cl.box[i].y1, e[3], 1e-3);
                }
            ck_assert_int_eq(found, e[0] < 2 * s && e[1] < 2 * s);
        }
        kept_canvas += check_objects(&canvas, &cl, 8, ref, 1.0, 2.0, 3.0, NULL);
        /* then the affine by hand, which vt_aug_mosaic must reproduce exactly */
        vt_aug_transform t;
        vt_aug_transform_draw(&p, &r2, 2 * s, 2 * s, s, s, &t);
        vt_image hand;
        ck_assert_int_eq(vt_aug_warp_image(&canvas, &t, s, s, 114, &hand), VT_OK);
        ck_assert_int_eq(vt_aug_warp_labels(&cl, &t, s, s), VT_OK);

        vt_image out;
        vt_aug_labels ol;
        vt_aug_labels_init(&ol);
        ck_assert_int_eq(vt_aug_mosaic(ims, ls, s, &p, &r, &out, &ol), VT_OK);
        ck_assert_int_eq(out.w, s);
        ck_assert_int_eq(out.h, s);
        ck_assert_int_eq(memcmp(out.data, hand.data, (size_t)s * s * 3), 0);
        ck_assert_int_eq(ol.n, cl.n);
        ck_assert_int_eq(memcmp(ol.box, cl.box, sizeof *ol.box * ol.n), 0);
        ck_assert_int_eq(memcmp(&r, &r2, sizeof r), 0); /* same number of draws */
        kept += check_objects(&out, &ol, 8, ref, 1.0 + p.scale, 2.0, 3.0, &t);
        vt_image_free(&out);
        vt_image_free(&hand);
        vt_image_free(&canvas);
        vt_aug_labels_free(&ol);
        vt_aug_labels_free(&cl);
    }
    /* the centre is in [s/2, 3s/2): parts of images are cut off, yet most objects are in */
    ck_assert_int_ge(kept_canvas, 8 * 5);
    ck_assert_int_ge(kept, 8 * 2);
    for (int i = 0; i < 4; i++) {
        vt_image_free(&im[i]);
        vt_aug_labels_free(&l[i]);
    }
}
END_TEST

START_TEST(test_mosaic_errors)
{
    vt_image a = new_image(10, 10, 3), g = new_image(10, 10, 1);
    const vt_image *ims[4] = {&a, &a, &g, &a};
    vt_aug_params p;
    vt_aug_params_default(&p);
    vt_rng r;
    vt_rng_seed(&r, 1);
    vt_image out = {0, 0, 0, NULL};
    ck_assert_int_eq(vt_aug_mosaic(ims, NULL, 32, &p, &r, &out, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(out.data);
    ims[2] = &a;
    ck_assert_int_eq(vt_aug_mosaic(ims, NULL, 1, &p, &r, &out, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_aug_mosaic(ims, NULL, 32, &p, &r, &out, NULL), VT_OK);
    ck_assert_int_eq(out.w, 32);
    vt_image_free(&out);
    vt_image_free(&a);
    vt_image_free(&g);
}
END_TEST

/* ---- letterbox + affine ------------------------------------------------------------------ */

START_TEST(test_letterbox_affine)
{
    vt_aug_labels l;
    long ref[3];
    vt_image im = scene(&l, ref); /* 160x120 -> s = 96: r = 0.6 */
    const int s = 96;
    for (int k = 0; k < 3; k++) ref[k] = (long)(ref[k] * 0.36);
    vt_aug_params p;
    vt_aug_params_default(&p);
    no_colour(&p);

    /* no geometry, no flips: exactly the letterbox mapping */
    zero_geometry(&p);
    p.fliplr = 0;
    vt_rng r;
    vt_rng_seed(&r, 3);
    vt_image out;
    vt_aug_labels ol;
    vt_aug_labels_init(&ol);
    ck_assert_int_eq(vt_aug_letterbox_affine(&im, &l, s, &p, &r, &out, &ol), VT_OK);
    vt_letterbox lb;
    vt_image lbi;
    ck_assert_int_eq(vt_letterbox_image(&im, s, s, 1, 114, &lbi, &lb), VT_OK);
    ck_assert_int_eq(memcmp(out.data, lbi.data, (size_t)s * s * 3), 0);
    ck_assert_int_eq(ol.n, 3);
    float b0[4] = {20, 15, 70, 50};
    vt_letterbox_forward(&lb, b0);
    ck_assert_float_eq_tol(ol.box[0].x0, b0[0], 1e-3);
    ck_assert_float_eq_tol(ol.box[0].y0, b0[1], 1e-3);
    ck_assert_float_eq_tol(ol.box[0].x1, b0[2], 1e-3);
    ck_assert_float_eq_tol(ol.box[0].y1, b0[3], 1e-3);
    ck_assert_int_eq(check_objects(&out, &ol, 3, ref, 1.0, 1.5, 2.5, NULL), 3);
    vt_image_free(&out);
    vt_image_free(&lbi);

    /* random geometry and flips, over seeds; the input labels are left alone */
    vt_aug_params_default(&p);
    no_colour(&p);
    p.degrees = 25;
    p.shear = 8;
    p.flipud = 0.5f;
    int kept = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        vt_rng_seed(&r, seed);
        vt_rng rc = r; /* the transform is the first draw */
        vt_aug_transform t;
        vt_aug_transform_draw(&p, &rc, s, s, s, s, &t);
        ck_assert_int_eq(vt_aug_letterbox_affine(&im, &l, s, &p, &r, &out, &ol), VT_OK);
        ck_assert_int_eq(out.w, s);
        kept += check_objects(&out, &ol, 3, ref, 1.0 + p.scale, 2.0, 3.0, &t);
        vt_image_free(&out);
    }
    ck_assert_int_ge(kept, 15);
    ck_assert_int_eq(l.n, 3);
    ck_assert_float_eq(l.box[0].x0, 20);
    /* the output list may be the input list */
    vt_rng_seed(&r, 1);
    ck_assert_int_eq(vt_aug_letterbox_affine(&im, &l, s, &p, &r, &out, &l), VT_OK);
    vt_rng_seed(&r, 1);
    vt_image out2;
    vt_aug_labels l2;
    long ref2[3];
    vt_image im2 = scene(&l2, ref2);
    ck_assert_int_eq(vt_aug_letterbox_affine(&im2, &l2, s, &p, &r, &out2, &ol), VT_OK);
    ck_assert_int_eq(l.n, ol.n);
    ck_assert_int_eq(memcmp(l.box, ol.box, sizeof *l.box * l.n), 0);
    vt_image_free(&out);
    vt_image_free(&out2);
    vt_image_free(&im2);
    vt_aug_labels_free(&l2);
    vt_aug_labels_free(&ol);
    vt_image_free(&im);
    vt_aug_labels_free(&l);
}
END_TEST

/* ---- mixup ------------------------------------------------------------------------------- */

START_TEST(test_mixup)
{
    vt_image a = new_image(40, 30, 3), b = new_image(40, 30, 3);
    memset(a.data, 10, 40 * 30 * 3);
    memset(b.data, 210, 40 * 30 * 3);
    vt_aug_labels la, lb;
    vt_aug_labels_init(&la);
    vt_aug_labels_init(&lb);
    ck_assert_int_eq(vt_aug_labels_add_box(&la, 1, 1, 1, 5, 5), VT_OK);
    const float tri[6] = {1, 1, 9, 1, 5, 8};
    ck_assert_int_eq(vt_aug_labels_add_poly(&lb, 2, tri, 3), VT_OK);
    ck_assert_int_eq(vt_aug_labels_add_box(&lb, 3, 2, 2, 6, 6), VT_OK);
    vt_rng r;
    vt_rng_seed(&r, 9);
    float ratio = -1;
    ck_assert_int_eq(vt_aug_mixup(&a, &la, &b, &lb, &r, &ratio), VT_OK);
    /* Beta(32, 32): mean 0.5, sd 0.062 */
    ck_assert(ratio > 0.25f && ratio < 0.75f);
    uint8_t want = (uint8_t)(10 * ratio + 210 * (1 - ratio) + 0.5f);
    for (int i = 0; i < 40 * 30 * 3; i++) ck_assert_int_eq(a.data[i], want);
    ck_assert_int_eq(la.n, 3);
    ck_assert_int_eq(la.box[0].cls, 1);
    ck_assert_int_eq(la.box[1].cls, 2);
    ck_assert_int_eq(la.box[2].cls, 3);
    int n;
    const float *p = vt_aug_labels_poly(&la, 1, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_float_eq(p[4], 5);
    ck_assert_float_eq(la.box[1].y1, 8);
    /* the ratio varies between draws, and averages to 0.5 */
    double sum = 0;
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(vt_aug_mixup(&a, NULL, &b, NULL, &r, &ratio), VT_OK);
        sum += ratio;
    }
    ck_assert_double_eq_tol(sum / 200, 0.5, 0.02);
    vt_image c = new_image(40, 31, 3);
    ck_assert_int_eq(vt_aug_mixup(&a, NULL, &c, NULL, &r, NULL), VT_ERR_INVALID_ARGUMENT);
    vt_image_free(&a);
    vt_image_free(&b);
    vt_image_free(&c);
    vt_aug_labels_free(&la);
    vt_aug_labels_free(&lb);
}
END_TEST

/* ---- colour ------------------------------------------------------------------------------ */

static vt_image noise_image(int w, int h, int c, uint64_t seed)
{
    vt_image im = {w, h, c, malloc((size_t)w * h * c)};
    vt_rng r;
    vt_rng_seed(&r, seed);
    for (size_t i = 0; i < (size_t)w * h * c; i++) im.data[i] = (uint8_t)(vt_rng_next(&r) >> 56);
    return im;
}

static int max3(const uint8_t *a)
{
    return a[0] > a[1] ? (a[0] > a[2] ? a[0] : a[2]) : (a[1] > a[2] ? a[1] : a[2]);
}
static int min3(const uint8_t *a)
{
    return a[0] < a[1] ? (a[0] < a[2] ? a[0] : a[2]) : (a[1] < a[2] ? a[1] : a[2]);
}

/* The hue of a and b agree: each channel sits at the same fraction between min and max (where
 * both pixels have enough chroma to tell). */
static void assert_same_hue(const uint8_t *a, const uint8_t *b)
{
    int amax = max3(a), amin = min3(a), bmax = max3(b), bmin = min3(b);
    if (amax - amin < 60 || bmax - bmin < 60) return;
    for (int k = 0; k < 3; k++)
        ck_assert_double_eq_tol((double)(a[k] - amin) / (amax - amin),
                                (double)(b[k] - bmin) / (bmax - bmin), 0.03);
}

/* Hue angle in degrees, [0, 360), of an RGB pixel with chroma. */
static double hue_deg(const uint8_t *p)
{
    double r = p[0], g = p[1], b = p[2], M = max3(p), C = M - min3(p), h;
    if (M == r)
        h = fmod((g - b) / C + 6.0, 6.0);
    else if (M == g)
        h = (b - r) / C + 2.0;
    else
        h = (r - g) / C + 4.0;
    return h * 60.0;
}

START_TEST(test_hsv)
{
    vt_image im = noise_image(64, 48, 3, 1), ref = noise_image(64, 48, 3, 1);
    const size_t n = 64 * 48;
    vt_rng r;
    vt_rng_seed(&r, 2);
    vt_aug_hsv(&im, 0, 0, 0, &r);
    ck_assert_int_eq(memcmp(im.data, ref.data, n * 3), 0);

    /* hue only: max and min of each pixel stay (V and S are unchanged), colours move */
    int moved = 0;
    vt_aug_hsv(&im, 0.2f, 0, 0, &r);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *a = im.data + 3 * i, *b = ref.data + 3 * i;
        int amax = a[0] > a[1] ? (a[0] > a[2] ? a[0] : a[2]) : (a[1] > a[2] ? a[1] : a[2]);
        int bmax = b[0] > b[1] ? (b[0] > b[2] ? b[0] : b[2]) : (b[1] > b[2] ? b[1] : b[2]);
        int amin = a[0] < a[1] ? (a[0] < a[2] ? a[0] : a[2]) : (a[1] < a[2] ? a[1] : a[2]);
        int bmin = b[0] < b[1] ? (b[0] < b[2] ? b[0] : b[2]) : (b[1] < b[2] ? b[1] : b[2]);
        ck_assert_int_le(abs(amax - bmax), 1);
        ck_assert_int_le(abs(amin - bmin), 1);
        moved += memcmp(a, b, 3) != 0;
    }
    ck_assert_int_gt(moved, (int)n / 2);
    /* ... by the drawn angle: u_h in [-1, 1) (the first draw) times hgain of a full turn */
    for (uint64_t seed = 1; seed <= 4; seed++) {
        memcpy(im.data, ref.data, n * 3);
        vt_rng_seed(&r, seed);
        vt_rng c = r;
        double shift = (-1.0 + 2.0 * vt_rng_uniform(&c)) * 0.3 * 360.0;
        vt_aug_hsv(&im, 0.3f, 0, 0, &r);
        for (size_t i = 0; i < n; i++) {
            const uint8_t *a = im.data + 3 * i, *b = ref.data + 3 * i;
            if (max3(b) - min3(b) < 60) continue;
            double d = fmod(hue_deg(a) - hue_deg(b) - shift + 720.0 + 180.0, 360.0) - 180.0;
            ck_assert_msg(fabs(d) < 1.5, "hue moved by %g, not %g", hue_deg(a) - hue_deg(b),
                          shift);
        }
    }

    /* value only: a gray RGB image stays gray and scales uniformly; 1 channel the same */
    vt_image g = noise_image(64, 48, 3, 3), g1 = {64, 48, 1, malloc(n)};
    for (size_t i = 0; i < n; i++) {
        g.data[3 * i + 1] = g.data[3 * i + 2] = g.data[3 * i];
        g1.data[i] = g.data[3 * i];
    }
    vt_rng r1, r2;
    vt_rng_seed(&r1, 4);
    r2 = r1;
    vt_aug_hsv(&g, 0.5f, 0.9f, 0.9f, &r1);
    vt_aug_hsv(&g1, 0.5f, 0.9f, 0.9f, &r2);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(g.data[3 * i], g.data[3 * i + 1]);
        ck_assert_int_eq(g.data[3 * i], g.data[3 * i + 2]);
        ck_assert_int_eq(g.data[3 * i], g1.data[i]);
    }
    /* the gray mapping is one monotonic gain: equal inputs equal, order kept */
    vt_image g0 = {64, 48, 1, malloc(n)};
    vt_image gsrc = noise_image(64, 48, 3, 3);
    for (size_t i = 0; i < n; i++) g0.data[i] = gsrc.data[3 * i];
    int diff = 0;
    for (size_t i = 0; i < n; i++) {
        diff += g0.data[i] != g1.data[i];
        for (size_t j = i + 1; j < i + 40 && j < n; j++) {
            if (g0.data[i] < g0.data[j]) ck_assert_int_le(g1.data[i], g1.data[j]);
            if (g0.data[i] == g0.data[j]) ck_assert_int_eq(g1.data[i], g1.data[j]);
        }
    }
    ck_assert_int_gt(diff, (int)n / 2);

    /* saturation only: V (the max) stays, a desaturated pixel moves its other channels
     * towards it */
    vt_image s = noise_image(64, 48, 3, 5), s0 = noise_image(64, 48, 3, 5);
    vt_aug_params p;
    vt_aug_params_default(&p);
    int up = 0, down = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        memcpy(s.data, s0.data, n * 3);
        vt_rng_seed(&r, seed);
        vt_aug_hsv(&s, 0, 0.95f, 0, &r);
        long before = 0, after = 0;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *a = s.data + 3 * i, *b = s0.data + 3 * i;
            int amax = a[0] > a[1] ? (a[0] > a[2] ? a[0] : a[2]) : (a[1] > a[2] ? a[1] : a[2]);
            int bmax = b[0] > b[1] ? (b[0] > b[2] ? b[0] : b[2]) : (b[1] > b[2] ? b[1] : b[2]);
            ck_assert_int_le(abs(amax - bmax), 1);
            assert_same_hue(a, b);
            for (int k = 0; k < 3; k++) {
                before += bmax - b[k];
                after += amax - a[k];
            }
        }
        if (after > before) up++;
        if (after < before) down++;
    }
    ck_assert_int_gt(up, 0);
    ck_assert_int_gt(down, 0);
    /* value only: the hue and saturation stay, also where V * gain passes 255 */
    int brighter = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        memcpy(s.data, s0.data, n * 3);
        vt_rng_seed(&r, seed);
        vt_aug_hsv(&s, 0, 0, 0.9f, &r);
        long sum_a = 0, sum_b = 0;
        for (size_t i = 0; i < n; i++) {
            assert_same_hue(s.data + 3 * i, s0.data + 3 * i);
            sum_a += max3(s.data + 3 * i);
            sum_b += max3(s0.data + 3 * i);
        }
        brighter += sum_a > sum_b;
    }
    ck_assert(brighter > 0 && brighter < 6);
    vt_image_free(&s);
    vt_image_free(&s0);
    vt_image_free(&g);
    vt_image_free(&g0);
    vt_image_free(&g1);
    vt_image_free(&gsrc);
    vt_image_free(&im);
    vt_image_free(&ref);
}
END_TEST

/* ---- classification ---------------------------------------------------------------------- */

START_TEST(test_erasing)
{
    vt_image im = noise_image(80, 60, 3, 7), ref = noise_image(80, 60, 3, 7);
    vt_rng r;
    vt_rng_seed(&r, 1);
    for (int i = 0; i < 20; i++) ck_assert_int_eq(vt_aug_random_erasing(&im, 0.0f, 0, &r, NULL), 0);
    ck_assert_int_eq(memcmp(im.data, ref.data, 80 * 60 * 3), 0);

    int erased = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        memcpy(im.data, ref.data, 80 * 60 * 3);
        vt_rng_seed(&r, seed);
        int e[4];
        if (!vt_aug_random_erasing(&im, 1.0f, 7, &r, e)) continue;
        erased++;
        /* the changed pixels form one rectangle filled with 7 */
        int x0 = 80, y0 = 60, x1 = 0, y1 = 0;
        for (int y = 0; y < 60; y++)
            for (int x = 0; x < 80; x++)
                if (memcmp(im.data + (y * 80 + x) * 3, ref.data + (y * 80 + x) * 3, 3)) {
                    x0 = x < x0 ? x : x0;
                    y0 = y < y0 ? y : y0;
                    x1 = x + 1 > x1 ? x + 1 : x1;
                    y1 = y + 1 > y1 ? y + 1 : y1;
                }
        ck_assert_int_gt(x1, x0);
        ck_assert_int_eq(x0, e[0]);
        ck_assert_int_eq(y0, e[1]);
        ck_assert_int_eq(x1 - x0, e[2]);
        ck_assert_int_eq(y1 - y0, e[3]);
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++)
                for (int k = 0; k < 3; k++)
                    if (ref.data[(y * 80 + x) * 3 + k] != 7)
                        ck_assert_int_eq(im.data[(y * 80 + x) * 3 + k], 7);
        double frac = (double)(x1 - x0) * (y1 - y0) / (80 * 60);
        double ar = (double)(y1 - y0) / (x1 - x0);
        ck_assert_msg(frac > 0.015 && frac < 0.36, "erased fraction %g", frac);
        ck_assert_msg(ar > 0.25 && ar < 4.0, "erased aspect %g", ar);
    }
    ck_assert_int_ge(erased, 18);
    /* random fill: not a constant */
    memcpy(im.data, ref.data, 80 * 60 * 3);
    vt_rng_seed(&r, 3);
    ck_assert_int_eq(vt_aug_random_erasing(&im, 1.0f, -1, &r, NULL), 1);
    ck_assert_int_ne(memcmp(im.data, ref.data, 80 * 60 * 3), 0);
    vt_image_free(&im);
    vt_image_free(&ref);
}
END_TEST

START_TEST(test_random_resized_crop)
{
    vt_image im = noise_image(120, 90, 3, 11);
    vt_rng r;
    int fallbacks = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        vt_rng_seed(&r, seed);
        vt_image out;
        int c[4];
        ck_assert_int_eq(vt_aug_random_resized_crop(&im, 64, 0.08f, 0.75f, 4.0f / 3, &r, &out, c),
                         VT_OK);
        ck_assert_int_eq(out.w, 64);
        ck_assert_int_eq(out.h, 64);
        ck_assert(c[0] >= 0 && c[1] >= 0 && c[0] + c[2] <= 120 && c[1] + c[3] <= 90);
        double frac = (double)c[2] * c[3] / (120 * 90), ar = (double)c[2] / c[3];
        if (c[2] == 120 && c[3] == 90 && c[0] == 0) fallbacks++;
        ck_assert_msg(frac > 0.07 && frac <= 1.0, "area fraction %g", frac);
        ck_assert_msg(ar > 0.7 && ar < 1.4, "aspect %g", ar);
        /* the output is the reported rectangle resized */
        vt_image cr = {c[2], c[3], 3, malloc((size_t)c[2] * c[3] * 3)}, rs;
        for (int y = 0; y < c[3]; y++)
            memcpy(cr.data + (size_t)y * c[2] * 3, im.data + ((size_t)(c[1] + y) * 120 + c[0]) * 3,
                   (size_t)c[2] * 3);
        ck_assert_int_eq(vt_image_resize(&cr, 64, 64, &rs), VT_OK);
        ck_assert_int_eq(memcmp(rs.data, out.data, 64 * 64 * 3), 0);
        vt_image_free(&rs);
        vt_image_free(&cr);
        vt_image_free(&out);
    }
    ck_assert_int_lt(fallbacks, 5);
    /* no try can fit a 1000x10 strip: centre crop at the widest allowed ratio */
    vt_image strip = noise_image(1000, 10, 1, 2);
    vt_image out;
    int c[4];
    ck_assert_int_eq(vt_aug_random_resized_crop(&strip, 16, 0.08f, 0.75f, 4.0f / 3, &r, &out, c),
                     VT_OK);
    ck_assert_int_eq(c[2], 13);
    ck_assert_int_eq(c[3], 10);
    ck_assert_int_eq(c[0], (1000 - 13) / 2);
    ck_assert_int_eq(c[1], 0);
    ck_assert_int_eq(out.c, 1);
    vt_image_free(&out);
    ck_assert_int_eq(vt_aug_random_resized_crop(&strip, 16, 0.0f, 0.75f, 4.0f / 3, &r, &out, c),
                     VT_ERR_INVALID_ARGUMENT);
    vt_image_free(&strip);
    vt_image_free(&im);
}
END_TEST

/* ---- the mosaic without its canvas ------------------------------------------------------- */

static int same_labels(const vt_aug_labels *a, const vt_aug_labels *b)
{
    return a->n == b->n && a->nxy == b->nxy &&
           (!a->n || !memcmp(a->box, b->box, sizeof *a->box * a->n)) &&
           (!a->nxy || !memcmp(a->xy, b->xy, sizeof(float) * 2 * a->nxy));
}

/* vt_aug_warp_tiles against vt_aug_warp_image of the painted canvas: random canvases (odd sizes
 * too), splits, tiles anywhere in their quadrants (empty ones, ones at the canvas edge) and
 * scale-and-shift transforms that also reach the fill; a rotation is declined (done = 0). */
START_TEST(test_warp_tiles_exact)
{
    vt_rng g;
    vt_rng_seed(&g, 31);
    for (int it = 0; it < 60; it++) {
        int cw = 2 + (int)vt_rng_below(&g, 90), ch = 2 + (int)vt_rng_below(&g, 90);
        int xc = 1 + (int)vt_rng_below(&g, (uint32_t)(cw - 1)),
            yc = 1 + (int)vt_rng_below(&g, (uint32_t)(ch - 1));
        vt_image im[4];
        vt_aug_tile tiles[4];
        vt_image canvas = new_image(cw, ch, 3);
        memset(canvas.data, 114, (size_t)cw * ch * 3);
        for (int i = 0; i < 4; i++) {
            /* the quadrant's range, then a sub-rectangle of it (sometimes the whole, sometimes
             * empty) */
            int qx0 = i & 1 ? xc : 0, qx1 = i & 1 ? cw : xc, qy0 = i & 2 ? yc : 0,
                qy1 = i & 2 ? ch : yc;
            int x0 = qx0 + (int)vt_rng_below(&g, (uint32_t)(qx1 - qx0 + 1));
            int x1 = x0 + (int)vt_rng_below(&g, (uint32_t)(qx1 - x0 + 1));
            int y0 = qy0 + (int)vt_rng_below(&g, (uint32_t)(qy1 - qy0 + 1));
            int y1 = y0 + (int)vt_rng_below(&g, (uint32_t)(qy1 - y0 + 1));
            if (it % 3 == 0) x0 = qx0, x1 = qx1, y0 = qy0, y1 = qy1;
            int w = (x1 - x0) + 1 + (int)vt_rng_below(&g, 5), h = (y1 - y0) + 1 + (int)vt_rng_below(&g, 5);
            im[i] = noise_image(w, h, 3, 500 + (uint64_t)it * 4 + i);
            int ox = (int)vt_rng_below(&g, (uint32_t)(w - (x1 - x0) + 1));
            int oy = (int)vt_rng_below(&g, (uint32_t)(h - (y1 - y0) + 1));
            tiles[i] = (vt_aug_tile){&im[i], x0, y0, x1, y1, ox, oy};
            for (int y = y0; y < y1; y++)
                memcpy(canvas.data + ((size_t)y * cw + x0) * 3,
                       im[i].data + ((size_t)(y - y0 + oy) * w + ox) * 3, (size_t)(x1 - x0) * 3);
        }
        vt_aug_params p;
        vt_aug_params_default(&p);
        p.translate = it % 2 ? 0.1f : 0.8f;
        p.scale = it % 4 ? 0.5f : 0.9f;
        int ow = 1 + (int)vt_rng_below(&g, 70), oh = 1 + (int)vt_rng_below(&g, 70);
        vt_aug_transform t;
        vt_aug_transform_draw(&p, &g, cw, ch, ow, oh, &t);
        vt_image a = {0, 0, 0, NULL}, b;
        int done = 0;
        ck_assert_int_eq(vt_aug_warp_tiles(tiles, cw, ch, xc, yc, &t, ow, oh, 114, &a, &done),
                         VT_OK);
        ck_assert_int_eq(done, 1);
        ck_assert_int_eq(vt_aug_warp_image(&canvas, &t, ow, oh, 114, &b), VT_OK);
        ck_assert_int_eq(a.w, ow);
        ck_assert_int_eq(a.h, oh);
        for (int i = 0; i < ow * oh * 3; i++)
            ck_assert_msg(a.data[i] == b.data[i], "case %d (%dx%d split %d,%d -> %dx%d): byte %d: %d vs %d",
                          it, cw, ch, xc, yc, ow, oh, i, a.data[i], b.data[i]);
        vt_image_free(&a);
        vt_image_free(&b);
        /* a rotation is not separable: declined, nothing written */
        p.degrees = 30;
        vt_aug_transform_draw(&p, &g, cw, ch, ow, oh, &t);
        ck_assert_int_eq(vt_aug_warp_tiles(tiles, cw, ch, xc, yc, &t, ow, oh, 114, &a, &done),
                         VT_OK);
        ck_assert_int_eq(done, 0);
        ck_assert_ptr_null(a.data);
        for (int i = 0; i < 4; i++) vt_image_free(&im[i]);
        vt_image_free(&canvas);
    }
    /* a tile outside its quadrant is refused */
    vt_image one = noise_image(4, 4, 3, 1);
    vt_aug_tile bad[4] = {{&one, 0, 0, 4, 4, 0, 0}, {&one, 2, 0, 6, 4, 0, 0},
                          {&one, 0, 4, 4, 8, 0, 0}, {&one, 4, 4, 8, 8, 0, 0}};
    vt_aug_transform id = {{1, 0, 0, 0, 1, 0, 0, 0, 1}, 1.0};
    vt_image a = {0, 0, 0, NULL};
    int done = 1;
    ck_assert_int_eq(vt_aug_warp_tiles(bad, 8, 8, 4, 4, &id, 8, 8, 114, &a, &done),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(done, 0);
    bad[1].x0 = 4;
    bad[1].x1 = 8;
    ck_assert_int_eq(vt_aug_warp_tiles(bad, 8, 8, 4, 4, &id, 8, 8, 114, &a, &done), VT_OK);
    ck_assert_int_eq(done, 1);
    vt_image_free(&a);
    vt_image_free(&one);
}
END_TEST

/* vt_aug_mosaic (no canvas for scale and shift) gives the bytes, labels and draws of the canvas
 * then vt_aug_affine (whose warp takes the separable path): odd and even s, images already at
 * the mosaic size or resized to it, tiles cut by the canvas edge, shifts that show the fill; and
 * with a rotation (the painted canvas). */
START_TEST(test_mosaic_fused_exact)
{
    vt_rng g;
    vt_rng_seed(&g, 8);
    const int sizes[] = {2, 3, 17, 32, 45, 64, 101};
    for (int it = 0; it < 42; it++) {
        const int s = sizes[it % 7];
        vt_image im[4];
        vt_aug_labels l[4];
        for (int i = 0; i < 4; i++) {
            int w = 1 + (int)vt_rng_below(&g, (uint32_t)(2 * s + 3)),
                h = 1 + (int)vt_rng_below(&g, (uint32_t)(2 * s + 3));
            if ((it + i) % 3 == 0) { /* long side s already: placed as it is */
                w = s;
                h = 1 + (int)vt_rng_below(&g, (uint32_t)s);
                if (i % 2) {
                    h = s;
                    w = 1 + (int)vt_rng_below(&g, (uint32_t)s);
                }
            }
            im[i] = noise_image(w, h, 3, 900 + (uint64_t)it * 4 + i);
            vt_aug_labels_init(&l[i]);
            float bx0 = w * 0.1f, by0 = h * 0.2f, bx1 = w * 0.9f, by1 = h * 0.7f;
            ck_assert_int_eq(vt_aug_labels_add_box(&l[i], i, bx0, by0, bx1, by1), VT_OK);
            float tri[6] = {w * 0.2f, h * 0.1f, w * 0.95f, h * 0.5f, w * 0.3f, h * 0.99f};
            ck_assert_int_eq(vt_aug_labels_add_poly(&l[i], 4 + i, tri, 3), VT_OK);
        }
        const vt_image *ims[4] = {&im[0], &im[1], &im[2], &im[3]};
        const vt_aug_labels *ls[4] = {&l[0], &l[1], &l[2], &l[3]};
        vt_aug_params p;
        vt_aug_params_default(&p);
        p.translate = it % 4 == 1 ? 0.9f : 0.1f;
        p.scale = it % 5 == 2 ? 0.95f : 0.5f;
        if (it % 6 == 5) p.degrees = 15; /* the general path */
        vt_rng a, b;
        vt_rng_seed(&a, 4000 + (uint64_t)it);
        b = a;
        vt_image out, canvas, ref;
        vt_aug_labels ol, cl;
        vt_aug_labels_init(&ol);
        vt_aug_labels_init(&cl);
        ck_assert_int_eq(vt_aug_mosaic(ims, ls, s, &p, &a, &out, &ol), VT_OK);
        ck_assert_int_eq(vt_aug_mosaic_canvas(ims, ls, s, &b, &canvas, &cl), VT_OK);
        ck_assert_int_eq(vt_aug_affine(&canvas, &cl, s, s, &p, &b, &ref), VT_OK);
        ck_assert_int_eq(out.w, s);
        ck_assert_int_eq(out.h, s);
        for (int i = 0; i < s * s * 3; i++)
            ck_assert_msg(out.data[i] == ref.data[i], "case %d (s %d): byte %d: %d vs %d", it, s,
                          i, out.data[i], ref.data[i]);
        ck_assert_msg(same_labels(&ol, &cl), "case %d: labels differ", it);
        ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0); /* the same draws */
        vt_image_free(&out);
        vt_image_free(&canvas);
        vt_image_free(&ref);
        vt_aug_labels_free(&ol);
        vt_aug_labels_free(&cl);
        for (int i = 0; i < 4; i++) {
            vt_image_free(&im[i]);
            vt_aug_labels_free(&l[i]);
        }
    }
}
END_TEST

/* ---- samples drawn first, pixels after ---------------------------------------------------- */

/* Noise with gray, saturated and two-equal-channel pixels (the HSV's edge cases). */
static vt_image colour_image(int w, int h, uint64_t seed)
{
    vt_image im = noise_image(w, h, 3, seed);
    for (int i = 0; i < w * h; i++) {
        uint8_t *q = im.data + 3 * i;
        switch (i % 7) {
        case 1: q[1] = q[2] = q[0]; break;               /* gray */
        case 2: q[i % 3] = 255, q[(i + 1) % 3] = 0; break; /* saturated */
        case 3: q[1] = q[0]; break;                      /* a hue edge */
        default: break;
        }
    }
    return im;
}

static int same_floats(const float *a, const float *b, size_t n, size_t *where)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float))) {
            *where = i;
            return 0;
        }
    return 1;
}

/* vt_aug_mosaic_sample / vt_aug_letterbox_sample then vt_aug_sample_float or _image give the
 * floats, bytes, labels and draws of vt_aug_mosaic + vt_aug_hsv_flips (or
 * vt_aug_letterbox_affine) then vt_image_to_float: odd and even s, hue shifts of up to a full
 * turn, gains that clip and that do not, flips, rotations (the painted canvas) and gray
 * output. */
START_TEST(test_sample_float_exact)
{
    /* _i = 1: the SSE2 path where the CPU would take AVX2 (augment_px.h) */
    if (_i) setenv("VT_SIMD", "sse2", 1);
    else unsetenv("VT_SIMD");
    vt_rng g;
    vt_rng_seed(&g, 12);
    const int sizes[] = {2, 5, 16, 33, 47, 64};
    const float hues[] = {0.0f, 0.015f, 0.3f, 1.0f};
    for (int it = 0; it < 48; it++) {
        const int s = sizes[it % 6];
        vt_image im[4];
        vt_aug_labels l[4];
        for (int i = 0; i < 4; i++) {
            int w = 1 + (int)vt_rng_below(&g, (uint32_t)(2 * s + 2)),
                h = 1 + (int)vt_rng_below(&g, (uint32_t)(2 * s + 2));
            if ((it + i) % 2) { /* long side s: placed as it is */
                w = s;
                h = 1 + (int)vt_rng_below(&g, (uint32_t)s);
            }
            im[i] = colour_image(w, h, 70 + (uint64_t)it * 4 + i);
            vt_aug_labels_init(&l[i]);
            ck_assert_int_eq(vt_aug_labels_add_box(&l[i], i, w * 0.2f, h * 0.1f, w * 0.8f,
                                                   h * 0.9f),
                             VT_OK);
        }
        const vt_image *ims[4] = {&im[0], &im[1], &im[2], &im[3]};
        const vt_aug_labels *ls[4] = {&l[0], &l[1], &l[2], &l[3]};
        vt_aug_params p;
        vt_aug_params_default(&p);
        p.hsv_h = hues[it % 4];
        p.hsv_s = it % 3 ? 0.7f : 1.0f;
        p.hsv_v = it % 5 ? 0.4f : 1.0f;
        p.flipud = 0.5f;
        p.translate = it % 4 == 3 ? 0.9f : 0.1f;
        if (it % 7 == 6) p.degrees = 20; /* not separable */
        const size_t plane = (size_t)s * s;
        float *a = malloc(sizeof(float) * 3 * plane), *b = malloc(sizeof(float) * 3 * plane);
        for (int kind = 0; kind < 2; kind++) { /* mosaic, letterbox */
            vt_rng r1, r2;
            vt_rng_seed(&r1, 300 + (uint64_t)it);
            r2 = r1;
            vt_aug_sample smp;
            vt_aug_labels sl, rl;
            vt_aug_labels_init(&sl);
            vt_aug_labels_init(&rl);
            vt_image ref, img;
            if (kind == 0) {
                ck_assert_int_eq(vt_aug_mosaic_sample(ims, ls, s, &p, &r1, &smp, &sl), VT_OK);
                ck_assert_int_eq(vt_aug_mosaic(ims, ls, s, &p, &r2, &ref, &rl), VT_OK);
                vt_aug_hsv_flips(&ref, &rl, &p, &r2);
            } else {
                ck_assert_int_eq(vt_aug_letterbox_sample(&im[it % 4], &l[it % 4], s, &p, &r1,
                                                         &smp, &sl),
                                 VT_OK);
                ck_assert_int_eq(
                    vt_aug_letterbox_affine(&im[it % 4], &l[it % 4], s, &p, &r2, &ref, &rl),
                    VT_OK);
            }
            ck_assert_int_eq(memcmp(&r1, &r2, sizeof r1), 0); /* the same draws */
            ck_assert_msg(same_labels(&sl, &rl), "case %d/%d: labels differ", it, kind);
            ck_assert_int_eq(vt_aug_sample_image(&smp, &img), VT_OK);
            ck_assert_int_eq(memcmp(img.data, ref.data, plane * 3), 0);
            for (int want = 1; want <= 3; want += 2) {
                memset(a, 0xAB, sizeof(float) * 3 * plane);
                ck_assert_int_eq(vt_aug_sample_float(&smp, want, a, plane), VT_OK);
                vt_image_to_float(&ref, want, 0, b, plane);
                size_t at = 0;
                ck_assert_msg(same_floats(a, b, plane * want, &at),
                              "case %d/%d (s %d, want %d, hue %g, flips %d %d): float %zu: %g "
                              "vs %g",
                              it, kind, s, want, p.hsv_h, smp.colour.flipud, smp.colour.fliplr,
                              at, a[at], b[at]);
            }
            vt_image_free(&img);
            vt_image_free(&ref);
            vt_aug_sample_free(&smp);
            vt_aug_labels_free(&sl);
            vt_aug_labels_free(&rl);
        }
        free(a);
        free(b);
        for (int i = 0; i < 4; i++) {
            vt_image_free(&im[i]);
            vt_aug_labels_free(&l[i]);
        }
    }
}
END_TEST

/* vt_aug_colour_to_float against a copy through vt_aug_colour_apply and vt_image_to_float
 * (widths that are and are not multiples of 4, one pixel, flips, hue turns up to a full one);
 * and the in-place HSV of 4-channel pixels keeps alpha and gives the 3-channel bytes. */
START_TEST(test_colour_to_float_exact)
{
    vt_rng g;
    vt_rng_seed(&g, 5);
    vt_aug_params p;
    vt_aug_params_default(&p);
    p.flipud = 0.5f;
    for (int it = 0; it < 40; it++) {
        const int w = 1 + (int)vt_rng_below(&g, 13), h = 1 + (int)vt_rng_below(&g, 9);
        p.hsv_h = it % 3 ? 0.015f : 1.0f;
        p.hsv_v = it % 2 ? 0.4f : 0.9f;
        vt_image im = colour_image(w, h, 900 + (uint64_t)it), cp = colour_image(w, h, 900 + (uint64_t)it);
        vt_aug_colour c;
        vt_aug_colour_draw(&p, &g, &c);
        const size_t plane = (size_t)w * h;
        float *a = malloc(sizeof(float) * 3 * plane), *b = malloc(sizeof(float) * 3 * plane);
        for (int want = 1; want <= 3; want += 2) {
            ck_assert_int_eq(vt_aug_colour_to_float(&im, &c, want, a, plane), VT_OK);
            vt_image_free(&cp);
            cp = colour_image(w, h, 900 + (uint64_t)it);
            vt_aug_colour_apply(&cp, &c);
            vt_image_to_float(&cp, want, 0, b, plane);
            size_t at = 0;
            ck_assert_msg(same_floats(a, b, plane * want, &at), "case %d (%dx%d): float %zu", it,
                          w, h, at);
        }
        /* the source is untouched */
        vt_image orig = colour_image(w, h, 900 + (uint64_t)it);
        ck_assert_int_eq(memcmp(orig.data, im.data, plane * 3), 0);
        /* 4 channels: the same RGB, alpha kept */
        vt_image a4 = {w, h, 4, malloc(plane * 4)};
        for (size_t i = 0; i < plane; i++) {
            memcpy(a4.data + 4 * i, orig.data + 3 * i, 3);
            a4.data[4 * i + 3] = (uint8_t)(i * 37);
        }
        vt_aug_hsv_apply(&a4, c.dh, c.gs, c.gv);
        vt_aug_hsv_apply(&orig, c.dh, c.gs, c.gv);
        for (size_t i = 0; i < plane; i++) {
            ck_assert_int_eq(memcmp(a4.data + 4 * i, orig.data + 3 * i, 3), 0);
            ck_assert_int_eq(a4.data[4 * i + 3], (uint8_t)(i * 37));
        }
        vt_image_free(&a4);
        vt_image_free(&orig);
        vt_image_free(&im);
        vt_image_free(&cp);
        free(a);
        free(b);
    }
}
END_TEST

/* ---- determinism ------------------------------------------------------------------------- */

typedef struct sample {
    vt_image img;
    vt_aug_labels l;
} sample;

/* The whole detection pipeline (mosaic, mixup with a letterboxed sample, hsv, flips) and the
 * classification one, from one seed. */
static void run_all(uint64_t seed, sample *det, vt_image *cls)
{
    vt_image im[4];
    vt_aug_labels l[4];
    long ref[8];
    mosaic_inputs(im, l, ref, 96);
    const vt_image *ims[4] = {&im[0], &im[1], &im[2], &im[3]};
    const vt_aug_labels *ls[4] = {&l[0], &l[1], &l[2], &l[3]};
    vt_aug_params p;
    vt_aug_params_default(&p);
    p.degrees = 10;
    p.mixup = 1;
    vt_rng r;
    vt_rng_seed(&r, seed);
    vt_aug_labels_init(&det->l);
    ck_assert_int_eq(vt_aug_mosaic(ims, ls, 96, &p, &r, &det->img, &det->l), VT_OK);
    sample b;
    vt_aug_labels_init(&b.l);
    ck_assert_int_eq(vt_aug_letterbox_affine(&im[1], &l[1], 96, &p, &r, &b.img, &b.l), VT_OK);
    ck_assert_int_eq(vt_aug_mixup(&det->img, &det->l, &b.img, &b.l, &r, NULL), VT_OK);
    vt_aug_hsv_flips(&det->img, &det->l, &p, &r);
    ck_assert_int_eq(vt_aug_classify(&im[0], 64, &p, &r, cls), VT_OK);
    vt_image_free(&b.img);
    vt_aug_labels_free(&b.l);
    for (int i = 0; i < 4; i++) {
        vt_image_free(&im[i]);
        vt_aug_labels_free(&l[i]);
    }
}

static int same_sample(const sample *a, const sample *b)
{
    return a->l.n == b->l.n && !memcmp(a->img.data, b->img.data, 96 * 96 * 3) &&
           !memcmp(a->l.box, b->l.box, sizeof *a->l.box * a->l.n) && a->l.nxy == b->l.nxy &&
           !memcmp(a->l.xy, b->l.xy, sizeof(float) * 2 * a->l.nxy);
}

START_TEST(test_determinism)
{
    sample a, b, c;
    vt_image ca, cb, cc;
    run_all(42, &a, &ca);
    run_all(42, &b, &cb);
    run_all(43, &c, &cc);
    ck_assert(same_sample(&a, &b));
    ck_assert_int_eq(memcmp(ca.data, cb.data, 64 * 64 * 3), 0);
    ck_assert(!same_sample(&a, &c));
    ck_assert_int_ne(memcmp(ca.data, cc.data, 64 * 64 * 3), 0);
    vt_image_free(&a.img);
    vt_image_free(&b.img);
    vt_image_free(&c.img);
    vt_aug_labels_free(&a.l);
    vt_aug_labels_free(&b.l);
    vt_aug_labels_free(&c.l);
    vt_image_free(&ca);
    vt_image_free(&cb);
    vt_image_free(&cc);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("augment");
    TCase *tp = tcase_create("params");
    tcase_add_test(tp, test_params);
    suite_add_tcase(s, tp);
    TCase *tg = tcase_create("geometry");
    tcase_add_test(tg, test_flips);
    tcase_add_test(tg, test_affine_identity);
    tcase_add_test(tg, test_transform_draw);
    tcase_add_test(tg, test_affine_geometry);
    tcase_add_test(tg, test_drop_rule);
    tcase_add_test(tg, test_mosaic_geometry);
    tcase_add_test(tg, test_mosaic_errors);
    tcase_add_test(tg, test_warp_tiles_exact);
    tcase_add_test(tg, test_mosaic_fused_exact);
    tcase_add_test(tg, test_letterbox_affine);
    tcase_add_test(tg, test_mixup);
    suite_add_tcase(s, tg);
    TCase *tc = tcase_create("pixels");
    tcase_add_test(tc, test_hsv);
    tcase_add_loop_test(tc, test_sample_float_exact, 0, 2);
    tcase_add_test(tc, test_colour_to_float_exact);
    tcase_add_test(tc, test_erasing);
    tcase_add_test(tc, test_random_resized_crop);
    tcase_add_test(tc, test_determinism);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
