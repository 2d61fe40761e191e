/* SPDX-License-Identifier: MIT */
/* lib/report/report_flamegraph.h: folded stacks from a gl_report_input made
 * by hand, compared byte for byte: each cost's figure (leaked records, a
 * site's peak, its bytes live at an out-of-memory error, its bytes allocated),
 * frames outermost first, names a viewer would split made safe, lines of the
 * same frames summed within a process and across the processes of a merged
 * --read. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/leak_check.h"
#include "common/options.h"
#include "common/util.h"
#include "report/report_flamegraph.h"
#include "testutil.h"

enum { STACK_NONE, STACK_MAIN, STACK_PY, STACK_ODD, STACK_OTHER_PROCESS };

static const struct gl_frame main_frames[] = {
    /* innermost first, as the stack service gives them */
    {0x401000, "cudaMalloc", NULL, 0, "/work/app", NULL, false},
    {0x401100, "make_buffer(unsigned long)", "/src/app/leak.cu", 12, "/work/app", NULL, false},
    {0x401200, "main", "leak.cu", 40, "/work/app", NULL, false},
};
static const struct gl_frame py_frames[] = {
    {0x7f0000001000, "cudaMalloc", NULL, 0, "/lib/libcudart.so.13", NULL, false},
    {0x7f0000002000, NULL, NULL, 0, "/opt/torch/lib/libc10_cuda.so", NULL, false},
    {0x10000, "Model.forward", "/home/u/train.py", 42, NULL, NULL, true},
    {0x10100, "<module>", "train.py", 7, NULL, NULL, true},
};
/* Names with the characters that would break a folded line. */
static const struct gl_frame odd_frames[] = {
    {0x402000, "operator;()", "odd.cc", 3, "/work/app", NULL, false},
    {0x402100, "two\nlines", NULL, 0, NULL, NULL, false},
    {0x402200, NULL, NULL, 0, NULL, NULL, false},
};
/* Another process's addresses, the same names: one line once merged. */
static const struct gl_frame other_frames[] = {
    {0x501000, "cudaMalloc", NULL, 0, "/work/app", NULL, false},
    {0x501100, "make_buffer(unsigned long)", "/src/app/leak.cu", 12, "/work/app", NULL, false},
    {0x501200, "main", "leak.cu", 40, "/work/app", NULL, false},
};

static unsigned fake_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    const struct gl_frame *f;
    unsigned n;
    switch (stack) {
    case STACK_MAIN:
        f = main_frames, n = GL_ARRAY_SIZE(main_frames);
        break;
    case STACK_PY:
        f = py_frames, n = GL_ARRAY_SIZE(py_frames);
        break;
    case STACK_ODD:
        f = odd_frames, n = GL_ARRAY_SIZE(odd_frames);
        break;
    case STACK_OTHER_PROCESS:
        f = other_frames, n = GL_ARRAY_SIZE(other_frames);
        break;
    default:
        return 0;
    }
    if (n > max)
        n = max;
    memcpy(out, f, n * sizeof *f);
    return n;
}

#define MAIN_LINE "main (leak.cu:40);make_buffer(unsigned long) (leak.cu:12);cudaMalloc"
#define PY_LINE                                                                                    \
    "<module> (train.py:7);Model.forward (train.py:42);0x7f0000002000 (libc10_cuda.so);cudaMalloc"
#define ODD_LINE "0x402200;two:lines;operator:() (odd.cc:3)"

static struct gl_options opt;
static struct gl_loss_record records[5];
static struct gl_leak_result leaks;
static struct gl_report_input in;
static const struct gl_supp *const some_suppression = (const struct gl_supp *)&records;

static void setup(void)
{
    gl_options_defaults(&opt);
    memset(records, 0, sizeof records);
    records[0] = (struct gl_loss_record){
        .kind = GL_LEAK_DEFINITE, .stack = STACK_MAIN, .bytes = 1048576, .blocks = 1};
    records[1] = (struct gl_loss_record){
        .kind = GL_LEAK_DEFINITE, .stack = STACK_PY, .bytes = 4096, .blocks = 2};
    /* The same stack, another kind: one line. */
    records[2] = (struct gl_loss_record){
        .kind = GL_LEAK_POSSIBLE, .stack = STACK_MAIN, .bytes = 512, .blocks = 1};
    records[3] = (struct gl_loss_record){.kind = GL_LEAK_DEFINITE,
                                         .stack = STACK_ODD,
                                         .bytes = 100,
                                         .blocks = 1,
                                         .suppressed_by = some_suppression};
    records[4] = (struct gl_loss_record){
        .kind = GL_LEAK_DEFINITE, .stack = STACK_NONE, .bytes = 7, .blocks = 1};
    leaks = (struct gl_leak_result){.records = records, .nrecords = GL_ARRAY_SIZE(records)};
    in = (struct gl_report_input){.opt = &opt, .leaks = &leaks, .stack_frames = fake_frames};
}

