/* The CUDA module's loader (lib/backend/cuda_plugin.c; backend/cuda_device.h, "THE PLUGIN"):
 * a missing module, one whose CUDA library is missing, one without the entry point, one from
 * another build, and the real one.  Each case needs a process whose loader has not run yet, so
 * every test runs in Check's own forked child (CK_FORK=no is refused).  Meson passes
 * VT_CUDA_PLUGIN (the built module) and VT_TEST_FAKE_MODULES (make_fake_modules.sh's folder). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda_device.h"
#include "testutil.h"
#include "vt_config.h"

/* The module the build made (meson's VT_CUDA_PLUGIN), captured before a test changes it. */
static char real_module[4096];

static void fresh_process(void)
{
    const char *f = getenv("CK_FORK");
    ck_assert_msg(!f || strcmp(f, "no") != 0,
                  "test_cuda_module needs a fresh process per test: run it without CK_FORK=no");
}

/* Point the loader at `path`, then check every entry point's "no GPU" answer: the reason names
 * `want` (and `want2` when given). */
static void expect_no_gpu(const char *path, const char *want, const char *want2)
{
    fresh_process();
    if (path) setenv("VT_CUDA_PLUGIN", path, 1);
    ck_assert_int_eq(vt_cuda_device_count(), 0);
    ck_assert_int_eq(vt_device_count(), 0);

    vt_err_clear();
    vt_status st = vt_device_info(0, NULL, 0, NULL, NULL, NULL, NULL);
    const char *msg = vt_last_error();
    ck_assert_msg(st == VT_ERR_DEVICE, "vt_device_info: status %d", st);
    ck_assert_msg(strstr(msg, want) && (!want2 || strstr(msg, want2)),
                  "vt_device_info's message does not name '%s'%s%s: '%s'", want,
                  want2 ? " and " : "", want2 ? want2 : "", msg);

    vt_backend *b = (vt_backend *)&b;
    vt_err_clear();
    st = vt_backend_cuda_create(&b, 0);
    ck_assert_msg(st == VT_ERR_DEVICE && b == NULL, "vt_backend_cuda_create: status %d, out %p",
                  st, (void *)b);
    ck_assert_msg(strstr(vt_last_error(), want), "backend: '%s'", vt_last_error());

    vt_err_clear();
    ck_assert_msg(vt_cuda_host_alloc(0, 4096) == NULL, "pinned memory without a module");
    ck_assert_msg(strstr(vt_last_error(), want), "host_alloc: '%s'", vt_last_error());

    /* the calls that take a backend do nothing to a CPU one, and the CPU still trains */
    vt_backend *cpu;
    ck_assert_int_eq(vt_backend_cpu_create(&cpu, 1), VT_OK);
    vt_backend_cuda_set_fp32(cpu, 1);
    vt_backend_cuda_set_conv_cap(cpu, 1 << 20);
    size_t held = 1, peak = 1;
    vt_backend_cuda_memory(cpu, &held, &peak);
    ck_assert_msg(held == 0 && peak == 0, "memory of a CPU backend: %zu %zu", held, peak);
    vt_cuda_host_free(NULL);
    vt_backend_destroy(cpu);

    ck_assert_int_eq(vt_synth_generate(vt_test_path("ds"), VT_TASK_CLASSIFY,
                                       "classes=2 train=4 val=0 imgsz=16"), VT_OK);
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path("ds")), VT_OK);
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    const char *set[] = {"epochs=1", "batch=4", "workers=0", "imgsz=16", "device=0"};
    for (int i = 0; i < 5; i++) ck_assert_int_eq(vt_trainer_set(t, set[i]), VT_OK);
    st = vt_trainer_run(t);
    ck_assert_msg(st == VT_ERR_DEVICE && strstr(vt_trainer_last_error(t), want),
                  "device=0 without a module: status %d, '%s'", st, vt_trainer_last_error(t));
    ck_assert_int_eq(vt_trainer_set(t, "device=cpu"), VT_OK);
    st = vt_trainer_run(t);
    ck_assert_msg(st == VT_OK, "device=cpu: %d %s", st, vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

#if VT_HAVE_CUDA
/* Is a file whose path contains `part` mapped into this process? */
static int mapped(const char *part)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_msg(f != NULL, "cannot read /proc/self/maps");
    char line[8192];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, part) != NULL;
    fclose(f);
    return found;
}

