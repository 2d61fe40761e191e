/* SPDX-License-Identifier: MIT */
/* Address ranges in order: which range holds an address.
 *
 * The block table answers "which block starts here"; API checks also ask
 * "which block holds this address" (a free of an interior address, a copy that
 * starts inside a block and runs past its end, an access to a freed block).
 * This index keeps [start, end) ranges in a red-black tree (libbsd's
 * <bsd/sys/tree.h>, header-only, intrusive: the nodes come from a slab of tool
 * memory, never from malloc) under one spinlock.
 *
 * Live blocks never overlap; freed ranges may (the same addresses freed again
 * after the driver reused them): gl_ranges_insert_newest() drops what the new
 * range overlaps, so the newest free wins. */
#ifndef GPULEAK_RANGES_H
#define GPULEAK_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gl_range {
    uint64_t start, end; /* [start, end) */
    uint64_t tag;        /* the owner's: an allocation number, flags */
};

struct gl_ranges;

struct gl_ranges *gl_ranges_create(void);
void gl_ranges_destroy(struct gl_ranges *r);

/* Add [start, end) (end > start); false if out of memory or a range already
 * starts there (that one is replaced). */
bool gl_ranges_insert(struct gl_ranges *r, uint64_t start, uint64_t end, uint64_t tag);
/* Add [start, end) after removing every range it overlaps. */
bool gl_ranges_insert_newest(struct gl_ranges *r, uint64_t start, uint64_t end, uint64_t tag);
/* Remove the range starting at start (with this tag, unless any_tag); false if none. */
bool gl_ranges_remove(struct gl_ranges *r, uint64_t start, uint64_t tag, bool any_tag);
/* The range holding addr. */
bool gl_ranges_find(struct gl_ranges *r, uint64_t addr, struct gl_range *out);

size_t gl_ranges_count(struct gl_ranges *r);
size_t gl_ranges_memory_bytes(struct gl_ranges *r);
void gl_ranges_reset_lock_after_fork(struct gl_ranges *r);

#endif
