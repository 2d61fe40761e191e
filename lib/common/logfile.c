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

int gl_logfile_template_expand(const char *option, const char *tmpl, int pid, bool require_vars,
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
            char num[24];
            int n = snprintf(num, sizeof num, "%d", pid);
            ok = append(out, outlen, &pos, num, (size_t)n);
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
                         "%s: unknown escape '%%%c' in '%s' (expected %%p, %%q{VAR} or %%%%)",
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
