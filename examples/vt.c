/* vt: the libvisiontrain command-line tool.
 *
 *   vt train task=classify data=DIR model=cls-n epochs=10 imgsz=32 batch=32 device=cpu [save=PATH]
 *   vt predict model=PATH source=IMAGE [IMAGE...]
 *   vt val model=PATH data=DIR [imgsz=.. batch=..]
 *   vt synth data=DIR [classes=4 train=100 val=40 imgsz=32 seed=0]
 *   vt demo [data=DIR]       generate a dataset, train cls-n on it, print the accuracy
 *   vt info                  version and options
 *
 * Exit codes: 0 success, 2 usage error, 3 data error, 4 interrupted, 1 any other failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "visiontrain/visiontrain.h"

enum { EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_INTERRUPTED = 4 };

static vt_trainer *volatile g_trainer; /* for the SIGINT handler only */

static void on_sigint(int sig)
{
    (void)sig;
    if (g_trainer) vt_trainer_cancel(g_trainer);
}

static int exit_code(vt_status st)
{
    switch (st) {
    case VT_OK: return 0;
    case VT_ERR_UNKNOWN_OPTION:
    case VT_ERR_OPTION_VALUE:
    case VT_ERR_INVALID_ARGUMENT: return EXIT_USAGE;
    case VT_ERR_NOT_FOUND:
    case VT_ERR_FORMAT:
    case VT_ERR_DATASET: return EXIT_DATA;
    case VT_ERR_CANCELLED: return EXIT_INTERRUPTED;
    default: return 1;
    }
}

static int fail(vt_status st, const char *msg)
{
    fprintf(stderr, "vt: %s (%s)\n", msg && *msg ? msg : vt_last_error(), vt_status_string(st));
    return exit_code(st);
}

/* key=value arguments the tool itself consumes; everything else goes to the trainer. */
typedef struct {
    const char *task, *data, *model, *save, *source, *classes;
    const char *passthrough[64];
    int npass;
    const char *sources[256];
    int nsources;
} args;

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *eq = strchr(s, '=');
        if (!eq) {
            if (a->nsources > 0 && a->nsources < 256) { /* more images after source= */
                a->sources[a->nsources++] = s;
                continue;
            }
            fprintf(stderr, "vt: '%s' is not of the form key=value\n", s);
            return -1;
        }
        size_t kl = (size_t)(eq - s);
#define KEY(k) (kl == strlen(k) && strncmp(s, k, kl) == 0)
        if (KEY("task")) a->task = eq + 1;
        else if (KEY("data")) a->data = eq + 1;
        else if (KEY("model")) a->model = eq + 1;
        else if (KEY("save")) a->save = eq + 1;
        else if (KEY("source")) {
            a->source = eq + 1;
            a->sources[a->nsources++] = eq + 1;
        } else if (a->npass < 64) a->passthrough[a->npass++] = s;
#undef KEY
    }
    return 0;
}

static void log_cb(void *user, vt_log_level level, const char *msg)
{
    (void)user;
    if (level <= VT_LOG_WARNING) fprintf(stderr, "vt: %s: %s\n", level == VT_LOG_ERROR ? "error" : "warning", msg);
}

static int progress_cb(void *user, vt_event ev, const vt_progress *p)
{
    (void)user;
    if (ev != VT_EVENT_EPOCH_END) return 0;
    double loss = 0, top1 = -1, top5 = -1, ips = 0, secs = 0, lr = 0;
    vt_progress_metric(p, VT_METRIC_LOSS, &loss);
    vt_progress_metric(p, VT_METRIC_IMAGES_PER_SEC, &ips);
    vt_progress_metric(p, VT_METRIC_EPOCH_SECONDS, &secs);
    vt_progress_metric(p, VT_METRIC_LR, &lr);
    printf("epoch %3d/%-3d  loss %.4f", vt_progress_epoch(p), vt_progress_epochs(p), loss);
    if (vt_progress_metric(p, VT_METRIC_TOP1, &top1) == VT_OK) {
        vt_progress_metric(p, VT_METRIC_TOP5, &top5);
        printf("  top1 %.4f  top5 %.4f", top1, top5);
    }
    printf("  lr %.5f  %.0f img/s  %.1fs\n", lr, ips, secs);
    fflush(stdout);
    return 0;
}

