/* Dataset validation (vt_dataset_validate, the report, policies of vt_dataset_open_ex) and the
 * dataset tools (split, subset, clone, histograms, label plot).  Every fixture is written here;
 * every test also checks that the dataset's files are byte-identical afterwards. */
#include <check.h>
#include <dirent.h>
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

/* ---- fixtures --------------------------------------------------------------------------------- */





/* A w x w JPEG cut off after 40% of its bytes (libjpeg then reports a premature end). */
static void write_truncated_jpeg(const char *path, int w)
{
    vt_test_write_jpeg(path, NULL, w, w, 90, 0.4);
}

/* A PNG cut in half: the header is right, the data ends early. */
static void write_corrupt_png(const char *path)
{
    vt_test_write_png(path, 32, 32, 1);
    size_t n;
    unsigned char *b = vt_test_read_file(path, &n);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 41; i < n; i++) b[i] = (unsigned char)(i * 131 + 7); /* after IHDR */
    ck_assert_int_eq(vt_test_write_file(path, b, n), 0);
    free(b);
}

/* A hash of every file under dir (relative paths and contents, in sorted order). */
static void hash_tree_into(const char *dir, size_t skip, uint64_t *h)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    ck_assert_msg(n >= 0, "scandir %s", dir);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        struct stat sb;
        if (ents[i]->d_name[0] == '.' && (!ents[i]->d_name[1] || !strcmp(ents[i]->d_name, "..")))
            goto next;
        ck_assert_int_eq(lstat(path, &sb), 0);
        for (const char *p = path + skip; *p; p++) *h = (*h ^ (unsigned char)*p) * 1099511628211ull;
        if (S_ISDIR(sb.st_mode)) {
            hash_tree_into(path, skip, h);
        } else {
            size_t len;
            unsigned char *b = vt_test_read_file(path, &len);
            ck_assert_ptr_nonnull(b);
            for (size_t k = 0; k < len; k++) *h = (*h ^ b[k]) * 1099511628211ull;
            *h = (*h ^ len) * 1099511628211ull;
            free(b);
        }
    next:
        free(ents[i]);
    }
    free(ents);
}

static uint64_t hash_tree(const char *dir)
{
    uint64_t h = 1469598103934665603ull;
    hash_tree_into(dir, strlen(dir), &h);
    return h;
}

