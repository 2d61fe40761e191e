/* SPDX-License-Identifier: MIT */
#include "symbol/symbolize.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbol/unloaded_objects.h"

/* Report-time code: runs at exit or at a checkpoint, never inside a CUPTI callback,
 * so it may use malloc and libdw freely.
 *
 * libdw is loaded with dlopen(RTLD_LOCAL) when a report needs it: most processes
 * gpuleak is preloaded into never report, and none should carry libdw and libelf
 * in their global symbol scope. */

static struct {
    __typeof__(&dwfl_begin) begin;
    __typeof__(&dwfl_end) end;
    __typeof__(&dwfl_linux_proc_find_elf) linux_proc_find_elf;
    __typeof__(&dwfl_standard_find_debuginfo) standard_find_debuginfo;
    __typeof__(&dwfl_report_begin) report_begin;
    __typeof__(&dwfl_linux_proc_report) linux_proc_report;
    __typeof__(&dwfl_report_end) report_end;
    __typeof__(&dwfl_report_begin_add) report_begin_add;
    __typeof__(&dwfl_report_elf) report_elf;
    __typeof__(&dwfl_addrmodule) addrmodule;
    __typeof__(&dwfl_module_info) module_info;
    __typeof__(&dwfl_module_addrinfo) module_addrinfo;
    __typeof__(&dwfl_module_getsrc) module_getsrc;
    __typeof__(&dwfl_lineinfo) lineinfo;
} dw;

static bool load_libdw(void)
{
    if (dw.begin)
        return true;
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return false;
#define DW(field, name) *(void **)&dw.field = dlsym(h, #name)
    DW(begin, dwfl_begin);
    DW(end, dwfl_end);
    DW(linux_proc_find_elf, dwfl_linux_proc_find_elf);
    DW(standard_find_debuginfo, dwfl_standard_find_debuginfo);
    DW(report_begin, dwfl_report_begin);
    DW(linux_proc_report, dwfl_linux_proc_report);
    DW(report_end, dwfl_report_end);
    DW(report_begin_add, dwfl_report_begin_add);
    DW(report_elf, dwfl_report_elf);
    DW(addrmodule, dwfl_addrmodule);
    DW(module_info, dwfl_module_info);
    DW(module_addrinfo, dwfl_module_addrinfo);
    DW(module_getsrc, dwfl_module_getsrc);
    DW(lineinfo, dwfl_lineinfo);
#undef DW
    if (!dw.begin || !dw.end || !dw.linux_proc_find_elf || !dw.standard_find_debuginfo ||
        !dw.report_begin || !dw.linux_proc_report || !dw.report_end || !dw.addrmodule ||
        !dw.module_info || !dw.module_addrinfo || !dw.module_getsrc || !dw.lineinfo) {
        dw.begin = NULL;
        return false;
    }
    return true;
}

struct cache_entry {
    uintptr_t ip;
    bool used;
    bool is_return_address; /* part of the key: it changes the address looked up */
    struct gl_frame frame;
};

struct gl_symbolizer {
    Dwfl *dwfl;
    Dwfl_Callbacks callbacks;
    char *debuginfo_path;
    struct cache_entry *cache;
    size_t cap, count;
};

/* Whether a reported module covers addr (dwfl_addrmodule may answer with the
 * nearest module below an address that none covers). */
/* Whether an object's code is mapped at addr now.  A device file mapped there
 * (the CUDA driver maps /dev/nvidiactl and /dev/nvidia* into ranges an unload
 * freed) holds no code: it does not count. */
static bool occupied(Dwfl *dwfl, uintptr_t addr)
{
    Dwfl_Module *m = dw.addrmodule(dwfl, addr);
    Dwarf_Addr lo = 0, hi = 0;
    const char *name = m ? dw.module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL) : NULL;
    return name && lo <= addr && addr < hi && strncmp(name, "/dev/", 5) != 0;
}

