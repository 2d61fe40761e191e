/* SPDX-License-Identifier: MIT */
#include "track/block_table.h"

#include <stddef.h>
#include <string.h>

#include "event/event.h"
#include "base/spin.h"
#include "base/tool.h"
#include "common/util.h"

/* ---- bins ---- */

/* A bin holds the blocks of one span of keys: addresses that agree above bit 12,
 * handles (any other namespace: driver object pointers, pool sub-allocations a
 * few bytes apart) that agree above bit 6.  Masking, not shifting, keeps the
 * namespace bits, so spans of different namespaces never meet. */
static inline uint64_t span_of(uint64_t key)
{
    return key & (gl_key_ns(key) == GL_NS_ADDR ? ~(uint64_t)4095 : ~(uint64_t)63);
}

/* A bin: its blocks, the first of which names its span.  8 bytes before the
 * 56-byte records, so that a bin of one block is one cache line (bins are cut
 * at 64-byte boundaries). */
struct bin {
    uint32_t n;   /* blocks in use */
    uint32_t cls; /* capacity class */
    struct gl_block_info blocks[];
};

/* Capacities grow by about 1.5: a bin fills one block at a time (the driver
 * hands out neighbouring addresses in turn), and doubling would leave a quarter
 * of the space unused on average.  A 4 KiB span holds at most 4096 keys. */
static const uint32_t class_cap[] = {1,   2,   3,   4,    6,    8,    12,   16,
                                     24,  32,  48,  64,   96,   128,  192,  256,
                                     384, 512, 768, 1024, 1536, 2048, 3072, 4096};
#define NCLASSES ((unsigned)GL_ARRAY_SIZE(class_cap))
/* Bins up to this class come from the shard's arena; larger ones (thousands of
 * handles or of byte-sized pool sub-allocations in one span) are mapped alone. */
#define ARENA_CLASSES 12 /* capacity 64: 3,648 bytes */

/* Whole cache lines: a bin starts on one, and one of one block fills it. */
static inline size_t bin_bytes(uint32_t cls)
{
    return (sizeof(struct bin) + class_cap[cls] * sizeof(struct gl_block_info) + 63) & ~(size_t)63;
}
_Static_assert(sizeof(struct bin) + sizeof(struct gl_block_info) == 64, "a bin of one block");

/* The smallest class holding n blocks. */
static uint32_t class_for(uint32_t n)
{
    uint32_t c = 0;
    while (c + 1u < NCLASSES && class_cap[c] < n)
        c++;
    return c;
}

/* ---- shards ---- */

/* A shard's memory for bins: chunks cut in order, with a free list per class.
 * One partly used chunk per shard, not one per class; chunks start at a page and
 * grow with the shard, so that 256 shards of a small program map 1 MiB, not 16.
 *
 * A bin outgrown leaves its memory on its class's list, for the next bin to
 * reach that class.  Where spans fill in turn that is soon; where they fill
 * together (addresses handed out in no order: streams, threads) every bin
 * passes each class at about the same time and the lists keep what nobody will
 * ask for again (random-order inserts took nearly twice the memory of ordered
 * ones: bench/table_memory, bench/RESULTS.md).  So a shard whose lists hold more
 * than a quarter of what its bins use moves its bins into fresh chunks
 * (compact()), each at the smallest class that holds it. */
#define ARENA_CHUNK_MIN 4096
#define ARENA_CHUNK_MAX (16 * 1024)
struct arena {
    /* First what every insert and removal reads or writes: with the shard's
     * index fields before it, in the shard's first cache line. */
    size_t used_bytes; /* bins cut from the chunks, in use */
    size_t free_bytes; /* bins on the free lists */
    size_t retry_at;   /* after a compaction ran out of memory: the free bytes
                          to wait for before trying again */
    void *free[ARENA_CLASSES];
    char *cur, *end;
    void *chunks; /* linked through their first word; the second is the size */
    size_t bytes; /* chunks and lone bins mapped */
};

/* A shard's index of its bins: open addressing, linear probing, each slot a
 * span and its bin (four to a cache line).  A lookup reads the shard's first
 * line, a slot's line and the bin: where the program's own work pushed them
 * out, what a CUDA call pays is these lines (bench/cold), and uthash's chain
 * read more (the table's header, a bucket, each item's handle and its key,
 * and at a removal the items beside it in its list).  A removal shifts the
 * slots after it back: no tombstones, so probes stay short however many
 * blocks come and go. */
