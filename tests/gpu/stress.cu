/* SPDX-License-Identifier: MIT */
// 16 threads x 100,000 allocate/free pairs of mixed kinds; thread t leaks (t%3)+1
// stream-ordered blocks of 8,192 bytes and one cudaMalloc block of 4,096 bytes.
// Expected: two loss records (31 x 8,192 and 16 x 4,096 bytes for 16 threads), usage
// "threads*pairs + leaks allocs, threads*pairs frees", nothing else.
//   stress [THREADS [PAIRS]]
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "fixture.h"

static int pairs = 100000;

/* One pair of kind i % 64, mostly the cheap stream-ordered ones (58 of 64):
 *   0      pinned host memory (cudaMallocHost) or managed memory, alternately
 *   32     cuMemAlloc (driver API)
 *   8, 24, 40, 56   cudaMalloc (every 16th)
 *   others cudaMallocAsync on the thread's stream
 * The test does not depend on the mix: every pair is one allocation and one free. */
static void one_pair(int i, cudaStream_t s)
{
    size_t size = 256 + (size_t)(i % 8) * 256;
    int r = i % 64;
    void *p;
    if (r == 0 && (i / 64) % 2 == 0) {
        CHECK(cudaMallocHost(&p, size));
        CHECK(cudaFreeHost(p));
    } else if (r == 0) {
        CHECK(cudaMallocManaged(&p, size, cudaMemAttachGlobal));
        CHECK(cudaFree(p));
    } else if (r == 32) {
        CUdeviceptr d;
        CHECK_CU(cuMemAlloc(&d, size));
        CHECK_CU(cuMemFree(d));
    } else if (r % 16 == 8) {
        CHECK(cudaMalloc(&p, size));
        CHECK(cudaFree(p));
    } else {
        CHECK(cudaMallocAsync(&p, size, s));
        CHECK(cudaFreeAsync(p, s));
    }
}

NOINLINE static void leak_async(cudaStream_t s)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 8192, s)); // SITE:stress_leak_async
    memset(&p, 0, sizeof p);             /* no copy of the pointer left behind */
}

NOINLINE static void leak_sync(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 4096)); // SITE:stress_leak_sync
    memset(&p, 0, sizeof p);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < pairs; i++)
        one_pair(i, s);
    for (int k = 0; k < t % 3 + 1; k++)
        leak_async(s);
    leak_sync();
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 16;
    if (argc > 2)
        pairs = atoi(argv[2]);
    if (nthreads < 1 || nthreads > 1024 || pairs < 0) {
        fprintf(stderr, "usage: stress [THREADS [PAIRS]]\n");
        return 2;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(0));
    /* The default pool keeps what is freed (as frameworks set it): without this,
     * every synchronizing cudaFree would hand the pool's memory back. */
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    uint64_t keep = UINT64_MAX;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));

    pthread_t *tids = (pthread_t *)calloc((size_t)nthreads, sizeof *tids);
    if (!tids)
        return 98;
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&tids[t], NULL, worker, (void *)(intptr_t)t) != 0)
            return 97;
    for (int t = 0; t < nthreads; t++)
        pthread_join(tids[t], NULL);
    free(tids);
    printf("stress: done, %d threads x %d pairs\n", nthreads, pairs);
    return 0;
}
