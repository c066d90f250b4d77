/* The training cost and time estimator.
 *
 * THE COST MODEL (what the README should say; every constant is named here)
 *
 * Per-layer costs come from the model's own layer list (vt_graph_costs): per image, forward and
 * backward FLOPs F, input/output/saved activation elements I, O, S, and im2col scratch W.
 * A device is described by five effective speeds (vt_devmodel):
 *   R   FLOP/s of GEMM-shaped work,  s0 the GEMM size at which that work runs at R/2,
 *   BW  bytes/s of streaming work,   L  seconds per layer per step,  C  seconds per step.
 * For a step of b images per device:
 *   conv, linear:  t = max(b*F / (R*phi), b*A*a/BW) + 3*4*params/BW + L
 *                  phi = d/(d + s0),  d = min(M, K, N) of the layer's GEMM on a GPU (the
 *                  output size is its parallelism), min(M, K) on the CPU (BLIS: N only
 *                  repeats the micro-kernel; measured rates follow cout and K)
 *                  (M = cout/groups, K = cin/groups*k*k, N = b*ho*wo)
 *                  + b*cols*4*P_s/BW (CPU, a strided conv, cols its im2col columns' elements
 *                  per image): its im2col gathers and its col2im scatter-adds every other
 *                  pixel, P_s = 10 passes in a training step, 3 forward only or where it
 *                  reads the image batch (no col2im; VT_CPU_STRIDED_COL_PASSES; the
 *                  probes' stride-1 rows are copies)
 *                  + b*K*ho*row_s (CPU): its im2col and col2im copy one row of one tap at a
 *                  time, which costs per row as well as per element (half in forward only;
 *                  none for a 1x1 stride-1 unpadded conv, which builds no columns).  Without
 *                  it, a model calibrated on cls-n at 32 px (4-pixel rows in its last stage)
 *                  over-predicted models with wider maps by 10-36 %.
 *                  A conv the CPU backend runs in Winograd F(m x m, 3x3), m = 2 or 4 (fp32,
 *                  and bf16 where the backend takes it with bf16 products: its bf16 rule,
 *                  the 4x4 tiles' fp32 products taken at the bf16 R too: the probe's
 *                  wino_s carries the difference; vt_est_conv_winograd):
 *                  t = max(g * b*F / (R*phi_w), b*A*a/BW)
 *                  + X*wino_s + 3*4*params/BW + L, g = K*tiles/(9*h*w) the share of the
 *                  direct GEMM's products left (K = (m+2)^2: 4/9 for 2x2, 1/4 for 4x4, more
 *                  where tiles overhang the map), phi_w with d = cout (the height of its
 *                  forward GEMMs; min(cin, cout) put cnn-small's 32 -> 64 layer at 1.4x its
 *                  time) or the tiles of a backward share, b*tiles/S, where fewer (the
 *                  depth of its dU products: small maps at small batches), X the
 *                  transforms' bytes (vt_est_wino_bytes:
 *                  b*K*tiles*(6 cin + 4 cout) floats and the weights' K*cin*cout*(S + 2),
 *                  S backward shares as the backend cuts them: min(b, 2 x threads), or
 *                  min(b, threads) where they would hold fewer than 256 tiles each or their
 *                  partials pass 4M floats), no rows; wino_s calibrated by a
 *                  fourth probe (128->128 at 16x16, a 4x4 one), 4/BW uncalibrated.
 *                  (the per-element part of im2col / col2im is inside R*phi: the probes time
 *                  whole convolutions, and its share shrinks as the GEMM grows, as phi does)
 *   other layers:  t = max(b*F / R, b*A*a/BW) + L
 *                  (a ReLU or SiLU that is its batch norm's only consumer moves nothing of
 *                  its own: both backends run the two as one op)
 *                  + for a SiLU, fused or not, b*O*E*exp_s, E = 2 a training step (forward,
 *                  backward), 1 forward only (a sigmoid: 1, its backward reads its output):
 *                  the CPU's vector
 *                  exponentials and divisions run slower than memory (BN + SiLU measured
 *                  2.5-4x BN + ReLU's time; without the term det-n's BN layers were predicted
 *                  at 0.25-0.4x their time); exp_s calibrated by a probe of BN + SiLU beside
 *                  BN + ReLU's, 1.5 ns / threads uncalibrated (Zen 3), 0 on a GPU
 *   A (activation traffic, elements) = forward I + O + S (+2I for BN's statistics passes)
 *                  + backward 2I + 2O + S (dx read-modify-write, dy read and zeroing)
 *                  (+I + O for BN, +I for activations);  a = 4 bytes (2 with bf16)
 *   loss:          t = b*O_out*(E*exp_s + P*4/BW), O_out the last layer's output elements
 *                  per image, E = 5 exponential-equivalents and P = 7 passes a training step,
 *                  3 and 3 forward only (vt_est_loss_seconds: a per-pixel segmentation loss,
 *                  10 classes at 128 px batch 16, is 5-8 % of seg-n's CPU step; a
 *                  classifier's or detector's output is small beside its layers)
 *   step_device = sum of layers + loss + params*4*(3 + 2*states)/BW (optimiser; SGD 1 state,
 *                 AdamW 2)
 *                 + C + b*channels*imgsz^2*4/H2D (GPU only, H2D = 12 GB/s)
 *                 + for n > 1 devices (gpus=N): a ring all-reduce of the gradients,
 *                   calls*2*(n-1)*hop + 2*(n-1)/n * 4*params / link, with calls = 4 a step
 *                   (two agreements, two gradient ranges; + one per 2^28 floats), link and
 *                   hop by interconnect (gpu_links below: NVLink 120-720 GB/s, PCIe 3/4/5
 *                   12/25/50 GB/s, 1.5 / 4 us a hop; link_gbs= replaces the bandwidth)
 *                 On the CPU gpus=N means N MPI ranks on this host: each runs b = B/N images
 *                 at R/N and BW/N (they share the cores and memory bandwidth) and they
 *                 exchange through shared memory at link = BW/2, 0.5 us a hop; each has
 *                 1/N of the host's memory, and the host's price is counted once.
 * Forward only (validation, batch 2b): forward F and traffic only, 0.4*L per layer, no optimiser.
 * Loading: one worker needs l = (0.2 ms + 4 ns * imgsz^2) * (1 + mosaic) per image (the
 *   loader decodes each image once and renders mosaic + affine + HSV in one pass, about as
 *   long again: measured 3.4 ms at 640 on this project's CPU, bench/loader_throughput) (or the
 *   user's load_ms), so a step of B images needs B*l/workers.  On a GPU loading overlaps the
 *   device: step = max(step_device, loader); on the CPU both share the cores: step = sum.
 * Epoch = ceil(train/B) steps + ceil(val/2B) validation steps + 12*params/200 MB/s (checkpoint).
 * Total = epochs * epoch + start-up (30 s on a GPU, 1 s on the CPU, or the user's).
 * Cost  = total hours * price * GPUs.
 * Memory per device = 4*params*(2 + states) + 4*buffers + b*(A + sum(S))*a, A the arena of
 *   the activations and their gradients, which the executor places by liveness over the step
 *   (vt_exec_plan)
 *   + 4*min(b*Wmax, max(Wmax, 2M floats)) (chunked im2col) + the input batch + 0.5 GiB context
 *   on a GPU (on the CPU where Winograd runs: the workspace of its largest convolution,
 *   vt_train_winograd_bytes: (tile+2)^2*cin*cout*(1 + S) floats of U and partial dU and 1M a
 *   thread of transformed tiles), times 1.05 for fragmentation.  It fits below memory_fraction (0.9) of the device;
 *   the largest batch solves the same linear equation (capped by a batch verified on the device
 *   when calibration ran there).
 *
 * Uncalibrated GPU (catalog name G, precision p):  R = eff[p] * peak_p(G) with eff = 0.45 fp32,
 *   0.22 tf32, 0.18 bf16; BW = 0.55 * bandwidth(G); s0 = 128; L = 20 us; C = 200 us.  (cuBLAS
 *   SGEMM on an H200 reached 76-84% of the listed peaks on 8192^3, but convolution GEMMs are
 *   smaller and training mixes in streaming layers: ResNet-50 reaches ~19% of the bf16 peak on
 *   an A100 and ResNet-18 in PyTorch ~6-10% on an H200.)  p is the precision the GPU runs
 *   (gpu_precision: TF32 and bf16 from Ampere on, else fp32; bf16 -> fp16 on Volta/Turing).
 * Uncalibrated CPU: R = 30 GFLOP/s per core, BW = 4 GB/s per core (max 20), s0 = 24, L = 15 us,
 *   C = 50 us, row_s = 0.  These are guesses; calibrate.  precision=bf16 (or amp) runs bf16
 *   where the CPU has AVX512-BF16 (vt_cpu_has_bf16), else fp32, as the CPU's tf32 is fp32
 *   (VT_EST_PRECISION says which).  bf16 assumes R as fp32 (CPU_BF16_RATE = 1.0x) and the
 *   same BW and a = 4: the CPU backend rounds only GEMM operands to bf16, and measured steps
 *   were 0.7x fp32 on Intel Xeons and 1.3-1.5x on AMD Zen 4 (bench/README.md).  A CPU
 *   calibrated at one precision estimates the other with R scaled by that ratio (basis
 *   extrapolated).
 * Calibration (vt_estimator_calibrate) measures on the local device, through the backend:
 *   BN + ReLU forward and backward on 2M values (17 passes in the formula above, 10 when the
 *   backend fuses them: gives BW);
 *   3x3 convolutions forward and backward, 32->32 channels at 32x32 (d = 32) and 256->256
 *   at 8x8 (d = 256), batch 16 (x16 on a GPU), timed for 8 % of the calibration budget (the
 *   large one twice that), and on the CPU 64->64 at 4x4 (4-pixel rows): t = F/R + (F/d)*s0/R
 *   + rows*row_s is linear in 1/R, s0/R and row_s, so the CPU's three probes give all three
 *   (a GPU's two, after taking out their column passes, R and s0).  (Until session 7 the CPU
 *   refitted R and s0 to the calibration model's own layers; a model's layers span too
 *   narrow a range of sizes, and the fit over-predicted models with wider layers by up to
 *   36 %, the probes alone within 10 %.)  Then
 *   the real model's step time t_i (lower quartile of a few steps, robust to a busy machine;
 *   on the CPU the batch sizes take turns, so a change of the machine's speed falls on all
 *   of them) at 2-3 batch sizes b_i: with V_i the
 *   formula's time at b_i without L and C, it fits t_i = k*V_i + c by least squares, and sets
 *   R /= k, BW /= k, row_s *= k, L = c / layers, C = 0.  (A negative c is noise: refit through zero.)
 * Extrapolation from a GPU calibrated as catalog entry G0 to G:  R_G = R_G0 * eff[p]/eff[p0]
 *   * peak_p(G)/peak_p0(G0), BW_G = BW_G0 * bandwidth(G)/bandwidth(G0); s0, L, C, H2D kept.
 *   A CPU calibration says nothing about GPUs, so they keep the uncalibrated model.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "backend/backend.h"
#include "backend/gemm.h"
#include "core/buffer.h"
#include "estimate/estimator_impl.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "task/task.h"

/* THE UNCERTAINTY RANGE: total time (and cost) x [lo, hi] by what an estimate rests on.  The
 * figures are the cost model's measured errors (README, "Cost and time estimator"):
 *   calibrated on this CPU: predictions of other models, sizes and batches within ~10-15 %
 *     of measured (bench/estimate_accuracy checks that 15 % target): +-15 %;
 *   calibrated on this GPU: the last measured H200 calibration predicted within 15-16 %:
 *     +-20 %;
 *   extrapolated from a calibrated GPU to another: the measured part carries over, the
 *     catalog peaks' ratio does not exactly (an H200 reached 76-84 % of its listed SGEMM
 *     peaks, other parts are not measured): -35 %/+50 %;
 *   uncalibrated: catalog peaks times efficiency guesses (or the CPU's built-in guesses),
 *     which real training reaches anywhere from ~6 to ~19 % of a peak: -50 %/+100 %. */
