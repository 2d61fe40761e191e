/* SPDX-License-Identifier: MIT */
/* lib/common/out.h: report lines prefixed "==PID== ", buffering, and sizes with
 * thousands separators. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "common/out.h"

static off_t file_size(int fd)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    return st.st_size;
}

START_TEST(test_commas)
{
    char buf[GL_U64_COMMAS_LEN];
    ck_assert_str_eq(gl_out_u64_commas(buf, 0), "0");
    ck_assert_str_eq(gl_out_u64_commas(buf, 7), "7");
    ck_assert_str_eq(gl_out_u64_commas(buf, 999), "999");
    ck_assert_str_eq(gl_out_u64_commas(buf, 1000), "1,000");
    ck_assert_str_eq(gl_out_u64_commas(buf, 12345), "12,345");
    ck_assert_str_eq(gl_out_u64_commas(buf, 100000), "100,000");
    ck_assert_str_eq(gl_out_u64_commas(buf, 999999), "999,999");
    ck_assert_str_eq(gl_out_u64_commas(buf, 1048576), "1,048,576");
    ck_assert_str_eq(gl_out_u64_commas(buf, UINT64_MAX), "18,446,744,073,709,551,615");
    ck_assert_uint_eq(strlen(buf) + 1, GL_U64_COMMAS_LEN); /* the longest fits exactly */
    ck_assert_ptr_eq(gl_out_u64_commas(buf, 1), buf);
}
END_TEST

START_TEST(test_line_prefix)
{
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, 4242);
    gl_out_line(&o, "hello %s, %d", "world", 42);
    gl_out_line(&o, "%s", "");
    gl_out_line(&o, "last");
    ck_assert(gl_out_flush(&o));
    char *text = tu_slurp(fd, NULL);
    ck_assert_str_eq(text, "==4242== hello world, 42\n==4242==\n==4242== last\n");
    free(text);
    close(fd);
}
END_TEST

START_TEST(test_empty_line_has_no_trailing_space)
{
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, 1);
    gl_out_line(&o, "%s", "");
    gl_out_flush(&o);
    char *text = tu_slurp(fd, NULL);
    ck_assert_str_eq(text, "==1==\n");
    free(text);
    close(fd);
}
END_TEST

START_TEST(test_text_is_unprefixed)
{
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, 77);
    gl_out_text(&o, "{\n   raw\n}\n", 11);
    gl_out_line(&o, "after");
    gl_out_flush(&o);
    char *text = tu_slurp(fd, NULL);
    ck_assert_str_eq(text, "{\n   raw\n}\n==77== after\n");
    free(text);
    close(fd);
}
END_TEST

START_TEST(test_buffered_until_flush)
{
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, 5);
    gl_out_line(&o, "one");
    ck_assert_int_eq(file_size(fd), 0); /* nothing written yet */
    ck_assert(gl_out_flush(&o));
    ck_assert_int_eq(file_size(fd), (off_t)strlen("==5== one\n"));
    ck_assert(gl_out_flush(&o)); /* an empty flush writes nothing */
    ck_assert_int_eq(file_size(fd), (off_t)strlen("==5== one\n"));
    close(fd);
}
END_TEST

START_TEST(test_more_than_buffer)
{
    /* 3000 lines of 22 bytes: 66,000 bytes through an 8 KiB buffer. */
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, 12345);
    size_t want_len = 0;
    char *want = malloc(3000 * 32);
    ck_assert_ptr_nonnull(want);
    bool saw_partial_write = false;
    for (int i = 0; i < 3000; i++) {
        gl_out_line(&o, "line %06d", i);
        want_len += (size_t)sprintf(want + want_len, "==12345== line %06d\n", i);
        off_t sz = file_size(fd);
        /* What reached the file is always whole buffers. */
        ck_assert_int_eq(sz % (off_t)sizeof o.buf, 0);
        if (sz > 0)
            saw_partial_write = true;
    }
    ck_assert(saw_partial_write);
    ck_assert(gl_out_flush(&o));
    size_t len;
    char *text = tu_slurp(fd, &len);
    ck_assert_uint_eq(len, want_len);
    ck_assert_uint_eq(len, 66000);
    ck_assert(memcmp(text, want, len) == 0);
    free(text);
    free(want);
    close(fd);
}
END_TEST

