/* The Valgrind-style text report.
 *
 * Pure formatting: everything it prints comes in through struct gl_report_input
 * (results, counters, device names, symbolized frames), so unit tests check the
 * text byte for byte without a GPU or a live tracker. */
#ifndef GPULEAK_REPORT_TEXT_H
#define GPULEAK_REPORT_TEXT_H

#include <stdint.h>

#include "analyze/leak_check.h"
#include "common/options.h"
#include "common/out.h"
#include "symbolize.h"
#include "track/tracker.h"

struct gl_report_input {
    const struct gl_options *opt;
    const char *tool_version;   /* "0.1.0" */
    const char *command;        /* program command line */
    const struct gl_leak_result *leaks;
    const struct gl_tracker_stats *stats;
    int main_tid;               /* pid: blocks from other threads name their thread */

    /* services */
    const char *(*device_name)(int device, void *arg); /* NULL if unknown */
    /* Frames to show for a stack id, at most max; returns the count. */
    unsigned (*stack_frames)(uint32_t stack, struct gl_frame *out, unsigned max, void *arg);
    /* Addresses a VMM handle is mapped at; returns the count (may be NULL). */
    size_t (*vmm_mappings)(uint64_t handle_key, uint64_t *addrs, size_t max, void *arg);
    void *arg;
};

void gl_report_preamble(struct gl_out *o, const struct gl_report_input *in);
void gl_report_leaks(struct gl_out *o, const struct gl_report_input *in);

/* Errors the leak report counts (loss records of error kinds, full mode only). */
uint64_t gl_report_error_count(const struct gl_report_input *in);

#endif
