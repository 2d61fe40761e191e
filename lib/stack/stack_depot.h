/* SPDX-License-Identifier: MIT */
/* The stack depot: every distinct call stack stored once, named by a small id.
 *
 * Leaks are grouped by allocation stack and most programs allocate from a few
 * hundred call sites, so a block carries a 4-byte id instead of its frames.
 * Lookups of known stacks take no lock (a per-thread cache, then immutable
 * entries); only the first sight of a new stack takes its shard's lock. */
#ifndef GPULEAK_STACK_DEPOT_H
#define GPULEAK_STACK_DEPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most frames a stack holds: native and Python frames, up to half of it
 * each (mixed_stack.h), room for --num-callers=500 and the slack
 * (stack_capture.h).  Too many to hold in an array on a program thread's
 * stack: code that copies a whole stack sizes its room by the stack. */
#define GL_STACK_MAX_FRAMES 1024
/* What a stack held before --num-callers went past 64: 80 native and 80
 * Python frames.  Still what a capture keeps on the thread's own stack
 * (stack_capture.c), and what a framework's site keeps (check/framework.c). */
#define GL_DEPOT_MAX_FRAMES 160

uint64_t gl_stack_depot_hash(const uintptr_t *frames, unsigned n);

/* Id of this stack (its first GL_STACK_MAX_FRAMES frames; 1-based), adding it
 * if new; 0 if n == 0 or memory ran out. */
uint32_t gl_stack_depot_intern(const uintptr_t *frames, unsigned n);

/* Frames of a stack id; NULL (and *n = 0) for an unknown id. */
const uintptr_t *gl_stack_depot_frames(uint32_t id, unsigned *n);

/* Allocation sites: what the blocks allocated from each stack hold now, held
 * at most, and were given in all.  Moved by the usage statistics
 * (track/stats.h): blocks > 0 is an allocation. */
void gl_stack_depot_site_move(uint32_t id, int64_t bytes, int64_t blocks);
struct gl_site_stats {
    uint32_t stack;
    uint64_t live_bytes, live_blocks, peak_bytes;
    uint64_t alloc_bytes; /* every byte allocated there, freed since or not */
};
/* Every site that ever held memory, in id order, copied into out (up to max);
 * returns how many there are. */
size_t gl_stack_depot_sites(struct gl_site_stats *out, size_t max);
/* The blocks allocated with no stack (id 0), counted apart; false if there
 * were none. */
bool gl_stack_depot_site_stackless(struct gl_site_stats *out);
/* Every site's figures back to zero, the stacks kept (the statistics' reset:
 * a replay, each log of a --read). */
void gl_stack_depot_sites_reset(void);

unsigned gl_stack_depot_count(void);
size_t gl_stack_depot_memory_bytes(void);

#endif
