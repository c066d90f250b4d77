/* Segmentation: per-pixel labels from the loader's masks, the loss through the backend's
 * softmax cross-entropy (one "sample" per pixel, ignored pixels -1) plus its soft Dice term
 * (option dice; backend/seg_loss_math.h), and validation: a pixel confusion matrix, mean IoU and
 * pixel accuracy; behind the task interface (task.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "task/task.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

/* The task's state: per-pixel labels (host and backend), the logits downloaded for evaluation
 * and the softmax probabilities of a batch for the Dice term (backend). */
typedef struct seg_state {
    int32_t *lab_host, *lab_dev;
    size_t lab_cap;
    float *logits;
    size_t logits_cap;
    float *probs_dev;
    size_t probs_cap;
} seg_state;

static void seg_release(vt_task_ctx *c)
{
    seg_state *t = c->state;
    if (c->be) c->be->ops->free(c->be, t->lab_dev);
    t->lab_dev = NULL;
    free(t->lab_host);
    t->lab_host = NULL;
    t->lab_cap = 0;
    free(t->logits);
    t->logits = NULL;
    t->logits_cap = 0;
    if (c->be) c->be->ops->free(c->be, t->probs_dev);
    t->probs_dev = NULL;
    t->probs_cap = 0;
}

/* Pixel labels of the n packed images into the backend; returns the labelled pixel count. */
static vt_status upload_labels(vt_task_ctx *c, vt_loader *L, int n, size_t *labelled)
{
    seg_state *t = c->state;
    vt_backend *be = c->be;
    size_t hw = (size_t)c->exec->h * c->exec->w, total = hw * n;
    if (total > t->lab_cap) {
        be->ops->free(be, t->lab_dev);
        free(t->lab_host);
        t->lab_dev = be->ops->alloc(be, total * sizeof(int32_t));
        t->lab_host = vt_malloc(total * sizeof(int32_t));
        t->lab_cap = t->lab_dev && t->lab_host ? total : 0;
        if (!t->lab_cap) return VT_ERR_OUT_OF_MEMORY;
    }
    size_t count = 0;
    int nc = c->model->num_classes;
    for (int k = 0; k < n; k++) {
        const uint8_t *m = vt_loader_mask(L, k);
        int32_t *o = t->lab_host + (size_t)k * hw;
        for (size_t i = 0; i < hw; i++) {
            int v = m[i] < nc ? m[i] : -1;
            o[i] = v;
            count += v >= 0;
        }
    }
    *labelled = count;
    return be->ops->upload(be, t->lab_dev, t->lab_host, total * sizeof(int32_t));
}

static vt_status seg_batch_loss(vt_task_ctx *c, struct vt_loader *L, int n, int with_grad,
                                float *loss)
{
    seg_state *t = c->state;
    vt_backend *be = c->be;
    vt_exec *e = c->exec;
    vt_model *m = c->model;
    vt_node *out = &e->g->nodes[m->output_node];
    size_t labelled;
    TRY(upload_labels(c, L, n, &labelled));
    int pixels = n * e->h * e->w, K = m->num_classes;
    float scale = labelled ? 1.0f / (float)labelled : 0.0f;
    /* the Dice term even without a labelled pixel (its sums are then 0, its loss and gradient
     * too): the ranks of a distributed step all sum its sums (the backend's loss sync) */
    float dice = c->dice;
    size_t np = (size_t)K * pixels;
    if (dice > 0 && np > t->probs_cap) {
        be->ops->free(be, t->probs_dev);
        t->probs_dev = be->ops->alloc(be, np * sizeof(float));
        t->probs_cap = t->probs_dev ? np : 0;
        if (!t->probs_dev) return VT_ERR_OUT_OF_MEMORY;
    }
    TRY(be->ops->softmax_xent(be, K, pixels, out->y, t->lab_dev,
                              c->label_smoothing, scale, e->loss,
                              with_grad ? out->dy : NULL, dice > 0 ? t->probs_dev : NULL));
    if (dice > 0)
        TRY(be->ops->softmax_dice(be, K, pixels, t->probs_dev, t->lab_dev, dice,
                                  e->loss + 1, with_grad ? out->dy : NULL));
    float sum[2] = {0, 0};
    TRY(be->ops->download(be, sum, e->loss, (dice > 0 ? 2 : 1) * sizeof(float)));
    *loss = sum[0] * scale + sum[1]; /* scale 0 without a labelled pixel */
    return VT_OK;
}

/* One validation batch: loss weighted by labelled pixels, and the pixel confusion matrix. */
typedef struct seg_val {
    double loss, labelled;
} seg_val;

static vt_status seg_batch(vt_task_ctx *c, struct vt_loader *L, int ok, void *arg)
{
    seg_val *v = arg;
    seg_state *t = c->state;
    int K = c->model->num_classes, sz = c->imgsz;
    vt_backend *be = c->be;
    vt_node *out = &c->exec->g->nodes[c->model->output_node];
    int64_t *confusion = *c->confusion;
    size_t px = (size_t)ok * sz * sz, labelled = 0;
    float bl;
    TRY(seg_batch_loss(c, L, ok, 0, &bl));
    TRY(be->ops->download(be, t->logits, out->y, (size_t)K * px * sizeof(float)));
    for (size_t i = 0; i < px; i++) {
        int lab = t->lab_host[i];
        if (lab < 0) continue;
        int best = 0;
        float bv = t->logits[i];
        for (int k = 1; k < K; k++) {
            float x = t->logits[(size_t)k * px + i];
            if (x > bv) bv = x, best = k;
        }
        confusion[(size_t)lab * K + best]++;
        labelled++;
    }
    v->loss += (double)bl * labelled;
    v->labelled += labelled;
    return VT_OK;
}

