/* SPDX-License-Identifier: MIT */
/* lib/common/options.h: defaults, parsing of every option, serialization into
 * GPULEAK_OPTIONS and back, --help, and the man page's option list. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "common/util.h"
#include "common/options.h"
#include "gpuleak.h"

#ifndef GL_TOP_SRCDIR
#define GL_TOP_SRCDIR "."
#endif

#define KB(k) GL_LEAK_KIND_BIT(GL_LEAK_##k)

static struct gl_options opt;
static char err[1024];

static void setup(void)
{
    gl_options_defaults(&opt);
    memset(err, 0, sizeof err);
}

/* Parse one argument that must be accepted. */
static void parse_ok(const char *arg)
{
    err[0] = '\0';
    enum gl_arg_result r = gl_options_parse_arg(&opt, arg, err, sizeof err);
    ck_assert_msg(r == GL_ARG_OPTION, "'%s' rejected: %s", arg, err);
}

/* Parse one argument that must be rejected with exactly this message, leaving the
 * options as they were. */
static void parse_bad(const char *arg, const char *want_err)
{
    struct gl_options before = opt;
    err[0] = '\0';
    enum gl_arg_result r = gl_options_parse_arg(&opt, arg, err, sizeof err);
    ck_assert_msg(r == GL_ARG_ERROR, "'%s' accepted", arg);
    ck_assert_str_eq(err, want_err);
    ck_assert_ptr_null(strchr(err, '\n')); /* one line */
    ck_assert_msg(memcmp(&before, &opt, sizeof opt) == 0, "'%s' changed the options", arg);
}

static void assert_same_options(const struct gl_options *a, const struct gl_options *b)
{
    ck_assert_int_eq(a->leak_check, b->leak_check);
    ck_assert_int_eq(a->leak_resolution, b->leak_resolution);
    ck_assert_uint_eq(a->show_leak_kinds, b->show_leak_kinds);
    ck_assert_int_eq(a->num_callers, b->num_callers);
    ck_assert_int_eq(a->show_below_main, b->show_below_main);
    ck_assert_str_eq(a->log_file, b->log_file);
    ck_assert_int_eq(a->quiet, b->quiet);
    ck_assert_int_eq(a->verbose, b->verbose);
}

/* ---- defaults ---- */

START_TEST(test_defaults)
{
    struct gl_options o;
    memset(&o, 0xa5, sizeof o);
    gl_options_defaults(&o);
    ck_assert_int_eq(o.leak_check, GL_LEAK_CHECK_FULL);
    /* Live at death too: it only exists in a saved log of a process that died
     * (gpuleak --read), where those blocks are what the user asks about. */
    ck_assert_uint_eq(o.show_leak_kinds, KB(DEFINITE) | KB(POSSIBLE) | KB(DEATH));
    ck_assert_int_eq(o.num_callers, 12);
    ck_assert_int_eq(o.leak_resolution, GL_LEAK_RES_HIGH);
    ck_assert_int_eq(o.show_below_main, false);
    ck_assert_str_eq(o.log_file, "");
    ck_assert_int_eq(o.quiet, false);
    ck_assert_int_eq(o.verbose, 0);
}
END_TEST

/* ---- --leak-check ---- */

START_TEST(test_leak_check_values)
{
    parse_ok("--leak-check=no");
    ck_assert_int_eq(opt.leak_check, GL_LEAK_CHECK_NO);
    parse_ok("--leak-check=summary");
    ck_assert_int_eq(opt.leak_check, GL_LEAK_CHECK_SUMMARY);
    parse_ok("--leak-check=full");
    ck_assert_int_eq(opt.leak_check, GL_LEAK_CHECK_FULL);
}
END_TEST

START_TEST(test_leak_check_yes_is_full)
{
    parse_ok("--leak-check=no");
    ck_assert_int_eq(opt.leak_check, GL_LEAK_CHECK_NO);
    parse_ok("--leak-check=yes");
    ck_assert_int_eq(opt.leak_check, GL_LEAK_CHECK_FULL);
}
END_TEST

START_TEST(test_leak_check_bad)
{
    parse_bad("--leak-check=maybe",
              "--leak-check: invalid value 'maybe' (expected no|summary|full)");
    parse_bad("--leak-check=", "--leak-check: invalid value '' (expected no|summary|full)");
    parse_bad("--leak-check=FULL", "--leak-check: invalid value 'FULL' (expected no|summary|full)");
    parse_bad("--leak-check=ful", "--leak-check: invalid value 'ful' (expected no|summary|full)");
    parse_bad("--leak-check=fully",
              "--leak-check: invalid value 'fully' (expected no|summary|full)");
    parse_bad("--leak-check", "--leak-check: expects a value: --leak-check=no|summary|full");
}
END_TEST

/* ---- --check-signal ---- */

