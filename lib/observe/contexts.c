/* SPDX-License-Identifier: MIT */
#include "observe/contexts.h"

#include <pthread.h>
#include <stdatomic.h>

#include "base/gl_uthash.h"
#include "base/spin.h"
#include "common/util.h"

#define MAX_CONTEXTS 1024

/* Slots are claimed under a lock and published with release stores; readers scan
 * without a lock.  A destroyed context's slot is cleared (its pointer value may
 * come back for a new context, on another device). */
static struct {
    _Atomic uint64_t ctx;
    _Atomic int device;
} slots[MAX_CONTEXTS];
static _Atomic unsigned nslots;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gl_ctx_device_query_fn query;
/* The first device a context was seen on, and whether another one has been. */
static _Atomic int first_device = -1;
static GL_READ_MOSTLY atomic_bool devices_differ;

static void note_device(int dev)
{
    if (dev < 0)
        return;
    int none = -1;
    if (!atomic_compare_exchange_strong(&first_device, &none, dev) && none != dev)
        atomic_store(&devices_differ, true);
}

GL_HOT bool gl_contexts_several_devices(void)
{
    return atomic_load_explicit(&devices_differ, memory_order_relaxed);
}

void gl_contexts_set_query(gl_ctx_device_query_fn fn) { query = fn; }

static int find(uint64_t ctx)
{
    unsigned n = atomic_load_explicit(&nslots, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&slots[i].ctx, memory_order_acquire) == ctx)
            return atomic_load_explicit(&slots[i].device, memory_order_relaxed);
    return -2;
}

static int add(uint64_t ctx)
{
    int dev = query ? query(ctx) : -1;
    note_device(dev);
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots), free_slot = n;
    for (unsigned i = 0; i < n; i++) {
        uint64_t c = atomic_load(&slots[i].ctx);
        if (c == ctx) {
            atomic_store(&slots[i].device, dev);
            pthread_mutex_unlock(&lock);
            return dev;
        }
        if (c == 0 && free_slot == n)
            free_slot = i;
    }
    if (free_slot < MAX_CONTEXTS) {
        atomic_store_explicit(&slots[free_slot].device, dev, memory_order_relaxed);
        atomic_store_explicit(&slots[free_slot].ctx, ctx, memory_order_release);
        if (free_slot == n)
            atomic_store_explicit(&nslots, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return dev;
}

void gl_contexts_created(uint64_t ctx)
{
    if (ctx)
        add(ctx);
}

void gl_contexts_destroyed(uint64_t ctx)
{
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load(&slots[i].ctx) == ctx)
            atomic_store(&slots[i].ctx, 0);
    pthread_mutex_unlock(&lock);
}

GL_HOT int gl_contexts_device(uint64_t ctx)
{
    if (!ctx)
        return -1;
    int dev = find(ctx);
    return dev != -2 ? dev : add(ctx);
}

/* ---- streams ---- */

struct stream_entry {
    uint64_t stream, ctx;
    UT_hash_handle hh;
};
static struct stream_entry *streams;
static gl_spinlock streams_lock = GL_SPINLOCK_INIT;

void gl_contexts_stream_created(uint64_t stream, uint64_t ctx)
{
    if (!stream)
        return;
    gl_spin_lock(&streams_lock);
    struct stream_entry *e;
    HASH_FIND(hh, streams, &stream, sizeof stream, e);
    if (!e && (e = gl_tool_alloc(sizeof *e)) != NULL) {
        e->stream = stream;
        HASH_ADD(hh, streams, stream, sizeof e->stream, e);
    }
    if (e)
        e->ctx = ctx;
    gl_spin_unlock(&streams_lock);
}

void gl_contexts_stream_destroyed(uint64_t stream)
{
    gl_spin_lock(&streams_lock);
    struct stream_entry *e;
    HASH_FIND(hh, streams, &stream, sizeof stream, e);
    if (e) {
        HASH_DEL(streams, e);
        gl_tool_free(e, sizeof *e);
    }
    gl_spin_unlock(&streams_lock);
}

int gl_contexts_stream_device(uint64_t stream, uint64_t current_ctx)
{
    uint64_t ctx = current_ctx;
    if (stream > 2) { /* not one of the default streams */
        struct stream_entry *e;
        gl_spin_lock(&streams_lock);
        HASH_FIND(hh, streams, &stream, sizeof stream, e);
        if (e)
            ctx = e->ctx;
        gl_spin_unlock(&streams_lock);
    }
    return gl_contexts_device(ctx);
}

static void after_fork(void)
{
    gl_spin_reset(&streams_lock);
    pthread_mutex_init(&lock, NULL);
}

static void reset(void)
{
    atomic_store(&first_device, -1);
    atomic_store(&devices_differ, false);
    gl_spin_lock(&streams_lock);
    struct stream_entry *e, *tmp;
    HASH_ITER(hh, streams, e, tmp)
    {
        HASH_DEL(streams, e);
        gl_tool_free(e, sizeof *e);
    }
    gl_spin_unlock(&streams_lock);
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots);
    for (unsigned i = 0; i < n; i++)
        atomic_store(&slots[i].ctx, 0);
    atomic_store(&nslots, 0);
    pthread_mutex_unlock(&lock);
}

const struct gl_component gl_contexts_component = {
    .name = "contexts",
    .reset = reset,
    .after_fork = after_fork,
};

const struct gl_placement gl_contexts_placement = {
    .context_device = gl_contexts_device,
    .stream_device = gl_contexts_stream_device,
    .several_devices = gl_contexts_several_devices,
};
