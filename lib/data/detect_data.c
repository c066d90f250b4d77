/* Detection datasets in the Ultralytics YOLO layout: data.yaml (parsed with libyaml's document
 * API) naming image folders / .txt lists, and one label file per image.  The layout rules are
 * documented in include/visiontrain/visiontrain.h ("detection datasets").
 *
 * Label problems never fail the open: a dataset of thousands of images usually has a few bad
 * lines, and refusing to train over them helps nobody.  Each bad box is dropped and recorded
 * with file and line, so the trainer can report them. */
#include "data/detect_data.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#ifdef VT_HAVE_YAML
#include <yaml.h>
#endif

/* Tolerance on normalised coordinates: labels written as %.6f of a value computed in float
 * may land a hair above 1. */
#define COORD_EPS 1e-5f
/* Folder recursion limit: symlink loops must end somewhere. */
#define MAX_DEPTH 24

/* ---- small helpers ----------------------------------------------------------------------- */

static int has_ext(const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    return dot && strcasecmp(dot, ext) == 0;
}

static int is_image_name(const char *name)
{
    return has_ext(name, ".png") || has_ext(name, ".jpg") || has_ext(name, ".jpeg");
}

static char *path_join(const char *a, const char *b)
{
    if (b[0] == '/' || !a || !a[0]) return vt_strdup(b);
    while (b[0] == '.' && b[1] == '/') b += 2; /* "./x" and "x" are the same entry */
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = vt_malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, a[strlen(a) - 1] == '/' ? "" : "/", b);
    return s;
}

/* The folder part of a path ("." when there is none). */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return vt_strdup(".");
    if (slash == path) return vt_strdup("/");
    size_t n = (size_t)(slash - path);
    char *s = vt_malloc(n + 1);
    if (s) {
        memcpy(s, path, n);
        s[n] = 0;
    }
    return s;
}

/* ---- YOLO label files -------------------------------------------------------------------- */

/* Scratch shared by all label files of an open, so parsing allocates nothing per file. */
typedef struct label_ctx {
    vt_dataset *ds;
    int nc;  /* object classes of the file (class ids 0..nc-1 in label lines) */
    int seg; /* YOLO segmentation labels: "class x1 y1 x2 y2 ..." polygons */
    int inst; /* ... read per instance (no class shift), else semantic (class 0 background) */
    int *lines;
    int cap_lines;
    char *line;
    size_t line_cap;
    char **tok; /* segmentation: tokens of a line */
    int cap_tok;
    float *pts; /* segmentation: the points of the polygon being parsed */
    int cap_pts, npts;
    const char *masks; /* mask layout: the masks folder name, else NULL */
} label_ctx;

/* Polygons longer than this are refused: a binary file read as labels must not exhaust
 * memory, and real outlines stay far below it. */
#define MAX_POLY_POINTS 100000

/* image path -> label path: last "/images/" -> "/labels/", extension -> ".txt" */
static char *label_path_of(const char *img)
{
    size_t n = strlen(img);
    char *s = vt_malloc(n + 8);
    if (!s) return NULL;
    memcpy(s, img, n + 1);
    char *hit = NULL;
    for (char *p = strstr(s, "/images/"); p; p = strstr(p + 1, "/images/")) hit = p;
    if (hit) memcpy(hit, "/labels/", 8);
    char *slash = strrchr(s, '/');
    char *dot = strrchr(slash ? slash : s, '.');
    strcpy(dot ? dot : s + n, ".txt");
    return s;
}

/* image path -> mask path: last "/images/" -> "/<masks>/", extension -> ".png" */
static char *mask_path_of(const char *img, const char *masks)
{
    size_t n = strlen(img), m = strlen(masks);
    char *s = vt_malloc(n + m + 8);
    if (!s) return NULL;
    const char *hit = NULL;
    for (const char *p = strstr(img, "/images/"); p; p = strstr(p + 1, "/images/")) hit = p;
    size_t pre = hit ? (size_t)(hit - img) : 0;
    if (hit) {
        memcpy(s, img, pre);
        snprintf(s + pre, m + 3, "/%s/", masks);
        strcpy(s + pre + m + 2, hit + 8);
    } else {
        memcpy(s, img, n + 1);
    }
    char *slash = strrchr(s, '/');
    char *dot = strrchr(slash ? slash : s, '.');
    strcpy(dot ? dot : s + strlen(s), ".png");
    return s;
}

static int parse_float(const char *tok, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(tok, &end);
    if (end == tok || *end) return 0;
    *out = (float)v;
    return 1;
}

/* A segmentation line (tokens already split): class and a polygon of >= 3 normalised points;
 * the points (clamped to 0..1) go to c->pts, the bounding box to *box. */
