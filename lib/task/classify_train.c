/* Classification: softmax cross-entropy with label smoothing, and validation (loss, top-1,
 * top-5, the confusion matrix). */
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "task/task.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

static vt_status cls_batch_loss(vt_task_ctx *c, struct vt_loader *L, int n, int with_grad,
                                float *loss)
{
    (void)L;
    vt_backend *be = c->be;
    vt_exec *e = c->exec;
    vt_node *out = &e->g->nodes[c->model->output_node];
    TRY(be->ops->upload(be, e->labels, c->host_labels, (size_t)n * sizeof(int32_t)));
    TRY(be->ops->softmax_xent(be, c->model->num_classes, n, out->y, e->labels,
                              c->label_smoothing, 1.0f / n, e->loss, with_grad ? out->dy : NULL,
                              NULL));
    float loss_sum;
    TRY(be->ops->download(be, &loss_sum, e->loss, sizeof loss_sum));
    *loss = loss_sum / n;
    return VT_OK;
}

/* Loss, top-1/top-5 and the confusion matrix of one validation batch. */
typedef struct cls_eval {
    double loss;
    long seen, top1, top5;
} cls_eval;

static vt_status cls_batch(vt_task_ctx *c, vt_loader *L, int ok, void *arg)
{
    (void)L;
    cls_eval *v = arg;
    vt_backend *be = c->be;
    vt_exec *e = c->exec;
    int K = c->model->num_classes;
    vt_node *out = &e->g->nodes[c->model->output_node];
    int64_t *confusion = *c->confusion;
    float ls;
    TRY(be->ops->upload(be, e->labels, c->host_labels, (size_t)ok * sizeof(int32_t)));
    TRY(be->ops->softmax_xent(be, K, ok, out->y, e->labels, 0.0f, 0.0f, e->loss, NULL, out->dy));
    TRY(be->ops->download(be, c->host_probs, out->dy, (size_t)K * ok * sizeof(float)));
    TRY(be->ops->download(be, &ls, e->loss, sizeof ls));
    v->loss += ls;
    for (int i = 0; i < ok; i++) {
        int lab = c->host_labels[i], rank = 0, pred = 0;
        float pl = c->host_probs[(size_t)lab * ok + i], pbest = -1;
        for (int k = 0; k < K; k++) {
            float p = c->host_probs[(size_t)k * ok + i];
            if (p > pl || (p == pl && k < lab)) rank++;
            if (p > pbest) {
                pbest = p;
                pred = k;
            }
        }
        if (confusion) confusion[(size_t)lab * K + pred]++;
        v->top1 += rank == 0;
        v->top5 += rank < 5;
    }
    v->seen += ok;
    return VT_OK;
}

static vt_status cls_evaluate(vt_task_ctx *c, vt_split split, int batch, vt_loader **keep)
{
    int K = c->model->num_classes;
    /* beyond 4096 classes a matrix is neither cheap nor readable; without memory, none */
    if (vt_task_confusion(c, K <= 4096 ? K : 0) != VT_OK) vt_err_clear();
    cls_eval v = {0, 0, 0, 0};
    TRY(c->eval_batches(c, split, batch, keep, cls_batch, &v));
    double sums[4] = {v.loss, (double)v.seen, (double)v.top1, (double)v.top5};
    TRY(vt_task_shard_sum(c, sums, 4));
    TRY(vt_task_shard_confusion(c));
    v.loss = sums[0];
    v.seen = (long)sums[1], v.top1 = (long)sums[2], v.top5 = (long)sums[3];
    vt_progress_set(c->prog, VT_METRIC_VAL_LOSS, v.loss / v.seen);
    vt_progress_set(c->prog, VT_METRIC_TOP1, (double)v.top1 / v.seen);
    vt_progress_set(c->prog, VT_METRIC_TOP5, (double)v.top5 / v.seen);
    return VT_OK;
}

static const vt_metric cls_metrics[] = {VT_METRIC_TOP1, VT_METRIC_TOP5};
static const char *const cls_cols[] = {"metrics/top1", "metrics/top5"};
static const unsigned char cls_plot[] = {1, 1};

/* The classifiers (lib/nn/models.c) and what their export writes. */
static const vt_onnx_spec cls_onnx = {
    .task = "classify",
    .softmax = 1,
    .outputs = "probs: float32 [N, num_classes], softmax probabilities",
};
#define CLS(nm, fn, cf) \
    {.name = nm, .task = VT_TASK_CLASSIFY, .revision = 1, .min_classes = 2, .build = fn, \
     .cfg = cf, .probs = 1, .onnx = &cls_onnx}
static const vt_arch_spec cls_n = CLS("cls-n", vt_build_cls, &vt_cls_n);
static const vt_arch_spec cls_s = CLS("cls-s", vt_build_cls, &vt_cls_s);
static const vt_arch_spec cls_m = CLS("cls-m", vt_build_cls, &vt_cls_m);
static const vt_arch_spec cnn_small = CLS("cnn-small", vt_build_cnn_small, NULL);
/* resnet18 shares its backbone with det-r18 and seg-r18 */
static const vt_arch_spec resnet18 = {
    .name = "resnet18", .task = VT_TASK_CLASSIFY, .revision = 1, .backbone = "resnet18",
    .min_classes = 2, .build = vt_build_resnet18, .probs = 1, .onnx = &cls_onnx};
static const vt_arch_spec *const cls_archs[] = {&cls_n, &cls_s, &cls_m, &cnn_small, &resnet18,
                                                NULL};

const vt_task_iface vt_task_classify = {
    .id = VT_TASK_CLASSIFY,
    .name = "classify",
    .title = "classification",
    .model_prefix = "cls-",
    .default_model = "cls-n",
    .archs = cls_archs,
    /* its images are not scenes: no geometry, mosaic or mixup; no pixel loss */
    .ignored_options = "degrees translate scale shear perspective mosaic mixup close_mosaic dice",
    .class_labels = 1,
    .n_metrics = 2,
    .metrics = cls_metrics,
    .metric_cols = cls_cols,
    .metric_plot = cls_plot,
    .fitness = VT_METRIC_TOP1,
    .sample = VT_SAMPLE_LABEL,
    .batch_loss = cls_batch_loss,
    .evaluate = cls_evaluate,
    .confusion_unit = "images",
};
