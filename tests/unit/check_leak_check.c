/* SPDX-License-Identifier: MIT */
/* lib/check/leak_check.h: outstanding blocks grouped into loss records. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "check/leak_check.h"
#include "testutil.h"
#include "event/event.h"

static struct gl_block_info blk(uint64_t key, uint64_t size, uint32_t stack, uint64_t seq)
{
    struct gl_block_info b;
    memset(&b, 0, sizeof b);
    b.key = key;
    b.size = size;
    b.stack = stack;
    b.seq = seq;
    b.kind = GL_MEM_DEVICE;
    b.api = 2;
    b.device = 0;
    return b;
}

/* The leak kind is carried in the block's aux field for these tests. */
static enum gl_leak_kind classify_by_aux(const struct gl_block_info *b, void *arg)
{
    (*(unsigned *)arg)++;
    return (enum gl_leak_kind)b->aux;
}

static struct gl_leak_result check(struct gl_block_info *b, size_t n)
{
    struct gl_leak_result r;
    unsigned calls = 0;
    ck_assert_int_eq(gl_leak_check(b, n, NULL, classify_by_aux, &calls, &r), 0);
    ck_assert_uint_eq(calls, n); /* every block classified once, arg passed through */
    return r;
}

START_TEST(test_empty)
{
    struct gl_leak_result r;
    memset(&r, 0xab, sizeof r);
    ck_assert_int_eq(gl_leak_check(NULL, 0, NULL, gl_leak_check_classify, NULL, &r), 0);
    ck_assert_uint_eq(r.nrecords, 0);
    ck_assert_ptr_null(r.records);
    ck_assert_uint_eq(r.in_use.bytes, 0);
    ck_assert_uint_eq(r.in_use.blocks, 0);
    ck_assert_uint_eq(r.imported.blocks, 0);
    ck_assert_uint_eq(r.suppressed.blocks, 0);
    for (int k = 0; k < GL_LEAK_NKINDS; k++) {
        ck_assert_uint_eq(r.kind[k].bytes, 0);
        ck_assert_uint_eq(r.kind[k].blocks, 0);
    }
    gl_leak_check_result_free(&r);
    ck_assert_uint_eq(r.nrecords, 0);
}
END_TEST

START_TEST(test_classify_all_definite)
{
    struct gl_block_info b = blk(1, 1, 1, 1);
    ck_assert_int_eq(gl_leak_check_classify(&b, NULL), GL_LEAK_DEFINITE);
}
END_TEST

