/* vt: the libvisiontrain command-line tool.
 *
 *   vt train    data=DIR [model=cls-n|FILE epochs=10 imgsz=32 batch=32 device=cpu save=FILE ...]
 *   vt val      model=FILE data=DIR [split=val batch=.. imgsz=.. device=..]
 *   vt predict  model=FILE source=IMAGE|DIR [IMAGE ...] [top=1]
 *   vt estimate [model=cls-n|FILE data=DIR | train=N val=N] [epochs=100 imgsz=640 batch=16
 *               gpu=all|NAME|local|cpu gpus=1 precision=fp32 calibrate=1 budget=USD deadline=H
 *               catalog=CSV ...]
 *   vt check    data=PATH [task=classify|detect|segment policy=drop|skip|fail min_size=10]
 *   vt dataset  split|subset|clone|stats data=PATH out=DIR ...
 *   vt info     [catalog=CSV]
 *   vt synth    data=DIR [classes=4 train=100 val=40 imgsz=32 seed=0]
 *   vt demo     [data=DIR save=FILE epochs=8 ...]
 *   vt help [COMMAND]     vt COMMAND --help
 *
 * Arguments are key=value, as in the most used trainers' CLIs.  Unknown keys and bad values are
 * rejected with the list of valid keys / the valid range.
 *
 * Exit codes: 0 success, 1 any other failure, 2 usage error, 3 data error (missing or unusable
 * dataset, image, model or catalog file), 4 interrupted (Ctrl-C). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "visiontrain/visiontrain.h"

enum { EXIT_FAILURE_ = 1, EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_INTERRUPTED = 4 };

/* ---- small helpers ------------------------------------------------------------------------ */

static vt_trainer *volatile g_trainer; /* for the SIGINT handler only */
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
    if (g_trainer) vt_trainer_cancel(g_trainer);
}

/* Ctrl-C cancels the run between batches; a second Ctrl-C kills the process (SA_RESETHAND). */
static void catch_sigint(vt_trainer *t)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    g_trainer = t;
    g_interrupted = 0;
    sigaction(SIGINT, &sa, NULL);
}

static void release_sigint(void)
{
    signal(SIGINT, SIG_DFL);
    g_trainer = NULL;
}

static int exit_code(vt_status st)
{
    switch (st) {
    case VT_OK: return 0;
    case VT_ERR_UNKNOWN_OPTION:
    case VT_ERR_OPTION_VALUE:
    case VT_ERR_INVALID_ARGUMENT: return EXIT_USAGE;
    case VT_ERR_NOT_FOUND:
    case VT_ERR_IO:
    case VT_ERR_FORMAT:
    case VT_ERR_DATASET:
    case VT_ERR_CHECKPOINT: return EXIT_DATA;
    case VT_ERR_CANCELLED: return EXIT_INTERRUPTED;
    default: return EXIT_FAILURE_;
    }
}

/* Print "vt CMD: message (status)" and return the exit code of the status.  msg NULL or "":
 * the thread's last error. */
static int fail(const char *cmd, vt_status st, const char *msg)
{
    if (!msg || !*msg) msg = vt_last_error();
    fprintf(stderr, "vt %s: %s (%s)\n", cmd, msg && *msg ? msg : "failed", vt_status_string(st));
    return exit_code(st);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "h:mm:ss" below a day, else "Nd hh:mm". */
static const char *fmt_duration(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e12) {
        snprintf(buf, cap, "?");
        return buf;
    }
    long t = (long)(s + 0.5);
    if (t >= 86400) snprintf(buf, cap, "%ldd %02ld:%02ld", t / 86400, t / 3600 % 24, t / 60 % 60);
    else snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    return buf;
}

/* "h:mm" (minutes rounded up, so a short run never reads 0:00). */
static const char *fmt_hmm(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e12) {
        snprintf(buf, cap, "?");
        return buf;
    }
    long m = (long)ceil(s / 60.0);
    snprintf(buf, cap, "%ld:%02ld", m / 60, m % 60);
    return buf;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- arguments ------------------------------------------------------------------------------ */

#define MAX_KV 128
#define MAX_SOURCES 4096

typedef struct {
    const char *arg; /* "key=value" as given */
    const char *val; /* points after '=' */
    size_t klen;
    int tool;        /* consumed by the tool (not passed to the library) */
} kv;

typedef struct {
    const char *cmd;
    kv kv[MAX_KV];
    int n;
    const char *sources[MAX_SOURCES];
    int nsources;
    int help;
} args;

static int key_is(const kv *k, const char *key)
{
    return k->klen == strlen(key) && strncmp(k->arg, key, k->klen) == 0;
}

/* The last value given for key, or NULL; marks every occurrence as the tool's. */
static const char *take(args *a, const char *key)
{
    const char *v = NULL;
    for (int i = 0; i < a->n; i++)
        if (key_is(&a->kv[i], key)) {
            a->kv[i].tool = 1;
            v = a->kv[i].val;
        }
    return v;
}

static int parse_args(const char *cmd, int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *eq = strchr(s, '=');
        if (!strcmp(s, "--help") || !strcmp(s, "-h") || !strcmp(s, "help")) {
            a->help = 1;
            continue;
        }
        if (!eq || eq == s) {
            if (!strcmp(cmd, "predict") && a->nsources < MAX_SOURCES) { /* more images */
                a->sources[a->nsources++] = s;
                continue;
            }
            fprintf(stderr, "vt %s: '%s' is not of the form key=value (see 'vt help %s')\n", cmd,
                    s, cmd);
            return -1;
        }
        if (a->n == MAX_KV) {
            fprintf(stderr, "vt %s: too many arguments\n", cmd);
            return -1;
        }
        kv *k = &a->kv[a->n++];
        k->arg = s;
        k->val = eq + 1;
        k->klen = (size_t)(eq - s);
        if (key_is(k, "source")) {
            if (a->nsources < MAX_SOURCES) a->sources[a->nsources++] = k->val;
        }
    }
    return 0;
}

/* Reject every argument not marked as the tool's: "unknown key 'x'; valid keys: ...". */
static int reject_unknown(const args *a, const char *valid)
{
    for (int i = 0; i < a->n; i++)
        if (!a->kv[i].tool) {
            fprintf(stderr, "vt %s: unknown key '%.*s'; valid keys: %s\n", a->cmd,
                    (int)a->kv[i].klen, a->kv[i].arg, valid);
            return EXIT_USAGE;
        }
    return 0;
}

/* Parse a 0|1 flag. */
static int flag_value(const char *cmd, const char *key, const char *v, int *out)
{
    if (!v) return 0;
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no")) *out = 0;
    else {
        fprintf(stderr, "vt %s: %s=%s: expected 0 or 1\n", cmd, key, v);
        return EXIT_USAGE;
    }
    return 0;
}

static int int_value(const char *cmd, const char *key, const char *v, long lo, long hi, long *out)
{
    if (!v) return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "vt %s: %s=%s: expected an integer in %ld..%ld\n", cmd, key, v, lo, hi);
        return EXIT_USAGE;
    }
    *out = x;
    return 0;
}

static int num_value(const char *cmd, const char *key, const char *v, double lo, double *out)
{
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !isfinite(x) || x < lo) {
        fprintf(stderr, "vt %s: %s=%s: expected a number >= %g\n", cmd, key, v, lo);
        return EXIT_USAGE;
    }
    *out = x;
    return 0;
}

/* The trainer's option keys, comma-separated (from vt_option_next / vt_option_info). */
static const char *trainer_keys(void)
{
    static char buf[1024];
    if (buf[0]) return buf;
    size_t used = 0, line = 0;
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        const char *key;
        if (id >= 300 || vt_option_info((vt_option)id, &key, NULL, NULL, NULL, NULL)) continue;
        const char *sep = !used ? "" : line + strlen(key) > 70 ? ",\n  " : ", ";
        if (!strcmp(sep, ",\n  ")) line = 0;
        line += strlen(key) + 2;
        used += (size_t)snprintf(buf + used, used < sizeof buf ? sizeof buf - used : 0, "%s%s",
                                 sep, key);
    }
    return buf;
}

/* ---- help ----------------------------------------------------------------------------------- */

static const char *const usage_text =
    "usage: vt COMMAND [key=value ...]\n"
    "\n"
    "commands:\n"
    "  train     train a classifier (ImageFolder) or a detector (YOLO data.yaml, COCO json)\n"
    "  val       evaluate a saved model on a dataset split\n"
    "  predict   classify images, or detect objects in them, with a saved model\n"
    "  estimate  estimate the time and cost of a training run on each catalog GPU\n"
    "  check     validate a dataset: every problem with file:line, counts per split and class\n"
    "  dataset   dataset tools: split, subset, clone, stats\n"
    "  info      version, GPUs, the GPU catalog and every training option\n"
    "  synth     write a synthetic dataset (coloured shapes)\n"
    "  demo      generate a dataset, train cls-n on it and print the accuracy\n"
    "            (task=detect: det-n and its mAP; task=segment: seg-n and its mIoU)\n"
    "  help      'vt help COMMAND' or 'vt COMMAND --help' for a command's keys\n"
    "\n"
    "examples:\n"
    "  vt synth data=shapes classes=4\n"
    "  vt train data=shapes model=cls-n epochs=10 imgsz=32 save=shapes.vtm\n"
    "  vt predict model=shapes.vtm source=shapes/val/circle/00000.png\n"
    "  vt estimate model=cls-s data=shapes epochs=100 imgsz=224 batch=64 gpu=all\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage error, 3 data error (missing or unusable dataset,\n"
    "            image, model or catalog file), 4 interrupted (Ctrl-C)\n";

typedef struct {
    const char *cmd, *text;
} help_entry;

