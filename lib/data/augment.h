/* Private: training-time data augmentation (Ultralytics-style names and defaults).
 *
 * Pure functions on vt_image: no file I/O, no threads, no global state.  Every random choice is
 * drawn from the caller's vt_rng in a fixed order, so the same seed gives the same bytes and
 * labels on every machine, and a loader worker that owns its own vt_rng can call any of these
 * concurrently with other workers.
 *
 * Coordinates.  Labels are in pixels of the image they belong to, continuous: pixel (i, j)
 * covers [i, i+1) x [j, j+1) and its centre is (i + 0.5, j + 0.5).  A box is its corners
 * (x0, y0, x1, y1), so a rectangle filling pixels 10..19 is x0 = 10, x1 = 20.  The geometric
 * transforms sample each output pixel at the inverse image of its centre, which is what keeps
 * pixels and labels consistent to the sub-pixel level (OpenCV's integer-centre convention, which
 * Ultralytics mixes with corner labels, is off by half a pixel).
 *
 * Ownership.  Images written by a function (`dst`) are allocated by it and overwrite *dst
 * without freeing what was there; release them with vt_image_free.  Labels go to a growable
 * vt_aug_labels owned by the caller: functions clear it and refill it, reusing its memory, so a
 * worker that keeps one per slot allocates nothing in the steady state.  An output label list
 * may be the same object as an input one.  On failure the outputs are left empty or unchanged
 * and the error is recorded with vt_fail. */
#ifndef VT_AUGMENT_H
#define VT_AUGMENT_H

#include <stdint.h>

#include "core/core.h"
#include "image/image.h"

/* ---- parameters ----------------------------------------------------------------------------
 * The defaults are the training options' (lib/core/options.c), read from its table.
 * key            default  range       meaning (tasks: D detect/segment, C classify)
 * hsv_h          0.015    [0, 1]      hue shift, fraction of the colour circle, drawn in +-g (D C)
 * hsv_s          0.7      [0, 1]      saturation gain drawn in [1-g, 1+g] (D C)
 * hsv_v          0.4      [0, 1]      value (brightness) gain drawn in [1-g, 1+g] (D C)
 * degrees        0        [0, 180]    rotation drawn in +-degrees (D)
 * translate      0.1      [0, 1]      shift drawn in +-translate * output size (D)
 * scale          0.5      [0, 1)      scale gain drawn in [1-scale, 1+scale] (D)
 * shear          0        [0, 90)     x and y shear angles drawn in +-shear degrees (D)
 * perspective    0        [0, 0.001]  perspective terms drawn in +-perspective (D)
 * flipud         0        [0, 1]      probability of a vertical flip (D C)
 * fliplr         0.5      [0, 1]      probability of a horizontal flip (D C)
 * mosaic         1.0      [0, 1]      probability of a 4-image mosaic (D; the loader draws it)
 * mixup          0        [0, 1]      probability of mixing in a second sample (D; loader)
 * close_mosaic   10       [0, 1e6]    epochs at the end without mosaic (D; the loader uses it)
 * erasing        0        [0, 1]      probability of random erasing (C)
 * crop_scale_min 1        (0, 1]      random resized crop: smallest area fraction, 1 = off (C)
 * crop_ratio_min 0.75     (0, 100]    random resized crop: aspect ratio (w/h) range (C)
 * crop_ratio_max 1.3333   (0, 100]    (crop_ratio_min <= crop_ratio_max, see _check) */
typedef struct vt_aug_params {
    float hsv_h, hsv_s, hsv_v;
    float degrees, translate, scale, shear, perspective;
    float flipud, fliplr;
    float mosaic, mixup;
    int close_mosaic;
    float erasing;
    float crop_scale_min, crop_ratio_min, crop_ratio_max;
} vt_aug_params;

/* The option defaults (opts NULL), or the values of the training options in opts: one mapping
 * from the option ids to the fields, whose types, ranges and defaults are the option table's
 * (lib/core/options.c; values are checked when they are set there).  crop_ratio_min/max, which no option sets, are 3/4 and
 * 4/3. */
void vt_aug_params_from_options(vt_aug_params *p, const vt_optvals *opts);
void vt_aug_params_default(vt_aug_params *p);
/* 1 with probability prob (one draw, always made, so the stream does not depend on prob). */
int vt_aug_chance(vt_rng *r, float prob);

/* ---- labels ----------------------------------------------------------------------------- */
typedef struct vt_aug_box {
    int cls;
    float x0, y0, x1, y1; /* pixel corners, x0 <= x1, y0 <= y1 */
} vt_aug_box;

