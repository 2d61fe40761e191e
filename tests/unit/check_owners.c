/* SPDX-License-Identifier: MIT */
/* lib/check/owners.h: who owns a module, a caller, a static CUDA runtime's
 * code.  Runs in this process: its own modules are real, the "function names"
 * come from a fake namer that counts its calls (naming is what costs minutes in
 * a large process, so the number of calls is part of the contract). */
#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "check/owners.h"
#include "heap/callers.h"

static int named;
static uintptr_t cudart_lo, cudart_hi; /* the "static runtime" the fake namer reports */

static const char *fake_name(uintptr_t ip, void *arg)
{
    (void)arg;
    named++;
    return ip >= cudart_lo && ip < cudart_hi ? "libcudart_static_deadbeef" : "app_function";
}

__attribute__((noinline)) static int app_code(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int runtime_code(int x) { return x * 5 + 2; }

START_TEST(test_owner_of_path)
{
    ck_assert_int_eq(gl_owners_of_path("/usr/lib/libcuda.so.580.1"), GL_OWNER_CUDA);
    ck_assert_int_eq(gl_owners_of_path("/opt/driver/libcuda-580.159.so"), GL_OWNER_CUDA);
    ck_assert_int_eq(gl_owners_of_path("/x/nvidia/cu13/lib/libcudart.so.13"), GL_OWNER_CUDA);
    ck_assert_int_eq(gl_owners_of_path("libcupti.so.13"), GL_OWNER_CUDA);
    /* Vendored by a wheel, with a hash in its name. */
    ck_assert_int_eq(gl_owners_of_path("/site-packages/torch/lib/libcudart-e409450e.so.11.0"),
                     GL_OWNER_CUDA);
    ck_assert_int_eq(gl_owners_of_path("/opt/lib/libcublasLt.so.13"), GL_OWNER_LIB);
    ck_assert_int_eq(gl_owners_of_path("/opt/lib/libcudnn_graph.so.9"), GL_OWNER_LIB);
    ck_assert_int_eq(gl_owners_of_path("/usr/lib/gpuleak/libgpuleak.so"), GL_OWNER_TOOL);
    ck_assert_int_eq(gl_owners_of_path("/usr/lib/libdw.so.1"), GL_OWNER_TOOL);
    ck_assert_int_eq(gl_owners_of_path("/site-packages/torch/lib/libtorch_cuda.so"), GL_OWNER_APP);
    ck_assert_int_eq(gl_owners_of_path("/usr/bin/python3.12"), GL_OWNER_APP);
    ck_assert_int_eq(gl_owners_of_path("(program)"), GL_OWNER_APP);
    ck_assert_int_eq(gl_owners_of_path(NULL), GL_OWNER_APP);
    ck_assert(gl_owners_is_libc("/lib/x86_64-linux-gnu/libc.so.6"));
    ck_assert(gl_owners_is_libc("/lib/libc-2.31.so"));
    ck_assert(!gl_owners_is_libc("/usr/lib/libcuda.so.1") && !gl_owners_is_libc(NULL));
}
END_TEST

START_TEST(test_cudart_function_names)
{
    ck_assert(gl_owners_cudart_function("libcudart_static_1a2b3c"));
    ck_assert(gl_owners_cudart_function("__cudart1042"));
    ck_assert(gl_owners_cudart_function("cudart::globalState::initializeDriver()"));
    ck_assert(gl_owners_cudart_function("cudaMalloc"));
    ck_assert(gl_owners_cudart_function("cudaStreamCreateWithFlags"));
    ck_assert(!gl_owners_cudart_function("cuda_helper"));
    ck_assert(!gl_owners_cudart_function("cudagraph"));
    ck_assert(!gl_owners_cudart_function("main"));
    ck_assert(!gl_owners_cudart_function(NULL));
}
END_TEST

/* This program's modules: its text is APP, its data segments are roots. */
START_TEST(test_modules_of_this_process)
{
    struct gl_owners o;
    ck_assert_int_eq(gl_owners_load(&o), 0);
    ck_assert_uint_gt(o.nmodules, 2);
    for (size_t i = 1; i < o.nmodules; i++)
        ck_assert_uint_le(o.modules[i - 1].text_start, o.modules[i].text_start);
    ck_assert_int_eq(gl_owners_of_ip(&o, (uintptr_t)app_code), GL_OWNER_APP);
    const struct gl_owner_module *m = gl_owners_module_of(&o, (uintptr_t)app_code);
    ck_assert_ptr_nonnull(m);
    ck_assert(!m->has_cudart);
    static int in_data = 1;
    int rooted = 0;
    for (size_t i = 0; i < o.nroots; i++)
        if ((uintptr_t)&in_data >= o.roots[i].start && (uintptr_t)&in_data < o.roots[i].end)
            rooted = 1;
    ck_assert_msg(rooted, "this program's data segment is not a root");
    ck_assert_ptr_null(gl_owners_module_of(&o, 16)); /* nothing maps page 0 */
    gl_owners_free(&o);
}
END_TEST

/* Callers are named only in modules where an allocation stack showed a static
 * runtime; there, the runtime's callers become CUDA's and the rest stay APP. */
START_TEST(test_callers_named_only_where_a_runtime_was_seen)
{
    gl_callers_reset();
    uintptr_t app_ip = (uintptr_t)app_code + 4, rt_ip = (uintptr_t)runtime_code + 4;
    uint32_t app_id = gl_callers_id(app_ip), rt_id = gl_callers_id(rt_ip);
    ck_assert_uint_ne(app_id, 0);
    ck_assert_uint_ne(rt_id, 0);
    cudart_lo = (uintptr_t)runtime_code;
    cudart_hi = cudart_lo + 16;

    struct gl_owners o;
    ck_assert_int_eq(gl_owners_load(&o), 0);
    /* No stack showed a runtime: not one name asked for. */
    named = 0;
    gl_owners_probe_cudart(&o, app_ip, fake_name, NULL);
    ck_assert_int_eq(named, 1);
    named = 0;
    ck_assert_int_eq(gl_owners_classify_callers(&o, fake_name, NULL), 0);
    ck_assert_int_eq(named, 0);
    ck_assert_int_eq(o.callers[app_id], GL_OWNER_APP);
    ck_assert_int_eq(o.callers[rt_id], GL_OWNER_APP);

    /* A stack whose first frame in this module is the runtime's: flagged. */
    gl_owners_probe_cudart(&o, rt_ip, fake_name, NULL);
    ck_assert(gl_owners_module_of(&o, rt_ip)->has_cudart);
    named = 0;
    ck_assert_int_eq(gl_owners_classify_callers(&o, fake_name, NULL), 0);
    ck_assert_int_eq(named, 2);
    ck_assert_int_eq(o.callers[app_id], GL_OWNER_APP);
    ck_assert_int_eq(o.callers[rt_id], GL_OWNER_CUDA);
    ck_assert_int_eq(o.callers[0], GL_OWNER_APP);

    /* Probing a flagged module again costs nothing; no namer, no crash. */
    named = 0;
    gl_owners_probe_cudart(&o, rt_ip, fake_name, NULL);
    gl_owners_probe_cudart(&o, rt_ip, NULL, NULL);
    gl_owners_probe_cudart(&o, 0, fake_name, NULL);
    ck_assert_int_eq(named, 0);
    ck_assert_int_eq(app_code(1) + runtime_code(1), 11);
    gl_owners_free(&o);
    gl_callers_reset();
}
END_TEST

/* A stream buffer's allocation caller, in the C library or libstdc++, by
 * its exported name: TEXT, never followed; the same libraries' other callers
 * stay APP, and no name is asked of the namer for either. */
START_TEST(test_stream_buffers_are_text)
{
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW);
    ck_assert_msg(cxx != NULL, "%s", dlerror());
    static const char *const text[] = {
        "_IO_file_doallocate",
        "_IO_default_doallocate",
        "_ZNSt13basic_filebufIcSt11char_traitsIcEE27_M_allocate_internal_bufferEv",
    };
    static const char *const app[] = {"strdup", "_ZNSs4_Rep9_S_createEmmRKSaIcE"};
    gl_callers_reset();
    uint32_t text_id[3], app_id[2];
    for (int i = 0; i < 3; i++) {
        void *f = dlsym(cxx, text[i]); /* its scope: libstdc++, then libc */
        ck_assert_msg(f != NULL, "%s: %s", text[i], dlerror());
        text_id[i] = gl_callers_id((uintptr_t)f + 8); /* a return address inside it */
    }
    for (int i = 0; i < 2; i++) {
        void *f = dlsym(cxx, app[i]);
        ck_assert_msg(f != NULL, "%s: %s", app[i], dlerror());
        app_id[i] = gl_callers_id((uintptr_t)f + 8);
    }
    struct gl_owners o;
    ck_assert_int_eq(gl_owners_load(&o), 0);
    named = 0;
    ck_assert_int_eq(gl_owners_classify_callers(&o, fake_name, NULL), 0);
    ck_assert_int_eq(named, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(o.callers[text_id[i]] == GL_OWNER_TEXT, "%s: owner %d", text[i],
                      o.callers[text_id[i]]);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(o.callers[app_id[i]] == GL_OWNER_APP, "%s: owner %d", app[i],
                      o.callers[app_id[i]]);
    gl_owners_free(&o);
    gl_callers_reset();
    dlclose(cxx);
}
END_TEST

static Suite *owners_suite(void)
{
    Suite *s = suite_create("owners");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_owner_of_path);
    tcase_add_test(tc, test_cudart_function_names);
    tcase_add_test(tc, test_modules_of_this_process);
    tcase_add_test(tc, test_callers_named_only_where_a_runtime_was_seen);
    tcase_add_test(tc, test_stream_buffers_are_text);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(owners_suite)
