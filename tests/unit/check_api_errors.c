/* SPDX-License-Identifier: MIT */
/* lib/track/errors.h and what it stands on: the range index (ranges.h),
 * the quarantine of freed blocks (quarantine.h), the errors the tracker finds
 * through the event seam (invalid, double and mismatched frees, copies and
 * sets out of range, allocations that failed), and the usage statistics
 * (mem_stats.h) the tracker moves. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_kind.h"
#include "testutil.h"
#include "event/api.h"
#include "track/errors.h"
#include "observe/contexts.h"
#include "event/event.h"
#include "track/stats.h"
#include "track/quarantine.h"
#include "base/ranges.h"
#include "stack/stack_depot.h"
#include "track/live_ranges.h"
#include "track/tracker.h"
#include "tracker_util.h"

#define KiB (1024ULL)
#define MiB (1024ULL * 1024)

/* ---- the error sink: every error it is given, copied ---- */

#define MAX_ERRS 64
static struct gl_api_error errs[MAX_ERRS];
static int nerrs;          /* sink calls with an error */
static int sink_overflows; /* sink calls with NULL ("more than 1000 different errors") */
static bool sink_suppresses;
static const int supp_token; /* what the sink returns for "suppressed" */

static const void *test_sink(const struct gl_api_error *e)
{
    if (!e) {
        sink_overflows++;
        return NULL;
    }
    if (nerrs < MAX_ERRS)
        errs[nerrs] = *e;
    nerrs++;
    return sink_suppresses ? &supp_token : NULL;
}

static void setup(void)
{
    gl_errors_sink = test_sink;
    gl_errors_capture_stack = NULL;
    gl_errors_device_memory = NULL;
    nerrs = 0;
    sink_overflows = 0;
    sink_suppresses = false;
    memset(errs, 0, sizeof errs);
    gl_contexts_set_query(NULL);
    gl_quarantine_configure(64, true);
    gl_live_ranges_configure(true);
    gl_stats_configure(false);
    tu_pipeline_reset();
}

static void teardown(void)
{
    gl_errors_sink = NULL;
    gl_errors_device_memory = NULL;
    gl_contexts_set_query(NULL);
    gl_quarantine_configure(0, false);
    gl_live_ranges_configure(false);
    tu_pipeline_reset();
}

/* ---- events built by hand ---- */

#define ALLOC_TID 100
#define FREE_TID 200

static struct gl_event alloc_ev(uint64_t key, uint64_t size, enum gl_mem_kind kind, unsigned api,
                                int device, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.kind = (uint8_t)kind;
    ev.api = (uint16_t)api;
    ev.device = (int16_t)device;
    ev.key = key;
    ev.size = size;
    ev.tid = ALLOC_TID;
    ev.stack = stack;
    ev.ctx = 0x100;
    return ev;
}

static void do_alloc(uint64_t key, uint64_t size, enum gl_mem_kind kind, unsigned api, int device,
                     uint32_t stack)
{
    struct gl_event ev = alloc_ev(key, size, kind, api, device, stack);
    gl_dispatch(&ev);
}

static void dev_alloc(uint64_t key, uint64_t size, uint32_t stack)
{
    do_alloc(key, size, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, stack);
}

static struct gl_event free_ev(uint64_t key, unsigned api, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_FREE;
    ev.api = (uint16_t)api;
    ev.device = 0;
    ev.key = key;
    ev.tid = FREE_TID;
    ev.stack = stack;
    ev.ctx = 0x100;
    return ev;
}

/* A free the driver accepted. */
static void free_ok(uint64_t key, unsigned api, uint32_t stack)
{
    struct gl_event ev = free_ev(key, api, stack);
    gl_dispatch(&ev);
}

/* A free the driver refused. */
static void free_refused(uint64_t key, unsigned api, uint32_t stack)
{
    struct gl_event ev = free_ev(key, api, stack);
    uint64_t t = tu_release_begin(&ev);
    tu_release_end(t, false, &ev);
}

/* A copy or set: dst/dlen written, src/slen read (0: none). */
static void do_access(uint64_t dst, uint64_t dlen, uint64_t src, uint64_t slen, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ACCESS;
    ev.api = GL_API_cuMemcpy;
    ev.device = 0;
    ev.key = dst;
    ev.size = dlen;
    ev.aux = src;
    ev.seq = slen;
    ev.tid = 300;
    ev.stack = stack;
    ev.ctx = 0x100;
    gl_dispatch(&ev);
}

static struct gl_api_error_counts counts(void)
{
    struct gl_api_error_counts c;
    memset(&c, 0xee, sizeof c);
    gl_errors_counts(&c);
    return c;
}

static bool is_live(uint64_t key)
{
    struct gl_block_info b;
    return gl_tracker_lookup(key, &b);
}

static void assert_split(const struct gl_stat_counts *s, uint64_t cur_blocks, uint64_t peak_blocks,
                         uint64_t alloc_blocks, uint64_t freed_blocks, uint64_t cur_bytes,
                         uint64_t peak_bytes, uint64_t alloc_bytes, uint64_t freed_bytes)
{
    ck_assert_uint_eq(s->cur_blocks, cur_blocks);
    ck_assert_uint_eq(s->peak_blocks, peak_blocks);
    ck_assert_uint_eq(s->alloc_blocks, alloc_blocks);
    ck_assert_uint_eq(s->freed_blocks, freed_blocks);
    ck_assert_uint_eq(s->cur_bytes, cur_bytes);
    ck_assert_uint_eq(s->peak_bytes, peak_bytes);
    ck_assert_uint_eq(s->alloc_bytes, alloc_bytes);
    ck_assert_uint_eq(s->freed_bytes, freed_bytes);
}

#define A 0x7f0000100000ULL
#define B 0x7f0000200000ULL
#define C 0x7f0000300000ULL

/* =================================================================
 * ranges.h
 * ================================================================= */

static void assert_range(struct gl_ranges *r, uint64_t addr, uint64_t start, uint64_t end,
                         uint64_t tag)
{
    struct gl_range got;
    memset(&got, 0xee, sizeof got);
    ck_assert_msg(gl_ranges_find(r, addr, &got), "no range holds 0x%llx", (unsigned long long)addr);
    ck_assert_uint_eq(got.start, start);
    ck_assert_uint_eq(got.end, end);
    ck_assert_uint_eq(got.tag, tag);
}

static void assert_no_range(struct gl_ranges *r, uint64_t addr)
{
    struct gl_range got;
    ck_assert_msg(!gl_ranges_find(r, addr, &got), "0x%llx found in [0x%llx, 0x%llx)",
                  (unsigned long long)addr, (unsigned long long)got.start,
                  (unsigned long long)got.end);
}

START_TEST(test_ranges_insert_find)
{
    struct gl_ranges *r = gl_ranges_create();
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(gl_ranges_count(r), 0);
    assert_no_range(r, 0x1000); /* empty */

    ck_assert(gl_ranges_insert(r, 0x3000, 0x3100, 2)); /* out of order on purpose */
    ck_assert(gl_ranges_insert(r, 0x1000, 0x2000, 1));
    ck_assert(gl_ranges_insert(r, 0x2000, 0x2800, 3)); /* adjacent to the first */
    ck_assert_uint_eq(gl_ranges_count(r), 3);

    assert_range(r, 0x1000, 0x1000, 0x2000, 1); /* start */
    assert_range(r, 0x1001, 0x1000, 0x2000, 1); /* interior */
    assert_range(r, 0x1fff, 0x1000, 0x2000, 1); /* last byte */
    assert_range(r, 0x2000, 0x2000, 0x2800, 3); /* end is exclusive: the next one */
    assert_range(r, 0x27ff, 0x2000, 0x2800, 3);
    assert_no_range(r, 0x2800); /* gap */
    assert_no_range(r, 0x2fff);
    assert_range(r, 0x3000, 0x3000, 0x3100, 2);
    assert_range(r, 0x30ff, 0x3000, 0x3100, 2);
    assert_no_range(r, 0x3100); /* past the last */
    assert_no_range(r, UINT64_MAX);
    assert_no_range(r, 0xfff); /* before the first */
    assert_no_range(r, 0);

    /* Empty or backwards ranges are refused. */
    ck_assert(!gl_ranges_insert(r, 0x5000, 0x5000, 9));
    ck_assert(!gl_ranges_insert(r, 0x5000, 0x4000, 9));
    ck_assert_uint_eq(gl_ranges_count(r), 3);
    assert_no_range(r, 0x5000);
    assert_no_range(r, 0x4000);

    /* A range at an existing start replaces it: false, the count is unchanged. */
    ck_assert(!gl_ranges_insert(r, 0x1000, 0x1800, 7));
    ck_assert_uint_eq(gl_ranges_count(r), 3);
    assert_range(r, 0x1000, 0x1000, 0x1800, 7);
    assert_range(r, 0x17ff, 0x1000, 0x1800, 7);
    assert_no_range(r, 0x1800);

    ck_assert_uint_gt(gl_ranges_memory_bytes(r), 0);
    gl_ranges_destroy(r);
    gl_ranges_destroy(NULL); /* harmless */
}
END_TEST

START_TEST(test_ranges_remove)
{
    struct gl_ranges *r = gl_ranges_create();
    ck_assert(gl_ranges_insert(r, 0x1000, 0x2000, 11));
    ck_assert(gl_ranges_insert(r, 0x4000, 0x5000, 22));
    ck_assert_uint_eq(gl_ranges_count(r), 2);

    /* Tag mismatch: kept. */
    ck_assert(!gl_ranges_remove(r, 0x1000, 12, false));
    ck_assert_uint_eq(gl_ranges_count(r), 2);
    assert_range(r, 0x1800, 0x1000, 0x2000, 11);
    /* Not a start (an interior address): nothing removed. */
    ck_assert(!gl_ranges_remove(r, 0x1800, 11, false));
    ck_assert(!gl_ranges_remove(r, 0x1800, 0, true));
    ck_assert_uint_eq(gl_ranges_count(r), 2);
    /* Tag match. */
    ck_assert(gl_ranges_remove(r, 0x1000, 11, false));
    ck_assert_uint_eq(gl_ranges_count(r), 1);
    assert_no_range(r, 0x1000);
    assert_no_range(r, 0x1800);
    ck_assert(!gl_ranges_remove(r, 0x1000, 11, false)); /* twice */
    /* Any tag. */
    ck_assert(gl_ranges_remove(r, 0x4000, 999, true));
    ck_assert_uint_eq(gl_ranges_count(r), 0);
    assert_no_range(r, 0x4000);
    ck_assert(!gl_ranges_remove(r, 0x4000, 22, true));

    /* The slots are reused. */
    ck_assert(gl_ranges_insert(r, 0x1000, 0x2000, 33));
    ck_assert_uint_eq(gl_ranges_count(r), 1);
    assert_range(r, 0x1fff, 0x1000, 0x2000, 33);
    gl_ranges_destroy(r);
}
END_TEST

START_TEST(test_ranges_insert_newest)
{
    struct gl_ranges *r = gl_ranges_create();
    /* Into an empty index. */
    ck_assert(gl_ranges_insert_newest(r, 0x1000, 0x2000, 1));
    ck_assert(gl_ranges_insert(r, 0x2000, 0x3000, 2));
    ck_assert(gl_ranges_insert(r, 0x3000, 0x4000, 3));
    ck_assert(gl_ranges_insert(r, 0x5000, 0x6000, 4));
    ck_assert(gl_ranges_insert(r, 0x500, 0x1000, 5)); /* ends where the first starts */
    ck_assert_uint_eq(gl_ranges_count(r), 5);

    /* [0x1800, 0x3001) overlaps 1 (holds its start), 2, and 3 (by one byte). */
    ck_assert(gl_ranges_insert_newest(r, 0x1800, 0x3001, 6));
    ck_assert_uint_eq(gl_ranges_count(r), 3);
    assert_range(r, 0x500, 0x500, 0x1000, 5); /* adjacent below: kept */
    assert_no_range(r, 0x1000);               /* the part of 1 below the new range is gone too */
    assert_no_range(r, 0x17ff);
    assert_range(r, 0x1800, 0x1800, 0x3001, 6);
    assert_range(r, 0x3000, 0x1800, 0x3001, 6);
    assert_no_range(r, 0x3001); /* the rest of 3 is gone */
    assert_no_range(r, 0x3fff);
    assert_range(r, 0x5000, 0x5000, 0x6000, 4);

    /* Adjacent on both sides: nothing dropped. */
    ck_assert(gl_ranges_insert_newest(r, 0x4000, 0x5000, 7));
    ck_assert_uint_eq(gl_ranges_count(r), 4);
    assert_range(r, 0x4fff, 0x4000, 0x5000, 7);
    assert_range(r, 0x5000, 0x5000, 0x6000, 4);

    /* Same start, shorter: the old one goes. */
    ck_assert(gl_ranges_insert_newest(r, 0x5000, 0x5800, 8));
    ck_assert_uint_eq(gl_ranges_count(r), 4);
    assert_range(r, 0x5000, 0x5000, 0x5800, 8);
    assert_no_range(r, 0x5800);

    /* One range covering everything. */
    ck_assert(gl_ranges_insert_newest(r, 0x100, 0x10000, 9));
    ck_assert_uint_eq(gl_ranges_count(r), 1);
    assert_range(r, 0x500, 0x100, 0x10000, 9);
    assert_range(r, 0x5800, 0x100, 0x10000, 9);

    ck_assert(!gl_ranges_insert_newest(r, 0x200, 0x200, 10)); /* empty */
    ck_assert_uint_eq(gl_ranges_count(r), 1);
    gl_ranges_destroy(r);
}
END_TEST

