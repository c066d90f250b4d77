/* lib/data/dataset.c: the ImageFolder layout (classes, splits, file filtering), its errors, and
 * training through it with damaged images (warnings, not failures), an all-damaged dataset
 * (an error, not a crash), and the promise that the library never modifies a dataset. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>


#include "core/core.h"
#include "image/image.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

/* mkdir -p */

/* Opening succeeds and records a problem of `code` whose message holds `needle`: the layout
 * problems that vt_dataset_validate reports are the same (warnings) for opening. */
static void expect_open_problem(const char *path, int code, const char *needle, const char *what)
{
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, path);
    ck_assert_msg(st == VT_OK, "%s: status %d: %s", what, st, vt_last_error());
    int found = 0;
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        int c;
        const char *msg;
        vt_dataset_problem(ds, k, NULL, NULL, &c, &msg);
        if (c == code && strstr(msg, needle)) found = 1;
    }
    ck_assert_msg(found, "%s: no problem %s naming '%s'", what, vt_problem_code_name(code), needle);
    /* policy=fail makes it fatal */
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_CLASSIFY, path, "policy=fail"), VT_ERR_DATASET);
}

/* A small valid PNG (w x w RGB) with content depending on `seed`; parent folders created. */
static void write_png(const char *path, int w, int seed)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    vt_test_mkdirs(dir);
    uint8_t *px = malloc((size_t)w * w * 3);
    for (int i = 0; i < w * w * 3; i++) px[i] = (uint8_t)(i * 7 + seed * 31 + (i / 3 % w) * 5);
    vt_status st = vt_image_save_png(path, px, w, w, 3, (size_t)w * 3);
    free(px);
    ck_assert_msg(st == VT_OK, "fixture %s: %s", path, vt_last_error());
}


/* A PNG whose header is valid but whose image data is garbage. */
static void write_corrupt_png(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmpgood.png", path);
    write_png(tmp, 16, 99);
    size_t n;
    unsigned char *b = vt_test_read_file(tmp, &n);
    ck_assert_ptr_nonnull(b);
    remove(tmp);
    for (size_t i = 41; i < n; i++) b[i] = (unsigned char)(i * 131 + 7); /* after IHDR */
    ck_assert_int_eq(vt_test_write_file(path, b, n), 0);
    free(b);
}

/* A JPEG cut off after 40% of its bytes. */
static void write_truncated_jpeg(const char *path)
{
    vt_test_write_jpeg(path, NULL, 24, 24, 90, 0.4);
}

static void expect_open_fail(const char *path, vt_task task, vt_status want, const char *needle,
                             const char *what)
{
    vt_dataset *ds = (vt_dataset *)&ds;
    vt_status st = vt_dataset_open(&ds, task, path);
    ck_assert_msg(st == want, "%s: status %d (%s), expected %d; message '%s'", what, st,
                  vt_status_string(st), want, vt_last_error());
    ck_assert_msg(ds == NULL, "%s: *out not NULL after failure", what);
    ck_assert_msg(needle == NULL || strstr(vt_last_error(), needle) != NULL,
                  "%s: message '%s' does not name '%s'", what, vt_last_error(), needle);
}

/* ---- layout ------------------------------------------------------------------------------- */

