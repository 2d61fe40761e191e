/* SPDX-License-Identifier: MIT */
/* No CUDA driver loaded: a lookup of a driver entry point in the default scope
 * finds nothing, as without gpuleak (whose hooks are exported under the
 * driver's names); programs use this to tell whether CUDA is there. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    (void)dlerror();
    void *fn = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    const char *why = dlerror();
    void *init = dlsym(RTLD_DEFAULT, "cuInit");
    int bad = fn || init || !why;
    printf("%s: no driver: dlsym(RTLD_DEFAULT, cuMemAlloc_v2) = %p (dlerror: %s), cuInit = %p\n",
           bad ? "FAIL" : "ok", fn, why ? why : "none", init);
    return bad;
}
