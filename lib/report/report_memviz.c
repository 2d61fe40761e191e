/* SPDX-License-Identifier: MIT */
#include "report/report_memviz.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gl_uthash.h"
#include "event/key.h"
#include "event/mem_kind.h"
#include "report/pickle.h"
#include "report/report_frames.h"
#include "track/stats.h"

/* A stack's frames list, written once and then named by its memo number. */
struct memo {
    uint32_t stack;
    uint32_t id;
    UT_hash_handle hh;
};

/* Where a block that is not an address range is drawn (below). */
struct placed {
    uint64_t key;
    uint64_t addr;
    UT_hash_handle hh;
};

/* A text written once and then named by its memo number: dict keys and
 * actions repeat in every entry, a third of a file written plainly. */
struct word {
    const char *text; /* a literal: compared by address */
    uint32_t id;
};
#define WORDS 48

struct writer {
    struct gl_pickle p;
    struct word words[WORDS];
    unsigned nwords;
    const struct gl_report_input *in;
    const struct gl_memviz_input *v;
    struct memo *memos;
    uint64_t *event_addr; /* per event: where it is drawn */
    bool *unended;        /* per event: an allocation neither freed nor live at the end */
    struct placed *placed;
    uint64_t next_place;
};

/* A literal text, memoized: the first time written and put, then got. */
static void word(struct writer *w, const char *text)
{
    for (unsigned i = 0; i < w->nwords; i++)
        if (w->words[i].text == text) {
            gl_pickle_get(&w->p, w->words[i].id);
            return;
        }
    gl_pickle_str(&w->p, text);
    if (w->nwords < WORDS)
        w->words[w->nwords++] = (struct word){text, gl_pickle_put(&w->p)};
}

static void frame(struct writer *w, const struct gl_frame *f)
{
    char name[64];
    const char *fn = f->function;
    if (!fn) {
        snprintf(name, sizeof name, "0x%" PRIxPTR, f->ip);
        fn = name;
    }
    gl_pickle_dict_begin(&w->p);
    word(w, "filename");
    gl_pickle_str(&w->p, f->file ? f->file : f->object ? f->object : "??");
    word(w, "line");
    gl_pickle_int(&w->p, f->line);
    word(w, "name");
    gl_pickle_str(&w->p, fn);
    gl_pickle_dict_end(&w->p);
}

static void frames(struct writer *w, uint32_t stack)
{
    struct memo *m;
    HASH_FIND(hh, w->memos, &stack, sizeof stack, m);
    if (m) {
        gl_pickle_get(&w->p, m->id);
        return;
    }
    unsigned n = 0;
    struct gl_frame *f =
        stack && w->in->stack_frames
            ? gl_report_frames_get(w->in->stack_frames, stack, (unsigned)w->in->opt->num_callers,
                                   w->in->arg, &n)
            : NULL;
    gl_pickle_list_begin(&w->p);
    for (unsigned i = 0; i < n; i++) /* innermost first, as PyTorch's */
        frame(w, &f[i]);
    gl_pickle_list_end(&w->p);
    free(f);
    uint32_t id = gl_pickle_put(&w->p);
    m = calloc(1, sizeof *m);
    if (m) { /* else written again next time: larger, still right */
        m->stack = stack;
        m->id = id;
        HASH_ADD(hh, w->memos, stack, sizeof m->stack, m);
    }
}

static void key_int(struct writer *w, const char *key, uint64_t v)
{
    word(w, key);
    gl_pickle_uint(&w->p, v);
}

/* Handles (VMM physical memory, arrays) are no addresses: their values are
 * host pointers that overlap one another's sizes.  Each such allocation is
 * drawn at an address of its own, from 2^52 up (JavaScript's integers are
 * exact to 2^53), 2 MiB apart at least; never reused. */
#define PLACE_BASE (1ULL << 52)
#define PLACE_ALIGN (2ULL << 20)

static uint64_t place_new(struct writer *w, uint64_t size)
{
    if (!w->next_place)
        w->next_place = PLACE_BASE;
    uint64_t at = w->next_place;
    w->next_place += (size + PLACE_ALIGN - 1) / PLACE_ALIGN * PLACE_ALIGN + PLACE_ALIGN;
    return at;
}

static struct placed *place_find(struct writer *w, uint64_t key)
{
    struct placed *p;
    HASH_FIND(hh, w->placed, &key, sizeof key, p);
    return p;
}

/* The addresses of the window's events: an allocation's handle gets a new
 * place, its free the same one; a free of a handle allocated before the
 * window, a place of its own.  Handles still live keep theirs for the
 * segments. */
