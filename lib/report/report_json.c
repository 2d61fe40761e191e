/* SPDX-License-Identifier: MIT */
#include "report/report_json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/framework.h"
#include "common/signals.h"
#include "event/api.h"
#include "event/event.h"
#include "event/mem_kind.h"
#include "report/report_frames.h"
#include "track/stats.h"

/* A JSON string, or null. */
static void str(struct gl_out *o, const char *s)
{
    if (!s) {
        gl_out_str(o, "null");
        return;
    }
    gl_out_str(o, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            gl_out_str(o, "\\\"");
        else if (c == '\\')
            gl_out_str(o, "\\\\");
        else if (c == '\n')
            gl_out_str(o, "\\n");
        else if (c == '\t')
            gl_out_str(o, "\\t");
        else if (c < 0x20)
            gl_out_printf(o, "\\u%04x", c);
        else {
            size_t n = gl_out_utf8_len(s); /* JSON is UTF-8: repair the rest */
            if (n == 0) {
                gl_out_str(o, GL_UTF8_REPLACEMENT);
            } else {
                gl_out_text(o, s, n);
                s += n - 1;
            }
        }
    }
    gl_out_str(o, "\"");
}

static void key(struct gl_out *o, const char *k)
{
    str(o, k);
    gl_out_str(o, ": ");
}

static void totals(struct gl_out *o, const char *name, const struct gl_leak_totals *t, bool last)
{
    key(o, name);
    gl_out_printf(o, "{\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 "}%s", t->bytes, t->blocks,
                  last ? "" : ", ");
}

static void frame(struct gl_out *o, const struct gl_frame *f, bool last)
{
    gl_out_printf(o, "        {\"ip\": \"0x%" PRIxPTR "\", \"function\": ", f->ip);
    str(o, f->function);
    gl_out_str(o, ", \"mangled\": ");
    str(o, f->mangled);
    gl_out_str(o, ", \"file\": ");
    str(o, f->file);
    gl_out_printf(o, ", \"line\": %d, \"object\": ", f->line);
    str(o, f->object);
    gl_out_str(o, last ? "}\n" : "},\n");
}

static void block(struct gl_out *o, const struct gl_block_info *b, bool last)
{
    enum gl_key_ns ns = gl_key_ns(b->key);
    gl_out_printf(o, "        {\"%s\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ", \"device\": %d, ",
                  ns == GL_NS_ADDR || ns == GL_NS_POOL_SUB ? "address" : "handle",
                  gl_key_value(b->key), b->size, b->device);
    gl_out_str(o, "\"memory_kind\": ");
    str(o, gl_mem_kind_name(b->kind));
    gl_out_str(o, ", \"driver_api\": ");
    str(o, gl_api_name(b->api));
    gl_out_printf(o,
                  ", \"allocation\": %" PRIu64 ", \"thread\": %u, \"context\": \"0x%" PRIx64 "\", ",
                  b->seq, b->tid, b->ctx);
    if (b->kind == GL_MEM_ASYNC)
        gl_out_printf(o, "\"stream\": \"0x%" PRIx64 "\", ", b->aux);
    else
        gl_out_str(o, "\"stream\": null, ");
    gl_out_printf(o, "\"size_unknown\": %s, \"imported\": %s",
                  (b->flags & GL_BLK_SIZE_UNKNOWN) ? "true" : "false",
                  (b->flags & GL_BLK_IMPORTED) ? "true" : "false");
    if (b->kind == GL_MEM_VMM)
        gl_out_printf(o, ", \"released\": %s, \"mappings\": %" PRIu64,
                      (b->flags & GL_BLK_RELEASED) ? "true" : "false", b->aux);
    if (b->kind == GL_MEM_POOL_RESERVE || b->kind == GL_MEM_GRAPH_RESERVE)
        gl_out_printf(o, ", \"reserved\": %" PRIu64 ", \"in_use\": %" PRIu64, b->size + b->aux,
                      b->aux);
    if (b->kind == GL_MEM_POOL_SUB)
        gl_out_printf(o, ", \"pool\": \"0x%" PRIx64 "\"", gl_key_value(b->aux));
    if (b->flags & GL_BLK_POOL)
        gl_out_str(o, ", \"custom_pool\": true");
    gl_out_str(o, last ? "}\n" : "},\n");
}

