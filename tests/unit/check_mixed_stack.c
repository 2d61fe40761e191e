/* SPDX-License-Identifier: MIT */
/* lib/stack/mixed_stack.h: one stack from a native walk and the Python frames
 * of the same moment.
 *
 * The native walk and the interpreter's whereabouts are made up: addresses
 * 0x1000-0x1fff are the program's and its extensions' code (outside the
 * interpreter), 0x5000-0x5fff the interpreter's call machinery and
 * 0x6000-0x60ff its loop (_PyEval_EvalFrameDefault).  Python frames are tagged
 * words (python_frames.h) whose code ids name them: code 100 + i for frame i. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "symbol/frame_filter.h"
#include "testutil.h"
#include "common/util.h"
#include "stack/stack_capture.h"
#include "stack/mixed_stack.h"
#include "python/py_frames.h"

/* Native frames outside the interpreter. */
#define N(i) ((uintptr_t)0x1000 + (i))
/* The interpreter's frames that are not its loop (PyObject_Call...). */
#define I(i) ((uintptr_t)0x5000 + (i))
/* Interpreter-loop frames: one per group. */
#define E(i) ((uintptr_t)0x6000 + (i))
/* Python frame i: gl_py_frames_make(100 + i, 2 * i), as a constant for static arrays. */
#define P(i) (GL_PY_FRAME_TAG | (uintptr_t)(100 + (i)) << 32 | (uintptr_t)(2 * (i)))

static bool fake_in_interpreter(uintptr_t ip)
{
    ck_assert(!gl_py_frames_is_frame(ip)); /* only native frames are asked about */
    return ip >= 0x5000 && ip < 0x6100;
}

static bool fake_in_eval_loop(uintptr_t ip)
{
    ck_assert(!gl_py_frames_is_frame(ip));
    return ip >= 0x6000 && ip < 0x6100;
}

static const struct gl_interpreter_where where = {fake_in_interpreter, fake_in_eval_loop};

/* No interpreter found at all: every group lands at the end. */
static bool never(uintptr_t ip)
{
    (void)ip;
    return false;
}
static const struct gl_interpreter_where nowhere = {never, never};

/* An interpreter whose loop could not be located: its frames are known, not
 * which of them run groups. */
static const struct gl_interpreter_where no_loop = {fake_in_interpreter, never};

#define SENTINEL ((uintptr_t)0xdeadbeef)
#define OUT_ROOM 64

/* Merge and compare with want (count given); out past the count stays untouched. */
#define EXPECT(native, py, wh, keep_native, keep_python, max, ...)                                 \
    expect_at(native, GL_ARRAY_SIZE(native), py, wh, keep_native, keep_python, max,                \
              (const uintptr_t[]){__VA_ARGS__},                                                    \
              sizeof((const uintptr_t[]){__VA_ARGS__}) / sizeof(uintptr_t), __LINE__)
#define EXPECT_NONE(native, nnative, py, wh, keep_native, keep_python, max)                        \
    expect_at(native, nnative, py, wh, keep_native, keep_python, max, NULL, 0, __LINE__)

