/* SPDX-License-Identifier: MIT */
#include "track/regions.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "base/spin.h"
#include "base/tool.h"
#include "common/clock.h"
#include "common/sort.h"
#include "common/util.h"
#include "track/tracker.h"

/* Open regions are the bits of one word; an id is (generation << 6) | index. */
_Static_assert(GL_REGIONS_MAX == 64, "an id's low 6 bits index the regions");

/* An event after its device's peak: what the live blocks at close must be
 * corrected by to give the sites at the peak.  16 bytes: the size, its slot
 * and whether it was an allocation share a word (sizes below 2^56; a larger
 * one is not logged, and its device's sites are then inexact). */
struct log_entry {
    uint64_t word; /* size << 8 | slot << 1 | alloc */
    uint32_t stack;
    uint32_t epoch; /* its slot's peak epoch then: stale once the peak rose again */
};
_Static_assert(sizeof(struct log_entry) == 16, "a log entry is 16 bytes");
_Static_assert(GL_STATS_SLOTS <= 128, "a slot fits the 7 bits of a log entry");

#define ENTRY_SIZE_MAX (1ull << 56)
static inline uint64_t entry_size(const struct log_entry *e) { return e->word >> 8; }
static inline unsigned entry_slot(const struct log_entry *e)
{
    return (unsigned)(e->word >> 1) & 0x7f;
}
static inline bool entry_alloc(const struct log_entry *e) { return e->word & 1; }

struct slot_state {
    int64_t net;      /* live bytes now, less those at the open */
    int64_t peak_net; /* the most net was, >= 0 (the open itself) */
    uint64_t peak_seq, peak_ns;
    uint64_t alloc_bytes, freed_bytes, allocs, frees;
    uint32_t epoch;      /* raised at each new peak */
    uint32_t after_peak; /* its entries in the log, all since the peak */
    bool used;           /* saw an event */
    bool lost;           /* an entry since the peak did not fit the log */
};

struct region {
    /* The hot path's lock: everything down to s[] while open is true. */
    gl_spinlock lock;
    bool open;
    uint32_t tid;
    uint64_t open_ns;
    uint64_t other_events;
    struct log_entry *log; /* GL_REGIONS_LOG entries from the pool, while in use */
    uint32_t log_cap;      /* GL_REGIONS_LOG, or 0 when none could be mapped */
    uint32_t nlog;
    uint32_t dead;    /* entries that predate their slot's peak */
    uint32_t log_top; /* the most entries the log held before nlog last fell */
    struct slot_state s[GL_STATS_SLOTS];
    uint64_t live_open[GL_STATS_SLOTS];
    /* Its closer's, once it stopped counting (with the log). */
    uint32_t log_touched; /* entries of the log written since its pages were last given back */
    /* Under table.lock: which region an id names, and its name. */
    bool in_use;
    uint32_t gen;
    char name[GL_REGIONS_NAME_MAX];
} __attribute__((aligned(64)));

static struct region regions[GL_REGIONS_MAX];

/* A log not in use, and how many of its entries were written since its pages
 * beyond GL_REGIONS_LOG_KEEP were last given back. */
struct spare_log {
    struct log_entry *log;
    uint32_t touched;
};

static struct {
    gl_spinlock lock;           /* opening and closing, never the hot path */
    _Atomic uint64_t open_mask; /* the regions events go to */
    uint32_t gen;
    unsigned next; /* where the search for a free region starts: ids are reused late */
    /* The logs not in use, the last given back on top: at most one per
     * region that held a slot at once, never unmapped. */
    struct spare_log spare[GL_REGIONS_MAX];
    unsigned nspare;
} table;

void (*gl_regions_after_stop)(int id);

#define LOG_BYTES ((size_t)GL_REGIONS_LOG * sizeof(struct log_entry))
#define KEEP_ENTRIES ((uint32_t)(GL_REGIONS_LOG_KEEP / sizeof(struct log_entry)))
_Static_assert(GL_REGIONS_LOG_KEEP % 4096 == 0 && GL_REGIONS_LOG_KEEP < LOG_BYTES,
               "a log keeps whole pages, fewer than it has");

/* ---- the hot path ---- */

/* Drop the entries whose slot's peak rose since they were logged. */
static void compact(struct region *r)
{
    uint32_t n = 0;
    if (r->nlog > r->log_top)
        r->log_top = r->nlog;
    for (uint32_t i = 0; i < r->nlog; i++) {
        const struct log_entry *e = &r->log[i];
        if (e->epoch == r->s[entry_slot(e)].epoch)
            r->log[n++] = *e;
    }
    r->nlog = n;
    r->dead = 0;
}

