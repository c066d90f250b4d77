/* Whole-run parity of the CUDA backend against the CPU one, through the public API only: the same
 * model (same initialisation seed), the same data and the same options on device=cpu and on
 * device=N must give the same losses, step after step (classification through vt_trainer_step)
 * and epoch after epoch (detection and segmentation through vt_trainer_run, whose loader is
 * deterministic for a seed).  fp32 must agree closely; TF32 within its rounding.
 *
 * The experimental GPU precision=bf16 (VT_CUDA_BF16=1) and CUDA graphs (VT_CUDA_GRAPHS=1), both
 * not yet run on a GPU: test_bf16_* against fp32 on the same GPU, test_graph_steps replays
 * against plain launches (bit for bit).
 *
 * Exits 77 (meson's "skipped") when the machine has no GPU or the build has no CUDA.
 * VT_TEST_CUDA_DEVICE picks the device (default 0; "cpu" runs the test against the CPU itself). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_device.h"
#include "testutil.h"
#include "train/trainer_impl.h" /* t->be: the graphs' counters */
#include "visiontrain/visiontrain.h"

static char gpu[32] = "0";

enum { STEPS = 20, BATCH = 16 };

/* test_graph_steps: every 5th step trains on the first TAIL images only (a shape change, as
 * an epoch's trailing batch), and the graphs' counters of the last run */
enum { TAIL = 8 };
static int with_tail;
static vt_cuda_graph_info last_graphs;

/* Losses of STEPS vt_trainer_step calls on fixed random data. */
static void step_losses(const char *arch, const char *model_opts, int channels, int imgsz,
                        const char *device, const char *precision, const char *optimizer,
                        float *losses)
{
    vt_model *m;
    ck_assert_msg(vt_model_create(&m, arch, 10, model_opts) == VT_OK, "%s", vt_last_error());
    vt_trainer *t;
    ck_assert_msg(vt_trainer_create(&t, m, NULL) == VT_OK, "%s", vt_last_error());
    char kv[64];
    snprintf(kv, sizeof kv, "device=%s", device);
    ck_assert_msg(vt_trainer_set(t, kv) == VT_OK, "%s: %s", kv, vt_trainer_last_error(t));
    snprintf(kv, sizeof kv, "precision=%s", precision);
    ck_assert_int_eq(vt_trainer_set(t, kv), VT_OK);
    snprintf(kv, sizeof kv, "optimizer=%s", optimizer);
    ck_assert_int_eq(vt_trainer_set(t, kv), VT_OK);
    size_t n = (size_t)BATCH * channels * imgsz * imgsz;
    float *x = malloc(n * sizeof *x);
    int32_t y[BATCH];
    ck_assert_ptr_nonnull(x);
    uint64_t r = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((r >> 40) * (1.0 / 16777216.0));
    }
    for (int i = 0; i < BATCH; i++) y[i] = (i * 7) % 10;
    for (int s = 0; s < STEPS; s++) {
        losses[s] = NAN;
        int nb = with_tail && s % 5 == 4 ? TAIL : BATCH;
        ck_assert_msg(vt_trainer_step(t, x, y, nb, &losses[s]) == VT_OK, "%s on %s step %d: %s",
                      arch, device, s, vt_trainer_last_error(t));
    }
    vt_backend_cuda_graph_info(t->be, &last_graphs); /* zeros for the CPU */
    if (strcmp(device, "cpu") != 0) {
        double mem = 0;
        ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_DEVICE_MEMORY_BYTES, &mem), VT_OK);
        ck_assert_msg(mem > 0, "%s: no device memory reported on %s", arch, device);
    }
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    free(x);
}

static void check_steps(const char *arch, const char *model_opts, int channels, int imgsz,
                        const char *precision, const char *optimizer, double tol)
{
    float c[STEPS], g[STEPS];
    step_losses(arch, model_opts, channels, imgsz, "cpu", precision, optimizer, c);
    step_losses(arch, model_opts, channels, imgsz, gpu, precision, optimizer, g);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        double e = fabs((double)g[s] - c[s]) / fmax(1.0, fabs((double)c[s]));
        fprintf(stderr, "%-9s %-5s %-5s step %2d  cpu %.6f  gpu %.6f  rel %.2e\n", arch,
                precision, optimizer, s, c[s], g[s], e);
        ck_assert_msg(isfinite(g[s]), "%s step %d: GPU loss %f", arch, s, g[s]);
        if (e > worst) worst = e;
    }
    ck_assert_msg(worst <= tol, "%s %s %s: losses differ by %.3g (relative) > %.3g", arch,
                  precision, optimizer, worst, tol);
    /* It must also have learnt something: the last loss below the first. */
    ck_assert_msg(g[STEPS - 1] < g[0], "%s on the GPU: loss %f -> %f", arch, g[0], g[STEPS - 1]);
}