static const help_entry help_texts[] = {
    {"train",
     "usage: vt train data=DIR [key=value ...]\n"
     "Train a classifier on an ImageFolder dataset (DIR/train/<class>/*.png|jpg, DIR/val/...),\n"
     "or a detector on a YOLO data.yaml (or a folder holding one) or a COCO .json.\n"
     "\n"
     "tool keys:\n"
     "  data=DIR         the dataset (required)\n"
     "  model=NAME|FILE  cls-n (default), cls-s, cls-m, cnn-small; det-n (default for\n"
     "                   detection), det-s, det-m; seg-n (default for segmentation), seg-s,\n"
     "                   seg-m; or a saved .vtm to fine-tune\n"
     "  save=FILE        where to write the trained model (default model.vtm); also written\n"
     "                   after Ctrl-C, with the weights reached so far.  save=0|1 is passed\n"
     "                   to the trainer (its run-folder switch); save=0 writes no model file\n"
     "  task=classify|detect|segment  default: segment for a seg-* model, else detect for a\n"
     "                   .yaml/.yml/.json, a folder holding a data.yaml or a det-* model,\n"
     "                   else classify\n"
     "  channels=1|3     input channels of a new model (default 3)\n"
     "  dropout=P        dropout before the classifier of a new model (default 0)\n"
     "  progress=auto|bar|plain|off  live bar on a terminal, plain lines otherwise (auto)\n"
     "trainer keys (see 'vt info' for types, ranges and defaults):\n"
     "  @TRAINER_KEYS@\n"
     "  imgsz= also sets a new model's image size; seed= seeds shuffling and augmentation.\n"
     "\n"
     "Prints a progress bar (epoch, batch, loss, img/s, ETA) and one table row per epoch\n"
     "(loss, val loss, top-1, top-5 or P, R, mAP50, mAP50-95, lr, img/s, time).  The best\n"
     "epoch is chosen by top-1 or mAP50-95.  Ctrl-C stops after the current batch,\n"
     "saves the model and exits with code 4.\n"
     "example: vt train data=shapes epochs=10 imgsz=32 batch=32 optimizer=adamw lr0=0.003\n"},
    {"val",
     "usage: vt val model=FILE data=DIR [split=val|test|train] [batch= imgsz= device= workers=]\n"
     "Evaluate a saved model on a split of a dataset: loss, top-1 and top-5 accuracy, or for a\n"
     "detector precision, recall, mAP50 and mAP50-95 (COCO-style, 101-point).\n"
     "Other trainer keys are accepted (see 'vt info').\n"
     "example: vt val model=shapes.vtm data=shapes\n"},
    {"predict",
     "usage: vt predict model=FILE source=IMAGE|DIR [IMAGE ...] [top=1 conf=0.25 iou=0.7\n"
     "                  max_det=300 out=predictions color=0]\n"
     "Classify PNG or JPEG images with a saved model, or detect objects with a detector.\n"
     "source= takes files, and a folder stands for the images directly in it; image paths may\n"
     "also be given without source=.  Classifier: one line per image, 'path: class\n"
     "probability' (top=K: the K best classes).  Detector: 'path: N detections', then one line\n"
     "per box: class, score, x0 y0 x1 y1 in the image's pixels (score >= conf, class-aware NMS\n"
     "at IoU iou, at most max_det).  Segmenter: writes OUT/<name>_mask.png (class id per\n"
     "pixel, the image's size; out=DIR, default predictions) and with color=1 a colour-coded\n"
     "<name>_color.png, and prints each class's share of the pixels.\n"
     "example: vt predict model=shapes.vtm source=shapes/val/circle top=2\n"},
    {"estimate",
     "usage: vt estimate [key=value ...]\n"
     "Estimate the time and cost of a training run, from the model's layer list and a cost\n"
     "model of each GPU (see lib/estimate/estimate.c), and rank the catalog GPUs.\n"
     "\n"
     "  model=NAME|FILE  cls-n (default), cls-s, cls-m, cnn-small, or a saved .vtm\n"
     "  data=DIR         take the class and image counts from a dataset, or give them:\n"
     "  classes=N train=N val=N    (defaults 10, 1000, 0)\n"
     "  epochs=100 imgsz=640 batch=16 (total over all GPUs) gpus=1 (data-parallel)\n"
     "  precision=fp32|tf32|bf16|fp16|amp   optimizer=sgd|adamw   workers=8 (loader threads)\n"
     "  gpu=all          rank every catalog GPU (default); gpu=NAME one catalog GPU;\n"
     "                   gpu=local the calibrated local device (the CPU without a GPU); gpu=cpu\n"
     "  by=cost|time     ranking key of gpu=all (default cost)\n"
     "  deadline=HOURS   rank by cost among the GPUs that finish within the deadline\n"
     "  budget=USD       rank by time among the GPUs whose cost stays within the budget\n"
     "  catalog=CSV      merge a CSV of GPUs/prices into the catalog (vt info lists it)\n"
     "  calibrate=1      first measure a few training steps on the local device\n"
     "                   (device=cpu|0|1..., default the first GPU, else the CPU;\n"
     "                   seconds=S measurement budget, default 10; batches=B1,B2[,B3];\n"
     "                   local_gpu=NAME the catalog name of the local GPU, else guessed)\n"
     "  calibration=FILE load a saved calibration, or save it after calibrate=1\n"
     "  price=USD        hourly price of the local device (default 0)\n"
     "  top=N            show only the N best GPUs of the ranking\n"
     "estimator keys also accepted as is: mosaic, val_each, channels, load_ms, startup,\n"
     "  deadline_h, budget_usd, local_price, memory_fraction\n"
     "\n"
     "gpu=all prints a table sorted by the ranking: GPU, memory, whether the run fits (and the\n"
     "largest batch that does), seconds per epoch, total time (h:mm), price and cost in USD\n"
     "('-' when the catalog has no price), then advice for the dataset's size.\n"
     "example: vt estimate model=cls-s train=20000 val=2000 epochs=100 imgsz=224 batch=64\n"},
    {"check",
     "usage: vt check data=PATH [task=classify|detect|segment policy=drop|skip|fail min_size=10\n"
     "                           workers=4 show=100]\n"
     "Validate a dataset with vt_dataset_validate: an ImageFolder (classify), a YOLO data.yaml\n"
     "or a COCO .json (detect); for segment a YOLO-seg data.yaml, a data.yaml with masks:\n"
     "(class-id PNG masks, which are decoded and checked too) or a COCO .json with polygons.\n"
     "task defaults to\n"
     "detect when data ends in .yaml/.yml/.json or the folder holds a data.yaml, else classify.\n"
     "Every image is decoded (workers= threads); every problem is printed as 'file:line: ...'\n"
     "[code] (the first show=N of them): bad label lines, classes or coordinates out of range,\n"
     "zero-size and duplicate boxes, polygons of fewer than 3 points, missing or empty splits,\n"
     "names/nc mismatches, unreadable, corrupt, truncated, too small (min_size) or unsupported\n"
     "images.  Then instances per class and split, and per split: images, usable (under the\n"
     "policy), corrupt, skipped (policy=skip: images with a label problem), backgrounds,\n"
     "instances.  Exits 3 when an image is unreadable, or on the first problem with policy=fail\n"
     "(the message names file:line).  The dataset's files are only read.\n"
     "example: vt check data=shapes     vt check data=coco8/data.yaml policy=skip\n"},
    {"dataset",
     "usage: vt dataset split  data=PATH out=DIR [val=0.2 seed=0 task= policy=]\n"
     "       vt dataset subset data=PATH out=DIR fraction=F|count=N [seed=0 task= policy=]\n"
     "       vt dataset clone  data=DIR out=DIR\n"
     "       vt dataset stats  data=PATH [plot=FILE.png bins=10 task= policy=]\n"
     "Dataset tools.  Nothing of the dataset is changed: split and subset write list files\n"
     "(train.txt, val.txt, test.txt: absolute image paths) and a data.yaml naming them into the\n"
     "new or empty folder out=, for YOLO data.yaml datasets only (labels stay beside the\n"
     "images).  split shuffles the train images with the seed and puts round(val*n) of them in\n"
     "val; subset keeps a fraction (or count) of every split; the same seed gives the same\n"
     "lists.  policy=skip or fail applies while opening (see 'vt help check').  clone copies a\n"
     "dataset folder to a new or empty folder.  stats prints instances per class and split and,\n"
     "for detection, histograms of box width, height and sqrt(w*h) relative to the image;\n"
     "plot= writes a PNG of the label distribution.\n"
     "example: vt dataset split data=coco8/data.yaml out=coco8-split val=0.25 seed=1\n"},
    {"info",
     "usage: vt info [catalog=CSV]\n"
     "Print the library version and ABI, the GPUs this build can use, the GPU catalog of the\n"
     "estimator (catalog=CSV merges a CSV first) and every training and model option.\n"},
    {"synth",
     "usage: vt synth data=DIR [task=classify|detect|segment classes=4 train=100 val=40 imgsz=32\n"
     "                          seed=0]\n"
     "Write a synthetic dataset of coloured shapes on noisy backgrounds.  classify: ImageFolder,\n"
     "one shape per class, train/val images per class (classes 2..8, imgsz 16..512).  detect:\n"
     "YOLO layout with data.yaml, train/val images in all, max_objects=6 shapes per image\n"
     "(classes 3..8, imgsz 32..1024; defaults classes=3 train=200 val=50 imgsz=160).\n"
     "segment: the detect options and scenes, YOLO-seg polygons in labels/ and the same labels\n"
     "as class-id PNGs in masks/ (0 background, shape class k -> k+1).\n"},
    {"demo",
     "usage: vt demo [data=DIR save=FILE key=value ...]\n"
     "Generate a synthetic dataset in DIR (default demo-data) unless it exists, train cls-n on\n"
     "it (epochs=8 imgsz=32 batch=32 seed=1 optimizer=adamw lr0=0.003 unless given) and print\n"
     "the validation accuracy.  Takes the keys of 'vt train'.\n"
     "task=detect: a synthetic YOLO detection dataset (default demo-det, 3 shape classes,\n"
     "400 train / 80 val images of 64 px) and det-n (epochs=30 imgsz=64 batch=16 seed=1\n"
     "optimizer=adamw lr0=0.002 unless given); prints the validation mAP.\n"
     "task=segment: a synthetic segmentation dataset (default demo-seg, 300 + 60 images of\n"
     "64 px) and seg-n (epochs=15 imgsz=64 batch=16); prints the validation mIoU.\n"},
};

static const char *help_for(const char *cmd)
{
    for (size_t i = 0; i < sizeof help_texts / sizeof help_texts[0]; i++)
        if (!strcmp(help_texts[i].cmd, cmd)) return help_texts[i].text;
    return NULL;
}

static void print_help(FILE *f, const char *text)
{
    const char *mark = strstr(text, "@TRAINER_KEYS@");
    if (!mark) {
        fputs(text, f);
        return;
    }
    fwrite(text, 1, (size_t)(mark - text), f);
    fputs(trainer_keys(), f);
    fputs(mark + strlen("@TRAINER_KEYS@"), f);
}

