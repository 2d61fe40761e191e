/* SPDX-License-Identifier: MIT */
/* Binary search over arrays sorted by a uint64 key: the one search gpuleak
 * uses, from the reachability scan's inner loop to the lookup of a module.
 *
 * Keys are addresses (or handles) held in a field of the array's elements, so
 * an array is described by its base, its count, the size of an element and
 * the offset of the key in it: no callback, and once inlined (stride and
 * offset are constants at every call) the loop is the one a hand-written
 * search would compile to, without its branches: each step picks the half
 * with a conditional move, which a search over addresses, whose outcome is a
 * coin toss at each step, predicts badly.  The GL_SEARCH_* macros fill in the
 * stride and offset from a typed array and a field name.
 *
 *   gl_search_lower_bound  first index whose key is >= key (n if none)
 *   gl_search_upper_bound  first index whose key is > key (n if none)
 *   gl_search_containing   the interval [start, end) holding an address, in an
 *                          array of intervals sorted by start and disjoint
 *   gl_search_is_sorted, gl_search_are_disjoint: the invariants they need,
 *   for GL_ASSERT (common/util.h); O(n). */
#ifndef GPULEAK_SEARCH_H
#define GPULEAK_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The key of element i. */
static inline uint64_t gl_search_key_(const void *base, size_t i, size_t stride, size_t key_offset)
{
    return *(const uint64_t *)((const char *)base + i * stride + key_offset);
}

/* The first index whose key is above key (upper) or at least key (!upper).
 * upper is a constant at every call: the compare is chosen at compile time. */
static inline size_t gl_search_bound_(const void *base, size_t n, size_t stride, size_t key_offset,
                                      uint64_t key, bool upper)
{
    if (n == 0)
        return 0;
    /* Keys before lo are below the bound, and the answer is at most lo + n:
     * halve n, moving lo up when the key at lo + half is below too. */
    size_t lo = 0;
    while (n > 1) {
        size_t half = n / 2;
        uint64_t k = gl_search_key_(base, lo + half, stride, key_offset);
        lo = (upper ? k <= key : k < key) ? lo + half : lo;
        n -= half;
    }
    uint64_t k = gl_search_key_(base, lo, stride, key_offset);
    return lo + (upper ? k <= key : k < key);
}

static inline size_t gl_search_lower_bound(const void *base, size_t n, size_t stride,
                                           size_t key_offset, uint64_t key)
{
    return gl_search_bound_(base, n, stride, key_offset, key, false);
}

static inline size_t gl_search_upper_bound(const void *base, size_t n, size_t stride,
                                           size_t key_offset, uint64_t key)
{
    return gl_search_bound_(base, n, stride, key_offset, key, true);
}

/* The index of the interval holding addr (start <= addr < end), or n if none.
 * Intervals sorted by start and disjoint: the only candidate is the last one
 * that starts at or below addr. */
static inline size_t gl_search_containing(const void *base, size_t n, size_t stride,
                                          size_t start_offset, size_t end_offset, uint64_t addr)
{
    size_t i = gl_search_upper_bound(base, n, stride, start_offset, addr);
    return i > 0 && addr < gl_search_key_(base, i - 1, stride, end_offset) ? i - 1 : n;
}

static inline bool gl_search_is_sorted(const void *base, size_t n, size_t stride, size_t key_offset)
{
    for (size_t i = 1; i < n; i++)
        if (gl_search_key_(base, i - 1, stride, key_offset) >
            gl_search_key_(base, i, stride, key_offset))
            return false;
    return true;
}

/* Sorted by start, and each interval ends at or before the next one starts
 * (empty intervals, start == end, included). */
static inline bool gl_search_are_disjoint(const void *base, size_t n, size_t stride,
                                          size_t start_offset, size_t end_offset)
{
    for (size_t i = 1; i < n; i++)
        if (gl_search_key_(base, i - 1, stride, end_offset) >
                gl_search_key_(base, i, stride, start_offset) ||
            gl_search_key_(base, i - 1, stride, start_offset) >
                gl_search_key_(base, i, stride, start_offset))
            return false;
    return true;
}

/* 0, or a compile error unless field is a 64-bit unsigned key. */
#define GL_SEARCH_KEY_CHECK_(arr, field)                                                           \
    (sizeof(char[1 - 2 * !(sizeof((arr)->field) == 8 && (__typeof__((arr)->field))-1 > 0)]) - 1)
#define GL_SEARCH_FIELD_(arr, field)                                                               \
    (offsetof(__typeof__(*(arr)), field) + GL_SEARCH_KEY_CHECK_(arr, field))

/* The same, on a typed array arr of n elements and the name of its key field. */
#define GL_SEARCH_LOWER_BOUND(arr, n, field, key)                                                  \
    gl_search_lower_bound((arr), (n), sizeof *(arr), GL_SEARCH_FIELD_(arr, field), (key))
#define GL_SEARCH_UPPER_BOUND(arr, n, field, key)                                                  \
    gl_search_upper_bound((arr), (n), sizeof *(arr), GL_SEARCH_FIELD_(arr, field), (key))
#define GL_SEARCH_CONTAINING(arr, n, start_field, end_field, addr)                                 \
    gl_search_containing((arr), (n), sizeof *(arr), GL_SEARCH_FIELD_(arr, start_field),            \
                         GL_SEARCH_FIELD_(arr, end_field), (addr))
#define GL_SEARCH_IS_SORTED(arr, n, field)                                                         \
    gl_search_is_sorted((arr), (n), sizeof *(arr), GL_SEARCH_FIELD_(arr, field))
#define GL_SEARCH_ARE_DISJOINT(arr, n, start_field, end_field)                                     \
    gl_search_are_disjoint((arr), (n), sizeof *(arr), GL_SEARCH_FIELD_(arr, start_field),          \
                           GL_SEARCH_FIELD_(arr, end_field))

#endif
