/* SPDX-License-Identifier: MIT */
/* The Valgrind-style text report.
 *
 * Pure formatting: everything it prints comes in through struct gl_report_input
 * (results, counters, device names, symbolized frames), so unit tests check the
 * text byte for byte without a GPU or a live tracker.  It knows the check's
 * result types (check/), the error records' (track/errors.h) and frames
 * (common/frame.h), nothing of the tracker itself. */
#ifndef GPULEAK_REPORT_TEXT_H
#define GPULEAK_REPORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/checkpoints.h"
#include "check/counters.h"
#include "check/framework.h"
#include "check/leak_check.h"
#include "check/reachability.h"
#include "common/frame.h"
#include "common/options.h"
#include "common/out.h"
#include "common/suppressions.h"
#include "report/report_errors.h"
#include "track/errors.h"

/* Which records a leak check prints (gpuleak.h's check modes). */
enum gl_report_select {
    GL_SELECT_ALL = 0, /* every record */
    GL_SELECT_NEW,     /* records the reference did not have */
    GL_SELECT_ADDED,   /* records that grew in bytes or blocks, new ones included */
    GL_SELECT_CHANGED, /* records that grew or shrank */
};

/* How the program is ending, when it is not by exit() or a return from main. */
struct gl_termination {
    int signal;          /* > 0: the signal whose default action ends it */
    int si_code;         /* the signal's si_code */
    uint64_t fault_addr; /* SIGSEGV, SIGBUS, SIGILL, SIGFPE: the address at fault */
    bool quick_exit;     /* _exit() or _Exit(): atexit handlers do not run */
    int exit_status;     /* quick_exit: its status */
    uint32_t stack;      /* where the signal struck (depot id; 0 unknown) */
    uint32_t tid;        /* the thread it struck */
};

/* A leak check the program asked for while it ran (gl_report_text_check), as
 * kept for the exit's XML and JSON documents (lib/check_history.h): what it
 * found, and the records it printed with their lines as printed then (a
 * block's line names its mappings and pool as they were). */
struct gl_report_check_record {
    uint64_t index; /* among the check's loss records, from 1 */
    uint64_t bytes, indirect_bytes, blocks;
    uint64_t before_bytes, before_blocks; /* in the reference of a delta check (0: new) */
    uint64_t seq_min, seq_max;
    uint32_t stack;
    uint16_t api;      /* enum gl_api of its first block */
    uint8_t kind;      /* enum gl_leak_kind */
    uint8_t mem_kind;  /* enum gl_mem_kind */
    bool is_new;       /* a delta check whose reference had no such record */
    bool error;        /* one of the errors the check returned */
    const char *title; /* "2,097,152 (+1,048,576) bytes in 2 (+1) blocks are ..." */
    const char *text;  /* "Blocks 0x... and 1 more on device 0 (...): ..." */
};

struct gl_report_check {
    uint64_t number;              /* "Leak check N" */
    enum gl_report_select select; /* its mode */
    bool to_buffer; /* gpuleak_leak_check_to: into the program's buffer, not the log */
    char since[GL_CHECKPOINT_NAME_MAX]; /* its checkpoint; "" for every block */
    uint64_t since_seq;                 /* where the checkpoint's scope began */
    double elapsed_s;                   /* when, from the program's start */
    uint64_t allocs;                    /* the allocations counted by then */
    uint64_t errors;                    /* what the call returned */
    struct gl_leak_totals in_use, ignored, kind[GL_LEAK_NKINDS], suppressed;
    bool delta; /* a delta check: before_* are its reference's totals */
    struct gl_leak_totals before_kind[GL_LEAK_NKINDS], before_suppressed;
    uint64_t nrecords;                            /* its loss records, of every kind */
    uint64_t printed;                             /* those it printed */
    const struct gl_report_check_record *records; /* the first printed, up to a bound */
    size_t nkept;
};

struct gl_report_input {
    const struct gl_options *opt;
    const char *tool_version; /* "0.1.0" */
    const char *command;      /* program command line */
    const struct gl_leak_result *leaks;
    const struct gl_counters_totals *stats;
    const struct gl_supp_set *supps; /* for -v: which entries were used (may be NULL) */
    int main_tid;                    /* pid: blocks from other threads name their thread */

    /* For the XML and JSON reports. */
    const char *note; /* one line on why there is nothing to report (NULL: none) */
    int pid, ppid;
    double elapsed_s; /* seconds from the program's start to the report */
    int argc;         /* the program's command line, split */
    const char *const *argv;
    int tool_argc; /* gpuleak's options */
    const char *const *tool_argv;

    /* services */
    const char *(*device_name)(int device, void *arg); /* NULL if unknown */
    gl_stack_frames_fn stack_frames; /* frames to show for a stack id (common/frame.h) */
    /* Addresses a VMM handle is mapped at; returns the count (may be NULL). */
    size_t (*vmm_mappings)(uint64_t handle_key, uint64_t *addrs, size_t max, void *arg);
    /* The function and line of a code address (a host block's allocation
     * call); false if unknown (may be NULL). */
    bool (*code_frame)(uint64_t ip, struct gl_frame *out, void *arg);
    /* A custom pool's name, written into buf; NULL if it has none (may be NULL). */
    const char *(*pool_name)(uint64_t pool_key, char *buf, size_t len, void *arg);
    void *arg;

