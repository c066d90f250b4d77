/* Instance segmentation datasets (VT_TASK_INSTANCE): YOLO-seg lines and COCO polygons, multi-part
 * polygons, uncompressed and compressed RLE all read to the same instances; the RLE decoder and
 * contour tracer on their own; problems (a box without a polygon, bad RLE) recorded with file,
 * line or annotation id under the policies and by validation; the loader's instance-index maps
 * (a YOLO-seg and a COCO copy give the same maps, augmentation keeps boxes and map consistent,
 * mixup brings both images' objects, batches identical whatever the workers and the cache);
 * multi-part labels through augmentation; the synthetic generator; and semantic segmentation
 * reading the same files as before (background class, parts as polygons, RLE refused). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/rle.h"
#include "data/seg_mask.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

/* ---- fixtures ------------------------------------------------------------------------------ */

enum { W = 40, H = 32 };

/* An object in pixel-corner coordinates: up to 3 parts, each written clockwise from its
 * top-left corner (the order the RLE tracer emits), and an optional hole (x0, y0, x1, y1) that
 * only its RLE form has. */
typedef struct obj {
    int id, cls, nparts;
    int n[3];
    int xy[3][16];
    int hole[4];
} obj;

/* Image "a": a cat rectangle, a dog of two parts, an L-shaped dog, a cat square with a hole and
 * a small cat lying on it.  Image "b": one dog. */
static const obj OBJ_A[] = {
    {11, 0, 1, {4}, {{4, 4, 14, 4, 14, 12, 4, 12}}, {0}},
    {12, 1, 2, {4, 4}, {{20, 2, 26, 2, 26, 8, 20, 8}, {30, 2, 36, 2, 36, 8, 30, 8}}, {0}},
    {13, 1, 1, {6}, {{2, 14, 10, 14, 10, 18, 5, 18, 5, 26, 2, 26}}, {0}},
    {14, 0, 1, {4}, {{20, 14, 32, 14, 32, 26, 20, 26}}, {24, 18, 28, 22}},
    {15, 0, 1, {4}, {{22, 15, 27, 15, 27, 19, 22, 19}}, {0}},
};
static const obj OBJ_B[] = {
    {16, 1, 1, {4}, {{8, 8, 30, 8, 30, 24, 8, 24}}, {0}},
};
#define NA ((int)(sizeof OBJ_A / sizeof OBJ_A[0]))
#define NB_ ((int)(sizeof OBJ_B / sizeof OBJ_B[0]))

/* The object's pixels (W x H, 1 inside), its hole cleared. */
static void obj_mask(const obj *o, uint8_t *m)
{
    memset(m, 0, W * H);
    for (int p = 0; p < o->nparts; p++) {
        float f[32];
        for (int k = 0; k < 2 * o->n[p]; k++) f[k] = (float)o->xy[p][k];
        ck_assert_int_eq(vt_seg_rasterize(f, o->n[p], W, H, 1, m), VT_OK);
    }
    for (int y = o->hole[1]; y < o->hole[3]; y++)
        for (int x = o->hole[0]; x < o->hole[2]; x++) m[y * W + x] = 0;
}

/* COCO's uncompressed RLE of a mask: run lengths over column-major pixels, 0s first. */
static int rle_counts(const uint8_t *m, int w, int h, long *cnts)
{
    int n = 0, val = 0;
    long run = 0;
    for (int x = 0; x < w; x++)
        for (int y = 0; y < h; y++) {
            int v = m[y * w + x] != 0;
            if (v != val) {
                cnts[n++] = run;
                run = 0;
                val = v;
            }
            run++;
        }
    cnts[n++] = run;
    return n;
}

/* pycocotools' rleToString, ported as it is. */
static void rle_string(const long *cnts, int m, char *s)
{
    int p = 0;
    for (int i = 0; i < m; i++) {
        long x = cnts[i];
        if (i > 2) x -= cnts[i - 2];
        int more = 1;
        while (more) {
            long c = x & 0x1f;
            x >>= 5;
            more = (c & 0x10) ? x != -1 : x != 0;
            if (more) c |= 0x20;
            c += 48;
            s[p++] = (char)c;
        }
    }
    s[p] = 0;
}

enum { FORM_POLY, FORM_RLE, FORM_RLE_STRING };

/* The "segmentation" of an object in one of the forms, appended to buf. */
static void put_segmentation(char *buf, const obj *o, int form)
{
    char *e = buf + strlen(buf);
    if (form == FORM_POLY) {
        e += sprintf(e, "[");
        for (int p = 0; p < o->nparts; p++) {
            e += sprintf(e, "%s[", p ? ", " : "");
            for (int k = 0; k < 2 * o->n[p]; k++)
                e += sprintf(e, "%s%d", k ? ", " : "", o->xy[p][k]);
            e += sprintf(e, "]");
        }
        sprintf(e, "]");
        return;
    }
    uint8_t m[W * H];
    long cnts[W * H + 1];
    obj_mask(o, m);
    int n = rle_counts(m, W, H, cnts);
    if (form == FORM_RLE) {
        e += sprintf(e, "{\"counts\": [");
        for (int k = 0; k < n; k++) e += sprintf(e, "%s%ld", k ? ", " : "", cnts[k]);
        sprintf(e, "], \"size\": [%d, %d]}", H, W);
    } else {
        char s[8 * (W * H + 1)];
        rle_string(cnts, n, s);
        sprintf(e, "{\"counts\": \"%s\", \"size\": [%d, %d]}", s, H, W);
    }
}

/* A COCO instances file of images a and b (0 images: a only) with the objects in `form`
 * (objects with a hole are written as their outer polygon in FORM_POLY). */
static void write_coco(const char *path, const obj *a, int na, const obj *b, int nb, int form)
{
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    sprintf(buf, "{\"images\": [{\"id\": 1, \"file_name\": \"a.png\", \"width\": %d, \"height\": "
                 "%d}%s], \"categories\": [{\"id\": 7, \"name\": \"cat\"}, {\"id\": 9, \"name\": "
                 "\"dog\"}], \"annotations\": [", W, H,
            nb ? ", {\"id\": 2, \"file_name\": \"b.png\", \"width\": 40, \"height\": 32}" : "");
    for (int im = 0; im < 2; im++)
        for (int i = 0; i < (im ? nb : na); i++) {
            const obj *o = im ? &b[i] : &a[i];
            char *e = buf + strlen(buf);
            sprintf(e, "%s{\"id\": %d, \"image_id\": %d, \"category_id\": %d, \"iscrowd\": 0, "
                       "\"segmentation\": ", im || i ? ", " : "", o->id, im + 1,
                    o->cls ? 9 : 7);
            put_segmentation(buf, o, form);
            strcat(buf, "}");
        }
    strcat(buf, "]}");
    ck_assert_uint_lt(strlen(buf), cap);
    vt_test_write_text(path, buf);
    free(buf);
}

/* The YOLO-seg label lines of single-part objects. */
static void write_yolo_labels(const char *path, const obj *o, int n)
{
    char buf[4096] = "";
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(o[i].nparts, 1);
        char *e = buf + strlen(buf);
        e += sprintf(e, "%d", o[i].cls);
        for (int k = 0; k < o[i].n[0]; k++)
            e += sprintf(e, " %.6f %.6f", o[i].xy[0][2 * k] / (double)W,
                         o[i].xy[0][2 * k + 1] / (double)H);
        strcat(buf, "\n");
    }
    vt_test_write_text(path, buf);
}

