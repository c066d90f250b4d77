/* Distributed (data-parallel) training: the trainer's side of the communicator (dist/comm.h).
 *
 * Every rank holds a replica of the model and trains its shard of each step (trainer.c's
 * shard(): step b's batch x ranks images of the epoch's seeded order, rank r the r-th slice),
 * so a run over N ranks of batch B sees the steps of one process of batch N x B.  After the
 * forward and the loss the ranks agree on the step's loss normaliser (vt_dist_step_weight);
 * during the backward the gradients are summed over the ranks in buckets, each as soon as the
 * backward has written it (vt_dist_backward, "gradient buckets" below), and every replica
 * applies the same update.
 * A rank's loss is a sum over its slice divided by max(1, w_r), w_r the task's loss_weight
 * (task.h; its image count unless the task says otherwise), so its gradient is G_r / max(1,
 * w_r); weighted by max(1, w_r) / max(1, W), W = sum of w_r, the sum is sum G_r / max(1, W),
 * the gradient of the whole step's loss, exactly:
 *   - classification (mean cross-entropy over the batch) and segmentation (a mean over the
 *     batch's pixels, the same count per image): w_r = the rank's images, also for a
 *     trailing step whose slices differ by one image; segmentation's soft Dice term is a
 *     ratio of per-class sums over the whole batch: the ranks sum those sums (loss_sync
 *     below) and scale their share of its gradient by W / w_r;
 *   - detection: w_r = the positives' target-score sum of the rank's slice;
 *   - instance segmentation: box terms over that sum, the mask term over the positive anchors
 *     P_r (task.h: loss2): each part weighted by its own, max(1, P_r) / max(1, P) for the mask
 *     term, its outputs' gradient rescaled by that over the first part's weight before the
 *     backward (rescale_part2), so that the all-reduce's one weight gives each its own.
 * Batch-norm layers normalise with each replica's own batch statistics (the forward differs
 * from one process with the whole step), unless sync_bn=1: then the CPU backend's BN ops sum
 * their per-channel sums over the ranks (bn_sync below), forward and backward, and the step
 * is one process's with the whole batch.  Running statistics are averaged over the ranks
 * before they are read (validation, checkpoints, the end of the run): the running update is
 * linear, so averaging once equals averaging at every step (with sync_bn they are equal).
 *
 * The ranks stay in lock step: every decision that ends or skips something (the time budget,
 * cancel, an unreadable batch, a failure) is reduced, so all ranks take it together; every
 * rank validates its shard of the val split and the task merges the shards (task.h's shard
 * hooks, evaluate.c), then rank 0's metrics are sent to all, so the fitness, early stopping
 * and best epoch agree; only rank 0 writes the run folder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/trainer_impl.h"

static int is_adamw(const vt_trainer *t)
{
    return strcmp(vt_opt_str(&t->opts, VT_OPT_OPTIMIZER), "adamw") == 0;
}

/* sync_bn's hook (backend.h, vt_bn_sync_fn): the BN layer's sums over every rank.  A rank's
 * backward sums are in the units of its own loss (its sum over max(1, w_r), as in
 * vt_dist_reduce_grads): weighted by max(1, w_r) they add up to the step's, and are put back
 * in this rank's units. */
static vt_status bn_sync(void *ctx, double *q, int channels, int backward)
{
    vt_trainer *t = ctx;
    double w = 1;
    if (backward) {
        double lw = t->tc.loss_weight, n = t->exec->n;
        w = lw >= 0 ? lw : n;
        if (w < 1) w = 1;
        for (int c = 0; c < channels; c++) q[3 * c + 1] *= w, q[3 * c + 2] *= w;
    }
    VT_TRY(t->comm->ops->allreduce_host(t->comm, q, 3 * (size_t)channels, VT_COMM_SUM));
    if (backward)
        for (int c = 0; c < channels; c++) q[3 * c + 1] /= w, q[3 * c + 2] /= w;
    return VT_OK;
}

