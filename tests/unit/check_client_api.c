/* SPDX-License-Identifier: MIT */
/* The client API (include/gpuleak.h -> lib/client_api.c) without a GPU: the
 * header's inline functions find this process's table in the environment, as
 * in a program under gpuleak; blocks come in as events (event/event.h), stacks
 * are made in the depot by hand.  Reports go into buffers or a --log-file that
 * is read back. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuleak.h"
#include "testutil.h"
#include "tracker_util.h"
#include "check/checkpoints.h"
#include "check/pools.h"
#include "client_api.h"
#include "report/error_sink.h"
#include "check/leak_run.h"
#include "check/run_suppressions.h"
#include "runtime.h"
#include "event/api.h"
#include "track/errors.h"
#include "track/regions.h"
#include "stack/stack_depot.h"
#include "base/thread.h"
#include "track/tracker.h"

#define DEV(n) (0x7f0000000000ULL + (uint64_t)(n)*0x100000ULL)
#define POOL DEV(10)
#define POOL_ADDR POOL

static char log_path[4096];
static uint32_t stack_a, stack_b, stack_c;

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
    const char *t = getenv("TMPDIR");
    snprintf(gl_runtime.opt.log_file, sizeof gl_runtime.opt.log_file,
             "%s/gpuleak-client-api.%%p.log", t && *t ? t : "/tmp");
    snprintf(log_path, sizeof log_path, "%s/gpuleak-client-api.%d.log", t && *t ? t : "/tmp",
             (int)getpid());
    unlink(log_path);
    gl_runtime.pid = getpid();
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    gl_client_api_publish();
    uintptr_t a[] = {0x1111, 0x2222}, b[] = {0x3333, 0x4444}, c[] = {0x5555, 0x6666};
    stack_a = gl_stack_depot_intern(a, 2);
    stack_b = gl_stack_depot_intern(b, 2);
    stack_c = gl_stack_depot_intern(c, 2);
}

static void teardown(void)
{
    unlink(log_path);
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
}

static char *read_log(void)
{
    int fd = open(log_path, O_RDONLY);
    if (fd < 0)
        return strdup("");
    char *text = tu_slurp(fd, NULL);
    close(fd);
    return text;
}

static void alloc(uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_DEVICE,
                          .api = GL_API_cuMemAlloc_v2,
                          .device = 0,
                          .tid = (uint32_t)getpid(),
                          .stack = stack,
                          .key = addr,
                          .size = size,
                          .ctx = 0xc1};
    gl_dispatch(&ev);
}

static void release(uint64_t addr)
{
    struct gl_event ev = {.type = GL_EV_FREE, .key = addr, .api = GL_API_cuMemFree_v2};
    gl_dispatch(&ev);
}

static struct gpuleak_counts count(const char *since)
{
    struct gpuleak_counts c;
    ck_assert_int_eq(gpuleak_count_leaks(since, &c), 0);
    return c;
}

/* The lines of text that start with prefix "==PID== " removed. */
static char *unprefixed(const char *text)
{
    char pfx[32];
    int n = snprintf(pfx, sizeof pfx, "==%d==", (int)getpid());
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
        if (strncmp(p, pfx, (size_t)n) == 0) {
            p += n;
            len -= (size_t)n;
            if (*p == ' ') {
                p++;
                len--;
            }
        }
        memcpy(o, p, len);
        o += len;
        p += len;
    }
    *o = '\0';
    return out;
}

/* The table is published for this program image; a fork child (Check runs
 * each test in one) shares the image and finds the same table. */
START_TEST(test_table_after_fork)
{
    const char *v = getenv(GPULEAK_API_ENV);
    ck_assert_ptr_nonnull(v);
    char image[9];
    snprintf(image, sizeof image, "%08x", gpuleak_image_id());
    ck_assert_msg(strncmp(v, image, 8) == 0 && strncmp(v + 8, ":0x", 3) == 0, "%s", v);
    const struct gpuleak_api *t = gpuleak_api_parse(v);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_eq(t->count_leaks, gpuleak_runtime_count_leaks);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(gpuleak_api_parse(getenv(GPULEAK_API_ENV)) == t && gpuleak_running() == 1 ? 0 : 1);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child did not find the table");
}
END_TEST

/* A program exec'ed from a process under gpuleak inherits the variable, but
 * not the runtime: its own image id differs, and the address is never read. */
START_TEST(test_table_not_followed_after_exec)
{
    char cmd[256];
    /* The child program checks the id the way the header does, with its own
     * AT_RANDOM: a shell's "$$" is enough to tell it is another image. */
    const char *v = getenv(GPULEAK_API_ENV);
    ck_assert_ptr_nonnull(v);
    snprintf(cmd, sizeof cmd, "%s", "/proc/self/exe");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Re-exec this test program in a mode that only parses the variable. */
        setenv("GPULEAK_TEST_PARSE_ONLY", "1", 1);
        execl(cmd, cmd, (char *)NULL);
        _exit(3);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "an exec'ed image followed its parent's table (status %d)", status);
}
END_TEST

START_TEST(test_running)
{
    ck_assert_int_eq(gpuleak_running(), 1);
    atomic_store(&gl_runtime.state, GL_RT_IDLE); /* ready: tracks once CUDA starts */
    ck_assert_int_eq(gpuleak_running(), 1);
    atomic_store(&gl_runtime.state, GL_RT_FAILED); /* CUPTI taken: not tracking */
    ck_assert_int_eq(gpuleak_running(), 0);
    ck_assert_int_eq(gpuleak_checkpoint("x"), -1);
    atomic_store(&gl_runtime.state, GL_RT_DISABLED);
    ck_assert_int_eq(gpuleak_running(), 0);
}
END_TEST

/* Before CUDA starts there is no table of blocks: checks see nothing, and a
 * checkpoint set then covers every later allocation. */
