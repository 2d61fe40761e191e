/* SPDX-License-Identifier: MIT */
#include "track/oom_snapshot.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/spin.h"
#include "base/tool.h"
#include "common/sort.h"
#include "event/mem_kind.h"
#include "track/errors.h"
#include "track/stats.h"
#include "track/tracker.h"

static _Atomic bool on;
static _Atomic bool use_totals = true;
static _Atomic uint64_t failures;

/* How full a failure found its device: what decides which picture is kept. */
struct fullness {
    uint64_t number; /* the failure's (0: none) */
    int device;
    uint64_t live;  /* the statistics' live bytes on the device */
    uint64_t total; /* the device's memory (NVML), 0: unknown */
};

/* The kept picture, its sites in tool memory (sites_bytes mapped), and how
 * full its failure found the device: what a later failure must exceed to
 * replace it.  The lock is a leaf spinlock, held only to compare and swap
 * (or copy, for a reader): pictures are taken with no lock held.
 * generation counts the swaps, for a reader that copies in two steps. */
static gl_spinlock lock = GL_SPINLOCK_INIT;
static struct gl_oom_snapshot kept;
static size_t sites_bytes;
static struct fullness kept_at;
static uint64_t generation;

/* Each device's total memory as NVML told it, asked once (0: not yet asked,
 * UINT64_MAX: unknown). */
static _Atomic uint64_t totals[GL_STATS_DEVICES];

#define BY_STACK(a, b) ((a)->stack < (b)->stack)
GL_SORT_DEFINE(sort_by_stack, struct gl_block_info, BY_STACK)

void gl_oom_snapshot_configure(bool want) { atomic_store(&on, want); }

static bool wanted(void) { return atomic_load(&on); }

void gl_oom_snapshot_use_device_totals(bool use) { atomic_store(&use_totals, use); }

static uint64_t device_total(int device)
{
    if (device < 0 || !gl_errors_device_memory || !atomic_load(&use_totals))
        return 0;
    uint64_t t = 0, free_bytes;
    if (device < GL_STATS_DEVICES)
        t = atomic_load_explicit(&totals[device], memory_order_relaxed);
    if (!t) {
        if (!gl_errors_device_memory(device, &free_bytes, &t) || !t)
            t = UINT64_MAX;
        if (device < GL_STATS_DEVICES)
            atomic_store_explicit(&totals[device], t, memory_order_relaxed);
    }
    return t == UINT64_MAX ? 0 : t;
}

/* Does failure a replace the picture of failure b?  When a is fuller: relative
 * to their devices' totals when the devices differ and both totals are known,
 * else in bytes; of equals, the first. */
static bool replaces(const struct fullness *a, const struct fullness *b)
{
    if (!b->number)
        return true;
    unsigned __int128 x = a->live, y = b->live;
    if (a->device != b->device && a->total && b->total) {
        x *= b->total;
        y *= a->total;
    }
    return x > y || (x == y && a->number < b->number);
}

/* The live blocks of device (counted kinds), summed by stack into tool
 * memory; false when memory ran out (the kept picture stays). */
static bool picture(int device, struct gl_site_stats **out, size_t *nout, size_t *out_bytes)
{
    struct gl_block_info *b;
    size_t nb, bytes;
    *out = NULL;
    *nout = *out_bytes = 0;
    if (gl_tracker_snapshot(&b, &nb, &bytes) != 0)
        return false;
    size_t keep = 0;
    for (size_t i = 0; i < nb; i++)
        if (b[i].device == device && gl_mem_kind_counted(b[i].kind))
            b[keep++] = b[i];
    sort_by_stack(b, keep);
    size_t n = 0;
    for (size_t i = 0; i < keep; i++)
        if (!i || b[i].stack != b[i - 1].stack)
            n++;
    struct gl_site_stats *s = NULL;
    if (n && !(s = gl_tool_map(n * sizeof *s))) {
        if (b)
            gl_tool_unmap(b, bytes);
        return false;
    }
    size_t j = 0;
    for (size_t i = 0; i < keep; i++) {
        if (i && b[i].stack != b[i - 1].stack)
            j++;
        s[j].stack = b[i].stack;
        s[j].live_bytes += b[i].size;
        s[j].live_blocks++;
    }
    if (b)
        gl_tool_unmap(b, bytes);
    *out = s;
    *nout = n;
    *out_bytes = n * sizeof *s;
    return true;
}

/* Inside the failing call: no CUDA, no malloc, the lock held only to compare
 * and swap. */
