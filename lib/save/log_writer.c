/* SPDX-License-Identifier: MIT */
#include "save/log_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "base/prefetch.h"
#include "base/spin.h"
#include "base/thread.h"
#include "base/ticker.h"
#include "base/tool.h"
#include "common/clock.h"
#include "python/py_code.h"
#include "python/py_frames.h"
#include "save/log_modules.h"
#include "stack/stack_depot.h"
#include "track/errors.h"

#define FIRST_SIZE (4u << 20) /* the file's first extent; each growth doubles it */
#define LIMIT_ROOM 64         /* kept below the limit for the LIMIT record */
#define STACK_BITS (1u << 22) /* stack and code ids remembered as written */

/* The staging ring (save/log_format.h): GL_LOG_WRITER_RING_SLOTS slots in
 * the file, 4.5 MiB: large enough that a slot's line has left the helper's
 * cache when a writer comes back to it (a smaller ring cost the calling
 * thread more, bench/RESULTS.md "The staging ring").  The helper is woken
 * when a writer finds half of it waiting (checked once every WAKE_EVERY
 * slots taken: one futex call per tens of thousands of events), so that the
 * ring fills only when the helper gets no CPU; a writer finding it full
 * compacts itself.  Compacting publishes the free room every PUBLISH_EVERY
 * slots: the writers' line is written that rarely. */
#define RING_SLOTS GL_LOG_WRITER_RING_SLOTS
#define WAKE_EVERY 512u
#define WAKE_BACKLOG (RING_SLOTS / 2)
#define PUBLISH_EVERY 512u
#define FLUSH_WAIT_NS 50000000u /* the longest a flush waits for a slot being stored */

static struct {
    /* What every event reads and writes, in one cache line: the program
     * between two calls leaves it cold, and each line is a miss
     * (bench/RESULTS.md). */
    _Alignas(64) _Atomic bool staging; /* events are staged: open, not stopped */
    _Atomic bool active;               /* the log is open (this process's) */
    uint8_t *ring;
    _Atomic uint64_t head; /* slots taken */
    _Atomic uint64_t room; /* slots below it may be taken: compacted + RING_SLOTS */
    uint64_t clock0;
    _Atomic uint64_t *stack_bits;
    uint32_t gen; /* logs opened in this process: threads' stack caches name one */
    /* Records written directly: stacks, code objects, modules, marks... */
    _Alignas(64) _Atomic bool stopped;
    uint8_t *base; /* the mapping, limit bytes */
    uint64_t limit;
    _Atomic uint64_t length;    /* bytes reserved */
    _Atomic uint64_t file_size; /* bytes the file holds */
    int fd;
    pid_t pid;
    gl_spinlock grow_lock;
    uint64_t tsc0;
    _Atomic uint64_t *code_bits;
    /* Modules: scanned by the helper thread when a frame lies in none known. */
    pthread_mutex_t scan_lock;
    _Atomic uint32_t wake;
    bool helper;
    /* The compactor's: whoever holds `compactor` (a thread id) owns tail. */
    _Alignas(64) _Atomic int compactor;
    _Atomic uint64_t tail;    /* slots compacted */
    _Atomic uint64_t dropped; /* events a full ring made a re-entered writer drop */
} w = {.fd = -1, .scan_lock = PTHREAD_MUTEX_INITIALIZER};

/* A slot is the event as it lies in memory (save/log_format.h's layout). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "slots are little-endian");
_Static_assert(offsetof(struct gl_event, api) == 2 && offsetof(struct gl_event, device) == 4 &&
                   offsetof(struct gl_event, flags) == 6 && offsetof(struct gl_event, tid) == 8 &&
                   offsetof(struct gl_event, stack) == 12 && offsetof(struct gl_event, key) == 16 &&
                   offsetof(struct gl_event, aux) == 48 && offsetof(struct gl_event, time_ns) == 56,
               "struct gl_event is the slot's layout");
_Static_assert(GL_EV_NTYPES < GL_LOG_SLOT_ERROR_STACK, "the error stack's slot type is free");

/* ---- the file ---- */

/* Make the file hold at least need bytes.  Space is allocated, not just
 * promised: a page of a sparse file written when the disk is full would kill
 * the program with SIGBUS. */
