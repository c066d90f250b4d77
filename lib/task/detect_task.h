/* Private: the detection task's training side, for the tasks built on a detector (instance
 * segmentation adds a mask head to it): its state, and the batch's detection loss. */
#ifndef VT_DETECT_TASK_H
#define VT_DETECT_TASK_H

#include "task/detect_eval.h"
#include "task/task.h"

/* The trainer options the detectors' training does not read: classification's random erasing
 * and crop, label smoothing, segmentation's Dice term. */
#define VT_DET_IGNORED_OPTIONS "erasing crop_scale label_smoothing dice"

/* The detectors' schedule (Ultralytics' defaults too): linear decay after 3 warm-up epochs.
 * Against cosine after 1, det-n's mAP50-95 on the three 128 px benchmark sets rose from 0.746 /
 * 0.728 / 0.725 to 0.762 / 0.752 / 0.742 (bench/README.md, "Objects over a decade"). */
#define VT_DET_TRAIN_DEFAULTS "cos_lr=0 warmup_epochs=3"
/* The ONNX metadata of a detector head's output and of its nms=1 outputs (the instance
 * segmenters' export starts with the same). */
#define VT_DET_HEAD_CONTRACT                                                                      \
    "head: float32 [N, 4 + num_classes, H, W], anchors: the cells of the grids of 'strides' "    \
    "(imgsz / stride squared each), grid after grid, row-major (one grid: H = W = imgsz / "      \
    "stride; several: H = 1, W = their total); per anchor (x, y) of its grid: ll, lt, lr, lb, " \
    "then one logit per class; with (cx, cy) = ((x + 0.5) * stride, (y + 0.5) * stride) and "  \
    "e(l) = stride * exp(clamp(l, -6, 7)): box x0 = cx - e(ll), y0 = cy - e(lt), x1 = cx + "   \
    "e(lr), y1 = cy + e(lb); score sigmoid(logit); then class-aware NMS"
#define VT_DET_NMS_CONTRACT                                                                       \
    "boxes: float32 [K, 4] x0 y0 x1 y1 in input pixels, scores: float32 [K], classes: int64 "    \
    "[K]; best score first"
/* Loss weights and the task-aligned assignment's parameters; see det_loss_math.h. */
#define DET_BOX_GAIN 3.0f
#define DET_CLS_GAIN 1.0f
#define DET_TOPK 13
#define DET_ALPHA 1.0f
#define DET_BETA 6.0f

/* The state: ground truth staging, per-anchor assignment, loss terms (backend memory where
 * _dev), decoding buffers and the evaluator of the last validation. */
typedef struct vt_det_task {
    float *gt_host, *gt_dev;     /* batch x gt_max records of 5 floats */
    int gt_cap;                  /* records allocated (host and device) */
    int max_gt;                  /* records per image of the last loss */
    int32_t *assign_dev;         /* per anchor: the assigned ground truth */
    float *score_dev;            /* per anchor: its target score */
    int assign_cap;
    float *det_loss_dev;         /* 4 floats: box, class, positives, target-score sum */
    float *head_host, *decode_scratch;
    size_t head_cap, decode_cap;
    vt_det_eval *det_eval;
    int det_eval_valid;          /* det_eval holds the results of a completed validation */
} vt_det_task;

/* The detection loss of the batch already run forward (the boxes of L's last fill), on the
 * model's output 0; with_grad: also its gradient into output 0's dy.  Afterwards t->gt_dev
 * holds the ground truth (t->max_gt records an image, the loader's box order) and
 * t->assign_dev every anchor's assigned ground truth. */
vt_status vt_det_task_loss(vt_task_ctx *c, vt_det_task *t, struct vt_loader *L, int n,
                           int with_grad, float *loss);
/* Per-class AP of an evaluator's last compute (the class_ap of the tasks on a detector):
 * VT_ERR_NOT_FOUND naming the task when !valid, VT_ERR_INVALID_ARGUMENT for a bad class. */
vt_status vt_det_eval_class_ap(const vt_det_eval *ev, int valid, const char *task, int cls,
                               double *ap50, double *ap50_95, int64_t *num_gt);
/* Frees t's buffers (it stays usable). */
void vt_det_task_release(vt_task_ctx *c, vt_det_task *t);

/* ---- the figures of the tasks on a detector (detect_plots.c) ---- */

/* <prefix>PR_curve.png and <prefix>F1_curve.png in run_dir: evaluator ev's precision-recall and
 * F1-confidence curves (vt_det_eval_curves), per class and their mean, titled with the prefix
 * ("Mask": "Mask precision-recall curve") and the IoU they match at ("mask IoU"); nothing when
 * ev is NULL (no validation yet) or no class has ground truth. */
vt_status vt_det_curves(const vt_task_ctx *c, vt_det_eval *ev, const char *run_dir,
                        const char *prefix, const char *iou);

/* The validation mosaics' predictions: their title, and their filter (confidence at least 0.25,
 * NMS at IoU 0.7, at most 100). */
#define VT_DET_TILE_TITLE "Validation images: predictions (confidence >= 0.25)"
/* A tile's predictions: up to cap of model m's detections on img (classes, scores, corners in
 * img's pixels) and their count; map: the tile's pred->mask, for a task that paints masks
 * (NULL for a detector). */
typedef vt_status (*vt_det_tile_fn)(vt_model *m, const vt_image *img, float conf, float iou,
                                    int cap, int *classes, float *scores, float *boxes,
                                    int *count, uint8_t *map);
/* The tile of image i: its ground-truth boxes into gt, fn's predictions into pred (its boxes;
 * pred->mask, as the caller set it, is fn's map). */
vt_status vt_det_tile(const vt_task_ctx *c, int i, const vt_image *img, vt_task_tile *gt,
                      vt_task_tile *pred, vt_det_tile_fn fn);

#endif
