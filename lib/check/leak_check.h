/* SPDX-License-Identifier: MIT */
/* The leak check: from a snapshot of outstanding blocks to sorted loss records.
 *
 * Blocks with the same allocation stack and the same leak kind form one loss
 * record, as in Valgrind (and the same memory kind and API, which the stack
 * implies whenever there is one); records are sorted by total bytes (indirect
 * included), ascending, so the biggest leak is printed last, next to the
 * summary.  Classification into leak
 * kinds is a separate step (classify_fn).  Blocks the program asked never to
 * report (GL_BLK_IGNORED) count as in use and form no record.
 *
 * --leak-resolution=low or med (struct gl_leak_merge) loosens "the same
 * stack" to "the same first 2 or 4 frames, as reports show them", Valgrind's
 * merging of loss records: the blocks of one record may then have stacks of
 * their own, and the record shows one of them. */
#ifndef GPULEAK_LEAK_CHECK_H
#define GPULEAK_LEAK_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"
#include "common/leak_kind.h"
#include "track/block_table.h"

struct gl_supp;

struct gl_loss_record {
    enum gl_leak_kind kind;
    uint32_t stack; /* its blocks' stack; merged (gl_leak_merge), the lowest id of theirs */
    uint64_t bytes; /* its own blocks' */
    uint64_t indirect_bytes; /* of the blocks its blocks lead (--scan-device): Valgrind's
                                "N (D direct, I indirect) bytes" */
    uint64_t blocks;
    uint64_t seq_min, seq_max;
    uint64_t devices;           /* bit d: a block on device d (d < 62); see the bits below */
    uint32_t size_unknown;      /* blocks whose size could not be resolved */
    struct gl_block_info first; /* the block with the lowest allocation number */
    size_t block_begin;         /* its blocks: result.blocks[block_begin .. + blocks) */
    const struct gl_supp *suppressed_by; /* set by suppress.h; NULL if shown */
    const struct gl_supp *cached_by;     /* the Cached entry that reclassified it */
};

#define GL_RECORD_UNKNOWN_DEVICE_BIT 62 /* device memory whose device is unknown */
#define GL_RECORD_HOST_BIT 63           /* pinned or registered host memory */

struct gl_leak_totals {
    uint64_t bytes, blocks;
};

struct gl_leak_result {
    const struct gl_block_info *blocks; /* the caller's array, now in record order */
    struct gl_loss_record *records;     /* sorted; tool-mapped */
    size_t nrecords;
    size_t records_bytes;
    struct gl_leak_totals kind[GL_LEAK_NKINDS];
    struct gl_leak_totals suppressed;
    struct gl_leak_totals in_use;
    struct gl_leak_totals imported; /* of in_use: opened from other processes (GL_BLK_IMPORTED) */
    struct gl_leak_totals ignored;  /* of in_use: never reported (GL_BLK_IGNORED) */
};

typedef enum gl_leak_kind (*gl_classify_fn)(const struct gl_block_info *b, void *arg);

/* Frames compared at most (--leak-resolution=med). */
#define GL_LEAK_MERGE_MAX_FRAMES 4

/* --leak-resolution: blocks of one leak kind (and memory kind and API) whose
 * stacks agree on their first `frames` frames as shown form one record (a
 * stack shorter than that agrees only with one as short).  Native frames
 * agree by address, Python frames by code object and line.  The record's
 * stack is the lowest stack id among its blocks': one of theirs, and the same
 * from one check to the next while a block of it stays.  frames 0: blocks
 * whose stacks are the same (high, the default, as when merge is NULL). */
struct gl_leak_merge {
    unsigned frames;                 /* 0, or up to GL_LEAK_MERGE_MAX_FRAMES */
    gl_stack_frames_fn stack_frames; /* the frames shown (common/frame.h) */
    void *arg;
};

/* Classify, group and sort.  blocks is reordered so that each record's blocks are
 * contiguous, oldest first (ignored blocks last).  indirect (may be NULL): per
 * block, in the order given, the bytes of the lost blocks it leads
 * (device_scan.h).  merge (may be NULL): --leak-resolution.  Returns 0, -1 if
 * out of memory. */
int gl_leak_check(struct gl_block_info *blocks, size_t n, const uint64_t *indirect,
                  gl_classify_fn classify, void *arg, const struct gl_leak_merge *merge,
                  struct gl_leak_result *out);
void gl_leak_check_result_free(struct gl_leak_result *r);

/* The classifier: a custom pool's free part (GL_BLK_POOL, pools.h) and what
 * stream-ordered pools and graph memory keep unused are cached;
 * otherwise what the reachability scan found (reachability.h): a pointer to the
 * start, still reachable; only interior pointers, possibly lost; pointed to only
 * from other lost blocks, indirectly lost; nothing, definitely lost. */
enum gl_leak_kind gl_leak_check_classify(const struct gl_block_info *b, void *arg);

#endif
