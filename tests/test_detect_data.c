/* Detection datasets: data.yaml variants and errors, YOLO label problems (file:line, bad box
 * dropped, the rest kept), background images, COCO import (crowd skipped, category remap,
 * bbox conversion, malformed JSON), robustness against mangled files, and the synthetic
 * detection generator. */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"
#include "image/image.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

static char *tmpdir;

static void setup(void)
{
    tmpdir = vt_test_tmpdir("test_detect_data");
    ck_assert_ptr_nonnull(tmpdir);
}

static void teardown(void)
{
    if (tmpdir) vt_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

static const char *P(const char *fmt, ...) VT_PRINTF(1, 2);
static const char *P(const char *fmt, ...)
{
    static char bufs[8][4096];
    static int k;
    char *b = bufs[k++ & 7];
    int n = snprintf(b, 4096, "%s/", tmpdir);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, 4096 - (size_t)n, fmt, ap);
    va_end(ap);
    return b;
}





/* A YOLO dataset under tmpdir/<root>: images/{train,val}/, two labelled train images, one
 * background, one val image. */
static void yolo_fixture(const char *root)
{
    vt_test_write_png(P("%s/images/train/a.png", root), 8, 8, 0);
    vt_test_write_png(P("%s/images/train/b.jpg", root), 8, 8, 0); /* extension only: not decoded */
    vt_test_write_png(P("%s/images/train/c.png", root), 8, 8, 0);
    vt_test_write_png(P("%s/images/val/v.png", root), 8, 8, 0);
    vt_test_write_text(P("%s/labels/train/a.txt", root), "0 0.5 0.5 0.2 0.4\n1 0.25 0.75 0.1 0.1\n");
    vt_test_write_text(P("%s/labels/train/b.txt", root), "1 0.5 0.5 1 1\n");
    vt_test_write_text(P("%s/labels/val/v.txt", root), "0 0.1 0.1 0.2 0.2\n");
    /* c.png has no label file: a background image */
}

static vt_dataset *open_ok(const char *path)
{
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_DETECT, path);
    ck_assert_msg(st == VT_OK, "open %s: %s", path, vt_last_error());
    ck_assert_ptr_nonnull(ds);
    return ds;
}

static void expect_fail(const char *path, vt_status want, const char *needle)
{
    vt_dataset *ds = (vt_dataset *)1;
    vt_status st = vt_dataset_open(&ds, VT_TASK_DETECT, path);
    ck_assert_msg(st == want, "open %s: status %d (want %d): %s", path, st, want, vt_last_error());
    ck_assert_ptr_null(ds);
    ck_assert_msg(strstr(vt_last_error(), needle), "message '%s' lacks '%s'", vt_last_error(),
                  needle);
}

