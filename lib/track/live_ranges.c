/* SPDX-License-Identifier: MIT */
#include "track/live_ranges.h"

#include "base/ranges.h"

/* Tags: a block's allocation number, or GL_LIVE_RANGES_VMM. */
static struct {
    bool on;
    struct gl_ranges *live;
} lr;

void gl_live_ranges_configure(bool on)
{
    gl_ranges_destroy(lr.live);
    lr.live = on ? gl_ranges_create() : NULL;
    lr.on = lr.live != NULL;
}

bool gl_live_ranges_on(void) { return lr.on; }

bool gl_live_ranges_find(uint64_t addr, uint64_t *start, uint64_t *seq)
{
    struct gl_range r;
    if (!lr.on || !gl_ranges_find(lr.live, addr, &r))
        return false;
    *start = r.start;
    *seq = r.tag;
    return true;
}

static void on_alloc(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)ev;
    if (blk && gl_block_has_range(blk))
        gl_ranges_insert(lr.live, blk->key, blk->key + blk->size, blk->seq);
}

/* Every block gone (with its context too). */
static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (blk && !(ev->flags & GL_EVF_FAILED) && gl_block_has_range(blk))
        gl_ranges_remove(lr.live, blk->key, blk->seq, false);
}

static void on_map(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    if (ev->size)
        gl_ranges_insert(lr.live, ev->key, ev->key + ev->size, GL_LIVE_RANGES_VMM);
}

/* An unmap may cover several adjacent mappings: each one starting where the
 * last ended, as the block table removes them. */
static void on_unmap(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    struct gl_range r;
    for (uint64_t cur = ev->key, end = ev->key + ev->size; cur < end; cur = r.end)
        if (!gl_ranges_find(lr.live, cur, &r) || r.start != cur || r.tag != GL_LIVE_RANGES_VMM ||
            !gl_ranges_remove(lr.live, cur, GL_LIVE_RANGES_VMM, false))
            break;
}

static void reset(void)
{
    if (lr.live)
        gl_live_ranges_configure(true);
}

static void after_fork(void)
{
    if (lr.live)
        gl_ranges_reset_lock_after_fork(lr.live);
}

static bool wanted(void) { return lr.on; }

static const struct gl_consumer consumer = {
    .on =
        {
            [GL_EV_ALLOC] = on_alloc,
            [GL_EV_FREE] = on_free,
            [GL_EV_VMM_MAP] = on_map,
            [GL_EV_VMM_UNMAP] = on_unmap,
        },
    .wanted = wanted,
};

const struct gl_component gl_live_ranges_component = {
    .name = "live_ranges",
    .reset = reset,
    .after_fork = after_fork,
    .consumer = &consumer,
};