START_TEST(test_checkpoint_before_tracking)
{
    tu_pipeline_reset();
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
    ck_assert_int_eq(gpuleak_checkpoint("start"), 0);
    struct gpuleak_counts c = count("start");
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 0);
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    alloc(DEV(1), 100, stack_a);
    c = count("start");
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 100);
}
END_TEST

START_TEST(test_count_since_checkpoint)
{
    alloc(DEV(1), 1000, stack_a);
    alloc(DEV(2), 2000, stack_a);
    ck_assert_int_eq(gpuleak_checkpoint("test_one"), 0);
    alloc(DEV(3), 300, stack_b);
    alloc(DEV(4), 400, stack_b);
    release(DEV(4));

    struct gpuleak_counts c = count("test_one");
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 300);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    for (int k = GPULEAK_INDIRECT; k < GPULEAK_NKINDS; k++)
        ck_assert_uint_eq(c.blocks[k], 0);
    c = count(NULL);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 3300);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 3);

    /* Freeing what the test allocated: nothing left since the checkpoint. */
    release(DEV(3));
    c = count("test_one");
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 0);
    /* Setting the checkpoint again moves it. */
    alloc(DEV(5), 5, stack_c);
    ck_assert_int_eq(gpuleak_checkpoint("test_one"), 0);
    c = count("test_one");
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 0);
}
END_TEST

/* Allocation numbers are handed to threads in blocks: a checkpoint must still
 * come after every number taken before it, on every thread. */
static void *alloc_thread(void *arg)
{
    alloc((uint64_t)(uintptr_t)arg, 10, stack_c);
    return NULL;
}

START_TEST(test_checkpoint_orders_threads)
{
    pthread_t t;
    alloc(DEV(1), 10, stack_a); /* this thread takes a block of numbers */
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_thread, (void *)(uintptr_t)DEV(2)), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(gpuleak_checkpoint("cp"), 0);
    alloc(DEV(3), 10, stack_a); /* same thread, same block of numbers before the fix */
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_thread, (void *)(uintptr_t)DEV(4)), 0);
    pthread_join(t, NULL);
    struct gpuleak_counts c = count("cp");
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 2);
}
END_TEST

START_TEST(test_full_check_text)
{
    alloc(DEV(1), 1024, stack_a);
    alloc(DEV(2), 48, stack_b);
    char buf[16384];
    long errors = gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf);
    ck_assert_int_eq(errors, 2);
    char *text = unprefixed(buf);
    ck_assert_msg(strstr(text, "Leak check 1 (full): 1,072 bytes in 2 blocks in use\n\n"), "%s",
                  text);
    ck_assert_msg(
        strstr(text, "\n48 bytes in 1 blocks are definitely lost in loss record 1 of 2\n"), "%s",
        text);
    ck_assert_msg(
        strstr(text, "1,024 bytes in 1 blocks are definitely lost in loss record 2 of 2\n"), "%s",
        text);
    ck_assert_msg(strstr(text, "LEAK SUMMARY:\n   definitely lost: 1,072 bytes in 2 blocks\n"),
                  "%s", text);
    ck_assert_msg(!strstr(text, "ERROR SUMMARY"), "a mid-run check has no ERROR SUMMARY:\n%s",
                  text);
    ck_assert_msg(!strstr(text, "(+"), "a full check has no deltas:\n%s", text);
    free(text);
    /* The report went to the buffer, not the log. */
    char *log = read_log();
    ck_assert_str_eq(log, "");
    free(log);
}
END_TEST

/* Valgrind's DO_ADDED_LEAK_CHECK: records that grew or are new since the last
 * check, with deltas; the summary with deltas too. */
START_TEST(test_added_since_last_check)
{
    alloc(DEV(1), 100, stack_a);
    alloc(DEV(2), 7, stack_c);
    char buf[16384];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf), 2);
    alloc(DEV(3), 100, stack_a); /* record a grows */
    alloc(DEV(4), 10, stack_b);  /* record b is new */
    long errors = gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, NULL, buf, sizeof buf);
    ck_assert_int_eq(errors, 2); /* the two records printed */
    char *text = unprefixed(buf);
    ck_assert_msg(strstr(text, "Leak check 2 (added since the last check): 217 bytes in 4 blocks "
                               "in use\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "\n10 (+10) bytes in 1 (+1) blocks are definitely lost in new loss "
                               "record 2 of 3\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "\n200 (+100) bytes in 2 (+1) blocks are definitely lost in loss "
                               "record 3 of 3\n"),
                  "%s", text);
    ck_assert_msg(!strstr(text, "7 (+0) bytes"), "unchanged records are not added:\n%s", text);
    ck_assert_msg(strstr(text, "   definitely lost: 217 (+110) bytes in 4 (+2) blocks\n"), "%s",
                  text);
    ck_assert_msg(strstr(text, "        suppressed: 0 (+0) bytes in 0 (+0) blocks\n"), "%s", text);
    free(text);

    /* Nothing changed since: an added check prints no record and finds no error. */
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, NULL, buf, sizeof buf), 0);
    ck_assert_msg(!strstr(buf, "loss record"), "%s", buf);
}
END_TEST

