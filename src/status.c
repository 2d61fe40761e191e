/* The status file: how the runtime in the program's processes tells the
 * launcher what it found (common/env.h, GL_STATUS_ENV).  Each process appends
 * lines "pid=N tracking" and "pid=N report errors=E". */
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

void gl_status_read(const char *path, struct gl_status *st)
{
    memset(st, 0, sizeof *st);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        int pid;
        unsigned long long errors;
        if (sscanf(line, "pid=%d report errors=%llu", &pid, &errors) == 2) {
            st->reports++;
            st->errors += errors;
        } else if (sscanf(line, "pid=%d tracking", &pid) == 1) {
            st->tracked++;
        }
    }
    fclose(f);
}
