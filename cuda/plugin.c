/* The CUDA module's entry point and its side of the error channel (see cuda_device.h, "THE
 * PLUGIN").  The module's code reports errors with vt_fail like the rest of the library; here
 * vt_fail hands its arguments to the core's vt_failv, which sets the thread-local error the
 * caller reads.  The module has no other link to the core. */
#include <pthread.h>
#include <stdarg.h>

#include <cuda_runtime_api.h>

#include "backend/cuda_device.h"
#include "nvml.h"

static vt_failv_fn core_failv;

vt_status vt_fail(vt_status status, const char *fmt, ...)
{
    if (!core_failv) return status;
    va_list ap;
    va_start(ap, fmt);
    vt_status st = core_failv(status, fmt, ap);
    va_end(ap);
    return st;
}

/* NVML, loaded on the first request for a GPU's figures and kept for the process (NULL when
 * it cannot be loaded: the figures are then absent). */
static vt_nvml *nvml;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

static void nvml_load(void)
{
    nvml = vt_nvml_open(VT_NVML_FILE, NULL, 0);
}

/* NVML numbers GPUs its own way (all of them, PCI order); the runtime's device is found by
 * its PCI bus id, and by the same index only when the runtime cannot name the bus. */
static unsigned gpu_metrics(int device, vt_gpu_metrics *out)
{
    pthread_once(&nvml_once, nvml_load);
    char bus[32];
    int named = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device) == cudaSuccess;
    return vt_nvml_sample(nvml, named ? bus : NULL, named ? -1 : device, out);
}

static const vt_cuda_plugin table = {
    VT_CUDA_PLUGIN_VERSION,
    VT_VERSION_NUMBER,
    sizeof(vt_cuda_plugin),
    sizeof(vt_backend_ops),
    vt_cuda_device_count,
    vt_cuda_device_info,
    vt_backend_cuda_create,
    vt_backend_cuda_set_fp32,
    vt_backend_cuda_memory,
    vt_backend_cuda_set_conv_cap,
    vt_cuda_host_alloc,
    vt_cuda_host_free,
    gpu_metrics,
    vt_backend_cuda_conv_info,
    vt_backend_cuda_set_bf16,
    vt_backend_cuda_graph_begin,
    vt_backend_cuda_graph_end,
    vt_backend_cuda_graph_info,
    vt_cuda_nccl_unique_id,
    vt_cuda_nccl_open,
};

/* Called once per process by the core, before anything else of the module (under the core's
 * pthread_once), so the plain store to core_failv is seen by every later call. */
__attribute__((visibility("default"))) const vt_cuda_plugin *vt_cuda_plugin_entry(vt_failv_fn failv)
{
    core_failv = failv;
    return &table;
}
