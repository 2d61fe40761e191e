#include "quarantine.h"

#include <string.h>

#include "event.h"
#include "gl_uthash.h"
#include "ranges.h"
#include "spinlock.h"

struct slot {
    struct gl_freed_block f;
    bool used;
    bool indexed; /* the newest free of its key: in the hash */
    UT_hash_handle hh;
};

static struct {
    gl_spinlock lock;
    struct slot *ring;
    size_t cap, next, ring_bytes;
    struct slot *by_key;
    struct gl_ranges *ranges; /* freed address ranges, when range checks are on */
} q;

static bool has_range(const struct gl_block_info *b)
{
    return gl_key_ns(b->key) == GL_NS_ADDR && b->size > 0;
}

void gl_quarantine_configure(size_t capacity, bool ranges)
{
    gl_spin_lock(&q.lock);
    HASH_CLEAR(hh, q.by_key);
    if (q.ring)
        gl_tool_unmap(q.ring, q.ring_bytes);
    gl_ranges_destroy(q.ranges);
    q.ring = NULL;
    q.ranges = NULL;
    q.cap = q.next = q.ring_bytes = 0;
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

static void evict(struct slot *s)
{
    if (!s->used)
        return;
    if (s->indexed) {
        HASH_DEL(q.by_key, s);
        if (q.ranges && has_range(&s->f.block))
            gl_ranges_remove(q.ranges, s->f.block.key, s->f.block.seq, false);
    }
    s->used = s->indexed = false;
}

void gl_quarantine_put(const struct gl_freed_block *f)
{
    if (!q.cap)
        return;
    gl_spin_lock(&q.lock);
    if (q.cap) {
        struct slot *s = &q.ring[q.next];
        q.next = (q.next + 1) % q.cap;
        evict(s);
        struct slot *older;
        HASH_FIND(hh, q.by_key, &f->block.key, sizeof f->block.key, older);
        if (older) {
            HASH_DEL(q.by_key, older);
            older->indexed = false;
        }
        s->f = *f;
        s->used = true;
        HASH_ADD(hh, q.by_key, f.block.key, sizeof s->f.block.key, s);
        struct slot *added; /* out of memory leaves it unindexed (HASH_NONFATAL_OOM) */
        HASH_FIND(hh, q.by_key, &f->block.key, sizeof f->block.key, added);
        s->indexed = added == s;
        if (s->indexed && q.ranges && has_range(&f->block))
            gl_ranges_insert_newest(q.ranges, f->block.key, f->block.key + f->block.size,
                                    f->block.seq);
    }
    gl_spin_unlock(&q.lock);
}

bool gl_quarantine_find(uint64_t key, struct gl_freed_block *out)
{
    if (!q.cap)
        return false;
    gl_spin_lock(&q.lock);
    struct slot *s;
    HASH_FIND(hh, q.by_key, &key, sizeof key, s);
    if (s)
        *out = s->f;
    gl_spin_unlock(&q.lock);
    return s != NULL;
}

bool gl_quarantine_holding(uint64_t addr, struct gl_freed_block *out)
{
    if (!q.ranges)
        return false;
    struct gl_range r;
    if (!gl_ranges_find(q.ranges, addr, &r))
        return false;
    /* The range index names the start and allocation number; the record has the rest. */
    struct gl_freed_block f;
    return gl_quarantine_find(r.start, &f) && f.block.seq == r.tag && (*out = f, true);
}

size_t gl_quarantine_memory_bytes(void)
{
    return q.ring_bytes + (q.ranges ? gl_ranges_memory_bytes(q.ranges) : 0) +
           (q.by_key ? HASH_OVERHEAD(hh, q.by_key) : 0);
}

void gl_quarantine_after_fork_child(void)
{
    gl_spin_reset(&q.lock);
    if (q.ranges)
        gl_ranges_reset_lock_after_fork(q.ranges);
}
