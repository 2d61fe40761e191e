/* The CUPTI callback: the only code that runs inside the program's driver calls.
 *
 * Rules it keeps: no CUDA call, no malloc, no lock held across anything but a
 * table update, nothing that can block - on the tracking path.  The error path
 * is the exception: the first error of a context is symbolized and printed
 * inside the call (report/error_sink.h), under the sink's own lock, with
 * allocations of libdw's; still no CUDA call, and never a wait for a leak
 * check.  Allocations are recorded at the call's
 * exit and only if it returned CUDA_SUCCESS; frees are taken out at entry and
 * confirmed at exit (tracker.h). */
#ifndef GPULEAK_CALLBACK_H
#define GPULEAK_CALLBACK_H

#include <cupti.h>

void CUPTIAPI gl_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *cbdata);

/* Stack capture can be turned off for tests that drive the callback by hand. */
void gl_callback_set_stacks(int enabled);
/* Capture a stack at every free too (--keep-stacktraces=alloc-and-free). */
void gl_callback_set_free_stacks(int enabled);

/* Benchmark knob: GPULEAK_BENCH=null makes the callback return at once (CUPTI's own
 * cost), GPULEAK_BENCH=nostack skips stack capture, GPULEAK_BENCH=spin:NS makes
 * every driver callback (entry and exit) only wait NS nanoseconds (what a callback
 * of that length costs, which tells whether callbacks are serialized),
 * GPULEAK_BENCH=nomemo unwinds every stack (no stack memo, stack_memo.h),
 * GPULEAK_BENCH=profile times the phases; several, separated by commas
 * (profile,nomemo).  Read once at injection. */
void gl_callback_bench_mode(const char *mode);

#endif
