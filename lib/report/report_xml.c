#include "report_xml.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "track/api.h"

const char *gl_xml_leak_kind(enum gl_leak_kind k)
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
    default:
        return "Leak_Unknown";
    }
}

static void raw(struct gl_out *o, const char *s) { gl_out_text(o, s, strlen(s)); }

static void rawf(struct gl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rawf(struct gl_out *o, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        gl_out_text(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Text escaped for XML character data. */
static void esc(struct gl_out *o, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            raw(o, "&amp;");
            break;
        case '<':
            raw(o, "&lt;");
            break;
        case '>':
            raw(o, "&gt;");
            break;
        case '"':
            raw(o, "&quot;");
            break;
        default: {
            /* Control characters are not allowed in XML 1.0 text, and the
             * document is UTF-8: other bytes become U+FFFD. */
            size_t n = gl_utf8_seq_len(s);
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                raw(o, "?");
            else if (n == 0)
                raw(o, GL_UTF8_REPLACEMENT);
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
    rawf(o, "%s<%s>", indent, tag);
    esc(o, text);
    rawf(o, "</%s>\n", tag);
}

static void timestamp(struct gl_out *o, const char *state, double s)
{
    unsigned long ms = (unsigned long)(s * 1000.0 + 0.5);
    rawf(o, "<status>\n  <state>%s</state>\n  <time>%02lu:%02lu:%02lu:%02lu.%03lu </time>\n"
            "</status>\n\n",
         state, ms / 86400000, ms / 3600000 % 24, ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
}

static void frame(struct gl_out *o, const struct gl_frame *f)
{
    raw(o, "    <frame>\n");
    rawf(o, "      <ip>0x%" PRIXPTR "</ip>\n", f->ip);
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
        rawf(o, "      <line>%d</line>\n", f->line);
    }
    raw(o, "    </frame>\n");
}

static void suppression(struct gl_out *o, const struct gl_frame *frames, unsigned n,
                        enum gl_leak_kind kind)
{
    raw(o, "  <suppression>\n");
    raw(o, "    <sname>insert_a_suppression_name_here</sname>\n");
    raw(o, "    <skind>" GL_SUPP_TOOL ":Leak</skind>\n");
    rawf(o, "    <skaux>match-leak-kinds: %s</skaux>\n", gl_leak_kind_option_name(kind));
    for (unsigned i = 0; i < n && i < GL_SUPP_MAX_FRAMES; i++) {
        const struct gl_frame *f = &frames[i];
        const char *fn = f->mangled ? f->mangled : f->function;
        raw(o, "    <sframe> ");
        if (fn) {
            raw(o, "<fun>");
            esc(o, fn);
            raw(o, "</fun>");
        } else {
            raw(o, "<obj>");
            esc(o, f->object ? f->object : "*");
            raw(o, "</obj>");
        }
        raw(o, " </sframe>\n");
    }
    char text[8192];
    size_t len = gl_supp_generate(text, sizeof text, frames, n, kind);
    if (len >= sizeof text)
        len = sizeof text - 1;
    text[len] = '\0';
    /* CDATA cannot hold "]]>"; a suppression never contains it. */
    raw(o, "    <rawtext>\n<![CDATA[\n");
    raw(o, strstr(text, "]]>") ? "" : text);
    raw(o, "]]>\n    </rawtext>\n  </suppression>\n");
}

static void error(struct gl_out *o, const struct gl_report_input *in,
                  const struct gl_loss_record *r, size_t index, unsigned unique)
{
    struct gl_frame frames[GL_MAX_CALLERS];
    unsigned n = in->stack_frames ? in->stack_frames(r->stack, frames,
                                                     (unsigned)in->opt->num_callers, in->arg)
                                  : 0;
    char bytes[GL_U64_COMMAS_LEN], blocks[GL_U64_COMMAS_LEN], num[GL_U64_COMMAS_LEN],
        of[GL_U64_COMMAS_LEN], text[512], block[1024];
    snprintf(text, sizeof text, "%s bytes in %s blocks are %s in loss record %s of %s",
             gl_fmt_u64_commas(bytes, r->bytes), gl_fmt_u64_commas(blocks, r->blocks),
             gl_leak_kind_phrase(r->kind), gl_fmt_u64_commas(num, index),
             gl_fmt_u64_commas(of, in->leaks->nrecords));
    gl_report_block_text(in, r, gl_report_api_called(&frames[0], n, r->first.api), block,
                         sizeof block);

    raw(o, "<error>\n");
    rawf(o, "  <unique>0x%x</unique>\n", unique);
    rawf(o, "  <tid>%u</tid>\n", r->first.tid);
    rawf(o, "  <kind>%s</kind>\n", gl_xml_leak_kind(r->kind));
    raw(o, "  <xwhat>\n");
    elem(o, "    ", "text", text);
    rawf(o, "    <leakedbytes>%" PRIu64 "</leakedbytes>\n", r->bytes);
    rawf(o, "    <leakedblocks>%" PRIu64 "</leakedblocks>\n", r->blocks);
    raw(o, "  </xwhat>\n");
    /* Protocol 4: the error's stack comes right after its what; <auxwhat> after.
     * A stack needs a frame: none is written when none was recorded. */
    if (n > 0) {
        raw(o, "  <stack>\n");
        for (unsigned i = 0; i < n; i++)
            frame(o, &frames[i]);
        raw(o, "  </stack>\n");
    }
    elem(o, "  ", "auxwhat", block);
    if (in->opt->gen_suppressions == GL_GEN_SUPP_ALL && n > 0)
        suppression(o, frames, n, r->kind);
    raw(o, "</error>\n\n");
}

void gl_report_xml(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_options *opt = in->opt;
    raw(o, "<?xml version=\"1.0\"?>\n\n<valgrindoutput>\n\n");
    raw(o, "<protocolversion>4</protocolversion>\n<protocoltool>gpuleak</protocoltool>\n\n");
    raw(o, "<preamble>\n");
    char line[512];
    snprintf(line, sizeof line, "gpuleak-%s, a GPU memory leak detector", in->tool_version);
    elem(o, "  ", "line", line);
    snprintf(line, sizeof line, "Command: %s", in->command);
    elem(o, "  ", "line", line);
    raw(o, "</preamble>\n\n");
    rawf(o, "<pid>%d</pid>\n<ppid>%d</ppid>\n<tool>gpuleak</tool>\n\n", in->pid, in->ppid);

    raw(o, "<args>\n  <vargv>\n    <exe>gpuleak</exe>\n");
    for (int i = 0; i < in->tool_argc; i++)
        elem(o, "    ", "arg", in->tool_argv[i]);
    raw(o, "  </vargv>\n  <argv>\n");
    for (int i = 0; i < in->argc; i++)
        elem(o, "    ", i == 0 ? "exe" : "arg", in->argv[i]);
    raw(o, "  </argv>\n</args>\n\n");

    timestamp(o, "RUNNING", 0);
    timestamp(o, "FINISHED", in->elapsed_s);

    /* The records the text report shows, as errors in the same order. */
    unsigned unique = 0;
    const struct gl_leak_result *lr = in->leaks;
    if (opt->leak_check == GL_LEAK_CHECK_FULL)
        for (size_t i = 0; i < lr->nrecords; i++) {
            const struct gl_loss_record *r = &lr->records[i];
            if (r->suppressed_by || !(opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind)))
                continue;
            if (opt->quiet && !gl_report_is_error(opt, r))
                continue;
            error(o, in, r, i + 1, unique++);
            if (opt->exit_on_first_error && gl_report_is_error(opt, r))
                break;
        }

    raw(o, "<errorcounts>\n");
    for (unsigned u = 0; u < unique; u++)
        rawf(o, "  <pair>\n    <count>1</count>\n    <unique>0x%x</unique>\n  </pair>\n", u);
    raw(o, "</errorcounts>\n\n<suppcounts>\n");
    if (in->supps)
        for (size_t i = 0; i < in->supps->n; i++) {
            const struct gl_supp *e = &in->supps->v[i];
            if (!e->count)
                continue;
            rawf(o, "  <pair>\n    <count>%" PRIu64 "</count>\n", e->count);
            elem(o, "    ", "name", e->name);
            raw(o, "  </pair>\n");
        }
    raw(o, "</suppcounts>\n\n</valgrindoutput>\n\n");
}
