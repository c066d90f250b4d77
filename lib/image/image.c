/* Image decoding (PNG via libpng, JPEG via libjpeg-turbo), resampling and PNG writing.
 *
 * Both codecs' default error handlers print to stderr and end the process, which an embeddable
 * library must never do, so every codec call runs under our own handlers: errors longjmp back to
 * the decoding function and become a vt_status, warnings are recorded instead of printed.
 *
 * setjmp rules: the function that calls setjmp() keeps nothing it modifies afterwards in its own
 * locals; everything that changes while the codec runs lives in a context struct owned by the
 * caller, so no value is indeterminate after a longjmp (C11 7.13.2.1). */
#include "image/image.h"

#include "core/atomic_file.h"
#include "core/buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>
/* jpeglib.h needs FILE and size_t declared first. */
#include <jpeglib.h>
#include <jerror.h>

/* Larger images are refused before any pixel memory is allocated, so a corrupt or hostile
 * header cannot make us allocate gigabytes.  2^28 pixels is 8192 x 32768. */
#define VT_IMAGE_MAX_SIDE 32768
#define VT_IMAGE_MAX_PIXELS ((uint64_t)1 << 28)
/* No PNG or JPEG we can decode within the pixel limit is anywhere near this. */
#define VT_IMAGE_MAX_FILE ((uint64_t)1 << 31)

static const uint8_t vtpng_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static vt_status check_dims(const char *name, const char *kind, uint64_t w, uint64_t h)
{
    if (w == 0 || h == 0)
        return vt_fail(VT_ERR_FORMAT, "%s: corrupt %s: zero width or height", name, kind);
    if (w > VT_IMAGE_MAX_SIDE || h > VT_IMAGE_MAX_SIDE || w * h > VT_IMAGE_MAX_PIXELS)
        return vt_fail(VT_ERR_FORMAT,
                       "%s: %s image too large (%llux%llu; at most %d pixels per side and %llu "
                       "pixels in all)",
                       name, kind, (unsigned long long)w, (unsigned long long)h,
                       VT_IMAGE_MAX_SIDE, (unsigned long long)VT_IMAGE_MAX_PIXELS);
    return VT_OK;
}

void vt_image_free(vt_image *img)
{
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* ---- PNG decoding ------------------------------------------------------------------------ */

typedef struct vtpng_rd {
    const uint8_t *buf;
    size_t size, pos;
    char msg[256];
    uint8_t *data;  /* decoded rows, owned by the caller of vtpng_decode_run */
    png_bytep *rows;
    int w, h, c;
} vtpng_rd;

static void vtpng_on_error(png_structp png, png_const_charp msg)
{
    vtpng_rd *rd = png_get_error_ptr(png);
    snprintf(rd->msg, sizeof rd->msg, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

/* libpng warns about harmless oddities (bad ancillary chunk CRCs, unknown sRGB profiles) that
 * do not affect pixels; they are not worth failing or logging over. */
static void vtpng_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void vtpng_on_read(png_structp png, png_bytep out, png_size_t n)
{
    vtpng_rd *rd = png_get_io_ptr(png);
    if (n > rd->size - rd->pos) png_error(png, "truncated file");
    memcpy(out, rd->buf + rd->pos, n);
    rd->pos += n;
}

static vt_status vtpng_decode_run(vtpng_rd *rd, const char *name)
{
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, rd, vtpng_on_error,
                                             vtpng_on_warning);
    if (!png) return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory decoding PNG", name);
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory decoding PNG", name);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        return vt_fail(VT_ERR_FORMAT, "%s: corrupt PNG: %s", name, rd->msg);
    }
    png_set_read_fn(png, rd, vtpng_on_read);
    png_read_info(png, info);

    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
    vt_status st = check_dims(name, "PNG", w, h);
    if (st != VT_OK) {
        png_destroy_read_struct(&png, &info, NULL);
        return st;
    }
    /* Scaling (not truncating) 16-bit samples keeps 65535 -> 255 and rounds correctly. */
    if (depth == 16) png_set_scale_16(png);
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    /* Alpha (a real channel, or tRNS expanded by libpng) is dropped below rather than by
     * png_set_strip_alpha, so every combination of transforms ends in a layout we check. */
    int ch = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (png_get_bit_depth(png, info) != 8 || ch < 1 || ch > 4 || rowbytes != (size_t)w * ch) {
        png_destroy_read_struct(&png, &info, NULL);
        return vt_fail(VT_ERR_FORMAT, "%s: unsupported PNG layout (bit depth %d, colour type %d)",
                       name, depth, ctype);
    }
    rd->data = malloc(rowbytes * h);
    rd->rows = malloc(sizeof(png_bytep) * h);
    if (!rd->data || !rd->rows) {
        png_destroy_read_struct(&png, &info, NULL);
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory for a %ux%u PNG", name,
                       (unsigned)w, (unsigned)h);
    }
    for (png_uint_32 y = 0; y < h; y++) rd->rows[y] = rd->data + (size_t)y * rowbytes;
    png_read_image(png, rd->rows);
    /* Reading to IEND verifies the CRCs of everything after the pixels: a file cut short after
     * its image data is still a damaged file. */
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);

    int c = ch <= 2 ? 1 : 3;
    if (c != ch) {
        /* In place: the destination index never passes the source index. */
        size_t n = (size_t)w * h;
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < c; k++) rd->data[i * c + k] = rd->data[i * ch + k];
    }
    rd->w = (int)w;
    rd->h = (int)h;
    rd->c = c;
    return VT_OK;
}

