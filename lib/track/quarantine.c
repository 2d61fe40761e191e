/* SPDX-License-Identifier: MIT */
#include "track/quarantine.h"

#include <sched.h>
#include <string.h>

#include "event/api.h"
#include "event/event.h"
#include "base/ranges.h"
#include "base/prefetch.h"
#include "base/spin.h"
#include "base/tool.h"
#include "common/util.h"

/* A record's slot: 128 bytes, so that no cache line holds two slots and two
 * threads freeing at once never write the same line. */
struct slot {
    /* pos + 1 of the record here once complete; with WRITING while its writer
     * fills it; 0 never written. */
    _Atomic uint64_t stamp;
    /* The greatest pos + 1 of a writer that gave this slot up (another held it
     * too long): that position, and any older one of the slot, will never be
     * written, and the index goes past them. */
    _Atomic uint64_t skipped;
    struct gl_freed_block f;
} __attribute__((aligned(128)));

#define WRITING (UINT64_C(1) << 63)

/* What the range index knows of the record it took from a slot, so that it
 * can take the range out again when a newer record takes the slot. */
struct indexed {
    uint64_t key, pos1; /* pos + 1; 0: none */
};

static struct {
    struct slot *ring;
    size_t cap;    /* records remembered: the newest cap */
    uint64_t mask; /* the ring's size (a power of two, >= cap) - 1 */
    size_t ring_bytes;
    _Atomic uint64_t puts;         /* positions taken so far: what every free adds to */
    uint64_t floor;                /* positions before it were forgotten (reset) */
    _Atomic unsigned long dropped; /* records given up: their slot held too long */
    unsigned long overrun;         /* range lookups the frees outran every time (lock) */
    /* The readers': lookups are rare (errors, copies that miss every live
     * block), so they share one lock, which writers never take. */
    gl_spinlock lock;
    uint64_t indexed_upto;    /* positions before this one were offered to the index */
    struct indexed *index_of; /* per slot */
    size_t index_of_bytes;
    struct gl_ranges *ranges;     /* freed address ranges, when range checks are on */
} q __attribute__((aligned(64))); /* its first line is what a free reads first */

static void unmap(void)
{
    if (q.ring)
        gl_tool_unmap(q.ring, q.ring_bytes);
    if (q.index_of)
        gl_tool_unmap(q.index_of, q.index_of_bytes);
    gl_ranges_destroy(q.ranges);
    q.ring = NULL;
    q.index_of = NULL;
    q.ranges = NULL;
    q.cap = q.ring_bytes = q.index_of_bytes = 0;
    q.mask = 0;
}

void gl_quarantine_configure(size_t capacity, bool ranges)
{
    gl_spin_lock(&q.lock);
    unmap();
    atomic_store(&q.puts, 0);
    q.floor = q.indexed_upto = 0;
    q.overrun = 0;
    atomic_store(&q.dropped, 0);
    if (capacity) {
        size_t size = 1;
        while (size < capacity)
            size *= 2;
        q.ring_bytes = gl_tool_page_round(size * sizeof *q.ring);
        q.ring = gl_tool_map(q.ring_bytes);
        if (q.ring && ranges) { /* without them, lookups by key still work */
            q.index_of_bytes = gl_tool_page_round(size * sizeof *q.index_of);
            q.index_of = gl_tool_map(q.index_of_bytes);
            q.ranges = q.index_of ? gl_ranges_create() : NULL;
            if (q.index_of && !q.ranges) {
                gl_tool_unmap(q.index_of, q.index_of_bytes);
                q.index_of = NULL;
                q.index_of_bytes = 0;
            }
        }
        if (q.ring) {
            q.cap = capacity;
            q.mask = size - 1;
        }
    }
    gl_spin_unlock(&q.lock);
}

size_t gl_quarantine_capacity(void) { return q.cap; }

