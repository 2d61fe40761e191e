/* SPDX-License-Identifier: MIT */
/* lib/track/oom_snapshot.h and the sites' allocated bytes (stack/stack_depot.h,
 * moved by track/stats.h), driven by events as the producers make them: the
 * picture an out-of-memory failure takes (its device's live blocks summed by
 * stack, of the fullest failure), none when not asked for, and each site's
 * bytes allocated over the run, which add up to the statistics' total; the
 * runtime's configuration turning each on for its --flamegraph-cost. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "components.h"
#include "event/api.h"
#include "report/report_flamegraph.h"
#include "runtime.h"
#include "stack/stack_depot.h"
#include "testutil.h"
#include "common/clock.h"
#include "track/errors.h"
#include "track/oom_snapshot.h"
#include "track/stats.h"
#include "tracker_util.h"

#define MiB (1ULL << 20)
#define DEV(i) (0x7e0000000000ULL + (uint64_t)(i)*0x200000ULL)
#define FAR(i) (0x7d0000000000ULL + ((uint64_t)(i) << 32)) /* 4 GiB apart */

static uint32_t s1, s2, s3;

static void event(enum gl_event_type type, uint64_t key, uint64_t size, enum gl_mem_kind kind,
                  int device, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.key = key;
    ev.size = size;
    ev.kind = (uint8_t)kind;
    ev.api = kind == GL_MEM_HOST_PINNED ? GL_API_cuMemAllocHost_v2 : GL_API_cuMemAlloc_v2;
    ev.device = (int16_t)device;
    ev.tid = (uint32_t)getpid();
    ev.stack = stack;
    gl_dispatch(&ev);
}

static void alloc(uint64_t key, uint64_t size, int device, uint32_t stack)
{
    event(GL_EV_ALLOC, key, size, device < 0 ? GL_MEM_HOST_PINNED : GL_MEM_DEVICE, device, stack);
}

static void release(uint64_t key) { event(GL_EV_FREE, key, 0, GL_MEM_DEVICE, 0, 0); }

static void out_of_memory(uint64_t size, int device)
{
    event(GL_EV_ALLOC_FAILED, 0, size, device < 0 ? GL_MEM_HOST_PINNED : GL_MEM_DEVICE, device, s3);
}

static void pipeline(bool oom, bool sites)
{
    gl_oom_snapshot_configure(oom);
    gl_stats_configure(sites);
    tu_pipeline_reset();
}

static void setup(void)
{
    static const uintptr_t f1[] = {0x1111, 0x2222}, f2[] = {0x3333}, f3[] = {0x4444, 0x2222};
    s1 = gl_stack_depot_intern(f1, 2);
    s2 = gl_stack_depot_intern(f2, 1);
    s3 = gl_stack_depot_intern(f3, 2);
    ck_assert(s1 && s2 && s3 && s1 < s2 && s2 < s3);
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
}

static void teardown(void)
{
    gl_oom_snapshot_configure(false);
    gl_stats_configure(false);
    gl_errors_device_memory = NULL;
    gl_oom_snapshot_use_device_totals(true);
}

/* NVML, as the tests have it: device 0 of 256 MiB, device 1 of 16 MiB, the
 * others unknown. */
static bool fake_device_memory(int device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (device != 0 && device != 1)
        return false;
    *total_bytes = device ? 16 * MiB : 256 * MiB;
    *free_bytes = 0;
    return true;
}

/* Device 0 holds s1's 1 and 2 MiB and s2's 4 MiB when it runs out; device 1's
 * block, a pool's sub-allocation (not counted) and pinned host memory are no
 * part of its picture. */
static void fill(void)
{
    alloc(DEV(0), MiB, 0, s1);
    alloc(DEV(1), 2 * MiB, 0, s1);
    alloc(DEV(2), 4 * MiB, 0, s2);
    alloc(DEV(3), 8 * MiB, 1, s2);
    alloc(0x7fff00001000, 100, -1, s1);
    event(GL_EV_ALLOC, DEV(4), MiB, GL_MEM_POOL_SUB, 0, s2);
}

static void assert_site(const struct gl_oom_snapshot *o, size_t i, uint32_t stack, uint64_t bytes,
                        uint64_t blocks)
{
    ck_assert_uint_gt(o->nsites, i);
    ck_assert_uint_eq(o->sites[i].stack, stack);
    ck_assert_uint_eq(o->sites[i].live_bytes, bytes);
    ck_assert_uint_eq(o->sites[i].live_blocks, blocks);
}

