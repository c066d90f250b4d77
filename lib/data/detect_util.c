/* Shared pieces of the detection loaders: file helpers, the problem list, the split builder
 * (paths with per-image box ranges), duplicate removal, and the public box/problem accessors. */
#include "data/detect_data.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int vt_det_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int vt_det_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int vt_det_entry(const char *path, struct stat *sb)
{
    struct stat tmp, *s = sb ? sb : &tmp;
    if (stat(path, s) == 0)
        return S_ISREG(s->st_mode) ? VT_ENT_FILE : S_ISDIR(s->st_mode) ? VT_ENT_DIR : VT_ENT_OTHER;
    int err = errno;
    struct stat lsb;
    if (lstat(path, &lsb) != 0 || !S_ISLNK(lsb.st_mode)) return VT_ENT_NONE;
    return err == ELOOP ? VT_ENT_LOOP : VT_ENT_BROKEN;
}

int vt_det_link_code(int kind)
{
    return kind == VT_ENT_LOOP ? VT_PROBLEM_SYMLINK_LOOP : VT_PROBLEM_BROKEN_LINK;
}

/* The path a link's target names: relative targets are relative to the link's folder. */
static void link_target_path(const char *link, const char *target, char *out, size_t cap)
{
    const char *slash = strrchr(link, '/');
    while (target[0] == '.' && target[1] == '/') target += 2;
    int n = target[0] == '/' || !slash
                ? snprintf(out, cap, "%s", target)
                : snprintf(out, cap, "%.*s/%s", (int)(slash - link), link, target);
    if (n < 0 || (size_t)n >= cap) out[0] = 0; /* too long: matches nothing */
}

void vt_det_link_why(const char *path, int kind, char *buf, size_t cap)
{
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) {
        snprintf(buf, cap, "symbolic link that cannot be read: %s", strerror(errno));
        return;
    }
    target[n] = 0;
    if (kind != VT_ENT_LOOP) {
        char full[PATH_MAX];
        link_target_path(path, target, full, sizeof full);
        int err = access(full, F_OK) ? errno : 0;
        if (!err || err == ENOENT || err == ENOTDIR)
            snprintf(buf, cap, "symbolic link to '%s', which does not exist", target);
        else
            snprintf(buf, cap, "symbolic link to '%s', which cannot be reached: %s", target,
                     strerror(err));
        return;
    }
    /* the chain as written, until it comes back to the start (a few hops at most) */
    const char *base = strrchr(path, '/');
    size_t k = (size_t)snprintf(buf, cap, "symbolic link loop (%s", base ? base + 1 : path);
    char cur[PATH_MAX], next[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", path);
    int closed = 0;
    for (int hop = 0; hop < 4 && k < cap; hop++) {
        if (hop) {
            n = readlink(cur, target, sizeof target - 1);
            if (n < 0) break;
            target[n] = 0;
        }
        k += (size_t)snprintf(buf + k, cap - k, " -> %s", target);
        link_target_path(cur, target, next, sizeof next);
        if (!strcmp(next, path)) {
            closed = 1;
            break;
        }
        memcpy(cur, next, sizeof cur);
    }
    if (k < cap) snprintf(buf + k, cap - k, "%s)", closed ? "" : " -> ...");
}

vt_status vt_det_link_problem(vt_dataset *ds, const char *path, int kind)
{
    char why[512];
    vt_det_link_why(path, kind, why, sizeof why);
    return vt_ds_problem_add(ds, path, 0, vt_det_link_code(kind), "%s; skipped", why);
}

char *vt_det_abs_path(const char *path)
{
    char cwd[PATH_MAX] = "/";
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/");
    size_t n = (path[0] == '/' ? 0 : strlen(cwd) + 1) + strlen(path) + 2;
    char *in = vt_malloc(n), *out = vt_malloc(n);
    if (!in || !out) {
        free(in);
        free(out);
        return NULL;
    }
    if (path[0] == '/') snprintf(in, n, "%s", path);
    else snprintf(in, n, "%s/%s", cwd, path);
    /* out holds "/a/b" (or "" for the root) as components are added and removed */
    size_t len = 0;
    out[0] = 0;
    for (char *save = NULL, *c = strtok_r(in, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, ".")) continue;
        if (!strcmp(c, "..")) {
            while (len > 0 && out[len - 1] != '/') len--;
            if (len > 0) len--; /* the slash */
            out[len] = 0;
            continue;
        }
        len += (size_t)snprintf(out + len, n - len, "/%s", c);
    }
    if (!len) snprintf(out, n, "/");
    free(in);
    return out;
}

