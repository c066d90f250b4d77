/* Dataset validation: vt_dataset_open_ex (policies, optional decoding at open) and
 * vt_dataset_validate with its report handle.
 *
 * Validation opens the dataset through the ordinary loaders in a lenient mode (layout errors
 * that would refuse the open become problems), then decodes every image with a few threads.
 * Results land in a slot per image and are recorded in image order afterwards, so the report
 * is the same whatever the thread count, and policy=fail stops at the same first problem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "data/detect_data.h"
#include "data/seg_mask.h"
#include "image/image.h"

/* Images decoded between two recording rounds: bounds the memory of pending messages and lets
 * policy=fail stop soon after the first bad image. */
#define CHECK_CHUNK 256

struct vt_report {
    char err[VT_ERRMSG_MAX];
    vt_task task;
    int num_classes;
    char **class_names;
    vt_ds_problem *problems;
    int num_problems;
    int64_t counts[3][VT_COUNT_SIZE + 1];
    int64_t *instances; /* [split][class] */
};

VT_API const char *vt_problem_code_name(int code)
{
    static const char *const names[] = {
        NULL,           "bad_line",          "class_range",        "coord_range",
        "zero_size",    "duplicate",         "missing_split",      "missing_image",
        "label_unreadable", "bad_annotation", "truncated",         "image_unreadable",
        "corrupt_image", "truncated_jpeg",   "image_too_small",    "unsupported_format",
        "polygon_points", "empty_split",     "class_count",        "missing_mask",
        "bad_mask",     "outside_root",      "symlink_loop",       "broken_link",
        "image_too_large"};
    if (code < 1 || code >= (int)(sizeof names / sizeof names[0])) return "unknown";
    return names[code];
}

/* ---- options ------------------------------------------------------------------------------ */

/* The keys, ranges and defaults are the VT_OPT_DS_* lines of the option table. */
vt_status vt_ds_options_parse(const char *options, vt_ds_options *o, int allow_decode)
{
    vt_optvals *v;
    vt_status st = vt_optvals_parse_new(
        &v, allow_decode ? VT_SCOPE_DATASET_OPEN : VT_SCOPE_DATASET_VALIDATE, options);
    if (st) return st;
    const char *policy = vt_opt_str(v, VT_OPT_DS_POLICY);
    o->policy = !strcmp(policy, "skip")   ? VT_DS_POLICY_SKIP
                : !strcmp(policy, "fail") ? VT_DS_POLICY_FAIL
                                          : VT_DS_POLICY_DROP;
    o->decode = allow_decode ? (int)vt_opt_num(v, VT_OPT_DS_DECODE) : 1; /* validation decodes */
    o->min_size = (int)vt_opt_num(v, VT_OPT_DS_MIN_SIZE);
    o->workers = (int)vt_opt_num(v, VT_OPT_DS_WORKERS);
    free(v);
    return VT_OK;
}

/* ---- decoding every image ------------------------------------------------------------------ */

typedef struct img_result {
    int code; /* 0 = fine, else a vt_problem_code */
    int on_mask; /* the problem is in the mask file (segmentation mask layout) */
    vt_status fatal;
    char *msg;
} img_result;

typedef struct check_ctx {
    char **paths;
    char **masks; /* segmentation mask layout: the mask of each image, else NULL */
    int nc, ignore;
    img_result *res;
    int min_size;
} check_ctx;

/* A mask must decode as 8-bit gray at its image's size; values outside the classes are a
 * label problem (read as ignore), the rest make the pair unusable. */
static void check_mask(const check_ctx *c, size_t i, const vt_image *img, img_result *r)
{
    vt_image m;
    int64_t nbad;
    int first;
    vt_status st = vt_seg_load_mask(c->masks[i], c->nc, c->ignore, &m, &nbad, &first);
    char buf[200];
    const char *msg = NULL;
    if (st == VT_ERR_OUT_OF_MEMORY || st == VT_ERR_INVALID_ARGUMENT) {
        r->fatal = st;
        r->msg = strdup(vt_last_error());
        return;
    }
    if (st) {
        msg = vt_last_error();
        size_t n = strlen(c->masks[i]);
        if (!strncmp(msg, c->masks[i], n) && !strncmp(msg + n, ": ", 2)) msg += n + 2;
        r->code = VT_PROBLEM_BAD_MASK;
    } else if (m.w != img->w || m.h != img->h) {
        snprintf(buf, sizeof buf, "mask is %dx%d but its image is %dx%d; image not used", m.w,
                 m.h, img->w, img->h);
        msg = buf;
        r->code = VT_PROBLEM_BAD_MASK;
    } else if (nbad) {
        snprintf(buf, sizeof buf, "%lld pixel%s with class values outside 0..%d (first: %d) "
                 "and not the ignore value %d; read as ignore", (long long)nbad,
                 nbad == 1 ? "" : "s", c->nc - 1, first, c->ignore);
        msg = buf;
        r->code = VT_PROBLEM_CLASS_RANGE;
    }
    if (r->code) {
        r->on_mask = 1;
        r->msg = strdup(msg);
    }
    vt_image_free(&m);
}

