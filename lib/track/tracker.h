/* SPDX-License-Identifier: MIT */
/* The tracker: the dispatcher's state stage (event/dispatch.h).  It keeps the
 * live blocks in the block table, resolves each event to the block it concerns
 * (made, freed, released), numbers allocations, and keeps VMM handles'
 * references and mappings.  It knows nothing of CUPTI or of the other
 * consumers: statistics, indexes and checks observe what it resolved; what it
 * changes in bulk (a context's blocks, a block found replaced, a handle freed
 * by its last unmap) it hands on as derived frees.
 *
 * Releases (frees, VMM handle releases) are two-phase, see block_table.h: the
 * begin takes the block out before the driver can reuse its address, the end
 * confirms or, if the driver call failed, undoes.  Everything here is also
 * read by the leak run and the client API (snapshots, lookups, counters). */
#ifndef GPULEAK_TRACKER_H
#define GPULEAK_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/dispatch.h"
#include "track/block_table.h"

extern const struct gl_component gl_tracker_component;

/* Create the tables (idempotent): before the first event. */
void gl_tracker_init(void);

/* Allocation numbers: the next one, process-wide. */
uint64_t gl_tracker_next_seq(void);
/* A replay's: the number an allocation made without one (a graph launch's
 * block, derived again) had when it was recorded; 0: none known.  NULL in a
 * running program. */
extern uint64_t (*gl_tracker_seq_hint)(const struct gl_event *ev);
/* A checkpoint in the numbering: every allocation made after this call gets a
 * number >= the value returned (threads drop blocks of numbers taken before). */
uint64_t gl_tracker_seq_mark(void);

/* The block with this key, copied (false if none). */
bool gl_tracker_lookup(uint64_t key, struct gl_block_info *out);
/* The live block (address-keyed) holding addr: a walk of the table, for error
 * paths only (track/live_ranges.h indexes them when range checks are on). */
bool gl_tracker_holding(uint64_t addr, struct gl_block_info *out);
/* The VMM mapping holding addr: the physical allocation's record, with key set
 * to the mapping's address (a walk, for error paths). */
bool gl_tracker_vmm_mapping_holding(uint64_t addr, struct gl_block_info *out);

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

/* Live records (blocks, handles and mappings): what gl_tracker_memory_bytes() holds. */
size_t gl_tracker_live_records(void);
/* Memory used by the tracker's tables (for -v and the overhead benchmark). */
size_t gl_tracker_memory_bytes(void);
/* The uthash items holding those records (block_table.h: blocks share bins). */
size_t gl_tracker_table_bins(void);

#endif
