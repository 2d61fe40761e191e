/* SPDX-License-Identifier: MIT */
/* lib/exit_report.h: the whole exit report without a GPU: blocks put in the
 * tracker by hand, stacks of this program's own functions in the depot, the report
 * written to a --log-file and read back.  No CUDA driver is loaded here, so device
 * names are unknown and imported sizes come from VMM mappings only.
 *
 * Built with -g -O0 (and optimize("O0") on the functions whose lines are named). */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "report/error_sink.h"
#include "exit_report.h"
#include "heap/heap.h"
#include "runtime.h"
#include "event/api.h"
#include "track/quarantine.h"
#include "track/errors.h"
#include "observe/cupti.h"
#include "stack/modules.h"
#include "stack/stack_depot.h"
#include "track/tracker.h"

#define TEST_FN __attribute__((noinline, noipa, used, optimize("O0")))

static volatile int sink;
static int site_line, outer_line;

TEST_FN uintptr_t gl_er_return_address(void) { return (uintptr_t)__builtin_return_address(0); }

TEST_FN void gl_er_site(uintptr_t *f)
{
    /* The call and __LINE__ must share a line: */
    // clang-format off
    f[0] = gl_er_return_address(); site_line = __LINE__;
    // clang-format on
    f[1] = (uintptr_t)__builtin_return_address(0);
    sink++;
}

TEST_FN void gl_er_outer(uintptr_t *f)
{
    /* The call and __LINE__ must share a line: */
    // clang-format off
    gl_er_site(f); outer_line = __LINE__;
    // clang-format on
    sink++;
}

static char log_path[4096];
static char pfx[32]; /* "==PID== " */

static void setup(void)
{
    gl_tracker_init();
    tu_pipeline_reset();
    gl_modules_clear();
    gl_heap_set_active(true); /* as under the launcher: the reachability scan runs */
    gl_options_defaults(&gl_runtime.opt);
    const char *t = getenv("TMPDIR");
    snprintf(gl_runtime.opt.log_file, sizeof gl_runtime.opt.log_file,
             "%s/gpuleak-exit-report.%%p.log", t && *t ? t : "/tmp");
    snprintf(log_path, sizeof log_path, "%s/gpuleak-exit-report.%d.log", t && *t ? t : "/tmp",
             (int)getpid());
    unlink(log_path);
    gl_runtime.pid = getpid();
    snprintf(gl_runtime.command, sizeof gl_runtime.command, "./app --exit-report");
    snprintf(pfx, sizeof pfx, "==%d== ", (int)getpid());
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
}

static void teardown(void)
{
    unlink(log_path);
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
}

static char *read_log(void)
{
    FILE *f = fopen(log_path, "r");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *copy = strdup(buf);
    unlink(log_path);
    return copy;
}

/* Not inlined: the event, with the block's address, must lie in a frame of its
 * own that scrub_stack() can overwrite, not in the test's live frame, where
 * the conservative scan would find it and call the block still reachable. */
static __attribute__((noinline)) void alloc(uint64_t key, uint64_t size, enum gl_mem_kind kind,
                                            unsigned api, int device, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.key = key;
    ev.size = size;
    ev.kind = (uint8_t)kind;
    ev.api = (uint16_t)api;
    ev.device = (int16_t)device;
    ev.ctx = 0xc1;
    ev.tid = (uint32_t)getpid();
    ev.stack = stack;
    gl_dispatch(&ev);
}

static __attribute__((noinline)) void event(enum gl_event_type type, uint64_t key, uint64_t size,
                                            uint64_t aux)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.key = key;
    ev.size = size;
    ev.aux = aux;
    gl_dispatch(&ev);
}

