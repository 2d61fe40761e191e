/* SPDX-License-Identifier: MIT */
/* The registry: every component of the runtime that keeps process state, in
 * the order the dispatcher runs them (event/dispatch.h).  One list, so that a
 * new module is added once and reached by everything that must reach it: the
 * events (consumers, in pipeline order), a test's or a replay's reset, and the
 * fork child's clean-up.  The runtime hands it to the dispatcher
 * (gl_dispatch_set_registry), which lies below every component. */
#ifndef GPULEAK_COMPONENTS_H
#define GPULEAK_COMPONENTS_H

#include "event/dispatch.h"

/* NULL-terminated. */
extern const struct gl_component *const gl_components[];

#endif