static vt_dataset *open_inst(const char *path)
{
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_INSTANCE, path);
    ck_assert_msg(st == VT_OK, "open %s: %s", path, vt_last_error());
    return ds;
}

/* Image i's object j: its parts' points (normalised) as the dataset holds them. */
static int obj_parts(const vt_dataset *ds, vt_split s, int i, int j, const float **xy,
                     int *npts)
{
    const vt_split_list *sl = &ds->split[s];
    int b = sl->box_start[i] + j, q0 = sl->part_start[b], q1 = sl->part_start[b + 1];
    *xy = sl->poly_xy + 2 * (size_t)sl->parts[q0].off;
    *npts = sl->parts[q1 - 1].off + sl->parts[q1 - 1].npts - sl->parts[q0].off;
    return q1 - q0;
}

/* The same images, boxes, classes and parts (point for point) in split s. */
static void expect_same_instances(const vt_dataset *a, const vt_dataset *b, vt_split s,
                                  const char *what)
{
    ck_assert_int_eq(vt_dataset_num_images(a, s), vt_dataset_num_images(b, s));
    for (int i = 0; i < vt_dataset_num_images(a, s); i++) {
        int n = vt_dataset_num_boxes(a, s, i);
        ck_assert_msg(n == vt_dataset_num_boxes(b, s, i), "%s: image %d: %d vs %d objects", what,
                      i, n, vt_dataset_num_boxes(b, s, i));
        ck_assert_int_eq(vt_dataset_num_polygons(a, s, i), vt_dataset_num_polygons(b, s, i));
        for (int j = 0; j < n; j++) {
            int ca, cb;
            float ba[4], bb[4];
            ck_assert_int_eq(vt_dataset_box(a, s, i, j, &ca, ba), VT_OK);
            ck_assert_int_eq(vt_dataset_box(b, s, i, j, &cb, bb), VT_OK);
            ck_assert_msg(ca == cb && !memcmp(ba, bb, sizeof ba),
                          "%s: image %d object %d: box or class differs", what, i, j);
            const float *xa, *xb;
            int na, nb;
            int pa = obj_parts(a, s, i, j, &xa, &na), pb = obj_parts(b, s, i, j, &xb, &nb);
            ck_assert_msg(pa == pb && na == nb, "%s: image %d object %d: %d parts of %d points "
                          "vs %d of %d", what, i, j, pa, na, pb, nb);
            ck_assert_msg(!memcmp(xa, xb, sizeof(float) * 2 * (size_t)na),
                          "%s: image %d object %d: points differ", what, i, j);
        }
    }
}

static int find_problem(const vt_dataset *ds, int code, const char *needle)
{
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        int c;
        const char *msg;
        ck_assert_int_eq(vt_dataset_problem(ds, k, NULL, NULL, &c, &msg), VT_OK);
        if (c == code && (!needle || strstr(msg, needle))) return k;
    }
    return -1;
}

static void dump_problems(const vt_dataset *ds)
{
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        const char *msg;
        vt_dataset_problem(ds, k, NULL, NULL, NULL, &msg);
        fprintf(stderr, "  problem %d: %s\n", k, msg);
    }
}

/* ---- RLE ---------------------------------------------------------------------------------- */

START_TEST(test_rle_decode)
{
    uint8_t m[100];
    char why[200];
    /* pycocotools encodes a full 10x10 mask, counts [0, 100], as "0T3" */
    long full[2] = {0, 100};
    char s[16];
    rle_string(full, 2, s);
    ck_assert_str_eq(s, "0T3");
    ck_assert_int_eq(vt_rle_decode_string("0T3", 10, 10, m, why, sizeof why), VT_OK);
    for (int i = 0; i < 100; i++) ck_assert_int_eq(m[i], 1);
    /* column-major: counts [10, 10, 80] is the second column */
    const int64_t c2[3] = {10, 10, 80};
    ck_assert_int_eq(vt_rle_decode_counts(c2, 3, 10, 10, m, why, sizeof why), VT_OK);
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 10; x++) ck_assert_int_eq(m[y * 10 + x], x == 1);
    /* every mask of the fixtures round-trips through both forms (deltas of the string form
     * negative as well as positive) */
    const obj *all[] = {&OBJ_A[0], &OBJ_A[1], &OBJ_A[2], &OBJ_A[3], &OBJ_A[4], &OBJ_B[0]};
    for (int k = 0; k < 6; k++) {
        uint8_t want[W * H], got[W * H];
        long cnts[W * H + 1];
        int64_t c64[W * H + 1];
        obj_mask(all[k], want);
        int n = rle_counts(want, W, H, cnts);
        for (int i = 0; i < n; i++) c64[i] = cnts[i];
        ck_assert_int_eq(vt_rle_decode_counts(c64, (size_t)n, H, W, got, why, sizeof why), VT_OK);
        ck_assert_msg(!memcmp(want, got, sizeof want), "object %d: counts", k);
        char str[8 * (W * H + 1)];
        rle_string(cnts, n, str);
        ck_assert_int_eq(vt_rle_decode_string(str, H, W, got, why, sizeof why), VT_OK);
        ck_assert_msg(!memcmp(want, got, sizeof want), "object %d: string %s", k, str);
    }
    /* bad ones: the reason is given, no vt_fail */
    const int64_t shortc[2] = {10, 10}, negc[3] = {10, -5, 95}, longc[2] = {50, 51};
    ck_assert_int_eq(vt_rle_decode_counts(shortc, 2, 10, 10, m, why, sizeof why), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(why, "cover 20 of"));
    ck_assert_int_eq(vt_rle_decode_counts(negc, 3, 10, 10, m, why, sizeof why), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(why, "negative"));
    ck_assert_int_eq(vt_rle_decode_counts(longc, 2, 10, 10, m, why, sizeof why), VT_ERR_FORMAT);
    ck_assert_int_eq(vt_rle_decode_string("0T~", 10, 10, m, why, sizeof why), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(why, "'~'"));
    ck_assert_int_eq(vt_rle_decode_string("0T", 10, 10, m, why, sizeof why), VT_ERR_FORMAT);
    ck_assert_int_eq(vt_rle_decode_string("0Td", 10, 10, m, why, sizeof why), VT_ERR_FORMAT);
}
END_TEST