/* Append one report line to buf: "==PID== text", or "==PID==" when text is empty. */
static void line(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(char *buf, size_t len, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t l = strlen(buf);
    if (text[0])
        snprintf(buf + l, len - l, "%s%s\n", pfx, text);
    else
        snprintf(buf + l, len - l, "%.*s\n", (int)strlen(pfx) - 1, pfx);
}

/* Overwrite the dead frames below the caller's, where a block's address may
 * linger for the conservative scan to find. */
static __attribute__((noinline)) void scrub_stack(void)
{
    volatile char area[16384];
    memset((char *)area, 0, sizeof area);
}

START_TEST(test_full_report)
{
    uintptr_t f[2];
    gl_er_outer(f);
    uint32_t stack = gl_stack_depot_intern(f, 2);
    ck_assert_uint_ne(stack, 0);
    alloc(0x7f0000200000, 1048576, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, stack);
    alloc(0x7fff00001000, 100, GL_MEM_HOST_PINNED, GL_API_cuMemAllocHost_v2, -1, 0);
    alloc(0x7f0000400000, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, stack);
    event(GL_EV_FREE, 0x7f0000400000, 0, 0);
    scrub_stack(); /* the pinned block's address, left in the events' frames */

    gl_exit_report();
    ck_assert_int_eq(atomic_load(&gl_runtime.state), GL_RT_REPORTED);
    char *got = read_log();
    ck_assert_msg(got != NULL, "no report in %s", log_path);

    static char want[16384];
    want[0] = '\0';
    line(want, sizeof want, "gpuleak-%s, a GPU memory leak detector", PACKAGE_VERSION);
    line(want, sizeof want, "Command: ./app --exit-report");
    line(want, sizeof want, "%s", "");
    line(want, sizeof want, "100 bytes in 1 blocks are definitely lost in loss record 1 of 2");
    line(want, sizeof want, "   (no stack recorded)");
    line(want, sizeof want,
         " Block 0x7fff00001000 in host memory: pinned host memory from "
         "cuMemAllocHost_v2, allocation #2");
    line(want, sizeof want, "%s", "");
    line(want, sizeof want,
         "1,048,576 bytes in 1 blocks are definitely lost in loss record 2 of 2");
    line(want, sizeof want, "   at 0x%" PRIXPTR ": gl_er_site (check_exit_report.c:%d)", f[0],
         site_line);
    line(want, sizeof want, "   by 0x%" PRIXPTR ": gl_er_outer (check_exit_report.c:%d)", f[1],
         outer_line);
    line(want, sizeof want,
         " Block 0x7f0000200000 on device 0: device memory from cuMemAlloc_v2, "
         "allocation #1");
    line(want, sizeof want, "%s", "");
    line(want, sizeof want, "GPU MEMORY SUMMARY:");
    line(want, sizeof want, "    in use at exit: 1,048,676 bytes in 2 blocks");
    /* Spelled as issue 2's example report: see TOTAL_USAGE in check_report_text.c. */
    line(want, sizeof want,
         "  total GPU usage: 3 allocs, 1 frees, 1,052,772 bytes allocated, "
         "peak 1,052,772 bytes");
    /* Per device: device 0 peaked when allocation #3 (4,096 bytes, freed since) joined
     * #1's 1 MiB; host memory at #2, the pinned block (no stack recorded). */
    line(want, sizeof want,
         "  device 0: in use 1,048,576 bytes, peak 1,052,672 bytes, reached by allocation");
    line(want, sizeof want, "    #3 at:");
    line(want, sizeof want, "       at 0x%" PRIXPTR ": gl_er_site (check_exit_report.c:%d)", f[0],
         site_line);
    line(want, sizeof want, "       by 0x%" PRIXPTR ": gl_er_outer (check_exit_report.c:%d)", f[1],
         outer_line);
    line(want, sizeof want,
         "    device memory: in use 1,048,576 bytes in 1 blocks, peak 1,052,672 bytes in 2 "
         "blocks; 2 allocs, 1 frees");
    line(want, sizeof want,
         "  host memory: in use 100 bytes, peak 100 bytes, reached by allocation");
    line(want, sizeof want, "    #2 at:");
    line(want, sizeof want, "       (no stack recorded)");
    line(want, sizeof want,
         "    pinned host memory: in use 100 bytes in 1 blocks, peak 100 bytes in 1 blocks; 1 "
         "allocs, 0 frees");
    line(want, sizeof want, "%s", "");
    line(want, sizeof want, "LEAK SUMMARY:");
    line(want, sizeof want, "   definitely lost: 1,048,676 bytes in 2 blocks");
    line(want, sizeof want, "   indirectly lost: 0 bytes in 0 blocks");
    line(want, sizeof want, "     possibly lost: 0 bytes in 0 blocks");
    line(want, sizeof want, "   still reachable: 0 bytes in 0 blocks");
    line(want, sizeof want, "            cached: 0 bytes in 0 blocks");
    line(want, sizeof want, "        suppressed: 0 bytes in 0 blocks");
    line(want, sizeof want, "%s", "");
    line(want, sizeof want, "ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)");
    tu_assert_text_eq(got, want);
    free(got);

    /* Once only. */
    gl_exit_report();
    ck_assert_ptr_null(read_log());
}
END_TEST

/* An API error printed while the program runs comes after the report's
 * preamble, which the exit report then does not repeat (Valgrind's order). */
START_TEST(test_preamble_before_first_error)
{
    gl_errors_component.reset();
    gl_error_sink_install();
    gl_errors_capture_stack = NULL;
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_FREE;
    ev.api = GL_API_cuMemFree_v2;
    ev.key = 0x12345000;
    tu_release_end(tu_release_begin(&ev), false, &ev);
    char *got = read_log();
    ck_assert_ptr_nonnull(got);
    char head[1024] = "";
    line(head, sizeof head, "gpuleak-%s, a GPU memory leak detector", PACKAGE_VERSION);
    line(head, sizeof head, "Command: ./app --exit-report");
    line(head, sizeof head, "%s", "");
    line(head, sizeof head,
         "Invalid free: cuMemFree_v2(0x12345000): an address gpuleak never saw allocated");
    ck_assert_msg(strncmp(got, head, strlen(head)) == 0, "got:\n%s\nwant first:\n%s", got, head);
    free(got);

    gl_exit_report(); /* read_log took what came before: this is the rest */
    got = read_log();
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(!strstr(got, "Command: "), "preamble repeated:\n%s", got);
    ck_assert_ptr_nonnull(strstr(got, "ERROR SUMMARY: 1 errors from 1 contexts"));
    free(got);
    gl_errors_sink = NULL;
}
END_TEST

START_TEST(test_no_report_unless_tracking)
{
    alloc(0x7f0000200000, 64, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 0);
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
    gl_exit_report();
    ck_assert_ptr_null(read_log());
    atomic_store(&gl_runtime.state, GL_RT_FAILED);
    gl_exit_report();
    ck_assert_ptr_null(read_log());
    ck_assert_int_eq(atomic_load(&gl_runtime.state), GL_RT_FAILED);
}
END_TEST

START_TEST(test_no_report_in_another_process)
{
    /* A forked child that still believes it tracks: not its blocks to report. */
    alloc(0x7f0000200000, 64, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 0);
    gl_runtime.pid = getppid();
    gl_exit_report();
    ck_assert_ptr_null(read_log());
    /* Nor may it claim the report: a vfork child shares its parent's memory. */
    ck_assert_int_eq(atomic_load(&gl_runtime.state), GL_RT_TRACKING);
}
END_TEST

/* In a function of its own: the blocks' addresses must not stay in the
 * test's frame, where the reachability scan would find them. */
static __attribute__((noinline)) void import_and_map_handle(void)
{
    const uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x55);
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.key = h;
    ev.kind = GL_MEM_VMM;
    ev.api = GL_API_cuMemImportFromShareableHandle;
    ev.device = 0;
    ev.tid = (uint32_t)getpid();
    ev.flags = GL_EVF_SIZE_UNKNOWN;
    gl_dispatch(&ev);
    event(GL_EV_VMM_MAP, 0x6f4000000000, 1048576, h);
    event(GL_EV_VMM_MAP, 0x6f4000100000, 1048576, h);
}

