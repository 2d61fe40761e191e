/* SPDX-License-Identifier: MIT */
#include "report/pickle.h"

#include <string.h>

/* Opcodes (Python's Lib/pickletools.py names them). */
enum {
    OP_MARK = '(',
    OP_STOP = '.',
    OP_BININT = 'J',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_NONE = 'N',
    OP_BINUNICODE = 'X',
    OP_APPENDS = 'e',
    OP_LONG_BINGET = 'j',
    OP_LONG_BINPUT = 'r',
    OP_SETITEMS = 'u',
    OP_EMPTY_DICT = '}',
    OP_EMPTY_LIST = ']',
    OP_TUPLE = 't',
    OP_PROTO = 0x80,
    OP_LONG1 = 0x8a,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
};

static void op(struct gl_pickle *p, int code)
{
    char c = (char)code;
    gl_out_text(p->o, &c, 1);
}

static void le(struct gl_pickle *p, uint64_t v, unsigned n)
{
    char b[8];
    for (unsigned i = 0; i < n; i++)
        b[i] = (char)(v >> (8 * i));
    gl_out_text(p->o, b, n);
}

#define BATCH 1000

static void open_container(struct gl_pickle *p, char kind)
{
    if (p->depth < GL_PICKLE_DEPTH) {
        p->kind[p->depth] = kind;
        p->values[p->depth] = 0;
    }
    p->depth++;
}

/* A value about to be written into the innermost container: a full batch
 * is closed first and the next begun (APPENDS and SETITEMS add to the
 * container below the mark, which stays on the stack).  Before the value,
 * not after, so that a memo put after a value still finds it on the stack;
 * a dict's batch ends on a whole item. */
static void before_value(struct gl_pickle *p)
{
    if (!p->depth || p->depth > GL_PICKLE_DEPTH)
        return;
    unsigned d = p->depth - 1;
    uint32_t per = p->kind[d] == 'l' ? BATCH : p->kind[d] == 'd' ? 2 * BATCH : 0;
    if (per && p->values[d] == per) {
        op(p, p->kind[d] == 'l' ? OP_APPENDS : OP_SETITEMS);
        op(p, OP_MARK);
        p->values[d] = 0;
    }
    p->values[d]++;
}

void gl_pickle_begin(struct gl_pickle *p, struct gl_out *o)
{
    p->o = o;
    p->memo = 0;
    p->depth = 0;
    op(p, OP_PROTO);
    op(p, 2);
}

void gl_pickle_end(struct gl_pickle *p) { op(p, OP_STOP); }

void gl_pickle_dict_begin(struct gl_pickle *p)
{
    before_value(p);
    op(p, OP_EMPTY_DICT);
    op(p, OP_MARK);
    open_container(p, 'd');
}

void gl_pickle_dict_end(struct gl_pickle *p)
{
    op(p, OP_SETITEMS);
    p->depth--;
}

void gl_pickle_list_begin(struct gl_pickle *p)
{
    before_value(p);
    op(p, OP_EMPTY_LIST);
    op(p, OP_MARK);
    open_container(p, 'l');
}

void gl_pickle_list_end(struct gl_pickle *p)
{
    op(p, OP_APPENDS);
    p->depth--;
}

void gl_pickle_tuple_begin(struct gl_pickle *p)
{
    before_value(p);
    op(p, OP_MARK);
    open_container(p, 't');
}

void gl_pickle_tuple_end(struct gl_pickle *p)
{
    op(p, OP_TUPLE);
    p->depth--;
}

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Text that is not UTF-8 (a path in Latin-1) would stop any unpickler: each
 * byte of an invalid sequence (common/out.h's rule, the JSON writer's)
 * becomes U+FFFD. */
void gl_pickle_str(struct gl_pickle *p, const char *s)
{
    size_t len = strlen(s), out = 0;
    for (size_t i = 0; i < len;) {
        size_t k = gl_out_utf8_len(s + i);
        out += k ? k : sizeof replacement - 1;
        i += k ? k : 1;
    }
    before_value(p);
    op(p, OP_BINUNICODE);
    le(p, (uint32_t)out, 4);
    if (out == len) {
        gl_out_text(p->o, s, len);
        return;
    }
    for (size_t i = 0; i < len;) {
        size_t k = gl_out_utf8_len(s + i);
        if (k)
            gl_out_text(p->o, s + i, k);
        else
            gl_out_text(p->o, replacement, sizeof replacement - 1);
        i += k ? k : 1;
    }
}

/* The shortest form: BININT1/2 for small naturals, BININT for 32 bits,
 * else LONG1 with the two's complement bytes a reader sign-extends. */
static void int_op(struct gl_pickle *p, int64_t v);

void gl_pickle_int(struct gl_pickle *p, int64_t v)
{
    before_value(p);
    int_op(p, v);
}

static void int_op(struct gl_pickle *p, int64_t v)
{
    if (v >= 0 && v < 256) {
        op(p, OP_BININT1);
        le(p, (uint64_t)v, 1);
    } else if (v >= 0 && v < 65536) {
        op(p, OP_BININT2);
        le(p, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op(p, OP_BININT);
        le(p, (uint64_t)v, 4);
    } else {
        unsigned n = 8;
        /* Drop bytes that only repeat the sign. */
        while (n > 1) {
            int64_t top = v >> (8 * (n - 1) - 1);
            if (top != 0 && top != -1)
                break;
            n--;
        }
        op(p, OP_LONG1);
        le(p, n, 1);
        le(p, (uint64_t)v, n);
    }
}

void gl_pickle_uint(struct gl_pickle *p, uint64_t v)
{
    before_value(p);
    if (v <= INT64_MAX) {
        int_op(p, (int64_t)v);
        return;
    }
    op(p, OP_LONG1); /* a ninth byte keeps it positive */
    le(p, 9, 1);
    le(p, v, 8);
    le(p, 0, 1);
}

void gl_pickle_bool(struct gl_pickle *p, bool v)
{
    before_value(p);
    op(p, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void gl_pickle_none(struct gl_pickle *p)
{
    before_value(p);
    op(p, OP_NONE);
}

uint32_t gl_pickle_put(struct gl_pickle *p)
{
    op(p, OP_LONG_BINPUT);
    le(p, p->memo, 4);
    return p->memo++;
}

void gl_pickle_get(struct gl_pickle *p, uint32_t id)
{
    before_value(p);
    op(p, OP_LONG_BINGET);
    le(p, id, 4);
}