START_TEST(test_layout)
{
    /* train: zebra 1, apple 3, mango 2 (created out of order); valid: apple 1, zebra 2; test:
     * mango 1.  Plus files and folders that are not images or classes. */
    write_png(vt_test_path("ds/train/zebra/z1.png"), 8, 1);
    write_png(vt_test_path("ds/train/apple/b.png"), 8, 2);
    write_png(vt_test_path("ds/train/apple/a.PNG"), 8, 3);
    write_png(vt_test_path("ds/train/apple/c.jpeg"), 8, 4); /* a PNG named .jpeg: names are only listed */
    write_png(vt_test_path("ds/train/mango/m2.jpg"), 8, 5);
    write_png(vt_test_path("ds/train/mango/m1.JPG"), 8, 6);
    write_png(vt_test_path("ds/train/mango/.hidden.png"), 8, 7);
    write_png(vt_test_path("ds/train/.cache/x.png"), 8, 8);  /* hidden folder: not a class */
    vt_test_write_text(vt_test_path("ds/train/apple/notes.txt"), "not an image");
    vt_test_write_text(vt_test_path("ds/train/apple/a.png.txt"), "not an image either");
    vt_test_write_text(vt_test_path("ds/train/apple/png"), "no extension");
    vt_test_write_text(vt_test_path("ds/train/apple/Thumbs.db"), "x");
    vt_test_write_text(vt_test_path("ds/train/.DS_Store"), "x");
    vt_test_write_text(vt_test_path("ds/train/labels.csv"), "a file is not a class");
    vt_test_mkdirs(vt_test_path("ds/train/apple/subfolder.png")); /* a folder named like an image */
    write_png(vt_test_path("ds/valid/apple/v1.png"), 8, 9);
    write_png(vt_test_path("ds/valid/zebra/v3.png"), 8, 10);
    write_png(vt_test_path("ds/valid/zebra/v2.png"), 8, 11);
    vt_test_write_text(vt_test_path("ds/valid/zebra/.v0.png"), "hidden");
    write_png(vt_test_path("ds/test/mango/t1.png"), 8, 12);
    vt_test_write_text(vt_test_path("ds/README.md"), "readme");

    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("ds"));
    ck_assert_msg(st == VT_OK, "open: %d %s", st, vt_last_error());
    ck_assert_msg(vt_dataset_task(ds) == VT_TASK_CLASSIFY, "task %d", vt_dataset_task(ds));
    ck_assert_msg(vt_dataset_num_classes(ds) == 3, "%d classes (hidden folder or file counted?)",
                  vt_dataset_num_classes(ds));
    const char *names[3] = {"apple", "mango", "zebra"};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(vt_dataset_class_name(ds, i) && strcmp(vt_dataset_class_name(ds, i), names[i]) == 0,
                      "class %d is '%s', expected '%s'", i, vt_dataset_class_name(ds, i), names[i]);
    ck_assert_msg(vt_dataset_class_name(ds, 3) == NULL && vt_dataset_class_name(ds, -1) == NULL,
                  "class name out of range not NULL");

    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_TRAIN) == 6, "train: %d images, expected 6",
                  vt_dataset_num_images(ds, VT_SPLIT_TRAIN));
    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_VAL) == 3, "valid as val: %d images, expected 3",
                  vt_dataset_num_images(ds, VT_SPLIT_VAL));
    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_TEST) == 1, "test: %d images, expected 1",
                  vt_dataset_num_images(ds, VT_SPLIT_TEST));
    ck_assert_msg(vt_dataset_num_images(ds, (vt_split)3) == 0 &&
                      vt_dataset_num_images(ds, (vt_split)-1) == 0,
                  "num_images of a bad split not 0");

    /* images grouped by class (in class order), sorted by name within a class */
    struct { vt_split sp; const char *rel; int cls; } want[] = {
        {VT_SPLIT_TRAIN, "ds/train/apple/a.PNG", 0}, {VT_SPLIT_TRAIN, "ds/train/apple/b.png", 0},
        {VT_SPLIT_TRAIN, "ds/train/apple/c.jpeg", 0}, {VT_SPLIT_TRAIN, "ds/train/mango/m1.JPG", 1},
        {VT_SPLIT_TRAIN, "ds/train/mango/m2.jpg", 1}, {VT_SPLIT_TRAIN, "ds/train/zebra/z1.png", 2},
        {VT_SPLIT_VAL, "ds/valid/apple/v1.png", 0}, {VT_SPLIT_VAL, "ds/valid/zebra/v2.png", 2},
        {VT_SPLIT_VAL, "ds/valid/zebra/v3.png", 2}, {VT_SPLIT_TEST, "ds/test/mango/t1.png", 1}};
    int idx[3] = {0, 0, 0};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int i = idx[want[k].sp]++;
        const char *p = vt_dataset_image_path(ds, want[k].sp, i);
        ck_assert_msg(p && strcmp(p, vt_test_path("%s", want[k].rel)) == 0, "split %d image %d: '%s', expected %s",
                      want[k].sp, i, p ? p : "(null)", want[k].rel);
        ck_assert_msg(vt_dataset_image_class(ds, want[k].sp, i) == want[k].cls,
                      "split %d image %d (%s): class %d, expected %d", want[k].sp, i, want[k].rel,
                      vt_dataset_image_class(ds, want[k].sp, i), want[k].cls);
    }
    ck_assert_msg(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 6) == NULL &&
                      vt_dataset_image_path(ds, VT_SPLIT_TRAIN, -1) == NULL &&
                      vt_dataset_image_path(ds, (vt_split)7, 0) == NULL,
                  "image path out of range not NULL");
    ck_assert_msg(vt_dataset_image_class(ds, VT_SPLIT_VAL, 3) == -1 &&
                      vt_dataset_image_class(ds, VT_SPLIT_VAL, -1) == -1 &&
                      vt_dataset_image_class(ds, (vt_split)9, 0) == -1,
                  "image class out of range not -1");
    ck_assert_msg(vt_dataset_last_error(ds) != NULL, "dataset last_error NULL");
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_val_names)
{
    /* "val" is read; without val/valid the split is empty; a trailing slash is fine */
    write_png(vt_test_path("a/train/c1/x.png"), 8, 1);
    write_png(vt_test_path("a/train/c2/y.png"), 8, 2);
    write_png(vt_test_path("a/val/c2/v.png"), 8, 3);
    write_png(vt_test_path("b/train/c1/x.png"), 8, 1);
    write_png(vt_test_path("b/train/c2/y.png"), 8, 2);
    vt_dataset *ds;
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("a/")) == VT_OK, "a/: %s", vt_last_error());
    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_VAL) == 1, "val/: %d images",
                  vt_dataset_num_images(ds, VT_SPLIT_VAL));
    ck_assert_msg(vt_dataset_image_class(ds, VT_SPLIT_VAL, 0) == 1, "val image class %d",
                  vt_dataset_image_class(ds, VT_SPLIT_VAL, 0));
    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_TEST) == 0, "no test/: %d",
                  vt_dataset_num_images(ds, VT_SPLIT_TEST));
    vt_dataset_destroy(ds);
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("b")) == VT_OK, "b: %s", vt_last_error());
    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_VAL) == 0 &&
                      vt_dataset_num_images(ds, VT_SPLIT_TEST) == 0,
                  "train-only dataset has val/test images");
    ck_assert_msg(vt_dataset_num_images(ds, VT_SPLIT_TRAIN) == 2, "train-only: %d",
                  vt_dataset_num_images(ds, VT_SPLIT_TRAIN));
    vt_dataset_destroy(ds);
    /* a synthetic dataset: class names are the shape names, sorted */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("syn"), VT_TASK_CLASSIFY,
                                       "classes=3 train=4 val=2 imgsz=16 seed=1"), VT_OK);
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("syn")) == VT_OK, "syn: %s",
                  vt_last_error());
    ck_assert_msg(vt_dataset_num_classes(ds) == 3 && vt_dataset_num_images(ds, VT_SPLIT_TRAIN) == 12 &&
                      vt_dataset_num_images(ds, VT_SPLIT_VAL) == 6,
                  "synthetic: %d classes %d train %d val", vt_dataset_num_classes(ds),
                  vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL));
    for (int i = 1; i < 3; i++)
        ck_assert_msg(strcmp(vt_dataset_class_name(ds, i - 1), vt_dataset_class_name(ds, i)) < 0,
                      "synthetic class names not sorted: %s, %s", vt_dataset_class_name(ds, i - 1),
                      vt_dataset_class_name(ds, i));
    for (int i = 0; i < 12; i++)
        ck_assert_msg(vt_dataset_image_class(ds, VT_SPLIT_TRAIN, i) == i / 4,
                      "synthetic train image %d: class %d", i,
                      vt_dataset_image_class(ds, VT_SPLIT_TRAIN, i));
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------- */

