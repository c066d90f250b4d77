/* lib/core: status strings, versions, the thread-local error, the option table and its
 * key=value / typed setters (trainer and model scopes), the RNG, and the thread pool. */
#include <check.h>
#include <sched.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/threads.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

#define NSTATUS 18 /* VT_OK .. VT_ERR_NUMERIC */

/* ---- status strings and versions ---------------------------------------------------------- */

START_TEST(test_status_strings)
{
    const char *seen[NSTATUS];
    for (int s = 0; s < NSTATUS; s++) {
        const char *str = vt_status_string((vt_status)s);
        ck_assert_msg(str != NULL, "status %d: NULL string", s);
        ck_assert_msg(str[0] != 0, "status %d: empty string", s);
        ck_assert_msg(strcmp(str, vt_status_string((vt_status)999)) != 0,
                      "status %d: described as an unknown status ('%s')", s, str);
        for (int k = 0; k < s; k++)
            ck_assert_msg(strcmp(seen[k], str) != 0, "status %d and %d share the string '%s'", k,
                          s, str);
        seen[s] = str;
    }
    ck_assert_msg(strcmp(vt_status_string(VT_OK), "ok") == 0, "VT_OK: '%s'",
                  vt_status_string(VT_OK));
    /* Out-of-range values still get a static, non-NULL string. */
    ck_assert_msg(vt_status_string((vt_status)-1) != NULL, "status -1: NULL");
    ck_assert_msg(vt_status_string((vt_status)NSTATUS) != NULL, "status %d: NULL", NSTATUS);
    ck_assert_msg(vt_status_string((vt_status)123456) != NULL, "status 123456: NULL");
}
END_TEST

START_TEST(test_versions)
{
    ck_assert_msg(vt_version() == VT_VERSION_NUMBER, "vt_version()=%u, header %d", vt_version(),
                  VT_VERSION_NUMBER);
    ck_assert_int_eq(VT_VERSION_NUMBER,
                     VT_VERSION_MAJOR * 10000 + VT_VERSION_MINOR * 100 + VT_VERSION_PATCH);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", VT_VERSION_MAJOR, VT_VERSION_MINOR, VT_VERSION_PATCH);
    ck_assert_msg(vt_version_string() != NULL, "vt_version_string() is NULL");
    ck_assert_msg(strcmp(vt_version_string(), want) == 0, "vt_version_string()='%s', want '%s'",
                  vt_version_string(), want);
    ck_assert_msg(vt_abi_version() == VT_ABI_VERSION, "vt_abi_version()=%u, header %d",
                  vt_abi_version(), VT_ABI_VERSION);
}
END_TEST

/* ---- thread-local last error -------------------------------------------------------------- */

static pthread_barrier_t barrier;

static void *other_thread(void *arg)
{
    char *result = arg; /* 3 x 256 bytes */
    /* A new thread starts without an error. */
    snprintf(result, 256, "%s", vt_last_error());
    pthread_barrier_wait(&barrier); /* 1: main has failed */
    vt_model *m = NULL;
    vt_status st = vt_model_create(&m, "no-such-arch-in-thread", 3, NULL);
    snprintf(result + 256, 256, "%d|%s", (int)st, vt_last_error());
    pthread_barrier_wait(&barrier); /* 2: we have failed; main checks its message */
    pthread_barrier_wait(&barrier); /* 3: main failed again */
    snprintf(result + 512, 256, "%s", vt_last_error());
    return NULL;
}

START_TEST(test_last_error_thread_local)
{
    char result[768] = {0};
    pthread_t th;
    pthread_barrier_init(&barrier, NULL, 2);
    ck_assert_int_eq(pthread_create(&th, NULL, other_thread, result), 0);
    vt_dataset *ds = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, "/nonexistent/main-thread-dataset");
    ck_assert_msg(st == VT_ERR_NOT_FOUND, "main: dataset_open gave %d", st);
    char mine[VT_ERRMSG_MAX];
    snprintf(mine, sizeof mine, "%s", vt_last_error());
    ck_assert_msg(strstr(mine, "main-thread-dataset") != NULL, "main: message '%s'", mine);
    pthread_barrier_wait(&barrier); /* 1 */
    pthread_barrier_wait(&barrier); /* 2 */
    ck_assert_msg(strcmp(vt_last_error(), mine) == 0,
                  "main thread's message changed by a failure in another thread: '%s'",
                  vt_last_error());
    st = vt_model_create(NULL, "cls-n", 2, NULL); /* main fails again, differently */
    ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "main: NULL out gave %d", st);
    pthread_barrier_wait(&barrier); /* 3 */
    pthread_join(th, NULL);
    pthread_barrier_destroy(&barrier);
    ck_assert_msg(result[0] == 0, "new thread started with message '%s'", result);
    ck_assert_msg(strstr(result + 256, "no-such-arch-in-thread") != NULL &&
                      strncmp(result + 256, "1|", 2) == 0,
                  "thread: unexpected failure '%s'", result + 256);
    ck_assert_msg(strstr(result + 512, "no-such-arch-in-thread") != NULL,
                  "thread's message changed by the main thread's failure: '%s'", result + 512);
    ck_assert_msg(strstr(vt_last_error(), "no-such-arch") == NULL,
                  "main sees the thread's message: '%s'", vt_last_error());
}
END_TEST

/* ---- option table -------------------------------------------------------------------------- */

static const int all_options[] = {
    VT_OPT_EPOCHS, VT_OPT_BATCH, VT_OPT_IMGSZ, VT_OPT_OPTIMIZER, VT_OPT_LR0, VT_OPT_LRF,
    VT_OPT_MOMENTUM, VT_OPT_WEIGHT_DECAY, VT_OPT_NESTEROV, VT_OPT_WARMUP_EPOCHS, VT_OPT_COS_LR,
    VT_OPT_LABEL_SMOOTHING, VT_OPT_SEED, VT_OPT_DEVICE, VT_OPT_WORKERS, VT_OPT_FLIPLR, VT_OPT_VAL,
    VT_OPT_PRECISION, VT_OPT_CHANNELS, VT_OPT_MODEL_IMGSZ, VT_OPT_DROPOUT, VT_OPT_MODEL_SEED};
