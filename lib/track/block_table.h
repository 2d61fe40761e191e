/* The live-block table: every outstanding allocation, keyed by address (or by a
 * namespaced handle, see event.h), in uthash tables split over many shards, each
 * with its own lock, so that threads allocating at once rarely meet.
 *
 * Removal is two-phase: a driver free must take the block out of the table before
 * the driver releases the address (else another thread can be handed the same
 * address and insert it first), but the free may still fail.  gl_table_detach()
 * unlinks a node and hands it to the caller; gl_table_reattach() puts it back if
 * the call failed, gl_table_release() recycles it once the free succeeded. */
#ifndef GPULEAK_BLOCK_TABLE_H
#define GPULEAK_BLOCK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gl_block_info {
    uint64_t key;   /* address, or namespaced handle */
    uint64_t size;  /* bytes */
    uint64_t seq;   /* allocation number, 1-based, process-wide */
    uint64_t ctx;   /* CUcontext the block belongs to (0: none) */
    uint64_t aux;   /* stream (stream-ordered), handle key (VMM map records),
                       live mappings (VMM handles) */
    uint32_t stack; /* stack depot id */
    uint32_t tid;   /* allocating thread */
    int16_t device; /* ordinal, -1 host/unknown */
    uint8_t kind;   /* enum gl_mem_kind */
    uint8_t flags;  /* GL_BLK_* */
    uint16_t api;   /* enum gl_api of the driver entry point */
    uint16_t refs;  /* VMM handles: 1 + retains - releases (mappings count in aux) */
};

#define GL_BLK_SIZE_UNKNOWN 0x1 /* resolve at report time */
#define GL_BLK_RELEASED 0x2     /* VMM handle: cuMemRelease'd, alive through mappings */
#define GL_BLK_IMPORTED 0x4     /* opened from another process (IPC, shareable handle) */
#define GL_BLK_IGNORED 0x8      /* never reported (gpuleak_ignore, gpuleak_disable) */
#define GL_BLK_POOL 0x10        /* a custom pool: its sub-allocations are blocks of their own */

struct gl_table;
struct gl_table_node; /* opaque: a detached block */

struct gl_table *gl_table_create(unsigned nshards_log2);
void gl_table_destroy(struct gl_table *t);

/* Insert a copy of *b.  If the key is already present (a free gpuleak never saw:
 * the old block is gone), the old block is replaced and copied to *replaced when
 * that is non-NULL; returns true in that case.  A node released earlier may be
 * handed in through *spare (it is taken, and *spare cleared): the insert then
 * needs no allocation. */
bool gl_table_insert(struct gl_table *t, const struct gl_block_info *b,
                     struct gl_block_info *replaced, struct gl_table_node **spare);

struct gl_table_node *gl_table_detach(struct gl_table *t, uint64_t key);
const struct gl_block_info *gl_table_node_info(const struct gl_table_node *n);
void gl_table_reattach(struct gl_table *t, struct gl_table_node *n);
void gl_table_release(struct gl_table *t, struct gl_table_node *n);
/* Nodes are interchangeable between tables and shards: a detached node may be
 * kept as a spare for a later insert instead of being released. */

/* Remove and copy out; false if absent. */
bool gl_table_remove(struct gl_table *t, uint64_t key, struct gl_block_info *out);
bool gl_table_lookup(struct gl_table *t, uint64_t key, struct gl_block_info *out);

/* Run fn on the block with this key under its shard's lock; fn may modify it and
 * returns true to remove it (its final state is then copied to *removed).
 * Returns false if the key is absent. */
typedef bool (*gl_table_update_fn)(struct gl_block_info *b, void *arg);
bool gl_table_update(struct gl_table *t, uint64_t key, gl_table_update_fn fn, void *arg,
                     struct gl_block_info *removed, bool *was_removed);

/* Visit every block, shard by shard, each under its lock.  fn returns true to
 * remove the block.  Returns the number removed. */
typedef bool (*gl_table_visit_fn)(const struct gl_block_info *b, void *arg);
size_t gl_table_foreach(struct gl_table *t, gl_table_visit_fn fn, void *arg);

size_t gl_table_count(struct gl_table *t);
size_t gl_table_memory_bytes(struct gl_table *t);

/* After fork() in the child: the parent's other threads are gone, possibly holding
 * shard locks; make every lock usable again. */
void gl_table_reset_locks_after_fork(struct gl_table *t);

#endif
