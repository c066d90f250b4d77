/* vt train and vt demo. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_cli.h"

/* ---- train / demo ------------------------------------------------------------------------ */

#define TRAIN_TOOL_KEYS \
    "data, model, save, task, channels, dropout, progress, quiet, policy, min_size, decode"

/* Check the trainer's keys and values before any slow work (opening a dataset, a model), so
 * usage errors come first: on a throw-away trainer of a tiny model. */
int check_trainer_keys(args *a, const char *tool_keys)
{
    vt_model *probe = NULL;
    vt_trainer *t = NULL;
    if (vt_model_create(&probe, "cnn-small", 2, "imgsz=8") ||
        vt_trainer_create(&t, probe, NULL)) {
        vt_model_destroy(probe);
        return 0; /* cannot check here: the real trainer will */
    }
    /* every bad key and value, then one exit */
    int rc = 0, bad = 0, unknown = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        vt_status st = vt_trainer_set(t, a->kv[i].arg);
        if (st) {
            int r = fail(a->cmd, st, vt_trainer_last_error(t));
            if (!rc) rc = r;
            bad++;
            unknown |= st == VT_ERR_UNKNOWN_OPTION;
        }
    }
    if (unknown) fprintf(stderr, "vt %s also takes: %s\n", a->cmd, tool_keys);
    if (bad > 1) fprintf(stderr, "vt %s: %d bad keys or values\n", a->cmd, bad);
    vt_trainer_destroy(t);
    vt_model_destroy(probe);
    return rc;
}

/* save=PATH must be writable before hours of training, not after: create a probe file next to
 * it (access() would say yes to root on a read-only folder). */
