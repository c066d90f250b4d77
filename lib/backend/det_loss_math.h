/* The mathematics of the detection loss, shared by the CPU backend (cpu_detect.c) and the CUDA
 * backend (cuda/detect.cu) so that both compute exactly the same assignment, loss and gradient.
 * Plain C99 that nvcc also compiles as __host__ __device__.
 *
 * HEAD LAYOUT.  The detector's output has 4 + nc channels per anchor (CNHW, see backend.h; the
 * anchors of an image are the cells of the levels in vt_det_loss_desc, level after level).
 * Channels 0..3 are the raw box fields (ll, lt, lr, lb) of an anchor whose cell centre is
 * (cx, cy) on a level of `stride` input pixels per cell: the log distances, in strides, from
 * the centre to the box's four edges.  The box they encode, in input pixels, is
 *   x0 = cx - stride * exp(ll),  y0 = cy - stride * exp(lt)
 *   x1 = cx + stride * exp(lr),  y1 = cy + stride * exp(lb)   (each clamped to [VT_DET_LOG_MIN, MAX])
 * so each edge is its own field, as FCOS and YOLOv8 regress them (a centre and a size moved
 * two fields for one edge: det-n's mAP50-95 on the 128 px benchmark sets 0.762 / 0.752 / 0.742
 * with them, 0.780 / 0.761 / ... with the edges, bench/README.md).
 * Channels 4..4+nc-1 are class logits (sigmoid, one independent probability per class).
 *
 * TARGET ASSIGNMENT (task-aligned, as TOOD and YOLOv8 do).  An anchor is a candidate for ground
 * truth g when its cell centre lies inside g's box, or it is the level-0 cell holding g's centre
 * (so that a box smaller than a cell still has one).  The alignment of a candidate is
 *   m = s^alpha * IoU^beta
 * with s the predicted probability of g's class and IoU that of the predicted box with g's.  Each
 * g takes its topk candidates of highest m; an anchor taken by several keeps the one its box
 * overlaps most (ties: the first).  The target score of a positive anchor assigned to g is
 *   t = m / max m * max IoU          (maxima over g's positive anchors)
 * so the best-aligned anchor of each object is taught its best IoU and the others less.
 * Negatives have t = 0.  The targets are held constant in the gradient (no gradient flows through
 * the assignment).
 *
 * LOSS.  Over the batch, with S = max(1, sum of t over the positives):
 *   box = box_gain / S * sum over positives of t * (1 - CIoU(pred box, gt box))
 *   cls = cls_gain / S * sum over every anchor and class of BCE(sigmoid(logit), target)
 * where target = t for the assigned class of a positive anchor and 0 otherwise.  CIoU is IoU
 * minus the normalised centre distance and the aspect-ratio term (Zheng et al. 2020), with the
 * aspect term's weight held constant as its authors do. */
#ifndef VT_DET_LOSS_MATH_H
#define VT_DET_LOSS_MATH_H

#include <math.h>

#include "backend/backend.h"
#include "backend/host_device.h"

#define VT_DET_LOG_MIN (-6.0f)
#define VT_DET_LOG_MAX (7.0f)
#define VT_DET_GT_FIELDS 5 /* class (< 0: padding), x0, y0, x1, y1 in input pixels */
#define VT_DET_EPS 1e-9f

/* The descriptor's own checks (host code; both backends call it before anything else). */
static inline vt_status vt_det_check_desc(const vt_det_loss_desc *d)
{
    if (d->n < 1 || d->nc < 1 || d->max_gt < 0 || d->n_levels < 1 ||
        d->n_levels > VT_DET_MAX_LEVELS || d->topk < 1 || d->topk > VT_DET_TOPK_MAX)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "det_loss: n=%d nc=%d levels=%d max_gt=%d topk=%d",
                       d->n, d->nc, d->n_levels, d->max_gt, d->topk);
    for (int l = 0; l < d->n_levels; l++)
        if (d->level[l].h < 1 || d->level[l].w < 1 || !(d->level[l].stride > 0))
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "det_loss: level %d is %dx%d at stride %g", l,
                           d->level[l].h, d->level[l].w, (double)d->level[l].stride);
    return VT_OK;
}