static void record(struct gl_out *o, const struct gl_report_input *in,
                   const struct gl_loss_record *r, size_t index, bool last)
{
    const struct gl_options *opt = in->opt;
    unsigned n;
    struct gl_frame *frames =
        gl_report_frames_get(in->stack_frames, r->stack, (unsigned)opt->num_callers, in->arg, &n);
    const char *api = gl_report_frames_api_called(frames, n, r->first.api);
    char text[1024];
    gl_report_text_block_text(in, r, api, text, sizeof text);
    bool shown = opt->leak_check == GL_LEAK_CHECK_FULL && !r->suppressed_by &&
                 (opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind));

    gl_out_printf(o, "    {\"index\": %zu, \"kind\": ", index);
    str(o, gl_leak_kind_option_name(r->kind));
    gl_out_printf(o, ", \"error\": %s, \"shown\": %s, \"suppressed_by\": ",
                  gl_report_text_is_error(opt, r) ? "true" : "false", shown ? "true" : "false");
    str(o, r->suppressed_by ? r->suppressed_by->name : NULL);
    gl_out_str(o, ", \"cached_by\": ");
    str(o, r->cached_by ? r->cached_by->name : NULL);
    gl_out_printf(o,
                  ",\n     \"bytes\": %" PRIu64 ", \"indirect_bytes\": %" PRIu64
                  ", \"blocks\": %" PRIu64 ", \"api\": ",
                  r->bytes, r->indirect_bytes, r->blocks);
    str(o, api);
    gl_out_str(o, ", \"memory_kind\": ");
    str(o, gl_mem_kind_name(r->first.kind));
    gl_out_printf(
        o, ", \"allocations\": {\"first\": %" PRIu64 ", \"last\": %" PRIu64 "},\n     \"text\": ",
        r->seq_min, r->seq_max);
    str(o, text);
    gl_out_str(o, ",\n     \"frames\": [\n");
    for (unsigned i = 0; i < n; i++)
        frame(o, &frames[i], i + 1 == n);
    free(frames);
    gl_out_str(o, "     ],\n     \"held_through\": ");
    struct gl_frame site;
    const struct gl_reach_holder *h = gl_report_text_holder(in, r, &site);
    if (h) {
        gl_out_printf(o, "{\"bytes\": %" PRIu64 ", \"allocated_by\": ", h->bytes);
        if (site.ip) { /* the malloc call's return address: named as a frame is */
            gl_out_str(o, "\n");
            frame(o, &site, true);
            gl_out_str(o, "     }");
        } else {
            gl_out_str(o, "null}");
        }
    } else {
        gl_out_str(o, "null");
    }
    gl_out_str(o, ",\n     \"block_list\": [\n");
    const struct gl_leak_result *lr = in->leaks;
    for (uint64_t i = 0; lr->blocks && i < r->blocks; i++)
        block(o, &lr->blocks[r->block_begin + i], i + 1 == r->blocks);
    gl_out_str(o, last ? "     ]}\n" : "     ]},\n");
}

static void frames_of_stack(struct gl_out *o, const struct gl_report_input *in, uint32_t stack,
                            unsigned max)
{
    unsigned n;
    struct gl_frame *f = gl_report_frames_get(in->stack_frames, stack, max, in->arg, &n);
    gl_out_str(o, "[\n");
    for (unsigned i = 0; i < n; i++)
        frame(o, &f[i], i + 1 == n);
    free(f);
    gl_out_str(o, "     ]");
}

