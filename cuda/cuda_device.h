/* Internal C-callable queries and settings of the CUDA backend (cuda/).  Plain C: callers
 * (trainer, tests, the CLI's device listing) include it without any CUDA header.  Nothing here is
 * exported from the shared library (hidden visibility; only the public API is). */
#ifndef VT_CUDA_DEVICE_H
#define VT_CUDA_DEVICE_H

#include <stddef.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices; 0 when there is no driver or no GPU (never an error, never prints).
 * Calling it initialises the CUDA runtime in this process, so call it only when a device is
 * actually wanted. */
int vt_cuda_device_count(void);

/* Name (truncated to name_cap-1 bytes, NUL-terminated), compute capability and memory of a
 * device.  Any out-pointer may be NULL.  Asking for free memory creates the device's primary
 * context.  VT_ERR_DEVICE with a message when the device does not exist or the driver fails. */
vt_status vt_cuda_device_info(int device, char *name, size_t name_cap, int *cc_major,
                              int *cc_minor, size_t *total_mem, size_t *free_mem);

/* Precision of gemm/conv: TF32 tensor-op math (plain_fp32 == 0, the default of a new backend) or
 * plain IEEE fp32 (plain_fp32 != 0, the trainer's precision=fp32).  Does nothing when b is not a
 * CUDA backend. */
void vt_backend_cuda_set_fp32(vt_backend *b, int plain_fp32);

/* Bytes the backend's caching allocator holds from the device (in use + cached) and its peak,
 * for logs and benchmarks.  Zeros when b is not a CUDA backend. */
void vt_backend_cuda_memory(vt_backend *b, size_t *held_bytes, size_t *peak_bytes);

/* Page-locked ("pinned") host memory, usable by every device: uploads from it are DMA at full
 * speed and truly asynchronous (so the caller must not rewrite it before the stream has passed
 * the copy).  Allocated with `device` current (the caller's current device is restored), so
 * no other device's context is created.  NULL with an error set when the driver refuses (no
 * GPU, too much pinned memory); callers then fall back to ordinary memory.
 * vt_cuda_host_free(NULL) does nothing.  Any thread. */
void *vt_cuda_host_alloc(int device, size_t bytes);
void vt_cuda_host_free(void *p);

/* Cap the im2col buffer of a convolution at `bytes` (0: the default, 256 MiB) so that tests can
 * exercise the batch-chunked path on small shapes.  Query conv_workspace after setting it. */
void vt_backend_cuda_set_conv_cap(vt_backend *b, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