START_TEST(test_cnn_small_fp32)
{
    check_steps("cnn-small", "channels=1 imgsz=28", 1, 28, "fp32", "sgd", 1e-3);
}
END_TEST

START_TEST(test_cls_n_fp32)
{
    check_steps("cls-n", "channels=3 imgsz=32", 3, 32, "fp32", "sgd", 1e-3);
}
END_TEST

START_TEST(test_cls_n_adamw_fp32)
{
    check_steps("cls-n", "channels=3 imgsz=32", 3, 32, "fp32", "adamw", 1e-3);
}
END_TEST

START_TEST(test_resnet18_tf32)
{
    check_steps("resnet18", "channels=3 imgsz=32", 3, 32, "tf32", "sgd", 3e-2);
}
END_TEST

/* ---- experimental: precision=bf16 and CUDA graphs on the GPU --------------------------------- */

/* A variable set for the scope of a test (restored: the other tests run without it). */
static void set_env(const char *name, const char *value)
{
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

/* precision=bf16 on a GPU without VT_CUDA_BF16=1: VT_ERR_UNSUPPORTED, naming the variable. */
START_TEST(test_bf16_refused_without_env)
{
    if (!strcmp(gpu, "cpu")) return; /* the CPU has its own rule (AVX512-BF16) */
    set_env("VT_CUDA_BF16", NULL);
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 10, "channels=1 imgsz=28"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, NULL), VT_OK);
    char kv[64];
    snprintf(kv, sizeof kv, "device=%s", gpu);
    ck_assert_int_eq(vt_trainer_set(t, kv), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "precision=bf16"), VT_OK);
    float x[4 * 28 * 28] = {0}, loss;
    int32_t y[4] = {0, 1, 2, 3};
    ck_assert_int_eq(vt_trainer_step(t, x, y, 4, &loss), VT_ERR_UNSUPPORTED);
    const char *msg = vt_trainer_last_error(t);
    ck_assert_msg(strstr(msg, "VT_CUDA_BF16=1") != NULL, "message: %s", msg);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
}
END_TEST

/* STEPS steps in bf16 (VT_CUDA_BF16=1) against the same steps in fp32 on the same GPU.
 * Tolerance: relative difference of each step's loss <= 5e-2.  bf16 keeps 8 mantissa bits
 * (relative rounding 2^-9 = 2e-3 per operand, against TF32's 10 bits and 5e-4), and the
 * difference grows as the weights drift apart over the steps; TF32 against the CPU's fp32 is
 * allowed 3e-2 for ResNet-18 above.  Both must learn (the last loss below the first). */
static void check_bf16(const char *arch, const char *model_opts, int channels, int imgsz,
                       const char *optimizer)
{
    if (!strcmp(gpu, "cpu")) return; /* the CPU's bf16 is test_gemm_bf16's */
    float f[STEPS], h[STEPS];
    step_losses(arch, model_opts, channels, imgsz, gpu, "fp32", optimizer, f);
    set_env("VT_CUDA_BF16", "1");
    step_losses(arch, model_opts, channels, imgsz, gpu, "bf16", optimizer, h);
    set_env("VT_CUDA_BF16", NULL);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        double e = fabs((double)h[s] - f[s]) / fmax(1.0, fabs((double)f[s]));
        fprintf(stderr, "%-9s bf16 %-5s step %2d  fp32 %.6f  bf16 %.6f  rel %.2e\n", arch,
                optimizer, s, f[s], h[s], e);
        ck_assert_msg(isfinite(h[s]), "%s step %d: bf16 loss %f", arch, s, h[s]);
        if (e > worst) worst = e;
    }
    ck_assert_msg(worst <= 5e-2, "%s bf16 %s: losses differ from fp32 by %.3g (relative) > 5e-2",
                  arch, optimizer, worst);
    ck_assert_msg(h[STEPS - 1] < h[0], "%s in bf16: loss %f -> %f", arch, h[0], h[STEPS - 1]);
}

