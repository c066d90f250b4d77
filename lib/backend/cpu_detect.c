/* The detection loss on the CPU backend: the per-cell mathematics of det_loss_math.h run over
 * the grid, split by image over the pool (each image's cells are independent). */
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/det_loss_math.h"

typedef struct det_job {
    const vt_det_loss_desc *d;
    const float *pred, *gt;
    int32_t *assign;
    float *dpred;
    float scale;
    double *box, *cls; /* per image partial sums: the total does not depend on the split */
    int *npos;
} det_job;

static void assign_range(void *ctx, size_t b, size_t e)
{
    det_job *j = ctx;
    const vt_det_loss_desc *d = j->d;
    for (size_t i = b; i < e; i++) {
        const float *g = j->gt + i * (size_t)d->max_gt * VT_DET_GT_FIELDS;
        int32_t *a = j->assign + i * (size_t)d->h * d->w;
        int np = 0;
        for (int y = 0; y < d->h; y++)
            for (int x = 0; x < d->w; x++) {
                int k = vt_det_assign_cell(g, d->max_gt, x, y, d->w, d->h, d->stride, d->radius);
                a[y * d->w + x] = k;
                np += k >= 0;
            }
        j->npos[i] = np;
    }
}

static void loss_range(void *ctx, size_t b, size_t e)
{
    det_job *j = ctx;
    const vt_det_loss_desc *d = j->d;
    size_t hw = (size_t)d->h * d->w;
    long fs = (long)(d->n * hw);
    for (size_t i = b; i < e; i++) {
        const float *g = j->gt + i * (size_t)d->max_gt * VT_DET_GT_FIELDS;
        const int32_t *a = j->assign + i * hw;
        float box = 0, cls = 0;
        for (int y = 0; y < d->h; y++)
            for (int x = 0; x < d->w; x++) {
                size_t off = i * hw + (size_t)y * d->w + x;
                int k = a[y * d->w + x];
                float cb = 0, cc = 0;
                vt_det_cell_loss(j->pred + off, fs, d->nc, x, y, d->stride,
                                 k >= 0 ? g + (size_t)k * VT_DET_GT_FIELDS : NULL, j->scale,
                                 d->box_gain, d->cls_gain, d->grad_scale, &cb, &cc,
                                 j->dpred ? j->dpred + off : NULL);
                box += cb;
                cls += cc;
            }
        j->box[i] = box;
        j->cls[i] = cls;
    }
}

vt_status vt_cpu_det_loss(vt_backend *b, const vt_det_loss_desc *d, const float *pred,
                          const float *gt, int32_t *assign, float *loss, float *dpred)
{
    if (d->n < 1 || d->nc < 1 || d->h < 1 || d->w < 1 || d->max_gt < 0 || !(d->stride > 0))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "det_loss: n=%d nc=%d grid %dx%d max_gt=%d", d->n,
                       d->nc, d->h, d->w, d->max_gt);
    for (int i = 0; i < d->n * d->max_gt; i++) {
        const float *g = gt + (size_t)i * VT_DET_GT_FIELDS;
        if (g[0] >= 0 && (g[0] >= d->nc || !(g[3] > g[1]) || !(g[4] > g[2])))
            return vt_fail(VT_ERR_INVALID_ARGUMENT,
                           "det_loss: ground truth %d of image %d: class %g of %d, box %g,%g,%g,%g",
                           i % (d->max_gt ? d->max_gt : 1), i / (d->max_gt ? d->max_gt : 1),
                           (double)g[0], d->nc, (double)g[1], (double)g[2], (double)g[3],
                           (double)g[4]);
    }
    /* per image: box and class partial sums, then the positive count */
    double *part = vt_cpu_scratch(b, (size_t)d->n * (2 * sizeof(double) + sizeof(int)));
    if (!part) return VT_ERR_OUT_OF_MEMORY;
    int *npos = (int *)(part + 2 * (size_t)d->n);
    det_job j = {d, pred, gt, assign, dpred, 0, part, part + d->n, npos};
    size_t grain = (size_t)d->h * d->w * (4 + d->nc);
    grain = grain >= GRAIN ? 1 : GRAIN / grain;
    vt_pool_run(POOL(b), (size_t)d->n, grain, assign_range, &j);
    long total = 0;
    for (int i = 0; i < d->n; i++) total += npos[i];
    j.scale = 1.0f / (float)(total > 0 ? total : 1);
    vt_pool_run(POOL(b), (size_t)d->n, grain, loss_range, &j);
    double box = 0, cls = 0;
    for (int i = 0; i < d->n; i++) {
        box += j.box[i];
        cls += j.cls[i];
    }
    loss[0] = (float)box;
    loss[1] = (float)cls;
    loss[2] = (float)total;
    return VT_OK;
}
