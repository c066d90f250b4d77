/* Batch normalisation over CNHW (a channel is one contiguous run of m = N*H*W values), alone or
 * fused with the ReLU or SiLU that follows it (template argument ACT: a vt_act, 0 for none).
 *
 * Every pass is split over the whole GPU: a channel's run is cut into S slices (S chosen so that
 * about 8 blocks per SM are busy even with few channels), each block reduces one slice, a small
 * kernel combines a channel's S partial results in a fixed order, and the element-wise pass runs
 * on a 2-D grid (slices x channels).  Results are deterministic for a device (S depends on its SM
 * count only, never on timing; no atomics).
 *
 * Statistics: each thread sums its values shifted by the first value it reads (the "shifted
 * data" algorithm: no cancellation as long as that value is typical of the channel), turns them
 * into (count, mean, M2), and threads, blocks and slices are merged with Chan's pairwise formula,
 * which is exact in exact arithmetic and stable in float.  No doubles (slow on sm_86/sm_89).
 *
 * Scratch: the partial results and per-channel coefficients live in the backend's scratch
 * buffer (stream order makes its reuse by the next op safe). */
#include "block_reduce.cuh"
#include "cuda_internal.cuh"

#define BN_THREADS 256
#define BN_FIN_THREADS 32     /* one warp combines a channel's slices */
#define BN_MIN_SLICE 4096     /* values per slice at least (fewer: the launch dominates) */
#define BN_MAX_SLICES 1024
#define BN_APPLY_PER_THREAD 4 /* values per thread of the element-wise passes */

/* Slices per channel. */
static int bn_slices(const vt_cuda_backend *cb, int channels, size_t m)
{
    size_t target = (size_t)(cb->sm_count > 0 ? cb->sm_count : 80) * 8;
    size_t s = (target + (size_t)channels - 1) / (size_t)channels;
    size_t most = (m + BN_MIN_SLICE - 1) / BN_MIN_SLICE;
    if (s > most) s = most;
    if (s > BN_MAX_SLICES) s = BN_MAX_SLICES;
    return s < 1 ? 1 : (int)s;
}

/* Grid of the element-wise passes: blocks along each channel's run x channels (y, capped; the
 * kernels loop over channels beyond the cap). */
static dim3 bn_apply_grid(int channels, size_t m)
{
    size_t per_block = (size_t)BN_THREADS * BN_APPLY_PER_THREAD;
    size_t bx = (m + per_block - 1) / per_block;
    if (bx > 65535) bx = 65535;
    return dim3((unsigned)(bx < 1 ? 1 : bx), (unsigned)(channels < 65535 ? channels : 65535));
}

/* The instance of a kernel template for the fused activation act (VT_ACT_RELU, VT_ACT_SILU;
 * anything else: none). */
#define BN_FOR_ACT(kernel, act)                                                                  \
    ((act) == VT_ACT_RELU   ? kernel<VT_ACT_RELU>                                                \
     : (act) == VT_ACT_SILU ? kernel<VT_ACT_SILU>                                                \
                            : kernel<VT_ACT_NONE>)

/* (count, mean, M2) of a set of values, merged pairwise (Chan et al.). */
struct bn_moments {
    float n, mean, m2;
};

__device__ __forceinline__ bn_moments bn_merge(bn_moments a, bn_moments b)
{
    float n = a.n + b.n;
    if (b.n == 0.0f) return a;
    if (a.n == 0.0f) return b;
    float delta = b.mean - a.mean, fb = b.n / n;
    bn_moments r;
    r.n = n;
    r.mean = a.mean + delta * fb;
    r.m2 = a.m2 + b.m2 + delta * delta * a.n * fb;
    return r;
}

__device__ __forceinline__ bn_moments bn_warp_merge(bn_moments v)
{
    for (int o = 16; o > 0; o >>= 1) {
        bn_moments w;
        w.n = __shfl_xor_sync(0xffffffffu, v.n, o);
        w.mean = __shfl_xor_sync(0xffffffffu, v.mean, o);
        w.m2 = __shfl_xor_sync(0xffffffffu, v.m2, o);
        /* Both partners compute the same merge in the same order (lower lane first). */
        v = (threadIdx.x & o) ? bn_merge(w, v) : bn_merge(v, w);
    }
    return v;
}

/* Slice range of block `s` of S over a run of m values. */
__device__ __forceinline__ void bn_slice(size_t m, int S, int s, size_t *lo, size_t *hi)
{
    size_t len = (m + (size_t)S - 1) / (size_t)S;
    *lo = (size_t)s * len;
    *hi = *lo + len < m ? *lo + len : m;
}

