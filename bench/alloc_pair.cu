/* SPDX-License-Identifier: MIT */
// Allocate/free microbenchmark: the cost gpuleak adds to each pair.
//   alloc_pair sync|async THREADS PAIRS [SIZE [WORK_NS]]
// WORK_NS: the host busy-waits that long after each call (the program's own
// work between its calls; 0 by default), so that a tool's cost per call can be
// compared with the same time spent by the program itself.
// ALLOC_PAIR_HOST_CHUNKS=N: N chunks of 64 bytes malloc'd and kept first, a heap
// the size of a large program's (PyTorch's C++ objects), for gpuleak's
// allocator hooks to meet (the host chunk the driver allocates and frees in
// each pair is looked up among them).
// Prints one line: mode threads pairs ns_per_pair (wall time / pairs per thread).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h" /* CHECK: every CUDA call checked */


static int async_mode;
static long pairs;
static size_t size = 4096;
static long work_ns;
static pthread_barrier_t barrier;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void work(void)
{
    if (work_ns <= 0)
        return;
    double until = now() + work_ns * 1e-9;
    while (now() < until)
        ;
}

static void run_pairs(long n, cudaStream_t s)
{
    for (long i = 0; i < n; i++) {
        void *p;
        if (async_mode) {
            CHECK(cudaMallocAsync(&p, size, s));
            work();
            CHECK(cudaFreeAsync(p, s));
        } else {
            CHECK(cudaMalloc(&p, size));
            work();
            CHECK(cudaFree(p));
        }
        work();
    }
}

static void *worker(void *arg)
{
    (void)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    run_pairs(1000, s); /* warm up: first stacks, pool growth */
    CHECK(cudaStreamSynchronize(s));
    pthread_barrier_wait(&barrier);
    run_pairs(pairs, s);
    CHECK(cudaStreamSynchronize(s));
    pthread_barrier_wait(&barrier);
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: alloc_pair sync|async THREADS PAIRS [SIZE [WORK_NS]]\n");
        return 2;
    }
    async_mode = strcmp(argv[1], "async") == 0;
    int threads = atoi(argv[2]);
    pairs = atol(argv[3]);
    if (argc > 4)
        size = (size_t)atol(argv[4]);
    if (argc > 5)
        work_ns = atol(argv[5]);
    const char *chunks = getenv("ALLOC_PAIR_HOST_CHUNKS");
    char *end = NULL;
    long nchunks = chunks && *chunks ? strtol(chunks, &end, 10) : 0;
    if (chunks && *chunks && (*end || nchunks < 0)) {
        fprintf(stderr, "alloc_pair: ALLOC_PAIR_HOST_CHUNKS=%s: not a number of chunks\n", chunks);
        return 2;
    }
    CHECK(cudaFree(0));
    void **heap = nchunks > 0 ? (void **)malloc((size_t)nchunks * sizeof *heap) : NULL;
    for (long i = 0; heap && i < nchunks; i++)
        if ((heap[i] = malloc(64)))
            memset(heap[i], 1, 64);
    pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
    pthread_t *t = (pthread_t *)calloc((size_t)threads, sizeof *t);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pthread_barrier_wait(&barrier);
    double t0 = now();
    pthread_barrier_wait(&barrier);
    double t1 = now();
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%s %d %ld %.1f\n", argv[1], threads, pairs, (t1 - t0) * 1e9 / (double)pairs);
    return 0;
}
