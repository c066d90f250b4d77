/* Training checkpoints: exact resume (loss sequence and weights bit for bit on the CPU), clear
 * errors for truncated / corrupted / foreign / newer / wrong files, extending a finished run,
 * and fault injection: a training process SIGKILLed at random moments and resumed. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "core/checkpoint.h"
#include "visiontrain/visiontrain.h"

#define MAXLOSS 4096
#define TAG_PARM VT_TAG('P', 'A', 'R', 'M')
#define TAG_BUFS VT_TAG('B', 'U', 'F', 'S')
#define TAG_OPTM VT_TAG('O', 'P', 'T', 'M')
#define TAG_OPTV VT_TAG('O', 'P', 'T', 'V')
#define TAG_TPRM VT_TAG('T', 'P', 'R', 'M')

typedef struct {
    float loss[MAXLOSS];
    int n;
    int64_t cancel_at;  /* cancel (return 1) at this iteration's batch end; 0 = never */
    int cancel_epoch;   /* cancel at this epoch's end; 0 = never */
    int epochs_seen, saved;
} trace;

static int record(void *user, vt_event ev, const vt_progress *p)
{
    trace *t = user;
    double v;
    if (ev == VT_EVENT_BATCH_END) {
        if (t->n < MAXLOSS && vt_progress_metric(p, VT_METRIC_LOSS, &v) == VT_OK)
            t->loss[t->n++] = (float)v;
        if (t->cancel_at && vt_progress_iteration(p) == t->cancel_at) return 1;
    }
    if (ev == VT_EVENT_CHECKPOINT_SAVED) {
        ck_assert_ptr_nonnull(vt_progress_checkpoint_path(p));
        t->saved++;
    }
    if (ev == VT_EVENT_EPOCH_END) {
        t->epochs_seen++;
        if (t->cancel_epoch && vt_progress_epoch(p) == t->cancel_epoch) return 1;
    }
    return 0;
}

