/* SPDX-License-Identifier: MIT */
// Everything allocated is freed: the report must say so, with exact counts.
#include "fixture.h"

int main()
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < 1000; i++) {
        void *d, *h, *m, *a;
        CHECK(cudaMalloc(&d, 256 + i));
        CHECK(cudaMallocHost(&h, 4096));
        CHECK(cudaMallocManaged(&m, 8192));
        CHECK(cudaMallocAsync(&a, 1000, s));
        CHECK(cudaFreeAsync(a, s));
        CHECK(cudaFree(m));
        CHECK(cudaFreeHost(h));
        CHECK(cudaFree(d));
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    printf("free_all: done\n");
    return 0;
}
