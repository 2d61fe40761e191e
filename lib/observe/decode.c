/* SPDX-License-Identifier: MIT */
#include "observe/decode.h"

#include <cupti.h>
#include <string.h>

#include "event/api.h"
#include "event/dispatch.h"
#include "common/util.h"

typedef bool (*decoder_fn)(enum gl_site site, const void *params, struct gl_event *ev);

/* ---- helpers ---- */

static bool alloc_at(struct gl_event *ev, enum gl_mem_kind kind, uint64_t key, uint64_t size,
                     int device)
{
    if (ev->flags & GL_EVF_FAILED)
        key = 0; /* the request of a failed call: its output holds nothing */
    else if (gl_key_value(key) == 0)
        return false; /* a successful call that returned no address: nothing to track */
    ev->type = GL_EV_ALLOC;
    ev->kind = (uint8_t)kind;
    ev->key = key;
    ev->size = size;
    ev->device = (int16_t)device;
    return true;
}

static bool free_at(struct gl_event *ev, uint64_t key)
{
    if (gl_key_value(key) == 0)
        return false; /* cudaFree(0) and friends free nothing */
    ev->type = GL_EV_FREE;
    ev->key = key;
    return true;
}

static int location_device(const CUmemLocation *loc)
{
    return loc->type == CU_MEM_LOCATION_TYPE_DEVICE ? loc->id : -1;
}

/* Bits per element of a CUarray_format, for all channels together when
 * packed_channels is set on return (block-compressed and video formats). */
static unsigned format_bits(unsigned format, int *packed_channels)
{
    *packed_channels = 0;
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 8;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 16;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 32;
    }
    *packed_channels = 1;
    switch (format) {
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 8;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 16;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return 32;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 64;
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        return 4; /* 8 bytes per 4x4 block */
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
        return 8; /* 16 bytes per 4x4 block */
    case CU_AD_FORMAT_NV12:
        return 12;
    }
    return 0;
}

uint64_t gl_decode_array_bytes(uint64_t w, uint64_t h, uint64_t d, unsigned channels,
                               unsigned format)
{
    int packed;
    unsigned bits = format_bits(format, &packed);
    if (bits == 0)
        return 0;
    if (!packed)
        bits *= channels ? channels : 1;
    uint64_t texels = (w ? w : 1) * (h ? h : 1) * (d ? d : 1);
    return (texels * bits + 7) / 8;
}

static bool array_alloc(struct gl_event *ev, enum gl_mem_kind kind, enum gl_key_ns ns,
                        uint64_t handle, uint64_t bytes)
{
    if (!alloc_at(ev, kind, gl_key_make(ns, handle), bytes, GL_DEVICE_FROM_CONTEXT))
        return false;
    if (bytes == 0)
        ev->flags |= GL_EVF_SIZE_UNKNOWN;
    return true;
}

/* ---- decoders: one per tracked entry point (driver_api.def) ---- */

#define EXIT_ONLY                                                                                  \
    if (site != GL_SITE_EXIT)                                                                      \
    return false
/* An allocation's event comes at its exit: at its entry, decoding says only
 * that (ev->type), so that the lines the exit will touch are warmed while
 * the driver runs (observe/call.h). */
#define ALLOC_AT_EXIT                                                                              \
    if (site != GL_SITE_EXIT) {                                                                    \
        ev->type = GL_EV_ALLOC;                                                                    \
        return false;                                                                              \
    }
#define ENTER_ONLY                                                                                 \
    if (site != GL_SITE_ENTER)                                                                     \
    return false

static bool dec_mem_alloc_v1(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAlloc_params *p = params;
    ALLOC_AT_EXIT
    return p->dptr && alloc_at(ev, GL_MEM_DEVICE, *p->dptr, p->bytesize, GL_DEVICE_FROM_CONTEXT);
}

GL_HOT static bool dec_mem_alloc(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAlloc_v2_params *p = params;
    ALLOC_AT_EXIT
    return p->dptr && alloc_at(ev, GL_MEM_DEVICE, *p->dptr, p->bytesize, GL_DEVICE_FROM_CONTEXT);
}

/* A pitched block's size; a failed call set no pitch, so its request is the
 * rows' width without padding (the OOM report's size). */
static uint64_t pitch_bytes(const struct gl_event *ev, uint64_t width, uint64_t pitch,
                            uint64_t height)
{
    return (uint64_t)((ev->flags & GL_EVF_FAILED) ? width : pitch) * height;
}