/* How the program ended: {"how": "exit"}, "_exit" with its status, or "signal"
 * with its number, name, fault address and stack. */
static void termination(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_termination *t = in->termination;
    if (!t) {
        gl_out_str(o, "{\"how\": \"exit\"}");
        return;
    }
    if (t->quick_exit) {
        gl_out_printf(o, "{\"how\": \"_exit\", \"status\": %d}", t->exit_status);
        return;
    }
    char buf[32];
    gl_out_printf(o, "{\"how\": \"signal\", \"signal\": %d, \"name\": ", t->signal);
    str(o, gl_signals_name(t->signal, buf, sizeof buf));
    gl_out_printf(o,
                  ", \"si_code\": %d, \"fault_address\": \"0x%" PRIx64 "\", \"thread\": %u,\n"
                  "    \"frames\": ",
                  t->si_code, t->fault_addr, t->tid);
    frames_of_stack(o, in, t->stack, (unsigned)in->opt->num_callers);
    gl_out_str(o, "}");
}

/* An API error context: what the text report prints for it, and its count. */
static void api_error(struct gl_out *o, const struct gl_report_input *in,
                      const struct gl_error_context *c, bool last)
{
    struct gl_error_services svc;
    gl_report_text_error_services(in, &svc);
    struct gl_error_text t;
    gl_report_errors_describe(&c->first, &svc, &t);
    const struct gl_api_error *e = &c->first;
    gl_out_str(o, "    {\"kind\": ");
    str(o, gl_error_kind_name(e->kind));
    gl_out_printf(o, ", \"count\": %" PRIu64 ", \"suppressed\": %s, \"tid\": %u, \"device\": %d",
                  c->count, c->suppressed_by ? "true" : "false", e->tid, e->device);
    gl_out_printf(o, ", \"address\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ",\n     \"what\": ",
                  e->addr, e->size);
    str(o, t.what);
    gl_out_str(o, ",\n     \"frames\": ");
    frames_of_stack(o, in, e->stack, svc.num_callers);
    gl_out_str(o, ",\n     \"aux\": [");
    bool first = true;
    for (int i = 0; i < 2; i++) {
        if (!t.aux[i][0])
            continue;
        gl_out_str(o, first ? "{\"what\": " : ", {\"what\": ");
        str(o, t.aux[i]);
        gl_out_printf(
            o, ", \"stack_kept\": %s, \"frames\": ", t.aux_stack_missing[i] ? "false" : "true");
        frames_of_stack(o, in, t.aux_stack[i], svc.num_callers);
        gl_out_str(o, "}");
        first = false;
    }
    gl_out_str(o, last ? "]}\n" : "]},\n");
}

/* ---- usage, statistics, the program's checks, growth (issue 24) ---- */

static void bytes_blocks(struct gl_out *o, uint64_t bytes, uint64_t blocks)
{
    gl_out_printf(o, "{\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 "}", bytes, blocks);
}

/* One split's counters, torch.cuda.memory_stats()'s four, as members;
 * between the second and the third, sep. */
static void stat_members(struct gl_out *o, const struct gl_stat_counts *c, const char *sep)
{
    gl_out_str(o, "\"current\": ");
    bytes_blocks(o, c->cur_bytes, c->cur_blocks);
    gl_out_str(o, ", \"peak\": ");
    bytes_blocks(o, c->peak_bytes, c->peak_blocks);
    gl_out_str(o, sep);
    gl_out_str(o, "\"allocated\": ");
    bytes_blocks(o, c->alloc_bytes, c->alloc_blocks);
    gl_out_str(o, ", \"freed\": ");
    bytes_blocks(o, c->freed_bytes, c->freed_blocks);
}

/* The same, as an object of its own. */
static void stat_counts(struct gl_out *o, const struct gl_stat_counts *c)
{
    gl_out_str(o, "{");
    stat_members(o, c, ", ");
    gl_out_str(o, "}");
}

