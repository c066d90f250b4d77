/* A fake NVML (libnvidia-ml.so.1) for test_gpu_metrics.c: the functions cuda/nvml.c loads,
 * answering fixed figures.  Two GPUs: index 0 is also PCI bus 0000:3B:00.0 and answers every
 * figure; index 1 answers utilisation and memory but refuses power and temperature (as a GPU
 * without those sensors does, NVML_ERROR_NOT_SUPPORTED).  FAKE_NVML_INIT_FAILS builds one whose
 * nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED), FAKE_NVML_INCOMPLETE one without
 * nvmlDeviceGetTemperature (a library that is not NVML, or too old a one). */
#include <string.h>
#include <strings.h>

typedef struct nvml_device *nvml_device;
struct nvml_device {
    int index;
};
static struct nvml_device devices[2] = {{0}, {1}};
typedef struct {
    unsigned gpu, memory;
} nvml_utilization;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;

enum { OK = 0, NOT_SUPPORTED = 3, NOT_FOUND = 6, DRIVER_NOT_LOADED = 9 };

#define EXPORT __attribute__((visibility("default")))

EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvml_device *dev);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml_device *dev);
EXPORT int nvmlDeviceGetUtilizationRates(nvml_device dev, nvml_utilization *u);
EXPORT int nvmlDeviceGetMemoryInfo(nvml_device dev, nvml_memory *m);
EXPORT int nvmlDeviceGetPowerUsage(nvml_device dev, unsigned *mw);
EXPORT int nvmlDeviceGetTemperature(nvml_device dev, int sensor, unsigned *c);

int nvmlInit_v2(void)
{
#ifdef FAKE_NVML_INIT_FAILS
    return DRIVER_NOT_LOADED;
#else
    return OK;
#endif
}

int nvmlShutdown(void) { return OK; }

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvml_device *dev)
{
    if (strcasecmp(bus, "0000:3b:00.0") != 0) return NOT_FOUND;
    *dev = &devices[0];
    return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml_device *dev)
{
    if (index > 1) return NOT_FOUND;
    *dev = &devices[index];
    return OK;
}

int nvmlDeviceGetUtilizationRates(nvml_device dev, nvml_utilization *u)
{
    u->gpu = dev->index ? 5 : 97;
    u->memory = 40;
    return OK;
}

int nvmlDeviceGetMemoryInfo(nvml_device dev, nvml_memory *m)
{
    m->total = 139800000000ull;
    m->used = dev->index ? 1000000000ull : 41200000000ull;
    m->free = m->total - m->used;
    return OK;
}

int nvmlDeviceGetPowerUsage(nvml_device dev, unsigned *mw)
{
    if (dev->index) return NOT_SUPPORTED;
    *mw = 512340;
    return OK;
}

#ifndef FAKE_NVML_INCOMPLETE
int nvmlDeviceGetTemperature(nvml_device dev, int sensor, unsigned *c)
{
    if (dev->index || sensor != 0) return NOT_SUPPORTED;
    *c = 61;
    return OK;
}
#endif
