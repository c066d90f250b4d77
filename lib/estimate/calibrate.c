/* Calibration of the estimator by real measurement on the local device (CPU or GPU), and the
 * calibration files.  The method is described in the cost-model comment of estimate.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "core/atomic_file.h"
#include "estimate/estimator_impl.h"
#include "nn/model.h"
#include "train/trainer_probe.h"

/* ---- calibration ---------------------------------------------------------------------------- */

#include "backend/backend.h"
#include "backend/device.h"
#include "backend/gemm.h"

/* The probes run the backend's own conv and BN/ReLU kernels, and their times are read back
 * through the same formula as the model's layers, so R, s0 and BW mean what the formula means. */
typedef struct probe {
    vt_backend *b;
    int bn;          /* 0: conv forward + backward; 1: BN + ReLU forward + backward;
                      * 2: the same through the backend's fused BN + ReLU op; 3: fused BN +
                      * SiLU */
    vt_conv_desc d;  /* conv */
    int c;           /* BN channels */
    size_t m;        /* BN values per channel */
    float *p[12];
    void *ws;
    int wino;        /* a CPU conv probe: the backend's Winograd switch for it (0 / 1); -1 */
} probe;

static void probe_switch(probe *q)
{
    if (q->wino >= 0) vt_backend_cpu_set_winograd(q->b, q->wino);
}

static vt_status probe_call(probe *q)
{
    const vt_backend_ops *o = q->b->ops;
    float **p = q->p;
    vt_status st;
    probe_switch(q);
    if (!q->bn) {
        st = o->conv_forward(q->b, &q->d, p[0], p[1], NULL, p[2], q->ws);
        return st ? st : o->conv_backward(q->b, &q->d, p[0], p[1], p[3], p[4], p[5], NULL, q->ws);
    }
    size_t n = (size_t)q->c * q->m;
    if (q->bn >= 2) { /* the backend's fused BN + ReLU (or SiLU), as the executor runs them */
        vt_act act = q->bn == 3 ? VT_ACT_SILU : VT_ACT_RELU;
        st = o->bn_act_forward_train(q->b, act, q->c, q->m, p[0], p[6], p[7], 1e-5f, 0.1f, p[8],
                                     p[9], p[10], p[11], p[1]);
        return st ? st
                  : o->bn_act_backward(q->b, act, q->c, q->m, p[0], p[1], p[6], p[7], p[10],
                                       p[11], p[3], p[5], 0, p[7], p[8]);
    }
    st = o->bn_forward_train(q->b, q->c, q->m, p[0], p[6], p[7], 1e-5f, 0.1f, p[8], p[9], p[10],
                             p[11], p[1]);
    if (!st) st = o->act_forward(q->b, VT_ACT_RELU, 0, n, p[1], p[2]);
    if (!st) st = o->act_backward(q->b, VT_ACT_RELU, 0, n, p[1], p[2], p[3], p[4]);
    if (!st) st = o->bn_backward(q->b, q->c, q->m, p[0], p[6], p[10], p[11], p[4], p[5], 0, p[7], p[8]);
    return st;
}

/* The probe's buffers (and its conv workspace) on its backend, as the executor would run it. */
static vt_status probe_setup(probe *q)
{
    const vt_backend_ops *o = q->b->ops;
    size_t sz[12] = {0};
    if (!q->bn) {
        const vt_conv_desc *d = &q->d;
        size_t x = (size_t)d->cin * d->n * d->h * d->w, y = (size_t)d->cout * d->n * d->ho * d->wo,
               w = (size_t)d->cout * d->cin * d->kh * d->kw;
        size_t t[6] = {x, w, y, y, x, w};
        memcpy(sz, t, sizeof t);
    } else {
        size_t n = (size_t)q->c * q->m;
        for (int i = 0; i < 6; i++) sz[i] = n;
        for (int i = 6; i < 12; i++) sz[i] = (size_t)q->c;
    }
    vt_status st = VT_OK;
    for (int i = 0; i < 12 && st == VT_OK; i++) {
        if (!sz[i]) continue;
        q->p[i] = o->alloc(q->b, sz[i] * 4);
        st = q->p[i] ? o->fill(q->b, q->p[i], sz[i], 0.01f * (float)(i + 1)) : VT_ERR_DEVICE_OOM;
    }
    /* as the executor runs the layer: its own kept buffer when the backend offers one */
    probe_switch(q);
    size_t keep = !q->bn && o->conv_columns ? o->conv_columns(q->b, &q->d) : 0;
    q->d.keep_columns = keep > 0;
    size_t wsb = q->bn ? 0 : keep ? keep : o->conv_workspace(q->b, &q->d);
    if (st == VT_OK && wsb && !(q->ws = o->alloc(q->b, wsb))) st = VT_ERR_DEVICE_OOM;
    if (st == VT_OK) st = probe_call(q); /* warm-up */
    if (st == VT_OK) st = o->synchronize(q->b);
    return st;
}

static void probe_release(probe *q)
{
    for (int i = 0; i < 12; i++) q->b->ops->free(q->b, q->p[i]), q->p[i] = NULL;
    q->b->ops->free(q->b, q->ws);
    q->ws = NULL;
}

/* Best seconds per call of each of n probes over PROBE_WINDOWS windows of min_s[i] /
 * PROBE_WINDOWS each, the probes taking turns window by window: the device's capability, not
 * the neighbours' noise (the model steps absorb steady slowdowns through k), and a change of
 * the machine's speed falls on all probes alike (timed one after the other, the three conv
 * probes' R, s0 and row_s swung the CPU estimates of wide models against narrow ones by 20 %). */
