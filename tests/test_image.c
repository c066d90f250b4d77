/* lib/image: PNG/JPEG decoding (including damaged files), resizing, float conversion, PNG
 * writing.  Fixtures are written with libpng/libjpeg directly so the decoder is tested against
 * the reference encoders, not against our own writer only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <png.h>
#include <jpeglib.h>
#include <zlib.h>

#include "image/image.h"
#include "testutil.h"

static char *tmpdir;

static void setup(void) { tmpdir = vt_test_tmpdir("test_image"); }
static void teardown(void)
{
    if (tmpdir) vt_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

static char *tpath(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

/* Write a PNG with libpng itself: rows of `rowbytes` bytes in the given colour type/depth. */
static void write_png_fixture(const char *path, int w, int h, int ctype, int depth,
                              int interlace, const uint8_t *data, size_t rowbytes,
                              const png_color *palette, int npal, const uint8_t *trns, int ntrns)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    ck_assert(png && info);
    if (setjmp(png_jmpbuf(png))) ck_abort_msg("libpng failed writing the fixture");
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, depth, ctype,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (palette) png_set_PLTE(png, info, palette, npal);
    if (trns) png_set_tRNS(png, info, trns, ntrns, NULL);
    png_write_info(png, info);
    if (depth == 16) png_set_swap(png); /* fixtures hold host-order uint16 */
    png_bytep *rows = malloc(sizeof(png_bytep) * h);
    for (int y = 0; y < h; y++) rows[y] = (png_bytep)data + (size_t)y * rowbytes;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    fclose(f);
}

/* Encode w x h pixels (c = 1 or 3) as a baseline JPEG in memory. */
static unsigned char *encode_jpeg(const uint8_t *pix, int w, int h, int c, int quality,
                                  unsigned long *size)
{
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr err;
    unsigned char *out = NULL;
    *size = 0;
    ci.err = jpeg_std_error(&err);
    jpeg_create_compress(&ci);
    jpeg_mem_dest(&ci, &out, size);
    ci.image_width = w;
    ci.image_height = h;
    ci.input_components = c;
    ci.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, quality, TRUE);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = (JSAMPROW)pix + (size_t)ci.next_scanline * w * c;
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    return out;
}

static void fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 37u + seed * 11u + (i >> 3)) & 0xFF);
}

/* ---- PNG --------------------------------------------------------------------------------- */

START_TEST(png_roundtrip_gray_rgb)
{
    for (int c = 1; c <= 3; c += 2) {
        int w = 7, h = 5;
        uint8_t px[7 * 5 * 3];
        fill_pattern(px, (size_t)w * h * c, (unsigned)c);
        ck_assert_int_eq(vt_image_save_png(tpath("rt.png"), px, w, h, c, (size_t)w * c), VT_OK);
        vt_image img;
        ck_assert_int_eq(vt_image_load(tpath("rt.png"), &img), VT_OK);
        ck_assert_int_eq(img.w, w);
        ck_assert_int_eq(img.h, h);
        ck_assert_int_eq(img.c, c);
        ck_assert_mem_eq(img.data, px, (size_t)w * h * c);
        vt_image_free(&img);
        ck_assert_ptr_null(img.data);
    }
}
END_TEST

