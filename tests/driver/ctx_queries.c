/* SPDX-License-Identifier: MIT */
/* How often the hooks ask the driver for the current context: a pair of
 * cuMemAlloc_v2 and cuMemFree_v2, then a free the driver refuses (its error
 * must still name the context's device).  Prints the queries the pairs made;
 * tests/driver.test says how many each configuration may make.  Last, a
 * block left allocated goes with its context, destroyed: an allocation
 * still knows its context (no leak may be reported), one made on a stream
 * too, while another context is current (its context is the stream's,
 * known from the stream's creation). */
#include <cuda.h>
#include <stdio.h>

int fake_cuda_context_queries(void); /* tests/driver/fake_cuda.c */
CUcontext fake_cuda_other_context(void);

#define PAIRS 100

int main(void)
{
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    int before = fake_cuda_context_queries();
    for (int i = 0; i < PAIRS; i++) {
        CUdeviceptr p = 0;
        if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS)
            return 2;
    }
    int queries = fake_cuda_context_queries() - before;
    if (cuMemFree_v2(0xbad000) != CUDA_ERROR_INVALID_VALUE)
        return 3;
    /* Stream-ordered pairs on a stream made here: its context is known from
     * its creation (one query), and a pair asks nothing. */
    before = fake_cuda_context_queries();
    CUstream s = NULL;
    if (cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        return 5;
    for (int i = 0; i < PAIRS; i++) {
        CUdeviceptr p = 0;
        if (cuMemAllocAsync(&p, 4096, s) != CUDA_SUCCESS || cuMemFreeAsync(p, s) != CUDA_SUCCESS)
            return 6;
    }
    int stream_queries = fake_cuda_context_queries() - before;
    /* Made on the stream while another context is current: still the
     * stream's context's memory, and it goes with that context. */
    CUdeviceptr kept = 0, on_stream = 0;
    CUcontext ctx = NULL;
    if (cuMemAlloc_v2(&kept, 7777) != CUDA_SUCCESS || cuCtxGetCurrent(&ctx) != CUDA_SUCCESS ||
        cuCtxSetCurrent(fake_cuda_other_context()) != CUDA_SUCCESS ||
        cuMemAllocAsync(&on_stream, 8888, s) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuCtxDestroy(ctx) != CUDA_SUCCESS)
        return 4;
    printf("ctx_queries: %d pairs, %d queries; on a stream, %d queries\n", PAIRS, queries,
           stream_queries);
    return 0;
}
