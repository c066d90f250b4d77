/* Detection acceptance run (issue 4): train a detector on a generated YOLO dataset on the CPU
 * and report validation mAP50 / mAP50-95 per epoch and the wall time.
 *
 *   det_acceptance [dir=det-accept] [model=det-n] [train=1000] [val=200] [imgsz=128]
 *                  [epochs=40] [batch=32] [workers=2] [extra trainer key=value ...]
 *
 * The trainer runs with optimizer=adamw lr0=0.002 unless given, and the default augmentation
 * (mosaic, affine, HSV, flips; close_mosaic=10).
 *
 * The dataset is generated under `dir` when it does not exist yet (classes=3, seed=1); the val
 * images are separate generated images.  Unknown key=value arguments go to the trainer
 * (e.g. lr0=0.01 optimizer=adamw). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "visiontrain/visiontrain.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int on_progress(void *user, vt_event ev, const vt_progress *p)
{
    (void)user;
    if (ev != VT_EVENT_EPOCH_END) return 0;
    double loss = 0, vl = 0, m50 = 0, m5095 = 0, pr = 0, rc = 0, secs = 0;
    vt_progress_metric(p, VT_METRIC_LOSS, &loss);
    vt_progress_metric(p, VT_METRIC_VAL_LOSS, &vl);
    vt_progress_metric(p, VT_METRIC_MAP50, &m50);
    vt_progress_metric(p, VT_METRIC_MAP50_95, &m5095);
    vt_progress_metric(p, VT_METRIC_PRECISION, &pr);
    vt_progress_metric(p, VT_METRIC_RECALL, &rc);
    vt_progress_metric(p, VT_METRIC_EPOCH_SECONDS, &secs);
    printf("epoch %3d/%d  loss %.4f  val %.4f  P %.3f  R %.3f  mAP50 %.4f  mAP50-95 %.4f  "
           "%.1f s\n", vt_progress_epoch(p), vt_progress_epochs(p), loss, vl, pr, rc, m50, m5095,
           secs);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = "det-accept", *model = "det-n";
    int ntrain = 1000, nval = 200, imgsz = 128, epochs = 40, batch = 32, workers = 2;
    char extra[2048] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "dir=", 4)) dir = a + 4;
        else if (!strncmp(a, "model=", 6)) model = a + 6;
        else if (!strncmp(a, "train=", 6)) ntrain = atoi(a + 6);
        else if (!strncmp(a, "val=", 4)) nval = atoi(a + 4);
        else if (!strncmp(a, "imgsz=", 6)) imgsz = atoi(a + 6);
        else if (!strncmp(a, "epochs=", 7)) epochs = atoi(a + 7);
        else if (!strncmp(a, "batch=", 6)) batch = atoi(a + 6);
        else if (!strncmp(a, "workers=", 8)) workers = atoi(a + 8);
        else if (strchr(a, '=')) {
            strncat(extra, a, sizeof extra - strlen(extra) - 2);
            strcat(extra, " ");
        } else {
            fprintf(stderr, "usage: det_acceptance [key=value ...] (see the source)\n");
            return 2;
        }
    }
    struct stat sb;
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s/data.yaml", dir);
    if (stat(yaml, &sb) != 0) {
        char opts[256];
        snprintf(opts, sizeof opts, "classes=3 train=%d val=%d imgsz=%d seed=1", ntrain, nval,
                 imgsz);
        double t0 = now();
        if (vt_synth_generate(dir, VT_TASK_DETECT, opts)) {
            fprintf(stderr, "generate: %s\n", vt_last_error());
            return 1;
        }
        printf("generated %s (%s) in %.1f s\n", dir, opts, now() - t0);
    }
    vt_dataset *ds;
    if (vt_dataset_open(&ds, VT_TASK_DETECT, yaml)) {
        fprintf(stderr, "open: %s\n", vt_last_error());
        return 1;
    }
    char mopts[64];
    snprintf(mopts, sizeof mopts, "imgsz=%d", imgsz);
    vt_model *m;
    vt_trainer *t;
    if (vt_model_create(&m, model, vt_dataset_num_classes(ds), mopts) ||
        vt_trainer_create(&t, m, ds)) {
        fprintf(stderr, "create: %s\n", vt_last_error());
        return 1;
    }
    vt_trainer_set_int(t, VT_OPT_EPOCHS, epochs);
    vt_trainer_set_int(t, VT_OPT_BATCH, batch);
    vt_trainer_set_int(t, VT_OPT_WORKERS, workers);
    vt_trainer_set_int(t, VT_OPT_SAVE, 0);
    vt_trainer_set(t, "optimizer=adamw");
    vt_trainer_set(t, "lr0=0.002");
    char *tok = strtok(extra, " ");
    for (; tok; tok = strtok(NULL, " "))
        if (vt_trainer_set(t, tok)) {
            fprintf(stderr, "%s: %s\n", tok, vt_last_error());
            return 2;
        }
    vt_trainer_set_progress(t, on_progress, NULL);
    printf("%s on %d train / %d val images at %d px, %d epochs, batch %d, %.2f GFLOP/img fwd\n",
           model, vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL),
           imgsz, epochs, batch, vt_model_flops(m, imgsz) / 1e9);
    double t0 = now();
    vt_status st = vt_trainer_run(t);
    double secs = now() - t0;
    if (st) {
        fprintf(stderr, "train: %s\n", vt_trainer_last_error(t));
        return 1;
    }
    double m50 = 0, m5095 = 0, best = 0;
    vt_trainer_metric(t, VT_METRIC_MAP50, &m50);
    vt_trainer_metric(t, VT_METRIC_MAP50_95, &m5095);
    vt_trainer_metric(t, VT_METRIC_BEST_FITNESS, &best);
    printf("final mAP50 %.4f  mAP50-95 %.4f  best mAP50-95 %.4f  wall %.1f s (%.1f min)\n", m50,
           m5095, best, secs, secs / 60);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return 0;
}
