/* The CPU backend's SiLU, sigmoid and softmax-exponential kernels, built for the baseline
 * instruction set and, on x86-64, once more for AVX2 + FMA (eight lanes and fused
 * multiply-adds); the second is used where the CPU and the OS allow it.  The two give results
 * that differ in the last bits, each the same from run to run. */
#include <stdint.h>
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/gemm.h"

#define ACT_FN(name) base_##name
#define ACT_TARGET
#define ACT_FMA(a, b, c) ((a) * (b) + (c))
#include "backend/cpu_act.inc"
#undef ACT_FN
#undef ACT_TARGET
#undef ACT_FMA

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ACT_FN(name) avx2_##name
#define ACT_TARGET __attribute__((target("avx2,fma")))
#define ACT_FMA(a, b, c) __builtin_fmaf(a, b, c)
#include "backend/cpu_act.inc"
#undef ACT_FN
#undef ACT_TARGET
#undef ACT_FMA
#define HAVE_AVX2_KERNELS 1
#endif

const vt_cpu_act_kernels *vt_cpu_act_kernels_for_cpu(void)
{
#ifdef HAVE_AVX2_KERNELS
    if (vt_cpu_x86_level() >= 2) return &avx2_kernels;
#endif
    return &base_kernels;
}
