/* SPDX-License-Identifier: MIT */
/* A Python frame of a stored stack, as a report shows it: function (the
 * code's qualified name), file and line, decoded from the copy made when the
 * frame was captured (python/py_code.h).  The address shown is the code
 * object's, as it was then. */
#ifndef GPULEAK_PYTHON_SYMBOLS_H
#define GPULEAK_PYTHON_SYMBOLS_H

#include <stdint.h>

#include "common/frame.h"

/* Fill out for a tagged Python frame (python/py_frames.h); an unknown code
 * id gives "???" with no file. */
void gl_py_symbols_symbolize(uintptr_t tagged, struct gl_frame *out);

#endif
