#include "track/errors.h"

#include <stdatomic.h>
#include <string.h>

#include "event/api.h"
#include "observe/contexts.h"
#include "observe/decode.h"
#include "base/gl_uthash.h"
#include "track/stats.h"
#include "base/ranges.h"
#include "base/spin.h"
#include "track/tracker.h"

gl_error_sink_fn gl_error_sink;
uint32_t (*gl_error_capture_stack)(void);
bool (*gl_error_device_memory)(int device, uint64_t *free_bytes, uint64_t *total_bytes);

/* Valgrind keeps 1000 error contexts; later new ones are counted, not shown. */
#define MAX_CONTEXTS 1000

struct ctx_entry {
    uint64_t key; /* kind, detail, stack */
    size_t index;
    UT_hash_handle hh;
};

static struct {
    gl_spinlock lock;
    struct gl_error_context *v; /* MAX_CONTEXTS, tool-mapped on the first error */
    struct ctx_entry *entries;  /* MAX_CONTEXTS, the hash's items */
    struct ctx_entry *by_key;
    size_t n;
    uint64_t overflow; /* errors of contexts beyond MAX_CONTEXTS (never suppressed: */
    uint64_t overflow_by_kind[GL_ERR_NKINDS]; /* no sink saw them), and per kind */
    bool ranges_on;
    struct gl_ranges *live; /* live blocks and VMM mappings by address, when ranges_on */
} st;

/* Tags of the live index: a block's allocation number, or a VMM mapping. */
#define TAG_VMM (1ULL << 63)

void gl_api_errors_configure(bool check_ranges)
{
    st.ranges_on = check_ranges;
    if (check_ranges && !st.live)
        st.live = gl_ranges_create();
}

bool gl_api_errors_ranges_on(void) { return st.ranges_on && st.live; }

void gl_api_ranges_clear(void)
{
    if (!st.live)
        return;
    gl_ranges_destroy(st.live);
    st.live = gl_ranges_create();
}

/* ---- contexts ---- */

void gl_api_error_report(struct gl_api_error *e)
{
    if (!e->stack && gl_error_capture_stack)
        e->stack = gl_error_capture_stack();
    uint64_t key = (uint64_t)e->kind << 56 | (uint64_t)e->detail << 48 | e->stack;
    gl_spin_lock(&st.lock);
    if (!st.v) {
        st.v = gl_tool_map(MAX_CONTEXTS * sizeof *st.v);
        st.entries = gl_tool_map(MAX_CONTEXTS * sizeof *st.entries);
    }
    struct ctx_entry *c = NULL;
    HASH_FIND(hh, st.by_key, &key, sizeof key, c);
    if (c) {
        st.v[c->index].count++;
        gl_spin_unlock(&st.lock);
        return;
    }
    if (!st.v || !st.entries || st.n >= MAX_CONTEXTS) {
        bool first_overflow = st.overflow++ == 0;
        if (e->kind < GL_ERR_NKINDS)
            st.overflow_by_kind[e->kind]++;
        gl_spin_unlock(&st.lock);
        if (first_overflow && gl_error_sink)
            gl_error_sink(NULL); /* "more than 1000 different errors" */
        return;
    }
    size_t i = st.n++;
    c = &st.entries[i];
    c->key = key;
    c->index = i;
    HASH_ADD(hh, st.by_key, key, sizeof key, c);
    st.v[i].first = *e;
    st.v[i].count = 1;
    st.v[i].suppressed_by = NULL;
    gl_spin_unlock(&st.lock);
    /* Printing symbolizes: outside the lock, so other threads' errors only wait
     * for it if they are new too (the sink serializes itself). */
    const void *suppressed_by = gl_error_sink ? gl_error_sink(e) : NULL;
    gl_spin_lock(&st.lock);
    st.v[i].suppressed_by = suppressed_by;
    gl_spin_unlock(&st.lock);
}

void gl_api_error_counts(struct gl_api_error_counts *c)
{
    memset(c, 0, sizeof *c);
    gl_spin_lock(&st.lock);
    for (size_t i = 0; i < st.n; i++) {
        const struct gl_error_context *x = &st.v[i];
        if (x->suppressed_by) {
            c->suppressed += x->count;
            c->suppressed_contexts++;
        } else {
            c->errors += x->count;
            c->contexts++;
            if (x->first.kind < GL_ERR_NKINDS)
                c->by_kind[x->first.kind] += x->count;
        }
    }
    c->errors += st.overflow;
    for (int k = 0; k < GL_ERR_NKINDS; k++)
        c->by_kind[k] += st.overflow_by_kind[k];
    gl_spin_unlock(&st.lock);
}

size_t gl_api_error_contexts(struct gl_error_context *out, size_t max)
{
    gl_spin_lock(&st.lock);
    size_t n = st.n;
    for (size_t i = 0; i < n && i < max; i++)
        out[i] = st.v[i];
    gl_spin_unlock(&st.lock);
    return n;
}

