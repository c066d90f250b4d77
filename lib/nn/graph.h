/* The model graph: a list of nodes in topological order.  Each node reads one or more earlier
 * nodes' outputs, so residual adds, skips and concats are natural.  Forward runs the list in
 * order, backward in reverse.  The same list gives the estimator its FLOPs and memory and the
 * checkpoint its architecture. */
#ifndef VT_GRAPH_H
#define VT_GRAPH_H

#include <stdint.h>

#include "backend/backend.h"
#include "core/core.h"

#define VT_MAX_INPUTS 4

typedef enum vt_op {
    VT_OP_INPUT = 0,
    VT_OP_CONV = 1,     /* params: weight [cout][cin/groups][k][k] (+ bias [cout])        */
    VT_OP_BN = 2,       /* params: gamma, beta [c]; buffers: running mean, var [c]         */
    VT_OP_ACT = 3,
    VT_OP_MAXPOOL = 4,
    VT_OP_AVGPOOL = 5,
    VT_OP_GAP = 6,      /* global average pool: c x h x w -> c x 1 x 1                       */
    VT_OP_LINEAR = 7,   /* input c x 1 x 1; params: weight [cout][cin], bias [cout]          */
    VT_OP_DROPOUT = 8,
    VT_OP_ADD = 9,      /* two inputs of the same shape                                      */
    VT_OP_CONCAT = 10,  /* channel concat of n_in inputs with the same h, w                  */
    VT_OP_UPSAMPLE = 11, /* nearest x2                                                       */
    VT_OP_FLATCAT = 12  /* n_in inputs of the same c, each flattened to c x 1 x h*w, joined
                         * along w: c x 1 x sum(h*w) (a multi-scale head's one output)      */
} vt_op;

typedef struct vt_shape {
    int c, h, w; /* per image */
} vt_shape;

typedef struct vt_node {
    vt_op op;
    int in[VT_MAX_INPUTS];
    int n_in;
    vt_shape out;      /* output shape for the graph's current input size */

    /* configuration */
    int cout, k, s, p, groups, has_bias; /* conv / linear / pools (k, s, p) */
    vt_act act;
    float alpha;       /* leaky slope */
    float drop_p;
    float bn_eps, bn_momentum;

    /* parameters: offsets (in floats) into the model's flat parameter array; -1 if none.
     * For BN, w = gamma and b = beta. */
    int64_t w_off, w_n, b_off, b_n;
    int64_t buf_off;   /* BN running mean (c) then running var (c) in the buffer array */

    /* runtime state, owned by the executor (lib/nn/layers.c) */
    float *y, *dy;     /* output and its gradient, out.c * N * out.h * out.w values (in
                        * buffers the executor shares between nodes, see vt_exec_plan) */
    float *save0, *save1; /* BN mean / invstd; dropout mask (save0)                     */
    int32_t *idx;      /* max-pool argmax                                               */
    void *ws;          /* conv: its own buffer kept from forward to backward, or NULL    */
    int fused;         /* BN: index of the ReLU/SiLU fused into it; that node: its BN; else 0 */
    int pool_fused;    /* a fused BN whose activation feeds only a 2x2 stride-2 max pool that
                        * the backend runs with it (training forward): the pool's index; that
                        * pool: its BN; else 0 */
    int per_class;     /* conv / linear: its outputs are per class (the classifier, a detector's
                        * class convolution, a segmenter's logits), set by the builder */
} vt_node;

typedef struct vt_graph {
    vt_node *nodes;
    int n_nodes, cap;
    vt_shape input;    /* nominal input shape (channels, imgsz, imgsz) */
    int64_t n_params;  /* trainable floats; decayed ones (conv/linear weights) come first */
    int64_t n_decay;   /* the first n_decay parameters get weight decay */
    int64_t n_buffers; /* non-trainable floats (BN running statistics) */
    int backbone_end;  /* nodes 0..backbone_end-1 are the backbone (set by the family's
                        * builder; freeze=backbone, transfer between families) */
} vt_graph;

/* ---- building ---- (each returns the new node's index, or -1 with the error set) */
void vt_graph_init(vt_graph *g);
void vt_graph_free(vt_graph *g);
int vt_g_input(vt_graph *g, int c, int h, int w);
int vt_g_conv(vt_graph *g, int in, int cout, int k, int s, int p, int groups, int bias);
int vt_g_bn(vt_graph *g, int in);
int vt_g_act(vt_graph *g, int in, vt_act act, float alpha);
int vt_g_maxpool(vt_graph *g, int in, int k, int s, int p);
int vt_g_avgpool(vt_graph *g, int in, int k, int s, int p);
int vt_g_gap(vt_graph *g, int in);
int vt_g_linear(vt_graph *g, int in, int cout);
int vt_g_dropout(vt_graph *g, int in, float p);
int vt_g_add(vt_graph *g, int a, int b);
int vt_g_concat(vt_graph *g, const int *ins, int n);
int vt_g_upsample(vt_graph *g, int in);
/* Inputs of one channel count c (n of them, 1..VT_MAX_INPUTS), each plane read row-major and
 * joined in input order: output c x 1 x sum of h*w. */
int vt_g_flatcat(vt_graph *g, const int *ins, int n);
/* Assign parameter offsets (decayed weights first, then biases and BN) once built. */
void vt_graph_finalize(vt_graph *g);

/* Recompute every node's output shape for an input of h x w; VT_ERR_INVALID_ARGUMENT (message
 * naming the layer) when a layer's output would be empty or shapes do not match. */
vt_status vt_graph_reshape(vt_graph *g, int h, int w);

/* ---- costs, for the estimator and the README ---- */
typedef struct vt_layer_cost {
    vt_op op;
    double flops_fwd;     /* per image, multiply-add = 2 */
    double flops_bwd;     /* per image: input and weight gradients */
    int64_t params;       /* trainable floats */
    int64_t out_elems;    /* per image (activation floats kept for backward) */
    int64_t in_elems;     /* per image, summed over inputs (read by forward)   */
    int64_t saved_elems;  /* per image extra floats kept for backward (BN save, masks, idx) */
    double ws_elems;      /* per image conv scratch (im2col) floats, 0 for others */
} vt_layer_cost;

/* Costs of each node for an input of h x w (the graph's shapes are not changed).  Writes up to
 * cap entries and returns the node count, or -1 with the error set. */
int vt_graph_costs(const vt_graph *g, int h, int w, vt_layer_cost *out, int cap);

/* Conv descriptor of a conv node for batch n (after vt_graph_reshape). */
void vt_node_conv_desc(const vt_graph *g, const vt_node *nd, int n, vt_conv_desc *d);

#endif
