/* batch=-1: the largest batch that fits a share of the device's memory (autobatch.h). */
#include "train/autobatch.h"
#include "nn/train_memory.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/augment.h"
#include "data/loader.h"

#define TRY VT_TRY

/* ---- a fake allocation limit (vt_autobatch_test.alloc_limit) ------------------------------ */

/* While the limit holds, the backend's ops pointer is `ops` below: its alloc fails with
 * VT_ERR_DEVICE_OOM, as a full device does, once the blocks allocated under it would exceed
 * `limit` bytes. */
typedef struct limited {
    vt_backend_ops ops; /* first member: b->ops points here */
    const vt_backend_ops *real;
    size_t limit, held, peak;
    struct block {
        void *p;
        size_t n;
    } *blocks;
    int nblocks, cap;
} limited;

static limited *limited_of(vt_backend *b) { return (limited *)(void *)b->ops; }

static void *limited_alloc(vt_backend *b, size_t bytes)
{
    limited *l = limited_of(b);
    if (l->held + bytes > l->limit) {
        vt_fail(VT_ERR_DEVICE_OOM, "out of memory: %zu bytes asked with %zu held under a limit of "
                "%zu", bytes, l->held, l->limit);
        return NULL;
    }
    if (l->nblocks == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        struct block *nb = vt_realloc(l->blocks, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        l->blocks = nb;
        l->cap = cap;
    }
    void *p = l->real->alloc(b, bytes);
    if (p) {
        l->blocks[l->nblocks++] = (struct block){p, bytes};
        l->held += bytes;
        if (l->held > l->peak) l->peak = l->held;
    }
    return p;
}

static void limited_free(vt_backend *b, void *p)
{
    limited *l = limited_of(b);
    for (int i = 0; p && i < l->nblocks; i++)
        if (l->blocks[i].p == p) {
            l->held -= l->blocks[i].n;
            l->blocks[i] = l->blocks[--l->nblocks];
            break;
        }
    l->real->free(b, p);
}

/* ---- the choice --------------------------------------------------------------------------- */

static int is_oom(vt_status st) { return st == VT_ERR_OUT_OF_MEMORY || st == VT_ERR_DEVICE_OOM; }

/* The largest batch in 1..cap whose modelled training memory is within budget: 0 when not even
 * one image fits, -1 when the model fails. */
static int modelled_batch(vt_trainer *t, double budget, int cap, int states, int on_gpu,
                          double *bytes)
{
    const vt_graph *g = &t->model->graph;
    int sz = vt_trainer_imgsz(t), from = vt_trainer_grad_from(t);
    double m = vt_train_memory(g, sz, sz, 1, (int)sizeof(float), states, on_gpu,
                               from);
    *bytes = m;
    if (m < 0) return -1;
    if (m > budget) return 0;
    int lo = 1, hi = cap; /* lo fits; the memory grows with the batch */
    double mh = vt_train_memory(g, sz, sz, hi, (int)sizeof(float), states, on_gpu,
                               from);
    if (mh < 0) return -1;
    if (mh <= budget) {
        *bytes = mh;
        return hi;
    }
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        double mm = vt_train_memory(g, sz, sz, mid, (int)sizeof(float), states, on_gpu,
                               from);
        if (mm < 0) return -1;
        if (mm <= budget) lo = mid, *bytes = mm;
        else hi = mid;
    }
    return lo;
}

/* One training step of `b` images (the first of the training images), without the update:
 * what the run's steps will allocate. */
static vt_status trial_step(vt_trainer *t, vt_loader *L, const int *subset, int b, int *checked)
{
    *checked = 0;
    TRY(vt_trainer_prepare_step(t, b));
    int ok = 0;
    vt_status st = vt_trainer_fill_input(t, L, subset, b, 1, &ok);
    if (st == VT_ERR_DATASET || (!st && ok < 2)) { /* unreadable images: warned, not checked */
        vt_err_clear();
        return VT_OK;
    }
    TRY(st);
    vt_exec *e = t->exec;
    e->n = ok;
    e->dropout_seed = 1;
    float loss;
    TRY(vt_exec_forward(e, 1));
    TRY(t->task->batch_loss(vt_trainer_task_ctx(t), L, ok, 1, &loss));
    TRY(vt_exec_backward_outputs(e, t->model->outputs, t->model->n_outputs));
    TRY(t->be->ops->synchronize(t->be));
    *checked = 1;
    return VT_OK;
}

