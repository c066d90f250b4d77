/* Batch loading: decode, resize, augment and pack images of a dataset split into a CNHW float
 * batch, with worker threads.  Every random choice of image i comes from an RNG seeded with
 * (aug_seed, i), so a batch is identical whatever the number of workers. */
#ifndef VT_LOADER_H
#define VT_LOADER_H

#include "core/core.h"
#include "core/threads.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "train/detect_eval.h"

typedef struct vt_loader vt_loader;

typedef struct vt_loader_config {
    int imgsz, channels;
    int workers;               /* decoding threads, 0 = the calling thread only */
    const vt_aug_params *aug;  /* training augmentation (copied); NULL: none */
    const vt_logger *log;
} vt_loader_config;

vt_status vt_loader_create(vt_loader **out, const vt_dataset *ds, vt_split split,
                           const vt_loader_config *cfg);
void vt_loader_destroy(vt_loader *L);

/* Detection: allow mosaic (1, the default) or not (the last close_mosaic epochs). */
void vt_loader_set_mosaic(vt_loader *L, int on);

/* Fill `batch` (channels x n_ok x imgsz x imgsz, CNHW) and `labels` with the images at
 * `indices` of the split.  Images that fail to decode are left out (a warning is logged once
 * per file) and *n_ok counts those packed.  Fails with VT_ERR_DATASET when none decodes.
 * `batch` must hold channels*n*imgsz*imgsz floats.  aug_seed: 0 disables augmentation (the
 * validation path: plain resize, or letterbox for detection).
 *
 * Classification: resize to imgsz (or a random resized crop when crop_scale_min < 1), HSV,
 * flips, random erasing; labels[k] = the class.
 * Detection: mosaic (probability `mosaic`, with 3 more images of the split drawn at random) or
 * letterbox, random affine, mixup, HSV, flips (lib/data/augment.h); labels[k] = the dataset
 * index of packed image k. */
vt_status vt_loader_fill(vt_loader *L, const int *indices, int n, uint64_t aug_seed,
                         float *batch, int32_t *labels, int *n_ok);

/* Detection, after a fill: packed image k (0 <= k < n_ok) has *count boxes at *boxes (corners
 * in input pixels, score unused; owned by the loader, valid until the next fill) and the
 * letterbox geometry that maps them back to the original image (an augmented image has no
 * single original: its geometry is the identity). */
void vt_loader_boxes(const vt_loader *L, int k, const vt_det **boxes, int *count,
                     vt_letterbox *lb);

/* Segmentation, after a fill: the imgsz x imgsz class mask of packed image k (values are class
 * ids, or the dataset's ignore value for unlabelled and padding pixels); owned by the loader,
 * valid until the next fill. */
const uint8_t *vt_loader_mask(const vt_loader *L, int k);

#endif
