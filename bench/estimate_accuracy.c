/* Accuracy of the time estimator: calibrate on one model/image size/batch, then predict the
 * step time of other models, image sizes and batches and measure them.
 *
 *   estimate_accuracy [cpu|0] [seconds-per-measurement] [rounds]
 *
 * Prints measured vs predicted seconds per step and per epoch (1,000 images) and the error, and
 * the machine's drift: the calibration model's step measured again just after each case vs its
 * prediction (how much the machine itself changed since the calibration).  rounds (default 3 on
 * the CPU, 0 on a GPU): 0 calibrates once for all cases; N calibrates again right before each
 * case, N rounds of all cases, and prints each case's medians and its error in every round;
 * exits 1 when an error exceeds the target (15% on the CPU, 10% on a GPU), 0 otherwise,
 * 77 when the device is missing (so a GPU run on a machine without one counts as skipped).
 * A GPU is measured and estimated at TF32 (the trainer's default precision), the CPU at fp32.
 * Run it alone on the machine: other load skews both the calibration and the measurements. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "visiontrain/visiontrain.h"

typedef struct cfg {
    const char *arch;
    int imgsz, batch, channels;
} cfg;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Lower-quartile seconds per training step after one warm-up step (as calibration measures);
 * -1 on failure (message printed).  *mem: the device memory the trainer holds (GPU; else 0). */
