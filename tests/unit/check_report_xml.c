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
#include "usage_input.h"
#include "common/util.h"
#include "check/framework.h"
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

/* ---- gpuleak's own elements, after Valgrind's (issue 24) ---- */

static struct gl_usage usage_in;
static struct gl_site_stats sites_in[2];

/* Device 0: device memory, 3 blocks allocated (2 small, one of them freed, and
 * 1 large), and a stream-ordered allocation that failed; pinned host memory,
 * allocated and freed.  Two top sites. */
static void usage_input(void)
{
    tu_usage_input(&usage_in, sites_in, STACK_MALLOC, STACK_SMALL);
    in.usage = &usage_in;
    in.top_sites = sites_in;
    in.ntop_sites = 2;
}

static const char *const counters[] = {
    "currentbytes",   "currentblocks",   "peakbytes",  "peakblocks",
    "allocatedbytes", "allocatedblocks", "freedbytes", "freedblocks",
};

/* GPU MEMORY SUMMARY's groups always; the splits and the sites with --stats. */
START_TEST(test_usage)
{
    usage_input();
    char *text = render();
    assert_well_formed();
    static const char *const top[] = {
        "protocolversion", "protocoltool", "preamble",    "pid",        "ppid",  "tool", "args",
        "status",          "status",       "errorcounts", "suppcounts", "usage",
    };
    assert_children("/valgrindoutput", top, GL_ARRAY_SIZE(top));
    static const char *const slots[] = {"device", "host"};
    assert_children("/valgrindoutput/usage", slots, 2);
    static const char *const dev[] = {"ordinal",        "name",  "inusebytes", "peakbytes",
                                      "peakallocation", "stack", "memkind",    "memkind"};
    assert_children("/valgrindoutput/usage/device", dev, GL_ARRAY_SIZE(dev));
    XPATH_EQ("string(/valgrindoutput/usage/device/ordinal)", "0");
    XPATH_EQ("string(/valgrindoutput/usage/device/name)", "NVIDIA H200");
    XPATH_EQ("string(/valgrindoutput/usage/device/inusebytes)", "1052672");
    XPATH_EQ("string(/valgrindoutput/usage/device/peakbytes)", "1056768");
    XPATH_EQ("string(/valgrindoutput/usage/device/peakallocation)", "7");
    XPATH_EQ("string(/valgrindoutput/usage/device/stack/frame[2]/fn)",
             "make_buffer(unsigned long)");
    const char *kind = "/valgrindoutput/usage/device/memkind[1]";
    char expr[256];
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/name)", "device memory");
    XPATH_EQ("count(/valgrindoutput/usage/device/memkind[1]/*)", "11");
    static const char *const want[] = {"1052672", "2", "1056768", "3", "1056768", "3", "4096", "1"};
    for (size_t i = 0; i < GL_ARRAY_SIZE(counters); i++) {
        snprintf(expr, sizeof expr, "name(%s/*[%zu])", kind, i + 2);
        XPATH_EQ(expr, counters[i]);
        snprintf(expr, sizeof expr, "string(%s/%s)", kind, counters[i]);
        XPATH_EQ(expr, want[i]);
    }
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/failedallocs)", "0");
    /* A kind whose only allocation failed has its group too. */
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[2]/name)", "stream-ordered memory");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[2]/failedallocs)", "1");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[2]/failedbytes)", "1099511627776");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[2]/allocatedblocks)", "0");
    /* Host memory: no ordinal, no name. */
    static const char *const host[] = {"inusebytes", "peakbytes", "peakallocation", "stack",
                                       "memkind"};
    assert_children("/valgrindoutput/usage/host", host, GL_ARRAY_SIZE(host));
    XPATH_EQ("string(/valgrindoutput/usage/host/memkind/name)", "pinned host memory");
    XPATH_EQ("string(/valgrindoutput/usage/host/memkind/freedbytes)", "4096");
    XPATH_EQ("count(//split)", "0");
    free(text);

    opt.stats = true;
    text = render();
    assert_well_formed();
    XPATH_EQ("name(/valgrindoutput/*[last()])", "stats");
    XPATH_EQ("name(/valgrindoutput/*[last() - 1])", "usage");
    XPATH_EQ("count(/valgrindoutput/usage/device/memkind[1]/split)", "2");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/split[1]/name)", "small");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/split[1]/peakbytes)", "8192");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/split[1]/freedblocks)", "1");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/split[2]/name)", "large");
    XPATH_EQ("string(/valgrindoutput/usage/device/memkind[1]/split[2]/currentbytes)", "1048576");
    static const char *const split[] = {
        "name",           "currentbytes",    "currentblocks", "peakbytes",  "peakblocks",
        "allocatedbytes", "allocatedblocks", "freedbytes",    "freedblocks"};
    assert_children("/valgrindoutput/usage/device/memkind[1]/split[2]", split,
                    GL_ARRAY_SIZE(split));
    static const char *const stats[] = {"smalllimit", "site", "site"};
    assert_children("/valgrindoutput/stats", stats, 3);
    XPATH_EQ("string(/valgrindoutput/stats/smalllimit)", "1048576");
    static const char *const site[] = {"peakbytes", "livebytes", "liveblocks", "stack"};
    assert_children("/valgrindoutput/stats/site[1]", site, 4);
    XPATH_EQ("string(/valgrindoutput/stats/site[1]/peakbytes)", "1048576");
    XPATH_EQ("string(/valgrindoutput/stats/site[2]/peakbytes)", "8192");
    XPATH_EQ("string(/valgrindoutput/stats/site[2]/livebytes)", "4096");
    XPATH_EQ("string(/valgrindoutput/stats/site[2]/liveblocks)", "1");
    XPATH_EQ("count(/valgrindoutput/stats/site[1]/stack/frame)", "4");
    XPATH_EQ("string(/valgrindoutput/stats/site[2]/stack/frame[1]/fn)", "cudaMalloc");
    free(text);
}
END_TEST

