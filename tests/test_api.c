/* The public API as a whole: NULL handles and arguments everywhere (an error status with a
 * message, or the neutral value for getters; never a crash), xxx_destroy(NULL), call-order
 * errors, cancelling a run from another thread and from the progress callback, and a GPU device
 * on a machine without one. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"
#include "vt_config.h"

/* A failing call: not VT_OK, the expected status when given, and a message for the thread. */
#define EXPECT_ERR(call, want)                                                                     \
    do {                                                                                           \
        vt_err_clear();                                                                            \
        vt_status st_ = (call);                                                                    \
        ck_assert_msg(st_ != VT_OK, "%s succeeded", #call);                                        \
        ck_assert_msg((want) == 0 || st_ == (want), "%s: status %d (%s), expected %d", #call, st_,  \
                      vt_status_string(st_), (int)(want));                                         \
        ck_assert_msg(*vt_last_error() != 0, "%s: status %d but no message", #call, st_);          \
    } while (0)

#define EXPECT_EQ(expr, value)                                                                     \
    ck_assert_msg((expr) == (value), "%s: not the neutral value %s", #expr, #value)

#define EXPECT_EMPTY_STR(expr)                                                                     \
    do {                                                                                           \
        const char *s_ = (expr);                                                                   \
        ck_assert_msg(s_ == NULL || *s_ == 0, "%s: '%s'", #expr, s_);                              \
    } while (0)

static void log_fn(void *u, vt_log_level l, const char *m) { (void)u; (void)l; (void)m; }
static int prog_fn(void *u, vt_event e, const vt_progress *p) { (void)u; (void)e; (void)p; return 0; }

/* ---- NULL everywhere ------------------------------------------------------------------------- */

START_TEST(test_destroy_null)
{
    vt_dataset_destroy(NULL);
    vt_model_destroy(NULL);
    vt_trainer_destroy(NULL);
    vt_catalog_destroy(NULL);
    vt_estimator_destroy(NULL);
    /* and the void setters on NULL handles */
    vt_trainer_set_log(NULL, log_fn, NULL, VT_LOG_DEBUG);
    vt_trainer_set_progress(NULL, prog_fn, NULL);
    vt_trainer_cancel(NULL);
    vt_estimator_set_log(NULL, log_fn, NULL, VT_LOG_DEBUG);
    ck_assert_msg(vt_status_string(VT_OK) != NULL, "still alive");
}
END_TEST

START_TEST(test_device_queries)
{
    int n = vt_device_count();
    ck_assert_msg(n >= 0 && (VT_HAVE_CUDA || n == 0), "vt_device_count() = %d", n);
    ck_assert_msg(vt_device_count() == n, "vt_device_count() changed between calls");
    char name[64];
    int ma, mi;
    uint64_t total, avail;
    int bad[] = {-1, n, n + 1, 1 << 20};
    for (int i = 0; i < 4; i++) {
        vt_err_clear();
        vt_status st = vt_device_info(bad[i], name, sizeof name, &ma, &mi, &total, &avail);
        ck_assert_msg(st == VT_ERR_DEVICE, "vt_device_info(%d) with %d GPUs: status %d", bad[i], n,
                      st);
        ck_assert_msg(*vt_last_error(), "vt_device_info(%d): no message", bad[i]);
        st = vt_device_info(bad[i], NULL, 0, NULL, NULL, NULL, NULL);
        ck_assert_msg(st == VT_ERR_DEVICE, "vt_device_info(%d, all NULL): status %d", bad[i], st);
    }
    for (int d = 0; d < n; d++) {
        vt_status st = vt_device_info(d, NULL, 0, NULL, NULL, NULL, NULL);
        ck_assert_msg(st == VT_OK, "vt_device_info(%d, all NULL): %d %s", d, st, vt_last_error());
        memset(name, 'x', sizeof name);
        st = vt_device_info(d, name, 4, &ma, &mi, &total, &avail);
        ck_assert_msg(st == VT_OK && strlen(name) <= 3, "vt_device_info(%d) name cap 4: '%.8s'", d,
                      name);
        ck_assert_msg(ma >= 3 && total > 0 && avail <= total, "GPU %d: cc %d.%d, %llu of %llu bytes",
                      d, ma, mi, (unsigned long long)avail, (unsigned long long)total);
    }
}
END_TEST

START_TEST(test_null_dataset_model)
{
    float s[4];
    uint8_t px[16 * 16 * 3] = {0};
    vt_dataset *ds = NULL;
    vt_model *m = NULL;
    /* datasets */
    EXPECT_ERR(vt_dataset_open(NULL, VT_TASK_CLASSIFY, "/tmp"), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_dataset_open(&ds, VT_TASK_CLASSIFY, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(ds == NULL, "dataset_open(NULL path): *out set");
    EXPECT_EQ(vt_dataset_task(NULL), (vt_task)0);
    EXPECT_EQ(vt_dataset_num_classes(NULL), 0);
    EXPECT_EQ(vt_dataset_class_name(NULL, 0), NULL);
    EXPECT_EQ(vt_dataset_num_images(NULL, VT_SPLIT_TRAIN), 0);
    EXPECT_EQ(vt_dataset_image_path(NULL, VT_SPLIT_TRAIN, 0), NULL);
    EXPECT_EQ(vt_dataset_image_class(NULL, VT_SPLIT_TRAIN, 0), -1);
    EXPECT_EMPTY_STR(vt_dataset_last_error(NULL));
    EXPECT_ERR(vt_synth_generate(NULL, VT_TASK_CLASSIFY, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_synth_generate("", VT_TASK_CLASSIFY, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_synth_generate(vt_test_path("syn"), VT_TASK_SEGMENT, "max_objects=65"),
               VT_ERR_OPTION_VALUE);
    /* models */
    EXPECT_ERR(vt_model_create(NULL, "cls-n", 2, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_create(&m, NULL, 2, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(m == NULL, "model_create(NULL arch): *out set");
    EXPECT_ERR(vt_model_save(NULL, vt_test_path("x.vtm")), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_load(NULL, vt_test_path("x.vtm")), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_load(&m, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(m == NULL, "model_load(NULL path): *out set");
    EXPECT_EQ(vt_model_task(NULL), (vt_task)0);
    EXPECT_EQ(vt_model_arch(NULL), NULL);
    EXPECT_EQ(vt_model_num_classes(NULL), 0);
    EXPECT_EQ(vt_model_class_name(NULL, 0), NULL);
    EXPECT_EQ(vt_model_channels(NULL), 0);
    EXPECT_EQ(vt_model_imgsz(NULL), 0);
    EXPECT_EQ(vt_model_num_params(NULL), 0);
    EXPECT_EQ(vt_model_flops(NULL, 32), 0);
    EXPECT_EMPTY_STR(vt_model_last_error(NULL));
    EXPECT_ERR(vt_model_predict_file(NULL, vt_test_path("x.png"), s, 4), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_predict_pixels(NULL, px, 16, 16, 3, 48, s, 4), VT_ERR_INVALID_ARGUMENT);
    /* with a real model, NULL arguments */
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    EXPECT_ERR(vt_model_save(m, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_predict_file(m, NULL, s, 4), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_predict_file(m, vt_test_path("x.png"), NULL, 4), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_predict_pixels(m, NULL, 16, 16, 3, 48, s, 4), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_model_predict_pixels(m, px, 16, 16, 3, 48, NULL, 4), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(vt_model_predict_pixels(m, px, 16, 16, 3, 48, s, 4) == VT_OK,
                  "the model does not predict after the NULL calls: %s", vt_model_last_error(m));
    vt_model_destroy(m);
}
END_TEST

START_TEST(test_null_trainer)
{
    vt_trainer *t = NULL;
    double v;
    float loss, img[2 * 3 * 16 * 16] = {0};
    int32_t lab[2] = {0, 1};
    EXPECT_ERR(vt_trainer_create(NULL, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_create(&t, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(t == NULL, "trainer_create(NULL model): *out set");
    EXPECT_ERR(vt_trainer_set_int(NULL, VT_OPT_EPOCHS, 1), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_set_float(NULL, VT_OPT_LR0, 0.1), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_set_string(NULL, VT_OPT_OPTIMIZER, "sgd"), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_set(NULL, "epochs=1"), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_get_float(NULL, VT_OPT_EPOCHS, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_run(NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_step(NULL, img, lab, 2, &loss), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_validate(NULL, VT_SPLIT_VAL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_metric(NULL, VT_METRIC_LOSS, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EMPTY_STR(vt_trainer_last_error(NULL));
    /* progress getters */
    EXPECT_EQ(vt_progress_epoch(NULL), 0);
    EXPECT_EQ(vt_progress_epochs(NULL), 0);
    EXPECT_EQ(vt_progress_batch(NULL), 0);
    EXPECT_EQ(vt_progress_batches(NULL), 0);
    EXPECT_EQ(vt_progress_iteration(NULL), 0);
    EXPECT_ERR(vt_progress_metric(NULL, VT_METRIC_LOSS, &v), VT_ERR_INVALID_ARGUMENT);
    /* a real trainer (no dataset), NULL and bad arguments */
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, NULL), VT_OK);
    EXPECT_ERR(vt_trainer_set(t, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_set_string(t, VT_OPT_OPTIMIZER, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_get_float(t, VT_OPT_EPOCHS, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_metric(t, VT_METRIC_LOSS, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_metric(t, VT_METRIC_LOSS, &v), VT_ERR_NOT_FOUND); /* nothing yet */
    EXPECT_ERR(vt_trainer_metric(t, (vt_metric)0, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_metric(t, (vt_metric)99, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_step(t, NULL, lab, 2, &loss), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_step(t, img, NULL, 2, &loss), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_step(t, img, lab, 1, &loss), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_step(t, img, lab, 0, &loss), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_trainer_step(t, img, lab, -3, &loss), VT_ERR_INVALID_ARGUMENT);
    int32_t badlab[2] = {0, 2};
    EXPECT_ERR(vt_trainer_step(t, img, badlab, 2, &loss), VT_ERR_INVALID_ARGUMENT);
    badlab[1] = -1;
    EXPECT_ERR(vt_trainer_step(t, img, badlab, 2, &loss), VT_ERR_INVALID_ARGUMENT);
    /* a step works without a dataset; a NULL loss pointer is allowed */
    vt_status st = vt_trainer_step(t, img, lab, 2, NULL);
    ck_assert_msg(st == VT_OK, "step with NULL loss: %s", vt_trainer_last_error(t));
    st = vt_trainer_metric(t, VT_METRIC_LOSS, &v);
    ck_assert_msg(st == VT_OK && v > 0, "loss metric after a step: %d %g", st, v);
    /* run / validate need a dataset */
    EXPECT_ERR(vt_trainer_run(t), VT_ERR_BAD_STATE);
    ck_assert_msg(strcmp(vt_trainer_last_error(t), vt_last_error()) == 0,
                  "run without dataset: handle message '%s'", vt_trainer_last_error(t));
    EXPECT_ERR(vt_trainer_validate(t, VT_SPLIT_VAL), VT_ERR_BAD_STATE);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
}
END_TEST

START_TEST(test_null_catalog_estimator)
{
    double v;
    int order[4], count;
    vt_catalog *c = NULL;
    vt_estimator *e = NULL;
    EXPECT_ERR(vt_catalog_create(NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_catalog_load_csv(NULL, vt_test_path("x.csv")), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_catalog_set_price(NULL, "H100 SXM", 1.0), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(vt_catalog_count(NULL), 0);
    EXPECT_EQ(vt_catalog_find(NULL, "H100 SXM"), -1);
    EXPECT_EQ(vt_catalog_gpu_name(NULL, 0), NULL);
    EXPECT_EQ(vt_catalog_gpu_arch(NULL, 0), NULL);
    EXPECT_EQ(vt_catalog_gpu_tier(NULL, 0), NULL);
    EXPECT_ERR(vt_catalog_gpu_value(NULL, 0, VT_GPU_MEMORY_GB, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EMPTY_STR(vt_catalog_last_error(NULL));
    ck_assert_int_eq(vt_catalog_create(&c), VT_OK);
    EXPECT_ERR(vt_catalog_load_csv(c, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_catalog_set_price(c, NULL, 1.0), 0);
    EXPECT_EQ(vt_catalog_find(c, NULL), -1);
    EXPECT_ERR(vt_catalog_gpu_value(c, 0, VT_GPU_MEMORY_GB, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(vt_catalog_gpu_name(c, -1), NULL);
    vt_catalog_destroy(c);

    EXPECT_ERR(vt_estimator_create(NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(vt_estimator_catalog(NULL), NULL);
    EXPECT_ERR(vt_estimator_set_int(NULL, VT_OPT_EST_EPOCHS, 1), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_set_float(NULL, VT_OPT_EST_MOSAIC, 0.5), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_set_string(NULL, VT_OPT_EST_GPU, "cpu"), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_set(NULL, "epochs=1"), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_set_model(NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_set_dataset(NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_run(NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_result(NULL, VT_EST_TOTAL_SECONDS, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_rank(NULL, VT_RANK_COST, order, 4, &count), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_rank_result(NULL, 0, VT_EST_TOTAL_SECONDS, &v), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_calibrate(NULL, "cpu", NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(vt_estimator_is_calibrated(NULL), 0);
    EXPECT_ERR(vt_estimator_save_calibration(NULL, vt_test_path("c.txt")), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_load_calibration(NULL, vt_test_path("c.txt")), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EMPTY_STR(vt_estimator_last_error(NULL));
    ck_assert_msg(vt_estimate_dataset_advice(-5) != NULL && vt_estimate_dataset_advice(0) != NULL,
                  "dataset advice NULL");
    ck_assert_int_eq(vt_estimator_create(&e), VT_OK);
    EXPECT_ERR(vt_estimator_set(e, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_result(e, VT_EST_TOTAL_SECONDS, NULL), 0);
    EXPECT_ERR(vt_estimator_rank(e, VT_RANK_COST, order, 4, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_rank_result(e, 0, VT_EST_TOTAL_SECONDS, NULL), 0);
    EXPECT_ERR(vt_estimator_save_calibration(e, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vt_estimator_load_calibration(e, NULL), VT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(vt_estimator_is_calibrated(e), 0);
    ck_assert_msg(vt_estimator_set_model(e, NULL) == VT_OK, "set_model(NULL) reverts, is not an "
                  "error: %s", vt_last_error());
    /* last: currently VT_ERR_OPTION_VALUE (lib/estimate), the header says a NULL pointer is
     * VT_ERR_INVALID_ARGUMENT, as vt_trainer_set_string() gives */
    vt_err_clear();
    vt_status st = vt_estimator_set_string(e, VT_OPT_EST_GPU, NULL);
    vt_estimator_destroy(e);
    ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT && *vt_last_error(),
                  "vt_estimator_set_string(e, VT_OPT_EST_GPU, NULL): status %d, expected %d", st,
                  VT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---- training handles ------------------------------------------------------------------------- */

static vt_dataset *make_ds(const char *name, const char *opts)
{
    ck_assert_int_eq(vt_synth_generate(vt_test_path(name), VT_TASK_CLASSIFY, opts), VT_OK);
    vt_dataset *ds;
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_CLASSIFY, vt_test_path(name)) == VT_OK, "%s: %s", name,
                  vt_last_error());
    return ds;
}

static vt_trainer *tiny_trainer(vt_model *m, vt_dataset *ds, int epochs)
{
    vt_trainer *t;
    vt_status st = vt_trainer_create(&t, m, ds);
    ck_assert_msg(st == VT_OK, "trainer_create: %s", vt_last_error());
    ck_assert_int_eq(vt_trainer_set_int(t, VT_OPT_EPOCHS, epochs), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "batch=4"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "workers=0"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "imgsz=16"), VT_OK);
    return t;
}

/* A model of other classes than the dataset's is re-created for the dataset's (fine-tuning to
 * new classes; tests/test_transfer.c checks the tensors). */
START_TEST(test_class_count_mismatch)
{
    vt_dataset *ds = make_ds("three", "classes=3 train=2 val=0 imgsz=16");
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    uint64_t np = vt_model_num_params(m);
    vt_trainer *t = NULL;
    vt_status st = vt_trainer_create(&t, m, ds);
    ck_assert_msg(st == VT_OK, "a 2-class model on a 3-class dataset: %s", vt_last_error());
    ck_assert_int_eq(vt_model_num_classes(m), 3);
    ck_assert_msg(vt_model_num_params(m) == np + 128 + 1, "params %llu after re-heading, was %llu",
                  (unsigned long long)vt_model_num_params(m), (unsigned long long)np);
    ck_assert_str_eq(vt_model_class_name(m, 0), vt_dataset_class_name(ds, 0));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

typedef struct {
    vt_trainer *t;
    vt_status st;
    atomic_int done;
    atomic_int batches;
    double t_end;
} run_ctx;

static int count_batches(void *user, vt_event e, const vt_progress *p)
{
    (void)p;
    if (e == VT_EVENT_BATCH_END) atomic_fetch_add(&((run_ctx *)user)->batches, 1);
    return 0;
}

static void *run_thread(void *arg)
{
    run_ctx *c = arg;
    c->st = vt_trainer_run(c->t);
    c->t_end = vt_now();
    atomic_store(&c->done, 1);
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

START_TEST(test_cancel_from_thread)
{
    vt_dataset *ds = make_ds("cancel", "classes=2 train=8 val=2 imgsz=16");
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    float before[2], after[2];
    uint8_t px[16 * 16 * 3];
    for (int i = 0; i < (int)sizeof px; i++) px[i] = (uint8_t)(i * 13);
    ck_assert_int_eq(vt_model_predict_pixels(m, px, 16, 16, 3, 48, before, 2), VT_OK);
    run_ctx c = {0};
    c.t = tiny_trainer(m, ds, 100000);
    atomic_init(&c.done, 0);
    atomic_init(&c.batches, 0);
    vt_trainer_set_progress(c.t, count_batches, &c);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, run_thread, &c), 0);
    /* let it train a few batches */
    for (int i = 0; i < 3000 && atomic_load(&c.batches) < 3 && !atomic_load(&c.done); i++)
        sleep_ms(10);
    ck_assert_msg(!atomic_load(&c.done), "the 100000-epoch run ended by itself: %d %s", c.st,
                  vt_trainer_last_error(c.t));
    ck_assert_msg(atomic_load(&c.batches) >= 3, "no progress within 30 s (%d batches)",
                  atomic_load(&c.batches));
    double t_cancel = vt_now();
    vt_trainer_cancel(c.t);
    for (int i = 0; i < 1000 && !atomic_load(&c.done); i++) sleep_ms(10);
    ck_assert_msg(atomic_load(&c.done), "vt_trainer_run did not return within 10 s of the cancel");
    pthread_join(th, NULL);
    ck_assert_msg(c.st == VT_ERR_CANCELLED, "cancelled run: status %d (%s) %s", c.st,
                  vt_status_string(c.st), vt_trainer_last_error(c.t));
    ck_assert_msg(c.t_end - t_cancel < 2.0, "cancel took %.2f s to take effect", c.t_end - t_cancel);
    ck_assert_msg(strstr(vt_trainer_last_error(c.t), "cancel"), "cancelled: message '%s'",
                  vt_trainer_last_error(c.t));
    /* the model is usable and has the weights trained so far */
    vt_status st = vt_model_predict_pixels(m, px, 16, 16, 3, 48, after, 2);
    ck_assert_msg(st == VT_OK, "predict after cancel: %s", vt_model_last_error(m));
    ck_assert_msg(memcmp(before, after, sizeof before) != 0, "the model kept no trained weights");
    ck_assert_int_eq(vt_model_save(m, vt_test_path("after-cancel.vtm")), VT_OK);
    /* the trainer runs again (the cancel does not stick) */
    ck_assert_int_eq(vt_trainer_set(c.t, "epochs=1"), VT_OK);
    st = vt_trainer_run(c.t);
    ck_assert_msg(st == VT_OK, "run after a cancelled run: %d %s", st, vt_trainer_last_error(c.t));
    vt_trainer_destroy(c.t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

typedef struct {
    int batch_calls, epoch_calls, stop_at_batch, stop_at_epoch;
    int bad; /* inconsistencies seen inside the callback */
    char why[256];
} cb_ctx;

static int stopping_cb(void *user, vt_event e, const vt_progress *p)
{
    cb_ctx *c = user;
    double v;
    if (e == VT_EVENT_BATCH_END) {
        c->batch_calls++;
        if (vt_progress_epoch(p) != 1 + (c->batch_calls - 1) / vt_progress_batches(p) ||
            vt_progress_iteration(p) != c->batch_calls || vt_progress_batch(p) < 1 ||
            vt_progress_batch(p) > vt_progress_batches(p) || vt_progress_epochs(p) != 3) {
            c->bad++;
            snprintf(c->why, sizeof c->why, "batch call %d: epoch %d/%d batch %d/%d iteration %lld",
                     c->batch_calls, vt_progress_epoch(p), vt_progress_epochs(p),
                     vt_progress_batch(p), vt_progress_batches(p),
                     (long long)vt_progress_iteration(p));
        }
        if (vt_progress_metric(p, VT_METRIC_LOSS, &v) != VT_OK || !(v > 0)) {
            c->bad++;
            snprintf(c->why, sizeof c->why, "no loss at batch %d", c->batch_calls);
        }
        return c->stop_at_batch && c->batch_calls == c->stop_at_batch ? 1 : 0;
    }
    if (e == VT_EVENT_EPOCH_END) {
        c->epoch_calls++;
        if (vt_progress_metric(p, VT_METRIC_TOP1, &v) != VT_OK || v < 0 || v > 1) {
            c->bad++;
            snprintf(c->why, sizeof c->why, "no top1 at the end of epoch %d", c->epoch_calls);
        }
        return c->stop_at_epoch && c->epoch_calls == c->stop_at_epoch ? -1 : 0;
    }
    if (e == VT_EVENT_CHECKPOINT_SAVED) {
        const char *path = vt_progress_checkpoint_path(p);
        if (!path || !*path) {
            c->bad++;
            snprintf(c->why, sizeof c->why, "checkpoint event without a path");
        }
        return 0;
    }
    c->bad++;
    snprintf(c->why, sizeof c->why, "unknown event %d", e);
    return 0;
}

START_TEST(test_progress_cancels)
{
    vt_dataset *ds = make_ds("prog", "classes=2 train=4 val=1 imgsz=16") /* 8 train images */;
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    vt_trainer *t = tiny_trainer(m, ds, 3);
    /* non-zero at the 2nd batch: stops there */
    cb_ctx c = {0};
    c.stop_at_batch = 2;
    vt_trainer_set_progress(t, stopping_cb, &c);
    vt_status st = vt_trainer_run(t);
    ck_assert_msg(st == VT_ERR_CANCELLED, "callback returned 1 at batch 2: status %d (%s)", st,
                  vt_trainer_last_error(t));
    ck_assert_msg(c.batch_calls == 2, "callback returned 1 at batch 2, but was called %d times",
                  c.batch_calls);
    ck_assert_msg(c.bad == 0, "progress inconsistent: %s", c.why);
    float s[2];
    uint8_t px[16 * 16] = {0};
    ck_assert_msg(vt_model_predict_pixels(m, px, 16, 16, 1, 16, s, 2) == VT_OK,
                  "predict after a callback cancel: %s", vt_model_last_error(m));
    /* non-zero (negative) at the end of epoch 1 of 3 */
    memset(&c, 0, sizeof c);
    c.stop_at_epoch = 1;
    st = vt_trainer_run(t);
    ck_assert_msg(st == VT_ERR_CANCELLED, "callback returned -1 at epoch end: status %d", st);
    ck_assert_msg(c.epoch_calls == 1 && c.batch_calls == 2,
                  "stopped after epoch 1: %d epoch calls, %d batch calls (8 images / batch 4)",
                  c.epoch_calls, c.batch_calls);
    ck_assert_msg(c.bad == 0, "progress inconsistent: %s", c.why);
    /* a callback that never stops: the whole run */
    memset(&c, 0, sizeof c);
    st = vt_trainer_run(t);
    ck_assert_msg(st == VT_OK, "full run: %d %s", st, vt_trainer_last_error(t));
    ck_assert_msg(c.epoch_calls == 3 && c.batch_calls == 6, "full run: %d epoch, %d batch calls",
                  c.epoch_calls, c.batch_calls);
    ck_assert_msg(c.bad == 0, "progress inconsistent: %s", c.why);
    /* removing the callback */
    vt_trainer_set_progress(t, NULL, NULL);
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(vt_trainer_run(t), VT_OK);
    ck_assert_msg(c.batch_calls == 0, "a removed callback was called");
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_device_without_gpu)
{
    int ngpu = vt_device_count();
    ck_assert_msg(ngpu >= 0 && (VT_HAVE_CUDA || ngpu == 0), "vt_device_count() = %d (CUDA build %d)",
                  ngpu, VT_HAVE_CUDA);
    vt_dataset *ds = make_ds("dev", "classes=2 train=4 val=0 imgsz=16");
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cnn-small", 2, "imgsz=16"), VT_OK);
    vt_trainer *t = tiny_trainer(m, ds, 1);
    const char *devs[] = {"device=0", "device=1", "device=63"};
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(vt_trainer_set(t, devs[i]) == VT_OK, "%s is a valid setting: %s", devs[i],
                      vt_last_error());
        vt_status st = vt_trainer_run(t);
        if (atoi(devs[i] + 7) < ngpu) {
            ck_assert_msg(st == VT_OK, "%s with a GPU present: %d %s", devs[i], st,
                          vt_trainer_last_error(t));
            continue;
        }
        ck_assert_msg(st == VT_ERR_DEVICE, "%s without that GPU (CUDA build: %d): status %d (%s), "
                      "expected VT_ERR_DEVICE; %s", devs[i], VT_HAVE_CUDA, st, vt_status_string(st),
                      vt_trainer_last_error(t));
        ck_assert_msg(*vt_trainer_last_error(t), "%s: no message", devs[i]);
        float img[2 * 3 * 16 * 16] = {0};
        int32_t lab[2] = {0, 1};
        st = vt_trainer_step(t, img, lab, 2, NULL);
        ck_assert_msg(st == VT_ERR_DEVICE, "%s: vt_trainer_step status %d", devs[i], st);
        st = vt_trainer_validate(t, VT_SPLIT_TRAIN);
        ck_assert_msg(st == VT_ERR_DEVICE, "%s: vt_trainer_validate status %d", devs[i], st);
    }
    /* back on the CPU the same trainer works, and the model predicts */
    ck_assert_int_eq(vt_trainer_set(t, "device=cpu"), VT_OK);
    vt_status st = vt_trainer_run(t);
    ck_assert_msg(st == VT_OK, "device=cpu after the failures: %d %s", st, vt_trainer_last_error(t));
    float s[2];
    uint8_t px[16 * 16 * 3] = {0};
    ck_assert_msg(vt_model_predict_pixels(m, px, 16, 16, 3, 48, s, 2) == VT_OK, "predict: %s",
                  vt_model_last_error(m));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

/* The library's description of its tasks: every task listed once, its name and title parse
 * back, its models are its own (prefix, task, creatable), its fitness is one of its metrics,
 * every metric has a unique name. */
/* Which trainer options a task's training reads, what its datasets label, and the task a
 * layout suggests: the library's answers to what the vt tool and the Python layer used to
 * keep lists of. */
START_TEST(test_task_options_and_labels)
{
    static const struct {
        vt_task task;
        const char *ignored, *read;
        unsigned labels;
    } want[] = {
        {VT_TASK_CLASSIFY, "degrees translate scale shear perspective mosaic mixup close_mosaic dice",
         "erasing crop_scale label_smoothing fliplr hsv_v epochs", VT_LABELS_IMAGE_CLASS},
        {VT_TASK_DETECT, "erasing crop_scale label_smoothing dice",
         "mosaic mixup degrees close_mosaic fliplr epochs", VT_LABELS_BOXES},
        {VT_TASK_SEGMENT, "erasing crop_scale", "mosaic degrees label_smoothing dice epochs",
         VT_LABELS_CLASS_MAP},
        {VT_TASK_INSTANCE, "erasing crop_scale label_smoothing dice", "mosaic mixup epochs",
         VT_LABELS_BOXES | VT_LABELS_INSTANCES},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        for (int applies = 0; applies < 2; applies++) {
            char list[160];
            snprintf(list, sizeof list, "%s", applies ? want[i].read : want[i].ignored);
            for (char *k = strtok(list, " "); k; k = strtok(NULL, " "))
                ck_assert_msg(vt_task_option_applies(want[i].task, k) == applies,
                              "%s: %s= applies %d, expected %d", vt_task_name(want[i].task), k,
                              vt_task_option_applies(want[i].task, k), applies);
        }
        ck_assert_int_eq(vt_task_option_applies(want[i].task, "no_such_key"), -1);
        ck_assert_int_eq(vt_task_option_applies(want[i].task, "fold"), -1); /* export's */
        ck_assert_int_eq(vt_task_option_applies(want[i].task, NULL), -1);
        ck_assert_uint_eq(vt_task_label_kinds(want[i].task), want[i].labels);
    }
    ck_assert_int_eq(vt_task_option_applies((vt_task)99, "epochs"), -1);
    ck_assert_uint_eq(vt_task_label_kinds((vt_task)0), 0);
    ck_assert_uint_eq(vt_task_label_kinds((vt_task)99), 0);
    /* every task of the library is described */
    for (vt_task t = vt_task_next(0); t; t = vt_task_next(t)) {
        ck_assert_uint_ne(vt_task_label_kinds(t), 0);
        ck_assert_int_eq(vt_task_option_applies(t, "epochs"), 1);
    }

    /* the layout's task */
    const char *dir = vt_test_path("guess");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_int_eq(vt_dataset_guess_task(dir), VT_TASK_CLASSIFY); /* an ImageFolder */
    FILE *f = fopen(vt_test_path("guess/data.yaml"), "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(vt_dataset_guess_task(dir), VT_TASK_DETECT);
    ck_assert_int_eq(vt_dataset_guess_task("some/where/instances_val.json"), VT_TASK_DETECT);
    ck_assert_int_eq(vt_dataset_guess_task("D.YAML"), VT_TASK_DETECT);
    ck_assert_int_eq(vt_dataset_guess_task("cfg.yml"), VT_TASK_DETECT);
    ck_assert_int_eq(vt_dataset_guess_task("no/such/folder"), VT_TASK_CLASSIFY);
    ck_assert_int_eq(vt_dataset_guess_task(NULL), VT_TASK_CLASSIFY);
}
END_TEST

START_TEST(test_task_descriptions)
{
    int ntask = 0;
    for (vt_task t = vt_task_next(0); t; t = vt_task_next(t)) {
        ck_assert_int_lt(++ntask, 16);
        const char *name = vt_task_name(t), *title = vt_task_title(t);
        ck_assert_ptr_nonnull(name);
        ck_assert_ptr_nonnull(title);
        ck_assert_int_eq(vt_task_parse(name), t);
        ck_assert_int_eq(vt_task_parse(title), t);
        const char *dm = vt_task_default_model(t), *pre = vt_task_model_prefix(t);
        ck_assert_int_eq(vt_arch_task(dm), t);
        ck_assert_msg(!strncmp(dm, pre, strlen(pre)), "%s does not start with %s", dm, pre);
        vt_metric ms[16];
        int nm = vt_task_metrics(t, ms, 16), fit = 0;
        ck_assert_int_gt(nm, 0);
        for (int i = 0; i < nm && i < 16; i++) {
            ck_assert_ptr_nonnull(vt_metric_name(ms[i]));
            fit |= ms[i] == vt_task_fitness(t);
        }
        ck_assert_msg(fit, "%s: its fitness is not among its metrics", name);
        ck_assert_int_eq(vt_task_metrics(t, NULL, 0), nm);
        /* a task's own defaults: the detectors' schedule is linear after 3 warm-up epochs, and
         * a value the caller sets wins */
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, dm, 3, "imgsz=64"), VT_OK);
        vt_trainer *tr;
        ck_assert_int_eq(vt_trainer_create(&tr, m, NULL), VT_OK);
        double cos_lr = -1, warm = -1;
        ck_assert_int_eq(vt_trainer_get_float(tr, VT_OPT_COS_LR, &cos_lr), VT_OK);
        ck_assert_int_eq(vt_trainer_get_float(tr, VT_OPT_WARMUP_EPOCHS, &warm), VT_OK);
        int det = t == VT_TASK_DETECT || t == VT_TASK_INSTANCE;
        ck_assert_msg(cos_lr == (det ? 0 : 1) && warm == (det ? 3 : 1), "%s: cos_lr %g warmup %g",
                      name, cos_lr, warm);
        ck_assert_int_eq(vt_trainer_set(tr, det ? "cos_lr=1" : "cos_lr=0"), VT_OK);
        ck_assert_int_eq(vt_trainer_get_float(tr, VT_OPT_COS_LR, &cos_lr), VT_OK);
        ck_assert(cos_lr == (det ? 1 : 0));
        vt_trainer_destroy(tr);
        vt_model_destroy(m);
    }
    ck_assert_int_ge(ntask, 3);
    ck_assert_ptr_null(vt_task_name((vt_task)0));
    ck_assert_ptr_null(vt_task_name((vt_task)99));
    ck_assert_int_eq(vt_task_parse("nonsense"), 0);
    ck_assert_int_eq(vt_task_parse(NULL), 0);
    ck_assert_int_eq(vt_task_metrics((vt_task)99, NULL, 0), 0);
    int narch = 0;
    for (const char *a; (a = vt_arch_name(narch)); narch++) {
        vt_task t = vt_arch_task(a);
        ck_assert_msg(vt_task_name(t), "%s has no task", a);
        const char *pre = vt_task_model_prefix(t);
        ck_assert_msg(!strncmp(a, pre, strlen(pre)) || !strcmp(a, "cnn-small") ||
                      !strcmp(a, "resnet18"), "%s does not start with %s", a, pre);
        vt_model *m = NULL;
        ck_assert_msg(vt_model_create(&m, a, 3, "imgsz=64") == VT_OK, "%s: %s", a,
                      vt_last_error());
        ck_assert_int_eq(vt_model_task(m), t);
        ck_assert_str_eq(vt_model_arch(m), a);
        vt_model_destroy(m);
    }
    ck_assert_int_ge(narch, 13);
    ck_assert_ptr_null(vt_arch_name(-1));
    ck_assert_int_eq(vt_arch_task("det-x"), 0);
    ck_assert_int_eq(vt_arch_task(NULL), 0);
    vt_model *m = NULL;
    ck_assert_int_eq(vt_model_create(&m, "det-x", 3, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "known models: cls-n"));
    for (int i = 1; i < 32; i++) {
        const char *n = vt_metric_name((vt_metric)i);
        ck_assert_msg(n && vt_metric_label((vt_metric)i), "metric %d has no name", i);
        for (int j = 1; j < i; j++) ck_assert_str_ne(n, vt_metric_name((vt_metric)j));
    }
    ck_assert_ptr_null(vt_metric_name((vt_metric)0));
    ck_assert_ptr_null(vt_metric_name((vt_metric)1000));
    ck_assert_str_eq(vt_metric_name(VT_METRIC_MAP50_95), "map50_95");
    ck_assert_str_eq(vt_metric_label(VT_METRIC_MASK_MAP50_95), "mask mAP50-95");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("null");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_destroy_null);
    tcase_add_test(tc, test_task_descriptions);
    tcase_add_test(tc, test_task_options_and_labels);
    tcase_add_test(tc, test_device_queries);
    tcase_add_test(tc, test_null_dataset_model);
    tcase_add_test(tc, test_null_trainer);
    tcase_add_test(tc, test_null_catalog_estimator);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("training");
    tcase_set_timeout(tt, 60);
    tcase_add_checked_fixture(tt, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tt, test_class_count_mismatch);
    tcase_add_test(tt, test_cancel_from_thread);
    tcase_add_test(tt, test_progress_cancels);
    tcase_add_test(tt, test_device_without_gpu);
    suite_add_tcase(s, tt);
    return s;
}

int main(void) { return vt_test_run(suite()); }