/* Pass 1 of training: moments of each slice -> part[(c*S + s)]. */
__global__ void k_bn_moments(size_t m, int S, const float *x, bn_moments *part)
{
    __shared__ bn_moments sh[BN_THREADS / 32];
    int c = blockIdx.y, s = blockIdx.x;
    size_t lo, hi;
    bn_slice(m, S, s, &lo, &hi);
    const float *xc = x + (size_t)c * m;
    float k = 0.0f, s1 = 0.0f, s2 = 0.0f, n = 0.0f;
    size_t i = lo + threadIdx.x;
    if (i < hi) k = xc[i];
    for (; i < hi; i += BN_THREADS) {
        float d = xc[i] - k;
        s1 += d;
        s2 += d * d;
        n += 1.0f;
    }
    bn_moments v = {n, 0.0f, 0.0f};
    if (n > 0.0f) {
        v.mean = k + s1 / n;
        v.m2 = fmaxf(s2 - s1 * (s1 / n), 0.0f);
    }
    v = bn_warp_merge(v);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        bn_moments t = lane < BN_THREADS / 32 ? sh[lane] : bn_moments{0.0f, 0.0f, 0.0f};
        t = bn_warp_merge(t);
        if (lane == 0) part[(size_t)c * S + s] = t;
    }
}

/* Pass 2 of training: one warp per channel merges its slices, saves the statistics, updates
 * the running ones and leaves mean and scale = gamma*invstd in coef[2c], coef[2c+1]. */
__global__ void k_bn_stats(size_t m, int S, const bn_moments *part, const float *gamma,
                           float eps, float momentum, float *running_mean, float *running_var,
                           float *save_mean, float *save_invstd, float *coef)
{
    int c = blockIdx.x, lane = threadIdx.x;
    bn_moments v = {0.0f, 0.0f, 0.0f};
    for (int s = lane; s < S; s += 32) v = bn_merge(v, part[(size_t)c * S + s]);
    v = bn_warp_merge(v);
    if (lane != 0) return;
    float var = v.m2 / (float)m; /* biased */
    float invstd = 1.0f / sqrtf(var + eps); /* not rsqrtf: stays close to the CPU reference */
    if (save_mean) save_mean[c] = v.mean;
    if (save_invstd) save_invstd[c] = invstd;
    if (running_mean) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * v.mean;
    if (running_var) {
        float unbiased = m > 1 ? var * ((float)m / (float)(m - 1)) : var;
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
    }
    coef[2 * c] = v.mean;
    coef[2 * c + 1] = invstd * (gamma ? gamma[c] : 1.0f);
}

/* The fused activation of the BN's output v, and its derivative times the incoming gradient g
 * (ReLU: from its output y; SiLU: from v itself, recomputed by the caller). */
template <int ACT> __device__ __forceinline__ float bn_act(float v)
{
    if (ACT == VT_ACT_RELU) return fmaxf(v, 0.0f);
    if (ACT == VT_ACT_SILU) return v / (1.0f + expf(-v));
    return v;
}

template <int ACT> __device__ __forceinline__ float bn_act_grad(float g, float y, float v)
{
    if (ACT == VT_ACT_RELU) return y > 0.0f ? g : 0.0f;
    if (ACT == VT_ACT_SILU) {
        float sg = 1.0f / (1.0f + expf(-v));
        return g * sg * (1.0f + v * (1.0f - sg));
    }
    return g;
}

/* The element-wise pass over the block's share of one channel's run of m values:
 * yc = act((xc - mean) * scale + bt).  yc may alias xc. */
template <int ACT>
__device__ __forceinline__ void bn_apply_channel(size_t m, const float *xc, float mean,
                                                 float scale, float bt, float *yc)
{
    for (size_t i = blockIdx.x * (size_t)BN_THREADS + threadIdx.x; i < m;
         i += (size_t)gridDim.x * BN_THREADS) {
        float v = (xc[i] - mean) * scale + bt;
        yc[i] = bn_act<ACT>(v);
    }
}

/* y = act((x - mean) * scale + beta).  y may alias x. */
template <int ACT>
__global__ void k_bn_apply(int channels, size_t m, const float *x, const float *coef,
                           const float *beta, float *y)
{
    for (int c = blockIdx.y; c < channels; c += gridDim.y) {
        float mean = coef[2 * c], scale = coef[2 * c + 1], bt = beta ? beta[c] : 0.0f;
        bn_apply_channel<ACT>(m, x + (size_t)c * m, mean, scale, bt, y + (size_t)c * m);
    }
}

