/* SPDX-License-Identifier: MIT */
/* lib/common/suppressions.h: Valgrind's suppression grammar read (every accepted
 * form, every error with its exact message and line), entries matched against
 * stacks, globs, and generated entries read back.
 *
 * The suppression files real projects ship for Valgrind (Valgrind's own, GLib's,
 * GTK's) must load as they are: they are read from where Debian installs them. */
#include <check.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error_kind.h"
#include "common/leak_kind.h"
#include "common/suppressions.h"
#include "testutil.h"
#include "common/util.h"

#define KB(k) GL_LEAK_KIND_BIT(GL_LEAK_##k)

static struct gl_supp_set set;
static char err[1024];

static void setup(void)
{
    gl_suppressions_set_init(&set);
    memset(err, 0, sizeof err);
}

static void teardown(void) { gl_suppressions_set_free(&set); }

/* Load text (its length given, so that it may hold NUL bytes) that must be accepted. */
#define LOAD_OK(text) load_ok_at(text, sizeof(text) - 1, __LINE__)
static void load_ok_at(const char *text, size_t len, int line)
{
    err[0] = '\0';
    int rc = gl_suppressions_load_text(&set, text, len, "t.supp", err, sizeof err);
    ck_assert_msg(rc == 0, "line %d: rejected: %s", line, err);
}

/* Load text that must be rejected with exactly this one-line error. */
#define LOAD_BAD(text, want) load_bad_at(text, sizeof(text) - 1, want, __LINE__)
static void load_bad_at(const char *text, size_t len, const char *want, int line)
{
    struct gl_supp_set s;
    gl_suppressions_set_init(&s);
    char e[1024] = "";
    int rc = gl_suppressions_load_text(&s, text, len, "t.supp", e, sizeof e);
    size_t n = s.n;
    gl_suppressions_set_free(&s);
    ck_assert_msg(rc == -1, "line %d: accepted (%zu entries), want error \"%s\"", line, n, want);
    ck_assert_msg(strcmp(e, want) == 0, "line %d: error\n  got:  \"%s\"\n  want: \"%s\"", line, e,
                  want);
    ck_assert_ptr_null(strchr(e, '\n'));
}

static struct gl_frame fr(const char *fn, const char *mangled, const char *obj, const char *file,
                          int line)
{
    static uintptr_t ip = 0x401000;
    ip += 0x10;
    return (struct gl_frame){ip, fn, file, line, obj, mangled};
}

/* ---- parsing: accepted forms ---- */

START_TEST(test_minimal_entry)
{
    LOAD_OK("{\n"
            "   cuda-init\n"
            "   gpuleak:Leak\n"
            "   fun:cudaMalloc\n"
            "}\n");
    ck_assert_uint_eq(set.n, 1);
    ck_assert_uint_eq(set.other_tools, 0);
    const struct gl_supp *e = &set.v[0];
    ck_assert_str_eq(e->name, "cuda-init");
    ck_assert_str_eq(e->file, "t.supp");
    ck_assert_int_eq(e->line, 1);
    ck_assert_int_eq(e->kind, GL_SUPP_LEAK);
    ck_assert_uint_eq(e->leak_kinds, GL_LEAK_KINDS_ALL);
    ck_assert_uint_eq(e->nframes, 1);
    ck_assert_int_eq(e->frames[0].type, GL_SF_FUN);
    ck_assert_str_eq(e->frames[0].pattern, "cudaMalloc");
    ck_assert_int_eq(e->frames[0].line, 0);
    ck_assert_uint_eq(e->count + e->bytes + e->blocks, 0);
    ck_assert_uint_eq(set.nfiles, 1);
    ck_assert_str_eq(set.files[0], "t.supp");
}
END_TEST

START_TEST(test_empty_and_comment_only)
{
    LOAD_OK("");
    LOAD_OK("\n\n   \n\t\n");
    LOAD_OK("# only a comment\n   # indented comment\n\t# tab\n");
    LOAD_OK("# no newline at the end");
    ck_assert_uint_eq(set.n, 0);
    ck_assert_uint_eq(set.other_tools, 0);
}
END_TEST

START_TEST(test_name_with_spaces_tabs_crlf)
{
    LOAD_OK("{\n"
            "   a name with  several   spaces\n"
            "   gpuleak:Leak\n"
            "   fun:f\n"
            "}\n"
            "\t{\t\n"
            "\tname\twith\ttabs\t\n"
            "\tgpuleak:Cached\t\n"
            "\tobj:*libfoo.so*\t\n"
            "\t}\t\n"
            "{\r\n"
            "   crlf entry\r\n"
            "   gpuleak:Leak\r\n"
            "   match-leak-kinds: possible\r\n"
            "   fun:g\r\n"
            "   src:a.c:12\r\n"
            "}\r\n"
            "{\n   no final newline\n   gpuleak:Leak\n   fun:h\n}");
    ck_assert_uint_eq(set.n, 4);
    ck_assert_str_eq(set.v[0].name, "a name with  several   spaces");
    ck_assert_str_eq(set.v[1].name, "name\twith\ttabs");
    ck_assert_int_eq(set.v[1].kind, GL_SUPP_CACHED);
    ck_assert_int_eq(set.v[1].line, 6);
    ck_assert_int_eq(set.v[1].frames[0].type, GL_SF_OBJ);
    ck_assert_str_eq(set.v[1].frames[0].pattern, "*libfoo.so*");
    ck_assert_str_eq(set.v[2].name, "crlf entry");
    ck_assert_int_eq(set.v[2].line, 11);
    ck_assert_uint_eq(set.v[2].leak_kinds, KB(POSSIBLE));
    ck_assert_str_eq(set.v[2].frames[0].pattern, "g");
    ck_assert_int_eq(set.v[2].frames[1].type, GL_SF_SRC);
    ck_assert_str_eq(set.v[2].frames[1].pattern, "a.c");
    ck_assert_int_eq(set.v[2].frames[1].line, 12);
    ck_assert_str_eq(set.v[3].name, "no final newline");
    ck_assert_str_eq(set.v[3].frames[0].pattern, "h");
}
END_TEST

START_TEST(test_comments_anywhere)
{
    LOAD_OK("# before\n"
            "\n"
            "{\n"
            "# after the brace\n"
            "   the name\n"
            "   # after the name\n"
            "   gpuleak:Leak\n"
            "\n"
            "      # after the kind\n"
            "   match-leak-kinds: definite\n"
            "# between frames\n"
            "   fun:a\n"
            "\t# tab-indented\n"
            "   fun:b\n"
            "   # before the brace\n"
            "}\n"
            "# between entries\n"
            "{\n"
            "   second\n"
            "   gpuleak:Leak\n"
            "   fun:c\n"
            "}\n"
            "# at the end, no newline");
    ck_assert_uint_eq(set.n, 2);
    ck_assert_str_eq(set.v[0].name, "the name");
    ck_assert_int_eq(set.v[0].line, 3);
    ck_assert_uint_eq(set.v[0].leak_kinds, KB(DEFINITE));
    ck_assert_uint_eq(set.v[0].nframes, 2);
    ck_assert_str_eq(set.v[0].frames[0].pattern, "a");
    ck_assert_str_eq(set.v[0].frames[1].pattern, "b");
    ck_assert_int_eq(set.v[1].line, 18);
}
END_TEST

START_TEST(test_match_leak_kinds_forms)
{
    LOAD_OK("{\n n1\n gpuleak:Leak\n match-leak-kinds: definite,possible\n fun:a\n}\n"
            "{\n n2\n gpuleak:Leak\n match-leak-kinds:reachable\n fun:a\n}\n"
            "{\n n3\n gpuleak:Leak\n match-leak-kinds:\tindirect,cached\n fun:a\n}\n"
            "{\n n4\n gpuleak:Leak\n match-leak-kinds: all\n fun:a\n}\n"
            "{\n n5\n gpuleak:Leak\n match-leak-kinds: none\n fun:a\n}\n"
            "{\n n6\n gpuleak:Cached\n match-leak-kinds: "
            "definite,indirect,possible,reachable,cached,death\n fun:a\n}\n"
            "{\n n7\n gpuleak:Leak\n fun:a\n}\n");
    ck_assert_uint_eq(set.n, 7);
    ck_assert_uint_eq(set.v[0].leak_kinds, KB(DEFINITE) | KB(POSSIBLE));
    ck_assert_uint_eq(set.v[1].leak_kinds, KB(REACHABLE));
    ck_assert_uint_eq(set.v[2].leak_kinds, KB(INDIRECT) | KB(CACHED));
    ck_assert_uint_eq(set.v[3].leak_kinds, GL_LEAK_KINDS_ALL);
    ck_assert_uint_eq(set.v[4].leak_kinds, 0);
    ck_assert_uint_eq(set.v[5].leak_kinds, GL_LEAK_KINDS_ALL);
    ck_assert_int_eq(set.v[5].kind, GL_SUPP_CACHED);
    ck_assert_uint_eq(set.v[6].leak_kinds, GL_LEAK_KINDS_ALL);
    for (size_t i = 0; i < set.n; i++)
        ck_assert_uint_eq(set.v[i].nframes, 1);
}
END_TEST

START_TEST(test_tool_lists)
{
    LOAD_OK("{\n both\n Memcheck,gpuleak:Leak\n fun:a\n}\n"
            "{\n ours first\n gpuleak,Memcheck:Cached\n fun:b\n}\n"
            "{\n three\n Helgrind,gpuleak,drd:Leak\n fun:c\n}\n"
            "{\n not ours\n Memcheck,Helgrind:Leak\n fun:d\n}\n"
            "{\n prefix only\n gpuleakx:Leak\n fun:e\n}\n"
            "{\n suffix only\n xgpuleak:Leak\n fun:f\n}\n"
            "{\n case differs\n GPULeak:Leak\n fun:g\n}\n");
    ck_assert_uint_eq(set.n, 3);
    ck_assert_uint_eq(set.other_tools, 4);
    ck_assert_str_eq(set.v[0].name, "both");
    ck_assert_int_eq(set.v[0].kind, GL_SUPP_LEAK);
    ck_assert_str_eq(set.v[1].name, "ours first");
    ck_assert_int_eq(set.v[1].kind, GL_SUPP_CACHED);
    ck_assert_str_eq(set.v[2].name, "three");
}
END_TEST

