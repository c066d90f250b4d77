/* The trainer: options, the epoch loop, the optimiser and LR schedule, validation, progress.
 *
 * Schedule (per optimiser step, x = fractional epoch, E = epochs):
 *   decay(x) = cosine: 1 - (1 - lrf) * (1 - cos(pi * x / E)) / 2;  linear: 1 - (1 - lrf) * x / E
 *   lr = lr0 * decay(x), multiplied by step / warmup_steps during the first
 *   warmup_epochs * batches_per_epoch steps. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "vt_config.h"
#if VT_HAVE_CUDA
#include "cuda/cuda_device.h"
#endif

enum { NMETRIC = 8 };

struct vt_progress {
    int epoch, epochs, batch, batches;
    int64_t iteration;
    double value[NMETRIC];
    unsigned char has[NMETRIC];
};

struct vt_trainer {
    char err[VT_ERRMSG_MAX];
    vt_model *model;
    vt_dataset *ds;
    vt_optvals opts;
    vt_logger log;
    vt_progress_fn cb;
    void *cb_user;
    atomic_int cancel;

    char device[VT_OPT_STR_MAX]; /* device of be */
    vt_backend *be;
    vt_exec *exec;
    float *opt_m, *opt_v;        /* optimiser state, backend memory */
    int64_t opt_t;               /* AdamW step count */
    float *host_batch;
    int32_t *host_labels;
    size_t host_cap;             /* floats in host_batch */
    float *host_probs;
    int host_probs_cap;
    vt_progress prog;            /* latest values, also what callbacks see */
    uint64_t dev_version;        /* model->version the device weights correspond to */
    int dirty;                   /* device weights are newer than the model's host copy */
};

#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

static void set_metric(vt_progress *p, vt_metric m, double v)
{
    p->value[m] = v;
    p->has[m] = 1;
}

/* ---- progress getters ---- */

VT_API int vt_progress_epoch(const vt_progress *p) { return p ? p->epoch : 0; }
VT_API int vt_progress_epochs(const vt_progress *p) { return p ? p->epochs : 0; }
VT_API int vt_progress_batch(const vt_progress *p) { return p ? p->batch : 0; }
VT_API int vt_progress_batches(const vt_progress *p) { return p ? p->batches : 0; }
VT_API int64_t vt_progress_iteration(const vt_progress *p) { return p ? p->iteration : 0; }

VT_API vt_status vt_progress_metric(const vt_progress *p, vt_metric metric, double *value)
{
    if (!p || !value || (int)metric < 1 || (int)metric >= NMETRIC)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_progress_metric: bad argument");
    if (!p->has[metric]) return vt_fail(VT_ERR_NOT_FOUND, "metric %d is not available yet", metric);
    *value = p->value[metric];
    return VT_OK;
}

/* ---- lifetime and options ---- */

VT_API vt_status vt_trainer_create(vt_trainer **out, vt_model *model, vt_dataset *ds)
{
    if (!out || !model) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_create: NULL argument");
    *out = NULL;
    if (ds && ds->task != model->task)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "the dataset's task (%d) is not the model's (%d)",
                       ds->task, model->task);
    if (ds && ds->num_classes != model->num_classes)
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "the dataset %s has %d classes but the model was built for %d", ds->root,
                       ds->num_classes, model->num_classes);
    vt_trainer *t = vt_calloc(1, sizeof *t);
    if (!t) return VT_ERR_OUT_OF_MEMORY;
    t->model = model;
    t->ds = ds;
    vt_optvals_init(&t->opts, VT_SCOPE_TRAINER);
    atomic_init(&t->cancel, 0);
    *out = t;
    return VT_OK;
}

static void release_device(vt_trainer *t)
{
    if (t->be) {
        t->be->ops->free(t->be, t->opt_m);
        t->be->ops->free(t->be, t->opt_v);
    }
    t->opt_m = t->opt_v = NULL;
    vt_exec_destroy(t->exec);
    t->exec = NULL;
    vt_backend_destroy(t->be);
    t->be = NULL;
    t->device[0] = 0;
}

static vt_status pull_weights(void *ctx);
static void mark_dirty(vt_trainer *t);

