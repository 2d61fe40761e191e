/* SPDX-License-Identifier: MIT */
// Every allocation family: each leaks one object of a known size and frees another,
// so the report must list exactly one loss record per family and none for the frees.
#include <stdint.h>
#include <string.h>

#include "fixture.h"

static cudaStream_t stream;

NOINLINE static void device_memory(void)
{
    void *leak, *ok;
    CHECK(cudaMalloc(&leak, 10000)); // SITE:device
    CHECK(cudaMalloc(&ok, 10001));
    CHECK(cudaFree(ok));
}

NOINLINE static void pitched_memory(void)
{
    void *leak, *ok;
    size_t pitch;
    CHECK(cudaMallocPitch(&leak, &pitch, 1000, 10)); // SITE:pitch
    CHECK(cudaMallocPitch(&ok, &pitch, 1000, 11));
    CHECK(cudaFree(ok));
    cudaPitchedPtr p3, p3ok;
    CHECK(cudaMalloc3D(&p3, make_cudaExtent(100, 10, 2))); // SITE:malloc3d
    CHECK(cudaMalloc3D(&p3ok, make_cudaExtent(100, 10, 3)));
    CHECK(cudaFree(p3ok.ptr));
}

NOINLINE static void managed_memory(void)
{
    void *leak, *ok;
    CHECK(cudaMallocManaged(&leak, 30000, cudaMemAttachGlobal)); // SITE:managed
    CHECK(cudaMallocManaged(&ok, 30001, cudaMemAttachGlobal));
    CHECK(cudaFree(ok));
}

NOINLINE static void pinned_host_memory(void)
{
    void *leak, *ok, *leak2, *ok2;
    CHECK(cudaMallocHost(&leak, 44000)); // SITE:mallochost
    CHECK(cudaMallocHost(&ok, 44001));
    CHECK(cudaFreeHost(ok));
    CHECK(cudaHostAlloc(&leak2, 50000, cudaHostAllocDefault)); // SITE:hostalloc
    CHECK(cudaHostAlloc(&ok2, 50001, cudaHostAllocDefault));
    CHECK(cudaFreeHost(ok2));
}

NOINLINE static void registered_host_memory(void)
{
    void *leak, *ok;
    if (posix_memalign(&leak, 4096, 65536) || posix_memalign(&ok, 4096, 2 * 65536))
        exit(98);
    CHECK(cudaHostRegister(leak, 65536, cudaHostRegisterDefault)); // SITE:register
    CHECK(cudaHostRegister(ok, 2 * 65536, cudaHostRegisterDefault));
    CHECK(cudaHostUnregister(ok));
    free(ok);
}

NOINLINE static void stream_ordered_memory(void)
{
    void *leak, *ok, *pleak, *pok;
    CHECK(cudaMallocAsync(&leak, 70000, stream)); // SITE:async
    CHECK(cudaMallocAsync(&ok, 70001, stream));
    CHECK(cudaFreeAsync(ok, stream));

    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    CHECK(cudaMallocFromPoolAsync(&pleak, 80000, pool, stream)); // SITE:frompool
    CHECK(cudaMallocFromPoolAsync(&pok, 80001, pool, stream));
    CHECK(cudaFreeAsync(pok, stream));
    CHECK(cudaStreamSynchronize(stream));
}

NOINLINE static void vmm_memory(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

    /* Leaked: released, but still mapped, so the physical memory stays. */
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemCreate(&h, gran, &prop, 0)); // SITE:vmm
    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, gran, 0, 0, 0));
    CHECK_CU(cuMemMap(va, gran, 0, h, 0));
    CHECK_CU(cuMemSetAccess(va, gran, &access, 1));
    CHECK_CU(cuMemRelease(h));

    /* Freed: the whole life cycle. */
    CUmemGenericAllocationHandle h2;
    CHECK_CU(cuMemCreate(&h2, 2 * gran, &prop, 0));
    CUdeviceptr va2;
    CHECK_CU(cuMemAddressReserve(&va2, 2 * gran, 0, 0, 0));
    CHECK_CU(cuMemMap(va2, 2 * gran, 0, h2, 0));
    CHECK_CU(cuMemSetAccess(va2, 2 * gran, &access, 1));
    CHECK_CU(cuMemUnmap(va2, 2 * gran));
    CHECK_CU(cuMemRelease(h2));
    CHECK_CU(cuMemAddressFree(va2, 2 * gran));
}

NOINLINE static void arrays(void)
{
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t leak, ok, leak3, ok3;
    CHECK(cudaMallocArray(&leak, &desc, 100, 100)); // SITE:array
    CHECK(cudaMallocArray(&ok, &desc, 100, 101));
    CHECK(cudaFreeArray(ok));
    CHECK(cudaMalloc3DArray(&leak3, &desc, make_cudaExtent(20, 20, 20))); // SITE:array3d
    CHECK(cudaMalloc3DArray(&ok3, &desc, make_cudaExtent(20, 20, 21)));
    CHECK(cudaFreeArray(ok3));
    cudaMipmappedArray_t mleak, mok;
    CHECK(cudaMallocMipmappedArray(&mleak, &desc, make_cudaExtent(64, 64, 0), 4)); // SITE:mipmap
    CHECK(cudaMallocMipmappedArray(&mok, &desc, make_cudaExtent(64, 64, 0), 3));
    CHECK(cudaFreeMipmappedArray(mok));
}

NOINLINE static void graph_memory(void)
{
    cudaMemAllocNodeParams p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = 90000;

    /* Leaked: the graph allocates and nothing ever frees. */
    cudaGraph_t g;
    cudaGraphNode_t n;
    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &p)); // SITE:graph
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));

    /* Freed inside the graph. */
    cudaGraph_t g2;
    cudaGraphNode_t a, f;
    p.bytesize = 90001;
    CHECK(cudaGraphCreate(&g2, 0));
    CHECK(cudaGraphAddMemAllocNode(&a, g2, NULL, 0, &p));
    CHECK(cudaGraphAddMemFreeNode(&f, g2, &a, 1, p.dptr));
    cudaGraphExec_t ge2;
    CHECK(cudaGraphInstantiate(&ge2, g2, 0));
    CHECK(cudaGraphLaunch(ge2, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge2));
    CHECK(cudaGraphDestroy(g2));
}

NOINLINE static void driver_api(void)
{
    CUdeviceptr leak, ok;
    CHECK_CU(cuMemAlloc(&leak, 100000)); // SITE:driver
    CHECK_CU(cuMemAlloc(&ok, 100001));
    CHECK_CU(cuMemFree(ok));
}

int main()
{
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(0));
    CHECK(cudaStreamCreate(&stream));
    device_memory();
    pitched_memory();
    managed_memory();
    pinned_host_memory();
    registered_host_memory();
    stream_ordered_memory();
    vmm_memory();
    arrays();
    graph_memory();
    driver_api();
    CHECK(cudaDeviceSynchronize());
    printf("families: done\n");
    return 0;
}
