/* Augmentation of pixel values and the classification pipeline: HSV gains, random resized
 * crop, random erasing.  See augment.h. */
#include "data/augment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/augment_px.h"

static double unif(vt_rng *r, double a, double b) { return a + (b - a) * vt_rng_uniform(r); }

static int valid_image(const vt_image *im)
{
    return im && im->data && im->w > 0 && im->h > 0 && im->c >= 1 && im->c <= 4;
}

static uint8_t clamp_round(float v)
{
    int i = (int)(v + 0.5f);
    return (uint8_t)(i < 0 ? 0 : i > 255 ? 255 : i);
}

/* ---- HSV --------------------------------------------------------------------------------- */

/* Per-image tables, so the pixel loop has no division: 1/C for the chroma C, and the value
 * gain of each V (min(gv, 255/V): V' = min(V * gv, 255) as Ultralytics' LUT clips). */
typedef struct hsv_tabs {
    float recip[256];
    float vgain[256];
    uint8_t gray[256]; /* a gray pixel's new value */
} hsv_tabs;

/* One RGB pixel.  dh: hue shift in sextants (a full turn is 6); gs: saturation gain.  Each
 * stage works on (max, min, channel) directly: for a fixed hue every channel is
 * V - S * V * k(hue), so scaling S scales the distance of each channel below the max, and
 * scaling V scales the whole pixel. */
static inline void hsv_pixel(uint8_t *px, float dh, float gs, const hsv_tabs *t)
{
    const int r = px[0], g = px[1], b = px[2];
    const int V = r > g ? (r > b ? r : b) : (g > b ? g : b);
    const int m = r < g ? (r < b ? r : b) : (g < b ? g : b);
    const int C = V - m;
    if (C == 0) { /* gray: no hue and no saturation; only the value gain applies */
        px[0] = px[1] = px[2] = t->gray[V];
        return;
    }
    float c0 = (float)r, c1 = (float)g, c2 = (float)b;
    const float Cf = (float)C, rc = t->recip[C];
    if (dh != 0.0f) {
        float h;
        if (V == r)
            h = (float)(g - b) * rc;
        else if (V == g)
            h = (float)(b - r) * rc + 2.0f;
        else
            h = (float)(r - g) * rc + 4.0f;
        h += dh; /* |dh| <= 6 and h is in [-1, 5]: two corrections at most */
        if (h < 0.0f) h += 6.0f;
        if (h < 0.0f) h += 6.0f;
        if (h >= 6.0f) h -= 6.0f;
        if (h >= 6.0f) h -= 6.0f;
        int sector = (int)h;
        if (sector > 5) sector = 5;
        float f = h - (float)sector;
        float x = (sector & 1) ? Cf * (1.0f - f) : Cf * f; /* the middle channel above min */
        const float mf = (float)m, Vf = (float)V, xm = x + mf;
        switch (sector) {
        case 0: c0 = Vf, c1 = xm, c2 = mf; break;
        case 1: c0 = xm, c1 = Vf, c2 = mf; break;
        case 2: c0 = mf, c1 = Vf, c2 = xm; break;
        case 3: c0 = mf, c1 = xm, c2 = Vf; break;
        case 4: c0 = xm, c1 = mf, c2 = Vf; break;
        default: c0 = Vf, c1 = mf, c2 = xm; break;
        }
    }
    /* S' = min(S * gs, 1): the new minimum V - gs * C must not go below 0. */
    const float Vf = (float)V;
    const float sg = (float)V < gs * Cf ? Vf * rc : gs;
    const float vg = t->vgain[V];
    /* c' = (V - sg * (V - c)) * vg = a + sg * vg * c */
    const float k = sg * vg, a0 = Vf * (1.0f - sg) * vg;
    px[0] = clamp_round(a0 + k * c0);
    px[1] = clamp_round(a0 + k * c1);
    px[2] = clamp_round(a0 + k * c2);
}

