/* SPDX-License-Identifier: MIT */
/* lib/observe/crosscheck.h: --intercept=both's comparison, driven by hand.  A
 * "hook" is gl_crosscheck_begin/_end around the call; CUPTI's callbacks are
 * gl_crosscheck_cupti at entry and exit with their own copy of the
 * parameters.  The mismatches reach the pipeline as events, recorded here. */
#include <check.h>
#include <cupti.h>
#include <string.h>

#include "observe/call.h"
#include "observe/crosscheck.h"
#include "testutil.h"
#include "tracker_util.h"

#define ALLOC CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2
#define FREE CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2

static CUdeviceptr out_a, out_b;
static const CUresult ok = CUDA_SUCCESS;

static void setup(void)
{
    tu_pipeline_reset();
    gl_call_set_stacks(false);
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    tu_pipeline_with_recorder();
}

static void teardown(void) { atomic_store(&gl_runtime.state, GL_RT_IDLE); }

/* The mismatches recorded since the last call. */
static unsigned mismatches(struct gl_event *first)
{
    unsigned n = 0;
    for (unsigned i = 0; i < tu_nrecorded && i < TU_RECORDED; i++)
        if (tu_recorded[i].ev.type == GL_EV_OBSERVER_MISMATCH && n++ == 0 && first)
            *first = tu_recorded[i].ev;
    tu_nrecorded = 0;
    return n;
}

/* A hooked allocation of n bytes at addr; CUPTI sees it (with its own copy
 * of the parameters, cupti_bytes) unless cupti_bytes is 0. */
static void hooked_alloc(uint64_t addr, size_t n, size_t cupti_bytes)
{
    cuMemAlloc_v2_params hook = {&out_a, n}, cupti = {&out_b, cupti_bytes};
    struct gl_crosscheck_call c;
    gl_crosscheck_begin(&c, ALLOC, &hook, 0, 0x1000);
    out_a = out_b = addr; /* the driver's output, read by both at exit */
    if (cupti_bytes) {
        ck_assert(gl_crosscheck_cupti(ALLOC, false, &cupti, NULL, 0x1000));
        ck_assert(gl_crosscheck_cupti(ALLOC, true, &cupti, &ok, 0x1000));
    }
    gl_crosscheck_end(&c, CUDA_SUCCESS);
}

START_TEST(test_both_saw_it)
{
    uint64_t before = gl_crosscheck_differences();
    hooked_alloc(0x7000, 4096, 4096);
    ck_assert_uint_eq(mismatches(NULL), 0);
    ck_assert_uint_eq(gl_crosscheck_differences(), before);
}
END_TEST

START_TEST(test_hook_alone)
{
    struct gl_event ev;
    hooked_alloc(0x7000, 4096, 0);
    ck_assert_uint_eq(mismatches(&ev), 1);
    ck_assert_uint_eq(ev.aux, GL_MISMATCH_DRIVER_ONLY);
    ck_assert_uint_eq(ev.key, 0x7000);
    ck_assert_uint_eq(ev.size, 4096);
    ck_assert_uint_eq(ev.api, gl_decode_api_of_cbid(ALLOC));
    ck_assert_uint_eq(ev.seq, GL_EV_ALLOC);
}
END_TEST

START_TEST(test_read_differently)
{
    struct gl_event ev;
    hooked_alloc(0x7000, 4096, 8192);
    ck_assert_uint_eq(mismatches(&ev), 1);
    ck_assert_uint_eq(ev.aux, GL_MISMATCH_DIFFERENT);
}
END_TEST

START_TEST(test_cupti_alone)
{
    struct gl_event ev;
    cuMemAlloc_v2_params p = {&out_b, 2048};
    out_b = 0x9000;
    ck_assert(!gl_crosscheck_cupti(ALLOC, false, &p, NULL, 0x1000));
    ck_assert_uint_eq(mismatches(NULL), 0); /* an allocation makes its event at exit */
    ck_assert(!gl_crosscheck_cupti(ALLOC, true, &p, &ok, 0x1000));
    ck_assert_uint_eq(mismatches(&ev), 1);
    ck_assert_uint_eq(ev.aux, GL_MISMATCH_CUPTI_ONLY);
    ck_assert_uint_eq(ev.key, 0x9000);
    /* A free makes its event at entry (and again at exit): reported once. */
    cuMemFree_v2_params f = {0x9000};
    ck_assert(!gl_crosscheck_cupti(FREE, false, &f, NULL, 0x1000));
    ck_assert(!gl_crosscheck_cupti(FREE, true, &f, &ok, 0x1000));
    ck_assert_uint_eq(mismatches(&ev), 1);
    ck_assert_uint_eq(ev.seq, GL_EV_FREE);
}
END_TEST

START_TEST(test_other_entry_point_inside_a_hook)
{
    /* CUPTI reports a free while the thread is in an allocation's hook: not
     * the hook's call. */
    cuMemAlloc_v2_params hook = {&out_a, 4096}, cupti = {&out_b, 4096};
    cuMemFree_v2_params f = {0x5000};
    struct gl_crosscheck_call c;
    gl_crosscheck_begin(&c, ALLOC, &hook, 0, 0x1000);
    ck_assert(!gl_crosscheck_cupti(FREE, false, &f, NULL, 0x1000));
    out_a = out_b = 0x7000;
    ck_assert(gl_crosscheck_cupti(ALLOC, true, &cupti, &ok, 0x1000));
    gl_crosscheck_end(&c, CUDA_SUCCESS);
    struct gl_event ev;
    ck_assert_uint_eq(mismatches(&ev), 1);
    ck_assert_uint_eq(ev.aux, GL_MISMATCH_CUPTI_ONLY);
    ck_assert_uint_eq(ev.key, 0x5000);
}
END_TEST

START_TEST(test_failed_calls_say_nothing)
{
    cuMemAlloc_v2_params hook = {&out_a, 4096};
    struct gl_crosscheck_call c;
    gl_crosscheck_begin(&c, ALLOC, &hook, 0, 0x1000);
    out_a = 0;
    gl_crosscheck_end(&c, CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(mismatches(NULL), 0);
}
END_TEST

static Suite *crosscheck_suite(void)
{
    Suite *s = suite_create("crosscheck");
    TCase *tc = tcase_create("calls");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_both_saw_it);
    tcase_add_test(tc, test_hook_alone);
    tcase_add_test(tc, test_read_differently);
    tcase_add_test(tc, test_cupti_alone);
    tcase_add_test(tc, test_other_entry_point_inside_a_hook);
    tcase_add_test(tc, test_failed_calls_say_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(crosscheck_suite)
