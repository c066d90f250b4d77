/* An 8x8 transpose of 32-bit lanes in AVX registers: row q of `in` becomes column q of `out`,
 * shared by the fp32 packer (gemm.c) and the bf16 packer (gemm_bf16.c, on bf16 pairs).  Include
 * after <immintrin.h>; callable from functions compiled for AVX or wider. */
#ifndef VT_TRANSPOSE8_H
#define VT_TRANSPOSE8_H

__attribute__((target("avx"), always_inline)) static inline void vt_transpose8_ps(
    const __m256 in[8], __m256 out[8])
{
    __m256 t[8], u[8];
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm256_unpacklo_ps(in[q], in[q + 1]);
        t[q + 1] = _mm256_unpackhi_ps(in[q], in[q + 1]);
    }
    for (int q = 0; q < 8; q += 4) {
        u[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
        u[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xEE);
        u[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
        u[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
    }
    for (int q = 0; q < 4; q++) {
        out[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
        out[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
    }
}

#endif
