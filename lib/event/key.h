/* SPDX-License-Identifier: MIT */
/* Block keys: a block is known by its address, or, for objects the driver
 * names by handle (VMM allocations, arrays, pools), by the handle tagged with
 * a namespace in the top bits.  Device and host addresses share the unified
 * address space below 2^57, so the tags cannot collide with them.  The
 * namespaces are part of the event format: append, never renumber. */
#ifndef GPULEAK_KEY_H
#define GPULEAK_KEY_H

#include <stdint.h>

#define GL_KEY_NS_SHIFT 60
#define GL_KEY_NS_MASK (0xfULL << GL_KEY_NS_SHIFT)

enum gl_key_ns {
    GL_NS_ADDR = 0,
    GL_NS_VMM_HANDLE = 0x8,
    GL_NS_ARRAY = 0x9,
    GL_NS_MIPMAP = 0xa,
    /* Custom pools' sub-allocations: their addresses lie inside a tracked block,
     * so they need keys of their own.  A pool's first sub-allocation may start at
     * the pool's own address. */
    GL_NS_POOL_SUB = 0xb,
    GL_NS_MEMPOOL = 0xc,      /* a CUmemoryPool handle */
    GL_NS_GRAPH_MEMORY = 0xd, /* a device's graph memory: the ordinal */
};

static inline uint64_t gl_key_make(enum gl_key_ns ns, uint64_t v)
{
    return (v & ~GL_KEY_NS_MASK) | ((uint64_t)ns << GL_KEY_NS_SHIFT);
}
static inline uint64_t gl_key_value(uint64_t key) { return key & ~GL_KEY_NS_MASK; }
static inline enum gl_key_ns gl_key_ns(uint64_t key)
{
    return (enum gl_key_ns)(key >> GL_KEY_NS_SHIFT);
}

#endif
