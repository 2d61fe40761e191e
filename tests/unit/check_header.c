/* SPDX-License-Identifier: MIT */
/* include/gpuleak.h on its own: no runtime linked, the header compiled as C99,
 * C11 and C++11 with every warning an error (tests/Makefile.inc builds this file
 * three times).  Without gpuleak every call is a no-op with its documented
 * result; with a table published the way the runtime does it, calls reach it.
 * Written in the common subset of C and C++. */
#define _POSIX_C_SOURCE 200809L /* setenv, for the test itself */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuleak.h"
#include "gpuleak_check.h" /* Check's fixture helper: compiles alongside */

START_TEST(test_noop_without_gpuleak)
{
    unsetenv(GPULEAK_API_ENV);
    struct gpuleak_counts c;
    memset(&c, 0xff, sizeof c);
    char buf[16] = "stale";
    int x = 0;
    ck_assert_int_eq(gpuleak_running(), 0);
    ck_assert_int_eq(gpuleak_checkpoint("a"), -1);
    ck_assert_int_eq(gpuleak_leak_check(GPULEAK_CHECK_FULL, NULL), -1);
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_ADDED, "a", buf, sizeof buf), -1);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(gpuleak_count_leaks(NULL, &c), -1);
    for (int k = 0; k < GPULEAK_NKINDS; k++) {
        ck_assert_uint_eq(c.bytes[k], 0);
        ck_assert_uint_eq(c.blocks[k], 0);
    }
    ck_assert_int_eq(gpuleak_ignore(&x), -1);
    ck_assert_int_eq(gpuleak_disable(), -1);
    ck_assert_int_eq(gpuleak_enable(), -1);
    ck_assert_int_eq(gpuleak_pool_create(&x, "p"), -1);
    ck_assert_int_eq(gpuleak_pool_alloc(&x, &x, 4), -1);
    ck_assert_int_eq(gpuleak_pool_free(&x, &x), -1);
    ck_assert_int_eq(gpuleak_pool_destroy(&x), -1);
    struct gpuleak_profile p;
    memset(&p, 0xff, sizeof p);
    ck_assert_int_eq(gpuleak_profile_begin("r"), -1);
    ck_assert_int_eq(gpuleak_profile_end(0, &p, NULL, 0), -1);
    ck_assert_uint_eq(p.duration_ns, 0);
    ck_assert_int_eq(p.ndevices, 0);
    memset(&p, 0xff, sizeof p);
    ck_assert_int_eq(gpuleak_profile_end_sites(0, &p, NULL, 0, 0), -1);
    ck_assert_uint_eq(p.other_thread_events, 0);
    ck_assert_uint_eq(p.tid, 0);
    ck_assert_int_eq(gpuleak_profile_end_sites(0, NULL, NULL, 0, 3), -1);
    strcpy(buf, "stale");
    ck_assert_int_eq(gpuleak_profile_frames(1, buf, sizeof buf), -1);
    ck_assert_str_eq(buf, "");
}
END_TEST

/* A fake runtime: records what reached it. */
static int calls;
static int last_mode;
static const char *last_since;
static int fake_running(void) { return ++calls; }
static int fake_checkpoint(const char *name)
{
    calls++;
    last_since = name;
    return 0;
}
static long fake_leak_check(int mode, const char *since, char *buf, size_t buflen)
{
    calls++;
    last_mode = mode;
    last_since = since;
    if (buf && buflen > 3)
        strcpy(buf, "ok");
    return 7;
}
static int fake_count(const char *since, struct gpuleak_counts *out)
{
    calls++;
    last_since = since;
    out->bytes[GPULEAK_CACHED] = 42;
    return 0;
}
static int fake_ignore(const void *p)
{
    (void)p;
    return ++calls;
}
static int fake_tracking(int delta) { return delta; }
static int fake_pool(int op, const void *pool, const void *addr, size_t size, const char *name)
{
    (void)pool;
    (void)addr;
    (void)name;
    return op * 100 + (int)size;
}

