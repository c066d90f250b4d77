/* The CUDA backend: object lifetime, device queries, transfers, GEMM and the ops table.  Kernels
 * live beside it by concern (elementwise.cu, reduce.cu, batchnorm.cu, pool.cu, conv.cu). */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_internal.cuh"

extern "C" {
#include "backend/bf16_math.h"
#include "backend/cuda_device.h"
}

/* ---- errors ------------------------------------------------------------------------------ */

vt_status vt_cuda_fail(cudaError_t err, const char *what)
{
    /* Clear a non-sticky error so the next call does not report it again. */
    (void)cudaGetLastError();
    if (err == cudaErrorMemoryAllocation)
        return vt_fail(VT_ERR_DEVICE_OOM, "CUDA: %s: %s", what, cudaGetErrorString(err));
    return vt_fail(VT_ERR_DEVICE, "CUDA: %s: %s (%s)", what, cudaGetErrorString(err),
                   cudaGetErrorName(err));
}

vt_status vt_cublas_fail(cublasStatus_t st, const char *what)
{
    (void)cudaGetLastError();
    if (st == CUBLAS_STATUS_ALLOC_FAILED)
        return vt_fail(VT_ERR_DEVICE_OOM, "cuBLAS: %s: %s", what, cublasGetStatusString(st));
    return vt_fail(VT_ERR_DEVICE, "cuBLAS: %s: %s", what, cublasGetStatusString(st));
}

vt_status vt_cuda_check_launch(const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return vt_cuda_fail(e, kernel);
    return VT_OK;
}

/* ---- device queries ---------------------------------------------------------------------- */

extern "C" int vt_cuda_device_count(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        /* No driver / no device is an answer (0), not a failure. */
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* VT_OK when `device` exists; else VT_ERR_DEVICE saying why (the runtime's reason when it finds
 * no device at all: no driver, a driver too old, ...). */
static vt_status check_device(int device)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return vt_fail(VT_ERR_DEVICE, "CUDA device %d: no usable CUDA device: %s", device,
                       cudaGetErrorString(e));
    }
    if (device < 0 || device >= n)
        return vt_fail(VT_ERR_DEVICE, "CUDA device %d does not exist (%d device%s found)", device,
                       n, n == 1 ? "" : "s");
    return VT_OK;
}

extern "C" vt_status vt_cuda_device_info(int device, char *name, size_t name_cap, int *cc_major,
                                         int *cc_minor, size_t *total_mem, size_t *free_mem)
{
    vt_status st = check_device(device);
    if (st) return st;
    cudaDeviceProp prop;
    VT_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    if (name && name_cap > 0) snprintf(name, name_cap, "%s", prop.name);
    if (cc_major) *cc_major = prop.major;
    if (cc_minor) *cc_minor = prop.minor;
    if (total_mem) *total_mem = prop.totalGlobalMem;
    if (free_mem) {
        vt_cuda_device_guard guard(device);
        size_t fr = 0, tot = 0;
        VT_CUDA_TRY(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
        *free_mem = fr;
    }
    return VT_OK;
}

/* ---- transfers --------------------------------------------------------------------------- */

vt_status vt_cuda_upload(vt_backend *b, void *dst, const void *src_host, size_t bytes)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (bytes == 0) return VT_OK;
    if (!dst || !src_host) return vt_fail(VT_ERR_INVALID_ARGUMENT, "upload: NULL pointer");
    VT_CUDA_GUARD(cb);
    /* From pageable memory the call returns once the source has been staged, so the caller may
     * reuse its buffer at once; the device copy stays in stream order. */
    VT_CUDA_TRY(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, cb->stream),
                "upload (cudaMemcpyAsync host to device)");
    return VT_OK;
}

vt_status vt_cuda_upload_rows(vt_backend *b, void *dst, size_t dpitch, const void *src_host,
                              size_t spitch, size_t row_bytes, size_t rows)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (row_bytes == 0 || rows == 0) return VT_OK;
    if (!dst || !src_host) return vt_fail(VT_ERR_INVALID_ARGUMENT, "upload_rows: NULL pointer");
    if (dpitch < row_bytes || spitch < row_bytes)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "upload_rows: a pitch is less than a row");
    VT_CUDA_GUARD(cb);
    /* One 2-D copy: the copy engine does the strided gather (from pageable memory the driver
     * stages it, as for upload). */
    VT_CUDA_TRY(cudaMemcpy2DAsync(dst, dpitch, src_host, spitch, row_bytes, rows,
                                  cudaMemcpyHostToDevice, cb->stream),
                "upload_rows (cudaMemcpy2DAsync host to device)");
    return VT_OK;
}

