/* The buffer rule of the public header ("Buffers"), held against every call that fills a
 * caller's buffer: a size query answers VT_OK with the size, a buffer of exactly that size is
 * filled and nothing past it touched, one element less is VT_ERR_BUFFER_TOO_SMALL with the
 * buffer left as it was (text: "") and a message naming the call, the size and the capacity,
 * and a NULL buffer with a capacity is VT_ERR_INVALID_ARGUMENT.  A call added to the API that
 * fills a buffer gets a line in `calls` below. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "visiontrain/visiontrain.h"
#include "testutil.h"

#define SENTINEL 0xA5

typedef struct fixture {
    vt_dataset *seg_ds;
    int poly_i, poly_k;        /* a polygon of the segmentation dataset's train split */
    vt_model *cls, *det, *seg, *iseg;
    char image[4096];          /* a 40 x 30 PNG */
    uint8_t pixels[40 * 30 * 3];
    char ckpt[4400];           /* a training checkpoint (weights/last.vtm) */
    vt_estimator *est;
} fixture;

enum { IMG_W = 40, IMG_H = 30 };

/* One call under the rule.  fill() calls it with buf (NULL or not) of `cap` units and returns
 * its status, setting *size from its out-size (calls without one leave it alone).  needed() is
 * the size the result must have, from other calls; 0 where only the call itself can say. */
typedef struct call_case {
    const char *call;
    size_t unit;   /* bytes per unit of capacity */
    int has_size;  /* an out-size, hence a size query */
    int text;      /* a NUL-terminated result, capacity in bytes */
    vt_status (*fill)(fixture *f, void *buf, size_t cap, size_t *size);
    size_t (*needed)(fixture *f);
    /* whether the bytes of buf (of `bytes`) past a result of `needed` units in a capacity of
     * `cap` are all still the sentinel; NULL: those past needed * unit */
    int (*untouched)(const uint8_t *buf, size_t bytes, size_t cap, size_t needed, size_t unit);
} call_case;

/* The index of the first byte of p[0..n) that is not the sentinel, or n. */
static size_t first_changed(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] == SENTINEL) i++;
    return i;
}

static int untouched(const uint8_t *buf, size_t bytes, size_t cap, size_t needed, size_t unit)
{
    (void)cap;
    return first_changed(buf + needed * unit, bytes - needed * unit) == bytes - needed * unit;
}

static vt_status polygon(fixture *f, void *buf, size_t cap, size_t *size)
{
    int n = -1, cls = -1;
    vt_status st = vt_dataset_polygon(f->seg_ds, VT_SPLIT_TRAIN, f->poly_i, f->poly_k, &cls, buf,
                                      (int)cap, &n);
    *size = (size_t)n;
    return st;
}

/* The three arrays of a detection call laid out one after the other in buf: cap classes, cap
 * scores, 4 cap box corners (24 bytes a detection). */
static vt_status detect(fixture *f, void *buf, size_t cap, size_t *size, int pixels)
{
    int n = -1, *classes = buf;
    float *scores = buf ? (float *)(classes + cap) : NULL, *boxes = buf ? scores + cap : NULL;
    vt_status st =
        pixels ? vt_model_detect_pixels(f->det, f->pixels, IMG_W, IMG_H, 3, IMG_W * 3, 0.0f, 0.7f,
                                        20, classes, scores, boxes, (int)cap, &n)
               : vt_model_detect_file(f->det, f->image, 0.0f, 0.7f, 20, classes, scores, boxes,
                                      (int)cap, &n);
    *size = (size_t)n;
    return st;
}
/* ... so the unused ends of all three arrays, and what lies past them, must be untouched. */
static int detect_untouched(const uint8_t *buf, size_t bytes, size_t cap, size_t needed,
                            size_t unit)
{
    (void)unit;
    size_t ends[3][2] = {{4 * needed, 4 * cap},            /* classes */
                         {4 * (cap + needed), 8 * cap},    /* scores */
                         {4 * (2 * cap + 4 * needed), bytes}}; /* boxes and beyond */
    for (int a = 0; a < 3; a++)
        if (first_changed(buf + ends[a][0], ends[a][1] - ends[a][0]) != ends[a][1] - ends[a][0])
            return 0;
    return 1;
}
static vt_status detect_file(fixture *f, void *buf, size_t cap, size_t *size)
{
    return detect(f, buf, cap, size, 0);
}
static vt_status detect_pixels(fixture *f, void *buf, size_t cap, size_t *size)
{
    return detect(f, buf, cap, size, 1);
}

/* The four arrays of an instance call one after the other: cap classes, cap scores, 4 cap box
 * corners, cap masks of the image's size (24 + IMG_W * IMG_H bytes an object). */
