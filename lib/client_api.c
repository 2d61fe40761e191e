/* SPDX-License-Identifier: MIT */
/* The client API: what include/gpuleak.h's inline functions reach.
 *
 * These run on the program's own threads, outside any CUDA callback, so they
 * may take locks, call the driver and print.  Misuse (an unknown checkpoint, a
 * pool address gpuleak never saw) gets one line in the log naming the call and
 * the value, and a -1 for the caller: a memory tool must not abort the program
 * it checks. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuleak.h"
#include "client_api.h"
#include "check_history.h"
#include "check/checkpoints.h"
#include "save/log_writer.h"
#include "check/framework.h"
#include "check/growth.h"
#include "check/pools.h"
#include "check/leak_run.h"
#include "runtime.h"
#include "event/api.h"
#include "event/dispatch.h"
#include "event/event.h"
#include "report/report_frames.h"
#include "stack/stack_capture.h"
#include "base/thread.h"
#include "base/tool.h"
#include "track/regions.h"
#include "track/tracker.h"

#define GL_EXPORT __attribute__((visibility("default")))

/* gpuleak.h's kinds are an ABI: a program built against it sizes struct
 * gpuleak_counts by its own GPULEAK_NKINDS, indexes it by GPULEAK_SUPPRESSED,
 * and GPULEAK_KINDS() carries five bits.  GL_LEAK_DEATH cannot join them: put
 * before GPULEAK_SUPPRESSED it renumbers it, put after it it grows the struct,
 * and either way a runtime would write past the counts an older program passes.
 * Nor does it need to: only a saved log of a process that died has blocks live
 * at death, never a running program that asks.  So the public kinds are the
 * internal ones up to cached, then suppressed; later internal kinds are not
 * exposed here. */
#define PUBLIC_LEAK_KINDS (GL_LEAK_CACHED + 1)
#define PUBLIC_LEAK_KIND_BITS ((1u << PUBLIC_LEAK_KINDS) - 1)
_Static_assert(GPULEAK_NKINDS == PUBLIC_LEAK_KINDS + 1,
               "gpuleak.h's kinds: the leak kinds up to cached, then suppressed");
_Static_assert((int)GPULEAK_DEFINITE == (int)GL_LEAK_DEFINITE &&
                   (int)GPULEAK_CACHED == (int)GL_LEAK_CACHED,
               "gpuleak.h's kinds index gl_leak_kind");
_Static_assert(GPULEAK_KINDS(~0u) == GPULEAK_KINDS(PUBLIC_LEAK_KIND_BITS),
               "GPULEAK_KINDS() carries exactly the public kinds");

/* Usable now: loaded, not disabled, and tracking or ready to track once the
 * program initializes CUDA. */
static bool usable(void)
{
    int s = atomic_load(&gl_runtime.state);
    return s == GL_RT_IDLE || s == GL_RT_TRACKING;
}

GL_EXPORT int gpuleak_runtime_running(void) { return usable(); }

/* Take the leak-run lock, if checks are still possible once it is held: the
 * exit report may have run while this thread waited for it.  Returns whether
 * the lock is held. */
static bool lock_usable(void)
{
    gl_leak_run_lock();
    if (usable())
        return true;
    gl_leak_run_unlock();
    return false;
}

static bool checkpoint_name_ok(const char *call, const char *name)
{
    if (name && name[0] && strlen(name) < GL_CHECKPOINT_NAME_MAX)
        return true;
    gl_runtime_message("gpuleak: %s: a checkpoint name must be 1 to %d characters%s", call,
                       GL_CHECKPOINT_NAME_MAX - 1, name ? "" : " (got NULL)");
    return false;
}

/* The named checkpoint, or NULL after a line to the log. */
static struct gl_checkpoint *named(const char *call, const char *name)
{
    struct gl_checkpoint *c = gl_checkpoints_find(name);
    if (!c)
        gl_runtime_message(
            "gpuleak: %s: no checkpoint named \"%s\" (set one with gpuleak_checkpoint)", call,
            name);
    return c;
}

/* Growth detection at a checkpoint: every site's live bytes now (the depot's
 * and the framework's), compared with the previous checkpoint's. */
