/* SPDX-License-Identifier: MIT */
// Copy/set microbenchmark: the cost gpuleak's range checks (--check-api-ranges)
// add to each cudaMemcpy/cudaMemset.
//   copy_loop h2d|d2h|d2d_async|memset_async OPS [SIZE]
// Prints one line: mode 1 ops ns_per_op (wall time / ops).
//   h2d           cudaMemcpy from pageable host memory to the start of a block
//   d2h           cudaMemcpy from inside a block to pinned host memory
//   d2d_async     cudaMemcpyAsync between interior addresses of two blocks
//   memset_async  cudaMemsetAsync at interior addresses
// 64 other blocks stay live, so that the range lookups search a real index.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h" /* CHECK: every CUDA call checked */


static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum mode { H2D, D2H, D2D_ASYNC, MEMSET_ASYNC };

static void run(enum mode m, long ops, size_t size, char *dst, char *src, char *host, char *pinned,
                cudaStream_t s)
{
    const size_t span = 1 << 20; /* interior offsets within the first MiB */
    for (long i = 0; i < ops; i++) {
        size_t off = ((size_t)i * 4096) % span;
        switch (m) {
        case H2D:
            CHECK(cudaMemcpy(dst, host, size, cudaMemcpyHostToDevice));
            break;
        case D2H:
            CHECK(cudaMemcpy(pinned, src + off, size, cudaMemcpyDeviceToHost));
            break;
        case D2D_ASYNC:
            CHECK(cudaMemcpyAsync(dst + off, src + off, size, cudaMemcpyDeviceToDevice, s));
            break;
        case MEMSET_ASYNC:
            CHECK(cudaMemsetAsync(dst + off, 0, size, s));
            break;
        }
        if ((i & 1023) == 1023)
            CHECK(cudaStreamSynchronize(s)); /* keep the queue from filling */
    }
    CHECK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: copy_loop h2d|d2h|d2d_async|memset_async OPS [SIZE]\n");
        return 2;
    }
    enum mode m;
    if (!strcmp(argv[1], "h2d"))
        m = H2D;
    else if (!strcmp(argv[1], "d2h"))
        m = D2H;
    else if (!strcmp(argv[1], "d2d_async"))
        m = D2D_ASYNC;
    else if (!strcmp(argv[1], "memset_async"))
        m = MEMSET_ASYNC;
    else {
        fprintf(stderr, "copy_loop: unknown mode '%s'\n", argv[1]);
        return 2;
    }
    long ops = atol(argv[2]);
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 4096;
    const size_t block = 2 << 20;
    if (size > block / 2) {
        fprintf(stderr, "copy_loop: SIZE must be at most %zu\n", block / 2);
        return 2;
    }
    void *others[64];
    for (int i = 0; i < 64; i++)
        CHECK(cudaMalloc(&others[i], block));
    char *dst, *src, *pinned;
    CHECK(cudaMalloc((void **)&dst, block));
    CHECK(cudaMalloc((void **)&src, block));
    CHECK(cudaMallocHost((void **)&pinned, size));
    char *host = (char *)calloc(1, size);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    run(m, 1000, size, dst, src, host, pinned, s); /* warm up */
    double t0 = now();
    run(m, ops, size, dst, src, host, pinned, s);
    double t1 = now();
    printf("%s 1 %ld %.1f\n", argv[1], ops, (t1 - t0) * 1e9 / (double)ops);
    for (int i = 0; i < 64; i++)
        CHECK(cudaFree(others[i]));
    CHECK(cudaFree(dst));
    CHECK(cudaFree(src));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaStreamDestroy(s));
    free(host);
    return 0;
}
