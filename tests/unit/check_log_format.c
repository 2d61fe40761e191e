/* SPDX-License-Identifier: MIT */
/* save/log_format.h: the saved log's events both ways (packed, as writers
 * write them, and the first builds' varints, still read), the header, the
 * check byte, and what a reader must refuse. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "event/api.h"
#include "save/log_format.h"
#include "testutil.h"

static struct gl_event full_event(void)
{
    return (struct gl_event){
        .type = GL_EV_VMM_MAP,
        .kind = GL_MEM_VMM,
        .api = GL_API_cuMemMap,
        .device = -1,
        .flags = GL_EVF_IMPORTED,
        .tid = 0xfedcba98,
        .stack = 0x01020304,
        .key = 0x7f4000000000ULL,
        .size = 2 << 20,
        .seq = 0x1122334455667788ULL,
        .ctx = 0xc1,
        .aux = UINT64_MAX,
    };
}

START_TEST(test_packed_round_trip)
{
    struct gl_event ev = full_event(), back;
    uint8_t body[GL_LOG_EVENT_MAX];
    size_t n = gl_log_format_event_encode(&ev, 123456789, body);
    ck_assert(gl_log_format_event_decode(GL_LOG_EVENT_PACKED, body, n, &back));
    ev.time_ns = 123456789; /* the time written, not ev's */
    ck_assert_mem_eq(&ev, &back, sizeof ev);
    /* Zero fields are left out: a free of a small key is short. */
    struct gl_event fr = {.type = GL_EV_FREE, .api = GL_API_cuMemFree_v2, .key = 0x100};
    n = gl_log_format_event_encode(&fr, 0, body);
    ck_assert_uint_eq(n, 12 + 2);
    ck_assert(gl_log_format_event_decode(GL_LOG_EVENT_PACKED, body, n, &back));
    ck_assert_mem_eq(&fr, &back, sizeof fr);
}
END_TEST

START_TEST(test_packed_refusals)
{
    struct gl_event ev = full_event(), back;
    uint8_t body[GL_LOG_EVENT_MAX], bad[GL_LOG_EVENT_MAX];
    size_t n = gl_log_format_event_encode(&ev, 7, body);
    /* Cut short, or a byte too many. */
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT_PACKED, body, n - 1, &back));
    memcpy(bad, body, n);
    bad[n] = 0;
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT_PACKED, bad, n + 1, &back));
    /* An unknown event type, an unknown memory kind. */
    memcpy(bad, body, n);
    bad[0] = GL_EV_NTYPES;
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT_PACKED, bad, n, &back));
    memcpy(bad, body, n);
    bad[1] = GL_MEM_NKINDS;
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT_PACKED, bad, n, &back));
    /* A length over 8 bytes; a field not in its fewest bytes (a zero top byte). */
    memcpy(bad, body, n);
    bad[8] = (uint8_t)((bad[8] & 0xf0) | 9);
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT_PACKED, bad, n, &back));
    struct gl_event small = {.type = GL_EV_FREE, .key = 0x100};
    size_t m = gl_log_format_event_encode(&small, 0, body);
    uint8_t padded[32];
    memcpy(padded, body, m);
    padded[m] = 0; /* the key 0x100 as 3 bytes: 00 01 00 */
    uint32_t lens;
    memcpy(&lens, padded + 8, 4);
    lens = (lens & ~(0xfu << 8)) | 3u << 8;
    memcpy(padded + 8, &lens, 4);
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT_PACKED, padded, m + 1, &back));
}
END_TEST

START_TEST(test_varint_events_still_read)
{
    /* The first builds' encoding: type, u16 mask (bit 6: key, bit 1: api), varints. */
    uint8_t body[16];
    size_t n = 0;
    body[n++] = GL_EV_FREE;
    body[n++] = (1 << 1) | (1 << 6);
    body[n++] = 0;
    n += gl_log_format_put(body + n, GL_API_cuMemFree_v2);
    n += gl_log_format_put(body + n, 0x7f0000200000ULL);
    struct gl_event back;
    ck_assert(gl_log_format_event_decode(GL_LOG_EVENT, body, n, &back));
    ck_assert_uint_eq(back.type, GL_EV_FREE);
    ck_assert_uint_eq(back.api, GL_API_cuMemFree_v2);
    ck_assert_uint_eq(back.key, 0x7f0000200000ULL);
    ck_assert(!gl_log_format_event_decode(GL_LOG_EVENT, body, n - 1, &back));
}
END_TEST