static bool grow(uint64_t need)
{
    /* fallocate is a cancellation point: a thread cancelled inside would
     * hold grow_lock for good. */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    gl_spin_lock(&w.grow_lock);
    uint64_t size = atomic_load_explicit(&w.file_size, memory_order_relaxed);
    bool ok = true;
    if (need > size) {
        uint64_t to = size ? size : FIRST_SIZE;
        while (to < need)
            to *= 2;
        if (to > w.limit)
            to = w.limit;
        int rc = -1; /* past the limit: not grown */
        if (to >= need) {
            rc = fallocate(w.fd, 0, (off_t)size, (off_t)(to - size));
            if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
                rc = ftruncate(w.fd, (off_t)to);
        }
        if (rc == 0)
            atomic_store_explicit(&w.file_size, to, memory_order_release);
        else
            ok = false;
    }
    gl_spin_unlock(&w.grow_lock);
    pthread_setcancelstate(cancel_state, NULL);
    return ok;
}

static void finish(uint8_t *at, unsigned type, const uint8_t *body, size_t n)
{
    __atomic_store_n((uint32_t *)at, gl_log_format_head(type, body, n), __ATOMIC_RELEASE);
}

/* Past the limit or the file's size: the slow part of reserve, out of line.
 * The first writer past the limit leaves a LIMIT record where its own would
 * have gone. */
static __attribute__((noinline)) uint8_t *reserve_slow(uint64_t at, size_t span)
{
    if (at + span > w.limit - LIMIT_ROOM) {
        /* Staging stops too: the ring keeps the events not yet compacted,
         * which a reader takes from it (they came before the limit). */
        atomic_store(&w.staging, false);
        if (at + 4 <= w.limit && !atomic_exchange(&w.stopped, true) &&
            (at + 4 <= atomic_load_explicit(&w.file_size, memory_order_acquire) || grow(at + 4)))
            finish(w.base + at, GL_LOG_LIMIT, NULL, 0);
        return NULL;
    }
    if (at + span > atomic_load_explicit(&w.file_size, memory_order_acquire) && !grow(at + span)) {
        atomic_store(&w.staging, false);
        atomic_store(&w.stopped, true); /* no space: what follows is lost */
        return NULL;
    }
    return w.base + at;
}

/* Room for a record of n body bytes, or NULL (stopped).  After
 * gl_log_writer_close, every reservation lands past the limit and writes
 * nothing. */
static inline __attribute__((always_inline)) uint8_t *reserve(size_t n)
{
    size_t span = gl_log_format_span(n);
    uint64_t at = atomic_fetch_add_explicit(&w.length, span, memory_order_relaxed);
    if (__builtin_expect(at + span > w.limit - LIMIT_ROOM ||
                             at + span > atomic_load_explicit(&w.file_size, memory_order_acquire),
                         0))
        return reserve_slow(at, span);
    return w.base + at;
}

static void write_clock(void);

/* What the helper is woken for (bits of w.wake). */
#define WAKE_MODULES 1u
#define WAKE_AHEAD 2u
#define WAKE_RING 4u

