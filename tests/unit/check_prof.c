/* SPDX-License-Identifier: MIT */
/* GPULEAK_BENCH=profile's counters (base/prof.h): each thread counts in its
 * own gl_thread, and the totals are every thread's, exited ones included. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>

#include "base/prof.h"
#include "base/thread.h"
#include "testutil.h"

#define THREADS 8
#define CALLS 10000

static void *adder(void *arg)
{
    (void)arg;
    ck_assert_ptr_nonnull(gl_thread_self());
    for (int i = 0; i < CALLS; i++)
        gl_prof_add(GL_PROF_INSERT, 100, 103); /* 3 ticks a call */
    return NULL;
}

START_TEST(test_every_thread_counted)
{
    gl_prof_init();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, adder, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL); /* exited: their structs wait for reuse, counts kept */
    /* One more thread, which may reuse an exited one's struct. */
    pthread_t again;
    ck_assert_int_eq(pthread_create(&again, NULL, adder, NULL), 0);
    pthread_join(again, NULL);
    ck_assert_uint_eq(gl_prof_calls(GL_PROF_INSERT), (THREADS + 1) * CALLS);
    ck_assert_uint_eq(gl_prof_calls(GL_PROF_FREE_EXIT), 0);
    /* 3 ticks a call, whatever a tick is: the average is 3 ticks' ns. */
    double three = gl_prof_avg_ns(GL_PROF_INSERT);
    ck_assert(three > 0);
    ck_assert_ptr_nonnull(gl_thread_self());
    gl_prof_add(GL_PROF_INSERT, 0, 3); /* this thread's, in its own record */
    ck_assert_uint_eq(gl_prof_calls(GL_PROF_INSERT), (THREADS + 1) * CALLS + 1);
    ck_assert(gl_prof_avg_ns(GL_PROF_INSERT) > three * 0.999 &&
              gl_prof_avg_ns(GL_PROF_INSERT) < three * 1.001);
}
END_TEST

static Suite *prof_suite(void)
{
    Suite *s = suite_create("prof");
    TCase *tc = tcase_create("counters");
    tcase_add_test(tc, test_every_thread_counted);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(prof_suite)
