#include "leak_kind.h"

static const char *const option_names[GL_LEAK_NKINDS] = {
    "definite", "indirect", "possible", "reachable", "cached",
};

static const char *const phrases[GL_LEAK_NKINDS] = {
    "definitely lost", "indirectly lost", "possibly lost", "still reachable", "cached",
};

const char *gl_leak_kind_option_name(enum gl_leak_kind k)
{
    return (unsigned)k < GL_LEAK_NKINDS ? option_names[k] : "?";
}

const char *gl_leak_kind_phrase(enum gl_leak_kind k)
{
    return (unsigned)k < GL_LEAK_NKINDS ? phrases[k] : "?";
}
