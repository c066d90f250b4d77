/* The task interface: what a task (classify, detect, segment, ...) adds to training, behind one
 * table per task.  The trainer (lib/train/) calls the table and never tests which task it
 * runs; a task never sees the trainer, only the context below.
 *
 * ADDING A TASK: write lib/task/<task>_train.c defining a vt_task_iface (batch loss,
 * evaluation, fitness, results columns, state, its architectures) and add it to the registry,
 * lib/task/registry.c.
 * The dataset formats and the loader's sample pipeline are lib/data/'s (docs/architecture.md). */
#ifndef VT_TASK_H
#define VT_TASK_H

#include <stdint.h>

#include "backend/backend.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "image/image.h"
#include "image/plot.h"
#include "nn/exec.h"
#include "nn/model.h"

/* The trainer's progress record (opaque in the public header): the latest metric values. */
enum { VT_NMETRIC = 32 };

struct vt_progress {
    int epoch, epochs, batch, batches;
    int64_t iteration;
    double value[VT_NMETRIC];
    unsigned char has[VT_NMETRIC];
    const char *ckpt_path; /* during VT_EVENT_CHECKPOINT_SAVED only */
};

static inline void vt_progress_set(vt_progress *p, vt_metric m, double v)
{
    p->value[m] = v;
    p->has[m] = 1;
}

typedef struct vt_task_ctx vt_task_ctx;
/* Reads the outputs of one validation batch of n images already run forward. */
typedef vt_status (*vt_task_batch_fn)(vt_task_ctx *c, struct vt_loader *L, int n, void *arg);

/* What a task works with.  The trainer keeps the fields above `state` current (be and exec
 * change with the device, the host buffers with the batch size). */
struct vt_task_ctx {
    vt_model *model;
    const vt_dataset *ds;
    vt_backend *be;            /* NULL until a device is open */
    vt_exec *exec;
    int imgsz;                 /* the training image size */
    float label_smoothing;
    float dice;                /* weight of the segmentation loss's soft Dice term */
    /* the last batch filled by the loader: per image its class (classification) or its index
     * in the split (other tasks), host memory */
    const int32_t *host_labels;
    float *host_probs;         /* classes x batch floats of host scratch */
    /* Set by batch_loss when its loss is a sum over the batch divided by max(1, loss_weight)
     * (detection: its positives' target-score sum); the trainer sets it to -1 before each call,
     * which means the image count (a mean over images, or over pixels with the same count per
     * image).  The ranks of a distributed step weight their gradients by it, so that the
     * update is the one of a single batch of all their images. */
    double loss_weight;
    /* A second part of the loss with a normaliser of its own, on the model's outputs 1.. (the
     * mask term of instance segmentation, beside the detection on output 0): its normaliser and
     * its share of the loss (already in batch_loss's total).  -1 (the trainer's before each
     * call): none, loss_weight is the whole loss's. */
    double loss2_weight;
    float loss2;
    vt_progress *prog;         /* evaluate writes its metrics here */
    /* the last validation's confusion matrix (k x k, rows the true class), kept by the trainer
     * for confusion_matrix.png; evaluate (re)allocates and fills it */
    int64_t **confusion;
    int *confusion_k;
    /* The trainer's validation driver: every image of a split, batch by batch, decoded into the
     * executor's input and run forward, then fn(c, L, n, arg).  keep: NULL, or a loader kept
     * across calls (created on first use).  Unreadable batches are skipped (warnings logged);
     * VT_ERR_DATASET when the split is empty or nothing could be read. */
    vt_status (*eval_batches)(vt_task_ctx *c, vt_split split, int batch, struct vt_loader **keep,
                              vt_task_batch_fn fn, void *arg);
    /* A validation split over the ranks of a distributed run: while the trainer validates
     * with them, shards > 1 and eval_batches runs this rank's batches only (batch i of the
     * split on shard i % shards); the task then merges what it counted with the two hooks, so
     * that every shard ends with the metrics of the whole split, those of one process.  Alone:
     * shard 0 of 1, and the hooks leave their values as they are.  Each hook is collective:
     * every shard calls it, in the same order, with the same n. */
    int shard, shards;
    /* x[0..n) summed over the shards, on every shard */
    vt_status (*shard_sum)(vt_task_ctx *c, double *x, size_t n);
    /* every shard's `bytes` at mine, in shard order, into *all (vt_malloc'd, the caller frees;
     * NULL when empty), *all_bytes in all */
    vt_status (*shard_gather)(vt_task_ctx *c, const void *mine, size_t bytes, void **all,
                              size_t *all_bytes);
    void *trainer;             /* eval_batches' own */
    void *state;               /* the task's private state (state_size bytes, zeroed) */
};

/* One image of a validation mosaic: boxes, a mask or both (vt_malloc'd; the caller frees
 * both). */
typedef struct vt_task_tile {
    vt_mosaic_box *box;
    int nbox;
    uint8_t *mask;        /* w x h class ids; VT_TILE_NONE: no class (instance masks) */
} vt_task_tile;
/* A tile mask's pixel that belongs to no object: never painted. */
#define VT_TILE_NONE 255

