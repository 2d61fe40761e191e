/* SPDX-License-Identifier: MIT */
#include "check/owners.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

#include "common/search.h"
#include "common/sort.h"
#include "common/util.h"
#include "heap/callers.h"
#include "base/text_span.h"
#include "base/tool.h"

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

enum gl_owner gl_owners_of_path(const char *path)
{
    const char *b = base_name(path ? path : "");
    static const char *const tool[] = {"libgpuleak.", "libdw.so",     "libdw-",    "libelf.so",
                                       "libelf-",     "libunwind.so", "libunwind-"};
    /* libcudart-<hash>.so: the CUDA runtime as pip wheels vendor it (PyTorch's
     * cu11x builds), which modules.h already calls the runtime; libcuda-*:
     * the driver under a versioned file name, as modules.h and the driver
     * observer take it. */
    static const char *const cuda[] = {"libcuda.so",         "libcuda-",    "libcudart.so",
                                       "libcudart-",         "libcupti.so", "libnvidia-",
                                       "libcudadebugger.so", "libnvperf_"};
    static const char *const lib[] = {
        "libcublas",   "libcudnn", "libnccl",      "libcufft",    "libcurand",     "libcusparse",
        "libcusolver", "libnvrtc", "libnvJitLink", "libcutensor", "libnvToolsExt", "libnvtx",
        "libnvjpeg",   "libnpp",   "libcufile",    "libnvshmem",  "libnvblas",     "libcudla"};
    for (size_t i = 0; i < GL_ARRAY_SIZE(tool); i++)
        if (starts(b, tool[i]))
            return GL_OWNER_TOOL;
    for (size_t i = 0; i < GL_ARRAY_SIZE(cuda); i++)
        if (starts(b, cuda[i]))
            return GL_OWNER_CUDA;
    for (size_t i = 0; i < GL_ARRAY_SIZE(lib); i++)
        if (starts(b, lib[i]))
            return GL_OWNER_LIB;
    return GL_OWNER_APP;
}

int gl_owners_cudart_function(const char *f)
{
    if (!f)
        return 0;
    /* Internals of a static CUDA runtime (CUDA 13: libcudart_static_<hash>;
     * older: __cudart<N>, cudart::), and its API functions (cudaMalloc...). */
    if (starts(f, "libcudart_static_") || starts(f, "__cudart") || starts(f, "cudart::"))
        return 1;
    return starts(f, "cuda") && f[4] >= 'A' && f[4] <= 'Z';
}

#define BY_TEXT_START(a, b) ((a)->text_start < (b)->text_start)
GL_SORT_DEFINE(sort_modules, struct gl_owner_module, BY_TEXT_START)

struct collect {
    struct gl_owners *o;
    int failed;
};

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    void *nv = gl_tool_map(ncap * elem);
    if (!nv)
        return -1;
    if (*v) {
        memcpy(nv, *v, *cap * elem);
        gl_tool_unmap(*v, *cap * elem);
    }
    *v = nv;
    *cap = ncap;
    return 0;
}

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct collect *c = arg;
    struct gl_owners *o = c->o;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "(program)";
    if (strcmp(name, "linux-vdso.so.1") == 0)
        return 0;
    enum gl_owner owner = gl_owners_of_path(name);
    for (int i = 0; i < info->dlpi_phnum && owner == GL_OWNER_APP; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
        if (ph->p_flags & PF_W) {
            if (grow((void **)&o->roots, &o->roots_cap, o->nroots, sizeof *o->roots)) {
                c->failed = 1;
                return 1;
            }
            o->roots[o->nroots++] = (struct gl_segment){start & ~7ULL, end};
        }
    }
    uint64_t tlo, thi;
    if (gl_text_span(info, &tlo, &thi)) {
        if (grow((void **)&o->modules, &o->modules_cap, o->nmodules, sizeof *o->modules)) {
            c->failed = 1;
            return 1;
        }
        const char *b = base_name(name);
        o->modules[o->nmodules++] = (struct gl_owner_module){
            .text_start = tlo,
            .text_end = thi,
            .owner = owner,
            .has_streams = gl_owners_is_libc(name) || strncmp(b, "libstdc++.so", 12) == 0};
    }
    return 0;
}

bool gl_owners_is_libc(const char *path)
{
    const char *b = base_name(path ? path : "");
    return strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0;
}