#if defined(__SSE2__)
/* hsv_pixel for 4 pixels at once (augment_px.h: the same float operations in each lane), in
 * place: the pixels are c (3 or 4) bytes apart; each is read 4 bytes wide (`wide`: the 4th
 * pixel's 4th byte exists) and the first three written 4 bytes wide, their 4th byte (alpha, or
 * the next pixel's first, which is written after) kept. */
static inline void hsv_4(uint8_t *px, int c, const vt_px_hsv *k, int wide)
{
    int32_t d[4];
    for (int j = 0; j < 4; j++)
        d[j] = j < 3 || wide ? vt_px_ld4(px + j * c) : vt_px_ld3(px + j * c);
    const __m128i v = _mm_setr_epi32(d[0], d[1], d[2], d[3]);
    __m128 r, g, b, o0, o1, o2;
    vt_px_split(v, &r, &g, &b);
    vt_px_hsv4(k, r, g, b, &o0, &o1, &o2);
    _mm_storeu_si128((__m128i *)d, vt_px_join(o0, o1, o2, v));
    /* the last pixel's 4th byte is not written back: the next group's first load would then
     * overlap a store it cannot be forwarded from (for c = 4 it is alpha, unchanged) */
    for (int j = 0; j < 4; j++) memcpy(px + j * c, &d[j], j < 3 ? 4 : 3);
}
#endif

void vt_aug_hsv_apply(vt_image *img, float dh, float gs, float gv)
{
    if (!img || !img->data) return;
    const size_t n = (size_t)img->w * img->h;
    if (img->c < 3) {
        if (gv == 1.0f) return;
        uint8_t lut[256];
        for (int i = 0; i < 256; i++) lut[i] = clamp_round(fminf(i * gv, 255.0f));
        for (size_t i = 0; i < n * img->c; i++) img->data[i] = lut[img->data[i]];
        return;
    }
    if (dh == 0.0f && gs == 1.0f && gv == 1.0f) return;
    hsv_tabs t;
    t.recip[0] = 0.0f;
    t.vgain[0] = 1.0f;
    for (int i = 1; i < 256; i++) {
        t.recip[i] = 1.0f / (float)i;
        t.vgain[i] = (float)i * gv > 255.0f ? 255.0f / (float)i : gv;
    }
    for (int i = 0; i < 256; i++) t.gray[i] = clamp_round(fminf(i * gv, 255.0f));
    const int c = img->c;
    size_t i = 0;
#if defined(__SSE2__)
    vt_px_hsv k;
    vt_px_hsv_init(&k, dh, gs, gv);
    for (; i + 4 <= n; i += 4) hsv_4(img->data + i * c, c, &k, c == 4 || i + 4 < n);
#endif
    for (; i < n; i++) hsv_pixel(img->data + i * c, dh, gs, &t);
}

void vt_aug_hsv(vt_image *img, float hgain, float sgain, float vgain, vt_rng *r)
{
    float uh = (float)unif(r, -1.0, 1.0), us = (float)unif(r, -1.0, 1.0),
          uv = (float)unif(r, -1.0, 1.0);
    if (!img || !img->data) return;
    vt_aug_hsv_apply(img, uh * hgain * 6.0f, 1.0f + us * sgain, 1.0f + uv * vgain);
}

void vt_aug_colour_draw(const vt_aug_params *p, vt_rng *r, vt_aug_colour *c)
{
    /* vt_aug_hsv's draws and gains, then the two flips' */
    float uh = (float)unif(r, -1.0, 1.0), us = (float)unif(r, -1.0, 1.0),
          uv = (float)unif(r, -1.0, 1.0);
    c->dh = uh * p->hsv_h * 6.0f;
    c->gs = 1.0f + us * p->hsv_s;
    c->gv = 1.0f + uv * p->hsv_v;
    c->flipud = vt_aug_chance(r, p->flipud);
    c->fliplr = vt_aug_chance(r, p->fliplr);
}