START_TEST(png_rgba_drops_alpha_and_stride)
{
    int w = 3, h = 2;
    size_t stride = 16; /* wider than w*4: the writer must honour the stride */
    uint8_t px[2 * 16];
    fill_pattern(px, sizeof px, 9);
    ck_assert_int_eq(vt_image_save_png(tpath("a.png"), px, w, h, 4, stride), VT_OK);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("a.png"), &img), VT_OK);
    ck_assert_int_eq(img.c, 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < 3; k++)
                ck_assert_int_eq(img.data[(y * w + x) * 3 + k], px[y * stride + x * 4 + k]);
    vt_image_free(&img);

    /* Nothing but the target is left in the folder (the temporary file was renamed). */
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            n++;
            ck_assert_str_eq(e->d_name, "a.png");
        }
    closedir(d);
    ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(png_palette_trns_and_low_depth)
{
    png_color pal[4] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
    uint8_t trns[4] = {255, 0, 128, 255};
    /* 2-bit indices, 4 pixels per byte: row 0 = 0 1 2 3, row 1 = 3 2 1 0 */
    uint8_t rows[2] = {0x1B, 0xE4};
    write_png_fixture(tpath("pal.png"), 4, 2, PNG_COLOR_TYPE_PALETTE, 2, 0, rows, 1, pal, 4,
                      trns, 4);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("pal.png"), &img), VT_OK);
    ck_assert_int_eq(img.w, 4);
    ck_assert_int_eq(img.h, 2);
    ck_assert_int_eq(img.c, 3);
    const int idx[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(img.data[i * 3 + 0], pal[idx[i]].red);
        ck_assert_int_eq(img.data[i * 3 + 1], pal[idx[i]].green);
        ck_assert_int_eq(img.data[i * 3 + 2], pal[idx[i]].blue);
    }
    vt_image_free(&img);

    /* 1-bit gray: 0 -> 0, 1 -> 255. */
    uint8_t bits[1] = {0xA0}; /* 1 0 1 0 */
    write_png_fixture(tpath("g1.png"), 4, 1, PNG_COLOR_TYPE_GRAY, 1, 0, bits, 1, NULL, 0, NULL,
                      0);
    ck_assert_int_eq(vt_image_load(tpath("g1.png"), &img), VT_OK);
    ck_assert_int_eq(img.c, 1);
    ck_assert_int_eq(img.data[0], 255);
    ck_assert_int_eq(img.data[1], 0);
    ck_assert_int_eq(img.data[2], 255);
    ck_assert_int_eq(img.data[3], 0);
    vt_image_free(&img);
}
END_TEST

START_TEST(png_16bit_and_gray_alpha)
{
    /* 16-bit RGB, 2x1 */
    uint16_t rgb16[6] = {0xFFFF, 0x8080, 0x0000, 0x1234, 0xFF00, 0x0101};
    write_png_fixture(tpath("c16.png"), 2, 1, PNG_COLOR_TYPE_RGB, 16, 0, (uint8_t *)rgb16, 12,
                      NULL, 0, NULL, 0);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("c16.png"), &img), VT_OK);
    ck_assert_int_eq(img.c, 3);
    for (int i = 0; i < 6; i++) {
        int want = (int)lround(rgb16[i] * 255.0 / 65535.0);
        ck_assert_int_le(abs(img.data[i] - want), 1);
    }
    ck_assert_int_eq(img.data[0], 255);
    ck_assert_int_eq(img.data[2], 0);
    vt_image_free(&img);

    /* 16-bit gray+alpha -> c=1, alpha dropped */
    uint16_t ga16[4] = {0x8080, 0x0000, 0xFFFF, 0x1234};
    write_png_fixture(tpath("ga16.png"), 2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0,
                      (uint8_t *)ga16, 8, NULL, 0, NULL, 0);
    ck_assert_int_eq(vt_image_load(tpath("ga16.png"), &img), VT_OK);
    ck_assert_int_eq(img.c, 1);
    ck_assert_int_eq(img.w, 2);
    ck_assert_int_eq(img.data[0], 128);
    ck_assert_int_eq(img.data[1], 255);
    vt_image_free(&img);

    /* 8-bit gray+alpha, interlaced */
    uint8_t ga[9 * 9 * 2];
    for (int i = 0; i < 81; i++) {
        ga[2 * i] = (uint8_t)(i * 3);
        ga[2 * i + 1] = (uint8_t)(255 - i);
    }
    write_png_fixture(tpath("ga8i.png"), 9, 9, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 1, ga, 18, NULL, 0,
                      NULL, 0);
    ck_assert_int_eq(vt_image_load(tpath("ga8i.png"), &img), VT_OK);
    ck_assert_int_eq(img.c, 1);
    for (int i = 0; i < 81; i++) ck_assert_int_eq(img.data[i], i * 3);
    vt_image_free(&img);
}
END_TEST

START_TEST(png_corrupt_and_truncated)
{
    int w = 32, h = 32;
    uint8_t px[32 * 32 * 3];
    fill_pattern(px, sizeof px, 3);
    ck_assert_int_eq(vt_image_save_png(tpath("good.png"), px, w, h, 3, (size_t)w * 3), VT_OK);
    size_t n = 0;
    uint8_t *buf = vt_test_read_file(tpath("good.png"), &n);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_gt(n, 100);

    /* Bytes flipped in the middle of the image data: the CRC (or zlib) catches it. */
    uint8_t *bad = malloc(n);
    memcpy(bad, buf, n);
    for (size_t i = n / 2; i < n / 2 + 8; i++) bad[i] ^= 0x5A;
    ck_assert_int_eq(vt_test_write_file(tpath("flip.png"), bad, n), 0);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("flip.png"), &img), VT_ERR_FORMAT);
    ck_assert_ptr_null(img.data);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), tpath("flip.png")));
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "PNG"));

    /* Cut at several points, including inside the header and just before IEND. */
    const size_t cuts[] = {4, 20, 40, n / 2, n - 5};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        ck_assert_int_eq(vt_test_write_file(tpath("cut.png"), buf, cuts[i]), 0);
        ck_assert_int_eq(vt_image_load(tpath("cut.png"), &img), VT_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(vt_last_error(), tpath("cut.png")));
    }
    free(bad);
    free(buf);
}
END_TEST

