/* SPDX-License-Identifier: MIT */
/* Every path to the driver's entry points, against the fake driver
 * (fake_cuda.c), under gpuleak --intercept=driver (tests/driver.test): what
 * each path hands out, what the calls return, and which blocks the report
 * must show.  Prints "ok:"/"FAIL:" lines; exits 1 if anything failed.
 * Leaks: 1,000 (linked), 2,000 (dlsym on the handle), 4,000
 * (cuGetProcAddress), 5,000 (cuGetProcAddress, per-thread stream) bytes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

int nx_probe(void);
int nx_b_loaded(void);

static int failed;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failed |= !ok;
}

/* Whether fn lies in an object whose name contains part. */
static int in_object(const void *fn, const char *part)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, part);
}

/* One block, its address forgotten: lost. */
static __attribute__((noinline)) CUresult leak(alloc_fn fn, size_t n)
{
    volatile CUdeviceptr p = 0;
    CUresult rc = fn((CUdeviceptr *)&p, n);
    p = 0;
    return rc;
}

static __attribute__((noinline)) void linked(void)
{
    check(leak(cuMemAlloc_v2, 1000) == CUDA_SUCCESS, "cuMemAlloc_v2 linked");
}

static __attribute__((noinline)) void by_dlsym(void *h)
{
    alloc_fn fn = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    check(in_object((void *)fn, "libgpuleak"), "dlsym(libcuda, cuMemAlloc_v2) gives the hook");
    check(leak(fn, 2000) == CUDA_SUCCESS, "allocation through it");
}

static __attribute__((noinline)) void by_default_scope(void)
{
    alloc_fn fn = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    free_fn fr = (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree_v2");
    check(in_object((void *)fn, "libgpuleak") && in_object((void *)fr, "libgpuleak"),
          "dlsym(RTLD_DEFAULT) gives the hooks");
    volatile CUdeviceptr p = 0;
    check(fn((CUdeviceptr *)&p, 3000) == CUDA_SUCCESS && fr(p) == CUDA_SUCCESS,
          "allocated and freed through them");
    p = 0;
    check(fr(0xdead000) == CUDA_ERROR_INVALID_VALUE, "the driver's own error comes back");
}

static __attribute__((noinline)) void by_proc_address(void *h)
{
    proc_fn proc = (proc_fn)dlsym(h, "cuGetProcAddress_v2");
    check(in_object((void *)proc, "libgpuleak"), "dlsym(libcuda, cuGetProcAddress_v2): the hook");
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    check(proc("cuGetProcAddress", &fn, 12000, 0, &st) == CUDA_SUCCESS &&
              in_object(fn, "libgpuleak"),
          "cuGetProcAddress(cuGetProcAddress) gives the hook");
    check(proc("cuMemAlloc", &fn, 12000, 0, &st) == CUDA_SUCCESS && in_object(fn, "libgpuleak"),
          "cuGetProcAddress(cuMemAlloc, 12000) gives the hook");
    check(leak((alloc_fn)fn, 4000) == CUDA_SUCCESS, "allocation through it");
    check(proc("cuMemAllocAsync", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) ==
                  CUDA_SUCCESS &&
              in_object(fn, "libgpuleak"),
          "cuGetProcAddress(cuMemAllocAsync, per-thread stream) gives the hook");
    volatile CUdeviceptr p = 0;
    check(((alloc_async_fn)fn)((CUdeviceptr *)&p, 5000, CU_STREAM_PER_THREAD) == CUDA_SUCCESS,
          "stream-ordered allocation through it");
    p = 0;
    /* A variant no hook knows: the driver's function, untouched. */
    check(proc("cuMemAlloc", &fn, 99000, 0, &st) == CUDA_SUCCESS && in_object(fn, "libcuda"),
          "cuGetProcAddress(cuMemAlloc, 99000): an unknown variant, untouched");
    volatile CUdeviceptr q = 0;
    check(((alloc_fn)fn)((CUdeviceptr *)&q, 6000) == CUDA_SUCCESS, "called as it is");
    q = 0;
    check(proc("cuNoSuchFunction", &fn, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND &&
              st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
          "a missing entry point: the driver's answer");
}

int main(void)
{
    check(cuInit(0) == CUDA_SUCCESS, "cuInit through the exported hook");
    check(in_object((void *)cuMemAlloc_v2, "libgpuleak"), "cuMemAlloc_v2 binds to the hook");
    linked();
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    check(h != NULL, "dlopen(libcuda.so.1)");
    by_dlsym(h);
    by_default_scope();
    by_proc_address(h);
    if (!getenv("GL_TEST_OTHER_DLSYM"))
        check(nx_b_loaded() && nx_probe() == 2,
          "dlsym(RTLD_NEXT) from a library still finds the next object's symbol");
    int (*self)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nx_target");
    check(self && self() == 1, "dlsym(RTLD_DEFAULT) of a program symbol");
    void *outer = dlopen("libscope_outer.so", RTLD_NOW | RTLD_LOCAL);
    int (*probe)(void) = outer ? (int (*)(void))dlsym(outer, "scope_probe") : NULL;
    check(probe && probe() == 42,
          "dlsym(RTLD_DEFAULT) from a library opened RTLD_LOCAL finds its dependency's symbol");
    /* dlerror() after a lookup that succeeded says nothing (POSIX's idiom). */
    (void)dlerror();
    void *found = dlsym(h, "cuDriverGetVersion");
    check(found && dlerror() == NULL, "dlerror() after a driver lookup that succeeded: none");
    (void)dlerror();
    found = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    check(found && dlerror() == NULL, "dlerror() after an exported hook's lookup: none");
    (void)dlerror();
    found = dlsym(h, "cuNoSuchThing");
    check(!found && dlerror() != NULL, "a lookup that fails: dlerror() says why");
    printf("entry_paths: %s\n", failed ? "FAILED" : "done");
    return failed;
}
