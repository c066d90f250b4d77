/* Semantic segmentation datasets: the polygon rasteriser against hand-computed masks
 * (pixel-centre rule, even-odd, concave outlines, overlap order), YOLO-seg labels (malformed
 * polygons recorded with file and line), the mask-PNG layout (missing, wrongly sized and
 * out-of-range masks, the ignore value), COCO polygons (RLE rejected), the public accessors,
 * and the synthetic generator (its polygons and its mask PNGs agree pixel for pixel). */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "data/augment.h"
#include "data/seg_mask.h"
#include "image/image.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

/* ---- fixtures ------------------------------------------------------------------------------ */




static void write_mask(const char *path, const uint8_t *px, int w, int h, int c)
{
    vt_test_parent_dirs(path);
    ck_assert_int_eq(vt_image_save_png(path, px, w, h, c, (size_t)w * c), VT_OK);
}


/* A mask drawn as text rows ('.' = 0, digits = classes) for readable expectations. */
static void expect_mask(const uint8_t *m, int w, int h, const char *rows)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            char c = rows[y * (w + 1) + x];
            int want = c == '.' ? 0 : c - '0';
            ck_assert_msg(m[y * w + x] == want, "pixel (%d, %d) is %d, expected %d", x, y,
                          m[y * w + x], want);
        }
}

static int count_value(const uint8_t *m, int n, int v)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += m[i] == v;
    return k;
}

typedef struct want {
    const char *file_suffix;
    int line, code;
} want;

static void expect_problems(const vt_dataset *ds, const want *w, int n)
{
    ck_assert_msg(vt_dataset_num_problems(ds) == n, "%d problems, expected %d",
                  vt_dataset_num_problems(ds), n);
    for (int k = 0; k < n; k++) {
        const char *file, *msg;
        int line, code;
        ck_assert_int_eq(vt_dataset_problem(ds, k, &file, &line, &code, &msg), VT_OK);
        size_t lf = strlen(file), ls = strlen(w[k].file_suffix);
        ck_assert_msg(lf >= ls && !strcmp(file + lf - ls, w[k].file_suffix),
                      "problem %d: file %s, expected ...%s (%s)", k, file, w[k].file_suffix, msg);
        ck_assert_msg(line == w[k].line && code == w[k].code,
                      "problem %d: line %d code %s, expected line %d code %s (%s)", k, line,
                      vt_problem_code_name(code), w[k].line, vt_problem_code_name(w[k].code),
                      msg);
    }
}

/* ---- rasteriser ------------------------------------------------------------------------------- */

START_TEST(test_raster_square)
{
    uint8_t m[36];
    /* corners on pixel borders: exactly the 2x2 pixels inside */
    const float sq[] = {1, 1, 3, 1, 3, 3, 1, 3};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(sq, 4, 6, 6, 1, m), VT_OK);
    expect_mask(m, 6, 6, "......\n.11...\n.11...\n......\n......\n......\n");
    /* edges through pixel centres: left and top edges are in, right and bottom out */
    const float half[] = {0.5f, 0.5f, 2.5f, 0.5f, 2.5f, 2.5f, 0.5f, 2.5f};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(half, 4, 6, 6, 2, m), VT_OK);
    expect_mask(m, 6, 6, "22....\n22....\n......\n......\n......\n......\n");
    /* so two squares sharing that edge never share a pixel (and leave no gap) */
    const float right[] = {2.5f, 0.5f, 4.5f, 0.5f, 4.5f, 2.5f, 2.5f, 2.5f};
    ck_assert_int_eq(vt_seg_rasterize(right, 4, 6, 6, 3, m), VT_OK);
    expect_mask(m, 6, 6, "2233..\n2233..\n......\n......\n......\n......\n");
    /* the winding direction does not matter */
    const float ccw[] = {1, 1, 1, 3, 3, 3, 3, 1};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(ccw, 4, 6, 6, 1, m), VT_OK);
    ck_assert_int_eq(count_value(m, 36, 1), 4);
    ck_assert_int_eq(m[1 * 6 + 1], 1);
}
END_TEST

