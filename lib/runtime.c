/* SPDX-License-Identifier: MIT */
#include "runtime.h"

#include "check/growth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/warm.h"
#include "base/ticker.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/file.h"
#include "common/logfile.h"
#include "common/out.h"
#include "event/dispatch.h"
#include "observe/call.h"
#include "stack/stack_capture.h"
#include "track/live_ranges.h"
#include "track/oom_snapshot.h"
#include "track/quarantine.h"
#include "track/stats.h"
#include "report/report_flamegraph.h"
#include "save/log_writer.h"
#include "track/history.h"
#include "track/trace_file.h"
#include "track/tracker.h"

struct gl_runtime gl_runtime;

/* The state word is the dispatcher's gate (gl_runtime_configure_tracking). */
_Static_assert(GL_RT_TRACKING == GL_DISPATCH_OPEN, "events flow while tracking");

/* stderr as it was when the program started: a program that later closes or
 * redirects fd 2 must not swallow the report. */
static int saved_stderr = 2;
static bool log_opened;

/* The files the program's stdout and stderr are at start: a report file that
 * is one of them (--log-file=/dev/stdout, the shell's "> ci.log") holds the
 * program's own output, and is appended to, never truncated. */
static struct {
    bool known;
    dev_t dev;
    ino_t ino;
} std_files[2];

void gl_runtime_save_stderr(void)
{
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 64);
    if (fd >= 0)
        saved_stderr = fd;
    for (int i = 0; i < 2; i++) {
        struct stat st;
        std_files[i].known = fstat(i + 1, &st) == 0;
        std_files[i].dev = st.st_dev;
        std_files[i].ino = st.st_ino;
    }
}

/* How a report file is opened.  A terminal, a device, a FIFO or a socket is
 * never truncated (O_TRUNC on /dev/stdout reaches the file the shell
 * redirected it to), nor the program's own stdout or stderr file (appended
 * to: its output stays, the report comes after it); a file of its own is
 * truncated when fresh says so. */
static int output_flags(const char *path, bool fresh)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return O_WRONLY | O_CLOEXEC;
        for (int i = 0; i < 2; i++)
            if (std_files[i].known && std_files[i].dev == st.st_dev &&
                std_files[i].ino == st.st_ino)
                return O_WRONLY | O_APPEND | O_CLOEXEC;
    }
    return O_WRONLY | O_CREAT | O_CLOEXEC | (fresh ? O_TRUNC : O_APPEND);
}

/* The log of the program the user ran, opened at start and kept (out of the
 * program's way, above fd 64): a program that closes its stdout before it
 * exits (coreutils do) would leave /dev/stdout naming nothing at exit. */
static int log_fd = -1;
static pid_t log_fd_pid;

static int xml_fd = -1; /* --xml-fd's descriptor, kept likewise */

int gl_runtime_xml_fd(void) { return xml_fd; }

void gl_runtime_prepare_log(void)
{
    /* --log-fd and --xml-fd: the program's descriptors, kept as they are now
     * (the program may close or reuse the numbers before it exits). */
    if (gl_runtime.opt.xml && !gl_runtime.opt.xml_file[0] && gl_runtime.opt.xml_fd >= 0)
        xml_fd = fcntl(gl_runtime.opt.xml_fd, F_DUPFD_CLOEXEC, 64);
    if (!gl_runtime.opt.log_file[0] && gl_runtime.opt.log_fd != 2) {
        log_fd = fcntl(gl_runtime.opt.log_fd, F_DUPFD_CLOEXEC, 64);
        log_fd_pid = 0; /* a fork child writes there too */
        return;
    }
    if (!gl_runtime.opt.log_file[0] || !gl_runtime.is_main_process)
        return;
    char path[GL_PATH_MAX], err[512];
    if (gl_logfile_expand(gl_runtime.opt.log_file, (int)getpid(), false, path, sizeof path, err,
                          sizeof err) < 0)
        return; /* said at exit, where the report is written */
    int fd = open(path, output_flags(path, true), 0666);
    if (fd < 0)
        return; /* said at exit, when opening it again fails */
    log_fd = fcntl(fd, F_DUPFD_CLOEXEC, 64);
    close(fd);
    log_fd_pid = getpid();
    log_opened = true;
}

