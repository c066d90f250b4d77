/* Convolution over CNHW as im2col + cuBLAS GEMM.
 *
 * With CNHW, the output of group g is one row-major matrix y_g[coutg][N*ho*wo] (rows N*ho*wo
 * apart), so a whole batch is one GEMM y_g = w_g[coutg][K] * col_g[K][N*ho*wo], K = cg*kh*kw.
 * The column matrix of all groups is built at once (group g's rows are the contiguous block
 * g*K..), and the groups run as one strided-batched GEMM.  When the column matrix of the whole
 * batch would exceed the cap (VT_CONV_COL_CAP unless a test lowers it), images are processed in chunks: a chunk's output columns
 * are a column range of each y row, which the GEMM reaches through ldc.
 * A 1x1, stride-1, unpadded convolution needs no im2col: x itself is col.
 * The backward pass reuses the same workspace: col(x) for dw, then dcol = w^T dy overwrites it
 * and col2im gathers it into dx (deterministic: one thread per dx element, no atomics).
 * TODO(perf): depthwise convs become `groups` GEMMs of one row each; a direct kernel would be
 * much faster.
 *
 * With VT_CUDNN=1 (experimental, cudnn_conv.cu) each pass whose shape has a cuDNN algorithm runs
 * there instead; everything here stays as it was for the other passes and as the reference.
 * conv_workspace then reports the larger of the two paths' bytes, so either fits.
 *
 * With precision=bf16 (experimental, VT_CUDA_BF16=1) the GEMMs below take bf16 copies of their
 * operands (vt_cuda_gemm_batched); x, w, y, dx and dw stay fp32 and nothing here changes. */
#include "cuda_internal.cuh"

static int conv_valid(const vt_conv_desc *d)
{
    if (!d || d->n < 1 || d->cin < 1 || d->cout < 1 || d->h < 1 || d->w < 1 || d->kh < 1 ||
        d->kw < 1 || d->sh < 1 || d->sw < 1 || d->ph < 0 || d->pw < 0 || d->groups < 1)
        return 0;
    if (d->cin % d->groups || d->cout % d->groups) return 0;
    if (d->h + 2 * d->ph < d->kh || d->w + 2 * d->pw < d->kw) return 0;
    return d->ho == (d->h + 2 * d->ph - d->kh) / d->sh + 1 &&
           d->wo == (d->w + 2 * d->pw - d->kw) / d->sw + 1;
}

static vt_status conv_invalid(const vt_conv_desc *d, const char *op)
{
    if (!d) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: NULL descriptor", op);
    return vt_fail(VT_ERR_INVALID_ARGUMENT,
                   "%s: inconsistent shape n=%d cin=%d %dx%d cout=%d %dx%d k=%dx%d s=%dx%d "
                   "p=%dx%d groups=%d",
                   op, d->n, d->cin, d->h, d->w, d->cout, d->ho, d->wo, d->kh, d->kw, d->sh, d->sw,
                   d->ph, d->pw, d->groups);
}

static int conv_direct(const vt_conv_desc *d)
{
    return d->kh == 1 && d->kw == 1 && d->sh == 1 && d->sw == 1 && d->ph == 0 && d->pw == 0;
}

/* Images per chunk; conv_workspace and both passes must agree on it. */
static int conv_chunk(const vt_cuda_backend *cb, const vt_conv_desc *d)
{
    size_t cap = cb->conv_col_cap ? cb->conv_col_cap : VT_CONV_COL_CAP;
    size_t per_image = (size_t)d->cin * d->kh * d->kw * d->ho * d->wo * sizeof(float);
    size_t nb = per_image ? cap / per_image : (size_t)d->n;
    if (nb < 1) nb = 1;
    if (nb > (size_t)d->n) nb = (size_t)d->n;
    return (int)nb;
}

/* The im2col path's bytes (0 for a direct convolution). */
static size_t im2col_bytes(const vt_cuda_backend *cb, const vt_conv_desc *d)
{
    if (conv_direct(d)) return 0;
    return (size_t)d->cin * d->kh * d->kw * (size_t)conv_chunk(cb, d) * d->ho * d->wo *
           sizeof(float);
}

