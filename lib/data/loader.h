/* Batch loading: decode, resize, augment and pack images of a dataset split into a CNHW float
 * batch, with worker threads.  Every random choice of image i comes from an RNG seeded with
 * (aug_seed, i), and mosaic / mixup partners are drawn among the batch's own images, so a
 * batch is identical whatever the number of workers, the prefetch depth and whether the RAM
 * cache holds its images.
 *
 * Two ways to load, not mixed while batches are in flight:
 *   - vt_loader_fill: synchronous; the calling thread decodes too (it is the pool's first
 *     thread) and the batch is written straight into the caller's buffer.
 *   - vt_loader_submit / vt_loader_wait (vt_loader_start_prefetch): a producer thread owned by the
 *     loader decodes submitted batches, in order, into the loader's own host buffers (one per
 *     batch in flight plus the one being consumed) while the caller does something else.
 *
 * Threading: one consumer thread calls every function of a loader; the producer and the pool
 * threads are internal.  The logger is only called from the consumer's calls (warnings about
 * unreadable images are issued when their batch is consumed).
 *
 * Decoding.  Before augmentation each image is brought to a "base" size, the same whether it
 * comes from the file or from the cache: detection with augmentation, long side = imgsz (the
 * size mosaic and letterbox resize to, which then copy it unchanged); classification without
 * random resized crop, imgsz x imgsz.  JPEGs are decoded at a reduced DCT scale when the base
 * size is at most half the file's (vt_image_load_scaled), unless vt_loader_set_full_decode.  Detection
 * without augmentation (validation) and the random resized crop read the full image: the first
 * maps boxes back to original pixels, the second crops at the original resolution. */
#ifndef VT_LOADER_H
#define VT_LOADER_H

#include "core/core.h"
#include "core/threads.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "data/boxes.h"
#include "image/letterbox.h"

typedef struct vt_loader vt_loader;

/* The per-sample pipeline: what each sample carries besides its image, and so how it is
 * decoded and augmented.  A task's table names the one it trains with (lib/task/task.h). */
typedef enum vt_sample_kind {
    VT_SAMPLE_AUTO = 0,  /* the one of the dataset's task (classify, detect, segment,
                          * instance) */
    VT_SAMPLE_LABEL = 1, /* a class per image: resize or random crop, colour, flips, erasing */
    VT_SAMPLE_BOXES = 2, /* boxes: letterbox or mosaic, random affine, mixup, colour, flips */
    VT_SAMPLE_MASK = 3,  /* a class mask: polygons as boxes are, mask PNGs with their image */
    VT_SAMPLE_INSTANCES = 4 /* boxes as VT_SAMPLE_BOXES plus an instance-index map at 1/4 of
                             * the input (vt_loader_instances); needs instance polygons */
} vt_sample_kind;

typedef struct vt_loader_config {
    int imgsz, channels;
    int workers;               /* decoding threads, 0 = the calling thread only */
    const vt_aug_params *aug;  /* training augmentation (copied); NULL: none */
    const vt_logger *log;
    /* Optional allocator of the batches the producer fills (vt_loader_wait's *batch), e.g.
     * pinned memory a GPU uploads from by DMA; NULL: malloc/free.  host_alloc returns NULL on
     * failure (the loader then falls back to malloc).  Called with host_ctx, from the loader's
     * threads as well as the caller's. */
    void *(*host_alloc)(void *ctx, size_t bytes);
    void (*host_free)(void *ctx, void *p);
    void *host_ctx;
    vt_sample_kind sample;     /* AUTO (0): the dataset's task's */
} vt_loader_config;

vt_status vt_loader_create(vt_loader **out, const vt_dataset *ds, vt_split split,
                           const vt_loader_config *cfg);

/* Settings made after create and before the first fill or submit (they stay for the loader's
 * life).  Prefetch: start the producer thread; up to depth (1..8) batches may be in flight.
 * depth 0, or a loader with workers == 0, gets no thread (VT_OK; submit then fails). */
vt_status vt_loader_start_prefetch(vt_loader *L, int depth);
/* Keep base images in RAM up to `bytes` pixel bytes (> 0); an image that does not fit is not
 * cached (and read again on each use).  The cap is never exceeded. */
vt_status vt_loader_enable_cache(vt_loader *L, int64_t bytes);
/* 1: always decode JPEGs at full size (no vt_image_load_scaled), e.g. to measure it. */
void vt_loader_set_full_decode(vt_loader *L, int on);
/* Stops the producer (batches in flight are abandoned) and frees everything. */
void vt_loader_destroy(vt_loader *L);

/* Detection: allow mosaic (1, the default) or not (the last close_mosaic epochs).  Applies to
 * batches filled or submitted afterwards. */
void vt_loader_set_mosaic(vt_loader *L, int on);

/* Fill `batch` (channels x n_ok x imgsz x imgsz, CNHW) and `labels` with the images at
 * `indices` of the split.  Images that fail to decode are left out (a warning is logged once
 * per file) and *n_ok counts those packed.  Fails with VT_ERR_DATASET when none decodes.
 * `batch` must hold channels*n*imgsz*imgsz floats.  aug_seed: 0 disables augmentation (the
 * validation path: plain resize, or letterbox for detection).  VT_ERR_BAD_STATE while
 * submitted batches are outstanding.
 *
 * Classification: resize to imgsz (or a random resized crop when crop_scale_min < 1), HSV,
 * flips, random erasing; labels[k] = the class.
 * Detection: mosaic (probability `mosaic`) or letterbox, random affine, mixup, HSV, flips
 * (lib/data/augment.h); labels[k] = the dataset index of packed image k.  Mosaic and mixup
 * partners come from the same batch, like Ultralytics' buffer of recently loaded images: each
 * image of the batch is decoded once, then each sample draws its mosaic's 3 partners and its
 * mixup partner (with its own RNG) among the batch's images that decoded, itself included.  A
 * mosaic so costs one decode, not four, and the partners depend only on aug_seed and `indices`
 * (not on the workers, the prefetch or the cache); a training subset gets partners from the
 * subset without further ado.  An image that fails to decode is left out as above and is
 * nobody's partner.  Polygon segmentation and instance segmentation (VT_SAMPLE_INSTANCES,
 * whose maps vt_loader_instances gives) train through the same path; classification and
 * mask-PNG segmentation use only their own image. */