/* The CPU backend's loss hook (backend.h, vt_loss_sync_fn): a batch loss that is not a sum
 * over images (segmentation's Dice) over every rank's pixels.  The ranks' gradients are
 * weighted by n_r / N (their images, vt_dist_reduce_grads), so this rank's share of the
 * gradient of the whole batch's term is scaled by N / n_r. */
static vt_status loss_sync(void *ctx, double *q, int n, double *scale)
{
    vt_trainer *t = ctx;
    /* on the stack for up to 512 classes: no allocation per step, none that could fail on one
     * rank only and leave the others in the collective */
    double local[1025];
    double *buf = n < 1025 ? local : vt_malloc(((size_t)n + 1) * sizeof *buf);
    if (!buf) return vt_fail(VT_ERR_OUT_OF_MEMORY, "distributed loss: %d sums", n);
    memcpy(buf, q, (size_t)n * sizeof *q);
    double mine = t->exec->n > 0 ? t->exec->n : 1;
    buf[n] = mine;
    vt_status st = t->comm->ops->allreduce_host(t->comm, buf, (size_t)n + 1, VT_COMM_SUM);
    if (!st) {
        memcpy(q, buf, (size_t)n * sizeof *q);
        *scale = buf[n] / mine;
    }
    if (buf != local) free(buf);
    return st;
}

vt_status vt_dist_step_syncs(vt_trainer *t, int n)
{
    if (!t->dist_on || strcmp(t->be->ops->name, "cpu") != 0) return VT_OK;
    /* a rank without images this step runs no layer and no loss: the others go without the
     * syncs too */
    double v[1] = {n};
    VT_TRY(vt_dist_agree(t, VT_OK, v, 1, VT_COMM_MIN));
    vt_backend_cpu_set_bn_sync(t->be, v[0] > 0 && t->sync_bn ? bn_sync : NULL, t);
    vt_backend_cpu_set_loss_sync(t->be, v[0] > 0 ? loss_sync : NULL, t);
    if (v[0] == 0)
        vt_log(&t->log, VT_LOG_WARNING, "a rank has no readable image at iteration %lld: for "
               "that step batch-wide terms (sync_bn, the Dice loss) run on each rank's own "
               "images", (long long)t->prog.iteration + 1);
    return VT_OK;
}

vt_status vt_dist_begin(vt_trainer *t)
{
    t->dist_on = 0;
    t->last_rank = t->rank = 0;
    t->last_world = t->world = 1;
    t->log_level = t->log.max_level;
    if (strcmp(vt_opt_str(&t->opts, VT_OPT_DIST), "off") == 0) return VT_OK;
    /* one communicator a backend kind: MPI's for CPU backends, NCCL's for this GPU backend
     * (release_device drops NCCL's with its backend) */
    if (t->comm && t->comm->be != (t->be->ops->host_memory ? NULL : t->be)) {
        vt_comm_destroy(t->comm);
        t->comm = NULL;
    }
    if (!t->comm) VT_TRY(vt_comm_open(&t->comm, t->be));
    if (!t->comm) return VT_OK; /* one process */
    /* batch-wide terms over the ranks (sync_bn, the Dice loss's sums) are hooks of the CPU
     * backend's ops; GPU ranks (NCCL) have none yet */
    int cpu = strcmp(t->be->ops->name, "cpu") == 0;
    if (!cpu && vt_opt_num(&t->opts, VT_OPT_SYNC_BN) != 0)
        return vt_fail(VT_ERR_UNSUPPORTED, "rank %d of %d: sync_bn=1 runs on CPU ranks only; "
                       "on GPU ranks (device=%s) batch norm normalises each rank's images: set "
                       "sync_bn=0", t->comm->rank, t->comm->size, t->device);
    t->dist_on = 1;
    t->last_rank = t->rank = t->comm->rank;
    t->last_world = t->world = t->comm->size;
    t->sync_bn = vt_opt_num(&t->opts, VT_OPT_SYNC_BN) != 0 && cpu;
    if (!cpu && t->rank == 0 && vt_task_option_applies(t->task->id, "dice") == 1 &&
        vt_opt_num(&t->opts, VT_OPT_DICE) > 0)
        vt_log(&t->log, VT_LOG_WARNING, "GPU ranks: the Dice term of the loss is computed over "
               "each rank's images (on CPU ranks, over the whole step's)");
    /* only rank 0 logs the run; the others say what goes wrong */
    if (t->rank > 0 && t->log.max_level > VT_LOG_WARNING) t->log.max_level = VT_LOG_WARNING;
    return VT_OK;
}

