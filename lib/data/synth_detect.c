/* Synthetic detection datasets in the Ultralytics YOLO layout, for tests and demos:
 *   dir/data.yaml  dir/images/{train,val}/NNNNN.png  dir/labels/{train,val}/NNNNN.txt
 * Options (space-separated key=value): classes=3 (3..8), train=200, val=50 (images),
 * imgsz=160 (32..1024), seed=0, max_objects=6 (0..64), min_size=0 and max_size=0 (px; 0 = 5% and
 * 50% of imgsz), sizes=linear|log.
 *
 * Each image holds 0..max_objects shapes (about 10% of the images are empty and have no label
 * file, which is how YOLO marks a background), one shape kind per class, with random colour,
 * size (by default 8..80 px at imgsz 160, scaled with imgsz; sizes=log draws them log-uniform,
 * as many per octave, for a set whose objects span a decade or more), position and slight rotation, on a shaded,
 * textured and noisy background.  Shapes may overlap, but never hide more than about a third
 * of one another, so every label still names a visible object.  Boxes are the exact extents
 * of the drawn geometry (vt_shape_bbox), so pixels and labels agree.
 *
 * Shapes are always lighter than the background, by a wide luma margin: the classification
 * generator found fixed polarity to make small models learn several times faster, and this
 * dataset exists to show training working in minutes.
 *
 * Segmentation (semantic and instance) writes the same images with each shape's exact outline
 * as a YOLO-seg polygon instead of its box; the semantic set adds class-id mask PNGs.  Shapes
 * are drawn larger first, so where they overlap the smaller one is on top in the pixels, as
 * the masks (and the loader's instance maps) have it.
 *
 * Every image comes from its own RNG seeded by (seed, split, index): the output for a seed is
 * bit-identical whatever the number of images. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/seg_mask.h"
#include "data/shapes.h"
#include "data/synth_detect.h"

#define PI_F 3.14159265358979f
/* An object may hide at most this fraction of another's box (and vice versa). */
#define MAX_OVERLAP 0.35f
#define PLACE_TRIES 8
#define EMPTY_FRACTION 0.10

typedef struct det_opts {
    long long classes, train, val, imgsz, seed, max_objects;
    float min_frac, max_frac; /* the shapes' longer side over imgsz */
    int log_size;
} det_opts;

static uint8_t clamp_u8(float v) { return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f); }

static float luma3(const float *c) { return 0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2]; }

static float box_inter(const float *a, const float *b)
{
    float w = fminf(a[2], b[2]) - fmaxf(a[0], b[0]), h = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
    return w > 0 && h > 0 ? w * h : 0.0f;
}

/* Background: base colour, a linear gradient, two random low-frequency waves (texture).  The
 * base is kept in the darker half so lighter shapes always have room above it. */
static void draw_background(uint8_t *pix, int n, vt_rng *rng, float base[3])
{
    float grad[3], wave[2][4];
    for (int k = 0; k < 3; k++) base[k] = 150.0f * (float)vt_rng_uniform(rng);
    for (int k = 0; k < 3; k++) grad[k] = 20.0f * (2.0f * (float)vt_rng_uniform(rng) - 1.0f);
    float theta = 2.0f * PI_F * (float)vt_rng_uniform(rng);
    for (int w = 0; w < 2; w++) {
        float dir = 2.0f * PI_F * (float)vt_rng_uniform(rng);
        float freq = (2.0f + 6.0f * (float)vt_rng_uniform(rng)) * 2.0f * PI_F / n;
        wave[w][0] = cosf(dir) * freq;
        wave[w][1] = sinf(dir) * freq;
        wave[w][2] = 2.0f * PI_F * (float)vt_rng_uniform(rng);
        wave[w][3] = 4.0f + 8.0f * (float)vt_rng_uniform(rng);
    }
    float gx = cosf(theta) / n, gy = sinf(theta) / n;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            float t = (x + 0.5f - 0.5f * n) * gx + (y + 0.5f - 0.5f * n) * gy;
            float tex = 0;
            for (int w = 0; w < 2; w++)
                tex += wave[w][3] * sinf(wave[w][0] * x + wave[w][1] * y + wave[w][2]);
            uint8_t *p = pix + ((size_t)y * n + x) * 3;
            for (int k = 0; k < 3; k++) p[k] = clamp_u8(base[k] + grad[k] * t + tex);
        }
}

/* A shape colour at least 90 luma levels above the background.  A fixed number of draws keeps
 * the RNG stream independent of which candidate is taken. */