VT_API void vt_trainer_destroy(vt_trainer *t)
{
    if (!t) return;
    /* Hand the latest weights to the model; a failure here cannot be reported, and the model
     * then keeps the weights of its last successful sync. */
    if (t->dirty) pull_weights(t);
    if (t->model->pull_ctx == t) {
        t->model->pull = NULL;
        t->model->pull_ctx = NULL;
    }
    release_device(t);
    free(t->host_batch);
    free(t->host_labels);
    free(t->host_probs);
    free(t);
}

VT_API const char *vt_trainer_last_error(const vt_trainer *t) { return t ? t->err : ""; }

VT_API vt_status vt_trainer_set_int(vt_trainer *t, vt_option o, int64_t v)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    return vt_err_capture(t->err, vt_optvals_set_num(&t->opts, o, (double)v));
}

VT_API vt_status vt_trainer_set_float(vt_trainer *t, vt_option o, double v)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    return vt_err_capture(t->err, vt_optvals_set_num(&t->opts, o, v));
}

VT_API vt_status vt_trainer_set_string(vt_trainer *t, vt_option o, const char *v)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    return vt_err_capture(t->err, vt_optvals_set_str(&t->opts, o, v));
}

VT_API vt_status vt_trainer_set(vt_trainer *t, const char *kv)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    return vt_err_capture(t->err, vt_optvals_set_kv(&t->opts, kv));
}

VT_API vt_status vt_trainer_get_float(const vt_trainer *t, vt_option o, double *v)
{
    if (!t || !v) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_get_float: NULL argument");
    const vt_optdef *d = vt_optdef_by_id(o);
    if (!d || !(d->scope & VT_SCOPE_TRAINER) || d->type == VT_OPTION_STRING)
        return vt_fail(VT_ERR_UNKNOWN_OPTION, "option %d is not a numeric trainer option", o);
    *v = vt_opt_num(&t->opts, o);
    return VT_OK;
}

VT_API void vt_trainer_set_log(vt_trainer *t, vt_log_fn fn, void *user, vt_log_level max_level)
{
    if (!t) return;
    t->log.fn = fn;
    t->log.user = user;
    t->log.max_level = max_level;
}

VT_API void vt_trainer_set_progress(vt_trainer *t, vt_progress_fn fn, void *user)
{
    if (!t) return;
    t->cb = fn;
    t->cb_user = user;
}

VT_API void vt_trainer_cancel(vt_trainer *t)
{
    if (t) atomic_store(&t->cancel, 1);
}

VT_API vt_status vt_trainer_metric(const vt_trainer *t, vt_metric m, double *v)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    return vt_progress_metric(&t->prog, m, v);
}

/* ---- device and buffers ---- */

static int imgsz_of(const vt_trainer *t)
{
    int s = (int)vt_opt_num(&t->opts, VT_OPT_IMGSZ);
    return s > 0 ? s : t->model->imgsz;
}

static vt_status open_backend(vt_trainer *t)
{
    const char *dev = vt_opt_str(&t->opts, VT_OPT_DEVICE);
    if (t->be && strcmp(dev, t->device) == 0) return VT_OK;
    if (t->dirty) TRY(pull_weights(t)); /* moving devices: keep what was trained */
    release_device(t);
    if (strcmp(dev, "cpu") == 0) {
        TRY(vt_backend_cpu_create(&t->be, 0));
    } else {
#if VT_HAVE_CUDA
        TRY(vt_backend_cuda_create(&t->be, atoi(dev)));
        vt_backend_cuda_set_fp32(t->be, strcmp(vt_opt_str(&t->opts, VT_OPT_PRECISION), "fp32") == 0);
#else
        return vt_fail(VT_ERR_DEVICE,
                       "device=%s: this build of libvisiontrain has no CUDA support; use "
                       "device=cpu or rebuild with -Dcuda=enabled", dev);
#endif
    }
    snprintf(t->device, sizeof t->device, "%s", dev);
    vt_status st = vt_exec_create(&t->exec, &t->model->graph, t->be);
    if (st) release_device(t);
    t->dev_version = 0; /* fresh device memory: upload */
    return st;
}

/* Backend for the current device, activations for batch x imgsz, host staging buffers, and the
 * model's weights uploaded. */
