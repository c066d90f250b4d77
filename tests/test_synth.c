/* vt_synth_generate and the shape rasteriser behind it (lib/data/synth.c, lib/data/shapes.h). */
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

#include "data/shapes.h"
#include "image/image.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

static char *tmpdir;

static void setup(void) { tmpdir = vt_test_tmpdir("test_synth"); }
static void teardown(void)
{
    if (tmpdir) vt_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

static char *tpath(const char *fmt, const char *a, const char *b)
{
    static char buf[4][4096];
    static int which;
    char rel[1024];
    snprintf(rel, sizeof rel, fmt, a ? a : "", b ? b : "");
    which = (which + 1) % 4;
    snprintf(buf[which], sizeof buf[which], "%s/%s", tmpdir, rel);
    return buf[which];
}

/* Entries of a folder that do not start with '.', or -1 if it cannot be opened. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static int files_equal(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    void *da = vt_test_read_file(a, &na), *db = vt_test_read_file(b, &nb);
    int eq = da && db && na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    return eq;
}

START_TEST(layout_and_images)
{
    const char *names[3] = {"circle", "square", "triangle"};
    ck_assert_int_eq(vt_synth_generate(tpath("ds", 0, 0), VT_TASK_CLASSIFY,
                                       "classes=3 train=5 val=2 imgsz=24 seed=1"),
                     VT_OK);
    ck_assert_int_eq(count_entries(tpath("ds", 0, 0)), 2);
    ck_assert_int_eq(count_entries(tpath("ds/train", 0, 0)), 3);
    ck_assert_int_eq(count_entries(tpath("ds/val", 0, 0)), 3);
    for (int c = 0; c < 3; c++) {
        ck_assert_int_eq(count_entries(tpath("ds/train/%s", names[c], 0)), 5);
        ck_assert_int_eq(count_entries(tpath("ds/val/%s", names[c], 0)), 2);
        ck_assert(exists(tpath("ds/train/%s/00004.png", names[c], 0)));
        ck_assert(exists(tpath("ds/val/%s/00001.png", names[c], 0)));
        vt_image img;
        ck_assert_int_eq(vt_image_load(tpath("ds/train/%s/00000.png", names[c], 0), &img),
                         VT_OK);
        ck_assert_int_eq(img.w, 24);
        ck_assert_int_eq(img.h, 24);
        ck_assert_int_eq(img.c, 3);
        vt_image_free(&img);
    }
    /* Images of one class are not copies of each other. */
    ck_assert(!files_equal(tpath("ds/train/circle/00000.png", 0, 0),
                           tpath("ds/train/circle/00001.png", 0, 0)));
}
END_TEST

START_TEST(defaults_and_nested_dir)
{
    double t0 = vt_now();
    ck_assert_int_eq(vt_synth_generate(tpath("a/b/c", 0, 0), VT_TASK_CLASSIFY, NULL), VT_OK);
    double dt = vt_now() - t0;
    const char *names[4] = {"circle", "square", "triangle", "cross"};
    ck_assert_int_eq(count_entries(tpath("a/b/c/train", 0, 0)), 4);
    for (int c = 0; c < 4; c++) {
        ck_assert_int_eq(count_entries(tpath("a/b/c/train/%s", names[c], 0)), 100);
        ck_assert_int_eq(count_entries(tpath("a/b/c/val/%s", names[c], 0)), 40);
    }
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("a/b/c/val/cross/00039.png", 0, 0), &img), VT_OK);
    ck_assert_int_eq(img.w, 32);
    vt_image_free(&img);
    /* 560 images of 32x32: generous bound so slow CI machines and sanitizers pass. */
    ck_assert_msg(dt < 20.0, "generation took %.2f s", dt);

    /* val=0: no val folder at all (an empty split would be an invalid dataset). */
    ck_assert_int_eq(vt_synth_generate(tpath("noval", 0, 0), VT_TASK_CLASSIFY,
                                       "classes=8 train=1 val=0 imgsz=16"),
                     VT_OK);
    ck_assert_int_eq(count_entries(tpath("noval/train", 0, 0)), 8);
    ck_assert(exists(tpath("noval/train/vbar/00000.png", 0, 0)));
    ck_assert(!exists(tpath("noval/val", 0, 0)));
}
END_TEST