int gl_runtime_open_log(bool *must_close)
{
    *must_close = false;
    if (!gl_runtime.opt.log_file[0])
        return log_fd >= 0 ? log_fd : saved_stderr; /* --log-fd, or stderr */
    if (log_fd >= 0 && getpid() == log_fd_pid)
        return log_fd;
    char path[GL_PATH_MAX], err[512];
    if (gl_logfile_expand(gl_runtime.opt.log_file, (int)getpid(), false, path, sizeof path, err,
                          sizeof err) < 0) {
        dprintf(saved_stderr, "==%d== gpuleak: %s; writing to stderr\n", (int)getpid(), err);
        return saved_stderr;
    }
    /* Decided at start for the program the user ran (gl_runtime_prepare_log);
     * in another process the first open truncates, later ones (a note after
     * a report, say) append. */
    int fd = open(path, output_flags(path, !log_opened), 0666);
    if (fd < 0) {
        dprintf(saved_stderr, "==%d== gpuleak: cannot open log file '%s': %s; writing to stderr\n",
                (int)getpid(), path, strerror(errno));
        return saved_stderr;
    }
    log_opened = true;
    *must_close = true;
    return fd;
}

int gl_runtime_open_output(const char *option, const char *tmpl)
{
    char path[GL_PATH_MAX], err[512];
    if (gl_logfile_expand(tmpl, (int)getpid(), false, path, sizeof path, err, sizeof err) < 0) {
        gl_runtime_message("gpuleak: %s", err);
        return -1;
    }
    int fd = open(path, output_flags(path, true), 0666);
    if (fd < 0)
        gl_runtime_message("gpuleak: %s: cannot write '%s': %s", option, path, strerror(errno));
    return fd;
}

bool gl_runtime_status_seen(const char *word)
{
    const char *file = getenv(GL_STATUS_ENV);
    if (!file || !*file)
        return false;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[4096];
    bool seen = false;
    size_t keep = 0;
    ssize_t n;
    /* Lines are short; a word cut by a read boundary is carried to the next. */
    while (!seen && (n = read(fd, buf + keep, sizeof buf - 1 - keep)) > 0) {
        size_t len = keep + (size_t)n;
        buf[len] = '\0';
        seen = strstr(buf, word) != NULL;
        keep = len < 64 ? len : 64;
        memmove(buf, buf + len - keep, keep);
    }
    close(fd);
    return seen;
}

void gl_runtime_status(const char *fmt, ...)
{
    const char *file = getenv(GL_STATUS_ENV);
    if (!file || !*file)
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "pid=%d ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || m < 0)
        return;
    size_t len = strlen(line);
    line[len++] = '\n';
    /* O_APPEND: every process of the program appends one line at a time. */
    int fd = open(file, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
        gl_out_write_all(fd, line, len);
        close(fd);
    }
}

/* The command line, arguments NUL-terminated as the kernel keeps them. */
static const char cmdline[] = "/proc/self/cmdline";

int gl_runtime_program_argv(char **bufp, char ***argsp)
{
    char *buf;
    size_t len;
    if (gl_file_read(cmdline, 16u << 20, &buf, &len) < 0)
        return -1;
    int n = 0; /* arguments end with NUL each */
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\0')
            n++;
    char **args = malloc(((size_t)n + 2) * sizeof *args);
    if (!args) {
        free(buf);
        return -1;
    }
    int k = 0;
    for (size_t i = 0; i < len && k < n; i += strlen(buf + i) + 1)
        args[k++] = buf + i;
    args[k] = NULL;
    *bufp = buf;
    *argsp = args;
    return k;
}

double gl_runtime_elapsed(void) { return gl_clock_s() - gl_runtime.start_time; }

void gl_runtime_mark_start(void) { gl_runtime.start_time = gl_clock_s(); }