static vt_status prepare(vt_trainer *t, int batch)
{
    if (t->model->pull_ctx != t) TRY(vt_model_pull(t->model)); /* another trainer's weights */
    TRY(open_backend(t));
    int sz = imgsz_of(t);
    TRY(vt_exec_prepare(t->exec, batch, sz, sz));
    size_t need = (size_t)batch * t->model->channels * sz * sz;
    if (need > t->host_cap) {
        free(t->host_batch);
        free(t->host_labels);
        t->host_batch = vt_malloc(need * sizeof(float));
        t->host_labels = vt_malloc((size_t)batch * sizeof(int32_t));
        t->host_cap = t->host_batch && t->host_labels ? need : 0;
        if (!t->host_cap) return VT_ERR_OUT_OF_MEMORY;
    }
    int np = t->model->num_classes * batch;
    if (np > t->host_probs_cap) {
        free(t->host_probs);
        t->host_probs = vt_malloc((size_t)np * sizeof(float));
        t->host_probs_cap = t->host_probs ? np : 0;
        if (!t->host_probs) return VT_ERR_OUT_OF_MEMORY;
    }
    if (t->dirty || t->dev_version == t->model->version) return VT_OK;
    TRY(vt_exec_set_params(t->exec, t->model->params, t->model->buffers));
    t->dev_version = t->model->version;
    return VT_OK;
}

static vt_status reset_optimizer(vt_trainer *t)
{
    vt_backend *be = t->be;
    size_t n = (size_t)t->model->graph.n_params;
    if (!t->opt_m && !(t->opt_m = be->ops->alloc(be, n * sizeof(float)))) return VT_ERR_OUT_OF_MEMORY;
    if (!t->opt_v && !(t->opt_v = be->ops->alloc(be, n * sizeof(float)))) return VT_ERR_OUT_OF_MEMORY;
    TRY(be->ops->fill(be, t->opt_m, n, 0.0f));
    TRY(be->ops->fill(be, t->opt_v, n, 0.0f));
    t->opt_t = 0;
    return VT_OK;
}

static int is_adamw(const vt_trainer *t) { return strcmp(vt_opt_str(&t->opts, VT_OPT_OPTIMIZER), "adamw") == 0; }

static double base_lr(const vt_trainer *t)
{
    double lr0 = vt_opt_num(&t->opts, VT_OPT_LR0);
    return lr0 > 0 ? lr0 : (is_adamw(t) ? 1e-3 : 1e-2);
}

static vt_status optimizer_step(vt_trainer *t, double lr)
{
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    const vt_graph *g = &t->model->graph;
    float mom = (float)vt_opt_num(&t->opts, VT_OPT_MOMENTUM);
    float wd = (float)vt_opt_num(&t->opts, VT_OPT_WEIGHT_DECAY);
    size_t nd = (size_t)g->n_decay, nn = (size_t)(g->n_params - g->n_decay);
    if (is_adamw(t)) {
        t->opt_t++;
        float b2 = 0.999f;
        float bc1 = (float)(1.0 - pow(mom, (double)t->opt_t));
        float bc2 = (float)(1.0 - pow(b2, (double)t->opt_t));
        TRY(be->ops->adamw_step(be, nd, e->params, e->grads, t->opt_m, t->opt_v, (float)lr, mom,
                                b2, 1e-8f, wd, bc1, bc2));
        if (nn)
            TRY(be->ops->adamw_step(be, nn, e->params + nd, e->grads + nd, t->opt_m + nd,
                                    t->opt_v + nd, (float)lr, mom, b2, 1e-8f, 0.0f, bc1, bc2));
    } else {
        int nest = (int)vt_opt_num(&t->opts, VT_OPT_NESTEROV);
        TRY(be->ops->sgd_step(be, nd, e->params, e->grads, t->opt_m, (float)lr, mom, wd, nest));
        if (nn)
            TRY(be->ops->sgd_step(be, nn, e->params + nd, e->grads + nd, t->opt_m + nd, (float)lr,
                                  mom, 0.0f, nest));
    }
    return VT_OK;
}

