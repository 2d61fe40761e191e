/* SPDX-License-Identifier: MIT */
#include "observe/driver.h"

#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/spin.h"
#include "base/thread.h"
#include "base/text_span.h"
#include "common/util.h"
#include "event/api.h"
#include "event/dispatch.h"
#include "heap/heap.h"
#include "observe/contexts.h"
#include "observe/decode.h"

static const char *const names[GL_DRIVER_NENTRIES] = {
#define GL_DRIVER_ENTRY(name, params, args) [GL_DRIVER_##name] = #name,
#define GL_DRIVER_CONTROL(name, params, args) [GL_DRIVER_##name] = #name,
#include "observe/driver_entries.def"
#undef GL_DRIVER_ENTRY
#undef GL_DRIVER_CONTROL
};

/* The CUPTI id of a tracked entry point (0 for the control ones): what
 * observe/decode.h reads its parameters by. */
static const uint32_t cbids[GL_DRIVER_NENTRIES] = {
#define GL_DRIVER_ENTRY(name, params, args) [GL_DRIVER_##name] = CUPTI_DRIVER_TRACE_CBID_##name,
#define GL_DRIVER_CONTROL(name, params, args)
#include "observe/driver_entries.def"
#undef GL_DRIVER_ENTRY
#undef GL_DRIVER_CONTROL
};

void *_Atomic gl_driver_functions[GL_DRIVER_NENTRIES];
_Atomic unsigned char gl_driver_watched[GL_DRIVER_NENTRIES];
static GL_READ_MOSTLY atomic_bool started, cross_checking;

const char *gl_driver_name(unsigned id) { return id < GL_DRIVER_NENTRIES ? names[id] : "?"; }

/* ---- the driver's functions ---- */

typedef void *(*dlsym_fn)(void *, const char *);

void *gl_driver_libc_dlsym(void)
{
    /* By version: an unversioned lookup of "dlsym" would find this library's
     * own. */
    void *libc = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    return libc ? libc : dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

void *gl_driver_next_dlsym(void)
{
    static _Atomic(dlsym_fn) next;
    dlsym_fn fn = atomic_load_explicit(&next, memory_order_acquire);
    if (fn)
        return (void *)fn;
    dlsym_fn libc = (dlsym_fn)gl_driver_libc_dlsym();
    if (!libc)
        return NULL;
    /* Then, asked from here, whatever comes after this library: another
     * tool's dlsym wrapper (an unversioned definition, which dlvsym skips),
     * else libc's itself.  Not a tail call: libc takes "here" from the
     * return address. */
    fn = (dlsym_fn)libc(RTLD_NEXT, "dlsym");
    __asm__ volatile("" ::: "memory");
    if (!fn)
        fn = libc;
    atomic_store_explicit(&next, fn, memory_order_release);
    return (void *)fn;
}

void *gl_driver_dlsym(void *handle, const char *name)
{
    dlsym_fn fn = (dlsym_fn)gl_driver_next_dlsym();
    return fn ? fn(handle, name) : NULL;
}

static int find_libcuda(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && (strncmp(base, "libcuda.so", 10) == 0 || strncmp(base, "libcuda-", 8) == 0))
        *(bool *)found = true;
    return *(bool *)found;
}

/* The extent of one loaded object's code: the object loaded at base. */
struct text {
    uint64_t base, start, end;
};

static int text_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text *t = arg;
    if (info->dlpi_addr != t->base)
        return 0;
    gl_text_span(info, &t->start, &t->end);
    return 1;
}

/* The driver's code, as the handle names it, to the heap: the chunks it
 * allocates go unrecorded (the leak check never follows them). */
static void skip_driver_chunks(void *h)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
        (void)dlerror();
        return;
    }
    struct text t = {.base = lm->l_addr};
    dl_iterate_phdr(text_of, &t);
    gl_heap_skip_code(t.start, t.end);
}

/* libcuda, once the program has loaded it (never loaded from here).  Whether
 * it is loaded is asked of the loader's list first: dlopen(RTLD_NOLOAD) of a
 * library not loaded searches the library path, and sets dlerror. */
