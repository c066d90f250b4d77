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
#include "core/core.h"
}

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
};

static inline vt_cuda_backend *vt_cuda(vt_backend *b)
{
    return reinterpret_cast<vt_cuda_backend *>(b);
}

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

/* The launch of a grid-stride kernel over n elements on the backend's stream, and its check:
 * an expression whose value is the op's vt_status (a launch error names `what`). */
#define VT_CUDA_LAUNCH(cb, n, what, kernel, ...)                                                 \
    (kernel<<<vt_cuda_grid((cb), (n), VT_CUDA_THREADS), VT_CUDA_THREADS, 0, (cb)->stream>>>(    \
         __VA_ARGS__),                                                                           \
     vt_cuda_check_launch(what))

/* Default cap of the im2col buffer: big enough that typical layers run as one GEMM over the
 * whole batch, small enough to leave the memory to activations. */
#define VT_CONV_COL_CAP ((size_t)256 << 20)

/* ---- alloc.cu ---- */
void *vt_cuda_alloc(vt_backend *b, size_t bytes);
void vt_cuda_free(vt_backend *b, void *p);
void vt_cuda_cache_release(vt_cuda_backend *cb); /* frees every cached (not in-use) block */
void vt_cuda_cache_destroy(vt_cuda_backend *cb); /* frees everything */
/* Ensure cb->scratch holds at least `bytes`. */
vt_status vt_cuda_scratch(vt_cuda_backend *cb, size_t bytes);

/* ---- backend_cuda.cu ---- */
/* Row-major strided-batched GEMM on the backend's stream (batch == 1: plain cublasSgemm).  Each
 * operand's matrices lie `stride*` floats apart. */
vt_status vt_cuda_gemm_batched(vt_cuda_backend *cb, int transa, int transb, int m, int n, int k,
                               float alpha, const float *a, int lda, long long stride_a,
                               const float *bm, int ldb, long long stride_b, float beta, float *c,
                               int ldc, long long stride_c, int batch);

/* ---- elementwise.cu ---- */
vt_status vt_cuda_fill(vt_backend *b, float *x, size_t n, float value);
vt_status vt_cuda_axpy(vt_backend *b, size_t n, float alpha, const float *x, float *y);
vt_status vt_cuda_add(vt_backend *b, size_t n, const float *a, const float *c, float *y);
vt_status vt_cuda_copy2d(vt_backend *b, size_t rows, size_t cols, const float *src,
                         size_t src_pitch, float *dst, size_t dst_pitch);
vt_status vt_cuda_axpy2d(vt_backend *b, size_t rows, size_t cols, float alpha, const float *x,
                         size_t x_pitch, float *y, size_t y_pitch);
vt_status vt_cuda_act_forward(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                              float *y);
vt_status vt_cuda_act_backward(vt_backend *b, vt_act act, float alpha, size_t n, const float *x,
                               const float *y, const float *dy, float *dx);
vt_status vt_cuda_dropout_forward(vt_backend *b, size_t n, float p, uint64_t seed, const float *x,
                                  float *y, float *mask);
vt_status vt_cuda_dropout_backward(vt_backend *b, size_t n, const float *mask, const float *dy,
                                   float *dx);
vt_status vt_cuda_sgd_step(vt_backend *b, size_t n, float *p, const float *g, float *m, float lr,
                           float momentum, float wd, int nesterov);
vt_status vt_cuda_adamw_step(vt_backend *b, size_t n, float *p, const float *g, float *m, float *v,
                             float lr, float beta1, float beta2, float eps, float wd, float bc1,
                             float bc2);

/* ---- reduce.cu ---- */
vt_status vt_cuda_bias_add(vt_backend *b, int channels, size_t m, const float *bias, float *y);
vt_status vt_cuda_channel_sum(vt_backend *b, int channels, size_t m, const float *x, float *out);
vt_status vt_cuda_gap_forward(vt_backend *b, size_t planes, size_t hw, const float *x, float *y);
vt_status vt_cuda_gap_backward(vt_backend *b, size_t planes, size_t hw, const float *dy,
                               float *dx);
