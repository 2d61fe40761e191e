/* SPDX-License-Identifier: MIT */
/* What a clock read costs on this machine, in ns a read, three times over:
 * the time-stamp counter (__rdtsc), CLOCK_MONOTONIC and CLOCK_MONOTONIC_COARSE
 * (the vDSO's), and the counter's ticks a nanosecond.
 *
 *     bench/clock_cost [READS]
 *
 * Why: the runtime's hot path must not read a clock it can do without.  On
 * the GPU machine's VM a counter read took some 19 ns, two a pair, which is
 * why warming no longer asks how long the thread was away
 * (observe/call.h, bench/RESULTS.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns a read of clock id, over n reads. */
static double clock_read_ns(clockid_t id, long n, uint64_t *sink)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        struct timespec t;
        clock_gettime(id, &t);
        *sink += (uint64_t)t.tv_nsec;
    }
    return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10000000;
    if (n < 1000) {
        fprintf(stderr, "clock_cost: READS %s: at least 1000\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    uint64_t sink = 0;
    for (int round = 0; round < 3; round++) {
        double t0 = now_ns();
        uint64_t c0 = __rdtsc();
        for (long i = 0; i < n; i++)
            sink += __rdtsc();
        double t1 = now_ns();
        uint64_t c1 = __rdtsc();
        double tsc = (t1 - t0) / (double)n;
        double mono = clock_read_ns(CLOCK_MONOTONIC, n / 4, &sink);
        double coarse = clock_read_ns(CLOCK_MONOTONIC_COARSE, n / 4, &sink);
        printf("clock_cost: rdtsc %.2f ns a read (%.3f ticks a ns); CLOCK_MONOTONIC %.2f ns; "
               "CLOCK_MONOTONIC_COARSE %.2f ns\n",
               tsc, (double)(c1 - c0) / (t1 - t0), mono, coarse);
    }
    return sink == 42; /* keeps the reads */
}
