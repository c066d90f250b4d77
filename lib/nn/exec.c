/* Forward and backward over the graph, one backend call (or a few) per layer. */
#include "nn/exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OPS(e) ((e)->be->ops)
#define TRY(x)                                                                                     \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

/* Memory the executor may spend on per-layer conv buffers kept from forward to backward. */
#define OWN_WS_BUDGET ((size_t)256 << 20)

static size_t numel(const vt_shape *s, int n) { return (size_t)s->c * s->h * s->w * (size_t)n; }

static void free_activations(vt_exec *e)
{
    vt_graph *g = e->g;
    for (int i = 0; i < g->n_nodes; i++) {
        vt_node *nd = &g->nodes[i];
        OPS(e)->free(e->be, nd->save0);
        OPS(e)->free(e->be, nd->save1);
        OPS(e)->free(e->be, nd->idx);
        OPS(e)->free(e->be, nd->ws);
        nd->y = nd->dy = nd->save0 = nd->save1 = NULL;
        nd->idx = NULL;
        nd->ws = NULL;
        nd->fused = nd->pool_fused = 0;
    }
    OPS(e)->free(e->be, e->arena);
    free(e->first_writer);
    e->arena = NULL;
    e->first_writer = NULL;
    e->arena_bytes = 0;
    OPS(e)->free(e->be, e->ws);
    OPS(e)->free(e->be, e->labels);
    e->ws = NULL;
    e->labels = NULL;
    e->ws_bytes = 0;
    e->cap_n = 0;
}

vt_status vt_exec_create(vt_exec **out, const vt_graph *g, vt_backend *be)
{
    *out = NULL;
    vt_exec *e = vt_calloc(1, sizeof *e);
    if (!e) return VT_ERR_OUT_OF_MEMORY;
    /* The executor works on its own copy of the graph: node runtime fields (activation
     * pointers, shapes) then never clash between executors of one model (trainer, predictor). */
    e->g = &e->graph;
    e->graph = *g;
    e->graph.cap = g->n_nodes;
    e->graph.nodes = vt_malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof(vt_node));
    if (!e->graph.nodes) {
        free(e);
        return VT_ERR_OUT_OF_MEMORY;
    }
    memcpy(e->graph.nodes, g->nodes, (size_t)g->n_nodes * sizeof(vt_node));
    for (int i = 0; i < g->n_nodes; i++) {
        vt_node *nd = &e->graph.nodes[i];
        nd->y = nd->dy = nd->save0 = nd->save1 = NULL;
        nd->idx = NULL;
        nd->ws = NULL;
        nd->fused = nd->pool_fused = 0;
    }
    e->be = be;
    e->consumers = vt_calloc((size_t)g->n_nodes, 1);
    size_t pb = (size_t)(g->n_params ? g->n_params : 1) * sizeof(float);
    size_t bb = (size_t)(g->n_buffers ? g->n_buffers : 1) * sizeof(float);
    if (!e->consumers || !(e->params = be->ops->alloc(be, pb)) ||
        !(e->grads = be->ops->alloc(be, pb)) || !(e->buffers = be->ops->alloc(be, bb)) ||
        !(e->loss = be->ops->alloc(be, 4 * sizeof(float)))) {
        vt_status st = vt_fail(VT_ERR_OUT_OF_MEMORY, "%s", vt_last_error());
        vt_exec_destroy(e);
        return st;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++)
            if (e->consumers[g->nodes[i].in[j]] < 255) e->consumers[g->nodes[i].in[j]]++;
    *out = e;
    return VT_OK;
}

void vt_exec_destroy(vt_exec *e)
{
    if (!e) return;
    free_activations(e);
    OPS(e)->free(e->be, e->params);
    OPS(e)->free(e->be, e->grads);
    OPS(e)->free(e->be, e->buffers);
    OPS(e)->free(e->be, e->loss);
    free(e->consumers);
    free(e->graph.nodes);
    free(e);
}

/* Node r is a ReLU or SiLU whose input is a BN read by nobody else: with the backend's fused
 * ops (fuse) the pair runs as one op writing the activation's output over the BN's (see
 * vt_exec_prepare). */