START_TEST(test_raster_triangle_and_clip)
{
    uint8_t m[64];
    /* right triangle (0,0) (8,0) (0,8): pixel (x, y) is in when x + y + 1 < 8, i.e. x + y <= 6
     * (centres on the hypotenuse, x + y = 7, are on its right: out): 7+6+...+1 = 28 pixels */
    const float tri[] = {0, 0, 8, 0, 0, 8};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(tri, 3, 8, 8, 1, m), VT_OK);
    ck_assert_int_eq(count_value(m, 64, 1), 28);
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) ck_assert_int_eq(m[y * 8 + x], x + y <= 6 ? 1 : 0);
    /* a polygon larger than the mask is clipped: everything filled, nothing written outside */
    uint8_t big[8 * 8 + 16];
    memset(big, 0xAB, sizeof big);
    const float huge[] = {-100, -50, 300, -50, 300, 400, -100, 400};
    ck_assert_int_eq(vt_seg_rasterize(huge, 4, 8, 8, 4, big + 8), VT_OK);
    ck_assert_int_eq(count_value(big + 8, 64, 4), 64);
    for (int k = 0; k < 8; k++) {
        ck_assert_int_eq(big[k], 0xAB);
        ck_assert_int_eq(big[8 + 64 + k], 0xAB);
    }
    /* entirely outside: nothing */
    memset(m, 0, sizeof m);
    const float away[] = {20, 20, 30, 20, 25, 30};
    ck_assert_int_eq(vt_seg_rasterize(away, 3, 8, 8, 1, m), VT_OK);
    ck_assert_int_eq(count_value(m, 64, 0), 64);
    /* bad arguments */
    const float nan_pt[] = {0, 0, 8, 0, 0.0f / 0.0f, 8};
    ck_assert_int_eq(vt_seg_rasterize(nan_pt, 3, 8, 8, 1, m), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_seg_rasterize(tri, 2, 8, 8, 1, m), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_seg_rasterize(tri, 3, 0, 8, 1, m), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_seg_rasterize(tri, 3, 8, 8, 1, NULL), VT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_raster_concave_and_holes)
{
    uint8_t m[36];
    /* a U: rows 0-1 full, rows 2-5 only the two legs */
    const float u[] = {0, 0, 6, 0, 6, 6, 4, 6, 4, 2, 2, 2, 2, 6, 0, 6};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(u, 8, 6, 6, 5, m), VT_OK);
    expect_mask(m, 6, 6, "555555\n555555\n55..55\n55..55\n55..55\n55..55\n");
    /* a frame as one polygon: outer square, a bridge to the inner square traversed the other
     * way, and back: the doubled bridge edge cancels (even-odd), the hole stays empty */
    const float frame[] = {0, 0, 6, 0, 6, 6, 0, 6, 0, 0, 2, 2, 2, 4, 4, 4, 4, 2, 2, 2};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(frame, 10, 6, 6, 1, m), VT_OK);
    expect_mask(m, 6, 6, "111111\n111111\n11..11\n11..11\n111111\n111111\n");
    /* self-intersecting bow tie, even-odd: the two lobes are filled, nothing else */
    const float bow[] = {0, 0, 6, 6, 6, 0, 0, 6};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_rasterize(bow, 4, 6, 6, 1, m), VT_OK);
    ck_assert_int_eq(m[2 * 6 + 0], 1); /* left lobe */
    ck_assert_int_eq(m[2 * 6 + 5], 1); /* right lobe */
    ck_assert_int_eq(m[0 * 6 + 3], 0); /* above the crossing */
    ck_assert_int_eq(m[5 * 6 + 3], 0); /* below it */
}
END_TEST

START_TEST(test_overlap_rule)
{
    /* a big square (class 1) listed after a small one (class 2): the small one stays on top;
     * two equal squares: the later one wins */
    const float xy[] = {
        0.25f, 0.25f, 0.5f, 0.25f, 0.5f, 0.5f, 0.25f, 0.5f, /* small, class 2 */
        0, 0, 1, 0, 1, 1, 0, 1,                             /* whole image, class 1 */
        0, 0, 0.25f, 0, 0.25f, 0.25f, 0, 0.25f,             /* equal area, class 3 */
        0, 0, 0.25f, 0, 0.25f, 0.25f, 0, 0.25f,             /* same place, class 4 */
    };
    const vt_seg_poly polys[] = {{2, 4, 0}, {1, 4, 4}, {3, 4, 8}, {4, 4, 12}};
    uint8_t m[64];
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_draw_polygons(polys, 4, xy, 8, 8, m), VT_OK);
    expect_mask(m, 8, 8,
                "44111111\n44111111\n11221111\n11221111\n11111111\n11111111\n11111111\n"
                "11111111\n");
    /* the order is by area, not by list position: reversing the list changes nothing but the
     * tie between the two equal squares */
    const vt_seg_poly rev[] = {{4, 4, 12}, {3, 4, 8}, {1, 4, 4}, {2, 4, 0}};
    memset(m, 0, sizeof m);
    ck_assert_int_eq(vt_seg_draw_polygons(rev, 4, xy, 8, 8, m), VT_OK);
    ck_assert_int_eq(m[0], 3);
    ck_assert_int_eq(m[2 * 8 + 2], 2);
    ck_assert_int_eq(m[7 * 8 + 7], 1);
    ck_assert_double_eq_tol(vt_seg_poly_area(xy + 8, 4), 1.0, 1e-12);

    /* the same rule for augmented labels in pixels (a box-only object is not drawn) */
    vt_aug_labels l;
    vt_aug_labels_init(&l);
    ck_assert_int_eq(vt_aug_labels_add_box(&l, 7, 0, 0, 8, 8), VT_OK);
    for (int k = 0; k < 4; k++) {
        float px[8];
        for (int q = 0; q < 8; q++) px[q] = xy[2 * polys[k].off + q] * 8;
        ck_assert_int_eq(vt_aug_labels_add_poly(&l, polys[k].cls, px, 4), VT_OK);
    }
    uint8_t m2[64];
    memset(m, 0, sizeof m);
    memset(m2, 0, sizeof m2);
    ck_assert_int_eq(vt_seg_draw_polygons(polys, 4, xy, 8, 8, m), VT_OK);
    ck_assert_int_eq(vt_seg_draw_aug_labels(&l, 8, 8, m2), VT_OK);
    ck_assert_mem_eq(m, m2, 64);
    vt_aug_labels_free(&l);
}
END_TEST