START_TEST(test_bf16_cnn_small)
{
    check_bf16("cnn-small", "channels=1 imgsz=28", 1, 28, "sgd");
}
END_TEST

START_TEST(test_bf16_cls_n_adamw)
{
    check_bf16("cls-n", "channels=3 imgsz=32", 3, 32, "adamw");
}
END_TEST

/* The losses of STEPS steps with VT_CUDA_GRAPHS=1 (warm-up `warmup` steps per shape) and the
 * graphs' counters. */
static void graph_losses(const char *arch, const char *opts, int ch, int sz, const char *opt,
                         const char *warmup, float *losses, vt_cuda_graph_info *gi)
{
    set_env("VT_CUDA_GRAPHS", warmup ? "1" : NULL);
    set_env("VT_CUDA_GRAPHS_WARMUP", warmup);
    step_losses(arch, opts, ch, sz, gpu, "tf32", opt, losses);
    *gi = last_graphs;
    set_env("VT_CUDA_GRAPHS", NULL);
    set_env("VT_CUDA_GRAPHS_WARMUP", NULL);
}

/* Graph replays against plain launches: the same losses bit for bit.  The reference is the
 * same setting with a warm-up longer than the run (so it never captures, but has the cuBLAS
 * workspace of graph mode, which could change cuBLAS's choice of kernels), then the default
 * (graphs off) within 1e-4 relative: a GEMM kernel chosen otherwise sums in another order
 * (about 1e-6 a product in fp32 accumulation), and the steps carry it on.  Every 5th step is a
 * smaller batch: another shape, warmed up and captured on its own.  With 2 warm-up steps a shape,
 * of the 16 full batches 2 run plainly, 1 is captured and 13 replay; of the 4 small ones 2, 1
 * and 1.  SGD (cnn-small) and AdamW (cls-n: bias corrections change every step). */
static void check_graphs(const char *arch, const char *opts, int ch, int sz, const char *opt)
{
    if (!strcmp(gpu, "cpu")) return;
    float ref[STEPS], g[STEPS], off[STEPS];
    vt_cuda_graph_info gi_ref, gi, gi_off;
    with_tail = 1;
    graph_losses(arch, opts, ch, sz, opt, "1000000", ref, &gi_ref);
    graph_losses(arch, opts, ch, sz, opt, "2", g, &gi);
    graph_losses(arch, opts, ch, sz, opt, NULL, off, &gi_off);
    with_tail = 0;
    fprintf(stderr, "%s graphs: plain %llu captured %llu replayed %llu reinstantiated %llu "
            "failed %llu%s%s\n", arch, gi.plain, gi.captured, gi.replayed, gi.reinstantiated,
            gi.failed, gi.state[0] ? ": " : "", gi.state);
    ck_assert_msg(gi.enabled && gi.active && gi.failed == 0, "%s: graphs %s", arch, gi.state);
    ck_assert_msg(gi.captured == 2 && gi.replayed == 14 && gi.plain == 4,
                  "%s: plain %llu captured %llu replayed %llu (expected 4, 2, 14)", arch,
                  gi.plain, gi.captured, gi.replayed);
    ck_assert_msg(gi_ref.captured + gi_ref.replayed == 0, "the reference captured");
    ck_assert_msg(!gi_off.enabled, "graphs on without VT_CUDA_GRAPHS");
    for (int s = 0; s < STEPS; s++) {
        double e = fabs((double)off[s] - ref[s]) / fmax(1.0, fabs((double)ref[s]));
        fprintf(stderr, "%-9s graphs step %2d  plain %.9g  graph %.9g  off %.9g\n", arch, s,
                ref[s], g[s], off[s]);
        ck_assert_msg(memcmp(&g[s], &ref[s], sizeof g[s]) == 0,
                      "%s step %d: the graph's loss %.9g is not the plain launches' %.9g", arch,
                      s, g[s], ref[s]);
        ck_assert_msg(e <= 1e-4, "%s step %d: graphs off %.9g vs plain %.9g", arch, s, off[s],
                      ref[s]);
    }
}

