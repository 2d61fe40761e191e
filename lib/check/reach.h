/* SPDX-License-Identifier: MIT */
/* Reachability: which targets (device blocks) the program can still reach
 * through its host memory, found the way LeakSanitizer and Valgrind find it.
 *
 * Conservative: every aligned 8-byte word of a root is a possible pointer.  A
 * word that points into a traversable object (a live heap chunk or mapping of
 * the program's, heap.h) makes that object reached, and its words are scanned
 * in turn (a flood fill with an explicit stack); a word that points into a
 * target marks the target: at its start, reachable; only inside, possibly
 * lost.  A word equal to a target's handle (a VMM handle, a CUDA array) is a
 * pointer to its start.  Objects that are not traversable (memory of the CUDA
 * driver, runtime, CUPTI, or gpuleak itself) are never entered: the driver
 * keeps copies of every device pointer, and would make every leak reachable.
 *
 * Pure: it reads memory at the addresses it is given and writes only the
 * caller's arrays and scratch, so unit tests run it over fabricated memory.
 * It allocates nothing (the world may be stopped, check/world.h), and with a
 * fault guard a region that turns out unreadable is skipped, not fatal.
 *
 * Then the objects no root led to (lost host memory) are read too: a target
 * only they point to is GL_REACH_VIA_LOST, held through lost memory.
 *
 * Speed: a word is first checked against the address ranges of targets and of
 * objects, then against hash sets of their 2 MiB / 64 KiB granules, and only
 * then looked up by binary search; most words end at the first compare. */
#ifndef GPULEAK_REACH_H
#define GPULEAK_REACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gl_reach_state {
    GL_REACH_NONE = 0,
    GL_REACH_INTERIOR = 1,
    GL_REACH_START = 2,
    /* Nothing the roots lead to points to it, but a lost object does (a
     * traversable object no root reached: leaked host memory): Valgrind's
     * indirectly lost.  held_by names the object. */
    GL_REACH_VIA_LOST = 3,
};

/* Memory to scan word by word: a root, or an object's contents. */
struct gl_reach_range {
    uint64_t start, end;
};

/* Something that may be entered: sorted by start, disjoint. */
struct gl_reach_object {
    uint64_t start, end;
    bool traversable;
    uint32_t tag; /* the caller's: a heap chunk's allocation caller id, say */
};

/* Something whose reachability is asked: sorted by start, disjoint ranges.
 * size 0 means the target has no address range, only a handle. */
struct gl_reach_target {
    uint64_t start, end;
    uint64_t handle;  /* another value naming it, or 0 */
    uint32_t owner;   /* the caller's index: several targets may name one owner */
    uint32_t held_by; /* out, GL_REACH_VIA_LOST: the lost object's index + 1 */
    uint8_t state;    /* out: enum gl_reach_state */
};

struct gl_reach_stats {
    uint64_t root_bytes;      /* scanned in roots */
    uint64_t object_bytes;    /* scanned in reached objects */
    uint64_t objects_reached; /* entered */
    uint64_t faults;          /* ranges skipped because they could not be read */
    uint64_t lost_bytes;      /* read in lost objects, the last pass */
};

struct gl_reach {
    const struct gl_reach_range *roots;
    size_t nroots;
    const uint64_t *root_words; /* registers of stopped threads */
    size_t nroot_words;
    const struct gl_reach_object *objects;
    size_t nobjects;
    struct gl_reach_target *targets;
    size_t ntargets;
    bool guard_faults; /* catch SIGSEGV/SIGBUS while reading (real scans) */
    struct gl_reach_stats stats;
};

/* Scratch the scan of r needs (it depends on the ranges, not only their count). */
size_t gl_reach_scratch_bytes(const struct gl_reach *r);

/* Run.  targets[].state are set; returns 0, or -1 if scratch is too small. */
int gl_reach_run(struct gl_reach *r, void *scratch, size_t scratch_bytes);

/* Sorting helpers (no allocation, usable with the world stopped). */
void gl_reach_sort_objects(struct gl_reach_object *v, size_t n);
void gl_reach_sort_targets(struct gl_reach_target *v, size_t n);

#endif
