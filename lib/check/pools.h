/* SPDX-License-Identifier: MIT */
/* Custom pools declared through the client API (gpuleak.h), as the leak check
 * sees them.
 *
 * A pool is a tracked block (cudaMalloc'ed, say) flagged GL_BLK_POOL; its live
 * sub-allocations are blocks of their own (GL_MEM_POOL_SUB, event.h), each with
 * the stack that made it.  At a leak check the pool's block stands for the part
 * of the pool no sub-allocation holds: that part is cached, never a leak. */
#ifndef GPULEAK_POOLS_H
#define GPULEAK_POOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "track/block_table.h"

/* In a snapshot: each pool block's size becomes its size minus the bytes of its
 * live sub-allocations (never below 0).  Returns 0, -1 if out of memory (sizes
 * unchanged). */
int gl_pools_settle(struct gl_block_info *blocks, size_t n);

/* Names given at gpuleak_pool_create, for reports.  Thread-safe; never called
 * from a CUDA callback. */
void gl_pools_set_name(uint64_t pool_key, const char *name); /* NULL or "": forget */
/* Copies the name into buf; false if the pool has none. */
bool gl_pools_name(uint64_t pool_key, char *buf, size_t len);
/* Forget the names of pools that are no longer pools in this snapshot (their
 * block was freed without gpuleak_pool_destroy: that happens inside a CUDA
 * callback, where the names' lock may not be taken). */
void gl_pools_prune_names(const struct gl_block_info *blocks, size_t n);
void gl_pools_reset(void); /* tests */
void gl_pools_after_fork_child(void);

#endif
