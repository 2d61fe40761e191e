/* SPDX-License-Identifier: MIT */
/* gpuleak.h: the client API of gpuleak, for programs and test suites.
 *
 * Header-only: a program that includes it needs no library at link time.  Under
 * gpuleak (the launcher preloads its runtime), each call reaches the runtime;
 * otherwise every call is a cheap no-op that returns the documented "not
 * running" value.  Valgrind's client requests and LeakSanitizer's
 * __lsan_do_recoverable_leak_check are the models.
 *
 * How the calls find the runtime: see gpuleak_api_table() below.
 *
 * Compiles warning-free as C99 and later, C++11 and later, and in .cu files. */
#ifndef GPULEAK_H
#define GPULEAK_H

#include <stddef.h>
#include <stdlib.h>   /* getenv */
#include <sys/auxv.h> /* getauxval */

#define GPULEAK_VERSION_MAJOR 0
#define GPULEAK_VERSION_MINOR 1

#ifdef __cplusplus
extern "C" {
#endif

/* Which loss records a leak check reports (Valgrind's DO_LEAK_CHECK,
 * DO_NEW_LEAK_CHECK, DO_ADDED_LEAK_CHECK, DO_CHANGED_LEAK_CHECK). */
enum gpuleak_check_mode {
    GPULEAK_CHECK_FULL = 0, /* every outstanding block, as at exit */
    GPULEAK_CHECK_NEW,      /* records that did not exist at the reference point */
    GPULEAK_CHECK_ADDED,    /* records that grew (or are new) since the reference point */
    GPULEAK_CHECK_CHANGED,  /* records that grew or shrank since the reference point */
};

/* A check mode may be combined (|) with GPULEAK_KINDS(bits): the leak kinds,
 * 1u << GPULEAK_DEFINITE and so on, that this check prints and counts as
 * errors, instead of --show-leak-kinds and --errors-for-leak-kinds. */
#define GPULEAK_KINDS(bits) ((int)((((unsigned)(bits)) & 0x1fu) << 8 | 0x4000u))

/* Leak kinds, indexes of struct gpuleak_counts. */
enum gpuleak_kind {
    GPULEAK_DEFINITE = 0,
    GPULEAK_INDIRECT,
    GPULEAK_POSSIBLE,
    GPULEAK_REACHABLE,
    GPULEAK_CACHED,
    GPULEAK_SUPPRESSED,
    GPULEAK_NKINDS
};

struct gpuleak_counts {
    unsigned long long bytes[GPULEAK_NKINDS];
    unsigned long long blocks[GPULEAK_NKINDS];
};

/* ---- how the calls reach the runtime ----
 * The runtime publishes a table of entry points in the environment variable
 * GPULEAK_CLIENT_API ("IMAGE:0xADDRESS"), where IMAGE (8 hex digits) is drawn
 * from the 16 random bytes the kernel gives each program image at exec
 * (getauxval(AT_RANDOM), gpuleak_image_id()): a fork child shares them, and the
 * table, with its parent; a program exec'ed from a process under gpuleak has
 * new ones, so a variable it inherited without the runtime names nothing and
 * is never followed.  Without gpuleak every call is a no-op.  This works for
 * any executable (PIE or not) and any shared library, with nothing to link;
 * weak symbol references would silently resolve to nothing in non-PIE
 * executables.  The runtime also exports the functions below under their
 * names, for dlsym and Python's ctypes. */
#define GPULEAK_API_ENV "GPULEAK_CLIENT_API"
#define GPULEAK_API_MAGIC 0x47504c4bu /* "GPLK" */
#define GPULEAK_API_VERSION 3u        /* members are only ever added, at the end */

/* ---- profiled regions (version 3): see gpuleak_profile_begin() below ----
 * The output structs below may grow: members are only ever appended, never
 * moved, resized or removed.  The caller passes its own sizeof of each (the
 * inline functions do), which is also the stride of its devices[] array; the
 * runtime writes at most that many bytes of each, the members it knows, and
 * zeros over the rest of the caller's struct.  So a program built against an
 * older header reads what it knows from a newer runtime, and one built
 * against a newer header reads 0 in the members an older runtime lacks. */
#define GPULEAK_PROFILE_SITES 10 /* allocation sites at the peak, per device */

/* An allocation site at a device's peak: the bytes and blocks it had live
 * then. */
struct gpuleak_profile_site {
    unsigned long long bytes, blocks;
    unsigned stack; /* its stack's id: gpuleak_profile_frames() names its frames */
    unsigned reserved_;
};

/* One device (or host memory) over a region, in bytes of the allocations the
 * GPU MEMORY SUMMARY counts (every kind but pool sub-allocations). */
struct gpuleak_profile_device {
    /* CUDA ordinal; -1: host memory (pinned, registered); -2: ordinal 32 or
     * above, or unknown. */
    int device;
    unsigned flags; /* GPULEAK_PROFILE_* below */
    unsigned long long live_at_open, live_at_close;
    /* The most bytes live at once while it was open (>= live_at_open), the
     * allocation that reached it (its number, as reports print "allocation
     * #N"; 0: the peak is live_at_open) and when, in nanoseconds after the
     * region began. */
    unsigned long long peak, peak_seq, peak_ns;
    /* Bytes allocated and freed while it was open, and how many times. */
    unsigned long long allocated, freed, allocs, frees;
    unsigned nsites; /* entries of sites[] filled */
    unsigned reserved_;
    struct gpuleak_profile_site sites[GPULEAK_PROFILE_SITES]; /* biggest first */
};
/* The sites are not known exactly: they do not add up to the peak (more events
 * after the peak than the region remembers, or another thread allocating or
 * freeing while it began or ended), or none were asked for. */
#define GPULEAK_PROFILE_SITES_INEXACT 0x1u

/* The region as a whole. */
struct gpuleak_profile {
    unsigned long long duration_ns;
    /* Of the allocations and frees it counted, those made by threads other
     * than the one that began it. */
    unsigned long long other_thread_events;
    unsigned tid; /* the thread that began it (kernel thread id) */
    int ndevices; /* devices with memory live or events: may exceed the array given */
};

struct gpuleak_api {
    unsigned magic;   /* GPULEAK_API_MAGIC */
    unsigned version; /* GPULEAK_API_VERSION of the runtime */
    int (*running)(void);
    int (*checkpoint)(const char *name);
    long (*leak_check)(int mode, const char *since, char *buf, size_t buflen);
    int (*count_leaks)(const char *since, struct gpuleak_counts *out);
    int (*ignore)(const void *ptr);
    int (*tracking)(int delta);
    int (*pool)(int op, const void *pool, const void *addr, size_t size, const char *name);
    /* Version 2: a caching allocator's own view, handed over before a
     * checkpoint (the Python module does it for PyTorch and CuPy).  usage:
     * bytes its tensors use of those it reserves on a device.  site: one
     * allocation site of its record, frames "FILE:LINE:FUNCTION" lines,
     * innermost first, and the bytes and tensors live there now.
     * growth_checkpoints: --growth-checkpoints (0: off). */
    int (*framework_usage)(const char *framework, int device, unsigned long long in_use,
                           unsigned long long reserved);
    int (*framework_site)(const char *framework, const char *frames, unsigned long long bytes,
                          unsigned long long tensors);
    int (*growth_checkpoints)(void);
    /* Version 3: profiled regions (gpuleak_profile_begin and the calls after it). */
    int (*profile_begin)(const char *name);
    /* out_size, device_size: the caller's sizeof of each struct (devices[]'s
     * stride); max_sites: sites per device wanted (0: none, and none computed). */
    int (*profile_end)(int region, struct gpuleak_profile *out, size_t out_size,
                       struct gpuleak_profile_device *devices, size_t device_size, int max_devices,
                       int max_sites);
    long (*profile_frames)(unsigned stack, char *buf, size_t buflen);
};

/* This program image's id: 32 bits mixed from its AT_RANDOM bytes (a one-way
 * summary: the bytes themselves also seed the stack protector). */
static inline unsigned gpuleak_image_id(void)
{
    const unsigned char *r = (const unsigned char *)getauxval(25 /* AT_RANDOM */);
    unsigned long long a = 0, b = 0, x;
    int i;
    if (!r)
        return 0;
    for (i = 7; i >= 0; i--) {
        a = a << 8 | r[i];
        b = b << 8 | r[i + 8];
    }
    x = a ^ (b * 0x9e3779b97f4a7c15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (unsigned)(x >> 32);
}

/* The table a GPULEAK_CLIENT_API value names, if it names this program image. */
static inline const struct gpuleak_api *gpuleak_api_parse(const char *s)
{
    unsigned long long image = 0, addr = 0;
    int i, d;
    if (!s)
        return NULL;
    for (i = 0; i < 8; i++, s++) {
        d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
        if (d < 0)
            return NULL;
        image = image << 4 | (unsigned)d;
    }
    if (image != gpuleak_image_id() || s[0] != ':' || s[1] != '0' || s[2] != 'x' || !s[3])
        return NULL;
    for (s += 3; *s; s++) {
        d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
        if (d < 0 || addr >> 60)
            return NULL;
        addr = addr << 4 | (unsigned)d;
    }
    const struct gpuleak_api *t = (const struct gpuleak_api *)(size_t)addr;
    return t && t->magic == GPULEAK_API_MAGIC && t->version >= 1 ? t : NULL;
}

/* The runtime's table, or NULL when not running under gpuleak.  Found once per
 * translation unit, then a load and a compare per call.  Not finding it is not
 * remembered (the runtime's constructor may run after a library's that calls
 * in): without gpuleak each call costs a getenv. */
static inline const struct gpuleak_api *gpuleak_api_table(void)
{
    static const struct gpuleak_api *table;
    const struct gpuleak_api *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    if (t)
        return t;
    t = gpuleak_api_parse(getenv(GPULEAK_API_ENV));
    if (t)
        __atomic_store_n(&table, t, __ATOMIC_RELEASE);
    return t;
}

/* 1 if this process runs under gpuleak: its GPU memory is tracked, or will be
 * once it initializes CUDA.  0 otherwise, and also when tracking cannot work
 * (CUPTI missing or taken by another tool, the exit report already written). */
static inline int gpuleak_running(void)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->running() : 0;
}

/* Remember this moment under a name (1 to 63 characters; a name given again
 * moves its checkpoint, and forgets the checks made since it): later checks
 * with since set to that name look only at the blocks allocated after it.  A
 * mark, not a check: it costs a few nanoseconds whatever the live blocks.
 * Returns 0, or -1 when not running under gpuleak or the name is empty or too
 * long. */
static inline int gpuleak_checkpoint(const char *name)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->checkpoint(name) : -1;
}