    /* API misuse errors so far (ERROR SUMMARY; NULL: none counted), and their
     * contexts in order of first occurrence (the XML and JSON documents). */
    const struct gl_api_error_counts *api_errors;
    const struct gl_error_context *api_contexts;
    size_t napi_contexts;
    /* Usage per device and kind (GPU MEMORY SUMMARY's per-device part; NULL:
     * totals only), and for --stats the sites with the highest peaks. */
    const struct gl_usage *usage;
    const struct gl_site_stats *top_sites;
    size_t ntop_sites;
    /* What frameworks' caching allocators said of themselves (framework.h). */
    const struct gl_framework_usage *framework;
    size_t nframework;

    /* How the program ended, when abnormally (NULL: exit or return from main). */
    const struct gl_termination *termination;

    /* How the blocks' reachability was found (NULL: not looked for). */
    const struct gl_reachability *reach;

    /* The leak checks the program asked for, oldest first, for the XML and
     * JSON documents, and how many earlier ones were not kept. */
    const struct gl_report_check *checks;
    size_t nchecks;
    uint64_t checks_dropped;

    /* Leak checks asked for while the program runs (gl_report_text_check). */
    const struct gl_leak_ref *delta; /* print deltas against it, Valgrind-style; NULL: none */
    enum gl_report_select select;
    const char *since; /* the checkpoint whose later blocks alone were checked, or NULL */
};

/* Parts shared with the XML and JSON reports. */
/* How an API error is described with this input's stacks and options. */
void gl_report_text_error_services(const struct gl_report_input *in, struct gl_error_services *svc);
/* "Block 0x... on device 0 (NVIDIA H200): device memory from cudaMalloc, allocation #17" */
void gl_report_text_block_text(const struct gl_report_input *in, const struct gl_loss_record *r,
                               const char *api, char *buf, size_t len);

/* After the preamble, when the program ends abnormally: Valgrind's "Process
 * terminating with default action of signal 11 (SIGSEGV)", the fault and the
 * stack; or "Process ended with _exit(3)".  Nothing otherwise. */
void gl_report_text_termination(struct gl_out *o, const struct gl_report_input *in);

void gl_report_text_preamble(struct gl_out *o, const struct gl_report_input *in);
/* The exit report's leak part: records, GPU MEMORY SUMMARY, LEAK SUMMARY, ERROR
 * SUMMARY. */
void gl_report_text_leaks(struct gl_out *o, const struct gl_report_input *in);

/* A leak check while the program runs, as Valgrind prints VALGRIND_DO_LEAK_CHECK:
 * a title line, the selected records of the kinds --show-leak-kinds shows (with
 * deltas when in->delta is set: "10 (+10) bytes in 1 (+1) blocks are definitely
 * lost in new loss record 3 of 5"), and LEAK SUMMARY.  Always in full, whatever
 * --leak-check says.  Returns the errors among the records printed. */
uint64_t gl_report_text_check(struct gl_out *o, const struct gl_report_input *in,
                              const char *title);
/* A check's mode as the documents name it: "full", "new", "added", "changed". */
const char *gl_report_text_select_name(enum gl_report_select s);
/* Does the selection print this record (leak kinds and suppression aside)? */
bool gl_report_text_selected(const struct gl_report_input *in, const struct gl_loss_record *r);
/* Does gl_report_text_check print this record (kinds, suppression, selection,
 * -q)? */
bool gl_report_text_check_prints(const struct gl_report_input *in, const struct gl_loss_record *r);
/* A record's first line, as printed (with deltas when in->delta is set):
 * "2,097,152 (+1,048,576) bytes in 2 (+1) blocks are definitely lost in loss
 * record 1 of 1".  index counts from 1. */
void gl_report_text_record_title(const struct gl_report_input *in, const struct gl_loss_record *r,
                                 size_t index, char *buf, size_t len);

/* ERROR SUMMARY's figures, as Valgrind counts them for leaks: with
 * --leak-check=full, each loss record of a kind in --errors-for-leak-kinds is one
 * error from one context, suppressed ones counted apart. */
struct gl_error_counts {
    uint64_t errors, contexts;
    uint64_t suppressed, suppressed_contexts;
};
void gl_report_text_error_counts(const struct gl_report_input *in, struct gl_error_counts *out);
uint64_t gl_report_text_error_count(const struct gl_report_input *in); /* .errors */
bool gl_report_text_is_error(const struct gl_options *opt, const struct gl_loss_record *r);

/* An indirectly lost record's first block held only through lost host memory
 * (reachability.h): that host block, and in *site the code that allocated
 * it, named as far as symbols allow (function NULL when unknown; object the
 * module's path, such as a CUDA library that keeps the block for itself).
 * NULL when the record has no holder. */
const struct gl_reach_holder *gl_report_text_holder(const struct gl_report_input *in,
                                                    const struct gl_loss_record *r,
                                                    struct gl_frame *site);

#endif
