#include "check/reachability.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "heap/heap.h"
#include "check/reach.h"
#include "event/event.h"
#include "stack/stack_depot.h"
#include "base/tool.h"
#include "track/tracker.h"
#include "check/world.h"

#define RED_ZONE 128
#define MIN_HANDLE                                                                                 \
    (1ULL                                                                                          \
     << 20) /* smaller values are taken for anything but handles */ /* x86-64 ABI: a leaf function \
                                                                       may keep data below its     \
                                                                       stack pointer */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

static const struct mapping *containing(const struct mapping *m, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && addr < m[lo - 1].end ? &m[lo - 1] : NULL;
}

/* ---- targets: what each block can be reached by ---- */

static bool addressed(uint8_t kind)
{
    return kind != GL_MEM_VMM && kind != GL_MEM_ARRAY && kind != GL_MEM_MIPMAPPED_ARRAY &&
           kind != GL_MEM_NONE && kind != GL_MEM_POOL_RESERVE && kind != GL_MEM_GRAPH_RESERVE;
}

struct plan {
    struct gl_reach_target *targets;
    size_t ntargets, targets_cap;
    struct gl_vmm_mapping *maps;
    size_t nmaps, maps_cap;
    struct gl_reach_object *objects;
    size_t objects_cap;
    struct gl_heap_object *heap;
    size_t heap_cap;
    struct gl_reach_range *roots;
    size_t roots_cap;
    uint64_t *regs;
    size_t regs_cap;
    char *maps_text;
    size_t maps_text_cap;
    struct mapping *mappings;
    size_t mappings_cap;
    void *scratch;
    size_t scratch_cap;
};

static void plan_free(struct plan *p)
{
    gl_tool_unmap(p->targets, p->targets_cap * sizeof *p->targets);
    gl_tool_unmap(p->maps, p->maps_cap * sizeof *p->maps);
    gl_tool_unmap(p->objects, p->objects_cap * sizeof *p->objects);
    gl_tool_unmap(p->heap, p->heap_cap * sizeof *p->heap);
    gl_tool_unmap(p->roots, p->roots_cap * sizeof *p->roots);
    gl_tool_unmap(p->regs, p->regs_cap * sizeof *p->regs);
    gl_tool_unmap(p->maps_text, p->maps_text_cap);
    gl_tool_unmap(p->mappings, p->mappings_cap * sizeof *p->mappings);
    gl_tool_unmap(p->scratch, p->scratch_cap);
    memset(p, 0, sizeof *p);
}

static int cmp_handle(const void *a, const void *b)
{
    uint64_t x = ((const struct gl_vmm_mapping *)a)->handle,
             y = ((const struct gl_vmm_mapping *)b)->handle;
    return x < y ? -1 : x > y;
}