static const struct { double lo, hi; } est_range[] = {
    [VT_EST_BASIS_CALIBRATED] = {0.80, 1.20},   /* a GPU; the CPU: cpu_calibrated_range */
    [VT_EST_BASIS_EXTRAPOLATED] = {0.65, 1.50},
    [VT_EST_BASIS_UNCALIBRATED] = {0.50, 2.00},
};
static const double cpu_calibrated_range[2] = {0.85, 1.15};

static const double gpu_eff[4] = {0.45, 0.22, 0.18, 0.18}; /* by vt_prec; fp16 as bf16 */
const char *const vt_est_prec_names[] = {"fp32", "tf32", "bf16", "fp16", "amp", NULL};
/* The settings' keys, types, ranges and defaults: the VT_OPT_EST_* lines of lib/core/options.c. */

/* ---- the cost model ------------------------------------------------------------------------ */

int vt_est_is_gemm_op(vt_op op)
{
    return op == VT_OP_CONV || op == VT_OP_LINEAR;
}

/* Activation elements a layer reads and writes per image (see "A" above). */
static double act_elems(const vt_layer_cost *lc, int train)
{
    double I = (double)lc->in_elems, O = (double)lc->out_elems, S = (double)lc->saved_elems;
    if (lc->op == VT_OP_INPUT) return 0;
    double a = I + O + S + (lc->op == VT_OP_BN ? 2 * I : 0);
    if (train) {
        a += 2 * I + 2 * O + S;
        if (lc->op == VT_OP_BN) a += I + O;
        if (lc->op == VT_OP_ACT) a += I;
    }
    return a;
}

double vt_est_layer_bytes(const vt_layer_cost *lc, int act_bytes)
{
    return act_elems(lc, 1) * act_bytes;
}

/* GEMM shape of a conv or linear node: M, K and the N of one image. */
void vt_est_gemm_dims(const vt_graph *g, int i, const vt_layer_cost *lc, double *m, double *k,
                      double *n1, int *groups)
{
    const vt_node *nd = &g->nodes[i];
    int cout = nd->cout > 0 ? nd->cout : 1;
    *groups = nd->op == VT_OP_CONV && nd->groups > 0 ? nd->groups : 1;
    if (nd->op == VT_OP_CONV) {
        int cin = g->nodes[nd->in[0]].out.c;
        *m = (double)cout / *groups;
        *k = (double)cin / *groups * nd->k * nd->k;
        *n1 = (double)lc->out_elems / cout;
    } else {
        *m = cout;
        *k = (double)lc->in_elems;
        *n1 = 1;
    }
}

/* Node i is a ReLU or SiLU that the executor runs inside the batch norm before it
 * (lib/nn/exec.c: the BN's only consumer). */
int vt_est_act_fused(const vt_graph *g, int i)
{
    const vt_node *nd = &g->nodes[i];
    if (nd->op != VT_OP_ACT || (nd->act != VT_ACT_RELU && nd->act != VT_ACT_SILU) ||
        nd->in[0] <= 0 || g->nodes[nd->in[0]].op != VT_OP_BN)
        return 0;
    int uses = 0;
    for (int j = 1; j < g->n_nodes; j++)
        for (int k = 0; k < g->nodes[j].n_in; k++) uses += g->nodes[j].in[k] == nd->in[0];
    return uses == 1;
}

/* Node i reads the image batch (node 0): its backward computes no input gradient. */
static int reads_images(const vt_graph *g, int i) { return g->nodes[i].in[0] == 0; }