/* The objects of one image.  Object i has box[i]; when poly_n[i] > 0 it also has an outline of
 * poly_n[i] points xy[2*poly_off[i] ..], and box[i] is that outline's bounding box.  The
 * outline is one polygon (a YOLO-seg line) or several parts (an instance of several COCO
 * polygons): part_cnt[i] parts (0 for a box, 1 for one polygon) whose point counts are
 * part_len[part_off[i] ..], their points one after the other.  Each part is transformed and
 * clipped as a polygon of its own.  Zero-initialise (or vt_aug_labels_init) before use. */
typedef struct vt_aug_labels {
    vt_aug_box *box;
    int *poly_off, *poly_n;
    int *part_off, *part_cnt;
    float *xy;
    int n, cap;      /* objects */
    int nxy, cap_xy; /* polygon points */
    int *part_len;
    int npart, cap_part; /* parts */
} vt_aug_labels;

void vt_aug_labels_init(vt_aug_labels *l);
void vt_aug_labels_free(vt_aug_labels *l);  /* and re-initialise */
void vt_aug_labels_clear(vt_aug_labels *l); /* n = 0, memory kept */
vt_status vt_aug_labels_add_box(vt_aug_labels *l, int cls, float x0, float y0, float x1,
                                float y1);
/* A polygon of n >= 3 points (x, y pairs); the box is its bounding box. */
vt_status vt_aug_labels_add_poly(vt_aug_labels *l, int cls, const float *xy, int n);
/* An outline of nparts >= 1 parts, part k of part_n[k] >= 3 points, the parts' points one after
 * the other in xy; the box is the bounding box of them all. */
vt_status vt_aug_labels_add_parts(vt_aug_labels *l, int cls, const float *xy, const int *part_n,
                                  int nparts);
/* Append all of src's objects to dst (dst != src). */
vt_status vt_aug_labels_append(vt_aug_labels *dst, const vt_aug_labels *src);
/* Object i's outline: all its points, its parts one after the other (NULL and *n = 0 for a
 * box-only object). */
const float *vt_aug_labels_poly(const vt_aug_labels *l, int i, int *n);
/* Object i's parts (0 for a box-only object), and part k of them (its points, *n of them). */
int vt_aug_labels_num_parts(const vt_aug_labels *l, int i);
const float *vt_aug_labels_part(const vt_aug_labels *l, int i, int k, int *n);

/* ---- geometry ------------------------------------------------------------------------------
 * A projective transform from source to output pixel coordinates (continuous, see the top):
 * (x', y') = ((m0 x + m1 y + m2) / w, (m3 x + m4 y + m5) / w), w = m6 x + m7 y + m8; an affine
 * one has m6 = m7 = 0, m8 = 1.  gain is the scale gain it was drawn with (the drop rule
 * compares areas with it). */
typedef struct vt_aug_transform {
    double m[9];
    double gain;
} vt_aug_transform;

/* Ultralytics random_perspective: M = T * S * R * P * C, where C moves the source centre to the
 * origin, P has the perspective terms, R rotates by a in +-degrees (counter-clockwise on screen
 * for a > 0, as cv2.getRotationMatrix2D) and scales by gain in [1-scale, 1+scale], S shears by
 * tan(+-shear) in x then y, and T moves the origin to (0.5 +- translate) * output size.  Draws,
 * in order: the two perspective terms, a, gain, the two shears, tx, ty (8 draws, always). */
void vt_aug_transform_draw(const vt_aug_params *p, vt_rng *r, int src_w, int src_h, int out_w,
                           int out_h, vt_aug_transform *t);

/* Warp pixels: output pixel (i, j) takes the bilinear sample of src at the inverse image of
 * its centre; centres that fall outside src take `fill` in every channel (Ultralytics: 114).
 * The identity transform copies src exactly. */
vt_status vt_aug_warp_image(const vt_image *src, const vt_aug_transform *t, int out_w,
                            int out_h, uint8_t fill, vt_image *dst);

