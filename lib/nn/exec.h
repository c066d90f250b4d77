/* The executor: a graph bound to a backend for a batch size and image size.  It owns the
 * parameters, gradients, BN buffers, activations and scratch in backend memory, allocated once
 * per shape (no per-step allocation). */
#ifndef VT_EXEC_H
#define VT_EXEC_H

#include "nn/graph.h"

typedef struct vt_exec {
    vt_graph *g;       /* = &graph: the executor's own copy, reshaped by vt_exec_prepare */
    vt_graph graph;
    vt_backend *be;    /* borrowed */
    int n, cap_n;      /* current batch and the batch the activations were sized for */
    int h, w;
    float *params, *grads, *buffers; /* backend memory */
    void *ws;
    size_t ws_bytes;
    int32_t *labels;   /* cap_n labels */
    float *loss;       /* 4 floats: where the losses write their sums */
    uint64_t dropout_seed;
    int training;
    int input_grad;    /* also compute dL/dinput into node 0's dy (tests); set before prepare */
    int private_bufs;  /* tests: no buffer sharing (but in-place ReLUs); set before prepare */
    int frozen;        /* nodes 0..frozen-1 are frozen (freeze=): their batch norms run in eval
                        * mode in training too, and backward neither computes their parameter
                        * gradients (left as they are) nor any gradient flowing into them; set
                        * before vt_exec_prepare (a change plans the buffers again: frozen
                        * nodes have no gradient buffer, and their activations are freed once
                        * the forward has read them) */
    int planned_frozen; /* the frozen count the buffers were planned for */
    unsigned char *consumers; /* per node: how many nodes read its output */
    /* Activations and their gradients live in one arena at offsets planned by liveness
     * (vt_exec_plan); first_writer[i] is the node whose backward first adds into node i's dy
     * (it is zeroed just before), -1 for a node nobody reads. */
    float *arena;
    size_t arena_bytes;
    int *first_writer;
    double *prof;      /* NULL, or per node: seconds of forward + backward are added here
                          (profiling for benchmarks and the estimator; set by the caller;
                          the backend is synchronised around every node while it is set) */
    /* NULL, or called by the backward after node i's: every node >= i has then written its
     * parameters' gradients (a node writes only its own), so they can be reduced while the
     * backward goes on (distributed training's buckets, lib/train/dist.c).  An error ends the
     * backward with it.  Set by the caller. */
    vt_status (*grad_ready)(void *ctx, int node);
    void *grad_ready_ctx;
} vt_exec;

/* The plan of the buffers of the activations (node outputs) and their gradients for graph g,
 * for one training step: forward of node t at time t, then backward of node t at 2N-1-t.
 * elems[i]: elements per image of node i's output (shapes as vt_graph_reshape sets them).
 *   - An activation lives from its node's forward to its last reader: forward readers, and the
 *     backwards that read it (a conv, linear, BN or activation reads its input; an activation
 *     its output; a BN with a fused activation its output, a ReLU's mask).  An in-place
 *     activation (a ReLU whose input nobody else reads, or with fuse a ReLU or SiLU fused into
 *     the BN before it) writes its input's buffer.  Node 0 (the input) and the
 *     outputs (nodes nobody reads; callers read them after the step) live throughout.
 *   - A gradient lives from the backward of its first writer (its highest-numbered consumer,
 *     which zeroes it just before) to its last reader (its node; the BN that a fused
 *     activation's gradient feeds, that BN then having none).  fuse: the backend runs BN +
 *     ReLU or SiLU as one op.  Nodes below grad_from have none and their backwards do not run
 *     (they read nothing): grad_from 1 is the usual step, 0 also gives node 0 (the input) a
 *     gradient (input_grad), more leaves a frozen prefix out; node 0's and the outputs' (where
 *     a loss writes the seed) live throughout.
 * The tensors go into one arena: greedily, largest first, each at the lowest offset where it
 * overlaps no tensor already placed whose interval overlaps its own; so a gradient of the early
 * layers reuses the memory of activations whose backward is done.  Offsets and sizes are in
 * elements per image, multiples of 16 (a batch of n has them times n: 64-byte aligned).  The
 * plan holds for one backward per forward.  Fills yoff[i] and dyoff[i] (node i's output and
 * gradient, -1: none), first[i] (first writer, -1: none) and *arena_elems; returns 0, or -1
 * with the error set.  share = 0: every tensor its own place (the executor's private_bufs). */
int vt_exec_plan(const vt_graph *g, const double *elems, int fuse, int grad_from, int share,
                 double *yoff, double *dyoff, int *first, double *arena_elems);

/* The first node with a gradient: 0 with input_grad, else 1, or the frozen count (> 1). */
static inline int vt_exec_grad_from(const vt_exec *e)
{
    return e->frozen > 1 ? e->frozen : e->input_grad ? 0 : 1;
}

/* Copies the graph (the caller's stays untouched); borrows the backend. */
vt_status vt_exec_create(vt_exec **out, const vt_graph *g, vt_backend *be);
/* Makes e forward-only (a predictor's): every node frozen, so its plan has no gradients and
 * reuses each activation's memory once its last reader has run, and no convolution keeps
 * columns for a backward.  Before vt_exec_prepare; vt_exec_backward must not be called. */
static inline void vt_exec_forward_only(vt_exec *e) { e->frozen = e->g->n_nodes; }
void vt_exec_destroy(vt_exec *e);
/* Size activations for batch n at h x w (reallocates only when n or the image size grows or
 * the size changes). */
vt_status vt_exec_prepare(vt_exec *e, int n, int h, int w);
/* The input batch buffer: channels x n x h x w (CNHW). */
static inline float *vt_exec_input(vt_exec *e) { return e->g->nodes[0].y; }
vt_status vt_exec_forward(vt_exec *e, int training);
/* Backward from the gradient already stored in the dy of node `out` (e.g. by softmax_xent);
 * fills e->grads.  Once per vt_exec_forward (gradients reuse the memory of activations whose
 * backward is done). */
vt_status vt_exec_backward(vt_exec *e, int out);
/* The same for a graph of several outputs: the gradients already stored in the dy of each of
 * outs[0..n) (leaves of the graph: nobody reads them; e.g. a detector's head and a mask
 * head's prototypes, seeded by the task's loss).  VT_ERR_INVALID_ARGUMENT for an output that
 * is not a leaf. */
vt_status vt_exec_backward_outputs(vt_exec *e, const int *outs, int n);
vt_status vt_exec_set_params(vt_exec *e, const float *params_host, const float *buffers_host);
vt_status vt_exec_get_params(vt_exec *e, float *params_host, float *buffers_host);

#endif
