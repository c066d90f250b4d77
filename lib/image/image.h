/* Private image I/O and resampling (libpng, libjpeg-turbo). */
#ifndef VT_IMAGE_H
#define VT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* 8-bit interleaved pixels, rows tightly packed (stride = w*c). c is 1 (gray) or 3 (RGB). */
typedef struct vt_image {
    int w, h, c;
    uint8_t *data;
} vt_image;

/* Decode a PNG or JPEG file (recognised by its content, not its extension).  Gray and
 * gray+alpha give c=1; RGB, RGBA and palette give c=3 (alpha dropped); 16-bit is reduced to
 * 8-bit.  Errors: VT_ERR_NOT_FOUND, VT_ERR_IO, VT_ERR_FORMAT ("path: corrupt PNG: <why>",
 * "path: truncated JPEG", "path: not a PNG or JPEG image").  Never aborts on bad data. */
vt_status vt_image_load(const char *path, vt_image *out);
/* The same from memory; `name` is used in error messages. */
vt_status vt_image_decode(const void *buf, size_t size, const char *name, vt_image *out);
void vt_image_free(vt_image *img); /* frees data, zeroes the struct; NULL ok */

/* Decode for a caller that will resize the result to w x h (keep_aspect = 0) or to fit inside
 * w x h with its aspect ratio kept (keep_aspect = 1: scale min(w/W, h/H), the letterbox's).
 * A W x H JPEG is decoded with libjpeg-turbo's DCT scaling at 1/d, d the largest of 8, 4, 2 for
 * which that resize is still a downscale or 1:1 (ceil(W/d) x ceil(H/d) >= the resize target),
 * which skips most of the IDCT, upsampling and colour work; so the result is between the target
 * size and twice it (or the full size when the target is over half the source).  PNG, and
 * w <= 0 or h <= 0, decode at full size.  Errors as vt_image_load. */
vt_status vt_image_load_scaled(const char *path, int w, int h, int keep_aspect, vt_image *out);
vt_status vt_image_decode_scaled(const void *buf, size_t size, const char *name, int w, int h,
                                 int keep_aspect, vt_image *out);
/* vt_image_load_scaled into a buffer kept from call to call (no fresh pages for every image):
 * *buf (of *cap bytes; NULL and 0 at first) takes the pixels when it is large enough, else it
 * is replaced by a larger allocation (*buf, *cap updated).  On success out->data == *buf: the
 * caller frees *buf (once) when done with it, not out.  On failure *buf is kept. */
vt_status vt_image_load_scaled_into(const char *path, int w, int h, int keep_aspect,
                                    uint8_t **buf, size_t *cap, vt_image *out);

/* Resize to w x h with the same channel count: bilinear when enlarging, area-averaging
 * (box filter) when shrinking, so small outputs are not aliased. */
vt_status vt_image_resize(const vt_image *src, int w, int h, vt_image *dst);

/* Write 8-bit pixels (c = 1, 3 or 4; rows `stride` bytes apart) as a PNG, atomically
 * (temporary file + rename). */
vt_status vt_image_save_png(const char *path, const uint8_t *pixels, int w, int h, int c,
                            size_t stride);
/* The same into a new file (VT_ERR_IO if path exists), written in place without a temporary
 * or fsync (for generators filling a fresh folder, where a thousand fsyncs cost seconds), at
 * zlib level `level` (0..9; -1: libpng's default).  A failed write removes the file. */
vt_status vt_image_create_png(const char *path, const uint8_t *pixels, int w, int h, int c,
                              size_t stride, int level);

/* Convert to float planes scaled to 0..1: channel k of the output goes to dst + k*chan_stride,
 * row-major w*h.  want_c is 1 or 3: gray->RGB replicates, RGB->gray uses the BT.601 luma.
 * If flip is non-zero the image is mirrored horizontally. */
void vt_image_to_float(const vt_image *img, int want_c, int flip, float *dst,
                       size_t chan_stride);

#endif