/* Anchors per image of the descriptor's levels. */
VT_HD long vt_det_anchors(const vt_det_loss_desc *d)
{
    long a = 0;
    for (int l = 0; l < d->n_levels; l++) a += (long)d->level[l].h * d->level[l].w;
    return a;
}

/* Anchor a: its cell centre (input pixels), its level's stride, and its level. */
VT_HD int vt_det_anchor(const vt_det_loss_desc *d, long a, float *cx, float *cy, float *stride)
{
    int l = 0;
    while (l + 1 < d->n_levels && a >= (long)d->level[l].h * d->level[l].w) {
        a -= (long)d->level[l].h * d->level[l].w;
        l++;
    }
    int w = d->level[l].w;
    *stride = d->level[l].stride;
    *cx = ((float)(a % w) + 0.5f) * *stride;
    *cy = ((float)(a / w) + 0.5f) * *stride;
    return l;
}

/* One clamped log distance; *live (when non-NULL) receives whether it was inside the clamp
 * (the derivative's switch). */
VT_HD float vt_det_log_dist(float l, int *live)
{
    float c = l < VT_DET_LOG_MIN ? VT_DET_LOG_MIN : l > VT_DET_LOG_MAX ? VT_DET_LOG_MAX : l;
    if (live) *live = c == l;
    return expf(c);
}

/* Decode an anchor's raw box fields f[k * fs], k = 0..3, into corners (input pixels); live
 * (when non-NULL) receives each field's clamp switch. */
VT_HD void vt_det_decode_box(const float *f, long fs, float cx, float cy, float stride,
                             float box[4], int live[4])
{
    box[0] = cx - stride * vt_det_log_dist(f[0], live ? &live[0] : 0);
    box[1] = cy - stride * vt_det_log_dist(f[fs], live ? &live[1] : 0);
    box[2] = cx + stride * vt_det_log_dist(f[2 * fs], live ? &live[2] : 0);
    box[3] = cy + stride * vt_det_log_dist(f[3 * fs], live ? &live[3] : 0);
}

/* The loss's normaliser S of a batch whose positives' target scores sum to tsum. */
VT_HD float vt_det_norm(float tsum) { return tsum > 1.0f ? tsum : 1.0f; }

/* Plain IoU of two corner boxes of positive size. */
VT_HD float vt_det_box_iou(const float p[4], const float g[4])
{
    float iw = fminf(p[2], g[2]) - fmaxf(p[0], g[0]);
    float ih = fminf(p[3], g[3]) - fmaxf(p[1], g[1]);
    float I = iw > 0.0f && ih > 0.0f ? iw * ih : 0.0f;
    float U = (p[2] - p[0]) * (p[3] - p[1]) + (g[2] - g[0]) * (g[3] - g[1]) - I;
    return I / U;
}

/* CIoU of box p with box g (corners) and its gradient with respect to p's corners (the
 * aspect-ratio weight held constant).  Both boxes must have positive width and height. */
