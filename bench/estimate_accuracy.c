/* Accuracy of the time estimator: calibrate on one model/image size/batch, then predict the
 * step time of other models, image sizes and batches and measure them.
 *
 *   estimate_accuracy [cpu|0] [seconds-per-measurement] [rounds]
 *
 * Prints measured vs predicted seconds per step and per epoch (1,000 images) and the error.
 * The steps are the trainer's probe steps (lib/train/trainer_probe.h: random images, and random
 * boxes or masks for the CPU's detection and segmentation cases), as calibration times them.
 * rounds (default 3 on the CPU, 0 on a GPU): 0 calibrates once, then measures each case alone
 * and the calibration model right after it ("drift": how far the machine moved since the
 * calibration); N repeats N times: calibrate, then measure all cases and the calibration model
 * taking turns of 0.25 s ("drift": the calibration model's own error in that window), and
 * prints each case's round with the median error and its error in every round;
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

#include "train/trainer_probe.h"
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

/* A trainer of one case, kept open so that several cases can take turns. */
#define MAX_SAMPLES 400
typedef struct runner {
    const cfg *c;
    vt_model *m;
    vt_trainer *t;
    float *img;
    double ts[MAX_SAMPLES], timed; /* timed steps' seconds, their sum */
    int k;
} runner;

static void runner_close(runner *r)
{
    vt_trainer_destroy(r->t);
    vt_model_destroy(r->m);
    free(r->img);
    memset(r, 0, sizeof *r);
}

/* The case's trainer at the estimate's precision (TF32 on a GPU), after one warm-up step (which
 * allocates); 0, or -1 with the message printed and nothing held. */