/* Out of line: the hot path's registers stay few (a peak rises seldom). */
__attribute__((noinline, cold)) static void new_peak(struct region *r, struct slot_state *s,
                                                     uint64_t seq)
{
    s->peak_net = s->net;
    s->peak_seq = seq;
    s->peak_ns = gl_clock_ns() - r->open_ns;
    r->dead += s->after_peak;
    s->after_peak = 0;
    s->epoch++;
    s->lost = false;
    /* The common case, one device: the whole log predates the peak. */
    if (r->dead == r->nlog) {
        if (r->nlog > r->log_top)
            r->log_top = r->nlog;
        r->nlog = r->dead = 0;
    }
}

/* The log is full (or the size does not fit an entry): make room, or lose
 * the entry (its device's sites are then inexact until its next peak). */
__attribute__((noinline, cold)) static bool log_room(struct region *r, struct slot_state *s,
                                                     uint64_t size)
{
    if (size >= ENTRY_SIZE_MAX) {
        s->lost = true;
        return false;
    }
    if (r->log && r->dead)
        compact(r);
    if (r->log && r->nlog < GL_REGIONS_LOG)
        return true;
    s->lost = true;
    return false;
}

static inline void log_event(struct region *r, unsigned slot, struct slot_state *s, bool alloc,
                             uint64_t size, uint32_t stack)
{
    /* A log that failed to map counts as full. */
    if (__builtin_expect((r->nlog >= r->log_cap) | (size >= ENTRY_SIZE_MAX), 0) &&
        !log_room(r, s, size))
        return;
    r->log[r->nlog++] =
        (struct log_entry){.word = size << 8 | (uint64_t)slot << 1 | (uint64_t)alloc,
                           .stack = stack,
                           .epoch = s->epoch};
    s->after_peak++;
}

static void region_event(struct region *r, unsigned slot, bool alloc, uint64_t size, uint32_t stack,
                         uint64_t seq, uint32_t tid)
{
    gl_spin_lock(&r->lock);
    /* Closed since the mask was read (or reopened: then the event raced with
     * the open, and counts in it, as one a moment later would). */
    if (__builtin_expect(!r->open, 0)) {
        gl_spin_unlock(&r->lock);
        return;
    }
    struct slot_state *s = &r->s[slot];
    s->used = true;
    r->other_events += tid != r->tid;
    if (alloc) {
        s->allocs++;
        s->alloc_bytes += size;
        s->net += (int64_t)size;
        if (s->net > s->peak_net) {
            new_peak(r, s, seq);
            gl_spin_unlock(&r->lock);
            return;
        }
    } else {
        s->frees++;
        s->freed_bytes += size;
        s->net -= (int64_t)size;
    }
    log_event(r, slot, s, alloc, size, stack);
    gl_spin_unlock(&r->lock);
}

static inline void to_regions(const struct gl_block_info *b, bool alloc, uint32_t tid)
{
    uint64_t mask = atomic_load_explicit(&table.open_mask, memory_order_acquire);
    unsigned slot = gl_stats_slot(b->device);
    while (mask) {
        unsigned i = (unsigned)__builtin_ctzll(mask);
        mask &= mask - 1;
        region_event(&regions[i], slot, alloc, b->size, b->stack, b->seq, tid);
    }
}

/* What the statistics count (track/stats.c): an allocation once the block
 * table has it, and every counted block gone, however. */
static void on_alloc(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (blk && gl_mem_kind_counted(blk->kind))
        to_regions(blk, true, ev->tid);
}

static void on_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    if (blk && !(ev->flags & GL_EVF_FAILED) && gl_mem_kind_counted(blk->kind))
        to_regions(blk, false, ev->tid);
}

/* ---- opening and closing ---- */

/* Counted bytes live per slot: the statistics count only counted kinds.  On
 * a program's thread (4 KiB of stack), never in a callback. */
static void live_now(uint64_t out[GL_STATS_SLOTS])
{
    uint64_t by_kind[GL_STATS_SLOTS][GL_MEM_NKINDS];
    gl_stats_live_bytes_all(by_kind);
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        out[sl] = 0;
        for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
            out[sl] += by_kind[sl][k];
    }
}

static struct log_entry *new_log(void)
{
    struct log_entry *log = gl_tool_map(LOG_BYTES);
    if (!log)
        return NULL;
#ifdef MADV_NOHUGEPAGE
    /* Small pages: what a region did not write is never resident. */
    madvise(log, LOG_BYTES, MADV_NOHUGEPAGE);
#endif
    /* The pages regions write first, present now (on the program's thread)
     * rather than faulted in by the hot path. */
    gl_tool_populate(log, GL_REGIONS_LOG_KEEP);
    return log;
}

