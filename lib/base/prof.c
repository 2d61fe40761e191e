/* SPDX-License-Identifier: MIT */
#include "base/prof.h"

#include <stdatomic.h>

#include "base/thread.h"
#include "common/clock.h"
#include "common/util.h"
#include "stack/unwind.h"

GL_READ_MOSTLY int gl_prof_on;

_Static_assert(GL_PROF_NPHASES == GL_THREAD_PROF_PHASES, "gl_thread's profile counters");

/* A thread's counts live in its gl_thread (never freed: reused, counts kept);
 * these take those of a thread without one at the time: none made yet,
 * past its exit handler, or out of memory. */
static _Atomic uint64_t ticks[GL_PROF_NPHASES], calls[GL_PROF_NPHASES];
static double ns_per_tick = 1.0;
static _Atomic unsigned captures;

#define WALK_MAX 64
static uintptr_t walk_ips[WALK_MAX];
static uint64_t walk_ns[WALK_MAX];
static int walk_n;
static uint64_t walk_backtrace_ns;

static const char *const phase_names[GL_PROF_NPHASES] = {
    "allocation callback",   "  stack capture",     "    libunwind walk",   "    Python frames",
    "    stack memo lookup", "    stack memo walk", "    merge and intern", "  table insert",
    "free at entry",         "free at exit",
};

double gl_prof_ticks_per_ns(uint64_t window_ns)
{
    uint64_t c0 = gl_clock_ns(), t0 = __rdtsc(), c1;
    while ((c1 = gl_clock_ns()) - c0 < window_ns)
        ;
    return (double)(__rdtsc() - t0) / (double)(c1 - c0);
}

void gl_prof_init(void)
{
    gl_prof_on = 1;
    ns_per_tick = 1.0 / gl_prof_ticks_per_ns(20000000u);
}

void gl_prof_add_ticks(enum gl_prof_phase p, uint64_t start, uint64_t end)
{
    struct gl_thread *t = gl_thread_cur;
    if (t) {
        gl_thread_add(&t->prof_ticks[p], (int64_t)(end - start));
        gl_thread_add(&t->prof_calls[p], 1);
        return;
    }
    atomic_fetch_add_explicit(&ticks[p], end - start, memory_order_relaxed);
    atomic_fetch_add_explicit(&calls[p], 1, memory_order_relaxed);
}

/* Ticks and calls of a phase, every thread's summed. */
static void totals(enum gl_prof_phase p, uint64_t *nticks, uint64_t *ncalls)
{
    *nticks = atomic_load(&ticks[p]);
    *ncalls = atomic_load(&calls[p]);
    gl_thread_registry_lock();
    for (struct gl_thread *t = gl_thread_registry(); t; t = t->next) {
        *nticks += (uint64_t)atomic_load_explicit(&t->prof_ticks[p], memory_order_relaxed);
        *ncalls += (uint64_t)atomic_load_explicit(&t->prof_calls[p], memory_order_relaxed);
    }
    gl_thread_registry_unlock();
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

uint64_t gl_prof_calls(enum gl_prof_phase p)
{
    uint64_t t, c;
    totals(p, &t, &c);
    return c;
}

double gl_prof_avg_ns(enum gl_prof_phase p)
{
    uint64_t t, c;
    totals(p, &t, &c);
    return c ? (double)t * ns_per_tick / (double)c : 0;
}

int gl_prof_walk(const uintptr_t **ips, const uint64_t **ns, uint64_t *backtrace_ns)
{
    *ips = walk_ips;
    *ns = walk_ns;
    *backtrace_ns = walk_backtrace_ns;
    return walk_n;
}
