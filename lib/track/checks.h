/* SPDX-License-Identifier: MIT */
/* The checks made at the driver API, without instrumenting kernels: a release
 * that misses the table or names the wrong call, an allocation that failed for
 * lack of memory, and (--check-api-ranges=yes) the ranges of every copy and
 * set.  A consumer of events (event/dispatch.h): it looks at each release
 * once the block table resolved it, at every failed allocation, and at the
 * accesses the producer decodes only when ranges are checked; what it finds
 * goes to the error record (track/errors.h).
 *
 * The checks cost next to nothing until something is wrong: a release that
 * finds its block compares its kind with the call; everything else (where a
 * missed address lies, which device a stream is on) is looked up on the error
 * path only. */
#ifndef GPULEAK_CHECKS_H
#define GPULEAK_CHECKS_H

#include "event/dispatch.h"

extern const struct gl_component gl_checks_component;

#endif
