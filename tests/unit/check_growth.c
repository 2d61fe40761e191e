/* SPDX-License-Identifier: MIT */
/* lib/check/growth.h and lib/check/framework.h: growth detection at
 * checkpoints, from the stack depot's sites and a framework's own record.
 *
 * Sites are hand-made struct gl_site_stats (their stack ids need not be in the
 * depot: growth detection only compares numbers); what was found is read back
 * through the API error contexts (track/errors.h), with no sink: errors are
 * only counted.  Framework sites are interned into the depot as Python frames,
 * which has no reset: each test runs in its own forked child (Check's
 * default). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check/framework.h"
#include "check/growth.h"
#include "python/py_symbols.h"
#include "testutil.h"
#include "tracker_util.h"
#include "common/util.h"
#include "track/errors.h"
#include "python/py_frames.h"
#include "stack/stack_depot.h"

#define MiB (1024ULL * 1024ULL)

static void setup(void)
{
    gl_errors_sink = NULL;
    gl_errors_capture_stack = NULL;
    gl_errors_component.reset();
    gl_growth_reset();
    gl_framework_reset();
    size_t n;
    gl_framework_take_sites(&n); /* none left from an earlier test */
    gl_growth_configure(3);
}

static void teardown(void)
{
    gl_growth_reset();
    gl_growth_configure(0);
}

static struct gl_error_context ctx[16];

static size_t contexts(void)
{
    size_t n = gl_errors_contexts(ctx, GL_ARRAY_SIZE(ctx));
    ck_assert_uint_le(n, GL_ARRAY_SIZE(ctx));
    return n;
}

static struct gl_site_stats site(uint32_t stack, uint64_t bytes, uint64_t blocks)
{
    return (struct gl_site_stats){.stack = stack, .live_bytes = bytes, .live_blocks = blocks};
}

/* One checkpoint with one depot site (bytes 0 with blocks 0: the site is left
 * out).  Returns what was reported. */
static unsigned at(uint64_t ordinal, uint32_t stack, uint64_t bytes, uint64_t blocks)
{
    struct gl_site_stats s = site(stack, bytes, blocks);
    char name[32];
    snprintf(name, sizeof name, "cp%llu", (unsigned long long)ordinal);
    return gl_growth_check(ordinal, name, &s, bytes || blocks ? 1 : 0, NULL, 0);
}

/* A context is a growth error with these facts. */
static void assert_growth(const struct gl_error_context *c, uint32_t stack, uint64_t bytes,
                          uint64_t from, uint64_t blocks, uint32_t k, uint32_t ordinal,
                          const char *name, enum gl_framework fw)
{
    const struct gl_api_error *e = &c->first;
    ck_assert_uint_eq(e->kind, GL_ERR_GROWTH);
    ck_assert_uint_eq(e->stack, stack);
    ck_assert_uint_eq(e->size, bytes);
    ck_assert_uint_eq(e->growth.from_bytes, from);
    ck_assert_uint_eq(e->growth.blocks, blocks);
    ck_assert_uint_eq(e->growth.checkpoints, k);
    ck_assert_uint_eq(e->growth.ordinal, ordinal);
    ck_assert_str_eq(e->growth.checkpoint, name);
    ck_assert_uint_eq(e->growth.framework, fw);
    ck_assert_uint_eq(c->count, 1);
    ck_assert_ptr_null(c->suppressed_by);
}

/* ---- depot sites ---- */

START_TEST(test_growth_reported_at_k)
{
    ck_assert_uint_eq(gl_growth_checkpoints(), 3);
    /* Steady first, then up at three checkpoints in a row. */
    ck_assert_uint_eq(at(1, 7, 100, 1), 0);
    ck_assert_uint_eq(at(2, 7, 100, 1), 0);
    ck_assert_uint_eq(at(3, 7, 200, 2), 0);
    ck_assert_uint_eq(at(4, 7, 300, 3), 0);
    ck_assert_uint_eq(contexts(), 0);
    struct gl_site_stats s = site(7, 1 * MiB, 4);
    ck_assert_uint_eq(gl_growth_check(5, "step", &s, 1, NULL, 0), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 7, 1 * MiB, 100, 4, 3, 5, "step", GL_FW_NONE);
    /* What the streak started from, blocks too: the report says what grows. */
    ck_assert_uint_eq(ctx[0].first.growth.from_blocks, 1);
    struct gl_api_error_counts c;
    gl_errors_counts(&c);
    ck_assert_uint_eq(c.errors, 1);
    ck_assert_uint_eq(c.by_kind[GL_ERR_GROWTH], 1);
}
END_TEST

