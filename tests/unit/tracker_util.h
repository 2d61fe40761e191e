/* Helpers for unit tests that look at the tracker's live blocks and counters. */
#ifndef GPULEAK_TRACKER_UTIL_H
#define GPULEAK_TRACKER_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/tool.h"
#include "track/tracker.h"

/* The live block with this key, from a snapshot (copied to *out when not
 * NULL); false if it is not live.  A key twice in the snapshot fails. */
static inline bool tu_live_block(uint64_t key, struct gl_block_info *out)
{
    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].key == key) {
            ck_assert_msg(!found, "key 0x%llx twice in the snapshot", (unsigned long long)key);
            found = true;
            if (out)
                *out = blocks[i];
        }
    gl_tool_unmap(blocks, bytes);
    return found;
}

/* The counters; poisoned first, so that a field the tracker leaves unset fails. */
static inline struct gl_tracker_stats tu_tracker_stats(void)
{
    struct gl_tracker_stats s;
    memset(&s, 0xee, sizeof s);
    gl_tracker_stats(&s);
    return s;
}

#endif