static int cmd_help(const args *a, int argc, char **argv)
{
    (void)a;
    if (argc == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    const char *text = help_for(argv[0]);
    if (!text) {
        fprintf(stderr, "vt help: unknown command '%s'\n", argv[0]);
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    print_help(stdout, text);
    return 0;
}

static int task_value(const char *cmd, const char *v, const char *data, vt_task *task);

/* ---- progress ----------------------------------------------------------------------------- */

enum { PROG_OFF = 0, PROG_PLAIN = 1, PROG_BAR = 2 };

typedef struct {
    int mode;
    double t0, epoch_t0, last_draw;
    int header_done, bar_shown;
    int best_epoch;
    double best_top1;   /* classification: top-1; detection: mAP50-95 */
    int det;            /* detection columns */
    int seg;            /* segmentation columns */
} progress_state;

static int progress_mode(const char *cmd, const char *v, int *mode)
{
    if (!v || !strcmp(v, "auto")) *mode = isatty(STDOUT_FILENO) ? PROG_BAR : PROG_PLAIN;
    else if (!strcmp(v, "bar")) *mode = PROG_BAR;
    else if (!strcmp(v, "plain")) *mode = PROG_PLAIN;
    else if (!strcmp(v, "off") || !strcmp(v, "0")) *mode = PROG_OFF;
    else {
        fprintf(stderr, "vt %s: progress=%s: valid values: auto, bar, plain, off\n", cmd, v);
        return EXIT_USAGE;
    }
    return 0;
}

static void clear_bar(progress_state *ps)
{
    if (ps->bar_shown) {
        fputs("\r\033[K", stdout);
        ps->bar_shown = 0;
    }
}

static double metric_or(const vt_progress *p, vt_metric m, double dflt)
{
    double v;
    return vt_progress_metric(p, m, &v) == VT_OK ? v : dflt;
}

static int progress_cb(void *user, vt_event ev, const vt_progress *p)
{
    progress_state *ps = user;
    if (ps->mode == PROG_OFF) return 0;
    double t = now_s();
    int epoch = vt_progress_epoch(p), epochs = vt_progress_epochs(p);
    int batch = vt_progress_batch(p), batches = vt_progress_batches(p);
    if (ev == VT_EVENT_BATCH_END) {
        /* throttle: 10 redraws a second on a terminal, a line every 10 s otherwise */
        double every = ps->mode == PROG_BAR ? 0.1 : 10.0;
        if (t - ps->last_draw < every && batch != batches) return 0;
        if (ps->mode == PROG_PLAIN && batch == batches) return 0; /* the epoch row follows */
        ps->last_draw = t;
        double done = (double)(epoch - 1) * batches + batch, total = (double)epochs * batches;
        double elapsed = t - ps->t0, eta = done > 0 ? elapsed / done * (total - done) : -1;
        double loss = metric_or(p, VT_METRIC_LOSS, NAN), ips = metric_or(p, VT_METRIC_IMAGES_PER_SEC, 0);
        char etab[32];
        fmt_duration(eta, etab, sizeof etab);
        if (ps->mode == PROG_BAR) {
            char bar[21];
            int fill = batches > 0 ? (int)(20.0 * batch / batches) : 0;
            for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
            bar[20] = 0;
            printf("\repoch %d/%d [%s] %d/%d  loss %.4f  %.0f img/s  ETA %s\033[K", epoch, epochs,
                   bar, batch, batches, loss, ips, etab);
            ps->bar_shown = 1;
        } else {
            printf("epoch %d/%d batch %d/%d  loss %.4f  %.0f img/s  ETA %s\n", epoch, epochs,
                   batch, batches, loss, ips, etab);
        }
        fflush(stdout);
        return 0;
    }
    if (ev != VT_EVENT_EPOCH_END) return 0; /* e.g. a checkpoint was saved */
    /* one row of the summary table */
    clear_bar(ps);
    if (!ps->header_done && ps->seg) {
        ps->header_done = 1; /* the segmentation header is printed below */
    } else if (!ps->header_done) {
        if (ps->det)
            printf("%9s %10s %10s %7s %7s %7s %9s %10s %8s %9s\n", "epoch", "loss", "val_loss",
                   "P", "R", "mAP50", "mAP50-95", "lr", "img/s", "time");
        else
            printf("%9s %10s %10s %7s %7s %10s %8s %9s\n", "epoch", "loss", "val_loss", "top1",
                   "top5", "lr", "img/s", "time");
        ps->header_done = 1;
    }
    if (ps->seg) {
        if (ps->header_done == 1) {
            printf("%9s %10s %10s %7s %9s %10s %8s %9s\n", "epoch", "loss", "val_loss", "mIoU",
                   "pixel_acc", "lr", "img/s", "time");
            ps->header_done = 2;
        }
        char ep3[24], c3[3][16], tb3[32];
        static const vt_metric sm[3] = {VT_METRIC_VAL_LOSS, VT_METRIC_MIOU, VT_METRIC_PIXEL_ACC};
        double v3;
        snprintf(ep3, sizeof ep3, "%d/%d", epoch, epochs);
        for (int i = 0; i < 3; i++) {
            if (vt_progress_metric(p, sm[i], &v3) == VT_OK) snprintf(c3[i], 16, "%.4f", v3);
            else snprintf(c3[i], 16, "-");
        }
        if (vt_progress_metric(p, VT_METRIC_MIOU, &v3) == VT_OK &&
            (ps->best_epoch == 0 || v3 > ps->best_top1)) {
            ps->best_top1 = v3;
            ps->best_epoch = epoch;
        }
        snprintf(tb3, sizeof tb3, "%.1fs", t - ps->epoch_t0);
        ps->epoch_t0 = t;
        printf("%9s %10.4f %10s %7s %9s %10.6f %8.0f %9s\n", ep3, metric_or(p, VT_METRIC_LOSS, NAN),
               c3[0], c3[1], c3[2], metric_or(p, VT_METRIC_LR, 0),
               metric_or(p, VT_METRIC_IMAGES_PER_SEC, 0), tb3);
        fflush(stdout);
        return 0;
    }
    if (ps->det) {
        char ep2[24], cols[4][16], vl2[16], tb2[32];
        static const vt_metric mm[4] = {VT_METRIC_PRECISION, VT_METRIC_RECALL, VT_METRIC_MAP50,
                                        VT_METRIC_MAP50_95};
        double v2;
        snprintf(ep2, sizeof ep2, "%d/%d", epoch, epochs);
        if (vt_progress_metric(p, VT_METRIC_VAL_LOSS, &v2) == VT_OK)
            snprintf(vl2, sizeof vl2, "%.4f", v2);
        else snprintf(vl2, sizeof vl2, "-");
        for (int i = 0; i < 4; i++) {
            if (vt_progress_metric(p, mm[i], &v2) == VT_OK) snprintf(cols[i], 16, "%.4f", v2);
            else snprintf(cols[i], 16, "-");
        }
        if (vt_progress_metric(p, VT_METRIC_MAP50_95, &v2) == VT_OK &&
            (ps->best_epoch == 0 || v2 > ps->best_top1)) {
            ps->best_top1 = v2;
            ps->best_epoch = epoch;
        }
        snprintf(tb2, sizeof tb2, "%.1fs", t - ps->epoch_t0);
        ps->epoch_t0 = t;
        printf("%9s %10.4f %10s %7s %7s %7s %9s %10.6f %8.0f %9s\n", ep2,
               metric_or(p, VT_METRIC_LOSS, NAN), vl2, cols[0], cols[1], cols[2], cols[3],
               metric_or(p, VT_METRIC_LR, 0), metric_or(p, VT_METRIC_IMAGES_PER_SEC, 0), tb2);
        fflush(stdout);
        return 0;
    }
    char ep[24], vl[16], t1[16], t5[16], tb[32];
    double v;
    snprintf(ep, sizeof ep, "%d/%d", epoch, epochs);
    if (vt_progress_metric(p, VT_METRIC_VAL_LOSS, &v) == VT_OK) snprintf(vl, sizeof vl, "%.4f", v);
    else snprintf(vl, sizeof vl, "-");
    if (vt_progress_metric(p, VT_METRIC_TOP1, &v) == VT_OK) {
        snprintf(t1, sizeof t1, "%.4f", v);
        if (ps->best_epoch == 0 || v > ps->best_top1) {
            ps->best_top1 = v;
            ps->best_epoch = epoch;
        }
    } else snprintf(t1, sizeof t1, "-");
    if (vt_progress_metric(p, VT_METRIC_TOP5, &v) == VT_OK) snprintf(t5, sizeof t5, "%.4f", v);
    else snprintf(t5, sizeof t5, "-");
    /* time: wall time of the epoch, validation included */
    snprintf(tb, sizeof tb, "%.1fs", t - ps->epoch_t0);
    ps->epoch_t0 = t;
    printf("%9s %10.4f %10s %7s %7s %10.6f %8.0f %9s\n", ep, metric_or(p, VT_METRIC_LOSS, NAN),
           vl, t1, t5, metric_or(p, VT_METRIC_LR, 0), metric_or(p, VT_METRIC_IMAGES_PER_SEC, 0),
           tb);
    fflush(stdout);
    return 0;
}

static void log_cb(void *user, vt_log_level level, const char *msg)
{
    progress_state *ps = user;
    if (ps) clear_bar(ps);
    fflush(stdout);
    fprintf(stderr, "vt: %s: %s\n", level == VT_LOG_ERROR ? "error" : "warning", msg);
}

/* ---- train / demo ------------------------------------------------------------------------ */

#define TRAIN_TOOL_KEYS "data, model, save, task, channels, dropout, progress"

/* A model argument names a file when it exists, has a path separator or ends in .vtm. */
static int names_file(const char *model)
{
    size_t n = strlen(model);
    return strchr(model, '/') || (n > 4 && !strcmp(model + n - 4, ".vtm")) || is_file(model);
}

/* Check the trainer's keys and values before any slow work (opening a dataset, a model), so
 * usage errors come first: on a throw-away trainer of a tiny model. */
static int check_trainer_keys(args *a, const char *tool_keys)
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
    if (progress_mode(cmd, prog, &mode)) return EXIT_USAGE;
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
    if ((st = vt_dataset_open(&ds, tk, data))) {
        rc = fail(cmd, st, NULL);
        goto out;
    }
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
    if ((st = vt_trainer_create(&t, m, ds))) {
        rc = fail(cmd, st, NULL);
        goto out;
    }
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        if ((st = vt_trainer_set(t, a->kv[i].arg))) {
            rc = fail(cmd, st, vt_trainer_last_error(t));
            if (st == VT_ERR_UNKNOWN_OPTION)
                fprintf(stderr, "vt %s also takes: %s\n", cmd, TRAIN_TOOL_KEYS);
            goto out;
        }
    }
    progress_state ps;
    memset(&ps, 0, sizeof ps);
    ps.mode = mode;
    ps.det = tk == VT_TASK_DETECT;
    ps.seg = tk == VT_TASK_SEGMENT;
    vt_trainer_set_log(t, log_cb, &ps, VT_LOG_WARNING);
    vt_trainer_set_progress(t, progress_cb, &ps);
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
        fflush(stdout);
    }
    double t0 = now_s();
    ps.t0 = ps.epoch_t0 = t0;
    if (mode == PROG_PLAIN) ps.last_draw = t0; /* the first plain line after 10 s */
    catch_sigint(t);
    st = vt_trainer_run(t);
    release_sigint();
    clear_bar(&ps);
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
        if (ps.best_epoch)
            printf("; best %s %.4f at epoch %d", ps.det ? "mAP50-95" : ps.seg ? "mIoU" : "top1",
                   ps.best_top1, ps.best_epoch);
        printf("\n");
    }
    double top1, m50;
    if (ps.det && vt_trainer_metric(t, VT_METRIC_MAP50_95, &top1) == VT_OK &&
        vt_trainer_metric(t, VT_METRIC_MAP50, &m50) == VT_OK) {
        if (mode != PROG_OFF) printf("final validation mAP50 %.4f  mAP50-95 %.4f\n", m50, top1);
        if (top1_out) *top1_out = top1;
    } else if (ps.seg && vt_trainer_metric(t, VT_METRIC_MIOU, &top1) == VT_OK &&
               vt_trainer_metric(t, VT_METRIC_PIXEL_ACC, &m50) == VT_OK) {
        if (mode != PROG_OFF)
            printf("final validation mIoU %.4f  pixel accuracy %.4f\n", top1, m50);
        if (top1_out) *top1_out = top1;
    } else if (!ps.det && vt_trainer_metric(t, VT_METRIC_TOP1, &top1) == VT_OK) {
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

static int cmd_train(args *a)
{
    return train(a, NULL);
}

static int cmd_demo(args *a)
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

/* ---- val ---------------------------------------------------------------------------------- */

static int cmd_val(args *a)
{
    const char *cmd = a->cmd;
    const char *model = take(a, "model"), *data = take(a, "data"), *split = take(a, "split");
    if (!model || !data) {
        fprintf(stderr, "vt val: model=FILE and data=DIR are required (see 'vt help val')\n");
        return EXIT_USAGE;
    }
    vt_split sp = VT_SPLIT_VAL;
    if (split) {
        if (!strcmp(split, "train")) sp = VT_SPLIT_TRAIN;
        else if (!strcmp(split, "val")) sp = VT_SPLIT_VAL;
        else if (!strcmp(split, "test")) sp = VT_SPLIT_TEST;
        else {
            fprintf(stderr, "vt val: split=%s: valid values: train, val, test\n", split);
            return EXIT_USAGE;
        }
    }
    vt_model *m = NULL;
    vt_dataset *ds = NULL;
    vt_trainer *t = NULL;
    int rc;
    if ((rc = check_trainer_keys(a, "model, data, split"))) return rc;
    vt_status st = vt_model_load(&m, model);
    if (st) return fail(cmd, st, NULL);
    if ((st = vt_dataset_open(&ds, vt_model_task(m), data))) {
        rc = fail(cmd, st, NULL);
        goto out;
    }
    if (vt_dataset_num_images(ds, sp) == 0) {
        fprintf(stderr, "vt val: %s has no %s split\n", data, split ? split : "val");
        rc = EXIT_DATA;
        goto out;
    }
    if ((st = vt_trainer_create(&t, m, ds))) {
        rc = fail(cmd, st, NULL);
        goto out;
    }
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        if ((st = vt_trainer_set(t, a->kv[i].arg))) {
            rc = fail(cmd, st, vt_trainer_last_error(t));
            if (st == VT_ERR_UNKNOWN_OPTION) fprintf(stderr, "vt val also takes: model, data, split\n");
            goto out;
        }
    }
    vt_trainer_set_log(t, log_cb, NULL, VT_LOG_WARNING);
    double t0 = now_s();
    if ((st = vt_trainer_validate(t, sp))) {
        rc = fail(cmd, st, vt_trainer_last_error(t));
        goto out;
    }
    if (vt_model_task(m) == VT_TASK_SEGMENT) {
        double v[3] = {NAN, NAN, NAN};
        vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &v[0]);
        vt_trainer_metric(t, VT_METRIC_MIOU, &v[1]);
        vt_trainer_metric(t, VT_METRIC_PIXEL_ACC, &v[2]);
        printf("%s (%d images): loss %.4f  mIoU %.4f  pixel accuracy %.4f  (%.1fs)\n",
               split ? split : "val", vt_dataset_num_images(ds, sp), v[0], v[1], v[2],
               now_s() - t0);
        goto out;
    }
    if (vt_model_task(m) == VT_TASK_DETECT) {
        double v[5] = {NAN, NAN, NAN, NAN, NAN};
        vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &v[0]);
        vt_trainer_metric(t, VT_METRIC_PRECISION, &v[1]);
        vt_trainer_metric(t, VT_METRIC_RECALL, &v[2]);
        vt_trainer_metric(t, VT_METRIC_MAP50, &v[3]);
        vt_trainer_metric(t, VT_METRIC_MAP50_95, &v[4]);
        printf("%s (%d images): loss %.4f  P %.4f  R %.4f  mAP50 %.4f  mAP50-95 %.4f  (%.1fs)\n",
               split ? split : "val", vt_dataset_num_images(ds, sp), v[0], v[1], v[2], v[3], v[4],
               now_s() - t0);
        goto out;
    }
    double top1 = NAN, top5 = NAN, loss = NAN;
    vt_trainer_metric(t, VT_METRIC_TOP1, &top1);
    vt_trainer_metric(t, VT_METRIC_TOP5, &top5);
    vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &loss);
    printf("%s (%d images): loss %.4f  top1 %.4f  top5 %.4f  (%.1fs)\n", split ? split : "val",
           vt_dataset_num_images(ds, sp), loss, top1, top5, now_s() - t0);
