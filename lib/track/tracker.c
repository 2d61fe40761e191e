/* SPDX-License-Identifier: MIT */
#include "track/tracker.h"

#include <stdatomic.h>
#include <string.h>

#include "base/thread.h"
#include "base/tool.h"
#include "common/util.h"
#include "event/api.h"
#include "track/stats.h"

static GL_READ_MOSTLY struct gl_table *blocks; /* outstanding blocks */
static struct gl_table *maps;                  /* VMM mappings: key = address, aux = handle key */

/* Process-wide counters, each on its own cache line.  Threads allocating at once
 * would bounce shared counters between cores on every event, so the hot path
 * touches none in the common case: allocation numbers are handed to threads in
 * blocks of SEQ_BLOCK (unique, increasing within a thread, one shared atomic
 * per block); usage counters are kept per thread by track/stats.c. */
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

GL_HOT uint64_t gl_tracker_next_seq(void)
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

bool gl_tracker_lookup(uint64_t key, struct gl_block_info *out)
{
    return blocks && gl_block_table_lookup(blocks, key, out);
}

/* ---- what changed besides the event's own block ---- */

/* A block gone without a free of its own, told to the observers as a derived
 * free: api is the call that took it (cuMemUnmap of a released handle), or
 * GL_API_NONE when no call did (its context destroyed, its key reused). */
static void gone(const struct gl_event *cause, const struct gl_block_info *b, uint16_t api,
                 uint32_t stack)
{
    struct gl_event ev = {
        .api = api,
        .tid = cause->tid,
        .stack = stack,
        .key = b->key,
        .size = b->size,
        .seq = b->seq,
        .ctx = b->ctx,
        .kind = b->kind,
        .device = b->device,
        .time_ns = cause->time_ns,
    };
    gl_dispatch_effect(&ev, b);
}

/* ---- custom pools ---- */

struct pool_sweep {
    uint64_t pool_key;
    const struct gl_event *cause;
};

static bool in_pool(const struct gl_block_info *b, void *arg)
{
    const struct pool_sweep *sw = arg;
    if (b->kind != GL_MEM_POOL_SUB || b->aux != sw->pool_key)
        return false;
    gone(sw->cause, b, GL_API_NONE, 0);
    return true;
}

/* Forget a pool's sub-allocations (the pool is destroyed or its block freed).
 * Linear in the live blocks, and only ever for a pool's block. */
static void sweep_pool(uint64_t pool_key, const struct gl_event *cause)
{
    struct pool_sweep sw = {pool_key, cause};
    gl_block_table_foreach(blocks, in_pool, &sw);
}

struct flag_change {
    uint8_t set, clear;
    struct gl_block_info *copy;
};

static bool change_flags(struct gl_block_info *b, void *arg)
{
    struct flag_change *c = arg;
    b->flags = (uint8_t)((b->flags | c->set) & ~c->clear);
    *c->copy = *b;
    return false;
}

static bool update_flags(uint64_t key, uint8_t set, uint8_t clear, struct gl_block_info *blk)
{
    struct flag_change c = {set, clear, blk};
    return blocks && gl_block_table_update(blocks, key, change_flags, &c, NULL, NULL);
}

/* ---- allocations ---- */

GL_READ_MOSTLY uint64_t (*gl_tracker_seq_hint)(const struct gl_event *ev);

