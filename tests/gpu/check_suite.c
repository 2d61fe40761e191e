/* SPDX-License-Identifier: MIT */
/* A Check suite whose tests allocate GPU memory, checked by gpuleak_check.h:
 * test_leaks leaks on purpose and must fail with the loss record; the others
 * free what they allocate and must pass.  Built with the C compiler, CUDA's
 * runtime API and Check (linked statically: the GPU machine has no libcheck). */
#include <check.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "gpuleak_check.h"

static void *kept;

static __attribute__((noinline)) cudaError_t leak_3mib(void)
{
    return cudaMalloc(&kept, 3 << 20); // SITE:check_leak
}

START_TEST(test_frees)
{
    void *p;
    ck_assert_int_eq(cudaMalloc(&p, 1 << 20), cudaSuccess);
    ck_assert_int_eq(cudaFree(p), cudaSuccess);
}
END_TEST

START_TEST(test_leaks) { ck_assert_int_eq(leak_3mib(), cudaSuccess); }
END_TEST

START_TEST(test_stream_ordered)
{
    void *p;
    cudaStream_t s;
    ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
    ck_assert_int_eq(cudaMallocAsync(&p, 1 << 16, s), cudaSuccess);
    ck_assert_int_eq(cudaFreeAsync(p, s), cudaSuccess);
    ck_assert_int_eq(cudaStreamSynchronize(s), cudaSuccess);
    ck_assert_int_eq(cudaStreamDestroy(s), cudaSuccess);
}
END_TEST

START_TEST(test_pool_emptied)
{
    char *pool;
    ck_assert_int_eq(cudaMalloc((void **)&pool, 1 << 20), cudaSuccess);
    ck_assert_int_eq(gpuleak_pool_create(pool, "check"), 0);
    ck_assert_int_eq(gpuleak_pool_alloc(pool, pool + 256, 100), 0);
    ck_assert_int_eq(gpuleak_pool_free(pool, pool + 256), 0);
    ck_assert_int_eq(gpuleak_pool_destroy(pool), 0);
    ck_assert_int_eq(cudaFree(pool), cudaSuccess);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpuleak_check");
    TCase *tc = tcase_create("gpu");
    tcase_add_checked_fixture(tc, gpuleak_check_setup, gpuleak_check_teardown);
    tcase_add_test(tc, test_frees);
    tcase_add_test(tc, test_leaks);
    tcase_add_test(tc, test_stream_ordered);
    tcase_add_test(tc, test_pool_emptied);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