/* The bad detection dataset "bad/": every kind of label and image problem, in known lines. */
static void bad_detect_fixture(const char *yaml)
{
    vt_test_write_png(vt_test_path("bad/images/train/bg.png"), 16, 16, 1);
    write_corrupt_png(vt_test_path("bad/images/train/corrupt.png"));
    vt_test_write_png(vt_test_path("bad/images/train/labels.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("bad/images/train/ok1.png"), 16, 12, 1);
    vt_test_write_png(vt_test_path("bad/images/train/small.png"), 4, 16, 1);
    vt_test_write_text(vt_test_path("bad/images/train/text.jpg"), "this is not an image\n");
    write_truncated_jpeg(vt_test_path("bad/images/train/trunc.jpg"), 48);
    vt_test_mkdirs(vt_test_path("bad/images/val"));
    vt_test_write_text(vt_test_path("bad/labels/train/labels.txt"),
               "0 0.5 0.5 0.2 0.2\n"   /* 1: fine */
               "0 0.5 0.5\n"           /* 2: bad line */
               "7 0.5 0.5 0.1 0.1\n"   /* 3: class out of range */
               "1 1.5 0.5 0.1 0.1\n"   /* 4: coordinate out of range */
               "1 0.5 0.5 0 0.1\n"     /* 5: zero size */
               "0 0.5 0.5 0.2 0.2\n"); /* 6: duplicate of 1 */
    vt_test_write_text(vt_test_path("bad/labels/train/ok1.txt"), "1 0.25 0.5 0.5 0.5\n");
    vt_test_write_text(vt_test_path("bad/data.yaml"), yaml);
}

/* line 4: nc disagrees with names; val is an empty folder */
static const char *const bad_yaml = "# bad\ntrain: images/train\nval: images/val\nnc: 3\n"
                                    "names: [a, b]\n";

typedef struct want {
    const char *file; /* suffix of the file */
    int line, code;
} want;

static void expect_problems(const vt_report *r, const want *w, int n)
{
    int got = vt_report_num_problems(r);
    for (int k = 0; k < got; k++) {
        const char *msg;
        vt_report_problem(r, k, NULL, NULL, NULL, &msg);
        fprintf(stderr, "  problem %d: %s\n", k, msg);
    }
    ck_assert_int_eq(got, n);
    for (int k = 0; k < n; k++) {
        const char *file, *msg;
        int line, code;
        ck_assert_int_eq(vt_report_problem(r, k, &file, &line, &code, &msg), VT_OK);
        size_t fl = strlen(file), wl = strlen(w[k].file);
        ck_assert_msg(fl >= wl && !strcmp(file + fl - wl, w[k].file), "problem %d: file %s, want *%s",
                      k, file, w[k].file);
        ck_assert_msg(line == w[k].line, "problem %d (%s): line %d, want %d", k, msg, line,
                      w[k].line);
        ck_assert_msg(code == w[k].code, "problem %d (%s): code %d (%s), want %d (%s)", k, msg,
                      code, vt_problem_code_name(code), w[k].code, vt_problem_code_name(w[k].code));
        char head[4200];
        if (line) snprintf(head, sizeof head, "%s:%d: ", file, line);
        else snprintf(head, sizeof head, "%s: ", file);
        ck_assert_msg(!strncmp(msg, head, strlen(head)), "problem %d: message '%s' does not start "
                      "with '%s'", k, msg, head);
    }
    ck_assert_int_eq(vt_report_problem(r, n, NULL, NULL, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
}

static vt_report *validate_ok(vt_task task, const char *path, const char *options)
{
    vt_report *r = NULL;
    vt_status st = vt_dataset_validate(&r, task, path, options);
    ck_assert_msg(st == VT_OK, "validate %s: %s", path, vt_last_error());
    ck_assert_ptr_nonnull(r);
    return r;
}

static const want bad_problems[] = {
    {"bad/data.yaml", 4, VT_PROBLEM_CLASS_COUNT},
    {"bad/labels/train/labels.txt", 2, VT_PROBLEM_BAD_LINE},
    {"bad/labels/train/labels.txt", 3, VT_PROBLEM_CLASS_RANGE},
    {"bad/labels/train/labels.txt", 4, VT_PROBLEM_COORD_RANGE},
    {"bad/labels/train/labels.txt", 5, VT_PROBLEM_ZERO_SIZE},
    {"bad/labels/train/labels.txt", 6, VT_PROBLEM_DUPLICATE},
    {"bad/data.yaml", 3, VT_PROBLEM_EMPTY_SPLIT},
    {"bad/images/train/corrupt.png", 0, VT_PROBLEM_CORRUPT_IMAGE},
    {"bad/images/train/small.png", 0, VT_PROBLEM_IMAGE_TOO_SMALL},
    {"bad/images/train/text.jpg", 0, VT_PROBLEM_UNSUPPORTED_FORMAT},
    {"bad/images/train/trunc.jpg", 0, VT_PROBLEM_TRUNCATED_JPEG},
};
#define N_BAD ((int)(sizeof bad_problems / sizeof bad_problems[0]))

/* ---- validation --------------------------------------------------------------------------------- */

START_TEST(test_validate_clean_synth)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("synth"));
    ck_assert_int_eq(vt_synth_generate(root, VT_TASK_DETECT,
                                       "classes=3 train=12 val=5 imgsz=32 seed=3 max_objects=3"),
                     VT_OK);
    uint64_t h0 = hash_tree(root);
    vt_report *r = validate_ok(VT_TASK_DETECT, root, NULL);
    ck_assert_int_eq(vt_report_task(r), VT_TASK_DETECT);
    ck_assert_int_eq(vt_report_num_problems(r), 0);
    ck_assert_int_eq(vt_report_num_classes(r), 3);
    ck_assert_ptr_nonnull(vt_report_class_name(r, 2));
    ck_assert_ptr_null(vt_report_class_name(r, 3));
    /* the summary agrees with the dataset as opened */
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, root), VT_OK);
    for (int s = 0; s < 2; s++) {
        int n = vt_dataset_num_images(ds, (vt_split)s), bg = 0, boxes = 0;
        int64_t per[3] = {0};
        for (int i = 0; i < n; i++) {
            int nb = vt_dataset_num_boxes(ds, (vt_split)s, i);
            bg += nb == 0;
            boxes += nb;
            for (int j = 0; j < nb; j++) {
                int c;
                vt_dataset_box(ds, (vt_split)s, i, j, &c, NULL);
                per[c]++;
            }
        }
        ck_assert_int_eq(n, s == 0 ? 12 : 5);
        ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, (vt_split)s), n);
        ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, (vt_split)s), n);
        ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, (vt_split)s), 0);
        ck_assert_int_eq(vt_report_count(r, VT_COUNT_SKIPPED, (vt_split)s), 0);
        ck_assert_int_eq(vt_report_count(r, VT_COUNT_BACKGROUNDS, (vt_split)s), bg);
        ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, (vt_split)s), boxes);
        ck_assert_int_gt(boxes, 0);
        for (int c = 0; c < 3; c++)
            ck_assert_int_eq(vt_report_class_instances(r, (vt_split)s, c), per[c]);
    }
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TEST), 0);
    ck_assert_int_eq(vt_report_count(r, (vt_count)99, VT_SPLIT_TRAIN), 0);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 3), 0);
    vt_dataset_destroy(ds);
    vt_report_destroy(r);
    vt_report_destroy(NULL);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_validate_every_problem)
{
    bad_detect_fixture(bad_yaml);
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("bad"));
    uint64_t h0 = hash_tree(root);
    vt_report *r = validate_ok(VT_TASK_DETECT, vt_test_path("bad/data.yaml"), NULL);
    expect_problems(r, bad_problems, N_BAD);
    ck_assert_int_eq(vt_report_num_classes(r), 2); /* the names win over nc */
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 7);
    /* corrupt, not an image, truncated; the 4x16 image is a size problem, counted apart */
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 3);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_SIZE, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 3);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_SKIPPED, VT_SPLIT_TRAIN), 0);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_BACKGROUNDS, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 0), 1);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 1), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_VAL), 0);
    /* the problem text names the cause */
    const char *msg;
    vt_report_problem(r, N_BAD - 1, NULL, NULL, NULL, &msg);
    ck_assert_ptr_nonnull(strstr(msg, "truncated JPEG"));
    vt_report_problem(r, N_BAD - 3, NULL, NULL, NULL, &msg);
    ck_assert_ptr_nonnull(strstr(msg, "4x16"));
    vt_report_destroy(r);
    ck_assert_str_eq(vt_problem_code_name(VT_PROBLEM_TRUNCATED_JPEG), "truncated_jpeg");
    ck_assert_str_eq(vt_problem_code_name(99), "unknown");

    /* the same records in the same order whatever the number of decoding threads */
    for (int workers = 0; workers <= 3; workers += 3) {
        char opt[32];
        snprintf(opt, sizeof opt, "workers=%d", workers);
        r = validate_ok(VT_TASK_DETECT, vt_test_path("bad/data.yaml"), opt);
        expect_problems(r, bad_problems, N_BAD);
        vt_report_destroy(r);
    }
    /* min_size */
    r = validate_ok(VT_TASK_DETECT, vt_test_path("bad/data.yaml"), "min_size=3");
    ck_assert_int_eq(vt_report_num_problems(r), N_BAD - 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 3);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_SIZE, VT_SPLIT_TRAIN), 0);
    vt_report_destroy(r);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_validate_policies)
{
    bad_detect_fixture(bad_yaml);
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("bad"));
    uint64_t h0 = hash_tree(root);
    /* skip: the image with label problems is left out, the records are the same */
    vt_report *r = validate_ok(VT_TASK_DETECT, root, "policy=skip");
    expect_problems(r, bad_problems, N_BAD);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 7);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_SKIPPED, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 0), 0);
    vt_report_destroy(r);
    /* fail: the first problem, with file and line */
    r = (vt_report *)&r;
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_DETECT, root, "policy=fail"), VT_ERR_DATASET);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(vt_last_error(), "bad/data.yaml:4: "), "%s", vt_last_error());
    /* option errors */
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_DETECT, root, "policy=maybe"),
                     VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_DETECT, root, "decode=0"),
                     VT_ERR_UNKNOWN_OPTION);
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_DETECT, root, "min_size=0"),
                     VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_dataset_validate(NULL, VT_TASK_DETECT, root, NULL),
                     VT_ERR_INVALID_ARGUMENT);
    /* nothing to validate: the open error */
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_DETECT, vt_test_path("none"), NULL),
                     VT_ERR_NOT_FOUND);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_open_ex_policies)
{
    /* a consistent data.yaml without val: the layout opens, the labels have problems */
    bad_detect_fixture("train: images/train\nnames: [a, b]\n");
    char yaml[4096], root[4096];
    snprintf(yaml, sizeof yaml, "%s", vt_test_path("bad/data.yaml"));
    snprintf(root, sizeof root, "%s", vt_test_path("bad"));
    uint64_t h0 = hash_tree(root);
    vt_dataset *ds;
    /* plain open: unchanged behaviour, and open_ex without options is the same */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, yaml), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 7);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 6);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 2), 1); /* labels.png */
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, NULL), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 7);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 6);
    vt_dataset_destroy(ds);
    /* skip: labels.png is left out */
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "policy=skip"), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_ptr_null(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, i), "labels.png"));
    ck_assert_int_eq(vt_dataset_num_problems(ds), 6);
    vt_dataset_destroy(ds);
    /* fail: the first bad label line */
    ds = (vt_dataset *)&ds;
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "policy=fail"),
                     VT_ERR_DATASET);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strstr(vt_last_error(), "labels/train/labels.txt:2: "), "%s", vt_last_error());
    /* decode=1: the undecodable and too small images are left out too */
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "decode=1 workers=2"), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 3);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 6 + 4);
    ck_assert_ptr_nonnull(strstr(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 2), "ok1.png"));
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 2), 1);
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "decode=1 min_size=2"), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 4);
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "bogus=1"),
                     VT_ERR_UNKNOWN_OPTION);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "policy=x"),
                     VT_ERR_OPTION_VALUE);
    ck_assert_uint_eq(hash_tree(root), h0);
    /* names vs nc: the same warning for opening as for validation; fatal with policy=fail */
    vt_test_write_text(vt_test_path("bad/nc.yaml"), "train: images/train\nnc: 3\nnames: [a, b]\n");
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, vt_test_path("bad/nc.yaml"), NULL),
                     VT_OK);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 2);
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, vt_test_path("bad/nc.yaml"),
                                        "policy=fail"), VT_ERR_DATASET);
}
END_TEST