static vt_status bn_train(vt_backend *b, int channels, size_t m, const float *x,
                          const float *gamma, const float *beta, float eps, float momentum,
                          float *running_mean, float *running_var, float *save_mean,
                          float *save_invstd, float *y, int act, const char *op)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0 || m == 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: channels=%d m=%zu", op, channels, m);
    if (channels == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    int S = bn_slices(cb, channels, m);
    size_t part_bytes = (size_t)channels * S * sizeof(bn_moments);
    vt_status st = vt_cuda_scratch(cb, part_bytes + (size_t)channels * 2 * sizeof(float));
    if (st != VT_OK) return st;
    bn_moments *part = (bn_moments *)cb->scratch;
    float *coef = (float *)((char *)cb->scratch + part_bytes);
    /* gridDim.y is at most 65535: channels beyond it go in further launches. */
    for (int c0 = 0; c0 < channels; c0 += 65535) {
        int nc = channels - c0 < 65535 ? channels - c0 : 65535;
        st = vt_cuda_launch_shape(cb, dim3((unsigned)S, (unsigned)nc), BN_THREADS, 0, op,
                                  k_bn_moments, m, S, x + (size_t)c0 * m, part + (size_t)c0 * S);
        if (st != VT_OK) return st;
    }
    st = vt_cuda_launch_shape(cb, channels, BN_FIN_THREADS, 0, op, k_bn_stats, m, S, part, gamma,
                              eps, momentum, running_mean, running_var, save_mean, save_invstd,
                              coef);
    if (st != VT_OK) return st;
    return vt_cuda_launch_shape(cb, bn_apply_grid(channels, m), BN_THREADS, 0, op,
                                BN_FOR_ACT(k_bn_apply, act), channels, m, x, coef, beta, y);
}

vt_status vt_cuda_bn_forward_train(vt_backend *b, int channels, size_t m, const float *x,
                                   const float *gamma, const float *beta, float eps,
                                   float momentum, float *running_mean, float *running_var,
                                   float *save_mean, float *save_invstd, float *y)
{
    return bn_train(b, channels, m, x, gamma, beta, eps, momentum, running_mean, running_var,
                    save_mean, save_invstd, y, VT_ACT_NONE, "bn_forward_train");
}

vt_status vt_cuda_bn_act_forward_train(vt_backend *b, vt_act act, int channels, size_t m,
                                       const float *x, const float *gamma, const float *beta,
                                       float eps, float momentum, float *running_mean,
                                       float *running_var, float *save_mean, float *save_invstd,
                                       float *y)
{
    vt_status st = vt_bn_act_check(act, "bn_act_forward_train");
    if (st != VT_OK) return st;
    return bn_train(b, channels, m, x, gamma, beta, eps, momentum, running_mean, running_var,
                    save_mean, save_invstd, y, act, "bn_act_forward_train");
}

/* Evaluation: y = act((x - running_mean) * gamma / sqrt(running_var + eps) + beta). */
template <int ACT>
__global__ void k_bn_eval(int channels, size_t m, const float *x, const float *gamma,
                          const float *beta, float eps, const float *rmean, const float *rvar,
                          float *y)
{
    for (int c = blockIdx.y; c < channels; c += gridDim.y) {
        float mean = rmean[c], scale = (gamma ? gamma[c] : 1.0f) / sqrtf(rvar[c] + eps);
        float bt = beta ? beta[c] : 0.0f;
        bn_apply_channel<ACT>(m, x + (size_t)c * m, mean, scale, bt, y + (size_t)c * m);
    }
}

static vt_status bn_eval(vt_backend *b, int channels, size_t m, const float *x,
                         const float *gamma, const float *beta, float eps,
                         const float *running_mean, const float *running_var, float *y, int act,
                         const char *op)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: channels < 0", op);
    if (channels == 0 || m == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch_shape(cb, bn_apply_grid(channels, m), BN_THREADS, 0, op,
                                BN_FOR_ACT(k_bn_eval, act), channels, m, x, gamma, beta, eps,
                                running_mean, running_var, y);
}

vt_status vt_cuda_bn_forward_eval(vt_backend *b, int channels, size_t m, const float *x,
                                  const float *gamma, const float *beta, float eps,
                                  const float *running_mean, const float *running_var, float *y)
{
    return bn_eval(b, channels, m, x, gamma, beta, eps, running_mean, running_var, y,
                   VT_ACT_NONE, "bn_forward_eval");
}