START_TEST(test_graph_steps)
{
    check_graphs("cnn-small", "channels=1 imgsz=28", 1, 28, "sgd");
    check_graphs("cls-n", "channels=3 imgsz=32", 3, 32, "adamw");
}
END_TEST

/* Two epochs of vt_trainer_run on a generated dataset: training and validation losses and the
 * task's fitness on the CPU and the GPU. */
static void run_epochs(vt_task task, const char *arch, const char *dir, const char *device,
                       double out[3])
{
    vt_dataset *ds;
    ck_assert_msg(vt_dataset_open(&ds, task, dir) == VT_OK, "%s", vt_last_error());
    vt_model *m;
    ck_assert_msg(vt_model_create(&m, arch, vt_dataset_num_classes(ds), "imgsz=64") == VT_OK,
                  "%s", vt_last_error());
    vt_trainer *t;
    ck_assert_msg(vt_trainer_create(&t, m, ds) == VT_OK, "%s", vt_last_error());
    char dev[64];
    snprintf(dev, sizeof dev, "device=%s", device);
    const char *opts[] = {"epochs=2", "batch=8", "save=0", "workers=2", "seed=0",
                          "precision=fp32", "optimizer=adamw", "lr0=0.002", dev};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        ck_assert_msg(vt_trainer_set(t, opts[i]) == VT_OK, "%s: %s", opts[i],
                      vt_trainer_last_error(t));
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s on %s: %s", arch, device,
                  vt_trainer_last_error(t));
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_LOSS, &out[0]), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &out[1]), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_FITNESS, &out[2]), VT_OK);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

static void check_run(vt_task task, const char *arch, const char *name)
{
    const char *dir = vt_test_path("%s", name);
    ck_assert_int_eq(vt_synth_generate(dir, task, "classes=3 train=32 val=8 imgsz=64 seed=5"),
                     VT_OK);
    double c[3], g[3];
    run_epochs(task, arch, dir, "cpu", c);
    run_epochs(task, arch, dir, gpu, g);
    static const char *const what[] = {"train loss", "val loss", "fitness"};
    for (int i = 0; i < 3; i++) {
        double e = fabs(g[i] - c[i]) / fmax(1.0, fabs(c[i]));
        fprintf(stderr, "%-6s %-10s cpu %.6f  gpu %.6f  rel %.2e\n", arch, what[i], c[i], g[i], e);
        ck_assert_msg(isfinite(g[i]) && e <= 2e-2, "%s %s: cpu %f gpu %f", arch, what[i], c[i],
                      g[i]);
    }
}

START_TEST(test_det_run)
{
    check_run(VT_TASK_DETECT, "det-n", "det");
}
END_TEST

START_TEST(test_seg_run)
{
    check_run(VT_TASK_SEGMENT, "seg-n", "seg");
}
END_TEST

/* The GPU's figures seen by a progress callback (NVML, VT_METRIC_GPU_*). */
typedef struct figures {
    int batches, with_figures;
    double util, used, total, power, temp;
} figures;

static int see_figures(void *user, vt_event ev, const vt_progress *p)
{
    figures *f = user;
    if (ev != VT_EVENT_BATCH_END) return 0;
    f->batches++;
    if (vt_progress_metric(p, VT_METRIC_GPU_MEMORY_TOTAL_BYTES, &f->total) != VT_OK) return 0;
    f->with_figures++;
    ck_assert_int_eq(vt_progress_metric(p, VT_METRIC_GPU_MEMORY_USED_BYTES, &f->used), VT_OK);
    if (vt_progress_metric(p, VT_METRIC_GPU_UTIL, &f->util)) f->util = NAN;
    if (vt_progress_metric(p, VT_METRIC_GPU_POWER_W, &f->power)) f->power = NAN;
    if (vt_progress_metric(p, VT_METRIC_GPU_TEMP_C, &f->temp)) f->temp = NAN;
    return 0;
}

/* batch=-1 on the GPU picks a batch that trains, and a GPU run reports its figures in the
 * progress record and results.csv (NVML; VT_TEST_EXPECT_NVML=1 makes their absence a
 * failure, as on a machine known to have NVML). */
