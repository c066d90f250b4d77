/* Detection: ground truth staging, the loss through the backend's det_loss op, and validation
 * (decoding, NMS, COCO-style mAP), behind the task interface (task.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/det_loss_math.h"
#include "data/loader.h"
#include "task/detect_eval.h"
#include "task/detect_task.h"
#include "task/task.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

/* Validation decoding, as Ultralytics validates: a low threshold so the whole precision-recall
 * curve is seen, NMS at IoU 0.7, at most 300 detections an image. */
#define VAL_CONF 0.001f
#define VAL_IOU 0.7f
#define VAL_MAX_DET 300

void vt_det_task_release(vt_task_ctx *c, vt_det_task *t)
{
    if (c->be) {
        c->be->ops->free(c->be, t->gt_dev);
        c->be->ops->free(c->be, t->assign_dev);
        c->be->ops->free(c->be, t->score_dev);
        c->be->ops->free(c->be, t->det_loss_dev);
    }
    t->gt_dev = NULL;
    t->assign_dev = NULL;
    t->score_dev = NULL;
    t->det_loss_dev = NULL;
    free(t->gt_host);
    t->gt_host = NULL;
    t->gt_cap = 0;
    t->assign_cap = 0;
    free(t->head_host);
    free(t->decode_scratch);
    t->head_host = t->decode_scratch = NULL;
    t->head_cap = t->decode_cap = 0;
    if (t->det_eval) {
        vt_det_eval_free(t->det_eval);
        free(t->det_eval);
        t->det_eval = NULL;
    }
}

/* Grow the backend buffers for n images of `max_gt` records and the head's grid. */
static vt_status det_buffers(vt_task_ctx *c, vt_det_task *t, int n, int max_gt, int cells)
{
    vt_backend *be = c->be;
    int rec = n * (max_gt > 0 ? max_gt : 1);
    if (rec > t->gt_cap) {
        be->ops->free(be, t->gt_dev);
        free(t->gt_host);
        t->gt_dev = be->ops->alloc(be, (size_t)rec * VT_DET_GT_FIELDS * sizeof(float));
        t->gt_host = vt_malloc((size_t)rec * VT_DET_GT_FIELDS * sizeof(float));
        t->gt_cap = t->gt_dev && t->gt_host ? rec : 0;
        if (!t->gt_cap) return VT_ERR_OUT_OF_MEMORY;
    }
    if (cells > t->assign_cap) {
        be->ops->free(be, t->assign_dev);
        be->ops->free(be, t->score_dev);
        t->assign_dev = be->ops->alloc(be, (size_t)cells * sizeof(int32_t));
        t->score_dev = be->ops->alloc(be, (size_t)cells * sizeof(float));
        t->assign_cap = t->assign_dev && t->score_dev ? cells : 0;
        if (!t->assign_cap) return VT_ERR_OUT_OF_MEMORY;
    }
    if (!t->det_loss_dev && !(t->det_loss_dev = be->ops->alloc(be, 4 * sizeof(float))))
        return VT_ERR_OUT_OF_MEMORY;
    return VT_OK;
}

