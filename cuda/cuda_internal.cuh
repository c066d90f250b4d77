/* Private to cuda/: the CUDA backend object, error helpers and the op entry points each .cu file
 * defines.  C++ (nvcc) only. */
#ifndef VT_CUDA_INTERNAL_CUH
#define VT_CUDA_INTERNAL_CUH

#include <cstddef>
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "vt_config.h"

/* core.h and backend.h are plain C without C++ guards of their own. */
extern "C" {
#include "backend/backend.h"
#include "backend/cuda_device.h"
#include "core/core.h"
}
#include "cudnn_load.h"
#include "cudnn_plan.h"
#include "graph_plan.h"

/* The caching allocator (alloc.cu): size-class free lists so steady-state training steps do not
 * call cudaMalloc/cudaFree, which synchronise the device. */
struct vt_cuda_block {
    void *ptr;
    size_t size;  /* rounded size actually allocated */
    int cls;      /* size class, or -1 for blocks too large to cache by class */
    int in_use;
};

struct vt_cuda_cache {
    vt_cuda_block *blocks; /* every block the cache owns (in use or free) */
    size_t count, cap;
    size_t held, peak;     /* bytes obtained from cudaMalloc, now and at most */
};

/* The experimental cuDNN convolutions (cudnn_conv.cu): one plan per convolution shape, chosen
 * once with cudnnFind* and kept for the backend's life.  A pass whose algorithm is -1 runs on
 * im2col + cuBLAS. */
#define VT_DNN_PLAN_SLOTS 512 /* a power of two; at most 3/4 of it filled (cudnn_plan.h) */
struct vt_dnn_plan {
    vt_dnn_tensor x, y; /* CNHW through strides (cudnn_conv.cu says why) */
    vt_dnn_filter w;
    vt_dnn_conv conv;
    int algo[3];        /* forward, backward data, backward filter; -1: im2col */
    int math[3];        /* the math type each algorithm was found with */
    size_t ws[3];       /* their workspace bytes */
    size_t ws_max;
};

struct vt_dnn_state {
    const vt_dnn *lib;
    vt_dnn_handle handle;
    vt_dnn_table table; /* over keys/used below */
    vt_dnn_key keys[VT_DNN_PLAN_SLOTS];
    unsigned char used[VT_DNN_PLAN_SLOTS];
    vt_dnn_plan plans[VT_DNN_PLAN_SLOTS];
    unsigned long long passes_dnn, passes_im2col;
    unsigned shapes_dnn; /* plans with at least one pass on cuDNN */
    char last_plan[256];
};

/* The experimental CUDA graphs of the training step (graph.cu; VT_CUDA_GRAPHS=1 when the backend
 * is made): the decisions (graph_plan.h) and one executable graph per slot. */
struct vt_cuda_graphs {
    vt_graph_plan plan;
    cudaGraphExec_t exec[VT_GRAPH_SLOTS];
    void *cublas_ws;         /* cuBLAS's own workspace (cublasSetWorkspace), so that a captured
                              * GEMM never allocates */
    vt_graph_action action;  /* of the region being recorded */
    int slot;
    int capturing;
    char state[160];         /* why graphs are off, or "" */
};

struct vt_cuda_backend {
    vt_backend base; /* must stay first: ops receive a vt_backend* */
    int device;
    int sm_count;
    int plain_fp32;
    size_t conv_col_cap; /* bytes of im2col columns per chunk (VT_CONV_COL_CAP by default) */
    cudaStream_t stream;
    cublasHandle_t cublas;
    vt_cuda_cache cache;
    /* Scratch owned by the backend for ops whose contract has no workspace argument (the
     * per-sample losses of softmax_xent).  Grows, never shrinks; stream order makes reuse safe. */
    void *scratch;
    size_t scratch_bytes;
    /* cuDNN (VT_CUDNN=1 and libcudnn.so.9 loaded): NULL runs every convolution on im2col. */
    vt_dnn_state *dnn;
    char conv_engine[256]; /* what runs the convolutions, and why (vt_cuda_conv_info) */
    /* precision=bf16 (EXPERIMENTAL, VT_CUDA_BF16=1; backend_cuda.cu, "GEMM"): every product's
     * operands are converted to bf16 into these two buffers (grown, never shrunk), C stays fp32 */
    int bf16;
    void *bf16_buf[2];
    size_t bf16_bytes[2];
    vt_cuda_graphs graphs;
};

