/* SPDX-License-Identifier: MIT */
/* Helpers for unit tests that drive the event pipeline (event/dispatch.h) and
 * look at the tracker's live blocks and counters. */
#ifndef GPULEAK_TRACKER_UTIL_H
#define GPULEAK_TRACKER_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/tool.h"
#include "components.h"
#include "event/dispatch.h"
#include "observe/contexts.h"
#include "runtime.h"
#include "track/tracker.h"

/* The pipeline as the runtime runs it (lib/components.c), emptied: every
 * component reset, and the consumers the current configuration wants
 * attached (configure modules first: quarantine, range checks...).  Devices
 * an event leaves to its context are placed as the CUPTI producer places
 * them; events flow while gl_runtime.state says GL_RT_TRACKING, as in the
 * runtime. */
static inline void tu_pipeline_reset(void)
{
    gl_tracker_init();
    gl_dispatch_set_registry(gl_components);
    gl_dispatch_set_gate(&gl_runtime.state);
    gl_dispatch_set_placement(&gl_contexts_placement);
    gl_dispatch_start(NULL);
    gl_dispatch_reset();
}

/* Attach the consumers again after a configuration changed, keeping state. */
static inline void tu_pipeline_restart(void) { gl_dispatch_start(NULL); }

/* A release's two phases, as a producer makes them: ok false is the driver
 * refusing it. */
static inline uint64_t tu_release_begin(struct gl_event *ev) { return gl_dispatch_begin(ev); }
static inline void tu_release_end(uint64_t token, bool ok, struct gl_event *ev)
{
    ev->flags = (uint16_t)(ok ? ev->flags & ~GL_EVF_FAILED : ev->flags | GL_EVF_FAILED);
    gl_dispatch_end(token, ev);
}

/* A consumer for tests: every event the observers get, with the block. */
#define TU_RECORDED 64
struct tu_recorded {
    struct gl_event ev;
    struct gl_block_info blk;
    bool has_blk;
};
static struct tu_recorded tu_recorded[TU_RECORDED];
static unsigned tu_nrecorded;

static inline void tu_record(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (tu_nrecorded < TU_RECORDED) {
        struct tu_recorded *r = &tu_recorded[tu_nrecorded];
        r->ev = *ev;
        r->has_blk = blk != NULL;
        if (blk)
            r->blk = *blk;
    }
    tu_nrecorded++;
}

static inline const struct gl_consumer *tu_recorder_consumer(void)
{
    static struct gl_consumer c;
    for (unsigned t = 1; t < GL_EV_NTYPES; t++)
        c.on[t] = tu_record;
    c.flags = GL_CONSUMER_TIMED;
    return &c;
}

/* The runtime's registry with the recorder last; the pipeline restarted on
 * it (state kept).  tu_pipeline_restart() goes back to the registry alone. */
static inline void tu_pipeline_with_recorder(void)
{
    static struct gl_component recorder = {.name = "recorder"};
    static const struct gl_component *list[64];
    recorder.consumer = tu_recorder_consumer();
    size_t n = 0;
    for (const struct gl_component *const *c = gl_components; *c && n < 62; c++)
        list[n++] = *c;
    list[n++] = &recorder;
    list[n] = NULL;
    tu_nrecorded = 0;
    gl_dispatch_start(list);
}

/* The live block with this key, from a snapshot (copied to *out when not
 * NULL); false if it is not live.  A key twice in the snapshot fails. */
static inline bool tu_live_block(uint64_t key, struct gl_block_info *out)
{
    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].key == key) {
            ck_assert_msg(!found, "key 0x%llx twice in the snapshot", (unsigned long long)key);
            found = true;
            if (out)
                *out = blocks[i];
        }
    gl_tool_unmap(blocks, bytes);
    return found;
}

/* The counters; poisoned first, so that a field the tracker leaves unset fails. */
static inline struct gl_tracker_stats tu_tracker_stats(void)
{
    struct gl_tracker_stats s;
    memset(&s, 0xee, sizeof s);
    gl_tracker_stats(&s);
    return s;
}

#endif
