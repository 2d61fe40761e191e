/* SPDX-License-Identifier: MIT */
/* The hooks at the driver's entry points (observe/driver.h), and the lookups
 * that hand them out: dlsym and cuGetProcAddress.  Part of the injected
 * library, not of the core: its symbols are exported (libgpuleak.map), so
 * that a program linked with -lcuda binds to them.
 *
 * A hook of a tracked entry point fills the parameter struct CUPTI would give
 * (driver_entries.def has the signatures) and runs the driver's function
 * between gl_driver_enter and gl_driver_exit.  When nothing is watched it only
 * jumps to the driver's function (a tail call: no frame of its own). */
#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "common/util.h"
#include "observe/driver.h"

#define GL_EXPORT __attribute__((visibility("default")))
#define GL_ARGS(...) __VA_ARGS__

/* The driver lacks the function (an exported hook bound by a program built
 * against a newer driver): what a missing entry point returns. */
#define NO_FUNCTION CUDA_ERROR_NOT_FOUND

/* ---- hooks of the tracked entry points ---- */

/* The entry points a program calls for each block it allocates and frees:
 * their hooks go with the rest of the allocation path (GL_HOT).  Each name
 * below expands to two arguments, any other HOT_ENTRY_x to one, which is how
 * HOT_PICK_ tells them apart.  The name is pasted (HOT_ENTRY_##name), never
 * expanded first: cuda.h defines cuMemAlloc as cuMemAlloc_v2, and the v1
 * entry points must stay cold. */
#define HOT_ENTRY_cuMemAlloc_v2 ~, GL_HOT
#define HOT_ENTRY_cuMemFree_v2 ~, GL_HOT
#define HOT_ENTRY_cuMemAllocAsync ~, GL_HOT
#define HOT_ENTRY_cuMemAllocAsync_ptsz ~, GL_HOT
#define HOT_ENTRY_cuMemFreeAsync ~, GL_HOT
#define HOT_ENTRY_cuMemFreeAsync_ptsz ~, GL_HOT
#define HOT_ENTRY_cuMemAllocFromPoolAsync ~, GL_HOT
#define HOT_ENTRY_cuMemAllocFromPoolAsync_ptsz ~, GL_HOT
#define HOT_ENTRY_cuMemAllocManaged ~, GL_HOT
#define HOT_ENTRY_cuMemAllocPitch_v2 ~, GL_HOT
#define HOT_ENTRY_cuMemAllocHost_v2 ~, GL_HOT
#define HOT_ENTRY_cuMemHostAlloc ~, GL_HOT
#define HOT_ENTRY_cuMemFreeHost ~, GL_HOT
#define HOT_SECOND_(a, b, ...) b
#define HOT_PICK_(...) HOT_SECOND_(__VA_ARGS__, , )

