/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests: temporary files, capturing what a function
 * writes to a file descriptor, and the one main() every test program uses. */
#ifndef GPULEAK_TESTUTIL_H
#define GPULEAK_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A temporary file, open for reading and writing, already unlinked. */
static inline int tu_tmpfd(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/gpuleak-unit-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp(%s) failed", path);
    unlink(path);
    return fd;
}

/* Everything written to fd so far, NUL-terminated (caller frees); *len gets its length. */
static inline char *tu_slurp(int fd, size_t *len)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    ck_assert_ptr_nonnull(buf);
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
        ck_assert_msg(r > 0, "pread failed");
        got += (size_t)r;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Compare two texts; on a mismatch, fail naming the first differing line. */
#define tu_assert_text_eq(got, want) tu_assert_text_eq_at(got, want, __FILE__, __LINE__)
static inline void tu_assert_text_eq_at(const char *got, const char *want, const char *file,
                                        int line)
{
    if (strcmp(got, want) == 0)
        return;
    size_t i = 0, lineno = 1, lstart = 0;
    while (got[i] && got[i] == want[i]) {
        if (got[i] == '\n') {
            lineno++;
            lstart = i + 1;
        }
        i++;
    }
    size_t gl = strcspn(got + lstart, "\n"), wl = strcspn(want + lstart, "\n");
    /* The whole texts go to stderr for debugging; the failure names the line. */
    fprintf(stderr, "%s:%d: text mismatch\n--- expected ---\n%s--- got ---\n%s---\n", file, line,
            want, got);
    ck_abort_msg(
        "text differs at line %zu, column %zu:\n  expected: \"%.*s\"\n  got:      \"%.*s\"", lineno,
        i - lstart + 1, (int)(wl > 300 ? 300 : wl), want + lstart, (int)(gl > 300 ? 300 : gl),
        got + lstart);
}

/* Run python (a path or name) on script (its text) with the data file and a
 * file of checks, one per line, as arguments: the script evaluates them and
 * exits non-zero naming those that do not hold.  Fails the test with its
 * output, naming the test's line. */
static inline void tu_python_checks(int line, const char *python, const char *script,
                                    const char *data, const char *const *checks)
{
    char spath[4200], cpath[4200], opath[4200], cmd[20480];
    snprintf(spath, sizeof spath, "%s.py", data);
    snprintf(cpath, sizeof cpath, "%s.checks", data);
    snprintf(opath, sizeof opath, "%s.out", data);
    FILE *f = fopen(spath, "w");
    ck_assert_ptr_nonnull(f);
    fputs(script, f);
    fclose(f);
    f = fopen(cpath, "w");
    ck_assert_ptr_nonnull(f);
    for (; *checks; checks++)
        fprintf(f, "%s\n", *checks);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s '%s' '%s' '%s' >'%s' 2>&1", python, spath, data, cpath, opath);
    int rc = system(cmd);
    char msg[4096] = "";
    f = fopen(opath, "r");
    if (f) {
        size_t n = fread(msg, 1, sizeof msg - 1, f);
        msg[n] = '\0';
        fclose(f);
    }
    unlink(spath);
    unlink(cpath);
    unlink(opath);
    ck_assert_msg(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) != 127,
                  "line %d: cannot run %s (install the Debian package python3)", line, python);
    ck_assert_msg(rc == 0, "line %d: %s", line, msg);
}

/* main() of every test program: run the suite, exit 0 only if all passed. */
#define TU_MAIN(make_suite)                                                                        \
    int main(void)                                                                                 \
    {                                                                                              \
        SRunner *sr = srunner_create(make_suite());                                                \
        srunner_run_all(sr, CK_NORMAL);                                                            \
        int failed = srunner_ntests_failed(sr);                                                    \
        srunner_free(sr);                                                                          \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                          \
    }

#endif
