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

/* A shard's filter: how many of its chunks fall in each bucket of some of
 * the hash's bits, so that a free of an address the shard does not hold (the
 * driver's chunks, which the hooks leave out: heap_state.h) is answered
 * without the lock or the array.  Counters, not bits: a program frees and
 * allocates all the time, and a bit left set by each removed chunk would
 * fill the filter within seconds (a shard is rebuilt, and could clear them,
 * only when its tombstones pile up, which reuse keeps from happening).
 *
 * Four bits a counter, sticky at 15 (never counted down again until a
 * rebuild recounts the bucket).  While the shard holds fewer than
 * SMALL_FILTER_MAX chunks the filter is 64 counters in the shard's own line
 * (bits 50 to 55 of the hash); past that they would pass most absent
 * addresses (a shard's first array holds up to 128 chunks: at 32, four in
 * ten passed; and a program's heap of a few thousand chunks puts 16 or more
 * in each), so the shard gets a filter of its own then, made anew at each
 * growth: whole pages, two counters a slot of its array or more (a byte a
 * slot: a 16th of the array's size from 4,096 slots, a page below).  A
 * replaced filter stays mapped, never written again (a reader may still hold
 * it; their sum stays under the current one's size and three pages); the
 * small one is not written again either once a large one exists.
 *
 * Counters are written under the lock and read without it.  A present
 * chunk's counter is never 0: its own count was stored before its malloc
 * returned, so the thread freeing it, handed the pointer through the
 * program's own synchronization, sees it or a later value, and later values
 * count it until it is removed.  That thread also sees a filter published
 * before the chunk was added, and a reader holding an older filter asks
 * only of chunks added before that one went (it still counts them).  A
 * rebuild that keeps the filter's size recounts it word by word: a reader
 * sees each word old or new, and a kept chunk's counter is above 0 in both. */
#define FILTER_WORDS 4       /* the small filter: 64 counters */
#define SMALL_FILTER_MAX 16u /* chunks a shard's small filter counts: some 22% pass */
#define COUNTER_MAX 15u

/* A large filter fills whole pages: its header, then counters to the end. */
struct filter {
    struct filter *older; /* the one it replaced: kept mapped */
    uint64_t counters;    /* 16 a word */
    _Atomic uint64_t words[];
};

struct shard {
    gl_spinlock lock;
    uint32_t cap; /* power of two, 0 before the first insert */
    /* The table, published after it is filled, with log2 of its entries in
     * the pointer's low bits (the mapping is page-aligned): readers with the
     * world stopped may read it without the lock, and must have the table
     * and its size from one load (a thread stopped inside a rebuild, or one
     * that cannot be stopped, may be between the two; cap, beside it, is for
     * the lock's holders). */
    _Atomic uintptr_t v;
    uint32_t count, tombs;
    struct filter *_Atomic large;          /* NULL while the shard is small */
    _Atomic uint64_t filter[FILTER_WORDS]; /* the small filter */
} __attribute__((aligned(64))); /* one per cache line: threads on other shards never meet */

_Static_assert(sizeof(struct shard) == 64, "one shard per cache line");
static struct shard shards[NSHARDS] __attribute__((aligned(64)));

#define CAP_LOG_MASK ((uintptr_t)63)
static inline struct entry *table_of(uintptr_t v) { return (struct entry *)(v & ~CAP_LOG_MASK); }
static inline uint32_t cap_of(uintptr_t v) { return v ? 1u << (v & CAP_LOG_MASK) : 0; }

static inline uint64_t mix(uint64_t addr) { return (addr >> 4) * 0x9e3779b97f4a7c15ULL; }
static inline struct shard *shard_of(uint64_t h) { return &shards[h >> (64 - SHARD_BITS)]; }

static inline uint64_t small_bucket(uint64_t h) { return (h >> 50) & (FILTER_WORDS * 16 - 1); }
/* A large filter's bucket: the hash mixed again (its middle bits follow the
 * address's low ones, and heap addresses fall in regular patterns), then
 * scaled to the counters, which need not be a power of two. */
static inline uint64_t large_bucket(uint64_t h, uint64_t n)
{
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return (uint64_t)(((unsigned __int128)h * n) >> 64);
}

static inline unsigned counter(_Atomic uint64_t *words, uint64_t b)
{
    return (unsigned)(atomic_load_explicit(&words[b / 16], memory_order_relaxed) >> (b % 16 * 4)) &
           COUNTER_MAX;
}

