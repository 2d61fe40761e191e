/* SPDX-License-Identifier: MIT */
/* Reference points for leak checks made while the program runs (gpuleak.h).
 *
 * A reference is what one leak check found: the identity and size of each loss
 * record, and the totals per leak kind.  A later check compares with it, as
 * Valgrind's VALGRIND_DO_ADDED_LEAK_CHECK compares with the previous search:
 * records that are new, grew or changed, each with its delta.
 *
 * A named checkpoint is a reference plus a position in the allocation numbering
 * (gl_tracker_seq_mark): blocks numbered at or above it were allocated after it.
 * The unnamed reference, "the last check", is replaced by every check that sees
 * all outstanding blocks.
 *
 * Not thread-safe: callers hold the leak-check lock (leak_run.h). */
#ifndef GPULEAK_CHECKPOINTS_H
#define GPULEAK_CHECKPOINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/leak_check.h"

/* A loss record's identity: leak kind (after Cached rules), stack, memory kind
 * and API, as gl_leak_check groups blocks; plus its size then. */
struct gl_ref_record {
    uint32_t kind, stack, mem_api;
    bool suppressed;
    uint64_t bytes, blocks;
};

struct gl_leak_ref {
    struct gl_ref_record *recs; /* sorted by identity; tool-mapped */
    size_t n, mapped;
    struct gl_leak_totals kind[GL_LEAK_NKINDS]; /* unsuppressed, per kind */
    struct gl_leak_totals suppressed;
};

#define GL_CHECKPOINT_NAME_MAX 64 /* with the terminating NUL */

/* The identity of a record, as stored. */
uint32_t gl_checkpoints_record_api(const struct gl_loss_record *r);

/* Replace *ref with what r found.  Returns 0, -1 if out of memory (*ref is then
 * empty: the next comparison sees every record as new). */
int gl_checkpoints_ref_take(struct gl_leak_ref *ref, const struct gl_leak_result *r);
void gl_checkpoints_ref_free(struct gl_leak_ref *ref);
/* The reference's record with r's identity, or NULL (a new record). */
const struct gl_ref_record *gl_checkpoints_ref_find(const struct gl_leak_ref *ref,
                                                    const struct gl_loss_record *r);

/* The previous check's reference (empty until a check has run). */
struct gl_leak_ref *gl_checkpoints_last_check(void);

struct gl_checkpoint {
    char name[GL_CHECKPOINT_NAME_MAX];
    uint64_t seq; /* blocks numbered >= seq were allocated after the checkpoint */
    struct gl_leak_ref ref;
    struct gl_checkpoint *next;
};

/* The checkpoint of that name, or NULL. */
struct gl_checkpoint *gl_checkpoints_find(const char *name);
/* The checkpoint of that name, made if new (its ref empty, seq 0); NULL if out
 * of memory or the name is empty or too long. */
struct gl_checkpoint *gl_checkpoints_get(const char *name);
/* Forget every checkpoint and the last check (tests, fork children). */
void gl_checkpoints_reset(void);

#endif
