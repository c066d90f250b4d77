/* Shared helpers for the Check suites. */
#ifndef VT_TESTUTIL_H
#define VT_TESTUTIL_H
#include <check.h>
#include <stddef.h>

/* A fresh empty folder for the test (under $VT_TEST_TMP or /tmp); returns a malloc'd path. */
char *vt_test_tmpdir(const char *name);
/* rm -rf */
void vt_test_rmtree(const char *path);
/* Write bytes to a file; returns 0 on success. */
int vt_test_write_file(const char *path, const void *data, size_t n);
/* Read a whole file (malloc'd, *n set); NULL on failure. */
void *vt_test_read_file(const char *path, size_t *n);
/* A scratch folder per test, as a Check fixture: tcase_add_checked_fixture(tc,
 * vt_test_scratch_setup, vt_test_scratch_teardown).  The folder is named after the test program
 * and removed afterwards; vt_test_path() joins it with a printf-style relative path (8 rotating
 * buffers, so several results can be live at once). */
extern char *vt_test_scratch;
void vt_test_scratch_setup(void);
void vt_test_scratch_teardown(void);
const char *vt_test_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fixture writers; each creates the missing parent folders and fails the test on error.
 * vt_test_write_png: a w x h RGB PNG, black when pattern is 0, else a deterministic pattern
 * depending on `pattern`. */
void vt_test_mkdirs(const char *path);
void vt_test_parent_dirs(const char *path); /* the folders above a file path */
void vt_test_write_text(const char *path, const char *text);
void vt_test_write_png(const char *path, int w, int h, int pattern);
/* A w x h RGB JPEG (libjpeg) at `quality`: the pixels of rgb (w*h*3 bytes), or a fixed gradient
 * when rgb is NULL; only the first keep (0..1] of its bytes are written (keep < 1: a truncated
 * JPEG, which libjpeg reports as a premature end).  Creates the parent folders. */
void vt_test_write_jpeg(const char *path, const unsigned char *rgb, int w, int h, int quality,
                        double keep);
/* Learning tests (a trained quality asserted against a threshold) call these two.
 * vt_test_learning_opts applies $VT_TEST_TRAINER_EXTRA (space-separated key=value trainer
 * settings) after the test's own, so that scripts/test-gemm-paths.sh --frozen can check that a
 * frozen optimiser fails every such test.  vt_test_learned prints "learned: <what> <figures>"
 * on stderr, which that script collects per GEMM path. */
struct vt_trainer;
void vt_test_learning_opts(struct vt_trainer *t);
void vt_test_learned(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Run a suite with CK_NORMAL output; returns the process exit code (0 ok, 1 failures). */
int vt_test_run(Suite *s);
#endif
