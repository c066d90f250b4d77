/* Private: class masks of semantic segmentation datasets (seg_mask.c).  The rules (pixel-centre
 * even-odd rule, overlap order, ignore value) are documented in include/visiontrain/visiontrain.h
 * ("segmentation datasets"); the loader, validation and the synthetic generator all go through
 * these functions so that they agree pixel for pixel. */
#ifndef VT_SEG_MASK_H
#define VT_SEG_MASK_H

#include <stdint.h>

#include "data/dataset.h"
#include "image/image.h"

/* Fill one polygon of npts >= 3 points (x, y pairs in pixels of a w x h mask, any values,
 * points outside the mask allowed) with `value`: pixel (x, y) is set when its centre
 * (x + 0.5, y + 0.5) is inside by the even-odd rule, centres on a left/top edge inside and on a
 * right/bottom edge outside.  Other pixels are left alone.  Errors: VT_ERR_INVALID_ARGUMENT
 * (NULL, npts < 3, w or h < 1, a non-finite coordinate), VT_ERR_OUT_OF_MEMORY. */
vt_status vt_seg_rasterize(const float *xy_pixels, int npts, int w, int h, uint8_t value,
                           uint8_t *mask);

/* The same fill into a 16-bit mask (instance-index maps). */
vt_status vt_seg_rasterize16(const float *xy_pixels, int npts, int w, int h, uint16_t value,
                             uint16_t *mask);

/* Absolute shoelace area of a polygon (any unit): the key of the overlap order. */
double vt_seg_poly_area(const float *xy, int n);

/* Draw n polygons (points normalised 0..1 in xy_norm, see vt_seg_poly) into a w x h mask with
 * value = their class, larger (absolute shoelace area) first, so smaller ones stay on top;
 * equal areas keep list order.  The mask is not cleared first. */
vt_status vt_seg_draw_polygons(const vt_seg_poly *polys, int n, const float *xy_norm, int w,
                               int h, uint8_t *mask);

/* The same for augmented labels (augment.h: pixel coordinates of a w x h image, e.g. after a
 * mosaic or an affine warp): each object with a polygon is drawn with value = its cls (a
 * dataset class id), larger area first, ties in object order; box-only objects are not drawn.
 * The mask is not cleared first.  This is how a loader keeps polygon masks sharp through
 * geometric augmentation instead of warping a rasterised mask. */
struct vt_aug_labels;
vt_status vt_seg_draw_aug_labels(const struct vt_aug_labels *labels, int w, int h,
                                 uint8_t *mask);

/* An instance-index map (Ultralytics' overlap_mask): objects objs[0..n) of labels (n <= 65535,
 * their outlines in pixels of the labels' image) scaled by `scale` to the w x h map and painted
 * with value k + 1 for objs[k], every part of an object with its value, objects in descending
 * area (the sum of their parts' shoelace areas) so that a smaller one lies on top, ties in
 * objs order (later on top); box-only objects are not painted.  A pixel belongs to a part when
 * its centre is inside (vt_seg_rasterize).  The map is not cleared first. */
vt_status vt_seg_draw_instance_map(const struct vt_aug_labels *labels, const int *objs, int n,
                                   float scale, int w, int h, uint16_t *map);

/* The class mask of image i of a segmentation dataset at w x h pixels (the image's own size):
 * polygon datasets: background 0 then vt_seg_draw_polygons; mask datasets: the mask PNG, which
 * must be w x h, with out-of-range values mapped to the ignore value.  The loader resizes or
 * letterboxes the result itself (nearest neighbour).  Errors: VT_ERR_INVALID_ARGUMENT,
 * VT_ERR_UNSUPPORTED (not segmentation), VT_ERR_DATASET (mask size differs), errors of
 * vt_seg_load_mask.  Thread-safe: the dataset is only read. */
vt_status vt_seg_image_mask(const vt_dataset *ds, vt_split split, int i, int w, int h,
                            uint8_t *mask);

/* The class map of image i of an instance segmentation dataset at w x h pixels (the image's own
 * size): `none` everywhere, then each object's parts with its class as vt_seg_draw_polygons
 * draws them (larger first); parts of a class >= none are left out (a byte holds the classes
 * below it).  Errors as vt_seg_image_mask; VT_ERR_UNSUPPORTED for another dataset. */
vt_status vt_seg_instance_classes(const vt_dataset *ds, vt_split split, int i, int w, int h,
                                  uint8_t none, uint8_t *mask);

/* The mask value of ignored pixels (255 by default), -1 for a non-segmentation dataset. */
int vt_seg_ignore_value(const vt_dataset *ds);

/* Decode a mask PNG: it must be an 8-bit gray PNG (VT_ERR_FORMAT otherwise: palette, RGB and
 * 16-bit masks would lose their class ids in decoding).  Values >= nc other than `ignore`
 * become `ignore`; *nbad counts them and *first_bad is the first such value (-1 if none).
 * out->c is 1.  nbad / first_bad may be NULL. */
vt_status vt_seg_load_mask(const char *path, int nc, int ignore, vt_image *out, int64_t *nbad,
                           int *first_bad);

/* Width and height of a PNG or JPEG file from its header. */
vt_status vt_seg_probe_size(const char *path, int *w, int *h);

#endif
