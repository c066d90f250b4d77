/* cuDNN 9, loaded at run time for the experimental cuDNN convolutions (cudnn_conv.cu).  As
 * NVML (nvml.h): the module never links it; vt_dnn_open dlopens the file and looks up the few
 * functions of cudnn_abi.h, so a machine without libcudnn.so.9 (or with one lacking a
 * function, or another major version) runs the im2col + cuBLAS convolutions as before.  Plain
 * C without CUDA headers, so that tests link it directly and load fake cuDNNs
 * (tests/fake_cudnn.c).
 *
 * OFF by default: only VT_CUDNN=1 in the environment turns it on, because no GPU has run it
 * yet (docs/gpu.md).  VT_CUDNN_LIBRARY=/path/libcudnn.so.9 picks the file to load. */
#ifndef VT_CUDA_CUDNN_H
#define VT_CUDA_CUDNN_H

#include <stddef.h>

#include "cudnn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VT_DNN_FILE "libcudnn.so.9"

/* The loaded library: its version (cudnnGetVersion: 91900 for 9.19.0) and its functions. */
typedef struct vt_dnn {
    void *lib;
    size_t version;
    vt_dnn_get_version_fn get_version;
    vt_dnn_get_error_string_fn error_string;
    vt_dnn_create_fn create;
    vt_dnn_destroy_fn destroy;
    vt_dnn_set_stream_fn set_stream;
    vt_dnn_create_tensor_fn create_tensor;
    vt_dnn_destroy_tensor_fn destroy_tensor;
    vt_dnn_set_tensor_4d_ex_fn set_tensor_4d_ex;
    vt_dnn_create_filter_fn create_filter;
    vt_dnn_destroy_filter_fn destroy_filter;
    vt_dnn_set_filter_4d_fn set_filter_4d;
    vt_dnn_create_conv_fn create_conv;
    vt_dnn_destroy_conv_fn destroy_conv;
    vt_dnn_set_conv_2d_fn set_conv_2d;
    vt_dnn_set_conv_group_count_fn set_conv_group_count;
    vt_dnn_set_conv_math_type_fn set_conv_math_type;
    vt_dnn_find_fwd_fn find_fwd;
    vt_dnn_find_bwd_data_fn find_bwd_data;
    vt_dnn_find_bwd_filter_fn find_bwd_filter;
    vt_dnn_conv_fwd_fn conv_fwd;
    vt_dnn_conv_bwd_data_fn conv_bwd_data;
    vt_dnn_conv_bwd_filter_fn conv_bwd_filter;
} vt_dnn;

/* Load cuDNN from `path`: NULL when the file cannot be loaded, lacks a function used here or
 * is not cuDNN 9 (cudnnGetVersion outside 90000..99999); then `why` (cap bytes, may be NULL)
 * says which.  Sets no library error: without cuDNN the convolutions run on im2col. */
vt_dnn *vt_dnn_open(const char *path, char *why, size_t why_cap);
/* Unload (NULL: nothing). */
void vt_dnn_close(vt_dnn *d);

/* Does the environment ask for cuDNN?  Only VT_CUDNN=1 does. */
int vt_dnn_wanted(void);
/* The library for this process: loaded on the first call (from $VT_CUDNN_LIBRARY when set and
 * not empty, else VT_DNN_FILE through the dynamic linker's path), kept until the process ends.
 * NULL when it cannot be loaded; then *why (may be NULL) points at the reason, valid for the
 * process.  Thread-safe. */
const vt_dnn *vt_dnn_shared(const char **why);

#ifdef __cplusplus
}
#endif

#endif