static char *make_dataset(const char *name, const char *opts, char **dir_out)
{
    char *dir = vt_test_tmpdir(name);
    ck_assert_ptr_nonnull(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/data", dir);
    ck_assert_msg(vt_synth_generate(path, VT_TASK_CLASSIFY, opts) == VT_OK, "synth: %s",
                  vt_last_error());
    *dir_out = dir;
    return strdup(path);
}

/* One vt_trainer_run with settings (and up to two more); appends its losses to tr. */
static vt_status train_run(const char *data, const char *const *settings, const char *extra1,
                           const char *extra2, trace *tr, vt_stop_reason *reason)
{
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_CLASSIFY, data), VT_OK);
    ck_assert_int_eq(vt_model_create(&m, "cls-n", vt_dataset_num_classes(ds), "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    for (const char *const *s = settings; *s; s++)
        ck_assert_msg(vt_trainer_set(t, *s) == VT_OK, "%s: %s", *s, vt_trainer_last_error(t));
    if (extra1) ck_assert_msg(vt_trainer_set(t, extra1) == VT_OK, "%s", vt_trainer_last_error(t));
    if (extra2) ck_assert_msg(vt_trainer_set(t, extra2) == VT_OK, "%s", vt_trainer_last_error(t));
    vt_trainer_set_progress(t, record, tr);
    vt_status st = vt_trainer_run(t);
    if (reason) *reason = vt_trainer_stop_reason(t);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return st;
}

static void *section(const char *path, uint32_t tag, size_t *n)
{
    vt_ckpt *c;
    ck_assert_msg(vt_ckpt_open(&c, path) == VT_OK, "%s", vt_last_error());
    void *d;
    ck_assert_msg(vt_ckpt_get(c, tag, &d, n) == VT_OK, "%s", vt_last_error());
    vt_ckpt_close(c);
    return d;
}

static void assert_same_section(const char *a, const char *b, uint32_t tag, const char *what)
{
    size_t na, nb;
    void *da = section(a, tag, &na), *db = section(b, tag, &nb);
    ck_assert_msg(na == nb && memcmp(da, db, na) == 0, "%s differs between %s and %s", what, a, b);
    free(da);
    free(db);
}

/* Cancel mid-epoch (and at an epoch end), resume, and compare with an uninterrupted run. */
static void check_resume_exact(const char *optimizer, int ema)
{
    char *dir;
    char *data = make_dataset("ckresume", "classes=3 train=12 val=4 imgsz=16 seed=5", &dir);
    char proj[4200], opt[64], emas[16], resume[4400], last_a[4300], last_b[4300];
    snprintf(proj, sizeof proj, "project=%s/runs", dir);
    snprintf(opt, sizeof opt, "optimizer=%s", optimizer);
    snprintf(emas, sizeof emas, "ema=%d", ema);
    const char *s[] = {"epochs=4", "batch=8", "seed=7", "workers=1", "plots=0", proj, opt,
                       emas, NULL};
    static trace a, b;
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(train_run(data, s, "name=a", NULL, &a, NULL), VT_OK);
    ck_assert_int_eq(a.n, 20); /* 36 images / 8 -> 5 batches (the last of 4) x 4 epochs */
    ck_assert_int_eq(a.epochs_seen, 4);
    snprintf(last_a, sizeof last_a, "%s/runs/classify/a/weights/last.vtm", dir);
    snprintf(last_b, sizeof last_b, "%s/runs/classify/b/weights/last.vtm", dir);
    snprintf(resume, sizeof resume, "resume=%s", last_b);

    /* b: cancelled at iteration 7 (epoch 2, batch 2), resumed; cancelled at the end of epoch
     * 3, resumed to the end. */
    memset(&b, 0, sizeof b);
    b.cancel_at = 7;
    vt_stop_reason why;
    ck_assert_int_eq(train_run(data, s, "name=b", NULL, &b, &why), VT_ERR_CANCELLED);
    ck_assert_int_eq(why, VT_STOP_CANCELLED);
    ck_assert_int_eq(b.n, 7);
    b.cancel_at = 0;
    b.cancel_epoch = 3;
    ck_assert_int_eq(train_run(data, s, "name=b", resume, &b, &why), VT_ERR_CANCELLED);
    ck_assert_int_eq(b.n, 15);
    b.cancel_epoch = 0;
    ck_assert_int_eq(train_run(data, s, "name=b", resume, &b, &why), VT_OK);
    ck_assert_int_eq(why, VT_STOP_COMPLETED);
    ck_assert_int_eq(b.n, a.n);
    for (int i = 0; i < a.n; i++)
        ck_assert_msg(memcmp(&a.loss[i], &b.loss[i], sizeof(float)) == 0,
                      "%s ema=%d: loss %d after resuming is %.9g, uninterrupted %.9g", optimizer,
                      ema, i, (double)b.loss[i], (double)a.loss[i]);
    assert_same_section(last_a, last_b, TAG_PARM, "weights");
    assert_same_section(last_a, last_b, TAG_BUFS, "batch-norm statistics");
    assert_same_section(last_a, last_b, TAG_OPTM, "optimizer moments");
    if (strcmp(optimizer, "adamw") == 0)
        assert_same_section(last_a, last_b, TAG_OPTV, "second moments");
    if (ema) assert_same_section(last_a, last_b, TAG_TPRM, "training weights (EMA run)");
    /* results.csv continued: 4 rows plus the header */
    char csv[4400];
    snprintf(csv, sizeof csv, "%s/runs/classify/b/results.csv", dir);
    size_t n;
    char *txt = vt_test_read_file(csv, &n);
    ck_assert_ptr_nonnull(txt);
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += txt[i] == '\n';
    ck_assert_int_eq(lines, 5);
    free(txt);

    /* Extending the finished run: epochs=5 trains one more epoch (5 batches). */
    static trace c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(train_run(data, s, resume, "epochs=5", &c, &why), VT_OK);
    ck_assert_int_eq(c.n, 5);
    ck_assert_int_eq(c.epochs_seen, 1);
    /* and resuming a finished run without more epochs does nothing */
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(train_run(data, s, resume, NULL, &c, &why), VT_OK);
    ck_assert_int_eq(c.n, 0);
    ck_assert_int_eq(why, VT_STOP_COMPLETED);
    vt_test_rmtree(dir);
    free(dir);
    free(data);
}

START_TEST(test_resume_exact_sgd) { check_resume_exact("sgd", 0); }
END_TEST

START_TEST(test_resume_exact_adamw_ema) { check_resume_exact("adamw", 1); }
END_TEST

/* Expect a load failure with a message containing `what`. */
static void expect_bad(const char *path, const char *what)
{
    vt_model *m = NULL;
    vt_status st = vt_model_load(&m, path);
    ck_assert_msg(st == VT_ERR_CHECKPOINT, "%s (%s): status %d, expected VT_ERR_CHECKPOINT",
                  path, what, st);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(vt_last_error(), what) != NULL, "message '%s' lacks '%s'",
                  vt_last_error(), what);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), path));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The one reader of the text sections' key=value lines. */
