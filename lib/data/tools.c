/* Dataset tools: split and subset (YOLO list files + data.yaml), clone (folder copy), class and
 * box-size histograms, and the label-distribution plot.  Rules in visiontrain.h ("dataset
 * tools"): only the named output is written, each file atomically, and no user file is ever
 * modified. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/buffer.h"
#include "data/detect_data.h"
#include "image/image.h"
#include "image/plot.h"

/* Folder recursion limit of clone: symlink loops must end somewhere. */
#define MAX_DEPTH 24

static const char *const split_names[3] = {"train", "val", "test"};

/* ---- output folder ---------------------------------------------------------------------------- */

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    closedir(d);
    return empty;
}

/* mkdir -p */
static vt_status make_dirs(const char *path)
{
    char *p = vt_strdup(path);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = VT_OK;
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q) continue;
        char c = *q;
        *q = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            st = vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO,
                         "%s: cannot create folder: %s", p, strerror(errno));
            break;
        }
        *q = c;
        if (!c) break;
    }
    free(p);
    if (!st && !vt_det_is_dir(path)) st = vt_fail(VT_ERR_IO, "%s: not a folder", path);
    return st;
}

/* The output folder must be new or empty, so that a tool never replaces a user's file (think
 * of out_dir naming the dataset's own folder, data.yaml and all).  *created says whether this
 * call made it. */
static vt_status prepare_out_dir(const char *dir, const char *tool, int *created)
{
    *created = 0;
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: %s: the output exists and is not a folder",
                           dir, tool);
        if (!dir_is_empty(dir))
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: %s: the output folder is not empty; "
                           "name a new one (files are never overwritten)", dir, tool);
        return VT_OK;
    }
    *created = 1;
    return make_dirs(dir);
}

static char *join2(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = vt_malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* ---- list files and data.yaml ------------------------------------------------------------------ */

/* Only data.yaml datasets have their labels beside the images; see visiontrain.h. */
static vt_status require_yolo(const vt_dataset *ds, const char *tool)
{
    if (!ds) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: dataset is NULL", tool);
    if (ds->labels->image_class)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: %s: list files are not part of the ImageFolder "
                       "layout; split a classification dataset by moving class folders", ds->root,
                       tool);
    size_t n = strlen(ds->root);
    if (n >= 5 && !strcasecmp(ds->root + n - 5, ".json"))
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: %s: COCO labels live in the JSON file, which "
                       "list files cannot point into; use a YOLO data.yaml dataset", ds->root,
                       tool);
    return VT_OK;
}

