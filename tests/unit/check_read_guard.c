/* SPDX-License-Identifier: MIT */
/* lib/base/read_guard.h: a fault inside a guarded read returns to the guard,
 * with the signal mask as it was; one outside goes to the program's handler,
 * or kills the program as the default action would. */
#include <check.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "base/read_guard.h"
#include "base/thread.h"

static volatile char *no_access;

static void setup(void)
{
    /* A page reserved with no access: reading it faults.  (Unmapped, its
     * address would be the next mapping's, the thread state's say.) */
    void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    no_access = p;
}

static void chain_over_current(void)
{
    for (int sig = SIGSEGV; sig; sig = sig == SIGSEGV ? SIGBUS : 0) {
        struct sigaction old;
        ck_assert_int_eq(sigaction(sig, NULL, &old), 0);
        gl_read_guard_chain(sig, &old);
    }
}

/* Read the no-access page under a guard: 1 if the fault came back, 0 if the
 * read returned (it never should). */
static __attribute__((noinline)) int guarded_read(struct gl_thread *self)
{
    sigjmp_buf env;
    if (sigsetjmp(env, 0))
        return 1;
    gl_read_guard_set(self, &env);
    (void)no_access[0];
    gl_read_guard_set(self, NULL);
    return 0;
}

static bool segv_blocked(void)
{
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    return sigismember(&now, SIGSEGV);
}

START_TEST(test_guarded_fault_returns)
{
    chain_over_current();
    struct gl_thread *self = gl_thread_self();
    ck_assert_ptr_nonnull(self);
    /* On a cache line: its first two hold what every call touches. */
    ck_assert_uint_eq((uintptr_t)self % 64, 0);
    unsigned long before = gl_read_guard_caught();
    ck_assert_int_eq(guarded_read(self), 1);
    ck_assert_ptr_null(self->read_guard); /* cleared by the handler */
    ck_assert(!segv_blocked());           /* the mask the fault found */
    /* Again: the handler and the mask still work. */
    ck_assert_int_eq(guarded_read(self), 1);
    ck_assert_uint_eq(gl_read_guard_caught(), before + 2);
}
END_TEST

/* The program's own handler: takes unguarded faults, as installed. */
static sigjmp_buf program_env;
static volatile sig_atomic_t program_saw;

static void program_handler(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    program_saw = sig;
    ck_assert_ptr_eq(info->si_addr, (void *)no_access);
    siglongjmp(program_env, 1);
}

START_TEST(test_unguarded_fault_reaches_program_handler)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = program_handler;
    sa.sa_flags = SA_SIGINFO;
    ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    chain_over_current();
    if (sigsetjmp(program_env, 1) == 0) {
        (void)no_access[0];
        ck_abort_msg("the read of a no-access page returned");
    }
    ck_assert_int_eq(program_saw, SIGSEGV);
    /* A guarded fault still comes back to its guard, not to the program. */
    program_saw = 0;
    ck_assert_int_eq(guarded_read(gl_thread_self()), 1);
    ck_assert_int_eq(program_saw, 0);
}
END_TEST

START_TEST(test_unguarded_fault_kills_with_default_action)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        chain_over_current();
        (void)no_access[0];
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "child status %#x", status);
}
END_TEST

static Suite *read_guard_suite(void)
{
    Suite *s = suite_create("read_guard");
    TCase *tc = tcase_create("read_guard");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_guarded_fault_returns);
    tcase_add_test(tc, test_unguarded_fault_reaches_program_handler);
    tcase_add_test(tc, test_unguarded_fault_kills_with_default_action);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(read_guard_suite)
