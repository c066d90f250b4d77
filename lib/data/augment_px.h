/* Private to lib/data/augment*.c: SSE2 pieces shared by the colour and the geometry code, four
 * RGB pixels at a time, one pixel per lane.  Every float operation is the scalar reference's
 * (hsv_pixel in augment_color.c) in the same order, IEEE single precision without contraction,
 * so the results are the same bytes; the callers' tests compare them with the scalar code. */
#ifndef VT_AUGMENT_PX_H
#define VT_AUGMENT_PX_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>

/* a where mask, else b (SSE2 has no blendv) */
static inline __m128 vt_px_sel(__m128 mask, __m128 a, __m128 b)
{
    return _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b));
}

/* The 4 bytes at p, read 4 bytes wide (the caller knows p[3] exists) or 3 (zero on top). */
static inline int32_t vt_px_ld4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline int32_t vt_px_ld3(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16);
}

/* Four pixels, one per 32-bit lane as bytes R, G, B, x: their channels as floats. */
static inline void vt_px_split(__m128i v, __m128 *r, __m128 *g, __m128 *b)
{
    const __m128i ff = _mm_set1_epi32(0xFF);
    *r = _mm_cvtepi32_ps(_mm_and_si128(v, ff));
    *g = _mm_cvtepi32_ps(_mm_and_si128(_mm_srli_epi32(v, 8), ff));
    *b = _mm_cvtepi32_ps(_mm_and_si128(_mm_srli_epi32(v, 16), ff));
}

/* One image's HSV gains (vt_aug_hsv: dh the hue shift in sextants, gs and gv the saturation and
 * value gains) and what they allow to skip: the hue maths when dh = 0, the saturation clip
 * when gs <= 1 (then V >= C >= gs * C: never clipped, sg = gs), the value clip when gv <= 1
 * (then V * gv <= 255: vg = gv). */
typedef struct vt_px_hsv {
    float dh, gs, gv;
    int hue, sat_clip, val_clip;
    int one_turn; /* |dh| <= 1: h + dh is in [-2, 6 + 1), one correction each way is enough */
} vt_px_hsv;

static inline void vt_px_hsv_init(vt_px_hsv *k, float dh, float gs, float gv)
{
    k->dh = dh;
    k->gs = gs;
    k->gv = gv;
    k->hue = dh != 0.0f;
    k->sat_clip = !(gs <= 1.0f);
    k->val_clip = !(gv <= 1.0f);
    k->one_turn = dh >= -1.0f && dh <= 1.0f;
}

/* hsv_pixel on four pixels: r, g, b are their channels (integers 0..255 as floats); *o0, *o1,
 * *o2 get the new bytes, as floats (clamp_round: (int)(v + 0.5f) clipped to 0..255). */