static vt_status decode_png(const uint8_t *buf, size_t size, const char *name, vt_image *out)
{
    vtpng_rd rd;
    memset(&rd, 0, sizeof rd);
    rd.buf = buf;
    rd.size = size;
    vt_status st = vtpng_decode_run(&rd, name);
    free(rd.rows);
    if (st != VT_OK) {
        free(rd.data);
        return st;
    }
    out->w = rd.w;
    out->h = rd.h;
    out->c = rd.c;
    out->data = rd.data;
    return VT_OK;
}

/* ---- JPEG decoding ----------------------------------------------------------------------- */

typedef struct jpg_rd {
    struct jpeg_error_mgr err; /* first, so libjpeg's err pointer is also ours */
    struct jpeg_decompress_struct cinfo;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    int truncated;
    int created;
    uint8_t *data;
    int w, h, c;
    int want_w, want_h, keep_aspect; /* the caller's resize target (0: decode at full size) */
    uint8_t *reuse;                  /* decode into this (reuse_cap bytes) when large enough */
    size_t reuse_cap;
} jpg_rd;

static void jpg_on_error(j_common_ptr cinfo)
{
    jpg_rd *rd = (jpg_rd *)cinfo->err;
    cinfo->err->format_message(cinfo, rd->msg);
    longjmp(rd->jb, 1);
}

/* Warnings (level < 0) are mostly recoverable data glitches that decode to plausible pixels,
 * except running out of data: libjpeg then pads with a fake EOI and returns grey garbage, which
 * must not silently become a training image. */
static void jpg_on_message(j_common_ptr cinfo, int level)
{
    jpg_rd *rd = (jpg_rd *)cinfo->err;
    if (level >= 0) return; /* trace messages */
    cinfo->err->num_warnings++;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        rd->truncated = 1;
        longjmp(rd->jb, 1);
    }
}

static void jpg_on_output(j_common_ptr cinfo)
{
    (void)cinfo;
}

/* The largest d in {8, 4, 2} such that resizing the image decoded at 1/d (libjpeg-turbo's DCT
 * scaling: ceil(W/d) x ceil(H/d)) to the caller's target is still a downscale or 1:1, so the
 * reduced decode loses nothing the resize would have kept; 1 when there is none. */
static int jpg_scale_denom(uint64_t W, uint64_t H, int w, int h, int keep_aspect)
{
    if (w <= 0 || h <= 0) return 1;
    for (int d = 8; d >= 2; d /= 2) {
        int wide = W >= (uint64_t)w * d, tall = H >= (uint64_t)h * d;
        /* keep_aspect: the resize scale is min(w/W, h/H), at most 1/d when either side fits */
        if (keep_aspect ? (wide || tall) : (wide && tall)) return d;
    }
    return 1;
}

