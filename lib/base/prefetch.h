/* SPDX-License-Identifier: MIT */
/* Fetching a line for writing ahead of a store.
 *
 * __builtin_prefetch(p, 1) compiles to a read prefetch unless the build
 * targets CPUs with PREFETCHW (baseline x86-64 does not): the line then
 * arrives shared, and a copy in another core's cache (a ring's reader, a
 * thread that last wrote it) is invalidated only at the store, which waits
 * for it.  PREFETCHW takes the line exclusive at once; CPUs without it run
 * it as a NOP (its opcode was a hint before it was one). */
#ifndef GPULEAK_PREFETCH_H
#define GPULEAK_PREFETCH_H

static inline __attribute__((always_inline)) void gl_prefetch_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw %0" ::"m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

#endif