static void on_alloc_failed(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    uint64_t number = atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed) + 1;
    int device = gl_dispatch_device_of(ev);
    struct gl_stat_device d;
    gl_stats_device(gl_stats_slot(device), &d);
    struct fullness f = {
        .number = number, .device = device, .live = d.cur_bytes, .total = device_total(device)};
    gl_spin_lock(&lock);
    bool fuller = replaces(&f, &kept_at);
    gl_spin_unlock(&lock);
    if (!fuller)
        return;

    struct gl_oom_snapshot s = {
        .number = number,
        .device = device,
        .device_total = f.total,
        .api = ev->api,
        .kind = ev->kind,
        .size = ev->size,
        .stack = ev->stack,
    };
    size_t bytes;
    if (!picture(device, &s.sites, &s.nsites, &bytes))
        return;
    for (size_t i = 0; i < s.nsites; i++) {
        s.live_bytes += s.sites[i].live_bytes;
        s.live_blocks += s.sites[i].live_blocks;
    }

    /* Another failure may have been kept meanwhile: compare again. */
    struct gl_site_stats *loser = s.sites;
    size_t loser_bytes = bytes;
    gl_spin_lock(&lock);
    if (replaces(&f, &kept_at)) {
        loser = kept.sites;
        loser_bytes = sites_bytes;
        kept = s;
        sites_bytes = bytes;
        kept_at = f;
        generation++;
    }
    gl_spin_unlock(&lock);
    if (loser)
        gl_tool_unmap(loser, loser_bytes);
}

/* The lock, waiting about 100 ms at most: a failing call holds it for a few
 * stores, but the thread reading may be the one holding it (a fatal signal
 * landed there), or the holder may be stopped. */
static bool lock_bounded(void)
{
    for (unsigned i = 0;; i++) {
        if (gl_spin_trylock(&lock, 4096))
            return true;
        if (i >= 100)
            return false;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

bool gl_oom_snapshot_read(struct gl_oom_snapshot *out)
{
    memset(out, 0, sizeof *out);
    /* The sites are malloc'ed with the lock let go (never under it: a
     * failing call may be waiting for it inside a malloc that allocates
     * device memory), then copied if the picture is still the one counted; a
     * swap meanwhile starts over. */
    for (unsigned tries = 0; tries < 64; tries++) {
        if (!lock_bounded())
            break;
        struct gl_oom_snapshot s = kept;
        uint64_t gen = generation;
        gl_spin_unlock(&lock);
        struct gl_site_stats *sites = s.nsites ? malloc(s.nsites * sizeof *sites) : NULL;
        if (!lock_bounded()) {
            free(sites);
            break;
        }
        bool same = gen == generation;
        if (same && sites)
            memcpy(sites, kept.sites, s.nsites * sizeof *sites);
        gl_spin_unlock(&lock);
        if (!same) {
            free(sites);
            continue;
        }
        *out = s;
        out->failures = atomic_load_explicit(&failures, memory_order_relaxed);
        out->sites = sites;
        if (!sites)
            out->nsites = 0;
        return out->number != 0;
    }
    out->failures = atomic_load_explicit(&failures, memory_order_relaxed);
    out->busy = true;
    return false;
}

void gl_oom_snapshot_free(struct gl_oom_snapshot *s)
{
    free(s->sites);
    memset(s, 0, sizeof *s);
}

void gl_oom_snapshot_hold(bool held)
{
    if (held)
        gl_spin_lock(&lock);
    else
        gl_spin_unlock(&lock);
}

static void reset(void)
{
    gl_spin_lock(&lock);
    struct gl_site_stats *sites = kept.sites;
    size_t bytes = sites_bytes;
    memset(&kept, 0, sizeof kept);
    memset(&kept_at, 0, sizeof kept_at);
    sites_bytes = 0;
    generation++;
    atomic_store(&failures, 0);
    gl_spin_unlock(&lock);
    if (sites)
        gl_tool_unmap(sites, bytes);
    for (unsigned i = 0; i < GL_STATS_DEVICES; i++)
        atomic_store(&totals[i], 0);
}

static void after_fork(void) { gl_spin_reset(&lock); }

static const struct gl_consumer consumer = {
    .on = {[GL_EV_ALLOC_FAILED] = on_alloc_failed},
    .wanted = wanted,
};

const struct gl_component gl_oom_snapshot_component = {
    .name = "oom_snapshot",
    .reset = reset,
    .after_fork = after_fork,
    .consumer = &consumer,
};
