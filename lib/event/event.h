/* SPDX-License-Identifier: MIT */
/* Events: what a producer observed of the program's driver calls, in one
 * fixed-size record that every consumer reads (event/dispatch.h says who).
 *
 * Events hold no pointers into the process (addresses and handles are plain
 * integers, stacks are depot ids), so that they can be written to a file as
 * they happen and read back later (event/codec.h): post-mortem reports, and
 * recorded GPU runs replayed through the whole pipeline without a GPU.
 * Event types, flags, memory kinds (event/mem_kind.h), key namespaces
 * (event/key.h) and API ids (event/api.h) are part of that format: append,
 * never renumber. */
#ifndef GPULEAK_EVENT_H
#define GPULEAK_EVENT_H

#include <stdint.h>

#include "event/key.h"
#include "event/mem_kind.h"

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
    /* Graphs' control calls (track/graphs.h). */
    GL_EV_CAPTURE_BEGIN,      /* aux = stream */
    GL_EV_CAPTURE_END,        /* aux = stream, key = the graph (0: the capture failed) */
    GL_EV_GRAPH_INSTANTIATE,  /* key = exec, aux = graph, size = flags */
    GL_EV_GRAPH_LAUNCH,       /* key = exec, aux = stream */
    GL_EV_GRAPH_DESTROY,      /* key = graph */
    GL_EV_GRAPH_EXEC_DESTROY, /* key = exec */
    /* A memory node added to a graph (cuGraphAddMemAllocNode, cuGraphAddNode):
     * key = its address, size, device, stack, aux = the graph.  Not a block
     * until a launch runs it. */
    GL_EV_GRAPH_NODE_ALLOC,
    GL_EV_GRAPH_NODE_FREE, /* a free node (cuGraphAddMemFreeNode): key, aux = the graph */
    /* An allocation (or a graph's memory node) the driver refused for lack of
     * memory: the request (kind, size, device, api, stack); key 0. */
    GL_EV_ALLOC_FAILED,
    /* The two observers disagree about a call (--intercept=both,
     * observe/crosscheck.h): api, key and size of what the call made, aux =
     * enum gl_mismatch (who saw it), seq = the event type it made, stack. */
    GL_EV_OBSERVER_MISMATCH,
    /* While a stream is being captured (only then: observe/decode.c), the
     * events that fork a capture to another stream and join it back
     * (track/graphs.h): a CUDA event recorded on a stream (key = the event,
     * aux = the stream), and a stream made to wait for one (key = the event,
     * aux = the waiting stream); size = the call's flags. */
    GL_EV_EVENT_RECORD,
    GL_EV_STREAM_WAIT,
    GL_EV_NTYPES
};
/* A stream-ordered allocation or free made while its stream is captured is an
 * ALLOC or FREE like any other: the graphs claim it (event/dispatch.h's route
 * stage) and keep it as a node. */
/* A pool's sub-allocation is an ALLOC of kind GL_MEM_POOL_SUB, key
 * gl_key_make(GL_NS_POOL_SUB, address), aux = the pool's key; it is freed by a
 * FREE of that key.  Sub-allocations are not GPU allocations: they leave the
 * allocation counters and live bytes alone (the pool's block already counts). */

#define GL_EVF_SIZE_UNKNOWN 0x1 /* size resolved at report time (IPC, imported handles) */
#define GL_EVF_IMPORTED 0x2     /* memory of another process, opened here */
#define GL_EVF_IGNORED 0x4      /* allocated while the thread disabled tracking */
/* The call failed: a release the driver refused (its end); decoding, the
 * request of a failed allocation (observe/decode.h). */
#define GL_EVF_FAILED 0x8
/* Made by a consumer from another event, not observed: the blocks of a graph
 * launch, a block gone with its context or found replaced.  A replay makes
 * them again, so an event log does not keep them. */
#define GL_EVF_DERIVED 0x10
/* ctx not asked: a release whose context no consumer wanted (event/dispatch.h,
 * GL_CONSUMER_CONTEXTS), the driver saved the question.  Only while the call
 * runs, on its thread, can the placement still tell it (gl_dispatch_ctx). */
#define GL_EVF_CTX_LATER 0x20

/* Who saw a call the other observer did not (GL_EV_OBSERVER_MISMATCH). */
enum gl_mismatch {
    GL_MISMATCH_DRIVER_ONLY = 1, /* the hook at the driver's entry point, not CUPTI */
    GL_MISMATCH_CUPTI_ONLY,      /* CUPTI, not the hooks: a path to the driver not hooked */
    GL_MISMATCH_DIFFERENT,       /* both, reading its parameters differently */
};

/* device: the producer left it to be found from the event's context (when no
 * consumer needs it, the lookup is saved: event/dispatch.h, placement). */
#define GL_DEVICE_FROM_CONTEXT (-2)

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
    uint64_t ctx; /* CUcontext value (0 with GL_EVF_CTX_LATER) */
    uint64_t aux; /* stream for stream-ordered memory, handle key for VMM maps */
    uint64_t time_ns;
};

_Static_assert(sizeof(struct gl_event) == 64, "events are one cache line, fixed format");

#endif
