/* SPDX-License-Identifier: MIT */
#include "report/report_xml.h"

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/framework.h"
#include "common/error_kind.h"
#include "common/signals.h"
#include "common/suppressions.h"
#include "event/api.h"
#include "event/mem_kind.h"
#include "report/report_frames.h"
#include "report/report_text.h"
#include "track/stats.h"

const char *gl_report_xml_leak_kind(enum gl_leak_kind k)
{
    switch (k) {
    case GL_LEAK_DEFINITE:
        return "Leak_DefinitelyLost";
    case GL_LEAK_INDIRECT:
        return "Leak_IndirectlyLost";
    case GL_LEAK_POSSIBLE:
        return "Leak_PossiblyLost";
    case GL_LEAK_REACHABLE:
        return "Leak_StillReachable";
    case GL_LEAK_CACHED:
        return "Leak_Cached";
    case GL_LEAK_DEATH:
        return "Leak_LiveAtDeath";
    default:
        return "Leak_Unknown";
    }
}

/* Text escaped for XML character data. */
static void esc(struct gl_out *o, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            gl_out_str(o, "&amp;");
            break;
        case '<':
            gl_out_str(o, "&lt;");
            break;
        case '>':
            gl_out_str(o, "&gt;");
            break;
        case '"':
            gl_out_str(o, "&quot;");
            break;
        default: {
            /* Control characters are not allowed in XML 1.0 text, and the
             * document is UTF-8: other bytes become U+FFFD. */
            size_t n = gl_out_utf8_len(s);
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                gl_out_str(o, "?");
            else if (n == 0)
                gl_out_str(o, GL_UTF8_REPLACEMENT);
            else {
                gl_out_text(o, s, n);
                s += n - 1;
            }
        }
        }
    }
}

static void elem(struct gl_out *o, const char *indent, const char *tag, const char *text)
{
    gl_out_printf(o, "%s<%s>", indent, tag);
    esc(o, text);
    gl_out_printf(o, "</%s>\n", tag);
}

/* Valgrind's time: days:hours:minutes:seconds.milliseconds, and a space. */
static const char *time_text(char *buf, size_t len, double s)
{
    unsigned long ms = (unsigned long)(s * 1000.0 + 0.5);
    snprintf(buf, len, "%02lu:%02lu:%02lu:%02lu.%03lu ", ms / 86400000, ms / 3600000 % 24,
             ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
    return buf;
}

static void timestamp(struct gl_out *o, const char *state, double s)
{
    char t[64];
    gl_out_printf(o, "<status>\n  <state>%s</state>\n  <time>%s</time>\n</status>\n\n", state,
                  time_text(t, sizeof t, s));
}

/* Elements at a depth (levels of two spaces): text, a number, open and close. */
static void text_at(struct gl_out *o, unsigned depth, const char *tag, const char *text)
{
    char pad[64];
    snprintf(pad, sizeof pad, "%*s", (int)(2 * depth), "");
    elem(o, pad, tag, text);
}

static void num_at(struct gl_out *o, unsigned depth, const char *tag, uint64_t v)
{
    gl_out_printf(o, "%*s<%s>%" PRIu64 "</%s>\n", (int)(2 * depth), "", tag, v, tag);
}

static void open_at(struct gl_out *o, unsigned depth, const char *tag)
{
    gl_out_printf(o, "%*s<%s>\n", (int)(2 * depth), "", tag);
}

static void close_at(struct gl_out *o, unsigned depth, const char *tag)
{
    gl_out_printf(o, "%*s</%s>\n", (int)(2 * depth), "", tag);
}

/* A frame at depth (levels of two spaces): <frame> and its children. */
static void frame(struct gl_out *o, unsigned depth, const struct gl_frame *f)
{
    char pad[64], in[64];
    snprintf(pad, sizeof pad, "%*s", (int)(2 * depth), "");
    snprintf(in, sizeof in, "%*s", (int)(2 * depth + 2), "");
    gl_out_printf(o, "%s<frame>\n", pad);
    gl_out_printf(o, "%s<ip>0x%" PRIXPTR "</ip>\n", in, f->ip);
    if (f->object)
        elem(o, in, "obj", f->object);
    if (f->function)
        elem(o, in, "fn", f->function);
    if (f->file && f->line > 0) {
        const char *slash = strrchr(f->file, '/');
        if (slash) {
            char dir[1024];
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - f->file), f->file);
            elem(o, in, "dir", dir);
        }
        elem(o, in, "file", slash ? slash + 1 : f->file);
        gl_out_printf(o, "%s<line>%d</line>\n", in, f->line);
    }
    gl_out_printf(o, "%s</frame>\n", pad);
}

