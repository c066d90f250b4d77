/* vt train and vt demo. */
#include <stdio.h>
#include <string.h>

#include "vt_cli.h"

/* ---- train / demo ------------------------------------------------------------------------ */

#define TRAIN_TOOL_KEYS "data, model, save, task, channels, dropout, progress, policy, min_size, decode"

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
    int rc = 0;
    for (int i = 0; !rc && i < a->n; i++) {
        if (a->kv[i].tool) continue;
        vt_status st = vt_trainer_set(t, a->kv[i].arg);
        if (st) {
            rc = fail(a->cmd, st, vt_trainer_last_error(t));
            if (st == VT_ERR_UNKNOWN_OPTION) fprintf(stderr, "vt %s also takes: %s\n", a->cmd, tool_keys);
        }
    }
    vt_trainer_destroy(t);
    vt_model_destroy(probe);
    return rc;
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
    if (write_problems(s->ds, dir, path, sizeof path))
        fprintf(stderr, "vt train: cannot write %s\n", path);
    else if (s->ps.mode != PROG_OFF)
        printf("  all %d problem%s: %s\n", np, np == 1 ? "" : "s", path);
    fflush(stdout);
}

static int train_progress(void *user, vt_event ev, const vt_progress *p)
{
    train_cb_state *s = user;
    list_problems(s);
    return progress_cb(&s->ps, ev, p);
}