/* Objects the program dlclose'd (unloaded_objects.h): reported from their
 * files at their old addresses, so that frames captured while they were
 * loaded still resolve.  One whose range something else occupies now is left
 * out: the addresses name the new occupant (the later load is the likelier
 * owner of recent stacks). */
static void report_unloaded(Dwfl *dwfl)
{
    size_t n = gl_unloaded_objects_count();
    if (!n || !dw.report_begin_add || !dw.report_elf)
        return;
    bool any = false, added[GL_UNLOADED_MAX] = {false};
    for (size_t i = n; i-- > 0;) { /* newest first: a later unload at the same place wins */
        const struct gl_unloaded_object *o = gl_unloaded_objects_get(i);
        if (occupied(dwfl, o->start) || occupied(dwfl, o->end - 1))
            continue;
        bool overlaps = false;
        for (size_t j = i + 1; j < n && !overlaps; j++) {
            const struct gl_unloaded_object *q = gl_unloaded_objects_get(j);
            overlaps = added[j] && o->start < q->end && q->start < o->end;
        }
        if (overlaps)
            continue;
        added[i] = true;
        if (!any) {
            dw.report_begin_add(dwfl);
            any = true;
        }
        dw.report_elf(dwfl, o->path, o->path, -1, o->bias, true);
    }
    if (any)
        dw.report_end(dwfl, NULL, NULL);
}

static const struct gl_unloaded_object *saved_objects, *named_objects;
static size_t nsaved_objects, nnamed_objects;

/* Bumped whenever the objects symbolized change by hand: every symbolizer
 * kept by gl_symbolize_fresh is stale then. */
static unsigned long long objects_set;

void gl_symbolize_set_object_names(const struct gl_unloaded_object *objs, size_t n)
{
    objects_set++;
    named_objects = objs;
    nnamed_objects = objs ? n : 0;
}

/* The name of an object the symbolizer cannot read that held pc. */
static const char *object_named(uintptr_t pc)
{
    for (size_t i = nnamed_objects; i-- > 0;)
        if (named_objects[i].start <= pc && pc < named_objects[i].end)
            return named_objects[i].path;
    return NULL;
}

void gl_symbolize_set_objects(const struct gl_unloaded_object *objs, size_t n)
{
    saved_objects = objs;
    nsaved_objects = objs ? n : 0;
    objects_set++;
}

/* Report the saved objects (a log's modules) in place of the process's. */
static bool report_saved(Dwfl *dwfl)
{
    if (!dw.report_elf)
        return false;
    dw.report_begin(dwfl);
    for (size_t i = 0; i < nsaved_objects; i++)
        dw.report_elf(dwfl, saved_objects[i].path, saved_objects[i].path, -1,
                      saved_objects[i].bias, true);
    dw.report_end(dwfl, NULL, NULL);
    return true;
}

struct gl_symbolizer *gl_symbolize_open(void)
{
    if (!load_libdw())
        return NULL;
    struct gl_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->callbacks.find_elf = dw.linux_proc_find_elf;
    s->callbacks.find_debuginfo = dw.standard_find_debuginfo;
    s->callbacks.debuginfo_path = &s->debuginfo_path;
    s->dwfl = dw.begin(&s->callbacks);
    if (!s->dwfl) {
        free(s);
        return NULL;
    }
    if (saved_objects) {
        if (!report_saved(s->dwfl)) {
            dw.end(s->dwfl);
            free(s);
            return NULL;
        }
    } else {
        dw.report_begin(s->dwfl);
        if (dw.linux_proc_report(s->dwfl, getpid()) != 0) {
            dw.end(s->dwfl);
            free(s);
            return NULL;
        }
        dw.report_end(s->dwfl, NULL, NULL);
        report_unloaded(s->dwfl);
    }
    s->cap = 1024;
    s->cache = calloc(s->cap, sizeof *s->cache);
    if (!s->cache) {
        dw.end(s->dwfl);
        free(s);
        return NULL;
    }
    return s;
}

