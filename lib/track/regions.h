/* SPDX-License-Identifier: MIT */
/* Profiled regions: what GPU memory did between two moments the program
 * names (gpuleak.h's gpuleak_profile_begin/_end, Python's gpuleak.profile),
 * per device, exactly, from the pipeline's own events rather than by polling.
 *
 * A region, per device slot (track/stats.h's slots: devices, host memory):
 * the bytes live when it opened (read from the statistics), the bytes
 * allocated and freed and how many allocations and frees, and the peak of
 * the live bytes while it was open, with the allocation that reached it (its
 * number) and when.  At its close, the allocation sites that held the most
 * at that peak.  What counts is what the statistics count: counted
 * allocations (pool sub-allocations are not), and every counted block gone,
 * its context's destruction included.
 *
 * GPU memory is the process's: an open region sees every thread's events,
 * not only its opener's, and several may be open at once (nested, or opened
 * by threads that overlap).  Each records the thread that opened it and how
 * many of its events other threads made.  Events racing with an open or a
 * close from another thread may be counted in the bytes live at open and in
 * the changes both, or in neither; a region opened and closed while no other
 * thread allocates or frees is exact to the byte.
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
 * peak are its live bytes now (the tracker's live blocks), less what it
 * allocated after the peak, plus what it freed after.  The log holds
 * GL_REGIONS_LOG events; past that a device's sites are marked inexact
 * (its peak, counts and bytes never are).
 *
 * Opening and closing run on the program's threads, outside CUDA calls; they
 * may take the statistics' reader lock and walk the live blocks. */
#ifndef GPULEAK_REGIONS_H
#define GPULEAK_REGIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "event/dispatch.h"
#include "track/stats.h"

#define GL_REGIONS_MAX 64      /* open at once */
#define GL_REGIONS_LOG 65536   /* events after the peak a region remembers */
#define GL_REGIONS_TOP 10      /* sites reported per device */
#define GL_REGIONS_NAME_MAX 64 /* with its NUL */

extern const struct gl_component gl_regions_component;

/* One allocation site at a device's peak. */
struct gl_regions_site {
    uint32_t stack; /* stack depot id (0: no stack) */
    uint64_t bytes, blocks;
};

/* One device slot of a closed region. */
struct gl_regions_device {
    unsigned slot;                  /* gl_stats_slot() */
    uint64_t live_open, live_close; /* counted bytes live then */
    uint64_t peak;                  /* most bytes live at once, >= live_open */
    uint64_t peak_seq;              /* the allocation that reached it; 0: at the open */
    uint64_t peak_ns;               /* when, since the open */
    uint64_t alloc_bytes, freed_bytes;
    uint64_t allocs, frees;
    bool sites_exact; /* the sites add up to the peak */
    unsigned nsites;
    struct gl_regions_site sites[GL_REGIONS_TOP]; /* biggest first */
};

/* A closed region: the slots with memory live or events, in slot order. */
struct gl_regions_result {
    uint64_t duration_ns;
    uint64_t other_thread_events; /* counted events of threads but its opener */
    uint32_t tid;                 /* its opener */
    unsigned ndevices;
    struct gl_regions_device dev[GL_STATS_SLOTS];
};

/* Open a region (name: for messages, cut to fit; NULL: none) on thread tid.
 * Returns its id (>= 0), or -1 when GL_REGIONS_MAX are open or tool memory
 * ran out. */
int gl_regions_open(const char *name, uint32_t tid);

/* Close region id into *out, with up to top (<= GL_REGIONS_TOP) sites per
 * device.  Returns 0, or -1 when id names no open region (closed already, or
 * never opened). */
int gl_regions_close(int id, struct gl_regions_result *out, unsigned top);

/* How many regions are open now, and the name of one (for messages). */
unsigned gl_regions_open_count(const char **a_name);

#endif
