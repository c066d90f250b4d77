/* Augmentation of pixel values and the classification pipeline: HSV gains, random resized
 * crop, random erasing.  See augment.h. */
#include "data/augment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double unif(vt_rng *r, double a, double b) { return a + (b - a) * vt_rng_uniform(r); }

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
#include <emmintrin.h>

/* a where mask, else b (SSE2 has no blendv) */
static inline __m128 sel(__m128 mask, __m128 a, __m128 b)
{
    return _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b));
}

/* hsv_pixel for 4 pixels at once: the same float operations in the same order in each lane
 * (IEEE, no contraction), with the branches turned into selects, so the bytes are the same;
 * the tables are recomputed in the lanes as they were built (1 / C, the value gain of V). */
static inline void hsv_4(uint8_t *px, int c, float dh, float gs, float gv)
{
    float R[4], G[4], B[4];
    for (int j = 0; j < 4; j++) {
        R[j] = px[j * c];
        G[j] = px[j * c + 1];
        B[j] = px[j * c + 2];
    }
    const __m128 r = _mm_loadu_ps(R), g = _mm_loadu_ps(G), b = _mm_loadu_ps(B);
    const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f), c255 = _mm_set1_ps(255.0f),
                 half = _mm_set1_ps(0.5f);
    const __m128 V = _mm_max_ps(_mm_max_ps(r, g), b), m = _mm_min_ps(_mm_min_ps(r, g), b);
    const __m128 C = _mm_sub_ps(V, m);
    const __m128 gray = _mm_cmpeq_ps(C, zero);
    const __m128 Cs = sel(gray, one, C); /* gray lanes are replaced at the end */
    const __m128 rc = _mm_div_ps(one, Cs);
    __m128 c0 = r, c1 = g, c2 = b;
    if (dh != 0.0f) {
        const __m128 isr = _mm_cmpeq_ps(V, r), isg = _mm_andnot_ps(isr, _mm_cmpeq_ps(V, g));
        const __m128 hr = _mm_mul_ps(_mm_sub_ps(g, b), rc);
        const __m128 hg = _mm_add_ps(_mm_mul_ps(_mm_sub_ps(b, r), rc), _mm_set1_ps(2.0f));
        const __m128 hb = _mm_add_ps(_mm_mul_ps(_mm_sub_ps(r, g), rc), _mm_set1_ps(4.0f));
        __m128 h = sel(isr, hr, sel(isg, hg, hb));
        const __m128 six = _mm_set1_ps(6.0f);
        h = _mm_add_ps(h, _mm_set1_ps(dh));
        /* adding 0 where the scalar code adds nothing: at most a -0 becomes +0, which rounds
         * to the same byte */
        h = _mm_add_ps(h, _mm_and_ps(_mm_cmplt_ps(h, zero), six));
        h = _mm_add_ps(h, _mm_and_ps(_mm_cmplt_ps(h, zero), six));
        h = _mm_sub_ps(h, _mm_and_ps(_mm_cmpge_ps(h, six), six));
        h = _mm_sub_ps(h, _mm_and_ps(_mm_cmpge_ps(h, six), six));
        __m128i sector = _mm_cvttps_epi32(h);
        const __m128i five = _mm_set1_epi32(5);
        const __m128i over = _mm_cmpgt_epi32(sector, five);
        sector = _mm_or_si128(_mm_and_si128(over, five), _mm_andnot_si128(over, sector));
        const __m128 f = _mm_sub_ps(h, _mm_cvtepi32_ps(sector));
        const __m128 odd = _mm_castsi128_ps(
            _mm_cmpeq_epi32(_mm_and_si128(sector, _mm_set1_epi32(1)), _mm_set1_epi32(1)));
        const __m128 x = sel(odd, _mm_mul_ps(C, _mm_sub_ps(one, f)), _mm_mul_ps(C, f));
        const __m128 xm = _mm_add_ps(x, m);
        __m128 s[6];
        for (int k = 0; k < 6; k++)
            s[k] = _mm_castsi128_ps(_mm_cmpeq_epi32(sector, _mm_set1_epi32(k)));
        /* sector: (c0, c1, c2) = 0 (V, xm, m) 1 (xm, V, m) 2 (m, V, xm) 3 (m, xm, V)
         * 4 (xm, m, V) 5 (V, m, xm) */
        c0 = sel(_mm_or_ps(s[0], s[5]), V, sel(_mm_or_ps(s[1], s[4]), xm, m));
        c1 = sel(_mm_or_ps(s[1], s[2]), V, sel(_mm_or_ps(s[0], s[3]), xm, m));
        c2 = sel(_mm_or_ps(s[3], s[4]), V, sel(_mm_or_ps(s[2], s[5]), xm, m));
    }
    const __m128 gsv = _mm_set1_ps(gs), gvv = _mm_set1_ps(gv);
    const __m128 sg = sel(_mm_cmplt_ps(V, _mm_mul_ps(gsv, C)), _mm_mul_ps(V, rc), gsv);
    const __m128 Vs = sel(gray, one, V); /* V = 0 is gray */
    const __m128 vg = sel(_mm_cmpgt_ps(_mm_mul_ps(Vs, gvv), c255), _mm_div_ps(c255, Vs), gvv);
    const __m128 k = _mm_mul_ps(sg, vg);
    const __m128 a0 = _mm_mul_ps(_mm_mul_ps(V, _mm_sub_ps(one, sg)), vg);
    const __m128 gval = _mm_min_ps(_mm_mul_ps(V, gvv), c255);
    __m128 o0 = sel(gray, gval, _mm_add_ps(a0, _mm_mul_ps(k, c0)));
    __m128 o1 = sel(gray, gval, _mm_add_ps(a0, _mm_mul_ps(k, c1)));
    __m128 o2 = sel(gray, gval, _mm_add_ps(a0, _mm_mul_ps(k, c2)));
    /* clamp_round: (int)(v + 0.5f), then 0..255 (the saturating packs) */
    __m128i i0 = _mm_cvttps_epi32(_mm_add_ps(o0, half));
    __m128i i1 = _mm_cvttps_epi32(_mm_add_ps(o1, half));
    __m128i i2 = _mm_cvttps_epi32(_mm_add_ps(o2, half));
    __m128i p01 = _mm_packus_epi16(_mm_packs_epi32(i0, i1), _mm_packs_epi32(i2, i2));
    uint8_t out[16];
    _mm_storeu_si128((__m128i *)out, p01);
    for (int j = 0; j < 4; j++) {
        px[j * c] = out[j];
        px[j * c + 1] = out[4 + j];
        px[j * c + 2] = out[8 + j];
    }
}
#endif

void vt_aug_hsv(vt_image *img, float hgain, float sgain, float vgain, vt_rng *r)
{
    float uh = (float)unif(r, -1.0, 1.0), us = (float)unif(r, -1.0, 1.0),
          uv = (float)unif(r, -1.0, 1.0);
    if (!img || !img->data) return;
    float dh = uh * hgain * 6.0f, gs = 1.0f + us * sgain, gv = 1.0f + uv * vgain;
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
    for (; i + 4 <= n; i += 4) hsv_4(img->data + i * c, c, dh, gs, gv);
#endif
    for (; i < n; i++) hsv_pixel(img->data + i * c, dh, gs, &t);
}

/* ---- classification ---------------------------------------------------------------------- */

static int valid_image(const vt_image *im)
{
    return im && im->data && im->w > 0 && im->h > 0 && im->c >= 1 && im->c <= 4;
}

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
