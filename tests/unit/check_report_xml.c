/* SPDX-License-Identifier: MIT */
/* lib/report/report_xml.h: the report in Valgrind's XML format, protocol 4.
 *
 * Each document is written to a file and read back with xmllint (Debian package
 * libxml2-utils): it must be well-formed, its elements where protocol 4 puts
 * them (docs/internals/xml-output-protocol4.txt in Valgrind's sources), and its
 * values, unescaped by the XML parser, the ones that went in. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/leak_check.h"
#include "check/suppress.h"
#include "common/suppressions.h"
#include "report/report_xml.h"
#include "testutil.h"
#include "common/util.h"
#include "event/api.h"
#include "track/errors.h"
#include "event/event.h"

#define PID 4242

/* ---- fakes ---- */

static const char *fake_device_name(int device, void *arg)
{
    (void)arg;
    return device == 0 ? "NVIDIA H200" : NULL;
}

enum { STACK_NONE = 0, STACK_MALLOC = 1, STACK_SMALL = 2, STACK_NASTY = 3, STACK_LATIN1 = 4 };

static const struct gl_frame malloc_frames[] = {
    {0x55ed7b831993, "cudaMalloc", NULL, 0, "/work/app", NULL},
    {0x55ed7b7edbe4, "make_buffer(unsigned long)", "/src/app/app.cu", 8, "/work/app",
     "_Z11make_bufferm"},
    {0x7f12aa001000, NULL, NULL, 0, NULL, NULL},
    {0x55ed7b7edd26, "main", "app.cu", 19, "/work/app", NULL},
};
static const struct gl_frame small_frames[] = {
    {0x401500, "cudaMalloc", NULL, 0, "/work/app", NULL},
};
static const struct gl_frame nasty_frames[] = {
    {0x401600, "operator<<(std::ostream&, Foo<int> const&)", "/src/a&b/<gen>.cc", 3,
     "/work/R&D/<app>", NULL},
    {0x401700, "say \"hi\" 'there'", NULL, 0, "/work/app", NULL},
};
static const struct gl_frame latin1_frames[] = {
    {0x401800, "f", NULL, 0, "/opt/caf\xe9/libx.so", NULL},
};

static unsigned fake_stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    const struct gl_frame *f;
    unsigned n;
    switch (stack) {
    case STACK_MALLOC:
        f = malloc_frames;
        n = 4;
        break;
    case STACK_SMALL:
        f = small_frames;
        n = 1;
        break;
    case STACK_NASTY:
        f = nasty_frames;
        n = 2;
        break;
    case STACK_LATIN1:
        f = latin1_frames;
        n = 1;
        break;
    default:
        return 0;
    }
    if (n > max)
        n = max;
    memcpy(out, f, n * sizeof *f);
    return n;
}

/* ---- building the input ---- */

static struct gl_options opt;
static struct gl_leak_result lr;
static struct gl_loss_record recs[16];
static struct gl_counters_totals st;
static struct gl_report_input in;
static struct gl_supp_set supps;
static char path[4096]; /* the document, once rendered */
static const char *const prog_argv[] = {"./app", "--size", "1M"};
static const char *const tool_argv[] = {"--leak-check=full", "--xml=yes", "--xml-file=out.xml"};

static void setup(void)
{
    gl_options_defaults(&opt);
    memset(&lr, 0, sizeof lr);
    memset(recs, 0, sizeof recs);
    memset(&st, 0, sizeof st);
    gl_suppressions_set_init(&supps);
    lr.records = recs;
    path[0] = '\0';
    in = (struct gl_report_input){
        .opt = &opt,
        .tool_version = "0.1.0",
        .command = "./app --size 1M",
        .leaks = &lr,
        .stats = &st,
        .main_tid = PID,
        .pid = PID,
        .ppid = 4000,
        .elapsed_s = 3723.004,
        .argc = 3,
        .argv = prog_argv,
        .tool_argc = 3,
        .tool_argv = tool_argv,
        .device_name = fake_device_name,
        .stack_frames = fake_stack_frames,
        .arg = NULL,
    };
}

