/* SPDX-License-Identifier: MIT */
/* The allocator's entry points, interposed (heap.h).  Each forwards to the
 * next definition (glibc's, or a preloaded jemalloc's), then records what it
 * got with the address of its caller.
 *
 * Rules, because these run inside every allocation of the program:
 *  - no malloc of our own: the tables are tool memory (raw mmap system calls);
 *  - the next definitions are found with dlsym(RTLD_NEXT), which may itself
 *    allocate: those allocations come from a small static arena;
 *  - an allocation made while a hook is already running on the thread (jemalloc
 *    mapping an arena inside malloc) is the allocator's own: not recorded;
 *  - operator new passes its own caller down to the malloc it calls, so that
 *    C++ allocations are owned by the code that said `new`, not by libstdc++;
 *  - a chunk the CUDA driver's code asks for is not recorded (heap.h,
 *    gl_heap_skip_code): the leak check would never follow it.
 * Built with -fexceptions: a failing operator new throws through these frames. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heap/anon_maps.h"
#include "heap/callers.h"
#include "heap/chunk_table.h"
#include "heap/heap_state.h"
#include "common/util.h"
#include "observe/driver.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- per-thread state: 16 bytes of static TLS ---- */
struct hook_tls {
    uint32_t depth; /* hooks running on this thread */
    uint32_t resolving;
    uintptr_t caller; /* set by operator new for the malloc it calls */
};
static __thread struct hook_tls tls __attribute__((tls_model("initial-exec")));

/* ---- the next definitions ---- */
typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_fn)(size_t, size_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
typedef void *(*new_fn)(size_t);
typedef void *(*new_nothrow_fn)(size_t, const void *);
typedef void *(*new_aligned_fn)(size_t, size_t);
typedef void *(*new_aligned_nothrow_fn)(size_t, size_t, const void *);

static struct {
    malloc_fn malloc;
    free_fn free;
    calloc_fn calloc;
    realloc_fn realloc;
    posix_memalign_fn posix_memalign;
    aligned_fn aligned_alloc, memalign;
    malloc_fn valloc, pvalloc;
    mmap_fn mmap;
    munmap_fn munmap;
    mremap_fn mremap;
} next;

/* Allocations made while the next definitions are looked up. */
static char boot_arena[64 * 1024] __attribute__((aligned(16)));
static _Atomic size_t boot_used;

static bool in_boot(const void *p)
{
    return (const char *)p >= boot_arena && (const char *)p < boot_arena + sizeof boot_arena;
}

static void *boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need = (n + 15) & ~(size_t)15;
    size_t off = atomic_load(&boot_used), start;
    do {
        start = (off + align - 1) & ~(align - 1);
        if (start + need > sizeof boot_arena)
            return NULL;
    } while (!atomic_compare_exchange_weak(&boot_used, &off, start + need));
    return boot_arena + start; /* zeroed: static storage, never reused */
}

static void resolve(void)
{
    tls.resolving = 1;
#define NEXT(field, name) *(void **)&next.field = gl_driver_next_symbol(name)
    NEXT(free, "free");
    NEXT(calloc, "calloc");
    NEXT(realloc, "realloc");
    NEXT(posix_memalign, "posix_memalign");
    NEXT(aligned_alloc, "aligned_alloc");
    NEXT(memalign, "memalign");
    NEXT(valloc, "valloc");
    NEXT(pvalloc, "pvalloc");
    NEXT(mmap, "mmap");
    NEXT(munmap, "munmap");
    NEXT(mremap, "mremap");
    NEXT(malloc, "malloc"); /* last: it says the others are there */
#undef NEXT
    tls.resolving = 0;
}

/* Ready to forward?  false while this thread is looking the definitions up:
 * the caller then serves from the boot arena. */
static inline bool ready(void)
{
    if (__builtin_expect(next.malloc != NULL, 1))
        return true;
    if (tls.resolving)
        return false;
    resolve();
    return next.malloc != NULL;
}

static inline uintptr_t caller_of(uintptr_t ret) { return tls.caller ? tls.caller : ret; }

static inline void record(void *p, size_t n, uintptr_t caller)
{
    if (gl_heap_state_skipped(caller)) {
        /* The driver's own: never followed.  An entry left at its address (a
         * free the hooks did not see) goes, as a record would replace it:
         * else the scan would follow the driver's chunk as the program's. */
        gl_chunk_table_remove((uint64_t)(uintptr_t)p);
        return;
    }
    gl_chunk_table_insert((uint64_t)(uintptr_t)p, n, gl_callers_id(caller));
    gl_heap_state_mark_active();
}

bool gl_heap_hooks_busy(void) { return tls.depth != 0; }

#define RET_ADDR ((uintptr_t)__builtin_return_address(0))

/* ---- malloc and its family ---- */

