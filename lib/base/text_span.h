/* SPDX-License-Identifier: MIT */
/* The span of a loaded object's code: from the lowest executable segment's
 * start to the highest one's end, as dl_iterate_phdr describes the object.
 * The driver observer hands libcuda's to the heap (its chunks go unrecorded),
 * the leak check tells chunks' owners by their callers with it. */
#ifndef GPULEAK_TEXT_SPAN_H
#define GPULEAK_TEXT_SPAN_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* False, *lo and *hi untouched, for an object without executable segments. */
static inline bool gl_text_span(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
    uint64_t l = UINT64_MAX, h = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
        if (start < l)
            l = start;
        if (end > h)
            h = end;
    }
    if (h <= l)
        return false;
    *lo = l;
    *hi = h;
    return true;
}

#endif
