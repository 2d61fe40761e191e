/* SPDX-License-Identifier: MIT */
#include "check/checkpoints.h"

#include <stdlib.h>
#include <string.h>

#include "base/tool.h"

static struct gl_leak_ref last;
static struct gl_checkpoint *checkpoints;

uint32_t gl_checkpoints_record_api(const struct gl_loss_record *r)
{
    return (uint32_t)r->first.kind << 16 | r->first.api;
}

static int cmp_identity(const struct gl_ref_record *x, const struct gl_ref_record *y)
{
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    if (x->mem_api != y->mem_api)
        return x->mem_api < y->mem_api ? -1 : 1;
    return 0;
}

static int cmp_ref(const void *a, const void *b) { return cmp_identity(a, b); }

void gl_checkpoints_ref_free(struct gl_leak_ref *ref)
{
    gl_tool_unmap(ref->recs, ref->mapped);
    memset(ref, 0, sizeof *ref);
}

int gl_checkpoints_ref_take(struct gl_leak_ref *ref, const struct gl_leak_result *r)
{
    gl_checkpoints_ref_free(ref);
    memcpy(ref->kind, r->kind, sizeof ref->kind);
    ref->suppressed = r->suppressed;
    if (r->nrecords == 0)
        return 0;
    size_t bytes = r->nrecords * sizeof *ref->recs;
    ref->recs = gl_tool_map(bytes);
    if (!ref->recs)
        return -1;
    ref->mapped = bytes;
    for (size_t i = 0; i < r->nrecords; i++) {
        const struct gl_loss_record *lr = &r->records[i];
        ref->recs[i] = (struct gl_ref_record){
            .kind = (uint32_t)lr->kind,
            .stack = lr->stack,
            .mem_api = gl_checkpoints_record_api(lr),
            .suppressed = lr->suppressed_by != NULL,
            .bytes = lr->bytes,
            .blocks = lr->blocks,
        };
    }
    ref->n = r->nrecords;
    qsort(ref->recs, ref->n, sizeof *ref->recs, cmp_ref);
    return 0;
}

const struct gl_ref_record *gl_checkpoints_ref_find(const struct gl_leak_ref *ref,
                                                    const struct gl_loss_record *r)
{
    if (!ref || ref->n == 0)
        return NULL;
    struct gl_ref_record key = {
        .kind = (uint32_t)r->kind, .stack = r->stack, .mem_api = gl_checkpoints_record_api(r)};
    return bsearch(&key, ref->recs, ref->n, sizeof *ref->recs, cmp_ref);
}

struct gl_leak_ref *gl_checkpoints_last_check(void) { return &last; }

struct gl_checkpoint *gl_checkpoints_find(const char *name)
{
    if (!name)
        return NULL;
    for (struct gl_checkpoint *c = checkpoints; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

struct gl_checkpoint *gl_checkpoints_get(const char *name)
{
    if (!name || !name[0] || strlen(name) >= GL_CHECKPOINT_NAME_MAX)
        return NULL;
    struct gl_checkpoint *c = gl_checkpoints_find(name);
    if (c)
        return c;
    c = gl_tool_alloc(sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    strcpy(c->name, name);
    c->next = checkpoints;
    checkpoints = c;
    return c;
}

void gl_checkpoints_reset(void)
{
    gl_checkpoints_ref_free(&last);
    while (checkpoints) {
        struct gl_checkpoint *c = checkpoints;
        checkpoints = c->next;
        gl_checkpoints_ref_free(&c->ref);
        gl_tool_free(c, sizeof *c);
    }
}
