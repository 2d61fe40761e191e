#include "block_table.h"

#include <string.h>

#include "gl_uthash.h"
#include "spinlock.h"

struct gl_table_node {
    struct gl_block_info info;
    UT_hash_handle hh;
};

/* One lock per shard, each on its own cache line so that threads working in
 * different shards do not bounce a shared line. */
struct shard {
    gl_spinlock lock;
    struct gl_table_node *head;
    struct gl_slab slab;
    size_t count;
} __attribute__((aligned(64)));

/* Each shard holds one sentinel node that is never removed: uthash frees a
 * table when its last item goes and builds a new one on the next insert, which
 * would make every alloc/free pair on an otherwise empty shard allocate and free
 * a bucket array.  Real keys never have all top bits set (event.h). */
#define SENTINEL_KEY UINT64_MAX

struct gl_table {
    unsigned shift; /* 64 - log2(shards) */
    unsigned nshards;
    size_t mapped;
    struct shard shards[];
};

/* splitmix64's finalizer: device addresses are aligned to 512 bytes or more, so
 * their low bits carry nothing; every bit of the hash must depend on the high ones. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline struct shard *shard_of(struct gl_table *t, uint64_t h)
{
    return &t->shards[t->nshards == 1 ? 0 : h >> t->shift];
}

struct gl_table *gl_table_create(unsigned nshards_log2)
{
    unsigned n = 1u << nshards_log2;
    size_t bytes = sizeof(struct gl_table) + n * sizeof(struct shard);
    struct gl_table *t = gl_tool_map(bytes);
    if (!t)
        return NULL;
    t->mapped = bytes;
    t->nshards = n;
    t->shift = 64 - nshards_log2;
    for (unsigned i = 0; i < n; i++) {
        struct shard *s = &t->shards[i];
        gl_slab_init(&s->slab, sizeof(struct gl_table_node)); /* locks: zeroed */
        struct gl_table_node *sentinel = gl_slab_get(&s->slab);
        if (!sentinel) {
            gl_table_destroy(t);
            return NULL;
        }
        sentinel->info.key = SENTINEL_KEY;
        HASH_ADD_KEYPTR_BYHASHVALUE(hh, s->head, &sentinel->info.key, sizeof sentinel->info.key,
                                    (unsigned)mix64(SENTINEL_KEY), sentinel);
        if (!sentinel->hh.tbl) {
            gl_table_destroy(t);
            return NULL;
        }
    }
    return t;
}

void gl_table_destroy(struct gl_table *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = &t->shards[i];
        HASH_CLEAR(hh, s->head);
        gl_slab_destroy(&s->slab);
    }
    gl_tool_unmap(t, t->mapped);
}

static inline struct gl_table_node *find(struct shard *s, const uint64_t *key, uint64_t h)
{
    struct gl_table_node *n = NULL;
    HASH_FIND_BYHASHVALUE(hh, s->head, key, sizeof *key, (unsigned)h, n);
    return n;
}

/* Link n into s; false if uthash ran out of memory (n is then not linked). */
static inline bool link_node(struct shard *s, struct gl_table_node *n, uint64_t h)
{
    HASH_ADD_KEYPTR_BYHASHVALUE(hh, s->head, &n->info.key, sizeof n->info.key, (unsigned)h, n);
    if (!n->hh.tbl)
        return false;
    s->count++;
    return true;
}

static inline void unlink_node(struct shard *s, struct gl_table_node *n)
{
    HASH_DELETE(hh, s->head, n);
    s->count--;
}

bool gl_table_insert(struct gl_table *t, const struct gl_block_info *b,
                     struct gl_block_info *replaced, struct gl_table_node **spare)
{
    if (b->key == SENTINEL_KEY)
        return false;
    uint64_t h = mix64(b->key);
    struct shard *s = shard_of(t, h);
    bool was_present = false;
    gl_spin_lock(&s->lock);
    struct gl_table_node *n = find(s, &b->key, h);
    if (n) {
        /* The old block was freed behind gpuleak's back; the new one takes its place. */
        if (replaced)
            *replaced = n->info;
        n->info = *b;
        was_present = true;
    } else {
        if (spare && *spare) {
            n = *spare;
            *spare = NULL;
        } else {
            n = gl_slab_get(&s->slab);
        }
        if (n) {
            n->info = *b;
            if (!link_node(s, n, h))
                gl_slab_put(&s->slab, n);
        }
    }
    gl_spin_unlock(&s->lock);
    return was_present;
}

