/* SPDX-License-Identifier: MIT */
// cudaDeviceReset() mid-run frees everything of the context: the block leaked
// before it is not a leak; the one leaked after it is.
#include "fixture.h"

NOINLINE static void *before_reset(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 111111));
    return p;
}

NOINLINE static void *after_reset(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 222222)); // SITE:after_reset
    return p;
}

int main()
{
    (void)before_reset();
    CHECK(cudaDeviceReset());
    (void)after_reset();
    printf("ctx_reset: done\n");
    return 0;
}