START_TEST(test_rle_contours)
{
    char why[200];
    float *xy;
    int *pn, np;
    /* a 4x3 block at (1, 1) in 6 x 5: one part, its four corners clockwise from top left */
    uint8_t m[30] = {0};
    for (int y = 1; y < 4; y++)
        for (int x = 1; x < 5; x++) m[y * 6 + x] = 1;
    ck_assert_int_eq(vt_rle_contours(m, 6, 5, 1000, &xy, &pn, &np, why, sizeof why), VT_OK);
    ck_assert_int_eq(np, 1);
    ck_assert_int_eq(pn[0], 4);
    const float sq[8] = {1, 1, 5, 1, 5, 4, 1, 4};
    ck_assert(!memcmp(xy, sq, sizeof sq));
    free(xy);
    free(pn);
    /* a hole is filled: the same outline */
    m[2 * 6 + 2] = 0;
    ck_assert_int_eq(vt_rle_contours(m, 6, 5, 1000, &xy, &pn, &np, why, sizeof why), VT_OK);
    ck_assert_int_eq(np, 1);
    ck_assert(pn[0] == 4 && !memcmp(xy, sq, sizeof sq));
    free(xy);
    free(pn);
    /* but a notch open to the outside is kept */
    m[1 * 6 + 2] = 0;
    ck_assert_int_eq(vt_rle_contours(m, 6, 5, 1000, &xy, &pn, &np, why, sizeof why), VT_OK);
    ck_assert_int_eq(np, 1);
    ck_assert_int_eq(pn[0], 8);
    free(xy);
    free(pn);
    /* diagonal neighbours are two parts (4-connected regions), in raster order; rasterised
     * back they are the mask's pixels */
    uint8_t d[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    ck_assert_int_eq(vt_rle_contours(d, 4, 4, 1000, &xy, &pn, &np, why, sizeof why), VT_OK);
    ck_assert_int_eq(np, 3);
    uint8_t back[16] = {0};
    int off = 0;
    for (int k = 0; k < np; k++) {
        ck_assert_int_eq(pn[k], 4);
        ck_assert_int_eq(vt_seg_rasterize(xy + 2 * off, pn[k], 4, 4, 1, back), VT_OK);
        off += pn[k];
    }
    ck_assert(!memcmp(back, d, 16));
    ck_assert(xy[0] == 0 && xy[1] == 0 && xy[8] == 1 && xy[9] == 1);
    free(xy);
    free(pn);
    /* the fixtures: outlines rasterise back to the masks (holes filled) */
    const obj *all[] = {&OBJ_A[0], &OBJ_A[1], &OBJ_A[2], &OBJ_A[3], &OBJ_A[4], &OBJ_B[0]};
    for (int k = 0; k < 6; k++) {
        uint8_t want[W * H], got[W * H] = {0};
        obj o = *all[k];
        memset(o.hole, 0, sizeof o.hole);
        obj_mask(&o, want);
        obj_mask(all[k], got); /* with its hole */
        ck_assert_int_eq(vt_rle_contours(got, W, H, 1000, &xy, &pn, &np, why, sizeof why), VT_OK);
        ck_assert_int_eq(np, o.nparts);
        memset(got, 0, sizeof got);
        off = 0;
        for (int p = 0; p < np; p++) {
            ck_assert_int_eq(pn[p], o.n[p]);
            for (int q = 0; q < 2 * pn[p]; q++)
                ck_assert_msg(xy[2 * off + q] == (float)o.xy[p][q], "object %d part %d point %d", k,
                              p, q / 2);
            ck_assert_int_eq(vt_seg_rasterize(xy + 2 * off, pn[p], W, H, 1, got), VT_OK);
            off += pn[p];
        }
        ck_assert_msg(!memcmp(want, got, sizeof want), "object %d", k);
        free(xy);
        free(pn);
    }
    /* an empty mask has no parts; too many points is refused with the reason */
    uint8_t z[30] = {0};
    ck_assert_int_eq(vt_rle_contours(z, 6, 5, 1000, &xy, &pn, &np, why, sizeof why), VT_OK);
    ck_assert(np == 0 && !xy && !pn);
    ck_assert_int_eq(vt_rle_contours(d, 4, 4, 6, &xy, &pn, &np, why, sizeof why), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(why, "more than 6 points"));
    ck_assert(np == 0 && !xy && !pn);
}
END_TEST

/* ---- reading ------------------------------------------------------------------------------ */

START_TEST(test_task_labels)
{
    const vt_labels *l = vt_task_labels(VT_TASK_INSTANCE);
    ck_assert_ptr_nonnull(l);
    ck_assert(l->boxes && l->instances && !l->masks && !l->image_class);
    const vt_labels *s = vt_task_labels(VT_TASK_SEGMENT);
    ck_assert(s->masks && !s->instances && !s->boxes);
    ck_assert(!vt_task_labels(VT_TASK_DETECT)->instances);
}
END_TEST

START_TEST(test_coco_forms)
{
    const int forms[3] = {FORM_POLY, FORM_RLE, FORM_RLE_STRING};
    vt_dataset *ds[3];
    for (int f = 0; f < 3; f++) {
        vt_test_write_png(vt_test_path("f%d/images/a.png", f), W, H, 1);
        vt_test_write_png(vt_test_path("f%d/images/b.png", f), W, H, 2);
        write_coco(vt_test_path("f%d/instances_train.json", f), OBJ_A, NA, OBJ_B, NB_, forms[f]);
        ds[f] = open_inst(vt_test_path("f%d/instances_train.json", f));
        /* only the missing val file */
        if (vt_dataset_num_problems(ds[f]) != 1) dump_problems(ds[f]);
        ck_assert_int_eq(vt_dataset_num_problems(ds[f]), 1);
        ck_assert_int_ge(find_problem(ds[f], VT_PROBLEM_MISSING_SPLIT, NULL), 0);
    }
    /* classes as detection's: no background */
    ck_assert_int_eq(vt_dataset_num_classes(ds[0]), 2);
    ck_assert_str_eq(vt_dataset_class_name(ds[0], 0), "cat");
    ck_assert_str_eq(vt_dataset_class_name(ds[0], 1), "dog");
    ck_assert_int_eq(vt_dataset_ignore_value(ds[0]), -1);
    /* one object per annotation, the two-part dog one object of two parts */
    ck_assert_int_eq(vt_dataset_num_boxes(ds[0], VT_SPLIT_TRAIN, 0), NA);
    ck_assert_int_eq(vt_dataset_num_polygons(ds[0], VT_SPLIT_TRAIN, 0), NA + 1);
    ck_assert_int_eq(vt_dataset_num_boxes(ds[0], VT_SPLIT_TRAIN, 1), 1);
    const float *xy;
    int np;
    ck_assert_int_eq(obj_parts(ds[0], VT_SPLIT_TRAIN, 0, 1, &xy, &np), 2);
    ck_assert_int_eq(np, 8);
    int cls;
    float b[4];
    ck_assert_int_eq(vt_dataset_box(ds[0], VT_SPLIT_TRAIN, 0, 1, &cls, b), VT_OK);
    ck_assert_int_eq(cls, 1);
    /* the box spans both parts: x 20..36, y 2..8 */
    ck_assert_float_eq_tol(b[0], 28.0f / W, 1e-6f);
    ck_assert_float_eq_tol(b[2], 16.0f / W, 1e-6f);
    ck_assert_float_eq_tol(b[1], 5.0f / H, 1e-6f);
    ck_assert_float_eq_tol(b[3], 6.0f / H, 1e-6f);
    /* the polygon accessor lists the parts (classes unshifted) */
    float pxy[32];
    ck_assert_int_eq(vt_dataset_polygon(ds[0], VT_SPLIT_TRAIN, 0, 2, &cls, pxy, 16, &np), VT_OK);
    ck_assert_int_eq(cls, 1);
    ck_assert_int_eq(np, 4);
    ck_assert_float_eq_tol(pxy[0], 30.0f / W, 1e-6f);
    ck_assert_int_eq(vt_dataset_polygon(ds[0], VT_SPLIT_TRAIN, 0, NA + 1, &cls, pxy, 16, &np),
                     VT_ERR_INVALID_ARGUMENT);
    /* not a semantic dataset: no class mask */
    uint8_t m[W * H];
    ck_assert_int_eq(vt_dataset_mask(ds[0], VT_SPLIT_TRAIN, 0, m, W, H), VT_ERR_UNSUPPORTED);
    /* polygons, RLE counts and RLE strings: the same instances (the hole ignored) */
    expect_same_instances(ds[0], ds[1], VT_SPLIT_TRAIN, "polygons vs RLE");
    expect_same_instances(ds[0], ds[2], VT_SPLIT_TRAIN, "polygons vs compressed RLE");
    for (int f = 0; f < 3; f++) vt_dataset_destroy(ds[f]);
}
END_TEST

/* The single-part objects as YOLO-seg and as COCO polygons. */
static const obj *single_a(int *n)
{
    static obj o[NA];
    int k = 0;
    for (int i = 0; i < NA; i++)
        if (OBJ_A[i].nparts == 1) o[k++] = OBJ_A[i];
    *n = k;
    return o;
}

static void write_single_copies(void)
{
    int n;
    const obj *a = single_a(&n);
    vt_test_write_png(vt_test_path("yolo/images/train/a.png"), W, H, 1);
    vt_test_write_png(vt_test_path("yolo/images/train/b.png"), W, H, 2);
    write_yolo_labels(vt_test_path("yolo/labels/train/a.txt"), a, n);
    write_yolo_labels(vt_test_path("yolo/labels/train/b.txt"), OBJ_B, NB_);
    vt_test_write_text(vt_test_path("yolo/data.yaml"),
                       "train: images/train\nval: images/train\nnames: [cat, dog]\n");
    vt_test_write_png(vt_test_path("coco/images/a.png"), W, H, 1);
    vt_test_write_png(vt_test_path("coco/images/b.png"), W, H, 2);
    write_coco(vt_test_path("coco/instances_train.json"), a, n, OBJ_B, NB_, FORM_RLE);
}

START_TEST(test_yolo_vs_coco)
{
    write_single_copies();
    vt_dataset *y = open_inst(vt_test_path("yolo"));
    vt_dataset *c = open_inst(vt_test_path("coco/instances_train.json"));
    ck_assert_int_eq(vt_dataset_num_problems(y), 0);
    ck_assert_int_eq(vt_dataset_num_classes(y), 2);
    ck_assert_str_eq(vt_dataset_class_name(y, 1), "dog");
    expect_same_instances(y, c, VT_SPLIT_TRAIN, "YOLO-seg vs COCO RLE");
    vt_dataset_destroy(y);
    vt_dataset_destroy(c);
}
END_TEST

START_TEST(test_problems)
{
    /* COCO: a box without a polygon, bad RLEs (sum, character, size), a crowd (skipped), and
     * one good polygon */
    vt_test_write_png(vt_test_path("bad/images/a.png"), W, H, 1);
    vt_test_write_text(
        vt_test_path("bad/instances_train.json"),
        "{\"images\": [{\"id\": 1, \"file_name\": \"a.png\", \"width\": 40, \"height\": 32}],"
        " \"categories\": [{\"id\": 1, \"name\": \"cat\"}],"
        " \"annotations\": ["
        "  {\"id\": 21, \"image_id\": 1, \"category_id\": 1, \"bbox\": [1, 1, 5, 5]},"
        "  {\"id\": 22, \"image_id\": 1, \"category_id\": 1,"
        "   \"segmentation\": {\"counts\": [5, 10], \"size\": [32, 40]}},"
        "  {\"id\": 23, \"image_id\": 1, \"category_id\": 1,"
        "   \"segmentation\": {\"counts\": \"0T~\", \"size\": [32, 40]}},"
        "  {\"id\": 24, \"image_id\": 1, \"category_id\": 1,"
        "   \"segmentation\": {\"counts\": [0, 100], \"size\": [10, 10]}},"
        "  {\"id\": 25, \"image_id\": 1, \"category_id\": 1, \"iscrowd\": 1,"
        "   \"segmentation\": {\"counts\": [0, 1280], \"size\": [32, 40]}},"
        "  {\"id\": 26, \"image_id\": 1, \"category_id\": 1, \"segmentation\": [[]]},"
        "  {\"id\": 27, \"image_id\": 1, \"category_id\": 1, \"segmentation\": [],"
        "   \"bbox\": [2, 2, 4, 4]},"
        "  {\"id\": 28, \"image_id\": 1, \"category_id\": 1,"
        "   \"segmentation\": {\"counts\": [1280], \"size\": [32, 40]}},"
        "  {\"id\": 29, \"image_id\": 1, \"category_id\": 1,"
        "   \"segmentation\": [[4, 4, 14, 4, 14, 12, 4, 12]]}"
        "]}");
    char json[4096]; /* vt_test_path's buffers rotate */
    snprintf(json, sizeof json, "%s", vt_test_path("bad/instances_train.json"));
    vt_dataset *ds = open_inst(json);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 1);
    int k = find_problem(ds, VT_PROBLEM_BAD_ANNOTATION, "annotations[0] (id 21)");
    ck_assert_msg(k >= 0, "no problem for the box without a polygon");
    const char *msg, *file;
    int line;
    vt_dataset_problem(ds, k, &file, &line, NULL, &msg);
    ck_assert_ptr_nonnull(strstr(msg, "without a \"segmentation\""));
    ck_assert_str_eq(file, json);
    ck_assert_int_eq(line, 0);
    k = find_problem(ds, VT_PROBLEM_BAD_ANNOTATION, "annotations[1] (id 22): bad RLE");
    ck_assert_msg(k >= 0, "no problem for RLE counts that do not add up");
    vt_dataset_problem(ds, k, NULL, NULL, NULL, &msg);
    ck_assert_ptr_nonnull(strstr(msg, "cover 15 of the 32 x 40"));
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_BAD_ANNOTATION, "(id 23): bad RLE"), 0);
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_BAD_ANNOTATION, "(id 24): RLE \"size\""), 0);
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_POLYGON_POINTS, "annotations[5]"), 0);
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_BAD_ANNOTATION, "(id 27): a box without"), 0);
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_ZERO_SIZE, "(id 28): RLE mask without a pixel"),
                     0);
    /* nothing about the crowd */
    for (int q = 0; q < vt_dataset_num_problems(ds); q++) {
        vt_dataset_problem(ds, q, NULL, NULL, NULL, &msg);
        ck_assert_msg(!strstr(msg, "id 25"), "crowd reported: %s", msg);
    }
    ck_assert_int_eq(vt_dataset_num_problems(ds), 8); /* + the missing val file */
    vt_dataset_destroy(ds);
    /* the policies: skip leaves the image out, fail stops at the first */
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_INSTANCE, json, "policy=skip"),
                     VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "policy=skip"));
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_INSTANCE, json, "policy=fail"),
                     VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "(id 21)"));
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "policy=fail"));

    /* YOLO-seg: a box line is an object without an outline, with its file and line */
    vt_test_write_png(vt_test_path("y/images/train/a.png"), W, H, 1);
    vt_test_write_png(vt_test_path("y/images/train/b.png"), W, H, 1);
    vt_test_write_text(vt_test_path("y/labels/train/a.txt"),
                       "0 0.5 0.5 0.2 0.2\n0 0.1 0.1 0.3 0.1 0.3 0.3\n");
    vt_test_write_text(vt_test_path("y/labels/train/b.txt"), "0 0.1 0.1 0.3 0.1 0.3 0.3\n");
    vt_test_write_text(vt_test_path("y/data.yaml"), "train: images/train\nnames: [cat]\n");
    ds = open_inst(vt_test_path("y"));
    k = find_problem(ds, VT_PROBLEM_POLYGON_POINTS, "without a polygon");
    ck_assert_int_ge(k, 0);
    vt_dataset_problem(ds, k, &file, &line, NULL, &msg);
    ck_assert_str_eq(file, vt_test_path("y/labels/train/a.txt"));
    ck_assert_int_eq(line, 1);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 1);
    vt_dataset_destroy(ds);
    /* the same file read for detection: a box, and the polygon line is a bad line */
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_DETECT, vt_test_path("y")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 1);
    vt_dataset_destroy(ds);
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_INSTANCE, vt_test_path("y"), "policy=skip"),
                     VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 1);
    ck_assert_int_eq(vt_dataset_count(ds, VT_COUNT_SKIPPED, VT_SPLIT_TRAIN), 1);
    vt_dataset_destroy(ds);

    /* vt check reports them as for the other tasks */
    vt_report *r;
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_INSTANCE, vt_test_path("y"), NULL), VT_OK);
    ck_assert_int_eq(vt_report_task(r), VT_TASK_INSTANCE);
    int found = 0;
    for (int q = 0; q < vt_report_num_problems(r); q++) {
        int code;
        vt_report_problem(r, q, &file, &line, &code, &msg);
        found += code == VT_PROBLEM_POLYGON_POINTS && line == 1 && strstr(msg, "without a polygon");
    }
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_report_class_instances(r, VT_SPLIT_TRAIN, 0), 2);
    vt_report_destroy(r);
    ck_assert_int_eq(vt_dataset_validate(&r, VT_TASK_INSTANCE, json, NULL), VT_OK);
    found = 0;
    for (int q = 0; q < vt_report_num_problems(r); q++) {
        int code;
        vt_report_problem(r, q, NULL, NULL, &code, &msg);
        found += code == VT_PROBLEM_BAD_ANNOTATION && strstr(msg, "(id 22): bad RLE") != NULL;
    }
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(vt_report_count(r, VT_COUNT_INSTANCES, VT_SPLIT_TRAIN), 1);
    vt_report_destroy(r);
}
END_TEST

