/* SPDX-License-Identifier: MIT */
/* include/gpuleak_check.h: a Check suite whose tests use the fixture, run by an
 * inner SRunner in both of Check's modes, over the runtime's core with blocks
 * made as events (no GPU).  In fork mode each test runs in a child, which
 * finds the client table as under gpuleak: it shares its parent's image. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuleak_check.h"
#include "testutil.h"
#include "tracker_util.h"
#include "check/checkpoints.h"
#include "check/pools.h"
#include "client_api.h"
#include "check/leak_run.h"
#include "check/run_suppressions.h"
#include "runtime.h"
#include "event/api.h"
#include "track/tracker.h"

static void alloc(uint64_t addr, uint64_t size)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_DEVICE,
                          .api = GL_API_cuMemAlloc_v2,
                          .tid = (uint32_t)getpid(),
                          .key = addr,
                          .size = size};
    gl_dispatch(&ev);
}

static void release(uint64_t addr)
{
    struct gl_event ev = {.type = GL_EV_FREE, .key = addr};
    gl_dispatch(&ev);
}

/* ---- the inner suite: what a user writes ---- */
START_TEST(inner_leaks) { alloc(0x7f0000100000ULL, 1024); }
END_TEST

START_TEST(inner_frees)
{
    alloc(0x7f0000200000ULL, 512);
    release(0x7f0000200000ULL);
}
END_TEST

START_TEST(inner_uses_older_memory)
{
    release(0x7f0000300000ULL); /* made before the test: not the test's business */
}
END_TEST

static Suite *inner_suite(void)
{
    Suite *s = suite_create("inner");
    TCase *tc = tcase_create("gpu");
    tcase_add_checked_fixture(tc, gpuleak_check_setup, gpuleak_check_teardown);
    tcase_add_test(tc, inner_leaks);
    tcase_add_test(tc, inner_frees);
    tcase_add_test(tc, inner_uses_older_memory);
    suite_add_tcase(s, tc);
    return s;
}

static void setup(void)
{
    gl_tracker_init();
    tu_pipeline_reset();
    gl_checkpoints_reset();
    gl_pools_reset();
    gl_leak_run_close();
    gl_run_suppressions_unload();
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime.opt.default_suppressions = false;
    gl_runtime.pid = getpid();
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    gl_client_api_publish();
    alloc(0x7f0000300000ULL, 64);
}

static void teardown(void) { atomic_store(&gl_runtime.state, GL_RT_IDLE); }

static void run_inner(enum fork_status mode)
{
    SRunner *sr = srunner_create(inner_suite());
    srunner_set_fork_status(sr, mode);
    srunner_run_all(sr, CK_SILENT);
    ck_assert_int_eq(srunner_ntests_run(sr), 3);
    ck_assert_int_eq(srunner_ntests_failed(sr), 1);
    TestResult **results = srunner_failures(sr);
    const char *msg = tr_msg(results[0]);
    /* The failure comes from the checked teardown, for the test that made the
     * 1,024-byte block (Check names the case, not the test). */
    ck_assert_str_eq(tr_tcname(results[0]), "gpu");
    ck_assert_int_eq(tr_ctx(results[0]), CK_CTX_TEARDOWN);
    ck_assert_msg(strncmp(msg, "the test leaked GPU memory (1 loss records):\n", 44) == 0, "%s",
                  msg);
    ck_assert_msg(strstr(msg,
                         "(full, allocated since checkpoint \"gpuleak_check\"): 1,024 bytes in "
                         "1 blocks in use\n"),
                  "%s", msg);
    ck_assert_msg(
        strstr(msg, "1,024 bytes in 1 blocks are definitely lost in loss record 1 of 1\n"), "%s",
        msg);
    ck_assert_msg(!strstr(msg, "=="), "no ==PID== prefixes in a message:\n%s", msg);
    free(results);
    srunner_free(sr);
}

START_TEST(test_fixture_in_fork_mode) { run_inner(CK_FORK); }
END_TEST

START_TEST(test_fixture_without_fork) { run_inner(CK_NOFORK); }
END_TEST

/* Without gpuleak the fixture does nothing: the leaky test passes. */
START_TEST(test_fixture_without_gpuleak)
{
    unsetenv(GPULEAK_API_ENV);
    pid_t pid = fork(); /* a process that never looked the table up */
    if (pid == 0) {
        SRunner *sr = srunner_create(inner_suite());
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_SILENT);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        _exit(failed == 0 ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

static Suite *helper_suite(void)
{
    Suite *s = suite_create("check_helper");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fixture_in_fork_mode);
    tcase_add_test(tc, test_fixture_without_fork);
    tcase_add_test(tc, test_fixture_without_gpuleak);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(helper_suite)
