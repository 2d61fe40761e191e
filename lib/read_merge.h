/* SPDX-License-Identifier: MIT */
/* One report for many processes (gpuleak --read with several saved logs):
 * a torchrun job's ranks, a multiprocessing pool's workers.
 *
 * Each process is checked on its own (its log replayed, its leak run, its
 * suppressions); what it found is handed here, and the merged report puts
 * together the loss records with the same leak kind and the same stack (by
 * function, file and line, or object: addresses differ from one process to
 * the next), saying in how many and in which processes each is, and sorts
 * them by total bytes as a single report does.  Then a line per process (how
 * it ended, what it held) and one LEAK SUMMARY over them all. */
#ifndef GPULEAK_READ_MERGE_H
#define GPULEAK_READ_MERGE_H

#include <stdint.h>

#include "check/leak_run.h"
#include "common/out.h"
#include "report/report_text.h"
#include "save/log_reader.h"

struct gl_read_merge;

struct gl_read_merge *gl_read_merge_new(void);
void gl_read_merge_free(struct gl_read_merge *m);

/* One process: its log's summary, its leak run and the report input made
 * for it (its frames are copied: the symbolizer is reopened for the next).
 * Returns false when memory ran out. */
bool gl_read_merge_add(struct gl_read_merge *m, const struct gl_log_summary *s,
                       const struct gl_leak_run *run, const struct gl_report_input *in);

/* The merged report.  Returns the errors it counted (--error-exitcode). */
uint64_t gl_read_merge_print(const struct gl_read_merge *m, struct gl_out *o,
                             const struct gl_options *opt);

#endif