START_TEST(test_frame_forms)
{
    LOAD_OK("{\n"
            "   frames\n"
            "   gpuleak:Leak\n"
            "   fun:_ZN3Foo3barEv\n"
            "   fun:Foo::bar() const\n"
            "   obj:/usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
            "   src:kernel.cu:123\n"
            "   src:kernel.cu\n"
            "   src:dir/a.c:7\n"
            "   src:weird:name.c\n"
            "   src:a.c:\n"
            "   ...\n"
            "   fun:*\n"
            "   obj:???\n"
            "   fun:a\\*b?c\n"
            "}\n");
    ck_assert_uint_eq(set.n, 1);
    const struct gl_supp *e = &set.v[0];
    ck_assert_uint_eq(e->nframes, 12);
    static const struct {
        enum gl_supp_frame_type type;
        const char *pattern;
        int line;
    } want[] = {
        {GL_SF_FUN, "_ZN3Foo3barEv", 0},
        {GL_SF_FUN, "Foo::bar() const", 0},
        {GL_SF_OBJ, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0},
        {GL_SF_SRC, "kernel.cu", 123},
        {GL_SF_SRC, "kernel.cu", 0},
        {GL_SF_SRC, "dir/a.c", 7},
        {GL_SF_SRC, "weird:name.c", 0},
        {GL_SF_SRC, "a.c:", 0},
        {GL_SF_ANY, NULL, 0},
        {GL_SF_FUN, "*", 0},
        {GL_SF_OBJ, "???", 0},
        {GL_SF_FUN, "a\\*b?c", 0},
    };
    for (unsigned i = 0; i < e->nframes; i++) {
        ck_assert_msg(e->frames[i].type == want[i].type, "frame %u: type %d", i, e->frames[i].type);
        if (want[i].pattern)
            ck_assert_str_eq(e->frames[i].pattern, want[i].pattern);
        ck_assert_int_eq(e->frames[i].line, want[i].line);
    }
}
END_TEST

START_TEST(test_max_frames)
{
    char text[2048] = "{\n   deep\n   gpuleak:Leak\n";
    for (int i = 0; i < GL_SUPP_MAX_FRAMES; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "   %s%d\n",
                 i % 3 == 2 ? "obj:/lib/l" : "fun:f", i);
    strcat(text, "}\n");
    load_ok_at(text, strlen(text), __LINE__);
    ck_assert_uint_eq(set.n, 1);
    ck_assert_uint_eq(set.v[0].nframes, 24);
    ck_assert_uint_eq(GL_SUPP_MAX_FRAMES, 24);
    ck_assert_str_eq(set.v[0].frames[23].pattern, "/lib/l23");
    /* And only "...": as many lines as frames allow. */
    char dots[1024] = "{\n   dots\n   gpuleak:Leak\n";
    for (int i = 0; i < GL_SUPP_MAX_FRAMES; i++)
        strcat(dots, "   ...\n");
    strcat(dots, "}\n");
    load_ok_at(dots, strlen(dots), __LINE__);
    ck_assert_uint_eq(set.v[1].nframes, 24);
}
END_TEST

/* Other tools' entries: skipped to their '}', whatever they hold, and counted. */
START_TEST(test_other_tools_skipped)
{
    LOAD_OK("{\n"
            "   param\n"
            "   Memcheck:Param\n"
            "   write(buf)\n"
            "   fun:__write_nocancel\n"
            "   obj:/lib/ld-2.3.4.so\n"
            "}\n"
            "{\n"
            "   leak of another tool\n"
            "   Memcheck:Leak\n"
            "   match-leak-kinds: reachable\n"
            "   fun:malloc\n"
            "   ...\n"
            "}\n"
            "{\n"
            "   race\n"
            "   Helgrind:Race\n"
            "   obj:/usr/lib/libgomp.so*\n"
            "}\n"
            "{\n"
            "   drd\n"
            "   drd:ConflictingAccess\n"
            "   fun:*\n"
            "}\n"
            "{\n"
            "   lines gpuleak would reject\n"
            "   exp-sgcheck:SorG\n"
            "   this is: not a frame line\n"
            "   fun:\n"
            "   match-leak-kinds: bogus\n"
            "}\n"
            "{\n"
            "   ours\n"
            "   gpuleak:Leak\n"
            "   fun:cuInit\n"
            "}\n");
    ck_assert_uint_eq(set.n, 1);
    ck_assert_uint_eq(set.other_tools, 5);
    ck_assert_str_eq(set.v[0].name, "ours");
    ck_assert_int_eq(set.v[0].line, 32);
}
END_TEST

START_TEST(test_two_files_in_one_set)
{
    const char *a = "{\n a1\n gpuleak:Leak\n fun:a\n}\n";
    const char *b = "{\n b1\n Memcheck:Leak\n fun:b\n}\n{\n b2\n gpuleak:Cached\n fun:b\n}\n";
    ck_assert_int_eq(gl_suppressions_load_text(&set, a, strlen(a), "first.supp", err, sizeof err), 0);
    ck_assert_int_eq(gl_suppressions_load_text(&set, b, strlen(b), "second.supp", err, sizeof err), 0);
    ck_assert_uint_eq(set.n, 2);
    ck_assert_uint_eq(set.other_tools, 1);
    ck_assert_uint_eq(set.nfiles, 2);
    ck_assert_str_eq(set.v[0].file, "first.supp");
    ck_assert_str_eq(set.v[1].file, "second.supp");
    ck_assert_int_eq(set.v[1].line, 6);
}
END_TEST

/* ---- parsing: errors, exact messages and lines ---- */

START_TEST(test_error_missing_brace)
{
    LOAD_BAD("foo\n", "t.supp:1: error: expected '{' to open an entry, got 'foo'");
    LOAD_BAD("# c\n\n  name\n", "t.supp:3: error: expected '{' to open an entry, got 'name'");
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a\n}\n}\n",
             "t.supp:6: error: expected '{' to open an entry, got '}'");
    LOAD_BAD("{{\n", "t.supp:1: error: expected '{' to open an entry, got '{{'");
    /* The quoted line is cut at 60 characters. */
    LOAD_BAD("0123456789012345678901234567890123456789012345678901234567890123456789\n",
             "t.supp:1: error: expected '{' to open an entry, got "
             "'012345678901234567890123456789012345678901234567890123456789'");
}
END_TEST

START_TEST(test_error_eof_in_entry)
{
    LOAD_BAD("{\n",
             "t.supp:1: error: end of file inside the entry opened at line 1: expected its name");
    LOAD_BAD("\n{\n# c\n\n",
             "t.supp:4: error: end of file inside the entry opened at line 2: expected its name");
    LOAD_BAD("{\n   name\n",
             "t.supp:2: error: end of file inside the entry opened at line 1: expected TOOL:KIND");
    LOAD_BAD("{\n name\n gpuleak:Leak\n",
             "t.supp:3: error: end of file inside the entry opened at line 1: missing '}'");
    LOAD_BAD("{\n name\n gpuleak:Leak\n fun:a\n\n# c\n",
             "t.supp:6: error: end of file inside the entry opened at line 1: missing '}'");
    LOAD_BAD("{\n name\n gpuleak:Leak\n match-leak-kinds: all\n fun:a",
             "t.supp:5: error: end of file inside the entry opened at line 1: missing '}'");
    /* Another tool's entry too. */
    LOAD_BAD("{\n n\n Memcheck:Leak\n fun:malloc\n",
             "t.supp:4: error: end of file inside the entry opened at line 1: missing '}'");
}
END_TEST

START_TEST(test_error_no_name)
{
    LOAD_BAD("{\n}\n", "t.supp:2: error: expected the entry's name after '{', got '}'");
    LOAD_BAD("{\n# c\n   {\n", "t.supp:3: error: expected the entry's name after '{', got '{'");
}
END_TEST

START_TEST(test_error_bad_tool_kind)
{
    LOAD_BAD("{\n name\n gpuleakLeak\n fun:a\n}\n",
             "t.supp:3: error: expected TOOL:KIND (such as gpuleak:Leak or Memcheck:Leak), got "
             "'gpuleakLeak'");
    LOAD_BAD("{\n name\n :Leak\n}\n",
             "t.supp:3: error: expected TOOL:KIND (such as gpuleak:Leak or Memcheck:Leak), got "
             "':Leak'");
    LOAD_BAD("{\n name\n gpuleak:\n}\n",
             "t.supp:3: error: expected TOOL:KIND (such as gpuleak:Leak or Memcheck:Leak), got "
             "'gpuleak:'");
    LOAD_BAD("{\n name\n\n}\n",
             "t.supp:4: error: expected TOOL:KIND (such as gpuleak:Leak or Memcheck:Leak), got "
             "'}'");
}
END_TEST

START_TEST(test_error_unknown_kind)
{
    LOAD_BAD("{\n name\n gpuleak:Bogus\n fun:a\n}\n",
             "t.supp:3: error: unknown kind 'Bogus' for gpuleak (expected Leak, Cached, "
             "InvalidFree, DoubleFree, MismatchedFree, InvalidRange, FreedRange, OutOfMemory, Growth or ObserverMismatch)");
    LOAD_BAD("{\n name\n Memcheck,gpuleak:Cond\n fun:a\n}\n",
             "t.supp:3: error: unknown kind 'Cond' for gpuleak (expected Leak, Cached, "
             "InvalidFree, DoubleFree, MismatchedFree, InvalidRange, FreedRange, OutOfMemory, Growth or ObserverMismatch)");
    LOAD_BAD("{\n name\n gpuleak:leak\n fun:a\n}\n",
             "t.supp:3: error: unknown kind 'leak' for gpuleak (expected Leak, Cached, "
             "InvalidFree, DoubleFree, MismatchedFree, InvalidRange, FreedRange, OutOfMemory, Growth or ObserverMismatch)");
}
END_TEST

START_TEST(test_error_match_leak_kinds)
{
#define MLK_ERR(v)                                                                                 \
    "t.supp:4: error: match-leak-kinds: expected definite,indirect,possible,reachable,cached,"     \
    "death, all or none, got '" v "'"
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: bogus\n fun:a\n}\n", MLK_ERR("bogus"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: definite,\n fun:a\n}\n",
             MLK_ERR("definite,"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: ,definite\n fun:a\n}\n",
             MLK_ERR(",definite"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: definite,,possible\n fun:a\n}\n",
             MLK_ERR("definite,,possible"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: definite possible\n fun:a\n}\n",
             MLK_ERR("definite possible"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: Definite\n fun:a\n}\n", MLK_ERR("Definite"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: all,definite\n fun:a\n}\n",
             MLK_ERR("all,definite"));
    /* An empty set would silently never match. */
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds:\n fun:a\n}\n", MLK_ERR(""));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds:   \n fun:a\n}\n", MLK_ERR(""));
#undef MLK_ERR
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: all\n match-leak-kinds: all\n fun:a\n}\n",
             "t.supp:5: error: match-leak-kinds: must come once, right after the TOOL:KIND line");
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a\n match-leak-kinds: all\n}\n",
             "t.supp:5: error: match-leak-kinds: must come once, right after the TOOL:KIND line");
}
END_TEST