START_TEST(test_yaml_names_list)
{
    yolo_fixture("d");
    vt_test_write_text(P("d/data.yaml"), "# comment\npath: .\ntrain: images/train\nval: images/val\n"
                                 "test:   # optional\nnames: ['cat', \"dog\"]\n");
    vt_dataset *ds = open_ok(P("d/data.yaml"));
    ck_assert_int_eq(vt_dataset_task(ds), VT_TASK_DETECT);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 2);
    ck_assert_str_eq(vt_dataset_class_name(ds, 1), "dog");
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 3);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_VAL), 1);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TEST), 0);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 0);
    /* sorted: a.png, b.jpg, c.png */
    ck_assert_ptr_nonnull(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 0), "a.png"));
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 2);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 1), 1);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 2), 0); /* background */
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 3), 0);
    ck_assert_int_eq(vt_dataset_image_class(ds, VT_SPLIT_TRAIN, 0), -1);
    int cls;
    float b[4];
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 1, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 1);
    ck_assert_float_eq_tol(b[0], 0.25f, 1e-6f);
    ck_assert_float_eq_tol(b[1], 0.75f, 1e-6f);
    ck_assert_float_eq_tol(b[2], 0.1f, 1e-6f);
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 2, &cls, b), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 2, 0, &cls, b), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_VAL, 0, 0, NULL, b), VT_OK);
    ck_assert_float_eq_tol(b[3], 0.2f, 1e-6f);
    vt_dataset_destroy(ds);
    /* the folder holding data.yaml opens the same */
    ds = open_ok(P("d"));
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 3);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_yaml_variants)
{
    yolo_fixture("d");
    /* names as a map (any key order), relative `path` from the yaml's folder */
    vt_test_write_text(P("cfg/data.yaml"), "path: ../d\ntrain: images/train\nval: images/val\n"
                                   "names:\n  1: dog\n  0: cat\n");
    vt_dataset *ds = open_ok(P("cfg/data.yaml"));
    ck_assert_int_eq(vt_dataset_num_classes(ds), 2);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "cat");
    ck_assert_str_eq(vt_dataset_class_name(ds, 1), "dog");
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 3);
    vt_dataset_destroy(ds);

    /* nc only; train as a .txt list (relative to the list, order kept, a missing image
     * reported); no val (a problem, not an error) */
    vt_test_write_text(P("d/train.txt"), "./images/train/c.png\nimages/train/a.png\n\n"
                                 "images/train/gone.png\n");
    vt_test_write_text(P("d/nc.yaml"), "train: train.txt\nnc: 3\n");
    ds = open_ok(P("d/nc.yaml"));
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 2), "class_2");
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 2);
    ck_assert_ptr_nonnull(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 0), "c.png"));
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 1), 2);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 2);
    const char *file, *msg;
    int line, code;
    ck_assert_int_eq(vt_dataset_problem(ds, 0, &file, &line, &code, &msg), VT_OK);
    ck_assert_int_eq(code, VT_PROBLEM_MISSING_IMAGE);
    ck_assert_int_eq(line, 4);
    ck_assert_ptr_nonnull(strstr(file, "train.txt"));
    ck_assert_ptr_nonnull(strstr(msg, "train.txt:4: "));
    ck_assert_int_eq(vt_dataset_problem(ds, 1, NULL, NULL, &code, NULL), VT_OK);
    ck_assert_int_eq(code, VT_PROBLEM_MISSING_SPLIT);
    ck_assert_int_eq(vt_dataset_problem(ds, 2, NULL, NULL, &code, NULL), VT_ERR_INVALID_ARGUMENT);
    vt_dataset_destroy(ds);

    /* train as a list of folders (plus a nested folder, found recursively); a missing test
     * path is a problem */
    vt_test_write_png(P("d/extra/deep/e.png"), 8, 8, 0);
    vt_test_write_text(P("d/list.yaml"), "train:\n  - images/train\n  - extra\nval: [images/val]\n"
                                 "test: images/test\nnames: [a, b]\n");
    ds = open_ok(P("d/list.yaml"));
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 4);
    ck_assert_ptr_nonnull(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 3), "deep/e.png"));
    ck_assert_int_eq(vt_dataset_num_problems(ds), 1);
    ck_assert_int_eq(vt_dataset_problem(ds, 0, NULL, &line, &code, NULL), VT_OK);
    ck_assert_int_eq(code, VT_PROBLEM_MISSING_SPLIT);
    ck_assert_int_eq(line, 5);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_yaml_errors)
{
    yolo_fixture("d");
    vt_test_write_text(P("d/syntax.yaml"), "train: images/train\nval: [images/val\nnames: [a]\n");
    expect_fail(P("d/syntax.yaml"), VT_ERR_FORMAT, "syntax.yaml:");
    /* libyaml reports where the flow sequence went wrong: a line number is in the message */
    ck_assert_msg(strstr(vt_last_error(), "syntax.yaml:3:") ||
                      strstr(vt_last_error(), "syntax.yaml:4:"),
                  "%s", vt_last_error());
    vt_test_write_text(P("d/tab.yaml"), "train: images/train\nnames:\n\t- a\n");
    expect_fail(P("d/tab.yaml"), VT_ERR_FORMAT, "tab.yaml:3:");
    vt_test_write_text(P("d/notrain.yaml"), "val: images/val\nnames: [a, b]\n");
    expect_fail(P("d/notrain.yaml"), VT_ERR_DATASET, "'train'");
    vt_test_write_text(P("d/count.yaml"), "train: images/train\nnames: [a, b]\nnc: 3\n");
    {
        /* names vs nc is a warning (the names win), as vt_dataset_validate reports it */
        vt_dataset *cds = open_ok(P("d/count.yaml"));
        const char *cmsg;
        int ccode;
        ck_assert_int_eq(vt_dataset_num_classes(cds), 2);
        ck_assert_int_eq(vt_dataset_problem(cds, 0, NULL, NULL, &ccode, &cmsg), VT_OK);
        ck_assert_int_eq(ccode, VT_PROBLEM_CLASS_COUNT);
        ck_assert_ptr_nonnull(strstr(cmsg, "count.yaml:3: 'names' has 2 entries but 'nc' is 3"));
        vt_dataset_destroy(cds);
    }
    vt_test_write_text(P("d/nonames.yaml"), "train: images/train\n");
    expect_fail(P("d/nonames.yaml"), VT_ERR_DATASET, "neither 'names' nor 'nc'");
    vt_test_write_text(P("d/badmap.yaml"), "train: images/train\nnames:\n  0: a\n  5: b\n");
    expect_fail(P("d/badmap.yaml"), VT_ERR_DATASET, "badmap.yaml:4:");
    vt_test_write_text(P("d/badnc.yaml"), "train: images/train\nnc: three\n");
    expect_fail(P("d/badnc.yaml"), VT_ERR_DATASET, "badnc.yaml:2:");
    vt_test_write_text(P("d/list.yaml"), "- train\n- val\n");
    expect_fail(P("d/list.yaml"), VT_ERR_DATASET, "expected a mapping");
    vt_test_write_text(P("d/empty.yaml"), "");
    expect_fail(P("d/empty.yaml"), VT_ERR_DATASET, "empty");
    vt_test_write_text(P("d/dup.yaml"), "train: images/train\ntrain: images/val\nnames: [a]\n");
    expect_fail(P("d/dup.yaml"), VT_ERR_DATASET, "dup.yaml:2: key 'train' is given twice");
    vt_test_write_text(P("d/missing.yaml"), "train: images/nope\nnames: [a]\n");
    expect_fail(P("d/missing.yaml"), VT_ERR_NOT_FOUND, "missing.yaml:1: train: 'images/nope'");
    vt_test_write_text(P("d/noval.yaml"), "train: images/train\nval: images/nope\nnames: [a]\n");
    expect_fail(P("d/noval.yaml"), VT_ERR_NOT_FOUND, "noval.yaml:2: val:");
    vt_test_mkdirs(P("d/images/none"));
    vt_test_write_text(P("d/none.yaml"), "train: images/none\nnames: [a]\n");
    expect_fail(P("d/none.yaml"), VT_ERR_DATASET, "no images");
    vt_test_write_text(P("d/odd.yaml"), "train: nc.txt.bak\nnames: [a]\n");
    vt_test_write_text(P("d/nc.txt.bak"), "x\n");
    expect_fail(P("d/odd.yaml"), VT_ERR_DATASET, "neither a folder");
    expect_fail(P("d/nothere.yaml"), VT_ERR_NOT_FOUND, "nothere.yaml");
    expect_fail(P("nothing"), VT_ERR_NOT_FOUND, "nothing");
    vt_test_mkdirs(P("folder"));
    expect_fail(P("folder"), VT_ERR_NOT_FOUND, "no data.yaml");
    vt_test_write_text(P("d/file.csv"), "a,b\n");
    expect_fail(P("d/file.csv"), VT_ERR_DATASET, "expected a data.yaml");
}
END_TEST

