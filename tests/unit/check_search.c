/* SPDX-License-Identifier: MIT */
/* lib/common/search.h: the binary searches against a linear scan, at every
 * boundary: each key present, one below and one above it, 0 and UINT64_MAX,
 * runs of equal keys, every length from 0 up, keys at an offset inside
 * elements of another size, and intervals that touch, leave gaps, or are
 * empty. */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"
#include "common/search.h"
#include "common/util.h"

/* Shaped like the reachability scan's targets: the key is not the first field. */
struct rec {
    uint32_t pad;
    uint64_t start, end;
    uint8_t state;
};

static size_t linear_lower(const struct rec *v, size_t n, uint64_t key)
{
    size_t i = 0;
    while (i < n && v[i].start < key)
        i++;
    return i;
}

static size_t linear_upper(const struct rec *v, size_t n, uint64_t key)
{
    size_t i = 0;
    while (i < n && v[i].start <= key)
        i++;
    return i;
}

static size_t linear_containing(const struct rec *v, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].start <= addr && addr < v[i].end)
            return i;
    return n;
}

/* The keys worth asking about for v: each key, its neighbours, the extremes. */
static size_t probes(const struct rec *v, size_t n, uint64_t *out)
{
    size_t k = 0;
    out[k++] = 0;
    out[k++] = 1;
    out[k++] = UINT64_MAX;
    out[k++] = UINT64_MAX - 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t e[] = {v[i].start, v[i].end};
        for (size_t j = 0; j < GL_ARRAY_SIZE(e); j++) {
            out[k++] = e[j];
            out[k++] = e[j] - 1;
            out[k++] = e[j] + 1;
        }
    }
    return k;
}

static void check_bounds(const struct rec *v, size_t n)
{
    uint64_t *keys = malloc((6 * n + 4) * sizeof *keys);
    ck_assert_ptr_nonnull(keys);
    size_t nk = probes(v, n, keys);
    for (size_t k = 0; k < nk; k++) {
        uint64_t key = keys[k];
        ck_assert_uint_eq(GL_SEARCH_LOWER_BOUND(v, n, start, key), linear_lower(v, n, key));
        ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, n, start, key), linear_upper(v, n, key));
        ck_assert_uint_eq(gl_search_lower_bound(v, n, sizeof *v, offsetof(struct rec, start), key),
                          linear_lower(v, n, key));
    }
    free(keys);
}

START_TEST(test_bounds_every_length)
{
    /* Keys with runs of equal values and gaps, every length up to 70. */
    for (size_t n = 0; n <= 70; n++) {
        struct rec v[70] = {{0}};
        uint64_t key = 5;
        for (size_t i = 0; i < n; i++) {
            v[i] = (struct rec){.start = key, .end = key + 1};
            key += i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : 10; /* equal, adjacent, gap */
        }
        check_bounds(v, n);
    }
}
END_TEST

START_TEST(test_bounds_extreme_keys)
{
    struct rec v[] = {{.start = 0},          {.start = 0},
                      {.start = 1},          {.start = UINT64_MAX - 1},
                      {.start = UINT64_MAX}, {.start = UINT64_MAX}};
    for (size_t n = 0; n <= GL_ARRAY_SIZE(v); n++)
        check_bounds(v, n);
    ck_assert_uint_eq(GL_SEARCH_LOWER_BOUND(v, GL_ARRAY_SIZE(v), start, 0), 0);
    ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, GL_ARRAY_SIZE(v), start, 0), 2);
    ck_assert_uint_eq(GL_SEARCH_LOWER_BOUND(v, GL_ARRAY_SIZE(v), start, UINT64_MAX), 4);
    ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, GL_ARRAY_SIZE(v), start, UINT64_MAX), 6);
}
END_TEST

START_TEST(test_bounds_all_equal)
{
    struct rec v[33];
    for (size_t i = 0; i < GL_ARRAY_SIZE(v); i++)
        v[i] = (struct rec){.start = 1000};
    for (size_t n = 1; n <= GL_ARRAY_SIZE(v); n++) {
        ck_assert_uint_eq(GL_SEARCH_LOWER_BOUND(v, n, start, 999), 0);
        ck_assert_uint_eq(GL_SEARCH_LOWER_BOUND(v, n, start, 1000), 0);
        ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, n, start, 1000), n);
        ck_assert_uint_eq(GL_SEARCH_LOWER_BOUND(v, n, start, 1001), n);
    }
}
END_TEST

