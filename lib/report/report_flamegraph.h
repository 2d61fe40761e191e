/* SPDX-License-Identifier: MIT */
/* --flamegraph-file: folded stacks, the input of flamegraph.pl, inferno and
 * speedscope (heaptrack_print's option of the same name): a line per stack,
 * its frames outermost first joined by ';', a space, its bytes.
 *
 *   main;train_step (train.py:42);cudaMalloc 1048576
 *
 * The cost (--flamegraph-cost) is what each stack is weighed by: the bytes
 * outstanding at exit (leaked: every loss record, suppressed ones left out;
 * a --read of a process that died, its blocks live at death), each
 * allocation site's own peak (peak: the most its blocks held at once), the
 * bytes live at an out-of-memory error (oom: track/oom_snapshot.h says which
 * error), or every byte a site allocated, freed since or not (allocated:
 * heaptrack's "allocated").  Frames are the report's (the API the program
 * called, then its callers; Python frames where the interpreter's are).
 *
 * Lines whose frames read the same are one line, their bytes summed: two loss
 * records of one stack (a definite and a possible leak), and the processes of
 * a merged --read, whose stacks are named in each process before they meet. */
#ifndef GPULEAK_REPORT_FLAMEGRAPH_H
#define GPULEAK_REPORT_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/out.h"
#include "report/report_text.h"
#include "stack/stack_depot.h"

/* The order of --flamegraph-cost's values (common/options.def). */
enum gl_flamegraph_cost {
    GL_FLAMEGRAPH_LEAKED,
    GL_FLAMEGRAPH_PEAK,
    GL_FLAMEGRAPH_OOM,
    GL_FLAMEGRAPH_ALLOCATED
};

/* Folded lines gathered from one process or several (malloc'ed: report
 * time). */
struct gl_report_flamegraph;
struct gl_report_flamegraph *gl_report_flamegraph_new(void);
/* One process's stacks, named now through in's stack service and weighed by
 * cost: leaked, in->leaks' unsuppressed records; the others, sites' figures
 * (in any order): peak_bytes, live_bytes (live at the out-of-memory error),
 * alloc_bytes.  Stacks of no bytes are left out.  False: memory ran out (what
 * was added stays). */
bool gl_report_flamegraph_add(struct gl_report_flamegraph *fg, const struct gl_report_input *in,
                              enum gl_flamegraph_cost cost, const struct gl_site_stats *sites,
                              size_t nsites);
/* The bytes of every line; how many lines (same frames merged). */
uint64_t gl_report_flamegraph_total(const struct gl_report_flamegraph *fg);
size_t gl_report_flamegraph_lines(struct gl_report_flamegraph *fg);
/* The lines, in the order their frames were first added. */
void gl_report_flamegraph_write(struct gl_out *o, struct gl_report_flamegraph *fg);
void gl_report_flamegraph_free(struct gl_report_flamegraph *fg);

/* One process at once: gathered, written, freed. */
void gl_report_flamegraph(struct gl_out *o, const struct gl_report_input *in,
                          enum gl_flamegraph_cost cost, const struct gl_site_stats *sites,
                          size_t nsites);

#endif