/* One list file: the absolute paths of images idx[0..n) of a split, one a line. */
static vt_status write_list(const vt_split_list *sl, const int *idx, int n, const char *path)
{
    vt_afile a;
    vt_status st = vt_afile_open(&a, path);
    if (st) return st;
    char *abs = NULL;
    for (int k = 0; !st && k < n; k++) {
        const char *img = sl->paths[idx[k]];
        if (!(abs = realpath(img, NULL)))
            st = vt_fail(VT_ERR_IO, "%s: cannot resolve the image's path: %s", img,
                         strerror(errno));
        else if (strchr(abs, '\n'))
            st = vt_fail(VT_ERR_UNSUPPORTED, "%s: a newline in the path cannot go in a list file",
                         img);
        else if (fprintf(a.f, "%s\n", abs) < 0)
            st = vt_fail(VT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        free(abs);
    }
    if (st) {
        vt_afile_abort(&a);
        return st;
    }
    return vt_afile_commit(&a);
}

/* A YAML double-quoted scalar: class names may hold ':', '#', quotes, anything. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* Write out_dir/<split>.txt for each split with a list (images idx[s] of the dataset's split
 * src[s]), then out_dir/data.yaml naming them (last,
 * so a data.yaml only exists beside complete lists). */
static vt_status write_dataset(const vt_dataset *ds, const char *out_dir, const int src[3],
                               int *const idx[3], const int n[3], const char *tool)
{
    vt_status st = VT_OK;
    for (int s = 0; !st && s < 3; s++) {
        if (!idx[s]) continue;
        char name[16];
        snprintf(name, sizeof name, "%s.txt", split_names[s]);
        char *path = join2(out_dir, name);
        st = path ? write_list(&ds->split[src[s]], idx[s], n[s], path) : VT_ERR_OUT_OF_MEMORY;
        free(path);
    }
    if (st) return st;
    char *ypath = join2(out_dir, "data.yaml");
    if (!ypath) return VT_ERR_OUT_OF_MEMORY;
    vt_afile a;
    st = vt_afile_open(&a, ypath);
    free(ypath);
    if (st) return st;
    fprintf(a.f, "# written by libvisiontrain %s (%s); the lists hold absolute image paths and\n"
                 "# the labels stay beside the images (/images/ -> /labels/)\n",
            vt_version_string(), tool);
    for (int s = 0; s < 3; s++)
        if (idx[s]) fprintf(a.f, "%s: %s.txt\n", split_names[s], split_names[s]);
    /* A polygon segmentation dataset's class 0 is the "background" the loader adds itself;
     * a mask dataset's masks are found by the same rule as its labels. */
    int c0 = ds->labels->masks && !ds->seg_masks ? 1 : 0;
    if (ds->seg_masks) {
        fputs("masks: ", a.f);
        put_quoted(a.f, ds->masks_name);
        fprintf(a.f, "\nignore: %d\n", ds->ignore_value);
    }
    fprintf(a.f, "nc: %d\nnames:\n", ds->num_classes - c0);
    for (int c = c0; c < ds->num_classes; c++) {
        fputs("  - ", a.f);
        put_quoted(a.f, ds->class_names[c]);
        fputc('\n', a.f);
    }
    if (ferror(a.f)) {
        vt_afile_abort(&a);
        return vt_fail(VT_ERR_IO, "%s/data.yaml: cannot write", out_dir);
    }
    return vt_afile_commit(&a);
}

/* Choose k of n indices with the seed; the result is sorted (the dataset's order). */
static vt_status choose(int n, int k, uint64_t seed, int **out)
{
    int *perm = vt_malloc(((size_t)n + 1) * sizeof *perm);
    if (!perm) return VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++) perm[i] = i;
    vt_rng r;
    vt_rng_seed(&r, seed);
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = (int)vt_rng_below(&r, (uint32_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* sort the first k: a counting pass keeps it O(n) */
    unsigned char *mark = vt_calloc((size_t)n + 1, 1);
    if (!mark) {
        free(perm);
        return VT_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < k; i++) mark[perm[i]] = 1;
    int w = 0;
    for (int i = 0; i < n; i++)
        if (mark[i]) perm[w++] = i;
    free(mark);
    *out = perm;
    return VT_OK;
}

/* The complement of a sorted subset of 0..n-1. */
static int *complement(const int *sub, int k, int n)
{
    int *out = vt_malloc(((size_t)(n - k) + 1) * sizeof *out);
    if (!out) return NULL;
    int w = 0, j = 0;
    for (int i = 0; i < n; i++) {
        if (j < k && sub[j] == i) j++;
        else out[w++] = i;
    }
    return out;
}

static int *all_indices(int n)
{
    int *out = vt_malloc(((size_t)n + 1) * sizeof *out);
    for (int i = 0; out && i < n; i++) out[i] = i;
    return out;
}

typedef struct tool_opts {
    double val, fraction;
    long long count, seed;
    int is_split;
} tool_opts;

static vt_status on_tool_opt(void *ctx, const char *key, const char *value)
{
    tool_opts *o = ctx;
    if (o->is_split && !strcmp(key, "val")) return vt_parse_double(key, value, 0, 1, &o->val);
    if (!o->is_split && !strcmp(key, "fraction"))
        return vt_parse_double(key, value, 0, 1, &o->fraction);
    if (!o->is_split && !strcmp(key, "count"))
        return vt_parse_int(key, value, 1, INT_MAX, &o->count);
    if (!strcmp(key, "seed")) return vt_parse_int(key, value, 0, LLONG_MAX, &o->seed);
    return vt_fail(VT_ERR_UNKNOWN_OPTION, "unknown option '%s'; valid: %s", key,
                   o->is_split ? "val, seed" : "fraction, count, seed");
}

VT_API vt_status vt_dataset_split(const vt_dataset *ds, const char *out_dir, const char *options)
{
    if (!out_dir) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_split: out_dir is NULL");
    vt_status st = require_yolo(ds, "split");
    if (st) return st;
    tool_opts o = {0.2, 0, 0, 0, 1};
    if ((st = vt_parse_kv_list(options, on_tool_opt, &o))) return st;
    int n = ds->split[VT_SPLIT_TRAIN].n;
    int k = (int)lround(o.val * n);
    if (k < 1 || k > n - 1)
        return vt_fail(VT_ERR_OPTION_VALUE, "val=%g of %d train images gives %d val and %d train "
                       "images; each side needs at least one", o.val, n, k, n - k);
    int created;
    if ((st = prepare_out_dir(out_dir, "split", &created))) return st;
    int *idx[3] = {NULL, NULL, NULL}, cnt[3] = {n - k, k, ds->split[VT_SPLIT_TEST].n};
    st = choose(n, k, (uint64_t)o.seed, &idx[VT_SPLIT_VAL]);
    if (!st && !(idx[VT_SPLIT_TRAIN] = complement(idx[VT_SPLIT_VAL], k, n)))
        st = VT_ERR_OUT_OF_MEMORY;
    if (!st && cnt[VT_SPLIT_TEST] && !(idx[VT_SPLIT_TEST] = all_indices(cnt[VT_SPLIT_TEST])))
        st = VT_ERR_OUT_OF_MEMORY;
    static const int src[3] = {VT_SPLIT_TRAIN, VT_SPLIT_TRAIN, VT_SPLIT_TEST};
    if (!st) st = write_dataset(ds, out_dir, src, idx, cnt, "vt_dataset_split");
    for (int s = 0; s < 3; s++) free(idx[s]);
    return st;
}

VT_API vt_status vt_dataset_subset(const vt_dataset *ds, const char *out_dir, const char *options)
{
    if (!out_dir) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_subset: out_dir is NULL");
    vt_status st = require_yolo(ds, "subset");
    if (st) return st;
    tool_opts o = {0, 0, 0, 0, 0};
    if ((st = vt_parse_kv_list(options, on_tool_opt, &o))) return st;
    if ((o.fraction > 0) == (o.count > 0))
        return vt_fail(VT_ERR_OPTION_VALUE, "subset: give either fraction=F (0 < F <= 1) or "
                       "count=N, not both");
    int created;
    if ((st = prepare_out_dir(out_dir, "subset", &created))) return st;
    int *idx[3] = {NULL, NULL, NULL}, cnt[3] = {0, 0, 0};
    for (int s = 0; !st && s < 3; s++) {
        int n = ds->split[s].n;
        if (n == 0) continue;
        long long k = o.count ? (o.count < n ? o.count : n) : llround(o.fraction * n);
        if (k < 1) k = 1;
        cnt[s] = (int)k;
        /* a different stream per split, so the splits' choices are independent */
        st = choose(n, (int)k, (uint64_t)o.seed * 3 + (uint64_t)s, &idx[s]);
    }
    static const int src[3] = {VT_SPLIT_TRAIN, VT_SPLIT_VAL, VT_SPLIT_TEST};
    if (!st) st = write_dataset(ds, out_dir, src, idx, cnt, "vt_dataset_subset");
    for (int s = 0; s < 3; s++) free(idx[s]);
    return st;
}

/* ---- clone ------------------------------------------------------------------------------------- */

static vt_status copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb");
    if (!in) return vt_fail(VT_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    vt_afile a;
    vt_status st = vt_afile_open(&a, dst);
    char buf[1 << 15];
    size_t got;
    while (!st && (got = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, got, a.f) != got)
            st = vt_fail(VT_ERR_IO, "%s: cannot write: %s", dst, strerror(errno));
    if (!st && ferror(in)) st = vt_fail(VT_ERR_IO, "%s: cannot read: %s", src, strerror(errno));
    fclose(in);
    if (st) {
        vt_afile_abort(&a);
        return st;
    }
    return vt_afile_commit(&a);
}

static vt_status copy_tree(const char *src, const char *dst, int depth)
{
    if (depth > MAX_DEPTH)
        return vt_fail(VT_ERR_DATASET, "%s: folders nested deeper than %d (a symbolic link loop?)",
                       src, MAX_DEPTH);
    DIR *d = opendir(src);
    if (!d) return vt_fail(VT_ERR_IO, "%s: cannot open folder: %s", src, strerror(errno));
    vt_status st = VT_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *s = join2(src, e->d_name), *t = s ? join2(dst, e->d_name) : NULL;
        struct stat sb;
        if (!s || !t) st = VT_ERR_OUT_OF_MEMORY;
        else if (stat(s, &sb) != 0) st = VT_OK; /* a dangling link: nothing to copy */
        else if (S_ISDIR(sb.st_mode)) {
            if (mkdir(t, 0755) != 0)
                st = vt_fail(VT_ERR_IO, "%s: cannot create folder: %s", t, strerror(errno));
            else st = copy_tree(s, t, depth + 1);
        } else if (S_ISREG(sb.st_mode)) {
            st = copy_file(s, t);
        }
        free(s);
        free(t);
    }
    closedir(d);
    return st;
}

VT_API vt_status vt_dataset_clone(const char *src_dir, const char *dst_dir)
{
    if (!src_dir || !dst_dir)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_clone: NULL argument");
    if (!vt_det_is_dir(src_dir))
        return vt_fail(VT_ERR_NOT_FOUND, "%s: no such folder", src_dir);
    int created;
    vt_status st = prepare_out_dir(dst_dir, "clone", &created);
    if (st) return st;
    char *rs = realpath(src_dir, NULL), *rd = realpath(dst_dir, NULL);
    if (!rs || !rd) st = vt_fail(VT_ERR_IO, "%s: cannot resolve: %s", rs ? dst_dir : src_dir,
                                 strerror(errno));
    else {
        size_t n = strlen(rs);
        if (!strncmp(rs, rd, n) && (rd[n] == '/' || rd[n] == 0 || n == 1))
            st = vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: the destination lies inside the source %s",
                         dst_dir, src_dir);
    }
    free(rs);
    free(rd);
    if (st) {
        if (created) rmdir(dst_dir);
        return st;
    }
    return copy_tree(src_dir, dst_dir, 0);
}

