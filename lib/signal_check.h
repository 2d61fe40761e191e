/* SPDX-License-Identifier: MIT */
/* --check-signal: a leak check asked for from outside the process, at any
 * time, by a signal (kill -USR2 PID), as Valgrind's vgdb asks memcheck for
 * one: for a program that does not end (a server, a notebook's kernel) and
 * whose code cannot call gpuleak_leak_check.
 *
 * A check cannot run in a signal handler: it stops threads, takes locks and
 * maps memory, and the signal may strike inside any of them.  So the handler
 * posts a semaphore (all it does), and a tool thread of gpuleak's, waiting
 * on it, runs the check as gpuleak_leak_check(mode, NULL) would
 * (client_api.h): into the process's log, its records compared with the
 * last check (the program's own checks included), kept for the XML and JSON
 * documents.  Signals that come while a check runs are one more check.
 * Unlike the client API's, such a check has no caller: every program thread
 * is stopped wherever it is and scanned whole, registers and stack, so a
 * pointer a thread has just dropped may still keep its block reachable.
 *
 * The program keeps what it had: a handler of its own, set before tracking
 * starts, still runs at each signal, with the mask and flags it asked for;
 * one it sets later replaces gpuleak's (its choice).  A signal left to its
 * default action now asks for checks only; one the program ignores (nohup)
 * stays ignored, with a line in the log (handled, it would no longer be
 * ignored in what the program starts without fork: exec keeps only an
 * ignored disposition).  A child forked from a tracking process does not
 * track (its blocks are its parent's): there the signal is the program's
 * again.  A signal every thread blocks (a program that takes its signals
 * with sigwait) reaches no handler, and asks for nothing. */
#ifndef GPULEAK_SIGNAL_CHECK_H
#define GPULEAK_SIGNAL_CHECK_H

/* At tracking start, with the options read: installs the handler and
 * starts the thread when --check-signal names a signal.  A failure is one
 * line in the log; the program runs on without it. */
void gl_signal_check_install(void);

/* In a forked child: the parent's thread is not there, and the child does
 * not track: the program's disposition of the signal again. */
void gl_signal_check_after_fork_child(void);

#endif
