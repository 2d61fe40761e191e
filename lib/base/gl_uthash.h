/* SPDX-License-Identifier: MIT */
/* uthash, configured for use inside the runtime: its memory comes from the tool
 * allocator (never the program's malloc), and running out of memory fails the one
 * insertion instead of exiting the program. */
#ifndef GPULEAK_GL_UTHASH_H
#define GPULEAK_GL_UTHASH_H

#include "base/tool.h"

#define uthash_malloc(sz) gl_tool_alloc(sz)
#define uthash_free(ptr, sz) gl_tool_free((ptr), (sz))
#define HASH_NONFATAL_OOM 1

#include <uthash.h>

#endif
