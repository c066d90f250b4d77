/* The CPU reference backend: every op of backend.h in plain C11, GEMM through gemm.c, loops
 * split over a small thread pool.  The CUDA backend is tested against this one. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gemm.h"
#include "backend/optim_math.h"
#include "backend/seg_loss_math.h"
#include "core/threads.h"

#include "backend/cpu_impl.h"

/* ---------------------------------------------------------------- memory */

void vt_cpu_destroy(vt_backend *b)
{
    if (!b) return;
    vt_pool_destroy(POOL(b));
    free(((cpu_backend *)b)->scratch);
    free(b);
}

void *vt_cpu_scratch(vt_backend *b, size_t bytes)
{
    cpu_backend *cb = (cpu_backend *)b;
    if (bytes > cb->scratch_bytes) {
        void *p = vt_malloc(bytes);
        if (!p) return NULL;
        free(cb->scratch);
        cb->scratch = p;
        cb->scratch_bytes = bytes;
    }
    return cb->scratch;
}

void *vt_cpu_alloc(vt_backend *b, size_t bytes)
{
    (void)b;
    return vt_malloc_aligned(bytes);
}

void vt_cpu_free(vt_backend *b, void *p)
{
    (void)b;
    vt_free_aligned(p);
}

vt_status vt_cpu_copy(vt_backend *b, void *dst, const void *src, size_t bytes)
{
    (void)b;
    if (bytes && dst != src) memmove(dst, src, bytes);
    return VT_OK;
}

vt_status vt_cpu_upload_rows(vt_backend *b, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t row_bytes, size_t rows)
{
    (void)b;
    for (size_t r = 0; r < rows; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, row_bytes);
    return VT_OK;
}

typedef struct {
    float *x;
    float v;
} fill_job;

static void fill_range(void *ctx, size_t b, size_t e)
{
    const fill_job *J = ctx;
    if (J->v == 0.0f) {
        memset(J->x + b, 0, (e - b) * sizeof(float));
        return;
    }
    for (size_t i = b; i < e; i++) J->x[i] = J->v;
}

/* Split over the pool: zeroing the executor's gradient buffers (megabytes per step) is
 * memory-bound, and one core does not reach the memory bandwidth on its own. */
vt_status vt_cpu_fill(vt_backend *b, float *x, size_t n, float v)
{
    fill_job J = {x, v};
    vt_pool_run(POOL(b), n, 16 * GRAIN, fill_range, &J);
    return VT_OK;
}

vt_status vt_cpu_synchronize(vt_backend *b)
{
    (void)b;
    return VT_OK;
}

/* ---------------------------------------------------------------- algebra */

vt_status vt_cpu_gemm(vt_backend *b, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *bm, int ldb, float beta, float *c,
                      int ldc)
{
    GEMM(b)(POOL(b), ta, tb, m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc);
    return VT_OK;
}

typedef struct {
    const float *x, *x2;
    float *y;
    float alpha;
} ew_job;

static void axpy_range(void *ctx, size_t b, size_t e)
{
    const ew_job *J = ctx;
    float *restrict y = J->y;
    const float *restrict x = J->x;
    for (size_t i = b; i < e; i++) y[i] += J->alpha * x[i];
}

vt_status vt_cpu_axpy(vt_backend *b, size_t n, float alpha, const float *x, float *y)
{
    ew_job J = {x, NULL, y, alpha};
    vt_pool_run(POOL(b), n, GRAIN, axpy_range, &J);
    return VT_OK;
}

static void add_range(void *ctx, size_t b, size_t e)
{
    const ew_job *J = ctx;
    for (size_t i = b; i < e; i++) J->y[i] = J->x[i] + J->x2[i];
}

vt_status vt_cpu_add(vt_backend *b, size_t n, const float *a, const float *c, float *y)
{
    ew_job J = {a, c, y, 0};
    vt_pool_run(POOL(b), n, GRAIN, add_range, &J);
    return VT_OK;
}

/* ---- strided 2-D copy / axpy: rows split over the pool, each range about GRAIN floats */

typedef struct {
    const float *x;
    float *y;
    size_t cols, xp, yp;
    float alpha;
} rows_job;

static void copy2d_rows(void *ctx, size_t b, size_t e)
{
    const rows_job *J = ctx;
    for (size_t r = b; r < e; r++)
        memcpy(J->y + r * J->yp, J->x + r * J->xp, J->cols * sizeof(float));
}

static void axpy2d_rows(void *ctx, size_t b, size_t e)
{
    const rows_job *J = ctx;
    for (size_t r = b; r < e; r++) {
        float *restrict y = J->y + r * J->yp;
        const float *restrict x = J->x + r * J->xp;
        for (size_t j = 0; j < J->cols; j++) y[j] += J->alpha * x[j];
    }
}

vt_status vt_cpu_copy2d(vt_backend *b, size_t rows, size_t cols, const float *src, size_t src_pitch,
                        float *dst, size_t dst_pitch)
{
    if (!rows || !cols) return VT_OK;
    vt_status st = vt_pitch_check("copy2d", cols, src_pitch, dst_pitch);
    if (st != VT_OK) return st;
    rows_job J = {src, dst, cols, src_pitch, dst_pitch, 0};
    vt_pool_run(POOL(b), rows, vt_cpu_grain(cols), copy2d_rows, &J);
    return VT_OK;
}

vt_status vt_cpu_axpy2d(vt_backend *b, size_t rows, size_t cols, float alpha, const float *x,
                        size_t x_pitch, float *y, size_t y_pitch)
{
    if (!rows || !cols) return VT_OK;
    vt_status st = vt_pitch_check("axpy2d", cols, x_pitch, y_pitch);
    if (st != VT_OK) return st;
    rows_job J = {x, y, cols, x_pitch, y_pitch, alpha};
    vt_pool_run(POOL(b), rows, vt_cpu_grain(cols), axpy2d_rows, &J);
    return VT_OK;
}

vt_status vt_cpu_bias_add(vt_backend *b, int channels, size_t m, const float *bias, float *y)
{
    (void)b;
    for (int c = 0; c < channels; c++) {
        float bv = bias[c];
        float *row = y + (size_t)c * m;
        for (size_t i = 0; i < m; i++) row[i] += bv;
    }
    return VT_OK;
}

vt_status vt_cpu_channel_sum(vt_backend *b, int channels, size_t m, const float *x,
                                 float *out)
{
    (void)b;
    for (int c = 0; c < channels; c++) {
        const float *row = x + (size_t)c * m;
        double s = 0;
        for (size_t i = 0; i < m; i++) s += row[i];
        out[c] = (float)s;
    }
    return VT_OK;
}

/* ---------------------------------------------------------------- activations */

typedef struct {
    vt_act act;
    float alpha;
    const float *x, *y, *dy;
    float *out;
    const vt_cpu_vec_kernels *k;
} act_job;

/* Elementwise kernels take restrict pointers as parameters (GCC honours those) and avoid
 * branches and libm calls in the loop body, so they vectorise. */
static void relu_fwd(size_t n, const float *x, float *y)
{
    for (size_t i = 0; i < n; i++) { /* may run in place */
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

static void leaky_fwd(size_t n, float a, const float *x, float *y)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : a * v;
    }
}

static void relu_bwd(size_t n, const float *restrict y, const float *restrict dy,
                     float *restrict dx)
{
    for (size_t i = 0; i < n; i++) {
        float g = dy[i], m = y[i] > 0.0f ? 1.0f : 0.0f;
        dx[i] += m * g;
    }
}

