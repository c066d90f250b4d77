/* Helper of the fault-injection test (test_checkpoint.c): trains a tiny classifier with a run
 * folder, resuming from its weights/last.vtm when that exists.  The test SIGKILLs it at random
 * moments and starts it again until it finishes.
 *   usage: ckpt_worker DATA_DIR PROJECT NAME [key=value ...]
 * Exit status 0 when training finished, 1 on an error (message on stderr). */
#include <stdio.h>
#include <sys/stat.h>

#include "visiontrain/visiontrain.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s DATA_DIR PROJECT NAME [key=value ...]\n", argv[0]);
        return 2;
    }
    vt_dataset *ds = NULL;
    vt_model *m = NULL;
    vt_trainer *t = NULL;
    char kv[8300], last[8192];
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, argv[1]);
    if (!st) st = vt_model_create(&m, "cls-n", vt_dataset_num_classes(ds), "imgsz=16 seed=1");
    if (!st) st = vt_trainer_create(&t, m, ds);
    const char *base[] = {"epochs=20", "batch=8", "seed=3", "workers=0", "plots=0",
                          "exist_ok=1", "warmup_epochs=1", NULL};
    for (int i = 0; !st && base[i]; i++) st = vt_trainer_set(t, base[i]);
    if (!st) {
        snprintf(kv, sizeof kv, "project=%s", argv[2]);
        st = vt_trainer_set(t, kv);
    }
    if (!st) {
        snprintf(kv, sizeof kv, "name=%s", argv[3]);
        st = vt_trainer_set(t, kv);
    }
    for (int i = 4; !st && i < argc; i++) st = vt_trainer_set(t, argv[i]);
    struct stat sb;
    snprintf(last, sizeof last, "%s/classify/%s/weights/last.vtm", argv[2], argv[3]);
    if (!st && stat(last, &sb) == 0) {
        snprintf(kv, sizeof kv, "resume=%s", last);
        st = vt_trainer_set(t, kv);
    }
    if (!st) st = vt_trainer_run(t);
    if (st) fprintf(stderr, "ckpt_worker: %s: %s\n", vt_status_string(st), vt_last_error());
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return st ? 1 : 0;
}
