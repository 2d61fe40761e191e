/* SPDX-License-Identifier: MIT */
/* Capturing the allocating call stack inside a CUPTI callback, or in a hook at
 * the driver's entry point.
 *
 * libunwind walks the stack with a per-thread cache (frame pointers stop early:
 * the CUDA libraries are built without them).  The walk starts inside gpuleak's
 * callback, passes through CUPTI and the driver, and reaches the program; frames
 * of gpuleak and CUPTI are dropped here, and of the driver's frames only the
 * outermost (the entry point the caller called, e.g. cuMemAlloc_v2) is kept.
 * What remains of the CUDA runtime is trimmed at report time, with symbols
 * (frame_filter.h). */
#ifndef GPULEAK_STACK_CAPTURE_H
#define GPULEAK_STACK_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

/* Set the number of frames kept for the program (--num-callers).  libunwind must
 * be loaded (unwind.h) for captures to return frames. */
void gl_stack_capture_init(unsigned num_callers);

/* Debugging aid: with GPULEAK_DEBUG_RAW_STACKS=1 in the environment, stacks are
 * stored and shown whole, gpuleak's, CUPTI's and the driver's frames included. */
extern int gl_stack_capture_raw_mode;

/* Capture, trim and intern the current stack; returns its depot id (0 if none).
 * A stack the thread captured before is recognised without unwinding it
 * (stack_memo.h). */
uint32_t gl_stack_capture(void);
/* The same, from outside the driver: a hook at the driver's entry point entry
 * (observe/driver.h).  The stack starts with that entry point, as one captured
 * inside the driver does, unless the caller is a shared CUDA runtime (whose
 * outermost frame, the call the program made, starts it then).
 * gl_stack_capture does this with the thread's call_entry (base/thread.h), so
 * that an error found inside a hooked call has the same stack. */
uint32_t gl_stack_capture_entry(uintptr_t entry);
/* At the entry of a call whose stack is captured at its exit: ask for the
 * lines the capture will read there (base/warm.h): the thread's memos. */
void gl_stack_capture_warm(void);

/* Benchmarks and tests: whether captures use the thread's stack memo (on by
 * default; GPULEAK_BENCH=nomemo turns it off). */
void gl_stack_capture_memo_enable(bool on);
/* Every thread's memo counts, summed, the native memo's and the mixed
 * memo's (a report's reader: the owners' counters are read unlocked, so a
 * running thread's may lag by an event). */
struct gl_stack_memo_counts;
struct gl_mixed_memo_counts;
void gl_stack_capture_memo_totals(struct gl_stack_memo_counts *c,
                                  struct gl_mixed_memo_counts *mixed);

/* From a signal handler: the stack of the code the signal interrupted (the
 * frames below the kernel's sigreturn trampoline), interned; 0 if none. */
uint32_t gl_stack_capture_interrupted(void);

/* Trim raw frames (innermost first) in place: drop gpuleak/CUPTI frames and all
 * driver frames but the outermost.  Returns the new count.  Exposed for tests. */
unsigned gl_stack_capture_trim(uintptr_t *frames, unsigned n);

/* How many frames past the trimmed start are stored, beyond --num-callers, so that
 * report-time trimming of CUDA runtime internals still leaves num_callers frames. */
#define GL_STACK_SLACK 4

#endif
