/* SPDX-License-Identifier: MIT */
#include "check/device_memory.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The few NVML entry points used, declared here (their ABI is stable). */
typedef void *nvml_device;
struct nvml_memory {
    unsigned long long total, free, used;
};
static struct {
    void *lib;
    int (*init)(void);
    int (*count)(unsigned *);
    int (*by_index)(unsigned, nvml_device *);
    int (*memory)(nvml_device, struct nvml_memory *);
    int (*uuid)(nvml_device, char *, unsigned);
    int (*name)(nvml_device, char *, unsigned);
} nvml;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool ready;

void gl_device_memory_load(void)
{
    if (nvml.lib)
        return;
    nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!nvml.lib)
        return;
    *(void **)&nvml.init = dlsym(nvml.lib, "nvmlInit_v2");
    *(void **)&nvml.count = dlsym(nvml.lib, "nvmlDeviceGetCount_v2");
    *(void **)&nvml.by_index = dlsym(nvml.lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nvml.memory = dlsym(nvml.lib, "nvmlDeviceGetMemoryInfo");
    *(void **)&nvml.uuid = dlsym(nvml.lib, "nvmlDeviceGetUUID");
    *(void **)&nvml.name = dlsym(nvml.lib, "nvmlDeviceGetName");
}

static void init(void)
{
    ready = nvml.init && nvml.count && nvml.by_index && nvml.memory && nvml.uuid && nvml.name &&
            nvml.init() == 0;
}

/* Do all NVML devices have one model name? */
static bool all_same_model(unsigned n)
{
    char first[96] = "", name[96];
    for (unsigned i = 0; i < n; i++) {
        nvml_device d;
        if (nvml.by_index(i, &d) != 0 || nvml.name(d, name, sizeof name) != 0)
            return false;
        if (i == 0)
            strcpy(first, name);
        else if (strcmp(first, name) != 0)
            return false;
    }
    return true;
}

/* The NVML index of CUDA's ordinal-th device before CUDA_VISIBLE_DEVICES. */
static int index_of_cuda_enum(unsigned ordinal, unsigned n)
{
    if (ordinal >= n)
        return -1;
    const char *order = getenv("CUDA_DEVICE_ORDER");
    if ((order && strcmp(order, "PCI_BUS_ID") == 0) || all_same_model(n))
        return (int)ordinal;
    return -1;
}

/* Map a CUDA ordinal to an NVML device; false when unsure. */
static bool nvml_device_of(int device, nvml_device *out)
{
    unsigned n;
    if (nvml.count(&n) != 0 || n == 0)
        return false;
    int index = -1;
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (!vis) {
        index = index_of_cuda_enum((unsigned)device, n);
    } else {
        /* The device-th entry of the list. */
        const char *p = vis;
        for (int i = 0; i < device && p; i++) {
            p = strchr(p, ',');
            if (p)
                p++;
        }
        if (!p || !*p)
            return false;
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, ",");
        if (strncmp(p, "GPU-", 4) == 0) {
            for (unsigned i = 0; i < n && index < 0; i++) {
                nvml_device d;
                char uuid[96];
                if (nvml.by_index(i, &d) == 0 && nvml.uuid(d, uuid, sizeof uuid) == 0 &&
                    strncmp(uuid, p, len) == 0)
                    index = (int)i;
            }
        } else if (p[0] >= '0' && p[0] <= '9') {
            index = index_of_cuda_enum((unsigned)strtoul(p, NULL, 10), n);
        }
    }
    return index >= 0 && nvml.by_index((unsigned)index, out) == 0;
}

bool gl_device_memory_query(int device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (!nvml.lib || device < 0)
        return false;
    pthread_once(&init_once, init);
    nvml_device d;
    struct nvml_memory m;
    if (!ready || !nvml_device_of(device, &d) || nvml.memory(d, &m) != 0)
        return false;
    *free_bytes = m.free;
    *total_bytes = m.total;
    return true;
}