static double measure(const cfg *c, const char *device, double budget, double *mem)
{
    char opt[64], kv[64];
    snprintf(opt, sizeof opt, "channels=%d imgsz=%d", c->channels, c->imgsz);
    vt_model *m = NULL;
    vt_trainer *t = NULL;
    size_t n = (size_t)c->batch * c->channels * c->imgsz * c->imgsz;
    float *img = malloc(n * sizeof *img);
    int32_t *lab = malloc((size_t)c->batch * sizeof *lab);
    double ts[200], result = -1;
    int k = 0;
    if (!img || !lab) goto out;
    for (size_t i = 0; i < n; i++) img[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (int i = 0; i < c->batch; i++) lab[i] = i % 10;
    if (vt_model_create(&m, c->arch, 10, opt) || vt_trainer_create(&t, m, NULL)) goto fail;
    snprintf(kv, sizeof kv, "batch=%d", c->batch);
    if (vt_trainer_set(t, kv)) goto fail;
    snprintf(kv, sizeof kv, "imgsz=%d", c->imgsz);
    if (vt_trainer_set(t, kv)) goto fail;
    snprintf(kv, sizeof kv, "device=%s", device);
    if (vt_trainer_set(t, kv)) goto fail;
    /* the precision the estimator is asked about (main sets it: TF32 on a GPU) */
    snprintf(kv, sizeof kv, "precision=%s", strcmp(device, "cpu") ? "tf32" : "fp32");
    if (vt_trainer_set(t, kv) || vt_trainer_step(t, img, lab, c->batch, NULL)) goto fail;
    double spent = 0;
    while (k < 200 && (k < 5 || spent < budget)) {
        double t0 = now();
        if (vt_trainer_step(t, img, lab, c->batch, NULL)) goto fail;
        ts[k] = now() - t0;
        spent += ts[k++];
    }
    qsort(ts, (size_t)k, sizeof ts[0], cmp_double);
    result = ts[k / 4];
    if (vt_trainer_metric(t, VT_METRIC_DEVICE_MEMORY_BYTES, mem)) *mem = 0;
    goto out;
fail:
    fprintf(stderr, "%s imgsz %d batch %d: %s\n", c->arch, c->imgsz, c->batch, vt_last_error());
out:
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    free(img);
    free(lab);
    return result;
}

static int configure(vt_estimator *e, const cfg *c)
{
    char kv[64];
    snprintf(kv, sizeof kv, "model=%s", c->arch);
    if (vt_estimator_set(e, kv)) return -1;
    snprintf(kv, sizeof kv, "imgsz=%d", c->imgsz);
    if (vt_estimator_set(e, kv)) return -1;
    snprintf(kv, sizeof kv, "batch=%d", c->batch);
    if (vt_estimator_set(e, kv)) return -1;
    snprintf(kv, sizeof kv, "channels=%d", c->channels);
    return vt_estimator_set(e, kv) ? -1 : 0;
}

/* The median of v[0..n) (sorts v); of an even count, the lower middle one. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(n - 1) / 2];
}

/* Calibrates e on the device with `calib`, then predicts calib's own step (for the drift
 * column); 0 on success, else 77 (no device) or 1, the message printed. */
static int calibrate(vt_estimator *e, const char *device, const cfg *calib, double budget,
                     int gpu, double *calib_pred)
{
    char copt[96];
    snprintf(copt, sizeof copt, "seconds=%g%s", 3 * budget, gpu ? " gpu=H200-SXM" : "");
    vt_status st = configure(e, calib) ? VT_ERR_OPTION_VALUE : vt_estimator_calibrate(e, device, copt);
    if (st != VT_OK) {
        fprintf(stderr, "calibration on %s: %s\n", device, vt_last_error());
        return st == VT_ERR_DEVICE ? 77 : 1;
    }
    if (vt_estimator_run(e) || vt_estimator_result(e, VT_EST_STEP_SECONDS, calib_pred)) {
        fprintf(stderr, "estimate: %s\n", vt_last_error());
        return 1;
    }
    return 0;
}

#define MAX_ROUNDS 15
#define NCASES 6

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "cpu";
    double budget = argc > 2 ? atof(argv[2]) : 2.0;
    int gpu = strcmp(device, "cpu") != 0;
    int rounds = argc > 3 ? atoi(argv[3]) : gpu ? 0 : 3;
    if (budget <= 0 || rounds < 0 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: estimate_accuracy [cpu|GPU] [seconds per case > 0] [rounds 0..%d]\n",
                MAX_ROUNDS);
        return 2;
    }
    double target = gpu ? 0.10 : 0.15;
    const cfg calib = {"cls-n", gpu ? 128 : 32, gpu ? 64 : 16, 3};
    const cfg cpu_cases[NCASES] = {
        {"cls-s", 48, 8, 3}, {"cls-n", 64, 8, 3}, {"cnn-small", 28, 64, 1},
        {"cls-m", 32, 16, 3}, {"cls-n", 96, 4, 3}, {"cls-s", 32, 32, 3},
    };
    const cfg gpu_cases[NCASES] = {
        {"cls-s", 224, 32, 3}, {"cls-m", 128, 64, 3}, {"cnn-small", 28, 256, 1},
        {"cls-n", 224, 128, 3}, {"cls-m", 224, 32, 3}, {"resnet18", 224, 128, 3},
    };
    const cfg *cases = gpu ? gpu_cases : cpu_cases;

    vt_estimator *e = NULL;
    if (vt_estimator_create(&e) || vt_estimator_set(e, "train=1000") ||
        vt_estimator_set(e, "val=0") || vt_estimator_set(e, "epochs=1") ||
        vt_estimator_set(e, "workers=0") || vt_estimator_set(e, "load_ms=0.000001") ||
        vt_estimator_set(e, gpu ? "precision=tf32" : "precision=fp32")) {
        fprintf(stderr, "estimator: %s\n", vt_last_error());
        return 1;
    }
    /* rounds 0: one calibration, then every case (a GPU's speed holds still); else each case
     * right after a calibration of its own, the cases taking turns for `rounds` rounds, and
     * the median per case: on a shared machine whose speed moves by tens of percent within a
     * minute, the error is then the estimator's, not what the machine changed in between */
    int R = rounds ? rounds : 1, bad = 0;
    double meas[MAX_ROUNDS][NCASES], pred[MAX_ROUNDS][NCASES], err[MAX_ROUNDS][NCASES],
        drift[MAX_ROUNDS][NCASES], steps[NCASES], mem[NCASES], pmem[NCASES], calib_pred = 0;
    double t0 = now();
    for (int r = 0; r < R && !bad; r++)
        for (int i = 0; i < NCASES && !bad; i++) {
            const cfg *c = &cases[i];
            if ((rounds || i == 0) && (bad = calibrate(e, device, &calib, budget, gpu, &calib_pred)))
                break;
            if (r == 0 && i == 0)
                printf("calibration on %s with %s imgsz %d batches up to %d: %.1f s%s\n", device,
                       calib.arch, calib.imgsz, calib.batch, now() - t0,
                       rounds ? ", repeated before each case" : "");
            if (configure(e, c) || vt_estimator_run(e) ||
                vt_estimator_result(e, VT_EST_STEP_SECONDS, &pred[r][i]) ||
                vt_estimator_result(e, VT_EST_STEPS_PER_EPOCH, &steps[i]) ||
                vt_estimator_result(e, VT_EST_PEAK_MEMORY_BYTES, &pmem[i])) {
                fprintf(stderr, "estimate: %s\n", vt_last_error());
                bad = 1;
                break;
            }
            double cmem;
            meas[r][i] = measure(c, device, budget, &mem[i]);
            /* the machine's drift: the calibration model's step, measured again right after
             * the case, vs its prediction */
            double cmeas = measure(&calib, device, budget / 4, &cmem);
            if (meas[r][i] <= 0 || cmeas <= 0) bad = 1;
            err[r][i] = pred[r][i] / meas[r][i] - 1;
            drift[r][i] = cmeas / calib_pred - 1;
        }
    if (bad) {
        vt_estimator_destroy(e);
        return bad;
    }
    printf("%-10s %5s %5s | %11s %11s %7s | %12s %12s | %7s%s%s\n", "model", "imgsz", "batch",
           "measured s", "predicted s", "error", "epoch meas.", "epoch pred.", "drift",
           R > 1 ? " | error per round" : "", gpu ? " | memory GB held / predicted peak" : "");
    if (R > 1) printf("(each case's round with the median error of %d; drift: median)\n", R);
    double worst = 0;
    for (int i = 0; i < NCASES; i++) {
        const cfg *c = &cases[i];
        double ve[MAX_ROUNDS], vd[MAX_ROUNDS];
        char rcol[16 * MAX_ROUNDS] = "", mcol[64] = "";
        size_t len = 0;
        for (int r = 0; r < R; r++) {
            ve[r] = err[r][i], vd[r] = drift[r][i];
            if (R > 1)
                len += (size_t)snprintf(rcol + len, sizeof rcol - len, "%s%+.1f%%",
                                        r ? " " : " | ", 100 * err[r][i]);
        }
        /* the round with the median error (the lower one of an even count), whole */
        double emed = median(ve, R), d = median(vd, R);
        int mr = 0;
        while (mr < R - 1 && err[mr][i] != emed) mr++;
        double er = err[mr][i], m = meas[mr][i], p = pred[mr][i];
        worst = fmax(worst, fabs(er));
        /* the held memory includes the allocator's cache; the prediction adds 0.5 GiB of
         * CUDA context, which the allocator does not see */
        if (gpu) snprintf(mcol, sizeof mcol, " | %6.2f / %6.2f", mem[i] / 1e9, pmem[i] / 1e9);
        printf("%-10s %5d %5d | %11.5f %11.5f %+6.1f%% | %12.2f %12.2f | %+6.1f%%%s%s%s\n",
               c->arch, c->imgsz, c->batch, m, p, 100 * er, m * steps[i], p * steps[i], 100 * d,
               rcol, mcol, fabs(er) > target ? "  <-- over target" : "");
    }
    printf("worst error %.1f%% (target %.0f%%), %.0f s in all\n", 100 * worst, 100 * target,
           now() - t0);
    vt_estimator_destroy(e);
    return worst > target;
}