START_TEST(test_open_errors)
{
    expect_open_fail(vt_test_path("does-not-exist"), VT_TASK_CLASSIFY, VT_ERR_NOT_FOUND, vt_test_path("does-not-exist"),
                     "missing folder");
    /* a path that is a file */
    vt_test_write_text(vt_test_path("plain-file"), "x");
    {
        vt_dataset *ds = NULL;
        vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("plain-file"));
        ck_assert_msg(st == VT_ERR_NOT_FOUND || st == VT_ERR_DATASET,
                      "path is a file: status %d (%s)", st, vt_last_error());
        ck_assert_msg(ds == NULL, "path is a file: *out not NULL");
        ck_assert_msg(strstr(vt_last_error(), vt_test_path("plain-file")), "path is a file: message '%s'",
                      vt_last_error());
    }
    /* no train/ */
    write_png(vt_test_path("notrain/val/a/x.png"), 8, 1);
    write_png(vt_test_path("notrain/val/b/x.png"), 8, 1);
    expect_open_fail(vt_test_path("notrain"), VT_TASK_CLASSIFY, VT_ERR_NOT_FOUND, "train", "no train/ folder");
    /* train is a file */
    vt_test_mkdirs(vt_test_path("trainfile"));
    vt_test_write_text(vt_test_path("trainfile/train"), "x");
    expect_open_fail(vt_test_path("trainfile"), VT_TASK_CLASSIFY, VT_ERR_NOT_FOUND, "train", "train/ is a file");
    /* one class */
    write_png(vt_test_path("one/train/only/x.png"), 8, 1);
    expect_open_fail(vt_test_path("one"), VT_TASK_CLASSIFY, VT_ERR_DATASET, vt_test_path("one/train"), "one class folder");
    /* no class */
    vt_test_mkdirs(vt_test_path("zero/train"));
    expect_open_fail(vt_test_path("zero"), VT_TASK_CLASSIFY, VT_ERR_DATASET, vt_test_path("zero/train"), "no class folder");
    /* an empty class folder, and one holding only non-images */
    write_png(vt_test_path("empty/train/a/x.png"), 8, 1);
    vt_test_mkdirs(vt_test_path("empty/train/b_empty"));
    expect_open_problem(vt_test_path("empty"), VT_PROBLEM_EMPTY_SPLIT, "class folder has no images",
                        "empty class folder");
    write_png(vt_test_path("txt/train/a/x.png"), 8, 1);
    vt_test_write_text(vt_test_path("txt/train/b/readme.txt"), "x");
    write_png(vt_test_path("txt/train/b/.hidden.png"), 8, 1);
    expect_open_problem(vt_test_path("txt"), VT_PROBLEM_EMPTY_SPLIT, "class folder has no images",
                        "class folder with only non-images");
    /* a class folder that is a symbolic link back to train/: named as a loop, a warning */
    write_png(vt_test_path("loop/train/a/x.png"), 8, 1);
    write_png(vt_test_path("loop/train/b/x.png"), 8, 1);
    ck_assert_int_eq(symlink(".", vt_test_path("loop/train/c")), 0);
    expect_open_problem(vt_test_path("loop"), VT_PROBLEM_EMPTY_SPLIT, "symbolic link back to",
                        "symlink loop class folder");
    /* class folders without any image: nothing to train on */
    vt_test_mkdirs(vt_test_path("none/train/a"));
    vt_test_mkdirs(vt_test_path("none/train/b"));
    expect_open_fail(vt_test_path("none"), VT_TASK_CLASSIFY, VT_ERR_DATASET, "no class folder has images",
                     "no train images");
    /* a val class absent from train */
    write_png(vt_test_path("vx/train/a/x.png"), 8, 1);
    write_png(vt_test_path("vx/train/b/x.png"), 8, 1);
    write_png(vt_test_path("vx/val/a/x.png"), 8, 1);
    write_png(vt_test_path("vx/val/stranger/x.png"), 8, 1);
    expect_open_problem(vt_test_path("vx"), VT_PROBLEM_CLASS_COUNT, "stranger", "val class not in train");
    /* the same in test/ */
    write_png(vt_test_path("tx/train/a/x.png"), 8, 1);
    write_png(vt_test_path("tx/train/b/x.png"), 8, 1);
    write_png(vt_test_path("tx/test/c/x.png"), 8, 1);
    expect_open_problem(vt_test_path("tx"), VT_PROBLEM_CLASS_COUNT, "'c'", "test class not in train");
    /* tasks other than classification */
    write_png(vt_test_path("good/train/a/x.png"), 8, 1);
    write_png(vt_test_path("good/train/b/x.png"), 8, 1);
    /* a detection dataset is a data.yaml or COCO json (test_detect_data.c) */
    expect_open_fail(vt_test_path("good"), VT_TASK_DETECT, VT_ERR_NOT_FOUND, "data.yaml", "task detect");
    /* so is a segmentation dataset (test_seg_data.c) */
    expect_open_fail(vt_test_path("good"), VT_TASK_SEGMENT, VT_ERR_NOT_FOUND, "data.yaml", "task segment");
    {
        vt_dataset *ds = NULL;
        vt_status st = vt_dataset_open(&ds, (vt_task)0, vt_test_path("good"));
        ck_assert_msg(st == VT_ERR_UNSUPPORTED || st == VT_ERR_INVALID_ARGUMENT,
                      "task 0: status %d", st);
        ck_assert_msg(ds == NULL, "task 0: *out not NULL");
        st = vt_dataset_open(&ds, (vt_task)77, vt_test_path("good"));
        ck_assert_msg(st == VT_ERR_UNSUPPORTED || st == VT_ERR_INVALID_ARGUMENT,
                      "task 77: status %d", st);
        ck_assert_msg(ds == NULL, "task 77: *out not NULL");
    }
    /* NULL arguments */
    vt_dataset *ds;
    ck_assert_msg(vt_dataset_open(NULL, VT_TASK_CLASSIFY, vt_test_path("good")) == VT_ERR_INVALID_ARGUMENT,
                  "NULL out");
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_CLASSIFY, NULL) == VT_ERR_INVALID_ARGUMENT,
                  "NULL path");
    /* the good dataset opens */
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("good")) == VT_OK, "good: %s",
                  vt_last_error());
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- training through damaged images -------------------------------------------------------- */