enum { MASK_BYTES = IMG_W * IMG_H };
static vt_status instances(fixture *f, void *buf, size_t cap, size_t *size, int pixels)
{
    int n = -1, *classes = buf, w = -1, h = -1;
    float *scores = buf ? (float *)(classes + cap) : NULL, *boxes = buf ? scores + cap : NULL;
    uint8_t *masks = buf ? (uint8_t *)(boxes + 4 * cap) : NULL;
    vt_status st =
        pixels ? vt_model_instances_pixels(f->iseg, f->pixels, IMG_W, IMG_H, 3, IMG_W * 3, 0.0f,
                                           0.7f, 20, classes, scores, boxes, masks, (int)cap, &n)
               : vt_model_instances_file(f->iseg, f->image, 0.0f, 0.7f, 20, &w, &h, classes,
                                         scores, boxes, masks, (int)cap, &n);
    if (!pixels && st != VT_ERR_INVALID_ARGUMENT)
        ck_assert_msg(w == IMG_W && h == IMG_H, "image size %dx%d", w, h);
    *size = (size_t)n;
    return st;
}
static int instances_untouched(const uint8_t *buf, size_t bytes, size_t cap, size_t needed,
                               size_t unit)
{
    (void)unit;
    size_t ends[4][2] = {{4 * needed, 4 * cap},
                         {4 * (cap + needed), 8 * cap},
                         {4 * (2 * cap + 4 * needed), 24 * cap},
                         {24 * cap + MASK_BYTES * needed, bytes}};
    for (int a = 0; a < 4; a++)
        if (first_changed(buf + ends[a][0], ends[a][1] - ends[a][0]) != ends[a][1] - ends[a][0])
            return 0;
    return 1;
}
static vt_status instances_file(fixture *f, void *buf, size_t cap, size_t *size)
{
    return instances(f, buf, cap, size, 0);
}
static vt_status instances_pixels(fixture *f, void *buf, size_t cap, size_t *size)
{
    return instances(f, buf, cap, size, 1);
}

static vt_status image_read(fixture *f, void *buf, size_t cap, size_t *size)
{
    int w = -1, h = -1;
    vt_status st = vt_image_read(f->image, buf, cap, &w, &h);
    *size = (size_t)w * (size_t)h * 3;
    return st;
}

static vt_status segment_file(fixture *f, void *buf, size_t cap, size_t *size)
{
    int w = -1, h = -1;
    vt_status st = vt_model_segment_file(f->seg, f->image, buf, cap, &w, &h);
    *size = (size_t)w * (size_t)h;
    return st;
}
static size_t image_pixels(fixture *f)
{
    (void)f;
    return (size_t)IMG_W * IMG_H;
}

static vt_status checkpoint_args(fixture *f, void *buf, size_t cap, size_t *size)
{
    return vt_checkpoint_args(f->ckpt, buf, cap, size);
}

static vt_status rank(fixture *f, void *buf, size_t cap, size_t *size)
{
    int n = -1;
    vt_status st = vt_estimator_rank(f->est, VT_RANK_COST, buf, (int)cap, &n);
    *size = (size_t)n;
    return st;
}
static size_t catalog_size(fixture *f)
{
    return (size_t)vt_catalog_count(vt_estimator_catalog(f->est));
}

static vt_status predict_file(fixture *f, void *buf, size_t cap, size_t *size)
{
    (void)size;
    return vt_model_predict_file(f->cls, f->image, buf, (int)cap);
}
static vt_status predict_pixels(fixture *f, void *buf, size_t cap, size_t *size)
{
    (void)size;
    return vt_model_predict_pixels(f->cls, f->pixels, IMG_W, IMG_H, 3, IMG_W * 3, buf, (int)cap);
}
static size_t classes(fixture *f) { return (size_t)vt_model_num_classes(f->cls); }

static vt_status class_histogram(fixture *f, void *buf, size_t cap, size_t *size)
{
    (void)size;
    return vt_dataset_class_histogram(f->seg_ds, VT_SPLIT_TRAIN, buf, (int)cap);
}
static size_t dataset_classes(fixture *f) { return (size_t)vt_dataset_num_classes(f->seg_ds); }

static vt_status forward(fixture *f, void *buf, size_t cap, size_t *size)
{
    (void)size;
    static float input[3 * 16 * 16];
    for (size_t i = 0; i < sizeof input / sizeof *input; i++) input[i] = (float)(i % 7) / 7.0f;
    return vt_model_forward(f->cls, input, 1, buf, cap);
}
static size_t forward_floats(fixture *f)
{
    int c, h, w;
    ck_assert_int_eq(vt_model_output_shape(f->cls, &c, &h, &w), VT_OK);
    return (size_t)c * h * w;
}

