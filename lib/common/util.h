/* The smallest helpers.  (A fuller version comes with the small-helpers work.) */
#ifndef GPULEAK_UTIL_H
#define GPULEAK_UTIL_H

#include <stdlib.h>

#define GL_ARRAY_SIZE(a)                                                                           \
    (sizeof(a) / sizeof((a)[0]) +                                                                  \
     0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0]))]))

#ifdef GL_ASSERTIONS
#define GL_ASSERT(cond, what)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)
#else
#define GL_ASSERT(cond, what) ((void)0)
#endif

#endif