static void *libcuda(void)
{
    static _Atomic(void *) handle;
    void *h = atomic_load_explicit(&handle, memory_order_acquire);
    if (h)
        return h;
    bool loaded = false;
    dl_iterate_phdr(find_libcuda, &loaded);
    if (!loaded)
        return NULL;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        skip_driver_chunks(h);
        atomic_store_explicit(&handle, h, memory_order_release);
    } else
        (void)dlerror(); /* libcuda under another name: nothing to hook */
    return h;
}

/* The driver's functions, all looked up once libcuda is there; those it
 * lacks are remembered as missing (never looked up again).  The lookups'
 * errors are consumed: a program's dlerror() sees only its own calls'. */
static atomic_bool missing[GL_DRIVER_NENTRIES];
static atomic_bool table_done;

void gl_driver_prepare(void)
{
    if (atomic_load_explicit(&table_done, memory_order_acquire))
        return;
    void *h = libcuda();
    if (!h)
        return;
    bool failed = false;
    for (unsigned id = 0; id < GL_DRIVER_NENTRIES; id++) {
        if (atomic_load_explicit(&gl_driver_functions[id], memory_order_acquire))
            continue;
        void *fn = gl_driver_dlsym(h, names[id]);
        if (fn)
            atomic_store_explicit(&gl_driver_functions[id], fn, memory_order_release);
        else {
            atomic_store(&missing[id], true);
            failed = true;
        }
    }
    if (failed)
        (void)dlerror();
    atomic_store_explicit(&table_done, true, memory_order_release);
}

void *gl_driver_resolve(unsigned id)
{
    if (id >= GL_DRIVER_NENTRIES || atomic_load(&missing[id]))
        return NULL;
    gl_driver_prepare();
    return atomic_load_explicit(&gl_driver_functions[id], memory_order_acquire);
}

int gl_driver_entry_of(const void *fn)
{
    if (!fn)
        return -1;
    gl_driver_prepare();
    /* From the last: where libcuda exports two names at one address (a v1
     * kept as an alias of its _v2), the newer, which CUPTI reports. */
    for (unsigned id = GL_DRIVER_NENTRIES; id-- > 0;)
        if (atomic_load_explicit(&gl_driver_functions[id], memory_order_acquire) == fn)
            return (int)id;
    return -1;
}

int gl_driver_entry_named(const char *name)
{
    for (unsigned id = 0; id < GL_DRIVER_NENTRIES; id++)
        if (strcmp(names[id], name) == 0)
            return (int)id;
    return -1;
}

void *gl_driver_next_symbol(const char *name)
{
    void *p = gl_driver_dlsym(RTLD_NEXT, name);
    __asm__ volatile("" ::: "memory"); /* not a tail call: "next" is after here */
    return p;
}

/* ---- starting ---- */

static GL_READ_MOSTLY CUresult (*ctx_get_current)(CUcontext *);

