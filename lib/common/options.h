/* SPDX-License-Identifier: MIT */
/* gpuleak options: one table (options.def), one parser, shared by the launcher and
 * the runtime.  The launcher validates the command line and hands the options to
 * the runtime serialized in GPULEAK_OPTIONS; the runtime parses them again with the
 * same code, so the two can never disagree.
 *
 * Parsing allocates no memory: the runtime parses its options inside other
 * people's processes, before their allocator may be usable.  Serializing (the
 * launcher's job alone) may. */
#ifndef GPULEAK_OPTIONS_H
#define GPULEAK_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/env.h"
#include "common/leak_kind.h"

#define GL_PATH_MAX 4096
/* --suppressions files, NUL-separated: room for dozens of paths. */
#define GL_PATHLIST_MAX (32 * 1024)

enum gl_leak_check_mode { GL_LEAK_CHECK_NO, GL_LEAK_CHECK_SUMMARY, GL_LEAK_CHECK_FULL };

struct gl_options {
    int leak_check;           /* enum gl_leak_check_mode */
    int leak_resolution;      /* enum gl_leak_resolution */
    unsigned show_leak_kinds; /* GL_LEAK_KIND_BIT set */
    int num_callers;          /* 1..GL_MAX_CALLERS */
    bool show_below_main;
    bool python_frames;
    char log_file[GL_PATH_MAX];
    int log_fd; /* 2: stderr */
    bool scan_device;
    bool check_api_ranges;
    int intercept; /* enum gl_intercept */
    int quarantine_blocks;
    int keep_stacktraces; /* enum gl_keep_stacks */
    bool stats;
    int top_sites;
    int growth_checkpoints; /* 0: off */
    int check_signal;       /* enum gl_check_signal */
    int check_signal_mode;  /* enum gpuleak_check_mode's order: full, new, added, changed */
    int framework_caching;  /* enum gl_framework_caching */
    char trace_file[GL_PATH_MAX];
    int trace_interval; /* ms */
    int trace_limit;    /* MiB */
    char save[GL_PATH_MAX];
    int save_limit; /* MiB */
    bool merge;     /* the launcher's: a merged report of the processes' --save files */
    char flamegraph_file[GL_PATH_MAX];
    int flamegraph_cost; /* enum gl_flamegraph_cost (report/report_flamegraph.h) */
    char memory_viz[GL_PATH_MAX];
    int memory_viz_entries;
    char suppressions[GL_PATHLIST_MAX]; /* paths, each NUL-terminated; "" ends the list */
    bool default_suppressions;
    int gen_suppressions; /* enum gl_gen_supp */
    unsigned errors_for_leak_kinds;
    int error_exitcode;
    bool exit_on_first_error;
    bool xml;
    char xml_file[GL_PATH_MAX];
    int xml_fd; /* -1: none */
    char json_file[GL_PATH_MAX];
    bool trace_children;
    bool child_silent_after_fork;
    int tool; /* only memcheck: accepted for compatibility */
    bool quiet;
    int verbose;
};

/* --leak-resolution: how many frames, as reports show them, the stacks of two
 * blocks must share for the blocks to form one loss record (Valgrind's). */
enum gl_leak_resolution { GL_LEAK_RES_LOW, GL_LEAK_RES_MED, GL_LEAK_RES_HIGH };
/* Those frames: 2, 4, or 0 for all (the same stack). */
static inline unsigned gl_options_resolution_frames(int resolution)
{
    return resolution == GL_LEAK_RES_LOW ? 2 : resolution == GL_LEAK_RES_MED ? 4 : 0;
}

enum gl_gen_supp { GL_GEN_SUPP_NO, GL_GEN_SUPP_ALL };
enum gl_framework_caching { GL_FRAMEWORK_CACHING_ON, GL_FRAMEWORK_CACHING_OFF };
enum gl_keep_stacks { GL_KEEP_ALLOC, GL_KEEP_ALLOC_AND_FREE };
enum gl_intercept { GL_INTERCEPT_DRIVER, GL_INTERCEPT_CUPTI, GL_INTERCEPT_BOTH };
enum gl_check_signal {
    GL_CHECK_SIGNAL_NO,
    GL_CHECK_SIGNAL_USR1,
    GL_CHECK_SIGNAL_USR2
};

/* The i-th --suppressions file, or NULL past the end. */
const char *gl_options_suppression(const struct gl_options *o, int i);
/* Append a --suppressions file; false if the list is full. */
bool gl_options_add_suppression(struct gl_options *o, const char *path);

/* Make every relative file name of the options (--log-file, --xml-file,
 * --json-file, --trace-file, --suppressions...) absolute, from dir: where
 * gpuleak was started, not wherever the program is when it writes or reads
 * them; and give the %n of each file name template its number
 * (common/logfile.h).  Returns 0, or -1 with one line in err (a name too
 * long). */
int gl_options_make_absolute(struct gl_options *o, const char *dir, char *err, size_t errlen);

/* Checks between options, after parsing (--xml=yes needs --xml-file...).
 * Returns 0, or -1 with one line in err. */
int gl_options_check(const struct gl_options *o, char *err, size_t errlen);

/* --num-callers' maximum, Valgrind's. */
#define GL_MAX_CALLERS 500
/* Frames a shown stack may have: --num-callers native and as many Python ones.
 * A report asks for num_callers of each, not this (56 KB of struct gl_frame). */
#define GL_FRAMES_SHOWN_MAX (2 * GL_MAX_CALLERS)

enum gl_arg_result {
    GL_ARG_ERROR = -1,     /* bad option or value: err holds one line */
    GL_ARG_NOT_OPTION = 0, /* does not start with '-': the program starts here */
    GL_ARG_OPTION = 1,     /* consumed */
    GL_ARG_NOTE = 2,       /* consumed, with one line in err for the user (a Valgrind
                              option that does not apply, a value taken as another) */
};

/* Fill *o with the defaults of options.def. */
void gl_options_defaults(struct gl_options *o);

/* Parse one command-line argument ("--num-callers=20", "-q").  "--" is not handled
 * here (the launcher owns it), nor are --help and --version. */
enum gl_arg_result gl_options_parse_arg(struct gl_options *o, const char *arg, char *err,
                                        size_t errlen);

/* Parse a GPULEAK_OPTIONS string: arguments separated by blanks, a backslash
 * escapes the next character.  Returns 0, or -1 with one line in err (the caller
 * names the variable). */
int gl_options_parse_env(struct gl_options *o, const char *text, char *err, size_t errlen);

/* Split a GPULEAK_OPTIONS string into its arguments (malloc'ed; free *args, then
 * *buf).  Returns the count, -1 if out of memory. */
int gl_options_split_env(const char *text, char **buf, char ***args);

/* Write the options that differ from their defaults in the form parse_env reads.
 * Returns the length written, or -1 if buf is too small (GL_OPTIONS_SERIAL_MAX
 * always suffices). */
#define GL_OPTIONS_SERIAL_MAX (2 * GL_PATHLIST_MAX + 8 * GL_PATH_MAX)
int gl_options_serialize(const struct gl_options *o, char *buf, size_t buflen);

/* Write the option part of --help to fd, one option per entry. */
void gl_options_write_help(int fd);

/* Iterate the table (for tests and documentation checks): returns the long name of
 * option i, or NULL past the end. */
const char *gl_options_long_name(unsigned i);

#endif
