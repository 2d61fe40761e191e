/* SPDX-License-Identifier: MIT */
#include "check/device_scan.h"

#include <string.h>

#include "check/reachability.h"
#include "common/search.h"
#include "common/sort.h"
#include "common/util.h"
#include "event/event.h"
#include "base/tool.h"

#define CHUNK (4u << 20) /* host staging buffer */

bool gl_device_scan_readable(uint8_t kind)
{
    return kind == GL_MEM_DEVICE || kind == GL_MEM_PITCH || kind == GL_MEM_MANAGED ||
           kind == GL_MEM_ASYNC || kind == GL_MEM_GRAPH || kind == GL_MEM_POOL_SUB;
}

/* Blocks with an address range, sorted by start: what a word can point into. */
struct span {
    uint64_t start, end;
    uint32_t index;
};

#define BY_START(a, b) ((a)->start < (b)->start)
GL_SORT_DEFINE(sort_spans, struct span, BY_START)

struct scan_ctx {
    struct gl_block_info *blocks;
    size_t n;
    struct span *spans;
    size_t nspans;
    uint64_t lo, hi; /* bounds of all spans */
    void *buf;
    gl_device_read_fn read;
    void *arg;
    struct gl_device_scan *stats;
    /* edges: for each block, the blocks its contents point to */
    uint32_t *edge_to;
    uint8_t *edge_start; /* 1: the pointer was to the start */
    size_t nedges, edges_cap;
    size_t *first_edge; /* per block: index of its first edge; edges of a block are contiguous */
    size_t *edge_count;
};

static bool reach_flags(uint8_t f) { return f & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR); }

/* Read block i once, recording what it points to. */
static void read_block(struct scan_ctx *c, size_t i)
{
    struct gl_block_info *b = &c->blocks[i];
    c->first_edge[i] = c->nedges;
    c->edge_count[i] = 0;
    if (!gl_device_scan_readable(b->kind) || b->size == 0 || (b->flags & GL_BLK_SIZE_UNKNOWN))
        return;
    uint64_t limit = c->stats->max_block_bytes ? c->stats->max_block_bytes : (1ULL << 30);
    uint64_t total = b->size < limit ? b->size : limit;
    bool any = false;
    for (uint64_t off = 0; off < total; off += CHUNK) {
        size_t len = total - off < CHUNK ? (size_t)(total - off) : CHUNK;
        len &= ~(size_t)7;
        if (len == 0)
            break;
        if (!c->read(b, off, c->buf, len, c->arg)) {
            if (!any)
                c->stats->blocks_unreadable++;
            return;
        }
        any = true;
        c->stats->bytes_read += len;
        const uint64_t *w = c->buf;
        for (size_t k = 0; k < len / 8; k++) {
            if (w[k] - c->lo >= c->hi - c->lo)
                continue;
            size_t si = GL_SEARCH_CONTAINING(c->spans, c->nspans, start, end, w[k]);
            if (si == c->nspans || c->spans[si].index == i)
                continue;
            const struct span *s = &c->spans[si];
            if (c->nedges == c->edges_cap)
                return; /* out of room: what was found is kept */
            c->edge_to[c->nedges] = s->index;
            c->edge_start[c->nedges] = w[k] == s->start;
            c->nedges++;
            c->edge_count[i]++;
        }
    }
    c->stats->blocks_read++;
}