static int fake_profile_begin(const char *name) { return name ? 41 : 40; }
static size_t last_out_size, last_device_size;
static int last_max_sites;
static int fake_profile_end(int region, struct gpuleak_profile *out, size_t out_size,
                            struct gpuleak_profile_device *devices, size_t device_size,
                            int max_devices, int max_sites)
{
    last_out_size = out_size;
    last_device_size = device_size;
    last_max_sites = max_sites;
    if (out)
        out->ndevices = 2;
    if (max_devices > 0)
        devices[0].peak = (unsigned long long)region;
    return max_devices > 0 ? 1 : 0;
}
static long fake_profile_frames(unsigned stack, char *buf, size_t buflen)
{
    if (buflen > 8)
        strcpy(buf, "f.c:1:g\n");
    return (long)stack;
}

static struct gpuleak_api fake;

static void publish(unsigned image, unsigned magic)
{
    fake.magic = magic;
    fake.version = GPULEAK_API_VERSION;
    fake.running = fake_running;
    fake.checkpoint = fake_checkpoint;
    fake.leak_check = fake_leak_check;
    fake.count_leaks = fake_count;
    fake.ignore = fake_ignore;
    fake.tracking = fake_tracking;
    fake.pool = fake_pool;
    fake.profile_begin = fake_profile_begin;
    fake.profile_end = fake_profile_end;
    fake.profile_frames = fake_profile_frames;
    char value[64];
    snprintf(value, sizeof value, "%08x:0x%lx", image, (unsigned long)&fake);
    setenv(GPULEAK_API_ENV, value, 1);
}

START_TEST(test_calls_reach_the_table)
{
    publish(gpuleak_image_id(), GPULEAK_API_MAGIC);
    ck_assert_int_eq(gpuleak_running(), 1);
    ck_assert_int_eq(gpuleak_checkpoint("cp"), 0);
    ck_assert_str_eq(last_since, "cp");
    char buf[16];
    ck_assert_int_eq(gpuleak_leak_check_to(GPULEAK_CHECK_CHANGED, "cp", buf, sizeof buf), 7);
    ck_assert_int_eq(last_mode, GPULEAK_CHECK_CHANGED);
    ck_assert_str_eq(buf, "ok");
    ck_assert_int_eq(gpuleak_leak_check(GPULEAK_CHECK_NEW, NULL), 7);
    ck_assert_int_eq(last_mode, GPULEAK_CHECK_NEW);
    ck_assert_ptr_null(last_since);
    struct gpuleak_counts c;
    ck_assert_int_eq(gpuleak_count_leaks("cp", &c), 0);
    ck_assert_uint_eq(c.bytes[GPULEAK_CACHED], 42);
    ck_assert_uint_eq(c.bytes[GPULEAK_DEFINITE], 0);
    ck_assert_int_eq(gpuleak_disable(), 1);
    ck_assert_int_eq(gpuleak_enable(), -1);
    int x;
    ck_assert_int_eq(gpuleak_pool_alloc(&x, &x, 5), GPULEAK_POOL_ALLOC * 100 + 5);
    ck_assert_int_eq(gpuleak_pool_destroy(&x), GPULEAK_POOL_DESTROY * 100);
    ck_assert_int_eq(gpuleak_profile_begin("r"), 41);
    struct gpuleak_profile p;
    struct gpuleak_profile_device d[1];
    ck_assert_int_eq(gpuleak_profile_end(9, &p, d, 1), 1);
    ck_assert_int_eq(p.ndevices, 2);
    ck_assert_uint_eq(d[0].peak, 9);
    /* The caller's sizes (the runtime writes no more) and every site. */
    ck_assert_uint_eq(last_out_size, sizeof(struct gpuleak_profile));
    ck_assert_uint_eq(last_device_size, sizeof(struct gpuleak_profile_device));
    ck_assert_int_eq(last_max_sites, GPULEAK_PROFILE_SITES);
    /* Sites as asked for (0: none), and no struct for the region at all. */
    ck_assert_int_eq(gpuleak_profile_end_sites(8, NULL, d, 1, 0), 1);
    ck_assert_int_eq(last_max_sites, 0);
    ck_assert_uint_eq(last_device_size, sizeof(struct gpuleak_profile_device));
    ck_assert_uint_eq(d[0].peak, 8);
    ck_assert_int_eq(gpuleak_profile_end_sites(7, &p, d, 1, 3), 1);
    ck_assert_int_eq(last_max_sites, 3);
    ck_assert_int_eq(gpuleak_profile_frames(77, buf, sizeof buf), 77);
    ck_assert_str_eq(buf, "f.c:1:g\n");
    /* A runtime of version 2 has no profiling: the calls say "not running". */
    fake.version = 2;
    ck_assert_int_eq(gpuleak_profile_begin("r"), -1);
    ck_assert_int_eq(gpuleak_profile_end(9, &p, d, 1), -1);
    ck_assert_int_eq(gpuleak_profile_end_sites(9, &p, d, 1, 0), -1);
    ck_assert_int_eq(gpuleak_profile_frames(77, buf, sizeof buf), -1);
    fake.version = GPULEAK_API_VERSION;
}
END_TEST