/* ---- YOLO-seg ---------------------------------------------------------------------------------- */

static vt_dataset *open_seg(const char *path)
{
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_SEGMENT, path);
    ck_assert_msg(st == VT_OK, "open %s: %s", path, vt_last_error());
    return ds;
}

START_TEST(test_yolo_seg)
{
    vt_test_write_png(vt_test_path("y/images/train/a.png"), 10, 10, 0);
    vt_test_write_png(vt_test_path("y/images/train/b.png"), 10, 10, 0);
    vt_test_write_png(vt_test_path("y/images/val/c.png"), 10, 10, 0);
    vt_test_write_text(vt_test_path("y/labels/train/a.txt"),
               "1 0.1 0.1 0.5 0.1 0.5 0.5 0.1 0.5\n" /* 1: a square, kept */
               "0 0.1 0.2 0.3 0.4\n"                 /* 2: two points */
               "0 0.1 0.2 0.3 0.4 0.5\n"             /* 3: odd coordinate count */
               "0 0.1 0.1 1.5 0.1 0.5 0.5\n"         /* 4: coordinate outside 0..1 */
               "7 0.1 0.1 0.9 0.1 0.5 0.5\n"         /* 5: unknown class */
               "0 0.1 0.1 0.9 x 0.5 0.5\n"           /* 6: not a number */
               "\n"                                  /* 7: blank */
               "0 0.6 0.6 1.0 0.6 0.8 1.0\n"         /* 8: a triangle, kept */
               "1 0.1 0.1 0.5 0.1 0.5 0.5 0.1 0.5\n"); /* 9: duplicate of line 1 */
    vt_test_write_text(vt_test_path("y/labels/val/c.txt"), "1 0 0 1 0 1 1 0 1\n");
    vt_test_write_text(vt_test_path("y/data.yaml"), "train: images/train\nval: images/val\n"
                                            "names: [cat, dog]\n");
    vt_dataset *ds = open_seg(vt_test_path("y"));
    ck_assert_int_eq(vt_dataset_task(ds), VT_TASK_SEGMENT);
    /* class convention: 0 background, object class k -> k + 1 */
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "background");
    ck_assert_str_eq(vt_dataset_class_name(ds, 1), "cat");
    ck_assert_str_eq(vt_dataset_class_name(ds, 2), "dog");
    ck_assert_int_eq(vt_dataset_ignore_value(ds), 255);
    const want w[] = {
        {"y/labels/train/a.txt", 2, VT_PROBLEM_POLYGON_POINTS},
        {"y/labels/train/a.txt", 3, VT_PROBLEM_BAD_LINE},
        {"y/labels/train/a.txt", 4, VT_PROBLEM_COORD_RANGE},
        {"y/labels/train/a.txt", 5, VT_PROBLEM_CLASS_RANGE},
        {"y/labels/train/a.txt", 6, VT_PROBLEM_BAD_LINE},
        {"y/labels/train/a.txt", 9, VT_PROBLEM_DUPLICATE},
    };
    expect_problems(ds, w, 6);
    const char *msg;
    ck_assert_int_eq(vt_dataset_problem(ds, 1, NULL, NULL, NULL, &msg), VT_OK);
    ck_assert_ptr_nonnull(strstr(msg, "a.txt:3: "));
    /* the two good polygons are kept, in file order */
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 2);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 1), 0); /* background image */
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_VAL, 0), 1);
    int cls = -1, np = -1;
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 1, &cls, NULL, 0, &np), VT_OK);
    ck_assert_int_eq(cls, 1);
    ck_assert_int_eq(np, 3);
    float xy[8] = {0};
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 1, NULL, xy, 4, &np), VT_OK);
    const float tri[6] = {0.6f, 0.6f, 1.0f, 0.6f, 0.8f, 1.0f};
    for (int k = 0; k < 6; k++) ck_assert_float_eq(xy[k], tri[k]);
    /* size query, then fill: too small a buffer gets nothing, and the count */
    memset(xy, 0, sizeof xy);
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 0, &cls, xy, 2, &np),
                     VT_ERR_BUFFER_TOO_SMALL);
    ck_assert_int_eq(np, 4);
    ck_assert_int_eq(cls, 2);
    for (int k = 0; k < 8; k++) ck_assert_float_eq(xy[k], 0.0f);
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 2, &cls, NULL, 0, &np),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 1, 0, &cls, NULL, 0, &np),
                     VT_ERR_INVALID_ARGUMENT);
    /* polygons are boxes too: their bounding boxes, same classes, same order */
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 2);
    float b[4];
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 0, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 2);
    ck_assert_float_eq_tol(b[0], 0.3f, 1e-6f);
    ck_assert_float_eq_tol(b[2], 0.4f, 1e-6f);
    /* the mask at the image size: the square (0.1..0.5 of 10 px = pixels 1..4) is class 2, the
     * triangle class 1, the rest background */
    int iw, ih;
    ck_assert_int_eq(vt_dataset_image_size(ds, VT_SPLIT_TRAIN, 0, &iw, &ih), VT_OK);
    ck_assert_int_eq(iw, 10);
    ck_assert_int_eq(ih, 10);
    uint8_t m[100];
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 10, 10), VT_OK);
    expect_mask(m, 10, 10,
                "..........\n.2222.....\n.2222.....\n.2222.....\n.2222.....\n..........\n"
                "......1111\n.......11.\n.......11.\n..........\n");
    /* any size: the polygons are normalised */
    uint8_t m2[400];
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m2, 20, 20), VT_OK);
    ck_assert_int_eq(count_value(m2, 400, 2), 64);
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 1, m, 10, 10), VT_OK);
    ck_assert_int_eq(count_value(m, 100, 0), 100);
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_VAL, 0, m, 10, 10), VT_OK);
    ck_assert_int_eq(count_value(m, 100, 2), 100);
    /* errors */
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 2, m, 10, 10), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, NULL, 10, 10), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 0, 10), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_mask(NULL, VT_SPLIT_TRAIN, 0, m, 10, 10), VT_ERR_INVALID_ARGUMENT);
    vt_dataset_destroy(ds);

    /* policy=skip leaves the image with problems out; policy=fail names the first */
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_SEGMENT, vt_test_path("y"), "policy=skip"),
                     VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 0);
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_SEGMENT, vt_test_path("y"), "policy=fail"),
                     VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "a.txt:2: "));

    /* the same folder as a detection dataset: polygon lines are bad lines, no polygons */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, vt_test_path("y")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 2);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 0);
    ck_assert_int_eq(vt_dataset_ignore_value(ds), -1);
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 10, 10), VT_ERR_UNSUPPORTED);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_long_polygon)
{
    /* polygons are not limited to a few hundred points: a 2000-gon approximating a circle */
    vt_test_write_png(vt_test_path("l/images/train/a.png"), 64, 64, 0);
    size_t cap = 2000 * 2 * 12 + 16, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "0");
    for (int k = 0; k < 2000; k++) {
        double a = 2 * 3.14159265358979 * k / 2000;
        len += (size_t)snprintf(text + len, cap - len, " %.6f %.6f", 0.5 + 0.4 * cos(a),
                                0.5 + 0.4 * sin(a));
    }
    snprintf(text + len, cap - len, "\n");
    vt_test_write_text(vt_test_path("l/labels/train/a.txt"), text);
    free(text);
    vt_test_write_text(vt_test_path("l/data.yaml"), "train: images/train\nnames: [disc]\n");
    vt_dataset *ds = open_seg(vt_test_path("l/data.yaml"));
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 1);
    int np;
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 0, NULL, NULL, 0, &np), VT_OK);
    ck_assert_int_eq(np, 2000);
    uint8_t m[64 * 64];
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 64, 64), VT_OK);
    /* pi * 25.6^2 = 2058.9 pixels, within the outline's jaggedness */
    int n1 = count_value(m, 64 * 64, 1);
    ck_assert_msg(n1 > 2000 && n1 < 2120, "disc of %d pixels", n1);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- mask layout ------------------------------------------------------------------------------ */

