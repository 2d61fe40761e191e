/* SPDX-License-Identifier: MIT */
/* lib/stack/stack_capture.h: gl_stack_capture_trim, which drops gpuleak's, CUPTI's and
 * all but the outermost driver frame from a raw stack, by module role. */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "common/util.h"
#include "stack/modules.h"
#include "stack/stack_capture.h"
#include "stack/stack_depot.h"
#include "stack/mixed_memo.h"
#include "stack/stack_memo.h"
#include "stack/unwind.h"
#include "symbol/frame_filter.h"

#define SELF1 0x1100
#define SELF2 0x1200
#define CUPTI1 0x2100
#define DRV1 0x3100
#define DRV2 0x3200
#define RT1 0x4100
#define RT2 0x4200
#define USER1 0x9100
#define USER2 0x9200

static void setup(void)
{
    gl_modules_clear();
    gl_modules_add_range(0x1000, 0x2000, GL_MOD_SELF);
    gl_modules_add_range(0x2000, 0x3000, GL_MOD_CUPTI);
    gl_modules_add_range(0x3000, 0x4000, GL_MOD_DRIVER);
    gl_modules_add_range(0x4000, 0x5000, GL_MOD_CUDART);
}

static void expect_trim(const uintptr_t *in, unsigned n, const uintptr_t *want, unsigned nwant)
{
    uintptr_t f[32];
    memcpy(f, in, n * sizeof *in);
    unsigned got = gl_stack_capture_trim(f, n);
    ck_assert_uint_eq(got, nwant);
    for (unsigned i = 0; i < nwant; i++)
        ck_assert_msg(f[i] == want[i], "frame %u is %#lx, want %#lx", i, (unsigned long)f[i],
                      (unsigned long)want[i]);
}

#define TRIM(in, ...)                                                                              \
    do {                                                                                           \
        const uintptr_t want_[] = {__VA_ARGS__};                                                   \
        expect_trim(in, GL_ARRAY_SIZE(in), want_, GL_ARRAY_SIZE(want_));                           \
    } while (0)

START_TEST(test_driver_called_directly)
{
    const uintptr_t in[] = {SELF1, SELF2, CUPTI1, DRV1, DRV2, USER1, USER2};
    TRIM(in, DRV2, USER1, USER2); /* the outermost driver frame: the entry point called */
}
END_TEST

START_TEST(test_shared_runtime)
{
    const uintptr_t in[] = {SELF1, CUPTI1, DRV1, DRV2, RT1, RT2, USER1};
    TRIM(in, RT2, USER1); /* the outermost libcudart frame: the API the program called */
}
END_TEST

START_TEST(test_no_internal_frames)
{
    const uintptr_t in[] = {USER1, USER2};
    TRIM(in, USER1, USER2);
}
END_TEST

START_TEST(test_memo_hit_with_other_tails)
{
    /* The same entry path twice (the second from the per-thread memo), different callers. */
    const uintptr_t a[] = {SELF1, CUPTI1, DRV1, DRV2, USER1};
    const uintptr_t b[] = {SELF1, CUPTI1, DRV1, DRV2, USER2, USER1};
    const uintptr_t c[] = {SELF1, CUPTI1, DRV1, DRV2, RT1, USER2};
    TRIM(a, DRV2, USER1);
    TRIM(b, DRV2, USER2, USER1);
    TRIM(c, RT1, USER2);
    TRIM(a, DRV2, USER1);
}
END_TEST

START_TEST(test_memo_prefix_of_longer_run)
{
    /* A memoized prefix must not cut a longer internal run short. */
    const uintptr_t a[] = {SELF1, CUPTI1, DRV1, USER1};
    const uintptr_t b[] = {SELF1, CUPTI1, DRV1, DRV2, USER1};
    TRIM(a, DRV1, USER1);
    TRIM(b, DRV2, USER1);
}
END_TEST

START_TEST(test_ranges_change)
{
    const uintptr_t a[] = {SELF1, CUPTI1, DRV1, USER1};
    TRIM(a, DRV1, USER1);
    /* The modules are scanned again and nothing is CUDA's any more. */
    gl_modules_clear();
    TRIM(a, SELF1, CUPTI1, DRV1, USER1);
}
END_TEST

START_TEST(test_all_internal)
{
    const uintptr_t a[] = {SELF1, CUPTI1, DRV1, DRV2};
    TRIM(a, DRV2);
    uintptr_t f[2] = {SELF1, CUPTI1}; /* no driver frame, nothing of the program */
    ck_assert_uint_eq(gl_stack_capture_trim(f, 2), 0);
}
END_TEST

/* ---- a real capture, through libunwind ---- */

#define TEST_FN __attribute__((noinline, noipa, used, optimize("O0")))