vt_status vt_det_task_loss(vt_task_ctx *c, vt_det_task *t, struct vt_loader *L, int n,
                           int with_grad, float *loss)
{
    vt_backend *be = c->be;
    vt_exec *e = c->exec;
    vt_model *m = c->model;
    vt_node *out = &e->g->nodes[m->output_node];
    int max_gt = 0;
    for (int k = 0; k < n; k++) {
        const vt_det *b;
        int nb;
        vt_loader_boxes(L, k, &b, &nb, NULL);
        if (nb > max_gt) max_gt = nb;
    }
    TRY(det_buffers(c, t, n, max_gt, n * out->out.h * out->out.w));
    if (max_gt == 0) max_gt = 1; /* one padding record: the op needs a valid pointer */
    t->max_gt = max_gt;
    for (int k = 0; k < n; k++) {
        const vt_det *b;
        int nb;
        vt_loader_boxes(L, k, &b, &nb, NULL);
        float *g = t->gt_host + (size_t)k * max_gt * VT_DET_GT_FIELDS;
        for (int j = 0; j < max_gt; j++, g += VT_DET_GT_FIELDS) {
            if (j < nb) {
                g[0] = (float)b[j].cls;
                g[1] = b[j].x0;
                g[2] = b[j].y0;
                g[3] = b[j].x1;
                g[4] = b[j].y1;
            } else {
                g[0] = -1.0f;
                g[1] = g[2] = g[3] = g[4] = 0.0f;
            }
        }
    }
    TRY(be->ops->upload(be, t->gt_dev, t->gt_host,
                        (size_t)n * max_gt * VT_DET_GT_FIELDS * sizeof(float)));
    vt_det_loss_desc d = {.n = n, .nc = m->num_classes, .max_gt = max_gt, .topk = DET_TOPK,
                          .alpha = DET_ALPHA, .beta = DET_BETA, .box_gain = DET_BOX_GAIN,
                          .cls_gain = DET_CLS_GAIN, .grad_scale = 1.0f};
    d.n_levels = vt_det_head_levels(e->g, m->output_node, e->h, d.level);
    TRY(be->ops->det_loss(be, &d, out->y, t->gt_dev, t->assign_dev, t->score_dev,
                          t->det_loss_dev, with_grad ? out->dy : NULL));
    float l[4];
    TRY(be->ops->download(be, l, t->det_loss_dev, sizeof l));
    *loss = l[0] + l[1];
    c->loss_weight = l[3]; /* both terms are over max(1, the target-score sum) */
    return VT_OK;
}

static void det_release(vt_task_ctx *c) { vt_det_task_release(c, c->state); }

/* The ground truth of the loader's last fill. */
static vt_status det_batch_loss(vt_task_ctx *c, struct vt_loader *L, int n, int with_grad,
                                float *loss)
{
    return vt_det_task_loss(c, c->state, L, n, with_grad, loss);
}

/* One validation batch: loss, then each image's detections (back in original pixels) against
 * its ground truth from the dataset. */
typedef struct det_val {
    const vt_split_list *sl;
    double loss;
    long batches;
    vt_det_list dets, gts;
} det_val;

static vt_status det_batch(vt_task_ctx *c, struct vt_loader *L, int ok, void *arg)
{
    det_val *v = arg;
    vt_model *m = c->model;
    vt_backend *be = c->be;
    vt_det_task *t = c->state;
    vt_node *out = &c->exec->g->nodes[m->output_node];
    int nc = m->num_classes;
    size_t hw = (size_t)out->out.h * out->out.w;
    vt_det_level lv[VT_DET_MAX_LEVELS];
    int nl = vt_det_head_levels(c->exec->g, m->output_node, c->imgsz, lv);
    float bl;
    TRY(det_batch_loss(c, L, ok, 0, &bl));
    TRY(be->ops->download(be, t->head_host, out->y, (size_t)(4 + nc) * ok * hw * sizeof(float)));
    v->loss += bl;
    v->batches++;
    vt_status st = VT_OK;
    for (int k = 0; k < ok && !st; k++) {
        vt_letterbox lb;
        const vt_det *unused;
        int nu;
        vt_loader_boxes(L, k, &unused, &nu, &lb);
        st = vt_det_head_decode(t->head_host, ok, k, nc, lv, nl, VAL_CONF, VAL_IOU, VAL_MAX_DET,
                                t->decode_scratch, &v->dets);
        for (int j = 0; j < v->dets.n; j++) {
            vt_det *d = &v->dets.v[j];
            float bx[4] = {d->x0, d->y0, d->x1, d->y1};
            vt_letterbox_inverse(&lb, bx);
            d->x0 = bx[0], d->y0 = bx[1], d->x1 = bx[2], d->y1 = bx[3];
        }
        /* Ground truth straight from the dataset, in original pixels. */
        int di = c->host_labels[k];
        v->gts.n = 0;
        for (int j = v->sl->box_start[di]; !st && j < v->sl->box_start[di + 1]; j++) {
            const vt_det_box *g = &v->sl->boxes[j];
            vt_det d = {(g->cx - 0.5f * g->w) * lb.src_w, (g->cy - 0.5f * g->h) * lb.src_h,
                        (g->cx + 0.5f * g->w) * lb.src_w, (g->cy + 0.5f * g->h) * lb.src_h,
                        1.0f, g->cls};
            st = vt_det_list_push(&v->gts, &d);
        }
        t->det_eval->image = (uint32_t)di; /* its split index: shards merge in image order */
        if (!st) st = vt_det_eval_add(t->det_eval, v->dets.v, v->dets.n, v->gts.v, v->gts.n);
    }
    return st;
}