static void mask_fixture(void)
{
    /* a: good (with ignore pixels and one out-of-range value 7); b: no mask; c: wrong size */
    vt_test_write_png(vt_test_path("m/images/train/a.png"), 4, 3, 0);
    vt_test_write_png(vt_test_path("m/images/train/b.png"), 4, 3, 0);
    vt_test_write_png(vt_test_path("m/images/train/c.png"), 4, 3, 0);
    vt_test_write_png(vt_test_path("m/images/val/v.png"), 4, 3, 0);
    const uint8_t a[12] = {0, 1, 2, 255, 0, 7, 2, 2, 1, 1, 0, 3}; /* 3 = nc: out of range */
    write_mask(vt_test_path("m/masks/train/a.png"), a, 4, 3, 1);
    uint8_t c[16] = {0};
    write_mask(vt_test_path("m/masks/train/c.png"), c, 4, 4, 1);
    const uint8_t v[12] = {2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0};
    write_mask(vt_test_path("m/masks/val/v.png"), v, 4, 3, 1);
    vt_test_write_text(vt_test_path("m/data.yaml"), "train: images/train\nval: images/val\nmasks: masks\n"
                                            "names: [sky, road, car]\n");
}

START_TEST(test_mask_layout)
{
    mask_fixture();
    vt_dataset *ds = open_seg(vt_test_path("m"));
    /* the classes are exactly the names: no background added */
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "sky");
    /* b has no mask: recorded and dropped */
    const want w[] = {{"m/masks/train/b.png", 0, VT_PROBLEM_MISSING_MASK}};
    expect_problems(ds, w, 1);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 2);
    ck_assert_ptr_nonnull(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 1), "c.png"));
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 0);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 0);
    uint8_t m[16];
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 4, 3), VT_OK);
    /* 7 is no class and not the ignore value: read as ignore */
    const uint8_t want_a[12] = {0, 1, 2, 255, 0, 255, 2, 2, 1, 1, 0, 255};
    ck_assert_mem_eq(m, want_a, 12);
    /* the wrong size names both sizes */
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 1, m, 4, 3), VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "4x4"));
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_VAL, 0, m, 4, 3), VT_OK);
    ck_assert_int_eq(m[0], 2);
    ck_assert_int_eq(m[11], 0);
    vt_dataset_destroy(ds);

    /* decode=1 reads the masks: c is unusable, a keeps its pixels as ignore (drop) or is left
     * out (skip) */
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_SEGMENT, vt_test_path("m"),
                                        "decode=1 min_size=1"),
                     VT_OK);
    const want wd[] = {{"m/masks/train/b.png", 0, VT_PROBLEM_MISSING_MASK},
                       {"m/masks/train/a.png", 0, VT_PROBLEM_CLASS_RANGE},
                       {"m/masks/train/c.png", 0, VT_PROBLEM_BAD_MASK}};
    expect_problems(ds, wd, 3);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 1);
    ck_assert_ptr_nonnull(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 0), "a.png"));
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 4, 3), VT_OK);
    ck_assert_mem_eq(m, want_a, 12);
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_SEGMENT, vt_test_path("m"),
                                        "decode=1 min_size=1 policy=skip"), VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "no train image"));

    /* validation reports the same problems and counts them */
    vt_report *r = NULL;
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_SEGMENT, vt_test_path("m"), "min_size=1"),
                     VT_OK);
    ck_assert_int_eq(vt_report_num_problems(r), 3);
    int code;
    ck_assert_int_eq(vt_report_problem(r, 2, NULL, NULL, &code, NULL), VT_OK);
    ck_assert_int_eq(code, VT_PROBLEM_BAD_MASK);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_VAL), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_BACKGROUNDS, VT_SPLIT_VAL), 0);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_VAL), 0);
    vt_report_destroy(r);
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_SEGMENT, vt_test_path("m"),
                                         "policy=skip min_size=1"),
                     VT_OK);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_SKIPPED, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 0);
    vt_report_destroy(r);
}
END_TEST

