/* SPDX-License-Identifier: MIT */
/* lib/observe/contexts.h: the device of each CUDA context, asked once, and
 * the context of each stream. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "testutil.h"
#include "observe/contexts.h"

static int calls;
static int bias; /* lets a test change the answer for the same context */

/* ctx 0x1000 * (d + 1) is on device d; anything else is unknown. */
static int fake_query(uint64_t ctx)
{
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    if (ctx % 0x1000 == 0 && ctx / 0x1000 >= 1 && ctx / 0x1000 <= 64)
        return (int)(ctx / 0x1000) - 1 + bias;
    return -1;
}

static void setup(void)
{
    gl_contexts_component.reset();
    gl_contexts_set_query(fake_query);
    calls = 0;
    bias = 0;
}

START_TEST(test_null_context)
{
    ck_assert_int_eq(gl_contexts_device(0), -1);
    gl_contexts_created(0);
    ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(test_asked_once)
{
    ck_assert_int_eq(gl_contexts_device(0x3000), 2);
    ck_assert_int_eq(calls, 1);
    ck_assert_int_eq(gl_contexts_device(0x3000), 2);
    ck_assert_int_eq(gl_contexts_device(0x3000), 2);
    ck_assert_int_eq(calls, 1);
    ck_assert_int_eq(gl_contexts_device(0x1000), 0);
    ck_assert_int_eq(calls, 2);
}
END_TEST

START_TEST(test_created_then_looked_up)
{
    gl_contexts_created(0x5000);
    ck_assert_int_eq(calls, 1);
    ck_assert_int_eq(gl_contexts_device(0x5000), 4);
    ck_assert_int_eq(calls, 1);
}
END_TEST

START_TEST(test_unknown_device_is_cached)
{
    ck_assert_int_eq(gl_contexts_device(0x1234), -1);
    ck_assert_int_eq(gl_contexts_device(0x1234), -1);
    ck_assert_int_eq(calls, 1);
}
END_TEST

START_TEST(test_destroyed_is_forgotten)
{
    gl_contexts_created(0x2000);
    ck_assert_int_eq(gl_contexts_device(0x2000), 1);
    gl_contexts_destroyed(0x2000);
    /* The same pointer value, now a context on another device. */
    bias = 5;
    ck_assert_int_eq(gl_contexts_device(0x2000), 6);
    ck_assert_int_eq(calls, 2);
    gl_contexts_destroyed(0x9999000); /* never seen: harmless */
}
END_TEST

START_TEST(test_created_again_updates)
{
    gl_contexts_created(0x2000);
    bias = 3;
    gl_contexts_created(0x2000);
    ck_assert_int_eq(gl_contexts_device(0x2000), 4);
    ck_assert_int_eq(calls, 2);
}
END_TEST

START_TEST(test_no_query)
{
    gl_contexts_set_query(NULL);
    ck_assert_int_eq(gl_contexts_device(0x2000), -1);
    gl_contexts_set_query(fake_query);
    /* What was learnt without a query stays learnt. */
    ck_assert_int_eq(gl_contexts_device(0x2000), -1);
    ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(test_reset)
{
    ck_assert_int_eq(gl_contexts_device(0x2000), 1);
    gl_contexts_component.reset();
    bias = 1;
    ck_assert_int_eq(gl_contexts_device(0x2000), 2);
    ck_assert_int_eq(calls, 2);
}
END_TEST

START_TEST(test_many_contexts)
{
    /* More contexts than slots: every answer stays right. */
    unsigned wrong = 0;
    for (uint64_t i = 1; i <= 1500; i++) {
        uint64_t ctx = 0x100000 + i * 0x1000 + 1; /* never a known device */
        if (gl_contexts_device(ctx) != -1)
            wrong++;
    }
    for (uint64_t d = 1; d <= 64; d++)
        if (gl_contexts_device(d * 0x1000) != (int)d - 1)
            wrong++;
    ck_assert_uint_eq(wrong, 0);
    /* Destroying some frees their slots for new contexts, which are then cached. */
    for (uint64_t i = 1; i <= 100; i++)
        gl_contexts_destroyed(0x100000 + i * 0x1000 + 1);
    gl_contexts_created(0x7000);
    int before = calls;
    ck_assert_int_eq(gl_contexts_device(0x7000), 6);
    ck_assert_int_eq(calls, before);
}
END_TEST

static void *lookup_thread(void *arg)
{
    (void)arg;
    intptr_t wrong = 0;
    for (int round = 0; round < 200; round++)
        for (uint64_t d = 1; d <= 32; d++)
            if (gl_contexts_device(d * 0x1000) != (int)d - 1)
                wrong++;
    return (void *)wrong;
}

START_TEST(test_threads)
{
    pthread_t th[6];
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, lookup_thread, NULL), 0);
    intptr_t wrong = 0;
    for (int i = 0; i < 6; i++) {
        void *r;
        pthread_join(th[i], &r);
        wrong += (intptr_t)r;
    }
    ck_assert_int_eq(wrong, 0);
    /* Each context is asked about at most once per thread that raced for it. */
    ck_assert_int_le(calls, 32 * 6);
    ck_assert_int_ge(calls, 32);
}
END_TEST

/* ---- streams ---- */

