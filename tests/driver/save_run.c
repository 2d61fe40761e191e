/* SPDX-License-Identifier: MIT */
/* A program for tests/save.test, run under gpuleak --save against the fake
 * driver (fake_cuda.c): threads allocate and free device memory at once, a
 * few blocks stay live, one free names an address never allocated, and then
 * the program either exits or kills itself with SIGKILL, as the OOM killer
 * would, while its threads still run.
 *   save_run exit|kill THREADS ROUNDS
 * Live at the end: 3,000 bytes from keep_in_main, and 1,000 + i bytes from
 * each thread i (keep_in_thread).  THREADS 0: main does one thread's work
 * itself (a single thread: its statistics are exact).
 *   save_run oom 0 0
 * Runs out of memory twice (the fake driver holds 64 blocks): first with
 * keep_in_main's block and 63 of 10,000 bytes from fill_big live (633,000
 * bytes), which it frees, then with 63 of 100 bytes from fill_small (9,300),
 * which stay; it exits with 9,300 + 3,000 bytes live. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuleak.h"

static int rounds;
static pthread_barrier_t kept;

__attribute__((noinline)) static CUdeviceptr keep_in_thread(size_t n)
{
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, n) != CUDA_SUCCESS)
        printf("FAIL: cuMemAlloc %zu\n", n);
    return p;
}

static void work(size_t i)
{
    for (int r = 0; r < rounds; r++) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, 256) == CUDA_SUCCESS)
            cuMemFree(p);
    }
    keep_in_thread(1000 + i);
}

static void *worker(void *arg)
{
    work((size_t)arg);
    pthread_barrier_wait(&kept);
    return NULL;
}

__attribute__((noinline)) static CUdeviceptr keep_in_main(void)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, 3000);
    return p;
}

/* Blocks of n bytes until the driver runs out: how many it gave. */
static int fill(CUdeviceptr *p, int max, size_t n)
{
    int k = 0;
    while (k < max && cuMemAlloc(&p[k], n) == CUDA_SUCCESS)
        k++;
    return k;
}

__attribute__((noinline)) static int fill_big(CUdeviceptr *p, int max)
{
    return fill(p, max, 10000);
}

__attribute__((noinline)) static int fill_small(CUdeviceptr *p, int max)
{
    return fill(p, max, 100);
}

static int out_of_memory(void)
{
    CUdeviceptr p[64];
    int big = fill_big(p, 64);
    for (int i = 0; i < big; i++)
        cuMemFree(p[i]);
    int small = fill_small(p, 64);
    printf("save_run: out of memory after %d big blocks, then %d small ones\n", big, small);
    return big == 63 && small == 63 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 4 ||
        (strcmp(argv[1], "exit") && strcmp(argv[1], "kill") && strcmp(argv[1], "oom"))) {
        fprintf(stderr, "usage: save_run exit|kill|oom THREADS ROUNDS\n");
        return 2;
    }
    int nthreads = atoi(argv[2]);
    rounds = atoi(argv[3]);
    cuInit(0);
    keep_in_main();
    if (strcmp(argv[1], "oom") == 0)
        return out_of_memory();
    gpuleak_checkpoint("kept");       /* a MARK in the log: --read names the last one */
    cuMemFree((CUdeviceptr)0xBAD000); /* an invalid free: its stack is saved too */
    if (nthreads == 0) {
        work(0);
        printf("save_run: done\n");
        return 0;
    }
    pthread_t t[64];
    pthread_barrier_init(&kept, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads && i < 64; i++)
        pthread_create(&t[i], NULL, worker, (void *)(size_t)i);
    pthread_barrier_wait(&kept); /* every thread has its block */
    printf("save_run: pid %d, %d threads kept their blocks\n", (int)getpid(), nthreads);
    fflush(stdout);
    if (strcmp(argv[1], "kill") == 0)
        kill(getpid(), SIGKILL);
    for (int i = 0; i < nthreads && i < 64; i++)
        pthread_join(t[i], NULL);
    printf("save_run: done\n");
    return 0;
}