size_t vt_cuda_conv_workspace(vt_backend *b, const vt_conv_desc *d)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (!conv_valid(d)) return 0;
    size_t col = im2col_bytes(cb, d);
    /* the shape's cuDNN plan is made here, where the caller learns the bytes it needs */
    const vt_dnn_plan *p = cb->dnn && !cb->bf16 ? vt_dnn_plan_for(cb, d, col, 1) : NULL;
    return vt_dnn_ws_report(col, p ? p->ws_max : 0);
}

/* The shape's cuDNN plan when cuDNN is on (NULL: off, or no room for another plan).  With
 * precision=bf16 every pass runs on im2col + the bf16 GEMMs (backend_cuda.cu says why). */
static const vt_dnn_plan *dnn_plan(vt_cuda_backend *cb, const vt_conv_desc *d)
{
    return cb->dnn && !cb->bf16 ? vt_dnn_plan_for(cb, d, im2col_bytes(cb, d), 0) : NULL;
}

/* cuDNN's algorithms were found on its own (aligned) buffers; a pass whose pointers are not all
 * 16-byte aligned (a weight after an odd-sized one in the packed parameters) runs on im2col. */
static bool dnn_aligned(const void *a, const void *b, const void *c)
{
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) & 15u) == 0;
}

static void count_im2col(vt_cuda_backend *cb, int passes)
{
    if (cb->dnn) cb->dnn->passes_im2col += (unsigned long long)passes;
}

/* The index arithmetic of the column kernels runs in I: unsigned 32-bit when every index of the
 * launch fits (64-bit division and modulo cost tens of instructions each on a GPU). */
static bool fits_u32(const vt_conv_desc *d, int nb)
{
    size_t col = (size_t)d->cin * d->kh * d->kw * nb * d->ho * d->wo;
    size_t img = (size_t)d->cin * d->n * d->h * d->w;
    return col < UINT32_MAX && img < UINT32_MAX;
}

/* col[(ci*kh + ky)*kw + kx][(n*ho + oy)*wo + ox] for images n0..n0+nb-1; one thread per
 * (ci, n, oy, ox) so that neighbouring threads write neighbouring columns. */
template <typename I>
__global__ void k_im2col(vt_conv_desc d, int n0, int nb, const float *x, float *col)
{
    I howo = (I)d.ho * d.wo, P = (I)nb * howo;
    I total = (I)d.cin * P;
    for (I t = blockIdx.x * (I)blockDim.x + threadIdx.x; t < total;
         t += (I)gridDim.x * blockDim.x) {
        I ci = t / P, p = t - ci * P;
        I n = p / howo, r = p - n * howo;
        int oy = (int)(r / (I)d.wo), ox = (int)(r - (I)oy * d.wo);
        const float *xp = x + ((I)ci * d.n + n0 + n) * (I)d.h * d.w;
        float *cp = col + ci * (I)(d.kh * d.kw) * P + p;
        int y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
        for (int ky = 0; ky < d.kh; ky++) {
            int iy = y0 + ky;
            bool rowok = iy >= 0 && iy < d.h;
            for (int kx = 0; kx < d.kw; kx++) {
                int ix = x0 + kx;
                float v = rowok && ix >= 0 && ix < d.w ? xp[iy * d.w + ix] : 0.0f;
                cp[(I)(ky * d.kw + kx) * P] = v;
            }
        }
    }
}

/* dx[ci][n0+n][iy][ix] += sum of the col entries that im2col read from that cell.  S is the
 * stride when it is 1 or 2 on both axes (a compile-time constant: no integer division in the tap
 * loop), 0 for any other (read from d).  Only the taps whose offset the stride divides are
 * visited. */
template <typename I, int S>
__global__ void k_col2im_add(vt_conv_desc d, int n0, int nb, const float *col, float *dx)
{
    const int sh = S ? S : d.sh, sw = S ? S : d.sw;
    I hw = (I)d.h * d.w, P = (I)nb * d.ho * d.wo;
    I total = (I)d.cin * nb * hw;
    for (I t = blockIdx.x * (I)blockDim.x + threadIdx.x; t < total;
         t += (I)gridDim.x * blockDim.x) {
        I cn = t / hw, r = t - cn * hw; /* cn = ci*nb + n */
        int iy = (int)(r / (I)d.w), ix = (int)(r - (I)iy * d.w);
        I ci = cn / (I)nb, n = cn - ci * nb;
        const float *cp = col + ci * (I)(d.kh * d.kw) * P + n * (I)(d.ho * d.wo);
        float acc = 0.0f;
        int py = iy + d.ph, px = ix + d.pw; /* ty = py - ky, tx = px - kx */
        /* ky = py - oy*sh for oy from the largest valid down: ky ascending */
        int oy_hi = py / sh < d.ho - 1 ? py / sh : d.ho - 1;
        int ox_hi = px / sw < d.wo - 1 ? px / sw : d.wo - 1;
        for (int oy = oy_hi; oy >= 0; oy--) {
            int ky = py - oy * sh;
            if (ky >= d.kh) break;
            for (int ox = ox_hi; ox >= 0; ox--) {
                int kx = px - ox * sw;
                if (kx >= d.kw) break;
                acc += cp[(I)(ky * d.kw + kx) * P + (I)(oy * d.wo + ox)];
            }
        }
        dx[(ci * d.n + n0 + n) * hw + r] += acc;
    }
}

