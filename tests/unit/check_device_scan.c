/* SPDX-License-Identifier: MIT */
/* lib/check/device_scan.h: pointers in device memory, over "device" blocks
 * whose contents are host buffers handed out by a fake reader. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "check/device_scan.h"
#include "check/reachability.h"
#include "event/event.h"

#define DEV(i) (0x7e0000000000ULL + (uint64_t)(i)*0x100000ULL)
#define N 8

static uint64_t contents[N][64]; /* each block's first 512 bytes */
static bool unreadable[N];

static bool fake_read(const struct gl_block_info *b, uint64_t offset, void *buf, size_t len,
                      void *arg)
{
    (void)arg;
    size_t i = (size_t)((gl_key_value(b->key) - DEV(0)) / 0x100000);
    if (unreadable[i])
        return false;
    memset(buf, 0, len);
    if (offset < sizeof contents[i])
        memcpy(buf, (char *)contents[i] + offset,
               len < sizeof contents[i] - offset ? len : sizeof contents[i] - offset);
    return true;
}

static void blocks_init(struct gl_block_info *b)
{
    memset(contents, 0, sizeof contents);
    memset(unreadable, 0, sizeof unreadable);
    memset(b, 0, N * sizeof *b);
    for (int i = 0; i < N; i++) {
        b[i].key = DEV(i);
        b[i].size = 1000 + (uint64_t)i; /* sizes tell blocks apart in the sums */
        b[i].kind = GL_MEM_DEVICE;
    }
}

static uint64_t indirect[N];

static void scan(struct gl_block_info *b, struct gl_device_scan *st)
{
    memset(st, 0, sizeof *st);
    ck_assert_int_eq(gl_device_scan(b, N, indirect, fake_read, NULL, st), 0);
}

/* An array of device pointers that the program still holds keeps what it
 * points to reachable; an interior pointer from it, possibly lost. */
START_TEST(test_reachable_array)
{
    struct gl_block_info b[N];
    blocks_init(b);
    b[0].flags = GL_BLK_REACH_START;
    contents[0][0] = DEV(1);
    contents[0][1] = DEV(2) + 16;
    contents[1][5] = DEV(3); /* and on through the chain */
    struct gl_device_scan st;
    scan(b, &st);
    ck_assert(b[1].flags & GL_BLK_REACH_START);
    ck_assert(b[2].flags & GL_BLK_REACH_INTERIOR);
    ck_assert(b[3].flags & GL_BLK_REACH_START);
    ck_assert(!(b[4].flags & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR | GL_BLK_INDIRECT)));
    ck_assert_uint_eq(st.blocks_read, N);
    ck_assert_uint_gt(st.bytes_read, 0);
}
END_TEST

/* A lost array of pointers leads a clique: what it points to is indirectly
 * lost, its bytes counted to the array. */
START_TEST(test_indirect_leaks)
{
    struct gl_block_info b[N];
    blocks_init(b);
    contents[5][0] = DEV(6);
    contents[5][3] = DEV(7) + 8;
    struct gl_device_scan st;
    scan(b, &st);
    ck_assert(!(b[5].flags & GL_BLK_INDIRECT));
    ck_assert(b[6].flags & GL_BLK_INDIRECT);
    ck_assert(b[7].flags & GL_BLK_INDIRECT);
    ck_assert_uint_eq(indirect[5], b[6].size + b[7].size);
    ck_assert_uint_eq(indirect[6], 0);
}
END_TEST

/* A cycle of lost blocks: one leads (definite), the other is indirect; a
 * leader found later by another lost block joins its clique with its bytes. */
START_TEST(test_cycles_and_absorbed_leaders)
{
    struct gl_block_info b[N];
    blocks_init(b);
    contents[1][0] = DEV(2);
    contents[2][0] = DEV(1); /* 1 <-> 2 */
    contents[3][0] = DEV(4); /* 3 leads 4 ... */
    contents[6][0] = DEV(3); /* ... until 6, later, points to 3 */
    struct gl_device_scan st;
    scan(b, &st);
    ck_assert(!(b[1].flags & GL_BLK_INDIRECT));
    ck_assert(b[2].flags & GL_BLK_INDIRECT);
    ck_assert_uint_eq(indirect[1], b[2].size);
    ck_assert(b[3].flags & GL_BLK_INDIRECT);
    ck_assert(b[4].flags & GL_BLK_INDIRECT);
    ck_assert(!(b[6].flags & GL_BLK_INDIRECT));
    ck_assert_uint_eq(indirect[6], b[3].size + b[4].size);
    ck_assert_uint_eq(indirect[3], 0);
}
END_TEST

START_TEST(test_unreadable_and_kinds)
{
    struct gl_block_info b[N];
    blocks_init(b);
    unreadable[0] = true;
    contents[0][0] = DEV(1);
    b[2].kind = GL_MEM_HOST_PINNED; /* not read this way */
    contents[2][0] = DEV(3);
    b[4].flags = GL_BLK_IGNORED;
    contents[4][0] = DEV(5);
    struct gl_device_scan st;
    scan(b, &st);
    ck_assert_uint_eq(st.blocks_unreadable, 1);
    ck_assert(!(b[1].flags & GL_BLK_INDIRECT));
    ck_assert(!(b[3].flags & GL_BLK_INDIRECT));
    ck_assert(!(b[5].flags & GL_BLK_INDIRECT));
    ck_assert(gl_device_scan_readable(GL_MEM_MANAGED));
    ck_assert(!gl_device_scan_readable(GL_MEM_VMM));
}
END_TEST

static Suite *device_scan_suite(void)
{
    Suite *s = suite_create("device_scan");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_reachable_array);
    tcase_add_test(tc, test_indirect_leaks);
    tcase_add_test(tc, test_cycles_and_absorbed_leaders);
    tcase_add_test(tc, test_unreadable_and_kinds);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(device_scan_suite)