static int act_fusable(const vt_graph *g, const unsigned char *consumers, int r)
{
    const vt_node *nd = &g->nodes[r];
    return nd->op == VT_OP_ACT && (nd->act == VT_ACT_RELU || nd->act == VT_ACT_SILU) &&
           nd->in[0] != 0 && consumers[nd->in[0]] == 1 && g->nodes[nd->in[0]].op == VT_OP_BN;
}

/* Node i overwrites its input in place: a ReLU whose input nobody else reads (its backward
 * needs only its output; saves one activation per conv-BN-ReLU block), or a fused BN +
 * activation (the BN's own output is never written). */
static int act_in_place(const vt_graph *g, const unsigned char *consumers, int i, int fuse)
{
    const vt_node *nd = &g->nodes[i];
    if (fuse && act_fusable(g, consumers, i)) return 1;
    return nd->op == VT_OP_ACT && nd->act == VT_ACT_RELU && nd->in[0] != 0 &&
           consumers[nd->in[0]] == 1;
}

/* Times of the step: forward of node t at t, backward of node t at 2N-1-t; END: after it all. */
#define T_FWD(t) (t)
#define T_BWD(t) (2 * N - 1 - (t))
#define T_END (2 * N)

enum { PLAN_ALIGN = 16 }; /* elements per image: 64-byte aligned offsets at any batch */

static double plan_size(double elems) { return ceil(elems / PLAN_ALIGN) * PLAN_ALIGN; }

/* The placing order of vt_exec_plan: larger first, then earlier start, then lower index. */
static int place_before(int a, int b, const double *elems, const int *t0, int N)
{
    double sa = plan_size(elems[a % N]), sb = plan_size(elems[b % N]);
    if (sa != sb) return sa > sb;
    if (t0[a] != t0[b]) return t0[a] < t0[b];
    return a < b;
}

