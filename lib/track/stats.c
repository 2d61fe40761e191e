/* SPDX-License-Identifier: MIT */
#include "track/stats.h"

#include <stdatomic.h>
#include <string.h>

#include "base/warm.h"
#include "base/atomic.h"
#include "common/util.h"
#include "stack/stack_depot.h"
#include "base/thread.h"

/* A thread's pending share of a group is flushed to the shared counters after
 * this many of its events, or when its live bytes moved by FLUSH_BYTES: peaks
 * checked against shared + own pending are exact for one thread, and low by
 * less than that per other thread. */
#define FLUSH_EVENTS 64
#define FLUSH_BYTES (256 * 1024)

/* Per split: what a flush moves, on one cache line. */
struct split_ctr {
    _Atomic int64_t cur_blocks, cur_bytes, alloc_blocks, alloc_bytes;
};

struct group {
    struct split_ctr s[2]; /* small, large: 64 bytes */
    /* Peaks: written only when exceeded, on a line of their own. */
    _Atomic uint64_t peak_blocks[GL_NSPLITS] __attribute__((aligned(64)));
    _Atomic uint64_t peak_bytes[GL_NSPLITS];
    _Atomic uint64_t failed, failed_bytes;
};

struct device {
    _Atomic int64_t cur_bytes; /* flushed */
    _Atomic uint64_t peak_bytes;
    _Atomic uint64_t peak_seq;
    _Atomic uint32_t peak_stack;
    _Atomic bool used;
} __attribute__((aligned(64)));

static struct group groups[GL_STATS_SLOTS][GL_MEM_NKINDS] __attribute__((aligned(64)));
static struct device devices[GL_STATS_SLOTS];
/* The process: live bytes flushed, and the peak of all devices and kinds together. */
static struct device total;
static GL_READ_MOSTLY _Atomic bool sites_on;
/* Flushes so far, by every thread: a thread's views (base/thread.h) are
 * taken again when it moved, one line read where the figures are four. */
static _Atomic uint64_t flushes __attribute__((aligned(64)));

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static void retire_thread(struct gl_thread *t);

void gl_stats_configure(bool sites)
{
    atomic_store(&sites_on, sites);
    gl_thread_add_retire(retire_thread);
}

bool gl_stats_sites_on(void) { return LOAD(sites_on); }

/* ---- a thread's cells ---- */

static inline unsigned key_slot(uint32_t key) { return key >> 8 & 0xff; }
static inline unsigned key_kind(uint32_t key) { return key & 0xff; }

