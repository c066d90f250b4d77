/* Private structure of the vt_trainer handle, shared by the trainer loop (trainer.c), its
 * checkpoint / run-folder code (train_state.c) and the results table (results.c). */
#ifndef VT_TRAINER_IMPL_H
#define VT_TRAINER_IMPL_H

#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/device.h"
#include "data/dataset.h"
#include "dist/comm.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "core/checkpoint.h"
#include "task/task.h"
#include "train/results.h"
#include "train/trainer_probe.h"

/* Where a run stands, and everything besides weights and optimiser moments that a checkpoint
 * needs to continue it exactly. */
typedef struct vt_train_pos {
    int epoch;          /* 0-based epoch in progress (== epochs when finished)                */
    int batch;          /* batches of that epoch already trained (0..nb); nb: val pending      */
    int64_t iteration;  /* optimiser steps so far                                             */
    int nb;             /* batches of the epoch the position refers to                        */
    long seen;          /* partial epoch: images of the epoch's seeded order consumed (trained
                           or skipped), where a resume continues it; -1: not recorded (older
                           checkpoints)                                                       */
    int world;          /* ranks the position was trained on (1 alone)                        */
    int global_batch;   /* images a step: batch x world                                       */
    int epoch_nb;       /* batches of a whole epoch of that run: the schedule's unit          */
    double lr_shift;    /* learning-rate schedule steps ahead of `iteration` (a resume whose
                           epoch has another number of batches, trainer.c lr_at)             */
    double loss_sum;    /* partial epoch: sum of batch losses                                 */
    long images;        /* partial epoch: images trained                                      */
    double data_wait;   /* partial epoch: seconds waiting for the loader                      */
    double epoch_time;  /* partial epoch: seconds of training                                 */
    double elapsed;     /* seconds of training + validation over all sessions of the run      */
    double best_fitness;
    int best_epoch;     /* 1-based epoch of best_fitness, 0 when none                         */
    int64_t ema_updates;
} vt_train_pos;

struct vt_trainer {
    char err[VT_ERRMSG_MAX];
    vt_model *model;
    vt_dataset *ds;
    const vt_task_iface *task;   /* the model's task */
    vt_task_ctx tc;              /* what the task sees (vt_trainer_task_ctx), its state */
    vt_optvals opts;
    vt_logger log;
    vt_progress_fn cb;
    void *cb_user;
    atomic_int cancel;

    char device[VT_OPT_STR_MAX]; /* the device option be was opened for */
    vt_device dev;               /* ... and the device it names */
    vt_backend *be;
    vt_exec *exec;
    float *opt_m, *opt_v;        /* optimiser state, backend memory */
    int64_t opt_t;               /* AdamW step count */
    int64_t opt_d0, opt_n0;      /* the optimiser's first decayed / other parameter: after the
                                    frozen prefix (freeze=), set by prepare */
    float *ema_p, *ema_b;        /* EMA of params / buffers, backend memory (ema=1) */
    float *tmp_p, *tmp_b;        /* scratch of the same sizes (EMA update, swapping for val) */
    float *host_batch;           /* CNHW staging of one batch; pinned when host_pinned */
    int host_pinned;             /* host_batch came from vt_device_host_alloc of host_dev */
    vt_device host_dev;
    int host_for_gpu;            /* host_batch was allocated for a device backend (pinned if
                                    the driver allowed it) */
    struct vt_pool *stage_pool;  /* threads of vt_trainer_step's NCHW -> CNHW staging (GPU) */
    int32_t *host_labels;
    size_t host_cap;             /* floats in host_batch */
    float *host_probs;
    int host_probs_cap;
    struct vt_loader *synth;     /* vt_trainer_probe_step's synthetic targets, NULL until then */
    int synth_imgsz;             /* the image size synth was made for */
    vt_progress prog;            /* latest values, also what callbacks see */
    double gpu_sampled_at;       /* vt_now() of the last GPU figures (gpu_metrics.c) */
    uint64_t dev_version;        /* model->version the device weights correspond to */
    long conv_shapes_logged;     /* VT_CUDNN: the GPU's planned conv shapes last logged, -1 none */
    int graphs_logged;          /* the CUDA graphs' first replay was logged */
    int dirty;                   /* device weights are newer than the model's host copy */

    /* run state */
    vt_train_pos pos;
    vt_results results;          /* one row per completed epoch */
    int64_t *confusion;          /* K x K counts of the last validation (rows: true class) */
    int confusion_k;
    char run_dir[4096];          /* "" when save=0 */
    char ckpt_path[4200];        /* path being reported in VT_EVENT_CHECKPOINT_SAVED */
    struct vt_tblog *tb;         /* the run's TensorBoard events file, NULL when not written */
    vt_stop_reason stop;

    /* transfer learning (vt_trainer_create with other classes, pretrained=) */
    int classes;                 /* the model's class count this trainer was made for */
    int xfer_k, xfer_n;          /* tensors transferred / the model's, 0 / 0 when none */
    char xfer_note[320];         /* "transferred K/N tensors (...)", logged when the run starts */
    char pretrained_done[VT_OPT_STR_MAX]; /* the pretrained= file already applied, "" none */

