/* SPDX-License-Identifier: MIT */
#include "report/report_errors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/framework.h"
#include "common/options.h"
#include "event/api.h"
#include "event/event.h"
#include "report/report_frames.h"

#define C(buf, v) gl_out_u64_commas(buf, v)

static unsigned frames_of(const struct gl_error_services *svc, uint32_t stack, struct gl_frame *out,
                          unsigned max)
{
    return stack && svc->stack_frames ? svc->stack_frames(stack, out, max, svc->arg) : 0;
}

/* The API the program called for a stack ("cudaFree"), else the driver's name. */
static const char *called(const struct gl_error_services *svc, uint32_t stack, unsigned api)
{
    struct gl_frame f[2]; /* one native frame, one Python */
    unsigned n = frames_of(svc, stack, f, 1);
    /* The name points into the symbolizer's strings, which outlive the report. */
    return gl_report_frames_api_called(&f[0], n, api);
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

const char *gl_report_errors_growth_unit(const struct gl_api_error *e)
{
    enum gl_framework fw = (enum gl_framework)e->growth.framework;
    return fw == GL_FW_NONE ? "block" : fw == GL_FW_PYTORCH ? "tensor" : "array";
}

/* "Growth: +256,000 bytes in 1 tensor per checkpoint, +1,280,000 bytes in 5
 * tensors over the last 5 checkpoints; 35,883,008 bytes in 7 tensors
 * allocated here (PyTorch's record) (from 34,603,008 bytes, checkpoint
 * "step" #12)": what grows first, then what the site holds. */
static void growth_text(const struct gl_api_error *e, char *out, size_t len)
{
    char n1[GL_U64_COMMAS_LEN], n2[GL_U64_COMMAS_LEN], n3[GL_U64_COMMAS_LEN], n4[GL_U64_COMMAS_LEN],
        n5[GL_U64_COMMAS_LEN], n6[GL_U64_COMMAS_LEN], n7[GL_U64_COMMAS_LEN], record[64] = "";
    enum gl_framework fw = (enum gl_framework)e->growth.framework;
    if (fw != GL_FW_NONE)
        snprintf(record, sizeof record, " (%s's record)", gl_framework_name(fw));
    const char *unit = gl_report_errors_growth_unit(e);
    uint32_t k = e->growth.checkpoints ? e->growth.checkpoints : 1;
    uint64_t delta = e->size > e->growth.from_bytes ? e->size - e->growth.from_bytes : 0;
    uint64_t dblocks =
        e->growth.blocks > e->growth.from_blocks ? e->growth.blocks - e->growth.from_blocks : 0;
    /* Per checkpoint: exact when the window divides evenly, else its mean. */
    char per_blocks[64] = "", window_blocks[64] = "";
    if (dblocks && dblocks % k == 0)
        snprintf(per_blocks, sizeof per_blocks, " in %s %s%s", C(n3, dblocks / k), unit,
                 dblocks / k == 1 ? "" : "s");
    if (dblocks)
        snprintf(window_blocks, sizeof window_blocks, " in %s %s%s", C(n4, dblocks), unit,
                 dblocks == 1 ? "" : "s");
    snprintf(out, len,
             "Growth: %s+%s bytes%s per checkpoint, +%s bytes%s over the last %u checkpoints; %s "
             "bytes in %s %ss allocated here%s (from %s bytes, checkpoint \"%s\" #%u)",
             delta % k ? "about " : "", C(n1, delta / k), per_blocks, C(n2, delta), window_blocks,
             e->growth.checkpoints, C(n5, e->size), C(n6, e->growth.blocks), unit, record,
             C(n7, e->growth.from_bytes), e->growth.checkpoint, e->growth.ordinal);
}

void gl_report_errors_describe(const struct gl_api_error *e, const struct gl_error_services *svc,
                               struct gl_error_text *t)
{
    memset(t, 0, sizeof *t);
    const char *api = called(svc, e->stack, e->api);
    const struct gl_block_info *b = &e->block.block;
    bool freed = e->flags & GL_ERRF_FREED;
    char n1[GL_U64_COMMAS_LEN], n2[GL_U64_COMMAS_LEN];
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
    case GL_ERR_GROWTH:
        growth_text(e, t->what, sizeof t->what);
        break;
    case GL_ERR_OBSERVER_MISMATCH: {
        const char *who = e->detail == GL_MISMATCH_DRIVER_ONLY
                              ? "seen at the driver's entry point but not by CUPTI"
                          : e->detail == GL_MISMATCH_CUPTI_ONLY
                              ? "seen by CUPTI but not at the driver's entry points (a path "
                                "to the driver gpuleak does not hook)"
                              : "read differently by CUPTI and at the driver's entry point";
        if (e->flags & GL_ERRF_OTHER_CALL)
            snprintf(t->what, sizeof t->what, "Observer mismatch: %s(0x%" PRIX64 ") %s", api,
                     e->addr, who);
        else
            snprintf(t->what, sizeof t->what,
                     "Observer mismatch: %s of %s bytes (%s) at 0x%" PRIX64 " %s", api,
                     C(n1, e->size), gl_mem_kind_name(e->mem_kind), e->addr, who);
        break;
    }
    default:
        snprintf(t->what, sizeof t->what, "Error of unknown kind %u by %s", e->kind, api);
    }
}