/* API error entries: gpuleak:KIND for every error kind (common/error_kind.h). */
START_TEST(test_error_entries)
{
    LOAD_OK("{\n"
            "   freed twice\n"
            "   gpuleak:DoubleFree\n"
            "   fun:cuMemFree_v2\n"
            "   fun:release\n"
            "}\n"
            "{\n invalid\n gpuleak:InvalidFree\n fun:a\n}\n"
            "{\n mismatched\n Memcheck,gpuleak:MismatchedFree\n obj:*libcuda.so*\n}\n"
            "{\n range\n gpuleak:InvalidRange\n src:copy.cu:7\n}\n"
            "{\n freed range\n gpuleak:FreedRange\n ...\n}\n"
            "{\n oom\n gpuleak:OutOfMemory\n fun:cudaMalloc\n ...\n}\n"
            "{\n a leak\n gpuleak:Leak\n fun:a\n}\n"
            "{\n not ours\n Memcheck:DoubleFree\n fun:a\n}\n");
    ck_assert_uint_eq(set.n, 7);
    ck_assert_uint_eq(set.other_tools, 1);
    const struct gl_supp *e = &set.v[0];
    ck_assert_str_eq(e->name, "freed twice");
    ck_assert_int_eq(e->line, 1);
    ck_assert_int_eq(e->kind, GL_SUPP_ERROR);
    ck_assert_uint_eq(e->error_kind, GL_ERR_DOUBLE_FREE);
    ck_assert_uint_eq(e->nframes, 2);
    ck_assert_int_eq(e->frames[0].type, GL_SF_FUN);
    ck_assert_str_eq(e->frames[0].pattern, "cuMemFree_v2");
    ck_assert_str_eq(e->frames[1].pattern, "release");
    static const unsigned want[] = {GL_ERR_DOUBLE_FREE,     GL_ERR_INVALID_FREE,
                                    GL_ERR_MISMATCHED_FREE, GL_ERR_INVALID_RANGE,
                                    GL_ERR_FREED_RANGE,     GL_ERR_OUT_OF_MEMORY};
    for (unsigned i = 0; i < 6; i++) {
        ck_assert_msg(set.v[i].kind == GL_SUPP_ERROR, "entry %u: kind %d", i, set.v[i].kind);
        ck_assert_msg(set.v[i].error_kind == want[i], "entry %u: error kind %u", i,
                      set.v[i].error_kind);
    }
    ck_assert_str_eq(set.v[2].name, "mismatched");
    ck_assert_int_eq(set.v[2].frames[0].type, GL_SF_OBJ);
    ck_assert_int_eq(set.v[3].frames[0].type, GL_SF_SRC);
    ck_assert_int_eq(set.v[3].frames[0].line, 7);
    ck_assert_int_eq(set.v[4].frames[0].type, GL_SF_ANY);
    ck_assert_int_eq(set.v[6].kind, GL_SUPP_LEAK);
    ck_assert_uint_eq(set.v[6].error_kind, GL_ERR_NONE);
}
END_TEST

START_TEST(test_error_entry_match_leak_kinds)
{
    LOAD_BAD("{\n n\n gpuleak:DoubleFree\n match-leak-kinds: definite\n fun:a\n}\n",
             "t.supp:4: error: match-leak-kinds: belongs to Leak and Cached entries, not "
             "DoubleFree");
    LOAD_BAD("{\n n\n gpuleak:OutOfMemory\n match-leak-kinds: all\n fun:a\n}\n",
             "t.supp:4: error: match-leak-kinds: belongs to Leak and Cached entries, not "
             "OutOfMemory");
    /* After a frame line, the usual message. */
    LOAD_BAD("{\n n\n gpuleak:InvalidFree\n fun:a\n match-leak-kinds: all\n}\n",
             "t.supp:5: error: match-leak-kinds: must come once, right after the TOOL:KIND line");
    /* Kind names are case-sensitive. */
    LOAD_BAD("{\n name\n gpuleak:doublefree\n fun:a\n}\n",
             "t.supp:3: error: unknown kind 'doublefree' for gpuleak (expected Leak, Cached, "
             "InvalidFree, DoubleFree, MismatchedFree, InvalidRange, FreedRange, OutOfMemory, Growth or ObserverMismatch)");
    LOAD_BAD("{\n n\n gpuleak:DoubleFree\n}\n",
             "t.supp:4: error: the entry opened at line 1 has no frame lines (fun:, obj:, src: or "
             "...)");
}
END_TEST

START_TEST(test_error_bad_frame_line)
{
#define FRAME_ERR(line, got)                                                                       \
    "t.supp:" line ": error: expected a frame line (fun:NAME, obj:PATH, src:FILE[:LINE] or ...) "  \
    "or '}', got '" got "'"
    LOAD_BAD("{\n n\n gpuleak:Leak\n foo:bar\n}\n", FRAME_ERR("4", "foo:bar"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a\n\n write(buf)\n}\n", FRAME_ERR("6", "write(buf)"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n ....\n}\n", FRAME_ERR("4", "...."));
    LOAD_BAD("{\n n\n gpuleak:Leak\n Fun:a\n}\n", FRAME_ERR("4", "Fun:a"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun :a\n}\n", FRAME_ERR("4", "fun :a"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a }\n", "t.supp:4: error: end of file inside the entry "
                                                 "opened at line 1: missing '}'");
#undef FRAME_ERR
}
END_TEST

START_TEST(test_error_empty_pattern)
{
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:\n}\n", "t.supp:4: error: empty pattern after 'fun:'");
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a\n obj:   \n}\n",
             "t.supp:5: error: empty pattern after 'obj:'");
    LOAD_BAD("{\n n\n gpuleak:Leak\n src:\r\n}\n", "t.supp:4: error: empty pattern after 'src:'");
    LOAD_BAD("{\n n\n gpuleak:Leak\n src::12\n}\n",
             "t.supp:4: error: empty file name in 'src::12'");
    LOAD_BAD("{\n n\n gpuleak:Leak\n src:a.c:0\n}\n",
             "t.supp:4: error: bad line number in 'src:a.c:0'");
    LOAD_BAD("{\n n\n gpuleak:Leak\n src:a.c:99999999999999999999999\n}\n",
             "t.supp:4: error: bad line number in 'src:a.c:99999999999999999999999'");
}
END_TEST

START_TEST(test_error_too_many_frames)
{
    char text[2048] = "\n{\n   deep\n   gpuleak:Leak\n   match-leak-kinds: all\n";
    for (int i = 0; i <= GL_SUPP_MAX_FRAMES; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "   fun:f%d\n", i);
    strcat(text, "}\n");
    /* The 25th frame line is line 5 + 25. */
    load_bad_at(text, strlen(text),
                "t.supp:30: error: more than 24 frame lines in the entry opened at line 2",
                __LINE__);
}
END_TEST

START_TEST(test_error_no_frames)
{
    LOAD_BAD("{\n n\n gpuleak:Leak\n}\n",
             "t.supp:4: error: the entry opened at line 1 has no frame lines (fun:, obj:, src: or "
             "...)");
    LOAD_BAD("{\n n\n gpuleak:Cached\n match-leak-kinds: all\n # c\n}\n",
             "t.supp:6: error: the entry opened at line 1 has no frame lines (fun:, obj:, src: or "
             "...)");
}
END_TEST

START_TEST(test_error_brace_inside_entry)
{
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a\n{\n m\n gpuleak:Leak\n fun:b\n}\n",
             "t.supp:5: error: '{' inside the entry opened at line 1: its '}' is missing");
    LOAD_BAD("{\n n\n gpuleak:Leak\n {\n",
             "t.supp:4: error: '{' inside the entry opened at line 1: its '}' is missing");
    /* In another tool's entry too. */
    LOAD_BAD("\n{\n n\n Memcheck:Leak\n fun:a\n{\n m\n Memcheck:Leak\n fun:b\n}\n",
             "t.supp:6: error: '{' inside the entry opened at line 2: its '}' is missing");
}
END_TEST

/* A NUL byte would cut a line short silently: it is an error wherever it matters. */
START_TEST(test_error_nul_byte)
{
#define NUL_ERR(line) "t.supp:" line ": error: a NUL byte in the line"
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:ab\0cd\n}\n", NUL_ERR("4"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n fun:a\n fun:\0\n}\n", NUL_ERR("5"));
    LOAD_BAD("{\n n\n gpuleak:Leak\n match-leak-kinds: all\0\n fun:a\n}\n", NUL_ERR("4"));
    /* ...in the entry's '{', name and kind lines too: "{\0x" is no '{'. */
    LOAD_BAD("{\0 junk\n n\n gpuleak:Leak\n fun:a\n}\n", NUL_ERR("1"));
    LOAD_BAD("{\n na\0me\n gpuleak:Leak\n fun:a\n}\n", NUL_ERR("2"));
    LOAD_BAD("{\n n\n gpuleak:Leak\0Cached\n fun:a\n}\n", NUL_ERR("3"));
    /* A NUL in a comment does no harm. */
    LOAD_OK("# a comment \0 with a NUL\n{\n n\n gpuleak:Leak\n fun:a\n}\n");
    ck_assert_uint_eq(set.n, 1);
    ck_assert_str_eq(set.v[0].frames[0].pattern, "a");
#undef NUL_ERR
}
END_TEST

/* No line is too long: a name of any length reads back whole (generated
 * entries carry the names as they are, demangled C++ templates included). */
START_TEST(test_long_names_read_whole)
{
    for (size_t n = 5000; n <= 200000; n *= 40) {
        size_t cap = n + 64;
        char *text = malloc(cap);
        ck_assert_ptr_nonnull(text);
        strcpy(text, "{\n n\n gpuleak:Leak\n fun:");
        size_t len = strlen(text);
        memset(text + len, 'a', n);
        len += n;
        memcpy(text + len, "\n}\n", 4);
        len += 3;
        gl_suppressions_set_free(&set);
        gl_suppressions_set_init(&set);
        load_ok_at(text, len, __LINE__);
        ck_assert_uint_eq(strlen(set.v[0].frames[0].pattern), n);
        free(text);
    }
}
END_TEST

/* What gpuleak generates reads back with its own parser, whatever the names'
 * length: a 20,000-character C++ name, 24 frames. */
START_TEST(test_generated_long_entry_reads_back)
{
    static char name[20001];
    memset(name, 'x', sizeof name - 1);
    memcpy(name, "ns::f<", 6);
    name[sizeof name - 2] = '>';
    struct gl_frame frames[24];
    memset(frames, 0, sizeof frames);
    for (int i = 0; i < 24; i++)
        frames[i].function = name;
    size_t need = gl_suppressions_generate(NULL, 0, frames, 24, GL_LEAK_DEFINITE);
    ck_assert_uint_gt(need, 24 * 20000);
    char *text = malloc(need + 1);
    ck_assert_uint_eq(gl_suppressions_generate(text, need + 1, frames, 24, GL_LEAK_DEFINITE), need);
    ck_assert_int_eq(text[need - 2], '}');
    gl_suppressions_set_free(&set);
    gl_suppressions_set_init(&set);
    load_ok_at(text, need, __LINE__);
    ck_assert_uint_eq(set.n, 1);
    ck_assert_uint_eq(strlen(set.v[0].frames[0].pattern), strlen(name));
    free(text);
}
END_TEST

