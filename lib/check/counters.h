/* SPDX-License-Identifier: MIT */
/* The usage counters as a check reads them for the report: the tracker's
 * totals, allocation sites by peak (the stack depot's), and who holds a
 * device's memory when an allocation there fails (the live blocks summed by
 * stack).  Usage per device and kind is track/stats.h's snapshot, a plain
 * struct the report formats as it is.
 *
 * The report formats what it is given (report/): these are its inputs, so
 * that it needs nothing of the live tracker.  Reading copies; the copies are
 * plain memory. */
#ifndef GPULEAK_COUNTERS_H
#define GPULEAK_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/event.h"
#include "stack/stack_depot.h"
#include "track/stats.h"

/* The process's totals, as the tracker counts them. */
struct gl_counters_totals {
    uint64_t allocs, frees, bytes_allocated, live_bytes, live_blocks, peak_bytes;
    uint64_t unknown_frees; /* frees of keys never seen allocated */
    uint64_t replaced;      /* allocations that landed on a key still live */
};

void gl_counters_read_totals(struct gl_counters_totals *out);

/* Every allocation site that ever held memory (--stats=yes keeps them),
 * highest peak first; malloc'ed (free it), NULL and *n = 0 when none. */
struct gl_site_stats *gl_counters_sites_by_peak(size_t *n);

/* Who holds a device's memory (-1: host memory) when an allocation fails
 * there: the live bytes and blocks of each kind, and the live blocks summed
 * by allocation stack, most bytes first.  A walk of the block table: out of
 * memory is rare.  Made inside the failing call: no CUDA call. */
struct gl_counters_holders {
    bool counted; /* live[] was read */
    struct {
        uint64_t bytes, blocks;
    } live[GL_MEM_NKINDS];
    struct gl_site_stats *sites; /* malloc'ed; NULL when there are none */
    size_t nsites;
    bool peaks; /* sites' peaks are known (per-site counting is on) */
};
void gl_counters_holders(int device, struct gl_counters_holders *out);
void gl_counters_holders_free(struct gl_counters_holders *h);

#endif
