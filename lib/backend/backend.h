/* The private backend interface: a table of functions that the CPU backend (lib/backend/cpu.c)
 * and the CUDA backend (cuda/) implement.  Layers and the trainer call only these; they never
 * know which backend runs them, and a backend never knows what a model is.
 *
 * CONVENTIONS
 * - Memory: every float* / int32_t* / void* argument is backend memory from ops->alloc (host
 *   memory for the CPU backend, device memory for CUDA), unless its name ends in _host.
 * - Activation layout is "CNHW": a tensor of C channels, N images, H rows, W columns stores
 *   element (c, n, y, x) at ((c*N + n)*H + y)*W + x.  One channel is one contiguous run of N*H*W
 *   values, so a convolution over the whole batch is one GEMM, batch-norm statistics are
 *   contiguous, and a channel concat is a plain copy.  "planes" below means C*N.
 * - Gradients: parameter gradients (dw, db, dgamma, dbeta) are ASSIGNED; gradients flowing to a
 *   layer's inputs (dx) are ACCUMULATED (+=), because an activation may feed several layers;
 *   the ops that take dx_add (BN, max pool, global average pool) assign dx when it is 0 (the
 *   executor passes 0 to the first writer of a gradient, which then needs no zero-fill).
 *   A NULL dx means the input needs no gradient (e.g. the image batch).
 * - Ops may run asynchronously (CUDA stream order); only download() and synchronize() wait.
 * - Every op returns VT_OK or a vt_status with the thread's error message set (vt_fail()).
 *   Out-of-memory on a device is VT_ERR_DEVICE_OOM with the requested size in the message.
 * - One backend object is used by one thread at a time (it owns its stream/handles/workspace).
 */
#ifndef VT_BACKEND_H
#define VT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define VT_BACKEND_API_VERSION 6

typedef struct vt_backend vt_backend;

typedef enum vt_act {
    VT_ACT_NONE = 0,
    VT_ACT_RELU = 1,
    VT_ACT_SILU = 2,
    VT_ACT_LEAKY = 3, /* slope alpha for x < 0 */
    VT_ACT_SIGMOID = 4
} vt_act;

typedef struct vt_conv_desc {
    int n;            /* batch */
    int cin, h, w;    /* input channels and size */
    int cout, ho, wo; /* output channels and size (ho = (h + 2*ph - kh)/sh + 1) */
    int kh, kw, sh, sw, ph, pw;
    int groups;       /* cin and cout divisible by groups; weights are [cout][cin/groups][kh][kw] */
    /* Set by the executor on both conv calls of a layer when `ws` is that layer's own buffer of
     * conv_columns() bytes, kept from forward to backward (see conv_columns). */
    int keep_columns;
} vt_conv_desc;

typedef struct vt_pool_desc {
    int planes;       /* C*N */
    int h, w, ho, wo;
    int k, s, p;      /* square window, stride, zero/-inf padding */
} vt_pool_desc;

/* The detection loss of one head (see lib/backend/det_loss_math.h for the head layout, the
 * target assignment and the loss).  The head's anchors are the cells of n_levels grids, level 0's
 * cells row-major first, then level 1's, ... (A = sum of h*w anchors per image). */
#define VT_DET_MAX_LEVELS 4
#define VT_DET_TOPK_MAX 16
typedef struct vt_det_level {
    int h, w;     /* grid rows and columns */
    float stride; /* input pixels per cell */
} vt_det_level;

typedef struct vt_det_loss_desc {
    int n, nc;         /* batch, classes */
    int n_levels;      /* 1..VT_DET_MAX_LEVELS */
    vt_det_level level[VT_DET_MAX_LEVELS];
    int max_gt;        /* ground-truth records per image (padding records have class < 0) */
    int topk;          /* anchors per ground truth, 1..VT_DET_TOPK_MAX */
    float alpha, beta; /* alignment metric: class score^alpha * IoU^beta */
    float box_gain, cls_gain;
    float grad_scale;  /* multiplies every gradient */
    int reuse_targets; /* nonzero: assign/score hold the targets of an earlier call; keep them */
} vt_det_loss_desc;

/* The instance-mask loss (backend/mask_loss_math.h has the formula). */
typedef struct vt_mask_loss_desc {
    int n, k;          /* batch, prototypes */
    int anchors;       /* anchors per image (the detection head's, in its order) */
    int mh, mw;        /* the mask grid */
    float mstride;     /* input pixels per mask pixel */
    int max_gt;        /* ground-truth records per image, as det_loss's */
    float gain;
} vt_mask_loss_desc;