static int train(args *a, double *top1_out)
{
    if (!a->data) {
        fprintf(stderr, "vt train: data=DIR is required\n");
        return EXIT_USAGE;
    }
    if (a->task && strcmp(a->task, "classify") != 0) {
        fprintf(stderr, "vt train: task=%s is not supported yet (classify)\n", a->task);
        return EXIT_USAGE;
    }
    const char *arch = a->model ? a->model : "cls-n";
    vt_dataset *ds = NULL;
    vt_model *m = NULL;
    vt_trainer *t = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, a->data);
    if (st) return fail(st, NULL);
    /* imgsz applies to both the model and the trainer */
    char mopts[128] = "";
    for (int i = 0; i < a->npass; i++)
        if (strncmp(a->passthrough[i], "imgsz=", 6) == 0)
            snprintf(mopts, sizeof mopts, "%s", a->passthrough[i]);
    int rc = 0;
    if (strstr(arch, ".vtm") || access(arch, R_OK) == 0) st = vt_model_load(&m, arch);
    else st = vt_model_create(&m, arch, vt_dataset_num_classes(ds), mopts);
    if (st) { rc = fail(st, NULL); goto out; }
    if ((st = vt_trainer_create(&t, m, ds))) { rc = fail(st, NULL); goto out; }
    for (int i = 0; i < a->npass; i++)
        if ((st = vt_trainer_set(t, a->passthrough[i]))) {
            rc = fail(st, vt_trainer_last_error(t));
            goto out;
        }
    vt_trainer_set_log(t, log_cb, NULL, VT_LOG_WARNING);
    vt_trainer_set_progress(t, progress_cb, NULL);
    printf("training %s (%llu parameters, %.1f MFLOPs/image) on %s: %d classes, %d train / %d val "
           "images\n", vt_model_arch(m), (unsigned long long)vt_model_num_params(m),
           vt_model_flops(m, vt_model_imgsz(m)) / 1e6, a->data, vt_dataset_num_classes(ds),
           vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL));
    g_trainer = t;
    signal(SIGINT, on_sigint);
    st = vt_trainer_run(t);
    signal(SIGINT, SIG_DFL);
    g_trainer = NULL;
    if (st && st != VT_ERR_CANCELLED) { rc = fail(st, vt_trainer_last_error(t)); goto out; }
    if (st == VT_ERR_CANCELLED) {
        fprintf(stderr, "vt: interrupted: %s\n", vt_trainer_last_error(t));
        rc = EXIT_INTERRUPTED;
    }
    double top1;
    if (vt_trainer_metric(t, VT_METRIC_TOP1, &top1) == VT_OK) {
        printf("final validation top-1 accuracy: %.4f\n", top1);
        if (top1_out) *top1_out = top1;
    }
    const char *save = a->save ? a->save : "model.vtm";
    vt_status sst = vt_model_save(m, save);
    if (sst) rc = fail(sst, vt_model_last_error(m));
    else printf("saved %s\n", save);
out:
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return rc;
}

static int predict(args *a)
{
    if (!a->model || a->nsources == 0) {
        fprintf(stderr, "vt predict: model=PATH and source=IMAGE are required\n");
        return EXIT_USAGE;
    }
    vt_model *m;
    vt_status st = vt_model_load(&m, a->model);
    if (st) return fail(st, NULL);
    int k = vt_model_num_classes(m), rc = 0;
    float *scores = malloc((size_t)k * sizeof *scores);
    for (int i = 0; scores && i < a->nsources; i++) {
        if ((st = vt_model_predict_file(m, a->sources[i], scores, k))) {
            rc = fail(st, vt_model_last_error(m));
            continue;
        }
        int best = 0;
        for (int c = 1; c < k; c++)
            if (scores[c] > scores[best]) best = c;
        const char *name = vt_model_class_name(m, best);
        printf("%s: %s %.4f\n", a->sources[i], name ? name : "?", scores[best]);
    }
    free(scores);
    vt_model_destroy(m);
    return rc;
}

