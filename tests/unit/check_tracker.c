/* SPDX-License-Identifier: MIT */
/* lib/track/tracker.h: events applied to the live-block table, counters, VMM
 * handles and their mappings, contexts, snapshots. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tracker_util.h"
#include "base/tool.h"
#include "event/api.h"
#include "track/stats.h"
#include "track/tracker.h"

#define MiB (1024ULL * 1024)

static void setup(void) { tu_pipeline_reset(); }

/* Back to the registry alone (a test may have added the recorder). */
static void teardown(void) { tu_pipeline_restart(); }

static struct gl_event alloc_ev(uint64_t key, uint64_t size, enum gl_mem_kind kind, uint64_t ctx)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.kind = (uint8_t)kind;
    ev.key = key;
    ev.size = size;
    ev.ctx = ctx;
    ev.device = 0;
    ev.api = 2;
    ev.tid = 100;
    ev.stack = 5;
    return ev;
}

static struct gl_event simple_ev(enum gl_event_type type, uint64_t key, uint64_t size, uint64_t aux)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.key = key;
    ev.size = size;
    ev.aux = aux;
    return ev;
}

static void do_alloc(uint64_t key, uint64_t size, enum gl_mem_kind kind, uint64_t ctx)
{
    struct gl_event ev = alloc_ev(key, size, kind, ctx);
    gl_dispatch(&ev);
}

static void do_event(enum gl_event_type type, uint64_t key, uint64_t size, uint64_t aux)
{
    struct gl_event ev = simple_ev(type, key, size, aux);
    gl_dispatch(&ev);
}

static size_t live_count(void)
{
    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    gl_tool_unmap(blocks, bytes);
    return n;
}

#define H(v) gl_key_make(GL_NS_VMM_HANDLE, (v))

/* ---- allocations and frees ---- */

START_TEST(test_empty_stats)
{
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 0);
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.bytes_allocated, 0);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.peak_bytes, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.replaced, 0);
    ck_assert_uint_eq(live_count(), 0);
}
END_TEST

START_TEST(test_alloc_free_counts)
{
    do_alloc(0x1000, 100, GL_MEM_DEVICE, 1);
    do_alloc(0x2000, 300, GL_MEM_DEVICE, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.bytes_allocated, 400);
    ck_assert_uint_eq(s.live_bytes, 400);
    ck_assert_uint_eq(s.live_blocks, 2);
    ck_assert_uint_eq(s.peak_bytes, 400);

    do_event(GL_EV_FREE, 0x1000, 0, 0);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.bytes_allocated, 400);
    ck_assert_uint_eq(s.live_bytes, 300);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(s.peak_bytes, 400);

    do_alloc(0x3000, 50, GL_MEM_DEVICE, 1);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.live_bytes, 350);
    ck_assert_uint_eq(s.peak_bytes, 400); /* below the old peak */
    do_alloc(0x4000, 200, GL_MEM_DEVICE, 1);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.live_bytes, 550);
    ck_assert_uint_eq(s.peak_bytes, 550);
    ck_assert_uint_eq(s.allocs, 4);
    ck_assert_uint_eq(s.bytes_allocated, 650);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.replaced, 0);
    ck_assert_uint_eq(live_count(), 3);
}
END_TEST

START_TEST(test_alloc_records_block)
{
    struct gl_event ev = alloc_ev(0x7f0000010000, 4096, GL_MEM_ASYNC, 0xc1);
    ev.device = 2;
    ev.aux = 0x5eed; /* the stream */
    ev.tid = 777;
    ev.stack = 42;
    ev.api = 13;
    gl_dispatch(&ev);
    ck_assert_uint_eq(ev.seq, 1); /* assigned */

    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0000010000, &b));
    ck_assert_uint_eq(b.size, 4096);
    ck_assert_uint_eq(b.seq, 1);
    ck_assert_uint_eq(b.ctx, 0xc1);
    ck_assert_uint_eq(b.aux, 0x5eed);
    ck_assert_uint_eq(b.stack, 42);
    ck_assert_uint_eq(b.tid, 777);
    ck_assert_int_eq(b.device, 2);
    ck_assert_uint_eq(b.kind, GL_MEM_ASYNC);
    ck_assert_uint_eq(b.flags, 0);
    ck_assert_uint_eq(b.api, 13);
    ck_assert_uint_eq(b.refs, 0);
}
END_TEST

START_TEST(test_sequence_numbers)
{
    struct gl_event a = alloc_ev(0x1000, 1, GL_MEM_DEVICE, 1);
    struct gl_event b = alloc_ev(0x2000, 1, GL_MEM_DEVICE, 1);
    struct gl_event c = alloc_ev(0x3000, 1, GL_MEM_DEVICE, 1);
    c.seq = 1000; /* a replayed event keeps its number */
    gl_dispatch(&a);
    gl_dispatch(&b);
    gl_dispatch(&c);
    ck_assert_uint_eq(a.seq, 1);
    ck_assert_uint_eq(b.seq, 2);
    ck_assert_uint_eq(c.seq, 1000);
    ck_assert_uint_eq(gl_tracker_next_seq(), 3);
    struct gl_block_info blk;
    ck_assert(tu_live_block(0x3000, &blk));
    ck_assert_uint_eq(blk.seq, 1000);

    /* A confirmed free says which allocation it freed (the rest of the block
     * reaches the observers beside it). */
    struct gl_event f = simple_ev(GL_EV_FREE, 0x2000, 0, 0);
    gl_dispatch(&f);
    ck_assert_uint_eq(f.seq, 2);
}
END_TEST