static vt_status seg_evaluate(vt_task_ctx *c, vt_split split, int batch, struct vt_loader **keep)
{
    seg_state *t = c->state;
    int sz = c->imgsz, K = c->model->num_classes;
    TRY(vt_task_confusion(c, K));
    const int64_t *confusion = *c->confusion;
    size_t need = (size_t)K * batch * sz * sz;
    if (need > t->logits_cap) {
        free(t->logits);
        t->logits = vt_malloc(need * sizeof(float));
        t->logits_cap = t->logits ? need : 0;
        if (!t->logits) return VT_ERR_OUT_OF_MEMORY;
    }
    seg_val v = {0, 0};
    TRY(c->eval_batches(c, split, batch, keep, seg_batch, &v));
    double sums[2] = {v.loss, v.labelled};
    TRY(vt_task_shard_sum(c, sums, 2));
    v.loss = sums[0], v.labelled = sums[1];
    TRY(vt_task_shard_sum_i64(c, *c->confusion, (size_t)K * K));
    double iou_sum = 0, diag = 0, all = 0;
    int classes = 0;
    for (int c = 0; c < K; c++) {
        int64_t tp = confusion[(size_t)c * K + c], row = 0, col = 0;
        for (int k = 0; k < K; k++) {
            row += confusion[(size_t)c * K + k];
            col += confusion[(size_t)k * K + c];
        }
        int64_t den = row + col - tp;
        if (den > 0) {
            iou_sum += (double)tp / (double)den;
            classes++;
        }
        diag += (double)tp;
        all += (double)row;
    }
    vt_progress_set(c->prog, VT_METRIC_VAL_LOSS, v.labelled > 0 ? v.loss / v.labelled : 0);
    vt_progress_set(c->prog, VT_METRIC_MIOU, classes ? iou_sum / classes : 0);
    vt_progress_set(c->prog, VT_METRIC_PIXEL_ACC, all > 0 ? diag / all : 0);
    return VT_OK;
}

static const vt_metric seg_metrics[] = {VT_METRIC_MIOU, VT_METRIC_PIXEL_ACC};
static const char *const seg_cols[] = {"metrics/mIoU", "metrics/pixel_acc"};
static const unsigned char seg_plot[] = {1, 1};

/* The segmenters (lib/nn/models.c): revision 2 had SiLU activations (1: ReLU, the same
 * parameters), 3 the feature-pyramid decoder without a full-resolution convolution. */
static const vt_onnx_spec seg_onnx = {
    .task = "segment",
    .letterbox = 1,
    .out_name = "logits",
    .outputs = "logits: float32 [N, num_classes, imgsz, imgsz], per-pixel class scores "
               "(argmax over axis 1 = the class)",
};
#define SEG(nm, cf, bb) \
    {.name = nm, .task = VT_TASK_SEGMENT, .revision = 3, .backbone = bb, \
     .default_imgsz = 512, .min_classes = 2, .multiple = 32, .build = vt_build_seg, \
     .cfg = cf, .onnx = &seg_onnx}
static const vt_arch_spec seg_n = SEG("seg-n", &vt_net_n, "encoder-n");
static const vt_arch_spec seg_s = SEG("seg-s", &vt_net_s, "encoder-s");
static const vt_arch_spec seg_m = SEG("seg-m", &vt_net_m, "encoder-m");
static const vt_arch_spec seg_r18 = {
    .name = "seg-r18", .task = VT_TASK_SEGMENT, .revision = 1, .backbone = "resnet18",
    .default_imgsz = 512, .min_classes = 2, .multiple = 32, .build = vt_build_seg_r18,
    .onnx = &seg_onnx};
static const vt_arch_spec *const seg_archs[] = {&seg_n, &seg_s, &seg_m, &seg_r18, NULL};

const vt_task_iface vt_task_segment = {
    .id = VT_TASK_SEGMENT,
    .name = "segment",
    .title = "segmentation",
    .model_prefix = "seg-",
    .default_model = "seg-n",
    .archs = seg_archs,
    .ignored_options = "erasing crop_scale", /* classification's augmentations */
    .n_metrics = 2,
    .metrics = seg_metrics,
    .metric_cols = seg_cols,
    .metric_plot = seg_plot,
    .fitness = VT_METRIC_MIOU,
    .sample = VT_SAMPLE_MASK,
    .state_size = sizeof(seg_state),
    .batch_loss = seg_batch_loss,
    .evaluate = seg_evaluate,
    .release = seg_release,
    .confusion_unit = "pixels",
    .val_tile = vt_task_segment_tile,
    .val_pred_title = "Validation images: predicted masks",
    .mask_background = 1,
};
