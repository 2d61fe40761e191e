/* SPDX-License-Identifier: MIT */
/* event/codec.h: events as 64-byte little-endian records and as text lines,
 * both read back to the same event; what a reader must refuse. */
#include <check.h>
#include <string.h>

#include "event/api.h"
#include "event/codec.h"
#include "common/util.h"
#include "testutil.h"

static struct gl_event full_event(void)
{
    return (struct gl_event){
        .type = GL_EV_VMM_MAP,
        .kind = GL_MEM_VMM,
        .api = GL_API_cuMemMap,
        .device = -1,
        .flags = GL_EVF_IMPORTED | GL_EVF_DERIVED,
        .tid = 0xfedcba98,
        .stack = 0x01020304,
        .key = 0x7f4000000000ULL,
        .size = 2 << 20,
        .seq = 0x1122334455667788ULL,
        .ctx = 0xc1,
        .aux = gl_key_make(GL_NS_VMM_HANDLE, 0x77),
        .time_ns = 123456789012345ULL,
    };
}

START_TEST(test_binary_round_trip_and_layout)
{
    struct gl_event ev = full_event(), back;
    uint8_t rec[GL_CODEC_RECORD];
    gl_codec_encode(&ev, rec);
    /* Little-endian, in the struct's order, no padding. */
    ck_assert_uint_eq(rec[0], GL_EV_VMM_MAP);
    ck_assert_uint_eq(rec[1], GL_MEM_VMM);
    ck_assert_uint_eq(rec[4] | rec[5] << 8, 0xffff); /* device -1 */
    ck_assert_uint_eq(rec[8], 0x98);
    ck_assert_uint_eq(rec[11], 0xfe);
    ck_assert_uint_eq(rec[32], 0x88); /* seq's low byte */
    ck_assert_uint_eq(rec[63], 0x00);
    /* On this machine, the struct's own bytes: a writer may copy events. */
    ck_assert(memcmp(rec, &ev, sizeof ev) == 0);
    memset(&back, 0xee, sizeof back);
    ck_assert(gl_codec_decode(rec, &back));
    ck_assert(memcmp(&back, &ev, sizeof ev) == 0);
}
END_TEST

START_TEST(test_binary_refuses_what_is_no_event)
{
    struct gl_event ev = full_event(), back;
    uint8_t rec[GL_CODEC_RECORD];
    gl_codec_encode(&ev, rec);
    rec[0] = GL_EV_NTYPES; /* a type from a newer writer */
    ck_assert(!gl_codec_decode(rec, &back));
    rec[0] = GL_EV_NONE;
    ck_assert(!gl_codec_decode(rec, &back));
    rec[0] = GL_EV_ALLOC;
    rec[1] = GL_MEM_NKINDS;
    ck_assert(!gl_codec_decode(rec, &back));
}
END_TEST

START_TEST(test_text_round_trip)
{
    struct gl_event ev = full_event(), back;
    char line[512], err[256];
    size_t n = gl_codec_format(&ev, line, sizeof line);
    ck_assert_uint_eq(n, strlen(line));
    ck_assert_str_eq(line, "vmm_map key=0x7f4000000000 size=2097152 kind=vmm api=cuMemMap "
                           "device=-1 flags=imported|derived stack=16909060 "
                           "seq=1234605616436508552 tid=4275878552 ctx=0xc1 aux=vmm:0x77 "
                           "time=123456789012345");
    ck_assert_int_eq(gl_codec_parse(line, &back, err, sizeof err), 0);
    ck_assert(memcmp(&back, &ev, sizeof ev) == 0);
    /* Every type by its name; zero fields left out. */
    for (unsigned t = 1; t < GL_EV_NTYPES; t++) {
        struct gl_event e = {.type = (uint8_t)t};
        ck_assert_ptr_nonnull(gl_codec_type_name(t));
        gl_codec_format(&e, line, sizeof line);
        ck_assert_str_eq(line, gl_codec_type_name(t));
        ck_assert_int_eq(gl_codec_parse(line, &back, err, sizeof err), 0);
        ck_assert_uint_eq(back.type, t);
    }
    ck_assert_ptr_null(gl_codec_type_name(GL_EV_NTYPES));
    /* A namespaced key, and a plain one with the same value, differ. */
    struct gl_event k = {.type = GL_EV_FREE, .key = gl_key_make(GL_NS_ARRAY, 0x1234)};
    gl_codec_format(&k, line, sizeof line);
    ck_assert_str_eq(line, "free key=array:0x1234");
    ck_assert_int_eq(gl_codec_parse("  free   key=0x1234\t", &back, err, sizeof err), 0);
    ck_assert_uint_eq(back.key, 0x1234);
    /* A line cut short says how long it wanted to be. */
    char small[8];
    ck_assert_uint_eq(gl_codec_format(&ev, small, sizeof small), n);
    ck_assert_str_eq(small, "vmm_map");
}
END_TEST

START_TEST(test_text_errors)
{
    struct gl_event ev;
    char err[256];
    static const struct {
        const char *line, *want;
    } bad[] = {
        {"", "unknown event type ''"},
        {"none key=1", "unknown event type 'none'"},
        {"alloc size", "'size' is not name=value"},
        {"alloc size=", "bad value in 'size='"},
        {"alloc size=-1", "bad value in 'size=-1'"},
        {"alloc size=12kb", "bad value in 'size=12kb'"},
        {"alloc tid=4294967296", "bad value in 'tid=4294967296'"},
        {"alloc device=40000", "bad value in 'device=40000'"},
        {"alloc kind=gpu", "bad value in 'kind=gpu'"},
        {"alloc api=cudaMalloc", "bad value in 'api=cudaMalloc'"},
        {"alloc key=vmm:0xf000000000000000", "bad value in 'key=vmm:0xf000000000000000'"},
        {"alloc flags=", "bad value in 'flags='"},
        {"alloc color=red", "unknown field 'color'"},
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(bad); i++) {
        err[0] = '\0';
        ck_assert_msg(gl_codec_parse(bad[i].line, &ev, err, sizeof err) == -1, "'%s' parsed",
                      bad[i].line);
        ck_assert_str_eq(err, bad[i].want);
    }
    /* The client API's calls have names too. */
    ck_assert_int_eq(gl_codec_parse("free api=gpuleak_pool_free", &ev, err, sizeof err), 0);
    ck_assert_uint_eq(ev.api, GL_API_CLIENT_POOL_FREE);
    ck_assert_uint_eq(gl_api_of_name("gpuleak_pool_alloc"), GL_API_CLIENT_POOL_ALLOC);
    ck_assert_uint_eq(gl_api_of_name("cuMemFree_v2"), GL_API_cuMemFree_v2);
}
END_TEST

static Suite *codec_suite(void)
{
    Suite *s = suite_create("codec");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_binary_round_trip_and_layout);
    tcase_add_test(tc, test_binary_refuses_what_is_no_event);
    tcase_add_test(tc, test_text_round_trip);
    tcase_add_test(tc, test_text_errors);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(codec_suite)