START_TEST(test_size_unknown_flag)
{
    struct gl_event ev = alloc_ev(0x9000, 0, GL_MEM_IPC, 1);
    ev.flags = GL_EVF_SIZE_UNKNOWN;
    gl_dispatch(&ev);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x9000, &b));
    ck_assert_uint_eq(b.flags, GL_BLK_SIZE_UNKNOWN);
    ck_assert_uint_eq(b.size, 0);
}
END_TEST

START_TEST(test_unknown_free)
{
    do_alloc(0x1000, 100, GL_MEM_DEVICE, 1);
    struct gl_event f = simple_ev(GL_EV_FREE, 0xdead000, 0, 0);
    gl_dispatch(&f);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.unknown_frees, 1);
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.live_bytes, 100);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(f.seq, 0); /* nothing freed */
    /* A second free of a freed block is unknown too. */
    do_event(GL_EV_FREE, 0x1000, 0, 0);
    do_event(GL_EV_FREE, 0x1000, 0, 0);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.unknown_frees, 2);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
}
END_TEST

START_TEST(test_failed_free_puts_block_back)
{
    do_alloc(0x1000, 100, GL_MEM_DEVICE, 1);
    struct gl_event f = simple_ev(GL_EV_FREE, 0x1000, 0, 0);
    uint64_t token = tu_release_begin(&f);
    ck_assert_uint_ne(token, 0);
    /* Taken out while the driver frees. */
    ck_assert(!tu_live_block(0x1000, NULL));
    tu_release_end(token, false, &f);

    struct gl_block_info b;
    ck_assert(tu_live_block(0x1000, &b));
    ck_assert_uint_eq(b.size, 100);
    ck_assert_uint_eq(b.seq, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.live_bytes, 100);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(s.unknown_frees, 0);

    /* Then the free succeeds. */
    token = tu_release_begin(&f);
    ck_assert_uint_ne(token, 0);
    tu_release_end(token, true, &f);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

START_TEST(test_release_begin_unknown)
{
    /* A token, never 0 (a producer keeps 0 for "nothing begun"), though
     * nothing was taken out. */
    struct gl_event f = simple_ev(GL_EV_FREE, 0x5000, 0, 0);
    uint64_t token = tu_release_begin(&f);
    ck_assert_uint_ne(token, 0);
    tu_release_end(token, false, &f);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.unknown_frees, 1);
    ck_assert_uint_eq(s.frees, 0);
}
END_TEST

START_TEST(test_failed_free_after_address_reused)
{
    do_alloc(0x1000, 100, GL_MEM_DEVICE, 1);
    struct gl_event f = simple_ev(GL_EV_FREE, 0x1000, 0, 0);
    uint64_t token = tu_release_begin(&f);
    /* Another thread is handed the address before the failed free returns. */
    do_alloc(0x1000, 700, GL_MEM_DEVICE, 1);
    tu_release_end(token, false, &f);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x1000, &b));
    ck_assert_uint_eq(b.size, 700);
    ck_assert_uint_eq(b.seq, 2);
    ck_assert_uint_eq(live_count(), 1);
    ck_assert_uint_eq(tu_tracker_stats().live_blocks, 1);
}
END_TEST

START_TEST(test_alloc_at_live_key_is_replaced)
{
    do_alloc(0x1000, 100, GL_MEM_DEVICE, 1);
    do_alloc(0x1000, 40, GL_MEM_MANAGED, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.replaced, 1);
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 1); /* the old block is gone */
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(s.live_bytes, 40);
    ck_assert_uint_eq(s.peak_bytes, 100);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x1000, &b));
    ck_assert_uint_eq(b.size, 40);
    ck_assert_uint_eq(b.kind, GL_MEM_MANAGED);
    ck_assert_uint_eq(b.seq, 2);
}
END_TEST

START_TEST(test_spare_nodes_across_frees)
{
    /* Frees keep a node for the thread's next allocation: alternate many times
     * and check nothing is lost or duplicated. */
    for (uint64_t i = 0; i < 5000; i++) {
        do_alloc(0x100000 + i * 512, i + 1, GL_MEM_DEVICE, 1);
        if (i % 3 != 0)
            do_event(GL_EV_FREE, 0x100000 + i * 512, 0, 0);
    }
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 5000);
    ck_assert_uint_eq(s.frees, 5000 - 1667);
    ck_assert_uint_eq(s.live_blocks, 1667);
    ck_assert_uint_eq(live_count(), 1667);
    uint64_t live = 0;
    for (uint64_t i = 0; i < 5000; i += 3)
        live += i + 1;
    ck_assert_uint_eq(s.live_bytes, live);
}
END_TEST

/* ---- contexts ---- */

START_TEST(test_ctx_destroy)
{
    do_alloc(0x1000, 1, GL_MEM_DEVICE, 0xc1);
    do_alloc(0x2000, 2, GL_MEM_HOST_PINNED, 0xc1);
    do_alloc(0x3000, 4, GL_MEM_ASYNC, 0xc1);
    do_alloc(gl_key_make(GL_NS_ARRAY, 0x77), 8, GL_MEM_ARRAY, 0xc1);
    do_alloc(H(0x10), 16, GL_MEM_VMM, 0xc1);   /* belongs to the device */
    do_alloc(0x6000, 32, GL_MEM_DEVICE, 0xc2); /* another context */
    do_alloc(0x7000, 64, GL_MEM_MANAGED, 0xc2);

    struct gl_event ev = simple_ev(GL_EV_CTX_DESTROY, 0, 0, 0);
    ev.ctx = 0xc1;
    gl_dispatch(&ev);

    ck_assert(!tu_live_block(0x1000, NULL));
    ck_assert(!tu_live_block(0x2000, NULL));
    ck_assert(!tu_live_block(0x3000, NULL));
    ck_assert(!tu_live_block(gl_key_make(GL_NS_ARRAY, 0x77), NULL));
    ck_assert(tu_live_block(H(0x10), NULL));
    ck_assert(tu_live_block(0x6000, NULL));
    ck_assert(tu_live_block(0x7000, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 4);
    ck_assert_uint_eq(s.live_blocks, 3);
    ck_assert_uint_eq(s.live_bytes, 16 + 32 + 64);

    /* Destroying it again, or an unknown context, frees nothing. */
    gl_dispatch(&ev);
    ev.ctx = 0xc3;
    gl_dispatch(&ev);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 4);
    ck_assert_uint_eq(s.live_bytes, 112);
}
END_TEST

