/* SPDX-License-Identifier: MIT */
#include "heap/heap.h"

#include "heap/anon_maps.h"
#include "heap/callers.h"
#include "heap/chunk_table.h"
#include "heap/heap_state.h"

_Atomic bool gl_heap_state_seen;
_Atomic uint64_t gl_heap_state_skip_start, gl_heap_state_skip_len;

void gl_heap_skip_code(uint64_t start, uint64_t end)
{
    if (end <= start || atomic_load(&gl_heap_state_skip_len))
        return;
    atomic_store_explicit(&gl_heap_state_skip_start, start, memory_order_relaxed);
    atomic_store_explicit(&gl_heap_state_skip_len, end - start, memory_order_release);
}

bool gl_heap_active(void)
{
    return atomic_load_explicit(&gl_heap_state_seen, memory_order_relaxed);
}

size_t gl_heap_chunk_count(void) { return gl_chunk_table_count(); }
size_t gl_heap_mapping_count(void) { return gl_anon_maps_count(); }

struct copy {
    struct gl_heap_object *out;
    size_t n, cap;
};

static void copy_chunk(uint64_t addr, uint64_t size, uint32_t caller, void *arg)
{
    struct copy *c = arg;
    if (c->n < c->cap)
        c->out[c->n] = (struct gl_heap_object){addr, size, caller, 0};
    c->n++;
}

static void copy_mapping(uint64_t start, uint64_t len, uint32_t caller, void *arg)
{
    struct copy *c = arg;
    if (c->n < c->cap)
        c->out[c->n] = (struct gl_heap_object){start, len, caller, 1};
    c->n++;
}

size_t gl_heap_snapshot(struct gl_heap_object *out, size_t cap, bool world_stopped)
{
    struct copy c = {out, 0, cap};
    gl_chunk_table_foreach(copy_chunk, &c, world_stopped);
    gl_anon_maps_foreach(copy_mapping, &c, world_stopped);
    return c.n;
}

size_t gl_heap_memory_bytes(void)
{
    return gl_chunk_table_memory_bytes() + gl_anon_maps_memory_bytes();
}

void gl_heap_after_fork_child(void)
{
    gl_chunk_table_after_fork_child();
    gl_anon_maps_after_fork_child();
}

void gl_heap_set_active(bool active) { atomic_store(&gl_heap_state_seen, active); }

void gl_heap_reset(void)
{
    gl_chunk_table_reset();
    gl_anon_maps_reset();
    gl_callers_reset();
    atomic_store(&gl_heap_state_seen, false);
    atomic_store(&gl_heap_state_skip_len, 0);
}
