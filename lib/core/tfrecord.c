/* TFRecord framing, CRC32C and the protobuf encodings of TensorBoard's events (tfrecord.h). */
#include "core/tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bit by bit: no table to build or share between threads, and the records are small (a
 * plot image, tens of kilobytes, is the largest and is written once per run). */
uint32_t vt_crc32c(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* ---- protobuf ---- */

void vt_pb_free(vt_pbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void vt_pb_raw(vt_pbuf *b, const void *data, size_t n)
{
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}

void vt_pb_varint(vt_pbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    int k = 0;
    do {
        tmp[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[k] |= 0x80;
        k++;
    } while (v);
    vt_pb_raw(b, tmp, (size_t)k);
}

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

static void key(vt_pbuf *b, int field, int wire) { vt_pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }

static void le(vt_pbuf *b, uint64_t v, int bytes)
{
    uint8_t tmp[8];
    for (int i = 0; i < bytes; i++) tmp[i] = (uint8_t)(v >> (8 * i));
    vt_pb_raw(b, tmp, (size_t)bytes);
}

void vt_pb_int(vt_pbuf *b, int field, int64_t v)
{
    key(b, field, WIRE_VARINT);
    vt_pb_varint(b, (uint64_t)v);
}

void vt_pb_double(vt_pbuf *b, int field, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    key(b, field, WIRE_FIXED64);
    le(b, u, 8);
}

void vt_pb_float(vt_pbuf *b, int field, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    key(b, field, WIRE_FIXED32);
    le(b, u, 4);
}

void vt_pb_bytes(vt_pbuf *b, int field, const void *data, size_t n)
{
    key(b, field, WIRE_LEN);
    vt_pb_varint(b, n);
    vt_pb_raw(b, data, n);
}

void vt_pb_string(vt_pbuf *b, int field, const char *s) { vt_pb_bytes(b, field, s, strlen(s)); }

/* ---- records ---- */

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void vt_tfrecord_frame(vt_pbuf *b, const void *data, size_t n)
{
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    vt_pb_raw(b, len, 8);
    le(b, vt_crc32c_mask(vt_crc32c(0, len, 8)), 4);
    vt_pb_raw(b, data, n);
    le(b, vt_crc32c_mask(vt_crc32c(0, data, n)), 4);
}

vt_tfrecord_result vt_tfrecord_next(const uint8_t *buf, size_t len, size_t *off,
                                    const uint8_t **data, size_t *n)
{
    size_t o = *off;
    if (o >= len) return VT_TFR_END;
    if (len - o < 12) return VT_TFR_TRUNCATED;
    const uint8_t *h = buf + o;
    if (vt_crc32c_mask(vt_crc32c(0, h, 8)) != rd32(h + 8)) return VT_TFR_CORRUPT;
    uint64_t dl = (uint64_t)rd32(h) | (uint64_t)rd32(h + 4) << 32;
    if (dl > len - o - 12 || len - o - 12 - dl < 4) return VT_TFR_TRUNCATED;
    const uint8_t *d = h + 12;
    if (vt_crc32c_mask(vt_crc32c(0, d, (size_t)dl)) != rd32(d + dl)) return VT_TFR_CORRUPT;
    *data = d;
    *n = (size_t)dl;
    *off = o + 16 + (size_t)dl;
    return VT_TFR_RECORD;
}

/* ---- files ---- */

vt_status vt_tfrecord_create(vt_tfrecord_file *f, const char *path)
{
    f->fd = -1;
    f->path = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        vt_status st = vt_fail(VT_ERR_IO, "%s: cannot create: %s", path, strerror(e));
        errno = e;
        return st;
    }
    f->path = vt_strdup(path);
    if (!f->path) {
        close(fd);
        return VT_ERR_OUT_OF_MEMORY;
    }
    f->fd = fd;
    return VT_OK;
}

vt_status vt_tfrecord_write(vt_tfrecord_file *f, const void *data, size_t n)
{
    if (f->fd < 0) return vt_fail(VT_ERR_BAD_STATE, "record file is closed");
    vt_pbuf b = {0};
    vt_tfrecord_frame(&b, data, n);
    if (b.failed) {
        vt_pb_free(&b);
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: no memory for a record of %zu bytes", f->path, n);
    }
    size_t done = 0;
    while (done < b.n) {
        ssize_t w = write(f->fd, b.p + done, b.n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            vt_status st = vt_fail(VT_ERR_IO, "%s: write failed: %s", f->path,
                                   w < 0 ? strerror(errno) : "no space written");
            vt_pb_free(&b);
            return st;
        }
        done += (size_t)w;
    }
    vt_pb_free(&b);
    return VT_OK;
}

vt_status vt_tfrecord_sync(vt_tfrecord_file *f)
{
    if (f->fd < 0) return vt_fail(VT_ERR_BAD_STATE, "record file is closed");
    if (fsync(f->fd) != 0) return vt_fail(VT_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno));
    return VT_OK;
}

void vt_tfrecord_close(vt_tfrecord_file *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

/* ---- events ----
 * Field numbers of tensorboard/compat/proto/event.proto and summary.proto. */
enum {
    EVENT_WALL_TIME = 1, EVENT_STEP = 2, EVENT_FILE_VERSION = 3, EVENT_SUMMARY = 5,
    EVENT_SESSION_LOG = 7,
    SUMMARY_VALUE = 1,
    VALUE_TAG = 1, VALUE_SIMPLE = 2, VALUE_IMAGE = 4,
    IMAGE_HEIGHT = 1, IMAGE_WIDTH = 2, IMAGE_COLORSPACE = 3, IMAGE_ENCODED = 4,
    SESSION_STATUS = 1, SESSION_START = 1
};

static void event_head(vt_pbuf *b, double wall_time, int64_t step)
{
    vt_pb_double(b, EVENT_WALL_TIME, wall_time);
    if (step) vt_pb_int(b, EVENT_STEP, step); /* proto3: a zero is left out */
}

/* A length-delimited field whose content is `inner`; frees inner. */
static void nest(vt_pbuf *b, int field, vt_pbuf *inner)
{
    if (inner->failed) b->failed = 1;
    vt_pb_bytes(b, field, inner->p, inner->n);
    vt_pb_free(inner);
}

void vt_tfevent_file_version(vt_pbuf *b, double wall_time)
{
    event_head(b, wall_time, 0);
    vt_pb_string(b, EVENT_FILE_VERSION, "brain.Event:2");
}

void vt_tfevent_scalars(vt_pbuf *b, double wall_time, int64_t step, const char *const *tags,
                        const double *values, int n)
{
    vt_pbuf sum = {0};
    for (int i = 0; i < n; i++) {
        if (values[i] != values[i]) continue; /* NaN: no value at this step */
        vt_pbuf v = {0};
        vt_pb_string(&v, VALUE_TAG, tags[i]);
        vt_pb_float(&v, VALUE_SIMPLE, (float)values[i]);
        nest(&sum, SUMMARY_VALUE, &v);
    }
    event_head(b, wall_time, step);
    nest(b, EVENT_SUMMARY, &sum);
}

void vt_tfevent_image(vt_pbuf *b, double wall_time, int64_t step, const char *tag, int width,
                      int height, int colorspace, const void *png, size_t png_bytes)
{
    vt_pbuf img = {0}, v = {0}, sum = {0};
    vt_pb_int(&img, IMAGE_HEIGHT, height);
    vt_pb_int(&img, IMAGE_WIDTH, width);
    vt_pb_int(&img, IMAGE_COLORSPACE, colorspace);
    vt_pb_bytes(&img, IMAGE_ENCODED, png, png_bytes);
    vt_pb_string(&v, VALUE_TAG, tag);
    nest(&v, VALUE_IMAGE, &img);
    nest(&sum, SUMMARY_VALUE, &v);
    event_head(b, wall_time, step);
    nest(b, EVENT_SUMMARY, &sum);
}

void vt_tfevent_session_start(vt_pbuf *b, double wall_time, int64_t step)
{
    vt_pbuf s = {0};
    vt_pb_int(&s, SESSION_STATUS, SESSION_START);
    event_head(b, wall_time, step);
    nest(b, EVENT_SESSION_LOG, &s);
}