int vt_exec_plan(const vt_graph *g, const double *elems, int fuse, int grad_from, int share,
                 double *yoff, double *dyoff, int *first, double *arena_elems)
{
    int N = g->n_nodes, rc = 0, M = 2 * N; /* tensors: y of node i = i, dy of node i = N + i */
    size_t n1 = (size_t)(N ? N : 1), m1 = 2 * n1;
    unsigned char *cons = vt_calloc(n1, 1);
    int *root = vt_malloc(n1 * sizeof *root), *t0 = vt_malloc(m1 * sizeof *t0),
        *t1 = vt_malloc(m1 * sizeof *t1), *order = vt_malloc(m1 * sizeof *order),
        *bend = vt_malloc(m1 * sizeof *bend); /* placed neighbours of one tensor, by offset */
    double *offs = vt_malloc(m1 * sizeof *offs);
    if (!cons || !root || !t0 || !t1 || !order || !bend || !offs) {
        rc = -1;
        goto done;
    }
    for (int j = 0; j < N; j++) first[j] = -1;
    for (int j = 0; j < N; j++)
        for (int k = 0; k < g->nodes[j].n_in; k++) {
            int i = g->nodes[j].in[k];
            if (cons[i] < 255) cons[i]++;
            if (j > first[i]) first[i] = j;
        }
    for (int i = 0; i < N; i++)
        root[i] = act_in_place(g, cons, i, fuse) ? root[g->nodes[i].in[0]] : i;
    for (int k = 0; k < M; k++) t0[k] = t1[k] = -1; /* t0 < 0: no interval */
    /* activations: a group (a node and the in-place activations on it) from its node's forward
     * to its last reader: forward readers, and the backwards that read it (a conv, linear, BN or
     * activation reads its input; an activation its output; a BN its output when its
     * activation is fused, the fused op reading a ReLU's output as the mask).  The outputs
     * (nobody reads them: callers do, after the step) and the input live to the end. */
    for (int i = 0; i < N; i++)
        if (root[i] == i) t0[i] = t1[i] = T_FWD(i);
    for (int t = 0; t < N; t++) {
        const vt_node *nd = &g->nodes[t];
        int r = root[t];
        if (t == 0 || cons[t] == 0) t1[r] = T_END;
        for (int k = 0; k < nd->n_in; k++)
            if (t1[root[nd->in[k]]] < T_FWD(t)) t1[root[nd->in[k]]] = T_FWD(t);
        if (t < grad_from) continue; /* a frozen node's backward does not run */
        if (t > 0 && (nd->op == VT_OP_CONV || nd->op == VT_OP_LINEAR || nd->op == VT_OP_BN ||
                      nd->op == VT_OP_ACT) && t1[root[nd->in[0]]] < T_BWD(t))
            t1[root[nd->in[0]]] = T_BWD(t);
        if (nd->op == VT_OP_ACT && t1[r] < T_BWD(t)) t1[r] = T_BWD(t);
        if (nd->op == VT_OP_BN && fuse && first[t] >= 0 && act_fusable(g, cons, first[t]) &&
            t1[r] < T_BWD(t))
            t1[r] = T_BWD(t);
    }
    /* gradients: node i's from the backward of its first writer (its highest-numbered
     * consumer; zeroed just before) to its last reader: itself, or the BN a fused activation's
     * gradient feeds (that BN then has none).  The input's (input_grad: callers read it) and
     * the outputs' (the loss writes the seed before backward) live throughout. */
    for (int i = 0; i < N; i++) {
        if (i < grad_from) continue;
        if (fuse && g->nodes[i].op == VT_OP_BN && first[i] >= 0 &&
            act_fusable(g, cons, first[i]))
            continue;
        int fused_bn = fuse && act_fusable(g, cons, i) ? g->nodes[i].in[0] : -1;
        if (g->nodes[i].op == VT_OP_MAXPOOL && g->nodes[i].pool_fused)
            fused_bn = g->nodes[i].pool_fused; /* its BN reads the pool's gradient */
        t0[N + i] = first[i] >= 0 && i > 0 ? T_BWD(first[i]) : 0;
        t1[N + i] = i == 0 || first[i] < 0 ? T_END : T_BWD(fused_bn >= 0 ? fused_bn : i);
    }
    if (!share) /* everything live throughout: no sharing (in-place activations still share) */
        for (int k = 0; k < M; k++)
            if (t0[k] >= 0) t0[k] = 0, t1[k] = T_END;
    /* offsets in one arena, greedy by size (largest first, ties by start then index): each
     * tensor takes the lowest offset where it overlaps no tensor placed before whose interval
     * overlaps its own.  Sizes are rounded up to PLAN_ALIGN elements per image. */
    int no = 0;
    for (int k = 0; k < M; k++)
        if (t0[k] >= 0) order[no++] = k;
    for (int a = 1; a < no; a++) { /* insertion sort: the graphs are small */
        int k = order[a], j = a - 1;
        while (j >= 0 && !place_before(order[j], k, elems, t0, N)) order[j + 1] = order[j], j--;
        order[j + 1] = k;
    }
    double top = 0;
    for (int a = 0; a < no; a++) {
        int k = order[a], nl = 0;
        double sz = plan_size(elems[k % N]), off = 0;
        for (int b = 0; b < a; b++) { /* placed and overlapping in time, by offset */
            int q = order[b];
            if (t0[q] > t1[k] || t0[k] > t1[q]) continue;
            int j = nl++;
            while (j > 0 && offs[bend[j - 1]] > offs[q]) bend[j] = bend[j - 1], j--;
            bend[j] = q;
        }
        for (int j = 0; j < nl; j++) {
            int q = bend[j];
            if (offs[q] >= off + sz) break; /* the gap before q holds it */
            double e = offs[q] + plan_size(elems[q % N]);
            if (e > off) off = e;
        }
        offs[k] = off;
        if (off + sz > top) top = off + sz;
    }
    for (int i = 0; i < N; i++) {
        yoff[i] = offs[root[i]];
        dyoff[i] = t0[N + i] >= 0 ? offs[N + i] : -1;
    }
    *arena_elems = top;
done:
    free(cons);
    free(root);
    free(t0);
    free(t1);
    free(order);
    free(bend);
    free(offs);
    return rc;
}