#define N_ALL ((int)(sizeof all_options / sizeof all_options[0]))

START_TEST(test_option_next)
{
    int prev = 0, count = 0, found[N_ALL] = {0};
    for (int id = vt_option_next(0); id != 0; id = vt_option_next(id)) {
        ck_assert_msg(id > prev, "vt_option_next: %d after %d is not ascending", id, prev);
        ck_assert_msg(count < 1000, "vt_option_next does not terminate");
        for (int k = 0; k < N_ALL; k++)
            if (all_options[k] == id) found[k]++;
        ck_assert_msg(vt_option_info((vt_option)id, NULL, NULL, NULL, NULL, NULL) == VT_OK,
                      "vt_option_next gave %d, which vt_option_info does not know", id);
        prev = id;
        count++;
    }
    ck_assert_msg(count >= N_ALL, "vt_option_next visited %d options, the header has %d", count,
                  N_ALL);
    for (int k = 0; k < N_ALL; k++)
        ck_assert_msg(found[k] == 1, "option %d visited %d times", all_options[k], found[k]);
    ck_assert_msg(vt_option_next(prev) == 0, "after the last (%d): %d", prev, vt_option_next(prev));
    ck_assert_msg(vt_option_next(1 << 30) == 0, "after a huge id: not 0");
    ck_assert_msg(vt_option_next(-5) == all_options[0], "from -5: %d", vt_option_next(-5));
}
END_TEST

START_TEST(test_option_info)
{
    for (int k = 0; k < N_ALL; k++) {
        int id = all_options[k];
        const char *key = NULL, *help = NULL;
        vt_option_type type = 0;
        double lo = -1, hi = -1;
        vt_status st = vt_option_info((vt_option)id, &key, &type, &lo, &hi, &help);
        ck_assert_msg(st == VT_OK, "option %d: vt_option_info gave %d: %s", id, st,
                      vt_last_error());
        ck_assert_msg(key && *key && !strchr(key, '=') && !strchr(key, ' '), "option %d: key '%s'",
                      id, key ? key : "(null)");
        ck_assert_msg(help && *help, "option %d (%s): no help", id, key);
        ck_assert_msg(type == VT_OPTION_INT || type == VT_OPTION_FLOAT || type == VT_OPTION_STRING,
                      "option %s: type %d", key, type);
        if (type == VT_OPTION_STRING)
            ck_assert_msg(lo == 0 && hi == 0, "string option %s: bounds %g..%g", key, lo, hi);
        else
            ck_assert_msg(lo <= hi, "option %s: min %g > max %g", key, lo, hi);
        /* every out-pointer may be NULL */
        ck_assert_msg(vt_option_info((vt_option)id, NULL, NULL, NULL, NULL, NULL) == VT_OK,
                      "option %s: all-NULL out-pointers rejected", key);
    }
    /* spot checks against the header */
    const char *key;
    vt_option_type type;
    double lo, hi;
    ck_assert_int_eq(vt_option_info(VT_OPT_EPOCHS, &key, &type, &lo, &hi, NULL), VT_OK);
    ck_assert_msg(strcmp(key, "epochs") == 0 && type == VT_OPTION_INT && lo == 1,
                  "epochs: '%s' type %d min %g", key, type, lo);
    ck_assert_int_eq(vt_option_info(VT_OPT_OPTIMIZER, &key, &type, NULL, NULL, NULL), VT_OK);
    ck_assert_msg(strcmp(key, "optimizer") == 0 && type == VT_OPTION_STRING, "optimizer: '%s' %d",
                  key, type);
    ck_assert_int_eq(vt_option_info(VT_OPT_LR0, &key, &type, NULL, NULL, NULL), VT_OK);
    ck_assert_msg(strcmp(key, "lr0") == 0 && type == VT_OPTION_FLOAT, "lr0: '%s' %d", key, type);
    ck_assert_int_eq(vt_option_info(VT_OPT_MODEL_IMGSZ, &key, NULL, &lo, &hi, NULL), VT_OK);
    ck_assert_msg(strcmp(key, "imgsz") == 0 && lo == 8 && hi == 4096, "model imgsz: '%s' %g..%g",
                  key, lo, hi);
    ck_assert_int_eq(vt_option_info(VT_OPT_MODEL_SEED, &key, NULL, NULL, NULL, NULL), VT_OK);
    ck_assert_msg(strcmp(key, "seed") == 0, "model seed key '%s'", key);
    /* unknown ids */
    int bad[] = {0, -1, 99, 199, 299, 304, 399, 100000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vt_status st = vt_option_info((vt_option)bad[i], &key, NULL, NULL, NULL, NULL);
        ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "unknown option id %d: status %d", bad[i], st);
        ck_assert_msg(*vt_last_error(), "unknown option id %d: no message", bad[i]);
    }
}
END_TEST

/* ---- trainer options ----------------------------------------------------------------------- */

static vt_model *tmodel;
static vt_trainer *trainer;

static void trainer_setup(void)
{
    ck_assert_int_eq(vt_model_create(&tmodel, "cnn-small", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&trainer, tmodel, NULL), VT_OK);
}

static void trainer_teardown(void)
{
    vt_trainer_destroy(trainer);
    vt_model_destroy(tmodel);
    trainer = NULL;
    tmodel = NULL;
}

static double tget(vt_option o)
{
    double v = -12345;
    vt_status st = vt_trainer_get_float(trainer, o, &v);
    ck_assert_msg(st == VT_OK, "get_float(%d): %d %s", o, st, vt_last_error());
    return v;
}

