/* SPDX-License-Identifier: MIT */
/* lib/check/counters.h: the counters a check reads, in the report's types.
 * Blocks made as events; what the module reads is compared with what the
 * tracker and the usage counters say themselves, and the out-of-memory
 * report's holders (live bytes per kind, sites by live bytes) with the
 * blocks made. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "check/counters.h"
#include "event/api.h"
#include "stack/stack_depot.h"
#include "track/stats.h"
#include "track/tracker.h"

#define MiB (1ULL << 20)
#define DEV(i) (0x7e0000000000ULL + (uint64_t)(i)*0x200000ULL)

static uint32_t s1, s2;

static void alloc(uint64_t key, uint64_t size, enum gl_mem_kind kind, int device, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.key = key;
    ev.size = size;
    ev.kind = (uint8_t)kind;
    ev.api = kind == GL_MEM_HOST_PINNED ? GL_API_cuMemAllocHost_v2 : GL_API_cuMemAlloc_v2;
    ev.device = (int16_t)device;
    ev.tid = (uint32_t)getpid();
    ev.stack = stack;
    gl_dispatch(&ev);
}

static void release(uint64_t key)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_FREE;
    ev.key = key;
    gl_dispatch(&ev);
}

/* Device 0: s1 three 1 MiB blocks (one freed again), s2 one of 2 MiB;
 * device 1: s1 4 KiB; host: 100 pinned bytes, no stack. */
static void setup(void)
{
    gl_tracker_init();
    tu_pipeline_reset();
    gl_stats_configure(true);
    static const uintptr_t f1[] = {0x1111, 0x2222}, f2[] = {0x3333};
    s1 = gl_stack_depot_intern(f1, 2);
    s2 = gl_stack_depot_intern(f2, 1);
    ck_assert(s1 && s2 && s1 != s2);
    for (int i = 0; i < 3; i++)
        alloc(DEV(i), MiB, GL_MEM_DEVICE, 0, s1);
    alloc(DEV(10), 2 * MiB, GL_MEM_DEVICE, 0, s2);
    alloc(DEV(20), 4096, GL_MEM_DEVICE, 1, s1);
    alloc(0x7fff00001000, 100, GL_MEM_HOST_PINNED, -1, 0);
    release(DEV(1));
}

static void teardown(void) { gl_stats_configure(false); }

static void assert_counts_eq(const struct gl_stat_counts *c, const struct gl_stat_counts *s)
{
    ck_assert_uint_eq(c->cur_blocks, s->cur_blocks);
    ck_assert_uint_eq(c->peak_blocks, s->peak_blocks);
    ck_assert_uint_eq(c->alloc_blocks, s->alloc_blocks);
    ck_assert_uint_eq(c->freed_blocks, s->freed_blocks);
    ck_assert_uint_eq(c->cur_bytes, s->cur_bytes);
    ck_assert_uint_eq(c->peak_bytes, s->peak_bytes);
    ck_assert_uint_eq(c->alloc_bytes, s->alloc_bytes);
    ck_assert_uint_eq(c->freed_bytes, s->freed_bytes);
}

/* The report's usage is the statistics' snapshot: every group and device as
 * read one at a time. */
START_TEST(test_snapshot_is_the_stats)
{
    static struct gl_usage c;
    gl_stats_snapshot(&c);
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        ck_assert(c.used[sl] == gl_stats_slot_used(sl));
        struct gl_stat_device d;
        gl_stats_device(sl, &d);
        ck_assert_uint_eq(c.dev[sl].cur_bytes, d.cur_bytes);
        ck_assert_uint_eq(c.dev[sl].peak_bytes, d.peak_bytes);
        ck_assert_uint_eq(c.dev[sl].peak_stack, d.peak_stack);
        ck_assert_uint_eq(c.dev[sl].peak_seq, d.peak_seq);
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++) {
            struct gl_stat_group g;
            gl_stats_group(sl, k, &g);
            for (unsigned sp = 0; sp < GL_NSPLITS; sp++)
                assert_counts_eq(&c.grp[sl][k].split[sp], &g.split[sp]);
            ck_assert_uint_eq(c.grp[sl][k].failed, g.failed);
            ck_assert_uint_eq(c.grp[sl][k].failed_bytes, g.failed_bytes);
        }
    }
    ck_assert(c.used[0] && c.used[1] && c.used[GL_STATS_SLOT_HOST] && !c.used[2]);
    ck_assert_uint_eq(c.grp[0][GL_MEM_DEVICE].split[GL_SPLIT_ALL].cur_bytes, 4 * MiB);
    ck_assert_uint_eq(c.grp[0][GL_MEM_DEVICE].split[GL_SPLIT_ALL].freed_blocks, 1);
}
END_TEST

