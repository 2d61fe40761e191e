/* SPDX-License-Identifier: MIT */
#include "track/checks.h"

#include "event/api.h"
#include "common/util.h"
#include "track/errors.h"
#include "track/live_ranges.h"
#include "track/quarantine.h"
#include "track/tracker.h"

/* ---- releases ---- */

static void set_block(struct gl_api_error *e, const struct gl_block_info *b)
{
    e->flags |= GL_ERRF_BLOCK;
    e->block.block = *b;
}

static void set_freed(struct gl_api_error *e, const struct gl_freed_block *f)
{
    e->flags |= GL_ERRF_BLOCK | GL_ERRF_FREED;
    e->block = *f;
}

static struct gl_api_error error_at(const struct gl_event *ev, int device, enum gl_error_kind kind,
                                    enum gl_error_detail detail)
{
    return (struct gl_api_error){
        .kind = (uint8_t)kind,
        .detail = (uint8_t)detail,
        .api = ev->api,
        .stack = ev->stack,
        .tid = ev->tid,
        .device = (int16_t)device,
        .addr = gl_key_value(ev->key),
        .size = ev->size,
    };
}

/* A release's exit leaves the device to be found from its context: here, on
 * the error path only. */
static struct gl_api_error error_of(const struct gl_event *ev, enum gl_error_kind kind,
                                    enum gl_error_detail detail)
{
    return error_at(ev, gl_dispatch_device_of(ev), kind, detail);
}

/* An address the tracker holds, through the live index when it is kept. */
static bool live_holding(uint64_t addr, struct gl_block_info *b)
{
    uint64_t start, seq;
    if (gl_live_ranges_on())
        return gl_live_ranges_find(addr, &start, &seq) && !(seq & GL_LIVE_RANGES_VMM) &&
               gl_tracker_lookup(start, b) && b->seq == seq;
    return gl_tracker_holding(addr, b);
}

static void release_miss(const struct gl_event *ev)
{
    struct gl_freed_block f;
    struct gl_block_info b;
    struct gl_api_error e;
    uint64_t addr = gl_key_value(ev->key);
    if (gl_quarantine_find(ev->key, &f)) {
        e = error_of(ev, GL_ERR_DOUBLE_FREE, GL_ERD_NONE);
        set_freed(&e, &f);
    } else if (gl_key_ns(ev->key) == GL_NS_ADDR && gl_tracker_vmm_mapping_holding(addr, &b)) {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_VMM_MAPPED);
        set_block(&e, &b);
    } else if (gl_key_ns(ev->key) == GL_NS_ADDR && live_holding(addr, &b)) {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_INTERIOR);
        set_block(&e, &b);
    } else if (gl_key_ns(ev->key) == GL_NS_ADDR && gl_quarantine_holding(addr, &f)) {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_FREED_INTERIOR);
        set_freed(&e, &f);
    } else {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_NEVER_ALLOCATED);
    }
    gl_errors_report(&e);
}

/* What a block's kind must be released with. */
static bool release_fits(unsigned api, const struct gl_block_info *b)
{
    bool ipc_opened = b->kind == GL_MEM_IPC && (b->api == GL_API_cuIpcOpenMemHandle ||
                                                b->api == GL_API_cuIpcOpenMemHandle_v2);
    switch (api) {
    case GL_API_cuMemFree:
    case GL_API_cuMemFree_v2:
    case GL_API_cuMemFreeAsync:
    case GL_API_cuMemFreeAsync_ptsz:
    case GL_API_cuGraphAddMemFreeNode:
    case GL_API_cuGraphAddNode:
    case GL_API_cuGraphAddNode_v2:
        return !ipc_opened && b->kind != GL_MEM_HOST_PINNED && b->kind != GL_MEM_HOST_REGISTERED;
    case GL_API_cuMemFreeHost:
        return b->kind == GL_MEM_HOST_PINNED;
    case GL_API_cuMemHostUnregister:
        return b->kind == GL_MEM_HOST_REGISTERED;
    case GL_API_cuIpcCloseMemHandle:
        return ipc_opened;
    }
    return true; /* handles in namespaces of their own: the key says what they are */
}