static vt_status jpg_decode_run(jpg_rd *rd, const uint8_t *buf, size_t size, const char *name)
{
    struct jpeg_decompress_struct *ci = &rd->cinfo;
    ci->err = jpeg_std_error(&rd->err);
    rd->err.error_exit = jpg_on_error;
    rd->err.emit_message = jpg_on_message;
    rd->err.output_message = jpg_on_output;
    if (setjmp(rd->jb)) {
        if (rd->truncated) return vt_fail(VT_ERR_FORMAT, "%s: truncated JPEG", name);
        return vt_fail(VT_ERR_FORMAT, "%s: corrupt JPEG: %s", name, rd->msg);
    }
    jpeg_create_decompress(ci);
    rd->created = 1;
    jpeg_mem_src(ci, buf, (unsigned long)size);
    jpeg_read_header(ci, TRUE);

    vt_status st = check_dims(name, "JPEG", ci->image_width, ci->image_height);
    if (st != VT_OK) return st;
    int c;
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
        ci->out_color_space = JCS_GRAYSCALE;
        c = 1;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        return vt_fail(VT_ERR_FORMAT,
                       "%s: CMYK JPEG images are not supported (convert the image to RGB)", name);
    default:
        ci->out_color_space = JCS_RGB;
        c = 3;
        break;
    }
    int d = jpg_scale_denom(ci->image_width, ci->image_height, rd->want_w, rd->want_h,
                            rd->keep_aspect);
    ci->scale_num = 1;
    ci->scale_denom = (unsigned)d;
    jpeg_start_decompress(ci);
    unsigned ew = (ci->image_width + (unsigned)d - 1) / (unsigned)d;
    unsigned eh = (ci->image_height + (unsigned)d - 1) / (unsigned)d;
    if (ci->output_components != c || ci->output_width != ew || ci->output_height != eh)
        return vt_fail(VT_ERR_FORMAT, "%s: unsupported JPEG layout (%d components)", name,
                       ci->output_components);
    size_t rowbytes = (size_t)ci->output_width * c;
    rd->data = rd->reuse && rd->reuse_cap >= rowbytes * ci->output_height
                   ? rd->reuse
                   : malloc(rowbytes * ci->output_height);
    if (!rd->data)
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory for a %ux%u JPEG", name,
                       (unsigned)ci->output_width, (unsigned)ci->output_height);
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = rd->data + (size_t)ci->output_scanline * rowbytes;
        /* The memory source never suspends, so 0 rows means the decoder is stuck. */
        if (jpeg_read_scanlines(ci, &row, 1) != 1)
            return vt_fail(VT_ERR_FORMAT, "%s: corrupt JPEG: decoder made no progress", name);
    }
    jpeg_finish_decompress(ci);
    rd->w = (int)ci->output_width;
    rd->h = (int)ci->output_height;
    rd->c = c;
    return VT_OK;
}

/* reuse (reuse_cap bytes, may be NULL): decode into it when large enough (out->data is then
 * reuse), else into a new allocation. */
static vt_status decode_jpeg(const uint8_t *buf, size_t size, const char *name, int want_w,
                             int want_h, int keep_aspect, uint8_t *reuse, size_t reuse_cap,
                             vt_image *out)
{
    jpg_rd *rd = calloc(1, sizeof *rd); /* jmp_buf + cinfo: keep big state off small stacks */
    if (!rd) return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory decoding JPEG", name);
    rd->want_w = want_w;
    rd->want_h = want_h;
    rd->keep_aspect = keep_aspect;
    rd->reuse = reuse;
    rd->reuse_cap = reuse_cap;
    vt_status st = jpg_decode_run(rd, buf, size, name);
    if (rd->created) jpeg_destroy_decompress(&rd->cinfo);
    if (st == VT_OK) {
        out->w = rd->w;
        out->h = rd->h;
        out->c = rd->c;
        out->data = rd->data;
    } else if (rd->data != reuse) {
        free(rd->data);
    }
    free(rd);
    return st;
}