static void wake_helper(uint32_t why)
{
    if (w.helper && !(atomic_fetch_or(&w.wake, why) & why))
        syscall(SYS_futex, &w.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The room for a record of n body bytes, the body copied in; NULL when the
 * log is stopped.  The caller stores the head. */
static inline uint8_t *place(const uint8_t *body, size_t n)
{
    if (atomic_load_explicit(&w.stopped, memory_order_relaxed))
        return NULL;
    uint8_t *at = reserve(n);
    if (at)
        memcpy(at + 4, body, n);
    return at;
}

/* The same for an event's body, followed by zeros to its next multiple of 8:
 * copied in words up to the record's padding (a multiple of 4, never past
 * its span), without a call into the C library's memcpy.  The line 1 KiB
 * ahead is fetched for writing meanwhile: the file's pages are populated
 * ahead, but their lines are long out of cache. */
static inline __attribute__((always_inline)) uint8_t *place_event(const uint8_t *body, size_t n)
{
    if (atomic_load_explicit(&w.stopped, memory_order_relaxed))
        return NULL;
    uint8_t *at = reserve(n);
    if (!at)
        return NULL;
    gl_prefetch_write(at + 1024);
    size_t i = 0, to = (n + 3) & ~(size_t)3;
    for (; i + 8 <= to; i += 8) {
        uint64_t v;
        memcpy(&v, body + i, 8);
        memcpy(at + 4 + i, &v, 8);
    }
    if (i < to) {
        uint32_t v;
        memcpy(&v, body + i, 4);
        memcpy(at + 4 + i, &v, 4);
    }
    return at;
}

static void append(unsigned type, const uint8_t *body, size_t n)
{
    uint8_t *at = place(body, n);
    if (at)
        finish(at, type, at + 4, n);
}

/* The hot path's: body is followed by zeros to its next multiple of 8 (the
 * straight-line check), and every MiB of the file gets a clock pair. */
static inline void append_padded(unsigned type, const uint8_t *body, size_t n)
{
    uint8_t *at = place_event(body, n);
    if (!at)
        return;
    __atomic_store_n((uint32_t *)at,
                     gl_log_format_pack_head(type, gl_log_format_check_padded(body, n), n),
                     __ATOMIC_RELEASE);
    uint64_t off = (uint64_t)(at - w.base);
    if ((off >> 20) != ((off + gl_log_format_span(n)) >> 20)) {
        write_clock();
        wake_helper(WAKE_AHEAD);
    }
}

static inline uint64_t ticks(void) { return __rdtsc() - w.tsc0; }

/* An event's time (format version 2 on): the clock thread's word
 * (base/ticker.h), one load where the counter took twenty ns and the coarse
 * clock ten, twice a pair (bench/RESULTS.md); the order is the file's.  At
 * least 1: a time of 0 means none (the trace file puts its own clock there).
 * The start is the thread's own time (gl_log_writer_open), so only a read
 * across its sleep, a tick early, comes before it. */
static inline uint64_t event_time(void)
{
    uint64_t now = gl_ticker_ns();
    return now > w.clock0 ? now - w.clock0 : 1;
}

static void write_clock(void)
{
    uint8_t body[2 * GL_LOG_VARINT_MAX];
    size_t n = gl_log_format_put(body, ticks());
    n += gl_log_format_put(body + n, gl_clock_ns() - w.clock0);
    append(GL_LOG_CLOCK, body, n);
}

/* ---- encoding helpers ---- */

static size_t put_bytes(uint8_t *p, const void *s, size_t len)
{
    size_t n = gl_log_format_put(p, len);
    memcpy(p + n, s, len);
    return n + len;
}

static size_t put_str(uint8_t *p, const char *s)
{
    return put_bytes(p, s ? s : "", s ? strlen(s) : 0);
}

/* Set bit id of bits; whether it was clear (ids past the map: always). */
static bool first_sight(_Atomic uint64_t *bits, uint32_t id)
{
    if (!bits || id >= STACK_BITS)
        return true;
    uint64_t bit = UINT64_C(1) << (id % 64);
    _Atomic uint64_t *word = &bits[id / 64];
    if (atomic_load_explicit(word, memory_order_relaxed) & bit)
        return false;
    return !(atomic_fetch_or_explicit(word, bit, memory_order_relaxed) & bit);
}

static void write_code(uint32_t id)
{
    const struct gl_py_code *c = gl_py_code_get(id);
    if (!c)
        return;
    size_t file = strlen(c->file ? c->file : ""), func = strlen(c->function ? c->function : "");
    size_t table = c->table ? c->table_len : 0;
    size_t fixed = 5 * GL_LOG_VARINT_MAX + file + func + GL_LOG_VARINT_MAX;
    if (fixed + table > GL_LOG_MAX_BODY)
        table = 0; /* lines then read as the first line; never seen in practice */
    if (fixed + table > GL_LOG_MAX_BODY || atomic_load_explicit(&w.stopped, memory_order_relaxed))
        return;
    uint8_t head[5 * GL_LOG_VARINT_MAX];
    size_t h = gl_log_format_put(head, id);
    h += gl_log_format_put(head + h, c->address);
    h += gl_log_format_put(head + h, gl_log_format_zigzag(c->firstlineno));
    h += gl_log_format_put(head + h, gl_log_format_zigzag(c->format));
    size_t n = h + gl_log_format_varint_len(file) + file + gl_log_format_varint_len(func) + func +
               gl_log_format_varint_len(table) + table;
    uint8_t *at = reserve(n); /* written in place: a line table may be kilobytes */
    if (!at)
        return;
    uint8_t *b = at + 4;
    memcpy(b, head, h);
    size_t k = h;
    k += put_bytes(b + k, c->file ? c->file : "", file);
    k += put_bytes(b + k, c->function ? c->function : "", func);
    put_bytes(b + k, c->table, table);
    finish(at, GL_LOG_PYCODE, b, n);
}

/* A STACK body's bytes at most: id, count, and per frame a where and two
 * varints. */
#define STACK_BODY_MAX(frames)                                                                     \
    (2 * GL_LOG_VARINT_MAX + (size_t)(frames) * (1 + 2 * GL_LOG_VARINT_MAX))
/* Stacks up to this deep are encoded on the stack (3.4 KiB, as when every
 * stack was this short); deeper ones (--num-callers above 76) in tool memory,
 * mapped for the while: the writer runs in the program's threads, inside its
 * CUDA calls, and each stack is written once. */
#define STACK_ON_STACK GL_DEPOT_MAX_FRAMES
_Static_assert(STACK_BODY_MAX(GL_STACK_MAX_FRAMES) <= GL_LOG_MAX_BODY, "a stack fits a record");

/* Encode into body (STACK_BODY_MAX(nf) bytes) and append. */
static void encode_stack(uint32_t id, const uintptr_t *frames, unsigned nf, uint8_t *body)
{
    size_t n = gl_log_format_put(body, id);
    n += gl_log_format_put(body + n, nf);
    bool missed = false;
    for (unsigned i = 0; i < nf; i++) {
        uintptr_t f = frames[i];
        if (gl_py_frames_is_frame(f)) {
            uint32_t code = (uint32_t)((f >> 32) & 0x7fffffffu);
            if (first_sight(w.code_bits, code))
                write_code(code);
            body[n++] = 0;
            n += gl_log_format_put(body + n, code);
            n += gl_log_format_put(body + n, (uint32_t)f);
            continue;
        }
        uint64_t off;
        int m = gl_log_modules_find(f, &off);
        if (m < 0) {
            missed = true;
            body[n++] = 1;
            n += gl_log_format_put(body + n, f);
        } else {
            n += gl_log_format_put(body + n, (uint64_t)m + 2);
            n += gl_log_format_put(body + n, off);
        }
    }
    append(GL_LOG_STACK, body, n);
    if (missed)
        wake_helper(WAKE_MODULES); /* the reader maps absolute addresses by modules written later */
}

static void write_stack(uint32_t id)
{
    unsigned nf = 0;
    const uintptr_t *frames = gl_stack_depot_frames(id, &nf);
    if (!frames)
        return;
    if (nf <= STACK_ON_STACK) {
        uint8_t body[STACK_BODY_MAX(STACK_ON_STACK)];
        encode_stack(id, frames, nf, body);
        return;
    }
    size_t size = STACK_BODY_MAX(nf);
    uint8_t *body = gl_tool_map(size);
    if (!body)
        return; /* the reader gives the events naming it no stack */
    encode_stack(id, frames, nf, body);
    gl_tool_unmap(body, size);
}

/* ---- the staging ring ---- */

static inline uint8_t *slot_at(uint64_t i)
{
    return w.ring + (i & (RING_SLOTS - 1)) * GL_LOG_SLOT_SIZE;
}

/* One slot, compacted into its record (nothing written once stopped). */
static void compact_slot(const uint64_t v[8])
{
    struct gl_event ev;
    memcpy(&ev, v, sizeof ev);
    if (ev.type == GL_LOG_SLOT_ERROR_STACK) {
        uint8_t body[2 * GL_LOG_VARINT_MAX];
        size_t n = gl_log_format_put(body, ev.tid);
        n += gl_log_format_put(body + n, ev.stack);
        append(GL_LOG_ERROR_STACK, body, n);
        return;
    }
    uint64_t words[(GL_LOG_EVENT_MAX + 7) / 8 + 1];
    uint8_t *body = (uint8_t *)words;
    size_t n = gl_log_format_event_encode(&ev, ev.time_ns, body);
    memset(body + n, 0, 8); /* to the next word: the padded check reads it */
    append_padded(GL_LOG_EVENT_PACKED, body, n);
}

/* Compact slots in the order they were taken (the compactor's lock held),
 * up to slot `until` (not included) at most: those stamped, and when wait
 * is set those still being stored, waited for until deadline (ns, the
 * coarse clock).  Stops at the first slot not stamped (in time): records
 * follow the slots' order, never skip one.  Bounded by `until`, so that
 * threads stamping as fast as it compacts never hold the caller. */
static void compact(uint64_t until, bool wait, uint64_t deadline)
{
    uint64_t t = atomic_load_explicit(&w.tail, memory_order_relaxed);
    while (t < until) {
        const uint8_t *slot = slot_at(t);
        uint64_t stamp = __atomic_load_n((const uint64_t *)(slot + 64), __ATOMIC_ACQUIRE);
        if ((stamp & GL_LOG_STAMP_INDEX) != t + 1) {
            if (!wait || gl_clock_ns() > deadline)
                break;
            __builtin_ia32_pause();
            continue;
        }
        uint64_t v[8];
        memcpy(v, slot, sizeof v);
        compact_slot(v);
        if (!(++t % PUBLISH_EVERY)) {
            atomic_store_explicit(&w.tail, t, memory_order_relaxed);
            atomic_store_explicit(&w.room, t + RING_SLOTS, memory_order_release);
        }
    }
    atomic_store_explicit(&w.tail, t, memory_order_relaxed);
    atomic_store_explicit(&w.room, t + RING_SLOTS, memory_order_release);
}

/* Take the compactor's lock; false if the caller holds it already (a signal
 * handler inside a compaction) or it stays taken past deadline. */
static bool compactor_take(int me, uint64_t deadline)
{
    for (unsigned rounds = 0;;) {
        int holder = 0;
        if (atomic_compare_exchange_strong(&w.compactor, &holder, me))
            return true;
        if (holder == me || (deadline && gl_clock_ns() > deadline))
            return false;
        gl_spin_backoff(&rounds);
    }
}

static void compactor_give(void) { atomic_store_explicit(&w.compactor, 0, memory_order_release); }

/* While a thread of the program compacts: signals blocked, since a handler
 * that made a CUDA call there would find the compactor held by its own
 * thread, and a slot it took could never be stamped, holding every slot
 * after it; and no cancellation (pthread_cancel), since the file's growth
 * (fallocate) is a cancellation point and a thread cancelled there would
 * hold the compactor for good. */
struct slow_path {
    sigset_t mask;
    int cancel_state;
};

static void slow_path_enter(struct slow_path *s)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &s->mask);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &s->cancel_state);
}