START_TEST(test_ckpt_kv)
{
    static const char text[] = "arch=cnn-small\nimgsz=32\nimg=1\nempty=\nimgsz=64\nlast=z";
    size_t n = sizeof text - 1;
    char buf[8];
    ck_assert_str_eq(vt_ckpt_kv(text, n, "arch", buf, sizeof buf), "cnn-sma"); /* cut to cap-1 */
    ck_assert_str_eq(vt_ckpt_kv(text, n, "imgsz", buf, sizeof buf), "32");     /* the first */
    ck_assert_str_eq(vt_ckpt_kv(text, n, "img", buf, sizeof buf), "1");        /* whole keys */
    ck_assert_str_eq(vt_ckpt_kv(text, n, "empty", buf, sizeof buf), "");
    ck_assert_str_eq(vt_ckpt_kv(text, n, "last", buf, sizeof buf), "z");       /* no newline */
    ck_assert_ptr_null(vt_ckpt_kv(text, n, "ar", buf, sizeof buf));
    ck_assert_ptr_null(vt_ckpt_kv(text, n, "missing", buf, sizeof buf));
    ck_assert_ptr_null(vt_ckpt_kv(text, 10, "imgsz", buf, sizeof buf)); /* only n bytes */
    ck_assert_ptr_null(vt_ckpt_kv(text, n, "arch", buf, 0));
}
END_TEST

START_TEST(test_corrupt_checkpoints)
{
    char *dir;
    char *data = make_dataset("ckcorrupt", "classes=3 train=8 val=3 imgsz=16 seed=2", &dir);
    char proj[4200];
    snprintf(proj, sizeof proj, "project=%s/runs", dir);
    const char *s[] = {"epochs=1", "batch=8", "plots=0", "optimizer=adamw", "ema=1", proj, NULL};
    static trace tr;
    memset(&tr, 0, sizeof tr);
    ck_assert_int_eq(train_run(data, s, NULL, NULL, &tr, NULL), VT_OK);
    char good[4300], bad[4300], resume[4400];
    snprintf(good, sizeof good, "%s/runs/classify/train/weights/last.vtm", dir);
    snprintf(bad, sizeof bad, "%s/bad.vtm", dir);
    snprintf(resume, sizeof resume, "resume=%s", bad);
    size_t n;
    unsigned char *file = vt_test_read_file(good, &n);
    ck_assert_ptr_nonnull(file);
    vt_model *m;
    ck_assert_int_eq(vt_model_load(&m, good), VT_OK);
    vt_model_destroy(m);

    /* truncated at several points: header, section headers, data, trailer */
    size_t cuts[] = {0, 5, 12, 20, 40, n / 4, n / 2, n - 100, n - 5, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        ck_assert_int_eq(vt_test_write_file(bad, file, cuts[i]), 0);
        expect_bad(bad, cuts[i] < 8 ? "not a libvisiontrain checkpoint" : "truncated");
        /* resuming from it fails the same way, and the trainer stays usable */
        static trace t2;
        memset(&t2, 0, sizeof t2);
        ck_assert_int_eq(train_run(data, s, resume, "save=0", &t2, NULL), VT_ERR_CHECKPOINT);
        ck_assert_int_eq(t2.n, 0);
    }
    /* one flipped byte in each section's data, and in each section header's CRC field */
    unsigned char *copy = malloc(n);
    size_t off = 16;
    int sections = 0;
    uint32_t nsec = get32(file + 12);
    for (uint32_t k = 0; k < nsec; k++) {
        uint64_t stored = get32(file + off + 16) | (uint64_t)get32(file + off + 20) << 32;
        size_t data_at = off + 28;
        if (stored > 0) {
            memcpy(copy, file, n);
            copy[data_at + stored / 2] ^= 0x10;
            ck_assert_int_eq(vt_test_write_file(bad, copy, n), 0);
            expect_bad(bad, "corrupt checkpoint");
        }
        memcpy(copy, file, n);
        copy[off + 24] ^= 0x01; /* the section's CRC */
        ck_assert_int_eq(vt_test_write_file(bad, copy, n), 0);
        expect_bad(bad, "corrupt");
        off = data_at + stored;
        sections++;
    }
    ck_assert_int_ge(sections, 9); /* META NAME PARM BUFS TRNR ARGS OPTM OPTV TPRM TBUF HIST */
    ck_assert_uint_eq(off + 4, n);
    /* foreign file */
    ck_assert_int_eq(vt_test_write_file(bad, "\x89PNG\r\n\x1a\n0000000000000000000000", 30), 0);
    expect_bad(bad, "not a libvisiontrain checkpoint");
    /* newer format version */
    memcpy(copy, file, n);
    copy[8] = 99;
    ck_assert_int_eq(vt_test_write_file(bad, copy, n), 0);
    expect_bad(bad, "version 99");
    /* a model file (vt_model_save) is not a training checkpoint */
    ck_assert_int_eq(vt_model_load(&m, good), VT_OK);
    ck_assert_int_eq(vt_model_save(m, bad), VT_OK);
    vt_model_destroy(m);
    static trace t3;
    memset(&t3, 0, sizeof t3);
    ck_assert_int_eq(train_run(data, s, resume, "save=0", &t3, NULL), VT_ERR_CHECKPOINT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "not a training checkpoint"));
    /* a checkpoint of another dataset */
    char other[4200];
    snprintf(other, sizeof other, "%s/other", dir);
    ck_assert_int_eq(vt_synth_generate(other, VT_TASK_CLASSIFY,
                                       "classes=3 train=9 val=3 imgsz=16 seed=2"), VT_OK);
    char resume_good[4400];
    snprintf(resume_good, sizeof resume_good, "resume=%s", good);
    ck_assert_int_eq(train_run(other, s, resume_good, "save=0", &t3, NULL), VT_ERR_DATASET);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "not the one the checkpoint was trained on"));
    /* a missing file */
    ck_assert_int_eq(train_run(data, s, "resume=/nonexistent/last.vtm", "save=0", &t3, NULL),
                     VT_ERR_NOT_FOUND);
    free(copy);
    free(file);
    vt_test_rmtree(dir);
    free(dir);
    free(data);
}
END_TEST