/* Warp labels in place: a box is taken as the polygon of its four corners; each polygon's
 * points are transformed and the polygon is clipped to the output canvas [0, out_w] x
 * [0, out_h] (Sutherland-Hodgman); the new box is the bounding box of what is left.  So a box
 * is the enclosing box of its transformed corners when it is fully in view, and of its visible
 * part when it is cut (tighter than Ultralytics, which clips the corners' box, and consistent
 * with the pixels).  A polygon object keeps its clipped polygon; an object of several parts
 * keeps the parts with something left, its box theirs.  Then the drop rule
 * (Ultralytics box_candidates) keeps an object only when, with w, h its new size and w0, h0
 * its size before the transform:
 *     w > 2 and h > 2 pixels,
 *     w * h / (w0 * h0 * gain^2) > 0.1       (over a tenth of the scaled object in view),
 *     max(w / h, h / w) < 20                 (not a sliver).
 * (Ultralytics 8 uses 100 for the aspect limit and 0.01 for segments; these are YOLOv5's.)
 * Objects keep their order. */
vt_status vt_aug_warp_labels(vt_aug_labels *l, const vt_aug_transform *t, int out_w, int out_h);

/* The general form: transform, clip to the rectangle clip = {x0, y0, x1, y1}, then with
 * drop_rule the rule above, without it only objects with nothing left (zero width or height,
 * a polygon of fewer than 3 points) are dropped. */
vt_status vt_aug_map_labels(vt_aug_labels *l, const vt_aug_transform *t, const float clip[4],
                           int drop_rule);

/* Random affine (perspective too if p->perspective > 0) of a sample: draw a transform, warp the
 * pixels (fill 114) and the labels (which may be NULL).  dst is out_w x out_h. */
vt_status vt_aug_affine(const vt_image *src, vt_aug_labels *labels, int out_w, int out_h,
                        const vt_aug_params *p, vt_rng *r, vt_image *dst);

/* Mirror pixels and labels in place (x -> w - x, or y -> h - y).  labels may be NULL. */
void vt_aug_fliplr(vt_image *img, vt_aug_labels *labels);
void vt_aug_flipud(vt_image *img, vt_aug_labels *labels);

/* ---- detection pipeline --------------------------------------------------------------------
 * Ultralytics' order: (mosaic + affine | letterbox + affine), [mixup], hsv, flipud, fliplr.
 * The loader decides mosaic / mixup with vt_aug_chance and picks the extra images. */

/* Ultralytics load_mosaic: each image is resized so its long side is s (labels scaled with it)
 * and placed on a 2s x 2s canvas of 114 around a centre (xc, yc) drawn in [s/2, 3s/2) (y first,
 * then x; truncated to integers): image 0 ends at the centre from the top-left, 1 top-right,
 * 2 bottom-left, 3 bottom-right, cut by the canvas edge.  Labels are shifted, clipped to the
 * part of the image that was placed, and dropped when nothing is left (zero width or height).
 * All images must have the same channel count; labels[i] may be NULL.  2 <= s <= 16384. */
vt_status vt_aug_mosaic_canvas(const vt_image *const imgs[4], const vt_aug_labels *const labels[4],
                               int s, vt_rng *r, vt_image *canvas, vt_aug_labels *out);
/* The canvas, then vt_aug_affine from 2s x 2s to s x s (the "border of -s/2"): the same draws,
 * bytes and labels.  When the drawn transform is scale and shift only (degrees = shear =
 * perspective = 0, the default) and the images have 3 channels, the canvas is not painted: the
 * warp samples the placed images directly (vt_aug_warp_tiles). */
vt_status vt_aug_mosaic(const vt_image *const imgs[4], const vt_aug_labels *const labels[4],
                        int s, const vt_aug_params *p, vt_rng *r, vt_image *dst,
                        vt_aug_labels *out);

/* A canvas that is the fill but for four tiles: tile i (0 top left, 1 top right, 2 bottom
 * left, 3 bottom right) covers the rectangle [x0, x1) x [y0, y1) of the canvas, inside its
 * quadrant of the split at (xc, yc) (x1 <= xc for the left tiles, x0 >= xc for the right ones;
 * y likewise), and canvas pixel (x, y) there is pixel (x - x0 + ox, y - y0 + oy) of img (which
 * may be NULL for an empty rectangle). */
typedef struct vt_aug_tile {
    const vt_image *img;
    int x0, y0, x1, y1, ox, oy;
} vt_aug_tile;

/* The colour part of a sample (vt_aug_hsv_flips) with its draws made up front: the HSV gains
 * as vt_aug_hsv computes them and the two flips. */
typedef struct vt_aug_colour {
    float dh;     /* hue shift in sextants (a full turn is 6): u_h * hsv_h * 6 */
    float gs, gv; /* saturation and value gains */
    int flipud, fliplr;
} vt_aug_colour;