vt_status vt_aug_colour_to_float(const vt_image *img, const vt_aug_colour *c, int want_c,
                                 float *dst, size_t chan_stride)
{
    if (!valid_image(img) || !c || !dst || (want_c != 1 && want_c != 3))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_colour_to_float: bad arguments");
    const int w = img->w, h = img->h;
#if defined(__SSE2__)
    if (img->c == 3 && want_c == 3) {
        vt_px_hsv k;
        vt_px_hsv_init(&k, c->dh, c->gs, c->gv);
        const __m128 scale = _mm_set1_ps(1.0f / 255.0f);
        for (int y = 0; y < h; y++) {
            const uint8_t *row = img->data + (size_t)y * w * 3;
            const int oy = c->flipud ? h - 1 - y : y;
            float *plane[3];
            for (int j = 0; j < 3; j++) plane[j] = dst + j * chan_stride + (size_t)oy * w;
            for (int x = 0; x < w; x += 4) {
                const int n = w - x < 4 ? w - x : 4;
                int32_t d[4];
                for (int j = 0; j < 4; j++) {
                    const int xx = x + (j < n ? j : n - 1); /* the tail repeats its last */
                    /* 4 bytes wide unless it is the image's last pixel */
                    d[j] = y < h - 1 || xx < w - 1 ? vt_px_ld4(row + xx * 3)
                                                   : vt_px_ld3(row + xx * 3);
                }
                __m128 r, g, b, o[3];
                vt_px_split(_mm_setr_epi32(d[0], d[1], d[2], d[3]), &r, &g, &b);
                vt_px_hsv4(&k, r, g, b, &o[0], &o[1], &o[2]);
                for (int j = 0; j < 3; j++)
                    vt_px_store(plane[j], w, x, n, c->fliplr, _mm_mul_ps(o[j], scale));
            }
        }
        return VT_OK;
    }
#endif
    /* through a copy */
    vt_image tmp = {w, h, img->c, vt_malloc((size_t)w * h * img->c)};
    if (!tmp.data) return VT_ERR_OUT_OF_MEMORY;
    memcpy(tmp.data, img->data, (size_t)w * h * img->c);
    vt_aug_colour_apply(&tmp, c);
    vt_image_to_float(&tmp, want_c, 0, dst, chan_stride);
    vt_image_free(&tmp);
    return VT_OK;
}

/* ---- classification ---------------------------------------------------------------------- */

/* Copy the rectangle (x, y, w, h) out of src. */
static vt_status crop(const vt_image *src, int x, int y, int w, int h, vt_image *dst)
{
    const int c = src->c;
    uint8_t *d = vt_malloc((size_t)w * h * c);
    if (!d) return VT_ERR_OUT_OF_MEMORY;
    for (int j = 0; j < h; j++)
        memcpy(d + (size_t)j * w * c, src->data + ((size_t)(y + j) * src->w + x) * c,
               (size_t)w * c);
    dst->w = w;
    dst->h = h;
    dst->c = c;
    dst->data = d;
    return VT_OK;
}

