/* The one option table (lib/core/options.c) as seen by every handle and every call that takes
 * settings: the estimator's VT_OPT_EST_* and the keys of the "key=value" options strings of
 * vt_dataset_open_ex, vt_dataset_validate, vt_dataset_split, vt_dataset_subset,
 * vt_synth_generate, vt_estimator_calibrate and vt_model_export.  Each key is found by vt_option_next, its info
 * round-trips, its default lies in its range, and the calls check values against the table. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "estimate/estimator_impl.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

/* Every option outside the trainer and model groups (test_core covers those), with the scopes
 * the header documents for it. */
static const struct {
    int id, scopes;
    const char *key;
} expected[] = {
    {VT_OPT_EST_MODEL, VT_SCOPE_ESTIMATOR, "model"},
    {VT_OPT_EST_CLASSES, VT_SCOPE_ESTIMATOR, "classes"},
    {VT_OPT_EST_TRAIN_IMAGES, VT_SCOPE_ESTIMATOR, "train"},
    {VT_OPT_EST_VAL_IMAGES, VT_SCOPE_ESTIMATOR, "val"},
    {VT_OPT_EST_EPOCHS, VT_SCOPE_ESTIMATOR, "epochs"},
    {VT_OPT_EST_BATCH, VT_SCOPE_ESTIMATOR, "batch"},
    {VT_OPT_EST_IMGSZ, VT_SCOPE_ESTIMATOR, "imgsz"},
    {VT_OPT_EST_PRECISION, VT_SCOPE_ESTIMATOR, "precision"},
    {VT_OPT_EST_MOSAIC, VT_SCOPE_ESTIMATOR, "mosaic"},
    {VT_OPT_EST_VAL_EACH, VT_SCOPE_ESTIMATOR, "val_each"},
    {VT_OPT_EST_WORKERS, VT_SCOPE_ESTIMATOR, "workers"},
    {VT_OPT_EST_GPU, VT_SCOPE_ESTIMATOR, "gpu"},
    {VT_OPT_EST_NUM_GPUS, VT_SCOPE_ESTIMATOR, "gpus"},
    {VT_OPT_EST_CHANNELS, VT_SCOPE_ESTIMATOR, "channels"},
    {VT_OPT_EST_LOAD_MS, VT_SCOPE_ESTIMATOR, "load_ms"},
    {VT_OPT_EST_STARTUP_S, VT_SCOPE_ESTIMATOR, "startup"},
    {VT_OPT_EST_DEADLINE_H, VT_SCOPE_ESTIMATOR, "deadline_h"},
    {VT_OPT_EST_BUDGET_USD, VT_SCOPE_ESTIMATOR, "budget_usd"},
    {VT_OPT_EST_LOCAL_PRICE, VT_SCOPE_ESTIMATOR, "local_price"},
    {VT_OPT_EST_OPTIMIZER, VT_SCOPE_ESTIMATOR, "optimizer"},
    {VT_OPT_EST_MEMORY_FRACTION, VT_SCOPE_ESTIMATOR, "memory_fraction"},
    {VT_OPT_EST_LINK_GBS, VT_SCOPE_ESTIMATOR, "link_gbs"},
    {VT_OPT_DS_POLICY, VT_SCOPE_DATASET_OPEN | VT_SCOPE_DATASET_VALIDATE, "policy"},
    {VT_OPT_DS_DECODE, VT_SCOPE_DATASET_OPEN, "decode"},
    {VT_OPT_DS_MIN_SIZE, VT_SCOPE_DATASET_OPEN | VT_SCOPE_DATASET_VALIDATE, "min_size"},
    {VT_OPT_DS_WORKERS, VT_SCOPE_DATASET_OPEN | VT_SCOPE_DATASET_VALIDATE, "workers"},
    {VT_OPT_SPLIT_VAL, VT_SCOPE_DATASET_SPLIT, "val"},
    {VT_OPT_SUBSET_FRACTION, VT_SCOPE_DATASET_SUBSET, "fraction"},
    {VT_OPT_SUBSET_COUNT, VT_SCOPE_DATASET_SUBSET, "count"},
    {VT_OPT_SPLIT_SEED, VT_SCOPE_DATASET_SPLIT | VT_SCOPE_DATASET_SUBSET, "seed"},
    {VT_OPT_SYNTH_CLASSES, VT_SCOPE_SYNTH_CLASSIFY, "classes"},
    {VT_OPT_SYNTH_TRAIN, VT_SCOPE_SYNTH_CLASSIFY, "train"},
    {VT_OPT_SYNTH_VAL, VT_SCOPE_SYNTH_CLASSIFY, "val"},
    {VT_OPT_SYNTH_IMGSZ, VT_SCOPE_SYNTH_CLASSIFY, "imgsz"},
    {VT_OPT_SYNTH_SEED, VT_SCOPE_SYNTH_CLASSIFY, "seed"},
    {VT_OPT_SYNTH_DET_CLASSES, VT_SCOPE_SYNTH_DETECT, "classes"},
    {VT_OPT_SYNTH_DET_TRAIN, VT_SCOPE_SYNTH_DETECT, "train"},
    {VT_OPT_SYNTH_DET_VAL, VT_SCOPE_SYNTH_DETECT, "val"},
    {VT_OPT_SYNTH_DET_IMGSZ, VT_SCOPE_SYNTH_DETECT, "imgsz"},
    {VT_OPT_SYNTH_DET_SEED, VT_SCOPE_SYNTH_DETECT, "seed"},
    {VT_OPT_SYNTH_DET_MAX_OBJECTS, VT_SCOPE_SYNTH_DETECT, "max_objects"},
    {VT_OPT_SYNTH_DET_MIN_SIZE, VT_SCOPE_SYNTH_DETECT, "min_size"},
    {VT_OPT_SYNTH_DET_MAX_SIZE, VT_SCOPE_SYNTH_DETECT, "max_size"},
    {VT_OPT_SYNTH_DET_SIZES, VT_SCOPE_SYNTH_DETECT, "sizes"},
    {VT_OPT_CAL_BATCHES, VT_SCOPE_CALIBRATE, "batches"},
    {VT_OPT_CAL_SECONDS, VT_SCOPE_CALIBRATE, "seconds"},
    {VT_OPT_CAL_GPU, VT_SCOPE_CALIBRATE, "gpu"},
    {VT_OPT_CAL_PROBE_MAX, VT_SCOPE_CALIBRATE, "probe_max"},
    {VT_OPT_EXPORT_OPSET, VT_SCOPE_EXPORT, "opset"},
    {VT_OPT_EXPORT_BATCH, VT_SCOPE_EXPORT, "batch"},
    {VT_OPT_EXPORT_NMS, VT_SCOPE_EXPORT, "nms"},
    {VT_OPT_EXPORT_CONF, VT_SCOPE_EXPORT, "conf"},
    {VT_OPT_EXPORT_IOU, VT_SCOPE_EXPORT, "iou"},
    {VT_OPT_EXPORT_MAX_DET, VT_SCOPE_EXPORT, "max_det"},
    {VT_OPT_EXPORT_HALF, VT_SCOPE_EXPORT, "half"},
    {VT_OPT_EXPORT_FOLD, VT_SCOPE_EXPORT, "fold"},
};
#define N_EXPECTED ((int)(sizeof expected / sizeof expected[0]))