/* Forget every record; writers may be running (a replay's reset is not). */
static void clear(void)
{
    gl_spin_lock(&q.lock);
    q.floor = q.indexed_upto = atomic_load(&q.puts);
    q.overrun = 0;
    atomic_store(&q.dropped, 0);
    if (q.ranges) {
        gl_ranges_destroy(q.ranges);
        q.ranges = gl_ranges_create();
        memset(q.index_of, 0, q.index_of_bytes);
    }
    gl_spin_unlock(&q.lock);
}

/* The oldest position still remembered, when puts positions are taken. */
static inline uint64_t oldest(uint64_t puts)
{
    uint64_t o = puts > q.cap ? puts - q.cap : 0;
    return o > q.floor ? o : q.floor;
}

/* The record at position p into *out, if its slot holds it complete: the
 * stamp read before and after the copy, so that a writer that began meanwhile
 * is seen (a sequence lock's read). */
static bool read_at(uint64_t p, struct gl_freed_block *out)
{
    const struct slot *s = &q.ring[p & q.mask];
    if (atomic_load_explicit(&s->stamp, memory_order_acquire) != p + 1)
        return false;
    memcpy(out, &s->f, sizeof *out);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->stamp, memory_order_relaxed) == p + 1;
}

/* Whether the record at p may be of the block that started at key (read
 * unchecked: a record being replaced may answer wrong, and read_at then
 * decides), so that a scan copies only what may match. */
static inline bool may_be(uint64_t p, uint64_t key)
{
    return __atomic_load_n(&q.ring[p & q.mask].f.block.key, __ATOMIC_RELAXED) == key;
}

/* Whether position p will never be written: its writer, or a later one of
 * its slot, gave the slot up. */
static inline bool never_written(uint64_t p)
{
    return atomic_load_explicit(&q.ring[p & q.mask].skipped, memory_order_acquire) >= p + 1;
}

/* The newest record of a block that started at key: scanned from the newest
 * position down (positions follow the observers' calls; allocation numbers
 * would not do, since threads take them in blocks). */
bool gl_quarantine_find(uint64_t key, struct gl_freed_block *out)
{
    if (!q.cap)
        return false;
    bool found = false;
    gl_spin_lock(&q.lock);
    uint64_t puts = atomic_load_explicit(&q.puts, memory_order_acquire);
    struct gl_freed_block f;
    for (uint64_t p = puts; !found && p > oldest(puts); p--)
        if (may_be(p - 1, key) && read_at(p - 1, &f) && f.block.key == key) {
            *out = f;
            found = true;
        }
    gl_spin_unlock(&q.lock);
    return found;
}

/* Offer the records written since the last call to the range index, in
 * position order, so that the newest free of overlapping addresses wins.  A
 * position whose writer has not finished stops it until the next call (the
 * lookup scans what lies past it); one whose slot a newer record took (it
 * left the window), or that will never be written, is passed. */
static void index_new_records(void)
{
    uint64_t puts = atomic_load_explicit(&q.puts, memory_order_acquire);
    uint64_t p = q.indexed_upto > oldest(puts) ? q.indexed_upto : oldest(puts);
    for (; p < puts; p++) {
        uint64_t stamp =
            atomic_load_explicit(&q.ring[p & q.mask].stamp, memory_order_acquire) & ~WRITING;
        if (stamp < p + 1) {
            if (never_written(p))
                continue;
            break; /* taken, not yet written */
        }
        struct gl_freed_block f;
        if (stamp > p + 1)
            continue;
        if (!read_at(p, &f))
            break; /* being written */
        struct indexed *was = &q.index_of[p & q.mask];
        if (was->pos1) /* its slot's older record: its range goes, unless a newer one replaced it */
            gl_ranges_remove(q.ranges, was->key, was->pos1 - 1, false);
        was->pos1 = 0;
        const struct gl_block_info *b = &f.block;
        if (gl_block_has_range(b) && gl_ranges_insert_newest(q.ranges, b->key, b->key + b->size, p))
            *was = (struct indexed){b->key, p + 1};
    }
    q.indexed_upto = p;
}

/* Whether position p's slot now holds a newer record: it left the window
 * while a lookup read it. */
