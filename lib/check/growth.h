/* SPDX-License-Identifier: MIT */
/* Growth detection (--growth-checkpoints=K): the leak that is not lost.
 *
 * A training loop that keeps every step's loss tensor, or a cache that is
 * never trimmed, leaks memory that is still referenced: no leak check calls
 * it lost.  What gives it away is that it grows.  At every checkpoint the
 * program takes (gpuleak_checkpoint, gpuleak.checkpoint() from Python, one per
 * iteration), each allocation site's live bytes are compared with the previous
 * checkpoint's; a site that grew at K checkpoints in a row is reported once,
 * as a "Growth" error (track/errors.h: counted, suppressible, and printed
 * at once with the site's stack).  Sites are the stack depot's, counted per
 * allocation while growth detection is on, and the sites of a framework's
 * own record (framework.h), which see tensors inside a caching
 * allocator.
 *
 * Called under the leak-run lock. */
#ifndef GPULEAK_GROWTH_H
#define GPULEAK_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "check/framework.h"
#include "stack/stack_depot.h"

/* K; 0 turns detection off. */
void gl_growth_configure(unsigned checkpoints);
unsigned gl_growth_checkpoints(void);

/* At a checkpoint (its ordinal, 1-based, and name): compare sites and report
 * those that grew at the last K checkpoints.  Returns how many were reported. */
unsigned gl_growth_check(uint64_t ordinal, const char *name, const struct gl_site_stats *sites,
                         size_t nsites, const struct gl_framework_site *fw, size_t nfw);

void gl_growth_reset(void); /* tests, fork children */

#endif
