/* The per-cell mathematics of the detection loss, shared by the CPU backend (cpu_detect.c) and
 * the CUDA backend (cuda/detect.cu) so that both compute exactly the same assignment, loss and
 * gradient.  Plain C99 that nvcc also compiles as __host__ __device__.
 *
 * HEAD LAYOUT.  The detector's output has 4 + nc channels per grid cell (CNHW, see backend.h).
 * Channels 0..3 are the raw box fields (dx, dy, lw, lh) of the cell at column x, row y of a grid
 * with `stride` input pixels per cell; the box they encode, in input pixels, is
 *   centre  (x + 0.5 + dx) * stride,  (y + 0.5 + dy) * stride
 *   size    stride * exp(lw), stride * exp(lh)     (lw, lh clamped to [VT_DET_LOG_MIN, MAX])
 * Channels 4..4+nc-1 are class logits (sigmoid, one independent probability per class).
 *
 * TARGET ASSIGNMENT (centre sampling, as FCOS / YOLOX do, plus the centre cell):
 * a cell is a candidate for ground truth g when
 *   - the cell holds g's centre, or
 *   - the cell's centre lies inside g's box and within `radius` cells of g's centre on both axes.
 * A cell that is a candidate for several boxes takes the one with the smallest area (ties: the
 * first).  Cells without a box are negatives.
 *
 * LOSS.  Over the batch, with P = the number of positive cells (at least 1):
 *   box = box_gain / P * sum over positives of (1 - GIoU(pred box, gt box))
 *   cls = cls_gain / P * sum over every cell and class of BCE(sigmoid(logit), target)
 * where target = 1 for the assigned class of a positive cell and 0 otherwise.  (An IoU-valued
 * target, as in varifocal / quality focal losses, was measured side by side on the synthetic
 * shapes: it learned slower, 0.59 vs 0.71 mAP50 and 0.46 vs 0.56 mAP50-95 after 25 epochs of
 * 300 images at 64 px, so the plain target is used.) */
#ifndef VT_DET_LOSS_MATH_H
#define VT_DET_LOSS_MATH_H

#include <math.h>

#ifdef __CUDACC__
#define VT_HD __host__ __device__ static inline
#else
#define VT_HD static inline
#endif

#define VT_DET_LOG_MIN (-6.0f)
#define VT_DET_LOG_MAX (7.0f)
#define VT_DET_GT_FIELDS 5 /* class (< 0: padding), x0, y0, x1, y1 in input pixels */

/* The ground-truth index assigned to cell (x, y), or -1.  gt: max_gt records of 5 floats. */
VT_HD int vt_det_assign_cell(const float *gt, int max_gt, int x, int y, int gw, int gh,
                             float stride, float radius)
{
    float cx = ((float)x + 0.5f) * stride, cy = ((float)y + 0.5f) * stride;
    int best = -1;
    float best_area = 0.0f;
    for (int j = 0; j < max_gt; j++) {
        const float *g = gt + j * VT_DET_GT_FIELDS;
        if (g[0] < 0.0f) continue;
        float gcx = 0.5f * (g[1] + g[3]), gcy = 0.5f * (g[2] + g[4]);
        int ix = (int)floorf(gcx / stride), iy = (int)floorf(gcy / stride);
        ix = ix < 0 ? 0 : ix >= gw ? gw - 1 : ix;
        iy = iy < 0 ? 0 : iy >= gh ? gh - 1 : iy;
        int cand = ix == x && iy == y;
        if (!cand)
            cand = cx > g[1] && cx < g[3] && cy > g[2] && cy < g[4] &&
                   fabsf(cx - gcx) <= radius * stride && fabsf(cy - gcy) <= radius * stride;
        if (!cand) continue;
        float area = (g[3] - g[1]) * (g[4] - g[2]);
        if (best < 0 || area < best_area) {
            best = j;
            best_area = area;
        }
    }
    return best;
}

/* Decode the raw box fields of cell (x, y) into corners (input pixels).  Also returns the
 * clamped exponentials' derivative switches through *lw_live / *lh_live when non-NULL. */
VT_HD void vt_det_decode_box(float dx, float dy, float lw, float lh, int x, int y, float stride,
                             float box[4], int *lw_live, int *lh_live)
{
    float cw = lw < VT_DET_LOG_MIN ? VT_DET_LOG_MIN : lw > VT_DET_LOG_MAX ? VT_DET_LOG_MAX : lw;
    float ch = lh < VT_DET_LOG_MIN ? VT_DET_LOG_MIN : lh > VT_DET_LOG_MAX ? VT_DET_LOG_MAX : lh;
    if (lw_live) *lw_live = cw == lw;
    if (lh_live) *lh_live = ch == lh;
    float bx = ((float)x + 0.5f + dx) * stride, by = ((float)y + 0.5f + dy) * stride;
    float bw = stride * expf(cw), bh = stride * expf(ch);
    box[0] = bx - 0.5f * bw;
    box[1] = by - 0.5f * bh;
    box[2] = bx + 0.5f * bw;
    box[3] = by + 0.5f * bh;
}

