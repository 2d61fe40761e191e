#include "mem_stats.h"

#include <stdatomic.h>
#include <string.h>

#include "atomic_max.h"
#include "stack_depot.h"

/* Per split: what an allocation moves, on one cache line. */
struct split_ctr {
    _Atomic uint64_t cur_blocks, cur_bytes, alloc_blocks, alloc_bytes;
};

struct group {
    struct split_ctr s[2]; /* small, large: 64 bytes */
    /* Peaks: written only when exceeded, on a line of their own. */
    _Atomic uint64_t peak_blocks[GL_NSPLITS] __attribute__((aligned(64)));
    _Atomic uint64_t peak_bytes[GL_NSPLITS];
    _Atomic uint64_t failed, failed_bytes;
};

struct device {
    _Atomic uint64_t cur_bytes;
    _Atomic uint64_t peak_bytes;
    _Atomic uint64_t peak_seq;
    _Atomic uint32_t peak_stack;
    _Atomic bool used;
} __attribute__((aligned(64)));

static struct group groups[GL_STATS_SLOTS][GL_MEM_NKINDS] __attribute__((aligned(64)));
static struct device devices[GL_STATS_SLOTS];

#define ADD(x, v) (atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed) + (v))
#define BUMP(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
#define SUB(x, v) atomic_fetch_sub_explicit(&(x), (v), memory_order_relaxed)
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

void gl_stats_alloc(int device, unsigned kind, uint64_t size, uint32_t stack, uint64_t seq)
{
    if (kind >= GL_MEM_NKINDS)
        return;
    unsigned slot = gl_stats_slot(device);
    struct group *g = &groups[slot][kind];
    unsigned sp = size < GL_STATS_SMALL_LIMIT ? GL_SPLIT_SMALL : GL_SPLIT_LARGE;
    struct split_ctr *c = &g->s[sp];
    uint64_t blocks = ADD(c->cur_blocks, 1), bytes = ADD(c->cur_bytes, size);
    BUMP(c->alloc_blocks, 1);
    BUMP(c->alloc_bytes, size);
    gl_atomic_raise(&g->peak_blocks[sp], blocks);
    gl_atomic_raise(&g->peak_bytes[sp], bytes);
    const struct split_ctr *o = &g->s[!sp];
    gl_atomic_raise(&g->peak_blocks[GL_SPLIT_ALL], blocks + LOAD(o->cur_blocks));
    gl_atomic_raise(&g->peak_bytes[GL_SPLIT_ALL], bytes + LOAD(o->cur_bytes));

    struct device *d = &devices[slot];
    uint64_t now = ADD(d->cur_bytes, size);
    if (gl_atomic_raise(&d->peak_bytes, now)) {
        /* The stack and number may pair with a racing peak's: close enough. */
        atomic_store_explicit(&d->peak_stack, stack, memory_order_relaxed);
        atomic_store_explicit(&d->peak_seq, seq, memory_order_relaxed);
    }
    if (!LOAD(d->used))
        atomic_store_explicit(&d->used, true, memory_order_relaxed);
    gl_depot_site_move(stack, (int64_t)size, 1);
}

void gl_stats_free(int device, unsigned kind, uint64_t size, uint32_t stack)
{
    if (kind >= GL_MEM_NKINDS)
        return;
    unsigned slot = gl_stats_slot(device);
    struct split_ctr *c = &groups[slot][kind].s[size < GL_STATS_SMALL_LIMIT ? 0 : 1];
    SUB(c->cur_blocks, 1);
    SUB(c->cur_bytes, size);
    SUB(devices[slot].cur_bytes, size);
    gl_depot_site_move(stack, -(int64_t)size, -1);
}

void gl_stats_failed(int device, unsigned kind, uint64_t size)
{
    if (kind >= GL_MEM_NKINDS)
        return;
    unsigned slot = gl_stats_slot(device);
    BUMP(groups[slot][kind].failed, 1);
    BUMP(groups[slot][kind].failed_bytes, size);
    atomic_store_explicit(&devices[slot].used, true, memory_order_relaxed);
}

void gl_stats_group(unsigned slot, unsigned kind, struct gl_stat_group *out)
{
    memset(out, 0, sizeof *out);
    if (slot >= GL_STATS_SLOTS || kind >= GL_MEM_NKINDS)
        return;
    struct group *g = &groups[slot][kind];
    struct gl_stat_counts *all = &out->split[GL_SPLIT_ALL];
    for (int sp = 0; sp < 2; sp++) {
        struct gl_stat_counts *s = &out->split[sp];
        s->cur_blocks = LOAD(g->s[sp].cur_blocks);
        s->cur_bytes = LOAD(g->s[sp].cur_bytes);
        s->alloc_blocks = LOAD(g->s[sp].alloc_blocks);
        s->alloc_bytes = LOAD(g->s[sp].alloc_bytes);
        s->freed_blocks = s->alloc_blocks - s->cur_blocks;
        s->freed_bytes = s->alloc_bytes - s->cur_bytes;
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
        /* Racing updates can leave a peak a little below what is current. */
        if (s->peak_blocks < s->cur_blocks)
            s->peak_blocks = s->cur_blocks;
        if (s->peak_bytes < s->cur_bytes)
            s->peak_bytes = s->cur_bytes;
    }
    out->failed = LOAD(g->failed);
    out->failed_bytes = LOAD(g->failed_bytes);
}

void gl_stats_device(unsigned slot, struct gl_stat_device *out)
{
    memset(out, 0, sizeof *out);
    if (slot >= GL_STATS_SLOTS)
        return;
    struct device *d = &devices[slot];
    out->cur_bytes = LOAD(d->cur_bytes);
    out->peak_bytes = LOAD(d->peak_bytes);
    out->peak_stack = LOAD(d->peak_stack);
    out->peak_seq = LOAD(d->peak_seq);
}

bool gl_stats_slot_used(unsigned slot) { return slot < GL_STATS_SLOTS && LOAD(devices[slot].used); }

uint64_t gl_stats_live_bytes(unsigned slot, unsigned kind)
{
    if (slot >= GL_STATS_SLOTS || kind >= GL_MEM_NKINDS)
        return 0;
    struct group *g = &groups[slot][kind];
    return LOAD(g->s[0].cur_bytes) + LOAD(g->s[1].cur_bytes);
}

void gl_stats_snapshot(struct gl_usage *u)
{
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        u->used[sl] = gl_stats_slot_used(sl);
        gl_stats_device(sl, &u->dev[sl]);
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
            gl_stats_group(sl, k, &u->grp[sl][k]);
    }
}

void gl_stats_reset(void)
{
    memset(groups, 0, sizeof groups);
    memset(devices, 0, sizeof devices);
}
