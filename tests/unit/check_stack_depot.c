/* SPDX-License-Identifier: MIT */
/* lib/stack/stack_depot.h: distinct stacks stored once, named by dense ids.
 *
 * The depot is process-wide and has no reset: each test runs in its own forked
 * child (Check's default), so each starts from an empty depot.  Ids are checked
 * relative to gl_stack_depot_count() at the start so that the tests also hold with
 * CK_FORK=no. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "stack/stack_depot.h"

START_TEST(test_same_frames_same_id)
{
    uintptr_t a[] = {0x401000, 0x402000, 0x403000};
    uintptr_t a_copy[] = {0x401000, 0x402000, 0x403000};
    uint32_t id = gl_stack_depot_intern(a, 3);
    ck_assert_uint_ne(id, 0);
    ck_assert_uint_eq(gl_stack_depot_intern(a, 3), id);
    ck_assert_uint_eq(gl_stack_depot_intern(a_copy, 3), id); /* by content, not by pointer */
}
END_TEST

START_TEST(test_different_frames_different_ids)
{
    uintptr_t a[] = {0x401000, 0x402000, 0x403000};
    uintptr_t b[] = {0x401000, 0x402000, 0x403001}; /* last frame differs */
    uintptr_t c[] = {0x403000, 0x402000, 0x401000}; /* same frames, other order */
    uint32_t ia = gl_stack_depot_intern(a, 3), ib = gl_stack_depot_intern(b, 3),
             ic = gl_stack_depot_intern(c, 3);
    uint32_t ia2 = gl_stack_depot_intern(a, 2); /* a prefix is another stack */
    ck_assert_uint_ne(ia, ib);
    ck_assert_uint_ne(ia, ic);
    ck_assert_uint_ne(ib, ic);
    ck_assert_uint_ne(ia2, ia);
    ck_assert_uint_ne(ia2, ib);
    ck_assert_uint_ne(ia2, ic);
}
END_TEST

START_TEST(test_dense_ids_from_one)
{
    unsigned base = gl_stack_depot_count();
    uintptr_t f[2];
    for (unsigned i = 0; i < 100; i++) {
        f[0] = 0x500000 + i;
        f[1] = 0x600000;
        ck_assert_uint_eq(gl_stack_depot_intern(f, 2), base + i + 1);
        ck_assert_uint_eq(gl_stack_depot_count(), base + i + 1);
    }
    /* Looking a known stack up again adds nothing. */
    f[0] = 0x500000 + 17;
    ck_assert_uint_eq(gl_stack_depot_intern(f, 2), base + 18);
    ck_assert_uint_eq(gl_stack_depot_count(), base + 100);
    if (base == 0) {
        /* A fresh process: the very first stack is id 1. */
        f[0] = 0x500000;
        ck_assert_uint_eq(gl_stack_depot_intern(f, 2), 1);
    }
}
END_TEST

START_TEST(test_frames_of_id)
{
    uintptr_t a[] = {0x7f0000001234, 0x400abc, 0x400def, 0x1};
    uint32_t id = gl_stack_depot_intern(a, 4);
    unsigned n = 99;
    const uintptr_t *got = gl_stack_depot_frames(id, &n);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(n, 4);
    ck_assert(memcmp(got, a, sizeof a) == 0);
    /* The depot keeps its own copy. */
    ck_assert_ptr_ne(got, a);
    a[0] = 0;
    got = gl_stack_depot_frames(id, &n);
    ck_assert_uint_eq(got[0], 0x7f0000001234);
}
END_TEST

START_TEST(test_unknown_ids)
{
    unsigned n = 99;
    ck_assert_ptr_null(gl_stack_depot_frames(0, &n));
    ck_assert_uint_eq(n, 0);
    n = 99;
    ck_assert_ptr_null(gl_stack_depot_frames(gl_stack_depot_count() + 1, &n));
    ck_assert_uint_eq(n, 0);
    n = 99;
    ck_assert_ptr_null(gl_stack_depot_frames(UINT32_MAX, &n));
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_empty_stack)
{
    unsigned before = gl_stack_depot_count();
    uintptr_t f[1] = {0x1234};
    ck_assert_uint_eq(gl_stack_depot_intern(f, 0), 0);
    ck_assert_uint_eq(gl_stack_depot_intern(NULL, 0), 0);
    ck_assert_uint_eq(gl_stack_depot_count(), before);
}
END_TEST

START_TEST(test_truncated_to_max)
{
    static uintptr_t f[GL_STACK_MAX_FRAMES + 10];
    for (unsigned i = 0; i < GL_STACK_MAX_FRAMES + 10; i++)
        f[i] = 0x400000 + i * 16;
    uint32_t id = gl_stack_depot_intern(f, GL_STACK_MAX_FRAMES + 10);
    ck_assert_uint_ne(id, 0);
    unsigned n;
    const uintptr_t *got = gl_stack_depot_frames(id, &n);
    ck_assert_uint_eq(n, GL_STACK_MAX_FRAMES);
    ck_assert(memcmp(got, f, GL_STACK_MAX_FRAMES * sizeof *f) == 0);
    /* Past the limit, frames no longer tell stacks apart. */
    ck_assert_uint_eq(gl_stack_depot_intern(f, GL_STACK_MAX_FRAMES), id);
    f[GL_STACK_MAX_FRAMES + 5] = 0xdead;
    ck_assert_uint_eq(gl_stack_depot_intern(f, GL_STACK_MAX_FRAMES + 10), id);
    ck_assert_uint_ne(gl_stack_depot_intern(f, GL_STACK_MAX_FRAMES - 1), id);
}
END_TEST

