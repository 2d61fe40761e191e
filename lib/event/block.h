/* SPDX-License-Identifier: MIT */
/* A block's record: what the state stage (track/tracker.h) keeps of each live
 * block, and what the observers of an event receive beside it
 * (event/dispatch.h): the block an event made, freed or released.  Snapshots
 * for the leak run are arrays of it. */
#ifndef GPULEAK_BLOCK_H
#define GPULEAK_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "event/key.h"

struct gl_block_info {
    uint64_t key;   /* address, or namespaced handle */
    uint64_t size;  /* bytes */
    uint64_t seq;   /* allocation number, 1-based, process-wide */
    uint64_t ctx;   /* CUcontext the block belongs to (0: none) */
    uint64_t aux;   /* stream (stream-ordered), handle key (VMM map records),
                       live mappings (VMM handles) */
    uint32_t stack; /* stack depot id */
    uint32_t tid;   /* allocating thread */
    int16_t device; /* ordinal, -1 host/unknown */
    uint8_t kind;   /* enum gl_mem_kind */
    uint8_t flags;  /* GL_BLK_* */
    uint16_t api;   /* enum gl_api of the driver entry point */
    uint16_t refs;  /* VMM handles: 1 + retains - releases (mappings count in aux) */
};

#define GL_BLK_SIZE_UNKNOWN 0x1 /* resolve at report time */
#define GL_BLK_RELEASED 0x2     /* VMM handle: cuMemRelease'd, alive through mappings */
#define GL_BLK_IMPORTED 0x4     /* opened from another process (IPC, shareable handle) */
#define GL_BLK_IGNORED 0x8      /* never reported (gpuleak_ignore, gpuleak_disable) */
#define GL_BLK_POOL 0x10        /* a custom pool: its sub-allocations are blocks of their own */

/* Whether a block is a range of addresses (a handle is none): what the
 * indexes by address range keep. */
static inline bool gl_block_has_range(const struct gl_block_info *b)
{
    return gl_key_ns(b->key) == GL_NS_ADDR && b->size > 0;
}

/* A block as it was when freed, and who freed it (the quarantine, and the API
 * errors that name a freed block). */
struct gl_freed_block {
    struct gl_block_info block; /* as it was when freed (block.stack: where allocated) */
    uint32_t free_stack;        /* stack depot id of the free, 0 if not kept */
    uint32_t free_tid;
    uint16_t free_api; /* enum gl_api */
};

#endif
