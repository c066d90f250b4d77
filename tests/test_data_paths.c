/* Paths of datasets that lead somewhere unexpected, and what the library says about them:
 * data.yaml splits and COCO file_names that resolve outside the dataset folder (outside_root),
 * symbolic link loops and dangling links in YOLO and ImageFolder layouts (symlink_loop,
 * broken_link), the COCO file_name lookup order and its messages, and the size problems that
 * validation counts apart from corrupt files.  Every fixture is built here, in a scratch
 * folder; every test checks that nothing in it was written (names, kinds, sizes, mtimes and
 * link targets compared before and after). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/core.h"
#include "data/detect_data.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

/* The kinds and the count beyond the public enums (lib/data/dataset.h), by value as a caller
 * of the public header sees them. */
enum { OUTSIDE_ROOT = 21, SYMLINK_LOOP = 22, BROKEN_LINK = 23, IMAGE_TOO_LARGE = 24 };
#define COUNT_SIZE VT_COUNT_SIZE

/* snprintf without the truncation warnings: test paths are short. */
static void tfmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tfmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    ck_assert_msg(n >= 0 && (size_t)n < cap, "fixture text too long");
}

/* ---- the tree, before and after ------------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void text_add(text *t, const char *s)
{
    size_t k = strlen(s);
    if (t->n + k + 1 > t->cap) {
        t->cap = (t->n + k + 1) * 2;
        t->s = realloc(t->s, t->cap);
        ck_assert_ptr_nonnull(t->s);
    }
    memcpy(t->s + t->n, s, k + 1);
    t->n += k;
}

/* One line per entry under dir, in name order, links not followed: relative path, kind, size,
 * modification time (ns) and, for a link, its target. */
static void listing_into(const char *dir, size_t skip, text *t)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    ck_assert_msg(n >= 0, "scandir %s", dir);
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        if (strcmp(name, ".") && strcmp(name, "..")) {
            char path[PATH_MAX], line[PATH_MAX * 2 + 128], target[PATH_MAX] = "";
            tfmt(path, sizeof path, "%s/%s", dir, name);
            struct stat sb;
            ck_assert_int_eq(lstat(path, &sb), 0);
            if (S_ISLNK(sb.st_mode)) {
                ssize_t k = readlink(path, target, sizeof target - 1);
                ck_assert_int_ge(k, 0);
                target[k] = 0;
            }
            tfmt(line, sizeof line, "%s %c %lld %lld.%09ld %s\n", path + skip,
                     S_ISDIR(sb.st_mode) ? 'd' : S_ISLNK(sb.st_mode) ? 'l' : 'f',
                     (long long)sb.st_size, (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec,
                     target);
            text_add(t, line);
            if (S_ISDIR(sb.st_mode)) listing_into(path, skip, t);
        }
        free(ents[i]);
    }
    free(ents);
}

static char *listing(void)
{
    text t = {0};
    text_add(&t, "");
    listing_into(vt_test_scratch, strlen(vt_test_scratch), &t);
    return t.s;
}

static void expect_unchanged(char *before)
{
    char *after = listing();
    ck_assert_str_eq(after, before);
    free(after);
    free(before);
}

/* ---- helpers ----------------------------------------------------------------------------------- */

static void link_at(const char *target, const char *path)
{
    vt_test_parent_dirs(path);
    ck_assert_msg(symlink(target, path) == 0, "symlink %s -> %s", path, target);
}

/* The clean absolute form the library prints (see vt_det_abs_path, tested below). */
static const char *abs_of(const char *path)
{
    static char buf[4][PATH_MAX];
    static int k;
    char *a = vt_det_abs_path(path);
    ck_assert_ptr_nonnull(a);
    char *out = buf[k++ % 4];
    tfmt(out, PATH_MAX, "%s", a);
    free(a);
    return out;
}

