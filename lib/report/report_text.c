/* SPDX-License-Identifier: MIT */
#include "report/report_text.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/reachability.h"
#include "common/signals.h"
#include "common/suppressions.h"
#include "event/api.h"
#include "event/event.h"
#include "report/report_frames.h"

static void add_api_errors(const struct gl_report_input *in, struct gl_error_counts *out);

static bool is_error_kind(const struct gl_options *opt, enum gl_leak_kind k)
{
    return (opt->errors_for_leak_kinds & GL_LEAK_KIND_BIT(k)) != 0;
}

bool gl_report_text_is_error(const struct gl_options *opt, const struct gl_loss_record *r)
{
    return opt->leak_check == GL_LEAK_CHECK_FULL && !r->suppressed_by &&
           is_error_kind(opt, r->kind);
}

void gl_report_text_error_counts(const struct gl_report_input *in, struct gl_error_counts *out)
{
    memset(out, 0, sizeof *out);
    add_api_errors(in, out);
    if (in->opt->leak_check != GL_LEAK_CHECK_FULL)
        return;
    for (size_t i = 0; i < in->leaks->nrecords; i++) {
        const struct gl_loss_record *r = &in->leaks->records[i];
        if (!is_error_kind(in->opt, r->kind))
            continue;
        if (r->suppressed_by) {
            out->suppressed++;
            out->suppressed_contexts++;
        } else {
            out->errors++;
            out->contexts++;
        }
    }
}

static void add_api_errors(const struct gl_report_input *in, struct gl_error_counts *out)
{
    const struct gl_api_error_counts *a = in->api_errors;
    if (!a)
        return;
    out->errors += a->errors;
    out->contexts += a->contexts;
    out->suppressed += a->suppressed;
    out->suppressed_contexts += a->suppressed_contexts;
}

uint64_t gl_report_text_error_count(const struct gl_report_input *in)
{
    struct gl_error_counts c;
    gl_report_text_error_counts(in, &c);
    return c.errors;
}

void gl_report_text_preamble(struct gl_out *o, const struct gl_report_input *in)
{
    if (in->opt->quiet)
        return;
    gl_out_line(o, "gpuleak-%s, a GPU memory leak detector", in->tool_version);
    gl_out_line(o, "Command: %s", in->command);
    gl_out_line(o, "%s", "");
}

/* Valgrind's words for a fault, where the signal says what went wrong. */
static const char *fault_text(int sig, int code)
{
    if (sig == SIGSEGV)
        return code == SEGV_ACCERR ? "Bad permissions for mapped region"
                                   : "Access not within "
                                     "mapped region";
    if (sig == SIGBUS)
        return code == BUS_ADRALN ? "Invalid address alignment" : "Non-existent physical address";
    if (sig == SIGFPE)
        return code == FPE_INTDIV ? "Integer divide by zero" : "Arithmetic exception";
    if (sig == SIGILL)
        return "Illegal opcode";
    return NULL;
}

void gl_report_text_termination(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_termination *t = in->termination;
    if (!t)
        return;
    if (t->quick_exit) {
        gl_out_line(o, "Process ended with _exit(%d): atexit handlers and destructors did not run",
                    t->exit_status);
        gl_out_line(o, "%s", "");
        return;
    }
    char buf[32];
    gl_out_line(o, "Process terminating with default action of signal %d (%s)", t->signal,
                gl_signals_name(t->signal, buf, sizeof buf));
    const char *fault = fault_text(t->signal, t->si_code);
    if (fault && t->si_code > 0) /* sent by the kernel, not by kill() */
        gl_out_line(o, " %s at address 0x%" PRIX64, fault, t->fault_addr);
    unsigned n;
    struct gl_frame *f = gl_report_frames_get(in->stack_frames, t->stack,
                                              (unsigned)in->opt->num_callers, in->arg, &n);
    gl_report_frames_print(o, f, n, "   ", "(no stack recorded)");
    free(f);
    gl_out_line(o, "%s", "");
}

void gl_report_text_error_services(const struct gl_report_input *in, struct gl_error_services *svc)
{
    *svc = (struct gl_error_services){
        .num_callers = (unsigned)in->opt->num_callers,
        .top_sites = in->opt->top_sites,
        .stack_frames = in->stack_frames,
        .arg = in->arg,
    };
}

/* "on device 0 (NVIDIA H200)" / "in host memory" / "on an unknown device" */
static void where_text(const struct gl_report_input *in, bool host, int device, char *buf,
                       size_t len)
{
    if (host) {
        snprintf(buf, len, "in host memory");
        return;
    }
    if (device < 0) {
        snprintf(buf, len, "on an unknown device");
        return;
    }
    const char *name = in->device_name ? in->device_name(device, in->arg) : NULL;
    if (name)
        snprintf(buf, len, "on device %d (%s)", device, name);
    else
        snprintf(buf, len, "on device %d", device);
}

