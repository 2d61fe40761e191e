/* SPDX-License-Identifier: MIT */
#include "track/oom_snapshot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/tool.h"
#include "common/sort.h"
#include "event/mem_kind.h"
#include "track/stats.h"
#include "track/tracker.h"

static _Atomic bool on;
static _Atomic uint64_t failures;

/* The kept picture, its sites in tool memory (sites_bytes mapped), and the
 * statistics' live bytes on its device when it was taken: what a later
 * failure must exceed to replace it.  Failing threads take it in turn. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gl_oom_snapshot kept;
static size_t sites_bytes;
static uint64_t kept_live;

#define BY_STACK(a, b) ((a)->stack < (b)->stack)
GL_SORT_DEFINE(sort_by_stack, struct gl_block_info, BY_STACK)

void gl_oom_snapshot_configure(bool want) { atomic_store(&on, want); }

static bool wanted(void) { return atomic_load(&on); }

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

static void drop_kept(void)
{
    if (kept.sites)
        gl_tool_unmap(kept.sites, sites_bytes);
    memset(&kept, 0, sizeof kept);
    sites_bytes = 0;
    kept_live = 0;
}

/* Inside the failing call: no CUDA, no malloc. */
static void on_alloc_failed(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    uint64_t number = atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed) + 1;
    int device = gl_dispatch_device_of(ev);
    struct gl_stat_device d;
    gl_stats_device(gl_stats_slot(device), &d);
    pthread_mutex_lock(&lock);
    if (!kept.number || d.cur_bytes > kept_live) {
        struct gl_site_stats *s;
        size_t n, bytes;
        if (picture(device, &s, &n, &bytes)) {
            drop_kept();
            kept = (struct gl_oom_snapshot){
                .number = number,
                .device = device,
                .api = ev->api,
                .kind = ev->kind,
                .size = ev->size,
                .stack = ev->stack,
                .sites = s,
                .nsites = n,
            };
            for (size_t i = 0; i < n; i++) {
                kept.live_bytes += s[i].live_bytes;
                kept.live_blocks += s[i].live_blocks;
            }
            sites_bytes = bytes;
            kept_live = d.cur_bytes;
        }
    }
    pthread_mutex_unlock(&lock);
}

bool gl_oom_snapshot_read(struct gl_oom_snapshot *out)
{
    pthread_mutex_lock(&lock);
    *out = kept;
    out->failures = atomic_load_explicit(&failures, memory_order_relaxed);
    out->sites = kept.nsites ? malloc(kept.nsites * sizeof *out->sites) : NULL;
    if (out->sites)
        memcpy(out->sites, kept.sites, kept.nsites * sizeof *out->sites);
    else
        out->nsites = 0;
    pthread_mutex_unlock(&lock);
    return out->number != 0;
}

void gl_oom_snapshot_free(struct gl_oom_snapshot *s)
{
    free(s->sites);
    memset(s, 0, sizeof *s);
}

static void reset(void)
{
    pthread_mutex_lock(&lock);
    drop_kept();
    atomic_store(&failures, 0);
    pthread_mutex_unlock(&lock);
}

static void after_fork(void) { pthread_mutex_init(&lock, NULL); }

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