static void check_growth(uint64_t ordinal, const char *name)
{
    size_t nfw;
    const struct gl_framework_site *fw = gl_framework_take_sites(&nfw);
    if (!gl_growth_checkpoints())
        return;
    size_t all = gl_stack_depot_sites(NULL, 0), bytes = (all + 64) * sizeof(struct gl_site_stats);
    struct gl_site_stats *sites = gl_tool_map(bytes);
    size_t n = sites ? gl_stack_depot_sites(sites, all + 64) : 0;
    if (n > all + 64)
        n = all + 64;
    gl_growth_check(ordinal, name, sites, n, fw, nfw);
    if (sites)
        gl_tool_unmap(sites, bytes);
}

GL_EXPORT int gpuleak_runtime_checkpoint(const char *name)
{
    static uint64_t taken;
    if (!usable() || !checkpoint_name_ok("gpuleak_checkpoint", name))
        return -1;
    if (!lock_usable())
        return -1;
    int rc = -1;
    struct gl_checkpoint *c = gl_checkpoints_get(name);
    if (c) {
        /* A position in the allocation numbering, and a fresh scope for the
         * delta checks made since it: nothing is scanned now. */
        c->seq = gl_tracker_seq_mark();
        gl_checkpoints_ref_free(&c->ref);
        gl_framework_checkpoint_taken(++taken, name);
        check_growth(taken, name);
        /* --save: the checkpoint in the log, and the objects loaded since
         * (a program's thread, outside any CUDA call: the loader's list may
         * be walked). */
        gl_log_writer_mark(taken, c->seq, name);
        gl_log_writer_modules();
        rc = 0;
    }
    gl_leak_run_unlock();
    return rc;
}

GL_EXPORT int gpuleak_runtime_growth_checkpoints(void) { return (int)gl_growth_checkpoints(); }

static enum gl_framework framework_named(const char *call, const char *name)
{
    enum gl_framework f = gl_framework_parse(name);
    if (f == GL_FW_NONE)
        gl_runtime_message("gpuleak: %s: unknown framework \"%s\" (expected PyTorch, CuPy or JAX)",
                           call, name ? name : "(null)");
    return f;
}

GL_EXPORT int gpuleak_runtime_framework_usage(const char *framework, int device,
                                              unsigned long long in_use,
                                              unsigned long long reserved)
{
    enum gl_framework f = framework_named("gpuleak_framework_usage", framework);
    if (f == GL_FW_NONE || !lock_usable())
        return -1;
    int rc = gl_framework_set_usage(f, device, in_use, reserved);
    gl_leak_run_unlock();
    if (rc < 0)
        gl_runtime_message("gpuleak: gpuleak_framework_usage: device %d out of range (0..%d)",
                           device, GL_FW_MAX_DEVICES - 1);
    return rc;
}

GL_EXPORT int gpuleak_runtime_framework_site(const char *framework, const char *frames,
                                             unsigned long long bytes, unsigned long long tensors)
{
    enum gl_framework f = framework_named("gpuleak_framework_site", framework);
    if (f == GL_FW_NONE || !frames || !lock_usable())
        return -1;
    int rc = gl_framework_add_site(f, frames, bytes, tensors);
    gl_leak_run_unlock();
    return rc;
}

static const char *mode_word(enum gl_report_select s)
{
    switch (s) {
    case GL_SELECT_NEW:
        return "new";
    case GL_SELECT_ADDED:
        return "added";
    case GL_SELECT_CHANGED:
        return "changed";
    default:
        return "full";
    }
}

