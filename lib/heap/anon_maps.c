/* SPDX-License-Identifier: MIT */
#include "heap/anon_maps.h"

#include <stdatomic.h>
#include <string.h>

#include "base/spin.h"
#include "base/tool.h"
#include "common/search.h"
#include "common/util.h"

struct interval {
    uint64_t start, end;
    uint32_t caller;
};

static gl_spinlock lock;
static struct interval *_Atomic v; /* sorted by start, disjoint */
static size_t n, cap;

/* Room for `more` intervals; false if out of memory. */
static bool reserve(size_t more)
{
    if (n + more <= cap)
        return true;
    size_t ncap = cap ? cap * 2 : 256;
    while (ncap < n + more)
        ncap *= 2;
    struct interval *nv = gl_tool_map(ncap * sizeof *nv);
    if (!nv)
        return false;
    struct interval *old = atomic_load_explicit(&v, memory_order_relaxed);
    if (old)
        memcpy(nv, old, n * sizeof *nv);
    atomic_store_explicit(&v, nv, memory_order_release);
    if (old)
        gl_tool_unmap(old, cap * sizeof *old);
    cap = ncap;
    return true;
}

/* First interval whose end is above addr (disjoint intervals sorted by start
 * are sorted by end too). */
static size_t first_ending_after(const struct interval *a, uint64_t addr)
{
    GL_ASSERT(GL_SEARCH_ARE_DISJOINT(a, n, start, end), "intervals sorted by start, disjoint");
    return GL_SEARCH_UPPER_BOUND(a, n, end, addr);
}

/* Cut [start, end) out of the intervals; the lock is held. */
static void cut(uint64_t start, uint64_t end)
{
    struct interval *a = atomic_load_explicit(&v, memory_order_relaxed);
    if (!a)
        return;
    size_t i = first_ending_after(a, start);
    while (i < n && a[i].start < end) {
        struct interval *it = &a[i];
        if (it->start < start && it->end > end) { /* a hole in the middle: split */
            if (!reserve(1))
                return;
            a = atomic_load_explicit(&v, memory_order_relaxed);
            it = &a[i];
            memmove(&a[i + 2], &a[i + 1], (n - i - 1) * sizeof *a);
            a[i + 1] = (struct interval){end, it->end, it->caller};
            it->end = start;
            n++;
            return;
        }
        if (it->start < start) { /* keep the head */
            it->end = start;
            i++;
        } else if (it->end > end) { /* keep the tail */
            it->start = end;
            i++;
        } else { /* all of it */
            memmove(&a[i], &a[i + 1], (n - i - 1) * sizeof *a);
            n--;
        }
    }
}

void gl_anon_maps_add(uint64_t start, uint64_t len, uint32_t caller)
{
    if (len == 0)
        return;
    uint64_t end = start + len;
    gl_spin_lock(&lock);
    cut(start, end);
    if (reserve(1)) {
        struct interval *a = atomic_load_explicit(&v, memory_order_relaxed);
        size_t i = first_ending_after(a, start);
        memmove(&a[i + 1], &a[i], (n - i) * sizeof *a);
        a[i] = (struct interval){start, end, caller};
        n++;
    }
    gl_spin_unlock(&lock);
}

void gl_anon_maps_remove(uint64_t start, uint64_t len)
{
    if (len == 0)
        return;
    gl_spin_lock(&lock);
    cut(start, start + len);
    gl_spin_unlock(&lock);
}

bool gl_anon_maps_take(uint64_t start, uint64_t len, uint32_t *caller)
{
    bool found = false;
    gl_spin_lock(&lock);
    struct interval *a = atomic_load_explicit(&v, memory_order_relaxed);
    if (a && len) {
        size_t i = first_ending_after(a, start);
        if (i < n && a[i].start < start + len) {
            found = true;
            *caller = a[i].caller;
        }
        cut(start, start + len);
    }
    gl_spin_unlock(&lock);
    return found;
}

size_t gl_anon_maps_count(void)
{
    gl_spin_lock(&lock);
    size_t k = n;
    gl_spin_unlock(&lock);
    return k;
}

void gl_anon_maps_foreach(gl_anon_map_visit_fn fn, void *arg, bool trylock_only)
{
    bool locked;
    if (trylock_only)
        locked = gl_spin_trylock(&lock, 4096);
    else {
        gl_spin_lock(&lock);
        locked = true;
    }
    struct interval *a = atomic_load_explicit(&v, memory_order_acquire);
    for (size_t i = 0; a && i < n; i++)
        fn(a[i].start, a[i].end - a[i].start, a[i].caller, arg);
    if (locked)
        gl_spin_unlock(&lock);
}

size_t gl_anon_maps_memory_bytes(void) { return cap * sizeof(struct interval); }

void gl_anon_maps_reset(void)
{
    struct interval *a = atomic_load(&v);
    if (a)
        gl_tool_unmap(a, cap * sizeof *a);
    atomic_store(&v, NULL);
    n = cap = 0;
    gl_spin_reset(&lock);
}

void gl_anon_maps_after_fork_child(void) { gl_spin_reset(&lock); }