static bool dec_mem_alloc_pitch_v1(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAllocPitch_params *p = params;
    ALLOC_AT_EXIT
    if (!p->dptr || !p->pPitch)
        return false;
    return alloc_at(ev, GL_MEM_PITCH, *p->dptr,
                    pitch_bytes(ev, p->WidthInBytes, *p->pPitch, p->Height),
                    GL_DEVICE_FROM_CONTEXT);
}

GL_HOT static bool dec_mem_alloc_pitch(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAllocPitch_v2_params *p = params;
    ALLOC_AT_EXIT
    if (!p->dptr || !p->pPitch)
        return false;
    return alloc_at(ev, GL_MEM_PITCH, *p->dptr,
                    pitch_bytes(ev, p->WidthInBytes, *p->pPitch, p->Height),
                    GL_DEVICE_FROM_CONTEXT);
}

GL_HOT static bool dec_mem_alloc_managed(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAllocManaged_params *p = params;
    ALLOC_AT_EXIT
    return p->dptr && alloc_at(ev, GL_MEM_MANAGED, *p->dptr, p->bytesize, GL_DEVICE_FROM_CONTEXT);
}

static bool dec_mem_alloc_host_v1(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAllocHost_params *p = params;
    ALLOC_AT_EXIT
    return p->pp && alloc_at(ev, GL_MEM_HOST_PINNED, (uintptr_t)*p->pp, p->bytesize, -1);
}

GL_HOT static bool dec_mem_alloc_host(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAllocHost_v2_params *p = params;
    ALLOC_AT_EXIT
    return p->pp && alloc_at(ev, GL_MEM_HOST_PINNED, (uintptr_t)*p->pp, p->bytesize, -1);
}

/* cuMemHostAlloc and cuMemHostAlloc_v2 share one parameter struct. */
GL_HOT static bool dec_mem_host_alloc(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemHostAlloc_params *p = params;
    ALLOC_AT_EXIT
    return p->pp && alloc_at(ev, GL_MEM_HOST_PINNED, (uintptr_t)*p->pp, p->bytesize, -1);
}

/* cuMemHostRegister and _v2 share one layout. */
static bool dec_mem_host_register(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemHostRegister_v2_params *p = params;
    ALLOC_AT_EXIT
    return alloc_at(ev, GL_MEM_HOST_REGISTERED, (uintptr_t)p->p, p->bytesize, -1);
}

GL_HOT static bool dec_mem_alloc_async(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemAllocAsync_params *p = params;
    ALLOC_AT_EXIT
    if (!p->dptr || !alloc_at(ev, GL_MEM_ASYNC, *p->dptr, p->bytesize, GL_DEVICE_FROM_CONTEXT))
        return false;
    ev->aux = (uintptr_t)p->hStream;
    return true;
}

GL_HOT static bool dec_mem_alloc_from_pool(enum gl_site site, const void *params,
                                           struct gl_event *ev)
{
    const cuMemAllocFromPoolAsync_params *p = params;
    ALLOC_AT_EXIT
    if (!p->dptr || !alloc_at(ev, GL_MEM_ASYNC, *p->dptr, p->bytesize, GL_DEVICE_FROM_CONTEXT))
        return false;
    ev->aux = (uintptr_t)p->hStream;
    return true;
}

static bool dec_mem_create(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemCreate_params *p = params;
    EXIT_ONLY;
    if (!p->handle)
        return false;
    int dev = p->prop ? location_device(&p->prop->location) : GL_DEVICE_FROM_CONTEXT;
    return alloc_at(ev, GL_MEM_VMM, gl_key_make(GL_NS_VMM_HANDLE, *p->handle), p->size, dev);
}

static bool dec_mem_import_shareable(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemImportFromShareableHandle_params *p = params;
    EXIT_ONLY;
    if (!p->handle || !alloc_at(ev, GL_MEM_VMM, gl_key_make(GL_NS_VMM_HANDLE, *p->handle), 0,
                                GL_DEVICE_FROM_CONTEXT))
        return false;
    ev->flags |= GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED;
    return true;
}

static bool dec_mem_retain_handle(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemRetainAllocationHandle_params *p = params;
    EXIT_ONLY;
    if (!p->handle)
        return false;
    ev->type = GL_EV_VMM_RETAIN;
    ev->key = gl_key_make(GL_NS_VMM_HANDLE, *p->handle);
    return true;
}