GL_EXPORT long gpuleak_runtime_leak_check(int mode, const char *since, char *buf, size_t buflen)
{
    struct gl_caller_context cc;
    GL_CALLER_CONTEXT(&cc);
    if (!usable())
        return -1;
    unsigned kinds = 0;
    bool kinds_given = (mode & GPULEAK_KINDS(0)) != 0;
    if (kinds_given) {
        kinds = ((unsigned)mode >> 8) & PUBLIC_LEAK_KIND_BITS;
        mode &= ~GPULEAK_KINDS(PUBLIC_LEAK_KIND_BITS);
    }
    if (mode < GPULEAK_CHECK_FULL || mode > GPULEAK_CHECK_CHANGED) {
        gl_runtime_message(
            "gpuleak: gpuleak_leak_check: unknown mode %d (expected GPULEAK_CHECK_FULL, "
            "_NEW, _ADDED or _CHANGED, perhaps | GPULEAK_KINDS(...))",
            mode);
        return -1;
    }
    enum gl_report_select select = (enum gl_report_select)mode; /* same order */
    static unsigned long checks;

    if (!lock_usable())
        return -1;
    struct gl_checkpoint *cp = NULL;
    if (since && !(cp = named("gpuleak_leak_check", since))) {
        gl_leak_run_unlock();
        return -1;
    }
    /* The blocks allocated since the checkpoint (all without one); deltas
     * against the previous check of the same scope. */
    uint64_t since_seq = cp ? cp->seq : 0;
    struct gl_leak_ref *scope = cp ? &cp->ref : gl_checkpoints_last_check();
    struct gl_leak_run run;
    if (gl_leak_run(&run, since_seq, &cc) < 0) {
        gl_leak_run_unlock();
        return -1;
    }
    struct gl_options opt = gl_runtime.opt;
    opt.leak_check = GL_LEAK_CHECK_FULL; /* as VALGRIND_DO_LEAK_CHECK: always in full */
    if (kinds_given)
        opt.show_leak_kinds = opt.errors_for_leak_kinds = kinds;
    struct gl_report_input in;
    gl_leak_run_input(&run, &in);
    in.opt = &opt;
    if (select != GL_SELECT_ALL) {
        in.delta = scope;
        in.select = select;
    }
    if (cp)
        in.since = cp->name;

    char title[256], bytes[GL_U64_COMMAS_LEN], blocks[GL_U64_COMMAS_LEN];
    char what[128];
    if (cp)
        snprintf(what, sizeof what, "%s, allocated since checkpoint \"%s\"", mode_word(select),
                 cp->name);
    else if (select == GL_SELECT_ALL)
        snprintf(what, sizeof what, "full");
    else
        snprintf(what, sizeof what, "%s since the last check", mode_word(select));
    snprintf(title, sizeof title, "Leak check %lu (%s): %s bytes in %s blocks in use", ++checks,
             what, gl_out_u64_commas(bytes, run.leaks.in_use.bytes),
             gl_out_u64_commas(blocks, run.leaks.in_use.blocks));

    struct gl_out out;
    bool must_close = false;
    int fd = -1;
    if (buf && buflen) {
        gl_out_init_mem(&out, buf, buflen);
    } else {
        fd = gl_runtime_open_log(&must_close);
        gl_out_init(&out, fd, (int)gl_runtime.pid);
    }
    uint64_t errors = gl_report_text_check(&out, &in, title);
    gl_check_history_add(&in, checks, since_seq, buf && buflen, errors);
    gl_out_flush(&out);
    if (must_close)
        close(fd);
    gl_checkpoints_ref_take(scope, &run.leaks);
    gl_leak_run_free(&run);
    gl_leak_run_unlock();
    return errors > (uint64_t)LONG_MAX ? LONG_MAX : (long)errors;
}

GL_EXPORT int gpuleak_runtime_count_leaks(const char *since, struct gpuleak_counts *out)
{
    struct gl_caller_context cc;
    GL_CALLER_CONTEXT(&cc);
    memset(out, 0, sizeof *out);
    if (!usable())
        return -1;
    if (!lock_usable())
        return -1;
    struct gl_checkpoint *cp = NULL;
    if (since && !(cp = named("gpuleak_count_leaks", since))) {
        gl_leak_run_unlock();
        return -1;
    }
    struct gl_leak_run run;
    int rc = gl_leak_run(&run, cp ? cp->seq : 0, &cc);
    if (rc == 0) {
        for (int k = 0; k < PUBLIC_LEAK_KINDS; k++) {
            out->bytes[k] = run.leaks.kind[k].bytes;
            out->blocks[k] = run.leaks.kind[k].blocks;
        }
        out->bytes[GPULEAK_SUPPRESSED] = run.leaks.suppressed.bytes;
        out->blocks[GPULEAK_SUPPRESSED] = run.leaks.suppressed.blocks;
        gl_leak_run_free(&run);
    }
    gl_leak_run_unlock();
    return rc;
}

/* A block the client API can name by address: an allocation, or else a pool's
 * sub-allocation there. */
static bool find_block(const void *ptr, struct gl_block_info *b)
{
    uint64_t a = (uint64_t)(uintptr_t)ptr;
    return gl_tracker_lookup(gl_key_make(GL_NS_ADDR, a), b) ||
           gl_tracker_lookup(gl_key_make(GL_NS_POOL_SUB, a), b);
}

