/* Private: detection post-processing (NMS, head decoding) and evaluation.  The box type is
 * data/boxes.h's, the letterbox geometry image/letterbox.h's. */
#ifndef VT_DETECT_EVAL_H
#define VT_DETECT_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/core.h"
#include "data/boxes.h"
#include "image/letterbox.h"

/* Class-aware non-maximum suppression, in place: drops detections with score < conf, sorts
 * the rest by score (descending), and drops any box whose IoU with a kept box of the same
 * class is > iou.  Boxes of different classes never suppress each other.  Stops after max_det
 * kept (max_det <= 0: no limit).  Returns the number kept, which are d[0..ret).  The order of
 * equal-score boxes is by class, then coordinates, so the result does not depend on the input
 * order. */
int vt_det_nms(vt_det *d, int n, float conf, float iou, int max_det);

/* Decode a dense detection head: n candidates, each with fields cx, cy, w, h (in input pixels)
 * followed by nc class scores (already probabilities).  Field f of candidate i is at
 * pred[i * cand_stride + f * field_stride], so both the Ultralytics (4+nc, n) layout
 * (cand_stride 1, field_stride n) and an (n, 4+nc) layout (4+nc, 1) work.  Each candidate
 * gives its best class (multi_label = 0) or every class with score >= conf (multi_label = 1,
 * as Ultralytics uses for validation).  The result (appended to out after out->n is reset to
 * 0) is NMS-filtered with vt_det_nms. */
vt_status vt_det_decode(const float *pred, int n, int nc, ptrdiff_t cand_stride,
                        ptrdiff_t field_stride, float conf, float iou, int max_det,
                        int multi_label, vt_det_list *out);

/* Decode image i of a detector head's output (lib/backend/det_loss_math.h layout), read from
 * host memory: out is (4+nc) x n x A (CNHW), A the anchors of the n_levels levels lv.  Boxes
 * come out as corners in input pixels, scores are the sigmoid class probabilities, NMS-filtered
 * as vt_det_decode does (best class per anchor).  scratch: (4+nc)*A floats. */
vt_status vt_det_head_decode(const float *out, int n, int i, int nc, const vt_det_level *lv,
                             int n_levels, float conf, float iou, int max_det, float *scratch,
                             vt_det_list *dets);

/* ---- evaluation ----------------------------------------------------------------------------
 * COCO-style: per image, detections are taken by descending score and each matches the
 * unmatched ground truth of its class with the highest IoU >= t (the last one of equal IoUs,
 * as pycocotools), for t = 0.50, 0.55 .. 0.95.
 * Per class, AP(t) is the 101-point interpolated precision (precision made monotone, sampled
 * at recall 0, 0.01 .. 1 (the doubles k * 0.01, as numpy's linspace gives them), 0 where the
 * recall is not reached), as pycocotools computes it.
 * Classes without ground truth are left out of every mean (their AP is -1).
 *
 * Precision, recall and F1 are at IoU 0.5 and one confidence threshold for all classes: the
 * threshold on a 0.000, 0.001 .. 1.000 grid that maximises the mean F1 over classes (the
 * Ultralytics choice, without its curve smoothing; ties take the lowest), or a given one.  At a
 * threshold, P = TP / detections (0 with no detection), R = TP / ground truths; the reported
 * P, R and F1 are means over the classes with ground truth.
 *
 * The confusion matrix ((nc+1) x (nc+1), row = predicted class, column = true class, index nc
 * = background) counts, per image, detections with score >= cm_conf (default 0.25) matched
 * one-to-one to ground truths of any class with IoU >= 0.5, greedily by IoU: a matched pair
 * adds 1 at [pred][true], an unmatched ground truth at [nc][true] (missed), an unmatched
 * detection at [pred][nc] (background).
 *
 * Everything above rests on one IoU matrix per image: vt_det_eval_add fills it with box IoUs,
 * vt_det_eval_add_masks with mask IoUs (COCO's 'segm' evaluation); the matching, the records,
 * the metrics, the curves and the confusion matrix are the same code for both.  An instance
 * task keeps one evaluator of each. */
#define VT_DET_NUM_IOU 10

typedef struct vt_det_record {
    float score;
    int cls;
    /* equal scores keep the order of arrival, like pycocotools' stable sort: the image's key
     * (vt_det_eval's `image` when it was added), then the score order within the image */
    uint32_t image;
    uint32_t k;
    uint16_t tp;   /* bit t set: true positive at IoU threshold t */
} vt_det_record;

