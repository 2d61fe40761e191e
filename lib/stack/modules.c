/* SPDX-License-Identifier: MIT */
#include "stack/modules.h"

#include "common/util.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define MAX_RANGES 32

struct range {
    uintptr_t start, end;
    enum gl_modules_role role;
};

struct range_set {
    unsigned n;
    uintptr_t lo, hi; /* bounds of all ranges: most frames fall outside at once */
    struct range r[MAX_RANGES];
};

/* Double-buffered so that readers inside callbacks never see a half-built set. */
static struct range_set sets[2];
static _Atomic int current;
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static GL_READ_MOSTLY _Atomic unsigned generation = 1;

GL_HOT unsigned gl_modules_generation(void)
{
    return atomic_load_explicit(&generation, memory_order_relaxed);
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

enum gl_modules_role gl_modules_role_for_path(const char *path)
{
    if (!path)
        return GL_MOD_OTHER;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (has_prefix(base, "libgpuleak"))
        return GL_MOD_SELF;
    if (has_prefix(base, "libcupti"))
        return GL_MOD_CUPTI;
    if (has_prefix(base, "libcudart.so") || has_prefix(base, "libcudart-"))
        return GL_MOD_CUDART;
    if (has_prefix(base, "libcuda.so") || has_prefix(base, "libcuda-"))
        return GL_MOD_DRIVER;
    return GL_MOD_OTHER;
}

struct scan {
    struct range_set *set;
    uintptr_t self_addr;
};

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *sc = arg;
    enum gl_modules_role role = gl_modules_role_for_path(info->dlpi_name);
    /* gpuleak may be loaded under any name (a renamed copy, a test binary): find it
     * by an address known to be inside it. */
    for (int i = 0; i < info->dlpi_phnum && role == GL_MOD_OTHER; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && sc->self_addr >= s && sc->self_addr < s + ph->p_memsz &&
            info->dlpi_name && info->dlpi_name[0])
            role = GL_MOD_SELF;
    }
    if (role == GL_MOD_OTHER)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (sc->set->n < MAX_RANGES) {
            struct range *r = &sc->set->r[sc->set->n++];
            r->start = info->dlpi_addr + ph->p_vaddr;
            r->end = r->start + ph->p_memsz;
            r->role = role;
        }
    }
    return 0;
}

static void set_bounds(struct range_set *set)
{
    set->lo = UINTPTR_MAX;
    set->hi = 0;
    for (unsigned i = 0; i < set->n; i++) {
        if (set->r[i].start < set->lo)
            set->lo = set->r[i].start;
        if (set->r[i].end > set->hi)
            set->hi = set->r[i].end;
    }
}

void gl_modules_refresh(void)
{
    pthread_mutex_lock(&refresh_lock);
    int next = 1 - atomic_load(&current);
    struct range_set *set = &sets[next];
    set->n = 0;
    struct scan sc = {set, (uintptr_t)&gl_modules_refresh};
    dl_iterate_phdr(scan_object, &sc);
    set_bounds(set);
    atomic_store_explicit(&current, next, memory_order_release);
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&refresh_lock);
}

GL_HOT enum gl_modules_role gl_modules_role(uintptr_t addr)
{
    const struct range_set *set = &sets[atomic_load_explicit(&current, memory_order_acquire)];
    if (addr < set->lo || addr >= set->hi)
        return GL_MOD_OTHER;
    for (unsigned i = 0; i < set->n; i++)
        if (addr >= set->r[i].start && addr < set->r[i].end)
            return set->r[i].role;
    return GL_MOD_OTHER;
}

void gl_modules_add_range(uintptr_t start, uintptr_t end, enum gl_modules_role role)
{
    pthread_mutex_lock(&refresh_lock);
    struct range_set *set = &sets[atomic_load(&current)];
    if (set->n < MAX_RANGES)
        set->r[set->n++] = (struct range){start, end, role};
    set_bounds(set);
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&refresh_lock);
}

void gl_modules_clear(void)
{
    pthread_mutex_lock(&refresh_lock);
    sets[0].n = sets[1].n = 0;
    set_bounds(&sets[0]);
    set_bounds(&sets[1]);
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&refresh_lock);
}
