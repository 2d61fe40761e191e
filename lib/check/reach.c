/* SPDX-License-Identifier: MIT */
#include "check/reach.h"

#include <setjmp.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/search.h"
#include "common/sort.h"
#include "common/util.h"

/* ---- sorting without allocation ---- */

#define BY_START(a, b) ((a)->start < (b)->start)
GL_SORT_DEFINE(sort_objects, struct gl_reach_object, BY_START)
GL_SORT_DEFINE(sort_targets, struct gl_reach_target, BY_START)

void gl_reach_sort_objects(struct gl_reach_object *v, size_t n) { sort_objects(v, n); }
void gl_reach_sort_targets(struct gl_reach_target *v, size_t n) { sort_targets(v, n); }

/* ---- granule indexes ---- */

#define OBJ_SHIFT 16           /* 64 KiB granules for objects */
#define TGT_SHIFT 21           /* 2 MiB granules for targets */
#define BIG_OBJECT (16u << 20) /* objects this large are looked up on their own */
#define BIG_TARGET (1ULL << 30)
#define EMPTY_KEY UINT64_MAX

/* granule -> [lo, hi): the objects (or targets) that overlap it */
struct granule {
    uint64_t key;
    uint32_t lo, hi;
};

struct gindex {
    struct granule *v;
    size_t cap; /* power of two */
};

static inline size_t ghash(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

static struct granule *gfind(const struct gindex *g, uint64_t key)
{
    if (!g->cap)
        return NULL;
    for (size_t i = ghash(key, g->cap);; i = (i + 1) & (g->cap - 1)) {
        if (g->v[i].key == key)
            return &g->v[i];
        if (g->v[i].key == EMPTY_KEY)
            return NULL;
    }
}

static void gadd(struct gindex *g, uint64_t key, uint32_t idx)
{
    size_t i = ghash(key, g->cap);
    for (;; i = (i + 1) & (g->cap - 1)) {
        if (g->v[i].key == key) {
            g->v[i].hi = idx + 1; /* items are added in order: they stay contiguous */
            return;
        }
        if (g->v[i].key == EMPTY_KEY)
            break;
    }
    g->v[i] = (struct granule){key, idx, idx + 1};
}

static size_t pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n)
        c *= 2;
    return c;
}

/* Granules an index needs for [start, end) (0 for big ones, indexed apart). */
static size_t span(uint64_t start, uint64_t end, unsigned shift, uint64_t big)
{
    if (end <= start || end - start >= big)
        return 0;
    return (size_t)(((end - 1) >> shift) - (start >> shift) + 1);
}

struct handle_slot {
    uint64_t handle;
    uint32_t target;
};

struct ctx {
    struct gl_reach *r;
    struct gindex oidx, tidx;
    struct handle_slot *handles;
    size_t hcap;
    uint32_t *big_objects, nbig_objects;
    uint32_t *big_targets, nbig_targets;
    uint64_t *visited; /* bitmap over objects */
    uint32_t *stack;
    size_t sp;
    /* bounds: a word outside them cannot be what they hold */
    uint64_t o_lo, o_span, t_lo, t_span, h_lo, h_span;
    /* The last pass: the lost object being read (index + 1), 0 before it. */
    uint32_t lost_holder;
};

static size_t handle_count(const struct gl_reach *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        n += r->targets[i].handle != 0;
    return n;
}

/* The scratch layout, computed once for sizing and once for use. */
struct layout {
    size_t visited, stack, ogran, tgran, handles, bigo, bigt, total;
    size_t ocap, tcap, hcap;
};

static struct layout plan(const struct gl_reach *r)
{
    struct layout l;
    memset(&l, 0, sizeof l);
    size_t og = 0, tg = 0, nbo = 0, nbt = 0;
    for (size_t i = 0; i < r->nobjects; i++) {
        size_t s = span(r->objects[i].start, r->objects[i].end, OBJ_SHIFT, BIG_OBJECT);
        og += s;
        nbo += s == 0 && r->objects[i].end > r->objects[i].start;
    }
    for (size_t i = 0; i < r->ntargets; i++) {
        size_t s = span(r->targets[i].start, r->targets[i].end, TGT_SHIFT, BIG_TARGET);
        tg += s;
        nbt += s == 0 && r->targets[i].end > r->targets[i].start;
    }
    l.ocap = og ? pow2_at_least(og * 2) : 0;
    l.tcap = tg ? pow2_at_least(tg * 2) : 0;
    size_t nh = handle_count(r);
    l.hcap = nh ? pow2_at_least(nh * 2) : 0;
    size_t off = 0;
#define PLACE(field, bytes)                                                                        \
    do {                                                                                           \
        l.field = off;                                                                             \
        off += ((bytes) + 63) & ~(size_t)63;                                                       \
    } while (0)
    PLACE(visited, ((r->nobjects + 63) / 64) * 8);
    PLACE(stack, r->nobjects * sizeof(uint32_t));
    PLACE(ogran, l.ocap * sizeof(struct granule));
    PLACE(tgran, l.tcap * sizeof(struct granule));
    PLACE(handles, l.hcap * sizeof(struct handle_slot));
    PLACE(bigo, nbo * sizeof(uint32_t));
    PLACE(bigt, nbt * sizeof(uint32_t));
#undef PLACE
    l.total = off;
    return l;
}