static const int all_scopes[] = {
    VT_SCOPE_TRAINER,        VT_SCOPE_MODEL,          VT_SCOPE_ESTIMATOR,
    VT_SCOPE_DATASET_OPEN,   VT_SCOPE_DATASET_VALIDATE, VT_SCOPE_DATASET_SPLIT,
    VT_SCOPE_DATASET_SUBSET, VT_SCOPE_SYNTH_CLASSIFY, VT_SCOPE_SYNTH_DETECT,
    VT_SCOPE_CALIBRATE,      VT_SCOPE_EXPORT,
};
#define N_SCOPES ((int)(sizeof all_scopes / sizeof all_scopes[0]))

START_TEST(test_every_key_is_listed)
{
    int found[N_EXPECTED] = {0}, per_scope[N_SCOPES] = {0};
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        int scopes = vt_option_scopes((vt_option)id);
        ck_assert_msg(scopes != 0, "option %d belongs to no handle or call", id);
        for (int s = 0; s < N_SCOPES; s++) per_scope[s] += !!(scopes & all_scopes[s]);
        for (int k = 0; k < N_EXPECTED; k++)
            if (expected[k].id == id) {
                found[k]++;
                ck_assert_msg(scopes == expected[k].scopes, "option %d (%s): scopes %#x, expected %#x",
                              id, expected[k].key, scopes, expected[k].scopes);
            }
    }
    for (int k = 0; k < N_EXPECTED; k++)
        ck_assert_msg(found[k] == 1, "option %d (%s): visited %d times by vt_option_next",
                      expected[k].id, expected[k].key, found[k]);
    /* nothing beyond the expected list in the groups it covers */
    for (int s = 2; s < N_SCOPES; s++) {
        int want = 0;
        for (int k = 0; k < N_EXPECTED; k++) want += !!(expected[k].scopes & all_scopes[s]);
        ck_assert_msg(per_scope[s] == want, "scope %#x: %d options in the table, %d expected",
                      all_scopes[s], per_scope[s], want);
    }
    /* the ABI's fixed values */
    ck_assert_int_eq(VT_OPT_EST_MODEL, 500);
    ck_assert_int_eq(VT_OPT_EST_MEMORY_FRACTION, 520);
    ck_assert_int_eq(VT_OPT_EST_LINK_GBS, 521);
    ck_assert_int_eq(vt_option_scopes((vt_option)599), 0);
    ck_assert_int_eq(vt_option_scopes((vt_option)0), 0);
}
END_TEST

