/* Building the model graph, shape inference, parameter layout and per-layer costs. */
#include "nn/graph.h"

#include <stdlib.h>
#include <string.h>

static const char *op_name(vt_op op)
{
    static const char *names[] = {"input", "conv", "batchnorm", "activation", "maxpool",
                                  "avgpool", "global-avgpool", "linear", "dropout", "add",
                                  "concat", "upsample", "flatcat"};
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

void vt_graph_init(vt_graph *g) { memset(g, 0, sizeof *g); }

void vt_graph_free(vt_graph *g)
{
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

static int push(vt_graph *g, vt_op op, const int *ins, int n_in)
{
    if (g->n_nodes == g->cap) {
        int cap = g->cap ? g->cap * 2 : 32;
        vt_node *nn = vt_realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return -1;
        g->nodes = nn;
        g->cap = cap;
    }
    for (int i = 0; i < n_in; i++)
        if (ins[i] < 0 || ins[i] >= g->n_nodes) {
            vt_fail(VT_ERR_INTERNAL, "graph: %s node reads node %d which does not exist",
                    op_name(op), ins[i]);
            return -1;
        }
    vt_node *nd = &g->nodes[g->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->op = op;
    nd->n_in = n_in;
    for (int i = 0; i < n_in; i++) nd->in[i] = ins[i];
    nd->w_off = nd->b_off = nd->buf_off = -1;
    nd->groups = 1;
    return g->n_nodes++;
}

int vt_g_input(vt_graph *g, int c, int h, int w)
{
    int id = push(g, VT_OP_INPUT, NULL, 0);
    if (id >= 0) {
        g->nodes[id].out = (vt_shape){c, h, w};
        g->input = g->nodes[id].out;
    }
    return id;
}

int vt_g_conv(vt_graph *g, int in, int cout, int k, int s, int p, int groups, int bias)
{
    if (in < 0) return -1;
    int cin = g->nodes[in].out.c;
    if (groups < 1 || cin % groups || cout % groups) {
        vt_fail(VT_ERR_INTERNAL, "conv: %d->%d channels not divisible by groups=%d", cin, cout,
                groups);
        return -1;
    }
    int id = push(g, VT_OP_CONV, &in, 1);
    if (id < 0) return -1;
    vt_node *nd = &g->nodes[id];
    nd->cout = cout;
    nd->k = k;
    nd->s = s;
    nd->p = p;
    nd->groups = groups;
    nd->has_bias = bias;
    nd->w_n = (int64_t)cout * (cin / groups) * k * k;
    nd->b_n = bias ? cout : 0;
    return vt_graph_reshape(g, g->input.h, g->input.w) ? -1 : id;
}

int vt_g_bn(vt_graph *g, int in)
{
    if (in < 0) return -1;
    int id = push(g, VT_OP_BN, &in, 1);
    if (id < 0) return -1;
    vt_node *nd = &g->nodes[id];
    nd->out = g->nodes[in].out;
    nd->w_n = nd->b_n = nd->out.c;
    nd->bn_eps = 1e-5f;
    nd->bn_momentum = 0.1f;
    return id;
}

int vt_g_act(vt_graph *g, int in, vt_act act, float alpha)
{
    if (in < 0) return -1;
    int id = push(g, VT_OP_ACT, &in, 1);
    if (id < 0) return -1;
    g->nodes[id].act = act;
    g->nodes[id].alpha = alpha;
    g->nodes[id].out = g->nodes[in].out;
    return id;
}

static int pool(vt_graph *g, vt_op op, int in, int k, int s, int p)
{
    if (in < 0) return -1;
    int id = push(g, op, &in, 1);
    if (id < 0) return -1;
    g->nodes[id].k = k;
    g->nodes[id].s = s;
    g->nodes[id].p = p;
    return vt_graph_reshape(g, g->input.h, g->input.w) ? -1 : id;
}

int vt_g_maxpool(vt_graph *g, int in, int k, int s, int p) { return pool(g, VT_OP_MAXPOOL, in, k, s, p); }
int vt_g_avgpool(vt_graph *g, int in, int k, int s, int p) { return pool(g, VT_OP_AVGPOOL, in, k, s, p); }

int vt_g_gap(vt_graph *g, int in)
{
    if (in < 0) return -1;
    int id = push(g, VT_OP_GAP, &in, 1);
    if (id < 0) return -1;
    g->nodes[id].out = (vt_shape){g->nodes[in].out.c, 1, 1};
    return id;
}

int vt_g_linear(vt_graph *g, int in, int cout)
{
    if (in < 0) return -1;
    vt_shape s = g->nodes[in].out;
    if (s.h != 1 || s.w != 1) {
        vt_fail(VT_ERR_INTERNAL, "linear: input must be c x 1 x 1 (add a global pool first)");
        return -1;
    }
    int id = push(g, VT_OP_LINEAR, &in, 1);
    if (id < 0) return -1;
    vt_node *nd = &g->nodes[id];
    nd->cout = cout;
    nd->has_bias = 1;
    nd->w_n = (int64_t)cout * s.c;
    nd->b_n = cout;
    nd->out = (vt_shape){cout, 1, 1};
    return id;
}

int vt_g_dropout(vt_graph *g, int in, float p)
{
    if (in < 0) return -1;
    int id = push(g, VT_OP_DROPOUT, &in, 1);
    if (id < 0) return -1;
    g->nodes[id].drop_p = p;
    g->nodes[id].out = g->nodes[in].out;
    return id;
}

int vt_g_add(vt_graph *g, int a, int b)
{
    if (a < 0 || b < 0) return -1;
    int ins[2] = {a, b};
    int id = push(g, VT_OP_ADD, ins, 2);
    if (id < 0) return -1;
    return vt_graph_reshape(g, g->input.h, g->input.w) ? -1 : id;
}

int vt_g_concat(vt_graph *g, const int *ins, int n)
{
    if (n < 1 || n > VT_MAX_INPUTS) {
        vt_fail(VT_ERR_INTERNAL, "concat of %d inputs (1..%d)", n, VT_MAX_INPUTS);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (ins[i] < 0) return -1;
    int id = push(g, VT_OP_CONCAT, ins, n);
    if (id < 0) return -1;
    return vt_graph_reshape(g, g->input.h, g->input.w) ? -1 : id;
}

int vt_g_upsample(vt_graph *g, int in)
{
    if (in < 0) return -1;
    int id = push(g, VT_OP_UPSAMPLE, &in, 1);
    if (id < 0) return -1;
    return vt_graph_reshape(g, g->input.h, g->input.w) ? -1 : id;
}

int vt_g_flatcat(vt_graph *g, const int *ins, int n)
{
    if (n < 1 || n > VT_MAX_INPUTS) {
        vt_fail(VT_ERR_INVALID_ARGUMENT, "flatcat of %d inputs (1..%d)", n, VT_MAX_INPUTS);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (ins[i] < 0 || ins[i] >= g->n_nodes) {
            if (ins[i] >= g->n_nodes)
                vt_fail(VT_ERR_INTERNAL, "graph: flatcat node reads node %d which does not exist",
                        ins[i]);
            return -1;
        }
    /* refused before the node is added, so the graph stays usable */
    for (int i = 1; i < n; i++)
        if (g->nodes[ins[i]].out.c != g->nodes[ins[0]].out.c) {
            vt_fail(VT_ERR_INVALID_ARGUMENT,
                    "flatcat: input %d (node %d) has %d channels, input 0 (node %d) has %d: "
                    "the inputs must share the channel count", i, ins[i],
                    g->nodes[ins[i]].out.c, ins[0], g->nodes[ins[0]].out.c);
            return -1;
        }
    int id = push(g, VT_OP_FLATCAT, ins, n);
    if (id < 0) return -1;
    return vt_graph_reshape(g, g->input.h, g->input.w) ? -1 : id;
}

void vt_graph_finalize(vt_graph *g)
{
    /* Decayed weights (conv and linear) first, then biases and BN parameters, so the optimiser
     * runs one call per group over contiguous memory. */
    int64_t off = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        vt_node *nd = &g->nodes[i];
        if (nd->op == VT_OP_CONV || nd->op == VT_OP_LINEAR) {
            nd->w_off = off;
            off += nd->w_n;
        }
    }
    g->n_decay = off;
    int64_t boff = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        vt_node *nd = &g->nodes[i];
        if (nd->op == VT_OP_BN) {
            nd->w_off = off;
            off += nd->w_n;
            nd->buf_off = boff;
            boff += 2 * (int64_t)nd->out.c;
        }
        if (nd->b_n > 0) {
            nd->b_off = off;
            off += nd->b_n;
        }
    }
    g->n_params = off;
    g->n_buffers = boff;
}

static int out_size(int in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }

/* Shapes of every node for an h x w input, written to `shapes`. */
static vt_status infer(const vt_graph *g, int h, int w, vt_shape *shapes)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const vt_node *nd = &g->nodes[i];
        vt_shape in = nd->n_in ? shapes[nd->in[0]] : (vt_shape){g->input.c, h, w};
        vt_shape o = in;
        switch (nd->op) {
        case VT_OP_INPUT: break;
        case VT_OP_CONV:
            o.c = nd->cout;
            o.h = in.h + 2 * nd->p < nd->k ? 0 : out_size(in.h, nd->k, nd->s, nd->p);
            o.w = in.w + 2 * nd->p < nd->k ? 0 : out_size(in.w, nd->k, nd->s, nd->p);
            break;
        case VT_OP_MAXPOOL:
        case VT_OP_AVGPOOL:
            o.h = in.h + 2 * nd->p < nd->k ? 0 : out_size(in.h, nd->k, nd->s, nd->p);
            o.w = in.w + 2 * nd->p < nd->k ? 0 : out_size(in.w, nd->k, nd->s, nd->p);
            break;
        case VT_OP_GAP: o.h = o.w = 1; break;
        case VT_OP_LINEAR:
            if (in.h != 1 || in.w != 1)
                return vt_fail(VT_ERR_INVALID_ARGUMENT, "layer %d (linear) needs a 1x1 input", i);
            o.c = nd->cout;
            break;
        case VT_OP_ADD:
            if (memcmp(&shapes[nd->in[0]], &shapes[nd->in[1]], sizeof(vt_shape)) != 0)
                return vt_fail(VT_ERR_INVALID_ARGUMENT,
                               "layer %d (add): inputs %dx%dx%d and %dx%dx%d differ at %dx%d "
                               "input", i, in.c, in.h, in.w, shapes[nd->in[1]].c,
                               shapes[nd->in[1]].h, shapes[nd->in[1]].w, h, w);
            break;
        case VT_OP_CONCAT:
            o.c = 0;
            for (int j = 0; j < nd->n_in; j++) {
                vt_shape s = shapes[nd->in[j]];
                if (s.h != in.h || s.w != in.w)
                    return vt_fail(VT_ERR_INVALID_ARGUMENT,
                                   "layer %d (concat): input sizes differ at %dx%d input", i, h, w);
                o.c += s.c;
            }
            break;
        case VT_OP_UPSAMPLE: o.h *= 2; o.w *= 2; break;
        case VT_OP_FLATCAT:
            o.h = 1;
            o.w = 0;
            for (int j = 0; j < nd->n_in; j++) {
                vt_shape s = shapes[nd->in[j]];
                if (s.c != in.c)
                    return vt_fail(VT_ERR_INVALID_ARGUMENT,
                                   "layer %d (flatcat): inputs have %d and %d channels", i, in.c,
                                   s.c);
                if ((int64_t)o.w + (int64_t)s.h * s.w > INT32_MAX)
                    return vt_fail(VT_ERR_INVALID_ARGUMENT,
                                   "layer %d (flatcat): over 2^31 cells at %dx%d input", i, h, w);
                o.w += s.h * s.w;
            }
            break;
        default: break;
        }
        if (o.c <= 0 || o.h <= 0 || o.w <= 0)
            return vt_fail(VT_ERR_INVALID_ARGUMENT,
                           "a %dx%d input is too small: layer %d (%s) would have an empty output",
                           h, w, i, op_name(nd->op));
        shapes[i] = o;
    }
    return VT_OK;
}

vt_status vt_graph_reshape(vt_graph *g, int h, int w)
{
    vt_shape *shapes = vt_malloc((size_t)g->n_nodes * sizeof *shapes);
    if (!shapes) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = infer(g, h, w, shapes);
    if (!st)
        for (int i = 0; i < g->n_nodes; i++) g->nodes[i].out = shapes[i];
    free(shapes);
    return st;
}

int vt_graph_costs(const vt_graph *g, int h, int w, vt_layer_cost *out, int cap)
{
    vt_shape *sh = vt_malloc((size_t)g->n_nodes * sizeof *sh);
    if (!sh) return -1;
    if (infer(g, h, w, sh)) {
        free(sh);
        return -1;
    }
    for (int i = 0; i < g->n_nodes && i < cap; i++) {
        const vt_node *nd = &g->nodes[i];
        vt_shape o = sh[i], in = nd->n_in ? sh[nd->in[0]] : o;
        double oe = (double)o.c * o.h * o.w, ie = 0;
        for (int j = 0; j < nd->n_in; j++) ie += (double)sh[nd->in[j]].c * sh[nd->in[j]].h * sh[nd->in[j]].w;
        vt_layer_cost c = {0};
        c.op = nd->op;
        c.params = nd->w_n + nd->b_n;
        c.out_elems = (int64_t)oe;
        c.in_elems = (int64_t)ie;
        switch (nd->op) {
        case VT_OP_CONV: {
            double macs = oe * (double)(in.c / nd->groups) * nd->k * nd->k;
            c.flops_fwd = 2 * macs + (nd->has_bias ? oe : 0);
            /* weight gradient and input gradient: one GEMM each of the forward's size */
            c.flops_bwd = 4 * macs + (nd->has_bias ? oe : 0);
            if (!(nd->k == 1 && nd->s == 1 && nd->p == 0 && nd->groups == 1))
                c.ws_elems = (double)(in.c / nd->groups) * nd->k * nd->k * o.h * o.w;
            break;
        }
        case VT_OP_LINEAR:
            c.flops_fwd = 2.0 * in.c * nd->cout + nd->cout;
            c.flops_bwd = 4.0 * in.c * nd->cout + nd->cout;
            break;
        case VT_OP_BN:
            c.flops_fwd = 4 * oe; /* mean, variance, normalise, scale+shift */
            c.flops_bwd = 6 * oe;
            break;
        case VT_OP_ACT:
            c.flops_fwd = nd->act == VT_ACT_SILU || nd->act == VT_ACT_SIGMOID ? 4 * oe : oe;
            c.flops_bwd = 2 * c.flops_fwd;
            break;
        case VT_OP_MAXPOOL:
        case VT_OP_AVGPOOL:
            c.flops_fwd = oe * nd->k * nd->k;
            c.flops_bwd = nd->op == VT_OP_MAXPOOL ? oe : oe * nd->k * nd->k;
            c.saved_elems = nd->op == VT_OP_MAXPOOL ? (int64_t)oe : 0;
            break;
        case VT_OP_GAP:
            c.flops_fwd = ie;
            c.flops_bwd = ie;
            break;
        case VT_OP_DROPOUT:
            c.flops_fwd = oe;
            c.flops_bwd = oe;
            c.saved_elems = (int64_t)oe;
            break;
        case VT_OP_ADD:
            c.flops_fwd = oe;
            c.flops_bwd = 2 * oe;
            break;
        default: break; /* input, concat, upsample, flatcat: data movement only */
        }
        if (nd->op == VT_OP_BN) c.saved_elems = 0;
        out[i] = c;
    }
    free(sh);
    return g->n_nodes;
}

void vt_node_conv_desc(const vt_graph *g, const vt_node *nd, int n, vt_conv_desc *d)
{
    vt_shape in = g->nodes[nd->in[0]].out;
    d->n = n;
    d->cin = in.c;
    d->h = in.h;
    d->w = in.w;
    d->cout = nd->out.c;
    d->ho = nd->out.h;
    d->wo = nd->out.w;
    d->kh = d->kw = nd->k;
    d->sh = d->sw = nd->s;
    d->ph = d->pw = nd->p;
    d->groups = nd->groups;
    d->keep_columns = 0;
}
