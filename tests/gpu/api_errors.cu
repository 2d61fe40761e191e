/* SPDX-License-Identifier: MIT */
/* API misuse errors, one scenario per run (argv[1]), each with a known report.
 * Calls expected to fail are not CHECK'ed: the driver refuses most of them, and
 * the point is what gpuleak says about them.  // SITE: markers name the lines
 * the reports must point at. */
#include <string.h>

#include "fixture.h"

static char host[16384];

NOINLINE static void double_free(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 4096)); // SITE:double_alloc
    CHECK(cudaFree(p));          // SITE:double_first
    cudaFree(p);                 // SITE:double_second
}

NOINLINE static void interior_free(void)
{
    char *p;
    CHECK(cudaMalloc((void **)&p, 4096)); // SITE:interior_alloc
    cudaFree(p + 256);                    // SITE:interior_free
    CHECK(cudaFree(p));
}

NOINLINE static void never_allocated(void)
{
    cudaFree((void *)0x12345000); // SITE:never
}

NOINLINE static void mismatched(void)
{
    void *d, *h;
    CHECK(cudaMalloc(&d, 4096));     // SITE:mismatch_dev_alloc
    cudaFreeHost(d);                 // SITE:mismatch_hostfree
    CHECK(cudaFree(d));
    CHECK(cudaMallocHost(&h, 8192)); // SITE:mismatch_host_alloc
    if (cudaFree(h) != cudaSuccess)  // SITE:mismatch_free
        CHECK(cudaFreeHost(h));
}

NOINLINE static void ranges(void)
{
    char *p;
    CHECK(cudaMalloc((void **)&p, 4096));                      // SITE:range_alloc
    cudaMemcpy(p + 3072, host, 2048, cudaMemcpyHostToDevice); // SITE:range_write
    cudaMemcpy(host, p + 4000, 200, cudaMemcpyDeviceToHost);  // SITE:range_read
    cudaMemset(p, 0, 8192);                                    // SITE:range_memset
    CHECK(cudaFree(p));                                        // SITE:range_free
    cudaMemcpy(p, host, 16, cudaMemcpyHostToDevice);           // SITE:range_after_free
}

NOINLINE static void out_of_memory(void)
{
    void *keep, *p;
    CHECK(cudaMalloc(&keep, 64 << 20)); // SITE:keep_for_oom
    cudaError_t e = cudaMalloc(&p, (size_t)1 << 50); // SITE:oom
    if (e == cudaSuccess)
        exit(98); /* a petabyte: the driver cannot have said yes */
    cudaGetLastError();
    CHECK(cudaFree(keep));
}

/* --flamegraph-cost: two sites hold 32 MiB each (hold_b allocated 48 MiB, a
 * third block freed at once) when a petabyte is asked for; then hold_a's
 * block is freed and the request fails again, the device less full.  The oom
 * picture is the first failure's: 32 MiB from each site. */
NOINLINE static void *hold_a(size_t n)
{
    void *p;
    CHECK(cudaMalloc(&p, n)); // SITE:hold_a
    return p;
}

NOINLINE static void *hold_b(size_t n)
{
    void *p;
    CHECK(cudaMalloc(&p, n)); // SITE:hold_b
    return p;
}

NOINLINE static void oom_sites(void)
{
    void *p, *a = hold_a(32 << 20), *b1 = hold_b(16 << 20), *b2 = hold_b(16 << 20);
    void *b3 = hold_b(16 << 20);
    CHECK(cudaFree(b3));
    if (cudaMalloc(&p, (size_t)1 << 50) == cudaSuccess) // SITE:oom_sites_full
        exit(98);
    cudaGetLastError();
    CHECK(cudaFree(a));
    if (cudaMalloc(&p, (size_t)1 << 50) == cudaSuccess) // SITE:oom_sites_less
        exit(98);
    cudaGetLastError();
    CHECK(cudaFree(b1));
    CHECK(cudaFree(b2));
}

/* A VMM handle released twice while mapped (its mapping keeps the memory),
 * then once more after the unmap freed it. */
NOINLINE static void vmm_double_release(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemCreate(&h, gran, &prop, 0)); // SITE:vmm_create
    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, gran, 0, 0, 0));
    CHECK_CU(cuMemMap(va, gran, 0, h, 0));
    CHECK_CU(cuMemRelease(h));
    cuMemRelease(h);                // SITE:vmm_second_release
    CHECK_CU(cuMemUnmap(va, gran)); // SITE:vmm_unmap
    cuMemRelease(h);                // SITE:vmm_after_unmap
    CHECK_CU(cuMemAddressFree(va, gran));
}

/* Everything right: no error may be reported. */
NOINLINE static void clean(void)
{
    char *d, *h;
    void *a;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMalloc((void **)&d, 4096));
    CHECK(cudaMallocHost((void **)&h, 4096));
    CHECK(cudaMemcpy(d, host, 4096, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(h, d + 1024, 3072, cudaMemcpyDeviceToHost));
    CHECK(cudaMemset(d, 1, 4096));
    CHECK(cudaMemcpy2D(d, 1024, host, 512, 512, 4, cudaMemcpyHostToDevice));
    CHECK(cudaMallocAsync(&a, 1 << 20, s));
    CHECK(cudaMemcpyAsync(a, d, 4096, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemsetAsync(a, 0, 1 << 20, s));
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(d));
    CHECK(cudaFreeHost(h));
    CHECK(cudaStreamDestroy(s));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    memset(host, 7, sizeof host);
    CHECK(cudaFree(0)); /* a context */
    if (!strcmp(mode, "double"))
        double_free();
    else if (!strcmp(mode, "interior"))
        interior_free();
    else if (!strcmp(mode, "never"))
        never_allocated();
    else if (!strcmp(mode, "mismatched"))
        mismatched();
    else if (!strcmp(mode, "ranges"))
        ranges();
    else if (!strcmp(mode, "oom"))
        out_of_memory();
    else if (!strcmp(mode, "oom_sites"))
        oom_sites();
    else if (!strcmp(mode, "vmm"))
        vmm_double_release();
    else if (!strcmp(mode, "clean"))
        clean();
    else {
        fprintf(stderr, "usage: api_errors double|interior|never|mismatched|ranges|oom|"
                        "oom_sites|vmm|clean\n");
        return 2;
    }
    return 0;
}