static void leaky_bwd(size_t n, float a, const float *restrict x, const float *restrict dy,
                      float *restrict dx)
{
    for (size_t i = 0; i < n; i++) {
        float g = dy[i], m = x[i] > 0.0f ? 1.0f : a;
        dx[i] += m * g;
    }
}

static void add_into(size_t n, const float *restrict dy, float *restrict dx)
{
    for (size_t i = 0; i < n; i++) dx[i] += dy[i];
}

static void act_fwd_range(void *ctx, size_t b, size_t e)
{
    const act_job *J = ctx;
    const float *x = J->x + b; /* may alias y (in place) */
    float *y = J->out + b;
    size_t n = e - b;
    switch (J->act) {
    case VT_ACT_NONE:
        if (y != x) memcpy(y, x, n * sizeof(float));
        break;
    case VT_ACT_RELU: relu_fwd(n, x, y); break;
    case VT_ACT_LEAKY: leaky_fwd(n, J->alpha, x, y); break;
    case VT_ACT_SILU: J->k->silu_fwd(n, x, 1.0f, 0.0f, y); break;
    case VT_ACT_SIGMOID: J->k->sigmoid_fwd(n, x, y); break;
    }
}

static void act_bwd_range(void *ctx, size_t b, size_t e)
{
    const act_job *J = ctx;
    const float *x = J->x ? J->x + b : NULL, *y = J->y ? J->y + b : NULL, *dy = J->dy + b;
    float *dx = J->out + b;
    size_t n = e - b;
    switch (J->act) {
    case VT_ACT_NONE: add_into(n, dy, dx); break;
    case VT_ACT_RELU: relu_bwd(n, y, dy, dx); break; /* the output: the op may run in place */
    case VT_ACT_LEAKY: leaky_bwd(n, J->alpha, x, dy, dx); break;
    case VT_ACT_SILU: J->k->silu_bwd(n, x, dy, dx); break;
    case VT_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++) dx[i] += dy[i] * y[i] * (1.0f - y[i]);
        break;
    }
}

vt_status vt_cpu_act_forward(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                             float *y)
{
    act_job J = {act, alpha, x, NULL, NULL, y, KERNELS(b)};
    vt_pool_run(POOL(b), n, GRAIN, act_fwd_range, &J);
    return VT_OK;
}

vt_status vt_cpu_act_backward(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                              const float *y, const float *dy, float *dx)
{
    act_job J = {act, alpha, x, y, dy, dx, KERNELS(b)};
    vt_pool_run(POOL(b), n, GRAIN, act_bwd_range, &J);
    return VT_OK;
}

/* ---------------------------------------------------------------- batch norm */

typedef struct {
    size_t m;
    const float *x, *gamma, *beta, *mean, *invstd, *dy, *rm, *rv;
    vt_act act; /* fused activation: VT_ACT_NONE (plain BN), RELU or SILU */
    int add;    /* backward: dx += (1) or dx = (0) */
    const vt_pool_desc *pd; /* bn_act_pool_forward_train: the 2x2 pool; y, idx its outputs, */
    int32_t *idx;
    const int32_t *cidx; /* bn_act_pool_backward: the pool's argmax (dy: the pool's gradient) */
    float *rows; /* and a few planes of act(bn(x)) per pool thread */
    const vt_cpu_vec_kernels *k;
    float eps, momentum;
    float *y, *dx, *dgamma, *dbeta, *save_mean, *save_invstd, *run_mean, *run_var;
    /* synchronised BN (vt_backend_cpu_set_bn_sync): per channel 3 sums, this process's in the
     * first pass, every process's in the second (synced = 1) */
    double *sync;
    int synced;
} bn_job;

/* The channels' loops are the kernels' (cpu_bn.inc: shifted_sums, affine, grad_sums, grad_dx,
 * grad_dx_inplace), whose sums take blocks of BN_BLOCK values from the channel's start. */
enum { BN_BLOCK = VT_CPU_BN_BLOCK };

/* Mean and biased variance from the sums of x - k and its squares over m values. */
static void moments(double k, double s1, double s2, double m, double *mean, double *var)
{
    double md = s1 / m;
    *mean = k + md;
    double v = s2 / m - md * md;
    *var = v > 0 ? v : 0;
}

/* Mean and biased variance of x[0..m) in one pass: sums of d = x - K and d*d with K = x[0]
 * (the shift keeps the cancellation in S2 - S1^2/m small). */
static void mean_var(const vt_cpu_vec_kernels *k, const float *restrict x, size_t m, double *mean,
                     double *var)
{
    double s1, s2;
    k->shifted_sums(x, m, x[0], &s1, &s2);
    moments(x[0], s1, s2, (double)m, mean, var);
}

/* y = act(x * scale + shift), the job's fused activation (none for a plain BN) */
static void bn_apply(const bn_job *J, size_t m, const float *x, float scale, float shift,
                     float *y)
{
    if (J->act == VT_ACT_SILU) J->k->silu_fwd(m, x, scale, shift, y);
    else J->k->affine(m, x, scale, shift, J->act == VT_ACT_RELU, y);
}

/* Channel c's batch statistics: saved, the running ones updated; its scale and shift. */
static void bn_train_stats(const bn_job *J, size_t c, float *scale, float *shift)
{
    double m = (double)J->m, mean, var;
    if (J->synced) { /* every process's values: shifted by the running mean, the same on all */
        const double *q = J->sync + 3 * c;
        m = q[0];
        moments(J->run_mean[c], q[1], q[2], m, &mean, &var);
    } else {
        mean_var(J->k, J->x + c * J->m, J->m, &mean, &var);
    }
    double ss = var * m;
    float invstd = (float)(1.0 / sqrt(var + J->eps));
    float fm = (float)mean;
    *scale = J->gamma[c] * invstd;
    *shift = J->beta[c] - fm * *scale;
    J->save_mean[c] = fm;
    J->save_invstd[c] = invstd;
    double unbiased = m > 1 ? ss / (m - 1) : var;
    J->run_mean[c] = (1.0f - J->momentum) * J->run_mean[c] + J->momentum * fm;
    J->run_var[c] = (1.0f - J->momentum) * J->run_var[c] + J->momentum * (float)unbiased;
}

/* The first pass of a synchronised forward: this process's count and sums of x - k per
 * channel, k its running mean (the same on every process). */
static void bn_sync_fwd_channels(void *ctx, size_t c0, size_t c1)
{
    const bn_job *J = ctx;
    for (size_t c = c0; c < c1; c++) {
        double *q = J->sync + 3 * c, s1, s2, m = (double)J->m;
        /* shifted by x[0] as mean_var (its float partial sums stay near the channel's own
         * scale), then by the running mean in double: sum (d + e) and sum (d + e)^2 with
         * d = x - x[0], e = x[0] - k */
        const float *x = J->x + c * J->m;
        J->k->shifted_sums(x, J->m, x[0], &s1, &s2);
        double e = (double)x[0] - (double)J->run_mean[c];
        q[0] = m;
        q[1] = s1 + m * e;
        q[2] = s2 + 2.0 * e * s1 + m * e * e;
    }
}

static void bn_train_channels(void *ctx, size_t c0, size_t c1)
{
    const bn_job *J = ctx;
    for (size_t c = c0; c < c1; c++) {
        float scale, shift;
        bn_train_stats(J, c, &scale, &shift);
        bn_apply(J, J->m, J->x + c * J->m, scale, shift, J->y + c * J->m);
    }
}

/* A BN job over the channels, with the other processes' values where the backend has a BN
 * sync hook (vt_backend_cpu_set_bn_sync): `first` gathers this process's sums, the hook sums
 * them over every process, then `pass` runs the op with them; else `pass` alone. */
