/* SPDX-License-Identifier: MIT */
// 8 threads allocate and free concurrently; each leaks one block from the same site.
// Expected: one loss record "32,768 bytes in 8 blocks", exact alloc/free counts.
#include <pthread.h>

#include "fixture.h"

#define NTHREADS 8
#define PAIRS 2000

NOINLINE static void *leak_from_thread(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 4096)); // SITE:thread_leak
    return p;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        CHECK(cudaMalloc(&p, 512 + (i % 7) * 512));
        CHECK(cudaFree(p));
    }
    (void)leak_from_thread();
    return NULL;
}

int main()
{
    CHECK(cudaFree(0));
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads: done\n");
    return 0;
}