/* GPU MEMORY SUMMARY's groups: always, as the text always prints them (the
 * counters are kept whatever the options); with --stats=yes each memory kind
 * also has GPU MEMORY STATISTICS's small and large splits. */
static void usage(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_usage *u = in->usage;
    gl_out_str(o, "  \"usage\": [");
    bool first = true;
    for (unsigned sl = 0; u && sl < GL_STATS_SLOTS; sl++) {
        if (!u->used[sl])
            continue;
        const struct gl_stat_device *d = &u->dev[sl];
        gl_out_str(o, first ? "\n    {\"slot\": " : ",\n    {\"slot\": ");
        first = false;
        if (sl < GL_STATS_DEVICES) {
            gl_out_printf(o, "\"device\", \"device\": %u, \"name\": ", sl);
            str(o, in->device_name ? in->device_name((int)sl, in->arg) : NULL);
        } else {
            gl_out_printf(o, "\"%s\", \"device\": null, \"name\": null",
                          sl == GL_STATS_SLOT_HOST ? "host" : "other");
        }
        gl_out_printf(o, ",\n     \"in_use_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64,
                      d->cur_bytes, d->peak_bytes);
        if (d->peak_bytes) {
            gl_out_printf(
                o, ", \"peak_allocation\": %" PRIu64 ",\n     \"peak_frames\": ", d->peak_seq);
            frames_of_stack(o, in, d->peak_stack, (unsigned)in->opt->num_callers);
        } else {
            gl_out_str(o, ", \"peak_allocation\": null, \"peak_frames\": []");
        }
        gl_out_str(o, ",\n     \"kinds\": [");
        bool first_kind = true;
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_group *g = &u->grp[sl][k];
            const struct gl_stat_counts *a = &g->split[GL_SPLIT_ALL];
            if (!a->alloc_blocks && !g->failed)
                continue;
            gl_out_str(o,
                       first_kind ? "\n       {\"memory_kind\": " : ",\n       {\"memory_kind\": ");
            first_kind = false;
            str(o, gl_mem_kind_name(k));
            gl_out_str(o, ", ");
            stat_members(o, a, ",\n        ");
            gl_out_printf(
                o, ",\n        \"failed\": {\"allocations\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
                g->failed, g->failed_bytes);
            if (in->opt->stats) {
                gl_out_str(o, ",\n        \"small\": ");
                stat_counts(o, &g->split[GL_SPLIT_SMALL]);
                gl_out_str(o, ",\n        \"large\": ");
                stat_counts(o, &g->split[GL_SPLIT_LARGE]);
            }
            gl_out_str(o, "}");
        }
        gl_out_str(o, first_kind ? "]}" : "\n     ]}");
    }
    gl_out_str(o, first ? "],\n" : "\n  ],\n");
}

/* --stats=yes: the allocation sites that held the most at one time; null
 * without it (sites are counted only then). */
static void stats(struct gl_out *o, const struct gl_report_input *in)
{
    if (!in->opt->stats || !in->usage) {
        gl_out_str(o, "  \"stats\": null,\n");
        return;
    }
    gl_out_printf(o, "  \"stats\": {\"small_limit\": %u, \"top_sites\": [", GL_STATS_SMALL_LIMIT);
    for (size_t i = 0; i < in->ntop_sites; i++) {
        const struct gl_site_stats *site = &in->top_sites[i];
        gl_out_printf(o,
                      "%s\n    {\"peak_bytes\": %" PRIu64 ", \"live_bytes\": %" PRIu64
                      ", \"live_blocks\": %" PRIu64 ",\n     \"frames\": ",
                      i ? "," : "", site->peak_bytes, site->live_bytes, site->live_blocks);
        frames_of_stack(o, in, site->stack, (unsigned)in->opt->num_callers);
        gl_out_str(o, "}");
    }
    gl_out_str(o, in->ntop_sites ? "\n  ]},\n" : "]},\n");
}