typedef struct {
    int warnings, errors;
    char msgs[64][512];
    int n;
} logbook;

static void log_cb(void *user, vt_log_level level, const char *message)
{
    logbook *lb = user;
    if (level == VT_LOG_WARNING) lb->warnings++;
    if (level == VT_LOG_ERROR) lb->errors++;
    ck_assert_msg(message != NULL, "log message NULL");
    ck_assert_msg(strchr(message, '\n') == NULL, "log message has a newline: '%s'", message);
    if (level <= VT_LOG_WARNING && lb->n < 64) snprintf(lb->msgs[lb->n++], 512, "%s", message);
}

static int count_mentions(const logbook *lb, const char *path)
{
    int c = 0;
    for (int i = 0; i < lb->n; i++) c += strstr(lb->msgs[i], path) != NULL;
    return c;
}

/* Train cls-n on `root` with the tiny settings; returns the status, fills the logbook. */
static vt_status train_on(const char *root, int epochs, logbook *lb, char *err, size_t errcap)
{
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, root);
    ck_assert_msg(st == VT_OK, "%s: open: %s", root, vt_last_error());
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", vt_dataset_num_classes(ds), "imgsz=16"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    char kv[64];
    snprintf(kv, sizeof kv, "epochs=%d", epochs);
    ck_assert_int_eq(vt_trainer_set(t, kv), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "batch=4"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "workers=1"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "imgsz=16"), VT_OK);
    memset(lb, 0, sizeof *lb);
    vt_trainer_set_log(t, log_cb, lb, VT_LOG_DEBUG);
    st = vt_trainer_run(t);
    if (err) snprintf(err, errcap, "%s", vt_trainer_last_error(t));
    if (st == VT_OK) {
        /* the trained model still predicts */
        float s[8];
        vt_status ps = vt_model_predict_file(m, vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 0), s, 8);
        ck_assert_msg(ps == VT_OK || ps == VT_ERR_FORMAT, "%s: predict after training: %s", root,
                      vt_model_last_error(m));
    }
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return st;
}

