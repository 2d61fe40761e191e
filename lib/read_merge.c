/* SPDX-License-Identifier: MIT */
#include "read_merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gl_uthash.h"
#include "common/leak_kind.h"
#include "common/util.h"
#include "report/report_frames.h"

/* A frame copied out of the symbolizer that made it. */
struct frame_copy {
    struct gl_frame f;
};

struct record {
    enum gl_leak_kind kind;
    char *key; /* kind and frames, as compared */
    uint64_t bytes, indirect, blocks;
    struct gl_frame *frames; /* the first process's, copied */
    unsigned nframes;
    int *pids; /* the processes it is in, in the order read */
    size_t npids;
};

struct process {
    int pid, ppid;
    char *command, *ending;
    struct gl_leak_totals in_use, kind[GL_LEAK_NKINDS], suppressed;
    uint64_t errors;
};

/* A merged record found by its key: records move when their array grows,
 * so the index names them by position. */
struct key_index {
    const char *key; /* the record's */
    size_t at;
    UT_hash_handle hh;
};

struct gl_read_merge {
    struct record *r;
    size_t nr;
    struct key_index *index; /* by key: one lookup a record, not a pass over all */
    struct process *p;
    size_t np;
};

static char *copy_str(const char *s) { return s ? strdup(s) : NULL; }

struct gl_read_merge *gl_read_merge_new(void) { return calloc(1, sizeof(struct gl_read_merge)); }

static void free_frames(struct gl_frame *f, unsigned n)
{
    for (unsigned i = 0; f && i < n; i++) {
        free((char *)f[i].function);
        free((char *)f[i].file);
        free((char *)f[i].object);
        free((char *)f[i].mangled);
    }
    free(f);
}

void gl_read_merge_free(struct gl_read_merge *m)
{
    if (!m)
        return;
    struct key_index *e, *tmp;
    HASH_ITER(hh, m->index, e, tmp)
    {
        HASH_DEL(m->index, e);
        free(e);
    }
    for (size_t i = 0; i < m->nr; i++) {
        free(m->r[i].key);
        free_frames(m->r[i].frames, m->r[i].nframes);
        free(m->r[i].pids);
    }
    for (size_t i = 0; i < m->np; i++) {
        free(m->p[i].command);
        free(m->p[i].ending);
    }
    free(m->r);
    free(m->p);
    free(m);
}

/* What a record is known by across processes: its kind, then per frame the
 * function and source line where known, else its object (an address means
 * nothing in another process). */
static char *record_key(enum gl_leak_kind kind, const struct gl_frame *f, unsigned n)
{
    size_t cap = 64, len = 0;
    for (unsigned i = 0; i < n; i++)
        cap += 32 + (f[i].function ? strlen(f[i].function) : 0) +
               (f[i].file ? strlen(f[i].file) : 0) + (f[i].object ? strlen(f[i].object) : 0);
    char *k = malloc(cap);
    if (!k)
        return NULL;
    len += (size_t)snprintf(k, cap, "%d", (int)kind);
    for (unsigned i = 0; i < n; i++)
        len += (size_t)snprintf(k + len, cap - len, "|%s:%s:%d:%s",
                                f[i].function ? f[i].function : "?", f[i].file ? f[i].file : "",
                                f[i].line,
                                f[i].function || f[i].file ? "" : (f[i].object ? f[i].object : ""));
    return k;
}

static const char *ending_of(const struct gl_log_summary *s, char *buf, size_t len)
{
    if (!s->ended)
        snprintf(buf, len, "died before its exit check");
    else if (s->how == GL_LOG_END_SIGNAL)
        snprintf(buf, len, "killed by signal %d", s->status);
    else if (s->how == GL_LOG_END_OTHER)
        snprintf(buf, len, "ended by _exit(%d)", s->status);
    else
        snprintf(buf, len, "exited");
    return buf;
}

/* A process's loss record into the merged ones: with one of the same kind
 * and frames, or as a new one.  With --leak-resolution=low or med, the first
 * 2 or 4 frames decide, as they did within each process. */