START_TEST(test_growth_reported_once)
{
    for (uint64_t i = 1; i <= 3; i++)
        ck_assert_uint_eq(at(i, 9, i * 1000, i), i == 3 ? 1 : 0);
    /* Still growing: nothing more, not even a second count of its context. */
    for (uint64_t i = 4; i <= 20; i++)
        ck_assert_uint_eq(at(i, 9, i * 1000, i), 0);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 9, 3000, 0, 3, 3, 3, "cp3", GL_FW_NONE);
}
END_TEST

START_TEST(test_stall_restarts_the_count)
{
    /* Up at K-1 checkpoints, the same at one, then it needs K more. */
    ck_assert_uint_eq(at(1, 5, 100, 1), 0); /* new: up from nothing */
    ck_assert_uint_eq(at(2, 5, 200, 2), 0);
    ck_assert_uint_eq(at(3, 5, 200, 2), 0); /* stalls */
    ck_assert_uint_eq(at(4, 5, 300, 3), 0);
    ck_assert_uint_eq(at(5, 5, 400, 4), 0);
    ck_assert_uint_eq(contexts(), 0);
    ck_assert_uint_eq(at(6, 5, 500, 5), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 5, 500, 200, 5, 3, 6, "cp6", GL_FW_NONE);
}
END_TEST