#define PROBE_WINDOWS 6
static vt_status probe_time(probe *const *q, int n, const double *min_s, double *best)
{
    vt_status st = VT_OK;
    for (int i = 0; i < n && st == VT_OK; i++) st = probe_setup(q[i]);
    for (int i = 0; i < n; i++) best[i] = 1e30;
    for (int w = 0; w < PROBE_WINDOWS && st == VT_OK; w++)
        for (int i = 0; i < n && st == VT_OK; i++) {
            double t0 = vt_now(), t;
            int reps = 0;
            do {
                st = probe_call(q[i]);
                if (st == VT_OK) st = q[i]->b->ops->synchronize(q[i]->b);
                reps++;
                t = vt_now() - t0;
            } while (st == VT_OK && t < min_s[i] / PROBE_WINDOWS && reps < 100000);
            best[i] = fmin(best[i], t / reps);
        }
    for (int i = 0; i < n; i++) probe_release(q[i]);
    for (int i = 0; i < n && st == VT_OK; i++)
        if (!(best[i] > 0)) st = vt_fail(VT_ERR_NUMERIC, "a probe took no measurable time");
    return st;
}

static void conv3x3(vt_conv_desc *d, int n, int c, int hw)
{
    vt_conv_desc x = {n, c, hw, hw, c, hw, hw, 3, 3, 1, 1, 1, 1, 1, 0};
    *d = x;
}

/* Seconds per byte of the transforms of Winograd probe d, which took t: what its GEMMs do not
 * take by the probes' R and s0 (at least 5 % of t). */
static double wino_probe_s(const vt_conv_desc *d, double t, const vt_devmodel *dm)
{
    int tile = vt_est_wino_tile(d, dm->wino_bf16);
    double dw = d->cout, F = 6.0 * d->cout * 9 * d->cin * d->ho * d->wo * d->n;
    double gemm = vt_est_wino_gemm_share(tile, d->h) * F / (dm->rate * dw / (dw + dm->s0));
    return fmax(t - gemm, 0.05 * t) / vt_est_wino_bytes(tile, d->cin, d->cout, d->h, d->n, 1);
}

/* probe_s: the measurement time of the small conv probe (the BN probe gets half, the large conv
 * probe twice): a longer look gives a steadier R and s0 on a shared machine. */