static inline uint64_t pos(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

/* A group's live counts per split, as one thread sees them (shared + its own). */
struct seen {
    int64_t blocks[2], bytes[2];
};

static inline struct seen cell_live(const struct gl_stat_cell *c)
{
    struct seen v;
    for (int sp = 0; sp < 2; sp++) {
        v.blocks[sp] = c->seen_blocks[sp] + LOAD(c->cur_blocks[sp]);
        v.bytes[sp] = c->seen_bytes[sp] + LOAD(c->cur_bytes[sp]);
    }
    return v;
}

/* How far a figure may grow before it passes its peak: below 0 when it has
 * (an allocation counted before a flush took the room again from figures
 * that hold it). */
static inline int64_t below(uint64_t peak, int64_t live)
{
    return (int64_t)peak - (int64_t)pos(live);
}

/* The cell's room (base/thread.h) from its view: per split of an
 * allocation, the least distance to the two peaks it may pass, its split's
 * and the group's whole.  An allocation takes its size and one block off
 * both splits' rooms (the whole grows for either), a free gives them back
 * to its own split's only (the other's distance to its own peak did not
 * move): each stays a lower bound, so an allocation that leaves its room
 * at 0 or above passes no group peak, and one below checks them all (as
 * does one after another thread's flush: the view is taken again).  With
 * FLUSH_BYTES below GL_STATS_SMALL_LIMIT a large block flushes its cell,
 * which takes both rooms again; the rule holds whatever the thresholds. */
static void set_room(struct gl_stat_cell *c)
{
    struct seen v = cell_live(c);
    int64_t all_bytes = below(c->peak_bytes[GL_SPLIT_ALL], v.bytes[0] + v.bytes[1]);
    int64_t all_blocks = below(c->peak_blocks[GL_SPLIT_ALL], v.blocks[0] + v.blocks[1]);
    for (int sp = 0; sp < 2; sp++) {
        int64_t b = below(c->peak_bytes[sp], v.bytes[sp]),
                n = below(c->peak_blocks[sp], v.blocks[sp]);
        c->room_bytes[sp] = b < all_bytes ? b : all_bytes;
        n = n < all_blocks ? n : all_blocks;
        c->room_blocks[sp] = n > INT32_MAX       ? INT32_MAX
                             : n < INT32_MIN / 2 ? INT32_MIN / 2
                                                 : (int32_t)n;
    }
}

/* The owner's views (base/thread.h) taken again from the shared figures: at
 * each flush, so that they are exact while the thread alone moves them and
 * behind by what other threads flushed since otherwise.  A peak check then
 * reads the thread's own lines; the shared ones are read once a flush, and a
 * peak written only when one is exceeded. */
static void refresh_cell(struct gl_stat_cell *c, struct group *g)
{
    c->epoch = atomic_load_explicit(&flushes, memory_order_acquire);
    for (int sp = 0; sp < 2; sp++) {
        c->seen_blocks[sp] = LOAD(g->s[sp].cur_blocks);
        c->seen_bytes[sp] = LOAD(g->s[sp].cur_bytes);
    }
    for (int sp = 0; sp < GL_NSPLITS; sp++) {
        c->peak_blocks[sp] = LOAD(g->peak_blocks[sp]);
        c->peak_bytes[sp] = LOAD(g->peak_bytes[sp]);
    }
    set_room(c);
}

static void refresh_view(struct gl_stat_view *v, struct device *d)
{
    v->epoch = atomic_load_explicit(&flushes, memory_order_acquire);
    v->seen = LOAD(d->cur_bytes);
    v->peak = LOAD(d->peak_bytes);
}

/* Raise a shared peak to v if the view's copy says it may be exceeded; the
 * copy then holds the peak as it is.  True if this call raised it. */
static inline bool raise_seen(_Atomic uint64_t *peak, uint64_t *copy, uint64_t v)
{
    if (__builtin_expect(v <= *copy, 1))
        return false;
    bool raised = gl_atomic_raise(peak, v);
    *copy = raised ? v : LOAD(*peak);
    return raised;
}

/* Move the cell's counts to the shared ones; new_key (0: none) is the group
 * the cell holds from now on, set while readers retry (an odd count), so
 * that none adds this cell's next counts to the group it held. */
static void flush_cell(struct gl_thread *t, struct gl_stat_cell *c, uint32_t new_key)
{
    c->events = 0;
    /* Readers retry while the count is odd or moved (raw_begin). */
    unsigned s = LOAD(t->stat_seq);
    atomic_store_explicit(&t->stat_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    unsigned slot = key_slot(c->key);
    struct group *g = &groups[slot][key_kind(c->key)];
    for (int sp = 0; sp < 2; sp++) {
        int64_t ab = LOAD(c->alloc_blocks[sp]), aB = LOAD(c->alloc_bytes[sp]);
        int64_t cb = LOAD(c->cur_blocks[sp]), cB = LOAD(c->cur_bytes[sp]);
        if (!ab && !cb && !cB)
            continue;
        ADD(g->s[sp].alloc_blocks, ab);
        ADD(g->s[sp].alloc_bytes, aB);
        ADD(g->s[sp].cur_blocks, cb);
        ADD(g->s[sp].cur_bytes, cB);
        ADD(devices[slot].cur_bytes, cB);
        ADD(total.cur_bytes, cB);
        t->stat_slot[slot].pending -= cB;
        t->stat_all.pending -= cB;
        atomic_store_explicit(&c->alloc_blocks[sp], 0, memory_order_relaxed);
        atomic_store_explicit(&c->alloc_bytes[sp], 0, memory_order_relaxed);
        atomic_store_explicit(&c->cur_blocks[sp], 0, memory_order_relaxed);
        atomic_store_explicit(&c->cur_bytes[sp], 0, memory_order_relaxed);
    }
    if (new_key)
        c->key = new_key;
    atomic_store_explicit(&t->stat_seq, s + 2, memory_order_release);
    atomic_fetch_add_explicit(&flushes, 1, memory_order_release);
    refresh_cell(c, g);
    if (t->stat_slot[slot].taken)
        refresh_view(&t->stat_slot[slot], &devices[slot]);
    if (t->stat_all.taken)
        refresh_view(&t->stat_all, &total);
}

static void retire_thread(struct gl_thread *t)
{
    for (int i = 0; i < GL_STAT_CELLS; i++)
        if (t->stat_cells[i].key)
            flush_cell(t, &t->stat_cells[i], 0);
}

/* The thread's cell for a group: the last one used, found, taken empty, or
 * taken from the least busy one (flushed first).  Threads touch few groups:
 * one device, a kind or two. */
static inline struct gl_stat_cell *cell_for(struct gl_thread *t, uint32_t key)
{
    struct gl_stat_cell *c = &t->stat_cells[t->stat_last];
    if (__builtin_expect(c->key == key, 1))
        return c;
    struct gl_stat_cell *victim = NULL;
    for (unsigned i = 0; i < GL_STAT_CELLS; i++) {
        c = &t->stat_cells[i];
        if (c->key == key) {
            t->stat_last = i;
            return c;
        }
        if (!victim || (victim->key && (!c->key || c->events < victim->events)))
            victim = c;
    }
    if (victim->key)
        flush_cell(t, victim, key);
    else
        victim->key = key; /* empty: no count of another group to misplace */
    refresh_cell(victim, &groups[key_slot(key)][key_kind(key)]);
    t->stat_last = (unsigned)(victim - t->stat_cells);
    return victim;
}

static inline unsigned split_of(uint64_t size)
{
    return size < GL_STATS_SMALL_LIMIT ? GL_SPLIT_SMALL : GL_SPLIT_LARGE;
}

/* Move a group's counters by one block (an allocation: blocks 1) through the
 * thread's cell, its room with them; returns the cell. */
static inline __attribute__((always_inline)) struct gl_stat_cell *
move(struct gl_thread *t, unsigned slot, unsigned kind, unsigned sp, int64_t blocks, int64_t bytes)
{
    struct gl_stat_cell *c = cell_for(t, GL_STAT_KEY(slot, kind));
    if (blocks > 0) {
        gl_thread_add(&c->alloc_blocks[sp], 1);
        gl_thread_add(&c->alloc_bytes[sp], bytes);
        c->room_bytes[0] -= bytes;
        c->room_bytes[1] -= bytes;
        c->room_blocks[0]--;
        c->room_blocks[1]--;
    } else {
        int64_t room = c->room_blocks[sp] + 1;
        c->room_bytes[sp] -= bytes;
        c->room_blocks[sp] = room < INT32_MAX ? (int32_t)room : INT32_MAX;
    }
    gl_thread_add(&c->cur_blocks[sp], blocks);
    gl_thread_add(&c->cur_bytes[sp], bytes);
    t->stat_slot[slot].pending += bytes;
    t->stat_all.pending += bytes;
    int64_t pending = LOAD(c->cur_bytes[sp]);
    if (__builtin_expect(
            ++c->events >= FLUSH_EVENTS || pending >= FLUSH_BYTES || pending <= -FLUSH_BYTES, 0))
        flush_cell(t, c, 0); /* the room again, from the shared figures */
    return c;
}

/* The same for a thread without state: straight to the shared counters. */
static void move_shared(unsigned slot, unsigned kind, unsigned sp, int64_t blocks, int64_t bytes)
{
    struct group *g = &groups[slot][kind];
    if (blocks > 0) {
        ADD(g->s[sp].alloc_blocks, 1);
        ADD(g->s[sp].alloc_bytes, bytes);
    }
    ADD(g->s[sp].cur_blocks, blocks);
    ADD(g->s[sp].cur_bytes, bytes);
    ADD(devices[slot].cur_bytes, bytes);
    ADD(total.cur_bytes, bytes);
}

/* An allocation that took its split's room below 0, or came after another
 * thread flushed: the group's peaks checked against the thread's view, and
 * the room measured again.  Out of line: most allocations pass no peak. */
static void check_group_peaks(struct gl_stat_cell *c, struct group *g, unsigned sp, uint64_t epoch)
{
    if (c->epoch != epoch)
        refresh_cell(c, g); /* another thread flushed since: the group's figures again */
    struct seen v = cell_live(c);
    raise_seen(&g->peak_blocks[sp], &c->peak_blocks[sp], pos(v.blocks[sp]));
    raise_seen(&g->peak_bytes[sp], &c->peak_bytes[sp], pos(v.bytes[sp]));
    raise_seen(&g->peak_blocks[GL_SPLIT_ALL], &c->peak_blocks[GL_SPLIT_ALL],
               pos(v.blocks[0] + v.blocks[1]));
    raise_seen(&g->peak_bytes[GL_SPLIT_ALL], &c->peak_bytes[GL_SPLIT_ALL],
               pos(v.bytes[0] + v.bytes[1]));
    set_room(c);
}

/* The thread's view of a device slot or of the process, taken from the
 * shared figures the first time (and the device marked used). */
static inline struct gl_stat_view *view_of(struct gl_stat_view *v, struct device *d, uint64_t epoch)
{
    if (__builtin_expect(!v->taken, 0)) {
        v->taken = true;
        refresh_view(v, d);
        if (!LOAD(d->used))
            atomic_store_explicit(&d->used, true, memory_order_relaxed);
    } else if (__builtin_expect(v->epoch != epoch, 0)) {
        refresh_view(v, d);
    }
    return v;
}

static inline __attribute__((always_inline)) void
stats_alloc(int device, unsigned kind, uint64_t size, uint32_t stack, uint64_t seq)
{
    if (kind >= GL_MEM_NKINDS)
        return;
    struct gl_thread *t = gl_thread_self();
    unsigned slot = gl_stats_slot(device), sp = split_of(size);
    struct group *g = &groups[slot][kind];
    struct device *d = &devices[slot];
    if (__builtin_expect(!t, 0)) {
        move_shared(slot, kind, sp, 1, (int64_t)size);
        struct seen v;
        for (int i = 0; i < 2; i++) {
            v.blocks[i] = LOAD(g->s[i].cur_blocks);
            v.bytes[i] = LOAD(g->s[i].cur_bytes);
        }
        gl_atomic_raise(&g->peak_blocks[sp], pos(v.blocks[sp]));
        gl_atomic_raise(&g->peak_bytes[sp], pos(v.bytes[sp]));
        gl_atomic_raise(&g->peak_blocks[GL_SPLIT_ALL], pos(v.blocks[0] + v.blocks[1]));
        gl_atomic_raise(&g->peak_bytes[GL_SPLIT_ALL], pos(v.bytes[0] + v.bytes[1]));
        if (gl_atomic_raise(&d->peak_bytes, pos(LOAD(d->cur_bytes)))) {
            atomic_store_explicit(&d->peak_stack, stack, memory_order_relaxed);
            atomic_store_explicit(&d->peak_seq, seq, memory_order_relaxed);
        }
        if (!LOAD(d->used))
            atomic_store_explicit(&d->used, true, memory_order_relaxed);
        gl_atomic_raise(&total.peak_bytes, pos(LOAD(total.cur_bytes)));
    } else {
        /* Against the thread's own views: no shared line read unless a peak
         * may be exceeded, and the group's four not even compared while its
         * room lasts. */
        struct gl_stat_cell *c = move(t, slot, kind, sp, 1, (int64_t)size);
        uint64_t epoch = atomic_load_explicit(&flushes, memory_order_acquire);
        if (__builtin_expect(c->epoch != epoch || (c->room_bytes[sp] | c->room_blocks[sp]) < 0, 0))
            check_group_peaks(c, g, sp, epoch);
        struct gl_stat_view *dv = view_of(&t->stat_slot[slot], d, epoch);
        if (raise_seen(&d->peak_bytes, &dv->peak, pos(dv->seen + dv->pending))) {
            /* The stack and number may pair with a racing peak's: close enough. */
            atomic_store_explicit(&d->peak_stack, stack, memory_order_relaxed);
            atomic_store_explicit(&d->peak_seq, seq, memory_order_relaxed);
        }
        struct gl_stat_view *all = view_of(&t->stat_all, &total, epoch);
        raise_seen(&total.peak_bytes, &all->peak, pos(all->seen + all->pending));
    }
    if (LOAD(sites_on))
        gl_stack_depot_site_move(stack, (int64_t)size, 1);
}

static inline __attribute__((always_inline)) void stats_free(int device, unsigned kind,
                                                             uint64_t size, uint32_t stack)
{
    if (kind >= GL_MEM_NKINDS)
        return;
    struct gl_thread *t = gl_thread_self();
    if (__builtin_expect(!t, 0))
        move_shared(gl_stats_slot(device), kind, split_of(size), -1, -(int64_t)size);
    else
        move(t, gl_stats_slot(device), kind, split_of(size), -1, -(int64_t)size);
    if (LOAD(sites_on))
        gl_stack_depot_site_move(stack, -(int64_t)size, -1);
}

static void stats_failed(int device, unsigned kind, uint64_t size)
{
    if (kind >= GL_MEM_NKINDS)
        return;
    unsigned slot = gl_stats_slot(device);
    ADD(groups[slot][kind].failed, 1);
    ADD(groups[slot][kind].failed_bytes, size);
    atomic_store_explicit(&devices[slot].used, true, memory_order_relaxed);
}

/* ---- the consumer ---- */

/* An allocation counts once the block table has it (blk). */
GL_HOT static void on_alloc(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)ev;
    if (__builtin_expect(blk && gl_mem_kind_counted(blk->kind), 1))
        stats_alloc(blk->device, blk->kind, blk->size, blk->stack, blk->seq);
}

/* A request refused for lack of memory, as asked. */
static void on_alloc_failed(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    stats_failed(gl_dispatch_device_of(ev), ev->kind, ev->size);
}

/* Every block gone, however (its free, its context, its last unmap): the
 * block's own figures, not the call's. */
GL_HOT static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (blk && !(ev->flags & GL_EVF_FAILED) && gl_mem_kind_counted(blk->kind))
        stats_free(blk->device, blk->kind, blk->size, blk->stack);
}