typedef void (*bn_pass_fn)(void *ctx, size_t c0, size_t c1);
static vt_status bn_run(vt_backend *b, bn_job *J, int channels, bn_pass_fn first, bn_pass_fn pass,
                        int backward, const char *op)
{
    const cpu_backend *cb = (const cpu_backend *)b;
    size_t grain = vt_cpu_grain(J->m);
    if (!cb->bn_sync) {
        vt_pool_run(POOL(b), (size_t)channels, grain, pass, J);
        return VT_OK;
    }
    /* on the stack up to 512 channels: no allocation that could fail on one process only and
     * leave the others in the hook's collective */
    double local[3 * 512];
    double *q = channels <= 512 ? local : vt_malloc(3 * (size_t)channels * sizeof *q);
    if (!q) return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: sums of %d channels", op, channels);
    J->sync = q;
    vt_pool_run(POOL(b), (size_t)channels, grain, first, J);
    vt_status st = cb->bn_sync(cb->bn_sync_ctx, q, channels, backward);
    if (!st) {
        J->synced = 1;
        vt_pool_run(POOL(b), (size_t)channels, grain, pass, J);
    }
    if (q != local) free(q);
    return st;
}

vt_status vt_cpu_bn_forward_train(vt_backend *b, int channels, size_t m, const float *x,
                                  const float *gamma, const float *beta, float eps, float momentum,
                                  float *running_mean, float *running_var, float *save_mean,
                                  float *save_invstd, float *y)
{
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .eps = eps, .momentum = momentum,
                .y = y, .save_mean = save_mean, .save_invstd = save_invstd,
                .run_mean = running_mean, .run_var = running_var, .k = KERNELS(b)};
    return bn_run(b, &J, channels, bn_sync_fwd_channels, bn_train_channels, 0,
                  "bn_forward_train");
}

static void bn_eval_channels(void *ctx, size_t c0, size_t c1)
{
    const bn_job *J = ctx;
    for (size_t c = c0; c < c1; c++) {
        float invstd = 1.0f / sqrtf(J->rv[c] + J->eps);
        float scale = J->gamma[c] * invstd, shift = J->beta[c] - J->rm[c] * scale;
        bn_apply(J, J->m, J->x + c * J->m, scale, shift, J->y + c * J->m);
    }
}

vt_status vt_cpu_bn_forward_eval(vt_backend *b, int channels, size_t m, const float *x,
                                 const float *gamma, const float *beta, float eps,
                                 const float *running_mean, const float *running_var, float *y)
{
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .eps = eps, .rm = running_mean,
                .rv = running_var, .y = y, .k = KERNELS(b)};
    vt_pool_run(POOL(b), (size_t)channels, vt_cpu_grain(m), bn_eval_channels,
                &J);
    return VT_OK;
}

/* The gradient reaching the BN's output, block by block: dy itself (plain BN, or ReLU, whose
 * mask the kernels' grad_sums and grad_dx apply), or for a fused SiLU g = dy * silu'(z) written to tmp,
 * z = x * scale + shift recomputed with the forward's scale and shift. */
static const float *bn_block_grad(const bn_job *J, size_t n, const float *x, const float *dy,
                                  float scale, float shift, float *tmp)
{
    if (J->act != VT_ACT_SILU) return dy;
    J->k->silu_grad(n, x, scale, shift, dy, tmp);
    return tmp;
}

/* Channel c's backward, dy its m output gradients. */
static void bn_bwd_channel(const bn_job *J, size_t c, const float *dy)
{
    size_t m = J->m;
    float tmp[BN_BLOCK];
    int relu = J->act == VT_ACT_RELU;
    {
        const float *x = J->x + c * m;
        float mean = J->mean[c], invstd = J->invstd[c];
        float scale = J->gamma[c] * invstd, shift = J->beta ? J->beta[c] - mean * scale : 0.0f;
        double sdy = 0, sdyx = 0, mm = (double)m;
        /* a fused SiLU's g = dy silu'(z) goes to dx where dx is assigned (not added to) and is
         * not dy, and the sums are this process's (no synchronised BN) */
        float *dxc = J->dx ? J->dx + c * m : NULL;
        int keep_g = J->act == VT_ACT_SILU && dxc && !J->add && !J->sync && dxc != dy;
        if (J->synced) { /* every process's sums (this one's went to dgamma and dbeta) */
            const double *q = J->sync + 3 * c;
            mm = q[0], sdy = q[1], sdyx = q[2];
        } else {
            for (size_t b = 0; b < m; b += BN_BLOCK) {
                size_t n = m - b < BN_BLOCK ? m - b : BN_BLOCK;
                const float *g;
                if (keep_g) { /* a SiLU's g kept in dx: no second pass of its exponentials */
                    J->k->silu_grad(n, x + b, scale, shift, dy + b, dxc + b);
                    g = dxc + b;
                } else {
                    g = bn_block_grad(J, n, x + b, dy + b, scale, shift, tmp);
                }
                J->k->grad_sums(n, x + b, g, relu, scale, shift, mean, &sdy, &sdyx);
            }
            J->dbeta[c] = (float)sdy;
            J->dgamma[c] = (float)(sdyx * invstd);
            if (J->sync) { /* the first pass of a synchronised backward: the sums only */
                double *q = J->sync + 3 * c;
                q[0] = mm, q[1] = sdy, q[2] = sdyx;
                return;
            }
        }
        float dbeta = (float)sdy, dgamma = (float)(sdyx * invstd);
        if (!J->dx) return;
        /* dx += k * (m*g - dbeta - xhat*dgamma), xhat = (x-mean)*invstd, k = gamma*invstd/m */
        float k = J->gamma[c] * invstd / (float)mm;
        float a = k * (float)mm, b0 = -k * dbeta + k * dgamma * invstd * mean,
              b1 = -k * dgamma * invstd;
        if (J->act != VT_ACT_SILU) {
            J->k->grad_dx(m, x, dy, relu, scale, shift, a, b1, b0, J->add, J->dx + c * m);
            return;
        }
        if (keep_g) {
            J->k->grad_dx_inplace(m, x, a, b1, b0, dxc);
            return;
        }
        for (size_t b = 0; b < m; b += BN_BLOCK) { /* SiLU: the block's g once more */
            size_t n = m - b < BN_BLOCK ? m - b : BN_BLOCK;
            const float *g = bn_block_grad(J, n, x + b, dy + b, scale, shift, tmp);
            J->k->grad_dx(n, x + b, g, 0, 0.0f, 0.0f, a, b1, b0, J->add, J->dx + c * m + b);
        }
    }
}

static void bn_bwd_channels(void *ctx, size_t c0, size_t c1)
{
    const bn_job *J = ctx;
    for (size_t c = c0; c < c1; c++) bn_bwd_channel(J, c, J->dy + c * J->m);
}

vt_status vt_cpu_bn_backward(vt_backend *b, int channels, size_t m, const float *x,
                             const float *gamma, const float *save_mean, const float *save_invstd,
                             const float *dy, float *dx, int dx_add, float *dgamma,
                             float *dbeta)
{
    bn_job J = {.m = m, .x = x, .gamma = gamma, .mean = save_mean, .invstd = save_invstd,
                .dy = dy, .dx = dx, .add = dx_add, .dgamma = dgamma, .dbeta = dbeta,
                .k = KERNELS(b)};
    return bn_run(b, &J, channels, bn_bwd_channels, bn_bwd_channels, 1, "bn_backward");
}

