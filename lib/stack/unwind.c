/* SPDX-License-Identifier: MIT */
#include "stack/unwind.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <stdio.h>

#include "common/clock.h"

/* The names behind libunwind's macros (unw_step is _ULx86_64_step, ...). */
#define SYM_STR2(x) #x
#define SYM_STR(x) SYM_STR2(x)

static struct {
    void *handle;
    int (*backtrace)(void **, int);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    unw_addr_space_t *local_addr_space;
    int (*getcontext)(unw_context_t *);
    int (*init_local)(unw_cursor_t *, unw_context_t *);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*get_save_loc)(unw_cursor_t *, int, unw_save_loc_t *);
    int (*is_signal_frame)(unw_cursor_t *);
} lu;

bool gl_unwind_loaded(void) { return lu.backtrace != NULL; }

bool gl_unwind_load(char *err, size_t errlen)
{
    if (lu.backtrace)
        return true;
    /* Found beside libgpuleak first (its $ORIGIN rpath), then where ld.so looks. */
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot load libunwind.so.8 (%s): install the package libunwind8",
                 dlerror());
        return false;
    }
    *(void **)&lu.backtrace = dlsym(h, "unw_backtrace");
    *(void **)&lu.set_caching_policy = dlsym(h, SYM_STR(unw_set_caching_policy));
    lu.local_addr_space = dlsym(h, SYM_STR(unw_local_addr_space));
    *(void **)&lu.getcontext = dlsym(h, SYM_STR(unw_tdep_getcontext));
    *(void **)&lu.init_local = dlsym(h, SYM_STR(unw_init_local));
    *(void **)&lu.step = dlsym(h, SYM_STR(unw_step));
    *(void **)&lu.get_reg = dlsym(h, SYM_STR(unw_get_reg));
    *(void **)&lu.get_save_loc = dlsym(h, SYM_STR(unw_get_save_loc));
    *(void **)&lu.is_signal_frame = dlsym(h, SYM_STR(unw_is_signal_frame));
    if (!lu.backtrace || !lu.set_caching_policy || !lu.local_addr_space) {
        snprintf(err, errlen, "libunwind.so.8 lacks unw_backtrace or its caching policy");
        lu.backtrace = NULL;
        return false;
    }
    lu.handle = h;
    /* A per-thread cache: repeated walks through the same code are cheap and
     * take no lock.  The first walk also loads libunwind's tables. */
    lu.set_caching_policy(*lu.local_addr_space, UNW_CACHE_PER_THREAD);
    void *warm[4];
    lu.backtrace(warm, 4);
    return true;
}

int gl_unwind_backtrace(uintptr_t *frames, int max)
{
    return lu.backtrace ? lu.backtrace((void **)frames, max) : 0;
}

/* Walk the calling stack with unw_step: each caller's ip, and where asked its
 * stack pointer and frame pointer (f), or the time the step took (ns).
 * Inlined, so that the context taken is its caller's and no frame of its own
 * shows. */
static inline __attribute__((always_inline)) int walk(uintptr_t *ips, struct gl_unwind_frame *f,
                                                      uint64_t *ns, int max)
{
    if (!lu.getcontext || !lu.init_local || !lu.step || !lu.get_reg)
        return 0;
    unw_context_t uc;
    unw_cursor_t c;
    lu.getcontext(&uc);
    if (lu.init_local(&c, &uc) < 0)
        return 0;
    int n = 0;
    while (n < max) {
        uint64_t t0 = ns ? gl_clock_ns() : 0;
        int r = lu.step(&c);
        if (ns)
            ns[n] = gl_clock_ns() - t0;
        if (r <= 0)
            break;
        unw_word_t ip, sp, fp;
        lu.get_reg(&c, UNW_REG_IP, &ip);
        if (ips)
            ips[n] = ip;
        if (f) {
            unw_save_loc_t at;
            lu.get_reg(&c, UNW_REG_SP, &sp);
            lu.get_reg(&c, UNW_X86_64_RBP, &fp);
            /* Without the query, every frame might be one: say so. */
            int sig = lu.is_signal_frame ? lu.is_signal_frame(&c) > 0 : 1;
            f[n] = (struct gl_unwind_frame){ip, sp, fp, 0, sig};
            if (lu.get_save_loc && lu.get_save_loc(&c, UNW_X86_64_RBP, &at) == 0 &&
                at.type == UNW_SLT_MEMORY)
                f[n].fp_at = at.u.addr;
        }
        n++;
    }
    return n;
}

int gl_unwind_walk_frames(struct gl_unwind_frame *frames, int max)
{
    return walk(NULL, frames, NULL, max);
}

int gl_unwind_step_profile(uintptr_t *ips, uint64_t *ns, int max)
{
    return walk(ips, NULL, ns, max);
}
