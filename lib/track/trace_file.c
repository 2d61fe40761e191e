/* SPDX-License-Identifier: MIT */
#include "track/trace_file.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/logfile.h"
#include "common/out.h"
#include "event/api.h"
#include "event/event.h"
#include "track/stats.h"
#include "base/spin.h"

/* One series per (device slot, kind): its live bytes, what was written last,
 * and the highest value seen since.  Live bytes follow the events (reading the
 * shared statistics on every event would cost more than the event) and are
 * set again from the statistics at every interval and on events that do not
 * say what they moved, which also corrects what the events cannot tell (a
 * block replaced at its address without a free). */
struct series {
    uint64_t cur;
    uint64_t last_ns;
    uint64_t last_bytes;
    uint64_t peak_since;
    bool written;
};

static struct {
    gl_spinlock lock;
    int fd;
    uint64_t t0_ns, interval_ns, written, limit, next_doubling, synced_ns;
    bool stopped;
    struct series s[GL_STATS_SLOTS][GL_MEM_NKINDS];
} tr = {.fd = -1};

static void put(const char *line, size_t len)
{
    if (tr.stopped)
        return;
    if (tr.written + len > tr.limit) {
        static const char last[] = "# stopped: --trace-limit reached\n";
        gl_out_write_all(tr.fd, last, sizeof last - 1);
        tr.stopped = true;
        return;
    }
    if (!gl_out_write_all(tr.fd, line, len)) {
        tr.stopped = true;
        return;
    }
    tr.written += len;
    if (tr.written >= tr.next_doubling) { /* half the room left is gone: sample half as often */
        tr.interval_ns *= 2;
        tr.next_doubling += (tr.limit - tr.next_doubling) / 2;
    }
}

static void row(unsigned slot, unsigned kind, uint64_t t, uint64_t bytes, uint64_t peak)
{
    char dev[16], line[160];
    if (slot == GL_STATS_SLOT_HOST)
        snprintf(dev, sizeof dev, "host");
    else if (slot == GL_STATS_SLOT_OTHER)
        snprintf(dev, sizeof dev, "other");
    else
        snprintf(dev, sizeof dev, "%u", slot);
    int n = snprintf(line, sizeof line, "%.6f,%s,%s,%llu,%llu\n", (double)(t - tr.t0_ns) / 1e9, dev,
                     gl_mem_kind_name(kind), (unsigned long long)bytes, (unsigned long long)peak);
    if (n > 0)
        put(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Sample one series; force: write it if it changed, whatever the interval. */
static void sample(unsigned slot, unsigned kind, uint64_t t, bool force)
{
    struct series *s = &tr.s[slot][kind];
    uint64_t bytes = s->cur;
    if (bytes > s->peak_since)
        s->peak_since = bytes;
    if (s->written && bytes == s->last_bytes && s->peak_since == bytes)
        return;
    if (!force && s->written && t - s->last_ns < tr.interval_ns)
        return;
    row(slot, kind, t, bytes, s->peak_since);
    s->last_ns = t;
    s->last_bytes = bytes;
    s->peak_since = bytes;
    s->written = true;
}

/* Set every series from the statistics and sample those that moved. */
static void resync(uint64_t t, bool force)
{
    static uint64_t live[GL_STATS_SLOTS][GL_MEM_NKINDS]; /* under tr.lock */
    gl_stats_live_bytes_all(live);
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++)
        if (gl_stats_slot_used(sl))
            for (unsigned k = 1; k < GL_MEM_NKINDS; k++) {
                tr.s[sl][k].cur = live[sl][k];
                /* A series starts with its first bytes: no rows of zeros for
                 * kinds a device never held (host memory's "device memory"). */
                if (tr.s[sl][k].written || live[sl][k])
                    sample(sl, k, t, force);
            }
    tr.synced_ns = t;
}

/* A series moved by a block made or gone: sampled now; the others at the
 * interval, from the statistics. */
static void moved(const struct gl_event *ev, const struct gl_block_info *blk, bool made)
{
    if (!blk || (ev->flags & GL_EVF_FAILED) || blk->kind >= GL_MEM_NKINDS)
        return;
    gl_spin_lock(&tr.lock);
    if (tr.fd >= 0 && !tr.stopped) {
        uint64_t t = ev->time_ns ? ev->time_ns : gl_clock_ns();
        if (gl_mem_kind_counted(blk->kind)) {
            unsigned sl = gl_stats_slot(blk->device);
            struct series *s = &tr.s[sl][blk->kind];
            if (made)
                s->cur += blk->size;
            else
                s->cur = s->cur > blk->size ? s->cur - blk->size : 0;
            sample(sl, blk->kind, t, false);
        }
        /* Not for a derived free: those may come while the block table holds a
         * shard's lock, where only leaf locks may be taken (the statistics'
         * reader takes the thread registry's); the next event resyncs. */
        if (!(ev->flags & GL_EVF_DERIVED) && t - tr.synced_ns >= tr.interval_ns)
            resync(t, false);
    }
    gl_spin_unlock(&tr.lock);
}

static void on_alloc(const struct gl_event *ev, const struct gl_block_info *blk)
{
    moved(ev, blk, true);
}

/* Every block gone, one derived free each when a context took them. */
static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    moved(ev, blk, false);
}

static bool wanted(void) { return tr.fd >= 0; }

static const struct gl_consumer consumer = {
    .on = {[GL_EV_ALLOC] = on_alloc, [GL_EV_FREE] = on_free},
    .wanted = wanted,
    .flags = GL_CONSUMER_TIMED,
};

const struct gl_component gl_trace_file_component = {.name = "trace_file", .consumer = &consumer};

void gl_trace_file_start(int fd, unsigned interval_ms, uint64_t limit_bytes)
{
    tr.fd = fd;
    tr.t0_ns = gl_clock_ns();
    tr.interval_ns = (uint64_t)interval_ms * 1000000u;
    tr.limit = limit_bytes;
    tr.next_doubling = limit_bytes / 2;
    char head[256];
    int n = snprintf(head, sizeof head,
                     "# gpuleak trace, pid %d, interval %u ms: live bytes per device and kind\n"
                     "seconds,device,kind,live_bytes,peak_bytes\n",
                     (int)getpid(), interval_ms);
    put(head, (size_t)n);
}

void gl_trace_file_finish(void)
{
    if (tr.fd < 0)
        return;
    gl_spin_lock(&tr.lock);
    resync(gl_clock_ns(), true);
    close(tr.fd);
    tr.fd = -1;
    gl_spin_unlock(&tr.lock);
}