static void teardown(void)
{
    gl_suppressions_set_free(&supps);
    if (path[0])
        unlink(path);
}

static struct gl_loss_record *add_record(enum gl_leak_kind kind, uint32_t stack, uint64_t bytes,
                                         uint64_t blocks, uint64_t seq)
{
    struct gl_loss_record *r = &recs[lr.nrecords++];
    r->kind = kind;
    r->stack = stack;
    r->bytes = bytes;
    r->blocks = blocks;
    r->seq_min = seq;
    r->seq_max = seq + blocks - 1;
    r->devices = 1;
    r->first.key = 0x7f0000000000 + seq * 0x100000;
    r->first.size = bytes / blocks;
    r->first.seq = seq;
    r->first.kind = GL_MEM_DEVICE;
    r->first.api = GL_API_cuMemAlloc_v2;
    r->first.device = 0;
    r->first.tid = PID;
    r->first.stack = stack;
    lr.kind[kind].bytes += bytes;
    lr.kind[kind].blocks += blocks;
    lr.in_use.bytes += bytes;
    lr.in_use.blocks += blocks;
    return r;
}

static void suppress(const char *text)
{
    char err[512];
    int rc = gl_suppressions_load_text(&supps, text, strlen(text), "s.supp", err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    in.supps = &supps;
    gl_suppress_records(&lr, &supps, fake_stack_frames, NULL);
}

/* Write the document to a file of its own (path); returns its text (caller frees). */
static char *render(void)
{
    if (path[0])
        unlink(path);
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpuleak-xml-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    struct gl_out o;
    gl_out_init(&o, fd, PID);
    gl_report_xml(&o, &in);
    ck_assert(gl_out_flush(&o));
    char *text = tu_slurp(fd, NULL);
    close(fd);
    return text;
}

/* xmllint --noout: well-formed, or fail with what xmllint said. */
static void assert_well_formed(void)
{
    char cmd[16384], errpath[4200];
    snprintf(errpath, sizeof errpath, "%s.err", path);
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>'%s'", path, errpath);
    int rc = system(cmd);
    char msg[2048] = "";
    FILE *f = fopen(errpath, "r");
    if (f) {
        size_t n = fread(msg, 1, sizeof msg - 1, f);
        msg[n] = '\0';
        fclose(f);
    }
    unlink(errpath);
    ck_assert_msg(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) != 127,
                  "cannot run xmllint (install the Debian package libxml2-utils)");
    ck_assert_msg(rc == 0, "xmllint rejects the document:\n%s", msg);
}

/* The result of an XPath expression (no single quotes in it), trailing newline cut. */
static const char *xpath(const char *expr)
{
    static char out[8192];
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "xmllint --xpath '%s' '%s' 2>/dev/null", expr, path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    if (n > 0 && out[n - 1] == '\n')
        out[n - 1] = '\0';
    return out;
}

#define XPATH_EQ(expr, want)                                                                       \
    do {                                                                                           \
        const char *got_ = xpath(expr);                                                            \
        ck_assert_msg(strcmp(got_, want) == 0, "%s\n  got:  \"%s\"\n  want: \"%s\"", expr, got_,   \
                      want);                                                                       \
    } while (0)

/* The names of an element's children, space-separated, from XPath name(). */
static void assert_children(const char *parent, const char *const *names, size_t n)
{
    char expr[512];
    snprintf(expr, sizeof expr, "count(%s/*)", parent);
    char want[16];
    snprintf(want, sizeof want, "%zu", n);
    XPATH_EQ(expr, want);
    for (size_t i = 0; i < n; i++) {
        snprintf(expr, sizeof expr, "name(%s/*[%zu])", parent, i + 1);
        XPATH_EQ(expr, names[i]);
    }
}

