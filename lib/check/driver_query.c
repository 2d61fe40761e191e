/* SPDX-License-Identifier: MIT */
#include "check/driver_query.h"

#include <cuda.h>
#include <dlfcn.h>

#include "observe/driver.h"

/* Entry points looked up in the driver the program loaded. */
static struct {
    bool looked_up;
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_count)(int *);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*mem_get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*default_mem_pool)(CUmemoryPool *, CUdevice);
    CUresult (*mem_pool_get_attribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*graph_mem_attribute)(CUdevice, CUgraphMem_attribute, void *);
    CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
} drv;

static void look_up(void)
{
    if (drv.looked_up)
        return;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return; /* not loaded yet (a check before CUDA starts): look again next time */
    drv.looked_up = true;
    /* The driver's own functions, never the hooks that stand for them
     * (observe/driver.h): the report's copies are not the program's. */
    *(void **)&drv.device_get = gl_driver_dlsym(h, "cuDeviceGet");
    *(void **)&drv.device_get_count = gl_driver_dlsym(h, "cuDeviceGetCount");
    *(void **)&drv.default_mem_pool = gl_driver_dlsym(h, "cuDeviceGetDefaultMemPool");
    *(void **)&drv.mem_pool_get_attribute = gl_driver_dlsym(h, "cuMemPoolGetAttribute");
    *(void **)&drv.graph_mem_attribute = gl_driver_dlsym(h, "cuDeviceGetGraphMemAttribute");
    *(void **)&drv.memcpy_dtoh = gl_driver_dlsym(h, "cuMemcpyDtoH_v2");
    *(void **)&drv.ctx_push = gl_driver_dlsym(h, "cuCtxPushCurrent_v2");
    *(void **)&drv.ctx_pop = gl_driver_dlsym(h, "cuCtxPopCurrent_v2");
    *(void **)&drv.device_get_name = gl_driver_dlsym(h, "cuDeviceGetName");
    *(void **)&drv.mem_get_address_range = gl_driver_dlsym(h, "cuMemGetAddressRange_v2");
    dlclose(h); /* still loaded by the program */
}

static bool device(int ordinal, CUdevice *dev)
{
    look_up();
    return drv.device_get && drv.device_get(dev, ordinal) == CUDA_SUCCESS;
}

static bool device_count(int *count)
{
    look_up();
    return drv.device_get_count && drv.device_get_count(count) == CUDA_SUCCESS;
}

static bool device_name(int ordinal, char *buf, size_t len)
{
    CUdevice dev;
    return device(ordinal, &dev) && drv.device_get_name &&
           drv.device_get_name(buf, (int)len, dev) == CUDA_SUCCESS;
}

static bool default_pool(int ordinal, uint64_t *pool)
{
    CUdevice dev;
    CUmemoryPool p;
    if (!device(ordinal, &dev) || !drv.default_mem_pool ||
        drv.default_mem_pool(&p, dev) != CUDA_SUCCESS)
        return false;
    *pool = (uint64_t)(uintptr_t)p;
    return true;
}

static bool pool_usage(uint64_t pool, uint64_t *reserved, uint64_t *used)
{
    look_up();
    CUmemoryPool p = (CUmemoryPool)(uintptr_t)pool;
    cuuint64_t r = 0, u = 0;
    if (!drv.mem_pool_get_attribute ||
        drv.mem_pool_get_attribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) != CUDA_SUCCESS ||
        drv.mem_pool_get_attribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
        return false;
    *reserved = r;
    *used = u;
    return true;
}

static bool graph_memory(int ordinal, uint64_t *reserved, uint64_t *used)
{
    CUdevice dev;
    cuuint64_t r = 0, u = 0;
    if (!device(ordinal, &dev) || !drv.graph_mem_attribute ||
        drv.graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) != CUDA_SUCCESS ||
        drv.graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
        return false;
    *reserved = r;
    *used = u;
    return true;
}

static bool address_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
    look_up();
    CUdeviceptr b;
    size_t s;
    if (!drv.mem_get_address_range ||
        drv.mem_get_address_range(&b, &s, (CUdeviceptr)addr) != CUDA_SUCCESS)
        return false;
    *base = b;
    *size = s;
    return true;
}

/* In the block's own context, pushed for the copy and popped after. */
static bool read_memory(uint64_t ctx, uint64_t addr, void *buf, size_t len)
{
    look_up();
    if (!drv.memcpy_dtoh || !drv.ctx_push || !drv.ctx_pop)
        return false;
    if (drv.ctx_push((CUcontext)(uintptr_t)ctx) != CUDA_SUCCESS)
        return false;
    CUresult rc = drv.memcpy_dtoh(buf, (CUdeviceptr)addr, len);
    CUcontext popped;
    drv.ctx_pop(&popped);
    return rc == CUDA_SUCCESS;
}

static const struct gl_driver_query cuda = {
    .device_count = device_count,
    .device_name = device_name,
    .default_pool = default_pool,
    .pool_usage = pool_usage,
    .graph_memory = graph_memory,
    .address_range = address_range,
    .read = read_memory,
};

const struct gl_driver_query *gl_driver_query_cuda(void) { return &cuda; }