static int runner_open(runner *r, const cfg *c, const char *device)
{
    char opt[64], kv[64];
    memset(r, 0, sizeof *r);
    r->c = c;
    snprintf(opt, sizeof opt, "channels=%d imgsz=%d", c->channels, c->imgsz);
    size_t n = (size_t)c->batch * c->channels * c->imgsz * c->imgsz;
    r->img = malloc(n * sizeof *r->img);
    int bad = !r->img;
    for (size_t i = 0; !bad && i < n; i++) r->img[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    bad = bad || vt_model_create(&r->m, c->arch, 10, opt) || vt_trainer_create(&r->t, r->m, NULL);
    if (!bad) snprintf(kv, sizeof kv, "batch=%d", c->batch), bad = vt_trainer_set(r->t, kv) != VT_OK;
    if (!bad) snprintf(kv, sizeof kv, "imgsz=%d", c->imgsz), bad = vt_trainer_set(r->t, kv) != VT_OK;
    if (!bad) snprintf(kv, sizeof kv, "device=%s", device), bad = vt_trainer_set(r->t, kv) != VT_OK;
    if (!bad) {
        snprintf(kv, sizeof kv, "precision=%s", strcmp(device, "cpu") ? "tf32" : "fp32");
        bad = vt_trainer_set(r->t, kv) || vt_trainer_probe_step(r->t, r->img, c->batch, NULL);
    }
    if (!bad) return 0;
    fprintf(stderr, "%s imgsz %d batch %d: %s\n", c->arch, c->imgsz, c->batch, vt_last_error());
    runner_close(r);
    return -1;
}

/* Steps for `seconds` and at least `min_steps`, each timed; the first not counted when
 * drop_first (after another trainer's steps it finds the caches holding that one's buffers).
 * 0 or -1 (message printed). */
static int runner_steps(runner *r, double seconds, int min_steps, int drop_first)
{
    double spent = 0;
    for (int s = 0; (s < min_steps || spent < seconds) && r->k < MAX_SAMPLES; s++) {
        double t0 = now();
        if (vt_trainer_probe_step(r->t, r->img, r->c->batch, NULL)) {
            fprintf(stderr, "%s imgsz %d batch %d: %s\n", r->c->arch, r->c->imgsz, r->c->batch,
                    vt_last_error());
            return -1;
        }
        double dt = now() - t0;
        spent += dt;
        if (s > 0 || !drop_first) r->ts[r->k++] = dt, r->timed += dt;
    }
    return 0;
}

/* Lower-quartile seconds per step (as calibration measures); *mem: the device memory the
 * trainer holds (GPU; else 0). */
static double runner_result(runner *r, double *mem)
{
    qsort(r->ts, (size_t)r->k, sizeof r->ts[0], cmp_double);
    if (vt_trainer_metric(r->t, VT_METRIC_DEVICE_MEMORY_BYTES, mem)) *mem = 0;
    return r->ts[r->k / 4];
}

/* One case alone: `budget` seconds of steps (at least 5); -1 on failure. */
static double measure(const cfg *c, const char *device, double budget, double *mem)
{
    runner r;
    if (runner_open(&r, c, device)) return -1;
    double s = runner_steps(&r, budget, 5, 0) ? -1 : runner_result(&r, mem);
    runner_close(&r);
    return s;
}

/* n cases taking turns of TURN_S (each turn at least 2 steps, its first not counted) until
 * every case has `budget` seconds of counted steps and 5 of them: a shared machine's changes
 * of speed fall on all of them alike.  sec[i], mem[i]; 0 or -1 (message printed). */
#define TURN_S 0.25
static int measure_turns(const cfg *const *c, int n, const char *device, double budget,
                         double *sec, double *mem)
{
    runner *r = calloc((size_t)n, sizeof *r); /* zeroed runners close safely */
    int bad = !r;
    for (int i = 0; i < n && !bad; i++) bad = runner_open(&r[i], c[i], device);
    while (!bad) {
        int all = 1;
        for (int i = 0; i < n && !bad; i++)
            if (r[i].k < MAX_SAMPLES && (r[i].timed < budget || r[i].k < 5))
                all = 0, bad = runner_steps(&r[i], TURN_S, 2, 1);
        if (all) break;
    }
    for (int i = 0; i < n && !bad; i++) sec[i] = runner_result(&r[i], &mem[i]);
    for (int i = 0; i < n && r; i++) runner_close(&r[i]);
    free(r);
    return bad ? -1 : 0;
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
#define NCASES 8 /* at most */

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
    const cfg cpu_cases[] = {
        {"cls-s", 48, 8, 3},  {"cls-n", 64, 8, 3},   {"cnn-small", 28, 64, 1},
        {"cls-m", 32, 16, 3}, {"cls-n", 96, 4, 3},   {"cls-s", 32, 32, 3},
        {"det-n", 320, 8, 3}, {"seg-n", 128, 16, 3},
    };
    const cfg gpu_cases[] = {
        {"cls-s", 224, 32, 3}, {"cls-m", 128, 64, 3}, {"cnn-small", 28, 256, 1},
        {"cls-n", 224, 128, 3}, {"cls-m", 224, 32, 3}, {"resnet18", 224, 128, 3},
    };
    const cfg *cases = gpu ? gpu_cases : cpu_cases;
    const int ncases = gpu ? (int)(sizeof gpu_cases / sizeof *gpu_cases)
                           : (int)(sizeof cpu_cases / sizeof *cpu_cases);

    vt_estimator *e = NULL;
    if (vt_estimator_create(&e) || vt_estimator_set(e, "train=1000") ||
        vt_estimator_set(e, "val=0") || vt_estimator_set(e, "epochs=1") ||
        vt_estimator_set(e, "workers=0") || vt_estimator_set(e, "load_ms=0.000001") ||
        vt_estimator_set(e, gpu ? "precision=tf32" : "precision=fp32")) {
        fprintf(stderr, "estimator: %s\n", vt_last_error());
        return 1;
    }
    /* rounds 0: one calibration, then each case alone, followed by the calibration model
     * again ("drift": how far the machine moved from the calibration; a GPU's speed holds
     * still).  rounds N: N times a calibration, then every case and the calibration model
     * taking turns (measure_turns), so that the machine's changes of speed within the round
     * fall on all of them alike ("drift" is then the calibration model's own error in that
     * window); each case's median over the rounds.  On the 2-core CI machine, whose speed
     * moves by tens of percent within a minute, a case measured alone a minute after the
     * calibration was off by up to +-40% in single rounds for that reason alone. */
    int R = rounds ? rounds : 1, bad = 0;
    double meas[MAX_ROUNDS][NCASES], pred[MAX_ROUNDS][NCASES], err[MAX_ROUNDS][NCASES],
        drift[MAX_ROUNDS][NCASES], rel[MAX_ROUNDS][NCASES], steps[NCASES], mem[NCASES + 1],
        pmem[NCASES], calib_pred = 0;
    const cfg *all[NCASES + 1];
    double sec[NCASES + 1];
    for (int i = 0; i < ncases; i++) all[i] = &cases[i];
    all[ncases] = &calib;
    double t0 = now();
    for (int r = 0; r < R && !bad; r++) {
        if ((bad = calibrate(e, device, &calib, budget, gpu, &calib_pred))) break;
        if (r == 0)
            printf("calibration on %s with %s imgsz %d batches up to %d: %.1f s%s\n", device,
                   calib.arch, calib.imgsz, calib.batch, now() - t0,
                   rounds ? ", again in every round" : "");
        for (int i = 0; i < ncases && !bad; i++)
            if (configure(e, &cases[i]) || vt_estimator_run(e) ||
                vt_estimator_result(e, VT_EST_STEP_SECONDS, &pred[r][i]) ||
                vt_estimator_result(e, VT_EST_STEPS_PER_EPOCH, &steps[i]) ||
                vt_estimator_result(e, VT_EST_PEAK_MEMORY_BYTES, &pmem[i])) {
                fprintf(stderr, "estimate: %s\n", vt_last_error());
                bad = 1;
            }
        if (!bad && rounds) bad = measure_turns(all, ncases + 1, device, budget, sec, mem) ? 1 : 0;
        for (int i = 0; i < ncases && !bad; i++) {
            if (!rounds) { /* alone, then the calibration model */
                sec[i] = measure(&cases[i], device, budget, &mem[i]);
                sec[ncases] = measure(&calib, device, budget / 4, &mem[ncases]);
                if (sec[i] <= 0 || sec[ncases] <= 0) bad = 1;
            }
            meas[r][i] = sec[i];
            err[r][i] = pred[r][i] / sec[i] - 1;
            drift[r][i] = sec[ncases] / calib_pred - 1;
            rel[r][i] = (1 + err[r][i]) / (1 + drift[r][i]) - 1;
        }
    }
    if (bad) {
        vt_estimator_destroy(e);
        return bad;
    }
    printf("%-10s %5s %5s | %11s %11s %7s | %12s %12s | %7s%s%s%s\n", "model", "imgsz", "batch",
           "measured s", "predicted s", "error", "epoch meas.", "epoch pred.", "drift",
           rounds ? " | rel.err" : "", R > 1 ? " | error per round" : "",
           gpu ? " | memory GB held / predicted peak" : "");
    if (R > 1) printf("(each case's round with the median error of %d; drift, rel.err: medians)\n", R);
    if (rounds)
        printf("(drift: the calibration model's own error in the round's window; rel.err: the "
               "case's prediction relative to the calibration model's, both measured in turns, "
               "i.e. the error without the machine's level)\n");
    double worst = 0;
    for (int i = 0; i < ncases; i++) {
        const cfg *c = &cases[i];
        double ve[MAX_ROUNDS], vd[MAX_ROUNDS], vr[MAX_ROUNDS];
        char rcol[16 * MAX_ROUNDS] = "", mcol[64] = "";
        size_t len = 0;
        for (int r = 0; r < R; r++) {
            ve[r] = err[r][i], vd[r] = drift[r][i], vr[r] = rel[r][i];
            if (R > 1)
                len += (size_t)snprintf(rcol + len, sizeof rcol - len, "%s%+.1f%%",
                                        r ? " " : " | ", 100 * err[r][i]);
        }
        /* the round with the median error (the lower one of an even count), whole */
        double er = median(ve, R), d = median(vd, R), re = median(vr, R);
        char relcol[16] = "";
        if (rounds) snprintf(relcol, sizeof relcol, " | %+6.1f%%", 100 * re);
        int mr = 0;
        while (mr < R - 1 && err[mr][i] != er) mr++;
        double m = meas[mr][i], p = pred[mr][i];
        worst = fmax(worst, fabs(er));
        /* the held memory includes the allocator's cache; the prediction adds 0.5 GiB of
         * CUDA context, which the allocator does not see */
        if (gpu) snprintf(mcol, sizeof mcol, " | %6.2f / %6.2f", mem[i] / 1e9, pmem[i] / 1e9);
        printf("%-10s %5d %5d | %11.5f %11.5f %+6.1f%% | %12.2f %12.2f | %+6.1f%%%s%s%s%s\n",
               c->arch, c->imgsz, c->batch, m, p, 100 * er, m * steps[i], p * steps[i], 100 * d,
               relcol, rcol, mcol, fabs(er) > target ? "  <-- over target" : "");
    }
    printf("worst error %.1f%% (target %.0f%%), %.0f s in all\n", 100 * worst, 100 * target,
           now() - t0);
    vt_estimator_destroy(e);
    return worst > target;
}