START_TEST(png_too_large_header)
{
    /* A valid IHDR claiming 40000 x 40000: refused before any pixel allocation. */
    uint8_t px[4] = {0};
    ck_assert_int_eq(vt_image_save_png(tpath("small.png"), px, 2, 2, 1, 2), VT_OK);
    size_t n = 0;
    uint8_t *buf = vt_test_read_file(tpath("small.png"), &n);
    /* IHDR data starts at byte 16: width, height big-endian; fix the CRC too. */
    uint32_t big = 40000;
    for (int k = 0; k < 2; k++) {
        buf[16 + 4 * k] = (uint8_t)(big >> 24);
        buf[17 + 4 * k] = (uint8_t)(big >> 16);
        buf[18 + 4 * k] = (uint8_t)(big >> 8);
        buf[19 + 4 * k] = (uint8_t)big;
    }
    uint32_t crc = (uint32_t)crc32(0, buf + 12, 17);
    buf[29] = (uint8_t)(crc >> 24);
    buf[30] = (uint8_t)(crc >> 16);
    buf[31] = (uint8_t)(crc >> 8);
    buf[32] = (uint8_t)crc;
    vt_image img;
    ck_assert_int_eq(vt_image_decode(buf, n, "big.png", &img), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "too large"));
    free(buf);
}
END_TEST

/* ---- JPEG -------------------------------------------------------------------------------- */

START_TEST(jpeg_decode_rgb_and_gray)
{
    int w = 32, h = 16;
    uint8_t px[32 * 16 * 3];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = px + (y * w + x) * 3;
            p[0] = x < 16 ? 200 : 30;
            p[1] = x < 16 ? 40 : 90;
            p[2] = x < 16 ? 30 : 210;
        }
    unsigned long n = 0;
    unsigned char *jpg = encode_jpeg(px, w, h, 3, 95, &n);
    ck_assert_int_eq(vt_test_write_file(tpath("a.jpg"), jpg, n), 0);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("a.jpg"), &img), VT_OK);
    ck_assert_int_eq(img.w, w);
    ck_assert_int_eq(img.h, h);
    ck_assert_int_eq(img.c, 3);
    /* Away from the colour edge (chroma subsampling blurs it), pixels are close. */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (x >= 12 && x < 20) continue;
            for (int k = 0; k < 3; k++)
                ck_assert_int_le(abs(img.data[(y * w + x) * 3 + k] - px[(y * w + x) * 3 + k]), 12);
        }
    vt_image_free(&img);
    free(jpg);

    uint8_t g[32 * 16];
    for (int i = 0; i < w * h; i++) g[i] = (uint8_t)((i % w) * 8);
    jpg = encode_jpeg(g, w, h, 1, 95, &n);
    ck_assert_int_eq(vt_image_decode(jpg, n, "gray.jpg", &img), VT_OK);
    ck_assert_int_eq(img.c, 1);
    for (int i = 0; i < w * h; i++) ck_assert_int_le(abs(img.data[i] - g[i]), 10);
    vt_image_free(&img);
    free(jpg);
}
END_TEST