struct slot {
    uint64_t span;
    struct bin *bin; /* NULL: empty */
};
#define SLOTS_MIN 8 /* two cache lines */

/* One lock per shard, each on its own cache line so that threads working in
 * different shards do not bounce a shared line; what a lookup reads is in
 * that line, the arena after it. */
struct shard {
    gl_spinlock lock;
    uint32_t mask;      /* slots - 1; 0 before the first bin */
    struct slot *slots; /* NULL before the first bin */
    size_t bins;        /* slots in use */
    size_t count;       /* blocks */
    struct arena arena;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct shard, arena.free[1]) == 64,
               "the index and the arena's counters and smallest bins in one line");

/* Never a key (event.h: real keys never have all top bits set); refused. */
#define RESERVED_KEY UINT64_MAX

struct gl_table {
    unsigned shift; /* 64 - log2(shards) */
    unsigned nshards;
    size_t mapped;
    struct shard shards[];
};

struct gl_table_node {
    struct gl_block_info info;
};

/* splitmix64's finalizer: spans are aligned, so their low bits carry nothing;
 * every bit of the hash must depend on the high ones. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t hash_of(uint64_t key) { return mix64(span_of(key)); }

static inline struct shard *shard_of(struct gl_table *t, uint64_t h)
{
    return &t->shards[t->nshards == 1 ? 0 : h >> t->shift];
}

/* The next chunk, this chunk's size; then bins, each at a cache line. */
#define CHUNK_HEADER 64

/* A new chunk of at least size bytes (whole pages) to cut bins from; what was
 * left of the current one is given up. */
static bool add_chunk(struct arena *a, size_t size)
{
    size = gl_tool_page_round(size);
    char *c = gl_tool_map(size); /* fresh pages are zero */
    if (!c)
        return false;
    ((void **)c)[0] = a->chunks;
    ((size_t *)c)[1] = size;
    a->chunks = c;
    a->bytes += size;
    a->cur = c + CHUNK_HEADER;
    a->end = c + size;
    return true;
}

GL_HOT static struct bin *bin_alloc(struct arena *a, uint32_t cls)
{
    size_t bytes = bin_bytes(cls);
    struct bin *b;
    if (cls >= ARENA_CLASSES) {
        b = gl_tool_map(bytes);
        if (!b)
            return NULL;
        a->bytes += gl_tool_page_round(bytes);
    } else if (a->free[cls]) {
        b = a->free[cls];
        a->free[cls] = *(void **)b;
        a->free_bytes -= bytes;
        a->used_bytes += bytes;
    } else {
        if ((size_t)(a->end - a->cur) < bytes) {
            size_t size = a->bytes < ARENA_CHUNK_MIN   ? ARENA_CHUNK_MIN
                          : a->bytes > ARENA_CHUNK_MAX ? ARENA_CHUNK_MAX
                                                       : a->bytes;
            if (!add_chunk(a, size < CHUNK_HEADER + bytes ? CHUNK_HEADER + bytes : size))
                return NULL;
        }
        b = (struct bin *)a->cur;
        a->cur += bytes;
        a->used_bytes += bytes;
    }
    memset(b, 0, sizeof *b);
    b->cls = cls;
    return b;
}

GL_HOT static void bin_free(struct arena *a, struct bin *b)
{
    /* The free-list link overwrites the bin's header (n and cls): read the
     * class before it goes. */
    uint32_t cls = b->cls;
    size_t bytes = bin_bytes(cls);
    if (cls >= ARENA_CLASSES) {
        a->bytes -= gl_tool_page_round(bytes);
        gl_tool_unmap(b, bytes);
        return;
    }
    *(void **)b = a->free[cls];
    a->free[cls] = b;
    a->used_bytes -= bytes;
    a->free_bytes += bytes;
}

static void unmap_chunks(void *chunks)
{
    for (char *c = chunks; c;) {
        char *next = ((void **)c)[0];
        gl_tool_unmap(c, ((size_t *)c)[1]);
        c = next;
    }
}