double vt_est_layer_flops(const vt_graph *g, int i, const vt_layer_cost *lc, int train)
{
    double F = lc->flops_fwd;
    if (!train) return F;
    /* a conv or linear reading the image batch computes no input gradient (a third of its
     * training FLOPs: forward, dW, dX) */
    if (vt_est_is_gemm_op(lc->op) && reads_images(g, i)) return F + 0.5 * lc->flops_bwd;
    return F + lc->flops_bwd;
}

double vt_est_gemm_size(const vt_graph *g, int i, const vt_layer_cost *lc, int batch,
                        const vt_devmodel *d)
{
    double m, k, n1;
    int groups;
    vt_est_gemm_dims(g, i, lc, &m, &k, &n1, &groups);
    return d->gemm_size_n ? fmin(m, fmin(k, batch * n1)) : fmin(m, k);
}

double vt_est_conv_rows(const vt_graph *g, int i, const vt_layer_cost *lc)
{
    const vt_node *nd = &g->nodes[i];
    if (nd->op != VT_OP_CONV || (nd->k == 1 && nd->s == 1 && nd->p == 0) || nd->out.w < 1)
        return 0;
    return lc->ws_elems * (nd->groups > 0 ? nd->groups : 1) / nd->out.w; /* K rows per group */
}

/* A conv node's maps, taken square (the side of its output's area). */
static int conv_side(const vt_node *nd, const vt_layer_cost *lc)
{
    return (int)floor(sqrt((double)lc->out_elems / (nd->cout > 0 ? nd->cout : 1)) + 0.5);
}

int vt_est_wino_tile(const vt_conv_desc *c, int bf16)
{
    if (bf16 && !vt_backend_cpu_winograd_bf16_default()) return 0;
    int tile = bf16 ? vt_backend_cpu_winograd_tile_bf16(c) : vt_backend_cpu_winograd_tile(c),
        largest = vt_backend_cpu_winograd_default();
    return tile < largest ? tile : largest;
}

int vt_est_conv_winograd(const vt_graph *g, int i, const vt_layer_cost *lc, int batch, int bf16)
{
    const vt_node *nd = &g->nodes[i];
    if (nd->op != VT_OP_CONV || nd->cout < 1 || nd->in[0] < 0) return 0;
    int side = conv_side(nd, lc);
    vt_conv_desc c = {batch,    g->nodes[nd->in[0]].out.c, side,  side,  nd->cout, side, side,
                      nd->k,    nd->k,                     nd->s, nd->s, nd->p,    nd->p,
                      nd->groups > 0 ? nd->groups : 1,     0};
    return vt_est_wino_tile(&c, bf16);
}

double vt_est_wino_gemm_share(int tile, int hw)
{
    double t = (hw + tile - 1) / tile;
    return (tile + 2.0) * (tile + 2) * t * t / (9.0 * hw * hw);
}

/* The backward's shares of the batch (whole images), as the CPU backend cuts them */
static double wino_shares(int tile, int cin, int cout, int hw, int batch)
{
    long th = sysconf(_SC_NPROCESSORS_ONLN);
    vt_conv_desc c = {batch, cin, hw, hw, cout, hw, hw, 3, 3, 1, 1, 1, 1, 1, 0};
    int s = vt_backend_cpu_winograd_shares(&c, th > 0 && th < 1 << 16 ? (int)th : 1, tile);
    return s > 0 ? s : 1;
}

double vt_est_wino_bytes(int tile, int cin, int cout, int hw, int batch, int train)
{
    double t = (hw + tile - 1) / tile, tiles = t * t, K = (tile + 2.0) * (tile + 2), b = batch,
           w = K * cin * cout;
    double shares = wino_shares(tile, cin, cout, hw, batch);
    /* forward: V and M written and read; backward: dM, V again and dV; the weights' U (and
     * dU's partial sums, their reduction and transform) */
    double floats = train ? b * K * tiles * (6.0 * cin + 4.0 * cout) + w * (shares + 2)
                          : b * K * tiles * 2.0 * (cin + cout) + w;
    return 4 * floats;
}

double vt_est_layer_seconds(const vt_graph *g, int i, const vt_layer_cost *lc, int batch,
                            const vt_devmodel *d, int train)
{
    if (lc->op == VT_OP_INPUT) return 0;
    double b = batch;
    const vt_node *an = &g->nodes[i];
    /* a SiLU's exponentials (forward and backward), fused into its BN or not; a sigmoid's
     * (forward only: its backward reads its output) */
    int nexp = lc->op != VT_OP_ACT ? 0 : an->act == VT_ACT_SILU ? (train ? 2 : 1)
                                       : an->act == VT_ACT_SIGMOID;
    double exps = b * (double)lc->out_elems * nexp * d->exp_s;
    if (d->fuse_bn_act && vt_est_act_fused(g, i)) return exps;
    double F = vt_est_layer_flops(g, i, lc, train);
    double tmem = b * act_elems(lc, train) * d->act_bytes / d->bw;
    double overhead = train ? d->layer_s : FWD_LAYER_SHARE * d->layer_s;
    if (!vt_est_is_gemm_op(lc->op)) return fmax(b * F / d->rate, tmem) + exps + overhead;

    double dmin = vt_est_gemm_size(g, i, lc, batch, d);
    double phi = dmin / (dmin + d->s0);
    if (!(phi > 0)) phi = 1e-3;
    double weights = (double)lc->params * 4 * (train ? 3 : 1);
    /* the columns' passes; a strided conv's on the CPU over all its groups' columns, its
     * im2col's share alone where it reads the image batch (no input gradient, no col2im) */
    const vt_node *cn = &g->nodes[i];
    double strided = cn->op == VT_OP_CONV && cn->s > 1 ? d->strided_col_passes : 0;
    if (cn->groups > 1) strided *= cn->groups;
    double sshare = train && !reads_images(g, i) ? 1 : 0.3;
    double passes = (train ? d->col_passes : d->col_passes / 3) + sshare * strided;
    double cols = b * lc->ws_elems * d->act_bytes * passes;
    double rows = d->row_s > 0 ? b * vt_est_conv_rows(g, i, lc) * d->row_s * (train ? 1 : 0.5) : 0;
    int tile = d->wino_s > 0 ? vt_est_conv_winograd(g, i, lc, batch, d->wino_bf16) : 0;
    if (tile) {
        const vt_node *nd = &g->nodes[i];
        int cin = g->nodes[nd->in[0]].out.c, side = conv_side(nd, lc);
        /* the forward GEMMs' height, or a backward share's tiles, the dU products' depth */
        double t = (side + tile - 1) / tile,
               dw = fmin(nd->cout, b * t * t / wino_shares(tile, cin, nd->cout, side, batch)),
               phw = dw / (dw + d->s0);
        double x = vt_est_wino_bytes(tile, cin, nd->cout, side, batch, train);
        return fmax(vt_est_wino_gemm_share(tile, side) * b * F / (d->rate * phw), tmem) +
               x * d->wino_s + weights / d->bw + overhead;
    }
    return fmax(b * F / (d->rate * phi), tmem) + (weights + cols) / d->bw + rows + overhead;
}

static int optimizer_states(const vt_estimator *e)
{
    return strcmp(OSTR(e, VT_OPT_EST_OPTIMIZER), "adamw") == 0 ? 2 : 1;
}

/* The loss over the model's output: its passes over the values in memory (about 7 of floats in
 * a training step: a softmax cross-entropy writes the probabilities and the gradient, a Dice
 * term sums the probabilities and adds its gradient; 3 forward only) and its arithmetic in
 * exponential-equivalents at exp_s: the softmax's exponential, a logarithm per pixel, the
 * reductions.  Measured on seg-n's per-pixel loss (CPU, AMD Zen 3, 2 threads, 2.6M values of 10
 * classes): 2.35 ns a value in a training step (cross-entropy 1.42, Dice 0.92) where exp_s
 * was 0.40 ns and BW 70 GB/s: 5 exponential-equivalents and the 7 passes; forward only
 * (probabilities and the Dice sums) about half. */