/* A closed region's log, back to the pool: the pages it wrote beyond the
 * first GL_REGIONS_LOG_KEEP bytes given back to the system first, so that a
 * region with many events leaves no megabyte resident behind it.  Its
 * closer's thread, the region no longer counting. */
static void give_back_log(struct region *r)
{
    struct log_entry *log = r->log;
    if (!log)
        return;
    uint32_t touched = r->log_touched;
    if (r->log_top > touched)
        touched = r->log_top;
    if (r->nlog > touched)
        touched = r->nlog;
    if (touched > KEEP_ENTRIES) {
        madvise((char *)log + GL_REGIONS_LOG_KEEP, LOG_BYTES - GL_REGIONS_LOG_KEEP, MADV_DONTNEED);
        touched = KEEP_ENTRIES;
    }
    r->log_cap = 0;
    gl_spin_lock(&table.lock);
    r->log = NULL;
    /* One log per region at most: the pool always has room. */
    if (table.nspare < GL_REGIONS_MAX)
        table.spare[table.nspare++] = (struct spare_log){log, touched};
    gl_spin_unlock(&table.lock);
}

int gl_regions_open(const char *name, uint32_t tid)
{
    gl_spin_lock(&table.lock);
    unsigned i = 0, k;
    for (k = 0; k < GL_REGIONS_MAX; k++) {
        i = (table.next + k) % GL_REGIONS_MAX;
        if (!regions[i].in_use)
            break;
    }
    if (k == GL_REGIONS_MAX) {
        gl_spin_unlock(&table.lock);
        return -1;
    }
    struct region *r = &regions[i];
    r->in_use = true;
    table.next = i + 1;
    table.gen = (table.gen + 1) & 0xffffff;
    if (!table.gen)
        table.gen = 1;
    uint32_t gen = r->gen = table.gen;
    /* Under the table's lock: gl_regions_open_count reads it there. */
    r->name[0] = '\0';
    if (name) {
        size_t n = strnlen(name, sizeof r->name - 1);
        memcpy(r->name, name, n);
        r->name[n] = '\0';
    }
    /* The log given back last: its first pages are resident. */
    r->log = NULL;
    r->log_touched = 0;
    if (table.nspare) {
        table.nspare--;
        r->log = table.spare[table.nspare].log;
        r->log_touched = table.spare[table.nspare].touched;
    }
    gl_spin_unlock(&table.lock);

    /* Not open: no event touches it while it is set up. */
    if (!r->log) {
        struct log_entry *log = new_log(); /* more open at once than ever */
        gl_spin_lock(&table.lock);
        r->log = log;
        gl_spin_unlock(&table.lock);
    }
    r->log_cap = r->log ? GL_REGIONS_LOG : 0;
    memset(r->s, 0, sizeof r->s);
    r->nlog = r->dead = r->log_top = 0;
    r->tid = tid;
    r->other_events = 0;
    live_now(r->live_open);
    r->open_ns = gl_clock_ns();
    gl_spin_lock(&r->lock);
    r->open = true;
    gl_spin_unlock(&r->lock);

    gl_spin_lock(&table.lock);
    uint64_t before = atomic_fetch_or_explicit(&table.open_mask, 1ull << i, memory_order_acq_rel);
    if (!before)
        gl_dispatch_demand(+1);
    gl_spin_unlock(&table.lock);
    return (int)(gen << 6 | i);
}

/* A live block, or a correction from the log, on its way to a site's bytes. */
struct item {
    uint32_t slot, stack;
    int64_t bytes, blocks;
};

#define BY_SLOT_STACK(a, b)                                                                        \
    ((a)->slot < (b)->slot || ((a)->slot == (b)->slot && (a)->stack < (b)->stack))
GL_SORT_DEFINE(sort_by_site, struct item, BY_SLOT_STACK)
#define BY_BYTES_DOWN(a, b)                                                                        \
    ((a)->bytes > (b)->bytes || ((a)->bytes == (b)->bytes && (a)->stack < (b)->stack))
GL_SORT_DEFINE(sort_by_bytes, struct item, BY_BYTES_DOWN)

/* The sites at each reported device's peak: live bytes per stack now, less
 * what was allocated after the peak, plus what was freed after it.  Only the
 * blocks numbered below mark count: those allocated after the close are none
 * of the region's, and must not stand in for blocks freed since. */
