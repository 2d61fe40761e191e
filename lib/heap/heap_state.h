/* SPDX-License-Identifier: MIT */
/* State the hooks share with heap.c: whether they ever ran, and whose
 * allocations they leave out. */
#ifndef GPULEAK_HEAP_STATE_H
#define GPULEAK_HEAP_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

extern _Atomic bool gl_heap_state_seen;

/* The CUDA driver's code (heap.h, gl_heap_skip_code): start, and length (0
 * until it is known, set last). */
extern _Atomic uint64_t gl_heap_state_skip_start, gl_heap_state_skip_len;

/* Whether a chunk made from `caller` goes unrecorded. */
static inline bool gl_heap_state_skipped(uintptr_t caller)
{
    uint64_t len = atomic_load_explicit(&gl_heap_state_skip_len, memory_order_acquire);
    return caller - atomic_load_explicit(&gl_heap_state_skip_start, memory_order_relaxed) < len;
}

static inline void gl_heap_state_mark_active(void)
{
    if (__builtin_expect(!atomic_load_explicit(&gl_heap_state_seen, memory_order_relaxed), 0))
        atomic_store_explicit(&gl_heap_state_seen, true, memory_order_relaxed);
}

#endif
