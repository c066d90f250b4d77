/* Synthetic datasets for tests, demos and benchmarks (vt_synth_generate).
 *
 * Classification: one shape per image on a noisy, shaded background.  Only the shape's kind
 * depends on the class; its colour, size, position, slight rotation and thickness, and the
 * background, are random and independent of the class, so a model must learn shape (and
 * cannot shortcut through colour).  The shape is always lighter than the background, by a wide
 * luma margin, so single-channel models see it too.  Fixed polarity and moderate noise are
 * deliberate: with random polarity a small CNN needs several times more steps to generalise
 * (measured with cls-n: 8 epochs of 4x500 images gave 58% val top-1 with random polarity, 73%
 * with fixed), and this dataset exists to show training working within a few epochs.
 *
 * Every image is generated from its own RNG seeded by (seed, split, class, index), so the
 * output is bit-identical for a seed whatever the order or number of images. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "image/image.h"
#include "data/dataset.h"
#include "data/shapes.h"
#include "data/synth_detect.h"

#define SYNTH_PI 3.14159265358979f
/* Rotation jitter: small enough that a square never looks like a diamond (45 degrees apart)
 * and a bar never looks like its perpendicular twin. */
#define SYNTH_MAX_TILT (10.0f * SYNTH_PI / 180.0f)

/* ---- shapes ------------------------------------------------------------------------------ */

static const char *const shape_names[VT_SHAPE_COUNT] = {
    "circle", "square", "triangle", "cross", "ring", "diamond", "hbar", "vbar"};

const char *vt_shape_name(int kind)
{
    return kind >= 0 && kind < VT_SHAPE_COUNT ? shape_names[kind] : NULL;
}

void vt_shape_prepare(vt_shape *s)
{
    float lx[12], ly[12];
    int n = 0;
    const float t = s->param;
#define V(a, b) (lx[n] = (a), ly[n] = (b), n++)
    switch (s->kind) {
    case VT_SHAPE_SQUARE: V(-1, -1); V(1, -1); V(1, 1); V(-1, 1); break;
    /* Equilateral, pointing up (image y grows downwards). */
    case VT_SHAPE_TRIANGLE: V(0, -1); V(1, 0.7320508f); V(-1, 0.7320508f); break;
    case VT_SHAPE_CROSS:
        V(-t, -1); V(t, -1); V(t, -t); V(1, -t); V(1, t); V(t, t);
        V(t, 1); V(-t, 1); V(-t, t); V(-1, t); V(-1, -t); V(-t, -t);
        break;
    /* Narrower than tall, so it differs from a square in more than rotation. */
    case VT_SHAPE_DIAMOND: V(0, -1); V(0.75f, 0); V(0, 1); V(-0.75f, 0); break;
    case VT_SHAPE_HBAR: V(-1, -t); V(1, -t); V(1, t); V(-1, t); break;
    case VT_SHAPE_VBAR: V(-t, -1); V(t, -1); V(t, 1); V(-t, 1); break;
    default: break; /* circle, ring: analytic */
    }
#undef V
    const float cs = cosf(s->angle), sn = sinf(s->angle);
    for (int i = 0; i < n; i++) {
        s->vx[i] = s->cx + s->scale * (cs * lx[i] - sn * ly[i]);
        s->vy[i] = s->cy + s->scale * (sn * lx[i] + cs * ly[i]);
    }
    s->nv = n;
}

void vt_shape_bbox(const vt_shape *s, float box[4])
{
    if (s->nv == 0) {
        box[0] = s->cx - s->scale;
        box[1] = s->cy - s->scale;
        box[2] = s->cx + s->scale;
        box[3] = s->cy + s->scale;
        return;
    }
    box[0] = box[2] = s->vx[0];
    box[1] = box[3] = s->vy[0];
    for (int i = 1; i < s->nv; i++) {
        box[0] = fminf(box[0], s->vx[i]);
        box[2] = fmaxf(box[2], s->vx[i]);
        box[1] = fminf(box[1], s->vy[i]);
        box[3] = fmaxf(box[3], s->vy[i]);
    }
}

/* Even-odd crossing test: valid for the concave cross too. */
static int poly_inside(const vt_shape *s, float x, float y)
{
    int in = 0;
    for (int i = 0, j = s->nv - 1; i < s->nv; j = i++) {
        float yi = s->vy[i], yj = s->vy[j];
        if ((yi > y) != (yj > y)) {
            float xc = s->vx[j] + (y - yj) * (s->vx[i] - s->vx[j]) / (yi - yj);
            if (x < xc) in = !in;
        }
    }
    return in;
}

