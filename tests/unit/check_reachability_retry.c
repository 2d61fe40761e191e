/* SPDX-License-Identifier: MIT */
/* lib/check/reachability.h's retry: every buffer of the scan is sized before
 * the world stops, from counts taken then with room to grow; a heap that grows
 * past that room meanwhile makes the scan size everything again, with twice
 * the room, at most three times.  The test grows the heap at the seam between
 * sizing and stopping (gl_reachability_after_sizing): once, and the second
 * attempt classifies as the first would have; at every attempt, and the scan
 * gives up, saying why, with every block counted as unreferenced. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "check/checkpoints.h"
#include "check/leak_run.h"
#include "check/run_suppressions.h"
#include "event/api.h"
#include "heap/heap.h"
#include "runtime.h"
#include "track/tracker.h"

#define DEV(i) (0x7e0000000000ULL + (uint64_t)(i)*0x200000ULL)
#define SIZE 4096
#define MAX_EXTRA (1 << 20)

static volatile uint64_t g_held; /* DEV(0) is referenced; DEV(1) is not */
static void **extra;             /* chunks made at the seam */
static size_t nextra;
static unsigned attempts_seen, grow_until;

/* Outgrow the room the sizing left: (heap / 4 + 4096) << attempt chunks. */
static void grow_heap(unsigned attempt)
{
    attempts_seen = attempt + 1;
    if (attempt >= grow_until)
        return;
    size_t heap = gl_heap_chunk_count() + gl_heap_mapping_count();
    size_t more = ((heap / 4 + 4096) << attempt) + 1024;
    for (size_t i = 0; i < more && nextra < MAX_EXTRA; i++)
        extra[nextra++] = malloc(16);
}

static void setup(void)
{
    ck_assert(gl_heap_active());
    gl_tracker_init();
    tu_pipeline_reset();
    gl_checkpoints_reset();
    gl_leak_run_close();
    gl_run_suppressions_unload();
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime.opt.default_suppressions = false;
    gl_runtime.pid = getpid();
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    for (int i = 0; i < 2; i++) {
        struct gl_event ev = {.type = GL_EV_ALLOC,
                              .kind = GL_MEM_DEVICE,
                              .api = GL_API_cuMemAlloc_v2,
                              .key = DEV(i),
                              .size = SIZE};
        gl_dispatch(&ev);
    }
    g_held = DEV(0);
    extra = calloc(MAX_EXTRA, sizeof *extra);
    ck_assert_ptr_nonnull(extra);
    nextra = 0;
    attempts_seen = 0;
    gl_reachability_after_sizing = grow_heap;
}

static void teardown(void)
{
    gl_reachability_after_sizing = NULL;
    for (size_t i = 0; i < nextra; i++)
        free(extra[i]);
    free(extra);
    extra = NULL;
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
}

static uint8_t flags_of(const struct gl_leak_run *run, uint64_t key)
{
    for (size_t i = 0; i < run->n; i++)
        if (run->blocks[i].key == key)
            return run->blocks[i].flags;
    ck_abort_msg("block 0x%llx not in the snapshot", (unsigned long long)key);
    return 0;
}

static void run_check(struct gl_leak_run *run)
{
    gl_leak_run_lock();
    ck_assert_int_eq(gl_leak_run(run, 0, NULL), 0);
    gl_leak_run_unlock();
}

START_TEST(test_no_growth_one_attempt)
{
    grow_until = 0;
    struct gl_leak_run run;
    run_check(&run);
    ck_assert_msg(run.reach.available, "%s", run.reach.why_not ? run.reach.why_not : "?");
    ck_assert_uint_eq(attempts_seen, 1);
    ck_assert(flags_of(&run, DEV(0)) & GL_BLK_REACH_START);
    ck_assert(!(flags_of(&run, DEV(1)) & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR)));
    gl_leak_run_free(&run);
}
END_TEST

START_TEST(test_growth_once_sizes_again)
{
    grow_until = 1;
    struct gl_leak_run run;
    run_check(&run);
    ck_assert_msg(run.reach.available, "%s", run.reach.why_not ? run.reach.why_not : "?");
    ck_assert_uint_eq(attempts_seen, 2);
    ck_assert(flags_of(&run, DEV(0)) & GL_BLK_REACH_START);
    ck_assert(!(flags_of(&run, DEV(1)) & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR)));
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_REACHABLE].blocks, 1);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_DEFINITE].blocks, 1);
    ck_assert_uint_gt(run.reach.root_bytes, 0);
    /* The chunks made at the seam were in the second attempt's snapshot. */
    ck_assert_uint_gt(run.reach.objects_reached, 1024);
    gl_leak_run_free(&run);
}
END_TEST

START_TEST(test_growth_every_time_gives_up)
{
    grow_until = 3;
    struct gl_leak_run run;
    run_check(&run);
    ck_assert_uint_eq(attempts_seen, 3);
    ck_assert(!run.reach.available);
    ck_assert_str_eq(run.reach.why_not, "out of memory while scanning");
    ck_assert_uint_eq(run.reach.root_bytes, 0);
    /* No marks: every block counts as unreferenced. */
    ck_assert(!(flags_of(&run, DEV(0)) & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR)));
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_DEFINITE].blocks, 2);
    gl_leak_run_free(&run);
}
END_TEST

static Suite *reachability_retry_suite(void)
{
    Suite *s = suite_create("reachability_retry");
    TCase *tc = tcase_create("retry");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_no_growth_one_attempt);
    tcase_add_test(tc, test_growth_once_sizes_again);
    tcase_add_test(tc, test_growth_every_time_gives_up);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(reachability_retry_suite)
