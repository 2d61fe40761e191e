/* SPDX-License-Identifier: MIT */
#include "observe/cupti.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/thread.h"
#include "common/util.h"
#include "event/api.h"
#include "event/dispatch.h"
#include "observe/call.h"
#include "observe/contexts.h"
#include "observe/crosscheck.h"
#include "observe/decode.h"

static const struct gl_cupti *cupti;
static CUpti_SubscriberHandle subscriber;
static bool cross_checking;

GL_HOT static void on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    struct gl_call_site site = {(uintptr_t)cb->context, 0};
    if (cross_checking &&
        gl_crosscheck_cupti(cbid, cb->callbackSite == CUPTI_API_EXIT, cb->functionParams,
                            cb->functionReturnValue, site.ctx))
        return; /* the driver observer's call: it dispatches, this only compared */
    if (cb->callbackSite == CUPTI_API_ENTER) {
        /* The token of a release begun here travels to the exit in CUPTI's
         * correlation slot; 0 (never a token) says nothing was begun. */
        uint64_t token = gl_call_enter(cbid, cb->functionParams, &site);
        if (cb->correlationData)
            *cb->correlationData = token;
        return;
    }
    CUresult rc =
        cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_ERROR_UNKNOWN;
    uint64_t token = cb->correlationData ? *cb->correlationData : 0;
    gl_call_exit(cbid, cb->functionParams, &site, rc, token);
    if (__builtin_expect(gl_alternate_active, 0))
        gl_alternate_after_exit(cbid, token != 0);
}

/* GPULEAK_BENCH=null's driver callback: nothing, or a wait (spin:NS).  Under
 * alternate:gpuleak a call ends the way it began, should the producer have
 * switched meanwhile (only another thread's switch can): the entry here
 * says in the correlation slot that it began nothing, and an exit whose
 * slot holds a token goes to the tracked path, which ends the release. */
static void on_driver_api_null(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    gl_call_bench_spin();
    if (__builtin_expect(!gl_alternate_active, 1))
        return;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (cb->correlationData)
            *cb->correlationData = 0;
    } else if (cb->correlationData && *cb->correlationData) {
        on_driver_api(cbid, cb);
    } else if (!cross_checking) { /* with the cross-check, the hooks count */
        gl_alternate_after_exit(cbid, false);
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

GL_HOT void CUPTIAPI gl_cupti_callback(void *userdata, CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    if (!gl_dispatch_open() || !cbdata)
        return;
    /* Resources are noted even then: a context or stream made while the
     * producer does nothing (alternate:gpuleak) is still known after. */
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        if (__builtin_expect(gl_call_bench_null(), 0))
            on_driver_api_null(cbid, cbdata);
        else
            on_driver_api(cbid, cbdata);
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
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
                 "CUPTI is already in use by %s; a process can have only one CUPTI client",
                 named ? other
                       : "another client (nsys, ncu, compute-sanitizer, a profiler, or the "
                         "program itself)");
    } else {
        snprintf(err, errlen, "cannot subscribe to CUPTI: %s",
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

bool gl_cupti_start(const struct gl_cupti *api, bool check_ranges, bool witness, char *err,
                    size_t errlen)
{
    cupti = api;
    cross_checking = witness;
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
