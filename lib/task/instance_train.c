/* Instance segmentation: a detector (the detection task's loss, detect_task.h) with a mask head
 * of k prototype masks per image and k coefficients per anchor (lib/nn/models.c, iseg-*),
 * trained with the backend's mask_loss (backend/mask_loss_math.h) on the loader's instance maps,
 * validated with box and mask mAP (detect_eval.h), behind the task interface (task.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/det_loss_math.h"
#include "backend/mask_loss_math.h"
#include "data/loader.h"
#include "data/seg_mask.h"
#include "task/detect_eval.h"
#include "task/detect_task.h"
#include "task/instance.h"
#include "task/task.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

/* The mask term's weight next to the detection loss's box (3) and class (1) terms. */
#define MASK_GAIN 3.0f
/* Validation as the detector's: a low threshold, class-aware NMS at IoU 0.7, at most 300. */
#define VAL_CONF 0.001f
#define VAL_IOU 0.7f
#define VAL_MAX_DET 300

typedef struct inst_state {
    vt_det_task det;
    uint16_t *inst_host, *inst_dev; /* the batch's instance maps */
    size_t inst_cap;                /* elements */
    float *mask_loss_dev;           /* 2 floats */
    float *coef_host, *proto_host;
    size_t coef_cap, proto_cap;
    vt_det_eval *box_eval, *mask_eval;
} inst_state;

static void inst_release(vt_task_ctx *c)
{
    inst_state *t = c->state;
    vt_det_task_release(c, &t->det);
    if (c->be) {
        c->be->ops->free(c->be, t->inst_dev);
        c->be->ops->free(c->be, t->mask_loss_dev);
    }
    t->inst_dev = NULL;
    t->mask_loss_dev = NULL;
    free(t->inst_host);
    free(t->coef_host);
    free(t->proto_host);
    t->inst_host = NULL;
    t->coef_host = t->proto_host = NULL;
    t->inst_cap = t->coef_cap = t->proto_cap = 0;
    vt_det_eval *ev[2] = {t->box_eval, t->mask_eval};
    for (int i = 0; i < 2; i++)
        if (ev[i]) {
            vt_det_eval_free(ev[i]);
            free(ev[i]);
        }
    t->box_eval = t->mask_eval = NULL;
}

/* Detection loss on output 0, then the mask loss on outputs 1 (coefficients) and 2
 * (prototypes) against the loader's instance maps. */
static vt_status inst_batch_loss(vt_task_ctx *c, struct vt_loader *L, int n, int with_grad,
                                 float *loss)
{
    inst_state *t = c->state;
    vt_backend *be = c->be;
    vt_model *m = c->model;
    vt_node *coef = &c->exec->g->nodes[m->outputs[1]], *proto = &c->exec->g->nodes[m->outputs[2]];
    float ldet;
    TRY(vt_det_task_loss(c, &t->det, L, n, with_grad, &ldet));
    /* the box terms are over S (loss_weight, set by the detection loss), the mask term over the
     * positive anchors: a second part (task.h), so that ranks weight each by its own */
    int mh = proto->out.h, mw = proto->out.w;
    size_t HW = (size_t)mh * mw;
    /* host-memory backends (the CPU) take the maps straight into their buffer */
    int direct = be->ops->host_memory;
    if ((size_t)n * HW > t->inst_cap) {
        be->ops->free(be, t->inst_dev);
        free(t->inst_host);
        t->inst_host = NULL;
        t->inst_dev = be->ops->alloc(be, (size_t)n * HW * sizeof(uint16_t));
        if (!direct) t->inst_host = vt_malloc((size_t)n * HW * sizeof(uint16_t));
        t->inst_cap = t->inst_dev && (direct || t->inst_host) ? (size_t)n * HW : 0;
        if (!t->inst_cap) return VT_ERR_OUT_OF_MEMORY;
    }
    uint16_t *stage = direct ? t->inst_dev : t->inst_host;
    if (!t->mask_loss_dev && !(t->mask_loss_dev = be->ops->alloc(be, 2 * sizeof(float))))
        return VT_ERR_OUT_OF_MEMORY;
    for (int k = 0; k < n; k++) {
        int w = 0, h = 0;
        const uint16_t *map = vt_loader_instances(L, k, &w, &h);
        if (!map || w != mw || h != mh)
            return vt_fail(VT_ERR_INTERNAL, "instance map %d of %dx%d for prototypes of %dx%d", k,
                           w, h, mw, mh);
        memcpy(stage + (size_t)k * HW, map, HW * sizeof(uint16_t));
    }
    if (!direct)
        TRY(be->ops->upload(be, t->inst_dev, t->inst_host, (size_t)n * HW * sizeof(uint16_t)));
    vt_mask_loss_desc d = {.n = n, .k = coef->out.c, .anchors = coef->out.h * coef->out.w,
                           .mh = mh, .mw = mw, .mstride = (float)c->exec->w / (float)mw,
                           .max_gt = t->det.max_gt, .gain = MASK_GAIN};
    TRY(be->ops->mask_loss(be, &d, coef->y, proto->y, t->det.assign_dev, t->det.gt_dev,
                           t->inst_dev, t->mask_loss_dev, with_grad ? coef->dy : NULL,
                           with_grad ? proto->dy : NULL));
    float l[2];
    TRY(be->ops->download(be, l, t->mask_loss_dev, sizeof l));
    *loss = ldet + l[0];
    c->loss2_weight = l[1];
    c->loss2 = l[0];
    return VT_OK;
}

