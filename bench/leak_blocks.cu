/* SPDX-License-Identifier: MIT */
// Exit-time leak check benchmark: N device blocks live (and lost) at exit.
//   leak_blocks N [async|sync]
// Allocates N blocks of 256 bytes (cudaMallocAsync on one stream, or cudaMalloc
// with "sync") from 4 call sites in turn, keeps no pointer to any of them
// (definitely lost: a few loss records, not N), waits for the stream and
// returns from main.  Prints
//   main_ms X        start of main to its end (the allocations), milliseconds
//   main_end_ns T    CLOCK_MONOTONIC at the end of main, nanoseconds
// bench/run takes its own CLOCK_MONOTONIC once the process has exited: the
// difference is the time from the end of main to the exit, the leak check and
// report of whatever tool runs the program included.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h" /* CHECK: every CUDA call checked */



static const size_t kSize = 256;
static int sync_mode;
// One counter per site: it makes each site's body differ, so the compiler's
// identical-code folding cannot merge the sites into one stack.
static volatile long site_count[4];

template <int K> NOINLINE static void *site(cudaStream_t s)
{
    void *p;
    if (sync_mode)
        CHECK(cudaMalloc(&p, kSize));
    else
        CHECK(cudaMallocAsync(&p, kSize, s));
    site_count[K] = site_count[K] + 1;
    return p;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long long t0 = now_ns();
    if (argc < 2) {
        fprintf(stderr, "usage: leak_blocks N [async|sync]\n");
        return 2;
    }
    long n = atol(argv[1]);
    sync_mode = argc > 2 && strcmp(argv[2], "sync") == 0;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (long i = 0; i < n; i++) {
        switch (i & 3) {
        case 0: (void)site<0>(s); break;
        case 1: (void)site<1>(s); break;
        case 2: (void)site<2>(s); break;
        default: (void)site<3>(s); break;
        }
    }
    CHECK(cudaStreamSynchronize(s));
    long long t1 = now_ns();
    printf("main_ms %.3f\n", (double)(t1 - t0) / 1e6);
    printf("main_end_ns %lld\n", now_ns());
    return 0;
}
