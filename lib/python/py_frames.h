/* SPDX-License-Identifier: MIT */
/* The Python frames of the allocating thread, for threads running CPython.
 *
 * Most GPU memory is allocated from Python, where the native stack ends in
 * _PyEval_EvalFrameDefault and says nothing about which line of train.py asked.
 * This module finds a CPython 3.9 to 3.14 in the process at run time (no
 * headers, no link-time dependency: its exported symbols and one table of
 * struct offsets per minor version, facts in doc/research/python-frames) and
 * walks the calling thread's interpreter frames from inside a CUPTI callback:
 * no GIL (allocations are often made with it released), no lock, no Python
 * call, no allocation on a hit.
 *
 * A frame is kept as one tagged word (the code object's interned id and the
 * instruction's byte offset), so a mixed stack is an ordinary depot stack.
 * Code objects are interned while their frame keeps them alive (python_code.h):
 * Python frees them before gpuleak's exit report runs.
 *
 * The thread state comes from PyGILState_GetThisThreadState, the one lookup
 * that is lock-free and right whether or not the thread holds the GIL (CPython's
 * faulthandler makes the same choice).  Anything unexpected - an unknown
 * version, a free-threaded build, 3.13's or 3.14's own debug offsets
 * disagreeing with the table, a frame whose code is not a code object - turns
 * capture off (with a note naming the interpreter) or skips the frame; it
 * never guesses. */
#ifndef GPULEAK_PYTHON_FRAMES_H
#define GPULEAK_PYTHON_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A Python frame in a stored stack: bit 63 set (no user-space address has it),
 * the code's interned id in bits 32-62, the byte offset of the instruction in
 * bits 0-31 (two's complement: a frame not yet started is at -2). */
#define GL_PY_FRAME_TAG (UINT64_C(1) << 63)

static inline bool gl_py_frames_is_frame(uintptr_t w) { return (w & GL_PY_FRAME_TAG) != 0; }
static inline uintptr_t gl_py_frames_make(uint32_t code_id, int32_t byte_offset)
{
    return GL_PY_FRAME_TAG | (uintptr_t)(code_id & 0x7fffffffu) << 32 | (uint32_t)byte_offset;
}
static inline uint32_t gl_py_frames_code(uintptr_t w) { return (uint32_t)(w >> 32) & 0x7fffffffu; }
static inline int32_t gl_py_frames_offset(uintptr_t w) { return (int32_t)(uint32_t)w; }

/* Look for CPython in the process and set capture up.  Call outside callbacks
 * (it uses dlsym and dl_iterate_phdr).  The runtime calls it once, when CUDA
 * starts (inject.c): in a Python program that is from Python; a program that
 * starts CUDA first and embeds Python later gets no Python frames.  Returns
 * the minor version (9..14), or -1 with one line in note saying why there are
 * no Python frames (nothing in note when the process simply has no Python):
 * the interpreter named when it is one the walker does not know ("CPython 3.15
 * is not known to this gpuleak (3.9 to 3.14 are)", a free-threaded build,
 * Python 2).  Capture turns itself off for good when the interpreter starts
 * finalizing, and after a walk that faulted (its reads are guarded:
 * read_guard.h). */
int gl_py_frames_init(char *note, size_t notelen);

/* The same with the interpreter's symbols looked up through lookup instead of
 * dlsym(RTLD_DEFAULT): tests make up interpreters with it. */
typedef void *(*gl_py_lookup)(const char *name);
int gl_py_frames_init_from(gl_py_lookup lookup, char *note, size_t notelen);

/* Capture is set up and not turned off. */
bool gl_py_frames_enabled(void);
/* --python-frames=no, or a test. */
void gl_py_frames_disable(void);

/* Up to max frames of the calling thread, innermost first, as tagged words.
 * Frames run by one call of the interpreter loop form a group (3.11+ runs
 * Python-to-Python calls in one C call; 3.9/3.10 make one per frame): ends[g]
 * is one past the last frame of group g; *ngroups of them (at most max).
 * Returns the number of frames; 0 if the thread runs no Python. */
unsigned gl_py_frames_capture(uintptr_t *frames, unsigned max, uint16_t *ends, unsigned *ngroups);

/* Whether a return address lies in the interpreter's loaded object (libpython,
 * or a python executable with the interpreter linked in), and whether in its
 * interpreter loop (_PyEval_EvalFrameDefault: one native frame per group). */
bool gl_py_frames_in_interpreter(uintptr_t ip);
bool gl_py_frames_in_eval_loop(uintptr_t ip);

/* The minor version found (9..14); -1 if none. */
int gl_py_frames_minor(void);

/* Walks that faulted (read_guard.h) and gave up: after the first, capture is
 * off. */
unsigned long gl_py_frames_faults(void);

#endif
