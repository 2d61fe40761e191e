/* SPDX-License-Identifier: MIT */
// Every way a program reaches the driver's allocation functions, each leaking
// one block of its own size: the driver observer must see them all, and their
// stacks must start with the entry point called, as CUPTI's do.
#include <dlfcn.h>

#include "fixture.h"

#define DRV(call)                                                                                  \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "driver_entry: %s failed: %d\n", #call, (int)rc_);                     \
            exit(97);                                                                              \
        }                                                                                          \
    } while (0)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);

static void linked(void)
{
    CUdeviceptr d;
    DRV(cuMemAlloc(&d, 1100000)); // SITE:linked
    d = 0; // lost: no copy left in this frame
}

static void by_runtime_entry_point(void)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000, cudaEnableDefault, &q));
    CUdeviceptr d;
    DRV(((alloc_fn)fn)(&d, 1200000)); // SITE:runtime_entry
    d = 0; // lost: no copy left in this frame
    CUdeviceptr gone;
    DRV(((alloc_fn)fn)(&gone, 4096));
    CHECK(cudaGetDriverEntryPoint("cuMemFree", &fn, cudaEnableDefault, &q));
    DRV(((free_fn)fn)(gone));
    gone = 0;
}

static void by_proc_address(void)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    DRV(cuGetProcAddress("cuMemAllocAsync", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                         &st));
    CUdeviceptr d;
    DRV(((alloc_async_fn)fn)(&d, 1300000, CU_STREAM_PER_THREAD)); // SITE:proc_address
    d = 0; // lost: no copy left in this frame
    CHECK(cudaDeviceSynchronize());
}

static void by_dlsym(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "driver_entry: dlopen: %s\n", dlerror());
        exit(97);
    }
    alloc_fn fn = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    CUdeviceptr d;
    DRV(fn(&d, 1400000)); // SITE:dlsym
    alloc_fn dflt = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    DRV(dflt(&d, 1500000)); // SITE:dlsym_default
    d = 0; // lost: no copy left in this frame
}

int main()
{
    CHECK(cudaFree(0));
    linked();
    by_runtime_entry_point();
    by_proc_address();
    by_dlsym();
    printf("driver_entry: done\n");
    return 0;
}