START_TEST(test_ranges_many)
{
    struct gl_ranges *r = gl_ranges_create();
    enum { N = 5000 };
    /* Inserted in a scrambled order: 7919 is prime, so i*7919 % N visits all. */
    for (uint64_t i = 0; i < N; i++) {
        uint64_t k = (i * 7919) % N;
        ck_assert(gl_ranges_insert(r, 0x100000 + k * 0x1000, 0x100000 + k * 0x1000 + 0x800, k));
    }
    ck_assert_uint_eq(gl_ranges_count(r), N);
    for (uint64_t k = 0; k < N; k++) {
        uint64_t s = 0x100000 + k * 0x1000;
        assert_range(r, s, s, s + 0x800, k);
        assert_range(r, s + 0x7ff, s, s + 0x800, k);
        assert_no_range(r, s + 0x800);
        assert_no_range(r, s + 0xfff);
    }
    for (uint64_t k = 0; k < N; k += 2)
        ck_assert(gl_ranges_remove(r, 0x100000 + k * 0x1000, k, false));
    ck_assert_uint_eq(gl_ranges_count(r), N / 2);
    for (uint64_t k = 0; k < N; k++) {
        uint64_t s = 0x100000 + k * 0x1000;
        if (k % 2)
            assert_range(r, s + 0x10, s, s + 0x800, k);
        else
            assert_no_range(r, s + 0x10);
    }
    gl_ranges_destroy(r);
}
END_TEST

/* =================================================================
 * quarantine.h
 * ================================================================= */

static struct gl_freed_block freed(uint64_t key, uint64_t size, uint64_t seq, uint32_t stack,
                                   uint32_t free_stack)
{
    struct gl_freed_block f;
    memset(&f, 0, sizeof f);
    f.block.key = key;
    f.block.size = size;
    f.block.seq = seq;
    f.block.stack = stack;
    f.block.tid = ALLOC_TID;
    f.block.device = 0;
    f.block.kind = GL_MEM_DEVICE;
    f.block.api = GL_API_cuMemAlloc_v2;
    f.free_stack = free_stack;
    f.free_tid = FREE_TID;
    f.free_api = GL_API_cuMemFree_v2;
    return f;
}

/* A freed block into the quarantine, through its handler, as the dispatcher
 * hands it a free. */
static void quarantine_put(const struct gl_freed_block *f)
{
    struct gl_event ev = {.type = GL_EV_FREE,
                          .key = f->block.key,
                          .api = f->free_api,
                          .stack = f->free_stack,
                          .tid = f->free_tid};
    gl_quarantine_component.consumer->on[GL_EV_FREE](&ev, &f->block);
}

static void put(uint64_t key, uint64_t size, uint64_t seq)
{
    struct gl_freed_block f = freed(key, size, seq, (uint32_t)seq + 1000, (uint32_t)seq + 2000);
    quarantine_put(&f);
}

/* The newest freed block at key has allocation number seq. */
static void assert_quarantined(uint64_t key, uint64_t seq)
{
    struct gl_freed_block f;
    memset(&f, 0xee, sizeof f);
    ck_assert_msg(gl_quarantine_find(key, &f), "0x%llx not in the quarantine",
                  (unsigned long long)key);
    ck_assert_uint_eq(f.block.key, key);
    ck_assert_uint_eq(f.block.seq, seq);
    ck_assert_uint_eq(f.block.stack, seq + 1000);
    ck_assert_uint_eq(f.free_stack, seq + 2000);
}

static void assert_not_quarantined(uint64_t key)
{
    struct gl_freed_block f;
    ck_assert_msg(!gl_quarantine_find(key, &f), "0x%llx in the quarantine (seq %llu)",
                  (unsigned long long)key, (unsigned long long)f.block.seq);
}

/* The freed block holding addr starts at key, with allocation number seq (0: none holds it). */
static void assert_holding(uint64_t addr, uint64_t key, uint64_t seq)
{
    struct gl_freed_block f;
    memset(&f, 0xee, sizeof f);
    bool found = gl_quarantine_holding(addr, &f);
    if (!seq) {
        ck_assert_msg(!found, "0x%llx held by freed block 0x%llx", (unsigned long long)addr,
                      (unsigned long long)f.block.key);
        return;
    }
    ck_assert_msg(found, "no freed block holds 0x%llx", (unsigned long long)addr);
    ck_assert_uint_eq(f.block.key, key);
    ck_assert_uint_eq(f.block.seq, seq);
}

START_TEST(test_quarantine_put_find)
{
    gl_quarantine_configure(4, true);
    ck_assert_uint_eq(gl_quarantine_capacity(), 4);
    assert_not_quarantined(A);
    struct gl_freed_block f = freed(A, 4096, 17, 7, 9), got;
    f.block.ctx = 0x100;
    f.block.aux = 0x5000;
    quarantine_put(&f);
    memset(&got, 0xee, sizeof got);
    ck_assert(gl_quarantine_find(A, &got));
    ck_assert_uint_eq(got.block.key, A);
    ck_assert_uint_eq(got.block.size, 4096);
    ck_assert_uint_eq(got.block.seq, 17);
    ck_assert_uint_eq(got.block.ctx, 0x100);
    ck_assert_uint_eq(got.block.aux, 0x5000);
    ck_assert_uint_eq(got.block.stack, 7);
    ck_assert_uint_eq(got.block.tid, ALLOC_TID);
    ck_assert_int_eq(got.block.device, 0);
    ck_assert_uint_eq(got.block.kind, GL_MEM_DEVICE);
    ck_assert_uint_eq(got.block.api, GL_API_cuMemAlloc_v2);
    ck_assert_uint_eq(got.free_stack, 9);
    ck_assert_uint_eq(got.free_tid, FREE_TID);
    ck_assert_uint_eq(got.free_api, GL_API_cuMemFree_v2);
    /* By key only: an interior address is not a key. */
    assert_not_quarantined(A + 1);
    assert_not_quarantined(B);
    ck_assert_uint_gt(gl_quarantine_memory_bytes(), 0);

    /* Configuring again drops what was kept. */
    gl_quarantine_configure(4, true);
    assert_not_quarantined(A);
    assert_holding(A, A, 0);
}
END_TEST

START_TEST(test_quarantine_ring_evicts_oldest)
{
    gl_quarantine_configure(3, true);
    put(A, 0x1000, 1);
    put(B, 0x1000, 2);
    put(C, 0x1000, 3);
    assert_quarantined(A, 1);
    assert_quarantined(B, 2);
    assert_quarantined(C, 3);
    assert_holding(A + 0x10, A, 1);

    put(C + 0x100000, 0x1000, 4); /* the fourth: A, the oldest, goes */
    assert_not_quarantined(A);
    assert_holding(A + 0x10, A, 0); /* and its range with it */
    assert_quarantined(B, 2);
    assert_quarantined(C, 3);
    assert_quarantined(C + 0x100000, 4);

    put(C + 0x200000, 0x1000, 5); /* then B */
    assert_not_quarantined(B);
    assert_holding(B, B, 0);
    assert_quarantined(C, 3);
    assert_holding(C + 0xfff, C, 3);

    /* Round and round: only the last three stay. */
    for (uint64_t i = 0; i < 100; i++)
        put(0x10000000 + i * 0x10000, 0x100, 100 + i);
    for (uint64_t i = 0; i < 97; i++)
        assert_not_quarantined(0x10000000 + i * 0x10000);
    for (uint64_t i = 97; i < 100; i++) {
        assert_quarantined(0x10000000 + i * 0x10000, 100 + i);
        assert_holding(0x10000000 + i * 0x10000 + 0xff, 0x10000000 + i * 0x10000, 100 + i);
    }
    assert_holding(0x10000000 + 96 * 0x10000 + 0x10, 0, 0);
    assert_not_quarantined(C);
    assert_holding(C + 0x10, 0, 0); /* indexed before the round, evicted during it */
}
END_TEST

START_TEST(test_quarantine_holding)
{
    gl_quarantine_configure(8, true);
    put(A, 0x1000, 1);
    put(A + 0x1000, 0x800, 2); /* adjacent */
    assert_holding(A, A, 1);
    assert_holding(A + 0x800, A, 1);
    assert_holding(A + 0xfff, A, 1);
    assert_holding(A + 0x1000, A + 0x1000, 2); /* end exclusive */
    assert_holding(A + 0x17ff, A + 0x1000, 2);
    assert_holding(A + 0x1800, 0, 0);
    assert_holding(A - 1, 0, 0);

    /* Handle-keyed blocks have no addresses. */
    put(gl_key_make(GL_NS_VMM_HANDLE, 0x42), 0x200000, 3);
    assert_quarantined(gl_key_make(GL_NS_VMM_HANDLE, 0x42), 3);
    assert_holding(gl_key_make(GL_NS_VMM_HANDLE, 0x42) + 0x10, 0, 0);
    assert_holding(0x42 + 0x10, 0, 0);

    /* Without the range index: lookups by key only. */
    gl_quarantine_configure(8, false);
    put(A, 0x1000, 4);
    assert_quarantined(A, 4);
    assert_holding(A, 0, 0);
    assert_holding(A + 0x10, 0, 0);
}
END_TEST

START_TEST(test_quarantine_newest_free_wins)
{
    gl_quarantine_configure(2, true);
    put(A, 0x1000, 1);
    put(A, 0x800, 2); /* the address came back and was freed again */
    assert_quarantined(A, 2);
    assert_holding(A + 0x10, A, 2);
    assert_holding(A + 0x900, 0, 0); /* the newer block is shorter */

    put(B, 0x1000, 3); /* evicts the older record of A: the newer one stays */
    assert_quarantined(A, 2);
    assert_holding(A + 0x7ff, A, 2);
    assert_quarantined(B, 3);

    put(C, 0x1000, 4); /* now the newer record of A goes */
    assert_not_quarantined(A);
    assert_holding(A + 0x10, 0, 0);
    assert_quarantined(B, 3);
    assert_quarantined(C, 4);

    /* Newest by the order of the frees, not by allocation number: threads
     * take numbers in blocks, so a later block may carry a smaller one. */
    gl_quarantine_configure(8, true);
    put(A, 0x1000, 50);
    put(A, 0x1000, 10);
    assert_quarantined(A, 10);
    assert_holding(A + 0x10, A, 10);

    /* A newer freed block overlapping an older one at another start hides it. */
    gl_quarantine_configure(8, true);
    put(A, 0x3000, 10);
    put(A + 0x1000, 0x800, 11);
    assert_holding(A + 0x1010, A + 0x1000, 11);
    assert_quarantined(A, 10); /* still found by key */
}
END_TEST

/* A free's steps one at a time (quarantine.h's test hooks): a writer stopped
 * after taking its position, or in its slot. */
static struct gl_event qt_event(const struct gl_freed_block *f)
{
    struct gl_event ev = {.type = GL_EV_FREE,
                          .key = f->block.key,
                          .api = f->free_api,
                          .stack = f->free_stack,
                          .tid = f->free_tid};
    return ev;
}

static void qt_finish(uint64_t pos, uint64_t key, uint64_t size, uint64_t seq)
{
    struct gl_freed_block f = freed(key, size, seq, (uint32_t)seq + 1000, (uint32_t)seq + 2000);
    struct gl_event ev = qt_event(&f);
    ck_assert(gl_quarantine_test_begin(pos));
    gl_quarantine_test_end(pos, &ev, &f.block);
}

/* The scan hook: at the lookup's first read, three positions taken and left
 * unwritten and a fourth written, a lap of the ring of 4. */
static void lap_once(uint64_t pos)
{
    (void)pos;
    gl_quarantine_test_scan_hook = NULL;
    for (int i = 0; i < 3; i++)
        (void)gl_quarantine_test_take();
    put(0x5000, 0x100, 76);
}

/* The same at the first read of each try (a new try starts past the last
 * one's reads), for as many tries. */
static int laps_left;
static uint64_t lap_last;

static void lap_each(uint64_t pos)
{
    if (laps_left <= 0 || pos <= lap_last)
        return;
    laps_left--;
    lap_last = pos;
    for (int i = 0; i < 3; i++)
        (void)gl_quarantine_test_take();
    put(0x5000, 0x100, 80 + (uint64_t)laps_left);
}