START_TEST(test_info_round_trips)
{
    int strings = 0, count = 0;
    for (int id = vt_option_next(0); id; id = vt_option_next(id), count++) {
        const char *key, *help, *def_str;
        vt_option_type type;
        double lo, hi, def;
        ck_assert_int_eq(vt_option_info((vt_option)id, &key, &type, &lo, &hi, &help), VT_OK);
        ck_assert_int_eq(vt_option_default((vt_option)id, &def, &def_str), VT_OK);
        ck_assert_msg(key && *key && help && *help, "option %d: no key or help", id);
        for (int k = 0; k < N_EXPECTED; k++)
            if (expected[k].id == id)
                ck_assert_msg(!strcmp(key, expected[k].key), "option %d: key '%s', expected '%s'",
                              id, key, expected[k].key);
        /* key -> id in each of its scopes: one option per key and scope */
        int scopes = vt_option_scopes((vt_option)id);
        for (int s = 0; s < N_SCOPES; s++) {
            if (!(scopes & all_scopes[s])) continue;
            const vt_optdef *d = vt_optdef_in_scope(key, strlen(key), all_scopes[s]);
            ck_assert_msg(d && d->id == id, "key '%s' in scope %#x gives option %d, not %d", key,
                          all_scopes[s], d ? d->id : 0, id);
        }
        const vt_optdef *d = vt_optdef_by_id(id);
        if (type == VT_OPTION_STRING) {
            strings++;
            ck_assert_msg(lo == 0 && hi == 0 && def == 0, "string option %s: numbers given", key);
            size_t len = strlen(def_str), most = d->max > 0 ? (size_t)d->max : VT_OPT_STR_MAX - 1;
            ck_assert_msg(len >= (size_t)d->min && len <= most,
                          "%s: default '%s' has the wrong length", key, def_str);
            if (d->choices) {
                int in = 0;
                for (const char *const *c = d->choices; *c; c++) in |= !strcmp(*c, def_str);
                ck_assert_msg(in, "%s: default '%s' is not one of its choices", key, def_str);
            }
        } else {
            ck_assert_msg(*def_str == 0, "numeric option %s: a string default", key);
            ck_assert_msg(lo <= hi, "%s: range [%g, %g]", key, lo, hi);
            int in = def >= lo && def <= hi;
            ck_assert_msg(in || ((d->flags & VT_OPTF_ZERO_AUTO) && def == 0),
                          "%s (%d): default %g outside [%g, %g]", key, id, def, lo, hi);
            ck_assert_msg(type != VT_OPTION_INT || def == floor(def), "%s: default %g", key, def);
        }
    }
    ck_assert_msg(count <= VT_OPT_SLOTS, "%d options, vt_optvals holds %d", count, VT_OPT_SLOTS);
    ck_assert_msg(strings <= VT_OPT_STR_SLOTS, "%d string options, vt_optvals holds %d", strings,
                  VT_OPT_STR_SLOTS);
    ck_assert_int_eq(vt_option_default((vt_option)599, NULL, NULL), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_option_default(VT_OPT_EPOCHS, NULL, NULL), VT_OK);
}
END_TEST

