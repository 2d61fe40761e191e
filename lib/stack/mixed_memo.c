/* SPDX-License-Identifier: MIT */
#include "stack/mixed_memo.h"

#include <stdatomic.h>
#include <string.h>

#include "base/thread.h"
#include "base/tool.h"
#include "base/warm.h"
#include "common/util.h"

#define WAYS 8
#define SETS 8
#define ENTRIES (WAYS * SETS)
#define END_WORDS(groups) (((groups) + 3u) / 4u) /* four ends a word */

struct entry {
    uint32_t id;         /* 0: empty */
    unsigned generation; /* of the module ranges the merge classified frames with */
    unsigned keep;       /* the frames kept, native << 16 | Python */
    unsigned py_n, py_groups;
    /* The native frames the merge read: a prefix of the stack, or, when
     * whole, the stack's every frame (its end mattered). */
    unsigned native_n;
    bool whole;
    unsigned raw_need; /* a prefix entry's: the raw frames a capture checks */
    uintptr_t w[GL_MIXED_MEMO_PYTHON + END_WORDS(GL_MIXED_MEMO_PYTHON) + GL_MIXED_MEMO_NATIVE];
} __attribute__((aligned(64)));

struct set {
    uint32_t hash[WAYS]; /* of the Python frames; 0: empty */
    uint32_t used[WAYS]; /* the memo's clock at the way's last hit or store */
};

struct gl_mixed_memo {
    volatile unsigned gen; /* odd while written */
    unsigned clock;
    _Atomic int64_t probe_hits, whole_hits, stores; /* the owner's (gl_thread_add) */
    struct set set[SETS] __attribute__((aligned(64)));
    struct entry e[ENTRIES];
};

/* The two sets a stack may go in (never the same), in the order a lookup
 * reads them. */
struct places {
    unsigned set[2];
    uint32_t hash;
};

static inline struct places places_of(uint64_t h)
{
    unsigned a = (unsigned)(h >> 40) % SETS;
    struct places p = {{a, (a + 1 + (unsigned)(h >> 48) % (SETS - 1)) % SETS}, (uint32_t)h};
    return p;
}

static bool collide;

void gl_mixed_memo_add_counts(const struct gl_mixed_memo *m, struct gl_mixed_memo_counts *c)
{
    c->probe_hits += (uint64_t)atomic_load_explicit(&m->probe_hits, memory_order_relaxed);
    c->whole_hits += (uint64_t)atomic_load_explicit(&m->whole_hits, memory_order_relaxed);
    c->stores += (uint64_t)atomic_load_explicit(&m->stores, memory_order_relaxed);
}

void gl_mixed_memo_collide(bool on) { collide = on; }

GL_HOT uint64_t gl_mixed_memo_hash(const struct gl_python_stack *py)
{
    if (__builtin_expect(collide, 0))
        return 1;
    uint64_t h = py->ngroups;
    for (unsigned i = 0; i < py->n; i++)
        h = (h ^ py->frames[i]) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h | 1;
}

struct gl_mixed_memo *gl_mixed_memo_new(void) { return gl_tool_map(sizeof(struct gl_mixed_memo)); }

void gl_mixed_memo_free(struct gl_mixed_memo *m)
{
    if (m)
        gl_tool_unmap(m, sizeof *m);
}

void gl_mixed_memo_forget(struct gl_mixed_memo *m)
{
    if (m->gen & 1)
        return;
    m->gen += 1;
    atomic_signal_fence(memory_order_seq_cst);
    memset(m->set, 0, sizeof m->set);
    atomic_signal_fence(memory_order_seq_cst);
    m->gen += 1;
}

GL_HOT void gl_mixed_memo_warm(const struct gl_mixed_memo *m) { gl_warm(m); }

/* Whether e may have been made of these Python frames, at this depth. */
static inline bool may_be(const struct entry *e, const struct gl_mixed_key *k)
{
    return e->id && e->keep == k->keep && e->py_n == k->py->n && e->py_groups == k->py->ngroups &&
           e->generation == k->generation;
}

enum match { WHOLE_OR_PREFIX, PREFIX_ONLY };

/* Whether e was made of these frames, or of frames the merge cannot tell
 * from them: n native frames, the stack's whole (how must allow a whole
 * entry), else its prefix (a prefix entry compares its own; a whole one
 * needs the whole stack). */
GL_HOT static bool same(const struct entry *e, const struct gl_mixed_key *k,
                        const uintptr_t *native, unsigned n, enum match how)
{
    if (!may_be(e, k))
        return false;
    unsigned native_n = e->native_n; /* read once: the compare below uses it */
    if (e->whole ? how == PREFIX_ONLY || native_n != n : native_n > n)
        return false;
    /* Only now are the counts the entry's own: its words hold them. */
    const struct gl_python_stack *py = k->py;
    const uintptr_t *ends = e->w + py->n, *nat = ends + END_WORDS(py->ngroups);
    return memcmp(e->w, py->frames, py->n * sizeof *py->frames) == 0 &&
           memcmp(ends, py->ends, py->ngroups * sizeof *py->ends) == 0 &&
           memcmp(nat, native, native_n * sizeof *native) == 0;
}

