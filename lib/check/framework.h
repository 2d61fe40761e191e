/* SPDX-License-Identifier: MIT */
/* What a framework's caching allocator says about its own memory.
 *
 * PyTorch and CuPy keep freed tensors' memory for reuse, so CUDA - and
 * gpuleak - sees a few large segments, not the tensors.  The Python module
 * (python/gpuleak) reads the framework's own accounting at each checkpoint
 * and hands it over here: how much of what it reserves its tensors use, and,
 * for growth detection with caching on, its per-tensor record grouped by
 * Python stack (PyTorch's memory snapshot).  The exit report shows the first
 * beside the cached memory; growth.h watches the second like any site.
 *
 * Called by the client API, outside CUDA callbacks, under the leak-run lock. */
#ifndef GPULEAK_FRAMEWORK_VIEW_H
#define GPULEAK_FRAMEWORK_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gl_framework { GL_FW_NONE, GL_FW_PYTORCH, GL_FW_CUPY, GL_FW_JAX, GL_FW_N };

/* "PyTorch", "CuPy", "JAX"; and back (GL_FW_NONE if unknown). */
const char *gl_framework_name(enum gl_framework f);
enum gl_framework gl_framework_parse(const char *name);

#define GL_FW_MAX_DEVICES 16

struct gl_framework_usage {
    enum gl_framework framework;
    int device;
    uint64_t in_use, reserved;
    uint64_t checkpoint; /* the ordinal of the checkpoint it was read at */
    char checkpoint_name[64];
};

/* Record a framework's usage on a device, as read at the checkpoint about to
 * be taken (the next one).  Returns 0, -1 for a bad framework or device. */
int gl_framework_set_usage(enum gl_framework f, int device, uint64_t in_use, uint64_t reserved);

/* The usages recorded, one per framework and device, in out (up to max);
 * returns how many. */
size_t gl_framework_usages(struct gl_framework_usage *out, size_t max);

/* One site of the framework's record for the coming checkpoint: a stack of
 * Python frames, text lines "FILE:LINE:FUNCTION" innermost first, and what
 * its live tensors hold.  Interned into the stack depot as Python frames.
 * Returns 0, -1 if the stack could not be made. */
int gl_framework_add_site(enum gl_framework f, const char *frames, uint64_t bytes, uint64_t blocks);

struct gl_framework_site {
    uint32_t stack;
    enum gl_framework framework;
    uint64_t bytes, blocks;
};
/* The sites handed over since the last checkpoint; taking them empties the
 * list.  *n gets the count; the array stays valid until the next take. */
const struct gl_framework_site *gl_framework_take_sites(size_t *n);

/* Called when a checkpoint is taken: stamps the usages read for it. */
void gl_framework_checkpoint_taken(uint64_t ordinal, const char *name);

void gl_framework_reset(void); /* tests, fork children */

#endif
