/* SPDX-License-Identifier: MIT */
/* Live heap chunks: address -> (size, caller id), 16 bytes each.
 *
 * malloc-heavy programs make millions of chunks, so this is not the block
 * table's uthash: each of 256 shards is an open-addressing array with linear
 * probing and tombstones, grown (and cleaned) under the shard's spinlock; a
 * lookup touches one or two cache lines.  A counting filter per shard, read
 * without the lock, turns away most lookups of addresses the shard does not
 * hold (the driver's chunks, which the hooks leave out).  Arrays are tool
 * memory; a replaced array is unmapped only after the new one is published,
 * so that a reader with the world stopped (gl_chunk_table_foreach) never sees
 * a freed one. */
#ifndef GPULEAK_CHUNK_TABLE_H
#define GPULEAK_CHUNK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_CHUNK_SIZE_MAX ((1ULL << 40) - 1) /* larger sizes are recorded as this */

/* Record a chunk (replacing one at the same address: a free the hooks missed). */
void gl_chunk_table_insert(uint64_t addr, uint64_t size, uint32_t caller);
/* Forget a chunk; false if it was not recorded (memory from before the hooks,
 * or not from the allocator at all). */
bool gl_chunk_table_remove(uint64_t addr);
/* Its size and caller, if recorded. */
bool gl_chunk_table_lookup(uint64_t addr, uint64_t *size, uint32_t *caller);

size_t gl_chunk_table_count(void);
size_t gl_chunk_table_memory_bytes(void);

/* Visit every chunk.  trylock_only: a shard whose lock cannot be taken at
 * once (its holder is stopped, world.h) is read without it. */
typedef void (*gl_chunk_visit_fn)(uint64_t addr, uint64_t size, uint32_t caller, void *arg);
void gl_chunk_table_foreach(gl_chunk_visit_fn fn, void *arg, bool trylock_only);

void gl_chunk_table_reset(void);

/* Unit tests only (the checked core): whether the filter lets a lookup of
 * addr go on to the lock. */
bool gl_chunk_table_test_may_hold(uint64_t addr);
void gl_chunk_table_after_fork_child(void);

#endif