static volatile int sink;
static uintptr_t ra_into_outer, ra_into_test;

TEST_FN uint32_t gl_cap_inner(void)
{
    ra_into_outer = (uintptr_t)__builtin_return_address(0);
    uint32_t id = gl_stack_capture();
    sink++;
    return id;
}

TEST_FN uint32_t gl_cap_outer(void)
{
    ra_into_test = (uintptr_t)__builtin_return_address(0);
    uint32_t id = gl_cap_inner();
    sink++;
    return id;
}

/* Three captures from one call site (not unrolled: -O0), then one from another. */
TEST_FN void capture_four(uint32_t *ids)
{
    for (int k = 0; k < 3; k++)
        ids[k] = gl_cap_outer();
    ids[3] = gl_cap_outer();
}

static bool load_unwinder(void)
{
    char err[256];
    if (!gl_unwind_load(err, sizeof err)) {
        fprintf(stderr, "check_stack_capture: %s: capture tests skipped\n", err);
        return false;
    }
    return true;
}

START_TEST(test_capture_through_libunwind)
{
    if (!load_unwinder())
        return;
    gl_modules_clear(); /* nothing is gpuleak's, CUPTI's or the driver's here */
    gl_stack_capture_init(12);
    uint32_t id = gl_cap_outer();
    ck_assert_uint_ne(id, 0);
    unsigned n;
    const uintptr_t *f = gl_stack_depot_frames(id, &n);
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_le(n, 12 + GL_STACK_SLACK);
    /* The callers appear, innermost first: gl_cap_outer's frame, then this test's. */
    unsigned i = 0;
    while (i < n && f[i] != ra_into_outer)
        i++;
    ck_assert_msg(i < n, "the return address into gl_cap_outer is not in the %u frames", n);
    ck_assert_uint_lt(i + 1, n);
    ck_assert_uint_eq(f[i + 1], ra_into_test);
}
END_TEST

START_TEST(test_capture_same_site_same_stack)
{
    if (!load_unwinder())
        return;
    gl_modules_clear();
    gl_stack_capture_init(12);
    uint32_t ids[4];
    capture_four(ids);
    ck_assert_uint_ne(ids[0], 0);
    ck_assert_uint_eq(ids[1], ids[0]);
    ck_assert_uint_eq(ids[2], ids[0]);
    ck_assert_uint_ne(ids[3], ids[0]);
}
END_TEST

START_TEST(test_capture_keeps_num_callers_and_slack)
{
    if (!load_unwinder())
        return;
    gl_modules_clear();
    gl_stack_capture_init(2);
    uint32_t id = gl_cap_outer();
    unsigned n;
    gl_stack_depot_frames(id, &n);
    /* The test runs deep inside Check's runner: more frames exist than are kept. */
    ck_assert_uint_eq(n, 2 + GL_STACK_SLACK);
}
END_TEST

/* ---- --num-callers up to 500: past the thread's own buffers ---- */

#define DEEP 300

/* depth frames of one function, then the capture. */
TEST_FN uint32_t deep_recurse(int depth)
{
    uint32_t id = depth > 0 ? deep_recurse(depth - 1) : gl_stack_capture();
    sink++;
    return id;
}

/* The frames a report shows of a stack, at most max (room for 2 * max). */
static unsigned shown(uint32_t id, unsigned max)
{
    struct gl_frame *f = malloc(2 * max * sizeof *f);
    ck_assert_ptr_nonnull(f);
    unsigned n = gl_frame_filter_stack(NULL, id, true, f, max);
    free(f);
    return n;
}

/* The frames of a deep capture: DEEP + slack kept, most of them the
 * recursion's return address. */
static void *deep_capture(void *arg)
{
    unsigned keep = *(unsigned *)arg;
    uint32_t id = deep_recurse(DEEP + 20);
    unsigned n;
    const uintptr_t *f = gl_stack_depot_frames(id, &n);
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(n, keep + GL_STACK_SLACK);
    unsigned same = 0;
    for (unsigned i = 0; i < n; i++)
        same += f[i] == f[n / 2];
    ck_assert_uint_ge(same, n - 4); /* the capture's own frames aside */
    ck_assert_uint_eq(shown(id, keep), keep);
    /* Again: the same stack, from the room the first one mapped. */
    ck_assert_uint_eq(deep_recurse(DEEP + 20), id);
    return NULL;
}

