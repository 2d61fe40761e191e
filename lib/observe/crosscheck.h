/* SPDX-License-Identifier: MIT */
/* --intercept=both: the driver observer (observe/driver.h) tracks the program
 * and CUPTI (observe/cupti.h) watches it, call by call.
 *
 * A hooked call runs the driver's function, inside which CUPTI calls back: so
 * a CUPTI callback that comes while the same thread is inside a hook of the
 * same entry point is the same call, seen twice.  Each thread keeps the hooked
 * calls it is inside (a few deep: a call never runs another hook, but a signal
 * handler may).  Then:
 *   - a call both saw: CUPTI's reading of its parameters is compared with the
 *     hook's (same decoder, observe/decode.h); they differ only if a hook
 *     passed its arguments wrong;
 *   - a call only CUPTI saw (a path to the driver no hook covers): CUPTI
 *     tracks it (the caller does), and it is reported;
 *   - a call only the hook saw (CUPTI missed it): reported.
 * A call counts only if it makes an event (an allocation, a free, ...): a
 * failed call or a copy with ranges unchecked says nothing about coverage.
 * Differences are errors of kind ObserverMismatch (track/errors.h), with the
 * stack of the call, as other API errors. */
#ifndef GPULEAK_CROSSCHECK_H
#define GPULEAK_CROSSCHECK_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

/* A hooked call in progress on this thread. */
struct gl_crosscheck_call {
    uint32_t cbid;
    bool cupti_enter, cupti_exit; /* CUPTI called back at its entry, at its exit */
    bool differs;                 /* CUPTI read its parameters otherwise */
    const void *params;           /* the hook's struct */
    uintptr_t entry;              /* the driver's function (observe/call.h) */
    uint64_t ctx;
    struct gl_crosscheck_call *outer;
};

/* Around the driver's function, in the hook. */
void gl_crosscheck_begin(struct gl_crosscheck_call *c, uint32_t cbid, const void *params,
                         uintptr_t entry, uint64_t ctx);
void gl_crosscheck_end(struct gl_crosscheck_call *c, CUresult rc);

/* From a CUPTI driver-API callback.  True: the call is a hook's (compared
 * here; CUPTI leaves it alone).  False: CUPTI alone saw it, and tracks it
 * (reported here when it makes an event).  rc: the result, at exit. */
bool gl_crosscheck_cupti(uint32_t cbid, bool at_exit, const void *params, const void *rc,
                         uint64_t ctx);

/* Differences found so far (the -v summary and tests). */
uint64_t gl_crosscheck_differences(void);

#endif
