/* Anti-aliased shape rasteriser shared by the synthetic dataset generators (lib/data/synth.c).
 * Classification draws one shape per image; detection and segmentation generators draw the
 * same shapes and take their boxes from vt_shape_bbox() / their masks from
 * vt_shape_coverage(), so labels and pixels always agree. */
#ifndef VT_SHAPES_H
#define VT_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

typedef enum vt_shape_kind {
    VT_SHAPE_CIRCLE = 0,
    VT_SHAPE_SQUARE = 1,
    VT_SHAPE_TRIANGLE = 2,
    VT_SHAPE_CROSS = 3,
    VT_SHAPE_RING = 4,
    VT_SHAPE_DIAMOND = 5,
    VT_SHAPE_HBAR = 6,
    VT_SHAPE_VBAR = 7,
    VT_SHAPE_COUNT = 8
} vt_shape_kind;

/* A shape in its local frame (largest half-extent 1 before rotation), placed by a centre,
 * a scale and a rotation.  Pixel (i, j) covers [i, i+1) x [j, j+1) in image coordinates. */
typedef struct vt_shape {
    int kind;        /* vt_shape_kind */
    float cx, cy;    /* centre, image coordinates */
    float scale;     /* pixels per local unit */
    float angle;     /* rotation in radians */
    float param;     /* bar / cross half-thickness, or ring inner radius, in local units */
    /* Filled by vt_shape_prepare(): polygon vertices in image coordinates (nv = 0 for the
     * circle and the ring). */
    int nv;
    float vx[12], vy[12];
} vt_shape;

/* "circle", "square", ...; NULL for an unknown kind. */
const char *vt_shape_name(int kind);
/* Recompute the derived fields after changing kind/cx/cy/scale/angle/param by hand. */
void vt_shape_prepare(vt_shape *s);
/* A random shape of `kind` (random rotation jitter, thickness, size and position) whose tight
 * bounding box lies inside a w x h image and whose larger side is min_frac..max_frac of
 * min(w, h), uniform in that range or, with log_size, log-uniform (as many per octave).
 * Consumes a fixed number of draws from rng. */
void vt_shape_random(vt_shape *s, int kind, vt_rng *rng, int w, int h, float min_frac,
                     float max_frac, int log_size);
/* Tight axis-aligned bounding box in image coordinates: box = {x0, y0, x1, y1}. */
void vt_shape_bbox(const vt_shape *s, float box[4]);
/* Fraction of pixel (px, py) the shape covers, 0..1 (exact inside/outside away from edges,
 * 4x4 supersampled on edges). */
float vt_shape_coverage(const vt_shape *s, int px, int py);
/* Blend the shape in `colour` (c bytes) into 8-bit interleaved pixels with c = 1..4 channels,
 * rows `stride` bytes apart, weighting by coverage (anti-aliased). */
void vt_shape_draw(const vt_shape *s, uint8_t *pixels, int w, int h, int c, size_t stride,
                   const uint8_t *colour);

#endif