static inline vt_cuda_backend *vt_cuda(vt_backend *b)
{
    return reinterpret_cast<vt_cuda_backend *>(b);
}

/* b as the CUDA backend, or NULL when it is another backend (backend_cuda.cu). */
vt_cuda_backend *vt_cuda_of(vt_backend *b);

/* Makes the backend's device current for the scope of an op and restores the caller's device
 * afterwards: the library must not change the calling thread's CUDA state behind its back. */
class vt_cuda_device_guard {
  public:
    explicit vt_cuda_device_guard(int device) : prev_(-1)
    {
        int cur = -1;
        if (cudaGetDevice(&cur) == cudaSuccess && cur != device) {
            if (cudaSetDevice(device) == cudaSuccess) prev_ = cur;
        } else {
            (void)cudaGetLastError();
        }
    }
    ~vt_cuda_device_guard()
    {
        if (prev_ >= 0) (void)cudaSetDevice(prev_);
    }
    vt_cuda_device_guard(const vt_cuda_device_guard &) = delete;
    vt_cuda_device_guard &operator=(const vt_cuda_device_guard &) = delete;

  private:
    int prev_;
};

#define VT_CUDA_GUARD(cb) vt_cuda_device_guard vt_guard_((cb)->device)

/* Error reporting (backend_cuda.cu).  `what` names the failing call or kernel. */
vt_status vt_cuda_fail(cudaError_t err, const char *what);
vt_status vt_cublas_fail(cublasStatus_t st, const char *what);
/* After a kernel launch: configuration errors surface here (execution errors surface at the next
 * synchronising call).  Clears the runtime's last error so it is reported once. */
vt_status vt_cuda_check_launch(const char *kernel);

#define VT_CUDA_TRY(call, what)                                                                  \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) return vt_cuda_fail(e_, what);                                    \
    } while (0)

#define VT_CUBLAS_TRY(call, what)                                                                \
    do {                                                                                         \
        cublasStatus_t s_ = (call);                                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) return vt_cublas_fail(s_, what);                        \
    } while (0)

/* Launch geometry for grid-stride loops: enough blocks to fill the device a few times over,
 * never more than the work needs.  n == 0 gives 0 (callers return before launching). */
static inline unsigned vt_cuda_grid(const vt_cuda_backend *cb, size_t n, unsigned threads)
{
    size_t want = (n + threads - 1) / threads;
    size_t cap = (size_t)(cb->sm_count > 0 ? cb->sm_count : 80) * 16;
    return (unsigned)(want < cap ? want : cap);
}

#define VT_CUDA_THREADS 256

/* The loop of a grid-stride kernel: i runs over 0..n-1, each thread taking every
 * (grid * block)-th index. */
#define VT_GRID_STRIDE(i, n)                                                                     \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (size_t)gridDim.x * blockDim.x)

/* Every kernel launch of the backend goes through these two: the launch on the backend's stream
 * and its check, as one call whose value is the op's vt_status (a launch error names `what`).
 * The arguments are converted to the kernel's parameter types as a direct launch would; a
 * literal NULL does not convert from its integer type, so pass nullptr or a typed pointer.
 *
 * Explicit geometry: block-reduce kernels (one block per channel or slice), 2-D grids, one-block
 * and one-thread kernels. */
template <typename... Params, typename... Args>
static inline vt_status vt_cuda_launch_shape(const vt_cuda_backend *cb, dim3 grid, dim3 block,
                                             size_t shared_bytes, const char *what,
                                             void (*kernel)(Params...), Args... args)
{
    kernel<<<grid, block, shared_bytes, cb->stream>>>(args...);
    return vt_cuda_check_launch(what);
}

/* A grid-stride kernel over n elements (n > 0: callers return before launching nothing):
 * VT_CUDA_THREADS a block, vt_cuda_grid blocks, no dynamic shared memory. */