START_TEST(jpeg_truncated)
{
    int w = 64, h = 64;
    uint8_t *px = malloc((size_t)w * h * 3);
    fill_pattern(px, (size_t)w * h * 3, 5);
    unsigned long n = 0;
    unsigned char *jpg = encode_jpeg(px, w, h, 3, 90, &n);
    const size_t cuts[] = {n / 2, n - 40, n / 8, 3};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        ck_assert_int_eq(vt_test_write_file(tpath("t.jpg"), jpg, cuts[i]), 0);
        vt_image img;
        ck_assert_int_eq(vt_image_load(tpath("t.jpg"), &img), VT_ERR_FORMAT);
        ck_assert_ptr_null(img.data);
        ck_assert_msg(strstr(vt_last_error(), "truncated JPEG") != NULL, "cut %zu: %s", cuts[i],
                      vt_last_error());
        ck_assert_ptr_nonnull(strstr(vt_last_error(), tpath("t.jpg")));
    }
    /* The whole file still decodes. */
    vt_image img;
    ck_assert_int_eq(vt_image_decode(jpg, n, "full.jpg", &img), VT_OK);
    vt_image_free(&img);
    /* A JPEG header followed by garbage is corrupt, not a crash. */
    memset(jpg + 2, 0x11, n - 2);
    ck_assert_int_eq(vt_image_decode(jpg, n, "junk.jpg", &img), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "junk.jpg"));
    free(jpg);
    free(px);
}
END_TEST

/* ---- other failures ---------------------------------------------------------------------- */

START_TEST(garbage_missing_empty_dir)
{
    uint8_t junk[500];
    unsigned s = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 1103515245u + 12345u;
        junk[i] = (uint8_t)(s >> 16);
    }
    junk[0] = 'G'; /* not a PNG or JPEG magic */
    ck_assert_int_eq(vt_test_write_file(tpath("junk.png"), junk, sizeof junk), 0);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("junk.png"), &img), VT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "not a PNG or JPEG"));
    ck_assert_ptr_nonnull(strstr(vt_last_error(), tpath("junk.png")));

    ck_assert_int_eq(vt_test_write_file(tpath("empty.jpg"), junk, 0), 0);
    ck_assert_int_eq(vt_image_load(tpath("empty.jpg"), &img), VT_ERR_FORMAT);

    ck_assert_int_eq(vt_image_load(tpath("missing.png"), &img), VT_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), tpath("missing.png")));
    ck_assert_int_eq(vt_image_load(tpath("nodir/x.png"), &img), VT_ERR_NOT_FOUND);
    ck_assert_int_eq(vt_image_load(tmpdir, &img), VT_ERR_IO);
    ck_assert_int_eq(vt_image_load(NULL, &img), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_image_decode(junk, sizeof junk, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(save_png_errors)
{
    uint8_t px[12] = {0};
    ck_assert_int_ne(vt_image_save_png(tpath("nodir/x.png"), px, 2, 2, 3, 6), VT_OK);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "nodir/x.png"));
    ck_assert_int_eq(vt_image_save_png(tpath("x.png"), px, 2, 2, 2, 4), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_image_save_png(tpath("x.png"), px, 2, 2, 3, 5), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_image_save_png(tpath("x.png"), px, 0, 2, 3, 6), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_image_save_png(NULL, px, 2, 2, 3, 6), VT_ERR_INVALID_ARGUMENT);
    /* Overwriting an existing file replaces it. */
    ck_assert_int_eq(vt_image_save_png(tpath("x.png"), px, 2, 2, 3, 6), VT_OK);
    px[0] = 99;
    ck_assert_int_eq(vt_image_save_png(tpath("x.png"), px, 2, 2, 3, 6), VT_OK);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("x.png"), &img), VT_OK);
    ck_assert_int_eq(img.data[0], 99);
    vt_image_free(&img);
}
END_TEST

/* ---- resize ------------------------------------------------------------------------------ */

START_TEST(resize_constant_stays_constant)
{
    const int sizes[][2] = {{3, 9}, {13, 2}, {7, 5}, {1, 1}, {20, 17}, {4, 3}};
    uint8_t px[7 * 5 * 3];
    for (int i = 0; i < 7 * 5; i++) {
        px[i * 3] = 17;
        px[i * 3 + 1] = 128;
        px[i * 3 + 2] = 255;
    }
    vt_image src = {7, 5, 3, px};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        vt_image dst;
        ck_assert_int_eq(vt_image_resize(&src, sizes[s][0], sizes[s][1], &dst), VT_OK);
        ck_assert_int_eq(dst.w, sizes[s][0]);
        ck_assert_int_eq(dst.h, sizes[s][1]);
        ck_assert_int_eq(dst.c, 3);
        for (int i = 0; i < dst.w * dst.h; i++) {
            ck_assert_int_eq(dst.data[i * 3], 17);
            ck_assert_int_eq(dst.data[i * 3 + 1], 128);
            ck_assert_int_eq(dst.data[i * 3 + 2], 255);
        }
        vt_image_free(&dst);
    }
}
END_TEST