START_TEST(test_picture_of_the_device_that_ran_out)
{
    pipeline(true, false);
    ck_assert(gl_dispatch_attached("oom_snapshot"));
    fill();
    out_of_memory(64 * MiB, 0);
    release(DEV(0)); /* gone by exit: the picture keeps it */
    struct gl_oom_snapshot o;
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 1);
    ck_assert_uint_eq(o.number, 1);
    ck_assert_int_eq(o.device, 0);
    ck_assert_uint_eq(o.size, 64 * MiB);
    ck_assert_uint_eq(o.stack, s3);
    ck_assert_uint_eq(o.api, GL_API_cuMemAlloc_v2);
    ck_assert_uint_eq(o.kind, GL_MEM_DEVICE);
    ck_assert_uint_eq(o.nsites, 2);
    assert_site(&o, 0, s1, 3 * MiB, 2);
    assert_site(&o, 1, s2, 4 * MiB, 1);
    ck_assert_uint_eq(o.live_bytes, 7 * MiB);
    ck_assert_uint_eq(o.live_blocks, 3);
    gl_oom_snapshot_free(&o);
    ck_assert_ptr_null(o.sites);

    /* Host memory running out pictures host memory. */
    pipeline(true, false);
    fill();
    out_of_memory(1 << 30, -1);
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_int_eq(o.device, -1);
    ck_assert_uint_eq(o.nsites, 1);
    assert_site(&o, 0, s1, 100, 1);
    gl_oom_snapshot_free(&o);
}
END_TEST

/* Of several failures, the one that found its device fullest, the first of
 * equals; every failure counted. */
START_TEST(test_the_fullest_failure)
{
    pipeline(true, false);
    fill();
    out_of_memory(64 * MiB, 0); /* #1: 7 MiB */
    out_of_memory(32 * MiB, 0); /* #2: 7 MiB too */
    release(DEV(2));
    out_of_memory(64 * MiB, 0);   /* #3: 3 MiB, as a retry after a cache was emptied */
    out_of_memory(1ULL << 50, 0); /* #4: the same */
    struct gl_oom_snapshot o;
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 4);
    ck_assert_uint_eq(o.number, 1);
    ck_assert_uint_eq(o.size, 64 * MiB);
    ck_assert_uint_eq(o.live_bytes, 7 * MiB);
    gl_oom_snapshot_free(&o);

    /* The devices' totals unknown, devices are compared in bytes. */
    out_of_memory(1ULL << 50, 1); /* #5: device 1's 8 MiB, more than #1's 7 */
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 5);
    ck_assert_int_eq(o.device, 1);
    ck_assert_uint_eq(o.device_total, 0);
    ck_assert_uint_eq(o.live_bytes, 8 * MiB);
    gl_oom_snapshot_free(&o);
    alloc(DEV(5), 16 * MiB, 0, s2);
    alloc(DEV(6), MiB, 0, s1);
    out_of_memory(64 * MiB, 0); /* #6: 20 MiB */
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 6);
    ck_assert_uint_eq(o.number, 6);
    ck_assert_int_eq(o.device, 0);
    ck_assert_uint_eq(o.nsites, 2);
    assert_site(&o, 0, s1, 4 * MiB, 3);
    assert_site(&o, 1, s2, 16 * MiB, 1);
    gl_oom_snapshot_free(&o);

    /* A failure with nothing live still is the picture when it is the only one. */
    pipeline(true, false);
    out_of_memory(MiB, 0);
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 1);
    ck_assert_uint_eq(o.nsites, 0);
    ck_assert_ptr_null(o.sites);
    gl_oom_snapshot_free(&o);
}
END_TEST

/* Across devices whose totals NVML tells, the fullest is relative to its
 * device's total: a small card a quarter full beats a large one less full,
 * whatever the bytes; a device whose total is unknown is compared in bytes. */