static void standard_records(void)
{
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 11);
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 64, 2, 12); /* not shown by default */
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 4096, 3, 20);
    st.allocs = 30;
    st.frees = 5;
}

/* ---- the document ---- */

/* Valgrind's <fatal_signal>, before FINISHED; none for _exit. */
START_TEST(test_fatal_signal)
{
    standard_records();
    struct gl_termination t = {.signal = 6, .si_code = -6, .stack = STACK_SMALL, .tid = 9};
    in.termination = &t;
    char *text = render();
    assert_well_formed();
    static const char *const top[] = {
        "protocolversion",
        "protocoltool",
        "preamble",
        "pid",
        "ppid",
        "tool",
        "args",
        "status",
        "fatal_signal",
        "status",
        "error",
        "error",
        "errorcounts",
        "suppcounts",
    };
    assert_children("/valgrindoutput", top, GL_ARRAY_SIZE(top));
    XPATH_EQ("string(/valgrindoutput/fatal_signal/signo)", "6");
    XPATH_EQ("string(/valgrindoutput/fatal_signal/signame)", "SIGABRT");
    XPATH_EQ("string(/valgrindoutput/fatal_signal/tid)", "9");
    XPATH_EQ("string(count(/valgrindoutput/fatal_signal/siaddr))", "0"); /* sent, not a fault */
    XPATH_EQ("string(count(/valgrindoutput/fatal_signal/stack/frame) > 0)", "true");
    free(text);
    t = (struct gl_termination){.quick_exit = true, .exit_status = 3};
    text = render();
    XPATH_EQ("string(count(/valgrindoutput/fatal_signal))", "0");
    free(text);
    in.termination = NULL;
}
END_TEST

START_TEST(test_well_formed_and_top_level_order)
{
    standard_records();
    char *text = render();
    assert_well_formed();
    ck_assert_msg(strncmp(text, "<?xml version=\"1.0\"?>\n", 22) == 0, "first line: %.40s", text);
    /* Protocol 4's sequence: the leak check's errors come after FINISHED. */
    static const char *const top[] = {
        "protocolversion", "protocoltool", "preamble", "pid",   "ppid",        "tool",       "args",
        "status",          "status",       "error",    "error", "errorcounts", "suppcounts",
    };
    assert_children("/valgrindoutput", top, GL_ARRAY_SIZE(top));
    XPATH_EQ("string(/valgrindoutput/protocolversion)", "4");
    XPATH_EQ("string(/valgrindoutput/protocoltool)", "gpuleak");
    XPATH_EQ("string(/valgrindoutput/tool)", "gpuleak");
    XPATH_EQ("string(/valgrindoutput/pid)", "4242");
    XPATH_EQ("string(/valgrindoutput/ppid)", "4000");
    XPATH_EQ("string(/valgrindoutput/preamble/line[1])",
             "gpuleak-0.1.0, a GPU memory leak detector");
    XPATH_EQ("string(/valgrindoutput/preamble/line[2])", "Command: ./app --size 1M");
    XPATH_EQ("string(/valgrindoutput/status[1]/state)", "RUNNING");
    XPATH_EQ("string(/valgrindoutput/status[2]/state)", "FINISHED");
    /* Valgrind's time format: days:hours:minutes:seconds.milliseconds. */
    XPATH_EQ("string(/valgrindoutput/status[1]/time)", "00:00:00:00.000 ");
    XPATH_EQ("string(/valgrindoutput/status[2]/time)", "00:01:02:03.004 ");
    free(text);
}
END_TEST

START_TEST(test_args)
{
    char *text = render();
    assert_well_formed();
    static const char *const args[] = {"vargv", "argv"};
    assert_children("/valgrindoutput/args", args, 2);
    static const char *const vargv[] = {"exe", "arg", "arg", "arg"};
    assert_children("/valgrindoutput/args/vargv", vargv, 4);
    XPATH_EQ("string(/valgrindoutput/args/vargv/exe)", "gpuleak");
    XPATH_EQ("string(/valgrindoutput/args/vargv/arg[3])", "--xml-file=out.xml");
    static const char *const argv[] = {"exe", "arg", "arg"};
    assert_children("/valgrindoutput/args/argv", argv, 3);
    XPATH_EQ("string(/valgrindoutput/args/argv/exe)", "./app");
    XPATH_EQ("string(/valgrindoutput/args/argv/arg[2])", "1M");
    free(text);
}
END_TEST

