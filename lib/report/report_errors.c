#include "report/report_errors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/framework.h"
#include "report/report_text.h"
#include "event/api.h"
#include "track/stats.h"
#include "stack/stack_depot.h"
#include "base/tool.h"
#include "track/tracker.h"

#define C(buf, v) gl_out_u64_commas(buf, v)

static unsigned frames_of(const struct gl_error_services *svc, uint32_t stack, struct gl_frame *out,
                          unsigned max)
{
    return stack && svc->stack_frames ? svc->stack_frames(stack, out, max, svc->arg) : 0;
}

/* The API the program called for a stack ("cudaFree"), else the driver's name. */
static const char *called(const struct gl_error_services *svc, uint32_t stack, unsigned api)
{
    struct gl_frame f[GL_FRAMES_SHOWN_MAX];
    unsigned n = frames_of(svc, stack, f, 1);
    /* The name points into the symbolizer's strings, which outlive the report. */
    return gl_report_text_api_called(&f[0], n, api);
}

/* What a block's kind is released with. */
static const char *right_release(const struct gl_block_info *b)
{
    switch (b->kind) {
    case GL_MEM_HOST_PINNED:
        return "cudaFreeHost (cuMemFreeHost)";
    case GL_MEM_HOST_REGISTERED:
        return "cudaHostUnregister (cuMemHostUnregister)";
    case GL_MEM_IPC:
        if (b->api == GL_API_cuIpcOpenMemHandle || b->api == GL_API_cuIpcOpenMemHandle_v2)
            return "cudaIpcCloseMemHandle (cuIpcCloseMemHandle)";
        return "cudaFree or cudaFreeAsync";
    case GL_MEM_ASYNC:
    case GL_MEM_GRAPH:
        return "cudaFreeAsync or cudaFree";
    default:
        return "cudaFree (cuMemFree)";
    }
}

static void block_line(char *buf, size_t len, uint64_t addr, const struct gl_block_info *b,
                       const char *what, const char *verb)
{
    char off[GL_U64_COMMAS_LEN], size[GL_U64_COMMAS_LEN];
    snprintf(buf, len, "Address 0x%" PRIX64 " is %s bytes inside %s of %s bytes %s", addr,
             C(off, addr - gl_key_value(b->key)), what, C(size, b->size), verb);
}

