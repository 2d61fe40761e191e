/* SPDX-License-Identifier: MIT */
/* A tracked driver call turned into events, whichever producer saw it: CUPTI's
 * callbacks (observe/cupti.h) or the hooks at the driver's entry points
 * (observe/driver.h).  Both hand over the same thing, the call's parameters
 * laid out as CUPTI's *_params struct (observe/decode.h), at its entry and at
 * its exit with the driver's result, so that the two observers cannot differ
 * in what they make of a call, only in which calls they see.
 *
 * What it does per call: decode the parameters, say which thread and context,
 * capture the stack of an allocation (and of a free, with
 * --keep-stacktraces=alloc-and-free), and dispatch: complete at the exit of an
 * allocation that succeeded (its output exists only then), in two phases for
 * releases (begun at entry, ended at exit with the driver's verdict), at entry
 * for a copy or set.  A failed allocation is dispatched only when it ran out of
 * memory (GL_EV_ALLOC_FAILED, for the OOM report), a failed capture end so
 * that the capture ends.
 *
 * Rules it keeps: no CUDA call, no malloc, no lock held across anything but a
 * table update, nothing that can block.  The error path is the exception
 * (track/errors.h). */
#ifndef GPULEAK_CALL_H
#define GPULEAK_CALL_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/warm.h"
#include "base/prof.h"
#include "base/thread.h"
#include "event/dispatch.h"
#include "event/event.h"
#include "observe/alternate.h"
#include "observe/contexts.h"
#include "observe/decode.h"
#include "stack/stack_capture.h"

/* Where the call was seen.  entry: the address of the driver function called,
 * when the stack is captured outside it (the driver observer's hooks), so that
 * stacks name the entry point the program called as CUPTI's do; 0 when the
 * stack is captured inside the driver (CUPTI). */
struct gl_call_site {
    uint64_t ctx; /* the context current at the call, or GL_CALL_CTX_UNASKED */
    uintptr_t entry;
};
/* The producer asks for the context only when an event needs it
 * (gl_call_site_ctx): a release needs none unless a consumer writes events
 * out (GL_CONSUMER_CONTEXTS); an error asks later (GL_EVF_CTX_LATER). */
#define GL_CALL_CTX_UNASKED UINT64_MAX

static inline uint64_t gl_call_site_ctx(struct gl_call_site *site)
{
    if (site->ctx == GL_CALL_CTX_UNASKED)
        site->ctx = gl_dispatch_current_context();
    return site->ctx;
}

/* What the call makes of its parameters at its entry (GL_SITE_ENTER) or exit,
 * without dispatching: the cross-check's view (observe/crosscheck.h).  Returns
 * false when nothing is made there. */
bool gl_call_decode(uint32_t cbid, const void *params, bool at_exit, CUresult rc,
                    struct gl_event *ev);

/* Stack capture can be turned off for tests that drive the producers by hand. */
void gl_call_set_stacks(bool enabled);
/* Capture a stack at every free too (--keep-stacktraces=alloc-and-free). */
void gl_call_set_free_stacks(bool enabled);

/* Benchmark knob, for both producers: GPULEAK_BENCH=null makes the producer
 * return at once (the observer's own cost: CUPTI's, or a hook's),
 * GPULEAK_BENCH=nostack skips stack capture, GPULEAK_BENCH=spin:NS makes every
 * call (entry and exit) only wait NS nanoseconds (which tells whether the
 * observer serializes calls), GPULEAK_BENCH=nomemo unwinds every stack (no stack
 * memo, stack_memo.h), GPULEAK_BENCH=profile times the phases,
 * GPULEAK_BENCH=noobserve leaves the observers out, GPULEAK_BENCH=nostate
 * every consumer (the block table too: decoding and stacks are what is left,
 * the floor of a design that resolves events off the calling thread),
 * GPULEAK_BENCH=alternate:
 * NAME[:PAIRS] leaves one out every other block of frees (observe/alternate.h),
 * alternate:gpuleak[:PAIRS] the producer itself (as null; refused with null
 * or spin, allowed with noobserve or nostate);
 * several, separated by commas (profile,nomemo).  Read once at injection,
 * after the tracking is configured.  False, with the first word it could not
 * follow in bad, when one names what cannot be done. */
