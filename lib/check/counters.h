/* The usage counters as a check reads them, in the types the report formats:
 * the tracker's totals, usage per device and memory kind (track/stats.h),
 * allocation sites (the stack depot's, or the live blocks' by stack).
 *
 * The report formats what it is given (report/): these are its inputs, so
 * that it needs nothing of the live tracker, and the tracker's own types may
 * change without the formatters noticing.  Reading copies; the copies are
 * plain memory. */
#ifndef GPULEAK_COUNTERS_H
#define GPULEAK_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/event.h"

/* Device slots: ordinals 0..31 each, then host memory, then the rest. */
#define GL_COUNTERS_DEVICES 32
#define GL_COUNTERS_SLOT_HOST GL_COUNTERS_DEVICES
#define GL_COUNTERS_SLOT_OTHER (GL_COUNTERS_DEVICES + 1)
#define GL_COUNTERS_SLOTS (GL_COUNTERS_DEVICES + 2)

/* Blocks under 1 MiB, the rest, and both (torch.cuda.memory_stats()'s split). */
enum gl_counters_split {
    GL_COUNTERS_SMALL,
    GL_COUNTERS_LARGE,
    GL_COUNTERS_ALL,
    GL_COUNTERS_NSPLITS
};

struct gl_counters_counts {
    uint64_t cur_blocks, peak_blocks, alloc_blocks, freed_blocks;
    uint64_t cur_bytes, peak_bytes, alloc_bytes, freed_bytes;
};

/* A (device slot, memory kind) pair. */
struct gl_counters_group {
    struct gl_counters_counts split[GL_COUNTERS_NSPLITS];
    uint64_t failed, failed_bytes; /* allocations that failed, bytes asked for */
};

/* A device slot over all kinds: in use, and the peak with the allocation
 * that reached it. */
struct gl_counters_device {
    uint64_t cur_bytes, peak_bytes;
    uint32_t peak_stack;
    uint64_t peak_seq;
};

/* Usage per device slot and kind (GPU MEMORY SUMMARY, --stats). */
struct gl_counters {
    bool used[GL_COUNTERS_SLOTS]; /* a slot that ever saw an allocation or a failure */
    struct gl_counters_device dev[GL_COUNTERS_SLOTS];
    struct gl_counters_group grp[GL_COUNTERS_SLOTS][GL_MEM_NKINDS];
};

/* The process's totals, as the tracker counts them. */
struct gl_counters_totals {
    uint64_t allocs, frees, bytes_allocated, live_bytes, live_blocks, peak_bytes;
    uint64_t unknown_frees; /* frees of keys never seen allocated */
    uint64_t replaced;      /* allocations that landed on a key still live */
};

/* An allocation site: a stack, what it holds, its peak (with --stats). */
struct gl_counters_site {
    uint32_t stack;
    uint64_t live_bytes, live_blocks, peak_bytes;
};

void gl_counters_read_totals(struct gl_counters_totals *out);
/* Every counter at once, one consistent read.  Returns 0, -1 if out of memory. */
int gl_counters_read(struct gl_counters *out);

/* Every allocation site that ever held memory (--stats=yes keeps them),
 * highest peak first; malloc'ed (free it), NULL and *n = 0 when none. */
struct gl_counters_site *gl_counters_sites_by_peak(size_t *n);

/* Who holds a device's memory (-1: host memory) when an allocation fails
 * there: the live bytes and blocks of each kind, and the live blocks summed
 * by allocation stack, most bytes first.  A walk of the block table: out of
 * memory is rare.  Made inside the failing call: no CUDA call. */
struct gl_counters_holders {
    bool counted; /* live[] was read */
    struct {
        uint64_t bytes, blocks;
    } live[GL_MEM_NKINDS];
    struct gl_counters_site *sites; /* malloc'ed; NULL when there are none */
    size_t nsites;
    bool peaks; /* sites' peaks are known (per-site counting is on) */
};
void gl_counters_holders(int device, struct gl_counters_holders *out);
void gl_counters_holders_free(struct gl_counters_holders *h);

#endif