static void sites_at_peak(struct region *r, struct gl_regions_result *out, unsigned top,
                          uint64_t mark)
{
    int slot_dev[GL_STATS_SLOTS];
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++)
        slot_dev[sl] = -1;
    for (unsigned d = 0; d < out->ndevices; d++)
        slot_dev[out->dev[d].slot] = (int)d;

    struct gl_block_info *blocks = NULL;
    size_t n = 0, snap_bytes = 0;
    struct item *items = NULL;
    size_t items_bytes = 0;
    if (gl_tracker_snapshot(&blocks, &n, &snap_bytes) == 0) {
        items_bytes = (n + r->nlog + 1) * sizeof(struct item);
        items = gl_tool_map(items_bytes);
    }
    if (!items) { /* out of tool memory: no sites, and they say so */
        if (blocks)
            gl_tool_unmap(blocks, snap_bytes);
        for (unsigned d = 0; d < out->ndevices; d++)
            out->dev[d].sites_exact = false;
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gl_block_info *b = &blocks[i];
        unsigned sl = gl_stats_slot(b->device);
        if (gl_mem_kind_counted(b->kind) && slot_dev[sl] >= 0 && b->seq < mark)
            items[m++] = (struct item){sl, b->stack, (int64_t)b->size, 1};
    }
    if (blocks)
        gl_tool_unmap(blocks, snap_bytes);
    for (uint32_t i = 0; i < r->nlog; i++) {
        const struct log_entry *e = &r->log[i];
        unsigned sl = entry_slot(e);
        if (e->epoch != r->s[sl].epoch || slot_dev[sl] < 0)
            continue;
        int64_t sign = entry_alloc(e) ? -1 : 1;
        items[m++] = (struct item){sl, e->stack, sign * (int64_t)entry_size(e), sign};
    }
    sort_by_site(items, m);
    size_t k = 0;
    for (size_t i = 0; i < m;) {
        struct item sum = items[i];
        for (i++; i < m && items[i].slot == sum.slot && items[i].stack == sum.stack; i++) {
            sum.bytes += items[i].bytes;
            sum.blocks += items[i].blocks;
        }
        if (sum.bytes || sum.blocks)
            items[k++] = sum;
    }
    /* Per device (sorted by slot, so each a run of its own). */
    for (size_t i = 0; i < k;) {
        size_t j = i;
        int64_t total = 0;
        bool negative = false;
        for (; j < k && items[j].slot == items[i].slot; j++) {
            total += items[j].bytes;
            negative |= items[j].bytes < 0 || items[j].blocks < 0;
        }
        struct gl_regions_device *d = &out->dev[slot_dev[items[i].slot]];
        /* Exact when they add up to the peak: no entry lost, and no block the
         * region counted live gone before the walk (regions.h says what
         * remains). */
        d->sites_exact = d->sites_exact && !negative && total == (int64_t)d->peak;
        sort_by_bytes(items + i, j - i);
        for (size_t t = i; t < j && d->nsites < top && items[t].bytes > 0; t++)
            d->sites[d->nsites++] = (struct gl_regions_site){
                .stack = items[t].stack,
                .bytes = (uint64_t)items[t].bytes,
                .blocks = items[t].blocks > 0 ? (uint64_t)items[t].blocks : 0};
        i = j;
    }
    /* A device whose sites add up to nothing had no live block at its peak:
     * exact only if the peak was 0. */
    for (unsigned d = 0; d < out->ndevices; d++)
        if (!out->dev[d].nsites && out->dev[d].peak)
            out->dev[d].sites_exact = false;
    gl_tool_unmap(items, items_bytes);
}