static inline bool overtaken(uint64_t p)
{
    return (atomic_load_explicit(&q.ring[p & q.mask].stamp, memory_order_relaxed) & ~WRITING) >
           p + 1;
}

/* The record holding addr as the index would give it had every record of
 * the window been inserted in position order, each newer range removing
 * every older one it overlaps (gl_ranges_insert_newest).  The index has the
 * records up to the first position whose writer was still at work; those
 * past it (usually none) are read here, newest first, each once: the first
 * that holds addr is the answer, unless a newer one overlaps it, which can
 * only lie wholly below addr (ending after its start) or wholly above
 * (starting before its end); with none holding addr, the index's answer
 * stands under the same condition.  A record being written is left out.
 *
 * One pass of gl_quarantine_holding over the window as it stood at its
 * start; *raced when a record it needed was overwritten meanwhile (the
 * lookup was held up for a lap of the ring). */
static bool holding_once(uint64_t addr, struct gl_freed_block *f, bool *raced)
{
    index_new_records();
    uint64_t puts = atomic_load_explicit(&q.puts, memory_order_acquire);
    uint64_t from = q.indexed_upto > oldest(puts) ? q.indexed_upto : oldest(puts);
    uint64_t below = 0, above = UINT64_MAX; /* the newer ranges' nearest edges */
    for (uint64_t p = puts; p > from; p--) {
#ifdef GL_ASSERTIONS
        if (gl_quarantine_test_scan_hook)
            gl_quarantine_test_scan_hook(p - 1);
#endif
        if (!read_at(p - 1, f)) {
            *raced |= overtaken(p - 1);
            continue;
        }
        if (!gl_block_has_range(&f->block))
            continue;
        uint64_t start = f->block.key, end = start + f->block.size;
        /* A record overtaken above this one may have held addr or hidden
         * this one: the pass decides nothing, and the lookup goes again. */
        if (addr >= start && addr < end)
            return !*raced && start >= below && end <= above;
        if (end <= addr)
            below = end > below ? end : below;
        else
            above = start < above ? start : above;
    }
    if (*raced)
        return false;
    struct gl_range r;
    /* The index names the record by its position; one that left the window,
     * or whose slot a newer record took, is gone. */
    if (!gl_ranges_find(q.ranges, addr, &r) || r.tag < oldest(puts) || r.start < below ||
        r.end > above)
        return false;
    if (read_at(r.tag, f))
        return true;
    *raced = true;
    return false;
}

bool gl_quarantine_holding(uint64_t addr, struct gl_freed_block *out)
{
    if (!q.ranges)
        return false;
    bool found = false, raced = true;
    struct gl_freed_block f;
    gl_spin_lock(&q.lock);
    /* Again, a few times, while the frees outran it. */
    for (int tries = 0; q.ranges && !found && raced && tries < 4; tries++) {
        raced = false;
        found = holding_once(addr, &f, &raced);
    }
    if (raced)
        q.overrun++; /* answered "none" for want of a settled window */
    gl_spin_unlock(&q.lock);
    if (found)
        *out = f;
    return found;
}

unsigned long gl_quarantine_dropped(void) { return atomic_load(&q.dropped); }

unsigned long gl_quarantine_overrun(void)
{
    gl_spin_lock(&q.lock);
    unsigned long n = q.overrun;
    gl_spin_unlock(&q.lock);
    return n;
}

size_t gl_quarantine_memory_bytes(void)
{
    return q.ring_bytes + q.index_of_bytes + (q.ranges ? gl_ranges_memory_bytes(q.ranges) : 0);
}

/* In a fork child: the readers' lock.  (A child of a tracking process gets
 * no events and asks nothing: the runtime is off there, inject.c.) */
static void after_fork(void)
{
    gl_spin_reset(&q.lock);
    if (q.ranges)
        gl_ranges_reset_lock_after_fork(q.ranges);
}

/* Take the slot of position pos for writing: false when a record newer than
 * this one holds it (pos then left the window already: a writer stopped for a
 * whole lap of the ring between taking its position and writing), or when
 * another writer holds it that long (the position is then marked skipped, so
 * that readers do not wait for it, and the record is counted as dropped). */
