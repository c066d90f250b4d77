/* TFRecord files (TensorFlow's record framing, read by TensorBoard) and the few protobuf
 * encodings their Event messages need.
 *
 * A record is   u64 length (little-endian) | u32 masked CRC32C of those 8 bytes |
 *               data (length bytes)        | u32 masked CRC32C of the data
 * with mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
 *
 * The writer appends each whole record with a single write() to an O_APPEND descriptor, so a
 * process killed at any moment leaves complete records followed by at most one partial record,
 * which readers (ours and TensorBoard's) stop at. */
#ifndef VT_TFRECORD_H
#define VT_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): continue `crc` (0 to start) over n
 * bytes.  crc32c("123456789") = 0xE3069283. */
uint32_t vt_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord's masked CRC. */
static inline uint32_t vt_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---- protobuf encoding (a growing byte buffer) ---- */

/* Appends never fail on the spot: an allocation failure sets `failed` and later appends do
 * nothing, so a message is built with plain calls and checked once. */
typedef struct vt_pbuf {
    uint8_t *p;
    size_t n, cap;
    int failed;
} vt_pbuf;

void vt_pb_free(vt_pbuf *b);
void vt_pb_raw(vt_pbuf *b, const void *data, size_t n);
void vt_pb_varint(vt_pbuf *b, uint64_t v);
/* Fields: key (field number << 3 | wire type) then the value.  Integers are varints (int64 as
 * two's complement, 10 bytes when negative), doubles fixed64, floats fixed32, strings, bytes
 * and sub-messages length-delimited. */
void vt_pb_int(vt_pbuf *b, int field, int64_t v);
void vt_pb_double(vt_pbuf *b, int field, double v);
void vt_pb_float(vt_pbuf *b, int field, float v);
void vt_pb_bytes(vt_pbuf *b, int field, const void *data, size_t n);
void vt_pb_string(vt_pbuf *b, int field, const char *s);

/* ---- records ---- */

/* Append the framed record of `data` to b. */
void vt_tfrecord_frame(vt_pbuf *b, const void *data, size_t n);

typedef enum vt_tfrecord_result {
    VT_TFR_RECORD = 0,    /* a whole record with good CRCs: *data, *n set, *off advanced */
    VT_TFR_END = 1,       /* *off is the end of the buffer                              */
    VT_TFR_TRUNCATED = 2, /* the buffer ends inside a record (*off unchanged)           */
    VT_TFR_CORRUPT = 3    /* a CRC does not match (*off unchanged)                      */
} vt_tfrecord_result;
/* The record at *off of buf[0..len). */
vt_tfrecord_result vt_tfrecord_next(const uint8_t *buf, size_t len, size_t *off,
                                    const uint8_t **data, size_t *n);

/* An append-only record file. */
typedef struct vt_tfrecord_file {
    int fd;      /* -1 when closed */
    char *path;
} vt_tfrecord_file;

/* Create `path` (O_EXCL: an existing file is VT_ERR_IO with errno EEXIST kept in errno). */
vt_status vt_tfrecord_create(vt_tfrecord_file *f, const char *path);
/* One record, in one write() (retried only for the part a signal or a full disk left out). */
vt_status vt_tfrecord_write(vt_tfrecord_file *f, const void *data, size_t n);
/* fsync. */
vt_status vt_tfrecord_sync(vt_tfrecord_file *f);
void vt_tfrecord_close(vt_tfrecord_file *f);

/* ---- TensorBoard's Event messages (tensorboard/compat/proto/event.proto, summary.proto) ---- */

/* The first record of an events file: Event{wall_time, file_version "brain.Event:2"}. */
void vt_tfevent_file_version(vt_pbuf *b, double wall_time);
/* Event{wall_time, step, summary{value{tag, simple_value}...}} for n scalars (NaNs skipped). */
void vt_tfevent_scalars(vt_pbuf *b, double wall_time, int64_t step, const char *const *tags,
                        const double *values, int n);
/* Event{wall_time, step, summary{value{tag, image{height, width, colorspace, PNG}}}}. */
void vt_tfevent_image(vt_pbuf *b, double wall_time, int64_t step, const char *tag, int width,
                      int height, int colorspace, const void *png, size_t png_bytes);
/* Event{wall_time, step, session_log{status START}}: TensorBoard drops the events of earlier
 * sessions at steps >= step (a resumed run replaying steps after a kill). */
void vt_tfevent_session_start(vt_pbuf *b, double wall_time, int64_t step);

#endif