START_TEST(test_quarantine_writer_stopped)
{
    /* A position taken and not yet written: the records after it are found,
     * by key and by address, and the newest free of an address wins. */
    gl_quarantine_configure(8, true);
    put(A, 0x1000, 1);
    assert_holding(A + 0x10, A, 1); /* indexed */
    uint64_t stopped = gl_quarantine_test_take();
    put(B, 0x1000, 2);
    assert_quarantined(B, 2);
    assert_holding(B + 0x10, B, 2);
    put(A, 0x800, 3); /* A came back and was freed again */
    assert_holding(A + 0x10, A, 3);
    assert_holding(A + 0x900, 0, 0);
    qt_finish(stopped, C, 0x1000, 4);
    assert_quarantined(C, 4);
    assert_holding(C + 0x10, C, 4);
    assert_holding(A + 0x10, A, 3);
    assert_holding(B + 0x10, B, 2);

    /* A writer stopped in its slot for a whole lap: the next writer of that
     * slot gives up after a while, is counted, and nothing waits for it. */
    gl_quarantine_configure(3, true); /* a ring of 4 */
    for (uint64_t i = 0; i < 4; i++)
        put(0x20000000 + i * 0x10000, 0x100, 10 + i);
    uint64_t slow = gl_quarantine_test_take(); /* position 4: slot 0 */
    ck_assert(gl_quarantine_test_begin(slow));
    for (uint64_t i = 5; i < 8; i++)
        put(0x20000000 + i * 0x10000, 0x100, 10 + i);
    ck_assert_uint_eq(gl_quarantine_dropped(), 0);
    put(0x20000000 + 8 * 0x10000, 0x100, 18); /* position 8: slot 0, held */
    ck_assert_uint_eq(gl_quarantine_dropped(), 1);
    assert_not_quarantined(0x20000000 + 8 * 0x10000);
    struct gl_freed_block late = freed(0x20000000 + 4 * 0x10000, 0x100, 14, 1014, 2014);
    struct gl_event late_ev = qt_event(&late);
    gl_quarantine_test_end(slow, &late_ev, &late.block); /* out of the window by now */
    put(0x20000000 + 9 * 0x10000, 0x100, 19);
    put(0x20000000 + 10 * 0x10000, 0x100, 20);
    assert_holding(0x20000000 + 9 * 0x10000 + 8, 0x20000000 + 9 * 0x10000, 19);
    assert_holding(0x20000000 + 10 * 0x10000 + 8, 0x20000000 + 10 * 0x10000, 20);
    assert_not_quarantined(0x20000000 + 4 * 0x10000);
    assert_holding(0x20000000 + 4 * 0x10000 + 8, 0, 0);

    /* A writer a whole lap late finds a newer record in its slot and leaves
     * it there: its own record left the window meanwhile. */
    gl_quarantine_configure(3, true);            /* a ring of 4 */
    uint64_t lapped = gl_quarantine_test_take(); /* position 0: slot 0 */
    for (uint64_t i = 1; i <= 4; i++)            /* position 4: slot 0 again */
        put(0x30000000 + i * 0x10000, 0x100, 40 + i);
    ck_assert(!gl_quarantine_test_begin(lapped));
    assert_quarantined(0x30000000 + 4 * 0x10000, 44);
    assert_holding(0x30000000 + 4 * 0x10000 + 8, 0x30000000 + 4 * 0x10000, 44);

    /* Past a writer at work, a newer free hides every older one it overlaps,
     * in those records and against the index's answer alike. */
    gl_quarantine_configure(16, true);
    put(A, 0x1000, 50);
    assert_holding(A + 0x900, A, 50); /* indexed */
    uint64_t busy = gl_quarantine_test_take();
    put(B, 0x3000, 51);
    put(B, 0x800, 52); /* B came back shorter and was freed again */
    assert_holding(B + 0x10, B, 52);
    assert_holding(B + 0x900, 0, 0);
    assert_holding(B + 0x2f00, 0, 0);
    put(A + 0x800, 0x100, 53); /* reuses the top of A's old range */
    assert_holding(A + 0x10, 0, 0);
    assert_holding(A + 0x900, 0, 0);
    assert_holding(A + 0x810, A + 0x800, 53);
    ck_assert_uint_eq(gl_quarantine_test_indexed(), busy); /* stopped at the writer */
    qt_finish(busy, C, 0x1000, 54);
    assert_holding(C + 0x10, C, 54);
    ck_assert_uint_eq(gl_quarantine_test_indexed(), busy + 4); /* all taken in */
    assert_holding(B + 0x900, 0, 0);
    assert_holding(A + 0x810, A + 0x800, 53);

    /* A lookup overtaken by a lap of frees while it reads decides nothing
     * from what it read: the record that held the address, and the one it
     * stopped at, both left the window meanwhile. */
    gl_quarantine_configure(3, true);           /* a ring of 4 */
    uint64_t stuck = gl_quarantine_test_take(); /* position 0, left at work */
    ck_assert(gl_quarantine_test_begin(stuck));
    put(0x1000, 0x1000, 70); /* position 1: holds 0x1800 */
    put(0x1000, 0x400, 71);  /* position 2: hides it */
    gl_quarantine_test_scan_hook = lap_once;
    assert_holding(0x1800, 0, 0);
    gl_quarantine_test_scan_hook = NULL;
    assert_holding(0x5010, 0x5000, 76);
    ck_assert_uint_eq(gl_quarantine_overrun(), 0); /* the second try settled it */
    /* Overtaken on every try: "none", counted. */
    laps_left = 4;
    lap_last = 0;
    gl_quarantine_test_scan_hook = lap_each;
    assert_holding(0x5010, 0, 0);
    gl_quarantine_test_scan_hook = NULL;
    ck_assert_uint_eq(gl_quarantine_overrun(), 1);

    /* A position given up is passed: the index goes on past it. */
    gl_quarantine_configure(3, true);          /* a ring of 4 */
    uint64_t held = gl_quarantine_test_take(); /* position 0: slot 0 */
    ck_assert(gl_quarantine_test_begin(held));
    for (uint64_t i = 1; i < 4; i++)
        put(0x40000000 + i * 0x10000, 0x100, 60 + i);
    put(0x40000000 + 4 * 0x10000, 0x100, 64); /* slot 0: gives up */
    ck_assert_uint_eq(gl_quarantine_dropped(), 1);
    struct gl_freed_block old = freed(0x40000000, 0x100, 60, 1060, 2060);
    struct gl_event old_ev = qt_event(&old);
    gl_quarantine_test_end(held, &old_ev, &old.block);
    put(0x40000000 + 5 * 0x10000, 0x100, 65);
    assert_holding(0x40000000 + 5 * 0x10000 + 8, 0x40000000 + 5 * 0x10000, 65);
    ck_assert_uint_eq(gl_quarantine_test_indexed(), 6);
}
END_TEST

/* Threads freeing at once, with no lock between them, and readers meanwhile.
 * First one address for every record and a ring of 4, so that every slot is
 * rewritten while it is read: a record read back is always one record, never
 * fields of two.  Then rounds: after each, exactly the newest records are
 * found, by key and by address. */
#define QW_THREADS 4

static uint64_t qw_size(uint64_t seq) { return 0x1000 + (seq % 13) * 0x100; }

static void qw_put(uint64_t key, uint64_t seq)
{
    struct gl_freed_block f =
        freed(key, qw_size(seq), seq, (uint32_t)(seq * 3), (uint32_t)(seq * 5));
    f.block.ctx = seq * 11;
    f.block.aux = seq * 13;
    f.block.tid = (uint32_t)(seq * 7);
    f.free_tid = (uint32_t)(seq * 9);
    quarantine_put(&f);
}

static bool qw_whole(const struct gl_freed_block *f, uint64_t key)
{
    uint64_t s = f->block.seq;
    return f->block.key == key && f->block.size == qw_size(s) && f->block.ctx == s * 11 &&
           f->block.aux == s * 13 && f->block.stack == (uint32_t)(s * 3) &&
           f->block.tid == (uint32_t)(s * 7) && f->free_stack == (uint32_t)(s * 5) &&
           f->free_tid == (uint32_t)(s * 9);
}

#define QA_KEY 0x700000000ull
static _Atomic int qa_done;
static _Atomic long qa_reads, qa_torn;
static uint64_t qa_puts; /* each writer's */

static void *qa_writer(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < qa_puts; i++)
        qw_put(QA_KEY, t * 100000000ull + i + 1);
    return NULL;
}

static void *qa_reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&qa_done)) {
        struct gl_freed_block f;
        if (gl_quarantine_find(QA_KEY, &f)) {
            atomic_fetch_add(&qa_reads, 1);
            if (!qw_whole(&f, QA_KEY))
                atomic_fetch_add(&qa_torn, 1);
        }
        if (gl_quarantine_holding(QA_KEY + 0x10, &f)) {
            atomic_fetch_add(&qa_reads, 1);
            if (!qw_whole(&f, QA_KEY))
                atomic_fetch_add(&qa_torn, 1);
        }
    }
    return NULL;
}

/* A wider window under the same address: every record in it holds the
 * address, and at most one per writer is unfinished, so a lookup always
 * finds one. */
static _Atomic long qa_missed;

static void *qa_finder(void *arg)
{
    (void)arg;
    while (!atomic_load(&qa_done)) {
        struct gl_freed_block f;
        if (gl_quarantine_holding(QA_KEY + 0x10, &f)) {
            atomic_fetch_add(&qa_reads, 1);
            if (!qw_whole(&f, QA_KEY))
                atomic_fetch_add(&qa_torn, 1);
        } else {
            atomic_fetch_add(&qa_missed, 1);
        }
    }
    return NULL;
}

#define QB_CAP 5
#define QB_ROUNDS 1000
#define QB_PER 3
static pthread_barrier_t qb_barrier;
static _Atomic int qb_done;

static uint64_t qb_key(uint64_t seq) { return 0x100000000ull + seq * 0x2000; }

static void *qb_writer(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    for (uint64_t r = 0; r < QB_ROUNDS; r++) {
        for (uint64_t i = 0; i < QB_PER; i++) {
            uint64_t seq = t * 1000000 + r * QB_PER + i + 1;
            qw_put(qb_key(seq), seq);
        }
        pthread_barrier_wait(&qb_barrier);
        pthread_barrier_wait(&qb_barrier);
    }
    return NULL;
}

static void *qb_reader(void *arg)
{
    (void)arg;
    struct gl_freed_block f;
    while (!atomic_load(&qb_done)) {
        gl_quarantine_holding(0x50, &f); /* brings the index up to date mid-write */
        sched_yield();
    }
    return NULL;
}

