/* Private to lib/data/augment*.c: SIMD pieces shared by the colour and the geometry code, one
 * RGB pixel per lane: four per SSE2 vector, and eight per AVX2 vector where x86-64 GCC can
 * compile it and the CPU has it (vt_px_avx2, at run time).  Every float operation is the
 * scalar reference's (hsv_pixel in augment_color.c) in the same order, IEEE single precision
 * without contraction, so the results are the same bytes; the callers' tests compare them with
 * the scalar code. */
#ifndef VT_AUGMENT_PX_H
#define VT_AUGMENT_PX_H

#include <stdint.h>
#include <stdlib.h>
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
    int one_turn; /* |dh| <= 1: h + dh is in [-2, 6], one correction each way is enough */
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

/* vt_px_hsv4: hsv_pixel on four pixels (augment_px_hsv.inc with SSE2). */
#define VT_V_FN vt_px_hsv4
#define VT_V_F __m128
#define VT_V_I __m128i
#define VT_V_SET1 _mm_set1_ps
#define VT_V_ISET1 _mm_set1_epi32
#define VT_V_ADD _mm_add_ps
#define VT_V_SUB _mm_sub_ps
#define VT_V_MUL _mm_mul_ps
#define VT_V_DIV _mm_div_ps
#define VT_V_MIN _mm_min_ps
#define VT_V_MAX _mm_max_ps
#define VT_V_AND _mm_and_ps
#define VT_V_OR _mm_or_ps
#define VT_V_ANDNOT _mm_andnot_ps
#define VT_V_SEL vt_px_sel
#define VT_V_CMPEQ _mm_cmpeq_ps
#define VT_V_CMPLT _mm_cmplt_ps
#define VT_V_CMPGE _mm_cmpge_ps
#define VT_V_CMPGT _mm_cmpgt_ps
#define VT_V_CVTT _mm_cvttps_epi32
#define VT_V_CVT _mm_cvtepi32_ps
#define VT_V_CASTF _mm_castsi128_ps
#define VT_V_IAND _mm_and_si128
#define VT_V_IOR _mm_or_si128
#define VT_V_IANDNOT _mm_andnot_si128
#define VT_V_ICMPEQ _mm_cmpeq_epi32
#define VT_V_ICMPGT _mm_cmpgt_epi32
#include "data/augment_px_hsv.inc"
#include "data/augment_px_undef.inc"

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

/* AVX2, eight pixels at a time, for x86-64 GCC (chosen at run time: vt_px_avx2): the same
 * operations per lane, so the same bytes.  The functions below the pragma are compiled for
 * AVX2 and must only run where vt_px_avx2() says so. */
#if defined(__SSE2__) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VT_PX_AVX2 1
#include <immintrin.h>

/* The CPU has AVX2 (and the OS saves its registers), and the environment does not ask for
 * SSE2 only (VT_SIMD=sse2: to measure or test that path on an AVX2 machine). */
static inline int vt_px_avx2(void)
{
    const char *e = getenv("VT_SIMD");
    return __builtin_cpu_supports("avx2") && !(e && !strcmp(e, "sse2"));
}

#pragma GCC push_options
#pragma GCC target("avx2")
static inline __m256 vt_px_sel8(__m256 mask, __m256 a, __m256 b)
{
    return _mm256_blendv_ps(b, a, mask);
}
#define VT_PX_CMP8(name, pred)                                                                 \
    static inline __m256 name(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, pred); }
VT_PX_CMP8(vt_px_cmpeq8, _CMP_EQ_OQ)
VT_PX_CMP8(vt_px_cmplt8, _CMP_LT_OS)
VT_PX_CMP8(vt_px_cmpge8, _CMP_GE_OS)
VT_PX_CMP8(vt_px_cmpgt8, _CMP_GT_OS)
#undef VT_PX_CMP8
/* vt_px_hsv8: hsv_pixel on eight pixels */
#define VT_V_FN vt_px_hsv8
#define VT_V_F __m256
#define VT_V_I __m256i
#define VT_V_SET1 _mm256_set1_ps
#define VT_V_ISET1 _mm256_set1_epi32
#define VT_V_ADD _mm256_add_ps
#define VT_V_SUB _mm256_sub_ps
#define VT_V_MUL _mm256_mul_ps
#define VT_V_DIV _mm256_div_ps
#define VT_V_MIN _mm256_min_ps
#define VT_V_MAX _mm256_max_ps
#define VT_V_AND _mm256_and_ps
#define VT_V_OR _mm256_or_ps
#define VT_V_ANDNOT _mm256_andnot_ps
#define VT_V_SEL vt_px_sel8
#define VT_V_CMPEQ vt_px_cmpeq8
#define VT_V_CMPLT vt_px_cmplt8
#define VT_V_CMPGE vt_px_cmpge8
#define VT_V_CMPGT vt_px_cmpgt8
#define VT_V_CVTT _mm256_cvttps_epi32
#define VT_V_CVT _mm256_cvtepi32_ps
#define VT_V_CASTF _mm256_castsi256_ps
#define VT_V_IAND _mm256_and_si256
#define VT_V_IOR _mm256_or_si256
#define VT_V_IANDNOT _mm256_andnot_si256
#define VT_V_ICMPEQ _mm256_cmpeq_epi32
#define VT_V_ICMPGT _mm256_cmpgt_epi32
#include "data/augment_px_hsv.inc"
#include "data/augment_px_undef.inc"

/* Store 8 floats of a plane row at columns x..x+7, or mirrored (at w-1-x..w-8-x). */
static inline void vt_px_store8(float *row, int w, int x, int flip, __m256 v)
{
    if (flip) {
        v = _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
        _mm256_storeu_ps(row + w - 8 - x, v);
    } else {
        _mm256_storeu_ps(row + x, v);
    }
}
#pragma GCC pop_options
#endif

#endif
