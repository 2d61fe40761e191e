/* SPDX-License-Identifier: MIT */
#include "check/reachability.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/search.h"
#include "heap/callers.h"
#include "common/sort.h"
#include "base/tool.h"
#include "check/reach.h"
#include "check/world.h"
#include "common/clock.h"
#include "event/event.h"
#include "heap/heap.h"
#include "stack/stack_depot.h"
#include "track/tracker.h"

/* x86-64 ABI: a leaf function may keep data below its stack pointer. */
#define RED_ZONE 128
/* Smaller values are taken for anything but handles. */
#define MIN_HANDLE (1ULL << 20)
/* Sizings before giving up, each with twice the room to grow of the last. */
#define ATTEMPTS 3

void (*gl_reachability_after_sizing)(unsigned attempt);

/* ---- /proc/self/maps, read and parsed with the world stopped ---- */

struct mapping {
    uint64_t start, end;
    bool readable;
};

static long read_maps(char *buf, size_t len)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    for (;;) {
        long n = syscall(SYS_read, fd, buf + got, len - got - 1);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got + 1 >= len)
            break;
    }
    syscall(SYS_close, fd);
    buf[got] = '\0';
    return (long)got;
}

static uint64_t hex(const char **p)
{
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uint64_t)d;
    }
}

static size_t parse_maps(const char *text, struct mapping *out, size_t max)
{
    size_t n = 0;
    for (const char *p = text; *p && n < max;) {
        uint64_t start = hex(&p);
        if (*p == '-')
            p++;
        uint64_t end = hex(&p);
        if (*p == ' ')
            p++;
        out[n++] = (struct mapping){start, end, *p == 'r'};
        while (*p && *p != '\n')
            p++;
        if (*p)
            p++;
    }
    return n;
}

/* The mapping holding addr (maps are sorted by start, disjoint). */
static const struct mapping *containing(const struct mapping *m, size_t n, uint64_t addr)
{
    size_t i = GL_SEARCH_CONTAINING(m, n, start, end, addr);
    return i < n ? &m[i] : NULL;
}

/* How far a check got.  The phrases are the report's (why_not). */
enum step {
    STEP_OK,
    STEP_NOTHING,            /* no block can be referenced: nothing to scan for */
    STEP_RETRY,              /* the heap outgrew the buffers: size them again */
    STEP_NO_MEMORY,          /* "out of memory" */
    STEP_NO_MEMORY_SCANNING, /* "out of memory while scanning" */
};

/* Everything one attempt needs, sized and mapped while the world runs: once it
 * is stopped nothing can be allocated.  scan_release() gives it all back, on
 * every path: success, retry (the next attempt sizes again), failure. */
struct scan {
    const uint8_t *held;             /* blocks not searched for (a caching allocator's), or NULL */
    struct gl_reach_target *targets; /* what each block can be reached by */
    size_t ntargets, targets_cap;
    struct gl_vmm_mapping *maps; /* every VMM mapping, sorted by handle */
    size_t nmaps, maps_cap;
    struct gl_heap_object *heap; /* the live chunks and mappings */
    size_t heap_cap, heap_needed;
    struct gl_reach_object *objects; /* those, and pinned host blocks */
    size_t nobjects, objects_cap;
    struct gl_reach_range *roots;
    size_t nroots, roots_cap;
    uint64_t *regs; /* the stopped threads' registers */
    size_t nregs, regs_cap;
    char *maps_text; /* /proc/self/maps, read with the world stopped */
    size_t maps_text_cap;
    struct mapping *mappings; /* ... and parsed */
    size_t nmappings, mappings_cap;
    void *scratch; /* the scan's own (reach.h) */
    size_t scratch_cap;
    struct gl_world world; /* a slot for each thread to stop */
    size_t tls_below, tcb; /* static TLS below a thread pointer, the descriptor above */
};

static void scan_release(struct scan *s)
{
    gl_tool_unmap(s->targets, s->targets_cap * sizeof *s->targets);
    gl_tool_unmap(s->maps, s->maps_cap * sizeof *s->maps);
    gl_tool_unmap(s->heap, s->heap_cap * sizeof *s->heap);
    gl_tool_unmap(s->objects, s->objects_cap * sizeof *s->objects);
    gl_tool_unmap(s->roots, s->roots_cap * sizeof *s->roots);
    gl_tool_unmap(s->regs, s->regs_cap * sizeof *s->regs);
    gl_tool_unmap(s->maps_text, s->maps_text_cap);
    gl_tool_unmap(s->mappings, s->mappings_cap * sizeof *s->mappings);
    gl_tool_unmap(s->scratch, s->scratch_cap);
    gl_world_free(&s->world);
    memset(s, 0, sizeof *s);
}