START_TEST(test_validate_segment_polygons)
{
    vt_test_write_png(vt_test_path("seg/images/train/p.png"), 16, 16, 1);
    vt_test_write_text(vt_test_path("seg/labels/train/p.txt"),
               "0 0.1 0.1 0.5 0.1 0.5 0.5\n" /* 1: triangle */
               "1 0.1 0.1 0.2 0.2\n"         /* 2: two points */
               "0 0.1 0.2 0.3\n"             /* 3: odd coordinates */
               "1 0.1 0.1 0.9 0.1 0.5 0.1\n" /* 4: flat */
               "5 0.1 0.1 0.9 0.1 0.5 0.5\n"); /* 5: class out of range */
    vt_test_write_text(vt_test_path("seg/data.yaml"), "train: images/train\nval: images/train\n"
                                              "names: [a, b]\n");
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("seg"));
    uint64_t h0 = hash_tree(root);
    vt_report *r = validate_ok(VT_TASK_SEGMENT, root, NULL);
    const want w[] = {
        {"seg/labels/train/p.txt", 2, VT_PROBLEM_POLYGON_POINTS},
        {"seg/labels/train/p.txt", 3, VT_PROBLEM_BAD_LINE},
        {"seg/labels/train/p.txt", 4, VT_PROBLEM_ZERO_SIZE},
        {"seg/labels/train/p.txt", 5, VT_PROBLEM_CLASS_RANGE},
        /* val lists the same image: its labels are read again */
        {"seg/labels/train/p.txt", 2, VT_PROBLEM_POLYGON_POINTS},
        {"seg/labels/train/p.txt", 3, VT_PROBLEM_BAD_LINE},
        {"seg/labels/train/p.txt", 4, VT_PROBLEM_ZERO_SIZE},
        {"seg/labels/train/p.txt", 5, VT_PROBLEM_CLASS_RANGE},
    };
    expect_problems(r, w, 8);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_TRAIN), 1);
    /* segmentation classes: 0 is the background, object class k is k + 1 */
    ck_assert_int_eq(vt_report_num_classes(r), 3);
    ck_assert_str_eq(vt_report_class_name(r, 0), "background");
    ck_assert_str_eq(vt_report_class_name(r, 1), "a");
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 0), 0);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 1), 1);
    vt_report_destroy(r);
    /* as a detection dataset the 5-column line is a box, the polygons bad lines */
    r = validate_ok(VT_TASK_DETECT, root, NULL);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 1), 1);
    vt_report_destroy(r);
    /* and opened: the same problems, the good polygon kept */
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, root), VT_OK);
    ck_assert_int_eq(vt_dataset_num_problems(ds), 8);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 1);
    vt_dataset_destroy(ds);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_validate_classification)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("cls"));
    ck_assert_int_eq(vt_synth_generate(root, VT_TASK_CLASSIFY, "classes=2 train=3 val=2 imgsz=16"),
                     VT_OK);
    vt_report *r = validate_ok(VT_TASK_CLASSIFY, root, NULL);
    ck_assert_int_eq(vt_report_num_problems(r), 0);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 6);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_VAL), 4);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 1), 3);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_BACKGROUNDS, VT_SPLIT_TRAIN), 0);
    const char *c0 = vt_report_class_name(r, 0);
    char cls0[64];
    snprintf(cls0, sizeof cls0, "%s", c0);
    vt_report_destroy(r);

    vt_test_write_png(vt_test_path("cls/val/zebra/z.png"), 16, 16, 1);
    vt_test_write_text(vt_test_path("cls/train/%s/zz.png", cls0), "text, not a PNG");
    uint64_t h0 = hash_tree(root);
    r = validate_ok(VT_TASK_CLASSIFY, root, NULL);
    const want w[] = {
        {"cls/val", 0, VT_PROBLEM_CLASS_COUNT},
        {"zz.png", 0, VT_PROBLEM_UNSUPPORTED_FORMAT},
    };
    expect_problems(r, w, 2);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 7);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 6);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 0), 3);
    vt_report_destroy(r);
    ck_assert_uint_eq(hash_tree(root), h0);

    /* no val: a problem (opening records it too) */
    vt_test_rmtree(vt_test_path("cls/val"));
    r = validate_ok(VT_TASK_CLASSIFY, root, NULL);
    const want w2[] = {
        {"cls", 0, VT_PROBLEM_MISSING_SPLIT},
        {"zz.png", 0, VT_PROBLEM_UNSUPPORTED_FORMAT},
    };
    expect_problems(r, w2, 2);
    vt_report_destroy(r);
    /* an empty val/ and an empty class folder */
    vt_test_mkdirs(vt_test_path("cls/val/%s", cls0));
    r = validate_ok(VT_TASK_CLASSIFY, root, "policy=drop");
    const want w3[] = {
        {"", 0, VT_PROBLEM_EMPTY_SPLIT}, /* the class folder */
        {"cls", 0, VT_PROBLEM_EMPTY_SPLIT},
        {"zz.png", 0, VT_PROBLEM_UNSUPPORTED_FORMAT},
    };
    expect_problems(r, w3, 3);
    vt_report_destroy(r);
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_CLASSIFY, root, "policy=fail"),
                     VT_ERR_DATASET);
}
END_TEST

