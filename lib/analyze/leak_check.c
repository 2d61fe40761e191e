#include "leak_check.h"

#include <stdlib.h>
#include <string.h>

#include "track/tool_alloc.h"

enum gl_leak_kind gl_classify_all_definite(const struct gl_block_info *b, void *arg)
{
    (void)b;
    (void)arg;
    return GL_LEAK_DEFINITE;
}

/* Blocks are sorted by (leak kind, stack, allocation number) through an index, so
 * that each loss record is one run and its first block the oldest. */
struct keyed {
    uint32_t kind;
    uint32_t stack;
    uint64_t seq;
    size_t index;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return 0;
}

/* Ascending by bytes, as Valgrind prints them: the biggest last, next to the summary.
 * Ties are broken by blocks, then by the first allocation, for a stable order. */
static int cmp_record(const void *a, const void *b)
{
    const struct gl_loss_record *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
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
    return b->device >= 0 && b->device < 63 ? 1ULL << b->device : 1ULL << 63;
}

int gl_leak_check(struct gl_block_info *blocks, size_t n, gl_classify_fn classify, void *arg,
                  struct gl_leak_result *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return 0;
    size_t kbytes = n * sizeof(struct keyed);
    struct keyed *keys = gl_tool_map(kbytes);
    if (!keys)
        return -1;
    for (size_t i = 0; i < n; i++) {
        enum gl_leak_kind k = classify(&blocks[i], arg);
        keys[i] = (struct keyed){(uint32_t)k, blocks[i].stack, blocks[i].seq, i};
        out->kind[k].bytes += blocks[i].size;
        out->kind[k].blocks++;
        out->in_use.bytes += blocks[i].size;
        out->in_use.blocks++;
    }
    qsort(keys, n, sizeof *keys, cmp_keyed);

    size_t nrec = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || keys[i].kind != keys[i - 1].kind || keys[i].stack != keys[i - 1].stack)
            nrec++;
    out->records_bytes = nrec * sizeof *out->records;
    out->records = gl_tool_map(out->records_bytes);
    if (!out->records) {
        gl_tool_unmap(keys, kbytes);
        return -1;
    }
    struct gl_loss_record *r = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct gl_block_info *b = &blocks[keys[i].index];
        if (!r || keys[i].kind != r->kind || keys[i].stack != r->stack) {
            r = &out->records[out->nrecords++];
            r->kind = (enum gl_leak_kind)keys[i].kind;
            r->stack = keys[i].stack;
            r->first = *b; /* keys are sorted by seq within a record */
            r->seq_min = b->seq;
        }
        r->bytes += b->size;
        r->blocks++;
        r->seq_max = b->seq;
        r->devices |= device_bit(b);
        r->kinds |= 1u << b->kind;
        if (b->flags & GL_BLK_SIZE_UNKNOWN)
            r->size_unknown++;
    }
    gl_tool_unmap(keys, kbytes);
    qsort(out->records, out->nrecords, sizeof *out->records, cmp_record);
    return 0;
}

void gl_leak_result_free(struct gl_leak_result *r)
{
    gl_tool_unmap(r->records, r->records_bytes);
    memset(r, 0, sizeof *r);
}