static vt_status parse_polygon_line(label_ctx *c, const char *file, int lineno, char **tok,
                                    int nt, vt_det_box *box, int *keep)
{
    float cls;
    if (!parse_float(tok[0], &cls) || !isfinite(cls) || cls != floorf(cls))
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                 "class '%.32s' is not an integer; polygon dropped", tok[0]);
    if ((nt - 1) % 2)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                 "%d coordinates, expected x y pairs (class x1 y1 x2 y2 ...); "
                                 "polygon dropped", nt - 1);
    if (nt - 1 < 6)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_POLYGON_POINTS,
                                 "polygon of %d point%s, at least 3 needed; polygon dropped",
                                 (nt - 1) / 2, nt == 3 ? "" : "s");
    if (cls < 0 || cls >= (float)c->nc)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_CLASS_RANGE,
                                 "class %.0f is outside 0..%d; polygon dropped", cls, c->nc - 1);
    float lo[2] = {1, 1}, hi[2] = {0, 0};
    if (c->cap_pts < nt) {
        float *p = vt_realloc(c->pts, (size_t)nt * sizeof *p);
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        c->pts = p;
        c->cap_pts = nt;
    }
    for (int k = 1; k < nt; k++) {
        float v;
        if (!parse_float(tok[k], &v))
            return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                     "column %d '%.32s' is not a number; polygon dropped", k + 1,
                                     tok[k]);
        if (!(v >= -COORD_EPS && v <= 1.0f + COORD_EPS))
            return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_COORD_RANGE,
                                     "coordinate %d (%.32s) is outside 0..1 (labels must be "
                                     "normalised); polygon dropped", k, tok[k]);
        v = fminf(fmaxf(v, 0), 1);
        c->pts[k - 1] = v;
        lo[(k - 1) % 2] = fminf(lo[(k - 1) % 2], v);
        hi[(k - 1) % 2] = fmaxf(hi[(k - 1) % 2], v);
    }
    if (hi[0] <= lo[0] || hi[1] <= lo[1])
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_ZERO_SIZE,
                                 "polygon of zero width or height; polygon dropped");
    c->npts = (nt - 1) / 2;
    box->cls = (int)cls;
    box->cx = (lo[0] + hi[0]) / 2;
    box->cy = (lo[1] + hi[1]) / 2;
    box->w = hi[0] - lo[0];
    box->h = hi[1] - lo[1];
    *keep = 1;
    return VT_OK;
}

/* Parse one label line into a box; returns 1 when kept, 0 when dropped (problem recorded). */
static vt_status parse_label_line(label_ctx *c, const char *file, int lineno, char *line,
                                  vt_det_box *box, int *keep)
{
    *keep = 0;
    /* Polygons may have many points; a detection line needs 5 tokens (6 tell "too many"). */
    char *dtok[6], **tok = c->seg ? c->tok : dtok;
    int maxtok = c->seg ? 1 + 2 * MAX_POLY_POINTS : 6, nt = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r\n\v\f", &save); t;
         t = strtok_r(NULL, " \t\r\n\v\f", &save)) {
        if (c->seg && nt < maxtok && nt == c->cap_tok) {
            int cap = c->cap_tok ? c->cap_tok * 2 : 256;
            char **p = vt_realloc(c->tok, (size_t)cap * sizeof *p);
            if (!p) return VT_ERR_OUT_OF_MEMORY;
            tok = c->tok = p;
            c->cap_tok = cap;
        }
        if (nt < maxtok) tok[nt++] = t;
        else nt++;
    }
    if (nt == 0) {
        *keep = -1; /* blank line: nothing */
        return VT_OK;
    }
    if (c->seg && nt > maxtok)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                 "polygon of more than %d points; dropped", (maxtok - 1) / 2);
    /* A detection line in an instance dataset: the object has a box but no outline to learn
     * its mask from. */
    if (c->inst && nt == 5)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_POLYGON_POINTS,
                                 "a box (class cx cy w h) without a polygon: instance "
                                 "segmentation needs each object's outline (class x1 y1 x2 y2 "
                                 "...); object dropped");
    if (c->seg) return parse_polygon_line(c, file, lineno, tok, nt, box, keep);
    if (nt != 5)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                 "%d columns, expected 5 (class cx cy w h); box dropped", nt);
    float v[5];
    for (int k = 0; k < 5; k++)
        if (!parse_float(tok[k], &v[k]))
            return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                     "column %d '%.32s' is not a number; box dropped", k + 1,
                                     tok[k]);
    if (!isfinite(v[0]) || v[0] != floorf(v[0]))
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_BAD_LINE,
                                 "class '%.32s' is not an integer; box dropped", tok[0]);
    if (v[0] < 0 || v[0] >= (float)c->nc)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_CLASS_RANGE,
                                 "class %.0f is outside 0..%d; box dropped", v[0], c->nc - 1);
    for (int k = 1; k < 5; k++)
        if (!(v[k] >= -COORD_EPS && v[k] <= 1.0f + COORD_EPS))
            return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_COORD_RANGE,
                                     "coordinate %d (%.32s) is outside 0..1 (labels must be "
                                     "normalised); box dropped",
                                     k, tok[k]);
    if (v[3] <= 0 || v[4] <= 0)
        return vt_ds_problem_add(c->ds, file, lineno, VT_PROBLEM_ZERO_SIZE,
                                 "zero-size box (w %g, h %g); box dropped", v[3], v[4]);
    /* Clip the extent to the image: boxes written from slightly overhanging objects are common
     * and still useful. */
    float x0 = fmaxf(v[1] - v[3] / 2, 0), x1 = fminf(v[1] + v[3] / 2, 1);
    float y0 = fmaxf(v[2] - v[4] / 2, 0), y1 = fminf(v[2] + v[4] / 2, 1);
    box->cls = (int)v[0];
    box->cx = (x0 + x1) / 2;
    box->cy = (y0 + y1) / 2;
    box->w = x1 - x0;
    box->h = y1 - y0;
    *keep = 1;
    return VT_OK;
}

