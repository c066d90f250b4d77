/* EXPERIMENTAL: convolutions through cuDNN 9 (loaded with dlopen: cudnn_load.h), on only when
 * VT_CUDNN=1 is in the environment as the backend is created; nothing here has run on a GPU in
 * this project yet (docs/gpu.md).  conv.cu calls it per pass and runs any pass cuDNN does not
 * take on im2col + cuBLAS, which stays the reference.
 *
 * LAYOUT.  The activations are CNHW (backend.h).  cuDNN's 4-D tensor descriptors take any
 * strides (cudnnSetTensor4dDescriptorEx), and CNHW is a permutation of NCHW: n stride H*W,
 * c stride N*H*W, h stride W, w stride 1 (vt_dnn_cnhw_strides).  So the tensors are described
 * where they lie, with no transposes: a transpose to NCHW or NHWC around every call would read
 * and write x, y, dy and dx once more each (a 3x3 ResNet layer at batch 128 moves ~100 MB per
 * pass that way) and need as much workspace again.  Whether cuDNN's fast kernels accept these
 * strides is what cudnnFind* answers: it returns only algorithms that support the descriptors,
 * and a pass with none (or none within the workspace limit) runs on im2col.  The filter
 * [cout][cin/groups][kh][kw] is cuDNN's KCRS (CUDNN_TENSOR_NCHW) as it is.  If the GPU run shows
 * cuDNN slow on these strides, the transposes are the next thing to try.
 *
 * PLANS.  One per shape and math mode (vt_dnn_key: TF32 and plain fp32 get their own
 * algorithms), made the first time conv_workspace or a pass meets the shape: descriptors and,
 * for each pass, cudnnFind*'s fastest algorithm within the workspace limit (vt_dnn_pick,
 * vt_dnn_ws_limit).  Kept in the backend's table until it is destroyed.  cudnnFind* allocates
 * its own buffers (cudaMalloc); when it finds nothing, the allocator's cached blocks are
 * released and it is asked once more.  cuDNN may pick non-deterministic algorithms (atomics in
 * backward filter), unlike im2col's col2im.
 *
 * Groups (depthwise included) go to cudnnSetConvolutionGroupCount.  Gradients follow
 * backend.h: dx accumulates (beta = 1), dw is assigned (beta = 0); the bias and its gradient
 * stay with elementwise.cu / reduce.cu. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_internal.cuh"

#if VT_HAVE_CUDNN

static const char *const pass_name[3] = {"fwd", "bwd-data", "bwd-filter"};

static vt_status dnn_fail(const vt_dnn *lib, vt_dnn_status st, const char *what)
{
    (void)cudaGetLastError();
    const char *msg = lib->error_string ? lib->error_string(st) : NULL;
    return vt_fail(VT_ERR_DEVICE, "cuDNN: %s: %s (status %d)", what, msg ? msg : "?", (int)st);
}

#define VT_DNN_TRY(lib, call, what)                                                              \
    do {                                                                                         \
        vt_dnn_status s_ = (call);                                                               \
        if (s_ != VT_DNN_STATUS_SUCCESS) return dnn_fail(lib, s_, what);                         \
    } while (0)

void vt_dnn_backend_init(vt_cuda_backend *cb)
{
    if (!vt_dnn_wanted()) {
        snprintf(cb->conv_engine, sizeof cb->conv_engine,
                 "im2col + cuBLAS (VT_CUDNN=1 tries the experimental cuDNN convolutions)");
        return;
    }
    const char *why = NULL;
    const vt_dnn *lib = vt_dnn_shared(&why);
    if (!lib) {
        snprintf(cb->conv_engine, sizeof cb->conv_engine, "im2col + cuBLAS (VT_CUDNN=1, but %s)",
                 why);
        return;
    }
    vt_dnn_state *s = (vt_dnn_state *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(cb->conv_engine, sizeof cb->conv_engine,
                 "im2col + cuBLAS (VT_CUDNN=1, but no host memory for cuDNN's plans)");
        return;
    }
    vt_dnn_status st = lib->create(&s->handle);
    if (st == VT_DNN_STATUS_SUCCESS) {
        st = lib->set_stream(s->handle, (void *)cb->stream);
        if (st != VT_DNN_STATUS_SUCCESS) (void)lib->destroy(s->handle);
    } else {
        s->handle = NULL;
    }
    (void)cudaGetLastError();
    if (st != VT_DNN_STATUS_SUCCESS) {
        const char *msg = lib->error_string(st);
        snprintf(cb->conv_engine, sizeof cb->conv_engine,
                 "im2col + cuBLAS (VT_CUDNN=1, but cuDNN %zu did not start: %s)", lib->version,
                 msg ? msg : "?");
        free(s);
        return;
    }
    s->lib = lib;
    s->table.keys = s->keys;
    s->table.used = s->used;
    s->table.cap = VT_DNN_PLAN_SLOTS;
    cb->dnn = s;
    snprintf(cb->conv_engine, sizeof cb->conv_engine,
             "cuDNN %zu.%zu.%zu (EXPERIMENTAL, VT_CUDNN=1: not yet run on a GPU by this project), "
             "im2col + cuBLAS for the passes it does not take",
             lib->version / 10000, lib->version / 100 % 100, lib->version % 100);
}

static void plan_release(const vt_dnn *lib, vt_dnn_plan *p)
{
    if (p->x) (void)lib->destroy_tensor(p->x);
    if (p->y) (void)lib->destroy_tensor(p->y);
    if (p->w) (void)lib->destroy_filter(p->w);
    if (p->conv) (void)lib->destroy_conv(p->conv);
    p->x = p->y = NULL;
    p->w = NULL;
    p->conv = NULL;
}

void vt_dnn_backend_destroy(vt_cuda_backend *cb)
{
    vt_dnn_state *s = cb->dnn;
    if (!s) return;
    for (size_t i = 0; i < VT_DNN_PLAN_SLOTS; i++)
        if (s->used[i]) plan_release(s->lib, &s->plans[i]);
    (void)s->lib->destroy(s->handle);
    (void)cudaGetLastError();
    free(s);
    cb->dnn = NULL;
}

/* The descriptors of shape d: 1, or 0 with the failing call and cuDNN's reason in why (the
 * plan then runs on im2col; no error is set, as for any pass cuDNN does not take). */
