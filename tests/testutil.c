#include "testutil.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>

#include "backend/gemm.h"
#include "image/image.h"
#include "visiontrain/visiontrain.h"

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

void vt_test_rmtree(const char *path)
{
    nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

char *vt_test_tmpdir(const char *name)
{
    const char *base = getenv("VT_TEST_TMP");
    char buf[4096];
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    snprintf(buf, sizeof buf, "%s/%s.%ld", base, name, (long)getpid());
    vt_test_rmtree(buf);
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return NULL;
    return strdup(buf);
}

int vt_test_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n) return -1;
    return 0;
}

void *vt_test_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(sz > 0 ? (size_t)sz : 1);
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) { free(buf); buf = NULL; }
    fclose(f);
    if (buf && n) *n = (size_t)sz;
    return buf;
}

void vt_test_learning_opts(struct vt_trainer *t)
{
    const char *extra = getenv("VT_TEST_TRAINER_EXTRA");
    if (!extra) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", extra);
    for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
        ck_assert_msg(vt_trainer_set(t, kv) == VT_OK, "VT_TEST_TRAINER_EXTRA: %s: %s", kv,
                      vt_trainer_last_error(t));
}

void vt_test_learned(const char *what, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "learned: %s %s (GEMM: %s)\n", what, buf, vt_sgemm_kernels());
}

int vt_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

char *vt_test_scratch;

void vt_test_scratch_setup(void)
{
    extern char *program_invocation_short_name;
    vt_test_scratch = vt_test_tmpdir(program_invocation_short_name);
    ck_assert_ptr_nonnull(vt_test_scratch);
}

void vt_test_scratch_teardown(void)
{
    if (vt_test_scratch) vt_test_rmtree(vt_test_scratch);
    free(vt_test_scratch);
    vt_test_scratch = NULL;
}

const char *vt_test_path(const char *fmt, ...)
{
    static char bufs[8][4096];
    static int k;
    char *b = bufs[k++ & 7];
    int n = snprintf(b, 4096, "%s/", vt_test_scratch);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, (size_t)(4096 - n), fmt, ap);
    va_end(ap);
    return b;
}

void vt_test_mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *q = buf + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            mkdir(buf, 0755);
            *q = '/';
        }
    mkdir(buf, 0755);
}

void vt_test_parent_dirs(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    vt_test_mkdirs(dir);
}

void vt_test_write_text(const char *path, const char *text)
{
    vt_test_parent_dirs(path);
    ck_assert_msg(vt_test_write_file(path, text, strlen(text)) == 0, "fixture %s", path);
}

void vt_test_write_png(const char *path, int w, int h, int pattern)
{
    vt_test_parent_dirs(path);
    uint8_t *px = calloc((size_t)w * h * 3, 1);
    ck_assert_ptr_nonnull(px);
    for (int i = 0; pattern && i < w * h * 3; i++)
        px[i] = (uint8_t)(i * 7 + pattern * 31 + (i / 3 % w) * 5);
    vt_status st = vt_image_save_png(path, px, w, h, 3, (size_t)w * 3);
    free(px);
    ck_assert_msg(st == VT_OK, "fixture %s: %s", path, vt_last_error());
}

void vt_test_write_jpeg(const char *path, const unsigned char *rgb, int w, int h, int quality,
                        double keep)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char *out = NULL, *row = malloc((size_t)w * 3);
    unsigned long size = 0;
    ck_assert_ptr_nonnull(row);
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        if (rgb) memcpy(row, rgb + (size_t)c.next_scanline * w * 3, (size_t)w * 3);
        else
            for (int x = 0; x < w * 3; x++) row[x] = (unsigned char)(x * 5 + c.next_scanline * 9);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    ck_assert_msg(size > 200, "fixture JPEG %s of %lu bytes", path, size);
    vt_test_parent_dirs(path);
    size_t n = keep >= 1 ? size : (size_t)(size * keep);
    ck_assert_msg(vt_test_write_file(path, out, n) == 0, "fixture %s", path);
    free(out);
}