START_TEST(test_context_bound_kinds)
{
    ck_assert(!gl_mem_kind_context_bound(GL_MEM_NONE));
    ck_assert(!gl_mem_kind_context_bound(GL_MEM_VMM));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_DEVICE));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_PITCH));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_MANAGED));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_HOST_PINNED));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_HOST_REGISTERED));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_ASYNC));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_ARRAY));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_MIPMAPPED_ARRAY));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_IPC));
    ck_assert(gl_mem_kind_context_bound(GL_MEM_GRAPH));
}
END_TEST

/* ---- VMM ---- */

START_TEST(test_vmm_life_cycle)
{
    const uint64_t h = H(0x1234), va = 0x7f4000000000ULL;
    struct gl_event create = alloc_ev(h, 2 * MiB, GL_MEM_VMM, 0xc1);
    create.aux = 0x999; /* ignored for handles: aux counts mappings */
    gl_dispatch(&create);
    struct gl_block_info b;
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.refs, 1);
    ck_assert_uint_eq(b.aux, 0);
    ck_assert_uint_eq(b.flags, 0);

    do_event(GL_EV_VMM_MAP, va, 2 * MiB, h);
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.aux, 1);
    uint64_t addrs[4] = {0};
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, addrs, 4, NULL), 1);
    ck_assert_uint_eq(addrs[0], va);
    /* Mapping records are not blocks. */
    ck_assert_uint_eq(live_count(), 1);
    ck_assert_uint_eq(tu_tracker_stats().live_blocks, 1);

    /* cuMemRelease while mapped: the memory lives on through the mapping. */
    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.flags & GL_BLK_RELEASED, GL_BLK_RELEASED);
    ck_assert_uint_eq(b.refs, 0);
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, addrs, 4, NULL), 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.live_bytes, 2 * MiB);

    /* The last unmap frees it. */
    do_event(GL_EV_VMM_UNMAP, va, 2 * MiB, 0);
    ck_assert(!tu_live_block(h, NULL));
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, addrs, 4, NULL), 0);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
}
END_TEST

START_TEST(test_vmm_release_unmapped)
{
    const uint64_t h = H(0x42);
    do_alloc(h, MiB, GL_MEM_VMM, 0xc1);
    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    ck_assert(!tu_live_block(h, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    /* Released again: unknown. */
    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    ck_assert_uint_eq(tu_tracker_stats().unknown_frees, 1);
}
END_TEST

START_TEST(test_vmm_unmap_before_release)
{
    const uint64_t h = H(0x43), va = 0x7f5000000000ULL;
    do_alloc(h, MiB, GL_MEM_VMM, 0xc1);
    do_event(GL_EV_VMM_MAP, va, MiB, h);
    do_event(GL_EV_VMM_UNMAP, va, MiB, 0);
    struct gl_block_info b;
    ck_assert(tu_live_block(h, &b)); /* not released yet */
    ck_assert_uint_eq(b.refs, 1);
    ck_assert_uint_eq(b.aux, 0);
    ck_assert_uint_eq(b.flags, 0);
    ck_assert_uint_eq(tu_tracker_stats().frees, 0);
    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    ck_assert(!tu_live_block(h, NULL));
    ck_assert_uint_eq(tu_tracker_stats().frees, 1);
}
END_TEST

START_TEST(test_vmm_retain_then_two_releases)
{
    const uint64_t h = H(0x55);
    do_alloc(h, 4 * MiB, GL_MEM_VMM, 0xc1);
    do_event(GL_EV_VMM_RETAIN, h, 0, 0);
    struct gl_block_info b;
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.refs, 2);

    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.refs, 1);
    ck_assert_uint_eq(b.flags & GL_BLK_RELEASED, 0);
    ck_assert_uint_eq(tu_tracker_stats().frees, 0);

    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    ck_assert(!tu_live_block(h, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
}
END_TEST

START_TEST(test_vmm_unmap_two_adjacent_mappings)
{
    const uint64_t h1 = H(0x61), h2 = H(0x62), va = 0x7f6000000000ULL;
    do_alloc(h1, MiB, GL_MEM_VMM, 0xc1);
    do_alloc(h2, 2 * MiB, GL_MEM_VMM, 0xc1);
    do_event(GL_EV_VMM_MAP, va, MiB, h1);
    do_event(GL_EV_VMM_MAP, va + MiB, 2 * MiB, h2);
    do_event(GL_EV_VMM_RELEASE, h1, 0, 0);
    do_event(GL_EV_VMM_RELEASE, h2, 0, 0);
    ck_assert(tu_live_block(h1, NULL));
    ck_assert(tu_live_block(h2, NULL));
    ck_assert_uint_eq(tu_tracker_stats().live_bytes, 3 * MiB);

    /* One unmap of the whole range. */
    do_event(GL_EV_VMM_UNMAP, va, 3 * MiB, 0);
    ck_assert(!tu_live_block(h1, NULL));
    ck_assert(!tu_live_block(h2, NULL));
    uint64_t addrs[2];
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h1, addrs, 2, NULL), 0);
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h2, addrs, 2, NULL), 0);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