static const call_case calls[] = {
    {"vt_dataset_polygon", 2 * sizeof(float), 1, 0, polygon, NULL, NULL},
    {"vt_model_detect_file", 6 * 4, 1, 0, detect_file, NULL, detect_untouched},
    {"vt_model_detect_pixels", 6 * 4, 1, 0, detect_pixels, NULL, detect_untouched},
    {"vt_model_instances_file", 6 * 4 + MASK_BYTES, 1, 0, instances_file, NULL,
     instances_untouched},
    {"vt_model_instances_pixels", 6 * 4 + MASK_BYTES, 1, 0, instances_pixels, NULL,
     instances_untouched},
    {"vt_model_segment_file", 1, 1, 0, segment_file, image_pixels, NULL},
    {"vt_image_read", 1, 1, 0, image_read, NULL, NULL},
    {"vt_checkpoint_args", 1, 1, 1, checkpoint_args, NULL, NULL},
    {"vt_estimator_rank", sizeof(int), 1, 0, rank, catalog_size, NULL},
    {"vt_model_predict_file", sizeof(float), 0, 0, predict_file, classes, NULL},
    {"vt_model_predict_pixels", sizeof(float), 0, 0, predict_pixels, classes, NULL},
    {"vt_dataset_class_histogram", sizeof(int64_t), 0, 0, class_histogram, dataset_classes, NULL},
    {"vt_model_forward", sizeof(float), 0, 0, forward, forward_floats, NULL},
};

static void check_message(const call_case *c, size_t needed, size_t cap)
{
    const char *msg = vt_last_error();
    char want_needed[64], want_cap[64];
    snprintf(want_needed, sizeof want_needed, "needs %zu ", needed);
    snprintf(want_cap, sizeof want_cap, "holds %zu", cap);
    ck_assert_msg(strstr(msg, c->call) && strstr(msg, want_needed) && strstr(msg, want_cap),
                  "%s: the message '%s' should name the call, '%s' and '%s'", c->call, msg,
                  want_needed, want_cap);
}

static void check_rule(fixture *f, const call_case *c)
{
    size_t needed = c->needed ? c->needed(f) : 0, size = 12345;
    vt_status st = c->fill(f, NULL, 0, &size);
    if (c->has_size) {
        ck_assert_msg(st == VT_OK, "%s: size query gave %d: %s", c->call, st, vt_last_error());
        if (c->needed)
            ck_assert_msg(size == needed, "%s: size query says %zu, not %zu", c->call, size,
                          needed);
        needed = size;
    } else {
        ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "%s: a NULL buffer of a fixed-size call "
                      "gave %d", c->call, st);
    }
    ck_assert_msg(needed >= 2, "%s: the case needs a result of 2 or more units, not %zu",
                  c->call, needed);

    /* exactly the size, then one unit more: filled, and nothing past the result written */
    size_t bytes = (needed + 2) * c->unit;
    uint8_t *buf = malloc(bytes);
    ck_assert_ptr_nonnull(buf);
    for (size_t cap = needed; cap <= needed + 1; cap++) {
        memset(buf, SENTINEL, bytes);
        size = 12345;
        st = c->fill(f, buf, cap, &size);
        ck_assert_msg(st == VT_OK, "%s: capacity %zu for %zu gave %d: %s", c->call, cap, needed,
                      st, vt_last_error());
        if (c->has_size)
            ck_assert_msg(size == needed, "%s: out-size %zu after a fill of %zu", c->call, size,
                          needed);
        if (c->text)
            ck_assert_msg(strlen((char *)buf) + 1 == needed, "%s: text of %zu bytes, %zu said",
                          c->call, strlen((char *)buf) + 1, needed);
        ck_assert_msg(first_changed(buf, needed * c->unit) < needed * c->unit,
                      "%s: nothing written", c->call);
        ck_assert_msg((c->untouched ? c->untouched : untouched)(buf, bytes, cap, needed, c->unit),
                      "%s: capacity %zu: written past the result", c->call, cap);
    }

    /* one unit less: refused, the buffer as it was ("" for text) */
    memset(buf, SENTINEL, bytes);
    size = 12345;
    st = c->fill(f, buf, needed - 1, &size);
    ck_assert_msg(st == VT_ERR_BUFFER_TOO_SMALL, "%s: capacity %zu for %zu gave %d", c->call,
                  needed - 1, needed, st);
    check_message(c, needed, needed - 1);
    if (c->has_size) ck_assert_msg(size == needed, "%s: out-size %zu after a short buffer, not %zu",
                                   c->call, size, needed);
    size_t from = 0;
    if (c->text) {
        ck_assert_msg(buf[0] == 0, "%s: a short text buffer is not \"\"", c->call);
        from = 1;
    }
    ck_assert_msg(first_changed(buf + from, bytes - from) == bytes - from,
                  "%s: a short buffer was written at byte %zu", c->call,
                  from + first_changed(buf + from, bytes - from));

    /* a capacity and no buffer */
    st = c->fill(f, NULL, needed, &size);
    ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "%s: NULL with capacity %zu gave %d", c->call,
                  needed, st);
    ck_assert_msg(strstr(vt_last_error(), c->call), "%s: message '%s'", c->call, vt_last_error());
    free(buf);
}

