/* SPDX-License-Identifier: MIT */
/* One leak check, from the live tracker to loss records ready to report: the
 * path shared by the exit report and the checks a program asks for (gpuleak.h),
 * so that both classify and suppress alike.  Its phases, in order:
 *
 *   snapshot -> sizes the callbacks could not know (IPC memory, imported
 *   handles, pools) -> the devices' stream-ordered pools and graph memory ->
 *   custom pools settled -> the blocks allocated since a checkpoint ->
 *   reachability scan of the program's memory -> --scan-device -> classify,
 *   group (by stack, or by the first frames shown: --leak-resolution), sort ->
 *   the counters the report prints beside -> Cached rules and suppressions.
 *
 * The driver is asked through driver_query.h only: a run without one (a test
 * replaying events) is the run of a process whose driver cannot tell.  The
 * report-time services (the driver, the symbolizer, suppression files, device
 * names) are opened by the first check and kept for the next; the symbolizer
 * is reopened when objects were loaded or unloaded since.
 *
 * Checks run one at a time under gl_leak_run_lock(), from the program's own
 * threads or its exit, never from a CUDA callback: they may call the driver and
 * malloc. */
#ifndef GPULEAK_LEAK_RUN_H
#define GPULEAK_LEAK_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/framework.h"
#include "check/counters.h"
#include "check/device_scan.h"
#include "check/driver_query.h"
#include "check/leak_check.h"
#include "check/reachability.h"
#include "report/report_text.h"

struct gl_leak_run {
    struct gl_block_info *blocks; /* the snapshot, in record order */
    size_t n, snap_bytes;
    struct gl_leak_result leaks;
    struct gl_counters_totals stats;
    struct gl_reachability reach; /* how the blocks' reachability was found */
    bool device_scanned;          /* --scan-device ran */
    struct gl_device_scan device;
    struct gl_api_error_counts api_errors;
    struct gl_error_context *api_contexts; /* malloc'ed */
    size_t napi_contexts;
    struct gl_usage *usage;    /* malloc'ed */
    struct gl_site_stats *top; /* --stats: sites by peak bytes, malloc'ed */
    size_t ntop;
    /* Frameworks' own accounts, as read at the last checkpoint that had one. */
    struct gl_framework_usage framework[GL_FW_N * GL_FW_MAX_DEVICES];
    size_t nframework;
};

void gl_leak_run_lock(void);
void gl_leak_run_unlock(void);

/* Take and analyse a snapshot.  since_seq: only blocks numbered at or above it
 * (allocated after a checkpoint); 0 for all.  cc: where gpuleak was entered
 * (GL_CALLER_CONTEXT in the entry point; NULL: here).  Returns 0, or -1 after
 * one line to the log saying why. */
int gl_leak_run(struct gl_leak_run *run, uint64_t since_seq, const struct gl_caller_context *cc);
void gl_leak_run_free(struct gl_leak_run *run);

/* The driver checks ask (default: gl_driver_query_cuda()); NULL: none, every
 * question unanswered.  Under the lock; device names are asked again. */
void gl_leak_run_set_driver(const struct gl_driver_query *q);

/* A process that is not this one (a saved log read back: save/log_reader.h):
 * its blocks are classified by classify, not by scanning this process's
 * memory, and the report says what its own check said of reachability. */
struct gl_leak_run_saved {
    gl_classify_fn classify;
    void *arg;
    int main_tid; /* its main thread: other threads are named in block lines */
    bool reach_available;
    const char *reach_why_not;
};
/* NULL: this process again.  Under the lock. */
void gl_leak_run_set_saved(const struct gl_leak_run_saved *s);

/* A report input for the run: options, results, counters and services
 * (symbolized stacks, device and pool names) filled in; the caller adds what
 * is particular to its report. */
void gl_leak_run_input(const struct gl_leak_run *run, struct gl_report_input *in);

/* A stack's frames as the checks' reports show them (common/frame.h's
 * gl_stack_frames_fn), through the runs' symbolizer: under the lock, from a
 * program's thread (profiled regions name their sites with it). */
unsigned gl_leak_run_stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg);

/* Close the services (after the exit report).  The suppression set stays:
 * errors may still come from threads running on. */
void gl_leak_run_close(void);
void gl_leak_run_after_fork_child(void);

#endif