START_TEST(test_imported_handle_sized_by_mappings)
{
    /* An imported VMM handle's size is unknown until report time: its mappings
     * tell it. */
    import_and_map_handle();
    gl_exit_report();
    char *got = read_log();
    ck_assert_ptr_nonnull(got);
    char want[512];
    snprintf(want, sizeof want,
             "%s2,097,152 bytes in 1 blocks are definitely lost in loss record 1 of 1\n", pfx);
    ck_assert_msg(strstr(got, want) != NULL, "%s", got);
    ck_assert_ptr_null(strstr(got, "size unknown"));
    ck_assert_ptr_nonnull(strstr(got, "VMM physical memory from cuMemImportFromShareableHandle, "
                                      "allocation #1, still mapped at 0x6f40"));
    free(got);
}
END_TEST

/* In a function of its own: the block's address must not stay in the test's
 * frame, where the reachability scan would find it. */
static __attribute__((noinline)) void open_ipc_block(void)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.key = 0x7f5000000000;
    ev.kind = GL_MEM_IPC;
    ev.api = GL_API_cuIpcOpenMemHandle_v2;
    ev.device = 1;
    ev.tid = (uint32_t)getpid();
    ev.flags = GL_EVF_SIZE_UNKNOWN;
    gl_dispatch(&ev);
}

