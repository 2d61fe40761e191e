/* SPDX-License-Identifier: MIT */
#include "common/logfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool append(char *out, size_t outlen, size_t *pos, const char *s, size_t n)
{
    if (*pos + n >= outlen)
        return false;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
    return true;
}

int gl_logfile_expand(const char *tmpl, int pid, bool require_vars, char *out, size_t outlen,
                      char *err, size_t errlen)
{
    return gl_logfile_template_expand("--log-file", tmpl, pid, require_vars, out, outlen, err,
                                      errlen);
}

/* The expansion, with the text %p stands for. */
static int expand(const char *option, const char *tmpl, const char *pid, bool require_vars,
                  char *out, size_t outlen, char *err, size_t errlen);

int gl_logfile_template_expand(const char *option, const char *tmpl, int pid, bool require_vars,
                               char *out, size_t outlen, char *err, size_t errlen)
{
    char num[24];
    snprintf(num, sizeof num, "%d", pid);
    return expand(option, tmpl, num, require_vars, out, outlen, err, errlen);
}

int gl_logfile_glob_pattern(const char *option, const char *tmpl, char *out, size_t outlen,
                            char *err, size_t errlen)
{
    return expand(option, tmpl, "*", false, out, outlen, err, errlen);
}

static int expand(const char *option, const char *tmpl, const char *pid, bool require_vars,
                  char *out, size_t outlen, char *err, size_t errlen)
{
    size_t pos = 0;
    if (outlen == 0)
        return -1;
    out[0] = '\0';
    for (const char *p = tmpl; *p; p++) {
        bool ok;
        if (*p != '%') {
            ok = append(out, outlen, &pos, p, 1);
        } else if (p[1] == '%') {
            ok = append(out, outlen, &pos, "%", 1);
            p++;
        } else if (p[1] == 'p') {
            ok = append(out, outlen, &pos, pid, strlen(pid));
            p++;
        } else if (p[1] == 'n') {
            /* Not numbered yet (gl_logfile_number): the first file. */
            ok = append(out, outlen, &pos, "1", 1);
            p++;
        } else if (p[1] == 'q') {
            if (p[2] != '{') {
                snprintf(err, errlen, "%s: '%%q' must be followed by {VAR}, in '%s'", option, tmpl);
                return -1;
            }
            const char *name = p + 3;
            const char *close = strchr(name, '}');
            if (!close) {
                snprintf(err, errlen, "%s: unterminated '%%q{' in '%s'", option, tmpl);
                return -1;
            }
            char var[256];
            size_t vlen = (size_t)(close - name);
            if (vlen == 0 || vlen >= sizeof var) {
                snprintf(err, errlen, "%s: bad variable name in '%%q{}' in '%s'", option, tmpl);
                return -1;
            }
            memcpy(var, name, vlen);
            var[vlen] = '\0';
            const char *val = getenv(var);
            if (!val && require_vars) {
                snprintf(err, errlen, "%s: environment variable %s (from %%q{%s}) is not set",
                         option, var, var);
                return -1;
            }
            ok = append(out, outlen, &pos, val ? val : "", val ? strlen(val) : 0);
            p = close;
        } else {
            if (p[1])
                snprintf(err, errlen,
                         "%s: unknown escape '%%%c' in '%s' (expected %%p, %%n, %%q{VAR} or "
                         "%%%%)",
                         option, p[1], tmpl);
            else
                snprintf(err, errlen, "%s: '%s' ends with a lone '%%' (write %%%% for one)", option,
                         tmpl);
            return -1;
        }
        if (!ok) {
            snprintf(err, errlen, "%s: expanded file name is too long: '%s'", option, tmpl);
            return -1;
        }
    }
    return 0;
}

/* Whether tmpl has a %n of its own (not the "n" of a "%%n", nor one inside a
 * %q{...}, which the expansion reads as part of a variable's name). */
static bool uses_n(const char *tmpl)
{
    for (const char *p = tmpl; *p; p++) {
        if (*p != '%' || !p[1])
            continue;
        if (p[1] == 'n')
            return true;
        if (p[1] == 'q' && p[2] == '{') {
            const char *close = strchr(p + 3, '}');
            if (!close)
                return false;
            p = close;
        } else {
            p++; /* %%, %p, or an error the expansion reports */
        }
    }
    return false;
}

/* tmpl with each %n replaced by number, into out; false if it does not fit. */
static bool put_number(const char *tmpl, unsigned number, char *out, size_t outlen)
{
    char num[16];
    int nlen = snprintf(num, sizeof num, "%u", number);
    size_t pos = 0;
    out[0] = '\0';
    for (const char *p = tmpl; *p; p++) {
        const char *from = p;
        size_t len = 1;
        if (*p == '%' && p[1] == 'n') {
            from = num;
            len = (size_t)nlen;
            p++;
        } else if (*p == '%' && p[1] == 'q' && p[2] == '{' && strchr(p + 3, '}')) {
            len = (size_t)(strchr(p + 3, '}') - p) + 1;
            p += len - 1;
        } else if (*p == '%' && p[1]) {
            len = 2;
            p++;
        }
        if (!append(out, outlen, &pos, from, len))
            return false;
    }
    return true;
}

int gl_logfile_number(char *const tmpls[], const char *const options[], size_t n, size_t size,
                      char *err, size_t errlen)
{
    unsigned next = 1;
    for (size_t i = 0; i < n; i++) {
        if (!uses_n(tmpls[i]))
            continue;
        char numbered[4096];
        size_t room = size < sizeof numbered ? size : sizeof numbered;
        if (!put_number(tmpls[i], next, numbered, room)) {
            snprintf(err, errlen, "%s: file name is too long once %%n is numbered: '%s'",
                     options[i], tmpls[i]);
            return -1;
        }
        memcpy(tmpls[i], numbered, strlen(numbered) + 1);
        next++;
    }
    return 0;
}