/* vt_aug_hsv_flips's 5 draws, in its order (u_h, u_s, u_v, flipud, fliplr). */
void vt_aug_colour_draw(const vt_aug_params *p, vt_rng *r, vt_aug_colour *c);
/* Its pixels, in place (img may be NULL), and its labels (those of an image w x h; may be
 * NULL): together vt_aug_hsv_flips with these draws. */
void vt_aug_colour_apply(vt_image *img, const vt_aug_colour *c);
void vt_aug_colour_labels(vt_aug_labels *labels, int w, int h, const vt_aug_colour *c);
/* vt_aug_hsv with its 3 draws made (dh, gs, gv as in vt_aug_colour). */
void vt_aug_hsv_apply(vt_image *img, float dh, float gs, float gv);
/* The floats vt_image_to_float(want_c, no flip) gives for img after vt_aug_colour_apply, without
 * changing img: with SSE2 and RGB to RGB in one pass (HSV four pixels at a time, the flips as
 * the floats are written), else through a copy. */
vt_status vt_aug_colour_to_float(const vt_image *img, const vt_aug_colour *c, int want_c,
                                 float *dst, size_t chan_stride);

/* vt_aug_warp_image of such a canvas (canvas_w x canvas_h, 3 channels) without painting it, when
 * the transform takes the warp's separable path (scale and shift only): each of a pixel's four
 * bilinear taps takes the tile pixel that covers it or the fill, so dst gets the same bytes;
 * *done = 1.  Any other transform: *done = 0 and dst is untouched (warp a painted canvas). */
vt_status vt_aug_warp_tiles(const vt_aug_tile tiles[4], int canvas_w, int canvas_h, int xc,
                            int yc, const vt_aug_transform *t, int out_w, int out_h,
                            uint8_t fill, vt_image *dst, int *done);
/* The same warp, then vt_aug_colour_apply, then vt_image_to_float (3 channels, no flip) in one
 * pass: each row of taps is warped, turned by the HSV gains and written as floats to its
 * (flipped) place in the planes, four pixels at a time, without any intermediate image.  The
 * same floats.  *done = 0 (nothing written) for a transform that is not scale and shift, and
 * always without SSE2. */
vt_status vt_aug_warp_tiles_float(const vt_aug_tile tiles[4], int canvas_w, int canvas_h,
                                  int xc, int yc, const vt_aug_transform *t, int out_w,
                                  int out_h, uint8_t fill, const vt_aug_colour *colour,
                                  float *dst, size_t chan_stride, int *done);

/* MixUp: a = a * ratio + b * (1 - ratio), rounded, with ratio ~ Beta(32, 32) (drawn as
 * X / (X + Y), X and Y Gamma(32) sums of 32 exponentials: 64 draws); the labels of b are
 * appended to la (which may be NULL, then lb is ignored).  a and b must have the same size and
 * channels.  *ratio_out (may be NULL) gets the ratio. */
vt_status vt_aug_mixup(vt_image *a, vt_aug_labels *la, const vt_image *b,
                       const vt_aug_labels *lb, vt_rng *r, float *ratio_out);

/* HSV then flips, in place: vt_aug_hsv, then flipud with p->flipud, then fliplr with p->fliplr
 * (5 draws, always). */
void vt_aug_hsv_flips(vt_image *img, vt_aug_labels *labels, const vt_aug_params *p, vt_rng *r);

/* A sample without mosaic: letterbox src to s x s (vt_letterbox_image, scale-up allowed, pad
 * 114; labels mapped with vt_letterbox_forward), vt_aug_affine to s x s, then
 * vt_aug_hsv_flips.  labels (in src pixels) may be NULL; out gets the result. */
vt_status vt_aug_letterbox_affine(const vt_image *src, const vt_aug_labels *labels, int s,
                                  const vt_aug_params *p, vt_rng *r, vt_image *dst,
                                  vt_aug_labels *out);

/* ---- samples made in two steps -------------------------------------------------------------
 * The loader's detection samples with every draw and the labels first, the pixels after: as
 * bytes, or straight into float planes (HSV and the flips done while the warp writes them, no
 * intermediate image), so a caller that learns only after the draws whether it needs the bytes
 * (mixup) gets the same stream of draws either way.  A sample's canvas is the fill 114 but for
 * its tiles (the placed images); its pixels are that canvas warped by t, then its colour.  The
 * tiles point at the caller's images (which must outlive the sample) or at own[]: do not copy
 * a vt_aug_sample, free it with vt_aug_sample_free. */