vt_status vt_aug_random_resized_crop(const vt_image *src, int s, float scale_min,
                                     float ratio_min, float ratio_max, vt_rng *r,
                                     vt_image *dst, int crop_xywh[4])
{
    if (!valid_image(src) || !r || !dst || s < 1 || s > 32768 || !(scale_min > 0.0f) ||
        !(scale_min <= 1.0f) || !(ratio_min > 0.0f) || !(ratio_max >= ratio_min))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_random_resized_crop: bad arguments");
    const int W = src->w, H = src->h;
    const double area = (double)W * H, lr0 = log(ratio_min), lr1 = log(ratio_max);
    int cx = 0, cy = 0, cw = 0, ch = 0, found = 0;
    for (int t = 0; t < 10 && !found; t++) {
        double target = area * unif(r, scale_min, 1.0);
        double ar = exp(unif(r, lr0, lr1));
        int w = (int)lround(sqrt(target * ar)), h = (int)lround(sqrt(target / ar));
        if (w > 0 && w <= W && h > 0 && h <= H) {
            cy = (int)vt_rng_below(r, (uint32_t)(H - h + 1));
            cx = (int)vt_rng_below(r, (uint32_t)(W - w + 1));
            cw = w;
            ch = h;
            found = 1;
        }
    }
    if (!found) { /* centre crop at the nearest allowed aspect ratio */
        double in_ratio = (double)W / H;
        if (in_ratio < ratio_min) {
            cw = W;
            ch = (int)lround(cw / (double)ratio_min);
        } else if (in_ratio > ratio_max) {
            ch = H;
            cw = (int)lround(ch * (double)ratio_max);
        } else {
            cw = W;
            ch = H;
        }
        cw = cw < 1 ? 1 : cw > W ? W : cw;
        ch = ch < 1 ? 1 : ch > H ? H : ch;
        cx = (W - cw) / 2;
        cy = (H - ch) / 2;
    }
    vt_image cr = {0, 0, 0, NULL};
    vt_status st = crop(src, cx, cy, cw, ch, &cr);
    if (st) return st;
    if (cw != s || ch != s) {
        vt_image out = {0, 0, 0, NULL};
        st = vt_image_resize(&cr, s, s, &out);
        vt_image_free(&cr);
        if (st) return st;
        cr = out;
    }
    *dst = cr;
    if (crop_xywh) {
        crop_xywh[0] = cx;
        crop_xywh[1] = cy;
        crop_xywh[2] = cw;
        crop_xywh[3] = ch;
    }
    return VT_OK;
}

int vt_aug_random_erasing(vt_image *img, float prob, int fill, vt_rng *r, int xywh[4])
{
    if (!vt_aug_chance(r, prob) || !img || !img->data) return 0;
    const int W = img->w, H = img->h, c = img->c;
    const double area = (double)W * H, lr0 = log(0.3), lr1 = log(3.3);
    for (int t = 0; t < 10; t++) {
        double target = area * unif(r, 0.02, 0.33);
        double ar = exp(unif(r, lr0, lr1));
        /* torchvision: h from area * ratio, w from area / ratio */
        int h = (int)lround(sqrt(target * ar)), w = (int)lround(sqrt(target / ar));
        if (!(h < H && w < W) || h < 1 || w < 1) continue;
        int y = (int)vt_rng_below(r, (uint32_t)(H - h + 1));
        int x = (int)vt_rng_below(r, (uint32_t)(W - w + 1));
        for (int j = y; j < y + h; j++) {
            uint8_t *p = img->data + ((size_t)j * W + x) * c;
            if (fill >= 0) {
                memset(p, fill > 255 ? 255 : fill, (size_t)w * c);
            } else {
                for (size_t k = 0; k < (size_t)w * c; k++) p[k] = (uint8_t)(vt_rng_next(r) >> 56);
            }
        }
        if (xywh) {
            xywh[0] = x;
            xywh[1] = y;
            xywh[2] = w;
            xywh[3] = h;
        }
        return 1;
    }
    return 0;
}

vt_status vt_aug_classify(const vt_image *src, int s, const vt_aug_params *p, vt_rng *r,
                          vt_image *dst)
{
    if (!p) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_classify: bad arguments");
    vt_image out = {0, 0, 0, NULL};
    vt_status st = vt_aug_random_resized_crop(src, s, p->crop_scale_min, p->crop_ratio_min,
                                              p->crop_ratio_max, r, &out, NULL);
    if (st) return st;
    if (vt_aug_chance(r, p->fliplr)) vt_aug_fliplr(&out, NULL);
    if (vt_aug_chance(r, p->flipud)) vt_aug_flipud(&out, NULL);
    vt_aug_hsv(&out, p->hsv_h, p->hsv_s, p->hsv_v, r);
    vt_aug_random_erasing(&out, p->erasing, -1, r, NULL);
    *dst = out;
    return VT_OK;
}
