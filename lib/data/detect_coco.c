/* COCO instances JSON import (json-c): images, annotations with pixel bboxes, categories.
 * Rules (image folder, val sibling, class order) are documented in
 * include/visiontrain/visiontrain.h ("detection datasets").  JSON has no usable line numbers once parsed, so problems
 * name the entry ("annotations[17]") instead; syntax errors carry line and column. */
#include "data/detect_data.h"
#include "data/rle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef VT_HAVE_JSON
#include <json-c/json.h>

typedef struct coco_cat {
    int64_t id;
    char *name;
} coco_cat;

typedef struct coco_img {
    int64_t id;
    int index; /* in the split, or -1 when the image was skipped (problem already recorded) */
    int w, h;
} coco_img;

typedef struct coco_ann {
    int img;   /* split index */
    int entry; /* index in "annotations", for messages */
    vt_det_box box;
    int off, npts; /* segmentation: the polygon's points in the scratch array (npts 0: none) */
    int part0, nparts; /* instance segmentation: its parts' point counts in the part scratch */
} coco_ann;

/* Growable scratch of polygon points (normalised x, y pairs). */
typedef struct pt_buf {
    float *v;
    int n, cap; /* points */
} pt_buf;

static vt_status pt_reserve(pt_buf *b, int more)
{
    if (more > INT32_MAX / 4 - b->n) return vt_fail(VT_ERR_DATASET, "too many polygon points");
    if (b->n + more <= b->cap) return VT_OK;
    int cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more) cap *= 2;
    float *v = vt_realloc(b->v, (size_t)cap * 2 * sizeof *v);
    if (!v) return VT_ERR_OUT_OF_MEMORY;
    b->v = v;
    b->cap = cap;
    return VT_OK;
}

/* Grow the annotation array for one more entry (segmentation: objects may have many parts). */
static vt_status ann_reserve(coco_ann **an, int *cap, int n)
{
    if (n < *cap) return VT_OK;
    if (*cap > INT32_MAX / 4) return vt_fail(VT_ERR_DATASET, "too many annotations");
    int c = *cap ? *cap * 2 : 256;
    coco_ann *p = vt_realloc(*an, (size_t)c * sizeof *p);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    *an = p;
    *cap = c;
    return VT_OK;
}

/* Segmentation: the polygons of annotation i ("segmentation": [[x1, y1, x2, y2, ...], ...] in
 * pixels) as normalised polygons appended to an/pts.  A bad part is recorded and dropped; *bad
 * is set when anything was dropped. */
static vt_status parse_segmentation(vt_dataset *ds, const char *file, int i, json_object *o,
                                    const coco_img *img, int cls, coco_ann **an, int *nann,
                                    int *cap_ann, pt_buf *pts, int *bad)
{
    json_object *seg;
    if (!json_object_object_get_ex(o, "segmentation", &seg) || json_object_is_type(seg, json_type_null)) {
        *bad = 1;
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]: no \"segmentation\"; dropped", i);
    }
    if (json_object_is_type(seg, json_type_object)) {
        *bad = 1;
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]: RLE masks are not supported yet (only polygon "
                                 "segmentations); dropped", i);
    }
    if (!json_object_is_type(seg, json_type_array) || json_object_array_length(seg) == 0) {
        *bad = 1;
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]: \"segmentation\" is not a list of polygons; "
                                 "dropped", i);
    }
    int nparts = (int)json_object_array_length(seg);
    vt_status st = VT_OK;
    for (int p = 0; !st && p < nparts; p++) {
        json_object *poly = json_object_array_get_idx(seg, (size_t)p);
        int nv = json_object_is_type(poly, json_type_array) ? (int)json_object_array_length(poly)
                                                            : -1;
        if (nv < 0 || nv % 2) {
            *bad = 1;
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                   "annotations[%d]: segmentation[%d] is not a list of x, y pixel "
                                   "pairs; dropped", i, p);
            continue;
        }
        if (nv < 6) {
            *bad = 1;
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_POLYGON_POINTS,
                                   "annotations[%d]: segmentation[%d] has %d point%s, at least 3 "
                                   "needed; dropped", i, p, nv / 2, nv == 2 ? "" : "s");
            continue;
        }
        if ((st = pt_reserve(pts, nv / 2))) break;
        float *dst = pts->v + 2 * (size_t)pts->n;
        double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
        int ok = 1, out = 0;
        for (int k = 0; ok && k < nv; k++) {
            json_object *e = json_object_array_get_idx(poly, (size_t)k);
            ok = json_object_is_type(e, json_type_double) || json_object_is_type(e, json_type_int);
            double v = ok ? json_object_get_double(e) : 0, size = k % 2 ? img->h : img->w;
            ok = ok && isfinite(v);
            /* a pixel of slack: outlines traced on pixel corners end at w, or a hair past it */
            if (ok && (v < -1 || v > size + 1)) out = 1;
            v = fmin(fmax(v, 0), size);
            lo[k % 2] = fmin(lo[k % 2], v);
            hi[k % 2] = fmax(hi[k % 2], v);
            dst[k] = (float)(v / size);
        }
        if (!ok || out) {
            *bad = 1;
            st = ok ? vt_ds_problem_add(ds, file, 0, VT_PROBLEM_COORD_RANGE,
                                        "annotations[%d]: segmentation[%d] has points outside the "
                                        "%dx%d image; dropped", i, p, img->w, img->h)
                    : vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                        "annotations[%d]: segmentation[%d] holds a value that is "
                                        "not a number; dropped", i, p);
            continue;
        }
        if (hi[0] <= lo[0] || hi[1] <= lo[1]) {
            *bad = 1;
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_ZERO_SIZE,
                                   "annotations[%d]: segmentation[%d] has zero width or height; "
                                   "dropped", i, p);
            continue;
        }
        if ((st = ann_reserve(an, cap_ann, *nann))) break;
        coco_ann *a = &(*an)[(*nann)++];
        a->img = img->index;
        a->entry = i;
        a->box.cls = cls;
        a->box.cx = (float)((lo[0] + hi[0]) / 2 / img->w);
        a->box.cy = (float)((lo[1] + hi[1]) / 2 / img->h);
        a->box.w = (float)((hi[0] - lo[0]) / img->w);
        a->box.h = (float)((hi[1] - lo[1]) / img->h);
        a->off = pts->n;
        a->npts = nv / 2;
        pts->n += nv / 2;
    }
    return st;
}