vt_status vt_exec_prepare(vt_exec *e, int n, int h, int w)
{
    if (n < 1) return vt_fail(VT_ERR_INVALID_ARGUMENT, "batch size %d < 1", n);
    if (e->cap_n >= n && e->h == h && e->w == w && e->planned_frozen == e->frozen) {
        e->n = n;
        return VT_OK;
    }
    e->planned_frozen = e->frozen;
    free_activations(e);
    TRY(vt_graph_reshape(e->g, h, w));
    vt_graph *g = e->g;
    vt_backend *be = e->be;
    size_t ws = 0, own_ws = 0;
    /* BN -> ReLU or SiLU runs as one fused op when the backend has it: one pass over the
     * activation instead of two each way, and no gradient tensor between them. */
    int fuse = be->ops->bn_act_forward_train && be->ops->bn_act_forward_eval &&
               be->ops->bn_act_backward;
    if (fuse)
        for (int i = 1; i < g->n_nodes; i++)
            if (act_fusable(g, e->consumers, i)) {
                g->nodes[i].fused = g->nodes[i].in[0];
                g->nodes[g->nodes[i].in[0]].fused = i;
            }
    /* ... and BN + activation + a 2x2 stride-2 max pool as one, both ways, when the backend has
     * it: neither the activation nor its gradient is then written or read */
    int fuse_pool = fuse && be->ops->bn_act_pool_forward_train && be->ops->bn_act_pool_backward;
    for (int i = 1; fuse_pool && i < g->n_nodes; i++) {
        vt_node *p = &g->nodes[i];
        int a = p->in[0];
        if (p->op != VT_OP_MAXPOOL || p->k != 2 || p->s != 2 || p->p != 0 || a == 0 ||
            e->consumers[a] != 1 || !g->nodes[a].fused || g->nodes[a].op != VT_OP_ACT ||
            2 * p->out.h > g->nodes[a].out.h ||
            2 * p->out.w > g->nodes[a].out.w)
            continue;
        p->pool_fused = g->nodes[a].fused;
        g->nodes[p->pool_fused].pool_fused = i;
    }
    {
        /* activations and their gradients: buffers shared by liveness (vt_exec_plan) */
        int N = g->n_nodes;
        size_t n1 = (size_t)(N ? N : 1);
        double *elems = vt_malloc(n1 * sizeof *elems), *yo = vt_malloc(n1 * sizeof *yo),
               *dyo = vt_malloc(n1 * sizeof *dyo), arena = 0;
        int ok = -1;
        e->first_writer = vt_malloc(n1 * sizeof *e->first_writer);
        if (elems && yo && dyo && e->first_writer) {
            for (int i = 0; i < N; i++) elems[i] = (double)numel(&g->nodes[i].out, 1);
            ok = vt_exec_plan(g, elems, fuse, vt_exec_grad_from(e), !e->private_bufs, yo, dyo,
                              e->first_writer, &arena);
        }
        if (ok == 0 && !(e->arena = be->ops->alloc(be, (size_t)arena * n * sizeof(float))))
            ok = -1;
        for (int i = 0; ok == 0 && i < N; i++) {
            g->nodes[i].y = e->arena + (size_t)yo[i] * n;
            g->nodes[i].dy = dyo[i] >= 0 ? e->arena + (size_t)dyo[i] * n : NULL;
        }
        e->arena_bytes = ok == 0 ? (size_t)arena * n * sizeof(float) : 0;
        free(elems);
        free(yo);
        free(dyo);
        if (ok < 0) goto oom;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        vt_node *nd = &g->nodes[i];
        size_t ne = numel(&nd->out, n);
        switch (nd->op) {
        case VT_OP_BN:
            if (!(nd->save0 = be->ops->alloc(be, (size_t)nd->out.c * sizeof(float))) ||
                !(nd->save1 = be->ops->alloc(be, (size_t)nd->out.c * sizeof(float))))
                goto oom;
            break;
        case VT_OP_DROPOUT:
            if (!(nd->save0 = be->ops->alloc(be, ne * sizeof(float)))) goto oom;
            break;
        case VT_OP_MAXPOOL:
            if (!(nd->idx = be->ops->alloc(be, ne * sizeof(int32_t)))) goto oom;
            break;
        case VT_OP_CONV: {
            vt_conv_desc d;
            vt_node_conv_desc(g, nd, n, &d);
            /* A layer whose backward can reuse its forward's work (the CPU backend's columns)
             * gets its own buffer for it, within a budget; the others, and those whose backward
             * does not run (frozen, or a forward-only executor), share one scratch. */
            size_t keep = be->ops->conv_columns && i >= vt_exec_grad_from(e)
                              ? be->ops->conv_columns(be, &d)
                              : 0;
            if (keep && own_ws + keep <= OWN_WS_BUDGET) {
                if (!(nd->ws = be->ops->alloc(be, keep))) goto oom;
                own_ws += keep;
                break;
            }
            size_t b = be->ops->conv_workspace(be, &d);
            if (b > ws) ws = b;
            break;
        }
        default: break;
        }
    }
    if (ws && !(e->ws = be->ops->alloc(be, ws))) goto oom;
    e->ws_bytes = ws;
    if (!(e->labels = be->ops->alloc(be, (size_t)n * sizeof(int32_t)))) goto oom;
    e->n = e->cap_n = n;
    e->h = h;
    e->w = w;
    return VT_OK;
oom: {
    vt_status st = vt_fail(VT_ERR_OUT_OF_MEMORY, "%s (activations for batch %d at %dx%d)",
                           vt_last_error(), n, h, w);
    free_activations(e);
    return st;
}
}