/* The signals a check may take: the two the launcher passes on that
 * nothing else sends (a terminal's hangup would check twice, once through
 * the launcher), whose default ends the process.  The mode's values keep gpuleak.h's order
 * (GPULEAK_CHECK_*). */
START_TEST(test_check_signal_values)
{
    ck_assert_int_eq(opt.check_signal, GL_CHECK_SIGNAL_NO);
    ck_assert_int_eq(opt.check_signal_mode, GPULEAK_CHECK_ADDED);
    parse_ok("--check-signal=SIGUSR1");
    ck_assert_int_eq(opt.check_signal, GL_CHECK_SIGNAL_USR1);
    parse_ok("--check-signal=SIGUSR2");
    ck_assert_int_eq(opt.check_signal, GL_CHECK_SIGNAL_USR2);
    parse_ok("--check-signal=no");
    ck_assert_int_eq(opt.check_signal, GL_CHECK_SIGNAL_NO);
    parse_ok("--check-signal-mode=full");
    ck_assert_int_eq(opt.check_signal_mode, GPULEAK_CHECK_FULL);
    parse_ok("--check-signal-mode=new");
    ck_assert_int_eq(opt.check_signal_mode, GPULEAK_CHECK_NEW);
    parse_ok("--check-signal-mode=changed");
    ck_assert_int_eq(opt.check_signal_mode, GPULEAK_CHECK_CHANGED);
    parse_bad("--check-signal=SIGSEGV",
              "--check-signal: invalid value 'SIGSEGV' (expected no|SIGUSR1|SIGUSR2)");
    parse_bad("--check-signal=SIGHUP",
              "--check-signal: invalid value 'SIGHUP' (expected no|SIGUSR1|SIGUSR2)");
    parse_bad("--check-signal=12",
              "--check-signal: invalid value '12' (expected no|SIGUSR1|SIGUSR2)");
    parse_bad("--check-signal-mode=all",
              "--check-signal-mode: invalid value 'all' (expected full|new|added|changed)");
}
END_TEST

/* ---- --leak-resolution ---- */

START_TEST(test_leak_resolution_values)
{
    parse_ok("--leak-resolution=low");
    ck_assert_int_eq(opt.leak_resolution, GL_LEAK_RES_LOW);
    ck_assert_uint_eq(gl_options_resolution_frames(opt.leak_resolution), 2);
    parse_ok("--leak-resolution=med");
    ck_assert_int_eq(opt.leak_resolution, GL_LEAK_RES_MED);
    ck_assert_uint_eq(gl_options_resolution_frames(opt.leak_resolution), 4);
    parse_ok("--leak-resolution=high");
    ck_assert_int_eq(opt.leak_resolution, GL_LEAK_RES_HIGH);
    ck_assert_uint_eq(gl_options_resolution_frames(opt.leak_resolution), 0); /* all */
    parse_bad("--leak-resolution=medium",
              "--leak-resolution: invalid value 'medium' (expected low|med|high)");
    parse_bad("--leak-resolution",
              "--leak-resolution: expects a value: --leak-resolution=low|med|high");
}
END_TEST

/* ---- --show-leak-kinds ---- */

START_TEST(test_show_leak_kinds_values)
{
    parse_ok("--show-leak-kinds=all");
    ck_assert_uint_eq(opt.show_leak_kinds, GL_LEAK_KINDS_ALL);
    ck_assert_uint_eq(opt.show_leak_kinds, 0x3f);
    parse_ok("--show-leak-kinds=none");
    ck_assert_uint_eq(opt.show_leak_kinds, 0);
    parse_ok("--show-leak-kinds=definite,cached");
    ck_assert_uint_eq(opt.show_leak_kinds, KB(DEFINITE) | KB(CACHED));
    parse_ok("--show-leak-kinds=reachable");
    ck_assert_uint_eq(opt.show_leak_kinds, KB(REACHABLE));
    parse_ok("--show-leak-kinds=indirect,possible");
    ck_assert_uint_eq(opt.show_leak_kinds, KB(INDIRECT) | KB(POSSIBLE));
    parse_ok("--show-leak-kinds=cached,definite,definite");
    ck_assert_uint_eq(opt.show_leak_kinds, KB(DEFINITE) | KB(CACHED));
    parse_ok("--show-leak-kinds=definite,indirect,possible,reachable,cached");
    ck_assert_uint_eq(opt.show_leak_kinds, GL_LEAK_KINDS_ALL & ~KB(DEATH));
    parse_ok("--show-leak-kinds=definite,indirect,possible,reachable,cached,death");
    ck_assert_uint_eq(opt.show_leak_kinds, GL_LEAK_KINDS_ALL);
}
END_TEST

/* Live at death: spelled "death", in "all", and serialized for the runtime by
 * name (the five other kinds together are now a list, not "all"). */
