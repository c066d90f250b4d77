/* The CPU backend's element-wise kernels (vt_cpu_vec_kernels): SiLU, sigmoid and the softmax's
 * exponential (cpu_act.inc), batch norm's and the 2x2 max pool's loops (cpu_bn.inc), built for
 * the baseline instruction set and, on x86-64, once more for AVX2 (eight lanes; the activations
 * with fused multiply-adds too); the second is used where the CPU and the OS allow it.  The
 * activations of the two builds differ in the last bits, batch norm's and the pool's do not;
 * each is the same from run to run. */
#include <stdint.h>
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/gemm.h"

/* cpu_bn.inc's vectors: 4 lanes on the baseline, 8 under AVX2 */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* The table of one build: A, B its cpu_act.inc and cpu_bn.inc prefixes, NAME its name */
#define KERNEL_TABLE(A, B, NAME)                                                                 \
    {                                                                                            \
        A##sigmoid_fwd, A##silu_fwd, A##silu_grad, A##silu_bwd, A##exp_diff, B##shifted_sums,    \
            B##affine, B##grad_sums, B##grad_dx, B##grad_dx_inplace, B##maxpool2_plane, NAME     \
    }

#define ACT_FN(name) base_##name
#define ACT_TARGET
#define ACT_FMA(a, b, c) ((a) * (b) + (c))
#define BN_FN(name) base_bn_##name
#define BN_TARGET
#define BN_VF v4f
#define BN_VI v4i
#define BN_W 4
#include "backend/cpu_act.inc"
#include "backend/cpu_bn.inc"
static const vt_cpu_vec_kernels base_kernels = KERNEL_TABLE(base_, base_bn_, "baseline");

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ACT_FN(name) avx2_##name
#define ACT_TARGET __attribute__((target("avx2,fma")))
#define ACT_FMA(a, b, c) __builtin_fmaf(a, b, c)
#define BN_FN(name) avx2_bn_##name
#define BN_TARGET __attribute__((target("avx2"))) /* no FMA: the baseline's roundings */
#define BN_VF v8f
#define BN_VI v8i
#define BN_W 8
#include "backend/cpu_act.inc"
#include "backend/cpu_bn.inc"
static const vt_cpu_vec_kernels avx2_kernels = KERNEL_TABLE(avx2_, avx2_bn_, "AVX2");
#define HAVE_AVX2_KERNELS 1
#endif

const vt_cpu_vec_kernels *vt_cpu_vec_kernels_for_cpu(void)
{
#ifdef HAVE_AVX2_KERNELS
    if (vt_cpu_x86_level() >= 2) return &avx2_kernels;
#endif
    return &base_kernels;
}

const vt_cpu_vec_kernels *vt_cpu_vec_kernels_baseline(void) { return &base_kernels; }
