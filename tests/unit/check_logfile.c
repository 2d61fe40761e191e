/* lib/common/logfile.h: --log-file templates (%p, %q{VAR}, %%). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "common/logfile.h"

static char out[256], err[512];

static void setup(void)
{
    memset(out, 'Z', sizeof out);
    memset(err, 0, sizeof err);
    setenv("GL_TEST_VAR", "value", 1);
    setenv("GL_TEST_EMPTY", "", 1);
    unsetenv("GL_TEST_UNSET");
}

static const char *expand(const char *tmpl, int pid, bool require)
{
    int rc = gl_logfile_expand(tmpl, pid, require, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "'%s' failed: %s", tmpl, err);
    return out;
}

static void expand_fails(const char *tmpl, bool require, const char *want_err)
{
    int rc = gl_logfile_expand(tmpl, 42, require, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == -1, "'%s' expanded to '%s'", tmpl, out);
    ck_assert_str_eq(err, want_err);
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(test_plain)
{
    ck_assert_str_eq(expand("/tmp/report.txt", 1, true), "/tmp/report.txt");
    ck_assert_str_eq(expand("", 1, true), "");
}
END_TEST

START_TEST(test_pid)
{
    ck_assert_str_eq(expand("gl.%p.log", 4242, true), "gl.4242.log");
    ck_assert_str_eq(expand("%p", 7, true), "7");
    ck_assert_str_eq(expand("%p-%p", 2147483647, true), "2147483647-2147483647");
}
END_TEST

START_TEST(test_percent)
{
    ck_assert_str_eq(expand("100%%", 1, true), "100%");
    ck_assert_str_eq(expand("%%p", 99, true), "%p"); /* %% first: not a pid */
    ck_assert_str_eq(expand("%%%p", 99, true), "%99");
}
END_TEST

START_TEST(test_env_var)
{
    ck_assert_str_eq(expand("a-%q{GL_TEST_VAR}-b", 1, true), "a-value-b");
    ck_assert_str_eq(expand("%q{GL_TEST_VAR}%q{GL_TEST_VAR}", 1, false), "valuevalue");
    ck_assert_str_eq(expand("x%q{GL_TEST_EMPTY}y", 1, true), "xy");
    ck_assert_str_eq(expand("%q{GL_TEST_VAR}.%p", 5, true), "value.5");
}
END_TEST

START_TEST(test_unset_var)
{
    /* The launcher's check: an unset variable is an error... */
    expand_fails(
        "log-%q{GL_TEST_UNSET}", true,
        "--log-file: environment variable GL_TEST_UNSET (from %q{GL_TEST_UNSET}) is not set");
    /* ...the runtime's expansion: it is empty. */
    ck_assert_str_eq(expand("log-%q{GL_TEST_UNSET}.txt", 1, false), "log-.txt");
}
END_TEST

START_TEST(test_unknown_escape)
{
    expand_fails("a%x", true,
                 "--log-file: unknown escape '%x' in 'a%x' (expected %p, %q{VAR} or %%)");
    expand_fails("a%P", false,
                 "--log-file: unknown escape '%P' in 'a%P' (expected %p, %q{VAR} or %%)");
    /* A '%' at the very end. */
    expand_fails("trailing%", true,
                 "--log-file: 'trailing%' ends with a lone '%' (write %% for one)");
}
END_TEST

START_TEST(test_bad_q)
{
    expand_fails("a%q{HOME", true, "--log-file: unterminated '%q{' in 'a%q{HOME'");
    expand_fails("a%q{", false, "--log-file: unterminated '%q{' in 'a%q{'");
    expand_fails("a%qHOME", true, "--log-file: '%q' must be followed by {VAR}, in 'a%qHOME'");
    expand_fails("a%q", true, "--log-file: '%q' must be followed by {VAR}, in 'a%q'");
    expand_fails("a%q{}b", true, "--log-file: bad variable name in '%q{}' in 'a%q{}b'");
}
END_TEST

START_TEST(test_too_long)
{
    char small[8];
    /* 7 characters and the NUL fit in 8 bytes; 8 do not. */
    ck_assert_int_eq(gl_logfile_expand("1234567", 1, true, small, sizeof small, err, sizeof err),
                     0);
    ck_assert_str_eq(small, "1234567");
    ck_assert_int_eq(gl_logfile_expand("12345678", 1, true, small, sizeof small, err, sizeof err),
                     -1);
    ck_assert_str_eq(err, "--log-file: expanded file name is too long: '12345678'");
    /* Expansions count: "%p" is 2 characters but expands to 9. */
    ck_assert_int_eq(gl_logfile_expand("%p", 123456789, true, small, sizeof small, err, sizeof err),
                     -1);
    ck_assert_str_eq(err, "--log-file: expanded file name is too long: '%p'");
    ck_assert_int_eq(
        gl_logfile_expand("%q{GL_TEST_VAR}xyz", 1, true, small, sizeof small, err, sizeof err), -1);
    ck_assert_str_eq(err, "--log-file: expanded file name is too long: '%q{GL_TEST_VAR}xyz'");
    ck_assert_int_eq(gl_logfile_expand("x", 1, true, small, 0, err, sizeof err), -1);
}
END_TEST

static Suite *logfile_suite(void)
{
    Suite *s = suite_create("logfile");
    TCase *tc = tcase_create("logfile");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_pid);
    tcase_add_test(tc, test_percent);
    tcase_add_test(tc, test_env_var);
    tcase_add_test(tc, test_unset_var);
    tcase_add_test(tc, test_unknown_escape);
    tcase_add_test(tc, test_bad_q);
    tcase_add_test(tc, test_too_long);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(logfile_suite)
