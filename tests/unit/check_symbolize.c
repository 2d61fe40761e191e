/* SPDX-License-Identifier: MIT */
/* lib/symbol/symbolize.h: addresses of this very test program to function,
 * file and line (libdw), and C++ demangling.  Built with -g -O0; the functions
 * symbolized also carry optimize("O0") and noinline so that the user's CFLAGS
 * (which come last on the command line) cannot inline or move them. */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"
#include "symbol/symbolize.h"

#define TEST_FN __attribute__((noinline, noipa, used, optimize("O0")))

static volatile int sink;
static int call_line, target_line;

TEST_FN uintptr_t gl_test_return_address(void) { return (uintptr_t)__builtin_return_address(0); }

/* The call's line is recorded on the line of the call itself. */
TEST_FN uintptr_t gl_test_caller(void)
{
    /* The call and __LINE__ must share a line: */
    // clang-format off
    uintptr_t ra = gl_test_return_address(); call_line = __LINE__;
    // clang-format on
    sink++; /* keeps the call from being a tail call */
    return ra;
}

/* The function's first line and __LINE__ must be the same line: */
// clang-format off
TEST_FN int gl_test_target(int x) { target_line = __LINE__; return x + sink; }
// clang-format on

TEST_FN int gl_test_neighbour(int x) { return x * 3 + sink; }

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static struct gl_symbolizer *sym;

static void setup(void)
{
    sym = gl_symbolize_open();
    ck_assert_msg(sym != NULL, "gl_symbolize_open failed (libdw.so.1 missing?)");
}

static void teardown(void)
{
    gl_symbolize_close(sym);
    sym = NULL;
}

START_TEST(test_return_address)
{
    uintptr_t ra = gl_test_caller();
    struct gl_frame f;
    gl_symbolize(sym, ra, true, &f);
    ck_assert_uint_eq(f.ip, ra);
    ck_assert_ptr_nonnull(f.function);
    ck_assert_str_eq(f.function, "gl_test_caller");
    ck_assert_ptr_nonnull(f.file);
    ck_assert_str_eq(base(f.file), base(__FILE__));
    ck_assert_int_eq(f.line, call_line);
    ck_assert_ptr_nonnull(f.object);
    ck_assert_str_eq(base(f.object), "check_symbolize");
}
END_TEST

START_TEST(test_function_address)
{
    gl_test_target(1);
    uintptr_t ip = (uintptr_t)&gl_test_target;
    struct gl_frame f;
    gl_symbolize(sym, ip, false, &f);
    ck_assert_ptr_nonnull(f.function);
    ck_assert_str_eq(f.function, "gl_test_target");
    ck_assert_ptr_nonnull(f.file);
    ck_assert_str_eq(base(f.file), base(__FILE__));
    ck_assert_int_eq(f.line, target_line);
}
END_TEST

START_TEST(test_cached_results_are_stable)
{
    uintptr_t ra = gl_test_caller();
    struct gl_frame a, b;
    gl_symbolize(sym, ra, true, &a);
    gl_symbolize(sym, ra, true, &b);
    ck_assert_ptr_eq(a.function, b.function); /* the cached strings */
    ck_assert_str_eq(b.function, "gl_test_caller");
    ck_assert_int_eq(b.line, call_line);
    /* Many other addresses in between make the cache grow. */
    for (uintptr_t i = 0; i < 5000; i++) {
        struct gl_frame x;
        gl_symbolize(sym, (uintptr_t)&gl_test_neighbour + (i % 16), false, &x);
    }
    gl_symbolize(sym, ra, true, &b);
    ck_assert_str_eq(b.function, "gl_test_caller");
    ck_assert_int_eq(b.line, call_line);
}
END_TEST

/* The same address looked up once as a return address (the call before it) and
 * once as an exact address (a signal frame's) must not share one cached answer. */
