#include "stack_memo.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "tool_alloc.h"

/* Slot offsets are kept in 8-byte words from the capture's stack pointer, in
 * 16 bits: stacks up to 512 KiB deep from the capture to the last frame kept. */
#define MAX_WORDS 0xffffu

struct gl_memo_entry {
    uint32_t id;
    uint16_t n;     /* frames, frames[0] included */
    uint16_t first; /* where a lookup starts comparing (1 <= first < n) */
    uint16_t nfp;   /* frame pointers checked */
    uint8_t referenced;
    uintptr_t frame0;              /* frames[0]: inside the capturing function */
    uint16_t word[GL_MEMO_FRAMES]; /* frames[i] lies at sp + 8 * word[i], i >= 1 */
    uintptr_t ret[GL_MEMO_FRAMES]; /* frames[i] */
    /* Frame pointers that pointed into the stack, and where each was saved. */
    uint16_t fp_word[GL_MEMO_FRAMES];
    uintptr_t fp[GL_MEMO_FRAMES];
};

/* What a lookup compares first, apart from the entries (16 bytes: four to a
 * cache line).  sp 0 marks an empty entry, and one being rewritten: a signal
 * handler's capture on the same thread must not see it half written. */
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
    int64_t tokens;
    /* Written by the owner, read by reports: relaxed atomics (plain moves). */
    _Atomic uint64_t hits, walks, refused, skipped;
    struct gl_memo_entry e[GL_MEMO_ENTRIES];
};

static inline void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

#define TOKENS_START (2 * GL_MEMO_ENTRIES * GL_MEMO_LEARN_COST)

struct gl_stack_memo *gl_stack_memo_new(void)
{
    struct gl_stack_memo *m = gl_tool_map(sizeof *m);
    if (m)
        m->tokens = TOKENS_START;
    return m;
}

void gl_stack_memo_clear(struct gl_stack_memo *m)
{
    for (unsigned i = 0; i < GL_MEMO_ENTRIES; i++)
        m->key[i].sp = 0;
    m->tokens = TOKENS_START;
}

#if defined(__x86_64__)

static inline bool slot_holds(uintptr_t sp, uint16_t word, uintptr_t ret)
{
    return *(const uintptr_t *)(sp + (uintptr_t)word * 8) == ret;
}

/* Compare the program's frames first (stacks with one stack pointer differ
 * there), then the frame pointers, then the internal frames before them. */
static bool matches(const struct gl_memo_entry *e, uintptr_t sp)
{
    for (unsigned i = e->first; i < e->n; i++)
        if (!slot_holds(sp, e->word[i], e->ret[i]))
            return false;
    for (unsigned i = 0; i < e->nfp; i++)
        if (!slot_holds(sp, e->fp_word[i], e->fp[i]))
            return false;
    for (unsigned i = 1; i < e->first; i++)
        if (!slot_holds(sp, e->word[i], e->ret[i]))
            return false;
    return true;
}

static inline bool key_is(const struct memo_key *k, const struct gl_memo_key *key)
{
    return k->sp == key->sp && k->want == key->want && k->generation == key->generation;
}

const struct gl_memo_entry *gl_stack_memo_find(struct gl_stack_memo *m, const struct gl_memo_key *key)
{
    for (unsigned j = 0; j <= GL_MEMO_ENTRIES; j++) {
        /* The last entry found first, then all in order (it again: rare). */
        unsigned i = j == 0 ? m->last : j - 1;
        if (!key_is(&m->key[i], key))
            continue;
        struct gl_memo_entry *e = &m->e[i];
        if (!matches(e, key->sp))
            continue;
        m->last = i;
        e->referenced = 1;
        bump(&m->hits);
        if (m->tokens < TOKENS_START)
            m->tokens++;
        return e;
    }
    return NULL;
}

#else

const struct gl_memo_entry *gl_stack_memo_find(struct gl_stack_memo *m, const struct gl_memo_key *key)
{
    (void)m;
    (void)key;
    return NULL;
}

#endif

unsigned gl_stack_memo_frames(const struct gl_memo_entry *e, uintptr_t *frames)
{
    frames[0] = e->frame0;
    memcpy(frames + 1, e->ret + 1, (e->n - 1u) * sizeof *frames);
    return e->n;
}