static int check_writable(const char *cmd, const char *path)
{
    if (is_dir(path)) {
        fprintf(stderr, "vt %s: save=%s is a folder; give a file name (e.g. %s/model.vtm)\n", cmd,
                path, path);
        return EXIT_USAGE;
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s.probe.%ld", path, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        fprintf(stderr, "vt %s: save=%s: cannot write there: %s\n", cmd, path, strerror(errno));
        return EXIT_DATA;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* Trainer keys a task's training ignores (the library says which: vt_task_option_applies,
 * e.g. mosaic= for classification, erasing= for detection) would be accepted and do nothing:
 * they are refused. */
static int refuse_other_task_keys(const char *cmd, const args *a, vt_task task)
{
    const char *title = vt_task_title(task);
    for (int i = 0; i < a->n; i++) {
        char key[64];
        size_t n = a->kv[i].klen < sizeof key ? a->kv[i].klen : sizeof key - 1;
        memcpy(key, a->kv[i].arg, n);
        key[n] = 0;
        if (vt_task_option_applies(task, key) == 0) {
            fprintf(stderr, "vt %s: %s= does not apply to %s training (it is ignored there); "
                    "drop it\n", cmd, key, title ? title : "this");
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The run arguments of a checkpoint (vt_checkpoint_args), for resume=PATH alone. */
typedef struct {
    char *text;
    const char *data, *task, *model, *channels, *imgsz, *dropout, *epochs, *batch;
} ckpt_args;

static const char *ck_get(char *text, const char *key)
{
    size_t kl = strlen(key);
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        if (!strncmp(p, key, kl) && p[kl] == '=') return p + kl + 1;
        if (!nl) break;
        p = nl + 1;
    }
    return NULL;
}

static int read_ckpt_args(const char *cmd, const char *path, ckpt_args *ca)
{
    memset(ca, 0, sizeof *ca);
    size_t n = 0;
    vt_status st = vt_checkpoint_args(path, NULL, 0, &n); /* the size */
    if (st) return fail(cmd, st, NULL);
    if (!(ca->text = malloc(n))) return fail(cmd, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if ((st = vt_checkpoint_args(path, ca->text, n, &n))) return fail(cmd, st, NULL);
    ca->data = ck_get(ca->text, "data");
    ca->task = ck_get(ca->text, "task");
    ca->model = ck_get(ca->text, "model");
    ca->channels = ck_get(ca->text, "channels");
    ca->imgsz = ck_get(ca->text, "imgsz");
    ca->dropout = ck_get(ca->text, "dropout");
    ca->epochs = ck_get(ca->text, "epochs");
    ca->batch = ck_get(ca->text, "batch");
    /* cut the values at their line ends (after every lookup: they share the text) */
    for (char *p = ca->text; (p = strchr(p, '\n'));) *p++ = 0;
    return 0;
}

/* A model key given next to resume=: only the checkpoint's value is allowed (the checkpoint
 * fixes the model; a different one cannot continue it). */
static int same_as_ckpt(const char *cmd, const char *key, const char *given, const char *ck,
                        const char *resume, int numeric)
{
    if (!given || !ck) return 0;
    int same = numeric ? strtod(given, NULL) == strtod(ck, NULL) : !strcmp(given, ck);
    if (same) return 0;
    fprintf(stderr, "vt %s: %s=%s, but %s was trained with %s=%s; resume= continues that run "
            "(to start a new run from its weights: model=%s without resume=)\n",
            cmd, key, given, resume, key, ck, resume);
    return EXIT_USAGE;
}

/* The progress callback of vt train: once the run folder exists (it is made inside
 * vt_trainer_run), the dataset's problems are written there and the summary's last line
 * says where. */
typedef struct {
    progress_state ps;
    vt_trainer *t;
    const vt_dataset *ds;
    int listed; /* problems.txt written, or nothing to write */
} train_cb_state;

static void list_problems(train_cb_state *s)
{
    const char *dir = vt_trainer_run_dir(s->t);
    if (s->listed || !dir || !*dir) return;
    s->listed = 1;
    char path[4200];
    int np = vt_dataset_num_problems(s->ds);
    fflush(stdout); /* the summary's last line: stderr, with the problems it counts */
    if (write_problems(s->ds, dir, path, sizeof path))
        fprintf(stderr, "vt train: cannot write %s\n", path);
    else if (!s->ps.quiet)
        fprintf(stderr, "  all %d problem%s: %s\n", np, np == 1 ? "" : "s", path);
}

static int train_progress(void *user, vt_event ev, const vt_progress *p)
{
    train_cb_state *s = user;
    list_problems(s);
    return progress_cb(&s->ps, ev, p);
}

/* The "final validation ..." line of a run, once its metrics are there: the task's
 * (vt_task_metrics) with their labels, e.g. "mAP50 0.9000  mAP50-95 0.7000" after P and R;
 * *fitness gets the task's fitness (vt_task_fitness) then. */
static void final_validation(vt_trainer *t, vt_task task, int quiet, double *fitness)
{
    double v[16];
    vt_metric ms[16];
    int n = vt_task_metrics(task, ms, 16), have = n > 0 && n <= 16;
    for (int i = 0; have && i < n; i++) have = vt_trainer_metric(t, ms[i], &v[i]) == VT_OK;
    if (!have) return;
    for (int i = 0; !quiet && i < n; i++)
        printf("%s %s %.4f", i ? " " : "final validation", metric_words(ms[i]), v[i]);
    if (!quiet) printf("\n");
    if (fitness) vt_trainer_metric(t, vt_task_fitness(task), fitness);
}

/* fitness_out: the final validation's fitness (top-1, mAP50-95, mIoU, ...: vt_task_fitness). */
static int train(args *a, double *fitness_out)
{
    const char *cmd = a->cmd;
    const char *data = take(a, "data"), *arch = take(a, "model"), *save = take(a, "save");
    const char *task = take(a, "task"), *channels = take(a, "channels");
    const char *dropout = take(a, "dropout"), *prog = take(a, "progress");
    const char *quiet_s = take(a, "quiet");
    const char *imgsz = NULL, *resume = NULL;
    for (int i = 0; i < a->n; i++) {
        if (key_is(&a->kv[i], "imgsz")) imgsz = a->kv[i].val; /* for the model and the trainer */
        if (key_is(&a->kv[i], "resume")) resume = a->kv[i].val; /* the trainer's, read here too */
    }
    const char *model_imgsz = imgsz;
    int mode, quiet = 0;
    data_info di;
    if (progress_mode(cmd, prog, &mode)) return EXIT_USAGE;
    if (flag_value(cmd, "quiet", quiet_s, &quiet)) return EXIT_USAGE;
    if (quiet && prog && mode != PROG_OFF) {
        fprintf(stderr, "vt %s: quiet=1 prints nothing but errors; it cannot go with "
                "progress=%s (drop one)\n", cmd, prog);
        return EXIT_USAGE;
    }
    if (quiet) mode = PROG_OFF;
    if (take_data_keys(cmd, a, &di)) return EXIT_USAGE;
    ckpt_args ca;
    memset(&ca, 0, sizeof ca);
    if (resume && *resume) {
        /* resume=PATH alone: the checkpoint says which data, task and model; trainer options
         * given here override the saved ones in the library (e.g. epochs= extends the run) */
        int rc0 = read_ckpt_args(cmd, resume, &ca);
        if (!rc0 && arch && names_file(arch)) {
            fprintf(stderr, "vt %s: model=%s and resume=%s: the model comes from the checkpoint; "
                    "drop model= (or drop resume= to fine-tune from %s)\n", cmd, arch, resume,
                    arch);
            rc0 = EXIT_USAGE;
        }
        if (!rc0) rc0 = same_as_ckpt(cmd, "model", arch, ca.model, resume, 0);
        if (!rc0) rc0 = same_as_ckpt(cmd, "task", task, ca.task, resume, 0);
        if (!rc0) rc0 = same_as_ckpt(cmd, "channels", channels, ca.channels, resume, 1);
        if (!rc0) rc0 = same_as_ckpt(cmd, "dropout", dropout, ca.dropout, resume, 1);
        if (!rc0) rc0 = same_as_ckpt(cmd, "imgsz", imgsz, ca.imgsz, resume, 1);
        if (rc0) {
            free(ca.text);
            return rc0;
        }
        /* data= may name the same dataset at a new place: the library checks its file list */
        if (!data && ca.data && *ca.data) data = ca.data;
        if (!data) {
            fprintf(stderr, "vt %s: %s does not record its dataset (an older checkpoint): give "
                    "data=DIR\n", cmd, resume);
            free(ca.text);
            return EXIT_USAGE;
        }
        task = ca.task;
        arch = ca.model;
        channels = ca.channels;
        dropout = ca.dropout;
        model_imgsz = ca.imgsz;
    }
    if (!data) {
        fprintf(stderr, "vt %s: data=DIR is required (see 'vt help %s')\n", cmd, cmd);
        return EXIT_USAGE;
    }
    vt_task tk;
    if (task_value(cmd, task, data, &tk)) return EXIT_USAGE;
    if (!task) tk = model_task_or(arch, tk);
    if (!arch) arch = vt_task_default_model(tk);
    if (!arch) {
        fprintf(stderr, "vt %s: no default model for task %d: give model=\n", cmd, (int)tk);
        return EXIT_USAGE;
    }
    /* save=PATH: a copy of the best weights; without it the weights are only in the run folder */
    int write_model = save != NULL;
    if (save && (!strcmp(save, "0") || !strcmp(save, "1"))) {
        /* save=0|1 is the trainer's run-folder switch: pass it on; save=0 writes nothing */
        for (int i = 0; i < a->n; i++)
            if (key_is(&a->kv[i], "save")) a->kv[i].tool = 0;
        write_model = 0;
        save = NULL;
    }
    int wrc;
    if (write_model && (wrc = check_writable(cmd, save))) {
        free(ca.text);
        return wrc;
    }

    vt_dataset *ds = NULL;
    vt_model *m = NULL;
    vt_trainer *t = NULL;
    int rc = 0;
    vt_status st;
    if ((rc = check_trainer_keys(a, TRAIN_TOOL_KEYS))) goto out;
    if (names_file(arch)) {
        if (channels || dropout) {
            fprintf(stderr, "vt %s: channels= and dropout= apply to a new model, not to %s\n",
                    cmd, arch);
            return EXIT_USAGE;
        }
        if ((st = vt_model_load(&m, arch))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
        if (!task) tk = vt_model_task(m);
    }
    if ((rc = open_data(cmd, &di, tk, data, &ds))) goto out;
    if (!m) {
        char mopts[256];
        snprintf(mopts, sizeof mopts, "%s%s %s%s %s%s", model_imgsz ? "imgsz=" : "",
                 model_imgsz ? model_imgsz : "",
                 channels ? "channels=" : "", channels ? channels : "", dropout ? "dropout=" : "",
                 dropout ? dropout : "");
        if ((st = vt_model_create(&m, arch, vt_dataset_num_classes(ds), mopts))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
    }
    if ((rc = refuse_other_task_keys(cmd, a, vt_model_task(m)))) goto out;
    if ((rc = make_trainer(cmd, m, ds, a, TRAIN_TOOL_KEYS, &t))) goto out;
    train_cb_state cs;
    memset(&cs, 0, sizeof cs);
    cs.t = t;
    cs.ds = ds;
    cs.listed = vt_dataset_num_problems(ds) == 0;
    cs.ps.mode = mode;
    cs.ps.quiet = quiet;
    cs.ps.task = vt_model_task(m);
    cs.ps.trainer = t;
    /* notes too (transfer, early stop); quiet=1: errors only */
    vt_trainer_set_log(t, log_cb, &cs.ps, quiet ? VT_LOG_ERROR : VT_LOG_INFO);
    vt_trainer_set_progress(t, train_progress, &cs);
    double epochs = 0, batch = 0, dev_imgsz = 0;
    vt_trainer_get_float(t, VT_OPT_EPOCHS, &epochs);
    vt_trainer_get_float(t, VT_OPT_BATCH, &batch);
    vt_trainer_get_float(t, VT_OPT_IMGSZ, &dev_imgsz);
    if (dev_imgsz <= 0) dev_imgsz = vt_model_imgsz(m);
    /* resuming: the library applies the saved options when the run starts; show them now */
    int given_epochs = 0, given_batch = 0;
    for (int i = 0; i < a->n; i++) {
        given_epochs |= key_is(&a->kv[i], "epochs");
        given_batch |= key_is(&a->kv[i], "batch");
    }
    if (ca.epochs && !given_epochs) epochs = strtod(ca.epochs, NULL);
    if (ca.batch && !given_batch) batch = strtod(ca.batch, NULL);
    cs.ps.auto_batch = batch < 0;
    /* one of several ranks (mpirun): rank 0 alone prints the run and writes save= */
    int world = 1, rank = vt_trainer_rank(t, &world), mute = quiet || rank > 0;
    if (!mute) { /* progress=off too: only the bar and the epoch table are left out */
        char bs[32];
        if (batch < 0) snprintf(bs, sizeof bs, "auto");
        else snprintf(bs, sizeof bs, "%.0f", batch);
        printf("training %s (%llu parameters, %.1f MFLOPs/image) on %s: %d classes, %d train / "
               "%d val images; %.0f epochs, batch %s, imgsz %.0f\n",
               vt_model_arch(m), (unsigned long long)vt_model_num_params(m),
               vt_model_flops(m, (int)dev_imgsz) / 1e6, data, vt_dataset_num_classes(ds),
               vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL),
               epochs, bs, dev_imgsz);
        if (resume && *resume) printf("resuming the run of %s\n", resume);
        double save_dir = 1;
        vt_trainer_get_float(t, VT_OPT_SAVE, &save_dir);
        char where[4300];
        if (save_dir == 0) {
            snprintf(where, sizeof where, "save=0 writes no run folder; 'vt check data=%s' "
                     "lists them", data);
            cs.listed = 1;
        }
        print_data_summary(ds, data, &di, save_dir == 0 ? where : NULL);
        fflush(stdout);
    }
    double t0 = now_s();
    cs.ps.t0 = cs.ps.epoch_t0 = t0;
    if (mode == PROG_PLAIN) cs.ps.last_draw = t0; /* the first plain line after 10 s */
    catch_sigint(t);
    st = vt_trainer_run(t);
    release_sigint();
    clear_bar(&cs.ps);
    list_problems(&cs); /* a run that stopped before its first batch */
    fflush(stdout);
    if (st == VT_ERR_CANCELLED) {
        fprintf(stderr, "vt %s: interrupted: %s\n", cmd, vt_trainer_last_error(t));
        rc = EXIT_INTERRUPTED;
    } else if (st) {
        rc = fail(cmd, st, vt_trainer_last_error(t));
        goto out;
    }
    char tb[32];
    if (rc == 0 && !mute) {
        printf("done in %s", fmt_duration(now_s() - t0, tb, sizeof tb));
        if (cs.ps.best_epoch)
            printf("; best %s %.4f at epoch %d%s", vt_metric_label(vt_task_fitness(cs.ps.task)),
                   cs.ps.best_value, cs.ps.best_epoch,
                   resume && *resume ? " of this session (the run's best: weights/best.vtm)" : "");
        printf("\n");
        if (resume && *resume && !cs.ps.epochs_seen)
            printf("nothing to train: the run had finished its %.0f epochs; give epochs= above "
                   "%.0f to extend it\n", epochs, epochs);
    }
    final_validation(t, cs.ps.task, mute, fitness_out);
    const char *dir = vt_trainer_run_dir(t);
    char best[4200];
    snprintf(best, sizeof best, "%s/weights/best.vtm", dir);
    int have_best = *dir && is_file(best);
    if (write_model && vt_trainer_rank(t, NULL) == 0) {
        /* save= gets the best weights, as weights/best.vtm (the last ones stay in last.vtm) */
        vt_model *bm = NULL;
        vt_status sst = have_best ? vt_model_load(&bm, best) : VT_OK;
        if (!sst) sst = vt_model_save(bm ? bm : m, save);
        if (sst) rc = fail(cmd, sst, bm ? vt_model_last_error(bm) : vt_model_last_error(m));
        else if (have_best && !mute)
            printf("saved %s: the best weights (a copy of %s)\n", save, best);
        else if (!mute)
            printf("saved %s: the last weights%s\n", save,
                   rc == EXIT_INTERRUPTED ? " (reached so far)" : " (no run folder with save=0)");
        vt_model_destroy(bm);
    }
    if (*dir && !mute) {
        /* stopped early (Ctrl-C, time=): continue; completed or early-stopped: extend */
        vt_stop_reason why = vt_trainer_stop_reason(t);
        int cont = rc == EXIT_INTERRUPTED || why == VT_STOP_TIME;
        printf("run folder: %s (best weights: %s, last: %s/weights/last.vtm; %s with vt train "
               "resume=%s/weights/last.vtm%s)\n", dir, have_best ? best : "none yet", dir,
               cont ? "continue" : "extend", dir, cont ? "" : " epochs=N");
    }
out:
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    free(ca.text);
    return rc;
}

/* Before starting ranks: the trainer's usage errors once, here, not once per rank (device=
 * aside: launch_ranks checks the list). */
static int check_before_launch(const args *a)
{
    args c = *a;
    char key[32];
    for (const char *p = TRAIN_TOOL_KEYS ", device"; *p; p += strspn(p, ", ")) {
        size_t n = strcspn(p, ", ");
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        take(&c, key);
        p += n;
    }
    return check_trainer_keys(&c, TRAIN_TOOL_KEYS);
}

int cmd_train(args *a)
{
    const char *devices = NULL;
    for (int i = 0; i < a->n; i++)
        if (key_is(&a->kv[i], "device")) devices = a->kv[i].val;
    if (!launches_ranks(devices)) return train(a, NULL);
    /* device=0,1,...: this process starts one rank per GPU, each this same command line */
    int rc = check_before_launch(a);
    if (rc) return rc;
    char *argv[MAX_KV + 3]; /* vt train takes key=value words only: the kv are all of them */
    argv[0] = program_invocation_name;
    argv[1] = (char *)a->cmd;
    for (int i = 0; i < a->n; i++) argv[2 + i] = (char *)a->kv[i].arg;
    argv[2 + a->n] = NULL;
    return launch_ranks(a->cmd, argv, devices);
}

/* The demo's setup per task, as a user would pick it: the synthetic data (vt_synth_generate),
 * the training defaults and the closing line; its models are the tasks' defaults. */
static const struct demo_setup {
    vt_task task;
    const char *dir, *synth, *save, *epochs, *imgsz, *batch, *lr0;
} demos[] = {
    {VT_TASK_CLASSIFY, "demo-data", "classes=4 train=300 val=50 imgsz=32 seed=11",
     "save=demo-model.vtm", "epochs=8", "imgsz=32", "batch=32", "lr0=0.003"},
    {VT_TASK_DETECT, "demo-det", "classes=3 train=400 val=80 imgsz=64 seed=11",
     "save=demo-det.vtm", "epochs=30", "imgsz=64", "batch=16", "lr0=0.002"},
    {VT_TASK_SEGMENT, "demo-seg", "classes=3 train=300 val=60 imgsz=64 seed=11",
     "save=demo-seg.vtm", "epochs=15", "imgsz=64", "batch=16", "lr0=0.003"},
};

int cmd_demo(args *a)
{
    const char *dir = take(a, "data"), *task = take(a, "task");
    const struct demo_setup *d = &demos[0];
    if (task) { /* the tasks the demo has data for: a task name of the library among them */
        vt_task t = vt_task_parse(task);
        d = NULL;
        for (size_t i = 0; t && i < sizeof demos / sizeof *demos; i++)
            if (demos[i].task == t && !strcmp(vt_task_name(t), task)) d = &demos[i];
        if (!d) {
            fprintf(stderr, "vt demo: task=%s: valid tasks:", task);
            for (size_t i = 0; i < sizeof demos / sizeof *demos; i++)
                fprintf(stderr, "%s %s", i ? "," : "", vt_task_name(demos[i].task));
            fprintf(stderr, "\n");
            return EXIT_USAGE;
        }
    }
    if (!dir) dir = d->dir;
    /* quiet=1 (checked by train()): the demo's own lines too */
    const char *q = NULL;
    for (int i = 0; i < a->n; i++)
        if (key_is(&a->kv[i], "quiet")) q = a->kv[i].val;
    int quiet = q && (!strcmp(q, "1") || !strcmp(q, "true") || !strcmp(q, "yes"));
    if (!is_dir(dir)) {
        if (!quiet) printf("generating a synthetic dataset in %s ...\n", dir);
        vt_status st = vt_synth_generate(dir, d->task, d->synth);
        if (st) return fail(a->cmd, st, NULL);
    }
    /* the demo's defaults, unless given */
    static char data_arg[4096], model_arg[64];
    const char *model = vt_task_default_model(d->task);
    snprintf(data_arg, sizeof data_arg, "data=%s", dir);
    snprintf(model_arg, sizeof model_arg, "model=%s", model);
    const char *const defaults[] = {data_arg, d->save, model_arg, d->epochs, d->imgsz, d->batch,
                                    "seed=1", "optimizer=adamw", d->lr0};
    size_t ndef = sizeof defaults / sizeof defaults[0];
    args t = *a;
    for (int i = 0; i < t.n; i++)
        if (key_is(&t.kv[i], "data")) t.kv[i].tool = 0; /* re-taken by train() */
    for (size_t i = 0; i < ndef; i++) {
        const char *def = defaults[i];
        size_t kl = (size_t)(strchr(def, '=') - def);
        int given = 0;
        for (int j = 0; j < a->n; j++)
            if (a->kv[j].klen == kl && !strncmp(a->kv[j].arg, def, kl)) given = 1;
        if (given || t.n == MAX_KV) continue;
        kv *k = &t.kv[t.n++];
        k->arg = def;
        k->val = def + kl + 1;
        k->klen = kl;
        k->tool = 0;
    }
    double fitness = 0;
    int rc = train(&t, &fitness);
    if (quiet || rc) return rc;
    vt_metric fit = vt_task_fitness(d->task);
    if (fit == VT_METRIC_TOP1) printf("demo: %s reached %.1f%% validation accuracy\n", model,
                                      100 * fitness);
    else printf("demo: %s reached %s %.3f on the validation images\n", model,
                vt_metric_label(fit), fitness);
    return rc;
}
