/* SPDX-License-Identifier: MIT */
#include "exit_report.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_history.h"
#include "check/owners.h"
#include "common/clock.h"
#include "common/env.h"
#include "report/report_flamegraph.h"
#include "observe/alternate.h"
#include "report/report_memviz.h"
#include "report/report_frames.h"
#include "report/report_json.h"
#include "track/oom_snapshot.h"
#include "track/trace_file.h"
#include "report/report_xml.h"
#include "check/leak_run.h"
#include "report/report_text.h"
#include "runtime.h"
#include "save/log_answers.h"
#include "save/log_writer.h"
#include "symbol/symbolize.h"
#include "base/prof.h"
#include "base/tool.h"
#include "python/py_code.h"
#include "python/py_frames.h"
#include "python/py_watch.h"
#include "stack/stack_capture.h"
#include "stack/stack_depot.h"
#include "stack/mixed_memo.h"
#include "stack/stack_memo.h"
#include "track/history.h"
#include "track/stats.h"
#include "track/quarantine.h"
#include "track/tracker.h"
#include "stack/unwind.h"

typedef void (*document_writer)(struct gl_out *, const struct gl_report_input *);

/* One document to fd, which stays open. */
static void write_to(int fd, const char *option, document_writer writer,
                     const struct gl_report_input *in)
{
    struct gl_out o;
    gl_out_init(&o, fd, in->pid);
    writer(&o, in);
    if (!gl_out_flush(&o))
        gl_runtime_message("gpuleak: %s: write failed", option);
}

/* --xml-file and --json-file. */
static void write_document(const char *option, const char *tmpl, document_writer writer,
                           const struct gl_report_input *in)
{
    int fd = gl_runtime_open_output(option, tmpl);
    if (fd < 0)
        return;
    write_to(fd, option, writer, in);
    close(fd);
}

/* GPULEAK_BENCH=profile: where the hot path's time went. */
static void profile_report(struct gl_out *o)
{
    gl_out_line(o, "%s", "");
    gl_out_line(o, "profile (GPULEAK_BENCH=profile): average per call, timer cost included");
    for (int p = 0; p < GL_PROF_NPHASES; p++)
        if (gl_prof_calls((enum gl_prof_phase)p))
            gl_out_line(o, "  %-22s %10llu calls %9.1f ns",
                        gl_prof_phase_name((enum gl_prof_phase)p),
                        (unsigned long long)gl_prof_calls((enum gl_prof_phase)p),
                        gl_prof_avg_ns((enum gl_prof_phase)p));
    const uintptr_t *ips;
    const uint64_t *ns;
    uint64_t bt_ns, total = 0;
    int n = gl_prof_walk(&ips, &ns, &bt_ns);
    if (n <= 0)
        return;
    for (int i = 0; i < n; i++)
        total += ns[i];
    struct gl_symbolizer *sym = gl_symbolize_open();
    gl_out_line(o, "  one stack: unw_backtrace %llu ns; unw_step walk of %d frames %llu ns:",
                (unsigned long long)bt_ns, n, (unsigned long long)total);
    for (int i = 0; i < n; i++) {
        struct gl_frame f = {.ip = ips[i]};
        if (sym)
            gl_symbolize(sym, ips[i], true, &f);
        gl_out_line(o, "    #%-2d %7llu ns  %s (%s)", i, (unsigned long long)ns[i],
                    f.function ? f.function : "???", f.object ? f.object : "?");
    }
    gl_symbolize_close(sym);
}

/* GPULEAK_BENCH=alternate: one observer's cost, on and off in turns. */
static void alternate_report(struct gl_out *o)
{
    struct gl_alternate_result r;
    if (!gl_alternate_result(&r))
        return;
    gl_out_line(o, "%s", "");
    gl_out_line(o, "alternate (GPULEAK_BENCH=alternate:%s:%u): %zu pairs of blocks%s", r.name,
                r.pairs_per_block, r.blocks,
                !r.stopped    ? ""
                : !r.left_out ? "; stopped: a second thread made calls"
                : r.whole ? "; stopped: a second thread made calls (gpuleak tracked nothing since)"
                          : "; stopped: a second thread made calls (the observer left out since)");
    if (r.blocks)
        gl_out_line(o,
                    "  with %.1f ns, without %.1f ns a pair (medians); with - without %+.1f ns "
                    "(median of pairs; quartiles %+.1f, %+.1f)",
                    r.on_ns, r.off_ns, r.diff_ns, r.q1_ns, r.q3_ns);
}

