/* SPDX-License-Identifier: MIT */
/* src/launcher.h: the launcher's helpers (src/locate.c is compiled into this test):
 * relative paths, program lookup as execvp does it, --log-file checks, runtime
 * location. */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "launcher.h"

static char base[PATH_MAX / 8]; /* made by the runner, removed after all tests */
static char tmp[PATH_MAX / 4];  /* this test's own directory, inside base */
static char err[2048], out[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Unchecked fixture, in the runner's process: a failed assertion ends a test's
 * process at once, so cleanup there could be skipped. */
static void make_base(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/gpuleak-launcher-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(base))
        base[0] = '\0';
}

static void remove_base(void)
{
    if (base[0] && nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "check_launcher: could not remove %s\n", base);
}

static void setup(void)
{
    ck_assert_msg(base[0], "no temporary directory");
    snprintf(tmp, sizeof tmp, "%s/t-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    err[0] = out[0] = '\0';
}

/* Create tmp/rel with the given mode (a directory when mode has S_IFDIR). */
static const char *make(const char *rel, mode_t mode)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%.256s", tmp, rel);
    if (S_ISDIR(mode)) {
        ck_assert_int_eq(mkdir(path, 0755), 0);
    } else {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs("#!/bin/sh\nexit 0\n", f);
        fclose(f);
        ck_assert_int_eq(chmod(path, mode), 0);
    }
    return path;
}

/* ---- gl_paths_relative ---- */

static const char *rel(const char *from, const char *to)
{
    static char buf[PATH_MAX];
    memset(buf, 'Z', sizeof buf);
    gl_paths_relative(from, to, buf, sizeof buf);
    return buf;
}

START_TEST(test_relative_path)
{
    ck_assert_str_eq(rel("/usr/local/bin", "/usr/local/lib/gpuleak"), "../lib/gpuleak");
    ck_assert_str_eq(rel("/usr/bin", "/usr/bin"), ".");
    ck_assert_str_eq(rel("/a/b", "/c"), "../../c");
    ck_assert_str_eq(rel("/a", "/a/b/c"), "b/c");
    ck_assert_str_eq(rel("/", "/usr/lib"), "usr/lib");
    ck_assert_str_eq(rel("/usr/lib", "/"), "../..");
    ck_assert_str_eq(rel("/", "/"), ".");
    ck_assert_str_eq(rel("/opt/gpuleak/bin", "/opt/gpuleak/lib64/gpuleak"), "../lib64/gpuleak");
}
END_TEST

START_TEST(test_relative_path_slashes)
{
    ck_assert_str_eq(rel("/usr/local/bin/", "/usr/local/lib/gpuleak/"), "../lib/gpuleak");
    ck_assert_str_eq(rel("/usr/local/bin/", "/usr/local/lib/gpuleak"), "../lib/gpuleak");
    ck_assert_str_eq(rel("/usr/local/bin", "/usr/local/bin/"), ".");
    ck_assert_str_eq(rel("//usr//bin", "/usr/lib/gpuleak"), "../lib/gpuleak");
}
END_TEST

START_TEST(test_relative_path_component_prefix)
{
    /* "lib" is a prefix of "lib64" but not the same component. */
    ck_assert_str_eq(rel("/usr/lib", "/usr/lib64/gpuleak"), "../lib64/gpuleak");
    ck_assert_str_eq(rel("/usr/lib64", "/usr/lib/gpuleak"), "../lib/gpuleak");
}
END_TEST

START_TEST(test_relative_path_small_buffer)
{
    char buf[8];
    memset(buf, 'Z', sizeof buf);
    gl_paths_relative("/a/b/c/d", "/x/y/z", buf, sizeof buf);
    ck_assert_ptr_nonnull(memchr(buf, '\0', sizeof buf)); /* terminated, within bounds */
    ck_assert(strncmp(buf, "../../", 6) == 0);
}
END_TEST

/* ---- gl_resolve_program ---- */

START_TEST(test_resolve_with_slash)
{
    ck_assert(gl_resolve_program("/bin/sh", out, sizeof out, err, sizeof err));
    ck_assert_str_eq(out, "/bin/sh");
    const char *p = make("prog", 0755);
    ck_assert(gl_resolve_program(p, out, sizeof out, err, sizeof err));
    ck_assert_str_eq(out, p);
}
END_TEST