START_TEST(test_mask_ignore_and_format)
{
    mask_fixture();
    /* ignore: 100 -> 255 is now out of range too, and both read as 100 */
    vt_test_write_text(vt_test_path("m/ig.yaml"), "train: images/train\nmasks: masks\nignore: 100\n"
                                          "names: [sky, road, car]\n");
    vt_dataset *ds = open_seg(vt_test_path("m/ig.yaml"));
    ck_assert_int_eq(vt_dataset_ignore_value(ds), 100);
    uint8_t m[12];
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 4, 3), VT_OK);
    ck_assert_int_eq(m[3], 100);
    ck_assert_int_eq(m[5], 100);
    ck_assert_int_eq(m[2], 2);
    vt_dataset_destroy(ds);
    /* an ignore value that is a class id, or not a byte, is refused */
    vt_test_write_text(vt_test_path("m/ig1.yaml"), "train: images/train\nmasks: masks\nignore: 1\n"
                                           "names: [sky, road, car]\n");
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, vt_test_path("m/ig1.yaml")),
                     VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "ig1.yaml:3: "));
    vt_test_write_text(vt_test_path("m/ig2.yaml"), "train: images/train\nmasks: masks\nignore: 300\n"
                                           "names: [sky, road, car]\n");
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, vt_test_path("m/ig2.yaml")),
                     VT_ERR_DATASET);
    vt_test_write_text(vt_test_path("m/bad.yaml"), "train: images/train\nmasks: a/b\nnames: [x, y]\n");
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, vt_test_path("m/bad.yaml")),
                     VT_ERR_DATASET);
    /* an RGB mask would lose its class ids: refused with a clear message */
    uint8_t rgb[36] = {0};
    unlink(vt_test_path("m/masks/train/a.png"));
    write_mask(vt_test_path("m/masks/train/a.png"), rgb, 4, 3, 3);
    ds = open_seg(vt_test_path("m"));
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 4, 3), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "8-bit grayscale"));
    vt_dataset_destroy(ds);
    /* detection ignores the segmentation keys */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, vt_test_path("m/ig1.yaml")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_image_size)
{
    vt_test_write_png(vt_test_path("s/images/train/a.png"), 7, 5, 0);
    /* a JPEG header: SOI, an APP0 segment to skip, SOF0 with height 300 and width 513 */
    const uint8_t jpg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x06, 'J', 'F', 'I', 'F',
                           0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x01, 0x2C, 0x02, 0x01, 0x01,
                           0x01, 0x11, 0x00, 0xFF, 0xD9};
    vt_test_parent_dirs(vt_test_path("s/images/train/b.jpg"));
    ck_assert_int_eq(vt_test_write_file(vt_test_path("s/images/train/b.jpg"), jpg, sizeof jpg), 0);
    vt_test_write_text(vt_test_path("s/images/train/c.png"), "not an image");
    vt_test_write_text(vt_test_path("s/data.yaml"), "train: images/train\nnames: [x]\n");
    vt_dataset *ds = open_seg(vt_test_path("s"));
    int w = 0, h = 0;
    ck_assert_int_eq(vt_dataset_image_size(ds, VT_SPLIT_TRAIN, 0, &w, &h), VT_OK);
    ck_assert_int_eq(w, 7);
    ck_assert_int_eq(h, 5);
    ck_assert_int_eq(vt_dataset_image_size(ds, VT_SPLIT_TRAIN, 1, &w, &h), VT_OK);
    ck_assert_int_eq(w, 513);
    ck_assert_int_eq(h, 300);
    ck_assert_int_eq(vt_dataset_image_size(ds, VT_SPLIT_TRAIN, 2, &w, &h), VT_ERR_FORMAT);
    ck_assert_int_eq(vt_dataset_image_size(ds, VT_SPLIT_TRAIN, 3, &w, &h),
                     VT_ERR_INVALID_ARGUMENT);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- COCO ---------------------------------------------------------------------------------------- */

