/* NVML, the NVIDIA management library, loaded at run time: the live figures of a GPU
 * (utilisation, memory, power, temperature) for the trainer's progress.  The module never
 * links it: vt_nvml_open dlopens the file it is given ("libnvidia-ml.so.1", the driver's copy),
 * so a machine without it loses these figures and nothing else.  Plain C without CUDA headers,
 * so that tests link it directly and load a fake NVML. */
#ifndef VT_CUDA_NVML_H
#define VT_CUDA_NVML_H

#include <stddef.h>

#include "backend/cuda_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VT_NVML_FILE "libnvidia-ml.so.1"

typedef struct vt_nvml vt_nvml;

/* Load NVML from `path` and initialise it: NULL when the file cannot be loaded, lacks a
 * function used here or fails to initialise; then `why` (cap bytes, may be NULL) says which.
 * Sets no library error (no NVML is not an error, only figures that are absent). */
vt_nvml *vt_nvml_open(const char *path, char *why, size_t why_cap);
/* The figures of the device with PCI bus id `bus_id` ("0000:3b:00.0", as the CUDA runtime
 * gives it), or, when bus_id is NULL or NVML does not know it, of NVML's device `index`.
 * Each figure NVML refuses (not supported, no permission) is left out.  Returns out->have
 * (0 when n is NULL or the device is unknown).  Any thread. */
unsigned vt_nvml_sample(vt_nvml *n, const char *bus_id, int index, vt_gpu_metrics *out);
/* Shut NVML down and unload it (NULL: nothing). */
void vt_nvml_close(vt_nvml *n);

#ifdef __cplusplus
}
#endif

#endif
