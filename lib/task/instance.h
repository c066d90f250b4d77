/* Private: decoding an instance segmenter's outputs (instance_train.c), for its validation and
 * for prediction on files and for the validation mosaics (model_instance.c). */
#ifndef VT_INSTANCE_H
#define VT_INSTANCE_H

#include "backend/backend.h"
#include "data/boxes.h"
#include "image/image.h"
#include "nn/model.h"

/* One image batch of the three outputs in host memory, CNHW as the executor holds them: the
 * detection head (4 + nc channels), k coefficients per anchor, k prototypes over the mh x mw
 * mask grid (mstride input pixels a mask pixel); the head's grid levels. */
typedef struct vt_iseg_heads {
    const float *head, *coef, *proto;
    int n, nc, k, mh, mw;
    float mstride;
    int n_levels;
    vt_det_level level[VT_DET_MAX_LEVELS];
} vt_iseg_heads;

typedef struct vt_iseg_cand {
    vt_det d;
    long a; /* its anchor */
} vt_iseg_cand;

/* The decoder's buffers, grown as needed: after a decode, dets[0..count) (corners in input
 * pixels, best score first) and their masks, count planes of mh x mw bytes (1: the object; the
 * mask logit > 0 inside its box, 0 elsewhere). */
typedef struct vt_iseg_decoder {
    vt_iseg_cand *cand;
    vt_det *dets;
    uint8_t *masks;
    size_t cap_cand, cap_dets, cap_masks;
} vt_iseg_decoder;

/* Image k: its best class per anchor with a score >= conf, class-aware NMS at IoU `iou`, at
 * most max_det (<= 0: 300), and each one's mask. */
vt_status vt_iseg_decode(const vt_iseg_heads *h, int k, float conf, float iou, int max_det,
                         vt_iseg_decoder *out, int *count);
void vt_iseg_decoder_free(vt_iseg_decoder *d);
/* realloc *p to `want` elements of `elem` bytes when *cap (elements) is less. */
vt_status vt_iseg_grow(void **p, size_t *cap, size_t want, size_t elem);

/* The validation mosaics' prediction (model_instance.c): as vt_model_instances_pixels on img
 * (up to cap instances, best score first, boxes in img's pixels), but the masks painted into
 * map, img's w x h class ids: an instance's pixels get its class, the best one's on top;
 * pixels outside every mask, and instances of a class >= 255 (a byte's), are left as they are. */
vt_status vt_iseg_tile_predict(vt_model *m, const vt_image *img, float conf, float iou, int cap,
                               int *classes, float *scores, float *boxes, int *count,
                               uint8_t *map);

#endif
