/* SPDX-License-Identifier: MIT */
/* lib/python/py_lines.h: CPython line tables decoded without the interpreter.
 * The tables here are built by hand from the documented encodings
 * (Objects/lnotab_notes.txt, Objects/locations.md); tests/python_lines.test
 * checks the decoders against real interpreters. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "common/util.h"
#include "python/py_lines.h"

static int lnotab(const uint8_t *t, size_t len, int first, int off)
{
    return gl_py_lines_line(GL_PY_LNOTAB, t, len, first, off);
}

static int linetable(const uint8_t *t, size_t len, int first, int off)
{
    return gl_py_lines_line(GL_PY_LINETABLE, t, len, first, off);
}

static int locations(const uint8_t *t, size_t len, int first, int off)
{
    return gl_py_lines_line(GL_PY_LOCATIONS, t, len, first, off);
}

START_TEST(test_format_of)
{
    ck_assert_int_eq(gl_py_lines_format_of(8), -1);
    ck_assert_int_eq(gl_py_lines_format_of(9), GL_PY_LNOTAB);
    ck_assert_int_eq(gl_py_lines_format_of(10), GL_PY_LINETABLE);
    ck_assert_int_eq(gl_py_lines_format_of(11), GL_PY_LOCATIONS);
    ck_assert_int_eq(gl_py_lines_format_of(12), GL_PY_LOCATIONS);
    ck_assert_int_eq(gl_py_lines_format_of(13), GL_PY_LOCATIONS);
    ck_assert_int_eq(gl_py_lines_format_of(14), GL_PY_LOCATIONS);
    ck_assert_int_eq(gl_py_lines_format_of(15), -1);
    ck_assert_int_eq(gl_py_lines_format_of(-1), -1);
}
END_TEST

/* ---- 3.9 co_lnotab ---- */

/* lnotab_notes.txt's example: rows 0:1, 6:2, 50:7, 350:207, 361:208, the jump of
 * 300 bytes and 200 lines split as 255,0 45,127 0,73. */
static const uint8_t notes_lnotab[] = {0, 1, 6, 1, 44, 5, 255, 0, 45, 127, 0, 73, 11, 1};

START_TEST(test_lnotab_rows)
{
    const uint8_t *t = notes_lnotab;
    size_t n = GL_ARRAY_SIZE(notes_lnotab);
    ck_assert_int_eq(lnotab(t, n, 0, 0), 1);
    ck_assert_int_eq(lnotab(t, n, 0, 5), 1);
    ck_assert_int_eq(lnotab(t, n, 0, 6), 2);
    ck_assert_int_eq(lnotab(t, n, 0, 49), 2);
    ck_assert_int_eq(lnotab(t, n, 0, 50), 7);
    ck_assert_int_eq(lnotab(t, n, 0, 304), 7);
    ck_assert_int_eq(lnotab(t, n, 0, 305), 7); /* the 255,0 pair changes nothing */
    ck_assert_int_eq(lnotab(t, n, 0, 349), 7);
    ck_assert_int_eq(lnotab(t, n, 0, 350), 207); /* 127 + 73 */
    ck_assert_int_eq(lnotab(t, n, 0, 360), 207);
    ck_assert_int_eq(lnotab(t, n, 0, 361), 208);
    /* The table has no end: past the last row start is still the last row. */
    ck_assert_int_eq(lnotab(t, n, 0, 100000), 208);
    ck_assert_int_eq(lnotab(t, n, 40, 361), 248);
}
END_TEST

START_TEST(test_lnotab_negative_delta_and_first_row)
{
    /* The first row starts at 4, so 0..3 are on co_firstlineno; then -2, +130. */
    static const uint8_t t[] = {4, 1, 2, 0xfe, 8, 127, 0, 3};
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, 0), 10);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, 3), 10);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, 4), 11);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, 6), 9);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, 13), 9);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, 14), 139);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, -1), 10);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 10, -2), 10);
}
END_TEST