vt_status vt_cuda_download(vt_backend *b, void *dst_host, const void *src, size_t bytes)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (bytes == 0) return VT_OK;
    if (!dst_host || !src) return vt_fail(VT_ERR_INVALID_ARGUMENT, "download: NULL pointer");
    VT_CUDA_GUARD(cb);
    VT_CUDA_TRY(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, cb->stream),
                "download (cudaMemcpyAsync device to host)");
    /* Any earlier asynchronous kernel failure is reported here, as the contract says. */
    VT_CUDA_TRY(cudaStreamSynchronize(cb->stream), "download (stream synchronize)");
    return VT_OK;
}

vt_status vt_cuda_copy(vt_backend *b, void *dst, const void *src, size_t bytes)
{
    vt_cuda_backend *cb = vt_cuda(b);
    if (bytes == 0 || dst == src) return VT_OK;
    if (!dst || !src) return vt_fail(VT_ERR_INVALID_ARGUMENT, "copy: NULL pointer");
    VT_CUDA_GUARD(cb);
    VT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cb->stream),
                "copy (cudaMemcpyAsync device to device)");
    return VT_OK;
}

vt_status vt_cuda_synchronize(vt_backend *b)
{
    vt_cuda_backend *cb = vt_cuda(b);
    VT_CUDA_GUARD(cb);
    VT_CUDA_TRY(cudaStreamSynchronize(cb->stream), "synchronize");
    return VT_OK;
}

/* ---- GEMM -------------------------------------------------------------------------------- */

/* A k == 0 product is beta*C; cuBLAS would reject the zero leading dimensions callers may pass,
 * and beta == 0 must overwrite (not scale) whatever C holds, NaN included. */
