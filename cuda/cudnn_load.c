/* cuDNN 9 loaded with dlopen (cudnn_load.h), the way nvml.c loads NVML: the functions come from
 * cudnn_abi.h, so no cuDNN header is needed to build. */
#include "cudnn_load.h"

#include "dl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

vt_dnn *vt_dnn_open(const char *path, char *why, size_t why_cap)
{
    vt_dnn *d = calloc(1, sizeof *d);
    if (!d) {
        vt_dl_say(why, why_cap, "cuDNN: out of memory");
        return NULL;
    }
    static const char *const names[] = {
        "cudnnGetVersion", "cudnnGetErrorString", "cudnnCreate", "cudnnDestroy",
        "cudnnSetStream", "cudnnCreateTensorDescriptor", "cudnnDestroyTensorDescriptor",
        "cudnnSetTensor4dDescriptorEx", "cudnnCreateFilterDescriptor",
        "cudnnDestroyFilterDescriptor", "cudnnSetFilter4dDescriptor",
        "cudnnCreateConvolutionDescriptor", "cudnnDestroyConvolutionDescriptor",
        "cudnnSetConvolution2dDescriptor", "cudnnSetConvolutionGroupCount",
        "cudnnSetConvolutionMathType", "cudnnFindConvolutionForwardAlgorithm",
        "cudnnFindConvolutionBackwardDataAlgorithm",
        "cudnnFindConvolutionBackwardFilterAlgorithm", "cudnnConvolutionForward",
        "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter"};
    void **slot[] = {(void **)&d->get_version, (void **)&d->error_string, (void **)&d->create,
                     (void **)&d->destroy, (void **)&d->set_stream, (void **)&d->create_tensor,
                     (void **)&d->destroy_tensor, (void **)&d->set_tensor_4d_ex,
                     (void **)&d->create_filter, (void **)&d->destroy_filter,
                     (void **)&d->set_filter_4d, (void **)&d->create_conv,
                     (void **)&d->destroy_conv, (void **)&d->set_conv_2d,
                     (void **)&d->set_conv_group_count, (void **)&d->set_conv_math_type,
                     (void **)&d->find_fwd, (void **)&d->find_bwd_data,
                     (void **)&d->find_bwd_filter, (void **)&d->conv_fwd,
                     (void **)&d->conv_bwd_data, (void **)&d->conv_bwd_filter};
    _Static_assert(sizeof names / sizeof names[0] == sizeof slot / sizeof slot[0],
                   "one slot per name");
    d->lib = vt_dl_open(path, "cuDNN", names, slot, sizeof names / sizeof names[0],
                        "not cuDNN 9?", why, why_cap);
    if (!d->lib) {
        free(d);
        return NULL;
    }
    d->version = d->get_version();
    if (d->version < 90000 || d->version > 99999) {
        vt_dl_say(why, why_cap,
                  "%s is cuDNN version %zu; the module needs cuDNN 9 (90000..99999)", path,
                  d->version);
        dlclose(d->lib);
        free(d);
        return NULL;
    }
    return d;
}

void vt_dnn_close(vt_dnn *d)
{
    if (!d) return;
    dlclose(d->lib);
    free(d);
}

int vt_dnn_wanted(void)
{
    const char *v = getenv("VT_CUDNN");
    return v && strcmp(v, "1") == 0;
}

static vt_dnn *shared_dnn;
static char shared_why[512];
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_load(void)
{
    const char *path = getenv("VT_CUDNN_LIBRARY");
    if (!path || !*path) path = VT_DNN_FILE;
    shared_dnn = vt_dnn_open(path, shared_why, sizeof shared_why);
}

const vt_dnn *vt_dnn_shared(const char **why)
{
    pthread_once(&shared_once, shared_load);
    if (why) *why = shared_dnn ? "" : shared_why;
    return shared_dnn;
}
