/* SPDX-License-Identifier: MIT */
/* lib/common/util.h: GL_ARRAY_SIZE (and that it rejects a pointer), GL_ASSERT
 * checked (this file, GL_ASSERTIONS=1), compiled out (util_off.c), and the
 * unit tests' core library built with its assertions checked. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "check/reach.h"
#include "common/util.h"

int util_off_assert_evaluations(void);

START_TEST(test_array_size)
{
    int ints[7];
    const char *const names[] = {"a", "b", "c"};
    struct {
        char c;
        double d;
    } structs[5];
    char text[] = "four";
    int grid[3][11];
    (void)ints, (void)structs, (void)text, (void)grid;
    ck_assert_uint_eq(GL_ARRAY_SIZE(ints), 7);
    ck_assert_uint_eq(GL_ARRAY_SIZE(names), 3);
    ck_assert_uint_eq(GL_ARRAY_SIZE(structs), 5);
    ck_assert_uint_eq(GL_ARRAY_SIZE(text), 5);
    ck_assert_uint_eq(GL_ARRAY_SIZE(grid), 3);
    ck_assert_uint_eq(GL_ARRAY_SIZE(grid[0]), 11);
    /* A constant expression: sizes arrays, static assertions. */
    static char sized[GL_ARRAY_SIZE(ints) * 2];
    _Static_assert(GL_ARRAY_SIZE(names) == 3, "a constant");
    ck_assert_uint_eq(sizeof sized, 14);
}
END_TEST

/* Compile a snippet with the compiler that built this: 0 if it compiled. */
static int compiles(const char *body)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -std=gnu11 -fsyntax-only -I'%s/lib' -x c - 2>/dev/null", GL_CC,
             GL_TOP_SRCDIR);
    FILE *p = popen(cmd, "w");
    ck_assert_ptr_nonnull(p);
    fprintf(p, "#include \"common/util.h\"\n%s\n", body);
    return pclose(p);
}

START_TEST(test_array_size_rejects_pointers)
{
    ck_assert_int_eq(compiles("int a[4]; unsigned long n = GL_ARRAY_SIZE(a);"), 0);
    ck_assert_int_ne(compiles("int a[4]; int *p = a; unsigned long n = GL_ARRAY_SIZE(p);"), 0);
    ck_assert_int_ne(compiles("unsigned long f(int a[4]) { return GL_ARRAY_SIZE(a); }"), 0);
    ck_assert_int_ne(compiles("unsigned long f(const char *s) { return GL_ARRAY_SIZE(s); }"), 0);
}
END_TEST

static int evaluations;
static int count(int v)
{
    evaluations++;
    return v;
}

START_TEST(test_assert_holds)
{
    GL_ASSERT(count(1) == 1, "one is one");
    GL_ASSERT(count(2), "two is true");
    ck_assert_int_eq(evaluations, 2); /* each condition once */
}
END_TEST

START_TEST(test_assert_compiled_out) { ck_assert_int_eq(util_off_assert_evaluations(), 0); }
END_TEST

/* Run fn in a child whose fd 2 is a pipe; its status, and what it wrote. */
static int run_child(void (*fn)(void), char *out, size_t cap)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        close(fds[0]);
        dup2(fds[1], 2);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fds[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = 0;
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* One line: the __LINE__ GL_ASSERT reports is FAIL_LINE. */
#define DEFINE_FAILING(name, line)                                                                 \
    enum { line = __LINE__ };                                                                      \
    static void name(void)                                                                         \
    {                                                                                              \
        volatile int x = 1;                                                                        \
        GL_ASSERT(x == 2, "x is two");                                                             \
    }
DEFINE_FAILING(fail_in_child, FAIL_LINE)

START_TEST(test_assert_fails)
{
    char out[4096], want[4096];
    int status = run_child(fail_in_child, out, sizeof out);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %#x, wrote '%s'",
                  status, out);
    snprintf(want, sizeof want, "gpuleak: %s:%d: assertion failed: x == 2 (x is two)\n", __FILE__,
             FAIL_LINE);
    ck_assert_str_eq(out, want); /* one line, all of it */
}
END_TEST

static void fail_long(void)
{
    static char what[3000];
    memset(what, 'w', sizeof what - 1);
    GL_ASSERT(what[0] == 'x', what);
}

START_TEST(test_assert_long_text_is_cut)
{
    char out[8192];
    int status = run_child(fail_long, out, sizeof out);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    size_t len = strlen(out);
    ck_assert_uint_le(len, 1024);
    ck_assert_uint_gt(len, 1000);
    ck_assert_ptr_eq(strchr(out, '\n'), out + len - 1);
    ck_assert_ptr_nonnull(strstr(out, "assertion failed: what[0] == 'x' (www"));
}
END_TEST

/* The core the unit tests link is built with GL_ASSERTIONS: gl_reach_run
 * checks that its objects are sorted and disjoint. */
static void reach_overlapping(void)
{
    static const struct gl_reach_object objects[] = {{100, 300, true}, {200, 400, true}};
    struct gl_reach r = {.objects = objects, .nobjects = 2};
    gl_reach_run(&r, NULL, 0);
}

START_TEST(test_core_is_checked)
{
    char out[4096];
    int status = run_child(reach_overlapping, out, sizeof out);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %#x, wrote '%s'",
                  status, out);
    ck_assert_ptr_nonnull(strstr(out, "reach.c:"));
    ck_assert_ptr_nonnull(strstr(out, "(objects sorted by start, disjoint)\n"));
}
END_TEST

/* gl_util_cyclic_within: (lo, hi] around a ring, wrapped or not. */
START_TEST(test_cyclic_within)
{
    ck_assert(gl_util_cyclic_within(2, 3, 5));
    ck_assert(gl_util_cyclic_within(2, 5, 5));
    ck_assert(!gl_util_cyclic_within(2, 2, 5));
    ck_assert(!gl_util_cyclic_within(2, 6, 5));
    ck_assert(!gl_util_cyclic_within(2, 1, 5));
    /* Wrapped: lo 6, hi 1 in a ring of 8 holds 7, 0 and 1. */
    ck_assert(gl_util_cyclic_within(6, 7, 1));
    ck_assert(gl_util_cyclic_within(6, 0, 1));
    ck_assert(gl_util_cyclic_within(6, 1, 1));
    ck_assert(!gl_util_cyclic_within(6, 6, 1));
    ck_assert(!gl_util_cyclic_within(6, 2, 1));
    ck_assert(!gl_util_cyclic_within(6, 5, 1));
}
END_TEST

static Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_array_size);
    tcase_add_test(tc, test_array_size_rejects_pointers);
    tcase_add_test(tc, test_assert_holds);
    tcase_add_test(tc, test_assert_compiled_out);
    tcase_add_test(tc, test_assert_fails);
    tcase_add_test(tc, test_assert_long_text_is_cut);
    tcase_add_test(tc, test_core_is_checked);
    tcase_add_test(tc, test_cyclic_within);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(util_suite)
