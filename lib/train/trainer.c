/* The trainer: options, the epoch loop, the optimiser and LR schedule, validation, progress.
 *
 * Run folder, checkpoints and resume are in train_state.c, the results table in results.c, the
 * plots in plot.c.  Run control (patience, time budget, cancel) and EMA are here.
 *
 * Schedule (per optimiser step, x = fractional epoch, E = epochs):
 *   decay(x) = cosine: 1 - (1 - lrf) * (1 - cos(pi * x / E)) / 2;  linear: 1 - (1 - lrf) * x / E
 *   lr = lr0 * decay(x), multiplied by step / warmup_steps during the first
 *   warmup_epochs * batches_per_epoch steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_device.h"
#include "data/loader.h"
#include "train/autobatch.h"
#include "train/gpu_metrics.h"
#include "train/trainer_impl.h"

#define TRY VT_TRY
#define NMETRIC VT_NMETRIC

#define set_metric vt_progress_set

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

VT_API const char *vt_progress_checkpoint_path(const vt_progress *p)
{
    return p ? p->ckpt_path : NULL;
}

/* ---- lifetime and options ---- */

VT_API vt_status vt_trainer_create(vt_trainer **out, vt_model *model, vt_dataset *ds)
{
    if (!out || !model) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_create: NULL argument");
    *out = NULL;
    if (ds && ds->task != model->task)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "the dataset's task (%d) is not the model's (%d)",
                       ds->task, model->task);
    const vt_task_iface *task = vt_task_find(model->task);
    if (!task) return vt_fail(VT_ERR_INVALID_ARGUMENT, "model %s: unknown task %d", model->arch,
                              (int)model->task);
    vt_trainer *t = vt_calloc(1, sizeof *t);
    if (!t) return VT_ERR_OUT_OF_MEMORY;
    if (task->state_size && !(t->tc.state = vt_calloc(1, task->state_size))) {
        free(t);
        return VT_ERR_OUT_OF_MEMORY;
    }
    t->model = model;
    t->ds = ds;
    t->task = task;
    t->conv_shapes_logged = -1;
    vt_optvals_init(&t->opts, VT_SCOPE_TRAINER);
    if (task->train_defaults) {
        vt_status st = vt_optvals_set_list(&t->opts, task->train_defaults);
        if (st) {
            free(t->tc.state);
            free(t);
            return vt_fail(VT_ERR_INTERNAL, "the %s task's defaults '%s': %s", task->name,
                           task->train_defaults, vt_last_error());
        }
        memset(t->opts.set, 0, sizeof t->opts.set);
    }
    atomic_init(&t->cancel, 0);
    vt_results_init(&t->results, task);
    /* Other classes than the model's: the model is re-created for them with every matching
     * tensor (fine-tuning to new classes); the same ones keep every tensor. */
    if (ds) {
        int was = model->num_classes, k, n;
        vt_status st = vt_model_set_classes(model, ds->num_classes,
                                            (const char *const *)ds->class_names, &k, &n);
        if (st) {
            vt_trainer_destroy(t);
            return st;
        }
        if (k < n || was != ds->num_classes) {
            t->xfer_k = k;
            t->xfer_n = n;
            snprintf(t->xfer_note, sizeof t->xfer_note,
                     "transferred %d/%d tensors (head re-created for %d classes)", k, n,
                     ds->num_classes);
        }
    }
    t->classes = model->num_classes;
    *out = t;
    return VT_OK;
}

/* pretrained=FILE: the file's matching tensors into the model, once per trainer and file (a
 * second run of the same trainer goes on from what the first trained). */
static vt_status apply_pretrained(vt_trainer *t)
{
    const char *path = vt_opt_str(&t->opts, VT_OPT_PRETRAINED);
    if (!*path || strcmp(path, t->pretrained_done) == 0) return VT_OK;
    vt_model *src;
    vt_status st = vt_model_load(&src, path);
    if (st) return vt_fail(st, "pretrained=%s: %s", path, vt_last_error());
    /* other classes (in count, or in names where both are known): the per-class layers stay
     * fresh, as when a saved model meets a dataset of other classes (vt_trainer_create) */
    const vt_model *m = t->model;
    int other = src->num_classes != m->num_classes;
    const char *const *names = t->ds ? (const char *const *)t->ds->class_names : NULL;
    for (int i = 0; !other && names && src->class_names && i < m->num_classes; i++)
        other = strcmp(src->class_names[i], names[i] ? names[i] : "") != 0;
    int k, n;
    st = vt_model_transfer_ex(t->model, src, other, &k, &n);
    if (st) st = vt_fail(st, "pretrained=%s: %s", path, vt_last_error());
    if (!st) {
        int head = other && strcmp(src->arch, t->model->arch) == 0;
        t->xfer_k = k;
        t->xfer_n = n;
        if (head)
            snprintf(t->xfer_note, sizeof t->xfer_note,
                     "transferred %d/%d tensors from %s (head re-created for %d classes)", k, n,
                     path, t->model->num_classes);
        else if (strcmp(src->arch, t->model->arch) != 0)
            snprintf(t->xfer_note, sizeof t->xfer_note,
                     "transferred %d/%d tensors from %s (the %s backbone of a %s)", k, n, path,
                     src->arch, t->model->arch);
        else
            snprintf(t->xfer_note, sizeof t->xfer_note, "transferred %d/%d tensors from %s", k,
                     n, path);
        snprintf(t->pretrained_done, sizeof t->pretrained_done, "%s", path);
        if (k == 0)
            st = vt_fail(VT_ERR_INVALID_ARGUMENT, "pretrained=%s: no tensor of the %s matches "
                         "this %s", path, src->arch, t->model->arch);
    }
    vt_model_destroy(src);
    return st;
}

/* The layer count of freeze= (0: none). */
static vt_status freeze_layers(const vt_trainer *t, int *n)
{
    const char *v = vt_opt_str(&t->opts, VT_OPT_FREEZE);
    const vt_graph *g = &t->model->graph;
    *n = 0;
    if (!*v) return VT_OK;
    if (strcmp(v, "backbone") == 0) *n = g->backbone_end;
    else *n = atoi(v); /* the option table checked the form */
    if (*n >= g->n_nodes)
        return vt_fail(VT_ERR_OPTION_VALUE, "freeze=%s: the %s has %d layers, so nothing would "
                       "train ('vt info model=...' lists them)", v, t->model->arch, g->n_nodes);
    return VT_OK;
}

int vt_trainer_grad_from(const vt_trainer *t)
{
    int n = 0;
    if (freeze_layers(t, &n)) {
        vt_err_clear();
        n = 0;
    }
    return n > 1 ? n : 1;
}

/* The parameters the optimiser updates: decayed ones from *d0 to n_decay, the others from *n0
 * to n_params (a frozen prefix of layers owns a prefix of each group: vt_graph_finalize lays
 * them out in layer order). */
static void trainable_ranges(const vt_graph *g, int frozen, int64_t *d0, int64_t *n0)
{
    *d0 = g->n_decay;
    *n0 = g->n_params;
    for (int i = frozen; i < g->n_nodes; i++) {
        const vt_node *nd = &g->nodes[i];
        if ((nd->op == VT_OP_CONV || nd->op == VT_OP_LINEAR) && nd->w_off < *d0) *d0 = nd->w_off;
        if (nd->op == VT_OP_BN && nd->w_off < *n0) *n0 = nd->w_off;
        if (nd->b_n > 0 && nd->b_off < *n0) *n0 = nd->b_off;
    }
}

static void release_device(vt_trainer *t)
{
    if (t->be) {
        t->be->ops->free(t->be, t->opt_m);
        t->be->ops->free(t->be, t->opt_v);
        t->be->ops->free(t->be, t->ema_p);
        t->be->ops->free(t->be, t->ema_b);
        t->be->ops->free(t->be, t->tmp_p);
        t->be->ops->free(t->be, t->tmp_b);
    }
    t->opt_m = t->opt_v = NULL;
    t->ema_p = t->ema_b = t->tmp_p = t->tmp_b = NULL;
    if (t->task->release) t->task->release(vt_trainer_task_ctx(t));
    vt_exec_destroy(t->exec);
    t->exec = NULL;
    t->conv_shapes_logged = -1;
    if (t->comm && t->comm->be && t->comm->be == t->be) { /* NCCL's goes with its device */
        vt_comm_destroy(t->comm);
        t->comm = NULL;
    }
    vt_backend_destroy(t->be);
    t->be = NULL;
    t->device[0] = 0;
}

static vt_status pull_weights(void *ctx);
static void mark_dirty(vt_trainer *t);