START_TEST(test_changed_and_new)
{
    alloc(DEV(1), 100, stack_a);
    alloc(DEV(2), 100, stack_a);
    char buf[16384];
    gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf);
    release(DEV(2));            /* record a shrinks */
    alloc(DEV(3), 30, stack_b); /* record b is new */
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, NULL, buf, sizeof buf), 1);
    ck_assert_msg(!strstr(buf, "(-100)"), "a shrunk record is not added:\n%s", buf);

    release(DEV(3));
    alloc(DEV(4), 30, stack_c);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, NULL, buf, sizeof buf), 1);
    char *text = unprefixed(buf);
    /* b went away (Valgrind prints no record for it), c is new; a is unchanged. */
    ck_assert_msg(strstr(text, "30 (+30) bytes in 1 (+1) blocks are definitely lost in new loss "
                               "record 1 of 2\n"),
                  "%s", text);
    ck_assert_msg(!strstr(text, "100 (+0)"), "%s", text);
    free(text);

    release(DEV(1));
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, NULL, buf, sizeof buf), 0);
    text = unprefixed(buf);
    ck_assert_msg(strstr(text, "   definitely lost: 30 (-100) bytes in 1 (-1) blocks\n"), "%s",
                  text);
    free(text);

    alloc(DEV(5), 1, stack_a);
    alloc(DEV(6), 1, stack_c);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_NEW, NULL, buf, sizeof buf), 1);
    text = unprefixed(buf);
    ck_assert_msg(strstr(text, "1 (+1) bytes in 1 (+1) blocks are definitely lost in new loss "
                               "record 1 of 2\n"),
                  "%s", text);
    ck_assert_msg(!strstr(text, "31 (+1)"), "a grown record is not new:\n%s", text);
    free(text);
}
END_TEST

/* Since a named checkpoint: only the blocks allocated after it, and deltas
 * against the previous check of that same scope (none at first). */
START_TEST(test_checks_since_checkpoint)
{
    alloc(DEV(1), 100, stack_a);
    ck_assert_int_eq(gpuleak_checkpoint("before"), 0);
    alloc(DEV(2), 100, stack_a);
    alloc(DEV(3), 5, stack_b);
    char buf[16384];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, "before", buf, sizeof buf), 2);
    char *text = unprefixed(buf);
    ck_assert_msg(strstr(text, "Leak check 1 (full, allocated since checkpoint \"before\"): 105 "
                               "bytes in 2 blocks in use\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "100 bytes in 1 blocks are definitely lost in loss record 2 of 2\n"),
                  "%s", text);
    free(text);

    /* Nothing grew since check 1, in this scope. */
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, "before", buf, sizeof buf), 0);
    ck_assert_msg(strstr(buf, "Leak check 2 (added, allocated since checkpoint \"before\"): 105 "
                              "bytes in 2 blocks in use\n"),
                  "%s", buf);
    ck_assert_msg(!strstr(buf, "loss record"), "%s", buf);

    alloc(DEV(4), 100, stack_a);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, "before", buf, sizeof buf), 1);
    text = unprefixed(buf);
    ck_assert_msg(strstr(text, "200 (+100) bytes in 2 (+1) blocks are definitely lost in loss "
                               "record 2 of 2\n"),
                  "%s", text);
    free(text);
    /* The unnamed scope has seen no check yet: everything is new there. */
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_NEW, NULL, buf, sizeof buf), 2);
    text = unprefixed(buf);
    ck_assert_msg(strstr(text, "300 (+300) bytes in 3 (+3) blocks are definitely lost in new loss "
                               "record 2 of 2\n"),
                  "%s", text);
    free(text);

    /* Setting the checkpoint again starts a new scope. */
    ck_assert_int_eq(gpuleak_checkpoint("before"), 0);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, "before", buf, sizeof buf), 0);
    release(DEV(2));
    release(DEV(3));
    release(DEV(4));
    ck_assert_int_eq(gpuleak_checkpoint("before"), 0);
    alloc(DEV(5), 7, stack_c);
    release(DEV(5));
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, "before", buf, sizeof buf), 0);
    text = unprefixed(buf);
    ck_assert_msg(strstr(text, "All GPU memory allocated since checkpoint \"before\" was freed\n"),
                  "%s", text);
    free(text);
}
END_TEST

/* A delta check that finds nothing left still shows what went away. */
START_TEST(test_changed_to_nothing)
{
    ck_assert_int_eq(gpuleak_checkpoint("cp"), 0);
    alloc(DEV(1), 64, stack_a);
    char buf[8192];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, "cp", buf, sizeof buf), 1);
    release(DEV(1));
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, "cp", buf, sizeof buf), 0);
    char *text = unprefixed(buf);
    ck_assert_msg(strstr(text, "   definitely lost: 0 (-64) bytes in 0 (-1) blocks\n"), "%s", text);
    free(text);
    /* And once nothing changes any more, the short line. */
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, "cp", buf, sizeof buf), 0);
    ck_assert_msg(strstr(buf, "All GPU memory allocated since checkpoint \"cp\" was freed\n"), "%s",
                  buf);
}
END_TEST

START_TEST(test_bad_arguments)
{
    struct gpuleak_counts c;
    char buf[256];
    ck_assert_int_eq(gpuleak_count_leaks("nope", &c), -1);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_NEW, "nope", buf, sizeof buf), -1);
    ck_assert_int_eq(gpuleak_leak_check_to((enum gpuleak_check_mode)9, NULL, buf, sizeof buf), -1);
    ck_assert_int_eq(gpuleak_checkpoint(""), -1);
    ck_assert_int_eq(gpuleak_checkpoint(NULL), -1);
    char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert_int_eq(gpuleak_checkpoint(longname), -1);
    char *log = unprefixed(read_log());
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_count_leaks: no checkpoint named \"nope\" (set "
                              "one with gpuleak_checkpoint)\n"),
                  "%s", log);
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_leak_check: no checkpoint named \"nope\""), "%s",
                  log);
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_leak_check: unknown mode 9"), "%s", log);
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_checkpoint: a checkpoint name must be 1 to 63 "
                              "characters\n"),
                  "%s", log);
    ck_assert_msg(strstr(log, "must be 1 to 63 characters (got NULL)\n"), "%s", log);
    free(log);
}
END_TEST

/* A check without a buffer prints to the log (here --log-file), where the exit
 * report later goes too. */
START_TEST(test_check_prints_to_log)
{
    alloc(DEV(1), 64, stack_a);
    ck_assert_int_eq(gpuleak_leak_check(GPULEAK_CHECK_FULL, NULL), 1);
    char *log = unprefixed(read_log());
    ck_assert_msg(strstr(log, "64 bytes in 1 blocks are definitely lost in loss record 1 of 1\n"),
                  "%s", log);
    free(log);
}
END_TEST