static bool host_kind(unsigned kind)
{
    return kind == GL_MEM_HOST_PINNED || kind == GL_MEM_HOST_REGISTERED;
}

static const char *object_word(unsigned kind)
{
    switch (kind) {
    case GL_MEM_POOL_RESERVE:
        return "Pool";
    case GL_MEM_VMM:
        return "Handle";
    case GL_MEM_ARRAY:
    case GL_MEM_MIPMAPPED_ARRAY:
        return "Array";
    default:
        return "Block";
    }
}

static void stream_text(uint64_t stream, char *buf, size_t len)
{
    if (stream == 0)
        snprintf(buf, len, " on the default stream");
    else if (stream == 1)
        snprintf(buf, len, " on the legacy default stream");
    else if (stream == 2)
        snprintf(buf, len, " on the per-thread default stream");
    else
        snprintf(buf, len, " on stream 0x%" PRIx64, stream);
}

/* Extra facts about a VMM handle: where it is mapped, whether it was released. */
static void vmm_text(const struct gl_report_input *in, const struct gl_block_info *b, char *buf,
                     size_t len)
{
    uint64_t addrs[2];
    size_t n = in->vmm_mappings ? in->vmm_mappings(b->key, addrs, 2, in->arg) : 0;
    const char *rel = (b->flags & GL_BLK_RELEASED) ? "released, " : "";
    if (n == 0)
        snprintf(buf, len, ", %snot mapped", rel);
    else if (n == 1)
        snprintf(buf, len, ", %sstill mapped at 0x%" PRIx64, rel, addrs[0]);
    else
        snprintf(buf, len, ", %sstill mapped at 0x%" PRIx64 " and %zu more", rel, addrs[0], n - 1);
}

/* A custom pool's sub-allocation names its pool (when all of the record's
 * blocks share one); a pool's own block says that what it reports is the part
 * no sub-allocation holds. */
static void pool_text(const struct gl_report_input *in, const struct gl_loss_record *r, char *buf,
                      size_t len)
{
    const struct gl_block_info *b = &r->first;
    bool sub = b->kind == GL_MEM_POOL_SUB;
    uint64_t pool = sub ? b->aux : b->key;
    bool one_pool = true;
    const struct gl_block_info *blocks = in->leaks->blocks;
    for (uint64_t i = 0; sub && blocks && i < r->blocks; i++)
        if (blocks[r->block_begin + i].aux != pool)
            one_pool = false;
    char name_buf[80], quoted[96] = "";
    const char *name =
        in->pool_name ? in->pool_name(pool, name_buf, sizeof name_buf, in->arg) : NULL;
    if (name)
        snprintf(quoted, sizeof quoted, " \"%s\"", name);
    size_t l = strlen(buf);
    if (sub && one_pool)
        snprintf(buf + l, len - l, ", in pool 0x%" PRIx64 "%s", gl_key_value(pool), quoted);
    else if (sub)
        snprintf(buf + l, len - l, ", in several custom pools");
    else
        snprintf(buf + l, len - l, ", custom pool%s: its part not sub-allocated", quoted);
}

/* What a stream-ordered pool or a device's graph memory keeps unused: sizes
 * measured at the check (the block's size is the unused part, aux what its
 * allocations hold). */
static bool reserve_text(const struct gl_report_input *in, const struct gl_loss_record *r,
                         const char *api, char *buf, size_t len)
{
    const struct gl_block_info *b = &r->first;
    if (b->kind != GL_MEM_POOL_RESERVE && b->kind != GL_MEM_GRAPH_RESERVE)
        return false;
    char where[256], sizes[96] = "", rb[GL_U64_COMMAS_LEN], ub[GL_U64_COMMAS_LEN];
    where_text(in, false, b->device, where, sizeof where);
    if (r->blocks == 1 && !(b->flags & GL_BLK_SIZE_UNKNOWN))
        snprintf(sizes, sizeof sizes, " (reserved %s bytes, %s in use)",
                 gl_out_u64_commas(rb, b->size + b->aux), gl_out_u64_commas(ub, b->aux));
    else if (b->flags & GL_BLK_SIZE_UNKNOWN)
        snprintf(sizes, sizeof sizes, ", size unknown");
    const char *more = r->blocks > 1 ? " and others" : "";
    if (b->kind == GL_MEM_GRAPH_RESERVE)
        snprintf(buf, len, "Graph memory %s%s: unused memory the driver keeps for graphs%s", where,
                 more, sizes);
    else if (b->api == GL_API_NONE)
        snprintf(buf, len,
                 "Pool 0x%" PRIx64 "%s %s: the default stream-ordered pool's unused memory%s",
                 gl_key_value(b->key), more, where, sizes);
    else
        snprintf(buf, len,
                 "Pool 0x%" PRIx64 "%s %s: a stream-ordered pool's unused memory, from %s, "
                 "allocation #%" PRIu64 "%s",
                 gl_key_value(b->key), more, where, api, b->seq, sizes);
    return true;
}

