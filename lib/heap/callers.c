/* SPDX-License-Identifier: MIT */
#include "heap/callers.h"

#include <stdatomic.h>
#include <stddef.h>

#include "common/util.h"

/* Slot i holds the address of id i + 1; 0 is empty.  Probing is linear from
 * the address's hash, so an address always lands in the same slot once it has
 * one: two threads racing to add it meet at the same compare-and-swap. */
static _Atomic uintptr_t slots[GL_CALLERS_MAX];
static _Atomic uint32_t used;

static inline uint32_t hash(uintptr_t ip)
{
    return (uint32_t)((ip * 0x9e3779b97f4a7c15ULL) >> 48) & (GL_CALLERS_MAX - 1);
}

GL_HOT uint32_t gl_callers_id(uintptr_t ip)
{
    if (!ip)
        return 0;
    uint32_t h = hash(ip);
    for (uint32_t probe = 0; probe < 64; probe++) {
        uint32_t i = (h + probe) & (GL_CALLERS_MAX - 1);
        uintptr_t cur = atomic_load_explicit(&slots[i], memory_order_acquire);
        if (cur == ip)
            return i + 1;
        if (cur == 0) {
            /* Keep a quarter free: probes stay short, and a full table answers 0. */
            if (atomic_load_explicit(&used, memory_order_relaxed) >= GL_CALLERS_MAX / 4 * 3)
                return 0;
            uintptr_t expected = 0;
            if (atomic_compare_exchange_strong_explicit(
                    &slots[i], &expected, ip, memory_order_acq_rel, memory_order_acquire)) {
                atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
                return i + 1;
            }
            if (expected == ip)
                return i + 1;
        }
    }
    return 0;
}

uintptr_t gl_callers_ip(uint32_t id)
{
    if (id == 0 || id > GL_CALLERS_MAX)
        return 0;
    return atomic_load_explicit(&slots[id - 1], memory_order_acquire);
}

uint32_t gl_callers_limit(void) { return GL_CALLERS_MAX; }

void gl_callers_reset(void)
{
    for (size_t i = 0; i < GL_CALLERS_MAX; i++)
        atomic_store_explicit(&slots[i], 0, memory_order_relaxed);
    atomic_store(&used, 0);
}