/* Validation and opening with decode=1 under the same options agree: the same problems
 * (code, file, line, message, in order) and the same counts of the splits. */
static void expect_agree(vt_task task, const char *path, const char *options, int want_problem)
{
    char opts[256];
    snprintf(opts, sizeof opts, "decode=1 %s", options ? options : "");
    vt_report *r = validate_ok(task, path, options);
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open_ex(&ds, task, path, opts);
    ck_assert_msg(st == VT_OK, "open %s (%s): %s", path, opts, vt_last_error());
    ck_assert_int_eq(vt_dataset_num_problems(ds), vt_report_num_problems(r));
    int found = 0;
    for (int k = 0; k < vt_report_num_problems(r); k++) {
        const char *f1, *f2, *m1, *m2;
        int l1, l2, c1, c2;
        ck_assert_int_eq(vt_report_problem(r, k, &f1, &l1, &c1, &m1), VT_OK);
        ck_assert_int_eq(vt_dataset_problem(ds, k, &f2, &l2, &c2, &m2), VT_OK);
        ck_assert_str_eq(f1, f2);
        ck_assert_str_eq(m1, m2);
        ck_assert_int_eq(l1, l2);
        ck_assert_int_eq(c1, c2);
        if (c1 == want_problem) found = 1;
    }
    ck_assert_msg(found, "%s: no %s problem", path, vt_problem_code_name(want_problem));
    for (int s = 0; s < 3; s++)
        for (int what = VT_COUNT_IMAGES; what <= 7 /* the size count */; what++)
            ck_assert_msg(vt_report_count(r, (vt_count)what, (vt_split)s) ==
                              vt_dataset_count(ds, (vt_count)what, (vt_split)s),
                          "%s: count %d of split %d: report %lld, dataset %lld", path, what, s,
                          (long long)vt_report_count(r, (vt_count)what, (vt_split)s),
                          (long long)vt_dataset_count(ds, (vt_count)what, (vt_split)s));
    vt_dataset_destroy(ds);
    vt_report_destroy(r);
    /* policy=fail: both refuse */
    snprintf(opts, sizeof opts, "policy=fail");
    ck_assert_int_eq(vt_dataset_validate(&r, task, path, opts), VT_ERR_DATASET);
    snprintf(opts, sizeof opts, "policy=fail decode=1");
    ck_assert_int_eq(vt_dataset_open_ex(&ds, task, path, opts), VT_ERR_DATASET);
}