/* ---- instance segmentation ------------------------------------------------------------------ */

/* Growable scratch of part point counts (instances: an annotation's parts). */
typedef struct int_buf {
    int *v;
    int n, cap;
} int_buf;

static vt_status int_push(int_buf *b, int x)
{
    if (b->n == b->cap) {
        if (b->cap > INT32_MAX / 4) return vt_fail(VT_ERR_DATASET, "too many polygon parts");
        int cap = b->cap ? b->cap * 2 : 1024;
        int *v = vt_realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) return VT_ERR_OUT_OF_MEMORY;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = x;
    return VT_OK;
}

/* Points of one instance at most (as for a YOLO-seg line), and the largest RLE mask decoded:
 * the decoder's image limit, so a hostile "size" cannot exhaust memory. */
#define MAX_INSTANCE_POINTS 100000
#define MAX_RLE_PIXELS ((int64_t)1 << 28)

/* " (id N)" of an annotation that has an integer id, else "". */
static void ann_id(json_object *o, char *buf, size_t cap)
{
    json_object *x;
    buf[0] = 0;
    if (json_object_object_get_ex(o, "id", &x) && json_object_is_type(x, json_type_int))
        snprintf(buf, cap, " (id %lld)", (long long)json_object_get_int64(x));
}

/* An RLE segmentation {"counts": [...] | "...", "size": [h, w]}: decoded, its outer contours
 * traced (rle.h) and appended to pts / parts as normalised parts.  *nparts counts them (0 when
 * the annotation was dropped, its problem recorded). */
