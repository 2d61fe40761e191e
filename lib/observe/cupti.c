#include "observe/cupti.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event/api.h"
#include "track/errors.h"
#include "observe/contexts.h"
#include "observe/decode.h"
#include "track/graphs.h"
#include "base/prof.h"
#include "runtime.h"
#include "stack/stack_capture.h"
#include "base/thread.h"
#include "track/tracker.h"

static _Atomic int stacks_enabled = 1;
static int free_stacks = 1;
static int null_callback;
static uint64_t spin_ns; /* GPULEAK_BENCH=spin:NS */

void gl_callback_set_stacks(int enabled) { atomic_store(&stacks_enabled, enabled); }
void gl_callback_set_free_stacks(int enabled) { free_stacks = enabled; }

static inline uint32_t capture(void)
{
    return atomic_load_explicit(&stacks_enabled, memory_order_relaxed) ? gl_stack_capture() : 0;
}

/* One word of GPULEAK_BENCH (the words are separated by commas). */
static void bench_word(const char *w, size_t len)
{
#define IS(word) (len == sizeof word - 1 && strncmp(w, word, len) == 0)
    if (IS("null"))
        null_callback = 1;
    else if (IS("nostack"))
        gl_callback_set_stacks(0);
    else if (IS("nomemo"))
        gl_stack_capture_memo_enable(false);
    else if (IS("profile"))
        gl_prof_init();
    else if (len > 5 && strncmp(w, "spin:", 5) == 0) {
        null_callback = 1;
        spin_ns = strtoull(w + 5, NULL, 10);
    }
#undef IS
}

void gl_callback_bench_mode(const char *mode)
{
    while (mode && *mode) {
        size_t len = strcspn(mode, ",");
        bench_word(mode, len);
        mode += len + (mode[len] == ',');
    }
}

/* Busy for ns: what a callback of that length costs the program, without
 * gpuleak's own work (does the driver or CUPTI serialize callbacks?). */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns)
{
    uint64_t end = mono_ns() + ns;
    while (mono_ns() < end)
        __builtin_ia32_pause();
}

static inline void fill_common(struct gl_event *ev, const CUpti_CallbackData *cb)
{
    struct gl_thread *self = gl_thread_self();
    ev->tid = self ? self->tid : 0;
    if (self && __builtin_expect(self->disabled > 0, 0))
        ev->flags |= GL_EVF_IGNORED;
    ev->ctx = (uintptr_t)cb->context;
}

static void on_exit_acquire(struct gl_event *ev, const CUpti_CallbackData *cb)
{
    fill_common(ev, cb);
    if (ev->type >= GL_EV_CAPTURE_BEGIN) {
        gl_graphs_apply(ev); /* a launch makes its graph's blocks */
        return;
    }
    if (ev->device == GL_DEVICE_FROM_CONTEXT) {
        /* Stream-ordered memory comes from the pool of the stream's device,
         * which need not be the current one. */
        if (ev->kind == GL_MEM_ASYNC && gl_contexts_several_devices())
            ev->device = (int16_t)gl_stream_device(ev->aux, ev->ctx);
        else
            ev->device = (int16_t)gl_context_device(ev->ctx);
    }
    if (ev->type != GL_EV_ALLOC) {
        /* Mappings and retains: nothing to time.  An unmap may free a released
         * handle: its stack is that free's, kept when free stacks are. */
        if (ev->type == GL_EV_VMM_UNMAP && free_stacks)
            ev->stack = capture();
        gl_tracker_apply(ev);
        return;
    }
    uint64_t t0 = gl_prof_now();
    ev->stack = capture();
    uint64_t t1 = gl_prof_now();
    /* A graph's memory node: a block only when a launch runs it. */
    if (ev->kind == GL_MEM_GRAPH) {
        gl_graphs_node_alloc(ev);
        return;
    }
    if (ev->kind == GL_MEM_ASYNC && gl_graphs_capturing() && gl_graphs_captured_alloc(ev))
        return;
    gl_tracker_alloc(ev);
    if (gl_prof_on) {
        uint64_t t2 = gl_prof_now();
        gl_prof_add(GL_PROF_STACK, t0, t1);
        gl_prof_add(GL_PROF_INSERT, t1, t2);
        gl_prof_add(GL_PROF_ALLOC, t0, t2);
    }
}

/* The entry of a release leaves its token in CUPTI's correlation slot, tagged in
 * bit 0 (tokens are pointers to aligned objects, or 0) so that the exit knows it
 * without decoding the call twice. */
#define RELEASE_TAG 1u
/* A graph's free node, left by the entry for the exit (an even value no
 * release token takes: tokens are pointers or 0, tagged with bit 0). */
#define GRAPH_FREE_TAG 2u