typedef struct vt_backend_ops {
    int api_version; /* VT_BACKEND_API_VERSION */
    const char *name; /* "cpu", "cuda" */

    /* The ops, documented one by one in backend_ops.inc. */
#define VT_BACKEND_OP(ret, op, params) ret(*op) params;
#define VT_BACKEND_FIELD(type, member) type member;
#include "backend/backend_ops.inc"
} vt_backend_ops;

struct vt_backend {
    const vt_backend_ops *ops;
};

/* The CPU reference backend.  threads: 0 = the number of online processors. */
vt_status vt_backend_cpu_create(vt_backend **out, int threads);
/* on: every product of the backend (convolutions, linear layers) with bf16 operands and fp32
 * accumulation (vt_gemm_bf16; the caller checks vt_cpu_has_bf16); off: fp32 (vt_sgemm). */
void vt_backend_cpu_set_bf16(vt_backend *b, int on);
/* Floats of one im2col tile (default 256K, 1 MiB: stays in L3 while BLIS packs it; at least
 * 256 columns).  Setting it also drops the 256-column minimum: tests use it to make tiles as
 * small as one output row of one image. */
void vt_backend_cpu_set_conv_cap(vt_backend *b, size_t floats);
/* Synchronised batch norm (several processes training one model): the training BN ops
 * (bn_forward_train, bn_act_forward_train, bn_act_pool_forward_train and their backward) call
 * fn(ctx, q, channels, backward) on the op's calling thread between a pass over this process's
 * values and the pass that uses them; q holds per channel 3 sums, to be replaced by their sums
 * over every process: forward the values, the sum of x minus the channel's running mean (the
 * same on every process) and of its squares; backward the values, the sum of the gradient
 * reaching the BN (after a fused activation's) and of it times x minus the batch mean.  The
 * ops then normalise with the statistics of all the processes' values and differentiate
 * through them; dgamma and dbeta stay this process's own.  An error from fn fails the op.
 * fn NULL: off (the default). */
typedef vt_status (*vt_bn_sync_fn)(void *ctx, double *q, int channels, int backward);
void vt_backend_cpu_set_bn_sync(vt_backend *b, vt_bn_sync_fn fn, void *ctx);
/* A loss over the whole batch that is not a sum over its images (softmax_dice's Dice:
 * ratios of per-class sums), over several processes: the op calls fn(ctx, q, n, &scale) with
 * this process's n sums, to be replaced by their sums over every process, and scale the
 * factor by which this process's share of the loss's gradient is weighted (its gradient is
 * then the whole batch's, in the units of this process's share).  NULL: off (the default). */
typedef vt_status (*vt_loss_sync_fn)(void *ctx, double *q, int n, double *scale);
void vt_backend_cpu_set_loss_sync(vt_backend *b, vt_loss_sync_fn fn, void *ctx);
/* on (the default where the CPU has AVX-512): same-padding im2col/col2im in masked AVX-512
 * vectors; off: the portable loops.  Returns whether the vectors run (0 on a CPU without). */
int vt_backend_cpu_set_conv_simd(vt_backend *b, int on);
/* on (4, the default, unless VT_CPU_WINOGRAD says otherwise at creation): the convolutions of
 * vt_backend_cpu_winograd_tile go through Winograd in its tile when the products are fp32
 * or vt_backend_cpu_set_winograd_bf16 is on (and their weight-gradient partials, 4 x (tile + 2)^2 bytes x cin x cout a thread, fit
 * 64 MiB; else the 2x2 tile, else im2col); 2: 2x2 tiles only; 0: im2col + GEMM.  Set it
 * before planning a network on the backend (it decides which layers keep their columns).
 * Returns the previous setting (0, 2 or 4). */
int vt_backend_cpu_set_winograd(vt_backend *b, int on);
/* The Winograd output tile of the convolutions the CPU backend runs in Winograd when it is on
 * and the products are fp32, 0 for the others: 3x3, stride 1, padding 1, one group, 16 or
 * more channels in and out; 4 (F(4x4, 3x3)) where both sides are 16 or more and its 4x4 tiles
 * cover at most 15 % more than the map, or where both sides are 7 or more, the tiles cover at
 * most 55 % more and the batch's work, n x h x w / 16 x min(cin, cout), is 6144 or more
 * (7x7 maps of 128 channels from batch 16), 16384 where both sides are even but not both
 * multiples of 4 (2x2 tiles cover the map exactly, 4x4 ones do not); else 2 (F(2x2, 3x3))
 * where an image has 16 or more 2x2 output tiles (maps of 8x8 and more); else 0.  Either
 * tile only where the batch has 64 or more of it (20x20 maps: 4x4 from 3 images; 8x8 maps:
 * from 16).  Where each measured faster (bench/README.md). */