void gl_report_errors_describe(const struct gl_api_error *e, const struct gl_error_services *svc,
                               struct gl_error_text *t)
{
    memset(t, 0, sizeof *t);
    const char *api = called(svc, e->stack, e->api);
    const struct gl_block_info *b = &e->block.block;
    bool freed = e->flags & GL_ERRF_FREED;
    char n1[GL_U64_COMMAS_LEN], n2[GL_U64_COMMAS_LEN], n3[GL_U64_COMMAS_LEN];
    /* The usual auxiliaries: where a freed block was freed, then allocated; or
     * where a live block was allocated. */
    if (e->flags & GL_ERRF_BLOCK) {
        if (freed) {
            block_line(t->aux[0], sizeof t->aux[0], e->addr, b, "a block", "free'd");
            t->aux_stack[0] = e->block.free_stack;
            t->aux_stack_missing[0] = e->block.free_stack == 0;
            snprintf(t->aux[1], sizeof t->aux[1], "Block was alloc'd at");
            t->aux_stack[1] = b->stack;
        } else {
            block_line(t->aux[0], sizeof t->aux[0], e->addr, b, "a block", "alloc'd");
            t->aux_stack[0] = b->stack;
        }
        /* Only free stacks are left out by choice (--keep-stacktraces); a
         * missing allocation stack was not recorded (no libunwind, say). */
    }
    switch ((enum gl_error_kind)e->kind) {
    case GL_ERR_INVALID_FREE:
        switch ((enum gl_error_detail)e->detail) {
        case GL_ERD_INTERIOR:
            snprintf(t->what, sizeof t->what,
                     "Invalid free: %s(0x%" PRIX64 "): the address is inside a block, not at its "
                     "start",
                     api, e->addr);
            break;
        case GL_ERD_FREED_INTERIOR:
            snprintf(t->what, sizeof t->what,
                     "Invalid free: %s(0x%" PRIX64 "): the address is inside a freed block", api,
                     e->addr);
            break;
        case GL_ERD_VMM_MAPPED:
            snprintf(t->what, sizeof t->what,
                     "Invalid free: %s(0x%" PRIX64 "): the address is mapped with cuMemMap; unmap "
                     "it with cuMemUnmap and release its handle with cuMemRelease",
                     api, e->addr);
            block_line(t->aux[0], sizeof t->aux[0], e->addr, b, "a mapping",
                       "of a physical "
                       "allocation made");
            break;
        default:
            snprintf(t->what, sizeof t->what,
                     "Invalid free: %s(0x%" PRIX64 "): an address gpuleak never saw allocated", api,
                     e->addr);
        }
        break;
    case GL_ERR_DOUBLE_FREE:
        if (e->detail == GL_ERD_HANDLE_RELEASED) {
            snprintf(t->what, sizeof t->what,
                     "Double free: %s(0x%" PRIX64 "): the handle was already released (its "
                     "memory stays until its mappings are unmapped)",
                     api, e->addr);
            snprintf(t->aux[0], sizeof t->aux[0],
                     "Handle 0x%" PRIX64 " of %s bytes, mapped at %s address%s, was created at",
                     e->addr, C(n1, b->size), C(n2, b->aux), b->aux == 1 ? "" : "es");
        } else
            snprintf(t->what, sizeof t->what,
                     "Double free: %s(0x%" PRIX64 "): the block was already freed", api, e->addr);
        break;
    case GL_ERR_MISMATCHED_FREE:
        if (e->detail == GL_ERD_WRONG_DEVICE)
            snprintf(t->what, sizeof t->what,
                     "Mismatched free: %s(0x%" PRIX64 ") on a stream of device %d frees a block "
                     "of device %d",
                     api, e->addr, e->device, b->device);
        else
            snprintf(t->what, sizeof t->what,
                     "Mismatched free: %s(0x%" PRIX64 ") of %s from %s; release it with %s", api,
                     e->addr, gl_mem_kind_name(b->kind), called(svc, b->stack, b->api),
                     right_release(b));
        break;
    case GL_ERR_INVALID_RANGE: {
        uint64_t end = gl_key_value(b->key) + b->size;
        snprintf(t->what, sizeof t->what,
                 "Invalid %s of %s bytes by %s at 0x%" PRIX64 ": %s bytes past the end of the "
                 "block",
                 e->flags & GL_ERRF_WRITE ? "write" : "read", C(n1, e->size), api, e->addr,
                 C(n2, e->addr + e->size - end));
        break;
    }
    case GL_ERR_FREED_RANGE:
        snprintf(t->what, sizeof t->what,
                 "Invalid %s of %s bytes by %s at 0x%" PRIX64 ": the block was freed",
                 e->flags & GL_ERRF_WRITE ? "write" : "read", C(n1, e->size), api, e->addr);
        break;
    case GL_ERR_OUT_OF_MEMORY: {
        char where[64];
        if (e->device >= 0)
            snprintf(where, sizeof where, "on device %d", e->device);
        else
            snprintf(where, sizeof where, "in host memory");
        snprintf(t->what, sizeof t->what, "Out of memory: %s of %s bytes (%s) %s failed", api,
                 C(n1, e->size), gl_mem_kind_name(e->mem_kind), where);
        break;
    }
    case GL_ERR_GROWTH: {
        char record[64] = "";
        enum gl_framework fw = (enum gl_framework)e->growth.framework;
        if (fw != GL_FW_NONE)
            snprintf(record, sizeof record, " (%s's record)", gl_framework_name(fw));
        snprintf(t->what, sizeof t->what,
                 "Growth: %s bytes in %s %s allocated here%s, up at each of the last %u "
                 "checkpoints (from %s bytes, checkpoint \"%s\" #%u)",
                 C(n1, e->size), C(n2, e->growth.blocks),
                 fw == GL_FW_NONE      ? "blocks"
                 : fw == GL_FW_PYTORCH ? "tensors"
                                       : "arrays",
                 record, e->growth.checkpoints, C(n3, e->growth.from_bytes), e->growth.checkpoint,
                 e->growth.ordinal);
        break;
    }
    default:
        snprintf(t->what, sizeof t->what, "Error of unknown kind %u by %s", e->kind, api);
    }
}

static void print_stack(struct gl_out *o, const struct gl_error_services *svc, uint32_t stack,
                        bool missing)
{
    struct gl_frame f[GL_FRAMES_SHOWN_MAX];
    unsigned n = frames_of(svc, stack, f, svc->num_callers);
    gl_report_text_print_frames(o, f, n, "   ",
                                missing
                                    ? "(stack not kept: --keep-stacktraces=alloc-and-free keeps it)"
                                    : "(no stack recorded)");
}