START_TEST(test_capture_deep_num_callers)
{
    if (!load_unwinder())
        return;
    gl_modules_clear();
    unsigned keep = DEEP;
    gl_stack_capture_init(keep);
    deep_capture(&keep);
    /* On a thread of its own: its own room. */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, deep_capture, &keep), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    /* The default keeps 12 (and the slack), whatever the stack's depth. */
    keep = 12;
    gl_stack_capture_init(keep);
    deep_capture(&keep);
    keep = 500; /* the most --num-callers takes */
    gl_stack_capture_init(keep);
    uint32_t id = deep_recurse(600);
    unsigned n;
    gl_stack_depot_frames(id, &n);
    ck_assert_uint_eq(n, 500 + GL_STACK_SLACK);
    ck_assert_uint_eq(shown(id, 500), 500);
    gl_stack_capture_init(12);
}
END_TEST

/* Stacks for the memo (stack_memo.h): depth frames of one function, each
 * with a variable-length array of pad bytes (its size moves every frame it
 * calls), reached from one of two call sites.  -O2's frames, not -O0's. */
__attribute__((noinline, noipa)) static uint32_t memo_deep(int depth, int pad)
{
    volatile char buf[pad + 1];
    buf[0] = (char)depth;
    uint32_t id = depth > 0 ? memo_deep(depth - 1, pad) : gl_stack_capture();
    return id + (uint32_t)(buf[0] - (char)depth); /* buf is read after the call: no tail call */
}

__attribute__((noinline, noipa)) static uint32_t memo_site(int site, int depth, int pad)
{
    uint32_t id;
    if (site) {
        id = memo_deep(depth, pad);
        sink += 2; /* unlike the other branch: the two calls are not merged */
    } else {
        id = memo_deep(depth, pad);
        sink += 1;
    }
    return id;
}

#define MEMO_DEPTHS 14
static const int memo_pads[] = {0, 40, 300};

#define MEMO_SHAPES (2 * MEMO_DEPTHS * 3)

/* The stacks of shapes ks[0..n), each from the same call sites all the way
 * up, with the memo (on) or not. */
__attribute__((noinline, noipa)) static void memo_shapes(const int *ks, int n, bool on,
                                                         uint32_t *ids)
{
    gl_stack_capture_memo_enable(on);
    for (int i = 0; i < n; i++) {
        int k = ks[i];
        ids[i] = memo_site(k / (MEMO_DEPTHS * 3), k / 3 % MEMO_DEPTHS, memo_pads[k % 3]);
    }
    gl_stack_capture_memo_enable(true);
}

/* The same, leaving the memo as it is. */
__attribute__((noinline, noipa)) static void memo_shapes_as_is(const int *ks, int n, uint32_t *ids)
{
    for (int i = 0; i < n; i++) {
        int k = ks[i];
        ids[i] = memo_site(k / (MEMO_DEPTHS * 3), k / 3 % MEMO_DEPTHS, memo_pads[k % 3]);
    }
}

START_TEST(test_memo_agrees_with_the_unwinder)
{
    if (!load_unwinder())
        return;
    gl_modules_clear();
    gl_stack_capture_init(12);
    int all[MEMO_SHAPES];
    uint32_t want[MEMO_SHAPES];
    for (int k = 0; k < MEMO_SHAPES; k++)
        all[k] = k;
    /* Then each stack twice in a row (the second a hit), and all of them again
     * in another order: 84 stacks through a memo of 32, evicting as they go. */
    enum { N = 3 * 2 * MEMO_SHAPES };
    static int order[N];
    static uint32_t got[N];
    for (int round = 0, j = 0; round < 3; round++)
        for (int i = 0; i < MEMO_SHAPES; i++, j += 2)
            order[j] = order[j + 1] = round == 2 ? (i * 37) % MEMO_SHAPES : i;
    struct gl_stack_memo_counts before, after;
    struct gl_mixed_memo_counts mixed;
    /* One call site for both passes: the stacks must be the same up to the top
     * (a volatile count: the loop is not unrolled). */
    static volatile int passes = 2;
    for (int pass = 0; pass < passes; pass++) {
        gl_stack_capture_memo_totals(&before, &mixed);
        memo_shapes(pass ? order : all, pass ? N : MEMO_SHAPES, pass, pass ? got : want);
        gl_stack_capture_memo_totals(&after, &mixed);
    }
    for (int k = 0; k < MEMO_SHAPES; k++)
        ck_assert_uint_ne(want[k], 0);
    /* Two call sites, one stack pointer: only a return address differs. */
    ck_assert_uint_ne(want[0], want[MEMO_DEPTHS * 3]);
    for (int j = 0; j < N; j++) {
        int k = order[j];
        ck_assert_msg(
            got[j] == want[k], "shape %d (site %d, depth %d, pad %d): stack %u, the unwinder's %u",
            k, k / (MEMO_DEPTHS * 3), k / 3 % MEMO_DEPTHS, memo_pads[k % 3], got[j], want[k]);
    }
    ck_assert_uint_gt(after.hits - before.hits, MEMO_SHAPES);
    ck_assert_uint_eq(after.refused - before.refused, 0);
}
END_TEST

