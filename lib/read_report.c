/* SPDX-License-Identifier: MIT */
#include "read_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check/leak_run.h"
#include "components.h"
#include "exit_report.h"
#include "heap/heap.h"
#include "read_merge.h"
#include "observe/contexts.h"
#include "report/error_sink.h"
#include "report/report_flamegraph.h"
#include "report/report_text.h"
#include "runtime.h"
#include "save/log_reader.h"
#include "track/history.h"
#include "track/oom_snapshot.h"
#include "symbol/symbolize.h"

static void note(const char *line) { gl_runtime_message("gpuleak: %s", line); }

/* How the process ended, in a line before its report. */
static void say_ending(const char *path, const struct gl_log_summary *s)
{
    char started[64] = "";
    time_t t = (time_t)(s->header->start_unix_ns / 1000000000u);
    struct tm tm;
    if (gmtime_r(&t, &tm)) /* UTC: the same line wherever the log is read */
        strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S UTC", &tm);
    char staged[96] = "";
    if (s->staged) /* the process died before its helper thread compacted them */
        snprintf(staged, sizeof staged, " (%llu of them read from its staging ring)",
                 (unsigned long long)s->staged);
    gl_runtime_message("gpuleak: read %s: process %llu (parent %llu) on %s, started %s; %llu "
                       "events%s",
                       path, (unsigned long long)s->header->pid,
                       (unsigned long long)s->header->ppid, s->host, started,
                       (unsigned long long)s->events, staged);
    if (s->limited)
        gl_runtime_message("gpuleak: %s reached its --save-limit: events after it were not "
                           "saved, and the blocks below are those live then",
                           path);
    if (s->marks)
        gl_runtime_message("gpuleak: %s: %llu checkpoints; the last, #%llu, \"%s\"", path,
                           (unsigned long long)s->marks, (unsigned long long)s->last_mark_number,
                           s->last_mark);
    if (!s->ended)
        gl_runtime_message(
            "gpuleak: %s: the process never reached its exit check (killed by a signal no "
            "program can catch, such as SIGKILL or the OOM killer's, or still running): its "
            "blocks live at its last saved event are shown as live at death%s",
            path, s->unread_bytes ? "; the records threads were writing as it died are lost" : "");
}

/* The pipeline made ready for f's process, its events replayed. */
static void replay(struct gl_log_file *f, const char *path, struct gl_log_summary *s)
{
    gl_log_reader_summary(f, s);
    snprintf(gl_runtime.command, sizeof gl_runtime.command, "%s", s->command ? s->command : "");
    gl_runtime.pid = getpid();
    gl_heap_set_active(false); /* no memory image: reachability comes from the verdicts */
    gl_runtime_configure_tracking(gl_components);
    gl_history_use_event_times(
        (int64_t)s->header->start_unix_ns); /* the log's times count from it */
    gl_dispatch_set_placement(&gl_contexts_placement);
    gl_dispatch_reset();
    gl_error_sink_install();
    /* The devices were another machine's: their totals are not this one's. */
    gl_oom_snapshot_use_device_totals(false);
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    say_ending(path, s);
    /* A process that died had no check: its blocks are live at death, and
     * the line above says why there is no reachability. */
    static struct gl_leak_run_saved saved;
    saved = (struct gl_leak_run_saved){
        .classify = gl_log_reader_classify,
        .arg = f,
        .main_tid = (int)s->header->pid,
        .reach_available = s->ended ? s->reach_available : true,
        .reach_why_not = s->reach_why_not,
    };
    gl_leak_run_lock();
    gl_leak_run_set_driver(gl_log_reader_driver(f));
    gl_leak_run_set_saved(&saved);
    gl_leak_run_unlock();
    gl_log_reader_replay(f, note);
}

