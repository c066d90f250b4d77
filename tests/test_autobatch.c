/* batch=-1 (lib/train/autobatch.c): the batch a run chooses, what it reports, and the halving
 * on out-of-memory under a fake memory size and a fake allocation limit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "testutil.h"
#include "train/autobatch.h"
#include "nn/train_memory.h"
#include "train/trainer_impl.h"
#include "visiontrain/visiontrain.h"

typedef struct {
    char text[8192];
} logbuf;

static void log_cb(void *user, vt_log_level level, const char *msg)
{
    (void)level;
    logbuf *l = user;
    size_t k = strlen(l->text);
    snprintf(l->text + k, sizeof l->text - k, "%s\n", msg);
}

static int batches_seen;

static int progress(void *user, vt_event ev, const vt_progress *p)
{
    (void)user;
    double v;
    if (ev == VT_EVENT_BATCH_END) {
        batches_seen = vt_progress_batches(p);
        /* a CPU run has no GPU figures */
        ck_assert_int_eq(vt_progress_metric(p, VT_METRIC_GPU_UTIL, &v), VT_ERR_NOT_FOUND);
        ck_assert_int_eq(vt_progress_metric(p, VT_METRIC_GPU_MEMORY_USED_BYTES, &v),
                         VT_ERR_NOT_FOUND);
    }
    return 0;
}

/* 2 classes x 10 training images, 16 px */
static vt_dataset *tiny_dataset(void)
{
    const char *data = vt_test_path("data");
    ck_assert_msg(vt_synth_generate(data, VT_TASK_CLASSIFY,
                                    "classes=2 train=10 val=2 imgsz=16 seed=3") == VT_OK,
                  "synth: %s", vt_last_error());
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, data), VT_OK);
    ck_assert_int_eq(vt_dataset_num_images(ds, VT_SPLIT_TRAIN), 20);
    return ds;
}

