/* SPDX-License-Identifier: MIT */
#include "base/prof.h"

#include <stdatomic.h>

#include "common/clock.h"
#include "stack/unwind.h"

int gl_prof_on;

static _Atomic uint64_t ticks[GL_PROF_NPHASES], calls[GL_PROF_NPHASES];
static double ns_per_tick = 1.0;
static _Atomic unsigned captures;

#define WALK_MAX 64
static uintptr_t walk_ips[WALK_MAX];
static uint64_t walk_ns[WALK_MAX];
static int walk_n;
static uint64_t walk_backtrace_ns;

static const char *const phase_names[GL_PROF_NPHASES] = {
    "allocation callback", "  stack capture",       "    libunwind walk",
    "    Python frames",   "    stack memo lookup", "    stack memo walk",
    "  table insert",      "free at entry",         "free at exit",
};

void gl_prof_init(void)
{
    gl_prof_on = 1;
    uint64_t start = gl_clock_ns();
    uint64_t t0 = __rdtsc();
    while (gl_clock_ns() - start < 20000000u)
        ;
    uint64_t t1 = __rdtsc();
    ns_per_tick = 20e6 / (double)(t1 - t0);
}

void gl_prof_add_ticks(enum gl_prof_phase p, uint64_t start, uint64_t end)
{
    atomic_fetch_add_explicit(&ticks[p], end - start, memory_order_relaxed);
    atomic_fetch_add_explicit(&calls[p], 1, memory_order_relaxed);
}

void gl_prof_maybe_walk(void)
{
    if (!gl_prof_on || atomic_fetch_add(&captures, 1) != 1000)
        return;
    uintptr_t tmp[WALK_MAX];
    uint64_t t0 = __rdtsc();
    gl_unwind_backtrace(tmp, WALK_MAX);
    walk_backtrace_ns = (uint64_t)((double)(__rdtsc() - t0) * ns_per_tick);
    walk_n = gl_unwind_step_profile(walk_ips, walk_ns, WALK_MAX);
}

const char *gl_prof_phase_name(enum gl_prof_phase p) { return phase_names[p]; }

uint64_t gl_prof_calls(enum gl_prof_phase p) { return atomic_load(&calls[p]); }

double gl_prof_avg_ns(enum gl_prof_phase p)
{
    uint64_t c = atomic_load(&calls[p]);
    return c ? (double)atomic_load(&ticks[p]) * ns_per_tick / (double)c : 0;
}

int gl_prof_walk(const uintptr_t **ips, const uint64_t **ns, uint64_t *backtrace_ns)
{
    *ips = walk_ips;
    *ns = walk_ns;
    *backtrace_ns = walk_backtrace_ns;
    return walk_n;
}