/* The writers on QA_KEY against two readers, until the writers are done. */
static void qa_run(void *(*reader)(void *))
{
    pthread_t w[QW_THREADS], r[2];
    atomic_store(&qa_done, 0);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    for (uintptr_t t = 0; t < QW_THREADS; t++)
        pthread_create(&w[t], NULL, qa_writer, (void *)t);
    for (int t = 0; t < QW_THREADS; t++)
        pthread_join(w[t], NULL);
    atomic_store(&qa_done, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
}

START_TEST(test_quarantine_concurrent_writers)
{
    pthread_t w[QW_THREADS], r[2];
    gl_quarantine_configure(3, true);
    qa_puts = 200000; /* torn reads are rare events: many chances */
    atomic_store(&qa_reads, 0);
    atomic_store(&qa_torn, 0);
    qa_run(qa_reader);
    ck_assert_int_eq(atomic_load(&qa_torn), 0);
    ck_assert_int_gt(atomic_load(&qa_reads), 0);

    gl_quarantine_configure(64, true);
    qa_puts = 50000;
    for (uint64_t i = 0; i < 64; i++) /* the window full before the finders look */
        qw_put(QA_KEY, 900000000ull + i + 1);
    atomic_store(&qa_missed, 0);
    qa_run(qa_finder);
    ck_assert_int_eq(atomic_load(&qa_torn), 0);
    /* None missed, but for lookups the frees outran on every try (a reader
     * held up for a lap each time: a loaded machine), which are counted. */
    ck_assert_uint_le((unsigned long)atomic_load(&qa_missed), gl_quarantine_overrun());

    gl_quarantine_configure(QB_CAP, true);
    atomic_store(&qb_done, 0);
    pthread_barrier_init(&qb_barrier, NULL, QW_THREADS + 1);
    pthread_create(&r[0], NULL, qb_reader, NULL);
    for (uintptr_t t = 0; t < QW_THREADS; t++)
        pthread_create(&w[t], NULL, qb_writer, (void *)t);
    long wrong_count = 0, not_held = 0, torn = 0;
    unsigned long dropped_before = 0;
    for (uint64_t round = 0; round < QB_ROUNDS; round++) {
        pthread_barrier_wait(&qb_barrier);
        unsigned long dropped = gl_quarantine_dropped() - dropped_before;
        unsigned found = 0;
        for (uint64_t t = 0; t < QW_THREADS; t++)
            for (uint64_t i = round * QB_PER; i < (round + 1) * QB_PER; i++) {
                uint64_t seq = t * 1000000 + i + 1;
                struct gl_freed_block f, h;
                if (!gl_quarantine_find(qb_key(seq), &f))
                    continue;
                found++;
                torn += !qw_whole(&f, qb_key(seq)) || f.block.seq != seq;
                not_held += !gl_quarantine_holding(qb_key(seq) + 0x10, &h) || h.block.seq != seq;
            }
        /* The round's records are the newest QW_THREADS * QB_PER >= QB_CAP: the
         * window is all theirs, less any a stopped writer made another drop. */
        wrong_count += found > QB_CAP || found + dropped < QB_CAP;
        dropped_before += dropped;
        pthread_barrier_wait(&qb_barrier);
    }
    for (int t = 0; t < QW_THREADS; t++)
        pthread_join(w[t], NULL);
    atomic_store(&qb_done, 1);
    pthread_join(r[0], NULL);
    pthread_barrier_destroy(&qb_barrier);
    ck_assert_int_eq(torn, 0);
    ck_assert_int_eq(not_held, 0);
    ck_assert_int_eq(wrong_count, 0);
}
END_TEST

START_TEST(test_quarantine_capacity_zero_is_off)
{
    gl_quarantine_configure(0, true);
    ck_assert_uint_eq(gl_quarantine_capacity(), 0);
    put(A, 0x1000, 1);
    assert_not_quarantined(A);
    assert_holding(A + 0x10, 0, 0);

    /* Through the tracker: nothing kept, so a second free is only "never allocated". */
    dev_alloc(A, 0x1000, 7);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    assert_not_quarantined(A);
    free_refused(A, GL_API_cuMemFree_v2, 10);
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(errs[0].detail, GL_ERD_NEVER_ALLOCATED);
    ck_assert_uint_eq(errs[0].flags, 0);
}
END_TEST

/* =================================================================
 * Release errors, through the tracker
 * ================================================================= */

START_TEST(test_double_free)
{
    dev_alloc(A, 4096, 7);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    ck_assert_int_eq(nerrs, 0);
    ck_assert(!is_live(A));

    free_refused(A, GL_API_cuMemFree_v2, 11);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(e->detail, GL_ERD_NONE);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK | GL_ERRF_FREED);
    ck_assert_uint_eq(e->api, GL_API_cuMemFree_v2);
    ck_assert_uint_eq(e->stack, 11);
    ck_assert_uint_eq(e->tid, FREE_TID);
    ck_assert_int_eq(e->device, 0);
    ck_assert_uint_eq(e->addr, A);
    ck_assert_uint_eq(e->block.block.key, A);
    ck_assert_uint_eq(e->block.block.size, 4096);
    ck_assert_uint_eq(e->block.block.stack, 7);
    ck_assert_uint_eq(e->block.block.tid, ALLOC_TID);
    ck_assert_uint_eq(e->block.block.kind, GL_MEM_DEVICE);
    ck_assert_uint_eq(e->block.block.api, GL_API_cuMemAlloc_v2);
    ck_assert_uint_eq(e->block.block.seq, 1);
    ck_assert_uint_eq(e->block.free_stack, 9);
    ck_assert_uint_eq(e->block.free_tid, FREE_TID);
    ck_assert_uint_eq(e->block.free_api, GL_API_cuMemFree_v2);

    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 1);
    ck_assert_uint_eq(c.contexts, 1);
    ck_assert_uint_eq(c.suppressed, 0);
    ck_assert_uint_eq(c.suppressed_contexts, 0);
    ck_assert_uint_eq(c.by_kind[GL_ERR_DOUBLE_FREE], 1);
    ck_assert_uint_eq(c.by_kind[GL_ERR_INVALID_FREE], 0);

    struct gl_error_context ctx[4];
    ck_assert_uint_eq(gl_errors_contexts(ctx, 4), 1);
    ck_assert_uint_eq(ctx[0].count, 1);
    ck_assert_ptr_null(ctx[0].suppressed_by);
    ck_assert_uint_eq(ctx[0].first.kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(ctx[0].first.block.free_stack, 9);
}
END_TEST

START_TEST(test_double_free_names_newest_block)
{
    /* The address is handed out again and freed again: the second block is named. */
    dev_alloc(A, 4096, 7);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    dev_alloc(A, 512, 8);
    free_ok(A, GL_API_cuMemFree_v2, 10);
    free_refused(A, GL_API_cuMemFree_v2, 11);
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(errs[0].block.block.size, 512);
    ck_assert_uint_eq(errs[0].block.block.stack, 8);
    ck_assert_uint_eq(errs[0].block.block.seq, 2);
    ck_assert_uint_eq(errs[0].block.free_stack, 10);
}
END_TEST

START_TEST(test_accepted_unknown_free_is_no_error)
{
    /* The driver accepted it: memory gpuleak did not see allocated, not an error. */
    free_ok(A, GL_API_cuMemFree_v2, 9);
    dev_alloc(B, 4096, 7);
    free_ok(B, GL_API_cuMemFree_v2, 9);
    free_ok(B, GL_API_cuMemFree_v2, 10); /* accepted twice: the driver knows better */
    ck_assert_int_eq(nerrs, 0);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 0);
    ck_assert_uint_eq(c.contexts, 0);
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.unknown_frees, 2);
    ck_assert_uint_eq(s.frees, 1);
}
END_TEST

static void check_interior_free(void)
{
    dev_alloc(A, 4096, 7);
    dev_alloc(B, 8192, 8);
    free_refused(A + 256, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(e->detail, GL_ERD_INTERIOR);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK);
    ck_assert_uint_eq(e->addr, A + 256);
    ck_assert_uint_eq(e->stack, 12);
    ck_assert_uint_eq(e->api, GL_API_cuMemFree_v2);
    ck_assert_uint_eq(e->block.block.key, A);
    ck_assert_uint_eq(e->block.block.size, 4096);
    ck_assert_uint_eq(e->block.block.stack, 7);
    ck_assert_uint_eq(e->block.free_stack, 0);
    ck_assert(is_live(A)); /* untouched */

    /* The last byte of B. */
    free_refused(B + 8191, GL_API_cuMemFree_v2, 13);
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[1].detail, GL_ERD_INTERIOR);
    ck_assert_uint_eq(errs[1].block.block.key, B);
    ck_assert_uint_eq(errs[1].block.block.size, 8192);
    /* One past its end: never allocated. */
    free_refused(B + 8192, GL_API_cuMemFree_v2, 14);
    ck_assert_int_eq(nerrs, 3);
    ck_assert_uint_eq(errs[2].kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(errs[2].detail, GL_ERD_NEVER_ALLOCATED);
    ck_assert_uint_eq(errs[2].flags, 0);
}

START_TEST(test_interior_free)
{
    ck_assert(gl_live_ranges_on());
    check_interior_free();
}
END_TEST

START_TEST(test_interior_free_without_range_index)
{
    gl_live_ranges_configure(false); /* the tracker walks its table */
    tu_pipeline_reset();
    ck_assert(!gl_live_ranges_on());
    check_interior_free();
}
END_TEST

START_TEST(test_never_allocated)
{
    free_refused(A, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(e->detail, GL_ERD_NEVER_ALLOCATED);
    ck_assert_uint_eq(e->flags & GL_ERRF_BLOCK, 0);
    ck_assert_uint_eq(e->flags, 0);
    ck_assert_uint_eq(e->addr, A);
    ck_assert_uint_eq(e->stack, 12);
    ck_assert_uint_eq(e->tid, FREE_TID);
    ck_assert_uint_eq(e->api, GL_API_cuMemFree_v2);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 1);
    ck_assert_uint_eq(c.by_kind[GL_ERR_INVALID_FREE], 1);
}
END_TEST

START_TEST(test_freed_interior)
{
    dev_alloc(A, 4096, 7);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    free_refused(A + 100, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(e->detail, GL_ERD_FREED_INTERIOR);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK | GL_ERRF_FREED);
    ck_assert_uint_eq(e->addr, A + 100);
    ck_assert_uint_eq(e->block.block.key, A);
    ck_assert_uint_eq(e->block.block.size, 4096);
    ck_assert_uint_eq(e->block.block.stack, 7);
    ck_assert_uint_eq(e->block.free_stack, 9);

    /* A live block at the freed address takes precedence. */
    dev_alloc(A, 4096, 8);
    free_refused(A + 100, GL_API_cuMemFree_v2, 13);
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[1].detail, GL_ERD_INTERIOR);
    ck_assert_uint_eq(errs[1].flags, GL_ERRF_BLOCK);
    ck_assert_uint_eq(errs[1].block.block.stack, 8);
}
END_TEST

START_TEST(test_free_in_vmm_mapping)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x77);
    do_alloc(h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, 0, 7);
    struct gl_event m;
    memset(&m, 0, sizeof m);
    m.type = GL_EV_VMM_MAP;
    m.api = GL_API_cuMemMap;
    m.key = C;
    m.size = 2 * MiB;
    m.aux = h;
    gl_dispatch(&m);
    free_refused(C, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(errs[0].detail, GL_ERD_VMM_MAPPED);
    ck_assert_uint_eq(errs[0].flags, GL_ERRF_BLOCK);
    ck_assert_uint_eq(errs[0].block.block.key, C); /* the mapping's address */
    ck_assert_uint_eq(errs[0].block.block.kind, GL_MEM_VMM);
    ck_assert_uint_eq(errs[0].block.block.stack, 7);
}
END_TEST

START_TEST(test_freed_interior_needs_quarantine_ranges)
{
    /* Without the quarantine's range index only exact keys are known: an
     * interior address of a freed block reads as never allocated. */
    gl_quarantine_configure(64, false);
    dev_alloc(A, 4096, 7);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    free_refused(A + 100, GL_API_cuMemFree_v2, 12);
    free_refused(A, GL_API_cuMemFree_v2, 13); /* the exact key is still a double free */
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[0].kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(errs[0].detail, GL_ERD_NEVER_ALLOCATED);
    ck_assert_uint_eq(errs[1].kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(errs[1].block.free_stack, 9);
}
END_TEST

START_TEST(test_double_release_vmm_handle)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x77);
    do_alloc(h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, 0, 7);
    struct gl_event ev = free_ev(h, GL_API_cuMemRelease, 9);
    ev.type = GL_EV_VMM_RELEASE;
    gl_dispatch(&ev); /* never mapped: gone at once */
    ck_assert(!is_live(h));
    ck_assert_int_eq(nerrs, 0);

    ev = free_ev(h, GL_API_cuMemRelease, 12);
    ev.type = GL_EV_VMM_RELEASE;
    uint64_t t = tu_release_begin(&ev); /* the table holds it no more */
    tu_release_end(t, false, &ev);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK | GL_ERRF_FREED);
    ck_assert_uint_eq(e->addr, 0x77); /* the handle's value, without its namespace */
    ck_assert_uint_eq(e->api, GL_API_cuMemRelease);
    ck_assert_uint_eq(e->block.block.key, h);
    ck_assert_uint_eq(e->block.block.kind, GL_MEM_VMM);
    ck_assert_uint_eq(e->block.block.size, 2 * MiB);
    ck_assert_uint_eq(e->block.block.stack, 7);
    ck_assert_uint_eq(e->block.free_stack, 9);
    ck_assert_uint_eq(e->block.free_api, GL_API_cuMemRelease);

    /* A handle never seen: never allocated (no address to look inside). */
    ev = free_ev(gl_key_make(GL_NS_VMM_HANDLE, 0x88), GL_API_cuMemRelease, 13);
    ev.type = GL_EV_VMM_RELEASE;
    tu_release_end(tu_release_begin(&ev), false, &ev);
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[1].kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(errs[1].detail, GL_ERD_NEVER_ALLOCATED);
    ck_assert_uint_eq(errs[1].flags, 0);
}
END_TEST

static void vmm_event(enum gl_event_type type, unsigned api, uint64_t key, uint64_t handle,
                      uint32_t stack)
{
    struct gl_event m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.api = api;
    m.key = key;
    m.size = 2 * MiB;
    m.aux = handle;
    m.stack = stack;
    gl_dispatch(&m);
}

/* A handle released while mapped lives on through its mapping; releasing it
 * again is a double free, whether or not the driver refuses. */