START_TEST(test_new_site_grows_from_zero)
{
    gl_growth_configure(1);
    ck_assert_uint_eq(gl_growth_checkpoints(), 1);
    /* Absent at the first checkpoints, then there: up from nothing. */
    ck_assert_uint_eq(gl_growth_check(1, "a", NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(gl_growth_check(2, "b", NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(at(3, 11, 4096, 1), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 11, 4096, 0, 1, 1, 3, "cp3", GL_FW_NONE);
    /* A site that holds nothing is no growth. */
    struct gl_site_stats empty = site(12, 0, 0);
    ck_assert_uint_eq(gl_growth_check(4, "c", &empty, 1, NULL, 0), 0);
    ck_assert_uint_eq(contexts(), 1);
}
END_TEST

START_TEST(test_new_site_counts_toward_k)
{
    /* K = 3: new at 1 (from 0), up at 2 and 3. */
    ck_assert_uint_eq(at(1, 3, 10, 1), 0);
    ck_assert_uint_eq(at(2, 3, 20, 2), 0);
    ck_assert_uint_eq(at(3, 3, 30, 3), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 3, 30, 0, 3, 3, 3, "cp3", GL_FW_NONE);
}
END_TEST

START_TEST(test_shrink_resets)
{
    ck_assert_uint_eq(at(1, 4, 100, 1), 0);
    ck_assert_uint_eq(at(2, 4, 200, 2), 0);
    ck_assert_uint_eq(at(3, 4, 150, 1), 0); /* shrinks */
    ck_assert_uint_eq(at(4, 4, 250, 2), 0);
    ck_assert_uint_eq(at(5, 4, 350, 3), 0);
    ck_assert_uint_eq(contexts(), 0);
    ck_assert_uint_eq(at(6, 4, 450, 4), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 4, 450, 150, 4, 3, 6, "cp6", GL_FW_NONE);
}
END_TEST

START_TEST(test_absent_resets)
{
    ck_assert_uint_eq(at(1, 6, 100, 1), 0);
    ck_assert_uint_eq(at(2, 6, 200, 2), 0);
    /* Not among the sites at 3 (its memory all freed): it held nothing then. */
    ck_assert_uint_eq(gl_growth_check(3, "cp3", NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(at(4, 6, 300, 3), 0);
    ck_assert_uint_eq(at(5, 6, 400, 4), 0);
    ck_assert_uint_eq(contexts(), 0);
    ck_assert_uint_eq(at(6, 6, 500, 5), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 6, 500, 0, 5, 3, 6, "cp6", GL_FW_NONE);
}
END_TEST

START_TEST(test_absent_with_other_sites_present)
{
    /* The same with another site present at the checkpoint it misses. */
    struct gl_site_stats other = site(99, 1, 1);
    ck_assert_uint_eq(at(1, 6, 100, 1), 0);
    ck_assert_uint_eq(at(2, 6, 200, 2), 0);
    ck_assert_uint_eq(gl_growth_check(3, "cp3", &other, 1, NULL, 0), 0);
    ck_assert_uint_eq(at(4, 6, 300, 3), 0);
    ck_assert_uint_eq(at(5, 6, 400, 4), 0);
    ck_assert_uint_eq(contexts(), 0);
}
END_TEST

START_TEST(test_k0_reports_nothing)
{
    gl_growth_configure(0);
    ck_assert_uint_eq(gl_growth_checkpoints(), 0);
    for (uint64_t i = 1; i <= 50; i++)
        ck_assert_uint_eq(at(i, 8, i * MiB, i), 0);
    ck_assert_uint_eq(contexts(), 0);
}
END_TEST

START_TEST(test_two_sites_independent)
{
    gl_growth_configure(2);
    struct gl_site_stats s[3];
    /* 1: grows from the start; 2: steady, then grows; 3: steady throughout. */
    s[0] = site(1, 100, 1), s[1] = site(2, 500, 5), s[2] = site(3, 900, 9);
    ck_assert_uint_eq(gl_growth_check(1, "i", s, 3, NULL, 0), 0);
    s[0] = site(1, 200, 2), s[1] = site(2, 500, 5);
    ck_assert_uint_eq(gl_growth_check(2, "i", s, 3, NULL, 0), 1); /* site 1 */
    s[0] = site(1, 300, 3), s[1] = site(2, 600, 6);
    ck_assert_uint_eq(gl_growth_check(3, "i", s, 3, NULL, 0), 0);
    s[0] = site(1, 250, 2), s[1] = site(2, 700, 7);
    ck_assert_uint_eq(gl_growth_check(4, "i", s, 3, NULL, 0), 1); /* site 2 */
    ck_assert_uint_eq(contexts(), 2);
    assert_growth(&ctx[0], 1, 200, 0, 2, 2, 2, "i", GL_FW_NONE);
    assert_growth(&ctx[1], 2, 700, 500, 7, 2, 4, "i", GL_FW_NONE);
    /* Both at once. */
    gl_growth_reset();
    gl_errors_component.reset();
    s[0] = site(1, 1, 1), s[1] = site(2, 1, 1);
    ck_assert_uint_eq(gl_growth_check(1, "j", s, 2, NULL, 0), 0);
    s[0] = site(1, 2, 1), s[1] = site(2, 2, 1);
    ck_assert_uint_eq(gl_growth_check(2, "j", s, 2, NULL, 0), 2);
    ck_assert_uint_eq(contexts(), 2);
}
END_TEST

START_TEST(test_reset_forgets)
{
    ck_assert_uint_eq(at(1, 7, 100, 1), 0);
    ck_assert_uint_eq(at(2, 7, 200, 1), 0);
    gl_growth_reset();
    /* After a reset (a fork child) the count starts over: the site is new. */
    ck_assert_uint_eq(at(3, 7, 300, 1), 0);
    ck_assert_uint_eq(at(4, 7, 400, 1), 0);
    ck_assert_uint_eq(at(5, 7, 500, 1), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], 7, 500, 0, 1, 3, 5, "cp5", GL_FW_NONE);
}
END_TEST

START_TEST(test_checkpoint_name_kept_whole)
{
    gl_growth_configure(1);
    char name[64];
    memset(name, 'n', 63);
    name[63] = '\0';
    struct gl_site_stats s = site(2, 10, 1);
    ck_assert_uint_eq(gl_growth_check(1, name, &s, 1, NULL, 0), 1);
    ck_assert_uint_eq(contexts(), 1);
    ck_assert_str_eq(ctx[0].first.growth.checkpoint, name);
}
END_TEST

/* ---- framework sites ---- */

#define TRAIN "train.py:42:train_step\ntrain.py:60:<module>\n"

static const struct gl_framework_site *take(size_t *n)
{
    const struct gl_framework_site *fw = gl_framework_take_sites(n);
    ck_assert(*n == 0 || fw != NULL);
    return fw;
}

/* The site taken with these bytes (sites come sorted by stack, not in the
 * order they were handed over). */
static const struct gl_framework_site *site_of(const struct gl_framework_site *fw, size_t n,
                                               uint64_t bytes)
{
    for (size_t i = 0; i < n; i++)
        if (fw[i].bytes == bytes)
            return &fw[i];
    ck_abort_msg("no site of %llu bytes", (unsigned long long)bytes);
    return NULL;
}

START_TEST(test_framework_site_growth)
{
    uint32_t stack = 0;
    for (uint64_t i = 1; i <= 4; i++) {
        ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, TRAIN, i * MiB, i * 10), 0);
        size_t n;
        const struct gl_framework_site *fw = take(&n);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(fw[0].framework, GL_FW_PYTORCH);
        ck_assert_uint_eq(fw[0].bytes, i * MiB);
        ck_assert_uint_eq(fw[0].blocks, i * 10);
        ck_assert_uint_ne(fw[0].stack, 0);
        if (stack)
            ck_assert_uint_eq(fw[0].stack, stack); /* the same text, the same stack */
        stack = fw[0].stack;
        ck_assert_uint_eq(gl_growth_check(i, "step", NULL, 0, fw, n), i == 3 ? 1 : 0);
    }
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], stack, 3 * MiB, 0, 30, 3, 3, "step", GL_FW_PYTORCH);
}
END_TEST

START_TEST(test_framework_site_not_handed_over_resets)
{
    /* A site whose tensors are all gone is simply not handed over. */
    size_t n;
    const struct gl_framework_site *fw;
    ck_assert_int_eq(gl_framework_add_site(GL_FW_CUPY, TRAIN, 100, 1), 0);
    fw = take(&n);
    ck_assert_uint_eq(gl_growth_check(1, "s", NULL, 0, fw, n), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_CUPY, TRAIN, 200, 2), 0);
    fw = take(&n);
    ck_assert_uint_eq(gl_growth_check(2, "s", NULL, 0, fw, n), 0);
    fw = take(&n);
    ck_assert_uint_eq(n, 0); /* taking empties the list */
    ck_assert_uint_eq(gl_growth_check(3, "s", NULL, 0, fw, n), 0);
    for (uint64_t i = 4; i <= 5; i++) {
        ck_assert_int_eq(gl_framework_add_site(GL_FW_CUPY, TRAIN, i * 100, i), 0);
        fw = take(&n);
        ck_assert_uint_eq(gl_growth_check(i, "s", NULL, 0, fw, n), 0);
    }
    ck_assert_int_eq(gl_framework_add_site(GL_FW_CUPY, TRAIN, 600, 6), 0);
    fw = take(&n);
    ck_assert_uint_eq(gl_growth_check(6, "s", NULL, 0, fw, n), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], fw[0].stack, 600, 0, 6, 3, 6, "s", GL_FW_CUPY);
}
END_TEST

