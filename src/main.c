/* SPDX-License-Identifier: MIT */
/* gpuleak [options] [--] program [args]
 *
 * Everything the user can get wrong is checked here, before the program starts:
 * a bad option stops gpuleak with one line and exit status 1, and the program
 * never runs half-watched. */
#include <errno.h>
#include <glob.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/logfile.h"
#include "common/options.h"
#include "common/signals.h"
#include "launcher.h"
#include "read_report.h"

static void usage(FILE *f) { fprintf(f, "usage: gpuleak [options] [--] program [args]\n"); }

static void help(void)
{
    fflush(stdout);
    printf("usage: gpuleak [options] [--] program [args]\n"
           "       gpuleak [options] --read FILE...\n"
           "\n"
           "Runs program with gpuleak's runtime injected; reports the GPU memory it leaks.\n"
           "With --read, reports from event logs saved by --save instead (no program).\n"
           "\n"
           "options:\n");
    fflush(stdout);
    gl_options_write_help(1);
    printf("  %-36s %s\n", "--read=FILE, --read FILE...",
           "report from --save files; runs no program");
    printf("  %-36s %s\n", "--sysroot=DIR", "with --read: the binaries are under DIR");
    printf("  %-36s %s\n", "-h, --help", "show this help and exit");
    printf("  %-36s %s\n", "--version", "show the version and exit");
    printf("\n"
           "Options are also read from GPULEAK_OPTIONS when the runtime is injected by hand.\n"
           "Exit status: the program's own; 1 if gpuleak could not start it; 127 if the\n"
           "program could not be executed.\n"
           "See gpuleak(1) for the report format.\nReport bugs to <" PACKAGE_BUGREPORT ">.\n");
}

/* Processes that tracked GPU memory and wrote no report: what can be said of
 * them (the program's own death by a signal that cannot be caught, say). */
static void say_silent_processes(const struct gl_status *st, int ws)
{
    unsigned shown = st->silent < GL_STATUS_MAX_SILENT ? st->silent : GL_STATUS_MAX_SILENT;
    for (unsigned i = 0; i < shown; i++) {
        int pid = st->silent_pids[i];
        char buf[32];
        if (pid == gl_program_pid() && WIFSIGNALED(ws)) {
            int sig = WTERMSIG(ws);
            fprintf(stderr,
                    "==%d== gpuleak: the program was killed by signal %d (%s)%s; no report "
                    "could be written\n",
                    pid, sig, gl_signals_name(sig, buf, sizeof buf),
                    sig == SIGKILL ? ", which no program can catch" : "");
        } else {
            fprintf(stderr,
                    "==%d== gpuleak: process %d tracked GPU memory and ended without a "
                    "report (killed by a signal that cannot be caught, such as SIGKILL)\n",
                    pid, pid);
        }
    }
    if (st->silent > shown)
        fprintf(stderr, "gpuleak: %u more processes ended without a report\n", st->silent - shown);
}

/* --save's file is mapped: a new or regular file, nothing else (a terminal,
 * a pipe or /dev/stdout cannot be). */
static bool check_save(const char *tmpl, char *err, size_t errlen)
{
    if (!gl_check_output_file("--save", tmpl, err, errlen))
        return false;
    struct stat st;
    if (!strchr(tmpl, '%') && stat(tmpl, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "--save: '%.900s' is not a regular file (the event log is mapped)",
                 tmpl);
        return false;
    }
    return true;
}

/* --merge=yes: the processes' logs, where --save put them (a directory of
 * gpuleak's own when it was not given). */
static char merge_dir[PATH_MAX];
static time_t merge_since;

static bool merge_prepare(struct gl_options *opt)
{
    merge_since = time(NULL);
    if (opt->save[0]) {
        if (!strstr(opt->save, "%p")) {
            fprintf(stderr, "gpuleak: --merge=yes: --save=%s needs %%p (a file per process)\n",
                    opt->save);
            return false;
        }
        return true;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(merge_dir, sizeof merge_dir, "%s/gpuleak-merge.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(merge_dir)) {
        fprintf(stderr, "gpuleak: --merge=yes: cannot make a directory in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return false;
    }
    if (snprintf(opt->save, sizeof opt->save, "%.4000s/run.%%p.gl", merge_dir) >=
        (int)sizeof opt->save)
        return false;
    return true;
}

/* The files this run saved: the --save template with %p as a wildcard, the
 * files older than the run left out. */
static void merge_report(struct gl_options *opt)
{
    char pattern[PATH_MAX * 2], err[512];
    if (gl_logfile_glob_pattern("--save", opt->save, pattern, sizeof pattern, err, sizeof err) <
        0) {
        fprintf(stderr, "gpuleak: --merge=yes: %s\n", err); /* checked before the run: not met */
        return;
    }
    glob_t g = {0};
    char **files = NULL;
    int n = 0;
    if (glob(pattern, 0, NULL, &g) == 0 && (files = calloc(g.gl_pathc, sizeof *files))) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            struct stat st;
            if (stat(g.gl_pathv[i], &st) == 0 && st.st_mtime >= merge_since)
                files[n++] = g.gl_pathv[i];
        }
    }
    if (n > 1) {
        /* Text: each process wrote its own XML and JSON documents. */
        opt->merge = false;
        opt->xml = false;
        opt->json_file[0] = '\0';
        gl_read_report(opt, files, n, NULL);
    } else {
        fprintf(stderr, "gpuleak: --merge=yes: %d process%s saved a log: nothing to merge\n", n,
                n == 1 ? "" : "es");
    }
    if (merge_dir[0]) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        rmdir(merge_dir);
    }
    free(files);
    globfree(&g);
}

