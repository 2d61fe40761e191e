/* SPDX-License-Identifier: MIT */
/* Suppressions applied to loss records, after the leak check and before the report.
 *
 * Entries of kind Cached come first: a matching record becomes cached.  Then
 * entries of kind Leak: a matching record is suppressed (not printed, counted in
 * LEAK SUMMARY's "suppressed" line and in ERROR SUMMARY's "suppressed: N from M").
 * The first matching entry of each kind wins, in file order, as in Valgrind;
 * each entry counts what it suppressed in this pass (counts start from zero at
 * each call: a set may serve many leak checks). */
#ifndef GPULEAK_SUPPRESS_H
#define GPULEAK_SUPPRESS_H

#include "common/suppressions.h"
#include "check/leak_check.h"

/* frames: the stack service (common/frame.h), asked for every frame kept, not
 * only --num-callers. */
void gl_suppress_records(struct gl_leak_result *r, struct gl_supp_set *s, gl_stack_frames_fn frames,
                         void *arg);

/* Which blocks a Cached entry will call cached whatever the reachability scan
 * finds, before the scan, so that it need not search for them: a caching
 * allocator's segments, which with PyTorch's cache on are every block at
 * exit (the scan stops every thread and reads the whole heap: seconds in a
 * large program, for nothing).  A block is held when the first Cached entry
 * its stack matches matches every leak kind; an earlier one restricted by
 * match-leak-kinds leaves the block to the scan, whose kind decides.
 * held[i] is set to 1 for each such block (0 otherwise); returns how many. */
size_t gl_suppress_held_blocks(struct gl_supp_set *s, const struct gl_block_info *blocks, size_t n,
                               gl_stack_frames_fn frames, void *arg, uint8_t *held);

#endif
