// The detection loss on the CUDA backend: the same per-cell mathematics as the CPU backend
// (lib/backend/det_loss_math.h, compiled here as __host__ __device__), one thread per cell.
// Totals are reduced in a fixed order, so a run is reproducible on one device.
#include "block_reduce.cuh"
#include "cuda_internal.cuh"

extern "C" {
#include "backend/det_loss_math.h"
}

// Pass 1: the assigned ground truth of every cell; positives counted per cell (0/1) so the
// total is an exact integer sum.
__global__ void k_det_assign(vt_det_loss_desc d, const float *gt, int32_t *assign, float *pos)
{
    long hw = (long)d.h * d.w;
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.n * hw) return;
    int img = (int)(i / hw), cell = (int)(i % hw);
    int x = cell % d.w, y = cell / d.w;
    const float *g = gt + (size_t)img * d.max_gt * VT_DET_GT_FIELDS;
    int k = vt_det_assign_cell(g, d.max_gt, x, y, d.w, d.h, d.stride, d.radius);
    assign[i] = k;
    pos[i] = k >= 0 ? 1.0f : 0.0f;
}

__global__ void k_det_count(long cells, const float *pos, float *loss)
{
    __shared__ float sh[32];
    float s = 0.0f;
    for (long i = threadIdx.x; i < cells; i += blockDim.x) s += pos[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) loss[2] = s;
}

// Pass 2: the loss and gradient of every cell; per-cell terms go to box/cls for the sum.
__global__ void k_det_loss(vt_det_loss_desc d, const float *pred, const float *gt,
                           const int32_t *assign, const float *loss, float *box, float *cls,
                           float *dpred)
{
    long hw = (long)d.h * d.w;
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.n * hw) return;
    int img = (int)(i / hw), cell = (int)(i % hw);
    int x = cell % d.w, y = cell / d.w;
    float npos = loss[2];
    float scale = 1.0f / (npos > 0.0f ? npos : 1.0f);
    int k = assign[i];
    const float *g = k >= 0 && k < d.max_gt
                         ? gt + ((size_t)img * d.max_gt + k) * VT_DET_GT_FIELDS
                         : nullptr;
    float cb = 0.0f, cc = 0.0f;
    vt_det_cell_loss(pred + i, (long)d.n * hw, d.nc, x, y, d.stride, g, scale, d.box_gain,
                     d.cls_gain, d.grad_scale, &cb, &cc, dpred ? dpred + i : nullptr);
    box[i] = cb;
    cls[i] = cc;
}

__global__ void k_det_sum(long cells, const float *box, const float *cls, float *loss)
{
    __shared__ float sh[64];
    float s = 0.0f, t = 0.0f;
    for (long i = threadIdx.x; i < cells; i += blockDim.x) {
        s += box[i];
        t += cls[i];
    }
    block_sum2(&s, &t, sh);
    if (threadIdx.x == 0) {
        loss[0] = s;
        loss[1] = t;
    }
}

vt_status vt_cuda_det_loss(vt_backend *b, const vt_det_loss_desc *d, const float *pred,
                           const float *gt, int32_t *assign, float *loss, float *dpred)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (d->n < 1 || d->nc < 1 || d->h < 1 || d->w < 1 || d->max_gt < 0 || !(d->stride > 0))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "det_loss: n=%d nc=%d grid %dx%d max_gt=%d", d->n,
                       d->nc, d->h, d->w, d->max_gt);
    VT_CUDA_GUARD(cb);
    long cells = (long)d->n * d->h * d->w;
    vt_status st = vt_cuda_scratch(cb, (size_t)cells * 3 * sizeof(float));
    if (st != VT_OK) return st;
    float *pos = (float *)cb->scratch, *box = pos + cells, *cls = box + cells;
    int threads = 256;
    unsigned blocks = (unsigned)((cells + threads - 1) / threads);
    k_det_assign<<<blocks, threads, 0, cb->stream>>>(*d, gt, assign, pos);
    if ((st = vt_cuda_check_launch("det_loss (assign)")) != VT_OK) return st;
    k_det_count<<<1, 1024, 0, cb->stream>>>(cells, pos, loss);
    if ((st = vt_cuda_check_launch("det_loss (count)")) != VT_OK) return st;
    k_det_loss<<<blocks, threads, 0, cb->stream>>>(*d, pred, gt, assign, loss, box, cls, dpred);
    if ((st = vt_cuda_check_launch("det_loss")) != VT_OK) return st;
    k_det_sum<<<1, 1024, 0, cb->stream>>>(cells, box, cls, loss);
    return vt_cuda_check_launch("det_loss (sum)");
}
