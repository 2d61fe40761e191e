/* SPDX-License-Identifier: MIT */
/* Shared objects the program unloaded (dlclose) while gpuleak ran, remembered so
 * that stacks captured while they were loaded can still be symbolized at exit.
 *
 * Symbolization reads the process's maps at report time (symbolize.c): a
 * library gone by then would leave its frames as bare addresses, and a leak
 * made by a plugin that was unloaded is exactly the one whose stack matters.
 * The dlclose hook (lib/dlclose_hook.c) notes the object before the real
 * dlclose and keeps it if the call unmapped it; the symbolizer then reports it
 * from its file, at its old address, unless something else is mapped there now.
 * Only the path and addresses are kept: nothing is read at dlclose time. */
#ifndef GPULEAK_UNLOADED_OBJECTS_H
#define GPULEAK_UNLOADED_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects remembered at most; later unloads symbolize as bare addresses. */
#define GL_UNLOADED_MAX 256

struct gl_unloaded_object {
    uintptr_t bias;       /* load bias (link_map l_addr) */
    uintptr_t start, end; /* its PT_LOAD segments, [start, end) */
    const char *path;     /* the file it was loaded from */
};

/* An object about to be dlclose'd, as found before the call (with its path
 * copied: the loader frees its own copy with the object). */
struct gl_unloading {
    bool found;
    struct gl_unloaded_object obj;
    char path[4096];
};

/* Before the real dlclose(handle): find the object (nothing is kept yet). */
void gl_unloaded_objects_begin(void *handle, struct gl_unloading *u);
/* After it: if the object is no longer loaded, remember it.  Thread-safe. */
void gl_unloaded_objects_end(const struct gl_unloading *u);

/* The objects remembered, oldest first; valid until exit. */
size_t gl_unloaded_objects_count(void);
const struct gl_unloaded_object *gl_unloaded_objects_get(size_t i);

/* For tests. */
void gl_unloaded_objects_add(const struct gl_unloaded_object *o);
void gl_unloaded_objects_clear(void);

#endif
