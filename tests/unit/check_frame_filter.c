/* SPDX-License-Identifier: MIT */
/* lib/symbol/frame_filter.h: which frames of a stored stack a report shows. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "common/util.h"
#include "symbol/frame_filter.h"
#include "stack/stack_capture.h"

struct fake_frame {
    uintptr_t ip;
    const char *function;
    enum gl_modules_role role;
    bool python;
};

static const struct fake_frame known[] = {
    {0xd000, "cuMemAlloc_v2", GL_MOD_DRIVER},
    {0xd100, "cuMemAllocAsync", GL_MOD_DRIVER},
    {0xa100, "libcudart_static_4d8b33a106dceb3c07a56e26de61f545d8e5bd5a", GL_MOD_OTHER},
    {0xa200, "libcudart_static_0123", GL_MOD_OTHER},
    {0xa300, "__cudart1234", GL_MOD_OTHER},
    {0xa400, "cudart::globalState::initializeDriver()", GL_MOD_OTHER},
    {0xa500, "cudaMalloc", GL_MOD_OTHER},
    {0xa600, "cudaMallocAsync", GL_MOD_OTHER},
    {0xb100, "make_buffer(unsigned long)", GL_MOD_OTHER},
    {0xb200, "worker", GL_MOD_OTHER},
    {0xb300, "main", GL_MOD_OTHER},
    {0xb400, NULL, GL_MOD_OTHER}, /* no symbol */
    {0xc100, "__libc_start_call_main", GL_MOD_OTHER},
    {0xc200, "__libc_start_main", GL_MOD_OTHER},
    {0xc300, "_start", GL_MOD_OTHER},
    {0xe100, "cudaMalloc", GL_MOD_CUDART}, /* a shared libcudart's entry point */
    /* Python frames (their ip: the code object's address). */
    {0xf100, "train_step", GL_MOD_OTHER, true},
    {0xf200, "main", GL_MOD_OTHER, true}, /* def main(): ... */
    {0xf300, "<module>", GL_MOD_OTHER, true},
    {0xf400, "Trainer.fit", GL_MOD_OTHER, true},
    {0xf500, "_start", GL_MOD_OTHER, true},
    {0xf600, "__libc_start_main", GL_MOD_OTHER, true},
};

static unsigned lookups;
static int index_mismatch;
static const uintptr_t *current_ips;

static void fake_lookup(uintptr_t ip, unsigned index, struct gl_frame *out,
                        enum gl_modules_role *role, void *arg)
{
    ck_assert_ptr_eq(arg, &lookups);
    lookups++;
    if (current_ips && current_ips[index] != ip)
        index_mismatch++;
    memset(out, 0, sizeof *out);
    out->ip = ip;
    *role = GL_MOD_OTHER;
    for (size_t i = 0; i < GL_ARRAY_SIZE(known); i++)
        if (known[i].ip == ip) {
            out->function = known[i].function;
            out->file = "x.c";
            out->line = (int)(ip & 0xff) + 1;
            *role = known[i].role;
            out->python = known[i].python;
            return;
        }
}

static void setup(void)
{
    gl_stack_capture_raw_mode = 0;
    lookups = 0;
    index_mismatch = 0;
    current_ips = NULL;
}

/* Filter ips and compare the functions shown with want (NULL-terminated;
 * "-" stands for a frame without a symbol). */
static void expect_frames(const uintptr_t *ips, unsigned n, bool below_main, unsigned max,
                          const char *const *want)
{
    struct gl_frame out[32];
    memset(out, 0, sizeof out);
    current_ips = ips;
    unsigned got = gl_frame_filter(ips, n, fake_lookup, &lookups, below_main, out, max);
    unsigned nwant = 0;
    while (want[nwant])
        nwant++;
    ck_assert_int_eq(index_mismatch, 0);
    ck_assert_msg(got == nwant, "%u frames, want %u (first: %s)", got, nwant,
                  got ? (out[0].function ? out[0].function : "???") : "none");
    for (unsigned i = 0; i < got; i++) {
        const char *f = out[i].function ? out[i].function : "-";
        ck_assert_msg(strcmp(f, want[i]) == 0, "frame %u is %s, want %s", i, f, want[i]);
        ck_assert_int_ne(out[i].ip, 0);
        ck_assert_str_eq(out[i].file, "x.c"); /* the lookup result, copied */
    }
}

#define FRAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

static const uintptr_t static_cudart[] = {0xd000, 0xa100, 0xa200, 0xa500, 0xb100,
                                          0xb300, 0xc100, 0xc200, 0xc300};
#define N_STATIC (GL_ARRAY_SIZE(static_cudart))

START_TEST(test_static_cudart_starts_at_api)
{
    expect_frames(static_cudart, N_STATIC, false, 12,
                  FRAMES("cudaMalloc", "make_buffer(unsigned long)", "main"));
}
END_TEST