START_TEST(test_buffer_truncated)
{
    alloc(DEV(1), 64, stack_a);
    char buf[40];
    memset(buf, 'z', sizeof buf);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf), 1);
    ck_assert_uint_eq(strlen(buf), sizeof buf - 1);
    ck_assert_msg(
        strncmp(buf, "Leak check 1 (full): 64 bytes in 1 blocks in use\n", sizeof buf - 1) == 0,
        "%s", buf);
}
END_TEST

/* --show-leak-kinds and --errors-for-leak-kinds hold for checks too. */
START_TEST(test_check_honours_kind_options)
{
    gl_runtime.opt.errors_for_leak_kinds = GL_LEAK_KIND_BIT(GL_LEAK_POSSIBLE);
    alloc(DEV(1), 64, stack_a);
    char buf[8192];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf), 0);
    ck_assert_msg(strstr(buf, "definitely lost in loss record"), "%s", buf);
    gl_runtime.opt.show_leak_kinds = GL_LEAK_KIND_BIT(GL_LEAK_POSSIBLE);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf), 0);
    ck_assert_msg(!strstr(buf, "loss record"), "%s", buf);
}
END_TEST

/* GPULEAK_KINDS: this check's kinds, shown and counted as errors. */
START_TEST(test_check_with_kinds)
{
    alloc(POOL_ADDR, 4096, stack_a);
    ck_assert_int_eq(gpuleak_pool_create((void *)(uintptr_t)POOL_ADDR, "k"), 0);
    alloc(DEV(1), 64, stack_b);
    char buf[8192];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf), 1);
    ck_assert_msg(!strstr(buf, "are cached in"), "%s", buf);
    long errors = gpuleak_leak_check_to(GPULEAK_CHECK_FULL | GPULEAK_KINDS(1u << GPULEAK_CACHED),
                                        NULL, buf, sizeof buf);
    ck_assert_int_eq(errors, 1);
    ck_assert_msg(strstr(buf, "4,096 bytes in 1 blocks are cached in loss record 2 of 2\n"), "%s",
                  buf);
    ck_assert_msg(!strstr(buf, "definitely lost in loss record"), "%s", buf);
    errors =
        gpuleak_leak_check_to(GPULEAK_CHECK_ADDED | GPULEAK_KINDS(0x1f), NULL, buf, sizeof buf);
    ck_assert_int_eq(errors, 0); /* nothing grew since the last check */
    ck_assert_int_eq(gpuleak_leak_check_to(7 | GPULEAK_KINDS(1), NULL, buf, sizeof buf), -1);
}
END_TEST

START_TEST(test_suppressed_counted)
{
    char path[4096];
    const char *t = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpuleak-client-api-%d.supp", t && *t ? t : "/tmp",
             (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    /* The fake frames have no symbols: Valgrind calls such a function "???". */
    fputs("{\n   hide_b\n   gpuleak:Leak\n   fun:???\n   fun:???\n}\n", f);
    fclose(f);
    char err[256];
    char opt[4200];
    snprintf(opt, sizeof opt, "--suppressions=%s", path);
    ck_assert_int_eq(gl_options_parse_env(&gl_runtime.opt, opt, err, sizeof err), 0);
    gl_runtime.opt.default_suppressions = false;
    alloc(DEV(1), 64, stack_a);
    alloc(DEV(2), 8, 0); /* no stack: no entry can match it */
    struct gpuleak_counts c = count(NULL);
    unlink(path);
    ck_assert_uint_eq(c.blocks[GPULEAK_SUPPRESSED], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_SUPPRESSED], 64);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 8);
    /* A second check counts afresh. */
    c = count(NULL);
    ck_assert_uint_eq(c.blocks[GPULEAK_SUPPRESSED], 1);
    const struct gl_supp_set *set = gl_run_suppressions_loaded();
    ck_assert_ptr_nonnull(set);
    ck_assert_uint_eq(set->n, 1);
    ck_assert_uint_eq(set->v[0].count, 1);
}
END_TEST

/* One suppression set for errors and leaks: an entry that hides an API error
 * counts every occurrence, beside the leak entries, in the set the reports'
 * used_suppression lines, suppcounts and suppressions_used read. */
START_TEST(test_error_suppression_shared)
{
    char path[4096];
    const char *t = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpuleak-client-api-err-%d.supp", t && *t ? t : "/tmp",
             (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\n   hide_free\n   gpuleak:InvalidFree\n   fun:???\n}\n"
          "{\n   hide_leak\n   gpuleak:Leak\n   fun:???\n}\n",
          f);
    fclose(f);
    char err[256], opt[4200];
    snprintf(opt, sizeof opt, "--suppressions=%s", path);
    ck_assert_int_eq(gl_options_parse_env(&gl_runtime.opt, opt, err, sizeof err), 0);
    gl_runtime.opt.default_suppressions = false;
    gl_errors_component.reset();
    gl_error_sink_install();
    for (int i = 0; i < 3; i++) { /* one context, three errors: frees the driver refused */
        struct gl_event ev = {.type = GL_EV_FREE,
                              .key = DEV(9),
                              .api = GL_API_cuMemFree_v2,
                              .tid = (uint32_t)getpid(),
                              .stack = stack_b};
        tu_release_end(tu_release_begin(&ev), false, &ev);
    }
    alloc(DEV(1), 64, stack_a);
    for (int check = 0; check < 2; check++) { /* counts are the run's, not summed */
        struct gpuleak_counts c = count(NULL);
        ck_assert_uint_eq(c.blocks[GPULEAK_SUPPRESSED], 1);
        const struct gl_supp_set *set = gl_run_suppressions_loaded();
        ck_assert_ptr_nonnull(set);
        ck_assert_uint_eq(set->n, 2);
        ck_assert_str_eq(set->v[0].name, "hide_free");
        ck_assert_uint_eq(set->v[0].count, 3);
        ck_assert_str_eq(set->v[1].name, "hide_leak");
        ck_assert_uint_eq(set->v[1].count, 1);
        ck_assert_uint_eq(set->v[1].bytes, 64);
    }
    struct gl_api_error_counts ec;
    gl_errors_counts(&ec);
    ck_assert_uint_eq(ec.suppressed, 3);
    ck_assert_uint_eq(ec.errors, 0);
    char *log = read_log();
    ck_assert_msg(!strstr(log, "Invalid free"), "%s", log);
    free(log);
    gl_errors_sink = NULL;
    unlink(path);
}
END_TEST