/* Leak check now (mode: an enum gpuleak_check_mode, perhaps | GPULEAK_KINDS),
 * through the same classification and suppressions as the exit
 * report, printed in its style (to stderr or --log-file) as Valgrind prints
 * VALGRIND_DO_LEAK_CHECK: a title line, the loss records of the kinds
 * --show-leak-kinds shows, and LEAK SUMMARY.
 *   GPULEAK_CHECK_FULL: every outstanding block; with since, only the blocks
 *     allocated after that checkpoint ("did this test leak?").
 *   GPULEAK_CHECK_NEW / _ADDED / _CHANGED: the records that are new / grew /
 *     changed compared with the last check of the same scope (every block when
 *     since is NULL, or the blocks allocated after checkpoint since), each with
 *     its delta: "10 (+10) bytes in 1 (+1) blocks are definitely lost in new
 *     loss record 3 of 5".  The first check of a scope compares with nothing.
 * Every check becomes the last check of its scope.  Each check scans the
 * program's memory for pointers to the blocks (stopping its other threads
 * for the scan): a block pointed to is still reachable, not lost.
 * Returns the number of errors among the records printed (records of the kinds
 * in --errors-for-leak-kinds, unsuppressed), or -1 when not running under
 * gpuleak, since names no checkpoint, or mode is unknown (one line in the log
 * says which). */