/* Which problem an image error is.  vt_image_load only returns a status and a message, and the
 * message names the cause in fixed words (see image.h), hence the word tests. */
static int image_problem(vt_status st, const char *msg)
{
    if (st == VT_ERR_NOT_FOUND || st == VT_ERR_IO) return VT_PROBLEM_IMAGE_UNREADABLE;
    if (strstr(msg, "truncated JPEG")) return VT_PROBLEM_TRUNCATED_JPEG;
    /* "image too large (WxH; ...)", "file too large for an image" */
    if (strstr(msg, "too large")) return VT_PROBLEM_IMAGE_TOO_LARGE;
    if (strstr(msg, "not a PNG or JPEG") || strstr(msg, "not supported") ||
        strstr(msg, "unsupported"))
        return VT_PROBLEM_UNSUPPORTED_FORMAT;
    return VT_PROBLEM_CORRUPT_IMAGE;
}

static void check_range(void *vctx, size_t begin, size_t end)
{
    check_ctx *c = vctx;
    for (size_t i = begin; i < end; i++) {
        img_result *r = &c->res[i];
        vt_image img;
        vt_status st = vt_image_load(c->paths[i], &img);
        if (st == VT_ERR_OUT_OF_MEMORY || st == VT_ERR_INVALID_ARGUMENT) {
            r->fatal = st;
            r->msg = strdup(vt_last_error());
            continue;
        }
        if (st) {
            const char *m = vt_last_error();
            r->code = image_problem(st, m);
            /* the message starts with the path, which the problem record adds again */
            size_t n = strlen(c->paths[i]);
            if (!strncmp(m, c->paths[i], n) && !strncmp(m + n, ": ", 2)) m += n + 2;
            r->msg = strdup(m);
        } else if (img.w < c->min_size || img.h < c->min_size) {
            char buf[96];
            snprintf(buf, sizeof buf, "%dx%d image, smaller than min_size=%d", img.w, img.h,
                     c->min_size);
            r->code = VT_PROBLEM_IMAGE_TOO_SMALL;
            r->msg = strdup(buf);
        } else if (c->masks) {
            check_mask(c, i, &img, r);
        }
        vt_image_free(&img);
    }
}

/* Decode every image of every split (and its mask); record each bad one (in split and image
 * order) and mark it in bad[s][i]: 1 when unusable, 3 when unusable for its size (too small or
 * too large), 2 when left out by policy=skip for a label problem of its mask.  Fails on memory exhaustion, or with policy=fail on the first problem. */
static vt_status check_images(vt_dataset *ds, const vt_ds_options *o, unsigned char *bad[3])
{
    vt_pool *pool = NULL;
    vt_status st = vt_pool_create(&pool, o->workers + 1);
    img_result *res = st ? NULL : vt_calloc(CHECK_CHUNK, sizeof *res);
    if (!st && !res) st = VT_ERR_OUT_OF_MEMORY;
    for (int s = 0; !st && s < 3; s++) {
        vt_split_list *sl = &ds->split[s];
        for (int i0 = 0; !st && i0 < sl->n; i0 += CHECK_CHUNK) {
            int n = sl->n - i0 < CHECK_CHUNK ? sl->n - i0 : CHECK_CHUNK;
            memset(res, 0, (size_t)n * sizeof *res);
            check_ctx c = {sl->paths + i0, sl->mask_paths ? sl->mask_paths + i0 : NULL,
                           ds->num_classes, ds->ignore_value, res, o->min_size};
            vt_pool_run(pool, (size_t)n, 1, check_range, &c);
            for (int k = 0; k < n; k++) {
                img_result *r = &res[k];
                if (!st && r->fatal)
                    st = vt_fail(r->fatal, "%s", r->msg ? r->msg : "out of memory");
                else if (!st && r->code) {
                    int label = r->code == VT_PROBLEM_CLASS_RANGE;
                    int size = r->code == VT_PROBLEM_IMAGE_TOO_SMALL ||
                               r->code == VT_PROBLEM_IMAGE_TOO_LARGE;
                    if (size) bad[s][i0 + k] = 3;
                    else if (!label) bad[s][i0 + k] = 1;
                    else if (ds->policy == VT_DS_POLICY_SKIP) bad[s][i0 + k] = 2;
                    st = vt_ds_problem_add(ds, r->on_mask ? sl->mask_paths[i0 + k]
                                                          : sl->paths[i0 + k],
                                           0, r->code, "%s", r->msg ? r->msg : "bad image");
                }
                free(r->msg);
            }
        }
    }
    free(res);
    vt_pool_destroy(pool);
    return st;
}

