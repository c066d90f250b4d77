/* Private: detection boxes, as datasets, the loader, post-processing and evaluation carry them.
 *
 * Boxes are corners (x0, y0, x1, y1) in any one unit (pixels of the original image for
 * evaluation); a ground truth is a vt_det whose score is ignored. */
#ifndef VT_BOXES_H
#define VT_BOXES_H

#include "core/core.h"

typedef struct vt_det {
    float x0, y0, x1, y1;
    float score;
    int cls;
} vt_det;

/* Growable list of detections (the only allocation in the decoding path). */
typedef struct vt_det_list {
    vt_det *v;
    int n, cap;
} vt_det_list;

vt_status vt_det_list_push(vt_det_list *l, const vt_det *d);
void vt_det_list_free(vt_det_list *l);

/* Intersection over union of two boxes; 0 when either is empty. */
float vt_det_iou(const vt_det *a, const vt_det *b);

#endif