/* compute-sanitizer's XML (or Valgrind's) given to --suppressions: named. */
START_TEST(test_error_xml_file)
{
    LOAD_BAD("<?xml version=\"1.0\"?>\n<ComputeSanitizerOutput>\n</ComputeSanitizerOutput>\n",
             "t.supp:1: error: an XML file, not a suppression file (compute-sanitizer's or "
             "Valgrind's XML output?): gpuleak reads Valgrind-style entries in braces, as "
             "--gen-suppressions=all prints them");
}
END_TEST

START_TEST(test_error_keeps_earlier_entries)
{
    const char *text = "{\n good\n gpuleak:Leak\n fun:a\n}\n{\n bad\n gpuleak:Leak\n fun:\n}\n";
    ck_assert_int_eq(gl_suppressions_load_text(&set, text, strlen(text), "k.supp", err, sizeof err), -1);
    ck_assert_str_eq(err, "k.supp:9: error: empty pattern after 'fun:'");
    ck_assert_uint_eq(set.n, 1);
    ck_assert_str_eq(set.v[0].name, "good");
}
END_TEST

START_TEST(test_error_truncated_to_errlen)
{
    char small[20];
    memset(small, 'x', sizeof small);
    const char *text = "nonsense\n";
    ck_assert_int_eq(gl_suppressions_load_text(&set, text, strlen(text), "t.supp", small, sizeof small),
                     -1);
    ck_assert_str_eq(small, "t.supp:1: error: ex");
}
END_TEST

START_TEST(test_load_file)
{
    char path[4096];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpuleak-supp-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "{\n from a file\n gpuleak:Leak\n fun:f\n}\n{\n bad\n gpuleak:Nope\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ck_assert_int_eq(gl_suppressions_load_file(&set, path, err, sizeof err), -1);
    char want[4400];
    snprintf(want, sizeof want,
             "%s:8: error: unknown kind 'Nope' for gpuleak (expected Leak, Cached, InvalidFree, "
             "DoubleFree, MismatchedFree, InvalidRange, FreedRange, OutOfMemory, Growth or ObserverMismatch)",
             path);
    ck_assert_str_eq(err, want);
    ck_assert_uint_eq(set.n, 1);
    ck_assert_str_eq(set.v[0].file, path);
    unlink(path);
}
END_TEST

