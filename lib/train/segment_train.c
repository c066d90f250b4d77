/* The segmentation side of the trainer: per-pixel labels from the loader's masks, the loss
 * through the backend's softmax cross-entropy (one "sample" per pixel, ignored pixels -1), and
 * validation: a pixel confusion matrix, mean IoU and pixel accuracy. */
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
    int pixels = n * e->h * e->w;
    float scale = labelled ? 1.0f / (float)labelled : 0.0f;
    TRY(be->ops->softmax_xent(be, m->num_classes, pixels, out->y, t->seg_lab_dev,
                              (float)vt_opt_num(&t->opts, VT_OPT_LABEL_SMOOTHING), scale, e->loss,
                              with_grad ? out->dy : NULL, NULL));
    float sum;
    TRY(be->ops->download(be, &sum, e->loss, sizeof sum));
    *loss = labelled ? sum * scale : 0.0f;
    return VT_OK;
}

vt_status vt_seg_evaluate(vt_trainer *t, vt_split split, int batch, struct vt_loader **keep)
{
    vt_dataset *ds = t->ds;
    vt_model *m = t->model;
    int total = ds->split[split].n;
    if (total == 0)
        return vt_fail(VT_ERR_DATASET, "%s: the dataset has no %s images", ds->root,
                       split == VT_SPLIT_VAL ? "validation" : split == VT_SPLIT_TEST ? "test" : "train");
    int sz = vt_trainer_imgsz(t), K = m->num_classes;
    vt_loader_config cfg = {sz, m->channels, (int)vt_opt_num(&t->opts, VT_OPT_WORKERS), NULL,
                            &t->log};
    vt_loader *L = keep ? *keep : NULL;
    if (!L) TRY(vt_loader_create(&L, ds, split, &cfg));
    if (keep) *keep = L;
    if (t->confusion_k != K) {
        free(t->confusion);
        t->confusion = vt_calloc((size_t)K * K, sizeof(int64_t));
        t->confusion_k = t->confusion ? K : 0;
    }
    vt_status st = t->confusion ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (t->confusion) memset(t->confusion, 0, (size_t)K * K * sizeof(int64_t));
    size_t hw = (size_t)sz * sz, need = (size_t)K * batch * hw;
    if (!st && need > t->seg_logits_cap) {
        free(t->seg_logits);
        t->seg_logits = vt_malloc(need * sizeof(float));
        t->seg_logits_cap = t->seg_logits ? need : 0;
        if (!t->seg_logits) st = VT_ERR_OUT_OF_MEMORY;
    }
    int *idx = st ? NULL : vt_malloc((size_t)batch * sizeof(int));
    if (!st && !idx) st = VT_ERR_OUT_OF_MEMORY;
    vt_exec *e = t->exec;
    vt_backend *be = t->be;
    vt_node *out = &e->g->nodes[m->output_node];
    double loss = 0, labelled_all = 0;
    long seen = 0;
    for (int b0 = 0; !st && b0 < total; b0 += batch) {
        int n = total - b0 < batch ? total - b0 : batch, ok;
        for (int i = 0; i < n; i++) idx[i] = b0 + i;
        st = vt_trainer_fill_input(t, L, idx, n, 0, &ok);
        if (st == VT_ERR_DATASET) { /* a whole unreadable batch: skip it, warnings logged */
            st = VT_OK;
            continue;
        }
        if (st) break;
        e->n = ok;
        float bl;
        if ((st = vt_exec_forward(e, 0)) || (st = vt_seg_batch_loss(t, L, ok, 0, &bl)) ||
            (st = be->ops->download(be, t->seg_logits, out->y,
                                    (size_t)K * ok * hw * sizeof(float))))
            break;
        size_t px = (size_t)ok * hw, labelled = 0;
        for (size_t i = 0; i < px; i++) {
            int lab = t->seg_lab_host[i];
            if (lab < 0) continue;
            int best = 0;
            float bv = t->seg_logits[i];
            for (int k = 1; k < K; k++) {
                float v = t->seg_logits[(size_t)k * px + i];
                if (v > bv) bv = v, best = k;
            }
            t->confusion[(size_t)lab * K + best]++;
            labelled++;
        }
        loss += (double)bl * labelled;
        labelled_all += labelled;
        seen += ok;
    }
    free(idx);
    if (!keep) vt_loader_destroy(L);
    if (st) return st;
    if (seen == 0) return vt_fail(VT_ERR_DATASET, "%s: no validation image could be read", ds->root);
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
    vt_progress_set(&t->prog, VT_METRIC_VAL_LOSS, labelled_all > 0 ? loss / labelled_all : 0);
    vt_progress_set(&t->prog, VT_METRIC_MIOU, classes ? iou_sum / classes : 0);
    vt_progress_set(&t->prog, VT_METRIC_PIXEL_ACC, all > 0 ? diag / all : 0);
    return VT_OK;
}