/* Problem k of a report: code and message. */
static const char *report_problem(const vt_report *r, int k, int *code)
{
    const char *msg;
    ck_assert_int_eq(vt_report_problem(r, k, NULL, NULL, code, &msg), VT_OK);
    return msg;
}

static void dump(const vt_report *r)
{
    for (int k = 0; k < vt_report_num_problems(r); k++) {
        int code;
        const char *msg = report_problem(r, k, &code);
        fprintf(stderr, "  problem %d: %s [%s]\n", k, msg, vt_problem_code_name(code));
    }
}

static vt_report *validate_ok(vt_task task, const char *path, const char *options)
{
    vt_report *r = NULL;
    vt_status st = vt_dataset_validate(&r, task, path, options);
    ck_assert_msg(st == VT_OK, "validate %s: %s", path, vt_last_error());
    dump(r);
    return r;
}

/* The report holds exactly these problems: code and full message, in order. */
typedef struct want {
    int code;
    char msg[2048];
} want;

static void expect_report(const vt_report *r, const want *w, int n)
{
    ck_assert_int_eq(vt_report_num_problems(r), n);
    for (int k = 0; k < n; k++) {
        int code;
        const char *msg = report_problem(r, k, &code);
        ck_assert_msg(code == w[k].code, "problem %d '%s': code %d (%s), want %d (%s)", k, msg,
                      code, vt_problem_code_name(code), w[k].code,
                      vt_problem_code_name(w[k].code));
        ck_assert_str_eq(msg, w[k].msg);
    }
}

/* The opened dataset records the same problems as the report. */
static void expect_open_same(vt_task task, const char *path, const vt_report *r)
{
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, task, path);
    ck_assert_msg(st == VT_OK, "open %s: %s", path, vt_last_error());
    ck_assert_int_eq(vt_dataset_num_problems(ds), vt_report_num_problems(r));
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        const char *m1, *m2;
        int c1, c2;
        vt_dataset_problem(ds, k, NULL, NULL, &c1, &m1);
        vt_report_problem(r, k, NULL, NULL, &c2, &m2);
        ck_assert_int_eq(c1, c2);
        ck_assert_str_eq(m1, m2);
    }
    vt_dataset_destroy(ds);
}

/* ---- the path helpers ------------------------------------------------------------------------- */

