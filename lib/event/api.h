/* SPDX-License-Identifier: MIT */
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

/* The calls that fork a capture and join it back (cuEventRecord,
 * cuStreamWaitEvent and their variants: the end of driver_api.def): their
 * events are made only while a capture is in progress. */
#define GL_API_FIRST_CAPTURE_JOIN GL_API_cuEventRecord
#define GL_API_LAST_CAPTURE_JOIN GL_API_cuStreamWaitEvent_ptsz
static inline int gl_api_is_capture_join(unsigned api)
{
    return api >= GL_API_FIRST_CAPTURE_JOIN && api <= GL_API_LAST_CAPTURE_JOIN;
}

/* Calls of the client API that create blocks: not driver entry points, so out of
 * the range CUPTI callbacks are enabled for. */
enum gl_client_api {
    GL_API_CLIENT_POOL_ALLOC = 0x8000, /* gpuleak_pool_alloc */
    GL_API_CLIENT_POOL_FREE = 0x8001,  /* gpuleak_pool_free */
};

/* "cuMemAlloc_v2", "gpuleak_pool_alloc"; "?" for an unknown id. */
const char *gl_api_name(unsigned api);
/* The id of a name gl_api_name gives; GL_API_NONE for any other (a linear
 * search: for reading recorded events, not for the hot path). */
unsigned gl_api_of_name(const char *name);

#endif
