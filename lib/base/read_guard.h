/* SPDX-License-Identifier: MIT */
/* Guarded reads of memory gpuleak does not own.
 *
 * The Python frame walker (python_frames.h) reads the interpreter's thread
 * states and frames from inside a CUDA call, without the GIL.  While the
 * interpreter finalizes, another thread frees those thread states and unmaps
 * their frame stacks (PyThreadState_Clear), and no check made before a read
 * can rule that out for the read after it.  So the walk runs under a guard: a
 * SIGSEGV or SIGBUS that strikes while the calling thread's guard is set
 * returns to the guard's start (siglongjmp) instead of ending the program, and
 * the walk gives up.
 *
 * Usage, in the function that reads (sigsetjmp must stay in a live frame):
 *
 *     sigjmp_buf env;
 *     if (sigsetjmp(env, 0))
 *         return recover();            // a fault: the guard is already cleared
 *     gl_read_guard_set(self, &env);
 *     ... reads ...
 *     gl_read_guard_set(self, NULL);
 *
 * The signal handlers: gpuleak's own for a signal the program left at its
 * default action (abnormal_end.h) asks gl_read_guard_catch first; where the
 * program has a SIGSEGV or SIGBUS handler of its own (Python's faulthandler,
 * which pytest turns on), gl_read_guard_chain puts one in front of it that
 * catches guarded faults and hands every other one to the program's handler
 * as it was installed. */
#ifndef GPULEAK_READ_GUARD_H
#define GPULEAK_READ_GUARD_H

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>

#include "base/thread.h"

static inline void gl_read_guard_set(struct gl_thread *self, sigjmp_buf *env)
{
    /* The handler runs on this thread: only the compiler must keep the order. */
    atomic_signal_fence(memory_order_seq_cst);
    self->read_guard = env;
    atomic_signal_fence(memory_order_seq_cst);
}

/* From a SIGSEGV or SIGBUS handler (uc: its third argument): if the faulting
 * thread is inside a guarded read, restore the signal mask the fault found and
 * jump back to the guard; else return.  Async-signal-safe. */
void gl_read_guard_catch(int sig, void *uc);

/* Put a guard handler in front of the program's own handler for sig (SIGSEGV
 * or SIGBUS), whose action old describes.  Faults outside guarded reads go to
 * it with the action's flags and mask as it set them. */
void gl_read_guard_chain(int sig, const struct sigaction *old);

/* How many guarded faults were caught. */
unsigned long gl_read_guard_caught(void);

#endif
