/* Run folders and run control: the folder layout and naming, results.csv, results.png and
 * confusion_matrix.png (decoded and checked), save=0, early stopping, the time budget, cancel
 * from another thread and from a signal handler, and the progress values (ETA, cost, data
 * wait, best fitness, checkpoint events). */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

typedef struct {
    int batches, epochs, saved, bad_eta, bad_cost, cancel_after;
    double first_eta, last_eta, cost, wait, best, fitness[64];
    int nfit;
    char last_saved[4400];
} watch;

static int on_progress(void *user, vt_event ev, const vt_progress *p)
{
    watch *w = user;
    double v;
    if (ev == VT_EVENT_BATCH_END) {
        w->batches++;
        if (vt_progress_metric(p, VT_METRIC_ETA_SECONDS, &v) != VT_OK || !(v >= 0)) w->bad_eta++;
        else {
            if (w->batches == 1) w->first_eta = v;
            w->last_eta = v;
        }
        if (vt_progress_metric(p, VT_METRIC_COST_USD, &v) != VT_OK || !(v >= 0)) w->bad_cost++;
        else w->cost = v;
        if (vt_progress_metric(p, VT_METRIC_DATA_WAIT_SECONDS, &v) == VT_OK) w->wait = v;
        if (w->cancel_after && w->batches == w->cancel_after) return 1;
    } else if (ev == VT_EVENT_EPOCH_END) {
        w->epochs++;
        if (vt_progress_metric(p, VT_METRIC_BEST_FITNESS, &v) == VT_OK) w->best = v;
        if (vt_progress_metric(p, VT_METRIC_FITNESS, &v) == VT_OK && w->nfit < 64)
            w->fitness[w->nfit++] = v;
    } else if (ev == VT_EVENT_CHECKPOINT_SAVED) {
        w->saved++;
        const char *path = vt_progress_checkpoint_path(p);
        ck_assert_ptr_nonnull(path);
        snprintf(w->last_saved, sizeof w->last_saved, "%s", path);
        struct stat sb;
        ck_assert_msg(stat(path, &sb) == 0, "reported checkpoint %s does not exist", path);
    }
    return 0;
}

typedef struct {
    char *dir, *data;
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    watch w;
} fixture;