static vt_status launch_im2col(vt_cuda_backend *cb, const vt_conv_desc *d, int n0, int nb,
                               const float *x, float *col)
{
    size_t total = (size_t)d->cin * nb * d->ho * d->wo;
    auto kernel = fits_u32(d, nb) ? k_im2col<uint32_t> : k_im2col<size_t>;
    return vt_cuda_launch(cb, total, "conv im2col", kernel, *d, n0, nb, x, col);
}

static vt_status launch_col2im(vt_cuda_backend *cb, const vt_conv_desc *d, int n0, int nb,
                               const float *col, float *dx)
{
    size_t total = (size_t)d->cin * nb * d->h * d->w;
    int s = d->sh == d->sw && d->sh <= 2 ? d->sh : 0;
    auto kernel = !fits_u32(d, nb) ? k_col2im_add<size_t, 0>
                  : s == 1         ? k_col2im_add<uint32_t, 1>
                  : s == 2         ? k_col2im_add<uint32_t, 2>
                                   : k_col2im_add<uint32_t, 0>;
    return vt_cuda_launch(cb, total, "conv col2im", kernel, *d, n0, nb, col, dx);
}

/* cuBLAS takes int sizes and leading dimensions. */
static int conv_fits_int(const vt_conv_desc *d)
{
    long long big = (long long)d->n * d->h * d->w;
    long long outp = (long long)d->n * d->ho * d->wo;
    long long k = (long long)(d->cin / d->groups) * d->kh * d->kw;
    return big < INT32_MAX && outp < INT32_MAX && k < INT32_MAX;
}

vt_status vt_cuda_conv_forward(vt_backend *b, const vt_conv_desc *d, const float *x,
                               const float *w, const float *bias, float *y, void *ws)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (!conv_valid(d)) return conv_invalid(d, "conv_forward");
    if (!conv_fits_int(d)) return vt_fail(VT_ERR_UNSUPPORTED, "conv_forward: tensor too large");
    VT_CUDA_GUARD(cb);
    const int G = d->groups, cg = d->cin / G, coutg = d->cout / G;
    const int K = cg * d->kh * d->kw;
    const long long NP = (long long)d->n * d->ho * d->wo; /* y row length */
    vt_status st;
    const vt_dnn_plan *plan = dnn_plan(cb, d);
    const bool on_dnn = plan && plan->algo[0] >= 0 && dnn_aligned(x, w, y);
    if (!on_dnn) count_im2col(cb, 1);
    if (on_dnn) {
        if ((st = vt_dnn_forward(cb, plan, x, w, y, ws)) != VT_OK) return st;
    } else if (conv_direct(d)) {
        st = vt_cuda_gemm_batched(cb, 0, 0, coutg, (int)NP, K, 1.0f, w, K, (long long)coutg * K, x,
                                  (int)NP, (long long)cg * NP, 0.0f, y, (int)NP,
                                  (long long)coutg * NP, G);
        if (st != VT_OK) return st;
    } else {
        if (!ws) return vt_fail(VT_ERR_INVALID_ARGUMENT, "conv_forward: workspace is NULL");
        float *col = (float *)ws;
        const int chunk = conv_chunk(cb, d);
        const long long howo = (long long)d->ho * d->wo;
        for (int n0 = 0; n0 < d->n; n0 += chunk) {
            int nb = d->n - n0 < chunk ? d->n - n0 : chunk;
            long long P = nb * howo;
            if ((st = launch_im2col(cb, d, n0, nb, x, col)) != VT_OK) return st;
            st = vt_cuda_gemm_batched(cb, 0, 0, coutg, (int)P, K, 1.0f, w, K, (long long)coutg * K,
                                      col, (int)P, (long long)K * P, 0.0f, y + n0 * howo, (int)NP,
                                      (long long)coutg * NP, G);
            if (st != VT_OK) return st;
        }
    }
    if (bias) return vt_cuda_bias_add(b, d->cout, (size_t)NP, bias, y);
    return VT_OK;
}

