/* SPDX-License-Identifier: MIT */
/* API errors: the record of what the checks found (track/checks.h) and of the
 * growth the checkpoints found (check/growth.h).  Each error is one
 * fixed-size record: what happened, the stack where, and, where known, the
 * block concerned with the stacks that allocated and freed it.
 *
 * Errors are grouped into contexts, as Valgrind does: the same kind at the same
 * stack is one context, printed once, counted every time.  The first
 * occurrence of a context goes to gl_errors_sink (the report layer prints it at
 * once, in the program's thread, and says which suppression matched); the
 * contexts are kept for the exit report's ERROR SUMMARY and the XML and JSON
 * documents. */
#ifndef GPULEAK_ERRORS_H
#define GPULEAK_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error_kind.h"
#include "event/block.h"
#include "event/dispatch.h"

/* Why, within a kind. */
enum gl_error_detail {
    GL_ERD_NONE = 0,
    GL_ERD_NEVER_ALLOCATED, /* INVALID_FREE: no block, live or quarantined, holds it */
    GL_ERD_INTERIOR,        /* INVALID_FREE: inside a live block, not at its start */
    GL_ERD_FREED_INTERIOR,  /* INVALID_FREE: inside a freed block, not at its start */
    GL_ERD_VMM_MAPPED,      /* INVALID_FREE/MISMATCHED: a cuMemMap'd address */
    GL_ERD_WRONG_CALL,      /* MISMATCHED_FREE: the block's kind needs another call */
    GL_ERD_HANDLE_RELEASED, /* DOUBLE_FREE: cuMemRelease of a VMM handle released already,
                               kept only by its mappings (the block is that handle) */
    /* OBSERVER_MISMATCH: enum gl_mismatch's values (event/event.h) */
};

#define GL_ERRF_WRITE 0x1  /* a range error's access writes (else reads) */
#define GL_ERRF_BLOCK 0x2  /* block is set (live, or freed when GL_ERRF_FREED) */
#define GL_ERRF_FREED 0x4  /* block was freed: free_stack/free_tid/free_api are set */
#define GL_ERRF_DEVMEM 0x8 /* OOM: device_free/device_total are set */
/* OBSERVER_MISMATCH: the call did not make memory (a free, a release, a
 * copy...); else it did, of kind mem_kind. */
#define GL_ERRF_OTHER_CALL 0x10

struct gl_api_error {
    uint8_t kind;   /* enum gl_error_kind */
    uint8_t detail; /* enum gl_error_detail */
    uint16_t api;   /* the call that erred (enum gl_api) */
    uint32_t flags; /* GL_ERRF_* */
    uint32_t stack; /* where it happened (depot id, 0 = not captured) */
    uint32_t tid;
    int16_t device;                     /* of the call (OOM: the device asked for; -1 host) */
    uint8_t mem_kind;                   /* OOM: the kind asked for; MISMATCH: made */
    uint64_t addr;                      /* the address released, or the range's start */
    uint64_t size;                      /* the range's length, or the bytes asked for */
    struct gl_freed_block block;        /* GL_ERRF_BLOCK */
    uint64_t device_free, device_total; /* GL_ERRF_DEVMEM */
    struct {                            /* GROWTH (size: the live bytes now) */
        uint64_t from_bytes, blocks;    /* bytes before the streak; blocks (or tensors) now */
        uint64_t from_blocks;           /* blocks (or tensors) before the streak */
        uint32_t checkpoints;           /* the streak's length */
        uint32_t ordinal;               /* of the checkpoint it was found at */
        uint8_t framework;              /* enum gl_framework of a framework's site, else 0 */
        char checkpoint[64];            /* its name */
    } growth;
};

/* A context: the first error of its kind and stack, and how often it came. */
struct gl_error_context {
    struct gl_api_error first;
    uint64_t count;
    /* The sink's token for the suppression that matched (the report layer's
     * struct gl_supp, opaque here), NULL if none did. */
    const void *suppressed_by;
};

/* Called for the first error of each context, on the thread that made it,
 * inside the CUDA call (no CUDA calls from it).  Returns a token naming the
 * suppression that matched (then it prints nothing), or NULL.  NULL sink:
 * errors are only counted.  Called with e NULL once, when contexts run out. */
typedef const void *(*gl_error_sink_fn)(const struct gl_api_error *e);
extern gl_error_sink_fn gl_errors_sink;

/* How stacks are captured for errors made by calls whose stack was not
 * captured (NULL in unit tests and replays: such errors carry stack 0). */
extern uint32_t (*gl_errors_capture_stack)(void);

/* How an OOM report learns the device's free and total memory (NVML in the
 * runtime; NULL: unknown).  Must not call CUDA. */
extern bool (*gl_errors_device_memory)(int device, uint64_t *free_bytes, uint64_t *total_bytes);

/* reset forgets every error; after_fork frees the lock. */
extern const struct gl_component gl_errors_component;

/* Record an error: counted, and sunk if its context is new.  e->stack is
 * captured here when 0. */
void gl_errors_report(struct gl_api_error *e);

/* Totals for ERROR SUMMARY: errors and contexts, split by suppressed or not. */
struct gl_api_error_counts {
    uint64_t errors, contexts, suppressed, suppressed_contexts;
    uint64_t by_kind[GL_ERR_NKINDS]; /* unsuppressed errors per kind */
};
void gl_errors_counts(struct gl_api_error_counts *c);

/* The contexts, in order of first occurrence, copied into out (up to max);
 * returns how many there are. */
size_t gl_errors_contexts(struct gl_error_context *out, size_t max);

#endif