/* ---- decoding (instance.h) ---- */

vt_status vt_iseg_grow(void **p, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap) return VT_OK;
    void *q = realloc(*p, want * elem);
    if (!q) return VT_ERR_OUT_OF_MEMORY;
    *p = q;
    *cap = want;
    return VT_OK;
}

void vt_iseg_decoder_free(vt_iseg_decoder *d)
{
    free(d->cand);
    free(d->dets);
    free(d->masks);
    memset(d, 0, sizeof *d);
}

static int cand_cmp(const void *pa, const void *pb)
{
    const vt_iseg_cand *a = pa, *b = pb;
    if (a->d.score != b->d.score) return a->d.score > b->d.score ? -1 : 1;
    return a->a < b->a ? -1 : a->a > b->a;
}

vt_status vt_iseg_decode(const vt_iseg_heads *h, int k, float conf, float iou, int max_det,
                         vt_iseg_decoder *o, int *count)
{
    *count = 0;
    vt_det_loss_desc dd = {.n = h->n, .nc = h->nc, .n_levels = h->n_levels};
    memcpy(dd.level, h->level, sizeof dd.level);
    long A = vt_det_anchors(&dd), fs = (long)h->n * A;
    TRY(vt_iseg_grow((void **)&o->cand, &o->cap_cand, (size_t)A + 1, sizeof(vt_iseg_cand)));
    int nk = 0, nc = h->nc;
    const float *base = h->head + (size_t)k * A;
    for (long a = 0; a < A; a++) {
        const float *p = base + a;
        int best = 0;
        for (int cl = 1; cl < nc; cl++)
            if (p[(4 + cl) * fs] > p[(4 + best) * fs]) best = cl;
        float s = 1.0f / (1.0f + expf(-p[(4 + best) * fs]));
        if (!(s >= conf)) continue;
        float box[4], cx, cy, st;
        vt_det_anchor(&dd, a, &cx, &cy, &st);
        vt_det_decode_box(p, fs, cx, cy, st, box, NULL);
        o->cand[nk++] = (vt_iseg_cand){{box[0], box[1], box[2], box[3], s, best}, a};
    }
    /* class-aware NMS, best score first (equal scores: the lower anchor) */
    qsort(o->cand, (size_t)nk, sizeof *o->cand, cand_cmp);
    if (max_det <= 0) max_det = 300;
    int kept = 0;
    for (int i = 0; i < nk && kept < max_det; i++) {
        int keep = 1;
        for (int j = 0; j < kept && keep; j++)
            keep = !(o->cand[j].d.cls == o->cand[i].d.cls &&
                     vt_det_iou(&o->cand[j].d, &o->cand[i].d) > iou);
        if (keep) o->cand[kept++] = o->cand[i];
    }
    size_t HW = (size_t)h->mh * h->mw;
    TRY(vt_iseg_grow((void **)&o->dets, &o->cap_dets, (size_t)kept + 1, sizeof(vt_det)));
    TRY(vt_iseg_grow((void **)&o->masks, &o->cap_masks, ((size_t)kept + 1) * HW, 1));
    memset(o->masks, 0, (size_t)kept * HW);
    for (int i = 0; i < kept; i++) {
        const vt_iseg_cand *cd = &o->cand[i];
        o->dets[i] = cd->d;
        int r0, r1, c0, c1;
        float bx[4] = {cd->d.x0, cd->d.y0, cd->d.x1, cd->d.y1};
        if (!vt_mask_box(bx, h->mstride, h->mh, h->mw, &r0, &r1, &c0, &c1)) continue;
        uint8_t *pm = o->masks + (size_t)i * HW;
        for (int r = r0; r < r1; r++)
            for (int x = c0; x < c1; x++) {
                size_t p = (size_t)r * h->mw + x;
                float z = 0;
                for (int q = 0; q < h->k; q++)
                    z += h->coef[((size_t)q * h->n + k) * A + cd->a] *
                         h->proto[((size_t)q * h->n + k) * HW + p];
                pm[p] = z > 0.0f; /* sigmoid > 0.5 */
            }
    }
    *count = kept;
    return VT_OK;
}

