/* SPDX-License-Identifier: MIT */
/* lib/common/sort.h: GL_SORT_DEFINE's introsort against qsort, on the inputs
 * that break quicksorts (sorted, reversed, equal keys, organ pipes, McIlroy's
 * adversary) at the sizes where its three sorts hand over (insertion sort up
 * to GL_SORT_SHORT, one or nine samples for the pivot, heapsort when deep). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "common/sort.h"
#include "common/util.h"

/* An element like the runtime's (an address range), with an id to tell that
 * the sort moved whole elements and lost none. */
struct item {
    uint64_t start, end;
    uint32_t id;
};

#define BY_START(a, b) ((a)->start < (b)->start)
GL_SORT_DEFINE(sort_items, struct item, BY_START)

static int cmp_items(const void *a, const void *b)
{
    uint64_t x = ((const struct item *)a)->start, y = ((const struct item *)b)->start;
    return (x > y) - (x < y);
}

enum pattern { RANDOM, SORTED, REVERSED, EQUAL, FEW, ORGAN, SAWTOOTH, EXTREMES, NPATTERNS };
static const char *const pattern_names[] = {"random",    "sorted",          "reversed",
                                            "all equal", "few distinct",    "organ pipe",
                                            "sawtooth",  "0 and UINT64_MAX"};

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t key_of(enum pattern p, size_t i, size_t n)
{
    switch (p) {
    case RANDOM:
        return next_random();
    case SORTED:
        return i * 64;
    case REVERSED:
        return (n - i) * 64;
    case EQUAL:
        return 42;
    case FEW:
        return next_random() % 4;
    case ORGAN:
        return i < n / 2 ? i : n - i;
    case SAWTOOTH:
        return i % 97;
    case EXTREMES:
        return next_random() % 2 ? UINT64_MAX : 0;
    default:
        return 0;
    }
}

/* Sort a copy of v by GL_SORT_DEFINE and one by qsort: the same keys in the
 * same order, and every id still there, each with its own element. */
static void check_sorted_like_qsort(const struct item *v, size_t n, const char *what)
{
    struct item *mine = malloc((n + 1) * sizeof *mine), *ref = malloc((n + 1) * sizeof *ref);
    unsigned char *seen = calloc(n + 1, 1);
    ck_assert(mine && ref && seen);
    if (n)
        memcpy(mine, v, n * sizeof *v);
    memcpy(ref, v, n * sizeof *v);
    mine[n] = (struct item){7, 7, UINT32_MAX}; /* past the end: must stay untouched */
    sort_items(mine, n);
    qsort(ref, n, sizeof *ref, cmp_items);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(mine[i].start == ref[i].start, "%s, n=%zu: key %zu differs", what, n, i);
        ck_assert_uint_lt(mine[i].id, n);
        ck_assert_msg(!seen[mine[i].id], "%s, n=%zu: id %u twice", what, n, mine[i].id);
        seen[mine[i].id] = 1;
        ck_assert_uint_eq(mine[i].end, v[mine[i].id].end); /* moved whole */
    }
    ck_assert_uint_eq(mine[n].id, UINT32_MAX);
    free(mine);
    free(ref);
    free(seen);
}

static const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 18, 100, 128, 129, 130, 1000, 100000};

START_TEST(test_patterns_against_qsort)
{
    enum pattern p = (enum pattern)_i;
    for (size_t s = 0; s < GL_ARRAY_SIZE(sizes); s++) {
        size_t n = sizes[s];
        struct item *v = malloc((n + 1) * sizeof *v);
        ck_assert_ptr_nonnull(v);
        for (size_t i = 0; i < n; i++) {
            uint64_t k = key_of(p, i, n);
            v[i] = (struct item){k, k ^ 0x5555, (uint32_t)i};
        }
        check_sorted_like_qsort(v, n, pattern_names[p]);
        free(v);
    }
}
END_TEST

/* Every arrangement of up to 7 keys with repeats (each key 0..2): the small
 * cases where off-by-ones live. */
