/* Public GPU queries: thin wrappers over the CUDA module's (cuda_device.h), which answer
 * "no GPU", with the reason, when there is no module or the build has no CUDA. */
#include "backend/backend.h"
#include "backend/gemm.h"
#include "backend/cuda_device.h"

VT_API const char *vt_cpu_kernels(void) { return vt_sgemm_kernels(); }

VT_API int vt_device_count(void)
{
    return vt_cuda_device_count();
}

VT_API vt_status vt_device_info(int device, char *name, size_t name_cap, int *cc_major,
                                int *cc_minor, uint64_t *total_bytes, uint64_t *free_bytes)
{
    size_t total = 0, avail = 0;
    vt_status st = vt_cuda_device_info(device, name, name_cap, cc_major, cc_minor,
                                       total_bytes ? &total : NULL, free_bytes ? &avail : NULL);
    if (st) return st;
    if (total_bytes) *total_bytes = total;
    if (free_bytes) *free_bytes = avail;
    return VT_OK;
}
