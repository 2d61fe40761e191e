/* SPDX-License-Identifier: MIT */
#include "stack/mixed_stack.h"

struct builder {
    uintptr_t *out;
    unsigned n, max, native, python, keep_native, keep_python;
};

static void put_native(struct builder *b, uintptr_t ip)
{
    if (b->native < b->keep_native && b->n < b->max) {
        b->out[b->n++] = ip;
        b->native++;
    }
}

static void put_group(struct builder *b, const struct gl_python_stack *py, unsigned g)
{
    unsigned from = g == 0 ? 0 : py->ends[g - 1];
    for (unsigned i = from; i < py->ends[g] && i < py->n; i++)
        if (b->python < b->keep_python && b->n < b->max) {
            b->out[b->n++] = py->frames[i];
            b->python++;
        }
}

unsigned gl_mixed_stack(const uintptr_t *native, unsigned nnative, const struct gl_python_stack *py,
                        const struct gl_interpreter_where *where, unsigned keep_native,
                        unsigned keep_python, uintptr_t *out, unsigned max, unsigned *used)
{
    struct builder b = {out, 0, max, 0, 0, keep_native, keep_python};
    *used = nnative;
    /* Without a single interpreter-loop frame (its symbol was not found, or the
     * loop is inlined into another), the Python frames all go where the
     * interpreter's frames begin: placed after the native walk, they would
     * land below main, where reports cut stacks off. */
    bool loop_located = false;
    for (unsigned i = 0; i < nnative && !loop_located; i++)
        loop_located = where->in_interpreter(native[i]) && where->in_eval_loop(native[i]);
    unsigned g = 0;
    for (unsigned i = 0; i < nnative; i++) {
        uintptr_t ip = native[i];
        if (g == py->ngroups && g > 0 && where->in_interpreter(ip)) {
            /* Below the outermost Python frame: the interpreter's start-up.
             * Every group was placed at an interpreter-loop frame, the first
             * of which is what the scan above found: nothing past this frame
             * was read. */
            *used = i + 1;
            break;
        }
        if (!where->in_interpreter(ip)) {
            /* Past the native budget, frames outside the interpreter are only
             * looked at for the interpreter frames beyond them. */
            put_native(&b, ip);
        } else if (!loop_located) {
            /* Native frames further down sit between groups at places not
             * known, or below them all: the stack ends with the groups. */
            while (g < py->ngroups)
                put_group(&b, py, g++);
            break;
        } else if (where->in_eval_loop(ip) && g < py->ngroups) {
            put_group(&b, py, g++);
        }
        if (g == py->ngroups && b.native >= keep_native) {
            /* g > 0 (a capture with Python frames has a group): as above. */
            *used = g > 0 ? i + 1 : nnative;
            break;
        }
    }
    /* What the walk did not reach (it stopped short of the interpreter). */
    while (g < py->ngroups)
        put_group(&b, py, g++);
    return b.n;
}
