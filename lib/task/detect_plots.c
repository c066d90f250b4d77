/* A detector's figures of its last validation (its table's plots, task.h): PR_curve.png and
 * F1_curve.png in the run folder, per class and their mean; the same curves of any evaluator
 * under a prefix (an instance segmenter's BoxPR_curve.png, MaskPR_curve.png, ...), and the
 * boxes of the validation mosaics' tiles. */
#include <stdio.h>
#include <stdlib.h>

#include "image/plot.h"
#include "task/detect_eval.h"
#include "task/detect_task.h"
#include "task/task.h"

enum { NCONF = 1001, LEGEND_CLASSES = 10 };
#define GREY 0xB4B4B4u
#define MEAN_RGB 0x1F77B4u

static const char *class_name(const vt_task_ctx *ctx, int c)
{
    return ctx->ds->class_names && c < ctx->ds->num_classes ? ctx->ds->class_names[c] : NULL;
}

/* Per-class curves (thin: coloured with a legend entry for up to 10 classes, else grey), the
 * mean over the classes with ground truth on top (thick), and an optional marked point.  A
 * class's legend value is its curve's mean (legend_mean: AP50 for the PR curve) or maximum. */
static vt_status curve_figure(const vt_task_ctx *ctx, int nc, const char *run_dir,
                              const char *prefix, const char *file, const vt_axes *ax,
                              const double *xs, const double *ys, int npts, int legend_mean,
                              const char *mean_label, const double *mean, const vt_series *mark)
{
    int named = nc <= LEGEND_CLASSES;
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
            const char *nm = class_name(ctx, c);
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
    snprintf(path, sizeof path, "%s/%s%s", run_dir, prefix, file);
    vt_status st = vt_plot_figure(path, 1000, 640, ax, s, ns);
    free(s);
    free(labels);
    return st;
}

vt_status vt_det_curves(const vt_task_ctx *ctx, vt_det_eval *ev, const char *run_dir,
                        const char *prefix, const char *iou)
{
    if (!ev) return VT_OK; /* no validation yet */
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
        char lab[96], title[128];
        snprintf(lab, sizeof lab, "all classes %.3f mAP@0.5", map50);
        snprintf(title, sizeof title, "%s%srecision-recall curve (%s 0.5)", prefix,
                 *prefix ? " p" : "P", iou);
        vt_axes ax = {.title = title, .xlabel = "Recall", .ylabel = "Precision", .xlim = {0, 1},
                      .ylim = {0, 1.02}, .legend_right = 1};
        st = curve_figure(ctx, nc, run_dir, prefix, "PR_curve.png", &ax, xs, pr, 101, 1, lab,
                          mean, NULL);
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
        char lab[96], mark_lab[96], title[128];
        snprintf(lab, sizeof lab, "all classes (mean)");
        snprintf(mark_lab, sizeof mark_lab, "best F1 %.3f at conf %.3f", mean[best], xs[best]);
        snprintf(title, sizeof title, "%s%sF1-confidence curve (%s 0.5)", prefix,
                 *prefix ? " " : "", iou);
        vt_series mark = {mark_lab, xs + best, mean + best, 1, 0xD62728u, 1, 0, 0};
        vt_axes ax = {.title = title, .xlabel = "Confidence", .ylabel = "F1", .xlim = {0, 1},
                      .ylim = {0, 1.02}, .legend_right = 1};
        st = curve_figure(ctx, nc, run_dir, prefix, "F1_curve.png", &ax, xs, f1, NCONF, 0, lab,
                          mean, &mark);
    }
    free(pr);
    free(f1);
    free(xs);
    free(mean);
    return st;
}

vt_status vt_task_detect_plots(const vt_task_ctx *ctx, const char *run_dir)
{
    return vt_det_curves(ctx, vt_detect_last_eval(ctx), run_dir, "", "IoU");
}

/* ---- the validation mosaics' tiles ---- */

vt_status vt_det_tile(const vt_task_ctx *c, int i, const vt_image *img, vt_task_tile *gt,
                      vt_task_tile *pred, vt_det_tile_fn fn)
{
    const vt_split_list *sl = &c->ds->split[VT_SPLIT_VAL];
    int b0 = sl->box_start[i], nb = sl->box_start[i + 1] - b0;
    gt->box = vt_calloc((size_t)nb + 1, sizeof *gt->box);
    if (!gt->box) return VT_ERR_OUT_OF_MEMORY;
    for (int j = 0; j < nb; j++) {
        const vt_det_box *g = &sl->boxes[b0 + j];
        gt->box[j] = (vt_mosaic_box){(g->cx - g->w / 2) * img->w, (g->cy - g->h / 2) * img->h,
                                     (g->cx + g->w / 2) * img->w, (g->cy + g->h / 2) * img->h,
                                     -1.0f, g->cls};
    }
    gt->nbox = nb;
    enum { CAP = 100 };
    int cls[CAP], count = 0;
    float score[CAP], box[4 * CAP];
    vt_status st = fn(c->model, img, 0.25f, 0.7f, CAP, cls, score, box, &count, pred->mask);
    if (st) return st;
    if (count > CAP) count = CAP;
    pred->box = vt_calloc((size_t)count + 1, sizeof *pred->box);
    if (!pred->box) return VT_ERR_OUT_OF_MEMORY;
    for (int j = 0; j < count; j++)
        pred->box[j] = (vt_mosaic_box){box[4 * j], box[4 * j + 1], box[4 * j + 2],
                                       box[4 * j + 3], score[j], cls[j]};
    pred->nbox = count;
    return VT_OK;
}

static vt_status detector_predict(vt_model *m, const vt_image *img, float conf, float iou,
                                  int cap, int *classes, float *scores, float *boxes, int *count,
                                  uint8_t *map)
{
    (void)map;
    return vt_model_detect_pixels(m, img->data, img->w, img->h, img->c, (size_t)img->w * img->c,
                                  conf, iou, cap, classes, scores, boxes, cap, count);
}

vt_status vt_task_detect_tile(const vt_task_ctx *c, int i, const vt_image *img, vt_task_tile *gt,
                              vt_task_tile *pred)
{
    return vt_det_tile(c, i, img, gt, pred, detector_predict);
}
