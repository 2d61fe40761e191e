#include "observe/call.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/prof.h"
#include "base/thread.h"
#include "common/clock.h"
#include "event/dispatch.h"
#include "observe/contexts.h"
#include "observe/decode.h"
#include "stack/stack_capture.h"

static _Atomic int stacks_enabled = 1;
static bool free_stacks = true;
static bool null_calls;
static uint64_t spin_ns; /* GPULEAK_BENCH=spin:NS */

void gl_call_set_stacks(bool enabled) { atomic_store(&stacks_enabled, enabled); }
void gl_call_set_free_stacks(bool enabled) { free_stacks = enabled; }

static inline uint32_t capture(const struct gl_call_site *site)
{
    if (!atomic_load_explicit(&stacks_enabled, memory_order_relaxed))
        return 0;
    return gl_stack_capture_entry(site->entry);
}

/* ---- the benchmark knob ---- */

/* One word of GPULEAK_BENCH (the words are separated by commas). */
static void bench_word(const char *w, size_t len)
{
#define IS(word) (len == sizeof word - 1 && strncmp(w, word, len) == 0)
    if (IS("null"))
        null_calls = true;
    else if (IS("nostack"))
        gl_call_set_stacks(false);
    else if (IS("nomemo"))
        gl_stack_capture_memo_enable(false);
    else if (IS("profile"))
        gl_prof_init();
    else if (len > 5 && strncmp(w, "spin:", 5) == 0) {
        null_calls = true;
        spin_ns = strtoull(w + 5, NULL, 10);
    }
#undef IS
}

void gl_call_bench_mode(const char *mode)
{
    while (mode && *mode) {
        size_t len = strcspn(mode, ",");
        bench_word(mode, len);
        mode += len + (mode[len] == ',');
    }
}

bool gl_call_bench_null(void) { return null_calls; }

/* Busy for the knob's time: what a call of that length costs the program,
 * without gpuleak's own work (does the observer serialize calls?). */
void gl_call_bench_spin(void)
{
    if (!spin_ns)
        return;
    uint64_t end = gl_clock_ns() + spin_ns;
    while (gl_clock_ns() < end)
        __builtin_ia32_pause();
}

/* ---- events ---- */

static inline void fill_common(struct gl_event *ev, const struct gl_call_site *site)
{
    struct gl_thread *self = gl_thread_self();
    ev->tid = self ? self->tid : 0;
    if (self && __builtin_expect(self->disabled > 0, 0))
        ev->flags |= GL_EVF_IGNORED;
    ev->ctx = site->ctx;
}

/* Stream-ordered memory comes from the pool of the stream's device, which need
 * not be the current one. */
static inline void place(struct gl_event *ev)
{
    if (ev->device != GL_DEVICE_FROM_CONTEXT)
        return;
    if (ev->kind == GL_MEM_ASYNC && gl_contexts_several_devices())
        ev->device = (int16_t)gl_contexts_stream_device(ev->aux, ev->ctx);
    else
        ev->device = (int16_t)gl_contexts_device(ev->ctx);
}

/* What a call that succeeded made: complete at its exit.  Inlined, so that
 * the stack memo sees the same frames as the capture that learnt it. */
static inline __attribute__((always_inline)) void on_success(struct gl_event *ev,
                                                             const struct gl_call_site *site)
{
    fill_common(ev, site);
    place(ev);
    if (ev->type == GL_EV_ALLOC || ev->type == GL_EV_GRAPH_NODE_ALLOC) {
        uint64_t t0 = gl_prof_now();
        ev->stack = capture(site);
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
    if (ev->type == GL_EV_VMM_UNMAP && free_stacks)
        ev->stack = capture(site);
    gl_dispatch(ev);
}

/* What a failed call still means: the request of an allocation that ran out
 * of memory (for the OOM report), the end of a capture that failed. */
static bool failure_event(uint32_t cbid, const void *params, CUresult rc, struct gl_event *ev)
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

static void on_failure(uint32_t cbid, const void *params, const struct gl_call_site *site,
                       CUresult rc)
{
    struct gl_event ev;
    if (!failure_event(cbid, params, rc, &ev))
        return;
    if (ev.type == GL_EV_ALLOC_FAILED)
        ev.stack = capture(site); /* the OOM report's */
    fill_common(&ev, site);
    place(&ev);
    gl_dispatch(&ev);
}

bool gl_call_decode(uint32_t cbid, const void *params, bool at_exit, CUresult rc,
                    struct gl_event *ev)
{
    if (at_exit && rc != CUDA_SUCCESS)
        return failure_event(cbid, params, rc, ev);
    *ev = (struct gl_event){0};
    return gl_decode(cbid, at_exit ? GL_SITE_EXIT : GL_SITE_ENTER, params, ev);
}

uint64_t gl_call_enter(uint32_t cbid, const void *params, const struct gl_call_site *site)
{
    struct gl_event ev = {0};
    if (!gl_decode(cbid, GL_SITE_ENTER, params, &ev))
        return 0;
    uint64_t t0 = gl_prof_now(), token = 0;
    fill_common(&ev, site);
    if (gl_dispatch_is_release(&ev)) {
        token = gl_dispatch_begin(&ev);
    } else {
        /* A copy or set, checked before it runs, on the device of the current
         * context; a graph destroyed. */
        if (ev.type == GL_EV_ACCESS)
            ev.device = GL_DEVICE_FROM_CONTEXT;
        place(&ev);
        gl_dispatch(&ev);
    }
    gl_prof_add(GL_PROF_FREE_ENTER, t0, gl_prof_now());
    return token;
}

void gl_call_exit(uint32_t cbid, const void *params, const struct gl_call_site *site, CUresult rc,
                  uint64_t token)
{
    struct gl_event ev = {0};
    if (token) {
        /* A release: its entry took the block out; the end confirms or puts it
         * back.  The block gives the device; an error finds it from the
         * context (event/dispatch.h, placement). */
        if (gl_decode(cbid, GL_SITE_ENTER, params, &ev)) {
            uint64_t t0 = gl_prof_now();
            fill_common(&ev, site);
            ev.device = GL_DEVICE_FROM_CONTEXT; /* found only if an error needs it */
            if (rc != CUDA_SUCCESS)
                ev.flags |= GL_EVF_FAILED;
            /* The free's stack, for the quarantine (and any error found). */
            if (free_stacks)
                ev.stack = capture(site);
            gl_dispatch_end(token, &ev);
            gl_prof_add(GL_PROF_FREE_EXIT, t0, gl_prof_now());
        }
        return;
    }
    if (rc == CUDA_SUCCESS) {
        if (gl_decode(cbid, GL_SITE_EXIT, params, &ev))
            on_success(&ev, site);
    } else {
        on_failure(cbid, params, site, rc);
    }
}