size_t gl_reach_scratch_bytes(const struct gl_reach *r) { return plan(r).total; }

/* ---- lookups ---- */

static inline void mark(const struct ctx *c, struct gl_reach_target *t, uint64_t w)
{
    if (__builtin_expect(c->lost_holder != 0, 0)) {
        if (t->state == GL_REACH_NONE) { /* only lost memory holds it */
            t->state = GL_REACH_VIA_LOST;
            t->held_by = c->lost_holder;
        }
        return;
    }
    uint8_t s = w == t->start ? GL_REACH_START : GL_REACH_INTERIOR;
    if (s > t->state)
        t->state = s;
}

static void hit_target(struct ctx *c, uint64_t w)
{
    struct gl_reach_target *t = c->r->targets;
    const struct granule *g = gfind(&c->tidx, w >> TGT_SHIFT);
    if (g) {
        size_t i = GL_SEARCH_CONTAINING(t + g->lo, g->hi - g->lo, start, end, w);
        if (i < g->hi - g->lo) {
            mark(c, &t[g->lo + i], w);
            return;
        }
    }
    for (uint32_t k = 0; k < c->nbig_targets; k++) {
        struct gl_reach_target *b = &t[c->big_targets[k]];
        if (w >= b->start && w < b->end) {
            mark(c, b, w);
            return;
        }
    }
}

static void hit_handle(struct ctx *c, uint64_t w)
{
    for (size_t i = ghash(w, c->hcap);; i = (i + 1) & (c->hcap - 1)) {
        if (c->handles[i].handle == w) {
            struct gl_reach_target *t = &c->r->targets[c->handles[i].target];
            mark(c, t, t->start); /* a handle names the whole target */
            return;
        }
        if (c->handles[i].handle == 0)
            return;
    }
}

static void enter(struct ctx *c, size_t i)
{
    const struct gl_reach_object *o = &c->r->objects[i];
    if (c->lost_holder) /* the last pass reads every lost object itself */
        return;
    if (!o->traversable || (c->visited[i / 64] >> (i % 64) & 1))
        return;
    c->visited[i / 64] |= 1ULL << (i % 64);
    GL_ASSERT(c->sp < c->r->nobjects, "an object enters the stack once: it holds them all");
    c->stack[c->sp++] = (uint32_t)i;
}

static void hit_object(struct ctx *c, uint64_t w)
{
    const struct gl_reach_object *o = c->r->objects;
    const struct granule *g = gfind(&c->oidx, w >> OBJ_SHIFT);
    if (g) {
        size_t i = GL_SEARCH_CONTAINING(o + g->lo, g->hi - g->lo, start, end, w);
        if (i < g->hi - g->lo) {
            enter(c, g->lo + i);
            return;
        }
    }
    for (uint32_t k = 0; k < c->nbig_objects; k++) {
        uint32_t i = c->big_objects[k];
        if (w >= o[i].start && w < o[i].end) {
            enter(c, i);
            return;
        }
    }
}

/* GPULEAK_DEBUG_REACH=1: every word found pointing into a block, with where
 * it lies (0: a register), to stderr - which root keeps a block alive.  Written
 * with write(2) and no formatting library: the world is stopped. */
static int debug_reach = -1;

static void debug_hit(uint64_t where, uint64_t w)
{
    char line[64] = "gpuleak reach: 0x";
    size_t n = 17;
    for (int k = 60; k >= 0; k -= 4)
        line[n++] = "0123456789abcdef"[(where >> k) & 15];
    memcpy(line + n, " -> 0x", 6);
    n += 6;
    for (int k = 60; k >= 0; k -= 4)
        line[n++] = "0123456789abcdef"[(w >> k) & 15];
    line[n++] = '\n';
    ssize_t rc = write(2, line, n);
    (void)rc;
}