/* gpuleak --read: the outputs and suppressions checked as for a run, then the
 * reports of the saved logs. */
/* --read='run.*.gl': the shell leaves a pattern glued to an option alone;
 * a name that is no file and has wildcards is expanded here. */
static char **expand(char **files, int *n)
{
    glob_t g = {0};
    for (int i = 0; i < *n; i++) {
        int flags = i ? GLOB_APPEND | GLOB_NOCHECK : GLOB_NOCHECK;
        if (access(files[i], F_OK) == 0 || !strpbrk(files[i], "*?["))
            flags |= GLOB_NOESCAPE | GLOB_NOMAGIC;
        if (glob(files[i], flags, NULL, &g) != 0)
            return files;
    }
    *n = (int)g.gl_pathc;
    return g.gl_pathv; /* kept until gpuleak exits */
}

static int read_logs(struct gl_options *opt, char **files, int n, const char *sysroot)
{
    char err[1024], cwd[PATH_MAX];
    files = expand(files, &n);
    if (gl_options_check(opt, err, sizeof err) < 0 ||
        (opt->log_file[0] && !gl_check_output_file("--log-file", opt->log_file, err, sizeof err)) ||
        (opt->xml && !gl_check_output_file("--xml-file", opt->xml_file, err, sizeof err)) ||
        (opt->json_file[0] &&
         !gl_check_output_file("--json-file", opt->json_file, err, sizeof err)) ||
        (opt->flamegraph_file[0] &&
         !gl_check_output_file("--flamegraph-file", opt->flamegraph_file, err, sizeof err)) ||
        (opt->memory_viz[0] &&
         !gl_check_output_file("--memory-viz", opt->memory_viz, err, sizeof err))) {
        fprintf(stderr, "gpuleak: %s\n", err);
        return 1;
    }
    if (!gl_check_suppressions(opt, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (!getcwd(cwd, sizeof cwd) || gl_options_make_absolute(opt, cwd, err, sizeof err) < 0) {
        fprintf(stderr, "gpuleak: %s\n", err);
        return 1;
    }
    return gl_read_report(opt, files, n, sysroot);
}

int main(int argc, char **argv)
{
    struct gl_options opt;
    gl_options_defaults(&opt);
    /* As Valgrind does with VALGRIND_OPTS: options from the environment first,
     * the command line overrides them. */
    const char *env = getenv(GL_OPTIONS_ENV);
    if (env) {
        char err[512];
        if (gl_options_parse_env(&opt, env, err, sizeof err) < 0) {
            fprintf(stderr, "gpuleak: %s: %s\n", GL_OPTIONS_ENV, err);
            return 1;
        }
    }
    /* --read=FILE: no program; FILE and the arguments after the options are
     * saved logs (a shell glob gives --read=a.log b.log). */
    char **reads = calloc((size_t)argc, sizeof *reads);
    int nreads = 0;
    const char *sysroot = NULL;
    bool reading = false;
    if (!reads) {
        fprintf(stderr, "gpuleak: out of memory\n");
        return 1;
    }
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--read") == 0) { /* the files follow the options */
            reading = true;
            continue;
        }
        if (strncmp(a, "--read=", 7) == 0) {
            if (!a[7]) {
                fprintf(stderr, "gpuleak: --read: expects a file name\n");
                return 1;
            }
            reading = true;
            reads[nreads++] = argv[i] + 7;
            continue;
        }
        if (strncmp(a, "--sysroot=", 10) == 0) {
            struct stat st;
            if (stat(a + 10, &st) != 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "gpuleak: --sysroot: '%s' is not a directory\n", a + 10);
                return 1;
            }
            sysroot = a + 10;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help();
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            printf("gpuleak-%s\n", PACKAGE_VERSION);
            return 0;
        }
        char err[512];
        enum gl_arg_result r = gl_options_parse_arg(&opt, a, err, sizeof err);
        if (r == GL_ARG_ERROR) {
            fprintf(stderr, "gpuleak: %s\n", err);
            return 1;
        }
        if (r == GL_ARG_NOTE)
            fprintf(stderr, "gpuleak: %s\n", err);
        if (r == GL_ARG_NOT_OPTION)
            break;
    }
    if (reading) {
        while (i < argc)
            reads[nreads++] = argv[i++];
        if (!nreads) {
            fprintf(stderr, "gpuleak: --read: no file given\n");
            return 1;
        }
        return read_logs(&opt, reads, nreads, sysroot);
    }
    if (sysroot) {
        fprintf(stderr, "gpuleak: --sysroot is for --read: no program is run then\n");
        return 1;
    }
    if (i >= argc) {
        fprintf(stderr, "gpuleak: no program given; ");
        usage(stderr);
        return 1;
    }

    char err[1024];
    if (gl_options_check(&opt, err, sizeof err) < 0 ||
        (opt.log_file[0] && !gl_check_output_file("--log-file", opt.log_file, err, sizeof err)) ||
        (opt.xml && !gl_check_output_file("--xml-file", opt.xml_file, err, sizeof err)) ||
        (opt.json_file[0] &&
         !gl_check_output_file("--json-file", opt.json_file, err, sizeof err)) ||
        (opt.trace_file[0] &&
         !gl_check_output_file("--trace-file", opt.trace_file, err, sizeof err)) ||
        (opt.save[0] && !check_save(opt.save, err, sizeof err)) ||
        (opt.flamegraph_file[0] &&
         !gl_check_output_file("--flamegraph-file", opt.flamegraph_file, err, sizeof err)) ||
        (opt.memory_viz[0] &&
         !gl_check_output_file("--memory-viz", opt.memory_viz, err, sizeof err))) {
        fprintf(stderr, "gpuleak: %s\n", err);
        return 1;
    }
    /* --log-fd and --xml-fd name descriptors the program inherits from here. */
    if (!opt.log_file[0] && opt.log_fd != 2 && fcntl(opt.log_fd, F_GETFD) < 0) {
        fprintf(stderr, "gpuleak: --log-fd=%d: file descriptor %d is not open\n", opt.log_fd,
                opt.log_fd);
        return 1;
    }
    if (opt.xml && !opt.xml_file[0] && opt.xml_fd >= 0 && fcntl(opt.xml_fd, F_GETFD) < 0) {
        fprintf(stderr, "gpuleak: --xml-fd=%d: file descriptor %d is not open\n", opt.xml_fd,
                opt.xml_fd);
        return 1;
    }
    /* "FILE:LINE: error: ...", as compilers say it, so editors can jump there. */
    if (!gl_check_suppressions(&opt, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char program[PATH_MAX];
    if (!gl_resolve_program(argv[i], program, sizeof program, err, sizeof err)) {
        fprintf(stderr, "gpuleak: %s\n", err);
        return 1;
    }
    char runtime[PATH_MAX], tried[4 * PATH_MAX];
    if (!gl_locate_runtime(runtime, sizeof runtime, tried, sizeof tried)) {
        fprintf(stderr,
                "gpuleak: cannot find the runtime libgpuleak.so (looked for %s); reinstall "
                "gpuleak or set GPULEAK_RUNTIME\n",
                tried);
        return 1;
    }

    /* Relative file names are from here: the program may chdir before it
     * writes its report or reads its suppressions, and its children too. */
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "gpuleak: cannot read the current directory: %s\n", strerror(errno));
        return 1;
    }
    if (gl_options_make_absolute(&opt, cwd, err, sizeof err) < 0) {
        fprintf(stderr, "gpuleak: %s\n", err);
        return 1;
    }
    if (opt.merge && !merge_prepare(&opt))
        return 1;
    char status_file[PATH_MAX];
    bool have_status = gl_status_create(status_file, sizeof status_file);
    int ws = gl_run_program(program, argv + i, runtime, &opt, have_status ? status_file : NULL);
    struct gl_status st = {0};
    if (have_status) {
        gl_status_read(status_file, &st);
        unlink(status_file);
    }
    if (ws < 0)
        return 1;
    if (opt.log_file[0])
        gl_remove_empty_log(opt.log_file, gl_program_pid());
    say_silent_processes(&st, ws);
    if (opt.merge)
        merge_report(&opt);
    if (WIFSIGNALED(ws))
        gl_die_of_signal(WTERMSIG(ws));
    int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    /* As Valgrind: the error code replaces the program's own only when the program
     * exited normally and some report counted unsuppressed errors. */
    if (opt.error_exitcode > 0 && st.errors > 0)
        return opt.error_exitcode;
    return code;
}