START_TEST(test_framework_and_depot_sites_together)
{
    gl_growth_configure(2);
    /* A depot id of its own: the framework's stacks are interned from 1. */
    struct gl_site_stats s = site(5000, 100, 1);
    size_t n;
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "a.py:1:f\n", 10, 1), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "b.py:2:g\n", 10, 1), 0);
    const struct gl_framework_site *fw = take(&n);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_ne(fw[0].stack, fw[1].stack);
    ck_assert_uint_eq(gl_growth_check(1, "x", &s, 1, fw, n), 0);
    s = site(5000, 200, 2);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "a.py:1:f\n", 20, 2), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "b.py:2:g\n", 10, 1), 0);
    fw = take(&n);
    uint32_t a = fw[0].stack;
    ck_assert_uint_eq(gl_growth_check(2, "x", &s, 1, fw, n), 2);
    ck_assert_uint_eq(contexts(), 2);
    assert_growth(&ctx[0], 5000, 200, 0, 2, 2, 2, "x", GL_FW_NONE);
    assert_growth(&ctx[1], a, 20, 0, 2, 2, 2, "x", GL_FW_PYTORCH);
}
END_TEST

START_TEST(test_framework_stack_frames)
{
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, TRAIN, 1, 1), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, TRAIN, 2, 2), 0);
    /* Without the trailing newline, from another framework: the same frames. */
    ck_assert_int_eq(
        gl_framework_add_site(GL_FW_CUPY, "train.py:42:train_step\ntrain.py:60:<module>", 1003, 3),
        0);
    /* One frame more, or another line: another stack. */
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "x.py:1:inner\n" TRAIN, 4, 4), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "train.py:43:train_step\n", 5, 5), 0);
    size_t n;
    const struct gl_framework_site *all = take(&n);
    /* The first two are one site of one stack (their sums); the CuPy one
     * has that stack too, as a site of its own framework. */
    ck_assert_uint_eq(n, 4);
    const struct gl_framework_site *fw[5] = {site_of(all, n, 3), site_of(all, n, 3),
                                             site_of(all, n, 3 + 1000), site_of(all, n, 4),
                                             site_of(all, n, 5)};
    ck_assert_uint_eq(fw[0]->blocks, 3);
    ck_assert_uint_eq(fw[0]->framework, GL_FW_PYTORCH);
    ck_assert_uint_eq(fw[2]->stack, fw[0]->stack);
    ck_assert_uint_eq(fw[2]->framework, GL_FW_CUPY);
    ck_assert_uint_ne(fw[3]->stack, fw[0]->stack);
    ck_assert_uint_ne(fw[4]->stack, fw[0]->stack);

    unsigned nf;
    const uintptr_t *frames = gl_stack_depot_frames(fw[0]->stack, &nf);
    ck_assert_ptr_nonnull(frames);
    ck_assert_uint_eq(nf, 2);
    struct gl_frame f;
    ck_assert(gl_py_frames_is_frame(frames[0]));
    gl_py_symbols_symbolize(frames[0], &f);
    ck_assert(f.python);
    ck_assert_str_eq(f.function, "train_step");
    ck_assert_str_eq(f.file, "train.py");
    ck_assert_int_eq(f.line, 42);
    ck_assert(gl_py_frames_is_frame(frames[1]));
    gl_py_symbols_symbolize(frames[1], &f);
    ck_assert(f.python);
    ck_assert_str_eq(f.function, "<module>");
    ck_assert_str_eq(f.file, "train.py");
    ck_assert_int_eq(f.line, 60);

    /* The longer stack: its inner frame, then the same two. */
    frames = gl_stack_depot_frames(fw[3]->stack, &nf);
    ck_assert_uint_eq(nf, 3);
    gl_py_symbols_symbolize(frames[0], &f);
    ck_assert_str_eq(f.function, "inner");
    ck_assert_str_eq(f.file, "x.py");
    ck_assert_int_eq(f.line, 1);
    const uintptr_t *same = gl_stack_depot_frames(fw[0]->stack, &nf);
    ck_assert_uint_eq(frames[1], same[0]);
    ck_assert_uint_eq(frames[2], same[1]);
}
END_TEST

