/* SPDX-License-Identifier: MIT */
/* lib/stack/mixed_memo.h: a thread's recent stacks with Python frames.
 *
 * Native frames are made-up addresses (0x1000 + i); Python frames are tagged
 * words as python_frames.h makes them.  Each test builds the memo's inputs by
 * hand, so it checks the memo's rules, not what a capture gives it. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "python/py_frames.h"
#include "stack/mixed_memo.h"

#define N(i) ((uintptr_t)0x1000 + (i))
#define P(i) (GL_PY_FRAME_TAG | (uintptr_t)(100 + (i)) << 32 | (uintptr_t)(2 * (i)))

/* A Python stack of three frames in two groups; variant v changes the
 * innermost frame's word (a different line). */
struct pystack {
    uintptr_t frames[3];
    uint16_t ends[2];
    struct gl_python_stack py;
};

static void pystack_make(struct pystack *s, unsigned v)
{
    s->frames[0] = P(0) + 2 * v;
    s->frames[1] = P(1);
    s->frames[2] = P(2);
    s->ends[0] = 2;
    s->ends[1] = 3;
    s->py = (struct gl_python_stack){s->frames, 3, s->ends, 2};
}

static struct gl_mixed_key key_of(const struct gl_python_stack *py)
{
    return (struct gl_mixed_key){py, gl_mixed_memo_hash(py), 16u << 16 | 12u, 1};
}

/* native[i] = N(base + i) for i < n. */
static void natives(uintptr_t *native, unsigned n, unsigned base)
{
    for (unsigned i = 0; i < n; i++)
        native[i] = N(base + i);
}

static struct gl_mixed_memo *memo;

static void setup(void)
{
    gl_mixed_memo_collide(false);
    memo = gl_mixed_memo_new();
    ck_assert_ptr_nonnull(memo);
}

static void teardown(void)
{
    gl_mixed_memo_free(memo);
    gl_mixed_memo_collide(false);
}

/* The memo's entry of id 42 for Python stack 0 (in *s) and native frames
 * N(0..n): its first used read (all: a whole entry), found by checking
 * need raw frames.  native gets N(0..count). */
static struct gl_mixed_key one_entry(struct pystack *s, uintptr_t *native, unsigned count,
                                     unsigned n, unsigned used, unsigned need)
{
    pystack_make(s, 0);
    struct gl_mixed_key k = key_of(&s->py);
    natives(native, count, 0);
    gl_mixed_memo_put(memo, &k, native, n, used, need, 42);
    return k;
}

/* The prefix entry three tests use: ten frames, four read, seven raw checked
 * (*stamp the probe's). */
static struct gl_mixed_key one_prefix_entry(struct pystack *s, uintptr_t *native, unsigned *stamp)
{
    struct gl_mixed_key k = one_entry(s, native, 10, 10, 4, 7);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, stamp), 7);
    return k;
}

START_TEST(test_whole_entry_answers_its_stack_only)
{
    struct pystack s;
    uintptr_t native[8];
    struct gl_mixed_key k = one_entry(&s, native, 8, 5, 5, 9); /* whole */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 5, 3, 4), 42);
    /* One frame more or less: where the stack ended mattered to the merge. */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 6, 3, 4), 0);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 4, 3, 4), 0);
    /* The probe neither asks for its frames nor takes it from a prefix. */
    unsigned stamp;
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 5, stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 8, stamp), 0);
}
END_TEST

START_TEST(test_prefix_entry_answers_stacks_that_begin_with_it)
{
    struct pystack s;
    uintptr_t native[12];
    unsigned stamp;
    struct gl_mixed_key k = one_prefix_entry(&s, native, &stamp);
    /* Its four frames and anything after them. */
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 4, stamp), 42);
    natives(native + 4, 8, 500);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 12, stamp), 42);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 12, 3, 4), 42);
    /* Not fewer than its frames, and not a stack that differs within them. */
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 3, stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 3, 3, 4), 0);
    native[3] = N(999);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 12, stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 12, 3, 4), 0);
}
END_TEST