START_TEST(test_header_and_check)
{
    struct gl_log_header h = {.version = GL_LOG_VERSION,
                              .header_size = GL_LOG_HEADER_SIZE,
                              .pid = 42,
                              .ppid = 1,
                              .start_unix_ns = 5,
                              .clock0_ns = 6,
                              .tsc0 = 7,
                              .ring_slots = 1024,
                              .slot_size = GL_LOG_SLOT_SIZE};
    uint8_t out[GL_LOG_HEADER_SIZE];
    gl_log_format_header_encode(&h, out);
    struct gl_log_header back;
    char err[256];
    ck_assert_int_eq(gl_log_format_header_decode(out, sizeof out, &back, err, sizeof err), 0);
    ck_assert_mem_eq(&h, &back, sizeof h);
    out[8] = GL_LOG_VERSION + 1;
    ck_assert_int_eq(gl_log_format_header_decode(out, sizeof out, &back, err, sizeof err), -1);
    char want[64];
    snprintf(want, sizeof want, "format version %d at byte 8", GL_LOG_VERSION + 1);
    ck_assert_msg(strstr(err, want), "%s", err);
    /* A ring of a size no writer makes. */
    out[8] = GL_LOG_VERSION;
    out[56] = 3;
    ck_assert_int_eq(gl_log_format_header_decode(out, sizeof out, &back, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "bad staging ring (1027 slots of 72 bytes) at byte 56"), "%s", err);
    out[56] = 0;
    /* Format 1 (times in ticks) is still read. */
    out[8] = 1;
    ck_assert_int_eq(gl_log_format_header_decode(out, sizeof out, &back, err, sizeof err), 0);
    ck_assert_uint_eq(back.version, 1);
    ck_assert_int_eq(gl_log_format_header_decode((const uint8_t *)"ELF", 3, &back, err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "not a gpuleak event log"), "%s", err);
    /* The fast check over zero-padded words is the reader's check. */
    uint8_t body[GL_LOG_PADDED_BYTES] = "seventeen bytes!!";
    memset(body + 17, 0, sizeof body - 17);
    ck_assert_uint_eq(gl_log_format_check_padded(body, 17), gl_log_format_check(3, body, 17));
    for (size_t n = 0; n <= GL_LOG_PADDED_BYTES; n++) {
        uint8_t any[GL_LOG_PADDED_BYTES + 8] = {0};
        for (size_t i = 0; i < n; i++)
            any[i] = (uint8_t)(i * 37 + 11);
        ck_assert_uint_eq(gl_log_format_check_padded(any, n), gl_log_format_check(3, any, n));
    }
    uint8_t flipped[sizeof body];
    memcpy(flipped, body, sizeof body);
    flipped[3] ^= 1;
    ck_assert_uint_ne(gl_log_format_check(3, flipped, 17), gl_log_format_check(3, body, 17));
    /* Words in another order are another body. */
    uint8_t swapped[sizeof body];
    memcpy(swapped, body + 8, 8);
    memcpy(swapped + 8, body, 8);
    memcpy(swapped + 16, body + 16, sizeof body - 16);
    ck_assert_uint_ne(gl_log_format_check(3, swapped, 17), gl_log_format_check(3, body, 17));
    /* Version 3's values, as the format's page computes them by hand. */
    ck_assert_uint_eq(gl_log_format_check(3, body, 17), 0x92);
    uint8_t big[1000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 37 + (i >> 8) * 101 + 11);
    ck_assert_uint_eq(gl_log_format_check(3, big, sizeof big), 0x06);
    /* Words 64 apart (512 bytes) swapped: a rotation alone repeats there. */
    uint8_t w0[8];
    memcpy(w0, big, 8);
    memcpy(big, big + 512, 8);
    memcpy(big + 512, w0, 8);
    ck_assert_uint_eq(gl_log_format_check(3, big, sizeof big), 0x8b);
    /* Version 2's check, as files of that version hold it. */
    ck_assert_uint_eq(gl_log_format_check(2, body, 17), 0xc7);
    ck_assert_uint_ne(gl_log_format_check(2, body, 17), gl_log_format_check(2, flipped, 17));
}
END_TEST

/* A slot as the writer stores it (the event's bytes, then the stamp) reads
 * back for its own number only, and a flipped bit in it is found. */
