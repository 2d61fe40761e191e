/* SPDX-License-Identifier: MIT */
/* Which frames of a stored stack a report shows.
 *
 * A stored stack starts at the driver entry point (stack_capture.h).  When the
 * program called the CUDA runtime (cudaMalloc), the runtime's internal frames sit
 * between that entry point and the program; they are dropped so that the first
 * frame shown is the API the program called: the outermost CUDA-runtime frame
 * of a shared libcudart, or in a static cudart the first function named cuda*
 * after the __cudart* internals.  When the program called the driver directly,
 * the driver entry point itself (cuMemAlloc_v2) is the first frame.
 *
 * Unless show_below_main, the stack ends at main(): what lies below it is the C
 * library's start-up code (Valgrind's --show-below-main=no). */
#ifndef GPULEAK_FRAME_FILTER_H
#define GPULEAK_FRAME_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "symbol/symbolize.h"
#include "stack/modules.h"

/* What the filter needs to know of each frame: symbols and the object's role. */
typedef void (*gl_frame_lookup_fn)(uintptr_t ip, unsigned index, struct gl_frame *out,
                                   enum gl_modules_role *role, void *arg);

/* Fill out[] with the frames to show, at most max native ones and max Python
 * ones (room for 2 * max); returns the count. */
unsigned gl_frame_filter(const uintptr_t *ips, unsigned n, gl_frame_lookup_fn lookup, void *arg,
                         bool show_below_main, struct gl_frame *out, unsigned max);

/* A stored stack (stack_depot.h) as a report shows it: symbolized with sym
 * (NULL: addresses only), Python frames named from their code objects, then
 * filtered as above.  For suppression matching (every kept frame) and for
 * printing (--num-callers). */
unsigned gl_frame_filter_stack(struct gl_symbolizer *sym, uint32_t stack, bool show_below_main,
                               struct gl_frame *out, unsigned max);

#endif