START_TEST(test_dedupe_and_decode_removal)
{
    /* an exact repeat of an instance is a duplicate; decode=1 removes an unreadable image and
     * its instances, the others keep their parts */
    vt_test_write_png(vt_test_path("d/images/train/a.png"), W, H, 1);
    vt_test_write_text(vt_test_path("d/images/train/b.png"), "not a png");
    vt_test_write_png(vt_test_path("d/images/train/c.png"), W, H, 1);
    const char *tri = "0 0.1 0.1 0.3 0.1 0.3 0.3\n";
    char two[256];
    snprintf(two, sizeof two, "%s%s1 0.5 0.5 0.9 0.5 0.9 0.9 0.5 0.9\n", tri, tri);
    vt_test_write_text(vt_test_path("d/labels/train/a.txt"), two);
    vt_test_write_text(vt_test_path("d/labels/train/b.txt"), tri);
    vt_test_write_text(vt_test_path("d/labels/train/c.txt"), "1 0.5 0.5 0.9 0.5 0.9 0.9\n");
    vt_test_write_text(vt_test_path("d/data.yaml"), "train: images/train\nnames: [a, b]\n");
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open_ex(&ds, VT_TASK_INSTANCE, vt_test_path("d"), "decode=1"),
                     VT_OK);
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_DUPLICATE, "duplicate of line 1"), 0);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 2);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 2);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 2);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 1), 1);
    int cls, np;
    float xy[8];
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 1, &cls, xy, 4, &np), VT_OK);
    ck_assert(cls == 1 && np == 4 && xy[0] == 0.5f);
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 1, 0, &cls, xy, 4, &np), VT_OK);
    ck_assert(cls == 1 && np == 3 && xy[5] == 0.9f);
    const vt_split_list *sl = &ds->split[VT_SPLIT_TRAIN];
    ck_assert_int_eq(sl->part_start[sl->box_start[2]], 3);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_semantic_unchanged)
{
    /* the same COCO file read for semantic segmentation: background added, parts as separate
     * polygons, RLE still refused */
    vt_test_write_png(vt_test_path("f/images/a.png"), W, H, 1);
    vt_test_write_png(vt_test_path("f/images/b.png"), W, H, 2);
    write_coco(vt_test_path("f/instances_train.json"), OBJ_A, 2, OBJ_B, NB_, FORM_POLY);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, vt_test_path("f/instances_train.json")),
                     VT_OK);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "background");
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 3);
    ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, 0), 3);
    int cls;
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 0, 2, &cls, NULL, 0, NULL), VT_OK);
    ck_assert_int_eq(cls, 2);
    ck_assert_ptr_null(ds->split[VT_SPLIT_TRAIN].part_start);
    ck_assert_int_eq(vt_dataset_ignore_value(ds), 255);
    vt_dataset_destroy(ds);
    write_coco(vt_test_path("f/rle_train.json"), OBJ_A, 2, NULL, 0, FORM_RLE);
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, vt_test_path("f/rle_train.json")),
                     VT_OK);
    ck_assert_int_ge(find_problem(ds, VT_PROBLEM_BAD_ANNOTATION,
                                  "annotations[0]: RLE masks are not supported yet"), 0);
    ck_assert_int_eq(vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, 0), 0);
    vt_dataset_destroy(ds);
    /* YOLO-seg read for semantic segmentation: classes shifted by one */
    write_single_copies();
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, vt_test_path("yolo")), VT_OK);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_int_eq(vt_dataset_polygon(ds, VT_SPLIT_TRAIN, 1, 0, &cls, NULL, 0, NULL), VT_OK);
    ck_assert_int_eq(cls, 2);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- augmentation labels ------------------------------------------------------------------ */

