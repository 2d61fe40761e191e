/* SPDX-License-Identifier: MIT */
/* One stack from a native walk and the Python frames of the same moment.
 *
 * The native stack of a Python program runs from the CUDA call through the
 * extension's C/C++ code into the interpreter: libpython's call machinery and
 * one _PyEval_EvalFrameDefault per interpreter call, each running a group of
 * Python frames (python_frames.h).  The mixed stack keeps the native frames
 * outside the interpreter, replaces each interpreter-loop frame with its group
 * of Python frames, and drops the rest of the interpreter's frames: so a
 * Python callback called from C (sorted(key=...), an autograd Function) shows
 * the C frames between its Python frames where they were.  Groups the native
 * walk did not reach follow at the end, outermost last; if no interpreter-loop
 * frame is known at all, every group goes at the first interpreter frame and
 * the stack ends there.  Below the outermost
 * Python frame the stack ends at the next interpreter frame: what follows is
 * Py_RunMain and the C start-up (for a program embedding Python, its own
 * frames below the interpreter are not kept).
 *
 * Native and Python frames are counted apart (at most keep_native and
 * keep_python of each): a PyTorch allocation sits under some twenty C++
 * frames, and --num-callers of them should not push every Python frame out. */
#ifndef GPULEAK_MIXED_STACK_H
#define GPULEAK_MIXED_STACK_H

#include <stdbool.h>
#include <stdint.h>

struct gl_python_stack {
    const uintptr_t *frames; /* tagged words, innermost first */
    unsigned n;
    const uint16_t *ends; /* ends[g]: one past group g's last frame */
    unsigned ngroups;
};

/* Where a native frame lies (gl_py_frames_in_interpreter, gl_py_frames_in_eval_loop). */
struct gl_interpreter_where {
    bool (*in_interpreter)(uintptr_t ip);
    bool (*in_eval_loop)(uintptr_t ip);
};

/* Merge native (innermost first, already trimmed of gpuleak's own frames) with
 * py into out (room for max); returns the count.  *used: how many of the
 * native frames the result depends on (a prefix): any native stack that
 * begins with those gives the same result with the same py.  Where the merge
 * stopped at the outermost Python frame kept, that is some thirty frames of a
 * PyTorch allocation's ninety; else nnative (the result depends on the
 * stack's end too: where the walk stopped, or that no interpreter-loop frame
 * was found in all of it). */
unsigned gl_mixed_stack(const uintptr_t *native, unsigned nnative, const struct gl_python_stack *py,
                        const struct gl_interpreter_where *where, unsigned keep_native,
                        unsigned keep_python, uintptr_t *out, unsigned max, unsigned *used);

#endif