static void slow_path_leave(const struct slow_path *s)
{
    pthread_setcancelstate(s->cancel_state, NULL);
    pthread_sigmask(SIG_SETMASK, &s->mask, NULL);
}

/* Every slot taken so far compacted (END, close): waits up to FLUSH_WAIT_NS
 * for slots being stored; a thread stopped inside one (by a signal whose
 * handler ends the process) leaves it, and the slots after it, staged. */
static void flush(void)
{
    uint64_t deadline = gl_clock_ns() + FLUSH_WAIT_NS;
    int me = (int)syscall(SYS_gettid);
    struct slow_path sp;
    slow_path_enter(&sp);
    if (compactor_take(me, deadline)) {
        compact(atomic_load(&w.head), true, deadline);
        compactor_give();
    }
    slow_path_leave(&sp);
}

/* The ring is full at slot i: compact (or wait for the compactor) until
 * slot i is free, compacting no further than that.  False: the event is
 * dropped, counted - staging stopped (the log closed or full) while this
 * thread waited; its slot stays unstamped, past what any reader takes. */
static __attribute__((noinline)) bool wait_for_room(uint64_t i)
{
    int me = (int)syscall(SYS_gettid);
    struct slow_path sp;
    slow_path_enter(&sp);
    bool ok = true;
    for (unsigned rounds = 0; i >= atomic_load_explicit(&w.room, memory_order_acquire);) {
        if (!atomic_load(&w.staging)) {
            atomic_fetch_add(&w.dropped, 1);
            ok = false;
            break;
        }
        int holder = 0;
        if (atomic_compare_exchange_strong(&w.compactor, &holder, me)) {
            /* What is stamped, up to our own slot's turn: the slot before
             * ours may be another waiter's, whose own turn comes first. */
            compact(i - RING_SLOTS + 1, false, 0);
            compactor_give();
        }
        gl_spin_backoff(&rounds);
    }
    slow_path_leave(&sp);
    return ok;
}