START_TEST(test_framework_frame_text_forms)
{
    /* A file name holding ':' and a function holding ':' and digits: the
     * split is at the first ':LINE:'. */
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "/a:b/m.py:7:f:1:2\n", 1, 1), 0);
    ck_assert_int_eq(
        gl_framework_add_site(GL_FW_PYTORCH, "/home/u/train.py:1234:Net.forward", 1, 1), 0);
    size_t n;
    const struct gl_framework_site *fw = take(&n);
    ck_assert_uint_eq(n, 2);
    unsigned nf;
    struct gl_frame f;
    const uintptr_t *frames = gl_stack_depot_frames(fw[0].stack, &nf);
    ck_assert_uint_eq(nf, 1);
    gl_py_symbols_symbolize(frames[0], &f);
    ck_assert_str_eq(f.file, "/a:b/m.py");
    ck_assert_int_eq(f.line, 7);
    ck_assert_str_eq(f.function, "f:1:2");
    frames = gl_stack_depot_frames(fw[1].stack, &nf);
    ck_assert_uint_eq(nf, 1);
    gl_py_symbols_symbolize(frames[0], &f);
    ck_assert_str_eq(f.file, "/home/u/train.py");
    ck_assert_int_eq(f.line, 1234);
    ck_assert_str_eq(f.function, "Net.forward");
}
END_TEST