/* Forward, loss, backward and update on the batch already in the executor's input. */
static vt_status train_batch(vt_trainer *t, int n, double lr, float *loss_out)
{
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    vt_model *m = t->model;
    e->n = n;
    TRY(be->ops->upload(be, e->labels, t->host_labels, (size_t)n * sizeof(int32_t)));
    e->dropout_seed = (uint64_t)vt_opt_num(&t->opts, VT_OPT_SEED) * 0x2545F4914F6CDD1Dull +
                      (uint64_t)t->prog.iteration;
    TRY(vt_exec_forward(e, 1));
    vt_node *out = &e->g->nodes[m->output_node];
    TRY(be->ops->softmax_xent(be, m->num_classes, n, out->y, e->labels,
                              (float)vt_opt_num(&t->opts, VT_OPT_LABEL_SMOOTHING), 1.0f / n,
                              e->loss, out->dy, NULL));
    TRY(vt_exec_backward(e, m->output_node));
    TRY(optimizer_step(t, lr));
    mark_dirty(t);
    float loss_sum;
    TRY(be->ops->download(be, &loss_sum, e->loss, sizeof loss_sum));
    *loss_out = loss_sum / n;
    if (!isfinite(*loss_out))
        return vt_fail(VT_ERR_NUMERIC,
                       "training diverged: the loss became %g at iteration %lld (lr %.3g); try a "
                       "lower lr0", (double)*loss_out, (long long)t->prog.iteration + 1, lr);
    t->prog.iteration++;
    return VT_OK;
}

/* Copy the trained weights back into the model (host). */
static vt_status pull_weights(void *ctx)
{
    vt_trainer *t = ctx;
    if (!t->dirty) return VT_OK;
    TRY(vt_exec_get_params(t->exec, t->model->params, t->model->buffers));
    t->model->version++;
    t->dev_version = t->model->version;
    t->dirty = 0;
    if (t->model->pull_ctx == t) {
        t->model->pull = NULL;
        t->model->pull_ctx = NULL;
    }
    return VT_OK;
}

/* The device now holds weights newer than the model's host copy. */
static void mark_dirty(vt_trainer *t)
{
    t->dirty = 1;
    t->model->pull = pull_weights;
    t->model->pull_ctx = t;
}

/* ---- evaluation ---- */

static vt_status evaluate(vt_trainer *t, vt_split split, int batch)
{
    vt_dataset *ds = t->ds;
    int total = ds->split[split].n;
    if (total == 0)
        return vt_fail(VT_ERR_DATASET, "%s: the dataset has no %s images", ds->root,
                       split == VT_SPLIT_VAL ? "validation" : split == VT_SPLIT_TEST ? "test" : "train");
    vt_model *m = t->model;
    int sz = imgsz_of(t);
    vt_loader_config cfg = {sz, m->channels, (int)vt_opt_num(&t->opts, VT_OPT_WORKERS), 0, &t->log};
    vt_loader *L;
    TRY(vt_loader_create(&L, ds, split, &cfg));
    int *idx = vt_malloc((size_t)batch * sizeof(int));
    vt_status st = idx ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    double loss = 0;
    long seen = 0, top1 = 0, top5 = 0;
    int K = m->num_classes;
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    for (int b0 = 0; !st && b0 < total; b0 += batch) {
        int n = total - b0 < batch ? total - b0 : batch, ok;
        for (int i = 0; i < n; i++) idx[i] = b0 + i;
        st = vt_loader_fill(L, idx, n, 0, vt_exec_input(e), t->host_labels, &ok);
        if (st == VT_ERR_DATASET) { /* a whole unreadable batch: skip it, warnings logged */
            st = VT_OK;
            continue;
        }
        if (st) break;
        e->n = ok;
        vt_node *out = &e->g->nodes[m->output_node];
        float ls;
        if ((st = be->ops->upload(be, e->labels, t->host_labels, (size_t)ok * sizeof(int32_t))) ||
            (st = vt_exec_forward(e, 0)) ||
            (st = be->ops->softmax_xent(be, K, ok, out->y, e->labels, 0.0f, 0.0f, e->loss, NULL,
                                        out->dy)) ||
            (st = be->ops->download(be, t->host_probs, out->dy, (size_t)K * ok * sizeof(float))) ||
            (st = be->ops->download(be, &ls, e->loss, sizeof ls)))
            break;
        loss += ls;
        for (int i = 0; i < ok; i++) {
            int lab = t->host_labels[i], rank = 0;
            float pl = t->host_probs[(size_t)lab * ok + i];
            for (int k = 0; k < K; k++) {
                float p = t->host_probs[(size_t)k * ok + i];
                if (p > pl || (p == pl && k < lab)) rank++;
            }
            top1 += rank == 0;
            top5 += rank < 5;
        }
        seen += ok;
    }
    free(idx);
    vt_loader_destroy(L);
    if (st) return st;
    if (seen == 0) return vt_fail(VT_ERR_DATASET, "%s: no validation image could be read", ds->root);
    set_metric(&t->prog, VT_METRIC_VAL_LOSS, loss / seen);
    set_metric(&t->prog, VT_METRIC_TOP1, (double)top1 / seen);
    set_metric(&t->prog, VT_METRIC_TOP5, (double)top5 / seen);
    return VT_OK;
}