/* ---- validation ---- */

typedef struct inst_val {
    double loss;
    long batches;
    vt_iseg_decoder dec;
    vt_det *gts;
    uint8_t *gmask;
    size_t cap_gt;
} inst_val;

#define grow vt_iseg_grow

static vt_status inst_batch(vt_task_ctx *c, struct vt_loader *L, int n, void *arg)
{
    inst_val *v = arg;
    inst_state *t = c->state;
    vt_backend *be = c->be;
    vt_model *m = c->model;
    const vt_graph *g = c->exec->g;
    const vt_node *out = &g->nodes[m->output_node], *coef = &g->nodes[m->outputs[1]],
                  *proto = &g->nodes[m->outputs[2]];
    float bl;
    TRY(inst_batch_loss(c, L, n, 0, &bl));
    v->loss += bl;
    v->batches++;
    size_t head = (size_t)out->out.c * n * out->out.h * out->out.w,
           nco = (size_t)coef->out.c * n * coef->out.h * coef->out.w,
           npr = (size_t)proto->out.c * n * proto->out.h * proto->out.w;
    TRY(grow((void **)&t->det.head_host, &t->det.head_cap, head, sizeof(float)));
    TRY(grow((void **)&t->coef_host, &t->coef_cap, nco, sizeof(float)));
    TRY(grow((void **)&t->proto_host, &t->proto_cap, npr, sizeof(float)));
    TRY(be->ops->download(be, t->det.head_host, out->y, head * sizeof(float)));
    TRY(be->ops->download(be, t->coef_host, coef->y, nco * sizeof(float)));
    TRY(be->ops->download(be, t->proto_host, proto->y, npr * sizeof(float)));
    int mh = proto->out.h, mw = proto->out.w;
    size_t HW = (size_t)mh * mw;
    vt_iseg_heads hd = {t->det.head_host, t->coef_host, t->proto_host, n, m->num_classes,
                        coef->out.c, mh, mw, (float)c->exec->w / (float)mw, 0, {{0}}};
    hd.n_levels = vt_det_head_levels(g, m->output_node, c->exec->w, hd.level);
    for (int k = 0; k < n; k++) {
        int nd;
        TRY(vt_iseg_decode(&hd, k, VAL_CONF, VAL_IOU, VAL_MAX_DET, &v->dec, &nd));
        /* the ground truth as the loader gave it: boxes in input pixels, masks from its map */
        const vt_det *b;
        int nb, w = 0, h = 0;
        vt_loader_boxes(L, k, &b, &nb, NULL);
        const uint16_t *map = vt_loader_instances(L, k, &w, &h);
        if (!map || w != mw || h != mh) return vt_fail(VT_ERR_INTERNAL, "instance map %d", k);
        TRY(grow((void **)&v->gts, &v->cap_gt, (size_t)nb + 1, sizeof(vt_det)));
        uint8_t *gm = realloc(v->gmask, ((size_t)nb + 1) * HW);
        if (!gm) return VT_ERR_OUT_OF_MEMORY;
        v->gmask = gm;
        for (int j = 0; j < nb; j++) {
            v->gts[j] = b[j];
            for (size_t p = 0; p < HW; p++) gm[(size_t)j * HW + p] = map[p] == (uint16_t)(j + 1);
        }
        /* its split index: shards merge in image order */
        t->box_eval->image = t->mask_eval->image = (uint32_t)c->host_labels[k];
        TRY(vt_det_eval_add(t->box_eval, v->dec.dets, nd, v->gts, nb));
        TRY(vt_det_eval_add_masks(t->mask_eval, v->dec.dets, nd, v->dec.masks, v->gts, nb, gm,
                                  mw, mh));
    }
    return VT_OK;
}

static vt_status new_eval(vt_det_eval **ev, int nc)
{
    if (*ev) {
        vt_det_eval_reset(*ev);
        return VT_OK;
    }
    vt_status st = VT_ERR_OUT_OF_MEMORY;
    if (!(*ev = vt_calloc(1, sizeof **ev)) || (st = vt_det_eval_init(*ev, nc))) {
        free(*ev);
        *ev = NULL;
        return st;
    }
    return VT_OK;
}