GL_EXPORT int gpuleak_runtime_ignore(const void *ptr)
{
    if (!usable())
        return -1;
    struct gl_block_info b;
    if (!find_block(ptr, &b)) {
        gl_runtime_message("gpuleak: gpuleak_ignore: no block gpuleak tracks starts at %p", ptr);
        return -1;
    }
    struct gl_event ev = {.type = GL_EV_IGNORE, .key = b.key, .tid = gl_thread_id()};
    return gl_dispatch(&ev) ? 0 : -1;
}

GL_EXPORT int gpuleak_runtime_tracking(int delta)
{
    if (!usable())
        return -1;
    struct gl_thread *self = gl_thread_self();
    if (!self)
        return -1;
    if (delta < 0 && self->disabled == 0) {
        gl_runtime_message("gpuleak: gpuleak_enable: called without a matching gpuleak_disable on "
                           "thread %u",
                           self->tid);
        return -1;
    }
    self->disabled += delta > 0 ? 1 : -1;
    return self->disabled;
}

static int pool_create(const void *pool, const char *name)
{
    struct gl_event ev = {.type = GL_EV_POOL_CREATE,
                          .key = gl_key_make(GL_NS_ADDR, (uint64_t)(uintptr_t)pool),
                          .tid = gl_thread_id()};
    if (!gl_dispatch(&ev)) {
        gl_runtime_message("gpuleak: gpuleak_pool_create: %p is not the start of a block gpuleak "
                           "tracks (a pool is memory from cudaMalloc or the like)",
                           pool);
        return -1;
    }
    gl_pools_set_name(ev.key, name);
    return 0;
}

/* The pool's block, or false after a line to the log. */
static bool pool_block(const char *call, const void *pool, struct gl_block_info *b)
{
    if (gl_tracker_lookup(gl_key_make(GL_NS_ADDR, (uint64_t)(uintptr_t)pool), b) &&
        (b->flags & GL_BLK_POOL))
        return true;
    gl_runtime_message("gpuleak: %s: %p is not a pool (declare it with gpuleak_pool_create)", call,
                       pool);
    return false;
}

static int pool_alloc(const void *pool, const void *addr, size_t size)
{
    struct gl_block_info p;
    if (!pool_block("gpuleak_pool_alloc", pool, &p))
        return -1;
    uint64_t a = (uint64_t)(uintptr_t)addr, start = gl_key_value(p.key);
    if (a < start ||
        (!(p.flags & GL_BLK_SIZE_UNKNOWN) && (a - start > p.size || size > p.size - (a - start)))) {
        gl_runtime_message(
            "gpuleak: gpuleak_pool_alloc: %zu bytes at %p lie outside pool %p of %" PRIu64 " bytes",
            size, addr, pool, p.size);
        return -1;
    }
    struct gl_thread *self = gl_thread_self();
    struct gl_event ev = {
        .type = GL_EV_ALLOC,
        .kind = GL_MEM_POOL_SUB,
        .api = GL_API_CLIENT_POOL_ALLOC,
        .device = p.device,
        .flags = self && self->disabled > 0 ? GL_EVF_IGNORED : 0,
        .tid = self ? self->tid : 0,
        .stack = gl_stack_capture(),
        .key = gl_key_make(GL_NS_POOL_SUB, a),
        .size = size,
        .ctx = p.ctx,
        .aux = p.key,
    };
    gl_dispatch(&ev);
    return 0;
}

static int pool_free(const void *pool, const void *addr)
{
    struct gl_block_info p, sub;
    if (!pool_block("gpuleak_pool_free", pool, &p))
        return -1;
    uint64_t key = gl_key_make(GL_NS_POOL_SUB, (uint64_t)(uintptr_t)addr);
    if (!gl_tracker_lookup(key, &sub) || sub.aux != p.key) {
        gl_runtime_message("gpuleak: gpuleak_pool_free: no sub-allocation of pool %p starts at %p",
                           pool, addr);
        return -1;
    }
    struct gl_event ev = {
        .type = GL_EV_FREE, .api = GL_API_CLIENT_POOL_FREE, .key = key, .tid = gl_thread_id()};
    gl_dispatch(&ev);
    return 0;
}

