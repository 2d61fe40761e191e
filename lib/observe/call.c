/* SPDX-License-Identifier: MIT */
#include "observe/call.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "base/prof.h"
#include "base/thread.h"
#include "common/util.h"
#include "event/dispatch.h"
#include "observe/contexts.h"
#include "observe/decode.h"
#include "stack/stack_capture.h"

GL_READ_MOSTLY _Atomic int gl_call_stacks = 1;
GL_READ_MOSTLY bool gl_call_free_stacks = true;
GL_READ_MOSTLY bool gl_call_null;
GL_READ_MOSTLY bool gl_call_spin;
/* GPULEAK_BENCH=spin:NS, in time-stamp counter ticks: the clock's own read
 * (about 20 ns) would be most of a wait of 25. */
static uint64_t spin_ticks;

void gl_call_set_stacks(bool enabled) { atomic_store(&gl_call_stacks, enabled); }
void gl_call_set_null(bool on) { gl_call_null = on; }

GL_HOT void gl_call_warm(const struct gl_event *ev)
{
    if (atomic_load_explicit(&gl_call_stacks, memory_order_relaxed))
        gl_stack_capture_warm();
    gl_dispatch_warm(ev);
}
void gl_call_set_free_stacks(bool enabled) { gl_call_free_stacks = enabled; }

/* ---- the benchmark knob ---- */

/* Whether a word said what the dispatcher leaves out already (see below). */
static bool left_out_set;

/* One word of GPULEAK_BENCH (the words are separated by commas); false
 * when it names what cannot be done. */
static bool bench_word(const char *w, size_t len)
{
#define IS(word) (len == sizeof word - 1 && strncmp(w, word, len) == 0)
    if (IS("null") && !gl_alternate_whole())
        gl_call_null = true;
    else if (IS("nostack"))
        gl_call_set_stacks(false);
    else if (IS("nomemo"))
        gl_stack_capture_memo_enable(false);
    else if (IS("nowarm"))
        gl_warm_mode = GL_WARM_OFF;
    else if (IS("profile"))
        gl_prof_init();
    /* alternate:gpuleak switches the producer itself (observe/alternate.h),
     * not what the dispatcher leaves out: it goes with noobserve or nostate
     * (what is left of gpuleak, against nothing), never with another
     * alternation (alternate.c refuses a second). */
    else if (len >= 17 && strncmp(w, "alternate:gpuleak", 17) == 0 && (len == 17 || w[17] == ':')) {
        if (gl_call_null || !gl_alternate_configure(w + 10, len - 10, gl_call_set_null))
            return false;
    }
    /* noobserve, nostate and alternate each say what the dispatcher leaves
     * out, one setting: the second of them would undo the first (alternate
     * puts every consumer back at its first turn), so it is refused. */
    else if (IS("noobserve") || IS("nostate") || (len > 10 && strncmp(w, "alternate:", 10) == 0)) {
        if (left_out_set)
            return false;
        if (IS("noobserve"))
            gl_dispatch_bench_without_observers(true);
        else if (IS("nostate"))
            gl_dispatch_bench_leave_out("everything");
        else if (!gl_alternate_configure(w + 10, len - 10, NULL))
            return false;
        left_out_set = true;
    } else if (len > 5 && strncmp(w, "spin:", 5) == 0 && !gl_alternate_whole()) {
        gl_call_null = true;
        uint64_t ns = strtoull(w + 5, NULL, 10);
        spin_ticks = ns ? (uint64_t)((double)ns * gl_prof_ticks_per_ns(5000000u) + 0.5) : 0;
        gl_call_spin = spin_ticks != 0;
    } else
        return false;
#undef IS
    return true;
}

bool gl_call_bench_mode(const char *mode, char *bad, size_t badlen)
{
    bool ok = true;
    while (mode && *mode) {
        size_t len = strcspn(mode, ",");
        if (!bench_word(mode, len) && ok) {
            ok = false;
            snprintf(bad, badlen, "%.*s", (int)len, mode);
        }
        mode += len + (mode[len] == ',');
    }
    return ok;
}

/* Busy for the knob's time: what a call of that length costs the program,
 * without gpuleak's own work (does the observer serialize calls?).  A pause
 * takes about 140 cycles on recent Intel cores, which made every wait under
 * about 50 ns the same wait: the last few hundred ticks are read without one
 * (a read of the counter is some 25), the rest pause, leaving the core's
 * other thread its share as before. */
void gl_call_bench_spin_wait(void)
{
    uint64_t end = __rdtsc() + spin_ticks, now;
    while ((now = __rdtsc()) < end)
        if (end - now > 400)
            __builtin_ia32_pause();
}

/* What a failed call still means: the request of an allocation that ran out
 * of memory (for the OOM report), the end of a capture that failed. */
bool gl_call_failure_event(uint32_t cbid, const void *params, CUresult rc, struct gl_event *ev)
{
    *ev = (struct gl_event){.flags = GL_EVF_FAILED};
    if (!gl_decode(cbid, GL_SITE_EXIT, params, ev))
        return false;
    if (ev->type == GL_EV_CAPTURE_END) {
        ev->key = 0; /* a failed end still ends the capture, with no graph */
        return true;
    }
    if ((ev->type == GL_EV_ALLOC || ev->type == GL_EV_GRAPH_NODE_ALLOC) &&
        rc == CUDA_ERROR_OUT_OF_MEMORY) {
        ev->type = GL_EV_ALLOC_FAILED;
        ev->flags &= (uint16_t)~GL_EVF_FAILED;
        return true;
    }
    return false;
}

void gl_call_on_failure(uint32_t cbid, const void *params, struct gl_call_site *site, CUresult rc)
{
    struct gl_event ev;
    if (!gl_call_failure_event(cbid, params, rc, &ev))
        return;
    if (ev.type == GL_EV_ALLOC_FAILED)
        ev.stack = gl_call_capture(site); /* the OOM report's */
    gl_call_fill_common(&ev, site);
    gl_call_place(&ev);
    gl_dispatch(&ev);
}

bool gl_call_decode(uint32_t cbid, const void *params, bool at_exit, CUresult rc,
                    struct gl_event *ev)
{
    if (at_exit && rc != CUDA_SUCCESS)
        return gl_call_failure_event(cbid, params, rc, ev);
    *ev = (struct gl_event){0};
    return gl_decode(cbid, at_exit ? GL_SITE_EXIT : GL_SITE_ENTER, params, ev);
}
