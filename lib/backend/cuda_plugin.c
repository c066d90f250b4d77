/* The core's side of the CUDA module (cuda_device.h, "THE PLUGIN"): the functions declared there,
 * forwarding to libvisiontrain-cuda.so, which is loaded on the first call that needs a
 * GPU.  When the module cannot be loaded (or the build has no CUDA), there is no GPU and every
 * call that needs one fails with VT_ERR_DEVICE and the reason. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda_device.h"
#include "vt_config.h"

#if VT_HAVE_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>
#endif

/* Set once, by load(), with release order: a non-NULL value means the module is in and its
 * table checked.  Functions that take a backend read it without loading anything: a backend
 * made by the module implies the module is loaded, and no module means no CUDA backend. */
static _Atomic(const vt_cuda_plugin *) loaded;
#if VT_HAVE_CUDA
/* Why there is no module (written by load(); read only after pthread_once). */
static char why[VT_ERRMSG_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Load and check the module at `path`; 0 on success, else -1 with `why` set. */
static int open_module(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        snprintf(why, sizeof why, "the CUDA backend %s could not be loaded: %s", path,
                 err ? err : "unknown error");
        return -1;
    }
    vt_cuda_plugin_entry_fn entry;
    /* POSIX's sanctioned way to turn dlsym's object pointer into a function pointer */
    *(void **)&entry = dlsym(h, VT_CUDA_PLUGIN_ENTRY);
    if (!entry) {
        snprintf(why, sizeof why, "%s is not a libvisiontrain CUDA module (no %s)", path,
                 VT_CUDA_PLUGIN_ENTRY);
        dlclose(h);
        return -1;
    }
    const vt_cuda_plugin *p = entry(vt_failv);
    if (!p || p->version != VT_CUDA_PLUGIN_VERSION || p->lib_version != VT_VERSION_NUMBER ||
        p->table_size != sizeof *p || p->ops_size != sizeof(vt_backend_ops)) {
        snprintf(why, sizeof why,
                 "%s belongs to another build of libvisiontrain (module interface %u, version "
                 "%u; this library: %u, %u): install the module built with this library", path,
                 p ? p->version : 0, p ? p->lib_version : 0, VT_CUDA_PLUGIN_VERSION,
                 (unsigned)VT_VERSION_NUMBER);
        dlclose(h);
        return -1;
    }
    atomic_store_explicit(&loaded, p, memory_order_release);
    return 0;
}