/* ---- decode entry points ----------------------------------------------------------------- */

vt_status vt_image_decode(const void *buf, size_t size, const char *name, vt_image *out)
{
    return vt_image_decode_scaled(buf, size, name, 0, 0, 0, out);
}

static vt_status decode_any(const void *buf, size_t size, const char *name, int w, int h,
                            int keep_aspect, uint8_t *reuse, size_t reuse_cap, vt_image *out);

vt_status vt_image_decode_scaled(const void *buf, size_t size, const char *name, int w, int h,
                                 int keep_aspect, vt_image *out)
{
    return decode_any(buf, size, name, w, h, keep_aspect, NULL, 0, out);
}

static vt_status decode_any(const void *buf, size_t size, const char *name, int w, int h,
                            int keep_aspect, uint8_t *reuse, size_t reuse_cap, vt_image *out)
{
    if (!out) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_decode: out is NULL");
    memset(out, 0, sizeof *out);
    if (!name) name = "<memory>";
    if (!buf && size) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: buffer is NULL", name);
    const uint8_t *b = buf;
    if (size == 0) return vt_fail(VT_ERR_FORMAT, "%s: empty file", name);
    if (size >= 8 && memcmp(b, vtpng_magic, 8) == 0) return decode_png(b, size, name, out);
    if (size >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return decode_jpeg(b, size, name, w, h, keep_aspect, reuse, reuse_cap, out);
    if (size < 8 && memcmp(b, vtpng_magic, size) == 0)
        return vt_fail(VT_ERR_FORMAT, "%s: corrupt PNG: truncated file", name);
    if (size < 3 && b[0] == 0xFF && (size < 2 || b[1] == 0xD8))
        return vt_fail(VT_ERR_FORMAT, "%s: truncated JPEG", name);
    return vt_fail(VT_ERR_FORMAT, "%s: not a PNG or JPEG image", name);
}

vt_status vt_image_load(const char *path, vt_image *out)
{
    return vt_image_load_scaled(path, 0, 0, 0, out);
}

static vt_status load_any(const char *path, int w, int h, int keep_aspect, uint8_t *reuse,
                          size_t reuse_cap, vt_image *out);

vt_status vt_image_load_scaled(const char *path, int w, int h, int keep_aspect, vt_image *out)
{
    return load_any(path, w, h, keep_aspect, NULL, 0, out);
}

vt_status vt_image_load_scaled_into(const char *path, int w, int h, int keep_aspect,
                                    uint8_t **buf, size_t *cap, vt_image *out)
{
    if (!buf || !cap) {
        if (out) memset(out, 0, sizeof *out);
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_load_scaled_into: NULL argument");
    }
    vt_status st = load_any(path, w, h, keep_aspect, *buf, *cap, out);
    if (st || out->data == *buf) return st;
    /* a new allocation (a PNG, or more pixels than *buf holds): it becomes the buffer */
    free(*buf);
    *buf = out->data;
    *cap = (size_t)out->w * out->h * out->c;
    return VT_OK;
}

static vt_status load_any(const char *path, int w, int h, int keep_aspect, uint8_t *reuse,
                          size_t reuse_cap, vt_image *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!path || !out) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_load: NULL argument");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) return vt_fail(VT_ERR_NOT_FOUND, "%s: no such file", path);
        return vt_fail(VT_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return vt_fail(VT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return vt_fail(VT_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > VT_IMAGE_MAX_FILE) {
        close(fd);
        return vt_fail(VT_ERR_FORMAT, "%s: file too large for an image (%lld bytes)", path,
                       (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory reading %zu bytes", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return vt_fail(VT_ERR_IO, "%s: read error: %s", path, strerror(e));
        }
        if (r == 0) break; /* the file shrank while we read it: decode what is there */
        got += (size_t)r;
    }
    close(fd);
    vt_status st = decode_any(buf, got, path, w, h, keep_aspect, reuse, reuse_cap, out);
    free(buf);
    return st;
}

/* ---- resampling -------------------------------------------------------------------------- */

/* Separable resampling: for each output index along one axis, `n` source taps starting at
 * `start` with weights summing to 1.  Precomputed once per axis so the pixel loops do no
 * division, rounding or allocation. */
typedef struct rs_axis {
    int *start;
    int *n;
    float *w; /* taps * dst entries */
    int taps;
} rs_axis;

static void rs_axis_free(rs_axis *a)
{
    free(a->start);
    free(a->n);
    free(a->w);
}

static vt_status rs_axis_init(rs_axis *a, int src, int dst)
{
    memset(a, 0, sizeof *a);
    if (dst == src || src == 1)
        a->taps = 1;
    else if (dst > src)
        a->taps = 2;
    else
        a->taps = (int)ceil((double)src / dst) + 1;
    a->start = vt_malloc(sizeof(int) * dst);
    a->n = vt_malloc(sizeof(int) * dst);
    a->w = vt_calloc((size_t)dst * a->taps, sizeof(float));
    if (!a->start || !a->n || !a->w) {
        rs_axis_free(a);
        return VT_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < dst; i++) {
        float *w = a->w + (size_t)i * a->taps;
        if (a->taps == 1) {
            a->start[i] = src == 1 ? 0 : i;
            a->n[i] = 1;
            w[0] = 1.0f;
        } else if (dst > src) {
            /* Bilinear with pixel centres aligned (x + 0.5), clamped at the borders. */
            double sx = (i + 0.5) * src / dst - 0.5;
            int i0 = (int)floor(sx);
            if (i0 < 0) i0 = 0;
            if (i0 > src - 2) i0 = src - 2;
            double f = sx - i0;
            if (f < 0) f = 0;
            if (f > 1) f = 1;
            a->start[i] = i0;
            a->n[i] = 2;
            w[0] = (float)(1.0 - f);
            w[1] = (float)f;
        } else {
            /* Box filter: output i covers source [x0, x1); each source pixel weighs by the
             * length of its overlap, so fractional scale factors are exact. */
            double scale = (double)src / dst;
            double x0 = i * scale, x1 = (i + 1) * scale;
            int j0 = (int)floor(x0), j1 = (int)ceil(x1);
            if (j1 > src) j1 = src;
            if (j1 - j0 > a->taps) j1 = j0 + a->taps; /* rounding guard; cannot happen */
            double sum = 0;
            for (int j = j0; j < j1; j++) {
                double lo = j > x0 ? j : x0, hi = j + 1 < x1 ? j + 1 : x1;
                double ov = hi > lo ? hi - lo : 0;
                w[j - j0] = (float)ov;
                sum += ov;
            }
            for (int j = j0; j < j1; j++) w[j - j0] = (float)(w[j - j0] / sum);
            a->start[i] = j0;
            a->n[i] = j1 - j0;
        }
    }
    return VT_OK;
}

static inline uint8_t to_u8(float v)
{
    v += 0.5f;
    if (v <= 0.0f) return 0;
    if (v >= 255.0f) return 255;
    return (uint8_t)v;
}

vt_status vt_image_resize(const vt_image *src, int w, int h, vt_image *dst)
{
    if (!src || !dst || !src->data)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_resize: NULL argument");
    int c = src->c;
    if (c < 1 || c > 4 || src->w < 1 || src->h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_resize: bad source image %dx%dx%d",
                       src->w, src->h, c);
    if (w < 1 || h < 1 || w > VT_IMAGE_MAX_SIDE || h > VT_IMAGE_MAX_SIDE ||
        (uint64_t)w * h > VT_IMAGE_MAX_PIXELS)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_resize: bad target size %dx%d", w, h);
    int sw = src->w, sh = src->h;
    vt_image out = {w, h, c, vt_malloc((size_t)w * h * c)};
    if (!out.data) return VT_ERR_OUT_OF_MEMORY;

    if (w == sw && h == sh) {
        memcpy(out.data, src->data, (size_t)w * h * c);
    } else {
        rs_axis ax, ay;
        if (rs_axis_init(&ax, sw, w) != VT_OK) {
            free(out.data);
            return VT_ERR_OUT_OF_MEMORY;
        }
        if (rs_axis_init(&ay, sh, h) != VT_OK) {
            rs_axis_free(&ax);
            free(out.data);
            return VT_ERR_OUT_OF_MEMORY;
        }
        size_t orow = (size_t)w * c;
        /* Horizontal pass into float rows, then a vertical pass that accumulates whole rows
         * (contiguous, so the compiler vectorises it); floats avoid double rounding. */
        float *tmp = vt_malloc(sizeof(float) * orow * sh);
        float *acc = vt_malloc(sizeof(float) * orow);
        if (!tmp || !acc) {
            free(tmp);
            free(acc);
            rs_axis_free(&ax);
            rs_axis_free(&ay);
            free(out.data);
            return VT_ERR_OUT_OF_MEMORY;
        }
        for (int y = 0; y < sh; y++) {
            const uint8_t *srow = src->data + (size_t)y * sw * c;
            float *trow = tmp + (size_t)y * orow;
            for (int x = 0; x < w; x++) {
                const float *wt = ax.w + (size_t)x * ax.taps;
                const uint8_t *p = srow + (size_t)ax.start[x] * c;
                int n = ax.n[x];
                for (int k = 0; k < c; k++) {
                    float s = 0.0f;
                    for (int t = 0; t < n; t++) s += wt[t] * p[t * c + k];
                    trow[x * c + k] = s;
                }
            }
        }
        for (int y = 0; y < h; y++) {
            const float *wt = ay.w + (size_t)y * ay.taps;
            int n = ay.n[y];
            const float *r0 = tmp + (size_t)ay.start[y] * orow;
            for (size_t i = 0; i < orow; i++) acc[i] = wt[0] * r0[i];
            for (int t = 1; t < n; t++) {
                const float *r = r0 + (size_t)t * orow;
                float wv = wt[t];
                for (size_t i = 0; i < orow; i++) acc[i] += wv * r[i];
            }
            uint8_t *drow = out.data + (size_t)y * orow;
            for (size_t i = 0; i < orow; i++) drow[i] = to_u8(acc[i]);
        }
        free(tmp);
        free(acc);
        rs_axis_free(&ax);
        rs_axis_free(&ay);
    }
    /* Resizing in place (dst == src) must not leak the old pixels. */
    if (dst == src) free(dst->data);
    *dst = out;
    return VT_OK;
}

/* ---- float conversion -------------------------------------------------------------------- */

void vt_image_to_float(const vt_image *img, int want_c, int flip, float *dst,
                       size_t chan_stride)
{
    if (!img || !img->data || !dst || (want_c != 1 && want_c != 3)) return;
    const int w = img->w, h = img->h, c = img->c;
    const float s = 1.0f / 255.0f;
    /* 2 and 4 channels (gray+alpha, RGBA) behave as 1 and 3: alpha is ignored. */
    const int colour = c >= 3;
    if (want_c == 3 && c == 3 && !flip) {
        /* The loader's case: a plain de-interleave, kept free of per-pixel branches so it
         * vectorises; the same products as below. */
        const size_t n = (size_t)w * h;
        const uint8_t *p = img->data;
        float *d0 = dst, *d1 = dst + chan_stride, *d2 = dst + 2 * chan_stride;
        for (size_t i = 0; i < n; i++) {
            d0[i] = p[3 * i] * s;
            d1[i] = p[3 * i + 1] * s;
            d2[i] = p[3 * i + 2] * s;
        }
        return;
    }
    for (int y = 0; y < h; y++) {
        const uint8_t *row = img->data + (size_t)y * w * c;
        size_t o = (size_t)y * w;
        for (int x = 0; x < w; x++, o++) {
            const uint8_t *p = row + (size_t)(flip ? w - 1 - x : x) * c;
            if (want_c == 1) {
                dst[o] = colour ? (0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2]) * s : p[0] * s;
            } else if (colour) {
                dst[o] = p[0] * s;
                dst[o + chan_stride] = p[1] * s;
                dst[o + 2 * chan_stride] = p[2] * s;
            } else {
                float v = p[0] * s;
                dst[o] = v;
                dst[o + chan_stride] = v;
                dst[o + 2 * chan_stride] = v;
            }
        }
    }
}

/* ---- PNG writing ------------------------------------------------------------------------- */

typedef struct vtpng_wr {
    FILE *f;
    char msg[256];
} vtpng_wr;

static void vtpng_wr_error(png_structp png, png_const_charp msg)
{
    vtpng_wr *wr = png_get_error_ptr(png);
    snprintf(wr->msg, sizeof wr->msg, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

static vt_status vtpng_write_run(vtpng_wr *wr, const char *path, const uint8_t *pixels, int w,
                                 int h, int c, size_t stride, int level)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, wr, vtpng_wr_error,
                                              vtpng_on_warning);
    if (!png) return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory encoding PNG", path);
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory encoding PNG", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return vt_fail(VT_ERR_IO, "%s: cannot write PNG: %s", path, wr->msg);
    }
    png_init_io(png, wr->f);
    if (level >= 0) png_set_compression_level(png, level);
    int ctype = c == 1 ? PNG_COLOR_TYPE_GRAY : c == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA;
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, ctype, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, pixels + (size_t)y * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return VT_OK;
}

static vt_status check_png_args(const char *fn, const char *path, const uint8_t *pixels, int w,
                                int h, int c, size_t stride)
{
    if (!path || !pixels) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (w < 1 || h < 1 || w > VT_IMAGE_MAX_SIDE || h > VT_IMAGE_MAX_SIDE ||
        (c != 1 && c != 3 && c != 4) || stride < (size_t)w * c)
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "%s: cannot save a %dx%d image with %d channels and stride %zu", path, w,
                       h, c, stride);
    return VT_OK;
}