typedef struct vt_aug_sample {
    vt_aug_tile tiles[4];
    vt_image own[4]; /* resized copies the tiles use */
    int s, c, canvas_w, canvas_h, xc, yc;
    vt_aug_transform t;
    vt_aug_colour colour;
} vt_aug_sample;

/* vt_aug_mosaic then vt_aug_hsv_flips: the same draws and labels (out may be NULL); the pixels
 * come from vt_aug_sample_image or vt_aug_sample_float. */
vt_status vt_aug_mosaic_sample(const vt_image *const imgs[4],
                               const vt_aug_labels *const labels[4], int s,
                               const vt_aug_params *p, vt_rng *r, vt_aug_sample *smp,
                               vt_aug_labels *out);
/* vt_aug_letterbox_affine's draws and labels (out may be NULL only when labels is); the image
 * is placed as it is when it already has the letterbox's size, else resized into own[0]. */
vt_status vt_aug_letterbox_sample(const vt_image *src, const vt_aug_labels *labels, int s,
                                  const vt_aug_params *p, vt_rng *r, vt_aug_sample *smp,
                                  vt_aug_labels *out);
/* The sample's s x s pixels (what vt_aug_mosaic + vt_aug_hsv_flips or vt_aug_letterbox_affine
 * give). */
vt_status vt_aug_sample_image(const vt_aug_sample *smp, vt_image *dst);
/* vt_image_to_float(want_c, no flip) of those pixels, written to dst + k * chan_stride: in one
 * pass for RGB with SSE2 and a scale-and-shift transform (vt_aug_warp_tiles_float), else
 * through the bytes (vt_aug_colour_to_float).  The same floats either way. */
vt_status vt_aug_sample_float(const vt_aug_sample *smp, int want_c, float *dst,
                              size_t chan_stride);
void vt_aug_sample_free(vt_aug_sample *smp);

/* ---- colour --------------------------------------------------------------------------------
 * Ultralytics augment_hsv, in place: draws u_h, u_s, u_v uniform in [-1, 1) (3 draws, always);
 * the hue turns by u_h * hgain of a full circle, saturation is multiplied by 1 + u_s * sgain and
 * value by 1 + u_v * vgain, each clipped at its maximum (S = 1, V = 255) as Ultralytics' LUTs
 * clip.  Computed exactly per pixel in floating point rather than through OpenCV's 8-bit HSV
 * (whose hue has 180 steps), so unit gains are the identity and gray pixels stay gray.  A
 * 1-channel image gets the value gain only (through a 256-entry LUT). */
void vt_aug_hsv(vt_image *img, float hgain, float sgain, float vgain, vt_rng *r);

/* ---- classification -------------------------------------------------------------------- */

/* torchvision RandomResizedCrop: up to 10 tries of area fraction in [scale_min, 1] and aspect
 * ratio (w/h) log-uniform in [ratio_min, ratio_max]; w = round(sqrt(A * ratio)),
 * h = round(sqrt(A / ratio)); the first that fits is placed uniformly (draws per try: area,
 * ratio, then y and x when it fits).  Otherwise the centre crop of the image clamped to the
 * ratio range.  The crop is resized to s x s with vt_image_resize.  crop_xywh (may be NULL)
 * gets the crop rectangle. */
vt_status vt_aug_random_resized_crop(const vt_image *src, int s, float scale_min,
                                     float ratio_min, float ratio_max, vt_rng *r,
                                     vt_image *dst, int crop_xywh[4]);

/* torchvision RandomErasing on 8-bit pixels, in place: with probability prob, up to 10 tries
 * of area fraction in [0.02, 0.33] and aspect ratio log-uniform in [0.3, 3.3]; the first
 * rectangle smaller than the image is placed uniformly and filled with `fill` (0..255) or, for
 * fill < 0, with uniform random bytes.  Returns 1 when a rectangle was erased; xywh (may be
 * NULL) then gets it. */
int vt_aug_random_erasing(vt_image *img, float prob, int fill, vt_rng *r, int xywh[4]);

/* Ultralytics classify_augmentations on 8-bit pixels: random resized crop to s x s
 * (crop_scale_min, crop_ratio_*), fliplr, flipud, HSV (hsv_h, hsv_s, hsv_v, in place of
 * torchvision's ColorJitter), random erasing (erasing, random fill). */
vt_status vt_aug_classify(const vt_image *src, int s, const vt_aug_params *p, vt_rng *r,
                          vt_image *dst);

#endif
