/* SPDX-License-Identifier: MIT */
/* Raising a shared maximum (peaks) without a lock: a compare-and-swap only
 * when the value is exceeded, so that the common case is one relaxed load. */
#ifndef GPULEAK_ATOMIC_MAX_H
#define GPULEAK_ATOMIC_MAX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Make *max at least v; true if this call raised it. */
static inline bool gl_atomic_raise(_Atomic uint64_t *max, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(max, memory_order_relaxed);
    while (v > cur)
        if (atomic_compare_exchange_weak_explicit(max, &cur, v, memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    return false;
}

#endif