START_TEST(test_aug_parts)
{
    vt_aug_labels l, c;
    vt_aug_labels_init(&l);
    vt_aug_labels_init(&c);
    const float xy[] = {0, 0, 10, 0, 10, 10, 0, 10, 20, 0, 30, 0, 30, 10};
    const int parts[2] = {4, 3};
    ck_assert_int_eq(vt_aug_labels_add_box(&l, 5, 1, 1, 2, 2), VT_OK);
    ck_assert_int_eq(vt_aug_labels_add_parts(&l, 3, xy, parts, 2), VT_OK);
    ck_assert_int_eq(vt_aug_labels_add_poly(&l, 4, xy, 3), VT_OK);
    ck_assert(l.box[1].x0 == 0 && l.box[1].x1 == 30 && l.box[1].y1 == 10);
    ck_assert_int_eq(vt_aug_labels_num_parts(&l, 0), 0);
    ck_assert_int_eq(vt_aug_labels_num_parts(&l, 1), 2);
    int n;
    const float *p = vt_aug_labels_part(&l, 1, 1, &n);
    ck_assert(n == 3 && p[0] == 20);
    const int bad[1] = {2};
    ck_assert_int_eq(vt_aug_labels_add_parts(&l, 3, xy, bad, 1), VT_ERR_INVALID_ARGUMENT);
    /* append keeps the parts */
    ck_assert_int_eq(vt_aug_labels_add_poly(&c, 1, xy, 4), VT_OK);
    ck_assert_int_eq(vt_aug_labels_append(&c, &l), VT_OK);
    ck_assert_int_eq(c.n, 4);
    ck_assert_int_eq(vt_aug_labels_num_parts(&c, 2), 2);
    p = vt_aug_labels_part(&c, 2, 1, &n);
    ck_assert(n == 3 && p[0] == 20 && p[5] == 10);
    p = vt_aug_labels_part(&c, 3, 0, &n);
    ck_assert(n == 3 && p[2] == 10);
    /* a clip that cuts off the second part: the object keeps the first, its box that part's */
    const vt_aug_transform id = {{1, 0, 0, 0, 1, 0, 0, 0, 1}, 1.0};
    const float clip[4] = {0, 0, 15, 15};
    ck_assert_int_eq(vt_aug_map_labels(&l, &id, clip, 0), VT_OK);
    ck_assert_int_eq(l.n, 3);
    ck_assert_int_eq(vt_aug_labels_num_parts(&l, 1), 1);
    ck_assert(l.box[1].x1 == 10 && l.box[1].cls == 3);
    /* a shift that brings the second part into view and the first out */
    const vt_aug_transform sh = {{1, 0, -18, 0, 1, 0, 0, 0, 1}, 1.0};
    vt_aug_labels_clear(&l);
    ck_assert_int_eq(vt_aug_labels_add_parts(&l, 3, xy, parts, 2), VT_OK);
    ck_assert_int_eq(vt_aug_map_labels(&l, &sh, clip, 0), VT_OK);
    ck_assert_int_eq(vt_aug_labels_num_parts(&l, 0), 1);
    ck_assert(l.box[0].x0 == 2 && l.box[0].x1 == 12);
    /* flips move every part */
    vt_aug_labels_clear(&l);
    ck_assert_int_eq(vt_aug_labels_add_parts(&l, 3, xy, parts, 2), VT_OK);
    vt_image img = {40, 20, 3, calloc(40 * 20 * 3, 1)};
    vt_aug_fliplr(&img, &l);
    p = vt_aug_labels_part(&l, 0, 1, &n);
    ck_assert(p[0] == 20 && p[2] == 10);
    ck_assert(l.box[0].x0 == 10 && l.box[0].x1 == 40);
    vt_image_free(&img);
    /* the instance map: larger first, so the small object on top; parts share their value */
    vt_aug_labels_clear(&l);
    const float big[] = {0, 0, 16, 0, 16, 16, 0, 16}, small[] = {4, 4, 8, 4, 8, 8, 4, 8};
    ck_assert_int_eq(vt_aug_labels_add_poly(&l, 0, small, 4), VT_OK);
    ck_assert_int_eq(vt_aug_labels_add_poly(&l, 0, big, 4), VT_OK);
    ck_assert_int_eq(vt_aug_labels_add_parts(&l, 1, xy, parts, 2), VT_OK);
    uint16_t map[10 * 5] = {0};
    const int objs[3] = {0, 1, 2};
    ck_assert_int_eq(vt_seg_draw_instance_map(&l, objs, 3, 0.25f, 10, 5, map), VT_OK);
    /* areas 16, 256 and 100 + 50: the big square first, the two-part object over it, the
     * small square last */
    ck_assert_int_eq(map[0], 3);            /* centre (2, 2): the two-part object's square */
    ck_assert_int_eq(map[1 * 10 + 1], 1);   /* (6, 6): the small one on top */
    ck_assert_int_eq(map[3], 2);            /* (14, 2): only the big one */
    ck_assert_int_eq(map[2 * 10 + 1], 2);   /* (6, 10): on the square's bottom edge: outside */
    ck_assert_int_eq(map[5], 3);            /* (22, 2): the triangle's left edge: inside */
    ck_assert_int_eq(map[6], 3);
    ck_assert_int_eq(map[4], 0);            /* (18, 2): nothing */
    vt_aug_labels_free(&l);
    vt_aug_labels_free(&c);
}
END_TEST