/* Step at b, halving on out-of-memory, until one fits (*b: that batch) or 2 does not. */
static vt_status check_batch(vt_trainer *t, const int *subset, int *b, vt_autobatch_test *test,
                             int *halvings, int *checked)
{
    vt_aug_params aug;
    vt_trainer_aug_params(t, &aug);
    vt_loader_config cfg = {vt_trainer_imgsz(t), t->model->channels,
                            (int)vt_opt_num(&t->opts, VT_OPT_WORKERS), &aug, &t->log, NULL, NULL,
                            NULL, t->task->sample};
    vt_loader *L = NULL;
    TRY(vt_loader_create(&L, t->ds, VT_SPLIT_TRAIN, &cfg));
    limited *lim = NULL;
    vt_backend *be = t->be;
    if (test && test->alloc_limit > 0) {
        lim = vt_calloc(1, sizeof *lim);
        if (!lim) {
            vt_loader_destroy(L);
            return VT_ERR_OUT_OF_MEMORY;
        }
        lim->ops = *be->ops;
        lim->ops.alloc = limited_alloc;
        lim->ops.free = limited_free;
        lim->real = be->ops;
        lim->limit = test->alloc_limit;
        be->ops = &lim->ops;
    }
    vt_status st;
    *halvings = 0;
    for (;;) {
        st = trial_step(t, L, subset, *b, checked);
        if (test && test->ntried < VT_AUTOBATCH_MAX_TRIES) {
            test->tried[test->ntried] = *b;
            test->peak[test->ntried] = lim ? lim->peak : 0;
            test->fitted[test->ntried++] = st == VT_OK;
        }
        if (lim) lim->peak = lim->held;
        if (!is_oom(st) || *b <= 2) break;
        vt_log(&t->log, VT_LOG_DEBUG, "batch=-1: batch %d ran out of memory (%s); trying %d", *b,
               vt_last_error(), *b / 2 > 2 ? *b / 2 : 2);
        vt_err_clear();
        *b = *b / 2 > 2 ? *b / 2 : 2;
        (*halvings)++;
    }
    if (lim) {
        be->ops = lim->real;
        free(lim->blocks);
        free(lim);
    }
    vt_loader_destroy(L);
    return st;
}

vt_status vt_autobatch(vt_trainer *t, const int *subset, int ntrain, vt_autobatch_test *test,
                       int *batch)
{
    *batch = 2;
    if (ntrain < 2) return VT_OK; /* the run says there is too little to train */
    /* the device's weights are restored from the model after the checks */
    if (t->dirty) TRY(vt_trainer_pull_weights(t));
    TRY(vt_trainer_prepare_step(t, 2)); /* the device open, the weights on it */
    int gpu = vt_device_is_gpu(&t->dev);
    size_t total = 0, avail = 0, held = 0, peak = 0;
    if (test && test->memory_bytes > 0) total = avail = (size_t)test->memory_bytes;
    else TRY(vt_device_capacity(&t->dev, &total, &avail));
    double frac = vt_opt_num(&t->opts, VT_OPT_AUTOBATCH_FRACTION);
    /* a GPU's free memory does not count what this trainer already holds (the model's share) */
    if (gpu) vt_device_memory(&t->dev, t->be, &held, &peak);
    double budget = gpu ? fmin(frac * (double)total, (double)avail + (double)held)
                        : frac * (double)avail;
    int most = gpu ? VT_AUTOBATCH_GPU_MAX : VT_AUTOBATCH_CPU_MAX;
    int cap = ntrain < most ? ntrain : most;
    int states = strcmp(vt_opt_str(&t->opts, VT_OPT_OPTIMIZER), "adamw") == 0 ? 2 : 1;
    int sz = vt_trainer_imgsz(t);
    double bytes;
    int b = modelled_batch(t, budget, cap, states, gpu, &bytes);
    if (test) test->modelled = b;
    const char *where = gpu ? "of the GPU's memory" : "of the available host memory";
    if (b < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "batch=-1: no memory model for %s: %s",
                              t->model->arch, vt_last_error());
    if (b < 2) {
        double two = vt_train_memory(&t->model->graph, sz, sz, 2, (int)sizeof(float), states, gpu,
                                     vt_trainer_grad_from(t));
        return vt_fail(VT_ERR_OUT_OF_MEMORY,
                       "batch=-1: training %s at imgsz %d needs %.3g GB for 2 images, more than "
                       "autobatch_fraction=%g %s (%.3g GB); use a smaller imgsz or model, or "
                       "set batch", t->model->arch, sz, two / 1e9, frac, where, budget / 1e9);
    }
    int modelled = b, halvings = 0, checked = 0;
    vt_status st = check_batch(t, subset, &b, test, &halvings, &checked);
    t->dev_version = 0; /* the step moved batch-norm statistics: upload the model's again */
    if (is_oom(st))
        return vt_fail(st, "batch=-1: even a step of 2 images ran out of memory: %s",
                       vt_last_error());
    TRY(st);
    TRY(vt_optvals_set_num(&t->opts, VT_OPT_BATCH, b));
    *batch = b;
    vt_log(&t->log, VT_LOG_INFO,
           "batch=-1: batch %d (memory model: %d images in %.3g GB, within autobatch_fraction=%g "
           "%s, %.3g GB%s; %s)", b, modelled, bytes / 1e9, frac, where, budget / 1e9,
           modelled == ntrain ? ", capped at the training images"
           : modelled == most ? (gpu ? ", capped at 1024" : ", capped at 512 on the CPU")
                              : "",
           !checked      ? "not checked: its images could not be read"
           : halvings    ? "halved after running out of memory, then a step fitted"
                         : "a training step at it fitted");
    return VT_OK;
}