    /* distributed training (trainer.c, "distributed training"): the job's communicator,
     * opened by the first run that finds itself one rank of several and kept (MPI joins a
     * world once); dist_on only while vt_trainer_run trains with it */
    vt_comm *comm;
    int dist_on;
    int val_sharded;             /* the run's validation: every rank its shard (evaluate.c) */
    int rank, world;             /* 0 and 1 unless dist_on */
    int last_rank, last_world;   /* those of the last run (world 0 before one) */
    int sync_bn;                 /* dist_on with sync_bn=1 on a CPU backend */
    int step_images;             /* images of the last step over all ranks */
    float dist_w;                /* this rank's weight in the step's gradient sum (dist.c) */
    float dist_w2;               /* the same for a second loss part (task.h: loss2) */
    int dist_part2;              /* the step's task has that second part */
    float *dist_tmp;             /* backend scratch of its rescale, dist_tmp_n floats */
    size_t dist_tmp_n;
    struct vt_dist_bucket *buckets; /* the run's gradient buckets (vt_dist_plan_buckets) */
    int n_buckets, next_bucket;
    vt_log_level log_level;      /* t->log.max_level outside a run (ranks > 0 lower it) */
};

/* The first layer that trains (vt_exec_plan's grad_from): the freeze= count when it is more
 * than 1, else 1; an invalid freeze= counts as none (the run refuses it when it starts). */
int vt_trainer_grad_from(const vt_trainer *t);



/* ---- train_state.c ---- */

/* FNV-1a 64 of the train and val file lists (paths relative to the dataset root) and labels. */
uint64_t vt_dataset_hash(const vt_dataset *ds);
/* Create the run folder (and weights/) from project/name/exist_ok, or reuse `reuse` when
 * non-NULL; sets t->run_dir and writes args.yaml. */
vt_status vt_run_dir_create(vt_trainer *t, const char *reuse);
/* Write a checkpoint of the trainer's current state (device weights, optimiser, position,
 * EMA, history) to every path of paths[0..n-1] (the same bytes; each atomically). */
vt_status vt_train_save(vt_trainer *t, const char *const *paths, int n);
/* Read a checkpoint for resuming: merges its options into t->opts (explicitly set options
 * win), checks model and dataset, copies the training weights into the model, and fills *pos
 * and t->results.  The optimiser moments and EMA are returned (malloc'd, host) for upload
 * after the device is ready; *opt_v / *ema_* may be NULL when the checkpoint has none. */
typedef struct vt_resume_state {
    float *opt_m, *opt_v, *ema_p, *ema_b;
    int64_t opt_t;
    vt_train_pos pos;
    char run_dir[4096]; /* the checkpoint's run folder when it lies in <run>/weights/, else "" */
} vt_resume_state;
vt_status vt_train_load(vt_trainer *t, const char *path, vt_resume_state *rs);
void vt_resume_state_free(vt_resume_state *rs);
/* results.csv of the run folder (atomically). */
vt_status vt_train_write_results(vt_trainer *t);

/* ---- run_plots.c ---- */
/* After an epoch: results.png, confusion_matrix.png, and the task's figures of its last
 * validation (PR_curve.png / F1_curve.png of a detector, their Box and Mask ones of an instance
 * segmenter), in the run folder. */
vt_status vt_train_write_plots(vt_trainer *t);
/* At the end of a run (detection, segmentation, instances): val_batch0_labels.png and
 * val_batch0_pred.png, the first 16 validation images with their ground truth and with the
 * model's predictions (the model holds the final weights). */
vt_status vt_train_write_final_plots(vt_trainer *t);

/* ---- tensorboard.c ----
 * The run's events file (tensorboard=1 and a run folder).  None of these fail: a write error
 * is logged as a warning and ends the logging, not the run; the thread's error is kept. */
/* Create the file in t->run_dir (after the resume position is known: a resumed run marks the
 * steps of earlier sessions after its checkpoint as void). */
void vt_tb_open(vt_trainer *t);
/* The last row of t->results, at step t->pos.iteration. */
void vt_tb_epoch(vt_trainer *t);
/* After a training step: every 10 iterations, the step scalars. */
void vt_tb_step(vt_trainer *t, float batch_loss);
/* fsync (at every checkpoint). */
void vt_tb_sync(vt_trainer *t);
/* The plots as images, fsync, close. */
void vt_tb_close(vt_trainer *t);

/* ---- dist.c: distributed training (the file's comment says how the ranks agree) ---- */
/* At the start of a run: the communicator when dist=auto and the process is one rank of
 * several (opened once), dist_on, rank, world; ranks > 0 log warnings and errors only. */
