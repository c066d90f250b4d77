/* Private: the detection generator (synth_detect.c) and the synth.c helpers it shares. */
#ifndef VT_SYNTH_DETECT_H
#define VT_SYNTH_DETECT_H

#include <stdint.h>

#include "core/core.h"

/* vt_synth_generate for a task labelled with boxes. */
vt_status vt_synth_detect(const char *dir, const char *options);

/* vt_synth_generate for a task labelled with masks: the detection images with YOLO-seg
 * polygons and mask PNGs. */
vt_status vt_synth_segment(const char *dir, const char *options);

/* vt_synth_generate for a task labelled with instances: the segmentation set's images and
 * YOLO-seg polygons (one per object), without the mask PNGs. */
vt_status vt_synth_instance(const char *dir, const char *options);

/* Write n x n RGB pixels as a new PNG (fails if the file exists). */
vt_status vt_synth_write_png(const char *path, const uint8_t *pix, int n);
/* The same for n x n 8-bit gray pixels (masks). */
vt_status vt_synth_write_png_gray(const char *path, const uint8_t *pix, int n);
/* mkdir -p */
vt_status vt_synth_make_dirs(const char *path);

#endif