START_TEST(test_hash)
{
    uintptr_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
    ck_assert_uint_eq(gl_stack_depot_hash(a, 3), gl_stack_depot_hash(a, 3));
    ck_assert_uint_ne(gl_stack_depot_hash(a, 3), gl_stack_depot_hash(b, 3));
    ck_assert_uint_ne(gl_stack_depot_hash(a, 3), gl_stack_depot_hash(a, 2));
}
END_TEST

START_TEST(test_many_stacks)
{
    /* More than one page of the id table (2^14 entries). */
    unsigned base = gl_stack_depot_count();
    unsigned bad = 0;
    uintptr_t f[3];
    for (unsigned i = 0; i < 40000; i++) {
        f[0] = 0x10000 + i;
        f[1] = i * 7;
        f[2] = ~(uintptr_t)i;
        if (gl_stack_depot_intern(f, 3) != base + i + 1)
            bad++;
    }
    ck_assert_uint_eq(bad, 0);
    for (unsigned i = 0; i < 40000; i++) {
        unsigned n;
        const uintptr_t *got = gl_stack_depot_frames(base + i + 1, &n);
        if (!got || n != 3 || got[0] != 0x10000 + i || got[1] != i * 7 || got[2] != ~(uintptr_t)i)
            bad++;
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_eq(gl_stack_depot_count(), base + 40000);
    ck_assert_uint_gt(gl_stack_depot_memory_bytes(), 40000 * 3 * sizeof(uintptr_t));
}
END_TEST

/* ---- threads ---- */

#define NTHREADS 8
#define NSTACKS 2000

struct worker {
    pthread_t th;
    unsigned id;
    uint32_t ids[NSTACKS];
};

static void stack_of(unsigned s, uintptr_t f[4])
{
    f[0] = 0x7f0000000000 + s * 64;
    f[1] = 0x400000 + s % 13;
    f[2] = 0x500000 + s % 7;
    f[3] = 0x600000;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    /* Every thread interns the same stacks, each in its own order, twice. */
    for (unsigned round = 0; round < 2; round++)
        for (unsigned k = 0; k < NSTACKS; k++) {
            unsigned s = (k * 7919 + w->id * 131) % NSTACKS;
            uintptr_t f[4];
            stack_of(s, f);
            uint32_t id = gl_stack_depot_intern(f, 4);
            if (round == 0)
                w->ids[s] = id;
            else if (w->ids[s] != id)
                w->ids[s] = 0; /* inconsistent: flagged */
        }
    return NULL;
}

START_TEST(test_concurrent_interning)
{
    unsigned base = gl_stack_depot_count();
    static struct worker w[NTHREADS];
    for (unsigned i = 0; i < NTHREADS; i++) {
        w[i].id = i;
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
    }
    for (unsigned i = 0; i < NTHREADS; i++)
        pthread_join(w[i].th, NULL);

    /* Exactly NSTACKS new ids, dense, and every thread got the same id per stack. */
    ck_assert_uint_eq(gl_stack_depot_count(), base + NSTACKS);
    static unsigned char seen[NSTACKS + 1];
    unsigned inconsistent = 0, out_of_range = 0, wrong_frames = 0;
    for (unsigned s = 0; s < NSTACKS; s++) {
        uint32_t id = w[0].ids[s];
        for (unsigned i = 1; i < NTHREADS; i++)
            if (w[i].ids[s] != id)
                inconsistent++;
        if (id <= base || id > base + NSTACKS) {
            out_of_range++;
            continue;
        }
        seen[id - base]++;
        uintptr_t f[4];
        stack_of(s, f);
        unsigned n;
        const uintptr_t *got = gl_stack_depot_frames(id, &n);
        if (!got || n != 4 || memcmp(got, f, sizeof f) != 0)
            wrong_frames++;
    }
    ck_assert_uint_eq(inconsistent, 0);
    ck_assert_uint_eq(out_of_range, 0);
    ck_assert_uint_eq(wrong_frames, 0);
    for (unsigned k = 1; k <= NSTACKS; k++)
        ck_assert_uint_eq(seen[k], 1);
}
END_TEST

static Suite *depot_suite(void)
{
    Suite *s = suite_create("stack_depot");
    TCase *tc = tcase_create("depot");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_same_frames_same_id);
    tcase_add_test(tc, test_different_frames_different_ids);
    tcase_add_test(tc, test_dense_ids_from_one);
    tcase_add_test(tc, test_frames_of_id);
    tcase_add_test(tc, test_unknown_ids);
    tcase_add_test(tc, test_empty_stack);
    tcase_add_test(tc, test_truncated_to_max);
    tcase_add_test(tc, test_hash);
    tcase_add_test(tc, test_many_stacks);
    tcase_add_test(tc, test_concurrent_interning);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(depot_suite)
