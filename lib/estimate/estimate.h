/* Private parts of the estimator: the catalog's storage and the cost model's building blocks,
 * shared by catalog.c, estimate.c and the tests. */
#ifndef VT_ESTIMATE_H
#define VT_ESTIMATE_H

#include <stdint.h>

#include "core/core.h"
#include "nn/graph.h"

/* One row of the built-in table (catalog_data.h); -1 = not listed. */
typedef struct vt_gpu_spec {
    const char *name, *arch;
    double cc, memory_gb, bandwidth_gbs, fp32_tflops, tf32_tflops, bf16_tflops, tdp_w,
        price_usd_h;
    const char *tier;
} vt_gpu_spec;

#define VT_GPU_NAME_MAX 64

/* A catalog entry; fixed-size strings so entries can be copied and replaced freely.  The
 * numeric fields are indexed by vt_gpu_field (slot 0 unused); < 0 means not listed. */
typedef struct vt_gpu {
    char name[VT_GPU_NAME_MAX];
    char arch[32];
    char tier[16];
    double v[9];
} vt_gpu;

struct vt_catalog {
    char err[VT_ERRMSG_MAX];
    vt_gpu *gpus;
    int n, cap;
};

/* Fill a zeroed catalog with the built-in table. */
vt_status vt_catalog_init_builtin(vt_catalog *c);
void vt_catalog_clear(vt_catalog *c);
/* Names compare equal ignoring case, spaces, '-' and '_' ("h100-sxm" == "H100 SXM"). */
int vt_gpu_name_eq(const char *a, const char *b);
/* Index of a name or -1, without touching any error state. */
int vt_catalog_lookup(const vt_catalog *c, const char *name);
/* The entry a user's name means: the exact name, else without a vendor word ("NVIDIA", "Tesla",
 * "GeForce", "Quadro"), else the one name it starts ("V100" -> "V100 SXM2"), of several their
 * one SXM form ("H200" -> "H200 SXM"), else the same with "RTX " in front ("A6000").  -1 for
 * no match, -2 for an ambiguous one ("RTX"); no error state is touched.  Catalog merges
 * (vt_catalog_load_csv) match exactly, with vt_catalog_lookup. */
int vt_catalog_resolve(const vt_catalog *c, const char *name);
/* Entry i or NULL. */
const vt_gpu *vt_catalog_entry(const vt_catalog *c, int i);

/* ---- the cost model (see the formula at the top of estimate.c) ---- */

/* The values are vt_est_precision's (the public header). */
typedef enum vt_prec { VT_PREC_FP32 = 0, VT_PREC_TF32 = 1, VT_PREC_BF16 = 2, VT_PREC_FP16 = 3 } vt_prec;

/* Effective speeds of one device. */
typedef struct vt_devmodel {
    double rate;      /* FLOP/s reached by large GEMM-shaped work (convolutions, linear)      */
    double bw;        /* bytes/s reached by streaming work (BN, activations, pools, im2col)  */
    double s0;        /* GEMM size (min of M, K, N) at which GEMM work runs at half `rate`    */
    double layer_s;   /* fixed seconds per layer per step (launches, threading, dispatch)    */
    double step_s;    /* fixed seconds per step (loss, optimiser dispatch, synchronisation)  */
    double h2d_bw;    /* host-to-device bytes/s for the input batch; 0 on the CPU            */
    int act_bytes;    /* bytes per activation element (4, or 2 with bf16)                    */
    int fuse_bn_act;  /* 1: a ReLU or SiLU that is its batch norm's only consumer runs inside
                       * it, free (both backends' fused op); 0: it is a layer of its own     */
    int gemm_size_n;  /* 1: the GEMM size d is min(M, K, N) (GPU); 0: min(M, K) (CPU)         */
    double col_passes; /* passes over a convolution's im2col columns in a training step, each
                       * at `bw` (the CUDA backend writes and reads them three times each:
                       * VT_GPU_COL_PASSES); 0 where they stay in cache (the CPU's tiles) */
    double row_s;     /* seconds per im2col row of a training step (the CPU's im2col and col2im
                       * copy a row of a tap's input at a time, and narrow feature maps pay it
                       * per few elements: vt_est_conv_rows); 0 on a GPU, whose kernels go by
                       * element */
    double wino_s;    /* seconds per byte of a Winograd convolution's transforms (the CPU
                       * backend's, fp32: vt_est_wino_bytes); 0: no Winograd (GPU, bf16,
                       * VT_CPU_WINOGRAD=0) */
    double exp_s;     /* seconds per SiLU or sigmoid value beyond its bytes (its exponential
                       * and division: the CPU's vector kernels run them slower than the
                       * memory brings the values), a SiLU's 2 a value in a training step
                       * (forward, backward), 1 forward only, a sigmoid's 1; 0 on a GPU */
    double strided_col_passes; /* passes at `bw` over a strided (s > 1) convolution's im2col
                       * columns in a training step, 3/10 of them forward only: the CPU's
                       * gather and scatter-add of every other pixel, which the rate probes
                       * (stride 1, whose rows are copies) do not see
                       * (VT_CPU_STRIDED_COL_PASSES); 0 on a GPU */
    int wino_bf16;    /* 1: the CPU's bf16 products (vt_est_conv_winograd's bf16 tiles, where
                       * vt_backend_cpu_winograd_bf16_default: their products taken at `rate`) */
} vt_devmodel;

