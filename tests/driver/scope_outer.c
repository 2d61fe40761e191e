/* SPDX-License-Identifier: MIT */
/* dlsym(RTLD_DEFAULT) searches its caller's local scope too: a library opened
 * with RTLD_LOCAL (as Python opens extension modules) finds the symbols of its
 * own dependencies there.  With gpuleak's dlsym in front it must still. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

int scope_inner(void);

__attribute__((visibility("default"))) int scope_probe(void)
{
    int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "scope_inner");
    return f ? f() + (scope_inner() - 42) : 0;
}