static int validate(args *a)
{
    if (!a->model || !a->data) {
        fprintf(stderr, "vt val: model=PATH and data=DIR are required\n");
        return EXIT_USAGE;
    }
    vt_model *m = NULL;
    vt_dataset *ds = NULL;
    vt_trainer *t = NULL;
    int rc = 0;
    vt_status st = vt_model_load(&m, a->model);
    if (!st) st = vt_dataset_open(&ds, vt_model_task(m), a->data);
    if (!st) st = vt_trainer_create(&t, m, ds);
    for (int i = 0; !st && i < a->npass; i++) st = vt_trainer_set(t, a->passthrough[i]);
    if (!st) st = vt_trainer_validate(t, VT_SPLIT_VAL);
    if (st) rc = fail(st, t ? vt_trainer_last_error(t) : NULL);
    else {
        double top1, top5, loss;
        vt_trainer_metric(t, VT_METRIC_TOP1, &top1);
        vt_trainer_metric(t, VT_METRIC_TOP5, &top5);
        vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &loss);
        printf("val: loss %.4f  top1 %.4f  top5 %.4f\n", loss, top1, top5);
    }
    vt_trainer_destroy(t);
    vt_dataset_destroy(ds);
    vt_model_destroy(m);
    return rc;
}

static int synth(args *a)
{
    if (!a->data) {
        fprintf(stderr, "vt synth: data=DIR is required\n");
        return EXIT_USAGE;
    }
    char opts[512] = "";
    size_t used = 0;
    for (int i = 0; i < a->npass; i++)
        used += (size_t)snprintf(opts + used, used < sizeof opts ? sizeof opts - used : 0, "%s ",
                                 a->passthrough[i]);
    vt_status st = vt_synth_generate(a->data, VT_TASK_CLASSIFY, opts);
    if (st) return fail(st, NULL);
    printf("wrote a synthetic classification dataset to %s\n", a->data);
    return 0;
}

static int demo(args *a)
{
    const char *dir = a->data ? a->data : "demo-data";
    if (access(dir, F_OK) != 0) {
        printf("generating a synthetic dataset in %s ...\n", dir);
        vt_status st = vt_synth_generate(dir, VT_TASK_CLASSIFY, "classes=4 train=300 val=50 imgsz=32 seed=11");
        if (st) return fail(st, NULL);
    }
    args t = *a;
    t.data = dir;
    t.model = "cls-n";
    t.save = a->save ? a->save : "demo-model.vtm";
    static const char *defaults[] = {"epochs=8", "imgsz=32", "batch=32", "seed=1",
                                     "optimizer=adamw", "lr0=0.003"};
    for (int i = 0; i < 6 && t.npass < 64; i++) {
        int given = 0;
        for (int j = 0; j < a->npass; j++)
            if (strncmp(a->passthrough[j], defaults[i], strchr(defaults[i], '=') - defaults[i] + 1) == 0) given = 1;
        if (!given) t.passthrough[t.npass++] = defaults[i];
    }
    double top1 = 0;
    int rc = train(&t, &top1);
    if (rc == 0) printf("demo: cls-n reached %.1f%% validation accuracy\n", 100 * top1);
    return rc;
}

static int info(void)
{
    printf("libvisiontrain %s (ABI %u)\noptions (key=value):\n", vt_version_string(), vt_abi_version());
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        const char *key, *help;
        vt_option_type type;
        double lo, hi;
        vt_option_info((vt_option)id, &key, &type, &lo, &hi, &help);
        printf("  %-16s %-6s %s%s\n", key, type == VT_OPTION_INT ? "int" : type == VT_OPTION_FLOAT ? "float" : "string",
               help, id >= 300 ? " (model)" : "");
    }
    return 0;
}

static void usage(FILE *f)
{
    fputs("usage: vt COMMAND [key=value ...]\n"
          "  train    task=classify data=DIR model=cls-n|cls-s|cls-m|FILE epochs=N imgsz=S batch=B device=cpu save=FILE\n"
          "  val      model=FILE data=DIR\n"
          "  predict  model=FILE source=IMAGE [IMAGE ...]\n"
          "  synth    data=DIR [classes=4 train=100 val=40 imgsz=32 seed=0]\n"
          "  demo     [data=DIR]  generate data, train cls-n, print the accuracy\n"
          "  info     version and every option\n"
          "exit codes: 0 ok, 1 failure, 2 usage, 3 data error, 4 interrupted\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    args a;
    if (parse_args(argc - 2, argv + 2, &a)) return EXIT_USAGE;
    const char *cmd = argv[1];
    if (strcmp(cmd, "train") == 0) return train(&a, NULL);
    if (strcmp(cmd, "predict") == 0) return predict(&a);
    if (strcmp(cmd, "val") == 0) return validate(&a);
    if (strcmp(cmd, "synth") == 0) return synth(&a);
    if (strcmp(cmd, "demo") == 0) return demo(&a);
    if (strcmp(cmd, "info") == 0) return info();
    fprintf(stderr, "vt: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