void vt_dist_step_end(vt_trainer *t)
{
    if (!t->dist_on || strcmp(t->be->ops->name, "cpu") != 0) return;
    vt_backend_cpu_set_bn_sync(t->be, NULL, NULL);
    vt_backend_cpu_set_loss_sync(t->be, NULL, NULL);
}

void vt_dist_end(vt_trainer *t)
{
    vt_dist_step_end(t);
    free(t->buckets);
    t->buckets = NULL;
    t->n_buckets = t->next_bucket = 0;
    if (t->dist_tmp && t->be) t->be->ops->free(t->be, t->dist_tmp);
    t->dist_tmp = NULL;
    t->dist_tmp_n = 0;
    t->sync_bn = 0;
    if (t->dist_on) t->log.max_level = t->log_level;
    t->dist_on = 0;
    t->rank = 0;
    t->world = 1;
}

vt_status vt_dist_agree(vt_trainer *t, vt_status st, double *v, int n, vt_comm_op op)
{
    if (!t->dist_on) return st;
    double buf[9];
    if (n > 8) return vt_fail(VT_ERR_INTERNAL, "vt_dist_agree: %d values", n);
    /* the highest failing rank + 1, 0 when none failed; values reduced with op (the flag with
     * MAX: a SUM of flags is ranks that failed, MIN would hide them) */
    buf[0] = st ? t->rank + 1 : 0;
    for (int i = 0; i < n; i++) buf[1 + i] = v[i];
    vt_status cst;
    if (op == VT_COMM_MAX) {
        cst = t->comm->ops->allreduce_host(t->comm, buf, (size_t)n + 1, VT_COMM_MAX);
    } else {
        /* the values only when no rank failed: a failing rank may agree with fewer values
         * (vt_dist_agree(t, st, NULL, 0, ...)) where the others agree on a step's */
        cst = t->comm->ops->allreduce_host(t->comm, buf, 1, VT_COMM_MAX);
        if (!cst && n && buf[0] == 0)
            cst = t->comm->ops->allreduce_host(t->comm, buf + 1, (size_t)n, op);
    }
    if (cst) return cst;
    if (st) return st; /* this rank's own error, already set */
    if (buf[0] > 0)
        return vt_fail(VT_ERR_BAD_STATE, "rank %d of %d failed (its log says why); all ranks "
                       "stop", (int)buf[0] - 1, t->world);
    for (int i = 0; i < n; i++) v[i] = buf[1 + i];
    return VT_OK;
}

vt_status vt_dist_root_status(vt_trainer *t, vt_status st)
{
    if (!t->dist_on) return st;
    int32_t code = (int32_t)st;
    vt_status cst = t->comm->ops->bcast_host(t->comm, &code, sizeof code, 0);
    if (cst) return cst;
    if (t->rank == 0 || !code) return st;
    return vt_fail((vt_status)code, "rank 0 failed (its log says why); all ranks stop");
}

/* Rank 0's weights, optimiser state and EMA to every rank: one start for all replicas, fresh
 * or resumed. */
