/* --log-file templates, as Valgrind spells them:
 *   %p        the process id (one report per process: children get their own file)
 *   %q{VAR}   the value of environment variable VAR
 *   %%        a literal '%'
 * Any other '%' sequence is an error, reported before the program runs. */
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

#endif
