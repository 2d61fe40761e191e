/* SPDX-License-Identifier: MIT */
/* A clock read in one load, for the times recorded per event (--save's
 * events, --memory-viz's history).  A thread of gpuleak's ("gpuleak-tick")
 * stores CLOCK_MONOTONIC (common/clock.h) into one word every millisecond
 * while events flow, and sleeps once none came for 100 ms; the first reader
 * after that reads the coarse clock itself and wakes it.
 *
 * Why: where the program leaves the caches cold between two calls (the CUDA
 * driver's own work, a Python interpreter), even the coarse clock's vDSO
 * read cost about 10 ns an allocate/free pair of the observers that
 * timestamp events (bench/RESULTS.md); a word the calling thread has in its
 * cache costs nothing, and the clock thread's wake-ups (a thousand a second,
 * a few microseconds each, only while events flow) cost the program's
 * threads nothing.
 *
 * What a time means: CLOCK_MONOTONIC as the clock thread last read it, at
 * most a millisecond behind, more when the system runs the thread late;
 * never ahead.  Times read by different threads compare; they can repeat,
 * and, across the thread's sleeps (the coarse clock is up to a kernel tick
 * late), go back by up to a tick: users that need an order keep it
 * otherwise (the log's file order, the history's positions).  Without the
 * thread (not started, a fork child, no thread could be made) every read is
 * the coarse clock's. */
#ifndef GPULEAK_TICKER_H
#define GPULEAK_TICKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct gl_ticker {
    _Alignas(64) _Atomic uint64_t ns; /* 0: not ticking (read the clock) */
    _Atomic uint32_t used;            /* read since the last tick */
};
extern struct gl_ticker gl_ticker __attribute__((visibility("hidden")));

/* Start the clock thread (once; later calls do nothing).  False when it
 * could not be made: reads then read the coarse clock. */
bool gl_ticker_start(void);

/* Not ticking: the coarse clock, and the thread woken if it sleeps. */
uint64_t gl_ticker_read_slow(void);

/* ns of CLOCK_MONOTONIC, as above.  Lock-free, no system call while the
 * thread ticks; safe inside CUDA calls and signal handlers. */
static inline uint64_t gl_ticker_ns(void)
{
    uint64_t t = atomic_load_explicit(&gl_ticker.ns, memory_order_relaxed);
    if (__builtin_expect(!atomic_load_explicit(&gl_ticker.used, memory_order_relaxed), 0))
        atomic_store_explicit(&gl_ticker.used, 1, memory_order_relaxed);
    return __builtin_expect(t != 0, 1) ? t : gl_ticker_read_slow();
}

/* In a fork child: the thread is the parent's; reads read the clock. */
void gl_ticker_after_fork(void);

/* Tests: whether the thread ticks now (it sleeps after 100 ms unread). */
bool gl_ticker_ticking(void);

#endif
