/* SPDX-License-Identifier: MIT */
/* lib/check/leak_check.h: outstanding blocks grouped into loss records. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "check/leak_check.h"
#include "testutil.h"
#include "common/util.h"
#include "event/event.h"
#include "python/py_frames.h"

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
    ck_assert_int_eq(gl_leak_check(b, n, NULL, classify_by_aux, &calls, NULL, &r), 0);
    ck_assert_uint_eq(calls, n); /* every block classified once, arg passed through */
    return r;
}

START_TEST(test_empty)
{
    struct gl_leak_result r;
    memset(&r, 0xab, sizeof r);
    ck_assert_int_eq(gl_leak_check(NULL, 0, NULL, gl_leak_check_classify, NULL, NULL, &r), 0);
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

/* ---- --leak-resolution ---- */

/* Stacks as a report shows them: ips of native frames; Python frames as
 * tagged words (code object, instruction offset) with their line. */
#define A 0x401000
#define B 0x402000
#define C 0x403000
#define D 0x404000
#define E 0x405000
#define F 0x406000
#define X 0x407000
#define Y 0x408000
#define PY(code, off) (GL_PY_FRAME_TAG | (uint64_t)(code) << 32 | (off))

struct fake_stack {
    uint32_t id;
    unsigned n;
    uint64_t ip[5];
    int line[5]; /* of Python frames */
};

static const struct fake_stack fake_stacks[] = {
    {21, 5, {A, B, C, D, E}, {0}},
    {12, 5, {A, B, C, D, F}, {0}}, /* 21 but for frame 5 */
    {30, 5, {A, B, X, D, E}, {0}}, /* 21 but for frame 3 */
    {14, 5, {A, Y, C, D, E}, {0}}, /* 21 but for frame 2 */
    {40, 1, {A}, {0}},             /* shorter than 2 frames */
    {41, 1, {A}, {0}},
    {50, 2, {PY(7, 4), A}, {10}},
    {51, 2, {PY(7, 8), A}, {10}},  /* 50's code and line, another instruction */
    {52, 2, {PY(7, 12), A}, {11}}, /* another line */
    {60, 0, {0}, {0}},             /* no frame shown */
    {61, 0, {0}, {0}},
};

static unsigned frames_asked;

static unsigned fake_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    ck_assert_ptr_eq(arg, &frames_asked);
    frames_asked++;
    for (size_t i = 0; i < GL_ARRAY_SIZE(fake_stacks); i++) {
        const struct fake_stack *fs = &fake_stacks[i];
        if (fs->id != stack)
            continue;
        unsigned k = 0;
        for (unsigned j = 0; j < fs->n && k < max; j++, k++)
            out[k] = (struct gl_frame){.ip = fs->ip[j],
                                       .function = "f",
                                       .line = fs->line[j],
                                       .python = gl_py_frames_is_frame(fs->ip[j])};
        return k;
    }
    ck_abort_msg("stack %u asked for", stack);
    return 0;
}

static struct gl_leak_result check_merged(struct gl_block_info *b, size_t n, unsigned frames)
{
    struct gl_leak_result r;
    unsigned calls = 0;
    const struct gl_leak_merge merge = {frames, fake_frames, &frames_asked};
    frames_asked = 0;
    ck_assert_int_eq(gl_leak_check(b, n, NULL, classify_by_aux, &calls, &merge, &r), 0);
    return r;
}

/* The record of these bytes (each test's blocks have sizes of distinct bits). */
static const struct gl_loss_record *by_bytes(const struct gl_leak_result *r, uint64_t bytes)
{
    for (size_t i = 0; i < r->nrecords; i++)
        if (r->records[i].bytes == bytes)
            return &r->records[i];
    ck_abort_msg("no record of %lu bytes", (unsigned long)bytes);
    return NULL;
}

/* Sites agreeing on 4 frames and differing at the 5th merge at low and med;
 * one differing at the 3rd merges with them at low only; one differing at
 * the 2nd never.  Leak kinds and APIs still part records. */
static struct gl_block_info native_blocks[7];
static size_t native_setup(void)
{
    size_t n = 0;
    native_blocks[n++] = blk(0x1000, 1, 21, 1);
    native_blocks[n++] = blk(0x2000, 2, 12, 2);
    native_blocks[n++] = blk(0x3000, 4, 30, 3);
    native_blocks[n++] = blk(0x4000, 8, 14, 4);
    native_blocks[n] = blk(0x5000, 16, 12, 5);
    native_blocks[n++].aux = GL_LEAK_POSSIBLE; /* 12, another leak kind */
    native_blocks[n] = blk(0x6000, 32, 21, 6);
    native_blocks[n++].api = 7; /* 21, another API */
    native_blocks[n++] = blk(0x7000, 64, 30, 7);
    return n;
}