START_TEST(test_vmm_handle_mapped_twice)
{
    const uint64_t h = H(0x70), va1 = 0x7f7000000000ULL, va2 = 0x7f8000000000ULL;
    do_alloc(h, MiB, GL_MEM_VMM, 0xc1);
    do_event(GL_EV_VMM_MAP, va1, MiB, h);
    do_event(GL_EV_VMM_MAP, va2, MiB, h);
    do_event(GL_EV_VMM_RELEASE, h, 0, 0);
    do_event(GL_EV_VMM_UNMAP, va1, MiB, 0);
    struct gl_block_info b;
    ck_assert(tu_live_block(h, &b)); /* still mapped at va2 */
    ck_assert_uint_eq(b.aux, 1);
    uint64_t addrs[2] = {0};
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, addrs, 2, NULL), 1);
    ck_assert_uint_eq(addrs[0], va2);
    do_event(GL_EV_VMM_UNMAP, va2, MiB, 0);
    ck_assert(!tu_live_block(h, NULL));
    ck_assert_uint_eq(tu_tracker_stats().frees, 1);
}
END_TEST

START_TEST(test_vmm_failed_release_is_undone)
{
    const uint64_t h = H(0x80);
    do_alloc(h, MiB, GL_MEM_VMM, 0xc1);
    struct gl_event r = simple_ev(GL_EV_VMM_RELEASE, h, 0, 0);
    uint64_t token = tu_release_begin(&r);
    ck_assert_uint_ne(token, 0);
    tu_release_end(token, false, &r);
    struct gl_block_info b;
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.refs, 1);
    ck_assert_uint_eq(b.flags, 0);
    ck_assert_uint_eq(b.size, MiB);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.live_bytes, MiB);
    ck_assert_uint_eq(s.live_blocks, 1);

    /* Mapped: the failed release leaves it unreleased. */
    do_event(GL_EV_VMM_MAP, 0x7f9000000000ULL, MiB, h);
    token = tu_release_begin(&r);
    tu_release_end(token, false, &r);
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.refs, 1);
    ck_assert_uint_eq(b.flags & GL_BLK_RELEASED, 0);
}
END_TEST

/* cuMemRelease of a handle that was already released (and is alive only through a
 * mapping) fails in the driver.  Undoing that failed release must not bring the
 * handle back to life: once unmapped it is gone. */
START_TEST(test_vmm_failed_second_release_keeps_released)
{
    const uint64_t h = H(0x90), va = 0x7fa000000000ULL;
    do_alloc(h, MiB, GL_MEM_VMM, 0xc1);
    do_event(GL_EV_VMM_MAP, va, MiB, h);
    do_event(GL_EV_VMM_RELEASE, h, 0, 0);

    struct gl_event r = simple_ev(GL_EV_VMM_RELEASE, h, 0, 0);
    uint64_t token = tu_release_begin(&r);
    tu_release_end(token, false, &r); /* CUDA_ERROR_INVALID_VALUE */

    struct gl_block_info b;
    ck_assert(tu_live_block(h, &b));
    ck_assert_uint_eq(b.refs, 0);
    ck_assert_uint_eq(b.flags & GL_BLK_RELEASED, GL_BLK_RELEASED);
    do_event(GL_EV_VMM_UNMAP, va, MiB, 0);
    ck_assert(!tu_live_block(h, NULL));
    ck_assert_uint_eq(tu_tracker_stats().live_bytes, 0);
}
END_TEST

START_TEST(test_vmm_mappings_query)
{
    const uint64_t h = H(0xa0), other = H(0xa1);
    const uint64_t va[3] = {0x7fb000000000ULL, 0x7fc000000000ULL, 0x7fd000000000ULL};
    do_alloc(h, MiB, GL_MEM_VMM, 0xc1);
    do_alloc(other, MiB, GL_MEM_VMM, 0xc1);
    for (int i = 0; i < 3; i++)
        do_event(GL_EV_VMM_MAP, va[i], MiB, h);
    do_event(GL_EV_VMM_MAP, 0x7fe000000000ULL, MiB, other);

    uint64_t addrs[4] = {0};
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, addrs, 4, NULL), 3);
    for (int i = 0; i < 3; i++)
        ck_assert(addrs[0] == va[i] || addrs[1] == va[i] || addrs[2] == va[i]);
    ck_assert_uint_eq(addrs[3], 0);

    /* Fewer slots than mappings: the count is still the total. */
    uint64_t two[3] = {0, 0, 0x77};
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, two, 2, NULL), 3);
    ck_assert_uint_ne(two[0], 0);
    ck_assert_uint_ne(two[1], 0);
    ck_assert_uint_ne(two[0], two[1]);
    ck_assert_uint_eq(two[2], 0x77); /* untouched */
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, NULL, 0, NULL), 3);
    uint64_t mapped = 0;
    ck_assert_uint_eq(gl_tracker_vmm_mappings(h, NULL, 0, &mapped), 3);
    ck_assert_uint_eq(mapped, 3 * MiB);
    ck_assert_uint_eq(gl_tracker_vmm_mappings(H(0xbad), NULL, 0, &mapped), 0);
    ck_assert_uint_eq(mapped, 0);
    ck_assert_uint_eq(gl_tracker_vmm_mappings(other, addrs, 4, NULL), 1);
    ck_assert_uint_eq(addrs[0], 0x7fe000000000ULL);
    ck_assert_uint_eq(gl_tracker_vmm_mappings(H(0xbad), addrs, 4, NULL), 0);
}
END_TEST

/* ---- snapshots ---- */