/* Stage v (an event, its time in word 7) in the next slot: one atomic add
 * and 72 bytes stored, the stamp last (save/log_format.h). */
static inline __attribute__((always_inline)) void stage(const uint64_t v[8])
{
    uint64_t i = atomic_fetch_add_explicit(&w.head, 1, memory_order_relaxed);
    if (__builtin_expect(i >= atomic_load_explicit(&w.room, memory_order_acquire), 0) &&
        !wait_for_room(i))
        return;
    uint8_t *slot = slot_at(i);
    /* The slot 16 ahead fetched for writing (base/prefetch.h): it takes the
     * line from the helper's cache at once (bench/RESULTS.md).  Past the
     * ring's end: the file. */
    gl_prefetch_write(slot + 16 * GL_LOG_SLOT_SIZE);
    /* The old lap's stamp cleared before the new bytes: a reader of a dead
     * or running process never pairs a stamp with another lap's bytes, so
     * that a stamp whose check fails is damage. */
    __atomic_store_n((uint64_t *)(slot + 64), 0, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_release);
    memcpy(slot, v, 64);
    uint64_t stamp = (i + 1) | (uint64_t)gl_log_format_slot_check(v) << 56;
    __atomic_store_n((uint64_t *)(slot + 64), stamp, __ATOMIC_RELEASE);
    if (__builtin_expect(!(i % WAKE_EVERY), 0) &&
        (int64_t)(i + RING_SLOTS - atomic_load_explicit(&w.room, memory_order_relaxed)) >=
            (int64_t)WAKE_BACKLOG)
        wake_helper(WAKE_RING);
}

/* ---- the consumer ---- */

/* A stack's record written before the first event that names it: the
 * thread's last two stacks first (a line every call touches), then the
 * log's bitmap (a line of its own, cold between two calls). */
