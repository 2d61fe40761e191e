/* SPDX-License-Identifier: MIT */
/* A stand-in for gpuleak's runtime, for testing the Python package and the
 * pytest plugin on a machine without a GPU: the same exported entry points
 * (lib/client_api.h), over "blocks" on device 0 that Python makes and frees
 * through gpuleak_fake_alloc(_at) / gpuleak_fake_free (ctypes), and profiled
 * regions over them computed the simple way (every site's bytes summed again
 * at each new peak).  Not thread-safe; the tests are single-threaded. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gpuleak.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_BLOCKS 1024
#define MAX_CHECKPOINTS 64

static struct {
    unsigned long long size, seq;
    unsigned stack;
    int live;
} blocks[MAX_BLOCKS];
static int nblocks;
static unsigned long long next_seq = 1;
static struct {
    char name[64];
    unsigned long long seq;
} checkpoints[MAX_CHECKPOINTS];
static int ncheckpoints;
static int depth;

/* ---- profiled regions, the simple way ---- */
#define MAX_REGIONS 8
#define MAX_STACKS 16
static struct {
    int open;
    unsigned long long live_open, allocated, freed, allocs, frees, peak_seq, open_ns, peak_ns;
    long long net, peak_net;
    unsigned long long site_bytes[MAX_STACKS], site_blocks[MAX_STACKS]; /* at the peak */
} regions[MAX_REGIONS];
static unsigned long long fake_ns; /* a clock the test moves */

static unsigned long long live_bytes(void)
{
    unsigned long long sum = 0;
    for (int i = 0; i < nblocks; i++)
        sum += blocks[i].live ? blocks[i].size : 0;
    return sum;
}

static void take_sites(int r)
{
    memset(regions[r].site_bytes, 0, sizeof regions[r].site_bytes);
    memset(regions[r].site_blocks, 0, sizeof regions[r].site_blocks);
    for (int i = 0; i < nblocks; i++)
        if (blocks[i].live) {
            regions[r].site_bytes[blocks[i].stack % MAX_STACKS] += blocks[i].size;
            regions[r].site_blocks[blocks[i].stack % MAX_STACKS]++;
        }
}

static void to_regions(unsigned long long size, unsigned long long seq, int alloc)
{
    for (int r = 0; r < MAX_REGIONS; r++) {
        if (!regions[r].open)
            continue;
        if (alloc) {
            regions[r].allocs++;
            regions[r].allocated += size;
            regions[r].net += (long long)size;
            if (regions[r].net > regions[r].peak_net) {
                regions[r].peak_net = regions[r].net;
                regions[r].peak_seq = seq;
                regions[r].peak_ns = fake_ns - regions[r].open_ns;
                take_sites(r);
            }
        } else {
            regions[r].frees++;
            regions[r].freed += size;
            regions[r].net -= (long long)size;
        }
    }
}

EXPORT void gpuleak_fake_advance_ns(unsigned long long ns) { fake_ns += ns; }

EXPORT int gpuleak_fake_alloc_at(unsigned long long size, unsigned stack)
{
    if (nblocks == MAX_BLOCKS)
        return -1;
    blocks[nblocks].size = size;
    blocks[nblocks].seq = next_seq++;
    blocks[nblocks].stack = stack;
    blocks[nblocks].live = 1;
    nblocks++;
    to_regions(size, blocks[nblocks - 1].seq, 1);
    return nblocks - 1;
}

EXPORT int gpuleak_fake_alloc(unsigned long long size) { return gpuleak_fake_alloc_at(size, 0); }

EXPORT void gpuleak_fake_free(int id)
{
    if (id >= 0 && id < nblocks && blocks[id].live) {
        blocks[id].live = 0;
        to_regions(blocks[id].size, 0, 0);
    }
}

EXPORT int gpuleak_runtime_profile_begin(const char *name)
{
    (void)name;
    for (int r = 0; r < MAX_REGIONS; r++)
        if (!regions[r].open) {
            memset(&regions[r], 0, sizeof regions[r]);
            regions[r].open = 1;
            regions[r].live_open = live_bytes();
            regions[r].open_ns = fake_ns;
            take_sites(r);
            return r + 100;
        }
    return -1;
}

/* What the last profile_end was asked for: the Python tests check that a
 * profile without sites asks for none. */
static int last_max_sites = -1;
static size_t last_out_size, last_device_size;
EXPORT int gpuleak_fake_last_max_sites(void) { return last_max_sites; }
EXPORT size_t gpuleak_fake_last_out_size(void) { return last_out_size; }
EXPORT size_t gpuleak_fake_last_device_size(void) { return last_device_size; }

/* gpuleak.h's rule: min(both sizes) bytes, zeros over the rest of the caller's. */
static void put_sized(void *to, size_t to_size, const void *from, size_t from_size)
{
    size_t n = to_size < from_size ? to_size : from_size;
    memcpy(to, from, n);
    if (to_size > n)
        memset((char *)to + n, 0, to_size - n);
}

