/* SPDX-License-Identifier: MIT */
/* State of the runtime inside the program: its options, its process, and whether
 * CUDA tracking started.  One instance per process (gl_runtime). */
#ifndef GPULEAK_RUNTIME_H
#define GPULEAK_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/options.h"

enum gl_rt_state {
    GL_RT_IDLE = 0, /* loaded; CUDA not initialized (yet) */
    GL_RT_TRACKING, /* CUPTI subscribed, callbacks enabled: the dispatcher's gate is open */
    GL_RT_FAILED,   /* CUDA started but no observer could track (no CUPTI, hooks not reached) */
    GL_RT_REPORTED, /* exit report written: callbacks are ignored from now on */
    GL_RT_DISABLED, /* bad GPULEAK_OPTIONS, or a fork child */
};

struct gl_runtime {
    struct gl_options opt;
    _Atomic int state;    /* enum gl_rt_state */
    pid_t pid;            /* process that started tracking */
    bool is_main_process; /* the process the launcher started (GPULEAK_PID) */
    bool forked_child;    /* made by fork() from a process running the runtime */
    char command[2048];   /* the program's command line, for the report header */
    double start_time;    /* CLOCK_MONOTONIC at load */
};

extern struct gl_runtime gl_runtime;

static inline bool gl_runtime_tracking(void)
{
    return atomic_load_explicit(&gl_runtime.state, memory_order_acquire) == GL_RT_TRACKING;
}

/* Open a --xml-file/--json-file template for writing (truncating); -1 after one
 * line to the log saying why. */
int gl_runtime_open_output(const char *option, const char *tmpl);

/* Append a line to the launcher's status file (GL_STATUS_ENV), if there is one. */
void gl_runtime_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Has any process of the program appended a line containing word to the
 * launcher's status file? */
bool gl_runtime_status_seen(const char *word);

/* The program's command line, split (malloc'ed; free *args then *buf); -1 on error. */
int gl_runtime_program_argv(char **buf, char ***args);

/* Seconds since the runtime was loaded (about the program's start). */
double gl_runtime_elapsed(void);

/* One line for the user, prefixed "==PID== ", to the report's destination
 * (stderr or --log-file).  For notes and tool errors outside the report. */
void gl_runtime_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Open the report destination (stderr or the expanded --log-file); returns a file
 * descriptor and whether the caller must close it. */
int gl_runtime_open_log(bool *must_close);

/* Set up the tracker, its checks and stack capture as gl_runtime.opt asks, and
 * attach the consumers of registry (lib/components.h's gl_components) that the
 * options want: the one place the runtime and the hot-path benchmark configure
 * them.  The registry is passed in, not named here: it lists modules of every
 * folder, which themselves read the runtime's options. */
struct gl_component;
void gl_runtime_configure_tracking(const struct gl_component *const *registry);

/* Note the load time (gl_runtime_elapsed). */
void gl_runtime_mark_start(void);
/* Keep a private copy of the program's stderr (at load time) for reports. */
void gl_runtime_save_stderr(void);
/* For the program the user ran, open the --log-file now, before the program
 * writes, and keep it: a file of its own is emptied now; the program's own
 * stdout or stderr file (--log-file=/dev/stdout with stdout redirected to a
 * file) is appended to, its output kept; devices, FIFOs, sockets and
 * terminals are never truncated.  Still there at exit if the program closed
 * its stdout. */
void gl_runtime_prepare_log(void);
/* --xml-fd's descriptor as kept at start, or -1 (no --xml-fd, or --xml-file). */
int gl_runtime_xml_fd(void);
/* Fill gl_runtime.command from /proc/self/cmdline. */
void gl_runtime_read_command(void);

#endif
