/* SPDX-License-Identifier: MIT */
#include "observe/contexts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/spin.h"
#include "base/tool.h"
#include "common/util.h"

#define MAX_CONTEXTS 1024

/* Slots are claimed under a lock and published with release stores; readers scan
 * without a lock.  A destroyed context's slot is cleared (its pointer value may
 * come back for a new context, on another device). */
static struct {
    _Atomic uint64_t ctx;
    _Atomic int device;
} slots[MAX_CONTEXTS];
static _Atomic unsigned nslots;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gl_ctx_device_query_fn query;
void gl_contexts_set_query(gl_ctx_device_query_fn fn) { query = fn; }

static int find(uint64_t ctx)
{
    unsigned n = atomic_load_explicit(&nslots, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&slots[i].ctx, memory_order_acquire) == ctx)
            return atomic_load_explicit(&slots[i].device, memory_order_relaxed);
    return -2;
}

static int add(uint64_t ctx)
{
    int dev = query ? query(ctx) : -1;
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots), free_slot = n;
    for (unsigned i = 0; i < n; i++) {
        uint64_t c = atomic_load(&slots[i].ctx);
        if (c == ctx) {
            atomic_store(&slots[i].device, dev);
            pthread_mutex_unlock(&lock);
            return dev;
        }
        if (c == 0 && free_slot == n)
            free_slot = i;
    }
    if (free_slot < MAX_CONTEXTS) {
        atomic_store_explicit(&slots[free_slot].device, dev, memory_order_relaxed);
        atomic_store_explicit(&slots[free_slot].ctx, ctx, memory_order_release);
        if (free_slot == n)
            atomic_store_explicit(&nslots, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return dev;
}

void gl_contexts_created(uint64_t ctx)
{
    if (ctx)
        add(ctx);
}

static void forget_streams_of(uint64_t ctx);

void gl_contexts_destroyed(uint64_t ctx)
{
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load(&slots[i].ctx) == ctx)
            atomic_store(&slots[i].ctx, 0);
    pthread_mutex_unlock(&lock);
    /* Its streams went with it; their handles may come back for streams made
     * where gpuleak does not see. */
    forget_streams_of(ctx);
}

GL_HOT int gl_contexts_device(uint64_t ctx)
{
    if (!ctx)
        return -1;
    int dev = find(ctx);
    return dev != -2 ? dev : add(ctx);
}

/* ---- streams ---- */

/* Each stream announced and its context, in an open-addressed index (linear
 * probing, at most half full, grown by doubling) that a stream-ordered
 * allocation reads without a lock: writers hold the lock and move a
 * sequence number around each change, and a reader that saw it move (or
 * odd) asks again under the lock.  An index outgrown stays mapped: a reader
 * may still be in it. */
struct stream_slot {
    _Atomic uint64_t stream, ctx; /* stream 0: empty */
};
struct stream_index {
    size_t mask, used;
    struct stream_index *older; /* outgrown, kept for readers still in it */
    struct stream_slot slots[];
};
#define STREAM_SLOTS_MIN 64
static struct stream_index *_Atomic streams;
static gl_spinlock streams_lock = GL_SPINLOCK_INIT;
static GL_READ_MOSTLY _Atomic uint64_t streams_seq; /* odd while a writer changes the index */

static inline size_t stream_home(const struct stream_index *x, uint64_t stream)
{
    uint64_t z = stream * 0x9e3779b97f4a7c15ull; /* handles are aligned pointers */
    return (size_t)(z >> 32) & x->mask;
}

/* The slot holding stream, or the empty one where it would go. */
static size_t stream_find(const struct stream_index *x, uint64_t stream)
{
    size_t i = stream_home(x, stream);
    for (uint64_t s;
         (s = atomic_load_explicit(&x->slots[i].stream, memory_order_relaxed)) && s != stream;)
        i = (i + 1) & x->mask;
    return i;
}

/* Odd while a writer changes the index.  Made odd, not stepped: a fork
 * child may find it odd already, left by a writer of another thread. */