START_TEST(test_snapshot_exact)
{
    for (uint64_t i = 1; i <= 10; i++)
        do_alloc(i << 16, i * 10, GL_MEM_DEVICE, 1);
    do_event(GL_EV_FREE, 3 << 16, 0, 0);
    do_event(GL_EV_FREE, 7 << 16, 0, 0);
    do_alloc(H(5), 1, GL_MEM_VMM, 1);
    do_event(GL_EV_VMM_MAP, 0x7f0000000000ULL, 1, H(5));

    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    ck_assert_uint_eq(n, 9);
    ck_assert_uint_ge(bytes, n * sizeof *blocks);
    unsigned seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (blocks[i].key == H(5)) {
            seen |= 1u << 0;
            continue;
        }
        uint64_t k = blocks[i].key >> 16;
        ck_assert(k >= 1 && k <= 10 && k != 3 && k != 7);
        ck_assert_uint_eq(blocks[i].key & 0xffff, 0);
        ck_assert_uint_eq(blocks[i].size, k * 10);
        ck_assert_uint_eq(blocks[i].seq, k);
        ck_assert_uint_eq(seen & (1u << k), 0);
        seen |= 1u << k;
    }
    ck_assert_uint_eq(seen, 0x7ff & ~(1u << 3) & ~(1u << 7));
    gl_tool_unmap(blocks, bytes);
}
END_TEST

/* ---- what the observers get ---- */

/* The state stage completes each event and hands the observers the block it
 * concerned: the one made, the one freed (with the free's allocation number),
 * none for a free of an unknown key; a refused release reaches them too,
 * flagged, with the block it named (the checks look at it). */
START_TEST(test_observers_see_resolved_events)
{
    tu_pipeline_with_recorder();
    do_alloc(0x1000, 64, GL_MEM_DEVICE, 1);
    do_event(GL_EV_FREE, 0x1000, 0, 0);
    struct gl_event f = simple_ev(GL_EV_FREE, 0x1000, 0, 0);
    uint64_t token = tu_release_begin(&f); /* unknown now */
    tu_release_end(token, false, &f);      /* and refused */
    do_alloc(0x2000, 8, GL_MEM_DEVICE, 1);
    f = simple_ev(GL_EV_FREE, 0x2000, 0, 0);
    token = tu_release_begin(&f);
    tu_release_end(token, false, &f); /* refused: the block stays */

    ck_assert_uint_eq(tu_nrecorded, 5);
    const struct tu_recorded *r = tu_recorded;
    ck_assert_uint_eq(r[0].ev.type, GL_EV_ALLOC);
    ck_assert_uint_eq(r[0].ev.seq, 1);
    ck_assert(r[0].has_blk);
    ck_assert_uint_eq(r[0].blk.key, 0x1000);
    ck_assert_uint_eq(r[0].blk.size, 64);
    ck_assert_uint_eq(r[0].blk.seq, 1);
    ck_assert_uint_ne(r[0].ev.time_ns, 0); /* the recorder asks for times */

    ck_assert_uint_eq(r[1].ev.type, GL_EV_FREE);
    ck_assert_uint_eq(r[1].ev.seq, 1);
    ck_assert(!(r[1].ev.flags & (GL_EVF_FAILED | GL_EVF_DERIVED)));
    ck_assert(r[1].has_blk);
    ck_assert_uint_eq(r[1].blk.size, 64);
    ck_assert_uint_ge(r[1].ev.time_ns, r[0].ev.time_ns);

    ck_assert_uint_eq(r[2].ev.type, GL_EV_FREE);
    ck_assert(r[2].ev.flags & GL_EVF_FAILED);
    ck_assert(!r[2].has_blk);

    ck_assert(r[4].ev.flags & GL_EVF_FAILED);
    ck_assert(r[4].has_blk);
    ck_assert_uint_eq(r[4].blk.key, 0x2000);
    ck_assert(tu_live_block(0x2000, NULL));
}
END_TEST

/* What the block table changes in bulk reaches the observers as one derived
 * free per block, before the event that caused it: a context's blocks, a
 * block found replaced, a handle freed by its last unmap. */
START_TEST(test_observers_see_derived_frees)
{
    tu_pipeline_with_recorder();
    do_alloc(0x1000, 64, GL_MEM_DEVICE, 1);
    do_alloc(0x2000, 32, GL_MEM_DEVICE, 2);
    do_alloc(0x1000, 16, GL_MEM_DEVICE, 1); /* replaces the first */
    ck_assert_uint_eq(tu_nrecorded, 4);
    ck_assert_uint_eq(tu_recorded[2].ev.type, GL_EV_FREE);
    ck_assert(tu_recorded[2].ev.flags & GL_EVF_DERIVED);
    ck_assert_uint_eq(tu_recorded[2].ev.api, GL_API_NONE);
    ck_assert_uint_eq(tu_recorded[2].blk.size, 64);
    ck_assert_uint_eq(tu_recorded[3].ev.type, GL_EV_ALLOC);

    tu_nrecorded = 0;
    struct gl_event c = simple_ev(GL_EV_CTX_DESTROY, 0, 0, 0);
    c.ctx = 2;
    gl_dispatch(&c);
    ck_assert_uint_eq(tu_nrecorded, 2);
    ck_assert_uint_eq(tu_recorded[0].ev.type, GL_EV_FREE);
    ck_assert(tu_recorded[0].ev.flags & GL_EVF_DERIVED);
    ck_assert_uint_eq(tu_recorded[0].blk.key, 0x2000);
    ck_assert_uint_eq(tu_recorded[1].ev.type, GL_EV_CTX_DESTROY);

    /* A released handle's last unmap frees it, named after the unmap. */
    tu_nrecorded = 0;
    do_alloc(H(9), 2 * MiB, GL_MEM_VMM, 1);
    do_event(GL_EV_VMM_MAP, 0x7f0000000000ULL, 2 * MiB, H(9));
    do_event(GL_EV_VMM_RELEASE, H(9), 0, 0);
    struct gl_event u = simple_ev(GL_EV_VMM_UNMAP, 0x7f0000000000ULL, 2 * MiB, 0);
    u.api = 77;
    u.stack = 9;
    gl_dispatch(&u);
    const struct tu_recorded *last = &tu_recorded[tu_nrecorded - 2];
    ck_assert_uint_eq(last->ev.type, GL_EV_FREE);
    ck_assert(last->ev.flags & GL_EVF_DERIVED);
    ck_assert_uint_eq(last->ev.api, 77);
    ck_assert_uint_eq(last->ev.stack, 9);
    ck_assert_uint_eq(last->blk.key, H(9));
    ck_assert_uint_eq(tu_recorded[tu_nrecorded - 1].ev.type, GL_EV_VMM_UNMAP);
    ck_assert(!tu_live_block(H(9), NULL));
}
END_TEST

