/* SPDX-License-Identifier: MIT */
/* Which loaded object an address belongs to, for the few objects whose frames a
 * stack must lose: gpuleak itself, CUPTI, the CUDA driver, and the CUDA runtime.
 *
 * gl_modules_refresh() scans the loaded objects (dl_iterate_phdr) and must be
 * called outside CUPTI callbacks; gl_modules_role() is a lock-free check of a few
 * address ranges, cheap enough for every frame of every captured stack. */
#ifndef GPULEAK_MODULES_H
#define GPULEAK_MODULES_H

#include <stdint.h>

enum gl_modules_role {
    GL_MOD_OTHER = 0,
    GL_MOD_SELF,   /* libgpuleak */
    GL_MOD_CUPTI,  /* libcupti */
    GL_MOD_DRIVER, /* libcuda */
    GL_MOD_CUDART, /* libcudart (shared); a static cudart lives in the program */
};

void gl_modules_refresh(void);
/* Changes whenever the ranges change: results derived from them are stale. */
unsigned gl_modules_generation(void);
enum gl_modules_role gl_modules_role(uintptr_t addr);

/* Classify a loaded object by its file name (basename matching); exposed for tests. */
enum gl_modules_role gl_modules_role_for_path(const char *path);

/* For tests: add a range by hand. */
void gl_modules_add_range(uintptr_t start, uintptr_t end, enum gl_modules_role role);
void gl_modules_clear(void);

#endif
