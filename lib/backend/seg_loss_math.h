/* The Dice term of the segmentation loss, shared by the CPU backend (cpu.c) and the CUDA backend
 * (cuda/reduce.cu) so that both compute the same loss and gradient.  Plain C99 that nvcc also
 * compiles as __host__ __device__.
 *
 * Over the labelled pixels i of a batch (label y_i in 0..K-1; -1 = ignored), with p_ik the
 * softmax probability of class k:
 *   I_k = sum_i p_ik [y_i = k],  C_k = sum_i p_ik + #{i : y_i = k}
 *   D_k = (2 I_k + 1) / (C_k + 1)            (soft Dice of class k, smoothed by 1)
 *   L   = weight * (1 - (1/K) sum_k D_k)
 * Every class counts, present or not: an absent class predicted nowhere has D_k = 1, one
 * predicted where it is absent is pushed down.  Unlike the per-pixel cross-entropy, each class
 * weighs the same whatever its area, which is what mean IoU rewards.
 *
 * Gradient.  dL/dp_ik = A_k [y_i = k] + B_k with
 *   A_k = -2 weight / (K (C_k + 1)),   B_k = weight (2 I_k + 1) / (K (C_k + 1)^2)
 * and through the softmax, dL/dz_ij = p_ij (dL/dp_ij - sum_k p_ik dL/dp_ik). */
#ifndef VT_SEG_LOSS_MATH_H
#define VT_SEG_LOSS_MATH_H

#include <stddef.h>
#include <stdint.h>

#include "backend/host_device.h"

/* D_k, the smoothed soft Dice of a class from its sums I_k and C_k. */
VT_HD double vt_dice_class(double inter, double card) { return (2.0 * inter + 1.0) / (card + 1.0); }

/* The coefficients of class k from its sums I_k and C_k. */
VT_HD void vt_dice_coef(int classes, float weight, double inter, double card, float *a,
                        float *b)
{
    double d = card + 1.0;
    *a = (float)(-2.0 * weight / (classes * d));
    *b = (float)(weight * (2.0 * inter + 1.0) / (classes * d * d));
}

/* The Dice gradient of pixel i (probabilities p[k * stride], label y >= 0), ADDED to
 * dz[k * stride]; ab holds A_k, B_k pairs. */
VT_HD void vt_dice_pixel_grad(int classes, const float *p, size_t stride, int32_t y,
                              const float *ab, float *dz)
{
    float dot = 0.0f;
    for (int k = 0; k < classes; k++) dot += p[(size_t)k * stride] * (ab[2 * k + 1] + (k == y ? ab[2 * k] : 0.0f));
    for (int k = 0; k < classes; k++) {
        float g = ab[2 * k + 1] + (k == y ? ab[2 * k] : 0.0f);
        dz[(size_t)k * stride] += p[(size_t)k * stride] * (g - dot);
    }
}

#endif
