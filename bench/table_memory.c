/* SPDX-License-Identifier: MIT */
/* What the live-block table costs per block, by how far apart the blocks are,
 * on any machine (no GPU): N blocks (default 1,000,000) inserted at each
 * spacing, then the table's bytes (the -v line's figure: shards, bins with
 * their unused capacity, partly used chunks, buckets) divided by N.
 *
 *   bench/table_memory [N] [latency]
 *
 * With "latency", every insert is timed on its own (the clock's cost then adds
 * to the mean): the longest ones show what growing the table costs at once
 * (uthash's bucket expansions, a shard's compaction).
 * Each spacing twice: blocks inserted in address order (one span filled after
 * another), and in a random order (every span's bin growing at once).
 * The driver packs small allocations 512 bytes apart; 4,096 bytes and more,
 * each block is alone in its span of the table (block_table.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/util.h"
#include "track/block_table.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    bool latency = argc > 2 && strcmp(argv[2], "latency") == 0;
    if (n < 1 || (argc > 2 && !latency) || argc > 3) {
        fprintf(stderr, "usage: table_memory [N] [latency]   (N > 0 blocks)\n");
        return 2;
    }
    double *lat = latency ? malloc((size_t)n * sizeof *lat) : NULL;
    if (latency && !lat) {
        fprintf(stderr, "table_memory: out of memory\n");
        return 1;
    }
    static const unsigned long spacings[] = {512, 768, 1024, 2048, 4096, 65536};
    uint64_t *order = malloc((size_t)n * sizeof *order);
    if (!order) {
        fprintf(stderr, "table_memory: out of memory\n");
        return 1;
    }
    printf("%10s %8s %14s %12s %12s %12s", "spacing", "order", "bytes/block", "blocks/bin",
           "insert ns", "remove ns");
    printf(latency ? " %14s %14s\n" : "\n", "p99.99 ins us", "max ins us");
    for (size_t r = 0; r < 2 * GL_ARRAY_SIZE(spacings); r++) {
        size_t k = r / 2;
        bool shuffled = r % 2;
        for (long i = 0; i < n; i++)
            order[i] = (uint64_t)i;
        uint64_t x = 88172645463325252ULL; /* xorshift64: the same order every run */
        for (long i = n - 1; shuffled && i > 0; i--) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            long j = (long)(x % (uint64_t)(i + 1));
            uint64_t tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        struct gl_table *t = gl_block_table_create(8); /* the tracker's shard count */
        if (!t) {
            fprintf(stderr, "table_memory: out of memory\n");
            return 1;
        }
        double t0 = gl_clock_s();
        for (long i = 0; i < n; i++) {
            struct gl_block_info b = {.key = 0x7f0000000000ULL + order[i] * spacings[k],
                                      .size = 256,
                                      .seq = (uint64_t)i + 1,
                                      .stack = 1};
            double a = latency ? gl_clock_s() : 0;
            gl_block_table_insert(t, &b, NULL);
            if (latency)
                lat[i] = gl_clock_s() - a;
        }
        double t1 = gl_clock_s();
        size_t bytes = gl_block_table_memory_bytes(t), bins = gl_block_table_bin_count(t);
        for (long i = 0; i < n; i++)
            gl_block_table_remove(t, 0x7f0000000000ULL + order[i] * spacings[k], NULL);
        double t2 = gl_clock_s();
        printf("%10lu %8s %14.1f %12.1f %12.1f %12.1f", spacings[k],
               shuffled ? "random" : "address", (double)bytes / (double)n, (double)n / (double)bins,
               (t1 - t0) * 1e9 / (double)n, (t2 - t1) * 1e9 / (double)n);
        if (latency) {
            qsort(lat, (size_t)n, sizeof *lat, by_value);
            printf(" %14.1f %14.1f", lat[n - 1 - n / 10000] * 1e6, lat[n - 1] * 1e6);
        }
        printf("\n");
        gl_block_table_destroy(t);
    }
    free(order);
    free(lat);
    return 0;
}