vt_status vt_cuda_bn_act_forward_eval(vt_backend *b, vt_act act, int channels, size_t m,
                                      const float *x, const float *gamma, const float *beta,
                                      float eps, const float *running_mean,
                                      const float *running_var, float *y)
{
    vt_status st = vt_bn_act_check(act, "bn_act_forward_eval");
    if (st != VT_OK) return st;
    return bn_eval(b, channels, m, x, gamma, beta, eps, running_mean, running_var, y, act,
                   "bn_act_forward_eval");
}

/* Backward.  With g = dy through the fused activation (bn_act_grad; SiLU recomputes the BN's
 * output v = (x - mean) * invstd * gamma + beta, as the forward computed it):
 *   dbeta = sum g,  dgamma = invstd * sum g*(x - mean),
 *   dx += gamma*invstd/m * (m*g - dbeta - xhat*dgamma).
 * Pass 1: per slice, the two sums -> part[2*(c*S + s)]. */
template <int ACT>
__global__ void k_bn_grad_sums(size_t m, int S, const float *x, const float *y,
                               const float *mean, const float *invstd, const float *gamma,
                               const float *beta, const float *dy, float *part)
{
    __shared__ float sh[64];
    int c = blockIdx.y, s = blockIdx.x;
    size_t lo, hi;
    bn_slice(m, S, s, &lo, &hi);
    size_t off = (size_t)c * m;
    float mu = mean[c], sg = 0.0f, sgx = 0.0f;
    float sc = ACT == VT_ACT_SILU ? invstd[c] * (gamma ? gamma[c] : 1.0f) : 0.0f;
    float bt = ACT == VT_ACT_SILU && beta ? beta[c] : 0.0f;
    for (size_t i = lo + threadIdx.x; i < hi; i += BN_THREADS) {
        float g = bn_act_grad<ACT>(dy[off + i], ACT == VT_ACT_RELU ? y[off + i] : 0.0f,
                                   ACT == VT_ACT_SILU ? (x[off + i] - mu) * sc + bt : 0.0f);
        sg += g;
        sgx += g * (x[off + i] - mu);
    }
    block_sum2(&sg, &sgx, sh);
    if (threadIdx.x == 0) {
        part[2 * ((size_t)c * S + s)] = sg;
        part[2 * ((size_t)c * S + s) + 1] = sgx;
    }
}

/* Pass 2: one warp per channel adds its slices in a fixed order; writes dgamma, dbeta and the
 * coefficients of pass 3: coef[3c] = gamma*invstd/m, coef[3c+1] = dbeta, coef[3c+2] = dgamma. */
__global__ void k_bn_grad_stats(int S, const float *part, const float *gamma,
                                const float *invstd, float inv_m, float *dgamma, float *dbeta,
                                float *coef)
{
    int c = blockIdx.x, lane = threadIdx.x;
    float sg = 0.0f, sgx = 0.0f;
    for (int s = lane; s < S; s += 32) {
        sg += part[2 * ((size_t)c * S + s)];
        sgx += part[2 * ((size_t)c * S + s) + 1];
    }
    sg = warp_sum(sg);
    sgx = warp_sum(sgx);
    if (lane != 0) return;
    float is = invstd[c], dg = sgx * is;
    if (dgamma) dgamma[c] = dg;
    if (dbeta) dbeta[c] = sg;
    coef[3 * c] = (gamma ? gamma[c] : 1.0f) * is * inv_m;
    coef[3 * c + 1] = sg;
    coef[3 * c + 2] = dg;
}

/* Pass 3: dx += k * (m*g - dbeta - xhat*dgamma). */
template <int ACT>
__global__ void k_bn_grad_apply(int channels, size_t m, const float *x, const float *y,
                                const float *mean, const float *invstd, const float *gamma,
                                const float *beta, const float *dy, const float *coef, float *dx)
{
    float fm = (float)m;
    for (int c = blockIdx.y; c < channels; c += gridDim.y) {
        float k = coef[3 * c], sg = coef[3 * c + 1], dg = coef[3 * c + 2];
        float mu = mean[c], is = invstd[c];
        float sc = ACT == VT_ACT_SILU ? is * (gamma ? gamma[c] : 1.0f) : 0.0f;
        float bt = ACT == VT_ACT_SILU && beta ? beta[c] : 0.0f;
        size_t off = (size_t)c * m;
        for (size_t i = blockIdx.x * (size_t)BN_THREADS + threadIdx.x; i < m;
             i += (size_t)gridDim.x * BN_THREADS) {
            float g = bn_act_grad<ACT>(dy[off + i], ACT == VT_ACT_RELU ? y[off + i] : 0.0f,
                                       ACT == VT_ACT_SILU ? (x[off + i] - mu) * sc + bt : 0.0f);
            float xhat = (x[off + i] - mu) * is;
            dx[off + i] += k * (fm * g - sg - xhat * dg);
        }
    }
}

