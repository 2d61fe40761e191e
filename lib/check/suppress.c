/* SPDX-License-Identifier: MIT */
#include "check/suppress.h"

#include <stdlib.h>

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
