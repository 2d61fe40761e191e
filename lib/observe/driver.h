/* SPDX-License-Identifier: MIT */
/* The driver observer: hooks at the driver's entry points, a producer of the
 * same events as CUPTI's callbacks (observe/call.h turns both into events),
 * without CUPTI: no serialized callbacks, and CUPTI stays free for the
 * program's own profilers (--intercept, doc/design.md "Two observers").
 *
 * How calls reach the hooks (observe/driver_hooks.c holds them):
 *   - the program or a library asks for an entry point by name - dlsym on
 *     libcuda's handle or the default scope, cuGetProcAddress (_v2, any
 *     version, per-thread-stream flags), which the CUDA runtime's
 *     cudaGetDriverEntryPoint(ByVersion) and its own table use - and gets the
 *     hook standing for the function the driver gave;
 *   - a program linked with -lcuda binds to the hooks' exported cu* symbols.
 * A function is recognized by its address: whatever the name, version or
 * flags asked for, the driver's answer is compared with the functions of
 * libcuda that are hooked (driver_entries.def), so a hook never stands for a
 * variant it does not know; such an answer goes back untouched, and is
 * counted when it belongs to a tracked family (-v names them).
 *
 * A hook reads the current context, runs the driver's function between
 * gl_driver_enter and gl_driver_exit, and returns the driver's result: the
 * program sees what it would see without gpuleak.  Nothing here calls the
 * driver but cuCtxGetCurrent and, once per context or stream, the device
 * queries: no hook runs inside a driver callback. */
#ifndef GPULEAK_DRIVER_H
#define GPULEAK_DRIVER_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "observe/call.h"
#include "observe/crosscheck.h"

/* The hooked entry points, in driver_entries.def's order. */
enum gl_driver_entry {
#define GL_DRIVER_ENTRY(name, params, args) GL_DRIVER_##name,
#define GL_DRIVER_CONTROL(name, params, args) GL_DRIVER_##name,
#include "observe/driver_entries.def"
#undef GL_DRIVER_ENTRY
#undef GL_DRIVER_CONTROL
    GL_DRIVER_NENTRIES
};

/* The entry point's name ("cuMemAlloc_v2"). */
const char *gl_driver_name(unsigned id);

/* The driver's function for an entry point: resolved in libcuda on first
 * need; NULL while libcuda is not loaded or if it lacks the function. */
extern void *_Atomic gl_driver_functions[GL_DRIVER_NENTRIES];
void *gl_driver_resolve(unsigned id);
static inline void *gl_driver_function(unsigned id)
{
    void *fn = atomic_load_explicit(&gl_driver_functions[id], memory_order_acquire);
    return fn ? fn : gl_driver_resolve(id);
}

/* Look every entry point up in libcuda once it is loaded (a no-op after, or
 * while it is not): done before a lookup of the program's, so that the
 * program's is the last dl call, whose error state the program reads. */
void gl_driver_prepare(void);
/* The entry point whose driver function is fn, or -1 (linear, in memory:
 * asked when an entry point is looked up, never per call). */
int gl_driver_entry_of(const void *fn);
/* The entry point of that name ("cuMemAlloc_v2"), or -1. */
int gl_driver_entry_named(const char *name);
/* dlsym(RTLD_NEXT, name) asked from gpuleak's own code, through the next
 * dlsym (never the process's first, which may be another tool's wrapper
 * preloaded before gpuleak's, asking from its own place): the definitions
 * gpuleak's interposers forward to; for a name found nowhere after gpuleak,
 * NULL with glibc's own dlerror(). */
void *gl_driver_next_symbol(const char *name);

/* Whether a hook makes events now: the observer is started and the
 * dispatcher's gate open, and the entry point is watched (copies and sets
 * only with --check-api-ranges; a capture's forks and joins only while a
 * capture is in progress, a router armed).  False: the hook only calls the
 * driver.  (Under GPULEAK_BENCH=spin:NS a watched hook only waits, and makes
 * none.) */
enum { GL_DRIVER_UNWATCHED, GL_DRIVER_WATCHED, GL_DRIVER_WATCHED_ARMED };
extern _Atomic unsigned char gl_driver_watched[GL_DRIVER_NENTRIES];
static inline bool gl_driver_watching(unsigned id)
{
    unsigned w = atomic_load_explicit(&gl_driver_watched[id], memory_order_relaxed);
    return __builtin_expect(w == GL_DRIVER_WATCHED, 1) ||
           (w == GL_DRIVER_WATCHED_ARMED && gl_dispatch_armed());
}

/* Start observing (the runtime, when CUDA starts): what is watched, and
 * whether CUPTI cross-checks (observe/crosscheck.h).  Contexts' devices are
 * then asked of the driver (cuCtxGetDevice_v2), outside any callback. */
void gl_driver_start(bool check_ranges, bool cross_check);
/* Whether gl_driver_start ran.  (Hooks make no events while the dispatcher's
 * gate is closed: a fork child, once the exit report is written.) */
bool gl_driver_started(void);

/* Whether the program's lookups of the driver reach the hooks at all: false
 * when the driver loaded the runtime without the launcher's preload
 * (CUDA_INJECTION64_PATH alone), where only CUPTI can see the calls.  Defined
 * by observe/driver_hooks.c, in the injected library only. */
bool gl_driver_hooks_reachable(void);

/* A tracked call in progress in its hook. */
struct gl_driver_call {
    uint32_t cbid;
    uint64_t token;
    struct gl_call_site site;
    struct gl_crosscheck_call check;
};
void gl_driver_enter(struct gl_driver_call *c, unsigned id, const void *params);
void gl_driver_exit(struct gl_driver_call *c, const void *params, CUresult rc);

/* Control entry points the hooks report (observe/driver_hooks.c). */
void gl_driver_context_destroyed(uint64_t ctx); /* cuCtxDestroy, a primary context reset */
void gl_driver_stream_created(uint64_t stream); /* on the current context */
void gl_driver_stream_destroyed(uint64_t stream);
/* A primary context retained through its hook: remembered for its device. */
void gl_driver_primary_retained(int dev, uint64_t ctx);
/* The primary context of dev, if it is active; 0 if not.  Its handle is the
 * one retained through the hook; only one retained before the hooks were in
 * place is asked of the driver (a retain and a release, which count it). */
uint64_t gl_driver_primary_context(int dev);

/* cuGetProcAddress gave fn for symbol, of a family gpuleak tracks, and no hook
 * stands for it (a version or variant newer than gpuleak): remembered. */
void gl_driver_note_unknown(const char *symbol, int version, uint64_t flags);
/* The i-th such entry point ("cuMemAlloc v13020 flags 1"), or NULL past the last. */
const char *gl_driver_unknown(unsigned i);
/* Whether symbol (without its _v2/_ptsz/_ptds suffixes) names a tracked family. */
bool gl_driver_tracked_family(const char *symbol);

/* libc's own dlsym, never a wrapper's; NULL if it cannot be found. */
void *gl_driver_libc_dlsym(void);
/* The dlsym after this library's: another tool's wrapper preloaded after
 * gpuleak (which then sees every lookup, as without gpuleak), else libc's;
 * NULL if none can be found. */
void *gl_driver_next_dlsym(void);
/* A lookup through it: the driver's own functions, never the hooks standing
 * for them (the hooks' own lookups, the leak check's driver calls). */
void *gl_driver_dlsym(void *handle, const char *name);

#endif