START_TEST(test_missing_file)
{
    ck_assert_int_eq(gl_suppressions_load_file(&set, "/nonexistent-dir/x.supp", err, sizeof err), -1);
    ck_assert_str_eq(err, "/nonexistent-dir/x.supp: error: cannot read suppressions: No such file "
                          "or directory");
    ck_assert_uint_eq(set.n, 0);
    /* A directory cannot be read either. */
    ck_assert_int_eq(gl_suppressions_load_file(&set, "/", err, sizeof err), -1);
    ck_assert_msg(strncmp(err, "/: error: cannot read suppressions", 34) == 0, "%s", err);
    ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

/* ---- real-world files: every Valgrind suppression file installed here ---- */

START_TEST(test_real_world_files)
{
    static const char *const patterns[] = {
        "/usr/libexec/valgrind/*.supp",
        "/usr/lib/valgrind/*.supp",
        "/usr/lib/x86_64-linux-gnu/valgrind/*.supp",
        "/usr/share/glib-2.0/valgrind/glib.supp",
        "/usr/share/gtk-3.0/valgrind/gtk.supp",
        "/usr/share/gtk-4.0/valgrind/*.supp",
    };
    int files = 0;
    for (size_t p = 0; p < GL_ARRAY_SIZE(patterns); p++) {
        glob_t g;
        if (glob(patterns[p], 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            struct gl_supp_set s;
            gl_suppressions_set_init(&s);
            char e[1024] = "";
            int rc = gl_suppressions_load_file(&s, g.gl_pathv[i], e, sizeof e);
            size_t n = s.n, other = s.other_tools;
            gl_suppressions_set_free(&s);
            ck_assert_msg(rc == 0, "%s: %s", g.gl_pathv[i], e);
            ck_assert_msg(n == 0, "%s: %zu gpuleak entries", g.gl_pathv[i], n);
            ck_assert_msg(other > 0, "%s: no entries read", g.gl_pathv[i]);
            fprintf(stderr, "check_suppressions: %s: %zu entries of other tools\n", g.gl_pathv[i],
                    other);
            files++;
        }
        globfree(&g);
    }
    ck_assert_msg(files > 0, "no Valgrind suppression file found (/usr/libexec/valgrind, "
                             "/usr/share/glib-2.0/valgrind...): install the Debian packages "
                             "valgrind and libglib2.0-dev");
}
END_TEST

/* ---- matching ---- */

/* Parse one gpuleak entry from its lines (between TOOL:KIND and '}'). */
static const struct gl_supp *entry(const char *lines)
{
    char text[4096];
    snprintf(text, sizeof text, "{\n   e%zu\n   gpuleak:Leak\n%s}\n", set.n, lines);
    int rc = gl_suppressions_load_text(&set, text, strlen(text), "m.supp", err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    return &set.v[set.n - 1];
}

#define MATCH(lines, frames, n) gl_suppressions_matches(entry(lines), frames, n, GL_LEAK_DEFINITE)

START_TEST(test_match_fun_demangled_and_mangled)
{
    struct gl_frame f[] = {
        fr("make_buffer(unsigned long)", "_Z11make_bufferm", "/work/app", "/src/app.cu", 8),
        fr("main", NULL, "/work/app", "app.cu", 19),
    };
    ck_assert(MATCH("   fun:make_buffer(unsigned long)\n", f, 2));
    ck_assert(MATCH("   fun:_Z11make_bufferm\n", f, 2));
    ck_assert(MATCH("   fun:_Z11make_buffer*\n", f, 2));
    ck_assert(MATCH("   fun:make_buffer*\n   fun:main\n", f, 2));
    ck_assert(!MATCH("   fun:make_buffer\n", f, 2));
    ck_assert(!MATCH("   fun:main\n", f, 2));
    ck_assert(!MATCH("   fun:_Z11make_buffer\n", f, 2));
    /* Only the mangled name known. */
    struct gl_frame m[] = {fr(NULL, "_ZN3Foo3barEv", "/lib/libfoo.so", NULL, 0)};
    ck_assert(MATCH("   fun:_ZN3Foo3barEv\n", m, 1));
    ck_assert(!MATCH("   fun:Foo::bar()\n", m, 1));
    ck_assert(MATCH("   fun:???\n", m, 1)); /* the demangled name is unknown */
}
END_TEST

START_TEST(test_match_unknown_function)
{
    struct gl_frame f[] = {fr(NULL, NULL, "/usr/lib/libcuda.so.1", NULL, 0)};
    ck_assert(MATCH("   fun:???\n", f, 1));
    ck_assert(MATCH("   fun:*\n", f, 1));
    ck_assert(MATCH("   fun:?\?\?\n", f, 1));
    ck_assert(!MATCH("   fun:cuInit\n", f, 1));
    ck_assert(!MATCH("   fun:\\?\\?\\?x\n", f, 1));
    struct gl_frame known[] = {fr("cuInit", NULL, NULL, NULL, 0)};
    ck_assert(!MATCH("   fun:\\?\\?\\?\n", known, 1));
}
END_TEST

START_TEST(test_match_obj)
{
    struct gl_frame f[] = {
        fr("cudaMalloc", NULL, "/usr/local/cuda/lib64/libcudart.so.13", NULL, 0),
        fr(NULL, NULL, NULL, NULL, 0),
    };
    ck_assert(MATCH("   obj:/usr/local/cuda/lib64/libcudart.so.13\n", f, 2));
    ck_assert(MATCH("   obj:*/libcudart.so*\n", f, 2));
    ck_assert(MATCH("   obj:*libcudart*\n   obj:*\n", f, 2));
    ck_assert(MATCH("   obj:*\n   obj:???\n", f, 2)); /* no object: "???" */
    ck_assert(!MATCH("   obj:libcudart.so.13\n", f, 2));
    ck_assert(!MATCH("   obj:*/libcuda.so*\n", f, 2));
    ck_assert(!MATCH("   obj:*\n   obj:/*\n", f, 2));
}
END_TEST

START_TEST(test_match_src)
{
    struct gl_frame f[] = {
        fr("make_buffer", NULL, "/work/app", "/src/app/app.cu", 8),
        fr("helper", NULL, "/work/app", NULL, 0),
        fr("main", NULL, "/work/app", "main.cpp", 19),
    };
    ck_assert(MATCH("   src:app.cu:8\n", f, 3));
    ck_assert(MATCH("   src:app.cu\n", f, 3));
    ck_assert(MATCH("   src:*.cu\n", f, 3));
    ck_assert(MATCH("   src:app.c?:8\n", f, 3));
    ck_assert(!MATCH("   src:app.cu:9\n", f, 3));
    ck_assert(!MATCH("   src:app.c\n", f, 3));
    ck_assert(!MATCH("   src:/src/app/app.cu\n", f, 3)); /* the file's base name */
    /* No file: a src: line does not match, even src:*. */
    ck_assert(!MATCH("   src:app.cu\n   src:*\n", f, 3));
    ck_assert(MATCH("   src:app.cu:8\n   fun:helper\n   src:main.cpp:19\n", f, 3));
    ck_assert(!MATCH("   src:app.cu:8\n   fun:helper\n   src:main.cpp:18\n", f, 3));
}
END_TEST

START_TEST(test_match_ellipsis)
{
    struct gl_frame f[] = {
        fr("cudaMalloc", NULL, NULL, NULL, 0), fr("a", NULL, NULL, NULL, 0),
        fr("b", NULL, NULL, NULL, 0),          fr("c", NULL, NULL, NULL, 0),
        fr("main", NULL, NULL, NULL, 0),
    };
    /* At the start. */
    ck_assert(MATCH("   ...\n   fun:main\n", f, 5));
    ck_assert(MATCH("   ...\n   fun:cudaMalloc\n", f, 5)); /* none included */
    ck_assert(MATCH("   ...\n   fun:b\n   fun:c\n", f, 5));
    ck_assert(!MATCH("   ...\n   fun:b\n   fun:a\n", f, 5));
    ck_assert(!MATCH("   ...\n   fun:nowhere\n", f, 5));
    /* In the middle. */
    ck_assert(MATCH("   fun:cudaMalloc\n   ...\n   fun:main\n", f, 5));
    ck_assert(MATCH("   fun:cudaMalloc\n   ...\n   fun:a\n", f, 5)); /* none included */
    ck_assert(!MATCH("   fun:a\n   ...\n   fun:main\n", f, 5));
    ck_assert(!MATCH("   fun:cudaMalloc\n   ...\n   fun:cudaMalloc\n", f, 5));
    /* At the end. */
    ck_assert(MATCH("   fun:cudaMalloc\n   ...\n", f, 5));
    ck_assert(
        MATCH("   fun:cudaMalloc\n   fun:a\n   fun:b\n   fun:c\n   fun:main\n   ...\n", f, 5));
    /* Several. */
    ck_assert(MATCH("   ...\n   fun:a\n   ...\n   fun:c\n   ...\n", f, 5));
    ck_assert(MATCH("   ...\n   ...\n   fun:main\n   ...\n   ...\n", f, 5));
    ck_assert(!MATCH("   ...\n   fun:c\n   ...\n   fun:a\n   ...\n", f, 5));
    ck_assert(MATCH("   ...\n", f, 5));
    ck_assert(MATCH("   ...\n", f, 0));
    ck_assert(MATCH("   ...\n   ...\n", NULL, 0));
    ck_assert(!MATCH("   ...\n   fun:*\n", NULL, 0));
    /* "..." with globs: the first "c..." frame after the first "a". */
    ck_assert(MATCH("   fun:cuda*\n   ...\n   fun:?\n   fun:m*\n", f, 5));
    ck_assert(!MATCH("   fun:cuda*\n   ...\n   fun:??\n   fun:m*\n", f, 5));
}
END_TEST

START_TEST(test_match_globs)
{
    struct gl_frame f[] = {
        fr("operator new[](unsigned long)", "_Znam", NULL, NULL, 0),
        fr("a*b", NULL, NULL, NULL, 0),
        fr("path\\name", NULL, NULL, NULL, 0),
        fr("is_ready?", NULL, NULL, NULL, 0),
    };
    ck_assert(MATCH("   fun:operator new*\n", f, 4));
    ck_assert(MATCH("   fun:operator new[]*\n", f, 4));
    ck_assert(MATCH("   fun:operator ne?\?\?(*)\n", f, 4));
    ck_assert(MATCH("   fun:_Zna?\n", f, 4));
    ck_assert(!MATCH("   fun:_Zn?\n", f, 4));
    ck_assert(MATCH("   fun:*\n   fun:a\\*b\n", f, 4));
    ck_assert(MATCH("   fun:*\n   fun:a*b\n", f, 4));
    ck_assert(MATCH("   fun:*\n   fun:a?b\n", f, 4));
    ck_assert(MATCH("   fun:*\n   fun:*\n   fun:path\\\\name\n", f, 4));
    ck_assert(MATCH("   fun:*\n   fun:*\n   fun:path?name\n   fun:is_ready\\?\n", f, 4));
    struct gl_frame g[] = {fr("aXb", NULL, NULL, NULL, 0), fr("is_readyX", NULL, NULL, NULL, 0)};
    ck_assert(!MATCH("   fun:a\\*b\n", g, 2));
    ck_assert(MATCH("   fun:a*b\n", g, 2));
    ck_assert(!MATCH("   fun:*\n   fun:is_ready\\?\n", g, 2));
    ck_assert(MATCH("   fun:*\n   fun:is_ready?\n", g, 2));
}
END_TEST

START_TEST(test_match_extra_and_missing_frames)
{
    struct gl_frame f[] = {
        fr("cudaMalloc", NULL, NULL, NULL, 0),
        fr("make", NULL, NULL, NULL, 0),
        fr("main", NULL, NULL, NULL, 0),
    };
    /* Frames past the entry's last line do not matter. */
    ck_assert(MATCH("   fun:cudaMalloc\n", f, 3));
    ck_assert(MATCH("   fun:cudaMalloc\n   fun:make\n", f, 3));
    /* A stack shorter than the entry does not match... */
    ck_assert(!MATCH("   fun:cudaMalloc\n   fun:make\n   fun:main\n   fun:*\n", f, 3));
    ck_assert(!MATCH("   fun:cudaMalloc\n   fun:make\n", f, 1));
    ck_assert(!MATCH("   fun:*\n", f, 0));
    ck_assert(!MATCH("   obj:*\n", NULL, 0));
    /* ...unless what is left is "...". */
    ck_assert(MATCH("   fun:cudaMalloc\n   fun:make\n   fun:main\n   ...\n", f, 3));
    /* Only the frames given count. */
    ck_assert(!MATCH("   fun:cudaMalloc\n   fun:make\n   fun:main\n", f, 2));
    /* A stack deeper than any entry. */
    struct gl_frame deep[200];
    for (int i = 0; i < 200; i++)
        deep[i] = fr(i == 90 ? "needle" : "hay", NULL, NULL, NULL, 0);
    ck_assert(MATCH("   fun:hay\n   ...\n", deep, 200));
    /* As deep as the stack depot keeps (96 frames). */
    ck_assert(MATCH("   ...\n   fun:needle\n   fun:hay\n", deep, 200));
    ck_assert(!MATCH("   ...\n   fun:needle\n   fun:needle\n", deep, 200));
    ck_assert(!MATCH("   ...\n   fun:nothing\n", deep, 200));
}
END_TEST

START_TEST(test_match_leak_kinds)
{
    struct gl_frame f[] = {fr("cudaMalloc", NULL, NULL, NULL, 0)};
    const struct gl_supp *dp = entry("   match-leak-kinds: definite,possible\n   fun:cudaMalloc\n");
    ck_assert(gl_suppressions_matches(dp, f, 1, GL_LEAK_DEFINITE));
    ck_assert(gl_suppressions_matches(dp, f, 1, GL_LEAK_POSSIBLE));
    ck_assert(!gl_suppressions_matches(dp, f, 1, GL_LEAK_INDIRECT));
    ck_assert(!gl_suppressions_matches(dp, f, 1, GL_LEAK_REACHABLE));
    ck_assert(!gl_suppressions_matches(dp, f, 1, GL_LEAK_CACHED));
    const struct gl_supp *none = entry("   match-leak-kinds: none\n   ...\n");
    const struct gl_supp *any = entry("   ...\n");
    const struct gl_supp *cached = entry("   match-leak-kinds: cached\n   ...\n");
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++) {
        ck_assert(!gl_suppressions_matches(none, f, 1, k));
        ck_assert(gl_suppressions_matches(any, f, 1, k));
        ck_assert(gl_suppressions_matches(cached, f, 1, k) == (k == GL_LEAK_CACHED));
    }
}
END_TEST

/* Live at death, for saved logs of processes that died: "death" alone or in a
 * list matches only that kind; "all" and no line include it. */
START_TEST(test_match_leak_kinds_death)
{
    struct gl_frame f[] = {fr("cudaMalloc", NULL, NULL, NULL, 0)};
    const struct gl_supp *death = entry("   match-leak-kinds: death\n   fun:cudaMalloc\n");
    ck_assert_uint_eq(death->leak_kinds, KB(DEATH));
    const struct gl_supp *dd = entry("   match-leak-kinds: definite,death\n   fun:cudaMalloc\n");
    ck_assert_uint_eq(dd->leak_kinds, KB(DEFINITE) | KB(DEATH));
    const struct gl_supp *all = entry("   match-leak-kinds: all\n   ...\n");
    const struct gl_supp *any = entry("   ...\n");
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++) {
        ck_assert(gl_suppressions_matches(death, f, 1, k) == (k == GL_LEAK_DEATH));
        ck_assert(gl_suppressions_matches(dd, f, 1, k) ==
                  (k == GL_LEAK_DEATH || k == GL_LEAK_DEFINITE));
    }
    ck_assert(gl_suppressions_matches(all, f, 1, GL_LEAK_DEATH));
    ck_assert(gl_suppressions_matches(any, f, 1, GL_LEAK_DEATH));
    /* A Cached entry may name it too. */
    LOAD_OK("{\n c\n gpuleak:Cached\n match-leak-kinds: death\n fun:a\n}\n");
    ck_assert_int_eq(set.v[set.n - 1].kind, GL_SUPP_CACHED);
    ck_assert_uint_eq(set.v[set.n - 1].leak_kinds, KB(DEATH));
}
END_TEST

START_TEST(test_find_first_match_and_kind)
{
    const char *text =
        "{\n leak-definite-x\n gpuleak:Leak\n match-leak-kinds: definite\n fun:x\n}\n"
        "{\n cached-all\n gpuleak:Cached\n fun:*\n}\n"
        "{\n leak-x-any\n gpuleak:Leak\n fun:x\n}\n"
        "{\n leak-all\n gpuleak:Leak\n fun:*\n}\n"
        "{\n cached-y\n gpuleak:Cached\n fun:y\n}\n";
    ck_assert_int_eq(gl_suppressions_load_text(&set, text, strlen(text), "f.supp", err, sizeof err), 0);
    ck_assert_uint_eq(set.n, 5);
    struct gl_frame x[] = {fr("x", NULL, NULL, NULL, 0)};
    struct gl_frame y[] = {fr("y", NULL, NULL, NULL, 0)};
    struct gl_supp *e;
    e = gl_suppressions_find(&set, GL_SUPP_LEAK, x, 1, GL_LEAK_DEFINITE);
    ck_assert_ptr_eq(e, &set.v[0]);
    e = gl_suppressions_find(&set, GL_SUPP_LEAK, x, 1, GL_LEAK_POSSIBLE); /* the first's kinds differ */
    ck_assert_ptr_eq(e, &set.v[2]);
    e = gl_suppressions_find(&set, GL_SUPP_LEAK, y, 1, GL_LEAK_DEFINITE);
    ck_assert_ptr_eq(e, &set.v[3]);
    e = gl_suppressions_find(&set, GL_SUPP_CACHED, y, 1, GL_LEAK_DEFINITE); /* file order */
    ck_assert_ptr_eq(e, &set.v[1]);
    e = gl_suppressions_find(&set, GL_SUPP_CACHED, NULL, 0, GL_LEAK_DEFINITE);
    ck_assert_ptr_null(e);
    struct gl_supp_set empty;
    gl_suppressions_set_init(&empty);
    ck_assert_ptr_null(gl_suppressions_find(&empty, GL_SUPP_LEAK, x, 1, GL_LEAK_DEFINITE));
}
END_TEST

START_TEST(test_find_error)
{
    const char *text = "{\n leak-x\n gpuleak:Leak\n fun:x\n}\n"
                       "{\n double-x-main\n gpuleak:DoubleFree\n fun:x\n fun:main\n}\n"
                       "{\n double-any\n gpuleak:DoubleFree\n ...\n fun:y\n}\n"
                       "{\n invalid-x\n gpuleak:InvalidFree\n fun:x\n}\n"
                       "{\n range-all\n gpuleak:InvalidRange\n fun:*\n}\n";
    ck_assert_int_eq(gl_suppressions_load_text(&set, text, strlen(text), "e.supp", err, sizeof err), 0);
    ck_assert_uint_eq(set.n, 5);
    struct gl_frame xm[] = {fr("x", NULL, NULL, NULL, 0), fr("main", NULL, NULL, NULL, 0)};
    struct gl_frame xo[] = {fr("x", NULL, NULL, NULL, 0), fr("other", NULL, NULL, NULL, 0)};
    struct gl_frame zy[] = {fr("z", NULL, NULL, NULL, 0), fr("w", NULL, NULL, NULL, 0),
                            fr("y", NULL, NULL, NULL, 0)};
    /* By kind and frames. */
    ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_DOUBLE_FREE, xm, 2), &set.v[1]);
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_DOUBLE_FREE, xo, 2));
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_DOUBLE_FREE, xm, 1)); /* stack too short */
    ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_DOUBLE_FREE, zy, 3), &set.v[2]);
    ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_INVALID_FREE, xm, 2), &set.v[3]);
    ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_INVALID_FREE, xo, 2), &set.v[3]);
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_INVALID_FREE, zy, 3));
    ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_INVALID_RANGE, zy, 3), &set.v[4]);
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_INVALID_RANGE, NULL, 0));
    /* A kind with no entry, and no kind at all: nothing, not even the Leak entry. */
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_MISMATCHED_FREE, xm, 2));
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_FREED_RANGE, xm, 2));
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, xm, 2));
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_NONE, xm, 2));
    /* Leak lookups never return error entries. */
    ck_assert_ptr_eq(gl_suppressions_find(&set, GL_SUPP_LEAK, xm, 2, GL_LEAK_DEFINITE), &set.v[0]);
    ck_assert_ptr_null(gl_suppressions_find(&set, GL_SUPP_LEAK, zy, 3, GL_LEAK_DEFINITE));
    ck_assert_ptr_null(gl_suppressions_find(&set, GL_SUPP_CACHED, xm, 2, GL_LEAK_DEFINITE));
    struct gl_supp_set empty;
    gl_suppressions_set_init(&empty);
    ck_assert_ptr_null(gl_suppressions_find_error(&empty, GL_ERR_DOUBLE_FREE, xm, 2));
}
END_TEST

