/* A tracked driver call turned into events, whichever producer saw it: CUPTI's
 * callbacks (observe/cupti.h) or the hooks at the driver's entry points
 * (observe/driver.h).  Both hand over the same thing, the call's parameters
 * laid out as CUPTI's *_params struct (observe/decode.h), at its entry and at
 * its exit with the driver's result, so that the two observers cannot differ
 * in what they make of a call, only in which calls they see.
 *
 * What it does per call: decode the parameters, say which thread and context,
 * capture the stack of an allocation (and of a free, with
 * --keep-stacktraces=alloc-and-free), and dispatch: complete at the exit of an
 * allocation that succeeded (its output exists only then), in two phases for
 * releases (begun at entry, ended at exit with the driver's verdict), at entry
 * for a copy or set.  A failed allocation is dispatched only when it ran out of
 * memory (GL_EV_ALLOC_FAILED, for the OOM report), a failed capture end so
 * that the capture ends.
 *
 * Rules it keeps: no CUDA call, no malloc, no lock held across anything but a
 * table update, nothing that can block.  The error path is the exception
 * (track/errors.h). */
#ifndef GPULEAK_CALL_H
#define GPULEAK_CALL_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "event/event.h"

/* Where the call was seen.  entry: the address of the driver function called,
 * when the stack is captured outside it (the driver observer's hooks), so that
 * stacks name the entry point the program called as CUPTI's do; 0 when the
 * stack is captured inside the driver (CUPTI). */
struct gl_call_site {
    uint64_t ctx; /* the context current at the call */
    uintptr_t entry;
};

/* At the call's entry: a release begun (returns its token, never 0), a copy or
 * set checked, a graph destroyed.  Returns 0 when nothing was begun. */
uint64_t gl_call_enter(uint32_t cbid, const void *params, const struct gl_call_site *site);
/* At its exit, with the driver's result and the token gl_call_enter gave. */
void gl_call_exit(uint32_t cbid, const void *params, const struct gl_call_site *site, CUresult rc,
                  uint64_t token);

/* What the call makes of its parameters at its entry (GL_SITE_ENTER) or exit,
 * without dispatching: the cross-check's view (observe/crosscheck.h).  Returns
 * false when nothing is made there. */
bool gl_call_decode(uint32_t cbid, const void *params, bool at_exit, CUresult rc,
                    struct gl_event *ev);

/* Stack capture can be turned off for tests that drive the producers by hand. */
void gl_call_set_stacks(bool enabled);
/* Capture a stack at every free too (--keep-stacktraces=alloc-and-free). */
void gl_call_set_free_stacks(bool enabled);

/* Benchmark knob, for both producers: GPULEAK_BENCH=null makes the producer
 * return at once (the observer's own cost: CUPTI's, or a hook's),
 * GPULEAK_BENCH=nostack skips stack capture, GPULEAK_BENCH=spin:NS makes every
 * call (entry and exit) only wait NS nanoseconds (which tells whether the
 * observer serializes calls), GPULEAK_BENCH=nomemo unwinds every stack (no stack
 * memo, stack_memo.h), GPULEAK_BENCH=profile times the phases; several,
 * separated by commas (profile,nomemo).  Read once at injection. */
void gl_call_bench_mode(const char *mode);
/* Whether GPULEAK_BENCH=null or spin is on; spin waits its NS (0: none). */
bool gl_call_bench_null(void);
void gl_call_bench_spin(void);

#endif
