/* SPDX-License-Identifier: MIT */
#include "stack/stack_memo.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "base/warm.h"
#include "base/thread.h"
#include "base/tool.h"
#include "common/util.h"

/* Slot offsets are kept in 8-byte words from the capture's stack pointer, in
 * 16 bits: stacks up to 512 KiB deep from the capture to the last frame kept. */
#define MAX_WORDS 0xffffu

/* A stack as the walk describes it, while it is being learnt: each frame's
 * return address and where it lies, and the frame pointers it is found by. */
struct described {
    uint16_t nfp;                  /* frame pointer checks, in frame order */
    uint16_t word[GL_MEMO_FRAMES]; /* frames[i] lies at sp + 8 * word[i], i >= 1 */
    uintptr_t ret[GL_MEMO_FRAMES]; /* frames[i] */
    /* Frame pointers that pointed into the stack, where each was saved, and
     * the words realigned frames find their callers by. */
    uint16_t fp_word[GL_MEMO_FRAMES];
    uintptr_t fp[GL_MEMO_FRAMES];
    /* How many of those belong to frames 1..i: compared right after frame i's
     * return address, before the next, which a frame of variable size finds
     * by them. */
    uint8_t fp_upto[GL_MEMO_FRAMES];
};

/* Words one remembered stack compares: a return address a frame, and the
 * frame pointers. */
#define MAX_CHECKS (2 * GL_MEMO_FRAMES)

/* A remembered stack, as a lookup reads it: the words to compare in the
 * order they are compared, packed from the entry's start, and their values
 * from a line's start.  In a real program a lookup finds the entry in the
 * outer caches and pays a miss a line; the walk's own form (struct
 * described) spread one stack over five arrays. */
struct gl_memo_entry {
    uint32_t id;
    uint16_t n;      /* frames, frames[0] included */
    uint16_t checks; /* words compared */
    uint8_t referenced;
    uintptr_t frame0; /* frames[0]: inside the capturing function */
    /* word[0..checks): where each compared value lies, in 8-byte words above
     * sp; then, as bytes, for frames 1..n-1, which check holds the frame's
     * return address. */
    uint16_t packed[MAX_CHECKS + GL_MEMO_FRAMES / 2];
    uintptr_t value[MAX_CHECKS] __attribute__((aligned(64)));
};
_Static_assert(MAX_CHECKS <= 256, "a check's index in a byte");

static inline const uint8_t *ret_checks(const struct gl_memo_entry *e)
{
    return (const uint8_t *)(e->packed + e->checks);
}

/* What a lookup compares first, apart from the entries (16 bytes: four to a
 * cache line).  sp 0 marks an empty entry. */
struct memo_key {
    uintptr_t sp;
    uint16_t want;
    uint16_t pad;
    unsigned generation;
};

struct gl_stack_memo {
    struct memo_key key[GL_MEMO_ENTRIES];
    unsigned last; /* the entry found last: a loop's next capture is likely the same */
    unsigned hand; /* the clock's, for eviction */
    /* Set while a lookup or a learn runs: a signal handler's capture on the
     * same thread then leaves the memo alone (it would see, or write, an entry
     * half written).  Only the owner and its signal handlers touch it. */
    volatile int busy;
    int64_t tokens; /* in eighths of a hit */
    /* Written by the owner, read by reports: relaxed atomics (plain moves). */
    _Atomic int64_t hits, walks, refused, skipped; /* gl_thread_add */
    struct gl_memo_entry e[GL_MEMO_ENTRIES];
    struct described scratch; /* a stack being learnt, until it proves whole */
    _Atomic(void *) room;     /* gl_stack_memo_room's */
    _Atomic size_t room_bytes;
};

/* The budget, in eighths of a hit: a hit earns 8, a miss the budget left
 * unwalked 1 (a program whose stacks settle after a start-up of many gets to
 * learn again), a walk costs GL_MEMO_LEARN_COST hits. */
#define HIT 8
#define WALK (GL_MEMO_LEARN_COST * HIT)
#define TOKENS_START (2 * GL_MEMO_ENTRIES * WALK)

static inline bool enter(struct gl_stack_memo *m)
{
    if (m->busy)
        return false;
    m->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return true;
}

static inline void leave(struct gl_stack_memo *m)
{
    atomic_signal_fence(memory_order_seq_cst);
    m->busy = 0;
}