typedef struct vt_task_iface {
    vt_task id;
    const char *name;          /* the run folder under the project: "classify", ... */
    const char *title;         /* "classification", ... */
    /* Its models: their names start with model_prefix (the classifiers "cnn-small" and
     * "resnet18" excepted), default_model is the one a run takes without a model, archs the
     * architectures (NULL-terminated) with their builders (lib/nn/models.c). */
    const char *model_prefix;
    const char *default_model;
    const vt_arch_spec *const *archs;
    /* The task's own defaults of trainer options (key=value list, NULL: none): they replace
     * the option table's before the caller sets anything, and stay defaults (not "set"). */
    const char *train_defaults;
    /* takes class labels per image (vt_trainer_step's input) */
    int class_labels;
    /* The trainer options its training does not read (keys, space-separated; NULL: none):
     * vt_task_option_applies says 0 for them, so that a program can refuse them. */
    const char *ignored_options;
    /* The results table: every task's starts with epoch, train/loss, val/loss, then its own
     * metric columns, then lr, time/epoch, time/data_wait, time/elapsed. */
    int n_metrics;
    const vt_metric *metrics;  /* the columns' values */
    const char *const *metric_cols;
    const unsigned char *metric_plot; /* 1: a panel of results.png */
    /* the value a run keeps the best of, from a validation */
    vt_metric fitness;
    /* the loader's per-sample pipeline for this task's batches (data/loader.h) */
    vt_sample_kind sample;
    size_t state_size;
    /* Loss of the batch already run forward (its labels, boxes or masks in L's last fill);
     * with_grad: also seeds the output gradient for backward.  *loss: the batch's mean. */
    vt_status (*batch_loss)(vt_task_ctx *c, struct vt_loader *L, int n, int with_grad,
                            float *loss);
    /* Validation metrics of a split into c->prog (and the confusion matrix). */
    vt_status (*evaluate)(vt_task_ctx *c, vt_split split, int batch, struct vt_loader **keep);
    /* Free the state's backend buffers (c->be still valid; before a device change) and host
     * buffers; the state stays usable.  NULL: nothing to free. */
    void (*release)(vt_task_ctx *c);
    /* The run's figures: what the confusion matrix counts ("images", "objects", "pixels"). */
    const char *confusion_unit;
    /* Optional (NULL: no validation mosaics): image i of the validation split (img, as
     * loaded) with its ground truth into gt and the model's prediction into pred; the title of
     * the predictions' mosaic; mask_background: class 0, when named "background", is left
     * unpainted. */
    vt_status (*val_tile)(const vt_task_ctx *c, int i, const vt_image *img, vt_task_tile *gt,
                          vt_task_tile *pred);
    const char *val_pred_title;
    int mask_background;
    /* Optional (NULL: none): the task's own figures of its last validation, into run_dir (a
     * detector's PR_curve.png and F1_curve.png, an instance segmenter's Box and Mask ones). */
    vt_status (*plots)(const vt_task_ctx *c, const char *run_dir);
    /* Optional (NULL: not offered): per-class AP of the last validation. */
    vt_status (*class_ap)(const vt_task_ctx *c, int cls, double *ap50, double *ap50_95,
                          int64_t *num_gt);
} vt_task_iface;

/* ---- the registry (registry.c): one line per task ---- */

/* The table of a task, NULL for an unknown one; vt_task_next's order. */
const vt_task_iface *vt_task_find(vt_task id);
const vt_task_iface *vt_task_at(int i);
/* The run folder of a task's runs ("classify", ...; "task" for an unknown one). */
const char *vt_task_dir_name(vt_task task);
/* The spec of an architecture name among every task's, NULL when none (a vt_arch_lookup). */
const vt_arch_spec *vt_arch_find(const char *name);
/* VT_ERR_INVALID_ARGUMENT "unknown model 'x'; known models: ..." */
vt_status vt_arch_unknown(const char *name);

/* A confusion matrix of k x k for c (zeroed); VT_ERR_OUT_OF_MEMORY when it cannot be had. */
vt_status vt_task_confusion(vt_task_ctx *c, int k);

/* ---- a validation split over shards (the ctx's shard fields; collective, no-ops alone) ---- */
/* x[0..n) summed over the shards; the same for counts (exact below 2^53). */
vt_status vt_task_shard_sum(vt_task_ctx *c, double *x, size_t n);
vt_status vt_task_shard_sum_i64(vt_task_ctx *c, int64_t *x, size_t n);
/* The confusion matrix summed over the shards; dropped on all of them when one has none (it
 * ran out of memory for it). */
vt_status vt_task_shard_confusion(vt_task_ctx *c);
/* A detection evaluator's records, ground-truth counts and confusion matrix: every shard's,
 * on every shard (the records' image keys must be the images' split indices). */
struct vt_det_eval;
vt_status vt_task_shard_det_eval(vt_task_ctx *c, struct vt_det_eval *ev);

/* The segmentation mosaics' tile (segment_plots.c): the class mask of the dataset and the
 * model's predicted mask. */
vt_status vt_task_segment_tile(const vt_task_ctx *c, int i, const vt_image *img,
                               vt_task_tile *gt, vt_task_tile *pred);

/* The detection figures (detect_plots.c): PR_curve.png and F1_curve.png, and the mosaics'
 * tile: the image's boxes and the model's detections. */
vt_status vt_task_detect_plots(const vt_task_ctx *c, const char *run_dir);
vt_status vt_task_detect_tile(const vt_task_ctx *c, int i, const vt_image *img, vt_task_tile *gt,
                              vt_task_tile *pred);

/* The tasks of lib/task/ (the registry is lib/task/registry.c). */
extern const vt_task_iface vt_task_classify;
extern const vt_task_iface vt_task_detect;
extern const vt_task_iface vt_task_segment;
extern const vt_task_iface vt_task_instance;

#endif