/* Drop the marked images of a split, with their labels, boxes, polygons or masks.  Polygon
 * points stay where they are: each polygon (or instance part) keeps its offset. */
static void split_remove(vt_split_list *sl, const unsigned char *bad)
{
    int w = 0, wb = 0, wp = 0;
    for (int i = 0; i < sl->n; i++) {
        if (bad[i]) {
            free(sl->paths[i]);
            if (sl->mask_paths) free(sl->mask_paths[i]);
            continue;
        }
        sl->paths[w] = sl->paths[i];
        if (sl->mask_paths) sl->mask_paths[w] = sl->mask_paths[i];
        if (sl->labels) sl->labels[w] = sl->labels[i];
        if (sl->box_start) {
            int b0 = sl->box_start[i], b1 = sl->box_start[i + 1];
            sl->box_start[w] = wb;
            for (int b = b0; b < b1; b++) {
                if (sl->polys) sl->polys[wb] = sl->polys[b];
                if (sl->part_start) { /* read both ends before writing part_start[wb <= b] */
                    int q0 = sl->part_start[b], q1 = sl->part_start[b + 1];
                    sl->part_start[wb] = wp;
                    for (int q = q0; q < q1; q++) sl->parts[wp++] = sl->parts[q];
                }
                sl->boxes[wb++] = sl->boxes[b];
            }
        }
        w++;
    }
    if (sl->box_start) sl->box_start[w] = wb;
    if (sl->part_start) sl->part_start[wb] = wp;
    sl->n = w;
}

static vt_status alloc_marks(const vt_dataset *ds, unsigned char *bad[3])
{
    for (int s = 0; s < 3; s++)
        if (!(bad[s] = vt_calloc((size_t)ds->split[s].n + 1, 1))) return VT_ERR_OUT_OF_MEMORY;
    return VT_OK;
}

/* ---- opening with a policy ----------------------------------------------------------------- */

VT_API vt_status vt_dataset_open_ex(vt_dataset **out, vt_task task, const char *path,
                                    const char *options)
{
    if (out) *out = NULL;
    if (!out || !path)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_open_ex: NULL argument");
    vt_ds_options o;
    vt_status st = vt_ds_options_parse(options, &o, 1);
    if (st) return st;
    vt_dataset *ds;
    if ((st = vt_dataset_load(&ds, task, path, o.policy, 0))) return st;
    unsigned char *bad[3] = {0};
    if (o.decode) {
        st = alloc_marks(ds, bad);
        if (!st) st = check_images(ds, &o, bad);
        for (int s = 0; !st && s < 3; s++) {
            for (int i = 0; i < ds->split[s].n; i++) {
                if (bad[s][i] == 1) ds->corrupt[s]++;
                else if (bad[s][i] == 2) ds->skipped[s]++;
                else if (bad[s][i] == 3) ds->size_limited[s]++;
            }
            split_remove(&ds->split[s], bad[s]);
        }
        if (!st && ds->split[VT_SPLIT_TRAIN].n == 0)
            st = vt_fail(VT_ERR_DATASET, "%s: no train image decodes", path);
    }
    for (int s = 0; s < 3; s++) free(bad[s]);
    if (st) {
        vt_dataset_destroy(ds);
        return st;
    }
    *out = ds;
    return VT_OK;
}

/* ---- validation ------------------------------------------------------------------------------ */

VT_API void vt_report_destroy(vt_report *r)
{
    if (!r) return;
    for (int i = 0; i < r->num_problems; i++) {
        free(r->problems[i].file);
        free(r->problems[i].message);
    }
    free(r->problems);
    for (int i = 0; i < r->num_classes; i++) free(r->class_names[i]);
    free(r->class_names);
    free(r->instances);
    free(r);
}