START_TEST(test_all_small_inputs)
{
    for (size_t n = 0; n <= 7; n++) {
        size_t total = 1;
        for (size_t i = 0; i < n; i++)
            total *= 3;
        for (size_t code = 0; code < total; code++) {
            struct item v[8];
            size_t c = code;
            for (size_t i = 0; i < n; i++, c /= 3)
                v[i] = (struct item){c % 3, i, (uint32_t)i};
            check_sorted_like_qsort(v, n, "small");
        }
    }
}
END_TEST

/* A less that is an expression of both elements, and another type. */
struct pair {
    uint32_t major, minor;
};
#define DESCENDING(a, b)                                                                           \
    ((a)->major != (b)->major ? (a)->major > (b)->major : (a)->minor > (b)->minor)
GL_SORT_DEFINE(sort_pairs_desc, struct pair, DESCENDING)

START_TEST(test_composite_less)
{
    enum { N = 5000 };
    static struct pair v[N];
    for (size_t i = 0; i < N; i++)
        v[i] = (struct pair){(uint32_t)(next_random() % 50), (uint32_t)(next_random() % 1000)};
    sort_pairs_desc(v, N);
    for (size_t i = 1; i < N; i++)
        ck_assert(!DESCENDING(&v[i], &v[i - 1]));
}
END_TEST

/* ---- McIlroy's adversary ("A Killer Adversary for Quicksort", 1999) ----
 * It decides the order of the elements as the sort compares them, always to
 * the sort's disadvantage: a quicksort alone goes quadratic.  The heapsort
 * fallback bounds the compares to O(n log n). */
static int *adv_val;
static int adv_gas, adv_nsolid, adv_candidate;
static long adv_compares;

static int adv_cmp(int x, int y)
{
    adv_compares++;
    if (adv_val[x] == adv_gas && adv_val[y] == adv_gas) {
        if (x == adv_candidate)
            adv_val[x] = adv_nsolid++;
        else
            adv_val[y] = adv_nsolid++;
    }
    if (adv_val[x] == adv_gas)
        adv_candidate = x;
    else if (adv_val[y] == adv_gas)
        adv_candidate = y;
    return adv_val[x] - adv_val[y];
}

#define ADV_LESS(a, b) (adv_cmp(*(a), *(b)) < 0)
GL_SORT_DEFINE(sort_adversary, int, ADV_LESS)

START_TEST(test_mcilroy_adversary)
{
    enum { N = 100000 };
    int *order = malloc(N * sizeof *order);
    adv_val = malloc(N * sizeof *adv_val);
    ck_assert(order && adv_val);
    adv_gas = N - 1;
    adv_nsolid = adv_candidate = 0;
    adv_compares = 0;
    for (int i = 0; i < N; i++) {
        order[i] = i;
        adv_val[i] = adv_gas;
    }
    sort_adversary(order, N);
    long lg = 0;
    for (long k = N; k > 1; k >>= 1)
        lg++;
    long bound = 4 * N * lg; /* quadratic would be some N * N / 4 */
    ck_assert_msg(adv_compares < bound, "%ld compares against the adversary (bound %ld)",
                  adv_compares, bound);
    /* What the adversary chose is an input like any other: sorted right. */
    for (int i = 1; i < N; i++)
        ck_assert_int_le(adv_val[order[i - 1]], adv_val[order[i]]);
    struct item *v = malloc(N * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (int i = 0; i < N; i++)
        v[i] = (struct item){(uint64_t)adv_val[i], (uint64_t)i, (uint32_t)i};
    check_sorted_like_qsort(v, N, "McIlroy's adversary");
    free(v);
    free(order);
    free(adv_val);
}
END_TEST

static Suite *sort_suite(void)
{
    Suite *s = suite_create("sort");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_patterns_against_qsort, 0, NPATTERNS);
    tcase_add_test(tc, test_all_small_inputs);
    tcase_add_test(tc, test_composite_less);
    tcase_add_test(tc, test_mcilroy_adversary);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(sort_suite)