template <typename... Params, typename... Args>
static inline vt_status vt_cuda_launch(const vt_cuda_backend *cb, size_t n, const char *what,
                                       void (*kernel)(Params...), Args... args)
{
    return vt_cuda_launch_shape(cb, vt_cuda_grid(cb, n, VT_CUDA_THREADS), VT_CUDA_THREADS, 0, what,
                                kernel, args...);
}

/* Default cap of the im2col buffer: big enough that typical layers run as one GEMM over the
 * whole batch, small enough to leave the memory to activations. */
#define VT_CONV_COL_CAP ((size_t)256 << 20)

/* ---- the ops: vt_cuda_<op>, defined by concern in the .cu files (conv_columns is not offered:
 * NULL in the table) ---- */
#define VT_BACKEND_OP(ret, op, params) ret vt_cuda_##op params;
#include "backend/backend_ops.inc"

/* ---- alloc.cu ---- */
void vt_cuda_cache_release(vt_cuda_backend *cb); /* frees every cached (not in-use) block */
void vt_cuda_cache_destroy(vt_cuda_backend *cb); /* frees everything */
/* A buffer of the backend (*buf, *have bytes) grown to hold at least `bytes` (at least doubling;
 * the old block goes back to the cache: stream order makes that safe).  Never shrinks. */
vt_status vt_cuda_grow(vt_cuda_backend *cb, void **buf, size_t *have, size_t bytes);
/* Ensure cb->scratch holds at least `bytes`. */
vt_status vt_cuda_scratch(vt_cuda_backend *cb, size_t bytes);

/* ---- cudnn_conv.cu ---- */
/* At backend creation (device current): cuDNN on when VT_CUDNN=1 and it loads; never fails
 * (without it cb->dnn stays NULL and conv_engine says why). */
void vt_dnn_backend_init(vt_cuda_backend *cb);
void vt_dnn_backend_destroy(vt_cuda_backend *cb);
/* The plan of shape d (made now when new; `announced`: called by conv_workspace, see
 * vt_dnn_ws_limit), or NULL when cuDNN is off or the table is full. */
const vt_dnn_plan *vt_dnn_plan_for(vt_cuda_backend *cb, const vt_conv_desc *d,
                                   size_t im2col_bytes, int announced);
/* The passes through cuDNN (plan->algo[pass] >= 0): y = conv(x, w); dx += dL/dx; dw = dL/dw. */
vt_status vt_dnn_forward(vt_cuda_backend *cb, const vt_dnn_plan *p, const float *x,
                         const float *w, float *y, void *ws);
vt_status vt_dnn_backward_data(vt_cuda_backend *cb, const vt_dnn_plan *p, const float *w,
                               const float *dy, float *dx, void *ws);
vt_status vt_dnn_backward_filter(vt_cuda_backend *cb, const vt_dnn_plan *p, const float *x,
                                 const float *dy, float *dw, void *ws);
void vt_dnn_conv_info(vt_cuda_backend *cb, vt_cuda_conv_info *out);

/* ---- graph.cu ---- */
/* At backend creation (device current): graphs on when VT_CUDA_GRAPHS=1; never fails (any
 * failure leaves them off, graphs.state saying why). */
void vt_cuda_graphs_init(vt_cuda_backend *cb);
void vt_cuda_graphs_destroy(vt_cuda_backend *cb);
/* vt_backend_cuda_graph_begin / _end / _info (cuda_device.h) for a backend known to be CUDA's */
int vt_cuda_graphs_begin(vt_cuda_backend *cb, const int key[4]);
vt_status vt_cuda_graphs_end(vt_cuda_backend *cb, vt_status region, int *ran);
void vt_cuda_graphs_info(vt_cuda_backend *cb, vt_cuda_graph_info *out);

/* ---- backend_cuda.cu ---- */
/* Row-major strided-batched GEMM on the backend's stream (batch == 1: plain cublasSgemm).  Each
 * operand's matrices lie `stride*` floats apart. */
vt_status vt_cuda_gemm_batched(vt_cuda_backend *cb, int transa, int transb, int m, int n, int k,
                               float alpha, const float *a, int lda, long long stride_a,
                               const float *bm, int ldb, long long stride_b, float beta, float *c,
                               int ldc, long long stride_c, int batch);

#endif