START_TEST(test_abs_path)
{
    static const char *const cases[][2] = {
        {"/a/./b/../c//d/", "/a/c/d"}, {"/..", "/"},       {"/", "/"},
        {"/a/b/../../..", "/"},        {"/x/../../etc", "/etc"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_str_eq(abs_of(cases[i][0]), cases[i][1]);
    char cwd[PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_str_eq(abs_of("."), abs_of(cwd));
    ck_assert(vt_det_path_within("/a/b", "/a"));
    ck_assert(vt_det_path_within("/a", "/a"));
    ck_assert(!vt_det_path_within("/ab", "/a"));
    ck_assert(vt_det_path_within("/etc", "/"));
    ck_assert(vt_det_path_may_escape("../x"));
    ck_assert(vt_det_path_may_escape("a/../../x"));
    ck_assert(vt_det_path_may_escape("/abs"));
    ck_assert(!vt_det_path_may_escape("a..b/c.."));
    ck_assert(!vt_det_path_may_escape("images/train"));
    ck_assert_str_eq(vt_problem_code_name(OUTSIDE_ROOT), "outside_root");
    ck_assert_str_eq(vt_problem_code_name(SYMLINK_LOOP), "symlink_loop");
    ck_assert_str_eq(vt_problem_code_name(BROKEN_LINK), "broken_link");
    ck_assert_str_eq(vt_problem_code_name(IMAGE_TOO_LARGE), "image_too_large");
    ck_assert_str_eq(vt_problem_code_name(25), "unknown");
}
END_TEST

/* ---- 1. data.yaml paths outside the dataset folder -------------------------------------------- */

START_TEST(test_yaml_outside_root)
{
    vt_test_write_png(vt_test_path("ds/images/val/v.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("elsewhere/imgs/x.png"), 16, 16, 2);
    vt_test_mkdirs(vt_test_path("empty"));
    char yaml[PATH_MAX];
    tfmt(yaml, sizeof yaml, "%s", vt_test_path("ds/data.yaml"));
    vt_test_write_text(yaml, "names: [a]\ntrain: ../elsewhere/imgs\nval: images/val\n");
    vt_test_write_text(vt_test_path("ds/up.yaml"), "names: [a]\ntrain: ../empty\nval: images/val\n");
    char msg[4096];
    tfmt(msg, sizeof msg, "names: [a]\ntrain: %s\nval: %s\n",
             abs_of(vt_test_path("elsewhere/imgs")), abs_of(vt_test_path("ds/images/val")));
    vt_test_write_text(vt_test_path("ds/abs.yaml"), msg);
    vt_test_write_text(vt_test_path("ds/in.yaml"),
                       "names: [a]\ntrain: images/../images/val\nval: ./images/val\n");
    char *before = listing();

    /* a warning naming the path as written, where it resolves and the dataset folder; the
     * images are still used */
    vt_report *r = validate_ok(VT_TASK_DETECT, yaml, NULL);
    want w[1] = {{OUTSIDE_ROOT, ""}};
    tfmt(w[0].msg, sizeof w[0].msg,
             "%s:2: train: '../elsewhere/imgs' resolves to %s, outside the dataset folder %s; "
             "used anyway", yaml, abs_of(vt_test_path("elsewhere/imgs")), abs_of(vt_test_path("ds")));
    expect_report(r, w, 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 1);
    expect_open_same(VT_TASK_DETECT, yaml, r);
    vt_report_destroy(r);
    /* policy=fail makes it a refusal */
    vt_dataset *ds = (vt_dataset *)&ds;
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, yaml, "policy=fail"), VT_ERR_DATASET);
    ck_assert_ptr_null(ds);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "outside the dataset folder"));

    /* the case: far up, to a folder without images.  Opening fails and its message
     * says where the path went; validation records both */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, vt_test_path("ds/up.yaml")),
                     VT_ERR_DATASET);
    tfmt(msg, sizeof msg, "%s:2: train: no images (.png, .jpg, .jpeg) found ('../empty' "
             "resolves to %s, outside the dataset folder %s)", vt_test_path("ds/up.yaml"),
             abs_of(vt_test_path("empty")), abs_of(vt_test_path("ds")));
    ck_assert_str_eq(vt_last_error(), msg);
    r = validate_ok(VT_TASK_DETECT, vt_test_path("ds/up.yaml"), NULL);
    ck_assert_int_eq(vt_report_num_problems(r), 2);
    int code;
    ck_assert_ptr_nonnull(strstr(report_problem(r, 0, &code), "outside the dataset folder"));
    ck_assert_int_eq(code, OUTSIDE_ROOT);
    ck_assert_ptr_nonnull(strstr(report_problem(r, 1, &code), "train: no images"));
    ck_assert_int_eq(code, VT_PROBLEM_EMPTY_SPLIT);
    vt_report_destroy(r);

    /* an absolute path outside is reported too; one inside is not */
    r = validate_ok(VT_TASK_DETECT, vt_test_path("ds/abs.yaml"), NULL);
    ck_assert_int_eq(vt_report_num_problems(r), 1);
    ck_assert_ptr_nonnull(strstr(report_problem(r, 0, &code), "abs.yaml:2: train: '/"));
    ck_assert_int_eq(code, OUTSIDE_ROOT);
    vt_report_destroy(r);
    /* ".." that stays inside is fine */
    r = validate_ok(VT_TASK_DETECT, vt_test_path("ds/in.yaml"), NULL);
    ck_assert_int_eq(vt_report_num_problems(r), 0);
    vt_report_destroy(r);
    expect_unchanged(before);
}
END_TEST

/* The Ultralytics layout: a data.yaml elsewhere whose `path:` names the dataset, splits relative
 * to it.  `path:` is the dataset folder, so nothing is outside; a split that leaves `path:`
 * is. */
