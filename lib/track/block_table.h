/* SPDX-License-Identifier: MIT */
/* The live-block table: every outstanding allocation, keyed by address (or by a
 * namespaced handle, see event.h), split over many shards, each with its own
 * lock, so that threads allocating at once rarely meet.
 *
 * Blocks are kept in bins, one per aligned span of keys (4 KiB of addresses, 64
 * values of a handle namespace), and each shard indexes its bins by span in an
 * open-addressed table of (span, bin) slots.  The driver packs small
 * allocations 512 bytes apart, so a bin usually holds several of them; a bin
 * of one block (one alone in its span) is one cache line.  What a call reads
 * is the shard's first line, a slot's line and the bin: in a real program
 * these come back from the outer caches at each call (bench/cold).
 *
 * Removal is two-phase: a driver free must take the block out of the table before
 * the driver releases the address (else another thread can be handed the same
 * address and insert it first), but the free may still fail.  gl_block_table_detach()
 * takes a block out into a node the caller holds; gl_block_table_reattach() puts it
 * back if the call failed, gl_block_table_release() recycles the node once the free
 * succeeded. */
#ifndef GPULEAK_BLOCK_TABLE_H
#define GPULEAK_BLOCK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/block.h"

struct gl_table;
struct gl_table_node; /* opaque: a detached block */

struct gl_table *gl_block_table_create(unsigned nshards_log2);
void gl_block_table_destroy(struct gl_table *t);

/* Insert a copy of *b.  If the key is already present (a free gpuleak never saw:
 * the old block is gone), the old block is replaced and copied to *replaced when
 * that is non-NULL; returns true in that case.  False too when memory ran out
 * (the block is then not recorded). */
bool gl_block_table_insert(struct gl_table *t, const struct gl_block_info *b,
                           struct gl_block_info *replaced);

/* Take the block out into a node: *spare when the caller has one (it is taken,
 * and *spare cleared), else a new one, allocated before the shard's lock is
 * taken.  NULL if the key is absent (a new node is then left in *spare when
 * spare is non-NULL), or if no node could be had (the block then stays). */
struct gl_table_node *gl_block_table_detach(struct gl_table *t, uint64_t key,
                                            struct gl_table_node **spare);
const struct gl_block_info *gl_block_table_node_info(const struct gl_table_node *n);
/* Put a detached block back, unless its key was taken meanwhile (the newer block
 * wins); the node is recycled either way.  Out of memory (a bin to make or to
 * grow), the block is dropped. */
void gl_block_table_reattach(struct gl_table *t, struct gl_table_node *n);
/* Recycle a node (detached, or a spare). */
void gl_block_table_release(struct gl_table *t, struct gl_table_node *n);
/* Nodes belong to no table: a node released by one may serve another as a spare. */

/* Remove and copy out; false if absent. */
bool gl_block_table_remove(struct gl_table *t, uint64_t key, struct gl_block_info *out);
bool gl_block_table_lookup(struct gl_table *t, uint64_t key, struct gl_block_info *out);

/* Run fn on the block with this key under its shard's lock; fn may modify it and
 * returns true to remove it (its final state is then copied to *removed).
 * Returns false if the key is absent. */
typedef bool (*gl_table_update_fn)(struct gl_block_info *b, void *arg);
bool gl_block_table_update(struct gl_table *t, uint64_t key, gl_table_update_fn fn, void *arg,
                           struct gl_block_info *removed, bool *was_removed);

/* Visit every block, shard by shard, each under its lock.  fn returns true to
 * remove the block.  Returns the number removed. */
typedef bool (*gl_table_visit_fn)(const struct gl_block_info *b, void *arg);
size_t gl_block_table_foreach(struct gl_table *t, gl_table_visit_fn fn, void *arg);

size_t gl_block_table_count(struct gl_table *t);
/* Bytes the table holds: shard array, bins (with their unused capacity and the
 * shards' partly used chunks) and bucket arrays. */
size_t gl_block_table_memory_bytes(struct gl_table *t);
/* Bins in use (blocks / bins: how many blocks share an index slot). */
size_t gl_block_table_bin_count(struct gl_table *t);

/* After fork() in the child: the parent's other threads are gone, possibly holding
 * shard locks; make every lock usable again. */
void gl_block_table_reset_locks_after_fork(struct gl_table *t);

#endif
