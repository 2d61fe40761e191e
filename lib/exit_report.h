/* SPDX-License-Identifier: MIT */
/* The report written when the program exits (before the CUDA runtime tears
 * down): snapshot, leak check, symbolization, text. */
#ifndef GPULEAK_EXIT_REPORT_H
#define GPULEAK_EXIT_REPORT_H

#include <stdbool.h>
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

/* --flamegraph-file of several processes (a merged --read): each process's
 * stacks added while its log is in place (named then), weighed by
 * --flamegraph-cost, its sites' figures read now; false when the cost has
 * nothing in this process (oom: no allocation ran out of memory).  Then the
 * file written once, saying so when no process had anything (!drawn). */
struct gl_report_flamegraph;
bool gl_exit_report_flamegraph_add(struct gl_report_flamegraph *fg,
                                   const struct gl_report_input *in);
void gl_exit_report_flamegraph_write(struct gl_report_flamegraph *fg, bool drawn);

/* The errors the last report counted (what --error-exitcode looks at). */
uint64_t gl_exit_report_errors(void); /* the child's report has its own */

#endif