START_TEST(test_autobatch_and_figures)
{
    const char *dir = vt_test_path("autobatch");
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_CLASSIFY,
                                       "classes=3 train=32 val=8 imgsz=32 seed=5"), VT_OK);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, dir), VT_OK);
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 3, "imgsz=32"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    char dev[64], project[4200];
    snprintf(dev, sizeof dev, "device=%s", gpu);
    snprintf(project, sizeof project, "project=%s", vt_test_path("runs"));
    const char *opts[] = {"epochs=2", "batch=-1", "workers=2", "plots=0", dev, project};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        ck_assert_msg(vt_trainer_set(t, opts[i]) == VT_OK, "%s", opts[i]);
    figures f;
    memset(&f, 0, sizeof f);
    vt_trainer_set_progress(t, see_figures, &f);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "batch=-1 on %s: %s", gpu, vt_trainer_last_error(t));
    double b = 0;
    ck_assert_int_eq(vt_trainer_get_float(t, VT_OPT_BATCH, &b), VT_OK);
    fprintf(stderr, "batch=-1 on %s: batch %.0f of 96 training images; GPU figures in %d of %d "
            "batches: %.0f%% %.2f/%.2f GB %.0f W %.0f C\n", gpu, b, f.with_figures, f.batches,
            f.util, f.used / 1e9, f.total / 1e9, f.power, f.temp);
    ck_assert_msg(b >= 2 && b <= 96, "batch=-1 chose %.0f", b);
    char path[4400];
    snprintf(path, sizeof path, "%s/results.csv", vt_trainer_run_dir(t));
    size_t n;
    char *csv = vt_test_read_file(path, &n);
    ck_assert_ptr_nonnull(csv);
    int on_gpu = strcmp(gpu, "cpu") != 0;
    ck_assert_msg(!strstr(csv, "gpu/util_pct") == !on_gpu, "%s", csv);
    free(csv);
    const char *expect = getenv("VT_TEST_EXPECT_NVML");
    if (on_gpu && expect && !strcmp(expect, "1"))
        ck_assert_msg(f.with_figures > 0, "no GPU figures (is NVML, libnvidia-ml.so.1, there?)");
    if (f.with_figures) {
        ck_assert_msg(f.total > 1e9 && f.used > 0 && f.used <= f.total, "memory %g / %g",
                      f.used, f.total);
        ck_assert_msg(isnan(f.util) || (f.util >= 0 && f.util <= 100), "util %g", f.util);
        ck_assert_msg(isnan(f.temp) || (f.temp > 0 && f.temp < 130), "temp %g", f.temp);
        ck_assert_msg(isnan(f.power) || f.power > 0, "power %g", f.power);
    }
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

int main(void)
{
    const char *env = getenv("VT_TEST_CUDA_DEVICE");
    if (env) snprintf(gpu, sizeof gpu, "%s", env);
    /* VT_TEST_CUDA_DEVICE=cpu compares the CPU with itself: a check of this test, anywhere. */
    if (strcmp(gpu, "cpu") != 0 && vt_device_count() <= 0) {
        fprintf(stderr, "test_cuda_train: no GPU (or a build without CUDA), skipped\n");
        return 77;
    }
    Suite *s = suite_create("cuda_train");
    TCase *tc = tcase_create("parity");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_cnn_small_fp32);
    tcase_add_test(tc, test_cls_n_fp32);
    tcase_add_test(tc, test_cls_n_adamw_fp32);
    tcase_add_test(tc, test_resnet18_tf32);
    tcase_add_test(tc, test_det_run);
    tcase_add_test(tc, test_seg_run);
    tcase_add_test(tc, test_autobatch_and_figures);
    suite_add_tcase(s, tc);
    /* the experimental bf16 and CUDA graphs (CK_RUN_CASE=experimental runs only these) */
    TCase *tx = tcase_create("experimental");
    tcase_add_checked_fixture(tx, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tx, 600);
    tcase_add_test(tx, test_bf16_refused_without_env);
    tcase_add_test(tx, test_bf16_cnn_small);
    tcase_add_test(tx, test_bf16_cls_n_adamw);
    tcase_add_test(tx, test_graph_steps);
    suite_add_tcase(s, tx);
    /* No fork: the CUDA driver, initialised by vt_device_count above, does not survive one. */
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