START_TEST(test_older_cudart_internals)
{
    const uintptr_t ips[] = {0xd100, 0xa300, 0xa400, 0xa300, 0xa600, 0xb200, 0xb300};
    expect_frames(ips, 7, false, 12, FRAMES("cudaMallocAsync", "worker", "main"));
}
END_TEST

START_TEST(test_driver_called_directly)
{
    const uintptr_t ips[] = {0xd000, 0xb100, 0xb300, 0xc200, 0xc300};
    expect_frames(ips, 5, false, 12, FRAMES("cuMemAlloc_v2", "make_buffer(unsigned long)", "main"));
}
END_TEST

START_TEST(test_shared_cudart_first_frame_kept)
{
    /* Capture already made a shared libcudart's entry point the first frame. */
    const uintptr_t ips[] = {0xe100, 0xb100, 0xb300};
    expect_frames(ips, 3, false, 12, FRAMES("cudaMalloc", "make_buffer(unsigned long)", "main"));
}
END_TEST

START_TEST(test_below_main_shown_on_request)
{
    expect_frames(static_cudart, N_STATIC, true, 12,
                  FRAMES("cudaMalloc", "make_buffer(unsigned long)", "main",
                         "__libc_start_call_main", "__libc_start_main", "_start"));
}
END_TEST

START_TEST(test_below_main_without_main)
{
    /* main itself has no symbol: the C library's frames are still dropped. */
    const uintptr_t ips[] = {0xd000, 0xb100, 0xb400, 0xc100, 0xc200, 0xc300};
    expect_frames(ips, 6, false, 12, FRAMES("cuMemAlloc_v2", "make_buffer(unsigned long)", "-"));
    const uintptr_t thread_ips[] = {0xd000, 0xb200, 0xb400};
    expect_frames(thread_ips, 3, false, 12, FRAMES("cuMemAlloc_v2", "worker", "-"));
}
END_TEST

START_TEST(test_max_frames)
{
    expect_frames(static_cudart, N_STATIC, false, 2,
                  FRAMES("cudaMalloc", "make_buffer(unsigned long)"));
    expect_frames(static_cudart, N_STATIC, false, 1, FRAMES("cudaMalloc"));
    expect_frames(
        static_cudart, N_STATIC, true, 4,
        FRAMES("cudaMalloc", "make_buffer(unsigned long)", "main", "__libc_start_call_main"));
    const uintptr_t ips[] = {0xd000, 0xb100, 0xb300};
    expect_frames(ips, 3, false, 1, FRAMES("cuMemAlloc_v2"));
    struct gl_frame out[4];
    ck_assert_uint_eq(
        gl_frame_filter(static_cudart, N_STATIC, fake_lookup, &lookups, false, out, 0), 0);
}
END_TEST

START_TEST(test_empty_stack)
{
    struct gl_frame out[4];
    ck_assert_uint_eq(gl_frame_filter(NULL, 0, fake_lookup, &lookups, false, out, 4), 0);
    ck_assert_uint_eq(lookups, 0);
}
END_TEST

START_TEST(test_raw_mode_keeps_everything)
{
    gl_stack_capture_raw_mode = 1;
    expect_frames(
        static_cudart, N_STATIC, false, 12,
        FRAMES("cuMemAlloc_v2", "libcudart_static_4d8b33a106dceb3c07a56e26de61f545d8e5bd5a",
               "libcudart_static_0123", "cudaMalloc", "make_buffer(unsigned long)", "main"));
}
END_TEST

/* Which of the frames shown are Python frames, as a string of 'p' and 'n'. */
static void expect_kinds(const uintptr_t *ips, unsigned n, unsigned max, const char *want)
{
    struct gl_frame out[32];
    unsigned got = gl_frame_filter(ips, n, fake_lookup, &lookups, false, out, max);
    char kinds[33] = "";
    for (unsigned i = 0; i < got && i < 32; i++)
        kinds[i] = out[i].python ? 'p' : 'n';
    kinds[got < 32 ? got : 32] = '\0';
    ck_assert_str_eq(kinds, want);
}

