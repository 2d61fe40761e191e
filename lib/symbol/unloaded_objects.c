/* SPDX-License-Identifier: MIT */
#include "symbol/unloaded_objects.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/tool.h"

static struct gl_unloaded_object objects[GL_UNLOADED_MAX];
static atomic_size_t count; /* published after the entry is written */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct find {
    uintptr_t bias;
    const char *name;
    bool found;
    uintptr_t start, end;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find *f = arg;
    if (info->dlpi_addr != f->bias || !info->dlpi_name || strcmp(info->dlpi_name, f->name) != 0)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (s < lo)
            lo = s;
        if (s + ph->p_memsz > hi)
            hi = s + ph->p_memsz;
    }
    f->found = lo < hi;
    f->start = lo;
    f->end = hi;
    return 1;
}

void gl_unloaded_objects_begin(void *handle, struct gl_unloading *u)
{
    memset(u, 0, sizeof *u);
    struct link_map *lm = NULL;
    if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
        lm->l_name[0] != '/')
        return; /* the main program, or a name without a file to read later */
    struct find f = {.bias = lm->l_addr, .name = lm->l_name};
    dl_iterate_phdr(find_object, &f);
    if (!f.found)
        return;
    size_t len = strlen(lm->l_name);
    if (len >= sizeof u->path)
        return;
    memcpy(u->path, lm->l_name, len + 1);
    u->found = true;
    u->obj = (struct gl_unloaded_object){
        .bias = f.bias, .start = f.start, .end = f.end, .path = u->path};
}

void gl_unloaded_objects_end(const struct gl_unloading *u)
{
    if (!u->found)
        return;
    /* Still loaded (another handle, or a dependent object, holds it)? */
    struct find f = {.bias = u->obj.bias, .name = u->path};
    dl_iterate_phdr(find_object, &f);
    if (!f.found)
        gl_unloaded_objects_add(&u->obj);
}

void gl_unloaded_objects_add(const struct gl_unloaded_object *o)
{
    size_t len = strlen(o->path) + 1;
    char *path = gl_tool_alloc(len);
    if (!path)
        return;
    memcpy(path, o->path, len);
    pthread_mutex_lock(&lock);
    size_t n = atomic_load(&count);
    if (n < GL_UNLOADED_MAX) {
        objects[n] = *o;
        objects[n].path = path;
        atomic_store(&count, n + 1);
        path = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (path)
        gl_tool_free(path, len);
}

size_t gl_unloaded_objects_count(void) { return atomic_load(&count); }

const struct gl_unloaded_object *gl_unloaded_objects_get(size_t i)
{
    return i < atomic_load(&count) ? &objects[i] : NULL;
}

void gl_unloaded_objects_clear(void)
{
    pthread_mutex_lock(&lock);
    atomic_store(&count, 0);
    pthread_mutex_unlock(&lock);
}
