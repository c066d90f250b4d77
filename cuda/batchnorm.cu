/* Batch normalisation over CNHW: a channel is one contiguous run of m = N*H*W values, so each
 * channel is reduced by one block with coalesced reads.  Statistics are computed in float with a
 * corrected two-pass scheme (mean first, then the sum of squared deviations minus the square of
 * their sum), which stays accurate where E[x^2]-E[x]^2 would cancel, without using doubles (slow
 * on sm_86/sm_89).
 * TODO(perf): with few channels and large m, one block per channel leaves SMs idle; split each
 * channel over several blocks (two-stage reduction) when channels < 2 * SM count. */
#include "block_reduce.cuh"
#include "cuda_internal.cuh"

#define BN_THREADS 512

/* Kahan summation; relies on nvcc not reassociating float adds (no --use_fast_math). */
__device__ __forceinline__ void kahan_add(float *sum, float *comp, float v)
{
    float y = v - *comp, t = *sum + y;
    *comp = (t - *sum) - y;
    *sum = t;
}

__global__ void k_bn_train(size_t m, const float *x, const float *gamma, const float *beta,
                           float eps, float momentum, float *running_mean, float *running_var,
                           float *save_mean, float *save_invstd, float *y)
{
    __shared__ float sh[64];
    int c = blockIdx.x;
    const float *xc = x + (size_t)c * m;
    /* Compensated per-thread sums: a channel can hold millions of values, and the errors of
     * the mean and variance feed every normalised output.  Free: the kernel is memory-bound. */
    float s = 0.0f, cs = 0.0f;
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) kahan_add(&s, &cs, xc[i]);
    float mean = block_sum(s, sh) / (float)m;

    float d1 = 0.0f, d2 = 0.0f, c2 = 0.0f;
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) {
        float d = xc[i] - mean;
        d1 += d;
        kahan_add(&d2, &c2, d * d);
    }
    block_sum2(&d1, &d2, sh);
    float var = (d2 - d1 * d1 / (float)m) / (float)m; /* biased */
    if (var < 0.0f) var = 0.0f;
    float invstd = 1.0f / sqrtf(var + eps);

    if (threadIdx.x == 0) {
        if (save_mean) save_mean[c] = mean;
        if (save_invstd) save_invstd[c] = invstd;
        if (running_mean) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean;
        if (running_var) {
            float unbiased = m > 1 ? var * ((float)m / (float)(m - 1)) : var;
            running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
        }
    }
    float g = gamma ? gamma[c] : 1.0f, bt = beta ? beta[c] : 0.0f;
    float scale = invstd * g;
    float *yc = y + (size_t)c * m; /* y may alias x: every read of xc above is complete */
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) yc[i] = (xc[i] - mean) * scale + bt;
}

vt_status vt_cuda_bn_forward_train(vt_backend *b, int channels, size_t m, const float *x,
                                   const float *gamma, const float *beta, float eps,
                                   float momentum, float *running_mean, float *running_var,
                                   float *save_mean, float *save_invstd, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0 || m == 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "bn_forward_train: channels=%d m=%zu", channels,
                       m);
    if (channels == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    k_bn_train<<<channels, BN_THREADS, 0, cb->stream>>>(m, x, gamma, beta, eps, momentum,
                                                        running_mean, running_var, save_mean,
                                                        save_invstd, y);
    return vt_cuda_check_launch("bn_forward_train");
}

__global__ void k_bn_eval(size_t total, size_t m, const float *x, const float *gamma,
                          const float *beta, float eps, const float *rmean, const float *rvar,
                          float *y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t c = i / m;
        float invstd = 1.0f / sqrtf(rvar[c] + eps);
        float g = gamma ? gamma[c] : 1.0f, bt = beta ? beta[c] : 0.0f;
        y[i] = (x[i] - rmean[c]) * (invstd * g) + bt;
    }
}

vt_status vt_cuda_bn_forward_eval(vt_backend *b, int channels, size_t m, const float *x,
                                  const float *gamma, const float *beta, float eps,
                                  const float *running_mean, const float *running_var, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "bn_forward_eval: channels < 0");
    size_t total = (size_t)channels * m;
    if (total == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    k_bn_eval<<<vt_cuda_grid(cb, total, VT_CUDA_THREADS), VT_CUDA_THREADS, 0, cb->stream>>>(
        total, m, x, gamma, beta, eps, running_mean, running_var, y);
    return vt_cuda_check_launch("bn_forward_eval");
}

/* dbeta = sum dy, dgamma = sum dy*xhat, dx += gamma*invstd/m * (m*dy - dbeta - xhat*dgamma). */
__global__ void k_bn_backward(size_t m, const float *x, const float *gamma, const float *mean,
                              const float *invstd, const float *dy, float *dx, float *dgamma,
                              float *dbeta)
{
    __shared__ float sh[64];
    int c = blockIdx.x;
    const float *xc = x + (size_t)c * m, *dyc = dy + (size_t)c * m;
    float mu = mean[c], is = invstd[c];
    float sdy = 0.0f, sdyx = 0.0f;
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) {
        float g = dyc[i];
        sdy += g;
        sdyx += g * (xc[i] - mu);
    }
    block_sum2(&sdy, &sdyx, sh);
    float dg = sdyx * is;
    if (threadIdx.x == 0) {
        if (dgamma) dgamma[c] = dg;
        if (dbeta) dbeta[c] = sdy;
    }
    if (!dx) return;
    float k = (gamma ? gamma[c] : 1.0f) * is / (float)m;
    float fm = (float)m;
    float *dxc = dx + (size_t)c * m;
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) {
        float xhat = (xc[i] - mu) * is;
        dxc[i] += k * (fm * dyc[i] - sdy - xhat * dg);
    }
}

vt_status vt_cuda_bn_backward(vt_backend *b, int channels, size_t m, const float *x,
                              const float *gamma, const float *save_mean,
                              const float *save_invstd, const float *dy, float *dx, float *dgamma,
                              float *dbeta)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0 || m == 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "bn_backward: channels=%d m=%zu", channels, m);
    if (channels == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    k_bn_backward<<<channels, BN_THREADS, 0, cb->stream>>>(m, x, gamma, save_mean, save_invstd, dy,
                                                           dx, dgamma, dbeta);
    return vt_cuda_check_launch("bn_backward");
}
