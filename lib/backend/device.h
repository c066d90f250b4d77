/* The device layer: what can run a backend, and what a caller asks of it besides the ops.
 *
 * A device is a kind ("cpu", "cuda") and an index.  Each kind has one table (vt_device_iface)
 * that creates its backends and answers for them: pinned host memory, the precision of
 * gemm/conv, memory statistics.  The trainer, the estimator and calibration go through the
 * functions below with a device spec from the user; they never include cuda/ nor test device
 * names.  A new kind of device is one more table in device.c's list.
 *
 * Specs: "cpu"; "cuda" (GPU 0); "cuda:N"; a bare index "N" (the GPU N, as the trainer's device
 * option takes it). */
#ifndef VT_DEVICE_H
#define VT_DEVICE_H

#include <stddef.h>

#include "backend/backend.h"
#include "backend/cuda_device.h" /* vt_gpu_metrics */

typedef enum vt_device_kind {
    VT_DEVICE_KIND_CPU = 0, /* backend memory is host memory */
    VT_DEVICE_KIND_GPU = 1
} vt_device_kind;

/* Precision of gemm/conv.  DEFAULT: the fastest the device keeps accurate enough for training
 * (TF32 tensor ops on CUDA); FP32: plain IEEE fp32 everywhere.  The CPU computes fp32 either
 * way.  BF16: on the CPU where it has AVX512-BF16; on CUDA experimental, refused unless
 * VT_CUDA_BF16=1 (vt_cuda_bf16_wanted), as it has not run on a GPU yet. */
typedef enum vt_device_precision {
    VT_DEVICE_PRECISION_DEFAULT = 0,
    VT_DEVICE_PRECISION_FP32 = 1,
    VT_DEVICE_PRECISION_BF16 = 2 /* bf16 GEMM/convolution operands, fp32 accumulation */
} vt_device_precision;

typedef struct vt_device_iface {
    const char *name;    /* the spec's kind: "cpu", "cuda" (also the backends' ops->name) */
    vt_device_kind kind;
    int max_index;       /* the highest index a spec may name */
    /* A backend on device `index`; VT_ERR_DEVICE with the reason when there is none. */
    vt_status (*backend_create)(vt_backend **out, int index);
    /* Optional (NULL: not offered). */
    void *(*host_alloc)(int index, size_t bytes); /* pinned host memory; NULL + error */
    void (*host_free)(void *p);
    vt_status (*set_precision)(vt_backend *b, vt_device_precision p); /* refuses what the
                                                                          device cannot do */
    /* What computes precision p's products here, for the log ("bf16 products: AMX 32x32"),
     * into buf; returns 1 when p is measured slower than fp32 on this device (buf then says so
     * and what to use), 0 otherwise.  NULL or buf[0] == 0: nothing to say. */
    int (*precision_note)(vt_device_precision p, char *buf, size_t cap);
    /* The experimental graphs of a step's sync-free region (cuda_device.h,
     * vt_backend_cuda_graph_begin / _end); NULL: none (the region runs plainly). */
    int (*graph_begin)(vt_backend *b, const int key[4]);
    vt_status (*graph_end)(vt_backend *b, vt_status region, int *ran);
    void (*memory)(vt_backend *b, size_t *held_bytes, size_t *peak_bytes);
    /* Live figures of device `index`; returns out->have (0: none). */
    unsigned (*metrics)(int index, vt_gpu_metrics *out);
    /* Memory of device `index`: total and what is free for a new allocation now. */
    vt_status (*capacity)(int index, size_t *total_bytes, size_t *avail_bytes);
} vt_device_iface;

typedef struct vt_device {
    const vt_device_iface *iface;
    int index;
} vt_device;

/* Parse a spec.  VT_ERR_OPTION_VALUE naming the spec and the accepted forms when it is none of
 * them.  Nothing is loaded or initialised. */
vt_status vt_device_parse(const char *spec, vt_device *out);
/* The spec's canonical text ("cpu", "cuda:1") into buf. */
void vt_device_name(const vt_device *d, char *buf, size_t cap);
static inline int vt_device_is_gpu(const vt_device *d)
{
    return d->iface->kind == VT_DEVICE_KIND_GPU;
}

/* A backend on the device, at that precision. */
vt_status vt_device_backend(const vt_device *d, vt_device_precision p, vt_backend **out);
/* The device's precision_note (above); buf = "" and 0 when it has none. */
int vt_device_precision_note(const vt_device *d, vt_device_precision p, char *buf, size_t cap);
/* 1 when VT_CUDA_BF16=1 is in the environment: precision=bf16 is then accepted on a GPU. */
int vt_cuda_bf16_wanted(void);
/* Around the sync-free part of a training step (backward and the update): begin returns 1 when
 * the device records the region's ops into a graph (end must follow), 0 to run them plainly;
 * end launches the recording, *ran = 0 when nothing ran and the caller must run the region
 * again plainly (see cuda_device.h).  Devices without graphs: 0, and VT_OK with *ran = 0. */
int vt_device_graph_begin(const vt_device *d, vt_backend *b, const int key[4]);
vt_status vt_device_graph_end(const vt_device *d, vt_backend *b, vt_status region, int *ran);
/* Page-locked host memory for fast, asynchronous uploads to the device: NULL with an error set
 * when the device has none to give (the CPU) or the driver refuses; callers then fall back to
 * ordinary memory.  Free it with vt_device_host_free on the same device (NULL: nothing). */
void *vt_device_host_alloc(const vt_device *d, size_t bytes);
void vt_device_host_free(const vt_device *d, void *p);
/* Bytes the backend's allocator holds from the device and its peak: 1 when the device counts
 * them, else 0 with both zero (the CPU's memory is the process's). */
int vt_device_memory(const vt_device *d, vt_backend *b, size_t *held_bytes, size_t *peak_bytes);
/* Live figures of the device (a GPU's utilisation, memory, power, temperature through NVML):
 * returns out->have, 0 with out zeroed when the device has none to give (the CPU, no NVML, a
 * GPU backend not opened yet).  Never an error.  Each call asks the driver: callers sample at
 * most about once a second. */
unsigned vt_device_metrics(const vt_device *d, vt_gpu_metrics *out);
/* The memory a batch can be sized against: a GPU's total and free bytes (creates the device's
 * context), the host's physical and available memory for the CPU (MemAvailable of
 * /proc/meminfo, else the free pages).  VT_ERR_DEVICE with the reason when unknown. */
vt_status vt_device_capacity(const vt_device *d, size_t *total_bytes, size_t *avail_bytes);

#endif
