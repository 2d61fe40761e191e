/* SPDX-License-Identifier: MIT */
/* Anonymous writable mappings the program made itself with mmap (an arena of
 * an allocator it implements, Python's object arenas): they are scanned like
 * heap chunks.  Mappings made inside malloc (by jemalloc, say) are the
 * allocator's, whose chunks are recorded one by one: they are left out.
 *
 * Few and long-lived: a sorted array of intervals under a spinlock; munmap and
 * mremap cut and move intervals. */
#ifndef GPULEAK_ANON_MAPS_H
#define GPULEAK_ANON_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void gl_anon_maps_add(uint64_t start, uint64_t len, uint32_t caller);
/* Any part of [start, start + len) stops being a mapping (munmap, or MAP_FIXED
 * over it). */
void gl_anon_maps_remove(uint64_t start, uint64_t len);

/* The same, saying whether any of it was recorded and with which caller (for
 * mremap, which moves a mapping). */
bool gl_anon_maps_take(uint64_t start, uint64_t len, uint32_t *caller);

size_t gl_anon_maps_count(void);
typedef void (*gl_anon_map_visit_fn)(uint64_t start, uint64_t len, uint32_t caller, void *arg);
void gl_anon_maps_foreach(gl_anon_map_visit_fn fn, void *arg, bool trylock_only);
size_t gl_anon_maps_memory_bytes(void);

void gl_anon_maps_reset(void);
void gl_anon_maps_after_fork_child(void);

#endif