/* Threads: each its own memo, the depot shared.  Each thread makes every
 * shape's stack with the memo off, then (after the main thread turned it on)
 * twice over in another order, from the same call sites. */
#define MEMO_THREADS 4
static pthread_barrier_t memo_barrier;
struct memo_thread {
    int order[2 * MEMO_SHAPES];
    uint32_t want[MEMO_SHAPES], got[2 * MEMO_SHAPES];
};

static void *memo_thread_main(void *arg)
{
    struct memo_thread *t = arg;
    int all[MEMO_SHAPES];
    for (int k = 0; k < MEMO_SHAPES; k++)
        all[k] = k;
    static volatile int passes = 2;
    for (int pass = 0; pass < passes; pass++) {
        pthread_barrier_wait(&memo_barrier); /* the main thread sets the memo on or off */
        pthread_barrier_wait(&memo_barrier);
        memo_shapes_as_is(pass ? t->order : all, pass ? 2 * MEMO_SHAPES : MEMO_SHAPES,
                          pass ? t->got : t->want);
    }
    return NULL;
}

START_TEST(test_memo_threads)
{
    if (!load_unwinder())
        return;
    gl_modules_clear();
    gl_stack_capture_init(12);
    static struct memo_thread t[MEMO_THREADS];
    pthread_t th[MEMO_THREADS];
    pthread_barrier_init(&memo_barrier, NULL, MEMO_THREADS + 1);
    for (int i = 0; i < MEMO_THREADS; i++) {
        for (int j = 0; j < 2 * MEMO_SHAPES; j++)
            t[i].order[j] = (j * (7 + 2 * i) + i) % MEMO_SHAPES;
        ck_assert_int_eq(pthread_create(&th[i], NULL, memo_thread_main, &t[i]), 0);
    }
    struct gl_stack_memo_counts before, after;
    struct gl_mixed_memo_counts mixed;
    for (int pass = 0; pass < 2; pass++) {
        pthread_barrier_wait(&memo_barrier);
        gl_stack_capture_memo_enable(pass == 1);
        if (pass == 1)
            gl_stack_capture_memo_totals(&before, &mixed);
        pthread_barrier_wait(&memo_barrier);
    }
    for (int i = 0; i < MEMO_THREADS; i++)
        pthread_join(th[i], NULL);
    gl_stack_capture_memo_totals(&after, &mixed);
    gl_stack_capture_memo_enable(true);
    for (int i = 0; i < MEMO_THREADS; i++)
        for (int j = 0; j < 2 * MEMO_SHAPES; j++) {
            int k = t[i].order[j];
            ck_assert_msg(t[i].got[j] == t[i].want[k],
                          "thread %d, shape %d: stack %u, the unwinder's %u", i, k, t[i].got[j],
                          t[i].want[k]);
            /* The same call sites: the same stacks. */
            ck_assert_uint_eq(t[i].want[k], t[0].want[k]);
        }
    ck_assert_uint_gt(after.hits - before.hits, MEMO_THREADS * MEMO_SHAPES / 2);
    ck_assert_uint_eq(after.refused - before.refused, 0);
}
END_TEST

START_TEST(test_capture_without_unwinder)
{
    if (gl_unwind_loaded()) {
        fprintf(stderr, "check_stack_capture: libunwind already loaded: test skipped\n");
        return;
    }
    ck_assert_uint_eq(gl_stack_capture(), 0);
}
END_TEST

static Suite *stack_capture_suite(void)
{
    Suite *s = suite_create("stack_capture");
    TCase *tc = tcase_create("trim");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_driver_called_directly);
    tcase_add_test(tc, test_shared_runtime);
    tcase_add_test(tc, test_no_internal_frames);
    tcase_add_test(tc, test_memo_hit_with_other_tails);
    tcase_add_test(tc, test_memo_prefix_of_longer_run);
    tcase_add_test(tc, test_ranges_change);
    tcase_add_test(tc, test_all_internal);
    suite_add_tcase(s, tc);

    TCase *cap = tcase_create("capture");
    tcase_add_test(cap, test_capture_without_unwinder);
    tcase_add_test(cap, test_capture_through_libunwind);
    tcase_add_test(cap, test_capture_same_site_same_stack);
    tcase_add_test(cap, test_capture_keeps_num_callers_and_slack);
    tcase_add_test(cap, test_capture_deep_num_callers);
    tcase_add_test(cap, test_memo_agrees_with_the_unwinder);
    tcase_add_test(cap, test_memo_threads);
    suite_add_tcase(s, cap);
    return s;
}

TU_MAIN(stack_capture_suite)