bool gl_call_bench_mode(const char *mode, char *bad, size_t badlen);
/* Whether GPULEAK_BENCH=null or spin is on; spin waits its NS (0: none). */
extern bool gl_call_null;
/* Whether GPULEAK_BENCH=spin waits at all: the hooks then stay on, to wait. */
extern bool gl_call_spin;
static inline bool gl_call_bench_null(void) { return gl_call_null; }
/* GPULEAK_BENCH=alternate:gpuleak's switch (observe/alternate.h), between
 * two pairs on the one calling thread: the producer does nothing while on. */
void gl_call_set_null(bool on);
/* GPULEAK_BENCH=spin:NS's wait; nothing, without a call, when none is set
 * (null, alternate:gpuleak's blocks without). */
void gl_call_bench_spin_wait(void);
static inline void gl_call_bench_spin(void)
{
    if (gl_call_spin)
        gl_call_bench_spin_wait();
}

/* ---- the path itself: inline into each producer, as the hot path was ---- */

/* The knobs above, read on every call. */
extern _Atomic int gl_call_stacks;
extern bool gl_call_free_stacks;

static inline uint32_t gl_call_capture(const struct gl_call_site *site)
{
    if (!atomic_load_explicit(&gl_call_stacks, memory_order_relaxed))
        return 0;
    return gl_stack_capture_entry(site->entry);
}

/* At an allocation's entry, the lines its exit will touch (base/warm.h):
 * the stack capture's and the consumers'.  Out of line: the warm calls are
 * what it does, and the entry's own path stays short.
 *
 * Only allocations warm, and each one does.  A release's entry warmed too,
 * and both only when the thread's last entry was over about a microsecond
 * ago, by the time-stamp counter; but a read of the counter takes some 19 ns
 * on the GPU machine's VM, two a pair, and in one process (GPULEAK_BENCH=
 * alternate:gpuleak) the check and the release's warming cost an async pair
 * 36 to 64 ns more than warming every allocation without the check, which
 * itself costs about 10 ns against no warming at all in the machine's fast
 * state (up to 30 in its slow one); in a training step a
 * release's warming had cost its entry more than it saved at its exit
 * (bench/RESULTS.md). */
void gl_call_warm(const struct gl_event *ev);

static inline void gl_call_fill_common(struct gl_event *ev, struct gl_call_site *site)
{
    struct gl_thread *self = gl_thread_self();
    ev->tid = self ? self->tid : 0;
    if (self && __builtin_expect(self->disabled > 0, 0))
        ev->flags |= GL_EVF_IGNORED;
    /* Stream-ordered memory is its stream's context's, whichever is current
     * (observe/contexts.h), and so is a refused request's device: both
     * producers say so, and the driver is not asked. */
    if (ev->kind == GL_MEM_ASYNC && (ev->type == GL_EV_ALLOC || ev->type == GL_EV_ALLOC_FAILED)) {
        uint64_t stream_ctx = gl_contexts_stream_ctx(ev->aux);
        if (stream_ctx) {
            ev->ctx = stream_ctx;
            return;
        }
    }
    if (site->ctx == GL_CALL_CTX_UNASKED && gl_dispatch_is_release(ev) &&
        !gl_dispatch_wants_contexts()) {
        ev->ctx = 0;
        ev->flags |= GL_EVF_CTX_LATER;
    } else {
        ev->ctx = gl_call_site_ctx(site);
    }
}

/* The device of the event's context: for stream-ordered memory on a stream
 * made in sight, the stream's (gl_call_fill_common set it), which need not be
 * the current one. */
static inline void gl_call_place(struct gl_event *ev)
{
    if (ev->device != GL_DEVICE_FROM_CONTEXT)
        return;
    ev->device = (int16_t)gl_contexts_device(gl_dispatch_ctx(ev));
}

/* What a call that succeeded made: complete at its exit.  Inlined, so that
 * the stack memo sees the same frames as the capture that learnt it. */