const struct gl_owner_module *gl_owners_module_of(const struct gl_owners *o, uintptr_t ip)
{
    size_t i = GL_SEARCH_CONTAINING(o->modules, o->nmodules, text_start, text_end, ip);
    return i < o->nmodules ? &o->modules[i] : NULL;
}

enum gl_owner gl_owners_of_ip(const struct gl_owners *o, uintptr_t ip)
{
    const struct gl_owner_module *m = gl_owners_module_of(o, ip);
    return m ? m->owner : GL_OWNER_APP; /* JIT code, or unknown: the program's */
}

int gl_owners_load(struct gl_owners *o)
{
    memset(o, 0, sizeof *o);
    struct collect c = {o, 0};
    dl_iterate_phdr(on_object, &c);
    sort_modules(o->modules, o->nmodules);
    GL_ASSERT(GL_SEARCH_IS_SORTED(o->modules, o->nmodules, text_start),
              "modules sorted by text_start");
    if (c.failed) {
        gl_owners_free(o);
        return -1;
    }
    return 0;
}

void gl_owners_probe_cudart(struct gl_owners *o, uintptr_t ip, gl_function_name_fn name, void *arg)
{
    if (!ip || !name)
        return;
    /* ip is a return address: the call is just before it. */
    struct gl_owner_module *m = (struct gl_owner_module *)gl_owners_module_of(o, ip - 1);
    if (m && m->owner == GL_OWNER_APP && !m->has_cudart &&
        gl_owners_cudart_function(name(ip - 1, arg)))
        m->has_cudart = 1;
}

/* The exported functions that allocate a stream's buffer: the C library's
 * stdio (a FILE's first read or write; fopencookie's and the like; wide
 * streams' default), and libstdc++'s std::filebuf (std::ofstream and
 * std::ifstream, whose `new char[]` is attributed to the code that said
 * `new`).  Exported, so that dladdr names them without the symbolizer.  A
 * wide FILE's own buffer comes from _IO_wfile_doallocate, which glibc does
 * not export: it is not told, and is scanned as before. */
static const char *const stream_buffer_makers[] = {
    "_IO_file_doallocate",
    "_IO_default_doallocate",
    "_IO_wdefault_doallocate",
    "_ZNSt13basic_filebufIcSt11char_traitsIcEE27_M_allocate_internal_bufferEv",
    "_ZNSt13basic_filebufIwSt11char_traitsIwEE27_M_allocate_internal_bufferEv",
};

/* Whether the code at ip (inside a caller) allocates a stream's buffer. */
static bool stream_buffer_caller(uintptr_t ip)
{
    Dl_info di;
    if (!dladdr((void *)ip, &di) || !di.dli_sname)
        return false;
    for (size_t i = 0; i < GL_ARRAY_SIZE(stream_buffer_makers); i++)
        if (strcmp(di.dli_sname, stream_buffer_makers[i]) == 0)
            return true;
    return false;
}

int gl_owners_classify_callers(struct gl_owners *o, gl_function_name_fn name, void *arg)
{
    size_t cbytes = (size_t)GL_CALLERS_MAX + 1;
    if (!o->callers)
        o->callers = gl_tool_map(cbytes);
    if (!o->callers)
        return -1;
    for (uint32_t id = 1; id <= GL_CALLERS_MAX; id++) {
        uintptr_t ip = gl_callers_ip(id);
        if (!ip)
            continue;
        const struct gl_owner_module *m = gl_owners_module_of(o, ip - 1);
        enum gl_owner w = m ? m->owner : GL_OWNER_APP;
        if (m && m->has_cudart && name && gl_owners_cudart_function(name(ip - 1, arg)))
            w = GL_OWNER_CUDA;
        else if (m && m->has_streams && stream_buffer_caller(ip - 1))
            w = GL_OWNER_TEXT;
        o->callers[id] = (uint8_t)w;
    }
    o->callers[0] = GL_OWNER_APP;
    return 0;
}

void gl_owners_free(struct gl_owners *o)
{
    gl_tool_unmap(o->modules, o->modules_cap * sizeof *o->modules);
    gl_tool_unmap(o->roots, o->roots_cap * sizeof *o->roots);
    gl_tool_unmap(o->callers, (size_t)GL_CALLERS_MAX + 1);
    memset(o, 0, sizeof *o);
}
