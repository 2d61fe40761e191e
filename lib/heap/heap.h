/* SPDX-License-Identifier: MIT */
/* What the program's allocator hands out, and who asked for it.
 *
 * The runtime interposes the allocator (hooks.c: malloc and its family, C++'s
 * operator new, mmap and its family) and records every live chunk and every
 * anonymous writable mapping the program makes, each with the return address of
 * the code that asked for it (interned, callers.h).  The leak check uses them
 * to tell which device blocks the program can still reach (check/reach.h):
 * only chunks made by the program and the libraries it uses are followed,
 * never those made by the CUDA driver, runtime or CUPTI, which keep their own
 * copies of every device pointer.
 *
 * Everything here runs inside the program's allocations: no malloc (the tables
 * live in tool memory, mapped with raw system calls), short spinlocked
 * sections, nothing that can recurse into the hooks.
 *
 * The hooks work when the runtime is preloaded (the launcher does it): loaded
 * only through CUDA_INJECTION64_PATH, or in a program with an allocator of its
 * own linked in statically, they never run, gl_heap_active() stays false and
 * the leak check says it cannot tell reachability. */
#ifndef GPULEAK_HEAP_H
#define GPULEAK_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A live chunk or mapping, as a snapshot gives it. */
struct gl_heap_object {
    uint64_t start;
    uint64_t size;
    uint32_t caller; /* callers.h id: who allocated it (0: unknown) */
    uint32_t is_mapping;
};

/* The CUDA driver's code, [start, end): chunks it allocates go unrecorded.
 * The leak check never follows them (check/owners.c: the driver keeps its
 * own copy of every device pointer), and the driver allocates in the calls
 * gpuleak tracks (a host chunk in each stream-ordered allocation), where the
 * table's insert was a sixth of gpuleak's time a pair (bench/RESULTS.md).
 * An entry left at such a chunk's address (a free the hooks did not see)
 * is taken out, as a record would have replaced it.  Their frees still look
 * them up: a chunk made elsewhere (by the C library for the driver) may be
 * freed there, and then the filter of chunk_table.c answers in one load.
 * The first call wins; later ones are ignored. */
void gl_heap_skip_code(uint64_t start, uint64_t end);

/* Have the hooks seen an allocation in this process? */
bool gl_heap_active(void);

/* Live chunks and mappings now (both counts; for sizing snapshots). */
size_t gl_heap_chunk_count(void);
size_t gl_heap_mapping_count(void);

/* Copy live chunks, then live mappings, into out (at most cap); returns how
 * many there are, which may exceed cap (the rest are left out).  With
 * world_stopped, shards whose lock another (stopped) thread holds are read
 * as they are instead of waited for: see check/world.h. */
size_t gl_heap_snapshot(struct gl_heap_object *out, size_t cap, bool world_stopped);

/* Bytes of tool memory the tables use. */
size_t gl_heap_memory_bytes(void);

/* After fork() in the child: locks held by the parent's other threads. */
void gl_heap_after_fork_child(void);

/* Is this thread inside an interposed allocator call (the C library's malloc
 * may hold its lock)?  Defined by the hooks, in the injected runtime only. */
bool gl_heap_hooks_busy(void);

/* Tests: forget every chunk and mapping. */
void gl_heap_reset(void);
/* Tests: act as if the hooks had run (or not). */
void gl_heap_set_active(bool active);

#endif