static vt_status load_labels(label_ctx *c, vt_det_builder *b, const char *img)
{
    char *lp = label_path_of(img);
    if (!lp) return VT_ERR_OUT_OF_MEMORY;
    FILE *f = fopen(lp, "r");
    if (!f) {
        vt_status st = VT_OK;
        if (errno != ENOENT && errno != ENOTDIR) /* absent: a background image */
            st = vt_ds_problem_add(c->ds, lp, 0, VT_PROBLEM_LABEL_UNREADABLE,
                                   "cannot open label file: %s; image kept without boxes",
                                   strerror(errno));
        free(lp);
        return st;
    }
    vt_status st = VT_OK;
    int lineno = 0, nb = 0;
    ssize_t len;
    errno = 0;
    while (!st && (len = getline(&c->line, &c->line_cap, f)) >= 0) {
        lineno++;
        vt_det_box box;
        int keep;
        if (memchr(c->line, 0, (size_t)len)) { /* binary junk: strtok would see half a line */
            st = vt_ds_problem_add(c->ds, lp, lineno, VT_PROBLEM_BAD_LINE,
                                   "NUL byte in label line; box dropped");
            continue;
        }
        st = parse_label_line(c, lp, lineno, c->line, &box, &keep);
        if (st || keep <= 0) continue;
        if (nb == c->cap_lines) {
            int cap = c->cap_lines ? c->cap_lines * 2 : 64;
            int *l = vt_realloc(c->lines, (size_t)cap * sizeof *l);
            if (!l) {
                st = VT_ERR_OUT_OF_MEMORY;
                break;
            }
            c->lines = l;
            c->cap_lines = cap;
        }
        c->lines[nb++] = lineno;
        if (c->inst) {
            st = vt_det_builder_instance(b, &box, c->pts, &c->npts, 1); /* one part a line */
        } else if (c->seg) {
            box.cls += 1; /* class 0 is the background */
            st = vt_det_builder_poly(b, &box, c->pts, c->npts);
        } else {
            st = vt_det_builder_box(b, &box);
        }
    }
    if (!st && ferror(f)) /* e.g. the label "file" is a folder */
        st = vt_ds_problem_add(c->ds, lp, 0, VT_PROBLEM_LABEL_UNREADABLE,
                               "cannot read label file: %s; image kept without boxes",
                               strerror(errno ? errno : EIO));
    fclose(f);
    if (!st) st = vt_det_builder_dedupe(b, c->ds, lp, c->lines, NULL);
    free(lp);
    return st;
}

/* ---- image lists ------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct strlist {
    char **v;
    int n, cap;
} strlist;

static vt_status strlist_push(strlist *l, char *s)
{
    if (!s) return VT_ERR_OUT_OF_MEMORY;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        char **v = l->cap > INT_MAX / 4 ? NULL : vt_realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(s);
            return VT_ERR_OUT_OF_MEMORY;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return VT_OK;
}

static void strlist_free(strlist *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* The folders a search is inside of, by device and inode: the real folders above the split
 * folder, then each folder the search went into.  A folder met again is a loop. */
typedef struct walk_chain {
    int n, cap;
    dev_t *dev;
    ino_t *ino;
    char **path;
} walk_chain;

static vt_status chain_push(walk_chain *c, const struct stat *sb, const char *path)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        dev_t *d = vt_realloc(c->dev, (size_t)cap * sizeof *d);
        if (d) c->dev = d;
        ino_t *i = d ? vt_realloc(c->ino, (size_t)cap * sizeof *i) : NULL;
        if (i) c->ino = i;
        char **p = i ? vt_realloc(c->path, (size_t)cap * sizeof *p) : NULL;
        if (!p) return VT_ERR_OUT_OF_MEMORY;
        c->path = p;
        c->cap = cap;
    }
    if (!(c->path[c->n] = vt_strdup(path))) return VT_ERR_OUT_OF_MEMORY;
    c->dev[c->n] = sb->st_dev;
    c->ino[c->n] = sb->st_ino;
    c->n++;
    return VT_OK;
}