static inline void see_stack(uint32_t id)
{
    struct gl_thread *t = gl_thread_cur;
    if (t && t->log_gen == w.gen && (t->log_stacks[0] == id || t->log_stacks[1] == id))
        return;
    if (first_sight(w.stack_bits, id))
        write_stack(id);
    if (t) {
        if (t->log_gen != w.gen) {
            t->log_gen = w.gen;
            t->log_stacks[1] = 0;
        } else {
            t->log_stacks[1] = t->log_stacks[0];
        }
        t->log_stacks[0] = id;
    }
}

static void record(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    /* Off in a fork child (after_fork): its mapping is its parent's file. */
    if (!atomic_load_explicit(&w.staging, memory_order_relaxed))
        return;
    if (ev->stack)
        see_stack(ev->stack);
    uint64_t v[8];
    memcpy(v, ev, sizeof v);
    v[7] = event_time();
    stage(v);
}

static bool wanted(void) { return atomic_load(&w.active); }

/* A fork child shares the mapping: it must never write into its parent's file. */
static void after_fork(void)
{
    atomic_store(&w.staging, false);
    atomic_store(&w.active, false);
    w.helper = false;
}

static void unmap(void);

static void reset(void)
{
    gl_log_writer_close();
    unmap();
}

static const struct gl_consumer consumer = {
    .record = record,
    .wanted = wanted,
    .flags = GL_CONSUMER_CONTEXTS, /* a replay places errors by the context */
};

const struct gl_component gl_log_writer_component = {
    .name = "log_writer", .reset = reset, .after_fork = after_fork, .consumer = &consumer};

/* ---- modules ---- */

static void emit_module(unsigned index, const struct gl_log_module *m)
{
    uint8_t body[6 * GL_LOG_VARINT_MAX + GL_LOG_BUILD_ID_MAX + PATH_MAX];
    size_t len = strlen(m->path);
    if (len > PATH_MAX)
        return;
    size_t n = gl_log_format_put(body, index);
    n += gl_log_format_put(body + n, m->bias);
    n += gl_log_format_put(body + n, m->start);
    n += gl_log_format_put(body + n, m->end);
    n += put_bytes(body + n, m->build_id, m->build_id_len);
    n += put_bytes(body + n, m->path, len);
    append(GL_LOG_MODULE, body, n);
}

void gl_log_writer_modules(void)
{
    if (!atomic_load(&w.active) || getpid() != w.pid)
        return;
    pthread_mutex_lock(&w.scan_lock);
    gl_log_modules_scan(emit_module);
    pthread_mutex_unlock(&w.scan_lock);
}

/* The helper: scans the loader's list when a stack named an address in no
 * known module (inside a CUDA call, where the loader's lock must not be
 * taken).  It blocks every signal: the program's handlers never run on it. */
/* The pages ahead of the writers, made present and writable now: a write
 * fault on a shared file mapping costs microseconds, which the threads
 * making CUDA calls would otherwise pay every 4 KiB (bench/RESULTS.md). */
#define AHEAD (8u << 20)

static void populate_ahead(void)
{
    static uint64_t populated;
    uint64_t want = (atomic_load(&w.length) & ~(uint64_t)4095) + AHEAD;
    if (want > w.limit)
        want = w.limit;
    if (want <= populated || atomic_load(&w.stopped) || !grow(want))
        return;
    uint64_t from =
        populated > atomic_load(&w.length) ? populated : atomic_load(&w.length) & ~(uint64_t)4095;
#ifdef MADV_POPULATE_WRITE
    if (madvise(w.base + from, want - from, MADV_POPULATE_WRITE) == 0)
        populated = want;
#endif
}

static _Atomic bool held; /* tests: the helper leaves the ring and the file's growth alone */

void gl_log_writer_hold_helper(bool hold) { atomic_store(&held, hold); }