static vt_status parse_rle(vt_dataset *ds, const char *file, int i, const char *id,
                           json_object *seg, const coco_img *img, pt_buf *pts, int_buf *parts,
                           int *nparts)
{
    *nparts = 0;
    json_object *counts, *size;
    int64_t hw[2] = {0, 0};
    int ok = json_object_object_get_ex(seg, "size", &size) &&
             json_object_is_type(size, json_type_array) && json_object_array_length(size) == 2;
    for (int k = 0; ok && k < 2; k++) {
        json_object *e = json_object_array_get_idx(size, (size_t)k);
        ok = json_object_is_type(e, json_type_int);
        if (ok) hw[k] = json_object_get_int64(e);
    }
    ok = ok && json_object_object_get_ex(seg, "counts", &counts) &&
         (json_object_is_type(counts, json_type_array) ||
          json_object_is_type(counts, json_type_string));
    if (!ok)
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]%s: RLE segmentation needs \"counts\" (a list "
                                 "or a string) and \"size\" [height, width]; dropped", i, id);
    if (hw[0] != img->h || hw[1] != img->w)
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]%s: RLE \"size\" [%lld, %lld] is not the "
                                 "image's [height %d, width %d]; dropped", i, id,
                                 (long long)hw[0], (long long)hw[1], img->h, img->w);
    if ((int64_t)img->w * img->h > MAX_RLE_PIXELS)
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]%s: RLE mask of %dx%d pixels is over the limit "
                                 "of 2^28; dropped", i, id, img->w, img->h);
    uint8_t *mask = vt_malloc((size_t)img->w * img->h);
    int64_t *cv = NULL;
    if (!mask) return VT_ERR_OUT_OF_MEMORY;
    char why[200] = "";
    vt_status st = VT_OK, bad = VT_OK;
    if (json_object_is_type(counts, json_type_string)) {
        bad = vt_rle_decode_string(json_object_get_string(counts), img->h, img->w, mask, why,
                                   sizeof why);
    } else {
        size_t n = json_object_array_length(counts);
        cv = vt_malloc((n ? n : 1) * sizeof *cv);
        if (!cv) st = VT_ERR_OUT_OF_MEMORY;
        for (size_t k = 0; !st && !bad && k < n; k++) {
            json_object *e = json_object_array_get_idx(counts, k);
            if (!json_object_is_type(e, json_type_int)) {
                snprintf(why, sizeof why, "counts[%zu] is not an integer", k);
                bad = VT_ERR_FORMAT;
            } else {
                cv[k] = json_object_get_int64(e);
            }
        }
        if (!st && !bad) bad = vt_rle_decode_counts(cv, n, img->h, img->w, mask, why, sizeof why);
    }
    if (bad == VT_ERR_OUT_OF_MEMORY) st = bad;
    float *xy = NULL;
    int *pn = NULL, np = 0;
    if (!st && !bad) {
        bad = vt_rle_contours(mask, img->w, img->h, MAX_INSTANCE_POINTS, &xy, &pn, &np, why,
                              sizeof why);
        if (bad == VT_ERR_OUT_OF_MEMORY) st = bad;
    }
    if (!st && bad)
        st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                               "annotations[%d]%s: bad RLE segmentation: %s; dropped", i, id, why);
    else if (!st && np == 0)
        st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_ZERO_SIZE,
                               "annotations[%d]%s: RLE mask without a pixel; dropped", i, id);
    int total = 0;
    for (int k = 0; k < np; k++) total += pn[k];
    if (!st && np > 0 && !(st = pt_reserve(pts, total))) {
        float *dst = pts->v + 2 * (size_t)pts->n;
        for (int k = 0; k < total; k++) {
            /* as polygons are normalised (in double), so both forms give the same floats */
            dst[2 * k] = (float)((double)xy[2 * k] / img->w);
            dst[2 * k + 1] = (float)((double)xy[2 * k + 1] / img->h);
        }
        for (int k = 0; !st && k < np; k++) st = int_push(parts, pn[k]);
        if (!st) {
            pts->n += total;
            *nparts = np;
        }
    }
    free(mask);
    free(cv);
    free(xy);
    free(pn);
    return st;
}

/* Instance segmentation: annotation i as one object, all of its "segmentation" (polygons
 * [[x1, y1, ...], ...] in pixels, each a part; or an RLE mask, its regions the parts) in one
 * entry of an, its box the bounding box of its parts.  A bad polygon part is recorded and
 * dropped, the others kept; an annotation without any usable outline (no "segmentation", an
 * empty list, a bad RLE) is recorded and dropped.  *bad is set when anything was dropped. */
static vt_status parse_instance(vt_dataset *ds, const char *file, int i, json_object *o,
                                const coco_img *img, int cls, coco_ann **an, int *nann,
                                int *cap_ann, pt_buf *pts, int_buf *parts, int *bad)
{
    char id[40];
    ann_id(o, id, sizeof id);
    json_object *seg;
    if (!json_object_object_get_ex(o, "segmentation", &seg) ||
        json_object_is_type(seg, json_type_null) ||
        (json_object_is_type(seg, json_type_array) && json_object_array_length(seg) == 0)) {
        *bad = 1;
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]%s: a box without a \"segmentation\" polygon: "
                                 "instance segmentation needs each object's outline; dropped",
                                 i, id);
    }
    int off = pts->n, part0 = parts->n, np = 0;
    vt_status st = VT_OK;
    if (json_object_is_type(seg, json_type_object)) {
        st = parse_rle(ds, file, i, id, seg, img, pts, parts, &np);
        if (!st && np == 0) *bad = 1;
    } else if (!json_object_is_type(seg, json_type_array)) {
        *bad = 1;
        return vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                 "annotations[%d]%s: \"segmentation\" is neither a list of "
                                 "polygons nor an RLE mask; dropped", i, id);
    } else {
        /* the polygon parts, read as semantic segmentation reads them, into a scratch list of
         * one-part annotations that are then merged into one */
        coco_ann *tmp = NULL;
        int ntmp = 0, cap_tmp = 0;
        st = parse_segmentation(ds, file, i, o, img, cls, &tmp, &ntmp, &cap_tmp, pts, bad);
        for (int k = 0; !st && k < ntmp; k++) st = int_push(parts, tmp[k].npts);
        if (!st) np = ntmp;
        free(tmp);
    }
    if (st || np == 0) return st;
    float lo[2] = {1, 1}, hi[2] = {0, 0};
    for (int k = off; k < pts->n; k++)
        for (int a = 0; a < 2; a++) {
            float v = pts->v[2 * (size_t)k + a];
            lo[a] = v < lo[a] ? v : lo[a];
            hi[a] = v > hi[a] ? v : hi[a];
        }
    if ((st = ann_reserve(an, cap_ann, *nann))) return st;
    coco_ann *a = &(*an)[(*nann)++];
    a->img = img->index;
    a->entry = i;
    a->box = (vt_det_box){cls, (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, hi[0] - lo[0],
                          hi[1] - lo[1]};
    a->off = off;
    a->npts = pts->n - off;
    a->part0 = part0;
    a->nparts = np;
    return VT_OK;
}