static bool merge_record(struct gl_read_merge *m, const struct process *p,
                         const struct gl_loss_record *r, const struct gl_report_input *in)
{
    unsigned n;
    struct gl_frame *frames = gl_report_frames_get(in->stack_frames, r->stack,
                                                   (unsigned)in->opt->num_callers, in->arg, &n);
    unsigned same = gl_options_resolution_frames(in->opt->leak_resolution);
    char *key = record_key(r->kind, frames, same && same < n ? same : n);
    if (!key) {
        free(frames);
        return false;
    }
    struct record *rec = NULL;
    struct key_index *found;
    HASH_FIND(hh, m->index, key, strlen(key), found);
    if (found) {
        rec = &m->r[found->at];
        free(key);
    } else {
        struct key_index *e = malloc(sizeof *e);
        if (!e || !gl_util_grow((void **)&m->r, m->nr, sizeof *m->r)) {
            free(e);
            free(key);
            free(frames);
            return false;
        }
        e->key = key;
        e->at = m->nr;
        HASH_ADD_KEYPTR(hh, m->index, e->key, strlen(e->key), e);
        rec = &m->r[m->nr++];
        *rec = (struct record){.kind = r->kind, .key = key, .nframes = n};
        rec->frames = calloc(n ? n : 1, sizeof *rec->frames);
        for (unsigned j = 0; rec->frames && j < n; j++) {
            rec->frames[j] = frames[j];
            rec->frames[j].function = copy_str(frames[j].function);
            rec->frames[j].file = copy_str(frames[j].file);
            rec->frames[j].object = copy_str(frames[j].object);
            rec->frames[j].mangled = copy_str(frames[j].mangled);
        }
    }
    free(frames);
    rec->bytes += r->bytes;
    rec->indirect += r->indirect_bytes;
    rec->blocks += r->blocks;
    if (!rec->npids || rec->pids[rec->npids - 1] != p->pid) {
        if (!gl_util_grow((void **)&rec->pids, rec->npids, sizeof *rec->pids))
            return false;
        rec->pids[rec->npids++] = p->pid;
    }
    return true;
}

bool gl_read_merge_add(struct gl_read_merge *m, const struct gl_log_summary *s,
                       const struct gl_leak_run *run, const struct gl_report_input *in)
{
    if (!gl_util_grow((void **)&m->p, m->np, sizeof *m->p))
        return false;
    struct process *p = &m->p[m->np++];
    char ending[64];
    const struct gl_leak_result *l = &run->leaks;
    *p = (struct process){.pid = (int)s->header->pid,
                          .ppid = (int)s->header->ppid,
                          .command = copy_str(s->command),
                          .ending = copy_str(ending_of(s, ending, sizeof ending)),
                          .in_use = l->in_use,
                          .suppressed = l->suppressed,
                          .errors = gl_report_text_error_count(in)};
    memcpy(p->kind, l->kind, sizeof p->kind);

    for (size_t i = 0; i < l->nrecords; i++)
        if (!l->records[i].suppressed_by && !merge_record(m, p, &l->records[i], in))
            return false;
    return true;
}