static void free_frame(struct gl_frame *f)
{
    free((char *)f->function);
    free((char *)f->mangled);
    free((char *)f->file);
    free((char *)f->object);
}

void gl_symbolize_close(struct gl_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++)
        if (s->cache[i].used)
            free_frame(&s->cache[i].frame);
    free(s->cache);
    dw.end(s->dwfl);
    free(s);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void lookup(struct gl_symbolizer *s, uintptr_t ip, bool is_return_address,
                   struct gl_frame *out)
{
    memset(out, 0, sizeof *out);
    out->ip = ip;
    /* A return address points after the call: its call instruction is at ip - 1,
     * and for a call that ends a function ip itself may already be the next one. */
    Dwarf_Addr pc = is_return_address && ip > 0 ? ip - 1 : ip;
    Dwfl_Module *mod = dw.addrmodule(s->dwfl, pc);
    if (!mod) {
        out->object = dup_or_null(object_named(pc));
        return;
    }
    const char *mainfile = NULL;
    const char *modname = dw.module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, NULL);
    out->object = dup_or_null(mainfile ? mainfile : modname);

    GElf_Off off;
    GElf_Sym sym;
    const char *name = dw.module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
    if (name) {
        /* Whole, however long (C++ templates run to thousands of characters). */
        char *demangled = name[0] == '_' && name[1] == 'Z'
                              ? cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI)
                              : NULL;
        out->function = demangled ? demangled : dup_or_null(name);
        if (demangled)
            out->mangled = dup_or_null(name); /* suppressions may name it so */
    }
    Dwfl_Line *line = dw.module_getsrc(mod, pc);
    if (line) {
        int lineno = 0;
        const char *file = dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        if (file && lineno > 0) {
            out->file = dup_or_null(file);
            out->line = lineno;
        }
    }
}

static bool grow(struct gl_symbolizer *s)
{
    size_t ncap = s->cap * 2;
    struct cache_entry *n = calloc(ncap, sizeof *n);
    if (!n)
        return false;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->cache[i].used)
            continue;
        size_t j = (s->cache[i].ip * 0x9e3779b97f4a7c15ULL >> 20) & (ncap - 1);
        while (n[j].used)
            j = (j + 1) & (ncap - 1);
        n[j] = s->cache[i];
    }
    free(s->cache);
    s->cache = n;
    s->cap = ncap;
    return true;
}

void gl_symbolize(struct gl_symbolizer *s, uintptr_t ip, bool is_return_address,
                  struct gl_frame *out)
{
    if (s->count * 2 >= s->cap && !grow(s)) {
        lookup(s, ip, is_return_address, out); /* uncached; strings leak until exit */
        return;
    }
    size_t j = (ip * 0x9e3779b97f4a7c15ULL >> 20) & (s->cap - 1);
    while (s->cache[j].used) {
        if (s->cache[j].ip == ip && s->cache[j].is_return_address == is_return_address) {
            *out = s->cache[j].frame;
            return;
        }
        j = (j + 1) & (s->cap - 1);
    }
    s->cache[j].used = true;
    s->cache[j].ip = ip;
    s->cache[j].is_return_address = is_return_address;
    lookup(s, ip, is_return_address, &s->cache[j].frame);
    s->count++;
    *out = s->cache[j].frame;
}

/* glibc counts objects loaded (dlpi_adds) and unloaded (dlpi_subs): together
 * they change whenever the set of loaded objects does. */
static int objects_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds * 1000003ULL + info->dlpi_subs;
    return 1;
}

struct gl_symbolizer *gl_symbolize_fresh(struct gl_symbolizer **sym, unsigned long long *objects)
{
    unsigned long long sig = 0;
    dl_iterate_phdr(objects_cb, &sig);
    sig += objects_set << 40;
    if (*sym && sig != *objects) {
        gl_symbolize_close(*sym);
        *sym = NULL;
    }
    if (!*sym) {
        *sym = gl_symbolize_open();
        *objects = sig;
    }
    return *sym;
}