uint32_t gl_stack_memo_id(const struct gl_memo_entry *e) { return e->id; }

bool gl_stack_memo_may_learn(struct gl_stack_memo *m)
{
#if defined(__x86_64__)
    if (m->tokens >= GL_MEMO_LEARN_COST)
        return true;
#endif
    bump(&m->skipped);
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

bool gl_stack_memo_learn(struct gl_stack_memo *m, const struct gl_memo_key *key,
                         const uintptr_t *frames, unsigned n, const struct gl_unwind_frame *walk,
                         unsigned nwalk, unsigned first_kept, uint32_t id)
{
    m->tokens -= GL_MEMO_LEARN_COST;
    bump(&m->walks);
    if (n < 2 || n > GL_MEMO_FRAMES || first_kept >= n || key->sp == 0 || key->want > 0xffff)
        goto refuse;
    /* The walk starts inside the function that made it, called from the
     * capture: find where the capture's caller, frames[1], comes. */
    unsigned d = 0;
    while (d < nwalk && walk[d].ip != frames[1])
        d++;
    if (d == 0 || d + (n - 1) > nwalk)
        goto refuse;
    unsigned i = victim(m);
    struct gl_memo_entry *e = &m->e[i];
    m->key[i].sp = 0; /* until it is whole again: the entry stays empty if refused */
    atomic_signal_fence(memory_order_seq_cst);
    unsigned nfp = 0;
    for (unsigned f = 1; f < n; f++) {
        const struct gl_unwind_frame *w = &walk[d + f - 1];
        /* Its return address: 8 bytes below the stack pointer it was called with. */
        long word = word_of(key->sp, w->sp - 8);
        if (w->ip != frames[f] || word < 0 || *(const uintptr_t *)(w->sp - 8) != w->ip)
            goto refuse;
        e->word[f] = (uint16_t)word;
        e->ret[f] = w->ip;
        /* Its frame pointer, if it points into the stack: the frame may find
         * its caller's return address by it (a frame of variable size), so the
         * value must be the same for the next slot to be where it was.  Other
         * values (rbp as a general register) cannot place a frame. */
        if (f == n - 1 || word_of(key->sp, w->fp) < 0)
            continue;
        long fp_word = word_of(key->sp, w->fp_at);
        if (fp_word < 0 || *(const uintptr_t *)w->fp_at != w->fp)
            goto refuse; /* saved where it cannot be checked */
        if (!nfp || e->fp_word[nfp - 1] != fp_word) { /* one saved value may serve several frames */
            if (nfp == GL_MEMO_FRAMES)
                goto refuse;
            e->fp_word[nfp] = (uint16_t)fp_word;
            e->fp[nfp++] = w->fp;
        }
        /* A frame pointer not 16 bytes below the caller's stack pointer: not
         * the usual frame (push rbp; mov rsp, rbp).  GCC's realigned frames
         * find their caller through the word below the frame pointer (its
         * DRAP): check that word too. */
        long drap = word_of(key->sp, w->fp - 8);
        if (walk[d + f].sp != w->fp + 16 && drap >= 0) {
            if (nfp == GL_MEMO_FRAMES)
                goto refuse;
            e->fp_word[nfp] = (uint16_t)drap;
            e->fp[nfp++] = *(const uintptr_t *)(w->fp - 8);
        }
    }
    e->frame0 = frames[0];
    e->n = (uint16_t)n;
    e->first = (uint16_t)(first_kept ? first_kept : 1);
    e->nfp = (uint16_t)nfp;
    e->id = id;
    e->referenced = 0;
    m->key[i].want = (uint16_t)key->want;
    m->key[i].generation = key->generation;
    atomic_signal_fence(memory_order_seq_cst);
    m->key[i].sp = key->sp;
    return true;
refuse:
    bump(&m->refused);
    return false;
}

void gl_stack_memo_add_counts(const struct gl_stack_memo *m, struct gl_stack_memo_counts *c)
{
    c->hits += atomic_load_explicit(&m->hits, memory_order_relaxed);
    c->walks += atomic_load_explicit(&m->walks, memory_order_relaxed);
    c->refused += atomic_load_explicit(&m->refused, memory_order_relaxed);
    c->skipped += atomic_load_explicit(&m->skipped, memory_order_relaxed);
    c->bytes += gl_tool_page_round(sizeof *m);
}
