/* SPDX-License-Identifier: MIT */
/* gpuleak's own share of the hot path, measured on any machine (no GPU): the
 * CUPTI callback is driven with hand-built callback data for a
 * cuMemAllocAsync + cuMemFreeAsync pair, exactly as CUPTI would call it.
 *
 *   bench/hotpath [PAIRS] [THREADS] [ADDRESSES] [STRIDE]
 *
 * prints ns per pair (per thread).  Each thread cycles through ADDRESSES
 * addresses STRIDE bytes apart (default 1024, 4096: each block alone in its
 * span of the block table; 1 address: the driver handing the same one back;
 * stride 512: small blocks sharing spans, block_table.h).
 *
 * It runs the shipped configuration, or what GPULEAK_OPTIONS asks, as the
 * runtime would (gl_runtime_configure_tracking).
 *
 * GPULEAK_HOTPATH=driver drives the driver observer's path instead: what a
 * hook does around the driver's function (gl_driver_enter, then
 * gl_driver_exit), for the same pair.
 *
 * GPULEAK_HOTPATH_EVICT=BYTES (0 or empty: none) touches BYTES of the
 * worker's own memory (a write to each cache line) between two pairs, as a
 * program's own work and the driver's do between its allocations: gpuleak's
 * data then comes back from further away, as in a training step
 * (bench/RESULTS.md: its calls took 5 to 10 times their time here).  The time
 * printed then includes the touching, whose time alone is printed too; the
 * two do not subtract (each changes what the other finds in the cache).  What
 * does measure the cold path is bench/cold: the misses in gpuleak's functions
 * per pair under cachegrind, the same on any machine.
 *
 * GPULEAK_HOTPATH_WHERE=1 prints where one pair's function lies in memory
 * ("hotpath: pairs at ADDRESS"), for a trace to tell the pairs apart and
 * place the program's symbols (bench/data_pages).
 *
 * GPULEAK_HOTPATH_REGIONS=N opens N profiled regions (track/regions.h) before
 * the pairs, as N nested gpuleak_profile_begin() calls would: their cost per
 * event, which none open must not have.
 *
 * What CUPTI itself costs, and the driver, only the GPU benchmark (bench/run)
 * can tell; this isolates the part gpuleak can make faster. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "common/clock.h"
#include "components.h"
#include "runtime.h"
#include "observe/alternate.h"
#include "observe/call.h"
#include "observe/driver.h"
#include "observe/cupti.h"
#include "stack/stack_capture.h"
#include "stack/mixed_memo.h"
#include "stack/stack_memo.h"
#include "track/regions.h"
#include "track/tracker.h"
#include "stack/unwind.h"

static long pairs = 1000000;
static long n_addresses = 1024;
static uint64_t stride = 4096;

/* Noinline layers give the walk a few frames of "program" to cross. */
__attribute__((noinline)) static void one_pair(uint64_t addr)
{
    CUdeviceptr dptr = addr;
    CUresult ok = CUDA_SUCCESS;
    uint64_t corr = 0;
    cuMemAllocAsync_params ap = {.dptr = &dptr, .bytesize = 4096, .hStream = (CUstream)0x10};
    CUpti_CallbackData cb = {.callbackSite = CUPTI_API_EXIT,
                             .functionParams = &ap,
                             .functionReturnValue = &ok,
                             .context = (CUcontext)0x1000,
                             .correlationData = &corr};
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
                      &cb);
    cuMemFreeAsync_params fp = {.dptr = addr, .hStream = (CUstream)0x10};
    cb.functionParams = &fp;
    cb.callbackSite = CUPTI_API_ENTER;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
                      &cb);
    cb.callbackSite = CUPTI_API_EXIT;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
                      &cb);
}

/* The same pair as the driver observer's hooks see it. */
__attribute__((noinline)) static void one_pair_driver(uint64_t addr)
{
    CUdeviceptr dptr = 0;
    struct gl_driver_call c;
    cuMemAllocAsync_params ap = {.dptr = &dptr, .bytesize = 4096, .hStream = (CUstream)0x10};
    gl_driver_enter(&c, GL_DRIVER_cuMemAllocAsync, &ap);
    dptr = addr; /* the driver's answer */
    gl_driver_exit(&c, &ap, CUDA_SUCCESS);
    cuMemFreeAsync_params fp = {.dptr = addr, .hStream = (CUstream)0x10};
    gl_driver_enter(&c, GL_DRIVER_cuMemFreeAsync, &fp);
    gl_driver_exit(&c, &fp, CUDA_SUCCESS);
}

static bool driver_path;
static size_t evict_bytes;
static double evict_alone_ns; /* the touching alone, a time (first worker's) */

/* A write to each line of the worker's buffer: the program's work between
 * two of its calls. */
__attribute__((noinline)) static void evict(volatile char *buf)
{
    for (size_t i = 0; i < evict_bytes; i += 64)
        buf[i]++;
}

__attribute__((noinline)) static void loop(long n, uint64_t base, volatile char *buf)
{
    for (long i = 0; i < n; i++) {
        uint64_t addr = base + (uint64_t)(i % n_addresses) * stride;
        if (driver_path)
            one_pair_driver(addr);
        else
            one_pair(addr);
        if (buf)
            evict(buf);
    }
}

