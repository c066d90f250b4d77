/* CPU convolution over the CNHW layout: im2col + one GEMM per chunk of images (1x1 stride-1
 * convolutions use the input directly), col2im for the input gradient. */
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/gemm.h"


/* Images per im2col chunk: keep the column buffer near 8 MiB so it stays cache-friendly while
 * the GEMM still sees thousands of columns. */
static int conv_chunk(const vt_backend *b, const vt_conv_desc *d)
{
    size_t K = (size_t)(d->cin / d->groups) * d->kh * d->kw;
    size_t per_image = K * (size_t)d->ho * d->wo;
    size_t cap = ((const cpu_backend *)b)->conv_cap;
    size_t nb = per_image ? cap / per_image : (size_t)d->n;
    if (nb < 1) nb = 1;
    if (nb > (size_t)d->n) nb = (size_t)d->n;
    return (int)nb;
}

static int conv_is_pointwise(const vt_conv_desc *d)
{
    return d->kh == 1 && d->kw == 1 && d->sh == 1 && d->sw == 1 && d->ph == 0 && d->pw == 0 &&
           d->groups == 1;
}

size_t vt_cpu_conv_workspace(vt_backend *b, const vt_conv_desc *d)
{
    (void)b;
    if (conv_is_pointwise(d)) return 0;
    size_t K = (size_t)(d->cin / d->groups) * d->kh * d->kw;
    return K * (size_t)conv_chunk(b, d) * d->ho * d->wo * sizeof(float);
}

typedef struct {
    const vt_conv_desc *d;
    const float *x;
    float *x_out; /* col2im target */
    float *col;
    int n0, nb, c0; /* first image, images, first input channel (group offset) */
} col_job;

/* Rows of the column matrix are (ci, ky, kx); columns (image, oy, ox). */
static void im2col_rows(void *ctx, size_t r0, size_t r1)
{
    const col_job *J = ctx;
    const vt_conv_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    size_t cols = (size_t)J->nb * OHW;
    for (size_t r = r0; r < r1; r++) {
        int kx = (int)(r % d->kw), ky = (int)((r / d->kw) % d->kh);
        int ci = J->c0 + (int)(r / ((size_t)d->kw * d->kh));
        float *dst = J->col + r * cols;
        for (int nl = 0; nl < J->nb; nl++) {
            const float *src = J->x + ((size_t)ci * d->n + J->n0 + nl) * HW;
            for (int oy = 0; oy < d->ho; oy++) {
                int iy = oy * d->sh - d->ph + ky;
                float *drow = dst + (size_t)nl * OHW + (size_t)oy * d->wo;
                if (iy < 0 || iy >= d->h) {
                    memset(drow, 0, (size_t)d->wo * sizeof(float));
                    continue;
                }
                const float *srow = src + (size_t)iy * d->w;
                /* valid output columns: 0 <= ox*sw - pw + kx < w */
                int lo = d->pw - kx > 0 ? (d->pw - kx + d->sw - 1) / d->sw : 0;
                int hi = (d->w - 1 + d->pw - kx) / d->sw + 1;
                if (d->w - 1 + d->pw - kx < 0) hi = 0;
                if (hi > d->wo) hi = d->wo;
                if (lo > hi) lo = hi;
                if (lo) memset(drow, 0, (size_t)lo * sizeof(float));
                if (d->sw == 1) {
                    memcpy(drow + lo, srow + lo - d->pw + kx, (size_t)(hi - lo) * sizeof(float));
                } else {
                    const float *sp = srow + lo * d->sw - d->pw + kx;
                    for (int ox = lo; ox < hi; ox++, sp += d->sw) drow[ox] = *sp;
                }
                if (hi < d->wo) memset(drow + hi, 0, (size_t)(d->wo - hi) * sizeof(float));
            }
        }
    }
}

/* col2im accumulates into dx; split over input channels so no two threads write the same
 * value. */
static void col2im_channels(void *ctx, size_t c0, size_t c1)
{
    const col_job *J = ctx;
    const vt_conv_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    size_t cols = (size_t)J->nb * OHW;
    for (size_t cl = c0; cl < c1; cl++) {
        int ci = J->c0 + (int)cl;
        for (int ky = 0; ky < d->kh; ky++)
            for (int kx = 0; kx < d->kw; kx++) {
                size_t r = (cl * d->kh + ky) * d->kw + kx;
                const float *src = J->col + r * cols;
                for (int nl = 0; nl < J->nb; nl++) {
                    float *dst = J->x_out + ((size_t)ci * d->n + J->n0 + nl) * HW;
                    for (int oy = 0; oy < d->ho; oy++) {
                        int iy = oy * d->sh - d->ph + ky;
                        if (iy < 0 || iy >= d->h) continue;
                        const float *restrict srow = src + (size_t)nl * OHW + (size_t)oy * d->wo;
                        float *restrict drow = dst + (size_t)iy * d->w;
                        int lo = d->pw - kx > 0 ? (d->pw - kx + d->sw - 1) / d->sw : 0;
                        int hi = d->w - 1 + d->pw - kx < 0 ? 0 : (d->w - 1 + d->pw - kx) / d->sw + 1;
                        if (hi > d->wo) hi = d->wo;
                        if (d->sw == 1) {
                            float *restrict dp = drow - d->pw + kx;
                            for (int ox = lo; ox < hi; ox++) dp[ox] += srow[ox];
                        } else {
                            for (int ox = lo; ox < hi; ox++) drow[ox * d->sw - d->pw + kx] += srow[ox];
                        }
                    }
                }
            }
    }
}