/* Per leak kind as summary.leaks has them, suppressed last. */
static void check_leaks(struct gl_out *o, const struct gl_leak_totals *kind,
                        const struct gl_leak_totals *suppressed, bool death)
{
    gl_out_str(o, "{");
    for (int k = 0; k < GL_LEAK_NKINDS; k++) {
        if (k == GL_LEAK_DEATH && !death)
            continue;
        totals(o, gl_leak_kind_option_name((enum gl_leak_kind)k), &kind[k], false);
    }
    totals(o, "suppressed", suppressed, true);
    gl_out_str(o, "}");
}

static void check_record(struct gl_out *o, const struct gl_report_input *in,
                         const struct gl_report_check *c, const struct gl_report_check_record *r,
                         bool last)
{
    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(in->stack_frames, r->stack,
                                                   (unsigned)in->opt->num_callers, in->arg, &n);
    gl_out_printf(o, "       {\"index\": %" PRIu64 ", \"kind\": ", r->index);
    str(o, gl_leak_kind_option_name((enum gl_leak_kind)r->kind));
    gl_out_printf(o,
                  ", \"error\": %s, \"new\": %s, \"bytes\": %" PRIu64
                  ", \"indirect_bytes\": %" PRIu64 ", \"blocks\": %" PRIu64
                  ",\n        \"before\": ",
                  r->error ? "true" : "false", r->is_new ? "true" : "false", r->bytes,
                  r->indirect_bytes, r->blocks);
    if (c->delta)
        bytes_blocks(o, r->before_bytes, r->before_blocks);
    else
        gl_out_str(o, "null");
    gl_out_str(o, ", \"api\": ");
    str(o, gl_report_frames_api_called(frames, n, r->api));
    gl_out_str(o, ", \"memory_kind\": ");
    str(o, gl_mem_kind_name(r->mem_kind));
    gl_out_printf(o,
                  ", \"allocations\": {\"first\": %" PRIu64 ", \"last\": %" PRIu64
                  "},\n        \"what\": ",
                  r->seq_min, r->seq_max);
    str(o, r->title);
    gl_out_str(o, ",\n        \"text\": ");
    str(o, r->text);
    gl_out_str(o, ",\n        \"frames\": [\n");
    for (unsigned i = 0; i < n; i++)
        frame(o, &frames[i], i + 1 == n);
    free(frames);
    gl_out_str(o, last ? "        ]}\n" : "        ]},\n");
}

static void leak_check(struct gl_out *o, const struct gl_report_input *in,
                       const struct gl_report_check *c, bool last)
{
    gl_out_printf(o, "    {\"number\": %" PRIu64 ", \"mode\": ", c->number);
    str(o, gl_report_text_select_name(c->select));
    gl_out_str(o, ", \"since\": ");
    str(o, c->since[0] ? c->since : NULL);
    if (c->since[0])
        gl_out_printf(o, ", \"since_allocation\": %" PRIu64, c->since_seq);
    else
        gl_out_str(o, ", \"since_allocation\": null");
    gl_out_printf(o,
                  ", \"output\": \"%s\",\n     \"elapsed_s\": %.3f, \"allocations\": %" PRIu64
                  ", \"errors\": %" PRIu64 ",\n     ",
                  c->to_buffer ? "buffer" : "log", c->elapsed_s, c->allocs, c->errors);
    totals(o, "in_use", &c->in_use, false);
    totals(o, "ignored", &c->ignored, false);
    /* As LEAK SUMMARY: live at death only where there is some. */
    bool death =
        c->kind[GL_LEAK_DEATH].blocks || (c->delta && c->before_kind[GL_LEAK_DEATH].blocks);
    gl_out_str(o, "\n     \"leaks\": ");
    check_leaks(o, c->kind, &c->suppressed, death);
    gl_out_str(o, ",\n     \"before\": ");
    if (c->delta)
        check_leaks(o, c->before_kind, &c->before_suppressed, death);
    else
        gl_out_str(o, "null");
    gl_out_printf(o,
                  ",\n     \"records_total\": %" PRIu64 ", \"records_printed\": %" PRIu64
                  ", \"records\": [\n",
                  c->nrecords, c->printed);
    for (size_t i = 0; i < c->nkept; i++)
        check_record(o, in, c, &c->records[i], i + 1 == c->nkept);
    gl_out_str(o, last ? "     ]}\n" : "     ]},\n");
}