static void place_events(struct writer *w)
{
    const struct gl_memviz_input *v = w->v;
    w->event_addr = calloc(v->nevents ? v->nevents : 1, sizeof *w->event_addr);
    for (size_t i = 0; w->event_addr && i < v->nevents; i++) {
        const struct gl_history_entry *e = &v->events[i];
        if (gl_key_ns(e->key) == GL_NS_ADDR || e->action == GL_HIST_OOM) {
            w->event_addr[i] = e->key;
            continue;
        }
        struct placed *p = place_find(w, e->key);
        if (e->action == GL_HIST_ALLOC) {
            if (!p && (p = calloc(1, sizeof *p))) {
                p->key = e->key;
                HASH_ADD(hh, w->placed, key, sizeof p->key, p);
            }
            w->event_addr[i] = place_new(w, e->size);
            if (p)
                p->addr = w->event_addr[i];
        } else if (p) {
            w->event_addr[i] = p->addr;
            HASH_DEL(w->placed, p);
            free(p);
        } else {
            w->event_addr[i] = place_new(w, e->size);
        }
    }
}

/* Allocation numbers: the window's frees, and the blocks drawn at the end. */
struct seen {
    uint64_t seq;
    UT_hash_handle hh;
};

static bool drawn(const struct gl_block_info *b);

/* An allocation the window shows that is neither freed in it nor among the
 * blocks live at the end (its free was still in flight when the history was
 * read, or it is a block the segments cannot draw) would stand in the
 * viewer's replay for a block that is not there: left out. */
static void find_unended(struct writer *w)
{
    const struct gl_memviz_input *v = w->v;
    size_t n = v->nevents + v->nlive;
    struct seen *slab = calloc(n ? n : 1, sizeof *slab), *set = NULL, *e;
    w->unended = calloc(v->nevents ? v->nevents : 1, sizeof *w->unended);
    if (!slab || !w->unended) {
        free(slab);
        free(w->unended);
        w->unended = NULL; /* everything drawn, as recorded */
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < v->nevents; i++)
        if (v->events[i].action == GL_HIST_FREE && v->events[i].seq) {
            HASH_FIND(hh, set, &v->events[i].seq, sizeof(uint64_t), e);
            if (!e) {
                slab[k].seq = v->events[i].seq;
                HASH_ADD(hh, set, seq, sizeof(uint64_t), &slab[k]);
                k++;
            }
        }
    for (size_t i = 0; i < v->nlive; i++)
        if (drawn(&v->live[i])) {
            HASH_FIND(hh, set, &v->live[i].seq, sizeof(uint64_t), e);
            if (!e) {
                slab[k].seq = v->live[i].seq;
                HASH_ADD(hh, set, seq, sizeof(uint64_t), &slab[k]);
                k++;
            }
        }
    for (size_t i = 0; i < v->nevents; i++)
        if (v->events[i].action == GL_HIST_ALLOC) {
            HASH_FIND(hh, set, &v->events[i].seq, sizeof(uint64_t), e);
            w->unended[i] = !e;
        }
    HASH_CLEAR(hh, set);
    free(slab);
}

/* Where the viewer puts a block live at the end. */
static uint64_t block_address(struct writer *w, const struct gl_block_info *b)
{
    if (gl_key_ns(b->key) == GL_NS_ADDR)
        return b->key;
    struct placed *p = place_find(w, b->key);
    if (p)
        return p->addr;
    uint64_t at = place_new(w, b->size);
    if ((p = calloc(1, sizeof *p))) {
        p->key = b->key;
        p->addr = at;
        HASH_ADD(hh, w->placed, key, sizeof p->key, p);
    }
    return at;
}

static void trace_entry(struct writer *w, size_t i, const char *action)
{
    const struct gl_history_entry *e = &w->v->events[i];
    gl_pickle_dict_begin(&w->p);
    word(w, "action");
    word(w, action);
    key_int(w, "addr", w->event_addr ? w->event_addr[i] : gl_key_value(e->key));
    key_int(w, "size", e->size);
    key_int(w, "stream", e->stream);
    key_int(w, "time_us", e->time_ns / 1000);
    if (e->action == GL_HIST_OOM)
        key_int(w, "device_free", e->dev_free);
    word(w, "frames");
    frames(w, e->stack);
    gl_pickle_dict_end(&w->p);
}

static void device_trace(struct writer *w, int device)
{
    static const char *const made[] = {"segment_alloc", "alloc"};
    static const char *const gone[] = {"free_requested", "free_completed", "segment_free"};
    gl_pickle_list_begin(&w->p);
    for (size_t i = 0; i < w->v->nevents; i++) {
        const struct gl_history_entry *e = &w->v->events[i];
        if (e->device != device)
            continue;
        if (e->action == GL_HIST_ALLOC && w->unended && w->unended[i])
            continue;
        if (e->action == GL_HIST_ALLOC)
            for (size_t k = 0; k < 2; k++)
                trace_entry(w, i, made[k]);
        else if (e->action == GL_HIST_FREE)
            for (size_t k = 0; k < 3; k++)
                trace_entry(w, i, gone[k]);
        else if (e->action == GL_HIST_OOM)
            trace_entry(w, i, "oom");
    }
    gl_pickle_list_end(&w->p);
}

static bool drawn(const struct gl_block_info *b)
{
    return b->device >= 0 && gl_mem_kind_counted(b->kind) && !(b->flags & GL_BLK_SIZE_UNKNOWN);
}

struct live_at {
    const struct gl_block_info *b;
    uint64_t addr;
};