START_TEST(test_framework_bad_input)
{
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "train.py:train_step\n", 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "no colons at all", 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "train.py:x42:f", 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "train.py:42", 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "", 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, "\n\n\n", 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, NULL, 1, 1), -1);
    /* A line too long to parse. */
    char longline[4096];
    memset(longline, 'a', sizeof longline);
    memcpy(longline + sizeof longline - 8, ":1:f", 5);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, longline, 1, 1), -1);
    /* A good stack but no framework, or one past the last. */
    ck_assert_int_eq(gl_framework_add_site(GL_FW_NONE, TRAIN, 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_N, TRAIN, 1, 1), -1);
    ck_assert_int_eq(gl_framework_add_site((enum gl_framework) - 1, TRAIN, 1, 1), -1);
    /* None of them was handed over. */
    size_t n = 99;
    take(&n);
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_framework_many_sites)
{
    /* More sites than the first array holds: all kept, in order. */
    char text[64];
    for (unsigned i = 0; i < 300; i++) {
        snprintf(text, sizeof text, "m.py:%u:f%u\n", i + 1, i);
        ck_assert_int_eq(gl_framework_add_site(GL_FW_JAX, text, i, 1), 0);
    }
    size_t n;
    const struct gl_framework_site *fw = take(&n);
    ck_assert_uint_eq(n, 300);
    for (unsigned i = 0; i < 300; i++) {
        ck_assert_uint_eq(fw[i].bytes, i);
        ck_assert_uint_eq(fw[i].framework, GL_FW_JAX);
        if (i)
            ck_assert_uint_ne(fw[i].stack, fw[i - 1].stack);
    }
    take(&n);
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_framework_deep_stack_capped)
{
    /* Deeper than a stack's Python half: the innermost frames are kept. */
    static char text[200 * 32];
    size_t at = 0;
    for (unsigned i = 0; i < 200; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "d.py:%u:f\n", i + 1);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, text, 1, 1), 0);
    size_t n;
    const struct gl_framework_site *fw = take(&n);
    ck_assert_uint_eq(n, 1);
    unsigned nf;
    const uintptr_t *frames = gl_stack_depot_frames(fw[0].stack, &nf);
    ck_assert_uint_eq(nf, GL_DEPOT_MAX_FRAMES / 2);
    struct gl_frame f;
    gl_py_symbols_symbolize(frames[0], &f);
    ck_assert_int_eq(f.line, 1);
    gl_py_symbols_symbolize(frames[nf - 1], &f);
    ck_assert_int_eq(f.line, (int)nf);
}
END_TEST

/* ---- framework usage ---- */

START_TEST(test_framework_usage_stamped)
{
    struct gl_framework_usage u[8];
    ck_assert_uint_eq(gl_framework_usages(u, 8), 0);
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_PYTORCH, 0, 100, 400), 0);
    /* Not yet recorded: read for the checkpoint about to be taken. */
    ck_assert_uint_eq(gl_framework_usages(u, 8), 0);
    gl_framework_checkpoint_taken(1, "warmup");
    ck_assert_uint_eq(gl_framework_usages(u, 8), 1);
    ck_assert_uint_eq(u[0].framework, GL_FW_PYTORCH);
    ck_assert_int_eq(u[0].device, 0);
    ck_assert_uint_eq(u[0].in_use, 100);
    ck_assert_uint_eq(u[0].reserved, 400);
    ck_assert_uint_eq(u[0].checkpoint, 1);
    ck_assert_str_eq(u[0].checkpoint_name, "warmup");

    /* At the next checkpoint only CuPy on device 3 is read: PyTorch's stays
     * as it was, stamped with the first. */
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_CUPY, 3, 5, 50), 0);
    gl_framework_checkpoint_taken(2, "step");
    ck_assert_uint_eq(gl_framework_usages(u, 8), 2);
    ck_assert_uint_eq(u[0].framework, GL_FW_PYTORCH);
    ck_assert_uint_eq(u[0].checkpoint, 1);
    ck_assert_str_eq(u[0].checkpoint_name, "warmup");
    ck_assert_uint_eq(u[1].framework, GL_FW_CUPY);
    ck_assert_int_eq(u[1].device, 3);
    ck_assert_uint_eq(u[1].in_use, 5);
    ck_assert_uint_eq(u[1].reserved, 50);
    ck_assert_uint_eq(u[1].checkpoint, 2);
    ck_assert_str_eq(u[1].checkpoint_name, "step");

    /* Read again: the new numbers and stamp replace the old. */
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_PYTORCH, 0, 200, 800), 0);
    gl_framework_checkpoint_taken(3, "step");
    ck_assert_uint_eq(gl_framework_usages(u, 8), 2);
    ck_assert_uint_eq(u[0].in_use, 200);
    ck_assert_uint_eq(u[0].reserved, 800);
    ck_assert_uint_eq(u[0].checkpoint, 3);
    ck_assert_uint_eq(u[1].checkpoint, 2);

    /* Room for one: the count of all, one copied. */
    memset(u, 0, sizeof u);
    ck_assert_uint_eq(gl_framework_usages(u, 1), 2);
    ck_assert_uint_eq(u[0].framework, GL_FW_PYTORCH);
    ck_assert_uint_eq(u[1].framework, GL_FW_NONE);
    ck_assert_uint_eq(gl_framework_usages(NULL, 0), 2);

    gl_framework_reset();
    ck_assert_uint_eq(gl_framework_usages(u, 8), 0);
}
END_TEST

