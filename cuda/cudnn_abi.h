/* The part of cuDNN 9's C interface that the CUDA module uses, declared here with cuDNN's stable
 * C ABI (the legacy convolution API of cudnn_ops.h / cudnn_cnn.h / cudnn_graph.h, cuDNN 9.0
 * to 9.19), so that the module builds without any cuDNN header and loads libcudnn.so.9 with
 * dlopen (cudnn_load.h, cudnn_load.c).  Only types, values and function pointer types: plain C.
 * tests/cudnn_abi_check.c compares every declaration with the real cudnn.h where it is
 * installed (a build test, see tests/meson.build). */
#ifndef VT_CUDA_CUDNN_ABI_H
#define VT_CUDA_CUDNN_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int vt_dnn_status;                          /* cudnnStatus_t */
typedef struct vt_dnn_context *vt_dnn_handle;       /* cudnnHandle_t */
typedef struct vt_dnn_tensor_struct *vt_dnn_tensor; /* cudnnTensorDescriptor_t */
typedef struct vt_dnn_filter_struct *vt_dnn_filter; /* cudnnFilterDescriptor_t */
typedef struct vt_dnn_conv_struct *vt_dnn_conv;     /* cudnnConvolutionDescriptor_t */

enum {
    VT_DNN_STATUS_SUCCESS = 0,          /* CUDNN_STATUS_SUCCESS */
    VT_DNN_STATUS_NOT_SUPPORTED = 3000, /* CUDNN_STATUS_NOT_SUPPORTED */
    VT_DNN_DATA_FLOAT = 0,              /* CUDNN_DATA_FLOAT */
    VT_DNN_TENSOR_NCHW = 0,             /* CUDNN_TENSOR_NCHW (the filter layout KCRS) */
    VT_DNN_CROSS_CORRELATION = 1,       /* CUDNN_CROSS_CORRELATION: what the library computes */
    VT_DNN_DEFAULT_MATH = 0,            /* CUDNN_DEFAULT_MATH */
    VT_DNN_TENSOR_OP_MATH = 1,          /* CUDNN_TENSOR_OP_MATH (TF32 for float data) */
    VT_DNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
    VT_DNN_FMA_MATH = 3,                /* CUDNN_FMA_MATH: plain fp32, no tensor cores */
    VT_DNN_FWD_ALGO_COUNT = 8,          /* CUDNN_CONVOLUTION_FWD_ALGO_COUNT */
    VT_DNN_BWD_DATA_ALGO_COUNT = 6,     /* CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT */
    VT_DNN_BWD_FILTER_ALGO_COUNT = 7,   /* CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT */
    VT_DNN_MAX_ALGOS = 8                /* the largest of the three */
};

/* cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and
 * cudnnConvolutionBwdFilterAlgoPerf_t: one layout (the algorithm enum differs). */
typedef struct vt_dnn_algo_perf {
    int algo;
    vt_dnn_status status;
    float time;        /* milliseconds */
    size_t memory;     /* workspace bytes */
    int determinism;   /* cudnnDeterminism_t: 1 = deterministic */
    int math_type;     /* cudnnMathType_t */
    int reserved[3];
} vt_dnn_algo_perf;

/* The functions, as pointers (cuDNN declares them CUDNNWINAPI, empty on Linux). */
typedef size_t (*vt_dnn_get_version_fn)(void);
typedef const char *(*vt_dnn_get_error_string_fn)(vt_dnn_status status);
typedef vt_dnn_status (*vt_dnn_create_fn)(vt_dnn_handle *handle);
typedef vt_dnn_status (*vt_dnn_destroy_fn)(vt_dnn_handle handle);
/* the stream is a cudaStream_t */
typedef vt_dnn_status (*vt_dnn_set_stream_fn)(vt_dnn_handle handle, void *stream);
typedef vt_dnn_status (*vt_dnn_create_tensor_fn)(vt_dnn_tensor *desc);
typedef vt_dnn_status (*vt_dnn_destroy_tensor_fn)(vt_dnn_tensor desc);
typedef vt_dnn_status (*vt_dnn_set_tensor_4d_ex_fn)(vt_dnn_tensor desc, int data_type, int n,
                                                    int c, int h, int w, int n_stride,
                                                    int c_stride, int h_stride, int w_stride);
typedef vt_dnn_status (*vt_dnn_create_filter_fn)(vt_dnn_filter *desc);
typedef vt_dnn_status (*vt_dnn_destroy_filter_fn)(vt_dnn_filter desc);
typedef vt_dnn_status (*vt_dnn_set_filter_4d_fn)(vt_dnn_filter desc, int data_type, int format,
                                                 int k, int c, int h, int w);
typedef vt_dnn_status (*vt_dnn_create_conv_fn)(vt_dnn_conv *desc);
typedef vt_dnn_status (*vt_dnn_destroy_conv_fn)(vt_dnn_conv desc);
typedef vt_dnn_status (*vt_dnn_set_conv_2d_fn)(vt_dnn_conv desc, int pad_h, int pad_w, int u,
                                               int v, int dilation_h, int dilation_w, int mode,
                                               int compute_type);
typedef vt_dnn_status (*vt_dnn_set_conv_group_count_fn)(vt_dnn_conv desc, int groups);
typedef vt_dnn_status (*vt_dnn_set_conv_math_type_fn)(vt_dnn_conv desc, int math_type);
typedef vt_dnn_status (*vt_dnn_find_fwd_fn)(vt_dnn_handle handle, vt_dnn_tensor x,
                                            vt_dnn_filter w, vt_dnn_conv conv, vt_dnn_tensor y,
                                            int requested, int *returned,
                                            vt_dnn_algo_perf *results);
typedef vt_dnn_status (*vt_dnn_find_bwd_data_fn)(vt_dnn_handle handle, vt_dnn_filter w,
                                                 vt_dnn_tensor dy, vt_dnn_conv conv,
                                                 vt_dnn_tensor dx, int requested, int *returned,
                                                 vt_dnn_algo_perf *results);
typedef vt_dnn_status (*vt_dnn_find_bwd_filter_fn)(vt_dnn_handle handle, vt_dnn_tensor x,
                                                   vt_dnn_tensor dy, vt_dnn_conv conv,
                                                   vt_dnn_filter dw, int requested, int *returned,
                                                   vt_dnn_algo_perf *results);
typedef vt_dnn_status (*vt_dnn_conv_fwd_fn)(vt_dnn_handle handle, const void *alpha,
                                            vt_dnn_tensor x_desc, const void *x,
                                            vt_dnn_filter w_desc, const void *w, vt_dnn_conv conv,
                                            int algo, void *ws, size_t ws_bytes, const void *beta,
                                            vt_dnn_tensor y_desc, void *y);
typedef vt_dnn_status (*vt_dnn_conv_bwd_data_fn)(vt_dnn_handle handle, const void *alpha,
                                                 vt_dnn_filter w_desc, const void *w,
                                                 vt_dnn_tensor dy_desc, const void *dy,
                                                 vt_dnn_conv conv, int algo, void *ws,
                                                 size_t ws_bytes, const void *beta,
                                                 vt_dnn_tensor dx_desc, void *dx);
typedef vt_dnn_status (*vt_dnn_conv_bwd_filter_fn)(vt_dnn_handle handle, const void *alpha,
                                                   vt_dnn_tensor x_desc, const void *x,
                                                   vt_dnn_tensor dy_desc, const void *dy,
                                                   vt_dnn_conv conv, int algo, void *ws,
                                                   size_t ws_bytes, const void *beta,
                                                   vt_dnn_filter dw_desc, void *dw);

#ifdef __cplusplus
}
#endif

#endif