START_TEST(test_apply_none_and_memory)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    gl_dispatch(&ev);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs + s.frees + s.unknown_frees, 0);
    ck_assert_uint_gt(gl_tracker_memory_bytes(), 0);
}
END_TEST

START_TEST(test_reset_forgets_everything)
{
    do_alloc(0x1000, 64, GL_MEM_DEVICE, 1);
    do_event(GL_EV_FREE, 0x9999, 0, 0);
    tu_pipeline_reset();
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.peak_bytes, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(gl_tracker_next_seq(), 1);
}
END_TEST

/* ---- threads ---- */

#define NTHREADS 4
#define PER_THREAD 10000u

static int by_seq(const void *a, const void *b)
{
    const struct gl_block_info *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void *thread_main(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        uint64_t key = ((id + 1) << 36) | (i << 9);
        struct gl_event a = alloc_ev(key, i + 1, GL_MEM_DEVICE, 1);
        gl_dispatch(&a);
        if (i % 2 == 0) {
            struct gl_event f = simple_ev(GL_EV_FREE, key, 0, 0);
            gl_dispatch(&f);
        }
    }
    return NULL; /* exits: its counters are folded into the totals */
}

START_TEST(test_threads)
{
    pthread_t th[NTHREADS];
    for (uintptr_t i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    struct gl_tracker_stats s = tu_tracker_stats();
    uint64_t all = (uint64_t)PER_THREAD * (PER_THREAD + 1) / 2, odd_i = 0;
    for (uint64_t i = 1; i < PER_THREAD; i += 2)
        odd_i += i + 1;
    ck_assert_uint_eq(s.allocs, NTHREADS * PER_THREAD);
    ck_assert_uint_eq(s.frees, NTHREADS * PER_THREAD / 2);
    ck_assert_uint_eq(s.bytes_allocated, NTHREADS * all);
    ck_assert_uint_eq(s.live_blocks, NTHREADS * PER_THREAD / 2);
    ck_assert_uint_eq(s.live_bytes, NTHREADS * odd_i);
    /* The peak is approximate with threads (tracker.c: each thread flushes its share
     * of live bytes every 256 KiB); exact invariants are in test_peak_*. */
    ck_assert_uint_ge(s.peak_bytes + NTHREADS * 256 * 1024, s.live_bytes);

    /* Every allocation got its own number, increasing within its thread. */
    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    ck_assert_uint_eq(n, NTHREADS * PER_THREAD / 2);
    qsort(blocks, n, sizeof *blocks, by_seq);
    unsigned dup_seq = 0, zero_seq = 0, out_of_order = 0;
    for (size_t i = 0; i < n; i++) {
        zero_seq += blocks[i].seq == 0;
        if (i > 0 && blocks[i].seq == blocks[i - 1].seq)
            dup_seq++;
        /* Within a thread (the key's top bits), numbers grow with the index. */
        if (i > 0 && blocks[i].key >> 36 == blocks[i - 1].key >> 36 &&
            blocks[i].key < blocks[i - 1].key)
            out_of_order++;
    }
    gl_tool_unmap(blocks, bytes);
    ck_assert_uint_eq(zero_seq, 0);
    ck_assert_uint_eq(dup_seq, 0);
    ck_assert_uint_eq(out_of_order, 0);
}
END_TEST

/* A peak below what is live at the same moment cannot be: the report prints both
 * ("in use at exit" and "peak"), so a reader sees a contradiction.  Threads that
 * each hold less than the tracker's flush threshold and exit make it happen. */
static void *small_holder(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    struct gl_event a = alloc_ev((id + 1) << 32, 100 * 1024, GL_MEM_DEVICE, 1);
    gl_dispatch(&a);
    return NULL;
}

START_TEST(test_peak_not_below_live_with_threads)
{
    for (uintptr_t i = 0; i < 4; i++) {
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, small_holder, (void *)i), 0);
        pthread_join(th, NULL); /* one after the other: nothing is racy */
    }
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.live_bytes, 4 * 100 * 1024);
    ck_assert_uint_eq(s.live_blocks, 4);
    ck_assert_uint_ge(s.peak_bytes, s.live_bytes);
}
END_TEST

START_TEST(test_peak_exact_one_thread)
{
    do_alloc(0x1000, 300 * 1024, GL_MEM_DEVICE, 1); /* crosses the flush threshold */
    do_alloc(0x2000, 10, GL_MEM_DEVICE, 1);
    do_event(GL_EV_FREE, 0x1000, 0, 0);
    do_alloc(0x3000, 20, GL_MEM_DEVICE, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.peak_bytes, 300 * 1024 + 10);
    ck_assert_uint_eq(s.live_bytes, 30);
}
END_TEST

/* A thread checks peaks against its own view of the shared figures
 * (stats.c), taken again once another thread flushed: a thread that
 * allocated a MiB and exited (its share flushed) is counted in the next
 * peak of a thread that had allocated before it. */