/* A variable inherited from another program image (exec) names a table that
 * is not here: it must never be followed. */
START_TEST(test_other_image_ignored)
{
    publish(gpuleak_image_id() ^ 1u, GPULEAK_API_MAGIC);
    ck_assert_int_eq(gpuleak_running(), 0);
    ck_assert_int_eq(calls, 0);
}
END_TEST

/* Not finding the table is not remembered: the runtime's constructor may run
 * after the first call (from another library's constructor). */
START_TEST(test_late_table_found)
{
    unsetenv(GPULEAK_API_ENV);
    ck_assert_int_eq(gpuleak_running(), 0);
    publish(gpuleak_image_id(), GPULEAK_API_MAGIC);
    ck_assert_int_eq(gpuleak_running(), 1);
}
END_TEST

/* The image id: stable within the image, 8 hex digits in the variable. */
START_TEST(test_image_id)
{
    ck_assert_uint_eq(gpuleak_image_id(), gpuleak_image_id());
    ck_assert_uint_ne(gpuleak_image_id(), 0);
}
END_TEST

START_TEST(test_bad_magic_ignored)
{
    publish(gpuleak_image_id(), 0x1234);
    ck_assert_int_eq(gpuleak_running(), 0);
}
END_TEST

START_TEST(test_malformed_values_ignored)
{
    static const char *const bad[] = {
        "", "abc", "123", ":0x10", "0000000:0x10", "00000000:0x", "00000000:10", "zzzzzzzz:0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_ptr_null(gpuleak_api_parse(bad[i]));
    ck_assert_ptr_null(gpuleak_api_parse(NULL));
    publish(gpuleak_image_id(), GPULEAK_API_MAGIC);
    char value[64];
    snprintf(value, sizeof value, "%08x:0x%lxzz", gpuleak_image_id(), (unsigned long)&fake);
    ck_assert_ptr_null(gpuleak_api_parse(value));
    snprintf(value, sizeof value, "%08x:0x%lx", gpuleak_image_id(), (unsigned long)&fake);
    ck_assert_ptr_eq(gpuleak_api_parse(value), &fake);
    snprintf(value, sizeof value, "%08x:0x%lx", gpuleak_image_id() + 1u, (unsigned long)&fake);
    ck_assert_ptr_null(gpuleak_api_parse(value));
    snprintf(value, sizeof value, "%08x:0x1%016lx", gpuleak_image_id(), (unsigned long)&fake);
    ck_assert_ptr_null(gpuleak_api_parse(value)); /* more than 64 bits */
}
END_TEST

static Suite *header_suite(void)
{
    Suite *s = suite_create("header");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_noop_without_gpuleak);
    tcase_add_test(tc, test_calls_reach_the_table);
    tcase_add_test(tc, test_other_image_ignored);
    tcase_add_test(tc, test_late_table_found);
    tcase_add_test(tc, test_image_id);
    tcase_add_test(tc, test_bad_magic_ignored);
    tcase_add_test(tc, test_malformed_values_ignored);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(header_suite());
    srunner_set_fork_status(sr, CK_FORK); /* each test starts with no table found */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
