/* SPDX-License-Identifier: MIT */
#include "observe/crosscheck.h"

#include <stdatomic.h>

#include "base/thread.h"
#include "event/dispatch.h"
#include "observe/call.h"
#include "stack/stack_capture.h"

/* The innermost hooked call of this thread.  Default TLS model: the runtime may
 * be loaded by the driver (CUDA_INJECTION64_PATH), not only preloaded. */
static __thread struct gl_crosscheck_call *inside;
static _Atomic uint64_t differences;

uint64_t gl_crosscheck_differences(void) { return atomic_load(&differences); }

void gl_crosscheck_begin(struct gl_crosscheck_call *c, uint32_t cbid, const void *params,
                         uintptr_t entry, uint64_t ctx)
{
    *c = (struct gl_crosscheck_call){
        .cbid = cbid, .params = params, .entry = entry, .ctx = ctx, .outer = inside};
    inside = c;
}

/* What the call made, at entry or exit (a failed call makes only what
 * observe/call.h still dispatches for it). */
static bool made(uint32_t cbid, const void *params, bool at_exit, CUresult rc, struct gl_event *ev)
{
    /* A capture's forks and joins are made only while a capture is in
     * progress, which the two observers may see change at different times. */
    return gl_call_decode(cbid, params, at_exit, rc, ev) && ev->type != GL_EV_CAPTURE_END &&
           ev->type != GL_EV_EVENT_RECORD && ev->type != GL_EV_STREAM_WAIT;
}

static void report(const struct gl_event *made_ev, enum gl_mismatch who, uint64_t ctx,
                   uint32_t stack)
{
    atomic_fetch_add(&differences, 1);
    struct gl_event ev = {
        .type = GL_EV_OBSERVER_MISMATCH,
        .kind = made_ev->kind,
        .api = made_ev->api,
        .device = GL_DEVICE_FROM_CONTEXT,
        .tid = gl_thread_id(),
        .stack = stack,
        .key = gl_key_value(made_ev->key),
        .size = made_ev->size,
        .seq = made_ev->type,
        .ctx = ctx,
        .aux = who,
    };
    gl_dispatch(&ev);
}

void gl_crosscheck_end(struct gl_crosscheck_call *c, CUresult rc)
{
    inside = c->outer;
    struct gl_event ev;
    bool entered = made(c->cbid, c->params, false, rc, &ev);
    if (!entered && !made(c->cbid, c->params, true, rc, &ev))
        return; /* the call made nothing either observer tracks */
    if (c->cupti_enter || c->cupti_exit) {
        if (c->differs)
            report(&ev, GL_MISMATCH_DIFFERENT, c->ctx, gl_stack_capture_entry(c->entry));
        return;
    }
    report(&ev, GL_MISMATCH_DRIVER_ONLY, c->ctx, gl_stack_capture_entry(c->entry));
}

/* Whether CUPTI's reading of a site matches the hook's. */
static bool same(uint32_t cbid, const void *hook_params, const void *params, bool at_exit,
                 CUresult rc)
{
    struct gl_event a, b;
    bool ma = made(cbid, hook_params, at_exit, rc, &a);
    bool mb = made(cbid, params, at_exit, rc, &b);
    if (ma != mb)
        return false;
    return !ma || (a.type == b.type && a.key == b.key && a.size == b.size && a.kind == b.kind &&
                   a.aux == b.aux && a.device == b.device);
}

bool gl_crosscheck_cupti(uint32_t cbid, bool at_exit, const void *params, const void *rcp,
                         uint64_t ctx)
{
    CUresult rc = at_exit && rcp ? *(const CUresult *)rcp : CUDA_SUCCESS;
    struct gl_crosscheck_call *c = inside;
    if (c && c->cbid == cbid) {
        if (at_exit)
            c->cupti_exit = true;
        else
            c->cupti_enter = true;
        if (!same(cbid, c->params, params, at_exit, rc))
            c->differs = true;
        return true;
    }
    /* CUPTI alone: reported once per call, at the first site it made an event
     * at (a release makes one at both). */
    struct gl_event ev;
    if (at_exit && made(cbid, params, false, rc, &ev))
        return false; /* reported at its entry */
    if (made(cbid, params, at_exit, rc, &ev))
        report(&ev, GL_MISMATCH_CUPTI_ONLY, ctx, gl_stack_capture());
    return false;
}