/* A generated suppression; error_kind GL_ERR_NONE for a leak of this kind. */
static void suppression(struct gl_out *o, const struct gl_frame *frames, unsigned n,
                        enum gl_leak_kind kind, enum gl_error_kind error_kind)
{
    gl_out_str(o, "  <suppression>\n");
    gl_out_str(o, "    <sname>insert_a_suppression_name_here</sname>\n");
    if (error_kind != GL_ERR_NONE) {
        gl_out_printf(o, "    <skind>" GL_SUPP_TOOL ":%s</skind>\n",
                      gl_error_kind_name(error_kind));
    } else {
        gl_out_str(o, "    <skind>" GL_SUPP_TOOL ":Leak</skind>\n");
        gl_out_printf(o, "    <skaux>match-leak-kinds: %s</skaux>\n",
                      gl_leak_kind_option_name(kind));
    }
    for (unsigned i = 0; i < n && i < GL_SUPP_MAX_FRAMES; i++) {
        const struct gl_frame *f = &frames[i];
        const char *fn = f->mangled ? f->mangled : f->function;
        gl_out_str(o, "    <sframe> ");
        if (fn) {
            gl_out_str(o, "<fun>");
            esc(o, fn);
            gl_out_str(o, "</fun>");
        } else {
            gl_out_str(o, "<obj>");
            esc(o, f->object ? f->object : "*");
            gl_out_str(o, "</obj>");
        }
        gl_out_str(o, " </sframe>\n");
    }
    size_t len;
    char *text = gl_suppressions_entry(frames, n, error_kind, kind, &len);
    /* CDATA cannot hold "]]>"; a suppression never contains it. */
    gl_out_str(o, "    <rawtext>\n<![CDATA[\n");
    gl_out_str(o, !text || strstr(text, "]]>") ? "" : text);
    free(text);
    gl_out_str(o, "]]>\n    </rawtext>\n  </suppression>\n");
}

/* A <stack> at depth (levels of two spaces).  A stack needs a frame: none is
 * written when none was recorded. */
static void stack(struct gl_out *o, unsigned depth, const struct gl_frame *frames, unsigned n)
{
    if (n == 0)
        return;
    gl_out_printf(o, "%*s<stack>\n", (int)(2 * depth), "");
    for (unsigned i = 0; i < n; i++)
        frame(o, depth + 1, &frames[i]);
    gl_out_printf(o, "%*s</stack>\n", (int)(2 * depth), "");
}

/* The stack of a depot id, as the loss records' stacks are written. */
static void stack_of(struct gl_out *o, const struct gl_report_input *in, unsigned depth,
                     uint32_t id)
{
    unsigned n;
    struct gl_frame *f =
        gl_report_frames_get(in->stack_frames, id, (unsigned)in->opt->num_callers, in->arg, &n);
    stack(o, depth, f, n);
    free(f);
}

