/* SPDX-License-Identifier: MIT */
/* Entries by a small integer id, for readers without a lock.
 *
 * The stack depot and the Python code table hand out ids (1, 2, ...) and
 * reports look entries up by id while writers keep adding: a two-level table
 * of pointers whose pages are mapped on first use and published with release
 * stores, so that a reader needs no lock and never sees a page or an entry
 * before it is complete.  Writers may race for a page (the depot's shards do):
 * the loser unmaps its copy. */
#ifndef GPULEAK_ID_PAGES_H
#define GPULEAK_ID_PAGES_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct gl_id_pages {
    _Atomic(void **) *pages; /* npages of them, each 1 << page_bits entries */
    unsigned page_bits, npages;
    _Atomic size_t *bytes; /* the owner's count of tool memory: pages are added */
};

/* A table of up to npages << page_bits ids, in static storage. */
#define GL_ID_PAGES(name, page_bits_, npages_, bytes_)                                             \
    static _Atomic(void **) name##_storage[npages_];                                               \
    static const struct gl_id_pages name = {name##_storage, page_bits_, npages_, bytes_}

/* Publish entry under id; false if the id is past the table or a page could
 * not be mapped. */
bool gl_id_pages_put(const struct gl_id_pages *t, uint32_t id, void *entry);

/* The entry published under id; NULL if none (yet). */
void *gl_id_pages_get(const struct gl_id_pages *t, uint32_t id);

/* Whether id is past the table: no entry can ever be published under it. */
static inline bool gl_id_pages_full(const struct gl_id_pages *t, uint32_t id)
{
    return (id >> t->page_bits) >= t->npages;
}

#endif