/* ---- readers ---- */

/* Everything, raw: shared plus pending, per (slot, kind, split): cur_blocks,
 * cur_bytes, alloc_blocks, alloc_bytes. */
struct raw {
    int64_t v[GL_STATS_SLOTS][GL_MEM_NKINDS][2][4];
};

/* The sum of the threads' flush counts; 1 (odd) while one is flushing. */
static unsigned seq_sum(void)
{
    unsigned sum = 0;
    for (struct gl_thread *t = gl_thread_registry(); t; t = t->next) {
        unsigned s = atomic_load_explicit(&t->stat_seq, memory_order_acquire);
        if (s & 1)
            return 1;
        sum += s;
    }
    return sum;
}

static void add_shared(struct raw *r)
{
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++)
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
            for (int sp = 0; sp < 2; sp++) {
                const struct split_ctr *c = &groups[sl][k].s[sp];
                int64_t *v = r->v[sl][k][sp];
                v[0] += LOAD(c->cur_blocks);
                v[1] += LOAD(c->cur_bytes);
                v[2] += LOAD(c->alloc_blocks);
                v[3] += LOAD(c->alloc_bytes);
            }
}

static void add_cell(struct raw *r, const struct gl_stat_cell *c)
{
    for (int sp = 0; sp < 2; sp++) {
        int64_t *v = r->v[key_slot(c->key)][key_kind(c->key)][sp];
        v[0] += LOAD(c->cur_blocks[sp]);
        v[1] += LOAD(c->cur_bytes[sp]);
        v[2] += LOAD(c->alloc_blocks[sp]);
        v[3] += LOAD(c->alloc_bytes[sp]);
    }
}

