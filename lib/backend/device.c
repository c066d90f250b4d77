/* The device layer (device.h): one table per kind of device, and the public GPU queries, thin
 * wrappers over the CUDA module's (cuda_device.h), which answer "no GPU", with the reason,
 * when there is no module or the build has no CUDA. */
#include "backend/device.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buffer.h"
#include "backend/cpu_impl.h"
#include "backend/cuda_device.h"
#include "backend/gemm.h"

/* ---- the CPU ------------------------------------------------------------------------------ */

static vt_status cpu_backend_create(vt_backend **out, int index)
{
    (void)index;
    return vt_backend_cpu_create(out, 0); /* every online processor */
}

/* Host memory: the physical total, and what the kernel reports as available for new
 * allocations without swapping (MemAvailable, Linux 3.14+), else the free pages. */
static vt_status cpu_capacity(int index, size_t *total_bytes, size_t *avail_bytes)
{
    (void)index;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return vt_fail(VT_ERR_DEVICE, "the host's memory size is unknown (sysconf)");
    *total_bytes = (size_t)pages * (size_t)psz;
    long long kib = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        while (kib < 0 && fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kib) != 1) kib = -1;
        fclose(f);
    }
    long avail = sysconf(_SC_AVPHYS_PAGES);
    *avail_bytes = kib >= 0 ? (size_t)kib * 1024 : avail > 0 ? (size_t)avail * (size_t)psz : 0;
    return VT_OK;
}

/* fp32 and tf32 are the same on the CPU (fp32); bf16 needs the instructions. */
static vt_status cpu_set_precision(vt_backend *b, vt_device_precision p)
{
    if (p == VT_DEVICE_PRECISION_BF16 && !vt_cpu_has_bf16())
        return vt_fail(VT_ERR_UNSUPPORTED, "precision=bf16 on the CPU needs AVX512-BF16 "
                       "(AMD Zen 4 and later, Intel Cooper Lake / Sapphire Rapids and later); "
                       "this CPU has none: use fp32");
    vt_backend_cpu_set_bf16(b, p == VT_DEVICE_PRECISION_BF16);
    return VT_OK;
}

static int cpu_precision_note(vt_device_precision p, char *buf, size_t cap)
{
    buf[0] = 0;
    if (p != VT_DEVICE_PRECISION_BF16 || !vt_cpu_has_bf16()) return 0;
    int slower = vt_gemm_bf16_slower_than_fp32();
    snprintf(buf, cap, "bf16 products: %s%s", vt_gemm_bf16_kernel(),
             slower ? "; on this kind of processor that trains slower than fp32 (measured "
                      "0.7-0.85x): precision=fp32 is faster here, at the same quality"
                    : "");
    return slower;
}

static const vt_device_iface cpu_device = {
    .name = "cpu",
    .kind = VT_DEVICE_KIND_CPU,
    .max_index = 0,
    .backend_create = cpu_backend_create,
    .set_precision = cpu_set_precision,
    .precision_note = cpu_precision_note,
    .capacity = cpu_capacity,
};

/* ---- CUDA (the module, loaded on first use) ----------------------------------------------- */

/* precision=bf16 has not run on a GPU yet (cuda/backend_cuda.cu, "bf16 operands"): refused
 * unless VT_CUDA_BF16=1 asks to try it. */
static vt_status cuda_set_precision(vt_backend *b, vt_device_precision p)
{
    int bf16 = p == VT_DEVICE_PRECISION_BF16;
    if (bf16 && !vt_cuda_bf16_wanted())
        return vt_fail(VT_ERR_UNSUPPORTED, "precision=bf16 on a GPU is experimental and has not "
                       "run on one yet: set VT_CUDA_BF16=1 in the environment to try it, or use "
                       "tf32 or fp32 (docs/gpu.md)");
    vt_backend_cuda_set_fp32(b, p == VT_DEVICE_PRECISION_FP32);
    vt_backend_cuda_set_bf16(b, bf16);
    return VT_OK;
}