vt_status vt_cuda_softmax_xent(vt_backend *b, int classes, int batch, const float *logits,
                               const int32_t *labels, float smoothing, float grad_scale,
                               float *loss_sum, float *dlogits, float *probs);
vt_status vt_cuda_softmax_dice(vt_backend *b, int classes, int batch, const float *probs,
                               const int32_t *labels, float weight, float *loss, float *dlogits);

/* ---- detect.cu ---- */
vt_status vt_cuda_det_loss(vt_backend *b, const vt_det_loss_desc *d, const float *pred,
                           const float *gt, int32_t *assign, float *score, float *loss,
                           float *dpred);

/* ---- batchnorm.cu ---- */
vt_status vt_cuda_bn_forward_train(vt_backend *b, int channels, size_t m, const float *x,
                                   const float *gamma, const float *beta, float eps,
                                   float momentum, float *running_mean, float *running_var,
                                   float *save_mean, float *save_invstd, float *y);
vt_status vt_cuda_bn_forward_eval(vt_backend *b, int channels, size_t m, const float *x,
                                  const float *gamma, const float *beta, float eps,
                                  const float *running_mean, const float *running_var, float *y);
vt_status vt_cuda_bn_backward(vt_backend *b, int channels, size_t m, const float *x,
                              const float *gamma, const float *save_mean,
                              const float *save_invstd, const float *dy, float *dx, float *dgamma,
                              float *dbeta);
vt_status vt_cuda_bn_act_forward_train(vt_backend *b, vt_act act, int channels, size_t m,
                                       const float *x, const float *gamma, const float *beta,
                                       float eps, float momentum, float *running_mean,
                                       float *running_var, float *save_mean, float *save_invstd,
                                       float *y);
vt_status vt_cuda_bn_act_forward_eval(vt_backend *b, vt_act act, int channels, size_t m,
                                      const float *x, const float *gamma, const float *beta,
                                      float eps, const float *running_mean,
                                      const float *running_var, float *y);
vt_status vt_cuda_bn_act_backward(vt_backend *b, vt_act act, int channels, size_t m,
                                  const float *x, const float *y, const float *gamma,
                                  const float *beta, const float *save_mean,
                                  const float *save_invstd, const float *dy, float *dx,
                                  float *dgamma, float *dbeta);

/* ---- pool.cu ---- */
vt_status vt_cuda_maxpool_forward(vt_backend *b, const vt_pool_desc *d, const float *x, float *y,
                                  int32_t *idx);
vt_status vt_cuda_maxpool_backward(vt_backend *b, const vt_pool_desc *d, const int32_t *idx,
                                   const float *dy, float *dx);
vt_status vt_cuda_avgpool_forward(vt_backend *b, const vt_pool_desc *d, const float *x, float *y);
vt_status vt_cuda_avgpool_backward(vt_backend *b, const vt_pool_desc *d, const float *dy,
                                   float *dx);
vt_status vt_cuda_upsample2_forward(vt_backend *b, size_t planes, int h, int w, const float *x,
                                    float *y);
vt_status vt_cuda_upsample2_backward(vt_backend *b, size_t planes, int h, int w, const float *dy,
                                     float *dx);

/* ---- conv.cu ---- */
size_t vt_cuda_conv_workspace(vt_backend *b, const vt_conv_desc *d);
vt_status vt_cuda_conv_forward(vt_backend *b, const vt_conv_desc *d, const float *x,
                               const float *w, const float *bias, float *y, void *ws);
vt_status vt_cuda_conv_backward(vt_backend *b, const vt_conv_desc *d, const float *x,
                                const float *w, const float *dy, float *dx, float *dw, float *db,
                                void *ws);

#endif
