/* SPDX-License-Identifier: MIT */
/* libunwind, loaded with dlopen(RTLD_LOCAL) when CUDA initializes.
 *
 * Linking it would put libunwind.so.8 into every process gpuleak is preloaded
 * into, and into the global symbol scope: it exports the C++ ABI's
 * _Unwind_RaiseException & co., which would then replace libgcc's for the
 * program's own exceptions.  Loaded locally, it is used by gpuleak alone, and
 * only in processes that use CUDA. */
#ifndef GPULEAK_UNWIND_H
#define GPULEAK_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Load libunwind and set its per-thread cache.  Returns true, or false with one
 * line in err. */
bool gl_unwind_load(char *err, size_t errlen);
bool gl_unwind_loaded(void);

/* Return addresses of the calling stack, innermost first (unw_backtrace). */
int gl_unwind_backtrace(uintptr_t *frames, int max);

/* One frame of a walk (for the stack memo, stack_memo.h, and the exit
 * report's stack scan): its ip (a return address), the stack pointer it had at
 * the call, its frame pointer register (rbp, which a frame of variable size
 * finds its return address by) and where that value lies in memory, saved by a
 * frame it called (0: in no memory the walk knows of); signal: the frame is a
 * signal trampoline (the frame after it was interrupted, not called). */
struct gl_unwind_frame {
    uintptr_t ip, sp, fp, fp_at;
    int signal;
};
/* The calling stack frame by frame (unw_step), innermost caller first; returns
 * the number of frames (at most max). */
int gl_unwind_walk_frames(struct gl_unwind_frame *frames, int max);

/* Profiling aid: walk the stack frame by frame with unw_step, timing each step;
 * fills ips and ns (per step) and returns the number of frames. */
int gl_unwind_step_profile(uintptr_t *ips, uint64_t *ns, int max);

#endif