START_TEST(test_validate_open_agree)
{
    /* detection: nc says 5, names has 3; a bad label line and a 1x1 image */
    char det[4096], cls[4096];
    snprintf(det, sizeof det, "%s", vt_test_path("agree-det"));
    ck_assert_int_eq(vt_synth_generate(det, VT_TASK_DETECT, "classes=3 train=6 val=2 imgsz=32"),
                     VT_OK);
    vt_test_write_text(vt_test_path("agree-det/data.yaml"),
                       "train: images/train\nval: images/val\nnc: 5\nnames: [a, b, c]\n");
    expect_agree(VT_TASK_DETECT, det, NULL, VT_PROBLEM_CLASS_COUNT);
    vt_test_write_png(vt_test_path("agree-det/images/train/tiny.png"), 1, 1, 1);
    vt_test_write_text(vt_test_path("agree-det/labels/train/tiny.txt"), "0 nan 0.5 0.1 0.1\n");
    expect_agree(VT_TASK_DETECT, det, NULL, VT_PROBLEM_IMAGE_TOO_SMALL);
    expect_agree(VT_TASK_DETECT, det, "policy=skip", VT_PROBLEM_COORD_RANGE);
    /* classification: a class folder that links back to train/, and a 1x1 image */
    snprintf(cls, sizeof cls, "%s", vt_test_path("agree-cls"));
    ck_assert_int_eq(vt_synth_generate(cls, VT_TASK_CLASSIFY, "classes=2 train=3 val=2 imgsz=16"),
                     VT_OK);
    ck_assert_int_eq(symlink(".", vt_test_path("agree-cls/train/zloop")), 0);
    expect_agree(VT_TASK_CLASSIFY, cls, NULL, VT_PROBLEM_EMPTY_SPLIT);
    vt_report *r = validate_ok(VT_TASK_CLASSIFY, cls, NULL);
    const char *msg;
    vt_report_problem(r, 0, NULL, NULL, NULL, &msg);
    ck_assert_ptr_nonnull(strstr(msg, "symbolic link back to"));
    vt_report_destroy(r);
    const char *c0 = NULL;
    vt_dataset *ds = NULL;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, cls), VT_OK);
    char tiny[4096];
    c0 = vt_dataset_class_name(ds, 0);
    snprintf(tiny, sizeof tiny, "%s", vt_test_path("agree-cls/train/%s/tiny.png", c0));
    vt_dataset_destroy(ds);
    vt_test_write_png(tiny, 1, 1, 1);
    expect_agree(VT_TASK_CLASSIFY, cls, NULL, VT_PROBLEM_IMAGE_TOO_SMALL);
}
END_TEST