struct gl_stack_memo *gl_stack_memo_new(void)
{
    struct gl_stack_memo *m = gl_tool_map(sizeof *m);
    if (m)
        m->tokens = TOKENS_START;
    return m;
}

void *gl_stack_memo_room(struct gl_stack_memo *m, size_t bytes)
{
    void *room = atomic_load_explicit(&m->room, memory_order_relaxed);
    if (room)
        return room;
    void *mapped = gl_tool_map(bytes);
    if (!mapped)
        return NULL;
    if (atomic_compare_exchange_strong(&m->room, &room, mapped)) {
        atomic_store_explicit(&m->room_bytes, gl_tool_page_round(bytes), memory_order_relaxed);
        return mapped;
    }
    gl_tool_unmap(mapped, bytes); /* a signal handler's capture mapped one meanwhile */
    return room;
}

void gl_stack_memo_clear(struct gl_stack_memo *m)
{
    if (!enter(m))
        return;
    for (unsigned i = 0; i < GL_MEMO_ENTRIES; i++)
        m->key[i].sp = 0;
    m->tokens = TOKENS_START;
    leave(m);
}

#if defined(__x86_64__)

static inline bool slot_holds(uintptr_t sp, uint16_t word, uintptr_t ret)
{
    return *(const uintptr_t *)(sp + (uintptr_t)word * 8) == ret;
}

/* In order from the capture outwards, each frame's return address and then
 * the frame pointers it is found by (the entry holds them in that order):
 * each word read lies in frames that all matched, in the live chain of the
 * stack the capture runs on (a word further out, compared first, could lie
 * past the end of another stack at the same address: a coroutine's).  The
 * first `upto` checks only: those that place frames 0..f of a prefix stop at
 * frame f's return address (the frame pointers after it place frame f + 1). */
static bool matches(const struct gl_memo_entry *e, uintptr_t sp, unsigned upto)
{
    for (unsigned k = 0; k < upto; k++)
        if (!slot_holds(sp, e->packed[k], e->value[k]))
            return false;
    return true;
}

/* The checks that place e's first `frames` frames (all of them from n on). */
static inline unsigned checks_for(const struct gl_memo_entry *e, unsigned frames)
{
    if (frames >= e->n)
        return e->checks;
    return frames < 2 ? 0 : ret_checks(e)[frames - 2] + 1u;
}

static inline bool key_is(const struct memo_key *k, const struct gl_memo_key *key)
{
    return k->sp == key->sp && k->want == key->want && k->generation == key->generation;
}

/* The lookup: the first `limit` frames of the stack at key checked (0: all),
 * as many copied when need_frames or the entry has no id; the count given
 * (0: a miss). */
GL_HOT static unsigned lookup(struct gl_stack_memo *m, const struct gl_memo_key *key,
                              unsigned limit, bool need_frames, bool earn, uintptr_t *frames,
                              uint32_t *id)
{
    if (!enter(m))
        return 0;
    unsigned n = 0;
    for (unsigned j = 0; j <= GL_MEMO_ENTRIES; j++) {
        /* The last entry found first, then all in order (it again: rare). */
        unsigned i = j == 0 ? m->last : j - 1;
        if (!key_is(&m->key[i], key))
            continue;
        struct gl_memo_entry *e = &m->e[i];
        unsigned give = limit && limit < e->n ? limit : e->n;
        if (!matches(e, key->sp, checks_for(e, give)))
            continue;
        m->last = i;
        e->referenced = 1;
        if (earn) {
            gl_thread_add(&m->hits, 1);
            if (m->tokens < TOKENS_START)
                m->tokens += HIT;
        }
        n = give;
        *id = e->id;
        if (need_frames || !e->id) {
            const uint8_t *ret = ret_checks(e);
            frames[0] = e->frame0;
            for (unsigned f = 1; f < n; f++)
                frames[f] = e->value[ret[f - 1]];
        }
        break;
    }
    leave(m);
    return n;
}

GL_HOT unsigned gl_stack_memo_find(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                   bool need_frames, uintptr_t *frames, uint32_t *id)
{
    return lookup(m, key, 0, need_frames, true, frames, id);
}