/* The loader's allocator for a GPU trainer's batches: pinned, with the trainer's device. */
static void *pinned_alloc(void *ctx, size_t bytes)
{
    return vt_device_host_alloc(&((const vt_trainer *)ctx)->dev, bytes);
}

static void pinned_free(void *ctx, void *p)
{
    vt_device_host_free(&((const vt_trainer *)ctx)->dev, p);
}

static void free_host_batch(vt_trainer *t)
{
    if (t->host_pinned) vt_device_host_free(&t->host_dev, t->host_batch);
    else free(t->host_batch);
    t->host_batch = NULL;
    t->host_pinned = 0;
}

/* The staging batch: pinned for a GPU backend (uploads from it are asynchronous DMA; every
 * step and evaluation ends with a download that waits for the stream, so it is never rewritten
 * while a copy from it is in flight), ordinary memory otherwise or when pinning fails. */
static float *alloc_host_batch(vt_trainer *t, size_t floats)
{
    free_host_batch(t);
    if (t->be && !t->be->ops->host_memory) {
        t->host_batch = vt_device_host_alloc(&t->dev, floats * sizeof(float));
        if (t->host_batch) {
            t->host_pinned = 1;
            t->host_dev = t->dev;
            return t->host_batch;
        }
        vt_err_clear(); /* fall back to pageable memory */
    }
    return t->host_batch = vt_malloc(floats * sizeof(float));
}

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
    vt_comm_destroy(t->comm);
    free_host_batch(t);
    vt_pool_destroy(t->stage_pool);
    free(t->host_labels);
    free(t->host_probs);
    vt_loader_destroy(t->synth);
    free(t->confusion);
    free(t->tc.state);
    vt_results_free(&t->results);
    free(t);
}

VT_API const char *vt_trainer_last_error(const vt_trainer *t) { return t ? t->err : ""; }
VT_API const char *vt_trainer_run_dir(const vt_trainer *t) { return t ? t->run_dir : ""; }
VT_API vt_stop_reason vt_trainer_stop_reason(const vt_trainer *t)
{
    return t ? t->stop : VT_STOP_NONE;
}

VT_API int vt_trainer_rank(const vt_trainer *t, int *world)
{
    int size = 1, rank = 0;
    if (t && t->last_world > 0) { /* the ranks of the last run */
        size = t->last_world;
        rank = t->last_rank;
    } else if (t && strcmp(vt_opt_str(&t->opts, VT_OPT_DIST), "off") != 0) {
        vt_launch L;
        vt_comm_launch(&L);
        size = L.size;
        rank = L.rank;
    }
    if (size < 1 || rank < 0 || rank >= size) size = 1, rank = 0;
    if (world) *world = size;
    return rank;
}

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

static int imgsz_of(const vt_trainer *t);
static double base_lr(const vt_trainer *t);

