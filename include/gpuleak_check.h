/* SPDX-License-Identifier: MIT */
/* gpuleak_check.h: GPU memory leak checks for test suites written with Check
 * (https://libcheck.github.io/check/).
 *
 *     #include <check.h>
 *     #include <gpuleak_check.h>
 *
 *     TCase *tc = tcase_create("gpu");
 *     tcase_add_checked_fixture(tc, gpuleak_check_setup, gpuleak_check_teardown);
 *
 * Each test of the case then fails if it leaves GPU memory allocated: the setup
 * sets a checkpoint, the teardown checks what was allocated since and fails the
 * test with gpuleak's loss records (their stacks name the allocating lines):
 *
 *     check_gpu.c:31:F:gpu:test_leaks:0: the test leaked GPU memory (1 loss records):
 *     Leak check 2 (full, allocated since checkpoint "gpuleak_check"): ...
 *     1,024 bytes in 1 blocks are definitely lost in loss record 1 of 1
 *        at 0x...: cudaMalloc (in libcudart.so.13)
 *        by 0x...: test_leaks (check_gpu.c:27)
 *
 * Call them from fixtures of your own just as well.  Run the suite under
 * gpuleak:  gpuleak --child-silent-after-fork=yes ./check_gpu
 * Check runs each test in a forked child (CK_FORK, the default); that child
 * starts CUDA, is tracked, and with --child-silent-after-fork=yes writes no exit
 * report of its own, so each leak is told once, by its test.  CK_FORK=no works
 * too.  Without gpuleak both functions do nothing and every test passes as it
 * would.
 *
 * Which leak kinds fail a test: GPULEAK_CHECK_KINDS, a set of 1u << GPULEAK_*;
 * by default every kind but suppressed (what a test allocated and left
 * allocated is its leak, whether or not a pointer to it is still held); define
 * it before including this header. */
#ifndef GPULEAK_CHECK_H
#define GPULEAK_CHECK_H

#include <check.h>

#include "gpuleak.h"

#ifndef GPULEAK_CHECK_KINDS
#define GPULEAK_CHECK_KINDS                                                                        \
    (1u << GPULEAK_DEFINITE | 1u << GPULEAK_INDIRECT | 1u << GPULEAK_POSSIBLE |                    \
     1u << GPULEAK_REACHABLE | 1u << GPULEAK_CACHED)
#endif
/* The report put in a failure message is cut to this many bytes (Check itself
 * cuts messages at CK_MAX_MSG_SIZE, 4096 by default). */
#ifndef GPULEAK_CHECK_REPORT_MAX
#define GPULEAK_CHECK_REPORT_MAX 3800
#endif
#define GPULEAK_CHECK_CHECKPOINT "gpuleak_check"

static inline void gpuleak_check_setup(void) { (void)gpuleak_checkpoint(GPULEAK_CHECK_CHECKPOINT); }

static inline void gpuleak_check_teardown(void)
{
    static char report[GPULEAK_CHECK_REPORT_MAX];
    long errors = gpuleak_leak_check_to(GPULEAK_CHECK_FULL | GPULEAK_KINDS(GPULEAK_CHECK_KINDS),
                                        GPULEAK_CHECK_CHECKPOINT, report, sizeof report);
    if (errors > 0)
        ck_abort_msg("the test leaked GPU memory (%ld loss records):\n%s", errors, report);
}

#endif