START_TEST(test_double_release_mapped_handle)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x77);
    do_alloc(h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, 0, 7);
    vmm_event(GL_EV_VMM_MAP, GL_API_cuMemMap, C, h, 8);
    struct gl_event ev = free_ev(h, GL_API_cuMemRelease, 9);
    ev.type = GL_EV_VMM_RELEASE;
    gl_dispatch(&ev); /* legal: the mapping keeps it */
    ck_assert(is_live(h));
    ck_assert_int_eq(nerrs, 0);

    for (int ok = 0; ok < 2; ok++) {
        ev = free_ev(h, GL_API_cuMemRelease, 12);
        ev.type = GL_EV_VMM_RELEASE;
        tu_release_end(tu_release_begin(&ev), ok, &ev);
        ck_assert(is_live(h)); /* still mapped */
    }
    ck_assert_int_eq(nerrs, 1); /* one context, counted twice */
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(e->detail, GL_ERD_HANDLE_RELEASED);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK);
    ck_assert_uint_eq(e->addr, 0x77);
    ck_assert_uint_eq(e->block.block.key, h);
    ck_assert_uint_eq(e->block.block.stack, 7);
    ck_assert_uint_eq(e->block.block.aux, 1); /* one mapping */
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 2);

    /* The unmap frees it: a release now finds it in the quarantine, freed by
     * the unmap. */
    vmm_event(GL_EV_VMM_UNMAP, GL_API_cuMemUnmap, C, 0, 13);
    ck_assert(!is_live(h));
    ev = free_ev(h, GL_API_cuMemRelease, 14);
    ev.type = GL_EV_VMM_RELEASE;
    tu_release_end(tu_release_begin(&ev), false, &ev);
    ck_assert_int_eq(nerrs, 2);
    e = &errs[1];
    ck_assert_uint_eq(e->kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(e->detail, GL_ERD_NONE);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK | GL_ERRF_FREED);
    ck_assert_uint_eq(e->block.free_stack, 13);
    ck_assert_uint_eq(e->block.free_api, GL_API_cuMemUnmap);
    ck_assert_uint_eq(e->block.block.stack, 7);
}
END_TEST

/* Retained references count: releasing each of them is no error. */
START_TEST(test_release_retained_handle)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x78);
    do_alloc(h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, 0, 7);
    vmm_event(GL_EV_VMM_MAP, GL_API_cuMemMap, C, h, 8);
    struct gl_event r = free_ev(h, GL_API_cuMemRetainAllocationHandle, 9);
    r.type = GL_EV_VMM_RETAIN;
    gl_dispatch(&r);
    for (int i = 0; i < 2; i++) {
        struct gl_event ev = free_ev(h, GL_API_cuMemRelease, 10);
        ev.type = GL_EV_VMM_RELEASE;
        gl_dispatch(&ev);
    }
    ck_assert_int_eq(nerrs, 0);
    vmm_event(GL_EV_VMM_UNMAP, GL_API_cuMemUnmap, C, 0, 13);
    ck_assert(!is_live(h));
    ck_assert_int_eq(nerrs, 0);
}
END_TEST

/* A reset forgets what the blocks fed: freed blocks and the live index. */
START_TEST(test_reset_forgets_freed_and_live)
{
    dev_alloc(A, 4096, 7);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    dev_alloc(B, 4096, 8);
    tu_pipeline_reset();
    ck_assert_uint_eq(gl_quarantine_capacity(), 64); /* configuration kept */
    ck_assert(gl_live_ranges_on());
    uint64_t start, seq;
    ck_assert(!gl_live_ranges_find(B, &start, &seq));
    free_refused(A, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].kind, GL_ERR_INVALID_FREE); /* not a double free */
    ck_assert_uint_eq(errs[0].detail, GL_ERD_NEVER_ALLOCATED);
    dev_alloc(C, 4096, 10); /* the index works on */
    ck_assert(gl_live_ranges_find(C + 10, &start, &seq));
    ck_assert_uint_eq(start, C);
}
END_TEST

START_TEST(test_double_free_pool_sub)
{
    dev_alloc(A, 4 * MiB, 7);
    struct gl_event pc;
    memset(&pc, 0, sizeof pc);
    pc.type = GL_EV_POOL_CREATE;
    pc.key = A;
    gl_dispatch(&pc);
    uint64_t sub = gl_key_make(GL_NS_POOL_SUB, A + 4096);
    struct gl_event ev = alloc_ev(sub, 4096, GL_MEM_POOL_SUB, GL_API_CLIENT_POOL_ALLOC, 0, 8);
    ev.aux = A;
    gl_dispatch(&ev);
    free_ok(sub, GL_API_CLIENT_POOL_FREE, 9);
    free_refused(sub, GL_API_CLIENT_POOL_FREE, 12);
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(errs[0].addr, A + 4096);
    ck_assert_uint_eq(errs[0].block.block.key, sub);
    ck_assert_uint_eq(errs[0].block.block.stack, 8);
    /* The interior of a sub-allocation key is not looked up by address: the pool's
     * block holds A + 4196, but the key is in the sub-allocations' namespace. */
    free_refused(gl_key_make(GL_NS_POOL_SUB, A + 4196), GL_API_CLIENT_POOL_FREE, 13);
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[1].kind, GL_ERR_INVALID_FREE);
    ck_assert_uint_eq(errs[1].detail, GL_ERD_NEVER_ALLOCATED);
    ck_assert(is_live(A));
}
END_TEST

START_TEST(test_ctx_destroy_leaves_index)
{
    dev_alloc(A, 4096, 7); /* context 0x100 */
    uint64_t start = 0, seq = 0;
    ck_assert(gl_live_ranges_find(A + 10, &start, &seq));
    ck_assert_uint_eq(start, A);
    ck_assert_uint_eq(seq, 1);
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_CTX_DESTROY;
    ev.ctx = 0x100;
    gl_dispatch(&ev);
    ck_assert(!is_live(A));
    ck_assert(!gl_live_ranges_find(A + 10, &start, &seq));
    /* Gone with its context, not freed: nothing to say about it afterwards. */
    do_access(A, 8192, 0, 0, 20);
    ck_assert_int_eq(nerrs, 0);
    free_refused(A, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].detail, GL_ERD_NEVER_ALLOCATED);
    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 1, 1, 1, 0, 4096, 4096, 4096);
}
END_TEST

START_TEST(test_live_index_follows_vmm_unmap)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x99);
    do_alloc(h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, 0, 7);
    struct gl_event m;
    memset(&m, 0, sizeof m);
    m.type = GL_EV_VMM_MAP;
    m.key = C;
    m.size = 2 * MiB;
    m.aux = h;
    gl_dispatch(&m);
    uint64_t start = 0, seq = 0;
    ck_assert(gl_live_ranges_find(C + MiB, &start, &seq));
    ck_assert_uint_eq(start, C);
    ck_assert(!gl_live_ranges_find(h, &start, &seq)); /* handles are not addresses */
    m.type = GL_EV_VMM_UNMAP;
    gl_dispatch(&m);
    ck_assert(!gl_live_ranges_find(C + MiB, &start, &seq));
    do_access(C, 4 * MiB, 0, 0, 20);
    ck_assert_int_eq(nerrs, 0);
}
END_TEST

/* =================================================================
 * Mismatched releases
 * ================================================================= */

static void assert_mismatch(int i, unsigned api, uint64_t key, enum gl_mem_kind kind,
                            enum gl_error_detail detail)
{
    ck_assert_int_gt(nerrs, i);
    const struct gl_api_error *e = &errs[i];
    ck_assert_uint_eq(e->kind, GL_ERR_MISMATCHED_FREE);
    ck_assert_uint_eq(e->detail, detail);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK);
    ck_assert_uint_eq(e->api, api);
    ck_assert_uint_eq(e->addr, key);
    ck_assert_uint_eq(e->block.block.key, key);
    ck_assert_uint_eq(e->block.block.kind, kind);
}

START_TEST(test_mismatched_free_host_of_device)
{
    dev_alloc(A, 4096, 7);
    /* Refused: reported, and the block stays live. */
    free_refused(A, GL_API_cuMemFreeHost, 12);
    ck_assert_int_eq(nerrs, 1);
    assert_mismatch(0, GL_API_cuMemFreeHost, A, GL_MEM_DEVICE, GL_ERD_WRONG_CALL);
    ck_assert_uint_eq(errs[0].stack, 12);
    ck_assert_uint_eq(errs[0].block.block.size, 4096);
    ck_assert_uint_eq(errs[0].block.block.stack, 7);
    ck_assert(is_live(A));
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(s.live_bytes, 4096);

    /* Accepted: reported, and the block is gone. */
    free_ok(A, GL_API_cuMemFreeHost, 13);
    ck_assert_int_eq(nerrs, 2);
    assert_mismatch(1, GL_API_cuMemFreeHost, A, GL_MEM_DEVICE, GL_ERD_WRONG_CALL);
    ck_assert(!is_live(A));
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 2);
    ck_assert_uint_eq(c.contexts, 2);
    ck_assert_uint_eq(c.by_kind[GL_ERR_MISMATCHED_FREE], 2);
}
END_TEST

START_TEST(test_mismatched_calls)
{
    do_alloc(A, 4096, GL_MEM_HOST_PINNED, GL_API_cuMemAllocHost_v2, -1, 7);
    do_alloc(B, 4096, GL_MEM_HOST_PINNED, GL_API_cuMemAllocHost_v2, -1, 7);
    do_alloc(C, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 7);
    free_refused(A, GL_API_cuMemFree_v2, 21); /* cudaFree of pinned memory */
    ck_assert_int_eq(nerrs, 1);
    assert_mismatch(0, GL_API_cuMemFree_v2, A, GL_MEM_HOST_PINNED, GL_ERD_WRONG_CALL);
    ck_assert(is_live(A));
    free_refused(B, GL_API_cuMemHostUnregister, 22); /* pinned is not registered */
    ck_assert_int_eq(nerrs, 2);
    assert_mismatch(1, GL_API_cuMemHostUnregister, B, GL_MEM_HOST_PINNED, GL_ERD_WRONG_CALL);
    ck_assert(is_live(B));
    free_refused(C, GL_API_cuIpcCloseMemHandle, 23);
    ck_assert_int_eq(nerrs, 3);
    assert_mismatch(2, GL_API_cuIpcCloseMemHandle, C, GL_MEM_DEVICE, GL_ERD_WRONG_CALL);
    ck_assert(is_live(C));
    free_refused(C, GL_API_cuMemHostUnregister, 24);
    ck_assert_int_eq(nerrs, 4);
    assert_mismatch(3, GL_API_cuMemHostUnregister, C, GL_MEM_DEVICE, GL_ERD_WRONG_CALL);

    /* Registered host memory: only cuMemHostUnregister. */
    uint64_t r = 0x7f0000400000ULL;
    do_alloc(r, 4096, GL_MEM_HOST_REGISTERED, GL_API_cuMemHostRegister_v2, -1, 7);
    free_refused(r, GL_API_cuMemFreeHost, 25);
    ck_assert_int_eq(nerrs, 5);
    assert_mismatch(4, GL_API_cuMemFreeHost, r, GL_MEM_HOST_REGISTERED, GL_ERD_WRONG_CALL);
    free_refused(r, GL_API_cuMemFree_v2, 26);
    ck_assert_int_eq(nerrs, 6);
    assert_mismatch(5, GL_API_cuMemFree_v2, r, GL_MEM_HOST_REGISTERED, GL_ERD_WRONG_CALL);

    /* Memory opened with cuIpcOpenMemHandle: only cuIpcCloseMemHandle. */
    uint64_t ipc = 0x7f0000500000ULL;
    do_alloc(ipc, 4096, GL_MEM_IPC, GL_API_cuIpcOpenMemHandle_v2, 0, 7);
    free_refused(ipc, GL_API_cuMemFree_v2, 27);
    ck_assert_int_eq(nerrs, 7);
    assert_mismatch(6, GL_API_cuMemFree_v2, ipc, GL_MEM_IPC, GL_ERD_WRONG_CALL);
    ck_assert(is_live(ipc));

    /* The right calls. */
    free_ok(A, GL_API_cuMemFreeHost, 31);
    free_ok(B, GL_API_cuMemFreeHost, 31);
    free_ok(C, GL_API_cuMemFree_v2, 31);
    free_ok(r, GL_API_cuMemHostUnregister, 31);
    free_ok(ipc, GL_API_cuIpcCloseMemHandle, 31);
    ck_assert_int_eq(nerrs, 7);
    ck_assert(!is_live(A));
    ck_assert(!is_live(ipc));
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 7);
    ck_assert_uint_eq(c.by_kind[GL_ERR_MISMATCHED_FREE], 7);
}
END_TEST