vt_status vt_cpu_bn_act_forward_train(vt_backend *b, vt_act act, int channels, size_t m,
                                      const float *x, const float *gamma, const float *beta,
                                      float eps, float momentum, float *running_mean,
                                      float *running_var, float *save_mean, float *save_invstd,
                                      float *y)
{
    vt_status st = vt_bn_act_check(act, "bn_act_forward_train");
    if (st != VT_OK) return st;
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .eps = eps, .momentum = momentum,
                .y = y, .save_mean = save_mean, .save_invstd = save_invstd,
                .run_mean = running_mean, .run_var = running_var, .act = act,
                .k = KERNELS(b)};
    return bn_run(b, &J, channels, bn_sync_fwd_channels, bn_train_channels, 0,
                  "bn_act_forward_train");
}

vt_status vt_cpu_bn_act_forward_eval(vt_backend *b, vt_act act, int channels, size_t m,
                                     const float *x, const float *gamma, const float *beta,
                                     float eps, const float *running_mean, const float *running_var,
                                     float *y)
{
    vt_status st = vt_bn_act_check(act, "bn_act_forward_eval");
    if (st != VT_OK) return st;
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .eps = eps, .rm = running_mean,
                .rv = running_var, .y = y, .act = act, .k = KERNELS(b)};
    vt_pool_run(POOL(b), (size_t)channels, vt_cpu_grain(m), bn_eval_channels,
                &J);
    return VT_OK;
}

vt_status vt_cpu_bn_act_backward(vt_backend *b, vt_act act, int channels, size_t m, const float *x,
                                 const float *y, const float *gamma, const float *beta,
                                 const float *save_mean, const float *save_invstd, const float *dy,
                                 float *dx, int dx_add, float *dgamma, float *dbeta)
{
    vt_status st = vt_bn_act_check(act, "bn_act_backward");
    if (st != VT_OK) return st;
    (void)y; /* the ReLU mask is recomputed from x: one stream less to read */
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .mean = save_mean,
                .invstd = save_invstd, .dy = dy, .dx = dx, .add = dx_add, .dgamma = dgamma,
                .dbeta = dbeta, .act = act, .k = KERNELS(b)};
    return bn_run(b, &J, channels, bn_bwd_channels, bn_bwd_channels, 1, "bn_act_backward");
}

/* ---------------------------------------------------------------- pooling */

typedef struct {
    const vt_pool_desc *d;
    const float *x, *dy;
    float *y, *dx;
    int32_t *idx;
    const int32_t *cidx;
    int add; /* backward: dx += (1) or dx = (0) */
    const vt_cpu_vec_kernels *k;
} pool_job;

static void maxpool_planes(void *ctx, size_t p0, size_t p1)
{
    const pool_job *J = ctx;
    const vt_pool_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    for (size_t p = p0; p < p1; p++) {
        const float *x = J->x + p * HW;
        float *y = J->y + p * OHW;
        int32_t *idx = J->idx + p * OHW;
        for (int oy = 0; oy < d->ho; oy++)
            for (int ox = 0; ox < d->wo; ox++) {
                float best = -FLT_MAX;
                int32_t bi = -1;
                for (int ky = 0; ky < d->k; ky++) {
                    int iy = oy * d->s - d->p + ky;
                    if (iy < 0 || iy >= d->h) continue;
                    for (int kx = 0; kx < d->k; kx++) {
                        int ix = ox * d->s - d->p + kx;
                        if (ix < 0 || ix >= d->w) continue;
                        float v = x[iy * d->w + ix];
                        if (bi < 0 || v > best) {
                            best = v;
                            bi = iy * d->w + ix;
                        }
                    }
                }
                y[oy * d->wo + ox] = bi < 0 ? 0.0f : best;
                idx[oy * d->wo + ox] = bi;
            }
    }
}

/* The common 2x2 stride-2 unpadded window: a plane at a time through the kernels' loop. */
static void maxpool2_planes(void *ctx, size_t p0, size_t p1)
{
    const pool_job *J = ctx;
    const vt_pool_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    for (size_t p = p0; p < p1; p++)
        J->k->maxpool2_plane(J->x + p * HW, d->w, d->ho, d->wo, J->y + p * OHW, J->idx + p * OHW);
}

/* The window bn_act_pool_forward_train and bn_act_pool_backward take: 2x2 stride 2 unpadded
 * over the BN's planes. */
static vt_status bn_pool_check(const vt_pool_desc *d, int channels, size_t m, const char *op)
{
    size_t HW = (size_t)d->h * d->w;
    if (d->k != 2 || d->s != 2 || d->p != 0 || d->ho * 2 > d->h || d->wo * 2 > d->w || HW == 0 ||
        m % HW || (size_t)d->planes != (size_t)channels * (m / HW))
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "%s: pool k=%d s=%d p=%d over %dx%d (%d planes) is not a 2x2 stride-2 "
                       "unpadded window over the BN's %d x %zu values",
                       op, d->k, d->s, d->p, d->h, d->w, d->planes, channels, m);
    return VT_OK;
}

/* bn_act_pool_forward_train: per channel the statistics, then, a few planes at a time (about
 * POOL_CHUNK values), act(bn(x)) into a buffer (bn_apply, as the unfused op computes it) and
 * the pool's planes from there (maxpool2_plane, as maxpool_forward): the same bits as the two ops,
 * the activation staying in cache. */
enum { POOL_CHUNK = 4096 };

static size_t pool_chunk_planes(size_t HW) { return HW >= POOL_CHUNK ? 1 : POOL_CHUNK / HW; }

static void bn_pool_channels(void *ctx, size_t c0, size_t c1)
{
    const bn_job *J = ctx;
    const vt_pool_desc *d = J->pd;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo, N = J->m / HW;
    size_t per = pool_chunk_planes(HW);
    float *buf = J->rows + (size_t)vt_pool_thread() * per * HW; /* this thread's */
    for (size_t c = c0; c < c1; c++) {
        float scale, shift;
        bn_train_stats(J, c, &scale, &shift);
        for (size_t n0 = 0; n0 < N; n0 += per) {
            size_t nb = N - n0 < per ? N - n0 : per;
            bn_apply(J, nb * HW, J->x + (c * N + n0) * HW, scale, shift, buf);
            for (size_t k = 0; k < nb; k++) {
                size_t p = c * N + n0 + k;
                J->k->maxpool2_plane(buf + k * HW, d->w, d->ho, d->wo, J->y + p * OHW,
                                     J->idx + p * OHW);
            }
        }
    }
}

vt_status vt_cpu_bn_act_pool_forward_train(vt_backend *b, vt_act act, int channels, size_t m,
                                           const float *x, const float *gamma, const float *beta,
                                           float eps, float momentum, float *running_mean,
                                           float *running_var, float *save_mean,
                                           float *save_invstd, const vt_pool_desc *d, float *y,
                                           int32_t *idx)
{
    vt_status st = vt_bn_act_check(act, "bn_act_pool_forward_train");
    if (st == VT_OK) st = bn_pool_check(d, channels, m, "bn_act_pool_forward_train");
    if (st != VT_OK) return st;
    size_t HW = (size_t)d->h * d->w;
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .eps = eps, .momentum = momentum,
                .save_mean = save_mean, .save_invstd = save_invstd, .run_mean = running_mean,
                .run_var = running_var, .act = act, .k = KERNELS(b), .pd = d, .y = y,
                .idx = idx};
    size_t th = (size_t)vt_pool_threads(POOL(b));
    if (!(J.rows = vt_cpu_scratch(b, th * pool_chunk_planes(HW) * HW * sizeof(float))))
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "bn_act_pool_forward_train: %zu plane buffers",
                       th);
    return bn_run(b, &J, channels, bn_sync_fwd_channels, bn_pool_channels, 0,
                  "bn_act_pool_forward_train");
}

