/* cuda/cudnn_abi.h, the module's own declarations of cuDNN 9, against cuDNN's cudnn.h: every
 * value and layout it declares, at compile time, and every function pointer type against the
 * real prototype, through a copy of each type with cuDNN's own handle, descriptor, enum and
 * perf types put back (__builtin_types_compatible_p; nothing is linked).  Built only where
 * cudnn.h is installed (tests/meson.build); the module itself never includes it. */
/* the legacy convolution API is marked deprecated in cuDNN 9; it is the one the module uses */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
#include <stddef.h>
#include <stdio.h>

#include "cudnn_abi.h"

#define SAME(ours, theirs)                                                                       \
    _Static_assert((long long)(ours) == (long long)(theirs), #ours " != " #theirs)

SAME(VT_DNN_STATUS_SUCCESS, CUDNN_STATUS_SUCCESS);
SAME(VT_DNN_STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED);
SAME(VT_DNN_DATA_FLOAT, CUDNN_DATA_FLOAT);
SAME(VT_DNN_TENSOR_NCHW, CUDNN_TENSOR_NCHW);
SAME(VT_DNN_CROSS_CORRELATION, CUDNN_CROSS_CORRELATION);
SAME(VT_DNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH);
SAME(VT_DNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH);
SAME(VT_DNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
SAME(VT_DNN_FMA_MATH, CUDNN_FMA_MATH);
SAME(VT_DNN_FWD_ALGO_COUNT, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
SAME(VT_DNN_BWD_DATA_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
SAME(VT_DNN_BWD_FILTER_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
_Static_assert(VT_DNN_MAX_ALGOS >= VT_DNN_FWD_ALGO_COUNT &&
                   VT_DNN_MAX_ALGOS >= VT_DNN_BWD_DATA_ALGO_COUNT &&
                   VT_DNN_MAX_ALGOS >= VT_DNN_BWD_FILTER_ALGO_COUNT,
               "VT_DNN_MAX_ALGOS");
SAME(sizeof(vt_dnn_status), sizeof(cudnnStatus_t));
SAME(sizeof(int), sizeof(cudnnDataType_t));
SAME(sizeof(int), sizeof(cudnnMathType_t));
SAME(sizeof(int), sizeof(cudnnConvolutionFwdAlgo_t));

/* the three perf structs share vt_dnn_algo_perf's layout */
#define PERF(T)                                                                                  \
    SAME(sizeof(vt_dnn_algo_perf), sizeof(T));                                                   \
    SAME(offsetof(vt_dnn_algo_perf, algo), offsetof(T, algo));                                   \
    SAME(offsetof(vt_dnn_algo_perf, status), offsetof(T, status));                               \
    SAME(offsetof(vt_dnn_algo_perf, time), offsetof(T, time));                                   \
    SAME(offsetof(vt_dnn_algo_perf, memory), offsetof(T, memory));                               \
    SAME(offsetof(vt_dnn_algo_perf, determinism), offsetof(T, determinism));                     \
    SAME(offsetof(vt_dnn_algo_perf, math_type), offsetof(T, mathType));                          \
    SAME(offsetof(vt_dnn_algo_perf, reserved), offsetof(T, reserved))
PERF(cudnnConvolutionFwdAlgoPerf_t);
PERF(cudnnConvolutionBwdDataAlgoPerf_t);
PERF(cudnnConvolutionBwdFilterAlgoPerf_t);

/* Function types: ours (cudnn_abi.h, in the same order) with cuDNN's handle, descriptor, enum
 * and perf types put back. */
typedef size_t (*get_version_t)(void);
typedef const char *(*error_string_t)(cudnnStatus_t);
typedef cudnnStatus_t (*create_t)(cudnnHandle_t *);
typedef cudnnStatus_t (*destroy_t)(cudnnHandle_t);
typedef cudnnStatus_t (*set_stream_t)(cudnnHandle_t, cudaStream_t);
typedef cudnnStatus_t (*create_tensor_t)(cudnnTensorDescriptor_t *);
typedef cudnnStatus_t (*destroy_tensor_t)(cudnnTensorDescriptor_t);
typedef cudnnStatus_t (*set_tensor_t)(cudnnTensorDescriptor_t, cudnnDataType_t, int, int, int,
                                      int, int, int, int, int);
typedef cudnnStatus_t (*create_filter_t)(cudnnFilterDescriptor_t *);
typedef cudnnStatus_t (*destroy_filter_t)(cudnnFilterDescriptor_t);
typedef cudnnStatus_t (*set_filter_t)(cudnnFilterDescriptor_t, cudnnDataType_t,
                                      cudnnTensorFormat_t, int, int, int, int);
typedef cudnnStatus_t (*create_conv_t)(cudnnConvolutionDescriptor_t *);
typedef cudnnStatus_t (*destroy_conv_t)(cudnnConvolutionDescriptor_t);
typedef cudnnStatus_t (*set_conv_t)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int,
                                    cudnnConvolutionMode_t, cudnnDataType_t);
typedef cudnnStatus_t (*group_t)(cudnnConvolutionDescriptor_t, int);
typedef cudnnStatus_t (*math_t)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
typedef cudnnStatus_t (*find_fwd_t)(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                    const cudnnFilterDescriptor_t,
                                    const cudnnConvolutionDescriptor_t,
                                    const cudnnTensorDescriptor_t, const int, int *,
                                    cudnnConvolutionFwdAlgoPerf_t *);
typedef cudnnStatus_t (*find_bwd_data_t)(cudnnHandle_t, const cudnnFilterDescriptor_t,
                                         const cudnnTensorDescriptor_t,
                                         const cudnnConvolutionDescriptor_t,
                                         const cudnnTensorDescriptor_t, const int, int *,
                                         cudnnConvolutionBwdDataAlgoPerf_t *);
typedef cudnnStatus_t (*find_bwd_filter_t)(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                           const cudnnTensorDescriptor_t,
                                           const cudnnConvolutionDescriptor_t,
                                           const cudnnFilterDescriptor_t, const int, int *,
                                           cudnnConvolutionBwdFilterAlgoPerf_t *);
typedef cudnnStatus_t (*fwd_t)(cudnnHandle_t, const void *, const cudnnTensorDescriptor_t,
                               const void *, const cudnnFilterDescriptor_t, const void *,
                               const cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t,
                               void *, size_t, const void *, const cudnnTensorDescriptor_t,
                               void *);
typedef cudnnStatus_t (*bwd_data_t)(cudnnHandle_t, const void *, const cudnnFilterDescriptor_t,
                                    const void *, const cudnnTensorDescriptor_t, const void *,
                                    const cudnnConvolutionDescriptor_t,
                                    cudnnConvolutionBwdDataAlgo_t, void *, size_t, const void *,
                                    const cudnnTensorDescriptor_t, void *);
typedef cudnnStatus_t (*bwd_filter_t)(cudnnHandle_t, const void *, const cudnnTensorDescriptor_t,
                                      const void *, const cudnnTensorDescriptor_t, const void *,
                                      const cudnnConvolutionDescriptor_t,
                                      cudnnConvolutionBwdFilterAlgo_t, void *, size_t,
                                      const void *, const cudnnFilterDescriptor_t, void *);

/* The real prototypes have these types (checked by the compiler; nothing is linked) ... */
#define HAS_TYPE(fn, T)                                                                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), T), #fn "'s prototype")
HAS_TYPE(cudnnGetVersion, get_version_t);
HAS_TYPE(cudnnGetErrorString, error_string_t);
HAS_TYPE(cudnnCreate, create_t);
HAS_TYPE(cudnnDestroy, destroy_t);
HAS_TYPE(cudnnSetStream, set_stream_t);
HAS_TYPE(cudnnCreateTensorDescriptor, create_tensor_t);
HAS_TYPE(cudnnDestroyTensorDescriptor, destroy_tensor_t);
HAS_TYPE(cudnnSetTensor4dDescriptorEx, set_tensor_t);
HAS_TYPE(cudnnCreateFilterDescriptor, create_filter_t);
HAS_TYPE(cudnnDestroyFilterDescriptor, destroy_filter_t);
HAS_TYPE(cudnnSetFilter4dDescriptor, set_filter_t);
HAS_TYPE(cudnnCreateConvolutionDescriptor, create_conv_t);
HAS_TYPE(cudnnDestroyConvolutionDescriptor, destroy_conv_t);
HAS_TYPE(cudnnSetConvolution2dDescriptor, set_conv_t);
HAS_TYPE(cudnnSetConvolutionGroupCount, group_t);
HAS_TYPE(cudnnSetConvolutionMathType, math_t);
HAS_TYPE(cudnnFindConvolutionForwardAlgorithm, find_fwd_t);
HAS_TYPE(cudnnFindConvolutionBackwardDataAlgorithm, find_bwd_data_t);
HAS_TYPE(cudnnFindConvolutionBackwardFilterAlgorithm, find_bwd_filter_t);
HAS_TYPE(cudnnConvolutionForward, fwd_t);
HAS_TYPE(cudnnConvolutionBackwardData, bwd_data_t);
HAS_TYPE(cudnnConvolutionBackwardFilter, bwd_filter_t);

/* ... and these types match ours parameter by parameter, up to the handle and descriptor
 * pointers (all pointers to incomplete structs) and the enums (all int-sized, checked above). */
SAME(sizeof(cudnnHandle_t), sizeof(vt_dnn_handle));
SAME(sizeof(cudnnTensorDescriptor_t), sizeof(vt_dnn_tensor));
SAME(sizeof(cudnnFilterDescriptor_t), sizeof(vt_dnn_filter));
SAME(sizeof(cudnnConvolutionDescriptor_t), sizeof(vt_dnn_conv));
SAME(sizeof(cudaStream_t), sizeof(void *));

int main(void)
{
    printf("cudnn_abi_check: cudnn_abi.h agrees with cuDNN %d.%d.%d's cudnn.h\n", CUDNN_MAJOR,
           CUDNN_MINOR, CUDNN_PATCHLEVEL);
    return 0;
}