int gl_regions_close(int id, struct gl_regions_result *out, unsigned top)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (id < 0)
        return -1;
    unsigned i = (unsigned)id & (GL_REGIONS_MAX - 1);
    uint32_t gen = (uint32_t)id >> 6;
    uint64_t bit = 1ull << i;
    struct region *r = &regions[i];
    gl_spin_lock(&table.lock);
    if (!r->in_use || r->gen != gen || !(atomic_load(&table.open_mask) & bit)) {
        gl_spin_unlock(&table.lock);
        return -1;
    }
    uint64_t left = atomic_fetch_and_explicit(&table.open_mask, ~bit, memory_order_acq_rel) & ~bit;
    if (!left)
        gl_dispatch_demand(-1);
    gl_spin_unlock(&table.lock);

    if (top > GL_REGIONS_TOP)
        top = GL_REGIONS_TOP;
    bool sites = out && top;
    /* Events that read the mask before it changed find it closed; the log is
     * this thread's from now on (in_use keeps the region from being reused).
     * The numbering's mark, taken where the region stops counting: every
     * allocation it counted was numbered before (its number came before its
     * event took this lock), every one numbered after is none of its. */
    gl_spin_lock(&r->lock);
    r->open = false;
    uint64_t mark = sites ? gl_tracker_seq_mark() : 0;
    uint64_t close_ns = gl_clock_ns();
    gl_spin_unlock(&r->lock);
    if (gl_regions_after_stop)
        gl_regions_after_stop(id);

    if (out) {
        out->duration_ns = close_ns - r->open_ns;
        out->other_thread_events = r->other_events;
        out->tid = r->tid;
        /* Devices first, then host memory and other devices (the slots' order). */
        for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
            const struct slot_state *s = &r->s[sl];
            if (!s->used && !r->live_open[sl])
                continue;
            struct gl_regions_device *d = &out->dev[out->ndevices++];
            d->slot = sl;
            d->live_open = r->live_open[sl];
            /* From the region's own counts, not read again: an event racing
             * with the close is in the changes and here, or in neither, and
             * the peak (net's most) is never below it. */
            int64_t close = (int64_t)r->live_open[sl] + s->net;
            d->live_close = close > 0 ? (uint64_t)close : 0;
            d->peak = r->live_open[sl] + (uint64_t)s->peak_net;
            d->peak_seq = s->peak_seq;
            d->peak_ns = s->peak_ns;
            d->alloc_bytes = s->alloc_bytes;
            d->freed_bytes = s->freed_bytes;
            d->allocs = s->allocs;
            d->frees = s->frees;
            d->sites_exact = sites && !s->lost && r->log != NULL;
        }
        if (sites && out->ndevices)
            sites_at_peak(r, out, top, mark);
    }

    give_back_log(r);
    gl_spin_lock(&table.lock);
    r->in_use = false;
    gl_spin_unlock(&table.lock);
    return 0;
}

unsigned gl_regions_open_count(char *name, size_t size)
{
    unsigned n = 0;
    bool named = false;
    if (name && size)
        name[0] = '\0';
    gl_spin_lock(&table.lock);
    for (unsigned i = 0; i < GL_REGIONS_MAX; i++) {
        const struct region *r = &regions[i];
        if (!r->in_use)
            continue;
        n++;
        if (!named && name && size && r->name[0]) {
            size_t len = strnlen(r->name, sizeof r->name);
            if (len > size - 1)
                len = size - 1;
            memcpy(name, r->name, len);
            name[len] = '\0';
            named = true;
        }
    }
    gl_spin_unlock(&table.lock);
    return n;
}

size_t gl_regions_log_resident(void)
{
    struct log_entry *logs[2 * GL_REGIONS_MAX];
    unsigned n = 0;
    gl_spin_lock(&table.lock);
    for (unsigned i = 0; i < table.nspare; i++)
        logs[n++] = table.spare[i].log;
    for (unsigned i = 0; i < GL_REGIONS_MAX; i++)
        if (regions[i].in_use && regions[i].log)
            logs[n++] = regions[i].log;
    gl_spin_unlock(&table.lock);
    /* Logs are never unmapped: asking about them unlocked is safe. */
    size_t bytes = 0;
    unsigned char vec[LOG_BYTES / 4096];
    for (unsigned i = 0; i < n; i++)
        if (mincore(logs[i], LOG_BYTES, vec) == 0)
            for (size_t p = 0; p < sizeof vec; p++)
                bytes += (vec[p] & 1) ? 4096 : 0;
    return bytes;
}

/* ---- the component ---- */

static void reset(void)
{
    gl_spin_reset(&table.lock);
    if (atomic_exchange(&table.open_mask, 0))
        gl_dispatch_demand(-1);
    for (unsigned i = 0; i < GL_REGIONS_MAX; i++) {
        struct region *r = &regions[i];
        gl_spin_reset(&r->lock);
        r->open = false;
        give_back_log(r);
        r->in_use = false;
    }
}

/* A thread gone with the fork may have held a lock; the regions open in the
 * parent stay open (their figures are the parent's up to the fork). */
static void after_fork(void)
{
    gl_spin_reset(&table.lock);
    for (unsigned i = 0; i < GL_REGIONS_MAX; i++)
        gl_spin_reset(&regions[i].lock);
}

static const struct gl_consumer consumer = {
    .on = {[GL_EV_ALLOC] = on_alloc, [GL_EV_FREE] = on_free},
    .flags = GL_CONSUMER_ON_DEMAND,
};

const struct gl_component gl_regions_component = {
    .name = "regions",
    .reset = reset,
    .after_fork = after_fork,
    .consumer = &consumer,
};