GL_HOT EXPORT void *malloc(size_t n)
{
    if (!ready())
        return boot_alloc(n, 16);
    if (tls.depth)
        return next.malloc(n);
    tls.depth++;
    void *p = next.malloc(n);
    tls.depth--;
    if (p)
        record(p, n, caller_of(RET_ADDR));
    return p;
}

GL_HOT EXPORT void *calloc(size_t k, size_t n)
{
    if (!ready()) {
        size_t bytes;
        if (__builtin_mul_overflow(k, n, &bytes))
            return NULL;
        return boot_alloc(bytes, 16);
    }
    if (tls.depth)
        return next.calloc(k, n);
    tls.depth++;
    void *p = next.calloc(k, n);
    tls.depth--;
    if (p)
        record(p, k * n, caller_of(RET_ADDR));
    return p;
}

GL_HOT EXPORT void free(void *p)
{
    if (!p || in_boot(p))
        return;
    /* Out of the table first: once freed, another thread may be handed the
     * same address and record it. */
    gl_chunk_table_remove((uint64_t)(uintptr_t)p);
    if (ready())
        next.free(p);
}

GL_HOT static void *realloc_with(void *p, size_t n, uintptr_t ret)
{
    if (in_boot(p)) { /* from the boot arena: move it out (its size is not known: copy n) */
        void *q = malloc(n);
        if (q)
            memcpy(q, p,
                   n < (size_t)(boot_arena + sizeof boot_arena - (char *)p)
                       ? n
                       : (size_t)(boot_arena + sizeof boot_arena - (char *)p));
        return q;
    }
    if (!ready())
        return NULL;
    if (tls.depth)
        return next.realloc(p, n);
    uint64_t old_size = 0;
    uint32_t old_caller = 0;
    bool had = p && gl_chunk_table_lookup((uint64_t)(uintptr_t)p, &old_size, &old_caller);
    if (had)
        gl_chunk_table_remove((uint64_t)(uintptr_t)p);
    tls.depth++;
    void *q = next.realloc(p, n);
    tls.depth--;
    if (q)
        record(q, n, caller_of(ret));
    else if (had && n != 0) /* failed: p is still the program's */
        gl_chunk_table_insert((uint64_t)(uintptr_t)p, old_size, old_caller);
    return q;
}

EXPORT void *realloc(void *p, size_t n) { return realloc_with(p, n, RET_ADDR); }

