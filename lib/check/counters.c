#include "check/counters.h"

#include <stdlib.h>
#include <string.h>

#include "base/tool.h"
#include "stack/stack_depot.h"
#include "track/stats.h"
#include "track/tracker.h"

_Static_assert(GL_COUNTERS_DEVICES == GL_STATS_DEVICES && GL_COUNTERS_SLOTS == GL_STATS_SLOTS &&
                   GL_COUNTERS_SLOT_HOST == GL_STATS_SLOT_HOST &&
                   GL_COUNTERS_SLOT_OTHER == GL_STATS_SLOT_OTHER,
               "the report's device slots are the stats' slots");
_Static_assert((int)GL_COUNTERS_SMALL == (int)GL_SPLIT_SMALL &&
                   (int)GL_COUNTERS_LARGE == (int)GL_SPLIT_LARGE &&
                   (int)GL_COUNTERS_ALL == (int)GL_SPLIT_ALL &&
                   (int)GL_COUNTERS_NSPLITS == (int)GL_NSPLITS,
               "the report's splits are the stats' splits");

void gl_counters_read_totals(struct gl_counters_totals *out)
{
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    *out = (struct gl_counters_totals){
        .allocs = s.allocs,
        .frees = s.frees,
        .bytes_allocated = s.bytes_allocated,
        .live_bytes = s.live_bytes,
        .live_blocks = s.live_blocks,
        .peak_bytes = s.peak_bytes,
        .unknown_frees = s.unknown_frees,
        .replaced = s.replaced,
    };
}

static void copy_counts(struct gl_counters_counts *to, const struct gl_stat_counts *from)
{
    *to = (struct gl_counters_counts){
        .cur_blocks = from->cur_blocks,
        .peak_blocks = from->peak_blocks,
        .alloc_blocks = from->alloc_blocks,
        .freed_blocks = from->freed_blocks,
        .cur_bytes = from->cur_bytes,
        .peak_bytes = from->peak_bytes,
        .alloc_bytes = from->alloc_bytes,
        .freed_bytes = from->freed_bytes,
    };
}

int gl_counters_read(struct gl_counters *out)
{
    memset(out, 0, sizeof *out);
    struct gl_usage *u = malloc(sizeof *u); /* too large for a stack */
    if (!u)
        return -1;
    gl_stats_snapshot(u);
    for (unsigned sl = 0; sl < GL_COUNTERS_SLOTS; sl++) {
        out->used[sl] = u->used[sl];
        out->dev[sl] = (struct gl_counters_device){
            .cur_bytes = u->dev[sl].cur_bytes,
            .peak_bytes = u->dev[sl].peak_bytes,
            .peak_stack = u->dev[sl].peak_stack,
            .peak_seq = u->dev[sl].peak_seq,
        };
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_group *g = &u->grp[sl][k];
            struct gl_counters_group *c = &out->grp[sl][k];
            for (unsigned sp = 0; sp < GL_COUNTERS_NSPLITS; sp++)
                copy_counts(&c->split[sp], &g->split[sp]);
            c->failed = g->failed;
            c->failed_bytes = g->failed_bytes;
        }
    }
    free(u);
    return 0;
}

/* The stack depot's sites, in id order; malloc'ed, NULL when none. */
static struct gl_counters_site *depot_sites(size_t *n)
{
    *n = 0;
    size_t all = gl_stack_depot_sites(NULL, 0);
    struct gl_site_stats *d = all ? malloc(all * sizeof *d) : NULL;
    struct gl_counters_site *s = d ? malloc(all * sizeof *s) : NULL;
    if (!s) {
        free(d);
        return NULL;
    }
    size_t nd = gl_stack_depot_sites(d, all);
    if (nd > all) /* sites added since the count: the first `all` are copied */
        nd = all;
    for (size_t i = 0; i < nd; i++)
        s[i] = (struct gl_counters_site){d[i].stack, d[i].live_bytes, d[i].live_blocks,
                                         d[i].peak_bytes};
    free(d);
    *n = nd;
    return s;
}

static int by_peak_desc(const void *a, const void *b)
{
    const struct gl_counters_site *x = a, *y = b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes < y->peak_bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_live_desc(const void *a, const void *b)
{
    const struct gl_counters_site *x = a, *y = b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes < y->live_bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int site_by_stack(const void *a, const void *b)
{
    const struct gl_counters_site *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int block_by_stack(const void *a, const void *b)
{
    const struct gl_block_info *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

struct gl_counters_site *gl_counters_sites_by_peak(size_t *n)
{
    struct gl_counters_site *s = depot_sites(n);
    if (s)
        qsort(s, *n, sizeof *s, by_peak_desc);
    return s;
}

/* The live blocks on a device (-1: host memory) summed by allocation stack,
 * most bytes first; with per-site counting on, each site's peak too.  Sites
 * are counted on every allocation only when --stats asks: the table is
 * walked instead. */
static struct gl_counters_site *live_sites(int device, size_t *n)
{
    *n = 0;
    struct gl_block_info *b;
    size_t nb, bytes;
    if (gl_tracker_snapshot(&b, &nb, &bytes) != 0 || !nb)
        return NULL;
    size_t keep = 0;
    for (size_t i = 0; i < nb; i++)
        if (b[i].device == device && gl_mem_kind_counted(b[i].kind))
            b[keep++] = b[i];
    qsort(b, keep, sizeof *b, block_by_stack);
    struct gl_counters_site *s = keep ? calloc(keep, sizeof *s) : NULL;
    for (size_t i = 0; s && i < keep; i++) {
        if (!*n || s[*n - 1].stack != b[i].stack)
            s[(*n)++].stack = b[i].stack;
        s[*n - 1].live_bytes += b[i].size;
        s[*n - 1].live_blocks++;
    }
    gl_tool_unmap(b, bytes);
    if (s && gl_stats_sites_on()) {
        size_t nd;
        struct gl_counters_site *d = depot_sites(&nd);
        for (size_t i = 0; i < *n; i++) { /* d is in id order */
            const struct gl_counters_site *hit = bsearch(&s[i], d, nd, sizeof *d, site_by_stack);
            if (hit)
                s[i].peak_bytes = hit->peak_bytes;
        }
        free(d);
    }
    if (s)
        qsort(s, *n, sizeof *s, by_live_desc);
    return s;
}

void gl_counters_holders(int device, struct gl_counters_holders *out)
{
    memset(out, 0, sizeof *out);
    struct gl_usage *u = malloc(sizeof *u); /* one consistent read of every counter */
    if (u) {
        gl_stats_snapshot(u);
        unsigned slot = gl_stats_slot(device);
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_counts *a = &u->grp[slot][k].split[GL_SPLIT_ALL];
            out->live[k].bytes = a->cur_bytes;
            out->live[k].blocks = a->cur_blocks;
        }
        out->counted = true;
        free(u);
    }
    out->sites = live_sites(device, &out->nsites);
    out->peaks = gl_stats_sites_on();
}

void gl_counters_holders_free(struct gl_counters_holders *h)
{
    free(h->sites);
    memset(h, 0, sizeof *h);
}
