/* What the tasks share (task.h). */
#include "task/task.h"

#include "task/detect_eval.h"

#include <stdlib.h>
#include <string.h>

#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_ != VT_OK) return st_;                                                              \
    } while (0)

vt_status vt_task_confusion(vt_task_ctx *c, int k)
{
    if (*c->confusion_k != k) {
        free(*c->confusion);
        *c->confusion = k > 0 ? vt_calloc((size_t)k * k, sizeof(int64_t)) : NULL;
        *c->confusion_k = *c->confusion ? k : 0;
    }
    if (k <= 0) return VT_OK;
    if (!*c->confusion) return VT_ERR_OUT_OF_MEMORY;
    memset(*c->confusion, 0, (size_t)k * k * sizeof(int64_t));
    return VT_OK;
}

vt_status vt_task_shard_sum(vt_task_ctx *c, double *x, size_t n)
{
    return c->shards > 1 && n ? c->shard_sum(c, x, n) : VT_OK;
}

vt_status vt_task_shard_sum_i64(vt_task_ctx *c, int64_t *x, size_t n)
{
    if (c->shards <= 1 || !n) return VT_OK;
    enum { PART = 4096 };
    double buf[PART];
    for (size_t i0 = 0; i0 < n; i0 += PART) {
        size_t k = n - i0 < PART ? n - i0 : PART;
        for (size_t i = 0; i < k; i++) buf[i] = (double)x[i0 + i];
        TRY(c->shard_sum(c, buf, k));
        for (size_t i = 0; i < k; i++) x[i0 + i] = (int64_t)buf[i];
    }
    return VT_OK;
}

vt_status vt_task_shard_confusion(vt_task_ctx *c)
{
    if (c->shards <= 1) return VT_OK;
    int k = *c->confusion ? *c->confusion_k : 0;
    double have[2] = {k > 0, k};
    TRY(c->shard_sum(c, have, 2));
    if (have[0] != c->shards || have[1] != (double)c->shards * k) { /* one shard has none */
        free(*c->confusion);
        *c->confusion = NULL;
        *c->confusion_k = 0;
        return VT_OK;
    }
    return vt_task_shard_sum_i64(c, *c->confusion, (size_t)k * k);
}

vt_status vt_task_shard_det_eval(vt_task_ctx *c, vt_det_eval *ev)
{
    if (c->shards <= 1) return VT_OK;
    void *all = NULL;
    size_t bytes = 0;
    TRY(c->shard_gather(c, ev->rec, ev->nrec * sizeof *ev->rec, &all, &bytes));
    size_t k = (size_t)ev->nc + 1;
    vt_status st = vt_task_shard_sum_i64(c, ev->num_gt, (size_t)ev->nc);
    if (!st) st = vt_task_shard_sum_i64(c, ev->confusion, k * k);
    if (!st) { /* every shard's records, its own among them */
        ev->nrec = 0;
        st = vt_det_eval_absorb(ev, all, bytes / sizeof *ev->rec, NULL, NULL);
    }
    free(all);
    return st;
}