/* ---- targets: what each block can be reached by ---- */

static bool addressed(uint8_t kind)
{
    return kind != GL_MEM_VMM && kind != GL_MEM_ARRAY && kind != GL_MEM_MIPMAPPED_ARRAY &&
           kind != GL_MEM_NONE && kind != GL_MEM_POOL_RESERVE && kind != GL_MEM_GRAPH_RESERVE;
}

#define BY_HANDLE(a, b) ((a)->handle < (b)->handle)
GL_SORT_DEFINE(sort_by_handle, struct gl_vmm_mapping, BY_HANDLE)

/* Whether the scan looks for what points to block i: not for those cached
 * whatever points to them. */
static bool searched(const struct gl_block_info *b, const uint8_t *held, size_t i)
{
    return !((b->flags & (GL_BLK_IGNORED | GL_BLK_POOL)) || b->kind == GL_MEM_POOL_RESERVE ||
             b->kind == GL_MEM_GRAPH_RESERVE || (held && held[i]));
}

/* Targets for every block that can be referenced; false if out of memory. */
static bool build_targets(struct scan *s, const struct gl_block_info *blocks, size_t n)
{
    size_t nmaps = gl_tracker_vmm_map_list(NULL, 0);
    s->maps_cap = nmaps + 64;
    s->maps = gl_tool_map(s->maps_cap * sizeof *s->maps);
    s->targets_cap = n + s->maps_cap;
    s->targets = gl_tool_map(s->targets_cap * sizeof *s->targets);
    if (!s->maps || !s->targets)
        return false;
    s->nmaps = gl_tracker_vmm_map_list(s->maps, s->maps_cap);
    if (s->nmaps > s->maps_cap)
        s->nmaps = s->maps_cap;
    sort_by_handle(s->maps, s->nmaps);
    for (size_t i = 0; i < n; i++) {
        const struct gl_block_info *b = &blocks[i];
        if (!searched(b, s->held, i))
            continue;
        uint64_t v = gl_key_value(b->key);
        if (addressed(b->kind)) {
            uint64_t size = b->size ? b->size : 1;
            s->targets[s->ntargets++] = (struct gl_reach_target){v, v + size, 0, (uint32_t)i, 0};
            continue;
        }
        /* A handle, and for VMM each address it is mapped at.  Handles that are
         * small numbers (VMM handles may be) would match any counter: only
         * the mappings then tell. */
        if (v >= MIN_HANDLE)
            s->targets[s->ntargets++] = (struct gl_reach_target){0, 0, v, (uint32_t)i, 0};
        if (b->kind != GL_MEM_VMM)
            continue;
        size_t first = GL_SEARCH_LOWER_BOUND(s->maps, s->nmaps, handle, b->key);
        for (const struct gl_vmm_mapping *m = s->maps + first;
             m < s->maps + s->nmaps && m->handle == b->key; m++)
            if (s->ntargets < s->targets_cap)
                s->targets[s->ntargets++] =
                    (struct gl_reach_target){m->addr, m->addr + m->size, 0, (uint32_t)i, 0};
    }
    gl_reach_sort_targets(s->targets, s->ntargets);
    return true;
}

/* Show the owners where a static CUDA runtime is (owners.h): the first frame
 * of each distinct allocation stack that lies in the program's own modules. */
static void probe_cudart(struct gl_owners *own, const struct gl_block_info *blocks, size_t n,
                         gl_function_name_fn name, void *arg)
{
    if (!name)
        return;
    size_t nstacks = (size_t)gl_stack_depot_count() + 1;
    size_t bytes = (nstacks + 7) / 8;
    uint8_t *seen = gl_tool_map(bytes);
    if (!seen)
        return;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = blocks[i].stack;
        if (id >= nstacks || (seen[id / 8] >> (id % 8) & 1))
            continue;
        seen[id / 8] |= (uint8_t)(1u << (id % 8));
        unsigned nf = 0;
        const uintptr_t *f = gl_stack_depot_frames(id, &nf);
        for (unsigned k = 0; f && k < nf; k++)
            if (gl_owners_of_ip(own, f[k] - 1) == GL_OWNER_APP) {
                gl_owners_probe_cudart(own, f[k], name, arg);
                break;
            }
    }
    gl_tool_unmap(seen, bytes);
}

