/* SPDX-License-Identifier: MIT */
/* The status file: how the runtime in the program's processes tells the
 * launcher what it found (common/env.h, GL_STATUS_ENV).  Each process appends
 * lines "pid=N tracking", then "pid=N report errors=E", or "pid=N silent" when
 * --child-silent-after-fork keeps it from reporting.  A program exec'd under
 * --trace-children=no that loads the runtime anyway writes "pid=N untraced":
 * the image it replaced (same pid) owes no report.  A process that execs a
 * program which tracks again writes "tracking" twice under one pid: one
 * process, one report owed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher.h"

bool gl_status_create(char *path, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, len, "%s/gpuleak-status-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* The latest entry for pid (the list is searched from its end), or n if none. */
static size_t find_pid(const int *pids, size_t n, int pid)
{
    for (size_t i = n; i-- > 0;)
        if (pids[i] == pid)
            return i;
    return n;
}

void gl_status_read(const char *path, struct gl_status *st)
{
    memset(st, 0, sizeof *st);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    /* pids that tracked, and whether each reported (a few hundred processes
     * at most: a list searched from the end is enough). */
    int *pids = NULL;
    bool *reported = NULL;
    size_t n = 0, cap = 0;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        int pid;
        unsigned long long errors;
        bool silent = false;
        if (sscanf(line, "pid=%d report errors=%llu", &pid, &errors) == 2 ||
            (silent = (strstr(line, " silent") || strstr(line, " untraced")) &&
                      sscanf(line, "pid=%d", &pid) == 1)) {
            if (!silent) {
                st->reports++;
                st->errors += errors;
            }
            size_t i = find_pid(pids, n, pid);
            if (i < n)
                reported[i] = true;
        } else if (sscanf(line, "pid=%d tracking", &pid) == 1) {
            size_t i = find_pid(pids, n, pid);
            if (i < n) { /* exec'd: the new image owes the report */
                reported[i] = false;
                continue;
            }
            st->tracked++;
            if (n == cap) {
                size_t c = cap ? 2 * cap : 64;
                int *p = realloc(pids, c * sizeof *p);
                bool *r = p ? realloc(reported, c * sizeof *r) : NULL;
                if (!r) {
                    free(p ? p : pids);
                    fclose(f);
                    return;
                }
                pids = p;
                reported = r;
                cap = c;
            }
            pids[n] = pid;
            reported[n++] = false;
        }
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (!reported[i] && st->silent++ < GL_STATUS_MAX_SILENT)
            st->silent_pids[st->silent - 1] = pids[i];
    free(pids);
    free(reported);
}
