/* SPDX-License-Identifier: MIT */
#include "check/framework.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gl_uthash.h"
#include "python/py_code.h"
#include "python/py_frames.h"
#include "stack/stack_depot.h"
#include "base/tool.h"

static const char *const names[GL_FW_N] = {
    [GL_FW_PYTORCH] = "PyTorch", [GL_FW_CUPY] = "CuPy", [GL_FW_JAX] = "JAX"};

const char *gl_framework_name(enum gl_framework f)
{
    return f > GL_FW_NONE && f < GL_FW_N ? names[f] : "?";
}

enum gl_framework gl_framework_parse(const char *name)
{
    for (int f = GL_FW_NONE + 1; name && f < GL_FW_N; f++)
        if (strcmp(names[f], name) == 0)
            return (enum gl_framework)f;
    return GL_FW_NONE;
}

/* What was read at the last checkpoint taken (shown), and what was read for
 * the coming one (kept apart until it is taken, so that a report between the
 * two never shows numbers stamped with a checkpoint they were not read at). */
static struct gl_framework_usage usage[GL_FW_N][GL_FW_MAX_DEVICES];
static bool usage_set[GL_FW_N][GL_FW_MAX_DEVICES];
static struct gl_framework_usage pending[GL_FW_N][GL_FW_MAX_DEVICES];
static bool usage_pending[GL_FW_N][GL_FW_MAX_DEVICES];

int gl_framework_set_usage(enum gl_framework f, int device, uint64_t in_use, uint64_t reserved)
{
    if (f <= GL_FW_NONE || f >= GL_FW_N || device < 0 || device >= GL_FW_MAX_DEVICES)
        return -1;
    struct gl_framework_usage *u = &pending[f][device];
    u->framework = f;
    u->device = device;
    u->in_use = in_use;
    u->reserved = reserved;
    usage_pending[f][device] = true;
    return 0;
}

void gl_framework_checkpoint_taken(uint64_t ordinal, const char *name)
{
    for (int f = 0; f < GL_FW_N; f++)
        for (int d = 0; d < GL_FW_MAX_DEVICES; d++)
            if (usage_pending[f][d]) {
                usage_pending[f][d] = false;
                usage_set[f][d] = true;
                usage[f][d] = pending[f][d];
                usage[f][d].checkpoint = ordinal;
                snprintf(usage[f][d].checkpoint_name, sizeof usage[f][d].checkpoint_name, "%s",
                         name);
            }
}

size_t gl_framework_usages(struct gl_framework_usage *out, size_t max)
{
    size_t n = 0;
    for (int f = 0; f < GL_FW_N; f++)
        for (int d = 0; d < GL_FW_MAX_DEVICES; d++)
            if (usage_set[f][d]) {
                if (n < max)
                    out[n] = usage[f][d];
                n++;
            }
    return n;
}

/* Frames the framework names by text, made code ids once each. */
struct frame_entry {
    UT_hash_handle hh;
    uint32_t code;
    char text[]; /* "FILE:LINE:FUNCTION" */
};
static struct frame_entry *frames_seen;

static uint32_t frame_code(const char *line, size_t len)
{
    struct frame_entry *e = NULL;
    HASH_FIND(hh, frames_seen, line, len, e);
    if (e)
        return e->code;
    /* FILE may hold ':' itself (never in practice on Linux, but a path may):
     * LINE and FUNCTION are the last two fields... except FUNCTION may hold
     * none, so split at the first ':' followed by digits and ':'. */
    char buf[1024];
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, line, len);
    buf[len] = '\0';
    char *file = buf, *p = buf, *function = NULL;
    long lineno = 0;
    while ((p = strchr(p, ':')) != NULL) {
        char *end;
        lineno = strtol(p + 1, &end, 10);
        if (end != p + 1 && *end == ':') {
            *p = '\0';
            function = end + 1;
            break;
        }
        p++;
    }
    if (!function)
        return 0;
    uint32_t code = gl_py_code_synthetic(file, function, (int)lineno);
    e = gl_tool_alloc(sizeof *e + len + 1);
    if (!e)
        return code;
    e->code = code;
    memcpy(e->text, line, len);
    e->text[len] = '\0';
    HASH_ADD_KEYPTR(hh, frames_seen, e->text, len, e);
    return code;
}

static struct gl_framework_site *sites;
static size_t nsites, sites_cap, taken_n, taken_cap;
static struct gl_framework_site *taken;

int gl_framework_add_site(enum gl_framework f, const char *text, uint64_t bytes, uint64_t blocks)
{
    uintptr_t frames[GL_DEPOT_MAX_FRAMES];
    unsigned n = 0;
    for (const char *p = text; p && *p && n < GL_DEPOT_MAX_FRAMES / 2;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        uint32_t code = len ? frame_code(p, len) : 0;
        if (code)
            frames[n++] = gl_py_frames_make(code, 0);
        p = nl ? nl + 1 : NULL;
    }
    uint32_t stack = n ? gl_stack_depot_intern(frames, n) : 0;
    if (!stack || f <= GL_FW_NONE || f >= GL_FW_N)
        return -1;
    if (nsites == sites_cap) {
        size_t cap = sites_cap ? 2 * sites_cap : 64;
        struct gl_framework_site *grown = gl_tool_alloc(cap * sizeof *grown);
        if (!grown)
            return -1;
        if (sites) {
            memcpy(grown, sites, nsites * sizeof *sites);
            gl_tool_free(sites, sites_cap * sizeof *sites);
        }
        sites = grown;
        sites_cap = cap;
    }
    sites[nsites++] = (struct gl_framework_site){stack, f, bytes, blocks};
    return 0;
}

static int by_stack(const void *a, const void *b)
{
    const struct gl_framework_site *x = a, *y = b;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return (x->framework > y->framework) - (x->framework < y->framework);
}

/* Sites whose records differ only past the frames a stack keeps, or in
 * frames that could not be read, are one stack: one site, their sums. */
static size_t merge_same_stacks(struct gl_framework_site *v, size_t n)
{
    if (n < 2)
        return n;
    qsort(v, n, sizeof *v, by_stack);
    size_t out = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].stack == v[out].stack && v[i].framework == v[out].framework) {
            v[out].bytes += v[i].bytes;
            v[out].blocks += v[i].blocks;
        } else {
            v[++out] = v[i];
        }
    }
    return out + 1;
}

const struct gl_framework_site *gl_framework_take_sites(size_t *n)
{
    if (taken)
        gl_tool_free(taken, taken_cap * sizeof *taken);
    taken = NULL;
    taken_n = taken_cap = 0;
    if (nsites) {
        taken = gl_tool_alloc(nsites * sizeof *taken);
        if (taken) {
            taken_cap = nsites;
            memcpy(taken, sites, nsites * sizeof *sites);
            taken_n = merge_same_stacks(taken, nsites);
        }
    }
    nsites = 0;
    *n = taken_n;
    return taken;
}

void gl_framework_reset(void)
{
    memset(usage_set, 0, sizeof usage_set);
    memset(usage_pending, 0, sizeof usage_pending);
    nsites = 0;
}
