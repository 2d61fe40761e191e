/* SPDX-License-Identifier: MIT */
/* A CUDA driver that is not one: libcuda.so.1 for tests/driver.test, so that
 * the driver observer's hooks (lib/observe/driver_hooks.c) are tested on a
 * machine with no GPU.  It hands out addresses from a counter, knows which
 * it handed out (a free of another one fails, as the real driver's does), and
 * resolves entry points by name as cuGetProcAddress does: the base name, its
 * _v2 where the version asks for it, its _ptsz with the per-thread flag.  It
 * also has a cuMemAlloc_v3 for versions past 90000: a variant no hook knows.
 * Like the real one, it keeps a host record of each block, holding its
 * address, allocated in the call and freed in the free: the leak check must
 * not take the driver's copy for the program's pointer (tests/driver.test's
 * lost blocks), and the allocator hooks leave the records out (check_heap). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuda.h renames cuGetProcAddress to its _v2: both are defined here. */
#undef cuGetProcAddress

#define EXPORT __attribute__((visibility("default")))
#define MAX_BLOCKS 64

static CUdeviceptr next_addr = 0x7e0000000000ULL;
static CUdeviceptr live[MAX_BLOCKS];
static CUdeviceptr *records[MAX_BLOCKS]; /* the driver's host copies */
static int initialized;
static const CUcontext fake_ctx = (CUcontext)0x1000;
/* A second context, made current by cuCtxSetCurrent on the calling thread
 * (tests/driver/ctx_queries.c): a stream stays in the one it was made in. */
static const CUcontext fake_ctx2 = (CUcontext)0x2000;
static __thread CUcontext current_ctx;

/* Threads allocate at once (tests/driver/save_run.c), as with the real one. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* FAKE_CUDA_WORK=BYTES: each allocation and release writes that much of the
 * driver's own memory, as a real synchronous cudaMalloc or cudaFree does
 * (bench/cold --driver-work): what the caller's frames meet at the call's
 * exit.  Read at cuInit. */
static char *work;
static size_t work_bytes;

static void driver_work(void)
{
    if (work)
        memset(work, (int)(work_bytes & 0xff) | 1, work_bytes);
}

static CUresult alloc(CUdeviceptr *p, size_t n)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!p || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    driver_work();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (!live[i]) {
            CUdeviceptr *record = calloc(2, sizeof *record);
            if (!record)
                break;
            live[i] = *p = record[0] = next_addr;
            record[1] = n;
            records[i] = record;
            next_addr += (n + 0xfffff) & ~(CUdeviceptr)0xfffff;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult release(CUdeviceptr p)
{
    if (p == 0)
        return CUDA_SUCCESS;
    driver_work();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (live[i] == p) {
            live[i] = 0;
            free(records[i]);
            records[i] = NULL;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
}

/* As the real driver does at its first cuInit: the library named by
 * CUDA_INJECTION64_PATH is loaded and its InitializeInjection called, which is
 * how gpuleak's runtime comes in when the program lost the launcher's
 * LD_PRELOAD (tests/driver.test). */
static void load_injection(void)
{
    static int done;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (done || !path || !*path)
        return;
    done = 1;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (init)
        init();
}

EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    initialized = 1;
    const char *w = getenv("FAKE_CUDA_WORK");
    size_t bytes = w ? strtoull(w, NULL, 10) : 0;
    if (bytes && !work && (work = malloc(bytes)))
        work_bytes = bytes;
    load_injection();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

/* How often the context was asked: what the hooks cost a call
 * (tests/driver/ctx_queries.c). */
static int context_queries;
EXPORT int fake_cuda_context_queries(void) { return __atomic_load_n(&context_queries, 0); }

/* The host record of a block (tests/unit/check_heap.c), or NULL. */
EXPORT void *fake_cuda_record(CUdeviceptr p)
{
    void *record = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (live[i] == p)
            record = records[i];
    pthread_mutex_unlock(&lock);
    return record;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
    __atomic_add_fetch(&context_queries, 1, __ATOMIC_RELAXED);
    *c = !initialized ? NULL : current_ctx ? current_ctx : fake_ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
    return c == fake_ctx || c == fake_ctx2 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
    if (c != fake_ctx && c != fake_ctx2)
        return CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = c;
    return CUDA_SUCCESS;
}

/* The second context's handle (no cuCtxCreate here: nothing else needs one). */
EXPORT CUcontext fake_cuda_other_context(void) { return fake_ctx2; }

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *d, CUcontext c)
{
    (void)c;
    *d = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n); }
EXPORT CUresult cuMemAlloc_v3(CUdeviceptr *p, size_t n) { return alloc(p, n); }
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return release(p); }
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    (void)s;
    return alloc(p, n);
}
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
    (void)s;
    return alloc(p, n);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    (void)s;
    return release(p);
}
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    (void)s;
    return release(p);
}

/* Streams: handles never reused, no state (the fake runs every call at once). */
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    static uintptr_t next = 0x5000;
    (void)flags;
    *s = (CUstream)__atomic_add_fetch(&next, 0x100, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Events and stream capture (tests/driver/capture_fork.c): handles from
 * counters, and nothing run.  A capture's stream-ordered calls still hand
 * out and take back addresses here (the real driver only makes nodes of
 * them): what the hooks must tell apart is theirs to decide. */
static uintptr_t next_handle(void)
{
    static uintptr_t next = 0x60000;
    return __atomic_add_fetch(&next, 0x100, __ATOMIC_RELAXED);
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)next_handle();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    (void)s;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags)
{
    (void)s, (void)flags;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    (void)s, (void)flags;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    (void)mode;
    return s ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}
EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    (void)s;
    *g = (CUgraph)next_handle();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    (void)g, (void)flags;
    *e = (CUgraphExec)next_handle();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
    (void)s;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuGraphDestroy(CUgraph g) { return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Entry points by name, as the real driver resolves them. */
static CUresult proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    static void *self;
    if (!self)
        self = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    char name[128];
    const char *suffix = "";
    if (strcmp(symbol, "cuMemAlloc") == 0 || strcmp(symbol, "cuMemFree") == 0)
        suffix = version >= 90000 && strcmp(symbol, "cuMemAlloc") == 0 ? "_v3" : "_v2";
    else if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
             (strcmp(symbol, "cuMemAllocAsync") == 0 || strcmp(symbol, "cuMemFreeAsync") == 0))
        suffix = "_ptsz";
    else if (strcmp(symbol, "cuGetProcAddress") == 0)
        suffix = "_v2";
    snprintf(name, sizeof name, "%s%s", symbol, suffix);
    /* The driver's own table: never an interposer's symbol. */
    void *(*real_dlsym)(void *, const char *) = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym)
        real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    *pfn = real_dlsym ? real_dlsym(self, name) : NULL;
    if (status)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    return proc_address(symbol, pfn, version, flags, status);
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return proc_address(symbol, pfn, version, flags, NULL);
}
