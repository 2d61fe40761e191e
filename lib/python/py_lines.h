/* SPDX-License-Identifier: MIT */
/* Line numbers of Python frames, decoded from copies of CPython's line tables.
 *
 * A Python frame is captured as (code object, byte offset of its instruction);
 * the line is wanted only when the report is written.  By then the code object
 * may be gone: the exit report runs after Py_FinalizeEx, and a module's
 * top-level code, exec'd code or a reloaded module's code is freed even earlier
 * (doc/research/python-frames/README.md, 4.3).  So capture copies the code
 * object's raw line table and co_firstlineno into gpuleak's own memory, and
 * this module answers what PyCode_Addr2Line would have answered, from those
 * bytes alone, without the interpreter.
 *
 * The formats are CPython's (Objects/lnotab_notes.txt for 3.9 and 3.10,
 * Objects/locations.md for 3.11+).  Offsets are in bytes from the start of the
 * bytecode (3.11+: of co_code_adaptive, whose 2-byte code units include the
 * inline CACHE units, which the location table covers too).  The decoders are
 * pure functions of their arguments: no allocation, no global state, safe on
 * truncated or garbage tables (never reading outside the table, never looping
 * more than once per table byte). */
#ifndef GPULEAK_PYTHON_LINES_H
#define GPULEAK_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

enum gl_py_line_format {
    GL_PY_LNOTAB,    /* 3.9 co_lnotab */
    GL_PY_LINETABLE, /* 3.10 co_linetable */
    GL_PY_LOCATIONS, /* 3.11-3.14 co_linetable (location table) */
};
/* The format of a CPython minor version's line table (3.9 -> GL_PY_LNOTAB...);
 * -1 if unsupported. */
int gl_py_lines_format_of(int minor);
/* Line of the instruction at byte_offset, as PyCode_Addr2Line answers.
 * Never reads past table[len). */
int gl_py_lines_line(enum gl_py_line_format fmt, const uint8_t *table, size_t len, int firstlineno,
                     int byte_offset);

#endif