START_TEST(test_yaml_path_key)
{
    vt_test_write_png(vt_test_path("datasets/coco8/images/train/a.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("datasets/coco8/images/val/b.png"), 16, 16, 2);
    vt_test_write_png(vt_test_path("datasets/other/images/c.png"), 16, 16, 3);
    vt_test_write_text(vt_test_path("cfg/coco8.yaml"),
                       "path: ../datasets/coco8\ntrain: images/train\nval: images/val\n"
                       "names:\n  0: person\n");
    vt_test_write_text(vt_test_path("cfg/leave.yaml"),
                       "path: ../datasets/coco8\ntrain: images/train\nval: ../other/images\n"
                       "names:\n  0: person\n");
    char *before = listing();
    vt_report *r = validate_ok(VT_TASK_DETECT, vt_test_path("cfg/coco8.yaml"), NULL);
    ck_assert_int_eq(vt_report_num_problems(r), 0);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 1);
    vt_report_destroy(r);
    r = validate_ok(VT_TASK_DETECT, vt_test_path("cfg/leave.yaml"), NULL);
    want w[1] = {{OUTSIDE_ROOT, ""}};
    tfmt(w[0].msg, sizeof w[0].msg,
             "%s:3: val: '../other/images' resolves to %s, outside the dataset folder %s; used "
             "anyway", vt_test_path("cfg/leave.yaml"),
             abs_of(vt_test_path("datasets/other/images")),
             abs_of(vt_test_path("datasets/coco8")));
    expect_report(r, w, 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_VAL), 1);
    vt_report_destroy(r);
    expect_unchanged(before);
}
END_TEST

/* ---- 2. symbolic link loops and dangling links ---------------------------------------------- */

