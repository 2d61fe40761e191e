/* SPDX-License-Identifier: MIT */
#include "report/report_xml.h"

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_kind.h"
#include "common/signals.h"
#include "common/suppressions.h"
#include "event/api.h"
#include "report/report_frames.h"
#include "report/report_text.h"

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

static void timestamp(struct gl_out *o, const char *state, double s)
{
    unsigned long ms = (unsigned long)(s * 1000.0 + 0.5);
    gl_out_printf(o,
                  "<status>\n  <state>%s</state>\n  <time>%02lu:%02lu:%02lu:%02lu.%03lu </time>\n"
                  "</status>\n\n",
                  state, ms / 86400000, ms / 3600000 % 24, ms / 60000 % 60, ms / 1000 % 60,
                  ms % 1000);
}

static void frame(struct gl_out *o, const struct gl_frame *f)
{
    gl_out_str(o, "    <frame>\n");
    gl_out_printf(o, "      <ip>0x%" PRIXPTR "</ip>\n", f->ip);
    if (f->object)
        elem(o, "      ", "obj", f->object);
    if (f->function)
        elem(o, "      ", "fn", f->function);
    if (f->file && f->line > 0) {
        const char *slash = strrchr(f->file, '/');
        if (slash) {
            char dir[1024];
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - f->file), f->file);
            elem(o, "      ", "dir", dir);
        }
        elem(o, "      ", "file", slash ? slash + 1 : f->file);
        gl_out_printf(o, "      <line>%d</line>\n", f->line);
    }
    gl_out_str(o, "    </frame>\n");
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
    if (n > 0) {
        gl_out_str(o, "  <stack>\n");
        for (unsigned i = 0; i < n; i++)
            frame(o, &frames[i]);
        gl_out_str(o, "  </stack>\n");
    }
    elem(o, "  ", "auxwhat", block);
    if (in->opt->gen_suppressions == GL_GEN_SUPP_ALL && n > 0)
        suppression(o, frames, n, r->kind, GL_ERR_NONE);
    gl_out_str(o, "</error>\n\n");
    free(frames);
}

static void stack(struct gl_out *o, const struct gl_frame *frames, unsigned n)
{
    if (n == 0) /* a stack needs a frame: none is written when none was recorded */
        return;
    gl_out_str(o, "  <stack>\n");
    for (unsigned i = 0; i < n; i++)
        frame(o, &frames[i]);
    gl_out_str(o, "  </stack>\n");
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
    stack(o, f, n);
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
    stack(o, frames, n);
    for (int i = 0; i < 2; i++) {
        if (!t.aux[i][0])
            continue;
        elem(o, "  ", "auxwhat", t.aux[i]);
        unsigned na;
        struct gl_frame *aux =
            gl_report_frames_get(in->stack_frames, t.aux_stack[i], svc.num_callers, in->arg, &na);
        stack(o, aux, na);
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
    gl_out_str(o, "</suppcounts>\n\n</valgrindoutput>\n\n");
}
