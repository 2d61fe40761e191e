/* SPDX-License-Identifier: MIT */
/* observe/replay.h: recorded events replayed through the dispatcher, the same
 * consumers, the leak run and the exit report, compared byte for byte with
 * the report they must give (no GPU).  Each recording in tests/replay/ is
 * NAME.events (its options on a "# options:" line) beside NAME.expected, the
 * log the runtime writes for it: the API errors as they happen, then the exit
 * report, with the process id written PID.  GL_REPLAY_UPDATE=1 writes the
 * .expected files instead of comparing (read them before committing). */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "exit_report.h"
#include "heap/heap.h"
#include "observe/replay.h"
#include "report/error_sink.h"
#include "components.h"
#include "runtime.h"
#include "stack/modules.h"
#include "common/util.h"
#include "testutil.h"
#include "track/errors.h"
#include "tracker_util.h"

#ifndef GL_TOP_SRCDIR
#define GL_TOP_SRCDIR "."
#endif

static char log_path[4096];
/* --flamegraph-file for the next replay, with this cost (NULL: none), over
 * the recording's own options. */
static const char *flame_cost;
static char flame_path[4096];

/* The recording's "# options:" line, if any, parsed as GPULEAK_OPTIONS is. */
static void recording_options(const char *text)
{
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime.opt.default_suppressions = false;
    const char *o = strstr(text, "# options:");
    if (!o)
        return;
    o += strlen("# options:");
    char line[1024], err[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(o, "\n"), o);
    ck_assert_msg(gl_options_parse_env(&gl_runtime.opt, line, err, sizeof err) == 0, "options: %s",
                  err);
}