#define STREAM(i) (UINT64_C(0x7f0000001000) + (uint64_t)(i)*0x200)
#define CTX_OF(i) ((uint64_t)((i) % 3 + 1) * 0x1000) /* devices 0, 1, 2 */

/* Each stream's context, as announced, through growth and removals; the
 * default streams and unknown ones have none (the current context's); a
 * context destroyed takes its streams along; reset forgets them all. */
START_TEST(test_streams)
{
    for (uint64_t d = 0; d <= 2; d++) {
        gl_contexts_stream_created(d, 0x1000);
        ck_assert_uint_eq(gl_contexts_stream_ctx(d), 0);
    }
    enum { N = 1000 };
    for (int i = 0; i < N; i++)
        gl_contexts_stream_created(STREAM(i), CTX_OF(i));
    for (int i = 0; i < N; i++) {
        ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(i)), CTX_OF(i));
        ck_assert_int_eq(gl_contexts_device(gl_contexts_stream_ctx(STREAM(i))), i % 3);
    }
    /* Unknown: the call keeps the current context (observe/call.h;
     * check_cupti's test_host_and_async places such a block on its device). */
    ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(N)), 0);
    for (int i = 0; i < N; i += 2)
        gl_contexts_stream_destroyed(STREAM(i));
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(i)), i % 2 ? CTX_OF(i) : 0);
    /* A handle made again, in another context. */
    gl_contexts_stream_created(STREAM(1), 0x5000);
    ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(1)), 0x5000);
    gl_contexts_destroyed(CTX_OF(3)); /* device 0's: streams 3, 9, 15... */
    for (int i = 1; i < N; i += 2)
        ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(i)), i == 1       ? 0x5000
                                                             : i % 3 == 0 ? 0
                                                                          : CTX_OF(i));
    gl_contexts_component.reset();
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(i)), 0);
}
END_TEST

/* What a writer does between a lookup's reads and its check. */
static uint64_t moved_stream, moved_to;
static void change_stream(void)
{
    gl_contexts_test_between_reads = NULL; /* once: the retry under the lock runs no hook */
    gl_contexts_stream_destroyed(moved_stream);
    if (moved_to)
        gl_contexts_stream_created(moved_stream, moved_to);
}

/* A stream made again in another context, or destroyed, while a lookup
 * reads the index without the lock: the lookup sees the sequence number
 * move and answers as things are after the change, never with what it read
 * before it. */
START_TEST(test_stream_changed_during_a_lookup)
{
    gl_contexts_stream_created(STREAM(7), 0x1000);
    moved_stream = STREAM(7);
    moved_to = 0x2000;
    gl_contexts_test_between_reads = change_stream;
    ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(7)), 0x2000);
    moved_to = 0;
    gl_contexts_test_between_reads = change_stream;
    ck_assert_uint_eq(gl_contexts_stream_ctx(STREAM(7)), 0);
    ck_assert_ptr_null(gl_contexts_test_between_reads);
}
END_TEST

static _Atomic int streams_done;

/* Looks its streams up, without the lock, while the index grows and shifts. */
static void *stream_reader(void *arg)
{
    intptr_t first = (intptr_t)arg, wrong = 0;
    while (!atomic_load(&streams_done))
        for (intptr_t i = first; i < first + 16; i++)
            if (gl_contexts_stream_ctx(STREAM(i)) != CTX_OF(i))
                wrong++;
    return (void *)wrong;
}

/* Readers find the streams that stay, with their contexts, while a writer
 * makes and destroys thousands of others (the index doubling, removals
 * moving slots back).  A smoke test of the lock-free path: it fails where
 * growth or removal loses an entry, but on two cores it rarely lands a
 * lookup inside a removal's few stores: test_stream_changed_during_a_lookup
 * puts a change there. */
START_TEST(test_streams_threads)
{
    for (int i = 0; i < 64; i++)
        gl_contexts_stream_created(STREAM(i), CTX_OF(i));
    atomic_store(&streams_done, 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, stream_reader, (void *)(intptr_t)(16 * i)),
                         0);
    for (int round = 0; round < 20; round++) {
        for (int i = 1000; i < 3000; i++)
            gl_contexts_stream_created(STREAM(i), 0x7000);
        for (int i = 1000; i < 3000; i++)
            gl_contexts_stream_destroyed(STREAM(i));
    }
    atomic_store(&streams_done, 1);
    intptr_t wrong = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        wrong += (intptr_t)r;
    }
    ck_assert_int_eq(wrong, 0);
}
END_TEST

static Suite *contexts_suite(void)
{
    Suite *s = suite_create("contexts");
    TCase *tc = tcase_create("contexts");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_null_context);
    tcase_add_test(tc, test_asked_once);
    tcase_add_test(tc, test_created_then_looked_up);
    tcase_add_test(tc, test_unknown_device_is_cached);
    tcase_add_test(tc, test_destroyed_is_forgotten);
    tcase_add_test(tc, test_created_again_updates);
    tcase_add_test(tc, test_no_query);
    tcase_add_test(tc, test_reset);
    tcase_add_test(tc, test_many_contexts);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_streams);
    tcase_add_test(tc, test_streams_threads);
    tcase_add_test(tc, test_stream_changed_during_a_lookup);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(contexts_suite)