static void setup(fixture *f, const char *name, const char *synth, const char *const *settings)
{
    memset(f, 0, sizeof *f);
    f->dir = vt_test_tmpdir(name);
    ck_assert_ptr_nonnull(f->dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/data", f->dir);
    f->data = strdup(path);
    ck_assert_msg(vt_synth_generate(f->data, VT_TASK_CLASSIFY, synth) == VT_OK, "%s",
                  vt_last_error());
    ck_assert_int_eq(vt_dataset_open(&f->ds, VT_TASK_CLASSIFY, f->data), VT_OK);
    ck_assert_int_eq(vt_model_create(&f->m, "cls-n", vt_dataset_num_classes(f->ds), "imgsz=16"),
                     VT_OK);
    ck_assert_int_eq(vt_trainer_create(&f->t, f->m, f->ds), VT_OK);
    snprintf(path, sizeof path, "project=%s/runs", f->dir);
    ck_assert_int_eq(vt_trainer_set(f->t, path), VT_OK);
    for (const char *const *s = settings; s && *s; s++)
        ck_assert_msg(vt_trainer_set(f->t, *s) == VT_OK, "%s: %s", *s, vt_trainer_last_error(f->t));
    vt_trainer_set_progress(f->t, on_progress, &f->w);
}

static void teardown(fixture *f)
{
    vt_trainer_destroy(f->t);
    vt_model_destroy(f->m);
    vt_dataset_destroy(f->ds);
    vt_test_rmtree(f->dir);
    free(f->dir);
    free(f->data);
}

static int exists(const char *dir, const char *rel)
{
    char p[8400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return stat(p, &sb) == 0;
}

/* Decode a PNG of the run folder and check its size and that it is not blank. */
static void check_png(const char *dir, const char *rel, int w, int h)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    vt_image img;
    ck_assert_msg(vt_image_load(p, &img) == VT_OK, "%s: %s", p, vt_last_error());
    if (w) ck_assert_int_eq(img.w, w);
    if (h) ck_assert_int_eq(img.h, h);
    ck_assert_int_ge(img.w, 300);
    ck_assert_int_ge(img.h, 300);
    long white = 0, dark = 0, colour = 0, n = (long)img.w * img.h;
    for (long i = 0; i < n; i++) {
        const uint8_t *q = img.data + i * img.c;
        int r = q[0], g = img.c == 3 ? q[1] : r, b = img.c == 3 ? q[2] : r;
        white += r > 245 && g > 245 && b > 245;
        dark += r < 80 && g < 80 && b < 80;
        colour += abs(r - b) > 60;
    }
    /* a blank plot has none; the text and frame alone are ~0.16 % of a confusion matrix
     * whose cells are dark (white numbers): a model sure of one class */
    ck_assert_msg(dark > n / 1000, "%s: almost no text or axes (%ld dark pixels)", rel, dark);
    ck_assert_msg(colour > n / 1000, "%s: no coloured curves or cells (%ld)", rel, colour);
    ck_assert_msg(white < n * 99 / 100 && white > n / 10, "%s: %ld of %ld pixels white", rel,
                  white, n);
    vt_image_free(&img);
}

START_TEST(test_run_folder)
{
    fixture f;
    const char *s[] = {"epochs=3", "batch=8", "save_period=2", "price=3.6", NULL};
    setup(&f, "runfolder", "classes=3 train=10 val=5 imgsz=16 seed=3", s);
    ck_assert_str_eq(vt_trainer_run_dir(f.t), "");
    ck_assert_msg(vt_trainer_run(f.t) == VT_OK, "%s", vt_trainer_last_error(f.t));
    ck_assert_int_eq(vt_trainer_stop_reason(f.t), VT_STOP_COMPLETED);
    char want[4400];
    snprintf(want, sizeof want, "%s/runs/classify/train", f.dir);
    const char *rd = vt_trainer_run_dir(f.t);
    ck_assert_str_eq(rd, want);
    const char *files[] = {"args.yaml", "weights/last.vtm", "weights/best.vtm",
                           "weights/epoch2.vtm", "results.csv", "results.png",
                           "confusion_matrix.png", NULL};
    for (const char *const *p = files; *p; p++)
        ck_assert_msg(exists(rd, *p), "%s/%s missing", rd, *p);
    ck_assert_msg(!exists(rd, "weights/epoch1.vtm") && !exists(rd, "weights/epoch3.vtm"),
                  "save_period=2 kept other epochs");
    /* results.csv: header and one row per epoch with the right number of fields */
    char p[4400];
    snprintf(p, sizeof p, "%s/results.csv", rd);
    size_t n;
    char *csv = vt_test_read_file(p, &n);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(strncmp(csv, "epoch,train/loss,val/loss,metrics/top1,metrics/top5,lr,", 55) == 0,
                  "results.csv header: %.80s", csv);
    int lines = 0, commas = 0;
    for (size_t i = 0; i < n; i++) {
        lines += csv[i] == '\n';
        commas += csv[i] == ',';
    }
    ck_assert_int_eq(lines, 4);
    ck_assert_int_eq(commas, 4 * 8);
    ck_assert_ptr_nonnull(strstr(csv, "\n3,"));
    free(csv);
    snprintf(p, sizeof p, "%s/args.yaml", rd);
    char *args = vt_test_read_file(p, &n);
    ck_assert_ptr_nonnull(args);
    ck_assert_ptr_nonnull(strstr(args, "epochs: 3\n"));
    ck_assert_ptr_nonnull(strstr(args, "save_period: 2\n"));
    /* the values the run used (imgsz and lr0 are 0 = derived), in their shortest exact form */
    ck_assert_msg(strstr(args, "\nimgsz: 16\n") && strstr(args, "\nlr0: 0.01\n") &&
                      strstr(args, "\nmomentum: 0.9\n") && !strstr(args, "00000000"),
                  "args.yaml:\n%s", args);
    free(args);
    /* the checkpoint's run arguments: enough to resume from the file alone */
    snprintf(p, sizeof p, "%s/weights/last.vtm", rd);
    size_t need = 0;
    ck_assert_int_eq(vt_checkpoint_args(p, NULL, 0, &need), VT_OK); /* a size query */
    ck_assert(need > 100);
    char *ca = malloc(need);
    ck_assert_int_eq(vt_checkpoint_args(p, ca, need - 1, NULL), VT_ERR_BUFFER_TOO_SMALL);
    ck_assert_msg(vt_checkpoint_args(p, ca, need, &n) == VT_OK, "%s", vt_last_error());
    ck_assert_int_eq(n, need);
    ck_assert_int_eq(strlen(ca) + 1, need);
    char *real = realpath(f.data, NULL), line[4400];
    snprintf(line, sizeof line, "data=%s\ntask=classify\nmodel=cls-n\nnum_classes=3\nchannels=3\n"
             "imgsz=16\ndropout=", real);
    free(real);
    ck_assert_msg(strncmp(ca, line, strlen(line)) == 0, "vt_checkpoint_args:\n%s", ca);
    ck_assert_msg(strstr(ca, "\nepochs=3\n") && strstr(ca, "\nmomentum=0.9\n") &&
                      !strstr(ca, "\nimgsz=0") && !strstr(ca, "\nresume="),
                  "vt_checkpoint_args:\n%s", ca);
    free(ca);
    snprintf(p, sizeof p, "%s/no-such.vtm", rd);
    ck_assert_int_ne(vt_checkpoint_args(p, NULL, 0, &n), VT_OK);
    check_png(rd, "results.png", 1200, 600);
    check_png(rd, "confusion_matrix.png", 0, 0);
    /* progress: ETA falls to 0, cost = hours x price, checkpoints reported */
    ck_assert_int_eq(f.w.bad_eta, 0);
    ck_assert_int_eq(f.w.bad_cost, 0);
    ck_assert_msg(f.w.first_eta > 0 && f.w.last_eta < f.w.first_eta, "ETA %g -> %g",
                  f.w.first_eta, f.w.last_eta);
    ck_assert_msg(f.w.cost > 0 && f.w.cost < 3.6, "cost %g", f.w.cost);
    ck_assert(f.w.wait > 0);
    ck_assert_int_ge(f.w.saved, 4); /* last x3, best >= 1, epoch2 */
    double eta, best;
    ck_assert_int_eq(vt_trainer_metric(f.t, VT_METRIC_ETA_SECONDS, &eta), VT_OK);
    ck_assert(eta == 0);
    ck_assert_int_eq(vt_trainer_metric(f.t, VT_METRIC_BEST_FITNESS, &best), VT_OK);
    ck_assert(best >= 0 && best <= 1);
    /* a second run gets train2, exist_ok=1 reuses train */
    ck_assert_int_eq(vt_trainer_set(f.t, "epochs=1"), VT_OK);
    ck_assert_int_eq(vt_trainer_run(f.t), VT_OK);
    snprintf(want, sizeof want, "%s/runs/classify/train2", f.dir);
    ck_assert_str_eq(vt_trainer_run_dir(f.t), want);
    ck_assert_int_eq(vt_trainer_set(f.t, "exist_ok=1"), VT_OK);
    ck_assert_int_eq(vt_trainer_run(f.t), VT_OK);
    snprintf(want, sizeof want, "%s/runs/classify/train", f.dir);
    ck_assert_str_eq(vt_trainer_run_dir(f.t), want);
    ck_assert_int_eq(vt_trainer_set(f.t, "name=a/b"), VT_OK);
    ck_assert_int_eq(vt_trainer_run(f.t), VT_ERR_OPTION_VALUE);
    /* save=0 writes nothing */
    ck_assert_int_eq(vt_trainer_set(f.t, "name=nothing"), VT_OK);
    ck_assert_int_eq(vt_trainer_set(f.t, "save=0"), VT_OK);
    ck_assert_int_eq(vt_trainer_run(f.t), VT_OK);
    ck_assert_str_eq(vt_trainer_run_dir(f.t), "");
    snprintf(p, sizeof p, "%s/runs/classify", f.dir);
    ck_assert(!exists(p, "nothing"));
    /* option checks */
    ck_assert_int_eq(vt_trainer_set(f.t, "save_period=0"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_set(f.t, "patience=0"), VT_ERR_OPTION_VALUE);
    ck_assert_int_eq(vt_trainer_set(f.t, "time=-1"), VT_ERR_OPTION_VALUE);
    teardown(&f);
}
END_TEST

START_TEST(test_early_stopping)
{
    fixture f;
    /* a learning rate too small to change anything: the fitness cannot keep improving */
    const char *s[] = {"epochs=30", "batch=8", "lr0=1e-8", "warmup_epochs=0", "patience=3",
                       "plots=0", NULL};
    setup(&f, "patience", "classes=3 train=8 val=4 imgsz=16 seed=4", s);
    ck_assert_msg(vt_trainer_run(f.t) == VT_OK, "%s", vt_trainer_last_error(f.t));
    /* the stop epoch follows from the fitness sequence */
    int best_ep = 0, expect = 30;
    double best = -INFINITY;
    for (int e = 0; e < f.w.nfit; e++) {
        if (f.w.fitness[e] > best) {
            best = f.w.fitness[e];
            best_ep = e + 1;
        }
        if (e + 1 - best_ep >= 3 && e + 1 < 30) {
            expect = e + 1;
            break;
        }
    }
    ck_assert_int_eq(f.w.epochs, expect);
    ck_assert_msg(expect < 30, "the fitness kept improving with lr0=1e-8");
    ck_assert_int_eq(vt_trainer_stop_reason(f.t), VT_STOP_EARLY);
    teardown(&f);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

START_TEST(test_time_budget)
{
    fixture f;
    /* 1.5 seconds for a run that needs much longer */
    const char *s[] = {"epochs=1000", "batch=8", "plots=0", "time=0.000416667", NULL};
    setup(&f, "budget", "classes=3 train=16 val=4 imgsz=16 seed=4", s);
    double t0 = now_s();
    ck_assert_msg(vt_trainer_run(f.t) == VT_OK, "%s", vt_trainer_last_error(f.t));
    double took = now_s() - t0;
    ck_assert_int_eq(vt_trainer_stop_reason(f.t), VT_STOP_TIME);
    ck_assert_msg(took < 1.5 + 0.5, "the run took %.2f s for a budget of 1.5 s", took);
    ck_assert_msg(took > 0.7, "the run stopped after %.2f s of a 1.5 s budget", took);
    ck_assert(f.w.batches > 0);
    ck_assert(exists(vt_trainer_run_dir(f.t), "weights/last.vtm"));
    /* the saved position continues: resume and finish at the next epoch end */
    char rs[4500];
    snprintf(rs, sizeof rs, "resume=%s", f.w.last_saved);
    vt_model *m2;
    vt_trainer *t2;
    ck_assert_int_eq(vt_model_create(&m2, "cls-n", 3, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t2, m2, f.ds), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t2, rs), VT_OK);
    char ep[64];
    snprintf(ep, sizeof ep, "epochs=%d", f.w.epochs + 1);
    ck_assert_int_eq(vt_trainer_set(t2, ep), VT_OK);
    ck_assert_int_eq(vt_trainer_set(t2, "time=0"), VT_OK);
    ck_assert_msg(vt_trainer_run(t2) == VT_OK, "%s", vt_trainer_last_error(t2));
    ck_assert_int_eq(vt_trainer_stop_reason(t2), VT_STOP_COMPLETED);
    ck_assert_str_eq(vt_trainer_run_dir(t2), vt_trainer_run_dir(f.t));
    vt_trainer_destroy(t2);
    vt_model_destroy(m2);
    teardown(&f);
}
END_TEST

typedef struct {
    vt_trainer *t;
    vt_status st;
} run_arg;

static void *run_thread(void *p)
{
    run_arg *a = p;
    a->st = vt_trainer_run(a->t);
    return NULL;
}

static vt_trainer *volatile g_trainer;
static void on_alarm(int sig)
{
    (void)sig;
    vt_trainer_cancel(g_trainer);
}

START_TEST(test_cancel)
{
    fixture f;
    const char *s[] = {"epochs=1000", "batch=8", "plots=0", NULL};
    setup(&f, "cancel", "classes=3 train=16 val=4 imgsz=16 seed=4", s);
    /* from another thread */
    run_arg a = {f.t, VT_OK};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, run_thread, &a), 0);
    usleep(600 * 1000);
    vt_trainer_cancel(f.t);
    pthread_join(th, NULL);
    ck_assert_int_eq(a.st, VT_ERR_CANCELLED);
    ck_assert_int_eq(vt_trainer_stop_reason(f.t), VT_STOP_CANCELLED);
    ck_assert_msg(f.w.epochs < 1000 && f.w.batches > 0, "%d epochs", f.w.epochs);
    ck_assert(exists(vt_trainer_run_dir(f.t), "weights/last.vtm"));
    ck_assert_ptr_nonnull(strstr(vt_trainer_last_error(f.t), "cancelled"));
    /* from a signal handler */
    g_trainer = f.t;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 500 * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    ck_assert_int_eq(vt_trainer_run(f.t), VT_ERR_CANCELLED);
    ck_assert_int_eq(vt_trainer_stop_reason(f.t), VT_STOP_CANCELLED);
    /* from a callback */
    memset(&f.w, 0, sizeof f.w);
    f.w.cancel_after = 3;
    ck_assert_int_eq(vt_trainer_run(f.t), VT_ERR_CANCELLED);
    ck_assert_int_eq(f.w.batches, 3);
    ck_assert_int_eq(f.w.saved, 0); /* no callback after the cancel, also not for the save */
    char lastp[4400];
    snprintf(lastp, sizeof lastp, "%s/weights/last.vtm", vt_trainer_run_dir(f.t));
    vt_model *m3;
    ck_assert_int_eq(vt_model_load(&m3, lastp), VT_OK);
    vt_model_destroy(m3);
    teardown(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("runs");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_run_folder);
    tcase_add_test(tc, test_early_stopping);
    tcase_add_test(tc, test_time_budget);
    tcase_add_test(tc, test_cancel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
