/* SPDX-License-Identifier: MIT */
#include "track/history.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "base/prefetch.h"
#include "base/thread.h"
#include "base/ticker.h"
#include "base/tool.h"
#include "common/clock.h"
#include "event/event.h"
#include "event/key.h"
#include "event/mem_kind.h"
#include "base/gl_uthash.h"
#include "track/errors.h"

/* An entry and the position that wrote it (1-based: 0 is "being written"):
 * one cache line, so that an event writes one line. */
struct slot {
    struct gl_history_entry e;
    _Atomic uint64_t stamp; /* position + 1 once complete; WRITING while claimed */
};
#define WRITING (1ULL << 63)
_Static_assert(sizeof(struct slot) == 64, "a slot is one cache line");

/* Busy threads take positions in chunks, so that they neither share a
 * counter nor write into one another's cache lines: one atomic add per
 * chunk.  A chunk doubles, up to CHUNK, each time a thread fills the last one
 * within CHUNK_TICKS (about a millisecond), and is one position again after
 * a pause: a thread that stops with a chunk half used leaves at most the
 * other half unused, never a whole chunk per event.  A thread keeps a chunk
 * no longer than CHUNK_TICKS, so that it never writes where the ring has
 * come round again: chunks need a ring of CHUNK_RING positions at least,
 * more than any number of threads can take in that time. */
#define CHUNK 64
#define CHUNK_TICKS (1ULL << 21)
#define CHUNK_RING 65536

/* An entry's time, on one of two clocks.  While one thread alone records,
 * its positions are the order and the time only labels the event: the
 * clock thread's word (base/ticker.h), read in one load.  Once a second thread records, threads'
 * chunks interleave and only a fine time can put them back in order: the
 * time-stamp counter, whose read cost 60 ns a pair more where the program
 * leaves the caches cold between calls (bench/RESULTS.md).  Entries made on
 * the counter carry FINE in their action until read out. */
#define FINE 0x80

static struct {
    struct slot *ring;
    size_t cap, bytes;
    uint64_t chunk;                 /* positions a thread takes at once */
    _Atomic uint64_t next;          /* positions handed out */
    _Atomic uint64_t orphan_events; /* recorded by threads with no state */
    /* The one thread recording so far; fine once another has. */
    _Atomic(struct gl_thread *) owner;
    _Atomic bool fine;
    /* Live: the time-stamp counter, CLOCK_MONOTONIC and CLOCK_REALTIME at
     * start, to turn ticks into Unix time.  Replay: the times given. */
    uint64_t tsc0, mono0;
    int64_t real0;
    bool given;
    int64_t epoch_ns;
} h;

static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return gl_clock_ns();
#endif
}

static void forget(void)
{
    atomic_store(&h.next, 0);
    atomic_store(&h.orphan_events, 0);
    atomic_store(&h.owner, NULL);
    atomic_store(&h.fine, false);
    gl_thread_registry_lock();
    for (struct gl_thread *t = gl_thread_registry(); t; t = t->next) {
        t->hist_next = t->hist_end = t->hist_slot = 0;
        t->hist_chunk = 0;
        atomic_store_explicit(&t->hist_events, 0, memory_order_relaxed);
    }
    gl_thread_registry_unlock();
}

/* The ring's pages made present now, before the first event: on the H200's
 * VM each first touch of a page cost microseconds inside the CUDA call, and
 * sixteen threads faulting at once serialize on the process's page tables
 * (+7.8 us per pair per thread at 16 threads, bench/RESULTS.md).  Huge pages
 * where the kernel gives them; else every page written once. */
static void populate(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    gl_tool_populate(p, bytes);
}

