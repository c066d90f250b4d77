/* Elementwise ops: fill, axpy, add, strided 2-D copy / axpy, activations, dropout, optimiser
 * steps.
 * All are memory-bound grid-stride loops; formulas follow the CPU backend's so results agree to
 * rounding (nvcc contracts a*b+c into FMAs, the reason they are not bit-identical). */
#include "cuda_internal.cuh"
#include "backend/optim_math.h"

/* ---- fill / axpy / add ------------------------------------------------------------------- */

__global__ void k_fill(float *x, size_t n, float v)
{
    VT_GRID_STRIDE(i, n) x[i] = v;
}

vt_status vt_cuda_fill(vt_backend *b, float *x, size_t n, float value)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    if (value == 0.0f && !signbit(value)) { /* +0.0f is all zero bits: the driver's memset */
        VT_CUDA_TRY(cudaMemsetAsync(x, 0, n * sizeof(float), cb->stream), "fill (cudaMemsetAsync)");
        return VT_OK;
    }
    return vt_cuda_launch(cb, n, "fill", k_fill, x, n, value);
}

__global__ void k_axpy(size_t n, float alpha, const float *x, float *y)
{
    VT_GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

vt_status vt_cuda_axpy(vt_backend *b, size_t n, float alpha, const float *x, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "axpy", k_axpy, n, alpha, x, y);
}

/* ---- strided 2-D copy / axpy (a flatcat's forward and backward) -------------------------- */

vt_status vt_cuda_copy2d(vt_backend *b, size_t rows, size_t cols, const float *src,
                         size_t src_pitch, float *dst, size_t dst_pitch)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (rows == 0 || cols == 0) return VT_OK;
    vt_status st = vt_pitch_check("copy2d", cols, src_pitch, dst_pitch);
    if (st != VT_OK) return st;
    VT_CUDA_GUARD(cb);
    /* the copy engine does the strided copy; pitches in bytes */
    VT_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch * sizeof(float), src, src_pitch * sizeof(float),
                                  cols * sizeof(float), rows, cudaMemcpyDeviceToDevice,
                                  cb->stream),
                "copy2d (cudaMemcpy2DAsync device to device)");
    return VT_OK;
}

__global__ void k_axpy2d(size_t rows, size_t cols, float alpha, const float *__restrict__ x,
                         size_t xp, float *__restrict__ y, size_t yp)
{
    VT_GRID_STRIDE(i, rows * cols)
    {
        size_t r = i / cols, j = i - r * cols;
        y[r * yp + j] += alpha * x[r * xp + j];
    }
}

vt_status vt_cuda_axpy2d(vt_backend *b, size_t rows, size_t cols, float alpha, const float *x,
                         size_t x_pitch, float *y, size_t y_pitch)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (rows == 0 || cols == 0) return VT_OK;
    vt_status st = vt_pitch_check("axpy2d", cols, x_pitch, y_pitch);
    if (st != VT_OK) return st;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, rows * cols, "axpy2d", k_axpy2d,
                          rows, cols, alpha, x, x_pitch, y, y_pitch);
}

/* No __restrict__: y may alias a or c, and each element is read before it is written. */
__global__ void k_add(size_t n, const float *a, const float *c, float *y)
{
    VT_GRID_STRIDE(i, n) y[i] = a[i] + c[i];
}

vt_status vt_cuda_add(vt_backend *b, size_t n, const float *a, const float *c, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "add", k_add, n, a, c, y);
}

/* ---- activations ------------------------------------------------------------------------- */

__device__ __forceinline__ float sigmoidf_(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

__global__ void k_act_forward(int act, float alpha, size_t n, const float *x, float *y)
{
    VT_GRID_STRIDE(i, n)
    {
        float v = x[i], r;
        switch (act) {
        case VT_ACT_RELU: r = v > 0.0f ? v : 0.0f; break;
        case VT_ACT_SILU: r = v * sigmoidf_(v); break;
        case VT_ACT_LEAKY: r = v > 0.0f ? v : alpha * v; break;
        case VT_ACT_SIGMOID: r = sigmoidf_(v); break;
        default: r = v; break;
        }
        y[i] = r;
    }
}

vt_status vt_cuda_act_forward(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                              float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (act < VT_ACT_NONE || act > VT_ACT_SIGMOID)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "act_forward: unknown activation %d", (int)act);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "act_forward", k_act_forward, (int)act, alpha, n, x, y);
}