static bool dec_mem_release(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemRelease_params *p = params;
    ENTER_ONLY;
    ev->type = GL_EV_VMM_RELEASE;
    ev->key = gl_key_make(GL_NS_VMM_HANDLE, p->handle);
    return true;
}

static bool dec_mem_map(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemMap_params *p = params;
    EXIT_ONLY;
    ev->type = GL_EV_VMM_MAP;
    ev->key = p->ptr;
    ev->size = p->size;
    ev->aux = gl_key_make(GL_NS_VMM_HANDLE, p->handle);
    return true;
}

static bool dec_mem_unmap(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemUnmap_params *p = params;
    EXIT_ONLY;
    ev->type = GL_EV_VMM_UNMAP;
    ev->key = p->ptr;
    ev->size = p->size;
    return true;
}

/* The legacy (32-bit) array descriptors: cupti.h declares them as placeholders, so
 * their layout (cuda.h, __CUDA_API_VERSION_INTERNAL) is spelled out here. */
struct legacy_array_desc {
    unsigned int Width, Height;
    CUarray_format Format;
    unsigned int NumChannels;
};
struct legacy_array3d_desc {
    unsigned int Width, Height, Depth;
    CUarray_format Format;
    unsigned int NumChannels, Flags;
};

static bool dec_array_create_v1(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuArrayCreate_params *p = params;
    EXIT_ONLY;
    if (!p->pHandle || !p->pAllocateArray)
        return false;
    const struct legacy_array_desc *d = (const void *)p->pAllocateArray;
    return array_alloc(ev, GL_MEM_ARRAY, GL_NS_ARRAY, (uintptr_t)*p->pHandle,
                       gl_decode_array_bytes(d->Width, d->Height, 1, d->NumChannels, d->Format));
}

static bool dec_array_create(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuArrayCreate_v2_params *p = params;
    EXIT_ONLY;
    if (!p->pHandle || !p->pAllocateArray)
        return false;
    const CUDA_ARRAY_DESCRIPTOR *d = p->pAllocateArray;
    return array_alloc(ev, GL_MEM_ARRAY, GL_NS_ARRAY, (uintptr_t)*p->pHandle,
                       gl_decode_array_bytes(d->Width, d->Height, 1, d->NumChannels, d->Format));
}

static bool dec_array3d_create_v1(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuArray3DCreate_params *p = params;
    EXIT_ONLY;
    if (!p->pHandle || !p->pAllocateArray)
        return false;
    const struct legacy_array3d_desc *d = (const void *)p->pAllocateArray;
    return array_alloc(
        ev, GL_MEM_ARRAY, GL_NS_ARRAY, (uintptr_t)*p->pHandle,
        gl_decode_array_bytes(d->Width, d->Height, d->Depth, d->NumChannels, d->Format));
}

static bool dec_array3d_create(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuArray3DCreate_v2_params *p = params;
    EXIT_ONLY;
    if (!p->pHandle || !p->pAllocateArray)
        return false;
    const CUDA_ARRAY3D_DESCRIPTOR *d = p->pAllocateArray;
    return array_alloc(
        ev, GL_MEM_ARRAY, GL_NS_ARRAY, (uintptr_t)*p->pHandle,
        gl_decode_array_bytes(d->Width, d->Height, d->Depth, d->NumChannels, d->Format));
}

static bool dec_mipmapped_array_create(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMipmappedArrayCreate_params *p = params;
    EXIT_ONLY;
    if (!p->pHandle || !p->pMipmappedArrayDesc)
        return false;
    const CUDA_ARRAY3D_DESCRIPTOR *d = p->pMipmappedArrayDesc;
    uint64_t total = 0;
    for (unsigned l = 0; l < p->numMipmapLevels && l < 64; l++) {
        uint64_t w = d->Width >> l, h = d->Height >> l, dp = d->Depth >> l;
        uint64_t b = gl_decode_array_bytes(w ? w : 1, d->Height ? (h ? h : 1) : 0,
                                           d->Depth ? (dp ? dp : 1) : 0, d->NumChannels, d->Format);
        if (b == 0) {
            total = 0;
            break;
        }
        total += b;
    }
    return array_alloc(ev, GL_MEM_MIPMAPPED_ARRAY, GL_NS_MIPMAP, (uintptr_t)*p->pHandle, total);
}