static void scan_words(struct ctx *c, uint64_t start, uint64_t end)
{
    const uint64_t *p = (const uint64_t *)(uintptr_t)((start + 7) & ~7ULL);
    const uint64_t *e = (const uint64_t *)(uintptr_t)(end & ~7ULL);
    uint64_t o_lo = c->o_lo, o_span = c->o_span, t_lo = c->t_lo, t_span = c->t_span;
    uint64_t h_lo = c->h_lo, h_span = c->h_span;
    for (; p < e; p++) {
        uint64_t w = *(const volatile uint64_t *)p;
        if (w - t_lo < t_span) {
            hit_target(c, w);
            if (__builtin_expect(debug_reach > 0, 0))
                debug_hit((uint64_t)(uintptr_t)p, w);
        }
        if (w - h_lo < h_span)
            hit_handle(c, w);
        if (w - o_lo < o_span)
            hit_object(c, w);
    }
}

/* ---- reading memory that may turn out unreadable ---- */

static sigjmp_buf guard_jb;
static volatile sig_atomic_t guard_armed;
static volatile pid_t guard_tid;
static struct sigaction old_segv, old_bus;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)si, (void)uc;
    if (guard_armed && (pid_t)syscall(SYS_gettid) == guard_tid) {
        guard_armed = 0;
        siglongjmp(guard_jb, 1);
    }
    /* Not ours: the program's own fault.  Let it happen as it would have. */
    sigaction(sig, sig == SIGSEGV ? &old_segv : &old_bus, NULL);
}

static void guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER; /* NODEFER: no mask to restore after the jump */
    sigemptyset(&sa.sa_mask);
    guard_tid = (pid_t)syscall(SYS_gettid);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
}

static void guard_remove(void)
{
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
}

/* Scan [start, end); false if it faulted (the rest of it is skipped). */
static bool scan_range(struct ctx *c, uint64_t start, uint64_t end)
{
    if (!c->r->guard_faults) {
        scan_words(c, start, end);
        return true;
    }
    if (sigsetjmp(guard_jb, 0)) {
        c->r->stats.faults++;
        return false;
    }
    guard_armed = 1;
    scan_words(c, start, end);
    guard_armed = 0;
    return true;
}

/* ---- the run ---- */

/* Scan every object reached and not yet scanned. */
static void drain(struct ctx *c)
{
    while (c->sp > 0) {
        const struct gl_reach_object *o = &c->r->objects[c->stack[--c->sp]];
        c->r->stats.objects_reached++;
        c->r->stats.object_bytes += o->end - o->start;
        scan_range(c, o->start, o->end);
    }
}

static void bounds_of_objects(struct ctx *c)
{
    const struct gl_reach *r = c->r;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < r->nobjects; i++)
        if (r->objects[i].traversable && r->objects[i].end > r->objects[i].start) {
            if (r->objects[i].start < lo)
                lo = r->objects[i].start;
            if (r->objects[i].end > hi)
                hi = r->objects[i].end;
        }
    c->o_lo = lo;
    c->o_span = hi > lo ? hi - lo : 0;
}

static void bounds_of_targets(struct ctx *c)
{
    const struct gl_reach *r = c->r;
    uint64_t lo = UINT64_MAX, hi = 0, hlo = UINT64_MAX, hhi = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        const struct gl_reach_target *t = &r->targets[i];
        if (t->end > t->start) {
            if (t->start < lo)
                lo = t->start;
            if (t->end > hi)
                hi = t->end;
        }
        if (t->handle) {
            if (t->handle < hlo)
                hlo = t->handle;
            if (t->handle >= hhi)
                hhi = t->handle + 1;
        }
    }
    c->t_lo = lo;
    c->t_span = hi > lo ? hi - lo : 0;
    c->h_lo = hlo;
    c->h_span = hhi > hlo ? hhi - hlo : 0;
}