/* The checks the program asked for, in order, as kept (lib/check_history.h). */
static void leak_checks(struct gl_out *o, const struct gl_report_input *in)
{
    gl_out_printf(o, "  \"leak_checks_dropped\": %" PRIu64 ",\n  \"leak_checks\": [\n",
                  in->checks_dropped);
    for (size_t i = 0; i < in->nchecks; i++)
        leak_check(o, in, &in->checks[i], i + 1 == in->nchecks);
    gl_out_str(o, "  ],\n");
}

/* Each Growth error of api_errors, its figures apart. */
static void growth(struct gl_out *o, const struct gl_report_input *in)
{
    gl_out_str(o, "  \"growth\": [");
    bool first = true;
    for (size_t i = 0; i < in->napi_contexts; i++) {
        const struct gl_error_context *c = &in->api_contexts[i];
        const struct gl_api_error *e = &c->first;
        if (e->kind != GL_ERR_GROWTH)
            continue;
        struct gl_error_services svc;
        gl_report_text_error_services(in, &svc);
        struct gl_error_text t;
        gl_report_errors_describe(e, &svc, &t);
        uint32_t k = e->growth.checkpoints, at = e->growth.ordinal;
        gl_out_printf(o, "%s\n    {\"api_error\": %zu, \"suppressed\": %s, \"checkpoint\": ",
                      first ? "" : ",", i, c->suppressed_by ? "true" : "false");
        first = false;
        str(o, e->growth.checkpoint);
        gl_out_printf(o,
                      ", \"checkpoint_number\": %u, \"from_checkpoint_number\": %u, "
                      "\"checkpoints\": %u,\n     \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64
                      ", \"from_bytes\": %" PRIu64 ", \"from_blocks\": %" PRIu64 ", \"unit\": ",
                      at, at >= k ? at - k : 0, k, e->size, e->growth.blocks, e->growth.from_bytes,
                      e->growth.from_blocks);
        str(o, gl_report_errors_growth_unit(e));
        gl_out_str(o, ", \"framework\": ");
        str(o, e->growth.framework != GL_FW_NONE
                   ? gl_framework_name((enum gl_framework)e->growth.framework)
                   : NULL);
        gl_out_str(o, ",\n     \"what\": ");
        str(o, t.what);
        gl_out_str(o, ",\n     \"frames\": ");
        frames_of_stack(o, in, e->stack, svc.num_callers);
        gl_out_str(o, "}");
    }
    gl_out_str(o, first ? "],\n" : "\n  ],\n");
}