START_TEST(test_lnotab_empty_and_truncated)
{
    static const uint8_t t[] = {2, 1, 2, 1, 2};
    ck_assert_int_eq(lnotab(NULL, 0, 7, 0), 7);
    ck_assert_int_eq(lnotab(t, 0, 7, 100), 7);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 7, 3), 8);
    ck_assert_int_eq(lnotab(t, GL_ARRAY_SIZE(t), 7, 100), 9); /* the odd last byte is no pair */
    ck_assert_int_eq(lnotab(t, 1, 7, 100), 7);
}
END_TEST

/* ---- 3.10 co_linetable ---- */

/* lnotab_notes.txt's "final form": [0,6) 1, [6,50) 2, [50,304) 7, [304,350) 7,
 * [350,360) no line, [360,376) 8, an empty range at line 135, [376,380) 208. */
static const uint8_t notes_linetable[] = {6,  1,    44, 1, 254, 5,   46, 0,
                                          10, 0x80, 16, 1, 0,   127, 4,  73};

START_TEST(test_linetable_ranges)
{
    const uint8_t *t = notes_linetable;
    size_t n = GL_ARRAY_SIZE(notes_linetable);
    ck_assert_int_eq(linetable(t, n, 0, 0), 1);
    ck_assert_int_eq(linetable(t, n, 0, 5), 1);
    ck_assert_int_eq(linetable(t, n, 0, 6), 2);
    ck_assert_int_eq(linetable(t, n, 0, 50), 7);
    ck_assert_int_eq(linetable(t, n, 0, 303), 7);
    ck_assert_int_eq(linetable(t, n, 0, 304), 7); /* line delta 0: the same line */
    ck_assert_int_eq(linetable(t, n, 0, 349), 7);
    ck_assert_int_eq(linetable(t, n, 0, 350), -1); /* -128: no line */
    ck_assert_int_eq(linetable(t, n, 0, 359), -1);
    ck_assert_int_eq(linetable(t, n, 0, 360), 8); /* -128 left the running line alone */
    ck_assert_int_eq(linetable(t, n, 0, 375), 8);
    ck_assert_int_eq(linetable(t, n, 0, 376), 208); /* not 135: that range is empty */
    ck_assert_int_eq(linetable(t, n, 0, 379), 208);
    ck_assert_int_eq(linetable(t, n, 0, 380), -1); /* past the end */
    ck_assert_int_eq(linetable(t, n, 0, 1 << 30), -1);
    ck_assert_int_eq(linetable(t, n, 0, -2), 0);
    ck_assert_int_eq(linetable(t, n, 20, 376), 228);
}
END_TEST

START_TEST(test_linetable_negative_and_truncated)
{
    static const uint8_t t[] = {2, 1, 4, 0xfd, 2, 0x81, 2, 5, 2};
    ck_assert_int_eq(linetable(t, GL_ARRAY_SIZE(t), 50, 0), 51);
    ck_assert_int_eq(linetable(t, GL_ARRAY_SIZE(t), 50, 2), 48);
    ck_assert_int_eq(linetable(t, GL_ARRAY_SIZE(t), 50, 5), 48);
    ck_assert_int_eq(linetable(t, GL_ARRAY_SIZE(t), 50, 6), -79); /* -127, as the table says */
    ck_assert_int_eq(linetable(t, GL_ARRAY_SIZE(t), 50, 8), -74);
    ck_assert_int_eq(linetable(t, GL_ARRAY_SIZE(t), 50, 10), -1); /* the odd last byte is no pair */
    ck_assert_int_eq(linetable(t, 4, 50, 5), 48);
    ck_assert_int_eq(linetable(t, 4, 50, 6), -1); /* cut after two entries */
    ck_assert_int_eq(linetable(t, 3, 50, 2), -1);
    ck_assert_int_eq(linetable(NULL, 0, 50, 0), -1);
    ck_assert_int_eq(linetable(NULL, 0, 50, -1), 50);
}
END_TEST

