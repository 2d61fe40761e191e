#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/logfile.h"
#include "common/out.h"

struct gl_runtime gl_rt;

/* stderr as it was when the program started: a program that later closes or
 * redirects fd 2 must not swallow the report. */
static int saved_stderr = 2;
static bool log_opened;

void gl_rt_save_stderr(void)
{
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 64);
    if (fd >= 0)
        saved_stderr = fd;
}

int gl_rt_open_log(bool *must_close)
{
    *must_close = false;
    if (!gl_rt.opt.log_file[0])
        return saved_stderr;
    char path[GL_PATH_MAX], err[512];
    if (gl_logfile_expand(gl_rt.opt.log_file, (int)getpid(), false, path, sizeof path, err,
                          sizeof err) < 0) {
        dprintf(saved_stderr, "==%d== gpuleak: %s; writing to stderr\n", (int)getpid(), err);
        return saved_stderr;
    }
    /* The first open of the process truncates; later ones (a note after a report,
     * say) append. */
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (log_opened ? O_APPEND : O_TRUNC);
    int fd = open(path, flags, 0666);
    if (fd < 0) {
        dprintf(saved_stderr, "==%d== gpuleak: cannot open log file '%s': %s; writing to stderr\n",
                (int)getpid(), path, strerror(errno));
        return saved_stderr;
    }
    log_opened = true;
    *must_close = true;
    return fd;
}

void gl_rt_message(const char *fmt, ...)
{
    bool must_close;
    int fd = gl_rt_open_log(&must_close);
    struct gl_out o;
    gl_out_init(&o, fd, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    gl_out_vline(&o, fmt, ap);
    va_end(ap);
    gl_out_flush(&o);
    if (must_close)
        close(fd);
}

void gl_rt_read_command(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, gl_rt.command, sizeof gl_rt.command - 1);
    close(fd);
    if (n <= 0)
        return;
    if ((size_t)n == sizeof gl_rt.command - 1)
        memcpy(gl_rt.command + n - 3, "...", 3);
    /* Arguments are NUL-separated; the last one ends with NUL too. */
    while (n > 0 && gl_rt.command[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (gl_rt.command[i] == '\0')
            gl_rt.command[i] = ' ';
    gl_rt.command[n] = '\0';
}