struct gl_table_node *gl_table_detach(struct gl_table *t, uint64_t key)
{
    if (key == SENTINEL_KEY)
        return NULL;
    uint64_t h = mix64(key);
    struct shard *s = shard_of(t, h);
    gl_spin_lock(&s->lock);
    struct gl_table_node *n = find(s, &key, h);
    if (n)
        unlink_node(s, n);
    gl_spin_unlock(&s->lock);
    return n;
}

const struct gl_block_info *gl_table_node_info(const struct gl_table_node *n) { return &n->info; }

void gl_table_reattach(struct gl_table *t, struct gl_table_node *n)
{
    uint64_t h = mix64(n->info.key);
    struct shard *s = shard_of(t, h);
    gl_spin_lock(&s->lock);
    struct gl_table_node *other = find(s, &n->info.key, h);
    if (other || !link_node(s, n, h))
        gl_slab_put(&s->slab, n); /* the key was taken meanwhile: the newer block wins */
    gl_spin_unlock(&s->lock);
}

void gl_table_release(struct gl_table *t, struct gl_table_node *n)
{
    struct shard *s = shard_of(t, mix64(n->info.key));
    gl_spin_lock(&s->lock);
    gl_slab_put(&s->slab, n);
    gl_spin_unlock(&s->lock);
}

bool gl_table_update(struct gl_table *t, uint64_t key, gl_table_update_fn fn, void *arg,
                     struct gl_block_info *removed, bool *was_removed)
{
    if (was_removed)
        *was_removed = false;
    if (key == SENTINEL_KEY)
        return false;
    uint64_t h = mix64(key);
    struct shard *s = shard_of(t, h);
    bool rm = false;
    gl_spin_lock(&s->lock);
    struct gl_table_node *n = find(s, &key, h);
    if (n && fn(&n->info, arg)) {
        if (removed)
            *removed = n->info;
        unlink_node(s, n);
        gl_slab_put(&s->slab, n);
        rm = true;
    }
    gl_spin_unlock(&s->lock);
    if (was_removed)
        *was_removed = rm;
    return n != NULL;
}

static bool take(struct gl_block_info *b, void *arg)
{
    (void)b;
    (void)arg;
    return true;
}

bool gl_table_remove(struct gl_table *t, uint64_t key, struct gl_block_info *out)
{
    return gl_table_update(t, key, take, NULL, out, NULL);
}

static bool copy_out(struct gl_block_info *b, void *arg)
{
    if (arg)
        *(struct gl_block_info *)arg = *b;
    return false;
}

bool gl_table_lookup(struct gl_table *t, uint64_t key, struct gl_block_info *out)
{
    return gl_table_update(t, key, copy_out, out, NULL, NULL);
}

size_t gl_table_foreach(struct gl_table *t, gl_table_visit_fn fn, void *arg)
{
    size_t removed = 0;
    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = &t->shards[i];
        gl_spin_lock(&s->lock);
        struct gl_table_node *n, *tmp;
        HASH_ITER(hh, s->head, n, tmp)
        {
            if (n->info.key != SENTINEL_KEY && fn(&n->info, arg)) {
                unlink_node(s, n);
                gl_slab_put(&s->slab, n);
                removed++;
            }
        }
        gl_spin_unlock(&s->lock);
    }
    return removed;
}

size_t gl_table_count(struct gl_table *t)
{
    size_t c = 0;
    for (unsigned i = 0; i < t->nshards; i++) {
        gl_spin_lock(&t->shards[i].lock);
        c += t->shards[i].count;
        gl_spin_unlock(&t->shards[i].lock);
    }
    return c;
}

size_t gl_table_memory_bytes(struct gl_table *t)
{
    size_t b = t->mapped;
    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = &t->shards[i];
        gl_spin_lock(&s->lock);
        b += s->slab.chunks_bytes;
        if (s->head)
            b += s->head->hh.tbl->num_buckets * sizeof(UT_hash_bucket) + sizeof(UT_hash_table);
        gl_spin_unlock(&s->lock);
    }
    return b;
}

void gl_table_reset_locks_after_fork(struct gl_table *t)
{
    for (unsigned i = 0; i < t->nshards; i++)
        gl_spin_reset(&t->shards[i].lock);
}
