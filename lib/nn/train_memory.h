/* The memory a training step of a graph holds: weights, gradients, optimiser moments, the
 * executor's activations (shared by liveness, vt_exec_plan), the convolutions' scratch and, on a
 * GPU, the context.  The estimator predicts with it (lib/estimate/); batch=-1 chooses a batch by
 * it (lib/train/autobatch.c). */
#ifndef VT_NN_TRAIN_MEMORY_H
#define VT_NN_TRAIN_MEMORY_H

#include "nn/graph.h"

/* Memory as fixed + per_image * batch + the scratch of the widest layer (wmax floats per
 * image); activations of act_bytes each, `states` optimiser moments per weight; grad_from: the
 * first node with a gradient (vt_exec_plan: 1, or the frozen count of freeze=).  -1 on
 * failure. */
int vt_train_memory_terms(const vt_graph *g, int h, int w, int act_bytes, int states, int on_gpu,
                          int grad_from, double *fixed, double *per_image, double *wmax);
/* im2col scratch of a step at `batch` (chunked like the CPU backend). */
double vt_train_scratch_bytes(double wmax, double batch);
/* Peak bytes of training g at h x w with `batch` images (5 % margin); < 0 on failure. */
double vt_train_memory(const vt_graph *g, int h, int w, int batch, int act_bytes, int states,
                       int on_gpu, int grad_from);

#endif