/* Two checks the program asked for: a full one into the log, and a delta
 * since a checkpoint into its buffer; five earlier ones not kept. */
static struct gl_report_check_record check_recs[2];
static struct gl_report_check checks_in[2];

static void checks_input(void)
{
    memset(check_recs, 0, sizeof check_recs);
    memset(checks_in, 0, sizeof checks_in);
    check_recs[0] = (struct gl_report_check_record){
        .index = 1,
        .bytes = 1048576,
        .blocks = 1,
        .seq_min = 11,
        .seq_max = 11,
        .stack = STACK_MALLOC,
        .api = GL_API_cuMemAlloc_v2,
        .kind = GL_LEAK_DEFINITE,
        .mem_kind = GL_MEM_DEVICE,
        .error = true,
        .title = "1,048,576 bytes in 1 blocks are definitely lost in loss record 1 of 2",
        .text = "Block 0x7f0000b00000 on device 0 (NVIDIA H200): <a & b>",
    };
    struct gl_report_check *c = &checks_in[0];
    c->number = 6;
    c->select = GL_SELECT_ALL;
    c->elapsed_s = 1.5;
    c->allocs = 10;
    c->errors = 1;
    c->in_use = (struct gl_leak_totals){1048640, 3};
    c->kind[GL_LEAK_DEFINITE] = (struct gl_leak_totals){1048576, 1};
    c->kind[GL_LEAK_REACHABLE] = (struct gl_leak_totals){64, 2};
    c->nrecords = 2;
    c->printed = 1;
    c->records = &check_recs[0];
    c->nkept = 1;
    check_recs[1] = (struct gl_report_check_record){
        .index = 1,
        .bytes = 2097152,
        .blocks = 2,
        .before_bytes = 1048576,
        .before_blocks = 1,
        .seq_min = 11,
        .seq_max = 12,
        .stack = STACK_SMALL,
        .api = GL_API_cuMemAlloc_v2,
        .kind = GL_LEAK_DEFINITE,
        .mem_kind = GL_MEM_DEVICE,
        .title = "2,097,152 (+1,048,576) bytes in 2 (+1) blocks are definitely lost in loss "
                 "record 1 of 1",
        .text = "Blocks 0x7f0000b00000 and 1 more on device 0 (NVIDIA H200): device memory",
    };
    c = &checks_in[1];
    c->number = 7;
    c->select = GL_SELECT_ADDED;
    c->to_buffer = true;
    snprintf(c->since, sizeof c->since, "step <1>");
    c->since_seq = 42;
    c->elapsed_s = 62.25;
    c->allocs = 12;
    c->in_use = (struct gl_leak_totals){2101258, 4};
    c->ignored = (struct gl_leak_totals){4096, 1};
    c->kind[GL_LEAK_DEFINITE] = (struct gl_leak_totals){2097152, 2};
    c->suppressed = (struct gl_leak_totals){10, 1};
    c->delta = true;
    c->before_kind[GL_LEAK_DEFINITE] = (struct gl_leak_totals){1048576, 1};
    c->nrecords = 1;
    c->printed = 1;
    c->records = &check_recs[1];
    c->nkept = 1;
    in.checks = checks_in;
    in.nchecks = 2;
    in.checks_dropped = 5;
}