#define LOSS_PASSES_TRAIN 7
#define LOSS_PASSES_FWD 3
#define LOSS_EXPS_TRAIN 5
#define LOSS_EXPS_FWD 3

double vt_est_loss_seconds(double values, const vt_devmodel *d, int train)
{
    return values * ((train ? LOSS_EXPS_TRAIN : LOSS_EXPS_FWD) * d->exp_s +
                     (train ? LOSS_PASSES_TRAIN : LOSS_PASSES_FWD) * 4.0 / d->bw);
}

double vt_est_graph_seconds(const vt_graph *g, int h, int w, int batch, const vt_devmodel *d,
                            int train, int optimizer_states)
{
    vt_layer_cost *lc = vt_malloc((size_t)g->n_nodes * sizeof *lc);
    if (!lc) return -1;
    int n = vt_graph_costs(g, h, w, lc, g->n_nodes);
    if (n < 0) { free(lc); return -1; }
    double t = d->step_s, grads = 0;
    for (int i = 0; i < n; i++) {
        t += vt_est_layer_seconds(g, i, &lc[i], batch, d, train);
        if (i > 0) grads += (double)lc[i].out_elems;
    }
    /* the executor zeroes every activation gradient before backward: one write pass */
    if (train) t += (double)batch * grads * d->act_bytes / d->bw;
    if (n > 0) t += vt_est_loss_seconds((double)batch * lc[n - 1].out_elems, d, train);
    if (train) t += (double)g->n_params * 4 * (3 + 2 * optimizer_states) / d->bw + d->layer_s;
    if (d->h2d_bw > 0) t += (double)batch * g->input.c * h * w * 4 / d->h2d_bw;
    free(lc);
    return t;
}

/* ---- device models ------------------------------------------------------------------------- */

vt_prec vt_est_parse_prec(const char *s)
{
    if (strcmp(s, "tf32") == 0) return VT_PREC_TF32;
    if (strcmp(s, "fp32") == 0) return VT_PREC_FP32;
    if (strcmp(s, "fp16") == 0) return VT_PREC_FP16;
    return VT_PREC_BF16; /* bf16, amp */
}

/* The precision catalog GPU g runs when p is asked for: never one it has no hardware for.
 *   TF32 needs a TF32 rate in the catalog and compute capability >= 8.0 (Ampere): else fp32.
 *   bf16 needs a half-precision rate and cc >= 8.0: the catalog's bf16 column of a Volta or
 *     Turing card (V100, T4) is its fp16 tensor-core rate, so there bf16 becomes fp16, and
 *     fp32 on a GPU with no half rate at all.
 *   fp16 needs a half-precision rate: else fp32.
 * A GPU without a compute capability (added by CSV) is judged by its rates alone. */
static vt_prec gpu_precision(const vt_gpu *g, vt_prec p)
{
    double cc = g->v[VT_GPU_COMPUTE_CAPABILITY];
    int ampere = !(cc > 0) || cc >= 8.0;
    int tf32 = g->v[VT_GPU_TF32_TFLOPS] > 0 && ampere, half = g->v[VT_GPU_BF16_TFLOPS] > 0;
    if (p == VT_PREC_TF32) return tf32 ? VT_PREC_TF32 : VT_PREC_FP32;
    if (p == VT_PREC_BF16) return half && ampere ? VT_PREC_BF16 : half ? VT_PREC_FP16 : VT_PREC_FP32;
    if (p == VT_PREC_FP16) return half ? VT_PREC_FP16 : VT_PREC_FP32;
    return VT_PREC_FP32;
}

/* Peak FLOP/s of a catalog GPU at a precision it runs (gpu_precision); fp16 and bf16 share the
 * catalog's half-precision column. */
static double gpu_peak(const vt_gpu *g, vt_prec p)
{
    double v = p == VT_PREC_TF32 ? g->v[VT_GPU_TF32_TFLOPS]
             : p >= VT_PREC_BF16 ? g->v[VT_GPU_BF16_TFLOPS] : g->v[VT_GPU_FP32_TFLOPS];
    if (!(v > 0)) v = g->v[VT_GPU_FP32_TFLOPS];
    return v * 1e12;
}

vt_prec vt_est_cpu_precision(vt_prec p)
{
    return p == VT_PREC_BF16 && vt_cpu_has_bf16() ? VT_PREC_BF16 : VT_PREC_FP32;
}

/* The CPU's GEMM rate R at precision p relative to fp32, for a model with no measurement at p:
 * the uncalibrated CPU, or one calibrated at the other precision.  bf16 counts as fp32 (1.0):
 * the CPU backend rounds only the GEMM operands to bf16 (activations, BN and the optimiser
 * stay fp32, so BW and a = 4 bytes are unchanged), and what that buys depends on the chip more
 * than on the kernel: measured whole steps 1.3-1.5x fp32 on an AMD Zen 4 (AVX512-BF16), 0.7x on
 * Intel Xeons with AVX512-BF16, with or without AMX (bench/README.md, "bf16 on the CPU"), so
 * 1.0 is the middle, and a calibration at precision=bf16 measures it. */
static double cpu_rate_factor(vt_prec p)
{
    return p == VT_PREC_BF16 ? CPU_BF16_RATE : 1.0;
}

/* Where no probe measured it (the backend's Winograd on, and with bf16 products where it takes
 * them: vt_backend_cpu_winograd_bf16_default): the transforms at a quarter of the streaming
 * bandwidth (Zen 3's probe: 0.2-0.3). */
#define CPU_WINO_BW_SHARE 0.25
double vt_est_cpu_wino_prior(vt_prec p, double bw)
{
    return (p == VT_PREC_BF16 && !vt_backend_cpu_winograd_bf16_default()) ||
                   !vt_backend_cpu_winograd_default() || !(bw > 0)
               ? 0
               : 1 / (CPU_WINO_BW_SHARE * bw);
}

/* The CPU's exp_s without a probe (CPU_EXP_S over its threads) */
static double cpu_exp_prior(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return CPU_EXP_S / (double)(n > 0 ? n : 1);
}

static vt_devmodel cpu_prior(vt_prec p)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    vt_devmodel d = {30e9 * n * cpu_rate_factor(p), fmin(4e9 * n, 20e9), 24, 15e-6, 50e-6, 0, 4,
                     1, 0, 0, 0, 0, 0, VT_CPU_STRIDED_COL_PASSES, 0};
    d.wino_s = vt_est_cpu_wino_prior(p, d.bw);
    d.wino_bf16 = p == VT_PREC_BF16;
    d.exp_s = cpu_exp_prior();
    return d;
}

/* bf16 (and fp16) figures come from this same model: the catalog's half-precision rate through
 * the same efficiencies (gpu_eff) and scalings, not from a bf16 measurement (precision=bf16 on a
 * GPU is experimental and has not run on one yet, docs/gpu.md).  Its 2 bytes per activation
 * are an autocast-style run's; this backend's bf16 converts only the GEMM operands and keeps
 * activations in fp32 (cuda/backend_cuda.cu), so for it the memory terms are optimistic. */
static vt_devmodel gpu_model(const vt_estimator *e, const vt_gpu *g, vt_prec p)
{
    vt_devmodel d = {gpu_eff[p] * gpu_peak(g, p), 0.55 * g->v[VT_GPU_BANDWIDTH_GBS] * 1e9, 128,
                     20e-6, 200e-6, H2D_BW, p >= VT_PREC_BF16 ? 2 : 4, 1, 1, VT_GPU_COL_PASSES, 0, 0,
                     0, 0, 0};
    const vt_calib *c = &e->cal;
    int ref = c->valid && c->on_gpu && c->gpu[0] ? vt_catalog_lookup(&e->cat, c->gpu) : -1;
    if (ref >= 0) {
        const vt_gpu *g0 = &e->cat.gpus[ref];
        d.rate = c->dm.rate * gpu_eff[p] / gpu_eff[c->prec] * gpu_peak(g, p) / gpu_peak(g0, c->prec);
        d.bw = c->dm.bw * g->v[VT_GPU_BANDWIDTH_GBS] / g0->v[VT_GPU_BANDWIDTH_GBS];
        d.s0 = c->dm.s0;
        d.layer_s = c->dm.layer_s;
        d.step_s = c->dm.step_s;
        d.h2d_bw = c->dm.h2d_bw;
    }
    return d;
}

