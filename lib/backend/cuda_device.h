/* Internal C-callable queries and settings of the CUDA backend (cuda/).  Plain C: callers
 * (trainer, calibration, tests, benchmarks) include it without any CUDA header.  Nothing here is
 * exported from the shared library (hidden visibility; only the public API is).
 *
 * THE PLUGIN.  The CUDA backend is built as a separate module, libvisiontrain-cuda.so (the .cu
 * files and cuda/plugin.c, linked with the CUDA runtime and cuBLAS); the core library does not link
 * the CUDA libraries at all.  Every function below exists in both: the real one in the module,
 * and in the core (lib/backend/cuda_plugin.c) one that loads the module on the first call that
 * needs a GPU and forwards to it.  So libvisiontrain loads and trains on the CPU on a machine
 * without the CUDA libraries, and a process that never asks for a GPU never maps them (cuBLAS
 * alone is ~0.7 GB of libraries).  Where the module is looked for, in order:
 *   1. $VT_CUDA_PLUGIN, when set and not empty: that file and nothing else;
 *   2. the folder of the binary holding the core (libvisiontrain.so's own folder; for a
 *      program linked with the static library, the program's folder);
 *   3. the dynamic linker's search path (LD_LIBRARY_PATH, ld.so.cache, ...);
 *   4. the library folder it was installed to (VT_PLUGIN_DIR in vt_config.h).
 * The first file found is used; if it cannot be loaded (a CUDA library missing, another build
 * of libvisiontrain) no GPU is available, and every call that needs one says why.  The module
 * is loaded at most once per process and never unloaded (backends point into it).  In a build
 * without CUDA the core's functions answer "no GPU" the same way, without looking. */
#ifndef VT_CUDA_DEVICE_H
#define VT_CUDA_DEVICE_H

#include <stdarg.h>
#include <stddef.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA backend on device `device`: VT_ERR_DEVICE (with the reason) when there is no such
 * device, no driver, or no loadable CUDA module. */
vt_status vt_backend_cuda_create(vt_backend **out, int device);

/* Number of CUDA devices; 0 when there is no driver, no GPU or no loadable CUDA module (never an
 * error, never prints).  Calling it loads the module and initialises the CUDA runtime in this
 * process, so call it only when a device is actually wanted. */
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

/* precision=bf16 (EXPERIMENTAL: not yet run on a GPU; the device layer asks for it only with
 * VT_CUDA_BF16=1): on, every product (convolutions, linear layers) takes bf16 copies of its
 * operands and accumulates in fp32 (cuBLAS's CUBLAS_COMPUTE_32F); activations, weights,
 * gradients, optimizer state, batch-norm statistics and losses stay fp32; the convolutions run
 * on im2col (not cuDNN).  Off: TF32 or fp32 as vt_backend_cuda_set_fp32 says.  Does nothing
 * when b is not a CUDA backend. */
void vt_backend_cuda_set_bf16(vt_backend *b, int on);

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

/* What runs a CUDA backend's convolutions.  im2col + cuBLAS always; with VT_CUDNN=1 in the
 * environment when the backend is created, and libcudnn.so.9 loaded, cuDNN 9 (EXPERIMENTAL:
 * it has not run on a GPU in this project yet) for the passes it takes, the others on im2col.
 * Counts are of passes (a forward, a backward data, a backward filter) since creation. */
typedef struct vt_cuda_conv_info {
    int cudnn;                        /* 1: cuDNN loaded and on for this backend */
    unsigned long long cudnn_passes;  /* passes cuDNN ran */
    unsigned long long im2col_passes; /* passes im2col ran while cuDNN was on */
    unsigned shapes, shapes_cudnn;    /* shapes planned; those with a pass on cuDNN */
    char engine[256];                 /* one line: the engine, its version, or why not cuDNN */
    char last_plan[256];              /* the last shape planned and each pass's algorithm */
} vt_cuda_conv_info;
/* Fills *out; for a backend that is not CUDA's (or no module), zeros and engine "". */
void vt_backend_cuda_conv_info(vt_backend *b, vt_cuda_conv_info *out);

/* The experimental CUDA graphs of the training step (EXPERIMENTAL: not yet run on a GPU; on
 * only with VT_CUDA_GRAPHS=1 in the environment when the backend is made; cuda/graph.cu).  The
 * trainer brackets the sync-free part of a step (backward and the optimizer's update) with
 * begin and end:
 *   begin(b, key): 1 when the backend's stream now records instead of running (the caller then
 *     issues the region's ops as usual and must call end), 0 to run the region plainly (graphs
 *     off or given up, or the key still warming up: cuda/graph_plan.h).  key: what fixes the
 *     region's shapes (batch, height, width, frozen prefix).  Never an error.
 *   end(b, region, &ran): ends the recording, makes or updates the key's executable graph and
 *     launches it: *ran = 1.  *ran = 0 when nothing ran (the recording failed, or `region`, the
 *     status of the region's ops, is not VT_OK): the caller runs the region again plainly, with
 *     the host state it had at begin; graphs are then off for the backend's life (info says
 *     why).  Returns VT_OK unless the backend is unusable.
 * For a backend that is not CUDA's (or no module): begin 0; end VT_OK with *ran = 0. */
