/* The NCCL engine's CPU-side parts, on any machine (no GPU, no NCCL needed): NCCL's loader
 * (cuda/nccl_load.c, linked here directly) against fake libraries built by the test setup
 * (fake_nccl.c): one answering as NCCL 2.28.9, one without ncclRedOpCreatePreMulSum, one that
 * says it is 2.10.3; a missing file; VT_NCCL_LIBRARY; the version's text.  The communicator
 * itself (cuda/nccl_comm.cu) needs two GPUs: not run here.  Each test runs in Check's own
 * forked child, so vt_nccl_shared loads afresh in each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_load.h"
#include "testutil.h"

static const char *fake(const char *file)
{
    static char path[4096];
    const char *dir = getenv("VT_TEST_FAKE_NCCL_DIR");
    ck_assert_msg(dir && *dir, "VT_TEST_FAKE_NCCL_DIR is not set (run through meson test)");
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return path;
}

START_TEST(test_fake_nccl_loads)
{
    char why[512] = "x";
    vt_nccl *n = vt_nccl_open(fake("fake-nccl.so"), why, sizeof why);
    ck_assert_msg(n != NULL, "the fake NCCL did not load: %s", why);
    ck_assert_str_eq(why, "");
    ck_assert_int_eq(n->version, 22809);
    vt_nccl_id id;
    memset(&id, 0xff, sizeof id);
    ck_assert_int_eq(n->get_unique_id(&id), VT_NCCL_SUCCESS);
    for (int i = 0; i < VT_NCCL_ID_BYTES; i++) ck_assert_int_eq((unsigned char)id.internal[i], i);
    vt_nccl_comm c = (vt_nccl_comm)&id;
    ck_assert_int_eq(n->comm_init_rank(&c, 2, id, 1), 5);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(n->error_string(5), "invalid usage (fake)");
    ck_assert_ptr_nonnull(n->all_gather);
    vt_nccl_close(n);
    vt_nccl_close(NULL);
}
END_TEST

START_TEST(test_nccl_missing_or_broken)
{
    char why[512];
    ck_assert_ptr_null(vt_nccl_open("/nonexistent/" VT_NCCL_FILE, why, sizeof why));
    ck_assert_msg(strstr(why, "NCCL could not be loaded") && strstr(why, "/nonexistent/"), "%s",
                  why);
    ck_assert_ptr_null(vt_nccl_open("/nonexistent/" VT_NCCL_FILE, NULL, 0)); /* no why */
    ck_assert_ptr_null(vt_nccl_open(fake("fake-nccl-incomplete.so"), why, sizeof why));
    ck_assert_msg(strstr(why, "has no ncclRedOpCreatePreMulSum") &&
                      strstr(why, "older than 2.12"),
                  "%s", why);
    ck_assert_ptr_null(vt_nccl_open(fake("fake-nccl-old.so"), why, sizeof why));
    ck_assert_msg(strstr(why, "is NCCL 2.10.3") && strstr(why, "needs NCCL 2.12.0 or newer"),
                  "%s", why);
}
END_TEST

START_TEST(test_nccl_shared_from_env)
{
    setenv("VT_NCCL_LIBRARY", fake("fake-nccl.so"), 1);
    const char *why = "x";
    const vt_nccl *n = vt_nccl_shared(&why);
    ck_assert_msg(n != NULL, "VT_NCCL_LIBRARY: %s", why);
    ck_assert_str_eq(why, "");
    ck_assert_ptr_eq(vt_nccl_shared(NULL), n); /* loaded once */
}
END_TEST

START_TEST(test_nccl_shared_missing)
{
    setenv("VT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    const char *why = NULL;
    ck_assert_ptr_null(vt_nccl_shared(&why));
    ck_assert_msg(why && strstr(why, "/nonexistent/libnccl.so.2"), "%s", why ? why : "(null)");
}
END_TEST

START_TEST(test_nccl_version_text)
{
    char b[32];
    vt_nccl_version_text(22809, b, sizeof b);
    ck_assert_str_eq(b, "2.28.9");
    vt_nccl_version_text(21200, b, sizeof b);
    ck_assert_str_eq(b, "2.12.0");
    vt_nccl_version_text(2708, b, sizeof b); /* the codes before 2.9 */
    ck_assert_str_eq(b, "2.7.8");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nccl");
    TCase *tc = tcase_create("loader");
    tcase_add_test(tc, test_fake_nccl_loads);
    tcase_add_test(tc, test_nccl_missing_or_broken);
    tcase_add_test(tc, test_nccl_shared_from_env);
    tcase_add_test(tc, test_nccl_shared_missing);
    tcase_add_test(tc, test_nccl_version_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