static vt_status probe_device(const vt_device *dev, vt_prec prec, double probe_s, vt_devmodel *dm)
{
    vt_backend *b = NULL;
    int on_gpu = vt_device_is_gpu(dev);
    vt_status st = vt_device_backend(dev, prec == VT_PREC_FP32   ? VT_DEVICE_PRECISION_FP32
                                          : prec == VT_PREC_BF16 ? VT_DEVICE_PRECISION_BF16
                                                                 : VT_DEVICE_PRECISION_DEFAULT,
                                     &b);
    if (st != VT_OK) return st;
    int scale = on_gpu ? 16 : 1;
    const vt_backend_ops *o = b->ops;
    /* the three conv probes measure im2col + GEMM; on the CPU with Winograd on (at bf16 where
     * the backend takes it with bf16 products), a fourth, a convolution that the backend runs
     * in Winograd, gives its ratio to the formula's im2col GEMMs and row copies, the seconds
     * per byte of its transforms (wino_s); all take turns (probe_time) */
    dm->wino_bf16 = !on_gpu && prec == VT_PREC_BF16;
    int wino = !on_gpu && (prec == VT_PREC_FP32 || prec == VT_PREC_BF16) &&
               vt_est_cpu_wino_prior(prec, 1) > 0 && vt_backend_cpu_set_winograd(b, 0);
    int fused = o->bn_act_forward_train && o->bn_act_backward;
    probe bn = {b, fused ? 2 : 1, {0}, 32 * (on_gpu ? 2 : 1), (size_t)65536 * scale, {0}, NULL,
                -1};
    /* on the CPU, BN + SiLU beside it: its exponentials' time (exp_s) */
    probe bs = bn;
    bs.bn = 3;
    int silu = !on_gpu && fused;
    probe c1 = {b, 0, {0}, 0, 0, {0}, NULL, on_gpu ? -1 : 0}, c2 = c1, c3 = c1, c4 = c1;
    conv3x3(&c1.d, 16 * scale, 32, 32); /* GEMM size d = 32 */
    conv3x3(&c2.d, 16 * scale, 256, 8); /* d = 256 */
    conv3x3(&c3.d, 16, 64, 4);          /* CPU: 4-pixel rows, for the row term */
    conv3x3(&c4.d, 16, 128, 16); /* Winograd: 16 4x4 tiles an image (64 -> 64 at 32x32, 64 an
                                  * image, as many FLOPs: det-n 320 px predicted at -16 % when
                                  * the share fix sped up the im2col probes; -8.5 % with this) */
    c4.wino = wino; /* the backend's own setting */
    probe *all[6] = {&bn, &c1, &c2, &c3};
    double budget[6] = {0.5 * probe_s, probe_s, 2 * probe_s, probe_s}, tm[6] = {0};
    int np = on_gpu ? 3 : 4, iw = np, is = np + wino; /* the Winograd and SiLU probes' places */
    if (wino) all[np] = &c4, budget[np++] = probe_s;
    if (silu) all[np] = &bs, budget[np++] = 0.5 * probe_s;
    st = probe_time(all, np, budget, tm);
    double tb = tm[0], t1 = tm[1], t2 = tm[2], t3 = tm[3];
    vt_backend_destroy(b);
    if (st != VT_OK) return st;
    /* BN (10 passes of n values in the formula) + ReLU (7, none when fused into the BN) */
    dm->bw = (fused ? 10.0 : 17.0) * 4 * (double)bn.c * bn.m / tb;
    dm->fuse_bn_act = fused;
    dm->gemm_size_n = on_gpu;
    /* conv: t = F/(R*phi) + X*4/BW (+ the column passes, GPU; + the rows, CPU): the CPU's
     * three probes give R, s0 and row_s, a GPU's two R and s0 (its kernels have no rows) */
    dm->col_passes = on_gpu ? VT_GPU_COL_PASSES : 0;
    dm->strided_col_passes = on_gpu ? 0 : VT_CPU_STRIDED_COL_PASSES;
    const probe *pr[3] = {&c1, &c2, &c3};
    double t[3] = {t1, t2, t3}, F[3], D[3], rows[3];
    for (int i = 0; i < 3; i++) {
        const vt_conv_desc *d = &pr[i]->d;
        double K = 9.0 * d->cin, cols = K * d->ho * d->wo * d->n;
        F[i] = 6.0 * d->cout * cols;
        D[i] = d->cout;
        rows[i] = K * d->ho * d->n;
        t[i] -= dm->col_passes * 4.0 * cols / dm->bw;
    }
    if (!(t[0] > 0) || !(t[1] > 0))
        return vt_fail(VT_ERR_NUMERIC, "calibration probes: the convolutions took less than "
                       "their column traffic (machine overloaded?)");
    vt_est_solve_probes(on_gpu ? 2 : 3, t, F, D, rows, dm);
    /* a Winograd probe's time beyond its GEMMs, per byte of its transforms */
    dm->wino_s = wino ? wino_probe_s(&c4.d, tm[iw], dm) : 0;
    /* BN + SiLU's time beyond BN + ReLU's, per value and exponential (2 a value) */
    dm->exp_s = silu ? fmax(tm[is] - tb, 0) / (2.0 * bs.c * bs.m) : 0;
    dm->h2d_bw = on_gpu ? H2D_BW : 0; /* the calibration's steps measure it (time_steps) */
    dm->act_bytes = 4;
    dm->layer_s = dm->step_s = 0;
    return VT_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void vt_est_solve_probes(int n, const double *t, const double *F, const double *d,
                         const double *rows, vt_devmodel *dm)
{
    /* t = F*x0 + (F/d)*x1 + rows*x2 with x0 = 1/R, x1 = s0/R, x2 = row_s: Cramer's rule */
    double a[3][3], x[3] = {0, 0, 0}, det = 0;
    if (n == 3) {
        for (int i = 0; i < 3; i++) a[i][0] = F[i], a[i][1] = F[i] / d[i], a[i][2] = rows[i];
#define DET3(m)                                                                                    \
    ((m)[0][0] * ((m)[1][1] * (m)[2][2] - (m)[1][2] * (m)[2][1]) -                                 \
     (m)[0][1] * ((m)[1][0] * (m)[2][2] - (m)[1][2] * (m)[2][0]) +                                 \
     (m)[0][2] * ((m)[1][0] * (m)[2][1] - (m)[1][1] * (m)[2][0]))
        det = DET3(a);
        for (int c = 0; c < 3 && det != 0; c++) {
            double m[3][3];
            memcpy(m, a, sizeof m);
            for (int i = 0; i < 3; i++) m[i][c] = t[i];
            x[c] = DET3(m) / det;
        }
#undef DET3
    }
    if (det != 0 && x[0] > 0 && x[1] >= 0 && x[2] > 0) {
        dm->rate = 1 / x[0];
        dm->s0 = fmin(x[1] / x[0], 4096);
        dm->row_s = x[2];
        return;
    }
    double r1 = F[0] / t[0], r2 = F[1] / t[1], den = r1 / d[0] - r2 / d[1];
    dm->s0 = r2 > r1 && den > 0 ? fmin((r2 - r1) / den, 4096) : 0;
    dm->rate = r2 * (d[1] + dm->s0) / d[1];
    dm->row_s = 0;
}

typedef struct calib_ctx {
    vt_model *model;
    const char *device;
    int imgsz, channels, classes;
    vt_prec prec; /* the steps' precision: fp32 or TF32 on a GPU, fp32 or bf16 on the CPU */
} calib_ctx;

/* Lower-quartile seconds of a training step at each of nb batch sizes (after a warm-up step
 * each, which allocates): on a shared machine the slow steps are the neighbours' doing, not the
 * model's.  The batch sizes take turns (about 6 rounds of turns of budget / (6 nb) seconds), so
 * a change of the machine's speed during the measurement falls on all of them alike and the
 * fit of k and c below sees the model, not the change (measured one after the other, c moved
 * 0-36 us per layer from run to run on the 2-core CI machine).  The first step of a turn finds
 * the caches holding another batch's buffers and is not counted (counted, c came out 50 us per
 * layer).  That holds all nb trainers at once: the GPU calibration, whose device does not
 * change speed, passes one batch size at a time.  budget: seconds of steps in all (at least 3
 * rounds, but none starts past 4x budget: budget 0 times one step after the warm-ups, to see
 * that the batch fits).  h2d_bw (may be NULL): the input upload's rate at the last batch size.
 * wino (may be NULL): each trainer's CPU Winograd setting (vt_trainer_set_cpu_winograd), so that
 * the same model with and without it takes turns too.  Up to TIME_CONFIGS trainers. */
#define STEP_SAMPLES 128
enum { TIME_CONFIGS = 6 };
static vt_status time_steps(const calib_ctx *cx, const int *batches, int nb, double budget,
                            double *seconds, double *h2d_bw, const int *wino)
{
    int bmax = 0;
    for (int j = 0; j < nb; j++) bmax = batches[j] > bmax ? batches[j] : bmax;
    size_t n = (size_t)bmax * cx->channels * cx->imgsz * cx->imgsz;
    float *img = vt_malloc(n * sizeof *img);
    vt_trainer *t[TIME_CONFIGS] = {NULL};
    double ts[TIME_CONFIGS][STEP_SAMPLES];
    vt_status st = nb < 1 || nb > TIME_CONFIGS
                       ? vt_fail(VT_ERR_INTERNAL, "time_steps: %d batch sizes", nb)
                   : img ? VT_OK
                         : VT_ERR_OUT_OF_MEMORY;
    int j = 0, cnt[TIME_CONFIGS] = {0}, full = 0, failed = -1; /* failed: whose step failed */
    for (size_t i = 0; st == VT_OK && i < n; i++) img[i] = vt_hash_uniform(7, i);
    for (; j < nb && st == VT_OK; j++) {
        char kv[96];
        st = vt_trainer_create(&t[j], cx->model, NULL);
        if (st == VT_OK) snprintf(kv, sizeof kv, "batch=%d", batches[j]), st = vt_trainer_set(t[j], kv);
        if (st == VT_OK) snprintf(kv, sizeof kv, "imgsz=%d", cx->imgsz), st = vt_trainer_set(t[j], kv);
        if (st == VT_OK) snprintf(kv, sizeof kv, "device=%s", cx->device), st = vt_trainer_set(t[j], kv);
        if (st == VT_OK)
            st = vt_trainer_set(t[j], cx->prec == VT_PREC_FP32   ? "precision=fp32"
                                      : cx->prec == VT_PREC_BF16 ? "precision=bf16"
                                                                 : "precision=tf32");
        if (st == VT_OK && wino && wino[j] >= 0) st = vt_trainer_set_cpu_winograd(t[j], wino[j]);
        if (st == VT_OK && (st = vt_trainer_probe_step(t[j], img, batches[j], NULL)) != VT_OK)
            failed = j;
    }
    double spent = 0, turn_s = budget / (6 * nb);
    for (int round = 0; st == VT_OK && !full && (round < 3 || spent < budget) && spent <= 4 * budget;
         round++)
        for (j = 0; j < nb && st == VT_OK; j++) {
            double turn = 0;
            for (int s = 0; st == VT_OK && (s < 2 || turn < turn_s) && cnt[j] < STEP_SAMPLES; s++) {
                double t0 = vt_now();
                if ((st = vt_trainer_probe_step(t[j], img, batches[j], NULL)) != VT_OK) failed = j;
                double dt = vt_now() - t0;
                turn += dt, spent += dt;
                if (s > 0) ts[j][cnt[j]++] = dt;
            }
            full |= cnt[j] == STEP_SAMPLES;
        }

    /* the input upload as the steps do it (on a GPU: staging and DMA), best of a few */
    if (st == VT_OK && h2d_bw) {
        double best = 1e30;
        j = nb - 1;
        for (int r = 0; r < 4 && st == VT_OK; r++) {
            double u0 = vt_now();
            st = vt_trainer_upload_images(t[j], img, batches[j]);
            if (st == VT_OK) st = vt_trainer_synchronize(t[j]);
            if (st != VT_OK) failed = j;
            best = fmin(best, vt_now() - u0);
        }
        if (st == VT_OK && best > 0 && best < 1e30)
            *h2d_bw = (double)batches[j] * cx->channels * cx->imgsz * cx->imgsz * 4 / best;
    }
    for (int i = 0; st == VT_OK && i < nb; i++) {
        qsort(ts[i], (size_t)cnt[i], sizeof ts[i][0], cmp_double);
        seconds[i] = ts[i][cnt[i] / 4];
    }
    if (failed >= 0) vt_fail_context("calibration step at batch %d", batches[failed]);
    for (int i = 0; i < nb; i++) vt_trainer_destroy(t[i]);
    free(img);
    return st;
}

typedef struct cal_opts {
    int batches[3], nb;
    double seconds;
    char gpu[VT_GPU_NAME_MAX];
    int probe_max;
} cal_opts;

/* batches=B1,B2[,B3]: the one value the option table cannot check by itself. */
static vt_status parse_batches(const char *value, cal_opts *o)
{
    int nb = 0;
    const char *p = value;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 2 || v > 1000000 || nb == 3 || (*end && *end != ','))
            return vt_fail(VT_ERR_OPTION_VALUE, "batches=%s: expects 1 to 3 batch sizes "
                           "of at least 2, like 8,16,32", value);
        o->batches[nb++] = (int)v;
        p = *end ? end + 1 : end;
    }
    o->nb = nb;
    return VT_OK;
}