static inline long gpuleak_leak_check(int mode, const char *since)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->leak_check(mode, since, NULL, 0) : -1;
}

/* The same check, its report written into buf instead, for assertion messages:
 * the bare lines, without the "==PID==" prefix, cut to fit and NUL-terminated. */
static inline long gpuleak_leak_check_to(int mode, const char *since, char *buf, size_t buflen)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    if (buf && buflen)
        buf[0] = '\0';
    return t ? t->leak_check(mode, since, buf, buflen) : -1;
}

/* Bytes and blocks per leak kind of the outstanding blocks (those allocated
 * after checkpoint since, or all when since is NULL), classified and suppressed
 * as in a check, without printing.  Blocks the program asked never to report
 * are not counted.  Returns 0, or -1 (and zeros) when not running under gpuleak
 * or since names no checkpoint. */
static inline int gpuleak_count_leaks(const char *since, struct gpuleak_counts *out)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    int i;
    for (i = 0; i < GPULEAK_NKINDS; i++)
        out->bytes[i] = out->blocks[i] = 0;
    return t ? t->count_leaks(since, out) : -1;
}

/* Never report the block allocated at ptr (its start address; else a pool
 * sub-allocation starting there).  It still counts as in use.  Returns 0, or -1
 * if no such block is tracked (or not running under gpuleak). */
