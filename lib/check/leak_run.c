#include "check/leak_run.h"

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/device_scan.h"
#include "check/pools.h"
#include "check/reachability.h"
#include "check/suppress.h"
#include "symbol/frame_filter.h"
#include "python/py_symbols.h"
#include "report/report_errors.h"
#include "check/run_suppressions.h"
#include "runtime.h"
#include "symbol/symbolize.h"
#include "track/errors.h"
#include "event/event.h"
#include "track/stats.h"
#include "stack/modules.h"
#include "python/py_frames.h"
#include "stack/stack_depot.h"
#include "base/tool.h"
#include "track/tracker.h"

#define MAX_DEVICES 64

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

void gl_leak_run_lock(void) { pthread_mutex_lock(&run_lock); }
void gl_leak_run_unlock(void) { pthread_mutex_unlock(&run_lock); }

/* Driver calls made at check time, outside any callback.  The driver is already
 * loaded; it is looked up, never loaded by gpuleak. */
struct driver {
    bool looked_up;
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_count)(int *);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*mem_get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*default_mem_pool)(CUmemoryPool *, CUdevice);
    CUresult (*mem_pool_get_attribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*graph_mem_attribute)(CUdevice, CUgraphMem_attribute, void *);
    CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
};

/* The services, kept from one check to the next (under run_lock). */
static struct {
    struct driver drv;
    struct gl_symbolizer *sym;
    unsigned long long sym_objects; /* loaded-object signature sym was opened for */
    char names[MAX_DEVICES][128];
    bool named[MAX_DEVICES];
} env;

static void load_driver(struct driver *d)
{
    if (d->looked_up)
        return;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return; /* not loaded yet (a check before CUDA starts): look again next time */
    d->looked_up = true;
    *(void **)&d->device_get = dlsym(h, "cuDeviceGet");
    *(void **)&d->device_get_count = dlsym(h, "cuDeviceGetCount");
    *(void **)&d->default_mem_pool = dlsym(h, "cuDeviceGetDefaultMemPool");
    *(void **)&d->mem_pool_get_attribute = dlsym(h, "cuMemPoolGetAttribute");
    *(void **)&d->graph_mem_attribute = dlsym(h, "cuDeviceGetGraphMemAttribute");
    *(void **)&d->memcpy_dtoh = dlsym(h, "cuMemcpyDtoH_v2");
    *(void **)&d->ctx_push = dlsym(h, "cuCtxPushCurrent_v2");
    *(void **)&d->ctx_pop = dlsym(h, "cuCtxPopCurrent_v2");
    *(void **)&d->device_get_name = dlsym(h, "cuDeviceGetName");
    *(void **)&d->mem_get_address_range = dlsym(h, "cuMemGetAddressRange_v2");
    dlclose(h); /* still loaded by the program */
}

static struct gl_symbolizer *symbolizer(void)
{
    return gl_symbolize_fresh(&env.sym, &env.sym_objects);
}

static const char *device_name(int device, void *arg)
{
    (void)arg;
    if (device < 0 || device >= MAX_DEVICES)
        return NULL;
    if (!env.named[device]) {
        env.named[device] = true;
        CUdevice dev;
        if (env.drv.device_get && env.drv.device_get_name &&
            env.drv.device_get(&dev, device) == CUDA_SUCCESS &&
            env.drv.device_get_name(env.names[device], sizeof env.names[device], dev) ==
                CUDA_SUCCESS)
            return env.names[device];
        env.names[device][0] = '\0';
    }
    return env.names[device][0] ? env.names[device] : NULL;
}

static unsigned stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    return gl_frame_filter_stack(symbolizer(), stack, gl_runtime.opt.show_below_main, out, max);
}

static size_t vmm_mappings(uint64_t handle_key, uint64_t *addrs, size_t max, void *arg)
{
    (void)arg;
    return gl_tracker_vmm_mappings(handle_key, addrs, max, NULL);
}

static const char *pool_name(uint64_t pool_key, char *buf, size_t len, void *arg)
{
    (void)arg;
    return gl_pools_name(pool_key, buf, len) ? buf : NULL;
}

/* What a stream-ordered pool holds from the driver, and what of it is in use. */
static bool pool_usage(CUmemoryPool pool, uint64_t *reserved, uint64_t *used)
{
    cuuint64_t r = 0, u = 0;
    if (!env.drv.mem_pool_get_attribute ||
        env.drv.mem_pool_get_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) !=
            CUDA_SUCCESS ||
        env.drv.mem_pool_get_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
        return false;
    *reserved = r;
    *used = u;
    return true;
}

/* The memory every device's default stream-ordered pool and graph memory keep
 * unused, as blocks of the snapshot (pools the program created are blocks of
 * their own already).  Returns the new count. */