static int plan_describe(vt_cuda_backend *cb, const vt_conv_desc *d, vt_dnn_plan *p, char *why,
                         size_t cap)
{
    const vt_dnn *lib = cb->dnn->lib;
    int xs[4], ys[4];
    if (!vt_dnn_cnhw_strides(d->cin, d->n, d->h, d->w, xs) ||
        !vt_dnn_cnhw_strides(d->cout, d->n, d->ho, d->wo, ys)) {
        snprintf(why, cap, "tensor too large for int strides");
        return 0;
    }
    const char *what = "";
    vt_dnn_status st;
#define STEP(call, name)                                                                         \
    if ((st = (call)) != VT_DNN_STATUS_SUCCESS) {                                                \
        what = name;                                                                             \
        goto failed;                                                                             \
    }
    STEP(lib->create_tensor(&p->x), "cudnnCreateTensorDescriptor")
    STEP(lib->create_tensor(&p->y), "cudnnCreateTensorDescriptor")
    STEP(lib->create_filter(&p->w), "cudnnCreateFilterDescriptor")
    STEP(lib->create_conv(&p->conv), "cudnnCreateConvolutionDescriptor")
    STEP(lib->set_tensor_4d_ex(p->x, VT_DNN_DATA_FLOAT, d->n, d->cin, d->h, d->w, xs[0], xs[1],
                               xs[2], xs[3]),
         "cudnnSetTensor4dDescriptorEx (x, CNHW strides)")
    STEP(lib->set_tensor_4d_ex(p->y, VT_DNN_DATA_FLOAT, d->n, d->cout, d->ho, d->wo, ys[0], ys[1],
                               ys[2], ys[3]),
         "cudnnSetTensor4dDescriptorEx (y, CNHW strides)")
    STEP(lib->set_filter_4d(p->w, VT_DNN_DATA_FLOAT, VT_DNN_TENSOR_NCHW, d->cout,
                            d->cin / d->groups, d->kh, d->kw),
         "cudnnSetFilter4dDescriptor")
    STEP(lib->set_conv_2d(p->conv, d->ph, d->pw, d->sh, d->sw, 1, 1, VT_DNN_CROSS_CORRELATION,
                          VT_DNN_DATA_FLOAT),
         "cudnnSetConvolution2dDescriptor")
    STEP(lib->set_conv_group_count(p->conv, d->groups), "cudnnSetConvolutionGroupCount")
    STEP(lib->set_conv_math_type(p->conv, cb->plain_fp32 ? VT_DNN_FMA_MATH : VT_DNN_TENSOR_OP_MATH),
         "cudnnSetConvolutionMathType")
#undef STEP
    return 1;
failed:
    (void)cudaGetLastError();
    snprintf(why, cap, "%s: %s", what, lib->error_string(st));
    return 0;
}

