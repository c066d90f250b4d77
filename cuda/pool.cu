/* Max/average pooling and x2 nearest upsampling over planes of h x w.
 * Backward passes gather (one thread per input cell, visiting the outputs whose window covers
 * it) instead of scattering with atomics: deterministic, and the contributions are added in
 * the order the CPU backend's output loop adds them. */
#include "cuda_internal.cuh"

static vt_status check_pool(const vt_pool_desc *d, const char *op)
{
    if (!d || d->planes < 0 || d->h < 1 || d->w < 1 || d->ho < 0 || d->wo < 0 || d->k < 1 ||
        d->s < 1 || d->p < 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: bad pooling shape", op);
    return VT_OK;
}

/* Outputs o (along one axis, 0 <= o < no) whose window [o*s - p, o*s - p + k) covers i. */
__device__ __forceinline__ void covering(int i, int k, int s, int p, int no, int *lo, int *hi)
{
    int first = i + p - k + 1; /* smallest window start that still covers i */
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    int last = (i + p) / s;
    *hi = last < no - 1 ? last : no - 1;
}

/* Index arithmetic in I: unsigned 32-bit when the launch fits (64-bit division is slow). */
template <typename I>
__global__ void k_maxpool_fwd(vt_pool_desc d, const float *x, float *y, int32_t *idx)
{
    I howo = (I)d.ho * d.wo, total = (I)d.planes * howo;
    for (I o = blockIdx.x * (I)blockDim.x + threadIdx.x; o < total;
         o += (I)gridDim.x * blockDim.x) {
        I plane = o / howo, r = o - plane * howo;
        int oy = (int)(r / (I)d.wo), ox = (int)(r - (I)oy * d.wo);
        const float *xp = x + plane * (I)d.h * d.w;
        int y0 = oy * d.s - d.p, x0 = ox * d.s - d.p;
        float best = -INFINITY;
        int bi = -1;
        for (int ky = 0; ky < d.k; ky++) {
            int iy = y0 + ky;
            if (iy < 0 || iy >= d.h) continue;
            for (int kx = 0; kx < d.k; kx++) {
                int ix = x0 + kx;
                if (ix < 0 || ix >= d.w) continue;
                float v = xp[iy * d.w + ix];
                /* First maximum in window order; a NaN is taken so it propagates. */
                if (bi < 0 || v > best || (v != v && best == best)) {
                    best = v;
                    bi = iy * d.w + ix;
                }
            }
        }
        y[o] = bi < 0 ? 0.0f : best;
        if (idx) idx[o] = bi;
    }
}

static bool pool_fits_u32(const vt_pool_desc *d)
{
    return (size_t)d->planes * d->h * d->w < UINT32_MAX &&
           (size_t)d->planes * d->ho * d->wo < UINT32_MAX;
}

vt_status vt_cuda_maxpool_forward(vt_backend *b, const vt_pool_desc *d, const float *x, float *y,
                                  int32_t *idx)
{
    vt_cuda_backend *cb = vt_cuda(b);
    vt_status st = check_pool(d, "maxpool_forward");
    if (st != VT_OK) return st;
    size_t total = (size_t)d->planes * d->ho * d->wo;
    if (total == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    auto kernel = pool_fits_u32(d) ? k_maxpool_fwd<uint32_t> : k_maxpool_fwd<size_t>;
    return vt_cuda_launch(cb, total, "maxpool_forward", kernel, *d, x, y, idx);
}

/* S: the stride when it is 2 (a compile-time constant: no division in covering()), else 0. */
template <typename I, int S>
__global__ void k_maxpool_bwd(vt_pool_desc d, const int32_t *idx, const float *dy, float *dx)
{
    const int s = S ? S : d.s;
    I hw = (I)d.h * d.w, total = (I)d.planes * hw;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total;
         i += (I)gridDim.x * blockDim.x) {
        I plane = i / hw, r = i - plane * hw;
        int iy = (int)(r / (I)d.w), ix = (int)(r - (I)iy * d.w);
        int oy0, oy1, ox0, ox1;
        covering(iy, d.k, s, d.p, d.ho, &oy0, &oy1);
        covering(ix, d.k, s, d.p, d.wo, &ox0, &ox1);
        if (oy0 > oy1 || ox0 > ox1) continue;
        int self = (int)r;
        I base = plane * (I)d.ho * d.wo;
        float acc = dx[i];
        for (int oy = oy0; oy <= oy1; oy++)
            for (int ox = ox0; ox <= ox1; ox++) {
                I o = base + (I)(oy * d.wo + ox);
                if (idx[o] == self) acc += dy[o];
            }
        dx[i] = acc;
    }
}

vt_status vt_cuda_maxpool_backward(vt_backend *b, const vt_pool_desc *d, const int32_t *idx,
                                   const float *dy, float *dx, int dx_add)
{
    vt_cuda_backend *cb = vt_cuda(b);
    vt_status st = check_pool(d, "maxpool_backward");
    if (st != VT_OK) return st;
    size_t total = (size_t)d->planes * d->h * d->w;
    if (total == 0 || !dx) return VT_OK;
    if (!dx_add && (st = vt_cuda_fill(b, dx, total, 0.0f)) != VT_OK) return st;
    if (d->ho == 0 || d->wo == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    auto kernel = !pool_fits_u32(d) ? k_maxpool_bwd<size_t, 0>
                  : d->s == 2       ? k_maxpool_bwd<uint32_t, 2>
                                    : k_maxpool_bwd<uint32_t, 0>;
    return vt_cuda_launch(cb, total, "maxpool_backward", kernel, *d, idx, dy, dx);
}

__global__ void k_avgpool_fwd(vt_pool_desc d, const float *x, float *y)
{
    size_t total = (size_t)d.planes * d.ho * d.wo;
    float inv = 1.0f / (float)(d.k * d.k);
    VT_GRID_STRIDE(o, total)
    {
        int ox = (int)(o % d.wo), oy = (int)((o / d.wo) % d.ho);
        size_t plane = o / ((size_t)d.wo * d.ho);
        const float *xp = x + plane * d.h * d.w;
        int y0 = oy * d.s - d.p, x0 = ox * d.s - d.p;
        float s = 0.0f;
        for (int ky = 0; ky < d.k; ky++) {
            int iy = y0 + ky;
            if (iy < 0 || iy >= d.h) continue;
            for (int kx = 0; kx < d.k; kx++) {
                int ix = x0 + kx;
                if (ix >= 0 && ix < d.w) s += xp[iy * d.w + ix];
            }
        }
        y[o] = s * inv;
    }
}

vt_status vt_cuda_avgpool_forward(vt_backend *b, const vt_pool_desc *d, const float *x, float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    vt_status st = check_pool(d, "avgpool_forward");
    if (st != VT_OK) return st;
    size_t total = (size_t)d->planes * d->ho * d->wo;
    if (total == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, total, "avgpool_forward", k_avgpool_fwd, *d, x, y);
}

__global__ void k_avgpool_bwd(vt_pool_desc d, const float *dy, float *dx)
{
    size_t total = (size_t)d.planes * d.h * d.w;
    float inv = 1.0f / (float)(d.k * d.k);
    VT_GRID_STRIDE(i, total)
    {
        int ix = (int)(i % d.w), iy = (int)((i / d.w) % d.h);
        size_t plane = i / ((size_t)d.w * d.h);
        int oy0, oy1, ox0, ox1;
        covering(iy, d.k, d.s, d.p, d.ho, &oy0, &oy1);
        covering(ix, d.k, d.s, d.p, d.wo, &ox0, &ox1);
        if (oy0 > oy1 || ox0 > ox1) continue;
        size_t base = plane * d.ho * d.wo;
        float acc = dx[i];
        for (int oy = oy0; oy <= oy1; oy++)
            for (int ox = ox0; ox <= ox1; ox++) acc += dy[base + (size_t)oy * d.wo + ox] * inv;
        dx[i] = acc;
    }
}

vt_status vt_cuda_avgpool_backward(vt_backend *b, const vt_pool_desc *d, const float *dy,
                                   float *dx)
{
    vt_cuda_backend *cb = vt_cuda(b);
    vt_status st = check_pool(d, "avgpool_backward");
    if (st != VT_OK) return st;
    size_t total = (size_t)d->planes * d->h * d->w;
    if (total == 0 || !dx || d->ho == 0 || d->wo == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, total, "avgpool_backward", k_avgpool_bwd, *d, dy, dx);
}

/* ---- nearest x2 upsampling --------------------------------------------------------------- */

__global__ void k_up2_fwd(size_t planes, int h, int w, const float *x, float *y)
{
    int wo = 2 * w, ho = 2 * h;
    size_t total = planes * ho * wo;
    VT_GRID_STRIDE(o, total)
    {
        int ox = (int)(o % wo), oy = (int)((o / wo) % ho);
        size_t plane = o / ((size_t)wo * ho);
        y[o] = x[plane * h * w + (size_t)(oy >> 1) * w + (ox >> 1)];
    }
}

vt_status vt_cuda_upsample2_forward(vt_backend *b, size_t planes, int h, int w, const float *x,
                                    float *y)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (h < 0 || w < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "upsample2_forward: h or w < 0");
    size_t total = planes * 4 * (size_t)h * w;
    if (total == 0) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, total, "upsample2_forward", k_up2_fwd, planes, h, w, x, y);
}

__global__ void k_up2_bwd(size_t planes, int h, int w, const float *dy, float *dx)
{
    size_t total = planes * h * w;
    int wo = 2 * w;
    VT_GRID_STRIDE(i, total)
    {
        int ix = (int)(i % w), iy = (int)((i / w) % h);
        size_t plane = i / ((size_t)w * h);
        const float *r0 = dy + plane * 4 * h * w + (size_t)(2 * iy) * wo + 2 * ix;
        const float *r1 = r0 + wo;
        float acc = dx[i];
        acc += r0[0];
        acc += r0[1];
        acc += r1[0];
        acc += r1[1];
        dx[i] = acc;
    }
}

vt_status vt_cuda_upsample2_backward(vt_backend *b, size_t planes, int h, int w, const float *dy,
                                     float *dx)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (h < 0 || w < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "upsample2_backward: h or w < 0");
    size_t total = planes * (size_t)h * w;
    if (total == 0 || !dx) return VT_OK;
    VT_CUDA_GUARD(cb);
    return vt_cuda_launch(cb, total, "upsample2_backward", k_up2_bwd, planes, h, w, dy, dx);
}