START_TEST(test_yolo_symlinks)
{
    const char *tr = vt_test_path("y/images/train");
    char train[PATH_MAX];
    tfmt(train, sizeof train, "%s", tr);
    vt_test_write_png(vt_test_path("y/images/train/a.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("y/images/train/b.png"), 16, 16, 2);
    vt_test_write_png(vt_test_path("y/images/val/v.png"), 16, 16, 3);
    link_at("db", vt_test_path("y/images/train/da"));       /* folder-like loop da -> db -> da */
    link_at("da", vt_test_path("y/images/train/db"));
    link_at("missing", vt_test_path("y/images/train/dd"));  /* a dangling folder link */
    link_at("nothere.png", vt_test_path("y/images/train/gone.png"));
    link_at("l2.png", vt_test_path("y/images/train/l1.png")); /* file loop l1 -> l2 -> l1 */
    link_at("l1.png", vt_test_path("y/images/train/l2.png"));
    link_at(".", vt_test_path("y/images/train/self"));       /* back to the split folder */
    link_at("..", vt_test_path("y/images/train/up"));        /* back to images/, above it */
    vt_test_write_text(vt_test_path("y/data.yaml"), "names: [a]\ntrain: images/train\n"
                                                    "val: images/val\n");
    vt_test_write_text(vt_test_path("y/list.txt"), "images/train/a.png\nimages/train/l1.png\n"
                                                   "images/train/gone.png\n");
    vt_test_write_text(vt_test_path("y/list.yaml"), "names: [a]\ntrain: list.txt\n"
                                                    "val: images/val\n");
    char *before = listing();
    char *images_real = realpath(vt_test_path("y/images"), NULL);
    ck_assert_ptr_nonnull(images_real);
    vt_report *r = validate_ok(VT_TASK_DETECT, vt_test_path("y"), NULL);
    want w[8];
    w[0].code = SYMLINK_LOOP;
    tfmt(w[0].msg, sizeof w[0].msg, "%s/da: symbolic link loop (da -> db -> da); skipped", train);
    w[1].code = SYMLINK_LOOP;
    tfmt(w[1].msg, sizeof w[1].msg, "%s/db: symbolic link loop (db -> da -> db); skipped", train);
    w[2].code = BROKEN_LINK;
    tfmt(w[2].msg, sizeof w[2].msg,
             "%s/dd: symbolic link to 'missing', which does not exist; skipped", train);
    w[3].code = BROKEN_LINK;
    tfmt(w[3].msg, sizeof w[3].msg,
             "%s/gone.png: symbolic link to 'nothere.png', which does not exist; skipped", train);
    w[4].code = SYMLINK_LOOP;
    tfmt(w[4].msg, sizeof w[4].msg,
             "%s/l1.png: symbolic link loop (l1.png -> l2.png -> l1.png); skipped", train);
    w[5].code = SYMLINK_LOOP;
    tfmt(w[5].msg, sizeof w[5].msg,
             "%s/l2.png: symbolic link loop (l2.png -> l1.png -> l2.png); skipped", train);
    w[6].code = SYMLINK_LOOP;
    tfmt(w[6].msg, sizeof w[6].msg,
             "%s/self: folder is a symbolic link back to %s (a loop); not followed", train, train);
    w[7].code = SYMLINK_LOOP;
    tfmt(w[7].msg, sizeof w[7].msg,
             "%s/up: folder is a symbolic link back to %s (a loop); not followed", train,
             images_real);
    expect_report(r, w, 8);
    /* the two real images, once each: nothing was listed through the loops */
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 2);
    expect_open_same(VT_TASK_DETECT, vt_test_path("y"), r);
    vt_report_destroy(r);
    /* the same links named in a .txt list: the link problem at its line */
    r = validate_ok(VT_TASK_DETECT, vt_test_path("y/list.yaml"), NULL);
    want wl[2] = {{SYMLINK_LOOP, ""}, {BROKEN_LINK, ""}};
    tfmt(wl[0].msg, sizeof wl[0].msg, "%s:2: image 'images/train/l1.png': symbolic link loop "
             "(l1.png -> l2.png -> l1.png); skipped", vt_test_path("y/list.txt"));
    tfmt(wl[1].msg, sizeof wl[1].msg, "%s:3: image 'images/train/gone.png': symbolic link to "
             "'nothere.png', which does not exist; skipped", vt_test_path("y/list.txt"));
    expect_report(r, wl, 2);
    vt_report_destroy(r);
    /* policy=fail refuses at the first */
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, vt_test_path("y"), "policy=fail"),
                     VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "da: symbolic link loop"));
    free(images_real);
    expect_unchanged(before);
}
END_TEST