/* GIoU of box p with box g (corners) and its gradient with respect to p's corners; *iou gets
 * the plain IoU.  Both boxes must have positive width and height. */
VT_HD float vt_det_giou(const float p[4], const float g[4], float *iou, float dp[4])
{
    float ix0 = fmaxf(p[0], g[0]), iy0 = fmaxf(p[1], g[1]);
    float ix1 = fminf(p[2], g[2]), iy1 = fminf(p[3], g[3]);
    float iw = ix1 - ix0, ih = iy1 - iy0;
    int overlap = iw > 0.0f && ih > 0.0f;
    float I = overlap ? iw * ih : 0.0f;
    float pw = p[2] - p[0], ph = p[3] - p[1];
    float Ap = pw * ph, Ag = (g[2] - g[0]) * (g[3] - g[1]);
    float U = Ap + Ag - I;
    float cw = fmaxf(p[2], g[2]) - fminf(p[0], g[0]);
    float chh = fmaxf(p[3], g[3]) - fminf(p[1], g[1]);
    float C = cw * chh;
    float io = I / U;
    *iou = io;
    /* GIoU = I/U - 1 + U/C, with U = Ap + Ag - I */
    float dI = 1.0f / U + I / (U * U) - 1.0f / C;
    float dA = -I / (U * U) + 1.0f / C;
    float dC = -U / (C * C);
    float dIx0 = overlap && p[0] > g[0] ? -ih : 0.0f, dIx1 = overlap && p[2] < g[2] ? ih : 0.0f;
    float dIy0 = overlap && p[1] > g[1] ? -iw : 0.0f, dIy1 = overlap && p[3] < g[3] ? iw : 0.0f;
    float dCx0 = p[0] < g[0] ? -chh : 0.0f, dCx1 = p[2] > g[2] ? chh : 0.0f;
    float dCy0 = p[1] < g[1] ? -cw : 0.0f, dCy1 = p[3] > g[3] ? cw : 0.0f;
    dp[0] = dI * dIx0 + dA * -ph + dC * dCx0;
    dp[2] = dI * dIx1 + dA * ph + dC * dCx1;
    dp[1] = dI * dIy0 + dA * -pw + dC * dCy0;
    dp[3] = dI * dIy1 + dA * pw + dC * dCy1;
    return io - 1.0f + U / C;
}

/* Binary cross-entropy of sigmoid(z) against target t, and its derivative in z. */
VT_HD float vt_det_bce(float z, float t, float *dz)
{
    float e = expf(-fabsf(z));
    float s = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    *dz = s - t;
    return fmaxf(z, 0.0f) - z * t + log1pf(e);
}

/* Loss of one cell (x, y) of one image.  pred / dpred point at the cell's channel 0; field f
 * is at f * fs.  g: the assigned ground truth (NULL for a negative).  scale = 1 / P.
 * Adds the cell's box and class terms (already scaled) to *box_loss / *cls_loss and, when
 * dpred is non-NULL, ASSIGNS the cell's 4 + nc gradients multiplied by grad_scale. */
VT_HD void vt_det_cell_loss(const float *pred, long fs, int nc, int x, int y, float stride,
                            const float *g, float scale, float box_gain, float cls_gain,
                            float grad_scale, float *box_loss, float *cls_loss, float *dpred)
{
    int gcls = -1;
    float dbox[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (g) {
        int lw_live, lh_live;
        float p[4], dp[4], iou;
        vt_det_decode_box(pred[0], pred[fs], pred[2 * fs], pred[3 * fs], x, y, stride, p,
                          &lw_live, &lh_live);
        float giou = vt_det_giou(p, g + 1, &iou, dp);
        *box_loss += box_gain * scale * (1.0f - giou);
        (void)iou;
        gcls = (int)g[0];
        /* d(1 - giou)/d corners = -dp; corners from (bx, by, bw, bh): x0 = bx - bw/2 ... */
        float k = -box_gain * scale * grad_scale;
        float bw = p[2] - p[0], bh = p[3] - p[1];
        dbox[0] = k * stride * (dp[0] + dp[2]);
        dbox[1] = k * stride * (dp[1] + dp[3]);
        dbox[2] = lw_live ? k * bw * 0.5f * (dp[2] - dp[0]) : 0.0f;
        dbox[3] = lh_live ? k * bh * 0.5f * (dp[3] - dp[1]) : 0.0f;
    }
    float cl = 0.0f;
    for (int c = 0; c < nc; c++) {
        float dz;
        cl += vt_det_bce(pred[(4 + c) * fs], c == gcls ? 1.0f : 0.0f, &dz);
        if (dpred) dpred[(4 + c) * fs] = cls_gain * scale * grad_scale * dz;
    }
    *cls_loss += cls_gain * scale * cl;
    if (dpred)
        for (int f = 0; f < 4; f++) dpred[f * fs] = dbox[f];
}

#endif