static vt_status bn_back(vt_backend *b, int channels, size_t m, const float *x, const float *y,
                         const float *gamma, const float *beta, const float *save_mean,
                         const float *save_invstd, const float *dy, float *dx, float *dgamma,
                         float *dbeta, int act, const char *op)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (channels < 0 || m == 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: channels=%d m=%zu", op, channels, m);
    if (channels == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    int S = bn_slices(cb, channels, m);
    size_t part_bytes = (size_t)channels * S * 2 * sizeof(float);
    vt_status st = vt_cuda_scratch(cb, part_bytes + (size_t)channels * 3 * sizeof(float));
    if (st != VT_OK) return st;
    float *part = (float *)cb->scratch;
    float *coef = (float *)((char *)cb->scratch + part_bytes);
    for (int c0 = 0; c0 < channels; c0 += 65535) {
        int nc = channels - c0 < 65535 ? channels - c0 : 65535;
        size_t off = (size_t)c0 * m;
        dim3 grid((unsigned)S, (unsigned)nc);
        const float *g0 = gamma ? gamma + c0 : NULL, *b0 = beta ? beta + c0 : NULL;
        float *p0 = part + 2 * (size_t)c0 * S;
        /* only the ReLU reads y (its mask); the others get NULL */
        const float *y0 = act == VT_ACT_RELU ? y + off : nullptr;
        st = vt_cuda_launch_shape(cb, grid, BN_THREADS, 0, op, BN_FOR_ACT(k_bn_grad_sums, act), m,
                                  S, x + off, y0, save_mean + c0, save_invstd + c0, g0, b0,
                                  dy + off, p0);
        if (st != VT_OK) return st;
    }
    st = vt_cuda_launch_shape(cb, channels, BN_FIN_THREADS, 0, op, k_bn_grad_stats, S, part,
                              gamma, save_invstd, 1.0f / (float)m, dgamma, dbeta, coef);
    if (st != VT_OK || !dx) return st;
    return vt_cuda_launch_shape(cb, bn_apply_grid(channels, m), BN_THREADS, 0, op,
                                BN_FOR_ACT(k_bn_grad_apply, act), channels, m, x,
                                act == VT_ACT_RELU ? y : nullptr, save_mean, save_invstd, gamma,
                                beta, dy, coef, dx);
}

/* dx_add = 0: dx zero-filled first, then the accumulating kernels (as the executor did before
 * the op took dx_add). */
static vt_status bn_dx_start(vt_backend *b, int channels, size_t m, float *dx, int dx_add)
{
    if (dx_add || !dx || channels <= 0) return VT_OK;
    return vt_cuda_fill(b, dx, (size_t)channels * m, 0.0f);
}

vt_status vt_cuda_bn_backward(vt_backend *b, int channels, size_t m, const float *x,
                              const float *gamma, const float *save_mean,
                              const float *save_invstd, const float *dy, float *dx, int dx_add,
                              float *dgamma, float *dbeta)
{
    vt_status st = bn_dx_start(b, channels, m, dx, dx_add);
    if (st != VT_OK) return st;
    return bn_back(b, channels, m, x, NULL, gamma, NULL, save_mean, save_invstd, dy, dx, dgamma,
                   dbeta, VT_ACT_NONE, "bn_backward");
}

vt_status vt_cuda_bn_act_backward(vt_backend *b, vt_act act, int channels, size_t m,
                                  const float *x, const float *y, const float *gamma,
                                  const float *beta, const float *save_mean,
                                  const float *save_invstd, const float *dy, float *dx,
                                  int dx_add, float *dgamma, float *dbeta)
{
    vt_status st = vt_bn_act_check(act, "bn_act_backward");
    if (st == VT_OK) st = bn_dx_start(b, channels, m, dx, dx_add);
    if (st != VT_OK) return st;
    return bn_back(b, channels, m, x, y, gamma, beta, save_mean, save_invstd, dy, dx, dgamma,
                   dbeta, act, "bn_act_backward");
}
