/* SPDX-License-Identifier: MIT */
// Ground truth for the leak kinds: every block has a known fate, and a size that
// says which it is, so the GPU suite can check each record's kind by its size.
//
//   1 MiB   pointer dropped                          -> definitely lost
//   2 MiB   kept in a global                         -> still reachable
//   3 MiB   kept in a malloc'd struct (global ptr)   -> still reachable
//   3 x 4 MiB kept in a global std::vector           -> still reachable
//   5 MiB   only ptr + 256 kept                      -> possibly lost
//   6 MiB   kept in a thread's stack while it waits  -> still reachable
//   table of 4 pointers (32 bytes) in device memory, dropped     -> definitely lost
//   4 x 7 MiB pointed to only from that device table
//           -> definitely lost without --scan-device, indirectly lost with it
//
// Every allocation is made in a function of its own that returns nothing the
// caller keeps, and the stack is scrubbed before exit, so no stale copy of a
// dropped pointer stays in a live frame or register (a conservative scan would
// rightly call such a block reachable).
#include <pthread.h>
#include <string.h>

#include <vector>

#include "fixture.h"

static const size_t MiB = 1 << 20;

struct holder {
    int tag;
    void *block;
};

void *g_kept;                     // SITE:global
static holder *g_struct;          // heap struct reached from a global
static std::vector<void *> g_vec; // its buffer is operator new's
static char *g_interior;          // only an interior pointer

NOINLINE static void lose(size_t n)
{
    void *p;
    CHECK(cudaMalloc(&p, n)); // SITE:lose
}

NOINLINE static void keep_global(size_t n)
{
    CHECK(cudaMalloc(&g_kept, n)); // SITE:keep_global
}

NOINLINE static void keep_in_struct(size_t n)
{
    g_struct = (holder *)malloc(sizeof *g_struct);
    g_struct->tag = 1;
    CHECK(cudaMalloc(&g_struct->block, n)); // SITE:keep_in_struct
}

NOINLINE static void keep_in_vector(size_t n)
{
    for (int i = 0; i < 3; i++) {
        void *p;
        CHECK(cudaMalloc(&p, n)); // SITE:keep_in_vector
        g_vec.push_back(p);
    }
}

NOINLINE static void keep_interior(size_t n)
{
    void *p;
    CHECK(cudaMalloc(&p, n)); // SITE:keep_interior
    g_interior = (char *)p + 256;
    memset(&p, 0, sizeof p);
}

NOINLINE static void lose_tree(size_t n)
{
    void *children[4];
    void **table;
    for (int i = 0; i < 4; i++)
        CHECK(cudaMalloc(&children[i], n));              // SITE:lose_tree_child
    CHECK(cudaMalloc((void **)&table, sizeof children)); // SITE:lose_tree_table
    CHECK(cudaMemcpy(table, children, sizeof children, cudaMemcpyHostToDevice));
    memset(children, 0, sizeof children);
    table = nullptr;
}

/* A thread that holds its block in a local while it waits: its stack is a root. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready;

NOINLINE static void *waiter(void *)
{
    void *volatile mine;
    void *p;
    CHECK(cudaMalloc(&p, 6 * MiB)); // SITE:waiter
    mine = p;
    memset(&p, 0, sizeof p);
    pthread_mutex_lock(&lock);
    ready = 1;
    pthread_cond_broadcast(&cond);
    for (;;) /* until the process ends */
        pthread_cond_wait(&cond, &lock);
    return mine;
}

/* Overwrite the dead stack below main's frame, where the helpers' locals were. */
NOINLINE static void scrub_stack()
{
    volatile char junk[64 * 1024];
    memset((char *)junk, 0, sizeof junk);
}

int main()
{
    lose(1 * MiB);
    keep_global(2 * MiB);
    keep_in_struct(3 * MiB);
    keep_in_vector(4 * MiB);
    keep_interior(5 * MiB);
    lose_tree(7 * MiB);

    pthread_t t;
    pthread_create(&t, nullptr, waiter, nullptr);
    pthread_mutex_lock(&lock);
    while (!ready)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);

    scrub_stack();
    printf("reach: done\n");
    return 0;
}
