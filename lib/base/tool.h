/* SPDX-License-Identifier: MIT */
/* The tool's own memory, kept apart from the program's.
 *
 * The runtime never calls malloc from its hot paths: the program's allocator may
 * be interposed (by gpuleak itself, to tag chunk owners for the reachability scan,
 * or by jemalloc/tcmalloc), may hold locks, and must not see the tool's memory.
 * Everything comes from mmap'd regions: fixed-size slabs for objects that come and
 * go (blocks, depot entries) and a bump arena for what lives until exit.
 * All functions are thread-safe. */
#ifndef GPULEAK_TOOL_ALLOC_H
#define GPULEAK_TOOL_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* What gl_tool_map takes for a request of n bytes: whole pages. */
static inline size_t gl_tool_page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* Zeroed memory straight from mmap, for large or long-lived tables; NULL on failure. */
void *gl_tool_map(size_t size);
void gl_tool_unmap(void *p, size_t size);
/* Make mapped pages present and writable now, so that the first write to each
 * does not fault later on a hot path (MADV_POPULATE_WRITE where the kernel has
 * it, else one write a page). */
void gl_tool_populate(void *p, size_t bytes);

/* Size-classed allocator for uthash's bucket arrays and other variable objects.
 * Sizes above 64 KiB go to gl_tool_map. */
void *gl_tool_alloc(size_t size);
void gl_tool_free(void *p, size_t size);

/* A slab of fixed-size objects with a free list.  Not locked: each owner (a table
 * shard) already holds its own lock. */
struct gl_slab {
    size_t obj_size;
    void *free_list;
    char *cur, *end;     /* bump region of the current chunk */
    void *chunks;        /* list of mapped chunks, linked through their first word */
    size_t chunks_bytes; /* bytes mapped for this slab */
};
void gl_tool_slab_init(struct gl_slab *s, size_t obj_size);
void *gl_tool_slab_get(struct gl_slab *s); /* zeroed object, NULL on failure */
void gl_tool_slab_put(struct gl_slab *s, void *obj);
/* Unmap every chunk: all objects of the slab become invalid. */
void gl_tool_slab_destroy(struct gl_slab *s);

/* After fork() in the child: make the allocator's locks usable again. */
void gl_tool_after_fork_child(void);

/* Bytes the tool has mapped in total (for -v and the memory-overhead benchmark). */
size_t gl_tool_mapped_bytes(void);

#endif
