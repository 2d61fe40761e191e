/* SPDX-License-Identifier: MIT */
#include "check_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tool.h"
#include "report/report_frames.h"
#include "runtime.h"

/* Oldest first.  A full history drops its oldest by moving the rest down:
 * 64 entries, once per check, beside a leak check's scan. */
static struct gl_report_check kept[GL_CHECK_HISTORY_CHECKS];
static size_t nkept;
static uint64_t dropped;

/* A record's title and block line share one allocation. */
static size_t strings_size(const struct gl_report_check_record *r)
{
    return strlen(r->title) + 1 + strlen(r->text) + 1;
}

static void free_check(struct gl_report_check *c)
{
    struct gl_report_check_record *recs = (struct gl_report_check_record *)c->records;
    for (size_t i = 0; i < c->nkept; i++)
        if (recs[i].title[0]) /* else the static "" of a record kept without its lines */
            gl_tool_free((char *)recs[i].title, strings_size(&recs[i]));
    if (recs)
        gl_tool_free(recs, c->nkept * sizeof *recs);
    memset(c, 0, sizeof *c);
}

static void keep_record(const struct gl_report_input *in, const struct gl_loss_record *r,
                        size_t index, struct gl_report_check_record *out)
{
    /* The lines as the text printed them now: a block's line says where a VMM
     * handle is mapped and which pool holds a sub-allocation, which change. */
    char title[512], text[1024];
    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(in->stack_frames, r->stack,
                                                   (unsigned)in->opt->num_callers, in->arg, &n);
    gl_report_text_block_text(in, r, gl_report_frames_api_called(frames, n, r->first.api), text,
                              sizeof text);
    free(frames);
    gl_report_text_record_title(in, r, index, title, sizeof title);
    const struct gl_ref_record *old = in->delta ? gl_checkpoints_ref_find(in->delta, r) : NULL;
    size_t lt = strlen(title) + 1, lx = strlen(text) + 1;
    char *s = gl_tool_alloc(lt + lx);
    if (s) {
        memcpy(s, title, lt);
        memcpy(s + lt, text, lx);
    }
    *out = (struct gl_report_check_record){
        .index = index,
        .bytes = r->bytes,
        .indirect_bytes = r->indirect_bytes,
        .blocks = r->blocks,
        .before_bytes = old ? old->bytes : 0,
        .before_blocks = old ? old->blocks : 0,
        .seq_min = r->seq_min,
        .seq_max = r->seq_max,
        .stack = r->stack,
        .api = r->first.api,
        .kind = (uint8_t)r->kind,
        .mem_kind = r->first.kind,
        .is_new = in->delta && !old,
        .error = gl_report_text_is_error(in->opt, r),
        .title = s ? s : "",
        .text = s ? s + lt : "",
    };
}

void gl_check_history_add(const struct gl_report_input *in, uint64_t number, uint64_t since_seq,
                          bool to_buffer, uint64_t errors)
{
    if (!gl_runtime.opt.xml && !gl_runtime.opt.json_file[0])
        return; /* no document will list it */
    if (nkept == GL_CHECK_HISTORY_CHECKS) {
        free_check(&kept[0]);
        memmove(&kept[0], &kept[1], (GL_CHECK_HISTORY_CHECKS - 1) * sizeof kept[0]);
        nkept--;
        dropped++;
    }
    struct gl_report_check *c = &kept[nkept++];
    const struct gl_leak_result *lr = in->leaks;
    *c = (struct gl_report_check){
        .number = number,
        .select = in->select,
        .to_buffer = to_buffer,
        .since_seq = since_seq,
        .elapsed_s = in->elapsed_s,
        .allocs = in->stats ? in->stats->allocs : 0,
        .errors = errors,
        .in_use = lr->in_use,
        .ignored = lr->ignored,
        .suppressed = lr->suppressed,
        .delta = in->delta != NULL,
        .nrecords = lr->nrecords,
    };
    snprintf(c->since, sizeof c->since, "%s", in->since ? in->since : "");
    memcpy(c->kind, lr->kind, sizeof c->kind);
    if (in->delta) {
        memcpy(c->before_kind, in->delta->kind, sizeof c->before_kind);
        c->before_suppressed = in->delta->suppressed;
    }
    for (size_t i = 0; i < lr->nrecords; i++)
        c->printed += gl_report_text_check_prints(in, &lr->records[i]);
    size_t want =
        c->printed < GL_CHECK_HISTORY_RECORDS ? (size_t)c->printed : GL_CHECK_HISTORY_RECORDS;
    struct gl_report_check_record *recs = want ? gl_tool_alloc(want * sizeof *recs) : NULL;
    if (!recs) /* out of memory: the counts are kept, no record */
        return;
    for (size_t i = 0; i < lr->nrecords && c->nkept < want; i++)
        if (gl_report_text_check_prints(in, &lr->records[i]))
            keep_record(in, &lr->records[i], i + 1, &recs[c->nkept++]);
    c->records = recs;
}

void gl_check_history_input(struct gl_report_input *in)
{
    in->checks = nkept ? kept : NULL;
    in->nchecks = nkept;
    in->checks_dropped = dropped;
}

void gl_check_history_reset(void)
{
    for (size_t i = 0; i < nkept; i++)
        free_check(&kept[i]);
    nkept = 0;
    dropped = 0;
}
