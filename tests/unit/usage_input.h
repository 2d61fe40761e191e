/* SPDX-License-Identifier: MIT */
/* The usage figures the XML and JSON report tests both write out: device 0
 * with device memory, 3 blocks allocated (2 small, one of them freed, and 1
 * large), and a stream-ordered allocation that failed; pinned host memory,
 * allocated and freed; two top sites (stacks big and small). */
#ifndef GPULEAK_USAGE_INPUT_H
#define GPULEAK_USAGE_INPUT_H

#include <string.h>

#include "track/stats.h"

static inline void tu_usage_input(struct gl_usage *u, struct gl_site_stats sites[2], uint32_t big,
                                  uint32_t small)
{
    memset(u, 0, sizeof *u);
    u->used[0] = true;
    u->dev[0] = (struct gl_stat_device){
        .cur_bytes = 1052672, .peak_bytes = 1056768, .peak_stack = big, .peak_seq = 7};
    struct gl_stat_group *g = &u->grp[0][GL_MEM_DEVICE];
    g->split[GL_SPLIT_SMALL] = (struct gl_stat_counts){.cur_blocks = 1,
                                                       .peak_blocks = 2,
                                                       .alloc_blocks = 2,
                                                       .freed_blocks = 1,
                                                       .cur_bytes = 4096,
                                                       .peak_bytes = 8192,
                                                       .alloc_bytes = 8192,
                                                       .freed_bytes = 4096};
    g->split[GL_SPLIT_LARGE] = (struct gl_stat_counts){.cur_blocks = 1,
                                                       .peak_blocks = 1,
                                                       .alloc_blocks = 1,
                                                       .cur_bytes = 1048576,
                                                       .peak_bytes = 1048576,
                                                       .alloc_bytes = 1048576};
    g->split[GL_SPLIT_ALL] = (struct gl_stat_counts){.cur_blocks = 2,
                                                     .peak_blocks = 3,
                                                     .alloc_blocks = 3,
                                                     .freed_blocks = 1,
                                                     .cur_bytes = 1052672,
                                                     .peak_bytes = 1056768,
                                                     .alloc_bytes = 1056768,
                                                     .freed_bytes = 4096};
    u->grp[0][GL_MEM_ASYNC].failed = 1;
    u->grp[0][GL_MEM_ASYNC].failed_bytes = 1ULL << 40;
    u->used[GL_STATS_SLOT_HOST] = true;
    u->dev[GL_STATS_SLOT_HOST] =
        (struct gl_stat_device){.peak_bytes = 4096, .peak_stack = small, .peak_seq = 2};
    u->grp[GL_STATS_SLOT_HOST][GL_MEM_HOST_PINNED].split[GL_SPLIT_ALL] =
        (struct gl_stat_counts){.peak_blocks = 1,
                                .alloc_blocks = 1,
                                .freed_blocks = 1,
                                .peak_bytes = 4096,
                                .alloc_bytes = 4096,
                                .freed_bytes = 4096};
    sites[0] = (struct gl_site_stats){
        .stack = big, .live_bytes = 1048576, .live_blocks = 1, .peak_bytes = 1048576};
    sites[1] = (struct gl_site_stats){
        .stack = small, .live_bytes = 4096, .live_blocks = 1, .peak_bytes = 8192};
}

#endif
