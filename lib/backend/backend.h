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
 *   layer's inputs (dx) are ACCUMULATED (+=), because an activation may feed several layers.
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

#define VT_BACKEND_API_VERSION 4

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

typedef struct vt_backend_ops {
    int api_version; /* VT_BACKEND_API_VERSION */
    const char *name; /* "cpu", "cuda" */

    void (*destroy)(vt_backend *b);

    /* ---- memory ---- */
    void *(*alloc)(vt_backend *b, size_t bytes); /* NULL + error set on failure; 64B aligned */
    void (*free)(vt_backend *b, void *p);        /* NULL ok */
    vt_status (*upload)(vt_backend *b, void *dst, const void *src_host, size_t bytes);
    /* `rows` rows of row_bytes each, from host memory (starting spitch bytes apart) to backend
     * memory (dpitch apart): a strided upload, e.g. one channel of an NCHW batch into CNHW.
     * The caller may reuse src_host when it returns, as with upload. */
    vt_status (*upload_rows)(vt_backend *b, void *dst, size_t dpitch, const void *src_host,
                             size_t spitch, size_t row_bytes, size_t rows);
    vt_status (*download)(vt_backend *b, void *dst_host, const void *src, size_t bytes);
    vt_status (*copy)(vt_backend *b, void *dst, const void *src, size_t bytes);
    vt_status (*fill)(vt_backend *b, float *x, size_t n, float value);
    vt_status (*synchronize)(vt_backend *b);

    /* ---- dense algebra ---- */
    /* Row-major C[m][n] = alpha * op(A) * op(B) + beta * C, op = transpose when trans* != 0;
     * A is m x k (k x m if transa), lda its row stride; likewise B, C. */
    vt_status (*gemm)(vt_backend *b, int transa, int transb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *bm, int ldb, float beta, float *c,
                      int ldc);
    /* y += alpha * x */
    vt_status (*axpy)(vt_backend *b, size_t n, float alpha, const float *x, float *y);
    /* y = a + c (elementwise; y may alias a or c) */
    vt_status (*add)(vt_backend *b, size_t n, const float *a, const float *c, float *y);
    /* y[ch][i] += bias[ch] for ch < channels, i < m (a CNHW tensor with m = N*H*W) */
    vt_status (*bias_add)(vt_backend *b, int channels, size_t m, const float *bias, float *y);
    /* out[ch] = sum_i x[ch][i] (assign) */
    vt_status (*channel_sum)(vt_backend *b, int channels, size_t m, const float *x, float *out);

    /* ---- convolution (CNHW; x: cin*n*h*w, y: cout*n*ho*wo) ---- */
    /* Bytes of scratch memory the two conv calls need for this shape (may be 0). */
    size_t (*conv_workspace)(vt_backend *b, const vt_conv_desc *d);
    /* y = conv(x, w) (+ bias[cout] if bias != NULL). */
    vt_status (*conv_forward)(vt_backend *b, const vt_conv_desc *d, const float *x,
                              const float *w, const float *bias, float *y, void *ws);
    /* dw = dL/dw (assign), db = dL/dbias (assign, if db != NULL), dx += dL/dx (if dx != NULL). */
    vt_status (*conv_backward)(vt_backend *b, const vt_conv_desc *d, const float *x,
                               const float *w, const float *dy, float *dx, float *dw, float *db,
                               void *ws);

    /* ---- activations (elementwise, n values) ---- */
    /* y = f(x); y may alias x. */
    vt_status (*act_forward)(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                             float *y);
    /* dx += dy * f'(x); x is the activation's input, y its output (either may be used). */
    vt_status (*act_backward)(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                              const float *y, const float *dy, float *dx);

    /* ---- batch norm over CNHW (channels C, m = N*H*W values per channel) ---- */
    /* Training: batch statistics; saves mean and invstd = 1/sqrt(var + eps) (biased var) for
     * backward; updates running_mean/var with running = (1-momentum)*running + momentum*batch
     * (running_var uses the unbiased variance). */
    vt_status (*bn_forward_train)(vt_backend *b, int channels, size_t m, const float *x,
                                  const float *gamma, const float *beta, float eps,
                                  float momentum, float *running_mean, float *running_var,
                                  float *save_mean, float *save_invstd, float *y);
    vt_status (*bn_forward_eval)(vt_backend *b, int channels, size_t m, const float *x,
                                 const float *gamma, const float *beta, float eps,
                                 const float *running_mean, const float *running_var, float *y);
    /* dgamma, dbeta assigned; dx accumulated. */
    vt_status (*bn_backward)(vt_backend *b, int channels, size_t m, const float *x,
                             const float *gamma, const float *save_mean, const float *save_invstd,
                             const float *dy, float *dx, float *dgamma, float *dbeta);

    /* ---- pooling ---- */
    /* Max pool: idx (int32, planes*ho*wo) records the argmax offset within the plane. */
    vt_status (*maxpool_forward)(vt_backend *b, const vt_pool_desc *d, const float *x, float *y,
                                 int32_t *idx);
    vt_status (*maxpool_backward)(vt_backend *b, const vt_pool_desc *d, const int32_t *idx,
                                  const float *dy, float *dx);
    /* Average pool; padded cells count as zeros (count_include_pad). */
    vt_status (*avgpool_forward)(vt_backend *b, const vt_pool_desc *d, const float *x, float *y);
    vt_status (*avgpool_backward)(vt_backend *b, const vt_pool_desc *d, const float *dy,
                                  float *dx);
    /* Global average pool: y[plane] = mean of the plane's hw values. */
    vt_status (*gap_forward)(vt_backend *b, size_t planes, size_t hw, const float *x, float *y);
    vt_status (*gap_backward)(vt_backend *b, size_t planes, size_t hw, const float *dy,
                              float *dx);
    /* Nearest-neighbour x2 upsampling of each h x w plane to 2h x 2w. */
    vt_status (*upsample2_forward)(vt_backend *b, size_t planes, int h, int w, const float *x,
                                   float *y);
    vt_status (*upsample2_backward)(vt_backend *b, size_t planes, int h, int w, const float *dy,
                                    float *dx);

    /* ---- dropout: keep with prob 1-p, scale kept values by 1/(1-p) ---- */
    /* mask[i] = (vt_hash_uniform(seed, i) >= p) ? 1/(1-p) : 0; y = x * mask. */
    vt_status (*dropout_forward)(vt_backend *b, size_t n, float p, uint64_t seed, const float *x,
                                 float *y, float *mask);
    /* dx += dy * mask */
    vt_status (*dropout_backward)(vt_backend *b, size_t n, const float *mask, const float *dy,
                                  float *dx);

    /* ---- loss ---- */
    /* Softmax cross-entropy with label smoothing s over logits laid out [classes][batch]
     * (CNHW with h = w = 1).  Target q = (1-s)*onehot + s/classes.  Writes:
     *   loss_sum[0] = sum over the batch of the per-sample loss (one float, backend memory),
     *   dlogits (if non-NULL) = (softmax - q) * grad_scale   (ASSIGNED; pass 1/batch for mean),
     *   probs (if non-NULL) = softmax, same layout.
     * labels: int32 class ids in backend memory; -1 marks a sample to ignore (no loss, zero
     * gradient: segmentation's `ignore` pixels); another id outside 0..classes-1 is an error on
     * the CPU backend and ignored the same way on devices. */
    vt_status (*softmax_xent)(vt_backend *b, int classes, int batch, const float *logits,
                              const int32_t *labels, float smoothing, float grad_scale,
                              float *loss_sum, float *dlogits, float *probs);

    /* Detection loss.  pred: (4+nc) x n x A (A anchors per image, see vt_det_loss_desc); gt:
     * n x max_gt records of 5 floats (class, x0, y0, x1, y1 in input pixels); assign (int32)
     * and score (float): n*A each, receive every anchor's assigned ground truth (-1: none) and
     * its target score (unless d->reuse_targets).  loss: 4 floats, ASSIGNED: the box term, the
     * class term, the number of positive anchors and the target-score sum that normalises both
     * terms.  dpred (if non-NULL): dL/dpred, ASSIGNED, with the targets held constant. */
    vt_status (*det_loss)(vt_backend *b, const vt_det_loss_desc *d, const float *pred,
                          const float *gt, int32_t *assign, float *score, float *loss,
                          float *dpred);

    /* ---- optimisers (flat parameter arrays) ---- */
    /* g' = g + wd*p;  m = momentum*m + g';  p -= lr * (nesterov ? g' + momentum*m : m) */
    vt_status (*sgd_step)(vt_backend *b, size_t n, float *p, const float *g, float *m, float lr,
                          float momentum, float wd, int nesterov);
    /* AdamW: p -= lr*wd*p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
     *        p -= lr * (m/bc1) / (sqrt(v/bc2) + eps)   with bc1 = 1-b1^t, bc2 = 1-b2^t. */
    vt_status (*adamw_step)(vt_backend *b, size_t n, float *p, const float *g, float *m, float *v,
                            float lr, float beta1, float beta2, float eps, float wd, float bc1,
                            float bc2);

    /* ---- optional fused ops (NULL: the executor runs the unfused sequence) ---- */
    /* Batch norm followed by an activation, y = act(bn(x)) (training / eval), and its
     * backward: the same as the activation's backward then bn_backward, without the
     * intermediate gradient tensor and without the BN's own output.  act is VT_ACT_RELU or
     * VT_ACT_SILU (anything else is refused).  Backward: y = the fused op's output (ReLU: its
     * sign is the mask) and beta (SiLU: the BN's output is recomputed from x, the saved
     * statistics, gamma and beta); dy = dL/dy; dx is added to, dgamma and dbeta assigned. */
    vt_status (*bn_act_forward_train)(vt_backend *b, vt_act act, int channels, size_t m,
                                      const float *x, const float *gamma, const float *beta,
                                      float eps, float momentum, float *running_mean,
                                      float *running_var, float *save_mean, float *save_invstd,
                                      float *y);
    vt_status (*bn_act_forward_eval)(vt_backend *b, vt_act act, int channels, size_t m,
                                     const float *x, const float *gamma, const float *beta,
                                     float eps, const float *running_mean,
                                     const float *running_var, float *y);
    vt_status (*bn_act_backward)(vt_backend *b, vt_act act, int channels, size_t m,
                                 const float *x, const float *y, const float *gamma,
                                 const float *beta, const float *save_mean,
                                 const float *save_invstd, const float *dy, float *dx,
                                 float *dgamma, float *dbeta);

    /* 1 when backend memory is ordinary host memory (the CPU backend): callers may then write
     * into it directly instead of staging on the host and uploading. */
    int host_memory;

    /* Optional (NULL: not offered).  Bytes of a buffer that, passed as the `ws` of both
     * conv_forward and conv_backward of one layer with d->keep_columns = 1 and left untouched
     * in between, lets backward reuse what forward computed there (the CPU backend's im2col
     * columns of the whole batch); 0 when the backend would not use one for this shape. */
    size_t (*conv_columns)(vt_backend *b, const vt_conv_desc *d);

    /* ---- strided 2-D (API version 2; appended so positional tables stay valid) ---- */
    /* rows x cols floats, pitches in floats (>= cols): dst[r*dst_pitch + j] =
     * src[r*src_pitch + j].  The regions must not overlap. */
    vt_status (*copy2d)(vt_backend *b, size_t rows, size_t cols, const float *src,
                        size_t src_pitch, float *dst, size_t dst_pitch);
    /* y[r*y_pitch + j] += alpha * x[r*x_pitch + j] (a flatcat's input gradients) */
    vt_status (*axpy2d)(vt_backend *b, size_t rows, size_t cols, float alpha, const float *x,
                        size_t x_pitch, float *y, size_t y_pitch);

    /* ---- segmentation Dice term (API version 3; formula in backend/seg_loss_math.h) ---- */
    /* probs: softmax probabilities laid out [classes][batch] (softmax_xent's probs), labels as
     * softmax_xent's (-1 = ignored; another id outside 0..classes-1 is an error on the CPU).
     * loss[0] = weight * (1 - mean over classes of the soft Dice), ASSIGNED (one float,
     * backend memory); dlogits (if non-NULL) += its gradient w.r.t. the logits (ADDED onto
     * softmax_xent's assigned gradient; ignored pixels get nothing). */
    vt_status (*softmax_dice)(vt_backend *b, int classes, int batch, const float *probs,
                              const int32_t *labels, float weight, float *loss, float *dlogits);
} vt_backend_ops;

struct vt_backend {
    const vt_backend_ops *ops;
};

/* The CPU reference backend.  threads: 0 = the number of online processors. */
vt_status vt_backend_cpu_create(vt_backend **out, int threads);
/* Floats of one im2col tile (default 256K, 1 MiB: stays in L3 while BLIS packs it; at least
 * 256 columns).  Setting it also drops the 256-column minimum: tests use it to make tiles as
 * small as one output row of one image. */
void vt_backend_cpu_set_conv_cap(vt_backend *b, size_t floats);

/* The CUDA backend: vt_backend_cuda_create in lib/backend/cuda_device.h. */

static inline void vt_backend_destroy(vt_backend *b)
{
    if (b) b->ops->destroy(b);
}

/* The activations the fused bn_act_* ops take (ReLU, SiLU): VT_OK, else the error set for op. */
static inline vt_status vt_bn_act_check(vt_act act, const char *op)
{
    if (act == VT_ACT_RELU || act == VT_ACT_SILU) return VT_OK;
    return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: activation %d is not fused (ReLU or SiLU)", op,
                   (int)act);
}

#endif
