/* SPDX-License-Identifier: MIT */
/* The loaded objects as the saved log names them: native frames are written
 * as (module index, offset from its load bias), so a reader can symbolize
 * them from the files later, on another machine, and check by build-id that
 * the file is the one that ran.
 *
 * The table only grows: objects are added by a scan of the loader's list
 * (dl_iterate_phdr, outside CUDA calls: at the start, after dlopen, before a
 * report) and never removed (an unloaded object's frames still name it).  A
 * lookup, on the writer's path inside CUDA calls, reads the published entries
 * without a lock, newest first, so that an object loaded where an unloaded
 * one was wins. */
#ifndef GPULEAK_LOG_MODULES_H
#define GPULEAK_LOG_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_LOG_MODULES_MAX 4096
#define GL_LOG_BUILD_ID_MAX 64

struct gl_log_module {
    uintptr_t bias, start, end; /* load bias; its PT_LOAD span [start, end) */
    uint8_t build_id[GL_LOG_BUILD_ID_MAX];
    unsigned build_id_len;
    const char *path; /* tool memory, kept */
};

/* Add the objects loaded now and not in the table; for each new one, emit(index,
 * module) in the order added.  Returns how many were added.  Serialized by the
 * caller. */
unsigned gl_log_modules_scan(void (*emit)(unsigned index, const struct gl_log_module *m));

/* The module holding ip: its index, and *offset = ip - bias; -1 if none. */
int gl_log_modules_find(uintptr_t ip, uint64_t *offset);

/* Forget every module (tests; a fork child's log is its own). */
void gl_log_modules_reset(void);

/* An ELF file's GNU build-id note (NT_GNU_BUILD_ID), read from the file; its
 * length, 0 if it has none or cannot be read. */
unsigned gl_log_modules_file_build_id(const char *path, uint8_t out[GL_LOG_BUILD_ID_MAX]);

#endif
