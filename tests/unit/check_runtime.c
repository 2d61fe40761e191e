/* SPDX-License-Identifier: MIT */
/* lib/runtime.h: where the runtime's messages go (stderr as it was at load time,
 * or the --log-file), and the command line for the report header. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "runtime.h"

static char log_path[4096];

static void setup(void)
{
    gl_options_defaults(&gl_runtime.opt);
    const char *t = getenv("TMPDIR");
    snprintf(log_path, sizeof log_path, "%s/gpuleak-runtime.%d.log", t && *t ? t : "/tmp",
             (int)getpid());
    unlink(log_path);
}

static void teardown(void) { unlink(log_path); }

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* Run fn with fd 2 pointing at a temporary file; return what was written there. */
static char *capture_stderr(void (*fn)(void))
{
    int fd = tu_tmpfd();
    int saved = dup(2);
    ck_assert_int_ge(saved, 0);
    dup2(fd, 2);
    fn();
    dup2(saved, 2);
    close(saved);
    char *text = tu_slurp(fd, NULL);
    close(fd);
    return text;
}

static void say_hello(void) { gl_runtime_message("gpuleak: hello %d", 42); }

START_TEST(test_message_to_stderr)
{
    char *text = capture_stderr(say_hello);
    char want[64];
    snprintf(want, sizeof want, "==%d== gpuleak: hello 42\n", (int)getpid());
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

START_TEST(test_message_to_log_file)
{
    const char *t = getenv("TMPDIR");
    snprintf(gl_runtime.opt.log_file, sizeof gl_runtime.opt.log_file, "%s/gpuleak-runtime.%%p.log",
             t && *t ? t : "/tmp");
    /* An old file of that name is replaced by the first message, then appended to. */
    FILE *old = fopen(log_path, "w");
    ck_assert_ptr_nonnull(old);
    fputs("old contents\n", old);
    fclose(old);
    char *err = capture_stderr(say_hello);
    gl_runtime_message("second %s", "line");
    char *text = read_file(log_path);
    ck_assert_ptr_nonnull(text);
    char want[128];
    snprintf(want, sizeof want, "==%d== gpuleak: hello 42\n==%d== second line\n", (int)getpid(),
             (int)getpid());
    ck_assert_str_eq(text, want);
    ck_assert_str_eq(err, ""); /* nothing on stderr */
    free(text);
    free(err);
}
END_TEST

START_TEST(test_log_file_unusable)
{
    snprintf(gl_runtime.opt.log_file, sizeof gl_runtime.opt.log_file, "/nonexistent-gpuleak-dir/x.log");
    char *text = capture_stderr(say_hello);
    char want[256];
    snprintf(
        want, sizeof want,
        "==%d== gpuleak: cannot open log file '/nonexistent-gpuleak-dir/x.log': %s; writing to "
        "stderr\n==%d== gpuleak: hello 42\n",
        (int)getpid(), strerror(ENOENT), (int)getpid());
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

/* A program that later redirects or closes fd 2 does not swallow the report. */
static void save_then_redirect(void)
{
    gl_runtime_save_stderr(); /* fd 2 is the capture file now */
    int other = tu_tmpfd();
    dup2(other, 2); /* the program points stderr elsewhere */
    say_hello();
    char *seen = tu_slurp(other, NULL);
    ck_assert_str_eq(seen, "");
    free(seen);
    close(other);
}

START_TEST(test_saved_stderr)
{
    char *text = capture_stderr(save_then_redirect);
    char want[64];
    snprintf(want, sizeof want, "==%d== gpuleak: hello 42\n", (int)getpid());
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

START_TEST(test_read_command)
{
    memset(gl_runtime.command, 'x', sizeof gl_runtime.command);
    gl_runtime_read_command();
    /* This test runs without arguments: the command is the program's name. */
    ck_assert_str_eq(gl_runtime.command, program_invocation_name);
}
END_TEST

static Suite *runtime_suite(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("runtime");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_message_to_stderr);
    tcase_add_test(tc, test_message_to_log_file);
    tcase_add_test(tc, test_log_file_unusable);
    tcase_add_test(tc, test_saved_stderr);
    tcase_add_test(tc, test_read_command);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(runtime_suite)