/* Unmap everything the shard holds: lone bins, the index, the chunks. */
static void shard_destroy(struct shard *s)
{
    for (size_t i = 0; s->slots && i <= s->mask; i++) {
        struct bin *b = s->slots[i].bin;
        if (b && b->cls >= ARENA_CLASSES)
            gl_tool_unmap(b, bin_bytes(b->cls));
    }
    if (s->slots)
        gl_tool_free(s->slots, (s->mask + 1u) * sizeof *s->slots);
    s->slots = NULL;
    s->mask = 0;
    s->bins = s->count = 0;
    unmap_chunks(s->arena.chunks);
    memset(&s->arena, 0, sizeof s->arena);
}

/* ---- the index ---- */

/* The slot of span's bin, or of the empty slot where it would go; -1 when
 * the shard has no index yet. */
static inline long find_slot(const struct shard *s, uint64_t span, uint64_t h)
{
    if (!s->slots)
        return -1;
    size_t i = (size_t)h & s->mask;
    while (s->slots[i].bin && s->slots[i].span != span)
        i = (i + 1) & s->mask;
    return (long)i;
}

static inline struct bin *find_bin(const struct shard *s, uint64_t span, uint64_t h, long *at)
{
    long i = find_slot(s, span, h);
    *at = i;
    return i >= 0 ? s->slots[i].bin : NULL;
}

/* Room for one more bin at most three quarters full: the index doubles
 * (SLOTS_MIN at first), its bins placed again.  False when memory ran out
 * (the index is then as it was). */
static bool index_room(struct shard *s)
{
    size_t n = s->slots ? s->mask + 1u : 0;
    if (s->slots && 4 * (s->bins + 1) <= 3 * n)
        return true;
    size_t m = n ? 2 * n : SLOTS_MIN;
    struct slot *slots = gl_tool_alloc(m * sizeof *slots);
    if (!slots)
        return false;
    memset(slots, 0, m * sizeof *slots);
    for (size_t i = 0; i < n; i++) {
        if (!s->slots[i].bin)
            continue;
        size_t j = (size_t)mix64(s->slots[i].span) & (m - 1);
        while (slots[j].bin)
            j = (j + 1) & (m - 1);
        slots[j] = s->slots[i];
    }
    if (s->slots)
        gl_tool_free(s->slots, n * sizeof *s->slots);
    s->slots = slots;
    s->mask = (uint32_t)(m - 1);
    return true;
}

/* Empty slot i, moving back each later slot of its run whose home is not
 * between i and it (cyclically), so that every bin stays reachable from its
 * home without a gap. */
GL_HOT static void slot_clear(struct shard *s, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & s->mask;
        if (!s->slots[j].bin)
            break;
        size_t home = (size_t)mix64(s->slots[j].span) & s->mask;
        if (gl_util_cyclic_within(i, home, j))
            continue; /* it stays */
        s->slots[i] = s->slots[j];
        i = j;
    }
    s->slots[i].bin = NULL;
    s->slots[i].span = 0;
    s->bins--;
}

static inline int index_in(const struct bin *b, uint64_t key)
{
    for (uint32_t i = 0; i < b->n; i++)
        if (b->blocks[i].key == key)
            return (int)i;
    return -1;
}

/* Move the blocks of slot at's bin to a bin of class cls, in the same slot.
 * Returns the new bin, or NULL (the old one unchanged) when memory ran out. */
static struct bin *rebin(struct shard *s, long at, uint32_t cls)
{
    struct bin *b = s->slots[at].bin, *nb = bin_alloc(&s->arena, cls);
    if (!nb)
        return NULL;
    nb->n = b->n;
    memcpy(nb->blocks, b->blocks, b->n * sizeof b->blocks[0]);
    s->slots[at].bin = nb;
    bin_free(&s->arena, b);
    return nb;
}

/* Move every bin of s into a fresh arena, each at the smallest class that
 * holds it, and unmap the old chunks; each slot keeps its place.  Out of
 * memory part way, the old arena's chunks and lists join the new one (the
 * bins moved so far leave their old places on its lists). */