START_TEST(test_imagefolder_symlinks)
{
    vt_test_write_png(vt_test_path("c/train/cat/x.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("c/train/dog/y.png"), 16, 16, 2);
    vt_test_write_png(vt_test_path("c/val/cat/v.png"), 16, 16, 3);
    vt_test_write_png(vt_test_path("c/val/dog/w.png"), 16, 16, 4);
    link_at("bird", vt_test_path("c/train/bird"));          /* a class folder linking itself */
    link_at("nowhere", vt_test_path("c/train/fish"));       /* a dangling class folder */
    link_at("nothere.png", vt_test_path("c/train/cat/gone.png"));
    link_at("l2.png", vt_test_path("c/train/cat/l1.png"));
    link_at("l1.png", vt_test_path("c/train/cat/l2.png"));
    link_at("x.png", vt_test_path("c/train/cat/ok.png"));   /* a working link: an image */
    char train[PATH_MAX];
    tfmt(train, sizeof train, "%s", vt_test_path("c/train"));
    char *before = listing();
    vt_report *r = validate_ok(VT_TASK_CLASSIFY, vt_test_path("c"), NULL);
    want w[5];
    w[0].code = SYMLINK_LOOP;
    tfmt(w[0].msg, sizeof w[0].msg, "%s/bird: symbolic link loop (bird -> bird); skipped",
             train);
    w[1].code = BROKEN_LINK;
    tfmt(w[1].msg, sizeof w[1].msg,
             "%s/fish: symbolic link to 'nowhere', which does not exist; skipped", train);
    w[2].code = BROKEN_LINK;
    tfmt(w[2].msg, sizeof w[2].msg,
             "%s/cat/gone.png: symbolic link to 'nothere.png', which does not exist; skipped",
             train);
    w[3].code = SYMLINK_LOOP;
    tfmt(w[3].msg, sizeof w[3].msg,
             "%s/cat/l1.png: symbolic link loop (l1.png -> l2.png -> l1.png); skipped", train);
    w[4].code = SYMLINK_LOOP;
    tfmt(w[4].msg, sizeof w[4].msg,
             "%s/cat/l2.png: symbolic link loop (l2.png -> l1.png -> l2.png); skipped", train);
    expect_report(r, w, 5);
    ck_assert_int_eq(vt_report_num_classes(r), 2);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 3); /* x, ok, y */
    expect_open_same(VT_TASK_CLASSIFY, vt_test_path("c"), r);
    vt_report_destroy(r);
    expect_unchanged(before);
}
END_TEST

/* ---- 3. COCO file_name lookups ------------------------------------------------------------------ */

static void write_coco(const char *path, const char *const *names, int n)
{
    char buf[8192], item[512];
    tfmt(buf, sizeof buf, "{\"images\": [");
    for (int i = 0; i < n; i++) {
        tfmt(item, sizeof item, "%s{\"id\": %d, \"file_name\": \"%s\", \"width\": 16, "
             "\"height\": 16}", i ? ", " : "", i + 1, names[i]);
        strcat(buf, item);
    }
    strcat(buf, "], \"annotations\": [], \"categories\": [{\"id\": 1, \"name\": \"a\"}]}\n");
    vt_test_write_text(path, buf);
}

START_TEST(test_coco_lookup)
{
    vt_test_write_png(vt_test_path("coco_miss/images/a.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("coco_miss/images/b.png"), 16, 16, 2);
    vt_test_write_png(vt_test_path("coco_miss/sub/c.png"), 16, 16, 3);
    vt_test_write_png(vt_test_path("outside/d.png"), 16, 16, 4);
    link_at("l2.png", vt_test_path("coco_miss/images/l1.png"));
    link_at("l1.png", vt_test_path("coco_miss/images/l2.png"));
    char json[PATH_MAX], dir[PATH_MAX];
    tfmt(json, sizeof json, "%s", vt_test_path("coco_miss/coco.json"));
    tfmt(dir, sizeof dir, "%s", vt_test_path("coco_miss"));
    /* the layout: file_name already holds images/; plain names under images/; a path
     * relative to the JSON; one that is missing; one outside; a link loop */
    const char *const names[] = {"images/a.png", "b.png", "sub/c.png", "nope.png",
                                 "../outside/d.png", "l1.png"};
    write_coco(json, names, 6);
    const char *const gone[] = {"zz.png"};
    char json2[PATH_MAX];
    tfmt(json2, sizeof json2, "%s", vt_test_path("coco_miss/none.json"));
    write_coco(json2, gone, 1);
    char *before = listing();
    vt_report *r = validate_ok(VT_TASK_DETECT, json, NULL);
    want w[4];
    w[0].code = VT_PROBLEM_MISSING_IMAGE;
    tfmt(w[0].msg, sizeof w[0].msg,
             "%s: images[3] (id 4) 'nope.png': not found at %s/images/nope.png, %s/nope.png "
             "(file_name is looked up under the images/ folder beside the JSON when there is one, "
             "then beside the JSON); skipped", json, dir, dir);
    w[1].code = OUTSIDE_ROOT;
    tfmt(w[1].msg, sizeof w[1].msg,
             "%s: images[4] (id 5) '../outside/d.png' resolves to %s, outside the dataset folder "
             "%s; used anyway", json, abs_of(vt_test_path("outside/d.png")), abs_of(dir));
    w[2].code = SYMLINK_LOOP;
    tfmt(w[2].msg, sizeof w[2].msg,
             "%s: images[5] (id 6) 'l1.png': %s/images/l1.png is a symbolic link loop "
             "(l1.png -> l2.png -> l1.png); skipped", json, dir);
    w[3].code = VT_PROBLEM_MISSING_SPLIT;
    tfmt(w[3].msg, sizeof w[3].msg, "%s: no val file next to it (the name with 'train' "
             "replaced by 'val'); training runs without validation", json);
    expect_report(r, w, 4);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 4);
    vt_report_destroy(r);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, json), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 4);
    char want_path[PATH_MAX];
    tfmt(want_path, sizeof want_path, "%s/images/a.png", dir);
    ck_assert_str_eq(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 0), want_path);
    tfmt(want_path, sizeof want_path, "%s/sub/c.png", dir);
    ck_assert_str_eq(vt_dataset_image_path(ds, VT_SPLIT_TRAIN, 2), want_path);
    vt_dataset_destroy(ds);

    /* nothing found: opening fails naming the first miss, the paths tried and the rule;
     * validation records it as an empty split and goes on */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, json2), VT_ERR_DATASET);
    char msg[4096];
    tfmt(msg, sizeof msg,
             "%s: no usable images: none of the 1 \"images\" entries was found; the first: "
             "images[0] (id 1) 'zz.png': not found at %s/images/zz.png, %s/zz.png (file_name is "
             "looked up under the images/ folder beside the JSON when there is one, then beside "
             "the JSON)", json2, dir, dir);
    ck_assert_str_eq(vt_last_error(), msg);
    r = validate_ok(VT_TASK_DETECT, json2, NULL);
    ck_assert_int_eq(vt_report_num_problems(r), 3);
    int code;
    report_problem(r, 0, &code);
    ck_assert_int_eq(code, VT_PROBLEM_MISSING_IMAGE);
    ck_assert_ptr_nonnull(strstr(report_problem(r, 1, &code), "none.json: no usable images: "));
    ck_assert_int_eq(code, VT_PROBLEM_EMPTY_SPLIT);
    vt_report_destroy(r);
    expect_unchanged(before);
}
END_TEST