int vt_det_path_within(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return 1;
    return !strncmp(path, root, n) && (path[n] == 0 || path[n] == '/');
}

int vt_det_path_may_escape(const char *rel)
{
    if (rel[0] == '/') return 1;
    for (const char *p = rel; (p = strstr(p, "..")); p += 2)
        if ((p == rel || p[-1] == '/') && (p[2] == 0 || p[2] == '/')) return 1;
    return 0;
}

vt_status vt_det_read_file(const char *path, char **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = vt_malloc(cap);
    vt_status st = buf ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    while (!st) {
        if (n + 1 >= cap) {
            char *nb = vt_realloc(buf, cap *= 2);
            if (!nb) {
                st = VT_ERR_OUT_OF_MEMORY;
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) st = vt_fail(VT_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *out = buf;
    *size = n;
    return VT_OK;
}

/* ---- problems ---------------------------------------------------------------------------- */

vt_status vt_ds_problem_add(vt_dataset *ds, const char *file, int line, int code,
                            const char *fmt, ...)
{
    if (ds->num_problems > VT_DS_MAX_PROBLEMS) return VT_OK;
    if (ds->num_problems == VT_DS_MAX_PROBLEMS) {
        code = VT_PROBLEM_TRUNCATED;
        file = ds->root;
        line = 0;
        fmt = "too many problems; later ones are not recorded";
    }
    if (ds->num_problems == ds->cap_problems) {
        int cap = ds->cap_problems ? ds->cap_problems * 2 : 16;
        vt_ds_problem *p = vt_realloc(ds->problems, (size_t)cap * sizeof *p);
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        ds->problems = p;
        ds->cap_problems = cap;
    }
    char text[768];
    int k = line > 0 ? snprintf(text, sizeof text, "%s:%d: ", file, line)
                     : snprintf(text, sizeof text, "%s: ", file);
    if (k < 0 || (size_t)k >= sizeof text) k = 0;
    va_list ap;
    va_start(ap, fmt);
    if (code == VT_PROBLEM_TRUNCATED) snprintf(text + k, sizeof text - (size_t)k, "%s", fmt);
    else vsnprintf(text + k, sizeof text - (size_t)k, fmt, ap);
    va_end(ap);
    vt_ds_problem *p = &ds->problems[ds->num_problems];
    p->file = vt_strdup(file);
    p->message = vt_strdup(text);
    if (!p->file || !p->message) {
        free(p->file);
        free(p->message);
        return VT_ERR_OUT_OF_MEMORY;
    }
    p->line = line;
    p->code = code;
    ds->num_problems++;
    /* policy=fail: the problem is still recorded, so the dataset's list and the error agree. */
    if (ds->policy == VT_DS_POLICY_FAIL && code != VT_PROBLEM_TRUNCATED)
        return vt_fail(VT_ERR_DATASET, "%s (policy=fail)", text);
    return VT_OK;
}

/* ---- split builder ----------------------------------------------------------------------- */

vt_status vt_det_builder_image(vt_det_builder *b, char *path)
{
    if (!path) return VT_ERR_OUT_OF_MEMORY;
    if (b->n == INT_MAX - 2) {
        vt_fail(VT_ERR_DATASET, "%s: too many images", path);
        free(path);
        return VT_ERR_DATASET;
    }
    if (b->n == b->cap) {
        int cap = b->cap ? (b->cap > INT_MAX / 4 ? INT_MAX - 2 : b->cap * 2) : 256;
        char **p = vt_realloc(b->paths, (size_t)cap * sizeof *p);
        if (p) b->paths = p;
        int *s = p ? vt_realloc(b->start, ((size_t)cap + 1) * sizeof *s) : NULL;
        if (!s) {
            free(path);
            return VT_ERR_OUT_OF_MEMORY;
        }
        if (b->cap == 0) s[0] = 0;
        b->start = s;
        b->cap = cap;
    }
    b->paths[b->n++] = path;
    b->start[b->n] = b->nbox;
    return VT_OK;
}

vt_status vt_det_builder_box(vt_det_builder *b, const vt_det_box *box)
{
    if (b->nbox == b->capbox) {
        if (b->capbox > INT_MAX / 4) return vt_fail(VT_ERR_DATASET, "too many boxes");
        int cap = b->capbox ? b->capbox * 2 : 1024;
        vt_det_box *p = vt_realloc(b->boxes, (size_t)cap * sizeof *p);
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        b->boxes = p;
        b->capbox = cap;
    }
    b->boxes[b->nbox++] = *box;
    b->start[b->n] = b->nbox;
    return VT_OK;
}

/* Room for `more` points in xy. */
static vt_status reserve_points(vt_det_builder *b, int more)
{
    if (more > INT_MAX / 4 - b->nxy) return vt_fail(VT_ERR_DATASET, "too many polygon points");
    if (b->nxy + more <= b->capxy) return VT_OK;
    int cap = b->capxy ? b->capxy : 4096;
    while (cap < b->nxy + more) cap = cap > INT_MAX / 4 ? INT_MAX / 2 : cap * 2;
    float *p = vt_realloc(b->xy, (size_t)cap * 2 * sizeof *p);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    b->xy = p;
    b->capxy = cap;
    return VT_OK;
}

vt_status vt_det_builder_poly(vt_det_builder *b, const vt_det_box *box, const float *xy,
                              int npts)
{
    if (npts < 3) return vt_fail(VT_ERR_DATASET, "a polygon of %d points", npts);
    vt_status st = reserve_points(b, npts);
    if (st) return st;
    /* polys grows with boxes: same capacity */
    if (!b->polys || b->nbox == b->capbox) {
        int cap = b->nbox == b->capbox ? (b->capbox ? b->capbox * 2 : 1024) : b->capbox;
        if (b->capbox > INT_MAX / 4) return vt_fail(VT_ERR_DATASET, "too many polygons");
        vt_seg_poly *p = vt_realloc(b->polys, (size_t)cap * sizeof *p);
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        b->polys = p;
    }
    st = vt_det_builder_box(b, box);
    if (st) return st;
    memcpy(b->xy + 2 * (size_t)b->nxy, xy, (size_t)npts * 2 * sizeof *xy);
    b->polys[b->nbox - 1] = (vt_seg_poly){box->cls, npts, b->nxy};
    b->nxy += npts;
    return VT_OK;
}

vt_status vt_det_builder_instance(vt_det_builder *b, const vt_det_box *box, const float *xy,
                                  const int *part_npts, int nparts)
{
    if (!b->inst || nparts < 1 || nparts > INT_MAX / 4 - b->npart)
        return vt_fail(VT_ERR_DATASET, "too many polygon parts");
    int total = 0;
    for (int k = 0; k < nparts; k++) {
        if (part_npts[k] < 3 || part_npts[k] > INT_MAX / 4 - total)
            return vt_fail(VT_ERR_DATASET, "polygon part of %d points", part_npts[k]);
        total += part_npts[k];
    }
    vt_status st = reserve_points(b, total);
    if (st) return st;
    if (b->npart + nparts > b->cappart) {
        int cap = b->cappart ? b->cappart : 1024;
        while (cap < b->npart + nparts) cap = cap > INT_MAX / 4 ? INT_MAX / 2 : cap * 2;
        vt_seg_poly *p = vt_realloc(b->parts, (size_t)cap * sizeof *p);
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        b->parts = p;
        b->cappart = cap;
    }
    if (b->nbox > INT_MAX / 4) return vt_fail(VT_ERR_DATASET, "too many boxes");
    if (b->nbox + 2 > b->capstart) {
        int cap = b->capstart ? b->capstart * 2 : 1025;
        while (cap < b->nbox + 2) cap *= 2;
        int *p = vt_realloc(b->part_start, (size_t)cap * sizeof *p);
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        if (!b->part_start) p[0] = 0;
        b->part_start = p;
        b->capstart = cap;
    }
    if ((st = vt_det_builder_box(b, box))) return st;
    memcpy(b->xy + 2 * (size_t)b->nxy, xy, (size_t)total * 2 * sizeof *xy);
    for (int k = 0; k < nparts; k++) {
        b->parts[b->npart++] = (vt_seg_poly){box->cls, part_npts[k], b->nxy};
        b->nxy += part_npts[k];
    }
    b->part_start[b->nbox] = b->npart;
    return VT_OK;
}

/* Points used by the first nbox polygons. */
static int poly_points_end(const vt_det_builder *b)
{
    return b->nbox > 0 ? b->polys[b->nbox - 1].off + b->polys[b->nbox - 1].npts : 0;
}

void vt_det_builder_pop(vt_det_builder *b)
{
    if (b->n == 0) return;
    free(b->paths[--b->n]);
    b->nbox = b->start[b->n];
    if (b->polys) b->nxy = poly_points_end(b);
    if (b->inst && b->part_start) {
        b->npart = b->part_start[b->nbox];
        b->nxy = b->npart ? b->parts[b->npart - 1].off + b->parts[b->npart - 1].npts : 0;
    }
}

void vt_det_builder_finish(vt_det_builder *b, vt_split_list *sl)
{
    sl->n = b->n;
    sl->paths = b->paths;
    sl->labels = NULL;
    if (!b->start) b->start = vt_calloc(1, sizeof(int)); /* n+1 offsets even when empty */
    sl->box_start = b->start;
    sl->boxes = b->boxes;
    sl->polys = b->polys;
    sl->poly_xy = b->xy;
    if (b->inst) {
        /* box_start[n] + 1 offsets and the arrays present even when there are no objects */
        if (!b->part_start) b->part_start = vt_calloc(1, sizeof(int));
        if (!b->parts) b->parts = vt_calloc(1, sizeof *b->parts);
        sl->part_start = b->part_start;
        sl->parts = b->parts;
        if (!sl->poly_xy) sl->poly_xy = vt_calloc(1, sizeof(float));
    }
    if (sl->polys && !sl->poly_xy) sl->poly_xy = vt_calloc(1, sizeof(float));
    memset(b, 0, sizeof *b);
}

void vt_det_builder_free(vt_det_builder *b)
{
    for (int i = 0; i < b->n; i++) free(b->paths[i]);
    free(b->paths);
    free(b->start);
    free(b->boxes);
    free(b->polys);
    free(b->xy);
    free(b->part_start);
    free(b->parts);
    memset(b, 0, sizeof *b);
}

typedef struct dup_key {
    vt_det_box b;
    const float *xy; /* polygon points (segmentation: all parts of an instance), else NULL */
    int npts;
    int nparts; /* instance segmentation: its parts, else 0 */
    int pos;
} dup_key;

/* Order by class, box, then polygon points: equal keys are exact duplicates. */
static int cmp_key(const dup_key *a, const dup_key *b)
{
    if (a->b.cls != b->b.cls) return a->b.cls < b->b.cls ? -1 : 1;
    const float va[4] = {a->b.cx, a->b.cy, a->b.w, a->b.h}, vb[4] = {b->b.cx, b->b.cy, b->b.w, b->b.h};
    for (int k = 0; k < 4; k++)
        if (va[k] != vb[k]) return va[k] < vb[k] ? -1 : 1;
    if (a->npts != b->npts) return a->npts < b->npts ? -1 : 1;
    if (a->nparts != b->nparts) return a->nparts < b->nparts ? -1 : 1;
    for (int k = 0; k < 2 * a->npts; k++)
        if (a->xy[k] != b->xy[k]) return a->xy[k] < b->xy[k] ? -1 : 1;
    return 0;
}

static int cmp_dup(const void *pa, const void *pb)
{
    const dup_key *a = pa, *b = pb;
    int c = cmp_key(a, b);
    return c ? c : a->pos - b->pos;
}

vt_status vt_det_builder_dedupe(vt_det_builder *b, vt_dataset *ds, const char *file, int *lines,
                                const char *entry_name)
{
    int s = b->start[b->n - 1], k = b->nbox - s;
    if (k < 2) return VT_OK;
    /* Sorting keeps this O(k log k): a generated label file may hold thousands of lines. */
    dup_key *keys = vt_malloc((size_t)k * sizeof *keys);
    unsigned char *dead = vt_calloc((size_t)k, 1);
    vt_status st = keys && dead ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; !st && i < k; i++) {
        keys[i].b = b->boxes[s + i];
        keys[i].xy = b->polys ? b->xy + 2 * (size_t)b->polys[s + i].off : NULL;
        keys[i].npts = b->polys ? b->polys[s + i].npts : 0;
        keys[i].nparts = 0;
        if (b->inst) { /* an object's parts and points are contiguous */
            const vt_seg_poly *p0 = &b->parts[b->part_start[s + i]];
            const vt_seg_poly *p1 = &b->parts[b->part_start[s + i + 1] - 1];
            keys[i].xy = b->xy + 2 * (size_t)p0->off;
            keys[i].npts = p1->off + p1->npts - p0->off;
            keys[i].nparts = b->part_start[s + i + 1] - b->part_start[s + i];
        }
        keys[i].pos = i;
    }
    if (!st) qsort(keys, (size_t)k, sizeof *keys, cmp_dup);
    for (int i = 1; !st && i < k; i++) {
        int first = i - 1;
        while (i < k && cmp_key(&keys[i], &keys[first]) == 0) {
            int p = keys[i].pos, q = keys[first].pos;
            dead[p] = 1;
            st = entry_name ? vt_ds_problem_add(ds, file, 0, VT_PROBLEM_DUPLICATE,
                                                "%s[%d]: duplicate of %s[%d]; dropped",
                                                entry_name, lines[p], entry_name, lines[q])
                            : vt_ds_problem_add(ds, file, lines[p], VT_PROBLEM_DUPLICATE,
                                                "duplicate of line %d; dropped", lines[q]);
            if (st) break;
            i++;
        }
    }
    if (!st) {
        /* polygons of the image are contiguous and in box order: compact points too */
        int w = 0, pw = b->polys ? b->polys[s].off : 0;
        for (int i = 0; i < k; i++)
            if (!dead[i]) {
                b->boxes[s + w] = b->boxes[s + i];
                if (b->polys) {
                    vt_seg_poly p = b->polys[s + i];
                    memmove(b->xy + 2 * (size_t)pw, b->xy + 2 * (size_t)p.off,
                            (size_t)p.npts * 2 * sizeof(float));
                    p.off = pw;
                    pw += p.npts;
                    b->polys[s + w] = p;
                }
                lines[w++] = lines[i];
            }
        b->nbox = s + w;
        b->start[b->n] = b->nbox;
        if (b->polys) b->nxy = pw;
    }
    if (!st && b->inst) {
        /* the same for instances: their parts and points move down over the dropped ones */
        int w = 0, qw = b->part_start[s];
        int pw = qw < b->npart ? b->parts[qw].off : b->nxy;
        for (int i = 0; i < k; i++) {
            int q0 = b->part_start[s + i], q1 = b->part_start[s + i + 1]; /* read first */
            if (dead[i]) continue;
            b->part_start[s + w] = qw;
            for (int q = q0; q < q1; q++) {
                vt_seg_poly p = b->parts[q];
                memmove(b->xy + 2 * (size_t)pw, b->xy + 2 * (size_t)p.off,
                        (size_t)p.npts * 2 * sizeof(float));
                p.off = pw;
                pw += p.npts;
                b->parts[qw++] = p;
            }
            w++;
        }
        b->part_start[s + w] = qw;
        b->npart = qw;
        b->nxy = pw;
    }
    free(keys);
    free(dead);
    return st;
}

/* ---- accessors ------------------------------------------------------------------------------- */

static const vt_split_list *det_split(const vt_dataset *ds, vt_split s, int i)
{
    if (!ds || (unsigned)s >= 3) return NULL;
    const vt_split_list *sl = &ds->split[s];
    return sl->box_start && i >= 0 && i < sl->n ? sl : NULL;
}

VT_API int vt_dataset_num_boxes(const vt_dataset *ds, vt_split split, int i)
{
    const vt_split_list *sl = det_split(ds, split, i);
    return sl ? sl->box_start[i + 1] - sl->box_start[i] : 0;
}

VT_API vt_status vt_dataset_box(const vt_dataset *ds, vt_split split, int i, int j, int *cls,
                                float xywh[4])
{
    const vt_split_list *sl = det_split(ds, split, i);
    if (!sl || j < 0 || j >= sl->box_start[i + 1] - sl->box_start[i])
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_box: no box %d of image %d", j, i);
    const vt_det_box *b = &sl->boxes[sl->box_start[i] + j];
    if (cls) *cls = b->cls;
    if (xywh) {
        xywh[0] = b->cx;
        xywh[1] = b->cy;
        xywh[2] = b->w;
        xywh[3] = b->h;
    }
    return VT_OK;
}

VT_API int vt_dataset_num_problems(const vt_dataset *ds) { return ds ? ds->num_problems : 0; }

VT_API vt_status vt_dataset_problem(const vt_dataset *ds, int k, const char **file, int *line,
                                    int *code, const char **message)
{
    if (!ds || k < 0 || k >= ds->num_problems)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_problem: no problem %d", k);
    const vt_ds_problem *p = &ds->problems[k];
    if (file) *file = p->file;
    if (line) *line = p->line;
    if (code) *code = p->code;
    if (message) *message = p->message;
    return VT_OK;
}

/* ---- segmentation classes ---------------------------------------------------------------- */

vt_status vt_seg_add_background(vt_dataset *ds, const char *file)
{
    /* Mask values are bytes and 255 is the usual ignore value. */
    if (ds->num_classes > 254)
        return vt_fail(VT_ERR_DATASET, "%s: %d classes; segmentation datasets hold at most 254 "
                       "object classes (8-bit masks, background and ignore included)", file,
                       ds->num_classes);
    char **names = vt_realloc(ds->class_names, ((size_t)ds->num_classes + 1) * sizeof *names);
    if (!names) return VT_ERR_OUT_OF_MEMORY;
    ds->class_names = names;
    char *bg = vt_strdup("background");
    if (!bg) return VT_ERR_OUT_OF_MEMORY;
    memmove(names + 1, names, (size_t)ds->num_classes * sizeof *names);
    names[0] = bg;
    ds->num_classes++;
    return VT_OK;
}