/* ---- tools -------------------------------------------------------------------------------------- */

/* Lines of a text file, malloc'd. */
static char **read_lines(const char *path, int *n)
{
    size_t len;
    char *raw = vt_test_read_file(path, &len);
    ck_assert_msg(raw != NULL, "read %s", path);
    char *b = calloc(len + 1, 1); /* NUL-terminated */
    memcpy(b, raw, len);
    free(raw);
    char **v = calloc(len + 1, sizeof *v);
    *n = 0;
    for (char *save = NULL, *t = strtok_r(b, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
        v[(*n)++] = strdup(t);
    free(b);
    return v;
}

static void free_lines(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static int files_equal(const char *a, const char *b)
{
    size_t na, nb;
    char *x = vt_test_read_file(a, &na), *y = vt_test_read_file(b, &nb);
    int eq = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return eq;
}

static int in_list(char **v, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], s)) return 1;
    return 0;
}

static vt_dataset *synth_detect(const char *root)
{
    ck_assert_int_eq(vt_synth_generate(root, VT_TASK_DETECT,
                                       "classes=3 train=12 val=5 imgsz=32 seed=5 max_objects=3"),
                     VT_OK);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, root), VT_OK);
    return ds;
}

START_TEST(test_split)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("d"));
    vt_dataset *ds = synth_detect(root);
    uint64_t h0 = hash_tree(root);
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s1/out"), "val=0.25 seed=7"), VT_OK);
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s2"), "seed=7 val=0.25"), VT_OK);
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s3"), "val=0.25 seed=8"), VT_OK);
    /* same seed, same lists */
    ck_assert(files_equal(vt_test_path("s1/out/train.txt"), vt_test_path("s2/train.txt")));
    ck_assert(files_equal(vt_test_path("s1/out/val.txt"), vt_test_path("s2/val.txt")));
    ck_assert(!files_equal(vt_test_path("s1/out/val.txt"), vt_test_path("s3/val.txt")));
    int nt, nv;
    char **tr = read_lines(vt_test_path("s1/out/train.txt"), &nt);
    char **va = read_lines(vt_test_path("s1/out/val.txt"), &nv);
    ck_assert_int_eq(nv, 3); /* round(0.25 * 12) */
    ck_assert_int_eq(nt, 9);
    /* union = the original train split, no overlap, absolute paths in the dataset's order */
    for (int i = 0; i < 12; i++) {
        char *abs = realpath(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, i), NULL);
        ck_assert_int_eq(in_list(tr, nt, abs) + in_list(va, nv, abs), 1);
        free(abs);
    }
    for (int i = 1; i < nt; i++) ck_assert_int_lt(strcmp(tr[i - 1], tr[i]), 0);
    ck_assert_int_eq(tr[0][0], '/');
    /* the new data.yaml opens with the lists, the class names and the labels */
    vt_dataset *d2;
    ck_assert_int_eq(vt_dataset_open(&d2, VT_TASK_DETECT, vt_test_path("s1/out")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(d2, VT_SPLIT_TRAIN), 9);
    ck_assert_int_eq(vt_dataset_num_images(d2, VT_SPLIT_VAL), 3);
    ck_assert_int_eq(vt_dataset_num_classes(d2), 3);
    ck_assert_str_eq(vt_dataset_class_name(d2, 2), vt_dataset_class_name(ds, 2));
    ck_assert_int_eq(vt_dataset_num_problems(d2), 0);
    int boxes = 0, boxes2 = 0;
    for (int i = 0; i < 12; i++) boxes += vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < vt_dataset_num_images(d2, (vt_split)s); i++)
            boxes2 += vt_dataset_num_boxes(d2, (vt_split)s, i);
    ck_assert_int_eq(boxes2, boxes);
    vt_dataset_destroy(d2);
    free_lines(tr, nt);
    free_lines(va, nv);
    /* refusals */
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s2"), "val=0.25"), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_split(ds, root, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s4"), "val=0.01"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s4"), "val=1"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_dataset_split(ds, vt_test_path("s4"), "fraction=0.5"),
                     VT_ERR_UNKNOWN_OPTION);
    vt_dataset *cls;
    ck_assert_int_eq(vt_synth_generate(vt_test_path("c"), VT_TASK_CLASSIFY, "classes=2 train=2 val=1 imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_dataset_open(&cls, VT_TASK_CLASSIFY, vt_test_path("c")), VT_OK);
    ck_assert_int_eq(vt_dataset_split(cls, vt_test_path("s5"), NULL), VT_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "ImageFolder"));
    vt_dataset_destroy(cls);
    vt_dataset_destroy(ds);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_subset)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("d"));
    vt_dataset *ds = synth_detect(root);
    uint64_t h0 = hash_tree(root);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("a"), "fraction=0.5 seed=1"), VT_OK);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("b"), "fraction=0.5 seed=1"), VT_OK);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("c"), "count=4 seed=2"), VT_OK);
    ck_assert(files_equal(vt_test_path("a/train.txt"), vt_test_path("b/train.txt")));
    ck_assert(files_equal(vt_test_path("a/val.txt"), vt_test_path("b/val.txt")));
    ck_assert(files_equal(vt_test_path("a/data.yaml"), vt_test_path("b/data.yaml")));
    int n;
    char **v = read_lines(vt_test_path("a/train.txt"), &n);
    ck_assert_int_eq(n, 6);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int j = 0; j < 12; j++) {
            char *abs = realpath(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, j), NULL);
            found += !strcmp(abs, v[i]);
            free(abs);
        }
        ck_assert_int_eq(found, 1);
    }
    free_lines(v, n);
    v = read_lines(vt_test_path("a/val.txt"), &n);
    ck_assert_int_eq(n, 3); /* round(0.5 * 5) */
    free_lines(v, n);
    vt_dataset *d2;
    ck_assert_int_eq(vt_dataset_open(&d2, VT_TASK_DETECT, vt_test_path("c/data.yaml")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(d2, VT_SPLIT_TRAIN), 4);
    ck_assert_int_eq(vt_dataset_num_images(d2, VT_SPLIT_VAL), 4);
    vt_dataset_destroy(d2);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("e"), "count=100"), VT_OK);
    v = read_lines(vt_test_path("e/train.txt"), &n);
    ck_assert_int_eq(n, 12);
    free_lines(v, n);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("f"), "fraction=0.5 count=3"),
                     VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("f"), "seed=1"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_dataset_subset(ds, vt_test_path("a"), "count=1"), VT_ERR_INVALID_ARGUMENT);
    vt_dataset_destroy(ds);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_clone)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("d"));
    vt_dataset *ds = synth_detect(root);
    vt_dataset_destroy(ds);
    uint64_t h0 = hash_tree(root);
    ck_assert_int_eq(vt_dataset_clone(root, vt_test_path("copy/of/d")), VT_OK);
    ck_assert_uint_eq(hash_tree(root), h0);
    ck_assert_uint_eq(hash_tree(vt_test_path("copy/of/d")), h0); /* same names, same bytes */
    /* the copy opens as the original */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, vt_test_path("copy/of/d")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 12);
    vt_dataset_destroy(ds);
    /* an empty destination is fine, a non-empty one is refused */
    vt_test_mkdirs(vt_test_path("empty"));
    ck_assert_int_eq(vt_dataset_clone(root, vt_test_path("empty")), VT_OK);
    ck_assert_int_eq(vt_dataset_clone(root, vt_test_path("copy/of/d")), VT_ERR_INVALID_ARGUMENT);
    ck_assert_uint_eq(hash_tree(vt_test_path("copy/of/d")), h0);
    /* not into itself, nor from nowhere */
    ck_assert_int_eq(vt_dataset_clone(root, vt_test_path("d/inner")), VT_ERR_INVALID_ARGUMENT);
    struct stat sb;
    ck_assert_int_ne(stat(vt_test_path("d/inner"), &sb), 0);
    ck_assert_int_eq(vt_dataset_clone(vt_test_path("nowhere"), vt_test_path("x")), VT_ERR_NOT_FOUND);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