START_TEST(test_errors_content)
{
    standard_records();
    char *text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error)", "2");
    XPATH_EQ("string(/valgrindoutput/error[1]/unique)", "0x0");
    XPATH_EQ("string(/valgrindoutput/error[1]/tid)", "4242");
    XPATH_EQ("string(/valgrindoutput/error[1]/kind)", "Leak_DefinitelyLost");
    XPATH_EQ("string(/valgrindoutput/error[1]/xwhat/text)",
             "1,048,576 bytes in 1 blocks are definitely lost in loss record 1 of 3");
    XPATH_EQ("string(/valgrindoutput/error[1]/xwhat/leakedbytes)", "1048576");
    XPATH_EQ("string(/valgrindoutput/error[1]/xwhat/leakedblocks)", "1");
    XPATH_EQ("string(/valgrindoutput/error[1]/auxwhat)",
             "Block 0x7f0000b00000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
             "allocation #11");
    XPATH_EQ("string(/valgrindoutput/error[2]/unique)", "0x1");
    XPATH_EQ("string(/valgrindoutput/error[2]/kind)", "Leak_PossiblyLost");
    XPATH_EQ("string(/valgrindoutput/error[2]/xwhat/text)",
             "4,096 bytes in 3 blocks are possibly lost in loss record 3 of 3");
    XPATH_EQ("string(/valgrindoutput/error[2]/xwhat/leakedbytes)", "4096");
    XPATH_EQ("string(/valgrindoutput/error[2]/xwhat/leakedblocks)", "3");
    /* Frames: ip, obj, fn, dir, file, line, each where known, in that order. */
    XPATH_EQ("count(/valgrindoutput/error[1]/stack/frame)", "4");
    static const char *const full[] = {"ip", "obj", "fn", "dir", "file", "line"};
    assert_children("/valgrindoutput/error[1]/stack/frame[2]", full, 6);
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[2]/ip)", "0x55ED7B7EDBE4");
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[2]/obj)", "/work/app");
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[2]/fn)", "make_buffer(unsigned long)");
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[2]/dir)", "/src/app");
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[2]/file)", "app.cu");
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[2]/line)", "8");
    static const char *const ip_only[] = {"ip"};
    assert_children("/valgrindoutput/error[1]/stack/frame[3]", ip_only, 1);
    XPATH_EQ("string(/valgrindoutput/error[1]/stack/frame[3]/ip)", "0x7F12AA001000");
    static const char *const no_dir[] = {"ip", "obj", "fn", "file", "line"};
    assert_children("/valgrindoutput/error[1]/stack/frame[4]", no_dir, 5);
    static const char *const no_src[] = {"ip", "obj", "fn"};
    assert_children("/valgrindoutput/error[1]/stack/frame[1]", no_src, 3);
    /* One errorcounts pair per error. */
    XPATH_EQ("count(/valgrindoutput/errorcounts/pair)", "2");
    XPATH_EQ("string(/valgrindoutput/errorcounts/pair[2]/unique)", "0x1");
    XPATH_EQ("string(/valgrindoutput/errorcounts/pair[2]/count)", "1");
    XPATH_EQ("count(/valgrindoutput/suppcounts/pair)", "0");
    XPATH_EQ("count(//suppression)", "0"); /* not asked for */
    free(text);
}
END_TEST

/* Protocol 4's ERROR: unique, tid, kind, what or xwhat, STACK, then auxwhats and
 * stacks, then the suppression; a GUI takes the first stack as the error's. */