static vt_status inst_evaluate(vt_task_ctx *c, vt_split split, int batch,
                               struct vt_loader **keep)
{
    inst_state *t = c->state;
    int nc = c->model->num_classes;
    TRY(new_eval(&t->box_eval, nc));
    TRY(new_eval(&t->mask_eval, nc));
    t->det.det_eval_valid = 0;
    inst_val v = {0};
    vt_status st = c->eval_batches(c, split, batch, keep, inst_batch, &v);
    vt_iseg_decoder_free(&v.dec);
    free(v.gts);
    free(v.gmask);
    if (st) return st;
    double sums[2] = {v.loss, (double)v.batches};
    TRY(vt_task_shard_sum(c, sums, 2));
    v.loss = sums[0], v.batches = (long)sums[1];
    TRY(vt_task_shard_det_eval(c, t->box_eval));
    TRY(vt_task_shard_det_eval(c, t->mask_eval));
    vt_det_metrics bm, mm;
    TRY(vt_det_eval_compute(t->box_eval, -1.0, &bm));
    TRY(vt_det_eval_compute(t->mask_eval, -1.0, &mm));
    /* the confusion matrix of the masks, rows the true class (transposed as detection's) */
    int K = nc + 1;
    if (vt_task_confusion(c, K) != VT_OK) vt_err_clear();
    int64_t *cm = *c->confusion;
    if (cm)
        for (int pr = 0; pr < K; pr++)
            for (int tr = 0; tr < K; tr++) cm[(size_t)tr * K + pr] = mm.confusion[(size_t)pr * K + tr];
    vt_progress *p = c->prog;
    vt_progress_set(p, VT_METRIC_VAL_LOSS, v.loss / (double)(v.batches ? v.batches : 1));
    vt_progress_set(p, VT_METRIC_PRECISION, bm.precision);
    vt_progress_set(p, VT_METRIC_RECALL, bm.recall);
    vt_progress_set(p, VT_METRIC_MAP50, bm.map50);
    vt_progress_set(p, VT_METRIC_MAP50_95, bm.map50_95);
    vt_progress_set(p, VT_METRIC_F1, bm.f1);
    vt_progress_set(p, VT_METRIC_MASK_PRECISION, mm.precision);
    vt_progress_set(p, VT_METRIC_MASK_RECALL, mm.recall);
    vt_progress_set(p, VT_METRIC_MASK_MAP50, mm.map50);
    vt_progress_set(p, VT_METRIC_MASK_MAP50_95, mm.map50_95);
    t->det.det_eval_valid = 1;
    return VT_OK;
}

/* Per-class AP of the masks (the fitness's). */
static vt_status inst_class_ap(const vt_task_ctx *c, int cls, double *ap50, double *ap50_95,
                               int64_t *num_gt)
{
    const inst_state *t = c->state;
    return vt_det_eval_class_ap(t->mask_eval, t->det.det_eval_valid, "instance segmentation",
                                cls, ap50, ap50_95, num_gt);
}

/* ---- the figures ---- */

/* BoxPR_curve.png, BoxF1_curve.png, MaskPR_curve.png and MaskF1_curve.png of the last
 * validation: the detector's curves of each evaluator. */
static vt_status inst_plots(const vt_task_ctx *c, const char *run_dir)
{
    const inst_state *t = c->state;
    if (!t->det.det_eval_valid) return VT_OK; /* no validation yet */
    TRY(vt_det_curves(c, t->box_eval, run_dir, "Box", "box IoU"));
    return vt_det_curves(c, t->mask_eval, run_dir, "Mask", "mask IoU");
}

/* The validation mosaics' tile: the detector's (boxes, their classes and scores) with the
 * image's instance masks and the model's painted in their classes' colours. */
static vt_status inst_val_tile(const vt_task_ctx *c, int i, const vt_image *img,
                               vt_task_tile *gt, vt_task_tile *pred)
{
    size_t px = (size_t)img->w * img->h;
    gt->mask = vt_malloc(px);
    pred->mask = vt_malloc(px);
    if (!gt->mask || !pred->mask) return VT_ERR_OUT_OF_MEMORY;
    memset(pred->mask, VT_TILE_NONE, px);
    TRY(vt_seg_instance_classes(c->ds, VT_SPLIT_VAL, i, img->w, img->h, VT_TILE_NONE, gt->mask));
    return vt_det_tile(c, i, img, gt, pred, vt_iseg_tile_predict);
}

/* ---- the task's models and table ---- */