void gl_report_json(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_leak_result *lr = in->leaks;
    gl_out_printf(o, "{\n  \"format\": \"gpuleak-report\", \"format_version\": %d,\n",
                  GL_JSON_FORMAT_VERSION);
    gl_out_str(o, "  \"tool\": \"gpuleak\", \"version\": ");
    str(o, in->tool_version);
    gl_out_printf(o,
                  ",\n  \"pid\": %d, \"ppid\": %d, \"elapsed_s\": %.3f,\n  \"command\": ", in->pid,
                  in->ppid, in->elapsed_s);
    str(o, in->command);
    if (in->note) {
        gl_out_str(o, ",\n  \"note\": ");
        str(o, in->note);
    }
    gl_out_str(o, ",\n  \"termination\": ");
    termination(o, in);
    gl_out_str(o, ",\n  \"argv\": [");
    for (int i = 0; i < in->argc; i++) {
        str(o, in->argv[i]);
        gl_out_str(o, i + 1 < in->argc ? ", " : "");
    }
    gl_out_str(o, "],\n  \"options\": [");
    for (int i = 0; i < in->tool_argc; i++) {
        str(o, in->tool_argv[i]);
        gl_out_str(o, i + 1 < in->tool_argc ? ", " : "");
    }
    gl_out_str(o, "],\n  \"devices\": [");
    bool first = true;
    for (int d = 0; d < 62; d++) {
        bool used = false;
        for (size_t i = 0; i < lr->nrecords && !used; i++)
            used = (lr->records[i].devices >> d) & 1;
        if (!used)
            continue;
        gl_out_printf(o, "%s{\"ordinal\": %d, \"name\": ", first ? "" : ", ", d);
        str(o, in->device_name ? in->device_name(d, in->arg) : NULL);
        gl_out_str(o, "}");
        first = false;
    }
    gl_out_str(o, "],\n  \"api_errors\": [\n");
    for (size_t i = 0; i < in->napi_contexts; i++)
        api_error(o, in, &in->api_contexts[i], i + 1 == in->napi_contexts);
    gl_out_str(o, "  ],\n  \"records\": [\n");
    for (size_t i = 0; i < lr->nrecords; i++)
        record(o, in, &lr->records[i], i + 1, i + 1 == lr->nrecords);
    gl_out_str(o, "  ],\n  \"summary\": {\n    ");
    totals(o, "in_use", &lr->in_use, false);
    totals(o, "imported", &lr->imported, false);
    totals(o, "ignored", &lr->ignored, true);
    gl_out_printf(
        o,
        ",\n    \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
        ", \"peak_bytes\": %" PRIu64 ",\n    \"leaks\": {",
        in->stats->allocs, in->stats->frees, in->stats->bytes_allocated, in->stats->peak_bytes);
    for (int k = 0; k < GL_LEAK_NKINDS; k++) {
        /* "death" only when a saved log of a process that died has such
         * blocks, as in the text summary: every other report stays as it was. */
        if (k == GL_LEAK_DEATH && !lr->kind[k].blocks)
            continue;
        totals(o, gl_leak_kind_option_name((enum gl_leak_kind)k), &lr->kind[k], false);
    }
    totals(o, "suppressed", &lr->suppressed, true);
    struct gl_error_counts c;
    gl_report_text_error_counts(in, &c);
    gl_out_printf(o,
                  "}\n  },\n  \"errors\": {\"errors\": %" PRIu64 ", \"contexts\": %" PRIu64
                  ", \"suppressed\": %" PRIu64 ", \"suppressed_contexts\": %" PRIu64 "},\n",
                  c.errors, c.contexts, c.suppressed, c.suppressed_contexts);
    usage(o, in);
    stats(o, in);
    leak_checks(o, in);
    growth(o, in);
    gl_out_str(o, "  \"suppressions_used\": [");
    first = true;
    if (in->supps)
        for (size_t i = 0; i < in->supps->n; i++) {
            const struct gl_supp *e = &in->supps->v[i];
            if (!e->count)
                continue;
            gl_out_str(o, first ? "\n    {\"name\": " : ",\n    {\"name\": ");
            str(o, e->name);
            gl_out_str(o, ", \"file\": ");
            str(o, e->file);
            gl_out_printf(o,
                          ", \"line\": %d, \"kind\": \"%s\", \"count\": %" PRIu64
                          ", \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 "}",
                          e->line,
                          e->kind == GL_SUPP_CACHED  ? "Cached"
                          : e->kind == GL_SUPP_ERROR ? gl_error_kind_name(e->error_kind)
                                                     : "Leak",
                          e->count, e->bytes, e->blocks);
            first = false;
        }
    gl_out_str(o, first ? "]\n}\n" : "\n  ]\n}\n");
}