void gl_report_text_block_text(const struct gl_report_input *in, const struct gl_loss_record *r,
                               const char *api, char *buf, size_t len)
{
    if (reserve_text(in, r, api, buf, len))
        return;
    const struct gl_block_info *b = &r->first;
    char where[256], extra[256] = "", thread[64] = "", what[128];
    unsigned kind = b->kind;

    /* Devices: one, or a list when the record spans several (leak_check.h). */
    uint64_t devs = r->devices;
    if (__builtin_popcountll(devs) <= 1) {
        where_text(in, host_kind(kind), b->device, where, sizeof where);
    } else {
        size_t pos = (size_t)snprintf(where, sizeof where, "on devices ");
        for (int d = 0; d < 64 && pos < sizeof where; d++)
            if (devs & (1ULL << d)) {
                bool first_dev = pos == strlen("on devices ");
                const char *sep = first_dev ? "" : ", ";
                if (d == GL_RECORD_HOST_BIT)
                    pos += (size_t)snprintf(where + pos, sizeof where - pos, "%shost", sep);
                else if (d == GL_RECORD_UNKNOWN_DEVICE_BIT)
                    pos += (size_t)snprintf(where + pos, sizeof where - pos, "%sunknown", sep);
                else
                    pos += (size_t)snprintf(where + pos, sizeof where - pos, "%s%d", sep, d);
            }
    }

    snprintf(what, sizeof what, "%s", gl_mem_kind_name(kind)); /* one per record */

    if (kind == GL_MEM_ASYNC && r->blocks == 1)
        stream_text(b->aux, extra, sizeof extra);
    if (b->tid != (uint32_t)in->main_tid && r->blocks == 1)
        snprintf(thread, sizeof thread, ", thread %u", b->tid);

    char facts[320] = "";
    if (kind == GL_MEM_VMM && r->blocks == 1)
        vmm_text(in, b, facts, sizeof facts);
    if (kind == GL_MEM_POOL_SUB || (b->flags & GL_BLK_POOL))
        pool_text(in, r, facts, sizeof facts);
    if (r->size_unknown) {
        size_t l = strlen(facts);
        snprintf(facts + l, sizeof facts - l, ", size unknown");
    }

    if (r->blocks == 1) {
        snprintf(buf, len, "%s 0x%" PRIx64 " %s: %s from %s%s, allocation #%" PRIu64 "%s%s",
                 object_word(kind), gl_key_value(b->key), where, what, api, extra, b->seq, thread,
                 facts);
    } else {
        char more[32];
        gl_out_u64_commas(more, r->blocks - 1);
        snprintf(buf, len,
                 "%ss 0x%" PRIx64 " and %s more %s: %s from %s, allocations #%" PRIu64
                 " to #%" PRIu64 "%s",
                 object_word(kind), gl_key_value(b->key), more, where, what, api, r->seq_min,
                 r->seq_max, facts);
    }
}

/* " (+N)" or " (-N)", Valgrind's delta after a number; "" without a reference. */
static const char *delta_text(char *buf, size_t len, bool delta, uint64_t now, uint64_t before)
{
    if (!delta) {
        buf[0] = '\0';
        return buf;
    }
    char n[GL_U64_COMMAS_LEN];
    if (now >= before)
        snprintf(buf, len, " (+%s)", gl_out_u64_commas(n, now - before));
    else
        snprintf(buf, len, " (-%s)", gl_out_u64_commas(n, before - now));
    return buf;
}

const char *gl_report_text_select_name(enum gl_report_select s)
{
    switch (s) {
    case GL_SELECT_NEW:
        return "new";
    case GL_SELECT_ADDED:
        return "added";
    case GL_SELECT_CHANGED:
        return "changed";
    default:
        return "full";
    }
}

bool gl_report_text_selected(const struct gl_report_input *in, const struct gl_loss_record *r)
{
    if (in->select == GL_SELECT_ALL)
        return true;
    const struct gl_ref_record *old = gl_checkpoints_ref_find(in->delta, r);
    uint64_t ob = old ? old->bytes : 0, ok = old ? old->blocks : 0;
    switch (in->select) {
    case GL_SELECT_NEW:
        return !old;
    case GL_SELECT_ADDED:
        return r->bytes > ob || r->blocks > ok;
    case GL_SELECT_CHANGED:
        return r->bytes != ob || r->blocks != ok;
    default:
        return true;
    }
}

/* An indirectly lost block held only through lost host memory: which host
 * block, and who allocated it (Valgrind names no holder; a device block's is
 * the only lead to its leak). */
