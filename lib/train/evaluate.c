/* Validation: the batch driver shared by the tasks, the classification metrics, and the task
 * dispatch (detection in detect_train.c, segmentation in segment_train.c). */
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "train/trainer_impl.h"

#define TRY VT_TRY

/* Decode a batch into the executor's input: directly when backend memory is host memory, else
 * into the host staging batch and then one upload (a device cannot be written by the loader's
 * threads). */
vt_status vt_trainer_fill_input(vt_trainer *t, vt_loader *L, const int *indices, int n,
                                uint64_t aug_seed, int *ok)
{
    vt_backend *be = t->be;
    float *dst = be->ops->host_memory ? vt_exec_input(t->exec) : t->host_batch;
    vt_status st = vt_loader_fill(L, indices, n, aug_seed, dst, t->host_labels, ok);
    if (st || be->ops->host_memory) return st;
    int sz = vt_trainer_imgsz(t);
    return be->ops->upload(be, vt_exec_input(t->exec), t->host_batch,
                           (size_t)t->model->channels * *ok * sz * sz * sizeof(float));
}

/* ---- evaluation ---- */

vt_status vt_trainer_eval_batches(vt_trainer *t, vt_split split, int batch, vt_loader **keep,
                                  vt_eval_fn fn, void *ctx)
{
    vt_dataset *ds = t->ds;
    int total = ds->split[split].n;
    if (total == 0)
        return vt_fail(VT_ERR_DATASET, "%s: the dataset has no %s images", ds->root,
                       split == VT_SPLIT_VAL ? "validation" : split == VT_SPLIT_TEST ? "test" : "train");
    vt_model *m = t->model;
    vt_loader_config cfg = {vt_trainer_imgsz(t), m->channels, (int)vt_opt_num(&t->opts, VT_OPT_WORKERS),
                            NULL, &t->log, NULL, NULL, NULL};
    vt_loader *L = keep ? *keep : NULL;
    if (!L) TRY(vt_loader_create(&L, ds, split, &cfg));
    if (keep) *keep = L;
    int *idx = vt_malloc((size_t)batch * sizeof(int));
    vt_status st = idx ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    long seen = 0;
    for (int b0 = 0; !st && b0 < total; b0 += batch) {
        int n = total - b0 < batch ? total - b0 : batch, ok;
        for (int i = 0; i < n; i++) idx[i] = b0 + i;
        st = vt_trainer_fill_input(t, L, idx, n, 0, &ok);
        if (st == VT_ERR_DATASET) { /* a whole unreadable batch: skip it, warnings logged */
            st = VT_OK;
            continue;
        }
        if (st) break;
        t->exec->n = ok;
        if ((st = vt_exec_forward(t->exec, 0)) || (st = fn(t, L, ok, ctx))) break;
        seen += ok;
    }
    free(idx);
    if (!keep) vt_loader_destroy(L);
    if (st) return st;
    if (seen == 0) return vt_fail(VT_ERR_DATASET, "%s: no validation image could be read", ds->root);
    return VT_OK;
}

/* Classification: loss, top-1/top-5 and the confusion matrix of one validation batch. */
typedef struct cls_eval {
    double loss;
    long seen, top1, top5;
} cls_eval;

static vt_status cls_batch(vt_trainer *t, vt_loader *L, int ok, void *ctx)
{
    (void)L;
    cls_eval *c = ctx;
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    int K = t->model->num_classes;
    vt_node *out = &e->g->nodes[t->model->output_node];
    float ls;
    TRY(be->ops->upload(be, e->labels, t->host_labels, (size_t)ok * sizeof(int32_t)));
    TRY(be->ops->softmax_xent(be, K, ok, out->y, e->labels, 0.0f, 0.0f, e->loss, NULL, out->dy));
    TRY(be->ops->download(be, t->host_probs, out->dy, (size_t)K * ok * sizeof(float)));
    TRY(be->ops->download(be, &ls, e->loss, sizeof ls));
    c->loss += ls;
    for (int i = 0; i < ok; i++) {
        int lab = t->host_labels[i], rank = 0, pred = 0;
        float pl = t->host_probs[(size_t)lab * ok + i], pbest = -1;
        for (int k = 0; k < K; k++) {
            float p = t->host_probs[(size_t)k * ok + i];
            if (p > pl || (p == pl && k < lab)) rank++;
            if (p > pbest) {
                pbest = p;
                pred = k;
            }
        }
        if (t->confusion) t->confusion[(size_t)lab * K + pred]++;
        c->top1 += rank == 0;
        c->top5 += rank < 5;
    }
    c->seen += ok;
    return VT_OK;
}

/* `keep`: NULL, or a loader kept across calls (a run's validation loader, created on the first
 * call), so that an unreadable image is warned about once per run. */
vt_status vt_trainer_evaluate(vt_trainer *t, vt_split split, int batch, vt_loader **keep)
{
    if (t->model->task == VT_TASK_DETECT) return vt_det_evaluate(t, split, batch, keep);
    if (t->model->task == VT_TASK_SEGMENT) return vt_seg_evaluate(t, split, batch, keep);
    int K = t->model->num_classes;
    if (t->confusion_k != K) {
        free(t->confusion);
        t->confusion = NULL;
        t->confusion_k = 0;
        if (K <= 4096) { /* beyond that a matrix is neither cheap nor readable */
            t->confusion = vt_calloc((size_t)K * K, sizeof(int64_t));
            if (t->confusion) t->confusion_k = K;
        }
    }
    if (t->confusion) memset(t->confusion, 0, (size_t)K * K * sizeof(int64_t));
    cls_eval c = {0, 0, 0, 0};
    TRY(vt_trainer_eval_batches(t, split, batch, keep, cls_batch, &c));
    vt_progress_set(&t->prog, VT_METRIC_VAL_LOSS, c.loss / c.seen);
    vt_progress_set(&t->prog, VT_METRIC_TOP1, (double)c.top1 / c.seen);
    vt_progress_set(&t->prog, VT_METRIC_TOP5, (double)c.top5 / c.seen);
    return VT_OK;
}

