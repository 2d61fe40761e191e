/* SPDX-License-Identifier: MIT */
/* The client API from CUDA C++ (gpuleak.h through nvcc): checkpoints, checks
 * of every mode, counts, ignore, disable/enable, and a custom pool whose
 * sub-allocations carry their own stacks.  Counts are asserted here; the GPU
 * suite checks the printed checks and the exit report.  Exit status: 0, or 1
 * if an expectation failed (each one printed). */
#include <string.h>

#include "fixture.h"
#include "gpuleak.h"

static int failures;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "client_api: line %d: expected %s\n", __LINE__, #cond);                \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* A user's arena: one cudaMalloc'ed block carved into sub-allocations. */
struct Arena {
    char *base;
    size_t size, used;

    NOINLINE void *alloc(size_t n)
    {
        void *p = base + used;
        used += (n + 255) & ~(size_t)255;
        EXPECT(gpuleak_pool_alloc(base, p, n) == 0); // SITE:arena_alloc
        return p;
    }
    NOINLINE void release(void *p) { EXPECT(gpuleak_pool_free(base, p) == 0); }
};

NOINLINE static void *device_block(size_t n)
{
    void *p;
    CHECK(cudaMalloc(&p, n)); // SITE:device_block
    return p;
}

/* The program's only copies of some pointers are disguised, as if it had
 * dropped them: the checks find no reference (definitely lost), and the
 * program can still free them later. */
static uintptr_t hide(void *p) { return (uintptr_t)p ^ 0xa5a5a5a5a5a5a5a5ULL; }
static void *unhide(uintptr_t h) { return (void *)(h ^ 0xa5a5a5a5a5a5a5a5ULL); }

/* Zero the dead stack below main's frame, where the callees left copies of
 * the pointers they returned: a check's frames do not overwrite every slot,
 * and a conservative scan rightly counts a copy it finds (reach.cu says more). */
NOINLINE static void scrub_stack()
{
    volatile char junk[16 * 1024];
    memset((char *)junk, 0, sizeof junk);
}

static unsigned long long definite(const char *since, unsigned long long *blocks)
{
    struct gpuleak_counts c;
    EXPECT(gpuleak_count_leaks(since, &c) == 0);
    *blocks = c.blocks[GPULEAK_DEFINITE];
    return c.bytes[GPULEAK_DEFINITE];
}

int main()
{
    unsigned long long blocks;
    EXPECT(gpuleak_running() == 1);
    CHECK(cudaFree(0)); /* start CUDA */
    EXPECT(gpuleak_checkpoint("start") == 0);

    /* Two blocks from one call site: one loss record that grows. */
    uintptr_t ab[2];
    for (int i = 0; i < 2; i++) {
        ab[i] = hide(device_block(1 << 20)); // SITE:main_loop
        if (i == 0) {
            EXPECT(definite("start", &blocks) == 1 << 20 && blocks == 1);
            /* Check 1: full, every block (no reference yet); becomes the last check. */
            EXPECT(gpuleak_leak_check(GPULEAK_CHECK_FULL, NULL) == 1);
        }
    }
    scrub_stack();
    /* Check 2: "2,097,152 (+1,048,576) bytes in 2 (+1) blocks are definitely lost". */
    EXPECT(gpuleak_leak_check(GPULEAK_CHECK_ADDED, NULL) == 1);
    /* Check 3: nothing grew since check 2. */
    EXPECT(gpuleak_leak_check(GPULEAK_CHECK_ADDED, NULL) == 0);

    void *ignored = device_block(4096);
    EXPECT(gpuleak_ignore(ignored) == 0);
    EXPECT(gpuleak_disable() == 1);
    void *unseen = device_block(8192);
    EXPECT(gpuleak_enable() == 0);
    EXPECT(definite("start", &blocks) == 2 << 20 && blocks == 2);

    char *pool = (char *)device_block(4 << 20);
    EXPECT(gpuleak_pool_create(pool, "arena") == 0);
    Arena arena = {pool, 4 << 20, 0};
    void *s1 = arena.alloc(1000);
    uintptr_t s2 = hide(arena.alloc(3000));
    arena.release(s1);
    EXPECT(definite("start", &blocks) == (2 << 20) + 3000 && blocks == 3);
    struct gpuleak_counts c;
    EXPECT(gpuleak_count_leaks("start", &c) == 0 && c.blocks[GPULEAK_CACHED] == 1 &&
           c.bytes[GPULEAK_CACHED] == (4 << 20) - 3000);

    EXPECT(gpuleak_checkpoint("middle") == 0);
    CHECK(cudaFree(unhide(ab[0])));
    CHECK(cudaFree(unhide(ab[1])));
    EXPECT(definite("start", &blocks) == 3000 && blocks == 1);
    EXPECT(definite("middle", &blocks) == 0 && blocks == 0);
    /* Check 4: changed since the last full check (check 3): the 2 MiB record
     * went away (not printed, Valgrind's way), the sub-allocation's is new. */
    char text[8192];
    scrub_stack();
    EXPECT(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, NULL, text, sizeof text) == 1);
    EXPECT(strstr(text, "definitely lost: 3,000 (-2,094,152) bytes in 1 (-1) blocks") != NULL);
    EXPECT(strstr(text, "3,000 (+3,000) bytes in 1 (+1) blocks are definitely lost") != NULL);
    /* Check 5: only what was allocated since "middle": nothing is left. */
    EXPECT(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, "middle", text, sizeof text) == 0);
    EXPECT(strstr(text, "All GPU memory allocated since checkpoint \"middle\" was freed") != NULL);
    EXPECT(gpuleak_leak_check(GPULEAK_CHECK_NEW, "no such checkpoint") == -1);

    (void)unseen, (void)s2;
    printf("client_api: done, %d failures\n", failures);
    return failures ? 1 : 0; /* leaves s2 (3,000 bytes), the pool and the ignored blocks */
}