/* A plain array of uint64_t: stride 8, offset 0; and the field a second key. */
START_TEST(test_plain_array_and_other_field)
{
    uint64_t a[1000];
    for (size_t i = 0; i < GL_ARRAY_SIZE(a); i++)
        a[i] = 3 * i + 1;
    for (uint64_t key = 0; key < 3005; key++) {
        size_t want = key <= 1 ? 0 : (size_t)((key - 1 + 2) / 3);
        if (want > GL_ARRAY_SIZE(a))
            want = GL_ARRAY_SIZE(a);
        ck_assert_uint_eq(gl_search_lower_bound(a, GL_ARRAY_SIZE(a), sizeof *a, 0, key), want);
    }
    struct rec v[] = {{.start = 0, .end = 10}, {.start = 10, .end = 20}, {.start = 30, .end = 40}};
    ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, 3, end, 10), 1); /* first ending above 10 */
    ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, 3, end, 9), 0);
    ck_assert_uint_eq(GL_SEARCH_UPPER_BOUND(v, 3, end, 40), 3);
}
END_TEST

static void check_containing(const struct rec *v, size_t n)
{
    ck_assert(GL_SEARCH_ARE_DISJOINT(v, n, start, end));
    uint64_t *keys = malloc((6 * n + 4) * sizeof *keys);
    ck_assert_ptr_nonnull(keys);
    size_t nk = probes(v, n, keys);
    for (size_t k = 0; k < nk; k++)
        ck_assert_msg(GL_SEARCH_CONTAINING(v, n, start, end, keys[k]) ==
                          linear_containing(v, n, keys[k]),
                      "n=%zu addr=%llu", n, (unsigned long long)keys[k]);
    free(keys);
}

START_TEST(test_containing)
{
    /* Touching, separated, empty and one-byte intervals, from 0 to the top. */
    struct rec v[] = {{.start = 0, .end = 4},
                      {.start = 4, .end = 8},
                      {.start = 8, .end = 8},
                      {.start = 8, .end = 9},
                      {.start = 100, .end = 200},
                      {.start = 200, .end = 200},
                      {.start = 300, .end = 301},
                      {.start = 1000, .end = 0x100000},
                      {.start = UINT64_MAX - 2, .end = UINT64_MAX}};
    for (size_t n = 0; n <= GL_ARRAY_SIZE(v); n++)
        check_containing(v, n);
    for (size_t first = 0; first < GL_ARRAY_SIZE(v); first++)
        check_containing(v + first, GL_ARRAY_SIZE(v) - first);
    ck_assert_uint_eq(GL_SEARCH_CONTAINING(v, GL_ARRAY_SIZE(v), start, end, 8), 3);
    ck_assert_uint_eq(GL_SEARCH_CONTAINING(v, GL_ARRAY_SIZE(v), start, end, 9), GL_ARRAY_SIZE(v));
    ck_assert_uint_eq(GL_SEARCH_CONTAINING(v, GL_ARRAY_SIZE(v), start, end, UINT64_MAX),
                      GL_ARRAY_SIZE(v));
    ck_assert_uint_eq(GL_SEARCH_CONTAINING(v, GL_ARRAY_SIZE(v), start, end, UINT64_MAX - 1), 8);
}
END_TEST

START_TEST(test_containing_random)
{
    enum { N = 3000 };
    static struct rec v[N];
    uint64_t x = 12345, at = 0;
    for (size_t i = 0; i < N; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        at += (x >> 60);              /* gaps of 0..15 */
        uint64_t len = (x >> 40) % 9; /* lengths 0..8 */
        v[i] = (struct rec){.start = at, .end = at + len};
        at += len;
    }
    check_containing(v, N);
}
END_TEST

START_TEST(test_invariant_checks)
{
    struct rec v[] = {{.start = 1, .end = 5}, {.start = 5, .end = 7}, {.start = 9, .end = 9}};
    ck_assert(GL_SEARCH_IS_SORTED(v, 3, start));
    ck_assert(GL_SEARCH_ARE_DISJOINT(v, 3, start, end));
    ck_assert(GL_SEARCH_IS_SORTED(v, 0, start) && GL_SEARCH_ARE_DISJOINT(v, 1, start, end));
    v[1].end = 10; /* overlaps the next */
    ck_assert(GL_SEARCH_IS_SORTED(v, 3, start));
    ck_assert(!GL_SEARCH_ARE_DISJOINT(v, 3, start, end));
    v[1] = (struct rec){.start = 0, .end = 0}; /* out of order, though not overlapping */
    ck_assert(!GL_SEARCH_IS_SORTED(v, 3, start));
    ck_assert(!GL_SEARCH_ARE_DISJOINT(v, 3, start, end));
}
END_TEST

static Suite *search_suite(void)
{
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_bounds_every_length);
    tcase_add_test(tc, test_bounds_extreme_keys);
    tcase_add_test(tc, test_bounds_all_equal);
    tcase_add_test(tc, test_plain_array_and_other_field);
    tcase_add_test(tc, test_containing);
    tcase_add_test(tc, test_containing_random);
    tcase_add_test(tc, test_invariant_checks);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(search_suite)
