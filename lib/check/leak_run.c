/* SPDX-License-Identifier: MIT */
#include "check/leak_run.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "base/tool.h"
#include "check/device_scan.h"
#include "check/pools.h"
#include "check/reachability.h"
#include "check/run_suppressions.h"
#include "check/suppress.h"
#include "event/event.h"
#include "runtime.h"
#include "symbol/frame_filter.h"
#include "symbol/symbolize.h"
#include "track/errors.h"
#include "track/tracker.h"

#define MAX_DEVICES 64

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

void gl_leak_run_lock(void) { pthread_mutex_lock(&run_lock); }
void gl_leak_run_unlock(void) { pthread_mutex_unlock(&run_lock); }

/* The services, kept from one check to the next (under run_lock). */
static struct {
    const struct gl_driver_query *drv; /* NULL: no driver, every answer unknown */
    bool drv_chosen;                   /* by gl_leak_run_set_driver; else the CUDA driver */
    struct gl_symbolizer *sym;
    unsigned long long sym_objects; /* loaded-object signature sym was opened for */
    char names[MAX_DEVICES][128];
    bool named[MAX_DEVICES];
} env;

/* A question to the driver; false when there is none, or it cannot tell. */
#define ASK(question, ...) (env.drv && env.drv->question && env.drv->question(__VA_ARGS__))

void gl_leak_run_set_driver(const struct gl_driver_query *q)
{
    env.drv = q;
    env.drv_chosen = true;
    memset(env.named, 0, sizeof env.named); /* names are the driver's */
}

static void choose_driver(void)
{
    if (!env.drv_chosen)
        env.drv = gl_driver_query_cuda();
}

static struct gl_symbolizer *symbolizer(void)
{
    return gl_symbolize_fresh(&env.sym, &env.sym_objects);
}

/* ---- the report's services ---- */

static const char *device_name(int device, void *arg)
{
    (void)arg;
    if (device < 0 || device >= MAX_DEVICES)
        return NULL;
    if (!env.named[device]) {
        env.named[device] = true;
        if (!ASK(device_name, device, env.names[device], sizeof env.names[device]))
            env.names[device][0] = '\0';
    }
    return env.names[device][0] ? env.names[device] : NULL;
}

static unsigned stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    return gl_frame_filter_stack(symbolizer(), stack, gl_runtime.opt.show_below_main, out, max);
}

unsigned gl_leak_run_stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    return stack_frames(stack, out, max, arg);
}