START_TEST(test_python_frames_depth_and_modules_must_match)
{
    struct pystack s;
    uintptr_t native[6];
    struct gl_mixed_key k = one_entry(&s, native, 6, 6, 2, 5);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 6, 3, 4), 42);
    /* Collide: the hash finds the same ways, so each compare below is made. */
    gl_mixed_memo_collide(true);
    struct gl_mixed_memo *c = gl_mixed_memo_new();
    k = key_of(&s.py);
    gl_mixed_memo_put(c, &k, native, 6, 2, 5, 42);
    ck_assert_uint_eq(gl_mixed_memo_find(c, &k, native, 6, 3, 4), 42);
    struct pystack t;
    pystack_make(&t, 1); /* another line in the innermost frame */
    struct gl_mixed_key kt = key_of(&t.py);
    ck_assert_uint_eq(kt.hash, k.hash);
    ck_assert_uint_eq(gl_mixed_memo_find(c, &kt, native, 6, 3, 4), 0);
    pystack_make(&t, 0);
    t.ends[0] = 1; /* the same frames, grouped otherwise */
    ck_assert_uint_eq(gl_mixed_memo_find(c, &kt, native, 6, 3, 4), 0);
    pystack_make(&t, 0);
    t.py.n = 2; /* fewer frames */
    t.ends[1] = 2;
    ck_assert_uint_eq(gl_mixed_memo_find(c, &kt, native, 6, 3, 4), 0);
    struct gl_mixed_key deeper = k, later = k;
    deeper.keep = 20u << 16 | 12u; /* another --num-callers */
    later.generation = 2;          /* the module ranges changed */
    ck_assert_uint_eq(gl_mixed_memo_find(c, &deeper, native, 6, 3, 4), 0);
    ck_assert_uint_eq(gl_mixed_memo_find(c, &later, native, 6, 3, 4), 0);
    unsigned stamp;
    ck_assert_uint_eq(gl_mixed_memo_need(c, &deeper, &stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_need(c, &later, &stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_need(c, &k, &stamp), 5);
    gl_mixed_memo_free(c);
}
END_TEST

START_TEST(test_find_raises_what_the_probe_reads)
{
    struct pystack s;
    uintptr_t native[10];
    unsigned stamp;
    struct gl_mixed_key k = one_prefix_entry(&s, native, &stamp);
    /* The same stack under a longer internal run: ten raw frames before it. */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 10, 10, 11), 42);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 14);
    /* ...and where the trim read further than the prefix. */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 10, 10, 20), 42);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 20);
    /* Never lowered: another thread's stack may need the longer run. */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 10, 1, 2), 42);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 20);
}
END_TEST

START_TEST(test_need_is_the_most_of_the_prefix_entries)
{
    gl_mixed_memo_collide(true);
    struct pystack s;
    pystack_make(&s, 0);
    struct gl_mixed_key k = key_of(&s.py);
    uintptr_t native[10];
    natives(native, 10, 0);
    gl_mixed_memo_put(memo, &k, native, 10, 3, 6, 1);
    natives(native, 10, 100);
    gl_mixed_memo_put(memo, &k, native, 10, 5, 11, 2);
    natives(native, 10, 200);
    gl_mixed_memo_put(memo, &k, native, 10, 10, 30, 3); /* whole: not asked */
    struct pystack t;
    pystack_make(&t, 1);
    t.py.n = 2; /* other Python frames, of another depth */
    t.ends[1] = 2;
    struct gl_mixed_key kt = key_of(&t.py);
    gl_mixed_memo_put(memo, &kt, native, 10, 2, 40, 4);
    unsigned stamp;
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 11);
    /* Of the same depth and hash (collided): the probe only reads more. */
    pystack_make(&t, 1);
    gl_mixed_memo_put(memo, &kt, native, 10, 2, 40, 5);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 40);
    natives(native, 10, 100);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 5, stamp), 2);
    natives(native, 10, 0);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 5, stamp), 1);
}
END_TEST

