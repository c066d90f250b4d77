/* fp32 -> bf16 rounding of 16 or 32 floats for the bf16 packers (gemm_bf16.c, gemm_bf16_amx.c)
 * with VCVTNE2PS2BF16 / VCVTNEPS2BF16, as the kernels see vt_bf16_round's result.  The
 * instructions round to nearest even and make NaNs quiet exactly as vt_bf16_round does
 * ((x >> 16) | 0x0040), but take denormal inputs as zero.  VDPBF16PS and TDPBF16PS take
 * denormal bf16 operands as zero too, so of vt_bf16_round's results only one reaches the
 * products differently: the smallest normal 2^-126, to which the denormals of |x| >= 0x007f8000
 * round; vt_bf16_fix16 gives those inputs the value 2^-126 itself (a branch taken only where a
 * vector holds a denormal).  Four to six times fewer instructions than rounding with integer
 * arithmetic: the packing, not the tiles, bounds the AMX kernel on thin products.
 * Include after <immintrin.h>; callable from functions compiled for AVX512F/BW/DQ/BF16. */
#ifndef VT_BF16_CVT_H
#define VT_BF16_CVT_H

#define VT_BF16_CVT_TARGET \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"), always_inline))

VT_BF16_CVT_TARGET static inline __m512 vt_bf16_fix16(__m512 v)
{
    __mmask16 d = _mm512_fpclass_ps_mask(v, 0x20); /* denormal */
    if (__builtin_expect(d != 0, 0)) {
        __m512i u = _mm512_castps_si512(v);
        __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
        __mmask16 up = _mm512_mask_cmpge_epu32_mask(d, a, _mm512_set1_epi32(0x007f8000));
        __m512i s = _mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u)),
                                    _mm512_set1_epi32(0x00800000));
        v = _mm512_mask_mov_ps(v, up, _mm512_castsi512_ps(s));
    }
    return v;
}

/* lo -> bf16 words 0-15, hi -> words 16-31 */
VT_BF16_CVT_TARGET static inline __m512i vt_bf16_cvt32(__m512 lo, __m512 hi)
{
    return (__m512i)_mm512_cvtne2ps_pbh(vt_bf16_fix16(hi), vt_bf16_fix16(lo));
}

/* 16 floats -> 16 bf16 words */
VT_BF16_CVT_TARGET static inline __m256i vt_bf16_cvt16(__m512 v)
{
    return (__m256i)_mm512_cvtneps_pbh(vt_bf16_fix16(v));
}

/* Two rows of 16 floats -> 16 words (bf16(x0[j]) | bf16(x1[j]) << 16). */
VT_BF16_CVT_TARGET static inline __m512i vt_bf16_pairs16(__m512 x0, __m512 x1)
{
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, vt_bf16_cvt32(x0, x1));
}

#endif