bool gl_history_configure(size_t max_entries)
{
    if (h.ring)
        gl_tool_unmap(h.ring, h.bytes);
    h.ring = NULL;
    h.cap = h.bytes = 0;
    forget();
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    h.mono0 = gl_clock_ns();
    h.tsc0 = ticks();
    h.real0 = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec;
    h.given = false;
    if (!max_entries)
        return true;
    h.bytes = gl_tool_page_round(max_entries * sizeof *h.ring);
    h.ring = gl_tool_map(h.bytes);
    if (!h.ring) {
        h.bytes = 0;
        return false;
    }
    populate(h.ring, h.bytes);
    h.cap = max_entries;
    h.chunk = max_entries >= CHUNK_RING ? CHUNK : 1;
    return true;
}

bool gl_history_on(void) { return h.cap > 0; }

void gl_history_use_event_times(int64_t epoch_ns)
{
    h.given = true;
    h.epoch_ns = epoch_ns;
}

/* Device memory only: what the viewer draws is one device's memory, and host
 * memory (pinned, registered) has none. */
static void put(const struct gl_event *ev, const struct gl_block_info *blk, uint8_t action)
{
    int device = blk ? blk->device : ev->device;
    unsigned kind = blk ? blk->kind : ev->kind;
    /* A block whose size is not known (IPC, imported handles) has no place
     * in the viewer's picture: the segments leave it out too. */
    if (device < 0 || !gl_mem_kind_counted(kind) || (blk && (blk->flags & GL_BLK_SIZE_UNKNOWN)))
        return;
    struct gl_thread *t = gl_thread_self();
    bool fine = atomic_load_explicit(&h.fine, memory_order_relaxed);
    if (!fine && atomic_load_explicit(&h.owner, memory_order_relaxed) != t) {
        struct gl_thread *none = NULL;
        if (!t || !atomic_compare_exchange_strong(&h.owner, &none, t))
            atomic_store(&h.fine, fine = true);
    }
    uint64_t now = h.given ? 0 : fine ? ticks() : gl_ticker_ns();
    uint64_t pos, slot;
    if (t && t->hist_next < t->hist_end && now - t->hist_tsc < CHUNK_TICKS) {
        pos = t->hist_next++;
        slot = t->hist_slot;
    } else {
        uint64_t want = 1;
        if (t && h.chunk > 1) {
            bool busy =
                t->hist_end && t->hist_next == t->hist_end && now - t->hist_tsc < CHUNK_TICKS;
            want = busy ? (t->hist_chunk * 2 < h.chunk ? t->hist_chunk * 2 : h.chunk) : 1;
        }
        pos = atomic_fetch_add_explicit(&h.next, want, memory_order_relaxed);
        slot = pos % h.cap; /* once a chunk: a division costs more than the rest */
        if (t) {
            t->hist_next = pos + 1;
            t->hist_end = pos + want;
            t->hist_tsc = now;
            t->hist_chunk = (uint32_t)want;
        }
    }
    if (t)
        gl_thread_add(&t->hist_events, 1);
    else
        atomic_fetch_add_explicit(&h.orphan_events, 1, memory_order_relaxed);
    uint64_t next_slot = slot + 1 == h.cap ? 0 : slot + 1;
    if (t)
        t->hist_slot = next_slot;
    struct slot *s = &h.ring[slot];
    /* The thread's next slot, fetched for writing while the program works
     * between two calls: a slot is one cache line the ring has not touched
     * for a lap, and waiting for it inside the call costs every thread
     * queued behind this one (bench/RESULTS.md). */
    if (t && t->hist_next < t->hist_end)
        gl_prefetch_write(&h.ring[next_slot]);
    /* Claimed first, as the quarantine claims its slots: a reader at exit
     * never takes a half-written entry for a complete one, and two writers
     * never share the slot (a thread stopped for a lap of the ring mid-write,
     * or any two with a ring of a few entries: a reader would take their
     * mixed fields for one entry).  A slot claimed by another writer, or
     * already holding a later position, is given up: the entry is one the
     * reader counts as dropped. */
    uint64_t cur = atomic_load_explicit(&s->stamp, memory_order_relaxed);
    if ((cur & WRITING) || cur > pos + 1 ||
        !atomic_compare_exchange_strong_explicit(&s->stamp, &cur, (pos + 1) | WRITING,
                                                 memory_order_acquire, memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    struct gl_history_entry *e = &s->e;
    e->time_ns = h.given ? ev->time_ns : now;
    e->action = (uint8_t)(action | (fine && !h.given ? FINE : 0));
    e->device = (int16_t)device;
    e->kind = (uint8_t)kind;
    if (blk) {
        e->key = blk->key;
        e->size = blk->size;
        e->stream = kind == GL_MEM_ASYNC ? blk->aux : 0;
        e->seq = blk->seq;
        e->stack = blk->stack;
        e->dev_free = 0;
    } else { /* an allocation refused */
        e->key = 0;
        e->size = ev->size;
        e->stream = ev->kind == GL_MEM_ASYNC ? ev->aux : 0;
        e->seq = 0;
        e->stack = ev->stack;
        uint64_t total = 0;
        e->dev_free = 0;
        /* A replay's device is not this machine's: unknown. */
        if (gl_errors_device_memory && !h.given)
            gl_errors_device_memory(device, &e->dev_free, &total);
    }
    atomic_store_explicit(&s->stamp, pos + 1, memory_order_release);
}

static void on_alloc(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (blk && !(ev->flags & GL_EVF_FAILED))
        put(ev, blk, GL_HIST_ALLOC);
}

/* Every block gone, a context's too (one derived free each). */
static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (blk && !(ev->flags & GL_EVF_FAILED))
        put(ev, blk, GL_HIST_FREE);
}

static void on_alloc_failed(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    put(ev, NULL, GL_HIST_OOM);
}

/* ---- reading the window, at exit ---- */

/* The reordering's indexes, each entry in one slab: by allocation number,
 * the window's allocations and frees; by key, the block live there now and
 * the frees of blocks allocated before the window. */
struct by_seq {
    uint64_t seq;
    size_t at; /* index in the window */
    UT_hash_handle hh;
};
struct by_key {
    uint64_t key;
    uint64_t seq;  /* live: the block there now (0: none) */
    size_t orphan; /* the first of its frees of older blocks, + 1 (0: none) */
    UT_hash_handle hh;
};

static struct by_key *key_entry(struct by_key **map, struct by_key *slab, size_t *n, uint64_t key)
{
    struct by_key *k;
    HASH_FIND(hh, *map, &key, sizeof key, k);
    if (!k) {
        k = &slab[(*n)++];
        *k = (struct by_key){.key = key};
        HASH_ADD(hh, *map, key, sizeof k->key, k);
    }
    return k;
}

/* Put each free before an allocation at its address made while its block
 * still looked live: the two calls overlapped on two threads, and the free's
 * observer ran last.  The block freed may have been allocated inside the
 * window (its number says which) or before it (an "orphan" free: the first
 * allocation at its address in the window, of a newer block, comes after
 * it). */
size_t gl_history_order(const struct gl_history_entry *in, size_t n, struct gl_history_entry *out)
{
    struct by_seq *allocs = NULL, *frees = NULL, *sslab = NULL;
    struct by_key *keys = NULL, *kslab = NULL;
    size_t *next_orphan = NULL; /* a free of an older block: the next at its key, + 1 */
    bool *moved = NULL;
    size_t ns = 0, nk = 0, m = 0;
    if (n) {
        sslab = calloc(n, sizeof *sslab);
        kslab = calloc(n, sizeof *kslab);
        next_orphan = calloc(n, sizeof *next_orphan);
        moved = calloc(n, sizeof *moved);
    }
    if (n && (!sslab || !kslab || !next_orphan || !moved)) { /* no room to check: as recorded */
        memcpy(out, in, n * sizeof *in);
        m = n;
        goto done;
    }
    struct by_seq *f, *a;
    for (size_t i = 0; i < n; i++) {
        if (!in[i].seq)
            continue;
        struct by_seq **map = in[i].action == GL_HIST_ALLOC  ? &allocs
                              : in[i].action == GL_HIST_FREE ? &frees
                                                             : NULL;
        if (!map)
            continue;
        HASH_FIND(hh, *map, &in[i].seq, sizeof(uint64_t), f);
        if (!f) {
            f = &sslab[ns++];
            *f = (struct by_seq){.seq = in[i].seq, .at = i};
            HASH_ADD(hh, *map, seq, sizeof f->seq, f);
        }
    }
    /* Orphan frees, in order, per key. */
    size_t *last = calloc(n ? n : 1, sizeof *last);
    for (size_t i = 0; last && i < n; i++) {
        if (in[i].action != GL_HIST_FREE || !in[i].seq)
            continue;
        HASH_FIND(hh, allocs, &in[i].seq, sizeof(uint64_t), a);
        if (a)
            continue;
        struct by_key *k = key_entry(&keys, kslab, &nk, in[i].key);
        if (!k->orphan)
            k->orphan = i + 1;
        else
            next_orphan[last[k - kslab]] = i + 1;
        last[k - kslab] = i;
    }
    free(last);
    for (size_t i = 0; i < n; i++) {
        const struct gl_history_entry *e = &in[i];
        if (moved[i])
            continue;
        if (e->action == GL_HIST_ALLOC) {
            struct by_key *k = key_entry(&keys, kslab, &nk, e->key);
            size_t late = 0; /* + 1 */
            if (k->seq && k->seq != e->seq) {
                HASH_FIND(hh, frees, &k->seq, sizeof(uint64_t), f);
                if (f && f->at > i && !moved[f->at])
                    late = f->at + 1;
            } else if (!k->seq) {
                /* The next orphan free at this key, if it comes after. */
                while (k->orphan && (moved[k->orphan - 1] || k->orphan - 1 < i))
                    k->orphan = next_orphan[k->orphan - 1];
                if (k->orphan && in[k->orphan - 1].seq < e->seq)
                    late = k->orphan;
            }
            if (late) {
                out[m] = in[late - 1];
                out[m].time_ns = e->time_ns; /* the same moment */
                m++;
                moved[late - 1] = true;
            }
            k->seq = e->seq;
        } else if (e->action == GL_HIST_FREE) {
            struct by_key *k;
            HASH_FIND(hh, keys, &e->key, sizeof(uint64_t), k);
            if (k && k->seq == e->seq)
                k->seq = 0;
        }
        out[m++] = *e;
    }
done:
    HASH_CLEAR(hh, allocs);
    HASH_CLEAR(hh, frees);
    HASH_CLEAR(hh, keys);
    free(sslab);
    free(kslab);
    free(next_orphan);
    free(moved);
    return m;
}

struct timed {
    uint64_t time;
    size_t at;
};

static int by_time_cmp(const void *a, const void *b)
{
    const struct timed *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Events recorded since the start: every thread's count. */
static uint64_t recorded(void)
{
    uint64_t n = atomic_load(&h.orphan_events);
    gl_thread_registry_lock();
    for (struct gl_thread *t = gl_thread_registry(); t; t = t->next)
        n += (uint64_t)atomic_load_explicit(&t->hist_events, memory_order_relaxed);
    gl_thread_registry_unlock();
    return n;
}

size_t gl_history_read(struct gl_history_entry **out, size_t *bytes, uint64_t *dropped)
{
    *out = NULL;
    *bytes = 0;
    *dropped = 0;
    uint64_t end = atomic_load_explicit(&h.next, memory_order_acquire);
    if (!h.cap || !end)
        return 0;
    uint64_t start = end > h.cap ? end - h.cap : 0;
    size_t n = (size_t)(end - start);
    /* Two copies of the window and an index: 56 + 56 + 16 bytes an entry. */
    size_t want = gl_tool_page_round(n * sizeof **out);
    struct gl_history_entry *win = gl_tool_map(want);
    struct gl_history_entry *tmp = malloc(n * sizeof *tmp);
    struct timed *by_time = malloc(n * sizeof *by_time);
    if (!tmp || !win || !by_time) {
        free(tmp);
        free(by_time);
        if (win)
            gl_tool_unmap(win, want);
        *dropped = recorded();
        return 0;
    }
    size_t k = 0;
    for (uint64_t pos = start; pos < end; pos++) {
        const struct slot *s = &h.ring[pos % h.cap];
        if (atomic_load_explicit(&s->stamp, memory_order_acquire) != pos + 1)
            continue; /* still being written, or already written over, or never used */
        win[k] = s->e;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->stamp, memory_order_relaxed) == pos + 1)
            k++;
    }
    /* The order: while one thread recorded, the positions' (coarse times,
     * read by position); then the counter's, which puts the threads' chunks
     * back in one order (the position decides between equal times).  An
     * entry or two of the first thread may race the switch: they go first. */
    for (size_t i = 0; i < k; i++)
        by_time[i] =
            (win[i].action & FINE) ? (struct timed){win[i].time_ns, i} : (struct timed){0, i};
    qsort(by_time, k, sizeof *by_time, by_time_cmp);
    /* Ticks to Unix time, at the counter's rate over the run so far; the
     * clock thread's ns (CLOCK_MONOTONIC) from the reading at start. */
    double ns_per_tick = 1.0;
    uint64_t now_mono = gl_clock_ns(), now_tsc = ticks();
    if (now_tsc > h.tsc0 && now_mono > h.mono0)
        ns_per_tick = (double)(now_mono - h.mono0) / (double)(now_tsc - h.tsc0);
    for (size_t i = 0; i < k; i++) {
        struct gl_history_entry *e = &win[i];
        if (h.given)
            e->time_ns = (uint64_t)(h.epoch_ns + (int64_t)e->time_ns);
        else if (e->action & FINE)
            e->time_ns = (uint64_t)(h.real0 + (int64_t)((double)(int64_t)(e->time_ns - h.tsc0) *
                                                        ns_per_tick));
        else
            e->time_ns = (uint64_t)(h.real0 + ((int64_t)e->time_ns - (int64_t)h.mono0));
        e->action &= (uint8_t)~FINE;
    }
    /* In order, times never go back: two clocks meet at the switch (the
     * coarse one a tick late, the counter's rate an estimate). */
    for (size_t i = 0; i < k; i++) {
        tmp[i] = win[by_time[i].at];
        if (i && tmp[i].time_ns < tmp[i - 1].time_ns)
            tmp[i].time_ns = tmp[i - 1].time_ns;
    }
    free(by_time);
    size_t m = gl_history_order(tmp, k, win);
    free(tmp);
    *out = win;
    *bytes = want;
    uint64_t events = recorded();
    *dropped = events > m ? events - m : 0;
    return m;
}