/* ---- the loader --------------------------------------------------------------------------- */

typedef struct sample {
    int n;
    vt_det box[64];
    uint16_t *map;
    int mw, mh;
} sample;

typedef struct run {
    int n_ok;
    float *x;
    sample s[16];
} run;

static void run_free(run *r)
{
    free(r->x);
    for (int k = 0; k < 16; k++) free(r->s[k].map);
    memset(r, 0, sizeof *r);
}

/* One batch of `indices`; workers, a cache and prefetch as asked. */
static void load(const vt_dataset *ds, int sz, const vt_aug_params *aug, uint64_t seed,
                 const int *indices, int n, int workers, int cache, int prefetch, run *out)
{
    memset(out, 0, sizeof *out);
    vt_loader_config cfg = {sz, 3, workers, aug, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    vt_loader *L;
    ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg), VT_OK);
    if (cache) ck_assert_int_eq(vt_loader_enable_cache(L, 1 << 26), VT_OK);
    if (prefetch) ck_assert_int_eq(vt_loader_start_prefetch(L, prefetch), VT_OK);
    size_t per = (size_t)3 * sz * sz;
    out->x = malloc(per * n * sizeof(float));
    int32_t lab[16];
    if (prefetch && workers) {
        /* a first batch in flight first, so the one compared comes from a warm ring */
        ck_assert_int_eq(vt_loader_submit(L, indices, n, seed + 1), VT_OK);
        ck_assert_int_eq(vt_loader_submit(L, indices, n, seed), VT_OK);
        const float *x;
        const int32_t *l;
        ck_assert_int_eq(vt_loader_wait(L, &x, &l, &out->n_ok), VT_OK);
        ck_assert_int_eq(vt_loader_wait(L, &x, &l, &out->n_ok), VT_OK);
        memcpy(out->x, x, per * out->n_ok * sizeof(float));
    } else {
        if (cache) /* a first pass fills the cache */
            ck_assert_int_eq(vt_loader_fill(L, indices, n, seed, out->x, lab, &out->n_ok), VT_OK);
        ck_assert_int_eq(vt_loader_fill(L, indices, n, seed, out->x, lab, &out->n_ok), VT_OK);
    }
    for (int k = 0; k < out->n_ok; k++) {
        const vt_det *b;
        int cnt;
        vt_letterbox lb;
        vt_loader_boxes(L, k, &b, &cnt, &lb);
        ck_assert_int_le(cnt, 64);
        out->s[k].n = cnt;
        if (cnt) memcpy(out->s[k].box, b, sizeof *b * (size_t)cnt);
        int mw, mh;
        const uint16_t *m = vt_loader_instances(L, k, &mw, &mh);
        ck_assert_ptr_nonnull(m);
        ck_assert_int_eq(mw, sz / 4);
        ck_assert_int_eq(mh, sz / 4);
        out->s[k].mw = mw;
        out->s[k].mh = mh;
        out->s[k].map = malloc(sizeof *m * (size_t)mw * mh);
        memcpy(out->s[k].map, m, sizeof *m * (size_t)mw * mh);
    }
    int w = 1, h = 1;
    ck_assert_ptr_null(vt_loader_instances(L, out->n_ok, &w, &h));
    ck_assert(w == 0 && h == 0);
    ck_assert_ptr_null(vt_loader_mask(L, 0));
    vt_loader_destroy(L);
}