START_TEST(test_ignore)
{
    alloc(DEV(1), 64, stack_a);
    alloc(DEV(2), 32, stack_b);
    ck_assert_int_eq(gpuleak_ignore((void *)(uintptr_t)DEV(1)), 0);
    ck_assert_int_eq(gpuleak_ignore((void *)(uintptr_t)DEV(9)), -1);
    struct gpuleak_counts c = count(NULL);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 32);
    char buf[8192];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf), 1);
    char *text = unprefixed(buf);
    ck_assert_msg(strstr(text, "Leak check 1 (full): 96 bytes in 2 blocks in use\n"), "%s", text);
    ck_assert_msg(strstr(text, "32 bytes in 1 blocks are definitely lost in loss record 1 of 1\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "           ignored: 64 bytes in 1 blocks\n"), "%s", text);
    free(text);
    char *log = unprefixed(read_log());
    ck_assert_msg(
        strstr(log, "gpuleak: gpuleak_ignore: no block gpuleak tracks starts at 0x7f00009"), "%s",
        log);
    free(log);
}
END_TEST

START_TEST(test_disable_enable_nest)
{
    ck_assert_int_eq(gpuleak_disable(), 1);
    ck_assert_int_eq(gpuleak_disable(), 2);
    ck_assert_int_eq(gl_thread_self()->disabled, 2);
    ck_assert_int_eq(gpuleak_enable(), 1);
    ck_assert_int_eq(gpuleak_enable(), 0);
    ck_assert_int_eq(gpuleak_enable(), -1);
    ck_assert_int_eq(gl_thread_self()->disabled, 0);
    char *log = unprefixed(read_log());
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_enable: called without a matching "
                              "gpuleak_disable on thread "),
                  "%s", log);
    free(log);
}
END_TEST

/* Depth is per thread. */
static void *disable_on_thread(void *arg)
{
    *(int *)arg = gpuleak_disable();
    return NULL;
}

/* A thread that exits inside gpuleak_disable() does not pass it on to the
 * thread that gets its recycled state. */
static void *disable_and_exit(void *arg)
{
    (void)arg;
    gpuleak_disable();
    return NULL;
}

static void *depth_of_new_thread(void *arg)
{
    *(int *)arg = gl_thread_self()->disabled;
    return NULL;
}

START_TEST(test_disable_not_inherited_by_next_thread)
{
    pthread_t t;
    int depth = -1;
    ck_assert_int_eq(pthread_create(&t, NULL, disable_and_exit, NULL), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(pthread_create(&t, NULL, depth_of_new_thread, &depth), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(depth, 0);
}
END_TEST

START_TEST(test_disable_per_thread)
{
    int other = 0;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, disable_on_thread, &other), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(other, 1);
    ck_assert_int_eq(gl_thread_self()->disabled, 0);
}
END_TEST

START_TEST(test_pool)
{
    struct gpuleak_counts c;
    ck_assert_int_eq(gpuleak_pool_create((void *)(uintptr_t)POOL, "arena"), -1); /* untracked */
    alloc(POOL, 1 << 20, stack_a);
    ck_assert_int_eq(gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)POOL, 64), -1);
    ck_assert_int_eq(gpuleak_pool_create((void *)(uintptr_t)POOL, "arena"), 0);

    /* A sub-allocation may start at the pool's own address. */
    ck_assert_int_eq(gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)POOL, 4096), 0);
    ck_assert_int_eq(
        gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)(POOL + 4096), 1000), 0);
    /* Outside the pool. */
    ck_assert_int_eq(
        gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)(POOL + (1 << 20) - 8), 16),
        -1);
    ck_assert_int_eq(gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)(POOL - 8), 4),
                     -1);

    c = count(NULL);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 2);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 5096);
    ck_assert_uint_eq(c.blocks[GPULEAK_CACHED], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_CACHED], (1 << 20) - 5096);

    /* Sub-allocations are not GPU allocations. */
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.live_bytes, 1 << 20);

    char buf[16384];
    gl_runtime.opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, buf, sizeof buf);
    char *text = unprefixed(buf);
    ck_assert_msg(strstr(text, "Leak check 1 (full): 1,048,576 bytes in 3 blocks in use\n"), "%s",
                  text);
    /* Without an unwinder here both have no stack: one record. */
    ck_assert_msg(
        strstr(text, "5,096 bytes in 2 blocks are definitely lost in loss record 1 of 2\n"), "%s",
        text);
    ck_assert_msg(strstr(text, "pool sub-allocation from gpuleak_pool_alloc, allocations #"), "%s",
                  text);
    ck_assert_msg(strstr(text, ", in pool 0x7f0000a00000 \"arena\""), "%s", text);
    ck_assert_msg(strstr(text, "1,043,480 bytes in 1 blocks are cached in loss record"), "%s",
                  text);
    ck_assert_msg(strstr(text, "custom pool \"arena\": its part not sub-allocated"), "%s", text);
    free(text);

    ck_assert_int_eq(gpuleak_pool_free((void *)(uintptr_t)POOL, (void *)(uintptr_t)POOL), 0);
    ck_assert_int_eq(gpuleak_pool_free((void *)(uintptr_t)POOL, (void *)(uintptr_t)POOL), -1);
    c = count(NULL);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_CACHED], (1 << 20) - 1000);
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);

    /* Destroying the pool forgets its sub-allocations; the block stays. */
    ck_assert_int_eq(gpuleak_pool_destroy((void *)(uintptr_t)POOL), 0);
    ck_assert_int_eq(gpuleak_pool_destroy((void *)(uintptr_t)POOL), -1);
    c = count(NULL);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 1 << 20);
    ck_assert_uint_eq(c.blocks[GPULEAK_CACHED], 0);

    char *log = unprefixed(read_log());
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_pool_create: 0x7f0000a00000 is not the start of a "
                              "block gpuleak tracks"),
                  "%s", log);
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_pool_alloc: 0x7f0000a00000 is not a pool"), "%s",
                  log);
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_pool_alloc: 16 bytes at 0x7f0000affff8 lie outside "
                              "pool 0x7f0000a00000 of 1048576 bytes"),
                  "%s", log);
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_pool_free: no sub-allocation of pool "
                              "0x7f0000a00000 starts at 0x7f0000a00000"),
                  "%s", log);
    free(log);
}
END_TEST

