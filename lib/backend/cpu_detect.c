/* The detection loss on the CPU backend: the mathematics of det_loss_math.h run over the
 * anchors, split by image over the pool (each image's targets and terms are independent). */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/det_loss_math.h"
#include "backend/mask_loss_math.h"

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
    size_t grain = vt_cpu_grain((size_t)A * (4 + d->nc) * (d->max_gt + 1)); /* per image */
    vt_pool_run(POOL(b), (size_t)d->n, grain, assign_range, &j);
    long total = 0;
    double tsum = 0;
    for (int i = 0; i < d->n; i++) {
        total += npos[i];
        tsum += j.tsum[i];
    }
    j.scale = 1.0f / vt_det_norm((float)tsum);
    vt_pool_run(POOL(b), (size_t)d->n, grain, loss_range, &j);
    double box = 0, cls = 0;
    for (int i = 0; i < d->n; i++) {
        box += j.box[i];
        cls += j.cls[i];
    }
    loss[0] = (float)box;
    loss[1] = (float)cls;
    loss[2] = (float)total;
    loss[3] = (float)tsum;
    return VT_OK;
}

/* ---- the instance-mask loss (mask_loss_math.h), split by image over the pool ---- */

typedef struct mask_job {
    const vt_mask_loss_desc *d;
    const float *coef, *proto, *gt;
    const int32_t *assign;
    const uint16_t *inst;
    float *dcoef, *dproto;
    float scale;  /* gain / max(P, 1) */
    double *loss; /* per image */
    float *work;  /* per image 2 x mh x mw floats: the box's logits and their gradients */
} mask_job;

static void mask_range(void *ctx, size_t b, size_t e)
{
    mask_job *j = ctx;
    const vt_mask_loss_desc *d = j->d;
    size_t HW = (size_t)d->mh * d->mw, A = (size_t)d->anchors, n = (size_t)d->n;
    for (size_t i = b; i < e; i++) {
        float *z = j->work + 2 * HW * i, *g = z + HW;
        double sum = 0;
        if (j->dproto)
            for (int c = 0; c < d->k; c++) {
                memset(j->dproto + ((size_t)c * n + i) * HW, 0, HW * sizeof(float));
                memset(j->dcoef + ((size_t)c * n + i) * A, 0, A * sizeof(float));
            }
        const uint16_t *inst = j->inst + i * HW;
        for (size_t a = 0; a < A; a++) {
            int k = j->assign[i * A + a];
            if (k < 0) continue;
            int r0, r1, c0, c1;
            const float *box = j->gt + (i * (size_t)d->max_gt + (size_t)k) * VT_DET_GT_FIELDS + 1;
            int area = vt_mask_box(box, d->mstride, d->mh, d->mw, &r0, &r1, &c0, &c1);
            if (!area) continue;
            int w = c1 - c0;
            /* z over the box, row by row: z[r * mw + c] */
            for (int r = r0; r < r1; r++) memset(z + (size_t)r * d->mw + c0, 0, (size_t)w * sizeof *z);
            for (int c = 0; c < d->k; c++) {
                float cf = j->coef[((size_t)c * n + i) * A + a];
                const float *P = j->proto + ((size_t)c * n + i) * HW;
                for (int r = r0; r < r1; r++) {
                    float *zr = z + (size_t)r * d->mw;
                    const float *pr = P + (size_t)r * d->mw;
                    for (int x = c0; x < c1; x++) zr[x] += cf * pr[x];
                }
            }
            float s = j->scale / (float)area;
            double l = 0;
            for (int r = r0; r < r1; r++)
                for (int x = c0; x < c1; x++) {
                    size_t p = (size_t)r * d->mw + x;
                    float t = inst[p] == (uint16_t)(k + 1) ? 1.0f : 0.0f;
                    l += vt_mask_bce(z[p], t);
                    g[p] = (vt_mask_sigmoid(z[p]) - t) * s;
                }
            sum += l * s;
            if (!j->dproto) continue;
            for (int c = 0; c < d->k; c++) {
                float cf = j->coef[((size_t)c * n + i) * A + a];
                const float *P = j->proto + ((size_t)c * n + i) * HW;
                float *dP = j->dproto + ((size_t)c * n + i) * HW;
                float dc = 0;
                for (int r = r0; r < r1; r++) {
                    size_t o = (size_t)r * d->mw;
                    for (int x = c0; x < c1; x++) {
                        dc += g[o + x] * P[o + x];
                        dP[o + x] += g[o + x] * cf;
                    }
                }
                j->dcoef[((size_t)c * n + i) * A + a] = dc;
            }
        }
        j->loss[i] = sum;
    }
}

vt_status vt_cpu_mask_loss(vt_backend *b, const vt_mask_loss_desc *d, const float *coef,
                           const float *proto, const int32_t *assign, const float *gt,
                           const uint16_t *inst, float *loss, float *dcoef, float *dproto)
{
    if (d->n < 1 || d->k < 1 || d->anchors < 1 || d->mh < 1 || d->mw < 1 || d->max_gt < 0 ||
        !(d->mstride > 0) || !dcoef != !dproto)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "mask_loss: n=%d k=%d anchors=%d grid %dx%d "
                       "stride %g max_gt=%d%s", d->n, d->k, d->anchors, d->mh, d->mw,
                       (double)d->mstride, d->max_gt,
                       !dcoef != !dproto ? ", one gradient of two" : "");
    long P = 0;
    for (long a = 0; a < (long)d->n * d->anchors; a++) {
        if (assign[a] >= d->max_gt)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "mask_loss: anchor %ld assigned to ground "
                           "truth %d of %d", a, assign[a], d->max_gt);
        P += assign[a] >= 0;
    }
    /* the backend's scratch: the per-image sums, then each image's working rows */
    size_t HW = (size_t)d->mh * d->mw;
    double *part = vt_cpu_scratch(b, (size_t)d->n * (sizeof(double) + 2 * HW * sizeof(float)));
    if (!part) return VT_ERR_OUT_OF_MEMORY;
    mask_job j = {d, coef, proto, gt, assign, inst, dcoef, dproto,
                  d->gain / (float)(P > 1 ? P : 1), part, (float *)(part + d->n)};
    vt_pool_run(POOL(b), (size_t)d->n, 1, mask_range, &j);
    double sum = 0;
    for (int i = 0; i < d->n; i++) sum += part[i];
    loss[0] = (float)sum;
    loss[1] = (float)P;
    return VT_OK;
}
