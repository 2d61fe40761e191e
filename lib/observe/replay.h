/* SPDX-License-Identifier: MIT */
/* The replay producer: a recording of events read back and dispatched in
 * order (event/dispatch.h), as if the program were making its calls again,
 * through the same consumers, the leak run and the report.  Unit tests replay
 * recordings to check reports byte for byte without a GPU; the saved event
 * log's reader will be this producer over binary records.
 *
 * A text recording is one line each of:
 *   # a comment, or a blank line
 *   stack ID IP IP ...   the frames of stack ID, innermost first (hex)
 *   EVENT                an event as event/codec.h writes it
 * Stack ids are the recording's own: each stack is interned into the depot
 * as it comes, and an event's stack=ID must name one defined above it.
 * Releases are replayed whole: begun and ended at once, GL_EVF_FAILED saying
 * the driver refused it.  Derived events (GL_EVF_DERIVED) are skipped: the
 * consumers derive them again from the events that caused them.
 *
 * Runs outside any CUDA call: it may allocate. */
#ifndef GPULEAK_REPLAY_H
#define GPULEAK_REPLAY_H

#include <stddef.h>

/* Replay text (len bytes; name for messages).  Returns the events
 * dispatched, or -1 with one line in err: the name, the line number and what
 * is wrong there.  Nothing after a bad line is dispatched. */
long gl_replay_text(const char *name, const char *text, size_t len, char *err, size_t errlen);
/* The same, from a file. */
long gl_replay_file(const char *path, char *err, size_t errlen);

#endif