START_TEST(test_framework_usage_bad_arguments)
{
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_PYTORCH, -1, 1, 1), -1);
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_PYTORCH, GL_FW_MAX_DEVICES, 1, 1), -1);
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_NONE, 0, 1, 1), -1);
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_N, 0, 1, 1), -1);
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_JAX, GL_FW_MAX_DEVICES - 1, 1, 1), 0);
    gl_framework_checkpoint_taken(1, "c");
    struct gl_framework_usage u[4];
    ck_assert_uint_eq(gl_framework_usages(u, 4), 1);
    ck_assert_uint_eq(u[0].framework, GL_FW_JAX);
    ck_assert_int_eq(u[0].device, GL_FW_MAX_DEVICES - 1);
}
END_TEST

START_TEST(test_framework_usage_name_truncated)
{
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_CUPY, 0, 1, 2), 0);
    char name[200];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    gl_framework_checkpoint_taken(1, name);
    struct gl_framework_usage u;
    ck_assert_uint_eq(gl_framework_usages(&u, 1), 1);
    ck_assert_uint_eq(strlen(u.checkpoint_name), sizeof u.checkpoint_name - 1);
}
END_TEST

START_TEST(test_framework_names)
{
    ck_assert_str_eq(gl_framework_name(GL_FW_PYTORCH), "PyTorch");
    ck_assert_str_eq(gl_framework_name(GL_FW_CUPY), "CuPy");
    ck_assert_str_eq(gl_framework_name(GL_FW_JAX), "JAX");
    for (int f = GL_FW_NONE + 1; f < GL_FW_N; f++)
        ck_assert_int_eq(gl_framework_parse(gl_framework_name((enum gl_framework)f)), f);
    ck_assert_int_eq(gl_framework_parse("pytorch"), GL_FW_NONE); /* names are exact */
    ck_assert_int_eq(gl_framework_parse("TensorFlow"), GL_FW_NONE);
    ck_assert_int_eq(gl_framework_parse(""), GL_FW_NONE);
    ck_assert_int_eq(gl_framework_parse(NULL), GL_FW_NONE);
    ck_assert_int_eq(gl_framework_parse("?"), GL_FW_NONE);
    ck_assert_ptr_nonnull(gl_framework_name(GL_FW_NONE));
    ck_assert_ptr_nonnull(gl_framework_name(GL_FW_N));
}
END_TEST

START_TEST(test_framework_usage_pending_not_shown)
{
    /* A usage read for the coming checkpoint is not recorded until it is
     * taken (as for the first reading): until then the usages are what was
     * read at the last checkpoint, its numbers with its stamp. */
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_PYTORCH, 0, 100, 400), 0);
    gl_framework_checkpoint_taken(1, "warmup");
    ck_assert_int_eq(gl_framework_set_usage(GL_FW_PYTORCH, 0, 999, 1999), 0);
    struct gl_framework_usage u;
    ck_assert_uint_eq(gl_framework_usages(&u, 1), 1);
    ck_assert_uint_eq(u.checkpoint, 1);
    ck_assert_str_eq(u.checkpoint_name, "warmup");
    ck_assert_msg(u.in_use == 100 && u.reserved == 400,
                  "checkpoint 1 \"warmup\" shown with %llu of %llu bytes: the numbers read for "
                  "the next checkpoint",
                  (unsigned long long)u.in_use, (unsigned long long)u.reserved);
}
END_TEST