START_TEST(test_python_main_is_no_boundary)
{
    /* A Python function named main is the program's, not the C start-up's
     * boundary: the stack goes on to <module> and the native main. */
    const uintptr_t ips[] = {0xd000, 0xb100, 0xf200, 0xf300, 0xb300, 0xc100, 0xc200, 0xc300};
    expect_frames(
        ips, 8, false, 12,
        FRAMES("cuMemAlloc_v2", "make_buffer(unsigned long)", "main", "<module>", "main"));
    expect_kinds(ips, 8, 12, "nnppn");
    /* Only Python frames: all of them. */
    const uintptr_t py[] = {0xf100, 0xf200, 0xf300};
    expect_frames(py, 3, false, 12, FRAMES("train_step", "main", "<module>"));
    /* Python frames named as the C library's start-up are no end either. */
    const uintptr_t odd[] = {0xf100, 0xf500, 0xf600, 0xf300};
    expect_frames(odd, 4, false, 12,
                  FRAMES("train_step", "_start", "__libc_start_main", "<module>"));
    /* The native main still ends the stack, after Python frames too. */
    const uintptr_t mixed[] = {0xd000, 0xf100, 0xf200, 0xb300, 0xf300, 0xc200};
    expect_frames(mixed, 6, false, 12, FRAMES("cuMemAlloc_v2", "train_step", "main", "main"));
    expect_frames(
        mixed, 6, true, 12,
        FRAMES("cuMemAlloc_v2", "train_step", "main", "main", "<module>", "__libc_start_main"));
}
END_TEST

START_TEST(test_budget_per_kind)
{
    /* max 2 with three native and three Python frames interleaved: two of
     * each, in their order. */
    const uintptr_t ips[] = {0xd000, 0xf100, 0xb100, 0xf400, 0xb200, 0xf300};
    expect_frames(
        ips, 6, false, 2,
        FRAMES("cuMemAlloc_v2", "train_step", "make_buffer(unsigned long)", "Trainer.fit"));
    expect_kinds(ips, 6, 2, "npnp");
    /* The native budget spent first: the Python frames after are still shown. */
    const uintptr_t natives_first[] = {0xd000, 0xb100, 0xb200, 0xb400, 0xf100, 0xf400, 0xf300};
    expect_frames(
        natives_first, 7, false, 2,
        FRAMES("cuMemAlloc_v2", "make_buffer(unsigned long)", "train_step", "Trainer.fit"));
    /* And the other way round. */
    const uintptr_t python_first[] = {0xf100, 0xf400, 0xf300, 0xf200, 0xb100, 0xb200, 0xb400};
    expect_frames(python_first, 7, false, 2,
                  FRAMES("train_step", "Trainer.fit", "make_buffer(unsigned long)", "worker"));
    /* max 1: one of each; the static runtime's internals are still skipped. */
    const uintptr_t cudart[] = {0xd000, 0xa100, 0xa500, 0xf100, 0xb100, 0xf300};
    expect_frames(cudart, 6, false, 1, FRAMES("cudaMalloc", "train_step"));
    /* Room for 2 * max frames is enough. */
    struct gl_frame out[4];
    ck_assert_uint_eq(gl_frame_filter(ips, 6, fake_lookup, &lookups, false, out, 2), 4);
}
END_TEST

START_TEST(test_native_main_past_budget_still_ends_stack)
{
    /* The stack ends at the native main whether or not main is among the
     * frames shown: with the native budget spent before it, the Python
     * frames below it (groups the native walk did not reach, appended after
     * the native frames by mixed_stack.h) must not show either. */
    const uintptr_t ips[] = {0xd000, 0xb100, 0xb200, 0xb300, 0xf100, 0xf300};
    expect_frames(ips, 6, false, 8,
                  FRAMES("cuMemAlloc_v2", "make_buffer(unsigned long)", "worker", "main"));
    expect_frames(ips, 6, false, 2, FRAMES("cuMemAlloc_v2", "make_buffer(unsigned long)"));
}
END_TEST

START_TEST(test_frames_carry_lookup_results)
{
    struct gl_frame out[8];
    unsigned n = gl_frame_filter(static_cudart, N_STATIC, fake_lookup, &lookups, false, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(out[0].ip, 0xa500);
    ck_assert_int_eq(out[0].line, 1);
    ck_assert_uint_eq(out[1].ip, 0xb100);
    ck_assert_uint_eq(out[2].ip, 0xb300);
    ck_assert_str_eq(out[2].function, "main");
}
END_TEST

static Suite *frame_filter_suite(void)
{
    Suite *s = suite_create("frame_filter");
    TCase *tc = tcase_create("frame_filter");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_static_cudart_starts_at_api);
    tcase_add_test(tc, test_older_cudart_internals);
    tcase_add_test(tc, test_driver_called_directly);
    tcase_add_test(tc, test_shared_cudart_first_frame_kept);
    tcase_add_test(tc, test_below_main_shown_on_request);
    tcase_add_test(tc, test_below_main_without_main);
    tcase_add_test(tc, test_max_frames);
    tcase_add_test(tc, test_empty_stack);
    tcase_add_test(tc, test_raw_mode_keeps_everything);
    tcase_add_test(tc, test_frames_carry_lookup_results);
    tcase_add_test(tc, test_python_main_is_no_boundary);
    tcase_add_test(tc, test_budget_per_kind);
    tcase_add_test(tc, test_native_main_past_budget_still_ends_stack);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(frame_filter_suite)