static void pick_colour(vt_rng *rng, const float base[3], uint8_t out[3])
{
    float lb = luma3(base), best[3] = {255, 255, 255};
    int ok = 0;
    for (int t = 0; t < 16; t++) {
        float c[3];
        for (int k = 0; k < 3; k++) c[k] = 255.0f * (float)vt_rng_uniform(rng);
        if (!ok && luma3(c) >= lb + 90.0f) {
            memcpy(best, c, sizeof best);
            ok = 1;
        }
    }
    for (int k = 0; k < 3; k++) out[k] = clamp_u8(best[k]);
}

/* One image: pixels into pix (n x n x 3) and up to max boxes into cls/box (and the shapes
 * into shapes); returns the count.  Shapes are drawn after all are placed (drawing takes no
 * random numbers), in placement order, or in draw_order(shapes, count, order) when given:
 * segmentation draws larger shapes first, as its masks do. */
typedef void (*draw_order_fn)(void *ctx, const vt_shape *shapes, int count, int *order);

static int synth_image(uint8_t *pix, int n, const det_opts *o, vt_rng *rng, int *cls,
                       float (*box)[4], vt_shape *shapes, uint8_t (*cols)[3], int *order,
                       draw_order_fn draw_order, void *draw_ctx)
{
    float base[3];
    draw_background(pix, n, rng, base);
    int want = 0;
    double u_empty = vt_rng_uniform(rng);
    if (o->max_objects > 0 && u_empty >= EMPTY_FRACTION)
        want = 1 + (int)vt_rng_below(rng, (uint32_t)o->max_objects);
    int count = 0;
    for (int i = 0; i < want; i++) {
        int c = (int)vt_rng_below(rng, (uint32_t)o->classes);
        uint8_t col[3];
        pick_colour(rng, base, col);
        vt_shape s;
        float bb[4];
        int placed = 0;
        for (int t = 0; t < PLACE_TRIES && !placed; t++) {
            vt_shape_random(&s, c, rng, n, n, o->min_frac, o->max_frac, o->log_size);
            vt_shape_bbox(&s, bb);
            float area = (bb[2] - bb[0]) * (bb[3] - bb[1]);
            placed = 1;
            for (int j = 0; j < count && placed; j++) {
                float inter = box_inter(bb, box[j]);
                float aj = (box[j][2] - box[j][0]) * (box[j][3] - box[j][1]);
                if (inter > MAX_OVERLAP * area || inter > MAX_OVERLAP * aj) placed = 0;
            }
        }
        if (!placed) continue;
        shapes[count] = s;
        memcpy(cols[count], col, 3);
        for (int k = 0; k < 4; k++) box[count][k] = fminf(fmaxf(bb[k], 0.0f), (float)n);
        cls[count++] = c;
    }
    for (int i = 0; i < count; i++) order[i] = i;
    if (draw_order) draw_order(draw_ctx, shapes, count, order);
    for (int i = 0; i < count; i++)
        vt_shape_draw(&shapes[order[i]], pix, n, n, 3, (size_t)n * 3, cols[order[i]]);
    /* Per-pixel noise over everything (triangular, +-amp), as in the classification set. */
    float amp = (3.0f + 7.0f * (float)vt_rng_uniform(rng)) / 255.0f;
    size_t total = (size_t)n * n * 3;
    for (size_t i = 0; i < total;) {
        uint64_t r = vt_rng_next(rng);
        for (int j = 0; j < 4 && i < total; j++, i++, r >>= 16) {
            float v = (float)((int)(r & 0xFF) + (int)((r >> 8) & 0xFF) - 255);
            pix[i] = clamp_u8(pix[i] + v * amp);
        }
    }
    return count;
}