static bool take_slot(struct slot *s, uint64_t pos)
{
    uint64_t cur = atomic_load_explicit(&s->stamp, memory_order_relaxed);
    for (unsigned waits = 0;;) {
        if ((cur & ~WRITING) > pos + 1)
            return false;
        if (cur & WRITING) {
            /* An older position's writer, a lap behind, still at it: rare
             * (it stopped for a whole lap mid-write), so a short wait, then
             * the record is given up rather than the call held. */
            if (++waits > 64) {
                uint64_t was = atomic_load_explicit(&s->skipped, memory_order_relaxed);
                while (was < pos + 1 &&
                       !atomic_compare_exchange_weak_explicit(
                           &s->skipped, &was, pos + 1, memory_order_release, memory_order_relaxed))
                    ;
                atomic_fetch_add_explicit(&q.dropped, 1, memory_order_relaxed);
                return false;
            }
            sched_yield();
            cur = atomic_load_explicit(&s->stamp, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&s->stamp, &cur, (pos + 1) | WRITING,
                                                  memory_order_acquire, memory_order_relaxed))
            return true;
    }
}

/* The record into its slot (taken), then its stamp: complete. */
static inline void fill(struct slot *s, uint64_t pos, const struct gl_event *ev,
                        const struct gl_block_info *blk)
{
    atomic_thread_fence(memory_order_release); /* the stamp's WRITING before the record's bytes */
    s->f.block = *blk;
    s->f.free_stack = ev->stack;
    s->f.free_tid = ev->tid;
    s->f.free_api = ev->api;
    atomic_store_explicit(&s->stamp, pos + 1, memory_order_release);
}

/* A block freed by a call (its free, its handle's release or last unmap, a
 * graph's free node): what a second free of it, or a copy into it, names.
 * Blocks that went with their context, or whose key was found reused, were
 * freed by no call and are not kept.
 *
 * Frees are the hot path and lookups rare: a writer takes a position with one
 * atomic add and fills its own slot, with no lock, so that threads freeing at
 * once do not wait for each other (a lock here cost a third of gpuleak's time
 * per pair at two threads, bench/RESULTS.md); only a writer a whole lap behind
 * in the same slot is waited for, a bounded while.  Readers tell a slot being
 * written by its stamp. */
GL_HOT static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (!blk || (ev->flags & GL_EVF_FAILED) || ev->api == GL_API_NONE || !q.cap)
        return;
    uint64_t pos = atomic_fetch_add_explicit(&q.puts, 1, memory_order_relaxed);
    struct slot *s = &q.ring[pos & q.mask];
    if (take_slot(s, pos))
        fill(s, pos, ev, blk);
    /* The next position's slot, fetched for writing while the program works
     * between two frees: untouched for a lap of the ring, it is out of the
     * caches, and the next free would wait for it. */
    const struct slot *next = &q.ring[(pos + 1) & q.mask];
    gl_prefetch_write(next);
    gl_prefetch_write((const char *)next + 64);
}

#ifdef GL_ASSERTIONS
void (*gl_quarantine_test_scan_hook)(uint64_t pos);

uint64_t gl_quarantine_test_take(void) { return atomic_fetch_add(&q.puts, 1); }

bool gl_quarantine_test_begin(uint64_t pos) { return take_slot(&q.ring[pos & q.mask], pos); }

uint64_t gl_quarantine_test_indexed(void) { return q.indexed_upto; }

void gl_quarantine_test_end(uint64_t pos, const struct gl_event *ev,
                            const struct gl_block_info *blk)
{
    fill(&q.ring[pos & q.mask], pos, ev, blk);
}
#endif

static bool wanted(void) { return q.cap > 0; }

static const struct gl_consumer consumer = {.on = {[GL_EV_FREE] = on_free}, .wanted = wanted};

const struct gl_component gl_quarantine_component = {
    .name = "quarantine",
    .reset = clear,
    .after_fork = after_fork,
    .consumer = &consumer,
};