START_TEST(test_statistics)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", vt_test_path("d"));
    vt_dataset *ds = synth_detect(root);
    uint64_t h0 = hash_tree(root);
    int64_t cls[3], bins[10], w[4];
    int boxes = 0;
    for (int i = 0; i < 12; i++) boxes += vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i);
    ck_assert_int_eq(vt_dataset_class_histogram(ds, VT_SPLIT_TRAIN, cls, 3), VT_OK);
    ck_assert_int_eq(cls[0] + cls[1] + cls[2], boxes);
    ck_assert_int_eq(vt_dataset_class_histogram(ds, VT_SPLIT_TRAIN, cls, 2),
                     VT_ERR_BUFFER_TOO_SMALL);
    for (vt_box_measure m = VT_BOX_WIDTH; m <= VT_BOX_SQRT_AREA; m++) {
        ck_assert_int_eq(vt_dataset_box_histogram(ds, VT_SPLIT_TRAIN, m, bins, 10), VT_OK);
        int64_t sum = 0;
        for (int k = 0; k < 10; k++) sum += bins[k];
        ck_assert_int_eq(sum, boxes);
    }
    /* the width histogram matches the boxes */
    ck_assert_int_eq(vt_dataset_box_histogram(ds, VT_SPLIT_TRAIN, VT_BOX_WIDTH, w, 4), VT_OK);
    int64_t want[4] = {0};
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i); j++) {
            float b[4];
            vt_dataset_box(ds, VT_SPLIT_TRAIN, i, j, NULL, b);
            int k = (int)(b[2] * 4);
            want[k > 3 ? 3 : k]++;
        }
    for (int k = 0; k < 4; k++) ck_assert_int_eq(w[k], want[k]);
    ck_assert_int_eq(vt_dataset_box_histogram(ds, VT_SPLIT_TRAIN, VT_BOX_WIDTH, w, 0),
                     VT_ERR_INVALID_ARGUMENT);
    /* the plot is a PNG of the documented size */
    const char *png = vt_test_path("labels.png");
    ck_assert_int_eq(vt_dataset_plot_labels(ds, png), VT_OK);
    vt_image img;
    ck_assert_int_eq(vt_image_load(png, &img), VT_OK);
    ck_assert_int_eq(img.w, 1000);
    ck_assert_int_eq(img.h, 900);
    vt_image_free(&img);
    vt_dataset_destroy(ds);
    /* classification: images per class, no boxes */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("c"), VT_TASK_CLASSIFY,
                                       "classes=3 train=2 val=1 imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("c")), VT_OK);
    ck_assert_int_eq(vt_dataset_class_histogram(ds, VT_SPLIT_VAL, cls, 3), VT_OK);
    ck_assert_int_eq(cls[0] + cls[1] + cls[2], 3);
    ck_assert_int_eq(cls[2], 1);
    ck_assert_int_eq(vt_dataset_box_histogram(ds, VT_SPLIT_TRAIN, VT_BOX_WIDTH, w, 4),
                     VT_ERR_UNSUPPORTED);
    ck_assert_int_eq(vt_dataset_plot_labels(ds, vt_test_path("c.png")), VT_OK);
    vt_dataset_destroy(ds);
    ck_assert_uint_eq(hash_tree(root), h0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("validate");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_validate_clean_synth);
    tcase_add_test(tc, test_validate_every_problem);
    tcase_add_test(tc, test_validate_policies);
    tcase_add_test(tc, test_open_ex_policies);
    tcase_add_test(tc, test_validate_segment_polygons);
    tcase_add_test(tc, test_validate_classification);
    tcase_add_test(tc, test_validate_open_agree);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("tools");
    tcase_add_checked_fixture(tt, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tt, test_split);
    tcase_add_test(tt, test_subset);
    tcase_add_test(tt, test_clone);
    tcase_add_test(tt, test_statistics);
    suite_add_tcase(s, tt);
    return s;
}

int main(void) { return vt_test_run(suite()); }
