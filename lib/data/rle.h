/* Private: COCO run-length masks (rle.c), decoded and turned into polygon parts so that RLE
 * instances flow through the same polygon pipeline (augmentation, rasterisation) as polygon
 * annotations.
 *
 * COCO's RLE ({"counts": ..., "size": [h, w]}) lists alternating run lengths of 0s and 1s,
 * starting with 0s, over the pixels in column-major order (pixel (x, y) is run position
 * x * h + y).  "counts" is either a list of integers (uncompressed) or pycocotools' compressed
 * string (rleToString: each count in 5-bit groups, low first, as characters 48 + group with
 * 0x20 marking "more" and 0x10 of the last group the sign; from the fourth count on, the
 * value is the difference to the count two places before, as pycocotools' rleFrString reads
 * it).
 *
 * Contours (vt_rle_contours) are an approximation of the mask in one respect only: holes are
 * ignored (filled).  Each 4-connected region of the filled mask becomes one part, its outer
 * boundary traced along pixel edges (corners at integer coordinates, collinear points merged),
 * so rasterising the parts at the mask's resolution with the pixel-centre rule of seg_mask.h
 * gives back exactly the mask's pixels, its holes filled.  At another resolution (the loader's
 * input size) the outline is a staircase scaled like any polygon. */
#ifndef VT_RLE_H
#define VT_RLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* Decode into mask (h * w bytes, row-major, 1 inside the object, 0 elsewhere; fully written).
 * An RLE that is not valid (a negative count, counts that do not add up to h * w, a bad
 * character of the string form) gives VT_ERR_FORMAT with the reason in why (no vt_fail: the
 * caller records it as a dataset problem); VT_ERR_OUT_OF_MEMORY is the other error. */
vt_status vt_rle_decode_counts(const int64_t *counts, size_t n, int h, int w, uint8_t *mask,
                               char *why, size_t why_cap);
vt_status vt_rle_decode_string(const char *s, int h, int w, uint8_t *mask, char *why,
                               size_t why_cap);

/* The outer contours of mask (w x h, non-zero = inside), holes filled, as polygon parts: part k
 * has part_n[k] >= 4 points, the parts' points one after the other in *xy as x, y pairs in
 * pixel-corner coordinates (0..w, 0..h).  Parts come in raster order of their first pixel.
 * *xy and *part_n are malloc'd (NULL with *nparts = 0 for an empty mask).  More than max_points
 * points in all: VT_ERR_FORMAT with the reason in why, nothing returned. */
vt_status vt_rle_contours(const uint8_t *mask, int w, int h, int max_points, float **xy,
                          int **part_n, int *nparts, char *why, size_t why_cap);

#endif