/* ---- 3.11+ location table ---- */

/* An entry's first byte: code, and length in code units (1-8). */
#define HDR(code, units) (uint8_t)(0x80 | (code) << 3 | ((units)-1))

static const uint8_t loc[] = {
    HDR(3, 2),  0x12,                         /* [0,4) short form: 100 */
    HDR(11, 1), 4,    10,                     /* [4,6) one-line +1: 101 */
    HDR(13, 3), 0x07,                         /* [6,12) no column, svarint -3: 98 */
    HDR(15, 1),                               /* [12,14) no location */
    HDR(14, 8), 0x50, 0x5c, 0x02, 0x00,       /* [14,30) long, svarint +5000: 5098, end +0 */
    0x48,       0x03, 0x52, 0x03,             /*   columns 200 and 210 (varints) */
    HDR(12, 1), 1,    2,                      /* [30,32) one-line +2: 5100 */
    HDR(13, 1), 0x48, 0x03,                   /* [32,34) no column, svarint +100: 5200 */
    HDR(10, 2), 0,    5,                      /* [34,38) one-line +0: 5200 */
    HDR(14, 1), 0x51, 0x5c, 0x02, 0x01, 1, 2, /* [38,40) long, svarint -5000: 200, end +1 */
    HDR(0, 8),  0x00,                         /* [40,56) short form: 200 */
};

START_TEST(test_locations_forms)
{
    const uint8_t *t = loc;
    size_t n = GL_ARRAY_SIZE(loc);
    static const struct {
        int off, line;
    } want[] = {
        {0, 100},   {1, 100},   {3, 100},   {4, 101},   {5, 101},   {6, 98},
        {11, 98},   {12, -1},   {13, -1},   {14, 5098}, {29, 5098}, {30, 5100},
        {32, 5200}, {34, 5200}, {37, 5200}, {38, 200},  {39, 200},  {40, 200},
        {55, 200},  {56, -1},   {1000, -1}, {-1, 100},  {-2, 100},
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(want); i++)
        ck_assert_msg(locations(t, n, 100, want[i].off) == want[i].line,
                      "offset %d: line %d, want %d", want[i].off, locations(t, n, 100, want[i].off),
                      want[i].line);
}
END_TEST

START_TEST(test_locations_no_location_keeps_line)
{
    /* No location, then a short form: back on the line before. */
    static const uint8_t t[] = {HDR(11, 1), 0, 1, HDR(15, 2), HDR(15, 1), HDR(1, 1), 0x01};
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 1, 0), 2);
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 1, 2), -1);
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 1, 7), -1);
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 1, 8), 2);
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 1, 10), -1);
}
END_TEST

START_TEST(test_locations_varints)
{
    /* The doc's examples: 63 is 0x3f, 200 is 0x48 0x03; as svarints +31 and +100. */
    static const uint8_t t[] = {HDR(13, 1), 0x3f, HDR(13, 1), 0x48, 0x03,
                                HDR(13, 1), 0x01, HDR(13, 1), 0x00};
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 0, 0), -31);
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 0, 2), 69);
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 0, 4), 69); /* 1 is -0 */
    ck_assert_int_eq(locations(t, GL_ARRAY_SIZE(t), 0, 6), 69);
    /* An overlong varint: chunks past 32 bits dropped, no undefined shifts. */
    uint8_t big[40];
    big[0] = HDR(14, 1);
    memset(big + 1, 0x7f, 30);
    big[31] = 0x00;
    big[32] = HDR(0, 1);
    big[33] = 0;
    (void)locations(big, 34, 0, 0);
    ck_assert_int_eq(locations(big, 34, 0, 2), locations(big, 34, 0, 0));
    ck_assert_int_eq(locations(big, 34, 0, 4), -1);
}
END_TEST