static vt_status det_evaluate(vt_task_ctx *c, vt_split split, int batch,
                              struct vt_loader **keep)
{
    vt_model *m = c->model;
    vt_det_task *t = c->state;
    int nc = m->num_classes;
    vt_status st = VT_OK;
    if (!t->det_eval) {
        t->det_eval = vt_calloc(1, sizeof *t->det_eval);
        if (!t->det_eval || (st = vt_det_eval_init(t->det_eval, nc))) {
            free(t->det_eval);
            t->det_eval = NULL;
            return st ? st : VT_ERR_OUT_OF_MEMORY;
        }
    }
    vt_det_eval_reset(t->det_eval);
    t->det_eval_valid = 0;
    const vt_node *out = &c->exec->g->nodes[m->output_node];
    size_t hw = (size_t)out->out.h * out->out.w;
    size_t head = (size_t)(4 + nc) * batch * hw, scratch = (size_t)(4 + nc) * hw;
    if (head > t->head_cap) {
        free(t->head_host);
        t->head_host = vt_malloc(head * sizeof(float));
        t->head_cap = t->head_host ? head : 0;
    }
    if (scratch > t->decode_cap) {
        free(t->decode_scratch);
        t->decode_scratch = vt_malloc(scratch * sizeof(float));
        t->decode_cap = t->decode_scratch ? scratch : 0;
    }
    if (!t->head_host || !t->decode_scratch) return VT_ERR_OUT_OF_MEMORY;
    det_val v = {&c->ds->split[split], 0, 0, {0}, {0}};
    st = c->eval_batches(c, split, batch, keep, det_batch, &v);
    vt_det_list_free(&v.dets);
    vt_det_list_free(&v.gts);
    if (st) return st;
    double sums[2] = {v.loss, (double)v.batches};
    TRY(vt_task_shard_sum(c, sums, 2));
    v.loss = sums[0], v.batches = (long)sums[1];
    TRY(vt_task_shard_det_eval(c, t->det_eval));
    vt_det_metrics mt;
    TRY(vt_det_eval_compute(t->det_eval, -1.0, &mt));
    /* The confusion matrix for confusion_matrix.png: rows true class, the last one background
     * (missed objects / false detections), transposed from the evaluator's [pred][true]. */
    int K = nc + 1;
    if (vt_task_confusion(c, K) != VT_OK) vt_err_clear(); /* without memory, no matrix */
    int64_t *cm = *c->confusion;
    if (cm)
        for (int pr = 0; pr < K; pr++)
            for (int tr = 0; tr < K; tr++)
                cm[(size_t)tr * K + pr] = mt.confusion[(size_t)pr * K + tr];
    vt_progress *p = c->prog;
    vt_progress_set(p, VT_METRIC_VAL_LOSS, v.loss / (double)(v.batches ? v.batches : 1));
    vt_progress_set(p, VT_METRIC_PRECISION, mt.precision);
    vt_progress_set(p, VT_METRIC_RECALL, mt.recall);
    vt_progress_set(p, VT_METRIC_MAP50, mt.map50);
    vt_progress_set(p, VT_METRIC_MAP50_95, mt.map50_95);
    vt_progress_set(p, VT_METRIC_F1, mt.f1);
    t->det_eval_valid = 1;
    return VT_OK;
}

