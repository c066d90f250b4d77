/* Reductions over CNHW tensors: per-channel bias add and sum, global average pooling, and the
 * softmax cross-entropy loss.  All reductions are deterministic (fixed trees, no atomics). */
#include "block_reduce.cuh"
#include "cuda_internal.cuh"
#include "backend/seg_loss_math.h"

#define RED_THREADS 512

/* ---- bias_add / channel_sum -------------------------------------------------------------- */

__global__ void k_bias_add(size_t total, size_t m, const float *bias, float *y)
{
    VT_GRID_STRIDE(i, total) y[i] += bias[i / m];
}

vt_status vt_cuda_bias_add(vt_backend *b, int channels, size_t m, const float *bias, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "bias_add: channels < 0");
    size_t total = (size_t)channels * m;
    if (total == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, total, "bias_add", k_bias_add, total, m, bias, y);
}

/* One block per channel: a channel is one contiguous run of m values. */
__global__ void k_channel_sum(size_t m, const float *x, float *out)
{
    __shared__ float sh[32];
    const float *xc = x + (size_t)blockIdx.x * m;
    float s = 0.0f;
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) s += xc[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

vt_status vt_cuda_channel_sum(vt_backend *b, int channels, size_t m, const float *x, float *out)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "channel_sum: channels < 0");
    if (channels == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    if (m == 0) return vt_cuda_fill(b, out, (size_t)channels, 0.0f);
    return vt_cuda_launch_shape(cb, channels, RED_THREADS, 0, "channel_sum", k_channel_sum, m, x,
                                out);
}

/* ---- global average pool ----------------------------------------------------------------- */

/* One warp per plane: planes are many (C*N) and short (h*w of a late feature map). */
__global__ void k_gap_forward(size_t planes, size_t hw, const float *x, float *y)
{
    size_t warps = (size_t)gridDim.x * (blockDim.x >> 5);
    int lane = threadIdx.x & 31;
    for (size_t p = blockIdx.x * (size_t)(blockDim.x >> 5) + (threadIdx.x >> 5); p < planes;
         p += warps) {
        const float *xp = x + p * hw;
        float s = 0.0f;
        for (size_t i = lane; i < hw; i += 32) s += xp[i];
        s = warp_sum(s);
        if (lane == 0) y[p] = s / (float)hw;
    }
}

vt_status vt_cuda_gap_forward(vt_backend *b, size_t planes, size_t hw, const float *x, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (planes == 0) return VT_OK;
    if (hw == 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "gap_forward: empty planes");
    VT_CUDA_GUARD(cb);
    /* one warp per plane: 32 threads of the grid-stride geometry each */
    return vt_cuda_launch(cb, planes * 32, "gap_forward", k_gap_forward, planes, hw, x, y);
}

__global__ void k_gap_backward(size_t total, size_t hw, const float *dy, float *dx)
{
    VT_GRID_STRIDE(i, total) dx[i] += dy[i / hw] / (float)hw;
}

vt_status vt_cuda_gap_backward(vt_backend *b, size_t planes, size_t hw, const float *dy,
                               float *dx, int dx_add)
{
    vt_cuda_backend *cb = vt_cuda(b);
    size_t total = planes * hw;
    if (total == 0 || !dx) return VT_OK;
    if (!dx_add) {
        vt_status st = vt_cuda_fill(b, dx, total, 0.0f);
        if (st != VT_OK) return st;
    }
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, total, "gap_backward", k_gap_backward, total, hw, dy, dx);
}

/* ---- softmax cross-entropy --------------------------------------------------------------- */

/* One thread per sample: with logits laid out [classes][batch], neighbouring threads read
 * neighbouring addresses for every class, so the loops over classes are coalesced. */
__global__ void k_softmax_xent(int classes, int batch, const float *logits,
                               const int32_t *labels, float smoothing, float grad_scale,
                               float *sample_loss, float *dlogits, float *probs)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= batch) return;
    const float *l = logits + j;
    float mx = l[0];
    for (int c = 1; c < classes; c++) mx = fmaxf(mx, l[(size_t)c * batch]);
    float sum = 0.0f, lsum = 0.0f;
    for (int c = 0; c < classes; c++) {
        float v = l[(size_t)c * batch];
        sum += expf(v - mx);
        lsum += v - mx;
    }
    float logz = logf(sum); /* log-sum-exp minus mx */
    int y = labels[j];
    int valid = y >= 0 && y < classes;
    float q_off = smoothing / (float)classes, q_on = 1.0f - smoothing + q_off;
    float loss = 0.0f;
    if (valid) {
        /* -sum_c q_c log p_c with log p_c = (l_c - mx) - logz and sum_c q_c = 1. */
        float ly = l[(size_t)y * batch] - mx;
        loss = logz - (1.0f - smoothing) * ly - q_off * lsum;
    }
    sample_loss[j] = loss;
    if (!dlogits && !probs) return;
    float inv = 1.0f / sum;
    for (int c = 0; c < classes; c++) {
        size_t o = (size_t)c * batch + j;
        float p = expf(logits[o] - mx) * inv;
        if (probs) probs[o] = p;
        if (dlogits) dlogits[o] = valid ? (p - (c == y ? q_on : q_off)) * grad_scale : 0.0f;
    }
}