/* COCO's own layout: annotations/instances_*.json beside the image folders. */
START_TEST(test_coco_annotations_folder)
{
    vt_test_write_png(vt_test_path("coco/images/x.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("coco/train2017/y.png"), 16, 16, 2);
    vt_test_write_png(vt_test_path("coco/val2017/z.png"), 16, 16, 3);
    const char *const tr[] = {"x.png", "train2017/y.png", "../val2017/z.png", "w.png"};
    const char *const va[] = {"val2017/z.png"};
    char json[PATH_MAX], root[PATH_MAX];
    tfmt(json, sizeof json, "%s", vt_test_path("coco/annotations/instances_train.json"));
    tfmt(root, sizeof root, "%s", vt_test_path("coco"));
    write_coco(json, tr, 4);
    write_coco(vt_test_path("coco/annotations/instances_val.json"), va, 1);
    char *before = listing();
    vt_report *r = validate_ok(VT_TASK_DETECT, json, NULL);
    /* ../val2017 stays inside the dataset folder (the parent of annotations/): no warning */
    want w[1] = {{VT_PROBLEM_MISSING_IMAGE, ""}};
    tfmt(w[0].msg, sizeof w[0].msg,
             "%s: images[3] (id 4) 'w.png': not found at %s/annotations/w.png, %s/images/w.png, "
             "%s/w.png (file_name is looked up under the images/ folder beside the JSON when "
             "there is one, then beside the JSON, then under images/ beside annotations/ and "
             "beside annotations/); skipped", json, root, root, root);
    expect_report(r, w, 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 3);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_VAL), 1);
    vt_report_destroy(r);
    expect_unchanged(before);
}
END_TEST