vt_status vt_cpu_conv_forward(vt_backend *b, const vt_conv_desc *d, const float *x,
                                  const float *w, const float *bias, float *y, void *ws)
{
    size_t NOHW = (size_t)d->n * d->ho * d->wo, OHW = (size_t)d->ho * d->wo;
    if (conv_is_pointwise(d)) {
        vt_sgemm(POOL(b), 0, 0, d->cout, (int)NOHW, d->cin, 1.0f, w, d->cin, x, (int)NOHW, 0.0f,
                 y, (int)NOHW);
    } else {
        int cin_g = d->cin / d->groups, cout_g = d->cout / d->groups;
        int K = cin_g * d->kh * d->kw, nbmax = conv_chunk(b, d);
        for (int g = 0; g < d->groups; g++)
            for (int n0 = 0; n0 < d->n; n0 += nbmax) {
                int nb = d->n - n0 < nbmax ? d->n - n0 : nbmax;
                col_job J = {d, x, NULL, ws, n0, nb, g * cin_g};
                vt_pool_run(POOL(b), (size_t)K, 1, im2col_rows, &J);
                vt_sgemm(POOL(b), 0, 0, cout_g, (int)(nb * OHW), K, 1.0f,
                         w + (size_t)g * cout_g * K, K, ws, (int)(nb * OHW), 0.0f,
                         y + (size_t)g * cout_g * NOHW + (size_t)n0 * OHW, (int)NOHW);
            }
    }
    if (bias) vt_cpu_bias_add(b, d->cout, NOHW, bias, y);
    return VT_OK;
}

vt_status vt_cpu_conv_backward(vt_backend *b, const vt_conv_desc *d, const float *x,
                                   const float *w, const float *dy, float *dx, float *dw,
                                   float *db, void *ws)
{
    size_t NOHW = (size_t)d->n * d->ho * d->wo, OHW = (size_t)d->ho * d->wo;
    if (db) vt_cpu_channel_sum(b, d->cout, NOHW, dy, db);
    if (conv_is_pointwise(d)) {
        /* dW[cout][cin] = dY[cout][NHW] x X[cin][NHW]^T;  dX[cin][NHW] += W^T dY */
        vt_sgemm(POOL(b), 0, 1, d->cout, d->cin, (int)NOHW, 1.0f, dy, (int)NOHW, x, (int)NOHW,
                 0.0f, dw, d->cin);
        if (dx)
            vt_sgemm(POOL(b), 1, 0, d->cin, (int)NOHW, d->cout, 1.0f, w, d->cin, dy, (int)NOHW,
                     1.0f, dx, (int)NOHW);
        return VT_OK;
    }
    int cin_g = d->cin / d->groups, cout_g = d->cout / d->groups;
    int K = cin_g * d->kh * d->kw, nbmax = conv_chunk(b, d);
    for (int g = 0; g < d->groups; g++) {
        const float *wg = w + (size_t)g * cout_g * K;
        float *dwg = dw + (size_t)g * cout_g * K;
        for (int n0 = 0; n0 < d->n; n0 += nbmax) {
            int nb = d->n - n0 < nbmax ? d->n - n0 : nbmax;
            int cols = (int)(nb * OHW);
            const float *dyg = dy + (size_t)g * cout_g * NOHW + (size_t)n0 * OHW;
            col_job J = {d, x, dx, ws, n0, nb, g * cin_g};
            /* The forward's columns are still there when the whole batch was one chunk of a
             * single group and the executor gave this layer its own scratch. */
            if (!(d->ws_from_forward && d->groups == 1 && nb == d->n))
                vt_pool_run(POOL(b), (size_t)K, 1, im2col_rows, &J);
            vt_sgemm(POOL(b), 0, 1, cout_g, K, cols, 1.0f, dyg, (int)NOHW, ws, cols,
                     n0 == 0 ? 0.0f : 1.0f, dwg, K);
            if (dx) {
                /* dcol = Wg^T dY, reusing the column buffer, then scatter-add into dx. */
                vt_sgemm(POOL(b), 1, 0, K, cols, cout_g, 1.0f, wg, K, dyg, (int)NOHW, 0.0f, ws,
                         cols);
                vt_pool_run(POOL(b), (size_t)cin_g, 1, col2im_channels, &J);
            }
        }
    }
    return VT_OK;
}