/* Signed distance to the outline in pixels (negative inside): decides cheaply whether a pixel
 * is entirely in or out, so only edge pixels pay for supersampling. */
static float shape_sdist(const vt_shape *s, float x, float y)
{
    float dx = x - s->cx, dy = y - s->cy;
    if (s->kind == VT_SHAPE_CIRCLE) return sqrtf(dx * dx + dy * dy) - s->scale;
    if (s->kind == VT_SHAPE_RING) {
        float mid = 0.5f * (1.0f + s->param) * s->scale, half = 0.5f * (1.0f - s->param) * s->scale;
        return fabsf(sqrtf(dx * dx + dy * dy) - mid) - half;
    }
    float best = INFINITY;
    for (int i = 0, j = s->nv - 1; i < s->nv; j = i++) {
        float ex = s->vx[i] - s->vx[j], ey = s->vy[i] - s->vy[j];
        float px = x - s->vx[j], py = y - s->vy[j];
        float len2 = ex * ex + ey * ey;
        float u = len2 > 0 ? (px * ex + py * ey) / len2 : 0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        float qx = px - u * ex, qy = py - u * ey;
        float d2 = qx * qx + qy * qy;
        if (d2 < best) best = d2;
    }
    best = sqrtf(best);
    return poly_inside(s, x, y) ? -best : best;
}

static int shape_inside(const vt_shape *s, float x, float y)
{
    if (s->nv) return poly_inside(s, x, y);
    return shape_sdist(s, x, y) < 0;
}

float vt_shape_coverage(const vt_shape *s, int px, int py)
{
    /* Half the pixel diagonal: beyond it the whole pixel is on one side of the outline. */
    float d = shape_sdist(s, px + 0.5f, py + 0.5f);
    if (d >= 0.7072f) return 0.0f;
    if (d <= -0.7072f) return 1.0f;
    int hits = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++)
            hits += shape_inside(s, px + (i + 0.5f) * 0.25f, py + (j + 0.5f) * 0.25f);
    return hits * (1.0f / 16.0f);
}

void vt_shape_draw(const vt_shape *s, uint8_t *pixels, int w, int h, int c, size_t stride,
                   const uint8_t *colour)
{
    float box[4];
    vt_shape_bbox(s, box);
    int x0 = (int)floorf(box[0]) - 1, y0 = (int)floorf(box[1]) - 1;
    int x1 = (int)ceilf(box[2]) + 1, y1 = (int)ceilf(box[3]) + 1;
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > w) x1 = w;
    if (y1 > h) y1 = h;
    for (int y = y0; y < y1; y++) {
        uint8_t *row = pixels + (size_t)y * stride;
        for (int x = x0; x < x1; x++) {
            float a = vt_shape_coverage(s, x, y);
            if (a <= 0.0f) continue;
            uint8_t *p = row + (size_t)x * c;
            for (int k = 0; k < c; k++)
                p[k] = (uint8_t)(p[k] + (colour[k] - p[k]) * a + 0.5f);
        }
    }
}

void vt_shape_random(vt_shape *s, int kind, vt_rng *rng, int w, int h, float min_frac,
                     float max_frac, int log_size)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    /* Draw every random number up front, in a fixed order, whatever the kind. */
    float u_tilt = (float)vt_rng_uniform(rng), u_param = (float)vt_rng_uniform(rng);
    float u_size = (float)vt_rng_uniform(rng);
    float u_x = (float)vt_rng_uniform(rng), u_y = (float)vt_rng_uniform(rng);
    s->angle = (2.0f * u_tilt - 1.0f) * SYNTH_MAX_TILT;
    if (kind == VT_SHAPE_RING)
        s->param = 0.45f + 0.15f * u_param; /* a visible hole, and a visible band */
    else if (kind == VT_SHAPE_CROSS)
        s->param = 0.26f + 0.10f * u_param;
    else
        s->param = 0.22f + 0.10f * u_param; /* bars: 3..4.5 times longer than thick */
    s->scale = 1.0f;
    vt_shape_prepare(s);
    float ub[4];
    vt_shape_bbox(s, ub); /* local frame at scale 1, centre 0 */
    float side = (float)(w < h ? w : h);
    float target = log_size ? side * min_frac * powf(max_frac / min_frac, u_size)
                            : side * (min_frac + (max_frac - min_frac) * u_size);
    float ext = fmaxf(ub[2] - ub[0], ub[3] - ub[1]);
    s->scale = target / ext;
    float bw = (ub[2] - ub[0]) * s->scale, bh = (ub[3] - ub[1]) * s->scale;
    /* Keep half a pixel of margin so the anti-aliased edge is never clipped. */
    float room_x = w - 1.0f - bw, room_y = h - 1.0f - bh;
    float left = 0.5f + (room_x > 0 ? room_x * u_x : room_x * 0.5f);
    float top = 0.5f + (room_y > 0 ? room_y * u_y : room_y * 0.5f);
    s->cx = left - ub[0] * s->scale;
    s->cy = top - ub[1] * s->scale;
    vt_shape_prepare(s);
}