static vt_status write_labels(const char *path, int count, const int *cls, float (*box)[4], int n)
{
    FILE *f = fopen(path, "wx");
    if (!f) return vt_fail(VT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int bad = 0;
    for (int i = 0; i < count; i++) {
        const float *b = box[i];
        bad |= fprintf(f, "%d %.6f %.6f %.6f %.6f\n", cls[i], (b[0] + b[2]) / (2.0f * n),
                       (b[1] + b[3]) / (2.0f * n), (b[2] - b[0]) / n, (b[3] - b[1]) / n) < 0;
    }
    if (fclose(f) != 0) bad = 1;
    return bad ? vt_fail(VT_ERR_IO, "%s: cannot write: %s", path, strerror(errno)) : VT_OK;
}

/* ---- segmentation ------------------------------------------------------------------------ */

/* Sides of the polygon written for a circle (and for each outline of a ring): the vertices lie
 * on the circle, at most 0.5% of the radius inside it between them. */
#define CIRCLE_SIDES 32
#define MAX_OUTLINE (2 * (CIRCLE_SIDES + 1))

/* The outline of a shape as one polygon, in pixels; returns the point count.  A ring is its
 * outer circle, the outer start point again, a bridge to the inner circle traversed the other
 * way round, and its start point again: the bridge is the same edge twice (bit-identical end
 * points), which the even-odd rule cancels, and the opposite direction makes the shoelace area
 * the ring's. */
static int shape_outline(const vt_shape *s, float *xy)
{
    if (s->nv) {
        for (int k = 0; k < s->nv; k++) {
            xy[2 * k] = s->vx[k];
            xy[2 * k + 1] = s->vy[k];
        }
        return s->nv;
    }
    int m = 0;
    for (int k = 0; k < CIRCLE_SIDES; k++, m++) {
        float a = s->angle + 2.0f * PI_F * (float)k / CIRCLE_SIDES;
        xy[2 * m] = s->cx + s->scale * cosf(a);
        xy[2 * m + 1] = s->cy + s->scale * sinf(a);
    }
    if (s->kind != VT_SHAPE_RING) return m;
    xy[2 * m] = xy[0];
    xy[2 * m + 1] = xy[1];
    m++;
    int inner0 = m;
    float r = s->param * s->scale;
    for (int k = 0; k < CIRCLE_SIDES; k++, m++) {
        float a = s->angle - 2.0f * PI_F * (float)k / CIRCLE_SIDES;
        xy[2 * m] = s->cx + r * cosf(a);
        xy[2 * m + 1] = s->cy + r * sinf(a);
    }
    xy[2 * m] = xy[2 * inner0];
    xy[2 * m + 1] = xy[2 * inner0 + 1];
    return m + 1;
}

/* The polygons of one image: label text and the same polygons as the loader will read them
 * back from that text (normalised, through the printed digits), so masks drawn from them are
 * exactly the loader's. */
typedef struct seg_image {
    int n;           /* image side */
    char *text;      /* the label file */
    size_t len, cap; /* text */
    vt_seg_poly *polys;
    float *xy; /* normalised */
    int npoly, nxy;
} seg_image;

static void put_coord(seg_image *g, float v, float *back)
{
    char num[32];
    /* %.6f as detection labels are written; clamped: outlines stay in the image, but 32-gon
     * vertices may land a hair outside the shape's box */
    snprintf(num, sizeof num, "%.6f", fminf(fmaxf(v, 0.0f), 1.0f));
    *back = (float)strtod(num, NULL); /* what detect_data.c's parse_float gives */
    g->len += (size_t)snprintf(g->text + g->len, g->cap - g->len, " %s", num);
}

/* draw_order_fn: build the polygons, then order them larger first as vt_seg_draw_polygons
 * does (stable insertion sort on the same key: area descending, then list order). */
static void seg_draw_order(void *ctx, const vt_shape *shapes, int count, int *order)
{
    seg_image *g = ctx;
    g->len = 0;
    g->text[0] = 0;
    g->npoly = g->nxy = 0;
    for (int i = 0; i < count; i++) {
        float px[2 * MAX_OUTLINE];
        int np = shape_outline(&shapes[i], px);
        g->len += (size_t)snprintf(g->text + g->len, g->cap - g->len, "%d", shapes[i].kind);
        float *dst = g->xy + 2 * (size_t)g->nxy;
        for (int k = 0; k < 2 * np; k++) put_coord(g, px[k] / (float)g->n, &dst[k]);
        g->len += (size_t)snprintf(g->text + g->len, g->cap - g->len, "\n");
        g->polys[g->npoly++] = (vt_seg_poly){shapes[i].kind + 1, np, g->nxy};
        g->nxy += np;
    }
    double area[65];
    for (int i = 0; i < count; i++)
        area[i] = vt_seg_poly_area(g->xy + 2 * (size_t)g->polys[i].off, g->polys[i].npts);
    for (int i = 1; i < count; i++) {
        int x = order[i], j = i - 1;
        while (j >= 0 && area[order[j]] < area[x]) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = x;
    }
}

static vt_status write_text_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wx");
    if (!f) return vt_fail(VT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int bad = fwrite(text, 1, len, f) != len;
    if (fclose(f) != 0) bad = 1;
    return bad ? vt_fail(VT_ERR_IO, "%s: cannot write: %s", path, strerror(errno)) : VT_OK;
}

/* ---- both ----------------------------------------------------------------------------------- */

/* What a generated dataset is labelled with. */
enum { SYNTH_BOXES = 0, SYNTH_SEMANTIC = 1, SYNTH_INSTANCES = 2 };

static vt_status write_yaml(const char *path, const det_opts *o, int mode)
{
    FILE *f = fopen(path, "wx");
    if (!f) return vt_fail(VT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    /* No `path:` key: Ultralytics and this library then both use the yaml's folder, so the
     * dataset can be moved. */
    static const char *const what[3] = {"detection", "segmentation", "instance segmentation"};
    int bad = fprintf(f, "# Synthetic %s dataset written by libvisiontrain "
                         "(vt_synth_generate, seed %lld)\n", what[mode], o->seed) < 0;
    if (mode == SYNTH_INSTANCES)
        bad |= fprintf(f, "# labels/ hold one polygon per object (YOLO-seg), the classes as "
                          "they are (no background).\n") < 0;
    if (mode == SYNTH_SEMANTIC)
        bad |= fprintf(f, "# labels/ hold polygons; masks/ hold the same labels as class-id "
                          "PNGs (0 background,\n# shape class k -> k+1): to use them, add "
                          "\"masks: masks\" and name class 0 background.\n") < 0;
    bad |= fprintf(f, "train: images/train\n%snc: %lld\nnames:\n",
                   o->val > 0 ? "val: images/val\n" : "", o->classes) < 0;
    for (int c = 0; c < (int)o->classes; c++)
        bad |= fprintf(f, "  %d: %s\n", c, vt_shape_name(c)) < 0;
    if (fclose(f) != 0) bad = 1;
    return bad ? vt_fail(VT_ERR_IO, "%s: cannot write: %s", path, strerror(errno)) : VT_OK;
}

/* mode: SYNTH_*.  Semantic and instance sets write the same images and polygon labels; only
 * the semantic one adds the mask PNGs. */
static vt_status synth_run(const char *dir, const char *options, int mode)
{
    const int seg = mode != SYNTH_BOXES, masks = mode == SYNTH_SEMANTIC;
    /* keys, ranges and defaults: the VT_OPT_SYNTH_DET_* lines of the option table */
    vt_optvals *v;
    vt_status st = vt_optvals_parse_new(&v, VT_SCOPE_SYNTH_DETECT, options);
    if (st) {
        vt_fail_context("vt_synth_generate");
        return st;
    }
    det_opts o = {(long long)vt_opt_num(v, VT_OPT_SYNTH_DET_CLASSES),
                  (long long)vt_opt_num(v, VT_OPT_SYNTH_DET_TRAIN),
                  (long long)vt_opt_num(v, VT_OPT_SYNTH_DET_VAL),
                  (long long)vt_opt_num(v, VT_OPT_SYNTH_DET_IMGSZ),
                  (long long)vt_opt_num(v, VT_OPT_SYNTH_DET_SEED),
                  (long long)vt_opt_num(v, VT_OPT_SYNTH_DET_MAX_OBJECTS), 0.05f, 0.5f, 0};
    double lo = vt_opt_num(v, VT_OPT_SYNTH_DET_MIN_SIZE);
    double hi = vt_opt_num(v, VT_OPT_SYNTH_DET_MAX_SIZE);
    o.log_size = strcmp(vt_opt_str(v, VT_OPT_SYNTH_DET_SIZES), "log") == 0;
    const int set_lo = lo > 0, set_hi = hi > 0;
    free(v);
    if (lo == 0) lo = 0.05 * (double)o.imgsz;
    if (hi == 0) hi = 0.5 * (double)o.imgsz;
    if (lo > hi || hi > (double)o.imgsz)
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "vt_synth_generate: shape sizes min_size=%g..max_size=%g px: need "
                       "min_size <= max_size <= imgsz=%lld",
                       lo, hi, o.imgsz);
    if (set_lo) o.min_frac = (float)(lo / (double)o.imgsz);
    if (set_hi) o.max_frac = (float)(hi / (double)o.imgsz);
    static const char *const splits[2] = {"train", "val"};
    const long long counts[2] = {o.train, o.val};
    const int n = (int)o.imgsz;
    const size_t nobj = (size_t)o.max_objects + 1;
    size_t plen = strlen(dir) + 64;
    char *path = vt_malloc(plen);
    uint8_t *pix = vt_malloc((size_t)n * n * 3);
    int *cls = vt_malloc(nobj * sizeof *cls), *order = vt_malloc(nobj * sizeof *order);
    float(*box)[4] = vt_malloc(nobj * sizeof *box);
    vt_shape *shapes = vt_malloc(nobj * sizeof *shapes);
    uint8_t(*cols)[3] = vt_malloc(nobj * sizeof *cols);
    st = path && pix && cls && order && box && shapes && cols ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    seg_image g = {n, NULL, 0, 0, NULL, NULL, 0, 0};
    uint8_t *mask = NULL;
    if (!st && seg) {
        /* per polygon: the class and " 0.123456" (at most 10 bytes) per coordinate */
        g.cap = nobj * (16 + 2 * MAX_OUTLINE * 10) + 1;
        g.text = vt_malloc(g.cap);
        g.polys = vt_malloc(nobj * sizeof *g.polys);
        g.xy = vt_malloc(nobj * 2 * MAX_OUTLINE * sizeof *g.xy);
        mask = masks ? vt_malloc((size_t)n * n) : NULL;
        if (!g.text || !g.polys || !g.xy || (masks && !mask)) st = VT_ERR_OUT_OF_MEMORY;
    }

    /* Refuse before creating anything, so a user's data is never mixed with ours. */
    static const char *const mine[4] = {"images", "labels", "data.yaml", "masks"};
    for (int i = 0; i < (masks ? 4 : 3) && !st; i++) {
        struct stat sb;
        snprintf(path, plen, "%s/%s", dir, mine[i]);
        if (stat(path, &sb) == 0)
            st = vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: already exists; vt_synth_generate only "
                         "writes into a folder without a dataset", path);
    }
    for (int sp = 0; sp < 2 && !st; sp++) {
        if (counts[sp] == 0) continue;
        for (int k = 0; k < (masks ? 3 : 2) && !st; k++) {
            snprintf(path, plen, "%s/%s/%s", dir, k == 2 ? "masks" : k ? "labels" : "images",
                     splits[sp]);
            st = vt_synth_make_dirs(path);
        }
        for (int i = 0; i < (int)counts[sp] && !st; i++) {
            vt_rng rng;
            /* vt_rng_seed runs splitmix64 over this: an injective packing suffices.  The same
             * for both tasks: a segmentation set shows the detection set's shapes. */
            vt_rng_seed(&rng, ((uint64_t)o.seed * 0x9E3779B97F4A7C15ull) ^ (0xD37ECull << 40) ^
                                  ((uint64_t)sp << 60) ^ (uint64_t)i);
            g.npoly = g.nxy = 0;
            g.len = 0;
            int count = synth_image(pix, n, &o, &rng, cls, box, shapes, cols, order,
                                    seg ? seg_draw_order : NULL, &g);
            snprintf(path, plen, "%s/images/%s/%05d.png", dir, splits[sp], i);
            st = vt_synth_write_png(path, pix, n);
            if (!st && count > 0) {
                snprintf(path, plen, "%s/labels/%s/%05d.txt", dir, splits[sp], i);
                st = seg ? write_text_file(path, g.text, g.len)
                         : write_labels(path, count, cls, box, n);
            }
            if (!st && masks) {
                memset(mask, 0, (size_t)n * n);
                st = vt_seg_draw_polygons(g.polys, g.npoly, g.xy, n, n, mask);
                snprintf(path, plen, "%s/masks/%s/%05d.png", dir, splits[sp], i);
                if (!st) st = vt_synth_write_png_gray(path, mask, n);
            }
        }
    }
    if (!st) {
        snprintf(path, plen, "%s/data.yaml", dir);
        st = write_yaml(path, &o, mode);
    }
    free(path);
    free(pix);
    free(cls);
    free(order);
    free(box);
    free(shapes);
    free(cols);
    free(g.text);
    free(g.polys);
    free(g.xy);
    free(mask);
    return st;
}

vt_status vt_synth_detect(const char *dir, const char *options)
{
    return synth_run(dir, options, SYNTH_BOXES);
}

vt_status vt_synth_segment(const char *dir, const char *options)
{
    return synth_run(dir, options, SYNTH_SEMANTIC);
}

vt_status vt_synth_instance(const char *dir, const char *options)
{
    return synth_run(dir, options, SYNTH_INSTANCES);
}