vt_status vt_cpu_maxpool_forward(vt_backend *b, const vt_pool_desc *d, const float *x, float *y,
                                 int32_t *idx)
{
    pool_job J = {d, x, NULL, y, NULL, idx, NULL, 0, KERNELS(b)};
    int fast = d->k == 2 && d->s == 2 && d->p == 0 && d->ho * 2 <= d->h && d->wo * 2 <= d->w;
    vt_pool_run(POOL(b), (size_t)d->planes, 8, fast ? maxpool2_planes : maxpool_planes, &J);
    return VT_OK;
}

static void maxpool_bwd_planes(void *ctx, size_t p0, size_t p1)
{
    const pool_job *J = ctx;
    const vt_pool_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    for (size_t p = p0; p < p1; p++) {
        const float *dy = J->dy + p * OHW;
        const int32_t *idx = J->cidx + p * OHW;
        float *dx = J->dx + p * HW;
        if (!J->add) memset(dx, 0, HW * sizeof(float)); /* the plane, while it is in cache */
        for (size_t i = 0; i < OHW; i++)
            if (idx[i] >= 0) dx[idx[i]] += dy[i];
    }
}

/* Its backward, assigning dx (h x w): each window's four values written once, dy at its argmax
 * and 0 elsewhere, so the plane is neither zero-filled nor read; the last odd row or column
 * that no window covers gets zeros.  Baseline code on every CPU: GCC's AVX2 build of its
 * interleaved stores ran 20 % slower on Zen 3 (64 channels of 256 images of 14x14 px, BN +
 * ReLU + pool backward 1.5 -> 1.9 ms). */
static void maxpool2_bwd_plane(const float *restrict dy, const int32_t *restrict idx, int h,
                               int w, int ho, int wo, float *restrict dx)
{
    for (int oy = 0; oy < ho; oy++, dy += wo, idx += wo) {
        float *r0 = dx + (size_t)(2 * oy) * w, *r1 = r0 + w;
        int base = 2 * oy * w;
        for (int ox = 0; ox < wo; ox++) {
            int k = idx[ox] - (base + 2 * ox); /* 0, 1, w, w + 1 */
            float g = dy[ox];
            r0[2 * ox] = k == 0 ? g : 0.0f;
            r0[2 * ox + 1] = k == 1 ? g : 0.0f;
            r1[2 * ox] = k == w ? g : 0.0f;
            r1[2 * ox + 1] = k == w + 1 ? g : 0.0f;
        }
        for (int ix = 2 * wo; ix < w; ix++) r0[ix] = r1[ix] = 0.0f;
    }
    for (size_t i = (size_t)2 * ho * w; i < (size_t)h * w; i++) dx[i] = 0.0f;
}

/* The 2x2 stride-2 unpadded window assigning dx (dx_add = 0), a plane at a time */
static void maxpool2_bwd_planes(void *ctx, size_t p0, size_t p1)
{
    const pool_job *J = ctx;
    const vt_pool_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    for (size_t p = p0; p < p1; p++)
        maxpool2_bwd_plane(J->dy + p * OHW, J->cidx + p * OHW, d->h, d->w, d->ho, d->wo,
                           J->dx + p * HW);
}

/* The activation's gradient that bn_act_pool_backward's BN reads, a channel (its planes) at a
 * time into a buffer of this thread: the pool's backward as maxpool_backward assigns it. */
static void bn_pool_bwd_channels(void *ctx, size_t c0, size_t c1)
{
    const bn_job *J = ctx;
    const vt_pool_desc *d = J->pd;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo, N = J->m / HW;
    float *g = J->rows + (size_t)vt_pool_thread() * J->m;
    for (size_t c = c0; c < c1; c++) {
        for (size_t n = 0; n < N; n++)
            maxpool2_bwd_plane(J->dy + (c * N + n) * OHW, J->cidx + (c * N + n) * OHW, d->h,
                               d->w, d->ho, d->wo, g + n * HW);
        bn_bwd_channel(J, c, g);
    }
}

vt_status vt_cpu_bn_act_pool_backward(vt_backend *b, vt_act act, int channels, size_t m,
                                      const float *x, const float *gamma, const float *beta,
                                      const float *save_mean, const float *save_invstd,
                                      const vt_pool_desc *d, const int32_t *idx, const float *dy,
                                      float *dx, int dx_add, float *dgamma, float *dbeta)
{
    vt_status st = vt_bn_act_check(act, "bn_act_pool_backward");
    if (st == VT_OK) st = bn_pool_check(d, channels, m, "bn_act_pool_backward");
    if (st != VT_OK) return st;
    bn_job J = {.m = m, .x = x, .gamma = gamma, .beta = beta, .mean = save_mean,
                .invstd = save_invstd, .dy = dy, .dx = dx, .add = dx_add, .dgamma = dgamma,
                .dbeta = dbeta, .act = act, .k = KERNELS(b), .pd = d, .cidx = idx};
    size_t th = (size_t)vt_pool_threads(POOL(b));
    if (!(J.rows = vt_cpu_scratch(b, th * m * sizeof(float))))
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "bn_act_pool_backward: %zu channel buffers", th);
    return bn_run(b, &J, channels, bn_pool_bwd_channels, bn_pool_bwd_channels, 1,
                  "bn_act_pool_backward");
}

vt_status vt_cpu_maxpool_backward(vt_backend *b, const vt_pool_desc *d, const int32_t *idx,
                                  const float *dy, float *dx, int dx_add)
{
    pool_job J = {d, NULL, dy, NULL, dx, NULL, idx, dx_add, KERNELS(b)};
    int fast = !dx_add && d->k == 2 && d->s == 2 && d->p == 0 && d->ho * 2 <= d->h &&
               d->wo * 2 <= d->w;
    vt_pool_run(POOL(b), (size_t)d->planes, 8, fast ? maxpool2_bwd_planes : maxpool_bwd_planes,
                &J);
    return VT_OK;
}

static void avgpool_planes(void *ctx, size_t p0, size_t p1)
{
    const pool_job *J = ctx;
    const vt_pool_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    float inv = 1.0f / (float)(d->k * d->k);
    for (size_t p = p0; p < p1; p++) {
        for (int oy = 0; oy < d->ho; oy++)
            for (int ox = 0; ox < d->wo; ox++) {
                float s = 0;
                float g = J->dy ? J->dy[p * OHW + oy * d->wo + ox] * inv : 0.0f;
                for (int ky = 0; ky < d->k; ky++) {
                    int iy = oy * d->s - d->p + ky;
                    if (iy < 0 || iy >= d->h) continue;
                    for (int kx = 0; kx < d->k; kx++) {
                        int ix = ox * d->s - d->p + kx;
                        if (ix < 0 || ix >= d->w) continue;
                        if (J->dy) J->dx[p * HW + iy * d->w + ix] += g;
                        else s += J->x[p * HW + iy * d->w + ix];
                    }
                }
                if (!J->dy) J->y[p * OHW + oy * d->wo + ox] = s * inv;
            }
    }
}

vt_status vt_cpu_avgpool_forward(vt_backend *b, const vt_pool_desc *d, const float *x, float *y)
{
    pool_job J = {d, x, NULL, y, NULL, NULL, NULL, 0, KERNELS(b)};
    vt_pool_run(POOL(b), (size_t)d->planes, 8, avgpool_planes, &J);
    return VT_OK;
}

vt_status vt_cpu_avgpool_backward(vt_backend *b, const vt_pool_desc *d, const float *dy, float *dx)
{
    pool_job J = {d, NULL, dy, NULL, dx, NULL, NULL, 1, KERNELS(b)};
    vt_pool_run(POOL(b), (size_t)d->planes, 8, avgpool_planes, &J);
    return VT_OK;
}

