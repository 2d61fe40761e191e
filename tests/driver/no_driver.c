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
    void *fn = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    void *init = dlsym(RTLD_DEFAULT, "cuInit");
    printf("%s: no driver: dlsym(RTLD_DEFAULT, cuMemAlloc_v2) = %p, cuInit = %p\n",
           fn || init ? "FAIL" : "ok", fn, init);
    return fn || init ? 1 : 0;
}
