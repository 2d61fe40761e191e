/* SPDX-License-Identifier: MIT */
/* Another tool's dlsym wrapper, preloaded beside gpuleak's (tests/driver.test):
 * it counts the lookups it sees and passes each on to the next dlsym.  With
 * both in the process the program must still get gpuleak's hooks and the
 * driver's answers.  (A wrapper like this one, with a frame of its own, makes
 * dlsym(RTLD_NEXT) relative to itself, gpuleak or not: that check is skipped.) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>

static int calls;

__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
    static void *(*next)(void *, const char *);
    if (!next)
        next = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!next)
        next = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return next ? next(handle, name) : NULL;
}

__attribute__((destructor)) static void said(void)
{
    fprintf(stderr, "other_dlsym: %d lookups\n", calls);
}