static bool dec_ipc_open(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuIpcOpenMemHandle_v2_params *p = params;
    EXIT_ONLY;
    if (!p->pdptr || !alloc_at(ev, GL_MEM_IPC, *p->pdptr, 0, GL_DEVICE_FROM_CONTEXT))
        return false;
    ev->flags |= GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED; /* size: cuMemGetAddressRange, later */
    return true;
}

static bool dec_pool_import_pointer(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemPoolImportPointer_params *p = params;
    EXIT_ONLY;
    if (!p->ptr_out || !alloc_at(ev, GL_MEM_IPC, *p->ptr_out, 0, GL_DEVICE_FROM_CONTEXT))
        return false;
    ev->flags |= GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED;
    return true;
}

/* A memory node: not a block until a launch runs it (track/graphs.h). */
static bool graph_alloc(struct gl_event *ev, const CUmemPoolProps *props, CUdeviceptr dptr,
                        size_t bytesize)
{
    if (!alloc_at(ev, GL_MEM_GRAPH, dptr, bytesize, location_device(&props->location)))
        return false;
    ev->type = GL_EV_GRAPH_NODE_ALLOC;
    return true;
}

static bool graph_free(struct gl_event *ev, CUdeviceptr dptr)
{
    if (!free_at(ev, dptr))
        return false;
    ev->type = GL_EV_GRAPH_NODE_FREE;
    return true;
}

static bool dec_graph_add_alloc_node(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuGraphAddMemAllocNode_params *p = params;
    EXIT_ONLY;
    if (!p->nodeParams ||
        !graph_alloc(ev, &p->nodeParams->poolProps, p->nodeParams->dptr, p->nodeParams->bytesize))
        return false;
    ev->aux = (uintptr_t)p->hGraph;
    return true;
}

static bool dec_graph_add_free_node(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuGraphAddMemFreeNode_params *p = params;
    EXIT_ONLY;
    ev->aux = (uintptr_t)p->hGraph;
    return graph_free(ev, p->dptr);
}

static bool graph_node(enum gl_site site, CUgraph graph, const CUgraphNodeParams *np,
                       struct gl_event *ev)
{
    if (!np)
        return false;
    ev->aux = (uintptr_t)graph;
    if (np->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && site == GL_SITE_EXIT)
        return graph_alloc(ev, &np->alloc.poolProps, np->alloc.dptr, np->alloc.bytesize);
    if (np->type == CU_GRAPH_NODE_TYPE_MEM_FREE && site == GL_SITE_EXIT)
        return graph_free(ev, np->free.dptr);
    return false;
}

static bool dec_graph_add_node(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuGraphAddNode_params *p = params;
    return graph_node(site, p->hGraph, p->nodeParams, ev);
}

static bool dec_graph_add_node_v2(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuGraphAddNode_v2_params *p = params;
    return graph_node(site, p->hGraph, p->nodeParams, ev);
}

/* ---- graphs' control calls (graphs.h) ---- */

static bool control(struct gl_event *ev, enum gl_event_type type, uint64_t key, uint64_t aux)
{
    ev->type = (uint8_t)type;
    ev->key = key;
    ev->aux = aux;
    return true;
}

static bool dec_stream_begin_capture(enum gl_site site, const void *params, struct gl_event *ev)
{
    EXIT_ONLY;
    return control(ev, GL_EV_CAPTURE_BEGIN, 0,
                   (uintptr_t)((const cuStreamBeginCapture_params *)params)->hStream);
}

static bool dec_stream_begin_capture_v2(enum gl_site site, const void *params, struct gl_event *ev)
{
    EXIT_ONLY;
    return control(ev, GL_EV_CAPTURE_BEGIN, 0,
                   (uintptr_t)((const cuStreamBeginCapture_v2_params *)params)->hStream);
}

static bool dec_stream_begin_capture_to_graph(enum gl_site site, const void *params,
                                              struct gl_event *ev)
{
    EXIT_ONLY;
    return control(ev, GL_EV_CAPTURE_BEGIN, 0,
                   (uintptr_t)((const cuStreamBeginCaptureToGraph_params *)params)->hStream);
}

/* Decoded at the exit whatever the call returned: a failed end still ends the
 * capture (the caller sets key to 0 then). */
static bool dec_stream_end_capture(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuStreamEndCapture_params *p = params;
    EXIT_ONLY;
    return control(ev, GL_EV_CAPTURE_END, p->phGraph ? (uintptr_t)*p->phGraph : 0,
                   (uintptr_t)p->hStream);
}