/* Word w of a filter with bucket b's counter moved by one (+1 or -1):
 * sticky at COUNTER_MAX; at 0, never counted down (it cannot be). */
static inline uint64_t counted(uint64_t w, uint64_t b, int by)
{
    unsigned c = (unsigned)(w >> (b % 16 * 4)) & COUNTER_MAX;
    if (c == COUNTER_MAX || (by < 0 && c == 0))
        return w;
    uint64_t one = 1ULL << (b % 16 * 4);
    return by > 0 ? w + one : w - one;
}

/* Under the lock: a chunk of bucket b added (+1) or removed (-1). */
static inline void count(_Atomic uint64_t *words, uint64_t b, int by)
{
    uint64_t w = atomic_load_explicit(&words[b / 16], memory_order_relaxed);
    atomic_store_explicit(&words[b / 16], counted(w, b, by), memory_order_relaxed);
}

/* Whether the shard may hold a chunk of hash h: false means it does not. */
static inline bool may_hold(struct shard *s, uint64_t h)
{
    struct filter *f = atomic_load_explicit(&s->large, memory_order_acquire);
    return f ? counter(f->words, large_bucket(h, f->counters)) != 0
             : counter(s->filter, small_bucket(h)) != 0;
}

/* Under the lock. */
static inline void filter_count(struct shard *s, uint64_t h, int by)
{
    struct filter *f = atomic_load_explicit(&s->large, memory_order_relaxed);
    if (f)
        count(f->words, large_bucket(h, f->counters), by);
    else
        count(s->filter, small_bucket(h), by);
}

/* Two counters a slot of an array of cap, or more: what fills the pages. */
static size_t filter_bytes(uint32_t cap)
{
    return gl_tool_page_round(sizeof(struct filter) + (size_t)cap);
}

static uint64_t filter_counters(size_t bytes) { return (bytes - sizeof(struct filter)) / 8 * 16; }

/* What a filter maps: its header and counters, whole pages. */
static size_t filter_mapped(const struct filter *f) { return sizeof *f + f->counters / 2; }

/* The counts of the chunks in v (cap entries) into words (n counters, zeroed). */
static void fill_filter(uint64_t *words, uint64_t n, const struct entry *v, uint32_t cap,
                        bool large)
{
    for (uint32_t i = 0; i < cap; i++)
        if (v[i].addr > TOMB) {
            uint64_t h = mix(v[i].addr), b = large ? large_bucket(h, n) : small_bucket(h);
            words[b / 16] = counted(words[b / 16], b, +1);
        }
}

/* Store fresh words over a filter's, word by word (see above). */
static void store_words(_Atomic uint64_t *words, const uint64_t *fresh, uint64_t nwords)
{
    for (uint64_t w = 0; w < nwords; w++)
        atomic_store_explicit(&words[w], fresh[w], memory_order_relaxed);
}

/* The filter for the shard's new array n (cap entries), under the lock.  Out
 * of memory, the filter in place is kept: it counts every kept chunk, and
 * perhaps more (a count too high only sends a lookup on to the lock). */
