/* Private: letterbox (resize keeping the aspect ratio onto a padded canvas) and the box
 * mapping between the original image and the canvas. */
#ifndef VT_LETTERBOX_H
#define VT_LETTERBOX_H

#include <stdint.h>

#include "core/core.h"
#include "image/image.h"

/* Resize keeping the aspect ratio, centred on a dst_w x dst_h canvas (Ultralytics' letterbox:
 * r = min(dst_w/src_w, dst_h/src_h), not above 1 unless scaleup, new size rounded, padding
 * split with the extra pixel on the right/bottom).  Box mapping uses the exact per-axis scale
 * of the resize performed (new_w/src_w, new_h/src_h). */
typedef struct vt_letterbox {
    int src_w, src_h, dst_w, dst_h;
    int new_w, new_h; /* size of the resized image inside the canvas */
    int pad_x, pad_y; /* its top-left corner in the canvas */
    float sx, sy;     /* new_w / src_w, new_h / src_h */
} vt_letterbox;

/* VT_ERR_INVALID_ARGUMENT for non-positive sizes. */
vt_status vt_letterbox_geometry(int src_w, int src_h, int dst_w, int dst_h, int scaleup,
                                vt_letterbox *lb);
/* The smallest canvas of multiples of `multiple` (0 or 1: any size) that holds the image
 * letterboxed to fit size x size: the square's scale and resized image, centred on dst_w x
 * dst_h <= size (Ultralytics' predictor, LetterBox(auto=True)).  size must be a multiple of
 * `multiple`.  VT_ERR_INVALID_ARGUMENT for non-positive sizes. */
vt_status vt_letterbox_fit(int src_w, int src_h, int size, int multiple, int scaleup,
                           vt_letterbox *lb);
/* Original-image corners -> canvas corners. */
void vt_letterbox_forward(const vt_letterbox *lb, float box[4]);
/* Canvas corners -> original-image pixels, clipped to the image. */
void vt_letterbox_inverse(const vt_letterbox *lb, float box[4]);
/* Resize and pad an image (pad value `pad` in every channel, Ultralytics uses 114). */
vt_status vt_letterbox_image(const vt_image *src, int dst_w, int dst_h, int scaleup,
                             uint8_t pad, vt_image *dst, vt_letterbox *lb);
/* The same on a geometry already made for src (vt_letterbox_geometry, vt_letterbox_fit). */
vt_status vt_letterbox_apply(const vt_image *src, const vt_letterbox *lb, uint8_t pad,
                             vt_image *dst);

#endif
