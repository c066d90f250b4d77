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
    float *loss;       /* one float */
    uint64_t dropout_seed;
    int training;
    int input_grad;    /* also compute dL/dinput into node 0's dy (tests); set before prepare */
    int dy_private;    /* tests: no gradient buffer sharing; set before prepare */
    int y_private;     /* tests: no activation buffer sharing; set before prepare */
    unsigned char *consumers; /* per node: how many nodes read its output */
    /* Activation gradients share buffers by liveness (vt_exec_dy_plan): dybuf[0..n_dybuf) are
     * the buffers, first_writer[i] the node whose backward first adds into node i's dy (it is
     * zeroed just before), -1 for a node nobody reads. */
    float **dybuf;
    int n_dybuf;
    /* Activations share buffers by liveness (vt_exec_y_plan): ybuf[0..n_ybuf) */
    float **ybuf;
    int n_ybuf;
    int *first_writer;
    double *prof;      /* NULL, or per node: seconds of forward + backward are added here
                          (profiling for benchmarks and the estimator; set by the caller;
                          the backend is synchronised around every node while it is set) */
} vt_exec;

/* The plan of the activation gradients' buffers for graph g (shapes set by vt_graph_reshape or
 * given per node in elems: elements per image of each node's output).  Node i's dy is live from
 * the backward of its first writer (its highest-numbered consumer) to its last reader (itself;
 * the batch norm that a fused ReLU's gradient feeds), and nodes whose intervals do not overlap
 * share a buffer (best fit by size).  Nodes nobody reads (the outputs, where a loss writes the
 * seed) and node 0 when input_grad keep buffers of their own.  fuse: the backend runs BN +
 * in-place ReLU as one op (the BN then has no dy).  Fills buf[i] (buffer of node i, -1: no dy),
 * buf_elems[b] (capacity in elements per image; n_nodes entries suffice) and first[i] (first
 * writer, -1 for none); returns the number of buffers, or -1 with the error set.  share = 0:
 * every dy its own buffer (the executor's dy_private, for tests). */
int vt_exec_dy_plan(const vt_graph *g, const double *elems, int fuse, int input_grad, int share,
                    int *buf, double *buf_elems, int *first);

/* The plan of the activations' (node outputs') buffers for graph g, elems as above.  An
 * in-place ReLU (one whose input nobody else reads) writes its input's buffer.  A buffer that a
 * backward reads (the input of a conv, linear, BN or activation, and an activation's output: a
 * ReLU fused into its BN is that BN's output), that nobody reads (the outputs: callers read
 * them after forward), and node 0's keep buffers of their own; the others (e.g. a batch norm
 * feeding a residual add, an upsample feeding a concat) are live from their node's forward
 * to the forward of their last reader, and share buffers with the ones whose intervals do not
 * overlap.  Fills buf[i] (node i's buffer) and buf_elems[b] (capacity in elements per image;
 * n_nodes entries suffice); returns the number of buffers, or -1 with the error set.  share =
 * 0: only the in-place ReLUs share (the executor's y_private, for tests). */
int vt_exec_y_plan(const vt_graph *g, const double *elems, int share, int *buf,
                   double *buf_elems);

/* Copies the graph (the caller's stays untouched); borrows the backend. */
vt_status vt_exec_create(vt_exec **out, const vt_graph *g, vt_backend *be);
void vt_exec_destroy(vt_exec *e);
/* Size activations for batch n at h x w (reallocates only when n or the image size grows or
 * the size changes). */
vt_status vt_exec_prepare(vt_exec *e, int n, int h, int w);
/* The input batch buffer: channels x n x h x w (CNHW). */
static inline float *vt_exec_input(vt_exec *e) { return e->g->nodes[0].y; }
vt_status vt_exec_forward(vt_exec *e, int training);
/* Backward from the gradient already stored in the dy of node `out` (e.g. by softmax_xent);
 * fills e->grads. */
vt_status vt_exec_backward(vt_exec *e, int out);
vt_status vt_exec_set_params(vt_exec *e, const float *params_host, const float *buffers_host);
vt_status vt_exec_get_params(vt_exec *e, float *params_host, float *buffers_host);

#endif
