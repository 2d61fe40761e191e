/* SPDX-License-Identifier: MIT */
#include "components.h"

#include "base/thread.h"
#include "base/ticker.h"
#include "base/tool.h"
#include "check/checkpoints.h"
#include "check/framework.h"
#include "check/growth.h"
#include "check/leak_run.h"
#include "check/pools.h"
#include "check/run_suppressions.h"
#include "exit_report.h"
#include "heap/heap.h"
#include "observe/contexts.h"
#include "python/py_code.h"
#include "report/error_sink.h"
#include "save/log_writer.h"
#include "track/checks.h"
#include "track/errors.h"
#include "track/graphs.h"
#include "track/history.h"
#include "track/live_ranges.h"
#include "track/oom_snapshot.h"
#include "track/quarantine.h"
#include "track/regions.h"
#include "track/stats.h"
#include "track/trace_file.h"
#include "track/tracker.h"

/* Services whose modules export their hooks as functions. */
#define SERVICE(id, reset_fn, fork_fn)                                                             \
    static const struct gl_component id = {.name = #id, .reset = reset_fn, .after_fork = fork_fn}

SERVICE(tool, NULL, gl_tool_after_fork_child);
SERVICE(thread, gl_thread_reset, gl_thread_after_fork_child);
/* The clock thread is the parent's: a child reads the clock itself. */
SERVICE(ticker, NULL, gl_ticker_after_fork);
/* The allocator hooks' locks, perhaps held by a thread gone.  Never reset:
 * the heap is the program's, watched since it started. */
SERVICE(heap, NULL, gl_heap_after_fork_child);
SERVICE(py_code, NULL, gl_py_code_after_fork_child);
SERVICE(pools, gl_pools_reset, gl_pools_after_fork_child);
SERVICE(checkpoints, gl_checkpoints_reset, NULL);
SERVICE(growth, gl_growth_reset, NULL);
SERVICE(framework, gl_framework_reset, NULL);
SERVICE(leak_run, NULL, gl_leak_run_after_fork_child);
SERVICE(run_suppressions, NULL, gl_run_suppressions_after_fork_child);
SERVICE(error_sink, NULL, gl_error_sink_after_fork_child);
SERVICE(exit_report, NULL, gl_exit_report_after_fork_child);

const struct gl_component *const gl_components[] = {
    /* Tool memory and threads first: everything else stands on them. */
    &tool,
    &thread,
    &ticker,
    &heap,
    /* What the producers learnt. */
    &gl_contexts_component,
    &py_code,
    /* The consumers, in pipeline order: route, state, then the observers in
     * the order they see each event (statistics before the checks, so that
     * an out-of-memory report counts its own failure). */
    &gl_graphs_component,
    &gl_tracker_component,
    &gl_stats_component,
    &gl_live_ranges_component,
    &gl_quarantine_component,
    &gl_checks_component,
    &gl_oom_snapshot_component,
    &gl_trace_file_component,
    &gl_history_component,
    &gl_log_writer_component,
    /* On demand, after the others: only while a profiled region is open. */
    &gl_regions_component,
    /* Records and the leak run's services. */
    &gl_errors_component,
    &pools,
    &checkpoints,
    &growth,
    &framework,
    &leak_run,
    &run_suppressions,
    &error_sink,
    &exit_report,
    NULL,
};