/* ---- fault injection ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pid_t spawn(const char *worker, const char *data, const char *proj, const char *name)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl(worker, worker, data, proj, name, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Every *.vtm file of a run's weights folder loads completely. */
static int check_all_load(const char *weights)
{
    DIR *d = opendir(weights);
    if (!d) return 0;
    struct dirent *e;
    int count = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 4, ".vtm") != 0) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", weights, e->d_name);
        vt_model *m;
        ck_assert_msg(vt_model_load(&m, p) == VT_OK, "after a kill, %s does not load: %s", p,
                      vt_last_error());
        vt_model_destroy(m);
        count++;
    }
    closedir(d);
    return count;
}

START_TEST(test_fault_injection)
{
    const char *worker = getenv("VT_CKPT_WORKER");
    ck_assert_msg(worker && *worker, "VT_CKPT_WORKER is not set (run through meson test)");
    char *dir;
    char *data = make_dataset("ckfault", "classes=3 train=16 val=6 imgsz=16 seed=5", &dir);
    char proj[4200];
    snprintf(proj, sizeof proj, "%s/runs", dir);
    /* the uninterrupted reference run */
    double t0 = now_s();
    pid_t pid = spawn(worker, data, proj, "ref");
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reference run failed");
    double full = now_s() - t0;
    /* the killed run */
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    const char *fixed = getenv("VT_FAULT_SEED");
    if (fixed) seed = (unsigned)atoi(fixed);
    srand(seed);
    char weights[4400];
    snprintf(weights, sizeof weights, "%s/classify/killed/weights", proj);
    int kills = 0, starts = 0, found = 0, restarts = 0;
    /* Mostly kills after start-up, so that each start makes some progress (about an epoch);
     * one in five at any moment of the start-up. */
    double span = full / 8.0;
    for (;;) {
        pid = spawn(worker, data, proj, "killed");
        starts++;
        if (kills < 12) {
            double u = rand() / (double)RAND_MAX;
            double delay = rand() % 5 == 0 ? span * u : span * (0.5 + u);
            struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
            nanosleep(&ts, NULL);
            kill(pid, SIGKILL);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
            kills++;
            found += check_all_load(weights);
            continue;
        }
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "worker failed (seed %u, after %d kills)", seed, kills);
        if (kills >= 10) break;
        /* Finished before 10 kills: the kills came too late for the worker's speed here (a
         * loaded machine, a sanitizer build).  Start the killed run again with shorter delays. */
        ck_assert_msg(++restarts <= 4, "the worker finished after only %d kills, %d restarts "
                      "(seed %u)", kills, restarts - 1, seed);
        char run[4400];
        snprintf(run, sizeof run, "%s/classify/killed", proj);
        vt_test_rmtree(run);
        span /= 2;
        kills = 0;
    }
    ck_assert_int_ge(kills, 10);
    check_all_load(weights);
    fprintf(stderr, "fault injection: seed %u, %d kills, %d starts\n", seed, kills, starts);
    char ref[4400], got[4500];
    snprintf(ref, sizeof ref, "%s/classify/ref/weights/last.vtm", proj);
    snprintf(got, sizeof got, "%s/last.vtm", weights);
    assert_same_section(ref, got, TAG_PARM, "final weights after kills");
    assert_same_section(ref, got, TAG_BUFS, "final batch-norm statistics after kills");
    assert_same_section(ref, got, TAG_OPTM, "final optimizer state after kills");
    fprintf(stderr, "fault injection: %d kills, %d starts, %d checkpoint files checked after "
            "kills, reference run %.2f s, seed %u\n", kills, starts, found, full, seed);
    vt_test_rmtree(dir);
    free(dir);
    free(data);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_corrupt_checkpoints);
    tcase_add_test(tc, test_ckpt_kv);
    tcase_add_test(tc, test_resume_exact_sgd);
    tcase_add_test(tc, test_resume_exact_adamw_ema);
    tcase_add_test(tc, test_fault_injection);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