/* What gl_report_flamegraph writes for this cost and these sites. */
static char *folded(enum gl_flamegraph_cost cost, const struct gl_site_stats *sites, size_t n)
{
    static char buf[8192];
    struct gl_out o;
    gl_out_init_mem(&o, buf, sizeof buf);
    gl_report_flamegraph(&o, &in, cost, sites, n);
    ck_assert(gl_out_flush(&o));
    return buf;
}

START_TEST(test_leaked_records)
{
    tu_assert_text_eq(folded(GL_FLAMEGRAPH_LEAKED, NULL, 0),
                      MAIN_LINE " 1049088\n" PY_LINE " 4096\n(no stack recorded) 7\n");
}
END_TEST

/* Each cost reads its own figure of a site; sites of no bytes are left out. */
static const struct gl_site_stats sites[] = {
    {.stack = STACK_PY,
     .live_bytes = 300,
     .live_blocks = 3,
     .peak_bytes = 5000,
     .alloc_bytes = 90000},
    {.stack = STACK_MAIN, .live_bytes = 0, .peak_bytes = 2048, .alloc_bytes = 4096},
    {.stack = STACK_ODD, .live_bytes = 64, .live_blocks = 1, .peak_bytes = 0, .alloc_bytes = 64},
    {.stack = STACK_NONE, .live_bytes = 8, .live_blocks = 1, .peak_bytes = 8, .alloc_bytes = 16},
};

START_TEST(test_peak)
{
    tu_assert_text_eq(folded(GL_FLAMEGRAPH_PEAK, sites, GL_ARRAY_SIZE(sites)),
                      PY_LINE " 5000\n" MAIN_LINE " 2048\n(no stack recorded) 8\n");
}
END_TEST

START_TEST(test_oom)
{
    tu_assert_text_eq(folded(GL_FLAMEGRAPH_OOM, sites, GL_ARRAY_SIZE(sites)),
                      PY_LINE " 300\n" ODD_LINE " 64\n(no stack recorded) 8\n");
}
END_TEST

START_TEST(test_allocated)
{
    tu_assert_text_eq(folded(GL_FLAMEGRAPH_ALLOCATED, sites, GL_ARRAY_SIZE(sites)), PY_LINE
                      " 90000\n" MAIN_LINE " 4096\n" ODD_LINE " 64\n(no stack recorded) 16\n");
}
END_TEST

/* --num-callers cuts from the outermost end, as the text report does. */
START_TEST(test_num_callers)
{
    opt.num_callers = 2;
    tu_assert_text_eq(folded(GL_FLAMEGRAPH_ALLOCATED, sites, 2),
                      "0x7f0000002000 (libc10_cuda.so);cudaMalloc 90000\n"
                      "make_buffer(unsigned long) (leak.cu:12);cudaMalloc 4096\n");
}
END_TEST

/* A merged --read: each process added with its own stack service; lines of
 * the same frames summed, in the order first added, the total kept. */
START_TEST(test_processes_merged)
{
    struct gl_report_flamegraph *fg = gl_report_flamegraph_new();
    ck_assert_ptr_nonnull(fg);
    const struct gl_site_stats first[] = {
        {.stack = STACK_PY, .alloc_bytes = 10},
        {.stack = STACK_MAIN, .alloc_bytes = 20},
    };
    const struct gl_site_stats second[] = {
        {.stack = STACK_ODD, .alloc_bytes = 1},
        {.stack = STACK_OTHER_PROCESS, .alloc_bytes = 300},
        {.stack = STACK_PY, .alloc_bytes = 4000},
    };
    ck_assert(gl_report_flamegraph_add(fg, &in, GL_FLAMEGRAPH_ALLOCATED, first, 2));
    ck_assert(gl_report_flamegraph_add(fg, &in, GL_FLAMEGRAPH_ALLOCATED, second, 3));
    ck_assert_uint_eq(gl_report_flamegraph_total(fg), 4331);
    ck_assert_uint_eq(gl_report_flamegraph_lines(fg), 3);
    /* A leaked picture of a third process joins too. */
    ck_assert(gl_report_flamegraph_add(fg, &in, GL_FLAMEGRAPH_LEAKED, NULL, 0));
    ck_assert_uint_eq(gl_report_flamegraph_total(fg), 4331 + 1049088 + 4096 + 7);
    static char buf[4096];
    struct gl_out o;
    gl_out_init_mem(&o, buf, sizeof buf);
    gl_report_flamegraph_write(&o, fg);
    ck_assert(gl_out_flush(&o));
    tu_assert_text_eq(buf, PY_LINE " 8106\n" MAIN_LINE " 1049408\n" ODD_LINE
                                   " 1\n(no stack recorded) 7\n");
    gl_report_flamegraph_free(fg);
}
END_TEST

static Suite *flamegraph_suite(void)
{
    Suite *s = suite_create("report_flamegraph");
    TCase *tc = tcase_create("report_flamegraph");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_leaked_records);
    tcase_add_test(tc, test_peak);
    tcase_add_test(tc, test_oom);
    tcase_add_test(tc, test_allocated);
    tcase_add_test(tc, test_num_callers);
    tcase_add_test(tc, test_processes_merged);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(flamegraph_suite)