START_TEST(test_train_with_bad_images)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path("bad"), VT_TASK_CLASSIFY,
                                       "classes=2 train=6 val=2 imgsz=16 seed=3"), VT_OK);
    write_corrupt_png(vt_test_path("bad/train/circle/broken.png"));
    write_truncated_jpeg(vt_test_path("bad/train/square/cut.jpg"));
    logbook lb;
    char err[VT_ERRMSG_MAX];
    vt_status st = train_on(vt_test_path("bad"), 1, &lb, err, sizeof err);
    ck_assert_msg(st == VT_OK, "training with 2 bad images among 12 failed: %d %s", st, err);
    int a = count_mentions(&lb, vt_test_path("bad/train/circle/broken.png"));
    int b = count_mentions(&lb, vt_test_path("bad/train/square/cut.jpg"));
    ck_assert_msg(a == 1, "corrupt PNG named in %d warnings, expected exactly 1", a);
    ck_assert_msg(b == 1, "truncated JPEG named in %d warnings, expected exactly 1", b);
    ck_assert_msg(lb.warnings == 2, "%d warnings, expected 2 (one per bad file)", lb.warnings);
    ck_assert_msg(lb.errors == 0, "%d error-level log messages", lb.errors);
}
END_TEST

/* Several epochs and a bad image in val too: still once per bad file per run. */
START_TEST(test_bad_images_warned_once_per_run)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path("bad2"), VT_TASK_CLASSIFY,
                                       "classes=2 train=6 val=2 imgsz=16 seed=4"), VT_OK);
    write_corrupt_png(vt_test_path("bad2/train/circle/broken.png"));
    write_truncated_jpeg(vt_test_path("bad2/val/square/cut.jpg"));
    logbook lb;
    char err[VT_ERRMSG_MAX];
    for (int run = 0; run < 2; run++) {
        vt_status st = train_on(vt_test_path("bad2"), 3, &lb, err, sizeof err);
        ck_assert_msg(st == VT_OK, "run %d: training failed: %d %s", run, st, err);
        int a = count_mentions(&lb, vt_test_path("bad2/train/circle/broken.png"));
        int b = count_mentions(&lb, vt_test_path("bad2/val/square/cut.jpg"));
        ck_assert_msg(a == 1, "run %d, 3 epochs: bad train image warned %d times, expected 1", run, a);
        ck_assert_msg(b == 1, "run %d, 3 epochs: bad val image warned %d times, expected 1", run, b);
    }
}
END_TEST