/* ---- statistics --------------------------------------------------------------------------------- */

VT_API vt_status vt_dataset_class_histogram(const vt_dataset *ds, vt_split split, int64_t *counts,
                                            int n)
{
    if (!ds || !counts || (unsigned)split >= 3)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_class_histogram: bad argument");
    static const char call[] = "vt_dataset_class_histogram";
    vt_status st = vt_buffer_fits_int(call, counts, n, (size_t)ds->num_classes, "counts");
    if (st) return st;
    memset(counts, 0, (size_t)ds->num_classes * sizeof *counts);
    const vt_split_list *sl = &ds->split[split];
    if (sl->labels) {
        for (int i = 0; i < sl->n; i++)
            if (sl->labels[i] >= 0 && sl->labels[i] < ds->num_classes) counts[sl->labels[i]]++;
    } else if (sl->box_start) {
        for (int b = 0; b < sl->box_start[sl->n]; b++) counts[sl->boxes[b].cls]++;
    }
    return VT_OK;
}

VT_API vt_status vt_dataset_box_histogram(const vt_dataset *ds, vt_split split,
                                          vt_box_measure measure, int64_t *counts, int nbins)
{
    if (!ds || !counts || (unsigned)split >= 3 || nbins < 1 || nbins > 10000 ||
        measure < VT_BOX_WIDTH || measure > VT_BOX_SQRT_AREA)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_box_histogram: bad argument");
    if (ds->labels->image_class)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: a classification dataset has no boxes", ds->root);
    memset(counts, 0, (size_t)nbins * sizeof *counts);
    const vt_split_list *sl = &ds->split[split];
    int nb = sl->box_start ? sl->box_start[sl->n] : 0;
    for (int b = 0; b < nb; b++) {
        const vt_det_box *x = &sl->boxes[b];
        double v = measure == VT_BOX_WIDTH ? x->w : measure == VT_BOX_HEIGHT ? x->h
                                                                            : sqrt(x->w * x->h);
        int k = (int)(fmin(fmax(v, 0), 1) * nbins);
        counts[k < nbins ? k : nbins - 1]++;
    }
    return VT_OK;
}