/* The raw counts are large (34 x 16 x 2 x 4 words): on a reader's stack they
 * would take 35 KiB inside a CUDA callback, so one static copy, under the
 * thread registry's lock (which a fork child re-initializes).
 *
 * A flush moves a cell's counts into the shared ones, so a read that straddles
 * one would count them twice or not at all: it is retried (a few times only:
 * an owner may be flushing continually, and a read a flush off is still close). */
static struct raw raw_buf;

static const struct raw *raw_begin(void)
{
    gl_thread_registry_lock();
    for (int tries = 0;; tries++) {
        memset(&raw_buf, 0, sizeof raw_buf);
        unsigned before = seq_sum();
        atomic_thread_fence(memory_order_acquire);
        add_shared(&raw_buf);
        for (struct gl_thread *t = gl_thread_registry(); t; t = t->next)
            for (int i = 0; i < GL_STAT_CELLS; i++)
                if (t->stat_cells[i].key)
                    add_cell(&raw_buf, &t->stat_cells[i]);
        atomic_thread_fence(memory_order_acquire);
        if ((!(before & 1) && before == seq_sum()) || tries == 8)
            break;
    }
    return &raw_buf;
}

static void raw_end(void) { gl_thread_registry_unlock(); }

/* Live bytes of a (slot, kind): both splits. */
static int64_t raw_live(const struct raw *r, unsigned slot, unsigned kind)
{
    return r->v[slot][kind][0][1] + r->v[slot][kind][1][1];
}