/* The size of the main thread's static TLS block, from the loader if it says. */
static size_t static_tls_size(void)
{
    void (*info)(size_t *, size_t *) = NULL;
    *(void **)&info = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
    size_t size = 0, align = 0;
    if (info)
        info(&size, &align);
    return size ? size : 64 * 1024;
}

/* The size of glibc's thread descriptor (struct pthread), which sits at the
 * thread pointer with the thread-specific data in it: the end of a TLS root.
 * Where glibc does not say (libthread_db's symbol), a page: what lies beyond
 * the descriptor in the same mapping (the kernel merges adjacent anonymous
 * mappings) is then read too. */
static size_t tcb_size(void)
{
    const unsigned *size = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
    return size && *size >= 64 && *size <= 65536 ? *size : 4096;
}

/* Objects from the heap snapshot (with the world stopped, or not yet to size
 * the scratch), and pinned host blocks.  heap_needed: the snapshot's true
 * count, which may exceed what the buffer holds. */
static void build_objects(struct scan *s, const struct gl_owners *own,
                          const struct gl_block_info *blocks, size_t n, bool stopped)
{
    size_t k = gl_heap_snapshot(s->heap, s->heap_cap, stopped);
    s->heap_needed = k;
    if (k > s->heap_cap)
        k = s->heap_cap;
    size_t m = 0;
    for (size_t i = 0; i < k && m < s->objects_cap; i++) {
        uint8_t owner = own->callers[s->heap[i].caller];
        s->objects[m++] = (struct gl_reach_object){
            s->heap[i].start, s->heap[i].start + s->heap[i].size,
            owner == GL_OWNER_APP || owner == GL_OWNER_LIB, s->heap[i].caller};
    }
    for (size_t i = 0; i < n && m < s->objects_cap; i++)
        if (blocks[i].kind == GL_MEM_HOST_PINNED && blocks[i].size)
            s->objects[m++] = (struct gl_reach_object){
                gl_key_value(blocks[i].key), gl_key_value(blocks[i].key) + blocks[i].size, true};
    gl_reach_sort_objects(s->objects, m);
    s->nobjects = m;
}

/* Where a stopped thread's stack ends.  /proc/self/maps shows a pthread's stack
 * merged with any anonymous mapping of the same protection just above it (the
 * kernel joins them): gpuleak's own tables, or a buffer of the program's, would
 * be scanned as stack.  glibc puts the thread's descriptor (struct pthread, a
 * few KiB, its thread-specific data included) at the top of the stack block,
 * the thread pointer at its start: the block ends at the page above it. */
static uint64_t stack_end(const struct mapping *sm, uint64_t sp, uint64_t tp)
{
    if (tp > sp && tp < sm->end) {
        uint64_t end = (tp + 4096) & ~(uint64_t)4095;
        return end < sm->end ? end : sm->end;
    }
    return sm->end; /* not a pthread stack laid out so: the whole mapping */
}

/* ---- phase 1: who owns what, while the world runs ---- */

/* The owners of modules and heap chunks (owners.h).  They call the loader and
 * libdw, so they are built before anything else. */
static enum step learn_owners(struct gl_owners *own, const struct gl_block_info *blocks, size_t n,
                              gl_function_name_fn name, void *arg)
{
    /* The name function may load libraries (libdw, to symbolize): let it do so
     * before the loaded objects are read, so that they are known as gpuleak's. */
    if (name)
        name(0, arg);
    if (gl_owners_load(own) < 0)
        return STEP_NO_MEMORY;
    probe_cudart(own, blocks, n, name, arg);
    return gl_owners_classify_callers(own, name, arg) < 0 ? STEP_NO_MEMORY : STEP_OK;
}

/* ---- phase 2: size the buffers, while the world runs ---- */

/* /proc/self/maps' length now, to size the buffer it is read into later. */
static void map_maps_text(struct scan *s)
{
    long maps_len = 0;
    s->maps_text_cap = 1 << 20;
    s->maps_text = gl_tool_map(s->maps_text_cap);
    if (s->maps_text)
        maps_len = read_maps(s->maps_text, s->maps_text_cap);
    if (maps_len > (long)s->maps_text_cap / 2) {
        gl_tool_unmap(s->maps_text, s->maps_text_cap);
        s->maps_text_cap = (size_t)maps_len * 2 + 65536;
        s->maps_text = gl_tool_map(s->maps_text_cap);
    }
}