/* top1_out: the final validation top-1 (classification) or mAP50-95 (detection). */
static int train(args *a, double *top1_out)
{
    const char *cmd = a->cmd;
    const char *data = take(a, "data"), *arch = take(a, "model"), *save = take(a, "save");
    const char *task = take(a, "task"), *channels = take(a, "channels");
    const char *dropout = take(a, "dropout"), *prog = take(a, "progress");
    const char *imgsz = NULL;
    for (int i = 0; i < a->n; i++)
        if (key_is(&a->kv[i], "imgsz")) imgsz = a->kv[i].val; /* for the model and the trainer */
    int mode;
    data_info di;
    if (progress_mode(cmd, prog, &mode)) return EXIT_USAGE;
    if (take_data_keys(cmd, a, &di)) return EXIT_USAGE;
    if (!data) {
        fprintf(stderr, "vt %s: data=DIR is required (see 'vt help %s')\n", cmd, cmd);
        return EXIT_USAGE;
    }
    vt_task tk;
    if (task_value(cmd, task, data, &tk)) return EXIT_USAGE;
    if (!task && arch && !strncmp(arch, "det-", 4)) tk = VT_TASK_DETECT;
    if (!task && arch && !strncmp(arch, "seg-", 4)) tk = VT_TASK_SEGMENT;
    if (!arch) arch = tk == VT_TASK_DETECT ? "det-n" : tk == VT_TASK_SEGMENT ? "seg-n" : "cls-n";
    int write_model = 1;
    if (save && (!strcmp(save, "0") || !strcmp(save, "1"))) {
        /* save=0|1 is the trainer's run-folder switch where the library has one: pass it on;
         * save=0 also skips the tool's own model file */
        for (int i = 0; i < a->n; i++)
            if (key_is(&a->kv[i], "save")) a->kv[i].tool = 0;
        write_model = save[0] == '1';
        save = NULL;
    }
    if (!save) save = "model.vtm";

    vt_dataset *ds = NULL;
    vt_model *m = NULL;
    vt_trainer *t = NULL;
    int rc = 0;
    vt_status st;
    if ((rc = check_trainer_keys(a, TRAIN_TOOL_KEYS))) return rc;
    if (names_file(arch)) {
        if (channels || dropout) {
            fprintf(stderr, "vt %s: channels= and dropout= apply to a new model, not to %s\n",
                    cmd, arch);
            return EXIT_USAGE;
        }
        if ((st = vt_model_load(&m, arch))) return fail(cmd, st, NULL);
        if (!task) tk = vt_model_task(m);
    }
    if ((rc = open_data(cmd, &di, tk, data, &ds))) goto out;
    if (!m) {
        char mopts[256];
        snprintf(mopts, sizeof mopts, "%s%s %s%s %s%s", imgsz ? "imgsz=" : "", imgsz ? imgsz : "",
                 channels ? "channels=" : "", channels ? channels : "", dropout ? "dropout=" : "",
                 dropout ? dropout : "");
        if ((st = vt_model_create(&m, arch, vt_dataset_num_classes(ds), mopts))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
    }
    if ((rc = make_trainer(cmd, m, ds, a, TRAIN_TOOL_KEYS, &t))) goto out;
    train_cb_state cs;
    memset(&cs, 0, sizeof cs);
    cs.t = t;
    cs.ds = ds;
    cs.listed = vt_dataset_num_problems(ds) == 0;
    cs.ps.mode = mode;
    cs.ps.det = tk == VT_TASK_DETECT;
    cs.ps.seg = tk == VT_TASK_SEGMENT;
    vt_trainer_set_log(t, log_cb, &cs.ps, VT_LOG_WARNING);
    vt_trainer_set_progress(t, train_progress, &cs);
    double epochs = 0, batch = 0, dev_imgsz = 0;
    vt_trainer_get_float(t, VT_OPT_EPOCHS, &epochs);
    vt_trainer_get_float(t, VT_OPT_BATCH, &batch);
    vt_trainer_get_float(t, VT_OPT_IMGSZ, &dev_imgsz);
    if (dev_imgsz <= 0) dev_imgsz = vt_model_imgsz(m);
    if (mode != PROG_OFF) {
        printf("training %s (%llu parameters, %.1f MFLOPs/image) on %s: %d classes, %d train / "
               "%d val images; %.0f epochs, batch %.0f, imgsz %.0f\n",
               vt_model_arch(m), (unsigned long long)vt_model_num_params(m),
               vt_model_flops(m, (int)dev_imgsz) / 1e6, data, vt_dataset_num_classes(ds),
               vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL),
               epochs, batch, dev_imgsz);
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
    if (rc == 0 && mode != PROG_OFF) {
        printf("done in %s", fmt_duration(now_s() - t0, tb, sizeof tb));
        if (cs.ps.best_epoch)
            printf("; best %s %.4f at epoch %d", cs.ps.det ? "mAP50-95" : cs.ps.seg ? "mIoU" : "top1",
                   cs.ps.best_top1, cs.ps.best_epoch);
        printf("\n");
    }
    double top1, m50;
    if (cs.ps.det && vt_trainer_metric(t, VT_METRIC_MAP50_95, &top1) == VT_OK &&
        vt_trainer_metric(t, VT_METRIC_MAP50, &m50) == VT_OK) {
        if (mode != PROG_OFF) printf("final validation mAP50 %.4f  mAP50-95 %.4f\n", m50, top1);
        if (top1_out) *top1_out = top1;
    } else if (cs.ps.seg && vt_trainer_metric(t, VT_METRIC_MIOU, &top1) == VT_OK &&
               vt_trainer_metric(t, VT_METRIC_PIXEL_ACC, &m50) == VT_OK) {
        if (mode != PROG_OFF)
            printf("final validation mIoU %.4f  pixel accuracy %.4f\n", top1, m50);
        if (top1_out) *top1_out = top1;
    } else if (!cs.ps.det && vt_trainer_metric(t, VT_METRIC_TOP1, &top1) == VT_OK) {
        if (mode != PROG_OFF) printf("final validation top-1 accuracy: %.4f\n", top1);
        if (top1_out) *top1_out = top1;
    }
    vt_status sst = write_model ? vt_model_save(m, save) : VT_OK;
    if (sst) rc = fail(cmd, sst, vt_model_last_error(m));
    else if (write_model)
        printf("saved %s%s\n", save, rc == EXIT_INTERRUPTED ? " (the weights reached so far)" : "");
out:
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return rc;
}

int cmd_train(args *a)
{
    return train(a, NULL);
}

int cmd_demo(args *a)
{
    const char *dir = take(a, "data"), *task = take(a, "task");
    int det = task && !strcmp(task, "detect"), seg = task && !strcmp(task, "segment");
    if (task && !det && !seg && strcmp(task, "classify")) {
        fprintf(stderr, "vt demo: task=%s: valid tasks: classify, detect, segment\n", task);
        return EXIT_USAGE;
    }
    if (!dir) dir = det ? "demo-det" : seg ? "demo-seg" : "demo-data";
    if (!is_dir(dir)) {
        printf("generating a synthetic dataset in %s ...\n", dir);
        vt_status st =
            det   ? vt_synth_generate(dir, VT_TASK_DETECT, "classes=3 train=400 val=80 imgsz=64 seed=11")
            : seg ? vt_synth_generate(dir, VT_TASK_SEGMENT, "classes=3 train=300 val=60 imgsz=64 seed=11")
                  : vt_synth_generate(dir, VT_TASK_CLASSIFY,
                                      "classes=4 train=300 val=50 imgsz=32 seed=11");
        if (st) return fail(a->cmd, st, NULL);
    }
    /* the demo's defaults, unless given */
    static const char *const cls_defaults[] = {"data=", "save=demo-model.vtm", "model=cls-n",
                                               "epochs=8", "imgsz=32", "batch=32", "seed=1",
                                               "optimizer=adamw", "lr0=0.003"};
    static const char *const det_defaults[] = {"data=", "save=demo-det.vtm", "model=det-n",
                                               "epochs=30", "imgsz=64", "batch=16", "seed=1",
                                               "optimizer=adamw", "lr0=0.002"};
    static const char *const seg_defaults[] = {"data=", "save=demo-seg.vtm", "model=seg-n",
                                               "epochs=15", "imgsz=64", "batch=16", "seed=1",
                                               "optimizer=adamw", "lr0=0.003"};
    const char *const *defaults = det ? det_defaults : seg ? seg_defaults : cls_defaults;
    size_t ndef = sizeof cls_defaults / sizeof cls_defaults[0];
    static char data_arg[4096];
    snprintf(data_arg, sizeof data_arg, "data=%s", dir);
    args t = *a;
    for (int i = 0; i < t.n; i++)
        if (key_is(&t.kv[i], "data")) t.kv[i].tool = 0; /* re-taken by train() */
    for (size_t i = 0; i < ndef; i++) {
        const char *d = i == 0 ? data_arg : defaults[i];
        size_t kl = (size_t)(strchr(d, '=') - d);
        int given = 0;
        for (int j = 0; j < a->n; j++)
            if (a->kv[j].klen == kl && !strncmp(a->kv[j].arg, d, kl)) given = 1;
        if (given || t.n == MAX_KV) continue;
        kv *k = &t.kv[t.n++];
        k->arg = d;
        k->val = d + kl + 1;
        k->klen = kl;
        k->tool = 0;
    }
    double top1 = 0;
    int rc = train(&t, &top1);
    if (rc == 0 && det) printf("demo: det-n reached mAP50-95 %.3f on the validation images\n", top1);
    else if (rc == 0 && seg) printf("demo: seg-n reached mIoU %.3f on the validation images\n", top1);
    else if (rc == 0) printf("demo: cls-n reached %.1f%% validation accuracy\n", 100 * top1);
    return rc;
}
