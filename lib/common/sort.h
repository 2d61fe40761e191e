/* SPDX-License-Identifier: MIT */
/* Sorting that allocates nothing: the one sort of gpuleak's code that may run
 * with the world stopped, in a callback, or where malloc is the program's
 * (qsort may allocate: glibc's did, for a merge sort).
 *
 *   GL_SORT_DEFINE(name, type, less)
 *
 * defines static void name(type *v, size_t n), sorting v in place by less, a
 * macro or function taking two const type * and saying whether the first
 * sorts strictly before the second:
 *
 *   #define BY_START(a, b) ((a)->start < (b)->start)
 *   GL_SORT_DEFINE(sort_spans, struct span, BY_START)
 *
 * An introsort, typed so that the compare is inlined: quicksort with a
 * median-of-three pivot, heapsort for a part that recursion made deep (so
 * O(n log n) whatever the input), insertion sort for short runs.  Not stable.
 * Stack: O(log n), recursing into the smaller part and looping on the other. */
#ifndef GPULEAK_SORT_H
#define GPULEAK_SORT_H

#include <stddef.h>

/* Parts this short are insertion sorted. */
#define GL_SORT_SHORT 16
/* Parts longer than this take their pivot from nine elements, not three. */
#define GL_SORT_NINTHER 128

/* 2 floor(log2 n): the depth past which a part goes to heapsort. */
static inline int gl_sort_depth_limit(size_t n)
{
    int d = 0;
    while (n > 1) {
        n >>= 1;
        d += 2;
    }
    return d;
}

#define GL_SORT_SWAP_(type, a, b)                                                                  \
    do {                                                                                           \
        type t_ = (a);                                                                             \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

#define GL_SORT_DEFINE(name, type, less)                                                           \
    static void name##_sift_(type *v, size_t root, size_t n)                                       \
    {                                                                                              \
        for (;;) {                                                                                 \
            size_t child = 2 * root + 1;                                                           \
            if (child >= n)                                                                        \
                return;                                                                            \
            if (child + 1 < n && less(&v[child], &v[child + 1]))                                   \
                child++;                                                                           \
            if (!less(&v[root], &v[child]))                                                        \
                return;                                                                            \
            GL_SORT_SWAP_(type, v[root], v[child]);                                                \
            root = child;                                                                          \
        }                                                                                          \
    }                                                                                              \
    static void name##_heapsort_(type *v, size_t n)                                                \
    {                                                                                              \
        for (size_t i = n / 2; i-- > 0;)                                                           \
            name##_sift_(v, i, n);                                                                 \
        for (size_t end = n; end-- > 1;) {                                                         \
            GL_SORT_SWAP_(type, v[0], v[end]);                                                     \
            name##_sift_(v, 0, end);                                                               \
        }                                                                                          \
    }                                                                                              \
    static inline size_t name##_median_(const type *v, size_t a, size_t b, size_t c)               \
    {                                                                                              \
        if (less(&v[b], &v[a]))                                                                    \
            GL_SORT_SWAP_(size_t, a, b);                                                           \
        if (less(&v[c], &v[b]))                                                                    \
            b = less(&v[c], &v[a]) ? a : c;                                                        \
        return b;                                                                                  \
    }                                                                                              \
    static void name##_intro_(type *v, size_t n, int depth)                                        \
    {                                                                                              \
        while (n > GL_SORT_SHORT) {                                                                \
            if (depth-- == 0) {                                                                    \
                name##_heapsort_(v, n);                                                            \
                return;                                                                            \
            }                                                                                      \
            /* the pivot: the median of three, of three medians of three in                        \
             * longer parts (organ pipes and sawtooths fool one median) */                         \
            size_t m = n / 2, p = name##_median_(v, 0, m, n - 1);                                  \
            if (n > GL_SORT_NINTHER) {                                                             \
                size_t s = n / 8;                                                                  \
                p = name##_median_(v, name##_median_(v, 0, s, 2 * s),                              \
                                   name##_median_(v, m - s, m, m + s),                             \
                                   name##_median_(v, n - 1 - 2 * s, n - 1 - s, n - 1));            \
            }                                                                                      \
            /* Hoare's partition: the pivot is in v, so each scan stops at it                      \
             * or before; after a swap, what was swapped stops them */                             \
            const type pivot = v[p];                                                               \
            size_t i = 0, j = n - 1;                                                               \
            for (;;) {                                                                             \
                while (less(&v[i], &pivot))                                                        \
                    i++;                                                                           \
                while (less(&pivot, &v[j]))                                                        \
                    j--;                                                                           \
                if (i >= j)                                                                        \
                    break;                                                                         \
                GL_SORT_SWAP_(type, v[i], v[j]);                                                   \
                i++;                                                                               \
                j--;                                                                               \
            }                                                                                      \
            /* [0, j] and [j + 1, n): recurse into the smaller, loop on the larger */              \
            if (j + 1 < n - j - 1) {                                                               \
                name##_intro_(v, j + 1, depth);                                                    \
                v += j + 1;                                                                        \
                n -= j + 1;                                                                        \
            } else {                                                                               \
                name##_intro_(v + j + 1, n - j - 1, depth);                                        \
                n = j + 1;                                                                         \
            }                                                                                      \
        }                                                                                          \
        for (size_t i = 1; i < n; i++) {                                                           \
            type t = v[i];                                                                         \
            size_t j = i;                                                                          \
            for (; j > 0 && less(&t, &v[j - 1]); j--)                                              \
                v[j] = v[j - 1];                                                                   \
            v[j] = t;                                                                              \
        }                                                                                          \
    }                                                                                              \
    static inline void name(type *v, size_t n) { name##_intro_(v, n, gl_sort_depth_limit(n)); }

#endif