GL_HOT static bool on_alloc(struct gl_event *ev, struct gl_block_info *b)
{
    if (!ev->seq && __builtin_expect(gl_tracker_seq_hint != NULL, 0))
        ev->seq = gl_tracker_seq_hint(ev);
    if (!ev->seq)
        ev->seq = gl_tracker_next_seq();
    *b = (struct gl_block_info){
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
    if (__builtin_expect(gl_block_table_insert(blocks, b, &old), 0)) {
        /* A free gpuleak never saw: the old block is gone. */
        atomic_fetch_add_explicit(&n_replaced, 1, memory_order_relaxed);
        gone(ev, &old, GL_API_NONE, 0);
        if (old.flags & GL_BLK_POOL)
            sweep_pool(old.key, ev);
    }
    return true;
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

GL_HOT static uint64_t release_begin(struct gl_event *ev)
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

static bool free_end(struct gl_table_node *n, struct gl_event *ev, struct gl_block_info *blk)
{
    *blk = *gl_block_table_node_info(n);
    if (ev->flags & GL_EVF_FAILED) {
        gl_block_table_reattach(blocks, n);
        return true;
    }
    ev->seq = blk->seq;
    if (__builtin_expect(blk->flags & GL_BLK_POOL, 0))
        sweep_pool(blk->key, ev);
    /* Keep the node for this thread's next free: no allocation then. */
    struct gl_thread *self = gl_thread_self();
    if (self && !self->spare_node)
        self->spare_node = n;
    else
        gl_block_table_release(blocks, n);
    return true;
}

static bool vmm_release_end(struct release_undo *u, struct gl_event *ev, struct gl_block_info *blk)
{
    *blk = u->before;
    if (ev->flags & GL_EVF_FAILED) {
        if (u->removed)
            gl_block_table_insert(blocks, &u->before, NULL);
        else
            gl_block_table_update(blocks, ev->key, restore_handle, &u->before, NULL, NULL);
    } else if (u->removed) {
        ev->seq = u->before.seq;
        gone(ev, &u->before, ev->api, ev->stack); /* its last reference: freed here */
    }
    gl_tool_free(u, sizeof *u);
    return true;
}

GL_HOT static bool release_end(uint64_t token, struct gl_event *ev, struct gl_block_info *blk)
{
    if (!token)
        return false; /* nothing tracked under that key */
    if (ev->type == GL_EV_FREE)
        return free_end((struct gl_table_node *)(uintptr_t)token, ev, blk);
    return vmm_release_end((struct release_undo *)(uintptr_t)token, ev, blk);
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

static bool inc_handle_ref(struct gl_block_info *b, void *arg)
{
    b->refs++;
    b->flags &= (uint8_t)~GL_BLK_RELEASED;
    *(struct gl_block_info *)arg = *b;
    return false;
}

static void vmm_map(const struct gl_event *ev)
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
}

static void vmm_unmap(const struct gl_event *ev)
{
    uint64_t cur = ev->key, end = ev->key + ev->size;
    /* An unmap may cover several adjacent mappings (an allocator that grows a
     * reserved range chunk by chunk and gives it back at once). */
    while (cur < end) {
        struct gl_block_info m;
        if (!gl_block_table_remove(maps, cur, &m) || m.size == 0)
            break;
        struct gl_block_info h;
        bool removed = false;
        if (gl_block_table_update(blocks, m.aux, drop_mapping, NULL, &h, &removed) && removed)
            /* Its last mapping held a released handle: freed here, and a
             * later cuMemRelease of it is a double free. */
            gone(ev, &h, ev->api, ev->stack);
        cur += m.size;
    }
}

/* ---- contexts ---- */

static bool in_context(const struct gl_block_info *b, void *arg)
{
    const struct gl_event *cause = arg;
    if (b->ctx != cause->ctx || !gl_mem_kind_context_bound(b->kind))
        return false;
    gone(cause, b, GL_API_NONE, 0);
    return true; /* a pool's sub-allocations share its context and go with it */
}

/* ---- the state stage ---- */

static bool on_ctx_destroy(struct gl_event *ev, struct gl_block_info *blk)
{
    (void)blk;
    gl_block_table_foreach(blocks, in_context, ev);
    return false;
}

static bool on_map(struct gl_event *ev, struct gl_block_info *blk)
{
    (void)blk;
    vmm_map(ev);
    return false;
}

static bool on_unmap(struct gl_event *ev, struct gl_block_info *blk)
{
    (void)blk;
    vmm_unmap(ev);
    return false;
}

static bool on_retain(struct gl_event *ev, struct gl_block_info *blk)
{
    return gl_block_table_update(blocks, ev->key, inc_handle_ref, blk, NULL, NULL);
}

static bool on_ignore(struct gl_event *ev, struct gl_block_info *blk)
{
    return update_flags(ev->key, GL_BLK_IGNORED, 0, blk);
}

static bool on_pool_create(struct gl_event *ev, struct gl_block_info *blk)
{
    return update_flags(ev->key, GL_BLK_POOL, 0, blk);
}

static bool on_pool_destroy(struct gl_event *ev, struct gl_block_info *blk)
{
    bool found = update_flags(ev->key, 0, GL_BLK_POOL, blk);
    sweep_pool(ev->key, ev);
    return found;
}

static void reset(void)
{
    gl_block_table_destroy(blocks);
    gl_block_table_destroy(maps);
    blocks = maps = NULL;
    atomic_store(&seq_counter, 0);
    atomic_store(&seq_epoch, 0);
    atomic_store(&n_unknown_frees, 0);
    atomic_store(&n_replaced, 0);
    gl_tracker_init();
}

static void after_fork(void)
{
    if (blocks)
        gl_block_table_reset_locks_after_fork(blocks);
    if (maps)
        gl_block_table_reset_locks_after_fork(maps);
}

/* Control events and checks keep nothing here. */
static const struct gl_consumer consumer = {
    .resolve =
        {
            [GL_EV_ALLOC] = on_alloc,
            [GL_EV_CTX_DESTROY] = on_ctx_destroy,
            [GL_EV_VMM_MAP] = on_map,
            [GL_EV_VMM_UNMAP] = on_unmap,
            [GL_EV_VMM_RETAIN] = on_retain,
            [GL_EV_IGNORE] = on_ignore,
            [GL_EV_POOL_CREATE] = on_pool_create,
            [GL_EV_POOL_DESTROY] = on_pool_destroy,
        },
    .begin = release_begin,
    .end = release_end,
};

const struct gl_component gl_tracker_component = {
    .name = "tracker",
    .reset = reset,
    .after_fork = after_fork,
    .consumer = &consumer,
};

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