/* Python frames (common/frame.h: python set, ip the code object's address, no
 * object) match like any other: fun: the qualified name, src: the file's base
 * name and the line; one entry line per frame. */
static struct gl_frame pyfr(const char *fn, const char *file, int line)
{
    static uintptr_t ip = 0x7f0000100000;
    ip += 0x100;
    return (struct gl_frame){.ip = ip, .function = fn, .file = file, .line = line, .python = true};
}

START_TEST(test_match_python_frames)
{
    const char *text = "{\n grow\n gpuleak:Growth\n fun:train_step\n src:train.py:42\n}\n"
                       "{\n grow-line\n gpuleak:Growth\n src:train.py:42\n}\n"
                       "{\n leak\n gpuleak:Leak\n ...\n fun:train_step\n}\n";
    ck_assert_int_eq(gl_suppressions_load_text(&set, text, strlen(text), "py.supp", err, sizeof err), 0);
    ck_assert_uint_eq(set.n, 3);
    ck_assert_int_eq(set.v[0].kind, GL_SUPP_ERROR);
    ck_assert_uint_eq(set.v[0].error_kind, GL_ERR_GROWTH);
    /* train_step, called at train.py:42 by step() in the same file. */
    const char *paths[] = {"/home/u/train.py", "train.py"};
    for (int i = 0; i < 2; i++) {
        struct gl_frame called[] = {pyfr("train_step", paths[i], 30), pyfr("step", paths[i], 42),
                                    pyfr("<module>", paths[i], 60)};
        ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_GROWTH, called, 3), &set.v[0]);
        /* Allocated at train.py:42 itself, called from <module>: the entry's
         * second line is about the second frame (line 60), so only the
         * one-line entry matches. */
        struct gl_frame at42[] = {pyfr("train_step", paths[i], 42), pyfr("<module>", paths[i], 60)};
        ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_GROWTH, at42, 2), &set.v[1]);
        ck_assert(!gl_suppressions_matches(&set.v[0], at42, 2, 0));
        /* Other kinds and lookups see none of them. */
        ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, called, 3));
        ck_assert_ptr_null(gl_suppressions_find(&set, GL_SUPP_CACHED, called, 3, GL_LEAK_DEFINITE));
        ck_assert_ptr_eq(gl_suppressions_find(&set, GL_SUPP_LEAK, called, 3, GL_LEAK_DEFINITE), &set.v[2]);
    }
    /* Another line, another function, another file: no match. */
    struct gl_frame other[] = {pyfr("train_step", "/home/u/train.py", 43),
                               pyfr("step", "/home/u/train.py", 41)};
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_GROWTH, other, 2));
    struct gl_frame eval[] = {pyfr("eval_step", "/home/u/train.py", 30),
                              pyfr("step", "/home/u/train.py", 42)};
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_GROWTH, eval, 2));
    struct gl_frame elsewhere[] = {pyfr("train_step", "/home/u/train2.py", 30),
                                   pyfr("step", "/home/u/train2.py", 42)};
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_GROWTH, elsewhere, 2));

    /* src: is matched against the file's base name, with globs; obj: sees
     * "???" (a Python frame has no object), so obj:* matches. */
    struct gl_frame f[] = {pyfr("Net.forward", "/home/u/pkg/model.py", 12),
                           pyfr("<module>", "/home/u/train.py", 60)};
    ck_assert(MATCH("   src:model.py:12\n", f, 2));
    ck_assert(MATCH("   src:model.py\n", f, 2));
    ck_assert(MATCH("   src:*.py\n   src:train.py:60\n", f, 2));
    ck_assert(!MATCH("   src:/home/u/pkg/model.py:12\n", f, 2));
    ck_assert(!MATCH("   src:*/model.py\n", f, 2));
    ck_assert(!MATCH("   src:model.py:13\n", f, 2));
    ck_assert(MATCH("   fun:Net.*\n   fun:<module>\n", f, 2));
    ck_assert(MATCH("   obj:*\n   obj:*\n", f, 2));
    ck_assert(!MATCH("   obj:/home/u/*\n", f, 2));
    /* Native and Python frames in one stack. */
    struct gl_frame mixed[] = {
        fr("cudaMalloc", NULL, "/usr/local/cuda/lib64/libcudart.so.13", NULL, 0),
        fr("at::native::empty_cuda(...)", "_ZN2at6native10empty_cudaEv", "/opt/libtorch_cuda.so",
           NULL, 0),
        pyfr("train_step", "/home/u/train.py", 42),
    };
    ck_assert(MATCH("   fun:cudaMalloc\n   ...\n   fun:train_step\n", mixed, 3));
    ck_assert(MATCH("   fun:cudaMalloc\n   obj:*libtorch_cuda.so\n   src:train.py:42\n", mixed, 3));
    ck_assert(!MATCH("   fun:cudaMalloc\n   fun:train_step\n", mixed, 3));
}
END_TEST

START_TEST(test_growth_entries)
{
    /* gpuleak:Growth is an error kind: no match-leak-kinds. */
    LOAD_OK("{\n g\n gpuleak:Growth\n ...\n}\n");
    ck_assert_uint_eq(set.n, 1);
    ck_assert_int_eq(set.v[0].kind, GL_SUPP_ERROR);
    ck_assert_uint_eq(set.v[0].error_kind, GL_ERR_GROWTH);
    LOAD_BAD("{\n n\n gpuleak:Growth\n match-leak-kinds: all\n fun:a\n}\n",
             "t.supp:4: error: match-leak-kinds: belongs to Leak and Cached entries, not Growth");
}
END_TEST

/* ---- globs ---- */

START_TEST(test_glob_edges)
{
    static const struct {
        const char *p, *t;
        bool want;
    } cases[] = {
        {"", "", true},           {"", "a", false},        {"a", "", false},
        {"*", "", true},          {"**", "", true},        {"***", "abc", true},
        {"?", "", false},         {"?", "a", true},        {"??", "a", false},
        {"a", "a", true},         {"A", "a", false},       {"a*", "a", true},
        {"*a", "ba", true},       {"*a", "ab", false},     {"a*b*c", "aXbYc", true},
        {"a*b*c", "aXbY", false}, {"a*b*c", "abc", true},  {"*.so*", "/lib/libc.so.6", true},
        {"a\\", "a\\", true},     {"a\\", "a", false},     {"\\", "\\", true},
        {"\\*", "*", true},       {"\\*", "a", false},     {"\\*", "", false},
        {"\\?", "?", true},       {"\\?", "x", false},     {"\\\\", "\\", true},
        {"\\\\*", "\\abc", true}, {"\\a", "a", true},      {"*\\*", "x*", true},
        {"*\\*", "x*y", false},   {"*?", "", false},       {"*?", "x", true},
        {"?*?", "ab", true},      {"?*?", "a", false},     {"*a*", "bab", true},
        {"a*a", "aaa", true},     {"a*a", "a", false},     {"*ab", "aab", true},
        {"*abc", "ababc", true},  {"*aab", "aaaab", true}, {"x*y*z", "xyyyzzzy", false},
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(cases); i++)
        ck_assert_msg(gl_suppressions_glob_match(cases[i].p, cases[i].t) == cases[i].want,
                      "glob('%s', '%s') should be %s", cases[i].p, cases[i].t,
                      cases[i].want ? "true" : "false");
}
END_TEST

START_TEST(test_glob_pathological)
{
    size_t n = 100000;
    char *text = malloc(n + 2);
    ck_assert_ptr_nonnull(text);
    memset(text, 'a', n);
    text[n] = '\0';
    char stars[512] = "";
    for (int i = 0; i < 60; i++)
        strcat(stars, "*a");
    strcat(stars, "*b");
    double t0 = gl_clock_s();
    ck_assert(!gl_suppressions_glob_match("*a*a*a*a*a*b", text));
    ck_assert(!gl_suppressions_glob_match(stars, text));
    ck_assert(!gl_suppressions_glob_match("*?*?*?*?*?*?*?*?*b", text));
    ck_assert(!gl_suppressions_glob_match("*aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", text));
    text[n] = 'b';
    text[n + 1] = '\0';
    ck_assert(gl_suppressions_glob_match("*a*a*a*a*a*b", text));
    ck_assert(gl_suppressions_glob_match(stars, text));
    double t = gl_clock_s() - t0;
    ck_assert_msg(t < 2.0, "pathological globs took %.2f s", t);
    free(text);
}
END_TEST

/* ---- generating ---- */

