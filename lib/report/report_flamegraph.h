/* SPDX-License-Identifier: MIT */
/* --flamegraph-file: folded stacks, the input of flamegraph.pl, inferno and
 * speedscope (heaptrack_print's option of the same name): a line per stack,
 * its frames outermost first joined by ';', a space, its bytes.
 *
 *   main;train_step (train.py:42);cudaMalloc 1048576
 *
 * The cost (--flamegraph-cost) is what each stack is weighed by: the bytes
 * outstanding at exit (leaked: every loss record, suppressed ones left out;
 * a --read of a process that died, its blocks live at death), or each
 * allocation site's own peak (peak: the most its blocks held at once).
 * Frames are the report's (the API the program called, then its callers;
 * Python frames where the interpreter's are). */
#ifndef GPULEAK_REPORT_FLAMEGRAPH_H
#define GPULEAK_REPORT_FLAMEGRAPH_H

#include <stddef.h>

#include "common/out.h"
#include "report/report_text.h"
#include "stack/stack_depot.h"

enum gl_flamegraph_cost { GL_FLAMEGRAPH_LEAKED, GL_FLAMEGRAPH_PEAK };

/* sites: the allocation sites' figures (peak), in any order. */
void gl_report_flamegraph(struct gl_out *o, const struct gl_report_input *in,
                          enum gl_flamegraph_cost cost, const struct gl_site_stats *sites,
                          size_t nsites);

#endif