static void print_stack(struct gl_out *o, const struct gl_error_services *svc, uint32_t stack,
                        bool missing)
{
    unsigned n;
    struct gl_frame *f =
        gl_report_frames_get(svc->stack_frames, stack, svc->num_callers, svc->arg, &n);
    gl_report_frames_print(o, f, n, "   ",
                           missing ? "(stack not kept: --keep-stacktraces=alloc-and-free keeps it)"
                                   : "(no stack recorded)");
    free(f);
}

/* Who holds the memory: NVML's free and total, gpuleak's live bytes per kind
 * on the device, and the allocation sites holding the most. */
static void oom_details(struct gl_out *o, const struct gl_api_error *e,
                        const struct gl_error_services *svc, const struct gl_counters_holders *h)
{
    char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN], b3[GL_U64_COMMAS_LEN];
    if (e->flags & GL_ERRF_DEVMEM)
        gl_out_line(o, " Device %d: %s bytes free of %s (NVML)", e->device, C(b1, e->device_free),
                    C(b2, e->device_total));
    else if (e->device >= 0)
        gl_out_line(o, " Device %d: free and total memory unknown (NVML could not tell)",
                    e->device);
    if (!h)
        return;
    uint64_t total = 0;
    if (h->counted) {
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++)
            total += h->live[k].bytes;
        if (e->device >= 0)
            gl_out_line(o, " Live on device %d, as gpuleak tracked it: %s bytes", e->device,
                        C(b1, total));
        else
            gl_out_line(o, " Live in host memory, as gpuleak tracked it: %s bytes", C(b1, total));
        for (unsigned k = 1; k < GL_MEM_NKINDS; k++)
            if (h->live[k].blocks)
                gl_out_line(o, "   %s bytes in %s blocks of %s", C(b1, h->live[k].bytes),
                            C(b2, h->live[k].blocks), gl_mem_kind_name(k));
    }
    for (size_t i = 0; i < h->nsites && i < (size_t)svc->top_sites; i++) {
        const struct gl_site_stats *s = &h->sites[i];
        if (i == 0)
            gl_out_line(o, " Top allocation sites by live bytes:");
        double pct = total ? 100.0 * (double)s->live_bytes / (double)total : 0.0;
        char peak[64] = "";
        if (h->peaks && s->peak_bytes)
            snprintf(peak, sizeof peak, ", peak %s bytes", C(b3, s->peak_bytes));
        gl_out_line(o, "  %s bytes in %s blocks (%.1f%%)%s, allocated at", C(b1, s->live_bytes),
                    C(b2, s->live_blocks), pct > 100 ? 100.0 : pct, peak);
        print_stack(o, svc, s->stack, false);
    }
}

void gl_report_errors_api_error(struct gl_out *o, const struct gl_api_error *e,
                                const struct gl_error_services *svc,
                                const struct gl_counters_holders *holders)
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
        oom_details(o, e, svc, holders);
    gl_out_line(o, "%s", "");
}

void gl_report_errors_overflow(struct gl_out *o)
{
    gl_out_line(o, "More than 1000 different errors detected.  I'm not reporting any more.");
    gl_out_line(o, "Final error counts will be inaccurate.  Go fix your program!");
    gl_out_line(o, "%s", "");
}