static bool instantiated(struct gl_event *ev, CUgraphExec *exec, CUgraph graph, uint64_t flags)
{
    if (!exec)
        return false;
    ev->size = flags;
    return control(ev, GL_EV_GRAPH_INSTANTIATE, (uintptr_t)*exec, (uintptr_t)graph);
}

static bool dec_graph_instantiate(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuGraphInstantiate_v2_params *p = params;
    EXIT_ONLY;
    return instantiated(ev, p->phGraphExec, p->hGraph, 0);
}

static bool dec_graph_instantiate_with_flags(enum gl_site site, const void *params,
                                             struct gl_event *ev)
{
    const cuGraphInstantiateWithFlags_params *p = params;
    EXIT_ONLY;
    return instantiated(ev, p->phGraphExec, p->hGraph, p->flags);
}

static bool dec_graph_instantiate_with_params(enum gl_site site, const void *params,
                                              struct gl_event *ev)
{
    const cuGraphInstantiateWithParams_params *p = params;
    EXIT_ONLY;
    return instantiated(ev, p->phGraphExec, p->hGraph,
                        p->instantiateParams ? p->instantiateParams->flags : 0);
}

static bool dec_graph_launch(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuGraphLaunch_params *p = params;
    EXIT_ONLY;
    return control(ev, GL_EV_GRAPH_LAUNCH, (uintptr_t)p->hGraph, (uintptr_t)p->hStream);
}

static bool dec_graph_destroy(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return control(ev, GL_EV_GRAPH_DESTROY,
                   (uintptr_t)((const cuGraphDestroy_params *)params)->hGraph, 0);
}

static bool dec_graph_exec_destroy(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return control(ev, GL_EV_GRAPH_EXEC_DESTROY,
                   (uintptr_t)((const cuGraphExecDestroy_params *)params)->hGraphExec, 0);
}

static bool dec_mem_free_v1(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(ev, ((const cuMemFree_params *)params)->dptr);
}

GL_HOT static bool dec_mem_free(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(ev, ((const cuMemFree_v2_params *)params)->dptr);
}

GL_HOT static bool dec_mem_free_host(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(ev, (uintptr_t)((const cuMemFreeHost_params *)params)->p);
}

static bool dec_mem_host_unregister(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(ev, (uintptr_t)((const cuMemHostUnregister_params *)params)->p);
}

GL_HOT static bool dec_mem_free_async(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemFreeAsync_params *p = params;
    ENTER_ONLY;
    ev->aux = (uintptr_t)p->hStream;
    return free_at(ev, p->dptr);
}

static bool dec_array_destroy(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(
        ev, gl_key_make(GL_NS_ARRAY, (uintptr_t)((const cuArrayDestroy_params *)params)->hArray));
}

static bool dec_mipmapped_array_destroy(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(
        ev,
        gl_key_make(GL_NS_MIPMAP,
                    (uintptr_t)((const cuMipmappedArrayDestroy_params *)params)->hMipmappedArray));
}

/* A created stream-ordered pool is a block of its own, of unknown size: what it
 * keeps beyond its live allocations is measured at each check (cached). */
static bool dec_mem_pool_create(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemPoolCreate_params *p = params;
    EXIT_ONLY;
    int dev = p->poolProps ? location_device(&p->poolProps->location) : GL_DEVICE_FROM_CONTEXT;
    if (!p->pool ||
        !alloc_at(ev, GL_MEM_POOL_RESERVE, gl_key_make(GL_NS_MEMPOOL, (uintptr_t)*p->pool), 0, dev))
        return false;
    ev->flags |= GL_EVF_SIZE_UNKNOWN;
    return true;
}

static bool dec_mem_pool_destroy(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemPoolDestroy_params *p = params;
    ENTER_ONLY;
    return p->pool && free_at(ev, gl_key_make(GL_NS_MEMPOOL, (uintptr_t)p->pool));
}

static bool dec_ipc_close(enum gl_site site, const void *params, struct gl_event *ev)
{
    ENTER_ONLY;
    return free_at(ev, ((const cuIpcCloseMemHandle_params *)params)->dptr);
}

/* ---- copies and sets: checked at entry, before they run ---- */

