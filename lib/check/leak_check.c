/* SPDX-License-Identifier: MIT */
#include "check/leak_check.h"

#include <stdlib.h>
#include <string.h>

#include "check/reachability.h"
#include "event/event.h"
#include "base/tool.h"

enum gl_leak_kind gl_leak_check_classify(const struct gl_block_info *b, void *arg)
{
    (void)arg;
    if ((b->flags & GL_BLK_POOL) || b->kind == GL_MEM_POOL_RESERVE ||
        b->kind == GL_MEM_GRAPH_RESERVE)
        return GL_LEAK_CACHED;
    if (b->flags & GL_BLK_REACH_START)
        return GL_LEAK_REACHABLE;
    if (b->flags & GL_BLK_REACH_INTERIOR)
        return GL_LEAK_POSSIBLE;
    if (b->flags & GL_BLK_INDIRECT)
        return GL_LEAK_INDIRECT;
    return GL_LEAK_DEFINITE;
}

/* The sort key of ignored blocks: after every leak kind, in no record. */
#define IGNORED_KIND GL_LEAK_NKINDS

/* Blocks are sorted by (leak kind, stack, allocation number) through an index, so
 * that each loss record is one run and its first block the oldest. */
struct keyed {
    uint32_t kind;
    uint32_t stack;
    uint32_t mem_api; /* memory kind and API: they tell records apart when stacks
                         are missing (libunwind unavailable) */
    uint64_t seq;
    size_t index;
};

static bool same_record(const struct keyed *x, const struct keyed *y)
{
    return x->kind == y->kind && x->stack == y->stack && x->mem_api == y->mem_api;
}

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    if (x->mem_api != y->mem_api)
        return x->mem_api < y->mem_api ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return 0;
}

/* Ascending by bytes, as Valgrind prints them: the biggest last, next to the summary.
 * Ties are broken by blocks, then leak kind, then the first allocation, so that
 * the order never depends on the table's. */
static int cmp_record(const void *a, const void *b)
{
    const struct gl_loss_record *x = a, *y = b;
    uint64_t tx = x->bytes + x->indirect_bytes, ty = y->bytes + y->indirect_bytes;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    if (x->blocks != y->blocks)
        return x->blocks < y->blocks ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->seq_min != y->seq_min)
        return x->seq_min < y->seq_min ? -1 : 1;
    return 0;
}

static uint64_t device_bit(const struct gl_block_info *b)
{
    if (b->kind == GL_MEM_HOST_PINNED || b->kind == GL_MEM_HOST_REGISTERED)
        return 1ULL << GL_RECORD_HOST_BIT;
    if (b->device >= 0 && b->device < GL_RECORD_UNKNOWN_DEVICE_BIT)
        return 1ULL << b->device;
    return 1ULL << GL_RECORD_UNKNOWN_DEVICE_BIT;
}

int gl_leak_check(struct gl_block_info *blocks, size_t n, const uint64_t *indirect,
                  gl_classify_fn classify, void *arg, struct gl_leak_result *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return 0;
    size_t kbytes = n * sizeof(struct keyed);
    struct keyed *keys = gl_tool_map(kbytes);
    if (!keys)
        return -1;
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t k;
        if (blocks[i].flags & GL_BLK_IGNORED) {
            k = IGNORED_KIND;
            out->ignored.bytes += blocks[i].size;
            out->ignored.blocks++;
        } else {
            k = (uint32_t)classify(&blocks[i], arg);
            out->kind[k].bytes += blocks[i].size;
            out->kind[k].blocks++;
            shown++;
        }
        keys[i] = (struct keyed){k, blocks[i].stack, (uint32_t)blocks[i].kind << 16 | blocks[i].api,
                                 blocks[i].seq, i};
        out->in_use.bytes += blocks[i].size;
        out->in_use.blocks++;
        if (blocks[i].flags & GL_BLK_IMPORTED) {
            out->imported.bytes += blocks[i].size;
            out->imported.blocks++;
        }
    }
    qsort(keys, n, sizeof *keys, cmp_keyed);

    size_t nrec = 0;
    for (size_t i = 0; i < shown; i++)
        if (i == 0 || !same_record(&keys[i], &keys[i - 1]))
            nrec++;
    out->records_bytes = nrec * sizeof *out->records;
    out->records = nrec ? gl_tool_map(out->records_bytes) : NULL;
    size_t sorted_bytes = n * sizeof *blocks;
    struct gl_block_info *sorted = gl_tool_map(sorted_bytes);
    if ((nrec && !out->records) || !sorted) {
        gl_tool_unmap(out->records, out->records_bytes);
        gl_tool_unmap(sorted, sorted_bytes);
        gl_tool_unmap(keys, kbytes);
        memset(out, 0, sizeof *out);
        return -1;
    }
    /* Blocks in record order, so that each record names its blocks as a range. */
    for (size_t i = 0; i < n; i++)
        sorted[i] = blocks[keys[i].index];
    memcpy(blocks, sorted, sorted_bytes);
    gl_tool_unmap(sorted, sorted_bytes);
    out->blocks = blocks;

    struct gl_loss_record *r = NULL;
    for (size_t i = 0; i < shown; i++) {
        const struct gl_block_info *b = &blocks[i];
        if (!r || !same_record(&keys[i], &keys[i - 1])) {
            r = &out->records[out->nrecords++];
            r->kind = (enum gl_leak_kind)keys[i].kind;
            r->stack = keys[i].stack;
            r->first = *b; /* keys are sorted by seq within a record */
            r->seq_min = b->seq;
            r->block_begin = i;
        }
        r->bytes += b->size;
        if (indirect)
            r->indirect_bytes += indirect[keys[i].index];
        r->blocks++;
        r->seq_max = b->seq;
        r->devices |= device_bit(b);
        if (b->flags & GL_BLK_SIZE_UNKNOWN)
            r->size_unknown++;
    }
    gl_tool_unmap(keys, kbytes);
    qsort(out->records, out->nrecords, sizeof *out->records, cmp_record);
    return 0;
}

void gl_leak_check_result_free(struct gl_leak_result *r)
{
    gl_tool_unmap(r->records, r->records_bytes);
    memset(r, 0, sizeof *r);
}