START_TEST(test_leak_checks)
{
    checks_input();
    char *text = render();
    assert_well_formed();
    XPATH_EQ("name(/valgrindoutput/*[last()])", "leakchecks");
    static const char *const lc[] = {"dropped", "leakcheck", "leakcheck"};
    assert_children("/valgrindoutput/leakchecks", lc, 3);
    XPATH_EQ("string(/valgrindoutput/leakchecks/dropped)", "5");
    static const char *const full[] = {
        "number",     "mode",        "output",      "time",         "allocations",    "errors",
        "inusebytes", "inuseblocks", "leaksummary", "totalrecords", "printedrecords", "record"};
    const char *c1 = "/valgrindoutput/leakchecks/leakcheck[1]";
    assert_children(c1, full, GL_ARRAY_SIZE(full));
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/number)", "6");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/mode)", "full");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/output)", "log");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/time)", "00:00:00:01.500 ");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/allocations)", "10");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/errors)", "1");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/inusebytes)", "1048640");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/totalrecords)", "2");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/printedrecords)", "1");
    /* LEAK SUMMARY: every kind but live at death, then suppressed. */
    static const char *const summary[] = {"leak", "leak", "leak", "leak", "leak", "suppressed"};
    assert_children("/valgrindoutput/leakchecks/leakcheck[1]/leaksummary", summary,
                    GL_ARRAY_SIZE(summary));
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/leaksummary/leak[4]/kind)",
             "Leak_StillReachable");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/leaksummary/leak[4]/bytes)", "64");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/leaksummary/leak[4]/blocks)", "2");
    static const char *const leak[] = {"kind", "bytes", "blocks"};
    assert_children("/valgrindoutput/leakchecks/leakcheck[1]/leaksummary/leak[1]", leak, 3);
    /* A record as an <error>'s: kind, xwhat, stack, auxwhat. */
    static const char *const rec[] = {"kind", "iserror", "xwhat", "stack", "auxwhat"};
    assert_children("/valgrindoutput/leakchecks/leakcheck[1]/record", rec, GL_ARRAY_SIZE(rec));
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/record/kind)", "Leak_DefinitelyLost");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/record/xwhat/text)",
             "1,048,576 bytes in 1 blocks are definitely lost in loss record 1 of 2");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/record/xwhat/leakedbytes)", "1048576");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/record/xwhat/leakedblocks)", "1");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/record/auxwhat)",
             "Block 0x7f0000b00000 on device 0 (NVIDIA H200): <a & b>");
    XPATH_EQ("count(/valgrindoutput/leakchecks/leakcheck[1]/record/stack/frame)", "4");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[1]/record/stack/frame[2]/fn)",
             "make_buffer(unsigned long)");
    ck_assert_ptr_nonnull(strstr(text, "&lt;a &amp; b&gt;"));

    /* The delta check since a checkpoint: its scope, the reference's totals. */
    static const char *const delta[] = {
        "number",      "mode",         "since",          "sinceallocation", "output",
        "time",        "allocations",  "errors",         "inusebytes",      "inuseblocks",
        "leaksummary", "totalrecords", "printedrecords", "record"};
    assert_children("/valgrindoutput/leakchecks/leakcheck[2]", delta, GL_ARRAY_SIZE(delta));
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/mode)", "added");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/since)", "step <1>");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/sinceallocation)", "42");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/output)", "buffer");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/time)", "00:00:01:02.250 ");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/errors)", "0");
    static const char *const dleak[] = {"kind", "bytes", "blocks", "beforebytes", "beforeblocks"};
    assert_children("/valgrindoutput/leakchecks/leakcheck[2]/leaksummary/leak[1]", dleak, 5);
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/leaksummary/leak[1]/bytes)",
             "2097152");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/leaksummary/leak[1]/beforebytes)",
             "1048576");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/leaksummary/suppressed/bytes)", "10");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/leaksummary/suppressed/beforebytes)",
             "0");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/leaksummary/ignored/bytes)", "4096");
    static const char *const drec[] = {"kind",         "xwhat", "beforebytes",
                                       "beforeblocks", "stack", "auxwhat"};
    assert_children("/valgrindoutput/leakchecks/leakcheck[2]/record", drec, GL_ARRAY_SIZE(drec));
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/record/beforebytes)", "1048576");
    XPATH_EQ("string(/valgrindoutput/leakchecks/leakcheck[2]/record/xwhat/leakedbytes)", "2097152");
    free(text);

    /* None asked for: no element. */
    in.nchecks = 0;
    in.checks_dropped = 0;
    text = render();
    XPATH_EQ("count(/valgrindoutput/leakchecks)", "0");
    free(text);
}
END_TEST

