/* SPDX-License-Identifier: MIT */
#include "report/report_flamegraph.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/leak_check.h"
#include "report/report_frames.h"

struct line {
    char *frames; /* "outermost;...;innermost" */
    uint64_t bytes;
};

struct gl_report_flamegraph {
    struct line *v; /* in the order added */
    size_t n, cap;
    uint64_t total;
    bool merged; /* no two lines have the same frames */
};

struct gl_report_flamegraph *gl_report_flamegraph_new(void)
{
    struct gl_report_flamegraph *fg = calloc(1, sizeof *fg);
    if (fg)
        fg->merged = true;
    return fg;
}

/* A growing string. */
struct text {
    char *p;
    size_t len, cap;
    bool failed;
};

static void text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n + 1);
    t->len += n;
}

/* One frame's name: ';' would split it and a line break end the line. */
static void put_frame(struct text *t, const struct gl_frame *f)
{
    char name[512];
    const char *file = f->file ? strrchr(f->file, '/') : NULL;
    file = file ? file + 1 : f->file;
    if (f->function && file && f->line)
        snprintf(name, sizeof name, "%s (%s:%d)", f->function, file, f->line);
    else if (f->function)
        snprintf(name, sizeof name, "%s", f->function);
    else if (f->object)
        snprintf(name, sizeof name, "0x%" PRIxPTR " (%s)", f->ip,
                 strrchr(f->object, '/') ? strrchr(f->object, '/') + 1 : f->object);
    else
        snprintf(name, sizeof name, "0x%" PRIxPTR, f->ip);
    for (char *p = name; *p; p++)
        if (*p == ';' || *p == '\n' || *p == '\r')
            *p = ':';
    text_add(t, name);
}

static bool add_stack(struct gl_report_flamegraph *fg, const struct gl_report_input *in,
                      uint32_t stack, uint64_t bytes)
{
    if (!bytes)
        return true;
    if (fg->n == fg->cap) {
        size_t cap = fg->cap ? 2 * fg->cap : 64;
        struct line *v = realloc(fg->v, cap * sizeof *v);
        if (!v)
            return false;
        fg->v = v;
        fg->cap = cap;
    }
    unsigned n;
    struct gl_frame *frames =
        gl_report_frames_get(in->stack_frames, stack, (unsigned)in->opt->num_callers, in->arg, &n);
    struct text t = {0};
    if (!n)
        text_add(&t, "(no stack recorded)");
    for (unsigned i = n; i-- > 0;) { /* outermost first */
        put_frame(&t, &frames[i]);
        if (i)
            text_add(&t, ";");
    }
    free(frames);
    if (t.failed) {
        free(t.p);
        return false;
    }
    fg->v[fg->n++] = (struct line){t.p, bytes};
    fg->total += bytes;
    fg->merged = false;
    return true;
}

static uint64_t site_cost(const struct gl_site_stats *s, enum gl_flamegraph_cost cost)
{
    switch (cost) {
    case GL_FLAMEGRAPH_PEAK:
        return s->peak_bytes;
    case GL_FLAMEGRAPH_OOM:
        return s->live_bytes;
    case GL_FLAMEGRAPH_ALLOCATED:
        return s->alloc_bytes;
    case GL_FLAMEGRAPH_LEAKED:
        break;
    }
    return 0;
}

bool gl_report_flamegraph_add(struct gl_report_flamegraph *fg, const struct gl_report_input *in,
                              enum gl_flamegraph_cost cost, const struct gl_site_stats *sites,
                              size_t nsites)
{
    if (cost != GL_FLAMEGRAPH_LEAKED) {
        for (size_t i = 0; i < nsites; i++)
            if (!add_stack(fg, in, sites[i].stack, site_cost(&sites[i], cost)))
                return false;
        return true;
    }
    const struct gl_leak_result *l = in->leaks;
    for (size_t i = 0; l && i < l->nrecords; i++) {
        const struct gl_loss_record *r = &l->records[i];
        if (!r->suppressed_by && !add_stack(fg, in, r->stack, r->bytes))
            return false;
    }
    return true;
}

static int by_frames(const void *a, const void *b)
{
    const struct line *x = *(const struct line *const *)a, *y = *(const struct line *const *)b;
    int c = strcmp(x->frames, y->frames);
    return c ? c : (x > y) - (x < y); /* the first added first */
}

/* Lines of the same frames into the first of them, the order kept: once,
 * when written (sorting pointers is enough for the few thousand sites of a
 * program). */
static void merge(struct gl_report_flamegraph *fg)
{
    if (fg->merged)
        return;
    struct line **by = malloc(fg->n * sizeof *by);
    if (!by)
        return; /* written unmerged: a viewer adds the lines up itself */
    for (size_t i = 0; i < fg->n; i++)
        by[i] = &fg->v[i];
    qsort(by, fg->n, sizeof *by, by_frames);
    for (size_t i = 1; i < fg->n; i++) {
        struct line *first = by[i - 1];
        if (strcmp(first->frames, by[i]->frames) != 0)
            continue;
        first->bytes += by[i]->bytes;
        free(by[i]->frames);
        by[i]->frames = NULL;
        by[i] = first; /* the next of the same frames finds it */
    }
    free(by);
    size_t k = 0;
    for (size_t i = 0; i < fg->n; i++)
        if (fg->v[i].frames)
            fg->v[k++] = fg->v[i];
    fg->n = k;
    fg->merged = true;
}

uint64_t gl_report_flamegraph_total(const struct gl_report_flamegraph *fg) { return fg->total; }

size_t gl_report_flamegraph_lines(struct gl_report_flamegraph *fg)
{
    merge(fg);
    return fg->n;
}

void gl_report_flamegraph_write(struct gl_out *o, struct gl_report_flamegraph *fg)
{
    merge(fg);
    for (size_t i = 0; i < fg->n; i++) {
        gl_out_str(o, fg->v[i].frames);
        gl_out_printf(o, " %" PRIu64 "\n", fg->v[i].bytes);
    }
}

void gl_report_flamegraph_free(struct gl_report_flamegraph *fg)
{
    if (!fg)
        return;
    for (size_t i = 0; i < fg->n; i++)
        free(fg->v[i].frames);
    free(fg->v);
    free(fg);
}

void gl_report_flamegraph(struct gl_out *o, const struct gl_report_input *in,
                          enum gl_flamegraph_cost cost, const struct gl_site_stats *sites,
                          size_t nsites)
{
    struct gl_report_flamegraph *fg = gl_report_flamegraph_new();
    if (!fg)
        return;
    gl_report_flamegraph_add(fg, in, cost, sites, nsites);
    gl_report_flamegraph_write(o, fg);
    gl_report_flamegraph_free(fg);
}