START_TEST(test_generate_exact)
{
    struct gl_frame f[] = {
        {0x401000, "cudaMalloc", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13", NULL},
        {0x401100, "make_buffer(unsigned long)", "/src/app.cu", 8, "/work/app", "_Z11make_bufferm"},
        {0x7f0000001000, NULL, NULL, 0, "/usr/lib/libfoo.so.1", NULL},
        {0x7f12aa001000, NULL, NULL, 0, NULL, NULL},
        {0x401200, "main", "app.cu", 19, "/work/app", NULL},
    };
    char buf[1024];
    size_t len = gl_suppressions_generate(buf, sizeof buf, f, 5, GL_LEAK_DEFINITE);
    const char *want = "{\n"
                       "   <insert_a_suppression_name_here>\n"
                       "   gpuleak:Leak\n"
                       "   match-leak-kinds: definite\n"
                       "   fun:cudaMalloc\n"
                       "   fun:_Z11make_bufferm\n"
                       "   obj:/usr/lib/libfoo.so.1\n"
                       "   obj:*\n"
                       "   fun:main\n"
                       "}\n";
    tu_assert_text_eq(buf, want);
    ck_assert_uint_eq(len, strlen(want));
    len = gl_suppressions_generate(buf, sizeof buf, f, 1, GL_LEAK_CACHED);
    tu_assert_text_eq(buf, "{\n   <insert_a_suppression_name_here>\n   gpuleak:Leak\n"
                           "   match-leak-kinds: cached\n   fun:cudaMalloc\n}\n");
}
END_TEST

/* A live-at-death record's generated entry says so, and reads back as an
 * entry for that kind only. */
START_TEST(test_generate_death_round_trip)
{
    struct gl_frame f[] = {
        {0x401000, "cudaMalloc", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13", NULL},
        {0x401100, "make_buffer(unsigned long)", "/src/app.cu", 8, "/work/app", "_Z11make_bufferm"},
    };
    char buf[1024];
    size_t len = gl_suppressions_generate(buf, sizeof buf, f, 2, GL_LEAK_DEATH);
    tu_assert_text_eq(buf, "{\n"
                           "   <insert_a_suppression_name_here>\n"
                           "   gpuleak:Leak\n"
                           "   match-leak-kinds: death\n"
                           "   fun:cudaMalloc\n"
                           "   fun:_Z11make_bufferm\n"
                           "}\n");
    ck_assert_uint_eq(len, strlen(buf));
    char e[256] = "";
    ck_assert_int_eq(gl_suppressions_load_text(&set, buf, len, "gen.supp", e, sizeof e), 0);
    ck_assert_uint_eq(set.n, 1);
    ck_assert_uint_eq(set.v[0].leak_kinds, KB(DEATH));
    ck_assert(gl_suppressions_matches(&set.v[0], f, 2, GL_LEAK_DEATH));
    ck_assert(!gl_suppressions_matches(&set.v[0], f, 2, GL_LEAK_DEFINITE));
    ck_assert(gl_suppressions_find(&set, GL_SUPP_LEAK, f, 2, GL_LEAK_DEATH) == &set.v[0]);
    /* The text a report prints after the record (gl_suppressions_entry) too. */
    size_t elen;
    char *text = gl_suppressions_entry(f, 2, GL_ERR_NONE, GL_LEAK_DEATH, &elen);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "   match-leak-kinds: death\n"));
    free(text);
}
END_TEST

START_TEST(test_generate_truncated)
{
    struct gl_frame f[] = {{0x1, "cudaMalloc", NULL, 0, NULL, NULL}};
    char full[512];
    size_t len = gl_suppressions_generate(full, sizeof full, f, 1, GL_LEAK_POSSIBLE);
    ck_assert_uint_eq(len, strlen(full));
    char small[16];
    memset(small, 'x', sizeof small);
    ck_assert_uint_eq(gl_suppressions_generate(small, sizeof small, f, 1, GL_LEAK_POSSIBLE), len);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, full, sizeof small - 1) == 0);
    char one[1] = {'x'};
    ck_assert_uint_eq(gl_suppressions_generate(one, 1, f, 1, GL_LEAK_POSSIBLE), len);
    ck_assert_int_eq(one[0], '\0');
    ck_assert_uint_eq(gl_suppressions_generate(NULL, 0, f, 1, GL_LEAK_POSSIBLE), len);
    /* Cut inside an escaped character: still NUL-terminated within the buffer. */
    struct gl_frame g[] = {{0x1, "****", NULL, 0, NULL, NULL}};
    char all[256];
    size_t glen = gl_suppressions_generate(all, sizeof all, g, 1, GL_LEAK_DEFINITE);
    for (size_t cut = 60; cut < glen + 2; cut++) {
        char b[256];
        memset(b, 'x', sizeof b);
        ck_assert_uint_eq(gl_suppressions_generate(b, cut, g, 1, GL_LEAK_DEFINITE), glen);
        ck_assert_uint_eq(strlen(b), cut - 1 < glen ? cut - 1 : glen);
        ck_assert(strncmp(b, all, strlen(b)) == 0);
        ck_assert_int_eq(b[cut], 'x');
    }
}
END_TEST

static bool known(const char *s) { return s && *s; }

/* The generated text, read back, is one entry that matches exactly this stack
 * with this leak kind: no other leak kind, nor the stack with any one known
 * frame changed. */
static void check_round_trip(const struct gl_frame *frames, unsigned n, const char *what)
{
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++) {
        char text[16384];
        size_t len = gl_suppressions_generate(text, sizeof text, frames, n, k);
        ck_assert_uint_lt(len, sizeof text);
        struct gl_supp_set s;
        gl_suppressions_set_init(&s);
        char e[1024] = "";
        int rc = gl_suppressions_load_text(&s, text, len, "gen.supp", e, sizeof e);
        ck_assert_msg(rc == 0, "%s: generated entry rejected: %s\n%s", what, e, text);
        ck_assert_msg(s.n == 1, "%s: %zu entries", what, s.n);
        const struct gl_supp *g = &s.v[0];
        ck_assert_int_eq(g->kind, GL_SUPP_LEAK);
        ck_assert_str_eq(g->name, "<insert_a_suppression_name_here>");
        ck_assert_uint_eq(g->leak_kinds, GL_LEAK_KIND_BIT(k));
        ck_assert_msg(gl_suppressions_matches(g, frames, n, k), "%s: does not match its stack\n%s", what,
                      text);
        for (unsigned other = 0; other < GL_LEAK_NKINDS; other++)
            if (other != k)
                ck_assert_msg(!gl_suppressions_matches(g, frames, n, other), "%s: matches leak kind %u too",
                              what, other);
        struct gl_frame changed[64];
        ck_assert_uint_le(n, 64);
        unsigned upto = n < GL_SUPP_MAX_FRAMES ? n : GL_SUPP_MAX_FRAMES;
        for (unsigned i = 0; i < upto; i++) {
            memcpy(changed, frames, n * sizeof *frames);
            if (known(frames[i].function) || known(frames[i].mangled)) {
                changed[i].function = "some_other_function(int)";
                changed[i].mangled = frames[i].mangled ? "_Z19some_other_functioni" : NULL;
            } else if (known(frames[i].object)) {
                changed[i].object = "/usr/lib/libother.so.2";
            } else {
                continue; /* obj:* matches any frame: nothing to change */
            }
            ck_assert_msg(!gl_suppressions_matches(g, changed, n, k),
                          "%s: matches the stack with frame %u changed\n%s", what, i, text);
        }
        /* Nor a stack one frame short (when every line names a frame). */
        if (n > 0 && n <= GL_SUPP_MAX_FRAMES)
            ck_assert_msg(!gl_suppressions_matches(g, frames, n - 1, k), "%s: matches a shorter stack",
                          what);
        gl_suppressions_set_free(&s);
    }
}

START_TEST(test_generate_round_trip)
{
    struct gl_frame cxx[] = {
        {0x7f01, "operator new(unsigned long)", NULL, 0, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
         "_Znwm"},
        {0x4011, "void Foo::bar<int>(int*) const", "foo.h", 12, "/work/app", "_ZNK3Foo3barIiEEvPi"},
        {0x4012, "(anonymous namespace)::init()", "init.cc", 3, "/work/app",
         "_ZN12_GLOBAL__N_14initEv"},
        {0x4013, "main", "main.cc", 9, "/work/app", NULL},
    };
    check_round_trip(cxx, 4, "mangled C++");
    struct gl_frame unknown_fn[] = {
        {0x7f02, "cuMemAlloc_v2", NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL},
        {0x7f03, NULL, NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL},
        {0x7f04, NULL, NULL, 0, "/opt/my lib/libx.so", NULL},
        {0x4014, "main", NULL, 0, "/work/app", NULL},
    };
    check_round_trip(unknown_fn, 4, "unknown function with object");
    struct gl_frame nothing[] = {
        {0x7f05, NULL, NULL, 0, NULL, NULL},
        {0x7f06, NULL, NULL, 0, NULL, NULL},
    };
    check_round_trip(nothing, 2, "nothing known");
    struct gl_frame globby[] = {
        {0x4015, "operator*(Vec const&, float)", NULL, 0, NULL, NULL},
        {0x4016, "is_ready?", NULL, 0, NULL, NULL},
        {0x4017, NULL, NULL, 0, "/opt/we*rd/lib?.so", NULL},
        {0x4018, "back\\slash", NULL, 0, NULL, NULL},
        {0x4019, "*", NULL, 0, NULL, NULL},
        {0x401a, "x", NULL, 0, NULL, "??*"},
    };
    check_round_trip(globby, 6, "names with * ? and \\");
    /* With the globs quoted, a look-alike does not match. */
    {
        char text[4096];
        size_t len = gl_suppressions_generate(text, sizeof text, globby, 6, GL_LEAK_DEFINITE);
        ck_assert_ptr_nonnull(strstr(text, "   fun:operator\\*(Vec const&, float)\n"
                                           "   fun:is_ready\\?\n"
                                           "   obj:/opt/we\\*rd/lib\\?.so\n"
                                           "   fun:back\\\\slash\n"
                                           "   fun:\\*\n"
                                           "   fun:\\?\\?\\*\n"));
        struct gl_supp_set s;
        gl_suppressions_set_init(&s);
        ck_assert_int_eq(gl_suppressions_load_text(&s, text, len, "g.supp", err, sizeof err), 0);
        struct gl_frame alike[6];
        memcpy(alike, globby, sizeof alike);
        alike[0].function = "operatorX(Vec const&, float)";
        ck_assert(!gl_suppressions_matches(&s.v[0], alike, 6, GL_LEAK_DEFINITE));
        memcpy(alike, globby, sizeof alike);
        alike[2].object = "/opt/weXYrd/libZ.so";
        ck_assert(!gl_suppressions_matches(&s.v[0], alike, 6, GL_LEAK_DEFINITE));
        memcpy(alike, globby, sizeof alike);
        alike[4].function = "anything";
        ck_assert(!gl_suppressions_matches(&s.v[0], alike, 6, GL_LEAK_DEFINITE));
        gl_suppressions_set_free(&s);
    }
    /* Deeper than an entry may be: the first 24 frames, which is enough. */
    struct gl_frame deep[30];
    static char names[30][16];
    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof names[i], "level%d", i);
        deep[i] = (struct gl_frame){0x5000 + (uintptr_t)i, names[i], NULL, 0, NULL, NULL};
    }
    check_round_trip(deep, 30, "30 frames");
    char text[4096];
    gl_suppressions_generate(text, sizeof text, deep, 30, GL_LEAK_DEFINITE);
    ck_assert_ptr_nonnull(strstr(text, "   fun:level23\n}\n"));
    ck_assert_ptr_null(strstr(text, "level24"));
}
END_TEST

