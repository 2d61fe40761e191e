/* SPDX-License-Identifier: MIT */
/* Small helpers every part of gpuleak uses, written once.
 *
 * GL_ARRAY_SIZE(a): the number of elements of the array a.  Given a pointer
 * (an array parameter, a pointer that once was an array) it does not compile,
 * where sizeof p / sizeof *p would quietly divide the pointer's size.
 *
 * GL_ASSERT(cond, what): a stated invariant, checked where the code relies on
 * it: GL_ASSERT(sorted(v, n), "intervals sorted by start, disjoint").  Checked
 * only where GL_ASSERTIONS is defined (the unit tests link a core library built
 * so, lib/libgpuleak_core_checked.la); elsewhere cond is not evaluated, so it
 * may cost what it likes.  A failure writes one line (file:line, the condition,
 * what it states) to fd 2 and aborts.  This code runs inside other people's
 * processes, in signal handlers, CUDA callbacks and with the world stopped: no
 * stdio, no malloc, no lock, one write(2). */
#ifndef GPULEAK_UTIL_H
#define GPULEAK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/* 0, or a compile error (an array of negative size) if a is a pointer: only an
 * array decays to a pointer of a type other than its own. */
#define GL_UTIL_MUST_BE_ARRAY_(a)                                                                  \
    (sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0]))]) - 1)

/* A global read at every CUDA call and written rarely (configuration, knobs,
 * table pointers): all of them side by side in one section, so that a call
 * finds them in a few cache lines, not one line each among the runtime's
 * other globals (bench/cold counts a pair's first-level misses).  Nothing
 * written at every call belongs here: its line would travel between CPUs. */
#define GL_READ_MOSTLY __attribute__((section(".data.gl_read_mostly")))

/* A function of the allocation and release path (the hooks, decoding, the
 * stack memo, the Python walk, the block table, the consumers of every event,
 * the heap hooks): GCC places them together (.text.hot), ahead of the rest of
 * the runtime.  Between two of a program's driver calls the driver's own code
 * pushes gpuleak's out of the first-level instruction cache and TLB, and
 * each page of code a call runs may cost it a TLB miss; spread among the
 * runtime's cold code, the path ran on several times the pages it needs
 * (bench/code_lines counts them). */
#define GL_HOT __attribute__((hot))

#define GL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]) + GL_UTIL_MUST_BE_ARRAY_(a))

#ifdef GL_ASSERTIONS

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

/* Appends s to buf[*len, cap), cut short where it does not fit. */
static inline void gl_util_put_(char *buf, size_t cap, size_t *len, const char *s)
{
    while (*s && *len < cap)
        buf[(*len)++] = *s++;
}

static __attribute__((unused, noreturn, cold, noinline)) void
gl_util_assert_fail(const char *file, unsigned line, const char *cond, const char *what)
{
    char buf[1024], num[12];
    size_t len = 0, cap = sizeof buf - 1; /* room kept for the newline */
    size_t k = sizeof num;
    num[--k] = 0;
    do
        num[--k] = (char)('0' + line % 10);
    while ((line /= 10) && k > 0);
    gl_util_put_(buf, cap, &len, "gpuleak: ");
    gl_util_put_(buf, cap, &len, file);
    gl_util_put_(buf, cap, &len, ":");
    gl_util_put_(buf, cap, &len, num + k);
    gl_util_put_(buf, cap, &len, ": assertion failed: ");
    gl_util_put_(buf, cap, &len, cond);
    gl_util_put_(buf, cap, &len, " (");
    gl_util_put_(buf, cap, &len, what);
    gl_util_put_(buf, cap, &len, ")");
    buf[len++] = '\n';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(2, buf + off, len - off);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EINTR)
            break;
    }
    abort();
}

#define GL_ASSERT(cond, what)                                                                      \
    ((cond) ? (void)0 : gl_util_assert_fail(__FILE__, __LINE__, #cond, what))

#else

/* Not evaluated (sizeof), but still compiled: what it names stays used and
 * must still make sense. */
#define GL_ASSERT(cond, what) ((void)sizeof(!(cond)), (void)sizeof(what))

#endif

/* Whether x lies in (lo, hi], counted around a ring: an open-addressed
 * table's backward-shift removal keeps the slot at hi, whose home is x, in
 * place when slot lo empties only if its home is in that stretch. */
static inline bool gl_util_cyclic_within(size_t lo, size_t x, size_t hi)
{
    return lo <= hi ? (lo < x && x <= hi) : (lo < x || x <= hi);
}

/* Room for element n of an array grown by doubling: its capacity is the
 * power of two from 16 at or above its count, so the count alone says when it
 * is full.  False when memory ran out (*v unchanged).  Not for hot paths. */
static inline bool gl_util_grow(void **v, size_t n, size_t size)
{
    if (n >= 16 && (n & (n - 1)))
        return true; /* room left below the next power of two */
    if (n && n < 16)
        return true;
    void *p = realloc(*v, (n ? 2 * n : 16) * size);
    if (!p)
        return false;
    *v = p;
    return true;
}

#endif