static void describe(char *buf, size_t len, const uintptr_t *v, unsigned n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n && at < len; i++) {
        int w = gl_py_frames_is_frame(v[i])
                    ? snprintf(buf + at, len - at, " P%u", (unsigned)gl_py_frames_code(v[i]) - 100)
                    : snprintf(buf + at, len - at, " 0x%lx", (unsigned long)v[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* What *used promises (the stack memo's prefix checks rest on it): the
 * native frames past it change nothing.  The stack cut there, and with
 * every kind of frame in place of the rest, merges the same. */
static void same_past_used(const uintptr_t *native, unsigned nnative, unsigned used,
                           const struct gl_python_stack *py, const struct gl_interpreter_where *wh,
                           unsigned keep_native, unsigned keep_python, const uintptr_t *want,
                           unsigned nwant, unsigned max, int line)
{
    static const uintptr_t tails[][3] = {
        {N(50), N(51), N(52)}, {I(50), I(51), I(52)}, {E(50), E(51), E(52)}, {E(50), N(51), I(52)}};
    uintptr_t other[OUT_ROOM + 3], out[OUT_ROOM];
    ck_assert_uint_le(nnative, OUT_ROOM);
    for (unsigned t = 0; t <= GL_ARRAY_SIZE(tails); t++) {
        memcpy(other, native, used * sizeof *native);
        unsigned n = used;
        if (t < GL_ARRAY_SIZE(tails))
            for (unsigned i = 0; i < 3; i++)
                other[n++] = tails[t][i];
        unsigned again = 0;
        unsigned got = gl_mixed_stack(other, n, py, wh, keep_native, keep_python, out, max, &again);
        ck_assert_msg(got == nwant && memcmp(out, want, got * sizeof *out) == 0,
                      "line %d: the first %u frames merge otherwise with tail %u", line, used, t);
        ck_assert_msg(again == used, "line %d: used %u, then %u with tail %u", line, used, again,
                      t);
    }
}

static void expect_at(const uintptr_t *native, unsigned nnative, const struct gl_python_stack *py,
                      const struct gl_interpreter_where *wh, unsigned keep_native,
                      unsigned keep_python, unsigned max, const uintptr_t *want, unsigned nwant,
                      int line)
{
    uintptr_t out[OUT_ROOM];
    for (unsigned i = 0; i < OUT_ROOM; i++)
        out[i] = SENTINEL;
    ck_assert_uint_le(max, OUT_ROOM);
    unsigned used = 0;
    unsigned got =
        gl_mixed_stack(native, nnative, py, wh, keep_native, keep_python, out, max, &used);
    ck_assert_msg(used >= 1 || nnative == 0, "line %d: used %u of %u", line, used, nnative);
    ck_assert_msg(used <= nnative, "line %d: used %u of %u", line, used, nnative);
    if (used < nnative)
        same_past_used(native, nnative, used, py, wh, keep_native, keep_python, out, got, max,
                       line);
    char g[1024], w[1024];
    describe(g, sizeof g, out, got <= max ? got : max);
    describe(w, sizeof w, want, nwant);
    ck_assert_msg(got == nwant, "line %d: %u frames [%s ], want %u [%s ]", line, got, g, nwant, w);
    for (unsigned i = 0; i < nwant; i++)
        ck_assert_msg(out[i] == want[i], "line %d: frame %u differs: [%s ], want [%s ]", line, i, g,
                      w);
    for (unsigned i = got; i < OUT_ROOM; i++)
        ck_assert_msg(out[i] == SENTINEL, "line %d: out[%u] written past the count", line, i);
}

/* Two groups: the innermost of two frames, the outer of one. */
static const uintptr_t two_groups_frames[] = {P(0), P(1), P(2)};
static const uint16_t two_groups_ends[] = {2, 3};
static const struct gl_python_stack two_groups = {two_groups_frames, 3, two_groups_ends, 2};

START_TEST(test_native_before_interpreter_then_groups)
{
    /* cuMemAlloc, two C++ frames of the extension, the interpreter calling
     * into it, the loop running group 0, more call machinery, the loop running
     * group 1, and the interpreter's start-up (Py_RunMain), then main. */
    const uintptr_t native[] = {N(1), N(2), N(3), I(1), I(2), E(1), I(3), E(2), I(4), N(9)};
    EXPECT(native, &two_groups, &where, 16, 16, 32, N(1), N(2), N(3), P(0), P(1), P(2));
}
END_TEST

START_TEST(test_native_frames_between_groups_kept)
{
    /* A Python callback called from C: sorted(key=...) runs group 0 from C
     * code (the extension's, here) that the loop of group 1 called. */
    const uintptr_t native[] = {N(1), I(1), E(1), N(5), N(6), I(2), E(2), I(3), N(9)};
    EXPECT(native, &two_groups, &where, 16, 16, 32, N(1), P(0), P(1), N(5), N(6), P(2));
}
END_TEST

START_TEST(test_interpreter_frames_dropped)
{
    /* Every interpreter frame that is not its loop goes, wherever it is. */
    const uintptr_t native[] = {I(1), N(1), I(2), I(3), E(1), I(4), I(5), E(2), I(6), I(7)};
    EXPECT(native, &two_groups, &where, 16, 16, 32, N(1), P(0), P(1), P(2));
}
END_TEST

START_TEST(test_stack_ends_below_outermost_group)
{
    /* Below the outermost group the stack ends at the next interpreter frame:
     * the start-up code and main are not kept... */
    const uintptr_t native[] = {N(1), E(1), I(1), E(2), I(2), I(3), N(8), N(9)};
    EXPECT(native, &two_groups, &where, 16, 16, 32, N(1), P(0), P(1), P(2));
    /* ...nor the frames of a program embedding Python, below the interpreter. */
    const uintptr_t embedded[] = {N(1), E(1), E(2), I(1), N(20), N(21), I(2), N(22)};
    EXPECT(embedded, &two_groups, &where, 16, 16, 32, N(1), P(0), P(1), P(2));
    /* Native frames right after the outermost loop frame, before any other
     * interpreter frame, are kept. */
    const uintptr_t after[] = {N(1), E(1), E(2), N(7), N(8), I(1), N(9)};
    EXPECT(after, &two_groups, &where, 16, 16, 32, N(1), P(0), P(1), P(2), N(7), N(8));
    /* Interpreter frames before the outermost group do not end it. */
    const uintptr_t before[] = {I(1), N(1), I(2), E(1), I(3), N(2), I(4), E(2), N(3)};
    EXPECT(before, &two_groups, &where, 16, 16, 32, N(1), P(0), P(1), N(2), P(2), N(3));
}
END_TEST

START_TEST(test_groups_not_reached_follow_at_the_end)
{
    static const uintptr_t frames[] = {P(0), P(1), P(2), P(3)};
    static const uint16_t ends[] = {1, 2, 4};
    const struct gl_python_stack py = {frames, 4, ends, 3};
    /* The walk stops after the loop of group 0 (it was cut short). */
    const uintptr_t native[] = {N(1), I(1), E(1), N(5)};
    EXPECT(native, &py, &where, 16, 16, 32, N(1), P(0), N(5), P(1), P(2), P(3));
    /* No loop frame at all: every group after the native frames, in order. */
    const uintptr_t cut[] = {N(1), N(2)};
    EXPECT(cut, &py, &where, 16, 16, 32, N(1), N(2), P(0), P(1), P(2), P(3));
    /* The loop could not be located: the groups go where the interpreter's
     * frames begin, and the stack ends there (where N(5) sat among the
     * groups is not known). */
    const uintptr_t full[] = {N(1), I(1), E(1), N(5), I(2), E(2), I(3), E(3), N(9)};
    EXPECT(full, &py, &no_loop, 16, 16, 32, N(1), P(0), P(1), P(2), P(3));
    /* No interpreter known at all: every native frame is the program's. */
    EXPECT(cut, &py, &nowhere, 16, 16, 32, N(1), N(2), P(0), P(1), P(2), P(3));
}
END_TEST

START_TEST(test_more_loop_frames_than_groups)
{
    /* A loop frame beyond the last group is an interpreter frame below the
     * outermost group: the stack ends there. */
    static const uintptr_t frames[] = {P(0)};
    static const uint16_t ends[] = {1};
    const struct gl_python_stack py = {frames, 1, ends, 1};
    const uintptr_t native[] = {N(1), E(1), N(2), E(2), N(3)};
    EXPECT(native, &py, &where, 16, 16, 32, N(1), P(0), N(2));
}
END_TEST

START_TEST(test_empty_groups)
{
    /* Groups 0 and 2 ran no frame (a loop entered and not yet at a frame):
     * each still takes its loop frame, so the later groups stay in place. */
    static const uintptr_t frames[] = {P(0), P(1), P(2)};
    static const uint16_t ends[] = {0, 2, 2, 3};
    const struct gl_python_stack py = {frames, 3, ends, 4};
    const uintptr_t native[] = {N(1), E(1), N(2), E(2), N(3), E(3), N(4), E(4), N(5)};
    EXPECT(native, &py, &where, 16, 16, 32, N(1), N(2), P(0), P(1), N(3), N(4), P(2), N(5));
    /* Only empty groups: the native frames alone, down to the interpreter
     * frame after the outermost group (E(3), as there are two). */
    static const uint16_t none[] = {0, 0};
    const struct gl_python_stack empty = {frames, 0, none, 2};
    EXPECT(native, &empty, &where, 16, 16, 32, N(1), N(2), N(3));
    /* Not reached, empty or not: appended all the same. */
    const uintptr_t short_walk[] = {N(1), E(1), N(2)};
    EXPECT(short_walk, &py, &where, 16, 16, 32, N(1), N(2), P(0), P(1), P(2));
}
END_TEST

START_TEST(test_native_budget)
{
    /* Twenty C++ frames under the allocation: keep_native of them shown, and
     * the walk goes on past the rest to the loop frames, which still place
     * their groups. */
    uintptr_t native[26];
    unsigned n = 0;
    for (unsigned i = 0; i < 20; i++)
        native[n++] = N(i);
    native[n++] = I(1);
    native[n++] = E(1);
    native[n++] = N(50); /* between the groups, past the budget: skipped */
    native[n++] = E(2);
    native[n++] = I(2);
    native[n++] = N(99);
    /* No native walk: the groups alone. */
    expect_at(native, 0, &two_groups, &where, 4, 16, 32, (const uintptr_t[]){P(0), P(1), P(2)}, 3,
              __LINE__);
    expect_at(native, n, &two_groups, &where, 4, 16, 32,
              (const uintptr_t[]){N(0), N(1), N(2), N(3), P(0), P(1), P(2)}, 7, __LINE__);
    /* A budget that ends between the groups: what follows is skipped, the
     * second group is not. */
    const uintptr_t mid[] = {N(1), E(1), N(2), N(3), E(2), N(4)};
    EXPECT(mid, &two_groups, &where, 2, 16, 32, N(1), P(0), P(1), N(2), P(2));
    /* keep_native 0: Python frames only. */
    EXPECT(mid, &two_groups, &where, 0, 16, 32, P(0), P(1), P(2));
}
END_TEST

START_TEST(test_native_budget_counts_natives_only)
{
    /* Python frames do not use the native budget, nor the reverse. */
    static const uintptr_t frames[] = {P(0), P(1), P(2), P(3), P(4), P(5)};
    static const uint16_t ends[] = {6};
    const struct gl_python_stack py = {frames, 6, ends, 1};
    const uintptr_t native[] = {N(1), N(2), E(1), N(3), N(4)};
    EXPECT(native, &py, &where, 3, 16, 32, N(1), N(2), P(0), P(1), P(2), P(3), P(4), P(5), N(3));
    EXPECT(native, &py, &where, 16, 2, 32, N(1), N(2), P(0), P(1), N(3), N(4));
}
END_TEST

START_TEST(test_python_budget)
{
    static const uintptr_t frames[] = {P(0), P(1), P(2), P(3), P(4)};
    static const uint16_t ends[] = {2, 4, 5};
    const struct gl_python_stack py = {frames, 5, ends, 3};
    const uintptr_t native[] = {N(1), E(1), N(2), E(2), N(3), E(3), N(4)};
    /* The budget runs out inside group 1: the rest of the Python frames go,
     * the native frames stay where they were. */
    EXPECT(native, &py, &where, 16, 3, 32, N(1), P(0), P(1), N(2), P(2), N(3), N(4));
    /* The same for groups appended at the end. */
    const uintptr_t cut[] = {N(1), E(1), N(2)};
    EXPECT(cut, &py, &where, 16, 3, 32, N(1), P(0), P(1), N(2), P(2));
    /* keep_python 0: the native frames alone, the loop frames still dropped. */
    EXPECT(native, &py, &where, 16, 0, 32, N(1), N(2), N(3), N(4));
}
END_TEST

START_TEST(test_max_respected)
{
    const uintptr_t native[] = {N(1), N(2), N(3), I(1), E(1), I(2), E(2), I(3), N(9)};
    /* Every frame fits at 6; fewer cut from the outer end. */
    EXPECT(native, &two_groups, &where, 16, 16, 6, N(1), N(2), N(3), P(0), P(1), P(2));
    EXPECT(native, &two_groups, &where, 16, 16, 5, N(1), N(2), N(3), P(0), P(1));
    EXPECT(native, &two_groups, &where, 16, 16, 1, N(1));
    EXPECT_NONE(native, 9, &two_groups, &where, 16, 16, 0);
    /* Groups appended at the end stop at max too. */
    const uintptr_t cut[] = {N(1), N(2)};
    EXPECT(cut, &two_groups, &where, 16, 16, 3, N(1), N(2), P(0));
    /* Both budgets above max: max wins. */
    EXPECT(native, &two_groups, &where, 100, 100, 4, N(1), N(2), N(3), P(0));
}
END_TEST

START_TEST(test_no_python_frames)
{
    /* No Python at all: the native frames alone, up to keep_native. */
    const struct gl_python_stack none = {NULL, 0, NULL, 0};
    const uintptr_t native[] = {N(1), N(2), N(3), N(4), N(5)};
    EXPECT(native, &none, &where, 16, 16, 32, N(1), N(2), N(3), N(4), N(5));
    EXPECT(native, &none, &where, 3, 16, 32, N(1), N(2), N(3));
    EXPECT(native, &none, &nowhere, 2, 16, 32, N(1), N(2));
    EXPECT_NONE(native, 0, &none, &where, 16, 16, 32);
}
END_TEST

START_TEST(test_frames_kept_as_given)
{
    /* Python frames are copied as the tagged words they are (code and offset). */
    ck_assert_uint_eq(P(3), gl_py_frames_make(103, 6));
    const uintptr_t f[] = {gl_py_frames_make(0x7fffffff, -2), gl_py_frames_make(1, 123456)};
    static const uint16_t ends[] = {2};
    const struct gl_python_stack py = {f, 2, ends, 1};
    uintptr_t out[4];
    const uintptr_t native[] = {N(1), E(1)};
    unsigned used;
    ck_assert_uint_eq(gl_mixed_stack(native, 2, &py, &where, 8, 8, out, 4, &used), 3);
    ck_assert_uint_eq(out[0], N(1));
    ck_assert(gl_py_frames_is_frame(out[1]));
    ck_assert_uint_eq(gl_py_frames_code(out[1]), 0x7fffffff);
    ck_assert_int_eq(gl_py_frames_offset(out[1]), -2);
    ck_assert_uint_eq(gl_py_frames_code(out[2]), 1);
    ck_assert_int_eq(gl_py_frames_offset(out[2]), 123456);
}
END_TEST

/* What a report shows of a mixed stack (symbol/frame_filter.h), with made-up
 * symbols: N(1) is the CUDA call, N(9) main, N(10..12) the C start-up. */
static void named_lookup(uintptr_t ip, unsigned index, struct gl_frame *out,
                         enum gl_modules_role *role, void *arg)
{
    (void)index;
    (void)arg;
    static const char *const py_names[] = {"train_step", "step", "<module>"};
    memset(out, 0, sizeof *out);
    out->ip = ip;
    *role = GL_MOD_OTHER;
    if (gl_py_frames_is_frame(ip)) {
        unsigned i = gl_py_frames_code(ip) - 100;
        out->function = i < 3 ? py_names[i] : "???";
        out->python = true;
        return;
    }
    switch (ip) {
    case N(1):
        out->function = "cuMemAlloc_v2";
        *role = GL_MOD_DRIVER;
        break;
    case N(2):
        out->function = "extension_alloc";
        break;
    case N(9):
        out->function = "main";
        break;
    case N(10):
        out->function = "__libc_start_call_main";
        break;
    case N(11):
        out->function = "__libc_start_main";
        break;
    case N(12):
        out->function = "_start";
        break;
    }
}

START_TEST(test_unlocated_loop_python_frames_reported)
{
    /* The interpreter loop could not be located.  Were the groups put after
     * the native frames, which run down to main and the C start-up, a report
     * (--show-below-main=no, the default) would end the stack at main and show
     * none of them: they go where the interpreter's frames begin. */
    static const uintptr_t frames[] = {P(0), P(1), P(2)};
    static const uint16_t ends[] = {3};
    const struct gl_python_stack py = {frames, 3, ends, 1};
    const uintptr_t native[] = {N(1), N(2), I(1), E(1), I(2), N(9), N(10), N(11), N(12)};
    uintptr_t mixed[32];
    unsigned used;
    unsigned m = gl_mixed_stack(native, 9, &py, &no_loop, 16, 16, mixed, 32, &used);
    ck_assert_uint_eq(used, 9); /* no loop located: the whole stack matters */
    ck_assert_uint_eq(m, 5);    /* 2 native frames, then the 3 Python ones */
    ck_assert_uint_eq(mixed[2], P(0));
    gl_stack_capture_raw_mode = 0;
    struct gl_frame out[64];
    unsigned n = gl_frame_filter(mixed, m, named_lookup, NULL, false, out, 12);
    unsigned python = 0;
    for (unsigned i = 0; i < n; i++)
        python += out[i].python;
    ck_assert_msg(python == 3, "%u frames shown, %u of them Python (last: %s)", n, python,
                  n ? out[n - 1].function : "none");
}
END_TEST

/* How many native frames a merge reads, on a PyTorch allocation's shape:
 * extension frames, the loop running the one group, the interpreter's call
 * machinery and start-up below.  The stack memo checks that many slots
 * (stack_capture.c's probe), so a merge that reads less than the whole
 * stack must say so, and one that could not place its groups must not. */
START_TEST(test_used_on_a_torch_shape)
{
    static const uintptr_t frames[] = {P(0), P(1), P(2)};
    static const uint16_t ends[] = {3};
    const struct gl_python_stack py = {frames, 3, ends, 1};
    const uintptr_t native[] = {N(1), N(2), N(3), E(1), I(1), I(2), E(2), I(3), N(9), N(10)};
    uintptr_t out[32];
    unsigned used = 0;
    /* The native budget met before the loop: the group at E(1) ends the
     * merge there, four frames read. */
    ck_assert_uint_eq(gl_mixed_stack(native, 10, &py, &where, 3, 12, out, 32, &used), 6);
    ck_assert_uint_eq(used, 4);
    /* Not met: on past the loop to the first interpreter frame below the
     * outermost Python frame, five read. */
    ck_assert_uint_eq(gl_mixed_stack(native, 10, &py, &where, 4, 12, out, 32, &used), 6);
    ck_assert_uint_eq(used, 5);
    /* No loop located: the whole stack, wherever the merge stopped. */
    gl_mixed_stack(native, 10, &py, &no_loop, 3, 12, out, 32, &used);
    ck_assert_uint_eq(used, 10);
    /* Two groups, the walk ending before the second's loop: the whole. */
    static const uint16_t ends2[] = {2, 3};
    const struct gl_python_stack py2 = {frames, 3, ends2, 2};
    gl_mixed_stack(native, 4, &py2, &where, 3, 12, out, 32, &used);
    ck_assert_uint_eq(used, 4);
    gl_mixed_stack(native, 10, &py2, &where, 3, 12, out, 32, &used);
    ck_assert_uint_eq(used, 7); /* the second group at E(2) */
}
END_TEST

static Suite *mixed_stack_suite(void)
{
    Suite *s = suite_create("mixed_stack");
    TCase *tc = tcase_create("mixed_stack");
    tcase_add_test(tc, test_native_before_interpreter_then_groups);
    tcase_add_test(tc, test_native_frames_between_groups_kept);
    tcase_add_test(tc, test_interpreter_frames_dropped);
    tcase_add_test(tc, test_stack_ends_below_outermost_group);
    tcase_add_test(tc, test_groups_not_reached_follow_at_the_end);
    tcase_add_test(tc, test_more_loop_frames_than_groups);
    tcase_add_test(tc, test_empty_groups);
    tcase_add_test(tc, test_native_budget);
    tcase_add_test(tc, test_native_budget_counts_natives_only);
    tcase_add_test(tc, test_python_budget);
    tcase_add_test(tc, test_max_respected);
    tcase_add_test(tc, test_no_python_frames);
    tcase_add_test(tc, test_frames_kept_as_given);
    tcase_add_test(tc, test_unlocated_loop_python_frames_reported);
    tcase_add_test(tc, test_used_on_a_torch_shape);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(mixed_stack_suite)
