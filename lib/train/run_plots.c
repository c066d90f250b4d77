/* The figures of a run folder (plots=1): after every epoch results.png, confusion_matrix.png
 * and, for detectors, PR_curve.png and F1_curve.png from the last validation's matches; at the
 * end of the run val_batch0_labels.png and val_batch0_pred.png (detection and segmentation),
 * the first validation images with their ground truth and the final model's predictions.
 * The drawing itself is lib/image/plot.c and mosaic.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/seg_mask.h"
#include "image/image.h"
#include "image/plot.h"
#include "task/detect_eval.h"
#include "train/trainer_impl.h"

enum { NCONF = 1001, MOSAIC_MAX = 16, LEGEND_CLASSES = 10 };
#define GREY 0xB4B4B4u
#define MEAN_RGB 0x1F77B4u

static const char *class_name(const vt_trainer *t, int c)
{
    return t->ds->class_names && c < t->ds->num_classes ? t->ds->class_names[c] : NULL;
}

/* Per-class curves (thin: coloured with a legend entry for up to 10 classes, else grey), the
 * mean over the classes with ground truth on top (thick), and an optional marked point.  A
 * class's legend value is its curve's mean (legend_mean: AP50 for the PR curve) or maximum. */
static vt_status curve_figure(vt_trainer *t, const char *file, const vt_axes *ax,
                              const double *xs, const double *ys, int npts, int legend_mean,
                              const char *mean_label, const double *mean, const vt_series *mark)
{
    int nc = vt_detect_last_eval(&t->tc)->nc, named = nc <= LEGEND_CLASSES;
    vt_series *s = vt_calloc((size_t)nc + 2, sizeof *s);
    char (*labels)[192] = vt_calloc((size_t)nc + 1, sizeof *labels);
    if (!s || !labels) {
        free(s);
        free(labels);
        return VT_ERR_OUT_OF_MEMORY;
    }
    int ns = 0;
    for (int c = 0; c < nc; c++) {
        if (ys[(size_t)c * npts] < 0) continue; /* no ground truth */
        vt_series *q = &s[ns++];
        q->x = xs;
        q->y = ys + (size_t)c * npts;
        q->n = npts;
        q->rgb = named ? vt_class_rgb(c) : GREY;
        q->thick = 1;
        if (named) {
            char idx[16];
            snprintf(idx, sizeof idx, "%d", c);
            const char *nm = class_name(t, c);
            double v = 0;
            for (int k = 0; k < npts; k++)
                v = legend_mean ? v + q->y[k] / npts : q->y[k] > v ? q->y[k] : v;
            snprintf(labels[c], sizeof labels[c], "%s %.3f", nm ? nm : idx, v);
            q->label = labels[c];
        }
    }
    s[ns++] = (vt_series){mean_label, xs, mean, npts, MEAN_RGB, 0, 0, 4};
    if (mark) s[ns++] = *mark;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", t->run_dir, file);
    vt_status st = vt_plot_figure(path, 1000, 640, ax, s, ns);
    free(s);
    free(labels);
    return st;
}

/* PR_curve.png and F1_curve.png of the last detection validation. */
static vt_status det_curves(vt_trainer *t)
{
    vt_det_eval *ev = vt_detect_last_eval(&t->tc);
    int nc = ev->nc;
    double *pr = vt_malloc((size_t)nc * 101 * sizeof *pr);
    double *f1 = vt_malloc((size_t)nc * NCONF * sizeof *f1);
    double *xs = vt_malloc((size_t)NCONF * sizeof *xs);
    double *mean = vt_calloc(NCONF, sizeof *mean);
    vt_status st = pr && f1 && xs && mean ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (!st) st = vt_det_eval_curves(ev, pr, NCONF, NULL, NULL, f1);
    int m = 0;
    for (int c = 0; !st && c < nc; c++) m += ev->num_gt[c] > 0;
    if (!st && m) {
        /* precision against recall: the mean of the mean curve's 101 values is mAP50 */
        double map50 = 0;
        for (int k = 0; k <= 100; k++) {
            xs[k] = k / 100.0;
            mean[k] = 0;
            for (int c = 0; c < nc; c++)
                if (ev->num_gt[c]) mean[k] += pr[(size_t)c * 101 + k] / m;
            map50 += mean[k] / 101;
        }
        char lab[96];
        snprintf(lab, sizeof lab, "all classes %.3f mAP@0.5", map50);
        vt_axes ax = {.title = "Precision-recall curve (IoU 0.5)", .xlabel = "Recall",
                      .ylabel = "Precision", .xlim = {0, 1}, .ylim = {0, 1.02}, .legend_right = 1};
        st = curve_figure(t, "PR_curve.png", &ax, xs, pr, 101, 1, lab, mean, NULL);
    }
    if (!st && m) {
        /* F1 against the confidence threshold; the best mean F1 (the lowest threshold of
         * equal ones) is the point where the reported P, R and F1 are taken */
        int best = 0;
        for (int k = 0; k < NCONF; k++) {
            xs[k] = k / (double)(NCONF - 1);
            mean[k] = 0;
            for (int c = 0; c < nc; c++)
                if (ev->num_gt[c]) mean[k] += f1[(size_t)c * NCONF + k] / m;
            if (mean[k] > mean[best]) best = k;
        }
        char lab[96], mark_lab[96];
        snprintf(lab, sizeof lab, "all classes (mean)");
        snprintf(mark_lab, sizeof mark_lab, "best F1 %.3f at conf %.3f", mean[best], xs[best]);
        vt_series mark = {mark_lab, xs + best, mean + best, 1, 0xD62728u, 1, 0, 0};
        vt_axes ax = {.title = "F1-confidence curve (IoU 0.5)", .xlabel = "Confidence",
                      .ylabel = "F1", .xlim = {0, 1}, .ylim = {0, 1.02}, .legend_right = 1};
        st = curve_figure(t, "F1_curve.png", &ax, xs, f1, NCONF, 0, lab, mean, &mark);
    }
    free(pr);
    free(f1);
    free(xs);
    free(mean);
    return st;
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
        vt_task task = t->model->task;
        const char *unit = task == VT_TASK_DETECT    ? "objects"
                           : task == VT_TASK_SEGMENT ? "pixels"
                                                     : "images";
        vt_status st = vt_plot_confusion(path, k, t->confusion, names, unit);
        free(names);
        VT_TRY(st);
    }
    if (vt_detect_last_eval(&t->tc)) VT_TRY(det_curves(t));
    return VT_OK;
}

