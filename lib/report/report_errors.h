/* SPDX-License-Identifier: MIT */
/* API misuse errors and out-of-memory reports, as text (printed when they
 * happen) and in the exit report's documents.
 *
 * An error is described once (gl_report_errors_describe): a "what" line, the stack
 * where it happened, and up to two auxiliary lines each with a stack (where the
 * block was freed, where it was allocated), Valgrind's layout:
 *
 *   Double free: cudaFree(0x7F3A2C000000): the block was already freed
 *      at 0x...: cudaFree (in libcudart.so.13)
 *      by 0x...: main (api_errors.cu:40)
 *    Address 0x7F3A2C000000 is 0 bytes inside a block of 4,096 bytes free'd
 *      at 0x...: cudaFree (...)
 *    Block was alloc'd at
 *      at 0x...: cudaMalloc (...)
 *
 * Formatting is pure: stacks come through the stack_frames service, and the
 * out-of-memory report is given who holds the memory (check/counters.h), so
 * that check_report_errors.c pins every text. */
#ifndef GPULEAK_REPORT_ERRORS_H
#define GPULEAK_REPORT_ERRORS_H

#include <stdbool.h>
#include <stdint.h>

#include "check/counters.h"
#include "common/frame.h"
#include "common/out.h"
#include "track/errors.h"

struct gl_error_services {
    unsigned num_callers;
    int top_sites; /* OOM: allocation sites listed */
    gl_stack_frames_fn stack_frames;
    void *arg;
};

struct gl_error_text {
    char what[512];
    char aux[2][320]; /* "" when absent */
    uint32_t aux_stack[2];
    bool aux_stack_missing[2]; /* a free stack --keep-stacktraces=alloc did not keep */
};

void gl_report_errors_describe(const struct gl_api_error *e, const struct gl_error_services *svc,
                               struct gl_error_text *out);

/* The whole error, then a bare separator line.  An out-of-memory error says
 * who holds the memory when holders is given (gl_counters_holders for its
 * device); other errors ignore it. */
void gl_report_errors_api_error(struct gl_out *o, const struct gl_api_error *e,
                                const struct gl_error_services *svc,
                                const struct gl_counters_holders *holders);

/* What a Growth error counts: "block", or "tensor" and "array" for the sites
 * of a framework's own record (PyTorch's; CuPy's and JAX's). */
const char *gl_report_errors_growth_unit(const struct gl_api_error *e);

/* Valgrind's note when the context table is full. */
void gl_report_errors_overflow(struct gl_out *o);

#endif