GL_HOT static void release(const struct gl_event *ev, const struct gl_block_info *b)
{
    struct gl_api_error e;
    if (!release_fits(ev->api, b)) {
        e = error_of(ev, GL_ERR_MISMATCHED_FREE, GL_ERD_WRONG_CALL);
    } else if (ev->type == GL_EV_VMM_RELEASE && b->refs == 0 && (b->flags & GL_BLK_RELEASED)) {
        /* Its last reference was released before; its mappings keep it. */
        e = error_of(ev, GL_ERR_DOUBLE_FREE, GL_ERD_HANDLE_RELEASED);
    } else {
        /* A stream-ordered free on a stream of another device than the
         * block's is no error: NVIDIA's streamOrderedAllocationP2P sample
         * frees device 0's pool memory on device 1's stream, the pool's
         * access granted, and the driver takes it. */
        return;
    }
    set_block(&e, b);
    gl_errors_report(&e);
}

/* A release, resolved: checked against its block, or, when the driver
 * refused one the table did not hold, looked into.  (One the driver accepted
 * was of memory gpuleak never saw allocated: counted, shown with -v.)  The
 * frees a graph launch or the block table derive are no calls of the
 * program's to check. */
GL_HOT static void on_release(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (ev->flags & GL_EVF_DERIVED)
        return;
    if (blk)
        release(ev, blk);
    else if (ev->flags & GL_EVF_FAILED)
        release_miss(ev);
}

/* ---- copies and sets ---- */

static void check_range(const struct gl_event *ev, uint64_t start, uint64_t len, bool write)
{
    if (!len)
        return;
    uint64_t bstart, seq;
    struct gl_api_error e;
    if (gl_live_ranges_find(start, &bstart, &seq)) {
        if (seq & GL_LIVE_RANGES_VMM)
            return; /* VMM ranges: adjacent mappings may be one allocator's segment */
        struct gl_block_info b;
        if (!gl_tracker_lookup(bstart, &b) || b.seq != seq || start + len <= b.key + b.size)
            return;
        e = error_of(ev, GL_ERR_INVALID_RANGE, GL_ERD_NONE);
        set_block(&e, &b);
    } else {
        struct gl_freed_block f;
        if (!gl_quarantine_holding(start, &f))
            return;
        e = error_of(ev, GL_ERR_FREED_RANGE, GL_ERD_NONE);
        set_freed(&e, &f);
    }
    e.addr = start;
    e.size = len;
    if (write)
        e.flags |= GL_ERRF_WRITE;
    gl_errors_report(&e);
}

static void on_access(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    if (!gl_live_ranges_on())
        return;
    check_range(ev, ev->key, ev->size, true);
    check_range(ev, ev->aux, ev->seq, false);
}

/* ---- allocation failures ---- */

static void on_alloc_failed(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    struct gl_api_error e = error_of(ev, GL_ERR_OUT_OF_MEMORY, GL_ERD_NONE);
    e.addr = 0;
    e.mem_kind = ev->kind;
    if (e.device >= 0 && gl_errors_device_memory &&
        gl_errors_device_memory(e.device, &e.device_free, &e.device_total))
        e.flags |= GL_ERRF_DEVMEM;
    gl_errors_report(&e);
}

/* ---- the observers' cross-check ---- */

static void on_mismatch(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    struct gl_api_error e = error_of(ev, GL_ERR_OBSERVER_MISMATCH, GL_ERD_NONE);
    e.detail = (uint8_t)ev->aux; /* enum gl_mismatch */
    e.size = ev->size;
    e.mem_kind = ev->kind;
    if (ev->seq != GL_EV_ALLOC && ev->seq != GL_EV_GRAPH_NODE_ALLOC && ev->seq != GL_EV_VMM_MAP)
        e.flags |= GL_ERRF_OTHER_CALL;
    gl_errors_report(&e);
}

static const struct gl_consumer consumer = {
    .on =
        {
            [GL_EV_FREE] = on_release,
            [GL_EV_VMM_RELEASE] = on_release,
            [GL_EV_ACCESS] = on_access,
            [GL_EV_ALLOC_FAILED] = on_alloc_failed,
            [GL_EV_OBSERVER_MISMATCH] = on_mismatch,
        },
};

const struct gl_component gl_checks_component = {.name = "checks", .consumer = &consumer};
