/* SPDX-License-Identifier: MIT */
/* The live blocks and VMM mappings by address range, for the checks of copies
 * and sets (--check-api-ranges=yes): "which live block holds this address".
 * The block table answers only "which block starts here".
 *
 * A consumer of events (event/dispatch.h), attached only when range checks are
 * on: keeping the index costs every allocation and free a tree update, which
 * a program that is not range-checked should not pay. */
#ifndef GPULEAK_LIVE_RANGES_H
#define GPULEAK_LIVE_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "event/dispatch.h"

extern const struct gl_component gl_live_ranges_component;

/* Keep the index (range checks on) or not; drops what it held. */
void gl_live_ranges_configure(bool on);
bool gl_live_ranges_on(void);

/* The live range holding addr: its start, and the block's allocation number,
 * or GL_LIVE_RANGES_VMM for a VMM mapping (mappings hold no block of their
 * own: the physical allocation is keyed by its handle). */
#define GL_LIVE_RANGES_VMM (1ULL << 63)
bool gl_live_ranges_find(uint64_t addr, uint64_t *start, uint64_t *seq);

#endif