/* Freeing the pool's memory takes its sub-allocations with it. */
START_TEST(test_pool_block_freed)
{
    alloc(POOL, 1 << 20, stack_a);
    ck_assert_int_eq(gpuleak_pool_create((void *)(uintptr_t)POOL, NULL), 0);
    ck_assert_int_eq(
        gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)(POOL + 64), 64), 0);
    ck_assert_int_eq(gpuleak_checkpoint("cp"), 0);
    ck_assert_int_eq(
        gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)(POOL + 128), 32), 0);
    /* Since the checkpoint: the later sub-allocation only (the pool predates it). */
    struct gpuleak_counts c = count("cp");
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 1);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 32);
    ck_assert_uint_eq(c.blocks[GPULEAK_CACHED], 0);
    char name[16];
    gl_pools_set_name(POOL, "doomed");
    ck_assert(gl_pools_name(POOL, name, sizeof name));
    release(POOL);
    c = count(NULL);
    for (int k = 0; k < GPULEAK_NKINDS; k++)
        ck_assert_uint_eq(c.blocks[k], 0);
    /* Its name went with it, at the next check. */
    ck_assert(!gl_pools_name(POOL, name, sizeof name));
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.frees, 1);
}
END_TEST

/* A pool sub-allocation made while tracking is disabled is never reported. */
START_TEST(test_pool_alloc_while_disabled)
{
    alloc(POOL, 4096, stack_a);
    ck_assert_int_eq(gpuleak_pool_create((void *)(uintptr_t)POOL, "p"), 0);
    gpuleak_disable();
    ck_assert_int_eq(gpuleak_pool_alloc((void *)(uintptr_t)POOL, (void *)(uintptr_t)POOL, 64), 0);
    gpuleak_enable();
    struct gpuleak_counts c = count(NULL);
    ck_assert_uint_eq(c.blocks[GPULEAK_DEFINITE], 0);
    ck_assert_uint_eq(c.bytes[GPULEAK_CACHED], 4096 - 64);
}
END_TEST

/* The pool calls need tracking: before CUDA starts there are no blocks. */
START_TEST(test_pool_needs_tracking)
{
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
    ck_assert_int_eq(gpuleak_pool_create((void *)(uintptr_t)POOL, "p"), -1);
    ck_assert_int_eq(gpuleak_ignore((void *)(uintptr_t)POOL), -1);
}
END_TEST

/* Two functions of this program, for a stack that symbolizes. */
__attribute__((noinline)) static int profiled_inner(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int profiled_outer(int x) { return profiled_inner(x) + 2; }

/* A region through the header: its figures, its sites and their frames as
 * "FILE:LINE:FUNCTION" lines; an id ended twice is refused, with a line. */
START_TEST(test_profile_region)
{
    ck_assert_int_eq(profiled_outer(1), 6);
    const struct gpuleak_api *t = gpuleak_api_parse(getenv(GPULEAK_API_ENV));
    ck_assert_uint_eq(t->version, 3);
    ck_assert_ptr_eq(t->profile_end, gpuleak_runtime_profile_end);
    uintptr_t ips[] = {(uintptr_t)profiled_inner + 4, (uintptr_t)profiled_outer + 4};
    uint32_t site = gl_stack_depot_intern(ips, 2);
    alloc(DEV(1), 1000, stack_a);
    int id = gpuleak_profile_begin("step");
    ck_assert_int_ge(id, 0);
    alloc(DEV(2), 3 << 20, site);
    alloc(DEV(3), 1 << 20, stack_b);
    release(DEV(2));
    release(DEV(1));
    struct gpuleak_profile p;
    struct gpuleak_profile_device d[4];
    ck_assert_int_eq(gpuleak_profile_end(id, &p, d, 4), 1);
    ck_assert_int_eq(p.ndevices, 1);
    ck_assert_uint_eq(p.tid, gl_thread_id());
    ck_assert_uint_eq(p.other_thread_events, 2); /* the frees here name no thread */
    ck_assert_int_eq(d[0].device, 0);
    ck_assert_uint_eq(d[0].flags, 0);
    ck_assert_uint_eq(d[0].live_at_open, 1000);
    ck_assert_uint_eq(d[0].live_at_close, 1 << 20);
    ck_assert_uint_eq(d[0].peak, 1000 + (4 << 20));
    ck_assert_uint_ne(d[0].peak_seq, 0);
    ck_assert_uint_eq(d[0].allocated, 4 << 20);
    ck_assert_uint_eq(d[0].freed, (3 << 20) + 1000);
    ck_assert_uint_eq(d[0].allocs, 2);
    ck_assert_uint_eq(d[0].frees, 2);
    ck_assert_uint_eq(d[0].nsites, 3);
    ck_assert_uint_eq(d[0].sites[0].stack, site);
    ck_assert_uint_eq(d[0].sites[0].bytes, 3 << 20);
    ck_assert_uint_eq(d[0].sites[0].blocks, 1);
    ck_assert_uint_eq(d[0].sites[2].stack, stack_a);

    char text[4096];
    long len = gpuleak_profile_frames(site, text, sizeof text);
    ck_assert_int_eq(len, (long)strlen(text));
    ck_assert_msg(strstr(text, ":profiled_inner\n") && strstr(text, ":profiled_outer\n") &&
                      strstr(text, ":profiled_inner\n") < strstr(text, ":profiled_outer\n"),
                  "frames: %s", text);
    ck_assert_msg(strstr(text, "check_client_api.c:"), "frames: %s", text);
    char small[8];
    ck_assert_int_eq(gpuleak_profile_frames(site, small, sizeof small), len);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_int_eq(gpuleak_profile_frames(0, text, sizeof text), -1);
    ck_assert_str_eq(text, "");

    ck_assert_int_eq(gpuleak_profile_end(id, &p, d, 4), -1);
    ck_assert_int_eq(p.ndevices, 0);
    char *log = unprefixed(read_log());
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_profile_end: "), "log: %s", log);
    free(log);
    /* No room for devices: the count all the same. */
    id = gpuleak_profile_begin(NULL);
    ck_assert_int_eq(gpuleak_profile_end(id, &p, NULL, 0), 0);
    ck_assert_int_eq(p.ndevices, 1);
}
END_TEST

static void alloc_on(int device, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_DEVICE,
                          .api = GL_API_cuMemAlloc_v2,
                          .device = (int16_t)device,
                          .tid = (uint32_t)getpid(),
                          .stack = stack,
                          .key = addr,
                          .size = size,
                          .ctx = device ? 0xc2 : 0xc1};
    gl_dispatch(&ev);
}