START_TEST(test_long_line_is_truncated_not_lost)
{
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, 9);
    char *big = malloc(10000);
    ck_assert_ptr_nonnull(big);
    memset(big, 'a', 9999);
    big[9999] = '\0';
    gl_out_line(&o, "%s", big);
    gl_out_line(&o, "next");
    gl_out_flush(&o);
    size_t len;
    char *text = tu_slurp(fd, &len);
    /* prefix, one space, 4095 characters, newline; then the next line. */
    ck_assert_uint_eq(len, strlen("==9== ") + 4095 + 1 + strlen("==9== next\n"));
    ck_assert(strncmp(text, "==9== aaaa", 10) == 0);
    ck_assert_str_eq(text + strlen("==9== ") + 4095, "\n==9== next\n");
    free(text);
    free(big);
    close(fd);
}
END_TEST

/* Into memory: bare lines, cut to fit, always NUL-terminated. */
START_TEST(test_memory_sink)
{
    char buf[32];
    memset(buf, 'x', sizeof buf);
    struct gl_out o;
    gl_out_init_mem(&o, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    gl_out_line(&o, "hello %d", 1);
    gl_out_line(&o, "%s", "");
    ck_assert_str_eq(buf, ""); /* buffered until a flush */
    ck_assert(gl_out_flush(&o));
    ck_assert_str_eq(buf, "hello 1\n\n");
    ck_assert(!o.truncated);
    gl_out_line(&o, "a line too long for what is left");
    gl_out_note(&o, "note");
    ck_assert(gl_out_flush(&o));
    ck_assert_uint_eq(strlen(buf), sizeof buf - 1);
    ck_assert_str_eq(buf, "hello 1\n\na line too long for wh");
    ck_assert(o.truncated);
    gl_out_line(&o, "more");
    ck_assert(gl_out_flush(&o));
    ck_assert_uint_eq(strlen(buf), sizeof buf - 1);
}
END_TEST

START_TEST(test_failed_write)
{
    struct gl_out o;
    gl_out_init(&o, -1, 3); /* not a descriptor: every write fails */
    gl_out_line(&o, "lost");
    ck_assert(!gl_out_flush(&o));
    ck_assert(o.failed);
    gl_out_line(&o, "also lost");
    ck_assert(!gl_out_flush(&o));
    ck_assert_uint_eq(o.len, 0);
}
END_TEST

START_TEST(test_write_all_pipe)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert(gl_out_write_all(p[1], "abc\n", 4));
    char buf[8] = {0};
    ck_assert_int_eq(read(p[0], buf, sizeof buf), 4);
    ck_assert_str_eq(buf, "abc\n");
    ck_assert(gl_out_write_all(p[1], "", 0));
    close(p[0]);
    close(p[1]);
    ck_assert(!gl_out_write_all(-1, "x", 1));
}
END_TEST

static Suite *out_suite(void)
{
    Suite *s = suite_create("out");
    TCase *tc = tcase_create("out");
    tcase_add_test(tc, test_commas);
    tcase_add_test(tc, test_line_prefix);
    tcase_add_test(tc, test_empty_line_has_no_trailing_space);
    tcase_add_test(tc, test_text_is_unprefixed);
    tcase_add_test(tc, test_buffered_until_flush);
    tcase_add_test(tc, test_more_than_buffer);
    tcase_add_test(tc, test_long_line_is_truncated_not_lost);
    tcase_add_test(tc, test_failed_write);
    tcase_add_test(tc, test_memory_sink);
    tcase_add_test(tc, test_write_all_pipe);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(out_suite)
