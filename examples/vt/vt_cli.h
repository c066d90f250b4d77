/* vt: what the files of the command-line tool share (see main.c for the commands).  The tool
 * uses the public API only: visiontrain/visiontrain.h and system headers. */
#ifndef VT_CLI_H
#define VT_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "visiontrain/visiontrain.h"

enum { EXIT_FAILURE_ = 1, EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_INTERRUPTED = 4 };

/* ---- arguments (common.c) ------------------------------------------------------------------- */

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

int key_is(const kv *k, const char *key);
/* The last value given for key, or NULL; marks every occurrence as the tool's. */
const char *take(args *a, const char *key);
int parse_args(const char *cmd, int argc, char **argv, args *a);
/* Reject every argument not marked as the tool's: "unknown key 'x'; valid keys: ...". */
int reject_unknown(const args *a, const char *valid);
void take_scope(args *a, int scope, char *opts, size_t cap, char *valid, size_t vcap);
/* Value parsers: 0, or EXIT_USAGE after a message; a NULL value leaves *out as it is. */
int flag_value(const char *cmd, const char *key, const char *v, int *out);
int int_value(const char *cmd, const char *key, const char *v, long lo, long hi, long *out);
int num_value(const char *cmd, const char *key, const char *v, double lo, double *out);
/* task=NAME, a name of a task the library lists (vt_task_next, vt_task_name): 0, or EXIT_USAGE
 * after "vt CMD: task=x: valid tasks: classify, detect, ..."; a NULL value leaves *task. */
int parse_task(const char *cmd, const char *v, vt_task *task);
/* task= as parse_task; without it the data layout's guess: detect for a .yaml/.yml/.json or a
 * folder holding a data.yaml, else classify. */
int task_value(const char *cmd, const char *v, const char *data, vt_task *task);
/* The task of a run without task=: a model name's own (vt_arch_task: det-* detect, seg-*
 * segment, ...), else `guess` (the layout's).  A classifier's name leaves the guess: any
 * layout has images to classify (vt estimate of a classifier on a detection set's counts). */
vt_task model_task_or(const char *arch, vt_task guess);
/* The names of the tasks the library lists, joined by sep ("classify|detect|segment"). */
const char *task_names(const char *sep, char *buf, size_t cap);
/* Whether a task's labels are one per image (classification), not objects or pixels: its
 * dataset tables count images, a dropped label is an "entry", there are no boxes. */
int labels_per_image(vt_task task);
/* The words for a metric in a sentence ("pixel accuracy"), else its table label
 * (vt_metric_label). */
const char *metric_words(vt_metric m);

/* ---- failures, formatting, files, SIGINT (common.c) ----------------------------------------- */

/* Print "vt CMD: message (status)" and return the exit code of the status.  msg NULL or "":
 * the thread's last error. */
int fail(const char *cmd, vt_status st, const char *msg);
/* *out: a trainer for m and ds (the caller destroys it, also on failure) with every argument not
 * marked as the tool's applied; 0, or the exit code after a message (an unknown key also lists
 * `also`, the tool's own keys). */
int make_trainer(const char *cmd, vt_model *m, vt_dataset *ds, const args *a, const char *also,
                 vt_trainer **out);
double now_s(void);
/* "h:mm:ss" below a day, else "Nd hh:mm". */
const char *fmt_duration(double s, char *buf, size_t cap);
/* "h:mm" (minutes rounded up, so a short run never reads 0:00). */
const char *fmt_hmm(double s, char *buf, size_t cap);
int is_dir(const char *path);
int is_file(const char *path);
/* A model argument names a file when it exists, has a path separator or ends in .vtm. */
int names_file(const char *model);
/* The image files directly in dir, sorted; NULL on error.  *n gets the count. */
char **list_images(const char *dir, int *n);
/* Terminal columns of a UTF-8 string (wide CJK characters count 2, combining marks 0). */
int display_width(const char *s);
/* Print s left-aligned in `width` columns (cut at a character when wider), to stdout. */
void print_cell(const char *s, int width);
/* Ctrl-C cancels the run between batches; a second Ctrl-C kills the process (SA_RESETHAND). */
void catch_sigint(vt_trainer *t);
void release_sigint(void);

/* ---- one process per GPU (common.c) --------------------------------------------------------- */

