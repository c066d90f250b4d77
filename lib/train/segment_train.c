/* The segmentation side of the trainer: per-pixel labels from the loader's masks, the loss
 * through the backend's softmax cross-entropy (one "sample" per pixel, ignored pixels -1) plus
 * its soft Dice term (weight `dice`; backend/seg_loss_math.h), and validation: a pixel
 * confusion matrix, mean IoU and pixel accuracy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "train/trainer_impl.h"

#define TRY VT_TRY

void vt_seg_release(vt_trainer *t)
{
    if (t->be) t->be->ops->free(t->be, t->seg_lab_dev);
    t->seg_lab_dev = NULL;
    free(t->seg_lab_host);
    t->seg_lab_host = NULL;
    t->seg_lab_cap = 0;
    free(t->seg_logits);
    t->seg_logits = NULL;
    t->seg_logits_cap = 0;
    if (t->be) t->be->ops->free(t->be, t->seg_probs_dev);
    t->seg_probs_dev = NULL;
    t->seg_probs_cap = 0;
}

/* Pixel labels of the n packed images into the backend; returns the labelled pixel count. */
static vt_status upload_labels(vt_trainer *t, vt_loader *L, int n, size_t *labelled)
{
    vt_backend *be = t->be;
    size_t hw = (size_t)t->exec->h * t->exec->w, total = hw * n;
    if (total > t->seg_lab_cap) {
        be->ops->free(be, t->seg_lab_dev);
        free(t->seg_lab_host);
        t->seg_lab_dev = be->ops->alloc(be, total * sizeof(int32_t));
        t->seg_lab_host = vt_malloc(total * sizeof(int32_t));
        t->seg_lab_cap = t->seg_lab_dev && t->seg_lab_host ? total : 0;
        if (!t->seg_lab_cap) return VT_ERR_OUT_OF_MEMORY;
    }
    size_t count = 0;
    int nc = t->model->num_classes;
    for (int k = 0; k < n; k++) {
        const uint8_t *m = vt_loader_mask(L, k);
        int32_t *o = t->seg_lab_host + (size_t)k * hw;
        for (size_t i = 0; i < hw; i++) {
            int v = m[i] < nc ? m[i] : -1;
            o[i] = v;
            count += v >= 0;
        }
    }
    *labelled = count;
    return be->ops->upload(be, t->seg_lab_dev, t->seg_lab_host, total * sizeof(int32_t));
}

vt_status vt_seg_batch_loss(vt_trainer *t, struct vt_loader *L, int n, int with_grad,
                            float *loss)
{
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    vt_model *m = t->model;
    vt_node *out = &e->g->nodes[m->output_node];
    size_t labelled;
    TRY(upload_labels(t, L, n, &labelled));
    int pixels = n * e->h * e->w, K = m->num_classes;
    float scale = labelled ? 1.0f / (float)labelled : 0.0f;
    float dice = labelled ? (float)vt_opt_num(&t->opts, VT_OPT_DICE) : 0.0f;
    size_t np = (size_t)K * pixels;
    if (dice > 0 && np > t->seg_probs_cap) {
        be->ops->free(be, t->seg_probs_dev);
        t->seg_probs_dev = be->ops->alloc(be, np * sizeof(float));
        t->seg_probs_cap = t->seg_probs_dev ? np : 0;
        if (!t->seg_probs_dev) return VT_ERR_OUT_OF_MEMORY;
    }
    TRY(be->ops->softmax_xent(be, K, pixels, out->y, t->seg_lab_dev,
                              (float)vt_opt_num(&t->opts, VT_OPT_LABEL_SMOOTHING), scale, e->loss,
                              with_grad ? out->dy : NULL, dice > 0 ? t->seg_probs_dev : NULL));
    if (dice > 0)
        TRY(be->ops->softmax_dice(be, K, pixels, t->seg_probs_dev, t->seg_lab_dev, dice,
                                  e->loss + 1, with_grad ? out->dy : NULL));
    float sum[2] = {0, 0};
    TRY(be->ops->download(be, sum, e->loss, (dice > 0 ? 2 : 1) * sizeof(float)));
    *loss = labelled ? sum[0] * scale + sum[1] : 0.0f;
    return VT_OK;
}

/* One validation batch: loss weighted by labelled pixels, and the pixel confusion matrix. */
typedef struct seg_val {
    double loss, labelled;
} seg_val;

static vt_status seg_batch(vt_trainer *t, struct vt_loader *L, int ok, void *ctx)
{
    seg_val *v = ctx;
    int K = t->model->num_classes, sz = vt_trainer_imgsz(t);
    vt_backend *be = t->be;
    vt_node *out = &t->exec->g->nodes[t->model->output_node];
    size_t px = (size_t)ok * sz * sz, labelled = 0;
    float bl;
    TRY(vt_seg_batch_loss(t, L, ok, 0, &bl));
    TRY(be->ops->download(be, t->seg_logits, out->y, (size_t)K * px * sizeof(float)));
    for (size_t i = 0; i < px; i++) {
        int lab = t->seg_lab_host[i];
        if (lab < 0) continue;
        int best = 0;
        float bv = t->seg_logits[i];
        for (int k = 1; k < K; k++) {
            float x = t->seg_logits[(size_t)k * px + i];
            if (x > bv) bv = x, best = k;
        }
        t->confusion[(size_t)lab * K + best]++;
        labelled++;
    }
    v->loss += (double)bl * labelled;
    v->labelled += labelled;
    return VT_OK;
}

vt_status vt_seg_evaluate(vt_trainer *t, vt_split split, int batch, struct vt_loader **keep)
{
    int sz = vt_trainer_imgsz(t), K = t->model->num_classes;
    if (t->confusion_k != K) {
        free(t->confusion);
        t->confusion = vt_calloc((size_t)K * K, sizeof(int64_t));
        t->confusion_k = t->confusion ? K : 0;
    }
    if (!t->confusion) return VT_ERR_OUT_OF_MEMORY;
    memset(t->confusion, 0, (size_t)K * K * sizeof(int64_t));
    size_t need = (size_t)K * batch * sz * sz;
    if (need > t->seg_logits_cap) {
        free(t->seg_logits);
        t->seg_logits = vt_malloc(need * sizeof(float));
        t->seg_logits_cap = t->seg_logits ? need : 0;
        if (!t->seg_logits) return VT_ERR_OUT_OF_MEMORY;
    }
    seg_val v = {0, 0};
    TRY(vt_trainer_eval_batches(t, split, batch, keep, seg_batch, &v));
    double iou_sum = 0, diag = 0, all = 0;
    int classes = 0;
    for (int c = 0; c < K; c++) {
        int64_t tp = t->confusion[(size_t)c * K + c], row = 0, col = 0;
        for (int k = 0; k < K; k++) {
            row += t->confusion[(size_t)c * K + k];
            col += t->confusion[(size_t)k * K + c];
        }
        int64_t den = row + col - tp;
        if (den > 0) {
            iou_sum += (double)tp / (double)den;
            classes++;
        }
        diag += (double)tp;
        all += (double)row;
    }
    vt_progress_set(&t->prog, VT_METRIC_VAL_LOSS, v.labelled > 0 ? v.loss / v.labelled : 0);
    vt_progress_set(&t->prog, VT_METRIC_MIOU, classes ? iou_sum / classes : 0);
    vt_progress_set(&t->prog, VT_METRIC_PIXEL_ACC, all > 0 ? diag / all : 0);
    return VT_OK;
}