START_TEST(test_trainer_defaults)
{
    struct { vt_option o; double v; } d[] = {
        {VT_OPT_EPOCHS, 10}, {VT_OPT_BATCH, 32}, {VT_OPT_LRF, 0.01}, {VT_OPT_MOMENTUM, 0.9},
        {VT_OPT_WEIGHT_DECAY, 5e-4}, {VT_OPT_NESTEROV, 1}, {VT_OPT_WARMUP_EPOCHS, 1},
        {VT_OPT_COS_LR, 1}, {VT_OPT_LABEL_SMOOTHING, 0}, {VT_OPT_SEED, 0}, {VT_OPT_WORKERS, 2},
        {VT_OPT_FLIPLR, 0.5}, {VT_OPT_VAL, 1}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        ck_assert_msg(tget(d[i].o) == d[i].v, "default of option %d: %g, header says %g", d[i].o,
                      tget(d[i].o), d[i].v);
}
END_TEST

/* For every trainer option: a valid key=value, then read back. */
START_TEST(test_trainer_set_each)
{
    int n = 0;
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        if (id >= 300) continue; /* model options */
        const char *key;
        vt_option_type type;
        double lo, hi;
        ck_assert_int_eq(vt_option_info((vt_option)id, &key, &type, &lo, &hi, NULL), VT_OK);
        char kv[128];
        double want = 0;
        if (type == VT_OPTION_STRING) {
            const char *val = id == VT_OPT_OPTIMIZER   ? "adamw"
                              : id == VT_OPT_DEVICE    ? "cpu"
                              : id == VT_OPT_PRECISION ? "fp32"
                                                       : NULL;
            if (!val) continue; /* a newer string option: no generic valid value */
            snprintf(kv, sizeof kv, "%s=%s", key, val);
            vt_status st = vt_trainer_set(trainer, kv);
            ck_assert_msg(st == VT_OK, "'%s': %d %s", kv, st, vt_trainer_last_error(trainer));
            double dummy;
            ck_assert_msg(vt_trainer_get_float(trainer, (vt_option)id, &dummy) != VT_OK,
                          "get_float on string option %s succeeded", key);
        } else {
            /* a value inside the range that differs from the default */
            want = type == VT_OPTION_INT ? floor(lo + (hi - lo > 3 ? 3 : hi - lo))
                                         : lo + (hi - lo) * 0.25;
            if (type == VT_OPTION_INT && hi > 1e9) want = 7;
            snprintf(kv, sizeof kv, "%s=%.17g", key, want);
            vt_status st = vt_trainer_set(trainer, kv);
            ck_assert_msg(st == VT_OK, "'%s': %d %s", kv, st, vt_trainer_last_error(trainer));
            ck_assert_msg(tget((vt_option)id) == want, "'%s': read back %.17g", kv,
                          tget((vt_option)id));
            /* bounds themselves are valid */
            snprintf(kv, sizeof kv, "%s=%.17g", key, lo);
            st = vt_trainer_set(trainer, kv);
            ck_assert_msg(st == VT_OK, "'%s' (the minimum): %d %s", kv, st, vt_last_error());
            snprintf(kv, sizeof kv, "%s=%.17g", key, hi);
            st = vt_trainer_set(trainer, kv);
            ck_assert_msg(st == VT_OK, "'%s' (the maximum): %d %s", kv, st, vt_last_error());
            ck_assert_msg(tget((vt_option)id) == hi, "'%s': read back %.17g", kv,
                          tget((vt_option)id));
        }
        n++;
    }
    ck_assert_msg(n >= 18, "%d trainer options, expected at least 18", n);
    /* typed setters, read back */
    ck_assert_int_eq(vt_trainer_set_int(trainer, VT_OPT_EPOCHS, 42), VT_OK);
    ck_assert_msg(tget(VT_OPT_EPOCHS) == 42, "set_int epochs: %g", tget(VT_OPT_EPOCHS));
    ck_assert_int_eq(vt_trainer_set_float(trainer, VT_OPT_LR0, 0.125), VT_OK);
    ck_assert_msg(tget(VT_OPT_LR0) == 0.125, "set_float lr0: %g", tget(VT_OPT_LR0));
    ck_assert_int_eq(vt_trainer_set_string(trainer, VT_OPT_OPTIMIZER, "sgd"), VT_OK);
    ck_assert_int_eq(vt_trainer_set_string(trainer, VT_OPT_DEVICE, "3"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(trainer, "lr0=1e-3"), VT_OK);
    ck_assert_msg(tget(VT_OPT_LR0) == 1e-3, "lr0=1e-3: %g", tget(VT_OPT_LR0));
    ck_assert_int_eq(vt_trainer_set(trainer, "seed=9007199254740991"), VT_OK);
    ck_assert_msg(tget(VT_OPT_SEED) == 9007199254740991.0, "big seed: %.17g", tget(VT_OPT_SEED));
}
END_TEST

/* A failing set: status, message content, the handle's copy, and the value unchanged. */
static int is_numeric_trainer_opt(int id)
{
    vt_option_type type;
    return id < 300 && vt_option_info((vt_option)id, NULL, &type, NULL, NULL, NULL) == VT_OK &&
           type != VT_OPTION_STRING;
}

static void expect_fail(const char *kv, vt_status want, const char *const *must_contain)
{
    double before[64];
    int k = 0;
    for (int id = vt_option_next(0); id && k < 64; id = vt_option_next(id))
        if (is_numeric_trainer_opt(id)) before[k++] = tget((vt_option)id);
    vt_status st = vt_trainer_set(trainer, kv);
    ck_assert_msg(st == want, "'%s': status %d (%s), expected %d; message '%s'", kv, st,
                  vt_status_string(st), want, vt_last_error());
    const char *msg = vt_last_error();
    ck_assert_msg(*msg, "'%s': empty message", kv);
    ck_assert_msg(strcmp(msg, vt_trainer_last_error(trainer)) == 0,
                  "'%s': trainer message '%s' differs from thread message '%s'", kv,
                  vt_trainer_last_error(trainer), msg);
    for (int i = 0; must_contain && must_contain[i]; i++)
        ck_assert_msg(strstr(msg, must_contain[i]) != NULL, "'%s': message '%s' lacks '%s'", kv,
                      msg, must_contain[i]);
    k = 0;
    for (int id = vt_option_next(0); id && k < 64; id = vt_option_next(id))
        if (is_numeric_trainer_opt(id))
            ck_assert_msg(tget((vt_option)id) == before[k++],
                          "'%s' failed but changed option %d", kv, id);
}

START_TEST(test_trainer_set_errors)
{
    /* every trainer key, from the table */
    const char *trainer_keys[64];
    int nk = 0;
    for (int id = vt_option_next(0); id && nk < 63; id = vt_option_next(id))
        if (id < 300) ck_assert_int_eq(vt_option_info((vt_option)id, &trainer_keys[nk++], NULL,
                                                      NULL, NULL, NULL), VT_OK);
    trainer_keys[nk] = NULL;
    ck_assert_msg(nk >= 18, "%d trainer keys", nk);
    /* unknown keys: the message lists every valid key */
    expect_fail("epoch=3", VT_ERR_UNKNOWN_OPTION, trainer_keys);
    expect_fail("learning_rate=0.1", VT_ERR_UNKNOWN_OPTION,
                (const char *const[]){"learning_rate", "lr0", NULL});
    expect_fail("EPOCHS=3", VT_ERR_UNKNOWN_OPTION, (const char *const[]){"EPOCHS", NULL});
    expect_fail("epochs =3", VT_ERR_UNKNOWN_OPTION, NULL);
    /* model options do not apply to a trainer */
    expect_fail("channels=1", VT_ERR_UNKNOWN_OPTION, (const char *const[]){"channels", NULL});
    expect_fail("dropout=0.1", VT_ERR_UNKNOWN_OPTION, (const char *const[]){"dropout", NULL});
    /* out of range: the message names the key and the range */
    expect_fail("epochs=0", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", "range", NULL});
    expect_fail("epochs=-3", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", NULL});
    expect_fail("batch=0", VT_ERR_OPTION_VALUE, (const char *const[]){"batch", NULL});
    expect_fail("imgsz=4", VT_ERR_OPTION_VALUE, (const char *const[]){"imgsz", "8", NULL});
    expect_fail("imgsz=5000", VT_ERR_OPTION_VALUE, (const char *const[]){"imgsz", "4096", NULL});
    expect_fail("lrf=1.5", VT_ERR_OPTION_VALUE, (const char *const[]){"lrf", NULL});
    expect_fail("momentum=-0.1", VT_ERR_OPTION_VALUE, (const char *const[]){"momentum", NULL});
    expect_fail("weight_decay=-1", VT_ERR_OPTION_VALUE, (const char *const[]){"weight_decay", NULL});
    expect_fail("workers=65", VT_ERR_OPTION_VALUE, (const char *const[]){"workers", "64", NULL});
    expect_fail("fliplr=2", VT_ERR_OPTION_VALUE, (const char *const[]){"fliplr", NULL});
    expect_fail("val=2", VT_ERR_OPTION_VALUE, (const char *const[]){"val", NULL});
    expect_fail("nesterov=-1", VT_ERR_OPTION_VALUE, (const char *const[]){"nesterov", NULL});
    expect_fail("label_smoothing=1", VT_ERR_OPTION_VALUE,
                (const char *const[]){"label_smoothing", NULL});
    expect_fail("lr0=-0.1", VT_ERR_OPTION_VALUE, (const char *const[]){"lr0", NULL});
    expect_fail("lr0=inf", VT_ERR_OPTION_VALUE, (const char *const[]){"lr0", NULL});
    expect_fail("seed=-1", VT_ERR_OPTION_VALUE, (const char *const[]){"seed", NULL});
    expect_fail("epochs=1e300", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", NULL});
    /* not a number */
    expect_fail("epochs=ten", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", "ten", NULL});
    expect_fail("lr0=abc", VT_ERR_OPTION_VALUE, (const char *const[]){"lr0", "abc", NULL});
    expect_fail("lr0=nan", VT_ERR_OPTION_VALUE, (const char *const[]){"lr0", NULL});
    expect_fail("epochs=", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", NULL});
    expect_fail("epochs=10x", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", NULL});
    expect_fail("epochs=1 0", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", NULL});
    /* an integer option given a fraction */
    expect_fail("epochs=2.5", VT_ERR_OPTION_VALUE,
                (const char *const[]){"epochs", "integer", NULL});
    expect_fail("batch=0.5", VT_ERR_OPTION_VALUE, (const char *const[]){"batch", NULL});
    /* enumerated strings: the message lists the choices */
    expect_fail("optimizer=rmsprop", VT_ERR_OPTION_VALUE,
                (const char *const[]){"optimizer", "rmsprop", "sgd", "adamw", NULL});
    expect_fail("optimizer=", VT_ERR_OPTION_VALUE, (const char *const[]){"optimizer", NULL});
    expect_fail("optimizer=SGD", VT_ERR_OPTION_VALUE, (const char *const[]){"sgd", NULL});
    expect_fail("precision=fp16", VT_ERR_OPTION_VALUE,
                (const char *const[]){"precision", "tf32", "fp32", NULL});
    expect_fail("device=gpu", VT_ERR_OPTION_VALUE,
                (const char *const[]){"device", "gpu", "cpu", NULL});
    expect_fail("device=-1", VT_ERR_OPTION_VALUE, (const char *const[]){"device", NULL});
    expect_fail("device=", VT_ERR_OPTION_VALUE, (const char *const[]){"device", NULL});
    expect_fail("device=cuda:0", VT_ERR_OPTION_VALUE, (const char *const[]){"device", NULL});
    char longv[200];
    memset(longv, 'x', sizeof longv);
    memcpy(longv, "device=", 7);
    longv[sizeof longv - 1] = 0;
    expect_fail(longv, VT_ERR_OPTION_VALUE, (const char *const[]){"device", NULL});
    /* not key=value at all */
    expect_fail("epochs", VT_ERR_OPTION_VALUE, (const char *const[]){"epochs", "key=value", NULL});
    expect_fail("=5", VT_ERR_OPTION_VALUE, (const char *const[]){"key=value", NULL});
    expect_fail("", VT_ERR_OPTION_VALUE, NULL);
    ck_assert_msg(vt_trainer_set(trainer, NULL) == VT_ERR_INVALID_ARGUMENT, "set(NULL)");
    /* the string options are unchanged after the failures */
    ck_assert_int_eq(vt_trainer_set(trainer, "optimizer=adamw"), VT_OK);
    expect_fail("optimizer=rmsprop", VT_ERR_OPTION_VALUE, NULL);
    /* still adamw: a valid choice round-trips and a bad one did not overwrite it */
    ck_assert_int_eq(vt_trainer_set(trainer, "device=cpu"), VT_OK);
}
END_TEST

START_TEST(test_trainer_typed_errors)
{
    /* a number for a string option */
    vt_status st = vt_trainer_set_int(trainer, VT_OPT_OPTIMIZER, 1);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_int(optimizer): %d", st);
    ck_assert_msg(strstr(vt_last_error(), "optimizer"), "set_int(optimizer): '%s'", vt_last_error());
    st = vt_trainer_set_float(trainer, VT_OPT_DEVICE, 0);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_float(device): %d", st);
    /* a non-numeric string for a number */
    st = vt_trainer_set_string(trainer, VT_OPT_EPOCHS, "many");
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_string(epochs, many): %d", st);
    st = vt_trainer_set_string(trainer, VT_OPT_OPTIMIZER, NULL);
    ck_assert_msg(st == VT_ERR_INVALID_ARGUMENT, "set_string(optimizer, NULL): %d", st);
    /* fractions, NaN, infinities and out-of-range values through the typed setters */
    st = vt_trainer_set_float(trainer, VT_OPT_EPOCHS, 2.5);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_float(epochs, 2.5): %d", st);
    st = vt_trainer_set_float(trainer, VT_OPT_LR0, NAN);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_float(lr0, NaN): %d", st);
    st = vt_trainer_set_float(trainer, VT_OPT_LR0, INFINITY);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_float(lr0, inf): %d", st);
    st = vt_trainer_set_float(trainer, VT_OPT_MOMENTUM, -INFINITY);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_float(momentum, -inf): %d", st);
    st = vt_trainer_set_int(trainer, VT_OPT_EPOCHS, INT64_MAX);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_int(epochs, INT64_MAX): %d", st);
    st = vt_trainer_set_int(trainer, VT_OPT_WORKERS, -1);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_int(workers, -1): %d", st);
    st = vt_trainer_set_int(trainer, VT_OPT_SEED, ((int64_t)1 << 53) + 2);
    ck_assert_msg(st == VT_ERR_OPTION_VALUE, "set_int(seed, 2^53+2): %d", st);
    /* options of another scope, and unknown ids */
    int foreign[] = {VT_OPT_CHANNELS, VT_OPT_MODEL_IMGSZ, VT_OPT_DROPOUT, VT_OPT_MODEL_SEED, 0,
                     99, 199, 500, -7};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        st = vt_trainer_set_int(trainer, (vt_option)foreign[i], 1);
        ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION, "set_int(option %d): %d", foreign[i], st);
        ck_assert_msg(strstr(vt_last_error(), "epochs") != NULL,
                      "set_int(option %d): message does not list the valid options: '%s'",
                      foreign[i], vt_last_error());
        st = vt_trainer_set_float(trainer, (vt_option)foreign[i], 0.5);
        ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION, "set_float(option %d): %d", foreign[i], st);
        st = vt_trainer_set_string(trainer, (vt_option)foreign[i], "1");
        ck_assert_msg(st == VT_ERR_UNKNOWN_OPTION, "set_string(option %d): %d", foreign[i], st);
        double v;
        st = vt_trainer_get_float(trainer, (vt_option)foreign[i], &v);
        ck_assert_msg(st != VT_OK, "get_float(option %d) succeeded", foreign[i]);
    }
    double v;
    ck_assert_msg(vt_trainer_get_float(trainer, VT_OPT_EPOCHS, NULL) == VT_ERR_INVALID_ARGUMENT,
                  "get_float(NULL value)");
    ck_assert_msg(vt_trainer_get_float(trainer, VT_OPT_OPTIMIZER, &v) != VT_OK,
                  "get_float(optimizer) succeeded");
    /* all of the above left the defaults alone */
    ck_assert_msg(tget(VT_OPT_EPOCHS) == 10 && tget(VT_OPT_WORKERS) == 2 && tget(VT_OPT_SEED) == 0 &&
                      tget(VT_OPT_MOMENTUM) == 0.9,
                  "a rejected typed set changed a value");
    /* valid typed sets of an integral value into a float option and vice versa */
    ck_assert_int_eq(vt_trainer_set_int(trainer, VT_OPT_WARMUP_EPOCHS, 3), VT_OK);
    ck_assert_msg(tget(VT_OPT_WARMUP_EPOCHS) == 3, "warmup_epochs: %g", tget(VT_OPT_WARMUP_EPOCHS));
    ck_assert_int_eq(vt_trainer_set_float(trainer, VT_OPT_BATCH, 16.0), VT_OK);
    ck_assert_msg(tget(VT_OPT_BATCH) == 16, "batch: %g", tget(VT_OPT_BATCH));
}
END_TEST

/* ---- model options ------------------------------------------------------------------------- */

START_TEST(test_model_options)
{
    vt_model *m = NULL;
    vt_status st = vt_model_create(&m, "cls-n", 4, "channels=1 imgsz=28 dropout=0.2 seed=3");
    ck_assert_msg(st == VT_OK, "valid model options rejected: %d %s", st, vt_last_error());
    ck_assert_msg(vt_model_channels(m) == 1, "channels=%d", vt_model_channels(m));
    ck_assert_msg(vt_model_imgsz(m) == 28, "imgsz=%d", vt_model_imgsz(m));
    ck_assert_msg(vt_model_num_classes(m) == 4, "num_classes=%d", vt_model_num_classes(m));
    vt_model_destroy(m);
    /* defaults, extra spaces, empty string */
    const char *ok[] = {NULL, "", "   ", "  imgsz=32   channels=3 ", "seed=0", "dropout=0"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        st = vt_model_create(&m, "cnn-small", 2, ok[i]);
        ck_assert_msg(st == VT_OK, "options '%s' rejected: %s", ok[i] ? ok[i] : "(null)",
                      vt_last_error());
        ck_assert_msg(vt_model_channels(m) == 3, "options '%s': channels %d",
                      ok[i] ? ok[i] : "(null)", vt_model_channels(m));
        ck_assert_msg(vt_model_imgsz(m) == (ok[i] && strstr(ok[i], "imgsz=32") ? 32 : 224),
                      "options '%s': imgsz %d", ok[i] ? ok[i] : "(null)", vt_model_imgsz(m));
        vt_model_destroy(m);
    }
    struct { const char *opt; vt_status st; const char *needle; } bad[] = {
        {"channels=2", VT_ERR_OPTION_VALUE, "channels"},
        {"channels=0", VT_ERR_OPTION_VALUE, "channels"},
        {"channels=4", VT_ERR_OPTION_VALUE, "channels"},
        {"channels=1.5", VT_ERR_OPTION_VALUE, "channels"},
        {"imgsz=4", VT_ERR_OPTION_VALUE, "imgsz"},
        {"imgsz=99999", VT_ERR_OPTION_VALUE, "imgsz"},
        {"imgsz=abc", VT_ERR_OPTION_VALUE, "imgsz"},
        {"dropout=1", VT_ERR_OPTION_VALUE, "dropout"},
        {"dropout=-0.1", VT_ERR_OPTION_VALUE, "dropout"},
        {"seed=-1", VT_ERR_OPTION_VALUE, "seed"},
        {"seed=1.5", VT_ERR_OPTION_VALUE, "seed"},
        {"epochs=3", VT_ERR_UNKNOWN_OPTION, "channels"}, /* lists the valid model keys */
        {"colour=1", VT_ERR_UNKNOWN_OPTION, "dropout"},
        {"imgsz", VT_ERR_OPTION_VALUE, "imgsz"},
        {"imgsz=32 =3", VT_ERR_OPTION_VALUE, "=3"},
        {"imgsz=32 channels", VT_ERR_OPTION_VALUE, "channels"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = (vt_model *)&m; /* must be reset to NULL on failure */
        st = vt_model_create(&m, "cnn-small", 2, bad[i].opt);
        ck_assert_msg(st == bad[i].st, "model options '%s': status %d, expected %d (%s)",
                      bad[i].opt, st, bad[i].st, vt_last_error());
        ck_assert_msg(m == NULL, "model options '%s': *out not NULL after failure", bad[i].opt);
        ck_assert_msg(strstr(vt_last_error(), bad[i].needle) != NULL,
                      "model options '%s': message '%s' lacks '%s'", bad[i].opt, vt_last_error(),
                      bad[i].needle);
    }
    /* the seed decides the weights: same seed, same prediction; other seed, other prediction */
    uint8_t img[16 * 16 * 3];
    for (int i = 0; i < (int)sizeof img; i++) img[i] = (uint8_t)(i * 37 + 11);
    float s[3][5];
    const char *seeds[3] = {"imgsz=16 seed=5", "imgsz=16 seed=5", "imgsz=16 seed=6"};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(vt_model_create(&m, "cnn-small", 5, seeds[k]), VT_OK);
        st = vt_model_predict_pixels(m, img, 16, 16, 3, 48, s[k], 5);
        ck_assert_msg(st == VT_OK, "predict (%s): %s", seeds[k], vt_model_last_error(m));
        vt_model_destroy(m);
    }
    ck_assert_msg(memcmp(s[0], s[1], sizeof s[0]) == 0, "same model seed, different predictions");
    ck_assert_msg(memcmp(s[0], s[2], sizeof s[0]) != 0, "seeds 5 and 6 give identical predictions");
}
END_TEST

/* ---- RNG ----------------------------------------------------------------------------------- */

/* Reference xoroshiro128+ (a=24, b=16, c=37) seeded with splitmix64, written from the
 * published algorithm, not from lib/core. */
static uint64_t ref_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

START_TEST(test_rng)
{
    /* matches the reference algorithm */
    const uint64_t seeds[] = {0, 1, 42, 0xFFFFFFFFFFFFFFFFull, 123456789};
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        uint64_t x = seeds[si], s0 = ref_splitmix(&x), s1 = ref_splitmix(&x);
        vt_rng r;
        vt_rng_seed(&r, seeds[si]);
        for (int i = 0; i < 1000; i++) {
            uint64_t want = s0 + s1;
            uint64_t t = s1 ^ s0;
            s0 = rotl(s0, 24) ^ t ^ (t << 16);
            s1 = rotl(t, 37);
            uint64_t got = vt_rng_next(&r);
            ck_assert_msg(got == want, "seed %llu, draw %d: %016llx, reference %016llx",
                          (unsigned long long)seeds[si], i, (unsigned long long)got,
                          (unsigned long long)want);
        }
    }
    /* same seed, same stream (also through a copied state); other seed, other stream */
    vt_rng a, b, c;
    vt_rng_seed(&a, 7);
    vt_rng_seed(&b, 7);
    vt_rng_seed(&c, 8);
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = vt_rng_next(&a), y = vt_rng_next(&b), z = vt_rng_next(&c);
        ck_assert_msg(x == y, "seed 7 twice differs at draw %d", i);
        same_c += x == z;
    }
    ck_assert_msg(same_c == 0, "seeds 7 and 8 share %d of 100 draws", same_c);
    vt_rng saved = a;
    uint64_t n1 = vt_rng_next(&a);
    ck_assert_msg(vt_rng_next(&saved) == n1, "a copied state does not replay the stream");
    /* distributions */
    vt_rng r;
    vt_rng_seed(&r, 2024);
    double sum = 0, sum2 = 0, usum = 0;
    int counts[10] = {0};
    const int N = 20000;
    for (int i = 0; i < N; i++) {
        double u = vt_rng_uniform(&r);
        ck_assert_msg(u >= 0 && u < 1, "uniform draw %d = %g outside [0,1)", i, u);
        usum += u;
        uint32_t k = vt_rng_below(&r, 10);
        ck_assert_msg(k < 10, "below(10) draw %d = %u", i, k);
        counts[k]++;
        double g = vt_rng_normal(&r);
        ck_assert_msg(isfinite(g), "normal draw %d not finite", i);
        sum += g;
        sum2 += g * g;
    }
    ck_assert_msg(fabs(usum / N - 0.5) < 0.02, "uniform mean %g", usum / N);
    for (int k = 0; k < 10; k++)
        ck_assert_msg(counts[k] > N / 10 * 0.85 && counts[k] < N / 10 * 1.15,
                      "below(10): value %d drawn %d times of %d", k, counts[k], N);
    double mean = sum / N, var = sum2 / N - mean * mean;
    ck_assert_msg(fabs(mean) < 0.05 && fabs(var - 1) < 0.08, "normal: mean %g variance %g", mean,
                  var);
    ck_assert_msg(vt_rng_below(&r, 0) == 0, "below(0) != 0");
    ck_assert_msg(vt_rng_below(&r, 1) == 0, "below(1) != 0");
    /* counter-based hash: deterministic, in range, seed- and index-dependent */
    for (uint64_t i = 0; i < 1000; i++) {
        float h = vt_hash_uniform(99, i);
        ck_assert_msg(h >= 0 && h < 1, "hash(99,%llu)=%g", (unsigned long long)i, h);
        ck_assert_msg(h == vt_hash_uniform(99, i), "hash(99,%llu) not deterministic",
                      (unsigned long long)i);
    }
    ck_assert_msg(vt_hash_uniform(1, 5) != vt_hash_uniform(2, 5), "hash ignores the seed");
    ck_assert_msg(vt_hash_uniform(1, 5) != vt_hash_uniform(1, 6), "hash ignores the index");
}
END_TEST

/* ---- thread pool --------------------------------------------------------------------------- */

typedef struct {
    atomic_int *hits;
    size_t n, grain;
    atomic_int calls, bad_range;
    int threads;
} pool_ctx;

static void pool_fn(void *vctx, size_t b, size_t e)
{
    pool_ctx *c = vctx;
    atomic_fetch_add(&c->calls, 1);
    size_t minlen = c->grain < c->n ? c->grain : c->n;
    if (b >= e || e > c->n || e - b < minlen) atomic_fetch_add(&c->bad_range, 1);
    int th = vt_pool_thread(); /* which thread runs the range: one of the pool's */
    if (th < 0 || th >= c->threads) atomic_fetch_add(&c->bad_range, 1);
    for (size_t i = b; i < e && i < c->n; i++) atomic_fetch_add(&c->hits[i], 1);
}

START_TEST(test_pool)
{
    const int threads[] = {1, 2, 3, 4, 8};
    const size_t ns[] = {0, 1, 2, 3, 7, 8, 100, 1001, 10007};
    const size_t grains[] = {0, 1, 3, 64, 5000};
    atomic_int *hits = malloc(10007 * sizeof *hits);
    ck_assert_ptr_nonnull(hits);
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        vt_pool *p = NULL;
        ck_assert_int_eq(vt_pool_create(&p, threads[ti]), VT_OK);
        ck_assert_msg(vt_pool_threads(p) == threads[ti], "pool of %d reports %d threads",
                      threads[ti], vt_pool_threads(p));
        for (int rep = 0; rep < 3; rep++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (size_t gi = 0; gi < sizeof grains / sizeof grains[0]; gi++) {
                    size_t n = ns[ni];
                    pool_ctx c = {hits, n, grains[gi] ? grains[gi] : 1, 0, 0, threads[ti]};
                    for (size_t i = 0; i < n; i++) atomic_init(&hits[i], 0);
                    vt_pool_run(p, n, grains[gi], pool_fn, &c);
                    for (size_t i = 0; i < n; i++)
                        ck_assert_msg(atomic_load(&hits[i]) == 1,
                                      "threads=%d n=%zu grain=%zu rep %d: index %zu run %d times",
                                      threads[ti], n, grains[gi], rep, i, atomic_load(&hits[i]));
                    ck_assert_msg(atomic_load(&c.bad_range) == 0,
                                  "threads=%d n=%zu grain=%zu: %d ranges empty, past n or under "
                                  "the grain", threads[ti], n, grains[gi],
                                  atomic_load(&c.bad_range));
                    int calls = atomic_load(&c.calls);
                    /* up to 4 ranges per thread, taken in turn (one with a single thread) */
                    ck_assert_msg(calls <= (threads[ti] > 1 ? 4 * threads[ti] : 1) &&
                                      (n == 0 ? calls == 0 : calls >= 1),
                                  "threads=%d n=%zu grain=%zu: %d calls", threads[ti], n,
                                  grains[gi], calls);
                }
        /* many tiny jobs back to back (the generation handshake) */
        for (int rep = 0; rep < 2000; rep++) {
            pool_ctx c = {hits, 16, 1, 0, 0, threads[ti]};
            for (int i = 0; i < 16; i++) atomic_init(&hits[i], 0);
            vt_pool_run(p, 16, 1, pool_fn, &c);
            for (int i = 0; i < 16; i++)
                ck_assert_msg(atomic_load(&hits[i]) == 1, "threads=%d rep %d: index %d run %d times",
                              threads[ti], rep, i, atomic_load(&hits[i]));
        }
        vt_pool_destroy(p);
    }
    /* a NULL pool runs everything in the caller */
    pool_ctx c = {hits, 50, 1, 0, 0, 1};
    for (int i = 0; i < 50; i++) atomic_init(&hits[i], 0);
    vt_pool_run(NULL, 50, 1, pool_fn, &c);
    for (int i = 0; i < 50; i++)
        ck_assert_msg(atomic_load(&hits[i]) == 1, "NULL pool: index %d run %d times", i,
                      atomic_load(&hits[i]));
    ck_assert_msg(atomic_load(&c.calls) == 1, "NULL pool: %d calls", atomic_load(&c.calls));
    ck_assert_msg(vt_pool_threads(NULL) == 1, "vt_pool_threads(NULL) != 1");
    /* threads <= 0: one per processor */
    vt_pool *p;
    ck_assert_int_eq(vt_pool_create(&p, 0), VT_OK);
    ck_assert_msg(vt_pool_threads(p) == vt_cpu_count(), "pool(0) has %d threads, %d cpus",
                  vt_pool_threads(p), vt_cpu_count());
    vt_pool_destroy(p);
    vt_pool_destroy(NULL);
    ck_assert_msg(vt_cpu_count() >= 1, "vt_cpu_count() = %d", vt_cpu_count());
    /* a process bound to fewer processors (taskset, a cpuset, an MPI rank's binding) counts
     * those: bound to one, one */
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) == 0 && CPU_COUNT(&all) > 1) {
        int first = 0;
        while (!CPU_ISSET(first, &all)) first++;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
        ck_assert_int_eq(vt_cpu_count(), 1);
        ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
        ck_assert_int_eq(vt_cpu_count(), CPU_COUNT(&all));
    }
    free(hits);
}
END_TEST

/* ---- generic kv-list and number parsing ---------------------------------------------------- */

static vt_status count_kv(void *ctx, const char *key, const char *value)
{
    (void)value;
    if (strcmp(key, "stop") == 0) return vt_fail(VT_ERR_UNKNOWN_OPTION, "stop here");
    (*(int *)ctx)++;
    return VT_OK;
}

START_TEST(test_parse_helpers)
{
    int n = 0;
    ck_assert_int_eq(vt_parse_kv_list(NULL, count_kv, &n), VT_OK);
    ck_assert_int_eq(vt_parse_kv_list("  a=1\tb=  c=3 ", count_kv, &n), VT_OK);
    ck_assert_msg(n == 3, "kv list: %d pairs, expected 3", n);
    ck_assert_int_eq(vt_parse_kv_list("a=1 stop=1 b=2", count_kv, &n), VT_ERR_UNKNOWN_OPTION);
    char longkey[300];
    memset(longkey, 'k', sizeof longkey);
    longkey[298] = '=';
    longkey[299] = 0;
    ck_assert_msg(vt_parse_kv_list(longkey, count_kv, &n) == VT_ERR_OPTION_VALUE,
                  "an over-long key was accepted");
    long long x;
    ck_assert_int_eq(vt_parse_int("k", "42", 0, 100, &x), VT_OK);
    ck_assert_msg(x == 42, "parse_int 42: %lld", x);
    ck_assert_int_eq(vt_parse_int("k", "-3", -5, 5, &x), VT_OK);
    const char *badint[] = {"", "4.5", "x", "1e3", "99999999999999999999", "7 "};
    for (size_t i = 0; i < sizeof badint / sizeof badint[0]; i++) {
        ck_assert_msg(vt_parse_int("k", badint[i], -1000000, 1000000, &x) == VT_ERR_OPTION_VALUE,
                      "parse_int accepted '%s'", badint[i]);
        ck_assert_msg(strstr(vt_last_error(), "k=") != NULL, "parse_int '%s': message '%s'",
                      badint[i], vt_last_error());
    }
    ck_assert_int_eq(vt_parse_int("k", "101", 0, 100, &x), VT_ERR_OPTION_VALUE);
    double d;
    ck_assert_int_eq(vt_parse_double("k", "2.5e-1", 0, 1, &d), VT_OK);
    ck_assert_msg(d == 0.25, "parse_double: %g", d);
    const char *baddbl[] = {"", "nan", "1,5", "abc", "1e999"};
    for (size_t i = 0; i < sizeof baddbl / sizeof baddbl[0]; i++)
        ck_assert_msg(vt_parse_double("k", baddbl[i], -1e308, 1e308, &d) == VT_ERR_OPTION_VALUE,
                      "parse_double accepted '%s'", baddbl[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_versions);
    tcase_add_test(tc, test_last_error_thread_local);
    tcase_add_test(tc, test_option_next);
    tcase_add_test(tc, test_option_info);
    tcase_add_test(tc, test_model_options);
    tcase_add_test(tc, test_rng);
    tcase_add_test(tc, test_pool);
    tcase_add_test(tc, test_parse_helpers);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("trainer_options");
    tcase_add_checked_fixture(tt, trainer_setup, trainer_teardown);
    tcase_add_test(tt, test_trainer_defaults);
    tcase_add_test(tt, test_trainer_set_each);
    tcase_add_test(tt, test_trainer_set_errors);
    tcase_add_test(tt, test_trainer_typed_errors);
    suite_add_tcase(s, tt);
    return s;
}

int main(void) { return vt_test_run(suite()); }