static void chain_pop(walk_chain *c) { free(c->path[--c->n]); }

static void chain_free(walk_chain *c)
{
    while (c->n) chain_pop(c);
    free(c->dev);
    free(c->ino);
    free(c->path);
    memset(c, 0, sizeof *c);
}

/* The chain of the split folder: its real path and every folder above it. */
static vt_status chain_seed(walk_chain *c, const char *dir)
{
    char *real = realpath(dir, NULL);
    if (!real) return VT_OK; /* opendir will say why */
    vt_status st = VT_OK;
    for (size_t n = strlen(real); !st;) {
        char save = real[n];
        real[n] = 0;
        struct stat sb;
        /* the split folder is named as given, the folders above it by their real paths */
        if (stat(n ? real : "/", &sb) == 0) st = chain_push(c, &sb, !c->n ? dir : n ? real : "/");
        real[n] = save;
        if (!n) break;
        while (n > 0 && real[n - 1] != '/') n--;
        if (n > 0) n--; /* the slash: "/a/b" -> "/a" -> "" (the root) */
    }
    free(real);
    return st;
}

static vt_status list_images(vt_dataset *ds, const char *dir, int depth, walk_chain *chain,
                             strlist *out)
{
    if (depth > MAX_DEPTH) return VT_OK;
    DIR *d = opendir(dir);
    if (!d) return vt_fail(VT_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    vt_status st = VT_OK;
    strlist names = {0};
    struct dirent *e;
    while (!st && (e = readdir(d)))
        if (e->d_name[0] != '.') st = strlist_push(&names, vt_strdup(e->d_name));
    closedir(d);
    /* name order, so that problems come out the same on every file system */
    if (!st && names.n) qsort(names.v, (size_t)names.n, sizeof(char *), cmp_str);
    for (int k = 0; !st && k < names.n; k++) {
        char *full = path_join(dir, names.v[k]);
        if (!full) {
            st = VT_ERR_OUT_OF_MEMORY;
            break;
        }
        struct stat sb;
        int kind = vt_det_entry(full, &sb), back = -1;
        if (kind == VT_ENT_DIR)
            for (int a = 0; a < chain->n && back < 0; a++)
                if (chain->dev[a] == sb.st_dev && chain->ino[a] == sb.st_ino) back = a;
        if (kind == VT_ENT_DIR && back >= 0) {
            st = vt_ds_problem_add(ds, full, 0, VT_PROBLEM_SYMLINK_LOOP,
                                   "folder is a symbolic link back to %s (a loop); not followed",
                                   chain->path[back]);
        } else if (kind == VT_ENT_DIR) {
            st = chain_push(chain, &sb, full);
            if (!st) {
                st = list_images(ds, full, depth + 1, chain, out);
                chain_pop(chain);
            }
        } else if (kind == VT_ENT_FILE && is_image_name(names.v[k])) {
            st = strlist_push(out, full);
            full = NULL;
        } else if (kind == VT_ENT_LOOP || kind == VT_ENT_BROKEN) {
            st = vt_det_link_problem(ds, full, kind);
        }
        free(full);
    }
    strlist_free(&names);
    return st;
}

/* Image paths of a .txt list; missing images are problems, relative lines are relative to the
 * list's folder. */
static vt_status read_list(vt_dataset *ds, const char *txt, strlist *out)
{
    char *buf;
    size_t size;
    vt_status st = vt_det_read_file(txt, &buf, &size);
    if (st) return st;
    char *dir = dir_of(txt);
    if (!dir) st = VT_ERR_OUT_OF_MEMORY;
    int lineno = 0;
    for (char *p = buf, *next; !st && p < buf + size; p = next) {
        char *nl = memchr(p, '\n', (size_t)(buf + size - p));
        next = nl ? nl + 1 : buf + size;
        lineno++;
        char *end = nl ? nl : buf + size;
        while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) end--;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p == end) continue;
        *end = 0;
        if (strlen(p) != (size_t)(end - p)) {
            st = vt_ds_problem_add(ds, txt, lineno, VT_PROBLEM_MISSING_IMAGE,
                                   "NUL byte in image path; line skipped");
            continue;
        }
        char *full = path_join(dir, p);
        int kind = full ? vt_det_entry(full, NULL) : VT_ENT_NONE;
        if (!full) {
            st = VT_ERR_OUT_OF_MEMORY;
        } else if (kind == VT_ENT_FILE) {
            st = strlist_push(out, full);
            full = NULL;
        } else if (kind == VT_ENT_LOOP || kind == VT_ENT_BROKEN) {
            char why[512];
            vt_det_link_why(full, kind, why, sizeof why);
            st = vt_ds_problem_add(ds, txt, lineno, vt_det_link_code(kind),
                                   "image '%.300s': %s; skipped", p, why);
        } else {
            st = vt_ds_problem_add(ds, txt, lineno, VT_PROBLEM_MISSING_IMAGE,
                                   "image '%.300s' not found; skipped", p);
        }
        free(full);
    }
    free(dir);
    free(buf);
    return st;
}

