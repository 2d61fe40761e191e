/* SPDX-License-Identifier: MIT */
/* Stacks as every report prints them, shared by the text report, the API
 * error texts and the documents: a line per frame, and which API the
 * program called. */
#ifndef GPULEAK_REPORT_FRAMES_H
#define GPULEAK_REPORT_FRAMES_H

#include <stdint.h>

#include "common/frame.h"
#include "common/out.h"

/* Those frames of a stack (not 0), in an array of their own: malloc'ed (free
 * it), since --num-callers=500 makes room for 1,000 frames (56 KB), too much
 * for the stack of a program thread, where checks and API errors are
 * reported.  *n gets the count; NULL and 0 when stack is 0, fn is NULL or
 * memory ran out. */
struct gl_frame *gl_report_frames_get(gl_stack_frames_fn fn, uint32_t stack, unsigned max,
                                      void *arg, unsigned *n);

/* A stack, a line per frame: INDENT"at 0x...: fn (file:line)", then "by ..."
 * lines; when there are no frames, INDENT followed by none (if not NULL). */
void gl_report_frames_print(struct gl_out *o, const struct gl_frame *frames, unsigned n,
                            const char *indent, const char *none);

/* The API the program called: the first frame shown, when it names a CUDA
 * function; else the driver entry point gpuleak saw (enum gl_api). */
const char *gl_report_frames_api_called(const struct gl_frame *first, unsigned nframes,
                                        unsigned api);

#endif
