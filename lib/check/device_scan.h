/* SPDX-License-Identifier: MIT */
/* --scan-device: pointers stored in device memory.
 *
 * A device block can hold pointers to other device blocks (an array of
 * pointers, a linked structure built on the GPU).  After the host scan
 * (reachability.h), the contents of blocks are read into host memory in
 * bounded chunks and searched for such pointers:
 *   - a block that a reachable (or possibly lost) block points to is reachable
 *     (or possibly lost) too, and so on through the chain;
 *   - among the blocks still lost, one pointed to only from other lost blocks
 *     is indirectly lost, as Valgrind has it: the lost blocks are grouped in
 *     cliques, each led by a block nothing else leads to, whose record then
 *     says "N (D direct, I indirect) bytes ... are definitely lost".
 * Reads go through a callback (the driver's cuMemcpyDtoH in the runtime, a
 * buffer in unit tests), after the world runs again, never in a callback. */
#ifndef GPULEAK_DEVICE_SCAN_H
#define GPULEAK_DEVICE_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "track/block_table.h"

/* Copy len bytes at offset of block b into buf; false if it cannot be read
 * (the block's memory is not readable from the host this way). */
typedef bool (*gl_device_read_fn)(const struct gl_block_info *b, uint64_t offset, void *buf,
                                  size_t len, void *arg);

struct gl_device_scan {
    uint64_t bytes_read;
    uint64_t blocks_read, blocks_unreadable;
    uint64_t max_block_bytes; /* read at most this much of one block (0: 1 GiB) */
};

/* Can this kind of block hold pointers gpuleak can read? */
bool gl_device_scan_readable(uint8_t kind);

/* Propagate reachability through device memory and find indirect leaks.
 * blocks' flags (reachability.h's GL_BLK_REACH_*, GL_BLK_INDIRECT) are
 * updated; indirect[i] gets the bytes of the blocks block i leads as a clique
 * leader (0 for others).  Returns 0, -1 if out of memory. */
int gl_device_scan(struct gl_block_info *blocks, size_t n, uint64_t *indirect,
                   gl_device_read_fn read, void *arg, struct gl_device_scan *stats);

#endif
