#include "contexts.h"

#include <pthread.h>
#include <stdatomic.h>

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

void gl_context_created(uint64_t ctx)
{
    if (ctx)
        add(ctx);
}

void gl_context_destroyed(uint64_t ctx)
{
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load(&slots[i].ctx) == ctx)
            atomic_store(&slots[i].ctx, 0);
    pthread_mutex_unlock(&lock);
}

int gl_context_device(uint64_t ctx)
{
    if (!ctx)
        return -1;
    int dev = find(ctx);
    return dev != -2 ? dev : add(ctx);
}

void gl_contexts_reset(void)
{
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load(&nslots);
    for (unsigned i = 0; i < n; i++)
        atomic_store(&slots[i].ctx, 0);
    atomic_store(&nslots, 0);
    pthread_mutex_unlock(&lock);
}
