/* A GPU's live figures: the NVML loader (cuda/nvml.c, linked here directly) against fake NVMLs
 * built by the test setup (fake_nvml.c), the answers without NVML or without a GPU, and the GPU
 * columns of the results table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/device.h"
#include "nvml.h"
#include "testutil.h"
#include "train/gpu_metrics.h"
#include "train/results.h"
#include "train/trainer_impl.h"

static const char *env_path(const char *name)
{
    const char *p = getenv(name);
    ck_assert_msg(p && *p, "%s is not set (run through meson test)", name);
    return p;
}

START_TEST(test_fake_nvml_figures)
{
    char why[256] = "x";
    vt_nvml *n = vt_nvml_open(env_path("VT_TEST_FAKE_NVML"), why, sizeof why);
    ck_assert_msg(n != NULL, "the fake NVML did not load: %s", why);
    ck_assert_str_eq(why, "");
    vt_gpu_metrics g;
    /* the CUDA runtime's spelling of the bus id, matched by NVML */
    ck_assert_uint_eq(vt_nvml_sample(n, "0000:3B:00.0", -1, &g),
                      VT_GPU_HAVE_UTIL | VT_GPU_HAVE_MEMORY | VT_GPU_HAVE_POWER |
                          VT_GPU_HAVE_TEMP);
    ck_assert_uint_eq(g.have, 15);
    ck_assert_double_eq(g.util_pct, 97);
    ck_assert_double_eq(g.mem_used_bytes, 41200000000.0);
    ck_assert_double_eq(g.mem_total_bytes, 139800000000.0);
    ck_assert_double_eq_tol(g.power_w, 512.34, 1e-9); /* milliwatts -> watts */
    ck_assert_double_eq(g.temp_c, 61);
    /* a bus NVML does not know: the index; this GPU refuses power and temperature */
    memset(&g, 0x55, sizeof g);
    ck_assert_uint_eq(vt_nvml_sample(n, "0000:99:00.0", 1, &g),
                      VT_GPU_HAVE_UTIL | VT_GPU_HAVE_MEMORY);
    ck_assert_double_eq(g.util_pct, 5);
    ck_assert_double_eq(g.mem_used_bytes, 1e9);
    ck_assert_double_eq(g.mem_total_bytes, 139800000000.0);
    ck_assert_double_eq(g.power_w, 0);
    ck_assert_double_eq(g.temp_c, 0);
    ck_assert_uint_eq(vt_nvml_sample(n, NULL, 0, &g), 15); /* no bus id: the index */
    ck_assert_double_eq(g.util_pct, 97);
    /* no such device */
    ck_assert_uint_eq(vt_nvml_sample(n, "0000:99:00.0", -1, &g), 0);
    ck_assert_uint_eq(g.have, 0);
    ck_assert_uint_eq(vt_nvml_sample(n, NULL, 7, &g), 0);
    vt_nvml_close(n);
}
END_TEST

/* Without NVML (or with a broken one) there are no figures, and no error. */
START_TEST(test_nvml_missing)
{
    char why[512];
    vt_err_clear();
    vt_nvml *n = vt_nvml_open("/nonexistent/" VT_NVML_FILE, why, sizeof why);
    ck_assert_ptr_null(n);
    ck_assert_msg(strstr(why, "NVML could not be loaded") && strstr(why, "/nonexistent/"), "%s",
                  why);
    ck_assert_str_eq(vt_last_error(), ""); /* not an error of the library */
    vt_gpu_metrics g;
    memset(&g, 0x55, sizeof g);
    ck_assert_uint_eq(vt_nvml_sample(NULL, "0000:3B:00.0", 0, &g), 0);
    ck_assert_uint_eq(g.have, 0);
    ck_assert_double_eq(g.util_pct, 0);
    vt_nvml_close(NULL);
    ck_assert_ptr_null(vt_nvml_open("/nonexistent/" VT_NVML_FILE, NULL, 0)); /* no why */

    char path[4096];
    const char *dir = env_path("VT_TEST_FAKE_NVML_DIR");
    snprintf(path, sizeof path, "%s/fake-nvml-init-fails.so", dir);
    ck_assert_ptr_null(vt_nvml_open(path, why, sizeof why));
    ck_assert_msg(strstr(why, "did not initialise: error 9"), "%s", why);
    snprintf(path, sizeof path, "%s/fake-nvml-incomplete.so", dir);
    ck_assert_ptr_null(vt_nvml_open(path, why, sizeof why));
    ck_assert_msg(strstr(why, "nvmlDeviceGetTemperature"), "%s", why);
    ck_assert_str_eq(vt_last_error(), "");
}
END_TEST

/* The device layer: the CPU has no figures; a GPU whose module was never loaded neither (asking
 * does not load it). */