out:
    vt_trainer_destroy(t);
    vt_dataset_destroy(ds);
    vt_model_destroy(m);
    return rc;
}

/* ---- predict ---------------------------------------------------------------------------- */

static int has_image_ext(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    return !strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg");
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The image files directly in dir, sorted; NULL on error.  *n gets the count. */
static char **list_images(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    char **v = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_image_ext(e->d_name)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(v[*n] = malloc(len))) break;
        snprintf(v[*n], len, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v ? v : calloc(1, sizeof *v);
}

/* One line per detection: path, class, score, box corners in the image's pixels. */
static int detect_one(vt_model *m, const char *path, float conf, float iou, int max_det)
{
    int n = 0, cap = 64, *cls = NULL;
    float *sc = NULL, *box = NULL;
    vt_status st;
    for (;;) {
        cls = malloc((size_t)cap * sizeof *cls);
        sc = malloc((size_t)cap * sizeof *sc);
        box = malloc((size_t)cap * 4 * sizeof *box);
        if (!cls || !sc || !box) {
            st = VT_ERR_OUT_OF_MEMORY;
            break;
        }
        st = vt_model_detect_file(m, path, conf, iou, max_det, cls, sc, box, cap, &n);
        if (st != VT_ERR_BUFFER_TOO_SMALL) break;
        free(cls);
        free(sc);
        free(box);
        cap = n;
    }
    int rc = 0;
    if (st) rc = fail("predict", st, vt_model_last_error(m));
    else {
        printf("%s: %d detection%s\n", path, n, n == 1 ? "" : "s");
        for (int k = 0; k < n; k++) {
            const char *name = vt_model_class_name(m, cls[k]);
            char idx[16];
            snprintf(idx, sizeof idx, "class%d", cls[k]);
            printf("  %-12s %.4f  %.1f %.1f %.1f %.1f\n", name ? name : idx, sc[k], box[4 * k],
                   box[4 * k + 1], box[4 * k + 2], box[4 * k + 3]);
        }
    }
    free(cls);
    free(sc);
    free(box);
    return rc;
}

/* Segmentation: <out>/<stem>_mask.png (one byte a pixel: the class id) and, with color=1,
 * <stem>_color.png (the same mask colour-coded for viewing). */
static int segment_one(vt_model *m, const char *path, const char *out, int color)
{
    int w = 0, h = 0;
    vt_status st = vt_model_segment_file(m, path, NULL, 0, &w, &h);
    if (st != VT_ERR_BUFFER_TOO_SMALL) return fail("predict", st ? st : VT_ERR_INTERNAL,
                                                   vt_model_last_error(m));
    uint8_t *mask = malloc((size_t)w * h);
    if (!mask) return fail("predict", VT_ERR_OUT_OF_MEMORY, "out of memory");
    st = vt_model_segment_file(m, path, mask, (size_t)w * h, &w, &h);
    if (st) {
        free(mask);
        return fail("predict", st, vt_model_last_error(m));
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char stem[1024], file[4096];
    snprintf(stem, sizeof stem, "%s", base);
    char *dot = strrchr(stem, '.');
    if (dot) *dot = 0;
    mkdir(out, 0777);
    snprintf(file, sizeof file, "%s/%s_mask.png", out, stem);
    long counts[256] = {0};
    for (size_t i = 0; i < (size_t)w * h; i++) counts[mask[i]]++;
    st = vt_png_save(file, mask, w, h, 1, (size_t)w);
    int rc = st ? fail("predict", st, NULL) : 0;
    if (!rc) {
        printf("%s: %dx%d -> %s", path, w, h, file);
        for (int c = 0; c < vt_model_num_classes(m) && c < 256; c++)
            if (counts[c]) {
                const char *name = vt_model_class_name(m, c);
                printf("  %s %.1f%%", name ? name : "?", 100.0 * counts[c] / ((double)w * h));
            }
        printf("\n");
    }
    if (!rc && color) {
        /* a colour-coded copy of the mask: class 0 black, then a fixed palette */
        static const uint8_t pal[7][3] = {{230, 25, 75}, {60, 180, 75},  {255, 225, 25},
                                          {0, 130, 200}, {245, 130, 48}, {145, 30, 180},
                                          {70, 240, 240}};
        uint8_t *rgb = malloc((size_t)w * h * 3);
        if (!rgb) st = VT_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; rgb && i < (size_t)w * h; i++)
            for (int k = 0; k < 3; k++)
                rgb[3 * i + k] = mask[i] == 0 ? 0 : pal[(mask[i] - 1) % 7][k];
        snprintf(file, sizeof file, "%s/%s_color.png", out, stem);
        if (rgb) st = vt_png_save(file, rgb, w, h, 3, (size_t)w * 3);
        if (st) rc = fail("predict", st, NULL);
        free(rgb);
    }
    free(mask);
    return rc;
}

static int predict_one(vt_model *m, const char *path, float *scores, int k, int top)
{
    vt_status st = vt_model_predict_file(m, path, scores, k);
    if (st) return fail("predict", st, vt_model_last_error(m));
    printf("%s:", path);
    for (int r = 0; r < top; r++) { /* selection of the r-th best */
        int best = -1;
        for (int c = 0; c < k; c++)
            if (scores[c] >= 0 && (best < 0 || scores[c] > scores[best])) best = c;
        if (best < 0) break;
        const char *name = vt_model_class_name(m, best);
        char idx[16];
        snprintf(idx, sizeof idx, "class%d", best);
        printf(" %s %.4f", name ? name : idx, scores[best]);
        scores[best] = -1;
    }
    printf("\n");
    return 0;
}

static int cmd_predict(args *a)
{
    const char *model = take(a, "model"), *top_s = take(a, "top");
    const char *conf_s = take(a, "conf"), *iou_s = take(a, "iou"), *maxdet_s = take(a, "max_det");
    const char *out_s = take(a, "out"), *color_s = take(a, "color");
    take(a, "source");
    int rc, color = 0;
    if ((rc = reject_unknown(a, "model, source, top, conf, iou, max_det, out, color"))) return rc;
    if ((rc = flag_value(a->cmd, "color", color_s, &color))) return rc;
    if (!model || a->nsources == 0) {
        fprintf(stderr, "vt predict: model=FILE and source=IMAGE|DIR are required (see 'vt help "
                        "predict')\n");
        return EXIT_USAGE;
    }
    long top = 1, max_det = 300;
    double conf = 0.25, iou = 0.7;
    if ((rc = int_value(a->cmd, "top", top_s, 1, 1000, &top)) ||
        (rc = int_value(a->cmd, "max_det", maxdet_s, 1, 100000, &max_det)) ||
        (rc = num_value(a->cmd, "conf", conf_s, 0, &conf)) ||
        (rc = num_value(a->cmd, "iou", iou_s, 0, &iou)))
        return rc;
    vt_model *m;
    vt_status st = vt_model_load(&m, model);
    if (st) return fail(a->cmd, st, NULL);
    if (vt_model_task(m) == VT_TASK_SEGMENT) {
        for (int i = 0; i < a->nsources; i++) {
            const char *src = a->sources[i];
            int n = 1;
            char **files = is_dir(src) ? list_images(src, &n) : NULL;
            if (is_dir(src) && n == 0) {
                fprintf(stderr, "vt predict: no .png/.jpg/.jpeg images in %s\n", src);
                rc = EXIT_DATA;
            }
            for (int j = 0; j < n; j++) {
                int r = segment_one(m, files ? files[j] : src, out_s ? out_s : "predictions",
                                    color);
                if (r) rc = r;
                if (files) free(files[j]);
            }
            free(files);
        }
        vt_model_destroy(m);
        return rc;
    }
    if (vt_model_task(m) == VT_TASK_DETECT) {
        for (int i = 0; i < a->nsources; i++) {
            const char *src = a->sources[i];
            int n = 1;
            char **files = is_dir(src) ? list_images(src, &n) : NULL;
            if (is_dir(src) && n == 0) {
                fprintf(stderr, "vt predict: no .png/.jpg/.jpeg images in %s\n", src);
                rc = EXIT_DATA;
            }
            for (int j = 0; j < n; j++) {
                int r = detect_one(m, files ? files[j] : src, (float)conf, (float)iou,
                                   (int)max_det);
                if (r) rc = r;
                if (files) free(files[j]);
            }
            free(files);
        }
        vt_model_destroy(m);
        return rc;
    }
    int k = vt_model_num_classes(m);
    if (top > k) top = k;
    float *scores = malloc((size_t)k * sizeof *scores);
    if (!scores) {
        vt_model_destroy(m);
        return fail(a->cmd, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < a->nsources; i++) {
        const char *src = a->sources[i];
        if (is_dir(src)) {
            int n;
            char **files = list_images(src, &n);
            if (n == 0) {
                fprintf(stderr, "vt predict: no .png/.jpg/.jpeg images in %s\n", src);
                rc = EXIT_DATA;
            }
            for (int j = 0; j < n; j++) {
                int r = predict_one(m, files[j], scores, k, (int)top);
                if (r) rc = r;
                free(files[j]);
            }
            free(files);
        } else {
            int r = predict_one(m, src, scores, k, (int)top);
            if (r) rc = r;
        }
    }
    free(scores);
    vt_model_destroy(m);
    return rc;
}

/* ---- synth -------------------------------------------------------------------------------- */

/* Append " key=value" to an options string when the value is given. */
static void add_opt(char *opts, size_t cap, const char *key, const char *v)
{
    size_t used = strlen(opts);
    if (v && used < cap) snprintf(opts + used, cap - used, "%s%s=%s", used ? " " : "", key, v);
}


static int cmd_synth(args *a)
{
    const char *data = take(a, "data"), *task_s = take(a, "task");
    static const char *const keys[] = {"classes", "train", "val", "imgsz", "seed", "max_objects"};
    char opts[512] = "";
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        add_opt(opts, sizeof opts, keys[i], take(a, keys[i]));
    int rc;
    if ((rc = reject_unknown(a, "data, task, classes, train, val, imgsz, seed, max_objects")))
        return rc;
    if (!data) {
        fprintf(stderr, "vt synth: data=DIR is required (see 'vt help synth')\n");
        return EXIT_USAGE;
    }
    vt_task task = VT_TASK_CLASSIFY;
    if (task_s && !strcmp(task_s, "detect")) task = VT_TASK_DETECT;
    else if (task_s && !strcmp(task_s, "segment")) task = VT_TASK_SEGMENT;
    else if (task_s && strcmp(task_s, "classify")) {
        fprintf(stderr, "vt synth: task=%s: valid tasks: classify, detect, segment\n", task_s);
        return EXIT_USAGE;
    }
    vt_status st = vt_synth_generate(data, task, opts);
    if (st) return fail(a->cmd, st, NULL);
    printf("wrote a synthetic %s dataset to %s\n",
           task == VT_TASK_DETECT ? "detection"
           : task == VT_TASK_SEGMENT ? "segmentation" : "classification", data);
    return 0;
}

/* ---- check and dataset tools -------------------------------------------------------------- */

static const char *const split_names[3] = {"train", "val", "test"};

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcasecmp(s + n - k, suffix);
}

/* task=classify|detect|segment; default: detect for a .yaml/.yml/.json or a folder holding a
 * data.yaml, else classify. */
static int task_value(const char *cmd, const char *v, const char *data, vt_task *task)
{
    if (!v) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s/data.yaml", data ? data : ".");
        *task = data && (ends_with(data, ".yaml") || ends_with(data, ".yml") ||
                         ends_with(data, ".json") || is_file(buf))
                    ? VT_TASK_DETECT
                    : VT_TASK_CLASSIFY;
        return 0;
    }
    if (!strcmp(v, "classify")) *task = VT_TASK_CLASSIFY;
    else if (!strcmp(v, "detect")) *task = VT_TASK_DETECT;
    else if (!strcmp(v, "segment")) *task = VT_TASK_SEGMENT;
    else {
        fprintf(stderr, "vt %s: task=%s: valid tasks: classify, detect, segment\n", cmd, v);
        return EXIT_USAGE;
    }
    return 0;
}

