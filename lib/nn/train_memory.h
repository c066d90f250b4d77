/* The memory a training step of a graph holds: weights, gradients, optimiser moments, the
 * executor's activations (shared by liveness, vt_exec_plan), the convolutions' scratch and, on a
 * GPU, the context.  The estimator predicts with it (lib/estimate/); batch=-1 chooses a batch by
 * it (lib/train/autobatch.c). */
#ifndef VT_NN_TRAIN_MEMORY_H
#define VT_NN_TRAIN_MEMORY_H

#include "nn/graph.h"

/* Memory as fixed + per_image * batch + the scratch of the widest layer (wmax floats per
 * image); fixed holds the weights, gradients, optimiser moments, buffers and, on a GPU, the
 * context, on the CPU the Winograd workspace (vt_train_winograd_bytes) or the largest im2col
 * convolution's weights packed for its products, the larger; activations of
 * act_bytes each, `states` optimiser moments per weight; grad_from: the first node with a
 * gradient (vt_exec_plan: 1, or the frozen count of freeze=).  -1 on failure. */
int vt_train_memory_terms(const vt_graph *g, int h, int w, int act_bytes, int states, int on_gpu,
                          int grad_from, double *fixed, double *per_image, double *wmax);
/* The CPU backend's Winograd workspace of g at h x w on this host's threads, the largest of its
 * convolutions' at any batch (a batch's worth of shares; small maps take 4x4 tiles at large
 * batches only), at fp32 (act_bytes 4) or with bf16 products where the backend takes
 * Winograd with them (vt_backend_cpu_winograd_bf16_default); 0 where none is taken.  lc:
 * vt_graph_costs' n entries. */
double vt_train_winograd_bytes(const vt_graph *g, int h, int w, const vt_layer_cost *lc, int n,
                               int act_bytes);
/* im2col scratch of a step at `batch` (chunked like the CPU backend). */
double vt_train_scratch_bytes(double wmax, double batch);
/* Peak bytes of training g at h x w with `batch` images (5 % margin); < 0 on failure. */
double vt_train_memory(const vt_graph *g, int h, int w, int batch, int act_bytes, int states,
                       int on_gpu, int grad_from);

#endif
