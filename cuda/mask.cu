// The instance-mask loss on the CUDA backend: the same mathematics as the CPU backend
// (lib/backend/mask_loss_math.h, compiled here as __host__ __device__).  One block per anchor
// (non-positive anchors return at once), its threads over the box's pixels; the prototype
// gradient is accumulated with atomics (so its last bits depend on the order), the
// coefficients' through shared memory, the loss per anchor then summed in a fixed order.
#include "block_reduce.cuh"
#include "cuda_internal.cuh"

extern "C" {
#include "backend/det_loss_math.h"
#include "backend/mask_loss_math.h"
}

#define MASK_KMAX 64

__global__ void k_mask_count(long cells, const int32_t *assign, float *loss)
{
    __shared__ float sh[64];
    float s = 0.0f, t = 0.0f;
    for (long i = threadIdx.x; i < cells; i += blockDim.x) s += assign[i] >= 0 ? 1.0f : 0.0f;
    block_sum2(&s, &t, sh);
    if (threadIdx.x == 0) loss[1] = s;
}

__global__ void k_mask_zero(size_t n, float *p)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = 0.0f;
}

__global__ void k_mask(vt_mask_loss_desc d, const float *coef, const float *proto,
                       const int32_t *assign, const float *gt, const uint16_t *inst,
                       const float *loss, float *cell_loss, float *dcoef, float *dproto)
{
    __shared__ float sdc[MASK_KMAX];
    __shared__ float sh[64];
    long cell = blockIdx.x;
    size_t A = (size_t)d.anchors, n = (size_t)d.n, HW = (size_t)d.mh * d.mw;
    size_t i = (size_t)cell / A, a = (size_t)cell % A;
    int k = assign[cell];
    if (k < 0) {
        if (threadIdx.x == 0) cell_loss[cell] = 0.0f;
        return;
    }
    int r0, r1, c0, c1;
    const float *box = gt + (i * (size_t)d.max_gt + (size_t)k) * VT_DET_GT_FIELDS + 1;
    int area = vt_mask_box(box, d.mstride, d.mh, d.mw, &r0, &r1, &c0, &c1);
    if (!area) {
        if (threadIdx.x == 0) cell_loss[cell] = 0.0f;
        return;
    }
    float P = loss[1];
    float s = d.gain / (P > 1.0f ? P : 1.0f) / (float)area;
    for (int c = threadIdx.x; c < d.k; c += blockDim.x) sdc[c] = 0.0f;
    __syncthreads();
    float l = 0.0f, unused = 0.0f;
    int w = c1 - c0;
    for (int q = threadIdx.x; q < area; q += blockDim.x) {
        size_t p = (size_t)(r0 + q / w) * d.mw + (size_t)(c0 + q % w);
        float z = 0.0f;
        for (int c = 0; c < d.k; c++)
            z += coef[((size_t)c * n + i) * A + a] * proto[((size_t)c * n + i) * HW + p];
        float t = inst[i * HW + p] == (uint16_t)(k + 1) ? 1.0f : 0.0f;
        l += vt_mask_bce(z, t);
        if (!dproto) continue;
        float g = (vt_mask_sigmoid(z) - t) * s;
        for (int c = 0; c < d.k; c++) {
            atomicAdd(&dproto[((size_t)c * n + i) * HW + p], g * coef[((size_t)c * n + i) * A + a]);
            atomicAdd(&sdc[c], g * proto[((size_t)c * n + i) * HW + p]);
        }
    }
    block_sum2(&l, &unused, sh);
    __syncthreads();
    if (dcoef)
        for (int c = threadIdx.x; c < d.k; c += blockDim.x) dcoef[((size_t)c * n + i) * A + a] = sdc[c];
    if (threadIdx.x == 0) cell_loss[cell] = l * s;
}

__global__ void k_mask_sum(long cells, const float *cell_loss, float *loss)
{
    __shared__ float sh[64];
    float s = 0.0f, t = 0.0f;
    for (long i = threadIdx.x; i < cells; i += blockDim.x) s += cell_loss[i];
    block_sum2(&s, &t, sh);
    if (threadIdx.x == 0) loss[0] = s;
}

vt_status vt_cuda_mask_loss(vt_backend *b, const vt_mask_loss_desc *d, const float *coef,
                            const float *proto, const int32_t *assign, const float *gt,
                            const uint16_t *inst, float *loss, float *dcoef, float *dproto)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (d->n < 1 || d->k < 1 || d->k > MASK_KMAX || d->anchors < 1 || d->mh < 1 || d->mw < 1 ||
        d->max_gt < 0 || !(d->mstride > 0) || !dcoef != !dproto)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "mask_loss: n=%d k=%d (at most %d) anchors=%d "
                       "grid %dx%d max_gt=%d", d->n, d->k, MASK_KMAX, d->anchors, d->mh, d->mw,
                       d->max_gt);
    VT_CUDA_GUARD(cb);
    long cells = (long)d->n * d->anchors;
    vt_status st = vt_cuda_scratch(cb, (size_t)cells * sizeof(float));
    if (st != VT_OK) return st;
    float *cell_loss = (float *)cb->scratch;
    if (dproto) {
        size_t np = (size_t)d->k * d->n * d->mh * d->mw, nc = (size_t)d->k * cells;
        if ((st = vt_cuda_launch_shape(cb, (unsigned)((np + 255) / 256), 256, 0,
                                       "mask_loss (zero)", k_mask_zero, np, dproto)) != VT_OK ||
            (st = vt_cuda_launch_shape(cb, (unsigned)((nc + 255) / 256), 256, 0,
                                       "mask_loss (zero)", k_mask_zero, nc, dcoef)) != VT_OK)
            return st;
    }
    if ((st = vt_cuda_launch_shape(cb, 1, 1024, 0, "mask_loss (count)", k_mask_count, cells,
                                   assign, loss)) != VT_OK)
        return st;
    if ((st = vt_cuda_launch_shape(cb, (unsigned)cells, 128, 0, "mask_loss", k_mask, *d, coef,
                                   proto, assign, gt, inst, loss, cell_loss, dcoef,
                                   dproto)) != VT_OK)
        return st;
    return vt_cuda_launch_shape(cb, 1, 1024, 0, "mask_loss (sum)", k_mask_sum, cells, cell_loss,
                                loss);
}