static void corrupt_all(const char *root, int with_val)
{
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, root), VT_OK);
    for (int sp = 0; sp <= (with_val ? 1 : 0); sp++)
        for (int i = 0; i < vt_dataset_num_images(ds, (vt_split)sp); i++) {
            const char *p = vt_dataset_image_path(ds, (vt_split)sp, i);
            if (i % 2) write_corrupt_png(p);
            else vt_test_write_text(p, "this is not an image at all");
        }
    vt_dataset_destroy(ds);
}

START_TEST(test_all_images_bad)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path("allbad"), VT_TASK_CLASSIFY,
                                       "classes=2 train=4 val=2 imgsz=16"), VT_OK);
    corrupt_all(vt_test_path("allbad"), 1);
    logbook lb;
    char err[VT_ERRMSG_MAX];
    vt_status st = train_on(vt_test_path("allbad"), 2, &lb, err, sizeof err);
    ck_assert_msg(st == VT_ERR_DATASET, "all images corrupt (train and val): status %d (%s), "
                  "expected VT_ERR_DATASET; message '%s'", st, vt_status_string(st), err);
    ck_assert_msg(*err, "all images corrupt: empty message");
}
END_TEST

START_TEST(test_all_train_images_bad_no_val)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path("allbad2"), VT_TASK_CLASSIFY,
                                       "classes=2 train=4 val=0 imgsz=16"), VT_OK);
    corrupt_all(vt_test_path("allbad2"), 0);
    logbook lb;
    char err[VT_ERRMSG_MAX];
    vt_status st = train_on(vt_test_path("allbad2"), 2, &lb, err, sizeof err);
    ck_assert_msg(st == VT_ERR_DATASET, "all train images corrupt, no val split: status %d (%s), "
                  "expected VT_ERR_DATASET; message '%s'", st, vt_status_string(st), err);
    ck_assert_msg(lb.warnings == 8, "all 8 bad images should be warned once each: %d warnings",
                  lb.warnings);
}
END_TEST