START_TEST(test_device_layer)
{
    vt_device cpu, gpu;
    ck_assert_int_eq(vt_device_parse("cpu", &cpu), VT_OK);
    ck_assert_int_eq(vt_device_parse("cuda:0", &gpu), VT_OK);
    vt_gpu_metrics g;
    memset(&g, 0x55, sizeof g);
    ck_assert_uint_eq(vt_device_metrics(&cpu, &g), 0);
    ck_assert_uint_eq(g.have, 0);
    ck_assert_uint_eq(vt_device_metrics(&gpu, &g), 0);
    ck_assert_uint_eq(vt_cuda_gpu_metrics(0, &g), 0);
    size_t total, avail;
    ck_assert_int_eq(vt_device_capacity(&cpu, &total, &avail), VT_OK);
    ck_assert_msg(total > ((size_t)64 << 20) && avail > 0 && avail <= total,
                  "host memory %zu, available %zu", total, avail);
}
END_TEST

/* The trainer's side (lib/train/gpu_metrics.c) on a fake GPU device: the figures it gives go
 * into the progress record, those it does not are absent, at most one sample a second. */
static int fake_calls;
static unsigned fake_have;

static unsigned fake_metrics(int index, vt_gpu_metrics *out)
{
    ck_assert_int_eq(index, 3);
    fake_calls++;
    out->have = fake_have;
    out->util_pct = 50;
    out->mem_used_bytes = 1e9;
    out->mem_total_bytes = 2e9;
    out->power_w = 300;
    out->temp_c = 70;
    return out->have;
}

START_TEST(test_trainer_samples)
{
    static const vt_device_iface fake_gpu = {.name = "fakegpu", .kind = VT_DEVICE_KIND_GPU,
                                             .max_index = 7, .metrics = fake_metrics};
    vt_model *m;
    vt_trainer *t;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, NULL), VT_OK);
    vt_backend *cpu;
    ck_assert_int_eq(vt_backend_cpu_create(&cpu, 1), VT_OK);
    ck_assert_int_eq(vt_device_parse("cpu", &t->dev), VT_OK);
    t->be = cpu;
    fake_calls = 0;
    vt_train_gpu_sample(t); /* the CPU: nothing asked, nothing set */
    ck_assert_int_eq(vt_train_gpu_begin(t), VT_OK);
    ck_assert_int_eq(t->results.gpu_col, 0);
    ck_assert_int_eq(fake_calls, 0);
    double v;
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_UTIL, &v), VT_ERR_NOT_FOUND);

    t->dev = (vt_device){&fake_gpu, 3};
    ck_assert_int_eq(vt_train_gpu_begin(t), VT_OK);
    ck_assert_int_gt(t->results.gpu_col, 0);
    fake_have = VT_GPU_HAVE_UTIL | VT_GPU_HAVE_MEMORY | VT_GPU_HAVE_TEMP;
    vt_train_gpu_sample(t);
    ck_assert_int_eq(fake_calls, 1);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_UTIL, &v), VT_OK);
    ck_assert_double_eq(v, 50);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_MEMORY_USED_BYTES, &v), VT_OK);
    ck_assert_double_eq(v, 1e9);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_MEMORY_TOTAL_BYTES, &v), VT_OK);
    ck_assert_double_eq(v, 2e9);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_TEMP_C, &v), VT_OK);
    ck_assert_double_eq(v, 70);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_POWER_W, &v), VT_ERR_NOT_FOUND);
    /* within the second: not asked again */
    fake_have = 0;
    for (int i = 0; i < 100; i++) vt_train_gpu_sample(t);
    ck_assert_int_eq(fake_calls, 1);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_UTIL, &v), VT_OK);
    /* a second later: asked; NVML gone, the figures are absent */
    t->gpu_sampled_at -= 1.0;
    vt_train_gpu_sample(t);
    ck_assert_int_eq(fake_calls, 2);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_UTIL, &v), VT_ERR_NOT_FOUND);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_GPU_TEMP_C, &v), VT_ERR_NOT_FOUND);
    t->be = NULL;
    vt_backend_destroy(cpu);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
}
END_TEST

static void csv_of(const vt_results *r, char **text, size_t *len)
{
    ck_assert_int_eq(vt_results_to_csv(r, 1, text, len), VT_OK);
}

/* A GPU run's table: the GPU columns after the others, NaN for a figure that is absent and for
 * the rows before them; read back from a checkpoint's copy with or without them. */
