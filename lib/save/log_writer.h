/* SPDX-License-Identifier: MIT */
/* --save: the event log written as the program runs (save/log_format.h), so
 * that a process killed at any moment (SIGKILL, the OOM killer, a scheduler)
 * still leaves what was live on its GPUs and who allocated it, for
 * `gpuleak --read` (save/log_reader.h).
 *
 * A consumer of events (event/dispatch.h) like any output: it runs on the
 * thread that made the call, inside the CUDA call, so it never locks, never
 * allocates and makes no system call on its way.  The file is mapped shared
 * (the page cache holds what threads store, whatever becomes of the process).
 * An event is staged: one atomic add takes a slot of the ring at the file's
 * start and the event is stored there raw, its stamp last; the helper thread
 * compacts slots into records in the order they were taken (a reader takes
 * what it had not compacted from the ring).  Other records are reserved with
 * one atomic add on the file's length and filled by the thread that
 * reserved it.  The file grows ahead of the writers (one
 * ftruncate per doubling, under a lock only a thread crossing the mapped end
 * takes); its mapping is reserved once, --save-limit long.
 *
 * Each stack is written once, before the first event that names it, native
 * frames as module + offset (save/log_modules.h) and Python frames with
 * their code objects; the exit check adds its verdict on each outstanding
 * block and an END record.  Derived events are not kept (a replay makes them
 * again). */
#ifndef GPULEAK_LOG_WRITER_H
#define GPULEAK_LOG_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/leak_kind.h"
#include "event/dispatch.h"
#include "save/log_format.h"

extern const struct gl_component gl_log_writer_component;

/* The staging ring's slots (save/log_format.h), as this writer makes it. */
#define GL_LOG_WRITER_RING_SLOTS 65536u

/* What the PROCESS record says. */
struct gl_log_process {
    const char *version, *command, *options;
};

/* Write to fd (the --save file, opened by the runtime; kept) the header, the
 * process record and the modules loaded now; the consumer attaches when the
 * dispatcher starts.  limit: the most bytes the file may take.  Returns
 * false with one line in err (the program runs on, unsaved). */
bool gl_log_writer_open(int fd, uint64_t limit, const struct gl_log_process *proc, char *err,
                        size_t errlen);
bool gl_log_writer_active(void);

/* Objects may have been loaded (after dlopen, before a report): write those
 * not written yet.  Outside CUDA calls only (it walks the loader's list). */
void gl_log_writer_modules(void);

/* Any record (the driver's answers: save/log_answers.h).  Outside the hot path. */
void gl_log_writer_record(unsigned type, const uint8_t *body, size_t n);

/* A checkpoint: its number, the allocation-number mark it set, its name. */
void gl_log_writer_mark(uint64_t number, uint64_t seq_mark, const char *name);
/* The exit check's verdict on one outstanding block. */
void gl_log_writer_verdict(uint64_t key, uint64_t seq, enum gl_leak_kind kind);
/* The last record: how the process ends, what the verdicts covered, and
 * whether the check knew reachability (why_not: why it did not). */
void gl_log_writer_end(enum gl_log_end how, int status, uint64_t blocks, uint64_t bytes,
                       bool reach_available, const char *why_not);

/* API errors' stacks (track/errors.h) are captured through the writer from
 * now on, which saves each with the thread that made the error. */
void gl_log_writer_save_error_stacks(void);

/* Trim the file to what was written and unmap it (the process is ending). */
void gl_log_writer_close(void);

/* Tests only: the helper thread leaves the staging ring and the file's
 * growth alone while held (writers fill the ring, then compact it and grow
 * the file themselves). */
void gl_log_writer_hold_helper(bool hold);

/* Events not saved: a writer found the ring full while compacting it
 * itself (a signal handler inside its own compaction), or the log closed. */
uint64_t gl_log_writer_dropped(void);

/* Bytes written so far (-v, bench). */
uint64_t gl_log_writer_bytes(void);

#endif