/* The keys, types, ranges and defaults are the VT_OPT_CAL_* lines of the option table. */
static vt_status parse_cal_opts(const char *options, cal_opts *o)
{
    vt_optvals *v;
    vt_status st = vt_optvals_parse_new(&v, VT_SCOPE_CALIBRATE, options);
    if (st) return st;
    if (vt_opt_isset(v, VT_OPT_CAL_BATCHES)) {
        st = *vt_opt_str(v, VT_OPT_CAL_BATCHES)
                 ? parse_batches(vt_opt_str(v, VT_OPT_CAL_BATCHES), o)
                 : vt_fail(VT_ERR_OPTION_VALUE, "batches: empty");
    }
    o->seconds = vt_opt_num(v, VT_OPT_CAL_SECONDS);
    snprintf(o->gpu, sizeof o->gpu, "%s", vt_opt_str(v, VT_OPT_CAL_GPU));
    o->probe_max = (int)vt_opt_num(v, VT_OPT_CAL_PROBE_MAX);
    free(v);
    return st;
}

static vt_status calibrate(vt_estimator *e, const char *device, const char *options)
{
    cal_opts co = {{0}, 0, 0, "", 0};
    int B = (int)OPT(e, VT_OPT_EST_BATCH);
    /* a training step needs at least 2 images (batch-norm statistics) */
    int defb[3] = {B / 4 > 2 ? B / 4 : 2, B / 2 > 2 ? B / 2 : 2, B > 2 ? B : 2};
    for (int i = 0; i < 3; i++)
        if (co.nb == 0 || defb[i] != co.batches[co.nb - 1]) co.batches[co.nb++] = defb[i];
    vt_status st = parse_cal_opts(options, &co);
    if (st != VT_OK) return st;
    vt_device devc;
    if ((st = vt_device_parse(device, &devc)) != VT_OK) return st;
    int on_gpu = vt_device_is_gpu(&devc), dev = devc.index;
    if (on_gpu) {
        int named = vt_catalog_resolve(&e->cat, OSTR(e, VT_OPT_EST_GPU));
        if (!co.gpu[0] && named >= 0)
            snprintf(co.gpu, sizeof co.gpu, "%s", e->cat.gpus[named].name);
        /* keep the catalog's own name, so an abbreviation ("H200") still matches later */
        named = co.gpu[0] ? vt_catalog_resolve(&e->cat, co.gpu) : -1;
        if (co.gpu[0] && named < 0)
            return vt_catalog_find(&e->cat, co.gpu) < 0 ? VT_ERR_NOT_FOUND : VT_ERR_INTERNAL;
        if (named >= 0) snprintf(co.gpu, sizeof co.gpu, "%s", e->cat.gpus[named].name);
    }

    vt_calib c;
    memset(&c, 0, sizeof c);
    /* Probes and steps at the precision the estimate asks for, as the device runs it: a GPU
     * fp32 for fp32, else TF32 (the trainer's default; its bf16 is experimental); the CPU bf16
     * for bf16 or amp where it has AVX512-BF16, else fp32 (the CPU's tf32 is fp32, and an
     * estimate on a CPU without bf16 reports the fp32 it falls back to: vt_est_cpu_precision). */
    vt_prec asked = vt_est_parse_prec(OSTR(e, VT_OPT_EST_PRECISION));
    vt_prec prec = on_gpu ? (asked == VT_PREC_FP32 ? VT_PREC_FP32 : VT_PREC_TF32)
                          : vt_est_cpu_precision(asked);
    if (!on_gpu && asked == VT_PREC_BF16 && prec != VT_PREC_BF16)
        vt_log(&e->log, VT_LOG_INFO, "calibration: precision=%s: this CPU has no AVX512-BF16 "
               "(the trainer refuses bf16 here); calibrating fp32",
               OSTR(e, VT_OPT_EST_PRECISION));
    st = probe_device(&devc, prec, fmax(0.1, 0.08 * co.seconds), &c.dm);
    /* The CPU's GEMMs reach half their rate at d = 14-20 (s0); an s0 over 4x the widest
     * probe's d (256) is a probe that the machine's neighbours slowed, not the CPU (seen once
     * under a parallel test run: s0 at its cap put every layer at 100x its time), so the
     * probes run once more. */
    if (st == VT_OK && !on_gpu && c.dm.s0 > 1024) {
        vt_log(&e->log, VT_LOG_INFO, "calibration probes: s0 %.0f is not this CPU's (a disturbed "
               "probe); probing again", c.dm.s0);
        st = probe_device(&devc, prec, fmax(0.1, 0.08 * co.seconds), &c.dm);
    }
    if (st != VT_OK) return st;
    vt_log(&e->log, VT_LOG_INFO, "calibration probes: conv %.1f GFLOP/s (s0 %.0f, %.1f ns per "
           "im2col row; Winograd transforms %.1f GB/s), BN/ReLU %.1f GB/s, SiLU %.3f ns a value",
           c.dm.rate * 1e-9, c.dm.s0, c.dm.row_s * 1e9,
           c.dm.wino_s > 0 ? 1e-9 / c.dm.wino_s : 0, c.dm.bw * 1e-9, c.dm.exp_s * 1e9);

    vt_graph g;
    st = vt_est_build_graph(e, &g);
    if (st != VT_OK) return st;
    char tdev[32]; /* the trainer's device option names a GPU by its index ("cuda:1" -> "1") */
    snprintf(tdev, sizeof tdev, "%d", devc.index);
    calib_ctx cx = {NULL, on_gpu ? tdev : device, (int)OPT(e, VT_OPT_EST_IMGSZ), g.input.c,
                    e->have_model ? e->m_classes : (int)OPT(e, VT_OPT_EST_CLASSES), prec};
    char mopt[64];
    snprintf(mopt, sizeof mopt, "channels=%d imgsz=%d", cx.channels, cx.imgsz);
    const char *arch = e->have_model ? e->m_arch : OSTR(e, VT_OPT_EST_MODEL);
    st = vt_model_create(&cx.model, arch, cx.classes, mopt);
    double V[3], T[3], Tw[3];
    int states = 1; /* the probe steps use the trainer's default optimiser, SGD */
    /* On the CPU with Winograd on, the steps run with it off (im2col) and on, taking turns: the
     * first give k and c below on the im2col model, the second the Winograd transforms'
     * seconds per byte inside a network (the probe's, with its operands hot in the caches,
     * came out 1.3-1.45x fast for cls-m's Winograd layers, and k then charged the difference
     * to every other layer) */
    int wino = !on_gpu && c.dm.wino_s > 0;
    if (st == VT_OK && !on_gpu) {
        int cb[TIME_CONFIGS], cw[TIME_CONFIGS];
        double ct[TIME_CONFIGS];
        for (int i = 0; i < co.nb; i++) {
            cb[i] = cb[co.nb + i] = co.batches[i];
            cw[i] = wino ? 0 : -1, cw[co.nb + i] = -1;
        }
        st = time_steps(&cx, cb, wino ? 2 * co.nb : co.nb, co.seconds, ct, NULL, cw);
        for (int i = 0; i < co.nb; i++) T[i] = ct[i], Tw[i] = wino ? ct[co.nb + i] : ct[i];
    }
    for (int i = 0; i < co.nb && st == VT_OK && on_gpu; i++)
        st = time_steps(&cx, &co.batches[i], 1, co.seconds / co.nb, &T[i],
                        i == co.nb - 1 ? &c.dm.h2d_bw : NULL, NULL);
    vt_devmodel d0 = c.dm;
    d0.h2d_bw = 0;
    d0.wino_s = 0; /* T: the steps without Winograd where it is on */
    if (st == VT_OK && on_gpu)
        vt_log(&e->log, VT_LOG_INFO, "calibration: input upload %.1f GB/s", c.dm.h2d_bw * 1e-9);
    for (int i = 0; i < co.nb && st == VT_OK; i++) {
        V[i] = vt_est_graph_seconds(&g, cx.imgsz, cx.imgsz, co.batches[i], &d0, 1, states);
        if (st == VT_OK && V[i] < 0) st = VT_ERR_INVALID_ARGUMENT;
        if (st == VT_OK && on_gpu)
            T[i] -= (double)co.batches[i] * cx.channels * cx.imgsz * cx.imgsz * 4 / c.dm.h2d_bw;
        if (!wino) Tw[i] = T[i];
        if (st == VT_OK)
            vt_log(&e->log, VT_LOG_INFO, "calibration: batch %d: %.4f s/step measured, %.4f s "
                   "roofline", co.batches[i], T[i], V[i]);
    }
    if (st != VT_OK) {
        vt_model_destroy(cx.model);
        vt_graph_free(&g);
        return st;
    }
    /* least squares t = k*V + c; a negative intercept is noise, so refit through 0 */
    int n = co.nb;
    double mv = 0, mt = 0, sxy = 0, sxx = 0, k, icpt;
    for (int i = 0; i < n; i++) mv += V[i] / n, mt += T[i] / n;
    for (int i = 0; i < n; i++) sxy += (V[i] - mv) * (T[i] - mt), sxx += (V[i] - mv) * (V[i] - mv);
    k = sxx > 0 ? sxy / sxx : 0;
    icpt = mt - k * mv;
    if (n < 2 || !(k > 0) || icpt < 0) {
        double tv = 0, vv = 0;
        for (int i = 0; i < n; i++) tv += T[i] * V[i], vv += V[i] * V[i];
        k = tv / vv;
        icpt = 0;
    }
    if (!(k > 0.01 && k < 100)) {
        vt_model_destroy(cx.model);
        vt_graph_free(&g);
        return vt_fail(VT_ERR_NUMERIC, "calibration: measured steps are %.3gx the probes' "
                       "roofline; the measurement is unusable (machine overloaded?)", k);
    }
    if (wino) { /* (Tw - c)/k = Va + f * X: the probe's transform cost times f, least squares
                 * over the batches */
        double yx = 0, xx = 0;
        for (int i = 0; i < n; i++) {
            vt_devmodel da = d0;
            da.wino_s = 1e-30; /* Winograd's products, no transforms */
            double va = vt_est_graph_seconds(&g, cx.imgsz, cx.imgsz, co.batches[i], &da, 1, states);
            da.wino_s = c.dm.wino_s;
            double x =
                vt_est_graph_seconds(&g, cx.imgsz, cx.imgsz, co.batches[i], &da, 1, states) - va;
            yx += ((Tw[i] - icpt) / k - va) * x, xx += x * x;
        }
        /* the transforms cost something: a fit at or below 5 % of the probe's is noise */
        double f = fmax(xx > 0 ? yx / xx : 0, 0.05);
        vt_log(&e->log, VT_LOG_INFO, "calibration: Winograd transforms in the steps %.2fx the "
               "probe's time", f);
        c.dm.wino_s *= f;
    }
    c.k = k;
    c.dm.rate /= k;
    c.dm.bw /= k;
    c.dm.row_s *= k;
    c.dm.wino_s *= k;
    c.dm.exp_s *= k;
    c.dm.layer_s = icpt / g.n_nodes;
    c.on_gpu = on_gpu;
    c.device = dev;
    c.prec = prec;
    snprintf(c.gpu, sizeof c.gpu, "%s", on_gpu ? co.gpu : "");
    snprintf(c.model, sizeof c.model, "%s", arch);
    c.imgsz = cx.imgsz;
    c.nb = n;
    for (int i = 0; i < n; i++) c.batches[i] = co.batches[i], c.seconds[i] = Tw[i];
    c.valid = 1;

    /* On a GPU, verify the largest batch we would predict: estimates never exceed a batch that
     * really ran. */
    int gi = on_gpu && co.gpu[0] ? vt_catalog_lookup(&e->cat, co.gpu) : -1;
    if (on_gpu && co.probe_max && gi >= 0) {
        double fixed, per, wmax, cap = e->cat.gpus[gi].v[VT_GPU_MEMORY_GB] * 1e9 *
                                       OPT(e, VT_OPT_EST_MEMORY_FRACTION);
        if (!vt_train_memory_terms(&g, cx.imgsz, cx.imgsz, 4, states, 1, 1, &fixed, &per, &wmax)) {
            double pb = floor((cap / 1.05 - fixed - vt_train_scratch_bytes(wmax, 1e9)) / per);
            int tryb = (int)fmin(pb, 4096);
            for (int a = 0; a < 5 && tryb > c.batches[n - 1]; a++) {
                double ts;
                if ((double)tryb * cx.channels * cx.imgsz * cx.imgsz * 4 > 2e9) break;
                vt_status ps = time_steps(&cx, &tryb, 1, 0.0, &ts, NULL, NULL);
                if (ps == VT_OK) { c.verified_max_batch = tryb; break; }
                if (ps != VT_ERR_DEVICE_OOM) break;
                tryb = (int)(tryb * 0.8);
            }
        }
    }
    vt_model_destroy(cx.model);
    vt_graph_free(&g);
    e->cal = c;
    vt_log(&e->log, VT_LOG_INFO, "calibration (%s): k %.3f, rate %.1f GFLOP/s, stream %.1f GB/s, "
           "%.1f us per layer", vt_est_prec_names[prec], k, c.dm.rate * 1e-9, c.dm.bw * 1e-9,
           c.dm.layer_s * 1e6);
    return VT_OK;
}

