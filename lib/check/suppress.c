/* SPDX-License-Identifier: MIT */
#include "check/suppress.h"

#include <stdlib.h>
#include <string.h>

#include "stack/stack_depot.h"

static void move_totals(struct gl_leak_totals *from, struct gl_leak_totals *to,
                        const struct gl_loss_record *r)
{
    from->bytes -= r->bytes;
    from->blocks -= r->blocks;
    to->bytes += r->bytes;
    to->blocks += r->blocks;
}

void gl_suppress_records(struct gl_leak_result *r, struct gl_supp_set *s, gl_stack_frames_fn frames,
                         void *arg)
{
    if (!s || s->n == 0)
        return;
    for (size_t i = 0; i < s->n; i++)
        s->v[i].count = s->v[i].bytes = s->v[i].blocks = 0;
    /* Every frame a stack keeps: 57 KB, not on the stack of the program's
     * thread that asked for a check.  No memory for it: nothing is hidden. */
    struct gl_frame *f = NULL;
    if (frames && !(f = malloc(GL_STACK_MAX_FRAMES * sizeof *f)))
        return;
    for (size_t i = 0; i < r->nrecords; i++) {
        struct gl_loss_record *rec = &r->records[i];
        unsigned n = frames ? frames(rec->stack, f, GL_STACK_MAX_FRAMES / 2, arg) : 0;

        struct gl_supp *c = gl_suppressions_find(s, GL_SUPP_CACHED, f, n, rec->kind);
        if (c && rec->kind != GL_LEAK_CACHED) {
            move_totals(&r->kind[rec->kind], &r->kind[GL_LEAK_CACHED], rec);
            rec->kind = GL_LEAK_CACHED;
            rec->cached_by = c;
            c->count++;
            c->bytes += rec->bytes;
            c->blocks += rec->blocks;
        }
        struct gl_supp *e = gl_suppressions_find(s, GL_SUPP_LEAK, f, n, rec->kind);
        if (e) {
            move_totals(&r->kind[rec->kind], &r->suppressed, rec);
            rec->suppressed_by = e;
            e->count++;
            e->bytes += rec->bytes;
            e->blocks += rec->blocks;
        }
    }
    free(f);
}

/* Whether the first Cached entry that frames match, for some leak kind,
 * matches every kind. */
static bool held_whatever_kind(struct gl_supp_set *s, const struct gl_frame *f, unsigned n)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct gl_supp *e = &s->v[i];
        if (e->kind != GL_SUPP_CACHED || !e->leak_kinds)
            continue;
        unsigned some = (unsigned)__builtin_ctz(e->leak_kinds);
        if (gl_suppressions_matches(e, f, n, some))
            return e->leak_kinds == GL_LEAK_KINDS_ALL;
    }
    return false;
}

size_t gl_suppress_held_blocks(struct gl_supp_set *s, const struct gl_block_info *blocks, size_t n,
                               gl_stack_frames_fn frames, void *arg, uint8_t *held)
{
    memset(held, 0, n);
    if (!s || !frames || n == 0)
        return 0;
    bool any = false;
    for (size_t i = 0; i < s->n && !any; i++)
        any = s->v[i].kind == GL_SUPP_CACHED;
    if (!any)
        return 0;
    /* Each stack once: many blocks share one (a caching allocator's segments
     * come from a handful of call paths).  Open addressing over the stack
     * ids, at most half full; no memory: nothing held, the scan decides. */
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    struct seen {
        uint32_t stack;
        uint8_t used, held;
    } *seen = calloc(cap, sizeof *seen);
    struct gl_frame *f = malloc(GL_STACK_MAX_FRAMES * sizeof *f);
    size_t count = 0;
    for (size_t i = 0; seen && f && i < n; i++) {
        uint32_t st = blocks[i].stack;
        size_t j = (st * 2654435761u) & (cap - 1);
        while (seen[j].used && seen[j].stack != st)
            j = (j + 1) & (cap - 1);
        if (!seen[j].used) {
            unsigned nf = frames(st, f, GL_STACK_MAX_FRAMES / 2, arg);
            seen[j] = (struct seen){st, 1, nf && held_whatever_kind(s, f, nf)};
        }
        held[i] = seen[j].held;
        count += held[i];
    }
    free(f);
    free(seen);
    return count;
}
