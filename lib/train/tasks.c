/* The task registry: one line per task the trainer can run (lib/task/task.h). */
#include "train/trainer_impl.h"

/* Segmentation's training code is still the trainer's (segment_train.c, its state in the
 * trainer); this table puts it behind the same interface as the others. */
static vt_status seg_batch_loss(vt_task_ctx *c, struct vt_loader *L, int n, int with_grad,
                                float *loss)
{
    return vt_seg_batch_loss(c->trainer, L, n, with_grad, loss);
}

static vt_status seg_evaluate(vt_task_ctx *c, vt_split split, int batch, struct vt_loader **keep)
{
    return vt_seg_evaluate(c->trainer, split, batch, keep);
}

static void seg_release(vt_task_ctx *c) { vt_seg_release(c->trainer); }

static const vt_metric seg_metrics[] = {VT_METRIC_MIOU, VT_METRIC_PIXEL_ACC};
static const char *const seg_cols[] = {"metrics/mIoU", "metrics/pixel_acc"};
static const unsigned char seg_plot[] = {1, 1};

static const vt_task_iface task_segment = {
    .id = VT_TASK_SEGMENT,
    .name = "segment",
    .n_metrics = 2,
    .metrics = seg_metrics,
    .metric_cols = seg_cols,
    .metric_plot = seg_plot,
    .fitness = VT_METRIC_MIOU,
    .sample = VT_SAMPLE_MASK,
    .batch_loss = seg_batch_loss,
    .evaluate = seg_evaluate,
    .release = seg_release,
    .confusion_unit = "pixels",
    .val_tile = vt_task_segment_tile,
    .val_pred_title = "Validation images: predicted masks",
    .mask_background = 1,
};

static const vt_task_iface *const registry[] = {
    &vt_task_classify,
    &vt_task_detect,
    &task_segment,
};

const vt_task_iface *vt_task_find(vt_task id)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i]->id == id) return registry[i];
    return NULL;
}

const char *vt_task_dir_name(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->name : "task";
}