START_TEST(deterministic)
{
    const char *opt = "classes=2 train=3 val=1 imgsz=40 seed=7";
    ck_assert_int_eq(vt_synth_generate(tpath("d1", 0, 0), VT_TASK_CLASSIFY, opt), VT_OK);
    ck_assert_int_eq(vt_synth_generate(tpath("d2", 0, 0), VT_TASK_CLASSIFY, opt), VT_OK);
    ck_assert_int_eq(vt_synth_generate(tpath("d3", 0, 0), VT_TASK_CLASSIFY,
                                       "classes=2 train=3 val=1 imgsz=40 seed=8"),
                     VT_OK);
    /* A larger run with the same seed starts with the same images. */
    ck_assert_int_eq(vt_synth_generate(tpath("d4", 0, 0), VT_TASK_CLASSIFY,
                                       "classes=3 train=5 val=2 imgsz=40 seed=7"),
                     VT_OK);
    const char *files[] = {"train/circle/00000.png", "train/circle/00002.png",
                           "train/square/00001.png", "val/square/00000.png"};
    for (int i = 0; i < 4; i++) {
        ck_assert(files_equal(tpath("d1/%s", files[i], 0), tpath("d2/%s", files[i], 0)));
        ck_assert(!files_equal(tpath("d1/%s", files[i], 0), tpath("d3/%s", files[i], 0)));
        ck_assert(files_equal(tpath("d1/%s", files[i], 0), tpath("d4/%s", files[i], 0)));
    }
}
END_TEST

START_TEST(refuses_existing_dataset)
{
    const char *opt = "classes=2 train=2 val=1 imgsz=16";
    ck_assert_int_eq(vt_synth_generate(tpath("ds", 0, 0), VT_TASK_CLASSIFY, opt), VT_OK);
    size_t n0 = 0;
    void *before = vt_test_read_file(tpath("ds/train/circle/00000.png", 0, 0), &n0);
    ck_assert_int_eq(vt_synth_generate(tpath("ds", 0, 0), VT_TASK_CLASSIFY, "seed=3 imgsz=16"),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "already exists"));
    size_t n1 = 0;
    void *after = vt_test_read_file(tpath("ds/train/circle/00000.png", 0, 0), &n1);
    ck_assert(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    ck_assert_int_eq(count_entries(tpath("ds/train", 0, 0)), 2);
    free(before);
    free(after);

    /* A user's folder that has only a train/ folder is refused as well. */
    ck_assert_int_eq(mkdir(tpath("user", 0, 0), 0755), 0);
    ck_assert_int_eq(mkdir(tpath("user/train", 0, 0), 0755), 0);
    ck_assert_int_eq(vt_synth_generate(tpath("user", 0, 0), VT_TASK_CLASSIFY, opt),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(count_entries(tpath("user/train", 0, 0)), 0);

    /* A file in the way of the folder. */
    ck_assert_int_eq(vt_test_write_file(tpath("file", 0, 0), "x", 1), 0);
    ck_assert_int_ne(vt_synth_generate(tpath("file", 0, 0), VT_TASK_CLASSIFY, opt), VT_OK);
}
END_TEST

START_TEST(bad_arguments)
{
    const char *dir = tpath("bad", 0, 0);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "classes=1"), VT_ERR_OPTION_VALUE);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "classes"));
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "classes=9"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "imgsz=15"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "imgsz=abc"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "train=0"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "seed=-1"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "classes"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY, "foo=2"), VT_ERR_UNKNOWN_OPTION);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "foo"));
    /* detection has its own options (tested in test_detect_data.c) */
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_DETECT, "classes=2"), VT_ERR_OPTION_VALUE);
    /* segmentation takes the detection options (tested in test_seg_data.c) */
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_SEGMENT, "classes=2"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(dir, (vt_task)42, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_synth_generate(NULL, VT_TASK_CLASSIFY, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_synth_generate("", VT_TASK_CLASSIFY, NULL), VT_ERR_INVALID_ARGUMENT);
    /* Nothing was created by any failed call. */
    ck_assert(!exists(dir));
}
END_TEST

