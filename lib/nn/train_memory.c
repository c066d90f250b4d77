/* The memory a training step of a graph holds (nn/train_memory.h), the model the estimator
 * predicts with and batch=-1 chooses by. */
#include "nn/train_memory.h"

#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "core/threads.h"
#include "nn/exec.h"

/* A CUDA context and cuBLAS workspace held whatever the model. */
#define GPU_CONTEXT_BYTES (512.0 * 1024 * 1024)
/* The im2col scratch is chunked (CPU backend) to at most this many floats beyond one image's. */
#define SCRATCH_CHUNK_FLOATS (2.0 * 1024 * 1024)

double vt_train_winograd_bytes(const vt_graph *g, int h, int w, const vt_layer_cost *lc, int n,
                               int act_bytes)
{
    int largest = vt_backend_cpu_winograd_default();
    /* bf16 products keep im2col unless the backend takes Winograd with them */
    if ((act_bytes != 4 && !vt_backend_cpu_winograd_bf16_default()) || !largest) return 0;
    double most = 0;
    for (int i = 0; i < n; i++) {
        const vt_node *nd = &g->nodes[i];
        if (nd->op != VT_OP_CONV || nd->in[0] < 0 || nd->cout < 1) continue;
        int cin = g->nodes[nd->in[0]].out.c;
        /* the input map, of the image's aspect: lc has its elements only */
        double e = (double)lc[nd->in[0]].out_elems / (cin > 0 ? cin : 1);
        int mh = (int)floor(sqrt(e * h / w) + 0.5), mw = mh > 0 ? (int)floor(e / mh + 0.5) : 0;
        int ho = (mh + 2 * nd->p - nd->k) / (nd->s > 0 ? nd->s : 1) + 1,
            wo = (mw + 2 * nd->p - nd->k) / (nd->s > 0 ? nd->s : 1) + 1;
        vt_conv_desc d = {1 << 20, cin,   mh,    mw,    nd->cout, ho, wo,
                          nd->k,   nd->k, nd->s, nd->s, nd->p,    nd->p,
                          nd->groups > 0 ? nd->groups : 1, 0};
        most = fmax(most, (double)vt_backend_cpu_winograd_workspace(&d, vt_cpu_count(), largest));
    }
    return most;
}

int vt_train_memory_terms(const vt_graph *g, int h, int w, int act_bytes, int states,
                              int on_gpu, int grad_from, double *fixed, double *per_image,
                              double *wmax)
{
    vt_layer_cost *lc = vt_malloc((size_t)g->n_nodes * sizeof *lc);
    if (!lc) return -1;
    int n = vt_graph_costs(g, h, w, lc, g->n_nodes);
    if (n < 0) { free(lc); return -1; }
    double per = 0, wm = 0, wpack = 0;
    for (int i = 0; i < n; i++) {
        per += (double)lc[i].saved_elems;
        wm = fmax(wm, lc[i].ws_elems);
        /* the CPU's im2col convolutions pack their weights once per call beside the columns */
        if (lc[i].ws_elems > 0) wpack = fmax(wpack, (double)lc[i].params);
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
             (on_gpu ? GPU_CONTEXT_BYTES
                     : fmax(vt_train_winograd_bytes(g, h, w, lc, n, act_bytes), 4 * wpack));
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