vt_status vt_dist_bcast_state(vt_trainer *t)
{
    if (!t->dist_on) return VT_OK;
    vt_comm *c = t->comm;
    const vt_graph *g = &t->model->graph;
    size_t np = (size_t)g->n_params * sizeof(float), nbuf = (size_t)g->n_buffers * sizeof(float);
    VT_TRY(c->ops->bcast(c, t->exec->params, np, 0));
    if (nbuf) VT_TRY(c->ops->bcast(c, t->exec->buffers, nbuf, 0));
    VT_TRY(c->ops->bcast(c, t->opt_m, np, 0));
    if (is_adamw(t)) VT_TRY(c->ops->bcast(c, t->opt_v, np, 0));
    if (t->ema_p) VT_TRY(c->ops->bcast(c, t->ema_p, np, 0));
    if (t->ema_b && nbuf) VT_TRY(c->ops->bcast(c, t->ema_b, nbuf, 0));
    double v[1] = {(double)t->opt_t};
    VT_TRY(c->ops->bcast_host(c, v, sizeof v, 0));
    t->opt_t = (int64_t)v[0];
    return c->ops->join ? c->ops->join(c) : VT_OK;
}

vt_status vt_dist_sync_buffers(vt_trainer *t)
{
    if (!t->dist_on) return VT_OK;
    size_t n = (size_t)t->model->graph.n_buffers;
    if (!n) return VT_OK;
    float inv = 1.0f / (float)t->world;
    VT_TRY(t->comm->ops->allreduce_scaled(t->comm, t->exec->buffers, n, inv));
    if (t->ema_b) VT_TRY(t->comm->ops->allreduce_scaled(t->comm, t->ema_b, n, inv));
    return t->comm->ops->join ? t->comm->ops->join(t->comm) : VT_OK;
}

vt_status vt_dist_step_weight(vt_trainer *t, vt_status st, int n, float *loss)
{
    /* this rank's loss is a sum over its slice divided by max(1, wr), plus, for a task with a
     * second part (task.h: loss2), a sum divided by max(1, w2) */
    const vt_task_ctx *tc = vt_trainer_task_ctx(t);
    double have = st || n == 0 ? 0 : 1, lw = tc->loss_weight, lw2 = tc->loss2_weight;
    double wr = have ? lw >= 0 ? lw : n : 0, w2 = have && lw2 >= 0 ? lw2 : 0;
    double nr = wr > 1 ? wr : 1, n2 = w2 > 1 ? w2 : 1, l2 = have && lw2 >= 0 ? tc->loss2 : 0;
    double v[6] = {n, wr, w2, have * nr * (*loss - l2), have * n2 * l2, have && lw2 >= 0};
    VT_TRY(vt_dist_agree(t, st, v, 6, VT_COMM_SUM));
    t->step_images = (int)v[0];
    t->dist_w = t->dist_w2 = 0;
    t->dist_part2 = v[5] > 0; /* some rank's task reported a second part */
    if (v[0] == 0) return VT_OK; /* the caller skips the step on every rank */
    double W = v[1] > 1 ? v[1] : 1, W2 = v[2] > 1 ? v[2] : 1; /* the step's normalisers */
    *loss = (float)(v[3] / W + v[4] / W2);
    t->dist_w = (float)(have * nr / W);
    t->dist_w2 = (float)(have * n2 / W2);
    return VT_OK;
}

/* A second loss part's gradient, on the model's outputs 1.. (task.h: loss2), in the units of
 * the first: scaled by dist_w2 / dist_w, so that the all-reduce's one weight (dist_w) gives
 * each part its own: dy += (f - 1) dy through a scratch copy (axpy's operands must not
 * overlap). */
static vt_status rescale_part2(vt_trainer *t)
{
    vt_exec *e = t->exec;
    const vt_model *m = t->model;
    vt_backend *be = t->be;
    if (!t->dist_part2 || m->n_outputs < 2 || t->dist_w <= 0 || t->dist_w2 == t->dist_w)
        return VT_OK;
    float f = t->dist_w2 / t->dist_w;
    for (int k = 1; k < m->n_outputs; k++) {
        const vt_node *o = &e->g->nodes[m->outputs[k]];
        size_t len = (size_t)e->n * o->out.c * o->out.h * o->out.w;
        if (!o->dy || !len) continue;
        if (len > t->dist_tmp_n) {
            be->ops->free(be, t->dist_tmp);
            t->dist_tmp_n = 0;
            if (!(t->dist_tmp = be->ops->alloc(be, len * sizeof(float))))
                return vt_fail(VT_ERR_OUT_OF_MEMORY, "distributed: %zu floats of scratch", len);
            t->dist_tmp_n = len;
        }
        VT_TRY(be->ops->copy2d(be, 1, len, o->dy, len, t->dist_tmp, len));
        VT_TRY(be->ops->axpy(be, len, f - 1.0f, t->dist_tmp, o->dy));
    }
    return VT_OK;
}

