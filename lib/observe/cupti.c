#include "observe/cupti.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prof.h"
#include "base/thread.h"
#include "common/clock.h"
#include "common/util.h"
#include "event/api.h"
#include "event/dispatch.h"
#include "observe/contexts.h"
#include "observe/decode.h"
#include "stack/stack_capture.h"

static _Atomic int stacks_enabled = 1;
static bool free_stacks = true;
static bool null_callback;
static uint64_t spin_ns; /* GPULEAK_BENCH=spin:NS */

static const struct gl_cupti *cupti;
static CUpti_SubscriberHandle subscriber;

void gl_cupti_set_stacks(bool enabled) { atomic_store(&stacks_enabled, enabled); }
void gl_cupti_set_free_stacks(bool enabled) { free_stacks = enabled; }

static inline uint32_t capture(void)
{
    return atomic_load_explicit(&stacks_enabled, memory_order_relaxed) ? gl_stack_capture() : 0;
}

/* One word of GPULEAK_BENCH (the words are separated by commas). */
static void bench_word(const char *w, size_t len)
{
#define IS(word) (len == sizeof word - 1 && strncmp(w, word, len) == 0)
    if (IS("null"))
        null_callback = true;
    else if (IS("nostack"))
        gl_cupti_set_stacks(false);
    else if (IS("nomemo"))
        gl_stack_capture_memo_enable(false);
    else if (IS("profile"))
        gl_prof_init();
    else if (len > 5 && strncmp(w, "spin:", 5) == 0) {
        null_callback = true;
        spin_ns = strtoull(w + 5, NULL, 10);
    }
#undef IS
}

void gl_cupti_bench_mode(const char *mode)
{
    while (mode && *mode) {
        size_t len = strcspn(mode, ",");
        bench_word(mode, len);
        mode += len + (mode[len] == ',');
    }
}

/* Busy for ns: what a callback of that length costs the program, without
 * gpuleak's own work (does the driver or CUPTI serialize callbacks?). */
static void spin(uint64_t ns)
{
    uint64_t end = gl_clock_ns() + ns;
    while (gl_clock_ns() < end)
        __builtin_ia32_pause();
}

/* ---- events from the driver API ---- */

static inline void fill_common(struct gl_event *ev, const CUpti_CallbackData *cb)
{
    struct gl_thread *self = gl_thread_self();
    ev->tid = self ? self->tid : 0;
    if (self && __builtin_expect(self->disabled > 0, 0))
        ev->flags |= GL_EVF_IGNORED;
    ev->ctx = (uintptr_t)cb->context;
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
                                                             const CUpti_CallbackData *cb)
{
    fill_common(ev, cb);
    place(ev);
    if (ev->type == GL_EV_ALLOC || ev->type == GL_EV_GRAPH_NODE_ALLOC) {
        uint64_t t0 = gl_prof_now();
        ev->stack = capture();
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
        ev->stack = capture();
    gl_dispatch(ev);
}

/* A call that failed: only what still matters. */
static void on_failure(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, CUresult rc)
{
    struct gl_event ev = {.flags = GL_EVF_FAILED};
    if (!gl_decode(cbid, GL_SITE_EXIT, cb->functionParams, &ev))
        return;
    if (ev.type == GL_EV_CAPTURE_END) {
        ev.key = 0; /* a failed end still ends the capture, with no graph */
    } else if ((ev.type == GL_EV_ALLOC || ev.type == GL_EV_GRAPH_NODE_ALLOC) &&
               rc == CUDA_ERROR_OUT_OF_MEMORY) {
        ev.type = GL_EV_ALLOC_FAILED;
        ev.flags &= (uint16_t)~GL_EVF_FAILED;
        ev.stack = capture(); /* the OOM report's */
    } else {
        return;
    }
    fill_common(&ev, cb);
    place(&ev);
    gl_dispatch(&ev);
}

static void on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    struct gl_event ev = {0};
    if (cb->callbackSite == CUPTI_API_ENTER) {
        /* The token of a release begun here travels to the exit in CUPTI's
         * correlation slot; 0 (never a token) says nothing was begun. */
        uint64_t token = 0;
        if (gl_decode(cbid, GL_SITE_ENTER, cb->functionParams, &ev)) {
            uint64_t t0 = gl_prof_now();
            fill_common(&ev, cb);
            if (gl_dispatch_is_release(&ev)) {
                token = gl_dispatch_begin(&ev);
            } else {
                /* A copy or set, checked before it runs, on the device of the
                 * current context; a graph destroyed. */
                if (ev.type == GL_EV_ACCESS)
                    ev.device = GL_DEVICE_FROM_CONTEXT;
                place(&ev);
                gl_dispatch(&ev);
            }
            gl_prof_add(GL_PROF_FREE_ENTER, t0, gl_prof_now());
        }
        if (cb->correlationData)
            *cb->correlationData = token;
        return;
    }
    CUresult rc =
        cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_ERROR_UNKNOWN;
    uint64_t token = cb->correlationData ? *cb->correlationData : 0;
    if (token) {
        /* A release: its entry took the block out; the end confirms or puts it
         * back.  The block gives the device; an error finds it from the
         * context (event/dispatch.h, placement). */
        if (gl_decode(cbid, GL_SITE_ENTER, cb->functionParams, &ev)) {
            uint64_t t0 = gl_prof_now();
            fill_common(&ev, cb);
            ev.device = GL_DEVICE_FROM_CONTEXT; /* found only if an error needs it */
            if (rc != CUDA_SUCCESS)
                ev.flags |= GL_EVF_FAILED;
            /* The free's stack, for the quarantine (and any error found). */
            if (free_stacks)
                ev.stack = capture();
            gl_dispatch_end(token, &ev);
            gl_prof_add(GL_PROF_FREE_EXIT, t0, gl_prof_now());
        }
        return;
    }
    if (rc == CUDA_SUCCESS) {
        if (gl_decode(cbid, GL_SITE_EXIT, cb->functionParams, &ev))
            on_success(&ev, cb);
    } else {
        on_failure(cbid, cb, rc);
    }
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    uint64_t ctx = (uintptr_t)rd->context;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        gl_contexts_created(ctx);
    } else if (cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED) {
        gl_contexts_stream_created((uintptr_t)rd->resourceHandle.stream, ctx);
    } else if (cbid == CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING) {
        gl_contexts_stream_destroyed((uintptr_t)rd->resourceHandle.stream);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        struct gl_event ev = {.type = GL_EV_CTX_DESTROY, .ctx = ctx, .tid = gl_thread_id()};
        gl_dispatch(&ev);
        gl_contexts_destroyed(ctx);
    }
}

