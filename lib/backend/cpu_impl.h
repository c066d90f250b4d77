/* Private to the CPU backend (cpu.c, cpu_conv.c): its state and the ops shared between files. */
#ifndef VT_CPU_IMPL_H
#define VT_CPU_IMPL_H

#include "backend/backend.h"
#include "core/threads.h"

/* Batch norm's channel reductions run in blocks of this many values (cpu.c, cpu_bn.inc) */
enum { VT_CPU_BN_BLOCK = 1024 };

/* Element-wise kernels (cpu_act.c), for one instruction set. */
typedef struct vt_cpu_vec_kernels {
    /* y = sigmoid(x); y may be x */
    void (*sigmoid_fwd)(size_t n, const float *x, float *y);
    /* y = silu(x * scale + shift); y may be x */
    void (*silu_fwd)(size_t n, const float *x, float scale, float shift, float *y);
    /* g = dy * silu'(x * scale + shift) */
    void (*silu_grad)(size_t n, const float *restrict x, float scale, float shift,
                      const float *restrict dy, float *restrict g);
    /* dx += dy * silu'(x) */
    void (*silu_bwd)(size_t n, const float *restrict x, const float *restrict dy,
                     float *restrict dx);
    /* y = e^(x - m) elementwise, x - m <= 0 (softmax) */
    void (*exp_diff)(size_t n, const float *restrict x, const float *restrict m,
                     float *restrict y);
    /* Batch norm (the same bits in every build).  Sums of x - k and of their squares over
     * x[0..m), 16 float lanes per block of VT_CPU_BN_BLOCK, the blocks in double */
    void (*shifted_sums)(const float *restrict x, size_t m, float k, double *s1, double *s2);
    /* y = x * scale + shift, through a ReLU where relu is set */
    void (*affine)(size_t m, const float *restrict x, float scale, float shift, int relu,
                   float *restrict y);
    /* *sdy += sum g, *sdyx += sum g (x - mean) over n <= VT_CPU_BN_BLOCK values (16 lanes),
     * g = dy, where relu is set 0 wherever x * scale + shift <= 0 */
    void (*grad_sums)(size_t n, const float *restrict x, const float *restrict dy, int relu,
                      float scale, float shift, float mean, double *sdy, double *sdyx);
    /* dx (+)= a g + b1 x + b0, g as grad_sums's; add = 0 assigns */
    void (*grad_dx)(size_t m, const float *restrict x, const float *restrict dy, int relu,
                    float scale, float shift, float a, float b1, float b0, int add,
                    float *restrict dx);
    /* dx = a dx + b1 x + b0 */
    void (*grad_dx_inplace)(size_t m, const float *restrict x, float a, float b1, float b0,
                            float *restrict dx);
    /* A plane of a 2x2 stride-2 unpadded max pool, h x w (w wide) -> ho x wo: y and idx (the
     * argmax's index in the plane; ties keep the first of the window's four in row order) */
    void (*maxpool2_plane)(const float *restrict x, int w, int ho, int wo, float *restrict y,
                           int32_t *restrict idx);
    const char *name; /* "AVX2" or "baseline" (vt_cpu_kernels' string says which runs) */
} vt_cpu_vec_kernels;

/* The widest kernels this CPU runs (AVX2 on x86-64 where allowed, else the baseline), and the
 * baseline ones (for tests).  Static tables; thread-safe. */
const vt_cpu_vec_kernels *vt_cpu_vec_kernels_for_cpu(void);
const vt_cpu_vec_kernels *vt_cpu_vec_kernels_baseline(void);

/* The backend's GEMM: vt_sgemm (fp32), or vt_gemm_bf16 with precision=bf16. */
typedef void (*vt_cpu_gemm_fn)(vt_pool *pool, int transa, int transb, int m, int n, int k,
                               float alpha, const float *a, int lda, const float *b, int ldb,
                               float beta, float *c, int ldc);

typedef struct cpu_backend {
    vt_backend base;
    vt_pool *pool;
    vt_cpu_gemm_fn gemm;  /* every product of the backend (convolutions, linear layers) */
    size_t conv_cap;      /* floats of one im2col tile (cpu_conv.c) */
    size_t conv_min_cols; /* ... but at least this many columns */
    int conv_avx512;      /* same-padding im2col/col2im in AVX-512 (the CPU has it; tests
                           * may clear it to run the portable loops) */
    int conv_winograd;    /* 3x3 stride-1 convolutions in Winograd with fp32 products
                           * (cpu_winograd.c), the largest output tile: 4 (the default), 2
                           * (VT_CPU_WINOGRAD=2), 0 (VT_CPU_WINOGRAD=0: im2col) */
    int conv_winograd_bf16; /* ... under bf16 products too (cpu_winograd.c's tile_gemm: bf16
                             * in 2x2 tiles, fp32 in 4x4); 0: im2col under bf16 */
    int conv_winograd_force; /* 2 or 4: that tile on every shape Winograd takes, whatever
                              * the rule says (vt_backend_cpu_force_winograd); 0: the rule */
    void *scratch;   /* small per-op scratch (det_loss partial sums); grows, never shrinks */
    size_t scratch_bytes;
    const vt_cpu_vec_kernels *k; /* vt_cpu_vec_kernels_for_cpu(), chosen at creation */
    vt_bn_sync_fn bn_sync;          /* synchronised BN's hook, NULL: off */
    void *bn_sync_ctx;
    vt_loss_sync_fn loss_sync;      /* softmax_dice's batch sums over processes, NULL: off */
    void *loss_sync_ctx;
} cpu_backend;

