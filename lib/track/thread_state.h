/* Per-thread state of the tracker, one pointer away.
 *
 * The hot path needs, per thread: its kernel id, its counters, a recycled table
 * node and a cache of recent stacks.  They live in one struct reached through a
 * single initial-exec TLS pointer (one %fs-relative load), so the runtime's
 * static TLS stays at 8 bytes and dlopen() of the runtime without LD_PRELOAD
 * still finds room for it.  Structs are made on a thread's first event from
 * tool memory and recycled when threads exit; the counters of exited threads
 * are folded into process-wide totals. */
#ifndef GPULEAK_THREAD_STATE_H
#define GPULEAK_THREAD_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GL_TCACHE_SIZE 256
#define GL_PREFIX_MEMO 4
#define GL_PREFIX_MAX 24

struct gl_table_node;
struct depot_entry;

struct gl_thread {
    uint32_t tid;
    uint32_t seq_epoch; /* of the block of numbers below (tracker.c) */
    /* Written by the owner only (relaxed atomics: plain moves), summed by reports. */
    _Atomic uint64_t allocs, frees, bytes_allocated;
    /* Live bytes this thread added (or removed) and has not yet flushed to the
     * process-wide count (tracker.c); can go negative when it frees others' blocks. */
    _Atomic int64_t live_delta;
    /* Allocation numbers handed to this thread in blocks: [seq_next, seq_end). */
    uint64_t seq_next, seq_end;
    struct gl_table_node *spare_node; /* a freed block's node, reused by the next insert */
    struct {
        uint64_t hash;
        struct depot_entry *e;
    } tcache[GL_TCACHE_SIZE];
    /* The last few internal stack prefixes (gpuleak, CUPTI, driver frames) and
     * where each ends: the same entry path gives the same prefix every time. */
    struct {
        uint8_t len;         /* internal frames; 0 = empty slot */
        uint8_t keep;        /* index of the first kept frame within the prefix */
        unsigned generation; /* of the module ranges it was classified with */
        uintptr_t ips[GL_PREFIX_MAX];
    } prefix[GL_PREFIX_MEMO];
    unsigned prefix_next;
    /* Depth of gpuleak_disable() calls: allocations made while it is above 0
     * are recorded but never reported (as LeakSanitizer's __lsan_disable). */
    int disabled;
    struct gl_thread *next; /* registry */
    _Atomic int live;
};

extern __thread struct gl_thread *gl_thread_cur __attribute__((tls_model("initial-exec")));

struct gl_thread *gl_thread_make(void);

/* Create the thread-exit key.  Called from the runtime's constructor, before the
 * program makes keys of its own: glibc stores the first 32 keys' values inline and
 * only later ones in blocks it mallocs, which must not happen inside a callback. */
void gl_thread_init(void);

/* The calling thread's state, made on first use; NULL only if memory ran out. */
static inline struct gl_thread *gl_thread_self(void)
{
    struct gl_thread *t = gl_thread_cur;
    return __builtin_expect(t != NULL, 1) ? t : gl_thread_make();
}

static inline uint32_t gl_thread_id(void)
{
    struct gl_thread *t = gl_thread_self();
    return t ? t->tid : 0;
}

static inline void gl_thread_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Sums over all threads, exited ones included. */
struct gl_thread_totals {
    uint64_t allocs, frees, bytes_allocated;
    int64_t live_delta; /* unflushed live bytes of all threads */
};
void gl_thread_totals(struct gl_thread_totals *out);

/* Release a spare node when a thread exits: set by the tracker. */
typedef void (*gl_thread_spare_release_fn)(struct gl_table_node *n);
void gl_thread_set_spare_release(gl_thread_spare_release_fn fn);

/* Tests: forget every thread's counters and spare nodes (their tables are gone). */
void gl_thread_reset(void);

/* In a fork child: only the forking thread exists; its id changed. */
void gl_thread_after_fork_child(void);

#endif