START_TEST(test_fullest_relative_to_the_device)
{
    gl_errors_device_memory = fake_device_memory;
    pipeline(true, false);
    fill();
    out_of_memory(64 * MiB, 0); /* #1: 7 MiB of 256 */
    release(DEV(3));
    alloc(FAR(1), 4 * MiB, 1, s1);
    out_of_memory(64 * MiB, 1); /* #2: 4 MiB of 16, fewer bytes but fuller */
    struct gl_oom_snapshot o;
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 2);
    ck_assert_int_eq(o.device, 1);
    ck_assert_uint_eq(o.device_total, 16 * MiB);
    ck_assert_uint_eq(o.live_bytes, 4 * MiB);
    ck_assert_uint_eq(o.nsites, 1);
    assert_site(&o, 0, s1, 4 * MiB, 1);
    gl_oom_snapshot_free(&o);

    alloc(FAR(2), 56 * MiB, 0, s2);
    out_of_memory(MiB, 0); /* #3: 63 MiB of 256, more bytes but less full */
    alloc(FAR(3), MiB, 0, s2);
    out_of_memory(MiB, 0); /* #4: 64 MiB of 256, as full: the first kept */
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 4);
    ck_assert_uint_eq(o.number, 2);
    gl_oom_snapshot_free(&o);
    alloc(FAR(4), MiB, 0, s1);
    out_of_memory(MiB, 0); /* #5: 65 MiB of 256 */
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 5);
    ck_assert_int_eq(o.device, 0);
    ck_assert_uint_eq(o.device_total, 256 * MiB);
    ck_assert_uint_eq(o.live_bytes, 65 * MiB);
    assert_site(&o, 0, s1, 4 * MiB, 3);
    assert_site(&o, 1, s2, 61 * MiB, 3);
    gl_oom_snapshot_free(&o);

    /* Device 2's total unknown: in bytes. */
    alloc(FAR(5), 64 * MiB, 2, s2);
    out_of_memory(MiB, 2); /* #6: 64 MiB, fewer than 65 */
    alloc(FAR(6), 2 * MiB, 2, s2);
    out_of_memory(MiB, 2); /* #7: 66 MiB */
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 7);
    ck_assert_int_eq(o.device, 2);
    ck_assert_uint_eq(o.device_total, 0);
    ck_assert_uint_eq(o.live_bytes, 66 * MiB);
    gl_oom_snapshot_free(&o);

    /* The totals not asked for (a replay's devices are not this machine's):
     * in bytes. */
    gl_oom_snapshot_use_device_totals(false);
    pipeline(true, false);
    fill();
    out_of_memory(64 * MiB, 0); /* #1: 7 MiB */
    release(DEV(3));
    alloc(FAR(1), 4 * MiB, 1, s1);
    out_of_memory(64 * MiB, 1); /* #2: 4 MiB */
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 1);
    ck_assert_uint_eq(o.device_total, 0);
    gl_oom_snapshot_free(&o);
}
END_TEST

/* A picture that replaces another takes the other's place: the old one's
 * memory given back, none of the block table's copy kept; one no fuller
 * maps nothing. */
START_TEST(test_picture_replaced)
{
    pipeline(true, false);
    fill();
    out_of_memory(64 * MiB, 0); /* #1 */
    alloc(DEV(5), MiB, 0, s1);
    size_t mapped = gl_tool_mapped_bytes();
    out_of_memory(64 * MiB, 0); /* #2: one page mapped, one unmapped */
    ck_assert_uint_eq(gl_tool_mapped_bytes(), mapped);
    out_of_memory(64 * MiB, 0); /* #3: no fuller, nothing mapped */
    ck_assert_uint_eq(gl_tool_mapped_bytes(), mapped);
    struct gl_oom_snapshot o;
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.number, 2);
    ck_assert_uint_eq(o.live_bytes, 8 * MiB);
    assert_site(&o, 0, s1, 4 * MiB, 3);
    gl_oom_snapshot_free(&o);
}
END_TEST

/* Threads failing at once, each on its own device, each allocating more
 * before it fails again (blocks of device d: d + 1 pages), while another
 * reads: every picture read is whole, and the one kept at the end is the
 * fullest, device 3's last. */
#define RACE_DEVICES 4
#define RACE_ROUNDS 300

static _Atomic bool race_done;

static void *race_fail(void *arg)
{
    int device = (int)(intptr_t)arg;
    for (uint64_t i = 0; i < RACE_ROUNDS; i++) {
        alloc(FAR(device + 1) + i * 0x100000, (uint64_t)(device + 1) * 4096, device, s1);
        out_of_memory(MiB, device);
    }
    return NULL;
}

static void *race_read(void *arg)
{
    (void)arg;
    uint64_t reads = 0;
    while (!atomic_load(&race_done) || !reads) {
        struct gl_oom_snapshot o;
        bool taken = gl_oom_snapshot_read(&o);
        ck_assert(!o.busy);
        if (taken) {
            ck_assert_uint_le(o.nsites, 1); /* none: the first failure's */
            ck_assert_uint_eq(o.nsites ? o.sites[0].live_bytes : 0, o.live_bytes);
            ck_assert_uint_eq(o.live_blocks * (uint64_t)(o.device + 1) * 4096, o.live_bytes);
            ck_assert_uint_ge(o.failures, o.number);
            reads++;
        }
        gl_oom_snapshot_free(&o);
    }
    return NULL;
}