static void error(struct gl_out *o, const struct gl_report_input *in,
                  const struct gl_loss_record *r, size_t index, unsigned unique)
{
    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(in->stack_frames, r->stack,
                                                   (unsigned)in->opt->num_callers, in->arg, &n);
    char bytes[GL_U64_COMMAS_LEN], blocks[GL_U64_COMMAS_LEN], num[GL_U64_COMMAS_LEN],
        of[GL_U64_COMMAS_LEN], text[512], block[1024];
    char split[2 * GL_U64_COMMAS_LEN + 32] = "";
    if (r->indirect_bytes) {
        char d[GL_U64_COMMAS_LEN], i[GL_U64_COMMAS_LEN];
        snprintf(split, sizeof split, " (%s direct, %s indirect)", gl_out_u64_commas(d, r->bytes),
                 gl_out_u64_commas(i, r->indirect_bytes));
    }
    snprintf(text, sizeof text, "%s%s bytes in %s blocks are %s in loss record %s of %s",
             gl_out_u64_commas(bytes, r->bytes + r->indirect_bytes), split,
             gl_out_u64_commas(blocks, r->blocks), gl_leak_kind_phrase(r->kind),
             gl_out_u64_commas(num, index), gl_out_u64_commas(of, in->leaks->nrecords));
    gl_report_text_block_text(in, r, gl_report_frames_api_called(frames, n, r->first.api), block,
                              sizeof block);

    gl_out_str(o, "<error>\n");
    gl_out_printf(o, "  <unique>0x%x</unique>\n", unique);
    gl_out_printf(o, "  <tid>%u</tid>\n", r->first.tid);
    gl_out_printf(o, "  <kind>%s</kind>\n", gl_report_xml_leak_kind(r->kind));
    gl_out_str(o, "  <xwhat>\n");
    elem(o, "    ", "text", text);
    gl_out_printf(o, "    <leakedbytes>%" PRIu64 "</leakedbytes>\n", r->bytes + r->indirect_bytes);
    gl_out_printf(o, "    <leakedblocks>%" PRIu64 "</leakedblocks>\n", r->blocks);
    gl_out_str(o, "  </xwhat>\n");
    /* Protocol 4: the error's stack comes right after its what; <auxwhat> after.
     * A stack needs a frame: none is written when none was recorded. */
    stack(o, 1, frames, n);
    elem(o, "  ", "auxwhat", block);
    if (in->opt->gen_suppressions == GL_GEN_SUPP_ALL && n > 0)
        suppression(o, frames, n, r->kind, GL_ERR_NONE);
    gl_out_str(o, "</error>\n\n");
    free(frames);
}

/* Valgrind's <fatal_signal>, when a signal ends the program. */
static void fatal_signal(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_termination *t = in->termination;
    if (!t || t->quick_exit)
        return;
    char buf[32];
    gl_out_printf(o, "<fatal_signal>\n  <tid>%u</tid>\n  <signo>%d</signo>\n", t->tid, t->signal);
    elem(o, "  ", "signame", gl_signals_name(t->signal, buf, sizeof buf));
    gl_out_printf(o, "  <sicode>%d</sicode>\n", t->si_code);
    if (t->si_code > 0 &&
        (t->signal == SIGSEGV || t->signal == SIGBUS || t->signal == SIGILL || t->signal == SIGFPE))
        gl_out_printf(o, "  <siaddr>0x%" PRIX64 "</siaddr>\n", t->fault_addr);
    unsigned n;
    struct gl_frame *f = gl_report_frames_get(in->stack_frames, t->stack,
                                              (unsigned)in->opt->num_callers, in->arg, &n);
    stack(o, 1, f, n);
    free(f);
    gl_out_str(o, "</fatal_signal>\n\n");
}

/* An API error context, as Valgrind writes memcheck's errors: what, the stack,
 * then each auxwhat with its stack. */