static void compact(struct shard *s)
{
    struct arena old = s->arena;
    memset(&s->arena, 0, sizeof s->arena);
    /* One chunk for all (the bins use at most what they used): one system
     * call, not one per 16 KiB.  Without it, the bins get chunks as usual. */
    add_chunk(&s->arena, CHUNK_HEADER + old.used_bytes);
    size_t moved = 0, lone_kept = 0;
    bool ok = true;
    for (size_t i = 0; s->slots && i <= s->mask; i++) {
        struct bin *b = s->slots[i].bin;
        if (!b)
            continue;
        uint32_t cls = class_for(b->n);
        if (b->cls >= ARENA_CLASSES && cls >= b->cls) {
            /* Mapped on its own and no smaller: it stays, and its bytes move. */
            lone_kept += gl_tool_page_round(bin_bytes(b->cls));
        } else if (ok) {
            struct bin *nb = bin_alloc(&s->arena, cls);
            if (nb) {
                nb->n = b->n;
                memcpy(nb->blocks, b->blocks, b->n * sizeof b->blocks[0]);
                s->slots[i].bin = nb;
                bin_free(&old, b);
                moved++;
            } else {
                ok = false;
            }
        }
    }
    old.bytes -= lone_kept; /* lone bins kept belong to the arena that stays */
    if (ok) {
        unmap_chunks(old.chunks);
        s->arena.bytes += lone_kept;
        return;
    }
    if (moved == 0) { /* nothing left the old arena: it stays as it was */
        unmap_chunks(s->arena.chunks);
        s->arena = old;
        s->arena.bytes += lone_kept;
        s->arena.retry_at = 2 * s->arena.free_bytes;
        return;
    }
    /* Keep the old chunks: bins not moved still live there.  Cut on from
     * whichever current chunk has more room left. */
    if (old.end - old.cur > s->arena.end - s->arena.cur) {
        s->arena.cur = old.cur;
        s->arena.end = old.end;
    }
    for (unsigned c = 0; c < ARENA_CLASSES; c++) {
        void **last = &old.free[c];
        while (*last)
            last = (void **)*last;
        *last = s->arena.free[c];
        s->arena.free[c] = old.free[c];
    }
    if (old.chunks) {
        char *c = old.chunks;
        while (((void **)c)[0])
            c = ((void **)c)[0];
        ((void **)c)[0] = s->arena.chunks;
        s->arena.chunks = old.chunks;
    }
    s->arena.bytes += old.bytes + lone_kept;
    s->arena.used_bytes += old.used_bytes;
    s->arena.free_bytes += old.free_bytes;
    /* Not again on the next insert (each try moves bins): only once the lists
     * hold twice as much. */
    s->arena.retry_at = 2 * s->arena.free_bytes;
}

/* At the end of an insert, or of a walk that removed blocks (never inside an
 * operation: it holds bin pointers).  Inserts are what strand bins (outgrown
 * ones); single removals only free memory that the next inserts reuse, and
 * compacting while a table drains would move the remaining bins again and
 * again.  The next insert into a drained shard compacts it, cheaply: few bins
 * are left. */
#ifndef GL_TABLE_COMPACT_MIN /* tests set it low, to compact often */
#define GL_TABLE_COMPACT_MIN (64 * 1024)
#endif
static inline void maybe_compact(struct shard *s)
{
    if (__builtin_expect(s->arena.free_bytes >= GL_TABLE_COMPACT_MIN &&
                             s->arena.free_bytes >= s->arena.retry_at &&
                             s->arena.free_bytes > s->arena.used_bytes / 4,
                         0))
        compact(s);
}

/* Add a block known to be absent to its span's bin, in slot at (-1: the
 * shard has no index yet; an empty slot: the span has no bin yet); false when
 * memory ran out. */
GL_HOT static bool add_block(struct shard *s, long at, const struct gl_block_info *info, uint64_t h)
{
    struct bin *b = at >= 0 ? s->slots[at].bin : NULL;
    if (!b) {
        if (!index_room(s))
            return false;
        b = bin_alloc(&s->arena, 0);
        if (!b)
            return false;
        b->blocks[0] = *info;
        b->n = 1;
        at = find_slot(s, span_of(info->key), h); /* the index may have grown */
        s->slots[at].span = span_of(info->key);
        s->slots[at].bin = b;
        s->bins++;
    } else {
        if (b->n == class_cap[b->cls]) {
            if (b->cls + 1u >= NCLASSES)
                return false;
            b = rebin(s, at, b->cls + 1);
            if (!b)
                return false;
        }
        b->blocks[b->n++] = *info;
    }
    s->count++;
    return true;
}

/* Remove block i of slot at's bin: the last block takes its slot, so that
 * blocks[0] always holds a key of the span.  An emptied bin goes, and one
 * left under a third full moves to a smaller class, except during a walk
 * over the table (walking): a removed slot pulls later ones back, which the
 * walk would then miss or see twice; the walk tidies up after itself
 * (tidy()).
 *
 * (Keeping emptied bins linked a while, for the driver to hand the address
 * back, was tried: it saved a little where one address comes back and cost
 * more where many addresses take turns, whose evictions touch cold bins;
 * bench/hotpath, bench/RESULTS.md.) */