#define RGB(r, g, b) ((uint32_t)(r) << 16 | (uint32_t)(g) << 8 | (uint32_t)(b))

VT_API vt_status vt_dataset_plot_labels(const vt_dataset *ds, const char *png_path)
{
    if (!ds || !png_path)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_plot_labels: NULL argument");
    enum { BINS = 20 };
    static const uint32_t colours[3] = {RGB(31, 119, 180), RGB(255, 127, 14), RGB(44, 160, 44)};
    int k = ds->num_classes, det = !ds->labels->image_class;
    double *vals = vt_calloc((size_t)3 * (k + BINS), sizeof *vals);
    int64_t *tmp = vt_calloc((size_t)(k > BINS ? k : BINS) + 1, sizeof *tmp);
    char (*labels)[16] = vt_calloc((size_t)(k > BINS ? k : BINS) + 1, sizeof *labels);
    const char **lp = vt_calloc((size_t)(k > BINS ? k : BINS) + 1, sizeof *lp);
    vt_canvas c = {0};
    vt_status st = vals && tmp && labels && lp ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    const double *cls_series[3], *box_series[3];
    const char *names[3];
    uint32_t rgb[3];
    int ns = 0;
    for (int s = 0; !st && s < 3; s++) {
        if (ds->split[s].n == 0) continue;
        double *cv = vals + (size_t)ns * (k + BINS), *bv = cv + k;
        st = vt_dataset_class_histogram(ds, (vt_split)s, tmp, k);
        for (int i = 0; !st && i < k; i++) cv[i] = (double)tmp[i];
        if (!st && det) st = vt_dataset_box_histogram(ds, (vt_split)s, VT_BOX_SQRT_AREA, tmp, BINS);
        for (int i = 0; !st && det && i < BINS; i++) bv[i] = (double)tmp[i];
        cls_series[ns] = cv;
        box_series[ns] = bv;
        names[ns] = split_names[s];
        rgb[ns] = colours[s];
        ns++;
    }
    if (!st) st = vt_canvas_init(&c, 1000, det ? 900 : 480);
    if (!st) {
        vt_canvas_rect(&c, 0, 0, c.w, c.h, RGB(255, 255, 255));
        /* whole names: the chart cuts long ones with an ellipsis at a character boundary */
        for (int i = 0; i < k; i++) lp[i] = ds->class_names[i];
        vt_plot_bars(&c, 0, 0, c.w, 460, det ? "Instances per class" : "Images per class", lp, k,
                     cls_series, names, rgb, ns);
        if (det) {
            for (int i = 0; i < BINS; i++) {
                snprintf(labels[i], sizeof labels[i], "%.2f", (i + 1) / (double)BINS);
                lp[i] = labels[i];
            }
            vt_plot_bars(&c, 0, 470, c.w, 420, "Boxes by size: sqrt(w*h) relative to the image",
                         lp, BINS, box_series, names, rgb, ns);
        }
        st = vt_image_save_png(png_path, c.px, c.w, c.h, 3, (size_t)c.w * 3);
    }
    vt_canvas_free(&c);
    free(vals);
    free(tmp);
    free(labels);
    free(lp);
    return st;
}