static const char *fake(const char *name)
{
    const char *dir = getenv("VT_TEST_FAKE_MODULES");
    ck_assert_msg(dir && *dir, "VT_TEST_FAKE_MODULES is not set (run through meson test)");
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

START_TEST(test_module_missing)
{
    const char *path = vt_test_path("nowhere/libvisiontrain-cuda.so");
    expect_no_gpu(path, path, "could not be loaded");
}
END_TEST

START_TEST(test_module_cuda_library_missing)
{
    /* as when the CUDA runtime or cuBLAS is not installed: the reason names the library */
    expect_no_gpu(fake("fake-missing-dep.so"), "libvt-test-absent.so", "fake-missing-dep.so");
}
END_TEST

START_TEST(test_module_without_entry)
{
    expect_no_gpu(fake("fake-no-entry.so"), "not a libvisiontrain CUDA module", "fake-no-entry.so");
}
END_TEST

START_TEST(test_module_other_build)
{
    expect_no_gpu(fake("fake-other-build.so"), "another build of libvisiontrain", NULL);
}
END_TEST

START_TEST(test_module_real)
{
    fresh_process();
    ck_assert_msg(real_module[0], "VT_CUDA_PLUGIN is not set (run through meson test)");
    setenv("VT_CUDA_PLUGIN", real_module, 1);
    ck_assert_msg(!mapped("libcublas"), "cuBLAS is mapped before any GPU was asked for");
    int n = vt_device_count();
    ck_assert_msg(n >= 0, "vt_device_count() = %d", n);
    ck_assert_msg(mapped("libvisiontrain-cuda.so") && mapped("libcublas"),
                  "after vt_device_count the module and cuBLAS should be mapped");
    /* cuDNN is loaded only by a backend made with VT_CUDNN=1 (cuda/cudnn_load.h) */
    const char *dnn = getenv("VT_CUDNN");
    int dnn_on = dnn && strcmp(dnn, "1") == 0;
    ck_assert_msg(!mapped("libcudnn"), "cuDNN is mapped before any backend asked for it");
    /* the answers now come from the CUDA runtime, not from the loader */
    vt_err_clear();
    vt_status st = vt_device_info(n, NULL, 0, NULL, NULL, NULL, NULL);
    ck_assert_msg(st == VT_ERR_DEVICE && strstr(vt_last_error(), "CUDA device") &&
                      !strstr(vt_last_error(), "CUDA backend"),
                  "device %d of %d: status %d, '%s'", n, n, st, vt_last_error());
    /* an error raised inside the module reaches this thread's vt_last_error */
    vt_backend *b = NULL;
    vt_err_clear();
    st = vt_backend_cuda_create(&b, n);
    ck_assert_msg(st == VT_ERR_DEVICE && b == NULL && *vt_last_error(),
                  "backend on missing device %d: status %d, '%s'", n, st, vt_last_error());
    if (n > 0) {
        ck_assert_msg(vt_backend_cuda_create(&b, 0) == VT_OK, "device 0: %s", vt_last_error());
        vt_cuda_conv_info info;
        vt_backend_cuda_conv_info(b, &info);
        ck_assert_msg(info.engine[0] && info.cudnn == mapped("libcudnn"), "%s", info.engine);
        if (!dnn_on)
            ck_assert_msg(!info.cudnn && strstr(info.engine, "im2col") && !mapped("libcudnn"),
                          "without VT_CUDNN=1: %s", info.engine);
        vt_backend_destroy(b);
    }
}
END_TEST

/* The NCCL engine's entry points through the module's table (cuda/nccl_comm.cu), with a fake
 * NCCL (tests/fake_nccl.c: its id is the bytes 0..127) and without one; a real communicator
 * needs two GPUs. */
START_TEST(test_module_nccl)
{
    fresh_process();
    ck_assert_msg(real_module[0], "VT_CUDA_PLUGIN is not set (run through meson test)");
    setenv("VT_CUDA_PLUGIN", real_module, 1);
    const char *dir = getenv("VT_TEST_FAKE_MODULES");
    ck_assert_msg(dir && *dir, "VT_TEST_FAKE_MODULES is not set (run through meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/fake-nccl.so", dir);
    setenv("VT_NCCL_LIBRARY", path, 1);
    unsigned char id[VT_NCCL_ID_BYTES];
    memset(id, 0xff, sizeof id);
    ck_assert_msg(vt_cuda_nccl_unique_id(id) == VT_OK, "unique id: %s", vt_last_error());
    for (int i = 0; i < VT_NCCL_ID_BYTES; i++) ck_assert_int_eq(id[i], i);
    /* a CPU backend is refused, naming why */
    vt_backend *cpu = NULL;
    ck_assert_int_eq(vt_backend_cpu_create(&cpu, 1), VT_OK);
    struct vt_comm *c = (struct vt_comm *)cpu;
    vt_status st = vt_cuda_nccl_open(&c, cpu, id, 0, 2, 0, 2, 1.0);
    ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT && c == NULL &&
                      strstr(vt_last_error(), "not a CUDA backend"),
                  "CPU backend: status %d, '%s'", st, vt_last_error());
    vt_backend_destroy(cpu);
}
END_TEST