GL_HOT static void remove_at(struct shard *s, long at, uint32_t i, bool walking)
{
    struct bin *b = s->slots[at].bin;
    b->blocks[i] = b->blocks[--b->n];
    s->count--;
    if (walking)
        return;
    if (b->n == 0) {
        slot_clear(s, (size_t)at);
        bin_free(&s->arena, b);
    } else if (b->cls > 0 && b->n <= class_cap[b->cls] / 3) {
        rebin(s, at, class_for(b->n)); /* no memory: keep the larger bin */
    }
}

/* ---- the table ---- */

struct gl_table *gl_block_table_create(unsigned nshards_log2)
{
    unsigned n = 1u << nshards_log2;
    size_t bytes = sizeof(struct gl_table) + n * sizeof(struct shard);
    struct gl_table *t = gl_tool_map(bytes); /* zeroed: locks, counts, arenas */
    if (!t)
        return NULL;
    t->mapped = bytes;
    t->nshards = n;
    t->shift = 64 - nshards_log2;
    return t;
}

void gl_block_table_destroy(struct gl_table *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < t->nshards; i++)
        shard_destroy(&t->shards[i]);
    gl_tool_unmap(t, t->mapped);
}

/* The block with this key: its bin's slot in *at and its index in the bin,
 * or -1. */
static inline int locate(const struct shard *s, uint64_t key, uint64_t h, long *at)
{
    struct bin *bin = find_bin(s, span_of(key), h, at);
    return bin ? index_in(bin, key) : -1;
}

GL_HOT bool gl_block_table_insert(struct gl_table *t, const struct gl_block_info *b,
                                  struct gl_block_info *replaced)
{
    if (b->key == RESERVED_KEY)
        return false;
    uint64_t h = hash_of(b->key);
    struct shard *s = shard_of(t, h);
    bool was_present = false;
    gl_spin_lock(&s->lock);
    long at;
    int i = locate(s, b->key, h, &at);
    if (i >= 0) {
        /* The old block was freed behind gpuleak's back; the new one takes its place. */
        struct bin *bin = s->slots[at].bin;
        if (replaced)
            *replaced = bin->blocks[i];
        bin->blocks[i] = *b;
        was_present = true;
    } else {
        add_block(s, at, b, h);
    }
    maybe_compact(s);
    gl_spin_unlock(&s->lock);
    return was_present;
}

GL_HOT struct gl_table_node *gl_block_table_detach(struct gl_table *t, uint64_t key,
                                                   struct gl_table_node **spare)
{
    if (key == RESERVED_KEY)
        return NULL;
    /* The node is had before the lock: no allocator call under it. */
    bool fresh = !(spare && *spare);
    struct gl_table_node *n = fresh ? gl_tool_alloc(sizeof *n) : *spare;
    if (!n)
        return NULL;
    uint64_t h = hash_of(key);
    struct shard *s = shard_of(t, h);
    gl_spin_lock(&s->lock);
    long at;
    int i = locate(s, key, h, &at);
    if (i >= 0) {
        n->info = s->slots[at].bin->blocks[i];
        remove_at(s, at, (uint32_t)i, false);
    }
    gl_spin_unlock(&s->lock);
    if (i >= 0) {
        if (!fresh)
            *spare = NULL;
        return n;
    }
    if (fresh) { /* unused: the caller's spare now, if it has a place for one */
        if (spare)
            *spare = n;
        else
            gl_tool_free(n, sizeof *n);
    }
    return NULL;
}

GL_HOT const struct gl_block_info *gl_block_table_node_info(const struct gl_table_node *n)
{
    return &n->info;
}

void gl_block_table_reattach(struct gl_table *t, struct gl_table_node *n)
{
    uint64_t h = hash_of(n->info.key);
    struct shard *s = shard_of(t, h);
    gl_spin_lock(&s->lock);
    long at;
    if (locate(s, n->info.key, h, &at) < 0)
        add_block(s, at, &n->info, h); /* else the key was taken meanwhile: the newer block wins */
    maybe_compact(s);
    gl_spin_unlock(&s->lock);
    gl_block_table_release(t, n);
}

void gl_block_table_release(struct gl_table *t, struct gl_table_node *n)
{
    (void)t;
    gl_tool_free(n, sizeof *n);
}

