/* SPDX-License-Identifier: MIT */
/* The leak checks the program asked for (gpuleak_leak_check and
 * gpuleak_leak_check_to), kept from the moment each ran until the exit's XML
 * and JSON documents are written: the text prints a check at once, the
 * documents are written once, at exit.
 *
 * Bounded: the last GL_CHECK_HISTORY_CHECKS checks, each with the first
 * GL_CHECK_HISTORY_RECORDS records it printed (its totals and counts whole);
 * older checks are dropped and counted.  A test suite that checks after every
 * test (gpuleak_check.h, the pytest plugin) makes thousands.
 *
 * Kept only when a document will be written (--xml, --json-file).  Added on
 * the program's thread that asked, under the leak-run lock
 * (check/leak_run.h), never inside a CUDA callback; tool memory.  Not in the
 * registry (lib/components.c): a fork child keeps the parent's checks as it
 * keeps its API errors, both part of the process's past, and a saved log
 * (--read) holds no checks, so nothing ever needs them forgotten but a test. */
#ifndef GPULEAK_CHECK_HISTORY_H
#define GPULEAK_CHECK_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "report/report_text.h"

#define GL_CHECK_HISTORY_CHECKS 64
#define GL_CHECK_HISTORY_RECORDS 32

/* Keep a check just printed from in (its records, reference and selection as
 * gl_report_text_check used them; before the reference is replaced).
 * number: "Leak check N"; since_seq: its checkpoint's position (0: none);
 * to_buffer: written into the program's buffer; errors: what it returned. */
void gl_check_history_add(const struct gl_report_input *in, uint64_t number, uint64_t since_seq,
                          bool to_buffer, uint64_t errors);

/* The checks kept, oldest first, into a report's input (checks, nchecks,
 * checks_dropped).  They stay valid until the next add or reset. */
void gl_check_history_input(struct gl_report_input *in);

void gl_check_history_reset(void); /* tests */

#endif
