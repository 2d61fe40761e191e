/* SPDX-License-Identifier: MIT */
/* A stand-in for gpuleak's runtime, for testing the Python package and the
 * pytest plugin on a machine without a GPU: the same exported entry points
 * (lib/client_api.h), over "blocks" that Python makes and frees through
 * gpuleak_fake_alloc / gpuleak_fake_free (ctypes).  Not thread-safe; the tests
 * are single-threaded. */
#include <stdio.h>
#include <string.h>

#include "gpuleak.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_BLOCKS 1024
#define MAX_CHECKPOINTS 64

static struct {
    unsigned long long size, seq;
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

EXPORT int gpuleak_fake_alloc(unsigned long long size)
{
    if (nblocks == MAX_BLOCKS)
        return -1;
    blocks[nblocks].size = size;
    blocks[nblocks].seq = next_seq++;
    blocks[nblocks].live = 1;
    return nblocks++;
}

EXPORT void gpuleak_fake_free(int id)
{
    if (id >= 0 && id < nblocks)
        blocks[id].live = 0;
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