static void api_error(struct gl_out *o, const struct gl_report_input *in,
                      const struct gl_error_context *c, unsigned unique)
{
    struct gl_error_services svc;
    gl_report_text_error_services(in, &svc);
    struct gl_error_text t;
    gl_report_errors_describe(&c->first, &svc, &t);
    unsigned n;
    struct gl_frame *frames =
        gl_report_frames_get(in->stack_frames, c->first.stack, svc.num_callers, in->arg, &n);
    gl_out_str(o, "<error>\n");
    gl_out_printf(o, "  <unique>0x%x</unique>\n", unique);
    gl_out_printf(o, "  <tid>%u</tid>\n", c->first.tid);
    gl_out_printf(o, "  <kind>%s</kind>\n", gl_error_kind_name(c->first.kind));
    elem(o, "  ", "what", t.what);
    stack(o, 1, frames, n);
    for (int i = 0; i < 2; i++) {
        if (!t.aux[i][0])
            continue;
        elem(o, "  ", "auxwhat", t.aux[i]);
        unsigned na;
        struct gl_frame *aux =
            gl_report_frames_get(in->stack_frames, t.aux_stack[i], svc.num_callers, in->arg, &na);
        stack(o, 1, aux, na);
        free(aux);
    }
    if (in->opt->gen_suppressions == GL_GEN_SUPP_ALL && n > 0)
        suppression(o, frames, n, GL_LEAK_DEFINITE, (enum gl_error_kind)c->first.kind);
    gl_out_str(o, "</error>\n\n");
    free(frames);
}

static void pair(struct gl_out *o, uint64_t count, unsigned unique)
{
    gl_out_printf(
        o, "  <pair>\n    <count>%" PRIu64 "</count>\n    <unique>0x%x</unique>\n  </pair>\n",
        count, unique);
}

/* ---- gpuleak's own elements, after Valgrind's ----
 *
 * Top-level elements that protocol 4 does not have, after <suppcounts>:
 * Valgrind's readers look for the elements they know and skip the others,
 * and a reader of the stream has had all of Valgrind's by then.  Named and
 * nested as Valgrind names its own (lowercase words run together, numbers as
 * text, stacks as in <error>); doc/manual.md lists them. */

static void stat_counts(struct gl_out *o, unsigned depth, const struct gl_stat_counts *c)
{
    num_at(o, depth, "currentbytes", c->cur_bytes);
    num_at(o, depth, "currentblocks", c->cur_blocks);
    num_at(o, depth, "peakbytes", c->peak_bytes);
    num_at(o, depth, "peakblocks", c->peak_blocks);
    num_at(o, depth, "allocatedbytes", c->alloc_bytes);
    num_at(o, depth, "allocatedblocks", c->alloc_blocks);
    num_at(o, depth, "freedbytes", c->freed_bytes);
    num_at(o, depth, "freedblocks", c->freed_blocks);
}

/* GPU MEMORY SUMMARY's groups: always, as the text always prints them (the
 * counters are kept whatever the options); with --stats=yes each memory kind
 * also has GPU MEMORY STATISTICS's small and large splits. */
static void usage(struct gl_out *o, const struct gl_report_input *in)
{
    static const char *const split_name[GL_NSPLITS] = {"small", "large", "all"};
    const struct gl_usage *u = in->usage;
    if (!u)
        return;
    gl_out_str(o, "<usage>\n");
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        if (!u->used[sl])
            continue;
        const struct gl_stat_device *d = &u->dev[sl];
        const char *tag = sl == GL_STATS_SLOT_HOST    ? "host"
                          : sl == GL_STATS_SLOT_OTHER ? "otherdevices"
                                                      : "device";
        open_at(o, 1, tag);
        if (sl < GL_STATS_DEVICES) {
            num_at(o, 2, "ordinal", sl);
            const char *name = in->device_name ? in->device_name((int)sl, in->arg) : NULL;
            if (name)
                text_at(o, 2, "name", name);
        }
        num_at(o, 2, "inusebytes", d->cur_bytes);
        num_at(o, 2, "peakbytes", d->peak_bytes);
        if (d->peak_bytes) {
            num_at(o, 2, "peakallocation", d->peak_seq);
            stack_of(o, in, 2, d->peak_stack);
        }
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_group *g = &u->grp[sl][k];
            if (!g->split[GL_SPLIT_ALL].alloc_blocks && !g->failed)
                continue;
            open_at(o, 2, "memkind");
            text_at(o, 3, "name", gl_mem_kind_name(k));
            stat_counts(o, 3, &g->split[GL_SPLIT_ALL]);
            num_at(o, 3, "failedallocs", g->failed);
            num_at(o, 3, "failedbytes", g->failed_bytes);
            for (int sp = 0; in->opt->stats && sp < GL_SPLIT_ALL; sp++) {
                open_at(o, 3, "split");
                text_at(o, 4, "name", split_name[sp]);
                stat_counts(o, 4, &g->split[sp]);
                close_at(o, 3, "split");
            }
            close_at(o, 2, "memkind");
        }
        close_at(o, 1, tag);
    }
    gl_out_str(o, "</usage>\n\n");
}

