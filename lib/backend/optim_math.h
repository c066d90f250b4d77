/* The per-element optimiser updates (backend.h's sgd_step and adamw_step), shared by the CPU
 * backend (cpu.c) and the CUDA backend (cuda/elementwise.cu) so that both apply the same
 * formula in the same order.  Plain C99 that nvcc also compiles as __host__ __device__. */
#ifndef VT_OPTIM_MATH_H
#define VT_OPTIM_MATH_H

#include <math.h>

#include "backend/host_device.h"

/* g' = g + wd*p;  m = momentum*m + g';  p -= lr * (nesterov ? g' + momentum*m : m) */
VT_HD void vt_sgd_update(float *p, float g, float *m, float lr, float momentum, float wd,
                         int nesterov)
{
    float gw = g + wd * *p;
    float mi = momentum * *m + gw;
    *m = mi;
    *p -= lr * (nesterov ? gw + momentum * mi : mi);
}

/* p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
 * p -= lr * (m/bc1) / (sqrt(v/bc2) + eps) */
VT_HD void vt_adamw_update(float *p, float g, float *m, float *v, float lr, float beta1,
                           float beta2, float eps, float wd, float bc1, float bc2)
{
    float pi = *p * (1.0f - lr * wd);
    float mi = beta1 * *m + (1.0f - beta1) * g;
    float vi = beta2 * *v + (1.0f - beta2) * g * g;
    *m = mi;
    *v = vi;
    *p = pi - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}

#endif
