/* SPDX-License-Identifier: MIT */
#include "event/api.h"

#include <string.h>

static const char *const api_names[GL_API_COUNT] = {
    [GL_API_NONE] = "?",
#define GL_DRIVER_API(name, decoder) [GL_API_##name] = #name,
#include "event/driver_api.def"
#undef GL_DRIVER_API
};

const char *gl_api_name(unsigned api)
{
    if (api == GL_API_CLIENT_POOL_ALLOC)
        return "gpuleak_pool_alloc";
    if (api == GL_API_CLIENT_POOL_FREE)
        return "gpuleak_pool_free";
    return api < GL_API_COUNT ? api_names[api] : "?";
}

unsigned gl_api_of_name(const char *name)
{
    if (strcmp(name, "gpuleak_pool_alloc") == 0)
        return GL_API_CLIENT_POOL_ALLOC;
    if (strcmp(name, "gpuleak_pool_free") == 0)
        return GL_API_CLIENT_POOL_FREE;
    for (unsigned api = 1; api < GL_API_COUNT; api++)
        if (strcmp(name, api_names[api]) == 0)
            return api;
    return GL_API_NONE;
}