static double host_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (double)pages * psz : -1;
}

/* The gradient all-reduce of gpus=N > 1 devices (a ring: each device sends and receives
 * 2*(N-1)/N of the gradient): what one device's link reaches (bytes/s) and a latency per ring
 * hop (seconds), by interconnect.  NVLink: 0.8 x the GPU's one-direction NVLink bandwidth,
 * about the all-reduce bus bandwidth nccl-tests report on DGX/HGX systems without NVLink
 * SHARP (A100 SXM ~230-240 of 300 GB/s); PCIe x16: 0.8 x the one-direction link rate (gen3
 * 15.75, gen4 31.5, gen5 63 GB/s), the data crossing the host bridge.  Per hop 1.5 us over
 * NVLink, 4 us over PCIe (NCCL's small all-reduces on 8 GPUs take ~15-25 us and ~50-80 us).
 * Which link a catalog GPU has comes from its name and architecture: the SXM forms and B200
 * (HGX boards) and the NVL cards (NVLink bridges) NVLink, the other cards PCIe of their
 * generation (Turing 3, Ampere and Ada 4, Hopper and Blackwell 5); a GPU added by CSV with
 * another architecture gets PCIe 4.  VT_OPT_EST_LINK_GBS replaces the bandwidth. */
typedef struct link_spec {
    const char *name_has, *arch; /* a name containing name_has, or else of architecture arch */
    double gbs, hop_us;
} link_spec;

static const link_spec gpu_links[] = {
    {"V100 SXM", NULL, 120, 1.5},  /* NVLink 2: 150 GB/s a direction */
    {"A100 SXM", NULL, 240, 1.5},  /* NVLink 3: 300 */
    {"H100 SXM", NULL, 360, 1.5},  /* NVLink 4: 450 */
    {"H200 SXM", NULL, 360, 1.5},
    {"H100 NVL", NULL, 240, 1.5},  /* NVLink bridge: 300 a direction */
    {"H200 NVL", NULL, 360, 1.5},  /* NVLink bridge: 450 */
    {"B200", NULL, 720, 1.5},      /* NVLink 5: 900 */
    {"SXM", NULL, 240, 1.5},       /* another SXM board (added by CSV): NVLink 3's figure */
    {NULL, "Turing", 12, 4},       /* PCIe 3 x16 */
    {NULL, "Volta", 12, 4},
    {NULL, "Ampere", 25, 4},       /* PCIe 4 x16 */
    {NULL, "Ada", 25, 4},
    {NULL, "Hopper", 50, 4},       /* PCIe 5 x16 */
    {NULL, "Blackwell", 50, 4},
};
#define LINK_DEFAULT_GBS 25.0 /* PCIe 4 x16: a GPU of an architecture not listed above */
#define LINK_DEFAULT_HOP_US 4.0
/* N ranks on the CPU (mpirun -np N on one host) exchange through shared memory: each byte is
 * copied in by one rank and read (and reduced) by another through the same memory system, so
 * half the host's streaming bandwidth BW; 0.5 us per hop (Open MPI's shared-memory transport
 * on one socket).  The ranks share the host's cores and memory bandwidth: each runs its b =
 * B/N images at R/N and BW/N. */
#define CPU_LINK_SHARE 0.5
#define CPU_LINK_HOP_US 0.5
/* Collectives a training step makes (lib/train/dist.c): the ranks' agreement on the step's
 * status, image count and loss (two host all-reduces) and the gradients' two ranges (with
 * and without weight decay), each in pieces of at most 2^28 floats (lib/dist/comm_mpi.c). */
#define STEP_COLLECTIVES 4
#define COMM_CHUNK_FLOATS 268435456.0

static void gpu_link(const vt_gpu *g, double *bw, double *hop_s)
{
    *bw = LINK_DEFAULT_GBS * 1e9;
    *hop_s = LINK_DEFAULT_HOP_US * 1e-6;
    size_t n = sizeof gpu_links / sizeof gpu_links[0];
    for (size_t i = 0; i < n; i++) {
        const link_spec *l = &gpu_links[i];
        if (l->name_has ? strstr(g->name, l->name_has) != NULL : strcmp(g->arch, l->arch) == 0) {
            *bw = l->gbs * 1e9;
            *hop_s = l->hop_us * 1e-6;
            return;
        }
    }
}

/* Seconds of a step's all-reduces over n devices of `params` gradients on a link of bw
 * bytes/s and hop_s seconds per ring hop. */
double vt_est_allreduce_seconds(int n, double params, double bw, double hop_s)
{
    if (n < 2) return 0;
    double calls = STEP_COLLECTIVES + floor(params / COMM_CHUNK_FLOATS);
    return calls * 2.0 * (n - 1) * hop_s + 2.0 * (n - 1) / n * 4 * params / bw;
}

/* Where an estimate runs: the device model, capacity, price, and a verified batch cap. */
typedef struct target {
    vt_devmodel dm;
    double link_bw, hop_s; /* the all-reduce link of gpus=N (bytes/s, seconds per hop) */
    int on_gpu;
    double mem_bytes;  /* < 0 unknown */
    double price;      /* per device hour, < 0 unknown */
    double verified;   /* 0 = none */
    vt_prec prec;      /* the precision the device runs (gpu_precision) */
    vt_est_basis basis;
} target;