VT_HD float vt_det_ciou(const float p[4], const float g[4], float dp[4])
{
    float ix0 = fmaxf(p[0], g[0]), iy0 = fmaxf(p[1], g[1]);
    float ix1 = fminf(p[2], g[2]), iy1 = fminf(p[3], g[3]);
    float iw = ix1 - ix0, ih = iy1 - iy0;
    int overlap = iw > 0.0f && ih > 0.0f;
    float I = overlap ? iw * ih : 0.0f;
    float pw = p[2] - p[0], ph = p[3] - p[1];
    float gw = g[2] - g[0], gh = g[3] - g[1];
    float U = pw * ph + gw * gh - I;
    float iou = I / U;
    /* IoU = I / U, U = Ap + Ag - I: dIoU = (dI * (U + I) - I * dAp) / U^2 */
    float kI = (U + I) / (U * U), kA = -I / (U * U);
    float dIx0 = overlap && p[0] > g[0] ? -ih : 0.0f, dIx1 = overlap && p[2] < g[2] ? ih : 0.0f;
    float dIy0 = overlap && p[1] > g[1] ? -iw : 0.0f, dIy1 = overlap && p[3] < g[3] ? iw : 0.0f;
    dp[0] = kI * dIx0 + kA * -ph;
    dp[2] = kI * dIx1 + kA * ph;
    dp[1] = kI * dIy0 + kA * -pw;
    dp[3] = kI * dIy1 + kA * pw;
    /* - rho^2 / c^2: centre distance over the enclosing box's squared diagonal */
    float cw = fmaxf(p[2], g[2]) - fminf(p[0], g[0]);
    float chh = fmaxf(p[3], g[3]) - fminf(p[1], g[1]);
    float c2 = cw * cw + chh * chh + VT_DET_EPS;
    float rx = 0.5f * (p[0] + p[2] - g[0] - g[2]), ry = 0.5f * (p[1] + p[3] - g[1] - g[3]);
    float rho2 = rx * rx + ry * ry;
    float kc = rho2 / (c2 * c2);
    float dcx0 = p[0] < g[0] ? -2.0f * cw : 0.0f, dcx1 = p[2] > g[2] ? 2.0f * cw : 0.0f;
    float dcy0 = p[1] < g[1] ? -2.0f * chh : 0.0f, dcy1 = p[3] > g[3] ? 2.0f * chh : 0.0f;
    dp[0] -= rx / c2 - kc * dcx0;
    dp[2] -= rx / c2 - kc * dcx1;
    dp[1] -= ry / c2 - kc * dcy0;
    dp[3] -= ry / c2 - kc * dcy1;
    /* - a * v, v = 4/pi^2 (atan(gw/gh) - atan(pw/ph))^2, a = v / (1 - IoU + v) constant */
    float dv = atanf(gw / gh) - atanf(pw / ph);
    float v = 0.40528473f * dv * dv;
    float a = v / (1.0f - iou + v + VT_DET_EPS);
    float r2 = pw * pw + ph * ph;
    float dv_dw = -2.0f * 0.40528473f * dv * ph / r2, dv_dh = 2.0f * 0.40528473f * dv * pw / r2;
    dp[0] -= a * -dv_dw;
    dp[2] -= a * dv_dw;
    dp[1] -= a * -dv_dh;
    dp[3] -= a * dv_dh;
    return iou - rho2 / c2 - a * v;
}

/* Binary cross-entropy of sigmoid(z) against target t, and its derivative in z. */
VT_HD float vt_det_bce(float z, float t, float *dz)
{
    float e = expf(-fabsf(z));
    float s = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    *dz = s - t;
    return fmaxf(z, 0.0f) - z * t + log1pf(e);
}

/* Whether anchor (cx, cy) of level `lvl` is a candidate for ground truth g (5 floats). */
VT_HD int vt_det_candidate(const vt_det_loss_desc *d, const float *g, float cx, float cy,
                           int lvl)
{
    if (cx > g[1] && cx < g[3] && cy > g[2] && cy < g[4]) return 1;
    if (lvl != 0) return 0;
    float s = d->level[0].stride;
    int ix = (int)floorf(0.5f * (g[1] + g[3]) / s), iy = (int)floorf(0.5f * (g[2] + g[4]) / s);
    ix = ix < 0 ? 0 : ix >= d->level[0].w ? d->level[0].w - 1 : ix;
    iy = iy < 0 ? 0 : iy >= d->level[0].h ? d->level[0].h - 1 : iy;
    return (int)floorf(cx / s) == ix && (int)floorf(cy / s) == iy;
}

/* The alignment metric of anchor a (pa: its channel 0, field f at f * fs) with ground truth g;
 * *iou receives the IoU of its box with g's. */
VT_HD float vt_det_align(const vt_det_loss_desc *d, const float *pa, long fs, const float *g,
                         float cx, float cy, float stride, float *iou)
{
    float p[4];
    vt_det_decode_box(pa, fs, cx, cy, stride, p, 0);
    float io = vt_det_box_iou(p, g + 1);
    *iou = io;
    float z = pa[(4 + (int)g[0]) * fs];
    float s = 1.0f / (1.0f + expf(-z));
    return powf(s, d->alpha) * powf(io, d->beta);
}

/* Targets of one image: pred points at the image's anchor 0 (field f at f * fs), gt at its
 * max_gt records; assign / score receive the image's A entries.  Returns the positives. */