START_TEST(test_error_element_order)
{
    opt.gen_suppressions = GL_GEN_SUPP_ALL;
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 11);
    char *text = render();
    assert_well_formed();
    static const char *const order[] = {"unique", "tid",     "kind",       "xwhat",
                                        "stack",  "auxwhat", "suppression"};
    assert_children("/valgrindoutput/error[1]", order, GL_ARRAY_SIZE(order));
    free(text);
}
END_TEST

START_TEST(test_every_leak_kind)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 1, 1, 1);
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 2, 1, 2);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 3, 1, 3);
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 4, 1, 4);
    add_record(GL_LEAK_CACHED, STACK_SMALL, 5, 1, 5);
    char *text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error)", "5");
    static const char *const kinds[] = {"Leak_DefinitelyLost", "Leak_IndirectlyLost",
                                        "Leak_PossiblyLost", "Leak_StillReachable", "Leak_Cached"};
    for (int i = 0; i < 5; i++) {
        char expr[128];
        snprintf(expr, sizeof expr, "string(/valgrindoutput/error[%d]/kind)", i + 1);
        XPATH_EQ(expr, kinds[i]);
        ck_assert_str_eq(gl_report_xml_leak_kind((enum gl_leak_kind)i), kinds[i]);
    }
    free(text);
}
END_TEST

/* A saved log's blocks of a process that died: their own kind, phrase and
 * generated suppression, which reads back as an entry for that kind. */
START_TEST(test_live_at_death)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    opt.gen_suppressions = GL_GEN_SUPP_ALL;
    add_record(GL_LEAK_DEATH, STACK_MALLOC, 1048576, 1, 11);
    char *text = render();
    assert_well_formed();
    ck_assert_str_eq(gl_report_xml_leak_kind(GL_LEAK_DEATH), "Leak_LiveAtDeath");
    XPATH_EQ("count(/valgrindoutput/error)", "1");
    XPATH_EQ("string(/valgrindoutput/error[1]/kind)", "Leak_LiveAtDeath");
    XPATH_EQ("string(/valgrindoutput/error[1]/xwhat/text)",
             "1,048,576 bytes in 1 blocks are live at death in loss record 1 of 1");
    XPATH_EQ("string(/valgrindoutput/error[1]/suppression/skaux)", "match-leak-kinds: death");
    const char *raw = xpath("string(/valgrindoutput/error[1]/suppression/rawtext)");
    char err[512];
    ck_assert_int_eq(
        gl_suppressions_load_text(&supps, raw, strlen(raw), "raw.supp", err, sizeof err), 0);
    ck_assert_uint_eq(supps.n, 1);
    ck_assert_uint_eq(supps.v[0].leak_kinds, GL_LEAK_KIND_BIT(GL_LEAK_DEATH));
    free(text);
}
END_TEST

START_TEST(test_generated_suppression)
{
    opt.gen_suppressions = GL_GEN_SUPP_ALL;
    standard_records();
    char *text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error/suppression)", "2");
    const char *s1 = "/valgrindoutput/error[1]/suppression";
    char expr[256];
#define SX(sub, want)                                                                              \
    do {                                                                                           \
        snprintf(expr, sizeof expr, "string(%s/%s)", s1, sub);                                     \
        XPATH_EQ(expr, want);                                                                      \
    } while (0)
    SX("sname", "insert_a_suppression_name_here");
    SX("skind", "gpuleak:Leak");
    SX("skaux", "match-leak-kinds: definite");
    SX("sframe[1]/fun", "cudaMalloc");
    SX("sframe[2]/fun", "_Z11make_bufferm");
    SX("sframe[3]/obj", "*");
    SX("sframe[4]/fun", "main");