/* ---- the rasteriser ---------------------------------------------------------------------- */

START_TEST(shapes_fit_and_cover)
{
    vt_rng rng;
    vt_rng_seed(&rng, 99);
    for (int kind = 0; kind < VT_SHAPE_COUNT; kind++) {
        ck_assert_ptr_nonnull(vt_shape_name(kind));
        for (int t = 0; t < 40; t++) {
            int w = 16 + (int)vt_rng_below(&rng, 60), h = 16 + (int)vt_rng_below(&rng, 60);
            vt_shape s;
            vt_shape_random(&s, kind, &rng, w, h, 0.35f, 0.8f, kind & 1);
            float b[4];
            vt_shape_bbox(&s, b);
            ck_assert(b[0] >= 0 && b[1] >= 0 && b[2] <= w && b[3] <= h);
            float side = (float)(w < h ? w : h);
            float ext = fmaxf(b[2] - b[0], b[3] - b[1]);
            ck_assert_msg(ext >= 0.35f * side - 0.01f && ext <= 0.8f * side + 0.01f,
                          "kind %d extent %f side %f", kind, ext, side);
            /* Nothing is covered outside the box; something is covered inside it. */
            float cover = 0;
            int bad = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float a = vt_shape_coverage(&s, x, y);
                    bad += !(a >= 0.0f && a <= 1.0f);
                    bad += (x + 1 <= b[0] || x >= b[2] || y + 1 <= b[1] || y >= b[3]) && a != 0;
                    cover += a;
                }
            ck_assert_int_eq(bad, 0);
            ck_assert_float_gt(cover, 0.1f * (b[2] - b[0]) * (b[3] - b[1]));
        }
    }
    ck_assert_ptr_null(vt_shape_name(VT_SHAPE_COUNT));
}
END_TEST

START_TEST(shape_area_is_subpixel_accurate)
{
    /* Anti-aliased coverage sums to the true area, for a circle and a (tilted) square. */
    vt_shape s;
    memset(&s, 0, sizeof s);
    s.kind = VT_SHAPE_CIRCLE;
    s.cx = 20.3f;
    s.cy = 19.7f;
    s.scale = 9.25f;
    vt_shape_prepare(&s);
    double area = 0;
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 40; x++) area += vt_shape_coverage(&s, x, y);
    ck_assert_double_le(fabs(area - M_PI * 9.25 * 9.25) / (M_PI * 9.25 * 9.25), 0.01);

    s.kind = VT_SHAPE_SQUARE;
    s.scale = 7.5f;
    s.angle = 0.15f;
    vt_shape_prepare(&s);
    area = 0;
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 40; x++) area += vt_shape_coverage(&s, x, y);
    ck_assert_double_le(fabs(area - 15.0 * 15.0) / (15.0 * 15.0), 0.01);

    /* Drawing blends by coverage: the centre takes the colour, far pixels keep theirs. */
    uint8_t pix[40 * 40 * 3];
    memset(pix, 10, sizeof pix);
    const uint8_t col[3] = {200, 100, 50};
    vt_shape_draw(&s, pix, 40, 40, 3, 40 * 3, col);
    const uint8_t *c = pix + (19 * 40 + 20) * 3;
    ck_assert_int_eq(c[0], 200);
    ck_assert_int_eq(c[1], 100);
    ck_assert_int_eq(c[2], 50);
    ck_assert_int_eq(pix[0], 10);
}
END_TEST

static Suite *synth_suite(void)
{
    Suite *s = suite_create("synth");
    TCase *tc = tcase_create("synth");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, layout_and_images);
    tcase_add_test(tc, defaults_and_nested_dir);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, refuses_existing_dataset);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, shapes_fit_and_cover);
    tcase_add_test(tc, shape_area_is_subpixel_accurate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(synth_suite()); }