typedef struct {
    size_t hw;
    const float *x, *dy;
    float *y, *dx;
    int add;
} gap_job;

static void gap_fwd_planes(void *ctx, size_t p0, size_t p1)
{
    const gap_job *J = ctx;
    for (size_t p = p0; p < p1; p++) {
        const float *row = J->x + p * J->hw;
        float s = 0;
        for (size_t i = 0; i < J->hw; i++) s += row[i];
        J->y[p] = s / (float)J->hw;
    }
}

vt_status vt_cpu_gap_forward(vt_backend *b, size_t planes, size_t hw, const float *x, float *y)
{
    gap_job J = {.hw = hw, .x = x, .y = y};
    vt_pool_run(POOL(b), planes, vt_cpu_grain(hw), gap_fwd_planes, &J);
    return VT_OK;
}

static void gap_bwd_planes(void *ctx, size_t p0, size_t p1)
{
    const gap_job *J = ctx;
    for (size_t p = p0; p < p1; p++) {
        float g = J->dy[p] / (float)J->hw;
        float *restrict row = J->dx + p * J->hw;
        if (J->add)
            for (size_t i = 0; i < J->hw; i++) row[i] += g;
        else
            for (size_t i = 0; i < J->hw; i++) row[i] = g;
    }
}

vt_status vt_cpu_gap_backward(vt_backend *b, size_t planes, size_t hw, const float *dy, float *dx,
                              int dx_add)
{
    gap_job J = {.hw = hw, .dy = dy, .dx = dx, .add = dx_add};
    vt_pool_run(POOL(b), planes, vt_cpu_grain(hw), gap_bwd_planes, &J);
    return VT_OK;
}

/* Nearest 2x upsampling, planes of h x w <-> 2h x 2w, split over the pool by planes. */
typedef struct {
    int h, w;
    const float *src;
    float *dst;
} up2_job;

static void up2_fwd_planes(void *ctx, size_t p0, size_t p1)
{
    const up2_job *J = ctx;
    size_t W2 = (size_t)2 * J->w, hw = (size_t)J->h * J->w;
    for (size_t p = p0; p < p1; p++) {
        const float *src = J->src + p * hw;
        float *dst = J->dst + p * 4 * hw;
        for (int iy = 0; iy < J->h; iy++) {
            float *r0 = dst + (size_t)(2 * iy) * W2;
            const float *s = src + (size_t)iy * J->w;
            for (int ix = 0; ix < J->w; ix++) r0[2 * ix] = r0[2 * ix + 1] = s[ix];
            memcpy(r0 + W2, r0, W2 * sizeof(float));
        }
    }
}

vt_status vt_cpu_upsample2_forward(vt_backend *b, size_t planes, int h, int w, const float *x,
                                   float *y)
{
    up2_job J = {h, w, x, y};
    vt_pool_run(POOL(b), planes, vt_cpu_grain((size_t)4 * h * w), up2_fwd_planes, &J);
    return VT_OK;
}

static void up2_bwd_planes(void *ctx, size_t p0, size_t p1)
{
    const up2_job *J = ctx;
    size_t W2 = (size_t)2 * J->w, hw = (size_t)J->h * J->w;
    for (size_t p = p0; p < p1; p++) {
        const float *src = J->src + p * 4 * hw;
        float *dst = J->dst + p * hw;
        for (int iy = 0; iy < J->h; iy++) {
            const float *r0 = src + (size_t)(2 * iy) * W2, *r1 = r0 + W2;
            float *d = dst + (size_t)iy * J->w;
            for (int ix = 0; ix < J->w; ix++)
                d[ix] += r0[2 * ix] + r0[2 * ix + 1] + r1[2 * ix] + r1[2 * ix + 1];
        }
    }
}

vt_status vt_cpu_upsample2_backward(vt_backend *b, size_t planes, int h, int w, const float *dy,
                                    float *dx)
{
    up2_job J = {h, w, dy, dx};
    vt_pool_run(POOL(b), planes, vt_cpu_grain((size_t)4 * h * w), up2_bwd_planes, &J);
    return VT_OK;
}

/* ---------------------------------------------------------------- dropout */

vt_status vt_cpu_dropout_forward(vt_backend *b, size_t n, float p, uint64_t seed, const float *x,
                                 float *y, float *mask)
{
    (void)b;
    float keep = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++) {
        mask[i] = vt_hash_uniform(seed, i) >= p ? keep : 0.0f;
        y[i] = x[i] * mask[i];
    }
    return VT_OK;
}

vt_status vt_cpu_dropout_backward(vt_backend *b, size_t n, const float *mask, const float *dy,
                                  float *dx)
{
    (void)b;
    for (size_t i = 0; i < n; i++) dx[i] += dy[i] * mask[i];
    return VT_OK;
}

/* ---------------------------------------------------------------- loss */

typedef struct {
    int classes;
    size_t batch;
    const float *logits;
    const int32_t *labels;
    float off, on, grad_scale;
    double *part; /* per chunk: the loss of its labelled samples */
    float *dlogits, *probs;
    const vt_cpu_vec_kernels *k;
} xent_job;

enum { XENT_CHUNK = 2048, XENT_BLOCK = 256 }; /* chunk sums are added in chunk order */

/* Samples of chunks [c0, c1), XENT_BLOCK at a time: mx = max_k l_k, e_k = exp(l_k - mx) (the
 * backend's vector exp; kept in probs or dlogits when the caller asked for one, else in a
 * local row), p_k = e_k / sum_k e_k; the loss, -sum_k q_k log p_k = lse - sum_k q_k l_k with
 * lse = log(sum_k e_k) + mx (the q_k add up to 1), in double. */
static void xent_chunks(void *ctx, size_t c0, size_t c1)
{
    const xent_job *J = ctx;
    size_t B = J->batch;
    int C = J->classes;
    float mx[XENT_BLOCK], se[XENT_BLOCK], row[XENT_BLOCK];
    double lsum[XENT_BLOCK];
    for (size_t c = c0; c < c1; c++) {
        size_t end = (c + 1) * XENT_CHUNK < B ? (c + 1) * XENT_CHUNK : B;
        double total = 0;
        for (size_t n0 = c * XENT_CHUNK; n0 < end; n0 += XENT_BLOCK) {
            size_t S = end - n0 < XENT_BLOCK ? end - n0 : XENT_BLOCK;
            const float *l0 = J->logits + n0;
            for (size_t s = 0; s < S; s++) mx[s] = l0[s], se[s] = 0.0f;
            for (int k = 1; k < C; k++)
                for (size_t s = 0; s < S; s++) {
                    float v = l0[(size_t)k * B + s];
                    mx[s] = v > mx[s] ? v : mx[s];
                }
            float *keep = J->probs ? J->probs + n0 : J->dlogits ? J->dlogits + n0 : NULL;
            for (int k = 0; k < C; k++) {
                float *e = keep ? keep + (size_t)k * B : row;
                J->k->exp_diff(S, l0 + (size_t)k * B, mx, e);
                for (size_t s = 0; s < S; s++) se[s] += e[s];
            }
            /* sum_k l_k per sample, class rows in order (contiguous, vectorised) */
            for (size_t s = 0; s < S; s++) lsum[s] = 0.0;
            for (int k = 0; k < C; k++)
                for (size_t s = 0; s < S; s++) lsum[s] += (double)l0[(size_t)k * B + s];
            const int32_t *lab = J->labels + n0;
            for (size_t s = 0; s < S; s++) {
                if (lab[s] < 0) continue;
                double ql =
                    J->off * lsum[s] + (J->on - J->off) * (double)l0[(size_t)lab[s] * B + s];
                total += log((double)se[s]) + mx[s] - ql;
            }
            if (!keep) continue;
            for (size_t s = 0; s < S; s++) se[s] = 1.0f / se[s];
            /* p_k in place of e_k (the probabilities' row, or the gradient's when there are
             * none), then the gradient from it: whole rows, so the loops vectorise */
            for (int k = 0; k < C; k++) {
                float *e = keep + (size_t)k * B;
                for (size_t s = 0; s < S; s++) e[s] *= se[s];
                if (!J->dlogits) continue;
                float *dl = J->dlogits + n0 + (size_t)k * B;
                float on = J->on, off = J->off, gs = J->grad_scale;
                for (size_t s = 0; s < S; s++) { /* v for every sample: no branch */
                    float v = (e[s] - (lab[s] == k ? on : off)) * gs;
                    dl[s] = lab[s] < 0 ? 0.0f : v;
                }
            }
        }
        J->part[c] = total;
    }
}