/* The export: the detector's head and NMS (detect_train.c's det_onnx) plus the two mask
 * outputs; with nms=1 the coefficients are gathered per kept detection, so that a caller makes
 * each mask from coefs and protos alone, as vt_iseg_decode does. */
static const char *const iseg_more_outputs[] = {"coefs", "protos", NULL};
static const vt_onnx_spec iseg_onnx = {
    .task = "instance",
    .letterbox = 1,
    .out_name = "head",
    .det_head = 1,
    .more_outputs = iseg_more_outputs,
    .nms_rows = 1, /* coefs */
    .mask_output = 2,
    .outputs = VT_DET_HEAD_CONTRACT ". coefs: float32 [N, k, H, W] (the head's H, W), "
               "k mask coefficients per anchor of the head. protos: float32 "
               "[N, k, imgsz / s, imgsz / s], k prototype masks, s = 'mask_stride'. "
               "A kept anchor's mask: m = coefs[:, anchor] . protos.reshape(k, -1) "
               "reshaped to imgsz / s x imgsz / s, the object where m > 0 "
               "(sigmoid(m) > 0.5) inside its box: mask pixel (r, c) when its centre "
               "((c + 0.5) * s, (r + 0.5) * s) is in [x0, x1) x [y0, y1)",
    .nms_outputs = VT_DET_NMS_CONTRACT ". coefs: "
                   "float32 [K, k], each detection's mask coefficients. protos: "
                   "float32 [1, k, imgsz / s, imgsz / s], s = 'mask_stride'. Masks: "
                   "sigmoid(coefs @ protos.reshape(k, -1)) > 0.5 (the logit > 0), "
                   "reshaped to [K, imgsz / s, imgsz / s], each cropped to its box: "
                   "mask pixel (r, c) when its centre ((c + 0.5) * s, (r + 0.5) * s) "
                   "is in [x0, x1) x [y0, y1)",
};

/* iseg-*: det-* (the same encoder, neck and head; its backbone shared) with the mask head;
 * revision 2: the detectors' box fields as edge distances (see detect_train.c). */
#define ISEG(nm, cf, bb)                                                                           \
    {.name = nm, .task = VT_TASK_INSTANCE, .revision = 2, .backbone = bb,                         \
     .default_imgsz = 640, .min_classes = 1, .multiple = 32, .build = vt_build_iseg, .cfg = cf,  \
     .init = vt_init_det_head, .onnx = &iseg_onnx}
static const vt_arch_spec iseg_n = ISEG("iseg-n", &vt_net_n, "encoder-n");
static const vt_arch_spec iseg_s = ISEG("iseg-s", &vt_net_s, "encoder-s");
static const vt_arch_spec iseg_m = ISEG("iseg-m", &vt_net_m, "encoder-m");
static const vt_arch_spec *const iseg_archs[] = {&iseg_n, &iseg_s, &iseg_m, NULL};

static const vt_metric inst_metrics[] = {
    VT_METRIC_PRECISION,      VT_METRIC_RECALL,      VT_METRIC_MAP50,      VT_METRIC_MAP50_95,
    VT_METRIC_MASK_PRECISION, VT_METRIC_MASK_RECALL, VT_METRIC_MASK_MAP50, VT_METRIC_MASK_MAP50_95};
static const char *const inst_cols[] = {
    "metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)",
    "metrics/precision(M)", "metrics/recall(M)", "metrics/mAP50(M)", "metrics/mAP50-95(M)"};
static const unsigned char inst_plot[] = {0, 0, 1, 1, 0, 0, 1, 1};

const vt_task_iface vt_task_instance = {
    .id = VT_TASK_INSTANCE,
    .name = "instance",
    .title = "instance segmentation",
    .model_prefix = "iseg-",
    .default_model = "iseg-n",
    .archs = iseg_archs,
    .ignored_options = VT_DET_IGNORED_OPTIONS,
    .n_metrics = 8,
    .metrics = inst_metrics,
    .metric_cols = inst_cols,
    .metric_plot = inst_plot,
    .fitness = VT_METRIC_MASK_MAP50_95,
    .sample = VT_SAMPLE_INSTANCES,
    .state_size = sizeof(inst_state),
    .batch_loss = inst_batch_loss,
    .evaluate = inst_evaluate,
    .release = inst_release,
    .class_ap = inst_class_ap,
    .confusion_unit = "objects",
    .train_defaults = VT_DET_TRAIN_DEFAULTS,
    .plots = inst_plots,
    .val_tile = inst_val_tile,
    .val_pred_title = VT_DET_TILE_TITLE,
};