START_TEST(test_a_write_after_need_fails_the_probe)
{
    struct pystack s;
    uintptr_t native[10];
    unsigned stamp;
    struct gl_mixed_key k = one_prefix_entry(&s, native, &stamp);
    natives(native, 10, 50);
    gl_mixed_memo_put(memo, &k, native, 10, 4, 7, 43); /* a handler's capture, say */
    natives(native, 10, 0);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 10, stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 7);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 10, stamp), 42);
}
END_TEST

/* 16 stacks of one hash: the two sets' 16 ways. */
static void put_collided(struct gl_mixed_key *k, unsigned first, unsigned count)
{
    uintptr_t native[6];
    for (unsigned i = first; i < first + count; i++) {
        natives(native, 6, 100 * i);
        gl_mixed_memo_put(memo, k, native, 6, 6, 0, 1000 + i);
    }
}

static uint32_t find_collided(struct gl_mixed_key *k, unsigned i)
{
    uintptr_t native[6];
    natives(native, 6, 100 * i);
    return gl_mixed_memo_find(memo, k, native, 6, 0, 0);
}

START_TEST(test_sixteen_ways_then_the_least_recently_used_goes)
{
    gl_mixed_memo_collide(true);
    struct pystack s;
    pystack_make(&s, 0);
    struct gl_mixed_key k = key_of(&s.py);
    put_collided(&k, 0, 16);
    for (unsigned i = 0; i < 16; i++)
        ck_assert_uint_eq(find_collided(&k, i), 1000 + i);
    /* Stored again: the way that holds it, no second copy. */
    put_collided(&k, 3, 1);
    for (unsigned i = 0; i < 16; i++)
        ck_assert_uint_eq(find_collided(&k, i), 1000 + i);
    /* Now 0 is the least recently used; find it, and 1 is. */
    ck_assert_uint_eq(find_collided(&k, 0), 1000);
    put_collided(&k, 16, 1);
    ck_assert_uint_eq(find_collided(&k, 16), 1016);
    ck_assert_uint_eq(find_collided(&k, 1), 0);
    for (unsigned i = 0; i < 16; i++)
        if (i != 1)
            ck_assert_uint_eq(find_collided(&k, i), 1000 + i);
}
END_TEST

START_TEST(test_many_lines_in_turn_stay)
{
    /* A training step's lines in turn, each its own Python stack: the 40
     * of bench/cold_train.py fit 64 ways two-choice (one set of 8 a stack
     * thrashed on them). */
    struct pystack s[40];
    uintptr_t native[6];
    natives(native, 6, 0);
    for (int round = 0; round < 3; round++)
        for (unsigned i = 0; i < 40; i++) {
            pystack_make(&s[i], i);
            struct gl_mixed_key k = key_of(&s[i].py);
            uint32_t got = gl_mixed_memo_find(memo, &k, native, 6, 0, 0);
            if (round > 0)
                ck_assert_msg(got == 1 + i, "line %u forgotten in round %d", i, round);
            else if (!got)
                gl_mixed_memo_put(memo, &k, native, 6, 6, 0, 1 + i);
        }
}
END_TEST

START_TEST(test_what_is_not_kept)
{
    struct pystack s;
    pystack_make(&s, 0);
    struct gl_mixed_key k = key_of(&s.py);
    static uintptr_t native[GL_MIXED_MEMO_NATIVE + 1];
    natives(native, GL_MIXED_MEMO_NATIVE + 1, 0);
    gl_mixed_memo_put(memo, &k, native, 6, 6, 0, 0); /* no id */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 6, 0, 0), 0);
    gl_mixed_memo_put(memo, &k, native, GL_MIXED_MEMO_NATIVE + 1, 3, 5, 7); /* too deep */
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, GL_MIXED_MEMO_NATIVE + 1, 0, 0), 0);
    gl_mixed_memo_put(memo, &k, native, GL_MIXED_MEMO_NATIVE, GL_MIXED_MEMO_NATIVE, 0, 8);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, GL_MIXED_MEMO_NATIVE, 0, 0), 8);
    static uintptr_t pyframes[GL_MIXED_MEMO_PYTHON + 1];
    static uint16_t ends[1] = {GL_MIXED_MEMO_PYTHON + 1};
    for (unsigned i = 0; i <= GL_MIXED_MEMO_PYTHON; i++)
        pyframes[i] = P(i);
    struct gl_python_stack deep = {pyframes, GL_MIXED_MEMO_PYTHON + 1, ends, 1};
    struct gl_mixed_key kd = key_of(&deep);
    gl_mixed_memo_put(memo, &kd, native, 6, 6, 0, 9);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &kd, native, 6, 0, 0), 0);
    deep.n = GL_MIXED_MEMO_PYTHON;
    ends[0] = GL_MIXED_MEMO_PYTHON;
    kd = key_of(&deep);
    gl_mixed_memo_put(memo, &kd, native, 6, 6, 0, 9);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &kd, native, 6, 0, 0), 9);
}
END_TEST

