/* Validation: the batch driver shared by the tasks, and the task's context (lib/task/task.h). */
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
    vt_loader_config cfg = {vt_trainer_imgsz(t), m->channels,
                            (int)vt_opt_num(&t->opts, VT_OPT_WORKERS), NULL, &t->log, NULL, NULL,
                            NULL, t->task->sample};
    vt_loader *L = keep ? *keep : NULL;
    const vt_task_ctx *c = &t->tc; /* its shard fields: this rank's batches */
    /* a shard that fails before its batches still meets the others' agreement below */
    vt_status st = L ? VT_OK : vt_loader_create(&L, ds, split, &cfg);
    if (st && c->shards <= 1) return st;
    if (keep && !st) *keep = L;
    int *idx = st ? NULL : vt_malloc((size_t)batch * sizeof(int));
    if (!st && !idx) st = VT_ERR_OUT_OF_MEMORY;
    long seen = 0;
    for (int b0 = 0, bi = 0; !st && b0 < total; b0 += batch, bi++) {
        if (bi % c->shards != c->shard) continue;
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
    if (!keep && L) vt_loader_destroy(L);
    if (c->shards > 1) { /* the shards stop together, and count every shard's images */
        double v[1] = {(double)seen};
        st = vt_dist_agree(t, st, v, 1, VT_COMM_SUM);
        seen = (long)v[0];
    }
    if (st) return st;
    if (seen == 0) return vt_fail(VT_ERR_DATASET, "%s: no validation image could be read", ds->root);
    return VT_OK;
}

/* The shard hooks of the task's context (task.h), over the run's communicator. */
static vt_status ctx_shard_sum(vt_task_ctx *c, double *x, size_t n)
{
    vt_trainer *t = c->trainer;
    if (c->shards <= 1 || !n) return VT_OK;
    return t->comm->ops->allreduce_host(t->comm, x, n, VT_COMM_SUM);
}

static vt_status ctx_shard_gather(vt_task_ctx *c, const void *mine, size_t bytes, void **all,
                                  size_t *all_bytes)
{
    vt_trainer *t = c->trainer;
    *all = NULL;
    *all_bytes = 0;
    int n = c->shards > 1 ? c->shards : 1;
    double *cnt = vt_calloc((size_t)n, sizeof *cnt);
    size_t *sz = vt_calloc((size_t)n, sizeof *sz);
    vt_status st = cnt && sz ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (n > 1) { /* every shard's size, then the bytes, once every shard has the room */
        if (cnt) cnt[c->shard] = (double)bytes;
        st = vt_dist_agree(t, st, NULL, 0, VT_COMM_MAX);
        if (!st) st = ctx_shard_sum(c, cnt, (size_t)n);
    } else if (cnt) {
        cnt[0] = (double)bytes;
    }
    size_t total = 0;
    for (int r = 0; !st && r < n; r++) total += sz[r] = (size_t)cnt[r];
    void *buf = st ? NULL : vt_malloc(total ? total : 1);
    if (!st && !buf) st = VT_ERR_OUT_OF_MEMORY;
    if (n > 1) st = vt_dist_agree(t, st, NULL, 0, VT_COMM_MAX);
    if (!st) {
        if (n > 1) st = t->comm->ops->allgather_host(t->comm, mine, sz, buf);
        else if (bytes) memcpy(buf, mine, bytes);
    }
    free(cnt);
    free(sz);
    if (st) {
        free(buf);
        return st;
    }
    *all = total ? buf : NULL;
    *all_bytes = total;
    if (!total) free(buf);
    return VT_OK;
}

/* The task's view of the driver: fn gets the task's context. */
typedef struct task_batches {
    vt_task_ctx *c;
    vt_task_batch_fn fn;
    void *arg;
} task_batches;

static vt_status task_batch(vt_trainer *t, vt_loader *L, int n, void *ctx)
{
    (void)t;
    task_batches *tb = ctx;
    return tb->fn(tb->c, L, n, tb->arg);
}

static vt_status ctx_eval_batches(vt_task_ctx *c, vt_split split, int batch, vt_loader **keep,
                                  vt_task_batch_fn fn, void *arg)
{
    task_batches tb = {c, fn, arg};
    return vt_trainer_eval_batches(c->trainer, split, batch, keep, task_batch, &tb);
}

vt_task_ctx *vt_trainer_task_ctx(vt_trainer *t)
{
    vt_task_ctx *c = &t->tc;
    c->model = t->model;
    c->ds = t->ds;
    c->be = t->be;
    c->exec = t->exec;
    c->imgsz = vt_trainer_imgsz(t);
    c->label_smoothing = (float)vt_opt_num(&t->opts, VT_OPT_LABEL_SMOOTHING);
    c->dice = (float)vt_opt_num(&t->opts, VT_OPT_DICE);
    c->host_labels = t->host_labels;
    c->host_probs = t->host_probs;
    c->prog = &t->prog;
    c->confusion = &t->confusion;
    c->confusion_k = &t->confusion_k;
    c->eval_batches = ctx_eval_batches;
    c->shards = t->dist_on && t->val_sharded ? t->world : 1;
    c->shard = c->shards > 1 ? t->rank : 0;
    c->shard_sum = ctx_shard_sum;
    c->shard_gather = ctx_shard_gather;
    c->trainer = t;
    return c;
}

/* `keep`: NULL, or a loader kept across calls (a run's validation loader, created on the first
 * call), so that an unreadable image is warned about once per run. */
vt_status vt_trainer_evaluate(vt_trainer *t, vt_split split, int batch, vt_loader **keep)
{
    return t->task->evaluate(vt_trainer_task_ctx(t), split, batch, keep);
}