static vt_pool_desc pool_desc(const vt_node *nd, const vt_shape *in, int n)
{
    vt_pool_desc d = {in->c * n, in->h, in->w, nd->out.h, nd->out.w, nd->k, nd->s, nd->p};
    return d;
}

/* Node bn (a BN with pool_fused) runs its pool in this pass: training, its statistics live. */
static int pool_fused_now(const vt_exec *e, int bn) { return e->training && bn >= e->frozen; }

/* A timestamp for the per-node profile: the backend first finishes what was queued (GPU ops
 * are asynchronous), so each node is charged its own work. */
static double prof_now(vt_exec *e)
{
    e->be->ops->synchronize(e->be);
    return vt_now();
}

vt_status vt_exec_forward(vt_exec *e, int training)
{
    vt_graph *g = e->g;
    vt_backend *be = e->be;
    const vt_backend_ops *o = be->ops;
    int n = e->n;
    e->training = training;
    double t0 = e->prof ? prof_now(e) : 0;
    for (int i = 1; i < g->n_nodes; i++) {
        vt_node *nd = &g->nodes[i];
        vt_node *in = &g->nodes[nd->in[0]];
        size_t ne = numel(&nd->out, n);
        float *P = e->params;
        if (e->prof) {
            double t1 = prof_now(e);
            e->prof[i - 1] += t1 - t0;
            t0 = t1;
        }
        switch (nd->op) {
        case VT_OP_CONV: {
            vt_conv_desc d;
            vt_node_conv_desc(g, nd, n, &d);
            d.keep_columns = nd->ws != NULL;
            TRY(o->conv_forward(be, &d, in->y, P + nd->w_off, nd->has_bias ? P + nd->b_off : NULL,
                                nd->y, nd->ws ? nd->ws : e->ws));
            break;
        }
        case VT_OP_BN: {
            size_t m = (size_t)n * nd->out.h * nd->out.w;
            float *rm = e->buffers + nd->buf_off, *rv = rm + nd->out.c;
            vt_act act = nd->fused ? g->nodes[nd->fused].act : VT_ACT_NONE;
            int train_bn = training && i >= e->frozen; /* frozen: running statistics */
            if (nd->pool_fused && pool_fused_now(e, i)) {
                vt_node *pn = &g->nodes[nd->pool_fused];
                vt_pool_desc d = pool_desc(pn, &nd->out, n);
                TRY(o->bn_act_pool_forward_train(be, act, nd->out.c, m, in->y, P + nd->w_off,
                                                 P + nd->b_off, nd->bn_eps, nd->bn_momentum, rm,
                                                 rv, nd->save0, nd->save1, &d, pn->y, pn->idx));
            } else if (train_bn && nd->fused)
                TRY(o->bn_act_forward_train(be, act, nd->out.c, m, in->y, P + nd->w_off,
                                            P + nd->b_off, nd->bn_eps, nd->bn_momentum, rm, rv,
                                            nd->save0, nd->save1, nd->y));
            else if (train_bn)
                TRY(o->bn_forward_train(be, nd->out.c, m, in->y, P + nd->w_off, P + nd->b_off,
                                        nd->bn_eps, nd->bn_momentum, rm, rv, nd->save0,
                                        nd->save1, nd->y));
            else if (nd->fused)
                TRY(o->bn_act_forward_eval(be, act, nd->out.c, m, in->y, P + nd->w_off,
                                           P + nd->b_off, nd->bn_eps, rm, rv, nd->y));
            else
                TRY(o->bn_forward_eval(be, nd->out.c, m, in->y, P + nd->w_off, P + nd->b_off,
                                       nd->bn_eps, rm, rv, nd->y));
            break;
        }
        case VT_OP_ACT:
            if (!nd->fused) TRY(o->act_forward(be, nd->act, nd->alpha, ne, in->y, nd->y));
            break;
        case VT_OP_MAXPOOL: {
            if (nd->pool_fused && pool_fused_now(e, nd->pool_fused)) break; /* its BN's */
            vt_pool_desc d = pool_desc(nd, &in->out, n);
            TRY(o->maxpool_forward(be, &d, in->y, nd->y, nd->idx));
            break;
        }
        case VT_OP_AVGPOOL: {
            vt_pool_desc d = pool_desc(nd, &in->out, n);
            TRY(o->avgpool_forward(be, &d, in->y, nd->y));
            break;
        }
        case VT_OP_GAP:
            TRY(o->gap_forward(be, (size_t)in->out.c * n, (size_t)in->out.h * in->out.w, in->y,
                               nd->y));
            break;
        case VT_OP_LINEAR:
            TRY(o->gemm(be, 0, 0, nd->cout, n, in->out.c, 1.0f, P + nd->w_off, in->out.c, in->y, n,
                        0.0f, nd->y, n));
            TRY(o->bias_add(be, nd->cout, (size_t)n, P + nd->b_off, nd->y));
            break;
        case VT_OP_DROPOUT:
            if (training && nd->drop_p > 0)
                TRY(o->dropout_forward(be, ne, nd->drop_p,
                                       e->dropout_seed + (uint64_t)i * 0x9E3779B97F4A7C15ull,
                                       in->y, nd->y, nd->save0));
            else
                TRY(o->copy(be, nd->y, in->y, ne * sizeof(float)));
            break;
        case VT_OP_ADD:
            TRY(o->add(be, ne, in->y, g->nodes[nd->in[1]].y, nd->y));
            break;
        case VT_OP_CONCAT: {
            size_t off = 0;
            for (int j = 0; j < nd->n_in; j++) {
                vt_node *s = &g->nodes[nd->in[j]];
                size_t k = numel(&s->out, n);
                TRY(o->copy(be, nd->y + off, s->y, k * sizeof(float)));
                off += k;
            }
            break;
        }
        case VT_OP_UPSAMPLE:
            TRY(o->upsample2_forward(be, (size_t)in->out.c * n, in->out.h, in->out.w, in->y,
                                     nd->y));
            break;
        case VT_OP_FLATCAT: { /* plane p of input j -> row p of the output, at column off */
            size_t off = 0, A = (size_t)nd->out.w, planes = (size_t)nd->out.c * n;
            for (int j = 0; j < nd->n_in; j++) {
                vt_node *s = &g->nodes[nd->in[j]];
                size_t hw = (size_t)s->out.h * s->out.w;
                TRY(o->copy2d(be, planes, hw, s->y, hw, nd->y + off, A));
                off += hw;
            }
            break;
        }
        case VT_OP_INPUT: break;
        }
    }
    if (e->prof) e->prof[g->n_nodes - 1] += prof_now(e) - t0;
    return VT_OK;
}

