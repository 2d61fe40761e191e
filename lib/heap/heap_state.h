/* SPDX-License-Identifier: MIT */
/* State the hooks share with heap.c: whether they ever ran. */
#ifndef GPULEAK_HEAP_STATE_H
#define GPULEAK_HEAP_STATE_H

#include <stdatomic.h>
#include <stdbool.h>

extern _Atomic bool gl_heap_state_seen;

static inline void gl_heap_state_mark_active(void)
{
    if (__builtin_expect(!atomic_load_explicit(&gl_heap_state_seen, memory_order_relaxed), 0))
        atomic_store_explicit(&gl_heap_state_seen, true, memory_order_relaxed);
}

#endif