static vt_status resolve_target(vt_estimator *e, const char *name, target *t)
{
    vt_prec p = vt_est_parse_prec(OSTR(e, VT_OPT_EST_PRECISION));
    memset(t, 0, sizeof *t);
    t->price = -1;
    t->mem_bytes = -1;
    int local = strcmp(name, "local") == 0, cpu = strcmp(name, "cpu") == 0;
    if (local || cpu) {
        const vt_calib *c = &e->cal;
        vt_prec cp = vt_est_cpu_precision(p);
        if (c->valid && (local || !c->on_gpu)) {
            t->dm = c->dm;
            t->on_gpu = c->on_gpu;
            t->prec = c->on_gpu ? c->prec : cp;
            t->basis = VT_EST_BASIS_CALIBRATED;
            if (!c->on_gpu && c->prec != cp) { /* calibrated at the other precision */
                t->dm.rate *= cpu_rate_factor(cp) / cpu_rate_factor(c->prec);
                t->basis = VT_EST_BASIS_EXTRAPOLATED;
            }
            /* Winograd as this process's backend runs it, whatever the calibration's was (or
             * at the other precision, or a file from before Winograd: the uncalibrated ratio) */
            t->dm.wino_bf16 = !c->on_gpu && cp == VT_PREC_BF16;
            if (!c->on_gpu && !vt_est_cpu_wino_prior(cp, t->dm.bw)) t->dm.wino_s = 0;
            else if (!c->on_gpu && !(t->dm.wino_s > 0))
                t->dm.wino_s = vt_est_cpu_wino_prior(cp, t->dm.bw);
            /* a CPU calibration file from before the SiLU probe: the uncalibrated figure */
            if (!c->on_gpu && !(t->dm.exp_s > 0)) t->dm.exp_s = cpu_exp_prior();
            t->verified = (double)c->verified_max_batch;
            int gi = c->on_gpu && c->gpu[0] ? vt_catalog_lookup(&e->cat, c->gpu) : -1;
            if (!c->on_gpu) t->mem_bytes = host_memory_bytes();
            else if (gi >= 0) t->mem_bytes = e->cat.gpus[gi].v[VT_GPU_MEMORY_GB] * 1e9;
        } else {
            t->dm = cpu_prior(cp);
            t->prec = cp;
            t->mem_bytes = host_memory_bytes();
            t->basis = VT_EST_BASIS_UNCALIBRATED;
        }
        t->price = OPT(e, VT_OPT_EST_LOCAL_PRICE);
        if (t->on_gpu) {
            int gi = c->gpu[0] ? vt_catalog_lookup(&e->cat, c->gpu) : -1;
            if (gi >= 0) gpu_link(&e->cat.gpus[gi], &t->link_bw, &t->hop_s);
            else t->link_bw = LINK_DEFAULT_GBS * 1e9, t->hop_s = LINK_DEFAULT_HOP_US * 1e-6;
        } else {
            t->link_bw = CPU_LINK_SHARE * t->dm.bw;
            t->hop_s = CPU_LINK_HOP_US * 1e-6;
        }
        if (OPT(e, VT_OPT_EST_LINK_GBS) > 0) t->link_bw = OPT(e, VT_OPT_EST_LINK_GBS) * 1e9;
        return VT_OK;
    }
    int gi = vt_catalog_resolve(&e->cat, name);
    if (gi < 0) return vt_catalog_find(&e->cat, name) < 0 ? VT_ERR_NOT_FOUND : VT_ERR_INTERNAL;
    const vt_gpu *g = &e->cat.gpus[gi];
    t->prec = gpu_precision(g, p);
    t->dm = gpu_model(e, g, t->prec);
    {
        const vt_calib *c = &e->cal;
        int ref = c->valid && c->on_gpu && c->gpu[0] ? vt_catalog_lookup(&e->cat, c->gpu) : -1;
        t->basis = ref < 0 ? VT_EST_BASIS_UNCALIBRATED
                 : ref == gi && c->prec == t->prec ? VT_EST_BASIS_CALIBRATED
                                                   : VT_EST_BASIS_EXTRAPOLATED;
    }
    t->on_gpu = 1;
    t->mem_bytes = g->v[VT_GPU_MEMORY_GB] > 0 ? g->v[VT_GPU_MEMORY_GB] * 1e9 : -1;
    t->price = g->v[VT_GPU_PRICE_USD_H];
    if (e->cal.valid && e->cal.on_gpu && e->cal.gpu[0] && vt_gpu_name_eq(e->cal.gpu, g->name))
        t->verified = (double)e->cal.verified_max_batch;
    gpu_link(g, &t->link_bw, &t->hop_s);
    if (OPT(e, VT_OPT_EST_LINK_GBS) > 0) t->link_bw = OPT(e, VT_OPT_EST_LINK_GBS) * 1e9;
    return VT_OK;
}

/* ---- estimates ------------------------------------------------------------------------------ */

vt_status vt_est_build_graph(const vt_estimator *e, vt_graph *g)
{
    const char *arch = e->have_model ? e->m_arch : OSTR(e, VT_OPT_EST_MODEL);
    int classes = e->have_model ? e->m_classes : (int)OPT(e, VT_OPT_EST_CLASSES);
    int channels = e->have_model ? e->m_channels : (int)OPT(e, VT_OPT_EST_CHANNELS);
    float dropout = e->have_model ? e->m_dropout : 0.0f;
    const vt_arch_spec *s = vt_arch_find(arch);
    if (!s) return vt_arch_unknown(arch);
    int out[VT_MODEL_MAX_OUTPUTS], n_out;
    return vt_arch_build(g, s, classes, channels, (int)OPT(e, VT_OPT_EST_IMGSZ), dropout, out,
                         &n_out);
}

static void put(vt_est_out *o, vt_est_result r, double v)
{
    o->v[r] = v;
    o->have |= 1u << r;
}

/* Seconds one loader worker needs per image. */
static double load_seconds(const vt_estimator *e)
{
    double ms = OPT(e, VT_OPT_EST_LOAD_MS), s = OPT(e, VT_OPT_EST_IMGSZ);
    if (ms > 0) return ms * 1e-3;
    return (0.2e-3 + 4e-9 * s * s) * (1 + OPT(e, VT_OPT_EST_MOSAIC));
}

static vt_status estimate_on(vt_estimator *e, const vt_graph *g, const target *t, vt_est_out *o)
{
    memset(o, 0, sizeof *o);
    /* ngpu devices: GPUs, or on the CPU ranks sharing the host (its cores, memory bandwidth
     * and memory; one host's price) */
    int imgsz = (int)OPT(e, VT_OPT_EST_IMGSZ), ngpu = (int)OPT(e, VT_OPT_EST_NUM_GPUS);
    int states = optimizer_states(e), hosts = t->on_gpu ? ngpu : 1;
    double B = OPT(e, VT_OPT_EST_BATCH), ntrain = OPT(e, VT_OPT_EST_TRAIN_IMAGES);
    double nval = OPT(e, VT_OPT_EST_VAL_EACH) > 0 ? OPT(e, VT_OPT_EST_VAL_IMAGES) : 0;
    double workers = fmax(1, OPT(e, VT_OPT_EST_WORKERS));
    int b = (int)ceil(B / ngpu);
    vt_devmodel dm = t->dm;
    if (!t->on_gpu) dm.rate /= ngpu, dm.bw /= ngpu, dm.wino_s *= ngpu;

    double tdev = vt_est_graph_seconds(g, imgsz, imgsz, b, &dm, 1, states);
    double tval = nval > 0 ? vt_est_graph_seconds(g, imgsz, imgsz, 2 * b, &dm, 0, states) : 0;
    if (tdev < 0 || tval < 0) return VT_ERR_INVALID_ARGUMENT;
    double tar = vt_est_allreduce_seconds(ngpu, (double)g->n_params, t->link_bw, t->hop_s);
    tdev += tar;
    double ls = load_seconds(e), tload = B * ls / workers, tvload = 2 * B * ls / workers;
    double step = t->on_gpu ? fmax(tdev, tload) : tdev + tload;
    double vstep = t->on_gpu ? fmax(tval, tvload) : tval + tvload;
    double steps = ceil(ntrain / B), vsteps = nval > 0 ? ceil(nval / (2 * B)) : 0;
    double train_s = steps * step, val_s = vsteps * vstep;
    double epoch = train_s + val_s + 12.0 * (double)g->n_params / CKPT_BW;
    double startup = OPT(e, VT_OPT_EST_STARTUP_S);
    if (startup < 0) startup = t->on_gpu ? 30 : 1;
    double total = OPT(e, VT_OPT_EST_EPOCHS) * epoch + startup;

    put(o, VT_EST_STEP_SECONDS, step);
    put(o, VT_EST_STEPS_PER_EPOCH, steps);
    put(o, VT_EST_TRAIN_SECONDS_PER_EPOCH, train_s);
    put(o, VT_EST_VAL_SECONDS_PER_EPOCH, val_s);
    put(o, VT_EST_EPOCH_SECONDS, epoch);
    put(o, VT_EST_TOTAL_SECONDS, total);
    put(o, VT_EST_COMPUTE_SECONDS_PER_STEP, tdev);
    put(o, VT_EST_LOADER_SECONDS_PER_STEP, tload);
    put(o, VT_EST_LOADER_BOUND, tload > tdev ? 1 : 0);
    put(o, VT_EST_PRECISION, t->prec);
    double lo = est_range[t->basis].lo, hi = est_range[t->basis].hi;
    if (t->basis == VT_EST_BASIS_CALIBRATED && !t->on_gpu)
        lo = cpu_calibrated_range[0], hi = cpu_calibrated_range[1];
    put(o, VT_EST_BASIS, t->basis);
    put(o, VT_EST_TOTAL_SECONDS_LOW, total * lo);
    put(o, VT_EST_TOTAL_SECONDS_HIGH, total * hi);
    if (t->price >= 0) {
        put(o, VT_EST_USD_PER_HOUR, t->price * hosts);
        put(o, VT_EST_COST_USD, total / 3600 * t->price * hosts);
        put(o, VT_EST_COST_USD_LOW, total * lo / 3600 * t->price * hosts);
        put(o, VT_EST_COST_USD_HIGH, total * hi / 3600 * t->price * hosts);
    }

    vt_layer_cost *lc = vt_malloc((size_t)g->n_nodes * sizeof *lc);
    if (!lc) return VT_ERR_OUT_OF_MEMORY;
    int n = vt_graph_costs(g, imgsz, imgsz, lc, g->n_nodes);
    double ff = 0, fb = 0;
    for (int i = 0; i < n; i++) ff += lc[i].flops_fwd, fb += lc[i].flops_bwd;
    free(lc);
    if (n < 0) return VT_ERR_INVALID_ARGUMENT;
    put(o, VT_EST_FORWARD_FLOPS_PER_IMAGE, ff);
    put(o, VT_EST_TRAIN_FLOPS_PER_IMAGE, ff + fb);
    put(o, VT_EST_PARAMS, (double)g->n_params);

    double fixed, per, wmax;
    if (vt_train_memory_terms(g, imgsz, imgsz, t->dm.act_bytes, states, t->on_gpu, 1, &fixed, &per,
                           &wmax))
        return VT_ERR_INVALID_ARGUMENT;
    double peak = 1.05 * (fixed + b * per + vt_train_scratch_bytes(wmax, b));
    put(o, VT_EST_PEAK_MEMORY_BYTES, peak);
    int fits = 1;
    if (t->mem_bytes > 0) {
        /* the CPU's ranks each get their share of the host's memory */
        double cap = t->mem_bytes * OPT(e, VT_OPT_EST_MEMORY_FRACTION) / (t->on_gpu ? 1 : ngpu);
        put(o, VT_EST_DEVICE_MEMORY_BYTES, cap);
        fits = peak <= cap;
        /* scratch is at most max(wmax, chunk) floats whatever the batch */
        double room = cap / 1.05 - fixed - vt_train_scratch_bytes(wmax, 1e9);
        double maxb = room > 0 ? floor(room / per) * ngpu : 0;
        if (t->verified > 0) maxb = fmin(maxb, t->verified * ngpu);
        put(o, VT_EST_MAX_BATCH, fmax(0, fmin(maxb, 1e9)));
    } else if (t->verified > 0) {
        put(o, VT_EST_MAX_BATCH, t->verified * ngpu);
        fits = b <= t->verified;
    }
    if (t->verified > 0 && b > t->verified) fits = 0;
    put(o, VT_EST_FITS, fits);
    put(o, VT_EST_MEETS_LIMIT, 1);
    return VT_OK;
}

