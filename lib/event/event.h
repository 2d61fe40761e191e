/* Events: the one seam between CUDA and gpuleak's core.
 *
 * The CUPTI callback decodes each driver call into plain, fixed-size events; the
 * tracker applies them to the block table.  Events hold no pointers into the
 * process (addresses and handles are plain integers), so they can be written to a
 * file as they happen and replayed later (post-mortem reports, recorded GPU runs
 * replayed in CI).  A second consumer hooks in through gl_event_sink: one
 * predictable branch when unused.
 *
 * Memory kinds and API ids are part of the format: append, never renumber. */
#ifndef GPULEAK_EVENT_H
#define GPULEAK_EVENT_H

#include <stdint.h>

/* What kind of memory a block is. */
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

/* Keys: a block is keyed by its address, or for handle-identified objects by the
 * handle tagged with a namespace in the top bits.  Device and host addresses share
 * the unified address space below 2^57, so the tags cannot collide with them. */
#define GL_KEY_NS_SHIFT 60
#define GL_KEY_NS_MASK (0xfULL << GL_KEY_NS_SHIFT)
enum gl_key_ns {
    GL_NS_ADDR = 0,
    GL_NS_VMM_HANDLE = 0x8,
    GL_NS_ARRAY = 0x9,
    GL_NS_MIPMAP = 0xa,
    /* Custom pools' sub-allocations: their addresses lie inside a tracked block,
     * so they need keys of their own.  A pool's first sub-allocation may start at
     * the pool's own address. */
    GL_NS_POOL_SUB = 0xb,
    GL_NS_MEMPOOL = 0xc,      /* a CUmemoryPool handle */
    GL_NS_GRAPH_MEMORY = 0xd, /* a device's graph memory: the ordinal */
};
static inline uint64_t gl_key_make(enum gl_key_ns ns, uint64_t v)
{
    return (v & ~GL_KEY_NS_MASK) | ((uint64_t)ns << GL_KEY_NS_SHIFT);
}
static inline uint64_t gl_key_value(uint64_t key) { return key & ~GL_KEY_NS_MASK; }
static inline enum gl_key_ns gl_key_ns(uint64_t key)
{
    return (enum gl_key_ns)(key >> GL_KEY_NS_SHIFT);
}

enum gl_event_type {
    GL_EV_NONE = 0,
    GL_EV_ALLOC,       /* key, size, kind, api, device, ctx, aux=stream, stack, seq, tid */
    GL_EV_FREE,        /* key, api, tid; seq = allocation number of the freed block (0: unknown) */
    GL_EV_CTX_DESTROY, /* ctx: every context-bound block of it is gone */
    GL_EV_VMM_MAP,     /* key = mapped address, size, aux = handle key */
    GL_EV_VMM_UNMAP,   /* key = address, size = length of the unmapped range */
    GL_EV_VMM_RETAIN,  /* key = handle key (cuMemRetainAllocationHandle) */
    GL_EV_VMM_RELEASE, /* key = handle key (cuMemRelease) */
    /* From the client API (gpuleak.h), outside any CUDA call. */
    GL_EV_IGNORE,       /* key: never report this block */
    GL_EV_POOL_CREATE,  /* key: this block is a custom pool */
    GL_EV_POOL_DESTROY, /* key: the pool and its remaining sub-allocations are gone */
    /* A copy or set (--check-api-ranges): key = destination, size = the bytes
     * from its first to its last byte touched; aux = source, seq = likewise
     * (0: none, or not memory gpuleak could track: an array). */
    GL_EV_ACCESS,
    /* Graphs' control calls (graphs.h), applied to their node sets. */
    GL_EV_CAPTURE_BEGIN,      /* aux = stream */
    GL_EV_CAPTURE_END,        /* aux = stream, key = the graph */
    GL_EV_GRAPH_INSTANTIATE,  /* key = exec, aux = graph, size = flags */
    GL_EV_GRAPH_LAUNCH,       /* key = exec, aux = stream */
    GL_EV_GRAPH_DESTROY,      /* key = graph */
    GL_EV_GRAPH_EXEC_DESTROY, /* key = exec */
};
/* A graph's memory nodes (cuGraphAddMemAllocNode, cuGraphAddNode) decode as an
 * ALLOC of kind GL_MEM_GRAPH, and free nodes as a FREE, with aux = the graph:
 * they are nodes, not blocks, until a launch runs them (graphs.h). */
/* A pool's sub-allocation is an ALLOC of kind GL_MEM_POOL_SUB, key
 * gl_key_make(GL_NS_POOL_SUB, address), aux = the pool's key; it is freed by a
 * FREE of that key.  Sub-allocations are not GPU allocations: they leave the
 * allocation counters and live bytes alone (the pool's block already counts). */

#define GL_EVF_SIZE_UNKNOWN 0x1 /* size resolved at report time (IPC, imported handles) */
#define GL_EVF_IMPORTED 0x2     /* memory of another process, opened here */
#define GL_EVF_IGNORED 0x4      /* allocated while the thread disabled tracking */
#define GL_EVF_FAILED 0x8       /* decoding a failed allocation: the request, key may be 0 */

struct gl_event {
    uint8_t type;   /* enum gl_event_type */
    uint8_t kind;   /* enum gl_mem_kind */
    uint16_t api;   /* enum gl_api */
    int16_t device; /* device ordinal, -1 for host memory or unknown */
    uint16_t flags; /* GL_EVF_* */
    uint32_t tid;   /* kernel thread id */
    uint32_t stack; /* stack depot id, 0 = none */
    uint64_t key;
    uint64_t size;
    uint64_t seq; /* allocation sequence number, 1-based */
    uint64_t ctx; /* CUcontext value */
    uint64_t aux; /* stream for stream-ordered memory, handle key for VMM maps */
    uint64_t time_ns;
};

_Static_assert(sizeof(struct gl_event) == 64, "events are one cache line, fixed format");

/* Optional second consumer (e.g. a file writer).  NULL when unused.  Called after
 * the tracker has applied the event, on the thread that caused it, inside the CUPTI
 * callback: it must not call CUDA, block for long, or allocate through malloc. */
typedef void (*gl_event_sink_fn)(const struct gl_event *ev);
extern gl_event_sink_fn gl_event_sink;

#endif