vt_status vt_image_save_png(const char *path, const uint8_t *pixels, int w, int h, int c,
                            size_t stride)
{
    vt_status st = check_png_args("vt_image_save_png", path, pixels, w, h, c, stride);
    if (st) return st;
    /* Atomic replacement: a crash leaves either the old file or the complete new one. */
    vt_afile af;
    if ((st = vt_afile_open(&af, path))) return st;
    vtpng_wr wr;
    memset(&wr, 0, sizeof wr);
    wr.f = af.f;
    st = vtpng_write_run(&wr, path, pixels, w, h, c, stride, -1);
    if (st) {
        vt_afile_abort(&af);
        return st;
    }
    return vt_afile_commit(&af);
}

vt_status vt_image_create_png(const char *path, const uint8_t *pixels, int w, int h, int c,
                              size_t stride, int level)
{
    vt_status st = check_png_args("vt_image_create_png", path, pixels, w, h, c, stride);
    if (st) return st;
    vtpng_wr wr;
    memset(&wr, 0, sizeof wr);
    wr.f = fopen(path, "wbx"); /* "x": never replace a file that appeared meanwhile */
    if (!wr.f) return vt_fail(VT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    st = vtpng_write_run(&wr, path, pixels, w, h, c, stride, level);
    if (fclose(wr.f) != 0 && st == VT_OK)
        st = vt_fail(VT_ERR_IO, "%s: cannot write PNG: %s", path, strerror(errno));
    if (st) unlink(path);
    return st;
}

VT_API vt_status vt_png_save(const char *path, const uint8_t *pixels, int width, int height,
                             int channels, size_t stride)
{
    return vt_image_save_png(path, pixels, width, height, channels, stride);
}

VT_API vt_status vt_image_read(const char *path, uint8_t *rgb, size_t cap, int *width,
                               int *height)
{
    if (width) *width = 0;
    if (height) *height = 0;
    if (!path || !width || !height)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_image_read: NULL argument");
    vt_status st = vt_buffer_args("vt_image_read", rgb, cap);
    if (st) return st;
    vt_image img;
    if ((st = vt_image_load(path, &img))) return st;
    *width = img.w;
    *height = img.h;
    size_t n = (size_t)img.w * img.h;
    st = vt_buffer_fits("vt_image_read", rgb, cap, n * 3, "bytes");
    if (!st && rgb)
        for (size_t i = 0; i < n; i++)
            for (int c = 0; c < 3; c++) rgb[3 * i + c] = img.data[i * img.c + (img.c == 3 ? c : 0)];
    vt_image_free(&img);
    return st;
}