static inline int gpuleak_ignore(const void *ptr)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->ignore(ptr) : -1;
}

/* Allocations the calling thread makes from now until the matching
 * gpuleak_enable() are never reported (as LeakSanitizer's __lsan_disable): they
 * are still recorded, so that their frees match.  Calls nest.  Both return the
 * thread's depth after the call (0: reporting again), or -1 when not running
 * under gpuleak or on an enable without a disable. */
static inline int gpuleak_disable(void)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->tracking(+1) : -1;
}

static inline int gpuleak_enable(void)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->tracking(-1) : -1;
}

/* ---- custom pools (Valgrind's mempool client requests) ----
 * A program that carves its own sub-allocations out of a big block declares
 * them: each live sub-allocation is reported with the stack that made it, and
 * the rest of the pool's block is reported as cached.  pool is the start of a
 * block gpuleak tracks (from cudaMalloc, say); a pool made of several blocks
 * declares each.  Sub-allocations are not GPU allocations: they leave the
 * allocation counters alone.  Freeing the pool's block forgets them.  All
 * return 0, or -1 when not tracking or the arguments name nothing gpuleak
 * knows (one line in the log says what). */
enum { GPULEAK_POOL_CREATE, GPULEAK_POOL_ALLOC, GPULEAK_POOL_FREE, GPULEAK_POOL_DESTROY };

static inline int gpuleak_pool_create(const void *pool, const char *name)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->pool(GPULEAK_POOL_CREATE, pool, NULL, 0, name) : -1;
}

static inline int gpuleak_pool_alloc(const void *pool, const void *addr, size_t size)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->pool(GPULEAK_POOL_ALLOC, pool, addr, size, NULL) : -1;
}

static inline int gpuleak_pool_free(const void *pool, const void *addr)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->pool(GPULEAK_POOL_FREE, pool, addr, 0, NULL) : -1;
}

/* Forget the pool and every sub-allocation still in it. */
static inline int gpuleak_pool_destroy(const void *pool)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t ? t->pool(GPULEAK_POOL_DESTROY, pool, NULL, 0, NULL) : -1;
}