START_TEST(test_failures_at_once)
{
    gl_errors_device_memory = fake_device_memory; /* 0 and 1 relative, 2 and 3 in bytes */
    pipeline(true, false);
    atomic_store(&race_done, false);
    out_of_memory(MiB, 0); /* a picture to read from the start */
    pthread_t fail[RACE_DEVICES], reader;
    ck_assert_int_eq(pthread_create(&reader, NULL, race_read, NULL), 0);
    for (int d = 0; d < RACE_DEVICES; d++)
        ck_assert_int_eq(pthread_create(&fail[d], NULL, race_fail, (void *)(intptr_t)d), 0);
    for (int d = 0; d < RACE_DEVICES; d++)
        pthread_join(fail[d], NULL);
    atomic_store(&race_done, true);
    pthread_join(reader, NULL);
    struct gl_oom_snapshot o;
    ck_assert(gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 1 + RACE_DEVICES * RACE_ROUNDS);
    ck_assert_int_eq(o.device, RACE_DEVICES - 1);
    ck_assert_uint_eq(o.live_bytes, RACE_ROUNDS * RACE_DEVICES * 4096);
    ck_assert_uint_eq(o.nsites, 1);
    assert_site(&o, 0, s1, RACE_ROUNDS * RACE_DEVICES * 4096, RACE_ROUNDS);
    gl_oom_snapshot_free(&o);
}
END_TEST

/* The reader never waits for the lock for long: a failing call stopped
 * while swapping pictures (another thread holding it), or the reading thread
 * itself interrupted there (a fatal signal's exit report), leaves the picture
 * unread, said so, and the report goes on. */
static _Atomic int holder_state; /* 1: holding, 2: let go */

static void *hold_lock(void *arg)
{
    (void)arg;
    gl_oom_snapshot_hold(true);
    atomic_store(&holder_state, 1);
    while (atomic_load(&holder_state) != 2)
        usleep(1000);
    gl_oom_snapshot_hold(false);
    return NULL;
}

static void assert_unread(void)
{
    struct gl_oom_snapshot o;
    double t0 = gl_clock_s();
    ck_assert(!gl_oom_snapshot_read(&o));
    ck_assert_double_lt(gl_clock_s() - t0, 2.0);
    ck_assert(o.busy);
    ck_assert_uint_eq(o.failures, 1);
    ck_assert_uint_eq(o.number, 0);
    ck_assert_ptr_null(o.sites);
    gl_oom_snapshot_free(&o);
}

START_TEST(test_read_never_blocks)
{
    pipeline(true, false);
    fill();
    out_of_memory(64 * MiB, 0);
    atomic_store(&holder_state, 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, hold_lock, NULL), 0);
    while (atomic_load(&holder_state) != 1)
        usleep(1000);
    assert_unread();
    atomic_store(&holder_state, 2);
    pthread_join(t, NULL);
    struct gl_oom_snapshot o;
    ck_assert(gl_oom_snapshot_read(&o)); /* let go: read again */
    ck_assert(!o.busy);
    ck_assert_uint_eq(o.number, 1);
    ck_assert_uint_eq(o.live_bytes, 7 * MiB);
    gl_oom_snapshot_free(&o);

    gl_oom_snapshot_hold(true); /* this thread */
    assert_unread();
    gl_oom_snapshot_hold(false);
    ck_assert(gl_oom_snapshot_read(&o));
    gl_oom_snapshot_free(&o);
}
END_TEST

/* Not asked for: no consumer attached, no picture, nothing counted. */
START_TEST(test_off)
{
    pipeline(false, false);
    ck_assert(!gl_dispatch_attached("oom_snapshot"));
    fill();
    out_of_memory(64 * MiB, 0);
    struct gl_oom_snapshot o;
    ck_assert(!gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 0);
    ck_assert_ptr_null(o.sites);
    gl_oom_snapshot_free(&o);

    /* A reset forgets a picture taken. */
    pipeline(true, false);
    fill();
    out_of_memory(64 * MiB, 0);
    gl_dispatch_reset();
    ck_assert(!gl_oom_snapshot_read(&o));
    ck_assert_uint_eq(o.failures, 0);
}
END_TEST

static const struct gl_site_stats *site_of(const struct gl_site_stats *s, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].stack == id)
            return &s[i];
    return NULL;
}

