/* The detection loss on the CPU backend: the mathematics of det_loss_math.h run over the
 * anchors, split by image over the pool (each image's targets and terms are independent). */
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/det_loss_math.h"

typedef struct det_job {
    const vt_det_loss_desc *d;
    const float *pred, *gt;
    int32_t *assign;
    float *score;
    float *dpred;
    float scale;
    long A;
    double *box, *cls, *tsum; /* per image partial sums: the totals do not depend on the split */
    int *npos;
} det_job;

static void assign_range(void *ctx, size_t b, size_t e)
{
    det_job *j = ctx;
    const vt_det_loss_desc *d = j->d;
    long fs = (long)d->n * j->A;
    for (size_t i = b; i < e; i++) {
        const float *g = j->gt + i * (size_t)d->max_gt * VT_DET_GT_FIELDS;
        int32_t *a = j->assign + i * j->A;
        float *s = j->score + i * j->A;
        if (!d->reuse_targets) j->npos[i] = vt_det_assign_image(d, j->pred + i * j->A, fs, g, a, s);
        else {
            j->npos[i] = 0;
            for (long k = 0; k < j->A; k++) j->npos[i] += a[k] >= 0;
        }
        double t = 0;
        for (long k = 0; k < j->A; k++) t += a[k] >= 0 ? s[k] : 0.0f;
        j->tsum[i] = t;
    }
}

static void loss_range(void *ctx, size_t b, size_t e)
{
    det_job *j = ctx;
    const vt_det_loss_desc *d = j->d;
    long fs = (long)d->n * j->A;
    for (size_t i = b; i < e; i++) {
        const float *g = j->gt + i * (size_t)d->max_gt * VT_DET_GT_FIELDS;
        float box = 0, cls = 0;
        for (long a = 0; a < j->A; a++) {
            size_t off = i * j->A + a;
            int k = j->assign[off];
            float cx, cy, s;
            vt_det_anchor(d, a, &cx, &cy, &s);
            vt_det_anchor_loss(d, j->pred + off, fs, cx, cy, s,
                               k >= 0 ? g + (size_t)k * VT_DET_GT_FIELDS : NULL,
                               k >= 0 ? j->score[off] : 0.0f, j->scale, &box, &cls,
                               j->dpred ? j->dpred + off : NULL);
        }
        j->box[i] = box;
        j->cls[i] = cls;
    }
}

vt_status vt_cpu_det_loss(vt_backend *b, const vt_det_loss_desc *d, const float *pred,
                          const float *gt, int32_t *assign, float *score, float *loss,
                          float *dpred)
{
    vt_status st = vt_det_check_desc(d);
    if (st) return st;
    for (int i = 0; i < d->n * d->max_gt; i++) {
        const float *g = gt + (size_t)i * VT_DET_GT_FIELDS;
        if (g[0] >= 0 && (g[0] >= d->nc || !(g[3] > g[1]) || !(g[4] > g[2])))
            return vt_fail(VT_ERR_INVALID_ARGUMENT,
                           "det_loss: ground truth %d of image %d: class %g of %d, box %g,%g,%g,%g",
                           i % (d->max_gt ? d->max_gt : 1), i / (d->max_gt ? d->max_gt : 1),
                           (double)g[0], d->nc, (double)g[1], (double)g[2], (double)g[3],
                           (double)g[4]);
    }
    /* per image: box, class and target-score partial sums, then the positive count */
    double *part = vt_cpu_scratch(b, (size_t)d->n * (3 * sizeof(double) + sizeof(int)));
    if (!part) return VT_ERR_OUT_OF_MEMORY;
    int *npos = (int *)(part + 3 * (size_t)d->n);
    long A = vt_det_anchors(d);
    det_job j = {d, pred, gt, assign, score, dpred, 0, A, part, part + d->n, part + 2 * d->n, npos};
    size_t grain = (size_t)A * (4 + d->nc) * (d->max_gt + 1);
    grain = grain >= GRAIN ? 1 : GRAIN / grain;
    vt_pool_run(POOL(b), (size_t)d->n, grain, assign_range, &j);
    long total = 0;
    double tsum = 0;
    for (int i = 0; i < d->n; i++) {
        total += npos[i];
        tsum += j.tsum[i];
    }
    float S = (float)(tsum > 1.0 ? tsum : 1.0);
    j.scale = 1.0f / S;
    vt_pool_run(POOL(b), (size_t)d->n, grain, loss_range, &j);
    double box = 0, cls = 0;
    for (int i = 0; i < d->n; i++) {
        box += j.box[i];
        cls += j.cls[i];
    }
    loss[0] = (float)box;
    loss[1] = (float)cls;
    loss[2] = (float)total;
    loss[3] = S;
    return VT_OK;
}