START_TEST(test_grouping_by_stack_and_kind)
{
    struct gl_block_info b[] = {
        blk(0x1000, 10, 1, 1), blk(0x2000, 20, 2, 2), blk(0x3000, 30, 1, 3),
        blk(0x4000, 40, 1, 4), blk(0x5000, 50, 1, 5), blk(0x6000, 60, 3, 6),
    };
    b[4].aux = GL_LEAK_POSSIBLE; /* same stack as 1, 3, 4 but another leak kind */
    struct gl_leak_result r = check(b, 6);
    ck_assert_uint_eq(r.nrecords, 4);
    /* Sorted by bytes: stack 2 (20), stack 1 possible (50), stack 3 (60), stack 1 definite (80). */
    ck_assert_uint_eq(r.records[0].stack, 2);
    ck_assert_uint_eq(r.records[0].bytes, 20);
    ck_assert_uint_eq(r.records[0].blocks, 1);
    ck_assert_int_eq(r.records[0].kind, GL_LEAK_DEFINITE);
    ck_assert_uint_eq(r.records[1].stack, 1);
    ck_assert_uint_eq(r.records[1].bytes, 50);
    ck_assert_uint_eq(r.records[1].blocks, 1);
    ck_assert_int_eq(r.records[1].kind, GL_LEAK_POSSIBLE);
    ck_assert_uint_eq(r.records[2].stack, 3);
    ck_assert_uint_eq(r.records[2].bytes, 60);
    ck_assert_uint_eq(r.records[3].stack, 1);
    ck_assert_uint_eq(r.records[3].bytes, 80);
    ck_assert_uint_eq(r.records[3].blocks, 3);
    ck_assert_int_eq(r.records[3].kind, GL_LEAK_DEFINITE);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_memory_kind_and_api_split_records)
{
    /* Without stacks (id 0) records still tell the APIs and memory kinds apart. */
    struct gl_block_info b[] = {
        blk(0x1000, 1, 0, 1), blk(0x2000, 2, 0, 2),  blk(0x3000, 4, 0, 3),
        blk(0x4000, 8, 0, 4), blk(0x5000, 16, 0, 5),
    };
    b[2].api = 7;                   /* another entry point */
    b[3].kind = GL_MEM_HOST_PINNED; /* another memory kind */
    b[3].device = -1;
    b[4].kind = GL_MEM_HOST_PINNED;
    b[4].device = -1;
    struct gl_leak_result r = check(b, 5);
    ck_assert_uint_eq(r.nrecords, 3);
    ck_assert_uint_eq(r.records[0].bytes, 3); /* blocks 1 and 2 */
    ck_assert_uint_eq(r.records[0].blocks, 2);
    ck_assert_uint_eq(r.records[1].bytes, 4);
    ck_assert_uint_eq(r.records[1].first.api, 7);
    ck_assert_uint_eq(r.records[2].bytes, 24);
    ck_assert_uint_eq(r.records[2].first.kind, GL_MEM_HOST_PINNED);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_sorted_ascending_by_bytes)
{
    struct gl_block_info b[] = {
        blk(0x1000, 300, 1, 1),     blk(0x2000, 100, 2, 2), blk(0x3000, 200, 3, 3),
        blk(0x4000, 1000000, 4, 4), blk(0x5000, 1, 5, 5),
    };
    struct gl_leak_result r = check(b, 5);
    ck_assert_uint_eq(r.nrecords, 5);
    const uint64_t want[] = {1, 100, 200, 300, 1000000};
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(r.records[i].bytes, want[i]);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_ties_by_blocks_then_first_allocation)
{
    struct gl_block_info b[] = {
        /* 100 bytes in 2 blocks, stack 1, first allocation #5 */
        blk(0x1000, 50, 1, 5),
        blk(0x2000, 50, 1, 6),
        /* 100 bytes in 1 block, stack 2, #9: fewer blocks sort first */
        blk(0x3000, 100, 2, 9),
        /* 100 bytes in 1 block, stack 3, #1: same blocks, earlier allocation first */
        blk(0x4000, 100, 3, 1),
        /* 100 bytes in 2 blocks, stack 4, first allocation #2 */
        blk(0x5000, 60, 4, 2),
        blk(0x6000, 40, 4, 7),
    };
    struct gl_leak_result r = check(b, 6);
    ck_assert_uint_eq(r.nrecords, 4);
    ck_assert_uint_eq(r.records[0].stack, 3);
    ck_assert_uint_eq(r.records[1].stack, 2);
    ck_assert_uint_eq(r.records[2].stack, 4);
    ck_assert_uint_eq(r.records[3].stack, 1);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_ties_blocks_before_leak_kind)
{
    /* Equal bytes: the record of fewer blocks first, whatever the leak kinds. */
    struct gl_block_info b[] = {
        blk(0x1000, 50, 1, 1), blk(0x2000, 50, 1, 2), /* definite, 2 blocks */
        blk(0x3000, 100, 2, 3),                       /* possible, 1 block */
    };
    b[2].aux = GL_LEAK_POSSIBLE;
    struct gl_leak_result r = check(b, 3);
    ck_assert_uint_eq(r.nrecords, 2);
    ck_assert_int_eq(r.records[0].kind, GL_LEAK_POSSIBLE);
    ck_assert_int_eq(r.records[1].kind, GL_LEAK_DEFINITE);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_seq_range_and_first_block)
{
    struct gl_block_info b[] = {
        blk(0x7000, 10, 1, 7),
        blk(0x3000, 10, 1, 3),
        blk(0x9000, 10, 1, 9),
        blk(0x5000, 10, 1, 5),
    };
    b[1].tid = 1234;
    struct gl_leak_result r = check(b, 4);
    ck_assert_uint_eq(r.nrecords, 1);
    ck_assert_uint_eq(r.records[0].seq_min, 3);
    ck_assert_uint_eq(r.records[0].seq_max, 9);
    ck_assert_uint_eq(r.records[0].first.seq, 3);
    ck_assert_uint_eq(r.records[0].first.key, 0x3000);
    ck_assert_uint_eq(r.records[0].first.tid, 1234);
    ck_assert_uint_eq(r.records[0].blocks, 4);
    ck_assert_uint_eq(r.records[0].bytes, 40);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_device_bits)
{
    struct gl_block_info b[] = {
        blk(0x1000, 1, 1, 1), blk(0x2000, 1, 1, 2), blk(0x3000, 1, 1, 3), /* stack 1 */
        blk(0x4000, 2, 2, 4), blk(0x5000, 2, 2, 5),                       /* stack 2 */
        blk(0x6000, 5, 3, 6),                                             /* stack 3 */
        blk(0x7000, 8, 4, 7), blk(0x8000, 8, 4, 8),                       /* stack 4 */
    };
    b[0].device = 0;
    b[1].device = 2;
    b[2].device = 61; /* the highest ordinal with a bit of its own */
    for (int i = 3; i < 5; i++) {
        b[i].kind = GL_MEM_HOST_PINNED;
        b[i].device = (int16_t)(i == 3 ? -1 : 0); /* host memory, whatever the ordinal */
    }
    b[5].kind = GL_MEM_HOST_REGISTERED;
    b[5].device = -1;
    b[6].device = -1; /* device memory of an unknown device */
    b[7].device = 200;
    struct gl_leak_result r = check(b, 8);
    ck_assert_uint_eq(r.nrecords, 4);
    ck_assert_uint_eq(r.records[0].stack, 1);
    ck_assert_uint_eq(r.records[0].devices, (1ULL << 0) | (1ULL << 2) | (1ULL << 61));
    ck_assert_uint_eq(r.records[1].stack, 2);
    ck_assert_uint_eq(r.records[1].devices, 1ULL << 63);
    ck_assert_uint_eq(r.records[1].devices, 1ULL << GL_RECORD_HOST_BIT);
    ck_assert_uint_eq(r.records[2].devices, 1ULL << 63);
    ck_assert_uint_eq(r.records[3].devices, 1ULL << GL_RECORD_UNKNOWN_DEVICE_BIT);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_totals)
{
    struct gl_block_info b[] = {
        blk(0x1000, 100, 1, 1), blk(0x2000, 200, 2, 2),  blk(0x3000, 400, 3, 3),
        blk(0x4000, 800, 4, 4), blk(0x5000, 1600, 5, 5), blk(0x6000, 3200, 6, 6),
    };
    b[1].aux = GL_LEAK_INDIRECT;
    b[2].aux = GL_LEAK_POSSIBLE;
    b[3].aux = GL_LEAK_REACHABLE;
    b[4].aux = GL_LEAK_CACHED;
    b[5].kind = GL_MEM_IPC;
    /* Imported memory is told by its flag, not by its kind. */
    b[5].flags = GL_BLK_SIZE_UNKNOWN | GL_BLK_IMPORTED;
    struct gl_leak_result r = check(b, 6);
    ck_assert_uint_eq(r.kind[GL_LEAK_DEFINITE].bytes, 3300);
    ck_assert_uint_eq(r.kind[GL_LEAK_DEFINITE].blocks, 2);
    ck_assert_uint_eq(r.kind[GL_LEAK_INDIRECT].bytes, 200);
    ck_assert_uint_eq(r.kind[GL_LEAK_INDIRECT].blocks, 1);
    ck_assert_uint_eq(r.kind[GL_LEAK_POSSIBLE].bytes, 400);
    ck_assert_uint_eq(r.kind[GL_LEAK_REACHABLE].bytes, 800);
    ck_assert_uint_eq(r.kind[GL_LEAK_CACHED].bytes, 1600);
    ck_assert_uint_eq(r.kind[GL_LEAK_CACHED].blocks, 1);
    ck_assert_uint_eq(r.in_use.bytes, 6300);
    ck_assert_uint_eq(r.in_use.blocks, 6);
    ck_assert_uint_eq(r.suppressed.bytes, 0);
    ck_assert_uint_eq(r.suppressed.blocks, 0);
    ck_assert_uint_eq(r.imported.bytes, 3200);
    ck_assert_uint_eq(r.imported.blocks, 1);
    ck_assert_uint_eq(r.nrecords, 6);
    ck_assert_uint_eq(r.records[5].size_unknown, 1);
    ck_assert_uint_eq(r.records[0].size_unknown, 0);
    gl_leak_check_result_free(&r);
    ck_assert_ptr_null(r.records);
}
END_TEST

