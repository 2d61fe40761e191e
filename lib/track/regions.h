/* SPDX-License-Identifier: MIT */
/* Profiled regions: what GPU memory did between two moments the program
 * names (gpuleak.h's gpuleak_profile_begin/_end, Python's gpuleak.profile),
 * per device, exactly, from the pipeline's own events rather than by polling.
 *
 * A region, per device slot (track/stats.h's slots: devices, host memory):
 * the bytes live when it opened (read from the statistics), the bytes
 * allocated and freed and how many allocations and frees, and the peak of
 * the live bytes while it was open, with the allocation that reached it (its
 * number) and when.  The bytes live at its close are those at its open plus
 * what it counted (open + allocated - freed = close), so never above the
 * peak.  At its close, the allocation sites that held the most at that peak.
 * What counts is what the statistics count: counted allocations (pool
 * sub-allocations are not), and every counted block gone, its context's
 * destruction included.
 *
 * GPU memory is the process's: an open region sees every thread's events,
 * not only its opener's, and several may be open at once (nested, or opened
 * by threads that overlap).  Each records the thread that opened it and how
 * many of its events other threads made.  An event racing with an open from
 * another thread may be counted in the bytes live at open and in the changes
 * both, or in neither; one racing with a close is counted in the changes and
 * in the bytes live at close, or in neither.  A region opened and closed
 * while no other thread allocates or frees is exact to the byte.
 *
 * A consumer on demand (event/dispatch.h): it observes only while a region
 * is open, so that a process that never opens one pays one predictable
 * branch per event.  While one is open, its handlers take each open region's
 * own spinlock for a few stores (and the clock when the peak rises); they
 * never allocate or call CUDA.
 *
 * Sites at the peak: each region logs the (stack, +-bytes) of the events
 * that came after each device's last peak (the log is emptied whenever every
 * entry in it predates its device's peak).  At close, a site's bytes at the
 * peak are its live bytes now (the tracker's live blocks numbered before the
 * close, gl_tracker_seq_mark), less what it allocated after the peak, plus
 * what it freed after.  A device's sites are exact when they add up to its
 * peak (and none is negative); else they are marked inexact (its peak,
 * counts and bytes never are):
 *   - more than GL_REGIONS_LOG events after the peak (the log's bound);
 *   - a block freed by another thread after the close, before the walk of
 *     the live blocks (the region counts it live, the walk misses it: the
 *     sum falls short).  A block allocated after the close is left out of
 *     the walk by its number, so it cannot stand in for one freed then;
 *   - an event racing with the open (the peak is then off by it).
 * What remains undetected: an allocation in flight across the close
 * (numbered before it, reaching the region after it stopped counting: in the
 * walk, not in the region) together with a free after the close of exactly
 * its size on the same device, or events racing with the open that offset
 * each other; then a site may hold the wrong bytes while the sum is right.
 * Only other threads' events racing with the open or the close do that.
 *
 * The logs' memory: GL_REGIONS_LOG entries of 16 bytes each (1 MiB of
 * address space), mapped when more regions are open at once than ever
 * before and reused last-in first-out, so that regions one after another
 * write the same, resident, pages.  The first GL_REGIONS_LOG_KEEP bytes of
 * each are made present when it is mapped and stay; a region that wrote past
 * them gives the pages beyond back at its close (madvise).
 *
 * Opening and closing run on the program's threads, outside CUDA calls; they
 * may take the statistics' reader lock and walk the live blocks. */
#ifndef GPULEAK_REGIONS_H
#define GPULEAK_REGIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/dispatch.h"
#include "track/stats.h"

#define GL_REGIONS_MAX 64               /* open at once */
#define GL_REGIONS_LOG 65536            /* events after the peak a region remembers */
#define GL_REGIONS_LOG_KEEP (64 * 1024) /* bytes of a log kept resident between regions */
#define GL_REGIONS_TOP 10               /* sites reported per device */
#define GL_REGIONS_NAME_MAX 64          /* with its NUL */

extern const struct gl_component gl_regions_component;

/* One allocation site at a device's peak. */
struct gl_regions_site {
    uint32_t stack; /* stack depot id (0: no stack) */
    uint64_t bytes, blocks;
};

/* One device slot of a closed region. */
struct gl_regions_device {
    unsigned slot;       /* gl_stats_slot() */
    uint64_t live_open;  /* counted bytes live at the open */
    uint64_t live_close; /* live_open + alloc_bytes - freed_bytes (0 if below) */
    uint64_t peak;       /* most bytes live at once, >= live_open, >= live_close */
    uint64_t peak_seq;   /* the allocation that reached it; 0: at the open */
    uint64_t peak_ns;    /* when, since the open */
    uint64_t alloc_bytes, freed_bytes;
    uint64_t allocs, frees;
    bool sites_exact; /* the sites add up to the peak (false when none were asked for) */
    unsigned nsites;
    struct gl_regions_site sites[GL_REGIONS_TOP]; /* biggest first */
};

/* A closed region: the slots with memory live at the open or events, in slot
 * order. */
struct gl_regions_result {
    uint64_t duration_ns;
    uint64_t other_thread_events; /* counted events of threads but its opener */
    uint32_t tid;                 /* its opener */
    unsigned ndevices;
    struct gl_regions_device dev[GL_STATS_SLOTS];
};

/* Open a region (name: for messages, cut to fit; NULL: none) on thread tid.
 * Returns its id (>= 0), or -1 when GL_REGIONS_MAX hold a slot (open, or
 * still closing). */
int gl_regions_open(const char *name, uint32_t tid);

/* Close region id into *out, with up to top (<= GL_REGIONS_TOP) sites per
 * device; top 0: no sites, and no walk of the live blocks.  out NULL: only
 * close it (its slot, its log and the dispatcher's demand given back), nothing
 * computed.  Returns 0, or -1 when id names no open region (closed already,
 * or never opened). */
int gl_regions_close(int id, struct gl_regions_result *out, unsigned top);

/* How many regions hold a slot now: open, or still closing (the slots an
 * open cannot take), and the name of one of them into name (size bytes,
 * cut to fit and NUL-terminated; "" when none has a name).  For messages. */
unsigned gl_regions_open_count(char *name, size_t size);

/* Bytes of the regions' logs resident now (mincore over every log mapped):
 * tests and benchmarks. */
size_t gl_regions_log_resident(void);

/* Tests: called by gl_regions_close once the region stopped counting, before
 * it reads the live blocks, so that a test can make another thread's events
 * race with the close there.  NULL in the runtime. */
extern void (*gl_regions_after_stop)(int id);

#endif