static void *mib_holder(void *arg)
{
    (void)arg;
    do_alloc(0x9000000, 1 << 20, GL_MEM_DEVICE, 1);
    return NULL;
}

START_TEST(test_peak_sees_other_threads_flushes)
{
    do_alloc(0x1000, 100, GL_MEM_DEVICE, 1);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, mib_holder, NULL), 0);
    pthread_join(th, NULL);
    do_alloc(0x2000, 10, GL_MEM_DEVICE, 1);
    do_event(GL_EV_FREE, 0x9000000, 0, 0);
    do_event(GL_EV_FREE, 0x2000, 0, 0);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.live_bytes, 100);
    ck_assert_uint_eq(s.peak_bytes, (1 << 20) + 110);
    unsigned sl = gl_stats_slot(0);
    struct gl_stat_device dev;
    gl_stats_device(sl, &dev);
    ck_assert_uint_eq(dev.peak_bytes, (1 << 20) + 110);
    struct gl_stat_group grp;
    gl_stats_group(sl, GL_MEM_DEVICE, &grp);
    ck_assert_uint_eq(grp.split[GL_SPLIT_ALL].peak_blocks, 3);
    ck_assert_uint_eq(grp.split[GL_SPLIT_ALL].peak_bytes, (1 << 20) + 110);
}
END_TEST

/* One thread's peaks are exact, whatever the order of its allocations and
 * frees: random walks over small and large blocks (both splits, and the
 * whole) in more groups than a thread has cells (evicted cells flush), with
 * the flushes their counts and sizes bring, against a model, every peak
 * compared after every step.  An allocation checks the group's peaks only
 * once it has used up the room its cell keeps (stats.c): the room must never
 * let a new peak by. */
enum { WALK_BLOCKS = 64, WALK_DEVICES = 5, WALK_GROUPS = 2 * WALK_DEVICES };
static const enum gl_mem_kind walk_kinds[2] = {GL_MEM_DEVICE, GL_MEM_MANAGED};

struct walk_group {
    int64_t live_blocks[2], live_bytes[2];
    uint64_t peak_blocks[3], peak_bytes[3];
};

static void walk_check(const struct walk_group *m, int step)
{
    for (int grp = 0; grp < WALK_GROUPS; grp++) {
        struct gl_stat_group got;
        gl_stats_group(gl_stats_slot(grp / 2), walk_kinds[grp % 2], &got);
        for (int sp = 0; sp < 3; sp++) {
            ck_assert_msg(got.split[sp].peak_blocks == m[grp].peak_blocks[sp] &&
                              got.split[sp].peak_bytes == m[grp].peak_bytes[sp],
                          "step %d, group %d, split %d: peak %llu blocks %llu bytes, expected "
                          "%llu and %llu",
                          step, grp, sp, (unsigned long long)got.split[sp].peak_blocks,
                          (unsigned long long)got.split[sp].peak_bytes,
                          (unsigned long long)m[grp].peak_blocks[sp],
                          (unsigned long long)m[grp].peak_bytes[sp]);
        }
    }
}

START_TEST(test_peaks_exact_random_walk)
{
    static const uint64_t seeds[] = {0x9e3779b97f4a7c15ULL, 1, 0xdeadbeefULL, 42};
    for (size_t run = 0; run < sizeof seeds / sizeof seeds[0]; run++) {
        tu_pipeline_reset();
        struct walk_group m[WALK_GROUPS];
        memset(m, 0, sizeof m);
        uint64_t size[WALK_BLOCKS] = {0};
        int group_of[WALK_BLOCKS] = {0};
        uint64_t seed = seeds[run];
        for (int step = 0; step < 5000; step++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned i = (unsigned)(seed >> 33) % WALK_BLOCKS;
            uint64_t key = 0x100000 + (uint64_t)i * 0x10000000;
            if (size[i]) {
                do_event(GL_EV_FREE, key, 0, 0);
                struct walk_group *g = &m[group_of[i]];
                unsigned sp = size[i] < GL_STATS_SMALL_LIMIT ? GL_SPLIT_SMALL : GL_SPLIT_LARGE;
                g->live_blocks[sp]--;
                g->live_bytes[sp] -= (int64_t)size[i];
                size[i] = 0;
                walk_check(m, step);
                continue;
            }
            /* Mostly small, some large; sizes that cross FLUSH_BYTES too. */
            unsigned pick = (unsigned)(seed >> 20) % 16;
            uint64_t n = pick < 11   ? 1 + (seed >> 40) % 4096
                         : pick < 14 ? 4096 + (seed >> 40) % (512 * 1024)
                                     : GL_STATS_SMALL_LIMIT + (seed >> 40) % (3u << 20);
            int grp = (int)((seed >> 12) % WALK_GROUPS);
            struct gl_event ev = alloc_ev(key, n, walk_kinds[grp % 2], 1);
            ev.device = (int16_t)(grp / 2);
            gl_dispatch(&ev);
            size[i] = n;
            group_of[i] = grp;
            struct walk_group *g = &m[grp];
            unsigned sp = n < GL_STATS_SMALL_LIMIT ? GL_SPLIT_SMALL : GL_SPLIT_LARGE;
            g->live_blocks[sp]++;
            g->live_bytes[sp] += (int64_t)n;
            uint64_t all_blocks = (uint64_t)(g->live_blocks[0] + g->live_blocks[1]);
            uint64_t all_bytes = (uint64_t)(g->live_bytes[0] + g->live_bytes[1]);
            if ((uint64_t)g->live_blocks[sp] > g->peak_blocks[sp])
                g->peak_blocks[sp] = (uint64_t)g->live_blocks[sp];
            if ((uint64_t)g->live_bytes[sp] > g->peak_bytes[sp])
                g->peak_bytes[sp] = (uint64_t)g->live_bytes[sp];
            if (all_blocks > g->peak_blocks[GL_SPLIT_ALL])
                g->peak_blocks[GL_SPLIT_ALL] = all_blocks;
            if (all_bytes > g->peak_bytes[GL_SPLIT_ALL])
                g->peak_bytes[GL_SPLIT_ALL] = all_bytes;
            walk_check(m, step);
        }
    }
}
END_TEST