START_TEST(test_many_blocks)
{
    /* 100,000 blocks over 1,000 stacks, given in reverse order. */
    enum { N = 100000, STACKS = 1000 };
    static struct gl_block_info b[N];
    for (uint64_t i = 0; i < N; i++) {
        uint64_t seq = N - i;
        b[i] = blk(0x7f0000000000ULL + seq * 512, (seq % STACKS) + 1, (uint32_t)(seq % STACKS) + 1,
                   seq);
    }
    struct gl_leak_result r = check(b, N);
    ck_assert_uint_eq(r.nrecords, STACKS);
    unsigned bad = 0;
    for (size_t i = 0; i < r.nrecords; i++) {
        const struct gl_loss_record *rec = &r.records[i];
        if (rec->blocks != N / STACKS || rec->bytes != (uint64_t)rec->stack * (N / STACKS) ||
            rec->seq_min != (rec->stack == 1 ? STACKS : rec->stack - 1) ||
            rec->first.seq != rec->seq_min || (i > 0 && rec->bytes < r.records[i - 1].bytes))
            bad++;
    }
    ck_assert_uint_eq(bad, 0);
    gl_leak_check_result_free(&r);
}
END_TEST

static Suite *leak_check_suite(void)
{
    Suite *s = suite_create("leak_check");
    TCase *tc = tcase_create("leak_check");
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_classify_all_definite);
    tcase_add_test(tc, test_grouping_by_stack_and_kind);
    tcase_add_test(tc, test_memory_kind_and_api_split_records);
    tcase_add_test(tc, test_sorted_ascending_by_bytes);
    tcase_add_test(tc, test_ties_by_blocks_then_first_allocation);
    tcase_add_test(tc, test_ties_blocks_before_leak_kind);
    tcase_add_test(tc, test_seq_range_and_first_block);
    tcase_add_test(tc, test_device_bits);
    tcase_add_test(tc, test_totals);
    tcase_add_test(tc, test_many_blocks);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(leak_check_suite)