/* ---- image synthesis --------------------------------------------------------------------- */

static float luma(const float *rgb) { return 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]; }

static uint8_t clamp_u8(float v)
{
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f);
}

/* Fill w x h x 3 pixels with one classification image of shape `kind`. */
static void synth_classify_image(uint8_t *pix, int n, int kind, vt_rng *rng)
{
    float base[3], grad[3], col[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) base[k] = 255.0f * (float)vt_rng_uniform(rng);
    for (int k = 0; k < 3; k++) grad[k] = 20.0f * (2.0f * (float)vt_rng_uniform(rng) - 1.0f);
    float theta = 2.0f * SYNTH_PI * (float)vt_rng_uniform(rng);
    float noise_amp = 3.0f + 7.0f * (float)vt_rng_uniform(rng);

    /* Rejection-sample a colour far enough from the background in luma, then swap the two so
     * the shape is the lighter one (swapping keeps both colour distributions identical).  The
     * fixed try count keeps the RNG stream deterministic; black/white is the (practically
     * unreachable) fallback. */
    const float min_contrast = 80.0f;
    float lb = luma(base);
    int ok = 0;
    for (int tries = 0; tries < 64; tries++) {
        float cand[3];
        for (int k = 0; k < 3; k++) cand[k] = 255.0f * (float)vt_rng_uniform(rng);
        if (!ok && fabsf(luma(cand) - lb) >= min_contrast) {
            memcpy(col, cand, sizeof col);
            ok = 1;
        }
    }
    if (!ok) {
        for (int k = 0; k < 3; k++) base[k] = 0.0f;
        col[0] = col[1] = col[2] = 255.0f;
    } else if (luma(col) < lb) {
        for (int k = 0; k < 3; k++) {
            float t = col[k];
            col[k] = base[k];
            base[k] = t;
        }
    }

    /* Background: base colour plus a linear gradient in a random direction. */
    float gx = cosf(theta) / n, gy = sinf(theta) / n;
    for (int y = 0; y < n; y++) {
        uint8_t *row = pix + (size_t)y * n * 3;
        for (int x = 0; x < n; x++) {
            float t = (x + 0.5f - 0.5f * n) * gx + (y + 0.5f - 0.5f * n) * gy;
            for (int k = 0; k < 3; k++) row[x * 3 + k] = clamp_u8(base[k] + grad[k] * t);
        }
    }

    vt_shape s;
    vt_shape_random(&s, kind, rng, n, n, 0.45f, 0.80f, 0);
    uint8_t c8[3] = {clamp_u8(col[0]), clamp_u8(col[1]), clamp_u8(col[2])};
    vt_shape_draw(&s, pix, n, n, 3, (size_t)n * 3, c8);

    /* Per-pixel noise over everything, so the shape is textured like the background. Each
     * 64-bit draw gives four 16-bit pairs -> a triangular distribution in [-amp, amp]. */
    size_t total = (size_t)n * n * 3;
    float scale = noise_amp / 255.0f;
    for (size_t i = 0; i < total;) {
        uint64_t r = vt_rng_next(rng);
        for (int j = 0; j < 4 && i < total; j++, i++, r >>= 16) {
            float v = (float)((int)(r & 0xFF) + (int)((r >> 8) & 0xFF) - 255);
            pix[i] = clamp_u8(pix[i] + v * scale);
        }
    }
}

/* ---- PNG output -------------------------------------------------------------------------- */

/* The dataset folder is new, so the files need no temporary+rename+fsync dance (unlike
 * vt_image_save_png).  Noise compresses poorly at any level; a fast level halves the
 * generation time. */
vt_status vt_synth_write_png(const char *path, const uint8_t *pix, int n)
{
    return vt_image_create_png(path, pix, n, n, 3, (size_t)n * 3, 2);
}

vt_status vt_synth_write_png_gray(const char *path, const uint8_t *pix, int n)
{
    return vt_image_create_png(path, pix, n, n, 1, (size_t)n, 2);
}

/* ---- folders ----------------------------------------------------------------------------- */