static int by_bytes(const void *a, const void *b)
{
    const struct record *x = *(const struct record *const *)a,
                        *y = *(const struct record *const *)b;
    uint64_t bx = x->bytes + x->indirect, by = y->bytes + y->indirect;
    if (bx != by)
        return bx < by ? -1 : 1;
    return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static void totals(struct gl_out *o, const char *label, const struct gl_leak_totals *t)
{
    char b[GL_U64_COMMAS_LEN], k[GL_U64_COMMAS_LEN];
    gl_out_line(o, "%18s: %s bytes in %s blocks", label, gl_out_u64_commas(b, t->bytes),
                gl_out_u64_commas(k, t->blocks));
}

static void record_lines(struct gl_out *o, const struct record *r, size_t index, size_t total,
                         size_t nprocesses)
{
    char bytes[GL_U64_COMMAS_LEN], blocks[GL_U64_COMMAS_LEN], in[GL_U64_COMMAS_LEN + 64];
    char pids[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < r->npids && len < sizeof pids - 32; i++)
        len += (size_t)snprintf(pids + len, sizeof pids - len, "%s%d", i ? ", " : "", r->pids[i]);
    if (len >= sizeof pids - 32)
        snprintf(pids + len, sizeof pids - len, ", ...");
    snprintf(in, sizeof in, "%zu of %zu processes", r->npids, nprocesses);
    gl_out_line(o, "%s bytes in %s blocks are %s in loss record %zu of %zu, in %s (%s %s)",
                gl_out_u64_commas(bytes, r->bytes + r->indirect),
                gl_out_u64_commas(blocks, r->blocks), gl_leak_kind_phrase(r->kind), index, total,
                in, r->npids == 1 ? "pid" : "pids", pids);
    gl_report_frames_print(o, r->frames, r->nframes, "   ", "(no stack recorded)");
    gl_out_line(o, "%s", "");
}

uint64_t gl_read_merge_print(const struct gl_read_merge *m, struct gl_out *o,
                             const struct gl_options *opt)
{
    gl_out_line(o, "gpuleak: merged report of %zu processes", m->np);
    gl_out_line(o, "%s", "");
    const struct record **shown = calloc(m->nr ? m->nr : 1, sizeof *shown);
    size_t nshown = 0;
    uint64_t errors = 0;
    for (size_t i = 0; shown && i < m->nr; i++)
        if (opt->leak_check == GL_LEAK_CHECK_FULL &&
            (opt->show_leak_kinds & GL_LEAK_KIND_BIT(m->r[i].kind)))
            shown[nshown++] = &m->r[i];
    if (shown)
        qsort(shown, nshown, sizeof *shown, by_bytes);
    for (size_t i = 0; i < nshown; i++)
        if (!opt->quiet || (opt->errors_for_leak_kinds & GL_LEAK_KIND_BIT(shown[i]->kind)))
            record_lines(o, shown[i], i + 1, nshown, m->np);
    free(shown);

    struct gl_leak_totals sum[GL_LEAK_NKINDS] = {{0}}, suppressed = {0};
    gl_out_line(o, "PROCESSES:");
    for (size_t i = 0; i < m->np; i++) {
        const struct process *p = &m->p[i];
        char b[GL_U64_COMMAS_LEN], k[GL_U64_COMMAS_LEN], lost[GL_U64_COMMAS_LEN];
        uint64_t lost_bytes = p->kind[GL_LEAK_DEFINITE].bytes + p->kind[GL_LEAK_POSSIBLE].bytes +
                              p->kind[GL_LEAK_INDIRECT].bytes;
        gl_out_line(o, "   pid %d (parent %d), %s: %s", p->pid, p->ppid, p->ending,
                    p->command ? p->command : "");
        gl_out_line(o, "      in use at its end %s bytes in %s blocks, lost %s bytes, %llu errors",
                    gl_out_u64_commas(b, p->in_use.bytes), gl_out_u64_commas(k, p->in_use.blocks),
                    gl_out_u64_commas(lost, lost_bytes), (unsigned long long)p->errors);
        for (int j = 0; j < GL_LEAK_NKINDS; j++) {
            sum[j].bytes += p->kind[j].bytes;
            sum[j].blocks += p->kind[j].blocks;
        }
        suppressed.bytes += p->suppressed.bytes;
        suppressed.blocks += p->suppressed.blocks;
        errors += p->errors;
    }
    gl_out_line(o, "%s", "");
    gl_out_line(o, "LEAK SUMMARY (%zu processes):", m->np);
    for (int j = 0; j < GL_LEAK_NKINDS; j++)
        if (j != GL_LEAK_DEATH || sum[j].blocks)
            totals(o, gl_leak_kind_phrase((enum gl_leak_kind)j), &sum[j]);
    totals(o, "suppressed", &suppressed);
    gl_out_line(o, "%s", "");
    gl_out_line(o, "ERROR SUMMARY: %llu errors in %zu processes", (unsigned long long)errors,
                m->np);
    return errors;
}
