/* SPDX-License-Identifier: MIT */
#include "heap/chunk_table.h"

#include <stdatomic.h>
#include <string.h>

#include "base/spin.h"
#include "base/tool.h"
#include "common/util.h"

#define SHARD_BITS 8
#define NSHARDS (1u << SHARD_BITS)
#define MIN_CAP 256u /* entries: 4 KiB */

/* An entry: addr 0 is empty, 1 a tombstone (no chunk lives at 0 or 1). */
#define EMPTY 0ULL
#define TOMB 1ULL

struct entry {
    uint64_t addr;
    uint64_t meta; /* size (40 bits) << 24 | caller (24 bits) */
};

/* A shard's filter: a bit per eighth byte of the hash (bits 48 to 55), set
 * when a chunk of that bit is added, so that a free of an address the shard
 * never held (the driver's chunks, which the hooks leave out: heap_state.h)
 * is answered without the lock or the array.  Bits are only set between
 * rebuilds; a rebuild stores the bits of the chunks it keeps, word by word, so
 * that a chunk present throughout never reads as absent. */
#define FILTER_WORDS 4

struct shard {
    gl_spinlock lock;
    struct entry *_Atomic v; /* published after it is filled: readers with the world
                                stopped may read it without the lock */
    uint32_t cap;            /* power of two, 0 before the first insert */
    uint32_t count, tombs;
    _Atomic uint64_t filter[FILTER_WORDS]; /* written under the lock, read without it */
} __attribute__((aligned(64))); /* one per cache line: threads on other shards never meet */

_Static_assert(sizeof(struct shard) == 64, "one shard per cache line");
static struct shard shards[NSHARDS] __attribute__((aligned(64)));

static inline uint64_t mix(uint64_t addr) { return (addr >> 4) * 0x9e3779b97f4a7c15ULL; }
static inline struct shard *shard_of(uint64_t h) { return &shards[h >> (64 - SHARD_BITS)]; }

static inline unsigned filter_bit(uint64_t h) { return (unsigned)(h >> 48) & 0xff; }

/* Whether the shard may hold a chunk of hash h: false means it does not.  A
 * chunk's bit was stored before its malloc returned, so the thread freeing it
 * (handed the pointer through the program's own synchronization) sees it. */
static inline bool may_hold(const struct shard *s, uint64_t h)
{
    unsigned b = filter_bit(h);
    return atomic_load_explicit(&s->filter[b / 64], memory_order_relaxed) >> (b % 64) & 1;
}

/* Under the lock. */
static inline void filter_add(struct shard *s, uint64_t h)
{
    unsigned b = filter_bit(h);
    uint64_t w = atomic_load_explicit(&s->filter[b / 64], memory_order_relaxed);
    if (!(w >> (b % 64) & 1))
        atomic_store_explicit(&s->filter[b / 64], w | 1ULL << (b % 64), memory_order_relaxed);
}

static inline uint64_t pack(uint64_t size, uint32_t caller)
{
    if (size > GL_CHUNK_SIZE_MAX)
        size = GL_CHUNK_SIZE_MAX;
    return size << 24 | (caller & 0xffffffu);
}

/* Rebuild into a table of cap entries, dropping tombstones.  false if out of
 * memory (the shard keeps its old table). */
static bool rebuild(struct shard *s, uint32_t cap)
{
    struct entry *n = gl_tool_map((size_t)cap * sizeof *n);
    if (!n)
        return false;
    struct entry *old = atomic_load_explicit(&s->v, memory_order_relaxed);
    uint64_t filter[FILTER_WORDS] = {0};
    for (uint32_t i = 0; old && i < s->cap; i++) {
        if (old[i].addr <= TOMB)
            continue;
        uint64_t h = mix(old[i].addr);
        uint32_t j = (uint32_t)h & (cap - 1);
        while (n[j].addr != EMPTY)
            j = (j + 1) & (cap - 1);
        n[j] = old[i];
        filter[filter_bit(h) / 64] |= 1ULL << (filter_bit(h) % 64);
    }
    atomic_store_explicit(&s->v, n, memory_order_release);
    /* The removed chunks' bits go: a reader sees each word old or new, and a
     * kept chunk's bit is set in both. */
    for (unsigned w = 0; w < FILTER_WORDS; w++)
        atomic_store_explicit(&s->filter[w], filter[w], memory_order_relaxed);
    if (old)
        gl_tool_unmap(old, (size_t)s->cap * sizeof *old);
    s->cap = cap;
    s->tombs = 0;
    return true;
}