vt_status vt_dist_begin(vt_trainer *t);
/* At the end of a run: the log level back, dist_on cleared. */
void vt_dist_end(vt_trainer *t);
/* Every rank's status and values v[0..n-1] (n <= 8) reduced with op: VT_OK with the reduced
 * values when no rank failed, else this rank's own error or one naming the rank that failed.
 * With op != VT_COMM_MAX the statuses go first and the values only when none failed, so a
 * failing rank may meet the others' agreement with vt_dist_agree(t, st, NULL, 0, ...).
 * Not distributed: returns st. */
vt_status vt_dist_agree(vt_trainer *t, vt_status st, double *v, int n, vt_comm_op op);
/* Rank 0's status to every rank (after what only rank 0 does: saves, validation). */
vt_status vt_dist_root_status(vt_trainer *t, vt_status st);
/* Rank 0's weights, BN statistics, optimiser moments, step count and EMA to every rank. */
vt_status vt_dist_bcast_state(vt_trainer *t);
/* The mean over the ranks of the BN running statistics (and of their EMA). */
vt_status vt_dist_sync_buffers(vt_trainer *t);
/* The gradient buckets of this run (after the optimizer's trainable ranges are set): runs of
 * the trainable gradients of about bucket_mb each, in the backward's order. */
vt_status vt_dist_plan_buckets(vt_trainer *t);
/* The set-up's last agreement: every rank ready, with the same parameters and gradient buckets
 * (else every rank stops, saying so, where their collectives would not match). */
vt_status vt_dist_agree_plan(vt_trainer *t);
/* After the forward and loss of n local images (n = 0: none this step; st: this rank's failure
 * so far): the step's images over all ranks into t->step_images (0: every rank skips the
 * step), *loss their mean loss, this rank's weight in the gradient sum into t->dist_w. */
vt_status vt_dist_step_weight(vt_trainer *t, vt_status st, int n, float *loss);
/* The step's backward (n local images; a rank without any contributes zeros), each bucket of
 * gradients summed over the ranks as soon as the backward has written it, then every rank's
 * status agreed: VT_OK when every rank has the summed gradients. */
vt_status vt_dist_backward(vt_trainer *t, int n);
/* After rank 0's validation (status st): its status and metrics (t->prog) on every rank. */
vt_status vt_dist_share_metrics(vt_trainer *t, vt_status st);
/* Before a step's forward (n: this rank's images): the ranks agree that every one has
 * images; the CPU backend's batch-wide terms (sync_bn's BN, the Dice loss) then sum over them,
 * or (some rank has none) not this step. */
vt_status vt_dist_step_syncs(vt_trainer *t, int n);
/* After the step's backward: the syncs off (validation's shards run their own batches). */
void vt_dist_step_end(vt_trainer *t);

/* ---- ema.c ---- */
/* Allocate the EMA (and scratch) buffers and start them from the given host copies (resume)
 * or from the current weights. */
vt_status vt_ema_prepare(vt_trainer *t, const float *ema_p_host, const float *ema_b_host);
/* One EMA update after an optimiser step (decay ramped up as in Ultralytics' ModelEMA). */
vt_status vt_ema_update(vt_trainer *t);
/* Swap the executor's weights with the EMA (twice restores them). */
vt_status vt_ema_swap(vt_trainer *t);

/* ---- trainer.c, used by train_state.c ---- */
vt_status vt_trainer_pull_weights(vt_trainer *t);
/* The training image size: the imgsz option, else the model's. */
int vt_trainer_imgsz(const vt_trainer *t);
/* Decode images `indices` of L's split into the executor's input (and their labels into
 * t->host_labels), staging through t->host_batch when the backend is a device. */
struct vt_loader;
vt_status vt_trainer_fill_input(vt_trainer *t, struct vt_loader *L, const int *indices, int n,
                                uint64_t aug_seed, int *ok);
/* Validation driver shared by the tasks: every image of a split, batch by batch, decoded into
 * the executor's input and run forward; then fn(t, L, n, ctx) reads the outputs (the batch's
 * labels are in t->host_labels, its boxes or masks in L).  Unreadable batches are skipped
 * (warnings logged).  keep: as for the tasks' evaluate functions.  VT_ERR_DATASET when the
 * split is empty or nothing could be read. */
typedef vt_status (*vt_eval_fn)(vt_trainer *t, struct vt_loader *L, int n, void *ctx);
vt_status vt_trainer_eval_batches(vt_trainer *t, vt_split split, int batch,
                                  struct vt_loader **keep, vt_eval_fn fn, void *ctx);
/* Validation metrics of a split into t->prog (the task's), reusing *keep as the loader when
 * non-NULL (created on first use; a run keeps one so unreadable images warn once). */
vt_status vt_trainer_evaluate(vt_trainer *t, vt_split split, int batch, struct vt_loader **keep);
/* The task's context, brought up to date with the trainer (backend, executor, buffers). */
vt_task_ctx *vt_trainer_task_ctx(vt_trainer *t);
/* The augmentation parameters of the trainer's options. */
struct vt_aug_params;
void vt_trainer_aug_params(const vt_trainer *t, struct vt_aug_params *p);

#endif
