/* SPDX-License-Identifier: MIT */
#include "common/leak_kind.h"

#include <string.h>

static const char *const option_names[GL_LEAK_NKINDS] = {
    [GL_LEAK_DEFINITE] = "definite", [GL_LEAK_INDIRECT] = "indirect",
    [GL_LEAK_POSSIBLE] = "possible", [GL_LEAK_REACHABLE] = "reachable",
    [GL_LEAK_CACHED] = "cached",     [GL_LEAK_DEATH] = "death",
};

static const char *const phrases[GL_LEAK_NKINDS] = {
    [GL_LEAK_DEFINITE] = "definitely lost",
    [GL_LEAK_INDIRECT] = "indirectly lost",
    [GL_LEAK_POSSIBLE] = "possibly lost",
    [GL_LEAK_REACHABLE] = "still reachable",
    [GL_LEAK_CACHED] = "cached",
    [GL_LEAK_DEATH] = "live at death",
};

const char *gl_leak_kind_option_name(enum gl_leak_kind k)
{
    return (unsigned)k < GL_LEAK_NKINDS ? option_names[k] : "?";
}

const char *gl_leak_kind_phrase(enum gl_leak_kind k)
{
    return (unsigned)k < GL_LEAK_NKINDS ? phrases[k] : "?";
}

int gl_leak_kind_parse_set(const char *v, unsigned *out)
{
    if (strcmp(v, "all") == 0) {
        *out = GL_LEAK_KINDS_ALL;
        return 0;
    }
    if (strcmp(v, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (!*v)
        return -1; /* an empty set is a mistake, not "none" */
    unsigned set = 0;
    for (;;) {
        size_t len = strcspn(v, ",");
        int found = -1;
        for (int k = 0; k < GL_LEAK_NKINDS; k++)
            if (strlen(option_names[k]) == len && strncmp(option_names[k], v, len) == 0)
                found = k;
        if (found < 0)
            return -1;
        set |= GL_LEAK_KIND_BIT(found);
        v += len;
        if (!*v)
            break;
        v++; /* the comma: something must follow it */
    }
    *out = set;
    return 0;
}