/* --stats=yes: the allocation sites that held the most at one time. */
static void stats(struct gl_out *o, const struct gl_report_input *in)
{
    if (!in->opt->stats || !in->usage)
        return;
    gl_out_str(o, "<stats>\n");
    num_at(o, 1, "smalllimit", GL_STATS_SMALL_LIMIT);
    for (size_t i = 0; i < in->ntop_sites; i++) {
        const struct gl_site_stats *site = &in->top_sites[i];
        open_at(o, 1, "site");
        num_at(o, 2, "peakbytes", site->peak_bytes);
        num_at(o, 2, "livebytes", site->live_bytes);
        num_at(o, 2, "liveblocks", site->live_blocks);
        stack_of(o, in, 2, site->stack);
        close_at(o, 1, "site");
    }
    gl_out_str(o, "</stats>\n\n");
}

/* Bytes and blocks, and a delta check's reference's. */
static void totals_at(struct gl_out *o, unsigned depth, const char *tag,
                      const struct gl_leak_totals *t, const struct gl_leak_totals *before)
{
    open_at(o, depth, tag);
    num_at(o, depth + 1, "bytes", t->bytes);
    num_at(o, depth + 1, "blocks", t->blocks);
    if (before) {
        num_at(o, depth + 1, "beforebytes", before->bytes);
        num_at(o, depth + 1, "beforeblocks", before->blocks);
    }
    close_at(o, depth, tag);
}

static void check_record(struct gl_out *o, const struct gl_report_input *in,
                         const struct gl_report_check *c, const struct gl_report_check_record *r)
{
    open_at(o, 2, "record");
    text_at(o, 3, "kind", gl_report_xml_leak_kind((enum gl_leak_kind)r->kind));
    if (r->is_new)
        gl_out_str(o, "      <isnew/>\n");
    if (r->error)
        gl_out_str(o, "      <iserror/>\n");
    open_at(o, 3, "xwhat");
    text_at(o, 4, "text", r->title);
    num_at(o, 4, "leakedbytes", r->bytes + r->indirect_bytes);
    num_at(o, 4, "leakedblocks", r->blocks);
    close_at(o, 3, "xwhat");
    if (c->delta) {
        num_at(o, 3, "beforebytes", r->before_bytes);
        num_at(o, 3, "beforeblocks", r->before_blocks);
    }
    stack_of(o, in, 3, r->stack);
    text_at(o, 3, "auxwhat", r->text);
    close_at(o, 2, "record");
}