/* The derivative is taken from the output y where that is exact (relu, leaky: y > 0 iff x > 0
 * for alpha > 0; sigmoid: y(1-y)), so an in-place forward (x overwritten by y) still works;
 * silu needs its input x.  A NULL y falls back to x. */
__global__ void k_act_backward(int act, float alpha, size_t n, const float *x, const float *y,
                               const float *dy, float *dx)
{
    VT_GRID_STRIDE(i, n)
    {
        float g = dy[i], d;
        switch (act) {
        case VT_ACT_RELU: d = (y ? y[i] : x[i]) > 0.0f ? g : 0.0f; break;
        case VT_ACT_LEAKY: d = (y ? y[i] : x[i]) > 0.0f ? g : alpha * g; break;
        case VT_ACT_SIGMOID: {
            float s = y ? y[i] : sigmoidf_(x[i]);
            d = g * s * (1.0f - s);
            break;
        }
        case VT_ACT_SILU: {
            float v = x[i], s = sigmoidf_(v);
            d = g * (s * (1.0f + v * (1.0f - s)));
            break;
        }
        default: d = g; break;
        }
        dx[i] += d;
    }
}

vt_status vt_cuda_act_backward(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                               const float *y, const float *dy, float *dx)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (act < VT_ACT_NONE || act > VT_ACT_SIGMOID)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "act_backward: unknown activation %d", (int)act);
    if (n == 0 || !dx) return VT_OK;
    if (act == VT_ACT_SILU && !x)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "act_backward: silu needs the input x");
    if (act != VT_ACT_NONE && !x && !y)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "act_backward: both x and y are NULL");
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "act_backward", k_act_backward, (int)act, alpha, n, x, y, dy, dx);
}

/* ---- dropout ----------------------------------------------------------------------------- */

__global__ void k_dropout_forward(size_t n, float p, float scale, uint64_t seed, const float *x,
                                  float *y, float *mask)
{
    VT_GRID_STRIDE(i, n)
    {
        /* core.h's vt_hash_uniform, compiled for the device: the CPU's masks bit for bit */
        float mk = vt_hash_uniform(seed, (uint64_t)i) >= p ? scale : 0.0f;
        if (mask) mask[i] = mk;
        y[i] = x[i] * mk;
    }
}

vt_status vt_cuda_dropout_forward(vt_backend *b, size_t n, float p, uint64_t seed, const float *x,
                                  float *y, float *mask)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (!(p >= 0.0f && p <= 1.0f))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "dropout: p=%g is outside [0, 1]", (double)p);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    float scale = 1.0f / (1.0f - p);
    return vt_cuda_launch(cb, n, "dropout_forward", k_dropout_forward,
                          n, p, scale, seed, x, y, mask);
}

__global__ void k_dropout_backward(size_t n, const float *mask, const float *dy, float *dx)
{
    VT_GRID_STRIDE(i, n) dx[i] += dy[i] * mask[i];
}

vt_status vt_cuda_dropout_backward(vt_backend *b, size_t n, const float *mask, const float *dy,
                                   float *dx)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (n == 0 || !dx) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "dropout_backward", k_dropout_backward, n, mask, dy, dx);
}

/* ---- optimisers -------------------------------------------------------------------------- */

__global__ void k_sgd(size_t n, float *p, const float *g, float *m, float lr, float momentum,
                      float wd, int nesterov)
{
    VT_GRID_STRIDE(i, n) vt_sgd_update(&p[i], g[i], &m[i], lr, momentum, wd, nesterov);
}

vt_status vt_cuda_sgd_step(vt_backend *b, size_t n, float *p, const float *g, float *m, float lr,
                           float momentum, float wd, int nesterov)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "sgd_step", k_sgd, n, p, g, m, lr, momentum, wd, nesterov);
}

__global__ void k_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr,
                        float beta1, float beta2, float eps, float wd, float bc1, float bc2)
{
    VT_GRID_STRIDE(i, n)
        vt_adamw_update(&p[i], g[i], &m[i], &v[i], lr, beta1, beta2, eps, wd, bc1, bc2);
}

vt_status vt_cuda_adamw_step(vt_backend *b, size_t n, float *p, const float *g, float *m, float *v,
                             float lr, float beta1, float beta2, float eps, float wd, float bc1,
                             float bc2)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (n == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, n, "adamw_step", k_adamw,
                          n, p, g, m, v, lr, beta1, beta2, eps, wd, bc1, bc2);
}
