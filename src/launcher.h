/* The gpuleak launcher: validates everything it can before the program runs,
 * then runs the program with the runtime injected and returns its exit status. */
#ifndef GPULEAK_LAUNCHER_H
#define GPULEAK_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/options.h"

/* Find the runtime library: $GPULEAK_RUNTIME; relative to this executable as
 * installed (bindir -> pkglibdir); the configured pkglibdir; the build tree.
 * Returns true with its absolute path in out, else false with the places tried. */
bool gl_locate_runtime(char *out, size_t outlen, char *tried, size_t triedlen);

/* Resolve a program name as execvp would (PATH search when it has no '/').
 * Returns true with the path in out, else false with one line in err. */
bool gl_resolve_program(const char *name, char *out, size_t outlen, char *err, size_t errlen);

/* The relative path from directory from to path to (both absolute, normalized). */
void gl_relative_path(const char *from, const char *to, char *out, size_t outlen);

/* Check that --log-file can be created: its %q{VAR}s are set and its directory
 * exists.  Returns true, or false with one line in err. */
bool gl_check_log_file(const char *tmpl, char *err, size_t errlen);

/* Run argv with the runtime injected; returns only if the program exited, with its
 * status; a program killed by a signal makes the launcher die of the same signal. */
int gl_run_program(const char *path, char **argv, const char *runtime,
                   const struct gl_options *opt);

#endif
