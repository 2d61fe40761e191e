/* SPDX-License-Identifier: MIT */
/* Stopping the program's other threads for the reachability scan, and finding
 * where their stacks and registers are.
 *
 * LeakSanitizer stops threads with ptrace from a helper process; a runtime
 * living inside someone else's program would rather not fork tracers.  gpuleak
 * sends each other thread a signal whose default action is to be ignored
 * (SIGURG, so that one arriving late is harmless); the handler writes the
 * thread's registers, stack pointer and thread pointer into a slot and waits
 * until the scan is over.  Threads that block that signal (the CUDA driver's
 * own threads block every signal) are not stopped: their stacks are not the
 * program's and are not scanned.
 *
 * While the world is stopped the caller must not allocate, take a lock that a
 * stopped thread may hold, or call the dynamic loader: everything it needs is
 * prepared before gl_world_stop().  The slots live in tool memory. */
#ifndef GPULEAK_WORLD_H
#define GPULEAK_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GL_WORLD_NREGS 18 /* general registers saved for a stopped thread */

struct gl_stopped_thread {
    pid_t tid;
    _Atomic int state; /* 0 signalled, 1 stopped (data valid), 2 left the handler */
    uint64_t sp;       /* where its stack was when it stopped */
    uint64_t tp;       /* its thread pointer (TLS) */
    uint64_t regs[GL_WORLD_NREGS];
};

struct gl_world {
    struct gl_stopped_thread *threads; /* tool memory, room for cap */
    size_t n, cap;
    size_t skipped; /* threads that block the signal, or did not answer in time */
    pid_t self;
};

/* Room for the process's threads (and some that may start meanwhile).
 * Returns 0, -1 if out of memory. */
int gl_world_init(struct gl_world *w);
void gl_world_free(struct gl_world *w);

/* Stop every other thread that can be stopped, waiting at most timeout_ms for
 * them to answer.  Returns the number stopped. */
size_t gl_world_stop(struct gl_world *w, unsigned timeout_ms);
/* Let them go, and wait until each has left the handler. */
void gl_world_resume(struct gl_world *w);

#endif