VT_API vt_status vt_estimator_run(vt_estimator *e)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_run: estimator is NULL");
    e->have_out = 0;
    target t;
    vt_status st = resolve_target(e, OSTR(e, VT_OPT_EST_GPU), &t);
    if (st != VT_OK) return vt_err_capture(e->err, st);
    vt_graph g;
    st = vt_est_build_graph(e, &g);
    if (st != VT_OK) return vt_err_capture(e->err, st);
    st = estimate_on(e, &g, &t, &e->out);
    vt_graph_free(&g);
    if (st == VT_OK) e->have_out = 1;
    return vt_err_capture(e->err, st);
}

static vt_status get_result(const vt_est_out *o, vt_est_result r, double *value)
{
    if (!value || (int)r < 1 || (int)r >= NRES)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "bad result id %d", (int)r);
    if (!(o->have & (1u << r)))
        return vt_fail(VT_ERR_NOT_FOUND, r == VT_EST_COST_USD || r == VT_EST_USD_PER_HOUR
                                             ? "no price is known for this GPU"
                                             : "result %d is unknown for this device", (int)r);
    *value = o->v[r];
    return VT_OK;
}

VT_API vt_status vt_estimator_result(const vt_estimator *e, vt_est_result r, double *value)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_result: estimator is NULL");
    if (!e->have_out)
        return vt_fail(VT_ERR_BAD_STATE, "no estimate yet: call vt_estimator_run() first");
    return get_result(&e->out, r, value);
}

/* Sort context: qsort has no user pointer, and a process-wide one would be shared state, so
 * the keys are precomputed into the array being sorted. */
typedef struct rank_item {
    int gpu, group;
    double key;
} rank_item;

static int rank_cmp(const void *a, const void *b)
{
    const rank_item *x = a, *y = b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

VT_API vt_status vt_estimator_rank(vt_estimator *e, vt_rank_by by, int *order, int cap, int *count)
{
    static const char call[] = "vt_estimator_rank";
    if (count) *count = 0;
    if (!e || !count) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: NULL argument", call);
    vt_status st = vt_buffer_args_int(call, order, cap);
    if (st) return vt_err_capture(e->err, st);
    if (by < VT_RANK_COST || by > VT_RANK_TIME_WITHIN_BUDGET)
        return vt_err_capture(e->err, vt_fail(VT_ERR_INVALID_ARGUMENT, "unknown ranking %d",
                                              (int)by));
    int n = e->cat.n;
    vt_est_out *outs = vt_calloc((size_t)(n ? n : 1), sizeof *outs);
    rank_item *items = vt_calloc((size_t)(n ? n : 1), sizeof *items);
    vt_graph g;
    st = (outs && items) ? vt_est_build_graph(e, &g) : VT_ERR_OUT_OF_MEMORY;
    if (st != VT_OK) {
        free(outs);
        free(items);
        return vt_err_capture(e->err, st);
    }
    int by_cost = by == VT_RANK_COST || by == VT_RANK_COST_WITHIN_DEADLINE;
    double deadline = OPT(e, VT_OPT_EST_DEADLINE_H) * 3600, budget = OPT(e, VT_OPT_EST_BUDGET_USD);
    for (int i = 0; i < n && st == VT_OK; i++) {
        target t;
        st = resolve_target(e, e->cat.gpus[i].name, &t);
        if (st == VT_OK) st = estimate_on(e, &g, &t, &outs[i]);
        if (st != VT_OK) break;
        vt_est_out *o = &outs[i];
        int priced = (o->have >> VT_EST_COST_USD) & 1;
        int meets = 1;
        if (by == VT_RANK_COST_WITHIN_DEADLINE && deadline > 0)
            meets = o->v[VT_EST_TOTAL_SECONDS] <= deadline;
        if (by == VT_RANK_TIME_WITHIN_BUDGET && budget > 0)
            meets = priced && o->v[VT_EST_COST_USD] <= budget;
        put(o, VT_EST_MEETS_LIMIT, meets);
        items[i].gpu = i;
        items[i].key = by_cost ? (priced ? o->v[VT_EST_COST_USD] : 0) : o->v[VT_EST_TOTAL_SECONDS];
        /* fitting and within the limit, then missing the limit, then not fitting; unpriced
         * GPUs after priced ones in a cost ranking */
        items[i].group = (o->v[VT_EST_FITS] > 0 ? 0 : 4) + (meets ? 0 : 2) +
                         (by_cost && !priced ? 1 : 0);
        if (by_cost && !priced) items[i].key = o->v[VT_EST_TOTAL_SECONDS];
        /* missing the limit: nearest to it first (the fastest past a deadline, the cheapest
         * past a budget), which is what one would relax the limit for */
        if (!meets && by == VT_RANK_COST_WITHIN_DEADLINE) items[i].key = o->v[VT_EST_TOTAL_SECONDS];
        if (!meets && by == VT_RANK_TIME_WITHIN_BUDGET)
            items[i].key = priced ? o->v[VT_EST_COST_USD] : HUGE_VAL;
    }
    vt_graph_free(&g);
    if (st != VT_OK) {
        free(outs);
        free(items);
        return vt_err_capture(e->err, st);
    }
    qsort(items, (size_t)n, sizeof *items, rank_cmp);
    free(e->rank_out);
    e->rank_out = outs;
    e->rank_n = n;
    e->rank_by = by;
    e->rank_limit = (by == VT_RANK_COST_WITHIN_DEADLINE && deadline > 0) ||
                    (by == VT_RANK_TIME_WITHIN_BUDGET && budget > 0);
    *count = n;
    st = vt_buffer_fits_int(call, order, cap, (size_t)n, "GPU indices");
    for (int i = 0; !st && order && i < n; i++) order[i] = items[i].gpu;
    free(items);
    return vt_err_capture(e->err, st);
}

VT_API vt_status vt_estimator_rank_result(const vt_estimator *e, int gpu, vt_est_result r,
                                          double *value)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_rank_result: estimator is NULL");
    if (!e->rank_out) return vt_fail(VT_ERR_BAD_STATE, "call vt_estimator_rank() first");
    if (gpu < 0 || gpu >= e->rank_n)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "GPU index %d out of range 0..%d", gpu,
                       e->rank_n - 1);
    return get_result(&e->rank_out[gpu], r, value);
}

