/* SPDX-License-Identifier: MIT */
#include "report/error_sink.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/suppressions.h"
#include "exit_report.h"
#include "report/report_errors.h"
#include "report/report_frames.h"
#include "check/run_suppressions.h"
#include "runtime.h"
#include "track/errors.h"
#include "check/counters.h"
#include "check/device_memory.h"
#include "stack/stack_capture.h"
#include "stack/stack_depot.h"
#include "symbol/frame_filter.h"
#include "symbol/symbolize.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gl_symbolizer *sym;
static unsigned long long sym_objects;

unsigned gl_error_sink_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    return gl_frame_filter_stack(gl_symbolize_fresh(&sym, &sym_objects), stack,
                                 gl_runtime.opt.show_below_main, out, max);
}

static const void *sink(const struct gl_api_error *e)
{
    pthread_mutex_lock(&lock);
    bool must_close;
    if (!e) {
        int fd = gl_runtime_open_log(&must_close);
        struct gl_out o;
        gl_out_init(&o, fd, (int)getpid());
        gl_exit_report_preamble(&o);
        gl_report_errors_overflow(&o);
        gl_out_flush(&o);
        if (must_close)
            close(fd);
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    /* Suppressions see every kept frame, as for loss records: malloc'ed, as
     * the sink may (design.md, "API errors"), not on the program's stack. */
    unsigned n;
    struct gl_frame *frames =
        gl_report_frames_get(gl_error_sink_frames, e->stack, GL_STACK_MAX_FRAMES / 2, NULL, &n);
    /* The leak run counts the entry's uses, from the contexts (every
     * occurrence, not only this first one). */
    const struct gl_supp *s = gl_suppressions_find_error(gl_run_suppressions(), e->kind, frames, n);
    if (s) {
        free(frames);
        pthread_mutex_unlock(&lock);
        return s;
    }
    struct gl_error_services svc = {
        .num_callers = (unsigned)gl_runtime.opt.num_callers,
        .top_sites = gl_runtime.opt.top_sites,
        .stack_frames = gl_error_sink_frames,
    };
    /* The entry is written now: printing the error symbolizes again, which may
     * reopen the symbolizer and free the names frames point into. */
    char *text = NULL;
    size_t len = 0;
    if (gl_runtime.opt.gen_suppressions == GL_GEN_SUPP_ALL && n > 0) {
        unsigned shown =
            n < (unsigned)gl_runtime.opt.num_callers ? n : (unsigned)gl_runtime.opt.num_callers;
        text = gl_suppressions_entry(frames, shown, e->kind, 0, &len);
    }
    free(frames);
    int fd = gl_runtime_open_log(&must_close);
    struct gl_out o;
    gl_out_init(&o, fd, (int)getpid());
    gl_exit_report_preamble(&o);
    /* Who holds the memory, for an out-of-memory error: read here, in the
     * failing call, before anything is printed. */
    struct gl_counters_holders holders;
    bool oom = e->kind == GL_ERR_OUT_OF_MEMORY;
    if (oom)
        gl_counters_holders(e->device, &holders);
    gl_report_errors_api_error(&o, e, &svc, oom ? &holders : NULL);
    if (oom)
        gl_counters_holders_free(&holders);
    if (text)
        gl_out_text(&o, text, len);
    free(text);
    gl_out_flush(&o);
    if (must_close)
        close(fd);
    pthread_mutex_unlock(&lock);
    return NULL;
}

void gl_error_sink_install(void)
{
    gl_device_memory_load();
    gl_errors_device_memory = gl_device_memory_query;
    gl_errors_capture_stack = gl_stack_capture;
    gl_errors_sink = sink;
}

void gl_error_sink_after_fork_child(void) { pthread_mutex_init(&lock, NULL); }
