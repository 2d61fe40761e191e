/* SPDX-License-Identifier: MIT */
/* Suppression files are read before the program runs: a malformed one stops
 * gpuleak with "FILE:LINE: error: ..." instead of a report that silently
 * ignores it. */
#include <limits.h>
#include <stdio.h>

#include "common/paths.h"
#include "common/suppressions.h"
#include "launcher.h"

struct defaults {
    struct gl_options *opt;
    char *err;
    size_t errlen;
    bool ok;
};

static void add_default(const char *path, void *arg)
{
    struct defaults *d = arg;
    if (!d->ok)
        return;
    struct gl_supp_set s;
    gl_suppressions_set_init(&s);
    if (gl_suppressions_load_file(&s, path, d->err, d->errlen) < 0)
        d->ok = false;
    else if (!gl_options_add_suppression(d->opt, path)) {
        snprintf(d->err, d->errlen, "--suppressions: too many files");
        d->ok = false;
    }
    gl_suppressions_set_free(&s);
}

bool gl_check_suppressions(struct gl_options *opt, char *err, size_t errlen)
{
    for (int i = 0; gl_options_suppression(opt, i); i++) {
        struct gl_supp_set s;
        gl_suppressions_set_init(&s);
        int rc = gl_suppressions_load_file(&s, gl_options_suppression(opt, i), err, errlen);
        gl_suppressions_set_free(&s);
        if (rc < 0)
            return false;
    }
    if (!opt->default_suppressions)
        return true;
    char dir[PATH_MAX];
    struct defaults d = {opt, err, errlen, true};
    if (gl_exe_dir(dir, sizeof dir))
        gl_paths_default_suppressions(dir, false, add_default, &d);
    opt->default_suppressions = false; /* listed now: the runtime need not look */
    return d.ok;
}