/* ---- data.yaml ---------------------------------------------------------------------------- */

#ifdef VT_HAVE_YAML

typedef struct yaml_ctx {
    const char *file;
    yaml_document_t *doc;
    char *root_abs;     /* the dataset folder, absolute and clean (see visiontrain.h) */
    char outside[720];  /* the last split entry outside it, for an error about that split */
} yaml_ctx;

static int y_line(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static const char *y_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int y_is_null(const yaml_node_t *n)
{
    if (!n) return 1;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *s = y_scalar(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

static int y_int(const yaml_node_t *n, long *out)
{
    const char *s = y_scalar(n);
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno) return 0;
    *out = v;
    return 1;
}

static vt_status set_names(vt_dataset *ds, yaml_ctx *y, yaml_node_t *names, yaml_node_t *nc)
{
    int n = 0;
    long ncv = -1;
    if (nc && !y_is_null(nc) && (!y_int(nc, &ncv) || ncv < 1 || ncv > 1000000))
        return vt_fail(VT_ERR_DATASET, "%s:%d: nc: '%s' is not a class count (1..1000000)",
                       y->file, y_line(nc), y_scalar(nc) ? y_scalar(nc) : "(not a scalar)");
    if (names && y_is_null(names)) names = NULL;
    if (names && names->type == YAML_SEQUENCE_NODE)
        n = (int)(names->data.sequence.items.top - names->data.sequence.items.start);
    else if (names && names->type == YAML_MAPPING_NODE)
        n = (int)(names->data.mapping.pairs.top - names->data.mapping.pairs.start);
    else if (names)
        return vt_fail(VT_ERR_DATASET, "%s:%d: names: expected a list or a map index -> name",
                       y->file, y_line(names));
    else if (ncv < 0)
        return vt_fail(VT_ERR_DATASET, "%s: neither 'names' nor 'nc' is given", y->file);
    else n = (int)ncv;
    if (names && n == 0)
        return vt_fail(VT_ERR_DATASET, "%s:%d: names is empty", y->file, y_line(names));
    /* The same warning for opening and validation (policy=fail makes it fatal for both): the
     * names are what the labels are read against, as other YOLO tools do. */
    if (names && ncv >= 0 && ncv != n) {
        vt_status st = vt_ds_problem_add(ds, y->file, y_line(nc), VT_PROBLEM_CLASS_COUNT,
                                         "'names' has %d entries but 'nc' is %ld; using the %d "
                                         "names", n, ncv, n);
        if (st) return st;
    }
    ds->class_names = vt_calloc((size_t)n, sizeof(char *));
    if (!ds->class_names) return VT_ERR_OUT_OF_MEMORY;
    ds->num_classes = n;
    for (int i = 0; i < n; i++) {
        yaml_node_t *v = NULL;
        long idx = i;
        if (!names) {
            char tmp[32];
            snprintf(tmp, sizeof tmp, "class_%d", i);
            if (!(ds->class_names[i] = vt_strdup(tmp))) return VT_ERR_OUT_OF_MEMORY;
            continue;
        }
        if (names->type == YAML_SEQUENCE_NODE) {
            v = yaml_document_get_node(y->doc, names->data.sequence.items.start[i]);
        } else {
            yaml_node_pair_t *pr = &names->data.mapping.pairs.start[i];
            yaml_node_t *k = yaml_document_get_node(y->doc, pr->key);
            v = yaml_document_get_node(y->doc, pr->value);
            if (!y_int(k, &idx) || idx < 0 || idx >= n)
                return vt_fail(VT_ERR_DATASET, "%s:%d: names: key '%s' is not a class index 0..%d",
                               y->file, y_line(k), y_scalar(k) ? y_scalar(k) : "?", n - 1);
            if (ds->class_names[idx])
                return vt_fail(VT_ERR_DATASET, "%s:%d: names: class %ld is given twice", y->file,
                               y_line(k), idx);
        }
        if (!v || !y_scalar(v) || y_is_null(v))
            return vt_fail(VT_ERR_DATASET, "%s:%d: names: class %ld has no name", y->file,
                           v ? y_line(v) : y_line(names), idx);
        if (!(ds->class_names[idx] = vt_strdup(y_scalar(v)))) return VT_ERR_OUT_OF_MEMORY;
    }
    return VT_OK;
}

/* One entry of a split: folder, .txt list or single image.  An entry that resolves outside
 * the dataset folder is a warning (VT_PROBLEM_OUTSIDE_ROOT) and still used. */
static vt_status add_entry(vt_dataset *ds, yaml_ctx *y, const char *root, const char *key,
                           yaml_node_t *node, int optional, strlist *imgs)
{
    const char *v = y_scalar(node);
    if (!v || y_is_null(node))
        return vt_fail(VT_ERR_DATASET, "%s:%d: %s: expected a path or a list of paths", y->file,
                       y_line(node), key);
    char *full = path_join(root, v);
    if (!full) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = VT_OK;
    int kind = vt_det_entry(full, NULL);
    if ((kind == VT_ENT_DIR || kind == VT_ENT_FILE) && vt_det_path_may_escape(v)) {
        char *abs = vt_det_abs_path(full);
        if (!abs) st = VT_ERR_OUT_OF_MEMORY;
        else if (!vt_det_path_within(abs, y->root_abs)) {
            snprintf(y->outside, sizeof y->outside,
                     "'%.200s' resolves to %.200s, outside the dataset folder %.200s", v, abs,
                     y->root_abs);
            st = vt_ds_problem_add(ds, y->file, y_line(node), VT_PROBLEM_OUTSIDE_ROOT,
                                   "%s: %s; used anyway", key, y->outside);
        }
        free(abs);
    }
    if (st) {
        /* policy=fail, or out of memory */
    } else if (kind == VT_ENT_DIR) {
        int before = imgs->n;
        walk_chain chain = {0};
        st = chain_seed(&chain, full);
        if (!st) st = list_images(ds, full, 0, &chain, imgs);
        chain_free(&chain);
        if (!st && imgs->n > before)
            qsort(imgs->v + before, (size_t)(imgs->n - before), sizeof(char *), cmp_str);
    } else if (kind == VT_ENT_FILE && has_ext(full, ".txt")) {
        st = read_list(ds, full, imgs);
    } else if (kind == VT_ENT_FILE && is_image_name(full)) {
        st = strlist_push(imgs, full);
        full = NULL;
    } else if (kind == VT_ENT_FILE || kind == VT_ENT_OTHER) {
        st = vt_fail(VT_ERR_DATASET, "%s:%d: %s: '%s' is neither a folder, a .txt list nor an "
                     "image", y->file, y_line(node), key, v);
    } else {
        char why[560] = "";
        if (kind == VT_ENT_LOOP || kind == VT_ENT_BROKEN) {
            snprintf(why, 3, ": ");
            vt_det_link_why(full, kind, why + 2, sizeof why - 2);
        }
        if (optional)
            st = vt_ds_problem_add(ds, y->file, y_line(node), VT_PROBLEM_MISSING_SPLIT,
                                   "%s: '%s' not found (%s%s); split skipped", key, v, full, why);
        else
            st = vt_fail(VT_ERR_NOT_FOUND, "%s:%d: %s: '%s' not found (looked for %s%s)", y->file,
                         y_line(node), key, v, full, why);
    }
    free(full);
    return st;
}

static vt_status load_split(vt_dataset *ds, yaml_ctx *y, const char *root, const char *key,
                            yaml_node_t *node, int optional, label_ctx *lc, vt_split_list *sl)
{
    strlist imgs = {0};
    vt_det_builder b = {0};
    b.inst = ds->labels->instances;
    vt_status st = VT_OK;
    int problems_before = ds->num_problems;
    y->outside[0] = 0;
    if (node->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             !st && it < node->data.sequence.items.top; it++)
            st = add_entry(ds, y, root, key, yaml_document_get_node(y->doc, *it), optional, &imgs);
    } else {
        st = add_entry(ds, y, root, key, node, optional, &imgs);
    }
    /* an optional split that does not exist is already reported as missing */
    int missing = ds->num_problems > problems_before &&
                  ds->problems[ds->num_problems - 1].code == VT_PROBLEM_MISSING_SPLIT;
    /* an empty val or test split is a warning for opening and validation alike; an empty
     * train split leaves nothing to train on (validation records it and goes on) */
    int is_train = !strcmp(key, "train");
    if (!st && imgs.n == 0 && (ds->lenient || !is_train) && !missing)
        st = vt_ds_problem_add(ds, y->file, y_line(node), VT_PROBLEM_EMPTY_SPLIT,
                               "%s: no images (.png, .jpg, .jpeg) found", key);
    else if (!st && imgs.n == 0 && is_train && !missing)
        st = vt_fail(VT_ERR_DATASET, "%s:%d: %s: no images (.png, .jpg, .jpeg) found%s%s%s",
                     y->file, y_line(node), key, y->outside[0] ? " (" : "", y->outside,
                     y->outside[0] ? ")" : "");
    strlist masks = {0};
    for (int i = 0; !st && i < imgs.n; i++) {
        if (lc->masks) {
            /* Mask layout: the mask is the whole label.  Without it nothing says which pixels
             * are which, so the image is dropped rather than trained as all-ignore. */
            char *mp = mask_path_of(imgs.v[i], lc->masks);
            if (!mp) {
                st = VT_ERR_OUT_OF_MEMORY;
                break;
            }
            if (!vt_det_is_file(mp)) {
                st = vt_ds_problem_add(ds, mp, 0, VT_PROBLEM_MISSING_MASK,
                                       "mask of %.300s not found; image dropped", imgs.v[i]);
                free(mp);
                continue;
            }
            if ((st = strlist_push(&masks, mp))) break;
            st = vt_det_builder_image(&b, imgs.v[i]);
            imgs.v[i] = NULL;
            continue;
        }
        st = vt_det_builder_image(&b, imgs.v[i]);
        imgs.v[i] = NULL;
        int before = ds->num_problems;
        if (!st) st = load_labels(lc, &b, b.paths[b.n - 1]);
        if (!st && ds->policy == VT_DS_POLICY_SKIP && ds->num_problems > before) {
            vt_det_builder_pop(&b);
            ds->skipped[sl - ds->split]++;
        }
    }
    if (!st && lc->masks && !masks.v && !(masks.v = vt_calloc(1, sizeof(char *))))
        st = VT_ERR_OUT_OF_MEMORY;
    if (!st) {
        vt_det_builder_finish(&b, sl);
        if (lc->masks) {
            sl->mask_paths = masks.v;
            memset(&masks, 0, sizeof masks);
        }
    }
    vt_det_builder_free(&b);
    strlist_free(&masks);
    strlist_free(&imgs);
    return st;
}

static vt_status load_yaml_doc(vt_dataset *ds, yaml_ctx *y)
{
    yaml_node_t *root = yaml_document_get_root_node(y->doc);
    if (!root || y_is_null(root))
        return vt_fail(VT_ERR_DATASET, "%s: empty file (expected keys path, train, val, names)",
                       y->file);
    if (root->type != YAML_MAPPING_NODE)
        return vt_fail(VT_ERR_DATASET, "%s:%d: expected a mapping of keys (path, train, val, "
                       "names)", y->file, y_line(root));
    static const char *const keys[] = {"path", "train", "val", "test", "names", "nc", "masks",
                                       "ignore"};
    enum { NKEYS = 8 };
    yaml_node_t *val[NKEYS] = {0};
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
        const char *ks = y_scalar(k);
        if (!ks)
            return vt_fail(VT_ERR_DATASET, "%s:%d: a key that is not a plain name", y->file,
                           k ? y_line(k) : 0);
        for (int i = 0; i < NKEYS; i++)
            if (!strcmp(ks, keys[i])) {
                if (val[i])
                    return vt_fail(VT_ERR_DATASET, "%s:%d: key '%s' is given twice", y->file,
                                   y_line(k), ks);
                val[i] = yaml_document_get_node(y->doc, p->value);
            }
    }
    vt_status st = set_names(ds, y, val[4], val[5]);
    if (st) return st;
    int nc = ds->num_classes; /* object classes as the label files number them */
    const char *masks = NULL;
    if (ds->labels->masks) {
        /* `masks` and `ignore` only mean something to mask labels; boxes ignore them as they
         * ignore any other key. */
        if (val[6] && !y_is_null(val[6])) {
            masks = y_scalar(val[6]);
            if (!masks || !*masks || strchr(masks, '/'))
                return vt_fail(VT_ERR_DATASET, "%s:%d: masks: expected a folder name (e.g. "
                               "masks), the sibling of images/", y->file, y_line(val[6]));
            if (!(ds->masks_name = vt_strdup(masks))) return VT_ERR_OUT_OF_MEMORY;
            ds->seg_masks = 1;
        }
        long ig = 255;
        if (val[7] && !y_is_null(val[7]) && (!y_int(val[7], &ig) || ig < 0 || ig > 255))
            return vt_fail(VT_ERR_DATASET, "%s:%d: ignore: expected a mask value 0..255",
                           y->file, y_line(val[7]));
        ds->ignore_value = (int)ig;
        if (masks && nc > 255)
            return vt_fail(VT_ERR_DATASET, "%s: %d classes; 8-bit masks hold class ids 0..254",
                           y->file, nc);
        if (masks && ig < nc)
            return vt_fail(VT_ERR_DATASET, "%s:%d: ignore: %ld is a class id (classes are "
                           "0..%d)", y->file, val[7] ? y_line(val[7]) : 0, ig, nc - 1);
        if (!masks && (st = vt_seg_add_background(ds, y->file))) return st;
    }
    char *ydir = dir_of(y->file), *root_dir = NULL;
    if (!ydir) return VT_ERR_OUT_OF_MEMORY;
    if (val[0] && !y_is_null(val[0])) {
        if (!y_scalar(val[0])) st = vt_fail(VT_ERR_DATASET, "%s:%d: path: expected a folder",
                                            y->file, y_line(val[0]));
        else if (!(root_dir = path_join(ydir, y_scalar(val[0])))) st = VT_ERR_OUT_OF_MEMORY;
        else if (!vt_det_is_dir(root_dir))
            st = vt_fail(VT_ERR_NOT_FOUND, "%s:%d: path: folder '%s' not found (looked for %s)",
                         y->file, y_line(val[0]), y_scalar(val[0]), root_dir);
    } else {
        root_dir = ydir;
        ydir = NULL;
    }
    /* the dataset folder that split paths should stay in: `path:` when given (it may point
     * anywhere: that is what it is for), else the folder of the yaml file */
    if (!st && !(y->root_abs = vt_det_abs_path(root_dir))) st = VT_ERR_OUT_OF_MEMORY;
    label_ctx lc = {0};
    lc.ds = ds;
    lc.nc = nc;
    lc.seg = vt_labels_polygons(ds->labels);
    lc.inst = ds->labels->instances;
    lc.masks = masks;
    if (!st && y_is_null(val[1]))
        st = vt_fail(VT_ERR_DATASET, "%s: no 'train' key (the training images)", y->file);
    if (!st) st = load_split(ds, y, root_dir, "train", val[1], 0, &lc, &ds->split[VT_SPLIT_TRAIN]);
    if (!st && y_is_null(val[2]))
        st = vt_ds_problem_add(ds, y->file, 0, VT_PROBLEM_MISSING_SPLIT,
                               "no 'val' split; training runs without validation");
    else if (!st) st = load_split(ds, y, root_dir, "val", val[2], 0, &lc, &ds->split[VT_SPLIT_VAL]);
    if (!st && !y_is_null(val[3]))
        st = load_split(ds, y, root_dir, "test", val[3], 1, &lc, &ds->split[VT_SPLIT_TEST]);
    free(lc.lines);
    free(lc.line);
    free(lc.tok);
    free(lc.pts);
    free(ydir);
    free(root_dir);
    free(y->root_abs);
    y->root_abs = NULL;
    return st;
}