static bool access_event(struct gl_event *ev, uint64_t dst, uint64_t dst_len, uint64_t src,
                         uint64_t src_len)
{
    ev->type = GL_EV_ACCESS;
    ev->key = dst_len ? dst : 0;
    ev->size = dst ? dst_len : 0;
    ev->aux = src_len ? src : 0;
    ev->seq = src ? src_len : 0;
    return ev->size || ev->seq;
}

/* From the first byte a pitched copy touches to its last: rows of width bytes,
 * pitch apart, in planes of rows_per_plane rows. */
static uint64_t pitched_extent(uint64_t width, uint64_t height, uint64_t depth, uint64_t pitch,
                               uint64_t rows_per_plane)
{
    if (!width || !height || !depth)
        return 0;
    if (height > 1 && pitch < width)
        pitch = width; /* a pitch below the width is the driver's to refuse */
    return ((depth - 1) * rows_per_plane + (height - 1)) * pitch + width;
}

/* A copy side's linear address (host or device; 0 for arrays and unknown types). */
static uint64_t side_base(CUmemorytype type, const void *host, CUdeviceptr dev)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        return (uintptr_t)host;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        return dev;
    default:
        return 0;
    }
}

static bool dec_memcpy(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpy_params *p = params; /* cuMemcpyAsync's adds the stream */
    ENTER_ONLY;
    return access_event(ev, p->dst, p->ByteCount, p->src, p->ByteCount);
}

static bool dec_memcpy_peer(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpyPeer_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->ByteCount, p->srcDevice, p->ByteCount);
}

static bool dec_memcpy_htod(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpyHtoD_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->ByteCount, (uintptr_t)p->srcHost, p->ByteCount);
}

static bool dec_memcpy_dtoh(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpyDtoH_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, (uintptr_t)p->dstHost, p->ByteCount, p->srcDevice, p->ByteCount);
}

static bool dec_memcpy_dtod(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpyDtoD_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->ByteCount, p->srcDevice, p->ByteCount);
}

static bool dec_memcpy_dtoa(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpyDtoA_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, 0, 0, p->srcDevice, p->ByteCount);
}

static bool dec_memcpy_atod(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpyAtoD_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->ByteCount, 0, 0);
}

static bool dec_memcpy2d(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemcpy2D_v2_params *p = params; /* the same layout for Unaligned and Async */
    ENTER_ONLY;
    const CUDA_MEMCPY2D *c = p->pCopy;
    if (!c)
        return false;
    uint64_t dst = side_base(c->dstMemoryType, c->dstHost, c->dstDevice);
    uint64_t src = side_base(c->srcMemoryType, c->srcHost, c->srcDevice);
    return access_event(ev, dst ? dst + c->dstY * c->dstPitch + c->dstXInBytes : 0,
                        pitched_extent(c->WidthInBytes, c->Height, 1, c->dstPitch, 0),
                        src ? src + c->srcY * c->srcPitch + c->srcXInBytes : 0,
                        pitched_extent(c->WidthInBytes, c->Height, 1, c->srcPitch, 0));
}

/* CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER differ in one field per side (reserved
 * or context); the geometry is read the same way from either. */
#define MEMCPY3D_ACCESS(ev, c)                                                                     \
    do {                                                                                           \
        uint64_t dst_ = side_base((c)->dstMemoryType, (c)->dstHost, (c)->dstDevice);               \
        uint64_t src_ = side_base((c)->srcMemoryType, (c)->srcHost, (c)->srcDevice);               \
        uint64_t dh_ = (c)->dstHeight ? (c)->dstHeight : (c)->Height;                              \
        uint64_t sh_ = (c)->srcHeight ? (c)->srcHeight : (c)->Height;                              \
        return access_event(                                                                       \
            ev,                                                                                    \
            dst_ ? dst_ + ((c)->dstZ * dh_ + (c)->dstY) * (c)->dstPitch + (c)->dstXInBytes : 0,    \
            pitched_extent((c)->WidthInBytes, (c)->Height, (c)->Depth, (c)->dstPitch, dh_),        \
            src_ ? src_ + ((c)->srcZ * sh_ + (c)->srcY) * (c)->srcPitch + (c)->srcXInBytes : 0,    \
            pitched_extent((c)->WidthInBytes, (c)->Height, (c)->Depth, (c)->srcPitch, sh_));       \
    } while (0)