START_TEST(test_totals_are_the_trackers)
{
    struct gl_counters_totals t;
    gl_counters_read_totals(&t);
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(t.allocs, s.allocs);
    ck_assert_uint_eq(t.frees, s.frees);
    ck_assert_uint_eq(t.bytes_allocated, s.bytes_allocated);
    ck_assert_uint_eq(t.live_bytes, s.live_bytes);
    ck_assert_uint_eq(t.live_blocks, s.live_blocks);
    ck_assert_uint_eq(t.peak_bytes, s.peak_bytes);
    ck_assert_uint_eq(t.unknown_frees, s.unknown_frees);
    ck_assert_uint_eq(t.replaced, s.replaced);
    ck_assert_uint_eq(t.allocs, 6);
    ck_assert_uint_eq(t.frees, 1);
}
END_TEST

START_TEST(test_sites_by_peak)
{
    size_t n;
    struct gl_site_stats *s = gl_counters_sites_by_peak(&n);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(s[0].stack, s1);
    ck_assert_uint_eq(s[0].peak_bytes, 3 * MiB + 4096);
    ck_assert_uint_eq(s[0].live_bytes, 2 * MiB + 4096);
    ck_assert_uint_eq(s[1].stack, s2);
    ck_assert_uint_eq(s[1].peak_bytes, 2 * MiB);
    free(s);
}
END_TEST

START_TEST(test_holders_of_a_device)
{
    struct gl_counters_holders h;
    gl_counters_holders(0, &h);
    ck_assert(h.counted);
    ck_assert_uint_eq(h.live[GL_MEM_DEVICE].bytes, 4 * MiB);
    ck_assert_uint_eq(h.live[GL_MEM_DEVICE].blocks, 3);
    ck_assert_uint_eq(h.live[GL_MEM_HOST_PINNED].bytes, 0);
    /* Device 0's live blocks by stack: 2 MiB each, the lower id first. */
    ck_assert_uint_eq(h.nsites, 2);
    ck_assert(h.peaks);
    uint32_t lo = s1 < s2 ? s1 : s2;
    ck_assert_uint_eq(h.sites[0].stack, lo);
    ck_assert_uint_eq(h.sites[0].live_bytes, 2 * MiB);
    for (size_t i = 0; i < h.nsites; i++) {
        const struct gl_site_stats *x = &h.sites[i];
        ck_assert_uint_eq(x->live_blocks, x->stack == s1 ? 2 : 1);
        ck_assert_uint_eq(x->peak_bytes, x->stack == s1 ? 3 * MiB + 4096 : 2 * MiB);
    }
    gl_counters_holders_free(&h);
    ck_assert_ptr_null(h.sites);

    gl_counters_holders(-1, &h); /* host memory */
    ck_assert_uint_eq(h.live[GL_MEM_HOST_PINNED].bytes, 100);
    ck_assert_uint_eq(h.nsites, 1);
    ck_assert_uint_eq(h.sites[0].stack, 0);
    gl_counters_holders_free(&h);

    gl_stats_configure(false); /* no per-site counts: no peaks */
    gl_counters_holders(1, &h);
    ck_assert(!h.peaks);
    ck_assert_uint_eq(h.nsites, 1);
    ck_assert_uint_eq(h.sites[0].live_bytes, 4096);
    gl_counters_holders_free(&h);
}
END_TEST

static Suite *counters_suite(void)
{
    Suite *s = suite_create("counters");
    TCase *tc = tcase_create("counters");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_snapshot_is_the_stats);
    tcase_add_test(tc, test_totals_are_the_trackers);
    tcase_add_test(tc, test_sites_by_peak);
    tcase_add_test(tc, test_holders_of_a_device);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(counters_suite)
