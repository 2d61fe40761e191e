/* SPDX-License-Identifier: MIT */
/* --flamegraph-cost=oom: who held the memory when an allocation failed for
 * lack of it.  The blocks are freed by exit (the program caught the error, or
 * unwound), so the picture is taken when the failure happens: the live blocks
 * of the device that ran out (-1: host memory), of the kinds the usage
 * statistics count, summed by allocation stack.
 *
 * Of several failures, the picture is of the one that found its device
 * fullest (the first of equals): by the statistics' live bytes on one device;
 * across devices, relative to each device's total memory when NVML tells
 * both (a full 16 GiB card is fuller than a half full 80 GiB one, though
 * with fewer bytes), else in bytes (host memory's total is never known).  A
 * process that runs out of memory for real has its device full; the failures
 * beside that one tell less: PyTorch's retry after emptying its cache fails
 * with the cache gone (the segments it held, which made the device full, are
 * freed), and a request larger than the device fails whatever is live, often
 * little.  The last failure would show those; the first would miss memory
 * that leaked between one recovered failure and a later one.
 *
 * A consumer of events (event/dispatch.h), attached only when asked.  The
 * picture is taken inside the failing call, with no lock of its own held: the
 * block table copied into fresh tool memory (each shard's spinlock in turn),
 * sorted and summed there (no CUDA call, no malloc); then, under a leaf
 * spinlock held for a compare and a few stores, it replaces the kept picture
 * if its failure is still the fuller, and the loser is unmapped after.  A
 * failure that finds the device no fuller than the kept picture costs a read
 * of the statistics (and, the first time on its device, of NVML's total),
 * nothing more; allocations and frees cost nothing. */
#ifndef GPULEAK_OOM_SNAPSHOT_H
#define GPULEAK_OOM_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/dispatch.h"
#include "stack/stack_depot.h"

extern const struct gl_component gl_oom_snapshot_component;

/* Take pictures from now on, or not (the dispatcher attaches the consumer at
 * its start: configure first). */
void gl_oom_snapshot_configure(bool on);
/* Ask NVML for the devices' totals (gl_errors_device_memory), the default;
 * false compares every failure in bytes.  A replay (--read) should say false:
 * this machine's devices are not the log's. */
void gl_oom_snapshot_use_device_totals(bool use);

struct gl_oom_snapshot {
    uint64_t failures; /* allocations refused for lack of memory, every device */
    uint64_t number;   /* which of them is pictured, from 1 (0: none failed) */
    /* Its request. */
    int device;            /* -1: host memory */
    uint64_t device_total; /* its memory, as NVML told it; 0: unknown */
    unsigned api, kind;
    uint64_t size;
    uint32_t stack;
    /* Live on its device then: the sites' sums. */
    uint64_t live_bytes, live_blocks;
    /* Per allocation stack, live_bytes and live_blocks (other figures 0), in
     * stack id order; malloc'ed, NULL when nothing was live. */
    struct gl_site_stats *sites;
    size_t nsites;
    /* Set by a read: the picture could not be read (false returned), its lock
     * held past about 100 ms, by a failing call stopped or interrupted while
     * swapping pictures (a fatal signal's report on that very thread). */
    bool busy;
};

/* A copy of the picture, for a report (outside any CUDA call: it mallocs);
 * false, *out zeroed but for failures, when none was taken, or when it could
 * not be read (busy).  Never waits for the lock more than about 100 ms. */
bool gl_oom_snapshot_read(struct gl_oom_snapshot *out);
void gl_oom_snapshot_free(struct gl_oom_snapshot *s);

/* For tests: take or let go of the lock a failing call holds to swap
 * pictures. */
void gl_oom_snapshot_hold(bool held);

#endif
