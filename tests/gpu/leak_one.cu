/* SPDX-License-Identifier: MIT */
// One leaked block from a known call site among many freed ones.
// Expected: one loss record of 1,048,576 bytes, stack cudaMalloc <- make_buffer <- main.
#include "fixture.h"

NOINLINE static void *make_buffer(size_t n)
{
    void *p = nullptr;
    CHECK(cudaMalloc(&p, n)); // SITE:make_buffer
    return p;
}

int main()
{
    for (int i = 0; i < 10; i++) {
        void *q;
        CHECK(cudaMalloc(&q, 4096));
        CHECK(cudaFree(q));
        q = nullptr; // no stale pointer into a later block that reuses the address
    }
    void *leak = make_buffer(1 << 20); // SITE:main_calls_make_buffer
    (void)leak;
    printf("leak_one: done\n");
    return 0;
}