static int by_place(const void *a, const void *b)
{
    const struct live_at *x = a, *y = b;
    if (x->b->device != y->b->device)
        return x->b->device < y->b->device ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A driver allocation live at the end: a segment of one active block. */
static void segment(struct writer *w, const struct gl_block_info *b, uint64_t addr)
{
    uint64_t stream = b->kind == GL_MEM_ASYNC ? b->aux : 0;
    gl_pickle_dict_begin(&w->p);
    key_int(w, "device", (uint64_t)b->device);
    key_int(w, "address", addr);
    key_int(w, "total_size", b->size);
    key_int(w, "allocated_size", b->size);
    key_int(w, "active_size", b->size);
    key_int(w, "requested_size", b->size);
    key_int(w, "stream", stream);
    word(w, "segment_type");
    word(w, b->size < GL_STATS_SMALL_LIMIT ? "small" : "large");
    word(w, "segment_pool_id");
    gl_pickle_tuple_begin(&w->p);
    gl_pickle_int(&w->p, 0);
    gl_pickle_int(&w->p, 0);
    gl_pickle_tuple_end(&w->p);
    word(w, "is_expandable");
    gl_pickle_bool(&w->p, false);
    word(w, "frames");
    frames(w, b->stack);
    word(w, "blocks");
    gl_pickle_list_begin(&w->p);
    gl_pickle_dict_begin(&w->p);
    key_int(w, "address", addr);
    key_int(w, "size", b->size);
    key_int(w, "requested_size", b->size);
    word(w, "state");
    word(w, "active_allocated");
    word(w, "frames");
    frames(w, b->stack);
    gl_pickle_dict_end(&w->p);
    gl_pickle_list_end(&w->p);
    gl_pickle_dict_end(&w->p);
}

static void segments(struct writer *w)
{
    const struct gl_memviz_input *v = w->v;
    struct live_at *sorted = calloc(v->nlive ? v->nlive : 1, sizeof *sorted);
    size_t n = 0;
    for (size_t i = 0; sorted && i < v->nlive; i++)
        if (drawn(&v->live[i]))
            sorted[n++] = (struct live_at){&v->live[i], block_address(w, &v->live[i])};
    qsort(sorted, n, sizeof *sorted, by_place);
    gl_pickle_list_begin(&w->p);
    for (size_t i = 0; i < n; i++)
        segment(w, sorted[i].b, sorted[i].addr);
    gl_pickle_list_end(&w->p);
    free(sorted);
}

static void about(struct writer *w, int ndevices)
{
    const struct gl_report_input *in = w->in;
    gl_pickle_dict_begin(&w->p);
    key_int(w, "version", 1);
    word(w, "tool");
    gl_pickle_str(&w->p, in->tool_version ? in->tool_version : "");
    key_int(w, "pid", (uint64_t)(in->pid > 0 ? in->pid : 0));
    word(w, "command");
    gl_pickle_str(&w->p, in->command ? in->command : "");
    key_int(w, "max_entries", w->v->max_entries);
    key_int(w, "dropped_events", w->v->dropped);
    /* gpuleak's own per-device peak, to compare with the timeline's. */
    word(w, "peak_bytes");
    gl_pickle_list_begin(&w->p);
    for (int d = 0; d < ndevices; d++)
        gl_pickle_uint(&w->p, in->usage && d < GL_STATS_DEVICES ? in->usage->dev[d].peak_bytes : 0);
    gl_pickle_list_end(&w->p);
    gl_pickle_dict_end(&w->p);
}

void gl_report_memviz(struct gl_out *o, const struct gl_report_input *in,
                      const struct gl_memviz_input *v)
{
    struct writer w = {.in = in, .v = v};
    int ndevices = 0;
    for (size_t i = 0; i < v->nevents; i++)
        if (v->events[i].device >= ndevices)
            ndevices = v->events[i].device + 1;
    for (size_t i = 0; i < v->nlive; i++)
        if (drawn(&v->live[i]) && v->live[i].device >= ndevices)
            ndevices = v->live[i].device + 1;
    for (int d = 0; in->usage && d < GL_STATS_DEVICES; d++)
        if (in->usage->used[d] && d >= ndevices)
            ndevices = d + 1;
    place_events(&w);
    find_unended(&w);
    gl_pickle_begin(&w.p, o);
    gl_pickle_dict_begin(&w.p);
    word(&w, "segments");
    segments(&w);
    word(&w, "device_traces");
    gl_pickle_list_begin(&w.p);
    for (int d = 0; d < ndevices; d++)
        device_trace(&w, d);
    gl_pickle_list_end(&w.p);
    word(&w, "gpuleak");
    about(&w, ndevices);
    gl_pickle_dict_end(&w.p);
    gl_pickle_end(&w.p);
    struct memo *m, *tmp;
    HASH_ITER(hh, w.memos, m, tmp)
    {
        HASH_DEL(w.memos, m);
        free(m);
    }
    struct placed *p, *ptmp;
    HASH_ITER(hh, w.placed, p, ptmp)
    {
        HASH_DEL(w.placed, p);
        free(p);
    }
    free(w.event_addr);
    free(w.unended);
}
