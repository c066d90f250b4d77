/* EXPERIMENTAL: CUDA graphs of the training step, on only when VT_CUDA_GRAPHS=1 is in the
 * environment as the backend is made (VT_CUDA_GRAPHS_WARMUP=N: plain steps of a shape before
 * its capture, default VT_GRAPH_WARMUP); nothing here has run on a GPU in this project yet
 * (docs/gpu.md).
 *
 * WHAT IS CAPTURED, AND WHY.  The trainer's step is forward, the task's loss, backward and the
 * optimizer's update.  The loss comes down to the host inside the task's batch_loss (a
 * download, which waits for the stream: the trainer checks it and reports it), so the forward
 * pass and the loss cannot be in a graph without rewriting every task.  What follows it,
 * backward and the update, has no host synchronisation: that is the region the trainer brackets
 * with vt_backend_cuda_graph_begin / _end (lib/train/trainer.c, backward_update).
 *
 * HOW.  The region's ops are issued as usual while the stream is captured
 * (cudaStreamCaptureModeRelaxed), so each step records its own launches, with that step's
 * arguments: the learning rate, AdamW's bias corrections and every pointer are whatever the
 * step passed, and a replay is bit for bit the plain launches (same kernels, same order, same
 * stream).  The first capture of a key instantiates an executable graph; later steps update it
 * with their recording (cudaGraphExecUpdate: no new instantiation while the kernels are the
 * same) and launch it.  What this saves is the GPU's launch gaps between the region's many
 * small kernels, not the host's time to issue them: a replay that skips the host calls would
 * need the step's scalars in device memory and a check that the recorded sequence still holds,
 * which the GPU run is to tell whether it is worth it.
 *
 * Anything that fails while capturing (an op that synchronises or allocates in a way capture
 * forbids, a refused instantiation or launch) ends the capture, discards it, and turns graphs
 * off for the backend's life; the trainer then runs the region plainly (nothing of it ran).
 * cuBLAS gets a workspace of its own (cublasSetWorkspace, 32 MiB, the size cuBLAS recommends
 * for Hopper) so that a captured GEMM never allocates one. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_internal.cuh"

#define VT_GRAPH_CUBLAS_WS ((size_t)32 << 20)

static void graphs_off(vt_cuda_backend *cb, const char *what, cudaError_t e)
{
    vt_cuda_graphs *g = &cb->graphs;
    for (int i = 0; i < VT_GRAPH_SLOTS; i++)
        if (g->exec[i]) {
            (void)cudaGraphExecDestroy(g->exec[i]);
            g->exec[i] = NULL;
        }
    if (e != cudaSuccess)
        snprintf(g->state, sizeof g->state, "off after a failure: %s: %s", what,
                 cudaGetErrorString(e));
    else
        snprintf(g->state, sizeof g->state, "off after a failure: %s", what);
    (void)cudaGetLastError();
}

void vt_cuda_graphs_init(vt_cuda_backend *cb)
{
    vt_cuda_graphs *g = &cb->graphs;
    const char *on = getenv("VT_CUDA_GRAPHS");
    const char *wu = getenv("VT_CUDA_GRAPHS_WARMUP");
    int warmup = wu && *wu ? atoi(wu) : VT_GRAPH_WARMUP;
    vt_graph_plan_init(&g->plan, on && !strcmp(on, "1"), warmup);
    g->slot = -1;
    if (!g->plan.enabled) return;
    g->cublas_ws = vt_cuda_alloc(&cb->base, VT_GRAPH_CUBLAS_WS);
    cublasStatus_t bs = g->cublas_ws
                            ? cublasSetWorkspace(cb->cublas, g->cublas_ws, VT_GRAPH_CUBLAS_WS)
                            : CUBLAS_STATUS_ALLOC_FAILED;
    if (bs != CUBLAS_STATUS_SUCCESS) {
        g->plan.disabled = 1;
        snprintf(g->state, sizeof g->state, "off: no workspace for cuBLAS (%s)",
                 cublasGetStatusString(bs));
        (void)cudaGetLastError();
    }
}

void vt_cuda_graphs_destroy(vt_cuda_backend *cb)
{
    vt_cuda_graphs *g = &cb->graphs;
    for (int i = 0; i < VT_GRAPH_SLOTS; i++)
        if (g->exec[i]) (void)cudaGraphExecDestroy(g->exec[i]);
    memset(g->exec, 0, sizeof g->exec);
    (void)cudaGetLastError();
    /* cublas_ws is a block of the caching allocator: freed with it */
}