static void *helper_main(void *arg)
{
    (void)arg;
    int self = (int)syscall(SYS_gettid);
    for (;;) {
        uint32_t why;
        while (!(why = atomic_exchange(&w.wake, 0)))
            syscall(SYS_futex, &w.wake, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        if ((why & WAKE_RING) && !atomic_load(&held) && compactor_take(self, 0)) {
            compact(atomic_load(&w.head), false, 0);
            compactor_give();
        }
        if (why & WAKE_MODULES)
            gl_log_writer_modules();
        if ((why & WAKE_AHEAD) && atomic_load(&w.active) && !atomic_load(&held))
            populate_ahead();
    }
    return NULL;
}

static void start_helper(void)
{
    w.helper = gl_thread_start_tool("gpuleak-save", helper_main, 256 << 10);
}

/* ---- open and close ---- */

bool gl_log_writer_open(int fd, uint64_t limit, const struct gl_log_process *proc, char *err,
                        size_t errlen)
{
    limit &= ~(uint64_t)4095;
    uint64_t records = GL_LOG_HEADER_SIZE + (uint64_t)RING_SLOTS * GL_LOG_SLOT_SIZE;
    if (limit < records + (1u << 20)) {
        snprintf(err, errlen,
                 "--save-limit: %llu bytes is below the %llu the file needs at least "
                 "(its staging ring, then room for records)",
                 (unsigned long long)limit, (unsigned long long)(records + (1u << 20)));
        return false;
    }
    void *base = mmap(NULL, limit, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the file: %s", strerror(errno));
        return false;
    }
    size_t bits = STACK_BITS / 8;
    w.stack_bits = gl_tool_map(bits);
    w.code_bits = gl_tool_map(bits);
    w.fd = fd;
    w.base = base;
    w.limit = limit;
    w.pid = getpid();
    atomic_store(&w.length, 0);
    atomic_store(&w.file_size, 0);
    atomic_store(&w.stopped, false);
    if (ftruncate(fd, 0) != 0 || !grow(records)) {
        snprintf(err, errlen, "cannot write the file: %s", strerror(errno));
        munmap(base, limit);
        w.base = NULL;
        return false;
    }
    /* The start: the clock thread's time if it is behind the clock (a thread
     * the system runs late can lag by tens of ms), and the Unix time moved
     * back with it.  An event's time is the thread's since the start, and a
     * time before the start would read as the start: --read's times would
     * then differ from the run's own (--memory-viz). */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t mono = gl_clock_ns(), tick = gl_ticker_ns();
    w.clock0 = tick < mono ? tick : mono;
    w.tsc0 = __rdtsc();
    uint64_t unix_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    struct gl_log_header h = {.version = GL_LOG_VERSION,
                              .header_size = GL_LOG_HEADER_SIZE,
                              .pid = (uint64_t)getpid(),
                              .ppid = (uint64_t)getppid(),
                              .start_unix_ns = unix_ns - (mono - w.clock0),
                              .clock0_ns = w.clock0,
                              .tsc0 = w.tsc0,
                              .ring_slots = RING_SLOTS,
                              .slot_size = GL_LOG_SLOT_SIZE};
    gl_log_format_header_encode(&h, w.base);
    /* The ring's pages made present now: its slots are stored inside CUDA
     * calls, where a page fault on a shared mapping costs microseconds. */
    w.ring = w.base + GL_LOG_HEADER_SIZE;
#ifdef MADV_POPULATE_WRITE
    madvise(w.base, (size_t)records, MADV_POPULATE_WRITE);
#endif
    atomic_store(&w.head, 0);
    atomic_store(&w.tail, 0);
    atomic_store(&w.room, RING_SLOTS);
    atomic_store(&w.length, records);

    static uint8_t body[4 * 4096 + 6 * PATH_MAX];
    char exe[PATH_MAX] = "", cwd[PATH_MAX] = "", host[256] = "";
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = '\0';
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    gethostname(host, sizeof host - 1);
    size_t n = gl_log_format_put(body, 0);
    n += put_str(body + n, proc->version);
    n += put_str(body + n, proc->command);
    n += put_str(body + n, exe);
    n += put_str(body + n, cwd);
    n += put_str(body + n, host);
    n += put_str(body + n, proc->options);
    append(GL_LOG_PROCESS, body, n < GL_LOG_MAX_BODY ? n : 0);
    /* Two clock pairs 2 ms apart: a log cut short still converts its times. */
    write_clock();
    while (gl_clock_ns() - mono < 2000000)
        __builtin_ia32_pause();
    write_clock();
    atomic_store(&w.compactor, 0);
    w.gen++;
    atomic_store(&w.active, true);
    atomic_store(&w.staging, true);
    gl_log_modules_reset();
    gl_log_writer_modules();
    if (!w.helper)
        start_helper();
    wake_helper(WAKE_AHEAD);
    return true;
}

bool gl_log_writer_active(void) { return atomic_load(&w.active) && getpid() == w.pid; }

void gl_log_writer_record(unsigned type, const uint8_t *body, size_t n)
{
    if (gl_log_writer_active() && n <= GL_LOG_MAX_BODY)
        append(type, body, n);
}

void gl_log_writer_mark(uint64_t number, uint64_t seq_mark, const char *name)
{
    if (!gl_log_writer_active())
        return;
    uint8_t body[2 * GL_LOG_VARINT_MAX + GL_LOG_VARINT_MAX + 256];
    size_t len = name ? strnlen(name, 256) : 0;
    size_t n = gl_log_format_put(body, number);
    n += gl_log_format_put(body + n, seq_mark);
    n += put_bytes(body + n, name ? name : "", len);
    append(GL_LOG_MARK, body, n);
}

void gl_log_writer_verdict(uint64_t key, uint64_t seq, enum gl_leak_kind kind)
{
    if (!gl_log_writer_active())
        return;
    uint8_t body[2 * GL_LOG_VARINT_MAX + 1];
    size_t n = gl_log_format_put(body, key);
    n += gl_log_format_put(body + n, seq);
    body[n++] = (uint8_t)kind;
    append(GL_LOG_VERDICT, body, n);
}

void gl_log_writer_end(enum gl_log_end how, int status, uint64_t blocks, uint64_t bytes,
                       bool reach_available, const char *why_not)
{
    if (!gl_log_writer_active())
        return;
    gl_log_writer_modules(); /* objects loaded since: the stacks' frames need them */
    flush();                 /* the events before END */
    write_clock();
    uint8_t body[6 * GL_LOG_VARINT_MAX + 512];
    size_t n = gl_log_format_put(body, how);
    n += gl_log_format_put(body + n, gl_log_format_zigzag(status));
    n += gl_log_format_put(body + n, blocks);
    n += gl_log_format_put(body + n, bytes);
    n += gl_log_format_put(body + n, reach_available);
    if (!reach_available)
        n += put_bytes(body + n, why_not ? why_not : "", why_not ? strnlen(why_not, 500) : 0);
    append(GL_LOG_END, body, n);
}

static uint32_t (*inner_capture)(void);

static uint32_t capture_and_save(void)
{
    uint32_t id = inner_capture ? inner_capture() : 0;
    if (!id || !atomic_load_explicit(&w.staging, memory_order_relaxed))
        return id;
    if (first_sight(w.stack_bits, id))
        write_stack(id);
    /* Staged as events are: its record follows its thread's event. */
    struct gl_event ev = {
        .type = GL_LOG_SLOT_ERROR_STACK, .tid = (uint32_t)syscall(SYS_gettid), .stack = id};
    uint64_t v[8];
    memcpy(v, &ev, sizeof v);
    stage(v);
    return id;
}

void gl_log_writer_save_error_stacks(void)
{
    if (gl_errors_capture_stack == capture_and_save)
        return;
    inner_capture = gl_errors_capture_stack;
    gl_errors_capture_stack = capture_and_save;
}

/* Threads of the program may still be inside CUDA calls, writing records
 * they reserved: the file is cut where the last reservation ends (theirs are
 * inside it), after pushing every later reservation past the limit, and the
 * mapping stays (they may still be writing into it). */
void gl_log_writer_close(void)
{
    if (!w.base || !gl_log_writer_active())
        return;
    atomic_store(&w.staging, false);
    atomic_store(&w.active, false);
    flush();
    /* Compaction ends here for good: the compactor stays held, and a thread
     * still inside a CUDA call that takes a slot now finds no room and drops
     * its event (it stopped staging) rather than write into the ring. */
    struct slow_path sp;
    slow_path_enter(&sp);
    compactor_take((int)syscall(SYS_gettid), gl_clock_ns() + FLUSH_WAIT_NS);
    atomic_store_explicit(&w.room, 0, memory_order_release);
    slow_path_leave(&sp);
    /* Every slot compacted into a record: the ring's blocks given back to
     * the file system (it reads as zeros, nothing staged), so that a short
     * run's log takes little more disk than its records.  (A log stopped at
     * its limit keeps them: its staged events were compacted into nothing.) */
    if (!atomic_load(&w.stopped) && atomic_load(&w.tail) == atomic_load(&w.head) &&
        fallocate(w.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, GL_LOG_HEADER_SIZE,
                  (off_t)RING_SLOTS * GL_LOG_SLOT_SIZE) != 0) {
        /* not supported here: the ring keeps its blocks */
    }
    atomic_store(&w.stopped, true);
    uint64_t end = atomic_fetch_add(&w.length, w.limit);
    if (ftruncate(w.fd, (off_t)end) != 0) {
        /* left longer: the zeros after the last record read as its end */
    }
}

/* Tests only: no thread is writing. */
static void unmap(void)
{
    if (w.base)
        munmap(w.base, w.limit);
    if (w.fd >= 0)
        close(w.fd);
    w.base = NULL;
    w.fd = -1;
    atomic_store(&w.staging, false);
    atomic_store(&w.active, false);
}

uint64_t gl_log_writer_dropped(void) { return atomic_load(&w.dropped); }

uint64_t gl_log_writer_bytes(void)
{
    uint64_t n = atomic_load(&w.length);
    return n > w.limit ? n - w.limit : n;
}