/* ---- the validation mosaics ---- */

typedef struct mosaic_data {
    vt_image img[MOSAIC_MAX];
    vt_mosaic_box *gt[MOSAIC_MAX], *pred[MOSAIC_MAX];
    int ngt[MOSAIC_MAX], npred[MOSAIC_MAX];
    uint8_t *gt_mask[MOSAIC_MAX], *pred_mask[MOSAIC_MAX];
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
    size_t px = (size_t)img->w * img->h;
    vt_model *m = t->model;
    if (m->task == VT_TASK_SEGMENT) {
        d->gt_mask[i] = vt_malloc(px);
        d->pred_mask[i] = vt_malloc(px);
        if (!d->gt_mask[i] || !d->pred_mask[i]) return VT_ERR_OUT_OF_MEMORY;
        VT_TRY(vt_seg_image_mask(t->ds, VT_SPLIT_VAL, i, img->w, img->h, d->gt_mask[i]));
        return vt_model_segment_pixels(m, img->data, img->w, img->h, img->c,
                                       (size_t)img->w * img->c, d->pred_mask[i]);
    }
    int b0 = sl->box_start[i], nb = sl->box_start[i + 1] - b0;
    d->gt[i] = vt_calloc((size_t)nb + 1, sizeof *d->gt[i]);
    if (!d->gt[i]) return VT_ERR_OUT_OF_MEMORY;
    for (int j = 0; j < nb; j++) {
        const vt_det_box *g = &sl->boxes[b0 + j];
        d->gt[i][j] = (vt_mosaic_box){(g->cx - g->w / 2) * img->w, (g->cy - g->h / 2) * img->h,
                                      (g->cx + g->w / 2) * img->w, (g->cy + g->h / 2) * img->h,
                                      -1.0f, g->cls};
    }
    d->ngt[i] = nb;
    enum { CAP = 100 };
    int cls[CAP], count = 0;
    float score[CAP], box[4 * CAP];
    VT_TRY(vt_model_detect_pixels(m, img->data, img->w, img->h, img->c, (size_t)img->w * img->c,
                                  0.25f, 0.7f, CAP, cls, score, box, CAP, &count));
    if (count > CAP) count = CAP;
    d->pred[i] = vt_calloc((size_t)count + 1, sizeof *d->pred[i]);
    if (!d->pred[i]) return VT_ERR_OUT_OF_MEMORY;
    for (int j = 0; j < count; j++)
        d->pred[i][j] = (vt_mosaic_box){box[4 * j], box[4 * j + 1], box[4 * j + 2],
                                        box[4 * j + 3], score[j], cls[j]};
    d->npred[i] = count;
    return VT_OK;
}

vt_status vt_train_write_final_plots(vt_trainer *t)
{
    vt_task task = t->model->task;
    const vt_split_list *sl = &t->ds->split[VT_SPLIT_VAL];
    if (task == VT_TASK_CLASSIFY || sl->n == 0 || !t->run_dir[0]) return VT_OK;
    int n = sl->n < MOSAIC_MAX ? sl->n : MOSAIC_MAX;
    mosaic_data *d = vt_calloc(1, sizeof *d);
    vt_mosaic_tile *tiles = vt_calloc(MOSAIC_MAX, sizeof *tiles);
    vt_status st = d && tiles ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < n && !st; i++) st = mosaic_tile(t, i, d);
    /* segmentation: the background class (0 named "background") is left unpainted */
    const char *c0 = class_name(t, 0);
    int skip = task == VT_TASK_SEGMENT && c0 && strcasecmp(c0, "background") == 0 ? 0 : -1;
    const char *const *names = (const char *const *)t->ds->class_names;
    char path[4200];
    for (int which = 0; which < 2 && !st; which++) {
        for (int i = 0; i < n; i++) {
            const vt_image *img = &d->img[i];
            tiles[i] = (vt_mosaic_tile){img->data, img->w, img->h, img->c,
                                        which ? d->pred[i] : d->gt[i],
                                        which ? d->npred[i] : d->ngt[i],
                                        which ? d->pred_mask[i] : d->gt_mask[i], d->caption[i]};
        }
        snprintf(path, sizeof path, "%s/val_batch0_%s.png", t->run_dir, which ? "pred" : "labels");
        const char *title = which ? (task == VT_TASK_DETECT
                                         ? "Validation images: predictions (confidence >= 0.25)"
                                         : "Validation images: predicted masks")
                                  : "Validation images: ground truth";
        st = vt_plot_mosaic(path, title, tiles, n, names, t->ds->num_classes, skip);
    }
    for (int i = 0; d && i < MOSAIC_MAX; i++) {
        vt_image_free(&d->img[i]);
        free(d->gt[i]);
        free(d->pred[i]);
        free(d->gt_mask[i]);
        free(d->pred_mask[i]);
    }
    free(d);
    free(tiles);
    return st;
}