void gl_api_errors_reset(void)
{
    gl_spin_lock(&st.lock);
    HASH_CLEAR(hh, st.by_key);
    st.n = 0;
    st.overflow = 0;
    memset(st.overflow_by_kind, 0, sizeof st.overflow_by_kind);
    gl_spin_unlock(&st.lock);
    gl_ranges_destroy(st.live);
    st.live = NULL;
    st.ranges_on = false;
}

void gl_api_errors_after_fork_child(void)
{
    gl_spin_reset(&st.lock);
    if (st.live)
        gl_ranges_reset_lock_after_fork(st.live);
}

/* ---- the live index ---- */

static bool indexed(const struct gl_block_info *b)
{
    return gl_key_ns(b->key) == GL_NS_ADDR && b->size > 0;
}

void gl_api_ranges_add(const struct gl_block_info *b)
{
    if (st.live && indexed(b))
        gl_ranges_insert(st.live, b->key, b->key + b->size, b->seq);
}

void gl_api_ranges_remove(const struct gl_block_info *b)
{
    if (st.live && indexed(b))
        gl_ranges_remove(st.live, b->key, b->seq, false);
}

void gl_api_ranges_add_mapping(uint64_t addr, uint64_t size)
{
    if (st.live && size)
        gl_ranges_insert(st.live, addr, addr + size, TAG_VMM);
}

void gl_api_ranges_remove_mapping(uint64_t addr)
{
    if (st.live)
        gl_ranges_remove(st.live, addr, TAG_VMM, false);
}

bool gl_api_ranges_find(uint64_t addr, uint64_t *start, uint64_t *seq)
{
    struct gl_range r;
    if (!st.live || !gl_ranges_find(st.live, addr, &r))
        return false;
    *start = r.start;
    *seq = r.tag;
    return true;
}

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

static struct gl_api_error error_of(const struct gl_event *ev, enum gl_error_kind kind,
                                    enum gl_error_detail detail)
{
    /* A release's exit leaves the device to be found from its context here,
     * on the error path only. */
    int device = ev->device == GL_DEVICE_FROM_CONTEXT ? gl_context_device(ev->ctx) : ev->device;
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

void gl_api_check_release_miss(struct gl_event *ev)
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
    } else if (gl_key_ns(ev->key) == GL_NS_ADDR && gl_tracker_holding(addr, &b)) {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_INTERIOR);
        set_block(&e, &b);
    } else if (gl_key_ns(ev->key) == GL_NS_ADDR && gl_quarantine_holding(addr, &f)) {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_FREED_INTERIOR);
        set_freed(&e, &f);
    } else {
        e = error_of(ev, GL_ERR_INVALID_FREE, GL_ERD_NEVER_ALLOCATED);
    }
    gl_api_error_report(&e);
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

int gl_api_check_release(struct gl_event *ev, const struct gl_block_info *b)
{
    struct gl_api_error e;
    if (!release_fits(ev->api, b)) {
        e = error_of(ev, GL_ERR_MISMATCHED_FREE, GL_ERD_WRONG_CALL);
    } else if (ev->type == GL_EV_VMM_RELEASE && b->refs == 0 && (b->flags & GL_BLK_RELEASED)) {
        /* Its last reference was released before; its mappings keep it. */
        e = error_of(ev, GL_ERR_DOUBLE_FREE, GL_ERD_HANDLE_RELEASED);
    } else if (gl_api_is_stream_ordered_free(ev->api) && b->device >= 0 &&
               gl_contexts_several_devices() &&
               (ev->device = (int16_t)gl_stream_device(ev->aux, ev->ctx)) >= 0 &&
               ev->device != b->device) {
        e = error_of(ev, GL_ERR_MISMATCHED_FREE, GL_ERD_WRONG_DEVICE);
    } else {
        return 0;
    }
    set_block(&e, b);
    gl_api_error_report(&e);
    return e.kind;
}

/* ---- copies and sets ---- */

static void check_range(struct gl_event *ev, uint64_t start, uint64_t len, bool write)
{
    if (!len)
        return;
    uint64_t bstart, seq;
    struct gl_api_error e;
    if (gl_api_ranges_find(start, &bstart, &seq)) {
        if (seq & TAG_VMM)
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
    gl_api_error_report(&e);
}

void gl_api_check_access(struct gl_event *ev)
{
    if (!gl_api_errors_ranges_on())
        return;
    check_range(ev, ev->key, ev->size, true);
    check_range(ev, ev->aux, ev->seq, false);
}

/* ---- allocation failures ---- */

void gl_api_report_oom(struct gl_event *ev)
{
    gl_stats_failed(ev->device, ev->kind, ev->size);
    struct gl_api_error e = error_of(ev, GL_ERR_OUT_OF_MEMORY, GL_ERD_NONE);
    e.addr = 0;
    e.mem_kind = ev->kind;
    if (ev->device >= 0 && gl_error_device_memory &&
        gl_error_device_memory(ev->device, &e.device_free, &e.device_total))
        e.flags |= GL_ERRF_DEVMEM;
    gl_api_error_report(&e);
}