int gl_device_scan(struct gl_block_info *blocks, size_t n, uint64_t *indirect,
                   gl_device_read_fn read, void *arg, struct gl_device_scan *stats)
{
    uint64_t max_block = stats->max_block_bytes;
    memset(stats, 0, sizeof *stats);
    stats->max_block_bytes = max_block;
    memset(indirect, 0, n * sizeof *indirect);
    if (n == 0)
        return 0;
    struct scan_ctx c = {.blocks = blocks, .n = n, .read = read, .arg = arg, .stats = stats};
    size_t spans_bytes = n * sizeof *c.spans, per_block = n * sizeof(size_t);
    c.edges_cap = n * 8 + 4096;
    c.spans = gl_tool_map(spans_bytes);
    c.buf = gl_tool_map(CHUNK);
    c.edge_to = gl_tool_map(c.edges_cap * sizeof *c.edge_to);
    c.edge_start = gl_tool_map(c.edges_cap);
    c.first_edge = gl_tool_map(per_block);
    c.edge_count = gl_tool_map(per_block);
    uint32_t *stack = gl_tool_map(n * sizeof *stack);
    uint32_t *leader = gl_tool_map(n * sizeof *leader);
    int rc = -1;
    if (!c.spans || !c.buf || !c.edge_to || !c.edge_start || !c.first_edge || !c.edge_count ||
        !stack || !leader)
        goto out;
    c.lo = UINT64_MAX;
    c.hi = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gl_block_info *b = &blocks[i];
        if (!gl_device_scan_readable(b->kind) || b->size == 0 || (b->flags & GL_BLK_IGNORED))
            continue;
        uint64_t s = gl_key_value(b->key);
        c.spans[c.nspans++] = (struct span){s, s + b->size, (uint32_t)i};
        if (s < c.lo)
            c.lo = s;
        if (s + b->size > c.hi)
            c.hi = s + b->size;
    }
    sort_spans(c.spans, c.nspans);
    GL_ASSERT(GL_SEARCH_IS_SORTED(c.spans, c.nspans, start), "spans sorted by start");
    for (size_t i = 0; i < n; i++)
        if (!(blocks[i].flags & GL_BLK_IGNORED))
            read_block(&c, i);

    /* 1. Reachable and possibly lost blocks pass it on to what they point to. */
    size_t sp = 0;
    for (size_t i = 0; i < n; i++)
        if (reach_flags(blocks[i].flags))
            stack[sp++] = (uint32_t)i;
    while (sp > 0) {
        size_t i = stack[--sp];
        bool from_start = blocks[i].flags & GL_BLK_REACH_START;
        for (size_t e = c.first_edge[i]; e < c.first_edge[i] + c.edge_count[i]; e++) {
            struct gl_block_info *t = &blocks[c.edge_to[e]];
            uint8_t f = from_start && c.edge_start[e] ? GL_BLK_REACH_START : GL_BLK_REACH_INTERIOR;
            if ((t->flags & GL_BLK_REACH_START) || (t->flags & f))
                continue;
            t->flags = (uint8_t)((t->flags & ~GL_BLK_REACH_INTERIOR) | f);
            stack[sp++] = c.edge_to[e];
        }
    }

    /* 2. Cliques of lost blocks (Valgrind's): each lost block not yet in a clique
     * leads one; what it leads to is indirectly lost, its bytes counted to the
     * leader.  A leader reached from a later clique joins it, with its own. */
    const uint32_t none = UINT32_MAX;
    for (size_t i = 0; i < n; i++)
        leader[i] = none;
    for (size_t i = 0; i < n; i++) {
        if (reach_flags(blocks[i].flags) || (blocks[i].flags & GL_BLK_IGNORED) || leader[i] != none)
            continue;
        leader[i] = (uint32_t)i;
        sp = 0;
        stack[sp++] = (uint32_t)i;
        while (sp > 0) {
            size_t k = stack[--sp];
            for (size_t e = c.first_edge[k]; e < c.first_edge[k] + c.edge_count[k]; e++) {
                uint32_t t = c.edge_to[e];
                if (t == i || reach_flags(blocks[t].flags) || (blocks[t].flags & GL_BLK_IGNORED))
                    continue;
                if (leader[t] == t) { /* an earlier leader: absorbed */
                    indirect[i] += indirect[t];
                    indirect[t] = 0;
                } else if (leader[t] != none) {
                    continue; /* already in a clique */
                }
                leader[t] = (uint32_t)i;
                blocks[t].flags |= GL_BLK_INDIRECT;
                indirect[i] += blocks[t].size;
                stack[sp++] = t;
            }
        }
    }
    rc = 0;
out:
    gl_tool_unmap(c.spans, spans_bytes);
    gl_tool_unmap(c.buf, CHUNK);
    gl_tool_unmap(c.edge_to, c.edges_cap * sizeof *c.edge_to);
    gl_tool_unmap(c.edge_start, c.edges_cap);
    gl_tool_unmap(c.first_edge, per_block);
    gl_tool_unmap(c.edge_count, per_block);
    gl_tool_unmap(stack, n * sizeof *stack);
    gl_tool_unmap(leader, n * sizeof *leader);
    return rc;
}
