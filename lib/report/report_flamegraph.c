/* SPDX-License-Identifier: MIT */
#include "report/report_flamegraph.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/leak_check.h"
#include "report/report_frames.h"

/* One frame's name: ';' would split it and a newline end the line. */
static void put_frame(struct gl_out *o, const struct gl_frame *f)
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
        if (*p == ';' || *p == '\n')
            *p = ':';
    gl_out_str(o, name);
}

static void put_stack(struct gl_out *o, const struct gl_report_input *in, uint32_t stack,
                      uint64_t bytes)
{
    if (!bytes)
        return;
    unsigned n;
    struct gl_frame *frames =
        gl_report_frames_get(in->stack_frames, stack, (unsigned)in->opt->num_callers, in->arg, &n);
    if (!n)
        gl_out_str(o, "(no stack recorded)");
    for (unsigned i = n; i-- > 0;) { /* outermost first */
        put_frame(o, &frames[i]);
        if (i)
            gl_out_str(o, ";");
    }
    free(frames);
    gl_out_printf(o, " %" PRIu64 "\n", bytes);
}

void gl_report_flamegraph(struct gl_out *o, const struct gl_report_input *in,
                          enum gl_flamegraph_cost cost, const struct gl_site_stats *sites,
                          size_t nsites)
{
    if (cost == GL_FLAMEGRAPH_PEAK) {
        for (size_t i = 0; i < nsites; i++)
            put_stack(o, in, sites[i].stack, sites[i].peak_bytes);
        return;
    }
    const struct gl_leak_result *l = in->leaks;
    for (size_t i = 0; l && i < l->nrecords; i++) {
        const struct gl_loss_record *r = &l->records[i];
        if (!r->suppressed_by)
            put_stack(o, in, r->stack, r->bytes);
    }
}
