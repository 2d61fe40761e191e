/* SPDX-License-Identifier: MIT */
/* The gpuleak launcher: validates everything it can before the program runs,
 * then runs the program with the runtime injected and returns its exit status. */
#ifndef GPULEAK_LAUNCHER_H
#define GPULEAK_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/options.h"
#include "common/paths.h" /* gl_paths_relative */

/* Find the runtime library: $GPULEAK_RUNTIME; relative to this executable as
 * installed (bindir -> pkglibdir); the configured pkglibdir; the build tree.
 * Returns true with its absolute path in out, else false with the places tried. */
bool gl_locate_runtime(char *out, size_t outlen, char *tried, size_t triedlen);

/* Resolve a program name as execvp would (PATH search when it has no '/').
 * Returns true with the path in out, else false with one line in err. */
bool gl_resolve_program(const char *name, char *out, size_t outlen, char *err, size_t errlen);

/* Check that --log-file can be created: its %q{VAR}s are set and its directory
 * exists.  Returns true, or false with one line in err. */
bool gl_check_log_file(const char *tmpl, char *err, size_t errlen);

/* Read every --suppressions file, and find, read and append the default ones
 * (then --default-suppressions=no goes to the runtime: it need not look again).
 * Returns true, or false with "FILE:LINE: error: ..." in err. */
bool gl_check_suppressions(struct gl_options *opt, char *err, size_t errlen);

/* The directory of the running launcher. */
bool gl_exe_dir(char *out, size_t len);

/* Check that a --log-file/--xml-file/--json-file template can be created. */
bool gl_check_output_file(const char *option, const char *tmpl, char *err, size_t errlen);

/* After the program ended: remove the --log-file of the process gpuleak
 * started (pid) where it is an empty regular file.  The runtime opens it at
 * start; a process with nothing to say (its children tracked the GPU, or a
 * shell that ends with _exit) leaves no empty file beside the reports.  A
 * link, a device, or the file gpuleak's own stdout or stderr writes to is
 * never removed. */
void gl_remove_empty_log(const char *tmpl, int pid);

/* Run argv with the runtime injected, the runtime reporting to status_file
 * (status.c).  Returns the wait status of the program, or -1 after a message if
 * it could not be started. */
int gl_run_program(const char *path, char **argv, const char *runtime, const struct gl_options *opt,
                   const char *status_file);
/* The pid of the program gl_run_program started (0 before). */
int gl_program_pid(void);

/* Die of the signal that killed the program, as a shell reports it. */
void gl_die_of_signal(int sig) __attribute__((noreturn));

/* ---- status.c ---- */
#define GL_STATUS_MAX_SILENT 16
struct gl_status {
    unsigned tracked;          /* processes that started tracking CUDA */
    unsigned reports;          /* processes that wrote their report */
    unsigned long long errors; /* errors all reports counted */
    /* Processes that tracked and wrote no report (killed by SIGKILL, say):
     * how many, and the first GL_STATUS_MAX_SILENT of their pids. */
    unsigned silent;
    int silent_pids[GL_STATUS_MAX_SILENT];
};
bool gl_status_create(char *path, size_t len);
void gl_status_read(const char *path, struct gl_status *st);

#endif