static vt_status make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0) return VT_OK;
    int e = errno;
    struct stat sb;
    if (e == EEXIST && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return VT_OK;
    if (e == EEXIST) return vt_fail(VT_ERR_IO, "%s: exists and is not a folder", path);
    return vt_fail(VT_ERR_IO, "%s: cannot create folder: %s", path, strerror(e));
}

/* mkdir -p */
vt_status vt_synth_make_dirs(const char *path)
{
    char *p = vt_strdup(path);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = VT_OK;
    for (char *q = p + 1; *q && st == VT_OK; q++) {
        if (*q != '/') continue;
        *q = 0;
        st = make_dir(p);
        *q = '/';
    }
    if (st == VT_OK) st = make_dir(p);
    free(p);
    return st;
}

/* ---- options and entry point ------------------------------------------------------------- */

typedef struct synth_opts {
    long long classes, train, val, imgsz, seed;
} synth_opts;

static uint64_t image_seed(uint64_t seed, int split, int cls, int index)
{
    /* vt_rng_seed runs splitmix64 over this, so a simple injective packing suffices. */
    return seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)split << 60) ^ ((uint64_t)cls << 52) ^
           (uint64_t)index;
}

static vt_status synth_classify(const char *dir, const synth_opts *o)
{
    static const char *const splits[2] = {"train", "val"};
    const long long counts[2] = {o->train, o->val};
    const int n = (int)o->imgsz;
    size_t plen = strlen(dir) + 64;
    char *path = vt_malloc(plen);
    uint8_t *pix = vt_malloc((size_t)n * n * 3);
    vt_status st = (path && pix) ? VT_OK : VT_ERR_OUT_OF_MEMORY;

    /* Refuse before creating anything, so a user's data is never mixed with ours. */
    for (int sp = 0; sp < 2 && st == VT_OK; sp++) {
        struct stat sb;
        snprintf(path, plen, "%s/%s", dir, splits[sp]);
        if (stat(path, &sb) == 0)
            st = vt_fail(VT_ERR_INVALID_ARGUMENT,
                         "%s: already exists; vt_synth_generate only writes into a folder "
                         "without a dataset",
                         path);
    }
    if (st == VT_OK) st = vt_synth_make_dirs(dir);

    for (int sp = 0; sp < 2 && st == VT_OK; sp++) {
        if (counts[sp] == 0) continue; /* an empty split folder would not be a valid dataset */
        snprintf(path, plen, "%s/%s", dir, splits[sp]);
        st = make_dir(path);
        for (int cls = 0; cls < (int)o->classes && st == VT_OK; cls++) {
            snprintf(path, plen, "%s/%s/%s", dir, splits[sp], vt_shape_name(cls));
            st = make_dir(path);
            for (int i = 0; i < (int)counts[sp] && st == VT_OK; i++) {
                vt_rng rng;
                vt_rng_seed(&rng, image_seed((uint64_t)o->seed, sp, cls, i));
                synth_classify_image(pix, n, cls, &rng);
                snprintf(path, plen, "%s/%s/%s/%05d.png", dir, splits[sp], vt_shape_name(cls), i);
                st = vt_synth_write_png(path, pix, n);
            }
        }
    }
    free(path);
    free(pix);
    return st;
}

VT_API vt_status vt_synth_generate(const char *dir, vt_task task, const char *options)
{
    if (!dir || !*dir)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_synth_generate: dir is NULL or empty");
    const vt_labels *labels = vt_task_labels(task);
    if (!labels)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_synth_generate: unknown task %d", (int)task);
    if (labels->instances) return vt_synth_instance(dir, options); /* the detection options */
    if (labels->masks) return vt_synth_segment(dir, options); /* the detection options */
    if (labels->boxes) return vt_synth_detect(dir, options);  /* own options */
    /* keys, ranges and defaults: the VT_OPT_SYNTH_* lines of the option table */
    vt_optvals *v;
    vt_status st = vt_optvals_parse_new(&v, VT_SCOPE_SYNTH_CLASSIFY, options);
    if (st != VT_OK) {
        vt_fail_context("vt_synth_generate");
        return st;
    }
    synth_opts o = {(long long)vt_opt_num(v, VT_OPT_SYNTH_CLASSES),
                    (long long)vt_opt_num(v, VT_OPT_SYNTH_TRAIN),
                    (long long)vt_opt_num(v, VT_OPT_SYNTH_VAL),
                    (long long)vt_opt_num(v, VT_OPT_SYNTH_IMGSZ),
                    (long long)vt_opt_num(v, VT_OPT_SYNTH_SEED)};
    free(v);
    return synth_classify(dir, &o); /* one class per image */
}