/* ---- gradient buckets ----------------------------------------------------------------------
 * Parameters are laid out by node in two runs (vt_graph_finalize): the decayed weights
 * [0, n_decay), then the others; and the backward goes from the last node to the first, each
 * node writing only its own gradients.  So after node i's backward the gradients of nodes >= i
 * are a tail of each run, and a bucket is a pair of ranges, [d_lo, d_hi) and [b_lo, b_hi),
 * closed at the node where it reaches bucket_mb.  The plan depends on the graph and options
 * only, so every rank issues the same all-reduces in the same order. */
typedef struct vt_dist_bucket {
    int node;                 /* reduced once the backward has done this node; -1: at the end */
    int64_t d_lo, d_hi, b_lo, b_hi;
} vt_dist_bucket;

vt_status vt_dist_plan_buckets(vt_trainer *t)
{
    free(t->buckets);
    t->buckets = NULL;
    t->n_buckets = t->next_bucket = 0;
    if (!t->dist_on) return VT_OK;
    const vt_graph *g = &t->model->graph;
    double mb = vt_opt_num(&t->opts, VT_OPT_BUCKET_MB);
    double cap = mb > 0 ? mb * 1048576.0 / sizeof(float) : INFINITY; /* floats */
    t->buckets = vt_calloc((size_t)g->n_nodes + 1, sizeof *t->buckets);
    if (!t->buckets) return vt_fail(VT_ERR_OUT_OF_MEMORY, "distributed: %d buckets", g->n_nodes);
    int64_t d0 = t->opt_d0, n0 = t->opt_n0, dhi = g->n_decay, bhi = g->n_params;
    int64_t dlo = dhi, blo = bhi;
    for (int i = g->n_nodes - 1; i >= vt_exec_grad_from(t->exec) && i >= 1; i--) {
        const vt_node *nd = &g->nodes[i];
        const int64_t off[2] = {nd->w_off, nd->b_off}, len[2] = {nd->w_n, nd->b_n};
        for (int k = 0; k < 2; k++) {
            if (len[k] <= 0 || off[k] < 0) continue;
            if (off[k] < g->n_decay) {
                if (off[k] >= d0 && off[k] < dlo) dlo = off[k];
            } else if (off[k] >= n0 && off[k] < blo) {
                blo = off[k];
            }
        }
        if ((double)(dhi - dlo + bhi - blo) >= cap) {
            t->buckets[t->n_buckets++] = (vt_dist_bucket){i, dlo, dhi, blo, bhi};
            dhi = dlo;
            bhi = blo;
        }
    }
    /* what is left of the trainable ranges, after the backward */
    if (dhi > d0 || bhi > n0)
        t->buckets[t->n_buckets++] = (vt_dist_bucket){-1, d0 < dhi ? d0 : dhi, dhi,
                                                      n0 < bhi ? n0 : bhi, bhi};
    return VT_OK;
}