vt_status vt_cpu_softmax_xent(vt_backend *b, int classes, int batch, const float *logits,
                              const int32_t *labels, float smoothing, float grad_scale,
                              float *loss_sum, float *dlogits, float *probs)
{
    for (int n = 0; n < batch; n++)
        if (labels[n] < -1 || labels[n] >= classes)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "label %d of sample %d is outside 0..%d",
                           labels[n], n, classes - 1);
    size_t chunks = ((size_t)batch + XENT_CHUNK - 1) / XENT_CHUNK;
    double *part = vt_cpu_scratch(b, (chunks ? chunks : 1) * sizeof(double));
    if (!part) return VT_ERR_OUT_OF_MEMORY;
    float off = smoothing / (float)classes;
    xent_job J = {classes, (size_t)batch, logits, labels, off, 1.0f - smoothing + off,
                  grad_scale, part, dlogits, probs, KERNELS(b)};
    vt_pool_run(POOL(b), chunks, 1, xent_chunks, &J);
    double total = 0;
    for (size_t c = 0; c < chunks; c++) total += part[c];
    *loss_sum = (float)total;
    return VT_OK;
}

typedef struct {
    int classes;
    size_t batch;
    const float *probs;
    const int32_t *labels;
    double *sums; /* per class: I_k, C_k */
    const float *ab;
    float *dlogits;
} dice_job;

/* Classes [k0, k1): I_k and C_k over the labelled pixels, in pixel order (deterministic). */
static void dice_sums(void *ctx, size_t k0, size_t k1)
{
    const dice_job *J = ctx;
    for (size_t k = k0; k < k1; k++) {
        const float *p = J->probs + k * J->batch;
        double inter = 0, card = 0;
        for (size_t i = 0; i < J->batch; i++) {
            int32_t y = J->labels[i];
            if (y < 0) continue;
            card += p[i] + (y == (int32_t)k);
            if (y == (int32_t)k) inter += p[i];
        }
        J->sums[2 * k] = inter;
        J->sums[2 * k + 1] = card;
    }
}

/* Pixels [i0, i1): vt_dice_pixel_grad's arithmetic, in the same order per pixel, a block of
 * pixels at a time: each class's row of the block is read contiguously (the pixel-by-pixel
 * loop strides over the classes' planes, a cache line per class and pixel) and the loops
 * vectorise. */
enum { DICE_BLOCK = 512 };
static void dice_grad(void *ctx, size_t i0, size_t i1)
{
    const dice_job *J = ctx;
    float dot[DICE_BLOCK];
    for (size_t b0 = i0; b0 < i1; b0 += DICE_BLOCK) {
        size_t m = i1 - b0 < DICE_BLOCK ? i1 - b0 : DICE_BLOCK;
        const int32_t *y = J->labels + b0;
        for (size_t j = 0; j < m; j++) dot[j] = 0.0f;
        for (int k = 0; k < J->classes; k++) {
            const float *p = J->probs + (size_t)k * J->batch + b0;
            float A = J->ab[2 * k], B = J->ab[2 * k + 1];
            for (size_t j = 0; j < m; j++) dot[j] += p[j] * (B + (y[j] == k ? A : 0.0f));
        }
        for (int k = 0; k < J->classes; k++) {
            const float *p = J->probs + (size_t)k * J->batch + b0;
            float *dz = J->dlogits + (size_t)k * J->batch + b0;
            float A = J->ab[2 * k], B = J->ab[2 * k + 1];
            for (size_t j = 0; j < m; j++) {
                float g = p[j] * ((B + (y[j] == k ? A : 0.0f)) - dot[j]);
                dz[j] += y[j] >= 0 ? g : 0.0f;
            }
        }
    }
}

vt_status vt_cpu_softmax_dice(vt_backend *b, int classes, int batch, const float *probs,
                              const int32_t *labels, float weight, float *loss, float *dlogits)
{
    if (classes < 1 || batch < 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "softmax_dice: classes=%d batch=%d", classes,
                       batch);
    for (int n = 0; n < batch; n++)
        if (labels[n] < -1 || labels[n] >= classes)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "label %d of sample %d is outside 0..%d",
                           labels[n], n, classes - 1);
    double *sums = vt_malloc((size_t)classes * 2 * sizeof(double));
    float *ab = vt_malloc((size_t)classes * 2 * sizeof(float));
    if (!sums || !ab) {
        free(sums);
        free(ab);
        return VT_ERR_OUT_OF_MEMORY;
    }
    dice_job J = {classes, (size_t)batch, probs, labels, sums, ab, dlogits};
    vt_pool_run(POOL(b), (size_t)classes, 1, dice_sums, &J);
    /* several processes training one model: the Dice of all their pixels, and the gradient's
     * weight in the units of this process's share (vt_backend_cpu_set_loss_sync) */
    const cpu_backend *cb = (const cpu_backend *)b;
    double gscale = 1;
    if (cb->loss_sync) {
        vt_status st = cb->loss_sync(cb->loss_sync_ctx, sums, 2 * classes, &gscale);
        if (st) {
            free(sums);
            free(ab);
            return st;
        }
    }
    double mean = 0;
    for (int k = 0; k < classes; k++) {
        mean += vt_dice_class(sums[2 * k], sums[2 * k + 1]);
        vt_dice_coef(classes, (float)(weight * gscale), sums[2 * k], sums[2 * k + 1], &ab[2 * k],
                     &ab[2 * k + 1]);
    }
    *loss = (float)(weight * (1.0 - mean / classes));
    if (dlogits) vt_pool_run(POOL(b), (size_t)batch, GRAIN, dice_grad, &J);
    free(sums);
    free(ab);
    return VT_OK;
}

/* ---------------------------------------------------------------- optimisers */

typedef struct {
    float *p, *m, *v;
    const float *g;
    float lr, mom, wd, b1, b2, eps, bc1, bc2;
    int nesterov;
} opt_job;

static void sgd_range(void *ctx, size_t b, size_t e)
{
    const opt_job *J = ctx;
    for (size_t i = b; i < e; i++)
        vt_sgd_update(&J->p[i], J->g[i], &J->m[i], J->lr, J->mom, J->wd, J->nesterov);
}

vt_status vt_cpu_sgd_step(vt_backend *b, size_t n, float *p, const float *g, float *m, float lr,
                          float momentum, float wd, int nesterov)
{
    opt_job J = {.p = p, .m = m, .g = g, .lr = lr, .mom = momentum, .wd = wd,
                 .nesterov = nesterov};
    vt_pool_run(POOL(b), n, GRAIN, sgd_range, &J);
    return VT_OK;
}