/* gpuleak's own code, or the C library's (exit, __run_exit_handlers). */
static bool exit_machinery(const char *path)
{
    if (gl_owners_of_path(path) == GL_OWNER_TOOL || gl_owners_is_libc(path))
        return true;
    const char *b = strrchr(path, '/');
    return strncmp(b ? b + 1 : path, "ld-linux", 8) == 0;
}

/* At exit, the frames below whoever called exit() are dead: main has returned,
 * or the function that called exit() never runs again.  Their slots still hold
 * what the program left there - a pointer it dropped, in a local of a function
 * that returned - and exit()'s frames and ours overwrite only some of them.  So
 * this thread's stack is scanned from the frame of exit()'s caller: the first
 * frame, walking out, that is neither gpuleak's nor the C library's (_start's,
 * when main returned).  The registers the program had are scanned still. */
static void exit_scan_start(struct gl_caller_context *cc)
{
    /* Deeper exit machinery than this is not met; were it, no frame below
     * would be found and the whole stack scanned, the safe side. */
    struct gl_unwind_frame f[64];
    int n = gl_unwind_walk_frames(f, 64);
    for (int i = 0; i < n; i++) {
        Dl_info info;
        if (!dladdr((void *)(f[i].ip - 1), &info) || !info.dli_fname)
            return; /* unknown code: keep the whole stack */
        if (exit_machinery(info.dli_fname))
            continue;
        if (f[i].sp > cc->frame)
            cc->frame = f[i].sp;
        return;
    }
}

static atomic_bool preamble_written;

void gl_exit_report_preamble(struct gl_out *o)
{
    if (atomic_exchange(&preamble_written, true))
        return;
    struct gl_report_input in = {
        .opt = &gl_runtime.opt, .tool_version = PACKAGE_VERSION, .command = gl_runtime.command};
    gl_report_text_preamble(o, &in);
}

void gl_exit_report_after_fork_child(void) { atomic_store(&preamble_written, false); }

static struct gl_termination ending;
static bool ending_set;

/* Whether this process writes the report, and now: only the process that
 * started tracking, once. */
static bool claim_report(void)
{
    /* First: a vfork child shares this memory, and must not claim the report. */
    if (getpid() != gl_runtime.pid)
        return false;
    int expected = GL_RT_TRACKING;
    if (!atomic_compare_exchange_strong(&gl_runtime.state, &expected, GL_RT_REPORTED))
        return false;
    if (gl_runtime.forked_child && gl_runtime.opt.child_silent_after_fork) {
        gl_runtime_status("silent"); /* by choice: the launcher need not say it wrote none */
        return false;
    }
    return true;
}

/* What the report holds while it is written; exit_report_release() gives it
 * back, whatever happened. */
struct exit_report {
    double check_start; /* gl_clock_s() when the check began */
    struct gl_leak_run run;
    struct gl_report_input in;
    /* The program's command line and gpuleak's options, split for the
     * documents (malloc'ed). */
    char *argv_buf, **argv, *opt_buf, **opt_argv;
};

/* The report's input: the run's, how the program ended, and for the XML and
 * JSON documents the command lines. */
/* The program's command line and gpuleak's options, split, when the XML or
 * JSON document will need them; exit_report_release frees them. */
static void command_lines(struct exit_report *r)
{
    if (!gl_runtime.opt.xml && !gl_runtime.opt.json_file[0])
        return;
    int argc = gl_runtime_program_argv(&r->argv_buf, &r->argv);
    const char *env_opts = getenv(GL_OPTIONS_ENV);
    int opt_argc = env_opts ? gl_options_split_env(env_opts, &r->opt_buf, &r->opt_argv) : 0;
    r->in.argc = argc > 0 ? argc : 0;
    r->in.argv = (const char *const *)r->argv;
    r->in.tool_argc = opt_argc > 0 ? opt_argc : 0;
    r->in.tool_argv = (const char *const *)r->opt_argv;
}

