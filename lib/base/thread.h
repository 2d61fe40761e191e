/* SPDX-License-Identifier: MIT */
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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_TCACHE_SIZE 256
#define GL_PREFIX_MEMO 4
#define GL_PREFIX_MAX 24
#define GL_STAT_CELLS 8
#define GL_STAT_SLOTS_MAX 34     /* GL_STATS_SLOTS (mem_stats.h checks) */
#define GL_THREAD_PROF_PHASES 10 /* GL_PROF_NPHASES (prof.c checks) */
#define GL_STAT_KEY(slot, kind) (1u << 16 | (slot) << 8 | (kind))

/* A thread's pending share of one (device slot, kind) counter group, per size
 * split: written by the owner only (relaxed atomics: plain moves), read by
 * reports, moved to the shared group by stats.c. */
struct gl_stat_cell {
    /* A free reads and writes the first line alone; an allocation that
     * passes no peak, the first two. */
    uint32_t key;    /* the group it holds: GL_STAT_KEY(slot, kind); 0 = empty */
    uint32_t events; /* since the last flush */
    _Atomic int64_t cur_blocks[2], cur_bytes[2];
    /* Per split of an allocation: how many bytes and blocks the group may
     * still grow by, at least, before that split's peak or the group's
     * whole one is passed (stats.c); below 0, the peaks are checked. */
    int64_t room_bytes[2];
    int32_t room_blocks[2];
    uint64_t epoch; /* the process's flush count when taken */
    _Atomic int64_t alloc_blocks[2], alloc_bytes[2];
    /* The owner's view, refreshed at each flush: the shared group's live
     * counts per split, and its peaks (small, large, all) as last seen or
     * raised.  A peak check reads these, not the shared lines (stats.c). */
    int64_t seen_blocks[2], seen_bytes[2];
    uint64_t peak_blocks[3], peak_bytes[3];
} __attribute__((aligned(64)));

/* The owner's view of one device slot's shared figures, the same way: its
 * cells' live bytes not yet flushed, the shared live bytes and peak as last
 * seen, and whether it was taken (used) once. */
struct gl_stat_view {
    int64_t pending, seen;
    uint64_t peak, epoch;
    bool taken;
};

struct gl_table_node;
struct depot_entry;
struct gl_py_cache;
struct gl_stack_memo;
struct gl_mixed_memo;

struct gl_thread {
    /* What every CUDA call reads or writes comes first, in two cache lines:
     * in a real program a call finds this struct in the outer caches, and
     * pays a miss for each line it touches (bench/cold). */
    uint32_t tid;
    uint32_t seq_epoch; /* of the block of numbers below (tracker.c) */
    /* Depth of gpuleak_disable() calls: allocations made while it is above 0
     * are recorded but never reported (as LeakSanitizer's __lsan_disable). */
    int disabled;
    unsigned stat_last; /* the cell used last: the next event's likely one */
    /* The driver entry point whose hook this thread is in (observe/driver.h),
     * 0 when none: stacks captured meanwhile start with it. */
    uintptr_t call_entry;
    /* Allocation numbers handed to this thread in blocks: [seq_next, seq_end). */
    uint64_t seq_next, seq_end;
    struct gl_table_node *spare_node; /* a freed block's node, reused by the next free */
    /* Recent whole stacks and where their return addresses lie (stack_memo.h);
     * made on the thread's first walk to learn one. */
    struct gl_stack_memo *stack_memo;
    /* The last native-and-Python stacks interned (stack_capture.c): made on
     * the thread's first capture with Python frames. */
    struct gl_mixed_memo *_Atomic mixed_memo;
    struct gl_py_cache *py_cache; /* recent Python code objects (python_code.c) */
    /* Set while this thread reads memory gpuleak does not own: where a fault
     * returns to (read_guard.h; a sigjmp_buf *). */
    void *read_guard;
    /* The process's figures as this thread saw them (the owner's peak checks). */
    struct gl_stat_view stat_all;
    /* Usage counters not yet added to the process-wide ones (stats.c). */
    struct gl_stat_cell stat_cells[GL_STAT_CELLS];
    _Atomic unsigned stat_seq; /* odd while the owner flushes a cell */
    /* --save: the last two stacks this thread saw in the log it names
     * (save/log_writer.c), so that an event whose stack is one of them
     * reads no line of the log's bitmap. */
    uint32_t log_stacks[2], log_gen;
    /* By device slot, the same. */
    struct gl_stat_view stat_slot[GL_STAT_SLOTS_MAX];
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
    /* The allocation history's entries reserved for this thread (track/
     * history.c): [hist_next, hist_end), reserved when the counter read
     * hist_tsc, hist_next's slot in the ring (hist_next % the ring's size,
     * kept so that no event divides); and the events it recorded. */
    uint64_t hist_next, hist_end, hist_tsc, hist_slot;
    uint32_t hist_chunk; /* the size of the last chunk taken */
    _Atomic int64_t hist_events;
    /* GPULEAK_BENCH=profile's ticks and calls per phase (base/prof.h), the
     * owner's alone: process-wide adds, two a phase, made the 16-thread
     * profile time its own contention. */
    _Atomic int64_t prof_ticks[GL_THREAD_PROF_PHASES], prof_calls[GL_THREAD_PROF_PHASES];
    struct gl_thread *next; /* registry */
    _Atomic int live;
};
_Static_assert(offsetof(struct gl_thread, stat_all) + sizeof(struct gl_stat_view) <= 128,
               "the fields of every call in the struct's first two lines");

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

/* Move an owner-written counter: a plain load and store, no locked instruction. */
static inline void gl_thread_add(_Atomic int64_t *c, int64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* The registry of thread structs, exited ones included (they are reused), for
 * readers that sum per-thread counters: walk it between lock and unlock. */
void gl_thread_registry_lock(void);
struct gl_thread *gl_thread_registry(void);
void gl_thread_registry_unlock(void);

/* Called when a thread exits, before its struct is freed for reuse: give back
 * what it holds (the tracker's spare node, mem_stats' pending counters). */
typedef void (*gl_thread_retire_fn)(struct gl_thread *t);
void gl_thread_add_retire(gl_thread_retire_fn fn);

/* Tests: forget every thread's counters and spare nodes (their tables are gone). */
void gl_thread_reset(void);

/* Start a detached thread of gpuleak's own (the save helper, the clock
 * thread), named name (15 characters at most) with a stack of stack_bytes,
 * every signal blocked in it so that the program's handlers never run on
 * it.  False when it could not be made. */
bool gl_thread_start_tool(const char *name, void *(*fn)(void *), size_t stack_bytes);

/* In a fork child: only the forking thread exists; its id changed. */
void gl_thread_after_fork_child(void);

#endif