/* The message an out-of-range value gets, from the table's bounds. */
static void range_message(int id, const char *value, char *out, size_t cap)
{
    const char *key;
    double lo, hi;
    ck_assert_int_eq(vt_option_info((vt_option)id, &key, NULL, &lo, &hi, NULL), VT_OK);
    snprintf(out, cap, "%s=%s is out of range [%.15g, %.15g]", key, value, lo, hi);
}

static void expect_range_error(vt_status st, const char *msg, int id, const char *value,
                               const char *what)
{
    char want[256];
    range_message(id, value, want, sizeof want);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "%s: status %d (%s)", what, st, msg);
    ck_assert_msg(strstr(msg, want) != NULL, "%s: message '%s' lacks '%s'", what, msg, want);
}

START_TEST(test_estimator_uses_the_table)
{
    vt_estimator *e;
    ck_assert_int_eq(vt_estimator_create(&e), VT_OK);
    /* its values start at the table's defaults */
    for (int k = 0; k < N_EXPECTED; k++) {
        if (expected[k].scopes != VT_SCOPE_ESTIMATOR) continue;
        const vt_optdef *d = vt_optdef_by_id(expected[k].id);
        if (d->type == VT_OPTION_STRING)
            ck_assert_msg(!strcmp(OSTR(e, d->id), d->def_str), "%s: '%s'", d->key, OSTR(e, d->id));
        else
            ck_assert_msg(OPT(e, d->id) == d->def_num, "%s: %g", d->key, OPT(e, d->id));
    }
    /* out of range: the trainer's message, with the table's bounds */
    expect_range_error(vt_estimator_set(e, "epochs=0"), vt_estimator_last_error(e),
                       VT_OPT_EST_EPOCHS, "0", "vt_estimator_set(epochs=0)");
    expect_range_error(vt_estimator_set_int(e, VT_OPT_EST_NUM_GPUS, 65), vt_estimator_last_error(e),
                       VT_OPT_EST_NUM_GPUS, "65", "vt_estimator_set_int(gpus, 65)");
    expect_range_error(vt_estimator_set_float(e, VT_OPT_EST_MEMORY_FRACTION, 0.05),
                       vt_last_error(), VT_OPT_EST_MEMORY_FRACTION, "0.05",
                       "vt_estimator_set_float(memory_fraction, 0.05)");
    vt_trainer *t;
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=32"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, NULL), VT_OK);
    expect_range_error(vt_trainer_set(t, "epochs=0"), vt_trainer_last_error(t), VT_OPT_EPOCHS,
                       "0", "vt_trainer_set(epochs=0)");
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    /* choices and lengths come from the table too */
    ck_assert_int_eq(vt_estimator_set(e, "precision=fp8"), VT_ERR_OPTION_VALUE);
    ck_assert_msg(strstr(vt_estimator_last_error(e), "fp32, tf32, bf16, fp16, amp"), "'%s'",
                  vt_estimator_last_error(e));
    ck_assert_int_eq(vt_estimator_set(e, "gpu="), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_estimator_set(e, "channels=2"), VT_ERR_OPTION_VALUE);
    /* another handle's option, or a key of another call */
    ck_assert_int_eq(vt_estimator_set_int(e, VT_OPT_EPOCHS, 5), VT_ERR_UNKNOWN_OPTION);
    ck_assert_int_eq(vt_estimator_set(e, "probe_max=1"), VT_ERR_UNKNOWN_OPTION);
    ck_assert_msg(strstr(vt_estimator_last_error(e), "memory_fraction"),
                  "the message lists the valid keys: '%s'", vt_estimator_last_error(e));
    /* a good value is taken */
    ck_assert_int_eq(vt_estimator_set(e, "gpus=4"), VT_OK);
    ck_assert_msg(OPT(e, VT_OPT_EST_NUM_GPUS) == 4, "gpus=4 not stored");
    vt_estimator_destroy(e);
}
END_TEST