void gl_runtime_message(const char *fmt, ...)
{
    bool must_close;
    int fd = gl_runtime_open_log(&must_close);
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

void gl_runtime_read_command(void)
{
    /* Called from the constructor: no allocation. */
    size_t max = sizeof gl_runtime.command - 1;
    long n = gl_file_read_into(cmdline, gl_runtime.command, max);
    if (n <= 0)
        return;
    if ((size_t)n == max)
        memcpy(gl_runtime.command + n - 3, "...", 3);
    while (n > 0 && gl_runtime.command[n - 1] == '\0')
        n--;
    for (long i = 0; i < n; i++)
        if (gl_runtime.command[i] == '\0')
            gl_runtime.command[i] = ' ';
    gl_runtime.command[n] = '\0';
}

/* --save: the event log, opened read-write (it is mapped) and emptied. */
static void open_save(const struct gl_options *o)
{
    char path[GL_PATH_MAX], err[512];
    if (gl_logfile_template_expand("--save", o->save, (int)getpid(), false, path, sizeof path, err,
                                   sizeof err) < 0) {
        gl_runtime_message("gpuleak: %s; events are not saved", err);
        return;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        gl_runtime_message("gpuleak: --save: cannot write '%s': %s; events are not saved", path,
                           strerror(errno));
        return;
    }
    const char *opts = getenv(GL_OPTIONS_ENV);
    struct gl_log_process proc = {
        .version = PACKAGE_VERSION, .command = gl_runtime.command, .options = opts ? opts : ""};
    if (!gl_log_writer_open(fd, (uint64_t)o->save_limit << 20, &proc, err, sizeof err)) {
        gl_runtime_message("gpuleak: --save: '%s': %s; events are not saved", path, err);
        close(fd);
        return;
    }
    gl_log_writer_save_error_stacks();
}

void gl_runtime_configure_tracking(const struct gl_component *const *registry)
{
    const struct gl_options *o = &gl_runtime.opt;
    gl_tracker_init();
    gl_quarantine_configure((size_t)o->quarantine_blocks, o->check_api_ranges);
    gl_live_ranges_configure(o->check_api_ranges);
    gl_call_set_free_stacks(o->keep_stacktraces == GL_KEEP_ALLOC_AND_FREE);
    /* Growth detection compares sites' live bytes: counted per allocation. */
    /* Per site too for --flamegraph-cost=peak|allocated: each site's figure is
     * its weight.  The OOM picture is taken only when asked for. */
    bool flame = o->flamegraph_file[0] != '\0';
    gl_stats_configure(o->stats || o->growth_checkpoints > 0 ||
                       (flame && (o->flamegraph_cost == GL_FLAMEGRAPH_PEAK ||
                                  o->flamegraph_cost == GL_FLAMEGRAPH_ALLOCATED)));
    gl_oom_snapshot_configure(flame && o->flamegraph_cost == GL_FLAMEGRAPH_OOM);
    gl_growth_configure((unsigned)o->growth_checkpoints);
    gl_stack_capture_init((unsigned)o->num_callers);
    gl_warm_init();
    if (o->trace_file[0]) {
        int fd = gl_runtime_open_output("--trace-file", o->trace_file);
        if (fd >= 0)
            gl_trace_file_start(fd, (unsigned)o->trace_interval, (uint64_t)o->trace_limit << 20);
    }
    if (o->save[0])
        open_save(o);
    if (!gl_history_configure(o->memory_viz[0] ? (size_t)o->memory_viz_entries : 0))
        gl_runtime_message("gpuleak: --memory-viz: no memory for %d entries; no history is kept",
                           o->memory_viz_entries);
    /* Events' times for both, in one load (else each reads the clock). */
    if (gl_log_writer_active() || gl_history_on())
        gl_ticker_start();
    /* Events flow while the runtime tracks; every consumer the options want
     * is attached now, before the first. */
    gl_dispatch_set_registry(registry);
    gl_dispatch_set_gate(&gl_runtime.state);
    gl_dispatch_start(NULL);
}
