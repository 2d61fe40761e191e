/* SPDX-License-Identifier: MIT */
/* lib/base/ticker.h: the clock thread's word.  Its times are CLOCK_MONOTONIC
 * at most a few ms behind, never ahead; unread for 100 ms the thread sleeps
 * (the word reads 0) and the next read wakes it; a fork child, which has no
 * such thread, reads the clock. */
#include <check.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/ticker.h"
#include "common/clock.h"
#include "testutil.h"

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Poll up to ms for the thread to tick (or, want false, to sleep). */
static bool wait_ticking(bool want, long ms)
{
    for (long i = 0; i < ms; i++) {
        if (gl_ticker_ticking() == want)
            return true;
        sleep_ms(1);
    }
    return gl_ticker_ticking() == want;
}

START_TEST(test_ticks_sleeps_wakes)
{
    ck_assert(gl_ticker_start());
    ck_assert(gl_ticker_start()); /* once */
    (void)gl_ticker_ns();
    ck_assert(wait_ticking(true, 2000));
    /* Never ahead of the clock, never far behind, never back. */
    uint64_t last = 0;
    for (int i = 0; i < 200; i++) {
        uint64_t before = gl_clock_ns(), t = gl_ticker_ns(), after = gl_clock_ns();
        ck_assert_uint_le(t, after);
        ck_assert_uint_ge(t + 200000000u, before); /* a loaded machine: 200 ms */
        ck_assert_uint_ge(t, last);
        last = t;
        sleep_ms(1);
    }
    /* It moves: 50 ms of reads see more than one value. */
    uint64_t first = gl_ticker_ns();
    sleep_ms(50);
    ck_assert_uint_gt(gl_ticker_ns(), first);
    /* Unread, it sleeps; a read wakes it, and the read itself is a time. */
    ck_assert(wait_ticking(false, 2000));
    uint64_t before = gl_clock_ns();
    uint64_t t = gl_ticker_ns();
    ck_assert_uint_ne(t, 0);
    ck_assert_uint_le(t, gl_clock_ns());
    ck_assert_uint_ge(t + 50000000u, before); /* the coarse clock: a tick late at most */
    ck_assert(wait_ticking(true, 2000));
}
END_TEST

/* A fork child has no clock thread: its reads are the clock's own. */
START_TEST(test_fork_child_reads_the_clock)
{
    ck_assert(gl_ticker_start());
    (void)gl_ticker_ns();
    ck_assert(wait_ticking(true, 2000));
    pid_t pid = fork();
    if (pid == 0) {
        gl_ticker_after_fork();
        int bad = gl_ticker_ticking();
        uint64_t a = gl_ticker_ns();
        sleep_ms(30);
        uint64_t b = gl_ticker_ns();
        bad |= a == 0 || b <= a || gl_ticker_ticking();
        _exit(bad);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert(wait_ticking(true, 2000) || (gl_ticker_ns(), wait_ticking(true, 2000)));
}
END_TEST

static Suite *ticker_suite(void)
{
    Suite *s = suite_create("ticker");
    TCase *tc = tcase_create("ticker");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_ticks_sleeps_wakes);
    tcase_add_test(tc, test_fork_child_reads_the_clock);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(ticker_suite)