static vt_dnn_status find(vt_cuda_backend *cb, vt_dnn_plan *p, int pass, vt_dnn_algo_perf *r,
                          int *n)
{
    const vt_dnn *lib = cb->dnn->lib;
    vt_dnn_handle h = cb->dnn->handle;
    *n = 0;
    switch (pass) {
    case 0: return lib->find_fwd(h, p->x, p->w, p->conv, p->y, VT_DNN_FWD_ALGO_COUNT, n, r);
    case 1:
        return lib->find_bwd_data(h, p->w, p->y, p->conv, p->x, VT_DNN_BWD_DATA_ALGO_COUNT, n, r);
    default:
        return lib->find_bwd_filter(h, p->x, p->y, p->conv, p->w, VT_DNN_BWD_FILTER_ALGO_COUNT, n,
                                    r);
    }
}

/* Choose pass `pass`'s algorithm; appends what happened to note. */
static void plan_pass(vt_cuda_backend *cb, vt_dnn_plan *p, int pass, size_t limit, char *note,
                      size_t cap)
{
    const vt_dnn *lib = cb->dnn->lib;
    vt_dnn_algo_perf r[VT_DNN_MAX_ALGOS];
    int n = 0, pick = -1;
    vt_dnn_status st = VT_DNN_STATUS_SUCCESS;
    for (int attempt = 0; attempt < 2 && pick < 0; attempt++) {
        if (attempt) vt_cuda_cache_release(cb); /* cudnnFind* allocates with cudaMalloc */
        memset(r, 0, sizeof r);
        st = find(cb, p, pass, r, &n);
        (void)cudaGetLastError();
        if (st == VT_DNN_STATUS_SUCCESS) pick = vt_dnn_pick(r, n, limit, cb->plain_fp32);
    }
    size_t len = strlen(note);
    if (pick < 0) {
        p->algo[pass] = -1;
        if (st != VT_DNN_STATUS_SUCCESS)
            snprintf(note + len, cap - len, " %s im2col (find: %s)", pass_name[pass],
                     lib->error_string(st));
        else
            snprintf(note + len, cap - len, " %s im2col (%d results, none within %zu B)",
                     pass_name[pass], n, limit);
        return;
    }
    p->algo[pass] = r[pick].algo;
    p->math[pass] = r[pick].math_type;
    p->ws[pass] = r[pick].memory;
    if (r[pick].memory > p->ws_max) p->ws_max = r[pick].memory;
    snprintf(note + len, cap - len, " %s algo %d (%.3f ms, %zu B)", pass_name[pass], r[pick].algo,
             (double)r[pick].time, r[pick].memory);
}

const vt_dnn_plan *vt_dnn_plan_for(vt_cuda_backend *cb, const vt_conv_desc *d,
                                   size_t im2col_bytes, int announced)
{
    vt_dnn_state *s = cb->dnn;
    if (!s) return NULL;
    vt_dnn_key k = vt_dnn_key_of(d, cb->plain_fp32);
    long slot = vt_dnn_table_find(&s->table, &k);
    if (slot >= 0) return &s->plans[slot];
    slot = vt_dnn_table_insert(&s->table, &k);
    if (slot < 0) return NULL; /* full: im2col for the shapes beyond it */
    vt_dnn_plan *p = &s->plans[slot];
    memset(p, 0, sizeof *p);
    p->algo[0] = p->algo[1] = p->algo[2] = -1;
    char *note = s->last_plan;
    size_t cap = sizeof s->last_plan;
    snprintf(note, cap, "n=%d cin=%d %dx%d cout=%d k=%dx%d s=%dx%d p=%dx%d g=%d %s:", d->n, d->cin,
             d->h, d->w, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph, d->pw, d->groups,
             cb->plain_fp32 ? "fp32" : "tf32");
    const char *why = NULL;
    if (!vt_dnn_shape_ok(d, &why)) {
        size_t len = strlen(note);
        snprintf(note + len, cap - len, " im2col (%s)", why);
        return p;
    }
    VT_CUDA_GUARD(cb);
    char reason[160];
    if (!plan_describe(cb, d, p, reason, sizeof reason)) {
        size_t len = strlen(note);
        snprintf(note + len, cap - len, " im2col (%s)", reason);
        plan_release(s->lib, p);
        return p;
    }
    size_t limit = vt_dnn_ws_limit(im2col_bytes, VT_DNN_WS_CAP, announced);
    for (int pass = 0; pass < 3; pass++) plan_pass(cb, p, pass, limit, note, cap);
    if (p->algo[0] >= 0 || p->algo[1] >= 0 || p->algo[2] >= 0) s->shapes_dnn++;
    return p;
}

/* Before a pass: the math type its algorithm was found with (cuDNN's advice for the results of
 * cudnnFind*). */
