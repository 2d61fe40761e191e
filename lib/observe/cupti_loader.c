/* SPDX-License-Identifier: MIT */
#include "observe/cupti_loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#ifndef GL_CUDA_DIR
#define GL_CUDA_DIR "/usr/local/cuda"
#endif

/* CUPTI's library carries the CUDA major version: 13 for CUDA 13. */
#ifndef GL_CUPTI_SONAME
#define GL_CUPTI_SONAME "libcupti.so.13"
#endif

static bool try_open(struct gl_cupti *c, const char *path, int flags)
{
    void *h = dlopen(path, flags);
    if (!h)
        return false;
    c->handle = h;
    snprintf(c->path, sizeof c->path, "%s", path);
    /* Report where the loaded copy really is. */
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
        snprintf(c->path, sizeof c->path, "%s", lm->l_name);
    return true;
}

/* The directory of the loaded CUDA runtime, if any: pip's nvidia-* wheels keep
 * libcupti beside libcudart. */
static int find_cudart_dir(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    if (base && strncmp(base + 1, "libcudart.so", 12) == 0) {
        snprintf(arg, 4096, "%.*s", (int)(base - name), name);
        return 1;
    }
    return 0;
}

static bool open_cupti(struct gl_cupti *c)
{
    const char *env = getenv("GPULEAK_CUPTI_PATH");
    if (env && *env)
        return try_open(c, env, RTLD_NOW | RTLD_LOCAL);
    /* One CUPTI per process: reuse a copy the program (PyTorch's profiler, say) loaded. */
    if (try_open(c, GL_CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD) ||
        try_open(c, "libcupti.so", RTLD_NOW | RTLD_NOLOAD))
        return true;
    char dir[4096] = "", path[4200];
    if (dl_iterate_phdr(find_cudart_dir, dir) && dir[0]) {
        snprintf(path, sizeof path, "%s/%s", dir, GL_CUPTI_SONAME);
        if (try_open(c, path, RTLD_NOW | RTLD_LOCAL))
            return true;
    }
    static const char *const subdirs[] = {
        "lib64",
        "targets/x86_64-linux/lib",
        "extras/CUPTI/lib64",
        "lib",
    };
    static const char *const roots[] = {GL_CUDA_DIR, "/usr/local/cuda"};
    for (size_t r = 0; r < GL_ARRAY_SIZE(roots); r++)
        for (size_t s = 0; s < GL_ARRAY_SIZE(subdirs); s++) {
            snprintf(path, sizeof path, "%s/%s/%s", roots[r], subdirs[s], GL_CUPTI_SONAME);
            if (try_open(c, path, RTLD_NOW | RTLD_LOCAL))
                return true;
        }
    /* Versioned toolkits without the /usr/local/cuda link: /usr/local/cuda-13.0 */
    DIR *d = opendir("/usr/local");
    if (d) {
        struct dirent *e;
        bool found = false;
        while (!found && (e = readdir(d)))
            if (strncmp(e->d_name, "cuda-", 5) == 0)
                for (size_t s = 0; s < GL_ARRAY_SIZE(subdirs) && !found; s++) {
                    snprintf(path, sizeof path, "/usr/local/%s/%s/%s", e->d_name, subdirs[s],
                             GL_CUPTI_SONAME);
                    found = try_open(c, path, RTLD_NOW | RTLD_LOCAL);
                }
        closedir(d);
        if (found)
            return true;
    }
    return try_open(c, GL_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL) ||
           try_open(c, "libcupti.so", RTLD_NOW | RTLD_LOCAL);
}

bool gl_cupti_loader_load(struct gl_cupti *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (!open_cupti(c)) {
        const char *why = dlerror();
        snprintf(err, errlen,
                 "cannot load CUPTI (%s): %s; set GPULEAK_CUPTI_PATH to the library's path",
                 GL_CUPTI_SONAME, why ? why : "not found");
        return false;
    }
#define SYM(field, name)                                                                           \
    do {                                                                                           \
        *(void **)&c->field = dlsym(c->handle, name);                                              \
    } while (0)
    SYM(subscribe, "cuptiSubscribe");
    SYM(subscribe_v2, "cuptiSubscribe_v2");
    SYM(unsubscribe, "cuptiUnsubscribe");
    SYM(enable_callback, "cuptiEnableCallback");
    SYM(get_result_string, "cuptiGetResultString");
    SYM(get_device_id, "cuptiGetDeviceId");
#undef SYM
    if (!c->subscribe || !c->enable_callback) {
        snprintf(err, errlen, "%s is not a usable CUPTI library (cuptiSubscribe missing)", c->path);
        return false;
    }
    return true;
}

const char *gl_cupti_loader_result_string(const struct gl_cupti *c, CUptiResult r)
{
    const char *s = NULL;
    if (c->get_result_string && c->get_result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}
