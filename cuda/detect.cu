// The detection loss on the CUDA backend: the same mathematics as the CPU backend
// (lib/backend/det_loss_math.h, compiled here as __host__ __device__).  The task-aligned
// assignment runs one thread per image (its top-k selection is sequential per object; a
// block-parallel version is future work), the loss one thread per anchor.  Totals are reduced in
// a fixed order, so a run is reproducible on one device.
#include "block_reduce.cuh"
#include "cuda_internal.cuh"

extern "C" {
#include "backend/det_loss_math.h"
}

// Pass 1: the targets of every image (unless reused); per anchor 0/1 positives and the target
// score of positives, for the sums.
__global__ void k_det_assign(vt_det_loss_desc d, long A, const float *pred, const float *gt,
                             int32_t *assign, float *score)
{
    int img = (int)((long)blockIdx.x * blockDim.x + threadIdx.x);
    if (img >= d.n || d.reuse_targets) return;
    vt_det_assign_image(&d, pred + (size_t)img * A, (long)d.n * A,
                        gt + (size_t)img * d.max_gt * VT_DET_GT_FIELDS, assign + (size_t)img * A,
                        score + (size_t)img * A);
}

__global__ void k_det_count(long cells, const int32_t *assign, const float *score, float *loss)
{
    __shared__ float sh[64];
    float p = 0.0f, t = 0.0f;
    for (long i = threadIdx.x; i < cells; i += blockDim.x)
        if (assign[i] >= 0) {
            p += 1.0f;
            t += score[i];
        }
    block_sum2(&p, &t, sh);
    if (threadIdx.x == 0) {
        loss[2] = p;
        loss[3] = t;
    }
}

// Pass 2: the loss and gradient of every anchor; per-anchor terms go to box/cls for the sum.
__global__ void k_det_loss(vt_det_loss_desc d, long A, const float *pred, const float *gt,
                           const int32_t *assign, const float *score, const float *loss,
                           float *box, float *cls, float *dpred)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.n * A) return;
    int img = (int)(i / A);
    float cx, cy, s;
    vt_det_anchor(&d, i % A, &cx, &cy, &s);
    int k = assign[i];
    const float *g = k >= 0 && k < d.max_gt
                         ? gt + ((size_t)img * d.max_gt + k) * VT_DET_GT_FIELDS
                         : nullptr;
    float cb = 0.0f, cc = 0.0f;
    vt_det_anchor_loss(&d, pred + i, (long)d.n * A, cx, cy, s, g, g ? score[i] : 0.0f,
                       1.0f / vt_det_norm(loss[3]), &cb, &cc, dpred ? dpred + i : nullptr);
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
                           const float *gt, int32_t *assign, float *score, float *loss,
                           float *dpred)
{
    vt_cuda_backend *cb = vt_cuda(b);
    vt_status st = vt_det_check_desc(d);
    if (st != VT_OK) return st;
    VT_CUDA_GUARD(cb);
    long A = vt_det_anchors(d), cells = (long)d->n * A;
    if ((st = vt_cuda_scratch(cb, (size_t)cells * 2 * sizeof(float))) != VT_OK) return st;
    float *box = (float *)cb->scratch, *cls = box + cells;
    int threads = 256;
    unsigned blocks = (unsigned)((cells + threads - 1) / threads);
    /* one thread per image, 64 a block */
    st = vt_cuda_launch_shape(cb, (unsigned)((d->n + 63) / 64), 64, 0, "det_loss (assign)",
                              k_det_assign, *d, A, pred, gt, assign, score);
    if (st != VT_OK) return st;
    st = vt_cuda_launch_shape(cb, 1, 1024, 0, "det_loss (count)", k_det_count, cells, assign,
                              score, loss);
    if (st != VT_OK) return st;
    /* one thread per anchor */
    st = vt_cuda_launch_shape(cb, blocks, threads, 0, "det_loss", k_det_loss, *d, A, pred, gt,
                              assign, score, loss, box, cls, dpred);
    if (st != VT_OK) return st;
    return vt_cuda_launch_shape(cb, 1, 1024, 0, "det_loss (sum)", k_det_sum, cells, box, cls,
                                loss);
}
