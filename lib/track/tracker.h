/* The tracker: applies events (event.h) to the live-block table and keeps the
 * process-wide counters.  It knows nothing of CUPTI: the callback decodes driver
 * calls into events, unit tests and replays build events by hand.
 *
 * Releases (frees, VMM handle releases) are two-phase, see block_table.h: begin
 * takes the block out before the driver can reuse its address, end confirms or,
 * if the driver call failed, undoes. */
#ifndef GPULEAK_TRACKER_H
#define GPULEAK_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "track/block_table.h"
#include "event/event.h"

void gl_tracker_init(void);
void gl_tracker_reset(void); /* tests: drop all state */

/* Kinds freed with their context (cuCtxDestroy, cudaDeviceReset).  VMM physical
 * allocations belong to the device, not to a context, and survive. */
bool gl_mem_kind_context_bound(enum gl_mem_kind k);
/* Whether a kind's blocks count as GPU allocations in the statistics: pool
 * sub-allocations (their pool's block counts) and pools' reserves do not. */
bool gl_mem_kind_counted(unsigned kind);

/* ALLOC: assigns ev->seq when 0, inserts, counts, publishes. */
void gl_tracker_alloc(struct gl_event *ev);

/* FREE or VMM_RELEASE at the driver call's entry.  Returns a token for
 * gl_tracker_release_end (0: nothing was tracked under that key). */
uint64_t gl_tracker_release_begin(struct gl_event *ev);
/* At the call's exit: ok confirms (counts, publishes ev), !ok undoes. */
void gl_tracker_release_end(uint64_t token, bool ok, struct gl_event *ev);

void gl_tracker_vmm_map(struct gl_event *ev);    /* after a successful cuMemMap */
void gl_tracker_vmm_unmap(struct gl_event *ev);  /* after a successful cuMemUnmap */
void gl_tracker_vmm_retain(struct gl_event *ev); /* after cuMemRetainAllocationHandle */
void gl_tracker_ctx_destroy(struct gl_event *ev);

/* Apply any event at once (replays, tests): releases begin and end together. */
void gl_tracker_apply(struct gl_event *ev);

/* Allocation numbers: the next one, process-wide. */
uint64_t gl_tracker_next_seq(void);
/* A checkpoint in the numbering: every allocation made after this call gets a
 * number >= the value returned (threads drop blocks of numbers taken before). */
uint64_t gl_tracker_seq_mark(void);

/* The client API's changes to a live block (ev->key); false when no block has
 * that key (the event is then not published).  IGNORE: never report it.
 * POOL_CREATE: the block is a custom pool, whose sub-allocations are blocks of
 * kind GL_MEM_POOL_SUB (event.h).  POOL_DESTROY: it no longer is; its
 * sub-allocations are forgotten (as when the pool's block is freed). */
bool gl_tracker_ignore(struct gl_event *ev);
bool gl_tracker_pool_create(struct gl_event *ev);
bool gl_tracker_pool_destroy(struct gl_event *ev);
/* The live block (address-keyed) holding addr: the range index when range
 * checks keep one, else a walk of the table (for error paths only). */
bool gl_tracker_holding(uint64_t addr, struct gl_block_info *out);
/* The VMM mapping holding addr: the physical allocation's record, with key set
 * to the mapping's address (a walk, for error paths). */
bool gl_tracker_vmm_mapping_holding(uint64_t addr, struct gl_block_info *out);
/* The block with this key, copied (false if none). */
bool gl_tracker_lookup(uint64_t key, struct gl_block_info *out);

/* Counters of GPU allocations: pool sub-allocations are not among them. */
struct gl_tracker_stats {
    uint64_t allocs;          /* allocation events */
    uint64_t frees;           /* blocks freed (explicitly or with their context) */
    uint64_t bytes_allocated; /* sum of allocated sizes */
    uint64_t live_bytes;
    uint64_t live_blocks;
    uint64_t peak_bytes;
    uint64_t unknown_frees; /* frees of keys never seen allocated */
    uint64_t replaced;      /* allocations that landed on a key still live */
};
void gl_tracker_stats(struct gl_tracker_stats *s);

/* Copy every outstanding block (VMM mapping records excluded) into a tool-mapped
 * array; *n gets the count (0 and no array before tracking starts).  Caller frees
 * with gl_tool_unmap(*out, *bytes). */
int gl_tracker_snapshot(struct gl_block_info **out, size_t *n, size_t *bytes);

/* Mapped addresses of a VMM handle, for the report (up to max; returns the count);
 * *mapped_bytes (if not NULL) gets the bytes mapped in all. */
size_t gl_tracker_vmm_mappings(uint64_t handle_key, uint64_t *addrs, size_t max,
                               uint64_t *mapped_bytes);

/* Every VMM mapping (address, length, handle key), up to max; returns how many
 * there are. */
struct gl_vmm_mapping {
    uint64_t addr, size, handle;
};
size_t gl_tracker_vmm_map_list(struct gl_vmm_mapping *out, size_t max);

/* Memory used by the tracker's tables (for -v and the overhead benchmark). */
/* Live records (blocks, handles and mappings): what gl_tracker_memory_bytes() holds. */
size_t gl_tracker_live_records(void);
size_t gl_tracker_memory_bytes(void);
/* The uthash items holding those records (block_table.h: blocks share bins). */
size_t gl_tracker_table_bins(void);

void gl_tracker_after_fork_child(void);

#endif
