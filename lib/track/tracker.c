#include "track/tracker.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "track/errors.h"
#include "base/atomic.h"
#include "track/graphs.h"
#include "track/stats.h"
#include "track/quarantine.h"
#include "base/thread.h"
#include "base/tool.h"

gl_event_sink_fn gl_event_sink;

static struct gl_table *blocks; /* outstanding blocks */
static struct gl_table *maps;   /* VMM mappings: key = address, aux = handle key */

/* Process-wide counters, each on its own cache line.  Threads allocating at once
 * would bounce shared counters between cores on every event, so the hot path
 * touches none in the common case: allocation numbers are handed to threads in
 * blocks of SEQ_BLOCK (unique, increasing within a thread, one shared atomic
 * per block); usage counters are kept per thread by mem_stats.c. */
#define SEQ_BLOCK 256
#define COUNTER(name) static _Atomic uint64_t name __attribute__((aligned(64)))
COUNTER(seq_counter);
/* Bumped by gl_tracker_seq_mark(): a thread whose block of numbers predates the
 * mark starts a new block, so that every allocation after a checkpoint is
 * numbered above it. */
static _Atomic uint32_t seq_epoch __attribute__((aligned(64)));
COUNTER(n_unknown_frees);
COUNTER(n_replaced);

static void release_spare(struct gl_thread *t)
{
    if (t->spare_node)
        gl_block_table_release(blocks, t->spare_node);
    t->spare_node = NULL;
}

void gl_tracker_init(void)
{
    if (!blocks)
        blocks = gl_block_table_create(8);
    if (!maps)
        maps = gl_block_table_create(4);
    gl_thread_add_retire(release_spare);
}

void gl_tracker_reset(void)
{
    gl_block_table_destroy(blocks);
    gl_block_table_destroy(maps);
    blocks = maps = NULL;
    gl_thread_reset();
    atomic_store(&seq_counter, 0);
    atomic_store(&seq_epoch, 0);
    atomic_store(&n_unknown_frees, 0);
    atomic_store(&n_replaced, 0);
    gl_stats_reset();
    /* What the tracker's blocks fed: the freed blocks and the live index. */
    gl_quarantine_clear();
    gl_api_ranges_clear();
    gl_graphs_reset();
    gl_tracker_init();
}

bool gl_mem_kind_context_bound(enum gl_mem_kind k)
{
    /* VMM memory and pools belong to the device, not to a context. */
    return k != GL_MEM_VMM && k != GL_MEM_NONE && k != GL_MEM_POOL_RESERVE &&
           k != GL_MEM_GRAPH_RESERVE;
}

uint64_t gl_tracker_next_seq(void)
{
    struct gl_thread *self = gl_thread_self();
    if (!self)
        return atomic_fetch_add_explicit(&seq_counter, 1, memory_order_relaxed) + 1;
    uint32_t epoch = atomic_load_explicit(&seq_epoch, memory_order_acquire);
    if (self->seq_next == self->seq_end || self->seq_epoch != epoch) {
        self->seq_next =
            atomic_fetch_add_explicit(&seq_counter, SEQ_BLOCK, memory_order_relaxed) + 1;
        self->seq_end = self->seq_next + SEQ_BLOCK;
        self->seq_epoch = epoch;
    }
    return self->seq_next++;
}

uint64_t gl_tracker_seq_mark(void)
{
    /* The counter first, then the epoch: a thread that sees the new epoch takes
     * its next block of numbers after the counter was read, so above the mark.
     * (The other order lets a thread see the new epoch, take a block, and have
     * it counted below a mark read afterwards.)  Blocks taken before are
     * abandoned by their threads at their next allocation. */
    uint64_t mark = atomic_load_explicit(&seq_counter, memory_order_seq_cst) + 1;
    atomic_fetch_add_explicit(&seq_epoch, 1, memory_order_seq_cst);
    return mark;
}

/* Pool sub-allocations are not GPU allocations (the pool's block counts), nor
 * are stream-ordered pools themselves (the driver reserves their memory as it
 * sees fit; their allocations count). */
bool gl_mem_kind_counted(unsigned kind)
{
    return kind != GL_MEM_POOL_SUB && kind != GL_MEM_POOL_RESERVE && kind != GL_MEM_GRAPH_RESERVE;
}

static inline void publish(struct gl_event *ev)
{
    gl_event_sink_fn sink = gl_event_sink;
    if (__builtin_expect(sink != NULL, 0)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ev->time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        sink(ev);
    }
}

/* ---- custom pools ---- */

