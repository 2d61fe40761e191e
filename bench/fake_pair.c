/* SPDX-License-Identifier: MIT */
/* Allocate/free pairs through whatever libcuda.so.1 the loader finds, reached
 * as the CUDA runtime reaches it (dlopen, dlsym): bench/instructions runs it
 * over tests/driver's fake driver under the launcher, so that the whole
 * process's work a pair is counted, the allocator hooks' on the driver's own
 * host chunks included (which GPULEAK_BENCH=alternate:gpuleak runs in both
 * of its halves, and bench/hotpath never calls).
 *
 *   bench/fake_pair PAIRS [HOST_CHUNKS]
 *
 * HOST_CHUNKS (default 0) small chunks are malloc'ed first and kept: a
 * larger program's heap, beside which the allocator hooks' table answers the
 * driver's frees (bench/run's "200k host chunks" row on the GPU).
 *
 * The pairs run on a stream it makes, as bench/alloc_pair's on the GPU.
 * Exits 1 with one line if the driver is missing or refuses a call. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUstream;

int main(int argc, char **argv)
{
    char *end = NULL, *end2 = NULL;
    long pairs = argc == 2 || argc == 3 ? strtol(argv[1], &end, 10) : -1;
    long chunks = argc == 3 ? strtol(argv[2], &end2, 10) : 0;
    if (pairs < 1 || !end || *end || chunks < 0 || (argc == 3 && (!end2 || *end2 || !*argv[2]))) {
        fprintf(stderr, "usage: fake_pair PAIRS [HOST_CHUNKS] (a positive number, then a count)\n");
        return 2;
    }
    /* Kept to the end: the table holds them while the pairs run. */
    void **kept = chunks ? malloc((size_t)chunks * sizeof *kept) : NULL;
    for (long i = 0; i < chunks; i++)
        if (!kept || !(kept[i] = malloc(48))) {
            fprintf(stderr, "fake_pair: out of memory for %ld host chunks\n", chunks);
            return 1;
        }
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned) = h ? (CUresult(*)(unsigned))dlsym(h, "cuInit") : NULL;
    CUresult (*alloc)(CUdeviceptr *, size_t, CUstream) =
        h ? (CUresult(*)(CUdeviceptr *, size_t, CUstream))dlsym(h, "cuMemAllocAsync") : NULL;
    CUresult (*release)(CUdeviceptr, CUstream) =
        h ? (CUresult(*)(CUdeviceptr, CUstream))dlsym(h, "cuMemFreeAsync") : NULL;
    if (!init || !alloc || !release) {
        fprintf(stderr, "fake_pair: libcuda.so.1: %s\n",
                h ? "no cuInit or cuMemAllocAsync" : dlerror());
        return 1;
    }
    if (init(0) != 0) {
        fprintf(stderr, "fake_pair: cuInit failed\n");
        return 1;
    }
    /* On a stream of its own, as bench/alloc_pair on the GPU. */
    CUresult (*stream_create)(CUstream *, unsigned) =
        (CUresult(*)(CUstream *, unsigned))dlsym(h, "cuStreamCreate");
    CUstream s = NULL;
    if (!stream_create || stream_create(&s, 0) != 0) {
        fprintf(stderr, "fake_pair: cuStreamCreate missing or failed\n");
        return 1;
    }
    for (long i = 0; i < pairs; i++) {
        CUdeviceptr p = 0;
        CUresult rc = alloc(&p, 4096, s);
        if (rc == 0)
            rc = release(p, s);
        if (rc != 0) {
            fprintf(stderr, "fake_pair: pair %ld: driver error %d\n", i, rc);
            return 1;
        }
    }
    for (long i = 0; i < chunks; i++)
        free(kept[i]);
    free(kept);
    return 0;
}