/* Three sites on device 0 (3, 2 and 1 MiB), one on device 1 (1 MiB). */
static int profiled_two_devices(void)
{
    int id = gpuleak_profile_begin("sizes");
    ck_assert_int_ge(id, 0);
    alloc_on(0, DEV(1), 3 << 20, stack_a);
    alloc_on(0, DEV(2), 2 << 20, stack_b);
    alloc_on(0, DEV(3), 1 << 20, stack_c);
    alloc_on(1, DEV(4), 1 << 20, stack_a);
    return id;
}

static void forget_two_devices(void)
{
    for (int i = 1; i <= 4; i++)
        release(DEV(i));
}

/* gpuleak.h's rule for the output structs: the caller's sizes, whatever they
 * are, are the stride and the bound of what the runtime writes. */
START_TEST(test_profile_struct_sizes)
{
    const struct gpuleak_api *t = gpuleak_api_parse(getenv(GPULEAK_API_ENV));
    ck_assert_ptr_eq(t->profile_end, gpuleak_runtime_profile_end);

    /* A newer header's structs, a member appended to each: written at their
     * stride, the members this runtime does not know zeroed, nothing past
     * max_devices touched. */
    struct newer_profile {
        struct gpuleak_profile p;
        unsigned long long appended;
    } np;
    struct newer_device {
        struct gpuleak_profile_device d;
        unsigned long long appended;
    } nd[3];
    memset(&np, 0xab, sizeof np);
    memset(nd, 0xab, sizeof nd);
    int id = profiled_two_devices();
    ck_assert_int_eq(
        t->profile_end(id, &np.p, sizeof np, &nd[0].d, sizeof nd[0], 2, GPULEAK_PROFILE_SITES), 2);
    ck_assert_int_eq(np.p.ndevices, 2);
    ck_assert_uint_eq(np.appended, 0);
    ck_assert_int_eq(nd[0].d.device, 0);
    ck_assert_uint_eq(nd[0].d.peak, 6 << 20);
    ck_assert_uint_eq(nd[0].d.nsites, 3);
    ck_assert_uint_eq(nd[0].d.sites[2].stack, stack_c);
    ck_assert_uint_eq(nd[0].appended, 0);
    ck_assert_int_eq(nd[1].d.device, 1);
    ck_assert_uint_eq(nd[1].d.peak, 1 << 20);
    ck_assert_uint_eq(nd[1].d.nsites, 1);
    ck_assert_uint_eq(nd[1].appended, 0);
    const unsigned char *third = (const unsigned char *)&nd[2];
    for (size_t i = 0; i < sizeof nd[2]; i++)
        ck_assert_uint_eq(third[i], 0xab);
    forget_two_devices();

    /* A smaller struct, room for 2 sites: 2 at most, and not a byte more. */
    size_t small =
        offsetof(struct gpuleak_profile_device, sites) + 2 * sizeof(struct gpuleak_profile_site);
    unsigned char buf[2 * sizeof(struct gpuleak_profile_device)];
    memset(buf, 0xab, sizeof buf);
    struct gpuleak_profile p;
    id = profiled_two_devices();
    ck_assert_int_eq(t->profile_end(id, &p, sizeof p, (struct gpuleak_profile_device *)buf, small,
                                    2, GPULEAK_PROFILE_SITES),
                     2);
    for (size_t i = 2 * small; i < sizeof buf; i++)
        ck_assert_uint_eq(buf[i], 0xab);
    struct gpuleak_profile_device d0, d1;
    memset(&d0, 0, sizeof d0);
    memset(&d1, 0, sizeof d1);
    memcpy(&d0, buf, small);
    memcpy(&d1, buf + small, small);
    ck_assert_int_eq(d0.device, 0);
    ck_assert_uint_eq(d0.peak, 6 << 20);
    ck_assert_uint_eq(d0.nsites, 2);
    ck_assert_uint_eq(d0.sites[0].stack, stack_a);
    ck_assert_uint_eq(d0.sites[1].stack, stack_b);
    ck_assert_int_eq(d1.device, 1);
    ck_assert_uint_eq(d1.nsites, 1);
    forget_two_devices();

    /* No sites asked for: none, said to be inexact, the figures all there. */
    struct gpuleak_profile_device d[2];
    id = profiled_two_devices();
    ck_assert_int_eq(gpuleak_profile_end_sites(id, &p, d, 2, 0), 2);
    ck_assert_uint_eq(d[0].nsites, 0);
    ck_assert_uint_eq(d[0].flags, GPULEAK_PROFILE_SITES_INEXACT);
    ck_assert_uint_eq(d[0].peak, 6 << 20);
    ck_assert_uint_eq(d[0].allocs, 3);
    ck_assert_uint_eq(d[1].nsites, 0);
    forget_two_devices();
    /* Some: as many as asked. */
    id = profiled_two_devices();
    ck_assert_int_eq(gpuleak_profile_end_sites(id, &p, d, 2, 1), 2);
    ck_assert_uint_eq(d[0].nsites, 1);
    ck_assert_uint_eq(d[0].sites[0].stack, stack_a);
    ck_assert_uint_eq(d[0].flags, 0);
    forget_two_devices();

    /* Neither struct: the region ends all the same. */
    id = profiled_two_devices();
    ck_assert_int_eq(gpuleak_profile_end_sites(id, NULL, NULL, 0, 0), 0);
    ck_assert_int_eq(gpuleak_profile_end(id, &p, d, 2), -1);
    ck_assert_uint_eq(gl_regions_open_count(NULL, 0), 0);
    forget_two_devices();
}
END_TEST

