/* --trace-file: a time series of live bytes per device and memory kind, written
 * as the program runs, for plotting later (CSV, one header, then rows
 *   seconds,device,kind,live_bytes,peak_bytes
 * (peak_bytes: the highest value since the series' last row; device "host" for
 * host memory); a series gets a row when it changed and
 * --trace-interval ms passed since its last row, so spikes between rows still
 * show in the peak column).
 *
 * It is the tracker's event sink (event.h): it runs on the thread that
 * allocated or freed, inside the CUDA call, and only write(2)s (no CUDA, no
 * malloc).  Bounded: when the file reaches half of --trace-limit the interval
 * doubles, and again at each halving of the room left; it stops at the limit
 * with a last line saying so.  Rows are written at once, so a process killed
 * later still leaves its series. */
#ifndef GPULEAK_TRACE_FILE_H
#define GPULEAK_TRACE_FILE_H

#include <stdint.h>

/* Open the file (expanding %p...) and become the event sink; one line to the
 * log if it cannot be opened. */
void gl_trace_file_start(const char *tmpl, unsigned interval_ms, uint64_t limit_bytes);
/* A last sample of every series and close (exit report). */
void gl_trace_file_finish(void);

#endif