/* Each site's bytes allocated: freed or not, every allocation counted once;
 * with the blocks of no stack, they add up to the statistics' total. */
START_TEST(test_sites_allocated)
{
    pipeline(false, true);
    fill();
    release(DEV(0));
    release(DEV(1));
    alloc(DEV(0), 3 * MiB, 0, s1);
    alloc(DEV(7), 5000, 0, 0); /* no stack */
    release(DEV(7));
    struct gl_site_stats s[8];
    size_t n = gl_stack_depot_sites(s, 8);
    ck_assert_uint_eq(n, 2);
    const struct gl_site_stats *a = site_of(s, n, s1), *b = site_of(s, n, s2);
    ck_assert(a && b);
    ck_assert_uint_eq(a->alloc_bytes, 6 * MiB + 100);
    ck_assert_uint_eq(a->live_bytes, 3 * MiB + 100);
    ck_assert_uint_eq(a->peak_bytes, 3 * MiB + 100);
    ck_assert_uint_eq(b->alloc_bytes, 12 * MiB); /* the pool's sub-allocation is not counted */
    struct gl_site_stats none;
    ck_assert(gl_stack_depot_site_stackless(&none));
    ck_assert_uint_eq(none.stack, 0);
    ck_assert_uint_eq(none.alloc_bytes, 5000);
    ck_assert_uint_eq(none.live_bytes, 0);
    struct gl_stat_totals t;
    gl_stats_totals(&t);
    ck_assert_uint_eq(a->alloc_bytes + b->alloc_bytes + none.alloc_bytes, t.bytes_allocated);

    /* The statistics' reset (each log of a --read) zeroes them, stacks kept. */
    gl_dispatch_reset();
    ck_assert_uint_eq(gl_stack_depot_sites(NULL, 0), 0);
    ck_assert(!gl_stack_depot_site_stackless(NULL));
    alloc(DEV(9), 4096, 0, s2);
    n = gl_stack_depot_sites(s, 8);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(s[0].stack, s2);
    ck_assert_uint_eq(s[0].alloc_bytes, 4096);

    /* Off (no --stats, no cost that needs them): nothing counted per site. */
    pipeline(false, false);
    alloc(DEV(10), 4096, 0, s1);
    ck_assert_uint_eq(gl_stack_depot_sites(NULL, 0), 0);
}
END_TEST

/* The runtime's configuration: each cost turns on what it reads, and only
 * with a file to write. */
START_TEST(test_configured_by_the_cost)
{
    static const struct {
        const char *options;
        bool sites, oom;
    } cases[] = {
        {"", false, false},
        {"--flamegraph-cost=allocated", false, false}, /* no file: nothing to draw */
        {"--flamegraph-file=/dev/null", false, false}, /* leaked: the leak run's records */
        {"--flamegraph-file=/dev/null --flamegraph-cost=peak", true, false},
        {"--flamegraph-file=/dev/null --flamegraph-cost=allocated", true, false},
        {"--flamegraph-file=/dev/null --flamegraph-cost=oom", false, true},
        {"--flamegraph-file=/dev/null --flamegraph-cost=oom --stats=yes", true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256];
        gl_options_defaults(&gl_runtime.opt);
        ck_assert_msg(gl_options_parse_env(&gl_runtime.opt, cases[i].options, err, sizeof err) == 0,
                      "%s", err);
        gl_runtime_configure_tracking(gl_components);
        ck_assert_msg(gl_stats_sites_on() == cases[i].sites, "%s: sites", cases[i].options);
        ck_assert_msg(gl_dispatch_attached("oom_snapshot") == cases[i].oom, "%s: oom",
                      cases[i].options);
    }
    ck_assert_int_eq(GL_FLAMEGRAPH_ALLOCATED, 3); /* the table's order: leaked|peak|oom|allocated */
}
END_TEST

static Suite *oom_snapshot_suite(void)
{
    Suite *s = suite_create("oom_snapshot");
    TCase *tc = tcase_create("oom_snapshot");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_picture_of_the_device_that_ran_out);
    tcase_add_test(tc, test_the_fullest_failure);
    tcase_add_test(tc, test_fullest_relative_to_the_device);
    tcase_add_test(tc, test_picture_replaced);
    tcase_add_test(tc, test_failures_at_once);
    tcase_add_test(tc, test_read_never_blocks);
    tcase_add_test(tc, test_off);
    tcase_add_test(tc, test_sites_allocated);
    tcase_add_test(tc, test_configured_by_the_cost);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(oom_snapshot_suite)