static bool in_pool(const struct gl_block_info *b, void *arg)
{
    return b->kind == GL_MEM_POOL_SUB && b->aux == *(const uint64_t *)arg;
}

/* Forget a pool's sub-allocations (the pool is destroyed or its block freed).
 * Linear in the live blocks, and only ever for a pool's block. */
static size_t sweep_pool(uint64_t pool_key)
{
    return gl_block_table_foreach(blocks, in_pool, &pool_key);
}

static bool set_flag(struct gl_block_info *b, void *arg)
{
    b->flags |= (uint8_t)(uintptr_t)arg;
    return false;
}

static bool clear_pool(struct gl_block_info *b, void *arg)
{
    (void)arg;
    b->flags &= (uint8_t)~GL_BLK_POOL;
    return false;
}

bool gl_tracker_ignore(struct gl_event *ev)
{
    bool found = blocks && gl_block_table_update(blocks, ev->key, set_flag,
                                                 (void *)(uintptr_t)GL_BLK_IGNORED, NULL, NULL);
    if (found)
        publish(ev);
    return found;
}

bool gl_tracker_pool_create(struct gl_event *ev)
{
    bool found = blocks && gl_block_table_update(blocks, ev->key, set_flag,
                                                 (void *)(uintptr_t)GL_BLK_POOL, NULL, NULL);
    if (found)
        publish(ev);
    return found;
}

bool gl_tracker_pool_destroy(struct gl_event *ev)
{
    if (!blocks)
        return false;
    bool found = gl_block_table_update(blocks, ev->key, clear_pool, NULL, NULL, NULL);
    sweep_pool(ev->key);
    if (found)
        publish(ev);
    return found;
}

bool gl_tracker_lookup(uint64_t key, struct gl_block_info *out)
{
    return blocks && gl_block_table_lookup(blocks, key, out);
}

void gl_tracker_alloc(struct gl_event *ev)
{
    if (!ev->seq)
        ev->seq = gl_tracker_next_seq();
    struct gl_block_info b = {
        .key = ev->key,
        .size = ev->size,
        .seq = ev->seq,
        .ctx = ev->ctx,
        .aux = ev->kind == GL_MEM_VMM ? 0 : ev->aux,
        .stack = ev->stack,
        .tid = ev->tid,
        .device = ev->device,
        .kind = ev->kind,
        .flags = (uint8_t)(((ev->flags & GL_EVF_SIZE_UNKNOWN) ? GL_BLK_SIZE_UNKNOWN : 0) |
                           ((ev->flags & GL_EVF_IMPORTED) ? GL_BLK_IMPORTED : 0) |
                           ((ev->flags & GL_EVF_IGNORED) ? GL_BLK_IGNORED : 0)),
        .api = ev->api,
        .refs = ev->kind == GL_MEM_VMM ? 1 : 0,
    };
    struct gl_block_info old;
    if (gl_block_table_insert(blocks, &b, &old)) {
        atomic_fetch_add_explicit(&n_replaced, 1, memory_order_relaxed);
        if (gl_mem_kind_counted(old.kind))
            gl_stats_free(old.device, old.kind, old.size, old.stack);
        if (old.flags & GL_BLK_POOL)
            sweep_pool(old.key);
    }
    if (__builtin_expect(gl_mem_kind_counted(ev->kind), 1))
        gl_stats_alloc(ev->device, ev->kind, ev->size, ev->stack, ev->seq);
    if (__builtin_expect(gl_api_errors_ranges_on(), 0))
        gl_api_ranges_add(&b);
    publish(ev);
}

/* ---- releases ---- */

/* Undo record of a VMM handle release: rare, so it may cost an allocation. */
struct release_undo {
    bool removed;
    struct gl_block_info before; /* the handle as it was: a failed release restores it */
};

static bool dec_handle_ref(struct gl_block_info *b, void *arg)
{
    *(struct gl_block_info *)arg = *b;
    if (b->refs > 0)
        b->refs--;
    if (b->refs == 0)
        b->flags |= GL_BLK_RELEASED;
    return b->refs == 0 && b->aux == 0;
}

static bool restore_handle(struct gl_block_info *b, void *arg)
{
    const struct gl_block_info *before = arg;
    b->refs = before->refs;
    b->flags = before->flags;
    return false;
}

static bool inc_handle_ref(struct gl_block_info *b, void *arg)
{
    (void)arg;
    b->refs++;
    b->flags &= (uint8_t)~GL_BLK_RELEASED;
    return false;
}

