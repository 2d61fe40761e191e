#include "report_json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "track/api.h"
#include "track/event.h"

static void raw(struct gl_out *o, const char *s) { gl_out_text(o, s, strlen(s)); }

static void rawf(struct gl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rawf(struct gl_out *o, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        gl_out_text(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* A JSON string, or null. */
static void str(struct gl_out *o, const char *s)
{
    if (!s) {
        raw(o, "null");
        return;
    }
    raw(o, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            raw(o, "\\\"");
        else if (c == '\\')
            raw(o, "\\\\");
        else if (c == '\n')
            raw(o, "\\n");
        else if (c == '\t')
            raw(o, "\\t");
        else if (c < 0x20)
            rawf(o, "\\u%04x", c);
        else {
            size_t n = gl_utf8_seq_len(s); /* JSON is UTF-8: repair the rest */
            if (n == 0) {
                raw(o, GL_UTF8_REPLACEMENT);
            } else {
                gl_out_text(o, s, n);
                s += n - 1;
            }
        }
    }
    raw(o, "\"");
}

static void key(struct gl_out *o, const char *k)
{
    str(o, k);
    raw(o, ": ");
}

static void totals(struct gl_out *o, const char *name, const struct gl_leak_totals *t, bool last)
{
    key(o, name);
    rawf(o, "{\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 "}%s", t->bytes, t->blocks,
         last ? "" : ", ");
}

static void frame(struct gl_out *o, const struct gl_frame *f, bool last)
{
    rawf(o, "        {\"ip\": \"0x%" PRIxPTR "\", \"function\": ", f->ip);
    str(o, f->function);
    raw(o, ", \"mangled\": ");
    str(o, f->mangled);
    raw(o, ", \"file\": ");
    str(o, f->file);
    rawf(o, ", \"line\": %d, \"object\": ", f->line);
    str(o, f->object);
    raw(o, last ? "}\n" : "},\n");
}

static void block(struct gl_out *o, const struct gl_block_info *b, bool last)
{
    enum gl_key_ns ns = gl_key_ns(b->key);
    rawf(o, "        {\"%s\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ", \"device\": %d, ",
         ns == GL_NS_ADDR ? "address" : "handle", gl_key_value(b->key), b->size, b->device);
    raw(o, "\"memory_kind\": ");
    str(o, gl_mem_kind_name(b->kind));
    raw(o, ", \"driver_api\": ");
    str(o, gl_api_name(b->api));
    rawf(o, ", \"allocation\": %" PRIu64 ", \"thread\": %u, \"context\": \"0x%" PRIx64 "\", ",
         b->seq, b->tid, b->ctx);
    if (b->kind == GL_MEM_ASYNC)
        rawf(o, "\"stream\": \"0x%" PRIx64 "\", ", b->aux);
    else
        raw(o, "\"stream\": null, ");
    rawf(o, "\"size_unknown\": %s, \"imported\": %s", (b->flags & GL_BLK_SIZE_UNKNOWN) ? "true" : "false",
         (b->flags & GL_BLK_IMPORTED) ? "true" : "false");
    if (b->kind == GL_MEM_VMM)
        rawf(o, ", \"released\": %s, \"mappings\": %" PRIu64,
             (b->flags & GL_BLK_RELEASED) ? "true" : "false", b->aux);
    raw(o, last ? "}\n" : "},\n");
}

static void record(struct gl_out *o, const struct gl_report_input *in,
                   const struct gl_loss_record *r, size_t index, bool last)
{
    const struct gl_options *opt = in->opt;
    struct gl_frame frames[GL_MAX_CALLERS];
    unsigned n = in->stack_frames ? in->stack_frames(r->stack, frames,
                                                     (unsigned)opt->num_callers, in->arg)
                                  : 0;
    const char *api = gl_report_api_called(&frames[0], n, r->first.api);
    char text[1024];
    gl_report_block_text(in, r, api, text, sizeof text);
    bool shown = opt->leak_check == GL_LEAK_CHECK_FULL && !r->suppressed_by &&
                 (opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind));

    rawf(o, "    {\"index\": %zu, \"kind\": ", index);
    str(o, gl_leak_kind_option_name(r->kind));
    rawf(o, ", \"error\": %s, \"shown\": %s, \"suppressed_by\": ",
         gl_report_is_error(opt, r) ? "true" : "false", shown ? "true" : "false");
    str(o, r->suppressed_by ? r->suppressed_by->name : NULL);
    raw(o, ", \"cached_by\": ");
    str(o, r->cached_by ? r->cached_by->name : NULL);
    rawf(o, ",\n     \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"api\": ", r->bytes,
         r->blocks);
    str(o, api);
    raw(o, ", \"memory_kind\": ");
    str(o, gl_mem_kind_name(r->first.kind));
    rawf(o, ", \"allocations\": {\"first\": %" PRIu64 ", \"last\": %" PRIu64 "},\n     \"text\": ",
         r->seq_min, r->seq_max);
    str(o, text);
    raw(o, ",\n     \"frames\": [\n");
    for (unsigned i = 0; i < n; i++)
        frame(o, &frames[i], i + 1 == n);
    raw(o, "     ],\n     \"block_list\": [\n");
    const struct gl_leak_result *lr = in->leaks;
    for (uint64_t i = 0; lr->blocks && i < r->blocks; i++)
        block(o, &lr->blocks[r->block_begin + i], i + 1 == r->blocks);
    raw(o, last ? "     ]}\n" : "     ]},\n");
}

void gl_report_json(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_leak_result *lr = in->leaks;
    rawf(o, "{\n  \"format\": \"gpuleak-report\", \"format_version\": %d,\n", GL_JSON_FORMAT_VERSION);
    raw(o, "  \"tool\": \"gpuleak\", \"version\": ");
    str(o, in->tool_version);
    rawf(o, ",\n  \"pid\": %d, \"ppid\": %d, \"elapsed_s\": %.3f,\n  \"command\": ", in->pid,
         in->ppid, in->elapsed_s);
    str(o, in->command);
    raw(o, ",\n  \"argv\": [");
    for (int i = 0; i < in->argc; i++) {
        str(o, in->argv[i]);
        raw(o, i + 1 < in->argc ? ", " : "");
    }
    raw(o, "],\n  \"options\": [");
    for (int i = 0; i < in->tool_argc; i++) {
        str(o, in->tool_argv[i]);
        raw(o, i + 1 < in->tool_argc ? ", " : "");
    }
    raw(o, "],\n  \"devices\": [");
    bool first = true;
    for (int d = 0; d < 62; d++) {
        bool used = false;
        for (size_t i = 0; i < lr->nrecords && !used; i++)
            used = (lr->records[i].devices >> d) & 1;
        if (!used)
            continue;
        rawf(o, "%s{\"ordinal\": %d, \"name\": ", first ? "" : ", ", d);
        str(o, in->device_name ? in->device_name(d, in->arg) : NULL);
        raw(o, "}");
        first = false;
    }
    raw(o, "],\n  \"records\": [\n");
    for (size_t i = 0; i < lr->nrecords; i++)
        record(o, in, &lr->records[i], i + 1, i + 1 == lr->nrecords);
    raw(o, "  ],\n  \"summary\": {\n    ");
    totals(o, "in_use", &lr->in_use, false);
    totals(o, "imported", &lr->imported, true);
    rawf(o, ",\n    \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
            ", \"peak_bytes\": %" PRIu64 ",\n    \"leaks\": {",
         in->stats->allocs, in->stats->frees, in->stats->bytes_allocated, in->stats->peak_bytes);
    for (int k = 0; k < GL_LEAK_NKINDS; k++)
        totals(o, gl_leak_kind_option_name((enum gl_leak_kind)k), &lr->kind[k], false);
    totals(o, "suppressed", &lr->suppressed, true);
    struct gl_error_counts c;
    gl_report_error_counts(in, &c);
    rawf(o, "}\n  },\n  \"errors\": {\"errors\": %" PRIu64 ", \"contexts\": %" PRIu64
            ", \"suppressed\": %" PRIu64 ", \"suppressed_contexts\": %" PRIu64 "},\n",
         c.errors, c.contexts, c.suppressed, c.suppressed_contexts);
    raw(o, "  \"suppressions_used\": [");
    first = true;
    if (in->supps)
        for (size_t i = 0; i < in->supps->n; i++) {
            const struct gl_supp *e = &in->supps->v[i];
            if (!e->count)
                continue;
            raw(o, first ? "\n    {\"name\": " : ",\n    {\"name\": ");
            str(o, e->name);
            raw(o, ", \"file\": ");
            str(o, e->file);
            rawf(o, ", \"line\": %d, \"kind\": \"%s\", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
                    ", \"blocks\": %" PRIu64 "}",
                 e->line, e->kind == GL_SUPP_CACHED ? "Cached" : "Leak", e->count, e->bytes,
                 e->blocks);
            first = false;
        }
    raw(o, first ? "]\n}\n" : "\n  ]\n}\n");
}