static int64_t raw_slot_live(const struct raw *r, unsigned slot)
{
    int64_t sum = 0;
    for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
        sum += raw_live(r, slot, k);
    return sum;
}

static void fill_group(const struct raw *r, unsigned slot, unsigned kind, struct gl_stat_group *out)
{
    memset(out, 0, sizeof *out);
    struct group *g = &groups[slot][kind];
    struct gl_stat_counts *all = &out->split[GL_SPLIT_ALL];
    for (int sp = 0; sp < 2; sp++) {
        const int64_t *v = r->v[slot][kind][sp];
        struct gl_stat_counts *s = &out->split[sp];
        s->cur_blocks = pos(v[0]);
        s->cur_bytes = pos(v[1]);
        s->alloc_blocks = pos(v[2]);
        s->alloc_bytes = pos(v[3]);
        s->freed_blocks = s->alloc_blocks > s->cur_blocks ? s->alloc_blocks - s->cur_blocks : 0;
        s->freed_bytes = s->alloc_bytes > s->cur_bytes ? s->alloc_bytes - s->cur_bytes : 0;
        all->cur_blocks += s->cur_blocks;
        all->cur_bytes += s->cur_bytes;
        all->alloc_blocks += s->alloc_blocks;
        all->alloc_bytes += s->alloc_bytes;
        all->freed_blocks += s->freed_blocks;
        all->freed_bytes += s->freed_bytes;
    }
    for (int sp = 0; sp < GL_NSPLITS; sp++) {
        struct gl_stat_counts *s = &out->split[sp];
        s->peak_blocks = LOAD(g->peak_blocks[sp]);
        s->peak_bytes = LOAD(g->peak_bytes[sp]);
        /* Other threads' pending shares are not seen by a peak check: the
         * peak is at least what is live now. */
        if (s->peak_blocks < s->cur_blocks)
            s->peak_blocks = s->cur_blocks;
        if (s->peak_bytes < s->cur_bytes)
            s->peak_bytes = s->cur_bytes;
    }
    out->failed = LOAD(g->failed);
    out->failed_bytes = LOAD(g->failed_bytes);
}