const struct gl_reach_holder *gl_report_text_holder(const struct gl_report_input *in,
                                                    const struct gl_loss_record *r,
                                                    struct gl_frame *site)
{
    const struct gl_reach_holder *h =
        r->kind == GL_LEAK_INDIRECT ? gl_reachability_holder(in->reach, r->first.key) : NULL;
    if (!h)
        return NULL;
    if (!h->caller || !in->code_frame || !in->code_frame(h->caller, site, in->arg))
        *site = (struct gl_frame){0};
    site->ip = h->caller;
    return h;
}

static void holder_line(struct gl_out *o, const struct gl_report_input *in,
                        const struct gl_loss_record *r)
{
    struct gl_frame f;
    const struct gl_reach_holder *h = gl_report_text_holder(in, r, &f);
    if (!h)
        return;
    char bytes[GL_U64_COMMAS_LEN], where[1024];
    /* As a stack frame names code: its function and line, or the module it
     * lies in (a library that keeps the block for itself shows as one). */
    if (f.function && f.file && f.line)
        snprintf(where, sizeof where, "by %s (%s:%d)", f.function,
                 strrchr(f.file, '/') ? strrchr(f.file, '/') + 1 : f.file, f.line);
    else if (f.function && f.object)
        snprintf(where, sizeof where, "by %s (in %s)", f.function, f.object);
    else if (f.function)
        snprintf(where, sizeof where, "by %s", f.function);
    else if (f.ip && f.object)
        snprintf(where, sizeof where, "at 0x%" PRIXPTR " (in %s)", f.ip, f.object);
    else if (f.ip)
        snprintf(where, sizeof where, "at 0x%" PRIXPTR, f.ip);
    else
        snprintf(where, sizeof where, "by code gpuleak could not name");
    gl_out_line(o, " Held only through a lost host block of %s bytes, allocated %s%s",
                gl_out_u64_commas(bytes, h->bytes), where,
                r->blocks > 1 ? " (the first block's)" : "");
}

/* A record a Cached rule reclassified: the rule's name says who holds it (a
 * caching allocator, a framework's workspace), and where it is written. */
static void held_by_line(struct gl_out *o, const struct gl_loss_record *r)
{
    const struct gl_supp *c = r->cached_by;
    if (!c || !c->name)
        return;
    if (c->file) {
        const char *base = strrchr(c->file, '/');
        gl_out_line(o, " Held by %s (%s:%d)", c->name, base ? base + 1 : c->file, c->line);
    } else {
        gl_out_line(o, " Held by %s", c->name);
    }
}

void gl_report_text_record_title(const struct gl_report_input *in, const struct gl_loss_record *r,
                                 size_t index, char *buf, size_t len)
{
    char bytes[GL_U64_COMMAS_LEN], blocks[GL_U64_COMMAS_LEN], num[GL_U64_COMMAS_LEN],
        of[GL_U64_COMMAS_LEN], dbytes[GL_U64_COMMAS_LEN + 8], dblocks[GL_U64_COMMAS_LEN + 8];
    gl_out_u64_commas(bytes, r->bytes);
    gl_out_u64_commas(blocks, r->blocks);
    gl_out_u64_commas(num, index);
    gl_out_u64_commas(of, in->leaks->nrecords);
    bool delta = in->delta != NULL;
    const struct gl_ref_record *old = delta ? gl_checkpoints_ref_find(in->delta, r) : NULL;
    delta_text(dbytes, sizeof dbytes, delta, r->bytes, old ? old->bytes : 0);
    delta_text(dblocks, sizeof dblocks, delta, r->blocks, old ? old->blocks : 0);
    char split[2 * GL_U64_COMMAS_LEN + 32] = "";
    if (r->indirect_bytes) { /* Valgrind's "N (D direct, I indirect) bytes" */
        char d[GL_U64_COMMAS_LEN], i[GL_U64_COMMAS_LEN];
        snprintf(split, sizeof split, " (%s direct, %s indirect)", gl_out_u64_commas(d, r->bytes),
                 gl_out_u64_commas(i, r->indirect_bytes));
        gl_out_u64_commas(bytes, r->bytes + r->indirect_bytes);
    }
    snprintf(buf, len, "%s%s%s bytes in %s%s blocks are %s in %sloss record %s of %s", bytes,
             dbytes, split, blocks, dblocks, gl_leak_kind_phrase(r->kind),
             delta && !old ? "new " : "", num, of);
}