static void fixture_setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    /* a segmentation dataset with polygons */
    ck_assert_msg(vt_synth_generate(vt_test_path("seg"), VT_TASK_SEGMENT,
                                    "classes=3 train=4 val=2 imgsz=32 max_objects=3 seed=1") == VT_OK,
                  "%s", vt_last_error());
    ck_assert_msg(vt_dataset_open(&f->seg_ds, VT_TASK_SEGMENT, vt_test_path("seg/data.yaml")) ==
                      VT_OK, "%s", vt_last_error());
    f->poly_i = -1;
    for (int i = 0; i < vt_dataset_num_images(f->seg_ds, VT_SPLIT_TRAIN) && f->poly_i < 0; i++)
        if (vt_dataset_num_polygons(f->seg_ds, VT_SPLIT_TRAIN, i) > 0) f->poly_i = i;
    ck_assert_msg(f->poly_i >= 0, "no polygon in the generated dataset");

    ck_assert_int_eq(vt_model_create(&f->cls, "cls-n", 3, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_model_create(&f->det, "det-n", 3, "imgsz=32"), VT_OK);
    ck_assert_int_eq(vt_model_create(&f->iseg, "iseg-n", 3, "imgsz=32"), VT_OK);
    ck_assert_int_eq(vt_model_create(&f->seg, "seg-n", 4, "imgsz=32"), VT_OK);
    snprintf(f->image, sizeof f->image, "%s", vt_test_path("img.png"));
    vt_test_write_png(f->image, IMG_W, IMG_H, 3);
    for (size_t i = 0; i < sizeof f->pixels; i++) f->pixels[i] = (uint8_t)(i * 37 % 251);

    /* a training checkpoint: one short epoch of a classifier */
    ck_assert_msg(vt_synth_generate(vt_test_path("cls"), VT_TASK_CLASSIFY,
                                    "classes=2 train=2 val=1 imgsz=16") == VT_OK,
                  "%s", vt_last_error());
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("cls")), VT_OK);
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    char kv[4200];
    snprintf(kv, sizeof kv, "project=%s", vt_test_path("runs"));
    const char *settings[] = {kv, "epochs=1", "batch=2", "plots=0", "workers=0", NULL};
    for (const char *const *s = settings; *s; s++)
        ck_assert_msg(vt_trainer_set(t, *s) == VT_OK, "%s: %s", *s, vt_trainer_last_error(t));
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
    snprintf(f->ckpt, sizeof f->ckpt, "%s/weights/last.vtm", vt_trainer_run_dir(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);

    ck_assert_int_eq(vt_estimator_create(&f->est), VT_OK);
    const char *est[] = {"model=cls-n", "imgsz=64", "batch=8", "train=100", "epochs=1", NULL};
    for (const char *const *s = est; *s; s++)
        ck_assert_msg(vt_estimator_set(f->est, *s) == VT_OK, "%s: %s", *s, vt_last_error());
}

static void fixture_teardown(fixture *f)
{
    vt_estimator_destroy(f->est);
    vt_model_destroy(f->cls);
    vt_model_destroy(f->det);
    vt_model_destroy(f->iseg);
    vt_model_destroy(f->seg);
    vt_dataset_destroy(f->seg_ds);
}

START_TEST(test_every_call)
{
    fixture f;
    fixture_setup(&f);
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) check_rule(&f, &calls[i]);
    /* text: a buffer of capacity 0 is too small and gets nothing, not even "" */
    char c = (char)SENTINEL;
    size_t n = 0;
    ck_assert_int_eq(vt_checkpoint_args(f.ckpt, &c, 0, &n), VT_ERR_BUFFER_TOO_SMALL);
    ck_assert_int_eq((uint8_t)c, SENTINEL);
    ck_assert_int_gt(n, 1);
    fixture_teardown(&f);
}
END_TEST

/* The one exception, vt_device_info's name, is truncated rather than refused (tests/test_api.c
 * checks that on a GPU); a capacity without a buffer is still an error, GPU or not. */
START_TEST(test_device_info)
{
    ck_assert_int_eq(vt_device_info(0, NULL, 16, NULL, NULL, NULL, NULL),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "vt_device_info"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("buffers");
    TCase *tc = tcase_create("buffers");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_every_call);
    tcase_add_test(tc, test_device_info);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