/* ---- the library never modifies a dataset ---------------------------------------------------- */

static char **snap;
static int nsnap;
static size_t snap_root_len;

static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int snap_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    char line[4400];
    uint64_t h = 0;
    if (flag == FTW_F) {
        size_t n;
        unsigned char *b = vt_test_read_file(path, &n);
        h = b ? fnv(b, n) : 0;
        free(b);
    }
    snprintf(line, sizeof line, "%s|%d|%o|%lld|%lld.%09ld|%016llx", path + snap_root_len, flag,
             (unsigned)sb->st_mode, (long long)sb->st_size, (long long)sb->st_mtim.tv_sec,
             sb->st_mtim.tv_nsec, (unsigned long long)h);
    snap = realloc(snap, (size_t)(nsnap + 1) * sizeof *snap);
    snap[nsnap++] = strdup(line);
    return 0;
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted "path|type|mode|size|mtime|hash" of everything under root (root's own line too). */
static char **snapshot(const char *root, int *n)
{
    snap = NULL;
    nsnap = 0;
    snap_root_len = strlen(root);
    ck_assert_int_eq(nftw(root, snap_cb, 16, FTW_PHYS), 0);
    qsort(snap, (size_t)nsnap, sizeof *snap, cmpstr);
    *n = nsnap;
    return snap;
}

static void free_snapshot(char **s, int n)
{
    for (int i = 0; i < n; i++) free(s[i]);
    free(s);
}

START_TEST(test_dataset_not_modified)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path("ro"), VT_TASK_CLASSIFY,
                                       "classes=2 train=5 val=2 imgsz=16 seed=9"), VT_OK);
    write_corrupt_png(vt_test_path("ro/train/circle/zz_broken.png"));
    write_truncated_jpeg(vt_test_path("ro/val/square/cut.jpg"));
    vt_test_write_text(vt_test_path("ro/train/notes.txt"), "user notes");
    write_png(vt_test_path("ro/test/circle/t.png"), 16, 1);
    int n0, n1;
    char **before = snapshot(vt_test_path("ro"), &n0);
    ck_assert_msg(n0 > 15, "snapshot of %d entries", n0);
    /* open, train (with validation), validate on test, predict, save the model elsewhere */
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("ro")), VT_OK);
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "epochs=2"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "batch=4"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "workers=2"), VT_OK);
    vt_status st = vt_trainer_run(t);
    ck_assert_msg(st == VT_OK, "training: %s", vt_trainer_last_error(t));
    st = vt_trainer_validate(t, VT_SPLIT_TEST);
    ck_assert_msg(st == VT_OK, "validate on test: %s", vt_trainer_last_error(t));
    float s[2];
    ck_assert_int_eq(vt_model_predict_file(m, vt_test_path("ro/test/circle/t.png"), s, 2), VT_OK);
    ck_assert_int_eq(vt_model_save(m, vt_test_path("model.vtm")), VT_OK);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    char **after = snapshot(vt_test_path("ro"), &n1);
    ck_assert_msg(n1 == n0, "the dataset had %d entries, now %d (files added or removed)", n0, n1);
    for (int i = 0; i < n0; i++)
        ck_assert_msg(strcmp(before[i], after[i]) == 0, "dataset changed:\n  before %s\n  after  %s",
                      before[i], after[i]);
    free_snapshot(before, n0);
    free_snapshot(after, n1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dataset");
    TCase *tc = tcase_create("layout");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_val_names);
    tcase_add_test(tc, test_open_errors);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("training");
    tcase_set_timeout(tt, 60);
    tcase_add_checked_fixture(tt, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tt, test_train_with_bad_images);
    tcase_add_test(tt, test_bad_images_warned_once_per_run);
    tcase_add_test(tt, test_all_images_bad);
    tcase_add_test(tt, test_all_train_images_bad_no_val);
    tcase_add_test(tt, test_dataset_not_modified);
    suite_add_tcase(s, tt);
    return s;
}

int main(void) { return vt_test_run(suite()); }