/* Every map value v lies inside box v - 1 (centres of map pixels scaled back by 4); the boxes
 * with at least one pixel are counted in *painted. */
static void check_consistent(const sample *s, const char *what, int *painted, int *sized)
{
    int seen[64] = {0};
    for (int y = 0; y < s->mh; y++)
        for (int x = 0; x < s->mw; x++) {
            int v = s->map[y * s->mw + x];
            ck_assert_msg(v <= s->n, "%s: map value %d with %d boxes", what, v, s->n);
            if (!v) continue;
            const vt_det *b = &s->box[v - 1];
            float cx = (x + 0.5f) * 4, cy = (y + 0.5f) * 4, e = 1e-3f;
            ck_assert_msg(cx >= b->x0 - e && cx <= b->x1 + e && cy >= b->y0 - e && cy <= b->y1 + e,
                          "%s: pixel (%d, %d) = %d outside its box [%g %g %g %g]", what, x, y, v,
                          b->x0, b->y0, b->x1, b->y1);
            seen[v - 1] = 1;
        }
    for (int j = 0; j < s->n; j++) {
        const vt_det *b = &s->box[j];
        if (b->x1 - b->x0 >= 12 && b->y1 - b->y0 >= 12) {
            (*sized)++;
            *painted += seen[j];
        }
    }
}

static int count_value16(const uint16_t *m, int n, int v)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += m[i] == v;
    return k;
}

START_TEST(test_loader_yolo_coco_maps)
{
    write_single_copies();
    vt_dataset *y = open_inst(vt_test_path("yolo"));
    vt_dataset *c = open_inst(vt_test_path("coco/instances_train.json"));
    const int idx[2] = {0, 1};
    run ry, rc;
    load(y, 64, NULL, 0, idx, 2, 0, 0, 0, &ry);
    load(c, 64, NULL, 0, idx, 2, 2, 0, 0, &rc);
    ck_assert_int_eq(ry.n_ok, 2);
    ck_assert_int_eq(rc.n_ok, 2);
    int painted = 0, sized = 0;
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(ry.s[k].n, rc.s[k].n);
        ck_assert(!memcmp(ry.s[k].box, rc.s[k].box, sizeof(vt_det) * (size_t)ry.s[k].n));
        ck_assert_msg(!memcmp(ry.s[k].map, rc.s[k].map, sizeof(uint16_t) * 16 * 16),
                      "image %d: the YOLO-seg and the COCO maps differ", k);
        check_consistent(&ry.s[k], "validation", &painted, &sized);
    }
    ck_assert_int_eq(ry.s[0].n, 4);
    /* every object has pixels; the small cat (object 3) lies on the square (object 2) */
    for (int v = 1; v <= 4; v++)
        ck_assert_msg(count_value16(ry.s[0].map, 256, v) > 0, "object %d has no pixel", v - 1);
    /* 40x32 letterboxed to 64: scale 1.6, the image 64 x 51 from row 6 (or 7): the small cat,
     * 3 x 2 pixels at (22, 15), is 4.8 x 3.2 input pixels: 1 or 2 map pixels */
    int small = count_value16(ry.s[0].map, 256, 4);
    ck_assert_int_ge(small, 1);
    ck_assert_int_le(small, 4);
    /* the big dog of image b: (8..30) x (8..24) -> x 12.8..48, i.e. map columns 3..11 */
    const uint16_t *mb = ry.s[1].map;
    ck_assert_int_eq(mb[8 * 16 + 2], 0);
    ck_assert_int_eq(mb[8 * 16 + 3], 1);
    ck_assert_int_eq(mb[8 * 16 + 11], 1);
    ck_assert_int_eq(mb[8 * 16 + 12], 0);
    run_free(&ry);
    run_free(&rc);
    /* an imgsz that is not a multiple of 4 is refused for instance maps; boxes alone are fine */
    vt_loader_config cfg = {62, 3, 0, NULL, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    vt_loader *L;
    ck_assert_int_eq(vt_loader_create(&L, y, VT_SPLIT_TRAIN, &cfg), VT_ERR_INVALID_ARGUMENT);
    cfg.sample = VT_SAMPLE_BOXES;
    ck_assert_int_eq(vt_loader_create(&L, y, VT_SPLIT_TRAIN, &cfg), VT_OK);
    vt_loader_destroy(L);
    vt_dataset_destroy(y);
    vt_dataset_destroy(c);
    /* a detection dataset has no outlines for this pipeline */
    vt_dataset *d;
    ck_assert_int_eq(vt_dataset_open(&d, VT_TASK_DETECT, vt_test_path("yolo")), VT_OK);
    cfg.imgsz = 64;
    cfg.sample = VT_SAMPLE_INSTANCES;
    ck_assert_int_eq(vt_loader_create(&L, d, VT_SPLIT_TRAIN, &cfg), VT_ERR_INVALID_ARGUMENT);
    vt_dataset_destroy(d);
}
END_TEST

/* A synthetic instance set of n train images at 128 px. */
static vt_dataset *synth_set(const char *name, int n)
{
    char opts[128];
    snprintf(opts, sizeof opts, "imgsz=128 train=%d val=2 seed=3 max_objects=8", n);
    vt_status st = vt_synth_generate(vt_test_path("%s", name), VT_TASK_INSTANCE, opts);
    ck_assert_msg(st == VT_OK, "synth: %s", vt_last_error());
    return open_inst(vt_test_path("%s", name));
}

START_TEST(test_loader_augmented_consistent)
{
    vt_dataset *ds = synth_set("s", 16);
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    aug.degrees = 15;
    aug.shear = 3;
    aug.mixup = 0.5f;
    aug.flipud = 0.5f;
    int idx[8], painted = 0, sized = 0, boxes = 0;
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < 8; k++) idx[k] = (k * 5 + round * 3) % 16;
        aug.mosaic = round % 3 ? 1.0f : 0.0f;
        run r;
        load(ds, 128, &aug, 100 + (uint64_t)round, idx, 8, 2, 0, 0, &r);
        ck_assert_int_eq(r.n_ok, 8);
        for (int k = 0; k < 8; k++) {
            char what[64];
            snprintf(what, sizeof what, "round %d image %d", round, k);
            check_consistent(&r.s[k], what, &painted, &sized);
            boxes += r.s[k].n;
        }
        run_free(&r);
    }
    ck_assert_int_gt(boxes, 100);
    ck_assert_int_gt(sized, 40);
    ck_assert_msg(painted * 10 >= sized * 9, "%d of %d sizeable boxes have map pixels", painted,
                  sized);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_loader_mixup_both)
{
    /* no geometry: each sample keeps all its objects, so a mixup sample holds its own objects
     * and then all of its partner's, and the partner's are painted too */
    vt_dataset *ds = synth_set("s", 8);
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    aug.mosaic = 0;
    aug.scale = 0;
    aug.translate = 0;
    aug.mixup = 0;
    int idx[4], own_n = 0;
    for (int i = 0, k = 0; i < 8 && k < 4; i++)
        if (vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i) > 0) idx[k++] = i, own_n++;
    ck_assert_int_eq(own_n, 4);
    run a, b;
    load(ds, 128, &aug, 7, idx, 4, 0, 0, 0, &a);
    aug.mixup = 1;
    load(ds, 128, &aug, 7, idx, 4, 0, 0, 0, &b);
    int partner_painted = 0;
    for (int k = 0; k < 4; k++) {
        int extra = b.s[k].n - a.s[k].n, match = 0;
        for (int j = 0; j < 4; j++) match |= extra == a.s[j].n;
        ck_assert_msg(match, "image %d: %d objects, %d without mixup", k, b.s[k].n, a.s[k].n);
        for (int v = a.s[k].n + 1; v <= b.s[k].n; v++)
            partner_painted += count_value16(b.s[k].map, 32 * 32, v) > 0;
        int p = 0, s = 0;
        check_consistent(&b.s[k], "mixup", &p, &s);
    }
    ck_assert_int_gt(partner_painted, 0);
    run_free(&a);
    run_free(&b);
    vt_dataset_destroy(ds);
}
END_TEST