VT_API vt_status vt_estimator_calibrate(vt_estimator *e, const char *device, const char *options)
{
    if (!e) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_estimator_calibrate: estimator is NULL");
    return vt_err_capture(e->err, calibrate(e, device ? device : "cpu", options));
}

/* ---- calibration files ---------------------------------------------------------------------- */

#define CAL_MAGIC "visiontrain-calibration 1"

VT_API vt_status vt_estimator_save_calibration(vt_estimator *e, const char *path)
{
    if (!e || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "save_calibration: NULL argument");
    const vt_calib *c = &e->cal;
    if (!c->valid)
        return vt_err_capture(e->err, vt_fail(VT_ERR_BAD_STATE, "nothing to save: not calibrated"));
    vt_afile af;
    vt_status ost = vt_afile_open(&af, path);
    if (ost) return vt_err_capture(e->err, ost);
    FILE *f = af.f;
    fprintf(f, "%s\ndevice %s\ndevice_index %d\ngpu %s\nprecision %s\n", CAL_MAGIC,
            c->on_gpu ? "gpu" : "cpu", c->device, c->gpu[0] ? c->gpu : "-",
            vt_est_prec_names[c->prec]);
    fprintf(f, "rate_flops %.17g\nbandwidth_bytes %.17g\ngemm_s0 %.17g\nlayer_seconds %.17g\n"
            "step_seconds %.17g\nh2d_bytes %.17g\nscale %.17g\nverified_max_batch %lld\n"
            "model %s\nimgsz %d\nrow_seconds %.17g\nwinograd_seconds_per_byte %.17g\n"
            "silu_seconds_per_value %.17g\n",
            c->dm.rate, c->dm.bw, c->dm.s0, c->dm.layer_s, c->dm.step_s, c->dm.h2d_bw, c->k,
            (long long)c->verified_max_batch, c->model, c->imgsz, c->dm.row_s, c->dm.wino_s,
            c->dm.exp_s);
    for (int i = 0; i < c->nb; i++) fprintf(f, "measured %d %.17g\n", c->batches[i], c->seconds[i]);
    fprintf(f, "end\n");
    return vt_err_capture(e->err, vt_afile_commit(&af));
}