GL_HOT void gl_chunk_table_insert(uint64_t addr, uint64_t size, uint32_t caller)
{
    if (addr <= TOMB)
        return;
    uint64_t h = mix(addr);
    struct shard *s = shard_of(h);
    gl_spin_lock(&s->lock);
    /* At most half full, tombstones included. */
    if ((s->count + s->tombs + 1) * 2 > s->cap) {
        uint32_t cap = s->cap ? s->cap : MIN_CAP;
        while ((s->count + 1) * 4 > cap) /* after cleaning, at most a quarter full */
            cap *= 2;
        if (!rebuild(s, cap) && (s->count + s->tombs + 1) * 2 > s->cap) {
            gl_spin_unlock(&s->lock); /* no memory: this chunk goes unrecorded */
            return;
        }
    }
    struct entry *v = atomic_load_explicit(&s->v, memory_order_relaxed);
    uint32_t mask = s->cap - 1, i = (uint32_t)h & mask, tomb = UINT32_MAX;
    for (;; i = (i + 1) & mask) {
        if (v[i].addr == addr) { /* replaced: its free went unseen */
            v[i].meta = pack(size, caller);
            gl_spin_unlock(&s->lock);
            return;
        }
        if (v[i].addr == TOMB && tomb == UINT32_MAX)
            tomb = i;
        if (v[i].addr == EMPTY)
            break;
    }
    if (tomb != UINT32_MAX) {
        i = tomb;
        s->tombs--;
    }
    v[i].meta = pack(size, caller);
    filter_add(s, h);
    atomic_store_explicit((_Atomic uint64_t *)&v[i].addr, addr, memory_order_release);
    __atomic_store_n(&s->count, s->count + 1,
                     __ATOMIC_RELAXED); /* read unlocked by gl_chunk_table_count */
    gl_spin_unlock(&s->lock);
}

/* The slot of addr in a locked shard, or UINT32_MAX. */
static uint32_t find(struct shard *s, uint64_t addr, uint64_t h)
{
    struct entry *v = atomic_load_explicit(&s->v, memory_order_relaxed);
    if (!v)
        return UINT32_MAX;
    uint32_t mask = s->cap - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        if (v[i].addr == addr)
            return i;
        if (v[i].addr == EMPTY)
            return UINT32_MAX;
    }
}

GL_HOT bool gl_chunk_table_remove(uint64_t addr)
{
    if (addr <= TOMB)
        return false;
    uint64_t h = mix(addr);
    struct shard *s = shard_of(h);
    if (!may_hold(s, h))
        return false;
    gl_spin_lock(&s->lock);
    uint32_t i = find(s, addr, h);
    if (i != UINT32_MAX) {
        struct entry *v = atomic_load_explicit(&s->v, memory_order_relaxed);
        atomic_store_explicit((_Atomic uint64_t *)&v[i].addr, TOMB, memory_order_release);
        __atomic_store_n(&s->count, s->count - 1, __ATOMIC_RELAXED);
        s->tombs++;
    }
    gl_spin_unlock(&s->lock);
    return i != UINT32_MAX;
}

bool gl_chunk_table_lookup(uint64_t addr, uint64_t *size, uint32_t *caller)
{
    if (addr <= TOMB)
        return false;
    uint64_t h = mix(addr);
    struct shard *s = shard_of(h);
    if (!may_hold(s, h))
        return false;
    gl_spin_lock(&s->lock);
    uint32_t i = find(s, addr, h);
    if (i != UINT32_MAX) {
        uint64_t meta = atomic_load_explicit(&s->v, memory_order_relaxed)[i].meta;
        if (size)
            *size = meta >> 24;
        if (caller)
            *caller = (uint32_t)(meta & 0xffffff);
    }
    gl_spin_unlock(&s->lock);
    return i != UINT32_MAX;
}

/* The shards' counts, read without their locks: exact when no thread
 * allocates meanwhile, else a moment's figure (the scan sizes with room).  No
 * process-wide counter: every malloc would write the same cache line. */
size_t gl_chunk_table_count(void)
{
    size_t n = 0;
    for (unsigned k = 0; k < NSHARDS; k++)
        n += __atomic_load_n(&shards[k].count, __ATOMIC_RELAXED);
    return n;
}

size_t gl_chunk_table_memory_bytes(void)
{
    size_t bytes = sizeof shards;
    for (unsigned i = 0; i < NSHARDS; i++)
        bytes += (size_t)shards[i].cap * sizeof(struct entry);
    return bytes;
}

void gl_chunk_table_foreach(gl_chunk_visit_fn fn, void *arg, bool trylock_only)
{
    for (unsigned k = 0; k < NSHARDS; k++) {
        struct shard *s = &shards[k];
        bool locked;
        if (trylock_only)
            locked = gl_spin_trylock(&s->lock, 4096);
        else {
            gl_spin_lock(&s->lock);
            locked = true;
        }
        struct entry *v = atomic_load_explicit(&s->v, memory_order_acquire);
        uint32_t cap = v ? s->cap : 0;
        for (uint32_t i = 0; i < cap; i++) {
            uint64_t a = atomic_load_explicit((_Atomic uint64_t *)&v[i].addr, memory_order_acquire);
            if (a > TOMB)
                fn(a, v[i].meta >> 24, (uint32_t)(v[i].meta & 0xffffff), arg);
        }
        if (locked)
            gl_spin_unlock(&s->lock);
    }
}

void gl_chunk_table_reset(void)
{
    for (unsigned k = 0; k < NSHARDS; k++) {
        struct shard *s = &shards[k];
        struct entry *v = atomic_load(&s->v);
        if (v)
            gl_tool_unmap(v, (size_t)s->cap * sizeof *v);
        atomic_store(&s->v, NULL);
        s->cap = s->count = s->tombs = 0;
        for (unsigned w = 0; w < FILTER_WORDS; w++)
            atomic_store(&s->filter[w], 0);
        gl_spin_reset(&s->lock);
    }
}

void gl_chunk_table_after_fork_child(void)
{
    for (unsigned k = 0; k < NSHARDS; k++)
        gl_spin_reset(&shards[k].lock);
}