/* At least `bytes` of the backend's scratch (owned by the backend, valid until the next call);
 * NULL with the error set when memory runs out.  One op at a time uses it (one thread drives a
 * backend). */
void *vt_cpu_scratch(vt_backend *b, size_t bytes);

#define POOL(b) (((cpu_backend *)(b))->pool)
#define GEMM(b) (((const cpu_backend *)(b))->gemm)
#define KERNELS(b) (((const cpu_backend *)(b))->k)

/* Winograd F(2x2, 3x3) and F(4x4, 3x3) (cpu_winograd.c): the output tile this backend takes
 * for a shape (vt_backend_cpu_winograd_tile's, or 2x2 where the 4x4 one's weight-gradient
 * partials would not fit on this backend's threads; 0: none), whether this call takes it (a
 * tile, the backend's switch, fp32 products or conv_winograd_bf16, no kept columns), its
 * workspace, and the two passes (y assigned, dx added to, dw assigned, as
 * vt_cpu_conv_forward/backward; no bias).
 * The shapes' limits (vt_backend_cpu_winograd_tile), measured on Zen 3: */
enum {
    VT_WINO_MIN_CHANNELS = 16,
    VT_WINO_MIN_TILES = 16,       /* 2x2 tiles an image (8x8 maps); 49 before the weights were
                                   * packed once per call: 8, 128 -> 128 at 8x8 then ran 1.25x
                                   * faster in 2x2 tiles than in im2col */
    VT_WINO_MIN_BATCH_TILES = 64, /* tiles of the batch (2 threads): 2, 256 -> 256 at 20x20
                                   * (50 4x4 tiles) ran 1.4x faster in 2x2 tiles, at 10x10 (50
                                   * 2x2 tiles) 1.25x faster in im2col; from 64 the tile won */
    VT_WINO_BF16_MIN_CHANNELS = 64, /* under bf16 products (vt_backend_cpu_winograd_tile_bf16):
                                     * 64 and 256, 32 -> 64 at 14x14 ran 1.2x faster in im2col
                                     * than in 4x4 tiles (Zen 4); 64 -> 128 at 7x7 1.1x slower */
    VT_WINO_BF16_2X2_CHANNELS = 96, /* ... and 2x2 tiles (bf16 products) for 4x4 ones (fp32)
                                     * where both sides have this many channels and the map */
    VT_WINO_BF16_2X2_SIDE = 40,     /* this many pixels a side: 8, 96 -> 96 at 80x80 1.15x,
                                     * 8, 192 -> 96 at 40x40 1.33x faster (Zen 4); 64
                                     * channels or smaller maps not always (8, 64 -> 64 at
                                     * 40x40 0.93x, 16, 96 -> 96 at 32x32 0.91x, at 16x16 0.8x) */
    VT_WINO4_MIN_SIDE = 16,
    VT_WINO4_MIN_SMALL = 7,
    VT_WINO4_MIN_WORK = 6144,
    VT_WINO4_MIN_WORK_EVEN = 16384, /* ... on maps that 2x2 tiles cover exactly and 4x4 ones
                                     * do not (10x10, 14x14): 2x2 tiles were 1.07-1.25x faster
                                     * up to 12800 (8, 256 -> 256 at 10x10), 4x4 ones 1.3x from
                                     * 25088.  Where 4x4 tiles cover it too (8x8, 12x12), 4x4
                                     * ones won from 8192: 16, 128 -> 128 at 8x8 3.1 against 4.5
                                     * ms, 8, 128 -> 128 at 12x12 3.8 against 4.8 */
};
int vt_cpu_wino_tile(const vt_backend *b, const vt_conv_desc *d);
int vt_cpu_wino_applies(const vt_backend *b, const vt_conv_desc *d);
size_t vt_cpu_wino_workspace(vt_backend *b, const vt_conv_desc *d);
void vt_cpu_wino_forward(vt_backend *b, const vt_conv_desc *d, const float *x, const float *w,
                         float *y, void *ws);
void vt_cpu_wino_backward(vt_backend *b, const vt_conv_desc *d, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, void *ws);

/* Below this many values an op runs on the calling thread: waking workers costs more. */
enum { GRAIN = 16384 };
/* Pool grain for work units of `per` elements each (a BN channel, a plane, a row): units
 * enough for about GRAIN elements a task, so that small units (a 16 x 16 map at batch 16 is
 * 4,096 values a channel) still spread over the threads; at least 1. */
static inline size_t vt_cpu_grain(size_t per) { return per >= GRAIN ? 1 : (GRAIN + per - 1) / per; }

/* The ops (vt_cpu_<op>, defined in cpu.c, cpu_conv.c and cpu_detect.c; vt_cpu_copy serves as
 * upload and download too). */
#define VT_BACKEND_OP(ret, op, params) ret vt_cpu_##op params;
#include "backend/backend_ops.inc"

#endif