static void leak_check(struct gl_out *o, const struct gl_report_input *in,
                       const struct gl_report_check *c)
{
    char t[64];
    open_at(o, 1, "leakcheck");
    num_at(o, 2, "number", c->number);
    text_at(o, 2, "mode", gl_report_text_select_name(c->select));
    if (c->since[0]) {
        text_at(o, 2, "since", c->since);
        num_at(o, 2, "sinceallocation", c->since_seq);
    }
    text_at(o, 2, "output", c->to_buffer ? "buffer" : "log");
    text_at(o, 2, "time", time_text(t, sizeof t, c->elapsed_s));
    num_at(o, 2, "allocations", c->allocs);
    num_at(o, 2, "errors", c->errors);
    num_at(o, 2, "inusebytes", c->in_use.bytes);
    num_at(o, 2, "inuseblocks", c->in_use.blocks);
    open_at(o, 2, "leaksummary");
    for (int k = 0; k < GL_LEAK_NKINDS; k++) {
        /* As LEAK SUMMARY: live at death only where there is some. */
        if (k == GL_LEAK_DEATH && !c->kind[k].blocks && !(c->delta && c->before_kind[k].blocks))
            continue;
        open_at(o, 3, "leak");
        text_at(o, 4, "kind", gl_report_xml_leak_kind((enum gl_leak_kind)k));
        num_at(o, 4, "bytes", c->kind[k].bytes);
        num_at(o, 4, "blocks", c->kind[k].blocks);
        if (c->delta) {
            num_at(o, 4, "beforebytes", c->before_kind[k].bytes);
            num_at(o, 4, "beforeblocks", c->before_kind[k].blocks);
        }
        close_at(o, 3, "leak");
    }
    totals_at(o, 3, "suppressed", &c->suppressed, c->delta ? &c->before_suppressed : NULL);
    if (c->ignored.blocks)
        totals_at(o, 3, "ignored", &c->ignored, NULL);
    close_at(o, 2, "leaksummary");
    num_at(o, 2, "totalrecords", c->nrecords);
    num_at(o, 2, "printedrecords", c->printed);
    for (size_t i = 0; i < c->nkept; i++)
        check_record(o, in, c, &c->records[i]);
    close_at(o, 1, "leakcheck");
}

/* The checks the program asked for, in order, as kept (lib/check_history.h). */
static void leak_checks(struct gl_out *o, const struct gl_report_input *in)
{
    if (!in->nchecks && !in->checks_dropped)
        return;
    gl_out_str(o, "<leakchecks>\n");
    num_at(o, 1, "dropped", in->checks_dropped);
    for (size_t i = 0; i < in->nchecks; i++)
        leak_check(o, in, &in->checks[i]);
    gl_out_str(o, "</leakchecks>\n\n");
}

/* Each Growth error of the <error>s, its figures apart: the site, the
 * checkpoints it grew through and its sizes before and after. */
static void growth(struct gl_out *o, const struct gl_report_input *in)
{
    bool any = false;
    unsigned unique = 0; /* as gl_report_xml numbers the API errors */
    for (size_t i = 0; i < in->napi_contexts; i++) {
        const struct gl_error_context *c = &in->api_contexts[i];
        if (c->suppressed_by)
            continue;
        unsigned u = unique++;
        const struct gl_api_error *e = &c->first;
        if (e->kind != GL_ERR_GROWTH)
            continue;
        if (!any)
            gl_out_str(o, "<growth>\n");
        any = true;
        struct gl_error_services svc;
        gl_report_text_error_services(in, &svc);
        struct gl_error_text t;
        gl_report_errors_describe(e, &svc, &t);
        uint32_t k = e->growth.checkpoints, at = e->growth.ordinal;
        open_at(o, 1, "site");
        gl_out_printf(o, "    <unique>0x%x</unique>\n", u);
        text_at(o, 2, "checkpoint", e->growth.checkpoint);
        num_at(o, 2, "checkpointnumber", at);
        num_at(o, 2, "fromcheckpointnumber", at >= k ? at - k : 0);
        num_at(o, 2, "checkpoints", k);
        num_at(o, 2, "bytes", e->size);
        num_at(o, 2, "blocks", e->growth.blocks);
        num_at(o, 2, "frombytes", e->growth.from_bytes);
        num_at(o, 2, "fromblocks", e->growth.from_blocks);
        text_at(o, 2, "unit", gl_report_errors_growth_unit(e));
        if (e->growth.framework != GL_FW_NONE)
            text_at(o, 2, "framework", gl_framework_name((enum gl_framework)e->growth.framework));
        text_at(o, 2, "what", t.what);
        stack_of(o, in, 2, e->stack);
        close_at(o, 1, "site");
    }
    if (any)
        gl_out_str(o, "</growth>\n\n");
}

