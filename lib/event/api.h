/* Ids of the tracked driver entry points (driver_api.def) and their names. */
#ifndef GPULEAK_API_H
#define GPULEAK_API_H

enum gl_api {
    GL_API_NONE = 0,
#define GL_DRIVER_API(name, decoder) GL_API_##name,
#include "event/driver_api.def"
#undef GL_DRIVER_API
    GL_API_COUNT
};

/* Copies and sets (a range of driver_api.def): checked, and their callbacks
 * enabled, only with --check-api-ranges=yes. */
#define GL_API_FIRST_ACCESS GL_API_cuMemcpy
#define GL_API_LAST_ACCESS GL_API_cuMemsetD2D32Async_ptsz
static inline int gl_api_is_access(unsigned api)
{
    return api >= GL_API_FIRST_ACCESS && api <= GL_API_LAST_ACCESS;
}

/* cuMemFreeAsync and its per-thread-stream variant. */
static inline int gl_api_is_stream_ordered_free(unsigned api)
{
    return api == GL_API_cuMemFreeAsync || api == GL_API_cuMemFreeAsync_ptsz;
}

/* Calls of the client API that create blocks: not driver entry points, so out of
 * the range CUPTI callbacks are enabled for. */
enum gl_client_api {
    GL_API_CLIENT_POOL_ALLOC = 0x8000, /* gpuleak_pool_alloc */
};

/* "cuMemAlloc_v2", "gpuleak_pool_alloc"; "?" for an unknown id. */
const char *gl_api_name(unsigned api);

/* What a memory kind is called in a report: "device memory", "pinned host memory"... */
const char *gl_mem_kind_name(unsigned kind);

#endif
