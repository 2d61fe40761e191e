/* SPDX-License-Identifier: MIT */
/* Warming: asking for lines ahead of a call's exit.
 *
 * At the entry of an allocation, whose work comes at its exit (it is
 * recorded once the driver returned its address), the lines that work will
 * read are asked for, so that they arrive while the driver runs instead of
 * one miss after another at the exit (releases do not warm: observe/call.h
 * says why): in a real program gpuleak's
 * data is in the outer caches at every call (bench/cold), and an allocation
 * takes the driver a microsecond or more.  Only addresses known at the entry
 * can be warmed, and warming changes nothing: it uses no value it reads, and
 * a line warmed in vain costs a prefetch.
 *
 * gl_warm_mode: GL_WARM_PREFETCH by default; GL_WARM_OFF under
 * GPULEAK_BENCH=nowarm, so that a benchmark shows what warming saves;
 * GL_WARM_LOADS under GPULEAK_DEBUG_WARM_LOADS=1, where each line is read
 * instead, so that a cache simulator (which ignores prefetches: bench/cold)
 * shows the exit's misses moved to the entry: the warmed addresses are the
 * ones the exit reads. */
#ifndef GPULEAK_WARM_H
#define GPULEAK_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

enum { GL_WARM_OFF, GL_WARM_PREFETCH, GL_WARM_LOADS };
extern int gl_warm_mode __attribute__((visibility("hidden")));

/* GPULEAK_DEBUG_WARM_LOADS=1 read: the runtime's start. */
void gl_warm_init(void);

static inline bool gl_warm_on(void) { return __builtin_expect(gl_warm_mode != GL_WARM_OFF, 1); }

/* The line of p: any address in the default mode (a prefetch never faults);
 * in the loads mode, for tests, one the caller knows is mapped. */
static inline __attribute__((always_inline)) void gl_warm(const void *p)
{
    if (__builtin_expect(gl_warm_mode == GL_WARM_LOADS, 0))
        (void)*(const volatile char *)p;
    else
        __builtin_prefetch(p, 0, 3);
}

/* Every line of [p, p + bytes). */
static inline __attribute__((always_inline)) void gl_warm_range(const void *p, size_t bytes)
{
    const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63), *end = (const char *)p + bytes;
    for (; c < end; c += 64)
        gl_warm(c);
}

#endif
