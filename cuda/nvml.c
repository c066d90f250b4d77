/* NVML loaded with dlopen (nvml.h).  The few functions used are declared here with NVML's
 * stable C ABI (the versioned names, nvml.h of CUDA 11-13), so no NVML header is needed to
 * build. */
#include "nvml.h"

#include "dl_lib.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;            /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
typedef struct nvml_utilization {   /* nvmlUtilization_t */
    unsigned gpu, memory;
} nvml_utilization;
typedef struct nvml_memory {        /* nvmlMemory_t (v1) */
    unsigned long long total, free, used;
} nvml_memory;
enum { NVML_TEMPERATURE_GPU = 0 };

struct vt_nvml {
    void *lib;
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    nvml_return (*by_bus_id)(const char *bus_id, nvml_device *dev);
    nvml_return (*by_index)(unsigned index, nvml_device *dev);
    nvml_return (*utilization)(nvml_device dev, nvml_utilization *u);
    nvml_return (*memory)(nvml_device dev, nvml_memory *m);
    nvml_return (*power)(nvml_device dev, unsigned *milliwatts);
    nvml_return (*temperature)(nvml_device dev, int sensor, unsigned *celsius);
};

vt_nvml *vt_nvml_open(const char *path, char *why, size_t why_cap)
{
    vt_nvml *n = calloc(1, sizeof *n);
    if (!n) {
        vt_dl_say(why, why_cap, "NVML: out of memory");
        return NULL;
    }
    static const char *const names[] = {
        "nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByPciBusId_v2",
        "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature"};
    void **slot[] = {(void **)&n->init, (void **)&n->shutdown, (void **)&n->by_bus_id,
                     (void **)&n->by_index, (void **)&n->utilization, (void **)&n->memory,
                     (void **)&n->power, (void **)&n->temperature};
    n->lib = vt_dl_open(path, "NVML", names, slot, sizeof names / sizeof names[0],
                        "too old a driver?", why, why_cap);
    if (!n->lib) {
        free(n);
        return NULL;
    }
    int rc = n->init();
    if (rc != 0) {
        vt_dl_say(why, why_cap, "NVML (%s) did not initialise: error %d", path, rc);
        dlclose(n->lib);
        free(n);
        return NULL;
    }
    return n;
}

unsigned vt_nvml_sample(vt_nvml *n, const char *bus_id, int index, vt_gpu_metrics *out)
{
    memset(out, 0, sizeof *out);
    if (!n) return 0;
    nvml_device dev = NULL;
    if ((!bus_id || n->by_bus_id(bus_id, &dev) != 0) &&
        (index < 0 || n->by_index((unsigned)index, &dev) != 0))
        return 0;
    nvml_utilization u;
    if (n->utilization(dev, &u) == 0) {
        out->util_pct = u.gpu;
        out->have |= VT_GPU_HAVE_UTIL;
    }
    nvml_memory m;
    if (n->memory(dev, &m) == 0) {
        out->mem_used_bytes = (double)m.used;
        out->mem_total_bytes = (double)m.total;
        out->have |= VT_GPU_HAVE_MEMORY;
    }
    unsigned v;
    if (n->power(dev, &v) == 0) {
        out->power_w = v / 1000.0;
        out->have |= VT_GPU_HAVE_POWER;
    }
    if (n->temperature(dev, NVML_TEMPERATURE_GPU, &v) == 0) {
        out->temp_c = v;
        out->have |= VT_GPU_HAVE_TEMP;
    }
    return out->have;
}

void vt_nvml_close(vt_nvml *n)
{
    if (!n) return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}