static int pool_destroy(const void *pool)
{
    struct gl_event ev = {.type = GL_EV_POOL_DESTROY,
                          .key = gl_key_make(GL_NS_ADDR, (uint64_t)(uintptr_t)pool),
                          .tid = gl_thread_id()};
    struct gl_block_info p;
    if (!pool_block("gpuleak_pool_destroy", pool, &p))
        return -1;
    gl_dispatch(&ev);
    gl_pools_set_name(ev.key, NULL);
    return 0;
}

GL_EXPORT int gpuleak_runtime_pool(int op, const void *pool, const void *addr, size_t size,
                                   const char *name)
{
    /* Pools are tracked blocks: nothing to name before tracking starts. */
    if (!gl_runtime_tracking())
        return -1;
    switch (op) {
    case GPULEAK_POOL_CREATE:
        return pool_create(pool, name);
    case GPULEAK_POOL_ALLOC:
        return pool_alloc(pool, addr, size);
    case GPULEAK_POOL_FREE:
        return pool_free(pool, addr);
    case GPULEAK_POOL_DESTROY:
        return pool_destroy(pool);
    default:
        gl_runtime_message("gpuleak: gpuleak_runtime_pool: unknown operation %d", op);
        return -1;
    }
}

/* ---- profiled regions (track/regions.h) ---- */

_Static_assert(GPULEAK_PROFILE_SITES == GL_REGIONS_TOP, "gpuleak.h's sites are the regions'");

GL_EXPORT int gpuleak_runtime_profile_begin(const char *name)
{
    /* Before CUDA starts too: the region sees its first allocations. */
    if (!usable())
        return -1;
    int id = gl_regions_open(name, gl_thread_id());
    if (id < 0) {
        char other[GL_REGIONS_NAME_MAX];
        unsigned n = gl_regions_open_count(other, sizeof other);
        gl_runtime_message("gpuleak: gpuleak_profile_begin: %u regions are open already (end "
                           "each with gpuleak_profile_end; one of them is \"%s\")",
                           n, other);
    }
    return id;
}

static int device_of_slot(unsigned slot)
{
    if (slot < GL_STATS_DEVICES)
        return (int)slot;
    return slot == GL_STATS_SLOT_HOST ? -1 : -2;
}

static void profile_device(const struct gl_regions_device *d, struct gpuleak_profile_device *o)
{
    memset(o, 0, sizeof *o);
    o->device = device_of_slot(d->slot);
    o->flags = d->sites_exact ? 0 : GPULEAK_PROFILE_SITES_INEXACT;
    o->live_at_open = d->live_open;
    o->live_at_close = d->live_close;
    o->peak = d->peak;
    o->peak_seq = d->peak_seq;
    o->peak_ns = d->peak_ns;
    o->allocated = d->alloc_bytes;
    o->freed = d->freed_bytes;
    o->allocs = d->allocs;
    o->frees = d->frees;
    o->nsites = d->nsites;
    for (unsigned i = 0; i < d->nsites; i++) {
        o->sites[i].bytes = d->sites[i].bytes;
        o->sites[i].blocks = d->sites[i].blocks;
        o->sites[i].stack = d->sites[i].stack;
    }
}

/* gpuleak.h's rule for the output structs: the caller's size may be smaller
 * (an older header) or larger (a newer one) than this runtime's.  Write
 * min(both) bytes, and zeros over the rest of the caller's: never more than
 * it holds, and members this runtime does not know read 0. */
static void put_sized(void *to, size_t to_size, const void *from, size_t from_size)
{
    size_t n = to_size < from_size ? to_size : from_size;
    memcpy(to, from, n);
    if (to_size > n)
        memset((char *)to + n, 0, to_size - n);
}

/* The sites a caller's struct gpuleak_profile_device of size bytes holds. */
static unsigned sites_held(size_t size)
{
    size_t at = offsetof(struct gpuleak_profile_device, sites);
    size_t n = size > at ? (size - at) / sizeof(struct gpuleak_profile_site) : 0;
    return n < GPULEAK_PROFILE_SITES ? (unsigned)n : GPULEAK_PROFILE_SITES;
}

