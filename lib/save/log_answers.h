/* SPDX-License-Identifier: MIT */
/* The driver's answers to the exit check, saved and given again.
 *
 * The exit check asks the driver what events cannot tell (check/driver_query.h):
 * device names, what stream-ordered pools and graph memory keep unused, the
 * size of memory opened through IPC.  With --save, the runtime's check asks
 * through a recorder that writes each answer to the log (an ANSWER record:
 * varint question, its argument, its results); `gpuleak --read` asks the
 * same questions of a table of them, so the report read back is the report
 * the process wrote.  A process that died never asked: every question goes
 * unanswered, as for a run without a driver. */
#ifndef GPULEAK_LOG_ANSWERS_H
#define GPULEAK_LOG_ANSWERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/driver_query.h"

/* real, whose answers are also written to the log (save/log_writer.h). */
const struct gl_driver_query *gl_log_answers_recorder(const struct gl_driver_query *real);

/* ---- reading ---- */

struct gl_log_answers;
struct gl_log_answers *gl_log_answers_new(void);
void gl_log_answers_free(struct gl_log_answers *a);
/* One ANSWER body: false if it does not decode. */
bool gl_log_answers_add(struct gl_log_answers *a, const uint8_t *body, size_t n);
/* A driver that answers from a (one table at a time: the last one asked for). */
const struct gl_driver_query *gl_log_answers_query(const struct gl_log_answers *a);

#endif
