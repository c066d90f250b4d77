/* Synthetic detection datasets in the Ultralytics YOLO layout, for tests and demos:
 *   dir/data.yaml  dir/images/{train,val}/NNNNN.png  dir/labels/{train,val}/NNNNN.txt
 * Options (space-separated key=value): classes=3 (3..8), train=200, val=50 (images),
 * imgsz=160 (32..1024), seed=0, max_objects=6 (0..64).
 *
 * Each image holds 0..max_objects shapes (about 10% of the images are empty and have no label
 * file, which is how YOLO marks a background), one shape kind per class, with random colour,
 * size (8..80 px at imgsz 160, scaled with imgsz), position and slight rotation, on a shaded,
 * textured and noisy background.  Shapes may overlap, but never hide more than about a third
 * of one another, so every label still names a visible object.  Boxes are the exact extents
 * of the drawn geometry (vt_shape_bbox), so pixels and labels agree.
 *
 * Shapes are always lighter than the background, by a wide luma margin: the classification
 * generator found fixed polarity to make small models learn several times faster, and this
 * dataset exists to show training working in minutes.
 *
 * Every image comes from its own RNG seeded by (seed, split, index): the output for a seed is
 * bit-identical whatever the number of images. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/shapes.h"
#include "data/synth_detect.h"

#define PI_F 3.14159265358979f
/* An object may hide at most this fraction of another's box (and vice versa). */
#define MAX_OVERLAP 0.35f
#define PLACE_TRIES 8
#define EMPTY_FRACTION 0.10

typedef struct det_opts {
    long long classes, train, val, imgsz, seed, max_objects;
} det_opts;

static vt_status det_opt(void *ctx, const char *key, const char *value)
{
    det_opts *o = ctx;
    if (!strcmp(key, "classes")) return vt_parse_int(key, value, 3, VT_SHAPE_COUNT, &o->classes);
    if (!strcmp(key, "train")) return vt_parse_int(key, value, 1, 1000000, &o->train);
    if (!strcmp(key, "val")) return vt_parse_int(key, value, 0, 1000000, &o->val);
    if (!strcmp(key, "imgsz")) return vt_parse_int(key, value, 32, 1024, &o->imgsz);
    if (!strcmp(key, "seed")) return vt_parse_int(key, value, 0, INT64_MAX, &o->seed);
    if (!strcmp(key, "max_objects")) return vt_parse_int(key, value, 0, 64, &o->max_objects);
    return vt_fail(VT_ERR_UNKNOWN_OPTION, "unknown option '%s' (valid for detection: classes, "
                   "train, val, imgsz, seed, max_objects)", key);
}

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

/* One image: pixels into pix (n x n x 3) and up to max boxes into cls/box; returns the count. */
static int synth_image(uint8_t *pix, int n, const det_opts *o, vt_rng *rng, int *cls,
                       float (*box)[4])
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
            /* 8..80 px at 160, i.e. 5%..50% of the side */
            vt_shape_random(&s, c, rng, n, n, 0.05f, 0.5f);
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
        vt_shape_draw(&s, pix, n, n, 3, (size_t)n * 3, col);
        for (int k = 0; k < 4; k++) box[count][k] = fminf(fmaxf(bb[k], 0.0f), (float)n);
        cls[count++] = c;
    }
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

static vt_status write_yaml(const char *path, const det_opts *o)
{
    FILE *f = fopen(path, "wx");
    if (!f) return vt_fail(VT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    /* No `path:` key: Ultralytics and this library then both use the yaml's folder, so the
     * dataset can be moved. */
    int bad = fprintf(f, "# Synthetic detection dataset written by libvisiontrain "
                         "(vt_synth_generate, seed %lld)\ntrain: images/train\n%s"
                         "nc: %lld\nnames:\n",
                      o->seed, o->val > 0 ? "val: images/val\n" : "", o->classes) < 0;
    for (int c = 0; c < (int)o->classes; c++)
        bad |= fprintf(f, "  %d: %s\n", c, vt_shape_name(c)) < 0;
    if (fclose(f) != 0) bad = 1;
    return bad ? vt_fail(VT_ERR_IO, "%s: cannot write: %s", path, strerror(errno)) : VT_OK;
}

vt_status vt_synth_detect(const char *dir, const char *options)
{
    det_opts o = {3, 200, 50, 160, 0, 6};
    vt_status st = vt_parse_kv_list(options, det_opt, &o);
    if (st) {
        vt_fail_context("vt_synth_generate");
        return st;
    }
    static const char *const splits[2] = {"train", "val"};
    const long long counts[2] = {o.train, o.val};
    const int n = (int)o.imgsz;
    size_t plen = strlen(dir) + 64;
    char *path = vt_malloc(plen);
    uint8_t *pix = vt_malloc((size_t)n * n * 3);
    int *cls = vt_malloc(((size_t)o.max_objects + 1) * sizeof *cls);
    float(*box)[4] = vt_malloc(((size_t)o.max_objects + 1) * sizeof *box);
    st = path && pix && cls && box ? VT_OK : VT_ERR_OUT_OF_MEMORY;

    /* Refuse before creating anything, so a user's data is never mixed with ours. */
    static const char *const mine[3] = {"images", "labels", "data.yaml"};
    for (int i = 0; i < 3 && !st; i++) {
        struct stat sb;
        snprintf(path, plen, "%s/%s", dir, mine[i]);
        if (stat(path, &sb) == 0)
            st = vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: already exists; vt_synth_generate only "
                         "writes into a folder without a dataset", path);
    }
    for (int sp = 0; sp < 2 && !st; sp++) {
        if (counts[sp] == 0) continue;
        for (int k = 0; k < 2 && !st; k++) {
            snprintf(path, plen, "%s/%s/%s", dir, k ? "labels" : "images", splits[sp]);
            st = vt_synth_make_dirs(path);
        }
        for (int i = 0; i < (int)counts[sp] && !st; i++) {
            vt_rng rng;
            /* vt_rng_seed runs splitmix64 over this: an injective packing suffices */
            vt_rng_seed(&rng, ((uint64_t)o.seed * 0x9E3779B97F4A7C15ull) ^ (0xD37ECull << 40) ^
                                  ((uint64_t)sp << 60) ^ (uint64_t)i);
            int count = synth_image(pix, n, &o, &rng, cls, box);
            snprintf(path, plen, "%s/images/%s/%05d.png", dir, splits[sp], i);
            st = vt_synth_write_png(path, pix, n);
            if (!st && count > 0) {
                snprintf(path, plen, "%s/labels/%s/%05d.txt", dir, splits[sp], i);
                st = write_labels(path, count, cls, box, n);
            }
        }
    }
    if (!st) {
        snprintf(path, plen, "%s/data.yaml", dir);
        st = write_yaml(path, &o);
    }
    free(path);
    free(pix);
    free(cls);
    free(box);
    return st;
}