/* "==1234==" as "==PID==", so that a report reads the same in any process. */
static char *normalize(const char *log)
{
    char pfx[32];
    int plen = snprintf(pfx, sizeof pfx, "==%d==", (int)getpid());
    size_t len = strlen(log);
    char *out = malloc(len + 1), *o = out;
    for (const char *p = log; *p;) {
        if (strncmp(p, pfx, (size_t)plen) == 0) {
            o += sprintf(o, "==PID==");
            p += plen;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* The log of one recording, replayed in a fresh pipeline. */
static char *replay(const char *name)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/tests/replay/%s.events", GL_TOP_SRCDIR, name);
    char *text;
    size_t len;
    ck_assert_msg(gl_file_read(path, 1 << 20, &text, &len) == 0, "cannot read %s", path);
    recording_options(text);
    const char *t = getenv("TMPDIR");
    snprintf(log_path, sizeof log_path, "%s/gpuleak-replay.%d.log", t && *t ? t : "/tmp",
             (int)getpid());
    snprintf(gl_runtime.opt.log_file, sizeof gl_runtime.opt.log_file, "%s", log_path);
    unlink(log_path);
    if (flame_cost) {
        char line[8192];
        snprintf(flame_path, sizeof flame_path, "%s/gpuleak-replay.%d.folded", t && *t ? t : "/tmp",
                 (int)getpid());
        snprintf(line, sizeof line, "--flamegraph-file=%s --flamegraph-cost=%s", flame_path,
                 flame_cost);
        ck_assert_msg(gl_options_parse_env(&gl_runtime.opt, line, err, sizeof err) == 0, "%s", err);
        unlink(flame_path);
    }
    gl_runtime.pid = getpid();
    snprintf(gl_runtime.command, sizeof gl_runtime.command, "./%s", name);
    gl_modules_clear();
    gl_heap_set_active(false); /* a recording has no memory image: reachability unknown */
    gl_runtime_configure_tracking(gl_components);
    tu_pipeline_reset();
    gl_error_sink_install();
    gl_errors_capture_stack = NULL;
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);

    long n = gl_replay_text(path, text, len, err, sizeof err);
    free(text);
    ck_assert_msg(n > 0, "replay of %s: %s", name, n < 0 ? err : "no events");
    gl_exit_report();
    atomic_store(&gl_runtime.state, GL_RT_IDLE);

    char *log;
    ck_assert_msg(gl_file_read(log_path, 1 << 20, &log, &len) == 0, "no log for %s", name);
    unlink(log_path);
    char *out = normalize(log);
    free(log);
    return out;
}

static void check_recording(const char *name)
{
    char *got = replay(name);
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/replay/%s.expected", GL_TOP_SRCDIR, name);
    if (getenv("GL_REPLAY_UPDATE")) {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(got, f);
        fclose(f);
        free(got);
        return;
    }
    char *want;
    size_t len;
    ck_assert_msg(gl_file_read(path, 1 << 20, &want, &len) == 0, "cannot read %s", path);
    tu_assert_text_eq_at(got, want, path, 1);
    free(want);
    free(got);
}

START_TEST(test_families) { check_recording("families"); }
END_TEST

START_TEST(test_errors) { check_recording("errors"); }
END_TEST

START_TEST(test_graphs) { check_recording("graphs"); }
END_TEST

START_TEST(test_graphs_fork) { check_recording("graphs_fork"); }
END_TEST

START_TEST(test_graphs_fork_alloc) { check_recording("graphs_fork_alloc"); }
END_TEST

START_TEST(test_pools_and_ranges) { check_recording("pools_ranges"); }
END_TEST

START_TEST(test_oom) { check_recording("oom"); }
END_TEST

/* oom.events drawn with a --flamegraph-cost: the folded file; *log gets the
 * log (the exit report, the notes). */
static char *folded(const char *cost, char **log)
{
    flame_cost = cost;
    *log = replay("oom");
    flame_cost = NULL;
    char *text;
    size_t len;
    ck_assert_msg(gl_file_read(flame_path, 1 << 20, &text, &len) == 0, "no %s", flame_path);
    unlink(flame_path);
    return text;
}

/* Each cost from the same events: at exit what is left; each site's peak;
 * device 0's blocks at its first, fuller out-of-memory failure (freed
 * since); every byte each site allocated.  Frames outermost first. */
START_TEST(test_flamegraph_costs)
{
    static const struct {
        const char *cost, *want, *note;
    } cases[] = {
        {"leaked",
         "0x401200;0x405050 777\n0x401200;0x404040 8192\n0x401200;0x401100;0x401010 1048576\n",
         NULL},
        {"peak",
         "0x401200;0x401100;0x401010 2097152\n0x401200;0x401300;0x402020 8388608\n"
         "0x401200;0x404040 8192\n0x401200;0x405050 777\n",
         NULL},
        {"oom", "0x401200;0x401100;0x401010 2097152\n0x401200;0x401300;0x402020 8388608\n",
         "==PID== gpuleak: --flamegraph-file: the blocks live on device 0 at out-of-memory error 1 "
         "of 2 (cuMemAlloc_v2 of 17,179,869,184 bytes), the one that found its device fullest: "
         "10,485,760 bytes in 4 blocks\n"},
        {"allocated",
         "0x401200;0x401100;0x401010 3145728\n0x401200;0x401300;0x402020 8388608\n"
         "0x401200;0x404040 8192\n0x401200;0x405050 777\n",
         NULL},
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(cases); i++) {
        char *log, *got = folded(cases[i].cost, &log);
        tu_assert_text_eq(got, cases[i].want);
        if (cases[i].note)
            ck_assert_msg(strstr(log, cases[i].note), "--flamegraph-cost=%s: no note in %s",
                          cases[i].cost, log);
        else
            ck_assert_msg(!strstr(log, "--flamegraph-file"), "--flamegraph-cost=%s: %s",
                          cases[i].cost, log);
        free(got);
        free(log);
    }
    /* No failure in the recording: an empty file, and one line saying why. */
    flame_cost = "oom";
    char *log = replay("families");
    flame_cost = NULL;
    char *text;
    size_t len;
    ck_assert(gl_file_read(flame_path, 1 << 20, &text, &len) == 0);
    unlink(flame_path);
    ck_assert_uint_eq(len, 0);
    ck_assert_msg(strstr(log, "==PID== gpuleak: --flamegraph-file: no allocation ran out of "
                              "memory: no stacks to draw for --flamegraph-cost=oom\n"),
                  "%s", log);
    free(text);
    free(log);
}
END_TEST

/* A bad recording stops at the line at fault, named with the file. */
START_TEST(test_bad_recordings)
{
    char err[512];
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"alloc key=0x1000 size=16\nbogus key=1\n", "rec:2: unknown event type 'bogus'"},
        {"alloc key=0x1000 size=ten\n", "rec:1: bad value in 'size=ten'"},
        {"alloc key=0x1000 colour=red\n", "rec:1: unknown field 'colour'"},
        {"alloc key=0x1000 stack=3\n", "rec:1: stack 3 is not defined above"},
        {"stack 0 0x401000\n", "rec:1: a stack needs an id from 1 to 16777215"},
        {"stack 2\n", "rec:1: stack 2 has no frames"},
        {"stack 2 0x40zz\n", "rec:1: stack 2: '0x40zz' is not an address"},
        {"free key=vmm:0x7 kind=nope\n", "rec:1: bad value in 'kind=nope'"},
        {"free key=disk:0x7\n", "rec:1: bad value in 'key=disk:0x7'"},
        {"alloc key=0x1 flags=failed|odd\n", "rec:1: bad value in 'flags=failed|odd'"},
        {"alloc key\n", "rec:1: 'key' is not name=value"},
    };
    tu_pipeline_reset();
    for (size_t i = 0; i < GL_ARRAY_SIZE(cases); i++) {
        err[0] = '\0';
        long n = gl_replay_text("rec", cases[i].text, strlen(cases[i].text), err, sizeof err);
        ck_assert_msg(n == -1, "case %zu: %ld events", i, n);
        ck_assert_str_eq(err, cases[i].want);
    }
    /* Comments, blank lines, CRLF and derived events dispatch nothing. */
    const char *quiet = "# nothing\n\n   \r\nfree key=0x9000 flags=derived\r\n";
    ck_assert_int_eq(gl_replay_text("rec", quiet, strlen(quiet), err, sizeof err), 0);
    ck_assert_uint_eq(tu_tracker_stats().unknown_frees, 0);
    ck_assert_int_eq(gl_replay_file("/nonexistent/rec.events", err, sizeof err), -1);
    ck_assert_str_eq(err, "/nonexistent/rec.events: No such file or directory");
}
END_TEST

static Suite *replay_suite(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_families);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_graphs);
    tcase_add_test(tc, test_graphs_fork);
    tcase_add_test(tc, test_graphs_fork_alloc);
    tcase_add_test(tc, test_pools_and_ranges);
    tcase_add_test(tc, test_oom);
    tcase_add_test(tc, test_flamegraph_costs);
    tcase_add_test(tc, test_bad_recordings);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(replay_suite)