/* Empty names (a symbol table can hold them) are unknown names: "fun:" alone
 * would be an entry that cannot be read back. */
START_TEST(test_generate_empty_names)
{
    struct gl_frame f[] = {
        {0x4001, "", NULL, 0, "/work/app", NULL},
        {0x4002, "", NULL, 0, "", ""},
        {0x4003, "main", NULL, 0, NULL, NULL},
    };
    char text[1024];
    gl_suppressions_generate(text, sizeof text, f, 3, GL_LEAK_DEFINITE);
    ck_assert_ptr_nonnull(strstr(text, "   match-leak-kinds: definite\n"
                                       "   obj:/work/app\n"
                                       "   obj:*\n"
                                       "   fun:main\n}\n"));
    check_round_trip(f, 3, "empty names");
}
END_TEST

START_TEST(test_generate_error_exact)
{
    struct gl_frame f[] = {
        {0x401000, "cuMemFree_v2", NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL},
        {0x401100, "release(void*)", "/src/app.cu", 8, "/work/app", "_Z7releasePv"},
        {0x7f12aa001000, NULL, NULL, 0, NULL, NULL},
        {0x401200, "main", "app.cu", 19, "/work/app", NULL},
    };
    char buf[1024];
    size_t len = gl_suppressions_generate_error(buf, sizeof buf, f, 4, GL_ERR_DOUBLE_FREE);
    const char *want = "{\n"
                       "   <insert_a_suppression_name_here>\n"
                       "   gpuleak:DoubleFree\n"
                       "   fun:cuMemFree_v2\n"
                       "   fun:_Z7releasePv\n"
                       "   obj:*\n"
                       "   fun:main\n"
                       "}\n";
    tu_assert_text_eq(buf, want);
    ck_assert_uint_eq(len, strlen(want));
    len = gl_suppressions_generate_error(buf, sizeof buf, f, 1, GL_ERR_OUT_OF_MEMORY);
    tu_assert_text_eq(buf, "{\n   <insert_a_suppression_name_here>\n   gpuleak:OutOfMemory\n"
                           "   fun:cuMemFree_v2\n}\n");
    ck_assert_uint_eq(len, strlen(buf));
    /* Truncated like snprintf. */
    char small[16];
    memset(small, 'x', sizeof small);
    ck_assert_uint_eq(gl_suppressions_generate_error(small, sizeof small, f, 1, GL_ERR_OUT_OF_MEMORY), len);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, buf, sizeof small - 1) == 0);
    ck_assert_uint_eq(gl_suppressions_generate_error(NULL, 0, f, 1, GL_ERR_OUT_OF_MEMORY), len);
}
END_TEST

/* Every kind's generated entry reads back as an error entry of that kind that
 * gl_suppressions_find_error finds for this stack, and for no other kind. */
START_TEST(test_generate_growth_python_frames)
{
    struct gl_frame f[] = {pyfr("Net.forward.<locals>.f", "/home/u/model.py", 12),
                           pyfr("train_step", "/home/u/train.py", 42),
                           pyfr("<module>", "/home/u/train.py", 60)};
    char buf[1024];
    size_t len = gl_suppressions_generate_error(buf, sizeof buf, f, 3, GL_ERR_GROWTH);
    const char *want = "{\n"
                       "   <insert_a_suppression_name_here>\n"
                       "   gpuleak:Growth\n"
                       "   fun:Net.forward.<locals>.f\n"
                       "   fun:train_step\n"
                       "   fun:<module>\n"
                       "}\n";
    tu_assert_text_eq(buf, want);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_int_eq(gl_suppressions_load_text(&set, buf, len, "gen.supp", err, sizeof err), 0);
    ck_assert_ptr_eq(gl_suppressions_find_error(&set, GL_ERR_GROWTH, f, 3), &set.v[0]);
}
END_TEST

START_TEST(test_generate_error_round_trip)
{
    struct gl_frame f[] = {
        {0x7f01, "cuMemcpyHtoD_v2", NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL},
        {0x7f02, NULL, NULL, 0, "/opt/we*rd/lib?.so", NULL},
        {0x4011, "void Foo::bar<int>(int*) const", "foo.h", 12, "/work/app", "_ZNK3Foo3barIiEEvPi"},
        {0x4012, "main", "main.cc", 9, "/work/app", NULL},
    };
    for (unsigned k = GL_ERR_NONE + 1; k < GL_ERR_NKINDS; k++) {
        char text[4096];
        size_t len = gl_suppressions_generate_error(text, sizeof text, f, 4, k);
        ck_assert_uint_lt(len, sizeof text);
        ck_assert_ptr_null(strstr(text, "match-leak-kinds"));
        struct gl_supp_set s;
        gl_suppressions_set_init(&s);
        char e[1024] = "";
        int rc = gl_suppressions_load_text(&s, text, len, "gen.supp", e, sizeof e);
        ck_assert_msg(rc == 0, "kind %u: generated entry rejected: %s\n%s", k, e, text);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_int_eq(s.v[0].kind, GL_SUPP_ERROR);
        ck_assert_uint_eq(s.v[0].error_kind, k);
        ck_assert_uint_eq(s.v[0].nframes, 4);
        for (unsigned other = 0; other < GL_ERR_NKINDS; other++)
            ck_assert_msg((gl_suppressions_find_error(&s, other, f, 4) == &s.v[0]) == (other == k),
                          "kind %u: found for kind %u: %d", k, other,
                          gl_suppressions_find_error(&s, other, f, 4) != NULL);
        struct gl_frame changed[4];
        memcpy(changed, f, sizeof changed);
        changed[1].object = "/opt/weXYrd/libZ.so";
        ck_assert_ptr_null(gl_suppressions_find_error(&s, k, changed, 4));
        ck_assert_ptr_null(gl_suppressions_find_error(&s, k, f, 3));
        gl_suppressions_set_free(&s);
    }
}
END_TEST

START_TEST(test_unknown_kind_message_names_growth)
{
    /* The list of kinds in the message is the one the parser accepts:
     * gpuleak:Growth is accepted (test_growth_entries) and must be named. */
    struct gl_supp_set s;
    gl_suppressions_set_init(&s);
    const char text[] = "{\n name\n gpuleak:Bogus\n fun:a\n}\n";
    char e[1024] = "";
    ck_assert_int_eq(gl_suppressions_load_text(&s, text, sizeof text - 1, "t.supp", e, sizeof e), -1);
    gl_suppressions_set_free(&s);
    ck_assert_msg(strstr(e, "Growth") != NULL, "message does not name Growth: %s", e);
}
END_TEST

static Suite *suppressions_suite(void)
{
    Suite *s = suite_create("suppressions");
    TCase *tc = tcase_create("parse");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_minimal_entry);
    tcase_add_test(tc, test_empty_and_comment_only);
    tcase_add_test(tc, test_name_with_spaces_tabs_crlf);
    tcase_add_test(tc, test_comments_anywhere);
    tcase_add_test(tc, test_match_leak_kinds_forms);
    tcase_add_test(tc, test_tool_lists);
    tcase_add_test(tc, test_frame_forms);
    tcase_add_test(tc, test_max_frames);
    tcase_add_test(tc, test_other_tools_skipped);
    tcase_add_test(tc, test_two_files_in_one_set);
    tcase_add_test(tc, test_error_missing_brace);
    tcase_add_test(tc, test_error_eof_in_entry);
    tcase_add_test(tc, test_error_no_name);
    tcase_add_test(tc, test_error_bad_tool_kind);
    tcase_add_test(tc, test_error_unknown_kind);
    tcase_add_test(tc, test_error_match_leak_kinds);
    tcase_add_test(tc, test_error_entries);
    tcase_add_test(tc, test_error_entry_match_leak_kinds);
    tcase_add_test(tc, test_error_bad_frame_line);
    tcase_add_test(tc, test_error_empty_pattern);
    tcase_add_test(tc, test_error_too_many_frames);
    tcase_add_test(tc, test_error_no_frames);
    tcase_add_test(tc, test_error_brace_inside_entry);
    tcase_add_test(tc, test_error_nul_byte);
    tcase_add_test(tc, test_long_names_read_whole);
    tcase_add_test(tc, test_error_xml_file);
    tcase_add_test(tc, test_generated_long_entry_reads_back);
    tcase_add_test(tc, test_error_keeps_earlier_entries);
    tcase_add_test(tc, test_error_truncated_to_errlen);
    tcase_add_test(tc, test_load_file);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_real_world_files);
    suite_add_tcase(s, tc);

    tc = tcase_create("match");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_match_fun_demangled_and_mangled);
    tcase_add_test(tc, test_match_unknown_function);
    tcase_add_test(tc, test_match_obj);
    tcase_add_test(tc, test_match_src);
    tcase_add_test(tc, test_match_ellipsis);
    tcase_add_test(tc, test_match_globs);
    tcase_add_test(tc, test_match_extra_and_missing_frames);
    tcase_add_test(tc, test_match_leak_kinds);
    tcase_add_test(tc, test_match_leak_kinds_death);
    tcase_add_test(tc, test_find_first_match_and_kind);
    tcase_add_test(tc, test_find_error);
    tcase_add_test(tc, test_match_python_frames);
    tcase_add_test(tc, test_growth_entries);
    tcase_add_test(tc, test_glob_edges);
    tcase_add_test(tc, test_glob_pathological);
    suite_add_tcase(s, tc);

    tc = tcase_create("generate");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_generate_exact);
    tcase_add_test(tc, test_generate_death_round_trip);
    tcase_add_test(tc, test_generate_truncated);
    tcase_add_test(tc, test_generate_round_trip);
    tcase_add_test(tc, test_generate_empty_names);
    tcase_add_test(tc, test_generate_error_exact);
    tcase_add_test(tc, test_generate_error_round_trip);
    tcase_add_test(tc, test_generate_growth_python_frames);
    tcase_add_test(tc, test_unknown_kind_message_names_growth);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suppressions_suite)