START_TEST(test_coco_polygons)
{
    vt_test_write_png(vt_test_path("c/images/p.png"), 10, 10, 0);
    vt_test_write_png(vt_test_path("c/images/q.png"), 10, 10, 0);
    vt_test_write_text(vt_test_path("c/instances_train.json"),
               "{\"images\": [{\"id\": 1, \"file_name\": \"p.png\", \"width\": 10, \"height\": 10},"
               "              {\"id\": 2, \"file_name\": \"q.png\", \"width\": 10, \"height\": 10}],"
               " \"categories\": [{\"id\": 9, \"name\": \"dog\"}, {\"id\": 5, \"name\": \"cat\"}],"
               " \"annotations\": ["
               /* 0: a cat square, pixels 0..4 */
               "  {\"id\": 1, \"image_id\": 1, \"category_id\": 5, \"iscrowd\": 0,"
               "   \"segmentation\": [[0, 0, 5, 0, 5, 5, 0, 5]]},"
               /* 1: a dog in two parts, the second too short */
               "  {\"id\": 2, \"image_id\": 1, \"category_id\": 9,"
               "   \"segmentation\": [[6, 6, 10, 6, 10, 10, 6, 10], [1, 1, 2, 2]]},"
               /* 2: RLE */
               "  {\"id\": 3, \"image_id\": 2, \"category_id\": 9,"
               "   \"segmentation\": {\"counts\": [0, 100], \"size\": [10, 10]}},"
               /* 3: crowd: skipped */
               "  {\"id\": 4, \"image_id\": 2, \"category_id\": 9, \"iscrowd\": 1,"
               "   \"segmentation\": {\"counts\": [0, 100], \"size\": [10, 10]}},"
               /* 4: far outside the image */
               "  {\"id\": 5, \"image_id\": 2, \"category_id\": 5,"
               "   \"segmentation\": [[0, 0, 50, 0, 50, 50]]},"
               /* 5: a hair outside (traced on pixel corners): clamped, kept */
               "  {\"id\": 6, \"image_id\": 2, \"category_id\": 5,"
               "   \"segmentation\": [[0, 0, 10.4, 0, 10.4, 10.4, 0, 10.4]]}"
               "]}");
    vt_dataset *ds = open_seg(vt_test_path("c/instances_train.json"));
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "background");
    ck_assert_str_eq(vt_dataset_class_name(ds, 1), "cat"); /* sorted by id: 5, 9 */
    ck_assert_str_eq(vt_dataset_class_name(ds, 2), "dog");
    const want w[] = {{"c/instances_train.json", 0, VT_PROBLEM_POLYGON_POINTS},
                      {"c/instances_train.json", 0, VT_PROBLEM_BAD_ANNOTATION},
                      {"c/instances_train.json", 0, VT_PROBLEM_COORD_RANGE},
                      {"c/instances_train.json", 0, VT_PROBLEM_MISSING_SPLIT}};
    expect_problems(ds, w, 4);
    const char *msg;
    ck_assert_int_eq(vt_dataset_problem(ds, 1, NULL, NULL, NULL, &msg), VT_OK);
    ck_assert_ptr_nonnull(strstr(msg, "annotations[2]: RLE masks are not supported yet"));
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 2);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 1), 1);
    int cls;
    float xy[8];
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 1, &cls, xy, 4, NULL), VT_OK);
    ck_assert_int_eq(cls, 2);
    ck_assert_float_eq_tol(xy[0], 0.6f, 1e-6f);
    uint8_t m[100];
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 0, m, 10, 10), VT_OK);
    ck_assert_int_eq(count_value(m, 100, 1), 25);
    ck_assert_int_eq(count_value(m, 100, 2), 16);
    ck_assert_int_eq(m[0], 1);
    ck_assert_int_eq(m[99], 2);
    ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, 1, m, 10, 10), VT_OK);
    ck_assert_int_eq(count_value(m, 100, 1), 100);
    /* boxes from the polygons */
    float b[4];
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 0, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 1);
    ck_assert_float_eq_tol(b[2], 0.5f, 1e-6f);
    vt_dataset_destroy(ds);
    /* detection reads the same file by its bboxes (absent here): every entry is malformed */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, vt_test_path("c/instances_train.json")),
                     VT_OK);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 0);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- synthetic generator ------------------------------------------------------------------------ */

