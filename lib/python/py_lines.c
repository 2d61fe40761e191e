/* SPDX-License-Identifier: MIT */
#include "python/py_lines.h"

#include <stdbool.h>

/* Line arithmetic is done in unsigned (wrapping) ints: a garbage table can add
 * up deltas without bound, and the answer for one need only be defined. */

int gl_py_lines_format_of(int minor)
{
    switch (minor) {
    case 9:
        return GL_PY_LNOTAB;
    case 10:
        return GL_PY_LINETABLE;
    case 11:
    case 12:
    case 13:
    case 14:
        return GL_PY_LOCATIONS;
    default:
        return -1;
    }
}

/* 3.9 co_lnotab: (offset increment, line increment) byte pairs, the first
 * unsigned, the second signed.  Pair k moves to the row that starts at the sum
 * of the first k+1 offset increments and changes the line by its increment; the
 * rows before the first such start have co_firstlineno.  The table does not say
 * where the bytecode ends: an offset past the last row start is in the last row
 * (as PyCode_Addr2Line answers), so no offset gets -1 in this format.  An odd
 * last byte is not a pair and is ignored. */
static int line_lnotab(const uint8_t *t, size_t len, int firstlineno, int off)
{
    unsigned line = (unsigned)firstlineno;
    int64_t addr = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        addr += t[i];
        if (addr > off)
            break;
        line += (unsigned)(int)(int8_t)t[i + 1];
    }
    return (int)line;
}

/* 3.10 co_linetable: (length in bytes, line delta) byte pairs, the first
 * unsigned, the second signed; the ranges follow each other from offset 0.  A
 * line delta of -128 marks a range with no line (and leaves the running line as
 * it was); a length of 0 is an empty range, there only to carry a line delta too
 * large for one byte.  An offset past the last range has no line. */
static int line_linetable(const uint8_t *t, size_t len, int firstlineno, int off)
{
    unsigned line = (unsigned)firstlineno;
    int64_t end = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        end += t[i];
        int delta = (int8_t)t[i + 1];
        int here = -1;
        if (delta != -128) {
            line += (unsigned)delta;
            here = (int)line;
        }
        /* The ranges before this one all ended at or before off. */
        if (off < end)
            return here;
    }
    return -1;
}

/* A varint of the location table: 6-bit chunks, least significant first, bit 6
 * set on every chunk but the last.  Chunks beyond 32 bits are dropped.  False if
 * the table ends before the last chunk. */
static bool read_varint(const uint8_t *t, size_t len, size_t *pos, uint32_t *out)
{
    uint32_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (*pos >= len)
            return false;
        uint8_t b = t[(*pos)++];
        if (shift < 32) {
            v |= (uint32_t)(b & 63) << shift;
            shift += 6;
        }
        if (!(b & 64))
            break;
    }
    *out = v;
    return true;
}

/* Location table codes (Objects/locations.md): the 4 bits after the entry's top bit. */
enum {
    LOC_ONE_LINE0 = 10, /* 10..12: one-line form, line delta code - 10 */
    LOC_NO_COLUMN = 13, /* svarint line delta */
    LOC_LONG = 14,      /* svarint line delta, then end line and columns */
    LOC_NONE = 15,      /* no location: no line, the running line unchanged */
};

/* 3.11+ co_linetable, the location table: entries, each a first byte with bit 7
 * set (bits 3-6 the code, bits 0-2 the length in code units minus 1) and then
 * bytes with bit 7 clear.  Only the start line matters here: the short forms
 * (codes 0-9) keep the running line, the one-line forms add code - 10, codes 13
 * and 14 add the svarint that follows the first byte, code 15 has no line.  The
 * rest of an entry (end line, columns) is skipped by looking for the next byte
 * with bit 7 set, so a malformed entry costs only itself.  An offset past the
 * last entry, or in an entry whose line delta the table cuts off, has no line. */
static int line_locations(const uint8_t *t, size_t len, int firstlineno, int off)
{
    unsigned line = (unsigned)firstlineno;
    int64_t end = 0;
    size_t i = 0;
    while (i < len) {
        uint8_t first = t[i];
        unsigned code = (first >> 3) & 15;
        size_t pos = i + 1;
        if (code == LOC_NO_COLUMN || code == LOC_LONG) {
            uint32_t u;
            if (!read_varint(t, len, &pos, &u))
                return -1;
            unsigned magnitude = u >> 1;
            line += (u & 1) ? 0u - magnitude : magnitude;
        } else if (code >= LOC_ONE_LINE0 && code < LOC_NO_COLUMN) {
            line += code - LOC_ONE_LINE0;
        }
        end += 2 * ((first & 7) + 1); /* code units are 2 bytes */
        if (off < end)
            return code == LOC_NONE ? -1 : (int)line;
        /* Next entry: the next byte with bit 7 set after this entry's first. */
        i++;
        while (i < len && !(t[i] & 128))
            i++;
    }
    return -1;
}

int gl_py_lines_line(enum gl_py_line_format fmt, const uint8_t *table, size_t len, int firstlineno,
                     int byte_offset)
{
    if (byte_offset < 0)
        return firstlineno;
    if (!table)
        len = 0;
    switch (fmt) {
    case GL_PY_LNOTAB:
        return line_lnotab(table, len, firstlineno, byte_offset);
    case GL_PY_LINETABLE:
        return line_linetable(table, len, firstlineno, byte_offset);
    case GL_PY_LOCATIONS:
        return line_locations(table, len, firstlineno, byte_offset);
    }
    return -1;
}
