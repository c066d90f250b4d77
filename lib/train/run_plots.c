/* The figures of a run folder (plots=1): after every epoch results.png, confusion_matrix.png
 * and the task's own (its table's plots: a detector's PR_curve.png and F1_curve.png, an
 * instance segmenter's BoxPR_curve.png, BoxF1_curve.png, MaskPR_curve.png and
 * MaskF1_curve.png); at the end of the run val_batch0_labels.png and val_batch0_pred.png (tasks
 * with a val_tile), the first validation images with their ground truth and the final model's
 * predictions (boxes, masks, or both).
 * The drawing itself is lib/image/plot.c and mosaic.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "image/image.h"
#include "image/plot.h"
#include "train/trainer_impl.h"

enum { MOSAIC_MAX = 16 };

static const char *class_name(const vt_trainer *t, int c)
{
    return t->ds->class_names && c < t->ds->num_classes ? t->ds->class_names[c] : NULL;
}

vt_status vt_train_write_plots(vt_trainer *t)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/results.png", t->run_dir);
    VT_TRY(vt_results_plot(path, &t->results));
    if (t->confusion && t->confusion_k > 0 &&
        (t->prog.has[VT_METRIC_TOP1] || t->prog.has[VT_METRIC_MIOU] ||
         t->prog.has[VT_METRIC_MAP50])) {
        snprintf(path, sizeof path, "%s/confusion_matrix.png", t->run_dir);
        int nc = t->ds->num_classes, k = t->confusion_k;
        /* detection adds a background row and column after the classes */
        const char **names = vt_malloc((size_t)k * sizeof *names);
        if (!names) return VT_ERR_OUT_OF_MEMORY;
        for (int i = 0; i < k; i++)
            names[i] = i < nc && t->ds->class_names ? t->ds->class_names[i] : "background";
        vt_status st = vt_plot_confusion(path, k, t->confusion, names, t->task->confusion_unit);
        free(names);
        VT_TRY(st);
    }
    if (t->task->plots) VT_TRY(t->task->plots(vt_trainer_task_ctx(t), t->run_dir));
    return VT_OK;
}

/* ---- the validation mosaics ---- */

typedef struct mosaic_data {
    vt_image img[MOSAIC_MAX];
    vt_task_tile gt[MOSAIC_MAX], pred[MOSAIC_MAX]; /* the task's (val_tile) */
    char caption[MOSAIC_MAX][256];
} mosaic_data;

/* Image i of the validation split, its ground truth and the model's prediction. */
static vt_status mosaic_tile(vt_trainer *t, int i, mosaic_data *d)
{
    const vt_split_list *sl = &t->ds->split[VT_SPLIT_VAL];
    vt_image *img = &d->img[i];
    VT_TRY(vt_image_load(sl->paths[i], img));
    const char *base = strrchr(sl->paths[i], '/');
    snprintf(d->caption[i], sizeof d->caption[i], "%s", base ? base + 1 : sl->paths[i]);
    return t->task->val_tile(vt_trainer_task_ctx(t), i, img, &d->gt[i], &d->pred[i]);
}

vt_status vt_train_write_final_plots(vt_trainer *t)
{
    const vt_split_list *sl = &t->ds->split[VT_SPLIT_VAL];
    if (!t->task->val_tile || sl->n == 0 || !t->run_dir[0]) return VT_OK;
    int n = sl->n < MOSAIC_MAX ? sl->n : MOSAIC_MAX;
    mosaic_data *d = vt_calloc(1, sizeof *d);
    vt_mosaic_tile *tiles = vt_calloc(MOSAIC_MAX, sizeof *tiles);
    vt_status st = d && tiles ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < n && !st; i++) st = mosaic_tile(t, i, d);
    /* segmentation: the background class (0 named "background") is left unpainted; instance
     * masks: the pixels of no object */
    const char *c0 = class_name(t, 0);
    int skip = t->task->mask_background && c0 && strcasecmp(c0, "background") == 0 ? 0
                                                                                 : VT_TILE_NONE;
    const char *const *names = (const char *const *)t->ds->class_names;
    char path[4200];
    for (int which = 0; which < 2 && !st; which++) {
        for (int i = 0; i < n; i++) {
            const vt_image *img = &d->img[i];
            const vt_task_tile *q = which ? &d->pred[i] : &d->gt[i];
            tiles[i] = (vt_mosaic_tile){img->data, img->w, img->h, img->c, q->box, q->nbox,
                                        q->mask, d->caption[i]};
        }
        snprintf(path, sizeof path, "%s/val_batch0_%s.png", t->run_dir, which ? "pred" : "labels");
        const char *title = which ? t->task->val_pred_title : "Validation images: ground truth";
        st = vt_plot_mosaic(path, title, tiles, n, names, t->ds->num_classes, skip);
    }
    for (int i = 0; d && i < MOSAIC_MAX; i++) {
        vt_image_free(&d->img[i]);
        free(d->gt[i].box);
        free(d->pred[i].box);
        free(d->gt[i].mask);
        free(d->pred[i].mask);
    }
    free(d);
    free(tiles);
    return st;
}