GL_HOT unsigned gl_stack_memo_find_prefix(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                          unsigned limit, uintptr_t *frames)
{
    uint32_t id;
    return limit ? lookup(m, key, limit, true, true, frames, &id) : 0;
}

GL_HOT unsigned gl_stack_memo_find_again(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                         uintptr_t *frames)
{
    uint32_t id;
    return lookup(m, key, 0, true, false, frames, &id);
}

#else

unsigned gl_stack_memo_find(struct gl_stack_memo *m, const struct gl_memo_key *key,
                            bool need_frames, uintptr_t *frames, uint32_t *id)
{
    (void)m;
    (void)key;
    (void)need_frames;
    (void)frames;
    (void)id;
    return 0;
}

unsigned gl_stack_memo_find_prefix(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                   unsigned limit, uintptr_t *frames)
{
    (void)m;
    (void)key;
    (void)limit;
    (void)frames;
    return 0;
}

unsigned gl_stack_memo_find_again(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                  uintptr_t *frames)
{
    (void)m;
    (void)key;
    (void)frames;
    return 0;
}

#endif

GL_HOT void gl_stack_memo_warm(const struct gl_stack_memo *m)
{
    /* A lookup asks the entry found last first: a loop's next capture. */
    gl_warm(&m->last);
    unsigned i = m->last % GL_MEMO_ENTRIES;
    gl_warm(&m->key[i]);
    /* Its first lines blind (reading its count would be a miss here): the
     * checks of a stack of some twenty frames. */
    const struct gl_memo_entry *e = &m->e[i];
    gl_warm_range(e, offsetof(struct gl_memo_entry, packed) + 2 * 24);
    gl_warm_range(e->value, 24 * sizeof *e->value);
}

bool gl_stack_memo_may_learn(struct gl_stack_memo *m)
{
#if defined(__x86_64__)
    if (m->tokens >= WALK)
        return true;
    m->tokens++;
#endif
    gl_thread_add(&m->skipped, 1);
    return false;
}

/* The clock: the first entry not referenced since the hand last passed it. */
static unsigned victim(struct gl_stack_memo *m)
{
    for (;;) {
        unsigned i = m->hand;
        m->hand = (i + 1) % GL_MEMO_ENTRIES;
        if (!m->key[i].sp || !m->e[i].referenced)
            return i;
        m->e[i].referenced = 0;
    }
}

/* The word of addr in the window the memo checks above sp, or -1. */
static long word_of(uintptr_t sp, uintptr_t addr)
{
    if (addr < sp || (addr - sp) % 8 || (addr - sp) / 8 > MAX_WORDS)
        return -1;
    return (long)((addr - sp) / 8);
}

/* Add a check of the word at addr (in the window, else false). */
static bool add_check(struct described *e, uintptr_t sp, uintptr_t addr)
{
    long word = word_of(sp, addr);
    if (word < 0)
        return false;
    for (unsigned i = 0; i < e->nfp; i++)
        if (e->fp_word[i] == word)
            return true; /* one saved value may serve several frames */
    if (e->nfp == GL_MEMO_FRAMES)
        return false;
    e->fp_word[e->nfp] = (uint16_t)word;
    e->fp[e->nfp++] = *(const uintptr_t *)addr;
    return true;
}

