/* SPDX-License-Identifier: MIT */
/* The CUPTI producer: CUPTI's driver-API and resource callbacks turned into
 * events (observe/call.h does that, for both producers).  Runs inside the
 * program's driver calls.  Contexts and streams are learnt from the resource
 * callbacks (observe/contexts.h); a context's destruction is an event.
 *
 * With --intercept=both it is the witness of the driver observer
 * (observe/crosscheck.h): a call the driver observer is inside is only
 * compared; a call it missed is tracked here and reported.
 *
 * Rules it keeps: those of observe/call.h. */
#ifndef GPULEAK_CUPTI_H
#define GPULEAK_CUPTI_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

#include "observe/cupti_loader.h"

/* Subscribe to CUPTI and enable the callbacks of every tracked entry point
 * (copies and sets only with check_ranges) and of contexts and streams.
 * Returns true, or false with one phrase in err (CUPTI already taken by
 * another client, named when CUPTI says who).  Events flow while the dispatcher's
 * gate is open.  witness: cross-check the driver observer (--intercept=both). */
bool gl_cupti_start(const struct gl_cupti *api, bool check_ranges, bool witness, char *err,
                    size_t errlen);
/* Unsubscribe (a start that failed half way). */
void gl_cupti_stop(void);

void CUPTIAPI gl_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *cbdata);

#endif
