/* The memory a training step of a graph holds (nn/train_memory.h), the model the estimator
 * predicts with and batch=-1 chooses by. */
#include "nn/train_memory.h"

#include <math.h>
#include <stdlib.h>

#include "nn/exec.h"

/* A CUDA context and cuBLAS workspace held whatever the model. */
#define GPU_CONTEXT_BYTES (512.0 * 1024 * 1024)
/* The im2col scratch is chunked (CPU backend) to at most this many floats beyond one image's. */
#define SCRATCH_CHUNK_FLOATS (2.0 * 1024 * 1024)

int vt_train_memory_terms(const vt_graph *g, int h, int w, int act_bytes, int states,
                              int on_gpu, int grad_from, double *fixed, double *per_image,
                              double *wmax)
{
    vt_layer_cost *lc = vt_malloc((size_t)g->n_nodes * sizeof *lc);
    if (!lc) return -1;
    int n = vt_graph_costs(g, h, w, lc, g->n_nodes);
    if (n < 0) { free(lc); return -1; }
    double per = 0, wm = 0;
    for (int i = 0; i < n; i++) {
        per += (double)lc[i].saved_elems;
        wm = fmax(wm, lc[i].ws_elems);
    }
    /* activations and their gradients: the executor's buffers, shared by liveness
     * (vt_exec_plan) */
    double *el = vt_malloc((size_t)n * sizeof *el), *yo = vt_malloc((size_t)n * sizeof *yo),
           *dyo = vt_malloc((size_t)n * sizeof *dyo), arena = 0;
    int *fw = vt_malloc((size_t)n * sizeof *fw), ok = -1;
    if (el && yo && dyo && fw) {
        for (int i = 0; i < n; i++) el[i] = (double)lc[i].out_elems;
        ok = vt_exec_plan(g, el, 1, grad_from > 1 ? grad_from : 1, 1, yo, dyo, fw, &arena);
    }
    per += arena;
    free(el);
    free(yo);
    free(dyo);
    free(fw);
    if (ok < 0) {
        free(lc);
        return -1;
    }
    per = per * act_bytes + (double)g->input.c * h * w * 4 + 4; /* + the batch and its label */
    *fixed = 4.0 * (double)g->n_params * (2 + states) + 4.0 * (double)g->n_buffers +
             (on_gpu ? GPU_CONTEXT_BYTES : 0);
    *per_image = per;
    *wmax = wm;
    free(lc);
    return 0;
}

double vt_train_scratch_bytes(double wmax, double batch)
{
    return 4 * fmin(batch * wmax, fmax(wmax, SCRATCH_CHUNK_FLOATS));
}

double vt_train_memory(const vt_graph *g, int h, int w, int batch, int act_bytes,
                           int states, int on_gpu, int grad_from)
{
    double fixed, per, wmax;
    if (vt_train_memory_terms(g, h, w, act_bytes, states, on_gpu, grad_from, &fixed, &per,
                              &wmax))
        return -1;
    return 1.05 * (fixed + batch * per + vt_train_scratch_bytes(wmax, batch));
}