#undef SX
    XPATH_EQ("count(/valgrindoutput/error[1]/suppression/sframe)", "4");
    XPATH_EQ("string(/valgrindoutput/error[2]/suppression/skaux)", "match-leak-kinds: possible");
    /* The raw text is gl_suppressions_generate's, in CDATA, and reads back as an entry
     * that suppresses the record. */
    struct gl_frame f[4];
    memcpy(f, malloc_frames, sizeof f);
    char gen[4096], want[4200];
    gl_suppressions_generate(gen, sizeof gen, f, 4, GL_LEAK_DEFINITE);
    snprintf(want, sizeof want, "<rawtext>\n<![CDATA[\n%s]]>", gen);
    ck_assert_msg(strstr(text, want) != NULL, "no rawtext:\n%s", want);
    const char *raw = xpath("string(/valgrindoutput/error[1]/suppression/rawtext)");
    char err[512];
    ck_assert_int_eq(
        gl_suppressions_load_text(&supps, raw, strlen(raw), "raw.supp", err, sizeof err), 0);
    ck_assert_uint_eq(supps.n, 1);
    ck_assert(gl_suppressions_matches(&supps.v[0], f, 4, GL_LEAK_DEFINITE));
    free(text);
}
END_TEST

START_TEST(test_suppressed_and_suppcounts)
{
    standard_records();
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 10, 1, 40);
    suppress("{\n   hide <make_buffer> & co\n   gpuleak:Leak\n   fun:cudaMalloc\n"
             "   fun:make_buffer*\n}\n"
             "{\n   unused\n   gpuleak:Leak\n   fun:nothing\n}\n");
    char *text = render();
    assert_well_formed();
    /* Suppressed records are no errors; the others keep their numbers. */
    XPATH_EQ("count(/valgrindoutput/error)", "1");
    XPATH_EQ("string(/valgrindoutput/error[1]/xwhat/text)",
             "4,096 bytes in 3 blocks are possibly lost in loss record 3 of 4");
    XPATH_EQ("string(/valgrindoutput/error[1]/unique)", "0x0");
    XPATH_EQ("count(/valgrindoutput/errorcounts/pair)", "1");
    /* Only used entries, with their names unescaped as they were. */
    XPATH_EQ("count(/valgrindoutput/suppcounts/pair)", "1");
    XPATH_EQ("string(/valgrindoutput/suppcounts/pair/count)", "2");
    XPATH_EQ("string(/valgrindoutput/suppcounts/pair/name)", "hide <make_buffer> & co");
    ck_assert_ptr_nonnull(strstr(text, "<name>hide &lt;make_buffer&gt; &amp; co</name>"));
    static const char *const pair[] = {"count", "name"};
    assert_children("/valgrindoutput/suppcounts/pair", pair, 2);
    free(text);
}
END_TEST

START_TEST(test_escaping)
{
    opt.gen_suppressions = GL_GEN_SUPP_ALL;
    in.command = "./app 'a&b' <in >out \"q\"";
    static const char *const nasty_argv[] = {"./app", "a&b", "<in>", "ctl\x01x\ty"};
    in.argv = nasty_argv;
    in.argc = 4;
    add_record(GL_LEAK_DEFINITE, STACK_NASTY, 8, 1, 1);
    char *text = render();
    assert_well_formed();
    XPATH_EQ("string(/valgrindoutput/preamble/line[2])", "Command: ./app 'a&b' <in >out \"q\"");
    XPATH_EQ("string(/valgrindoutput/args/argv/arg[1])", "a&b");
    XPATH_EQ("string(/valgrindoutput/args/argv/arg[2])", "<in>");
    XPATH_EQ("string(/valgrindoutput/error/stack/frame[1]/fn)",
             "operator<<(std::ostream&, Foo<int> const&)");
    XPATH_EQ("string(/valgrindoutput/error/stack/frame[1]/obj)", "/work/R&D/<app>");
    XPATH_EQ("string(/valgrindoutput/error/stack/frame[1]/dir)", "/src/a&b");
    XPATH_EQ("string(/valgrindoutput/error/stack/frame[1]/file)", "<gen>.cc");
    XPATH_EQ("string(/valgrindoutput/error/suppression/sframe[1]/fun)",
             "operator<<(std::ostream&, Foo<int> const&)");
    ck_assert_ptr_nonnull(strstr(text, "<fn>operator&lt;&lt;(std::ostream&amp;, Foo&lt;int&gt; "
                                       "const&amp;)</fn>"));
    ck_assert_ptr_nonnull(strstr(text, "<arg>&lt;in&gt;</arg>"));
    /* The control character (not allowed in XML 1.0) replaced, the tab kept. */
    XPATH_EQ("string(/valgrindoutput/args/argv/arg[3])", "ctl?x\ty");
    free(text);
}
END_TEST