static void make_input(struct exit_report *r)
{
    gl_leak_run_input(&r->run, &r->in);
    gl_check_history_input(&r->in);
    r->in.termination = ending_set ? &ending : NULL;
    command_lines(r);
}

/* -v: what gpuleak itself cost, in memory and time, and what it saw that it
 * could not place. */
static void verbose_statistics(struct gl_out *o, const struct gl_counters_totals *stats,
                               double check_s)
{
    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN], b4[GL_U64_COMMAS_LEN],
        b5[GL_U64_COMMAS_LEN];
    size_t table = gl_tracker_memory_bytes(), records = gl_tracker_live_records();
    gl_out_line(o, "%s", "");
    gl_out_line(o, "gpuleak: %u distinct allocation stacks; tracking memory %s bytes",
                gl_stack_depot_count(),
                gl_out_u64_commas(b1, table + gl_stack_depot_memory_bytes()));
    /* The per-block figure includes the tables' fixed cost (shards, first
     * chunks), which dominates below about 10,000 blocks; the bins say how
     * many blocks shared each uthash item. */
    gl_out_line(o,
                "gpuleak: block table %s bytes for %s live blocks in %s bins (%.1f bytes per "
                "block); stack depot %s bytes",
                gl_out_u64_commas(b1, table), gl_out_u64_commas(b2, records),
                gl_out_u64_commas(b4, gl_tracker_table_bins()),
                records ? (double)table / (double)records : 0.0,
                gl_out_u64_commas(b3, gl_stack_depot_memory_bytes()));
    if (gl_py_code_count() || gl_py_code_dropped() || gl_py_frames_faults())
        gl_out_line(o,
                    "gpuleak: %u Python code objects copied (%s bytes); %s Python frames "
                    "left out of stacks (their code could not be copied); %lu walks of "
                    "Python frames faulted; %s",
                    gl_py_code_count(), gl_out_u64_commas(b1, gl_py_code_memory_bytes()),
                    gl_out_u64_commas(b2, gl_py_code_dropped()), gl_py_frames_faults(),
                    gl_py_watch_active() ? "code objects watched (their deaths counted)"
                                         : "code objects not watched");
    struct gl_stack_memo_counts memo;
    struct gl_mixed_memo_counts mixed;
    gl_stack_capture_memo_totals(&memo, &mixed);
    if (memo.hits + memo.walks + memo.skipped)
        gl_out_line(o,
                    "gpuleak: stack memo: %s captures found without unwinding, %s walked "
                    "to be remembered (%s refused), %s unwinds not walked (budget); %s bytes",
                    gl_out_u64_commas(b1, memo.hits), gl_out_u64_commas(b2, memo.walks),
                    gl_out_u64_commas(b3, memo.refused), gl_out_u64_commas(b4, memo.skipped),
                    gl_out_u64_commas(b5, memo.bytes));
    if (mixed.probe_hits + mixed.whole_hits + mixed.stores)
        gl_out_line(o,
                    "gpuleak: stacks with Python frames: %s found by their first native "
                    "frames, %s by all of them, %s merged and remembered",
                    gl_out_u64_commas(b1, mixed.probe_hits),
                    gl_out_u64_commas(b2, mixed.whole_hits), gl_out_u64_commas(b3, mixed.stores));
    if (gl_quarantine_capacity())
        gl_out_line(o,
                    "gpuleak: quarantine %s bytes; %s freed blocks not remembered (a writer "
                    "a whole lap behind held their slot), %s range lookups outrun by frees",
                    gl_out_u64_commas(b1, gl_quarantine_memory_bytes()),
                    gl_out_u64_commas(b2, gl_quarantine_dropped()),
                    gl_out_u64_commas(b3, gl_quarantine_overrun()));
    gl_out_line(o, "gpuleak: leak check took %.3f s", check_s);
    if (stats->unknown_frees || stats->replaced)
        gl_out_line(o, "gpuleak: %s frees of untracked addresses, %s allocations at live addresses",
                    gl_out_u64_commas(b1, stats->unknown_frees),
                    gl_out_u64_commas(b2, stats->replaced));
}

