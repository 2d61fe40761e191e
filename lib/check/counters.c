/* SPDX-License-Identifier: MIT */
#include "check/counters.h"

#include <stdlib.h>
#include <string.h>

#include "base/tool.h"
#include "stack/stack_depot.h"
#include "track/stats.h"
#include "track/tracker.h"

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

/* The stack depot's sites, in id order; malloc'ed, NULL when none. */
static struct gl_site_stats *depot_sites(size_t *n)
{
    *n = 0;
    size_t all = gl_stack_depot_sites(NULL, 0);
    struct gl_site_stats *d = all ? malloc(all * sizeof *d) : NULL;
    if (!d)
        return NULL;
    size_t nd = gl_stack_depot_sites(d, all);
    if (nd > all) /* sites added since the count: the first `all` are copied */
        nd = all;
    *n = nd;
    return d;
}

static int by_peak_desc(const void *a, const void *b)
{
    const struct gl_site_stats *x = a, *y = b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes < y->peak_bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_live_desc(const void *a, const void *b)
{
    const struct gl_site_stats *x = a, *y = b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes < y->live_bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int site_by_stack(const void *a, const void *b)
{
    const struct gl_site_stats *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int block_by_stack(const void *a, const void *b)
{
    const struct gl_block_info *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

struct gl_site_stats *gl_counters_sites_by_peak(size_t *n)
{
    struct gl_site_stats *s = depot_sites(n);
    if (s)
        qsort(s, *n, sizeof *s, by_peak_desc);
    return s;
}

/* The live blocks on a device (-1: host memory) summed by allocation stack,
 * most bytes first; with per-site counting on, each site's peak too.  Sites
 * are counted on every allocation only when --stats asks: the table is
 * walked instead. */
static struct gl_site_stats *live_sites(int device, size_t *n)
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
    struct gl_site_stats *s = keep ? calloc(keep, sizeof *s) : NULL;
    for (size_t i = 0; s && i < keep; i++) {
        if (!*n || s[*n - 1].stack != b[i].stack)
            s[(*n)++].stack = b[i].stack;
        s[*n - 1].live_bytes += b[i].size;
        s[*n - 1].live_blocks++;
    }
    gl_tool_unmap(b, bytes);
    if (s && gl_stats_sites_on()) {
        size_t nd;
        struct gl_site_stats *d = depot_sites(&nd);
        for (size_t i = 0; i < *n; i++) { /* d is in id order */
            const struct gl_site_stats *hit = bsearch(&s[i], d, nd, sizeof *d, site_by_stack);
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
