/* SPDX-License-Identifier: MIT */
#include "stack/stack_depot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "base/atomic.h"
#include "base/id_pages.h"
#include "base/gl_uthash.h"
#include "base/thread.h"

/* An allocation site's usage: moved by track/stats.c on counted allocations
 * and frees. */
struct site {
    _Atomic int64_t live_bytes, live_blocks;
    _Atomic uint64_t peak_bytes;
    _Atomic uint64_t alloc_bytes; /* every byte allocated there */
};

struct depot_entry {
    UT_hash_handle hh;
    uint64_t hash;
    uint32_t id;
    uint32_t n;
    struct site site;
    uintptr_t frames[];
};

/* The blocks allocated with no stack (no libunwind, the depot full): a site
 * of their own, so that the sites add up to the statistics' totals. */
static struct site stackless;

static _Atomic uint32_t next_id = 1;
static _Atomic size_t depot_bytes;
/* Entries by id, up to 2^28 distinct stacks. */
GL_ID_PAGES(by_id, 14, 1u << 14, &depot_bytes);

#define NSHARDS 16
static struct {
    pthread_mutex_t lock;
    struct depot_entry *head;
} __attribute__((aligned(64))) shards[NSHARDS] = {
    [0 ... NSHARDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

/* Each thread caches recent stacks (thread_state.h): most allocations come from a
 * few hot call sites, and a hit costs one hash and one compare, no lock. */

uint64_t gl_stack_depot_hash(const uintptr_t *frames, unsigned n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (unsigned i = 0; i < n; i++) {
        h ^= frames[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    h ^= h >> 29;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 32);
}

static bool same(const struct depot_entry *e, uint64_t hash, const uintptr_t *frames, unsigned n)
{
    return e->hash == hash && e->n == n && memcmp(e->frames, frames, n * sizeof *frames) == 0;
}

uint32_t gl_stack_depot_intern(const uintptr_t *frames, unsigned n)
{
    if (n == 0)
        return 0;
    if (n > GL_STACK_MAX_FRAMES)
        n = GL_STACK_MAX_FRAMES;
    uint64_t hash = gl_stack_depot_hash(frames, n);
    struct gl_thread *self = gl_thread_self();
    unsigned slot = (unsigned)(hash & (GL_TCACHE_SIZE - 1));
    if (self && self->tcache[slot].hash == hash && self->tcache[slot].e &&
        same(self->tcache[slot].e, hash, frames, n))
        return self->tcache[slot].e->id;

    unsigned si = (unsigned)(hash >> 60) & (NSHARDS - 1);
    struct depot_entry *e = NULL;
    pthread_mutex_lock(&shards[si].lock);
    HASH_FIND_BYHASHVALUE(hh, shards[si].head, frames, n * sizeof *frames, (unsigned)hash, e);
    if (!e) {
        size_t size = sizeof *e + n * sizeof *frames;
        e = gl_tool_alloc(size);
        if (e) {
            e->hash = hash;
            e->n = n;
            memset(&e->site, 0, sizeof e->site);
            memcpy(e->frames, frames, n * sizeof *frames);
            e->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
            if (!gl_id_pages_put(&by_id, e->id, e)) {
                gl_tool_free(e, size);
                e = NULL;
            } else {
                HASH_ADD_KEYPTR_BYHASHVALUE(hh, shards[si].head, e->frames, n * sizeof *frames,
                                            (unsigned)hash, e);
                atomic_fetch_add_explicit(&depot_bytes, size, memory_order_relaxed);
                /* If uthash could not grow, the entry still has its id and stays
                 * reachable by its id; it is only not found for reuse. */
            }
        }
    }
    pthread_mutex_unlock(&shards[si].lock);
    if (!e)
        return 0;
    if (self) {
        self->tcache[slot].hash = hash;
        self->tcache[slot].e = e;
    }
    return e->id;
}

static struct depot_entry *entry(uint32_t id)
{
    if (id == 0 || id >= atomic_load_explicit(&next_id, memory_order_acquire))
        return NULL;
    return gl_id_pages_get(&by_id, id);
}

const uintptr_t *gl_stack_depot_frames(uint32_t id, unsigned *n)
{
    struct depot_entry *e = entry(id);
    *n = e ? e->n : 0;
    return e ? e->frames : NULL;
}

unsigned gl_stack_depot_count(void) { return atomic_load(&next_id) - 1; }

size_t gl_stack_depot_memory_bytes(void) { return atomic_load(&depot_bytes); }

void gl_stack_depot_site_move(uint32_t id, int64_t bytes, int64_t blocks)
{
    struct depot_entry *e = id ? entry(id) : NULL;
    struct site *x = e ? &e->site : id ? NULL : &stackless;
    if (!x)
        return;
    int64_t now = atomic_fetch_add_explicit(&x->live_bytes, bytes, memory_order_relaxed) + bytes;
    atomic_fetch_add_explicit(&x->live_blocks, blocks, memory_order_relaxed);
    if (now > 0)
        gl_atomic_raise(&x->peak_bytes, (uint64_t)now);
    if (blocks > 0) /* an allocation: on the line the adds above brought in */
        atomic_fetch_add_explicit(&x->alloc_bytes, (uint64_t)bytes, memory_order_relaxed);
}

static void site_reset(struct site *x)
{
    atomic_store_explicit(&x->live_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&x->live_blocks, 0, memory_order_relaxed);
    atomic_store_explicit(&x->peak_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&x->alloc_bytes, 0, memory_order_relaxed);
}

void gl_stack_depot_sites_reset(void)
{
    uint32_t end = atomic_load_explicit(&next_id, memory_order_acquire);
    for (uint32_t id = 1; id < end; id++) {
        struct depot_entry *e = entry(id);
        if (e)
            site_reset(&e->site);
    }
    site_reset(&stackless);
}

/* A site's figures; false if it never held memory. */
static bool site_read(const struct site *x, uint32_t id, struct gl_site_stats *out)
{
    uint64_t peak = atomic_load_explicit(&x->peak_bytes, memory_order_relaxed);
    uint64_t allocated = atomic_load_explicit(&x->alloc_bytes, memory_order_relaxed);
    if (!peak && !allocated)
        return false;
    if (out) {
        int64_t live = atomic_load_explicit(&x->live_bytes, memory_order_relaxed);
        int64_t blocks = atomic_load_explicit(&x->live_blocks, memory_order_relaxed);
        *out = (struct gl_site_stats){
            .stack = id,
            .live_bytes = live > 0 ? (uint64_t)live : 0,
            .live_blocks = blocks > 0 ? (uint64_t)blocks : 0,
            .peak_bytes = peak,
            .alloc_bytes = allocated,
        };
    }
    return true;
}

size_t gl_stack_depot_sites(struct gl_site_stats *out, size_t max)
{
    size_t n = 0;
    uint32_t end = atomic_load_explicit(&next_id, memory_order_acquire);
    for (uint32_t id = 1; id < end; id++) {
        struct depot_entry *e = entry(id);
        if (e && site_read(&e->site, id, n < max ? &out[n] : NULL))
            n++;
    }
    return n;
}

bool gl_stack_depot_site_stackless(struct gl_site_stats *out)
{
    return site_read(&stackless, 0, out);
}