uint64_t gl_tracker_release_begin(struct gl_event *ev)
{
    if (ev->type == GL_EV_FREE) {
        struct gl_thread *self = gl_thread_self();
        struct gl_table_node *n =
            gl_block_table_detach(blocks, ev->key, self ? &self->spare_node : NULL);
        if (!n)
            atomic_fetch_add_explicit(&n_unknown_frees, 1, memory_order_relaxed);
        return (uint64_t)(uintptr_t)n;
    }
    if (ev->type == GL_EV_VMM_RELEASE) {
        struct release_undo *u = gl_tool_alloc(sizeof *u);
        if (!u)
            return 0;
        bool removed = false;
        if (!gl_block_table_update(blocks, ev->key, dec_handle_ref, &u->before, NULL, &removed)) {
            gl_tool_free(u, sizeof *u);
            atomic_fetch_add_explicit(&n_unknown_frees, 1, memory_order_relaxed);
            return 0;
        }
        u->removed = removed;
        return (uint64_t)(uintptr_t)u;
    }
    return 0;
}

void gl_tracker_release_end(uint64_t token, bool ok, struct gl_event *ev)
{
    if (!token) {
        /* Nothing tracked under that key.  A release the driver refused is the
         * program's error; one it accepted was of memory gpuleak did not see
         * allocated (counted in unknown_frees, shown with -v). */
        if (!ok && (ev->type == GL_EV_FREE || ev->type == GL_EV_VMM_RELEASE))
            gl_api_check_release_miss(ev);
        if (ok)
            publish(ev);
        return;
    }
    if (ev->type == GL_EV_FREE) {
        struct gl_table_node *n = (struct gl_table_node *)(uintptr_t)token;
        const struct gl_block_info *b = gl_block_table_node_info(n);
        gl_api_check_release(ev, b);
        if (!ok) {
            gl_block_table_reattach(blocks, n);
            return;
        }
        ev->seq = b->seq;
        ev->size = b->size;
        ev->kind = b->kind;
        ev->device = b->device;
        struct gl_thread *self = gl_thread_self();
        if (gl_mem_kind_counted(b->kind))
            gl_stats_free(b->device, b->kind, b->size, b->stack);
        if (__builtin_expect(gl_api_errors_ranges_on(), 0))
            gl_api_ranges_remove(b);
        if (gl_quarantine_capacity()) {
            struct gl_freed_block f = {
                .block = *b, .free_stack = ev->stack, .free_tid = ev->tid, .free_api = ev->api};
            gl_quarantine_put(&f);
        }
        if (__builtin_expect(b->flags & GL_BLK_POOL, 0))
            sweep_pool(b->key);
        /* Keep the node for this thread's next free: no allocation then. */
        if (self && !self->spare_node)
            self->spare_node = n;
        else
            gl_block_table_release(blocks, n);
        publish(ev);
        return;
    }
    if (ev->type == GL_EV_VMM_RELEASE) {
        struct release_undo *u = (struct release_undo *)(uintptr_t)token;
        /* Whatever the driver said: a handle released already is the program's error. */
        gl_api_check_release(ev, &u->before);
        if (!ok) {
            if (u->removed)
                gl_block_table_insert(blocks, &u->before, NULL);
            else
                gl_block_table_update(blocks, ev->key, restore_handle, &u->before, NULL, NULL);
        } else {
            if (u->removed) {
                ev->seq = u->before.seq;
                ev->size = u->before.size;
                gl_stats_free(u->before.device, u->before.kind, u->before.size, u->before.stack);
                if (gl_quarantine_capacity()) {
                    struct gl_freed_block f = {.block = u->before,
                                               .free_stack = ev->stack,
                                               .free_tid = ev->tid,
                                               .free_api = ev->api};
                    gl_quarantine_put(&f);
                }
            }
            publish(ev);
        }
        gl_tool_free(u, sizeof *u);
    }
}

/* ---- VMM mappings ---- */

static bool add_mapping(struct gl_block_info *b, void *arg)
{
    (void)arg;
    b->aux++;
    return false;
}

static bool drop_mapping(struct gl_block_info *b, void *arg)
{
    (void)arg;
    if (b->aux > 0)
        b->aux--;
    return b->refs == 0 && b->aux == 0;
}

void gl_tracker_vmm_map(struct gl_event *ev)
{
    struct gl_block_info m = {
        .key = ev->key,
        .size = ev->size,
        .aux = ev->aux,
        .tid = ev->tid,
        .device = ev->device,
        .api = ev->api,
        .stack = ev->stack,
        .ctx = ev->ctx,
    };
    gl_block_table_insert(maps, &m, NULL);
    gl_block_table_update(blocks, ev->aux, add_mapping, NULL, NULL, NULL);
    if (__builtin_expect(gl_api_errors_ranges_on(), 0))
        gl_api_ranges_add_mapping(ev->key, ev->size);
    publish(ev);
}

