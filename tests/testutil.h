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
/* Run a suite with CK_NORMAL output; returns the process exit code (0 ok, 1 failures). */
int vt_test_run(Suite *s);
#endif