static vt_status load_yaml(vt_dataset *ds, const char *file)
{
    char *buf;
    size_t size;
    vt_status st = vt_det_read_file(file, &buf, &size);
    if (st) return st;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        free(buf);
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: cannot initialise the YAML parser", file);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, size);
    if (!yaml_parser_load(&parser, &doc)) {
        if (parser.error == YAML_MEMORY_ERROR) st = VT_ERR_OUT_OF_MEMORY;
        else if (parser.error == YAML_READER_ERROR)
            st = vt_fail(VT_ERR_FORMAT, "%s: byte %zu: YAML error: %s", file,
                         parser.problem_offset, parser.problem ? parser.problem : "unreadable");
        else
            st = vt_fail(VT_ERR_FORMAT, "%s:%zu:%zu: YAML syntax error: %s%s%s", file,
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "invalid YAML",
                         parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        free(buf);
        return st;
    }
    yaml_ctx y = {file, &doc, NULL, ""};
    st = load_yaml_doc(ds, &y);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(buf);
    return st;
}

#else

static vt_status load_yaml(vt_dataset *ds, const char *file)
{
    (void)ds;
    return vt_fail(VT_ERR_UNSUPPORTED, "%s: this build has no YAML support (libyaml not found)",
                   file);
}

#endif

/* ---- entry point --------------------------------------------------------------------------- */

vt_status vt_detect_load(vt_dataset *ds, const char *path)
{
    if (has_ext(path, ".json")) return vt_coco_load(ds, path);
    if (has_ext(path, ".yaml") || has_ext(path, ".yml")) {
        if (!vt_det_is_file(path))
            return vt_fail(VT_ERR_NOT_FOUND, "%s: no such file", path);
        return load_yaml(ds, path);
    }
    if (vt_det_is_dir(path)) {
        char *y = path_join(path, "data.yaml");
        if (!y) return VT_ERR_OUT_OF_MEMORY;
        vt_status st = vt_det_is_file(y)
                           ? load_yaml(ds, y)
                           : vt_fail(VT_ERR_NOT_FOUND, "%s: no data.yaml in this folder (a "
                                     "detection or segmentation dataset is a data.yaml or a "
                                     "COCO .json)", path);
        free(y);
        return st;
    }
    if (!vt_det_is_file(path)) return vt_fail(VT_ERR_NOT_FOUND, "%s: no such file or folder", path);
    return vt_fail(VT_ERR_DATASET, "%s: expected a data.yaml, a folder holding one, or a COCO "
                   ".json", path);
}