START_TEST(test_results_gpu_columns)
{
    const vt_task_iface *task = vt_task_find(VT_TASK_CLASSIFY);
    vt_results r;
    vt_results_init(&r, task);
    int n0 = r.ncol;
    ck_assert_int_eq(r.gpu_col, 0);
    vt_progress p;
    memset(&p, 0, sizeof p);
    vt_progress_set(&p, VT_METRIC_LR, 0.01);
    double row[VT_RESULTS_MAXCOL];
    vt_results_row(task, 1, 2.5, 0, &p, 3, 0, 3, row);
    vt_results_row_gpu(&r, &p, row); /* no GPU columns: nothing */
    ck_assert_int_eq(vt_results_append(&r, row), VT_OK);
    char *cpu_csv;
    size_t cpu_len;
    csv_of(&r, &cpu_csv, &cpu_len);
    ck_assert_ptr_null(strstr(cpu_csv, "gpu/"));

    ck_assert_int_eq(vt_results_add_gpu(&r), VT_OK);
    ck_assert_int_eq(vt_results_add_gpu(&r), VT_OK); /* once */
    ck_assert_int_eq(r.gpu_col, n0);
    ck_assert_int_eq(r.ncol, n0 + 5);
    ck_assert_str_eq(r.cols[n0], "gpu/util_pct");
    ck_assert_str_eq(r.cols[n0 + 4], "gpu/temp_c");
    ck_assert_double_eq(r.v[1], 2.5); /* the earlier row kept, widened with NaN */
    for (int c = n0; c < n0 + 5; c++) ck_assert(isnan(r.v[c]));
    for (int c = n0; c < n0 + 5; c++) ck_assert_int_eq(r.plot[c], 0);

    vt_progress_set(&p, VT_METRIC_GPU_UTIL, 97);
    vt_progress_set(&p, VT_METRIC_GPU_MEMORY_USED_BYTES, 41.2e9);
    vt_progress_set(&p, VT_METRIC_GPU_MEMORY_TOTAL_BYTES, 139.8e9);
    vt_progress_set(&p, VT_METRIC_GPU_TEMP_C, 61); /* no power figure */
    vt_results_row(task, 2, 2.0, 0, &p, 3, 0, 6, row);
    vt_results_row_gpu(&r, &p, row);
    ck_assert_int_eq(vt_results_append(&r, row), VT_OK);
    const double *r2 = r.v + r.ncol;
    ck_assert_double_eq(r2[n0], 97);
    ck_assert_double_eq_tol(r2[n0 + 1], 41.2, 1e-12);
    ck_assert_double_eq_tol(r2[n0 + 2], 139.8, 1e-12);
    ck_assert(isnan(r2[n0 + 3]));
    ck_assert_double_eq(r2[n0 + 4], 61);

    char *csv;
    size_t len;
    csv_of(&r, &csv, &len);
    ck_assert_msg(strstr(csv, ",time/elapsed,gpu/util_pct,gpu/mem_used_gb,gpu/mem_total_gb,"
                              "gpu/power_w,gpu/temp_c\n"), "%s", csv);
    /* a resumed run reads the table back: a fresh table takes the GPU columns from the text */
    vt_results back;
    vt_results_init(&back, task);
    ck_assert_int_eq(vt_results_from_csv(&back, csv, len, "t"), VT_OK);
    ck_assert_int_eq(back.gpu_col, n0);
    ck_assert_int_eq(back.n, 2);
    ck_assert_mem_eq(back.v + back.ncol, r2, (size_t)n0 * sizeof(double));
    ck_assert_double_eq(back.v[back.ncol + n0], 97);
    /* ... and a CPU run's table stays without them */
    vt_results cpu;
    vt_results_init(&cpu, task);
    ck_assert_int_eq(vt_results_from_csv(&cpu, cpu_csv, cpu_len, "t"), VT_OK);
    ck_assert_int_eq(cpu.gpu_col, 0);
    ck_assert_int_eq(cpu.ncol, n0);
    /* a header with other columns is still refused, naming the expected ones */
    vt_results bad;
    vt_results_init(&bad, task);
    char *other = strdup(csv);
    memcpy(strstr(other, "gpu/temp_c"), "gpu/temp_x", 10);
    ck_assert_int_eq(vt_results_from_csv(&bad, other, len, "t"), VT_ERR_CHECKPOINT);
    ck_assert_msg(strstr(vt_last_error(), "expected 'epoch,") &&
                      strstr(vt_last_error(), "time/elapsed'"), "%s", vt_last_error());
    free(other);
    vt_results_free(&bad);
    vt_results_free(&cpu);
    vt_results_free(&back);
    free(csv);
    free(cpu_csv);
    vt_results_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu_metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_fake_nvml_figures);
    tcase_add_test(tc, test_nvml_missing);
    tcase_add_test(tc, test_device_layer);
    tcase_add_test(tc, test_trainer_samples);
    tcase_add_test(tc, test_results_gpu_columns);
    suite_add_tcase(s, tc);
    return vt_test_run(s);
}
