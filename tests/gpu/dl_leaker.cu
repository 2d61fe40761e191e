/* SPDX-License-Identifier: MIT */
// A CUDA library that a program dlopens and dlcloses before it exits (see dl_main.c):
// dl_leak_block() allocates and frees 10 blocks, then leaks one of 2,222,222 bytes.
// Expected: the leak's stack names dl_leak_block at this file's line, although the
// library is no longer loaded when the report is written.
#include <string.h>

#include "fixture.h"

extern "C" __attribute__((visibility("default"))) NOINLINE int dl_leak_block(void)
{
    for (int i = 0; i < 10; i++) {
        void *q;
        CHECK(cudaMalloc(&q, 4096 + 4096 * (size_t)i));
        CHECK(cudaFree(q));
    }
    void *p;
    CHECK(cudaMalloc(&p, 2222222)); // SITE:dl_leak
    memset(&p, 0, sizeof p);        /* no copy of the pointer left behind */
    return 0;
}
