/* SPDX-License-Identifier: MIT */
#include "observe/alternate.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/thread.h"
#include "common/clock.h"
#include "common/util.h"
#include "event/dispatch.h"

GL_READ_MOSTLY bool gl_alternate_active;

#define MAX_BLOCKS 65536 /* a block a millisecond: a minute of pairs */
#define WARMUP 4         /* blocks not kept: the run's first, cold ones */

static struct {
    char name[64];
    unsigned every;
    _Atomic uint32_t tid; /* the one thread measured */
    unsigned count;
    bool off;                       /* the current block runs without the consumer */
    bool whole;                     /* NAME "gpuleak": the producer is what is left out */
    uint32_t free_cbid;             /* whole: the entry point whose frees are counted */
    void (*producer_null)(bool on); /* whole: the producer's switch */
    _Atomic bool stopped;
    uint64_t since;
    unsigned skipped;
    size_t n[2];
    float ns[2][MAX_BLOCKS]; /* [0]: with, [1]: without; block i of each adjacent */
} a;

bool gl_alternate_configure(const char *spec, size_t len, void (*producer_null)(bool on))
{
    const char *colon = memchr(spec, ':', len);
    size_t name_len = colon ? (size_t)(colon - spec) : len;
    unsigned every = 1000;
    if (colon) {
        char num[16] = "";
        size_t k = len - name_len - 1;
        if (k == 0 || k >= sizeof num)
            return false;
        memcpy(num, colon + 1, k);
        char *end;
        unsigned long v = strtoul(num, &end, 10);
        if (*end || v < 10 || v > 10000000)
            return false;
        every = (unsigned)v;
    }
    if (name_len == 0 || name_len >= sizeof a.name)
        return false;
    char name[sizeof a.name];
    memcpy(name, spec, name_len);
    name[name_len] = '\0';
    if (gl_alternate_active)
        return false; /* one alternation a run */
    bool whole = strcmp(name, "gpuleak") == 0;
    if (whole ? !producer_null : !gl_dispatch_bench_can_leave_out(name))
        return false;
    a.whole = whole;
    a.producer_null = producer_null;
    memcpy(a.name, name, sizeof name);
    a.every = every;
    /* A new alternation starts afresh (a test configures more than one). */
    a.count = a.skipped = 0;
    a.since = 0;
    a.off = false;
    a.free_cbid = 0;
    a.n[0] = a.n[1] = 0;
    atomic_store(&a.tid, 0);
    atomic_store(&a.stopped, false);
    gl_alternate_active = true;
    return true;
}

bool gl_alternate_on(void) { return a.every != 0; }

bool gl_alternate_whole(void) { return a.whole && gl_alternate_active; }

/* A second thread: the tables are never rebuilt again, since it may be
 * reading them (a rebuild is not atomic); the observer, or the producer,
 * stays as it is. */
static void stop(void)
{
    atomic_store(&a.stopped, true);
    gl_alternate_active = false;
}

/* Whether the calling thread is the one measured (the first to end a
 * counted call); another one stops the alternation. */
static bool measured_thread(void)
{
    uint32_t tid = gl_thread_id(), was = atomic_load_explicit(&a.tid, memory_order_relaxed);
    if (was == tid)
        return true;
    if (!was && atomic_compare_exchange_strong(&a.tid, &was, tid))
        return true;
    stop();
    return false;
}

/* A counted call ended: a block ends every a.every of them. */
static void count_call(void)
{
    if (atomic_load(&a.stopped))
        return;
    if (++a.count < a.every)
        return;
    uint64_t now = gl_clock_ns();
    if (a.since && a.skipped++ >= WARMUP) {
        size_t i = a.n[a.off];
        /* A pair is a with-block and the without-block after it: keep the
         * without-block only when its with-block was kept. */
        if (i < MAX_BLOCKS && (!a.off || a.n[0] > a.n[1]))
            a.ns[a.off][a.n[a.off]++] = (float)((double)(now - a.since) / a.count);
    }
    a.off = !a.off;
    if (a.whole)
        a.producer_null(a.off);
    else
        gl_dispatch_bench_leave_out(a.off ? a.name : NULL);
    a.count = 0;
    a.since = gl_clock_ns(); /* the rebuild is not the program's */
}

/* Which calls count: for one observer, the releases (their ends); for the
 * whole producer, every exit of one entry point, the first one a release
 * ended on, whatever the call made (a free of a null pointer, which makes
 * no release, counts too), since in a block without only entry points can
 * be told apart: both kinds of block then hold the same calls. */
void gl_alternate_after_exit(uint32_t cbid, bool release)
{
    bool of_entry = a.whole && a.free_cbid && cbid == a.free_cbid;
    if (!release && !of_entry)
        return;
    /* Any release of another thread stops it, whichever its entry point. */
    if (!measured_thread())
        return;
    if (a.whole) {
        if (!a.free_cbid)
            a.free_cbid = cbid;
        else if (!of_entry)
            return;
    }
    count_call();
}

static int by_value(const void *x, const void *y)
{
    double p = *(const double *)x, q = *(const double *)y;
    return p < q ? -1 : p > q;
}

static double quantile(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, by_value);
    double at = q * (double)(n - 1);
    size_t lo = (size_t)at;
    double frac = at - (double)lo;
    return lo + 1 < n ? v[lo] + frac * (v[lo + 1] - v[lo]) : v[lo];
}

bool gl_alternate_result(struct gl_alternate_result *r)
{
    if (!a.every)
        return false;
    size_t n = a.n[0] < a.n[1] ? a.n[0] : a.n[1];
    *r = (struct gl_alternate_result){.name = a.name,
                                      .pairs_per_block = a.every,
                                      .whole = a.whole,
                                      .blocks = n,
                                      .stopped = atomic_load(&a.stopped),
                                      .left_out = a.off};
    double *v = n ? malloc(n * sizeof *v) : NULL;
    if (!v)
        return true;
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < n; i++)
            v[i] = a.ns[s][i];
        *(s ? &r->off_ns : &r->on_ns) = quantile(v, n, 0.5);
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (double)a.ns[0][i] - (double)a.ns[1][i];
    r->q1_ns = quantile(v, n, 0.25);
    r->diff_ns = quantile(v, n, 0.5);
    r->q3_ns = quantile(v, n, 0.75);
    free(v);
    return true;
}