static void adamw_range(void *ctx, size_t b, size_t e)
{
    const opt_job *J = ctx;
    for (size_t i = b; i < e; i++)
        vt_adamw_update(&J->p[i], J->g[i], &J->m[i], &J->v[i], J->lr, J->b1, J->b2, J->eps, J->wd,
                        J->bc1, J->bc2);
}

vt_status vt_cpu_adamw_step(vt_backend *b, size_t n, float *p, const float *g, float *m, float *v,
                            float lr, float beta1, float beta2, float eps, float wd, float bc1,
                            float bc2)
{
    opt_job J = {.p = p, .m = m, .v = v, .g = g, .lr = lr, .wd = wd, .b1 = beta1, .b2 = beta2,
                 .eps = eps, .bc1 = bc1, .bc2 = bc2};
    vt_pool_run(POOL(b), n, GRAIN, adamw_range, &J);
    return VT_OK;
}

static const vt_backend_ops cpu_ops = {
    .api_version = VT_BACKEND_API_VERSION,
    .name = "cpu",
    .destroy = vt_cpu_destroy,
    .alloc = vt_cpu_alloc,
    .free = vt_cpu_free,
    .upload = vt_cpu_copy,
    .upload_rows = vt_cpu_upload_rows,
    .download = vt_cpu_copy,
    .copy = vt_cpu_copy,
    .fill = vt_cpu_fill,
    .synchronize = vt_cpu_synchronize,
    .gemm = vt_cpu_gemm,
    .axpy = vt_cpu_axpy,
    .add = vt_cpu_add,
    .bias_add = vt_cpu_bias_add,
    .channel_sum = vt_cpu_channel_sum,
    .conv_workspace = vt_cpu_conv_workspace,
    .conv_forward = vt_cpu_conv_forward,
    .conv_backward = vt_cpu_conv_backward,
    .act_forward = vt_cpu_act_forward,
    .act_backward = vt_cpu_act_backward,
    .bn_forward_train = vt_cpu_bn_forward_train,
    .bn_forward_eval = vt_cpu_bn_forward_eval,
    .bn_backward = vt_cpu_bn_backward,
    .maxpool_forward = vt_cpu_maxpool_forward,
    .maxpool_backward = vt_cpu_maxpool_backward,
    .avgpool_forward = vt_cpu_avgpool_forward,
    .avgpool_backward = vt_cpu_avgpool_backward,
    .gap_forward = vt_cpu_gap_forward,
    .gap_backward = vt_cpu_gap_backward,
    .upsample2_forward = vt_cpu_upsample2_forward,
    .upsample2_backward = vt_cpu_upsample2_backward,
    .dropout_forward = vt_cpu_dropout_forward,
    .dropout_backward = vt_cpu_dropout_backward,
    .softmax_xent = vt_cpu_softmax_xent,
    .det_loss = vt_cpu_det_loss,
    .mask_loss = vt_cpu_mask_loss,
    .sgd_step = vt_cpu_sgd_step,
    .adamw_step = vt_cpu_adamw_step,
    .bn_act_forward_train = vt_cpu_bn_act_forward_train,
    .bn_act_forward_eval = vt_cpu_bn_act_forward_eval,
    .bn_act_backward = vt_cpu_bn_act_backward,
    .bn_act_pool_forward_train = vt_cpu_bn_act_pool_forward_train,
    .bn_act_pool_backward = vt_cpu_bn_act_pool_backward,
    .host_memory = 1,
    .conv_columns = vt_cpu_conv_columns,
    .copy2d = vt_cpu_copy2d,
    .axpy2d = vt_cpu_axpy2d,
    .softmax_dice = vt_cpu_softmax_dice,
};

vt_status vt_backend_cpu_create(vt_backend **out, int threads)
{
    *out = NULL;
    cpu_backend *b = vt_calloc(1, sizeof *b);
    if (!b) return VT_ERR_OUT_OF_MEMORY;
    b->base.ops = &cpu_ops;
    /* im2col tile: 1 MiB.  BLIS's packed GEMM copies the tile into its own L2-sized blocks
     * anyway, so the tile only needs to stay in L3; 1 MiB beat 512 KiB by 5% at batch 256
     * (A/B, small CNN, 16 pairs) and was even at batch 64 */
    b->conv_cap = (size_t)256 << 10;
    b->k = vt_cpu_vec_kernels_for_cpu();
    b->gemm = vt_sgemm;
    b->conv_min_cols = 256;
    b->conv_avx512 = vt_cpu_x86_level() >= 3;
    /* 3x3 stride-1 convolutions in Winograd F(4x4, 3x3) or F(2x2, 3x3) (bench/README.md,
     * "Winograd"); VT_CPU_WINOGRAD=2 keeps to 2x2 tiles, =0 runs them as im2col + GEMM, for
     * comparisons */
    b->conv_winograd = vt_backend_cpu_winograd_default();
    b->conv_winograd_bf16 = vt_backend_cpu_winograd_bf16_default();
    vt_status st = vt_pool_create(&b->pool, threads);
    if (st) {
        free(b);
        return st;
    }
    *out = &b->base;
    return VT_OK;
}

/* precision=bf16's products: bf16 where the micro-kernel's 32 columns and its k pairs are
 * filled, fp32 for the thin ones (a first convolution's 9-deep forward and its 9-column weight
 * gradient ran at 1.2x and 0.44x of fp32 in bf16: bench/README.md, "bf16 on the CPU"). */
static void gemm_bf16_where_it_pays(vt_pool *pool, int ta, int tb, int m, int n, int k,
                                    float alpha, const float *a, int lda, const float *b,
                                    int ldb, float beta, float *c, int ldc)
{
    if (n < 16 || k < 16) vt_sgemm(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else vt_gemm_bf16(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void vt_backend_cpu_set_bf16(vt_backend *b, int on)
{
    ((cpu_backend *)b)->gemm = on ? gemm_bf16_where_it_pays : vt_sgemm;
}

void vt_backend_cpu_set_loss_sync(vt_backend *b, vt_loss_sync_fn fn, void *ctx)
{
    ((cpu_backend *)b)->loss_sync = fn;
    ((cpu_backend *)b)->loss_sync_ctx = fn ? ctx : NULL;
}

void vt_backend_cpu_set_bn_sync(vt_backend *b, vt_bn_sync_fn fn, void *ctx)
{
    ((cpu_backend *)b)->bn_sync = fn;
    ((cpu_backend *)b)->bn_sync_ctx = fn ? ctx : NULL;
}

int vt_backend_cpu_set_conv_simd(vt_backend *b, int on)
{
    return ((cpu_backend *)b)->conv_avx512 = on && vt_cpu_x86_level() >= 3;
}

int vt_backend_cpu_set_winograd(vt_backend *b, int on)
{
    int was = ((cpu_backend *)b)->conv_winograd;
    ((cpu_backend *)b)->conv_winograd = on == 0 ? 0 : on == 2 ? 2 : 4;
    return was;
}

int vt_backend_cpu_force_winograd(vt_backend *b, int tile)
{
    int was = ((cpu_backend *)b)->conv_winograd_force;
    ((cpu_backend *)b)->conv_winograd_force = tile == 2 || tile == 4 ? tile : 0;
    return was;
}

int vt_backend_cpu_set_winograd_bf16(vt_backend *b, int on)
{
    int was = ((cpu_backend *)b)->conv_winograd_bf16;
    ((cpu_backend *)b)->conv_winograd_bf16 = on != 0;
    return was;
}

void vt_backend_cpu_set_conv_cap(vt_backend *b, size_t floats)
{
    ((cpu_backend *)b)->conv_cap = floats ? floats : 1;
    ((cpu_backend *)b)->conv_min_cols = 1;
}