START_TEST(test_right_calls_no_error)
{
    uint64_t k = 0x7f0000600000ULL;
    /* cudaFree (cuMemFree_v2) of stream-ordered memory is fine. */
    do_alloc(k, 4096, GL_MEM_ASYNC, GL_API_cuMemAllocAsync, 0, 7);
    free_ok(k, GL_API_cuMemFree_v2, 31);
    /* cuMemFreeAsync of cuMemAlloc'd memory too. */
    do_alloc(k + 0x10000, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 7);
    free_ok(k + 0x10000, GL_API_cuMemFreeAsync, 32);
    do_alloc(k + 0x20000, 4096, GL_MEM_ASYNC, GL_API_cuMemAllocAsync, 0, 7);
    free_ok(k + 0x20000, GL_API_cuMemFreeAsync_ptsz, 33);
    do_alloc(k + 0x30000, 4096, GL_MEM_PITCH, GL_API_cuMemAlloc_v2, 0, 7);
    free_ok(k + 0x30000, GL_API_cuMemFree, 34);
    do_alloc(k + 0x40000, 4096, GL_MEM_MANAGED, GL_API_cuMemAlloc_v2, 0, 7);
    free_ok(k + 0x40000, GL_API_cuMemFree_v2, 35);
    /* Imported from a pool (cuMemPoolImportPointer): freed with cuMemFree. */
    do_alloc(k + 0x50000, 4096, GL_MEM_IPC, GL_API_cuMemPoolImportPointer, 0, 7);
    free_ok(k + 0x50000, GL_API_cuMemFree_v2, 36);
    do_alloc(k + 0x60000, 4096, GL_MEM_IPC, GL_API_cuIpcOpenMemHandle, 0, 7);
    free_ok(k + 0x60000, GL_API_cuIpcCloseMemHandle, 37);
    ck_assert_int_eq(nerrs, 0);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 0);
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.frees, 7);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

static int fake_ctx_device(uint64_t ctx)
{
    switch (ctx) {
    case 0x100:
        return 0;
    case 0x200:
        return 1;
    }
    return -1;
}

/* A stream-ordered free on a stream of another device than the block's is
 * the program's right (the pool grants the access: NVIDIA's
 * streamOrderedAllocationP2P sample frees device 0's memory on device 1's
 * stream): no error, the block goes; refused by the driver, it stays. */
START_TEST(test_stream_free_on_another_device)
{
    gl_contexts_set_query(fake_ctx_device);
    gl_contexts_created(0x100);
    gl_contexts_created(0x200);
    gl_contexts_stream_created(0x5000, 0x200);
    ck_assert_int_eq(gl_contexts_device(gl_contexts_stream_ctx(0x5000)), 1);

    do_alloc(A, 4096, GL_MEM_ASYNC, GL_API_cuMemAllocAsync, 0, 7); /* device 0 */
    struct gl_event ev = free_ev(A, GL_API_cuMemFreeAsync, 12);
    ev.ctx = 0x100;
    ev.aux = 0x5000; /* a stream of device 1 */
    gl_dispatch(&ev);
    ck_assert_int_eq(nerrs, 0);
    ck_assert(!is_live(A));

    dev_alloc(B, 4096, 7); /* cudaMalloc'd, freed stream-ordered elsewhere */
    ev = free_ev(B, GL_API_cuMemFreeAsync_ptsz, 13);
    ev.ctx = 0x200;
    ev.aux = 0x5000;
    uint64_t t = tu_release_begin(&ev);
    tu_release_end(t, false, &ev); /* refused */
    ck_assert_int_eq(nerrs, 0);
    ck_assert(is_live(B));
}
END_TEST

/* =================================================================
 * Contexts and counts
 * ================================================================= */

START_TEST(test_same_error_one_context)
{
    free_refused(A, GL_API_cuMemFree_v2, 12);
    free_refused(B, GL_API_cuMemFree_v2, 12); /* same kind, detail and stack */
    ck_assert_int_eq(nerrs, 1);
    ck_assert_uint_eq(errs[0].addr, A); /* the first is the one shown */
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 2);
    ck_assert_uint_eq(c.contexts, 1);
    ck_assert_uint_eq(c.suppressed, 0);
    ck_assert_uint_eq(c.suppressed_contexts, 0);
    ck_assert_uint_eq(c.by_kind[GL_ERR_INVALID_FREE], 2);

    /* Another stack: another context. */
    free_refused(C, GL_API_cuMemFree_v2, 13);
    ck_assert_int_eq(nerrs, 2);
    /* The same stack, another detail: another context. */
    dev_alloc(A, 4096, 7);
    free_refused(A + 1, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 3);
    ck_assert_uint_eq(errs[2].detail, GL_ERD_INTERIOR);
    c = counts();
    ck_assert_uint_eq(c.errors, 4);
    ck_assert_uint_eq(c.contexts, 3);

    struct gl_error_context ctx[8];
    memset(ctx, 0, sizeof ctx);
    ck_assert_uint_eq(gl_errors_contexts(ctx, 8), 3);
    ck_assert_uint_eq(ctx[0].count, 2);
    ck_assert_uint_eq(ctx[0].first.addr, A);
    ck_assert_uint_eq(ctx[0].first.stack, 12);
    ck_assert_uint_eq(ctx[1].count, 1);
    ck_assert_uint_eq(ctx[1].first.stack, 13);
    ck_assert_uint_eq(ctx[2].count, 1);
    ck_assert_uint_eq(ctx[2].first.detail, GL_ERD_INTERIOR);
    /* Fewer asked for: the count is still all of them. */
    memset(ctx, 0, sizeof ctx);
    ck_assert_uint_eq(gl_errors_contexts(ctx, 1), 3);
    ck_assert_uint_eq(ctx[0].count, 2);
    ck_assert_uint_eq(ctx[1].count, 0);

    gl_errors_component.reset();
    c = counts();
    ck_assert_uint_eq(c.errors, 0);
    ck_assert_uint_eq(c.contexts, 0);
    ck_assert_uint_eq(gl_errors_contexts(ctx, 8), 0);
}
END_TEST

START_TEST(test_suppressed_context)
{
    sink_suppresses = true;
    free_refused(A, GL_API_cuMemFree_v2, 12);
    free_refused(B, GL_API_cuMemFree_v2, 12);
    free_refused(C, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 1);
    sink_suppresses = false;
    free_refused(A, GL_API_cuMemFree_v2, 13);
    ck_assert_int_eq(nerrs, 2);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.suppressed, 3);
    ck_assert_uint_eq(c.suppressed_contexts, 1);
    ck_assert_uint_eq(c.errors, 1);
    ck_assert_uint_eq(c.contexts, 1);
    ck_assert_uint_eq(c.by_kind[GL_ERR_INVALID_FREE], 1); /* unsuppressed only */
    struct gl_error_context ctx[4];
    ck_assert_uint_eq(gl_errors_contexts(ctx, 4), 2);
    ck_assert_ptr_eq(ctx[0].suppressed_by, &supp_token);
    ck_assert_uint_eq(ctx[0].count, 3);
    ck_assert_ptr_null(ctx[1].suppressed_by);
}
END_TEST

static uint32_t fake_capture(void) { return 4242; }

START_TEST(test_stack_captured_when_missing)
{
    gl_errors_capture_stack = fake_capture;
    free_refused(A, GL_API_cuMemFree_v2, 0);
    free_refused(B, GL_API_cuMemFree_v2, 12); /* a stack already: kept */
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[0].stack, 4242);
    ck_assert_uint_eq(errs[1].stack, 12);
}
END_TEST

START_TEST(test_no_sink_counts_only)
{
    gl_errors_sink = NULL;
    free_refused(A, GL_API_cuMemFree_v2, 12);
    free_refused(A, GL_API_cuMemFree_v2, 12);
    ck_assert_int_eq(nerrs, 0);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 2);
    ck_assert_uint_eq(c.contexts, 1);
}
END_TEST

START_TEST(test_context_overflow)
{
    /* 1000 contexts kept; the next new ones are counted, announced once (NULL). */
    for (uint32_t i = 1; i <= 1005; i++)
        free_refused(A, GL_API_cuMemFree_v2, i);
    ck_assert_int_eq(nerrs, 1000);
    ck_assert_int_eq(sink_overflows, 1);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 1005);
    ck_assert_uint_eq(c.contexts, 1000);
    /* Errors past the contexts still count in their kind. */
    ck_assert_uint_eq(c.by_kind[GL_ERR_INVALID_FREE], 1005);
    /* A known context still counts into its own. */
    free_refused(B, GL_API_cuMemFree_v2, 1);
    struct gl_error_context ctx[1];
    ck_assert_uint_eq(gl_errors_contexts(ctx, 1), 1000);
    ck_assert_uint_eq(ctx[0].count, 2);
}
END_TEST

/* =================================================================
 * Copies and sets (GL_EV_ACCESS)
 * ================================================================= */

START_TEST(test_access_inside_block)
{
    dev_alloc(A, 4096, 7);
    dev_alloc(B, 4096, 7);
    do_access(A, 4096, B, 4096, 20);        /* whole blocks */
    do_access(A + 4095, 1, B + 100, 1, 21); /* last byte, one byte */
    do_access(A + 10, 0, B + 4096, 0, 22);  /* empty ranges: nothing */
    ck_assert_int_eq(nerrs, 0);
    ck_assert_uint_eq(counts().errors, 0);
}
END_TEST

START_TEST(test_access_past_end)
{
    dev_alloc(A, 4096, 7);
    dev_alloc(B, 1000, 8);
    /* The destination runs one byte past A's end. */
    do_access(A + 96, 4001, B, 1000, 20);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_INVALID_RANGE);
    ck_assert_uint_eq(e->detail, GL_ERD_NONE);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK | GL_ERRF_WRITE);
    ck_assert_uint_eq(e->addr, A + 96);
    ck_assert_uint_eq(e->size, 4001);
    ck_assert_uint_eq(e->api, GL_API_cuMemcpy);
    ck_assert_uint_eq(e->stack, 20);
    ck_assert_uint_eq(e->tid, 300);
    ck_assert_uint_eq(e->block.block.key, A);
    ck_assert_uint_eq(e->block.block.size, 4096);
    ck_assert_uint_eq(e->block.block.stack, 7);

    /* The source runs past B's end: a read. */
    do_access(A, 1001, B, 1001, 21);
    ck_assert_int_eq(nerrs, 2);
    e = &errs[1];
    ck_assert_uint_eq(e->kind, GL_ERR_INVALID_RANGE);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK);
    ck_assert_uint_eq(e->flags & GL_ERRF_WRITE, 0);
    ck_assert_uint_eq(e->addr, B);
    ck_assert_uint_eq(e->size, 1001);
    ck_assert_uint_eq(e->block.block.key, B);
    ck_assert_uint_eq(e->block.block.size, 1000);
    ck_assert_uint_eq(e->block.block.stack, 8);

    /* Both sides wrong in one call: two errors (one context here: same stack). */
    do_access(A + 4000, 200, B + 999, 2, 22);
    ck_assert_int_eq(nerrs, 3);
    ck_assert_uint_eq(errs[2].addr, A + 4000);
    ck_assert_uint_eq(errs[2].flags, GL_ERRF_BLOCK | GL_ERRF_WRITE);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.errors, 4);
    ck_assert_uint_eq(c.contexts, 3);
    ck_assert_uint_eq(c.by_kind[GL_ERR_INVALID_RANGE], 4);
}
END_TEST

START_TEST(test_access_freed_block)
{
    dev_alloc(A, 4096, 7);
    dev_alloc(B, 4096, 8);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    do_access(A + 16, 16, B, 16, 20);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_FREED_RANGE);
    ck_assert_uint_eq(e->flags, GL_ERRF_BLOCK | GL_ERRF_FREED | GL_ERRF_WRITE);
    ck_assert_uint_eq(e->addr, A + 16);
    ck_assert_uint_eq(e->size, 16);
    ck_assert_uint_eq(e->block.block.key, A);
    ck_assert_uint_eq(e->block.block.size, 4096);
    ck_assert_uint_eq(e->block.block.stack, 7);
    ck_assert_uint_eq(e->block.free_stack, 9);

    /* Read from freed memory. */
    do_access(B, 16, A, 4096, 21);
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[1].kind, GL_ERR_FREED_RANGE);
    ck_assert_uint_eq(errs[1].flags, GL_ERRF_BLOCK | GL_ERRF_FREED);
    ck_assert_uint_eq(errs[1].addr, A);

    /* A new allocation at the freed address: accesses inside it are fine again. */
    dev_alloc(A, 2048, 10);
    do_access(A + 16, 16, A + 100, 1948, 22);
    ck_assert_int_eq(nerrs, 2);
    /* ...but past its (smaller) end is a range error on the new block, not a freed one. */
    do_access(A + 2000, 100, 0, 0, 23);
    ck_assert_int_eq(nerrs, 3);
    ck_assert_uint_eq(errs[2].kind, GL_ERR_INVALID_RANGE);
    ck_assert_uint_eq(errs[2].block.block.size, 2048);
    ck_assert_uint_eq(errs[2].block.block.stack, 10);
}
END_TEST

START_TEST(test_access_untracked)
{
    dev_alloc(A, 4096, 7);
    do_access(C, 1 * MiB, C + 2 * MiB, 1 * MiB, 20); /* nothing there */
    do_access(A - 16, 16, A + 4096, 100, 21);        /* just outside A on both sides */
    ck_assert_int_eq(nerrs, 0);
}
END_TEST