static void expect_same_run(const run *a, const run *b, int sz, const char *what)
{
    ck_assert_int_eq(a->n_ok, b->n_ok);
    ck_assert_msg(!memcmp(a->x, b->x, sizeof(float) * 3 * sz * sz * (size_t)a->n_ok),
                  "%s: pixels differ", what);
    for (int k = 0; k < a->n_ok; k++) {
        ck_assert_msg(a->s[k].n == b->s[k].n, "%s: image %d: box count", what, k);
        ck_assert_msg(!memcmp(a->s[k].box, b->s[k].box, sizeof(vt_det) * (size_t)a->s[k].n),
                      "%s: image %d: boxes", what, k);
        ck_assert_msg(!memcmp(a->s[k].map, b->s[k].map,
                              sizeof(uint16_t) * (size_t)a->s[k].mw * a->s[k].mh),
                      "%s: image %d: instance map", what, k);
    }
}

START_TEST(test_loader_deterministic)
{
    vt_dataset *ds = synth_set("s", 12);
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    aug.mixup = 0.5f;
    aug.degrees = 5;
    const int idx[6] = {3, 0, 7, 11, 5, 2};
    run ref, r;
    load(ds, 128, &aug, 42, idx, 6, 0, 0, 0, &ref);
    const int cfgs[][3] = {{1, 0, 0}, {3, 0, 0}, {2, 1, 0}, {3, 0, 2}, {2, 1, 2}};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        char what[64];
        snprintf(what, sizeof what, "workers %d cache %d prefetch %d", cfgs[c][0], cfgs[c][1],
                 cfgs[c][2]);
        load(ds, 128, &aug, 42, idx, 6, cfgs[c][0], cfgs[c][1], cfgs[c][2], &r);
        expect_same_run(&ref, &r, 128, what);
        run_free(&r);
    }
    /* and validation too */
    run v0, v1;
    load(ds, 128, NULL, 0, idx, 6, 0, 0, 0, &v0);
    load(ds, 128, NULL, 0, idx, 6, 3, 1, 2, &v1);
    expect_same_run(&v0, &v1, 128, "validation");
    int painted = 0, sized = 0;
    for (int k = 0; k < v0.n_ok; k++) check_consistent(&v0.s[k], "validation", &painted, &sized);
    ck_assert_int_eq(painted, sized);
    run_free(&v0);
    run_free(&v1);
    run_free(&ref);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- synthetic data ----------------------------------------------------------------------- */

START_TEST(test_synth_instance)
{
    vt_dataset *ds = synth_set("s", 20);
    struct stat sb;
    ck_assert_int_ne(stat(vt_test_path("s/masks"), &sb), 0); /* no semantic masks */
    ck_assert_int_eq(vt_dataset_num_problems(ds), 0);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 3);
    ck_assert_str_eq(vt_dataset_class_name(ds, 0), "circle");
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 20);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_VAL), 2);
    int multi = 0, overlap = 0, total = 0;
    float amin = 1, amax = 0;
    for (int i = 0; i < 20; i++) {
        int n = vt_dataset_num_boxes(ds, VT_SPLIT_TRAIN, i);
        total += n;
        multi += n >= 2;
        ck_assert_int_eq(vt_dataset_num_polygons(ds, VT_SPLIT_TRAIN, i), n);
        float b[64][4];
        for (int j = 0; j < n && j < 64; j++) {
            int cls;
            ck_assert_int_eq(vt_dataset_box(ds, VT_SPLIT_TRAIN, i, j, &cls, b[j]), VT_OK);
            ck_assert(cls >= 0 && cls < 3);
            float a = b[j][2] * b[j][3];
            amin = a < amin ? a : amin;
            amax = a > amax ? a : amax;
            for (int q = 0; q < j; q++)
                overlap += fabsf(b[j][0] - b[q][0]) * 2 < b[j][2] + b[q][2] &&
                           fabsf(b[j][1] - b[q][1]) * 2 < b[j][3] + b[q][3];
        }
    }
    ck_assert_int_gt(multi, 10);
    ck_assert_int_gt(overlap, 0);
    ck_assert_float_lt(amin * 10, amax);
    size_t ny;
    char *yaml = vt_test_read_file(vt_test_path("s/data.yaml"), &ny);
    ck_assert_ptr_nonnull(yaml);
    ck_assert_ptr_nonnull(memmem(yaml, ny, "instance segmentation", 21));
    free(yaml);
    vt_dataset_destroy(ds);
    /* the same options and seed as the semantic set: the same images and label files */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("sem"), VT_TASK_SEGMENT,
                                       "imgsz=128 train=20 val=2 seed=3 max_objects=8"), VT_OK);
    size_t na, nb;
    void *a = vt_test_read_file(vt_test_path("s/labels/train/00004.txt"), &na);
    void *b = vt_test_read_file(vt_test_path("sem/labels/train/00004.txt"), &nb);
    ck_assert(a && b && na == nb && !memcmp(a, b, na));
    free(a);
    free(b);
    /* options are the detection set's */
    ck_assert_int_eq(vt_synth_generate(vt_test_path("bad"), VT_TASK_INSTANCE, "classes=1"),
                     VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_synth_generate(vt_test_path("s"), VT_TASK_INSTANCE, NULL),
                     VT_ERR_INVALID_ARGUMENT); /* never into an existing dataset */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("instance_data");
    TCase *tr = tcase_create("rle");
    tcase_add_test(tr, test_rle_decode);
    tcase_add_test(tr, test_rle_contours);
    tcase_add_test(tr, test_task_labels);
    tcase_add_test(tr, test_aug_parts);
    suite_add_tcase(s, tr);
    TCase *tc = tcase_create("datasets");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_coco_forms);
    tcase_add_test(tc, test_yolo_vs_coco);
    tcase_add_test(tc, test_problems);
    tcase_add_test(tc, test_dedupe_and_decode_removal);
    tcase_add_test(tc, test_semantic_unchanged);
    tcase_add_test(tc, test_synth_instance);
    suite_add_tcase(s, tc);
    TCase *tl = tcase_create("loader");
    tcase_add_checked_fixture(tl, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tl, 120);
    tcase_add_test(tl, test_loader_yolo_coco_maps);
    tcase_add_test(tl, test_loader_augmented_consistent);
    tcase_add_test(tl, test_loader_mixup_both);
    tcase_add_test(tl, test_loader_deterministic);
    suite_add_tcase(s, tl);
    return s;
}

int main(void) { return vt_test_run(suite()); }