/* The folder (with a trailing '/') of the binary that holds this code; "" when unknown. */
static void own_folder(char *dir, size_t cap)
{
    Dl_info info;
    dir[0] = 0;
    if (!dladdr((void *)&own_folder, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    char raw[4096], real[PATH_MAX];
    size_t n = (size_t)(slash - info.dli_fname);
    if (n == 0 || n >= sizeof raw) return;
    memcpy(raw, info.dli_fname, n);
    raw[n] = 0;
    /* absolute and without "..": a program's own name may be relative ("./prog") */
    const char *use = realpath(raw, real) ? real : raw;
    if (strlen(use) + 2 <= cap) snprintf(dir, cap, "%s/", use);
}

static void load(void)
{
    const char *env = secure_getenv("VT_CUDA_PLUGIN"); /* ignored in set-user-ID programs */
    if (env && *env) {
        if (open_module(env) != 0) {
            char tmp[VT_ERRMSG_MAX];
            snprintf(tmp, sizeof tmp, "%.*s (the path is VT_CUDA_PLUGIN's)",
                     (int)sizeof tmp - 40, why);
            memcpy(why, tmp, sizeof why);
        }
        return;
    }
    char dir[4096], path[4096 + sizeof VT_CUDA_PLUGIN_FILE];
    own_folder(dir, sizeof dir);
    if (dir[0]) {
        snprintf(path, sizeof path, "%s%s", dir, VT_CUDA_PLUGIN_FILE);
        if (access(path, F_OK) == 0) {
            open_module(path);
            return;
        }
    }
    /* the dynamic linker's search path; when that finds the file but cannot load it (a CUDA
     * library missing), the reason is the answer */
    if (open_module(VT_CUDA_PLUGIN_FILE) == 0) return;
    static const char not_found[] = "could not be loaded: " VT_CUDA_PLUGIN_FILE ":";
    if (!strstr(why, not_found)) return;
    snprintf(path, sizeof path, "%s/%s", VT_PLUGIN_DIR, VT_CUDA_PLUGIN_FILE);
    if (access(path, F_OK) == 0) {
        open_module(path);
        return;
    }
    snprintf(why, sizeof why,
             "the CUDA backend (%s) was not found: looked in %.600s, the library search path "
             "and %s; set VT_CUDA_PLUGIN to its path", VT_CUDA_PLUGIN_FILE,
             dir[0] ? dir : "(?)", VT_PLUGIN_DIR);
}
#endif

/* The module, loading it on first use; NULL (with `why` set) when there is none. */
static const vt_cuda_plugin *module(void)
{
#if VT_HAVE_CUDA
    pthread_once(&once, load);
#endif
    return atomic_load_explicit(&loaded, memory_order_acquire);
}

/* Why module() returned NULL. */
static const char *reason(void)
{
#if VT_HAVE_CUDA
    return why;
#else
    return "this build of libvisiontrain has no CUDA support; use device=cpu or rebuild with "
           "-Dcuda=enabled";
#endif
}

static const vt_cuda_plugin *module_if_loaded(void)
{
    return atomic_load_explicit(&loaded, memory_order_acquire);
}

int vt_cuda_device_count(void)
{
    const vt_cuda_plugin *p = module();
    return p ? p->device_count() : 0;
}

vt_status vt_cuda_device_info(int device, char *name, size_t name_cap, int *cc_major,
                              int *cc_minor, size_t *total_mem, size_t *free_mem)
{
    const vt_cuda_plugin *p = module();
    if (!p) return vt_fail(VT_ERR_DEVICE, "GPU %d: %s", device, reason());
    return p->device_info(device, name, name_cap, cc_major, cc_minor, total_mem, free_mem);
}

vt_status vt_backend_cuda_create(vt_backend **out, int device)
{
    if (out) *out = NULL;
    const vt_cuda_plugin *p = module();
    if (!p) return vt_fail(VT_ERR_DEVICE, "device=%d: %s", device, reason());
    vt_status st = p->backend_create(out, device);
    if (st != VT_OK || !out || !*out) return st;
    /* The module's table has the core's size (checked at load); a required op left NULL (a
     * module built from other sources) would crash the first layer that calls it. */
    const char *missing = vt_backend_missing_op((*out)->ops);
    if (missing) {
        vt_backend_destroy(*out);
        *out = NULL;
        return vt_fail(VT_ERR_DEVICE, "device=%d: the CUDA module's backend has no %s op", device,
                       missing);
    }
    return VT_OK;
}

void vt_backend_cuda_set_fp32(vt_backend *b, int plain_fp32)
{
    const vt_cuda_plugin *p = module_if_loaded();
    if (p) p->set_fp32(b, plain_fp32);
}

void vt_backend_cuda_memory(vt_backend *b, size_t *held_bytes, size_t *peak_bytes)
{
    const vt_cuda_plugin *p = module_if_loaded();
    if (p) p->memory(b, held_bytes, peak_bytes);
    else {
        if (held_bytes) *held_bytes = 0;
        if (peak_bytes) *peak_bytes = 0;
    }
}

void vt_backend_cuda_set_conv_cap(vt_backend *b, size_t bytes)
{
    const vt_cuda_plugin *p = module_if_loaded();
    if (p) p->set_conv_cap(b, bytes);
}

void *vt_cuda_host_alloc(int device, size_t bytes)
{
    const vt_cuda_plugin *p = module();
    if (!p) {
        vt_fail(VT_ERR_DEVICE, "pinned memory for GPU %d: %s", device, reason());
        return NULL;
    }
    return p->host_alloc(device, bytes);
}

void vt_cuda_host_free(void *ptr)
{
    const vt_cuda_plugin *p = module_if_loaded();
    if (p) p->host_free(ptr); /* memory from vt_cuda_host_alloc implies the module */
}

unsigned vt_cuda_gpu_metrics(int device, vt_gpu_metrics *out)
{
    memset(out, 0, sizeof *out);
    const vt_cuda_plugin *p = module_if_loaded(); /* a GPU backend implies the module */
    return p && p->gpu_metrics ? p->gpu_metrics(device, out) : 0;
}

void vt_backend_cuda_conv_info(vt_backend *b, vt_cuda_conv_info *out)
{
    memset(out, 0, sizeof *out);
    const vt_cuda_plugin *p = module_if_loaded(); /* a GPU backend implies the module */
    if (p && p->conv_info) p->conv_info(b, out);
}

void vt_backend_cuda_set_bf16(vt_backend *b, int on)
{
    const vt_cuda_plugin *p = module_if_loaded();
    if (p && p->set_bf16) p->set_bf16(b, on);
}

int vt_backend_cuda_graph_begin(vt_backend *b, const int key[4])
{
    const vt_cuda_plugin *p = module_if_loaded(); /* a GPU backend implies the module */
    return p && p->graph_begin ? p->graph_begin(b, key) : 0;
}

vt_status vt_backend_cuda_graph_end(vt_backend *b, vt_status region, int *ran)
{
    *ran = 0;
    const vt_cuda_plugin *p = module_if_loaded();
    return p && p->graph_end ? p->graph_end(b, region, ran) : VT_OK;
}

void vt_backend_cuda_graph_info(vt_backend *b, vt_cuda_graph_info *out)
{
    memset(out, 0, sizeof *out);
    const vt_cuda_plugin *p = module_if_loaded();
    if (p && p->graph_info) p->graph_info(b, out);
}

vt_status vt_cuda_nccl_unique_id(unsigned char *id)
{
    const vt_cuda_plugin *p = module();
    if (!p) return vt_fail(VT_ERR_DEVICE, "GPU ranks: %s", reason());
    return p->nccl_unique_id(id);
}

vt_status vt_cuda_nccl_open(struct vt_comm **out, vt_backend *be, const unsigned char *id,
                            int rank, int size, int local_rank, int local_size, double timeout_s)
{
    *out = NULL;
    const vt_cuda_plugin *p = module_if_loaded();
    if (!p) return vt_fail(VT_ERR_DEVICE, "GPU ranks: %s", reason());
    return p->nccl_open(out, be, id, rank, size, local_rank, local_size, timeout_s);
}
