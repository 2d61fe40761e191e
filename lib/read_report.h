/* SPDX-License-Identifier: MIT */
/* gpuleak --read=FILE...: the report of processes from their saved event logs
 * (save/log_reader.h), without running anything.
 *
 * Each file is checked whole first: one that is not a log, of a newer
 * version, cut short or damaged stops the command with one line naming it and
 * the byte at fault, before any report.  Then each log is replayed through the
 * same pipeline a running process has (dispatcher, consumers, leak run,
 * report), with the process's world in place of this one's: its modules
 * (symbolized from the files, checked by build-id), its Python code, its
 * stacks, the driver's answers its exit check was given.  Blocks are
 * classified by the saved verdicts of its exit check, or, for a process that
 * died before it (SIGKILL, the OOM killer), as "live at death".
 *
 * Runs in the launcher, which has no CUDA and no program: it reports as the
 * runtime would at exit, to the log, XML and JSON the options name. */
#ifndef GPULEAK_READ_REPORT_H
#define GPULEAK_READ_REPORT_H

#include "common/options.h"

/* Returns the launcher's exit status: 0, --error-exitcode's value when the
 * reports counted errors, or 1 after one line on stderr (a file refused).
 * sysroot: where the binaries are looked for (NULL: at their paths). */
int gl_read_report(const struct gl_options *opt, char *const *files, int nfiles,
                   const char *sysroot);

#endif