/* Whether device=LIST asks this process to start the ranks: a list of two or more entries
 * (a comma), and no launcher's rank variables in the environment (WORLD_SIZE,
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE: a rank trains on its entry of the list). */
int launches_ranks(const char *devices);
/* Run argv (NULL-terminated, argv[0] the program's name) once per GPU of devices ("0,1,..."),
 * each with torchrun's variables RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
 * and MASTER_PORT (a free port on 127.0.0.1), and wait for them.  A rank failing stops the
 * others (SIGTERM, SIGKILL 30 s later); SIGINT and SIGTERM are forwarded to them.  0 when every
 * rank exits 0, else the first failure's exit code (128 + N for signal N); EXIT_USAGE after a
 * message for a bad list (an entry not a GPU index, a GPU twice), before any rank starts. */
int launch_ranks(const char *cmd, char **argv, const char *devices);

/* ---- training progress (progress.c) --------------------------------------------------------- */

enum { PROG_OFF = 0, PROG_PLAIN = 1, PROG_BAR = 2 };

typedef struct {
    int mode;           /* PROG_OFF: no bar and no epoch table; the other lines still print */
    int quiet;          /* quiet=1: nothing but errors (no notes, warnings, summary, results) */
    double t0, epoch_t0, last_draw;
    int header_done, bar_shown;
    int best_epoch;
    int epochs_seen;    /* epoch ends of this session (the table printed or not) */
    double best_value;  /* the best fitness (vt_task_fitness: top-1, mAP50-95, mIoU, ...) */
    vt_task task;       /* the run's: its metrics are the table's columns (vt_task_metrics) */
    vt_trainer *trainer; /* for its run folder, named once at the first event */
    int dir_shown;
    int auto_batch;     /* batch=-1: name the batch the run chose at the first event */
} progress_state;

int progress_mode(const char *cmd, const char *v, int *mode);
void clear_bar(progress_state *ps);
int progress_cb(void *user, vt_event ev, const vt_progress *p);
void log_cb(void *user, vt_log_level level, const char *msg);

/* ---- datasets for vt train / vt val (datainfo.c) -------------------------------------------- */

typedef struct {
    char policy[16];  /* drop, skip or fail */
    char min_size[24];
    int decoded;      /* every image decoded at open (decode=1, the default) */
} data_info;

/* Take the keys policy=, min_size=, decode= from a (before the trainer's keys are checked);
 * 0, or EXIT_USAGE after a message. */
int take_data_keys(const char *cmd, args *a, data_info *info);
/* Open data= as vt check validates it: vt_dataset_open_ex with the policy, min_size and
 * decode=1 unless decode=0; 0, or the exit code after a message. */
int open_data(const char *cmd, const data_info *info, vt_task task, const char *data,
              vt_dataset **ds);
/* The data summary: images used / left out per split, problems by reason, each with file:line
 * (up to DATA_SUMMARY_ALL of them, else the first few), and `where` the full list is (NULL:
 * that line is left to the caller).  Problems
 * and warnings go to stderr: the summary goes there when the dataset has problems, to stdout
 * when it has none. */
#define DATA_SUMMARY_ALL 10
void print_data_summary(const vt_dataset *ds, const char *data, const data_info *info,
                        const char *where);
/* Write every problem of ds to DIR/problems.txt (its path in path); 0 or -1. */
int write_problems(const vt_dataset *ds, const char *dir, char *path, size_t cap);

/* ---- help (help.c) -------------------------------------------------------------------------- */

/* The help texts hold placeholders filled from the library when printed: @TRAINER_KEYS@ (the
 * trainer's option keys), @TASKS@ (classify|detect|...), and @MODELS@ (every model name by
 * task, each task's default marked); a line holding @MODELS@ is written unwrapped and is
 * wrapped at 88 columns when printed, its continuation lines indented as its value is. */

extern const char *const usage_text;
const char *help_for(const char *cmd);
void print_help(FILE *f, const char *text);
int cmd_help(const args *a, int argc, char **argv);

/* ---- commands ------------------------------------------------------------------------------- */

/* Check the trainer's keys and values before any slow work (train.c). */
int check_trainer_keys(args *a, const char *tool_keys);

int cmd_train(args *a);    /* train.c */
int cmd_demo(args *a);
int cmd_val(args *a);      /* val_predict.c */
int cmd_predict(args *a);
int cmd_export(args *a);   /* export.c */
int cmd_import(args *a);   /* import.c */
int cmd_synth(args *a);    /* data.c */
int cmd_check(args *a);
int cmd_dataset(args *a);
int cmd_info(args *a);     /* info_estimate.c */
int cmd_estimate(args *a);

#endif
