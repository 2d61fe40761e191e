/* SPDX-License-Identifier: MIT */
/* A C program that is not linked with CUDA's runtime: it dlopens libcudart, allocates
 * and frees a block through it, dlopens libdl_leaker.so (beside this program), calls
 * dl_leak_block(), then dlcloses the library and the runtime and exits 0.
 * Expected: one loss record of 2,222,222 bytes, stack cudaMalloc <- dl_leak_block
 * (dl_leaker.cu) <- main (dl_main.c), though both libraries were unloaded.
 *   dl_main [LIBCUDART]   (or $GPULEAK_TEST_CUDART; default: the toolkit's, by soname)
 * The primary context is retained through the driver API so that it outlives the
 * runtime's unload (as in a program that also uses the driver API); with
 * DL_MAIN_NO_RETAIN=1 it is not, and what the runtime's unload frees is its to free. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GL_CUDA_LIBDIR
#define GL_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif
/* The soname libdl_leaker.so links against (libcudart.so.13): one runtime for both. */
#define CUDART_MAJOR (CUDART_VERSION / 1000)

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
typedef int (*leak_fn)(void);

static void *open_cudart(const char *given, char *used, size_t len)
{
    char soname[64];
    snprintf(soname, sizeof soname, "libcudart.so.%d", CUDART_MAJOR);
    char in_toolkit[PATH_MAX], versioned[PATH_MAX];
    snprintf(in_toolkit, sizeof in_toolkit, "%s/%s", GL_CUDA_LIBDIR, soname);
    snprintf(versioned, sizeof versioned, "/usr/local/cuda-%d.%d/targets/x86_64-linux/lib/%s",
             CUDART_MAJOR, CUDART_VERSION % 1000 / 10, soname);
    const char *tries[] = {given, in_toolkit, versioned, "/usr/local/cuda/lib64/libcudart.so",
                           soname};
    char errors[4096] = "";
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        if (!tries[i] || !*tries[i])
            continue;
        void *h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(used, len, "%s", tries[i]);
            return h;
        }
        size_t l = strlen(errors);
        snprintf(errors + l, sizeof errors - l, "dl_main: %s\n", dlerror());
    }
    fputs(errors, stderr);
    return NULL;
}

/* Keeps device 0's primary context alive past the runtime's unload. */
static int retain_primary_context(void)
{
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu)
        return -1;
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cu, "cuInit");
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(cu, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))dlsym(cu, "cuDevicePrimaryCtxRetain");
    CUdevice dev;
    CUcontext ctx;
    if (!init || !get || !retain || init(0) != CUDA_SUCCESS || get(&dev, 0) != CUDA_SUCCESS ||
        retain(&ctx, dev) != CUDA_SUCCESS)
        return -1;
    return 0; /* the handle stays open, the context retained, until exit */
}

int main(int argc, char **argv)
{
    char used[PATH_MAX];
    void *rt = open_cudart(argc > 1 ? argv[1] : getenv("GPULEAK_TEST_CUDART"), used, sizeof used);
    if (!rt) {
        fprintf(stderr, "dl_main: cannot load the CUDA runtime\n");
        return 90;
    }
    malloc_fn cuda_malloc = (malloc_fn)dlsym(rt, "cudaMalloc");
    free_fn cuda_free = (free_fn)dlsym(rt, "cudaFree");
    if (!cuda_malloc || !cuda_free)
        return 91;
    void *p;
    if (cuda_malloc(&p, 1 << 20) != cudaSuccess || cuda_free(p) != cudaSuccess)
        return 92;
    const char *no_retain = getenv("DL_MAIN_NO_RETAIN");
    if (!(no_retain && *no_retain == '1') && retain_primary_context() < 0)
        return 93;

    /* The library beside this program. */
    char lib[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", lib, sizeof lib - 32);
    if (n <= 0)
        return 94;
    lib[n] = '\0';
    char *slash = strrchr(lib, '/');
    strcpy(slash ? slash + 1 : lib, "libdl_leaker.so");
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dl_main: %s\n", dlerror());
        return 95;
    }
    leak_fn leak = (leak_fn)dlsym(h, "dl_leak_block");
    if (!leak)
        return 96;
    if (leak() != 0) // SITE:dl_main_calls
        return 97;
    if (dlclose(h) != 0 || dlclose(rt) != 0)
        return 98;
    /* Unloaded, unless something else holds them: say which, for the log. */
    void *lib_still = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    void *rt_still = dlopen(used, RTLD_NOW | RTLD_NOLOAD);
    printf("dl_main: after dlclose: libdl_leaker.so %s, runtime %s %s\n",
           lib_still ? "still loaded" : "unloaded", used, rt_still ? "still loaded" : "unloaded");
    if (lib_still)
        dlclose(lib_still);
    if (rt_still)
        dlclose(rt_still);
    printf("dl_main: done\n");
    return 0;
}