START_TEST(test_resolve_path_search)
{
    make("d1", S_IFDIR | 0755);
    make("d2", S_IFDIR | 0755);
    make("d2/myprog", 0755);
    make("d3", S_IFDIR | 0755);
    make("d3/myprog", 0755);
    char path[3 * PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/d1:%s/d2:%s/d3", tmp, tmp, tmp);
    setenv("PATH", path, 1);
    ck_assert(gl_resolve_program("myprog", out, sizeof out, err, sizeof err));
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/d2/myprog", tmp); /* the first one in PATH */
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_resolve_empty_path_entry_is_cwd)
{
    make("here", 0755);
    ck_assert_int_eq(chdir(tmp), 0);
    setenv("PATH", "/nonexistent-gpuleak-dir::/also-missing", 1);
    ck_assert_msg(gl_resolve_program("here", out, sizeof out, err, sizeof err), "%s", err);
    ck_assert_str_eq(out, "./here");
}
END_TEST

START_TEST(test_resolve_not_executable)
{
    make("d1", S_IFDIR | 0755);
    make("d1/plain", 0644);
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/d1", tmp);
    setenv("PATH", path, 1);
    ck_assert(!gl_resolve_program("plain", out, sizeof out, err, sizeof err));
    ck_assert_str_eq(err, "program 'plain' is in PATH but not executable");

    /* With a slash: named as given, with the reason. */
    char full[PATH_MAX + 16];
    snprintf(full, sizeof full, "%s/d1/plain", tmp);
    ck_assert(!gl_resolve_program(full, out, sizeof out, err, sizeof err));
    char want[2 * PATH_MAX];
    snprintf(want, sizeof want, "program '%s' is not executable: %s", full, strerror(EACCES));
    ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_resolve_executable_later_in_path)
{
    make("d1", S_IFDIR | 0755);
    make("d1/tool", 0644);
    make("d2", S_IFDIR | 0755);
    make("d2/tool", 0755);
    char path[2 * PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/d1:%s/d2", tmp, tmp);
    setenv("PATH", path, 1);
    ck_assert(gl_resolve_program("tool", out, sizeof out, err, sizeof err));
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/d2/tool", tmp);
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_resolve_directory)
{
    make("d1", S_IFDIR | 0755);
    make("d1/sub", S_IFDIR | 0755);
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/d1", tmp);
    setenv("PATH", path, 1);
    /* A directory in PATH is not a program. */
    ck_assert(!gl_resolve_program("sub", out, sizeof out, err, sizeof err));
    ck_assert_str_eq(err, "program 'sub' not found in PATH");
    /* Named with a slash. */
    char full[PATH_MAX + 16];
    snprintf(full, sizeof full, "%s/d1/sub", tmp);
    ck_assert(!gl_resolve_program(full, out, sizeof out, err, sizeof err));
    char want[2 * PATH_MAX];
    snprintf(want, sizeof want, "program '%s' is a directory", full);
    ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_resolve_missing)
{
    setenv("PATH", tmp, 1);
    ck_assert(!gl_resolve_program("no-such-program-gpuleak", out, sizeof out, err, sizeof err));
    ck_assert_str_eq(err, "program 'no-such-program-gpuleak' not found in PATH");
    ck_assert(!gl_resolve_program("./no-such-program-gpuleak", out, sizeof out, err, sizeof err));
    char want[256];
    snprintf(want, sizeof want, "program './no-such-program-gpuleak': %s", strerror(ENOENT));
    ck_assert_str_eq(err, want);
    ck_assert(!gl_resolve_program("", out, sizeof out, err, sizeof err));
    ck_assert_str_eq(err, "empty program name");
}
END_TEST

START_TEST(test_resolve_without_path)
{
    unsetenv("PATH");
    ck_assert(gl_resolve_program("sh", out, sizeof out, err, sizeof err));
    /* The default search path, as execvp uses. */
    ck_assert(strcmp(out, "/usr/local/bin/sh") == 0 || strcmp(out, "/bin/sh") == 0 ||
              strcmp(out, "/usr/bin/sh") == 0);
}
END_TEST

/* ---- gl_check_log_file ---- */

START_TEST(test_log_file_ok)
{
    char t[PATH_MAX + 32];
    snprintf(t, sizeof t, "%s/report.%%p.log", tmp);
    ck_assert_msg(gl_check_log_file(t, err, sizeof err), "%s", err);
    ck_assert(gl_check_log_file("relative.log", err, sizeof err)); /* the current directory */
    setenv("GL_LOG_DIR", tmp, 1);
    ck_assert_msg(gl_check_log_file("%q{GL_LOG_DIR}/x.log", err, sizeof err), "%s", err);
    /* Nothing is created by the check. */
    char created[PATH_MAX + 32];
    snprintf(created, sizeof created, "%s/x.log", tmp);
    ck_assert_int_ne(access(created, F_OK), 0);
}
END_TEST

START_TEST(test_log_file_missing_directory)
{
    ck_assert(!gl_check_log_file("/nonexistent-gpuleak-dir/sub/x.log", err, sizeof err));
    ck_assert_str_eq(err, "--log-file: directory '/nonexistent-gpuleak-dir/sub' does not exist");
    ck_assert(!gl_check_log_file("/etc/passwd/x.log", err, sizeof err)); /* not a directory */
    ck_assert_str_eq(err, "--log-file: directory '/etc/passwd' does not exist");
}
END_TEST

/* A --log-file that names a directory can never be created as a file: the
 * launcher is where that must be said (the runtime would fall back to stderr). */
START_TEST(test_log_file_is_a_directory)
{
    ck_assert(!gl_check_log_file(tmp, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "--log-file"));
    ck_assert_ptr_nonnull(strstr(err, tmp));
    char slash[PATH_MAX];
    snprintf(slash, sizeof slash, "%s/", tmp);
    ck_assert(!gl_check_log_file(slash, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "--log-file"));
}
END_TEST

START_TEST(test_log_file_root_directory)
{
    if (access("/", W_OK) != 0) {
        ck_assert(!gl_check_log_file("/x.log", err, sizeof err));
        ck_assert_str_eq(err, "--log-file: directory '/' is not writable");
    } else {
        ck_assert(gl_check_log_file("/x.log", err, sizeof err));
    }
}
END_TEST

START_TEST(test_log_file_unset_variable)
{
    unsetenv("GL_SURELY_UNSET");
    ck_assert(!gl_check_log_file("/tmp/%q{GL_SURELY_UNSET}.log", err, sizeof err));
    ck_assert_str_eq(err, "--log-file: environment variable GL_SURELY_UNSET (from "
                          "%q{GL_SURELY_UNSET}) is not set");
    ck_assert(!gl_check_log_file("/tmp/%y.log", err, sizeof err));
    ck_assert_str_eq(
        err, "--log-file: unknown escape '%y' in '/tmp/%y.log' (expected %p, %n, %q{VAR} or %%)");
}
END_TEST

START_TEST(test_log_file_unwritable_directory)
{
    if (geteuid() == 0) {
        /* root writes anywhere: nothing to check. */
        fprintf(stderr, "check_launcher: running as root: unwritable directory check skipped\n");
        return;
    }
    make("ro", S_IFDIR | 0555);
    char t[PATH_MAX + 32];
    snprintf(t, sizeof t, "%s/ro/x.log", tmp);
    ck_assert(!gl_check_log_file(t, err, sizeof err));
    char want[2 * PATH_MAX];
    snprintf(want, sizeof want, "--log-file: directory '%s/ro' is not writable", tmp);
    ck_assert_str_eq(err, want);
}
END_TEST

/* ---- gl_locate_runtime ---- */

START_TEST(test_locate_runtime_from_environment)
{
    const char *lib = make("libgpuleak.so", 0644);
    char want[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(lib, want));
    setenv("GPULEAK_RUNTIME", lib, 1);
    char tried[4 * PATH_MAX];
    ck_assert(gl_locate_runtime(out, sizeof out, tried, sizeof tried));
    ck_assert_str_eq(out, want);

    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/nope.so", tmp);
    setenv("GPULEAK_RUNTIME", missing, 1);
    ck_assert(!gl_locate_runtime(out, sizeof out, tried, sizeof tried));
    ck_assert_str_eq(tried, missing);

    /* A directory is not a library. */
    setenv("GPULEAK_RUNTIME", tmp, 1);
    ck_assert(!gl_locate_runtime(out, sizeof out, tried, sizeof tried));
    ck_assert_str_eq(tried, tmp);
}
END_TEST

static Suite *launcher_suite(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("launcher");
    tcase_add_unchecked_fixture(tc, make_base, remove_base);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_relative_path);
    tcase_add_test(tc, test_relative_path_slashes);
    tcase_add_test(tc, test_relative_path_component_prefix);
    tcase_add_test(tc, test_relative_path_small_buffer);
    tcase_add_test(tc, test_resolve_with_slash);
    tcase_add_test(tc, test_resolve_path_search);
    tcase_add_test(tc, test_resolve_empty_path_entry_is_cwd);
    tcase_add_test(tc, test_resolve_not_executable);
    tcase_add_test(tc, test_resolve_executable_later_in_path);
    tcase_add_test(tc, test_resolve_directory);
    tcase_add_test(tc, test_resolve_missing);
    tcase_add_test(tc, test_resolve_without_path);
    tcase_add_test(tc, test_log_file_ok);
    tcase_add_test(tc, test_log_file_missing_directory);
    tcase_add_test(tc, test_log_file_is_a_directory);
    tcase_add_test(tc, test_log_file_root_directory);
    tcase_add_test(tc, test_log_file_unset_variable);
    tcase_add_test(tc, test_log_file_unwritable_directory);
    tcase_add_test(tc, test_locate_runtime_from_environment);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(launcher_suite)