static vt_status set_math(vt_cuda_backend *cb, const vt_dnn_plan *p, int pass)
{
    const vt_dnn *lib = cb->dnn->lib;
    VT_DNN_TRY(lib, lib->set_conv_math_type(p->conv, p->math[pass]), "cudnnSetConvolutionMathType");
    return VT_OK;
}

vt_status vt_dnn_forward(vt_cuda_backend *cb, const vt_dnn_plan *p, const float *x,
                         const float *w, float *y, void *ws)
{
    const vt_dnn *lib = cb->dnn->lib;
    if (p->ws[0] && !ws) return vt_fail(VT_ERR_INVALID_ARGUMENT, "conv_forward: workspace is NULL");
    vt_status st = set_math(cb, p, 0);
    if (st) return st;
    const float one = 1.0f, zero = 0.0f;
    VT_DNN_TRY(lib, lib->conv_fwd(cb->dnn->handle, &one, p->x, x, p->w, w, p->conv, p->algo[0], ws,
                                  p->ws[0], &zero, p->y, y),
               "cudnnConvolutionForward");
    cb->dnn->passes_dnn++;
    return VT_OK;
}

vt_status vt_dnn_backward_data(vt_cuda_backend *cb, const vt_dnn_plan *p, const float *w,
                               const float *dy, float *dx, void *ws)
{
    const vt_dnn *lib = cb->dnn->lib;
    if (p->ws[1] && !ws)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "conv_backward: workspace is NULL");
    vt_status st = set_math(cb, p, 1);
    if (st) return st;
    const float one = 1.0f; /* dx accumulates */
    VT_DNN_TRY(lib, lib->conv_bwd_data(cb->dnn->handle, &one, p->w, w, p->y, dy, p->conv,
                                       p->algo[1], ws, p->ws[1], &one, p->x, dx),
               "cudnnConvolutionBackwardData");
    cb->dnn->passes_dnn++;
    return VT_OK;
}

vt_status vt_dnn_backward_filter(vt_cuda_backend *cb, const vt_dnn_plan *p, const float *x,
                                 const float *dy, float *dw, void *ws)
{
    const vt_dnn *lib = cb->dnn->lib;
    if (p->ws[2] && !ws)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "conv_backward: workspace is NULL");
    vt_status st = set_math(cb, p, 2);
    if (st) return st;
    const float one = 1.0f, zero = 0.0f; /* dw is assigned */
    VT_DNN_TRY(lib, lib->conv_bwd_filter(cb->dnn->handle, &one, p->x, x, p->y, dy, p->conv,
                                         p->algo[2], ws, p->ws[2], &zero, p->w, dw),
               "cudnnConvolutionBackwardFilter");
    cb->dnn->passes_dnn++;
    return VT_OK;
}

#else /* !VT_HAVE_CUDNN: a build without cuDNN support (-Dcudnn=disabled) */

void vt_dnn_backend_init(vt_cuda_backend *cb)
{
    snprintf(cb->conv_engine, sizeof cb->conv_engine, "im2col + cuBLAS%s",
             getenv("VT_CUDNN") ? " (VT_CUDNN is set, but this build has no cuDNN support: "
                                  "-Dcudnn=disabled)"
                                : "");
}

void vt_dnn_backend_destroy(vt_cuda_backend *cb) { (void)cb; }

const vt_dnn_plan *vt_dnn_plan_for(vt_cuda_backend *cb, const vt_conv_desc *d,
                                   size_t im2col_bytes, int announced)
{
    (void)cb;
    (void)d;
    (void)im2col_bytes;
    (void)announced;
    return NULL;
}

static vt_status no_dnn(void)
{
    return vt_fail(VT_ERR_UNSUPPORTED, "this build has no cuDNN support");
}

vt_status vt_dnn_forward(vt_cuda_backend *, const vt_dnn_plan *, const float *, const float *,
                         float *, void *)
{
    return no_dnn();
}

vt_status vt_dnn_backward_data(vt_cuda_backend *, const vt_dnn_plan *, const float *,
                               const float *, float *, void *)
{
    return no_dnn();
}

vt_status vt_dnn_backward_filter(vt_cuda_backend *, const vt_dnn_plan *, const float *,
                                 const float *, float *, void *)
{
    return no_dnn();
}

#endif

void vt_dnn_conv_info(vt_cuda_backend *cb, vt_cuda_conv_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->engine, sizeof out->engine, "%s", cb->conv_engine);
    vt_dnn_state *s = cb->dnn;
    if (!s) return;
    out->cudnn = 1;
    out->cudnn_passes = s->passes_dnn;
    out->im2col_passes = s->passes_im2col;
    out->shapes = (unsigned)s->table.count;
    out->shapes_cudnn = s->shapes_dnn;
    snprintf(out->last_plan, sizeof out->last_plan, "%s", s->last_plan);
}