void gl_report_xml(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_options *opt = in->opt;
    gl_out_str(o, "<?xml version=\"1.0\"?>\n\n<valgrindoutput>\n\n");
    gl_out_str(o, "<protocolversion>4</protocolversion>\n<protocoltool>gpuleak</protocoltool>\n\n");
    gl_out_str(o, "<preamble>\n");
    char line[512];
    snprintf(line, sizeof line, "gpuleak-%s, a GPU memory leak detector", in->tool_version);
    elem(o, "  ", "line", line);
    snprintf(line, sizeof line, "Command: %s", in->command);
    elem(o, "  ", "line", line);
    if (in->note)
        elem(o, "  ", "line", in->note);
    gl_out_str(o, "</preamble>\n\n");
    gl_out_printf(o, "<pid>%d</pid>\n<ppid>%d</ppid>\n<tool>gpuleak</tool>\n\n", in->pid, in->ppid);

    gl_out_str(o, "<args>\n  <vargv>\n    <exe>gpuleak</exe>\n");
    for (int i = 0; i < in->tool_argc; i++)
        elem(o, "    ", "arg", in->tool_argv[i]);
    gl_out_str(o, "  </vargv>\n  <argv>\n");
    for (int i = 0; i < in->argc; i++)
        elem(o, "    ", i == 0 ? "exe" : "arg", in->argv[i]);
    gl_out_str(o, "  </argv>\n</args>\n\n");

    timestamp(o, "RUNNING", 0);
    fatal_signal(o, in);
    timestamp(o, "FINISHED", in->elapsed_s);

    /* API errors first, as they happened (suppressed ones are counted apart,
     * in suppcounts), then the records the text report shows, in its order. */
    unsigned unique = 0;
    for (size_t i = 0; i < in->napi_contexts; i++)
        if (!in->api_contexts[i].suppressed_by)
            api_error(o, in, &in->api_contexts[i], unique++);
    const struct gl_leak_result *lr = in->leaks;
    if (opt->leak_check == GL_LEAK_CHECK_FULL)
        for (size_t i = 0; i < lr->nrecords; i++) {
            const struct gl_loss_record *r = &lr->records[i];
            if (r->suppressed_by || !(opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind)))
                continue;
            if (opt->quiet && !gl_report_text_is_error(opt, r))
                continue;
            error(o, in, r, i + 1, unique++);
            if (opt->exit_on_first_error && gl_report_text_is_error(opt, r))
                break;
        }

    gl_out_str(o, "<errorcounts>\n");
    unsigned u = 0;
    for (size_t i = 0; i < in->napi_contexts; i++) /* an API context counts its errors */
        if (!in->api_contexts[i].suppressed_by)
            pair(o, in->api_contexts[i].count, u++);
    for (; u < unique; u++) /* a loss record is one error */
        pair(o, 1, u);
    gl_out_str(o, "</errorcounts>\n\n<suppcounts>\n");
    if (in->supps)
        for (size_t i = 0; i < in->supps->n; i++) {
            const struct gl_supp *e = &in->supps->v[i];
            if (!e->count)
                continue;
            gl_out_printf(o, "  <pair>\n    <count>%" PRIu64 "</count>\n", e->count);
            elem(o, "    ", "name", e->name);
            gl_out_str(o, "  </pair>\n");
        }
    gl_out_str(o, "</suppcounts>\n\n");
    usage(o, in);
    stats(o, in);
    leak_checks(o, in);
    growth(o, in);
    gl_out_str(o, "</valgrindoutput>\n\n");
}