START_TEST(test_resolution_high_is_the_stack)
{
    size_t n = native_setup();
    struct gl_leak_result r = check_merged(native_blocks, n, 0);
    ck_assert_uint_eq(frames_asked, 0); /* no frame needed */
    ck_assert_uint_eq(r.nrecords, 6);
    ck_assert_uint_eq(by_bytes(&r, 1)->stack, 21);
    ck_assert_uint_eq(by_bytes(&r, 2)->stack, 12);
    ck_assert_uint_eq(by_bytes(&r, 4 + 64)->stack, 30);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_resolution_med_merges_four_frames)
{
    size_t n = native_setup();
    struct gl_leak_result r = check_merged(native_blocks, n, 4);
    ck_assert_uint_eq(frames_asked, 4); /* once per distinct stack */
    ck_assert_uint_eq(r.nrecords, 5);
    const struct gl_loss_record *m = by_bytes(&r, 1 + 2);
    ck_assert_uint_eq(m->stack, 12); /* the lowest id of the two */
    ck_assert_uint_eq(m->blocks, 2);
    ck_assert_uint_eq(m->first.seq, 1); /* the oldest block, of stack 21 */
    ck_assert_uint_eq(m->first.stack, 21);
    /* Blocks keep their own stacks, oldest first. */
    ck_assert_uint_eq(r.blocks[m->block_begin].stack, 21);
    ck_assert_uint_eq(r.blocks[m->block_begin + 1].stack, 12);
    ck_assert_uint_eq(by_bytes(&r, 4 + 64)->stack, 30);
    ck_assert_uint_eq(by_bytes(&r, 8)->stack, 14);
    ck_assert_int_eq(by_bytes(&r, 16)->kind, GL_LEAK_POSSIBLE);
    ck_assert_uint_eq(by_bytes(&r, 32)->first.api, 7);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_resolution_low_merges_two_frames)
{
    size_t n = native_setup();
    struct gl_leak_result r = check_merged(native_blocks, n, 2);
    ck_assert_uint_eq(r.nrecords, 4);
    const struct gl_loss_record *m = by_bytes(&r, 1 + 2 + 4 + 64);
    ck_assert_uint_eq(m->stack, 12);
    ck_assert_uint_eq(m->blocks, 4);
    ck_assert_uint_eq(m->seq_min, 1);
    ck_assert_uint_eq(m->seq_max, 7);
    const uint32_t want[] = {21, 12, 30, 30};
    for (unsigned i = 0; i < 4; i++)
        ck_assert_uint_eq(r.blocks[m->block_begin + i].stack, want[i]);
    ck_assert_uint_eq(by_bytes(&r, 8)->stack, 14); /* frame 2 differs */
    ck_assert_uint_eq(by_bytes(&r, 16)->stack, 12);
    ck_assert_uint_eq(by_bytes(&r, 32)->stack, 21);
    gl_leak_check_result_free(&r);
}
END_TEST

START_TEST(test_resolution_python_short_and_empty)
{
    struct gl_block_info b[] = {
        blk(0x1000, 1, 50, 1),  blk(0x2000, 2, 51, 2),  blk(0x3000, 4, 52, 3),
        blk(0x4000, 8, 40, 4),  blk(0x5000, 16, 41, 5), blk(0x6000, 32, 60, 6),
        blk(0x7000, 64, 61, 7), blk(0x8000, 128, 0, 8), blk(0x9000, 256, 0, 9),
    };
    struct gl_leak_result r = check_merged(b, GL_ARRAY_SIZE(b), 2);
    ck_assert_uint_eq(frames_asked, 7); /* each stack but 0, which is none */
    ck_assert_uint_eq(r.nrecords, 6);
    ck_assert_uint_eq(by_bytes(&r, 1 + 2)->stack, 50);  /* one code object, one line */
    ck_assert_uint_eq(by_bytes(&r, 4)->stack, 52);      /* another line */
    ck_assert_uint_eq(by_bytes(&r, 8 + 16)->stack, 40); /* as short as each other */
    ck_assert_uint_eq(by_bytes(&r, 32)->stack, 60);     /* nothing shown: apart */
    ck_assert_uint_eq(by_bytes(&r, 64)->stack, 61);
    ck_assert_uint_eq(by_bytes(&r, 128 + 256)->stack, 0);
    gl_leak_check_result_free(&r);
    /* A stack of 1 frame does not agree with longer ones sharing it. */
    struct gl_block_info c[] = {blk(0x1000, 1, 40, 1), blk(0x2000, 2, 21, 2)};
    r = check_merged(c, 2, 2);
    ck_assert_uint_eq(r.nrecords, 2);
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
    tcase_add_test(tc, test_resolution_high_is_the_stack);
    tcase_add_test(tc, test_resolution_med_merges_four_frames);
    tcase_add_test(tc, test_resolution_low_merges_two_frames);
    tcase_add_test(tc, test_resolution_python_short_and_empty);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(leak_check_suite)