START_TEST(test_unknown_size_stays_unknown)
{
    /* IPC memory needs the driver to be measured; there is none here. */
    open_ipc_block();
    scrub_stack();
    gl_exit_report();
    char *got = read_log();
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(strstr(got, " Block 0x7f5000000000 on device 1: IPC-imported memory from "
                              "cuIpcOpenMemHandle_v2, allocation #1, size unknown\n"),
                  "%s", got);
    free(got);
}
END_TEST

START_TEST(test_verbose_lines)
{
    gl_runtime.opt.verbose = 1;
    alloc(0x7f0000200000, 64, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 0);
    alloc(0x7f0000200000, 32, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 0); /* replaced */
    event(GL_EV_FREE, 0x7f0000900000, 0, 0);                              /* unknown */
    gl_exit_report();
    char *got = read_log();
    ck_assert_ptr_nonnull(got);
    char want[256];
    snprintf(want, sizeof want,
             "%sgpuleak: 1 frees of untracked addresses, 1 allocations at live "
             "addresses\n",
             pfx);
    ck_assert_msg(strstr(got, want) != NULL, "%s", got);
    ck_assert_ptr_nonnull(strstr(got, " distinct allocation stacks; tracking memory "));
    /* One block left (the replaced one is gone): the table's cost per block. */
    const char *t = strstr(got, "gpuleak: block table ");
    ck_assert_msg(t != NULL, "%s", got);
    char bytes[32];
    double per;
    ck_assert_int_eq(sscanf(t,
                            "gpuleak: block table %31s bytes for 1 live blocks in 1 bins (%lf "
                            "bytes per block); stack depot ",
                            bytes, &per),
                     2);
    ck_assert(per > 0);
    ck_assert_ptr_nonnull(strstr(got, "gpuleak: leak check took 0."));
    /* The quarantine's line: off here. */
    ck_assert_ptr_null(strstr(got, "gpuleak: quarantine "));
    free(got);
}
END_TEST

/* With the quarantine on, -v says its bytes and its two counts. */
START_TEST(test_verbose_quarantine)
{
    gl_runtime.opt.verbose = 1;
    gl_quarantine_configure(16, false);
    gl_exit_report();
    gl_quarantine_configure(0, false);
    char *got = read_log();
    ck_assert_ptr_nonnull(got);
    char want[256];
    snprintf(want, sizeof want,
             "%sgpuleak: quarantine 4,096 bytes; 0 freed blocks not remembered (a writer a whole "
             "lap behind held their slot), 0 range lookups outrun by frees\n",
             pfx);
    ck_assert_msg(strstr(got, want) != NULL, "%s", got);
    free(got);
}
END_TEST

START_TEST(test_quiet_summary_mode)
{
    /* -q with --leak-check=summary: nothing at all to say. */
    gl_runtime.opt.quiet = true;
    gl_runtime.opt.leak_check = GL_LEAK_CHECK_SUMMARY;
    alloc(0x7f0000200000, 64, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 0);
    gl_exit_report();
    char *got = read_log();
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, "");
    free(got);
}
END_TEST

static Suite *exit_report_suite(void)
{
    Suite *s = suite_create("exit_report");
    TCase *tc = tcase_create("exit_report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_full_report);
    tcase_add_test(tc, test_preamble_before_first_error);
    tcase_add_test(tc, test_no_report_unless_tracking);
    tcase_add_test(tc, test_no_report_in_another_process);
    tcase_add_test(tc, test_imported_handle_sized_by_mappings);
    tcase_add_test(tc, test_unknown_size_stays_unknown);
    tcase_add_test(tc, test_verbose_lines);
    tcase_add_test(tc, test_verbose_quarantine);
    tcase_add_test(tc, test_quiet_summary_mode);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(exit_report_suite)
