/* SPDX-License-Identifier: MIT */
// exit() called from a thread other than main: the report is still written, and
// the program's exit status (3) survives.
#include <pthread.h>
#include <unistd.h>

#include "fixture.h"

/* The pointer is dropped before exit(): one still in the exiting thread's
 * frame would rightly make the block reachable. */
NOINLINE static void leak(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 333333)); // SITE:exit_thread_leak
}

static void *worker(void *arg)
{
    (void)arg;
    leak();
    printf("exit_thread: exiting from a thread\n");
    fflush(stdout);
    exit(3);
}

int main()
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    for (;;)
        pause();
}