static size_t add_device_pools(struct gl_block_info *blocks, size_t n, size_t cap)
{
    int count = 0;
    if (!env.drv.device_get_count || env.drv.device_get_count(&count) != CUDA_SUCCESS)
        return n;
    for (int d = 0; d < count && n < cap; d++) {
        CUdevice dev;
        if (env.drv.device_get(&dev, d) != CUDA_SUCCESS)
            continue;
        CUmemoryPool pool;
        uint64_t reserved, used;
        if (env.drv.default_mem_pool && env.drv.default_mem_pool(&pool, dev) == CUDA_SUCCESS &&
            pool_usage(pool, &reserved, &used) && reserved > used)
            blocks[n++] = (struct gl_block_info){
                .key = gl_key_make(GL_NS_MEMPOOL, (uintptr_t)pool),
                .size = reserved - used,
                .aux = used,
                .device = (int16_t)d,
                .kind = GL_MEM_POOL_RESERVE,
            };
        cuuint64_t r = 0, u = 0;
        if (n < cap && env.drv.graph_mem_attribute &&
            env.drv.graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) ==
                CUDA_SUCCESS &&
            env.drv.graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) ==
                CUDA_SUCCESS &&
            r > u)
            blocks[n++] = (struct gl_block_info){
                .key = gl_key_make(GL_NS_GRAPH_MEMORY, (uint64_t)d + 1),
                .size = r - u,
                .aux = u,
                .device = (int16_t)d,
                .kind = GL_MEM_GRAPH_RESERVE,
            };
    }
    return n;
}

/* Sizes the callbacks could not know are found now: memory opened through IPC
 * is asked of the driver, an imported VMM handle measured by its mappings. */
static void resolve_sizes(struct gl_block_info *blocks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct gl_block_info *b = &blocks[i];
        if (!(b->flags & GL_BLK_SIZE_UNKNOWN))
            continue;
        if (gl_key_ns(b->key) == GL_NS_VMM_HANDLE) {
            uint64_t mapped = 0;
            gl_tracker_vmm_mappings(b->key, NULL, 0, &mapped);
            if (mapped) {
                b->size = mapped;
                b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
            }
            continue;
        }
        if (gl_key_ns(b->key) == GL_NS_MEMPOOL) {
            uint64_t reserved, used;
            if (pool_usage((CUmemoryPool)(uintptr_t)gl_key_value(b->key), &reserved, &used)) {
                b->size = reserved > used ? reserved - used : 0;
                b->aux = used; /* for the report: what its allocations hold */
                b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
            }
            continue;
        }
        if (gl_key_ns(b->key) != GL_NS_ADDR || !env.drv.mem_get_address_range)
            continue;
        CUdeviceptr base;
        size_t size;
        if (env.drv.mem_get_address_range(&base, &size, (CUdeviceptr)b->key) == CUDA_SUCCESS) {
            b->size = size;
            b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
        }
    }
}

/* --scan-device: a block's contents, through the driver, in the block's context. */
static bool read_device(const struct gl_block_info *b, uint64_t offset, void *buf, size_t len,
                        void *arg)
{
    (void)arg;
    if (!env.drv.memcpy_dtoh || !env.drv.ctx_push || !env.drv.ctx_pop || !b->ctx)
        return false;
    if (env.drv.ctx_push((CUcontext)(uintptr_t)b->ctx) != CUDA_SUCCESS)
        return false;
    CUresult rc = env.drv.memcpy_dtoh(buf, (CUdeviceptr)(gl_key_value(b->key) + offset), len);
    CUcontext popped;
    env.drv.ctx_pop(&popped);
    return rc == CUDA_SUCCESS;
}

/* The function at ip, for telling a static CUDA runtime's code (owners.h). */
static const char *function_name(uintptr_t ip, void *arg)
{
    (void)arg;
    struct gl_symbolizer *sym = symbolizer();
    if (!sym || !ip)
        return NULL;
    struct gl_frame f;
    gl_symbolize(sym, ip, false, &f);
    return f.function;
}

/* Keep the blocks numbered since_seq or later, in place; returns their count. */
static size_t keep_since(struct gl_block_info *blocks, size_t n, uint64_t since_seq)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].seq >= since_seq)
            blocks[k++] = blocks[i];
    return k;
}

/* The --top-sites sites with the highest peaks. */
static struct gl_site_stats *top_sites(size_t *n)
{
    struct gl_site_stats *s = gl_report_errors_sites_by_peak(n);
    if (*n > (size_t)gl_runtime.opt.top_sites)
        *n = (size_t)gl_runtime.opt.top_sites;
    return s;
}

