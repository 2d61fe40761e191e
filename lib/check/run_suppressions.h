/* SPDX-License-Identifier: MIT */
/* The process's suppression set: one, shared by the API error sink and every
 * leak check.
 *
 * Loaded on first use (--suppressions files in order, then the defaults
 * installed beside the runtime unless --default-suppressions=no), so a file's
 * errors are said once and both kinds of record count against the same
 * entries: the exit report's used_suppression lines, XML suppcounts and JSON
 * suppressions_used name every entry that hid a leak or an error.
 *
 * The entries' patterns are read-only once loaded, so the sink (inside a CUDA
 * call, under its own lock) and a leak check (under the run lock) match
 * against them at the same time.  Their counts belong to the leak run, which
 * recomputes them at each check (gl_suppress_records, then
 * gl_run_suppressions_count_errors). */
#ifndef GPULEAK_RUN_SUPPRESSIONS_H
#define GPULEAK_RUN_SUPPRESSIONS_H

#include <stddef.h>

#include "common/suppressions.h"
#include "track/errors.h"

/* The set, loaded by the first caller (thread-safe; never NULL). */
struct gl_supp_set *gl_run_suppressions(void);
/* The set if it was loaded, else NULL (for reports: nothing was matched). */
struct gl_supp_set *gl_run_suppressions_loaded(void);

/* Add each suppressed error context's occurrences to the count of the entry
 * that matched it (the token its sink returned). */
void gl_run_suppressions_count_errors(struct gl_supp_set *s, const struct gl_error_context *ctx,
                                      size_t n);

void gl_run_suppressions_unload(void); /* tests: the next use reads the options again */
void gl_run_suppressions_after_fork_child(void);

#endif