void gl_history_peaks(const struct gl_history_entry *e, size_t n, struct gl_history_peak *out,
                      unsigned ndevices)
{
    uint64_t *live = calloc(ndevices ? ndevices : 1, sizeof *live);
    memset(out, 0, ndevices * sizeof *out);
    for (size_t i = 0; live && i < n; i++) {
        if (e[i].device < 0 || (unsigned)e[i].device >= ndevices)
            continue;
        uint64_t *l = &live[e[i].device];
        if (e[i].action == GL_HIST_ALLOC) {
            *l += e[i].size;
            if (*l > out[e[i].device].bytes)
                out[e[i].device] = (struct gl_history_peak){*l, e[i].seq, e[i].stack};
        } else if (e[i].action == GL_HIST_FREE) {
            *l = *l > e[i].size ? *l - e[i].size : 0;
        }
    }
    free(live);
}

static bool wanted(void) { return h.cap > 0; }

static const struct gl_consumer consumer = {
    .on =
        {[GL_EV_ALLOC] = on_alloc, [GL_EV_FREE] = on_free, [GL_EV_ALLOC_FAILED] = on_alloc_failed},
    .wanted = wanted,
};

/* A fork child's device memory is its own: the parent's history is not. */
const struct gl_component gl_history_component = {
    .name = "history", .reset = forget, .after_fork = forget, .consumer = &consumer};
