/* Transfer learning: copying the tensors one model shares with another, and the layer list
 * that freeze= and `vt info model=` count in. */
#include <stdio.h>
#include <string.h>

#include "nn/model.h"

static const char *const op_names[] = {"input", "conv",    "bn",     "act",      "maxpool",
                                       "avgpool", "gap",   "linear", "dropout",  "add",
                                       "concat", "upsample", "flatcat"};

/* Tensors of a node (vt_model_transfer's unit): weight and bias of a conv (bias if any) or
 * linear layer, scale, shift and the two running statistics of a batch norm. */
static int node_tensors(const vt_node *nd)
{
    switch (nd->op) {
    case VT_OP_CONV: return nd->has_bias ? 2 : 1;
    case VT_OP_LINEAR: return 2;
    case VT_OP_BN: return 4;
    default: return 0;
    }
}

int vt_model_tensors(const vt_model *m)
{
    int n = 0;
    for (int i = 0; i < m->graph.n_nodes; i++) n += node_tensors(&m->graph.nodes[i]);
    return n;
}

/* Same layer kind and tensor shapes (the input width follows from w_n with cout, k, groups). */
static int same_layer(const vt_node *a, const vt_node *b)
{
    if (a->op != b->op || a->w_n != b->w_n || a->b_n != b->b_n) return 0;
    switch (a->op) {
    case VT_OP_CONV:
        return a->cout == b->cout && a->k == b->k && a->s == b->s && a->p == b->p &&
               a->groups == b->groups && a->has_bias == b->has_bias;
    case VT_OP_LINEAR: return a->cout == b->cout;
    case VT_OP_BN: return a->out.c == b->out.c;
    default: return 1;
    }
}

VT_API vt_status vt_model_transfer(vt_model *dst, const vt_model *src, int *transferred,
                                   int *total)
{
    return vt_model_transfer_ex(dst, src, 0, transferred, total);
}

vt_status vt_model_transfer_ex(vt_model *dst, const vt_model *src, int keep_class_layers,
                               int *transferred, int *total)
{
    if (transferred) *transferred = 0;
    if (total) *total = 0;
    if (!dst || !src) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_transfer: NULL argument");
    if (dst == src) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_transfer: dst is src");
    if (strcmp(vt_arch_backbone_of(dst->spec), vt_arch_backbone_of(src->spec)) != 0)
        return vt_err_capture(dst->err, vt_fail(VT_ERR_INVALID_ARGUMENT,
                              "cannot start a %s from a %s: the architectures differ and share "
                              "no backbone", dst->arch, src->arch));
    if (dst->channels != src->channels)
        return vt_err_capture(dst->err, vt_fail(VT_ERR_INVALID_ARGUMENT,
                              "cannot start a %s of %d input channels from a %s of %d",
                              dst->arch, dst->channels, src->arch, src->channels));
    /* weights a trainer holds on its device come home first: the source's are read, the
     * destination's written (a trainer of dst would otherwise overwrite them) */
    vt_status st = vt_model_pull((vt_model *)src);
    if (!st) st = vt_model_pull(dst);
    if (st) return vt_err_capture(dst->err, st);
    const vt_graph *gd = &dst->graph, *gs = &src->graph;
    /* the same architecture: every layer may match; another one: only the shared backbone */
    int same = strcmp(dst->arch, src->arch) == 0;
    int lim = gd->n_nodes < gs->n_nodes ? gd->n_nodes : gs->n_nodes;
    if (!same) {
        if (gd->backbone_end < lim) lim = gd->backbone_end;
        if (gs->backbone_end < lim) lim = gs->backbone_end;
    }
    int moved = 0, all = 0;
    for (int i = 0; i < gd->n_nodes; i++) {
        const vt_node *a = &gd->nodes[i];
        all += node_tensors(a);
        if (i >= lim || !node_tensors(a) || !same_layer(a, &gs->nodes[i]) ||
            (keep_class_layers && a->per_class))
            continue;
        const vt_node *b = &gs->nodes[i];
        memcpy(dst->params + a->w_off, src->params + b->w_off, (size_t)a->w_n * sizeof(float));
        if (a->b_n)
            memcpy(dst->params + a->b_off, src->params + b->b_off,
                   (size_t)a->b_n * sizeof(float));
        if (a->op == VT_OP_BN)
            memcpy(dst->buffers + a->buf_off, src->buffers + b->buf_off,
                   2 * (size_t)a->out.c * sizeof(float));
        moved += node_tensors(a);
    }
    dst->version++;
    if (transferred) *transferred = moved;
    if (total) *total = all;
    return VT_OK;
}

VT_API int vt_model_num_layers(const vt_model *m) { return m ? m->graph.n_nodes : 0; }

VT_API int vt_model_backbone_layers(const vt_model *m) { return m ? m->graph.backbone_end : 0; }

VT_API vt_status vt_model_layer(const vt_model *m, int index, const char **kind, int *c, int *h,
                                int *w, uint64_t *params)
{
    if (!m) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_layer: NULL model");
    if (index < 0 || index >= m->graph.n_nodes)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_layer: layer %d of %d", index,
                       m->graph.n_nodes);
    const vt_node *nd = &m->graph.nodes[index];
    if (kind)
        *kind = (unsigned)nd->op < sizeof op_names / sizeof *op_names ? op_names[nd->op] : "?";
    if (c) *c = nd->out.c;
    if (h) *h = nd->out.h;
    if (w) *w = nd->out.w;
    if (params) *params = (uint64_t)((nd->w_n > 0 ? nd->w_n : 0) + (nd->b_n > 0 ? nd->b_n : 0));
    return VT_OK;
}
