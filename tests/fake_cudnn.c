/* A fake cuDNN (libcudnn.so.9) for test_cudnn.c: every function cuda/cudnn.c looks up, each
 * answering CUDNN_STATUS_NOT_SUPPORTED except the version, the error string and the handle's
 * creation.  FAKE_CUDNN_INCOMPLETE builds one without cudnnConvolutionBackwardFilter (a
 * library that is not cuDNN 9, or a cut-down one), FAKE_CUDNN_V8 one that says it is cuDNN
 * 8.9.7. */
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, NOT_SUPPORTED = 3000 };

static int context;

EXPORT size_t cudnnGetVersion(void);
EXPORT const char *cudnnGetErrorString(int status);
EXPORT int cudnnCreate(void **handle);
EXPORT int cudnnDestroy(void *handle);

size_t cudnnGetVersion(void)
{
#ifdef FAKE_CUDNN_V8
    return 8907;
#else
    return 91900;
#endif
}

const char *cudnnGetErrorString(int status)
{
    return status == OK ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_NOT_SUPPORTED (fake)";
}

int cudnnCreate(void **handle)
{
    *handle = &context;
    return OK;
}

int cudnnDestroy(void *handle) { return handle == &context ? OK : NOT_SUPPORTED; }

/* The rest take arguments the loader test never passes: declared without parameters (an
 * unprototyped definition would be old-style C), they only need to exist. */
#define FAKE(name)                                                                               \
    EXPORT int name(void);                                                                       \
    int name(void) { return NOT_SUPPORTED; }

FAKE(cudnnSetStream)
FAKE(cudnnCreateTensorDescriptor)
FAKE(cudnnDestroyTensorDescriptor)
FAKE(cudnnSetTensor4dDescriptorEx)
FAKE(cudnnCreateFilterDescriptor)
FAKE(cudnnDestroyFilterDescriptor)
FAKE(cudnnSetFilter4dDescriptor)
FAKE(cudnnCreateConvolutionDescriptor)
FAKE(cudnnDestroyConvolutionDescriptor)
FAKE(cudnnSetConvolution2dDescriptor)
FAKE(cudnnSetConvolutionGroupCount)
FAKE(cudnnSetConvolutionMathType)
FAKE(cudnnFindConvolutionForwardAlgorithm)
FAKE(cudnnFindConvolutionBackwardDataAlgorithm)
FAKE(cudnnFindConvolutionBackwardFilterAlgorithm)
FAKE(cudnnConvolutionForward)
FAKE(cudnnConvolutionBackwardData)
#ifndef FAKE_CUDNN_INCOMPLETE
FAKE(cudnnConvolutionBackwardFilter)
#endif
