/* Estimate the time and cost of a training run on every GPU of the catalog, before renting one.
 *
 *   estimate_cost [key=value ...]
 *
 * Keys are the estimator's (model=cls-s classes=10 train=20000 val=2000 epochs=100 imgsz=224
 * batch=64 precision=tf32 gpus=1 ...; see `vt help estimate`), plus:
 *   calibrate=1   first measure a few training steps on this machine's CPU
 *   seconds=S     the measurement budget (default 10)
 *
 * Build: cc estimate_cost.c $(pkg-config --cflags --libs visiontrain) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <visiontrain/visiontrain.h>

int main(int argc, char **argv)
{
    vt_estimator *est = NULL;
    vt_status st = vt_estimator_create(&est); /* with its own copy of the built-in catalog */
    if (st != VT_OK) {
        fprintf(stderr, "%s\n", vt_last_error());
        return 1;
    }
    /* A sensible default run; the command line overrides it. */
    const char *defaults[] = {"model=cls-s", "classes=10", "train=20000", "val=2000",
                              "epochs=100", "imgsz=224", "batch=64"};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        vt_estimator_set(est, defaults[i]);

    int calibrate = 0;
    char cal_opts[64] = "";
    long train_images = 20000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "calibrate=1") == 0) {
            calibrate = 1;
            continue;
        }
        if (strncmp(argv[i], "seconds=", 8) == 0) {
            snprintf(cal_opts, sizeof cal_opts, "%s", argv[i]);
            continue;
        }
        if (strncmp(argv[i], "train=", 6) == 0) train_images = atol(argv[i] + 6);
        st = vt_estimator_set(est, argv[i]); /* "epochs=100", "gpu=H100-SXM", ... */
        if (st != VT_OK) {
            fprintf(stderr, "%s\n", vt_estimator_last_error(est)); /* lists the valid keys */
            vt_estimator_destroy(est);
            return 2;
        }
    }

    /* Optionally measure real training steps here.  A CPU calibration sharpens the estimate of
     * the local machine ("gpu=local"); one on a GPU that the catalog lists is extrapolated to
     * the other GPUs. */
    if (calibrate) {
        printf("calibrating on the CPU ...\n");
        st = vt_estimator_calibrate(est, "cpu", cal_opts);
        if (st != VT_OK) {
            fprintf(stderr, "calibration failed: %s\n", vt_estimator_last_error(est));
            vt_estimator_destroy(est);
            return 1;
        }
        vt_estimator_set(est, "gpu=local");
        if (vt_estimator_run(est) == VT_OK) {
            double epoch, total;
            vt_estimator_result(est, VT_EST_EPOCH_SECONDS, &epoch);
            vt_estimator_result(est, VT_EST_TOTAL_SECONDS, &total);
            printf("this machine: %.1f s per epoch, %.2f h in all\n", epoch, total / 3600);
        }
    }

    /* Rank every catalog GPU, cheapest first (VT_RANK_TIME: fastest first; the _WITHIN_
     * rankings honour deadline_h= / budget_usd=). */
    int count = 0;
    st = vt_estimator_rank(est, VT_RANK_COST, NULL, 0, &count); /* ask for the size */
    int *order = st == VT_OK ? malloc((size_t)count * sizeof *order) : NULL;
    if (order) st = vt_estimator_rank(est, VT_RANK_COST, order, count, &count);
    if (st != VT_OK || !order) {
        fprintf(stderr, "ranking failed: %s\n", vt_estimator_last_error(est));
        free(order);
        vt_estimator_destroy(est);
        return st == VT_ERR_INVALID_ARGUMENT ? 2 : 1; /* e.g. an unknown model */
    }

    const vt_catalog *cat = vt_estimator_catalog(est);
    printf("%-16s %5s %10s %9s %9s\n", "GPU", "fits", "s/epoch", "hours", "cost USD");
    for (int r = 0; r < count && r < 10; r++) { /* the ten best */
        int g = order[r];
        double fits = 0, epoch = 0, total = 0, cost;
        vt_estimator_rank_result(est, g, VT_EST_FITS, &fits);
        vt_estimator_rank_result(est, g, VT_EST_EPOCH_SECONDS, &epoch);
        vt_estimator_rank_result(est, g, VT_EST_TOTAL_SECONDS, &total);
        char cost_text[32] = "-"; /* VT_ERR_NOT_FOUND: the catalog has no price */
        if (vt_estimator_rank_result(est, g, VT_EST_COST_USD, &cost) == VT_OK)
            snprintf(cost_text, sizeof cost_text, "%.2f", cost);
        printf("%-16s %5s %10.1f %9.2f %9s\n", vt_catalog_gpu_name(cat, g),
               fits > 0 ? "yes" : "no", epoch, total / 3600, cost_text);
    }
    printf("advice: %s\n", vt_estimate_dataset_advice(train_images));
    free(order);
    vt_estimator_destroy(est);
    return 0;
}