START_TEST(test_counts)
{
    struct pystack s;
    uintptr_t native[10];
    unsigned stamp;
    struct gl_mixed_key k = one_prefix_entry(&s, native, &stamp); /* one store */
    gl_mixed_memo_put(memo, &k, native, 10, 4, 7, 42);            /* held: none */
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 7);   /* the put wrote */
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 4, stamp), 42);
    ck_assert_uint_eq(gl_mixed_memo_find_prefix(memo, &k, native, 3, stamp), 0);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 10, 3, 4), 42);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 10, 3, 4), 42);
    struct gl_mixed_memo_counts c = {1, 2, 3};
    gl_mixed_memo_add_counts(memo, &c);
    ck_assert_uint_eq(c.probe_hits, 1 + 1);
    ck_assert_uint_eq(c.whole_hits, 2 + 2);
    ck_assert_uint_eq(c.stores, 3 + 1);
    gl_mixed_memo_forget(memo); /* the counts stay: the thread's struct goes on */
    memset(&c, 0, sizeof c);
    gl_mixed_memo_add_counts(memo, &c);
    ck_assert_uint_eq(c.probe_hits + c.whole_hits + c.stores, 4);
}
END_TEST

START_TEST(test_forget_and_hash)
{
    struct pystack s, t;
    pystack_make(&s, 0);
    pystack_make(&t, 1);
    struct gl_mixed_key k = key_of(&s.py), kt = key_of(&t.py);
    ck_assert(k.hash != 0 && kt.hash != 0 && k.hash != kt.hash);
    ck_assert_uint_eq(gl_mixed_memo_hash(&s.py), k.hash);
    uintptr_t native[6];
    natives(native, 6, 0);
    gl_mixed_memo_put(memo, &k, native, 6, 2, 4, 42);
    gl_mixed_memo_forget(memo);
    unsigned stamp;
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 6, 0, 0), 0);
    ck_assert_uint_eq(gl_mixed_memo_need(memo, &k, &stamp), 0);
    gl_mixed_memo_put(memo, &k, native, 6, 2, 4, 43);
    ck_assert_uint_eq(gl_mixed_memo_find(memo, &k, native, 6, 0, 0), 43);
}
END_TEST

static Suite *mixed_memo_suite(void)
{
    Suite *s = suite_create("mixed_memo");
    TCase *tc = tcase_create("mixed_memo");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_whole_entry_answers_its_stack_only);
    tcase_add_test(tc, test_prefix_entry_answers_stacks_that_begin_with_it);
    tcase_add_test(tc, test_python_frames_depth_and_modules_must_match);
    tcase_add_test(tc, test_find_raises_what_the_probe_reads);
    tcase_add_test(tc, test_need_is_the_most_of_the_prefix_entries);
    tcase_add_test(tc, test_a_write_after_need_fails_the_probe);
    tcase_add_test(tc, test_sixteen_ways_then_the_least_recently_used_goes);
    tcase_add_test(tc, test_many_lines_in_turn_stay);
    tcase_add_test(tc, test_what_is_not_kept);
    tcase_add_test(tc, test_counts);
    tcase_add_test(tc, test_forget_and_hash);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(mixed_memo_suite)