static bool dec_memcpy3d(enum gl_site site, const void *params, struct gl_event *ev)
{
    const CUDA_MEMCPY3D *c = ((const cuMemcpy3D_v2_params *)params)->pCopy;
    ENTER_ONLY;
    if (!c)
        return false;
    MEMCPY3D_ACCESS(ev, c);
}

static bool dec_memcpy3d_peer(enum gl_site site, const void *params, struct gl_event *ev)
{
    const CUDA_MEMCPY3D_PEER *c = ((const cuMemcpy3DPeer_params *)params)->pCopy;
    ENTER_ONLY;
    if (!c)
        return false;
    MEMCPY3D_ACCESS(ev, c);
}

/* Sets: the synchronous and asynchronous forms share their leading fields. */
static bool dec_memset_d8(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemsetD8_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->N, 0, 0);
}

static bool dec_memset_d16(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemsetD16_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->N * 2, 0, 0);
}

static bool dec_memset_d32(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemsetD32_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, p->N * 4, 0, 0);
}

static bool dec_memset_2d8(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemsetD2D8_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice, pitched_extent(p->Width, p->Height, 1, p->dstPitch, 0), 0,
                        0);
}

static bool dec_memset_2d16(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemsetD2D16_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice,
                        pitched_extent(p->Width * 2, p->Height, 1, p->dstPitch, 0), 0, 0);
}

static bool dec_memset_2d32(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuMemsetD2D32_v2_params *p = params;
    ENTER_ONLY;
    return access_event(ev, p->dstDevice,
                        pitched_extent(p->Width * 4, p->Height, 1, p->dstPitch, 0), 0, 0);
}

/* ---- a capture's forks and joins (graphs.h) ---- */

/* Only while a capture is in progress (a router armed): outside captures
 * these calls mean nothing to gpuleak, and programs make many.  size: the
 * call's flags (CU_EVENT_RECORD_EXTERNAL, CU_EVENT_WAIT_EXTERNAL: a node of
 * the graph, no fork or join). */
static bool fork_or_join(struct gl_event *ev, enum gl_event_type type, CUevent event,
                         CUstream stream, unsigned flags)
{
    if (!gl_dispatch_armed())
        return false;
    ev->size = flags;
    return control(ev, type, (uintptr_t)event, (uintptr_t)stream);
}

static bool dec_event_record(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuEventRecord_params *p = params;
    EXIT_ONLY;
    return fork_or_join(ev, GL_EV_EVENT_RECORD, p->hEvent, p->hStream, 0);
}

static bool dec_event_record_with_flags(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuEventRecordWithFlags_params *p = params;
    EXIT_ONLY;
    return fork_or_join(ev, GL_EV_EVENT_RECORD, p->hEvent, p->hStream, p->flags);
}

static bool dec_stream_wait_event(enum gl_site site, const void *params, struct gl_event *ev)
{
    const cuStreamWaitEvent_params *p = params;
    EXIT_ONLY;
    return fork_or_join(ev, GL_EV_STREAM_WAIT, p->hEvent, p->hStream, p->Flags);
}

/* ---- tables ---- */

static const decoder_fn decoders[GL_API_COUNT] = {
#define GL_DRIVER_API(name, decoder) [GL_API_##name] = dec_##decoder,
#include "event/driver_api.def"
#undef GL_DRIVER_API
};

static const uint32_t cbid_of_api[GL_API_COUNT] = {
#define GL_DRIVER_API(name, decoder) [GL_API_##name] = CUPTI_DRIVER_TRACE_CBID_##name,
#include "event/driver_api.def"
#undef GL_DRIVER_API
};

static const uint16_t api_of_cbid[CUPTI_DRIVER_TRACE_CBID_SIZE] = {
#define GL_DRIVER_API(name, decoder) [CUPTI_DRIVER_TRACE_CBID_##name] = GL_API_##name,
#include "event/driver_api.def"
#undef GL_DRIVER_API
};

unsigned gl_decode_api_of_cbid(uint32_t cbid)
{
    return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? api_of_cbid[cbid] : GL_API_NONE;
}

uint32_t gl_decode_cbid_of_api(unsigned api) { return api < GL_API_COUNT ? cbid_of_api[api] : 0; }

GL_HOT bool gl_decode(uint32_t cbid, enum gl_site site, const void *params, struct gl_event *ev)
{
    unsigned api = gl_decode_api_of_cbid(cbid);
    if (api == GL_API_NONE || !params)
        return false;
    ev->api = (uint16_t)api;
    return decoders[api](site, params, ev);
}