START_TEST(resize_box_average_exact)
{
    uint8_t px[16] = {0, 10, 200, 201, 30, 41, 7, 9, 255, 255, 0, 1, 100, 3, 60, 61};
    vt_image src = {4, 4, 1, px}, dst;
    ck_assert_int_eq(vt_image_resize(&src, 2, 2, &dst), VT_OK);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) {
            int sum = px[(2 * y) * 4 + 2 * x] + px[(2 * y) * 4 + 2 * x + 1] +
                      px[(2 * y + 1) * 4 + 2 * x] + px[(2 * y + 1) * 4 + 2 * x + 1];
            ck_assert_int_eq(dst.data[y * 2 + x], (sum + 2) / 4);
        }
    vt_image_free(&dst);

    /* Fractional coverage: 3 -> 2 weighs the middle pixel half to each side. */
    uint8_t row[3] = {0, 90, 180};
    vt_image s3 = {3, 1, 1, row};
    ck_assert_int_eq(vt_image_resize(&s3, 2, 1, &dst), VT_OK);
    ck_assert_int_eq(dst.data[0], 30);
    ck_assert_int_eq(dst.data[1], 150);
    vt_image_free(&dst);

    /* Same size is an exact copy; in-place resize frees the old pixels (checked by ASan). */
    vt_image own = {4, 4, 1, malloc(16)};
    memcpy(own.data, px, 16);
    ck_assert_int_eq(vt_image_resize(&own, 4, 4, &dst), VT_OK);
    ck_assert_mem_eq(dst.data, px, 16);
    vt_image_free(&dst);
    ck_assert_int_eq(vt_image_resize(&own, 2, 3, &own), VT_OK);
    ck_assert_int_eq(own.w, 2);
    ck_assert_int_eq(own.h, 3);
    vt_image_free(&own);

    ck_assert_int_eq(vt_image_resize(&src, 0, 2, &dst), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_image_resize(NULL, 2, 2, &dst), VT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(resize_enlarge_monotone)
{
    uint8_t px[2] = {0, 255};
    vt_image src = {2, 1, 1, px}, dst;
    ck_assert_int_eq(vt_image_resize(&src, 9, 3, &dst), VT_OK);
    for (int y = 0; y < 3; y++) {
        const uint8_t *r = dst.data + y * 9;
        ck_assert_int_eq(r[0], 0);
        ck_assert_int_eq(r[8], 255);
        for (int x = 1; x < 9; x++) ck_assert_int_ge(r[x], r[x - 1]);
        ck_assert_int_gt(r[4], r[2]);
        ck_assert_int_gt(r[6], r[4]);
        ck_assert_int_eq(r[4], 128); /* the middle is the mean, by symmetry */
    }
    vt_image_free(&dst);
}
END_TEST

START_TEST(resize_mixed_axes_mean)
{
    /* Shrink one axis, enlarge the other: the mean is (nearly) preserved. */
    int w = 50, h = 6;
    uint8_t *px = malloc((size_t)w * h * 3);
    fill_pattern(px, (size_t)w * h * 3, 1);
    double m0 = 0;
    for (int i = 0; i < w * h * 3; i++) m0 += px[i];
    m0 /= w * h * 3;
    vt_image src = {w, h, 3, px}, dst;
    ck_assert_int_eq(vt_image_resize(&src, 7, 19, &dst), VT_OK);
    double m1 = 0;
    for (int i = 0; i < 7 * 19 * 3; i++) m1 += dst.data[i];
    m1 /= 7 * 19 * 3;
    ck_assert_double_le(fabs(m1 - m0), 6.0);
    vt_image_free(&dst);
    free(px);
}
END_TEST

/* ---- to_float ---------------------------------------------------------------------------- */

START_TEST(to_float_channels_and_flip)
{
    uint8_t rgb[6] = {255, 0, 0, 0, 0, 255};
    vt_image img = {2, 1, 3, rgb};
    float out[30];
    for (int i = 0; i < 30; i++) out[i] = -1;
    vt_image_to_float(&img, 1, 0, out, 2);
    ck_assert_float_eq_tol(out[0], 0.299f, 1e-5f);
    ck_assert_float_eq_tol(out[1], 0.114f, 1e-5f);
    ck_assert_float_eq(out[2], -1); /* nothing written past the plane */

    vt_image_to_float(&img, 3, 0, out, 10); /* planes 10 floats apart */
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_float_eq(out[1], 0.0f);
    ck_assert_float_eq(out[10], 0.0f);
    ck_assert_float_eq(out[20], 0.0f);
    ck_assert_float_eq(out[21], 1.0f);
    ck_assert_float_eq(out[2], -1);

    vt_image_to_float(&img, 3, 1, out, 10); /* flipped: blue first */
    ck_assert_float_eq(out[0], 0.0f);
    ck_assert_float_eq(out[20], 1.0f);
    ck_assert_float_eq(out[1], 1.0f);
    ck_assert_float_eq(out[21], 0.0f);

    uint8_t g[6] = {0, 51, 255, 10, 20, 30};
    vt_image gi = {3, 2, 1, g};
    vt_image_to_float(&gi, 3, 1, out, 6);
    for (int k = 0; k < 3; k++) {
        ck_assert_float_eq_tol(out[k * 6 + 0], 1.0f, 1e-6f);
        ck_assert_float_eq_tol(out[k * 6 + 1], 0.2f, 1e-6f);
        ck_assert_float_eq_tol(out[k * 6 + 2], 0.0f, 1e-6f);
        ck_assert_float_eq_tol(out[k * 6 + 3], 30 / 255.0f, 1e-6f);
        ck_assert_float_eq_tol(out[k * 6 + 5], 10 / 255.0f, 1e-6f);
    }
    vt_image_to_float(&gi, 1, 0, out, 6);
    ck_assert_float_eq_tol(out[1], 0.2f, 1e-6f);
}
END_TEST

/* The one PNG writer's new-file form (dataset generators): never replaces a file, a level, a
 * stride, and what it wrote reads back. */
START_TEST(create_png_new_files)
{
    uint8_t px[4 * 3 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
    /* 3 x 3 RGB with rows 12 bytes apart */
    ck_assert_int_eq(vt_image_create_png(tpath("new.png"), px, 3, 3, 3, 12, 2), VT_OK);
    vt_image img;
    ck_assert_int_eq(vt_image_load(tpath("new.png"), &img), VT_OK);
    ck_assert(img.w == 3 && img.h == 3 && img.c == 3);
    for (int y = 0; y < 3; y++)
        ck_assert_msg(memcmp(img.data + y * 9, px + y * 12, 9) == 0, "row %d", y);
    vt_image_free(&img);
    /* an existing file is refused and left as it was */
    uint8_t other[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ck_assert_int_eq(vt_image_create_png(tpath("new.png"), other, 3, 3, 1, 3, -1), VT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "new.png"));
    ck_assert_int_eq(vt_image_load(tpath("new.png"), &img), VT_OK);
    ck_assert_int_eq(img.c, 3);
    vt_image_free(&img);
    ck_assert_int_eq(vt_image_create_png(tpath("g.png"), other, 3, 3, 2, 6, 9),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_image_create_png(tpath("nodir/g.png"), other, 3, 3, 1, 3, 9), VT_ERR_IO);
    ck_assert_int_eq(vt_image_create_png(tpath("g.png"), other, 3, 3, 1, 3, 9), VT_OK);
    ck_assert_int_eq(vt_image_load(tpath("g.png"), &img), VT_OK);
    ck_assert(img.c == 1 && memcmp(img.data, other, 9) == 0);
    vt_image_free(&img);
}
END_TEST

static Suite *image_suite(void)
{
    Suite *s = suite_create("image");
    TCase *tc = tcase_create("image");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, png_roundtrip_gray_rgb);
    tcase_add_test(tc, png_rgba_drops_alpha_and_stride);
    tcase_add_test(tc, png_palette_trns_and_low_depth);
    tcase_add_test(tc, png_16bit_and_gray_alpha);
    tcase_add_test(tc, png_corrupt_and_truncated);
    tcase_add_test(tc, png_too_large_header);
    tcase_add_test(tc, jpeg_decode_rgb_and_gray);
    tcase_add_test(tc, jpeg_truncated);
    tcase_add_test(tc, garbage_missing_empty_dir);
    tcase_add_test(tc, save_png_errors);
    tcase_add_test(tc, create_png_new_files);
    tcase_add_test(tc, resize_constant_stays_constant);
    tcase_add_test(tc, resize_box_average_exact);
    tcase_add_test(tc, resize_enlarge_monotone);
    tcase_add_test(tc, resize_mixed_axes_mean);
    tcase_add_test(tc, to_float_channels_and_flip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(image_suite()); }