START_TEST(test_access_vmm_never_checked)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x99);
    do_alloc(h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, 0, 7);
    struct gl_event m;
    memset(&m, 0, sizeof m);
    m.type = GL_EV_VMM_MAP;
    m.api = GL_API_cuMemMap;
    m.key = C;
    m.size = 2 * MiB;
    m.aux = h;
    gl_dispatch(&m);
    /* Past the mapping's end (an allocator's adjacent chunks may be one segment). */
    do_access(C + 1 * MiB, 4 * MiB, C, 3 * MiB, 20);
    do_access(C, 2 * MiB, 0, 0, 21);
    ck_assert_int_eq(nerrs, 0);
}
END_TEST

START_TEST(test_access_off_without_ranges)
{
    gl_live_ranges_configure(false);
    tu_pipeline_reset();
    dev_alloc(A, 4096, 7);
    do_access(A, 8192, 0, 0, 20);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    do_access(A, 16, 0, 0, 21);
    ck_assert_int_eq(nerrs, 0);
    ck_assert_uint_eq(counts().errors, 0);
}
END_TEST

/* =================================================================
 * Out of memory
 * ================================================================= */

static bool fake_device_memory(int device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (device != 0)
        return false;
    *free_bytes = 3 * MiB;
    *total_bytes = 80ULL << 30;
    return true;
}

START_TEST(test_oom)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC_FAILED;
    ev.kind = GL_MEM_DEVICE;
    ev.api = GL_API_cuMemAlloc_v2;
    ev.device = 0;
    ev.size = 1ULL << 40;
    ev.tid = ALLOC_TID;
    ev.stack = 30;
    gl_dispatch(&ev);
    ck_assert_int_eq(nerrs, 1);
    const struct gl_api_error *e = &errs[0];
    ck_assert_uint_eq(e->kind, GL_ERR_OUT_OF_MEMORY);
    ck_assert_uint_eq(e->detail, GL_ERD_NONE);
    ck_assert_uint_eq(e->flags, 0);
    ck_assert_uint_eq(e->size, 1ULL << 40);
    ck_assert_uint_eq(e->addr, 0);
    ck_assert_int_eq(e->device, 0);
    ck_assert_uint_eq(e->mem_kind, GL_MEM_DEVICE);
    ck_assert_uint_eq(e->api, GL_API_cuMemAlloc_v2);
    ck_assert_uint_eq(e->stack, 30);
    ck_assert_uint_eq(e->tid, ALLOC_TID);

    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    ck_assert_uint_eq(g.failed, 1);
    ck_assert_uint_eq(g.failed_bytes, 1ULL << 40);
    ck_assert_uint_eq(g.split[GL_SPLIT_ALL].alloc_blocks, 0);
    ck_assert_uint_eq(g.split[GL_SPLIT_ALL].cur_bytes, 0);
    ck_assert(gl_stats_slot_used(0));
    ck_assert(!gl_stats_slot_used(1));
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.allocs, 0);

    /* With the device's memory known. */
    gl_errors_device_memory = fake_device_memory;
    ev.stack = 31;
    ev.size = 5 * MiB;
    gl_dispatch(&ev);
    ck_assert_int_eq(nerrs, 2);
    ck_assert_uint_eq(errs[1].flags, GL_ERRF_DEVMEM);
    ck_assert_uint_eq(errs[1].device_free, 3 * MiB);
    ck_assert_uint_eq(errs[1].device_total, 80ULL << 30);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    ck_assert_uint_eq(g.failed, 2);
    ck_assert_uint_eq(g.failed_bytes, (1ULL << 40) + 5 * MiB);

    /* Host memory: the host slot, no device memory asked for. */
    ev.kind = GL_MEM_HOST_PINNED;
    ev.device = -1;
    ev.size = 123;
    ev.stack = 32;
    gl_dispatch(&ev);
    ck_assert_int_eq(nerrs, 3);
    ck_assert_uint_eq(errs[2].flags, 0);
    ck_assert_int_eq(errs[2].device, -1);
    ck_assert_uint_eq(errs[2].mem_kind, GL_MEM_HOST_PINNED);
    gl_stats_group(GL_STATS_SLOT_HOST, GL_MEM_HOST_PINNED, &g);
    ck_assert_uint_eq(g.failed, 1);
    ck_assert_uint_eq(g.failed_bytes, 123);
    struct gl_api_error_counts c = counts();
    ck_assert_uint_eq(c.by_kind[GL_ERR_OUT_OF_MEMORY], 3);
}
END_TEST

/* =================================================================
 * mem_stats.h through the tracker
 * ================================================================= */

/* A real depot id, of frames no other test uses. */
static uint32_t stack_id(uintptr_t tag)
{
    uintptr_t f[3] = {0x5eed0000 + tag, 0x5eed1000 + tag, 0x5eed2000 + tag};
    uint32_t id = gl_stack_depot_intern(f, 3);
    ck_assert_uint_ne(id, 0);
    return id;
}

static bool site(uint32_t id, struct gl_site_stats *out)
{
    enum { MAX = 4096 };
    static struct gl_site_stats all[MAX];
    size_t n = gl_stack_depot_sites(all, MAX);
    ck_assert_uint_le(n, MAX);
    for (size_t i = 0; i < n; i++)
        if (all[i].stack == id) {
            *out = all[i];
            return true;
        }
    return false;
}

static void assert_site(uint32_t id, uint64_t live_bytes, uint64_t live_blocks, uint64_t peak_bytes)
{
    struct gl_site_stats s;
    ck_assert_msg(site(id, &s), "site %u not listed", id);
    ck_assert_uint_eq(s.live_bytes, live_bytes);
    ck_assert_uint_eq(s.live_blocks, live_blocks);
    ck_assert_uint_eq(s.peak_bytes, peak_bytes);
}

START_TEST(test_stats_small_large_host)
{
    uint32_t s_small = stack_id(1), s_large = stack_id(2), s_host = stack_id(3),
             s_big = stack_id(4);
    const uint64_t L = 2 * MiB;
    dev_alloc(A, 1000, s_small);
    dev_alloc(B, L, s_large);
    do_alloc(C, 4096, GL_MEM_HOST_PINNED, GL_API_cuMemAllocHost_v2, -1, s_host);

    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_SMALL], 1, 1, 1, 0, 1000, 1000, 1000, 0);
    assert_split(&g.split[GL_SPLIT_LARGE], 1, 1, 1, 0, L, L, L, 0);
    assert_split(&g.split[GL_SPLIT_ALL], 2, 2, 2, 0, L + 1000, L + 1000, L + 1000, 0);
    ck_assert_uint_eq(g.failed, 0);
    ck_assert_uint_eq(g.failed_bytes, 0);
    ck_assert_uint_eq(gl_stats_live_bytes(0, GL_MEM_DEVICE), L + 1000);

    /* The pinned block: the host slot, not device 0's. */
    gl_stats_group(GL_STATS_SLOT_HOST, GL_MEM_HOST_PINNED, &g);
    assert_split(&g.split[GL_SPLIT_SMALL], 1, 1, 1, 0, 4096, 4096, 4096, 0);
    assert_split(&g.split[GL_SPLIT_LARGE], 0, 0, 0, 0, 0, 0, 0, 0);
    assert_split(&g.split[GL_SPLIT_ALL], 1, 1, 1, 0, 4096, 4096, 4096, 0);
    gl_stats_group(0, GL_MEM_HOST_PINNED, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 0, 0, 0, 0, 0, 0, 0);
    ck_assert(gl_stats_slot_used(0));
    ck_assert(gl_stats_slot_used(GL_STATS_SLOT_HOST));
    ck_assert(!gl_stats_slot_used(1));

    struct gl_stat_device d;
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, L + 1000);
    ck_assert_uint_eq(d.peak_bytes, L + 1000);
    ck_assert_uint_eq(d.peak_stack, s_large);
    ck_assert_uint_eq(d.peak_seq, 2);
    gl_stats_device(GL_STATS_SLOT_HOST, &d);
    ck_assert_uint_eq(d.cur_bytes, 4096);
    ck_assert_uint_eq(d.peak_bytes, 4096);
    ck_assert_uint_eq(d.peak_stack, s_host);
    ck_assert_uint_eq(d.peak_seq, 3);

    /* Free the small block. */
    free_ok(A, GL_API_cuMemFree_v2, 9);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_SMALL], 0, 1, 1, 1, 0, 1000, 1000, 1000);
    assert_split(&g.split[GL_SPLIT_LARGE], 1, 1, 1, 0, L, L, L, 0);
    assert_split(&g.split[GL_SPLIT_ALL], 1, 2, 2, 1, L, L + 1000, L + 1000, 1000);
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, L);
    ck_assert_uint_eq(d.peak_bytes, L + 1000);
    ck_assert_uint_eq(d.peak_stack, s_large);

    /* Below the peak: it stays, with its stack. */
    dev_alloc(A, 500, s_small);
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, L + 500);
    ck_assert_uint_eq(d.peak_bytes, L + 1000);
    ck_assert_uint_eq(d.peak_stack, s_large);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_SMALL], 1, 1, 2, 1, 500, 1000, 1500, 1000);
    assert_split(&g.split[GL_SPLIT_ALL], 2, 2, 3, 1, L + 500, L + 1000, L + 1500, 1000);

    /* Exactly 1 MiB is large; one byte less is small.  The new peak names its stack. */
    uint64_t k = 0x7f0001000000ULL;
    dev_alloc(k, GL_STATS_SMALL_LIMIT, s_big);
    dev_alloc(k + 0x200000, GL_STATS_SMALL_LIMIT - 1, s_big);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_SMALL], 2, 2, 3, 1, 500 + MiB - 1, 500 + MiB - 1, 1500 + MiB - 1,
                 1000);
    assert_split(&g.split[GL_SPLIT_LARGE], 2, 2, 2, 0, L + MiB, L + MiB, L + MiB, 0);
    assert_split(&g.split[GL_SPLIT_ALL], 4, 4, 5, 1, L + 2 * MiB + 499, L + 2 * MiB + 499,
                 L + 2 * MiB + 1499, 1000);
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, L + 2 * MiB + 499);
    ck_assert_uint_eq(d.peak_bytes, L + 2 * MiB + 499);
    ck_assert_uint_eq(d.peak_stack, s_big);

    /* Free everything. */
    free_ok(A, GL_API_cuMemFree_v2, 9);
    free_ok(B, GL_API_cuMemFree_v2, 9);
    free_ok(k, GL_API_cuMemFree_v2, 9);
    free_ok(k + 0x200000, GL_API_cuMemFree_v2, 9);
    free_ok(C, GL_API_cuMemFreeHost, 9);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 4, 5, 5, 0, L + 2 * MiB + 499, L + 2 * MiB + 1499,
                 L + 2 * MiB + 1499);
    gl_stats_group(GL_STATS_SLOT_HOST, GL_MEM_HOST_PINNED, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 1, 1, 1, 0, 4096, 4096, 4096);
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, 0);
    ck_assert_uint_eq(d.peak_bytes, L + 2 * MiB + 499);
    ck_assert_uint_eq(gl_stats_live_bytes(0, GL_MEM_DEVICE), 0);
    ck_assert_uint_eq(nerrs, 0);
}
END_TEST

START_TEST(test_stats_sites_off_by_default)
{
    uint32_t s1 = stack_id(14);
    ck_assert(!gl_stats_sites_on());
    dev_alloc(A, 1000, s1);
    struct gl_site_stats x;
    ck_assert(!site(s1, &x)); /* --stats=no: sites are not counted */
    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    ck_assert_uint_eq(g.split[GL_SPLIT_ALL].cur_bytes, 1000); /* the groups are */
}
END_TEST

START_TEST(test_stats_sites)
{
    uint32_t s1 = stack_id(11), s2 = stack_id(12), s_unused = stack_id(13);
    gl_stats_configure(true);
    dev_alloc(A, 1000, s1);
    dev_alloc(A + 0x1000, 3000, s1);
    dev_alloc(B, 2 * MiB, s2);
    assert_site(s1, 4000, 2, 4000);
    assert_site(s2, 2 * MiB, 1, 2 * MiB);
    struct gl_site_stats x;
    ck_assert(!site(s_unused, &x)); /* never held memory: not listed */

    free_ok(A + 0x1000, GL_API_cuMemFree_v2, 9);
    assert_site(s1, 1000, 1, 4000);
    dev_alloc(A + 0x1000, 100, s1);
    assert_site(s1, 1100, 2, 4000);
    free_ok(A, GL_API_cuMemFree_v2, 9);
    free_ok(A + 0x1000, GL_API_cuMemFree_v2, 9);
    free_ok(B, GL_API_cuMemFree_v2, 9);
    assert_site(s1, 0, 0, 4000); /* listed still: it held memory once */
    assert_site(s2, 0, 0, 2 * MiB);

    /* A refused free moves nothing. */
    dev_alloc(C, 512, s2);
    free_refused(C, GL_API_cuMemFree_v2, 9);
    assert_site(s2, 512, 1, 2 * MiB);

    /* Unknown ids are ignored (no site appears, nothing breaks). */
    uint32_t unknown = gl_stack_depot_count() + 1000;
    gl_stack_depot_site_move(unknown, 100, 1);
    gl_stack_depot_site_move(0, 100, 1);
    ck_assert(!site(unknown, &x));
    ck_assert(!site(0, &x));
    dev_alloc(0x7f0002000000ULL, 77, unknown); /* a block with a stack the depot lacks */
    ck_assert(!site(unknown, &x));
    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    ck_assert_uint_eq(g.split[GL_SPLIT_ALL].cur_bytes, 512 + 77);
}
END_TEST

