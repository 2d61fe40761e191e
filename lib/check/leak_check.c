/* SPDX-License-Identifier: MIT */
#include "check/leak_check.h"

#include <stdlib.h>
#include <string.h>

#include "check/reachability.h"
#include "event/event.h"
#include "base/tool.h"
#include "python/py_frames.h"

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
    uint32_t stack;   /* the block's, or its class under --leak-resolution */
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

/* ---- --leak-resolution ---- */

/* A stack's first frames as shown, as words that compare: a native frame's
 * address; a Python frame's code object and line (its address holds the
 * instruction's offset, which two frames at one line need not share). */
struct stack_key {
    uint32_t stack;
    uint32_t index; /* in the map's stacks */
    unsigned n;
    uint64_t word[GL_LEAK_MERGE_MAX_FRAMES];
};

static uint64_t frame_word(const struct gl_frame *f)
{
    if (f->python)
        return GL_PY_FRAME_TAG | (uint64_t)gl_py_frames_code(f->ip) << 32 | (uint32_t)f->line;
    return f->ip;
}

/* The same frames; a stack that shows none agrees only with itself. */
static bool same_frames(const struct stack_key *x, const struct stack_key *y)
{
    return x->n && x->n == y->n && memcmp(x->word, y->word, x->n * sizeof *x->word) == 0;
}

static int cmp_stack_key(const void *a, const void *b)
{
    const struct stack_key *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    for (unsigned i = 0; i < x->n; i++)
        if (x->word[i] != y->word[i])
            return x->word[i] < y->word[i] ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The blocks' stacks, distinct and sorted, and for each the class its records
 * go by: the lowest of the stacks agreeing with it.  (A record's own stack is
 * the lowest of its blocks': one of theirs, whatever other kinds or APIs the
 * class spans.) */
struct stack_map {
    uint32_t *stacks, *reps; /* n each, tool-mapped (bytes each) */
    size_t n, bytes;
};

static void stack_map_free(struct stack_map *m)
{
    gl_tool_unmap(m->stacks, m->bytes);
    gl_tool_unmap(m->reps, m->bytes);
    memset(m, 0, sizeof *m);
}

static int stack_map_make(const struct gl_block_info *blocks, size_t n,
                          const struct gl_leak_merge *merge, struct stack_map *m)
{
    m->bytes = n * sizeof *m->stacks;
    m->stacks = gl_tool_map(m->bytes);
    m->reps = gl_tool_map(m->bytes);
    size_t kbytes = n * sizeof(struct stack_key);
    struct stack_key *keys = gl_tool_map(kbytes);
    if (!m->stacks || !m->reps || !keys) {
        gl_tool_unmap(keys, kbytes);
        stack_map_free(m);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        m->stacks[i] = blocks[i].stack;
    qsort(m->stacks, n, sizeof *m->stacks, cmp_u32);
    m->n = 0;
    for (size_t i = 0; i < n; i++)
        if (m->n == 0 || m->stacks[i] != m->stacks[m->n - 1])
            m->stacks[m->n++] = m->stacks[i];
    unsigned want =
        merge->frames < GL_LEAK_MERGE_MAX_FRAMES ? merge->frames : GL_LEAK_MERGE_MAX_FRAMES;
    for (size_t i = 0; i < m->n; i++) {
        struct gl_frame f[2 * GL_LEAK_MERGE_MAX_FRAMES];
        unsigned got = m->stacks[i] ? merge->stack_frames(m->stacks[i], f, want, merge->arg) : 0;
        keys[i] = (struct stack_key){.stack = m->stacks[i], .index = (uint32_t)i};
        keys[i].n = got < want ? got : want; /* the first frames shown, whichever their kind */
        for (unsigned j = 0; j < keys[i].n; j++)
            keys[i].word[j] = frame_word(&f[j]);
    }
    qsort(keys, m->n, sizeof *keys, cmp_stack_key);
    for (size_t i = 0, first = 0; i < m->n; i++) {
        if (!same_frames(&keys[i], &keys[first]))
            first = i;
        m->reps[keys[i].index] = keys[first].stack;
    }
    gl_tool_unmap(keys, kbytes);
    return 0;
}

/* The class a block's record goes by. */
static uint32_t record_stack(const struct stack_map *m, uint32_t stack)
{
    if (!m->n)
        return stack;
    const uint32_t *at = bsearch(&stack, m->stacks, m->n, sizeof stack, cmp_u32);
    return at ? m->reps[at - m->stacks] : stack;
}

int gl_leak_check(struct gl_block_info *blocks, size_t n, const uint64_t *indirect,
                  gl_classify_fn classify, void *arg, const struct gl_leak_merge *merge,
                  struct gl_leak_result *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return 0;
    struct stack_map map = {0};
    if (merge && merge->frames && merge->stack_frames && stack_map_make(blocks, n, merge, &map) < 0)
        return -1;
    size_t kbytes = n * sizeof(struct keyed);
    struct keyed *keys = gl_tool_map(kbytes);
    if (!keys) {
        stack_map_free(&map);
        return -1;
    }
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
        keys[i] = (struct keyed){k, record_stack(&map, blocks[i].stack),
                                 (uint32_t)blocks[i].kind << 16 | blocks[i].api, blocks[i].seq, i};
        out->in_use.bytes += blocks[i].size;
        out->in_use.blocks++;
        if (blocks[i].flags & GL_BLK_IMPORTED) {
            out->imported.bytes += blocks[i].size;
            out->imported.blocks++;
        }
    }
    stack_map_free(&map);
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
            r->stack = b->stack;
            r->first = *b; /* keys are sorted by seq within a record */
            r->seq_min = b->seq;
            r->block_begin = i;
        }
        if (b->stack < r->stack) /* merged (--leak-resolution): the lowest of its blocks' */
            r->stack = b->stack;
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