typedef struct vt_det_eval {
    int nc;
    float cm_conf, cm_iou;
    vt_det_record *rec;
    size_t nrec, caprec;
    int64_t *num_gt;    /* nc */
    int64_t *confusion; /* (nc+1)^2 */
    /* the key of the next image added (0 after init and reset; each add moves it on by one):
     * an evaluation split over processes sets it to the image's index in the split before
     * adding it, so that the merged records tie-break as one process's do */
    uint32_t image;
    /* scratch, grown as needed; every cap_* is in bytes */
    float *iou;
    size_t cap_iou;
    void *order;
    size_t cap_order;
    uint16_t *gt_used;
    unsigned char *used;
    size_t cap_gt, cap_used;
    void *mask_scratch; /* vt_det_mask_iou's, for vt_det_eval_add_masks */
    size_t cap_mask;
    /* results of the last vt_det_eval_compute */
    double *ap;      /* nc x VT_DET_NUM_IOU */
    double *ap50, *ap50_95, *p, *r, *f1;
} vt_det_eval;

typedef struct vt_det_metrics {
    double precision, recall, f1; /* means over classes with ground truth */
    double conf;                  /* the threshold they are taken at */
    double map50, map50_95;
    int classes_with_gt;
    /* per class (nc), owned by the evaluator, valid until its next compute/reset/free */
    const double *ap50, *ap50_95; /* -1 for a class without ground truth */
    const double *class_p, *class_r, *class_f1;
    const int64_t *num_gt;
    const int64_t *confusion;     /* (nc+1) x (nc+1), [pred * (nc+1) + true] */
} vt_det_metrics;

vt_status vt_det_eval_init(vt_det_eval *ev, int nc);
void vt_det_eval_reset(vt_det_eval *ev); /* forget all images, keep the memory */
void vt_det_eval_free(vt_det_eval *ev);
/* One image's detections (after NMS) and ground truths, in the same units.
 * VT_ERR_INVALID_ARGUMENT for a class outside 0..nc-1 or a NaN score. */
vt_status vt_det_eval_add(vt_det_eval *ev, const vt_det *pred, int npred, const vt_det *gt,
                          int ngt);
/* The same with mask IoU: pred_masks holds npred planes of w x h bytes (row-major, plane i
 * of detection i at pred_masks + i * w * h), gt_masks ngt planes likewise; a nonzero byte is
 * foreground.  The boxes of pred and gt are not read, only their classes and scores.  w and h
 * may change from one image to the next.  Masks are read during the call only.
 * VT_ERR_INVALID_ARGUMENT as vt_det_eval_add, or for w, h < 1 or a missing mask array. */
vt_status vt_det_eval_add_masks(vt_det_eval *ev, const vt_det *pred, int npred,
                                const uint8_t *pred_masks, const vt_det *gt, int ngt,
                                const uint8_t *gt_masks, int w, int h);
/* Adds n records and the ground-truth counts (nc) and confusion matrix ((nc+1)^2) of other
 * images, evaluated elsewhere (another process's shard of the split), as if added here; NULL
 * counts or matrix: none to add. */
vt_status vt_det_eval_absorb(vt_det_eval *ev, const vt_det_record *rec, size_t n,
                             const int64_t *num_gt, const int64_t *confusion);
/* conf < 0: the threshold maximising the mean F1; else P/R/F1 at that threshold. */
vt_status vt_det_eval_compute(vt_det_eval *ev, double conf, vt_det_metrics *out);
/* The curves behind those metrics, at IoU 0.5, per class c (-1 throughout for a class without
 * ground truth); each output may be NULL:
 *  pr[c * 101 + k]: the interpolated precision at recall k / 100 that AP50 averages (so the
 *     mean of a class's 101 values is its AP50, and of the classes' means mAP50);
 *  p, r, f1[c * nconf + k]: precision, recall and F1 at confidence >= k / (nconf - 1).
 * Leaves the metrics of the last compute as they are. */
vt_status vt_det_eval_curves(vt_det_eval *ev, double *pr, int nconf, double *p, double *r,
                             double *f1);

/* Mask IoU matrix: iou[i * nb + j] = |a_i & b_j| / |a_i | b_j| (0 when the union is empty) for
 * the na planes a and the nb planes b of w x h bytes (layout as vt_det_eval_add_masks; nonzero
 * is foreground), in float: the correctly rounded quotient of the two pixel counts while they
 * stay under 2^24.  The planes are packed to bit rows and each pair only visits the rows and
 * 64-pixel words where both have foreground.  scratch: vt_det_mask_iou_scratch(na, nb, w, h)
 * bytes, aligned as malloc's; that function returns 0 when the size does not fit a size_t or an
 * argument is negative (w, h < 1). */
size_t vt_det_mask_iou_scratch(int na, int nb, int w, int h);
void vt_det_mask_iou(const uint8_t *a, int na, const uint8_t *b, int nb, int w, int h,
                     void *scratch, float *iou);

/* The evaluator of a detection trainer's last completed validation (the detect task's state,
 * lib/task/detect_train.c), e.g. for its PR and F1 curves; NULL before one or for another
 * task's context. */
struct vt_task_ctx;
vt_det_eval *vt_detect_last_eval(const struct vt_task_ctx *c);

#endif