START_TEST(test_calls_check_against_the_table)
{
    char msg[1024];
    /* vt_dataset_open_ex and vt_dataset_validate parse before touching the path */
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open_ex(&ds, VT_TASK_CLASSIFY, "/nonexistent", "min_size=0");
    expect_range_error(st, vt_last_error(), VT_OPT_DS_MIN_SIZE, "0", "vt_dataset_open_ex");
    vt_report *rep = NULL;
    st = vt_dataset_validate(&rep, VT_TASK_CLASSIFY, "/nonexistent", "workers=65");
    expect_range_error(st, vt_last_error(), VT_OPT_DS_WORKERS, "65", "vt_dataset_validate");
    st = vt_dataset_validate(&rep, VT_TASK_CLASSIFY, "/nonexistent", "decode=1");
    ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION, "validate takes no decode=: %d", st);
    st = vt_dataset_open_ex(&ds, VT_TASK_CLASSIFY, "/nonexistent", "policy=ignore");
    ck_assert_msg(st == VT_ERR_OPTION_VALUE && strstr(vt_last_error(), "drop, skip, fail"),
                  "policy=ignore: %d '%s'", st, vt_last_error());

    /* vt_synth_generate: the classification and the detection ranges */
    const char *dir = vt_test_path("synth");
    st = vt_synth_generate(dir, VT_TASK_CLASSIFY, "imgsz=15");
    expect_range_error(st, vt_last_error(), VT_OPT_SYNTH_IMGSZ, "15", "synth classify imgsz=15");
    st = vt_synth_generate(dir, VT_TASK_DETECT, "max_objects=65");
    expect_range_error(st, vt_last_error(), VT_OPT_SYNTH_DET_MAX_OBJECTS, "65",
                       "synth detect max_objects=65");
    st = vt_synth_generate(dir, VT_TASK_SEGMENT, "imgsz=16");
    expect_range_error(st, vt_last_error(), VT_OPT_SYNTH_DET_IMGSZ, "16", "synth segment imgsz=16");
    st = vt_synth_generate(dir, VT_TASK_CLASSIFY, "max_objects=2");
    ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION && strstr(vt_last_error(), "imgsz"),
                  "classification takes no max_objects=: %d '%s'", st, vt_last_error());

    /* vt_dataset_split / vt_dataset_subset need a YOLO dataset */
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_DETECT, "train=6 val=2 imgsz=32"), VT_OK);
    ck_assert_msg(vt_dataset_open(&ds, VT_TASK_DETECT, dir) == VT_OK, "%s", vt_last_error());
    st = vt_dataset_split(ds, vt_test_path("split"), "val=1.5");
    expect_range_error(st, vt_last_error(), VT_OPT_SPLIT_VAL, "1.5", "vt_dataset_split");
    st = vt_dataset_subset(ds, vt_test_path("subset"), "fraction=2");
    expect_range_error(st, vt_last_error(), VT_OPT_SUBSET_FRACTION, "2", "vt_dataset_subset");
    st = vt_dataset_subset(ds, vt_test_path("subset"), "count=-1");
    expect_range_error(st, vt_last_error(), VT_OPT_SUBSET_COUNT, "-1", "vt_dataset_subset count");
    st = vt_dataset_split(ds, vt_test_path("split"), "fraction=0.5");
    ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION, "split takes no fraction=: %d", st);
    st = vt_dataset_split(ds, vt_test_path("split"), "seed=3");
    ck_assert_msg(st == VT_OK, "split with the default val: %s", vt_last_error());
    vt_dataset_destroy(ds);

    /* vt_estimator_calibrate parses before measuring */
    vt_estimator *e;
    ck_assert_int_eq(vt_estimator_create(&e), VT_OK);
    st = vt_estimator_calibrate(e, "cpu", "seconds=0.05");
    snprintf(msg, sizeof msg, "%s", vt_last_error());
    expect_range_error(st, msg, VT_OPT_CAL_SECONDS, "0.05", "vt_estimator_calibrate");
    st = vt_estimator_calibrate(e, "cpu", "speed=11");
    ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION && strstr(vt_last_error(), "probe_max"),
                  "speed=11: %d '%s'", st, vt_last_error());
    vt_estimator_destroy(e);

    /* vt_model_export checks its options before writing anything (every build) */
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=32"), VT_OK);
    st = vt_model_export(m, vt_test_path("m.onnx"), VT_EXPORT_ONNX, "max_det=0");
    expect_range_error(st, vt_model_last_error(m), VT_OPT_EXPORT_MAX_DET, "0", "vt_model_export");
    st = vt_model_export(m, vt_test_path("m.onnx"), VT_EXPORT_ONNX, "batch=dynamic opset=22");
    expect_range_error(st, vt_model_last_error(m), VT_OPT_EXPORT_OPSET, "22",
                       "vt_model_export opset=22");
    vt_model_destroy(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_every_key_is_listed);
    tcase_add_test(tc, test_info_round_trips);
    tcase_add_test(tc, test_estimator_uses_the_table);
    tcase_add_test(tc, test_calls_check_against_the_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
