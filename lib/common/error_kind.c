/* SPDX-License-Identifier: MIT */
#include "common/error_kind.h"

#include <string.h>

static const char *const names[GL_ERR_NKINDS] = {
    [GL_ERR_INVALID_FREE] = "InvalidFree",       [GL_ERR_DOUBLE_FREE] = "DoubleFree",
    [GL_ERR_MISMATCHED_FREE] = "MismatchedFree", [GL_ERR_INVALID_RANGE] = "InvalidRange",
    [GL_ERR_FREED_RANGE] = "FreedRange",         [GL_ERR_OUT_OF_MEMORY] = "OutOfMemory",
    [GL_ERR_GROWTH] = "Growth",
    [GL_ERR_OBSERVER_MISMATCH] = "ObserverMismatch",
};

const char *gl_error_kind_name(unsigned kind) { return kind < GL_ERR_NKINDS ? names[kind] : NULL; }

enum gl_error_kind gl_error_kind_parse(const char *name)
{
    for (unsigned k = 1; k < GL_ERR_NKINDS; k++)
        if (strcmp(names[k], name) == 0)
            return (enum gl_error_kind)k;
    return GL_ERR_NONE;
}
