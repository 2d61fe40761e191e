/* SPDX-License-Identifier: MIT */
/* Usage statistics per device and memory kind, per allocation site, and the
 * allocations that failed: the GPU MEMORY SUMMARY, --stats, the OOM report and
 * --trace-file read them.
 *
 * One counter group per (device, kind), split small (< 1 MiB, PyTorch's small
 * pool) and large as torch.cuda.memory_stats() splits them; freed counts are
 * allocated minus current.  A consumer of events (event/dispatch.h), it moves
 * them on every counted allocation and every block gone, so the hot path takes
 * no locked instruction in the common case: each thread adds to a few cells
 * of its own (base/thread.h) and moves them
 * to the shared atomics every 64 events or 256 KiB of live bytes.  Readers sum
 * shared and pending counts, retrying reads that straddle a move.
 *
 * Peaks are kept per group and split, per device (with the stack of the
 * allocation that reached it) and for the process, by compare-and-swap only
 * when exceeded, each checked against the shared count plus the thread's own
 * pending share: exact for one thread, low by less than one flush's worth per
 * other thread.  Per allocation site (stack/stack_depot.h), live, peak and
 * allocated bytes are kept only when asked (--stats=yes, --growth-checkpoints,
 * --flamegraph-cost=peak|allocated): they are shared atomics per site. */
#ifndef GPULEAK_STATS_H
#define GPULEAK_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "event/dispatch.h"
#include "event/event.h"

#define GL_STATS_DEVICES 32                        /* ordinals 0..31 counted apart */
#define GL_STATS_SLOT_HOST GL_STATS_DEVICES        /* host memory (device -1) */
#define GL_STATS_SLOT_OTHER (GL_STATS_DEVICES + 1) /* higher or unknown ordinals */
#define GL_STATS_SLOTS (GL_STATS_DEVICES + 2)
_Static_assert(GL_STATS_SLOTS <= 34, "base/thread.h's GL_STAT_SLOTS_MAX");
#define GL_STATS_SMALL_LIMIT (1u << 20) /* blocks below 1 MiB are small */

static inline unsigned gl_stats_slot(int device)
{
    if (device >= 0 && device < GL_STATS_DEVICES)
        return (unsigned)device;
    return device == -1 ? GL_STATS_SLOT_HOST : GL_STATS_SLOT_OTHER;
}

enum gl_stat_split { GL_SPLIT_SMALL, GL_SPLIT_LARGE, GL_SPLIT_ALL, GL_NSPLITS };

/* One split's counters, as torch.cuda.memory_stats() names them. */
struct gl_stat_counts {
    uint64_t cur_blocks, peak_blocks, alloc_blocks, freed_blocks;
    uint64_t cur_bytes, peak_bytes, alloc_bytes, freed_bytes;
};

/* A (device slot, kind) group, read out. */
struct gl_stat_group {
    struct gl_stat_counts split[GL_NSPLITS];
    uint64_t failed, failed_bytes; /* allocations that failed, bytes asked for */
};

/* A device slot's totals over kinds. */
struct gl_stat_device {
    uint64_t cur_bytes, peak_bytes;
    uint32_t peak_stack; /* the allocation that reached the peak */
    uint64_t peak_seq;
};

/* Turn per-site counting on or off; hooks thread exit to flush its cells. */
extern const struct gl_component gl_stats_component;

void gl_stats_configure(bool sites);
bool gl_stats_sites_on(void);

void gl_stats_group(unsigned slot, unsigned kind, struct gl_stat_group *out);
void gl_stats_device(unsigned slot, struct gl_stat_device *out);
/* Whether a slot ever saw an allocation or a failure. */
bool gl_stats_slot_used(unsigned slot);

/* Live bytes of a (slot, kind) now, or of all at once (the trace's samples). */
uint64_t gl_stats_live_bytes(unsigned slot, unsigned kind);
void gl_stats_live_bytes_all(uint64_t out[GL_STATS_SLOTS][GL_MEM_NKINDS]);

/* The process: counted allocations and frees, bytes, live and peak bytes. */
struct gl_stat_totals {
    uint64_t allocs, frees, bytes_allocated, live_bytes, peak_bytes;
};
void gl_stats_totals(struct gl_stat_totals *out);

/* Everything above at once, for a report. */
struct gl_usage {
    bool used[GL_STATS_SLOTS];
    struct gl_stat_device dev[GL_STATS_SLOTS];
    struct gl_stat_group grp[GL_STATS_SLOTS][GL_MEM_NKINDS];
};
void gl_stats_snapshot(struct gl_usage *u);

#endif