/* Targets for every block that can be referenced; false if out of memory. */
static bool build_targets(struct plan *p, const struct gl_block_info *blocks, size_t n)
{
    size_t nmaps = gl_tracker_vmm_map_list(NULL, 0);
    p->maps_cap = nmaps + 64;
    p->maps = gl_tool_map(p->maps_cap * sizeof *p->maps);
    p->targets_cap = n + p->maps_cap;
    p->targets = gl_tool_map(p->targets_cap * sizeof *p->targets);
    if (!p->maps || !p->targets)
        return false;
    p->nmaps = gl_tracker_vmm_map_list(p->maps, p->maps_cap);
    if (p->nmaps > p->maps_cap)
        p->nmaps = p->maps_cap;
    qsort(p->maps, p->nmaps, sizeof *p->maps, cmp_handle);
    for (size_t i = 0; i < n; i++) {
        const struct gl_block_info *b = &blocks[i];
        if ((b->flags & (GL_BLK_IGNORED | GL_BLK_POOL)) || b->kind == GL_MEM_POOL_RESERVE ||
            b->kind == GL_MEM_GRAPH_RESERVE)
            continue; /* cached whatever points to them */
        uint64_t v = gl_key_value(b->key);
        if (addressed(b->kind)) {
            uint64_t size = b->size ? b->size : 1;
            p->targets[p->ntargets++] = (struct gl_reach_target){v, v + size, 0, (uint32_t)i, 0};
            continue;
        }
        /* A handle, and for VMM each address it is mapped at.  Handles that are
         * small numbers (VMM handles may be) would match any counter: only
         * the mappings then tell. */
        if (v >= MIN_HANDLE)
            p->targets[p->ntargets++] = (struct gl_reach_target){0, 0, v, (uint32_t)i, 0};
        if (b->kind != GL_MEM_VMM)
            continue;
        struct gl_vmm_mapping key = {0, 0, b->key};
        const struct gl_vmm_mapping *m = bsearch(&key, p->maps, p->nmaps, sizeof key, cmp_handle);
        while (m && m > p->maps && m[-1].handle == b->key)
            m--;
        for (; m && m < p->maps + p->nmaps && m->handle == b->key; m++)
            if (p->ntargets < p->targets_cap)
                p->targets[p->ntargets++] =
                    (struct gl_reach_target){m->addr, m->addr + m->size, 0, (uint32_t)i, 0};
    }
    gl_reach_sort_targets(p->targets, p->ntargets);
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

/* Objects from the heap snapshot (with the world stopped), and pinned host
 * blocks; returns their count. */
static size_t build_objects(struct plan *p, const struct gl_owners *own,
                            const struct gl_block_info *blocks, size_t n, bool stopped,
                            size_t *needed)
{
    size_t k = gl_heap_snapshot(p->heap, p->heap_cap, stopped);
    *needed = k;
    if (k > p->heap_cap)
        k = p->heap_cap;
    size_t m = 0;
    for (size_t i = 0; i < k && m < p->objects_cap; i++) {
        uint8_t owner = own->callers[p->heap[i].caller];
        p->objects[m++] =
            (struct gl_reach_object){p->heap[i].start, p->heap[i].start + p->heap[i].size,
                                     owner == GL_OWNER_APP || owner == GL_OWNER_LIB};
    }
    for (size_t i = 0; i < n && m < p->objects_cap; i++)
        if (blocks[i].kind == GL_MEM_HOST_PINNED && blocks[i].size)
            p->objects[m++] = (struct gl_reach_object){
                gl_key_value(blocks[i].key), gl_key_value(blocks[i].key) + blocks[i].size, true};
    gl_reach_sort_objects(p->objects, m);
    return m;
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

static void add_root(struct plan *p, size_t *nroots, uint64_t start, uint64_t end)
{
    if (end > start && *nroots < p->roots_cap)
        p->roots[(*nroots)++] = (struct gl_reach_range){start, end};
}

void gl_reachability(struct gl_block_info *blocks, size_t n, const struct gl_caller_context *cc,
                     gl_function_name_fn name, void *arg, struct gl_reachability *out)
{
    uint64_t entry_sp = cc->frame;
    memset(out, 0, sizeof *out);
    if (!gl_heap_active()) {
        out->why_not = "gpuleak's allocator hooks are not in this process (it was not "
                       "preloaded, or the program has an allocator of its own)";
        return;
    }
    double t0 = now_s();
    struct plan p;
    memset(&p, 0, sizeof p);
    struct gl_owners own;
    struct gl_world w;
    memset(&w, 0, sizeof w);
    /* The name function may load libraries (libdw, to symbolize): let it do so
     * before the loaded objects are read, so that they are known as gpuleak's. */
    if (name)
        name(0, arg);
    if (!build_targets(&p, blocks, n) || gl_owners_load(&own) < 0) {
        out->why_not = "out of memory";
        plan_free(&p);
        return;
    }
    probe_cudart(&own, blocks, n, name, arg);
    if (gl_owners_classify_callers(&own, name, arg) < 0) {
        out->why_not = "out of memory";
        gl_owners_free(&own);
        plan_free(&p);
        return;
    }
    if (p.ntargets == 0) { /* nothing to find: no scan */
        out->available = true;
        gl_owners_free(&own);
        plan_free(&p);
        return;
    }
    /* A thread's static TLS block: glibc's static size counts the descriptor,
     * which lies above the thread pointer, the variables below it.  Reading
     * the full size below reads the descriptor's size of whatever precedes
     * the block (gpuleak's own tables, where the kernel merged the mappings:
     * 30 leaked blocks "still reachable" on a two-GPU H200 machine). */
    size_t tls = static_tls_size(), tcb = tcb_size();
    size_t below = tls > tcb ? tls - tcb : tls;
    bool done = false;
    for (int attempt = 0; attempt < 3 && !done; attempt++) {
        /* Size everything while the world runs: nothing can be allocated once
         * it is stopped.  A retry (the heap grew meanwhile) sizes again. */
        size_t heap_now = gl_heap_chunk_count() + gl_heap_mapping_count();
        size_t grow = (heap_now / 4 + 4096) << attempt;
        p.heap_cap = heap_now + grow;
        p.objects_cap = p.heap_cap + n;
        if (gl_world_init(&w) < 0)
            break;
        p.roots_cap = own.nroots + 2 * w.cap + 8;
        p.regs_cap = w.cap * GL_WORLD_NREGS + 8;
        long maps_len = 0;
        {
            /* /proc/self/maps' length now, to size the buffer read later */
            p.maps_text_cap = 1 << 20;
            p.maps_text = gl_tool_map(p.maps_text_cap);
            if (p.maps_text)
                maps_len = read_maps(p.maps_text, p.maps_text_cap);
            if (maps_len > (long)p.maps_text_cap / 2) {
                gl_tool_unmap(p.maps_text, p.maps_text_cap);
                p.maps_text_cap = (size_t)maps_len * 2 + 65536;
                p.maps_text = gl_tool_map(p.maps_text_cap);
            }
        }
        p.mappings_cap = p.maps_text_cap / 24 + 16; /* a line is at least 24 bytes */
        p.heap = gl_tool_map(p.heap_cap * sizeof *p.heap);
        p.objects = gl_tool_map(p.objects_cap * sizeof *p.objects);
        p.roots = gl_tool_map(p.roots_cap * sizeof *p.roots);
        p.regs = gl_tool_map(p.regs_cap * sizeof *p.regs);
        p.mappings = gl_tool_map(p.mappings_cap * sizeof *p.mappings);
        if (!p.heap || !p.objects || !p.roots || !p.regs || !p.maps_text || !p.mappings) {
            gl_world_free(&w);
            break;
        }
        /* The scratch the scan needs, from a snapshot taken now, with room. */
        size_t needed;
        size_t nobj = build_objects(&p, &own, blocks, n, false, &needed);
        struct gl_reach probe_r = {
            .objects = p.objects, .nobjects = nobj, .targets = p.targets, .ntargets = p.ntargets};
        p.scratch_cap = gl_reach_scratch_bytes(&probe_r) * 5 / 4 + (1 << 20) + grow * 64;
        p.scratch = gl_tool_map(p.scratch_cap);
        if (!p.scratch) {
            gl_world_free(&w);
            break;
        }

        /* ---- the world stops: no allocation, no lock, no loader from here ---- */
        out->threads_stopped = gl_world_stop(&w, 200);
        long len = read_maps(p.maps_text, p.maps_text_cap);
        size_t nmappings = len > 0 ? parse_maps(p.maps_text, p.mappings, p.mappings_cap) : 0;
        nobj = build_objects(&p, &own, blocks, n, true, &needed);
        size_t nroots = 0, nregs = 0;
        for (size_t i = 0; i < own.nroots; i++)
            add_root(&p, &nroots, own.roots[i].start, own.roots[i].end);
        const struct mapping *me = containing(p.mappings, nmappings, entry_sp);
        if (me)
            add_root(&p, &nroots, entry_sp, me->end);
        add_root(&p, &nroots, (uint64_t)(uintptr_t)&cc->regs,
                 (uint64_t)(uintptr_t)&cc->regs + sizeof cc->regs);
        for (size_t i = 0; i < w.n; i++) {
            const struct gl_stopped_thread *t = &w.threads[i];
            if (t->tid <= 0 || atomic_load(&t->state) != 1)
                continue;
            const struct mapping *sm = containing(p.mappings, nmappings, t->sp);
            uint64_t lo = t->sp > RED_ZONE ? t->sp - RED_ZONE : t->sp;
            if (sm) {
                if (lo < sm->start)
                    lo = sm->start;
                add_root(&p, &nroots, lo, stack_end(sm, t->sp, t->tp));
            }
            for (int r = 0; r < GL_WORLD_NREGS && nregs < p.regs_cap; r++)
                p.regs[nregs++] = t->regs[r];
            /* Static TLS sits below the thread pointer: inside a pthread's stack
             * mapping (scanned above), elsewhere for the main thread. */
            const struct mapping *tm = containing(p.mappings, nmappings, t->tp);
            if (tm && tm != sm) {
                uint64_t a = t->tp > below ? t->tp - below : 0, b = t->tp + tcb;
                add_root(&p, &nroots, a < tm->start ? tm->start : a, b > tm->end ? tm->end : b);
            }
        }
        {
            /* This thread's static TLS, when its stack is not where it lives. */
            uint64_t tp = 0;
#if defined(__x86_64__)
            __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#endif
            const struct mapping *tm = containing(p.mappings, nmappings, tp);
            if (tm && tm != me) {
                uint64_t a = tp > below ? tp - below : 0, b = tp + tcb;
                add_root(&p, &nroots, a < tm->start ? tm->start : a, b > tm->end ? tm->end : b);
            }
        }
        struct gl_reach r = {
            .roots = p.roots,
            .nroots = nroots,
            .root_words = p.regs,
            .nroot_words = nregs,
            .objects = p.objects,
            .nobjects = nobj,
            .targets = p.targets,
            .ntargets = p.ntargets,
            .guard_faults = true,
        };
        int rc = gl_reach_run(&r, p.scratch, p.scratch_cap);
        gl_world_resume(&w);
        /* ---- the world runs again ---- */

        out->threads_skipped = w.skipped;
        gl_world_free(&w);
        if (rc == 0 && needed <= p.heap_cap) {
            done = true;
            out->root_bytes = r.stats.root_bytes;
            out->object_bytes = r.stats.object_bytes;
            out->objects_reached = r.stats.objects_reached;
            out->faults = r.stats.faults;
            break;
        }
        /* Too small for what the heap became: size again. */
        gl_tool_unmap(p.heap, p.heap_cap * sizeof *p.heap);
        gl_tool_unmap(p.objects, p.objects_cap * sizeof *p.objects);
        gl_tool_unmap(p.roots, p.roots_cap * sizeof *p.roots);
        gl_tool_unmap(p.regs, p.regs_cap * sizeof *p.regs);
        gl_tool_unmap(p.maps_text, p.maps_text_cap);
        gl_tool_unmap(p.mappings, p.mappings_cap * sizeof *p.mappings);
        gl_tool_unmap(p.scratch, p.scratch_cap);
        p.heap = NULL, p.objects = NULL, p.roots = NULL, p.regs = NULL, p.maps_text = NULL;
        p.mappings = NULL, p.scratch = NULL;
    }
    if (done) {
        out->available = true;
        for (size_t i = 0; i < p.ntargets; i++) {
            struct gl_block_info *b = &blocks[p.targets[i].owner];
            if (p.targets[i].state == GL_REACH_START)
                b->flags = (uint8_t)((b->flags & ~GL_BLK_REACH_INTERIOR) | GL_BLK_REACH_START);
            else if (p.targets[i].state == GL_REACH_INTERIOR && !(b->flags & GL_BLK_REACH_START))
                b->flags |= GL_BLK_REACH_INTERIOR;
        }
    } else {
        out->why_not = "out of memory while scanning";
    }
    out->seconds = now_s() - t0;
    gl_owners_free(&own);
    plan_free(&p);
}