/* The text report, to the log: preamble (unless an error printed it),
 * how the program ended, the leaks and summaries, -v's statistics and
 * GPULEAK_BENCH=profile's figures. */
static void write_text(const struct exit_report *r)
{
    bool must_close;
    int fd = gl_runtime_open_log(&must_close);
    struct gl_out out;
    gl_out_init(&out, fd, (int)gl_runtime.pid);
    gl_exit_report_preamble(&out);
    gl_report_text_termination(&out, &r->in);
    gl_report_text_leaks(&out, &r->in);
    double check_s = gl_clock_s() - r->check_start; /* the check and its text */
    if (gl_runtime.opt.verbose > 0 && !gl_runtime.opt.quiet)
        verbose_statistics(&out, &r->run.stats, check_s);
    if (gl_prof_on)
        profile_report(&out);
    alternate_report(&out);
    gl_out_flush(&out);
    if (must_close)
        close(fd);
}

/* --xml-file and --json-file. */
/* --flamegraph-cost=oom: which error the picture is of, in one line, with
 * the API the program called, as its error names it. */
static void say_oom(const struct gl_oom_snapshot *s, const struct gl_report_input *in)
{
    if (gl_runtime.opt.quiet)
        return;
    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(in->stack_frames, s->stack, 1, in->arg, &n);
    char where[32], b1[32], b2[32], b3[32];
    if (s->device >= 0)
        snprintf(where, sizeof where, "device %d", s->device);
    else
        snprintf(where, sizeof where, "host memory");
    gl_runtime_message("gpuleak: --flamegraph-file: the blocks live on %s at out-of-memory error "
                       "%llu of %llu (%s of %s bytes)%s: %s bytes in %s blocks",
                       where, (unsigned long long)s->number, (unsigned long long)s->failures,
                       gl_report_frames_api_called(frames, n, s->api),
                       gl_out_u64_commas(b1, s->size),
                       s->failures > 1 ? ", the one that found its device fullest" : "",
                       gl_out_u64_commas(b2, s->live_bytes), gl_out_u64_commas(b3, s->live_blocks));
    free(frames);
}

bool gl_exit_report_flamegraph_add(struct gl_report_flamegraph *fg,
                                   const struct gl_report_input *in)
{
    enum gl_flamegraph_cost cost = (enum gl_flamegraph_cost)gl_runtime.opt.flamegraph_cost;
    if (cost == GL_FLAMEGRAPH_OOM) {
        struct gl_oom_snapshot oom;
        bool taken = gl_oom_snapshot_read(&oom);
        if (taken) {
            say_oom(&oom, in);
            gl_report_flamegraph_add(fg, in, cost, oom.sites, oom.nsites);
        } else if (oom.busy) { /* a failure on another thread kept it: said here, not as none */
            gl_runtime_message("gpuleak: --flamegraph-file: the picture of the out-of-memory "
                               "errors (%llu) could not be read: another thread was replacing it",
                               (unsigned long long)oom.failures);
            taken = true;
        }
        gl_oom_snapshot_free(&oom);
        return taken;
    }
    size_t n = 0;
    struct gl_site_stats *sites = NULL;
    if (cost == GL_FLAMEGRAPH_PEAK || cost == GL_FLAMEGRAPH_ALLOCATED) { /* read now */
        size_t all = gl_stack_depot_sites(NULL, 0);
        sites = calloc(all + 1, sizeof *sites); /* and the blocks with no stack */
        n = sites ? gl_stack_depot_sites(sites, all) : 0;
        n = n < all ? n : all; /* sites added since the count are left out */
        if (sites && gl_stack_depot_site_stackless(&sites[n]))
            n++;
    }
    gl_report_flamegraph_add(fg, in, cost, sites, n);
    free(sites);
    return true;
}

static void say_no_oom(void)
{
    if (!gl_runtime.opt.quiet)
        gl_runtime_message("gpuleak: --flamegraph-file: no allocation ran out of memory: no "
                           "stacks to draw for --flamegraph-cost=oom");
}