static int cmp_cat(const void *a, const void *b)
{
    int64_t x = ((const coco_cat *)a)->id, y = ((const coco_cat *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_img(const void *a, const void *b)
{
    int64_t x = ((const coco_img *)a)->id, y = ((const coco_img *)b)->id;
    return x < y ? -1 : x > y;
}

/* Stable by image, so boxes keep their file order within an image. */
static int cmp_ann(const void *a, const void *b)
{
    const coco_ann *x = a, *y = b;
    if (x->img != y->img) return x->img < y->img ? -1 : 1;
    return x->entry - y->entry;
}

static vt_status parse_json(const char *file, json_object **out)
{
    char *buf;
    size_t size;
    vt_status st = vt_det_read_file(file, &buf, &size);
    if (st) return st;
    *out = NULL;
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok) {
        free(buf);
        return VT_ERR_OUT_OF_MEMORY;
    }
    json_object *root = size > (size_t)INT32_MAX ? NULL : json_tokener_parse_ex(tok, buf, (int)size);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (size > (size_t)INT32_MAX) st = vt_fail(VT_ERR_FORMAT, "%s: file too large for JSON", file);
    else if (root && err == json_tokener_success) {
        /* json-c stops after the first value; anything but spaces after it is an error */
        while (end < size && strchr(" \t\r\n", buf[end])) end++;
        if (end < size) err = json_tokener_error_parse_unexpected;
    } else if (err == json_tokener_continue) {
        end = size;
    }
    if (!st && (err != json_tokener_success || !root)) {
        int line = 1, col = 1;
        for (size_t i = 0; i < end && i < size; i++) {
            if (buf[i] == '\n') line++, col = 1;
            else col++;
        }
        st = vt_fail(VT_ERR_FORMAT, "%s:%d:%d: JSON syntax error: %s", file, line, col,
                     err == json_tokener_continue ? "unexpected end of file"
                     : err == json_tokener_success ? "no value"
                                                   : json_tokener_error_desc(err));
        json_object_put(root);
        root = NULL;
    }
    json_tokener_free(tok);
    free(buf);
    *out = root;
    return st;
}

static int get_int(json_object *o, const char *key, int64_t *v)
{
    json_object *x;
    if (!json_object_object_get_ex(o, key, &x) || !json_object_is_type(x, json_type_int)) return 0;
    *v = json_object_get_int64(x);
    return 1;
}

static json_object *get_array(json_object *root, const char *key)
{
    json_object *x;
    if (!json_object_object_get_ex(root, key, &x) || !json_object_is_type(x, json_type_array))
        return NULL;
    return x;
}

/* Categories sorted by id; when `want` is given (the val file) they must equal it. */
static vt_status load_categories(vt_dataset *ds, const char *file, json_object *root,
                                 coco_cat **out, int *nout)
{
    json_object *arr = get_array(root, "categories");
    int n = arr ? (int)json_object_array_length(arr) : 0;
    if (!arr || n == 0)
        return vt_fail(VT_ERR_DATASET, "%s: no \"categories\" list (COCO instances JSON)", file);
    coco_cat *c = vt_calloc((size_t)n, sizeof *c);
    if (!c) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = VT_OK;
    for (int i = 0; !st && i < n; i++) {
        json_object *o = json_object_array_get_idx(arr, (size_t)i), *name;
        if (!json_object_is_type(o, json_type_object) || !get_int(o, "id", &c[i].id) ||
            !json_object_object_get_ex(o, "name", &name) ||
            !json_object_is_type(name, json_type_string))
            st = vt_fail(VT_ERR_DATASET, "%s: categories[%d]: needs an integer \"id\" and a "
                         "string \"name\"", file, i);
        else if (!(c[i].name = vt_strdup(json_object_get_string(name)))) st = VT_ERR_OUT_OF_MEMORY;
    }
    if (!st) qsort(c, (size_t)n, sizeof *c, cmp_cat);
    for (int i = 1; !st && i < n; i++)
        if (c[i].id == c[i - 1].id)
            st = vt_fail(VT_ERR_DATASET, "%s: categories: id %lld is given twice", file,
                         (long long)c[i].id);
    (void)ds;
    if (st) {
        for (int i = 0; i < n; i++) free(c[i].name);
        free(c);
        return st;
    }
    *out = c;
    *nout = n;
    return VT_OK;
}

/* Where the images of a COCO file are looked for (see visiontrain.h, "detection datasets"):
 * file_name under <json folder>/images/ (when that folder exists), then under the JSON's
 * folder; for a JSON in a folder named "annotations" (COCO's own layout), then under its
 * parent's images/ and the parent.  An absolute file_name is taken as it is.  The dataset
 * folder is the parent of annotations/, else the JSON's folder. */
typedef struct coco_dirs {
    char *dir[4];   /* the folders to try, in order; NULL where there is none */
    char *root_abs; /* the dataset folder, absolute and clean */
    char rule[320]; /* the rule in words, for messages */
} coco_dirs;

static void coco_dirs_free(coco_dirs *d)
{
    for (int i = 0; i < 4; i++) free(d->dir[i]);
    free(d->root_abs);
}

static char *join_dir(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = vt_malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* The folder part of a path: "." when there is none, "/" for a file in the root. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return vt_strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *s = vt_malloc(n + 1);
    if (s) {
        memcpy(s, path, n);
        s[n] = 0;
    }
    return s;
}

static vt_status coco_dirs_init(coco_dirs *d, const char *file)
{
    memset(d, 0, sizeof *d);
    char *jdir = folder_of(file), *up = NULL;
    if (!jdir) return VT_ERR_OUT_OF_MEMORY;
    const char *base = strrchr(jdir, '/');
    if (!strcmp(base ? base + 1 : jdir, "annotations") && !(up = folder_of(jdir))) {
        free(jdir);
        return VT_ERR_OUT_OF_MEMORY;
    }
    vt_status st = VT_OK;
    char *img = join_dir(jdir, "images");
    if (!img) st = VT_ERR_OUT_OF_MEMORY;
    else if (vt_det_is_dir(img)) d->dir[0] = img;
    else free(img);
    d->dir[1] = jdir;
    if (!st && up) {
        img = join_dir(up, "images");
        if (!img) st = VT_ERR_OUT_OF_MEMORY;
        else if (vt_det_is_dir(img)) d->dir[2] = img;
        else free(img);
        d->dir[3] = up;
    }
    if (!st && !(d->root_abs = vt_det_abs_path(up ? up : jdir))) st = VT_ERR_OUT_OF_MEMORY;
    snprintf(d->rule, sizeof d->rule,
             "file_name is looked up under the images/ folder beside the JSON when there is one, "
             "then beside the JSON%s", up ? ", then under images/ beside annotations/ and "
             "beside annotations/" : "");
    if (st) coco_dirs_free(d);
    return st;
}

/* Find file_name fn: the path found (malloc'd) or NULL with *kind the kind of the first link
 * that cannot be followed (else VT_ENT_NONE), its path in link, and the paths tried in tried. */
static char *coco_find(const coco_dirs *d, const char *fn, int *kind, char *link, size_t link_cap,
                       char *tried, size_t tried_cap)
{
    *kind = VT_ENT_NONE;
    link[0] = tried[0] = 0;
    while (fn[0] == '.' && fn[1] == '/') fn += 2;
    size_t used = 0;
    for (int i = 0; i < 4; i++) {
        if (fn[0] == '/' ? i > 0 : !d->dir[i]) continue;
        char *path = fn[0] == '/' ? vt_strdup(fn) : join_dir(d->dir[i], fn);
        if (!path) return NULL;
        int k = vt_det_entry(path, NULL);
        if (k == VT_ENT_FILE) return path;
        if ((k == VT_ENT_LOOP || k == VT_ENT_BROKEN) && *kind == VT_ENT_NONE) {
            *kind = k;
            snprintf(link, link_cap, "%s", path);
        }
        if (used < tried_cap)
            used += (size_t)snprintf(tried + used, tried_cap - used, "%s%s", used ? ", " : "",
                                     path);
        free(path);
    }
    return NULL;
}

static vt_status load_split(vt_dataset *ds, const char *file, json_object *root,
                            const coco_cat *cats, int ncat, vt_split_list *sl)
{
    json_object *images = get_array(root, "images");
    if (!images) return vt_fail(VT_ERR_DATASET, "%s: no \"images\" list", file);
    json_object *anns = get_array(root, "annotations"); /* absent: all backgrounds */
    int ni = (int)json_object_array_length(images);
    int na = anns ? (int)json_object_array_length(anns) : 0;
    coco_dirs dirs;
    vt_status st = coco_dirs_init(&dirs, file);
    if (st) return st;
    char first_missing[1600] = "";
    int nfound = 0;
    coco_img *im = vt_calloc((size_t)ni + 1, sizeof *im);
    int cap_ann = na + 1, seg = vt_labels_polygons(ds->labels), inst = ds->labels->instances;
    coco_ann *an = vt_calloc((size_t)cap_ann, sizeof *an);
    pt_buf pts = {0};
    int_buf parts = {0}; /* instances: the point counts of their parts */
    int *entries = NULL; /* allocated once the annotation count is known */
    vt_det_builder b = {0};
    b.inst = inst;
    st = im && an ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    int nim = 0;
    for (int i = 0; !st && i < ni; i++) {
        json_object *o = json_object_array_get_idx(images, (size_t)i), *fn;
        int64_t id, w, h;
        if (!json_object_is_type(o, json_type_object) || !get_int(o, "id", &id) ||
            !json_object_object_get_ex(o, "file_name", &fn) ||
            !json_object_is_type(fn, json_type_string) || !get_int(o, "width", &w) ||
            !get_int(o, "height", &h) || w < 1 || h < 1 || w > INT32_MAX || h > INT32_MAX) {
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                   "images[%d]: needs integer \"id\", \"width\", \"height\" (> 0) "
                                   "and a \"file_name\"; skipped", i);
            continue;
        }
        const char *name = json_object_get_string(fn);
        int kind;
        char link[512], tried[700];
        char *path = coco_find(&dirs, name, &kind, link, sizeof link, tried, sizeof tried);
        im[nim].id = id;
        im[nim].w = (int)w;
        im[nim].h = (int)h;
        im[nim].index = -1;
        nim++;
        if (!path && !tried[0]) { /* nothing tried: out of memory */
            st = VT_ERR_OUT_OF_MEMORY;
            break;
        }
        if (!path) {
            char why[1600];
            if (kind != VT_ENT_NONE) {
                char lw[512];
                vt_det_link_why(link, kind, lw, sizeof lw);
                snprintf(why, sizeof why, "images[%d] (id %lld) '%.200s': %.300s is a %s", i,
                         (long long)id, name, link, lw);
            } else {
                snprintf(why, sizeof why, "images[%d] (id %lld) '%.200s': not found at %s (%s)",
                         i, (long long)id, name, tried, dirs.rule);
            }
            if (!first_missing[0]) snprintf(first_missing, sizeof first_missing, "%s", why);
            st = vt_ds_problem_add(ds, file, 0,
                                   kind != VT_ENT_NONE ? vt_det_link_code(kind)
                                                       : VT_PROBLEM_MISSING_IMAGE,
                                   "%s; skipped", why);
            continue;
        }
        nfound++;
        if (vt_det_path_may_escape(name)) {
            char *abs = vt_det_abs_path(path);
            if (!abs) st = VT_ERR_OUT_OF_MEMORY;
            else if (!vt_det_path_within(abs, dirs.root_abs))
                st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_OUTSIDE_ROOT,
                                       "images[%d] (id %lld) '%.200s' resolves to %.200s, outside "
                                       "the dataset folder %.200s; used anyway", i, (long long)id,
                                       name, abs, dirs.root_abs);
            free(abs);
        }
        if (st) {
            free(path);
            break;
        }
        im[nim - 1].index = b.n;
        st = vt_det_builder_image(&b, path);
    }
    if (!st) qsort(im, (size_t)nim, sizeof *im, cmp_img);
    for (int i = 1; !st && i < nim; i++)
        if (im[i].id == im[i - 1].id) {
            /* which of the two came first in the file is lost by the sort; both are suspect */
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                   "images: id %lld is given twice; its annotations go to the "
                                   "first", (long long)im[i].id);
        }
    /* policy=skip: images with an annotation problem are left out */
    unsigned char *bad = st ? NULL : vt_calloc((size_t)b.n + 1, 1);
    if (!st && !bad) st = VT_ERR_OUT_OF_MEMORY;
    int nann = 0;
    for (int i = 0; !st && i < na; i++) {
        json_object *o = json_object_array_get_idx(anns, (size_t)i), *x;
        if (json_object_is_type(o, json_type_object) &&
            json_object_object_get_ex(o, "iscrowd", &x) && json_object_get_boolean(x))
            continue; /* crowd regions are not single objects; Ultralytics' COCO converter
                       * (convert_coco) skips them too, for boxes and segments alike */
        int64_t img_id, cat_id;
        json_object *bbox = NULL;
        double v[4] = {0, 0, 1, 1};
        int ok = json_object_is_type(o, json_type_object) && get_int(o, "image_id", &img_id) &&
                 get_int(o, "category_id", &cat_id);
        /* segmentation takes its boxes from the polygons */
        if (!seg)
            ok = ok && json_object_object_get_ex(o, "bbox", &bbox) &&
                 json_object_is_type(bbox, json_type_array) && json_object_array_length(bbox) == 4;
        for (int k = 0; ok && !seg && k < 4; k++) {
            json_object *e = json_object_array_get_idx(bbox, (size_t)k);
            ok = (json_object_is_type(e, json_type_double) || json_object_is_type(e, json_type_int));
            if (ok) v[k] = json_object_get_double(e);
            ok = ok && isfinite(v[k]);
        }
        if (!ok) {
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                   seg ? "annotations[%d]: needs integer \"image_id\" and "
                                         "\"category_id\"; dropped"
                                       : "annotations[%d]: needs integer \"image_id\", "
                                         "\"category_id\" and \"bbox\" [x, y, w, h]; dropped", i);
            continue;
        }
        coco_img key = {img_id, 0, 0, 0};
        const coco_img *img = bsearch(&key, im, (size_t)nim, sizeof *im, cmp_img);
        /* duplicates of an id sort together; take the first of them */
        while (img && img > im && img[-1].id == img_id) img--;
        if (!img) {
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_BAD_ANNOTATION,
                                   "annotations[%d]: image_id %lld is not in \"images\"; dropped",
                                   i, (long long)img_id);
            continue;
        }
        if (img->index < 0) continue; /* image skipped, already reported */
        coco_cat ck = {cat_id, NULL};
        const coco_cat *cat = bsearch(&ck, cats, (size_t)ncat, sizeof *cats, cmp_cat);
        if (!cat) {
            bad[img->index] = 1;
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_CLASS_RANGE,
                                   "annotations[%d]: category_id %lld is not in \"categories\"; "
                                   "dropped", i, (long long)cat_id);
            continue;
        }
        if (inst) {
            int dropped = 0;
            st = parse_instance(ds, file, i, o, img, (int)(cat - cats), &an, &nann, &cap_ann,
                                &pts, &parts, &dropped);
            if (dropped) bad[img->index] = 1;
            continue;
        }
        if (seg) {
            int dropped = 0;
            st = parse_segmentation(ds, file, i, o, img, (int)(cat - cats) + 1, &an, &nann,
                                    &cap_ann, &pts, &dropped);
            if (dropped) bad[img->index] = 1;
            continue;
        }
        if (v[2] <= 0 || v[3] <= 0) {
            bad[img->index] = 1;
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_ZERO_SIZE,
                                   "annotations[%d]: zero-size bbox (w %g, h %g); dropped", i, v[2],
                                   v[3]);
            continue;
        }
        double x0 = fmax(v[0], 0), y0 = fmax(v[1], 0);
        double x1 = fmin(v[0] + v[2], img->w), y1 = fmin(v[1] + v[3], img->h);
        if (x1 <= x0 || y1 <= y0) {
            bad[img->index] = 1;
            st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_COORD_RANGE,
                                   "annotations[%d]: bbox [%g, %g, %g, %g] lies outside the %dx%d "
                                   "image; dropped", i, v[0], v[1], v[2], v[3], img->w, img->h);
            continue;
        }
        if ((st = ann_reserve(&an, &cap_ann, nann))) break;
        coco_ann *a = &an[nann++];
        a->img = img->index;
        a->entry = i;
        a->box.cls = (int)(cat - cats);
        a->box.cx = (float)((x0 + x1) / 2 / img->w);
        a->box.cy = (float)((y0 + y1) / 2 / img->h);
        a->box.w = (float)((x1 - x0) / img->w);
        a->box.h = (float)((y1 - y0) / img->h);
    }
    if (!st) qsort(an, (size_t)nann, sizeof *an, cmp_ann);
    if (!st && !(entries = vt_calloc((size_t)nann + 1, sizeof *entries))) st = VT_ERR_OUT_OF_MEMORY;
    /* Replay the images in order so the builder's per-image ranges come out right. */
    if (!st) {
        vt_det_builder out = {0};
        out.inst = inst;
        int k = 0;
        for (int i = 0; !st && i < b.n; i++) {
            st = vt_det_builder_image(&out, b.paths[i]);
            b.paths[i] = NULL;
            int nb = 0, before = ds->num_problems;
            for (; !st && k < nann && an[k].img == i; k++) {
                entries[nb++] = an[k].entry;
                st = inst ? vt_det_builder_instance(&out, &an[k].box,
                                                    pts.v + 2 * (size_t)an[k].off,
                                                    parts.v + an[k].part0, an[k].nparts)
                     : seg ? vt_det_builder_poly(&out, &an[k].box, pts.v + 2 * (size_t)an[k].off,
                                                 an[k].npts)
                           : vt_det_builder_box(&out, &an[k].box);
            }
            if (!st) st = vt_det_builder_dedupe(&out, ds, file, entries, "annotations");
            if (!st && ds->policy == VT_DS_POLICY_SKIP && (bad[i] || ds->num_problems > before)) {
                vt_det_builder_pop(&out);
                ds->skipped[sl - ds->split]++;
            }
        }
        if (!st && out.n == 0) {
            /* say why: nothing listed, nothing found (with the first miss and the rule), or all
             * left out by policy=skip */
            char why[1800];
            if (ni == 0)
                snprintf(why, sizeof why, "its \"images\" list is empty");
            else if (nfound == 0)
                snprintf(why, sizeof why, "none of the %d \"images\" entries was found; the "
                         "first: %s", ni, first_missing[0] ? first_missing : "malformed");
            else
                snprintf(why, sizeof why, "%d of %d \"images\" entries found, all left out by "
                         "policy=skip", nfound, ni);
            /* validation records it and goes on, as for a data.yaml split */
            if (ds->lenient)
                st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_EMPTY_SPLIT,
                                       "no usable images: %s", why);
            else
                st = vt_fail(VT_ERR_DATASET, "%s: no usable images: %s", file, why);
        }
        if (!st) vt_det_builder_finish(&out, sl);
        vt_det_builder_free(&out);
    }
    vt_det_builder_free(&b);
    free(bad);
    coco_dirs_free(&dirs);
    free(im);
    free(an);
    free(pts.v);
    free(parts.v);
    free(entries);
    return st;
}