void CUPTIAPI gl_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *cbdata)
{
    (void)userdata;
    if (!gl_dispatch_open() || !cbdata)
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

/* ---- subscribing ---- */

/* A context's device, asked of CUPTI (never of the driver inside a callback). */
static int cupti_device_of(uint64_t ctx)
{
    uint32_t dev;
    if (cupti && cupti->get_device_id &&
        cupti->get_device_id((CUcontext)(uintptr_t)ctx, &dev) == CUPTI_SUCCESS)
        return (int)dev;
    return -1;
}

static bool subscribe(char *err, size_t errlen)
{
    CUptiResult rc;
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
    if (cupti->subscribe_v2) {
        CUpti_SubscriberParams params = {
            .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
            .subscriberName = "gpuleak",
            .oldSubscriberName = other,
            .oldSubscriberSize = sizeof other,
        };
        rc = cupti->subscribe_v2(&subscriber, gl_cupti_callback, NULL, &params);
    } else {
        rc = cupti->subscribe(&subscriber, gl_cupti_callback, NULL);
    }
    if (rc == CUPTI_SUCCESS)
        return true;
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        /* CUPTI names the other client "CUPTI for <name>", or "<not provided>". */
        bool named = other[0] && !strstr(other, "<not provided>");
        snprintf(err, errlen,
                 "CUPTI is already in use by %s; a process can have only one CUPTI client, so "
                 "GPU memory is not tracked (the program runs normally)",
                 named ? other
                       : "another client (nsys, ncu, compute-sanitizer, a profiler, or the "
                         "program itself)");
    } else {
        snprintf(err, errlen, "cannot subscribe to CUPTI: %s; GPU memory is not tracked",
                 gl_cupti_loader_result_string(cupti, rc));
    }
    return false;
}

static bool enable_callbacks(bool check_ranges, char *err, size_t errlen)
{
    for (unsigned api = 1; api < GL_API_COUNT; api++) {
        if (gl_api_is_access(api) && !check_ranges)
            continue; /* copies and sets: only when they are checked */
        CUptiResult rc = cupti->enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                                gl_decode_cbid_of_api(api));
        if (rc != CUPTI_SUCCESS) {
            snprintf(err, errlen, "cannot enable the CUPTI callback for %s: %s", gl_api_name(api),
                     gl_cupti_loader_result_string(cupti, rc));
            return false;
        }
    }
    static const CUpti_CallbackId resource_cbids[] = {
        CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_STREAM_CREATED,
        CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING,
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(resource_cbids); i++) {
        CUptiResult rc =
            cupti->enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, resource_cbids[i]);
        if (rc != CUPTI_SUCCESS) {
            snprintf(err, errlen, "cannot enable CUPTI's resource callbacks: %s",
                     gl_cupti_loader_result_string(cupti, rc));
            return false;
        }
    }
    return true;
}

bool gl_cupti_start(const struct gl_cupti *api, bool check_ranges, char *err, size_t errlen)
{
    cupti = api;
    gl_contexts_set_query(cupti_device_of);
    gl_dispatch_set_placement(&gl_contexts_placement);
    if (!subscribe(err, errlen))
        return false;
    if (!enable_callbacks(check_ranges, err, errlen)) {
        gl_cupti_stop();
        return false;
    }
    return true;
}

void gl_cupti_stop(void)
{
    if (cupti && subscriber)
        cupti->unsubscribe(subscriber);
    subscriber = NULL;
}