/* The option: -1 and N >= 1; 0 and -2 are refused. */
START_TEST(test_option_values)
{
    vt_model *m;
    vt_trainer *t;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, NULL), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t, "batch=-1"), VT_OK);
    double v;
    ck_assert_int_eq(vt_trainer_get_float(t, VT_OPT_BATCH, &v), VT_OK);
    ck_assert_double_eq(v, -1);
    ck_assert_int_eq(vt_trainer_set(t, "batch=0"), VT_ERR_OPTION_VALUE);
    ck_assert_msg(strstr(vt_trainer_last_error(t), "-1 (automatic)"), "%s",
                  vt_trainer_last_error(t));
    ck_assert_int_eq(vt_trainer_set(t, "batch=-2"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_get_float(t, VT_OPT_AUTOBATCH_FRACTION, &v), VT_OK);
    ck_assert_double_eq(v, 0.6); /* Ultralytics' default */
    ck_assert_int_eq(vt_trainer_set(t, "autobatch_fraction=0.05"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_set(t, "autobatch_fraction=0.96"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_set(t, "autobatch_fraction=0.95"), VT_OK);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
}
END_TEST

/* batch=-1 on the CPU: host memory holds far more than 20 images of 16 px, so the batch is the
 * training images' count (or the fraction's subset), reported everywhere, and the run trains. */
START_TEST(test_run_picks_and_trains)
{
    vt_dataset *ds = tiny_dataset();
    for (int pass = 0; pass < 2; pass++) {
        vt_model *m;
        vt_trainer *t;
        ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
        ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
        char project[4200];
        snprintf(project, sizeof project, "project=%s", vt_test_path("runs"));
        const char *settings[] = {"batch=-1", "epochs=1", "workers=0", "plots=0", project,
                                  pass ? "fraction=0.5" : "seed=0", NULL};
        for (const char *const *s = settings; *s; s++)
            ck_assert_msg(vt_trainer_set(t, *s) == VT_OK, "%s", *s);
        static logbuf lg;
        lg.text[0] = 0;
        vt_trainer_set_log(t, log_cb, &lg, VT_LOG_INFO);
        vt_trainer_set_progress(t, progress, NULL);
        batches_seen = 0;
        ck_assert_msg(vt_trainer_run(t) == VT_OK, "run: %s", vt_trainer_last_error(t));
        int want = pass ? 10 : 20;
        double b;
        ck_assert_int_eq(vt_trainer_get_float(t, VT_OPT_BATCH, &b), VT_OK);
        ck_assert_double_eq(b, want);
        ck_assert_int_eq(batches_seen, 1);
        char line[128];
        snprintf(line, sizeof line, "batch=-1: batch %d (memory model: %d images", want, want);
        ck_assert_msg(strstr(lg.text, line) && strstr(lg.text, "capped at the training images") &&
                          strstr(lg.text, "a training step at it fitted"), "log:\n%s", lg.text);
        char path[4400];
        snprintf(path, sizeof path, "%s/args.yaml", vt_trainer_run_dir(t));
        size_t n;
        char *args = vt_test_read_file(path, &n);
        ck_assert_ptr_nonnull(args);
        snprintf(line, sizeof line, "\nbatch: %d\n", want);
        ck_assert_msg(strstr(args, line), "args.yaml:\n%s", args);
        free(args);
        /* a CPU run's results.csv has the columns it always had */
        snprintf(path, sizeof path, "%s/results.csv", vt_trainer_run_dir(t));
        char *csv = vt_test_read_file(path, &n);
        ck_assert_ptr_nonnull(csv);
        ck_assert_msg(!strstr(csv, "gpu/") && strstr(csv, ",time/elapsed\n1,"), "%s", csv);
        free(csv);
        vt_trainer_destroy(t);
        vt_model_destroy(m);
    }
    vt_dataset_destroy(ds);
}
END_TEST

typedef struct fixture {
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    int subset[20];
    logbuf log;
} fixture;

static void open_fixture(fixture *f, vt_dataset *ds)
{
    memset(f, 0, sizeof *f);
    f->ds = ds;
    ck_assert_int_eq(vt_model_create(&f->m, "cls-n", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&f->t, f->m, ds), VT_OK);
    ck_assert_int_eq(vt_trainer_set(f->t, "workers=0"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(f->t, "batch=-1"), VT_OK);
    vt_trainer_set_log(f->t, log_cb, &f->log, VT_LOG_DEBUG);
    ck_assert_int_eq(vt_loader_pick_subset(20, 1.0, 0, f->subset), 20);
}

static void close_fixture(fixture *f)
{
    vt_trainer_destroy(f->t);
    vt_model_destroy(f->m);
}

/* The memory a batch needs by the model, for a fake memory size. */
static double model_bytes(vt_model *m, int batch)
{
    return vt_train_memory(&m->graph, 16, 16, batch, (int)sizeof(float), 1, 0, 1);
}

/* A fake memory size: the model's batch is the largest within 0.6 of it; a fake allocation
 * limit between what steps of 6 and 12 images hold: 12 runs out of memory, 6 fits and is the
 * choice; a limit below what 2 images hold fails the run. */
START_TEST(test_shrinks_on_out_of_memory)
{
    vt_dataset *ds = tiny_dataset();
    static fixture f;
    vt_autobatch_test test;
    int b;

    /* 1. memory for 12 images by the model: 12 is modelled and a step at it fits */
    open_fixture(&f, ds);
    double m12 = model_bytes(f.m, 12), m13 = model_bytes(f.m, 13);
    ck_assert(m12 > 0 && m13 > m12);
    memset(&test, 0, sizeof test);
    test.memory_bytes = (m12 + 0.5 * (m13 - m12)) / 0.6;
    test.alloc_limit = (size_t)1 << 40;
    ck_assert_msg(vt_autobatch(f.t, f.subset, 20, &test, &b) == VT_OK, "%s", vt_last_error());
    ck_assert_int_eq(test.modelled, 12);
    ck_assert_int_eq(b, 12);
    ck_assert_int_eq(test.ntried, 1);
    ck_assert_int_eq(test.tried[0], 12);
    ck_assert(test.fitted[0]);
    size_t peak12 = test.peak[0];
    close_fixture(&f);
    /* what a step of 6 holds */
    open_fixture(&f, ds);
    memset(&test, 0, sizeof test);
    double m6 = model_bytes(f.m, 6), m7 = model_bytes(f.m, 7);
    test.memory_bytes = (m6 + 0.5 * (m7 - m6)) / 0.6;
    test.alloc_limit = (size_t)1 << 40;
    ck_assert_int_eq(vt_autobatch(f.t, f.subset, 20, &test, &b), VT_OK);
    ck_assert_int_eq(b, 6);
    size_t peak6 = test.peak[0];
    ck_assert_msg(peak6 > 0 && peak6 < peak12, "steps held %zu (6) and %zu (12) bytes", peak6,
                  peak12);
    close_fixture(&f);

    /* the memory for 6 images, with freeze=backbone: the frozen layers hold no gradients and
     * free their activations, so the model fits more (and the step holds less) */
    open_fixture(&f, ds);
    memset(&test, 0, sizeof test);
    test.memory_bytes = (m6 + 0.5 * (m7 - m6)) / 0.6;
    test.alloc_limit = (size_t)1 << 40;
    ck_assert_int_eq(vt_trainer_set(f.t, "freeze=backbone"), VT_OK);
    ck_assert_int_eq(vt_autobatch(f.t, f.subset, 20, &test, &b), VT_OK);
    ck_assert_msg(test.modelled > 6 && b == test.modelled, "freeze=backbone: modelled %d, chose "
                  "%d (6 unfrozen)", test.modelled, b);
    close_fixture(&f);

    /* 2. the same memory, a limit between the two: 12 runs out, 6 fits and is chosen */
    open_fixture(&f, ds);
    memset(&test, 0, sizeof test);
    test.memory_bytes = (m12 + 0.5 * (m13 - m12)) / 0.6;
    test.alloc_limit = (peak6 + peak12) / 2;
    ck_assert_msg(vt_autobatch(f.t, f.subset, 20, &test, &b) == VT_OK, "%s", vt_last_error());
    ck_assert_int_eq(test.modelled, 12);
    ck_assert_int_eq(test.ntried, 2);
    ck_assert_int_eq(test.tried[0], 12);
    ck_assert(!test.fitted[0]);
    ck_assert_int_eq(test.tried[1], 6);
    ck_assert(test.fitted[1]);
    ck_assert_int_eq(b, 6); /* the largest that passed, never above it */
    double opt;
    ck_assert_int_eq(vt_trainer_get_float(f.t, VT_OPT_BATCH, &opt), VT_OK);
    ck_assert_double_eq(opt, 6);
    ck_assert_msg(strstr(f.log.text, "batch 12 ran out of memory") &&
                      strstr(f.log.text, "batch=-1: batch 6 (memory model: 12 images") &&
                      strstr(f.log.text, "halved after running out of memory"),
                  "log:\n%s", f.log.text);
    /* the trainer trains at it afterwards, its weights those of the model */
    ck_assert_int_eq(vt_trainer_set(f.t, "epochs=1"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(f.t, "save=0"), VT_OK);
    ck_assert_msg(vt_trainer_run(f.t) == VT_OK, "%s", vt_trainer_last_error(f.t));
    close_fixture(&f);

    /* 3. not even a step of 2 fits: an out-of-memory error naming batch=-1 */
    open_fixture(&f, ds);
    memset(&test, 0, sizeof test);
    test.memory_bytes = (m12 + 0.5 * (m13 - m12)) / 0.6;
    test.alloc_limit = 64;
    vt_status st = vt_autobatch(f.t, f.subset, 20, &test, &b);
    ck_assert_msg(st == VT_ERR_OUT_OF_MEMORY || st == VT_ERR_DEVICE_OOM, "status %d: %s", st,
                  vt_last_error());
    ck_assert_msg(strstr(vt_last_error(), "batch=-1: even a step of 2 images"), "%s",
                  vt_last_error());
    ck_assert_int_eq(test.tried[test.ntried - 1], 2);
    for (int i = 0; i < test.ntried; i++) ck_assert(!test.fitted[i]);
    close_fixture(&f);

    /* 4. memory too small for the model's 2 images: refused before any step */
    open_fixture(&f, ds);
    memset(&test, 0, sizeof test);
    test.memory_bytes = model_bytes(f.m, 1) / 0.6 * 1.01;
    ck_assert_int_eq(vt_autobatch(f.t, f.subset, 20, &test, &b), VT_ERR_OUT_OF_MEMORY);
    ck_assert_msg(strstr(vt_last_error(), "needs") && strstr(vt_last_error(), "for 2 images"),
                  "%s", vt_last_error());
    ck_assert_int_eq(test.ntried, 0);
    close_fixture(&f);
    vt_dataset_destroy(ds);
}
END_TEST

/* The check step leaves the run unchanged: batch=-1 trains the same weights as the batch it
 * chose given outright. */
START_TEST(test_check_step_leaves_no_trace)
{
    vt_dataset *ds = tiny_dataset();
    float *w[2];
    size_t np = 0;
    for (int pass = 0; pass < 2; pass++) {
        vt_model *m;
        vt_trainer *t;
        ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
        ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
        const char *settings[] = {pass ? "batch=20" : "batch=-1", "epochs=2", "workers=0",
                                  "save=0", "seed=4", NULL};
        for (const char *const *s = settings; *s; s++)
            ck_assert_int_eq(vt_trainer_set(t, *s), VT_OK);
        ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
        vt_trainer_destroy(t);
        np = (size_t)m->graph.n_params;
        w[pass] = malloc((np + (size_t)m->graph.n_buffers) * sizeof(float));
        memcpy(w[pass], m->params, np * sizeof(float));
        memcpy(w[pass] + np, m->buffers, (size_t)m->graph.n_buffers * sizeof(float));
        np += (size_t)m->graph.n_buffers;
        vt_model_destroy(m);
    }
    ck_assert_msg(memcmp(w[0], w[1], np * sizeof(float)) == 0,
                  "batch=-1 (20) and batch=20 trained different weights");
    free(w[0]);
    free(w[1]);
    vt_dataset_destroy(ds);
}
END_TEST

/* Detection and segmentation: the check step runs their losses (boxes, masks from the loader)
 * and the run trains at the batch chosen. */
START_TEST(test_detect_and_segment)
{
    static const struct {
        vt_task task;
        const char *arch;
    } cases[2] = {{VT_TASK_DETECT, "det-n"}, {VT_TASK_SEGMENT, "seg-n"}};
    for (int i = 0; i < 2; i++) {
        const char *dir = vt_test_path("data%d", i);
        ck_assert_msg(vt_synth_generate(dir, cases[i].task,
                                        "classes=3 train=6 val=2 imgsz=64 seed=1 "
                                        "max_objects=2") == VT_OK, "%s", vt_last_error());
        vt_dataset *ds;
        ck_assert_int_eq(vt_dataset_open(&ds, cases[i].task, dir), VT_OK);
        int ntrain = vt_dataset_num_images(ds, VT_SPLIT_TRAIN);
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, cases[i].arch, vt_dataset_num_classes(ds),
                                         "imgsz=64"), VT_OK);
        vt_trainer *t;
        ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
        const char *settings[] = {"batch=-1", "epochs=1", "workers=0", "save=0", NULL};
        for (const char *const *s = settings; *s; s++)
            ck_assert_int_eq(vt_trainer_set(t, *s), VT_OK);
        ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s: %s", cases[i].arch,
                      vt_trainer_last_error(t));
        double b;
        ck_assert_int_eq(vt_trainer_get_float(t, VT_OPT_BATCH, &b), VT_OK);
        ck_assert_msg(b == ntrain, "%s: batch %g of %d images", cases[i].arch, b, ntrain);
        vt_trainer_destroy(t);
        vt_model_destroy(m);
        vt_dataset_destroy(ds);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("autobatch");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_option_values);
    tcase_add_test(tc, test_run_picks_and_trains);
    tcase_add_test(tc, test_shrinks_on_out_of_memory);
    tcase_add_test(tc, test_check_step_leaves_no_trace);
    tcase_add_test(tc, test_detect_and_segment);
    suite_add_tcase(s, tc);
    return vt_test_run(s);
}
