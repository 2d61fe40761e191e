/* SPDX-License-Identifier: MIT */
/* dlsym(RTLD_NEXT) from a library: with gpuleak's dlsym in front, "next" must
 * still mean after this library (libnext_b's nx_target), not after gpuleak. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

__attribute__((visibility("default"))) int nx_target(void) { return 1; }

__attribute__((visibility("default"))) int nx_probe(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "nx_target");
    return next ? next() : 0;
}
