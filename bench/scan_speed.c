/* SPDX-License-Identifier: MIT */
/* How fast the reachability scan reads memory (check/reach.h), on any
 * machine: a root region of GIB gigabytes (default 1) filled like a program's
 * heap (zeros, small integers, doubles, and pointers into a million 64-byte
 * chunks that are objects of the scan), and 100,000 device blocks, of which
 * every hundredth is referenced from the region.
 *
 *   bench/scan_speed [GIB]      prints GB/s and the time of the whole scan */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check/reach.h"
#include "common/clock.h"

int main(int argc, char **argv)
{
    double gib = argc > 1 ? atof(argv[1]) : 1.0;
    size_t bytes = (size_t)(gib * (1 << 30));
    size_t words = bytes / 8;
    enum { NCHUNKS = 1000000, NBLOCKS = 100000 };
    uint64_t *region =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t *chunks = mmap(NULL, (size_t)NCHUNKS * 64, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || chunks == MAP_FAILED)
        return 1;
    uint64_t seed = 88172645463325252ULL;
    for (size_t i = 0; i < words; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        switch (seed % 8) {
        case 0:
        case 1:
        case 2:
            region[i] = 0;
            break;
        case 3:
            region[i] = seed % 1000;
            break;
        case 4:
        case 5: /* a double */
            region[i] = 0x3ff0000000000000ULL | (seed >> 12);
            break;
        default: /* a heap pointer */
            region[i] = (uint64_t)(uintptr_t)(chunks + (seed >> 20) % NCHUNKS * 8);
        }
    }
    uint64_t dev = 0x7e0000000000ULL;
    for (size_t k = 0; k < NBLOCKS; k += 100)
        region[(k * 7919) % words] = dev + k * 0x10000;

    struct gl_reach_object *objs = malloc(NCHUNKS * sizeof *objs);
    for (size_t i = 0; i < NCHUNKS; i++)
        objs[i] = (struct gl_reach_object){(uint64_t)(uintptr_t)(chunks + i * 8),
                                           (uint64_t)(uintptr_t)(chunks + i * 8 + 8), false};
    struct gl_reach_target *tg = malloc(NBLOCKS * sizeof *tg);
    for (size_t k = 0; k < NBLOCKS; k++)
        tg[k] = (struct gl_reach_target){dev + k * 0x10000, dev + k * 0x10000 + 4096, 0,
                                         (uint32_t)k, 0};
    struct gl_reach_range root = {(uint64_t)(uintptr_t)region, (uint64_t)(uintptr_t)region + bytes};
    struct gl_reach r = {.roots = &root,
                         .nroots = 1,
                         .objects = objs,
                         .nobjects = NCHUNKS,
                         .targets = tg,
                         .ntargets = NBLOCKS,
                         .guard_faults = true};
    double t0 = gl_clock_s();
    gl_reach_sort_objects(objs, NCHUNKS);
    gl_reach_sort_targets(tg, NBLOCKS);
    size_t sbytes = gl_reach_scratch_bytes(&r);
    void *scratch = mmap(NULL, sbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double t1 = gl_clock_s();
    gl_reach_run(&r, scratch, sbytes);
    double t2 = gl_clock_s();
    size_t reached = 0;
    for (size_t k = 0; k < NBLOCKS; k++)
        reached += tg[k].state == GL_REACH_START;
    printf("scan: %.2f GiB root, %d chunks, %d blocks: %.3f s to index, %.3f s to scan "
           "(%.2f GB/s), %zu blocks reached\n",
           gib, NCHUNKS, NBLOCKS, t1 - t0, t2 - t1, bytes / (t2 - t1) / 1e9, reached);
    return 0;
}
