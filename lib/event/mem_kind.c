/* SPDX-License-Identifier: MIT */
#include "event/mem_kind.h"

static const char *const kind_names[GL_MEM_NKINDS] = {
    [GL_MEM_NONE] = "memory",
    [GL_MEM_DEVICE] = "device memory",
    [GL_MEM_PITCH] = "pitched device memory",
    [GL_MEM_MANAGED] = "managed memory",
    [GL_MEM_HOST_PINNED] = "pinned host memory",
    [GL_MEM_HOST_REGISTERED] = "registered host memory",
    [GL_MEM_ASYNC] = "stream-ordered memory",
    [GL_MEM_VMM] = "VMM physical memory",
    [GL_MEM_ARRAY] = "CUDA array",
    [GL_MEM_MIPMAPPED_ARRAY] = "mipmapped CUDA array",
    [GL_MEM_IPC] = "IPC-imported memory",
    [GL_MEM_GRAPH] = "graph memory",
    [GL_MEM_POOL_SUB] = "pool sub-allocation",
    [GL_MEM_POOL_RESERVE] = "stream-ordered pool's unused memory",
    [GL_MEM_GRAPH_RESERVE] = "graph memory's unused memory",
};

const char *gl_mem_kind_name(unsigned kind)
{
    return kind < GL_MEM_NKINDS ? kind_names[kind] : "memory";
}
