/* SPDX-License-Identifier: MIT */
/* --log-file templates, as Valgrind spells them:
 *   %p        the process id (one report per process: children get their own file)
 *   %n        the file's sequence number in its process (below)
 *   %q{VAR}   the value of environment variable VAR
 *   %%        a literal '%'
 * Any other '%' sequence is an error, reported before the program runs.
 *
 * %n is Valgrind's "file sequence number unique for this process", so that
 * one template can name several files.  Valgrind counts, per process, as it
 * expands names.  gpuleak expands the same name many times and in several
 * processes: the launcher checks it before the program runs, the program
 * opens its log at start and again in a fork child or for a later note, its
 * documents at exit; a counter would give each of these another name.  So
 * the numbers carry no state at run time: they are fixed once, from the
 * options, when those are final (gl_options_make_absolute, in the launcher
 * and in a runtime given GPULEAK_OPTIONS directly), by gl_logfile_number,
 * which writes each template's number into it.  Every process then expands
 * the same names; a fork child gets its parent's numbers, as Valgrind's
 * counter, which restarts at 1 in a new process, would give it.  A template
 * expanded before it is numbered (the syntax check of a parsed option) has
 * %n expand to 1. */
#ifndef GPULEAK_LOGFILE_H
#define GPULEAK_LOGFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Expand tmpl into out.  With require_vars, a %q{VAR} naming an unset variable is an
 * error (the launcher checks this once, before the program runs); without it an
 * unset variable expands to nothing.  Returns 0, or -1 with one line in err. */
int gl_logfile_expand(const char *tmpl, int pid, bool require_vars, char *out, size_t outlen,
                      char *err, size_t errlen);

/* The same for any option taking a template (--xml-file, --json-file): errors
 * name that option ("--xml-file: ..."). */
int gl_logfile_template_expand(const char *option, const char *tmpl, int pid, bool require_vars,
                               char *out, size_t outlen, char *err, size_t errlen);

/* Number the templates that use %n, 1, 2, ... in the order given (the
 * options' order: --log-file, --xml-file, --json-file, then the other file
 * options in options.def's order),
 * writing the number in place of each %n; %% and %q{VAR} stay as they are.
 * Each template lies in a buffer of size bytes.  Templates without %n are
 * left alone, so numbering twice changes nothing.  Returns 0, or -1 with one
 * line in err naming options[i] if template i would not fit (it is then left
 * as it was). */
int gl_logfile_number(char *const tmpls[], const char *const options[], size_t n, size_t size,
                      char *err, size_t errlen);

/* The same with %p as '*': a glob(3) pattern for the files every process
 * wrote (--merge=yes).  Unset %q{VAR}s expand to nothing. */
int gl_logfile_glob_pattern(const char *option, const char *tmpl, char *out, size_t outlen,
                            char *err, size_t errlen);

#endif
