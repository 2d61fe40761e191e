/* SPDX-License-Identifier: MIT */
/* The report written when the program exits (before the CUDA runtime tears
 * down): snapshot, leak check, symbolization, text. */
#ifndef GPULEAK_EXIT_REPORT_H
#define GPULEAK_EXIT_REPORT_H

#include <stdint.h>

#include "common/out.h"
#include "report/report_text.h"

/* Write the exit report once; later calls do nothing.  Only the process that
 * started tracking reports (not a fork or vfork child sharing its memory). */
void gl_exit_report(void);
/* A process that never started tracking (no CUDA): the --xml-file and
 * --json-file documents still written, with no errors and the note saying
 * why, as Valgrind always writes its XML (CTest looks for it). */
void gl_exit_report_untracked(const char *note);

/* The same, for a program ending abnormally (a fatal signal, _exit): the
 * report says how. */
void gl_exit_report_ending(const struct gl_termination *how);

/* The report's preamble (tool and command), written once per process before
 * whatever the report says first: an API error as it happens, else the exit
 * report.  Valgrind's order: preamble, errors, summaries. */
void gl_exit_report_preamble(struct gl_out *o);
void gl_exit_report_after_fork_child(void);

/* The errors the last report counted (what --error-exitcode looks at). */
uint64_t gl_exit_report_errors(void); /* the child's report has its own */

#endif
