/* SPDX-License-Identifier: MIT */
/* The reachability of a snapshot's blocks, in the live process: the heap the
 * hooks recorded (heap.h), the threads stopped (world.h), the owners of
 * modules and chunks (owners.h), the scan itself (reach.h).
 *
 * Roots: the writable segments of the program's own modules; the stacks of the
 * checking thread (from its caller context up, see below) and of every stopped
 * thread (from its stack pointer, less the
 * red zone); their registers; the main thread's static TLS.  Followed: the
 * program's and NVIDIA libraries' live chunks and anonymous mappings, and
 * pinned host blocks (the program's memory too).  The result goes into each
 * block's flags (GL_BLK_REACH_START, GL_BLK_REACH_INTERIOR): snapshot copies
 * only, never the live table.
 *
 * Runs outside any CUDA callback, under the leak-run lock. */
#ifndef GPULEAK_REACHABILITY_H
#define GPULEAK_REACHABILITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check/owners.h"
#include "track/block_table.h"

/* In a snapshot's copies of blocks (block_table.h's flags leave these free). */
#define GL_BLK_REACH_START 0x20    /* a pointer to its start (or its handle) is held */
#define GL_BLK_REACH_INTERIOR 0x40 /* only pointers into it are held */
#define GL_BLK_INDIRECT 0x80       /* lost, and pointed to from another lost block */

/* Where the program's part of the checking thread's stack begins, and the
 * program's callee-saved registers there: taken at gpuleak's entry point (the
 * client API's functions, the exit report), so that gpuleak's own frames, and
 * whatever stale values they hold, are not mistaken for the program's. */
struct gl_caller_context {
    uint64_t frame;    /* scanned from here up */
    uint64_t regs[12]; /* scanned too: the callee-saved registers the program had */
};
#if defined(__x86_64__)
#define GL_SAVE_CALLEE_REGS(r)                                                                     \
    __asm__ volatile("mov %%rbx, 0(%0)\n\tmov %%rbp, 8(%0)\n\tmov %%r12, 16(%0)\n\t"               \
                     "mov %%r13, 24(%0)\n\tmov %%r14, 32(%0)\n\tmov %%r15, 40(%0)"                 \
                     :                                                                             \
                     : "r"(r)                                                                      \
                     : "memory")
#elif defined(__aarch64__)
#define GL_SAVE_CALLEE_REGS(r)                                                                     \
    __asm__ volatile("stp x19, x20, [%0, #0]\n\tstp x21, x22, [%0, #16]\n\t"                       \
                     "stp x23, x24, [%0, #32]\n\tstp x25, x26, [%0, #48]\n\t"                      \
                     "stp x27, x28, [%0, #64]\n\tstp x29, x30, [%0, #80]"                          \
                     :                                                                             \
                     : "r"(r)                                                                      \
                     : "memory")
#else
#define GL_SAVE_CALLEE_REGS(r) ((void)(r))
#endif
/* regs is scanned whole: the words a platform has no register for are zeroed,
 * never left holding the stack's stale contents (a freed block's address, say). */
#define GL_CALLER_CONTEXT(cc)                                                                      \
    do {                                                                                           \
        memset((cc)->regs, 0, sizeof(cc)->regs);                                                   \
        GL_SAVE_CALLEE_REGS((cc)->regs);                                                           \
        (cc)->frame = (uint64_t)(uintptr_t)__builtin_frame_address(0);                             \
    } while (0)

/* A device block held only through lost host memory: the host block. */
struct gl_reach_holder {
    uint64_t key;     /* the device block's */
    uint64_t bytes;   /* the host block's size */
    uintptr_t caller; /* who allocated it (return address of the malloc call; 0: unknown) */
};

struct gl_reachability {
    bool available;               /* false: every block counts as unreferenced */
    struct gl_reach_holder *held; /* malloc'ed (gl_reachability_free) */
    size_t nheld;
    const char *why_not; /* when not available: one phrase */
    uint64_t root_bytes, object_bytes, objects_reached, faults;
    size_t threads_stopped, threads_skipped;
    size_t searched;     /* blocks searched for (0 where no scan was asked for here) */
    size_t held_by_rule; /* blocks not searched for: a Cached rule holds them */
    double seconds;
};

/* Mark the blocks the program still references.  Blocks flagged ignored, and
 * custom pools' own blocks, are left alone.  held (NULL: none): blocks not
 * searched for, marked referenced (a caching allocator's, which its tables
 * point to: suppress.h, gl_suppress_held_blocks); none left to search for, no
 * thread is stopped and nothing is read.
 *
 *   learn the owners (loader, libdw) -> size every buffer from counts taken
 *   now, with room -> stop the world: /proc/self/maps, the heap, the roots ->
 *   scan -> resume -> (the heap outgrew the buffers: size again, at most three
 *   times) -> the marks into the blocks, the figures -v prints. */
void gl_reachability(struct gl_block_info *blocks, size_t n, const uint8_t *held,
                     const struct gl_caller_context *cc, gl_function_name_fn name, void *arg,
                     struct gl_reachability *out);

/* The host block that alone holds the block of key, or NULL. */
const struct gl_reach_holder *gl_reachability_holder(const struct gl_reachability *r, uint64_t key);
void gl_reachability_free(struct gl_reachability *r);

/* Tests: called when an attempt's buffers are sized, just before the world
 * stops (attempt 0, 1, ...), so that a test can grow the heap past them and
 * see the retry.  NULL in the runtime. */
extern void (*gl_reachability_after_sizing)(unsigned attempt);

#endif