vt_status vt_exec_backward(vt_exec *e, int out) { return vt_exec_backward_outputs(e, &out, 1); }

vt_status vt_exec_backward_outputs(vt_exec *e, const int *outs, int n_outs)
{
    vt_graph *g = e->g;
    int out = -1;
    for (int k = 0; k < n_outs; k++) {
        if (outs[k] < 0 || outs[k] >= g->n_nodes || (n_outs > 1 && e->consumers[outs[k]]))
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "backward: output node %d is not a leaf of "
                           "the graph", outs[k]);
        if (outs[k] > out) out = outs[k];
    }
    vt_backend *be = e->be;
    const vt_backend_ops *o = be->ops;
    int n = e->n;
    /* Input gradients accumulate, so every one except the seed starts at zero: a shared buffer
     * just before its first writer's backward, the others (nobody below `out` writes them) now. */
    const int *fw = e->first_writer;
    double t0 = e->prof ? prof_now(e) : 0;
    /* Nodes below `lo` need no gradient: the image batch (unless input_grad) and the frozen
     * prefix, whose backward does not run. */
    int lo = vt_exec_grad_from(e);
    for (int i = lo; i < out; i++) {
        int seeded = 0;
        for (int k = 0; k < n_outs; k++) seeded |= outs[k] == i;
        if (g->nodes[i].dy && !seeded && (fw[i] < 0 || fw[i] > out))
            TRY(o->fill(be, g->nodes[i].dy, numel(&g->nodes[i].out, n), 0.0f));
    }
    if (e->prof) { /* the zero-fill is charged to node 0 */
        double t1 = prof_now(e);
        e->prof[0] += t1 - t0;
        t0 = t1;
    }
    for (int i = out; i >= (lo > 1 ? lo : 1); i--) {
        if (e->prof && i < out) {
            double t1 = prof_now(e);
            e->prof[i + 1] += t1 - t0;
            t0 = t1;
        }
        vt_node *nd = &g->nodes[i];
        /* the ops that can assign their input's gradient (dx_add = 0) start it without a fill */
        int assigns = nd->op == VT_OP_BN || nd->op == VT_OP_MAXPOOL || nd->op == VT_OP_GAP;
        int dx_add = !(assigns && fw[nd->in[0]] == i);
        for (int k = 0; k < nd->n_in; k++) { /* inputs whose gradient this node starts */
            int s = nd->in[k];
            int dup = 0;
            for (int j = 0; j < k; j++) dup |= nd->in[j] == s;
            if (dup || fw[s] != i || !g->nodes[s].dy || s < lo || (k == 0 && !dx_add)) continue;
            TRY(o->fill(be, g->nodes[s].dy, numel(&g->nodes[s].out, n), 0.0f));
        }
        if (e->prof) { /* also charged to node 0 */
            double t1 = prof_now(e);
            e->prof[0] += t1 - t0;
            t0 = t1;
        }
        vt_node *in = &g->nodes[nd->in[0]];
        float *dx = nd->in[0] < lo ? NULL : in->dy;
        size_t ne = numel(&nd->out, n);
        float *P = e->params, *G = e->grads;
        switch (nd->op) {
        case VT_OP_CONV: {
            vt_conv_desc d;
            vt_node_conv_desc(g, nd, n, &d);
            d.keep_columns = nd->ws != NULL;
            TRY(o->conv_backward(be, &d, in->y, P + nd->w_off, nd->dy, dx, G + nd->w_off,
                                 nd->has_bias ? G + nd->b_off : NULL, nd->ws ? nd->ws : e->ws));
            break;
        }
        case VT_OP_BN: {
            size_t m = (size_t)n * nd->out.h * nd->out.w;
            if (nd->pool_fused && pool_fused_now(e, i)) { /* the pool's backward with it */
                vt_node *act = &g->nodes[nd->fused], *pn = &g->nodes[nd->pool_fused];
                vt_pool_desc d = pool_desc(pn, &act->out, n);
                TRY(o->bn_act_pool_backward(be, act->act, nd->out.c, m, in->y, P + nd->w_off,
                                            P + nd->b_off, nd->save0, nd->save1, &d, pn->idx,
                                            pn->dy, dx, dx_add, G + nd->w_off, G + nd->b_off));
            } else if (nd->fused) {
                vt_node *act = &g->nodes[nd->fused];
                TRY(o->bn_act_backward(be, act->act, nd->out.c, m, in->y, act->y, P + nd->w_off,
                                       P + nd->b_off, nd->save0, nd->save1, act->dy, dx,
                                       dx_add, G + nd->w_off, G + nd->b_off));
            } else {
                TRY(o->bn_backward(be, nd->out.c, m, in->y, P + nd->w_off, nd->save0, nd->save1,
                                   nd->dy, dx, dx_add, G + nd->w_off, G + nd->b_off));
            }
            break;
        }
        case VT_OP_ACT:
            if (dx && !nd->fused)
                TRY(o->act_backward(be, nd->act, nd->alpha, ne, in->y, nd->y, nd->dy, dx));
            break;
        case VT_OP_MAXPOOL:
            if (dx && !(nd->pool_fused && pool_fused_now(e, nd->pool_fused))) {
                vt_pool_desc d = pool_desc(nd, &in->out, n);
                TRY(o->maxpool_backward(be, &d, nd->idx, nd->dy, dx, dx_add));
            }
            break;
        case VT_OP_AVGPOOL:
            if (dx) {
                vt_pool_desc d = pool_desc(nd, &in->out, n);
                TRY(o->avgpool_backward(be, &d, nd->dy, dx));
            }
            break;
        case VT_OP_GAP:
            if (dx)
                TRY(o->gap_backward(be, (size_t)in->out.c * n, (size_t)in->out.h * in->out.w,
                                    nd->dy, dx, dx_add));
            break;
        case VT_OP_LINEAR:
            TRY(o->gemm(be, 0, 1, nd->cout, in->out.c, n, 1.0f, nd->dy, n, in->y, n, 0.0f,
                        G + nd->w_off, in->out.c));
            TRY(o->channel_sum(be, nd->cout, (size_t)n, nd->dy, G + nd->b_off));
            if (dx)
                TRY(o->gemm(be, 1, 0, in->out.c, n, nd->cout, 1.0f, P + nd->w_off, in->out.c,
                            nd->dy, n, 1.0f, dx, n));
            break;
        case VT_OP_DROPOUT:
            if (dx) {
                if (e->training && nd->drop_p > 0)
                    TRY(o->dropout_backward(be, ne, nd->save0, nd->dy, dx));
                else
                    TRY(o->axpy(be, ne, 1.0f, nd->dy, dx));
            }
            break;
        case VT_OP_ADD:
            for (int j = 0; j < 2; j++)
                if (nd->in[j] >= lo) TRY(o->axpy(be, ne, 1.0f, nd->dy, g->nodes[nd->in[j]].dy));
            break;
        case VT_OP_CONCAT: {
            size_t off = 0;
            for (int j = 0; j < nd->n_in; j++) {
                vt_node *s = &g->nodes[nd->in[j]];
                size_t k = numel(&s->out, n);
                if (nd->in[j] >= lo) TRY(o->axpy(be, k, 1.0f, nd->dy + off, s->dy));
                off += k;
            }
            break;
        }
        case VT_OP_UPSAMPLE:
            if (dx)
                TRY(o->upsample2_backward(be, (size_t)in->out.c * n, in->out.h, in->out.w, nd->dy,
                                          dx));
            break;
        case VT_OP_FLATCAT: {
            size_t off = 0, A = (size_t)nd->out.w, planes = (size_t)nd->out.c * n;
            for (int j = 0; j < nd->n_in; j++) {
                vt_node *s = &g->nodes[nd->in[j]];
                size_t hw = (size_t)s->out.h * s->out.w;
                if (nd->in[j] >= lo)
                    TRY(o->axpy2d(be, planes, hw, 1.0f, nd->dy + off, A, s->dy, hw));
                off += hw;
            }
            break;
        }
        case VT_OP_INPUT: break;
        }
        if (e->grad_ready) TRY(e->grad_ready(e->grad_ready_ctx, i));
    }
    if (e->prof) e->prof[1] += prof_now(e) - t0;
    return VT_OK;
}

vt_status vt_exec_set_params(vt_exec *e, const float *params_host, const float *buffers_host)
{
    TRY(OPS(e)->upload(e->be, e->params, params_host, (size_t)e->g->n_params * sizeof(float)));
    if (e->g->n_buffers)
        TRY(OPS(e)->upload(e->be, e->buffers, buffers_host,
                           (size_t)e->g->n_buffers * sizeof(float)));
    return VT_OK;
}

vt_status vt_exec_get_params(vt_exec *e, float *params_host, float *buffers_host)
{
    TRY(OPS(e)->download(e->be, params_host, e->params, (size_t)e->g->n_params * sizeof(float)));
    if (e->g->n_buffers)
        TRY(OPS(e)->download(e->be, buffers_host, e->buffers,
                             (size_t)e->g->n_buffers * sizeof(float)));
    return VT_OK;
}
