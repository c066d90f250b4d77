/* fp32 <-> bf16 bits, shared by the CPU's bf16 products (gemm_bf16.c: vt_bf16_round and
 * vt_bf16_to_float are these) and the CUDA backend's conversion of GEMM operands
 * (cuda/backend_cuda.cu, precision=bf16), so that both round every operand the same way.
 * Plain C99 that nvcc also compiles as __host__ __device__ (VT_HD).
 *
 * Round to nearest, ties to even, on the bits: adding 0x7fff plus the kept word's lowest bit
 * carries into the upper half exactly when the lower half is above the halfway point, or at it
 * with an odd upper half.  Subnormal inputs round the same way (no flush to zero); values that
 * round past the largest finite bf16 become infinity, infinities stay themselves.  A NaN keeps
 * its sign and upper payload bits and is made quiet (bit 0x0040), so it never rounds into an
 * infinity. */
#ifndef VT_BF16_MATH_H
#define VT_BF16_MATH_H

#include <stdint.h>
#include <string.h>

#include "backend/host_device.h"

VT_HD uint32_t vt_f32_bits(float x)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
#endif
}

VT_HD float vt_f32_from_bits(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, 4);
    return x;
#endif
}

/* fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN. */
VT_HD uint16_t vt_bf16_rne(float x)
{
    uint32_t u = vt_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* bf16 bits -> fp32 (exact). */
VT_HD float vt_bf16_widen(uint16_t h)
{
    return vt_f32_from_bits((uint32_t)h << 16);
}

#endif