START_TEST(test_locations_truncated)
{
    /* Cut inside the long form's svarint: its range and all after have no line. */
    ck_assert_int_eq(locations(loc, 9, 100, 12), -1);
    ck_assert_int_eq(locations(loc, 9, 100, 11), 98);
    ck_assert_int_eq(locations(loc, 9, 100, 14), -1);
    ck_assert_int_eq(locations(loc, 10, 100, 14), -1);
    ck_assert_int_eq(locations(loc, 12, 100, 14), 5098); /* the columns do not matter */
    ck_assert_int_eq(locations(loc, 12, 100, 30), -1);
    /* A first byte with nothing after it. */
    static const uint8_t t[] = {HDR(13, 1)};
    ck_assert_int_eq(locations(t, 1, 5, 0), -1);
    static const uint8_t s[] = {HDR(3, 1)};
    ck_assert_int_eq(locations(s, 1, 5, 0), 5);
    ck_assert_int_eq(locations(s, 0, 5, 0), -1);
    ck_assert_int_eq(locations(NULL, 0, 5, 0), -1);
    ck_assert_int_eq(locations(NULL, 0, 5, -2), 5);
}
END_TEST

START_TEST(test_locations_garbage)
{
    /* Bytes without the top bit where a first byte belongs are skipped. */
    static const uint8_t zeros[16] = {0};
    ck_assert_int_eq(locations(zeros, GL_ARRAY_SIZE(zeros), 3, 0), 3);
    ck_assert_int_eq(locations(zeros, GL_ARRAY_SIZE(zeros), 3, 2), -1);
    static const uint8_t ff[4] = {0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(locations(ff, GL_ARRAY_SIZE(ff), 3, 0), -1);
    ck_assert_int_eq(locations(ff, GL_ARRAY_SIZE(ff), 3, 63), -1);
}
END_TEST

/* Random tables, each copied to a buffer of exactly its size (so that a sanitizer
 * or the heap's guard pages would catch a read past it), in every format. */
START_TEST(test_random_tables_terminate)
{
    unsigned seed = 12345;
    for (int round = 0; round < 3000; round++) {
        size_t n = (size_t)(rand_r(&seed) % 64);
        uint8_t *t = malloc(n ? n : 1);
        ck_assert_ptr_nonnull(t);
        for (size_t i = 0; i < n; i++)
            t[i] = (uint8_t)rand_r(&seed);
        for (int fmt = GL_PY_LNOTAB; fmt <= GL_PY_LOCATIONS; fmt++)
            for (int off = -2; off < 600; off += 7) {
                int line = gl_py_lines_line((enum gl_py_line_format)fmt, t, n, 1, off);
                if (off < 0)
                    ck_assert_int_eq(line, 1);
            }
        free(t);
    }
}
END_TEST

START_TEST(test_unknown_format)
{
    ck_assert_int_eq(gl_py_lines_line((enum gl_py_line_format)7, notes_lnotab,
                                      GL_ARRAY_SIZE(notes_lnotab), 1, 0),
                     -1);
}
END_TEST

static Suite *python_lines_suite(void)
{
    Suite *s = suite_create("python_lines");
    TCase *tc = tcase_create("python_lines");
    tcase_add_test(tc, test_format_of);
    tcase_add_test(tc, test_lnotab_rows);
    tcase_add_test(tc, test_lnotab_negative_delta_and_first_row);
    tcase_add_test(tc, test_lnotab_empty_and_truncated);
    tcase_add_test(tc, test_linetable_ranges);
    tcase_add_test(tc, test_linetable_negative_and_truncated);
    tcase_add_test(tc, test_locations_forms);
    tcase_add_test(tc, test_locations_no_location_keeps_line);
    tcase_add_test(tc, test_locations_varints);
    tcase_add_test(tc, test_locations_truncated);
    tcase_add_test(tc, test_locations_garbage);
    tcase_add_test(tc, test_random_tables_terminate);
    tcase_add_test(tc, test_unknown_format);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(python_lines_suite)
