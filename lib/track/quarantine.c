/* SPDX-License-Identifier: MIT */
#include "track/quarantine.h"

#include <string.h>

#include "event/api.h"
#include "event/event.h"
#include "base/ranges.h"
#include "base/spin.h"
#include "base/tool.h"

struct slot {
    struct gl_freed_block f;
    uint64_t pos; /* which put wrote it: ring[pos % cap] */
    bool indexed; /* in the range index (tag = pos) */
};

static struct {
    gl_spinlock lock;
    struct slot *ring;
    size_t cap, ring_bytes;
    uint64_t puts;            /* records written so far */
    size_t slot;              /* puts % cap: where the next one goes, counted, not divided */
    uint64_t indexed_upto;    /* records before this one were offered to the index */
    struct gl_ranges *ranges; /* freed address ranges, when range checks are on */
} q;

void gl_quarantine_configure(size_t capacity, bool ranges)
{
    gl_spin_lock(&q.lock);
    if (q.ring)
        gl_tool_unmap(q.ring, q.ring_bytes);
    gl_ranges_destroy(q.ranges);
    q.ring = NULL;
    q.ranges = NULL;
    q.cap = q.ring_bytes = 0;
    q.puts = q.indexed_upto = 0;
    q.slot = 0;
    if (capacity) {
        q.ring_bytes = capacity * sizeof *q.ring;
        q.ring = gl_tool_map(q.ring_bytes);
        q.cap = q.ring ? capacity : 0;
        if (q.ring && ranges)
            q.ranges = gl_ranges_create();
    }
    gl_spin_unlock(&q.lock);
}

size_t gl_quarantine_capacity(void) { return q.cap; }

static void clear(void)
{
    gl_spin_lock(&q.lock);
    q.puts = q.indexed_upto = 0;
    q.slot = 0;
    if (q.ranges) {
        gl_ranges_destroy(q.ranges);
        q.ranges = gl_ranges_create();
    }
    gl_spin_unlock(&q.lock);
}

static inline uint64_t oldest(void) { return q.puts > q.cap ? q.puts - q.cap : 0; }

/* The ring's next slot, its old record evicted (under the lock, q.cap > 0). */
static inline struct slot *claim_slot(void)
{
    struct slot *s = &q.ring[q.slot];
    q.slot = q.slot + 1 == q.cap ? 0 : q.slot + 1;
    if (s->indexed) /* evicted: its range goes too, unless a newer one replaced it */
        gl_ranges_remove(q.ranges, s->f.block.key, s->pos, false);
    s->pos = q.puts++;
    s->indexed = false;
    return s;
}

bool gl_quarantine_find(uint64_t key, struct gl_freed_block *out)
{
    bool found = false;
    gl_spin_lock(&q.lock);
    for (uint64_t p = q.puts; p > oldest(); p--) {
        const struct slot *s = &q.ring[(p - 1) % q.cap];
        if (s->f.block.key == key) {
            *out = s->f;
            found = true;
            break;
        }
    }
    gl_spin_unlock(&q.lock);
    return found;
}

/* Offer the records added since the last call to the range index, oldest
 * first, so that the newest free of overlapping addresses wins. */
static void index_new_records(void)
{
    uint64_t p = q.indexed_upto > oldest() ? q.indexed_upto : oldest();
    for (; p < q.puts; p++) {
        struct slot *s = &q.ring[p % q.cap];
        const struct gl_block_info *b = &s->f.block;
        if (gl_block_has_range(b))
            s->indexed = gl_ranges_insert_newest(q.ranges, b->key, b->key + b->size, s->pos);
    }
    q.indexed_upto = q.puts;
}

bool gl_quarantine_holding(uint64_t addr, struct gl_freed_block *out)
{
    if (!q.ranges)
        return false;
    bool found = false;
    gl_spin_lock(&q.lock);
    if (q.ranges) {
        index_new_records();
        struct gl_range r;
        /* The index names the record by its position; one evicted is gone. */
        if (gl_ranges_find(q.ranges, addr, &r) && r.tag >= oldest() && r.tag < q.puts) {
            *out = q.ring[r.tag % q.cap].f;
            found = true;
        }
    }
    gl_spin_unlock(&q.lock);
    return found;
}

size_t gl_quarantine_memory_bytes(void)
{
    return q.ring_bytes + (q.ranges ? gl_ranges_memory_bytes(q.ranges) : 0);
}

static void after_fork(void)
{
    gl_spin_reset(&q.lock);
    if (q.ranges)
        gl_ranges_reset_lock_after_fork(q.ranges);
}

/* A block freed by a call (its free, its handle's release or last unmap, a
 * graph's free node): what a second free of it, or a copy into it, names.
 * Blocks that went with their context, or whose key was found reused, were
 * freed by no call and are not kept. */
static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (!blk || (ev->flags & GL_EVF_FAILED) || ev->api == GL_API_NONE)
        return;
    gl_spin_lock(&q.lock);
    if (q.cap) { /* written in place: frees are the hot path */
        struct slot *s = claim_slot();
        s->f.block = *blk;
        s->f.free_stack = ev->stack;
        s->f.free_tid = ev->tid;
        s->f.free_api = ev->api;
    }
    gl_spin_unlock(&q.lock);
}

static bool wanted(void) { return q.cap > 0; }

static const struct gl_consumer consumer = {.on = {[GL_EV_FREE] = on_free}, .wanted = wanted};

const struct gl_component gl_quarantine_component = {
    .name = "quarantine",
    .reset = clear,
    .after_fork = after_fork,
    .consumer = &consumer,
};