/* Move the summary, the class names and the problems of a checked dataset into a report. */
static vt_status make_report(vt_dataset *ds, unsigned char *bad[3], vt_report **out)
{
    vt_report *r = vt_calloc(1, sizeof *r);
    if (!r) return VT_ERR_OUT_OF_MEMORY;
    r->task = ds->task;
    r->instances = vt_calloc((size_t)ds->num_classes * 3 + 1, sizeof *r->instances);
    if (!r->instances) {
        vt_report_destroy(r);
        return VT_ERR_OUT_OF_MEMORY;
    }
    for (int s = 0; s < 3; s++) {
        const vt_split_list *sl = &ds->split[s];
        int64_t *c = r->counts[s], *inst = r->instances + (size_t)s * ds->num_classes;
        c[VT_COUNT_IMAGES] = sl->n + ds->skipped[s];
        c[VT_COUNT_SKIPPED] = ds->skipped[s];
        for (int i = 0; i < sl->n; i++) {
            if (bad[s][i] == 2) { /* policy=skip, a label problem found while decoding */
                c[VT_COUNT_SKIPPED]++;
                continue;
            }
            if (bad[s][i]) {
                c[bad[s][i] == 3 ? VT_COUNT_SIZE : VT_COUNT_CORRUPT]++;
                continue;
            }
            c[VT_COUNT_USABLE]++;
            if (sl->labels) {
                c[VT_COUNT_INSTANCES]++;
                if (sl->labels[i] >= 0 && sl->labels[i] < ds->num_classes) inst[sl->labels[i]]++;
                continue;
            }
            int b0 = sl->box_start[i], b1 = sl->box_start[i + 1];
            /* a mask image has no boxes, but that does not make it a background */
            if (b0 == b1 && !sl->mask_paths) c[VT_COUNT_BACKGROUNDS]++;
            c[VT_COUNT_INSTANCES] += b1 - b0;
            for (int b = b0; b < b1; b++) inst[sl->boxes[b].cls]++;
        }
    }
    r->num_classes = ds->num_classes;
    r->class_names = ds->class_names;
    ds->class_names = NULL;
    ds->num_classes = 0;
    r->problems = ds->problems;
    r->num_problems = ds->num_problems;
    ds->problems = NULL;
    ds->num_problems = ds->cap_problems = 0;
    *out = r;
    return VT_OK;
}

VT_API vt_status vt_dataset_validate(vt_report **out, vt_task task, const char *path,
                                     const char *options)
{
    if (out) *out = NULL;
    if (!out || !path)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_validate: NULL argument");
    vt_ds_options o;
    vt_status st = vt_ds_options_parse(options, &o, 0);
    if (st) return st;
    vt_dataset *ds;
    if ((st = vt_dataset_load(&ds, task, path, o.policy, 1))) return st;
    unsigned char *bad[3] = {0};
    st = alloc_marks(ds, bad);
    if (!st) st = check_images(ds, &o, bad);
    if (!st) st = make_report(ds, bad, out);
    for (int s = 0; s < 3; s++) free(bad[s]);
    vt_dataset_destroy(ds);
    return st;
}

VT_API int64_t vt_dataset_count(const vt_dataset *ds, vt_count what, vt_split split)
{
    if (!ds || (unsigned)split >= 3) return 0;
    const vt_split_list *sl = &ds->split[split];
    int64_t n = 0;
    switch (what) {
    case VT_COUNT_IMAGES:
        return (int64_t)sl->n + ds->skipped[split] + ds->corrupt[split] + ds->size_limited[split];
    case VT_COUNT_USABLE: return sl->n;
    case VT_COUNT_CORRUPT: return ds->corrupt[split];
    case VT_COUNT_SIZE: return ds->size_limited[split];
    case VT_COUNT_SKIPPED: return ds->skipped[split];
    case VT_COUNT_BACKGROUNDS:
        for (int i = 0; sl->box_start && !sl->mask_paths && i < sl->n; i++)
            n += sl->box_start[i] == sl->box_start[i + 1];
        return n;
    case VT_COUNT_INSTANCES:
        if (sl->labels) return sl->n;
        return sl->box_start ? sl->box_start[sl->n] : 0;
    }
    return 0;
}

VT_API vt_task vt_report_task(const vt_report *r) { return r ? r->task : (vt_task)0; }
VT_API int vt_report_num_classes(const vt_report *r) { return r ? r->num_classes : 0; }
VT_API int vt_report_num_problems(const vt_report *r) { return r ? r->num_problems : 0; }

VT_API const char *vt_report_class_name(const vt_report *r, int i)
{
    return r && i >= 0 && i < r->num_classes ? r->class_names[i] : NULL;
}

VT_API vt_status vt_report_problem(const vt_report *r, int k, const char **file, int *line,
                                   int *code, const char **message)
{
    if (!r || k < 0 || k >= r->num_problems)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_report_problem: no problem %d", k);
    const vt_ds_problem *p = &r->problems[k];
    if (file) *file = p->file;
    if (line) *line = p->line;
    if (code) *code = p->code;
    if (message) *message = p->message;
    return VT_OK;
}

VT_API int64_t vt_report_count(const vt_report *r, vt_count what, vt_split split)
{
    if (!r || (unsigned)split >= 3 || (int)what < VT_COUNT_IMAGES || (int)what > VT_COUNT_SIZE)
        return 0;
    return r->counts[split][what];
}

VT_API int64_t vt_report_class_instances(const vt_report *r, vt_split split, int cls)
{
    if (!r || (unsigned)split >= 3 || cls < 0 || cls >= r->num_classes) return 0;
    return r->instances[(size_t)split * r->num_classes + cls];
}