/* The watched path, apart so that the unwatched one stays a tail call. */
#define GL_DRIVER_ENTRY(name, params, args)                                                        \
    typedef CUresult(*fn_##name##_t) params;                                                       \
    HOT_PICK_(HOT_ENTRY_##name)                                                                    \
    static __attribute__((noinline)) CUresult watched_##name(fn_##name##_t fn, GL_ARGS params)     \
    {                                                                                              \
        name##_params gl_p = {GL_ARGS args};                                                       \
        struct gl_driver_call gl_c;                                                                \
        gl_driver_enter(&gl_c, GL_DRIVER_##name, &gl_p);                                           \
        CUresult gl_rc_ = fn args;                                                                 \
        gl_driver_exit(&gl_c, &gl_p, gl_rc_);                                                      \
        return gl_rc_;                                                                             \
    }                                                                                              \
    HOT_PICK_(HOT_ENTRY_##name) static __attribute__((used, noinline)) CUresult hook_##name params \
    {                                                                                              \
        fn_##name##_t fn = (fn_##name##_t)gl_driver_function(GL_DRIVER_##name);                    \
        if (__builtin_expect(!fn, 0))                                                              \
            return NO_FUNCTION;                                                                    \
        if (!gl_driver_watching(GL_DRIVER_##name))                                                 \
            return fn args;                                                                        \
        return watched_##name(fn, GL_ARGS args);                                                   \
    }
#define GL_DRIVER_CONTROL(name, params, args)
#include "observe/driver_entries.def"
#undef GL_DRIVER_ENTRY
#undef GL_DRIVER_CONTROL

/* ---- hooks of the control entry points ---- */

/* The driver's function of entry point id (GL_DRIVER_x: pasted where the hook
 * is defined, before cuda.h's macros could rename the v1 entry points). */
#define REAL(id, params)                                                                           \
    typedef CUresult(*fn_t) params;                                                                \
    fn_t fn = (fn_t)gl_driver_function(id);                                                        \
    if (!fn)                                                                                       \
    return NO_FUNCTION

/* Defined by inject.c: what cuInit starts when the driver did not load the
 * runtime through CUDA_INJECTION64_PATH (another tool's injection holds it). */
int InitializeInjection(void);

static CUresult __attribute__((used)) hook_cuInit(unsigned int Flags)
{
    REAL(GL_DRIVER_cuInit, (unsigned int));
    CUresult rc = fn(Flags);
    if (rc == CUDA_SUCCESS)
        InitializeInjection(); /* returns at once when already started */
    return rc;
}

static void *substitute(void *fn);

static void substitute_proc(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (!pfn || !*pfn)
        return;
    void *hook = substitute(*pfn);
    if (hook != *pfn)
        *pfn = hook;
    else if (symbol && gl_driver_tracked_family(symbol))
        gl_driver_note_unknown(symbol, version, flags);
}

static CUresult __attribute__((used))
hook_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    REAL(GL_DRIVER_cuGetProcAddress, (const char *, void **, int, cuuint64_t));
    CUresult rc = fn(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS)
        substitute_proc(symbol, pfn, cudaVersion, flags);
    return rc;
}

static CUresult __attribute__((used))
hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *symbolStatus)
{
    REAL(GL_DRIVER_cuGetProcAddress_v2,
         (const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *));
    CUresult rc = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS)
        substitute_proc(symbol, pfn, cudaVersion, flags);
    return rc;
}

/* A context destroyed: its blocks go with it (after the driver agreed). */
#define CTX_DESTROY_HOOK(name)                                                                     \
    static CUresult __attribute__((used)) hook_##name(CUcontext ctx)                               \
    {                                                                                              \
        REAL(GL_DRIVER_##name, (CUcontext));                                                       \
        CUresult rc = fn(ctx);                                                                     \
        if (rc == CUDA_SUCCESS)                                                                    \
            gl_driver_context_destroyed((uintptr_t)ctx);                                           \
        return rc;                                                                                 \
    }
CTX_DESTROY_HOOK(cuCtxDestroy)
CTX_DESTROY_HOOK(cuCtxDestroy_v2)

/* A primary context reset (cudaDeviceReset), or released for the last time:
 * destroyed if it was active and no longer is. */
#define PRIMARY_HOOK(name)                                                                         \
    static CUresult __attribute__((used)) hook_##name(CUdevice dev)                                \
    {                                                                                              \
        REAL(GL_DRIVER_##name, (CUdevice));                                                        \
        if (!gl_driver_started())                                                                  \
            return fn(dev);                                                                        \
        uint64_t ctx = gl_driver_primary_context(dev);                                             \
        CUresult rc = fn(dev);                                                                     \
        if (rc == CUDA_SUCCESS && ctx && gl_driver_primary_context(dev) != ctx) {                  \
            gl_driver_primary_retained(dev, 0);                                                    \
            gl_driver_context_destroyed(ctx);                                                      \
        }                                                                                          \
        return rc;                                                                                 \
    }
PRIMARY_HOOK(cuDevicePrimaryCtxRelease)
PRIMARY_HOOK(cuDevicePrimaryCtxRelease_v2)
PRIMARY_HOOK(cuDevicePrimaryCtxReset)
PRIMARY_HOOK(cuDevicePrimaryCtxReset_v2)

/* A primary context retained: its handle, for its reset or last release. */
static CUresult __attribute__((used)) hook_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    REAL(GL_DRIVER_cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice));
    CUresult rc = fn(pctx, dev);
    if (rc == CUDA_SUCCESS && pctx)
        gl_driver_primary_retained(dev, (uintptr_t)*pctx);
    return rc;
}

static CUresult __attribute__((used)) hook_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    REAL(GL_DRIVER_cuStreamCreate, (CUstream *, unsigned int));
    CUresult rc = fn(phStream, Flags);
    if (rc == CUDA_SUCCESS && phStream)
        gl_driver_stream_created((uintptr_t)*phStream);
    return rc;
}

static CUresult __attribute__((used))
hook_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    REAL(GL_DRIVER_cuStreamCreateWithPriority, (CUstream *, unsigned int, int));
    CUresult rc = fn(phStream, flags, priority);
    if (rc == CUDA_SUCCESS && phStream)
        gl_driver_stream_created((uintptr_t)*phStream);
    return rc;
}

#define STREAM_DESTROY_HOOK(name)                                                                  \
    static CUresult __attribute__((used)) hook_##name(CUstream hStream)                            \
    {                                                                                              \
        REAL(GL_DRIVER_##name, (CUstream));                                                        \
        CUresult rc = fn(hStream);                                                                 \
        if (rc == CUDA_SUCCESS)                                                                    \
            gl_driver_stream_destroyed((uintptr_t)hStream);                                        \
        return rc;                                                                                 \
    }
STREAM_DESTROY_HOOK(cuStreamDestroy)
STREAM_DESTROY_HOOK(cuStreamDestroy_v2)

/* ---- exported under the driver's names ---- */

static void *const hooks[GL_DRIVER_NENTRIES] = {
#define GL_DRIVER_ENTRY(name, params, args) [GL_DRIVER_##name] = (void *)hook_##name,
#define GL_DRIVER_CONTROL(name, params, args) [GL_DRIVER_##name] = (void *)hook_##name,
#include "observe/driver_entries.def"
#undef GL_DRIVER_ENTRY
#undef GL_DRIVER_CONTROL
};

/* cuMemAlloc_v2 and the others: the hooks, under the names a program linked
 * with -lcuda binds to.  Stringized at the first level: cuda.h's macros
 * (cuMemAlloc -> cuMemAlloc_v2) must not rename the v1 entry points. */
#define GL_DRIVER_ENTRY(name, params, args)                                                        \
    __asm__(".globl " #name "\n.type " #name ", @function\n.set " #name ", hook_" #name "\n");
#define GL_DRIVER_CONTROL(name, params, args)                                                      \
    __asm__(".globl " #name "\n.type " #name ", @function\n.set " #name ", hook_" #name "\n");
#include "observe/driver_entries.def"
#undef GL_DRIVER_ENTRY
#undef GL_DRIVER_CONTROL

/* ---- lookups ---- */

/* The hook standing for a function of the driver's, or fn itself. */
static void *substitute(void *fn)
{
    int id = gl_driver_entry_of(fn);
    return id >= 0 ? hooks[id] : fn;
}

/* Whether p is one of the hooks (a lookup in the default scope finds the
 * exported ones first); its entry point in *id. */
static bool is_hook(const void *p, unsigned *id)
{
    for (unsigned i = 0; i < GL_DRIVER_NENTRIES; i++)
        if (hooks[i] == p) {
            *id = i;
            return true;
        }
    return false;
}

static inline bool driver_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u';
}

/* dlsym, for a library's handle, or RTLD_DEFAULT and a hooked name (the entry
 * below passes the rest on without a frame: those lookups are relative to
 * their caller). */
__attribute__((visibility("hidden"))) void *gl_driver_hooks_dlsym(void *handle, const char *name)
{
    bool cu = driver_name(name);
    if (cu)
        gl_driver_prepare();
    void *p = gl_driver_dlsym(handle, name); /* the last dl call: its dlerror stands */
    if (!p || !cu)
        return p;
    unsigned id;
    if (is_hook(p, &id))
        /* Found here, not in the driver: the driver's function if libcuda is
         * loaded and has it (then this hook stands for it), else nothing, as
         * without gpuleak. */
        return gl_driver_function(id) ? p : gl_driver_next_symbol(name); /* NULL, glibc's error */
    return substitute(p);
}

/* Whether the process's lookups reach the hooks: asked as a library of the
 * program would ask.  The first dlsym of the program's global scope (the main
 * program's handle searches it; gpuleak's own local scope must not count) is
 * asked for cuMemAlloc_v2 in libcuda, and must give the hook: gpuleak's dlsym
 * when it was preloaded, or another tool's preloaded wrapper that passes on
 * to it.  Not so when the driver loaded the runtime alone
 * (CUDA_INJECTION64_PATH, the preload dropped by the program or a launcher
 * between), or when a wrapper in front goes to libc's dlsym directly: the
 * CUDA runtime's lookups then never reach a hook.  Called inside cuInit,
 * where libcuda is loaded; one lookup, which another wrapper sees too. */
__attribute__((visibility("hidden"))) bool gl_driver_hooks_reachable(void)
{
    typedef void *(*dlsym_fn)(void *, const char *);
    dlsym_fn libc = (dlsym_fn)gl_driver_libc_dlsym();
    void *program = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    bool reachable = true; /* what cannot be asked: the launcher's preload is the rule */
    if (libc && program) {
        dlsym_fn first = (dlsym_fn)libc(program, "dlsym");
        __asm__ volatile("" ::: "memory"); /* not a tail call: libc reads the caller */
        if (!first || first == libc)
            reachable = false;
        else if (cuda) {
            unsigned id;
            void *fn = first(cuda, "cuMemAlloc_v2");
            reachable = !fn || is_hook(fn, &id); /* no such function: cannot tell */
        }
    }
    if (cuda)
        dlclose(cuda);
    if (program)
        dlclose(program);
    return reachable;
}

/* RTLD_DEFAULT: gpuleak's business only for the names it exports. */
__attribute__((visibility("hidden"))) int gl_driver_hooks_exported(const char *name)
{
    return driver_name(name) && gl_driver_entry_named(name) >= 0;
}

#if defined(__x86_64__)
/* dlsym(RTLD_NEXT, name) must find the symbol after its caller's object, and
 * dlsym(RTLD_DEFAULT, name) searches its caller's local scope too: glibc's
 * dlsym finds the caller by its return address.  So this entry jumps to the
 * next dlsym (gl_driver_next_dlsym) with the caller's return address still in
 * place, for RTLD_NEXT and for RTLD_DEFAULT but with a name gpuleak exports
 * (which the default scope finds in gpuleak first anyway); with no next
 * dlsym found, it returns NULL. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n"
        "    je 2f\n"
        "    testq %rdi, %rdi\n"
        "    jne gl_driver_hooks_dlsym\n"
        /* RTLD_DEFAULT: through gl_driver_hooks_dlsym for an exported name */
        "    pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    movq %rsi, %rdi\n"
        "    call gl_driver_hooks_exported\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    testl %eax, %eax\n"
        "    jne gl_driver_hooks_dlsym\n"
        "2:  pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    call gl_driver_next_dlsym\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    jmp *%rax\n"
        "1:  ret\n"
        ".size dlsym, .-dlsym\n");
#else
#error "the dlsym hook is written for x86-64"
#endif