bool gl_block_table_update(struct gl_table *t, uint64_t key, gl_table_update_fn fn, void *arg,
                           struct gl_block_info *removed, bool *was_removed)
{
    if (was_removed)
        *was_removed = false;
    if (key == RESERVED_KEY)
        return false;
    uint64_t h = hash_of(key);
    struct shard *s = shard_of(t, h);
    bool rm = false;
    gl_spin_lock(&s->lock);
    long at;
    int i = locate(s, key, h, &at);
    if (i >= 0 && fn(&s->slots[at].bin->blocks[i], arg)) {
        if (removed)
            *removed = s->slots[at].bin->blocks[i];
        remove_at(s, at, (uint32_t)i, false);
        rm = true;
    }
    gl_spin_unlock(&s->lock);
    if (was_removed)
        *was_removed = rm;
    return i >= 0;
}

static bool take(struct gl_block_info *b, void *arg)
{
    (void)b;
    (void)arg;
    return true;
}

bool gl_block_table_remove(struct gl_table *t, uint64_t key, struct gl_block_info *out)
{
    return gl_block_table_update(t, key, take, NULL, out, NULL);
}

static bool copy_out(struct gl_block_info *b, void *arg)
{
    if (arg)
        *(struct gl_block_info *)arg = *b;
    return false;
}

bool gl_block_table_lookup(struct gl_table *t, uint64_t key, struct gl_block_info *out)
{
    return gl_block_table_update(t, key, copy_out, out, NULL, NULL);
}

/* After a walk that removed blocks (a context destroyed, a pool swept): the
 * bins it emptied go, and those it left under a third full move to the class
 * that fits them, as a single removal's would.  A cleared slot pulls later
 * ones back into it, so the slot is looked at again; one pulled from the
 * index's start to its end is looked at twice, which changes nothing. */
static void tidy(struct shard *s)
{
    for (size_t i = 0; s->slots && i <= s->mask;) {
        struct bin *b = s->slots[i].bin;
        if (b && b->n == 0) {
            slot_clear(s, i);
            bin_free(&s->arena, b);
            continue;
        }
        if (b && b->cls > 0 && b->n <= class_cap[b->cls] / 3)
            rebin(s, (long)i, class_for(b->n));
        i++;
    }
}

size_t gl_block_table_foreach(struct gl_table *t, gl_table_visit_fn fn, void *arg)
{
    size_t removed = 0;
    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = &t->shards[i];
        gl_spin_lock(&s->lock);
        size_t before = removed;
        for (size_t k = 0; s->slots && k <= s->mask; k++) {
            struct bin *b = s->slots[k].bin;
            if (!b)
                continue;
            /* Backwards: a removal moves the last block, already visited,
             * into the slot; emptied bins stay until tidy(). */
            for (uint32_t j = b->n; j-- > 0;) {
                if (fn(&b->blocks[j], arg)) {
                    remove_at(s, (long)k, j, true);
                    removed++;
                }
            }
        }
        if (removed > before) {
            tidy(s);
            maybe_compact(s);
        }
        gl_spin_unlock(&s->lock);
    }
    return removed;
}

size_t gl_block_table_count(struct gl_table *t)
{
    size_t c = 0;
    for (unsigned i = 0; i < t->nshards; i++) {
        gl_spin_lock(&t->shards[i].lock);
        c += t->shards[i].count;
        gl_spin_unlock(&t->shards[i].lock);
    }
    return c;
}

size_t gl_block_table_bin_count(struct gl_table *t)
{
    size_t c = 0;
    for (unsigned i = 0; i < t->nshards; i++) {
        gl_spin_lock(&t->shards[i].lock);
        c += t->shards[i].bins;
        gl_spin_unlock(&t->shards[i].lock);
    }
    return c;
}

size_t gl_block_table_memory_bytes(struct gl_table *t)
{
    size_t b = t->mapped;
    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = &t->shards[i];
        gl_spin_lock(&s->lock);
        b += s->arena.bytes;
        if (s->slots)
            b += (s->mask + 1u) * sizeof *s->slots;
        gl_spin_unlock(&s->lock);
    }
    return b;
}

void gl_block_table_reset_locks_after_fork(struct gl_table *t)
{
    for (unsigned i = 0; i < t->nshards; i++)
        gl_spin_reset(&t->shards[i].lock);
}