/* instances_train.json -> instances_val.json (last "train" in the file name), or NULL. */
static char *val_sibling(const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *hit = NULL;
    for (const char *p = strstr(base, "train"); p; p = strstr(p + 1, "train")) hit = p;
    if (!hit) return NULL;
    size_t n = strlen(file);
    char *s = vt_malloc(n + 1);
    if (!s) return NULL;
    size_t pre = (size_t)(hit - file);
    memcpy(s, file, pre);
    memcpy(s + pre, "val", 3);
    strcpy(s + pre + 3, hit + 5);
    if (!vt_det_is_file(s)) {
        free(s);
        return NULL;
    }
    return s;
}

vt_status vt_coco_load(vt_dataset *ds, const char *file)
{
    if (!vt_det_is_file(file)) return vt_fail(VT_ERR_NOT_FOUND, "%s: no such file", file);
    json_object *root = NULL, *vroot = NULL;
    coco_cat *cats = NULL, *vcats = NULL;
    int ncat = 0, nvcat = 0;
    char *vfile = NULL;
    vt_status st = parse_json(file, &root);
    if (!st && !json_object_is_type(root, json_type_object))
        st = vt_fail(VT_ERR_DATASET, "%s: expected a JSON object with images, annotations and "
                     "categories", file);
    if (!st) st = load_categories(ds, file, root, &cats, &ncat);
    if (!st) {
        ds->class_names = vt_calloc((size_t)ncat, sizeof(char *));
        if (!ds->class_names) st = VT_ERR_OUT_OF_MEMORY;
        for (int i = 0; !st && i < ncat; i++) {
            ds->class_names[i] = cats[i].name;
            cats[i].name = NULL;
            ds->num_classes = i + 1;
        }
    }
    /* segmentation: class 0 is the background, category k is class k + 1 */
    if (!st && ds->labels->masks) st = vt_seg_add_background(ds, file);
    if (!st) st = load_split(ds, file, root, cats, ncat, &ds->split[VT_SPLIT_TRAIN]);
    json_object_put(root);
    if (!st) vfile = val_sibling(file);
    if (!st && !vfile)
        st = vt_ds_problem_add(ds, file, 0, VT_PROBLEM_MISSING_SPLIT,
                               "no val file next to it (the name with 'train' replaced by "
                               "'val'); training runs without validation");
    if (!st && vfile) {
        st = parse_json(vfile, &vroot);
        if (!st && !json_object_is_type(vroot, json_type_object))
            st = vt_fail(VT_ERR_DATASET, "%s: expected a JSON object", vfile);
        if (!st) st = load_categories(ds, vfile, vroot, &vcats, &nvcat);
        int same = !st && nvcat == ncat;
        for (int i = 0; same && i < ncat; i++)
            same = vcats[i].id == cats[i].id &&
                   !strcmp(vcats[i].name, ds->class_names[i + ds->labels->masks]);
        if (!st && !same)
            st = vt_fail(VT_ERR_DATASET, "%s: its categories differ from those of %s", vfile, file);
        if (!st) st = load_split(ds, vfile, vroot, cats, ncat, &ds->split[VT_SPLIT_VAL]);
        json_object_put(vroot);
    }
    for (int i = 0; cats && i < ncat; i++) free(cats[i].name);
    for (int i = 0; vcats && i < nvcat; i++) free(vcats[i].name);
    free(cats);
    free(vcats);
    free(vfile);
    return st;
}

#else

vt_status vt_coco_load(vt_dataset *ds, const char *file)
{
    (void)ds;
    return vt_fail(VT_ERR_UNSUPPORTED, "%s: this build has no JSON support (json-c not found)",
                   file);
}

#endif
