/* SPDX-License-Identifier: MIT */
#include "track/errors.h"

#include <string.h>

#include "base/gl_uthash.h"
#include "base/spin.h"
#include "base/tool.h"

gl_error_sink_fn gl_errors_sink;
uint32_t (*gl_errors_capture_stack)(void);
bool (*gl_errors_device_memory)(int device, uint64_t *free_bytes, uint64_t *total_bytes);

/* Valgrind keeps 1000 error contexts; later new ones are counted, not shown. */
#define MAX_CONTEXTS 1000

struct ctx_entry {
    uint64_t key; /* kind, detail, stack */
    size_t index;
    UT_hash_handle hh;
};

static struct {
    gl_spinlock lock;
    struct gl_error_context *v; /* MAX_CONTEXTS, tool-mapped on the first error */
    struct ctx_entry *entries;  /* MAX_CONTEXTS, the hash's items */
    struct ctx_entry *by_key;
    size_t n;
    uint64_t overflow; /* errors of contexts beyond MAX_CONTEXTS (never suppressed: */
    uint64_t overflow_by_kind[GL_ERR_NKINDS]; /* no sink saw them), and per kind */
} st;

/* ---- contexts ---- */

void gl_errors_report(struct gl_api_error *e)
{
    if (!e->stack && gl_errors_capture_stack)
        e->stack = gl_errors_capture_stack();
    uint64_t key = (uint64_t)e->kind << 56 | (uint64_t)e->detail << 48 | e->stack;
    gl_spin_lock(&st.lock);
    if (!st.v) {
        st.v = gl_tool_map(MAX_CONTEXTS * sizeof *st.v);
        st.entries = gl_tool_map(MAX_CONTEXTS * sizeof *st.entries);
    }
    struct ctx_entry *c = NULL;
    HASH_FIND(hh, st.by_key, &key, sizeof key, c);
    if (c) {
        st.v[c->index].count++;
        gl_spin_unlock(&st.lock);
        return;
    }
    if (!st.v || !st.entries || st.n >= MAX_CONTEXTS) {
        bool first_overflow = st.overflow++ == 0;
        if (e->kind < GL_ERR_NKINDS)
            st.overflow_by_kind[e->kind]++;
        gl_spin_unlock(&st.lock);
        if (first_overflow && gl_errors_sink)
            gl_errors_sink(NULL); /* "more than 1000 different errors" */
        return;
    }
    size_t i = st.n++;
    c = &st.entries[i];
    c->key = key;
    c->index = i;
    HASH_ADD(hh, st.by_key, key, sizeof key, c);
    st.v[i].first = *e;
    st.v[i].count = 1;
    st.v[i].suppressed_by = NULL;
    gl_spin_unlock(&st.lock);
    /* Printing symbolizes: outside the lock, so other threads' errors only wait
     * for it if they are new too (the sink serializes itself). */
    const void *suppressed_by = gl_errors_sink ? gl_errors_sink(e) : NULL;
    gl_spin_lock(&st.lock);
    st.v[i].suppressed_by = suppressed_by;
    gl_spin_unlock(&st.lock);
}

void gl_errors_counts(struct gl_api_error_counts *c)
{
    memset(c, 0, sizeof *c);
    gl_spin_lock(&st.lock);
    for (size_t i = 0; i < st.n; i++) {
        const struct gl_error_context *x = &st.v[i];
        if (x->suppressed_by) {
            c->suppressed += x->count;
            c->suppressed_contexts++;
        } else {
            c->errors += x->count;
            c->contexts++;
            if (x->first.kind < GL_ERR_NKINDS)
                c->by_kind[x->first.kind] += x->count;
        }
    }
    c->errors += st.overflow;
    for (int k = 0; k < GL_ERR_NKINDS; k++)
        c->by_kind[k] += st.overflow_by_kind[k];
    gl_spin_unlock(&st.lock);
}

size_t gl_errors_contexts(struct gl_error_context *out, size_t max)
{
    gl_spin_lock(&st.lock);
    size_t n = st.n;
    for (size_t i = 0; i < n && i < max; i++)
        out[i] = st.v[i];
    gl_spin_unlock(&st.lock);
    return n;
}

static void reset(void)
{
    gl_spin_lock(&st.lock);
    HASH_CLEAR(hh, st.by_key);
    st.n = 0;
    st.overflow = 0;
    memset(st.overflow_by_kind, 0, sizeof st.overflow_by_kind);
    gl_spin_unlock(&st.lock);
}

static void after_fork(void) { gl_spin_reset(&st.lock); }

const struct gl_component gl_errors_component = {
    .name = "errors",
    .reset = reset,
    .after_fork = after_fork,
};