/* File names are bytes: one that is not UTF-8 (a Latin-1 directory) must not
 * make the document unreadable. */
START_TEST(test_non_utf8_names)
{
    add_record(GL_LEAK_DEFINITE, STACK_LATIN1, 8, 1, 1);
    char *text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error/stack/frame)", "1");
    free(text);
}
END_TEST

START_TEST(test_quiet_and_exit_on_first_error)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 1, 1, 1);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 2, 1, 2);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 3, 1, 3);
    char *text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error)", "3");
    free(text);
    opt.quiet = true; /* errors only */
    text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error)", "2");
    XPATH_EQ("string(/valgrindoutput/error[1]/kind)", "Leak_DefinitelyLost");
    free(text);
    opt.quiet = false;
    opt.error_exitcode = 1;
    opt.exit_on_first_error = true;
    text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error)", "2");
    XPATH_EQ("string(/valgrindoutput/error[2]/kind)", "Leak_DefinitelyLost");
    XPATH_EQ("count(/valgrindoutput/suppcounts)", "1"); /* the document is complete */
    free(text);
    /* --leak-check=summary: no errors, a complete document. */
    opt.exit_on_first_error = false;
    opt.leak_check = GL_LEAK_CHECK_SUMMARY;
    text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/error)", "0");
    XPATH_EQ("count(/valgrindoutput/errorcounts)", "1");
    free(text);
}
END_TEST

/* Two API error contexts, the second suppressed: a double free whose block has
 * its free and allocation stacks. */
static struct gl_error_context api_ctx[2];

static void api_contexts(void)
{
    memset(api_ctx, 0, sizeof api_ctx);
    struct gl_api_error *e = &api_ctx[0].first;
    e->kind = GL_ERR_DOUBLE_FREE;
    e->api = GL_API_cuMemFree_v2;
    e->flags = GL_ERRF_BLOCK | GL_ERRF_FREED;
    e->stack = STACK_NASTY; /* its first frame is no CUDA function: the driver's name is used */
    e->tid = PID + 1;
    e->addr = 0x7f0000100000ULL;
    e->block.block.key = 0x7f0000100000ULL;
    e->block.block.size = 4096;
    e->block.block.stack = STACK_MALLOC;
    e->block.block.kind = GL_MEM_DEVICE;
    e->block.block.api = GL_API_cuMemAlloc_v2;
    e->block.free_stack = STACK_SMALL;
    e->block.free_api = GL_API_cuMemFree_v2;
    api_ctx[0].count = 3;
    api_ctx[1].first = *e;
    api_ctx[1].first.kind = GL_ERR_INVALID_FREE;
    api_ctx[1].count = 5;
    api_ctx[1].suppressed_by = &api_ctx[1]; /* any token */
    in.api_contexts = api_ctx;
    in.napi_contexts = 2;
}