static void *worker(void *arg)
{
    uint64_t base = 0x7f0000000000ULL + (uint64_t)(uintptr_t)arg * 0x100000000ULL;
    volatile char *buf = evict_bytes ? calloc(1, evict_bytes) : NULL;
    if (evict_bytes && !buf) {
        fprintf(stderr, "hotpath: GPULEAK_HOTPATH_EVICT: no memory for %zu bytes\n", evict_bytes);
        exit(1);
    }
    double evict_ns = 0;
    if (buf) {
        double t0 = gl_clock_s();
        for (long i = 0; i < pairs; i++)
            evict(buf);
        evict_ns = (gl_clock_s() - t0) * 1e9 / (double)pairs;
        if (arg == 0)
            evict_alone_ns = evict_ns;
    }
    loop(1000, base, buf); /* warm: stacks, caches */
    double t0 = gl_clock_s();
    loop(pairs, base, buf);
    double *ns = malloc(sizeof *ns);
    *ns = (gl_clock_s() - t0) * 1e9 / (double)pairs;
    free((void *)buf);
    return ns;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        pairs = atol(argv[1]);
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (argc > 3)
        n_addresses = atol(argv[3]);
    if (argc > 4)
        stride = strtoull(argv[4], NULL, 0);
    if (pairs < 1 || threads < 1 || n_addresses < 1 || stride < 1 || stride % 8) {
        fprintf(stderr, "hotpath: PAIRS, THREADS, ADDRESSES must be positive, STRIDE a "
                        "positive multiple of 8\n");
        return 2;
    }
    char err[256];
    if (!gl_unwind_load(err, sizeof err)) {
        fprintf(stderr, "hotpath: %s\n", err);
        return 1;
    }
    gl_options_defaults(&gl_runtime.opt);
    const char *env = getenv("GPULEAK_OPTIONS"); /* as the runtime reads them */
    if (env && gl_options_parse_env(&gl_runtime.opt, env, err, sizeof err) != 0) {
        fprintf(stderr, "hotpath: GPULEAK_OPTIONS: %s\n", err);
        return 2;
    }
    gl_runtime_configure_tracking(gl_components);
    char bad[128];
    if (!gl_call_bench_mode(getenv("GPULEAK_BENCH"), bad, sizeof bad))
        fprintf(stderr, "hotpath: GPULEAK_BENCH: '%s' ignored\n", bad);
    const char *path = getenv("GPULEAK_HOTPATH");
    driver_path = path && strcmp(path, "driver") == 0;
    if (driver_path) {
        /* No libcuda here: the two entry points get stand-in addresses, as
         * the hooks find the driver's functions in a real process. */
        atomic_store(&gl_driver_functions[GL_DRIVER_cuMemAllocAsync], (void *)one_pair);
        atomic_store(&gl_driver_functions[GL_DRIVER_cuMemFreeAsync], (void *)loop);
        gl_driver_start(gl_runtime.opt.check_api_ranges, false);
    }
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    const char *ev = getenv("GPULEAK_HOTPATH_EVICT");
    if (ev) {
        char *end;
        unsigned long long v = strtoull(ev, &end, 0);
        if (*end != '\0' || v > (1ULL << 32)) {
            fprintf(stderr,
                    "hotpath: GPULEAK_HOTPATH_EVICT: '%s' is not a size in bytes (at "
                    "most 4 GiB)\n",
                    ev);
            return 2;
        }
        evict_bytes = (size_t)v;
    }
    const char *regions = getenv("GPULEAK_HOTPATH_REGIONS");
    for (int i = 0, n = regions ? atoi(regions) : 0; i < n; i++)
        if (gl_regions_open("hotpath", 0) < 0) {
            fprintf(stderr, "hotpath: could not open region %d\n", i + 1);
            return 1;
        }
    if (getenv("GPULEAK_HOTPATH_WHERE"))
        printf("hotpath: pairs at %p\n", driver_path ? (void *)one_pair_driver : (void *)one_pair);
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    double sum = 0;
    for (int i = 0; i < threads && i < 64; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += *(double *)r;
    }
    struct gl_stack_memo_counts mc;
    struct gl_mixed_memo_counts mixed;
    gl_stack_capture_memo_totals(&mc, &mixed);
    printf("hotpath: %d thread(s), %.1f ns per alloc+free pair (mean over threads); stack memo: "
           "%llu hits, %llu walks\n",
           threads, sum / threads, (unsigned long long)mc.hits, (unsigned long long)mc.walks);
    if (evict_bytes)
        printf("hotpath: with %zu bytes touched between pairs (included above; %.1f ns "
               "alone)\n",
               evict_bytes, evict_alone_ns);
    struct gl_alternate_result alt;
    if (gl_alternate_result(&alt))
        printf("hotpath: alternate:%s:%u, %zu pairs of blocks%s: with %.1f, without %.1f ns a "
               "pair; with - without %+.1f (quartiles %+.1f, %+.1f)\n",
               alt.name, alt.pairs_per_block, alt.blocks, alt.stopped ? " (stopped)" : "",
               alt.on_ns, alt.off_ns, alt.diff_ns, alt.q1_ns, alt.q3_ns);
    return 0;
}