static void print_record(struct gl_out *o, const struct gl_report_input *in,
                         const struct gl_loss_record *r, size_t index)
{
    char title[512];
    gl_report_text_record_title(in, r, index, title, sizeof title);
    gl_out_line(o, "%s", title);

    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(in->stack_frames, r->stack,
                                                   (unsigned)in->opt->num_callers, in->arg, &n);
    gl_report_frames_print(o, frames, n, "   ", "(no stack recorded)");
    char block[1024];
    gl_report_text_block_text(in, r, gl_report_frames_api_called(frames, n, r->first.api), block,
                              sizeof block);
    gl_out_line(o, " %s", block);
    holder_line(o, in, r);
    held_by_line(o, r);
    gl_out_line(o, "%s", "");
    if (in->opt->gen_suppressions == GL_GEN_SUPP_ALL && n > 0) {
        /* Unprefixed, ready to paste into a suppression file.  A record without
         * a stack gets none: no entry could match it alone. */
        size_t len;
        char *text = gl_suppressions_entry(frames, n, GL_ERR_NONE, r->kind, &len);
        if (text)
            gl_out_text(o, text, len);
        free(text);
    }
    free(frames);
}

/* One LEAK SUMMARY line; before: the reference's totals for deltas, or NULL. */
static void totals_line(struct gl_out *o, const char *label, const struct gl_leak_totals *t,
                        const struct gl_leak_totals *before)
{
    char bytes[GL_U64_COMMAS_LEN], blocks[GL_U64_COMMAS_LEN], db[GL_U64_COMMAS_LEN + 8],
        dk[GL_U64_COMMAS_LEN + 8];
    delta_text(db, sizeof db, before != NULL, t->bytes, before ? before->bytes : 0);
    delta_text(dk, sizeof dk, before != NULL, t->blocks, before ? before->blocks : 0);
    gl_out_line(o, "%18s: %s%s bytes in %s%s blocks", label, gl_out_u64_commas(bytes, t->bytes), db,
                gl_out_u64_commas(blocks, t->blocks), dk);
}

/* Under the cached line: how much of what each framework caches its own
 * tensors use, by its own account at the last checkpoint. */
static void framework_lines(struct gl_out *o, const struct gl_report_input *in)
{
    for (size_t i = 0; i < in->nframework; i++) {
        const struct gl_framework_usage *u = &in->framework[i];
        char used[GL_U64_COMMAS_LEN], reserved[GL_U64_COMMAS_LEN];
        gl_out_line(o,
                    "%20s(%s at checkpoint \"%s\" #%llu: %s of %s reserved bytes in use by %s on "
                    "device %d)",
                    "", gl_framework_name(u->framework), u->checkpoint_name,
                    (unsigned long long)u->checkpoint, gl_out_u64_commas(used, u->in_use),
                    gl_out_u64_commas(reserved, u->reserved),
                    u->framework == GL_FW_PYTORCH ? "tensors" : "arrays", u->device);
    }
}

static void leak_summary(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_leak_result *lr = in->leaks;
    const struct gl_leak_ref *d = in->delta;
    gl_out_line(o, "LEAK SUMMARY:");
    for (int k = 0; k < GL_LEAK_NKINDS; k++) {
        /* Only a log saved by a process that died has blocks live at death:
         * every other report leaves the line out, and stays as it always was.
         * A delta whose reference had some shows the line going to zero. */
        if (k == GL_LEAK_DEATH && !lr->kind[k].blocks && !(d && d->kind[k].blocks))
            continue;
        totals_line(o, gl_leak_kind_phrase((enum gl_leak_kind)k), &lr->kind[k],
                    d ? &d->kind[k] : NULL);
        if (k == GL_LEAK_CACHED)
            framework_lines(o, in);
    }
    totals_line(o, "suppressed", &lr->suppressed, d ? &d->suppressed : NULL);
    if (lr->ignored.blocks)
        /* Blocks the program said never to report (gpuleak_ignore, gpuleak_disable). */
        totals_line(o, "ignored", &lr->ignored, NULL);
}

static void hidden_kinds_hint(struct gl_out *o, const struct gl_report_input *in)
{
    char list[256] = "";
    int count = 0;
    for (int k = 0; k < GL_LEAK_NKINDS; k++) {
        if ((in->opt->show_leak_kinds & GL_LEAK_KIND_BIT(k)) || in->leaks->kind[k].blocks == 0)
            continue;
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", count ? ", " : "",
                 gl_leak_kind_phrase((enum gl_leak_kind)k));
        count++;
    }
    if (!count)
        return;
    /* Capitalize the sentence. */
    if (list[0] >= 'a' && list[0] <= 'z')
        list[0] = (char)(list[0] - 'a' + 'A');
    gl_out_line(o, "%s blocks are not shown.", list);
    gl_out_line(o, "To see them, rerun with: --leak-check=full --show-leak-kinds=all");
}