static int by_live_desc(const void *a, const void *b)
{
    const struct gl_site_stats *x = a, *y = b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes < y->live_bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_peak_desc(const void *a, const void *b)
{
    const struct gl_site_stats *x = a, *y = b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes < y->peak_bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

struct gl_site_stats *gl_report_errors_sites_by_peak(size_t *n)
{
    *n = 0;
    size_t all = gl_stack_depot_sites(NULL, 0);
    struct gl_site_stats *s = all ? malloc(all * sizeof *s) : NULL;
    if (!s)
        return NULL;
    *n = gl_stack_depot_sites(s, all);
    if (*n > all) /* sites added since the count: the first `all` are copied */
        *n = all;
    qsort(s, *n, sizeof *s, by_peak_desc);
    return s;
}

static int site_by_stack(const void *a, const void *b)
{
    const struct gl_site_stats *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int block_by_stack(const void *a, const void *b)
{
    const struct gl_block_info *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The live blocks on a device (-1: host memory) summed by allocation stack,
 * most bytes first; with per-site counting on, each site's peak too.  A table
 * walk: out of memory is rare, and sites are counted on every allocation only
 * when --stats asks. */
static struct gl_site_stats *live_sites(int device, size_t *n)
{
    *n = 0;
    struct gl_block_info *b;
    size_t nb, bytes;
    if (gl_tracker_snapshot(&b, &nb, &bytes) != 0 || !nb)
        return NULL;
    size_t keep = 0;
    for (size_t i = 0; i < nb; i++)
        if (b[i].device == device && gl_mem_kind_counted(b[i].kind))
            b[keep++] = b[i];
    qsort(b, keep, sizeof *b, block_by_stack);
    struct gl_site_stats *s = keep ? calloc(keep, sizeof *s) : NULL;
    for (size_t i = 0; s && i < keep; i++) {
        if (!*n || s[*n - 1].stack != b[i].stack)
            s[(*n)++].stack = b[i].stack;
        s[*n - 1].live_bytes += b[i].size;
        s[*n - 1].live_blocks++;
    }
    gl_tool_unmap(b, bytes);
    if (s && gl_stats_sites_on()) {
        size_t all = gl_stack_depot_sites(NULL, 0);
        struct gl_site_stats *d = all ? malloc(all * sizeof *d) : NULL;
        size_t nd = d ? gl_stack_depot_sites(d, all) : 0;
        if (nd > all)
            nd = all;
        for (size_t i = 0; i < *n; i++) { /* d is in id order */
            const struct gl_site_stats *hit = bsearch(&s[i], d, nd, sizeof *d, site_by_stack);
            if (hit)
                s[i].peak_bytes = hit->peak_bytes;
        }
        free(d);
    }
    if (s)
        qsort(s, *n, sizeof *s, by_live_desc);
    return s;
}

/* Who holds the memory: gpuleak's live bytes per kind on the device, and the
 * allocation sites holding the most. */
static void oom_details(struct gl_out *o, const struct gl_api_error *e,
                        const struct gl_error_services *svc)
{
    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN];
    if (e->flags & GL_ERRF_DEVMEM)
        gl_out_line(o, " Device %d: %s bytes free of %s (NVML)", e->device, C(b1, e->device_free),
                    C(b2, e->device_total));
    else if (e->device >= 0)
        gl_out_line(o, " Device %d: free and total memory unknown (NVML could not tell)",
                    e->device);
    unsigned slot = gl_stats_slot(e->device);
    uint64_t total = 0;
    struct gl_usage *u = malloc(sizeof *u); /* one consistent read of every counter */
    if (u) {
        gl_stats_snapshot(u);
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++)
            total += u->grp[slot][k].split[GL_SPLIT_ALL].cur_bytes;
        if (e->device >= 0)
            gl_out_line(o, " Live on device %d, as gpuleak tracked it: %s bytes", e->device,
                        C(b1, total));
        else
            gl_out_line(o, " Live in host memory, as gpuleak tracked it: %s bytes", C(b1, total));
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++) {
            const struct gl_stat_counts *a = &u->grp[slot][k].split[GL_SPLIT_ALL];
            if (a->cur_blocks)
                gl_out_line(o, "   %s bytes in %s blocks of %s", C(b1, a->cur_bytes),
                            C(b2, a->cur_blocks), gl_mem_kind_name(k));
        }
        free(u);
    }
    /* Sites: the live blocks on this device (or in host memory), by stack. */
    size_t n;
    struct gl_site_stats *s = live_sites(e->device, &n);
    if (!s)
        return;
    bool peaks = gl_stats_sites_on(); /* a site's peak is known with --stats=yes */
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < (size_t)svc->top_sites; i++, shown++) {
        if (shown == 0)
            gl_out_line(o, " Top allocation sites by live bytes:");
        double pct = total ? 100.0 * (double)s[i].live_bytes / (double)total : 0.0;
        char peak[64] = "";
        if (peaks && s[i].peak_bytes)
            snprintf(peak, sizeof peak, ", peak %s bytes", C(b3, s[i].peak_bytes));
        gl_out_line(o, "  %s bytes in %s blocks (%.1f%%)%s, allocated at", C(b1, s[i].live_bytes),
                    C(b2, s[i].live_blocks), pct > 100 ? 100.0 : pct, peak);
        print_stack(o, svc, s[i].stack, false);
    }
    free(s);
}

void gl_report_errors_api_error(struct gl_out *o, const struct gl_api_error *e,
                                const struct gl_error_services *svc)
{
    struct gl_error_text t;
    gl_report_errors_describe(e, svc, &t);
    gl_out_line(o, "%s", t.what);
    print_stack(o, svc, e->stack, false);
    for (int i = 0; i < 2; i++) {
        if (!t.aux[i][0])
            continue;
        gl_out_line(o, " %s", t.aux[i]);
        print_stack(o, svc, t.aux_stack[i], t.aux_stack_missing[i]);
    }
    if (e->kind == GL_ERR_OUT_OF_MEMORY)
        oom_details(o, e, svc);
    gl_out_line(o, "%s", "");
}

void gl_report_errors_overflow(struct gl_out *o)
{
    gl_out_line(o, "More than 1000 different errors detected.  I'm not reporting any more.");
    gl_out_line(o, "Final error counts will be inaccurate.  Go fix your program!");
    gl_out_line(o, "%s", "");
}