static void write_begin(void)
{
    atomic_store_explicit(&streams_seq,
                          atomic_load_explicit(&streams_seq, memory_order_relaxed) | 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void write_end(void)
{
    atomic_store_explicit(&streams_seq,
                          atomic_load_explicit(&streams_seq, memory_order_relaxed) + 1,
                          memory_order_release);
}

static struct stream_index *index_new(size_t count)
{
    size_t bytes = sizeof(struct stream_index) + count * sizeof(struct stream_slot);
    struct stream_index *x = gl_tool_alloc(bytes);
    if (x) {
        memset(x, 0, bytes);
        x->mask = count - 1;
    }
    return x;
}

/* Room for one more, under the lock and inside a write; false without memory. */
static bool index_room(void)
{
    struct stream_index *x = atomic_load_explicit(&streams, memory_order_relaxed);
    if (x && 2 * (x->used + 1) <= x->mask + 1)
        return true;
    struct stream_index *n = index_new(x ? 2 * (x->mask + 1) : STREAM_SLOTS_MIN);
    if (!n)
        return false;
    for (size_t i = 0; x && i <= x->mask; i++) {
        uint64_t s = atomic_load_explicit(&x->slots[i].stream, memory_order_relaxed);
        if (!s)
            continue;
        size_t j = stream_find(n, s);
        atomic_store_explicit(&n->slots[j].ctx, atomic_load(&x->slots[i].ctx),
                              memory_order_relaxed);
        atomic_store_explicit(&n->slots[j].stream, s, memory_order_relaxed);
        n->used++;
    }
    n->older = x;
    atomic_store_explicit(&streams, n, memory_order_release);
    return true;
}

/* Empty slot i, moving back each later slot of its run whose home is not
 * between i and it (cyclically): no slot becomes unreachable. */
static void slot_remove(struct stream_index *x, size_t i)
{
    for (size_t j = i;;) {
        j = (j + 1) & x->mask;
        uint64_t s = atomic_load_explicit(&x->slots[j].stream, memory_order_relaxed);
        if (!s)
            break;
        size_t home = stream_home(x, s);
        if (gl_util_cyclic_within(i, home, j))
            continue;
        atomic_store_explicit(&x->slots[i].ctx, atomic_load(&x->slots[j].ctx),
                              memory_order_relaxed);
        atomic_store_explicit(&x->slots[i].stream, s, memory_order_relaxed);
        i = j;
    }
    atomic_store_explicit(&x->slots[i].stream, 0, memory_order_relaxed);
    atomic_store_explicit(&x->slots[i].ctx, 0, memory_order_relaxed);
    x->used--;
}

/* Under the lock, inside a write. */
static void forget_locked(uint64_t stream)
{
    struct stream_index *x = atomic_load_explicit(&streams, memory_order_relaxed);
    if (!x)
        return;
    size_t i = stream_find(x, stream);
    if (atomic_load_explicit(&x->slots[i].stream, memory_order_relaxed))
        slot_remove(x, i);
}

void gl_contexts_stream_created(uint64_t stream, uint64_t ctx)
{
    if (stream <= 2)
        return;
    gl_spin_lock(&streams_lock);
    write_begin();
    if (ctx && index_room()) {
        struct stream_index *x = atomic_load_explicit(&streams, memory_order_relaxed);
        size_t i = stream_find(x, stream);
        if (!atomic_load_explicit(&x->slots[i].stream, memory_order_relaxed))
            x->used++;
        atomic_store_explicit(&x->slots[i].ctx, ctx, memory_order_relaxed);
        atomic_store_explicit(&x->slots[i].stream, stream, memory_order_relaxed);
    } else {
        forget_locked(stream); /* unknown rather than another stream's context */
    }
    write_end();
    gl_spin_unlock(&streams_lock);
}

void gl_contexts_stream_destroyed(uint64_t stream)
{
    gl_spin_lock(&streams_lock);
    write_begin();
    forget_locked(stream);
    write_end();
    gl_spin_unlock(&streams_lock);
}

static void forget_streams_of(uint64_t ctx)
{
    gl_spin_lock(&streams_lock);
    write_begin();
    struct stream_index *x = atomic_load_explicit(&streams, memory_order_relaxed);
    for (size_t i = 0; x && i <= x->mask;) {
        /* A removal pulls a later slot back into i: look at i again. */
        if (atomic_load_explicit(&x->slots[i].stream, memory_order_relaxed) &&
            atomic_load_explicit(&x->slots[i].ctx, memory_order_relaxed) == ctx)
            slot_remove(x, i);
        else
            i++;
    }
    write_end();
    gl_spin_unlock(&streams_lock);
}

static uint64_t stream_ctx_locked(uint64_t stream)
{
    gl_spin_lock(&streams_lock);
    struct stream_index *x = atomic_load_explicit(&streams, memory_order_relaxed);
    uint64_t ctx =
        x ? atomic_load_explicit(&x->slots[stream_find(x, stream)].ctx, memory_order_relaxed) : 0;
    gl_spin_unlock(&streams_lock);
    return ctx;
}

#ifdef GL_ASSERTIONS
void (*gl_contexts_test_between_reads)(void);
#endif

GL_HOT uint64_t gl_contexts_stream_ctx(uint64_t stream)
{
    if (stream <= 2) /* 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD: the current context's */
        return 0;
    uint64_t seq = atomic_load_explicit(&streams_seq, memory_order_acquire);
    const struct stream_index *x = atomic_load_explicit(&streams, memory_order_acquire);
    if (__builtin_expect((seq & 1) || !x, 0))
        return x ? stream_ctx_locked(stream) : 0;
    /* Bounded: a writer moving slots meanwhile could hide the empty one. */
    uint64_t ctx = 0;
    size_t i = stream_home(x, stream);
    for (size_t n = 0; n <= x->mask; n++, i = (i + 1) & x->mask) {
        uint64_t s = atomic_load_explicit(&x->slots[i].stream, memory_order_relaxed);
        if (s == stream) {
            ctx = atomic_load_explicit(&x->slots[i].ctx, memory_order_relaxed);
            break;
        }
        if (!s)
            break;
    }
#ifdef GL_ASSERTIONS
    if (gl_contexts_test_between_reads)
        gl_contexts_test_between_reads();
#endif
    atomic_thread_fence(memory_order_acquire);
    if (__builtin_expect(atomic_load_explicit(&streams_seq, memory_order_relaxed) != seq, 0))
        return stream_ctx_locked(stream);
    return ctx;
}

/* Every stream forgotten, under the lock (or alone in a fork child). */
static void clear_streams(void)
{
    write_begin();
    struct stream_index *x = atomic_load_explicit(&streams, memory_order_relaxed);
    for (size_t i = 0; x && i <= x->mask; i++) {
        atomic_store_explicit(&x->slots[i].stream, 0, memory_order_relaxed);
        atomic_store_explicit(&x->slots[i].ctx, 0, memory_order_relaxed);
    }
    if (x)
        x->used = 0;
    write_end();
}

static void after_fork(void)
{
    gl_spin_reset(&streams_lock);
    /* A writer of another thread may have been inside a change, which would
     * leave the index half moved: forgotten (the child's CUDA starts anew). */
    clear_streams();
    pthread_mutex_init(&lock, NULL);
}

static void reset(void)
{
    gl_spin_lock(&streams_lock);
    clear_streams();
    gl_spin_unlock(&streams_lock);
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots);
    for (unsigned i = 0; i < n; i++)
        atomic_store(&slots[i].ctx, 0);
    atomic_store(&nslots, 0);
    pthread_mutex_unlock(&lock);
}

const struct gl_component gl_contexts_component = {
    .name = "contexts",
    .reset = reset,
    .after_fork = after_fork,
};

const struct gl_placement gl_contexts_placement = {
    .context_device = gl_contexts_device,
};