static void fill_device(const struct raw *r, unsigned slot, struct gl_stat_device *out)
{
    struct device *d = &devices[slot];
    out->cur_bytes = pos(raw_slot_live(r, slot));
    out->peak_bytes = LOAD(d->peak_bytes);
    if (out->peak_bytes < out->cur_bytes)
        out->peak_bytes = out->cur_bytes;
    out->peak_stack = LOAD(d->peak_stack);
    out->peak_seq = LOAD(d->peak_seq);
}

void gl_stats_group(unsigned slot, unsigned kind, struct gl_stat_group *out)
{
    memset(out, 0, sizeof *out);
    if (slot >= GL_STATS_SLOTS || kind >= GL_MEM_NKINDS)
        return;
    const struct raw *r = raw_begin();
    fill_group(r, slot, kind, out);
    raw_end();
}

void gl_stats_device(unsigned slot, struct gl_stat_device *out)
{
    memset(out, 0, sizeof *out);
    if (slot >= GL_STATS_SLOTS)
        return;
    const struct raw *r = raw_begin();
    fill_device(r, slot, out);
    raw_end();
}

bool gl_stats_slot_used(unsigned slot) { return slot < GL_STATS_SLOTS && LOAD(devices[slot].used); }

void gl_stats_live_bytes_all(uint64_t out[GL_STATS_SLOTS][GL_MEM_NKINDS])
{
    const struct raw *r = raw_begin();
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++)
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
            out[sl][k] = pos(raw_live(r, sl, k));
    raw_end();
}