/* A free node added to a graph (cuGraphAddMemFreeNode, cuGraphAddNode). */
static inline bool graph_free_node(const struct gl_event *ev)
{
    return ev->type == GL_EV_FREE &&
           (ev->api == GL_API_cuGraphAddMemFreeNode || ev->api == GL_API_cuGraphAddNode ||
            ev->api == GL_API_cuGraphAddNode_v2);
}

static void on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    struct gl_event ev = {0};
    if (cb->callbackSite == CUPTI_API_ENTER) {
        uint64_t corr = 0;
        if (gl_decode(cbid, GL_SITE_ENTER, cb->functionParams, &ev)) {
            uint64_t t0 = gl_prof_now();
            fill_common(&ev, cb);
            if (ev.type == GL_EV_ACCESS) {
                /* A copy or set: checked before it runs, nothing to carry to the exit. */
                ev.device = (int16_t)gl_context_device(ev.ctx);
                gl_tracker_apply(&ev);
            } else if (ev.type >= GL_EV_CAPTURE_BEGIN) {
                gl_graphs_apply(&ev); /* a graph or an executable graph destroyed */
            } else if (graph_free_node(&ev) || (gl_api_is_stream_ordered_free(ev.api) &&
                                                gl_graphs_stream_captured(ev.aux))) {
                /* A free node, added or captured: recorded at the exit, if the
                 * call succeeds. */
                corr = GRAPH_FREE_TAG;
            } else {
                corr = gl_tracker_release_begin(&ev) | RELEASE_TAG;
            }
            gl_prof_add(GL_PROF_FREE_ENTER, t0, gl_prof_now());
        }
        if (cb->correlationData)
            *cb->correlationData = corr;
        return;
    }
    CUresult rc =
        cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_ERROR_UNKNOWN;
    uint64_t corr = cb->correlationData ? *cb->correlationData : 0;
    if (corr == GRAPH_FREE_TAG) {
        if (rc == CUDA_SUCCESS && gl_decode(cbid, GL_SITE_ENTER, cb->functionParams, &ev)) {
            fill_common(&ev, cb);
            if (graph_free_node(&ev))
                gl_graphs_node_free(&ev);
            else
                gl_graphs_captured_free(&ev);
        }
        return;
    }
    if (corr & RELEASE_TAG) {
        /* A release: its entry took the block out; confirm or put it back. */
        if (gl_decode(cbid, GL_SITE_ENTER, cb->functionParams, &ev)) {
            uint64_t t0 = gl_prof_now();
            fill_common(&ev, cb);
            /* The block gives the device; an error finds it from the context. */
            ev.device = GL_DEVICE_FROM_CONTEXT;
            /* The free's stack, for the quarantine (and any error found). */
            if (free_stacks)
                ev.stack = capture();
            gl_tracker_release_end(corr & ~(uint64_t)RELEASE_TAG, rc == CUDA_SUCCESS, &ev);
            gl_prof_add(GL_PROF_FREE_EXIT, t0, gl_prof_now());
        }
        return;
    }
    if (rc == CUDA_SUCCESS) {
        if (gl_decode(cbid, GL_SITE_EXIT, cb->functionParams, &ev))
            on_exit_acquire(&ev, cb);
    } else if (gl_graphs_capturing() && gl_decode(cbid, GL_SITE_EXIT, cb->functionParams, &ev) &&
               ev.type == GL_EV_CAPTURE_END) {
        gl_graphs_capture_end(ev.aux, 0); /* a failed end still ends the capture */
    } else if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        ev = (struct gl_event){0};
        ev.flags = GL_EVF_FAILED;
        if (gl_decode(cbid, GL_SITE_EXIT, cb->functionParams, &ev) && ev.type == GL_EV_ALLOC) {
            fill_common(&ev, cb);
            if (ev.device == GL_DEVICE_FROM_CONTEXT)
                ev.device = (int16_t)gl_context_device(ev.ctx);
            ev.stack = capture();
            gl_api_report_oom(&ev);
        }
    }
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    uint64_t ctx = (uintptr_t)rd->context;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        gl_context_created(ctx);
    } else if (cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED) {
        gl_stream_created((uintptr_t)rd->resourceHandle.stream, ctx);
    } else if (cbid == CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING) {
        gl_stream_destroyed((uintptr_t)rd->resourceHandle.stream);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        struct gl_event ev = {.type = GL_EV_CTX_DESTROY, .ctx = ctx, .tid = gl_thread_id()};
        gl_tracker_ctx_destroy(&ev);
        gl_context_destroyed(ctx);
    }
}

void CUPTIAPI gl_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *cbdata)
{
    (void)userdata;
    if (!gl_runtime_tracking() || !cbdata)
        return;
    if (null_callback) {
        if (spin_ns && domain == CUPTI_CB_DOMAIN_DRIVER_API)
            spin(spin_ns);
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        on_driver_api(cbid, cbdata);
    else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
        on_resource(cbid, cbdata);
}
