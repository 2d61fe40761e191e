/* SPDX-License-Identifier: MIT */
/* What a leak run asks the CUDA driver: the devices and their names, what the
 * stream-ordered pools and graph memory keep unused, the size of memory opened
 * through IPC, a block's contents (--scan-device).
 *
 * The leak run asks through this table only, so that it runs without a driver
 * as well: a test replays events and runs the whole check with none
 * (gl_leak_run_set_driver(NULL)), and gets the report a process whose driver
 * cannot tell would get.  Every question may go unanswered (false, or a NULL
 * member): the block keeps its size unknown, no pool is added, the device has
 * no name, the block is not read.
 *
 * Asked at check time only, outside any CUDA callback, under the leak-run
 * lock. */
#ifndef GPULEAK_DRIVER_QUERY_H
#define GPULEAK_DRIVER_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gl_driver_query {
    /* How many devices there are. */
    bool (*device_count)(int *count);
    /* A device's name ("NVIDIA H200"), NUL-terminated in buf. */
    bool (*device_name)(int device, char *buf, size_t len);
    /* A device's default stream-ordered pool (its CUmemoryPool). */
    bool (*default_pool)(int device, uint64_t *pool);
    /* What a stream-ordered pool holds from the driver, and what of it is in
     * use by its allocations. */
    bool (*pool_usage)(uint64_t pool, uint64_t *reserved, uint64_t *used);
    /* The same for a device's graph memory. */
    bool (*graph_memory)(int device, uint64_t *reserved, uint64_t *used);
    /* The allocation holding a device address (cuMemGetAddressRange). */
    bool (*address_range)(uint64_t addr, uint64_t *base, uint64_t *size);
    /* len bytes of device memory at addr into buf, in context ctx. */
    bool (*read)(uint64_t ctx, uint64_t addr, void *buf, size_t len);
};

/* The CUDA driver the program loaded.  Its entry points are looked up once
 * libcuda.so.1 is loaded (a check made before the program starts CUDA gets no
 * answers, and the next one looks again); gpuleak never loads it. */
const struct gl_driver_query *gl_driver_query_cuda(void);

#endif