uint64_t gl_stats_live_bytes(unsigned slot, unsigned kind)
{
    if (slot >= GL_STATS_SLOTS || kind >= GL_MEM_NKINDS)
        return 0;
    const struct raw *r = raw_begin();
    uint64_t v = pos(raw_live(r, slot, kind));
    raw_end();
    return v;
}

void gl_stats_snapshot(struct gl_usage *u)
{
    const struct raw *r = raw_begin();
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        u->used[sl] = gl_stats_slot_used(sl);
        fill_device(r, sl, &u->dev[sl]);
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
            fill_group(r, sl, k, &u->grp[sl][k]);
    }
    raw_end();
}

void gl_stats_totals(struct gl_stat_totals *out)
{
    memset(out, 0, sizeof *out);
    const struct raw *r = raw_begin();
    int64_t live = 0;
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++)
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
            for (int sp = 0; sp < 2; sp++) {
                const int64_t *v = r->v[sl][k][sp];
                out->allocs += pos(v[2]);
                out->bytes_allocated += pos(v[3]);
                out->frees += v[2] > v[0] ? (uint64_t)(v[2] - v[0]) : 0;
                live += v[1];
            }
    out->live_bytes = pos(live);
    out->peak_bytes = LOAD(total.peak_bytes);
    if (out->peak_bytes < out->live_bytes)
        out->peak_bytes = out->live_bytes;
    raw_end();
}

static void reset(void)
{
    gl_thread_registry_lock();
    for (struct gl_thread *t = gl_thread_registry(); t; t = t->next) {
        memset(t->stat_cells, 0, sizeof t->stat_cells);
        memset(t->stat_slot, 0, sizeof t->stat_slot);
        memset(&t->stat_all, 0, sizeof t->stat_all);
    }
    gl_thread_registry_unlock();
    memset(groups, 0, sizeof groups);
    memset(devices, 0, sizeof devices);
    memset(&total, 0, sizeof total);
    /* The sites' figures are this module's too: each log of a --read counts
     * its own (the stacks stay in the depot). */
    gl_stack_depot_sites_reset();
}

/* A call's entry (event/dispatch.h): the thread's cell used last (likely the
 * call's group: threads touch few), its device's view and the flush count an
 * allocation reads; a free touches the cell's first line alone. */
GL_HOT static void warm(const struct gl_event *ev)
{
    struct gl_thread *t = gl_thread_cur;
    if (!t)
        return;
    const struct gl_stat_cell *c = &t->stat_cells[t->stat_last % GL_STAT_CELLS];
    (void)ev; /* an allocation's */
    /* The whole cell: its view and peaks too, which an allocation reads
     * when it may pass a peak, and after another thread's flush (often,
     * with many threads). */
    gl_warm_range(c, sizeof *c);
    gl_warm(&t->stat_slot[key_slot(c->key) % GL_STAT_SLOTS_MAX]);
    gl_warm(&flushes);
}

static const struct gl_consumer consumer = {.on =
                                                {
                                                    [GL_EV_ALLOC] = on_alloc,
                                                    [GL_EV_FREE] = on_free,
                                                    [GL_EV_ALLOC_FAILED] = on_alloc_failed,
                                                },
                                            .warm = warm};

const struct gl_component gl_stats_component = {
    .name = "stats",
    .reset = reset,
    .consumer = &consumer,
};