/* Fill e from the walk; false if the stack cannot be checked so. */
static bool describe(struct described *e, const struct gl_memo_key *key, const uintptr_t *frames,
                     unsigned n, const struct gl_unwind_frame *walk, unsigned nwalk)
{
    /* The walk starts inside the function that made it, called from the
     * capture: find where the capture's caller, frames[1], comes. */
    unsigned d = 0;
    while (d < nwalk && walk[d].ip != frames[1])
        d++;
    if (d == 0 || d + (n - 1) > nwalk)
        return false;
    e->nfp = 0;
    for (unsigned f = 1; f < n; f++) {
        const struct gl_unwind_frame *w = &walk[d + f - 1];
        /* A signal frame's caller was interrupted: its ip and stack pointer
         * come from the saved context, not from a slot (the slot below may
         * still hold the return address just popped). */
        if (w->signal)
            return false;
        /* Its return address: 8 bytes below the stack pointer it was called with. */
        long word = word_of(key->sp, w->sp - 8);
        if (w->ip != frames[f] || word < 0 || *(const uintptr_t *)(w->sp - 8) != w->ip)
            return false;
        e->word[f] = (uint16_t)word;
        e->ret[f] = w->ip;
        e->fp_upto[f] = (uint8_t)e->nfp; /* raised below with this frame's checks */
        if (f == n - 1) {
            /* The last frame of a stack that ended before the frames asked
             * for: where the walk stopped may depend on its frame pointer
             * (code without unwind tables, found by the frame pointer chain). */
            if (n < key->want && !(w->fp_at && add_check(e, key->sp, w->fp_at)))
                return false;
            e->fp_upto[f] = (uint8_t)e->nfp;
            break;
        }
        /* Its frame pointer, if it points into the stack: the frame may find
         * its caller's return address by it (a frame of variable size), so the
         * value must be the same for the next slot to be where it was.  Other
         * values (rbp as a general register) cannot place a frame. */
        if (word_of(key->sp, w->fp) < 0)
            continue;
        if (!w->fp_at || !add_check(e, key->sp, w->fp_at) || *(const uintptr_t *)w->fp_at != w->fp)
            return false; /* saved where it cannot be checked */
        e->fp_upto[f] = (uint8_t)e->nfp;
        /* GCC's realigned frames (DRAP) keep their caller's stack pointer in
         * the word below the frame pointer, and find the caller by it.  A
         * frame whose rbp is its caller's (no frame pointer of its own) has a
         * word of the caller's there: not that. */
        uintptr_t caller_sp = walk[d + f].sp;
        if (caller_sp != w->fp + 16 && w->sp + 8 <= w->fp && w->fp - 8 < caller_sp &&
            *(const uintptr_t *)(w->fp - 8) == caller_sp && !add_check(e, key->sp, w->fp - 8))
            return false;
        e->fp_upto[f] = (uint8_t)e->nfp;
    }
    return true;
}

/* Pack a described stack of n frames into e, in the order a lookup compares. */
static void pack(struct gl_memo_entry *e, const struct described *d, const uintptr_t *frames,
                 unsigned n)
{
    unsigned checks = (n - 1) + d->fp_upto[n - 1], k = 0, j = 0;
    uint8_t *ret = (uint8_t *)(e->packed + checks);
    for (unsigned f = 1; f < n; f++) {
        ret[f - 1] = (uint8_t)k;
        e->packed[k] = d->word[f];
        e->value[k++] = d->ret[f];
        for (; j < d->fp_upto[f]; j++) {
            e->packed[k] = d->fp_word[j];
            e->value[k++] = d->fp[j];
        }
    }
    e->checks = (uint16_t)checks;
    e->frame0 = frames[0];
    e->n = (uint16_t)n;
}

bool gl_stack_memo_learn(struct gl_stack_memo *m, const struct gl_memo_key *key,
                         const uintptr_t *frames, unsigned n, const struct gl_unwind_frame *walk,
                         unsigned nwalk, uint32_t id)
{
    if (!enter(m))
        return false;
    m->tokens -= WALK;
    gl_thread_add(&m->walks, 1);
    bool ok = n >= 2 && n <= GL_MEMO_FRAMES && key->sp && key->want <= 0xffff &&
              describe(&m->scratch, key, frames, n, walk, nwalk);
    if (ok) {
        unsigned i = victim(m);
        m->key[i].sp = 0;
        pack(&m->e[i], &m->scratch, frames, n);
        m->e[i].id = id;
        m->e[i].referenced = 0;
        m->key[i].want = (uint16_t)key->want;
        m->key[i].generation = key->generation;
        m->key[i].sp = key->sp;
    } else
        gl_thread_add(&m->refused, 1);
    leave(m);
    return ok;
}

void gl_stack_memo_add_counts(const struct gl_stack_memo *m, struct gl_stack_memo_counts *c)
{
    c->hits += (uint64_t)atomic_load_explicit(&m->hits, memory_order_relaxed);
    c->walks += (uint64_t)atomic_load_explicit(&m->walks, memory_order_relaxed);
    c->refused += (uint64_t)atomic_load_explicit(&m->refused, memory_order_relaxed);
    c->skipped += (uint64_t)atomic_load_explicit(&m->skipped, memory_order_relaxed);
    c->bytes +=
        gl_tool_page_round(sizeof *m) + atomic_load_explicit(&m->room_bytes, memory_order_relaxed);
}