static int same_file(const char *a, const char *b)
{
    size_t na, nb;
    void *x = vt_test_read_file(a, &na), *y = vt_test_read_file(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

START_TEST(test_synth_segment)
{
    const char *opts = "classes=4 train=24 val=6 imgsz=64 seed=3 max_objects=6";
    ck_assert_int_eq(vt_synth_generate(vt_test_path("g"), VT_TASK_SEGMENT, opts), VT_OK);
    /* refuses to write over itself */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("g"), VT_TASK_SEGMENT, opts),
                     VT_ERR_INVALID_ARGUMENT);
    vt_dataset *poly = open_seg(vt_test_path("g"));
    ck_assert_int_eq(vt_dataset_num_problems(poly), 0);
    ck_assert_int_eq(vt_dataset_num_classes(poly), 5);
    ck_assert_str_eq(vt_dataset_class_name(poly, 0), "background");
    ck_assert_str_eq(vt_dataset_class_name(poly, 1), "circle");
    ck_assert_int_eq(vt_dataset_num_images(poly, VT_SPLIT_TRAIN), 24);
    ck_assert_int_eq(vt_dataset_num_images(poly, VT_SPLIT_VAL), 6);
    /* the same folder through its mask PNGs */
    vt_test_write_text(vt_test_path("g/masks.yaml"), "train: images/train\nval: images/val\n"
                                             "masks: masks\nnames: [background, circle, square, "
                                             "triangle, cross]\n");
    vt_dataset *msk = open_seg(vt_test_path("g/masks.yaml"));
    ck_assert_int_eq(vt_dataset_num_problems(msk), 0);
    uint8_t a[64 * 64], b[64 * 64];
    int total_polys = 0, seen[5] = {0}, rings = 0;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < vt_dataset_num_images(poly, (vt_split)s); i++) {
            int w, h;
            ck_assert_int_eq(vt_dataset_image_size(poly, (vt_split)s, i, &w, &h), VT_OK);
            ck_assert_int_eq(w, 64);
            ck_assert_int_eq(h, 64);
            ck_assert_int_eq(vt_dataset_mask(poly, (vt_split)s, i, a, 64, 64), VT_OK);
            ck_assert_int_eq(vt_dataset_mask(msk, (vt_split)s, i, b, 64, 64), VT_OK);
            ck_assert_msg(!memcmp(a, b, sizeof a), "split %d image %d: polygon and PNG masks "
                          "differ", s, i);
            int np = vt_dataset_num_polygons(poly, (vt_split)s, i);
            total_polys += np;
            for (int k = 0; k < np; k++) {
                int cls, n;
                ck_assert_int_eq(vt_dataset_polygon(poly, (vt_split)s, i, k, &cls, NULL, 0, &n),
                                 VT_OK);
                ck_assert(cls >= 1 && cls <= 4);
                /* exact corners: square 4, triangle 3, cross 12; circles are 32-gons */
                int want_n[5] = {0, 32, 4, 3, 12};
                ck_assert_int_eq(n, want_n[cls]);
                rings += n == 66;
            }
            for (int p = 0; p < 64 * 64; p++) seen[a[p] < 5 ? a[p] : 0]++;
        }
    ck_assert_int_eq(rings, 0);
    ck_assert_msg(total_polys > 40, "%d polygons", total_polys);
    for (int c = 0; c < 5; c++) ck_assert_msg(seen[c] > 0, "class %d never drawn", c);
    vt_dataset_destroy(poly);
    vt_dataset_destroy(msk);
    /* validation is clean, and counts the polygons as instances */
    vt_report *r;
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_SEGMENT, vt_test_path("g/masks.yaml"), NULL),
                     VT_OK);
    ck_assert_int_eq(vt_report_num_problems(r), 0);
    vt_report_destroy(r);
    /* deterministic, and the images are the detection generator's */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("g2"), VT_TASK_SEGMENT, opts), VT_OK);
    ck_assert_int_eq(vt_synth_generate(vt_test_path("d"), VT_TASK_DETECT, opts), VT_OK);
    for (int i = 0; i < 24; i++) {
        ck_assert(same_file(vt_test_path("g/images/train/%05d.png", i),
                            vt_test_path("g2/images/train/%05d.png", i)));
        ck_assert(same_file(vt_test_path("g/masks/train/%05d.png", i),
                            vt_test_path("g2/masks/train/%05d.png", i)));
        struct stat sb;
        int has = stat(vt_test_path("g/labels/train/%05d.txt", i), &sb) == 0;
        ck_assert_int_eq(has, stat(vt_test_path("g2/labels/train/%05d.txt", i), &sb) == 0);
        ck_assert_int_eq(has, stat(vt_test_path("d/labels/train/%05d.txt", i), &sb) == 0);
        if (has)
            ck_assert(same_file(vt_test_path("g/labels/train/%05d.txt", i),
                                vt_test_path("g2/labels/train/%05d.txt", i)));
    }
    /* same shapes: pixels equal where no two shapes overlap; check one image pixel for pixel
     * where the detection labels have a single box */
    int compared = 0;
    for (int i = 0; i < 24; i++) {
        size_t n;
        char *t = vt_test_read_file(vt_test_path("d/labels/train/%05d.txt", i), &n);
        if (!t) continue;
        int lines = 0;
        for (size_t k = 0; k < n; k++) lines += t[k] == '\n';
        free(t);
        if (lines == 1) {
            ck_assert(same_file(vt_test_path("g/images/train/%05d.png", i),
                                vt_test_path("d/images/train/%05d.png", i)));
            compared++;
        }
    }
    ck_assert_msg(compared > 0, "no single-object image to compare");
    /* the dataset tools keep the class convention: a split of either layout reopens with the
     * same classes (no second "background") and the same masks */
    const char *src[2] = {"g", "g/masks.yaml"}, *dst[2] = {"gs", "gm"};
    for (int k = 0; k < 2; k++) {
        vt_dataset *orig = open_seg(vt_test_path("%s", src[k]));
        ck_assert_int_eq(vt_dataset_split(orig, vt_test_path("%s", dst[k]), "val=0.25 seed=1"),
                         VT_OK);
        vt_dataset *re = open_seg(vt_test_path("%s/data.yaml", dst[k]));
        ck_assert_int_eq(vt_dataset_num_classes(re), 5);
        for (int c = 0; c < 5; c++)
            ck_assert_str_eq(vt_dataset_class_name(re, c), vt_dataset_class_name(orig, c));
        const char *p0 = vt_dataset_image_path(re, VT_SPLIT_TRAIN, 0);
        int j = 0;
        while (strcmp(vt_dataset_image_path(orig, VT_SPLIT_TRAIN, j), p0)) j++;
        ck_assert_int_eq(vt_dataset_mask(orig, VT_SPLIT_TRAIN, j, a, 64, 64), VT_OK);
        ck_assert_int_eq(vt_dataset_mask(re, VT_SPLIT_TRAIN, 0, b, 64, 64), VT_OK);
        ck_assert(!memcmp(a, b, sizeof a));
        vt_dataset_destroy(orig);
        vt_dataset_destroy(re);
    }
    /* options as detection's */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("g3"), VT_TASK_SEGMENT, "bogus=1"),
                     VT_ERR_UNKNOWN_OPTION);
}
END_TEST