START_TEST(test_module_nccl_missing)
{
    fresh_process();
    setenv("VT_CUDA_PLUGIN", real_module, 1);
    setenv("VT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    unsigned char id[VT_NCCL_ID_BYTES];
    vt_status st = vt_cuda_nccl_unique_id(id);
    ck_assert_msg(st == VT_ERR_UNSUPPORTED && strstr(vt_last_error(), "GPU ranks need NCCL") &&
                      strstr(vt_last_error(), "/nonexistent/libnccl.so.2"),
                  "no NCCL: status %d, '%s'", st, vt_last_error());
}
END_TEST
#else
START_TEST(test_module_no_cuda_build)
{
    expect_no_gpu(NULL, "no CUDA support", NULL);
}
END_TEST
#endif

/* The first use from many threads at once: one load, the same answer everywhere. */
typedef struct racer {
    int count;
    vt_status st;
    char msg[VT_ERRMSG_MAX];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    r->count = vt_device_count();
    r->st = vt_device_info(0, NULL, 0, NULL, NULL, NULL, NULL);
    snprintf(r->msg, sizeof r->msg, "%s", vt_last_error());
    return NULL;
}

START_TEST(test_module_first_use_from_threads)
{
    fresh_process();
    if (VT_HAVE_CUDA) setenv("VT_CUDA_PLUGIN", vt_test_path("nowhere/libvisiontrain-cuda.so"), 1);
    enum { N = 8 };
    racer r[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, race, &r[i]), 0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(r[i].count == 0 && r[i].st == VT_ERR_DEVICE && r[i].msg[0],
                      "thread %d: %d GPUs, status %d, '%s'", i, r[i].count, r[i].st, r[i].msg);
        ck_assert_msg(strcmp(r[i].msg, r[0].msg) == 0, "thread %d said '%s', thread 0 '%s'", i,
                      r[i].msg, r[0].msg);
    }
}
END_TEST

static Suite *suite(void)
{
    const char *p = getenv("VT_CUDA_PLUGIN");
    snprintf(real_module, sizeof real_module, "%s", p ? p : "");
    Suite *s = suite_create("cuda_module");
    TCase *tc = tcase_create("loader");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_module_first_use_from_threads);
#if VT_HAVE_CUDA
    tcase_add_test(tc, test_module_missing);
    tcase_add_test(tc, test_module_cuda_library_missing);
    tcase_add_test(tc, test_module_without_entry);
    tcase_add_test(tc, test_module_other_build);
    tcase_add_test(tc, test_module_real);
    tcase_add_test(tc, test_module_nccl);
    tcase_add_test(tc, test_module_nccl_missing);
#else
    tcase_add_test(tc, test_module_no_cuda_build);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