vt_status vt_dist_agree_plan(vt_trainer *t)
{
    /* FNV-1a over the parameter count and every bucket's ranges, kept to 52 bits so that a
     * double holds it exactly; MIN of h and of -h: equal everywhere iff min == max */
    uint64_t h = 14695981039346656037ull;
    /* and what vt_dist_bcast_state sends: AdamW's second moments, the EMA, the buffers */
    const int64_t state = (int64_t)is_adamw(t) | (int64_t)(t->ema_p != NULL) << 1 |
                          t->model->graph.n_buffers << 2;
    for (int i = -2; i < t->n_buckets; i++) {
        const vt_dist_bucket *b = i < 0 ? NULL : &t->buckets[i];
        const int64_t x[4] = {b ? b->d_lo : i == -2 ? state : t->model->graph.n_params,
                              b ? b->d_hi : t->opt_d0, b ? b->b_lo : t->opt_n0,
                              b ? b->b_hi : t->n_buckets};
        for (int k = 0; k < 4; k++)
            for (int byte = 0; byte < 8; byte++) {
                h ^= (uint64_t)x[k] >> (8 * byte) & 0xff;
                h *= 1099511628211ull;
            }
    }
    double sig = (double)(h & ((1ull << 52) - 1)), v[2] = {sig, -sig};
    VT_TRY(vt_dist_agree(t, VT_OK, v, 2, VT_COMM_MIN));
    if (v[0] != -v[1])
        return vt_fail(VT_ERR_OPTION_VALUE, "rank %d of %d: the ranks' models or options differ "
                       "(their parameters, optimizer state or gradient buckets do not match: "
                       "model, freeze=, bucket_mb=, optimizer=, ema=); give every rank the same",
                       t->rank, t->world);
    return VT_OK;
}

static vt_status reduce_bucket(vt_trainer *t, const vt_dist_bucket *b)
{
    vt_comm *c = t->comm;
    float *G = t->exec->grads;
    if (b->d_hi > b->d_lo)
        VT_TRY(c->ops->allreduce_scaled(c, G + b->d_lo, (size_t)(b->d_hi - b->d_lo), t->dist_w));
    if (b->b_hi > b->b_lo)
        VT_TRY(c->ops->allreduce_scaled(c, G + b->b_lo, (size_t)(b->b_hi - b->b_lo), t->dist_w));
    return VT_OK;
}

/* exec's grad_ready: every bucket the backward has now written */
static vt_status grad_ready(void *ctx, int node)
{
    vt_trainer *t = ctx;
    while (t->next_bucket < t->n_buckets && t->buckets[t->next_bucket].node >= node)
        VT_TRY(reduce_bucket(t, &t->buckets[t->next_bucket++]));
    return VT_OK;
}

vt_status vt_dist_backward(vt_trainer *t, int n)
{
    vt_exec *e = t->exec;
    const vt_model *m = t->model;
    t->next_bucket = 0;
    vt_status st = n > 0 ? rescale_part2(t) : VT_OK;
    if (n > 0 && !st) {
        e->grad_ready = grad_ready;
        e->grad_ready_ctx = t;
        st = vt_exec_backward_outputs(e, m->outputs, m->n_outputs);
        e->grad_ready = NULL;
        e->grad_ready_ctx = NULL;
    } else if (n == 0) { /* a rank without images this step adds nothing */
        st = t->be->ops->fill(t->be, e->grads, (size_t)m->graph.n_params, 0.0f);
    }
    /* the buckets the backward did not reach (all of them without images, or after a failure):
     * every rank issues the same all-reduces in the same order */
    vt_status cs = VT_OK;
    while (!cs && t->next_bucket < t->n_buckets)
        cs = reduce_bucket(t, &t->buckets[t->next_bucket++]);
    if (!cs && t->comm->ops->join) cs = t->comm->ops->join(t->comm);
    if (cs) return cs; /* the engine's error: the job cannot go on */
    return vt_dist_agree(t, st, NULL, 0, VT_COMM_MAX);
}

vt_status vt_dist_share_metrics(vt_trainer *t, vt_status st)
{
    if (!t->dist_on) return st;
    VT_TRY(vt_dist_root_status(t, st));
    vt_comm *c = t->comm;
    VT_TRY(c->ops->bcast_host(c, t->prog.value, sizeof t->prog.value, 0));
    return c->ops->bcast_host(c, t->prog.has, sizeof t->prog.has, 0);
}