/* -v: every entry that suppressed something, as Valgrind lists them. */
static void used_suppressions(struct gl_out *o, const struct gl_supp_set *s)
{
    bool any = false;
    for (size_t i = 0; i < s->n; i++) {
        const struct gl_supp *e = &s->v[i];
        if (e->count == 0)
            continue;
        char b[GL_U64_COMMAS_LEN], k[GL_U64_COMMAS_LEN];
        if (e->kind == GL_SUPP_ERROR) /* errors hold no memory: the count says it all */
            gl_out_note(o, "used_suppression: %6llu %s %s:%d", (unsigned long long)e->count,
                        e->name, e->file, e->line);
        else
            gl_out_note(o, "used_suppression: %6llu %s %s:%d %s: %s bytes in %s blocks",
                        (unsigned long long)e->count, e->name, e->file, e->line,
                        e->kind == GL_SUPP_CACHED ? "classified as cached" : "suppressed",
                        gl_out_u64_commas(b, e->bytes), gl_out_u64_commas(k, e->blocks));
        any = true;
    }
    if (any)
        gl_out_line(o, "%s", "");
}

/* What the reachability scan did (-v, as Valgrind's "searching for pointers"),
 * or, when it could not run, why every block counts as definitely lost. */
static void reach_notes(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_reachability *r = in->reach;
    const struct gl_leak_result *lr = in->leaks;
    if (!r || in->opt->quiet || lr->in_use.blocks == 0)
        return;
    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN], b4[GL_U64_COMMAS_LEN];
    if (!r->available) {
        gl_out_line(o,
                    "gpuleak: which blocks the program still points to is not known: %s; every "
                    "outstanding block counts as definitely lost",
                    r->why_not ? r->why_not : "no scan");
        gl_out_line(o, "%s", "");
        return;
    }
    if (in->opt->verbose <= 0)
        return;
    /* Nothing asked of the scan here (a replay, whose process scanned): no
     * figures of its to give. */
    if (r->searched == 0 && r->held_by_rule == 0)
        return;
    if (r->held_by_rule)
        gl_out_note(o,
                    "searching for pointers to %s not-freed blocks (%s more held by a caching "
                    "allocator, by its rule: not searched for)",
                    gl_out_u64_commas(b1, r->searched), gl_out_u64_commas(b2, r->held_by_rule));
    else
        gl_out_note(o, "searching for pointers to %s not-freed blocks",
                    gl_out_u64_commas(b1, r->searched));
    if (r->searched == 0) { /* nothing read, no thread stopped */
        gl_out_line(o, "%s", "");
        return;
    }
    gl_out_note(o, "checked %s bytes: %s in roots, %s in %s reached chunks",
                gl_out_u64_commas(b1, r->root_bytes + r->object_bytes),
                gl_out_u64_commas(b2, r->root_bytes), gl_out_u64_commas(b3, r->object_bytes),
                gl_out_u64_commas(b4, r->objects_reached));
    gl_out_note(o,
                "%zu threads stopped, %zu not (the CUDA driver's, or blocking SIGURG); %.1f ms%s",
                r->threads_stopped, r->threads_skipped, r->seconds * 1e3,
                r->faults ? "; some memory could not be read" : "");
    gl_out_line(o, "%s", "");
}

static void print_stack_of(struct gl_out *o, const struct gl_report_input *in, uint32_t stack,
                           const char *indent)
{
    unsigned n;
    struct gl_frame *frames =
        gl_report_frames_get(in->stack_frames, stack, (unsigned)in->opt->num_callers, in->arg, &n);
    gl_report_frames_print(o, frames, n, indent, "(no stack recorded)");
    free(frames);
}

static void slot_title(const struct gl_report_input *in, unsigned slot, char *buf, size_t len)
{
    if (slot == GL_STATS_SLOT_HOST) {
        snprintf(buf, len, "host memory");
    } else if (slot == GL_STATS_SLOT_OTHER) {
        snprintf(buf, len, "devices beyond %d", GL_STATS_DEVICES - 1);
    } else {
        const char *name = in->device_name ? in->device_name((int)slot, in->arg) : NULL;
        if (name)
            snprintf(buf, len, "device %u (%s)", slot, name);
        else
            snprintf(buf, len, "device %u", slot);
    }
}

/* GPU MEMORY SUMMARY, per device: in use, peak and where it was reached, and
 * per kind what was allocated, freed and failed. */