typedef struct vt_cuda_graph_info {
    int enabled;                  /* VT_CUDA_GRAPHS=1 when the backend was made */
    int active;                   /* enabled and not given up */
    int warmup;                   /* plain steps of a key before its capture */
    unsigned long long plain;     /* regions run plainly (warm-up, off, fallbacks) */
    unsigned long long captured;  /* regions recorded into a new executable graph and launched */
    unsigned long long replayed;  /* regions recorded, updated into the key's graph, launched */
    unsigned long long reinstantiated, evicted, failed;
    char state[160];              /* "" or why graphs are off */
} vt_cuda_graph_info;
int vt_backend_cuda_graph_begin(vt_backend *b, const int key[4]);
vt_status vt_backend_cuda_graph_end(vt_backend *b, vt_status region, int *ran);
void vt_backend_cuda_graph_info(vt_backend *b, vt_cuda_graph_info *out);

/* Live figures of a GPU from NVML (the NVIDIA management library, libnvidia-ml.so.1, which
 * the module loads with dlopen on the first request: cuda/nvml.c).  `have` says which fields
 * were read (VT_GPU_HAVE_* bits); 0 when NVML or the device cannot answer. */
enum {
    VT_GPU_HAVE_UTIL = 1u,
    VT_GPU_HAVE_MEMORY = 2u,
    VT_GPU_HAVE_POWER = 4u,
    VT_GPU_HAVE_TEMP = 8u
};
typedef struct vt_gpu_metrics {
    unsigned have;
    double util_pct;           /* percent of the last sample period a kernel ran */
    double mem_used_bytes;     /* by every process on the device */
    double mem_total_bytes;
    double power_w;
    double temp_c;
} vt_gpu_metrics;

/* The figures of CUDA device `device` (the CUDA runtime's numbering, matched to NVML's by PCI
 * bus id).  Returns out->have; never an error, never loads the module (no module: 0). */
unsigned vt_cuda_gpu_metrics(int device, vt_gpu_metrics *out);

/* The NCCL engine of GPU ranks (cuda/nccl_comm.cu; NOT YET RUN ON GPUs), for lib/dist/comm.c.
 * NCCL (libnccl.so.2, 2.12 or newer) is loaded with dlopen on the first call ($VT_NCCL_LIBRARY
 * picks the file).
 *   unique_id: rank 0's NCCL id (VT_NCCL_ID_BYTES = 128 bytes into id), which the caller hands
 *     to every rank; VT_ERR_UNSUPPORTED with why when NCCL cannot be loaded.
 *   open: this rank's communicator over be's device and stream (*out, destroyed with
 *     vt_comm_destroy), collective over the `size` ranks with the same id; each failure or a
 *     wait past timeout_s seconds ends it with VT_ERR_IO (comm.h's contract).
 * Without the module (or CUDA): VT_ERR_DEVICE with the reason. */
struct vt_comm;
#define VT_NCCL_ID_BYTES 128
vt_status vt_cuda_nccl_unique_id(unsigned char *id);
vt_status vt_cuda_nccl_open(struct vt_comm **out, vt_backend *be, const unsigned char *id,
                            int rank, int size, int local_rank, int local_size,
                            double timeout_s);

/* ---- the boundary between the core and the module ------------------------------------------ */

#define VT_CUDA_PLUGIN_FILE "libvisiontrain-cuda.so"
#define VT_CUDA_PLUGIN_ENTRY "vt_cuda_plugin_entry"
/* Bump when this table, vt_backend_ops or anything else both sides share changes meaning. */
#define VT_CUDA_PLUGIN_VERSION 5u

/* What the module hands the core: its identity (checked before anything is called) and the
 * real functions declared above. */
typedef struct vt_cuda_plugin {
    unsigned version;    /* VT_CUDA_PLUGIN_VERSION of the module's build */
    unsigned lib_version; /* VT_VERSION_NUMBER of the module's build */
    unsigned table_size; /* sizeof(vt_cuda_plugin) */
    unsigned ops_size;   /* sizeof(vt_backend_ops) */
    int (*device_count)(void);
    vt_status (*device_info)(int device, char *name, size_t name_cap, int *cc_major,
                             int *cc_minor, size_t *total_mem, size_t *free_mem);
    vt_status (*backend_create)(vt_backend **out, int device);
    void (*set_fp32)(vt_backend *b, int plain_fp32);
    void (*memory)(vt_backend *b, size_t *held_bytes, size_t *peak_bytes);
    void (*set_conv_cap)(vt_backend *b, size_t bytes);
    void *(*host_alloc)(int device, size_t bytes);
    void (*host_free)(void *p);
    unsigned (*gpu_metrics)(int device, vt_gpu_metrics *out);
    void (*conv_info)(vt_backend *b, vt_cuda_conv_info *out);
    void (*set_bf16)(vt_backend *b, int on);
    int (*graph_begin)(vt_backend *b, const int key[4]);
    vt_status (*graph_end)(vt_backend *b, vt_status region, int *ran);
    void (*graph_info)(vt_backend *b, vt_cuda_graph_info *out);
    vt_status (*nccl_unique_id)(unsigned char *id);
    vt_status (*nccl_open)(struct vt_comm **out, vt_backend *be, const unsigned char *id,
                           int rank, int size, int local_rank, int local_size, double timeout_s);
} vt_cuda_plugin;

/* The module's one exported symbol (VT_CUDA_PLUGIN_ENTRY).  `failv` is the core's vt_failv: the
 * module's vt_fail passes its arguments on, so errors raised inside the module reach the
 * caller's vt_last_error().  Returns the module's table (static, never freed). */
typedef vt_status (*vt_failv_fn)(vt_status status, const char *fmt, va_list ap);
typedef const vt_cuda_plugin *(*vt_cuda_plugin_entry_fn)(vt_failv_fn failv);

#ifdef __cplusplus
}
#endif

#endif
