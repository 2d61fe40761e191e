/* SPDX-License-Identifier: MIT */
/* lib/base/tool.h: the tool's own memory (mmap regions, slabs, size classes). */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "base/tool.h"

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return false;
    return true;
}

START_TEST(test_map_unmap_accounting)
{
    size_t before = gl_tool_mapped_bytes();
    void *p = gl_tool_map(10000);
    ck_assert_ptr_nonnull(p);
    ck_assert(all_zero(p, 10000));
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (10000 + page - 1) / page * page;
    ck_assert_uint_eq(gl_tool_mapped_bytes(), before + rounded);
    memset(p, 0xff, 10000);
    gl_tool_unmap(p, 10000);
    ck_assert_uint_eq(gl_tool_mapped_bytes(), before);
    gl_tool_unmap(NULL, 4096); /* harmless */
    ck_assert_uint_eq(gl_tool_mapped_bytes(), before);
}
END_TEST

START_TEST(test_slab)
{
    struct gl_slab s;
    gl_tool_slab_init(&s, 40); /* rounded up to 48 */
    ck_assert_uint_eq(s.obj_size, 48);
    char *objs[5000];
    for (int i = 0; i < 5000; i++) {
        objs[i] = gl_tool_slab_get(&s);
        ck_assert_ptr_nonnull(objs[i]);
        ck_assert_uint_eq((uintptr_t)objs[i] % 16, 0);
        ck_assert(all_zero(objs[i], 48));
        memset(objs[i], i & 0xff ? i & 0xff : 1, 48);
    }
    /* No two objects overlap. */
    unsigned overlaps = 0;
    for (int i = 0; i < 5000; i++)
        for (int k = 0; k < 48; k++)
            if ((unsigned char)objs[i][k] != (i & 0xff ? i & 0xff : 1))
                overlaps++;
    ck_assert_uint_eq(overlaps, 0);
    ck_assert_uint_ge(s.chunks_bytes, 5000 * 48);

    /* Freed objects come back, zeroed, last freed first. */
    gl_tool_slab_put(&s, objs[10]);
    gl_tool_slab_put(&s, objs[20]);
    size_t mapped = s.chunks_bytes;
    char *a = gl_tool_slab_get(&s), *b = gl_tool_slab_get(&s);
    ck_assert_ptr_eq(a, objs[20]);
    ck_assert_ptr_eq(b, objs[10]);
    ck_assert(all_zero(a, 48));
    ck_assert(all_zero(b, 48));
    ck_assert_uint_eq(s.chunks_bytes, mapped);

    size_t total = gl_tool_mapped_bytes();
    gl_tool_slab_destroy(&s);
    ck_assert_uint_eq(gl_tool_mapped_bytes(), total - mapped);
    ck_assert_uint_eq(s.chunks_bytes, 0);
    ck_assert_uint_eq(s.obj_size, 48); /* usable again */
    ck_assert_ptr_nonnull(gl_tool_slab_get(&s));
    gl_tool_slab_destroy(&s);
}
END_TEST

START_TEST(test_big_slab_objects)
{
    struct gl_slab s;
    gl_tool_slab_init(&s, 40000);
    char *p[10];
    for (int i = 0; i < 10; i++) {
        p[i] = gl_tool_slab_get(&s);
        ck_assert_ptr_nonnull(p[i]);
        memset(p[i], i + 1, 40000);
    }
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(p[i][0], i + 1);
        ck_assert_int_eq(p[i][39999], i + 1);
    }
    gl_tool_slab_destroy(&s);
}
END_TEST

START_TEST(test_size_classes)
{
    static const size_t sizes[] = {1, 16, 17, 100, 4096, 65536, 65537, 1 << 20};
    void *p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = gl_tool_alloc(sizes[i]);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert(all_zero(p[i], sizes[i]));
        memset(p[i], 0x5a, sizes[i]);
    }
    for (int i = 0; i < 8; i++)
        gl_tool_free(p[i], sizes[i]);
    /* Freed memory is handed out again zeroed. */
    void *again = gl_tool_alloc(100);
    ck_assert(all_zero(again, 100));
    gl_tool_free(again, 100);
    gl_tool_free(NULL, 100);
}
END_TEST

static void *alloc_thread(void *arg)
{
    (void)arg;
    intptr_t bad = 0;
    void *mine[256];
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 256; i++) {
            mine[i] = gl_tool_alloc(24 + (size_t)i);
            if (!mine[i] || !all_zero(mine[i], 24 + (size_t)i))
                bad++;
            else
                memset(mine[i], 0x77, 24 + (size_t)i);
        }
        for (int i = 0; i < 256; i++)
            gl_tool_free(mine[i], 24 + (size_t)i);
    }
    return (void *)bad;
}

START_TEST(test_threads)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, alloc_thread, NULL), 0);
    intptr_t bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (intptr_t)r;
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

static Suite *tool_alloc_suite(void)
{
    Suite *s = suite_create("tool_alloc");
    TCase *tc = tcase_create("tool_alloc");
    tcase_add_test(tc, test_map_unmap_accounting);
    tcase_add_test(tc, test_slab);
    tcase_add_test(tc, test_big_slab_objects);
    tcase_add_test(tc, test_size_classes);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(tool_alloc_suite)
