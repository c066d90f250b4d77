/* Train an image classifier with libvisiontrain.
 *
 *   train_classifier DATA_DIR [OUT.vtm] [key=value ...]
 *
 * DATA_DIR is an ImageFolder dataset: DATA_DIR/train/<class>/ folders of .png or .jpg images,
 * and DATA_DIR/val/<class>/ alike
 * (`vt synth data=DIR` writes a synthetic one).  key=value pairs are trainer options
 * (epochs=, batch=, imgsz=, optimizer=, lr0=, device=, ...; `vt info` lists them all).
 * The trained model is saved to OUT.vtm (default classifier.vtm).
 *
 * Build: cc train_classifier.c $(pkg-config --cflags --libs visiontrain) */
#include <stdio.h>
#include <string.h>

#include <visiontrain/visiontrain.h>

/* Called by vt_trainer_run() after every batch and every epoch. */
static int on_progress(void *user, vt_event event, const vt_progress *p)
{
    (void)user;
    if (event != VT_EVENT_EPOCH_END) return 0; /* return non-zero to stop the run */
    double loss = 0, top1;
    vt_progress_metric(p, VT_METRIC_LOSS, &loss);
    printf("epoch %d/%d: loss %.4f", vt_progress_epoch(p), vt_progress_epochs(p), loss);
    if (vt_progress_metric(p, VT_METRIC_TOP1, &top1) == VT_OK) /* only with a val split */
        printf(", val top-1 %.3f", top1);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATA_DIR [OUT.vtm] [key=value ...]\n", argv[0]);
        return 2;
    }
    const char *data = argv[1];
    const char *out = argc > 2 && !strchr(argv[2], '=') ? argv[2] : "classifier.vtm";
    int first_option = argc > 2 && !strchr(argv[2], '=') ? 3 : 2;

    vt_dataset *ds = NULL;
    vt_model *model = NULL;
    vt_trainer *trainer = NULL;
    int rc = 1;

    /* 1. Open the dataset: only file names are read here. */
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, data);
    if (st != VT_OK) {
        /* no handle was created: the message is the thread's (it names the folder) */
        fprintf(stderr, "%s\n", vt_last_error());
        return 3;
    }
    printf("%d classes, %d training and %d validation images\n", vt_dataset_num_classes(ds),
           vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL));

    /* 2. Create a model with one output per class.  The model's image size is a model option;
     *    pass the command line's imgsz= on to it as well. */
    char model_opts[64] = "";
    for (int i = first_option; i < argc; i++)
        if (strncmp(argv[i], "imgsz=", 6) == 0) snprintf(model_opts, sizeof model_opts, "%s", argv[i]);
    st = vt_model_create(&model, "cls-n", vt_dataset_num_classes(ds), model_opts);
    if (st != VT_OK) {
        fprintf(stderr, "cannot create the model: %s\n", vt_last_error());
        goto done;
    }

    /* 3. A trainer borrows the model and the dataset; both must outlive it. */
    st = vt_trainer_create(&trainer, model, ds);
    if (st != VT_OK) {
        fprintf(stderr, "cannot create the trainer: %s\n", vt_last_error());
        goto done;
    }
    /* Options in "key=value" form, as the vt tool takes them.  Typed setters exist too:
     * vt_trainer_set_int(trainer, VT_OPT_EPOCHS, 20). */
    vt_trainer_set_int(trainer, VT_OPT_EPOCHS, 5); /* our default; the command line overrides */
    for (int i = first_option; i < argc; i++) {
        st = vt_trainer_set(trainer, argv[i]);
        if (st != VT_OK) { /* the message lists the valid keys or the valid range */
            fprintf(stderr, "%s\n", vt_trainer_last_error(trainer));
            rc = 2;
            goto done;
        }
    }
    vt_trainer_set_progress(trainer, on_progress, NULL);

    /* 4. Train.  The model keeps the trained weights and the dataset's class names. */
    st = vt_trainer_run(trainer);
    if (st != VT_OK) {
        fprintf(stderr, "training failed: %s (%s)\n", vt_trainer_last_error(trainer),
                vt_status_string(st));
        goto done;
    }
    double top1;
    if (vt_trainer_metric(trainer, VT_METRIC_TOP1, &top1) == VT_OK)
        printf("final validation top-1 accuracy: %.3f\n", top1);

    /* 5. Save.  vt_model_load() reads it back (see predict.c). */
    st = vt_model_save(model, out);
    if (st != VT_OK) {
        fprintf(stderr, "cannot save %s: %s\n", out, vt_model_last_error(model));
        goto done;
    }
    printf("saved %s\n", out);
    rc = 0;

done:
    /* Destroy the trainer before what it borrows.  xxx_destroy(NULL) does nothing. */
    vt_trainer_destroy(trainer);
    vt_model_destroy(model);
    vt_dataset_destroy(ds);
    return rc;
}