/* Every buffer of an attempt, from counts taken now with room to grow; the
 * room doubles at each retry. */
static enum step size_buffers(struct scan *s, const struct gl_owners *own,
                              const struct gl_block_info *blocks, size_t n, int attempt)
{
    if (!build_targets(s, blocks, n))
        return STEP_NO_MEMORY;
    if (s->ntargets == 0)
        return STEP_NOTHING;
    /* A thread's static TLS block: glibc's static size counts the descriptor,
     * which lies above the thread pointer, the variables below it.  Reading
     * the full size below reads the descriptor's size of whatever precedes
     * the block (gpuleak's own tables, where the kernel merged the mappings:
     * leaked blocks counted as still reachable on a two-GPU machine). */
    size_t tls = static_tls_size();
    s->tcb = tcb_size();
    s->tls_below = tls > s->tcb ? tls - s->tcb : tls;

    size_t heap_now = gl_heap_chunk_count() + gl_heap_mapping_count();
    size_t grow = (heap_now / 4 + 4096) << attempt;
    s->heap_cap = heap_now + grow;
    s->objects_cap = s->heap_cap + n;
    if (gl_world_init(&s->world) < 0)
        return STEP_NO_MEMORY_SCANNING;
    s->roots_cap = own->nroots + 2 * s->world.cap + 8;
    s->regs_cap = s->world.cap * GL_WORLD_NREGS + 8;
    map_maps_text(s);
    s->mappings_cap = s->maps_text_cap / 24 + 16; /* a line is at least 24 bytes */
    s->heap = gl_tool_map(s->heap_cap * sizeof *s->heap);
    s->objects = gl_tool_map(s->objects_cap * sizeof *s->objects);
    s->roots = gl_tool_map(s->roots_cap * sizeof *s->roots);
    s->regs = gl_tool_map(s->regs_cap * sizeof *s->regs);
    s->mappings = gl_tool_map(s->mappings_cap * sizeof *s->mappings);
    if (!s->heap || !s->objects || !s->roots || !s->regs || !s->maps_text || !s->mappings)
        return STEP_NO_MEMORY_SCANNING;

    /* The scratch the scan needs, from a snapshot taken now, with room. */
    build_objects(s, own, blocks, n, false);
    struct gl_reach probe = {.objects = s->objects,
                             .nobjects = s->nobjects,
                             .targets = s->targets,
                             .ntargets = s->ntargets};
    s->scratch_cap = gl_reach_scratch_bytes(&probe) * 5 / 4 + (1 << 20) + grow * 64;
    s->scratch = gl_tool_map(s->scratch_cap);
    return s->scratch ? STEP_OK : STEP_NO_MEMORY_SCANNING;
}

/* ---- phase 3: the roots, with the world stopped (no allocation, no lock) ---- */

static void add_root(struct scan *s, uint64_t start, uint64_t end)
{
    if (end > start && s->nroots < s->roots_cap)
        s->roots[s->nroots++] = (struct gl_reach_range){start, end};
}

/* A thread's static TLS, which sits below its thread pointer: a root of its
 * own unless it lies in the thread's stack mapping (scanned already), as a
 * pthread's does; the main thread's lies elsewhere. */
static void add_tls_root(struct scan *s, uint64_t tp, const struct mapping *stack)
{
    const struct mapping *tm = containing(s->mappings, s->nmappings, tp);
    if (!tm || tm == stack)
        return;
    uint64_t a = tp > s->tls_below ? tp - s->tls_below : 0, b = tp + s->tcb;
    add_root(s, a < tm->start ? tm->start : a, b > tm->end ? tm->end : b);
}

/* A stopped thread's stack (from its stack pointer, less the red zone),
 * registers and static TLS. */