int vt_cuda_graphs_begin(vt_cuda_backend *cb, const int key[4])
{
    vt_cuda_graphs *g = &cb->graphs;
    if (g->capturing) return 0; /* regions do not nest */
    vt_graph_key k;
    memcpy(k.v, key, sizeof k.v);
    int slot, evict;
    vt_graph_action a = vt_graph_plan_begin(&g->plan, &k, &slot, &evict);
    if (evict >= 0 && g->exec[evict]) {
        (void)cudaGraphExecDestroy(g->exec[evict]);
        g->exec[evict] = NULL;
    }
    g->action = a;
    g->slot = slot;
    if (a == VT_GRAPH_PLAIN) {
        vt_graph_plan_end(&g->plan, slot, a, VT_GRAPH_OK);
        return 0;
    }
    VT_CUDA_GUARD(cb);
    cudaError_t e = cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        vt_graph_plan_end(&g->plan, slot, a, VT_GRAPH_FAILED);
        graphs_off(cb, "cudaStreamBeginCapture", e);
        return 0;
    }
    g->capturing = 1;
    return 1;
}

vt_status vt_cuda_graphs_end(vt_cuda_backend *cb, vt_status region, int *ran)
{
    vt_cuda_graphs *g = &cb->graphs;
    *ran = 0;
    if (!g->capturing) return VT_OK;
    g->capturing = 0;
    VT_CUDA_GUARD(cb);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(cb->stream, &graph);
    const char *what = "cudaStreamEndCapture";
    vt_graph_outcome o = VT_GRAPH_OK;
    if (region != VT_OK) {
        /* an op failed while recording (possibly because of the recording): discard it */
        what = "an op of the region failed while it was captured";
        e = cudaSuccess;
        o = VT_GRAPH_FAILED;
    } else if (e != cudaSuccess || !graph) {
        o = VT_GRAPH_FAILED;
    } else {
        cudaGraphExec_t *x = &g->exec[g->slot];
        if (g->action == VT_GRAPH_REPLAY && *x) {
            cudaGraphExecUpdateResultInfo info;
            if (cudaGraphExecUpdate(*x, graph, &info) != cudaSuccess) {
                (void)cudaGetLastError();
                (void)cudaGraphExecDestroy(*x);
                *x = NULL;
                o = VT_GRAPH_REINSTANTIATED;
            }
        }
        if (!*x) {
            what = "cudaGraphInstantiate";
            e = cudaGraphInstantiate(x, graph, 0);
            if (e != cudaSuccess) {
                *x = NULL;
                o = VT_GRAPH_FAILED;
            }
        }
        if (o != VT_GRAPH_FAILED) {
            what = "cudaGraphLaunch";
            e = cudaGraphLaunch(*x, cb->stream);
            if (e != cudaSuccess) o = VT_GRAPH_FAILED;
        }
    }
    if (graph) (void)cudaGraphDestroy(graph);
    vt_graph_plan_end(&g->plan, g->slot, g->action, o);
    if (o == VT_GRAPH_FAILED) {
        graphs_off(cb, what, e);
        /* a launch that failed may have left the context unusable: the plain rerun tells */
        return VT_OK;
    }
    *ran = 1;
    return VT_OK;
}

void vt_cuda_graphs_info(vt_cuda_backend *cb, vt_cuda_graph_info *out)
{
    const vt_graph_plan *p = &cb->graphs.plan;
    out->enabled = p->enabled;
    out->active = p->enabled && !p->disabled;
    out->warmup = p->warmup;
    out->plain = p->plain;
    out->captured = p->captured;
    out->replayed = p->replayed;
    out->reinstantiated = p->reinstantiated;
    out->evicted = p->evicted;
    out->failed = p->failed;
    snprintf(out->state, sizeof out->state, "%s", cb->graphs.state);
}