static void expect_problem(vt_dataset *ds, int k, int code, int line, const char *needle)
{
    const char *file, *msg;
    int l, c;
    ck_assert_int_eq(vt_dataset_problem(ds, k, &file, &l, &c, &msg), VT_OK);
    ck_assert_msg(c == code && l == line && strstr(msg, needle) && strstr(file, "bad.txt"),
                  "problem %d: code %d line %d file %s '%s' (want code %d line %d '%s')", k, c,
                  l, file, msg, code, line, needle);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "bad.txt:%d: ", line);
    ck_assert_msg(strstr(msg, prefix), "message '%s' lacks '%s'", msg, prefix);
}

START_TEST(test_label_problems)
{
    vt_test_write_png(P("d/images/train/bad.png"), 8, 8, 0);
    vt_test_write_text(P("d/labels/train/bad.txt"),
               "0 0.5 0.5 0.2 0.2\n"     /* 1 kept */
               "0 0.5 0.5 0.2\n"         /* 2 wrong column count */
               "5 0.5 0.5 0.2 0.2\n"     /* 3 class out of range */
               "1 1.5 0.5 0.2 0.2\n"     /* 4 coordinate outside 0..1 */
               "1 0.5 0.5 0 0.2\n"       /* 5 zero size */
               "0 0.50 0.5 0.2 0.20\n"   /* 6 duplicate of 1 */
               "1 0.25 0.25 0.1 0.1\r\n" /* 7 kept (CRLF) */
               "x 0.1 0.1 0.1 0.1\n"     /* 8 not a number */
               "   \n"                   /* 9 blank: ignored */
               "-1 0.1 0.1 0.1 0.1\n"    /* 10 negative class */
               "0.5 0.1 0.1 0.1 0.1\n"   /* 11 fractional class */
               "0 nan 0.1 0.1 0.1\n"     /* 12 NaN */
               "1 0.95 0.95 0.2 0.2");   /* 13 kept, clipped to the image, no newline */
    vt_test_write_text(P("d/data.yaml"), "train: images/train\nval: images/train\nnames: [a, b]\n");
    vt_dataset *ds = open_ok(P("d/data.yaml"));
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 3);
    int cls;
    float b[4];
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 1, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 1);
    ck_assert_float_eq_tol(b[0], 0.25f, 1e-6f);
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 2, &cls, b), VT_OK);
    ck_assert_float_eq_tol(b[0], 0.925f, 1e-6f); /* 0.85..1.0 after clipping */
    ck_assert_float_eq_tol(b[2], 0.15f, 1e-6f);
    /* the val split lists the same image: its problems are recorded again */
    ck_assert_int_eq(vt_dataset_num_problems(ds), 18);
    expect_problem(ds, 0, VT_PROBLEM_BAD_LINE, 2, "4 columns, expected 5");
    expect_problem(ds, 1, VT_PROBLEM_CLASS_RANGE, 3, "class 5 is outside 0..1");
    expect_problem(ds, 2, VT_PROBLEM_COORD_RANGE, 4, "outside 0..1");
    expect_problem(ds, 3, VT_PROBLEM_ZERO_SIZE, 5, "zero-size");
    expect_problem(ds, 4, VT_PROBLEM_BAD_LINE, 8, "not a number");
    expect_problem(ds, 5, VT_PROBLEM_CLASS_RANGE, 10, "class -1");
    expect_problem(ds, 6, VT_PROBLEM_BAD_LINE, 11, "not an integer");
    expect_problem(ds, 7, VT_PROBLEM_COORD_RANGE, 12, "outside 0..1");
    expect_problem(ds, 8, VT_PROBLEM_DUPLICATE, 6, "duplicate of line 1");
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_label_unreadable)
{
    vt_test_write_png(P("d/images/train/a.png"), 8, 8, 0);
    vt_test_write_png(P("d/images/train/b.png"), 8, 8, 0);
    vt_test_mkdirs(P("d/labels/train/a.txt")); /* a folder where the label file should be */
    vt_test_write_text(P("d/labels/train/b.txt"), "");  /* empty: background */
    vt_test_write_text(P("d/data.yaml"), "train: images/train\nval: images/train\nnames: [a]\n");
    vt_dataset *ds = open_ok(P("d/data.yaml"));
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 0);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 1), 0);
    int code;
    ck_assert_int_eq(vt_dataset_num_problems(ds), 2);
    ck_assert_int_eq(vt_dataset_problem(ds, 0, NULL, NULL, &code, NULL), VT_OK);
    ck_assert_int_eq(code, VT_PROBLEM_LABEL_UNREADABLE);
    vt_dataset_destroy(ds);
}
END_TEST