VT_API vt_status vt_estimator_pick(const vt_estimator *e, vt_est_pick pick, int *gpu_index)
{
    if (!e || !gpu_index) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_pick: NULL argument");
    *gpu_index = -1;
    if (pick < VT_PICK_BEST_BUY || pick > VT_PICK_WITHIN_LIMIT)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "unknown pick %d", (int)pick);
    if (!e->rank_out) return vt_fail(VT_ERR_BAD_STATE, "call vt_estimator_rank() first");
    if (pick == VT_PICK_WITHIN_LIMIT && !e->rank_limit)
        return vt_fail(VT_ERR_BAD_STATE, "the last ranking had no deadline or budget (rank by "
                       "cost within deadline_h or by time within budget_usd)");
    int best = -1;
    double best_key = 0;
    for (int i = 0; i < e->rank_n; i++) {
        const vt_est_out *o = &e->rank_out[i];
        int priced = (o->have >> VT_EST_COST_USD) & 1;
        if (!(o->v[VT_EST_FITS] > 0)) continue;
        double t = o->v[VT_EST_TOTAL_SECONDS], key;
        if (pick == VT_PICK_FASTEST) key = t;
        else if (!priced) continue; /* cost unknown */
        else if (pick == VT_PICK_BEST_BUY) key = o->v[VT_EST_COST_USD] * t;
        else if (pick == VT_PICK_CHEAPEST) key = o->v[VT_EST_COST_USD];
        else {
            if (!(o->v[VT_EST_MEETS_LIMIT] > 0)) continue;
            key = e->rank_by == VT_RANK_COST_WITHIN_DEADLINE ? o->v[VT_EST_COST_USD] : t;
        }
        if (best < 0 || key < best_key) best = i, best_key = key;
    }
    if (best < 0) {
        static const char *const why[] = {"", "no priced GPU fits the run", "the run fits no GPU",
                                          "no priced GPU fits the run",
                                          "no GPU meets the limit"};
        return vt_fail(VT_ERR_NOT_FOUND, "%s", why[pick]);
    }
    *gpu_index = best;
    return VT_OK;
}

/* ---- handle and settings ------------------------------------------------------------------- */

VT_API vt_status vt_estimator_create(vt_estimator **out)
{
    if (!out) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_create: out is NULL");
    *out = NULL;
    vt_estimator *e = vt_calloc(1, sizeof *e);
    if (!e) return VT_ERR_OUT_OF_MEMORY;
    if (vt_catalog_init_builtin(&e->cat) != VT_OK) {
        free(e);
        return VT_ERR_OUT_OF_MEMORY;
    }
    vt_optvals_init(&e->opts, VT_SCOPE_ESTIMATOR);
    *out = e;
    return VT_OK;
}

VT_API void vt_estimator_destroy(vt_estimator *e)
{
    if (!e) return;
    vt_catalog_clear(&e->cat);
    free(e->rank_out);
    free(e);
}

VT_API vt_catalog *vt_estimator_catalog(vt_estimator *e)
{
    return e ? &e->cat : NULL;
}

VT_API void vt_estimator_set_log(vt_estimator *e, vt_log_fn fn, void *user, vt_log_level level)
{
    if (!e) return;
    e->log.fn = fn;
    e->log.user = user;
    e->log.max_level = level;
}

VT_API const char *vt_estimator_last_error(const vt_estimator *e)
{
    return e ? e->err : "";
}

VT_API int vt_estimator_is_calibrated(const vt_estimator *e)
{
    return e && e->cal.valid;
}

VT_API vt_status vt_estimator_set_int(vt_estimator *e, vt_option o, int64_t v)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "estimator is NULL");
    return vt_err_capture(e->err, vt_optvals_set_num(&e->opts, o, (double)v));
}

VT_API vt_status vt_estimator_set_float(vt_estimator *e, vt_option o, double v)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "estimator is NULL");
    return vt_err_capture(e->err, vt_optvals_set_num(&e->opts, o, v));
}

VT_API vt_status vt_estimator_set_string(vt_estimator *e, vt_option o, const char *v)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "estimator is NULL");
    return vt_err_capture(e->err, vt_optvals_set_str(&e->opts, o, v));
}

VT_API vt_status vt_estimator_set(vt_estimator *e, const char *kv)
{
    if (!e || !kv) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_set: NULL argument");
    return vt_err_capture(e->err, vt_optvals_set_kv(&e->opts, kv));
}

VT_API vt_status vt_estimator_set_model(vt_estimator *e, const vt_model *m)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "estimator is NULL");
    e->have_model = m != NULL;
    if (m) {
        snprintf(e->m_arch, sizeof e->m_arch, "%s", m->arch);
        e->m_classes = m->num_classes;
        e->m_channels = m->channels;
        e->m_dropout = m->dropout;
    }
    return VT_OK;
}

VT_API vt_status vt_estimator_set_dataset(vt_estimator *e, const vt_dataset *ds)
{
    if (!e || !ds) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_set_dataset: NULL argument");
    int ntrain = vt_dataset_num_images(ds, VT_SPLIT_TRAIN);
    if (ntrain < 1)
        return vt_err_capture(e->err, vt_fail(VT_ERR_DATASET, "the dataset has no training images"));
    vt_status st = vt_optvals_set_num(&e->opts, VT_OPT_EST_TRAIN_IMAGES, ntrain);
    if (!st)
        st = vt_optvals_set_num(&e->opts, VT_OPT_EST_VAL_IMAGES,
                                vt_dataset_num_images(ds, VT_SPLIT_VAL));
    if (!st && !e->have_model && vt_dataset_num_classes(ds) >= 2)
        st = vt_optvals_set_num(&e->opts, VT_OPT_EST_CLASSES, vt_dataset_num_classes(ds));
    return vt_err_capture(e->err, st);
}

VT_API const char *vt_estimate_dataset_advice(int64_t n)
{
    if (n < 1000)
        /* no pretrained weights ship: advise what the library can do, fine-tuning a .vtm */
        return "Under 1,000 training images: expect overfitting; use strong augmentation and "
               "prefer a small model; many epochs are cheap here. If you have a model trained "
               "on similar images with the same classes, fine-tune it: load it as the model to "
               "train (vt train model=FILE.vtm) with a lower lr0.";
    if (n <= 10000)
        return "1,000-10,000 training images: a small or medium model trains well; 100-300 "
               "epochs are typical and cost grows linearly with them.";
    return "Over 10,000 training images: larger models pay off, fewer epochs are needed, and "
           "data loading can bound the step on fast GPUs (add loader workers).";
}

