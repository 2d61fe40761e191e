/* SPDX-License-Identifier: MIT */
#include "report/report_frames.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "event/api.h"

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

struct gl_frame *gl_report_frames_get(gl_stack_frames_fn fn, uint32_t stack, unsigned max,
                                      void *arg, unsigned *n)
{
    *n = 0;
    if (!fn || !stack || !max)
        return NULL;
    struct gl_frame *f = malloc(2 * (size_t)max * sizeof *f);
    if (f)
        *n = fn(stack, f, max, arg);
    return f;
}

void gl_report_frames_print(struct gl_out *o, const struct gl_frame *frames, unsigned n,
                            const char *indent, const char *none)
{
    for (unsigned i = 0; i < n; i++) {
        const struct gl_frame *f = &frames[i];
        const char *lead = i == 0 ? "at" : "by";
        const char *fn = f->function ? f->function : "???";
        if (f->file && f->line > 0)
            gl_out_line(o, "%s%s 0x%" PRIXPTR ": %s (%s:%d)", indent, lead, f->ip, fn,
                        basename_of(f->file), f->line);
        else if (f->object)
            gl_out_line(o, "%s%s 0x%" PRIXPTR ": %s (in %s)", indent, lead, f->ip, fn, f->object);
        else
            gl_out_line(o, "%s%s 0x%" PRIXPTR ": %s", indent, lead, f->ip, fn);
    }
    if (n == 0 && none)
        gl_out_line(o, "%s%s", indent, none);
}

const char *gl_report_frames_api_called(const struct gl_frame *first, unsigned nframes,
                                        unsigned api)
{
    if (nframes > 0 && first->function && strncmp(first->function, "cu", 2) == 0 &&
        !strpbrk(first->function, " (:<"))
        return first->function;
    return gl_api_name(api);
}