EXPORT void *reallocarray(void *p, size_t k, size_t n)
{
    size_t bytes;
    if (__builtin_mul_overflow(k, n, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_with(p, bytes, RET_ADDR);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (!ready()) {
        *out = boot_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    if (tls.depth)
        return next.posix_memalign(out, align, n);
    tls.depth++;
    int rc = next.posix_memalign(out, align, n);
    tls.depth--;
    if (rc == 0 && *out)
        record(*out, n, caller_of(RET_ADDR));
    return rc;
}

#define ALIGNED_HOOK(name)                                                                         \
    EXPORT void *name(size_t align, size_t n)                                                      \
    {                                                                                              \
        if (!ready())                                                                              \
            return boot_alloc(n, align);                                                           \
        if (tls.depth)                                                                             \
            return next.name(align, n);                                                            \
        tls.depth++;                                                                               \
        void *p = next.name(align, n);                                                             \
        tls.depth--;                                                                               \
        if (p)                                                                                     \
            record(p, n, caller_of(RET_ADDR));                                                     \
        return p;                                                                                  \
    }
ALIGNED_HOOK(aligned_alloc)
ALIGNED_HOOK(memalign)

#define PAGE_HOOK(name)                                                                            \
    EXPORT void *name(size_t n)                                                                    \
    {                                                                                              \
        if (!ready())                                                                              \
            return boot_alloc(n, 4096);                                                            \
        if (tls.depth)                                                                             \
            return next.name(n);                                                                   \
        tls.depth++;                                                                               \
        void *p = next.name(n);                                                                    \
        tls.depth--;                                                                               \
        if (p)                                                                                     \
            record(p, n, caller_of(RET_ADDR));                                                     \
        return p;                                                                                  \
    }
PAGE_HOOK(valloc)
PAGE_HOOK(pvalloc)

/* ---- mappings ---- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!ready()) /* while looking the definitions up: the system call itself */
        return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    void *p = next.mmap(addr, len, prot, flags, fd, off);
    if (p == MAP_FAILED)
        return p;
    /* Whatever was there is gone (MAP_FIXED), and the new mapping is the
     * program's own if it is anonymous, writable and not the allocator's.  A
     * thread stack (MAP_STACK: glibc's, with a guard page it is PROT_NONE here
     * anyway) is not: a live thread's stack is scanned from its stack pointer,
     * and a dead one's, kept in glibc's stack cache, holds only stale values. */
    gl_anon_maps_remove((uint64_t)(uintptr_t)p, len);
    if ((flags & MAP_ANONYMOUS) && (prot & PROT_WRITE) && !(flags & MAP_STACK) && !tls.depth) {
        gl_anon_maps_add((uint64_t)(uintptr_t)p, len, gl_callers_id(caller_of(RET_ADDR)));
        gl_heap_state_mark_active();
    }
    return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
    gl_anon_maps_remove((uint64_t)(uintptr_t)addr, len);
    if (!ready())
        return (int)syscall(SYS_munmap, addr, len);
    return next.munmap(addr, len);
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (!ready()) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    uint32_t caller = 0;
    bool had = gl_anon_maps_take((uint64_t)(uintptr_t)old, old_len, &caller);
    void *p = (flags & MREMAP_FIXED) ? next.mremap(old, old_len, new_len, flags, want)
                                     : next.mremap(old, old_len, new_len, flags);
    if (p == MAP_FAILED) {
        if (had)
            gl_anon_maps_add((uint64_t)(uintptr_t)old, old_len, caller);
        return p;
    }
    gl_anon_maps_remove((uint64_t)(uintptr_t)p, new_len);
    if (had)
        gl_anon_maps_add((uint64_t)(uintptr_t)p, new_len, caller);
    return p;
}

/* ---- C++ operator new: the owner is whoever said `new` ---- */

/* libstdc++ (or libc++) may be loaded after the hooks resolved, and privately
 * (Python loads extensions RTLD_LOCAL): ask the library itself. */
static void *next_new(const char *name)
{
    void *f = gl_driver_next_symbol(name);
    if (f)
        return f;
    static const char *const libs[] = {"libstdc++.so.6", "libc++.so.1"};
    for (size_t i = 0; i < GL_ARRAY_SIZE(libs); i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = dlsym(h, name);
            dlclose(h);
            if (f)
                return f;
        }
    }
    return NULL;
}

static void restore_caller(uintptr_t *saved) { tls.caller = *saved; }

#define OWNER_SCOPE                                                                                \
    uintptr_t saved_caller __attribute__((cleanup(restore_caller))) = tls.caller;                  \
    if (!tls.caller)                                                                               \
    tls.caller = RET_ADDR

#define NEW_HOOK(sym, type, params, args, fallback)                                                \
    static type next_##sym;                                                                        \
    EXPORT void *sym params                                                                        \
    {                                                                                              \
        OWNER_SCOPE;                                                                               \
        type f = __atomic_load_n(&next_##sym, __ATOMIC_ACQUIRE);                                   \
        if (!f) {                                                                                  \
            *(void **)&f = next_new(#sym);                                                         \
            __atomic_store_n(&next_##sym, f, __ATOMIC_RELEASE);                                    \
        }                                                                                          \
        if (f)                                                                                     \
            return f args;                                                                         \
        fallback;                                                                                  \
    }

/* Without a C++ library to forward to (none loaded: nobody should be calling),
 * new is malloc, and failure, which cannot throw from here, aborts. */
#define PLAIN(n)                                                                                   \
    do {                                                                                           \
        void *p_ = malloc((n) ? (n) : 1);                                                          \
        if (!p_)                                                                                   \
            abort();                                                                               \
        return p_;                                                                                 \
    } while (0)
#define PLAIN_NOTHROW(n) return malloc((n) ? (n) : 1)
#define ALIGNED(n, a)                                                                              \
    do {                                                                                           \
        void *p_ = NULL;                                                                           \
        if (posix_memalign(&p_, (a) < sizeof(void *) ? sizeof(void *) : (a), (n) ? (n) : 1))       \
            abort();                                                                               \
        return p_;                                                                                 \
    } while (0)
#define ALIGNED_NOTHROW(n, a)                                                                      \
    do {                                                                                           \
        void *p_ = NULL;                                                                           \
        if (posix_memalign(&p_, (a) < sizeof(void *) ? sizeof(void *) : (a), (n) ? (n) : 1))       \
            return NULL;                                                                           \
        return p_;                                                                                 \
    } while (0)

NEW_HOOK(_Znwm, new_fn, (size_t n), (n), PLAIN(n))
NEW_HOOK(_Znam, new_fn, (size_t n), (n), PLAIN(n))
NEW_HOOK(_ZnwmRKSt9nothrow_t, new_nothrow_fn, (size_t n, const void *t), (n, t), PLAIN_NOTHROW(n))
NEW_HOOK(_ZnamRKSt9nothrow_t, new_nothrow_fn, (size_t n, const void *t), (n, t), PLAIN_NOTHROW(n))
NEW_HOOK(_ZnwmSt11align_val_t, new_aligned_fn, (size_t n, size_t a), (n, a), ALIGNED(n, a))
NEW_HOOK(_ZnamSt11align_val_t, new_aligned_fn, (size_t n, size_t a), (n, a), ALIGNED(n, a))
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, new_aligned_nothrow_fn,
         (size_t n, size_t a, const void *t), (n, a, t), ALIGNED_NOTHROW(n, a))
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, new_aligned_nothrow_fn,
         (size_t n, size_t a, const void *t), (n, a, t), ALIGNED_NOTHROW(n, a))
