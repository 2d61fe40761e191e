/* SPDX-License-Identifier: MIT */
// A million live blocks at exit: N (default 1,000,000) stream-ordered blocks of
// 256..928 bytes from 8 call sites, all leaked, plus 10,000 allocated and freed.
// Expected: 8 loss records (block i from site i % 8, of 256 + 96 * (i % 8) bytes),
// 1,000,000 blocks definitely lost, usage "N + 10,000 allocs, 10,000 frees".
//   many_blocks [N]
#include "fixture.h"

static cudaStream_t stream;

/* Each site drops its pointer: the blocks are definitely lost. */
NOINLINE static void site0(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 256, stream)); // SITE:site0
}

NOINLINE static void site1(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 352, stream)); // SITE:site1
}

NOINLINE static void site2(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 448, stream)); // SITE:site2
}

NOINLINE static void site3(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 544, stream)); // SITE:site3
}

NOINLINE static void site4(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 640, stream)); // SITE:site4
}

NOINLINE static void site5(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 736, stream)); // SITE:site5
}

NOINLINE static void site6(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 832, stream)); // SITE:site6
}

NOINLINE static void site7(void)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 928, stream)); // SITE:site7
}

NOINLINE static void churn(int i)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 256 + (size_t)(i % 4) * 256, stream));
    CHECK(cudaFreeAsync(p, stream));
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    if (n < 0) {
        fprintf(stderr, "usage: many_blocks [N]\n");
        return 2;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void (*const sites[8])(void) = {site0, site1, site2, site3, site4, site5, site6, site7};
    for (long i = 0; i < n; i++)
        sites[i % 8]();
    for (int i = 0; i < 10000; i++)
        churn(i);
    CHECK(cudaStreamSynchronize(stream));
    printf("many_blocks: done, %ld blocks leaked\n", n);
    return 0;
}
