/* SPDX-License-Identifier: MIT */
// An allocator a PyTorch program plugs in (torch.cuda.memory.CUDAPluggableAllocator,
// as RAPIDS' rmm_torch_allocator is installed): every tensor and workspace PyTorch
// makes is a cudaMalloc here, freed here.  Loaded by frameworks/torch_pluggable.py.
#include "fixture.h"

extern "C" __attribute__((visibility("default"))) NOINLINE void *
torch_alloc(size_t size, int device, cudaStream_t stream)
{
    (void)device;
    (void)stream;
    void *p = NULL;
    CHECK(cudaMalloc(&p, size)); // SITE:torch_alloc
    return p;
}

extern "C" __attribute__((visibility("default"))) NOINLINE void
torch_free(void *p, size_t size, int device, cudaStream_t stream)
{
    (void)size;
    (void)device;
    (void)stream;
    /* PyTorch may free its last blocks while CUDA is being torn down. */
    cudaError_t rc = cudaFree(p);
    if (rc != cudaSuccess && rc != cudaErrorCudartUnloading)
        CHECK(rc);
}