VT_HD int vt_det_assign_image(const vt_det_loss_desc *d, const float *pred, long fs,
                              const float *gt, int *assign, float *score)
{
    long A = vt_det_anchors(d);
    int K = d->topk;
    float cx, cy, s, io;
    for (long a = 0; a < A; a++) {
        assign[a] = -1;
        score[a] = 0.0f;
    }
    for (int j = 0; j < d->max_gt; j++) {
        const float *g = gt + j * VT_DET_GT_FIELDS;
        if (g[0] < 0.0f) continue;
        float tv[VT_DET_TOPK_MAX], ti[VT_DET_TOPK_MAX];
        long ta[VT_DET_TOPK_MAX];
        int cnt = 0;
        for (long a = 0; a < A; a++) {
            int lvl = vt_det_anchor(d, a, &cx, &cy, &s);
            if (!vt_det_candidate(d, g, cx, cy, lvl)) continue;
            float m = vt_det_align(d, pred + a, fs, g, cx, cy, s, &io);
            if (cnt == K && !(m > tv[K - 1])) continue;
            int q = cnt < K ? cnt++ : K - 1;
            for (; q > 0 && m > tv[q - 1]; q--) {
                tv[q] = tv[q - 1];
                ti[q] = ti[q - 1];
                ta[q] = ta[q - 1];
            }
            tv[q] = m;
            ti[q] = io;
            ta[q] = a;
        }
        /* An anchor chosen by several objects keeps the one its box overlaps most; score holds
         * that IoU until the normalisation below. */
        for (int q = 0; q < cnt; q++)
            if (assign[ta[q]] < 0 || ti[q] > score[ta[q]]) {
                assign[ta[q]] = j;
                score[ta[q]] = ti[q];
            }
    }
    int npos = 0;
    for (int j = 0; j < d->max_gt; j++) {
        const float *g = gt + j * VT_DET_GT_FIELDS;
        if (g[0] < 0.0f) continue;
        float max_m = 0.0f, max_iou = 0.0f;
        for (long a = 0; a < A; a++)
            if (assign[a] == j) {
                vt_det_anchor(d, a, &cx, &cy, &s);
                max_m = fmaxf(max_m, vt_det_align(d, pred + a, fs, g, cx, cy, s, &io));
                max_iou = fmaxf(max_iou, score[a]);
            }
        for (long a = 0; a < A; a++)
            if (assign[a] == j) {
                vt_det_anchor(d, a, &cx, &cy, &s);
                score[a] = vt_det_align(d, pred + a, fs, g, cx, cy, s, &io) /
                           (max_m + VT_DET_EPS) * max_iou;
                npos++;
            }
    }
    return npos;
}

/* Loss of one anchor.  pred / dpred point at the anchor's channel 0; field f is at f * fs.
 * g: the assigned ground truth (NULL for a negative), t its target score; scale = 1 / S.  Adds
 * the anchor's box and class terms (already scaled) to *box_loss / *cls_loss and, when dpred is
 * non-NULL, ASSIGNS the anchor's 4 + nc gradients multiplied by grad_scale. */
VT_HD void vt_det_anchor_loss(const vt_det_loss_desc *d, const float *pred, long fs, float cx,
                              float cy, float stride, const float *g, float t, float scale,
                              float *box_loss, float *cls_loss, float *dpred)
{
    int gcls = -1;
    float dbox[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (g) {
        int live[4];
        float p[4], dp[4];
        vt_det_decode_box(pred, fs, cx, cy, stride, p, live);
        float ciou = vt_det_ciou(p, g + 1, dp);
        *box_loss += d->box_gain * scale * t * (1.0f - ciou);
        gcls = (int)g[0];
        /* d(1 - ciou)/d corners = -dp; corner k moves with its field alone: d x0 / d ll =
         * -stride * exp(ll) = x0 - cx, d x1 / d lr = x1 - cx (y alike) */
        float k = -d->box_gain * scale * t * d->grad_scale;
        for (int f = 0; f < 4; f++)
            dbox[f] = live[f] ? k * dp[f] * (p[f] - (f & 1 ? cy : cx)) : 0.0f;
    }
    float cl = 0.0f, kc = d->cls_gain * scale;
    for (int c = 0; c < d->nc; c++) {
        float dz;
        cl += vt_det_bce(pred[(4 + c) * fs], c == gcls ? t : 0.0f, &dz);
        if (dpred) dpred[(4 + c) * fs] = kc * d->grad_scale * dz;
    }
    *cls_loss += kc * cl;
    if (dpred)
        for (int f = 0; f < 4; f++) dpred[f * fs] = dbox[f];
}

#endif
