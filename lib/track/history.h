/* SPDX-License-Identifier: MIT */
/* The allocation history behind --memory-viz: the last N allocations, frees
 * and out-of-memory failures of device memory, in the order the program made
 * them, each with its time, address, size, stream, device and stack, for a
 * timeline drawn later (report/report_memviz.h writes it in PyTorch's memory
 * snapshot format).
 *
 * A consumer of events (event/dispatch.h), attached when --memory-viz asks:
 * it runs on the thread that allocated or freed, inside the CUDA call.  One
 * atomic add reserves an entry of a ring of N (--memory-viz-entries) in tool
 * memory, mapped once at start (untouched pages cost nothing); the entry is
 * written, then stamped with its position, so that a reader skips entries a
 * thread had not finished.  No lock, no malloc, no CUDA.  An entry's time:
 * while one thread alone has recorded, the clock thread's word
 * (base/ticker.h: one load, a millisecond's resolution), the positions
 * giving the order; once a second thread records, the CPU's time-stamp
 * counter, which orders the threads' chunks (turned into Unix time when read
 * out, at the counter's rate measured over the whole run against
 * CLOCK_MONOTONIC, since clock_gettime costs twice as much).  When the ring wraps
 * the oldest entries go: the window holds the last N events, and what was
 * live at its start is known from the window's frees of older blocks and
 * from the blocks live at the end (the viewer's own rule).
 *
 * Order: the position is taken in each observer call, after the driver
 * returned: a free on one thread and the reuse of its address on another may
 * land in either order.  Entries carry the allocation number of their block,
 * so a reader can put such a free back before the reuse (gl_history_read). */
#ifndef GPULEAK_HISTORY_H
#define GPULEAK_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "event/dispatch.h"

enum gl_history_action {
    GL_HIST_ALLOC = 1,
    GL_HIST_FREE,
    GL_HIST_OOM, /* an allocation the driver refused for lack of memory */
};

struct gl_history_entry {
    uint64_t time_ns;  /* as read out: ns since the Unix epoch */
    uint64_t key;      /* block key (event/key.h): an address, or a namespaced handle */
    uint64_t size;     /* bytes (OOM: asked for) */
    uint64_t stream;   /* stream-ordered memory's stream, else 0 */
    uint64_t seq;      /* the block's allocation number (OOM: 0) */
    uint64_t dev_free; /* OOM: the device's free bytes then (0: unknown) */
    uint32_t stack;    /* the allocation's stack (a free: the freed block's) */
    int16_t device;    /* ordinal */
    uint8_t action;    /* enum gl_history_action */
    uint8_t kind;      /* enum gl_mem_kind */
};

extern const struct gl_component gl_history_component;

/* Keep the last max_entries events from now on (0: off, the default).  Call
 * before the dispatcher starts, which attaches the consumer then.  Returns
 * false when the ring could not be mapped (nothing is kept). */
bool gl_history_configure(size_t max_entries);
bool gl_history_on(void);
/* A replay's events carry their times (a --read: ns since the log's start,
 * epoch_ns in Unix time): kept as given, not read from the clock. */
void gl_history_use_event_times(int64_t epoch_ns);

/* The window, oldest first, in a fresh tool mapping (*bytes for
 * gl_tool_unmap): entries a thread was still writing are left out, and a free
 * seen after the reuse of its address is moved before it.  *dropped gets the
 * events the ring no longer holds.  Returns the count (0 and *out NULL when
 * empty or off). */
size_t gl_history_read(struct gl_history_entry **out, size_t *bytes, uint64_t *dropped);

/* A device's peak over a window: the most its allocations held at once, in
 * the window's order, and the allocation that reached it. */
struct gl_history_peak {
    uint64_t bytes, seq;
    uint32_t stack;
};
/* Over a whole history (nothing dropped: every device starts empty), the
 * peak of devices 0 to ndevices - 1 into out.  The statistics' peaks are low
 * by up to one flush per other allocating thread (track/stats.h); these are
 * exact in the history's order, the one the timeline is drawn in. */
void gl_history_peaks(const struct gl_history_entry *e, size_t n, struct gl_history_peak *out,
                      unsigned ndevices);

/* gl_history_read's reordering, pure: in (n entries) to out (room for n);
 * returns the count. */
size_t gl_history_order(const struct gl_history_entry *in, size_t n, struct gl_history_entry *out);

#endif