VT_API vt_status vt_trainer_get_float(const vt_trainer *t, vt_option o, double *v)
{
    if (!t || !v) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_get_float: NULL argument");
    const vt_optdef *d = vt_optdef_by_id(o);
    if (!d || !(d->scope & VT_SCOPE_TRAINER) || d->type == VT_OPTION_STRING)
        return vt_fail(VT_ERR_UNKNOWN_OPTION, "option %d is not a numeric trainer option", o);
    /* 0 means "derived" for these two: report the value a run would use */
    if (o == VT_OPT_IMGSZ) *v = imgsz_of(t);
    else if (o == VT_OPT_LR0) *v = base_lr(t);
    else *v = vt_opt_num(&t->opts, o);
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

int vt_trainer_imgsz(const vt_trainer *t) { return imgsz_of(t); }

void vt_trainer_aug_params(const vt_trainer *t, vt_aug_params *p)
{
    vt_aug_params_from_options(p, &t->opts);
}

/* The device of this process: device= itself, or for a list (device=0,1,2,3: one GPU per rank
 * on a host) the entry of this rank on its host (the launcher's LOCAL_RANK). */
static vt_status rank_device(const vt_trainer *t, const char *dev, char *one, size_t cap)
{
    const char *comma = strchr(dev, ',');
    if (!comma) {
        snprintf(one, cap, "%s", dev);
        return VT_OK;
    }
    vt_launch L;
    vt_comm_launch(&L);
    if (L.size <= 1 || strcmp(vt_opt_str(&t->opts, VT_OPT_DIST), "off") == 0)
        return vt_fail(VT_ERR_OPTION_VALUE, "device=%s gives one GPU to each rank, but this "
                       "process trains alone: start the ranks with 'vt train ... device=%s' "
                       "or Python's model.train(device=[...]) (one per GPU), mpirun or "
                       "torchrun, or give one GPU", dev, dev);
    const char *p = dev;
    for (int i = 0; i < L.local_rank && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p)
        return vt_fail(VT_ERR_OPTION_VALUE, "device=%s: this process is rank %d of %d, number %d "
                       "on its host (LOCAL_RANK), past the list's GPUs: list one GPU for each "
                       "rank of a host", dev, L.rank, L.size, L.local_rank);
    size_t n = strcspn(p, ",");
    snprintf(one, cap, "%.*s", (int)n, p);
    return VT_OK;
}

static vt_status open_backend(vt_trainer *t)
{
    const char *dev = vt_opt_str(&t->opts, VT_OPT_DEVICE);
    if (t->be && strcmp(dev, t->device) == 0) return VT_OK;
    if (t->dirty) TRY(pull_weights(t)); /* moving devices: keep what was trained */
    vt_device d;
    char one[16];
    TRY(rank_device(t, dev, one, sizeof one));
    TRY(vt_device_parse(one, &d));
    release_device(t);
    const char *prec = vt_opt_str(&t->opts, VT_OPT_PRECISION);
    TRY(vt_device_backend(&d, !strcmp(prec, "fp32")   ? VT_DEVICE_PRECISION_FP32
                              : !strcmp(prec, "bf16") ? VT_DEVICE_PRECISION_BF16
                                                      : VT_DEVICE_PRECISION_DEFAULT,
                          &t->be));
    t->dev = d;
    snprintf(t->device, sizeof t->device, "%s", dev);
    char note[256];
    int slower = vt_device_precision_note(&d, !strcmp(prec, "bf16") ? VT_DEVICE_PRECISION_BF16
                                                                    : VT_DEVICE_PRECISION_FP32,
                                          note, sizeof note);
    if (note[0]) vt_log(&t->log, slower ? VT_LOG_WARNING : VT_LOG_INFO, "%s", note);
    vt_status st = vt_exec_create(&t->exec, &t->model->graph, t->be);
    if (st) release_device(t);
    t->dev_version = 0; /* fresh device memory: upload */
    return st;
}

/* With VT_CUDNN in the environment (the experimental cuDNN convolutions, cuda/cudnn_conv.cu), a
 * GPU run says what runs its convolutions, each time new shapes have been planned (vt_exec_prepare
 * plans them): the engine, or why cuDNN is not on, and how many passes each path ran. */
static void log_conv_engine(vt_trainer *t)
{
    if (!getenv("VT_CUDNN")) return;
    vt_cuda_conv_info info;
    vt_backend_cuda_conv_info(t->be, &info); /* zeros and "" for the CPU */
    if (!info.engine[0] || (long)info.shapes == t->conv_shapes_logged) return;
    t->conv_shapes_logged = (long)info.shapes;
    if (!info.cudnn) {
        vt_log(&t->log, VT_LOG_INFO, "GPU convolutions: %s", info.engine);
        return;
    }
    vt_log(&t->log, VT_LOG_INFO, "GPU convolutions: %s; %u shapes planned, %u with a cuDNN pass; "
           "passes so far: %llu cuDNN, %llu im2col", info.engine, info.shapes, info.shapes_cudnn,
           info.cudnn_passes, info.im2col_passes);
}

/* Backend for the current device, activations for batch x imgsz, host staging buffers, and the
 * model's weights uploaded. */
static vt_status prepare(vt_trainer *t, int batch)
{
    /* the model re-created for other classes (vt_model_set_classes, e.g. by another trainer)
     * after this one was made: its layers and the trainer's state no longer agree */
    if (t->model->num_classes != t->classes || (t->exec && t->exec->graph.n_params !=
                                                               t->model->graph.n_params))
        return vt_fail(VT_ERR_BAD_STATE, "the model %s was re-created for %d classes after this "
                       "trainer was made for %d: create the trainer again", t->model->arch,
                       t->model->num_classes, t->classes);
    if (t->model->pull_ctx != t) TRY(vt_model_pull(t->model)); /* another trainer's weights */
    TRY(open_backend(t));
    int sz = imgsz_of(t);
    TRY(freeze_layers(t, &t->exec->frozen));
    trainable_ranges(&t->model->graph, t->exec->frozen, &t->opt_d0, &t->opt_n0);
    TRY(vt_exec_prepare(t->exec, batch, sz, sz));
    log_conv_engine(t);
    size_t need = (size_t)batch * t->model->channels * sz * sz;
    /* a new backend kind may want the other kind of staging memory */
    int for_gpu = !t->be->ops->host_memory;
    if (need > t->host_cap || (t->host_batch && t->host_for_gpu != for_gpu)) {
        free(t->host_labels);
        alloc_host_batch(t, need);
        t->host_labels = vt_malloc((size_t)batch * sizeof(int32_t));
        t->host_cap = t->host_batch && t->host_labels ? need : 0;
        t->host_for_gpu = for_gpu;
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

static vt_status reset_optimizer(vt_trainer *t);

vt_status vt_trainer_prepare_step(vt_trainer *t, int batch)
{
    TRY(prepare(t, batch));
    return reset_optimizer(t);
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

static size_t np_of(const vt_model *m) { return (size_t)m->graph.n_params; }

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
    /* decayed parameters [d0, n_decay), the others [n0, n_params): a frozen prefix is skipped
     * (trainable_ranges, set by prepare) */
    int64_t d0 = t->opt_d0, n0 = t->opt_n0;
    size_t nd = (size_t)(g->n_decay - d0), nn = (size_t)(g->n_params - n0);
    if (is_adamw(t)) {
        t->opt_t++;
        float b2 = 0.999f;
        float bc1 = (float)(1.0 - pow(mom, (double)t->opt_t));
        float bc2 = (float)(1.0 - pow(b2, (double)t->opt_t));
        if (nd)
            TRY(be->ops->adamw_step(be, nd, e->params + d0, e->grads + d0, t->opt_m + d0,
                                    t->opt_v + d0, (float)lr, mom, b2, 1e-8f, wd, bc1, bc2));
        if (nn)
            TRY(be->ops->adamw_step(be, nn, e->params + n0, e->grads + n0, t->opt_m + n0,
                                    t->opt_v + n0, (float)lr, mom, b2, 1e-8f, 0.0f, bc1, bc2));
    } else {
        int nest = (int)vt_opt_num(&t->opts, VT_OPT_NESTEROV);
        if (nd)
            TRY(be->ops->sgd_step(be, nd, e->params + d0, e->grads + d0, t->opt_m + d0,
                                  (float)lr, mom, wd, nest));
        if (nn)
            TRY(be->ops->sgd_step(be, nn, e->params + n0, e->grads + n0, t->opt_m + n0,
                                  (float)lr, mom, 0.0f, nest));
    }
    return VT_OK;
}

/* Backward and the optimizer's update: the part of a step with no host synchronisation (the
 * task's batch_loss has brought the loss down already, waiting for the stream).  With the
 * experimental CUDA graphs (VT_CUDA_GRAPHS=1, cuda/graph.cu) the device records these ops into
 * a graph of the step's shapes and launches it; when it could not (*ran = 0, graphs then off
 * for the backend), nothing of the region ran and it runs again plainly, with the optimizer's
 * step count as it was (backward changes no host state). */
static vt_status backward_update(vt_trainer *t, double lr)
{
    vt_exec *e = t->exec;
    vt_model *m = t->model;
    const int key[4] = {e->n, e->h, e->w, e->frozen};
    int64_t opt_t = t->opt_t;
    if (!e->prof && vt_device_graph_begin(&t->dev, t->be, key)) {
        vt_status st = vt_exec_backward_outputs(e, m->outputs, m->n_outputs);
        if (!st) st = optimizer_step(t, lr);
        int ran = 0;
        TRY(vt_device_graph_end(&t->dev, t->be, st, &ran));
        vt_cuda_graph_info gi;
        if (ran) {
            if (!t->graphs_logged) {
                vt_backend_cuda_graph_info(t->be, &gi);
                t->graphs_logged = gi.replayed > 0;
                if (t->graphs_logged)
                    vt_log(&t->log, VT_LOG_INFO, "CUDA graphs (EXPERIMENTAL, VT_CUDA_GRAPHS=1): "
                           "backward and update replayed as a graph (batch %d, %d plain steps a "
                           "shape first)", e->n, gi.warmup);
            }
            return VT_OK;
        }
        t->opt_t = opt_t;
        vt_backend_cuda_graph_info(t->be, &gi);
        vt_log(&t->log, VT_LOG_INFO, "CUDA graphs (experimental): %s%s%s; the steps run as plain "
               "launches", gi.state, st ? ": " : "", st ? vt_last_error() : "");
    }
    TRY(vt_exec_backward_outputs(e, m->outputs, m->n_outputs));
    return optimizer_step(t, lr);
}

/* Forward, loss, backward and update on the batch already in the executor's input.  L: the
 * loader of the batch (detection reads its boxes there). */
static vt_status train_batch(vt_trainer *t, int n, double lr, float *loss_out, vt_loader *L)
{
    vt_exec *e = t->exec;
    e->dropout_seed = (uint64_t)vt_opt_num(&t->opts, VT_OPT_SEED) * 0x2545F4914F6CDD1Dull +
                      (uint64_t)t->prog.iteration;
    vt_status st = VT_OK;
    TRY(vt_dist_step_syncs(t, n));
    if (n > 0) { /* distributed: n = 0 when this rank's slice of the step was unreadable */
        e->n = n;
        st = vt_exec_forward(e, 1);
        vt_task_ctx *tc = vt_trainer_task_ctx(t);
        tc->loss_weight = tc->loss2_weight = -1;
        if (!st) st = t->task->batch_loss(tc, L, n, 1, loss_out);
    }
    if (t->dist_on) {
        /* the ranks agree on the step's loss normaliser, or a failure of any rank stops them
         * all; then the backward, whose gradients are summed over the ranks in buckets as it
         * goes (dist.c) */
        st = vt_dist_step_weight(t, st, n, loss_out);
        if (!st && t->step_images > 0) st = vt_dist_backward(t, n);
        vt_dist_step_end(t);
        TRY(st);
        if (t->step_images == 0) return VT_OK; /* no rank had images: skipped by all */
        TRY(optimizer_step(t, lr));
    } else {
        TRY(st);
        TRY(n > 0 ? backward_update(t, lr) : optimizer_step(t, lr));
        t->step_images = n;
    }
    mark_dirty(t);
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

vt_status vt_trainer_pull_weights(vt_trainer *t) { return pull_weights(t); }

/* The device now holds weights newer than the model's host copy. */
static void mark_dirty(vt_trainer *t)
{
    t->dirty = 1;
    t->model->pull = pull_weights;
    t->model->pull_ctx = t;
}

VT_API vt_status vt_trainer_validate(vt_trainer *t, vt_split split)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL trainer");
    if (!t->ds) return vt_err_capture(t->err, vt_fail(VT_ERR_BAD_STATE, "the trainer has no dataset"));
    if ((unsigned)split > VT_SPLIT_TEST)
        return vt_err_capture(t->err, vt_fail(VT_ERR_INVALID_ARGUMENT, "bad split %d", split));
    int batch = (int)vt_opt_num(&t->opts, VT_OPT_BATCH);
    if (batch < 1) batch = (int)vt_optdef_by_id(VT_OPT_BATCH)->def_num; /* -1: a run chooses */
    vt_status st = prepare(t, batch);
    if (!st) st = vt_trainer_evaluate(t, split, batch, NULL);
    return vt_err_capture(t->err, st);
}

static int use_ema(const vt_trainer *t) { return vt_opt_num(&t->opts, VT_OPT_EMA) != 0; }

/* ---- training ---- */

/* The learning rate of optimiser step `step` (0-based): a schedule over the run's progress in
 * epochs, x = step / nb (per step, not per epoch: it moves by 1/nb of an epoch each step), with
 * a linear warm-up over the first warmup_epochs x nb steps.  A resume whose epochs have another
 * number of steps (another rank count or batch) continues the schedule where it stood, in
 * epochs: pos.lr_shift holds the schedule steps ahead of the iteration count, and the later
 * steps each move it by 1/nb of the new run's epoch.  lr0 is not scaled with the global batch. */
static double lr_at(const vt_trainer *t, int64_t step, int nb, int epochs)
{
    double lr0 = base_lr(t), lrf = vt_opt_num(&t->opts, VT_OPT_LRF);
    double s = (double)step + t->pos.lr_shift;
    double x = s / nb;
    double decay = vt_opt_num(&t->opts, VT_OPT_COS_LR) != 0
                       ? 1.0 - (1.0 - lrf) * (1.0 - cos(M_PI * x / epochs)) / 2.0
                       : 1.0 - (1.0 - lrf) * x / epochs;
    double warm = vt_opt_num(&t->opts, VT_OPT_WARMUP_EPOCHS) * nb;
    double lr = lr0 * decay;
    if (warm >= 1 && s < warm) lr *= (s + 1) / warm;
    return lr;
}

/* Timing of this vt_trainer_run() call, for the ETA and the time budget. */
typedef struct run_clock {
    double start;       /* vt_now() at the start of the call */
    double step_time;   /* seconds of training steps (loading included) in this call */
    int64_t steps;
    double val_time;    /* seconds of the last validation, < 0 before one */
    double save_time;   /* seconds of the last checkpoint save, reserved for the final save */
    double budget;      /* seconds, 0 = none */
    int unsaved;        /* the position moved since the last save */
} run_clock;

static double val_estimate(const vt_trainer *t, const run_clock *c, int batch)
{
    if (c->val_time >= 0) return c->val_time;
    int nval = t->ds->split[VT_SPLIT_VAL].n;
    double step = c->steps ? c->step_time / (double)c->steps : 0;
    return step * ((nval + batch - 1) / batch) / 3.0; /* forward only: about a third of a step */
}

/* VT_METRIC_DEVICE_MEMORY_BYTES: what the trainer's GPU backend holds (nothing on the CPU). */
static void note_device_memory(vt_trainer *t)
{
    size_t held, peak;
    if (t->be && vt_device_memory(&t->dev, t->be, &held, &peak)) {
        set_metric(&t->prog, VT_METRIC_DEVICE_MEMORY_BYTES, (double)held);
    }
    vt_train_gpu_sample(t);
}

static void update_eta(vt_trainer *t, const run_clock *c, int epochs, int nb, int validate,
                       int batch)
{
    const vt_train_pos *p = &t->pos;
    double step = c->steps ? c->step_time / (double)c->steps : 0;
    int64_t steps_left = (int64_t)(epochs - p->epoch - 1) * nb + (nb - p->batch);
    if (p->batch == 0 && p->epoch < epochs) steps_left = (int64_t)(epochs - p->epoch) * nb;
    if (p->epoch >= epochs) steps_left = 0;
    int vals_left = validate ? epochs - p->epoch : 0;
    if (vals_left < 0) vals_left = 0;
    set_metric(&t->prog, VT_METRIC_ETA_SECONDS,
               step * (double)steps_left + val_estimate(t, c, batch) * vals_left);
    set_metric(&t->prog, VT_METRIC_COST_USD,
               p->elapsed / 3600.0 * vt_opt_num(&t->opts, VT_OPT_PRICE));
    note_device_memory(t);
}

/* A callback; a non-zero return asks to cancel.  Once a cancel is asked for, the callback is
 * not called again in this run (the final save of last.vtm is not reported). */
static void notify(vt_trainer *t, vt_event ev)
{
    if (t->rank > 0) return; /* distributed: rank 0 reports (a cancel on any rank is reduced) */
    if (t->cb && !atomic_load(&t->cancel) && t->cb(t->cb_user, ev, &t->prog))
        atomic_store(&t->cancel, 1);
}

/* Write checkpoints to the given file names under weights/, reporting each. */
static vt_status save_ckpts(vt_trainer *t, const char *const *names, int n)
{
    char paths[3][4200];
    const char *pp[3];
    for (int i = 0; i < n && i < 3; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/weights/%s", t->run_dir, names[i]);
        pp[i] = paths[i];
    }
    vt_tb_sync(t);
    TRY(vt_train_save(t, pp, n));
    for (int i = 0; i < n; i++) {
        snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s", pp[i]);
        t->prog.ckpt_path = t->ckpt_path;
        notify(t, VT_EVENT_CHECKPOINT_SAVED);
        t->prog.ckpt_path = NULL;
    }
    return VT_OK;
}


/* What a run holds while its epochs go by: run() sets it up, run_epoch and run_batch use it. */
typedef struct run_state {
    vt_dataset *ds;
    run_clock clk;
    vt_loader *L, *VL;       /* training loader; validation loader (created on first use) */
    int *perm;               /* the epoch's order of the training subset */
    const int *subset;
    int epochs, batch, nb, ntrain, depth, sz;
    uint64_t seed;
    vt_aug_params aug;
    int cache_ram, cached_logged;
    int64_t cache_cap;
    int validate, patience, period, plots, save;
    int rank, world;         /* distributed: this rank of world (0 of 1 alone) */
    /* the epoch in progress: its steps from step b0 on cover images perm[start ..) (0 and 0,
     * but for an epoch resumed on another rank count or batch); it has ep_nb steps */
    int start, b0, ep_nb;
} run_state;

/* The epoch's steps: batch x world images each, the last one shorter when at least 2 images a
 * rank are left (a trailing single image would make batch-norm statistics meaningless, so it
 * is dropped; the shuffle puts other images last in other epochs). */
static int steps_per_epoch(int ntrain, int batch, int world)
{
    int g = batch * world, rem = ntrain % g;
    return ntrain / g + (rem >= 2 * world ? 1 : 0);
}

/* This rank's slice of step b: images perm[*off .. *off + n), returns n.  Every rank takes
 * the same number of steps; the slices of a step are disjoint and together the step's images
 * of one process training batch x world, so the ranks see the same data order as it.  A
 * trailing step splits its images evenly (the slices differ by one at most).  A resumed epoch
 * re-shards what is left of its order, perm[start ..), from step b0 on. */
static int shard(const run_state *r, int b, int *off)
{
    int g = r->batch * r->world, left = r->ntrain - r->start, full = left / g;
    b -= r->b0;
    if (b < full) {
        *off = r->start + b * g + r->rank * r->batch;
        return r->batch;
    }
    int rem = left - full * g, q = rem / r->world, e = rem % r->world;
    *off = r->start + full * g + r->rank * q + (r->rank < e ? r->rank : e);
    return q + (r->rank < e ? 1 : 0);
}

/* Step b done (trained or skipped): the position after it, and the images of the epoch's order
 * it reached over all ranks (the last step's dropped single images count as reached). */
static void step_done(vt_train_pos *pos, const run_state *r, int b)
{
    int g = r->batch * r->world, left = r->ntrain - r->start, k = b - r->b0 + 1;
    pos->batch = b + 1;
    pos->seen = r->start + (k <= left / g ? (long)k * g : (long)left);
    if (pos->batch >= r->ep_nb) pos->seen = r->ntrain;
}

/* Prefetch: submit this rank's slices of the epoch's steps up to (not including) `upto`. */
static vt_status submit_upto(const run_state *r, uint64_t aug_seed, int *next, int upto)
{
    for (; *next < r->ep_nb && *next < upto; (*next)++) {
        int off, n = shard(r, *next, &off);
        TRY(vt_loader_submit(r->L, r->perm + off, n, aug_seed));
    }
    return VT_OK;
}

/* Batch b of the epoch: its images decoded (or waited for, with prefetch), trained, then the
 * metrics and the callback.  A batch without 2 readable images is skipped (warnings logged).
 * A stop (time budget, cancel) sets t->stop and returns VT_OK. */
static vt_status run_batch(vt_trainer *t, run_state *r, int b, uint64_t aug_seed, int *next)
{
    vt_train_pos *pos = &t->pos;
    run_clock *clk = &r->clk;
    int batch = r->batch, nb = r->nb;
    double now = vt_now();
    double step_est = clk->steps ? clk->step_time / (double)clk->steps : 0;
    int out_of_time = clk->budget > 0 && now - clk->start + step_est + clk->save_time >
                                             clk->budget;
    if (t->dist_on) {
        /* the ranks stop together: at the first rank out of time, or cancelled */
        double f[2] = {out_of_time, atomic_load(&t->cancel)};
        TRY(vt_dist_agree(t, VT_OK, f, 2, VT_COMM_MAX));
        out_of_time = f[0] > 0;
        if (f[1] > 0 && !out_of_time) {
            atomic_store(&t->cancel, 1);
            t->stop = VT_STOP_CANCELLED;
            return VT_OK;
        }
    }
    if (out_of_time) {
        t->stop = VT_STOP_TIME;
        return VT_OK;
    }
    int off, n = shard(r, b, &off), ok;
    double filled;
    vt_status st;
    if (r->depth) {
        /* depth batches in flight while this one trains: b + 1 .. b + depth */
        TRY(submit_upto(r, aug_seed, next, b + r->depth));
        const float *hb = NULL;
        const int32_t *hl = NULL;
        double w0 = vt_now();
        vt_status lst = vt_loader_wait(r->L, &hb, &hl, &ok);
        filled = vt_now();
        pos->data_wait += filled - w0; /* only the time blocked */
        st = submit_upto(r, aug_seed, next, b + 1 + r->depth);
        if (!st) st = lst;
        if (!st && ok >= 2) {
            size_t plane = (size_t)r->sz * r->sz;
            memcpy(t->host_labels, hl, (size_t)ok * sizeof(int32_t));
            st = t->be->ops->upload(t->be, vt_exec_input(t->exec), hb,
                                    (size_t)t->model->channels * ok * plane * sizeof(float));
        }
    } else {
        st = vt_trainer_fill_input(t, r->L, r->perm + off, n, aug_seed, &ok);
        filled = vt_now();
        pos->data_wait += filled - now;
    }
    if (t->dist_on) {
        /* an unreadable slice (warned) trains nothing on this rank; the others go on, and
         * the step is skipped when no rank had 2 readable images */
        if (st == VT_ERR_DATASET || (!st && ok < 2)) {
            vt_err_clear();
            st = VT_OK;
            ok = 0;
        }
        /* any other failure stops every rank at the step's reduction (train_batch) */
    }
    if (!t->dist_on && (st == VT_ERR_DATASET || (!st && ok < 2))) { /* unreadable: skip */
        step_done(pos, r, b);
        clk->unsaved = 1;
        pos->epoch_time += filled - now;
        pos->elapsed += filled - now;
        return VT_OK;
    }
    float loss = 0;
    /* distributed: the failure reaches the other ranks at the step's reduction */
    if (st) return t->dist_on ? vt_dist_agree(t, st, NULL, 0, VT_COMM_MAX) : st;
    double lr = lr_at(t, t->prog.iteration, nb, r->epochs);
    TRY(train_batch(t, ok, lr, &loss, r->L));
    if (t->step_images == 0) { /* distributed: no rank had a readable slice */
        step_done(pos, r, b);
        clk->unsaved = 1;
        pos->epoch_time += vt_now() - now;
        pos->elapsed += vt_now() - now;
        return VT_OK;
    }
    if (use_ema(t)) TRY(vt_ema_update(t));
    double end = vt_now();
    /* the step's mean loss and its images over all ranks (distributed) */
    pos->loss_sum += loss;
    pos->images += t->step_images;
    step_done(pos, r, b);
    pos->iteration = t->prog.iteration;
    pos->epoch_time += end - now;
    pos->elapsed += end - now;
    clk->step_time += end - now;
    clk->steps++;
    clk->unsaved = 1;
    t->prog.batch = b + 1;
    set_metric(&t->prog, VT_METRIC_LOSS, pos->loss_sum / (b + 1));
    set_metric(&t->prog, VT_METRIC_LR, lr);
    set_metric(&t->prog, VT_METRIC_IMAGES_PER_SEC,
               pos->epoch_time > 0 ? pos->images / pos->epoch_time : 0);
    set_metric(&t->prog, VT_METRIC_EPOCH_SECONDS, pos->epoch_time);
    set_metric(&t->prog, VT_METRIC_DATA_WAIT_SECONDS, pos->data_wait);
    update_eta(t, clk, r->epochs, nb, r->validate, batch);
    vt_tb_step(t, loss);
    notify(t, VT_EVENT_BATCH_END);
    /* distributed: a cancel asked for here (rank 0's callback) stops every rank together at
     * the next step's agreement, or at the epoch end's after the last step */
    if (!t->dist_on && atomic_load(&t->cancel)) t->stop = VT_STOP_CANCELLED;
    return VT_OK;
}

/* The checkpoints, results.csv and plots of epoch ep just completed. */
static vt_status save_epoch(vt_trainer *t, run_state *r, int ep, int improved)
{
    const char *names[3];
    char period_name[64];
    int k = 0;
    names[k++] = "last.vtm";
    if (improved) names[k++] = "best.vtm";
    if (r->period > 0 && (ep + 1) % r->period == 0) {
        snprintf(period_name, sizeof period_name, "epoch%d.vtm", ep + 1);
        names[k++] = period_name;
    }
    double s0 = vt_now();
    TRY(save_ckpts(t, names, k));
    TRY(vt_train_write_results(t));
    r->clk.save_time = (vt_now() - s0) / k * 1.5; /* the final save writes one file */
    r->clk.unsaved = 0;
    if (r->plots) TRY(vt_train_write_plots(t));
    return VT_OK;
}

/* The epoch at t->pos: shuffle, its batches from the position reached, validation, the results
 * row, checkpoints and plots, early stopping.  Sets t->stop when the run ends inside it. */
static vt_status run_epoch(vt_trainer *t, run_state *r)
{
    vt_train_pos *pos = &t->pos;
    run_clock *clk = &r->clk;
    int ep = pos->epoch, epochs = r->epochs, nb = r->nb, batch = r->batch;
    vt_rng rng;
    vt_rng_seed(&rng, r->seed * 1000003u + (uint64_t)ep);
    for (int i = 0; i < r->ntrain; i++) r->perm[i] = r->subset[i];
    for (int i = r->ntrain - 1; i > 0; i--) {
        int j = (int)vt_rng_below(&rng, (uint32_t)i + 1), tmp = r->perm[i];
        r->perm[i] = r->perm[j];
        r->perm[j] = tmp;
    }
    uint64_t aug_seed = vt_rng_next(&rng) | 1;
    vt_loader_set_mosaic(r->L, ep < epochs - r->aug.close_mosaic);
    if (pos->batch == 0) {
        pos->loss_sum = pos->data_wait = pos->epoch_time = 0;
        pos->images = 0;
        pos->seen = 0;
        r->start = r->b0 = 0; /* a whole epoch: steps of batch x world from the first image */
        r->ep_nb = nb;
    }
    pos->nb = r->ep_nb;
    t->prog.epoch = ep + 1;
    t->prog.batches = r->ep_nb;
    int next = pos->batch; /* prefetch: the next batch to submit */
    vt_status st = VT_OK;
    for (int b = pos->batch; !st && !t->stop && b < r->ep_nb; b++)
        st = run_batch(t, r, b, aug_seed, &next);
    vt_loader_drain(r->L); /* a stop inside the epoch leaves prefetched batches behind */
    if (st) return st;
    if (r->cache_ram) {
        int ci;
        int64_t cb;
        vt_loader_cache_stats(r->L, &ci, &cb);
        if (ci != r->cached_logged)
            vt_log(&t->log, VT_LOG_INFO,
                   "cache=ram: %d of %d training images in memory, %.3f GB (cap %.3f GB)", ci,
                   r->ntrain, cb / 1e9, r->cache_cap / 1e9);
        r->cached_logged = ci;
    }
    if (t->stop) return VT_OK;
    if (pos->images == 0)
        return vt_fail(VT_ERR_DATASET, "%s: no batch of epoch %d had 2 or more readable images "
                       "(see the warnings in the log)", r->ds->root, ep + 1);
    /* distributed: one set of BN statistics before validation and checkpoints read them */
    TRY(vt_dist_sync_buffers(t));
    double val_seconds = 0;
    if (r->validate) {
        double now = vt_now();
        double late[1] = {clk->budget > 0 && now - clk->start + val_estimate(t, clk, batch) +
                                                     clk->save_time > clk->budget};
        TRY(vt_dist_agree(t, VT_OK, late, 1, VT_COMM_MAX));
        if (late[0] > 0) {
            t->stop = VT_STOP_TIME;
            return VT_OK;
        }
        /* distributed: every rank validates its shard of the split and the task merges the
         * shards' counts, so every rank has the metrics of the whole split; rank 0's are
         * then sent to all, so that every rank decides the same (best epoch, early
         * stopping) to the last bit */
        if (use_ema(t)) st = vt_ema_swap(t);
        if (!st) {
            t->val_sharded = 1;
            st = vt_trainer_evaluate(t, VT_SPLIT_VAL, batch, &r->VL);
            t->val_sharded = 0;
            vt_status s2 = use_ema(t) ? vt_ema_swap(t) : VT_OK;
            if (!st) st = s2;
        }
        TRY(vt_dist_agree(t, st, NULL, 0, VT_COMM_MAX));
        TRY(vt_dist_share_metrics(t, st));
        val_seconds = clk->val_time = vt_now() - now;
        pos->elapsed += val_seconds;
    }
    double mean_loss = pos->loss_sum / (pos->batch > 0 ? pos->batch : 1);
    double fitness = r->validate ? t->prog.value[t->task->fitness] : -mean_loss;
    int improved = pos->best_epoch == 0 || fitness > pos->best_fitness;
    if (improved) {
        pos->best_fitness = fitness;
        pos->best_epoch = ep + 1;
    }
    double row[VT_RESULTS_MAXCOL];
    vt_results_row(t->task, ep + 1, mean_loss, r->validate, &t->prog,
                   pos->epoch_time + val_seconds, pos->data_wait, pos->elapsed, row);
    vt_results_row_gpu(&t->results, &t->prog, row);
    vt_results_truncate(&t->results, ep);
    TRY(vt_results_append(&t->results, row));
    vt_tb_epoch(t);
    vt_log(&t->log, VT_LOG_DEBUG, "epoch %d/%d loss %.4f", ep + 1, epochs, mean_loss);
    /* the epoch is complete: the position moves to the start of the next one */
    pos->epoch = ep + 1;
    pos->batch = 0;
    pos->seen = 0;
    pos->nb = nb;
    pos->loss_sum = pos->data_wait = pos->epoch_time = 0;
    pos->images = 0;
    set_metric(&t->prog, VT_METRIC_FITNESS, fitness);
    set_metric(&t->prog, VT_METRIC_BEST_FITNESS, pos->best_fitness);
    update_eta(t, clk, epochs, nb, r->validate, batch);
    /* distributed: only rank 0 saves; the others learn how it went */
    TRY(vt_dist_root_status(t, r->save ? save_epoch(t, r, ep, improved) : VT_OK));
    notify(t, VT_EVENT_EPOCH_END);
    if (t->dist_on) {
        double f[1] = {atomic_load(&t->cancel)};
        TRY(vt_dist_agree(t, VT_OK, f, 1, VT_COMM_MAX));
        if (f[0] > 0) atomic_store(&t->cancel, 1);
    }
    if (atomic_load(&t->cancel)) {
        t->stop = VT_STOP_CANCELLED;
        return VT_OK;
    }
    if (ep + 1 - pos->best_epoch >= r->patience && pos->epoch < epochs) {
        vt_log(&t->log, VT_LOG_INFO,
               "early stop: no better fitness for %d epochs; the best was %.4f at epoch %d",
               r->patience, pos->best_fitness, pos->best_epoch);
        t->stop = VT_STOP_EARLY;
    }
    return VT_OK;
}

/* A resume on this run's shape (ntrain images, batch a rank, world ranks, nb steps an epoch):
 * the learning-rate schedule carried over in epochs (lr_at), and where the epoch in progress
 * continues.  The epoch's order is seeded by (seed, epoch) alone, so another rank count or
 * batch continues it from the images already trained (pos->seen), re-sharded in steps of
 * batch x world (shard()), the trailing-step rule applied to what is left; the same shape
 * continues it exactly as if it had not stopped.  Fills *start, *b0, *ep_nb (run_state). */
static vt_status resume_shape(vt_trainer *t, vt_train_pos *pos, const char *path, int ntrain,
                              int batch, int world, int nb, int *start, int *b0, int *ep_nb)
{
    int onb = pos->epoch_nb > 0 ? pos->epoch_nb : pos->nb, ow = pos->world > 0 ? pos->world : 1;
    if (onb > 0 && onb != nb) /* in schedule steps of this run: the same fraction of an epoch */
        pos->lr_shift = ((double)pos->iteration + pos->lr_shift) * nb / onb -
                        (double)pos->iteration;
    *start = *b0 = 0;
    *ep_nb = nb;
    int mid = pos->batch > 0;
    if (mid && pos->seen < 0) { /* an older checkpoint: where its order stands is unknown */
        if (pos->nb != nb)
            return vt_fail(VT_ERR_CHECKPOINT,
                           "%s: the checkpoint stopped inside an epoch of %d batches, but this "
                           "run has %d batches per epoch (batch size, rank count or dataset "
                           "changed), and it predates the record of the images trained; resume "
                           "from a checkpoint saved at an epoch end or keep the batch size",
                           path, pos->nb, nb);
        long g = (long)batch * world;
        pos->seen = pos->batch >= nb ? ntrain : pos->batch * g < ntrain ? pos->batch * g : ntrain;
    }
    if (mid && pos->seen > ntrain)
        return vt_fail(VT_ERR_CHECKPOINT, "%s: bad trainer state: %ld images of an epoch of %d "
                       "trained", path, pos->seen, ntrain);
    if (mid) {
        *b0 = pos->batch;
        *start = (int)pos->seen;
        /* a finished epoch (validation pending) stays finished */
        *ep_nb = pos->batch >= pos->nb ? pos->batch
                                         : pos->batch + steps_per_epoch(ntrain - *start, batch,
                                                                        world);
        if (*ep_nb == pos->batch) *start = ntrain;
        pos->nb = *ep_nb;
    }
    if (ow != world || (pos->global_batch > 0 && pos->global_batch != batch * world)) {
        char where[160] = "from an epoch end";
        if (mid && *ep_nb > *b0)
            snprintf(where, sizeof where, "%ld of epoch %d's %d images were trained, the "
                     "remaining %d go in %d steps of %d", pos->seen, pos->epoch + 1, ntrain,
                     ntrain - *start, *ep_nb - *b0, batch * world);
        else if (mid)
            snprintf(where, sizeof where, "epoch %d's images were all trained", pos->epoch + 1);
        char was[32] = "";
        if (pos->global_batch > 0) snprintf(was, sizeof was, ", were %d", pos->global_batch);
        vt_log(&t->log, VT_LOG_INFO,
               "resuming a %d-rank checkpoint on %d rank%s (steps of batch %d x %d = %d images%s): "
               "%s; the learning-rate schedule continues at epoch %.3f (%d batches an epoch, "
               "were %d)", ow, world, world == 1 ? "" : "s", batch, world, batch * world, was,
               where, ((double)pos->iteration + pos->lr_shift) / nb, nb, onb);
    }
    return VT_OK;
}

static vt_status run(vt_trainer *t)
{
    vt_dataset *ds = t->ds;
    vt_model *m = t->model;
    run_clock clk = {vt_now(), 0, 0, -1, 0, vt_opt_num(&t->opts, VT_OPT_TIME) * 3600.0, 0};
    vt_resume_state rs;
    memset(&rs, 0, sizeof rs);
    /* A cancel from here on (also during the set-up below) stops the run at its first batch. */
    atomic_store(&t->cancel, 0);
    t->stop = VT_STOP_NONE;
    t->run_dir[0] = 0;
    vt_results_free(&t->results);
    vt_results_init(&t->results, t->task);
    memset(&t->pos, 0, sizeof t->pos);
    t->pos.best_fitness = -INFINITY;
    /* Distributed: the communicator first (its opening is the ranks' first collective); from
     * here on a failure of one rank reaches the others at the next agreement (`agreed`
     * counts those of the set-up, -1 once one reported a failure). */
    TRY(open_backend(t));
    TRY(vt_dist_begin(t));
    int agreed = 0;
    vt_status st = VT_OK;
    vt_loader *L = NULL, *VL = NULL;
    int *perm = NULL, *subset = NULL;
    const char *resume = vt_opt_str(&t->opts, VT_OPT_RESUME);
    int resuming = resume[0] != 0;
    if (resuming) {
        /* every rank reads the checkpoint (a shared file system); rank 0's state is then
         * broadcast, so the replicas start identical */
        char rpath[VT_OPT_STR_MAX];
        snprintf(rpath, sizeof rpath, "%s", resume);
        if ((st = vt_train_load(t, rpath, &rs))) goto done; /* may change t->opts */
    }
    if (!resuming) {
        if ((st = apply_pretrained(t))) goto done;
    } else if (*vt_opt_str(&t->opts, VT_OPT_PRETRAINED) && t->opts.set[vt_opt_index(
                   vt_optdef_by_id(VT_OPT_PRETRAINED))])
        vt_log(&t->log, VT_LOG_WARNING, "pretrained=%s is not applied when resuming: the "
               "checkpoint holds the weights", vt_opt_str(&t->opts, VT_OPT_PRETRAINED));
    int world = t->world;
    int epochs = (int)vt_opt_num(&t->opts, VT_OPT_EPOCHS);
    int batch = (int)vt_opt_num(&t->opts, VT_OPT_BATCH);
    int nsplit = ds->split[VT_SPLIT_TRAIN].n;
    double fraction = vt_opt_num(&t->opts, VT_OPT_FRACTION);
    uint64_t seed = (uint64_t)vt_opt_num(&t->opts, VT_OPT_SEED);
    /* fraction < 1: a seeded subset (in split order); the epochs shuffle it (augmentation draws
     * mosaic / mixup partners from each batch, so from the subset) */
    subset = vt_malloc((size_t)(nsplit ? nsplit : 1) * sizeof(int));
    if (!subset) {
        st = VT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    int ntrain = vt_loader_pick_subset(nsplit, fraction, seed, subset);
    if (batch == -1 && (st = vt_autobatch(t, subset, ntrain, NULL, &batch))) goto done;
    if (t->dist_on) { /* the first agreement: all set so far, and the smallest batch=-1 */
        double v[1] = {-batch};
        agreed = (st = vt_dist_agree(t, VT_OK, v, 1, VT_COMM_MAX)) ? -1 : 1;
        if (st) goto done;
        batch = (int)-v[0];
    }
    /* Batches of one image are never trained (batch-norm statistics of a single image are
     * meaningless, see the trailing-batch rule below), so batch=1 would train nothing: say so
     * rather than fail later as if images could not be read. */
    if (batch < 2) {
        st = vt_fail(VT_ERR_OPTION_VALUE, "batch=%d: training needs at least 2 images a batch "
                     "(batch normalization); use batch=2 or more (validation and prediction "
                     "take batch=1)", batch);
        goto done;
    }
    if (ntrain < 2 * world) {
        st = vt_fail(VT_ERR_DATASET, "%s: need at least 2 training images%s", ds->root,
                     world > 1 ? " for each rank" : "");
        goto done;
    }
    /* batch is each rank's: a step trains batch x world images */
    if (batch * world > ntrain) batch = ntrain / world;
    /* A trailing batch of one image would make batch-norm statistics meaningless: drop it. */
    int nb = steps_per_epoch(ntrain, batch, world);
    /* the epoch the run starts in: whole (0, 0, nb) unless resumed inside one */
    int ep_start = 0, ep_b0 = 0, ep_nb = nb;
    if (resuming && (st = resume_shape(t, &rs.pos, resume, ntrain, batch, world, nb, &ep_start,
                                       &ep_b0, &ep_nb)))
        goto done;
    if ((st = prepare(t, batch)) || (st = reset_optimizer(t)) || (st = vt_dist_plan_buckets(t)) ||
        (st = vt_train_gpu_begin(t)))
        goto done;
    size_t np = (size_t)m->graph.n_params;
    if (resuming) {
        vt_backend *be = t->be;
        if ((st = be->ops->upload(be, t->opt_m, rs.opt_m, np * sizeof(float)))) goto done;
        if (rs.opt_v && (st = be->ops->upload(be, t->opt_v, rs.opt_v, np * sizeof(float))))
            goto done;
        t->opt_t = rs.opt_t;
        t->pos = rs.pos;
    }
    /* what the checkpoints record of this run's shape */
    t->pos.world = world;
    t->pos.global_batch = batch * world;
    t->pos.epoch_nb = nb;
    if (use_ema(t) && (st = vt_ema_prepare(t, rs.ema_p, rs.ema_b))) goto done;
    if (!resuming || !m->class_names)
        vt_model_set_class_names(m, (const char *const *)ds->class_names, ds->num_classes);
    int save = vt_opt_num(&t->opts, VT_OPT_SAVE) != 0 && t->rank == 0; /* rank 0 writes */
    if (save && (st = vt_run_dir_create(t, rs.run_dir[0] ? rs.run_dir : NULL))) goto done;
    vt_tb_open(t);
    int sz = imgsz_of(t);
    vt_aug_params aug;
    vt_trainer_aug_params(t, &aug);
    int cache_ram = strcmp(vt_opt_str(&t->opts, VT_OPT_CACHE), "ram") == 0;
    vt_loader_config cfg = {sz, m->channels, (int)vt_opt_num(&t->opts, VT_OPT_WORKERS), &aug,
                            &t->log, NULL, NULL, NULL, t->task->sample};
    /* batches the GPU uploads by DMA straight from the loader's buffers; each step waits for
     * its stream before the loader can reuse the buffer (vt_loader_wait's contract) */
    if (!t->be->ops->host_memory) {
        cfg.host_alloc = pinned_alloc;
        cfg.host_free = pinned_free;
        cfg.host_ctx = t;
    }
    /* workers=0: everything in this thread, no prefetch */
    int depth = cfg.workers > 0 ? (int)vt_opt_num(&t->opts, VT_OPT_PREFETCH) : 0;
    int64_t cache_cap = (int64_t)vt_opt_num(&t->opts, VT_OPT_CACHE_BYTES);
    if ((st = vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg)) ||
        (st = vt_loader_start_prefetch(L, depth)) ||
        (cache_ram && cache_cap > 0 && (st = vt_loader_enable_cache(L, cache_cap))))
        goto done;
    perm = vt_malloc((size_t)ntrain * sizeof(int));
    if (!perm) {
        st = VT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if (t->dist_on) { /* the second agreement: every rank ready; then one start for all */
        agreed = (st = vt_dist_agree_plan(t)) ? -1 : 2;
        if (st || (st = vt_dist_bcast_state(t))) goto done;
        vt_log(&t->log, VT_LOG_INFO, "distributed: %d ranks over %s, %d on this host; batch %d "
               "a rank, %d a step%s", world, t->comm->engine, t->comm->local_size, batch,
               batch * world, t->sync_bn ? "; sync_bn: batch norm over the whole step" : "");
    }
    if (ntrain < nsplit)
        vt_log(&t->log, VT_LOG_INFO, "fraction=%g: training on %d of %d images", fraction, ntrain,
               nsplit);
    int validate = (int)vt_opt_num(&t->opts, VT_OPT_VAL) && ds->split[VT_SPLIT_VAL].n > 0;
    int patience = (int)vt_opt_num(&t->opts, VT_OPT_PATIENCE);
    int period = (int)vt_opt_num(&t->opts, VT_OPT_SAVE_PERIOD);
    int plots = save && vt_opt_num(&t->opts, VT_OPT_PLOTS) != 0;
    clk.budget = vt_opt_num(&t->opts, VT_OPT_TIME) * 3600.0; /* resume may have changed it */
    memset(&t->prog, 0, sizeof t->prog);
    t->prog.epochs = epochs;
    t->prog.batches = nb;
    t->prog.iteration = t->pos.iteration;
    if (t->pos.best_epoch > 0) set_metric(&t->prog, VT_METRIC_BEST_FITNESS, t->pos.best_fitness);
    if (t->xfer_n && !resuming) {
        set_metric(&t->prog, VT_METRIC_TENSORS_TRANSFERRED, t->xfer_k);
        set_metric(&t->prog, VT_METRIC_TENSORS_TOTAL, t->xfer_n);
        vt_log(&t->log, VT_LOG_INFO, "%s", t->xfer_note);
    }
    if (resuming)
        vt_log(&t->log, VT_LOG_INFO, "resuming %s at epoch %d, batch %d of %d (iteration %lld)",
               resume, t->pos.epoch + 1, t->pos.batch, nb, (long long)t->pos.iteration);
    vt_train_pos *pos = &t->pos;
    run_state rst = {ds, clk, L, NULL, perm, subset, epochs, batch, nb, ntrain, depth, sz, seed,
                     aug, cache_ram, 0, cache_cap, validate, patience, period, plots, save,
                     t->rank, world, ep_start, ep_b0, ep_nb};
    while (!st && !t->stop && pos->epoch < epochs) st = run_epoch(t, &rst);
    clk = rst.clk;
    VL = rst.VL;
    if (st) goto done;
    if (!t->stop) t->stop = VT_STOP_COMPLETED;
    if ((st = vt_dist_sync_buffers(t))) goto done; /* the weights the model gets, rank 0 saves */
    /* A stop inside an epoch (time budget, cancel) saves the position reached. */
    if (save && (t->stop == VT_STOP_TIME || t->stop == VT_STOP_CANCELLED) && clk.unsaved) {
        const char *names[1] = {"last.vtm"};
        st = save_ckpts(t, names, 1);
    }
    if ((st = vt_dist_root_status(t, st))) goto done;
    if (t->stop == VT_STOP_TIME)
        vt_log(&t->log, VT_LOG_INFO, "time budget of %g h reached at epoch %d, batch %d; saved",
               vt_opt_num(&t->opts, VT_OPT_TIME), pos->epoch + 1, pos->batch);
done:
    /* a rank that failed during the set-up tells the others at the agreement they wait in */
    if (st && t->dist_on && agreed == 0) {
        double v[1] = {0};
        vt_dist_agree(t, st, v, 1, VT_COMM_MAX);
    } else if (st && t->dist_on && agreed == 1) {
        vt_dist_agree(t, st, NULL, 0, VT_COMM_MAX);
    }
    vt_resume_state_free(&rs);
    free(perm);
    free(subset);
    vt_loader_destroy(L);
    vt_loader_destroy(VL);
    if (st) t->stop = VT_STOP_NONE;
    /* The model gets the weights reached so far (the EMA when ema=1), also when cancelled. */
    if (t->exec && (!st || st == VT_ERR_CANCELLED)) {
        vt_status s2 = pull_weights(t);
        if (!s2 && use_ema(t) && t->ema_p) {
            s2 = t->be->ops->download(t->be, m->params, t->ema_p, np_of(m) * sizeof(float));
            if (!s2 && m->graph.n_buffers)
                s2 = t->be->ops->download(t->be, m->buffers, t->ema_b,
                                          (size_t)m->graph.n_buffers * sizeof(float));
            m->version++;
            t->dev_version = 0; /* the device holds the raw weights: re-upload the model's */
        }
        if (s2) st = s2;
    }
    if (!st && t->stop == VT_STOP_CANCELLED)
        st = vt_fail(VT_ERR_CANCELLED, "training cancelled at epoch %d, batch %d%s%s",
                     t->pos.epoch + (t->pos.batch == 0 ? 0 : 1), t->pos.batch,
                     t->run_dir[0] ? "; state saved in " : "", t->run_dir[0] ? t->run_dir : "");
    if (st == VT_ERR_CANCELLED) t->stop = VT_STOP_CANCELLED;
    /* the validation mosaics, drawn with the final weights the model now holds */
    if (!st && t->run_dir[0] && vt_opt_num(&t->opts, VT_OPT_PLOTS) != 0)
        st = vt_train_write_final_plots(t);
    vt_tb_close(t);
    vt_dist_end(t);
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

/* GPU staging of vt_trainer_step: NCHW rows copied into the pinned CNHW batch by a few threads,
 * channel by channel, each channel's DMA starting while the next one is copied. */
typedef struct stage_job {
    float *dst;
    const float *src;
    int C;
    size_t plane;
} stage_job;

static void stage_rows(void *ctx, size_t begin, size_t end)
{
    const stage_job *j = ctx;
    for (size_t n = begin; n < end; n++)
        memcpy(j->dst + n * j->plane, j->src + n * j->C * j->plane, j->plane * sizeof(float));
}

static vt_pool *stage_pool(vt_trainer *t)
{
    if (!t->stage_pool) {
        int n = vt_cpu_count();
        if (vt_pool_create(&t->stage_pool, n < 4 ? n : 4) != VT_OK) {
            t->stage_pool = NULL;
            vt_err_clear(); /* the caller falls back to a strided upload */
        }
    }
    return t->stage_pool;
}

static vt_status stage_upload(vt_trainer *t, const float *images, int C, int batch, size_t plane)
{
    vt_status st = VT_OK;
    for (int c = 0; c < C && st == VT_OK; c++) {
        size_t off = (size_t)c * batch * plane;
        stage_job j = {t->host_batch + off, images + (size_t)c * plane, C, plane};
        /* about 1 MiB per task: small images go several to a thread */
        size_t grain = (size_t)1 + ((size_t)1 << 18) / plane;
        vt_pool_run(t->stage_pool, (size_t)batch, grain, stage_rows, &j);
        st = t->be->ops->upload(t->be, vt_exec_input(t->exec) + off, t->host_batch + off,
                                (size_t)batch * plane * sizeof(float));
    }
    return st;
}

vt_status vt_trainer_upload_images(vt_trainer *t, const float *images, int batch)
{
    int C = t->model->channels, sz = imgsz_of(t);
    size_t plane = (size_t)sz * sz;
    if (t->host_pinned && stage_pool(t)) return stage_upload(t, images, C, batch, plane);
    /* CPU: rows straight into the input; GPU without pinned memory: one strided copy per
     * channel, the copy engine gathering the rows */
    vt_status st = VT_OK;
    for (int c = 0; c < C && !st; c++)
        st = t->be->ops->upload_rows(t->be, vt_exec_input(t->exec) + (size_t)c * batch * plane,
                                     plane * sizeof(float), images + (size_t)c * plane,
                                     (size_t)C * plane * sizeof(float), plane * sizeof(float),
                                     (size_t)batch);
    return st;
}

/* A step on caller images whose targets are the caller's class labels (labels != NULL; NULL:
 * those already in host_labels) or the loader L's last fill; the checks are the callers'. */
static vt_status step_on(vt_trainer *t, const float *images, const int32_t *labels,
                         struct vt_loader *L, int batch, float *loss)
{
    vt_status st = prepare(t, batch);
    if (!st && !t->opt_m) st = reset_optimizer(t);
    if (st) return st;
    if (labels) memcpy(t->host_labels, labels, (size_t)batch * sizeof(int32_t));
    st = vt_trainer_upload_images(t, images, batch);
    float l = 0;
    if (!st) st = train_batch(t, batch, base_lr(t), &l, L);
    if (!st) {
        set_metric(&t->prog, VT_METRIC_LOSS, l);
        set_metric(&t->prog, VT_METRIC_LR, base_lr(t));
        note_device_memory(t);
        if (loss) *loss = l;
    }
    return st;
}

static vt_status check_step_batch(int batch)
{
    return batch < 2 ? vt_fail(VT_ERR_INVALID_ARGUMENT, "batch=%d: a training step needs at "
                               "least 2 images (batch-norm statistics)", batch)
                     : VT_OK;
}

VT_API vt_status vt_trainer_step(vt_trainer *t, const float *images, const int32_t *labels,
                                 int batch, float *loss)
{
    if (!t || !images || !labels)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_step: NULL argument");
    vt_model *m = t->model;
    if (!t->task->class_labels)
        return vt_err_capture(t->err, vt_fail(VT_ERR_UNSUPPORTED,
                                              "vt_trainer_step takes class labels: it trains "
                                              "classifiers only; train a %s model with "
                                              "vt_trainer_run", m->arch));
    vt_status st = check_step_batch(batch);
    for (int i = 0; !st && i < batch; i++)
        if (labels[i] < 0 || labels[i] >= m->num_classes)
            st = vt_fail(VT_ERR_INVALID_ARGUMENT, "labels[%d]=%d is outside 0..%d", i, labels[i],
                         m->num_classes - 1);
    if (!st) st = step_on(t, images, labels, NULL, batch, loss);
    return vt_err_capture(t->err, st);
}

vt_status vt_trainer_probe_step(vt_trainer *t, const float *images, int batch, float *loss)
{
    vt_status st = check_step_batch(batch);
    if (st) return vt_err_capture(t->err, st);
    int classes = t->model->num_classes;
    if (t->task->class_labels) { /* the labels straight into the host labels step_on reads */
        st = prepare(t, batch);
        for (int i = 0; !st && i < batch; i++) t->host_labels[i] = i % classes;
        if (!st) st = step_on(t, images, NULL, NULL, batch, loss);
        return vt_err_capture(t->err, st);
    }
    int sz = imgsz_of(t);
    if (t->synth && t->synth_imgsz != sz) {
        vt_loader_destroy(t->synth);
        t->synth = NULL;
    }
    if (!t->synth && (st = vt_loader_create_synthetic(&t->synth, t->task->sample, sz)) == VT_OK)
        t->synth_imgsz = sz;
    if (!st) st = vt_loader_fill_synthetic(t->synth, batch, classes < 255 ? classes : 255,
                                           (uint64_t)t->prog.iteration + 1);
    if (!st) st = step_on(t, images, NULL, t->synth, batch, loss);
    return vt_err_capture(t->err, st);
}

vt_status vt_trainer_set_cpu_winograd(vt_trainer *t, int tile)
{
    vt_status st = open_backend(t);
    if (st == VT_OK && !vt_device_is_gpu(&t->dev)) vt_backend_cpu_set_winograd(t->be, tile);
    return st;
}

vt_status vt_trainer_synchronize(vt_trainer *t)
{
    return t->be ? t->be->ops->synchronize(t->be) : VT_OK;
}

VT_API vt_status vt_trainer_class_ap(const vt_trainer *t, int cls, double *ap50, double *ap50_95,
                                     int64_t *num_gt)
{
    if (!t) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_trainer_class_ap: NULL trainer");
    if (!t->task->class_ap)
        return vt_fail(VT_ERR_NOT_FOUND, "no detection validation has run on this trainer");
    return t->task->class_ap(&t->tc, cls, ap50, ap50_95, num_gt);
}
