/* Public GPU queries: thin wrappers over the CUDA backend's, or "no GPU" in a CPU-only build. */
#include <stdio.h>

#include "backend/backend.h"
#include "vt_config.h"

#if VT_HAVE_CUDA
#include "cuda/cuda_device.h"
#endif

VT_API int vt_device_count(void)
{
#if VT_HAVE_CUDA
    return vt_cuda_device_count();
#else
    return 0;
#endif
}

VT_API vt_status vt_device_info(int device, char *name, size_t name_cap, int *cc_major,
                                int *cc_minor, uint64_t *total_bytes, uint64_t *free_bytes)
{
#if VT_HAVE_CUDA
    size_t total = 0, avail = 0;
    vt_status st = vt_cuda_device_info(device, name, name_cap, cc_major, cc_minor,
                                       total_bytes ? &total : NULL, free_bytes ? &avail : NULL);
    if (st) return st;
    if (total_bytes) *total_bytes = total;
    if (free_bytes) *free_bytes = avail;
    return VT_OK;
#else
    (void)name; (void)name_cap; (void)cc_major; (void)cc_minor; (void)total_bytes;
    (void)free_bytes;
    return vt_fail(VT_ERR_DEVICE, "GPU %d: this build of libvisiontrain has no CUDA support",
                   device);
#endif
}
