/* SPDX-License-Identifier: MIT */
// 100 blocks leaked from one site, 3 from another: two loss records, smaller first.
#include "fixture.h"

NOINLINE static void *small_block(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 4096)); // SITE:small_block
    return p;
}

NOINLINE static void *big_block(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 1 << 20)); // SITE:big_block
    return p;
}

int main()
{
    for (int i = 0; i < 100; i++)
        (void)small_block();
    for (int i = 0; i < 3; i++)
        (void)big_block();
    printf("leak_many: done\n");
    return 0;
}
