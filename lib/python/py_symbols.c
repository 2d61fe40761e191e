/* SPDX-License-Identifier: MIT */
#include "python/py_symbols.h"

#include <string.h>

#include "python/py_lines.h"
#include "python/py_code.h"
#include "python/py_frames.h"

void gl_py_symbols_symbolize(uintptr_t tagged, struct gl_frame *out)
{
    memset(out, 0, sizeof *out);
    out->python = true;
    const struct gl_py_code *c = gl_py_code_get(gl_py_frames_code(tagged));
    if (!c) {
        out->ip = tagged;
        out->function = "???";
        return;
    }
    out->ip = c->address;
    out->function = c->function;
    out->file = c->file;
    int line = c->format == GL_PY_CODE_FIXED_LINE
                   ? c->firstlineno
                   : gl_py_lines_line((enum gl_py_line_format)c->format, c->table, c->table_len,
                                      c->firstlineno, gl_py_frames_offset(tagged));
    out->line = line > 0 ? line : 0;
}
