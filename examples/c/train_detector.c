/* Train an object detector with libvisiontrain, then detect objects in one image.
 *
 *   train_detector DATA.yaml [IMAGE] [key=value ...]
 *
 * DATA.yaml is an Ultralytics data.yaml (or a folder holding one, or a COCO .json):
 * `vt synth data=DIR task=detect` writes a synthetic one.  key=value pairs are trainer options
 * (epochs=, batch=, imgsz=, optimizer=, lr0=, mosaic=, ...; `vt info` lists them all);
 * imgsz= also sets the model's image size (a multiple of 32).  The trained model is saved to
 * detector.vtm; IMAGE (default: the first validation image) is then searched for objects.
 *
 * Build: cc train_detector.c $(pkg-config --cflags --libs visiontrain) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <visiontrain/visiontrain.h>

static int on_progress(void *user, vt_event event, const vt_progress *p)
{
    (void)user;
    if (event != VT_EVENT_EPOCH_END) return 0;
    double loss = 0, map50, map;
    vt_progress_metric(p, VT_METRIC_LOSS, &loss);
    printf("epoch %d/%d: loss %.4f", vt_progress_epoch(p), vt_progress_epochs(p), loss);
    if (vt_progress_metric(p, VT_METRIC_MAP50, &map50) == VT_OK &&
        vt_progress_metric(p, VT_METRIC_MAP50_95, &map) == VT_OK)
        printf(", val mAP50 %.3f mAP50-95 %.3f", map50, map);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATA.yaml [IMAGE] [key=value ...]\n", argv[0]);
        return 2;
    }
    const char *data = argv[1];
    const char *image = argc > 2 && !strchr(argv[2], '=') ? argv[2] : NULL;
    int first_option = image ? 3 : 2;

    vt_dataset *ds = NULL;
    vt_model *model = NULL;
    vt_trainer *trainer = NULL;
    int rc = 1;

    /* 1. Open the dataset.  Label problems do not fail the call: the bad boxes are dropped
     *    and every problem is listed with its file and line. */
    if (vt_dataset_open(&ds, VT_TASK_DETECT, data) != VT_OK) {
        fprintf(stderr, "%s\n", vt_last_error());
        return 3;
    }
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        const char *msg;
        vt_dataset_problem(ds, k, NULL, NULL, NULL, &msg);
        fprintf(stderr, "warning: %s\n", msg);
    }
    printf("%d classes, %d training and %d validation images\n", vt_dataset_num_classes(ds),
           vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL));

    /* 2. A det-n model; its image size comes from imgsz= on the command line (default 640). */
    char model_opts[64] = "";
    for (int i = first_option; i < argc; i++)
        if (strncmp(argv[i], "imgsz=", 6) == 0) snprintf(model_opts, sizeof model_opts, "%s", argv[i]);
    if (vt_model_create(&model, "det-n", vt_dataset_num_classes(ds), model_opts) != VT_OK) {
        fprintf(stderr, "%s\n", vt_last_error());
        goto out;
    }

    /* 3. Train: the trainer borrows the model and the dataset. */
    if (vt_trainer_create(&trainer, model, ds) != VT_OK) {
        fprintf(stderr, "%s\n", vt_last_error());
        goto out;
    }
    vt_trainer_set(trainer, "save=0"); /* no run folder for this example */
    for (int i = first_option; i < argc; i++)
        if (vt_trainer_set(trainer, argv[i]) != VT_OK) {
            fprintf(stderr, "%s: %s\n", argv[i], vt_trainer_last_error(trainer));
            rc = 2;
            goto out;
        }
    vt_trainer_set_progress(trainer, on_progress, NULL);
    if (vt_trainer_run(trainer) != VT_OK) {
        fprintf(stderr, "training failed: %s\n", vt_trainer_last_error(trainer));
        goto out;
    }
    if (vt_model_save(model, "detector.vtm") != VT_OK) {
        fprintf(stderr, "%s\n", vt_model_last_error(model));
        goto out;
    }
    printf("saved detector.vtm\n");

    /* 4. Detect: ask for the count first (cap 0), then fill arrays of that size. */
    if (!image) image = vt_dataset_image_path(ds, VT_SPLIT_VAL, 0);
    int n = 0;
    vt_status st = vt_model_detect_file(model, image, 0.25f, 0.7f, 100, NULL, NULL, NULL, 0, &n);
    if (st != VT_OK) {
        fprintf(stderr, "%s\n", vt_model_last_error(model));
        goto out;
    }
    int *cls = malloc((size_t)(n ? n : 1) * sizeof *cls);
    float *score = malloc((size_t)(n ? n : 1) * sizeof *score);
    float *box = malloc((size_t)(n ? n : 1) * 4 * sizeof *box);
    if (cls && score && box &&
        vt_model_detect_file(model, image, 0.25f, 0.7f, 100, cls, score, box, n, &n) == VT_OK) {
        printf("%s: %d objects\n", image, n);
        for (int k = 0; k < n; k++)
            printf("  %-10s %.3f  (%.0f, %.0f) - (%.0f, %.0f)\n",
                   vt_model_class_name(model, cls[k]), score[k], box[4 * k], box[4 * k + 1],
                   box[4 * k + 2], box[4 * k + 3]);
        rc = 0;
    } else {
        fprintf(stderr, "%s\n", vt_model_last_error(model));
    }
    free(cls);
    free(score);
    free(box);
out:
    vt_trainer_destroy(trainer);
    vt_model_destroy(model);
    vt_dataset_destroy(ds);
    return rc;
}