/* Ended while the runtime cannot work (its start failed, a fork child): -1,
 * and the region is ended all the same, its slot and the demand given back. */
START_TEST(test_profile_end_unusable)
{
    static const int states[] = {GL_RT_FAILED, GL_RT_DISABLED, GL_RT_REPORTED};
    for (size_t i = 0; i < sizeof states / sizeof *states; i++) {
        atomic_store(&gl_runtime.state, GL_RT_TRACKING);
        int id = gpuleak_profile_begin("left open");
        ck_assert_int_ge(id, 0);
        ck_assert_int_eq(atomic_load(&gl_dispatch_tables.demand), 1);
        atomic_store(&gl_runtime.state, states[i]);
        struct gpuleak_profile p;
        struct gpuleak_profile_device d[2];
        memset(&p, 0xff, sizeof p);
        ck_assert_int_eq(gpuleak_profile_end(id, &p, d, 2), -1);
        ck_assert_int_eq(p.ndevices, 0);
        ck_assert_uint_eq(p.duration_ns, 0);
        ck_assert_uint_eq(gl_regions_open_count(NULL, 0), 0);
        ck_assert_int_eq(atomic_load(&gl_dispatch_tables.demand), 0);
        atomic_store(&gl_runtime.state, GL_RT_TRACKING);
        ck_assert_int_eq(gpuleak_profile_end(id, &p, d, 2), -1); /* ended */
    }
}
END_TEST

/* Every slot taken: -1, and a line that counts them and names one. */
START_TEST(test_profile_too_many)
{
    int ids[GL_REGIONS_MAX];
    ids[0] = gpuleak_profile_begin("the first one");
    for (int i = 1; i < GL_REGIONS_MAX; i++)
        ids[i] = gpuleak_profile_begin(NULL);
    ck_assert_int_eq(gpuleak_profile_begin("one too many"), -1);
    char *log = unprefixed(read_log());
    ck_assert_msg(strstr(log, "gpuleak: gpuleak_profile_begin: 64 regions are open already") &&
                      strstr(log, "\"the first one\""),
                  "log: %s", log);
    free(log);
    for (int i = 0; i < GL_REGIONS_MAX; i++)
        ck_assert_int_eq(gpuleak_profile_end_sites(ids[i], NULL, NULL, 0, 0), 0);
}
END_TEST

static Suite *client_api_suite(void)
{
    Suite *s = suite_create("client_api");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_table_after_fork);
    tcase_add_test(tc, test_table_not_followed_after_exec);
    tcase_add_test(tc, test_running);
    tcase_add_test(tc, test_checkpoint_before_tracking);
    tcase_add_test(tc, test_count_since_checkpoint);
    tcase_add_test(tc, test_checkpoint_orders_threads);
    tcase_add_test(tc, test_full_check_text);
    tcase_add_test(tc, test_added_since_last_check);
    tcase_add_test(tc, test_changed_and_new);
    tcase_add_test(tc, test_checks_since_checkpoint);
    tcase_add_test(tc, test_changed_to_nothing);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_check_prints_to_log);
    tcase_add_test(tc, test_buffer_truncated);
    tcase_add_test(tc, test_check_honours_kind_options);
    tcase_add_test(tc, test_check_with_kinds);
    tcase_add_test(tc, test_suppressed_counted);
    tcase_add_test(tc, test_error_suppression_shared);
    tcase_add_test(tc, test_ignore);
    tcase_add_test(tc, test_disable_enable_nest);
    tcase_add_test(tc, test_disable_per_thread);
    tcase_add_test(tc, test_disable_not_inherited_by_next_thread);
    tcase_add_test(tc, test_pool);
    tcase_add_test(tc, test_pool_block_freed);
    tcase_add_test(tc, test_pool_alloc_while_disabled);
    tcase_add_test(tc, test_pool_needs_tracking);
    tcase_add_test(tc, test_profile_region);
    tcase_add_test(tc, test_profile_struct_sizes);
    tcase_add_test(tc, test_profile_end_unusable);
    tcase_add_test(tc, test_profile_too_many);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* test_table_not_followed_after_exec runs this program again, to parse the
     * variable it inherited from its parent image: NULL, or it failed. */
    if (getenv("GPULEAK_TEST_PARSE_ONLY"))
        return gpuleak_api_parse(getenv(GPULEAK_API_ENV)) == NULL ? 0 : 1;
    SRunner *sr = srunner_create(client_api_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
