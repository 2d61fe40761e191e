/* SPDX-License-Identifier: MIT */
/* Memory kinds: what kind of memory a block is, what the report calls it, and
 * the properties the consumers of events agree on (which kinds are counted as
 * GPU allocations, which go with their context).  Part of the event format:
 * append, never renumber. */
#ifndef GPULEAK_MEM_KIND_H
#define GPULEAK_MEM_KIND_H

#include <stdbool.h>

enum gl_mem_kind {
    GL_MEM_NONE = 0,
    GL_MEM_DEVICE,          /* cuMemAlloc (cudaMalloc) */
    GL_MEM_PITCH,           /* cuMemAllocPitch (cudaMallocPitch, cudaMalloc3D) */
    GL_MEM_MANAGED,         /* cuMemAllocManaged */
    GL_MEM_HOST_PINNED,     /* cuMemAllocHost, cuMemHostAlloc */
    GL_MEM_HOST_REGISTERED, /* cuMemHostRegister */
    GL_MEM_ASYNC,           /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
    GL_MEM_VMM,   /* cuMemCreate, cuMemImportFromShareableHandle: a physical allocation handle */
    GL_MEM_ARRAY, /* cuArrayCreate, cuArray3DCreate */
    GL_MEM_MIPMAPPED_ARRAY, /* cuMipmappedArrayCreate */
    GL_MEM_IPC,             /* cuIpcOpenMemHandle, cuMemPoolImportPointer */
    GL_MEM_GRAPH,           /* graph memory node (cuGraphAddMemAllocNode) */
    GL_MEM_POOL_SUB,        /* a custom pool's sub-allocation (gpuleak_pool_alloc) */
    GL_MEM_POOL_RESERVE,    /* a stream-ordered pool (cuMemPoolCreate; the default pools and
                               graph memory are added at checks): its unused memory */
    GL_MEM_GRAPH_RESERVE,   /* a device's graph memory pool: its unused memory */
    GL_MEM_NKINDS
};

/* What a memory kind is called in a report: "device memory", "pinned host memory"... */
const char *gl_mem_kind_name(unsigned kind);

/* Whether a kind's blocks count as GPU allocations in the statistics: pool
 * sub-allocations (their pool's block counts) and pools' reserves do not (the
 * driver reserves pools' memory as it sees fit; their allocations count).
 * Inline: asked on every allocation and free. */
static inline bool gl_mem_kind_counted(unsigned kind)
{
    return kind != GL_MEM_POOL_SUB && kind != GL_MEM_POOL_RESERVE && kind != GL_MEM_GRAPH_RESERVE;
}

/* Kinds freed with their context (cuCtxDestroy, cudaDeviceReset).  VMM physical
 * allocations and pools belong to the device, not to a context, and survive. */
static inline bool gl_mem_kind_context_bound(unsigned kind)
{
    return kind != GL_MEM_VMM && kind != GL_MEM_NONE && kind != GL_MEM_POOL_RESERVE &&
           kind != GL_MEM_GRAPH_RESERVE;
}

#endif