/* ---- 4. size problems are not corrupt files --------------------------------------------------- */

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* A valid small PNG whose header then says w x h (with a right CRC). */
static void write_png_header_claiming(const char *path, uint32_t w, uint32_t h)
{
    vt_test_write_png(path, 8, 8, 1);
    size_t n;
    unsigned char *b = vt_test_read_file(path, &n);
    ck_assert_ptr_nonnull(b);
    ck_assert(n > 33 && !memcmp(b + 12, "IHDR", 4));
    put32(b + 16, w);
    put32(b + 20, h);
    put32(b + 29, crc32_of(b + 12, 17));
    ck_assert_int_eq(vt_test_write_file(path, b, n), 0);
    free(b);
}

START_TEST(test_size_counts)
{
    vt_test_write_png(vt_test_path("s/images/train/ok.png"), 16, 16, 1);
    vt_test_write_png(vt_test_path("s/images/train/tiny.png"), 1, 1, 1);
    write_png_header_claiming(vt_test_path("s/images/train/huge.png"), 20000, 20000);
    vt_test_write_text(vt_test_path("s/images/train/text.png"), "not an image\n");
    vt_test_write_png(vt_test_path("s/images/val/v.png"), 16, 16, 2);
    vt_test_write_text(vt_test_path("s/data.yaml"), "names: [a]\ntrain: images/train\n"
                                                    "val: images/val\n");
    char *before = listing();
    vt_report *r = validate_ok(VT_TASK_DETECT, vt_test_path("s"), NULL);
    want w[3];
    w[0].code = IMAGE_TOO_LARGE;
    tfmt(w[0].msg, sizeof w[0].msg, "%s: PNG image too large (20000x20000; at most 32768 "
             "pixels per side and 268435456 pixels in all)", vt_test_path("s/images/train/huge.png"));
    w[1].code = VT_PROBLEM_UNSUPPORTED_FORMAT;
    tfmt(w[1].msg, sizeof w[1].msg, "%s: not a PNG or JPEG image",
             vt_test_path("s/images/train/text.png"));
    w[2].code = VT_PROBLEM_IMAGE_TOO_SMALL;
    tfmt(w[2].msg, sizeof w[2].msg, "%s: 1x1 image, smaller than min_size=10",
             vt_test_path("s/images/train/tiny.png"));
    expect_report(r, w, 3);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 4);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, COUNT_SIZE, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_report_count(r, COUNT_SIZE, VT_SPLIT_VAL), 0);
    ck_assert_int_eq(vt_report_count(r, (vt_count)8, VT_SPLIT_TRAIN), 0);
    vt_report_destroy(r);
    /* opened with decode=1: the same counts */
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_DETECT, vt_test_path("s"), "decode=1"), VT_OK);
    ck_assert_int_eq(vt_dataset_count(ds, VT_COUNT_IMAGES, VT_SPLIT_TRAIN), 4);
    ck_assert_int_eq(vt_dataset_count(ds, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_dataset_count(ds, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_dataset_count(ds, COUNT_SIZE, VT_SPLIT_TRAIN), 2);
    vt_dataset_destroy(ds);
    /* min_size=1: the 1x1 image is usable; the huge one stays a size problem */
    r = validate_ok(VT_TASK_DETECT, vt_test_path("s"), "min_size=1");
    ck_assert_int_eq(vt_report_count(r, COUNT_SIZE, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_CORRUPT, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_USABLE, VT_SPLIT_TRAIN), 2);
    vt_report_destroy(r);
    expect_unchanged(before);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("data_paths");
    TCase *tc = tcase_create("data_paths");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_abs_path);
    tcase_add_test(tc, test_yaml_outside_root);
    tcase_add_test(tc, test_yaml_path_key);
    tcase_add_test(tc, test_yolo_symlinks);
    tcase_add_test(tc, test_imagefolder_symlinks);
    tcase_add_test(tc, test_coco_lookup);
    tcase_add_test(tc, test_coco_annotations_folder);
    tcase_add_test(tc, test_size_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