vt_status vt_loader_fill(vt_loader *L, const int *indices, int n, uint64_t aug_seed,
                         float *batch, int32_t *labels, int *n_ok);

/* Asynchronous loading (after vt_loader_start_prefetch).  Submit queues the batch of `indices` (copied) for
 * the producer; at most `depth` batches may be submitted and not yet waited for
 * (VT_ERR_BAD_STATE beyond).  Wait blocks until the oldest submitted batch is ready and hands
 * it over: *batch (CNHW as vt_loader_fill, channels*n_ok*imgsz*imgsz floats) and *labels stay
 * valid, and vt_loader_boxes refers to this batch, until the next vt_loader_wait,
 * vt_loader_drain or vt_loader_fill.  Its errors (as vt_loader_fill's: VT_ERR_DATASET when no
 * image decoded, warnings for unreadable images) are reported by the wait that consumes it. */
vt_status vt_loader_submit(vt_loader *L, const int *indices, int n, uint64_t aug_seed);
vt_status vt_loader_wait(vt_loader *L, const float **batch, const int32_t **labels, int *n_ok);
/* Abandon every submitted batch not yet waited for (the producer skips the images it has not
 * started) and return once the producer is idle; the buffers may then be reused.  Cheap when
 * nothing is outstanding. */
void vt_loader_drain(vt_loader *L);
/* Batches submitted and not yet waited for. */
int vt_loader_pending(const vt_loader *L);

/* Detection, after a fill or a wait: packed image k (0 <= k < n_ok) has *count boxes at *boxes
 * (corners in input pixels, score unused; owned by the loader, valid as the batch is) and the
 * letterbox geometry that maps them back to the original image (an augmented image has no
 * single original: its geometry is the identity). */
void vt_loader_boxes(const vt_loader *L, int k, const vt_det **boxes, int *count,
                     vt_letterbox *lb);

/* Segmentation, after a fill or a wait: the imgsz x imgsz class mask of packed image k (values
 * are class ids, or the dataset's ignore value for unlabelled and padding pixels); owned by the
 * loader, valid as the batch is; NULL for an index out of range. */
const uint8_t *vt_loader_mask(const vt_loader *L, int k);

/* Instance segmentation (VT_SAMPLE_INSTANCES), after a fill or a wait: the instance-index map
 * of packed image k, *w x *h = imgsz/4 x imgsz/4 (160 x 160 for 640; the loader refuses an
 * imgsz that is not a multiple of 4), row-major: value j + 1 where object j of
 * vt_loader_boxes(L, k, ...) covers the pixel, 0 elsewhere.  The boxes and the map hold the
 * same objects in the same order and count: a box dropped by augmentation (out of view, too
 * small, a sliver) has no value in the map, and every value j + 1 lies inside box j (scaled
 * by 1/4).  The outlines are rasterised after all augmentation (mosaic, random affine, mixup,
 * whose two images' objects both appear, flips; or the letterbox of validation): the final
 * input-pixel polygon of each part scaled by 1/4, a map pixel belonging to it when its centre
 * is inside (seg_mask.h's fill); the objects are painted in descending area order so that a
 * smaller one lies on top (Ultralytics' overlap_mask).  An object's map may be empty where it
 * is thinner than a map pixel.  Deterministic as the other pipelines: the same aug_seed and
 * indices give the same boxes and maps whatever the workers, the prefetch and the cache.
 * Owned by the loader, valid as the batch is; NULL (and *w = *h = 0) for an index out of
 * range or another pipeline.  w and h may be NULL. */
const uint16_t *vt_loader_instances(const vt_loader *L, int k, int *w, int *h);

/* Synthetic targets, for timing a task's training step without a dataset (the estimator's
 * calibration): a loader of pipeline `kind` (boxes, a class mask or instances) at `imgsz`
 * (at least 16; instances: a multiple of 4) with no dataset, whose only fill is
 * vt_loader_fill_synthetic.  Free with vt_loader_destroy. */
vt_status vt_loader_create_synthetic(vt_loader **out, vt_sample_kind kind, int imgsz);
/* The targets of n images as a fill would leave them (no pixels): each image 1 to 8 objects
 * of random classes below `classes` (1..255), boxes of sides 1/16 to 1/2 of imgsz inside the
 * image; a class mask of 0 with each box painted in its class; an instance map with each box
 * (the larger first).  vt_loader_boxes, vt_loader_mask and vt_loader_instances then refer to
 * them.  The same seed gives the same targets.  VT_ERR_BAD_STATE for a dataset's loader. */
vt_status vt_loader_fill_synthetic(vt_loader *L, int n, int classes, uint64_t seed);

/* The training subset of `fraction` (0..1) of n images: the first round(fraction * n) (at least
 * 2, at most n) of a permutation seeded by `seed`, sorted; out (n ints) gets them and the
 * count is returned.  fraction >= 1 (or n <= 2) gives 0..n-1. */
int vt_loader_pick_subset(int n, double fraction, uint64_t seed, int *out);

/* The RAM cache so far: images held and their pixel bytes (0, 0 without a cache). */
void vt_loader_cache_stats(const vt_loader *L, int *images, int64_t *bytes);

#endif