int vt_backend_cpu_winograd_tile(const vt_conv_desc *d);
/* The bytes of workspace a CPU backend with `threads` threads gives convolution d for its
 * Winograd tiles up to `largest` (4: either tile, whichever a call takes; 0 where it takes
 * none); its im2col scratch aside.  The memory model adds it (nn/train_memory.c). */
size_t vt_backend_cpu_winograd_workspace(const vt_conv_desc *d, int threads, int largest);
/* The shares of the batch (whole images, each with its own partial weight gradient) that the
 * backward of convolution d in Winograd tiles of `tile` (2 or 4) cuts on a CPU backend of
 * `threads` threads: two a thread, or one where the partials would pass 4M floats or a share
 * would get fewer than 256 tiles; never more than the images.  0 for another tile. */
int vt_backend_cpu_winograd_shares(const vt_conv_desc *d, int threads, int tile);
/* A new CPU backend's Winograd setting: 0 where VT_CPU_WINOGRAD is 0, off, no or false, 2 where
 * it is 2 or 2x2, else 4. */
int vt_backend_cpu_winograd_default(void);
/* on: with bf16 products (vt_backend_cpu_set_bf16), the convolutions of
 * vt_backend_cpu_winograd_tile_bf16 take Winograd, in its tile: 2x2 tiles with bf16 products
 * (the transformed tiles and filters rounded to bf16: about 1.7x im2col's bf16 rounding
 * error), 4x4 tiles with fp32 products (in bf16 their error was 10x im2col's); off: they run
 * im2col with bf16 products.  Returns the previous setting.  A new backend's:
 * vt_backend_cpu_winograd_bf16_default(): 1 where VT_CPU_WINOGRAD_BF16 is 1, on, yes or true,
 * 0 where it is 0, off, no or false, else 1 where the bf16 products run on AVX512_BF16
 * (vt_gemm_bf16_kernel: measured faster on AMD Zen 4) and 0 with AMX (whose products are
 * 3-6x fp32's; not measured against Winograd) or the portable kernel. */
int vt_backend_cpu_set_winograd_bf16(vt_backend *b, int on);
int vt_backend_cpu_winograd_bf16_default(void);
/* vt_backend_cpu_winograd_tile's tile under bf16 products, but 0 (im2col) where cin or cout is
 * below 64 and 4x4 tiles cover more than 15 % beyond the map (14x14: im2col's bf16 products
 * won there), and 2 for 4 where cin and cout are 96 or more and both sides 40 or more (2x2
 * tiles' bf16 products won there). */
int vt_backend_cpu_winograd_tile_bf16(const vt_conv_desc *d);
/* For measuring the rule of vt_backend_cpu_winograd_tile (bench/winograd_rule.sh) and testing:
 * 2 or 4 runs every convolution that Winograd can take (3x3, stride 1, padding 1, one group,
 * 16 or more channels in and out) in that tile whatever its map and batch, within
 * vt_backend_cpu_set_winograd's largest tile and its memory limit; 0 (a new backend's): the
 * rule.  Returns the previous setting. */
int vt_backend_cpu_force_winograd(vt_backend *b, int tile);

/* The CUDA backend: vt_backend_cuda_create in lib/backend/cuda_device.h. */

static inline void vt_backend_destroy(vt_backend *b)
{
    if (b) b->ops->destroy(b);
}

/* The name of the first op every backend must offer (not VT_BACKEND_OPTIONAL_OP in
 * backend_ops.inc) that `ops` leaves NULL; NULL when the table is complete. */
static inline const char *vt_backend_missing_op(const vt_backend_ops *ops)
{
#define VT_BACKEND_OP(ret, op, params)                                                           \
    if (!ops->op) return #op;
#define VT_BACKEND_OPTIONAL_OP(ret, op, params)
#include "backend/backend_ops.inc"
    return NULL;
}

/* The activations the fused bn_act_* ops take (ReLU, SiLU): VT_OK, else the error set for op. */
static inline vt_status vt_bn_act_check(vt_act act, const char *op)
{
    if (act == VT_ACT_RELU || act == VT_ACT_SILU) return VT_OK;
    return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: activation %d is not fused (ReLU or SiLU)", op,
                   (int)act);
}

/* The pitches of copy2d and axpy2d (floats) each hold a row of cols: VT_OK, else the error set
 * for op. */
static inline vt_status vt_pitch_check(const char *op, size_t cols, size_t pitch_a, size_t pitch_b)
{
    if (pitch_a >= cols && pitch_b >= cols) return VT_OK;
    return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: a pitch (%zu, %zu) is less than a row (%zu)", op,
                   pitch_a, pitch_b, cols);
}

#endif
