/* SPDX-License-Identifier: MIT */
/* One frame of a stack as the report and the suppression matcher see it. */
#ifndef GPULEAK_FRAME_H
#define GPULEAK_FRAME_H

#include <stdbool.h>
#include <stdint.h>

struct gl_frame {
    uintptr_t ip;
    const char *function; /* demangled; NULL when unknown */
    const char *file;     /* source file as recorded in the debug info; NULL if none */
    int line;             /* 0 if unknown */
    const char *object;   /* path of the loaded object; NULL if none */
    const char *mangled;  /* the symbol as in the object, when it differs; else NULL */
    bool python;          /* a Python frame: ip is its code object, function its qualified name */
};

/* The frames of a stack id as reports show them (symbol/frame_filter.h): at
 * most max native and max Python ones, into out (room for 2 * max); returns
 * the count.  The one service reports, suppressions and --leak-resolution
 * read stacks through. */
typedef unsigned (*gl_stack_frames_fn)(uint32_t stack, struct gl_frame *out, unsigned max,
                                       void *arg);

#endif
