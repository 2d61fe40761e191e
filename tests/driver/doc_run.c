/* SPDX-License-Identifier: MIT */
/* A program for tests/documents.test, run under gpuleak against the fake
 * driver (fake_cuda.c): what the XML and JSON documents say of usage, of the
 * leak checks the program asks for, and of growth.
 *   doc_run EXTRA
 * Four checkpoints "step", each after one more 4,096-byte block from
 * grow_site (a Growth error at the third with --growth-checkpoints=3); then
 * check 1 (full): the 4 blocks; a 1 MiB block from big_site; check 2 (added
 * since the last check): big_site's record, new; checkpoint "late", 100 bytes
 * from small_site; check 3 (full since "late", into a buffer): that record;
 * then EXTRA more checks into a buffer (the documents keep the last ones).
 * The program keeps its pointers disguised, as if it had dropped them: every
 * record is definitely lost.  Exit status 0, or 1 if a check returned what
 * it should not (printed). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuleak.h"

static int failures;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: doc_run: line %d: expected %s\n", __LINE__, #cond);                      \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static volatile uintptr_t hidden[16];

static void hide(int i, CUdeviceptr p) { hidden[i] = (uintptr_t)p ^ 0xa5a5a5a5a5a5a5a5ULL; }

__attribute__((noinline)) static CUdeviceptr grow_site(void)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, 4096);
    return p;
}

__attribute__((noinline)) static CUdeviceptr big_site(void)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, 1 << 20);
    return p;
}

__attribute__((noinline)) static CUdeviceptr small_site(void)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, 100);
    return p;
}

/* Zero the dead stack below main's frame, where the callees left copies of
 * the pointers they returned, which a conservative scan rightly counts. */
__attribute__((noinline)) static void scrub_stack(void)
{
    volatile char junk[16 * 1024];
    memset((char *)junk, 0, sizeof junk);
}

int main(int argc, char **argv)
{
    int extra = argc > 1 ? atoi(argv[1]) : 0;
    cuInit(0);
    for (int step = 0; step < 4; step++) {
        hide(step, grow_site());
        EXPECT(gpuleak_checkpoint("step") == 0);
    }
    scrub_stack();
    EXPECT(gpuleak_leak_check(GPULEAK_CHECK_FULL, NULL) == 1);
    hide(4, big_site());
    scrub_stack();
    EXPECT(gpuleak_leak_check(GPULEAK_CHECK_ADDED, NULL) == 1);
    EXPECT(gpuleak_checkpoint("late") == 0);
    hide(5, small_site());
    scrub_stack();
    char buf[8192];
    EXPECT(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, "late", buf, sizeof buf) == 1);
    EXPECT(strstr(buf, "100 bytes in 1 blocks are definitely lost") != NULL);
    for (int i = 0; i < extra; i++)
        EXPECT(gpuleak_leak_check_to(GPULEAK_CHECK_NEW, "late", buf, sizeof buf) == 0);
    printf("doc_run: done\n");
    return failures ? 1 : 0;
}
