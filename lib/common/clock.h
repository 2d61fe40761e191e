/* SPDX-License-Identifier: MIT */
/* The one clock: CLOCK_MONOTONIC, through the vDSO (no system call), safe in
 * signal handlers and inside CUDA callbacks.  Every duration and timestamp
 * gpuleak takes (events' time_ns, the trace file, timeouts, -v's timings)
 * reads it, so that they compare.  The cycle counter of GPULEAK_BENCH=profile
 * (base/prof.h) is the one exception: it measures nanoseconds, not times. */
#ifndef GPULEAK_CLOCK_H
#define GPULEAK_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gl_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double gl_clock_s(void) { return (double)gl_clock_ns() * 1e-9; }

/* The same clock as the kernel last ticked it (CLOCK_MONOTONIC_COARSE): a
 * few ns to read against the full clock's tens or the time-stamp counter's
 * twenty on the VMs measured (bench/RESULTS.md), at the tick's resolution (1
 * to 4 ms), and never ahead of gl_clock_ns().  For times recorded per event
 * where an order is kept otherwise (the event log's file order). */
static inline uint64_t gl_clock_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