static const char coco_train[] =
    "{\"info\": {\"description\": \"fixture\"},\n"
    " \"images\": [\n"
    "  {\"id\": 10, \"file_name\": \"a.png\", \"width\": 100, \"height\": 200},\n"
    "  {\"id\": 11, \"file_name\": \"b.png\", \"width\": 50, \"height\": 50},\n"
    "  {\"id\": 12, \"file_name\": \"missing.png\", \"width\": 50, \"height\": 50},\n"
    "  {\"id\": 13, \"file_name\": \"c.png\"}\n"
    " ],\n"
    " \"annotations\": [\n"
    "  {\"id\": 1, \"image_id\": 10, \"category_id\": 7, \"bbox\": [10, 20, 30, 40], \"iscrowd\": 0},\n"
    "  {\"id\": 2, \"image_id\": 10, \"category_id\": 3, \"bbox\": [0, 0, 100, 200], \"iscrowd\": 1},\n"
    "  {\"id\": 3, \"image_id\": 10, \"category_id\": 1, \"bbox\": [90.5, 190, 20, 20]},\n"
    "  {\"id\": 4, \"image_id\": 10, \"category_id\": 99, \"bbox\": [1, 1, 2, 2]},\n"
    "  {\"id\": 5, \"image_id\": 10, \"category_id\": 1, \"bbox\": [1, 1, 0, 2]},\n"
    "  {\"id\": 6, \"image_id\": 77, \"category_id\": 1, \"bbox\": [1, 1, 2, 2]},\n"
    "  {\"id\": 7, \"image_id\": 10, \"category_id\": 1, \"bbox\": [1, 1, 2]},\n"
    "  {\"id\": 8, \"image_id\": 10, \"category_id\": 7, \"bbox\": [10, 20, 30, 40]},\n"
    "  {\"id\": 9, \"image_id\": 12, \"category_id\": 7, \"bbox\": [10, 20, 30, 40]},\n"
    "  {\"id\": 10, \"image_id\": 10, \"category_id\": 3, \"bbox\": [500, 500, 5, 5]}\n"
    " ],\n"
    " \"categories\": [{\"id\": 3, \"name\": \"dog\"}, {\"id\": 7, \"name\": \"zebra\"},\n"
    "                {\"id\": 1, \"name\": \"cat\", \"supercategory\": \"animal\"}]\n"
    "}\n";