static const char *task_name(vt_task t)
{
    return t == VT_TASK_DETECT ? "detection" : t == VT_TASK_SEGMENT ? "segmentation"
                                                                     : "classification";
}

/* The class table: one row per class, a column per split ("-" for an absent split). */
static int print_class_table(int k, const char *(*name)(const void *, int), const void *h,
                              const int64_t *counts, const int64_t total[3], const char *what)
{
    size_t w = 11; /* "backgrounds" */
    for (int c = 0; c < k; c++)
        if (strlen(name(h, c)) > w) w = strlen(name(h, c));
    if (w > 40) w = 40;
    printf("  %-*s %8s %8s %8s   (%s)\n", (int)w, "class", "train", "val", "test", what);
    for (int c = 0; c < k; c++) {
        printf("  %-*.*s", (int)w, (int)w, name(h, c));
        for (int s = 0; s < 3; s++)
            if (total[s]) printf(" %8lld", (long long)counts[c * 3 + s]);
            else printf(" %8s", "-");
        printf("\n");
    }
    return (int)w;
}

static const char *report_class(const void *r, int c) { return vt_report_class_name(r, c); }
static const char *dataset_class(const void *d, int c) { return vt_dataset_class_name(d, c); }

static int cmd_check(args *a)
{
    const char *data = take(a, "data"), *task_s = take(a, "task"), *show_s = take(a, "show");
    char opts[256] = "";
    add_opt(opts, sizeof opts, "policy", take(a, "policy"));
    add_opt(opts, sizeof opts, "min_size", take(a, "min_size"));
    add_opt(opts, sizeof opts, "workers", take(a, "workers"));
    int rc;
    long show = 100;
    vt_task task;
    if ((rc = reject_unknown(a, "data, task, policy, min_size, workers, show"))) return rc;
    if ((rc = int_value(a->cmd, "show", show_s, 0, 1000000000, &show))) return rc;
    if (!data) {
        fprintf(stderr, "vt check: data=PATH is required (see 'vt help check')\n");
        return EXIT_USAGE;
    }
    if ((rc = task_value(a->cmd, task_s, data, &task))) return rc;
    vt_report *r;
    vt_status st = vt_dataset_validate(&r, task, data, opts);
    if (st) return fail(a->cmd, st, NULL);
    int k = vt_report_num_classes(r);
    printf("dataset %s: %s, %d classes\n", data, task_name(task), k);
    int64_t *counts = calloc((size_t)k * 3 + 1, sizeof *counts), total[3];
    if (!counts) {
        vt_report_destroy(r);
        return fail(a->cmd, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int s = 0; s < 3; s++) {
        total[s] = vt_report_count(r, VT_COUNT_IMAGES, (vt_split)s);
        for (int c = 0; c < k; c++) counts[c * 3 + s] = vt_report_class_instances(r, (vt_split)s, c);
    }
    int w = print_class_table(k, report_class, r, counts, total,
                              task == VT_TASK_CLASSIFY ? "usable images" : "instances");
    static const struct {
        vt_count what;
        const char *name;
    } rows[] = {{VT_COUNT_IMAGES, "images"},           {VT_COUNT_USABLE, "usable"},
                {VT_COUNT_CORRUPT, "corrupt"},         {VT_COUNT_SKIPPED, "skipped"},
                {VT_COUNT_BACKGROUNDS, "backgrounds"}, {VT_COUNT_INSTANCES, "instances"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (task == VT_TASK_CLASSIFY && rows[i].what == VT_COUNT_BACKGROUNDS) continue;
        printf("  %-*s", w, rows[i].name);
        for (int s = 0; s < 3; s++)
            printf(" %8lld", (long long)vt_report_count(r, rows[i].what, (vt_split)s));
        printf("\n");
    }
    int np = vt_report_num_problems(r);
    if (np) printf("problems (%d):\n", np);
    for (int i = 0; i < np && i < show; i++) {
        const char *msg;
        int code;
        vt_report_problem(r, i, NULL, NULL, &code, &msg);
        printf("  %s [%s]\n", msg, vt_problem_code_name(code));
    }
    if (np > show) printf("  ... and %ld more (show=N prints more)\n", np - show);
    int64_t corrupt = 0, images = 0;
    for (int s = 0; s < 3; s++) {
        corrupt += vt_report_count(r, VT_COUNT_CORRUPT, (vt_split)s);
        images += vt_report_count(r, VT_COUNT_IMAGES, (vt_split)s);
    }
    printf("%lld images decoded: %lld unreadable; %d problem%s\n", (long long)images,
           (long long)corrupt, np, np == 1 ? "" : "s");
    printf("advice: %s\n", vt_estimate_dataset_advice(vt_report_count(r, VT_COUNT_USABLE,
                                                                       VT_SPLIT_TRAIN)));
    free(counts);
    vt_report_destroy(r);
    return corrupt ? EXIT_DATA : 0;
}

/* Open data= for a dataset tool (task= and policy= as for check). */
static int open_for_tool(args *a, const char *data, vt_dataset **ds)
{
    const char *task_s = take(a, "task"), *policy = take(a, "policy");
    vt_task task;
    int rc = task_value(a->cmd, task_s, data, &task);
    if (rc) return rc;
    char opts[128] = "";
    add_opt(opts, sizeof opts, "policy", policy);
    vt_status st = vt_dataset_open_ex(ds, task, data, opts);
    return st ? fail(a->cmd, st, NULL) : 0;
}

static int dataset_split_subset(args *a, int is_split)
{
    const char *data = take(a, "data"), *out = take(a, "out");
    char opts[256] = "";
    if (is_split) add_opt(opts, sizeof opts, "val", take(a, "val"));
    else {
        add_opt(opts, sizeof opts, "fraction", take(a, "fraction"));
        add_opt(opts, sizeof opts, "count", take(a, "count"));
    }
    add_opt(opts, sizeof opts, "seed", take(a, "seed"));
    vt_dataset *ds = NULL;
    int rc = reject_unknown(a, is_split ? "data, out, val, seed, task, policy"
                                        : "data, out, fraction, count, seed, task, policy");
    if (rc) return rc;
    if (!data || !out) {
        fprintf(stderr, "%s: data=PATH and out=DIR are required (see 'vt help dataset')\n",
                a->cmd);
        return EXIT_USAGE;
    }
    if ((rc = open_for_tool(a, data, &ds))) return rc;
    vt_status st = is_split ? vt_dataset_split(ds, out, opts) : vt_dataset_subset(ds, out, opts);
    if (st) {
        vt_dataset_destroy(ds);
        return fail(a->cmd, st, NULL);
    }
    vt_dataset *nd;
    st = vt_dataset_open(&nd, VT_TASK_DETECT, out);
    if (st) {
        vt_dataset_destroy(ds);
        return fail(a->cmd, st, NULL);
    }
    printf("wrote %s/data.yaml:", out);
    for (int s = 0; s < 3; s++)
        if (vt_dataset_num_images(nd, (vt_split)s))
            printf(" %s %d", split_names[s], vt_dataset_num_images(nd, (vt_split)s));
    printf(" images (the images and labels stay where they are)\n");
    vt_dataset_destroy(nd);
    vt_dataset_destroy(ds);
    return 0;
}

static int dataset_clone(args *a)
{
    const char *data = take(a, "data"), *out = take(a, "out");
    int rc = reject_unknown(a, "data, out");
    if (rc) return rc;
    if (!data || !out) {
        fprintf(stderr, "%s: data=DIR and out=DIR are required (see 'vt help dataset')\n", a->cmd);
        return EXIT_USAGE;
    }
    vt_status st = vt_dataset_clone(data, out);
    if (st) return fail(a->cmd, st, NULL);
    printf("copied %s to %s\n", data, out);
    return 0;
}

static int dataset_stats(args *a)
{
    const char *data = take(a, "data"), *plot = take(a, "plot"), *bins_s = take(a, "bins");
    long bins = 10;
    vt_dataset *ds = NULL;
    int rc = reject_unknown(a, "data, plot, bins, task, policy");
    if (!rc) rc = int_value(a->cmd, "bins", bins_s, 1, 100, &bins);
    if (rc) return rc;
    if (!data) {
        fprintf(stderr, "%s: data=PATH is required (see 'vt help dataset')\n", a->cmd);
        return EXIT_USAGE;
    }
    if ((rc = open_for_tool(a, data, &ds))) return rc;
    int k = vt_dataset_num_classes(ds);
    vt_task task = vt_dataset_task(ds);
    int64_t *counts = calloc((size_t)k * 3 + 1, sizeof *counts), *tmp = calloc((size_t)k + 1, 8);
    int64_t *h = calloc((size_t)bins * 3, sizeof *h), total[3];
    vt_status st = counts && tmp && h ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    for (int s = 0; !st && s < 3; s++) {
        total[s] = vt_dataset_num_images(ds, (vt_split)s);
        st = vt_dataset_class_histogram(ds, (vt_split)s, tmp, k);
        for (int c = 0; !st && c < k; c++) counts[c * 3 + s] = tmp[c];
    }
    if (!st) {
        printf("dataset %s: %s, %d classes; images: train %lld, val %lld, test %lld\n", data,
               task_name(task), k, (long long)total[0], (long long)total[1], (long long)total[2]);
        print_class_table(k, dataset_class, ds, counts, total,
                          task == VT_TASK_CLASSIFY ? "images" : "instances");
    }
    for (int s = 0; !st && task != VT_TASK_CLASSIFY && s < 3; s++) {
        if (!total[s]) continue;
        for (int m = 0; !st && m < 3; m++)
            st = vt_dataset_box_histogram(ds, (vt_split)s, (vt_box_measure)(m + 1), h + m * bins,
                                          (int)bins);
        if (st) break;
        printf("box sizes, %s (relative to the image; bins of %.3g):\n", split_names[s],
               1.0 / bins);
        printf("  %-11s %8s %8s %8s\n", "bin", "width", "height", "sqrt(w*h)");
        for (int b = 0; b < bins; b++)
            printf("  %.3f-%.3f %8lld %8lld %8lld\n", (double)b / bins, (double)(b + 1) / bins,
                   (long long)h[b], (long long)h[bins + b], (long long)h[2 * bins + b]);
    }
    if (!st && plot) {
        st = vt_dataset_plot_labels(ds, plot);
        if (!st) printf("wrote %s\n", plot);
    }
    free(counts);
    free(tmp);
    free(h);
    vt_dataset_destroy(ds);
    return st ? fail(a->cmd, st, NULL) : 0;
}

/* "vt dataset SUB": main() passes the sub-command as the command name "dataset SUB". */
static int cmd_dataset(args *a)
{
    const char *sub = a->cmd + strlen("dataset ");
    if (!strcmp(sub, "split")) return dataset_split_subset(a, 1);
    if (!strcmp(sub, "subset")) return dataset_split_subset(a, 0);
    if (!strcmp(sub, "clone")) return dataset_clone(a);
    if (!strcmp(sub, "stats")) return dataset_stats(a);
    fprintf(stderr, "vt dataset: unknown sub-command '%s'; valid: split, subset, clone, stats\n",
            sub);
    return EXIT_USAGE;
}

/* ---- info ------------------------------------------------------------------------------- */

static void print_catalog(const vt_catalog *cat)
{
    int n = vt_catalog_count(cat);
    printf("GPU catalog (%d GPUs; the estimator's; merge a CSV with catalog=FILE):\n", n);
    printf("  %-22s %-10s %-5s %4s %7s %8s %7s %7s %7s %6s\n", "name", "arch", "tier", "cc",
           "mem GB", "BW GB/s", "fp32", "tf32", "bf16", "USD/h");
    static const vt_gpu_field fields[] = {VT_GPU_MEMORY_GB, VT_GPU_BANDWIDTH_GBS,
                                          VT_GPU_FP32_TFLOPS, VT_GPU_TF32_TFLOPS,
                                          VT_GPU_BF16_TFLOPS, VT_GPU_PRICE_USD_H};
    static const int widths[] = {7, 8, 7, 7, 7, 6};
    static const char *const fmts[] = {"%.0f", "%.0f", "%.1f", "%.1f", "%.1f", "%.2f"};
    for (int i = 0; i < n; i++) {
        const char *arch = vt_catalog_gpu_arch(cat, i), *tier = vt_catalog_gpu_tier(cat, i);
        double cc;
        char ccb[16] = "-";
        if (vt_catalog_gpu_value(cat, i, VT_GPU_COMPUTE_CAPABILITY, &cc) == VT_OK)
            snprintf(ccb, sizeof ccb, "%.1f", cc);
        printf("  %-22s %-10s %-5s %4s", vt_catalog_gpu_name(cat, i), arch && *arch ? arch : "-",
               tier && *tier ? tier : "-", ccb);
        for (int f = 0; f < 6; f++) {
            double v;
            char b[32] = "-";
            if (vt_catalog_gpu_value(cat, i, fields[f], &v) == VT_OK) snprintf(b, sizeof b, fmts[f], v);
            printf(" %*s", widths[f], b);
        }
        printf("\n");
    }
    printf("  (TFLOPS are dense peaks; '-' where the catalog has no value)\n");
}

static int cmd_info(args *a)
{
    const char *csv = take(a, "catalog");
    int rc;
    if ((rc = reject_unknown(a, "catalog"))) return rc;
    vt_catalog *cat = NULL;
    vt_status st = vt_catalog_create(&cat);
    if (st) return fail(a->cmd, st, NULL);
    if (csv && (st = vt_catalog_load_csv(cat, csv))) {
        rc = fail(a->cmd, st, vt_catalog_last_error(cat));
        vt_catalog_destroy(cat);
        return rc;
    }
    printf("libvisiontrain %s (ABI %u)\n", vt_version_string(), vt_abi_version());
    int ngpu = vt_device_count();
    if (ngpu == 0) printf("devices: cpu (no GPU: this build has no CUDA, or no GPU/driver found)\n");
    else {
        printf("devices: cpu, %d GPU%s\n", ngpu, ngpu == 1 ? "" : "s");
        for (int i = 0; i < ngpu; i++) {
            char name[256];
            int ma = 0, mi = 0;
            uint64_t total = 0, freeb = 0;
            if (vt_device_info(i, name, sizeof name, &ma, &mi, &total, &freeb))
                printf("  device=%d: %s\n", i, vt_last_error());
            else
                printf("  device=%d: %s, compute capability %d.%d, %.1f GB (%.1f GB free)\n", i,
                       name, ma, mi, total / 1e9, freeb / 1e9);
        }
    }
    printf("\n");
    print_catalog(cat);
    vt_catalog_destroy(cat);
    printf("\ntraining options (vt train/val key=value):\n");
    for (int pass = 0; pass < 2; pass++) {
        if (pass) printf("model options (vt train, for a new model):\n");
        for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
            if ((id >= 300) != pass) continue;
            const char *key, *help;
            vt_option_type type;
            double lo, hi;
            if (vt_option_info((vt_option)id, &key, &type, &lo, &hi, &help)) continue;
            char range[64] = "";
            if (type != VT_OPTION_STRING)
                snprintf(range, sizeof range, lo == floor(lo) && hi == floor(hi) && hi < 1e18
                         ? "%.0f..%.0f" : "%g..%g", lo, hi);
            printf("  %-16s %-6s %-20s %s\n", key,
                   type == VT_OPTION_INT ? "int" : type == VT_OPTION_FLOAT ? "float" : "string",
                   range, help);
        }
    }
    printf("estimator keys: see 'vt help estimate'\n");
    return 0;
}

/* ---- estimate ----------------------------------------------------------------------------- */

static void est_log(void *user, vt_log_level level, const char *msg)
{
    (void)user;
    fprintf(stderr, "vt estimate: %s%s\n", level == VT_LOG_ERROR ? "error: " :
                    level == VT_LOG_WARNING ? "warning: " : "", msg);
}

#define EST_TOOL_KEYS                                                                            \
    "model, data, budget, deadline, catalog, calibrate, calibration, device, seconds, batches, " \
    "local_gpu, price, by, top"

static int est_result(const vt_estimator *e, int gi, vt_est_result r, double *v)
{
    vt_status st = gi < 0 ? vt_estimator_result(e, r, v) : vt_estimator_rank_result(e, gi, r, v);
    return st == VT_OK;
}

static void print_estimate_detail(const vt_estimator *e, const char *where)
{
    double v;
    char b[64];
    printf("estimate on %s:\n", where);
#define ROW(label, r, fmt, scale)                                                             \
    do {                                                                                      \
        if (est_result(e, -1, r, &v)) printf("  %-28s " fmt "\n", label, v * (scale));        \
        else printf("  %-28s -\n", label);                                                    \
    } while (0)
    ROW("parameters", VT_EST_PARAMS, "%.0f", 1);
    ROW("train GFLOPs / image", VT_EST_TRAIN_FLOPS_PER_IMAGE, "%.3f", 1e-9);
    ROW("step (s)", VT_EST_STEP_SECONDS, "%.4f", 1);
    ROW("  compute (s)", VT_EST_COMPUTE_SECONDS_PER_STEP, "%.4f", 1);
    ROW("  loader (s)", VT_EST_LOADER_SECONDS_PER_STEP, "%.4f", 1);
    if (est_result(e, -1, VT_EST_LOADER_BOUND, &v) && v > 0)
        printf("  %-28s %s\n", "", "loading bounds the step: add workers");
    ROW("steps / epoch", VT_EST_STEPS_PER_EPOCH, "%.0f", 1);
    ROW("train s / epoch", VT_EST_TRAIN_SECONDS_PER_EPOCH, "%.1f", 1);
    ROW("val s / epoch", VT_EST_VAL_SECONDS_PER_EPOCH, "%.1f", 1);
    ROW("s / epoch", VT_EST_EPOCH_SECONDS, "%.1f", 1);
    if (est_result(e, -1, VT_EST_TOTAL_SECONDS, &v))
        printf("  %-28s %s (h:mm, %.0f s)\n", "total time", fmt_hmm(v, b, sizeof b), v);
    ROW("price (USD/h)", VT_EST_USD_PER_HOUR, "%.2f", 1);
    ROW("cost (USD)", VT_EST_COST_USD, "%.2f", 1);
    ROW("peak memory / device (GB)", VT_EST_PEAK_MEMORY_BYTES, "%.2f", 1e-9);
    ROW("usable memory / device (GB)", VT_EST_DEVICE_MEMORY_BYTES, "%.2f", 1e-9);
    if (est_result(e, -1, VT_EST_FITS, &v)) printf("  %-28s %s\n", "fits", v > 0 ? "yes" : "NO");
    ROW("largest batch that fits", VT_EST_MAX_BATCH, "%.0f", 1);
#undef ROW
}

/* The catalog entry of local GPU `device`, or -1: its CUDA name ("NVIDIA H100 80GB HBM3") as
 * is, else without a leading "NVIDIA "/"Tesla " word, else the catalog names that this name
 * starts with or that start with it, closest in memory first.  A guess: local_gpu= overrides. */
static int local_catalog_gpu(const vt_catalog *cat, int device)
{
    char name[256];
    uint64_t total = 0;
    if (vt_device_info(device, name, sizeof name, NULL, NULL, &total, NULL) != VT_OK) return -1;
    int gi = vt_catalog_find(cat, name);
    if (gi >= 0) return gi;
    const char *n = name;
    if (!strncasecmp(n, "NVIDIA ", 7)) n += 7;
    if (!strncasecmp(n, "Tesla ", 6)) n += 6;
    if (!strncasecmp(n, "GeForce ", 8)) n += 8;
    if ((gi = vt_catalog_find(cat, n)) >= 0) return gi;
    /* The first word (the model, "H100") must match the start of a catalog name; then the most
     * catalog words found in the CUDA name ("SXM" in "A100-SXM4-80GB"), then the nearest memory. */
    size_t w = strcspn(n, " -_");
    int best = -1, best_words = 0;
    double best_gap = 0;
    for (int i = 0; i < vt_catalog_count(cat); i++) {
        const char *c = vt_catalog_gpu_name(cat, i);
        if (strncasecmp(c, n, w) || (c[w] && c[w] != ' ' && c[w] != '-')) continue;
        int words = 0;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", c);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
            if (strcasestr(n, t)) words++;
        double mem = 0;
        vt_catalog_gpu_value(cat, i, VT_GPU_MEMORY_GB, &mem);
        double gap = fabs(mem * 1e9 - (double)total);
        /* a tie (H200 NVL / H200 SXM): the SXM form, the usual one in clouds */
        int tie = best >= 0 && words == best_words && fabs(gap - best_gap) < 1e9;
        if (best < 0 || words > best_words || (words == best_words && gap < best_gap - 1e9) ||
            (tie && strstr(c, "SXM") && !strstr(vt_catalog_gpu_name(cat, best), "SXM"))) {
            best = i;
            best_words = words;
            best_gap = gap;
        }
    }
    return best;
}

static int cmd_estimate(args *a)
{
    const char *cmd = a->cmd;
    const char *model = take(a, "model"), *data = take(a, "data"), *budget = take(a, "budget");
    const char *deadline = take(a, "deadline"), *csv = take(a, "catalog");
    const char *calib_s = take(a, "calibrate"), *calib_file = take(a, "calibration");
    const char *device = take(a, "device"), *seconds = take(a, "seconds");
    const char *batches = take(a, "batches"), *price = take(a, "price"), *by_s = take(a, "by");
    const char *top_s = take(a, "top"), *gpu = take(a, "gpu"), *local_gpu = take(a, "local_gpu");
    int rc, calibrate = 0;
    long top = 0;
    double tmp;
    if ((rc = flag_value(cmd, "calibrate", calib_s, &calibrate))) return rc;
    if ((rc = int_value(cmd, "top", top_s, 1, 100000, &top))) return rc;
    if ((rc = num_value(cmd, "seconds", seconds, 0.1, &tmp))) return rc;
    if (!gpu) gpu = "all";
    int all = !strcmp(gpu, "all");
    vt_rank_by by = VT_RANK_COST;
    if (by_s) {
        if (!strcmp(by_s, "cost")) by = VT_RANK_COST;
        else if (!strcmp(by_s, "time")) by = VT_RANK_TIME;
        else {
            fprintf(stderr, "vt estimate: by=%s: valid values: cost, time\n", by_s);
            return EXIT_USAGE;
        }
    }
    if (budget && deadline) {
        fprintf(stderr, "vt estimate: give deadline= (cheapest within it) or budget= (fastest "
                        "within it), not both\n");
        return EXIT_USAGE;
    }
    if (deadline) by = VT_RANK_COST_WITHIN_DEADLINE;
    if (budget) by = VT_RANK_TIME_WITHIN_BUDGET;

    vt_estimator *e = NULL;
    vt_model *m = NULL;
    vt_dataset *ds = NULL;
    int *order = NULL;
    vt_status st = vt_estimator_create(&e);
    if (st) return fail(cmd, st, NULL);
    vt_estimator_set_log(e, est_log, NULL, VT_LOG_WARNING);
#define EST_FAIL(s)                                                                              \
    do {                                                                                         \
        rc = fail(cmd, (s), vt_estimator_last_error(e));                                         \
        goto out;                                                                                \
    } while (0)
    char kvb[512];
    if (csv && (st = vt_catalog_load_csv(vt_estimator_catalog(e), csv))) {
        rc = fail(cmd, st, vt_catalog_last_error(vt_estimator_catalog(e)));
        goto out;
    }
    if (model && names_file(model)) {
        if ((st = vt_model_load(&m, model))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
        if ((st = vt_estimator_set_model(e, m))) EST_FAIL(st);
    } else if (model) {
        snprintf(kvb, sizeof kvb, "model=%s", model);
        if ((st = vt_estimator_set(e, kvb))) EST_FAIL(st);
    }
    if (data) {
        if ((st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, data))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
        if ((st = vt_estimator_set_dataset(e, ds))) EST_FAIL(st);
        if (!m && (st = vt_estimator_set_int(e, VT_OPT_EST_CLASSES, vt_dataset_num_classes(ds))))
            EST_FAIL(st);
    }
    /* CLI names of estimator keys */
    const char *alias[][2] = {{"budget_usd", budget}, {"deadline_h", deadline},
                              {"local_price", price}};
    for (int i = 0; i < 3; i++) {
        if (!alias[i][1]) continue;
        snprintf(kvb, sizeof kvb, "%s=%s", alias[i][0], alias[i][1]);
        if ((st = vt_estimator_set(e, kvb))) EST_FAIL(st);
    }
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        if ((st = vt_estimator_set(e, a->kv[i].arg))) {
            rc = fail(cmd, st, vt_estimator_last_error(e));
            if (st == VT_ERR_UNKNOWN_OPTION) fprintf(stderr, "vt estimate also takes: gpu, %s\n",
                                                     EST_TOOL_KEYS);
            goto out;
        }
    }
    if (!all && (st = vt_estimator_set_string(e, VT_OPT_EST_GPU, gpu))) EST_FAIL(st);

    /* calibration: load a saved one, or measure */
    if (calib_file && !calibrate) {
        if ((st = vt_estimator_load_calibration(e, calib_file))) EST_FAIL(st);
        printf("loaded the calibration %s\n", calib_file);
    }
    if (calibrate) {
        char dev[32], opts[256] = "";
        size_t used = 0;
        if (device) snprintf(dev, sizeof dev, "%s", device);
        else snprintf(dev, sizeof dev, "%s", vt_device_count() > 0 ? "0" : "cpu");
        if (seconds) used += (size_t)snprintf(opts + used, sizeof opts - used, "seconds=%s ", seconds);
        if (batches) used += (size_t)snprintf(opts + used, sizeof opts - used, "batches=%s ", batches);
        else { /* the library's default batch/4 can be 1, which cannot train (batch-norm) */
            long bsz = 16;
            for (int i = 0; i < a->n; i++)
                if (key_is(&a->kv[i], "batch")) bsz = atol(a->kv[i].val);
            long b[3] = {bsz / 4, bsz / 2, bsz};
            int nb = 0;
            char list[64] = "";
            for (int i = 0; i < 3; i++) {
                if (b[i] < 2) b[i] = 2;
                if (nb && b[i] == b[nb - 1]) continue;
                b[nb] = b[i];
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%ld", nb ? "," : "", b[i]);
                nb++;
            }
            used += (size_t)snprintf(opts + used, sizeof opts - used, "batches=%s ", list);
        }
        if (strcmp(dev, "cpu") != 0) { /* name the local GPU in the catalog, if it is there */
            const vt_catalog *cat = vt_estimator_catalog(e);
            int gi = local_gpu ? vt_catalog_find(cat, local_gpu) : local_catalog_gpu(cat, atoi(dev));
            if (local_gpu && gi < 0) {
                rc = fail(cmd, VT_ERR_OPTION_VALUE, NULL);
                goto out;
            }
            if (gi >= 0) {
                /* the options list is space-separated: catalog names match without spaces */
                char gname[128];
                snprintf(gname, sizeof gname, "%s", vt_catalog_gpu_name(cat, gi));
                for (char *c = gname; *c; c++)
                    if (*c == ' ') *c = '-';
                snprintf(opts + used, sizeof opts - used, "gpu=%s", gname);
                printf("the local GPU is the catalog's %s (local_gpu=NAME to say otherwise)\n",
                       vt_catalog_gpu_name(cat, gi));
            } else
                fprintf(stderr, "vt estimate: the local GPU is not in the catalog (local_gpu=NAME "
                                "names it): its measurements are not extrapolated to other GPUs\n");
        }
        printf("calibrating on device %s (about %s s) ...\n", dev, seconds ? seconds : "10");
        fflush(stdout);
        if ((st = vt_estimator_calibrate(e, dev, opts))) EST_FAIL(st);
        if (calib_file) {
            if ((st = vt_estimator_save_calibration(e, calib_file))) EST_FAIL(st);
            printf("saved the calibration to %s\n", calib_file);
        }
    }

    char b1[32];

    /* what is estimated (the estimator has no getters: the arguments, else the defaults) */
    {
        const char *keys[] = {"epochs", "imgsz", "batch", "gpus", "precision", "optimizer"};
        const char *dflt[] = {"100", "640", "16", "1", "fp32", "sgd"};
        printf("run: %s", m ? vt_model_arch(m) : model ? model : "cls-n");
        if (ds)
            printf(", %d classes, %d train / %d val images", vt_dataset_num_classes(ds),
                   vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL));
        else {
            const char *c = NULL, *tr = NULL, *va = NULL;
            for (int i = 0; i < a->n; i++) {
                if (key_is(&a->kv[i], "classes")) c = a->kv[i].val;
                if (key_is(&a->kv[i], "train")) tr = a->kv[i].val;
                if (key_is(&a->kv[i], "val")) va = a->kv[i].val;
            }
            if (m) printf(", %d classes", vt_model_num_classes(m));
            else printf(", %s classes", c ? c : "10");
            printf(", %s train / %s val images", tr ? tr : "1000", va ? va : "0");
        }
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *val = dflt[k];
            for (int i = 0; i < a->n; i++)
                if (key_is(&a->kv[i], keys[k])) val = a->kv[i].val;
            printf(", %s %s", keys[k], val);
        }
        printf("\n");
    }
    if (!all) {
        if ((st = vt_estimator_run(e))) {
            rc = fail(cmd, st, vt_estimator_last_error(e));
            if (st == VT_ERR_NOT_FOUND) rc = EXIT_USAGE; /* an unknown GPU name */
            goto out;
        }
        char where[300];
        snprintf(where, sizeof where, "%s%s", gpu,
                 !strcmp(gpu, "local") && !vt_estimator_is_calibrated(e)
                     ? " (not calibrated: the CPU's built-in guesses; add calibrate=1)"
                     : "");
        print_estimate_detail(e, where);
    } else {
        int count = 0;
        if ((st = vt_estimator_rank(e, by, NULL, 0, &count))) EST_FAIL(st);
        order = calloc((size_t)(count > 0 ? count : 1), sizeof *order);
        if (!order) EST_FAIL(VT_ERR_OUT_OF_MEMORY);
        if ((st = vt_estimator_rank(e, by, order, count, &count))) EST_FAIL(st);
        const vt_catalog *cat = vt_estimator_catalog(e);
        static const char *const by_text[] = {"", "cost", "time", "cost within the deadline",
                                              "time within the budget"};
        printf("%d GPUs ranked by %s", count, by_text[by]);
        if (deadline) printf(" of %s h", deadline);
        if (budget) printf(" of %s USD", budget);
        printf(":\n");
        printf("%4s  %-22s %6s %5s %9s %10s %8s %7s %9s  %s\n", "rank", "GPU", "mem GB", "fits",
               "max batch", "s/epoch", "total", "USD/h", "cost USD", "note");
        int shown_n = 0, limit = by >= VT_RANK_COST_WITHIN_DEADLINE;
        for (int r = 0; r < count; r++) {
            if (top && shown_n >= top) break;
            int gi = order[r];
            double fits = 0, maxb = 0, epoch = 0, total = 0, usdh, cost, mem, meets = 1, lb = 0;
            est_result(e, gi, VT_EST_FITS, &fits);
            est_result(e, gi, VT_EST_MAX_BATCH, &maxb);
            est_result(e, gi, VT_EST_EPOCH_SECONDS, &epoch);
            est_result(e, gi, VT_EST_TOTAL_SECONDS, &total);
            est_result(e, gi, VT_EST_MEETS_LIMIT, &meets);
            est_result(e, gi, VT_EST_LOADER_BOUND, &lb);
            char memb[16] = "-", usdb[16] = "-", costb[16] = "-", epb[24], maxbb[16];
            if (vt_catalog_gpu_value(cat, gi, VT_GPU_MEMORY_GB, &mem) == VT_OK)
                snprintf(memb, sizeof memb, "%.0f", mem);
            if (est_result(e, gi, VT_EST_USD_PER_HOUR, &usdh)) snprintf(usdb, sizeof usdb, "%.2f", usdh);
            if (est_result(e, gi, VT_EST_COST_USD, &cost))
                snprintf(costb, sizeof costb, cost < 0.005 ? "<0.01" : "%.2f", cost);
            snprintf(epb, sizeof epb, epoch < 10 ? "%.2f" : "%.1f", epoch);
            snprintf(maxbb, sizeof maxbb, "%.0f", maxb);
            char note[96] = "";
            if (!(fits > 0)) snprintf(note, sizeof note, "out of memory at this batch");
            else if (limit && !(meets > 0))
                snprintf(note, sizeof note, "%s", deadline ? "misses the deadline" : "over budget");
            else if (lb > 0) snprintf(note, sizeof note, "loader-bound");
            printf("%4d  %-22.22s %6s %5s %9s %10s %8s %7s %9s  %s\n", r + 1,
                   vt_catalog_gpu_name(cat, gi), memb, fits > 0 ? "yes" : "no", maxbb,
                   fits > 0 ? epb : "-", fits > 0 ? fmt_hmm(total, b1, sizeof b1) : "-", usdb,
                   fits > 0 ? costb : "-", note);
            shown_n++;
        }
        if (top && count > top) printf("  ... %d more (top=%ld shown)\n", count - (int)top, top);
        printf("  total time is h:mm; cost '-': the catalog has no price for the GPU\n");
        if (vt_estimator_is_calibrated(e)) {
            /* the measured local device, too */
            if ((st = vt_estimator_set_string(e, VT_OPT_EST_GPU, "local"))) EST_FAIL(st);
            if ((st = vt_estimator_run(e)) == VT_OK) {
                double epoch = 0, total = 0;
                vt_estimator_result(e, VT_EST_EPOCH_SECONDS, &epoch);
                vt_estimator_result(e, VT_EST_TOTAL_SECONDS, &total);
                printf("local device (calibrated): %.2f s/epoch, total %s\n", epoch,
                       fmt_hmm(total, b1, sizeof b1));
            }
        }
    }
    /* the run's sizes, and the dataset advice */
    {
        double train_n = 0;
        if (ds) train_n = vt_dataset_num_images(ds, VT_SPLIT_TRAIN);
        else {
            /* read back what vt_estimator_set got: the estimator has no getter, so parse args */
            train_n = 1000;
            for (int i = 0; i < a->n; i++)
                if (key_is(&a->kv[i], "train")) train_n = atof(a->kv[i].val);
        }
        printf("advice: %s\n", vt_estimate_dataset_advice((int64_t)train_n));
    }
    rc = 0;