START_TEST(test_cache_keeps_return_address_flag_apart)
{
    uintptr_t ip = (uintptr_t)&gl_test_neighbour;
    struct gl_symbolizer *fresh = gl_symbolize_open();
    ck_assert_ptr_nonnull(fresh);
    struct gl_frame want;
    gl_symbolize(fresh, ip, true, &want); /* whatever precedes gl_test_neighbour */

    struct gl_frame exact, as_return;
    gl_symbolize(sym, ip, false, &exact);
    ck_assert_str_eq(exact.function, "gl_test_neighbour");
    gl_symbolize(sym, ip, true, &as_return);
    ck_assert_msg((as_return.function == NULL) == (want.function == NULL) &&
                      (!want.function || strcmp(as_return.function, want.function) == 0),
                  "ip %#lx as a return address gives %s, a fresh symbolizer %s", (unsigned long)ip,
                  as_return.function ? as_return.function : "NULL",
                  want.function ? want.function : "NULL");
    ck_assert_int_eq(as_return.line, want.line);
    gl_symbolize_close(fresh);
}
END_TEST

START_TEST(test_unknown_address)
{
    struct gl_frame f;
    memset(&f, 0x5a, sizeof f);
    gl_symbolize(sym, 0x10, true, &f);
    ck_assert_uint_eq(f.ip, 0x10);
    ck_assert_ptr_null(f.function);
    ck_assert_ptr_null(f.file);
    ck_assert_int_eq(f.line, 0);
    ck_assert_ptr_null(f.object);

    /* Anonymous memory belongs to no object. */
    void *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(anon, MAP_FAILED);
    memset(&f, 0x5a, sizeof f);
    gl_symbolize(sym, (uintptr_t)anon + 16, false, &f);
    ck_assert_ptr_null(f.function);
    ck_assert_int_eq(f.line, 0);
    munmap(anon, 4096);
}
END_TEST

/* A C++ name longer than any fixed buffer, demangled whole: a function whose
 * symbol is the mangled name of void f<int, int, ..., int>() with 300 ints
 * (1,508 characters; templates make such names, not long identifiers, which
 * the demangler refuses past about 1,000 characters). */
#define I10 "iiiiiiiiii"
#define I100 I10 I10 I10 I10 I10 I10 I10 I10 I10 I10
__attribute__((noinline, used)) int gl_test_long_name(int x) __asm__("_Z1fI" I100 I100 I100 "Evv");
__attribute__((noinline, used)) int gl_test_long_name(int x) { return x + 1; }

START_TEST(test_demangle_whole)
{
    ck_assert_int_eq(gl_test_long_name(1), 2);
    struct gl_frame f;
    gl_symbolize(sym, (uintptr_t)&gl_test_long_name, false, &f);
    ck_assert_ptr_nonnull(f.function);
    ck_assert_msg(strlen(f.function) == 1508, "%zu: %.40s...%s", strlen(f.function), f.function,
                  f.function + strlen(f.function) - 20);
    ck_assert_int_eq(strncmp(f.function, "void f<int, int, ", 17), 0);
    ck_assert_str_eq(f.function + 1508 - 8, ", int>()");
    ck_assert_ptr_nonnull(f.mangled);
    ck_assert_int_eq(strncmp(f.mangled, "_Z1fIiii", 8), 0);
    /* A name that is not mangled stays as it is. */
    gl_symbolize(sym, (uintptr_t)&gl_test_target, false, &f);
    ck_assert_str_eq(f.function, "gl_test_target");
    ck_assert_ptr_null(f.mangled);
}
END_TEST

static Suite *symbolize_suite(void)
{
    Suite *s = suite_create("symbolize");
    TCase *tc = tcase_create("symbolize");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_return_address);
    tcase_add_test(tc, test_function_address);
    tcase_add_test(tc, test_cached_results_are_stable);
    tcase_add_test(tc, test_cache_keeps_return_address_flag_apart);
    tcase_add_test(tc, test_unknown_address);
    tcase_add_test(tc, test_demangle_whole);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(symbolize_suite)