START_TEST(test_synth_ring)
{
    /* rings (class 4) are one polygon with a doubled bridge edge: the hole stays background */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("r"), VT_TASK_SEGMENT,
                                       "classes=5 train=40 val=0 imgsz=96 seed=1 max_objects=3"),
                     VT_OK);
    vt_dataset *ds = open_seg(vt_test_path("r"));
    int rings = 0, banded = 0;
    for (int i = 0; i < vt_dataset_num_images(ds, VT_SPLIT_TRAIN); i++) {
        for (int k = 0; k < vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, i); k++) {
            int cls, n;
            float xy[2 * 66];
            ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, i, k, &cls, xy, 66, &n), VT_OK);
            if (cls != 5) continue;
            ck_assert_int_eq(n, 66);
            rings++;
            /* the centre of the ring is the mean of its outer vertices */
            float cx = 0, cy = 0;
            for (int q = 0; q < 32; q++) {
                cx += xy[2 * q] / 32;
                cy += xy[2 * q + 1] / 32;
            }
            uint8_t m[96 * 96];
            ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_TRAIN, i, m, 96, 96), VT_OK);
            int px = (int)(cx * 96), py = (int)(cy * 96);
            ck_assert_msg(m[py * 96 + px] != 5, "image %d: ring hole filled", i);
            /* and the band is there: half way between the outer and inner radius */
            float ox = xy[0] * 96, oy = xy[1] * 96, ix = xy[2 * 33] * 96, iy = xy[2 * 33 + 1] * 96;
            int bx = (int)((ox + ix) / 2), by = (int)((oy + iy) / 2);
            banded += m[by * 96 + bx] == 5; /* unless a smaller shape covers it */
        }
    }
    ck_assert_msg(rings > 0, "no ring drawn");
    ck_assert_msg(banded * 2 > rings, "%d of %d ring bands found", banded, rings);
    vt_dataset_destroy(ds);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("seg_data");
    TCase *tr = tcase_create("raster");
    tcase_add_test(tr, test_raster_square);
    tcase_add_test(tr, test_raster_triangle_and_clip);
    tcase_add_test(tr, test_raster_concave_and_holes);
    tcase_add_test(tr, test_overlap_rule);
    suite_add_tcase(s, tr);
    TCase *tc = tcase_create("datasets");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_yolo_seg);
    tcase_add_test(tc, test_long_polygon);
    tcase_add_test(tc, test_mask_layout);
    tcase_add_test(tc, test_mask_ignore_and_format);
    tcase_add_test(tc, test_image_size);
    tcase_add_test(tc, test_coco_polygons);
    tcase_add_test(tc, test_synth_segment);
    tcase_add_test(tc, test_synth_ring);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