VT_API vt_status vt_trainer_validate(vt_trainer *t, vt_split split)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    if (!t->ds) return vt_err_capture(t->err, vt_fail(VT_ERR_BAD_STATE, "the trainer has no dataset"));
    if ((unsigned)split > VT_SPLIT_TEST)
        return vt_err_capture(t->err, vt_fail(VT_ERR_INVALID_ARGUMENT, "bad split %d", split));
    int batch = (int)vt_opt_num(&t->opts, VT_OPT_BATCH);
    vt_status st = prepare(t, batch);
    if (!st) st = evaluate(t, split, batch);
    return vt_err_capture(t->err, st);
}

/* ---- training ---- */

static double lr_at(const vt_trainer *t, int64_t step, int nb, int epochs)
{
    double lr0 = base_lr(t), lrf = vt_opt_num(&t->opts, VT_OPT_LRF);
    double x = (double)step / nb;
    double decay = vt_opt_num(&t->opts, VT_OPT_COS_LR) != 0
                       ? 1.0 - (1.0 - lrf) * (1.0 - cos(M_PI * x / epochs)) / 2.0
                       : 1.0 - (1.0 - lrf) * x / epochs;
    double warm = vt_opt_num(&t->opts, VT_OPT_WARMUP_EPOCHS) * nb;
    double lr = lr0 * decay;
    if (warm >= 1 && step < warm) lr *= (step + 1) / warm;
    return lr;
}

static vt_status run(vt_trainer *t)
{
    vt_dataset *ds = t->ds;
    vt_model *m = t->model;
    int epochs = (int)vt_opt_num(&t->opts, VT_OPT_EPOCHS);
    int batch = (int)vt_opt_num(&t->opts, VT_OPT_BATCH);
    int ntrain = ds->split[VT_SPLIT_TRAIN].n;
    if (batch > ntrain) batch = ntrain;
    if (ntrain < 2) return vt_fail(VT_ERR_DATASET, "%s: need at least 2 training images", ds->root);
    /* A trailing batch of one image would make batch-norm statistics meaningless: drop it. */
    int nb = ntrain / batch + (ntrain % batch >= 2 ? 1 : 0);
    TRY(prepare(t, batch));
    TRY(reset_optimizer(t));
    vt_model_set_class_names(m, (const char *const *)ds->class_names, ds->num_classes);
    int sz = imgsz_of(t);
    vt_loader_config cfg = {sz, m->channels, (int)vt_opt_num(&t->opts, VT_OPT_WORKERS),
                            (float)vt_opt_num(&t->opts, VT_OPT_FLIPLR), &t->log};
    vt_loader *L;
    TRY(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg));
    int *perm = vt_malloc((size_t)ntrain * sizeof(int));
    if (!perm) {
        vt_loader_destroy(L);
        return VT_ERR_OUT_OF_MEMORY;
    }
    uint64_t seed = (uint64_t)vt_opt_num(&t->opts, VT_OPT_SEED);
    int validate = (int)vt_opt_num(&t->opts, VT_OPT_VAL) && ds->split[VT_SPLIT_VAL].n > 0;
    memset(&t->prog, 0, sizeof t->prog);
    t->prog.epochs = epochs;
    t->prog.batches = nb;
    atomic_store(&t->cancel, 0);
    vt_status st = VT_OK;
    for (int ep = 0; !st && ep < epochs; ep++) {
        vt_rng r;
        vt_rng_seed(&r, seed * 1000003u + (uint64_t)ep);
        for (int i = 0; i < ntrain; i++) perm[i] = i;
        for (int i = ntrain - 1; i > 0; i--) {
            int j = (int)vt_rng_below(&r, (uint32_t)i + 1), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        uint64_t aug_seed = vt_rng_next(&r) | 1;
        double t0 = vt_now(), loss_sum = 0;
        long images = 0;
        t->prog.epoch = ep + 1;
        for (int b = 0; !st && b < nb; b++) {
            int n = ntrain - b * batch < batch ? ntrain - b * batch : batch, ok;
            st = vt_loader_fill(L, perm + (size_t)b * batch, n, aug_seed, vt_exec_input(t->exec),
                                t->host_labels, &ok);
            if (st == VT_ERR_DATASET) { /* every image of the batch unreadable: warned, skip */
                st = VT_OK;
                continue;
            }
            if (st) break;
            if (ok < 2) continue;
            double lr = lr_at(t, t->prog.iteration, nb, epochs);
            float loss;
            if ((st = train_batch(t, ok, lr, &loss))) break;
            loss_sum += loss;
            images += ok;
            double dt = vt_now() - t0;
            t->prog.batch = b + 1;
            set_metric(&t->prog, VT_METRIC_LOSS, loss_sum / (b + 1));
            set_metric(&t->prog, VT_METRIC_LR, lr);
            set_metric(&t->prog, VT_METRIC_IMAGES_PER_SEC, dt > 0 ? images / dt : 0);
            set_metric(&t->prog, VT_METRIC_EPOCH_SECONDS, dt);
            if (t->cb && t->cb(t->cb_user, VT_EVENT_BATCH_END, &t->prog))
                atomic_store(&t->cancel, 1);
            if (atomic_load(&t->cancel)) st = vt_fail(VT_ERR_CANCELLED, "training cancelled at "
                                                      "epoch %d, batch %d", ep + 1, b + 1);
        }
        if (st) break;
        if (validate && (st = evaluate(t, VT_SPLIT_VAL, batch))) break;
        vt_log(&t->log, VT_LOG_INFO, "epoch %d/%d loss %.4f", ep + 1, epochs,
               t->prog.value[VT_METRIC_LOSS]);
        if (t->cb && t->cb(t->cb_user, VT_EVENT_EPOCH_END, &t->prog)) atomic_store(&t->cancel, 1);
        if (atomic_load(&t->cancel))
            st = vt_fail(VT_ERR_CANCELLED, "training cancelled after epoch %d", ep + 1);
    }
    free(perm);
    vt_loader_destroy(L);
    /* The model gets the weights reached so far, also when cancelled. */
    if (!st || st == VT_ERR_CANCELLED) {
        vt_status s2 = pull_weights(t);
        if (s2) st = s2;
    }
    return st;
}