/* A stack of depth frames d.py:1:f ... d.py:depth:f, then one outermost
 * frame named outer. */
static void deep_text(char *buf, size_t len, unsigned depth, const char *outer)
{
    size_t at = 0;
    for (unsigned i = 0; i < depth; i++)
        at += (size_t)snprintf(buf + at, len - at, "d.py:%u:f\n", i + 1);
    snprintf(buf + at, len - at, "main.py:1:%s\n", outer);
}

START_TEST(test_framework_sites_of_one_stack_summed)
{
    /* Two sites of the framework's record that differ only past the frames a
     * stack keeps (GL_DEPOT_MAX_FRAMES / 2 Python frames: a Lightning or
     * Trainer loop is that deep) are one stack.  Their memory at a checkpoint
     * is the sum of the two; growth of the second must not go unseen. */
    gl_growth_configure(2);
    static char a[100 * 16], b[100 * 16];
    deep_text(a, sizeof a, GL_DEPOT_MAX_FRAMES / 2, "fit");
    deep_text(b, sizeof b, GL_DEPOT_MAX_FRAMES / 2, "validate");
    size_t n;
    const struct gl_framework_site *fw;
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, a, 100, 1), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, b, 100, 1), 0);
    fw = take(&n);
    ck_assert_uint_eq(n, 1); /* one stack: one site, the sum of the two */
    ck_assert_uint_eq(fw[0].bytes, 200);
    ck_assert_uint_eq(fw[0].blocks, 2);
    ck_assert_uint_eq(gl_growth_check(1, "s", NULL, 0, fw, n), 0);
    /* The first stays, the second grows: 200, then 300 bytes at the stack. */
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, a, 100, 1), 0);
    ck_assert_int_eq(gl_framework_add_site(GL_FW_PYTORCH, b, 200, 2), 0);
    fw = take(&n);
    ck_assert_uint_eq(gl_growth_check(2, "s", NULL, 0, fw, n), 1);
    ck_assert_uint_eq(contexts(), 1);
    assert_growth(&ctx[0], fw[0].stack, 300, 0, 3, 2, 2, "s", GL_FW_PYTORCH);
}
END_TEST

static Suite *growth_suite(void)
{
    Suite *s = suite_create("growth");
    TCase *tc = tcase_create("growth");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_growth_reported_at_k);
    tcase_add_test(tc, test_growth_reported_once);
    tcase_add_test(tc, test_stall_restarts_the_count);
    tcase_add_test(tc, test_new_site_grows_from_zero);
    tcase_add_test(tc, test_new_site_counts_toward_k);
    tcase_add_test(tc, test_shrink_resets);
    tcase_add_test(tc, test_absent_resets);
    tcase_add_test(tc, test_absent_with_other_sites_present);
    tcase_add_test(tc, test_k0_reports_nothing);
    tcase_add_test(tc, test_two_sites_independent);
    tcase_add_test(tc, test_reset_forgets);
    tcase_add_test(tc, test_checkpoint_name_kept_whole);
    suite_add_tcase(s, tc);

    TCase *fw = tcase_create("framework");
    tcase_add_checked_fixture(fw, setup, teardown);
    tcase_add_test(fw, test_framework_site_growth);
    tcase_add_test(fw, test_framework_site_not_handed_over_resets);
    tcase_add_test(fw, test_framework_and_depot_sites_together);
    tcase_add_test(fw, test_framework_stack_frames);
    tcase_add_test(fw, test_framework_frame_text_forms);
    tcase_add_test(fw, test_framework_bad_input);
    tcase_add_test(fw, test_framework_many_sites);
    tcase_add_test(fw, test_framework_deep_stack_capped);
    tcase_add_test(fw, test_framework_usage_stamped);
    tcase_add_test(fw, test_framework_usage_bad_arguments);
    tcase_add_test(fw, test_framework_usage_name_truncated);
    tcase_add_test(fw, test_framework_names);
    tcase_add_test(fw, test_framework_usage_pending_not_shown);
    tcase_add_test(fw, test_framework_sites_of_one_stack_summed);
    suite_add_tcase(s, fw);
    return s;
}

TU_MAIN(growth_suite)
