/* SPDX-License-Identifier: MIT */
/* Reports for programs that end without exit(): a fatal signal or _exit().
 *
 * The exit report runs from atexit(), which a signal's default action and
 * _exit() skip.  So, once tracking starts:
 *
 * - Signals whose default action ends the process (SIGSEGV, SIGBUS, SIGFPE,
 *   SIGILL, SIGABRT - an uncaught C++ exception aborts -, SIGTERM, SIGINT,
 *   SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, ...) get a handler, but only those the
 *   program left at SIG_DFL: a program's own handler decides for itself, and
 *   one it installs later replaces ours.  The handler writes the report, which
 *   says "Process terminating with default action of signal N", with where it
 *   struck; then it restores the default action and raises the signal again,
 *   so that the program dies of it as it would have (exit status, core dump).
 *
 *   A report from a signal handler is not async-signal-safe: the signal may
 *   have struck while this thread held a lock the report needs (inside malloc,
 *   a gpuleak callback, the driver).  A watchdog (SIGALRM after
 *   GL_SIGNAL_REPORT_SECONDS) then ends the process with the original signal
 *   all the same, and the launcher says that no report was written.  A signal
 *   inside gpuleak's allocator hooks is known at once: no report is tried.
 *
 * - _exit() and _Exit() (Python's os._exit) are interposed: the report is
 *   written, saying "Process ended with _exit(N)", then the process exits.
 *   exit() calls the C library's own _exit, not this one.
 *
 * SIGKILL and SIGSTOP cannot be caught: the launcher, which sees the program
 * die, says no report could be written.
 *
 * A SIGSEGV or SIGBUS inside a guarded read (base/read_guard.h: the Python
 * frame walker) is not the program's: the handler returns it to the guard.
 * Where the program has a handler of its own for them and Python frames are
 * read, a guard handler goes in front of the program's. */
#ifndef GPULEAK_ABNORMAL_END_H
#define GPULEAK_ABNORMAL_END_H

#define GL_SIGNAL_REPORT_SECONDS 60

/* Install the signal handlers (when tracking starts). */
void gl_abnormal_end_install(void);

#endif