/* A Growth error beside the <error>s: its figures, and the <unique> of the
 * <error> that reports it; a suppressed one has neither. */
START_TEST(test_growth)
{
    api_contexts(); /* a double free, then a suppressed invalid free */
    static struct gl_error_context ctx[4];
    memcpy(ctx, api_ctx, sizeof api_ctx);
    for (int i = 2; i < 4; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        struct gl_api_error *e = &ctx[i].first;
        e->kind = GL_ERR_GROWTH;
        e->stack = STACK_MALLOC;
        e->device = -1;
        e->size = 35883008;
        e->growth.from_bytes = 34603008;
        e->growth.blocks = 7;
        e->growth.from_blocks = 2;
        e->growth.checkpoints = 5;
        e->growth.ordinal = 12;
        e->growth.framework = GL_FW_PYTORCH;
        snprintf(e->growth.checkpoint, sizeof e->growth.checkpoint, "step");
        ctx[i].count = 1;
    }
    ctx[2].suppressed_by = &ctx[2];
    ctx[3].first.stack = STACK_SMALL;
    ctx[3].first.growth.framework = 0;
    in.api_contexts = ctx;
    in.napi_contexts = 4;
    char *text = render();
    assert_well_formed();
    XPATH_EQ("name(/valgrindoutput/*[last()])", "growth");
    XPATH_EQ("count(/valgrindoutput/error)", "2");
    XPATH_EQ("string(/valgrindoutput/error[2]/kind)", "Growth");
    XPATH_EQ("string(/valgrindoutput/error[2]/unique)", "0x1");
    XPATH_EQ("count(/valgrindoutput/growth/site)", "1");
    static const char *const site[] = {
        "unique", "checkpoint", "checkpointnumber", "fromcheckpointnumber", "checkpoints",
        "bytes",  "blocks",     "frombytes",        "fromblocks",           "unit",
        "what",   "stack"};
    assert_children("/valgrindoutput/growth/site", site, GL_ARRAY_SIZE(site));
    XPATH_EQ("string(/valgrindoutput/growth/site/unique)", "0x1");
    XPATH_EQ("string(/valgrindoutput/growth/site/checkpoint)", "step");
    XPATH_EQ("string(/valgrindoutput/growth/site/checkpointnumber)", "12");
    XPATH_EQ("string(/valgrindoutput/growth/site/fromcheckpointnumber)", "7");
    XPATH_EQ("string(/valgrindoutput/growth/site/checkpoints)", "5");
    XPATH_EQ("string(/valgrindoutput/growth/site/bytes)", "35883008");
    XPATH_EQ("string(/valgrindoutput/growth/site/blocks)", "7");
    XPATH_EQ("string(/valgrindoutput/growth/site/frombytes)", "34603008");
    XPATH_EQ("string(/valgrindoutput/growth/site/fromblocks)", "2");
    XPATH_EQ("string(/valgrindoutput/growth/site/unit)", "block");
    XPATH_EQ("string(/valgrindoutput/growth/site/what)",
             "Growth: +256,000 bytes in 1 block per checkpoint, +1,280,000 bytes in 5 blocks "
             "over the last 5 checkpoints; 35,883,008 bytes in 7 blocks allocated here (from "
             "34,603,008 bytes, checkpoint \"step\" #12)");
    XPATH_EQ("string(/valgrindoutput/growth/site/stack/frame[1]/fn)", "cudaMalloc");
    free(text);
    /* A framework's site: its unit and name. */
    ctx[2].suppressed_by = NULL;
    text = render();
    assert_well_formed();
    XPATH_EQ("count(/valgrindoutput/growth/site)", "2");
    XPATH_EQ("string(/valgrindoutput/growth/site[1]/unique)", "0x1");
    XPATH_EQ("string(/valgrindoutput/growth/site[1]/unit)", "tensor");
    XPATH_EQ("string(/valgrindoutput/growth/site[1]/framework)", "PyTorch");
    XPATH_EQ("string(/valgrindoutput/growth/site[2]/unique)", "0x2");
    XPATH_EQ("count(/valgrindoutput/growth/site[2]/framework)", "0");
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
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_leak_checks);
    tcase_add_test(tc, test_growth);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(report_xml_suite)