/* --flamegraph-file, as a document writer. */
static void flamegraph(struct gl_out *o, const struct gl_report_input *in)
{
    struct gl_report_flamegraph *fg = gl_report_flamegraph_new();
    if (!fg)
        return;
    if (!gl_exit_report_flamegraph_add(fg, in))
        say_no_oom();
    gl_report_flamegraph_write(o, fg);
    gl_report_flamegraph_free(fg);
}

void gl_exit_report_flamegraph_write(struct gl_report_flamegraph *fg, bool drawn)
{
    if (!drawn)
        say_no_oom();
    int fd = gl_runtime_open_output("--flamegraph-file", gl_runtime.opt.flamegraph_file);
    if (fd < 0)
        return;
    struct gl_out o;
    gl_out_init(&o, fd, (int)getpid());
    gl_report_flamegraph_write(&o, fg);
    if (!gl_out_flush(&o))
        gl_runtime_message("gpuleak: --flamegraph-file: write failed");
    close(fd);
}

/* The history's window, read once for the report (exact peaks) and the
 * --memory-viz file. */
static struct {
    struct gl_history_entry *events;
    size_t n, bytes;
    uint64_t dropped;
} window;

static void window_read(void)
{
    if (gl_history_on())
        window.n = gl_history_read(&window.events, &window.bytes, &window.dropped);
}

static void window_release(void)
{
    if (window.events)
        gl_tool_unmap(window.events, window.bytes);
    memset(&window, 0, sizeof window);
}

/* A whole history knows the devices' peaks exactly (track/history.h): they
 * replace the statistics', which other threads' unflushed counts leave low. */
static void exact_peaks(struct gl_usage *u)
{
    if (!u || !window.events || window.dropped)
        return;
    struct gl_history_peak peaks[GL_STATS_DEVICES];
    gl_history_peaks(window.events, window.n, peaks, GL_STATS_DEVICES);
    for (unsigned d = 0; d < GL_STATS_DEVICES; d++)
        if (u->used[d] && peaks[d].bytes) {
            u->dev[d].peak_bytes = peaks[d].bytes;
            u->dev[d].peak_seq = peaks[d].seq;
            u->dev[d].peak_stack = peaks[d].stack;
        }
}

/* --memory-viz: the history's window and the blocks live now. */
static void memory_viz(struct gl_out *o, const struct gl_report_input *in)
{
    struct gl_memviz_input v = {.max_entries = (uint64_t)gl_runtime.opt.memory_viz_entries,
                                .events = window.events,
                                .nevents = window.n,
                                .dropped = window.dropped};
    struct gl_block_info *live = NULL;
    size_t nlive = 0, live_bytes = 0;
    if (gl_tracker_snapshot(&live, &nlive, &live_bytes) == 0) {
        v.live = live;
        v.nlive = nlive;
    }
    gl_report_memviz(o, in, &v);
    if (live)
        gl_tool_unmap(live, live_bytes);
}

static void write_documents(const struct gl_report_input *in)
{
    if (gl_runtime.opt.xml && !gl_runtime.opt.xml_file[0]) {
        if (gl_runtime_xml_fd() >= 0)
            write_to(gl_runtime_xml_fd(), "--xml-fd", gl_report_xml, in);
    } else if (gl_runtime.opt.xml)
        write_document("--xml-file", gl_runtime.opt.xml_file, gl_report_xml, in);
    if (gl_runtime.opt.json_file[0])
        write_document("--json-file", gl_runtime.opt.json_file, gl_report_json, in);
    if (gl_runtime.opt.flamegraph_file[0])
        write_document("--flamegraph-file", gl_runtime.opt.flamegraph_file, flamegraph, in);
    if (gl_runtime.opt.memory_viz[0])
        write_document("--memory-viz", gl_runtime.opt.memory_viz, memory_viz, in);
}

static void command_lines_free(struct exit_report *r)
{
    free(r->argv);
    free(r->argv_buf);
    free(r->opt_argv);
    free(r->opt_buf);
}

static void exit_report_release(struct exit_report *r)
{
    command_lines_free(r);
    gl_leak_run_free(&r->run);
    gl_leak_run_close(); /* the exit report is the last check */
}

static uint64_t last_errors;