static void usage_by_device(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_usage *u = in->usage;
    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN], b4[GL_U64_COMMAS_LEN],
        b5[GL_U64_COMMAS_LEN], b6[GL_U64_COMMAS_LEN], title[160];
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        if (!u->used[sl])
            continue;
        const struct gl_stat_device *d = &u->dev[sl];
        slot_title(in, sl, title, sizeof title);
        gl_out_line(o, "  %s: in use %s bytes, peak %s bytes%s", title,
                    gl_out_u64_commas(b1, d->cur_bytes), gl_out_u64_commas(b2, d->peak_bytes),
                    d->peak_bytes ? ", reached by allocation" : "");
        if (d->peak_bytes) {
            gl_out_line(o, "    #%s at:", gl_out_u64_commas(b1, d->peak_seq));
            print_stack_of(o, in, d->peak_stack, "       ");
        }
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_group *g = &u->grp[sl][k];
            const struct gl_stat_counts *a = &g->split[GL_SPLIT_ALL];
            if (!a->alloc_blocks && !g->failed)
                continue;
            gl_out_line(o,
                        "    %s: in use %s bytes in %s blocks, peak %s bytes in %s blocks; "
                        "%s allocs, %s frees",
                        gl_mem_kind_name(k), gl_out_u64_commas(b1, a->cur_bytes),
                        gl_out_u64_commas(b2, a->cur_blocks), gl_out_u64_commas(b3, a->peak_bytes),
                        gl_out_u64_commas(b4, a->peak_blocks),
                        gl_out_u64_commas(b5, a->alloc_blocks),
                        gl_out_u64_commas(b6, a->freed_blocks));
            if (g->failed)
                gl_out_line(o, "    %s: %s failed allocations, %s bytes asked for",
                            gl_mem_kind_name(k), gl_out_u64_commas(b1, g->failed),
                            gl_out_u64_commas(b2, g->failed_bytes));
        }
    }
}

/* --stats=yes: torch.cuda.memory_stats()'s counters per device and kind, and
 * the sites that held the most at their peak. */
static void usage_stats(struct gl_out *o, const struct gl_report_input *in)
{
    static const char *const split_name[GL_NSPLITS] = {"small", "large", "all"};
    const struct gl_usage *u = in->usage;
    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN], b4[GL_U64_COMMAS_LEN],
        title[160];
    gl_out_line(o, "GPU MEMORY STATISTICS (--stats=yes; small: blocks under 1 MiB):");
    for (unsigned sl = 0; sl < GL_STATS_SLOTS; sl++) {
        if (!u->used[sl])
            continue;
        slot_title(in, sl, title, sizeof title);
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_group *g = &u->grp[sl][k];
            if (!g->split[GL_SPLIT_ALL].alloc_blocks)
                continue;
            /* The column titles on a line of their own, over their columns. */
            gl_out_line(o, "  %s, %s:", title, gl_mem_kind_name(k));
            gl_out_line(o, "    %-13s %16s %16s %16s %16s", "", "current", "peak", "allocated",
                        "freed");
            for (int w = 0; w < 2; w++)
                for (int sp = GL_SPLIT_ALL; sp >= 0; sp--) {
                    const struct gl_stat_counts *c = &g->split[sp];
                    gl_out_line(o, "    %-6s %-6s %16s %16s %16s %16s", w ? "bytes" : "blocks",
                                split_name[sp],
                                gl_out_u64_commas(b1, w ? c->cur_bytes : c->cur_blocks),
                                gl_out_u64_commas(b2, w ? c->peak_bytes : c->peak_blocks),
                                gl_out_u64_commas(b3, w ? c->alloc_bytes : c->alloc_blocks),
                                gl_out_u64_commas(b4, w ? c->freed_bytes : c->freed_blocks));
                }
        }
    }
    if (in->ntop_sites)
        gl_out_line(o, "  top %zu allocation sites by peak bytes:", in->ntop_sites);
    for (size_t i = 0; i < in->ntop_sites; i++) {
        const struct gl_site_stats *s = &in->top_sites[i];
        gl_out_line(o, "    peak %s bytes; %s bytes in %s blocks at exit; allocated at",
                    gl_out_u64_commas(b1, s->peak_bytes), gl_out_u64_commas(b2, s->live_bytes),
                    gl_out_u64_commas(b3, s->live_blocks));
        print_stack_of(o, in, s->stack, "       ");
    }
    gl_out_line(o, "%s", "");
}

