/* cuDNN 9 loaded with dlopen (cudnn_load.h), the way nvml.c loads NVML: the functions come from
 * cudnn_abi.h, so no cuDNN header is needed to build. */
#include "cudnn_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

vt_dnn *vt_dnn_open(const char *path, char *why, size_t why_cap)
{
    if (why && why_cap) why[0] = 0;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        say(why, why_cap, "cuDNN could not be loaded: %s", err ? err : path);
        return NULL;
    }
    vt_dnn *d = calloc(1, sizeof *d);
    if (!d) {
        dlclose(lib);
        say(why, why_cap, "cuDNN: out of memory");
        return NULL;
    }
    d->lib = lib;
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
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        /* POSIX's sanctioned way to turn dlsym's object pointer into a function pointer */
        *slot[i] = dlsym(lib, names[i]);
        if (!*slot[i]) {
            say(why, why_cap, "%s has no %s (not cuDNN 9?)", path, names[i]);
            dlclose(lib);
            free(d);
            return NULL;
        }
    }
    d->version = d->get_version();
    if (d->version < 90000 || d->version > 99999) {
        say(why, why_cap, "%s is cuDNN version %zu; the module needs cuDNN 9 (90000..99999)", path,
            d->version);
        dlclose(lib);
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