/* The CUDA backend's passes over im2col columns per training step: im2col, GEMM read (forward);
 * im2col, GEMM read for dW, GEMM write of dcol, col2im read (backward).  Forward only: 2. */
#define VT_GPU_COL_PASSES 6.0
/* The CPU's strided convolutions: measured on Zen 3 (det-n 320 px batch 8 and seg-n 128 px
 * batch 16, layer_profile: their stride-2 layers 1.2-1.35x the time predicted without the
 * term, a shortfall of 0.53-0.58 ns per column element at a calibrated BW of 71 GB/s, i.e.
 * about 10 passes of 4 bytes) */
#define VT_CPU_STRIDED_COL_PASSES 10.0

/* 1 for the GEMM-shaped layers (conv, linear). */
int vt_est_is_gemm_op(vt_op op);
/* FLOPs of node i per image: forward, plus backward when train (without the input gradient of
 * a layer reading the image batch, which the executor skips). */
double vt_est_layer_flops(const vt_graph *g, int i, const vt_layer_cost *lc, int train);
/* GEMM shape of conv or linear node i: M, K (per group) and the N of one image. */
void vt_est_gemm_dims(const vt_graph *g, int i, const vt_layer_cost *lc, double *m, double *k,
                      double *n1, int *groups);
/* im2col rows per image of node i (groups x K x output height of a convolution that builds
 * columns: not a 1x1, stride 1, unpadded one); 0 for other nodes. */
double vt_est_conv_rows(const vt_graph *g, int i, const vt_layer_cost *lc);
/* The Winograd output tile (2 or 4) of node i where the CPU backend runs it in Winograd at
 * this batch (its maps taken square), with fp32 products or bf16 ones (bf16), else 0. */
int vt_est_conv_winograd(const vt_graph *g, int i, const vt_layer_cost *lc, int batch, int bf16);
/* The Winograd tile of a convolution in a new CPU backend (its shape's, within
 * VT_CPU_WINOGRAD's setting; with bf16 products vt_backend_cpu_winograd_tile_bf16's, where
 * vt_backend_cpu_winograd_bf16_default), 0 for none. */
int vt_est_wino_tile(const vt_conv_desc *c, int bf16);
/* The products of Winograd F(tile x tile, 3x3) on hw x hw maps over those of the direct
 * convolution: (tile + 2)^2 x tiles / (9 hw^2). */
double vt_est_wino_gemm_share(int tile, int hw);
/* Bytes the Winograd transforms of a cin -> cout convolution on hw x hw maps move in a step of
 * `batch` images (train: forward and backward, else forward), on this host's threads. */
double vt_est_wino_bytes(int tile, int cin, int cout, int hw, int batch, int train);
/* GEMM size d of a conv or linear node at `batch` on device d (see the cost model). */
double vt_est_gemm_size(const vt_graph *g, int i, const vt_layer_cost *lc, int batch,
                        const vt_devmodel *d);
/* Node i is a ReLU that the executor runs inside the batch norm before it. */
int vt_est_act_fused(const vt_graph *g, int i);
/* Bytes one layer moves per image, forward + backward (activations, gradients, im2col). */
double vt_est_layer_bytes(const vt_layer_cost *lc, int act_bytes);
/* Seconds of node `i` of g (whose costs are lc) for `batch` images: a roofline max of compute
 * and memory time, plus the im2col pass and the per-layer overhead. */
double vt_est_layer_seconds(const vt_graph *g, int i, const vt_layer_cost *lc, int batch,
                            const vt_devmodel *d, int train);
/* Seconds of the loss over `values` output values (all the batch's) in a training step (train=1)
 * or a forward pass (train=0): an exponential each and a few passes over them. */
double vt_est_loss_seconds(double values, const vt_devmodel *d, int train);
/* Seconds of one training step (train=1) or one forward pass (train=0) of the whole graph for
 * `batch` images of h x w, without the loader bound.  -1 with the error set on failure. */
double vt_est_graph_seconds(const vt_graph *g, int h, int w, int batch, const vt_devmodel *d,
                            int train, int optimizer_states);


#endif