static vt_status cal_num(const char *path, int line, const char *key, const char *s, double min,
                         double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v) || v < min || v > max)
        return vt_fail(VT_ERR_FORMAT, "%s:%d: %s: bad value '%s' (expects %g..%g)", path, line,
                       key, s, min, max);
    *out = v;
    return VT_OK;
}

static vt_status load_cal(const char *path, vt_calib *c)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO, "%s: cannot open: %s",
                       path, strerror(errno));
    static const char *const required[] = {"device", "rate_flops", "bandwidth_bytes", "gemm_s0",
                                           "layer_seconds", "step_seconds", "h2d_bytes"};
    unsigned seen = 0;
    char buf[512];
    int line = 0, ended = 0;
    vt_status st = VT_OK;
    memset(c, 0, sizeof *c);
    c->k = 1;
    c->dm.act_bytes = 4;
    while (st == VT_OK && fgets(buf, sizeof buf, f)) {
        line++;
        size_t len = strlen(buf);
        if (len && buf[len - 1] == '\n') buf[--len] = '\0';
        else if (!feof(f)) { st = vt_fail(VT_ERR_FORMAT, "%s:%d: line too long", path, line); break; }
        if (line == 1) {
            if (strcmp(buf, CAL_MAGIC) != 0)
                st = vt_fail(VT_ERR_FORMAT, "%s:1: not a visiontrain calibration file (expected "
                             "'%s')", path, CAL_MAGIC);
            continue;
        }
        if (ended) { st = vt_fail(VT_ERR_FORMAT, "%s:%d: text after 'end'", path, line); break; }
        if (strcmp(buf, "end") == 0) { ended = 1; continue; }
        char *val = strchr(buf, ' ');
        if (!val) { st = vt_fail(VT_ERR_FORMAT, "%s:%d: expected 'key value'", path, line); break; }
        *val++ = '\0';
        double x = 0;
        for (int i = 0; i < 7; i++)
            if (strcmp(buf, required[i]) == 0) seen |= 1u << i;
        if (strcmp(buf, "device") == 0) {
            if (strcmp(val, "cpu") && strcmp(val, "gpu"))
                st = vt_fail(VT_ERR_FORMAT, "%s:%d: device: expects cpu or gpu", path, line);
            c->on_gpu = strcmp(val, "gpu") == 0;
        } else if (strcmp(buf, "device_index") == 0) {
            if ((st = cal_num(path, line, buf, val, 0, 255, &x)) == VT_OK) c->device = (int)x;
        } else if (strcmp(buf, "gpu") == 0) {
            snprintf(c->gpu, sizeof c->gpu, "%s", strcmp(val, "-") ? val : "");
        } else if (strcmp(buf, "precision") == 0) {
            int p = 0;
            while (p < 3 && strcmp(vt_est_prec_names[p], val)) p++;
            if (p == 3) st = vt_fail(VT_ERR_FORMAT, "%s:%d: precision: expects fp32, tf32 or bf16",
                                     path, line);
            c->prec = (vt_prec)p;
        } else if (strcmp(buf, "rate_flops") == 0) st = cal_num(path, line, buf, val, 1e6, 1e18, &c->dm.rate);
        else if (strcmp(buf, "bandwidth_bytes") == 0) st = cal_num(path, line, buf, val, 1e6, 1e15, &c->dm.bw);
        else if (strcmp(buf, "gemm_s0") == 0) st = cal_num(path, line, buf, val, 0, 1e6, &c->dm.s0);
        else if (strcmp(buf, "layer_seconds") == 0) st = cal_num(path, line, buf, val, 0, 10, &c->dm.layer_s);
        else if (strcmp(buf, "step_seconds") == 0) st = cal_num(path, line, buf, val, 0, 1000, &c->dm.step_s);
        else if (strcmp(buf, "h2d_bytes") == 0) st = cal_num(path, line, buf, val, 0, 1e15, &c->dm.h2d_bw);
        else if (strcmp(buf, "row_seconds") == 0) st = cal_num(path, line, buf, val, 0, 1e-3, &c->dm.row_s);
        else if (strcmp(buf, "winograd_seconds_per_byte") == 0) st = cal_num(path, line, buf, val, 0, 1e-6, &c->dm.wino_s);
        else if (strcmp(buf, "silu_seconds_per_value") == 0) st = cal_num(path, line, buf, val, 0, 1e-6, &c->dm.exp_s);
        else if (strcmp(buf, "scale") == 0) st = cal_num(path, line, buf, val, 1e-3, 1e3, &c->k);
        else if (strcmp(buf, "verified_max_batch") == 0) {
            if ((st = cal_num(path, line, buf, val, 0, 1e9, &x)) == VT_OK) c->verified_max_batch = (int64_t)x;
        } else if (strcmp(buf, "model") == 0) snprintf(c->model, sizeof c->model, "%s", val);
        else if (strcmp(buf, "imgsz") == 0) {
            if ((st = cal_num(path, line, buf, val, 1, 65536, &x)) == VT_OK) c->imgsz = (int)x;
        } else if (strcmp(buf, "measured") == 0) {
            int b;
            double s;
            char extra;
            if (c->nb == 3 || sscanf(val, "%d %lf %c", &b, &s, &extra) != 2 || b < 1 || !(s > 0))
                st = vt_fail(VT_ERR_FORMAT, "%s:%d: measured: expects 'measured BATCH SECONDS' "
                             "(at most 3)", path, line);
            else c->batches[c->nb] = b, c->seconds[c->nb++] = s;
        } else st = vt_fail(VT_ERR_FORMAT, "%s:%d: unknown key '%s'", path, line, buf);
    }
    if (st == VT_OK && ferror(f)) st = vt_fail(VT_ERR_IO, "%s: read error", path);
    fclose(f);
    if (st == VT_OK && line == 0) st = vt_fail(VT_ERR_FORMAT, "%s: empty file", path);
    c->dm.fuse_bn_act = 1; /* both backends fuse BN + ReLU or SiLU */
    c->dm.col_passes = c->on_gpu ? VT_GPU_COL_PASSES : 0;
    c->dm.strided_col_passes = c->on_gpu ? 0 : VT_CPU_STRIDED_COL_PASSES;
    c->dm.gemm_size_n = c->on_gpu;
    if (st == VT_OK && !ended)
        st = vt_fail(VT_ERR_FORMAT, "%s:%d: truncated (no 'end' line)", path, line);
    for (int i = 0; i < 7 && st == VT_OK; i++)
        if (!(seen & (1u << i)))
            st = vt_fail(VT_ERR_FORMAT, "%s: missing '%s'", path, required[i]);
    c->valid = st == VT_OK;
    return st;
}

VT_API vt_status vt_estimator_load_calibration(vt_estimator *e, const char *path)
{
    if (!e || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "load_calibration: NULL argument");
    vt_calib c;
    vt_status st = load_cal(path, &c);
    if (st == VT_OK) e->cal = c;
    return vt_err_capture(e->err, st);
}