vt_status vt_cuda_conv_backward(vt_backend *b, const vt_conv_desc *d, const float *x,
                                const float *w, const float *dy, float *dx, float *dw, float *db,
                                void *ws)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (!conv_valid(d)) return conv_invalid(d, "conv_backward");
    if (!conv_fits_int(d)) return vt_fail(VT_ERR_UNSUPPORTED, "conv_backward: tensor too large");
    VT_CUDA_GUARD(cb);
    const int G = d->groups, cg = d->cin / G, coutg = d->cout / G;
    const int K = cg * d->kh * d->kw;
    const long long NP = (long long)d->n * d->ho * d->wo;
    vt_status st;
    if (db && (st = vt_cuda_channel_sum(b, d->cout, (size_t)NP, dy, db)) != VT_OK) return st;

    /* the passes cuDNN takes; the others (dx or dw left non-NULL) continue below */
    const vt_dnn_plan *plan = dnn_plan(cb, d);
    if (plan && dx && plan->algo[1] >= 0 && dnn_aligned(w, dy, dx)) {
        if ((st = vt_dnn_backward_data(cb, plan, w, dy, dx, ws)) != VT_OK) return st;
        dx = NULL;
    }
    if (plan && dw && plan->algo[2] >= 0 && dnn_aligned(x, dy, dw)) {
        if ((st = vt_dnn_backward_filter(cb, plan, x, dy, dw, ws)) != VT_OK) return st;
        dw = NULL;
    }
    count_im2col(cb, (dx != NULL) + (dw != NULL));

    if (conv_direct(d)) {
        /* dw_g = dy_g * x_g^T;  dx_g += w_g^T * dy_g (beta = 1 accumulates in place). */
        if (dw) {
            st = vt_cuda_gemm_batched(cb, 0, 1, coutg, K, (int)NP, 1.0f, dy, (int)NP,
                                      (long long)coutg * NP, x, (int)NP, (long long)cg * NP, 0.0f,
                                      dw, K, (long long)coutg * K, G);
            if (st != VT_OK) return st;
        }
        if (dx) {
            st = vt_cuda_gemm_batched(cb, 1, 0, K, (int)NP, coutg, 1.0f, w, K,
                                      (long long)coutg * K, dy, (int)NP, (long long)coutg * NP,
                                      1.0f, dx, (int)NP, (long long)cg * NP, G);
            if (st != VT_OK) return st;
        }
        return VT_OK;
    }
    if (!dw && !dx) return VT_OK;
    if (!ws) return vt_fail(VT_ERR_INVALID_ARGUMENT, "conv_backward: workspace is NULL");
    float *col = (float *)ws;
    const int chunk = conv_chunk(cb, d);
    const long long howo = (long long)d->ho * d->wo;
    for (int n0 = 0; n0 < d->n; n0 += chunk) {
        int nb = d->n - n0 < chunk ? d->n - n0 : chunk;
        long long P = nb * howo;
        const float *dyc = dy + n0 * howo;
        if (dw) {
            /* Chunks after the first accumulate into the dw the first one assigned. */
            if ((st = launch_im2col(cb, d, n0, nb, x, col)) != VT_OK) return st;
            st = vt_cuda_gemm_batched(cb, 0, 1, coutg, K, (int)P, 1.0f, dyc, (int)NP,
                                      (long long)coutg * NP, col, (int)P, (long long)K * P,
                                      n0 == 0 ? 0.0f : 1.0f, dw, K, (long long)coutg * K, G);
            if (st != VT_OK) return st;
        }
        if (dx) {
            st = vt_cuda_gemm_batched(cb, 1, 0, K, (int)P, coutg, 1.0f, w, K,
                                      (long long)coutg * K, dyc, (int)NP, (long long)coutg * NP,
                                      0.0f, col, (int)P, (long long)K * P, G);
            if (st != VT_OK) return st;
            if ((st = launch_col2im(cb, d, n0, nb, col, dx)) != VT_OK) return st;
        }
    }
    return VT_OK;
}
