/* SPDX-License-Identifier: MIT */
#include "base/ranges.h"

#include <bsd/sys/tree.h>

#include "base/spin.h"
#include "base/tool.h"

struct node {
    RB_ENTRY(node) link;
    struct gl_range r;
};

static int by_start(const struct node *a, const struct node *b)
{
    return a->r.start < b->r.start ? -1 : a->r.start > b->r.start;
}

/* The generated functions are marked __unused, a BSD spelling that libbsd
 * leaves undefined on Linux (a kernel struct has a member of that name). */
#define __unused __attribute__((unused))
RB_HEAD(tree, node);
/* clang-format off */
RB_GENERATE_STATIC(tree, node, link, by_start)
/* clang-format on */
#undef __unused

struct gl_ranges {
    gl_spinlock lock;
    struct tree root;
    struct gl_slab nodes;
    size_t n;
};

struct gl_ranges *gl_ranges_create(void)
{
    struct gl_ranges *r = gl_tool_alloc(sizeof *r);
    if (!r)
        return NULL;
    RB_INIT(&r->root);
    gl_tool_slab_init(&r->nodes, sizeof(struct node));
    r->n = 0;
    gl_spin_reset(&r->lock);
    return r;
}

void gl_ranges_destroy(struct gl_ranges *r)
{
    if (!r)
        return;
    gl_tool_slab_destroy(&r->nodes);
    gl_tool_free(r, sizeof *r);
}

/* The node holding addr: the last one starting at or below it, if it reaches it. */
static struct node *holding(struct gl_ranges *r, uint64_t addr)
{
    struct node key = {.r.start = addr};
    struct node *n = RB_NFIND(tree, &r->root, &key); /* first start >= addr */
    if (!n || n->r.start != addr)
        n = n ? RB_PREV(tree, &r->root, n) : RB_MAX(tree, &r->root);
    return n && addr >= n->r.start && addr < n->r.end ? n : NULL;
}

static void drop(struct gl_ranges *r, struct node *n)
{
    RB_REMOVE(tree, &r->root, n);
    gl_tool_slab_put(&r->nodes, n);
    r->n--;
}

static bool insert_locked(struct gl_ranges *r, uint64_t start, uint64_t end, uint64_t tag)
{
    struct node *n = gl_tool_slab_get(&r->nodes);
    if (!n)
        return false;
    n->r = (struct gl_range){start, end, tag};
    struct node *old = RB_INSERT(tree, &r->root, n);
    if (old) { /* same start: the new range replaces it */
        old->r = n->r;
        gl_tool_slab_put(&r->nodes, n);
        return false;
    }
    r->n++;
    return true;
}

bool gl_ranges_insert(struct gl_ranges *r, uint64_t start, uint64_t end, uint64_t tag)
{
    if (end <= start)
        return false;
    gl_spin_lock(&r->lock);
    bool ok = insert_locked(r, start, end, tag);
    gl_spin_unlock(&r->lock);
    return ok;
}

bool gl_ranges_insert_newest(struct gl_ranges *r, uint64_t start, uint64_t end, uint64_t tag)
{
    if (end <= start)
        return false;
    gl_spin_lock(&r->lock);
    struct node *n = holding(r, start);
    if (!n) {
        struct node key = {.r.start = start};
        n = RB_NFIND(tree, &r->root, &key);
    }
    while (n && n->r.start < end) {
        struct node *next = RB_NEXT(tree, &r->root, n);
        drop(r, n);
        n = next;
    }
    bool ok = insert_locked(r, start, end, tag);
    gl_spin_unlock(&r->lock);
    return ok;
}

bool gl_ranges_remove(struct gl_ranges *r, uint64_t start, uint64_t tag, bool any_tag)
{
    struct node key = {.r.start = start};
    gl_spin_lock(&r->lock);
    struct node *n = RB_FIND(tree, &r->root, &key);
    bool found = n && (any_tag || n->r.tag == tag);
    if (found)
        drop(r, n);
    gl_spin_unlock(&r->lock);
    return found;
}

bool gl_ranges_find(struct gl_ranges *r, uint64_t addr, struct gl_range *out)
{
    gl_spin_lock(&r->lock);
    struct node *n = holding(r, addr);
    if (n)
        *out = n->r;
    gl_spin_unlock(&r->lock);
    return n != NULL;
}

size_t gl_ranges_count(struct gl_ranges *r)
{
    gl_spin_lock(&r->lock);
    size_t n = r->n;
    gl_spin_unlock(&r->lock);
    return n;
}

size_t gl_ranges_memory_bytes(struct gl_ranges *r) { return r->nodes.chunks_bytes + sizeof *r; }

void gl_ranges_reset_lock_after_fork(struct gl_ranges *r) { gl_spin_reset(&r->lock); }