static void refilter(struct shard *s, const struct entry *n, uint32_t cap)
{
    struct filter *f = atomic_load_explicit(&s->large, memory_order_relaxed);
    if (cap <= MIN_CAP && !f && s->count < SMALL_FILTER_MAX) {
        uint64_t fresh[FILTER_WORDS] = {0};
        fill_filter(fresh, FILTER_WORDS * 16, n, cap, false);
        store_words(s->filter, fresh, FILTER_WORDS);
        return;
    }
    size_t bytes = filter_bytes(cap);
    uint64_t counters = filter_counters(bytes);
    if (f && f->counters == counters) { /* the same size: recounted in place */
        uint64_t *fresh = gl_tool_map(counters / 2);
        if (fresh) {
            fill_filter(fresh, counters, n, cap, true);
            store_words(f->words, fresh, counters / 16);
            gl_tool_unmap(fresh, counters / 2);
        }
        return;
    }
    struct filter *nf = gl_tool_map(bytes); /* zeroed */
    if (!nf)
        return;
    nf->older = f;
    nf->counters = counters;
    fill_filter((uint64_t *)nf->words, counters, n, cap, true);
    atomic_store_explicit(&s->large, nf, memory_order_release);
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
    struct entry *old = table_of(atomic_load_explicit(&s->v, memory_order_relaxed));
    for (uint32_t i = 0; old && i < s->cap; i++) {
        if (old[i].addr <= TOMB)
            continue;
        uint32_t j = (uint32_t)mix(old[i].addr) & (cap - 1);
        while (n[j].addr != EMPTY)
            j = (j + 1) & (cap - 1);
        n[j] = old[i];
    }
    atomic_store_explicit(&s->v, (uintptr_t)n | (uintptr_t)__builtin_ctz(cap),
                          memory_order_release);
    refilter(s, n, cap);
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
    struct entry *v = table_of(atomic_load_explicit(&s->v, memory_order_relaxed));
    /* Too many for the small filter: a page of its own, counting the array
     * as it is (this chunk is counted into it below).  Asked as the count
     * reaches the limit, not at every insert past it: out of memory, the
     * small one goes on counting, and the next rebuild asks again. */
    if (__builtin_expect(s->count == SMALL_FILTER_MAX, 0) &&
        !atomic_load_explicit(&s->large, memory_order_relaxed))
        refilter(s, v, s->cap);
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
    filter_count(s, h, +1);
    atomic_store_explicit((_Atomic uint64_t *)&v[i].addr, addr, memory_order_release);
    __atomic_store_n(&s->count, s->count + 1,
                     __ATOMIC_RELAXED); /* read unlocked by gl_chunk_table_count */
    gl_spin_unlock(&s->lock);
}

/* The slot of addr in a locked shard, or UINT32_MAX. */
static uint32_t find(struct shard *s, uint64_t addr, uint64_t h)
{
    struct entry *v = table_of(atomic_load_explicit(&s->v, memory_order_relaxed));
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

/* The part of a removal under the lock, out of line: the filter's answer
 * (most frees of the driver's chunks) then returns without saving the
 * registers the probe needs. */
GL_HOT static __attribute__((noinline)) bool remove_locked(struct shard *s, uint64_t addr,
                                                           uint64_t h)
{
    gl_spin_lock(&s->lock);
    uint32_t i = find(s, addr, h);
    if (i != UINT32_MAX) {
        struct entry *v = table_of(atomic_load_explicit(&s->v, memory_order_relaxed));
        atomic_store_explicit((_Atomic uint64_t *)&v[i].addr, TOMB, memory_order_release);
        __atomic_store_n(&s->count, s->count - 1, __ATOMIC_RELAXED);
        s->tombs++;
        filter_count(s, h, -1);
    }
    gl_spin_unlock(&s->lock);
    return i != UINT32_MAX;
}

GL_HOT bool gl_chunk_table_remove(uint64_t addr)
{
    if (addr <= TOMB)
        return false;
    uint64_t h = mix(addr);
    struct shard *s = shard_of(h);
    return may_hold(s, h) && remove_locked(s, addr, h);
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
        uint64_t meta = table_of(atomic_load_explicit(&s->v, memory_order_relaxed))[i].meta;
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
    for (unsigned i = 0; i < NSHARDS; i++) { /* unlocked: filters are never unmapped */
        bytes += (size_t)shards[i].cap * sizeof(struct entry);
        for (struct filter *f = atomic_load(&shards[i].large); f; f = f->older)
            bytes += filter_mapped(f);
    }
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
        uintptr_t published = atomic_load_explicit(&s->v, memory_order_acquire);
        struct entry *v = table_of(published);
        uint32_t cap = cap_of(published); /* not s->cap: see struct shard */
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
        struct entry *v = table_of(atomic_load(&s->v));
        if (v)
            gl_tool_unmap(v, (size_t)s->cap * sizeof *v);
        atomic_store(&s->v, 0);
        s->cap = s->count = s->tombs = 0;
        for (struct filter *f = atomic_load(&s->large), *older; f; f = older) {
            older = f->older;
            gl_tool_unmap(f, filter_mapped(f));
        }
        atomic_store(&s->large, NULL);
        for (unsigned w = 0; w < FILTER_WORDS; w++)
            atomic_store(&s->filter[w], 0);
        gl_spin_reset(&s->lock);
    }
}

#ifdef GL_ASSERTIONS
bool gl_chunk_table_test_may_hold(uint64_t addr)
{
    uint64_t h = mix(addr);
    return may_hold(shard_of(h), h);
}
#endif

void gl_chunk_table_after_fork_child(void)
{
    for (unsigned k = 0; k < NSHARDS; k++)
        gl_spin_reset(&shards[k].lock);
}
