/* SPDX-License-Identifier: MIT */
/* The quarantine: the last N blocks freed, with the stacks that allocated and
 * freed them, so that a second free of the same address, or a copy into freed
 * memory, can say whose block it was (AddressSanitizer's quarantine, without
 * holding the memory back: the driver may hand the addresses out again, and a
 * live block there always takes precedence over a freed one).
 *
 * A ring of records, oldest overwritten first, that frees write without a
 * lock: one atomic add takes a position, and the record goes into its own
 * 128-byte slot, stamped when complete, since frees are on the hot path, from
 * many threads at once, and lookups are rare.  Lookups share one lock, which
 * writers never take, and read a slot's stamp before and after copying it.
 * "Which freed block started here" (a double free: the error path only) scans
 * the ring from the newest position.  "Which freed block holds this address"
 * (range checks, on every checked copy that misses the live blocks) asks a
 * range index (ranges.h) that is brought up to date only then, from the
 * records added since the last such question (and reads those past a writer
 * still at work): a program that frees much and copies little pays for the
 * index only when it copies. */
#ifndef GPULEAK_QUARANTINE_H
#define GPULEAK_QUARANTINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/block.h"
#include "event/dispatch.h"

/* A consumer of frees (event/dispatch.h); reset forgets every freed block and
 * keeps the configuration. */
extern const struct gl_component gl_quarantine_component;

/* capacity records (0: off); ranges: also index by range (gl_quarantine_holding).
 * Drops what was kept.  Call before the first free. */
void gl_quarantine_configure(size_t capacity, bool ranges);
size_t gl_quarantine_capacity(void);

/* The most recent freed block that started at key. */
bool gl_quarantine_find(uint64_t key, struct gl_freed_block *out);
/* The freed block holding addr (needs ranges): the newest that does, unless
 * a newer freed block overlaps it (the driver reused part of its addresses:
 * then none), as if each free's range removed every older one it overlaps. */
bool gl_quarantine_holding(uint64_t addr, struct gl_freed_block *out);

size_t gl_quarantine_memory_bytes(void);
/* Records lost because another writer held their slot too long (a writer a
 * whole lap of the ring behind, stopped mid-write). */
unsigned long gl_quarantine_dropped(void);
/* Range lookups that answered "none" because the frees overtook them on
 * every try (the lookup was held up for a lap of the ring each time). */
unsigned long gl_quarantine_overrun(void);

#ifdef GL_ASSERTIONS
/* Unit tests only: a free's three steps one by one, so that a test can stop a
 * writer between them.  Take a position; take its slot (false: given up);
 * fill it and stamp it. */
uint64_t gl_quarantine_test_take(void);
bool gl_quarantine_test_begin(uint64_t pos);
/* The positions the range index has taken in so far (after a lookup). */
uint64_t gl_quarantine_test_indexed(void);
/* Called by a range lookup before it reads each position past the index. */
extern void (*gl_quarantine_test_scan_hook)(uint64_t pos);
void gl_quarantine_test_end(uint64_t pos, const struct gl_event *ev,
                            const struct gl_block_info *blk);
#endif

#endif
