/* SPDX-License-Identifier: MIT */
/* --memory-viz: the allocation history (track/history.h) and the blocks live
 * at the end, as a PyTorch memory snapshot: the pickle that
 * torch.cuda.memory._dump_snapshot writes, which `python -m
 * torch.cuda._memory_viz trace_plot FILE -o out.html` and PyTorch's memory_viz
 * page draw.
 *
 *   {'segments': [{'device', 'address', 'total_size', 'allocated_size',
 *                  'active_size', 'requested_size', 'stream', 'segment_type',
 *                  'segment_pool_id', 'is_expandable', 'frames',
 *                  'blocks': [{'address', 'size', 'requested_size', 'state',
 *                              'frames'}]}],
 *    'device_traces': [[{'action', 'addr', 'size', 'stream', 'time_us',
 *                        'frames' (, 'device_free')}], ...],  one per device
 *    'gpuleak': {...}}                                         what gpuleak adds
 *
 * PyTorch's segments are the memory its allocator got from the driver and
 * its blocks the tensors cut from them; gpuleak sees the driver, so each
 * driver allocation is a segment holding one block of its size, and its
 * history says segment_alloc + alloc, then free_requested + free_completed +
 * segment_free: both of the viewer's timelines (tensors, cached segments)
 * then show the driver's allocations.  Frames are innermost first, as
 * PyTorch's: the report's frames, Python's among them, each {'filename',
 * 'line', 'name'}; a free carries the stack of the allocation it frees.
 * Blocks that are not address ranges (VMM physical allocations, arrays) are
 * drawn at made-up addresses from 2^52 up, one per allocation, so that they
 * overlap nothing.  Times are microseconds since the Unix epoch. */
#ifndef GPULEAK_REPORT_MEMVIZ_H
#define GPULEAK_REPORT_MEMVIZ_H

#include <stddef.h>
#include <stdint.h>

#include "common/out.h"
#include "event/block.h"
#include "report/report_text.h"
#include "track/history.h"

struct gl_memviz_input {
    const struct gl_history_entry *events; /* the window, oldest first */
    size_t nevents;
    const struct gl_block_info *live; /* blocks live at the end, any kind (any order) */
    size_t nlive;
    uint64_t dropped;     /* events older than the window */
    uint64_t max_entries; /* --memory-viz-entries */
};

void gl_report_memviz(struct gl_out *o, const struct gl_report_input *in,
                      const struct gl_memviz_input *v);

#endif