void gl_tracker_vmm_unmap(struct gl_event *ev)
{
    uint64_t cur = ev->key, end = ev->key + ev->size;
    /* An unmap may cover several adjacent mappings (an allocator that grows a
     * reserved range chunk by chunk and gives it back at once). */
    while (cur < end) {
        struct gl_block_info m;
        if (!gl_block_table_remove(maps, cur, &m) || m.size == 0)
            break;
        if (__builtin_expect(gl_api_errors_ranges_on(), 0))
            gl_api_ranges_remove_mapping(m.key);
        struct gl_block_info h;
        bool removed = false;
        if (gl_block_table_update(blocks, m.aux, drop_mapping, NULL, &h, &removed) && removed) {
            /* Its last mapping held a released handle: freed here, and a
             * later cuMemRelease of it is a double free. */
            gl_stats_free(h.device, h.kind, h.size, h.stack);
            if (gl_quarantine_capacity()) {
                struct gl_freed_block f = {
                    .block = h, .free_stack = ev->stack, .free_tid = ev->tid, .free_api = ev->api};
                gl_quarantine_put(&f);
            }
        }
        cur += m.size;
    }
    publish(ev);
}

void gl_tracker_vmm_retain(struct gl_event *ev)
{
    gl_block_table_update(blocks, ev->key, inc_handle_ref, NULL, NULL, NULL);
    publish(ev);
}

/* ---- contexts ---- */

struct ctx_sweep {
    uint64_t ctx;
};

static bool in_context(const struct gl_block_info *b, void *arg)
{
    struct ctx_sweep *sw = arg;
    if (b->ctx != sw->ctx || !gl_mem_kind_context_bound((enum gl_mem_kind)b->kind))
        return false;
    if (gl_mem_kind_counted(b->kind))
        gl_stats_free(b->device, b->kind, b->size, b->stack);
    if (gl_api_errors_ranges_on())
        gl_api_ranges_remove(b);
    return true; /* a pool's sub-allocations share its context and go with it */
}

void gl_tracker_ctx_destroy(struct gl_event *ev)
{
    struct ctx_sweep sw = {ev->ctx};
    gl_block_table_foreach(blocks, in_context, &sw);
    publish(ev);
}

void gl_tracker_apply(struct gl_event *ev)
{
    switch ((enum gl_event_type)ev->type) {
    case GL_EV_ALLOC:
        gl_tracker_alloc(ev);
        break;
    case GL_EV_FREE:
    case GL_EV_VMM_RELEASE:
        gl_tracker_release_end(gl_tracker_release_begin(ev), true, ev);
        break;
    case GL_EV_CTX_DESTROY:
        gl_tracker_ctx_destroy(ev);
        break;
    case GL_EV_VMM_MAP:
        gl_tracker_vmm_map(ev);
        break;
    case GL_EV_VMM_UNMAP:
        gl_tracker_vmm_unmap(ev);
        break;
    case GL_EV_VMM_RETAIN:
        gl_tracker_vmm_retain(ev);
        break;
    case GL_EV_IGNORE:
        gl_tracker_ignore(ev);
        break;
    case GL_EV_POOL_CREATE:
        gl_tracker_pool_create(ev);
        break;
    case GL_EV_POOL_DESTROY:
        gl_tracker_pool_destroy(ev);
        break;
    case GL_EV_ACCESS:
        gl_api_check_access(ev);
        break;
    case GL_EV_CAPTURE_BEGIN:
    case GL_EV_CAPTURE_END:
    case GL_EV_GRAPH_INSTANTIATE:
    case GL_EV_GRAPH_LAUNCH:
    case GL_EV_GRAPH_DESTROY:
    case GL_EV_GRAPH_EXEC_DESTROY:
        gl_graphs_apply(ev);
        break;
    case GL_EV_NONE:
        break;
    }
}

/* ---- lookups by address (error paths) ---- */

struct holding_query {
    uint64_t addr;
    struct gl_block_info *out;
    bool found;
};

static bool holds(const struct gl_block_info *b, void *arg)
{
    struct holding_query *q = arg;
    if (!q->found && gl_key_ns(b->key) == GL_NS_ADDR && q->addr >= b->key &&
        q->addr - b->key < b->size) {
        *q->out = *b;
        q->found = true;
    }
    return false;
}

