/* SPDX-License-Identifier: MIT */
/* lib/symbol/unloaded_objects.h: an object dlclose'd while gpuleak runs is
 * remembered, and the symbolizer still names its functions from its file; an
 * object another handle keeps loaded is not remembered. */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "symbol/symbolize.h"
#include "symbol/unloaded_objects.h"

#define PROBE GL_TOP_BUILDDIR "/tests/unit/.libs/libunload_probe.so"

static void *load(void)
{
    void *h = dlopen(PROBE, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen %s: %s", PROBE, dlerror());
    return h;
}

static void unload(void *h)
{
    struct gl_unloading u;
    gl_unloaded_objects_begin(h, &u);
    ck_assert(u.found);
    ck_assert_int_eq(dlclose(h), 0);
    gl_unloaded_objects_end(&u);
}

static void setup(void) { gl_unloaded_objects_clear(); }

START_TEST(test_unloaded_object_symbolizes)
{
    void *h = load();
    uintptr_t (*probe)(void) = (uintptr_t(*)(void))dlsym(h, "gl_unload_probe");
    int (*line)(void) = (int (*)(void))dlsym(h, "gl_unload_probe_line");
    ck_assert(probe && line);
    int want_line = line();
    /* An address inside the function, as a captured stack would hold it. */
    uintptr_t ip = (uintptr_t)probe + 4;
    unload(h);
    ck_assert_uint_eq(gl_unloaded_objects_count(), 1);
    const struct gl_unloaded_object *o = gl_unloaded_objects_get(0);
    ck_assert_str_eq(o->path, PROBE);
    ck_assert(o->start <= ip && ip < o->end);
    ck_assert_ptr_null(dlopen(PROBE, RTLD_NOW | RTLD_NOLOAD)); /* really gone */

    struct gl_symbolizer *s = gl_symbolize_open();
    ck_assert_ptr_nonnull(s);
    struct gl_frame f;
    gl_symbolize(s, ip, false, &f);
    ck_assert_msg(f.function && strcmp(f.function, "gl_unload_probe") == 0, "function %s",
                  f.function ? f.function : "(none)");
    ck_assert_msg(f.file && strstr(f.file, "unload_probe.c"), "file %s",
                  f.file ? f.file : "(none)");
    ck_assert_int_eq(f.line, want_line);
    ck_assert_msg(f.object && strstr(f.object, "libunload_probe.so"), "object %s",
                  f.object ? f.object : "(none)");
    gl_symbolize_close(s);
}
END_TEST

/* Two handles: closing one unloads nothing, and nothing is remembered. */
START_TEST(test_still_loaded_is_not_remembered)
{
    void *a = load(), *b = load();
    unload(a);
    ck_assert_uint_eq(gl_unloaded_objects_count(), 0);
    unload(b);
    ck_assert_uint_eq(gl_unloaded_objects_count(), 1);
}
END_TEST

/* The main program's handle names no file to read: nothing to remember. */
START_TEST(test_main_program_handle)
{
    struct gl_unloading u;
    gl_unloaded_objects_begin(dlopen(NULL, RTLD_NOW), &u);
    ck_assert(!u.found);
    gl_unloaded_objects_end(&u);
    ck_assert_uint_eq(gl_unloaded_objects_count(), 0);
}
END_TEST

/* Something mapped where an unloaded object was: its frames name the new
 * occupant, not the old file. */
START_TEST(test_occupied_range_is_left_out)
{
    uintptr_t here = (uintptr_t)&test_occupied_range_is_left_out_fn;
    struct gl_unloaded_object o = {.bias = 0, .start = here - 16, .end = here + 16, .path = PROBE};
    gl_unloaded_objects_add(&o);
    struct gl_symbolizer *s = gl_symbolize_open();
    ck_assert_ptr_nonnull(s);
    struct gl_frame f;
    gl_symbolize(s, here, false, &f);
    ck_assert_msg(f.function && strstr(f.function, "test_occupied_range_is_left_out"),
                  "function %s", f.function ? f.function : "(none)");
    gl_symbolize_close(s);
}
END_TEST

/* A device mapped where an unloaded object was (the CUDA driver maps
 * /dev/nvidiactl into freed ranges): no object's code lives in a device
 * mapping, so the frames still name the unloaded object. */
START_TEST(test_device_mapping_does_not_occupy)
{
    void *h = load();
    uintptr_t (*probe)(void) = (uintptr_t(*)(void))dlsym(h, "gl_unload_probe");
    ck_assert_ptr_nonnull(probe);
    uintptr_t ip = (uintptr_t)probe + 4;
    unload(h);
    const struct gl_unloaded_object *o = gl_unloaded_objects_get(0);
    int fd = open("/dev/zero", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    size_t len = o->end - o->start;
    void *m = mmap((void *)o->start, len, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
    close(fd);
    ck_assert_msg(m == (void *)o->start, "mmap at %#lx: %s", (unsigned long)o->start,
                  m == MAP_FAILED ? strerror(errno) : "elsewhere");
    struct gl_symbolizer *s = gl_symbolize_open();
    ck_assert_ptr_nonnull(s);
    struct gl_frame f;
    gl_symbolize(s, ip, false, &f);
    ck_assert_msg(f.function && strcmp(f.function, "gl_unload_probe") == 0,
                  "function %s in %s", f.function ? f.function : "(none)",
                  f.object ? f.object : "(none)");
    gl_symbolize_close(s);
    munmap(m, len);
}
END_TEST

static Suite *unloaded_suite(void)
{
    Suite *s = suite_create("unloaded_objects");
    TCase *tc = tcase_create("unloaded_objects");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_unloaded_object_symbolizes);
    tcase_add_test(tc, test_still_loaded_is_not_remembered);
    tcase_add_test(tc, test_main_program_handle);
    tcase_add_test(tc, test_occupied_range_is_left_out);
    tcase_add_test(tc, test_device_mapping_does_not_occupy);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(unloaded_suite)