START_TEST(test_coco)
{
    vt_test_write_png(P("c/images/a.png"), 8, 8, 0);
    vt_test_write_png(P("c/images/b.png"), 8, 8, 0);
    vt_test_write_png(P("c/images/c.png"), 8, 8, 0);
    vt_test_write_text(P("c/instances_train.json"), coco_train);
    vt_dataset *ds = open_ok(P("c/instances_train.json"));
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "cat"); /* ids sorted: 1, 3, 7 */
    ck_assert_str_eq(vt_dataset_class_name(ds, 1), "dog");
    ck_assert_str_eq(vt_dataset_class_name(ds, 2), "zebra");
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 2); /* a, b */
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_VAL), 0);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 2);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 1), 0); /* background */
    int cls;
    float b[4];
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 0, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 2);
    ck_assert_float_eq_tol(b[0], 0.25f, 1e-6f); /* (10 + 15) / 100 */
    ck_assert_float_eq_tol(b[1], 0.2f, 1e-6f);  /* (20 + 20) / 200 */
    ck_assert_float_eq_tol(b[2], 0.3f, 1e-6f);
    ck_assert_float_eq_tol(b[3], 0.2f, 1e-6f);
    /* clipped at the image edge: x 90.5..100, y 190..200 */
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, 0, 1, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 0);
    ck_assert_float_eq_tol(b[2], 0.095f, 1e-6f);
    ck_assert_float_eq_tol(b[1], 0.975f, 1e-6f);
    static const int want[][2] = {
        {VT_PROBLEM_MISSING_IMAGE, 0}, {VT_PROBLEM_BAD_ANNOTATION, 0},
        {VT_PROBLEM_CLASS_RANGE, 0},   {VT_PROBLEM_ZERO_SIZE, 0},
        {VT_PROBLEM_BAD_ANNOTATION, 0}, {VT_PROBLEM_BAD_ANNOTATION, 0},
        {VT_PROBLEM_COORD_RANGE, 0},   {VT_PROBLEM_DUPLICATE, 0},
        {VT_PROBLEM_MISSING_SPLIT, 0},
    };
    int n = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(vt_dataset_num_problems(ds), n);
    for (int k = 0; k < n; k++) {
        const char *msg;
        int code, line;
        ck_assert_int_eq(vt_dataset_problem(ds, k, NULL, &line, &code, &msg), VT_OK);
        ck_assert_msg(code == want[k][0] && line == 0, "problem %d: %d '%s'", k, code, msg);
        ck_assert_ptr_nonnull(strstr(msg, "instances_train.json: "));
    }
    const char *msg;
    vt_dataset_problem(ds, 7, NULL, NULL, NULL, &msg);
    ck_assert_msg(strstr(msg, "annotations[7]: duplicate of annotations[0]"), "%s", msg);
    vt_dataset_destroy(ds);

    /* a val sibling with the same categories becomes the val split */
    vt_test_write_text(P("c/instances_val.json"),
               "{\"images\": [{\"id\": 1, \"file_name\": \"c.png\", \"width\": 8, \"height\": 8}],"
               " \"annotations\": [{\"image_id\": 1, \"category_id\": 3, \"bbox\": [0, 0, 4, 8]}],"
               " \"categories\": [{\"id\": 1, \"name\": \"cat\"}, {\"id\": 3, \"name\": \"dog\"},"
               " {\"id\": 7, \"name\": \"zebra\"}]}");
    ds = open_ok(P("c/instances_train.json"));
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_VAL), 1);
    ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_VAL, 0, 0, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 1);
    ck_assert_float_eq_tol(b[0], 0.25f, 1e-6f);
    vt_dataset_destroy(ds);
    vt_test_write_text(P("c/instances_val.json"),
               "{\"images\": [], \"categories\": [{\"id\": 1, \"name\": \"cat\"}]}");
    expect_fail(P("c/instances_train.json"), VT_ERR_DATASET, "categories differ");
}
END_TEST

