/* SPDX-License-Identifier: MIT */
/* Reading a saved event log back (save/log_format.h): the producer behind
 * `gpuleak --read`.
 *
 * gl_log_reader_open reads the whole file and checks every record before
 * anything is used: a file that is not a log, of a newer version, cut inside a
 * record or damaged (a check that does not match, a record that does not
 * decode) is refused with one line naming the file and the byte offset, and
 * nothing of it is used.  A log whose process did not reach its exit check
 * ends at its last complete record (the rest of the file, zeros or the
 * records of threads caught mid-write by the process's death, is what the
 * note counts).
 *
 * gl_log_reader_replay then puts the log's world in place of the live
 * process's: its modules for symbolization (each file checked by build-id),
 * its Python code objects, its stacks, and dispatches its events in file
 * order through the dispatcher (event/dispatch.h), as the replay producer
 * does for text recordings.  The leak run then classifies the blocks live at
 * the end with gl_log_reader_classify: the saved verdict of the exit check,
 * or "live at death" for a process that never reached it. */
#ifndef GPULEAK_LOG_READER_H
#define GPULEAK_LOG_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/leak_check.h"
#include "save/log_format.h"

struct gl_log_file;

/* Read and check path.  Returns the file, or NULL with one line in err
 * ("FILE: byte N: ..."). */
struct gl_log_file *gl_log_reader_open(const char *path, char *err, size_t errlen);
void gl_log_reader_close(struct gl_log_file *f);

/* What the log says of its process. */
struct gl_log_summary {
    const struct gl_log_header *header;
    const char *version, *command, *exe, *cwd, *host, *options;
    bool ended;           /* its END record: the exit check ran */
    enum gl_log_end how;  /* when ended */
    int status;           /* when ended: exit status or signal */
    bool limited;         /* stopped at --save-limit */
    bool reach_available; /* when ended: its check knew what the program pointed to */
    const char *reach_why_not;
    uint64_t events, stacks, modules, verdicts;
    uint64_t staged;       /* of the events: read from the staging ring (never compacted) */
    uint64_t marks;        /* checkpoints the program set */
    const char *last_mark; /* the last one's name (NULL: none) */
    uint64_t last_mark_number;
    uint64_t read_to;      /* the offset after its last complete record */
    uint64_t unread_bytes; /* non-zero bytes after it (records lost at death) */
    uint64_t size;
};
void gl_log_reader_summary(const struct gl_log_file *f, struct gl_log_summary *out);

/* Look for the binaries the process loaded under dir (dir/their/path, then
 * dir/their-name) instead of at their paths: a log read on another machine,
 * the binaries copied.  Kept by pointer. */
void gl_log_reader_set_sysroot(struct gl_log_file *f, const char *dir);

/* Install the log's modules, code objects and stacks, and dispatch its events
 * (the pipeline reset and started by the caller).  Notes for the user (a
 * module missing or different from the one that ran) go to note(), one line
 * each.  Returns the events dispatched. */
long gl_log_reader_replay(struct gl_log_file *f, void (*note)(const char *line));

/* An event's time as saved (ns, or ticks in format 1) as ns since the log's
 * start. */
uint64_t gl_log_reader_ns(const struct gl_log_file *f, uint64_t ticks);

/* The classifier for the leak run (arg: the file). */
enum gl_leak_kind gl_log_reader_classify(const struct gl_block_info *b, void *arg);

/* The driver's answers the exit check was given, as saved (save/log_answers.h). */
const struct gl_driver_query *gl_log_reader_driver(struct gl_log_file *f);

#endif
