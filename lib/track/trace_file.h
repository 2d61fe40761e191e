/* SPDX-License-Identifier: MIT */
/* --trace-file: a time series of live bytes per device and memory kind, written
 * as the program runs, for plotting later (CSV, one header, then rows
 *   seconds,device,kind,live_bytes,peak_bytes
 * (peak_bytes: the highest value since the series' last row; device "host" for
 * host memory); a series gets a row when it changed and
 * --trace-interval ms passed since its last row, so spikes between rows still
 * show in the peak column).
 *
 * A consumer of events (event/dispatch.h), attached when the file is open:
 * it runs on the thread that allocated or freed, inside the CUDA call, and
 * only write(2)s (no CUDA, no malloc).  Bounded: when the file reaches half of --trace-limit the
 * interval doubles, and again at each halving of the room left; it stops at the limit with a last
 * line saying so.  Rows are written at once, so a process killed later still leaves its series. */
#ifndef GPULEAK_TRACE_FILE_H
#define GPULEAK_TRACE_FILE_H

#include <stdint.h>

#include "event/dispatch.h"

extern const struct gl_component gl_trace_file_component;

/* Write the series to fd (the --trace-file, opened by the runtime), from now
 * on: before the dispatcher starts, which attaches the consumer then. */
void gl_trace_file_start(int fd, unsigned interval_ms, uint64_t limit_bytes);
/* A last sample of every series and close (exit report). */
void gl_trace_file_finish(void);

#endif