out:
#undef EST_FAIL
    free(order);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    vt_estimator_destroy(e);
    return rc;
}

/* ---- main ------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int (*fn)(args *);
} command;

static const command commands[] = {
    {"train", cmd_train},     {"val", cmd_val},     {"predict", cmd_predict},
    {"estimate", cmd_estimate}, {"check", cmd_check}, {"info", cmd_info},
    {"synth", cmd_synth},     {"demo", cmd_demo},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
        return cmd_help(NULL, argc - 2, argv + 2);
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("vt %s (libvisiontrain ABI %u)\n", vt_version_string(), vt_abi_version());
        return 0;
    }
    if (!strcmp(cmd, "dataset")) {
        /* "vt dataset SUB key=value ...": one command name "dataset SUB" for the messages */
        static char name[64];
        if (argc < 3 || argv[2][0] == '-' || strchr(argv[2], '=') || !strcmp(argv[2], "help")) {
            print_help(argc < 3 ? stderr : stdout, help_for("dataset"));
            return argc < 3 ? EXIT_USAGE : 0;
        }
        snprintf(name, sizeof name, "dataset %.40s", argv[2]);
        args a;
        if (parse_args(name, argc - 3, argv + 3, &a)) return EXIT_USAGE;
        if (a.help) {
            print_help(stdout, help_for("dataset"));
            return 0;
        }
        return cmd_dataset(&a);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name)) continue;
        args a;
        if (parse_args(cmd, argc - 2, argv + 2, &a)) return EXIT_USAGE;
        if (a.help) {
            print_help(stdout, help_for(cmd));
            return 0;
        }
        return commands[i].fn(&a);
    }
    fprintf(stderr, "vt: unknown command '%s'; commands: train, val, predict, estimate, check, "
                    "dataset, info, synth, demo, help\n", cmd);
    return EXIT_USAGE;
}