/* Second stage: one block adds the per-sample losses in a fixed order. */
__global__ void k_sum_losses(int batch, const float *sample_loss, float *loss_sum)
{
    __shared__ float sh[32];
    float s = 0.0f;
    for (int i = threadIdx.x; i < batch; i += blockDim.x) s += sample_loss[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) loss_sum[0] = s;
}

vt_status vt_cuda_softmax_xent(vt_backend *b, int classes, int batch, const float *logits,
                               const int32_t *labels, float smoothing, float grad_scale,
                               float *loss_sum, float *dlogits, float *probs)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (classes < 1 || batch < 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "softmax_xent: classes=%d batch=%d", classes,
                       batch);
    VT_CUDA_GUARD(cb);
    if (batch == 0) return loss_sum ? vt_cuda_fill(b, loss_sum, 1, 0.0f) : VT_OK;
    vt_status st = vt_cuda_scratch(cb, (size_t)batch * sizeof(float));
    if (st != VT_OK) return st;
    float *sample_loss = (float *)cb->scratch;
    int threads = 128; /* one thread per sample */
    st = vt_cuda_launch_shape(cb, (batch + threads - 1) / threads, threads, 0, "softmax_xent",
                              k_softmax_xent, classes, batch, logits, labels, smoothing,
                              grad_scale, sample_loss, dlogits, probs);
    if (st != VT_OK || !loss_sum) return st;
    return vt_cuda_launch_shape(cb, 1, 1024, 0, "softmax_xent (loss sum)", k_sum_losses, batch,
                                sample_loss, loss_sum);
}

/* ---- softmax Dice (lib/backend/seg_loss_math.h) ------------------------------------------- */

/* One block per class: I_k and C_k over the labelled pixels. */
__global__ void k_dice_sums(int batch, const float *probs, const int32_t *labels, float *sums)
{
    __shared__ float sh[64];
    int k = blockIdx.x;
    const float *p = probs + (size_t)k * batch;
    float inter = 0.0f, card = 0.0f;
    for (int i = threadIdx.x; i < batch; i += blockDim.x) {
        int32_t y = labels[i];
        if (y < 0) continue;
        card += p[i] + (y == k ? 1.0f : 0.0f);
        if (y == k) inter += p[i];
    }
    block_sum2(&inter, &card, sh);
    if (threadIdx.x == 0) {
        sums[2 * k] = inter;
        sums[2 * k + 1] = card;
    }
}

/* One thread: the loss and each class's gradient coefficients. */
__global__ void k_dice_coef(int classes, float weight, const float *sums, float *ab, float *loss)
{
    float mean = 0.0f;
    for (int k = 0; k < classes; k++) {
        mean += (float)vt_dice_class(sums[2 * k], sums[2 * k + 1]);
        vt_dice_coef(classes, weight, sums[2 * k], sums[2 * k + 1], &ab[2 * k], &ab[2 * k + 1]);
    }
    if (loss) loss[0] = weight * (1.0f - mean / (float)classes);
}

__global__ void k_dice_grad(int classes, int batch, const float *probs, const int32_t *labels,
                            const float *ab, float *dlogits)
{
    VT_GRID_STRIDE(i, (size_t)batch)
    {
        int32_t y = labels[i];
        if (y >= 0) vt_dice_pixel_grad(classes, probs + i, (size_t)batch, y, ab, dlogits + i);
    }
}

vt_status vt_cuda_softmax_dice(vt_backend *b, int classes, int batch, const float *probs,
                               const int32_t *labels, float weight, float *loss, float *dlogits)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (classes < 1 || batch < 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "softmax_dice: classes=%d batch=%d", classes,
                       batch);
    VT_CUDA_GUARD(cb);
    vt_status st = vt_cuda_scratch(cb, (size_t)classes * 4 * sizeof(float));
    if (st != VT_OK) return st;
    float *sums = (float *)cb->scratch, *ab = sums + 2 * classes;
    st = vt_cuda_launch_shape(cb, classes, RED_THREADS, 0, "softmax_dice (sums)", k_dice_sums,
                              batch, probs, labels, sums);
    if (st != VT_OK) return st;
    st = vt_cuda_launch_shape(cb, 1, 1, 0, "softmax_dice (coefficients)", k_dice_coef, classes,
                              weight, sums, ab, loss);
    if (st != VT_OK || !dlogits || batch == 0) return st;
    return vt_cuda_launch(cb, (size_t)batch, "softmax_dice (gradient)", k_dice_grad, classes,
                          batch, probs, labels, ab, dlogits);
}