static bool code_frame(uint64_t ip, struct gl_frame *out, void *arg)
{
    (void)arg;
    struct gl_symbolizer *sym = symbolizer();
    if (!sym)
        return false;
    gl_symbolize(sym, (uintptr_t)ip, true, out);
    return true;
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

/* --scan-device: a block's contents, in the block's context. */
static bool read_device(const struct gl_block_info *b, uint64_t offset, void *buf, size_t len,
                        void *arg)
{
    (void)arg;
    return b->ctx && ASK(read, b->ctx, gl_key_value(b->key) + offset, buf, len);
}

/* ---- the phases, in order ---- */

static int take_snapshot(struct gl_leak_run *run)
{
    if (gl_tracker_snapshot(&run->blocks, &run->n, &run->snap_bytes) == 0)
        return 0;
    gl_runtime_message("gpuleak: out of memory while taking the leak snapshot; no leak check");
    return -1;
}

/* Sizes the callbacks could not know are found now: memory opened through IPC
 * is asked of the driver, an imported VMM handle measured by its mappings. */
static void resolve_sizes(struct gl_leak_run *run)
{
    for (size_t i = 0; i < run->n; i++) {
        struct gl_block_info *b = &run->blocks[i];
        if (!(b->flags & GL_BLK_SIZE_UNKNOWN))
            continue;
        uint64_t mapped = 0, reserved, used, base, size;
        switch (gl_key_ns(b->key)) {
        case GL_NS_VMM_HANDLE:
            gl_tracker_vmm_mappings(b->key, NULL, 0, &mapped);
            if (mapped) {
                b->size = mapped;
                b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
            }
            break;
        case GL_NS_MEMPOOL:
            if (ASK(pool_usage, gl_key_value(b->key), &reserved, &used)) {
                b->size = reserved > used ? reserved - used : 0;
                b->aux = used; /* for the report: what its allocations hold */
                b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
            }
            break;
        case GL_NS_ADDR:
            if (ASK(address_range, gl_key_value(b->key), &base, &size)) {
                b->size = size;
                b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
            }
            break;
        default:
            break;
        }
    }
}

/* The memory every device's default stream-ordered pool and graph memory keep
 * unused, as blocks of the snapshot (pools the program created are blocks of
 * their own already), in the room the snapshot left. */
static void add_device_pools(struct gl_leak_run *run)
{
    size_t cap = run->snap_bytes / sizeof *run->blocks;
    int count = 0;
    if (!ASK(device_count, &count))
        return;
    for (int d = 0; d < count && run->n < cap; d++) {
        uint64_t pool, reserved, used;
        if (ASK(default_pool, d, &pool) && ASK(pool_usage, pool, &reserved, &used) &&
            reserved > used)
            run->blocks[run->n++] = (struct gl_block_info){
                .key = gl_key_make(GL_NS_MEMPOOL, pool),
                .size = reserved - used,
                .aux = used,
                .device = (int16_t)d,
                .kind = GL_MEM_POOL_RESERVE,
            };
        if (run->n < cap && ASK(graph_memory, d, &reserved, &used) && reserved > used)
            run->blocks[run->n++] = (struct gl_block_info){
                .key = gl_key_make(GL_NS_GRAPH_MEMORY, (uint64_t)d + 1),
                .size = reserved - used,
                .aux = used,
                .device = (int16_t)d,
                .kind = GL_MEM_GRAPH_RESERVE,
            };
    }
}

static void settle_custom_pools(struct gl_leak_run *run)
{
    if (gl_pools_settle(run->blocks, run->n) < 0)
        gl_runtime_message("gpuleak: out of memory while settling custom pools; their sizes are "
                           "shown whole");
    gl_pools_prune_names(run->blocks, run->n);
}

/* Keep the blocks numbered since_seq or later, in place. */
static void keep_since(struct gl_leak_run *run, uint64_t since_seq)
{
    size_t k = 0;
    for (size_t i = 0; i < run->n; i++)
        if (run->blocks[i].seq >= since_seq)
            run->blocks[k++] = run->blocks[i];
    run->n = k;
}

/* --scan-device: what each block's contents point to.  Returns the indirect
 * bytes per block for the classifier (tool memory of *bytes), NULL when the
 * device was not scanned. */
static uint64_t *scan_device(struct gl_leak_run *run, size_t *bytes)
{
    *bytes = run->n * sizeof(uint64_t);
    if (!gl_runtime.opt.scan_device || !run->n)
        return NULL;
    uint64_t *indirect = gl_tool_map(*bytes);
    run->device.max_block_bytes = 0;
    if (indirect &&
        gl_device_scan(run->blocks, run->n, indirect, read_device, NULL, &run->device) < 0) {
        gl_tool_unmap(indirect, *bytes);
        indirect = NULL;
    }
    run->device_scanned = indirect != NULL;
    return indirect;
}

static struct gl_leak_run_saved saved;
static bool have_saved;

void gl_leak_run_set_saved(const struct gl_leak_run_saved *s)
{
    /* Another process's objects: the symbolizer opened for the last one is
     * wrong, whatever this process loaded since. */
    if (env.sym) {
        gl_symbolize_close(env.sym);
        env.sym = NULL;
    }
    have_saved = s != NULL;
    saved = s ? *s : (struct gl_leak_run_saved){0};
}

/* Classify, group and sort (leak_check.h); the indirect bytes are used up.
 * --leak-resolution compares stacks by the frames the report shows, as the
 * suppressions match them. */
static int classify(struct gl_leak_run *run, uint64_t *indirect, size_t indirect_bytes)
{
    const struct gl_leak_merge merge = {
        .frames = gl_options_resolution_frames(gl_runtime.opt.leak_resolution),
        .stack_frames = stack_frames,
    };
    int checked = have_saved ? gl_leak_check(run->blocks, run->n, indirect, saved.classify,
                                             saved.arg, &merge, &run->leaks)
                             : gl_leak_check(run->blocks, run->n, indirect, gl_leak_check_classify,
                                             NULL, &merge, &run->leaks);
    gl_tool_unmap(indirect, indirect_bytes);
    if (checked == 0)
        return 0;
    gl_tool_unmap(run->blocks, run->snap_bytes);
    memset(run, 0, sizeof *run);
    gl_runtime_message("gpuleak: out of memory during the leak check; no leak check");
    return -1;
}

/* The --top-sites sites with the highest peaks. */
static struct gl_site_stats *top_sites(size_t *n)
{
    struct gl_site_stats *s = gl_counters_sites_by_peak(n);
    if (*n > (size_t)gl_runtime.opt.top_sites)
        *n = (size_t)gl_runtime.opt.top_sites;
    return s;
}

/* What the report prints beside the records: the tracker's counters, the API
 * errors so far, usage per device and kind, the top sites (--stats), and
 * what frameworks said of themselves. */
static void read_counters(struct gl_leak_run *run)
{
    gl_counters_read_totals(&run->stats);
    gl_errors_counts(&run->api_errors);
    size_t nctx = gl_errors_contexts(NULL, 0);
    run->api_contexts = nctx ? malloc(nctx * sizeof *run->api_contexts) : NULL;
    if (run->api_contexts) {
        run->napi_contexts = gl_errors_contexts(run->api_contexts, nctx);
        if (run->napi_contexts > nctx) /* more since the count: the first nctx */
            run->napi_contexts = nctx;
    }
    run->usage = malloc(sizeof *run->usage);
    if (run->usage)
        gl_stats_snapshot(run->usage);
    if (gl_runtime.opt.stats)
        run->top = top_sites(&run->ntop);
    size_t maxfw = GL_ARRAY_SIZE(run->framework);
    run->nframework = gl_framework_usages(run->framework, maxfw);
    if (run->nframework > maxfw)
        run->nframework = maxfw;
}

/* Cached rules, then suppressions.  The entries' counts are this run's:
 * leaks hidden now, and every occurrence of an API error hidden so far. */
static void apply_suppressions(struct gl_leak_run *run)
{
    struct gl_supp_set *supps = gl_run_suppressions();
    gl_suppress_records(&run->leaks, supps, stack_frames, NULL);
    gl_run_suppressions_count_errors(supps, run->api_contexts, run->napi_contexts);
}

/* The scan, less what a caching allocator's rule will call cached anyway
 * (suppress.h).  Not with --scan-device, where a block's verdict passes on
 * to what it points to (a held block would make its pointees reachable,
 * where its own verdict, lost, made them indirect), nor with
 * --leak-resolution low or med, where a record merges blocks of several
 * stacks and its rule is matched against one of them.  No memory for the
 * list: every block searched for. */
static void reach(struct gl_leak_run *run, const struct gl_caller_context *cc)
{
    bool hold = !gl_runtime.opt.scan_device && gl_runtime.opt.leak_resolution == GL_LEAK_RES_HIGH;
    uint8_t *held = hold && run->n ? malloc(run->n) : NULL;
    if (held)
        gl_suppress_held_blocks(gl_run_suppressions(), run->blocks, run->n, stack_frames, NULL,
                                held);
    gl_reachability(run->blocks, run->n, held, cc, function_name, NULL, &run->reach);
    free(held);
}

int gl_leak_run(struct gl_leak_run *run, uint64_t since_seq, const struct gl_caller_context *cc)
{
    struct gl_caller_context here;
    if (!cc) {
        GL_CALLER_CONTEXT(&here);
        cc = &here;
    }
    memset(run, 0, sizeof *run);
    choose_driver();
    if (take_snapshot(run) < 0)
        return -1;
    /* Sizes first (a pool may be memory of unknown size, opened through IPC),
     * then pools: one made before the checkpoint still gives back what its later
     * sub-allocations hold; then the checkpoint. */
    resolve_sizes(run);
    if (!since_seq) /* the devices' own pools: not the business of a check since a checkpoint */
        add_device_pools(run);
    settle_custom_pools(run);
    if (since_seq)
        keep_since(run, since_seq);
    if (have_saved) /* no memory here: what the process's own check found */
        run->reach = (struct gl_reachability){.available = saved.reach_available,
                                              .why_not = saved.reach_why_not};
    else
        reach(run, cc);
    size_t indirect_bytes;
    uint64_t *indirect = scan_device(run, &indirect_bytes);
    if (classify(run, indirect, indirect_bytes) < 0)
        return -1;
    read_counters(run);
    apply_suppressions(run);
    return 0;
}

void gl_leak_run_free(struct gl_leak_run *run)
{
    gl_reachability_free(&run->reach);
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
    in->main_tid = have_saved ? saved.main_tid : (int)gl_runtime.pid;
    in->pid = (int)gl_runtime.pid;
    in->ppid = (int)getppid();
    in->elapsed_s = gl_runtime_elapsed();
    in->device_name = device_name;
    in->stack_frames = stack_frames;
    in->code_frame = code_frame;
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
