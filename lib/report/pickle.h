/* SPDX-License-Identifier: MIT */
/* Python pickles, written: protocol 2, the opcodes every unpickler reads
 * (Python's, and the small one in PyTorch's memory viewer, MemoryViz.js),
 * for --memory-viz's PyTorch snapshot files.
 *
 * Only what the writers need: dicts and lists (MARK ... SETITEMS/APPENDS),
 * tuples, text (UTF-8, as given), integers of any size up to 64 bits, bools,
 * None, and the memo: a value put there once is given again by its number
 * (a stack's frames, shared by every event of that stack, are written once).
 * Values go in the order Python would read them; the writer checks nothing
 * but the memo's numbering. */
#ifndef GPULEAK_PICKLE_H
#define GPULEAK_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/out.h"

#define GL_PICKLE_DEPTH 32 /* containers open at once */

struct gl_pickle {
    struct gl_out *o;
    uint32_t memo; /* the next memo number */
    /* Per open container: its kind and the values written since its last
     * MARK.  Long lists and dicts are cut into batches of 1,000 items, as
     * Python's pickler cuts them: PyTorch's JavaScript unpickler pushes a
     * batch's items as call arguments, which overflow its stack past about
     * 100,000. */
    unsigned depth;
    char kind[GL_PICKLE_DEPTH];
    uint32_t values[GL_PICKLE_DEPTH];
};

void gl_pickle_begin(struct gl_pickle *p, struct gl_out *o); /* PROTO 2 */
void gl_pickle_end(struct gl_pickle *p);                     /* STOP */

/* {k: v, ...}: begin, then key and value pairs, then end. */
void gl_pickle_dict_begin(struct gl_pickle *p);
void gl_pickle_dict_end(struct gl_pickle *p);
/* [v, ...] */
void gl_pickle_list_begin(struct gl_pickle *p);
void gl_pickle_list_end(struct gl_pickle *p);
/* (v, ...) of the values written since begin. */
void gl_pickle_tuple_begin(struct gl_pickle *p);
void gl_pickle_tuple_end(struct gl_pickle *p);

void gl_pickle_str(struct gl_pickle *p, const char *s); /* UTF-8; other bytes U+FFFD */
void gl_pickle_int(struct gl_pickle *p, int64_t v);
void gl_pickle_uint(struct gl_pickle *p, uint64_t v);
void gl_pickle_bool(struct gl_pickle *p, bool v);
void gl_pickle_none(struct gl_pickle *p);

/* The value just written, remembered: returns its number for gl_pickle_get. */
uint32_t gl_pickle_put(struct gl_pickle *p);
void gl_pickle_get(struct gl_pickle *p, uint32_t id);

#endif
