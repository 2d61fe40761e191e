/* The registry: every component of the runtime that keeps process state, in
 * the order the dispatcher runs them (event/dispatch.h).  One list, so that a
 * new module is added once and reached by everything that must reach it: the
 * events (consumers, in pipeline order), a test's or a replay's reset, and the
 * fork child's clean-up.  gl_components itself is declared in
 * event/dispatch.h, which walks it. */
#ifndef GPULEAK_COMPONENTS_H
#define GPULEAK_COMPONENTS_H

#include "event/dispatch.h"

#endif