static void add_stopped_thread(struct scan *s, const struct gl_stopped_thread *t)
{
    if (t->tid <= 0 || atomic_load(&t->state) != 1)
        return;
    const struct mapping *sm = containing(s->mappings, s->nmappings, t->sp);
    uint64_t lo = t->sp > RED_ZONE ? t->sp - RED_ZONE : t->sp;
    if (sm) {
        if (lo < sm->start)
            lo = sm->start;
        add_root(s, lo, stack_end(sm, t->sp, t->tp));
    }
    for (int r = 0; r < GL_WORLD_NREGS && s->nregs < s->regs_cap; r++)
        s->regs[s->nregs++] = t->regs[r];
    add_tls_root(s, t->tp, sm);
}

/* This thread's thread pointer (0 where it is not read). */
static uint64_t thread_pointer(void)
{
    uint64_t tp = 0;
#if defined(__x86_64__)
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#endif
    return tp;
}

/* The writable segments of the program's modules; this thread's stack from
 * the program's frame up, and the registers the program had there; every
 * stopped thread's stack, registers and TLS; this thread's TLS. */
static void take_roots(struct scan *s, const struct gl_owners *own,
                       const struct gl_caller_context *cc)
{
    s->nroots = s->nregs = 0;
    for (size_t i = 0; i < own->nroots; i++)
        add_root(s, own->roots[i].start, own->roots[i].end);
    const struct mapping *me = containing(s->mappings, s->nmappings, cc->frame);
    if (me)
        add_root(s, cc->frame, me->end);
    add_root(s, (uint64_t)(uintptr_t)&cc->regs, (uint64_t)(uintptr_t)&cc->regs + sizeof cc->regs);
    for (size_t i = 0; i < s->world.n; i++)
        add_stopped_thread(s, &s->world.threads[i]);
    add_tls_root(s, thread_pointer(), me);
}

/* ---- phase 4: stop, read the roots and the heap as they are, scan, resume ---- */

/* The scan proper (reach.h): no allocation, a fault guard. */
static int scan(struct scan *s, struct gl_reach_stats *stats)
{
    struct gl_reach r = {
        .roots = s->roots,
        .nroots = s->nroots,
        .root_words = s->regs,
        .nroot_words = s->nregs,
        .objects = s->objects,
        .nobjects = s->nobjects,
        .targets = s->targets,
        .ntargets = s->ntargets,
        .guard_faults = true,
    };
    int rc = gl_reach_run(&r, s->scratch, s->scratch_cap);
    *stats = r.stats;
    return rc;
}

/* What -v reports of the scan (report_text.c's "checked N bytes"). */
static void record_statistics(struct gl_reachability *out, const struct gl_reach_stats *st)
{
    out->root_bytes = st->root_bytes;
    out->object_bytes = st->object_bytes;
    out->objects_reached = st->objects_reached;
    out->faults = st->faults;
}

static enum step scan_stopped(struct scan *s, const struct gl_owners *own,
                              const struct gl_block_info *blocks, size_t n,
                              const struct gl_caller_context *cc, struct gl_reachability *out)
{
    /* ---- the world stops: no allocation, no lock, no loader from here ---- */
    out->threads_stopped = gl_world_stop(&s->world, 200);
    long len = read_maps(s->maps_text, s->maps_text_cap);
    s->nmappings = len > 0 ? parse_maps(s->maps_text, s->mappings, s->mappings_cap) : 0;
    build_objects(s, own, blocks, n, true);
    take_roots(s, own, cc);
    struct gl_reach_stats stats;
    int rc = scan(s, &stats);
    gl_world_resume(&s->world);
    /* ---- the world runs again ---- */

    out->threads_skipped = s->world.skipped;
    if (rc != 0 || s->heap_needed > s->heap_cap)
        return STEP_RETRY; /* too small for what the heap became */
    record_statistics(out, &stats);
    return STEP_OK;
}

/* Size, stop and scan; size everything again, with twice the room, when the
 * heap outgrew the buffers meanwhile. */
static enum step scan_with_retries(struct scan *s, const struct gl_owners *own,
                                   const struct gl_block_info *blocks, size_t n,
                                   const struct gl_caller_context *cc, struct gl_reachability *out)
{
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        enum step st = size_buffers(s, own, blocks, n, attempt);
        if (st == STEP_OK && gl_reachability_after_sizing)
            gl_reachability_after_sizing((unsigned)attempt);
        if (st == STEP_OK)
            st = scan_stopped(s, own, blocks, n, cc, out);
        if (st != STEP_RETRY)
            return st;
        scan_release(s);
    }
    return STEP_NO_MEMORY_SCANNING;
}

/* ---- phase 5: the marks, into the snapshot's copies of the blocks ---- */