START_TEST(test_slot_round_trip)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = 3,
                          .api = GL_API_cuMemAlloc_v2,
                          .device = -1,
                          .flags = 0x8001,
                          .tid = 4242,
                          .stack = 77,
                          .key = 0x7f0000200000ULL,
                          .size = 1 << 20,
                          .seq = 9,
                          .ctx = 0x55aa,
                          .aux = ~0ULL,
                          .time_ns = 123456789};
    uint64_t v[8];
    memcpy(v, &ev, sizeof v);
    _Alignas(8) uint8_t slot[GL_LOG_SLOT_SIZE]; /* the stamp is read as one word */
    memcpy(slot, v, 64);
    uint64_t stamp = (1000 + 1) | (uint64_t)gl_log_format_slot_check(v) << 56;
    memcpy(slot + 64, &stamp, 8);
    struct gl_event back;
    ck_assert_int_eq(gl_log_format_slot_decode(slot, 1000, &back), 1);
    ck_assert_mem_eq(&back, &ev, sizeof ev);
    /* The same slot one lap earlier or later is not this number's. */
    ck_assert_int_eq(gl_log_format_slot_decode(slot, 1000 + 8192, &back), 0);
    ck_assert_int_eq(gl_log_format_slot_decode(slot, 999, &back), 0);
    for (unsigned bit = 0; bit < 64 * 8; bit += 37) {
        slot[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        ck_assert_int_eq(gl_log_format_slot_decode(slot, 1000, &back), -1);
        slot[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* Two words swapped. */
    memcpy(slot + 16, &v[3], 8);
    memcpy(slot + 24, &v[2], 8);
    ck_assert_int_eq(gl_log_format_slot_decode(slot, 1000, &back), -1);
}
END_TEST

/* A slot read while a writer stores lap after lap into it, as a reader of
 * a running process's file reads the slot its writer has reached: each
 * read is that lap's event, or none (not yet stamped, or being stored
 * again), never a stamp paired with another lap's bytes (-1: "damaged").
 * The writer follows log_writer.c's order: stamp cleared, bytes, stamp. */
static _Alignas(64) uint8_t shared_slot[GL_LOG_SLOT_SIZE];
static _Atomic uint64_t lap_started, stop_laps;

static void lap_words(uint64_t lap, uint64_t v[8])
{
    for (int w = 0; w < 8; w++)
        v[w] = lap * 0x9e3779b97f4a7c15ULL + (uint64_t)w * 0x100000001b3ULL;
}

static void *store_laps(void *arg)
{
    (void)arg;
    for (uint64_t lap = 1; !atomic_load_explicit(&stop_laps, memory_order_relaxed); lap++) {
        uint64_t v[8];
        lap_words(lap, v);
        atomic_store(&lap_started, lap);
        __atomic_store_n((uint64_t *)(shared_slot + 64), 0, __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_release);
        for (int w = 0; w < 8; w++) /* word by word: a reader may see half */
            __atomic_store_n((uint64_t *)shared_slot + w, v[w], __ATOMIC_RELAXED);
        uint64_t stamp = (lap + 1) | (uint64_t)gl_log_format_slot_check(v) << 56;
        __atomic_store_n((uint64_t *)(shared_slot + 64), stamp, __ATOMIC_RELEASE);
    }
    return NULL;
}

START_TEST(test_slot_read_while_stored)
{
    atomic_store(&lap_started, 0);
    atomic_store(&stop_laps, 0);
    memset(shared_slot, 0, sizeof shared_slot);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, store_laps, NULL), 0);
    /* Until 20,000 laps were read whole and 10,000,000 reads tried (the
     * bytes-then-stamp order failed so 6 times in 6), or 20 s on a machine
     * too busy for both threads to run. */
    uint64_t read = 0, tried = 0, damaged = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;; tried++) {
        uint64_t lap = atomic_load(&lap_started);
        struct gl_event ev;
        int got = gl_log_format_slot_decode(shared_slot, lap, &ev);
        if (got < 0)
            damaged++;
        if (got > 0) {
            uint64_t v[8];
            lap_words(lap, v);
            ck_assert_uint_eq(ev.key, v[2]);
            read++;
        }
        if (tried % 4096 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((read >= 20000 && tried >= 10000000) || now.tv_sec - start.tv_sec > 20)
                break;
        }
    }
    atomic_store(&stop_laps, 1);
    pthread_join(t, NULL);
    ck_assert_msg(damaged == 0, "%llu of %llu reads took a stamp for another lap's bytes",
                  (unsigned long long)damaged, (unsigned long long)tried);
    ck_assert_uint_gt(read, 0);
}
END_TEST

static Suite *log_format_suite(void)
{
    Suite *s = suite_create("log_format");
    TCase *tc = tcase_create("log_format");
    tcase_add_test(tc, test_packed_round_trip);
    tcase_add_test(tc, test_packed_refusals);
    tcase_add_test(tc, test_varint_events_still_read);
    tcase_add_test(tc, test_header_and_check);
    tcase_add_test(tc, test_slot_round_trip);
    tcase_add_test(tc, test_slot_read_while_stored);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(log_format_suite)