/* A stream-ordered pool the program created is a block (its unused memory is
 * measured at checks), but not a GPU allocation, and outlives contexts. */
START_TEST(test_mempool_blocks)
{
    struct gl_event ev = simple_ev(GL_EV_ALLOC, gl_key_make(GL_NS_MEMPOOL, 0x5000a0), 0, 0);
    ev.kind = GL_MEM_POOL_RESERVE;
    ev.ctx = 0xc1;
    gl_dispatch(&ev);
    struct gl_tracker_stats st;
    gl_tracker_stats(&st);
    ck_assert_uint_eq(st.allocs, 0);
    ck_assert_uint_eq(st.live_blocks, 1);
    struct gl_event cd = simple_ev(GL_EV_CTX_DESTROY, 0, 0, 0);
    cd.ctx = 0xc1;
    gl_dispatch(&cd);
    gl_tracker_stats(&st);
    ck_assert_uint_eq(st.live_blocks, 1);
    do_event(GL_EV_FREE, gl_key_make(GL_NS_MEMPOOL, 0x5000a0), 0, 0);
    gl_tracker_stats(&st);
    ck_assert_uint_eq(st.live_blocks, 0);
    ck_assert_uint_eq(st.frees, 0);
}
END_TEST

/* Checkpoints (gl_tracker_seq_mark): an allocation that starts after a mark
 * was returned, on any thread, is numbered at or above it, although threads
 * take numbers in blocks. */
static _Atomic uint64_t latest_mark;
static _Atomic int marking_done;
static _Atomic uint64_t mark_violations;

static void *number_after_marks(void *arg)
{
    (void)arg;
    while (!atomic_load(&marking_done)) {
        uint64_t mark = atomic_load_explicit(&latest_mark, memory_order_acquire);
        if (gl_tracker_next_seq() < mark)
            atomic_fetch_add(&mark_violations, 1);
    }
    return NULL;
}

START_TEST(test_seq_mark_orders_threads)
{
    /* Sized to catch the race of a mark that reads the counter after bumping
     * the epoch on a 2-core machine (a few seconds). */
    enum { THREADS = 2, MARKS = 2000000 };
    pthread_t t[THREADS];
    atomic_store(&marking_done, 0);
    atomic_store(&mark_violations, 0);
    atomic_store(&latest_mark, 0);
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, number_after_marks, NULL), 0);
    uint64_t last = 0;
    for (int i = 0; i < MARKS; i++) {
        uint64_t m = gl_tracker_seq_mark();
        ck_assert_uint_ge(m, last); /* marks never go back */
        last = m;
        atomic_store_explicit(&latest_mark, m, memory_order_release);
    }
    atomic_store(&marking_done, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t violations = atomic_load(&mark_violations);
    ck_assert_msg(violations == 0, "%llu allocations after a mark were numbered below it",
                  (unsigned long long)violations);
    /* And on this thread: the next number after a mark is above it. */
    uint64_t m = gl_tracker_seq_mark();
    ck_assert_uint_ge(gl_tracker_next_seq(), m);
}
END_TEST

static Suite *tracker_suite(void)
{
    Suite *s = suite_create("tracker");
    TCase *tc = tcase_create("tracker");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_empty_stats);
    tcase_add_test(tc, test_alloc_free_counts);
    tcase_add_test(tc, test_alloc_records_block);
    tcase_add_test(tc, test_sequence_numbers);
    tcase_add_test(tc, test_size_unknown_flag);
    tcase_add_test(tc, test_unknown_free);
    tcase_add_test(tc, test_failed_free_puts_block_back);
    tcase_add_test(tc, test_release_begin_unknown);
    tcase_add_test(tc, test_failed_free_after_address_reused);
    tcase_add_test(tc, test_alloc_at_live_key_is_replaced);
    tcase_add_test(tc, test_spare_nodes_across_frees);
    tcase_add_test(tc, test_ctx_destroy);
    tcase_add_test(tc, test_context_bound_kinds);
    tcase_add_test(tc, test_vmm_life_cycle);
    tcase_add_test(tc, test_vmm_release_unmapped);
    tcase_add_test(tc, test_vmm_unmap_before_release);
    tcase_add_test(tc, test_vmm_retain_then_two_releases);
    tcase_add_test(tc, test_vmm_unmap_two_adjacent_mappings);
    tcase_add_test(tc, test_vmm_handle_mapped_twice);
    tcase_add_test(tc, test_vmm_failed_release_is_undone);
    tcase_add_test(tc, test_vmm_failed_second_release_keeps_released);
    tcase_add_test(tc, test_vmm_mappings_query);
    tcase_add_test(tc, test_snapshot_exact);
    tcase_add_test(tc, test_observers_see_resolved_events);
    tcase_add_test(tc, test_observers_see_derived_frees);
    tcase_add_test(tc, test_apply_none_and_memory);
    tcase_add_test(tc, test_reset_forgets_everything);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_peak_not_below_live_with_threads);
    tcase_add_test(tc, test_peak_exact_one_thread);
    tcase_add_test(tc, test_peak_sees_other_threads_flushes);
    tcase_add_test(tc, test_peaks_exact_random_walk);
    tcase_add_test(tc, test_seq_mark_orders_threads);
    tcase_add_test(tc, test_mempool_blocks);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(tracker_suite)