bool gl_tracker_holding(uint64_t addr, struct gl_block_info *out)
{
    if (!blocks)
        return false;
    uint64_t start, seq;
    if (gl_api_errors_ranges_on())
        return gl_api_ranges_find(addr, &start, &seq) &&
               gl_block_table_lookup(blocks, start, out) && out->seq == seq;
    /* No index: a walk of the table, only ever on an error path. */
    struct holding_query q = {addr, out, false};
    gl_block_table_foreach(blocks, holds, &q);
    return q.found;
}

bool gl_tracker_vmm_mapping_holding(uint64_t addr, struct gl_block_info *out)
{
    struct gl_block_info m;
    struct holding_query q = {addr, &m, false};
    if (!maps)
        return false;
    gl_block_table_foreach(maps, holds, &q);
    if (!q.found)
        return false;
    /* Report the physical allocation behind it, at the mapped address. */
    if (!gl_block_table_lookup(blocks, m.aux, out))
        *out = m;
    out->key = m.key;
    return true;
}

void gl_tracker_stats(struct gl_tracker_stats *s)
{
    struct gl_stat_totals t;
    gl_stats_totals(&t);
    s->allocs = t.allocs;
    s->frees = t.frees;
    s->bytes_allocated = t.bytes_allocated;
    s->live_bytes = t.live_bytes;
    s->peak_bytes = t.peak_bytes;
    s->live_blocks = blocks ? gl_block_table_count(blocks) : 0;
    s->unknown_frees = atomic_load(&n_unknown_frees);
    s->replaced = atomic_load(&n_replaced);
}

/* ---- snapshots ---- */

struct snap {
    struct gl_block_info *out;
    size_t n, cap;
};

static bool copy_block(const struct gl_block_info *b, void *arg)
{
    struct snap *s = arg;
    if (s->n < s->cap)
        s->out[s->n++] = *b;
    return false;
}

int gl_tracker_snapshot(struct gl_block_info **out, size_t *n, size_t *bytes)
{
    if (!blocks) { /* tracking never started: nothing is outstanding */
        *out = NULL;
        *n = *bytes = 0;
        return 0;
    }
    /* Blocks may still come and go on other threads: leave room for some. */
    size_t cap = gl_block_table_count(blocks) + 1024;
    size_t size = cap * sizeof **out;
    struct snap s = {gl_tool_map(size), 0, cap};
    if (!s.out)
        return -1;
    gl_block_table_foreach(blocks, copy_block, &s);
    *out = s.out;
    *n = s.n;
    *bytes = size;
    return 0;
}

struct map_query {
    uint64_t handle;
    uint64_t *addrs;
    size_t n, max;
    uint64_t bytes;
};

static bool match_mapping(const struct gl_block_info *m, void *arg)
{
    struct map_query *q = arg;
    if (m->aux == q->handle) {
        if (q->n < q->max)
            q->addrs[q->n] = m->key;
        q->n++;
        q->bytes += m->size;
    }
    return false;
}

size_t gl_tracker_vmm_mappings(uint64_t handle_key, uint64_t *addrs, size_t max,
                               uint64_t *mapped_bytes)
{
    struct map_query q = {handle_key, addrs, 0, max, 0};
    gl_block_table_foreach(maps, match_mapping, &q);
    if (mapped_bytes)
        *mapped_bytes = q.bytes;
    return q.n;
}

struct map_list {
    struct gl_vmm_mapping *out;
    size_t n, max;
};

static bool list_mapping(const struct gl_block_info *m, void *arg)
{
    struct map_list *l = arg;
    if (l->n < l->max)
        l->out[l->n] = (struct gl_vmm_mapping){m->key, m->size, m->aux};
    l->n++;
    return false;
}

size_t gl_tracker_vmm_map_list(struct gl_vmm_mapping *out, size_t max)
{
    struct map_list l = {out, 0, max};
    if (maps)
        gl_block_table_foreach(maps, list_mapping, &l);
    return l.n;
}

size_t gl_tracker_live_records(void)
{
    return (blocks ? gl_block_table_count(blocks) : 0) + (maps ? gl_block_table_count(maps) : 0);
}

size_t gl_tracker_table_bins(void)
{
    return (blocks ? gl_block_table_bin_count(blocks) : 0) +
           (maps ? gl_block_table_bin_count(maps) : 0);
}

size_t gl_tracker_memory_bytes(void)
{
    return (blocks ? gl_block_table_memory_bytes(blocks) : 0) +
           (maps ? gl_block_table_memory_bytes(maps) : 0);
}

void gl_tracker_after_fork_child(void)
{
    if (blocks)
        gl_block_table_reset_locks_after_fork(blocks);
    if (maps)
        gl_block_table_reset_locks_after_fork(maps);
}