static inline void vt_px_hsv4(const vt_px_hsv *k, __m128 r, __m128 g, __m128 b, __m128 *o0,
                              __m128 *o1, __m128 *o2)
{
    const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f), c255 = _mm_set1_ps(255.0f),
                 half = _mm_set1_ps(0.5f);
    const __m128 V = _mm_max_ps(_mm_max_ps(r, g), b), m = _mm_min_ps(_mm_min_ps(r, g), b);
    const __m128 C = _mm_sub_ps(V, m);
    const __m128 gray = _mm_cmpeq_ps(C, zero);
    __m128 c0 = r, c1 = g, c2 = b, rc = one;
    if (k->hue || k->sat_clip) rc = _mm_div_ps(one, vt_px_sel(gray, one, C)); /* 1 / C */
    if (k->hue) {
        const __m128 isr = _mm_cmpeq_ps(V, r), isg = _mm_andnot_ps(isr, _mm_cmpeq_ps(V, g));
        const __m128 hr = _mm_mul_ps(_mm_sub_ps(g, b), rc);
        const __m128 hg = _mm_add_ps(_mm_mul_ps(_mm_sub_ps(b, r), rc), _mm_set1_ps(2.0f));
        const __m128 hb = _mm_add_ps(_mm_mul_ps(_mm_sub_ps(r, g), rc), _mm_set1_ps(4.0f));
        __m128 h = vt_px_sel(isr, hr, vt_px_sel(isg, hg, hb));
        const __m128 six = _mm_set1_ps(6.0f);
        h = _mm_add_ps(h, _mm_set1_ps(k->dh));
        /* adding 0 where the scalar code adds nothing: at most a -0 becomes +0, which rounds
         * to the same byte */
        h = _mm_add_ps(h, _mm_and_ps(_mm_cmplt_ps(h, zero), six));
        if (!k->one_turn) h = _mm_add_ps(h, _mm_and_ps(_mm_cmplt_ps(h, zero), six));
        h = _mm_sub_ps(h, _mm_and_ps(_mm_cmpge_ps(h, six), six));
        if (!k->one_turn) h = _mm_sub_ps(h, _mm_and_ps(_mm_cmpge_ps(h, six), six));
        __m128i sector = _mm_cvttps_epi32(h);
        const __m128i five = _mm_set1_epi32(5);
        const __m128i over = _mm_cmpgt_epi32(sector, five);
        sector = _mm_or_si128(_mm_and_si128(over, five), _mm_andnot_si128(over, sector));
        const __m128 f = _mm_sub_ps(h, _mm_cvtepi32_ps(sector));
        const __m128 odd = _mm_castsi128_ps(
            _mm_cmpeq_epi32(_mm_and_si128(sector, _mm_set1_epi32(1)), _mm_set1_epi32(1)));
        const __m128 x = vt_px_sel(odd, _mm_mul_ps(C, _mm_sub_ps(one, f)), _mm_mul_ps(C, f));
        __m128 s[6];
        for (int j = 0; j < 6; j++)
            s[j] = _mm_castsi128_ps(_mm_cmpeq_epi32(sector, _mm_set1_epi32(j)));
        /* sector: (c0, c1, c2) = 0 (V, xm, m) 1 (xm, V, m) 2 (m, V, xm) 3 (m, xm, V)
         * 4 (xm, m, V) 5 (V, m, xm), with xm = x + m.  Each channel is m + (C where it is V)
         * + (x where it is the middle one): m + C + 0 = V and m + 0 + x = x + m exactly (C = V - m
         * and the channels are integers). */
#define VT_PX_CH(v0, v1, x0, x1)                                                               \
    _mm_add_ps(_mm_add_ps(m, _mm_and_ps(_mm_or_ps(s[v0], s[v1]), C)),                           \
               _mm_and_ps(_mm_or_ps(s[x0], s[x1]), x))
        c0 = VT_PX_CH(0, 5, 1, 4);
        c1 = VT_PX_CH(1, 2, 0, 3);
        c2 = VT_PX_CH(3, 4, 2, 5);
#undef VT_PX_CH
    }
    const __m128 gsv = _mm_set1_ps(k->gs), gvv = _mm_set1_ps(k->gv);
    /* S' = min(S * gs, 1): sg = V / C where V < gs * C */
    const __m128 sg =
        k->sat_clip ? vt_px_sel(_mm_cmplt_ps(V, _mm_mul_ps(gsv, C)), _mm_mul_ps(V, rc), gsv) : gsv;
    /* V' = min(V * gv, 255): vg = 255 / V where V * gv > 255 (V = 0 is gray: not used) */
    const __m128 vg =
        k->val_clip
            ? vt_px_sel(_mm_cmpgt_ps(_mm_mul_ps(V, gvv), c255),
                        _mm_div_ps(c255, vt_px_sel(gray, one, V)), gvv)
            : gvv;
    const __m128 kk = _mm_mul_ps(sg, vg);
    const __m128 a0 = _mm_mul_ps(_mm_mul_ps(V, _mm_sub_ps(one, sg)), vg);
    const __m128 gval = _mm_min_ps(_mm_mul_ps(V, gvv), c255);
    const __m128 v0 = vt_px_sel(gray, gval, _mm_add_ps(a0, _mm_mul_ps(kk, c0)));
    const __m128 v1 = vt_px_sel(gray, gval, _mm_add_ps(a0, _mm_mul_ps(kk, c1)));
    const __m128 v2 = vt_px_sel(gray, gval, _mm_add_ps(a0, _mm_mul_ps(kk, c2)));
    /* clamp_round: (int)(v + 0.5f) then 0..255, as the truncation of v + 0.5 clipped to
     * [0, 255] (the same integer for every v) */
#define VT_PX_ROUND(v)                                                                         \
    _mm_cvtepi32_ps(_mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(_mm_add_ps((v), half), zero), c255)))
    *o0 = VT_PX_ROUND(v0);
    *o1 = VT_PX_ROUND(v1);
    *o2 = VT_PX_ROUND(v2);
#undef VT_PX_ROUND
}

/* Four bytes-as-floats to 4 bytes R, G, B and the 4th byte of `keep`, per lane. */
static inline __m128i vt_px_join(__m128 r, __m128 g, __m128 b, __m128i keep)
{
    const __m128i ir = _mm_cvttps_epi32(r), ig = _mm_cvttps_epi32(g), ib = _mm_cvttps_epi32(b);
    const __m128i top = _mm_and_si128(keep, _mm_set1_epi32((int32_t)0xFF000000u));
    return _mm_or_si128(_mm_or_si128(ir, _mm_slli_epi32(ig, 8)),
                        _mm_or_si128(_mm_slli_epi32(ib, 16), top));
}

/* Store 4 floats of a plane row at columns x..x+3, or mirrored (at w-1-x..w-4-x) when flip;
 * only the first n (1..4) when n < 4. */
static inline void vt_px_store(float *row, int w, int x, int n, int flip, __m128 v)
{
    if (n == 4) {
        if (flip)
            _mm_storeu_ps(row + w - 4 - x, _mm_shuffle_ps(v, v, _MM_SHUFFLE(0, 1, 2, 3)));
        else
            _mm_storeu_ps(row + x, v);
        return;
    }
    float t[4];
    _mm_storeu_ps(t, v);
    for (int j = 0; j < n; j++) row[flip ? w - 1 - x - j : x + j] = t[j];
}
#endif

#endif