START_TEST(test_stats_pool_sub_not_counted)
{
    uint32_t sp = stack_id(21), ssub = stack_id(22);
    gl_stats_configure(true);
    dev_alloc(A, 4 * MiB, sp);
    struct gl_event pc;
    memset(&pc, 0, sizeof pc);
    pc.type = GL_EV_POOL_CREATE;
    pc.key = A;
    gl_dispatch(&pc);

    uint64_t sub1 = gl_key_make(GL_NS_POOL_SUB, A), sub2 = gl_key_make(GL_NS_POOL_SUB, A + 4096);
    struct gl_event ev = alloc_ev(sub1, 4096, GL_MEM_POOL_SUB, GL_API_CLIENT_POOL_ALLOC, 0, ssub);
    ev.aux = A;
    gl_dispatch(&ev);
    ev = alloc_ev(sub2, 2 * MiB, GL_MEM_POOL_SUB, GL_API_CLIENT_POOL_ALLOC, 0, ssub);
    ev.aux = A;
    gl_dispatch(&ev);
    ck_assert(is_live(sub1));
    ck_assert(is_live(sub2));

    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_POOL_SUB, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 0, 0, 0, 0, 0, 0, 0);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 1, 1, 1, 0, 4 * MiB, 4 * MiB, 4 * MiB, 0);
    struct gl_stat_device d;
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, 4 * MiB);
    ck_assert_uint_eq(d.peak_bytes, 4 * MiB);
    ck_assert_uint_eq(d.peak_stack, sp);
    struct gl_site_stats x;
    ck_assert(!site(ssub, &x));
    assert_site(sp, 4 * MiB, 1, 4 * MiB);

    free_ok(sub1, GL_API_NONE, 9);
    ck_assert(!is_live(sub1));
    gl_stats_group(0, GL_MEM_POOL_SUB, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 0, 0, 0, 0, 0, 0, 0);
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, 4 * MiB);
    ck_assert(!site(ssub, &x));

    /* The pool's block freed: its sub-allocations go, only the block is counted. */
    free_ok(A, GL_API_cuMemFree_v2, 9);
    ck_assert(!is_live(sub2));
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, 0);
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 1, 1, 1, 0, 4 * MiB, 4 * MiB, 4 * MiB);
    assert_site(sp, 0, 0, 4 * MiB);
    struct gl_tracker_stats s;
    gl_tracker_stats(&s);
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_int_eq(nerrs, 0);
}
END_TEST

/* Threads count in cells of their own (mem_stats.c): reads while they are alive
 * and after they exit, with blocks freed by other threads, must add up exactly. */
#define ST_THREADS 4
#define ST_BLOCKS 300
static pthread_barrier_t st_barrier;

static uint64_t st_key(uint64_t thread, uint64_t i)
{
    return 0x7f1000000000ULL + (thread << 32) + (i << 12);
}
static uint64_t st_size(uint64_t i) { return i % 3 == 0 ? 2 * MiB : 512 + i; }

static void *stats_thread(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < ST_BLOCKS; i++)
        dev_alloc(st_key(id, i), st_size(i), 0);
    pthread_barrier_wait(&st_barrier); /* all allocated */
    /* Free the even blocks of the next thread. */
    uint64_t other = (id + 1) % ST_THREADS;
    for (uint64_t i = 0; i < ST_BLOCKS; i += 2)
        free_ok(st_key(other, i), GL_API_cuMemFree_v2, 0);
    pthread_barrier_wait(&st_barrier); /* all freed */
    pthread_barrier_wait(&st_barrier); /* the main thread read the counts */
    return NULL;
}

/* Blocks and bytes of all threads' blocks first, first + step, ..., per split. */
struct st_sums {
    uint64_t blocks[2], bytes[2];
};

static struct st_sums st_sum(uint64_t first, uint64_t step)
{
    struct st_sums s = {{0, 0}, {0, 0}};
    for (uint64_t i = first; i < ST_BLOCKS; i += step) {
        int large = st_size(i) >= GL_STATS_SMALL_LIMIT;
        s.blocks[large] += ST_THREADS;
        s.bytes[large] += ST_THREADS * st_size(i);
    }
    return s;
}

static void assert_stats_totals(struct st_sums live)
{
    struct st_sums all = st_sum(0, 1);
    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    for (int sp = GL_SPLIT_SMALL; sp <= GL_SPLIT_LARGE; sp++)
        assert_split(&g.split[sp], live.blocks[sp], g.split[sp].peak_blocks, all.blocks[sp],
                     all.blocks[sp] - live.blocks[sp], live.bytes[sp], g.split[sp].peak_bytes,
                     all.bytes[sp], all.bytes[sp] - live.bytes[sp]);
    uint64_t all_blocks = all.blocks[0] + all.blocks[1], all_bytes = all.bytes[0] + all.bytes[1];
    uint64_t live_blocks = live.blocks[0] + live.blocks[1];
    uint64_t live_bytes = live.bytes[0] + live.bytes[1];
    ck_assert_uint_le(g.split[GL_SPLIT_ALL].peak_bytes, all_bytes);
    struct gl_stat_device d;
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, live_bytes);
    ck_assert_uint_eq(gl_stats_live_bytes(0, GL_MEM_DEVICE), live_bytes);
    struct gl_tracker_stats t;
    gl_tracker_stats(&t);
    ck_assert_uint_eq(t.allocs, all_blocks);
    ck_assert_uint_eq(t.frees, all_blocks - live_blocks);
    ck_assert_uint_eq(t.bytes_allocated, all_bytes);
    ck_assert_uint_eq(t.live_bytes, live_bytes);
    ck_assert_uint_ge(t.peak_bytes, t.live_bytes);
}

START_TEST(test_stats_threads_exact)
{
    pthread_barrier_init(&st_barrier, NULL, ST_THREADS + 1);
    pthread_t th[ST_THREADS];
    for (uintptr_t i = 0; i < ST_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, stats_thread, (void *)i), 0);
    struct st_sums odd = st_sum(1, 2); /* the even blocks are freed */
    pthread_barrier_wait(&st_barrier);
    pthread_barrier_wait(&st_barrier);
    /* The threads are alive, their cells partly flushed. */
    assert_stats_totals(odd);
    pthread_barrier_wait(&st_barrier);
    for (int i = 0; i < ST_THREADS; i++)
        pthread_join(th[i], NULL);
    /* Exited: their cells were moved to the shared counters. */
    assert_stats_totals(odd);
    pthread_barrier_destroy(&st_barrier);
    ck_assert_int_eq(nerrs, 0);
}
END_TEST

START_TEST(test_stats_reset_by_tracker_reset)
{
    dev_alloc(A, 1000, 0);
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC_FAILED;
    ev.kind = GL_MEM_DEVICE;
    ev.size = 10;
    gl_dispatch(&ev);
    tu_pipeline_reset();
    struct gl_stat_group g;
    gl_stats_group(0, GL_MEM_DEVICE, &g);
    assert_split(&g.split[GL_SPLIT_ALL], 0, 0, 0, 0, 0, 0, 0, 0);
    ck_assert_uint_eq(g.failed, 0);
    ck_assert_uint_eq(g.failed_bytes, 0);
    struct gl_stat_device d;
    gl_stats_device(0, &d);
    ck_assert_uint_eq(d.cur_bytes, 0);
    ck_assert_uint_eq(d.peak_bytes, 0);
    ck_assert(!gl_stats_slot_used(0));
    /* Out of range slots and kinds read as zeros. */
    gl_stats_group(GL_STATS_SLOTS, GL_MEM_DEVICE, &g);
    ck_assert_uint_eq(g.failed, 0);
    gl_stats_group(0, GL_MEM_NKINDS, &g);
    ck_assert_uint_eq(g.split[GL_SPLIT_ALL].alloc_blocks, 0);
    ck_assert_uint_eq(gl_stats_slot(-1), GL_STATS_SLOT_HOST);
    ck_assert_uint_eq(gl_stats_slot(31), 31);
    ck_assert_uint_eq(gl_stats_slot(32), GL_STATS_SLOT_OTHER);
    ck_assert_uint_eq(gl_stats_slot(-7), GL_STATS_SLOT_OTHER);
}
END_TEST

static Suite *api_errors_suite(void)
{
    Suite *s = suite_create("api_errors");

    TCase *tr = tcase_create("ranges");
    tcase_add_test(tr, test_ranges_insert_find);
    tcase_add_test(tr, test_ranges_remove);
    tcase_add_test(tr, test_ranges_insert_newest);
    tcase_add_test(tr, test_ranges_many);
    suite_add_tcase(s, tr);

    TCase *tq = tcase_create("quarantine");
    tcase_set_timeout(tq, 60); /* threads on a loaded 2-core machine */
    tcase_add_checked_fixture(tq, setup, teardown);
    tcase_add_test(tq, test_quarantine_put_find);
    tcase_add_test(tq, test_quarantine_ring_evicts_oldest);
    tcase_add_test(tq, test_quarantine_holding);
    tcase_add_test(tq, test_quarantine_newest_free_wins);
    tcase_add_test(tq, test_quarantine_capacity_zero_is_off);
    tcase_add_test(tq, test_quarantine_writer_stopped);
    tcase_add_test(tq, test_quarantine_concurrent_writers);
    suite_add_tcase(s, tq);

    TCase *tf = tcase_create("releases");
    tcase_add_checked_fixture(tf, setup, teardown);
    tcase_add_test(tf, test_double_free);
    tcase_add_test(tf, test_double_free_names_newest_block);
    tcase_add_test(tf, test_accepted_unknown_free_is_no_error);
    tcase_add_test(tf, test_interior_free);
    tcase_add_test(tf, test_interior_free_without_range_index);
    tcase_add_test(tf, test_never_allocated);
    tcase_add_test(tf, test_freed_interior);
    tcase_add_test(tf, test_free_in_vmm_mapping);
    tcase_add_test(tf, test_freed_interior_needs_quarantine_ranges);
    tcase_add_test(tf, test_double_release_vmm_handle);
    tcase_add_test(tf, test_double_release_mapped_handle);
    tcase_add_test(tf, test_release_retained_handle);
    tcase_add_test(tf, test_reset_forgets_freed_and_live);
    tcase_add_test(tf, test_double_free_pool_sub);
    tcase_add_test(tf, test_ctx_destroy_leaves_index);
    tcase_add_test(tf, test_live_index_follows_vmm_unmap);
    tcase_add_test(tf, test_mismatched_free_host_of_device);
    tcase_add_test(tf, test_mismatched_calls);
    tcase_add_test(tf, test_right_calls_no_error);
    tcase_add_test(tf, test_stream_free_on_another_device);
    suite_add_tcase(s, tf);

    TCase *tc = tcase_create("contexts");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_same_error_one_context);
    tcase_add_test(tc, test_suppressed_context);
    tcase_add_test(tc, test_stack_captured_when_missing);
    tcase_add_test(tc, test_no_sink_counts_only);
    tcase_add_test(tc, test_context_overflow);
    suite_add_tcase(s, tc);

    TCase *ta = tcase_create("access");
    tcase_add_checked_fixture(ta, setup, teardown);
    tcase_add_test(ta, test_access_inside_block);
    tcase_add_test(ta, test_access_past_end);
    tcase_add_test(ta, test_access_freed_block);
    tcase_add_test(ta, test_access_untracked);
    tcase_add_test(ta, test_access_vmm_never_checked);
    tcase_add_test(ta, test_access_off_without_ranges);
    tcase_add_test(ta, test_oom);
    suite_add_tcase(s, ta);

    TCase *tm = tcase_create("mem_stats");
    tcase_add_checked_fixture(tm, setup, teardown);
    tcase_add_test(tm, test_stats_small_large_host);
    tcase_add_test(tm, test_stats_sites_off_by_default);
    tcase_add_test(tm, test_stats_threads_exact);
    tcase_add_test(tm, test_stats_sites);
    tcase_add_test(tm, test_stats_pool_sub_not_counted);
    tcase_add_test(tm, test_stats_reset_by_tracker_reset);
    suite_add_tcase(s, tm);
    return s;
}

TU_MAIN(api_errors_suite)