/* One process: its report, as it would have written it. */
static void report_one(struct gl_log_file *f, const char *path)
{
    struct gl_log_summary s;
    replay(f, path, &s);
    if (s.ended && s.how != GL_LOG_END_EXIT) {
        struct gl_termination how = {0};
        if (s.how == GL_LOG_END_SIGNAL)
            how.signal = s.status;
        else {
            how.quick_exit = true;
            how.exit_status = s.status;
        }
        gl_exit_report_ending(&how);
    } else {
        gl_exit_report();
    }
}

/* Several: each checked on its own, then one merged report. */
static uint64_t report_merged(struct gl_log_file **logs, char *const *files, int n)
{
    struct gl_read_merge *m = gl_read_merge_new();
    bool ok = m != NULL;
    /* --flamegraph-file: each process's stacks named with its own modules. */
    struct gl_report_flamegraph *fg =
        gl_runtime.opt.flamegraph_file[0] ? gl_report_flamegraph_new() : NULL;
    bool drawn = false;
    for (int i = 0; i < n && ok; i++) {
        struct gl_log_summary s;
        replay(logs[i], files[i], &s);
        struct gl_leak_run run;
        gl_leak_run_lock();
        if (gl_leak_run(&run, 0, NULL) == 0) {
            struct gl_report_input in;
            gl_leak_run_input(&run, &in);
            ok = gl_read_merge_add(m, &s, &run, &in);
            if (fg)
                drawn |= gl_exit_report_flamegraph_add(fg, &in);
            gl_leak_run_free(&run);
        }
        gl_leak_run_unlock();
        atomic_store(&gl_runtime.state, GL_RT_REPORTED);
    }
    uint64_t errors = 0;
    bool must_close;
    int fd = gl_runtime_open_log(&must_close);
    struct gl_out o;
    gl_out_init(&o, fd, (int)getpid());
    if (ok)
        errors = gl_read_merge_print(m, &o, &gl_runtime.opt);
    else
        gl_out_line(&o, "gpuleak: --read: out of memory while merging the reports");
    gl_out_flush(&o);
    if (must_close)
        close(fd);
    gl_read_merge_free(m);
    if (fg && ok)
        gl_exit_report_flamegraph_write(fg, drawn);
    gl_report_flamegraph_free(fg);
    return errors;
}

int gl_read_report(const struct gl_options *opt, char *const *files, int nfiles,
                   const char *sysroot)
{
    struct gl_log_file **logs = calloc((size_t)nfiles, sizeof *logs);
    if (!logs) {
        fprintf(stderr, "gpuleak: out of memory\n");
        return 1;
    }
    if (nfiles > 1 && (opt->xml || opt->json_file[0] || opt->memory_viz[0])) {
        fprintf(stderr,
                "gpuleak: --read: %s: a merged report of several files is text only; read "
                "one file for a document\n",
                opt->xml            ? "--xml"
                : opt->json_file[0] ? "--json-file"
                                    : "--memory-viz");
        free(logs);
        return 1;
    }
    /* Every file checked before any report: a damaged one stops it all. */
    char err[1024];
    int status = 0;
    for (int i = 0; i < nfiles && !status; i++)
        if (!(logs[i] = gl_log_reader_open(files[i], err, sizeof err))) {
            fprintf(stderr, "gpuleak: --read: %s\n", err);
            status = 1;
        } else if (sysroot) {
            gl_log_reader_set_sysroot(logs[i], sysroot);
        }
    if (!status) {
        gl_runtime.opt = *opt;
        gl_runtime.opt.save[0] = '\0'; /* reading saves nothing (--merge passes its --save) */
        gl_runtime.pid = getpid();
        gl_runtime.is_main_process = true;
        gl_runtime_save_stderr();
        gl_runtime_prepare_log();
        uint64_t errors;
        if (nfiles == 1) {
            report_one(logs[0], files[0]);
            errors = gl_exit_report_errors();
        } else {
            errors = report_merged(logs, files, nfiles);
        }
        if (opt->error_exitcode > 0 && errors > 0)
            status = opt->error_exitcode;
    }
    for (int i = 0; i < nfiles; i++)
        gl_log_reader_close(logs[i]);
    free(logs);
    return status;
}