/* ---- profiled regions (as GPUMemoryProfiler's profile_context, but exact) ----
 * What GPU memory did between gpuleak_profile_begin() and gpuleak_profile_end(),
 * per device, from gpuleak's own record of every allocation and free (no
 * polling, no reset of any counter): the bytes live at both ends, the bytes
 * allocated and freed and how many times, the peak of the live bytes while it
 * was open with the allocation that reached it and when, and the allocation
 * sites that held the most at that peak.
 *
 * GPU memory belongs to the process: a region counts every thread's
 * allocations and frees while it is open (other_thread_events says how many
 * were not its opener's).  Regions nest and overlap, on one thread or several,
 * up to 64 open at once; one may end on another thread than began it.  Begun
 * and ended while no other thread allocates or frees, a region is exact to the
 * byte.  An event of another thread racing with the begin may count in
 * live_at_open and in the changes both, or in neither; one racing with the end
 * counts in the changes and in live_at_close, or in neither: live_at_close is
 * always live_at_open + allocated - freed (but never below 0), and never above
 * the peak.  While no region is open, profiling costs the program nothing but
 * a branch per allocation and free; while one is, a few stores each. */

/* Begin a region (name: for gpuleak's messages, NULL allowed).  Returns its id
 * (>= 0), for gpuleak_profile_end(); -1 when not running under gpuleak or 64
 * regions are open already (one line in the log says so). */
static inline int gpuleak_profile_begin(const char *name)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    return t && t->version >= 3 ? t->profile_begin(name) : -1;
}

/* End region and fill *out, and devices[] with up to max_devices devices that
 * had memory live at its beginning or events (devices in order, then host
 * memory), each with up to max_sites (at most GPULEAK_PROFILE_SITES) of its
 * top sites at its peak.  out->ndevices says how many there were.  Finding
 * the sites walks every live block: max_sites 0 (or no devices asked for)
 * skips that, and sets GPULEAK_PROFILE_SITES_INEXACT.  out may be NULL.
 * Returns the number of entries filled, or -1 (and zeros) when not running
 * under gpuleak, when it cannot track any more (its start failed, a fork
 * child, after the exit report), or region names no open region (ended
 * already; a line in the log).  Whatever it returns, the region is ended. */
static inline int gpuleak_profile_end_sites(int region, struct gpuleak_profile *out,
                                            struct gpuleak_profile_device *devices, int max_devices,
                                            int max_sites)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    if (out) {
        unsigned char *b = (unsigned char *)out;
        size_t i;
        for (i = 0; i < sizeof *out; i++)
            b[i] = 0;
    }
    return t && t->version >= 3 ? t->profile_end(region, out, sizeof *out, devices, sizeof *devices,
                                                 max_devices, max_sites)
                                : -1;
}

/* The same, with every site (GPULEAK_PROFILE_SITES per device). */
static inline int gpuleak_profile_end(int region, struct gpuleak_profile *out,
                                      struct gpuleak_profile_device *devices, int max_devices)
{
    return gpuleak_profile_end_sites(region, out, devices, max_devices, GPULEAK_PROFILE_SITES);
}

/* The frames of a site's stack (gpuleak_profile_site.stack) as reports show
 * them, one "FILE:LINE:FUNCTION" line each, innermost first (FILE is the
 * object when there is no line information, LINE then 0; FUNCTION "???" when
 * unknown), cut to fit buf and NUL-terminated.  Symbolizes: call it after the
 * region, not in a hot loop.  Returns the length of the whole text (as
 * snprintf), or -1 (buf emptied) when not running under gpuleak or stack is
 * 0. */
static inline long gpuleak_profile_frames(unsigned stack, char *buf, size_t buflen)
{
    const struct gpuleak_api *t = gpuleak_api_table();
    if (buf && buflen)
        buf[0] = '\0';
    return t && t->version >= 3 ? t->profile_frames(stack, buf, buflen) : -1;
}

#ifdef __cplusplus
}
#endif

#endif
