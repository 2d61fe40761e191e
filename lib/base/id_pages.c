/* SPDX-License-Identifier: MIT */
#include "base/id_pages.h"

#include "base/tool.h"

bool gl_id_pages_put(const struct gl_id_pages *t, uint32_t id, void *entry)
{
    if (gl_id_pages_full(t, id))
        return false;
    size_t page_bytes = ((size_t)1 << t->page_bits) * sizeof(void *);
    _Atomic(void **) *slot = &t->pages[id >> t->page_bits];
    void **p = atomic_load_explicit(slot, memory_order_acquire);
    if (!p) {
        void **fresh = gl_tool_map(page_bytes);
        if (!fresh)
            return false;
        void **expected = NULL;
        if (atomic_compare_exchange_strong(slot, &expected, fresh)) {
            p = fresh;
            atomic_fetch_add_explicit(t->bytes, page_bytes, memory_order_relaxed);
        } else {
            gl_tool_unmap(fresh, page_bytes);
            p = expected;
        }
    }
    atomic_store_explicit((_Atomic(void *) *)&p[id & ((1u << t->page_bits) - 1)], entry,
                          memory_order_release);
    return true;
}

void *gl_id_pages_get(const struct gl_id_pages *t, uint32_t id)
{
    if (gl_id_pages_full(t, id))
        return NULL;
    void **p = atomic_load_explicit(&t->pages[id >> t->page_bits], memory_order_acquire);
    if (!p)
        return NULL;
    return atomic_load_explicit((_Atomic(void *) *)&p[id & ((1u << t->page_bits) - 1)],
                                memory_order_acquire);
}
