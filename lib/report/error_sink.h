/* SPDX-License-Identifier: MIT */
/* Printing API errors as they happen: the runtime's gl_errors_sink.
 *
 * Called inside the CUDA call that erred, on the program's thread: it makes no
 * CUDA call and never waits for a leak check (which may call the driver); it
 * keeps a symbolizer of its own under its own lock, and matches against the
 * process's suppression set (run_suppressions.h), shared with leak checks.
 * The first error of each context is matched against the suppressions
 * (gpuleak:InvalidFree and the other error kinds) and, unless suppressed,
 * printed to the report's destination with --gen-suppressions' entry. */
#ifndef GPULEAK_ERROR_SINK_H
#define GPULEAK_ERROR_SINK_H

#include <stdint.h>

#include "common/frame.h"

/* Install gl_errors_sink and the stack capture for errors. */
void gl_error_sink_install(void);
/* The stack frames service for reports of kept errors (exit XML/JSON). */
unsigned gl_error_sink_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg);
void gl_error_sink_after_fork_child(void);

#endif