vt_status vt_det_eval_class_ap(const vt_det_eval *ev, int valid, const char *task, int cls,
                               double *ap50, double *ap50_95, int64_t *num_gt)
{
    if (!ev || !valid)
        return vt_fail(VT_ERR_NOT_FOUND, "no %s validation has run on this trainer", task);
    if (cls < 0 || cls >= ev->nc)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "class %d is outside 0..%d", cls, ev->nc - 1);
    if (ap50) *ap50 = ev->ap50[cls];
    if (ap50_95) *ap50_95 = ev->ap50_95[cls];
    if (num_gt) *num_gt = ev->num_gt[cls];
    return VT_OK;
}

static vt_status det_class_ap(const vt_task_ctx *c, int cls, double *ap50, double *ap50_95,
                              int64_t *num_gt)
{
    const vt_det_task *t = c->state;
    return vt_det_eval_class_ap(t->det_eval, t->det_eval_valid, "detection", cls, ap50, ap50_95,
                                num_gt);
}

vt_det_eval *vt_detect_last_eval(const vt_task_ctx *c)
{
    if (!c || !c->state || !c->model || c->model->task != VT_TASK_DETECT) return NULL;
    const vt_det_task *t = c->state;
    return t->det_eval && t->det_eval_valid ? t->det_eval : NULL;
}

static const vt_metric det_metrics[] = {VT_METRIC_PRECISION, VT_METRIC_RECALL, VT_METRIC_MAP50,
                                        VT_METRIC_MAP50_95};
static const char *const det_cols[] = {"metrics/precision", "metrics/recall", "metrics/mAP50",
                                       "metrics/mAP50-95"};
static const unsigned char det_plot[] = {1, 1, 1, 1};

/* The detectors (lib/nn/models.c): revision 2 had SiLU activations (1: ReLU, the same
 * parameters); det-n's revision 3 its neck and head 96 wide (64 before); then (det-n 4, det-s
 * and det-m 3, det-r18 2) the head's box fields became the edges' log distances (a centre
 * offset and log size before: the same parameters, other boxes). */
static const vt_onnx_spec det_onnx = {
    .task = "detect",
    .letterbox = 1,
    .out_name = "head",
    .det_head = 1,
    .outputs = VT_DET_HEAD_CONTRACT,
    .nms_outputs = VT_DET_NMS_CONTRACT,
};
#define DET(nm, rev, cf, bb, fn) \
    {.name = nm, .task = VT_TASK_DETECT, .revision = rev, .backbone = bb, \
     .default_imgsz = 640, .min_classes = 1 /* one-class detection is common */, \
     .multiple = 32, .build = fn, .cfg = cf, .init = vt_init_det_head, .onnx = &det_onnx}
static const vt_arch_spec det_n = DET("det-n", 4, &vt_net_n, "encoder-n", vt_build_det);
static const vt_arch_spec det_s = DET("det-s", 3, &vt_net_s, "encoder-s", vt_build_det);
static const vt_arch_spec det_m = DET("det-m", 3, &vt_net_m, "encoder-m", vt_build_det);
static const vt_arch_spec det_r18 = DET("det-r18", 2, NULL, "resnet18", vt_build_det_r18);
static const vt_arch_spec *const det_archs[] = {&det_n, &det_s, &det_m, &det_r18, NULL};

const vt_task_iface vt_task_detect = {
    .id = VT_TASK_DETECT,
    .name = "detect",
    .title = "detection",
    .model_prefix = "det-",
    .default_model = "det-n",
    .archs = det_archs,
    .ignored_options = VT_DET_IGNORED_OPTIONS,
    .n_metrics = 4,
    .metrics = det_metrics,
    .metric_cols = det_cols,
    .metric_plot = det_plot,
    .fitness = VT_METRIC_MAP50_95,
    .sample = VT_SAMPLE_BOXES,
    .state_size = sizeof(vt_det_task),
    .batch_loss = det_batch_loss,
    .evaluate = det_evaluate,
    .release = det_release,
    .class_ap = det_class_ap,
    .confusion_unit = "objects",
    .train_defaults = VT_DET_TRAIN_DEFAULTS,
    .plots = vt_task_detect_plots,
    .val_tile = vt_task_detect_tile,
    .val_pred_title = VT_DET_TILE_TITLE,
};