VT_API vt_status vt_trainer_run(vt_trainer *t)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    if (!t->ds)
        return vt_err_capture(t->err, vt_fail(VT_ERR_BAD_STATE,
                                              "vt_trainer_run needs a dataset (created with NULL)"));
    return vt_err_capture(t->err, run(t));
}

VT_API vt_status vt_trainer_step(vt_trainer *t, const float *images, const int32_t *labels,
                                 int batch, float *loss)
{
    if (!t || !images || !labels)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_step: NULL argument");
    vt_model *m = t->model;
    if (batch < 2)
        return vt_err_capture(t->err, vt_fail(VT_ERR_INVALID_ARGUMENT,
                                              "batch=%d: a training step needs at least 2 images "
                                              "(batch-norm statistics)", batch));
    for (int i = 0; i < batch; i++)
        if (labels[i] < 0 || labels[i] >= m->num_classes)
            return vt_err_capture(t->err, vt_fail(VT_ERR_INVALID_ARGUMENT,
                                                  "labels[%d]=%d is outside 0..%d", i, labels[i],
                                                  m->num_classes - 1));
    vt_status st = prepare(t, batch);
    if (!st && !t->opt_m) st = reset_optimizer(t);
    if (st) return vt_err_capture(t->err, st);
    /* NCHW from the caller -> CNHW staging buffer. */
    int C = m->channels, sz = imgsz_of(t);
    size_t plane = (size_t)sz * sz;
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++)
            memcpy(t->host_batch + ((size_t)c * batch + n) * plane,
                   images + ((size_t)n * C + c) * plane, plane * sizeof(float));
    memcpy(t->host_labels, labels, (size_t)batch * sizeof(int32_t));
    vt_exec *e = t->exec;
    st = t->be->ops->upload(t->be, vt_exec_input(e), t->host_batch,
                            (size_t)C * batch * plane * sizeof(float));
    float l = 0;
    if (!st) st = train_batch(t, batch, base_lr(t), &l);
    if (!st) {
        set_metric(&t->prog, VT_METRIC_LOSS, l);
        set_metric(&t->prog, VT_METRIC_LR, base_lr(t));
        if (loss) *loss = l;
    }
    return vt_err_capture(t->err, st);
}