__global__ void k_scale_matrix(float *c, int m, int n, int ldc, long long stride_c, int batch,
                               float beta)
{
    size_t total = (size_t)m * n * batch;
    VT_GRID_STRIDE(i, total)
    {
        size_t bi = i / ((size_t)m * n), r = (i / n) % m, col = i % n;
        float *p = c + bi * stride_c + r * (size_t)ldc + col;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

/* ---- bf16 operands (precision=bf16, EXPERIMENTAL: VT_CUDA_BF16=1; not yet run on a GPU) ------
 * What is bf16: only the operands of the products.  Each GEMM converts op(A) and op(B) into the
 * backend's two bf16 buffers just before cublasGemmEx / cublasGemmStridedBatchedEx, which
 * multiply them on the tensor cores and accumulate in fp32 (CUBLAS_COMPUTE_32F) into the fp32 C.
 * Activations, gradients, weights (the fp32 master copy), optimizer state, batch-norm
 * statistics and losses all stay fp32 in memory: the simpler, safer first step, the same
 * arithmetic as the CPU's precision=bf16 (gemm.h), and nothing outside this file changes.  The
 * price is a conversion pass over each operand per product (reading 4 bytes and writing 2 per
 * element: small beside the GEMM for the convolutions, which are most of the step) and the
 * buffers' memory, up to half of the largest im2col chunk each.  Storing activations in bf16
 * would halve their memory and traffic but touches every kernel; that is for after a GPU run.
 * The convolutions run on im2col + these GEMMs in bf16 (not cuDNN: its bf16 convolutions take
 * and give bf16 tensors, y and the accumulated dx included, which is more than the operands).
 * The rounding is bf16_math.h's (round to nearest even, NaN kept a NaN, subnormals rounded, not
 * flushed), the one the CPU's bf16 products use, unit-tested on the CPU (test_cuda_host). */

__global__ void k_to_bf16(size_t n, const float *x, uint16_t *y)
{
    VT_GRID_STRIDE(i, n) y[i] = vt_bf16_rne(x[i]);
}

/* The elements an operand's `batch` matrices span from its first: `rows` rows of `cols`,
 * `ld` apart, matrices `stride` apart (stride 0: one matrix shared by every batch).  Converted
 * whole, gaps included, so that the bf16 copy keeps the operand's ld and strides (the gaps lie
 * inside the caller's allocation: between its first and last elements). */
static size_t operand_span(int rows, int cols, int ld, long long stride, int batch)
{
    size_t one = (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
    return stride > 0 ? (size_t)(batch - 1) * (size_t)stride + one : one;
}

/* x (n floats) into bf16 buffer `which`, grown to fit. */
static vt_status to_bf16(vt_cuda_backend *cb, int which, const float *x, size_t n,
                         const uint16_t **out)
{
    vt_status st = vt_cuda_grow(cb, &cb->bf16_buf[which], &cb->bf16_bytes[which],
                                n * sizeof(uint16_t));
    if (st != VT_OK) return st;
    uint16_t *y = (uint16_t *)cb->bf16_buf[which];
    st = vt_cuda_launch(cb, n, "gemm (bf16 operand conversion)", k_to_bf16, n, x, y);
    *out = y;
    return st;
}

static vt_status gemm_bf16(vt_cuda_backend *cb, cublasOperation_t opa, cublasOperation_t opb,
                           int m, int n, int k, float alpha, const float *a, int lda,
                           long long stride_a, const float *bm, int ldb, long long stride_b,
                           float beta, float *c, int ldc, long long stride_c, int batch)
{
    /* op(A) is m x k: stored k x m when transposed; op(B) k x n: stored n x k */
    const bool ta = opa == CUBLAS_OP_T, tb = opb == CUBLAS_OP_T;
    size_t na = operand_span(ta ? k : m, ta ? m : k, lda, stride_a, batch);
    size_t nb = operand_span(tb ? n : k, tb ? k : n, ldb, stride_b, batch);
    const uint16_t *a16 = NULL, *b16 = NULL;
    vt_status st = to_bf16(cb, 0, a, na, &a16);
    if (st == VT_OK) st = to_bf16(cb, 1, bm, nb, &b16);
    if (st != VT_OK) return st;
    if (batch == 1) {
        VT_CUBLAS_TRY(cublasGemmEx(cb->cublas, opb, opa, n, m, k, &alpha, b16, CUDA_R_16BF, ldb,
                                   a16, CUDA_R_16BF, lda, &beta, c, CUDA_R_32F, ldc,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx (bf16)");
    } else {
        VT_CUBLAS_TRY(cublasGemmStridedBatchedEx(cb->cublas, opb, opa, n, m, k, &alpha, b16,
                                                 CUDA_R_16BF, ldb, stride_b, a16, CUDA_R_16BF,
                                                 lda, stride_a, &beta, c, CUDA_R_32F, ldc,
                                                 stride_c, batch, CUBLAS_COMPUTE_32F,
                                                 CUBLAS_GEMM_DEFAULT),
                      "cublasGemmStridedBatchedEx (bf16)");
    }
    return VT_OK;
}

vt_status vt_cuda_gemm_batched(vt_cuda_backend *cb, int transa, int transb, int m, int n, int k,
                               float alpha, const float *a, int lda, long long stride_a,
                               const float *bm, int ldb, long long stride_b, float beta, float *c,
                               int ldc, long long stride_c, int batch)
{
    if (m < 0 || n < 0 || k < 0 || batch < 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "gemm: negative size (m=%d n=%d k=%d)", m, n, k);
    if (m == 0 || n == 0 || batch == 0) return VT_OK;
    if (k == 0) {
        size_t total = (size_t)m * n * batch;
        return vt_cuda_launch(cb, total, "gemm (k = 0 scale)", k_scale_matrix, c, m, n, ldc,
                              stride_c, batch, beta);
    }
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands and
     * the m/n roles; each operand's transpose flag stays its own. */
    cublasOperation_t opa = transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (cb->bf16)
        return gemm_bf16(cb, opa, opb, m, n, k, alpha, a, lda, stride_a, bm, ldb, stride_b, beta,
                         c, ldc, stride_c, batch);
    if (batch == 1) {
        VT_CUBLAS_TRY(cublasSgemm(cb->cublas, opb, opa, n, m, k, &alpha, bm, ldb, a, lda, &beta, c,
                                  ldc),
                      "cublasSgemm");
    } else {
        VT_CUBLAS_TRY(cublasSgemmStridedBatched(cb->cublas, opb, opa, n, m, k, &alpha, bm, ldb,
                                                stride_b, a, lda, stride_a, &beta, c, ldc,
                                                stride_c, batch),
                      "cublasSgemmStridedBatched");
    }
    return VT_OK;
}

vt_status vt_cuda_gemm(vt_backend *b, int transa, int transb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *bm, int ldb, float beta, float *c,
                       int ldc)
{
    vt_cuda_backend *cb = vt_cuda(b);
    VT_CUDA_GUARD(cb);
    return vt_cuda_gemm_batched(cb, transa, transb, m, n, k, alpha, a, lda, 0, bm, ldb, 0, beta, c,
                                ldc, 0, 1);
}

/* ---- lifetime ---------------------------------------------------------------------------- */

/* The table, member by member in backend_ops.inc's order: vt_cuda_<op> for every required op;
 * the optional ops and the data member as named here. */
#define VT_CUDA_OPTIONAL_bn_act_forward_train vt_cuda_bn_act_forward_train
#define VT_CUDA_OPTIONAL_bn_act_forward_eval vt_cuda_bn_act_forward_eval
#define VT_CUDA_OPTIONAL_bn_act_backward vt_cuda_bn_act_backward
#define VT_CUDA_OPTIONAL_bn_act_pool_forward_train nullptr /* BN + activation, then the pool */
#define VT_CUDA_OPTIONAL_bn_act_pool_backward nullptr
#define VT_CUDA_OPTIONAL_conv_columns nullptr /* each pass builds its own columns */
#define VT_CUDA_FIELD_host_memory 0           /* device memory, written through upload */

static const vt_backend_ops cuda_ops = {
    VT_BACKEND_API_VERSION,
    "cuda",
#define VT_BACKEND_OP(ret, op, params) vt_cuda_##op,
#define VT_BACKEND_OPTIONAL_OP(ret, op, params) VT_CUDA_OPTIONAL_##op,
#define VT_BACKEND_FIELD(type, member) VT_CUDA_FIELD_##member,
#include "backend/backend_ops.inc"
};

void vt_cuda_destroy(vt_backend *b)
{
    if (!b) return;
    vt_cuda_backend *cb = vt_cuda(b);
    {
        VT_CUDA_GUARD(cb);
        if (cb->stream) (void)cudaStreamSynchronize(cb->stream);
        vt_dnn_backend_destroy(cb);
        vt_cuda_graphs_destroy(cb);
        if (cb->cublas) (void)cublasDestroy(cb->cublas);
        vt_cuda_cache_destroy(cb); /* the bf16 buffers and cuBLAS's workspace with the rest */
        if (cb->stream) (void)cudaStreamDestroy(cb->stream);
        (void)cudaGetLastError();
    }
    free(cb);
}

extern "C" vt_status vt_backend_cuda_create(vt_backend **out, int device)
{
    if (!out) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_backend_cuda_create: out is NULL");
    *out = NULL;
    vt_status st = check_device(device);
    if (st) return st;
    cudaDeviceProp prop;
    VT_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    if (prop.major < 8)
        return vt_fail(VT_ERR_DEVICE,
                       "device %d (%s) has compute capability %d.%d; this build needs >= 8.0",
                       device, prop.name, prop.major, prop.minor);

    vt_cuda_backend *cb = (vt_cuda_backend *)calloc(1, sizeof *cb);
    if (!cb) return vt_fail(VT_ERR_OUT_OF_MEMORY, "out of host memory creating the CUDA backend");
    cb->base.ops = &cuda_ops;
    cb->device = device;
    cb->sm_count = prop.multiProcessorCount;
    cb->conv_col_cap = VT_CONV_COL_CAP;

    {
        VT_CUDA_GUARD(cb);
        cudaError_t ce = cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking);
        if (ce != cudaSuccess) {
            cb->stream = NULL;
            st = vt_cuda_fail(ce, "cudaStreamCreateWithFlags");
        }
        if (st == VT_OK) {
            cublasStatus_t bs = cublasCreate(&cb->cublas);
            if (bs != CUBLAS_STATUS_SUCCESS) {
                cb->cublas = NULL;
                st = vt_cublas_fail(bs, "cublasCreate");
            }
        }
        if (st == VT_OK) {
            cublasStatus_t bs = cublasSetStream(cb->cublas, cb->stream);
            if (bs != CUBLAS_STATUS_SUCCESS) st = vt_cublas_fail(bs, "cublasSetStream");
        }
        if (st == VT_OK) {
            cublasStatus_t bs = cublasSetMathMode(cb->cublas, CUBLAS_TF32_TENSOR_OP_MATH);
            if (bs != CUBLAS_STATUS_SUCCESS) st = vt_cublas_fail(bs, "cublasSetMathMode");
        }
        /* cuDNN only with VT_CUDNN=1; without it (or when it does not load) im2col */
        if (st == VT_OK) vt_dnn_backend_init(cb);
        /* the experimental CUDA graphs only with VT_CUDA_GRAPHS=1 */
        if (st == VT_OK) vt_cuda_graphs_init(cb);
    }
    if (st != VT_OK) {
        vt_cuda_destroy(&cb->base);
        return st;
    }
    *out = &cb->base;
    return VT_OK;
}

vt_cuda_backend *vt_cuda_of(vt_backend *b)
{
    return b && b->ops == &cuda_ops ? vt_cuda(b) : nullptr;
}

extern "C" void vt_backend_cuda_set_fp32(vt_backend *b, int plain_fp32)
{
    if (!b || b->ops != &cuda_ops) return;
    vt_cuda_backend *cb = vt_cuda(b);
    cb->plain_fp32 = plain_fp32 != 0;
    /* CUBLAS_DEFAULT_MATH is plain fp32 for Sgemm unless NVIDIA_TF32_OVERRIDE forces TF32. */
    (void)cublasSetMathMode(cb->cublas,
                            cb->plain_fp32 ? CUBLAS_DEFAULT_MATH : CUBLAS_TF32_TENSOR_OP_MATH);
}

extern "C" void vt_backend_cuda_set_bf16(vt_backend *b, int on)
{
    if (!b || b->ops != &cuda_ops) return;
    vt_cuda(b)->bf16 = on != 0;
}

extern "C" void vt_backend_cuda_memory(vt_backend *b, size_t *held_bytes, size_t *peak_bytes)
{
    size_t held = 0, peak = 0;
    if (b && b->ops == &cuda_ops) {
        held = vt_cuda(b)->cache.held;
        peak = vt_cuda(b)->cache.peak;
    }
    if (held_bytes) *held_bytes = held;
    if (peak_bytes) *peak_bytes = peak;
}

extern "C" void vt_backend_cuda_set_conv_cap(vt_backend *b, size_t bytes)
{
    if (!b || b->ops != &cuda_ops) return;
    vt_cuda(b)->conv_col_cap = bytes ? bytes : VT_CONV_COL_CAP;
}

extern "C" void vt_backend_cuda_conv_info(vt_backend *b, vt_cuda_conv_info *out)
{
    memset(out, 0, sizeof *out);
    if (!b || b->ops != &cuda_ops) return;
    vt_dnn_conv_info(vt_cuda(b), out);
}

extern "C" int vt_backend_cuda_graph_begin(vt_backend *b, const int key[4])
{
    if (!b || b->ops != &cuda_ops) return 0;
    return vt_cuda_graphs_begin(vt_cuda(b), key);
}

extern "C" vt_status vt_backend_cuda_graph_end(vt_backend *b, vt_status region, int *ran)
{
    *ran = 0;
    if (!b || b->ops != &cuda_ops) return VT_OK;
    return vt_cuda_graphs_end(vt_cuda(b), region, ran);
}

extern "C" void vt_backend_cuda_graph_info(vt_backend *b, vt_cuda_graph_info *out)
{
    memset(out, 0, sizeof *out);
    if (!b || b->ops != &cuda_ops) return;
    vt_cuda_graphs_info(vt_cuda(b), out);
}

extern "C" void *vt_cuda_host_alloc(int device, size_t bytes)
{
    vt_cuda_device_guard guard(device);
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        vt_fail(VT_ERR_OUT_OF_MEMORY, "cudaHostAlloc of %zu bytes: %s", bytes,
                cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

extern "C" void vt_cuda_host_free(void *p)
{
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}
