/* SPDX-License-Identifier: MIT */
/* lib/common/logfile.h: --log-file templates (%p, %n, %q{VAR}, %%). */
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

/* --merge=yes's pattern: every process's file, the rest as expanded. */
START_TEST(test_glob_pattern)
{
    char out[256], err[256];
    setenv("GL_TEST_JOB", "j7", 1);
    ck_assert_int_eq(gl_logfile_glob_pattern("--save", "/d/%q{GL_TEST_JOB}.%p.gl", out, sizeof out,
                                             err, sizeof err),
                     0);
    ck_assert_str_eq(out, "/d/j7.*.gl");
    ck_assert_int_eq(
        gl_logfile_glob_pattern("--save", "100%%.%p", out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "100%.*");
    ck_assert_int_eq(gl_logfile_glob_pattern("--save", "x.%q{", out, sizeof out, err, sizeof err),
                     -1);
    ck_assert_str_eq(err, "--save: unterminated '%q{' in 'x.%q{'");
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
                 "--log-file: unknown escape '%x' in 'a%x' (expected %p, %n, %q{VAR} or %%)");
    expand_fails("a%P", false,
                 "--log-file: unknown escape '%P' in 'a%P' (expected %p, %n, %q{VAR} or %%)");
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

/* %n before numbering (the syntax check of a parsed option): the first file. */
START_TEST(test_sequence_unnumbered)
{
    ck_assert_str_eq(expand("r.%n.log", 4242, true), "r.1.log");
    ck_assert_str_eq(expand("%p.%n", 7, true), "7.1");
    ck_assert_str_eq(expand("%%n", 7, true), "%n"); /* a literal '%' and 'n' */
}
END_TEST

/* A process's files numbered once, in the options' order, %n written in. */
START_TEST(test_sequence_numbered)
{
    char log[64] = "r.%n.log", xml[64] = "/x/r.%n.xml", json[64] = "r.json";
    char trace[64] = "t.%n-%p.%n", save[64] = "";
    char *const t[] = {log, xml, json, trace, save};
    static const char *const names[] = {"--log-file", "--xml-file", "--json-file", "--trace-file",
                                        "--save"};
    ck_assert_int_eq(gl_logfile_number(t, names, 5, 64, err, sizeof err), 0);
    ck_assert_str_eq(log, "r.1.log");
    ck_assert_str_eq(xml, "/x/r.2.xml");
    ck_assert_str_eq(json, "r.json");    /* no %n: no number, and the next is 3 */
    ck_assert_str_eq(trace, "t.3-%p.3"); /* every %n of one template: its number */
    ck_assert_str_eq(save, "");
    /* Numbered names expand alike in every process, and numbering again changes nothing. */
    ck_assert_str_eq(expand(trace, 99, true), "t.3-99.3");
    ck_assert_int_eq(gl_logfile_number(t, names, 5, 64, err, sizeof err), 0);
    ck_assert_str_eq(log, "r.1.log");
    ck_assert_str_eq(trace, "t.3-%p.3");

    /* Only the templates that use %n count; a "%%n" or a %q{...} does not. */
    char a[64] = "a.log", b[64] = "b.%%n.%q{GL_TEST_VAR}", c[64] = "%q{GL_TEST_VAR}.%n";
    char *const u[] = {a, b, c};
    ck_assert_int_eq(gl_logfile_number(u, names, 3, 64, err, sizeof err), 0);
    ck_assert_str_eq(a, "a.log");
    ck_assert_str_eq(b, "b.%%n.%q{GL_TEST_VAR}");
    ck_assert_str_eq(c, "%q{GL_TEST_VAR}.1");
    ck_assert_str_eq(expand(c, 1, true), "value.1");
}
END_TEST

START_TEST(test_sequence_too_long)
{
    /* "%n" becomes 1 to 99 in no more room; the 100th number needs one byte more. */
    static char t[100][5];
    char *tp[100];
    const char *names[100];
    for (int i = 0; i < 100; i++) {
        strcpy(t[i], "ab%n");
        tp[i] = t[i];
        names[i] = i == 99 ? "--save" : "--log-file";
    }
    ck_assert_int_eq(gl_logfile_number(tp, names, 100, 5, err, sizeof err), -1);
    ck_assert_str_eq(err, "--save: file name is too long once %n is numbered: 'ab%n'");
    ck_assert_str_eq(t[0], "ab1");
    ck_assert_str_eq(t[98], "ab99");
    ck_assert_str_eq(t[99], "ab%n"); /* left as it was */
}
END_TEST

static Suite *logfile_suite(void)
{
    Suite *s = suite_create("logfile");
    TCase *tc = tcase_create("logfile");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_pid);
    tcase_add_test(tc, test_glob_pattern);
    tcase_add_test(tc, test_percent);
    tcase_add_test(tc, test_env_var);
    tcase_add_test(tc, test_unset_var);
    tcase_add_test(tc, test_unknown_escape);
    tcase_add_test(tc, test_bad_q);
    tcase_add_test(tc, test_too_long);
    tcase_add_test(tc, test_sequence_unnumbered);
    tcase_add_test(tc, test_sequence_numbered);
    tcase_add_test(tc, test_sequence_too_long);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(logfile_suite)