static vt_status cuda_capacity(int index, size_t *total_bytes, size_t *avail_bytes)
{
    return vt_cuda_device_info(index, NULL, 0, NULL, NULL, total_bytes, avail_bytes);
}

static const vt_device_iface cuda_device = {
    .name = "cuda",
    .kind = VT_DEVICE_KIND_GPU,
    .max_index = 255,
    .backend_create = vt_backend_cuda_create,
    .host_alloc = vt_cuda_host_alloc,
    .host_free = vt_cuda_host_free,
    .set_precision = cuda_set_precision,
    .graph_begin = vt_backend_cuda_graph_begin,
    .graph_end = vt_backend_cuda_graph_end,
    .memory = vt_backend_cuda_memory,
    .metrics = vt_cuda_gpu_metrics,
    .capacity = cuda_capacity,
};

/* Every kind of device; the first GPU kind takes bare indices ("0"). */
static const vt_device_iface *const devices[] = {&cpu_device, &cuda_device};
#define NDEV (sizeof devices / sizeof devices[0])

/* A whole decimal index 0..max, else -1. */
static int parse_index(const char *s, int max)
{
    if (*s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return !*end && !errno && v >= 0 && v <= max ? (int)v : -1;
}

vt_status vt_device_parse(const char *spec, vt_device *out)
{
    if (!spec || !out) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_device_parse: NULL argument");
    for (size_t i = 0; i < NDEV; i++) {
        const vt_device_iface *d = devices[i];
        size_t n = strlen(d->name);
        if (strncmp(spec, d->name, n) != 0) continue;
        /* a kind with one device (the CPU) takes no index */
        int idx = spec[n] == 0                          ? 0
                  : spec[n] == ':' && d->max_index > 0 ? parse_index(spec + n + 1, d->max_index)
                                                        : -1;
        if (idx < 0) break;
        *out = (vt_device){d, idx};
        return VT_OK;
    }
    for (size_t i = 0; i < NDEV; i++) {
        if (devices[i]->kind != VT_DEVICE_KIND_GPU) continue;
        int idx = parse_index(spec, devices[i]->max_index);
        if (idx < 0) break;
        *out = (vt_device){devices[i], idx};
        return VT_OK;
    }
    return vt_fail(VT_ERR_OPTION_VALUE, "device '%s': expects \"cpu\", \"cuda:N\" or a GPU index",
                   spec);
}

void vt_device_name(const vt_device *d, char *buf, size_t cap)
{
    if (d->iface->max_index == 0) snprintf(buf, cap, "%s", d->iface->name);
    else snprintf(buf, cap, "%s:%d", d->iface->name, d->index);
}

vt_status vt_device_backend(const vt_device *d, vt_device_precision p, vt_backend **out)
{
    vt_status st = d->iface->backend_create(out, d->index);
    if (st == VT_OK && d->iface->set_precision && (st = d->iface->set_precision(*out, p))) {
        vt_backend_destroy(*out);
        *out = NULL;
    }
    return st;
}

int vt_cuda_bf16_wanted(void)
{
    const char *v = getenv("VT_CUDA_BF16");
    return v && !strcmp(v, "1");
}

int vt_device_graph_begin(const vt_device *d, vt_backend *b, const int key[4])
{
    return d->iface->graph_begin ? d->iface->graph_begin(b, key) : 0;
}

vt_status vt_device_graph_end(const vt_device *d, vt_backend *b, vt_status region, int *ran)
{
    *ran = 0;
    return d->iface->graph_end ? d->iface->graph_end(b, region, ran) : VT_OK;
}

void *vt_device_host_alloc(const vt_device *d, size_t bytes)
{
    if (!d->iface->host_alloc) {
        vt_fail(VT_ERR_UNSUPPORTED, "%s: no pinned host memory", d->iface->name);
        return NULL;
    }
    return d->iface->host_alloc(d->index, bytes);
}

void vt_device_host_free(const vt_device *d, void *p)
{
    if (p && d->iface->host_free) d->iface->host_free(p);
}

int vt_device_memory(const vt_device *d, vt_backend *b, size_t *held_bytes, size_t *peak_bytes)
{
    *held_bytes = *peak_bytes = 0;
    if (!d->iface->memory || !b) return 0;
    d->iface->memory(b, held_bytes, peak_bytes);
    return 1;
}

unsigned vt_device_metrics(const vt_device *d, vt_gpu_metrics *out)
{
    memset(out, 0, sizeof *out);
    return d->iface->metrics ? d->iface->metrics(d->index, out) : 0;
}

vt_status vt_device_capacity(const vt_device *d, size_t *total_bytes, size_t *avail_bytes)
{
    *total_bytes = *avail_bytes = 0;
    if (!d->iface->capacity)
        return vt_fail(VT_ERR_DEVICE, "%s: the memory size is unknown", d->iface->name);
    return d->iface->capacity(d->index, total_bytes, avail_bytes);
}

/* ---- public queries ------------------------------------------------------------------------ */

int vt_device_precision_note(const vt_device *d, vt_device_precision p, char *buf, size_t cap)
{
    if (cap) buf[0] = 0;
    return d->iface->precision_note && cap ? d->iface->precision_note(p, buf, cap) : 0;
}

static char cpu_kernels_desc[512];
static pthread_once_t cpu_kernels_once = PTHREAD_ONCE_INIT;

static void describe_cpu_kernels(void)
{
    const char *bf16 = vt_cpu_has_bf16() ? vt_gemm_bf16_kernel() : "none (needs AVX512-BF16)";
    snprintf(cpu_kernels_desc, sizeof cpu_kernels_desc,
             "%s; precision=bf16: %s%s; 3x3 stride-1 convolutions: %s%s; element-wise: %s",
             vt_sgemm_kernels(), bf16,
             vt_cpu_has_bf16() && vt_gemm_bf16_slower_than_fp32() ? " (slower than fp32 here)"
                                                                  : "",
             vt_backend_cpu_winograd_default() == 4
                 ? "Winograd F(4x4, 3x3) and F(2x2, 3x3) with fp32 products"
             : vt_backend_cpu_winograd_default() == 2
                 ? "Winograd F(2x2, 3x3) with fp32 products (VT_CPU_WINOGRAD=2)"
                 : "im2col (VT_CPU_WINOGRAD=0)",
             !vt_backend_cpu_winograd_default() ? ""
             : vt_backend_cpu_winograd_bf16_default()
                 ? ", with precision=bf16 too (bf16 products in 2x2 tiles; im2col where a side "
                   "has under 64 channels on small maps)"
                 : ", im2col with precision=bf16",
             vt_cpu_vec_kernels_for_cpu()->name);
}

VT_API const char *vt_cpu_kernels(void)
{
    pthread_once(&cpu_kernels_once, describe_cpu_kernels);
    return cpu_kernels_desc;
}

VT_API int vt_device_count(void)
{
    return vt_cuda_device_count();
}

VT_API vt_status vt_device_info(int device, char *name, size_t name_cap, int *cc_major,
                                int *cc_minor, uint64_t *total_bytes, uint64_t *free_bytes)
{
    /* The one exception to the buffer rule: the name is truncated to fit (the CUDA module
     * does that); a capacity without a buffer is still an error. */
    size_t total = 0, avail = 0;
    vt_status st = vt_buffer_args("vt_device_info", name, name_cap);
    if (st) return st;
    st = vt_cuda_device_info(device, name, name_cap, cc_major, cc_minor,
                             total_bytes ? &total : NULL, free_bytes ? &avail : NULL);
    if (st) return st;
    if (total_bytes) *total_bytes = total;
    if (free_bytes) *free_bytes = avail;
    return VT_OK;
}
