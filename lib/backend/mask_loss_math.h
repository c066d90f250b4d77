/* The instance-mask loss (YOLACT, YOLOv8-seg), shared by the CPU backend (cpu_detect.c) and the
 * CUDA backend (cuda/) so that both compute the same loss and gradient.  Plain C99 that nvcc also
 * compiles as __host__ __device__.
 *
 * A model predicts k prototype masks per image, proto[c][p] over the mask grid's pixels p
 * (mh x mw, the input at 1/stride), and k coefficients per anchor, coef[c][a].  The mask logit of
 * anchor a at p is
 *   z_ap = sum_c coef[c][a] proto[c][p].
 * Each positive anchor a (assigned by the detection loss to ground truth j of its image, whose
 * pixels are those of the instance map equal to j + 1) is taught its object's mask inside its
 * object's box, the box B_j in mask pixels (the pixels whose centre lies in it), by the binary
 * cross-entropy with logits, normalised by the box area (so a small object weighs as a large one):
 *   L_a = (1 / max(|B_j|, 1)) sum_{p in B_j} bce(z_ap, [inst(p) = j + 1])
 *   L   = gain * sum_a L_a / max(P, 1)                     (P positive anchors of the batch)
 * Gradient: dL/dz_ap = gain (sigmoid(z_ap) - t_ap) / (max(|B_j|, 1) max(P, 1)) on B_j, 0 elsewhere;
 *   dL/dcoef[c][a] = sum_p dL/dz_ap proto[c][p],   dL/dproto[c][p] = sum_a dL/dz_ap coef[c][a]. */
#ifndef VT_MASK_LOSS_MATH_H
#define VT_MASK_LOSS_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/host_device.h"

/* Ground truth j's box (x0, y0, x1, y1 in input pixels) as the mask pixel ranges [c0, c1) x
 * [r0, r1) whose centres lie inside it, clipped to the grid; the count is returned (0: empty). */
VT_HD int vt_mask_box(const float *box, float mstride, int mh, int mw, int *r0, int *r1, int *c0,
                      int *c1)
{
    /* centre of pixel c is (c + 0.5) * mstride: inside when x0 <= it < x1 */
    int a = (int)ceilf(box[0] / mstride - 0.5f), b = (int)ceilf(box[2] / mstride - 0.5f);
    int c = (int)ceilf(box[1] / mstride - 0.5f), d = (int)ceilf(box[3] / mstride - 0.5f);
    *c0 = a < 0 ? 0 : a > mw ? mw : a;
    *c1 = b < 0 ? 0 : b > mw ? mw : b;
    *r0 = c < 0 ? 0 : c > mh ? mh : c;
    *r1 = d < 0 ? 0 : d > mh ? mh : d;
    if (*c1 < *c0) *c1 = *c0;
    if (*r1 < *r0) *r1 = *r0;
    return (*c1 - *c0) * (*r1 - *r0);
}

/* bce(z, t) with logits, stably: max(z, 0) - z t + log(1 + exp(-|z|)). */
VT_HD float vt_mask_bce(float z, float t)
{
    return fmaxf(z, 0.0f) - z * t + log1pf(expf(-fabsf(z)));
}

VT_HD float vt_mask_sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

#endif