static inline __attribute__((always_inline)) void gl_call_on_success(struct gl_event *ev,
                                                                     struct gl_call_site *site)
{
    gl_call_fill_common(ev, site);
    gl_call_place(ev);
    if (ev->type == GL_EV_ALLOC || ev->type == GL_EV_GRAPH_NODE_ALLOC) {
        uint64_t t0 = gl_prof_now();
        ev->stack = gl_call_capture(site);
        uint64_t t1 = gl_prof_now();
        gl_dispatch(ev);
        if (gl_prof_on) {
            uint64_t t2 = gl_prof_now();
            gl_prof_add(GL_PROF_STACK, t0, t1);
            gl_prof_add(GL_PROF_INSERT, t1, t2);
            gl_prof_add(GL_PROF_ALLOC, t0, t2);
        }
        return;
    }
    /* An unmap may free a released handle: its stack is that free's, kept
     * when free stacks are. */
    if (ev->type == GL_EV_VMM_UNMAP && gl_call_free_stacks)
        ev->stack = gl_call_capture(site);
    gl_dispatch(ev);
}

/* What a failed call still means (its request, for the OOM report; a capture
 * ended); false if nothing.  Out of line: the rare path. */
bool gl_call_failure_event(uint32_t cbid, const void *params, CUresult rc, struct gl_event *ev);
void gl_call_on_failure(uint32_t cbid, const void *params, struct gl_call_site *site, CUresult rc);

/* At the call's entry: a release begun (returns its token, never 0), a copy or
 * set checked, a graph destroyed.  Returns 0 when nothing was begun. */
static inline __attribute__((always_inline)) uint64_t
gl_call_enter(uint32_t cbid, const void *params, struct gl_call_site *site)
{
    struct gl_event ev = {0};
    if (!gl_decode(cbid, GL_SITE_ENTER, params, &ev)) {
        /* An allocation's event comes at its exit (decode.h). */
        if (ev.type == GL_EV_ALLOC && gl_warm_on())
            gl_call_warm(&ev);
        return 0;
    }
    uint64_t t0 = gl_prof_now(), token = 0;
    gl_call_fill_common(&ev, site);
    if (gl_dispatch_is_release(&ev)) {
        token = gl_dispatch_begin(&ev);
    } else {
        /* A copy or set, checked before it runs, on the device of the current
         * context; a graph destroyed. */
        if (ev.type == GL_EV_ACCESS)
            ev.device = GL_DEVICE_FROM_CONTEXT;
        gl_call_place(&ev);
        gl_dispatch(&ev);
    }
    gl_prof_add(GL_PROF_FREE_ENTER, t0, gl_prof_now());
    return token;
}

/* At its exit, with the driver's result and the token gl_call_enter gave. */
static inline __attribute__((always_inline)) void gl_call_exit(uint32_t cbid, const void *params,
                                                               struct gl_call_site *site,
                                                               CUresult rc, uint64_t token)
{
    struct gl_event ev = {0};
    if (token) {
        /* A release: its entry took the block out; the end confirms or puts it
         * back.  The block gives the device; an error finds it from the
         * context (event/dispatch.h, placement). */
        if (gl_decode(cbid, GL_SITE_ENTER, params, &ev)) {
            uint64_t t0 = gl_prof_now();
            gl_call_fill_common(&ev, site);
            ev.device = GL_DEVICE_FROM_CONTEXT; /* found only if an error needs it */
            if (rc != CUDA_SUCCESS)
                ev.flags |= GL_EVF_FAILED;
            /* The free's stack, for the quarantine (and any error found). */
            if (gl_call_free_stacks)
                ev.stack = gl_call_capture(site);
            gl_dispatch_end(token, &ev);
            gl_prof_add(GL_PROF_FREE_EXIT, t0, gl_prof_now());
        }
        return;
    }
    if (rc == CUDA_SUCCESS) {
        if (gl_decode(cbid, GL_SITE_EXIT, params, &ev))
            gl_call_on_success(&ev, site);
    } else {
        gl_call_on_failure(cbid, params, site, rc);
    }
}

#endif