/* The calling thread's context, asked when an event needs it. */
GL_HOT static uint64_t current_context(void)
{
    CUcontext ctx = NULL;
    if (ctx_get_current && ctx_get_current(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    return (uintptr_t)ctx;
}

/* A context's device, asked of the driver: never from inside a driver call,
 * as hooks run around them. */
static int device_of(uint64_t ctx)
{
    static CUresult (*get)(CUdevice *, CUcontext);
    static CUresult (*get_current)(CUdevice *);
    static CUresult (*push)(CUcontext), (*pop)(CUcontext *);
    if (!get && !get_current) {
        void *h = libcuda();
        get = (CUresult(*)(CUdevice *, CUcontext))gl_driver_dlsym(h, "cuCtxGetDevice_v2");
        get_current = (CUresult(*)(CUdevice *))gl_driver_dlsym(h, "cuCtxGetDevice");
        push = (CUresult(*)(CUcontext))gl_driver_dlsym(h, "cuCtxPushCurrent_v2");
        pop = (CUresult(*)(CUcontext *))gl_driver_dlsym(h, "cuCtxPopCurrent_v2");
        (void)dlerror();
    }
    CUdevice dev;
    if (get)
        return get(&dev, (CUcontext)(uintptr_t)ctx) == CUDA_SUCCESS ? dev : -1;
    /* A driver before cuCtxGetDevice_v2: the context made current for the
     * question, then put back. */
    CUcontext old;
    if (!get_current || !push || !pop || push((CUcontext)(uintptr_t)ctx) != CUDA_SUCCESS)
        return -1;
    CUresult rc = get_current(&dev);
    pop(&old);
    return rc == CUDA_SUCCESS ? dev : -1;
}

void gl_driver_start(bool check_ranges, bool cross_check)
{
    ctx_get_current = (CUresult(*)(CUcontext *))gl_driver_dlsym(libcuda(), "cuCtxGetCurrent");
    if (!cross_check) {
        static struct gl_placement placement;
        placement = gl_contexts_placement;
        placement.current_context = current_context;
        gl_contexts_set_query(device_of);
        gl_dispatch_set_placement(&placement);
    } /* else CUPTI's query (observe/cupti.h) serves both, and the cross-check
       * asks every call's context */
    atomic_store(&cross_checking, cross_check);
    /* GPULEAK_BENCH=null: the hooks only pass calls on (their own cost);
     * spin:NS: they wait at each call's entry and exit, and pass it on. */
    bool on = !gl_call_bench_null() || gl_call_spin;
    for (unsigned id = 0; id < GL_DRIVER_NENTRIES; id++) {
        unsigned api = gl_decode_api_of_cbid(cbids[id]);
        bool tracked = on && api != GL_API_NONE && (check_ranges || !gl_api_is_access(api));
        atomic_store(&gl_driver_watched[id], !tracked                      ? GL_DRIVER_UNWATCHED
                                             : gl_api_is_capture_join(api) ? GL_DRIVER_WATCHED_ARMED
                                                                           : GL_DRIVER_WATCHED);
    }
    atomic_store(&started, true);
}

bool gl_driver_started(void) { return atomic_load(&started); }

/* ---- calls ---- */

GL_HOT void gl_driver_enter(struct gl_driver_call *c, unsigned id, const void *params)
{
    if (__builtin_expect(gl_call_null, 0)) { /* spin:NS, alternate:gpuleak's blocks without */
        c->cbid = cbids[id];
        c->token = 0;
        c->check.cbid = 0;
        /* Entry 0 says the call began here (a tracked entry's is the
         * driver's function); an exit on the tracked path, should
         * alternate:gpuleak switch meanwhile, reads a site. */
        c->site = (struct gl_call_site){GL_CALL_CTX_UNASKED, 0};
        gl_call_bench_spin();
        return;
    }
    /* The context is asked when an event needs it (observe/call.h): an
     * allocation's at its exit, a release's not at all, commonly; the
     * cross-check asks every call's now.  Acquire: a cross-check turned off
     * (CUPTI failed to start) is seen with the placement installed before
     * it, which asks contexts later. */
    bool checking = atomic_load_explicit(&cross_checking, memory_order_acquire);
    c->cbid = cbids[id];
    c->site = (struct gl_call_site){checking ? current_context() : GL_CALL_CTX_UNASKED,
                                    (uintptr_t)gl_driver_function(id)};
    struct gl_thread *self = gl_thread_self();
    if (self)
        self->call_entry = c->site.entry;
    c->token = gl_dispatch_open() ? gl_call_enter(c->cbid, params, &c->site) : 0;
    if (checking)
        gl_crosscheck_begin(&c->check, c->cbid, params, c->site.entry, c->site.ctx);
    else
        c->check.cbid = 0;
}

GL_HOT void gl_driver_exit(struct gl_driver_call *c, const void *params, CUresult rc)
{
    /* A call ends the way it began (entry 0: on the null path), should
     * alternate:gpuleak have switched meanwhile: a release begun is ended. */
    if (__builtin_expect(gl_call_null, 0) && !c->site.entry) {
        gl_call_bench_spin();
        if (__builtin_expect(gl_alternate_active, 0))
            gl_alternate_after_exit(c->cbid, false);
        return;
    }
    if (c->check.cbid)
        gl_crosscheck_end(&c->check, rc);
    if (c->token || gl_dispatch_open())
        gl_call_exit(c->cbid, params, &c->site, rc, c->token);
    struct gl_thread *self = gl_thread_self();
    if (self)
        self->call_entry = 0;
    if (__builtin_expect(gl_alternate_active, 0))
        gl_alternate_after_exit(c->cbid, c->token != 0);
}

/* ---- contexts and streams ---- */

void gl_driver_context_destroyed(uint64_t ctx)
{
    if (!ctx || !atomic_load(&started) || atomic_load(&cross_checking))
        return; /* with the cross-check, CUPTI's resource callbacks say it */
    if (gl_dispatch_open()) {
        struct gl_event ev = {.type = GL_EV_CTX_DESTROY, .ctx = ctx, .tid = gl_thread_id()};
        gl_dispatch(&ev);
    }
    gl_contexts_destroyed(ctx);
}

void gl_driver_stream_created(uint64_t stream)
{
    if (!atomic_load(&started) || atomic_load(&cross_checking))
        return;
    uint64_t ctx = current_context();
    if (ctx)
        gl_contexts_stream_created(stream, ctx);
}

void gl_driver_stream_destroyed(uint64_t stream)
{
    if (atomic_load(&started) && !atomic_load(&cross_checking))
        gl_contexts_stream_destroyed(stream);
}

#define MAX_DEVICES 64
static _Atomic uint64_t primary[MAX_DEVICES];

void gl_driver_primary_retained(int dev, uint64_t ctx)
{
    if (dev >= 0 && dev < MAX_DEVICES)
        atomic_store(&primary[dev], ctx);
}

uint64_t gl_driver_primary_context(int dev)
{
    static CUresult (*state)(CUdevice, unsigned *, int *);
    if (!state)
        state = (CUresult(*)(CUdevice, unsigned *, int *))gl_driver_dlsym(
            libcuda(), "cuDevicePrimaryCtxGetState");
    unsigned flags;
    int active = 0;
    if (!state || state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return 0;
    uint64_t known = dev >= 0 && dev < MAX_DEVICES ? atomic_load(&primary[dev]) : 0;
    if (known)
        return known;
    void *h = libcuda();
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))gl_driver_dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*release)(CUdevice) =
        (CUresult(*)(CUdevice))gl_driver_dlsym(h, "cuDevicePrimaryCtxRelease_v2");
    if (!retain || !release)
        return 0;
    /* Retaining an active primary context only counts a reference: its handle,
     * with the count as it was after the release. */
    CUcontext ctx = NULL;
    if (retain(&ctx, dev) != CUDA_SUCCESS)
        return 0;
    release(dev);
    gl_driver_primary_retained(dev, (uintptr_t)ctx);
    return (uintptr_t)ctx;
}