int gl_leak_run(struct gl_leak_run *run, uint64_t since_seq, const struct gl_caller_context *cc)
{
    struct gl_caller_context here;
    if (!cc) {
        GL_CALLER_CONTEXT(&here);
        cc = &here;
    }
    memset(run, 0, sizeof *run);
    load_driver(&env.drv);
    if (gl_tracker_snapshot(&run->blocks, &run->n, &run->snap_bytes) < 0) {
        gl_runtime_message("gpuleak: out of memory while taking the leak snapshot; no leak check");
        return -1;
    }
    /* Sizes first (a pool may be memory of unknown size, opened through IPC),
     * then pools: one made before the checkpoint still gives back what its later
     * sub-allocations hold; then the checkpoint. */
    resolve_sizes(run->blocks, run->n);
    if (!since_seq) /* the devices' own pools: not the business of a check since a checkpoint */
        run->n = add_device_pools(run->blocks, run->n, run->snap_bytes / sizeof *run->blocks);
    if (gl_pools_settle(run->blocks, run->n) < 0)
        gl_runtime_message("gpuleak: out of memory while settling custom pools; their sizes are "
                           "shown whole");
    gl_pools_prune_names(run->blocks, run->n);
    if (since_seq)
        run->n = keep_since(run->blocks, run->n, since_seq);
    gl_reachability(run->blocks, run->n, cc, function_name, NULL, &run->reach);
    uint64_t *indirect = NULL;
    size_t indirect_bytes = run->n * sizeof *indirect;
    if (gl_runtime.opt.scan_device && run->n) {
        indirect = gl_tool_map(indirect_bytes);
        run->device.max_block_bytes = 0;
        if (indirect &&
            gl_device_scan(run->blocks, run->n, indirect, read_device, NULL, &run->device) < 0) {
            gl_tool_unmap(indirect, indirect_bytes);
            indirect = NULL;
        }
        run->device_scanned = indirect != NULL;
    }
    int checked =
        gl_leak_check(run->blocks, run->n, indirect, gl_leak_check_classify, NULL, &run->leaks);
    gl_tool_unmap(indirect, indirect_bytes);
    if (checked < 0) {
        gl_tool_unmap(run->blocks, run->snap_bytes);
        memset(run, 0, sizeof *run);
        gl_runtime_message("gpuleak: out of memory during the leak check; no leak check");
        return -1;
    }
    gl_tracker_stats(&run->stats);
    gl_api_error_counts(&run->api_errors);
    size_t nctx = gl_api_error_contexts(NULL, 0);
    run->api_contexts = nctx ? malloc(nctx * sizeof *run->api_contexts) : NULL;
    if (run->api_contexts) {
        run->napi_contexts = gl_api_error_contexts(run->api_contexts, nctx);
        if (run->napi_contexts > nctx) /* more since the count: the first nctx */
            run->napi_contexts = nctx;
    }
    run->usage = malloc(sizeof *run->usage);
    if (run->usage)
        gl_stats_snapshot(run->usage);
    if (gl_runtime.opt.stats)
        run->top = top_sites(&run->ntop);
    size_t maxfw = sizeof run->framework / sizeof *run->framework;
    run->nframework = gl_framework_usages(run->framework, maxfw);
    if (run->nframework > maxfw)
        run->nframework = maxfw;
    /* The entries' counts are this run's: leaks hidden now, and every
     * occurrence of an API error hidden so far. */
    struct gl_supp_set *supps = gl_run_suppressions();
    gl_suppress_records(&run->leaks, supps, stack_frames, NULL);
    gl_run_suppressions_count_errors(supps, run->api_contexts, run->napi_contexts);
    return 0;
}

void gl_leak_run_free(struct gl_leak_run *run)
{
    free(run->usage);
    free(run->top);
    free(run->api_contexts);
    gl_leak_check_result_free(&run->leaks);
    gl_tool_unmap(run->blocks, run->snap_bytes);
    memset(run, 0, sizeof *run);
}

void gl_leak_run_input(const struct gl_leak_run *run, struct gl_report_input *in)
{
    memset(in, 0, sizeof *in);
    in->opt = &gl_runtime.opt;
    in->tool_version = PACKAGE_VERSION;
    in->command = gl_runtime.command;
    in->leaks = &run->leaks;
    in->stats = &run->stats;
    in->supps = gl_run_suppressions_loaded();
    in->main_tid = (int)gl_runtime.pid;
    in->pid = (int)gl_runtime.pid;
    in->ppid = (int)getppid();
    in->elapsed_s = gl_runtime_elapsed();
    in->device_name = device_name;
    in->stack_frames = stack_frames;
    in->vmm_mappings = vmm_mappings;
    in->pool_name = pool_name;
    in->reach = &run->reach;
    in->api_errors = &run->api_errors;
    in->api_contexts = run->api_contexts;
    in->napi_contexts = run->napi_contexts;
    in->usage = run->usage;
    in->top_sites = run->top;
    in->ntop_sites = run->ntop;
    in->framework = run->framework;
    in->nframework = run->nframework;
}

void gl_leak_run_close(void)
{
    gl_symbolize_close(env.sym);
    env.sym = NULL;
}

void gl_leak_run_after_fork_child(void)
{
    /* The parent's checks belong to the parent; a thread of it may have held the
     * lock at fork, and it is gone here. */
    pthread_mutex_init(&run_lock, NULL);
}