uint64_t gl_exit_report_errors(void) { return last_errors; }

/* --save: the check's verdict on each block, then how the process ends, so
 * that `gpuleak --read` gives this report again. */
static void save_verdicts(const struct gl_leak_run *run)
{
    if (!gl_log_writer_active())
        return;
    uint64_t blocks = 0, bytes = 0;
    const struct gl_leak_result *l = &run->leaks;
    for (size_t i = 0; i < l->nrecords; i++) {
        const struct gl_loss_record *rec = &l->records[i];
        for (size_t j = 0; j < rec->blocks; j++) {
            const struct gl_block_info *b = &l->blocks[rec->block_begin + j];
            gl_log_writer_verdict(b->key, b->seq, rec->kind);
            blocks++;
            bytes += b->size;
        }
    }
    enum gl_log_end how = GL_LOG_END_EXIT;
    int status = 0;
    if (ending_set && ending.signal > 0) {
        how = GL_LOG_END_SIGNAL;
        status = ending.signal;
    } else if (ending_set) {
        how = GL_LOG_END_OTHER;
        status = ending.exit_status;
    }
    gl_log_writer_end(how, status, blocks, bytes, run->reach.available, run->reach.why_not);
    uint64_t dropped = gl_log_writer_dropped();
    if (dropped)
        gl_runtime_message("gpuleak: --save: %llu events were not saved (a thread found the "
                           "staging ring full inside its own compaction, or the log closed)",
                           (unsigned long long)dropped);
}

/* Inlined into both entry points: their frame is where the stack scan
 * starts, and its layout stays what the exit report alone had. */
static inline __attribute__((always_inline)) void report(struct gl_caller_context *cc)
{
    if (!claim_report())
        return;
    exit_scan_start(cc);
    gl_trace_file_finish();

    /* A check the program asked for on another thread finishes first. */
    gl_leak_run_lock();
    struct exit_report r;
    memset(&r, 0, sizeof r);
    r.check_start = gl_clock_s();
    if (gl_log_writer_active()) /* what the driver tells this check is saved too */
        gl_leak_run_set_driver(gl_log_answers_recorder(gl_driver_query_cuda()));
    if (gl_leak_run(&r.run, 0, cc) == 0) {
        save_verdicts(&r.run);
        window_read();
        exact_peaks(r.run.usage);
        make_input(&r);
        write_text(&r);
        write_documents(&r.in);
        last_errors = gl_report_text_error_count(&r.in);
        gl_runtime_status("report errors=%llu", (unsigned long long)last_errors);
    }
    exit_report_release(&r);
    window_release();
    gl_leak_run_unlock();
    gl_log_writer_close();
}

void gl_exit_report(void)
{
    struct gl_caller_context cc;
    GL_CALLER_CONTEXT(&cc);
    report(&cc);
}

void gl_exit_report_ending(const struct gl_termination *how)
{
    struct gl_caller_context cc;
    GL_CALLER_CONTEXT(&cc);
    /* Set before the report claims the state: the one that wins prints it. */
    if (getpid() != gl_runtime.pid || !gl_runtime_tracking())
        return;
    ending = *how;
    ending_set = true;
    report(&cc);
}

void gl_exit_report_untracked(const char *note)
{
    if (!gl_runtime.opt.xml && !gl_runtime.opt.json_file[0])
        return;
    static const struct gl_leak_result nothing;
    static const struct gl_counters_totals no_usage;
    struct exit_report r = {.in = {
                                .opt = &gl_runtime.opt,
                                .tool_version = PACKAGE_VERSION,
                                .command = gl_runtime.command,
                                .leaks = &nothing,
                                .stats = &no_usage,
                                .note = note,
                                .pid = (int)getpid(),
                                .ppid = (int)getppid(),
                                .elapsed_s = gl_runtime_elapsed(),
                            }};
    /* A check the program asked for on another thread finishes first: the
     * history it adds to is read whole. */
    gl_leak_run_lock();
    gl_check_history_input(&r.in); /* checks made before CUDA started, if any */
    command_lines(&r);
    write_documents(&r.in);
    command_lines_free(&r);
    gl_leak_run_unlock();
}