/* ---- entry points no hook stands for ---- */

#define MAX_UNKNOWN 32
static char unknown[MAX_UNKNOWN][96];
static unsigned nunknown;
static gl_spinlock unknown_lock;

/* The family of an entry point: its name without version and stream suffixes. */
static size_t family_len(const char *s)
{
    size_t n = strlen(s);
    for (bool cut = true; cut;) {
        cut = false;
        static const char *const suffixes[] = {"_ptsz", "_ptds", "_v2", "_v3", "_v4"};
        for (size_t i = 0; i < GL_ARRAY_SIZE(suffixes); i++) {
            size_t k = strlen(suffixes[i]);
            if (n > k && strncmp(s + n - k, suffixes[i], k) == 0) {
                n -= k;
                cut = true;
            }
        }
    }
    return n;
}

bool gl_driver_tracked_family(const char *symbol)
{
    size_t n = family_len(symbol);
    for (unsigned id = 0; id < GL_DRIVER_NENTRIES; id++)
        if (family_len(names[id]) == n && strncmp(names[id], symbol, n) == 0)
            return true;
    return false;
}

void gl_driver_note_unknown(const char *symbol, int version, uint64_t flags)
{
    char line[96];
    snprintf(line, sizeof line, "%s (version %d, flags %#llx)", symbol, version,
             (unsigned long long)flags);
    gl_spin_lock(&unknown_lock);
    bool seen = false;
    for (unsigned i = 0; i < nunknown && !seen; i++)
        seen = strcmp(unknown[i], line) == 0;
    if (!seen && nunknown < MAX_UNKNOWN)
        memcpy(unknown[nunknown++], line, sizeof line);
    gl_spin_unlock(&unknown_lock);
}

const char *gl_driver_unknown(unsigned i)
{
    gl_spin_lock(&unknown_lock);
    const char *s = i < nunknown ? unknown[i] : NULL;
    gl_spin_unlock(&unknown_lock);
    return s;
}