/* A pointer to a block's start, through any of its targets, outranks one
 * into it; either outranks being held through lost host memory only, which
 * makes the block indirectly lost, and is remembered with the host block
 * (its size, who allocated it) for the report. */
static void apply_marks(const struct scan *s, struct gl_block_info *blocks,
                        struct gl_reachability *out)
{
    for (size_t i = 0; i < s->ntargets; i++) {
        struct gl_block_info *b = &blocks[s->targets[i].owner];
        if (s->targets[i].state == GL_REACH_START)
            b->flags = (uint8_t)((b->flags & ~GL_BLK_REACH_INTERIOR) | GL_BLK_REACH_START);
        else if (s->targets[i].state == GL_REACH_INTERIOR && !(b->flags & GL_BLK_REACH_START))
            b->flags |= GL_BLK_REACH_INTERIOR;
    }
    size_t nheld = 0;
    for (size_t i = 0; i < s->ntargets; i++)
        nheld += s->targets[i].state == GL_REACH_VIA_LOST;
    out->held = nheld ? calloc(nheld, sizeof *out->held) : NULL;
    for (size_t i = 0; i < s->ntargets; i++) {
        const struct gl_reach_target *t = &s->targets[i];
        struct gl_block_info *b = &blocks[t->owner];
        if (t->state != GL_REACH_VIA_LOST ||
            (b->flags & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR | GL_BLK_INDIRECT)))
            continue;
        b->flags |= GL_BLK_INDIRECT;
        const struct gl_reach_object *o = &s->objects[t->held_by - 1];
        if (out->held)
            out->held[out->nheld++] = (struct gl_reach_holder){
                .key = b->key, .bytes = o->end - o->start, .caller = gl_callers_ip(o->tag)};
    }
}

const struct gl_reach_holder *gl_reachability_holder(const struct gl_reachability *r, uint64_t key)
{
    for (size_t i = 0; r && i < r->nheld; i++)
        if (r->held[i].key == key)
            return &r->held[i];
    return NULL;
}

void gl_reachability_free(struct gl_reachability *r)
{
    free(r->held);
    r->held = NULL;
    r->nheld = 0;
}

/* The verdict.  A scan is timed; a check with nothing to find scanned
 * nothing. */
static void conclude(struct gl_reachability *out, enum step st, double t0)
{
    switch (st) {
    case STEP_OK:
        out->available = true;
        out->seconds = gl_clock_s() - t0;
        break;
    case STEP_NOTHING:
        out->available = true;
        break;
    case STEP_NO_MEMORY:
        out->why_not = "out of memory";
        break;
    default:
        out->why_not = "out of memory while scanning";
        out->seconds = gl_clock_s() - t0;
    }
}

void gl_reachability(struct gl_block_info *blocks, size_t n, const uint8_t *held,
                     const struct gl_caller_context *cc, gl_function_name_fn name, void *arg,
                     struct gl_reachability *out)
{
    memset(out, 0, sizeof *out);
    if (!gl_heap_active()) {
        out->why_not = "gpuleak's allocator hooks are not in this process (it was not "
                       "preloaded, or the program has an allocator of its own)";
        return;
    }
    double t0 = gl_clock_s();
    struct gl_owners own;
    struct scan s;
    memset(&s, 0, sizeof s);
    memset(&own, 0, sizeof own);
    s.held = held;

    size_t wanted = 0;
    for (size_t i = 0; i < n; i++)
        wanted += searched(&blocks[i], held, i);
    out->searched = wanted;
    enum step st = wanted ? learn_owners(&own, blocks, n, name, arg) : STEP_NOTHING;
    if (st == STEP_OK)
        st = scan_with_retries(&s, &own, blocks, n, cc, out);
    if (st == STEP_OK)
        apply_marks(&s, blocks, out);

    conclude(out, st, t0);
    /* What a caching allocator holds, its tables point to: still reachable,
     * never a lost block that makes what it points to indirectly lost. */
    for (size_t i = 0; held && out->available && i < n; i++)
        if (held[i] && searched(&blocks[i], NULL, i)) { /* not ignored, not a pool's own */
            blocks[i].flags =
                (uint8_t)((blocks[i].flags & ~GL_BLK_REACH_INTERIOR) | GL_BLK_REACH_START);
            out->held_by_rule++;
        }
    scan_release(&s);
    gl_owners_free(&own);
}
