/* SPDX-License-Identifier: MIT */
/* lib/stack/modules.h: which loaded object an address belongs to. */
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "common/util.h"
#include "stack/modules.h"

static void setup(void) { gl_modules_clear(); }

START_TEST(test_role_for_path)
{
    ck_assert_int_eq(gl_modules_role_for_path("/usr/local/cuda/lib64/libcupti.so.13"), GL_MOD_CUPTI);
    ck_assert_int_eq(gl_modules_role_for_path("libcupti.so"), GL_MOD_CUPTI);
    ck_assert_int_eq(gl_modules_role_for_path("/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                     GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role_for_path("libcuda.so"), GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role_for_path("/usr/local/cuda/lib64/libcudart.so.13"),
                     GL_MOD_CUDART);
    ck_assert_int_eq(gl_modules_role_for_path("libcudart.so.13.0.48"), GL_MOD_CUDART);
    /* pip wheels carry hashed copies. */
    ck_assert_int_eq(gl_modules_role_for_path("/site-packages/torch/lib/libcudart-abc.so"),
                     GL_MOD_CUDART);
    ck_assert_int_eq(gl_modules_role_for_path("/usr/lib/gpuleak/libgpuleak.so"), GL_MOD_SELF);
    ck_assert_int_eq(gl_modules_role_for_path("libgpuleak.so"), GL_MOD_SELF);
    ck_assert_int_eq(gl_modules_role_for_path("/usr/lib/libfoo.so"), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path("libfoo.so"), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path(""), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path(NULL), GL_MOD_OTHER);
}
END_TEST

START_TEST(test_role_for_path_near_misses)
{
    /* Names that merely start like CUDA's libraries. */
    ck_assert_int_eq(gl_modules_role_for_path("/usr/lib/libcudadebugger.so.1"), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path("/usr/lib/libcuda_wrapper.so"), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path("/usr/local/cuda/lib64/libcudart_static.a"),
                     GL_MOD_OTHER);
    /* Only the file name counts, not the directories. */
    ck_assert_int_eq(gl_modules_role_for_path("/opt/libcuda.so.1/libfoo.so"), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path("/opt/libgpuleak/libbar.so"), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role_for_path("/opt/x/libcuda.so.1"), GL_MOD_DRIVER);
}
END_TEST

START_TEST(test_ranges)
{
    ck_assert_int_eq(gl_modules_role(0x1000), GL_MOD_OTHER);
    gl_modules_add_range(0x10000, 0x20000, GL_MOD_DRIVER);
    gl_modules_add_range(0x50000, 0x60000, GL_MOD_CUPTI);
    gl_modules_add_range(0x30000, 0x38000, GL_MOD_SELF);
    ck_assert_int_eq(gl_modules_role(0x10000), GL_MOD_DRIVER); /* start: inside */
    ck_assert_int_eq(gl_modules_role(0x1ffff), GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role(0x20000), GL_MOD_OTHER); /* end: outside */
    ck_assert_int_eq(gl_modules_role(0xffff), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role(0x30000), GL_MOD_SELF);
    ck_assert_int_eq(gl_modules_role(0x55555), GL_MOD_CUPTI);
    /* Between ranges, inside the bounds: the ranges are searched, nothing found. */
    ck_assert_int_eq(gl_modules_role(0x25000), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role(0x40000), GL_MOD_OTHER);
    /* Outside the bounds of all ranges: the fast path. */
    ck_assert_int_eq(gl_modules_role(0), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role(0x60000), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role(UINTPTR_MAX), GL_MOD_OTHER);
}
END_TEST

START_TEST(test_clear)
{
    gl_modules_add_range(0x10000, 0x20000, GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role(0x18000), GL_MOD_DRIVER);
    gl_modules_clear();
    ck_assert_int_eq(gl_modules_role(0x18000), GL_MOD_OTHER);
    gl_modules_add_range(0x18000, 0x18001, GL_MOD_CUDART);
    ck_assert_int_eq(gl_modules_role(0x18000), GL_MOD_CUDART);
    ck_assert_int_eq(gl_modules_role(0x17fff), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role(0x18001), GL_MOD_OTHER);
}
END_TEST

START_TEST(test_generation_changes)
{
    unsigned g0 = gl_modules_generation();
    gl_modules_add_range(0x10000, 0x20000, GL_MOD_DRIVER);
    unsigned g1 = gl_modules_generation();
    ck_assert_uint_ne(g1, g0);
    gl_modules_clear();
    unsigned g2 = gl_modules_generation();
    ck_assert_uint_ne(g2, g1);
    gl_modules_refresh();
    ck_assert_uint_ne(gl_modules_generation(), g2);
    ck_assert_uint_eq(gl_modules_generation(), gl_modules_generation()); /* stable otherwise */
}
END_TEST

START_TEST(test_many_ranges)
{
    /* More ranges than the set holds: the first ones stay, nothing breaks. */
    for (uintptr_t i = 0; i < 40; i++)
        gl_modules_add_range(0x100000 + i * 0x1000, 0x100000 + i * 0x1000 + 0x800, GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role(0x100000), GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role(0x100000 + 31 * 0x1000), GL_MOD_DRIVER);
    ck_assert_int_eq(gl_modules_role(0x100000 + 31 * 0x1000 + 0x800), GL_MOD_OTHER);
}
END_TEST

/* gl_modules_refresh classifies the loaded objects by name: load a copy of a small
 * system library under CUPTI's name and find its code. */
START_TEST(test_refresh_finds_loaded_objects)
{
    const char *src = NULL;
    static const char *const candidates[] = {"/lib/x86_64-linux-gnu/libz.so.1",
                                             "/usr/lib/libz.so.1", "/lib64/libz.so.1",
                                             "/usr/lib64/libz.so.1"};
    for (size_t i = 0; i < GL_ARRAY_SIZE(candidates); i++)
        if (access(candidates[i], R_OK) == 0)
            src = candidates[i];
    if (!src) {
        fprintf(stderr, "check_modules: no libz.so.1 found: refresh test skipped\n");
        return;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[4096], dst[4200];
    snprintf(dir, sizeof dir, "%s/gpuleak-modules-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dst, sizeof dst, "%s/libcupti.so.13", dir);
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(out, 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    close(in);
    close(out);

    void *h = dlopen(dst, RTLD_NOW | RTLD_LOCAL);
    unlink(dst);
    rmdir(dir);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    void *fn = dlsym(h, "zlibVersion");
    ck_assert_ptr_nonnull(fn);

    ck_assert_int_eq(gl_modules_role((uintptr_t)fn), GL_MOD_OTHER); /* not scanned yet */
    gl_modules_refresh();
    ck_assert_int_eq(gl_modules_role((uintptr_t)fn), GL_MOD_CUPTI);
    /* Nothing else of this process is CUDA's: libc, this program. */
    ck_assert_int_eq(gl_modules_role((uintptr_t)&printf), GL_MOD_OTHER);
    ck_assert_int_eq(gl_modules_role((uintptr_t)&test_refresh_finds_loaded_objects_fn),
                     GL_MOD_OTHER);
    dlclose(h);
}
END_TEST

static Suite *modules_suite(void)
{
    Suite *s = suite_create("modules");
    TCase *tc = tcase_create("modules");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_role_for_path);
    tcase_add_test(tc, test_role_for_path_near_misses);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_clear);
    tcase_add_test(tc, test_generation_changes);
    tcase_add_test(tc, test_many_ranges);
    tcase_add_test(tc, test_refresh_finds_loaded_objects);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(modules_suite)