START_TEST(test_api_errors)
{
    standard_records();
    api_contexts();
    opt.gen_suppressions = GL_GEN_SUPP_ALL;
    char *text = render();
    assert_well_formed();
    /* The API error first (it happened while the program ran), then the leaks;
     * the suppressed context is not an error element. */
    static const char *const top[] = {
        "protocolversion",
        "protocoltool",
        "preamble",
        "pid",
        "ppid",
        "tool",
        "args",
        "status",
        "status",
        "error",
        "error",
        "error",
        "errorcounts",
        "suppcounts",
    };
    assert_children("/valgrindoutput", top, GL_ARRAY_SIZE(top));
    XPATH_EQ("string(/valgrindoutput/error[1]/kind)", "DoubleFree");
    XPATH_EQ("string(/valgrindoutput/error[1]/unique)", "0x0");
    XPATH_EQ("string(/valgrindoutput/error[1]/tid)", "4243");
    XPATH_EQ("string(/valgrindoutput/error[1]/what)",
             "Double free: cuMemFree_v2(0x7F0000100000): the block was already freed");
    static const char *const parts[] = {"unique",  "tid",   "kind",    "what",  "stack",
                                        "auxwhat", "stack", "auxwhat", "stack", "suppression"};
    assert_children("/valgrindoutput/error[1]", parts, GL_ARRAY_SIZE(parts));
    XPATH_EQ("string(/valgrindoutput/error[1]/auxwhat[1])",
             "Address 0x7F0000100000 is 0 bytes inside a block of 4,096 bytes free'd");
    XPATH_EQ("string(/valgrindoutput/error[1]/auxwhat[2])", "Block was alloc'd at");
    /* Each stack where the text report prints it: the call, the free, the allocation. */
    XPATH_EQ("string(/valgrindoutput/error[1]/stack[1]/frame[1]/fn)", nasty_frames[0].function);
    XPATH_EQ("string(/valgrindoutput/error[1]/stack[2]/frame[1]/fn)", small_frames[0].function);
    XPATH_EQ("string(/valgrindoutput/error[1]/stack[3]/frame[1]/fn)", malloc_frames[0].function);
    XPATH_EQ("string(/valgrindoutput/error[1]/suppression/skind)", "gpuleak:DoubleFree");
    XPATH_EQ("count(/valgrindoutput/error[1]/suppression/skaux)", "0");
    /* The leak records follow, numbered after it. */
    XPATH_EQ("string(/valgrindoutput/error[2]/unique)", "0x1");
    XPATH_EQ("string(/valgrindoutput/error[2]/kind)", "Leak_DefinitelyLost");
    /* errorcounts: the context counts its three errors; a loss record is one. */
    XPATH_EQ("string(/valgrindoutput/errorcounts/pair[1]/count)", "3");
    XPATH_EQ("string(/valgrindoutput/errorcounts/pair[1]/unique)", "0x0");
    XPATH_EQ("string(/valgrindoutput/errorcounts/pair[2]/count)", "1");
    XPATH_EQ("count(/valgrindoutput/errorcounts/pair)", "3");
    free(text);
}
END_TEST

START_TEST(test_no_records)
{
    in.argc = 1;
    in.tool_argc = 0;
    char *text = render();
    assert_well_formed();
    static const char *const top[] = {
        "protocolversion", "protocoltool", "preamble",    "pid",        "ppid", "tool", "args",
        "status",          "status",       "errorcounts", "suppcounts",
    };
    assert_children("/valgrindoutput", top, GL_ARRAY_SIZE(top));
    static const char *const vargv[] = {"exe"};
    assert_children("/valgrindoutput/args/vargv", vargv, 1);
    free(text);
}
END_TEST

static Suite *report_xml_suite(void)
{
    Suite *s = suite_create("report_xml");
    TCase *tc = tcase_create("xml");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_well_formed_and_top_level_order);
    tcase_add_test(tc, test_fatal_signal);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_errors_content);
    tcase_add_test(tc, test_error_element_order);
    tcase_add_test(tc, test_every_leak_kind);
    tcase_add_test(tc, test_live_at_death);
    tcase_add_test(tc, test_generated_suppression);
    tcase_add_test(tc, test_suppressed_and_suppcounts);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_non_utf8_names);
    tcase_add_test(tc, test_quiet_and_exit_on_first_error);
    tcase_add_test(tc, test_no_records);
    tcase_add_test(tc, test_api_errors);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(report_xml_suite)