void gl_report_text_leaks(struct gl_out *o, const struct gl_report_input *in)
{
    const struct gl_options *opt = in->opt;
    const struct gl_leak_result *lr = in->leaks;
    bool quiet = opt->quiet;

    if (opt->leak_check != GL_LEAK_CHECK_NO)
        reach_notes(o, in);
    if (opt->leak_check == GL_LEAK_CHECK_FULL) {
        for (size_t i = 0; i < lr->nrecords; i++) {
            const struct gl_loss_record *r = &lr->records[i];
            if (r->suppressed_by || !(opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind)))
                continue;
            bool error = gl_report_text_is_error(opt, r);
            if (quiet && !error)
                continue;
            print_record(o, in, r, i + 1);
            if (error && opt->exit_on_first_error) {
                gl_out_line(o,
                            "gpuleak: the first error ends the list (--exit-on-first-error=yes)");
                gl_out_line(o, "%s", "");
                break;
            }
        }
    }
    if (quiet)
        return;

    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN], b4[GL_U64_COMMAS_LEN],
        b5[GL_U64_COMMAS_LEN], b6[GL_U64_COMMAS_LEN];
    gl_out_line(o, "GPU MEMORY SUMMARY:");
    gl_out_line(o, "    in use at exit: %s bytes in %s blocks",
                gl_out_u64_commas(b1, lr->in_use.bytes), gl_out_u64_commas(b2, lr->in_use.blocks));
    if (lr->imported.blocks)
        /* IPC memory is mapped here, allocated elsewhere: not in the totals below. */
        gl_out_line(o, " of which imported: %s bytes in %s blocks, opened from other processes",
                    gl_out_u64_commas(b1, lr->imported.bytes),
                    gl_out_u64_commas(b2, lr->imported.blocks));
    gl_out_line(o, "  total GPU usage: %s allocs, %s frees, %s bytes allocated, peak %s bytes",
                gl_out_u64_commas(b3, in->stats->allocs), gl_out_u64_commas(b4, in->stats->frees),
                gl_out_u64_commas(b5, in->stats->bytes_allocated),
                gl_out_u64_commas(b6, in->stats->peak_bytes));
    if (in->usage)
        usage_by_device(o, in);
    gl_out_line(o, "%s", "");
    if (in->usage && opt->stats)
        usage_stats(o, in);

    if (opt->leak_check == GL_LEAK_CHECK_NO && lr->in_use.blocks > 0) {
        gl_out_line(o, "For a detailed leak analysis, rerun with: --leak-check=full");
        gl_out_line(o, "%s", "");
    }
    if (opt->leak_check != GL_LEAK_CHECK_NO) {
        if (lr->in_use.blocks == 0) {
            gl_out_line(o, "All GPU memory was freed -- no leaks are possible");
        } else {
            leak_summary(o, in);
            if (opt->leak_check == GL_LEAK_CHECK_SUMMARY)
                gl_out_line(o, "Rerun with --leak-check=full to see details of leaked memory");
            else
                hidden_kinds_hint(o, in);
        }
        gl_out_line(o, "%s", "");
    }

    if (opt->verbose > 0 && in->supps)
        used_suppressions(o, in->supps);

    char e1[GL_U64_COMMAS_LEN], e2[GL_U64_COMMAS_LEN], e3[GL_U64_COMMAS_LEN], e4[GL_U64_COMMAS_LEN];
    struct gl_error_counts c;
    gl_report_text_error_counts(in, &c);
    gl_out_line(o, "ERROR SUMMARY: %s errors from %s contexts (suppressed: %s from %s)",
                gl_out_u64_commas(e1, c.errors), gl_out_u64_commas(e2, c.contexts),
                gl_out_u64_commas(e3, c.suppressed), gl_out_u64_commas(e4, c.suppressed_contexts));
}

bool gl_report_text_check_prints(const struct gl_report_input *in, const struct gl_loss_record *r)
{
    const struct gl_options *opt = in->opt;
    if (r->suppressed_by || !(opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind)) ||
        !gl_report_text_selected(in, r))
        return false;
    return !opt->quiet || is_error_kind(opt, r->kind);
}

uint64_t gl_report_text_check(struct gl_out *o, const struct gl_report_input *in, const char *title)
{
    const struct gl_options *opt = in->opt;
    const struct gl_leak_result *lr = in->leaks;
    uint64_t errors = 0;
    if (!opt->quiet) {
        gl_out_line(o, "%s", title);
        gl_out_line(o, "%s", "");
    }
    reach_notes(o, in);
    for (size_t i = 0; i < lr->nrecords; i++) {
        const struct gl_loss_record *r = &lr->records[i];
        if (r->suppressed_by || !(opt->show_leak_kinds & GL_LEAK_KIND_BIT(r->kind)) ||
            !gl_report_text_selected(in, r))
            continue;
        errors += is_error_kind(opt, r->kind);
        if (gl_report_text_check_prints(in, r))
            print_record(o, in, r, i + 1);
    }
    if (opt->quiet)
        return errors;
    /* Nothing outstanding: one line, unless a delta check has something that
     * went away since its reference to show. */
    bool went_away = in->delta && (in->delta->n > 0 || in->delta->suppressed.blocks);
    if (lr->in_use.blocks == 0 && !went_away) {
        if (in->since)
            gl_out_line(o, "All GPU memory allocated since checkpoint \"%s\" was freed", in->since);
        else
            gl_out_line(o, "All GPU memory was freed -- no leaks are possible");
    } else {
        leak_summary(o, in);
    }
    gl_out_line(o, "%s", "");
    if (opt->verbose > 0 && in->supps)
        used_suppressions(o, in->supps);
    return errors;
}