/* --show-leak-kinds=set serializes as written and parses back to the same set. */
static void kinds_round_trip(const char *set)
{
    char arg[128], buf[512];
    gl_options_defaults(&opt);
    snprintf(arg, sizeof arg, "--show-leak-kinds=%s", set);
    parse_ok(arg);
    ck_assert_int_gt(gl_options_serialize(&opt, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, arg);
    struct gl_options back;
    gl_options_defaults(&back);
    ck_assert_int_eq(gl_options_parse_env(&back, buf, err, sizeof err), 0);
    ck_assert_uint_eq(back.show_leak_kinds, opt.show_leak_kinds);
}

START_TEST(test_show_leak_kinds_death)
{
    parse_ok("--show-leak-kinds=death");
    ck_assert_uint_eq(opt.show_leak_kinds, KB(DEATH));
    parse_ok("--show-leak-kinds=definite,death");
    ck_assert_uint_eq(opt.show_leak_kinds, KB(DEFINITE) | KB(DEATH));
    parse_ok("--errors-for-leak-kinds=death,possible");
    ck_assert_uint_eq(opt.errors_for_leak_kinds, KB(POSSIBLE) | KB(DEATH));
    parse_ok("--show-leak-kinds=all");
    ck_assert(opt.show_leak_kinds & KB(DEATH));
    parse_ok("--errors-for-leak-kinds=all");
    ck_assert(opt.errors_for_leak_kinds & KB(DEATH));
    ck_assert_str_eq(gl_leak_kind_option_name(GL_LEAK_DEATH), "death");
    ck_assert_str_eq(gl_leak_kind_phrase(GL_LEAK_DEATH), "live at death");
    unsigned set = 0;
    ck_assert_int_eq(gl_leak_kind_parse_set("death", &set), 0);
    ck_assert_uint_eq(set, KB(DEATH));
    ck_assert_int_eq(gl_leak_kind_parse_set("deaths", &set), -1);
    ck_assert_int_eq(gl_leak_kind_parse_set("death,", &set), -1);

    static const char *const sets[] = {"death", "cached,death",
                                       "definite,indirect,possible,reachable,cached"};
    for (size_t i = 0; i < GL_ARRAY_SIZE(sets); i++)
        kinds_round_trip(sets[i]);
}
END_TEST

START_TEST(test_show_leak_kinds_bad)
{
#define KINDS_EXPECTED                                                                             \
    "(expected KIND,...|all|none; KIND: definite, indirect, possible, reachable, cached, death)"
    parse_bad("--show-leak-kinds=bogus",
              "--show-leak-kinds: invalid value 'bogus' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds=definite,",
              "--show-leak-kinds: invalid value 'definite,' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds=,definite",
              "--show-leak-kinds: invalid value ',definite' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds=definite,,cached",
              "--show-leak-kinds: invalid value 'definite,,cached' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds=", "--show-leak-kinds: invalid value '' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds=all,definite",
              "--show-leak-kinds: invalid value 'all,definite' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds=definitely",
              "--show-leak-kinds: invalid value 'definitely' " KINDS_EXPECTED);
    parse_bad("--show-leak-kinds", "--show-leak-kinds: expects a value: "
                                   "--show-leak-kinds=KIND,...|all|none");
#undef KINDS_EXPECTED
}
END_TEST

/* ---- --num-callers ---- */

START_TEST(test_num_callers_values)
{
    parse_ok("--num-callers=1");
    ck_assert_int_eq(opt.num_callers, 1);
    parse_ok("--num-callers=64");
    ck_assert_int_eq(opt.num_callers, 64);
    parse_ok("--num-callers=500"); /* Valgrind's maximum */
    ck_assert_int_eq(opt.num_callers, 500);
    parse_ok("--num-callers=20");
    ck_assert_int_eq(opt.num_callers, 20);
}
END_TEST

START_TEST(test_num_callers_bad)
{
    parse_bad("--num-callers=0", "--num-callers: invalid value '0' (expected 1..500)");
    parse_bad("--num-callers=501", "--num-callers: invalid value '501' (expected 1..500)");
    parse_bad("--num-callers=-1", "--num-callers: invalid value '-1' (expected 1..500)");
    parse_bad("--num-callers=abc", "--num-callers: invalid value 'abc' (expected 1..500)");
    parse_bad("--num-callers=12x", "--num-callers: invalid value '12x' (expected 1..500)");
    parse_bad("--num-callers=", "--num-callers: invalid value '' (expected 1..500)");
    parse_bad("--num-callers=99999999999999999999",
              "--num-callers: invalid value '99999999999999999999' (expected 1..500)");
    parse_bad("--num-callers=4294967308", /* 2^32 + 12: no truncation to int */
              "--num-callers: invalid value '4294967308' (expected 1..500)");
    parse_bad("--num-callers", "--num-callers: expects a value: --num-callers=1..500");
}
END_TEST

/* ---- --show-below-main ---- */

START_TEST(test_show_below_main)
{
    parse_ok("--show-below-main=yes");
    ck_assert_int_eq(opt.show_below_main, true);
    parse_ok("--show-below-main=no");
    ck_assert_int_eq(opt.show_below_main, false);
    parse_ok("--show-below-main"); /* a flag alone means yes */
    ck_assert_int_eq(opt.show_below_main, true);
    parse_bad("--show-below-main=maybe",
              "--show-below-main: invalid value 'maybe' (expected yes|no)");
    parse_bad("--show-below-main=", "--show-below-main: invalid value '' (expected yes|no)");
    parse_bad("--show-below-main=1", "--show-below-main: invalid value '1' (expected yes|no)");
}
END_TEST

/* Unlike Valgrind, children are traced by default: a wrapper's GPU work is
 * usually in the programs it starts. */
START_TEST(test_trace_children)
{
    ck_assert_int_eq(opt.trace_children, true);
    parse_ok("--trace-children=no");
    ck_assert_int_eq(opt.trace_children, false);
    parse_ok("--trace-children=yes");
    ck_assert_int_eq(opt.trace_children, true);
    parse_bad("--trace-children=all", "--trace-children: invalid value 'all' (expected yes|no)");
}
END_TEST

/* ---- --log-file ---- */

START_TEST(test_log_file_values)
{
    parse_ok("--log-file=/tmp/gpuleak.%p.log");
    ck_assert_str_eq(opt.log_file, "/tmp/gpuleak.%p.log");
    /* %q{VAR} is only checked for syntax here: the launcher checks the variable. */
    parse_ok("--log-file=out-%q{GPULEAK_SURELY_UNSET_VAR}-%%.txt");
    ck_assert_str_eq(opt.log_file, "out-%q{GPULEAK_SURELY_UNSET_VAR}-%%.txt");
    parse_ok("--log-file=with space");
    ck_assert_str_eq(opt.log_file, "with space");
}
END_TEST

START_TEST(test_log_file_bad)
{
    parse_bad("--log-file=", "--log-file: expects a file name");
    parse_bad("--log-file", "--log-file: expects a value: --log-file=FILE");
    parse_bad("--log-file=a%x",
              "--log-file: unknown escape '%x' in 'a%x' (expected %p, %n, %q{VAR} or %%)");
    parse_bad("--log-file=a%q{HOME", "--log-file: unterminated '%q{' in 'a%q{HOME'");

    char arg[GL_PATH_MAX + 32];
    int n = snprintf(arg, sizeof arg, "--log-file=");
    memset(arg + n, 'x', GL_PATH_MAX);
    arg[n + GL_PATH_MAX] = '\0';
    parse_bad(arg, "--log-file: file name is too long");
    /* The longest name that fits is accepted. */
    arg[n + GL_PATH_MAX - 1] = '\0';
    parse_ok(arg);
    ck_assert_uint_eq(strlen(opt.log_file), GL_PATH_MAX - 1);
}
END_TEST

/* ---- -q, -v ---- */

START_TEST(test_quiet)
{
    parse_ok("-q");
    ck_assert_int_eq(opt.quiet, true);
    parse_ok("--quiet=no");
    ck_assert_int_eq(opt.quiet, false);
    parse_ok("--quiet");
    ck_assert_int_eq(opt.quiet, true);
    parse_ok("--quiet=no");
    parse_ok("--quiet=yes");
    ck_assert_int_eq(opt.quiet, true);
    parse_bad("--quiet=maybe", "--quiet: invalid value 'maybe' (expected yes|no)");
}
END_TEST

START_TEST(test_verbose)
{
    parse_ok("-v");
    ck_assert_int_eq(opt.verbose, 1);
    parse_ok("-v");
    ck_assert_int_eq(opt.verbose, 2);
    parse_ok("--verbose");
    ck_assert_int_eq(opt.verbose, 3);
    parse_ok("--verbose=0");
    ck_assert_int_eq(opt.verbose, 0);
    parse_ok("--verbose=9");
    ck_assert_int_eq(opt.verbose, 9);
    parse_ok("-v"); /* capped */
    ck_assert_int_eq(opt.verbose, 9);
    parse_bad("--verbose=10", "--verbose: invalid value '10' (expected 0..9)");
    parse_bad("--verbose=-1", "--verbose: invalid value '-1' (expected 0..9)");
}
END_TEST

START_TEST(test_verbose_twice_from_defaults)
{
    parse_ok("-v");
    parse_ok("-v");
    ck_assert_int_eq(opt.verbose, 2);
    ck_assert_int_eq(opt.quiet, false);
}
END_TEST

/* ---- unknown options and non-options ---- */

START_TEST(test_unknown_options)
{
    parse_bad("--bogus", "unknown option '--bogus' (try 'gpuleak --help')");
    parse_bad("--bogus=1", "unknown option '--bogus' (try 'gpuleak --help')");
    parse_bad("-x", "unknown option '-x' (try 'gpuleak --help')");
    parse_bad("-qv", "unknown option '-qv' (try 'gpuleak --help')");
    parse_bad("--leak", "unknown option '--leak' (try 'gpuleak --help')"); /* no abbreviations */
    parse_bad("--leak-checks=full", "unknown option '--leak-checks' (try 'gpuleak --help')");
    parse_bad("--Leak-check=full", "unknown option '--Leak-check' (try 'gpuleak --help')");
}
END_TEST

START_TEST(test_not_options)
{
    struct gl_options before = opt;
    ck_assert_int_eq(gl_options_parse_arg(&opt, "prog", err, sizeof err), GL_ARG_NOT_OPTION);
    ck_assert_int_eq(gl_options_parse_arg(&opt, "-", err, sizeof err), GL_ARG_NOT_OPTION);
    ck_assert_int_eq(gl_options_parse_arg(&opt, "./a.out", err, sizeof err), GL_ARG_NOT_OPTION);
    ck_assert_int_eq(memcmp(&before, &opt, sizeof opt), 0);
}
END_TEST

/* ---- serialization ---- */

START_TEST(test_serialize_defaults_is_empty)
{
    char buf[256] = "junk";
    ck_assert_int_eq(gl_options_serialize(&opt, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_serialize_round_trip)
{
    parse_ok("--leak-check=summary");
    parse_ok("--show-leak-kinds=definite,cached");
    parse_ok("--num-callers=30");
    parse_ok("--show-below-main=yes");
    parse_ok("--quiet");
    parse_ok("-v");
    parse_ok("-v");
    strcpy(opt.log_file, "/tmp/my dir/a\\b\tc %p.log");

    char buf[8192];
    int n = gl_options_serialize(&opt, buf, sizeof buf);
    const char *want = "--leak-check=summary --show-leak-kinds=definite,cached --num-callers=30 "
                       "--show-below-main=yes --log-file=/tmp/my\\ dir/a\\\\b\\\tc\\ %p.log "
                       "--quiet=yes --verbose=2";
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(n, (int)strlen(want));

    struct gl_options back;
    gl_options_defaults(&back);
    ck_assert_msg(gl_options_parse_env(&back, buf, err, sizeof err) == 0, "parse_env: %s", err);
    assert_same_options(&back, &opt);
    ck_assert_str_eq(back.log_file, "/tmp/my dir/a\\b\tc %p.log");
}
END_TEST

START_TEST(test_serialize_round_trip_awkward_paths)
{
    static const char *const paths[] = {
        " leading space", "trailing backslash\\", "\\\\double",     "tab\there",
        "new\nline",      "%q{HOME}/a b/%p.log",  "a  two  spaces",
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(paths); i++) {
        gl_options_defaults(&opt);
        strcpy(opt.log_file, paths[i]);
        char buf[8192];
        ck_assert_int_gt(gl_options_serialize(&opt, buf, sizeof buf), 0);
        struct gl_options back;
        gl_options_defaults(&back);
        ck_assert_msg(gl_options_parse_env(&back, buf, err, sizeof err) == 0, "'%s': %s", buf, err);
        ck_assert_str_eq(back.log_file, paths[i]);
    }
}
END_TEST

START_TEST(test_serialize_round_trip_kind_sets)
{
    static const char *const sets[] = {"all", "none", "definite", "cached", "indirect,reachable"};
    for (size_t i = 0; i < GL_ARRAY_SIZE(sets); i++)
        kinds_round_trip(sets[i]);
}
END_TEST

START_TEST(test_serialize_back_to_default_values)
{
    /* Options set to their default value are left out. */
    parse_ok("--leak-check=yes");
    parse_ok("--num-callers=12");
    parse_ok("--show-leak-kinds=possible,death,definite");
    char buf[256];
    ck_assert_int_eq(gl_options_serialize(&opt, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_serialize_too_small)
{
    parse_ok("--num-callers=30");
    char buf[64];
    /* "--num-callers=30" is 16 characters: it needs 17 bytes. */
    ck_assert_int_eq(gl_options_serialize(&opt, buf, 16), -1);
    ck_assert_int_eq(gl_options_serialize(&opt, buf, 17), 16);
    ck_assert_str_eq(buf, "--num-callers=30");
    ck_assert_int_eq(gl_options_serialize(&opt, buf, 0), -1);
}
END_TEST

START_TEST(test_parse_env)
{
    ck_assert_int_eq(gl_options_parse_env(&opt, "", err, sizeof err), 0);
    ck_assert_int_eq(gl_options_parse_env(&opt, "  \t\n ", err, sizeof err), 0);
    struct gl_options def;
    gl_options_defaults(&def);
    assert_same_options(&opt, &def);

    ck_assert_int_eq(gl_options_parse_env(&opt, "\t--num-callers=5\n  -q   --log-file=a\\ b\\\\c ",
                                          err, sizeof err),
                     0);
    ck_assert_int_eq(opt.num_callers, 5);
    ck_assert_int_eq(opt.quiet, true);
    ck_assert_str_eq(opt.log_file, "a b\\c");
}
END_TEST

START_TEST(test_parse_env_errors)
{
    ck_assert_int_eq(gl_options_parse_env(&opt, "--num-callers=0", err, sizeof err), -1);
    ck_assert_str_eq(err, "--num-callers: invalid value '0' (expected 1..500)");
    ck_assert_int_eq(gl_options_parse_env(&opt, "-q prog", err, sizeof err), -1);
    ck_assert_str_eq(err, "'prog' is not an option"); /* the caller names the variable */
    ck_assert_int_eq(gl_options_parse_env(&opt, "--nope", err, sizeof err), -1);
    ck_assert_str_eq(err, "unknown option '--nope' (try 'gpuleak --help')");

    /* An argument longer than any option can be. */
    size_t len = GL_PATH_MAX + 200;
    char *text = malloc(len + 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, "--log-file=", 11);
    memset(text + 11, 'y', len - 11);
    text[len] = '\0';
    ck_assert_int_eq(gl_options_parse_env(&opt, text, err, sizeof err), -1);
    ck_assert_str_eq(err, "argument too long");
    free(text);
}
END_TEST

/* ---- the table ---- */

static const char *const expected_names[] = {
    "leak-check",
    "leak-resolution",
    "show-leak-kinds",
    "num-callers",
    "python-frames",
    "show-below-main",
    "scan-device",
    "intercept",
    "check-api-ranges",
    "quarantine-blocks",
    "keep-stacktraces",
    "stats",
    "top-sites",
    "growth-checkpoints",
    "check-signal",
    "check-signal-mode",
    "framework-caching",
    "trace-file",
    "trace-interval",
    "trace-limit",
    "save",
    "save-limit",
    "flamegraph-file",
    "flamegraph-cost",
    "memory-viz",
    "memory-viz-entries",
    "merge",
    "log-file",
    "log-fd",
    "suppressions",
    "default-suppressions",
    "gen-suppressions",
    "errors-for-leak-kinds",
    "error-exitcode",
    "exit-on-first-error",
    "xml",
    "xml-file",
    "xml-fd",
    "json-file",
    "trace-children",
    "child-silent-after-fork",
    "tool",
    "quiet",
    "verbose",
};
#define NEXPECTED (GL_ARRAY_SIZE(expected_names))

START_TEST(test_long_names)
{
    unsigned i = 0;
    for (; gl_options_long_name(i); i++) {
        ck_assert_uint_lt(i, NEXPECTED);
        ck_assert_str_eq(gl_options_long_name(i), expected_names[i]);
    }
    ck_assert_uint_eq(i, NEXPECTED);
    ck_assert_ptr_null(gl_options_long_name(i));
    ck_assert_ptr_null(gl_options_long_name(1000));
    ck_assert_ptr_null(gl_options_long_name(~0u));
}
END_TEST

START_TEST(test_every_option_is_parsed)
{
    /* Each name of the table is known to the parser: "--name=" is never "unknown". */
    for (unsigned i = 0; gl_options_long_name(i); i++) {
        char arg[128];
        snprintf(arg, sizeof arg, "--%s=", gl_options_long_name(i));
        gl_options_parse_arg(&opt, arg, err, sizeof err);
        ck_assert_msg(strncmp(err, "unknown option", 14) != 0, "%s: %s", arg, err);
        ck_assert_msg(strstr(err, gl_options_long_name(i)) != NULL, "%s: %s", arg, err);
    }
}
END_TEST

START_TEST(test_write_help)
{
    int fd = tu_tmpfd();
    gl_options_write_help(fd);
    size_t len;
    char *help = tu_slurp(fd, &len);
    close(fd);
    ck_assert_uint_gt(len, 0);
    ck_assert_int_eq(help[len - 1], '\n');

    for (unsigned i = 0; gl_options_long_name(i); i++) {
        /* Each option heads an entry: "  --name..." or "  -c, --name". */
        char head[128], short_head[128];
        snprintf(head, sizeof head, "\n  --%s", gl_options_long_name(i));
        snprintf(short_head, sizeof short_head, ", --%s", gl_options_long_name(i));
        bool found = strncmp(help, head + 1, strlen(head + 1)) == 0 || strstr(help, head) ||
                     strstr(help, short_head);
        ck_assert_msg(found, "--help does not mention --%s:\n%s", gl_options_long_name(i), help);
    }
    /* 80 columns, as GNU tools' --help. */
    for (const char *l = help; *l;) {
        size_t n = strcspn(l, "\n");
        ck_assert_msg(n <= 80, "a --help line of %zu columns: %.*s", n, (int)n, l);
        l += n + (l[n] == '\n');
    }
    ck_assert_ptr_nonnull(strstr(help, "  -q, --quiet "));
    ck_assert_ptr_nonnull(strstr(help, "  -v, --verbose "));
    ck_assert_ptr_nonnull(strstr(help, "  --leak-check=no|summary|full "));
    ck_assert_ptr_nonnull(strstr(help, " [full]\n"));
    ck_assert_ptr_nonnull(strstr(help, "  --num-callers=1..500 "));
    ck_assert_ptr_nonnull(strstr(help, " [12]\n"));
    ck_assert_ptr_nonnull(strstr(help, " [definite,possible]\n"));
    /* Every line is an entry head or its continuation: indented by two spaces. */
    for (const char *p = help; *p; p = strchr(p, '\n') + 1)
        ck_assert_msg(strncmp(p, "  ", 2) == 0, "unindented help line: %.40s", p);
    free(help);
}
END_TEST

/* The man page lists every option of the table.  doc/gpuleak.1 is being written
 * separately: while it is still empty the check is skipped (and says so). */
START_TEST(test_man_page_lists_every_option)
{
    const char *path = GL_TOP_SRCDIR "/doc/gpuleak.1";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "check_options: %s missing: man page check skipped\n", path);
        return;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size <= 0) {
        /* SKIPPED: the man page has no content yet. */
        fprintf(stderr, "check_options: %s is empty: man page check skipped\n", path);
        fclose(f);
        return;
    }
    char *text = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    for (unsigned i = 0; gl_options_long_name(i); i++) {
        /* roff spells a hyphen "\-" or "-"; accept both for every hyphen. */
        const char *name = gl_options_long_name(i);
        char plain[128], roff[256];
        snprintf(plain, sizeof plain, "--%s", name);
        size_t k = 0;
        for (const char *p = plain; *p && k + 3 < sizeof roff; p++) {
            if (*p == '-')
                roff[k++] = '\\';
            roff[k++] = *p;
        }
        roff[k] = '\0';
        ck_assert_msg(strstr(text, plain) || strstr(text, roff),
                      "doc/gpuleak.1 does not mention --%s", name);
    }
    free(text);
}
END_TEST

/* Relative file names become absolute from the directory given. */
START_TEST(test_make_absolute)
{
    parse_ok("--log-file=logs/gl.%p.log");
    parse_ok("--json-file=/abs/r.json");
    parse_ok("--suppressions=a.supp");
    parse_ok("--suppressions=/etc/b.supp");
    parse_ok("--suppressions=sub/c.supp");
    ck_assert_int_eq(gl_options_make_absolute(&opt, "/work/dir", err, sizeof err), 0);
    ck_assert_str_eq(opt.log_file, "/work/dir/logs/gl.%p.log");
    ck_assert_str_eq(opt.json_file, "/abs/r.json");
    ck_assert_str_eq(opt.xml_file, ""); /* unset stays unset */
    ck_assert_str_eq(gl_options_suppression(&opt, 0), "/work/dir/a.supp");
    ck_assert_str_eq(gl_options_suppression(&opt, 1), "/etc/b.supp");
    ck_assert_str_eq(gl_options_suppression(&opt, 2), "/work/dir/sub/c.supp");
    ck_assert_ptr_null(gl_options_suppression(&opt, 3));
    /* Too long: one line, naming the option. */
    static char dir[GL_PATH_MAX];
    memset(dir, 'd', sizeof dir - 1);
    dir[0] = '/';
    ck_assert_int_eq(gl_options_make_absolute(&opt, dir, err, sizeof err),
                     0); /* all absolute now */
    gl_options_defaults(&opt);
    parse_ok("--trace-file=t.csv");
    ck_assert_int_eq(gl_options_make_absolute(&opt, dir, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--trace-file: path too long"));
}
END_TEST

/* %n: numbered once the options are final, in the order log, xml, json, then
 * the other file options in the table's order (trace, save, ...), whatever the
 * order given (common/logfile.h). */
START_TEST(test_make_absolute_numbers_files)
{
    parse_ok("--save=/s/run.%p.%n.gl");
    parse_ok("--json-file=/r/out.%n.json");
    parse_ok("--trace-file=/r/out.%n.csv");
    parse_ok("--xml=yes");
    parse_ok("--xml-file=/r/out.xml");
    parse_ok("--log-file=/r/out.%n.log");
    ck_assert_int_eq(gl_options_make_absolute(&opt, "/work", err, sizeof err), 0);
    ck_assert_str_eq(opt.log_file, "/r/out.1.log");
    ck_assert_str_eq(opt.xml_file, "/r/out.xml");
    ck_assert_str_eq(opt.json_file, "/r/out.2.json");
    ck_assert_str_eq(opt.trace_file, "/r/out.3.csv");
    ck_assert_str_eq(opt.save, "/s/run.%p.4.gl");
    /* What the runtime parses from GPULEAK_OPTIONS is final: numbered again, the same. */
    char buf[GL_OPTIONS_SERIAL_MAX];
    ck_assert_int_ge(gl_options_serialize(&opt, buf, sizeof buf), 0);
    gl_options_defaults(&opt);
    ck_assert_int_eq(gl_options_parse_env(&opt, buf, err, sizeof err), 0);
    ck_assert_int_eq(gl_options_make_absolute(&opt, "/elsewhere", err, sizeof err), 0);
    ck_assert_str_eq(opt.log_file, "/r/out.1.log");
    ck_assert_str_eq(opt.json_file, "/r/out.2.json");
    ck_assert_str_eq(opt.save, "/s/run.%p.4.gl");
}
END_TEST

/* Valgrind's habits: options of Memcheck's that do not apply, its spellings. */
START_TEST(test_valgrind_habits)
{
    struct gl_options before = opt;
    ck_assert_int_eq(gl_options_parse_arg(&opt, "--track-origins=yes", err, sizeof err),
                     GL_ARG_NOTE);
    ck_assert_str_eq(err, "--track-origins is a Valgrind option for host memory; it does not "
                          "apply to GPU memory and is ignored");
    ck_assert_int_eq(gl_options_parse_arg(&opt, "--vgdb", err, sizeof err), GL_ARG_NOTE);
    ck_assert_msg(memcmp(&before, &opt, sizeof opt) == 0, "a note changed the options");
    ck_assert_int_eq(gl_options_parse_arg(&opt, "--gen-suppressions=yes", err, sizeof err),
                     GL_ARG_NOTE);
    ck_assert_int_eq(opt.gen_suppressions, GL_GEN_SUPP_ALL);
    ck_assert_ptr_nonnull(strstr(err, "--gen-suppressions=all"));
    parse_ok("--show-leak-kinds=all");
    parse_ok("--show-possibly-lost=no");
    ck_assert_uint_eq(opt.show_leak_kinds, GL_LEAK_KINDS_ALL & ~GL_LEAK_KIND_BIT(GL_LEAK_POSSIBLE));
    parse_ok("--show-possibly-lost=yes");
    ck_assert_uint_eq(opt.show_leak_kinds, GL_LEAK_KINDS_ALL);
    parse_bad("--show-possibly-lost=maybe", "--show-possibly-lost: expects yes or no");
    /* --show-reachable=no: the default kinds, whatever options.def makes them. */
    struct gl_options def;
    gl_options_defaults(&def);
    parse_ok("--show-leak-kinds=all");
    parse_ok("--show-reachable=no");
    ck_assert_uint_eq(opt.show_leak_kinds, def.show_leak_kinds);
    /* From GPULEAK_OPTIONS (the runtime's view): accepted, quietly. */
    gl_options_defaults(&opt);
    ck_assert_int_eq(
        gl_options_parse_env(&opt, "--track-origins=yes --gen-suppressions=yes", err, sizeof err),
        0);
    ck_assert_int_eq(opt.gen_suppressions, GL_GEN_SUPP_ALL);
    /* An option Valgrind does not have either is still unknown. */
    parse_bad("--track-origin=yes", "unknown option '--track-origin' (try 'gpuleak --help')");
}
END_TEST

static Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_leak_check_values);
    tcase_add_test(tc, test_leak_check_yes_is_full);
    tcase_add_test(tc, test_leak_check_bad);
    tcase_add_test(tc, test_check_signal_values);
    tcase_add_test(tc, test_leak_resolution_values);
    tcase_add_test(tc, test_show_leak_kinds_values);
    tcase_add_test(tc, test_show_leak_kinds_death);
    tcase_add_test(tc, test_show_leak_kinds_bad);
    tcase_add_test(tc, test_num_callers_values);
    tcase_add_test(tc, test_num_callers_bad);
    tcase_add_test(tc, test_show_below_main);
    tcase_add_test(tc, test_trace_children);
    tcase_add_test(tc, test_log_file_values);
    tcase_add_test(tc, test_log_file_bad);
    tcase_add_test(tc, test_quiet);
    tcase_add_test(tc, test_verbose);
    tcase_add_test(tc, test_verbose_twice_from_defaults);
    tcase_add_test(tc, test_unknown_options);
    tcase_add_test(tc, test_not_options);
    tcase_add_test(tc, test_serialize_defaults_is_empty);
    tcase_add_test(tc, test_serialize_round_trip);
    tcase_add_test(tc, test_serialize_round_trip_awkward_paths);
    tcase_add_test(tc, test_serialize_round_trip_kind_sets);
    tcase_add_test(tc, test_serialize_back_to_default_values);
    tcase_add_test(tc, test_serialize_too_small);
    tcase_add_test(tc, test_parse_env);
    tcase_add_test(tc, test_parse_env_errors);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_every_option_is_parsed);
    tcase_add_test(tc, test_write_help);
    tcase_add_test(tc, test_man_page_lists_every_option);
    tcase_add_test(tc, test_valgrind_habits);
    tcase_add_test(tc, test_make_absolute);
    tcase_add_test(tc, test_make_absolute_numbers_files);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(options_suite)