GL_EXPORT int gpuleak_runtime_profile_end(int region, struct gpuleak_profile *out, size_t out_size,
                                          struct gpuleak_profile_device *devices,
                                          size_t device_size, int max_devices, int max_sites)
{
    if (out && out_size)
        memset(out, 0, out_size);
    if (!devices || !device_size || max_devices < 0)
        max_devices = 0;
    if (!usable()) {
        /* Ended all the same (a start that failed, a fork child, the exit
         * report written): its slot and the dispatcher's demand go back. */
        gl_regions_close(region, NULL, 0);
        return -1;
    }
    /* No sites asked for, or nowhere to put them: no walk of the blocks. */
    unsigned top = 0;
    if (max_devices > 0 && max_sites > 0) {
        top = sites_held(device_size);
        if ((unsigned)max_sites < top)
            top = (unsigned)max_sites;
    }
    /* 11 KiB: tool memory, not the caller's stack. */
    struct gl_regions_result *r = gl_tool_alloc(sizeof *r);
    if (!r) {
        gl_regions_close(region, NULL, 0);
        gl_runtime_message("gpuleak: gpuleak_profile_end: out of memory");
        return -1;
    }
    if (gl_regions_close(region, r, top) < 0) {
        gl_runtime_message("gpuleak: gpuleak_profile_end: %d names no open region (ended "
                           "already, or not from gpuleak_profile_begin)",
                           region);
        gl_tool_free(r, sizeof *r);
        return -1;
    }
    if (out) {
        struct gpuleak_profile p;
        memset(&p, 0, sizeof p);
        p.duration_ns = r->duration_ns;
        p.other_thread_events = r->other_thread_events;
        p.tid = r->tid;
        p.ndevices = (int)r->ndevices;
        put_sized(out, out_size, &p, sizeof p);
    }
    int n = 0;
    for (unsigned d = 0; d < r->ndevices && n < max_devices; d++, n++) {
        struct gpuleak_profile_device o;
        profile_device(&r->dev[d], &o);
        put_sized((char *)devices + (size_t)n * device_size, device_size, &o, sizeof o);
    }
    gl_tool_free(r, sizeof *r);
    return n;
}

/* "FILE:LINE:FUNCTION" lines, as gpuleak_framework_site takes them. */
static size_t frame_lines(const struct gl_frame *frames, unsigned n, char *buf, size_t buflen)
{
    size_t len = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct gl_frame *f = &frames[i];
        bool lines = f->file && f->line > 0;
        const char *file = lines ? f->file : f->object ? f->object : "???";
        char *at = buf && len < buflen ? buf + len : NULL;
        int w = snprintf(at, at ? buflen - len : 0, "%s:%d:%s\n", file, lines ? f->line : 0,
                         f->function ? f->function : "???");
        if (w > 0)
            len += (size_t)w;
    }
    return len;
}

GL_EXPORT long gpuleak_runtime_profile_frames(unsigned stack, char *buf, size_t buflen)
{
    if (buf && buflen)
        buf[0] = '\0';
    if (!stack || !usable() || !lock_usable())
        return -1;
    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(gl_leak_run_stack_frames, stack,
                                                   (unsigned)gl_runtime.opt.num_callers, NULL, &n);
    long len = -1;
    if (frames) {
        len = (long)frame_lines(frames, n, buflen ? buf : NULL, buflen);
        free(frames);
    }
    gl_leak_run_unlock();
    return len;
}

static const struct gpuleak_api api_table = {
    .magic = GPULEAK_API_MAGIC,
    .version = GPULEAK_API_VERSION,
    .running = gpuleak_runtime_running,
    .checkpoint = gpuleak_runtime_checkpoint,
    .leak_check = gpuleak_runtime_leak_check,
    .count_leaks = gpuleak_runtime_count_leaks,
    .ignore = gpuleak_runtime_ignore,
    .tracking = gpuleak_runtime_tracking,
    .pool = gpuleak_runtime_pool,
    .framework_usage = gpuleak_runtime_framework_usage,
    .framework_site = gpuleak_runtime_framework_site,
    .growth_checkpoints = gpuleak_runtime_growth_checkpoints,
    .profile_begin = gpuleak_runtime_profile_begin,
    .profile_end = gpuleak_runtime_profile_end,
    .profile_frames = gpuleak_runtime_profile_frames,
};

void gl_client_api_publish(void)
{
    char value[8 + 3 + 16 + 1];
    snprintf(value, sizeof value, "%08x:0x%lx", gpuleak_image_id(),
             (unsigned long)(uintptr_t)&api_table);
    setenv(GPULEAK_API_ENV, value, 1);
}
