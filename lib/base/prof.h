/* SPDX-License-Identifier: MIT */
/* Where the hot path's time goes: GPULEAK_BENCH=profile times each phase of the
 * callback with the cycle counter and, once, walks one stack frame by frame, and
 * the exit report ends with the figures (bench/README.md tells how to read them).
 * Off, it costs one predictable branch per phase. */
#ifndef GPULEAK_PROFILE_H
#define GPULEAK_PROFILE_H

#include <stdint.h>
#include <x86intrin.h>

enum gl_prof_phase {
    GL_PROF_ALLOC,      /* whole allocation callback (exit site) */
    GL_PROF_STACK,      /* stack capture, trim, depot */
    GL_PROF_UNWIND,     /* of which the libunwind walk */
    GL_PROF_PYTHON,     /* of which the Python frames (python_frames.h) */
    GL_PROF_MEMO,       /* of which looking the stack up in the thread's memo (stack_memo.h) */
    GL_PROF_LEARN,      /* of which walking a stack for the memo */
    GL_PROF_MERGE,      /* of which merging native and Python frames and interning them
                           (the thread's mixed memo did not know the stack) */
    GL_PROF_INSERT,     /* table insert and counters */
    GL_PROF_FREE_ENTER, /* free at entry: detach */
    GL_PROF_FREE_EXIT,  /* free at exit: confirm */
    GL_PROF_NPHASES
};

extern int gl_prof_on __attribute__((visibility("hidden")));

static inline uint64_t gl_prof_now(void) { return __builtin_expect(gl_prof_on, 0) ? __rdtsc() : 0; }
void gl_prof_add_ticks(enum gl_prof_phase p, uint64_t start, uint64_t end);
/* Add the ticks from start to end to phase p (nothing, but one load, when off). */
static inline void gl_prof_add(enum gl_prof_phase p, uint64_t start, uint64_t end)
{
    if (__builtin_expect(gl_prof_on, 0))
        gl_prof_add_ticks(p, start, end);
}

/* Called by stack capture: on the 1000th capture, walk the stack once with
 * unw_step, timing each frame. */
void gl_prof_maybe_walk(void);

void gl_prof_init(void);
/* The time-stamp counter's ticks a nanosecond, measured against the clock
 * over window_ns (busy all the while: at start-up only). */
double gl_prof_ticks_per_ns(uint64_t window_ns);

/* Results, for the report: average ns of a phase (0 calls: not measured). */
const char *gl_prof_phase_name(enum gl_prof_phase p);
uint64_t gl_prof_calls(enum gl_prof_phase p);
double gl_prof_avg_ns(enum gl_prof_phase p);
/* The one stack walked frame by frame: count, return addresses, ns per step;
 * *backtrace_ns gets what unw_backtrace took for the same stack. */
int gl_prof_walk(const uintptr_t **ips, const uint64_t **ns, uint64_t *backtrace_ns);

#endif
