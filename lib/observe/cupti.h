/* The CUPTI producer: CUPTI's driver-API and resource callbacks turned into
 * events for the dispatcher (event/dispatch.h).  The only code of gpuleak that
 * runs inside the program's driver calls when allocations are seen through
 * CUPTI.
 *
 * What it does per call: decode the parameters (observe/decode.h), say which
 * thread and context, capture the stack of an allocation (and of a free, with
 * --keep-stacktraces=alloc-and-free), and hand the event on: complete at the
 * exit of an allocation that succeeded (its output exists only then), in two
 * phases for releases (begun at entry, ended at exit with the driver's
 * verdict), at entry for a copy or set.  A failed allocation is dispatched
 * only when it ran out of memory (GL_EV_ALLOC_FAILED, for the OOM report), a
 * failed capture end so that the capture ends.  Contexts and streams are learnt from the resource
 * callbacks (observe/contexts.h); a context's destruction is an event.
 *
 * Rules it keeps: no CUDA call, no malloc, no lock held across anything but a
 * table update, nothing that can block - on the tracking path.  The error
 * path is the exception (track/errors.h). */
#ifndef GPULEAK_CUPTI_H
#define GPULEAK_CUPTI_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

#include "observe/cupti_loader.h"

/* Subscribe to CUPTI and enable the callbacks of every tracked entry point
 * (copies and sets only with check_ranges) and of contexts and streams.
 * Returns true, or false with one line in err (CUPTI already taken by another
 * client, named when CUPTI says who).  Events flow while the dispatcher's
 * gate is open. */
bool gl_cupti_start(const struct gl_cupti *api, bool check_ranges, char *err, size_t errlen);
/* Unsubscribe (a start that failed half way). */
void gl_cupti_stop(void);

void CUPTIAPI gl_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *cbdata);

/* Stack capture can be turned off for tests that drive the callback by hand. */
void gl_cupti_set_stacks(bool enabled);
/* Capture a stack at every free too (--keep-stacktraces=alloc-and-free). */
void gl_cupti_set_free_stacks(bool enabled);

/* Benchmark knob: GPULEAK_BENCH=null makes the callback return at once (CUPTI's own
 * cost), GPULEAK_BENCH=nostack skips stack capture, GPULEAK_BENCH=spin:NS makes
 * every driver callback (entry and exit) only wait NS nanoseconds (what a callback
 * of that length costs, which tells whether callbacks are serialized),
 * GPULEAK_BENCH=nomemo unwinds every stack (no stack memo, stack_memo.h),
 * GPULEAK_BENCH=profile times the phases; several, separated by commas
 * (profile,nomemo).  Read once at injection. */
void gl_cupti_bench_mode(const char *mode);

#endif
