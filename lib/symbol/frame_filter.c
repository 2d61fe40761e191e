/* SPDX-License-Identifier: MIT */
#include "symbol/frame_filter.h"

#include <string.h>

#include "python/py_frames.h"
#include "python/py_symbols.h"
#include "stack/stack_capture.h"
#include "stack/stack_depot.h"

static bool starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Internal functions of a statically linked CUDA runtime: CUDA 13 names them
 * libcudart_static_<hash>, older ones __cudart<N>. */
static bool cudart_internal(const struct gl_frame *f)
{
    return starts(f->function, "libcudart_static_") || starts(f->function, "__cudart") ||
           starts(f->function, "cudart::");
}

/* Where the program proper begins: frames below it are the C library's start-up
 * code, which Valgrind hides too (--show-below-main=no). */
static bool below_main_boundary(const struct gl_frame *f)
{
    return !f->python && f->function && (strcmp(f->function, "main") == 0);
}

static bool below_main_frame(const struct gl_frame *f)
{
    return !f->python && f->function &&
           (strcmp(f->function, "__libc_start_main") == 0 ||
            strcmp(f->function, "__libc_start_call_main") == 0 ||
            strcmp(f->function, "_start") == 0);
}

/* A CUDA runtime API function: cudaMalloc, cudaMallocAsync... */
static bool runtime_api(const struct gl_frame *f)
{
    return starts(f->function, "cuda") && f->function[4] >= 'A' && f->function[4] <= 'Z';
}

unsigned gl_frame_filter(const uintptr_t *ips, unsigned n, gl_frame_lookup_fn lookup, void *arg,
                         bool show_below_main, struct gl_frame *out, unsigned max)
{
    if (n == 0 || max == 0)
        return 0;
    struct gl_frame first;
    enum gl_modules_role role;
    lookup(ips[0], 0, &first, &role, arg);

    unsigned start = 0;
    if (role == GL_MOD_DRIVER && !gl_stack_capture_raw_mode) {
        /* Step over a static CUDA runtime's internals to the API the program called;
         * if there is none, the program called the driver: keep its entry point. */
        unsigned j = 1;
        struct gl_frame f = {0};
        while (j < n) {
            enum gl_modules_role r;
            lookup(ips[j], j, &f, &r, arg);
            if (!cudart_internal(&f))
                break;
            j++;
        }
        if (j < n && runtime_api(&f))
            start = j;
    }

    unsigned k = 0, native = 0, python = 0;
    for (unsigned i = start; i < n && (native < max || python < max); i++) {
        if (i == 0) {
            out[k] = first;
        } else {
            enum gl_modules_role r;
            lookup(ips[i], i, &out[k], &r, arg);
        }
        if (!show_below_main && below_main_frame(&out[k]))
            break;
        /* main ends the stack whether or not the native budget has room to
         * show it: what follows it is start-up code, or Python groups that
         * the native walk did not reach (mixed_stack.h). */
        bool end_here = !show_below_main && below_main_boundary(&out[k]);
        unsigned *count = out[k].python ? &python : &native;
        if (*count < max) {
            (*count)++;
            k++;
        } /* else this kind's budget is spent; the other's may not be */
        if (end_here)
            break;
    }
    return k;
}

/* The runtime's lookup: a Python frame from the copies of its code objects,
 * a native one from libdw (sym NULL: the address alone), its object's role
 * from the loaded-module table. */
static void frame_lookup(uintptr_t ip, unsigned index, struct gl_frame *out,
                         enum gl_modules_role *role, void *arg)
{
    (void)index;
    struct gl_symbolizer *sym = arg;
    if (gl_py_frames_is_frame(ip)) {
        *role = GL_MOD_OTHER;
        gl_py_symbols_symbolize(ip, out);
        return;
    }
    *role = gl_modules_role(ip);
    if (sym) {
        gl_symbolize(sym, ip, true, out);
    } else {
        memset(out, 0, sizeof *out);
        out->ip = ip;
    }
}

unsigned gl_frame_filter_stack(struct gl_symbolizer *sym, uint32_t stack, bool show_below_main,
                               struct gl_frame *out, unsigned max)
{
    unsigned n;
    const uintptr_t *ips = gl_stack_depot_frames(stack, &n);
    return ips ? gl_frame_filter(ips, n, frame_lookup, sym, show_below_main, out, max) : 0;
}