/* The entry made of these frames, marked used; NULL if none. */
GL_HOT static struct entry *lookup(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                                   const uintptr_t *native, unsigned n, enum match how)
{
    struct places p = places_of(k->hash);
    for (unsigned c = 0; c < 2; c++) {
        struct set *set = &m->set[p.set[c]];
        for (unsigned w = 0; w < WAYS; w++) {
            struct entry *e = &m->e[p.set[c] * WAYS + w];
            if (set->hash[w] == p.hash && same(e, k, native, n, how)) {
                set->used[w] = ++m->clock; /* a hint: a handler's capture may race it */
                return e;
            }
        }
    }
    return NULL;
}

static inline unsigned max_of(unsigned a, unsigned b) { return a > b ? a : b; }

GL_HOT uint32_t gl_mixed_memo_find(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                                   const uintptr_t *native, unsigned n, unsigned raw_base,
                                   unsigned read)
{
    unsigned gen = m->gen;
    if (gen & 1)
        return 0;
    atomic_signal_fence(memory_order_seq_cst);
    struct entry *e = lookup(m, k, native, n, WHOLE_OR_PREFIX);
    uint32_t found = e ? e->id : 0;
    unsigned need = e && !e->whole ? max_of(raw_base + e->native_n, read) : 0;
    atomic_signal_fence(memory_order_seq_cst);
    if (!found || m->gen != gen)
        return 0;
    /* The probe missed this stack (its internal run is longer than the one
     * the entry was made with): look further next time.  A signal handler's
     * capture that replaced the entry between the check and the store leaves
     * it a wrong raw_need: a probe that reads more, or one that misses and
     * has the whole compare raise it again, never a wrong id (mixed_memo.h). */
    if (need > e->raw_need)
        e->raw_need = need;
    gl_thread_add(&m->whole_hits, 1);
    return found;
}

GL_HOT unsigned gl_mixed_memo_need(const struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                                   unsigned *stamp)
{
    unsigned gen = m->gen;
    *stamp = gen;
    if (gen & 1)
        return 0;
    atomic_signal_fence(memory_order_seq_cst);
    struct places p = places_of(k->hash);
    unsigned need = 0;
    for (unsigned c = 0; c < 2; c++) {
        const struct set *set = &m->set[p.set[c]];
        for (unsigned w = 0; w < WAYS; w++) {
            const struct entry *e = &m->e[p.set[c] * WAYS + w];
            if (set->hash[w] == p.hash && !e->whole && may_be(e, k))
                need = max_of(need, e->raw_need);
        }
    }
    atomic_signal_fence(memory_order_seq_cst);
    return m->gen == gen ? need : 0;
}

GL_HOT uint32_t gl_mixed_memo_find_prefix(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                                          const uintptr_t *native, unsigned n, unsigned stamp)
{
    if ((stamp & 1) || m->gen != stamp)
        return 0;
    atomic_signal_fence(memory_order_seq_cst);
    const struct entry *e = lookup(m, k, native, n, PREFIX_ONLY);
    uint32_t found = e ? e->id : 0;
    atomic_signal_fence(memory_order_seq_cst);
    if (!found || m->gen != stamp)
        return 0;
    gl_thread_add(&m->probe_hits, 1);
    return found;
}

void gl_mixed_memo_put(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                       const uintptr_t *native, unsigned n, unsigned used, unsigned raw_need,
                       uint32_t id)
{
    const struct gl_python_stack *py = k->py;
    if (!gl_mixed_memo_fits(n, py) || !id)
        return;
    unsigned gen = m->gen;
    if (gen & 1)
        return;
    m->gen = gen + 1;
    atomic_signal_fence(memory_order_seq_cst);
    /* The way that holds these frames already (put runs after any miss, also
     * where the native memo missed and find was not asked: copies of one
     * stack would push the sets' other stacks out), else an empty way, else
     * the least recently used. */
    if (!lookup(m, k, native, n, WHOLE_OR_PREFIX)) {
        struct places p = places_of(k->hash);
        unsigned vs = p.set[0], vw = 0;
        for (unsigned c = 0; c < 2 && m->set[vs].hash[vw]; c++) {
            const struct set *set = &m->set[p.set[c]];
            for (unsigned w = 0; w < WAYS; w++)
                if (!set->hash[w] || m->clock - set->used[w] > m->clock - m->set[vs].used[vw]) {
                    vs = p.set[c];
                    vw = w;
                    if (!set->hash[w])
                        break;
                }
        }
        struct set *set = &m->set[vs];
        struct entry *e = &m->e[vs * WAYS + vw];
        set->hash[vw] = p.hash;
        set->used[vw] = ++m->clock;
        e->id = id;
        e->generation = k->generation;
        e->keep = k->keep;
        e->whole = used >= n;
        e->native_n = e->whole ? n : used;
        e->raw_need = raw_need;
        e->py_n = py->n;
        e->py_groups = py->ngroups;
        uintptr_t *ends = e->w + py->n;
        memcpy(e->w, py->frames, py->n * sizeof *py->frames);
        memset(ends, 0, END_WORDS(py->ngroups) * sizeof *ends);
        memcpy(ends, py->ends, py->ngroups * sizeof *py->ends);
        memcpy(ends + END_WORDS(py->ngroups), native, e->native_n * sizeof *native);
        gl_thread_add(&m->stores, 1);
    }
    atomic_signal_fence(memory_order_seq_cst);
    m->gen = gen + 2;
}