int gl_reach_run(struct gl_reach *r, void *scratch, size_t scratch_bytes)
{
    if (debug_reach < 0) {
        const char *d = getenv("GPULEAK_DEBUG_REACH");
        debug_reach = d && *d == '1';
    }
    /* The lookups (GL_SEARCH_CONTAINING) find the last range starting at or
     * below a word: the only one that can hold it, if they do not overlap. */
    GL_ASSERT(GL_SEARCH_ARE_DISJOINT(r->objects, r->nobjects, start, end),
              "objects sorted by start, disjoint");
    GL_ASSERT(GL_SEARCH_ARE_DISJOINT(r->targets, r->ntargets, start, end),
              "targets sorted by start, disjoint");
    struct layout l = plan(r);
    if (scratch_bytes < l.total)
        return -1;
    memset(&r->stats, 0, sizeof r->stats);
    char *base = scratch;
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    c.visited = (uint64_t *)(base + l.visited);
    c.stack = (uint32_t *)(base + l.stack);
    c.oidx = (struct gindex){(struct granule *)(base + l.ogran), l.ocap};
    c.tidx = (struct gindex){(struct granule *)(base + l.tgran), l.tcap};
    c.handles = (struct handle_slot *)(base + l.handles);
    c.hcap = l.hcap;
    c.big_objects = (uint32_t *)(base + l.bigo);
    c.big_targets = (uint32_t *)(base + l.bigt);
    for (size_t i = 0; i < l.ocap; i++)
        c.oidx.v[i].key = EMPTY_KEY;
    for (size_t i = 0; i < l.tcap; i++)
        c.tidx.v[i].key = EMPTY_KEY;
    memset(c.visited, 0, ((r->nobjects + 63) / 64) * 8);
    memset(c.handles, 0, l.hcap * sizeof *c.handles);

    for (size_t i = 0; i < r->nobjects; i++) {
        const struct gl_reach_object *o = &r->objects[i];
        if (o->end <= o->start)
            continue;
        if (span(o->start, o->end, OBJ_SHIFT, BIG_OBJECT) == 0) {
            c.big_objects[c.nbig_objects++] = (uint32_t)i;
            continue;
        }
        for (uint64_t g = o->start >> OBJ_SHIFT; g <= (o->end - 1) >> OBJ_SHIFT; g++)
            gadd(&c.oidx, g, (uint32_t)i);
    }
    for (size_t i = 0; i < r->ntargets; i++) {
        struct gl_reach_target *t = &r->targets[i];
        t->state = GL_REACH_NONE;
        t->held_by = 0;
        if (t->handle) {
            size_t k = ghash(t->handle, c.hcap);
            while (c.handles[k].handle != 0 && c.handles[k].handle != t->handle)
                k = (k + 1) & (c.hcap - 1);
            c.handles[k] = (struct handle_slot){t->handle, (uint32_t)i};
        }
        if (t->end <= t->start)
            continue;
        if (span(t->start, t->end, TGT_SHIFT, BIG_TARGET) == 0) {
            c.big_targets[c.nbig_targets++] = (uint32_t)i;
            continue;
        }
        for (uint64_t g = t->start >> TGT_SHIFT; g <= (t->end - 1) >> TGT_SHIFT; g++)
            gadd(&c.tidx, g, (uint32_t)i);
    }
    bounds_of_objects(&c);
    bounds_of_targets(&c);

    if (r->guard_faults)
        guard_install();
    for (size_t i = 0; i < r->nroot_words; i++) {
        uint64_t w = r->root_words[i];
        if (w - c.t_lo < c.t_span) {
            hit_target(&c, w);
            if (__builtin_expect(debug_reach > 0, 0))
                debug_hit(0, w);
        }
        if (w - c.h_lo < c.h_span)
            hit_handle(&c, w);
        if (w - c.o_lo < c.o_span)
            hit_object(&c, w);
    }
    drain(&c);
    for (size_t i = 0; i < r->nroots; i++) {
        /* Each root, then everything it leads to, before the next root: the
         * stack never holds more than the objects (each enters once). */
        if (r->roots[i].end > r->roots[i].start) {
            scan_range(&c, r->roots[i].start, r->roots[i].end);
            r->stats.root_bytes += r->roots[i].end - r->roots[i].start;
        }
        drain(&c);
    }
    /* Valgrind's rule: a block that only lost blocks point to is indirectly
     * lost.  The program's objects no root led to are lost host memory:
     * their words are read too (each once, so chains of them are covered),
     * and a target they alone point to is held through them. */
    for (size_t i = 0; i < r->nobjects; i++) {
        const struct gl_reach_object *o = &r->objects[i];
        if (!o->traversable || o->end <= o->start || (c.visited[i / 64] >> (i % 64) & 1))
            continue;
        c.lost_holder = (uint32_t)i + 1;
        scan_range(&c, o->start, o->end);
        r->stats.lost_bytes += o->end - o->start;
    }
    c.lost_holder = 0;
    if (r->guard_faults)
        guard_remove();
    return 0;
}