EXPORT int gpuleak_runtime_profile_end(int id, struct gpuleak_profile *out, size_t out_size,
                                       struct gpuleak_profile_device *devices, size_t device_size,
                                       int max_devices, int max_sites)
{
    last_max_sites = max_sites;
    last_out_size = out_size;
    last_device_size = device_size;
    if (out && out_size)
        memset(out, 0, out_size);
    int r = id - 100;
    if (r < 0 || r >= MAX_REGIONS || !regions[r].open)
        return -1;
    regions[r].open = 0;
    struct gpuleak_profile p;
    memset(&p, 0, sizeof p);
    p.duration_ns = fake_ns - regions[r].open_ns;
    p.tid = 7;
    unsigned long long live = live_bytes();
    int any = regions[r].allocs || regions[r].frees || live || regions[r].live_open;
    p.ndevices = any ? 1 : 0;
    if (out)
        put_sized(out, out_size, &p, sizeof p);
    if (!any || !devices || !device_size || max_devices < 1)
        return 0;
    struct gpuleak_profile_device dev, *d = &dev;
    memset(d, 0, sizeof *d);
    d->live_at_open = regions[r].live_open;
    d->live_at_close = live;
    d->peak = regions[r].live_open + (unsigned long long)regions[r].peak_net;
    d->peak_seq = regions[r].peak_seq;
    d->peak_ns = regions[r].peak_ns;
    d->allocated = regions[r].allocated;
    d->freed = regions[r].freed;
    d->allocs = regions[r].allocs;
    d->frees = regions[r].frees;
    size_t at = offsetof(struct gpuleak_profile_device, sites);
    int held = device_size > at ? (int)((device_size - at) / sizeof d->sites[0]) : 0;
    if (max_sites > held)
        max_sites = held; /* never more than the caller's struct holds */
    if (max_sites <= 0)
        d->flags = GPULEAK_PROFILE_SITES_INEXACT; /* none asked for, none computed */
    /* Sites by bytes, biggest first (a selection sort: a handful of stacks). */
    int used[MAX_STACKS] = {0};
    while ((int)d->nsites < max_sites && d->nsites < GPULEAK_PROFILE_SITES) {
        int best = -1;
        for (int st = 0; st < MAX_STACKS; st++)
            if (!used[st] && regions[r].site_bytes[st] &&
                (best < 0 || regions[r].site_bytes[st] > regions[r].site_bytes[best]))
                best = st;
        if (best < 0)
            break;
        used[best] = 1;
        d->sites[d->nsites].bytes = regions[r].site_bytes[best];
        d->sites[d->nsites].blocks = regions[r].site_blocks[best];
        d->sites[d->nsites].stack = (unsigned)best;
        d->nsites++;
    }
    put_sized(devices, device_size, d, sizeof *d);
    return 1;
}

EXPORT long gpuleak_runtime_profile_frames(unsigned stack, char *buf, size_t buflen)
{
    char text[256];
    if (!stack)
        return -1;
    int n = snprintf(text, sizeof text,
                     "/usr/lib/python3/site-packages/torch/nn/module.py:%u:Module._call\n"
                     "/home/u/train.py:%u:step\n/home/u/train.py:90:<module>\n",
                     stack, 10 + stack);
    if (buf && buflen)
        snprintf(buf, buflen, "%s", text);
    return n;
}

/* How many distinct checkpoints the runtime was given. */
EXPORT int gpuleak_fake_checkpoints(void) { return ncheckpoints; }

static long since_seq(const char *since)
{
    if (!since)
        return 0;
    for (int i = 0; i < ncheckpoints; i++)
        if (strcmp(checkpoints[i].name, since) == 0)
            return (long)checkpoints[i].seq;
    return -1;
}

EXPORT int gpuleak_runtime_running(void) { return 1; }

EXPORT int gpuleak_runtime_checkpoint(const char *name)
{
    if (!name || !name[0] || strlen(name) > 63)
        return -1;
    int i = 0;
    while (i < ncheckpoints && strcmp(checkpoints[i].name, name) != 0)
        i++;
    if (i == ncheckpoints) {
        if (ncheckpoints == MAX_CHECKPOINTS)
            return -1;
        ncheckpoints++;
    }
    snprintf(checkpoints[i].name, sizeof checkpoints[i].name, "%s", name);
    checkpoints[i].seq = next_seq;
    return 0;
}

static void totals(long from, unsigned long long *bytes, unsigned long long *n)
{
    *bytes = *n = 0;
    for (int i = 0; i < nblocks; i++)
        if (blocks[i].live && (long)blocks[i].seq >= from) {
            *bytes += blocks[i].size;
            (*n)++;
        }
}

EXPORT int gpuleak_runtime_count_leaks(const char *since, struct gpuleak_counts *out)
{
    memset(out, 0, sizeof *out);
    long from = since_seq(since);
    if (from < 0)
        return -1;
    totals(from, &out->bytes[GPULEAK_DEFINITE], &out->blocks[GPULEAK_DEFINITE]);
    return 0;
}

EXPORT long gpuleak_runtime_leak_check(int mode, const char *since, char *buf, size_t buflen)
{
    long from = since_seq(since);
    if (from < 0 || (mode & 0xff) > GPULEAK_CHECK_CHANGED)
        return -1;
    unsigned long long bytes, n;
    totals(from, &bytes, &n);
    char text[256];
    snprintf(text, sizeof text,
             "Leak check (fake, mode %d): %llu bytes in %llu blocks are definitely lost\n", mode,
             bytes, n);
    if (buf && buflen)
        snprintf(buf, buflen, "%s", text);
    else
        fputs(text, stderr);
    return n ? 1 : 0;
}

EXPORT int gpuleak_runtime_ignore(const void *ptr) { return ptr ? 0 : -1; }

EXPORT int gpuleak_runtime_tracking(int delta)
{
    if (delta < 0 && depth == 0)
        return -1;
    depth += delta > 0 ? 1 : -1;
    return depth;
}

EXPORT int gpuleak_runtime_pool(int op, const void *pool, const void *addr, size_t size,
                                const char *name)
{
    (void)op, (void)pool, (void)addr, (void)size, (void)name;
    return -1;
}