START_TEST(test_coco_errors)
{
    vt_test_write_png(P("c/images/a.png"), 8, 8, 0);
    vt_test_write_text(P("c/syntax.json"), "{\n  \"images\": [\n    {\"id\": 1,, \"file_name\": \"a\"}\n");
    expect_fail(P("c/syntax.json"), VT_ERR_FORMAT, "syntax.json:3:");
    vt_test_write_text(P("c/trunc.json"), "{\"images\": [\n");
    expect_fail(P("c/trunc.json"), VT_ERR_FORMAT, "unexpected end of file");
    vt_test_write_text(P("c/trail.json"), "{}\n}\n");
    expect_fail(P("c/trail.json"), VT_ERR_FORMAT, "trail.json:2:1:");
    vt_test_write_text(P("c/array.json"), "[1, 2]");
    expect_fail(P("c/array.json"), VT_ERR_DATASET, "expected a JSON object");
    vt_test_write_text(P("c/nocat.json"), "{\"images\": [], \"annotations\": []}");
    expect_fail(P("c/nocat.json"), VT_ERR_DATASET, "no \"categories\"");
    vt_test_write_text(P("c/badcat.json"), "{\"images\": [], \"categories\": [{\"id\": \"x\"}]}");
    expect_fail(P("c/badcat.json"), VT_ERR_DATASET, "categories[0]");
    vt_test_write_text(P("c/dupcat.json"), "{\"images\": [], \"categories\": [{\"id\": 1, \"name\": \"a\"},"
                                   " {\"id\": 1, \"name\": \"b\"}]}");
    expect_fail(P("c/dupcat.json"), VT_ERR_DATASET, "id 1 is given twice");
    vt_test_write_text(P("c/noimg.json"), "{\"categories\": [{\"id\": 1, \"name\": \"a\"}]}");
    expect_fail(P("c/noimg.json"), VT_ERR_DATASET, "no \"images\"");
    vt_test_write_text(P("c/empty.json"), "{\"images\": [], \"categories\": [{\"id\": 1, \"name\": \"a\"}]}");
    expect_fail(P("c/empty.json"), VT_ERR_DATASET, "no usable images");
    expect_fail(P("c/none.json"), VT_ERR_NOT_FOUND, "none.json");
    vt_test_write_text(P("c/deep.json"), "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
    expect_fail(P("c/deep.json"), VT_ERR_FORMAT, "deep.json:1:");
}
END_TEST

/* Mangled copies of valid files must give a status, never a crash (run under ASan). */
START_TEST(test_mangled_inputs)
{
    yolo_fixture("d");
    vt_test_write_png(P("c/images/a.png"), 8, 8, 0);
    vt_test_write_png(P("c/images/b.png"), 8, 8, 0);
    const char *yaml = "path: .\ntrain: [images/train, images/val]\nval: images/val\n"
                       "names:\n  0: cat\n  1: dog\nnc: 2\n";
    const char *label = "0 0.5 0.5 0.2 0.4\n1 0.25 0.75 0.1 0.1\n1 0.5 0.5 1 1\n";
    vt_rng rng;
    /* VT_FUZZ_ROUNDS=N runs longer (e.g. once under ASan); the default keeps the suite short */
    const char *env = getenv("VT_FUZZ_ROUNDS");
    int rounds = env && atoi(env) > 0 ? atoi(env) : 60;
    vt_rng_seed(&rng, env ? (uint64_t)rounds : 42);
    for (int round = 0; round < rounds; round++) {
        const char *src[3] = {yaml, coco_train, label};
        const char *dst[3] = {P("d/m.yaml"), P("c/m_train.json"), P("d/labels/train/a.txt")};
        for (int f = 0; f < 3; f++) {
            size_t n = strlen(src[f]);
            char *buf = malloc(n + 1);
            memcpy(buf, src[f], n + 1);
            int edits = 1 + (int)vt_rng_below(&rng, 4);
            for (int e = 0; e < edits && n > 0; e++) {
                size_t at = vt_rng_below(&rng, (uint32_t)n);
                int kind = (int)vt_rng_below(&rng, 3);
                if (kind == 0) buf[at] = (char)vt_rng_below(&rng, 256);
                else if (kind == 1) n = at; /* truncate */
                else buf[at] = "[]{}:,-\"'\n 0.9x#&*!|>"[vt_rng_below(&rng, 22)];
            }
            remove(dst[f]);
            ck_assert_int_eq(vt_test_write_file(dst[f], buf, n), 0);
            free(buf);
        }
        for (int f = 0; f < 2; f++) {
            vt_dataset *ds = NULL;
            vt_status st = vt_dataset_open(&ds, VT_TASK_DETECT, f ? P("c/m_train.json") : P("d/m.yaml"));
            ck_assert(st == VT_OK ? ds != NULL : ds == NULL);
            if (st) ck_assert(vt_last_error()[0] != 0);
            for (int k = 0; ds && k < vt_dataset_num_problems(ds); k++) {
                const char *msg = NULL;
                ck_assert_int_eq(vt_dataset_problem(ds, k, NULL, NULL, NULL, &msg), VT_OK);
                ck_assert_ptr_nonnull(msg);
            }
            vt_dataset_destroy(ds);
        }
    }
}
END_TEST

static void *slurp(const char *path, size_t *n)
{
    void *p = vt_test_read_file(path, n);
    ck_assert_msg(p != NULL, "read %s", path);
    return p;
}

START_TEST(test_synth_detect)
{
    const char *opts = "train=40 val=6 imgsz=64 seed=3 classes=4 max_objects=5";
    ck_assert_int_eq(vt_synth_generate(P("s1"), VT_TASK_DETECT, opts), VT_OK);
    vt_dataset *ds = open_ok(P("s1/data.yaml"));
    ck_assert_int_eq(vt_dataset_num_classes(ds), 4);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "circle");
    ck_assert_str_eq(vt_dataset_class_name(ds, 2), "triangle");
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 40);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_VAL), 6);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 0);
    int empty = 0, total = 0, seen[4] = {0}, multi = 0;
    for (int i = 0; i < 40; i++) {
        int nb = vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i);
        ck_assert_int_le(nb, 5);
        empty += nb == 0;
        multi += nb > 1;
        total += nb;
        for (int j = 0; j < nb; j++) {
            int cls;
            float b[4];
            ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, i, j, &cls, b), VT_OK);
            ck_assert(cls >= 0 && cls < 4);
            seen[cls]++;
            ck_assert(b[0] - b[2] / 2 >= 0 && b[0] + b[2] / 2 <= 1.0f + 1e-6f);
            ck_assert(b[1] - b[3] / 2 >= 0 && b[1] + b[3] / 2 <= 1.0f + 1e-6f);
            /* larger side 5%..50% of the image (8..80 px at 160) */
            float side = b[2] > b[3] ? b[2] : b[3];
            ck_assert_msg(side >= 0.045f && side <= 0.51f, "box side %f", side);
        }
    }
    ck_assert_int_ge(empty, 1);
    ck_assert_int_le(empty, 12);
    ck_assert_int_ge(multi, 10);
    for (int c = 0; c < 4; c++) ck_assert_int_gt(seen[c], 0);
    vt_image img;
    ck_assert_int_eq(vt_image_load(vt_dataset_image_path(ds, VT_SPLIT_VAL, 0), &img), VT_OK);
    ck_assert_int_eq(img.w, 64);
    ck_assert_int_eq(img.c, 3);
    vt_image_free(&img);
    vt_dataset_destroy(ds);

    /* deterministic: the same seed gives the same bytes, another seed other images */
    ck_assert_int_eq(vt_synth_generate(P("s2"), VT_TASK_DETECT, opts), VT_OK);
    ck_assert_int_eq(vt_synth_generate(P("s3"), VT_TASK_DETECT,
                                       "train=40 val=6 imgsz=64 seed=4 classes=4 max_objects=5"),
                     VT_OK);
    size_t n1, n2, n3;
    char *a = slurp(P("s1/images/train/00007.png"), &n1), *b = slurp(P("s2/images/train/00007.png"), &n2);
    char *c = slurp(P("s3/images/train/00007.png"), &n3);
    ck_assert(n1 == n2 && memcmp(a, b, n1) == 0);
    ck_assert(n1 != n3 || memcmp(a, c, n1) != 0);
    free(a);
    free(b);
    free(c);
    a = slurp(P("s1/data.yaml"), &n1);
    b = slurp(P("s2/data.yaml"), &n2);
    ck_assert(n1 == n2 && memcmp(a, b, n1) == 0);
    free(a);
    free(b);

    /* refuses to write over a dataset; option errors */
    ck_assert_int_eq(vt_synth_generate(P("s1"), VT_TASK_DETECT, "train=1"), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_synth_generate(P("s4"), VT_TASK_DETECT, "classes=2"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(P("s4"), VT_TASK_DETECT, "colour=1"), VT_ERR_UNKNOWN_OPTION);
    /* val=0: no val split (a problem on open, not an error) */
    ck_assert_int_eq(vt_synth_generate(P("s5"), VT_TASK_DETECT, "train=3 val=0 imgsz=32"), VT_OK);
    ds = open_ok(P("s5"));
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_VAL), 0);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 1);
    vt_dataset_destroy(ds);

    /* min_size / max_size / sizes=log: a set spanning a decade, as many objects per octave */
    ck_assert_int_eq(vt_synth_generate(P("s6"), VT_TASK_DETECT,
                                       "train=60 val=0 imgsz=256 min_size=16 max_size=200 "
                                       "sizes=log max_objects=8 seed=2"),
                     VT_OK);
    ds = open_ok(P("s6"));
    int octave[4] = {0}, n6 = 0; /* 16-32, 32-64, 64-128, 128-200 px */
    float lo = 1e9f, hi = 0;
    for (int i = 0; i < 60; i++)
        for (int j = 0; j < vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i); j++) {
            int cls;
            float b[4];
            ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, i, j, &cls, b), VT_OK);
            float side = 256.0f * (b[2] > b[3] ? b[2] : b[3]);
            lo = side < lo ? side : lo;
            hi = side > hi ? side : hi;
            octave[side < 32 ? 0 : side < 64 ? 1 : side < 128 ? 2 : 3]++;
            n6++;
        }
    vt_dataset_destroy(ds);
    ck_assert_msg(lo >= 15.5f && hi <= 200.5f && lo < 20 && hi > 170, "sizes %f..%f", lo, hi);
    /* log-uniform: 30% / 30% / 30% / 19% of the objects; linear would put 4% in the first */
    for (int k = 0; k < 3; k++)
        ck_assert_msg(octave[k] > n6 / 6, "octave %d: %d of %d", k, octave[k], n6);
    ck_assert_int_eq(vt_synth_generate(P("s7"), VT_TASK_DETECT, "min_size=50 max_size=40"),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_synth_generate(P("s7"), VT_TASK_DETECT, "imgsz=64 max_size=65"),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_synth_generate(P("s7"), VT_TASK_DETECT, "sizes=cubic"),
                     VT_ERR_OPTION_VALUE);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("detect_data");
    TCase *ty = tcase_create("yolo");
    tcase_add_checked_fixture(ty, setup, teardown);
    tcase_add_test(ty, test_yaml_names_list);
    tcase_add_test(ty, test_yaml_variants);
    tcase_add_test(ty, test_yaml_errors);
    tcase_add_test(ty, test_label_problems);
    tcase_add_test(ty, test_label_unreadable);
    suite_add_tcase(s, ty);
    TCase *tc = tcase_create("coco");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_coco);
    tcase_add_test(tc, test_coco_errors);
    tcase_add_test(tc, test_mangled_inputs);
    suite_add_tcase(s, tc);
    TCase *tg = tcase_create("generator");
    tcase_add_checked_fixture(tg, setup, teardown);
    tcase_add_test(tg, test_synth_detect);
    suite_add_tcase(s, tg);
    return s;
}

int main(void) { return vt_test_run(suite()); }
