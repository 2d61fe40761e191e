/* SPDX-License-Identifier: MIT */
/* lib/observe/decode.h: every driver entry point of driver_api.def, decoded
 * from a hand-built CUPTI parameter struct (generated_cuda_meta.h), and driven
 * through the CUPTI callback handler: allocations (and their failures), releases,
 * the copies and sets checked with --check-api-ranges, and graphs' memory nodes
 * and control calls (graphs.h). */
#include <check.h>
#include <cupti.h>
#include <stdint.h>
#include <string.h>

#include "runtime.h"
#include "common/util.h"
#include "testutil.h"
#include "tracker_util.h"
#include "event/api.h"
#include "track/errors.h"
#include "observe/call.h"
#include "observe/cupti.h"
#include "observe/decode.h"
#include "track/graphs.h"
#include "base/tool.h"
#include "track/live_ranges.h"
#include "track/tracker.h"

/* The legacy descriptors' real layout (cuda.h under __CUDA_API_VERSION_INTERNAL);
 * cupti.h only declares placeholders for them. */
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

#define FROM_CTX GL_DEVICE_FROM_CONTEXT
#define VMM(h) gl_key_make(GL_NS_VMM_HANDLE, (h))
#define ARR(h) gl_key_make(GL_NS_ARRAY, (h))
#define MIP(h) gl_key_make(GL_NS_MIPMAP, (h))

struct want {
    enum gl_site site;
    uint8_t type, kind;
    uint64_t key, size, aux;
    uint64_t seq; /* GL_EV_ACCESS: the source's length */
    int16_t device;
    uint16_t flags;
    uint64_t failed_size; /* the request a failed call names, when not size */
};

static void drive_handler(uint32_t cbid, const void *params, struct want w, const char *what,
                          int line);

/* Decode at the expected site: exactly these fields, the right API id, and nothing
 * at the other site. */
static void expect_at(uint32_t cbid, unsigned api, const void *params, struct want w,
                      const char *what, int line)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ck_assert_msg(gl_decode(cbid, w.site, params, &ev), "%s (line %d): nothing decoded", what,
                  line);
    ck_assert_msg(ev.api == api, "%s: api %u, want %u", what, ev.api, api);
    ck_assert_msg(ev.type == w.type, "%s (line %d): type %u, want %u", what, line, ev.type, w.type);
    ck_assert_msg(ev.kind == w.kind, "%s (line %d): kind %u, want %u", what, line, ev.kind, w.kind);
    ck_assert_msg(ev.key == w.key, "%s (line %d): key 0x%llx, want 0x%llx", what, line,
                  (unsigned long long)ev.key, (unsigned long long)w.key);
    ck_assert_msg(ev.size == w.size, "%s (line %d): size %llu, want %llu", what, line,
                  (unsigned long long)ev.size, (unsigned long long)w.size);
    ck_assert_msg(ev.aux == w.aux, "%s (line %d): aux 0x%llx, want 0x%llx", what, line,
                  (unsigned long long)ev.aux, (unsigned long long)w.aux);
    ck_assert_msg(ev.device == w.device, "%s (line %d): device %d, want %d", what, line, ev.device,
                  w.device);
    ck_assert_msg(ev.flags == w.flags, "%s (line %d): flags 0x%x, want 0x%x", what, line, ev.flags,
                  w.flags);
    ck_assert_msg(ev.seq == w.seq, "%s (line %d): seq %llu, want %llu", what, line,
                  (unsigned long long)ev.seq, (unsigned long long)w.seq);
    ck_assert_msg(ev.stack == 0 && ev.tid == 0 && ev.ctx == 0,
                  "%s: decoding filled fields that are not its own", what);

    memset(&ev, 0, sizeof ev);
    enum gl_site other = w.site == GL_SITE_ENTER ? GL_SITE_EXIT : GL_SITE_ENTER;
    ck_assert_msg(!gl_decode(cbid, other, params, &ev), "%s (line %d): decoded at the other site",
                  what, line);
    /* At an allocation's entry decoding may say what its exit will make (the
     * warming hint), and nothing else. */
    ck_assert_msg(ev.type == 0 ||
                      (ev.type == GL_EV_ALLOC && w.type == GL_EV_ALLOC && other == GL_SITE_ENTER),
                  "%s (line %d): type %u at the other site", what, line, ev.type);
    drive_handler(cbid, params, w, what, line);
}

/* ---- the same call through the CUPTI callback handler ----
 *
 * gl_cupti_callback is called at entry and at exit with hand-built callback data,
 * as CUPTI calls it, and the table must change as the event says. */

#define CTX ((CUcontext)0xc0)

static void call_handler(uint32_t cbid, const void *params, CUresult rc)
{
    uint64_t corr = 0xdeadbeef; /* CUPTI does not clear it: the entry must set it */
    CUpti_CallbackData cb = {.functionParams = params,
                             .functionReturnValue = &rc,
                             .context = CTX,
                             .correlationData = &corr};
    cb.callbackSite = CUPTI_API_ENTER;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
    cb.callbackSite = CUPTI_API_EXIT;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
}

static bool live(uint64_t key, struct gl_block_info *out)
{
    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].key == key) {
            if (out)
                *out = blocks[i];
            found = true;
        }
    gl_tool_unmap(blocks, bytes);
    return found;
}

static void plant(uint64_t key, enum gl_mem_kind kind)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = (uint8_t)kind,
                          .key = key,
                          .size = 4096,
                          .device = 0,
                          .ctx = (uintptr_t)CTX};
    gl_dispatch(&ev);
}

/* The API errors recorded so far, and the first one. */
static uint64_t api_errors(enum gl_error_kind kind, struct gl_api_error *first)
{
    struct gl_api_error_counts c;
    gl_errors_counts(&c);
    struct gl_error_context ctx;
    if (first && gl_errors_contexts(&ctx, 1) == 1)
        *first = ctx.first;
    return kind == GL_ERR_NONE ? c.errors : c.by_kind[kind];
}

/* A failed allocation records nothing; one that failed for want of memory is an
 * OutOfMemory error naming the request. */
/* The error record emptied, range checks set as asked, the pipeline reset. */
static void errors_reset(bool ranges)
{
    gl_live_ranges_configure(ranges);
    tu_pipeline_reset();
}

static void drive_failed_alloc(uint32_t cbid, const void *params, struct want w, const char *what,
                               int line)
{
    errors_reset(false);
    call_handler(cbid, params, CUDA_ERROR_INVALID_VALUE);
    ck_assert_msg(!live(w.key, NULL), "%s (line %d): a failed call recorded a block", what, line);
    ck_assert_msg(api_errors(GL_ERR_NONE, NULL) == 0,
                  "%s (line %d): an error for CUDA_ERROR_INVALID_VALUE", what, line);
    call_handler(cbid, params, CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_msg(!live(w.key, NULL), "%s (line %d): a failed call recorded a block", what, line);
    struct gl_api_error e;
    memset(&e, 0, sizeof e);
    ck_assert_msg(api_errors(GL_ERR_OUT_OF_MEMORY, &e) == 1 && api_errors(GL_ERR_NONE, NULL) == 1,
                  "%s (line %d): no OutOfMemory error", what, line);
    uint64_t want_size = w.failed_size ? w.failed_size : w.size;
    ck_assert_msg(
        e.kind == GL_ERR_OUT_OF_MEMORY && e.addr == 0 && e.size == want_size &&
            e.mem_kind == w.kind && e.api == gl_decode_api_of_cbid(cbid),
        "%s (line %d): OutOfMemory error kind %u addr 0x%llx size %llu mem kind %u api %u", what,
        line, e.kind, (unsigned long long)e.addr, (unsigned long long)e.size, e.mem_kind, e.api);
    errors_reset(false);
}

static void plant_range(uint64_t key, uint64_t size)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_DEVICE,
                          .key = key,
                          .size = size,
                          .device = 0,
                          .ctx = (uintptr_t)CTX};
    gl_dispatch(&ev);
}

/* One side of a copy or set, through the handler with range checks on: a block
 * that holds exactly the bytes touched is fine, one a byte short is an
 * InvalidRange error at the side's start.  The other side is untracked memory,
 * which is never an error. */
static void drive_access_side(uint32_t cbid, const void *params, uint64_t start, uint64_t len,
                              bool write, const char *what, int line)
{
    const char *side = write ? "destination" : "source";
    errors_reset(true);
    plant_range(start, len);
    call_handler(cbid, params, CUDA_SUCCESS);
    ck_assert_msg(api_errors(GL_ERR_NONE, NULL) == 0,
                  "%s (line %d): an error for a %s that fits its block", what, line, side);
    ck_assert_msg(live(start, NULL), "%s (line %d): the copy changed the table", what, line);

    errors_reset(true);
    plant_range(start, len - 1);
    call_handler(cbid, params, CUDA_SUCCESS);
    struct gl_api_error e;
    memset(&e, 0, sizeof e);
    ck_assert_msg(api_errors(GL_ERR_INVALID_RANGE, &e) == 1 && api_errors(GL_ERR_NONE, NULL) == 1,
                  "%s (line %d): no InvalidRange error for a %s one byte past its block", what,
                  line, side);
    ck_assert_msg(e.addr == start && e.size == len && !(e.flags & GL_ERRF_WRITE) == !write &&
                      e.api == gl_decode_api_of_cbid(cbid),
                  "%s (line %d): %s error at 0x%llx, %llu bytes, flags 0x%x, api %u", what, line,
                  side, (unsigned long long)e.addr, (unsigned long long)e.size, e.flags, e.api);
}

static void drive_access(uint32_t cbid, const void *params, struct want w, const char *what,
                         int line)
{
    /* --check-api-ranges=no: nothing is checked. */
    errors_reset(false);
    if (w.size > 1)
        plant_range(w.key, w.size - 1);
    if (w.seq > 1)
        plant_range(w.aux, w.seq - 1);
    call_handler(cbid, params, CUDA_SUCCESS);
    ck_assert_msg(api_errors(GL_ERR_NONE, NULL) == 0, "%s (line %d): checked with ranges off", what,
                  line);
    if (w.size > 1)
        drive_access_side(cbid, params, w.key, w.size, true, what, line);
    if (w.seq > 1)
        drive_access_side(cbid, params, w.aux, w.seq, false, what, line);
    errors_reset(false);
}

/* ---- graphs (graphs.h): memory nodes and control calls through the handler ----
 *
 * A node is no block until a launch runs it; the control calls act on the node
 * sets, set up here directly through graphs.h. */

#define NODE_VA 0x7f7700000000ULL
#define NODE_SIZE 8192
#define OTHER_GRAPH 0x6100ULL
#define OTHER_EXEC 0xe100ULL
#define OTHER_STREAM 0x5b100ULL

static bool graph_node_api(unsigned api)
{
    return api == GL_API_cuGraphAddMemAllocNode || api == GL_API_cuGraphAddMemFreeNode ||
           api == GL_API_cuGraphAddNode || api == GL_API_cuGraphAddNode_v2;
}

/* Graphs' control calls, dispatched as the producer does. */
static void control(enum gl_event_type type, uint64_t key, uint64_t aux, uint64_t size)
{
    struct gl_event ev = {.type = (uint8_t)type,
                          .key = key,
                          .aux = aux,
                          .size = size,
                          .ctx = (uintptr_t)CTX,
                          .tid = 1};
    gl_dispatch(&ev);
}

static void instantiate(uint64_t exec, uint64_t graph, uint64_t flags)
{
    control(GL_EV_GRAPH_INSTANTIATE, exec, graph, flags);
}
static void launch(uint64_t exec, uint64_t stream) { control(GL_EV_GRAPH_LAUNCH, exec, stream, 0); }
static void capture_begin(uint64_t stream) { control(GL_EV_CAPTURE_BEGIN, 0, stream, 0); }

/* An allocation node of NODE_SIZE bytes at NODE_VA in graph, as the handler records it. */
static void plant_node(uint64_t graph)
{
    struct gl_event ev = {.type = GL_EV_GRAPH_NODE_ALLOC,
                          .kind = GL_MEM_GRAPH,
                          .api = GL_API_cuGraphAddMemAllocNode,
                          .key = NODE_VA,
                          .size = NODE_SIZE,
                          .aux = graph};
    gl_dispatch(&ev);
}

/* A stream-ordered allocation at NODE_VA on stream: true when it became a
 * node of the capture (no block). */
static bool capture_node(uint64_t stream)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_ASYNC,
                          .api = GL_API_cuMemAllocAsync,
                          .key = NODE_VA,
                          .size = NODE_SIZE,
                          .aux = stream};
    unsigned before = gl_graphs_node_count();
    gl_dispatch(&ev);
    return gl_graphs_node_count() == before + 1;
}

/* A graph's memory node: recorded in the graph named by aux, a block only once
 * an executable graph of it is launched. */
static void drive_graph_node(uint32_t cbid, const void *params, struct want w, const char *what,
                             int line)
{
    struct gl_block_info b;
    if (w.type == GL_EV_GRAPH_NODE_ALLOC) {
        drive_failed_alloc(cbid, params, w, what, line);
        ck_assert_msg(gl_graphs_node_count() == 0, "%s (line %d): a failed call added a node", what,
                      line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): a node is a block before any launch", what,
                      line);
        ck_assert_msg(gl_graphs_node_count() == 1, "%s (line %d): %u nodes after the callbacks",
                      what, line, gl_graphs_node_count());
        instantiate(OTHER_EXEC, w.aux, 0);
        launch(OTHER_EXEC, 0x5eed00);
        ck_assert_msg(live(w.key, &b), "%s (line %d): no block after the launch", what, line);
        ck_assert_msg(b.size == w.size && b.kind == w.kind && b.device == w.device &&
                          b.api == gl_decode_api_of_cbid(cbid),
                      "%s (line %d): block size %llu kind %u device %d api %u", what, line,
                      (unsigned long long)b.size, b.kind, b.device, b.api);
    } else {
        plant(w.key, GL_MEM_DEVICE);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(live(w.key, NULL), "%s (line %d): a free node freed before any launch", what,
                      line);
        ck_assert_msg(gl_graphs_node_count() == 1, "%s (line %d): %u nodes after the callbacks",
                      what, line, gl_graphs_node_count());
        instantiate(OTHER_EXEC, w.aux, 0);
        launch(OTHER_EXEC, 0x5eed00);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): block survived the launch of its free",
                      what, line);
    }
}

static void drive_control(uint32_t cbid, const void *params, struct want w, const char *what,
                          int line)
{
    struct gl_block_info b;
    struct gl_tracker_stats st;
    switch (w.type) {
    case GL_EV_CAPTURE_BEGIN:
        call_handler(cbid, params, CUDA_ERROR_INVALID_VALUE);
        ck_assert_msg(!gl_graphs_capturing(), "%s (line %d): a failed begin started a capture",
                      what, line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_graphs_capturing() && capture_node(w.aux),
                      "%s (line %d): stream 0x%llx not captured", what, line,
                      (unsigned long long)w.aux);
        break;
    case GL_EV_CAPTURE_END:
        /* A failed end ends the capture too, and its nodes go nowhere. */
        capture_begin(w.aux);
        ck_assert(capture_node(w.aux));
        call_handler(cbid, params, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        ck_assert_msg(!gl_graphs_capturing() && gl_graphs_node_count() == 0,
                      "%s (line %d): a failed end left the capture (%u nodes)", what, line,
                      gl_graphs_node_count());
        capture_begin(w.aux);
        ck_assert(capture_node(w.aux));
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(!gl_graphs_capturing(), "%s (line %d): still capturing", what, line);
        ck_assert_msg(gl_graphs_node_count() == (w.key ? 1u : 0u),
                      "%s (line %d): %u nodes after the end", what, line, gl_graphs_node_count());
        if (w.key) {
            instantiate(OTHER_EXEC, w.key, 0);
            launch(OTHER_EXEC, w.aux);
            ck_assert_msg(live(NODE_VA, &b) && b.size == NODE_SIZE && b.kind == GL_MEM_GRAPH,
                          "%s (line %d): the captured node is not graph 0x%llx's", what, line,
                          (unsigned long long)w.key);
        }
        break;
    case GL_EV_GRAPH_INSTANTIATE:
        plant_node(w.aux);
        call_handler(cbid, params, CUDA_ERROR_INVALID_VALUE);
        ck_assert_msg(gl_graphs_node_count() == 1, "%s (line %d): a failed call instantiated", what,
                      line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_graphs_node_count() == 2, "%s (line %d): %u nodes after instantiation",
                      what, line, gl_graphs_node_count());
        launch(w.key, 0x5eed00);
        ck_assert_msg(live(NODE_VA, NULL), "%s (line %d): exec 0x%llx launched no block", what,
                      line, (unsigned long long)w.key);
        /* The flags reach the exec: AUTO_FREE_ON_LAUNCH frees the block before the
         * next launch makes it again; without it, the launch lands on a live block. */
        launch(w.key, 0x5eed00);
        gl_tracker_stats(&st);
        bool auto_free = w.size & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
        ck_assert_msg(st.replaced == (auto_free ? 0u : 1u) && st.live_blocks == 1,
                      "%s (line %d): %llu replaced, %llu live at a relaunch with flags 0x%llx",
                      what, line, (unsigned long long)st.replaced,
                      (unsigned long long)st.live_blocks, (unsigned long long)w.size);
        break;
    case GL_EV_GRAPH_LAUNCH:
        plant_node(OTHER_GRAPH);
        instantiate(w.key, OTHER_GRAPH, 0);
        call_handler(cbid, params, CUDA_ERROR_INVALID_VALUE);
        ck_assert_msg(!live(NODE_VA, NULL), "%s (line %d): a failed launch made a block", what,
                      line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(live(NODE_VA, &b), "%s (line %d): no block after the launch", what, line);
        ck_assert_msg(b.aux == w.aux && b.ctx == (uintptr_t)CTX && b.kind == GL_MEM_GRAPH,
                      "%s (line %d): block stream 0x%llx ctx 0x%llx kind %u", what, line,
                      (unsigned long long)b.aux, (unsigned long long)b.ctx, b.kind);
        break;
    case GL_EV_GRAPH_DESTROY:
        plant_node(w.key);
        plant_node(OTHER_GRAPH);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_graphs_node_count() == 1, "%s (line %d): %u nodes after the destroy", what,
                      line, gl_graphs_node_count());
        break;
    case GL_EV_GRAPH_EXEC_DESTROY:
        plant_node(OTHER_GRAPH);
        instantiate(w.key, OTHER_GRAPH, 0);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_graphs_node_count() == 1, "%s (line %d): %u nodes after the destroy", what,
                      line, gl_graphs_node_count());
        launch(w.key, 0x5eed00);
        ck_assert_msg(!live(NODE_VA, NULL), "%s (line %d): a destroyed exec launched", what, line);
        break;
    case GL_EV_EVENT_RECORD:
        /* Recorded in a capture (on its stream), the event joins the stream
         * that waits for it; a failed record does not, nor an external one
         * (a node of the graph, no fork). */
        capture_begin(w.aux);
        call_handler(cbid, params, CUDA_ERROR_INVALID_HANDLE);
        control(GL_EV_STREAM_WAIT, w.key, OTHER_STREAM, 0);
        ck_assert_msg(!capture_node(OTHER_STREAM), "%s (line %d): a failed record forked", what,
                      line);
        call_handler(cbid, params, CUDA_SUCCESS);
        control(GL_EV_STREAM_WAIT, w.key, OTHER_STREAM, 0);
        ck_assert_msg(capture_node(OTHER_STREAM) == !(w.size & CU_EVENT_RECORD_EXTERNAL),
                      "%s (line %d): the waiting stream %s", what, line,
                      w.size ? "joined by an external record" : "not joined");
        break;
    case GL_EV_STREAM_WAIT:
        /* Waiting for an event recorded in a capture joins the capture (an
         * external wait does not: a node of the graph). */
        capture_begin(OTHER_STREAM);
        control(GL_EV_EVENT_RECORD, w.key, OTHER_STREAM, 0);
        call_handler(cbid, params, CUDA_ERROR_INVALID_HANDLE);
        ck_assert_msg(!capture_node(w.aux), "%s (line %d): a failed wait joined", what, line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(capture_node(w.aux) == !(w.size & CU_EVENT_WAIT_EXTERNAL),
                      "%s (line %d): stream 0x%llx %s", what, line, (unsigned long long)w.aux,
                      w.size ? "joined by an external wait" : "not joined");
        break;
    default:
        ck_abort_msg("%s: no handler check for event type %u", what, w.type);
    }
}

static void drive_handler(uint32_t cbid, const void *params, struct want w, const char *what,
                          int line)
{
    tu_pipeline_reset();
    struct gl_block_info b;
    uint64_t mapped;
    if (graph_node_api(gl_decode_api_of_cbid(cbid))) {
        drive_graph_node(cbid, params, w, what, line);
        return;
    }
    if (w.type >= GL_EV_CAPTURE_BEGIN) {
        drive_control(cbid, params, w, what, line);
        return;
    }
    switch (w.type) {
    case GL_EV_ALLOC:
        drive_failed_alloc(cbid, params, w, what, line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(live(w.key, &b), "%s (line %d): no block after the callbacks", what, line);
        ck_assert_msg(b.size == w.size && b.kind == w.kind && b.ctx == (uintptr_t)CTX &&
                          b.api == gl_decode_api_of_cbid(cbid),
                      "%s (line %d): block size %llu kind %u api %u", what, line,
                      (unsigned long long)b.size, b.kind, b.api);
        break;
    case GL_EV_FREE:
        plant(w.key, GL_MEM_DEVICE);
        call_handler(cbid, params, CUDA_ERROR_INVALID_VALUE);
        ck_assert_msg(live(w.key, NULL), "%s (line %d): a failed free lost the block", what, line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): block survived its free", what, line);
        break;
    case GL_EV_VMM_RELEASE:
        plant(w.key, GL_MEM_VMM);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): handle survived its release", what, line);
        break;
    case GL_EV_VMM_RETAIN:
        plant(w.key, GL_MEM_VMM);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(live(w.key, &b) && b.refs == 2, "%s (line %d): refs %u after retain", what,
                      line, b.refs);
        break;
    case GL_EV_VMM_MAP:
        plant(w.aux, GL_MEM_VMM);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_tracker_vmm_mappings(w.aux, NULL, 0, &mapped) == 1 && mapped == w.size,
                      "%s (line %d): mapping not recorded", what, line);
        break;
    case GL_EV_VMM_UNMAP: {
        uint64_t h = VMM(0x77);
        plant(h, GL_MEM_VMM);
        struct gl_event m = {.type = GL_EV_VMM_MAP, .key = w.key, .size = w.size, .aux = h};
        gl_dispatch(&m);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_tracker_vmm_mappings(h, NULL, 0, NULL) == 0,
                      "%s (line %d): mapping survived the unmap", what, line);
        break;
    }
    case GL_EV_ACCESS:
        drive_access(cbid, params, w, what, line);
        break;
    default:
        ck_abort_msg("%s: no handler check for event type %u", what, w.type);
    }
}

static void expect_nothing_at(uint32_t cbid, const void *params, const char *what, int line)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ck_assert_msg(!gl_decode(cbid, GL_SITE_ENTER, params, &ev), "%s (line %d): decoded at entry",
                  what, line);
    ck_assert_msg(!gl_decode(cbid, GL_SITE_EXIT, params, &ev), "%s (line %d): decoded at exit",
                  what, line);
}

#define EXPECT(name, params, ...)                                                                  \
    expect_at(CUPTI_DRIVER_TRACE_CBID_##name, GL_API_##name, (params), (struct want){__VA_ARGS__}, \
              #name, __LINE__)
#define EXPECT_NOTHING(name, params)                                                               \
    expect_nothing_at(CUPTI_DRIVER_TRACE_CBID_##name, (params), #name, __LINE__)

#define ALLOC_AT_EXIT .site = GL_SITE_EXIT, .type = GL_EV_ALLOC
#define FREE_AT_ENTER .site = GL_SITE_ENTER, .type = GL_EV_FREE
#define ACCESS_AT_ENTER .site = GL_SITE_ENTER, .type = GL_EV_ACCESS
#define NODE_ALLOC_AT_EXIT .site = GL_SITE_EXIT, .type = GL_EV_GRAPH_NODE_ALLOC
#define NODE_FREE_AT_EXIT .site = GL_SITE_EXIT, .type = GL_EV_GRAPH_NODE_FREE
#define CONTROL_AT_EXIT(t) .site = GL_SITE_EXIT, .type = (t)
#define CONTROL_AT_ENTER(t) .site = GL_SITE_ENTER, .type = (t)

/* ---- one checker per entry point of driver_api.def ---- */

static void chk_cuMemAlloc(void)
{
    CUdeviceptr_v1 d = 0x12345600u;
    cuMemAlloc_params p = {&d, 4096};
    EXPECT(cuMemAlloc, &p, ALLOC_AT_EXIT, .kind = GL_MEM_DEVICE, .key = 0x12345600u, .size = 4096,
           .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAlloc, &p); /* no address came back */
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAlloc, &p);
}

static void chk_cuMemAlloc_v2(void)
{
    CUdeviceptr d = 0x7f0000200000ULL;
    cuMemAlloc_v2_params p = {&d, (size_t)1 << 20};
    EXPECT(cuMemAlloc_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_DEVICE, .key = 0x7f0000200000ULL,
           .size = 1 << 20, .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAlloc_v2, &p);
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAlloc_v2, &p);
}

static void chk_cuMemAllocPitch(void)
{
    CUdeviceptr_v1 d = 0x20000000u;
    unsigned int pitch = 512;
    cuMemAllocPitch_params p = {&d, &pitch, 500, 100, 4};
    EXPECT(cuMemAllocPitch, &p, ALLOC_AT_EXIT, .kind = GL_MEM_PITCH, .key = 0x20000000u,
           .size = 512 * 100, .device = FROM_CTX, .failed_size = 500 * 100);
    p.pPitch = NULL;
    EXPECT_NOTHING(cuMemAllocPitch, &p);
}

static void chk_cuMemAllocPitch_v2(void)
{
    CUdeviceptr d = 0x7f0000400000ULL;
    size_t pitch = 1024;
    cuMemAllocPitch_v2_params p = {&d, &pitch, 1000, 300, 8};
    EXPECT(cuMemAllocPitch_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_PITCH, .key = 0x7f0000400000ULL,
           .size = 1024 * 300, .device = FROM_CTX, .failed_size = 1000 * 300);
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAllocPitch_v2, &p);
}

static void chk_cuMemAllocManaged(void)
{
    CUdeviceptr d = 0x7f0000600000ULL;
    cuMemAllocManaged_params p = {&d, 12345, CU_MEM_ATTACH_GLOBAL};
    EXPECT(cuMemAllocManaged, &p, ALLOC_AT_EXIT, .kind = GL_MEM_MANAGED, .key = 0x7f0000600000ULL,
           .size = 12345, .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAllocManaged, &p);
}

static void chk_cuMemAllocHost(void)
{
    void *h = (void *)0x7fff00001000ULL;
    cuMemAllocHost_params p = {&h, 777};
    EXPECT(cuMemAllocHost, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED, .key = 0x7fff00001000ULL,
           .size = 777, .device = -1);
    h = NULL;
    EXPECT_NOTHING(cuMemAllocHost, &p);
}

static void chk_cuMemAllocHost_v2(void)
{
    void *h = (void *)0x7fff00002000ULL;
    cuMemAllocHost_v2_params p = {&h, (size_t)5 << 30};
    EXPECT(cuMemAllocHost_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED,
           .key = 0x7fff00002000ULL, .size = (uint64_t)5 << 30, .device = -1);
    p.pp = NULL;
    EXPECT_NOTHING(cuMemAllocHost_v2, &p);
}

static void chk_cuMemHostAlloc(void)
{
    void *h = (void *)0x7fff00003000ULL;
    cuMemHostAlloc_params p = {&h, 8192, CU_MEMHOSTALLOC_PORTABLE};
    EXPECT(cuMemHostAlloc, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED, .key = 0x7fff00003000ULL,
           .size = 8192, .device = -1);
    h = NULL;
    EXPECT_NOTHING(cuMemHostAlloc, &p);
}

/* cuMemHostAlloc_v2 has no struct of its own: it shares cuMemHostAlloc's. */
static void chk_cuMemHostAlloc_v2(void)
{
    void *h = (void *)0x7fff00004000ULL;
    cuMemHostAlloc_params p = {&h, 16384, 0};
    EXPECT(cuMemHostAlloc_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED,
           .key = 0x7fff00004000ULL, .size = 16384, .device = -1);
}

static void chk_cuMemHostRegister(void)
{
    cuMemHostRegister_params p = {(void *)0x7ffe00000000ULL, 65536, 0};
    EXPECT(cuMemHostRegister, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_REGISTERED,
           .key = 0x7ffe00000000ULL, .size = 65536, .device = -1);
    p.p = NULL;
    EXPECT_NOTHING(cuMemHostRegister, &p);
}

static void chk_cuMemHostRegister_v2(void)
{
    cuMemHostRegister_v2_params p = {(void *)0x7ffe00100000ULL, 131072,
                                     CU_MEMHOSTREGISTER_PORTABLE};
    EXPECT(cuMemHostRegister_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_REGISTERED,
           .key = 0x7ffe00100000ULL, .size = 131072, .device = -1);
}

static void chk_cuMemAllocAsync(void)
{
    CUdeviceptr d = 0x7f0000800000ULL;
    cuMemAllocAsync_params p = {&d, 2048, (CUstream)0x5eed00};
    EXPECT(cuMemAllocAsync, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC, .key = 0x7f0000800000ULL,
           .size = 2048, .aux = 0x5eed00, .device = FROM_CTX);
    p.hStream = NULL; /* the default stream */
    EXPECT(cuMemAllocAsync, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC, .key = 0x7f0000800000ULL,
           .size = 2048, .aux = 0, .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAllocAsync, &p);
}

static void chk_cuMemAllocAsync_ptsz(void)
{
    CUdeviceptr d = 0x7f0000a00000ULL;
    cuMemAllocAsync_ptsz_params p = {&d, 4096, (CUstream)0x2};
    EXPECT(cuMemAllocAsync_ptsz, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC, .key = 0x7f0000a00000ULL,
           .size = 4096, .aux = 0x2, .device = FROM_CTX);
}

static void chk_cuMemAllocFromPoolAsync(void)
{
    CUdeviceptr d = 0x7f0000c00000ULL;
    cuMemAllocFromPoolAsync_params p = {&d, 3000, (CUmemoryPool)0x9001, (CUstream)0xabc000};
    EXPECT(cuMemAllocFromPoolAsync, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC,
           .key = 0x7f0000c00000ULL, .size = 3000, .aux = 0xabc000, .device = FROM_CTX);
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAllocFromPoolAsync, &p);
}

static void chk_cuMemAllocFromPoolAsync_ptsz(void)
{
    CUdeviceptr d = 0x7f0000e00000ULL;
    cuMemAllocFromPoolAsync_ptsz_params p = {&d, 5000, (CUmemoryPool)0x9002, (CUstream)0xdef000};
    EXPECT(cuMemAllocFromPoolAsync_ptsz, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC,
           .key = 0x7f0000e00000ULL, .size = 5000, .aux = 0xdef000, .device = FROM_CTX);
}

static void chk_cuMemCreate(void)
{
    CUmemGenericAllocationHandle h = 0xabc0;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 3;
    cuMemCreate_params p = {&h, (size_t)2 << 20, &prop, 0};
    EXPECT(cuMemCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM, .key = VMM(0xabc0), .size = 2 << 20,
           .device = 3);
    /* Physical memory on the host has no device. */
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    prop.location.id = 0;
    EXPECT(cuMemCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM, .key = VMM(0xabc0), .size = 2 << 20,
           .device = -1);
    p.prop = NULL;
    EXPECT(cuMemCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM, .key = VMM(0xabc0), .size = 2 << 20,
           .device = FROM_CTX);
    p.handle = NULL;
    EXPECT_NOTHING(cuMemCreate, &p);
}

static void chk_cuMemImportFromShareableHandle(void)
{
    CUmemGenericAllocationHandle h = 0xdd00;
    cuMemImportFromShareableHandle_params p = {&h, (void *)(uintptr_t)17,
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    EXPECT(cuMemImportFromShareableHandle, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM,
           .key = VMM(0xdd00), .size = 0, .device = FROM_CTX,
           .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    p.handle = NULL;
    EXPECT_NOTHING(cuMemImportFromShareableHandle, &p);
}

static void chk_cuMemRetainAllocationHandle(void)
{
    CUmemGenericAllocationHandle h = 0xee00;
    cuMemRetainAllocationHandle_params p = {&h, (void *)0x7f1000000000ULL};
    EXPECT(cuMemRetainAllocationHandle, &p, .site = GL_SITE_EXIT, .type = GL_EV_VMM_RETAIN,
           .key = VMM(0xee00));
    p.handle = NULL;
    EXPECT_NOTHING(cuMemRetainAllocationHandle, &p);
}

static void chk_cuMemRelease(void)
{
    cuMemRelease_params p = {0xff00};
    EXPECT(cuMemRelease, &p, .site = GL_SITE_ENTER, .type = GL_EV_VMM_RELEASE, .key = VMM(0xff00));
}

static void chk_cuMemMap(void)
{
    cuMemMap_params p = {0x7f2000000000ULL, (size_t)4 << 20, 0, 0xabc0, 0};
    EXPECT(cuMemMap, &p, .site = GL_SITE_EXIT, .type = GL_EV_VMM_MAP, .key = 0x7f2000000000ULL,
           .size = 4 << 20, .aux = VMM(0xabc0));
}

static void chk_cuMemUnmap(void)
{
    cuMemUnmap_params p = {0x7f2000000000ULL, (size_t)6 << 20};
    EXPECT(cuMemUnmap, &p, .site = GL_SITE_EXIT, .type = GL_EV_VMM_UNMAP, .key = 0x7f2000000000ULL,
           .size = 6 << 20);
}

static void chk_cuArrayCreate(void)
{
    CUarray a = (CUarray)0xa1a1;
    struct legacy_array_desc d = {100, 100, CU_AD_FORMAT_FLOAT, 1};
    cuArrayCreate_params p = {&a, (const CUDA_ARRAY_DESCRIPTOR_v1 *)(const void *)&d};
    EXPECT(cuArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa1a1),
           .size = 40000, .device = FROM_CTX);
    /* A format of unknown size: tracked, size resolved later. */
    d.Format = (CUarray_format)0x7777;
    EXPECT(cuArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa1a1), .size = 0,
           .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN);
    p.pAllocateArray = NULL;
    EXPECT_NOTHING(cuArrayCreate, &p);
}

static void chk_cuArrayCreate_v2(void)
{
    CUarray a = (CUarray)0xa2a2;
    CUDA_ARRAY_DESCRIPTOR d = {64, 32, CU_AD_FORMAT_UNSIGNED_INT8, 4};
    cuArrayCreate_v2_params p = {&a, &d};
    EXPECT(cuArrayCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa2a2),
           .size = 64 * 32 * 4, .device = FROM_CTX);
    d.Height = 0; /* 1D */
    EXPECT(cuArrayCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa2a2),
           .size = 64 * 4, .device = FROM_CTX);
    p.pHandle = NULL;
    EXPECT_NOTHING(cuArrayCreate_v2, &p);
}

static void chk_cuArray3DCreate(void)
{
    CUarray a = (CUarray)0xa3a3;
    struct legacy_array3d_desc d = {16, 16, 4, CU_AD_FORMAT_HALF, 2, 0};
    cuArray3DCreate_params p = {&a, (const CUDA_ARRAY3D_DESCRIPTOR_v1 *)(const void *)&d};
    EXPECT(cuArray3DCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa3a3),
           .size = 16 * 16 * 4 * 2 * 2, .device = FROM_CTX);
}

static void chk_cuArray3DCreate_v2(void)
{
    CUarray a = (CUarray)0xa4a4;
    CUDA_ARRAY3D_DESCRIPTOR d = {8, 8, 8, CU_AD_FORMAT_FLOAT, 1, 0};
    cuArray3DCreate_v2_params p = {&a, &d};
    EXPECT(cuArray3DCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa4a4),
           .size = 8 * 8 * 8 * 4, .device = FROM_CTX);
    CUDA_ARRAY3D_DESCRIPTOR line = {1000, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    p.pAllocateArray = &line;
    EXPECT(cuArray3DCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa4a4),
           .size = 4000, .device = FROM_CTX);
    p.pAllocateArray = NULL;
    EXPECT_NOTHING(cuArray3DCreate_v2, &p);
}

static void chk_cuMipmappedArrayCreate(void)
{
    CUmipmappedArray m = (CUmipmappedArray)0xb1b1;
    CUDA_ARRAY3D_DESCRIPTOR d = {64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    cuMipmappedArrayCreate_params p = {&m, &d, 3};
    /* Levels 64x64, 32x32, 16x16 of 4-byte texels. */
    EXPECT(cuMipmappedArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_MIPMAPPED_ARRAY,
           .key = MIP(0xb1b1), .size = (64 * 64 + 32 * 32 + 16 * 16) * 4, .device = FROM_CTX);
    /* Levels shrink to 1, never to 0: 4x2 -> 2x1 -> 1x1. */
    CUDA_ARRAY3D_DESCRIPTOR small = {4, 2, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
    p.pMipmappedArrayDesc = &small;
    p.numMipmapLevels = 3;
    EXPECT(cuMipmappedArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_MIPMAPPED_ARRAY,
           .key = MIP(0xb1b1), .size = 8 + 2 + 1, .device = FROM_CTX);
    p.pMipmappedArrayDesc = NULL;
    EXPECT_NOTHING(cuMipmappedArrayCreate, &p);
}

static void chk_cuIpcOpenMemHandle(void)
{
    CUdeviceptr d = 0x7f3000000000ULL;
    cuIpcOpenMemHandle_params p;
    memset(&p, 0, sizeof p);
    p.pdptr = &d;
    p.Flags = CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS;
    EXPECT(cuIpcOpenMemHandle, &p, ALLOC_AT_EXIT, .kind = GL_MEM_IPC, .key = 0x7f3000000000ULL,
           .size = 0, .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    p.pdptr = NULL;
    EXPECT_NOTHING(cuIpcOpenMemHandle, &p);
}

static void chk_cuIpcOpenMemHandle_v2(void)
{
    CUdeviceptr d = 0x7f3000200000ULL;
    cuIpcOpenMemHandle_v2_params p;
    memset(&p, 0, sizeof p);
    p.pdptr = &d;
    EXPECT(cuIpcOpenMemHandle_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_IPC, .key = 0x7f3000200000ULL,
           .size = 0, .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    d = 0;
    EXPECT_NOTHING(cuIpcOpenMemHandle_v2, &p);
}

static void chk_cuMemPoolImportPointer(void)
{
    CUdeviceptr d = 0x7f3000400000ULL;
    cuMemPoolImportPointer_params p = {&d, (CUmemoryPool)0x9003, NULL};
    EXPECT(cuMemPoolImportPointer, &p, ALLOC_AT_EXIT, .kind = GL_MEM_IPC, .key = 0x7f3000400000ULL,
           .size = 0, .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    p.ptr_out = NULL;
    EXPECT_NOTHING(cuMemPoolImportPointer, &p);
}

static void chk_cuGraphAddMemAllocNode(void)
{
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = 1;
    np.bytesize = 1 << 16;
    np.dptr = 0x7f4000000000ULL;
    CUgraphNode node = NULL;
    cuGraphAddMemAllocNode_params p = {&node, (CUgraph)0x6000, NULL, 0, &np};
    EXPECT(cuGraphAddMemAllocNode, &p, NODE_ALLOC_AT_EXIT, .kind = GL_MEM_GRAPH,
           .key = 0x7f4000000000ULL, .size = 1 << 16, .device = 1, .aux = 0x6000);
    p.nodeParams = NULL;
    EXPECT_NOTHING(cuGraphAddMemAllocNode, &p);
}

static void chk_cuGraphAddMemFreeNode(void)
{
    CUgraphNode node = NULL;
    cuGraphAddMemFreeNode_params p = {&node, (CUgraph)0x6000, NULL, 0, 0x7f4000000000ULL};
    EXPECT(cuGraphAddMemFreeNode, &p, NODE_FREE_AT_EXIT, .key = 0x7f4000000000ULL, .aux = 0x6000);
    p.dptr = 0;
    EXPECT_NOTHING(cuGraphAddMemFreeNode, &p);
}

static void graph_node_params(CUgraphNodeParams *np, CUgraphNodeType type)
{
    memset(np, 0, sizeof *np);
    np->type = type;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        np->alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        np->alloc.poolProps.location.id = 2;
        np->alloc.bytesize = 3 << 20;
        np->alloc.dptr = 0x7f4400000000ULL;
    } else if (type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        np->free.dptr = 0x7f4400000000ULL;
    }
}

static void chk_cuGraphAddNode(void)
{
    CUgraphNodeParams np;
    CUgraphNode node = NULL;
    cuGraphAddNode_params p = {&node, (CUgraph)0x6000, NULL, 0, &np};
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    EXPECT(cuGraphAddNode, &p, NODE_ALLOC_AT_EXIT, .kind = GL_MEM_GRAPH, .key = 0x7f4400000000ULL,
           .size = 3 << 20, .device = 2, .aux = 0x6000);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_FREE);
    EXPECT(cuGraphAddNode, &p, NODE_FREE_AT_EXIT, .key = 0x7f4400000000ULL, .aux = 0x6000);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_KERNEL);
    EXPECT_NOTHING(cuGraphAddNode, &p);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEMSET);
    EXPECT_NOTHING(cuGraphAddNode, &p);
    p.nodeParams = NULL;
    EXPECT_NOTHING(cuGraphAddNode, &p);
}

static void chk_cuGraphAddNode_v2(void)
{
    CUgraphNodeParams np;
    CUgraphNode node = NULL;
    cuGraphAddNode_v2_params p = {&node, (CUgraph)0x6000, NULL, NULL, 0, &np};
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    EXPECT(cuGraphAddNode_v2, &p, NODE_ALLOC_AT_EXIT, .kind = GL_MEM_GRAPH,
           .key = 0x7f4400000000ULL, .size = 3 << 20, .device = 2, .aux = 0x6000);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_FREE);
    EXPECT(cuGraphAddNode_v2, &p, NODE_FREE_AT_EXIT, .key = 0x7f4400000000ULL, .aux = 0x6000);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_HOST);
    EXPECT_NOTHING(cuGraphAddNode_v2, &p);
}

static void chk_cuMemFree(void)
{
    cuMemFree_params p = {0x12345600u};
    EXPECT(cuMemFree, &p, FREE_AT_ENTER, .key = 0x12345600u);
    p.dptr = 0; /* cuMemFree(0) frees nothing */
    EXPECT_NOTHING(cuMemFree, &p);
}

static void chk_cuMemFree_v2(void)
{
    cuMemFree_v2_params p = {0x7f0000200000ULL};
    EXPECT(cuMemFree_v2, &p, FREE_AT_ENTER, .key = 0x7f0000200000ULL);
    p.dptr = 0;
    EXPECT_NOTHING(cuMemFree_v2, &p);
}

static void chk_cuMemFreeHost(void)
{
    cuMemFreeHost_params p = {(void *)0x7fff00001000ULL};
    EXPECT(cuMemFreeHost, &p, FREE_AT_ENTER, .key = 0x7fff00001000ULL);
    p.p = NULL;
    EXPECT_NOTHING(cuMemFreeHost, &p);
}

static void chk_cuMemHostUnregister(void)
{
    cuMemHostUnregister_params p = {(void *)0x7ffe00000000ULL};
    EXPECT(cuMemHostUnregister, &p, FREE_AT_ENTER, .key = 0x7ffe00000000ULL);
}

static void chk_cuMemFreeAsync(void)
{
    cuMemFreeAsync_params p = {0x7f0000800000ULL, (CUstream)0x5eed00};
    EXPECT(cuMemFreeAsync, &p, FREE_AT_ENTER, .key = 0x7f0000800000ULL, .aux = 0x5eed00);
    p.dptr = 0;
    EXPECT_NOTHING(cuMemFreeAsync, &p);
}

static void chk_cuMemFreeAsync_ptsz(void)
{
    cuMemFreeAsync_ptsz_params p = {0x7f0000a00000ULL, (CUstream)0x2};
    EXPECT(cuMemFreeAsync_ptsz, &p, FREE_AT_ENTER, .key = 0x7f0000a00000ULL, .aux = 0x2);
}

static void chk_cuArrayDestroy(void)
{
    cuArrayDestroy_params p = {(CUarray)0xa1a1};
    EXPECT(cuArrayDestroy, &p, FREE_AT_ENTER, .key = ARR(0xa1a1));
    p.hArray = NULL;
    EXPECT_NOTHING(cuArrayDestroy, &p);
}

static void chk_cuMipmappedArrayDestroy(void)
{
    cuMipmappedArrayDestroy_params p = {(CUmipmappedArray)0xb1b1};
    EXPECT(cuMipmappedArrayDestroy, &p, FREE_AT_ENTER, .key = MIP(0xb1b1));
    p.hMipmappedArray = NULL;
    EXPECT_NOTHING(cuMipmappedArrayDestroy, &p);
}

static void chk_cuIpcCloseMemHandle(void)
{
    cuIpcCloseMemHandle_params p = {0x7f3000000000ULL};
    EXPECT(cuIpcCloseMemHandle, &p, FREE_AT_ENTER, .key = 0x7f3000000000ULL);
}

static void chk_cuMemPoolCreate(void)
{
    CUmemoryPool pool = (CUmemoryPool)0x5000a0;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 2;
    cuMemPoolCreate_params p = {&pool, &props};
    EXPECT(cuMemPoolCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_POOL_RESERVE,
           .key = gl_key_make(GL_NS_MEMPOOL, 0x5000a0), .size = 0, .device = 2,
           .flags = GL_EVF_SIZE_UNKNOWN);
    p.pool = NULL;
    EXPECT_NOTHING(cuMemPoolCreate, &p);
}

static void chk_cuMemPoolDestroy(void)
{
    cuMemPoolDestroy_params p = {(CUmemoryPool)0x5000a0};
    EXPECT(cuMemPoolDestroy, &p, FREE_AT_ENTER, .key = gl_key_make(GL_NS_MEMPOOL, 0x5000a0));
    p.pool = NULL;
    EXPECT_NOTHING(cuMemPoolDestroy, &p);
}

/* ---- copies and sets: GL_EV_ACCESS at entry, destination in key/size, source
 * in aux/seq, each side from its first byte touched to its last ---- */

#define DST 0x7f0000100000ULL
#define SRC 0x7f0000300000ULL
#define HOST 0x7fff10000000ULL
#define STREAM ((CUstream)0x5eed00)

static void chk_cuMemcpy(void)
{
    cuMemcpy_params p = {DST, SRC, 5000};
    EXPECT(cuMemcpy, &p, ACCESS_AT_ENTER, .key = DST, .size = 5000, .aux = SRC, .seq = 5000);
    /* Unified addresses: host memory too. */
    p.src = HOST;
    EXPECT(cuMemcpy, &p, ACCESS_AT_ENTER, .key = DST, .size = 5000, .aux = HOST, .seq = 5000);
    /* A side at 0 is no side. */
    p.dst = 0;
    EXPECT(cuMemcpy, &p, ACCESS_AT_ENTER, .key = 0, .size = 0, .aux = HOST, .seq = 5000);
    p.dst = DST;
    p.src = 0;
    EXPECT(cuMemcpy, &p, ACCESS_AT_ENTER, .key = DST, .size = 5000, .aux = 0, .seq = 0);
    p.dst = 0;
    EXPECT_NOTHING(cuMemcpy, &p);
    p.dst = DST;
    p.src = SRC;
    p.ByteCount = 0; /* copies nothing */
    EXPECT_NOTHING(cuMemcpy, &p);
}

static void chk_cuMemcpy_ptds(void)
{
    cuMemcpy_ptds_params p = {DST, SRC, 64};
    EXPECT(cuMemcpy_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 64, .aux = SRC, .seq = 64);
}

static void chk_cuMemcpyAsync(void)
{
    cuMemcpyAsync_params p = {DST, SRC, 4096, STREAM};
    EXPECT(cuMemcpyAsync, &p, ACCESS_AT_ENTER, .key = DST, .size = 4096, .aux = SRC, .seq = 4096);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyAsync, &p);
}

static void chk_cuMemcpyAsync_ptsz(void)
{
    cuMemcpyAsync_ptsz_params p = {DST, SRC, 100, (CUstream)0x2};
    EXPECT(cuMemcpyAsync_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 100, .aux = SRC,
           .seq = 100);
}

static void chk_cuMemcpyPeer(void)
{
    cuMemcpyPeer_params p = {DST, (CUcontext)0xc1, SRC, (CUcontext)0xc2, 1 << 20};
    EXPECT(cuMemcpyPeer, &p, ACCESS_AT_ENTER, .key = DST, .size = 1 << 20, .aux = SRC,
           .seq = 1 << 20);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyPeer, &p);
}

static void chk_cuMemcpyPeer_ptds(void)
{
    cuMemcpyPeer_ptds_params p = {DST, (CUcontext)0xc1, SRC, (CUcontext)0xc2, 300};
    EXPECT(cuMemcpyPeer_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 300, .aux = SRC, .seq = 300);
}

static void chk_cuMemcpyPeerAsync(void)
{
    cuMemcpyPeerAsync_params p = {DST, (CUcontext)0xc1, SRC, (CUcontext)0xc2, 777, STREAM};
    EXPECT(cuMemcpyPeerAsync, &p, ACCESS_AT_ENTER, .key = DST, .size = 777, .aux = SRC, .seq = 777);
}

static void chk_cuMemcpyPeerAsync_ptsz(void)
{
    cuMemcpyPeerAsync_ptsz_params p = {DST, (CUcontext)0xc1, SRC, (CUcontext)0xc2, 778, STREAM};
    EXPECT(cuMemcpyPeerAsync_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 778, .aux = SRC,
           .seq = 778);
}

/* Host to device: the source is the host pointer. */
static void chk_cuMemcpyHtoD_v2(void)
{
    cuMemcpyHtoD_v2_params p = {DST, (const void *)HOST, 2048};
    EXPECT(cuMemcpyHtoD_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 2048, .aux = HOST,
           .seq = 2048);
    p.srcHost = NULL;
    EXPECT(cuMemcpyHtoD_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 2048, .aux = 0, .seq = 0);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyHtoD_v2, &p);
}

static void chk_cuMemcpyHtoD_v2_ptds(void)
{
    cuMemcpyHtoD_v2_ptds_params p = {DST, (const void *)HOST, 10};
    EXPECT(cuMemcpyHtoD_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 10, .aux = HOST,
           .seq = 10);
}

static void chk_cuMemcpyHtoDAsync_v2(void)
{
    cuMemcpyHtoDAsync_v2_params p = {DST, (const void *)HOST, 11, STREAM};
    EXPECT(cuMemcpyHtoDAsync_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 11, .aux = HOST,
           .seq = 11);
}

static void chk_cuMemcpyHtoDAsync_v2_ptsz(void)
{
    cuMemcpyHtoDAsync_v2_ptsz_params p = {DST, (const void *)HOST, 12, STREAM};
    EXPECT(cuMemcpyHtoDAsync_v2_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 12, .aux = HOST,
           .seq = 12);
}

/* Device to host: the destination is the host pointer. */
static void chk_cuMemcpyDtoH_v2(void)
{
    cuMemcpyDtoH_v2_params p = {(void *)HOST, SRC, 3000};
    EXPECT(cuMemcpyDtoH_v2, &p, ACCESS_AT_ENTER, .key = HOST, .size = 3000, .aux = SRC,
           .seq = 3000);
    p.dstHost = NULL;
    EXPECT(cuMemcpyDtoH_v2, &p, ACCESS_AT_ENTER, .key = 0, .size = 0, .aux = SRC, .seq = 3000);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyDtoH_v2, &p);
}

static void chk_cuMemcpyDtoH_v2_ptds(void)
{
    cuMemcpyDtoH_v2_ptds_params p = {(void *)HOST, SRC, 20};
    EXPECT(cuMemcpyDtoH_v2_ptds, &p, ACCESS_AT_ENTER, .key = HOST, .size = 20, .aux = SRC,
           .seq = 20);
}

static void chk_cuMemcpyDtoHAsync_v2(void)
{
    cuMemcpyDtoHAsync_v2_params p = {(void *)HOST, SRC, 21, STREAM};
    EXPECT(cuMemcpyDtoHAsync_v2, &p, ACCESS_AT_ENTER, .key = HOST, .size = 21, .aux = SRC,
           .seq = 21);
}

static void chk_cuMemcpyDtoHAsync_v2_ptsz(void)
{
    cuMemcpyDtoHAsync_v2_ptsz_params p = {(void *)HOST, SRC, 22, STREAM};
    EXPECT(cuMemcpyDtoHAsync_v2_ptsz, &p, ACCESS_AT_ENTER, .key = HOST, .size = 22, .aux = SRC,
           .seq = 22);
}

static void chk_cuMemcpyDtoD_v2(void)
{
    cuMemcpyDtoD_v2_params p = {DST, SRC, (size_t)2 << 20};
    EXPECT(cuMemcpyDtoD_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 2 << 20, .aux = SRC,
           .seq = 2 << 20);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyDtoD_v2, &p);
}

static void chk_cuMemcpyDtoD_v2_ptds(void)
{
    cuMemcpyDtoD_v2_ptds_params p = {DST, SRC, 30};
    EXPECT(cuMemcpyDtoD_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 30, .aux = SRC,
           .seq = 30);
}

static void chk_cuMemcpyDtoDAsync_v2(void)
{
    cuMemcpyDtoDAsync_v2_params p = {DST, SRC, 31, STREAM};
    EXPECT(cuMemcpyDtoDAsync_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 31, .aux = SRC,
           .seq = 31);
}

static void chk_cuMemcpyDtoDAsync_v2_ptsz(void)
{
    cuMemcpyDtoDAsync_v2_ptsz_params p = {DST, SRC, 32, STREAM};
    EXPECT(cuMemcpyDtoDAsync_v2_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 32, .aux = SRC,
           .seq = 32);
}

/* To and from arrays: only the linear side is checked. */
static void chk_cuMemcpyDtoA_v2(void)
{
    cuMemcpyDtoA_v2_params p = {(CUarray)0xa1a1, 128, SRC, 4000};
    EXPECT(cuMemcpyDtoA_v2, &p, ACCESS_AT_ENTER, .key = 0, .size = 0, .aux = SRC, .seq = 4000);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyDtoA_v2, &p);
}

static void chk_cuMemcpyDtoA_v2_ptds(void)
{
    cuMemcpyDtoA_v2_ptds_params p = {(CUarray)0xa1a1, 0, SRC, 40};
    EXPECT(cuMemcpyDtoA_v2_ptds, &p, ACCESS_AT_ENTER, .key = 0, .size = 0, .aux = SRC, .seq = 40);
}

static void chk_cuMemcpyAtoD_v2(void)
{
    cuMemcpyAtoD_v2_params p = {DST, (CUarray)0xa1a1, 64, 4000};
    EXPECT(cuMemcpyAtoD_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 4000, .aux = 0, .seq = 0);
    p.ByteCount = 0;
    EXPECT_NOTHING(cuMemcpyAtoD_v2, &p);
}

static void chk_cuMemcpyAtoD_v2_ptds(void)
{
    cuMemcpyAtoD_v2_ptds_params p = {DST, (CUarray)0xa1a1, 0, 41};
    EXPECT(cuMemcpyAtoD_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 41, .aux = 0, .seq = 0);
}

/* 2D: a copy of Height rows of WidthInBytes, each side starting at its X and Y
 * and spanning (Height - 1) * pitch + WidthInBytes bytes. */
static CUDA_MEMCPY2D copy2d(void)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = (const void *)HOST;
    c.srcPitch = 100;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = 0x10000;
    c.dstXInBytes = 8;
    c.dstY = 2;
    c.dstPitch = 256;
    c.WidthInBytes = 100;
    c.Height = 3;
    return c;
}

static void chk_cuMemcpy2D_v2(void)
{
    CUDA_MEMCPY2D c = copy2d();
    cuMemcpy2D_v2_params p = {&c};
    /* Host to device: 0x10000 + 2 * 256 + 8; two pitches and a row; the source
     * packed, 3 rows of 100. */
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = 0x10000 + 2 * 256 + 8, .size = 2 * 256 + 100,
           .aux = HOST, .seq = 300);
    /* The source's X and Y. */
    c.srcXInBytes = 4;
    c.srcY = 1;
    c.srcPitch = 128;
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 612, .aux = HOST + 128 + 4,
           .seq = 2 * 128 + 100);
    /* One row: the width, whatever the pitch. */
    c.Height = 1;
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 100, .aux = HOST + 132,
           .seq = 100);
    /* Device to host, the host pointer used, the device one ignored. */
    c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = SRC;
    c.srcHost = (const void *)0x1234;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = (void *)HOST;
    c.dstDevice = 0x5678;
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = HOST + 520, .size = 612, .aux = SRC,
           .seq = 300);
    /* Unified: the device field holds the address. */
    c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.dstDevice = DST;
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = DST + 520, .size = 612, .aux = SRC,
           .seq = 300);
    /* An array side is not checked. */
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = (CUarray)0xa1a1;
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = DST + 520, .size = 612, .aux = 0, .seq = 0);
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = (CUarray)0xa2a2;
    EXPECT_NOTHING(cuMemcpy2D_v2, &p); /* array to array */
    /* A pitch below the width (the driver refuses it) counts as the width. */
    c = copy2d();
    c.dstXInBytes = 0;
    c.dstY = 0;
    c.dstPitch = 10;
    EXPECT(cuMemcpy2D_v2, &p, ACCESS_AT_ENTER, .key = 0x10000, .size = 300, .aux = HOST,
           .seq = 300);
    /* Nothing copied. */
    c = copy2d();
    c.WidthInBytes = 0;
    EXPECT_NOTHING(cuMemcpy2D_v2, &p);
    c = copy2d();
    c.Height = 0;
    EXPECT_NOTHING(cuMemcpy2D_v2, &p);
    p.pCopy = NULL;
    EXPECT_NOTHING(cuMemcpy2D_v2, &p);
}

static void chk_cuMemcpy2D_v2_ptds(void)
{
    CUDA_MEMCPY2D c = copy2d();
    cuMemcpy2D_v2_ptds_params p = {&c};
    EXPECT(cuMemcpy2D_v2_ptds, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 612, .aux = HOST,
           .seq = 300);
}

static void chk_cuMemcpy2DUnaligned_v2(void)
{
    CUDA_MEMCPY2D c = copy2d();
    cuMemcpy2DUnaligned_v2_params p = {&c};
    EXPECT(cuMemcpy2DUnaligned_v2, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 612, .aux = HOST,
           .seq = 300);
    p.pCopy = NULL;
    EXPECT_NOTHING(cuMemcpy2DUnaligned_v2, &p);
}

static void chk_cuMemcpy2DUnaligned_v2_ptds(void)
{
    CUDA_MEMCPY2D c = copy2d();
    cuMemcpy2DUnaligned_v2_ptds_params p = {&c};
    EXPECT(cuMemcpy2DUnaligned_v2_ptds, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 612,
           .aux = HOST, .seq = 300);
}

static void chk_cuMemcpy2DAsync_v2(void)
{
    CUDA_MEMCPY2D c = copy2d();
    cuMemcpy2DAsync_v2_params p = {&c, STREAM};
    EXPECT(cuMemcpy2DAsync_v2, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 612, .aux = HOST,
           .seq = 300);
    p.pCopy = NULL;
    EXPECT_NOTHING(cuMemcpy2DAsync_v2, &p);
}

static void chk_cuMemcpy2DAsync_v2_ptsz(void)
{
    CUDA_MEMCPY2D c = copy2d();
    cuMemcpy2DAsync_v2_ptsz_params p = {&c, STREAM};
    EXPECT(cuMemcpy2DAsync_v2_ptsz, &p, ACCESS_AT_ENTER, .key = 0x10208, .size = 612, .aux = HOST,
           .seq = 300);
}

/* 3D: Depth planes of Height rows; a side's plane is its Height rows of pitch
 * (Height when 0).  The destination: X 16, Y 2, Z 1 in planes of 8 rows of 512
 * starts at (1 * 8 + 2) * 512 + 16 = 5136 and spans ((3 - 1) * 8 + (4 - 1)) * 512
 * + 100 = 9828 bytes; the source, packed host memory, 100 * 4 * 3 = 1200. */
#define COPY3D_FIELDS(c)                                                                           \
    do {                                                                                           \
        memset(&(c), 0, sizeof(c));                                                                \
        (c).srcMemoryType = CU_MEMORYTYPE_HOST;                                                    \
        (c).srcHost = (const void *)HOST;                                                          \
        (c).srcPitch = 100;                                                                        \
        (c).dstMemoryType = CU_MEMORYTYPE_DEVICE;                                                  \
        (c).dstDevice = DST;                                                                       \
        (c).dstXInBytes = 16;                                                                      \
        (c).dstY = 2;                                                                              \
        (c).dstZ = 1;                                                                              \
        (c).dstPitch = 512;                                                                        \
        (c).dstHeight = 8;                                                                         \
        (c).WidthInBytes = 100;                                                                    \
        (c).Height = 4;                                                                            \
        (c).Depth = 3;                                                                             \
    } while (0)
#define DST3D (DST + 5136)

static void chk_cuMemcpy3D_v2(void)
{
    CUDA_MEMCPY3D c;
    COPY3D_FIELDS(c);
    cuMemcpy3D_v2_params p = {&c};
    EXPECT(cuMemcpy3D_v2, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
    /* The source's offsets: X 10, Y 1, Z 2 in planes of 6 rows of 128:
     * (2 * 6 + 1) * 128 + 10 = 1674; (2 * 6 + 3) * 128 + 100 = 2020. */
    c.srcXInBytes = 10;
    c.srcY = 1;
    c.srcZ = 2;
    c.srcPitch = 128;
    c.srcHeight = 6;
    EXPECT(cuMemcpy3D_v2, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST + 1674,
           .seq = 2020);
    /* One plane: the heights of the sides do not matter. */
    c.Depth = 1;
    EXPECT(cuMemcpy3D_v2, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 3 * 512 + 100,
           .aux = HOST + 1674, .seq = 3 * 128 + 100);
    /* Arrays are not checked. */
    COPY3D_FIELDS(c);
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = (CUarray)0xa3a3;
    EXPECT(cuMemcpy3D_v2, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = 0, .seq = 0);
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = (CUarray)0xa4a4;
    EXPECT_NOTHING(cuMemcpy3D_v2, &p);
    /* Unified to host. */
    COPY3D_FIELDS(c);
    c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.srcDevice = SRC;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = (void *)(HOST + 0x100000);
    EXPECT(cuMemcpy3D_v2, &p, ACCESS_AT_ENTER, .key = HOST + 0x100000 + 5136, .size = 9828,
           .aux = SRC, .seq = 1200);
    COPY3D_FIELDS(c);
    c.Depth = 0;
    EXPECT_NOTHING(cuMemcpy3D_v2, &p);
    p.pCopy = NULL;
    EXPECT_NOTHING(cuMemcpy3D_v2, &p);
}

static void chk_cuMemcpy3D_v2_ptds(void)
{
    CUDA_MEMCPY3D c;
    COPY3D_FIELDS(c);
    cuMemcpy3D_v2_ptds_params p = {&c};
    EXPECT(cuMemcpy3D_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
}

static void chk_cuMemcpy3DAsync_v2(void)
{
    CUDA_MEMCPY3D c;
    COPY3D_FIELDS(c);
    cuMemcpy3DAsync_v2_params p = {&c, STREAM};
    EXPECT(cuMemcpy3DAsync_v2, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
    p.pCopy = NULL;
    EXPECT_NOTHING(cuMemcpy3DAsync_v2, &p);
}

static void chk_cuMemcpy3DAsync_v2_ptsz(void)
{
    CUDA_MEMCPY3D c;
    COPY3D_FIELDS(c);
    cuMemcpy3DAsync_v2_ptsz_params p = {&c, STREAM};
    EXPECT(cuMemcpy3DAsync_v2_ptsz, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
}

/* CUDA_MEMCPY3D_PEER: the same geometry, with a context on each side. */
static void chk_cuMemcpy3DPeer(void)
{
    CUDA_MEMCPY3D_PEER c;
    COPY3D_FIELDS(c);
    c.srcContext = (CUcontext)0xc1;
    c.dstContext = (CUcontext)0xc2;
    cuMemcpy3DPeer_params p = {&c};
    EXPECT(cuMemcpy3DPeer, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = SRC;
    c.srcXInBytes = 10;
    c.srcY = 1;
    c.srcZ = 2;
    c.srcPitch = 128;
    c.srcHeight = 6;
    EXPECT(cuMemcpy3DPeer, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = SRC + 1674,
           .seq = 2020);
    c.WidthInBytes = 0;
    EXPECT_NOTHING(cuMemcpy3DPeer, &p);
    p.pCopy = NULL;
    EXPECT_NOTHING(cuMemcpy3DPeer, &p);
}

static void chk_cuMemcpy3DPeer_ptds(void)
{
    CUDA_MEMCPY3D_PEER c;
    COPY3D_FIELDS(c);
    cuMemcpy3DPeer_ptds_params p = {&c};
    EXPECT(cuMemcpy3DPeer_ptds, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
}

static void chk_cuMemcpy3DPeerAsync(void)
{
    CUDA_MEMCPY3D_PEER c;
    COPY3D_FIELDS(c);
    cuMemcpy3DPeerAsync_params p = {&c, STREAM};
    EXPECT(cuMemcpy3DPeerAsync, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
}

static void chk_cuMemcpy3DPeerAsync_ptsz(void)
{
    CUDA_MEMCPY3D_PEER c;
    COPY3D_FIELDS(c);
    cuMemcpy3DPeerAsync_ptsz_params p = {&c, STREAM};
    EXPECT(cuMemcpy3DPeerAsync_ptsz, &p, ACCESS_AT_ENTER, .key = DST3D, .size = 9828, .aux = HOST,
           .seq = 1200);
}

/* Sets: N elements of 1, 2 or 4 bytes; 2D: Height rows of Width elements, pitch
 * bytes apart.  No source. */
static void chk_cuMemsetD8_v2(void)
{
    cuMemsetD8_v2_params p = {DST, 0xab, 1000};
    EXPECT(cuMemsetD8_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 1000);
    p.N = 0;
    EXPECT_NOTHING(cuMemsetD8_v2, &p);
    p.N = 1000;
    p.dstDevice = 0;
    EXPECT_NOTHING(cuMemsetD8_v2, &p);
}

static void chk_cuMemsetD8_v2_ptds(void)
{
    cuMemsetD8_v2_ptds_params p = {DST, 0xab, 50};
    EXPECT(cuMemsetD8_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 50);
}

static void chk_cuMemsetD8Async(void)
{
    cuMemsetD8Async_params p = {DST, 0xab, 51, STREAM};
    EXPECT(cuMemsetD8Async, &p, ACCESS_AT_ENTER, .key = DST, .size = 51);
}

static void chk_cuMemsetD8Async_ptsz(void)
{
    cuMemsetD8Async_ptsz_params p = {DST, 0xab, 52, STREAM};
    EXPECT(cuMemsetD8Async_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 52);
}

static void chk_cuMemsetD16_v2(void)
{
    cuMemsetD16_v2_params p = {DST, 0xabcd, 1000};
    EXPECT(cuMemsetD16_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 2000);
    p.N = 0;
    EXPECT_NOTHING(cuMemsetD16_v2, &p);
}

static void chk_cuMemsetD16_v2_ptds(void)
{
    cuMemsetD16_v2_ptds_params p = {DST, 0xabcd, 50};
    EXPECT(cuMemsetD16_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 100);
}

static void chk_cuMemsetD16Async(void)
{
    cuMemsetD16Async_params p = {DST, 0xabcd, 51, STREAM};
    EXPECT(cuMemsetD16Async, &p, ACCESS_AT_ENTER, .key = DST, .size = 102);
}

static void chk_cuMemsetD16Async_ptsz(void)
{
    cuMemsetD16Async_ptsz_params p = {DST, 0xabcd, 52, STREAM};
    EXPECT(cuMemsetD16Async_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 104);
}

static void chk_cuMemsetD32_v2(void)
{
    cuMemsetD32_v2_params p = {DST, 0xdeadbeef, 1000};
    EXPECT(cuMemsetD32_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 4000);
    p.N = 0;
    EXPECT_NOTHING(cuMemsetD32_v2, &p);
}

static void chk_cuMemsetD32_v2_ptds(void)
{
    cuMemsetD32_v2_ptds_params p = {DST, 0xdeadbeef, 50};
    EXPECT(cuMemsetD32_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 200);
}

static void chk_cuMemsetD32Async(void)
{
    cuMemsetD32Async_params p = {DST, 0xdeadbeef, 51, STREAM};
    EXPECT(cuMemsetD32Async, &p, ACCESS_AT_ENTER, .key = DST, .size = 204);
}

static void chk_cuMemsetD32Async_ptsz(void)
{
    cuMemsetD32Async_ptsz_params p = {DST, 0xdeadbeef, 52, STREAM};
    EXPECT(cuMemsetD32Async_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 208);
}

/* 3 rows of 100 bytes, 256 apart: 2 * 256 + 100. */
static void chk_cuMemsetD2D8_v2(void)
{
    cuMemsetD2D8_v2_params p = {DST, 256, 0xab, 100, 3};
    EXPECT(cuMemsetD2D8_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 2 * 256 + 100);
    p.Height = 1;
    EXPECT(cuMemsetD2D8_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 100);
    p.Height = 0;
    EXPECT_NOTHING(cuMemsetD2D8_v2, &p);
    p.Height = 3;
    p.Width = 0;
    EXPECT_NOTHING(cuMemsetD2D8_v2, &p);
}

static void chk_cuMemsetD2D8_v2_ptds(void)
{
    cuMemsetD2D8_v2_ptds_params p = {DST, 256, 0xab, 100, 3};
    EXPECT(cuMemsetD2D8_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 612);
}

static void chk_cuMemsetD2D8Async(void)
{
    cuMemsetD2D8Async_params p = {DST, 256, 0xab, 100, 3, STREAM};
    EXPECT(cuMemsetD2D8Async, &p, ACCESS_AT_ENTER, .key = DST, .size = 612);
}

static void chk_cuMemsetD2D8Async_ptsz(void)
{
    cuMemsetD2D8Async_ptsz_params p = {DST, 256, 0xab, 100, 3, STREAM};
    EXPECT(cuMemsetD2D8Async_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 612);
}

/* 4 rows of 60 two-byte elements, 256 apart: 3 * 256 + 120. */
static void chk_cuMemsetD2D16_v2(void)
{
    cuMemsetD2D16_v2_params p = {DST, 256, 0xabcd, 60, 4};
    EXPECT(cuMemsetD2D16_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 3 * 256 + 120);
    p.Width = 0;
    EXPECT_NOTHING(cuMemsetD2D16_v2, &p);
}

static void chk_cuMemsetD2D16_v2_ptds(void)
{
    cuMemsetD2D16_v2_ptds_params p = {DST, 256, 0xabcd, 60, 4};
    EXPECT(cuMemsetD2D16_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 888);
}

static void chk_cuMemsetD2D16Async(void)
{
    cuMemsetD2D16Async_params p = {DST, 256, 0xabcd, 60, 4, STREAM};
    EXPECT(cuMemsetD2D16Async, &p, ACCESS_AT_ENTER, .key = DST, .size = 888);
}

static void chk_cuMemsetD2D16Async_ptsz(void)
{
    cuMemsetD2D16Async_ptsz_params p = {DST, 256, 0xabcd, 60, 4, STREAM};
    EXPECT(cuMemsetD2D16Async_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 888);
}

/* 4 rows of 100 four-byte elements, 512 apart: 3 * 512 + 400. */
static void chk_cuMemsetD2D32_v2(void)
{
    cuMemsetD2D32_v2_params p = {DST, 512, 0xdeadbeef, 100, 4};
    EXPECT(cuMemsetD2D32_v2, &p, ACCESS_AT_ENTER, .key = DST, .size = 3 * 512 + 400);
    p.dstDevice = 0;
    EXPECT_NOTHING(cuMemsetD2D32_v2, &p);
}

static void chk_cuMemsetD2D32_v2_ptds(void)
{
    cuMemsetD2D32_v2_ptds_params p = {DST, 512, 0xdeadbeef, 100, 4};
    EXPECT(cuMemsetD2D32_v2_ptds, &p, ACCESS_AT_ENTER, .key = DST, .size = 1936);
}

static void chk_cuMemsetD2D32Async(void)
{
    cuMemsetD2D32Async_params p = {DST, 512, 0xdeadbeef, 100, 4, STREAM};
    EXPECT(cuMemsetD2D32Async, &p, ACCESS_AT_ENTER, .key = DST, .size = 1936);
}

static void chk_cuMemsetD2D32Async_ptsz(void)
{
    cuMemsetD2D32Async_ptsz_params p = {DST, 512, 0xdeadbeef, 100, 4, STREAM};
    EXPECT(cuMemsetD2D32Async_ptsz, &p, ACCESS_AT_ENTER, .key = DST, .size = 1936);
}

/* ---- graphs' control calls: decoded at the exit of a call that built or ran
 * something, at the entry of a destroy ---- */

#define CAP_STREAM 0x5eed00ULL
#define GRAPH 0x6000ULL
#define EXEC 0xe000ULL

static void chk_cuStreamBeginCapture(void)
{
    cuStreamBeginCapture_params p = {(CUstream)CAP_STREAM};
    EXPECT(cuStreamBeginCapture, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_BEGIN), .aux = CAP_STREAM);
}

static void chk_cuStreamBeginCapture_ptsz(void)
{
    cuStreamBeginCapture_ptsz_params p = {(CUstream)0xabc000};
    EXPECT(cuStreamBeginCapture_ptsz, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_BEGIN), .aux = 0xabc000);
}

static void chk_cuStreamBeginCapture_v2(void)
{
    cuStreamBeginCapture_v2_params p = {(CUstream)CAP_STREAM, CU_STREAM_CAPTURE_MODE_GLOBAL};
    EXPECT(cuStreamBeginCapture_v2, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_BEGIN), .aux = CAP_STREAM);
}

static void chk_cuStreamBeginCapture_v2_ptsz(void)
{
    cuStreamBeginCapture_v2_ptsz_params p = {(CUstream)0xabc000, CU_STREAM_CAPTURE_MODE_RELAXED};
    EXPECT(cuStreamBeginCapture_v2_ptsz, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_BEGIN), .aux = 0xabc000);
}

static void chk_cuStreamBeginCaptureToGraph(void)
{
    cuStreamBeginCaptureToGraph_params p = {
        (CUstream)CAP_STREAM, (CUgraph)GRAPH, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL};
    EXPECT(cuStreamBeginCaptureToGraph, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_BEGIN),
           .aux = CAP_STREAM);
}

static void chk_cuStreamBeginCaptureToGraph_ptsz(void)
{
    cuStreamBeginCaptureToGraph_ptsz_params p = {
        (CUstream)0xabc000, (CUgraph)GRAPH, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
    EXPECT(cuStreamBeginCaptureToGraph_ptsz, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_BEGIN),
           .aux = 0xabc000);
}

static void chk_cuStreamEndCapture(void)
{
    CUgraph g = (CUgraph)GRAPH;
    cuStreamEndCapture_params p = {(CUstream)CAP_STREAM, &g};
    EXPECT(cuStreamEndCapture, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_END), .key = GRAPH,
           .aux = CAP_STREAM);
    g = NULL; /* an invalidated capture gives no graph */
    EXPECT(cuStreamEndCapture, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_END), .aux = CAP_STREAM);
    g = (CUgraph)GRAPH;
    p.phGraph = NULL; /* no output: the capture still ends */
    EXPECT(cuStreamEndCapture, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_END), .aux = CAP_STREAM);
}

static void chk_cuStreamEndCapture_ptsz(void)
{
    CUgraph g = (CUgraph)0x6800;
    cuStreamEndCapture_ptsz_params p = {(CUstream)0xabc000, &g};
    EXPECT(cuStreamEndCapture_ptsz, &p, CONTROL_AT_EXIT(GL_EV_CAPTURE_END), .key = 0x6800,
           .aux = 0xabc000);
}

static void chk_cuGraphInstantiate(void)
{
    CUgraphExec e = (CUgraphExec)EXEC;
    char log[16];
    cuGraphInstantiate_params p = {&e, (CUgraph)GRAPH, NULL, log, sizeof log};
    EXPECT(cuGraphInstantiate, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE), .key = EXEC,
           .aux = GRAPH);
    p.phGraphExec = NULL;
    EXPECT_NOTHING(cuGraphInstantiate, &p);
}

static void chk_cuGraphInstantiate_v2(void)
{
    CUgraphExec e = (CUgraphExec)0xe800;
    cuGraphInstantiate_v2_params p = {&e, (CUgraph)GRAPH, NULL, NULL, 0};
    EXPECT(cuGraphInstantiate_v2, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE), .key = 0xe800,
           .aux = GRAPH);
    p.phGraphExec = NULL;
    EXPECT_NOTHING(cuGraphInstantiate_v2, &p);
}

static void chk_cuGraphInstantiateWithFlags(void)
{
    CUgraphExec e = (CUgraphExec)EXEC;
    cuGraphInstantiateWithFlags_params p = {&e, (CUgraph)GRAPH,
                                            CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH};
    EXPECT(cuGraphInstantiateWithFlags, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE), .key = EXEC,
           .aux = GRAPH, .size = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    EXPECT(cuGraphInstantiateWithFlags, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE), .key = EXEC,
           .aux = GRAPH, .size = CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
    p.phGraphExec = NULL;
    EXPECT_NOTHING(cuGraphInstantiateWithFlags, &p);
}

static void chk_cuGraphInstantiateWithParams(void)
{
    CUgraphExec e = (CUgraphExec)EXEC;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip;
    memset(&ip, 0, sizeof ip);
    ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
               CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    ip.hUploadStream = (CUstream)CAP_STREAM;
    cuGraphInstantiateWithParams_params p = {&e, (CUgraph)GRAPH, &ip};
    EXPECT(cuGraphInstantiateWithParams, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE), .key = EXEC,
           .aux = GRAPH,
           .size = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                   CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
    p.instantiateParams = NULL; /* no parameters: no flags */
    EXPECT(cuGraphInstantiateWithParams, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE), .key = EXEC,
           .aux = GRAPH);
    p.phGraphExec = NULL;
    EXPECT_NOTHING(cuGraphInstantiateWithParams, &p);
}

static void chk_cuGraphInstantiateWithParams_ptsz(void)
{
    CUgraphExec e = (CUgraphExec)0xe800;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip;
    memset(&ip, 0, sizeof ip);
    ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    cuGraphInstantiateWithParams_ptsz_params p = {&e, (CUgraph)0x6800, &ip};
    EXPECT(cuGraphInstantiateWithParams_ptsz, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_INSTANTIATE),
           .key = 0xe800, .aux = 0x6800, .size = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    p.phGraphExec = NULL;
    EXPECT_NOTHING(cuGraphInstantiateWithParams_ptsz, &p);
}

static void chk_cuGraphLaunch(void)
{
    cuGraphLaunch_params p = {(CUgraphExec)EXEC, (CUstream)CAP_STREAM};
    EXPECT(cuGraphLaunch, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_LAUNCH), .key = EXEC, .aux = CAP_STREAM);
}

static void chk_cuGraphLaunch_ptsz(void)
{
    cuGraphLaunch_ptsz_params p = {(CUgraphExec)0xe800, (CUstream)0xabc000};
    EXPECT(cuGraphLaunch_ptsz, &p, CONTROL_AT_EXIT(GL_EV_GRAPH_LAUNCH), .key = 0xe800,
           .aux = 0xabc000);
}

static void chk_cuGraphDestroy(void)
{
    cuGraphDestroy_params p = {(CUgraph)GRAPH};
    EXPECT(cuGraphDestroy, &p, CONTROL_AT_ENTER(GL_EV_GRAPH_DESTROY), .key = GRAPH);
}

static void chk_cuGraphExecDestroy(void)
{
    cuGraphExecDestroy_params p = {(CUgraphExec)EXEC};
    EXPECT(cuGraphExecDestroy, &p, CONTROL_AT_ENTER(GL_EV_GRAPH_EXEC_DESTROY), .key = EXEC);
}

/* A capture's forks and joins decode only while a router is armed (a
 * capture in progress), and at the exit.  (EXPECT's handler checks reset the
 * pipeline, and with it the routers' count.) */
#define FORK_JOIN(name, params, type, event, stream, flags)                                        \
    do {                                                                                           \
        tu_pipeline_reset();                                                                       \
        EXPECT_NOTHING(name, params);                                                              \
        gl_dispatch_arm(1);                                                                        \
        struct gl_event entry_ev = {0};                                                            \
        ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_##name, GL_SITE_ENTER, params, &entry_ev));   \
        EXPECT(name, params, CONTROL_AT_EXIT(type), .key = (event), .aux = (stream),               \
               .size = (flags));                                                                   \
        tu_pipeline_reset();                                                                       \
    } while (0)

static void chk_cuEventRecord(void)
{
    cuEventRecord_params p = {(CUevent)0xe7000, (CUstream)CAP_STREAM};
    FORK_JOIN(cuEventRecord, &p, GL_EV_EVENT_RECORD, 0xe7000, CAP_STREAM, 0);
}

static void chk_cuEventRecord_ptsz(void)
{
    cuEventRecord_ptsz_params p = {(CUevent)0xe7000, (CUstream)0xabc000};
    FORK_JOIN(cuEventRecord_ptsz, &p, GL_EV_EVENT_RECORD, 0xe7000, 0xabc000, 0);
}

static void chk_cuEventRecordWithFlags(void)
{
    cuEventRecordWithFlags_params p = {(CUevent)0xe7000, (CUstream)CAP_STREAM,
                                       CU_EVENT_RECORD_EXTERNAL};
    FORK_JOIN(cuEventRecordWithFlags, &p, GL_EV_EVENT_RECORD, 0xe7000, CAP_STREAM,
              CU_EVENT_RECORD_EXTERNAL);
}

static void chk_cuEventRecordWithFlags_ptsz(void)
{
    cuEventRecordWithFlags_ptsz_params p = {(CUevent)0xe7000, (CUstream)0xabc000, 0};
    FORK_JOIN(cuEventRecordWithFlags_ptsz, &p, GL_EV_EVENT_RECORD, 0xe7000, 0xabc000, 0);
}

static void chk_cuStreamWaitEvent(void)
{
    cuStreamWaitEvent_params p = {(CUstream)0x5b000, (CUevent)0xe7000, 0};
    FORK_JOIN(cuStreamWaitEvent, &p, GL_EV_STREAM_WAIT, 0xe7000, 0x5b000, 0);
}

static void chk_cuStreamWaitEvent_ptsz(void)
{
    cuStreamWaitEvent_ptsz_params p = {(CUstream)0xabc000, (CUevent)0xe7000,
                                       CU_EVENT_WAIT_EXTERNAL};
    FORK_JOIN(cuStreamWaitEvent_ptsz, &p, GL_EV_STREAM_WAIT, 0xe7000, 0xabc000,
              CU_EVENT_WAIT_EXTERNAL);
}

/* Every entry point of driver_api.def must have its checker here: a new line in
 * the .def without one fails test_every_entry_point. */
static void (*const checkers[GL_API_COUNT])(void) = {
    [GL_API_cuMemAlloc] = chk_cuMemAlloc,
    [GL_API_cuMemAlloc_v2] = chk_cuMemAlloc_v2,
    [GL_API_cuMemAllocPitch] = chk_cuMemAllocPitch,
    [GL_API_cuMemAllocPitch_v2] = chk_cuMemAllocPitch_v2,
    [GL_API_cuMemAllocManaged] = chk_cuMemAllocManaged,
    [GL_API_cuMemAllocHost] = chk_cuMemAllocHost,
    [GL_API_cuMemAllocHost_v2] = chk_cuMemAllocHost_v2,
    [GL_API_cuMemHostAlloc] = chk_cuMemHostAlloc,
    [GL_API_cuMemHostAlloc_v2] = chk_cuMemHostAlloc_v2,
    [GL_API_cuMemHostRegister] = chk_cuMemHostRegister,
    [GL_API_cuMemHostRegister_v2] = chk_cuMemHostRegister_v2,
    [GL_API_cuMemAllocAsync] = chk_cuMemAllocAsync,
    [GL_API_cuMemAllocAsync_ptsz] = chk_cuMemAllocAsync_ptsz,
    [GL_API_cuMemAllocFromPoolAsync] = chk_cuMemAllocFromPoolAsync,
    [GL_API_cuMemAllocFromPoolAsync_ptsz] = chk_cuMemAllocFromPoolAsync_ptsz,
    [GL_API_cuMemCreate] = chk_cuMemCreate,
    [GL_API_cuMemImportFromShareableHandle] = chk_cuMemImportFromShareableHandle,
    [GL_API_cuMemRetainAllocationHandle] = chk_cuMemRetainAllocationHandle,
    [GL_API_cuMemRelease] = chk_cuMemRelease,
    [GL_API_cuMemMap] = chk_cuMemMap,
    [GL_API_cuMemUnmap] = chk_cuMemUnmap,
    [GL_API_cuArrayCreate] = chk_cuArrayCreate,
    [GL_API_cuArrayCreate_v2] = chk_cuArrayCreate_v2,
    [GL_API_cuArray3DCreate] = chk_cuArray3DCreate,
    [GL_API_cuArray3DCreate_v2] = chk_cuArray3DCreate_v2,
    [GL_API_cuMipmappedArrayCreate] = chk_cuMipmappedArrayCreate,
    [GL_API_cuIpcOpenMemHandle] = chk_cuIpcOpenMemHandle,
    [GL_API_cuIpcOpenMemHandle_v2] = chk_cuIpcOpenMemHandle_v2,
    [GL_API_cuMemPoolImportPointer] = chk_cuMemPoolImportPointer,
    [GL_API_cuGraphAddMemAllocNode] = chk_cuGraphAddMemAllocNode,
    [GL_API_cuGraphAddMemFreeNode] = chk_cuGraphAddMemFreeNode,
    [GL_API_cuGraphAddNode] = chk_cuGraphAddNode,
    [GL_API_cuGraphAddNode_v2] = chk_cuGraphAddNode_v2,
    [GL_API_cuMemFree] = chk_cuMemFree,
    [GL_API_cuMemFree_v2] = chk_cuMemFree_v2,
    [GL_API_cuMemFreeHost] = chk_cuMemFreeHost,
    [GL_API_cuMemHostUnregister] = chk_cuMemHostUnregister,
    [GL_API_cuMemFreeAsync] = chk_cuMemFreeAsync,
    [GL_API_cuMemFreeAsync_ptsz] = chk_cuMemFreeAsync_ptsz,
    [GL_API_cuArrayDestroy] = chk_cuArrayDestroy,
    [GL_API_cuMipmappedArrayDestroy] = chk_cuMipmappedArrayDestroy,
    [GL_API_cuIpcCloseMemHandle] = chk_cuIpcCloseMemHandle,
    [GL_API_cuMemPoolCreate] = chk_cuMemPoolCreate,
    [GL_API_cuMemPoolDestroy] = chk_cuMemPoolDestroy,
    [GL_API_cuMemcpy] = chk_cuMemcpy,
    [GL_API_cuMemcpy_ptds] = chk_cuMemcpy_ptds,
    [GL_API_cuMemcpyAsync] = chk_cuMemcpyAsync,
    [GL_API_cuMemcpyAsync_ptsz] = chk_cuMemcpyAsync_ptsz,
    [GL_API_cuMemcpyPeer] = chk_cuMemcpyPeer,
    [GL_API_cuMemcpyPeer_ptds] = chk_cuMemcpyPeer_ptds,
    [GL_API_cuMemcpyPeerAsync] = chk_cuMemcpyPeerAsync,
    [GL_API_cuMemcpyPeerAsync_ptsz] = chk_cuMemcpyPeerAsync_ptsz,
    [GL_API_cuMemcpyHtoD_v2] = chk_cuMemcpyHtoD_v2,
    [GL_API_cuMemcpyHtoD_v2_ptds] = chk_cuMemcpyHtoD_v2_ptds,
    [GL_API_cuMemcpyHtoDAsync_v2] = chk_cuMemcpyHtoDAsync_v2,
    [GL_API_cuMemcpyHtoDAsync_v2_ptsz] = chk_cuMemcpyHtoDAsync_v2_ptsz,
    [GL_API_cuMemcpyDtoH_v2] = chk_cuMemcpyDtoH_v2,
    [GL_API_cuMemcpyDtoH_v2_ptds] = chk_cuMemcpyDtoH_v2_ptds,
    [GL_API_cuMemcpyDtoHAsync_v2] = chk_cuMemcpyDtoHAsync_v2,
    [GL_API_cuMemcpyDtoHAsync_v2_ptsz] = chk_cuMemcpyDtoHAsync_v2_ptsz,
    [GL_API_cuMemcpyDtoD_v2] = chk_cuMemcpyDtoD_v2,
    [GL_API_cuMemcpyDtoD_v2_ptds] = chk_cuMemcpyDtoD_v2_ptds,
    [GL_API_cuMemcpyDtoDAsync_v2] = chk_cuMemcpyDtoDAsync_v2,
    [GL_API_cuMemcpyDtoDAsync_v2_ptsz] = chk_cuMemcpyDtoDAsync_v2_ptsz,
    [GL_API_cuMemcpyDtoA_v2] = chk_cuMemcpyDtoA_v2,
    [GL_API_cuMemcpyDtoA_v2_ptds] = chk_cuMemcpyDtoA_v2_ptds,
    [GL_API_cuMemcpyAtoD_v2] = chk_cuMemcpyAtoD_v2,
    [GL_API_cuMemcpyAtoD_v2_ptds] = chk_cuMemcpyAtoD_v2_ptds,
    [GL_API_cuMemcpy2D_v2] = chk_cuMemcpy2D_v2,
    [GL_API_cuMemcpy2D_v2_ptds] = chk_cuMemcpy2D_v2_ptds,
    [GL_API_cuMemcpy2DUnaligned_v2] = chk_cuMemcpy2DUnaligned_v2,
    [GL_API_cuMemcpy2DUnaligned_v2_ptds] = chk_cuMemcpy2DUnaligned_v2_ptds,
    [GL_API_cuMemcpy2DAsync_v2] = chk_cuMemcpy2DAsync_v2,
    [GL_API_cuMemcpy2DAsync_v2_ptsz] = chk_cuMemcpy2DAsync_v2_ptsz,
    [GL_API_cuMemcpy3D_v2] = chk_cuMemcpy3D_v2,
    [GL_API_cuMemcpy3D_v2_ptds] = chk_cuMemcpy3D_v2_ptds,
    [GL_API_cuMemcpy3DAsync_v2] = chk_cuMemcpy3DAsync_v2,
    [GL_API_cuMemcpy3DAsync_v2_ptsz] = chk_cuMemcpy3DAsync_v2_ptsz,
    [GL_API_cuMemcpy3DPeer] = chk_cuMemcpy3DPeer,
    [GL_API_cuMemcpy3DPeer_ptds] = chk_cuMemcpy3DPeer_ptds,
    [GL_API_cuMemcpy3DPeerAsync] = chk_cuMemcpy3DPeerAsync,
    [GL_API_cuMemcpy3DPeerAsync_ptsz] = chk_cuMemcpy3DPeerAsync_ptsz,
    [GL_API_cuMemsetD8_v2] = chk_cuMemsetD8_v2,
    [GL_API_cuMemsetD8_v2_ptds] = chk_cuMemsetD8_v2_ptds,
    [GL_API_cuMemsetD8Async] = chk_cuMemsetD8Async,
    [GL_API_cuMemsetD8Async_ptsz] = chk_cuMemsetD8Async_ptsz,
    [GL_API_cuMemsetD16_v2] = chk_cuMemsetD16_v2,
    [GL_API_cuMemsetD16_v2_ptds] = chk_cuMemsetD16_v2_ptds,
    [GL_API_cuMemsetD16Async] = chk_cuMemsetD16Async,
    [GL_API_cuMemsetD16Async_ptsz] = chk_cuMemsetD16Async_ptsz,
    [GL_API_cuMemsetD32_v2] = chk_cuMemsetD32_v2,
    [GL_API_cuMemsetD32_v2_ptds] = chk_cuMemsetD32_v2_ptds,
    [GL_API_cuMemsetD32Async] = chk_cuMemsetD32Async,
    [GL_API_cuMemsetD32Async_ptsz] = chk_cuMemsetD32Async_ptsz,
    [GL_API_cuMemsetD2D8_v2] = chk_cuMemsetD2D8_v2,
    [GL_API_cuMemsetD2D8_v2_ptds] = chk_cuMemsetD2D8_v2_ptds,
    [GL_API_cuMemsetD2D8Async] = chk_cuMemsetD2D8Async,
    [GL_API_cuMemsetD2D8Async_ptsz] = chk_cuMemsetD2D8Async_ptsz,
    [GL_API_cuMemsetD2D16_v2] = chk_cuMemsetD2D16_v2,
    [GL_API_cuMemsetD2D16_v2_ptds] = chk_cuMemsetD2D16_v2_ptds,
    [GL_API_cuMemsetD2D16Async] = chk_cuMemsetD2D16Async,
    [GL_API_cuMemsetD2D16Async_ptsz] = chk_cuMemsetD2D16Async_ptsz,
    [GL_API_cuMemsetD2D32_v2] = chk_cuMemsetD2D32_v2,
    [GL_API_cuMemsetD2D32_v2_ptds] = chk_cuMemsetD2D32_v2_ptds,
    [GL_API_cuMemsetD2D32Async] = chk_cuMemsetD2D32Async,
    [GL_API_cuMemsetD2D32Async_ptsz] = chk_cuMemsetD2D32Async_ptsz,
    [GL_API_cuStreamBeginCapture] = chk_cuStreamBeginCapture,
    [GL_API_cuStreamBeginCapture_ptsz] = chk_cuStreamBeginCapture_ptsz,
    [GL_API_cuStreamBeginCapture_v2] = chk_cuStreamBeginCapture_v2,
    [GL_API_cuStreamBeginCapture_v2_ptsz] = chk_cuStreamBeginCapture_v2_ptsz,
    [GL_API_cuStreamBeginCaptureToGraph] = chk_cuStreamBeginCaptureToGraph,
    [GL_API_cuStreamBeginCaptureToGraph_ptsz] = chk_cuStreamBeginCaptureToGraph_ptsz,
    [GL_API_cuStreamEndCapture] = chk_cuStreamEndCapture,
    [GL_API_cuStreamEndCapture_ptsz] = chk_cuStreamEndCapture_ptsz,
    [GL_API_cuGraphInstantiate] = chk_cuGraphInstantiate,
    [GL_API_cuGraphInstantiate_v2] = chk_cuGraphInstantiate_v2,
    [GL_API_cuGraphInstantiateWithFlags] = chk_cuGraphInstantiateWithFlags,
    [GL_API_cuGraphInstantiateWithParams] = chk_cuGraphInstantiateWithParams,
    [GL_API_cuGraphInstantiateWithParams_ptsz] = chk_cuGraphInstantiateWithParams_ptsz,
    [GL_API_cuGraphLaunch] = chk_cuGraphLaunch,
    [GL_API_cuGraphLaunch_ptsz] = chk_cuGraphLaunch_ptsz,
    [GL_API_cuGraphDestroy] = chk_cuGraphDestroy,
    [GL_API_cuGraphExecDestroy] = chk_cuGraphExecDestroy,
    [GL_API_cuEventRecord] = chk_cuEventRecord,
    [GL_API_cuEventRecord_ptsz] = chk_cuEventRecord_ptsz,
    [GL_API_cuEventRecordWithFlags] = chk_cuEventRecordWithFlags,
    [GL_API_cuEventRecordWithFlags_ptsz] = chk_cuEventRecordWithFlags_ptsz,
    [GL_API_cuStreamWaitEvent] = chk_cuStreamWaitEvent,
    [GL_API_cuStreamWaitEvent_ptsz] = chk_cuStreamWaitEvent_ptsz,
};

/* Loop test: _i is the API id. */
/* The device and host allocations say at their entry that their exit makes
 * an allocation, so that its lines are warmed while the driver runs. */
START_TEST(test_alloc_entry_hint)
{
    CUdeviceptr d = 0;
    cuMemAlloc_v2_params a = {.dptr = &d, .bytesize = 64};
    cuMemAllocAsync_params as = {.dptr = &d, .bytesize = 64};
    struct gl_event ev = {0};
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, GL_SITE_ENTER, &a, &ev));
    ck_assert_uint_eq(ev.type, GL_EV_ALLOC);
    memset(&ev, 0, sizeof ev);
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, GL_SITE_ENTER, &as, &ev));
    ck_assert_uint_eq(ev.type, GL_EV_ALLOC);
}
END_TEST

START_TEST(test_every_entry_point)
{
    unsigned api = (unsigned)_i;
    ck_assert_msg(checkers[api] != NULL, "no decode test for %s (driver_api.def)",
                  gl_api_name(api));
    checkers[api]();
}
END_TEST

/* ---- failed allocations ----
 *
 * With GL_EVF_FAILED set before decoding (the handler does so for a call that
 * returned CUDA_ERROR_OUT_OF_MEMORY), an allocation decodes at exit to what was
 * asked for: key 0 (the outputs hold nothing), the requested size, kind and
 * device, the flag kept. */

static void expect_failed(uint32_t cbid, const void *params, struct want w, const char *what,
                          int line)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.flags = GL_EVF_FAILED;
    ck_assert_msg(gl_decode(cbid, GL_SITE_EXIT, params, &ev), "%s (line %d): nothing decoded", what,
                  line);
    uint8_t type = w.type ? w.type : GL_EV_ALLOC;
    ck_assert_msg(ev.type == type && ev.key == 0 && ev.size == w.size && ev.kind == w.kind &&
                      ev.device == w.device && ev.aux == w.aux &&
                      ev.flags == (GL_EVF_FAILED | w.flags) &&
                      ev.api == gl_decode_api_of_cbid(cbid),
                  "%s (line %d): type %u key 0x%llx size %llu kind %u device %d aux 0x%llx flags "
                  "0x%x",
                  what, line, ev.type, (unsigned long long)ev.key, (unsigned long long)ev.size,
                  ev.kind, ev.device, (unsigned long long)ev.aux, ev.flags);
    memset(&ev, 0, sizeof ev);
    ev.flags = GL_EVF_FAILED;
    ck_assert_msg(!gl_decode(cbid, GL_SITE_ENTER, params, &ev), "%s (line %d): decoded at entry",
                  what, line);
}

#define EXPECT_FAILED(name, params, ...)                                                           \
    expect_failed(CUPTI_DRIVER_TRACE_CBID_##name, (params), (struct want){__VA_ARGS__}, #name,     \
                  __LINE__)

START_TEST(test_failed_alloc)
{
    /* The output still holds what it held before the call: 0, or garbage. */
    CUdeviceptr d = 0;
    cuMemAlloc_v2_params a = {&d, (size_t)80 << 30};
    EXPECT_FAILED(cuMemAlloc_v2, &a, .kind = GL_MEM_DEVICE, .size = (uint64_t)80 << 30,
                  .device = FROM_CTX);
    d = 0xdeadbeef000ULL;
    EXPECT_FAILED(cuMemAlloc_v2, &a, .kind = GL_MEM_DEVICE, .size = (uint64_t)80 << 30,
                  .device = FROM_CTX);
    a.dptr = NULL; /* no output at all: nothing to say which call it was */
    struct gl_event ev = {.flags = GL_EVF_FAILED};
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, GL_SITE_EXIT, &a, &ev));

    CUdeviceptr_v1 d1 = 0;
    cuMemAlloc_params a1 = {&d1, 4096};
    EXPECT_FAILED(cuMemAlloc, &a1, .kind = GL_MEM_DEVICE, .size = 4096, .device = FROM_CTX);

    CUdeviceptr m = 0;
    cuMemAllocManaged_params mp = {&m, 12345, CU_MEM_ATTACH_GLOBAL};
    EXPECT_FAILED(cuMemAllocManaged, &mp, .kind = GL_MEM_MANAGED, .size = 12345,
                  .device = FROM_CTX);

    void *h = NULL;
    cuMemAllocHost_v2_params hp = {&h, (size_t)5 << 30};
    EXPECT_FAILED(cuMemAllocHost_v2, &hp, .kind = GL_MEM_HOST_PINNED, .size = (uint64_t)5 << 30,
                  .device = -1);
    cuMemHostAlloc_params ha = {&h, 8192, CU_MEMHOSTALLOC_PORTABLE};
    EXPECT_FAILED(cuMemHostAlloc, &ha, .kind = GL_MEM_HOST_PINNED, .size = 8192, .device = -1);
    /* A failed registration: the request's address is not kept either. */
    cuMemHostRegister_v2_params hr = {(void *)0x7ffe00100000ULL, 131072, 0};
    EXPECT_FAILED(cuMemHostRegister_v2, &hr, .kind = GL_MEM_HOST_REGISTERED, .size = 131072,
                  .device = -1);

    /* Pitched: no pitch came back, so the request is width x height. */
    CUdeviceptr pd = 0;
    size_t pitch = 0;
    cuMemAllocPitch_v2_params pp = {&pd, &pitch, 1000, 3000, 16};
    EXPECT_FAILED(cuMemAllocPitch_v2, &pp, .kind = GL_MEM_PITCH, .size = 3000000,
                  .device = FROM_CTX);
    pitch = 1024; /* stale output is ignored too */
    EXPECT_FAILED(cuMemAllocPitch_v2, &pp, .kind = GL_MEM_PITCH, .size = 3000000,
                  .device = FROM_CTX);

    /* Stream-ordered: the stream is kept. */
    CUdeviceptr s = 0;
    cuMemAllocAsync_params sp = {&s, 2048, (CUstream)0x5eed00};
    EXPECT_FAILED(cuMemAllocAsync, &sp, .kind = GL_MEM_ASYNC, .size = 2048, .aux = 0x5eed00,
                  .device = FROM_CTX);
    cuMemAllocFromPoolAsync_params fp = {&s, 3000, (CUmemoryPool)0x9001, (CUstream)0xabc000};
    EXPECT_FAILED(cuMemAllocFromPoolAsync, &fp, .kind = GL_MEM_ASYNC, .size = 3000, .aux = 0xabc000,
                  .device = FROM_CTX);

    /* A handle that was never made: key 0, not a VMM key of handle 0. */
    CUmemGenericAllocationHandle vh = 0;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 3;
    cuMemCreate_params cp = {&vh, (size_t)2 << 20, &prop, 0};
    EXPECT_FAILED(cuMemCreate, &cp, .kind = GL_MEM_VMM, .size = 2 << 20, .device = 3);

    /* Arrays: the size from the descriptor. */
    CUarray arr = NULL;
    CUDA_ARRAY_DESCRIPTOR ad = {64, 32, CU_AD_FORMAT_UNSIGNED_INT8, 4};
    cuArrayCreate_v2_params ap = {&arr, &ad};
    EXPECT_FAILED(cuArrayCreate_v2, &ap, .kind = GL_MEM_ARRAY, .size = 64 * 32 * 4,
                  .device = FROM_CTX);

    /* Graph memory: the node's request. */
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = 1;
    np.bytesize = 1 << 16;
    CUgraphNode node = NULL;
    cuGraphAddMemAllocNode_params gp = {&node, (CUgraph)0x6000, NULL, 0, &np};
    EXPECT_FAILED(cuGraphAddMemAllocNode, &gp, .type = GL_EV_GRAPH_NODE_ALLOC, .kind = GL_MEM_GRAPH,
                  .size = 1 << 16, .device = 1, .aux = 0x6000);

    /* Releases and copies are not allocations: nothing at exit. */
    cuMemFree_v2_params fr = {0x7f0000200000ULL};
    ev = (struct gl_event){.flags = GL_EVF_FAILED};
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, GL_SITE_EXIT, &fr, &ev));
    cuMemcpy_params cpy = {DST, SRC, 64};
    ev = (struct gl_event){.flags = GL_EVF_FAILED};
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, GL_SITE_EXIT, &cpy, &ev));
}
END_TEST

/* ---- the tables ---- */

static const struct {
    const char *name;
    uint32_t cbid;
    unsigned api;
} def[] = {
#define GL_DRIVER_API(name, decoder) {#name, CUPTI_DRIVER_TRACE_CBID_##name, GL_API_##name},
#include "event/driver_api.def"
#undef GL_DRIVER_API
};
#define NDEF GL_ARRAY_SIZE(def)

START_TEST(test_tables)
{
    ck_assert_uint_eq(NDEF, GL_API_COUNT - 1);
    for (size_t i = 0; i < NDEF; i++) {
        ck_assert_uint_eq(def[i].api, i + 1); /* the .def's order is the enum's */
        ck_assert_uint_eq(gl_decode_api_of_cbid(def[i].cbid), def[i].api);
        ck_assert_uint_eq(gl_decode_cbid_of_api(def[i].api), def[i].cbid);
        ck_assert_str_eq(gl_api_name(def[i].api), def[i].name);
        for (size_t j = 0; j < i; j++)
            ck_assert_uint_ne(def[i].cbid, def[j].cbid);
    }
    ck_assert_str_eq(gl_api_name(GL_API_NONE), "?");
    ck_assert_str_eq(gl_api_name(GL_API_COUNT), "?");
    ck_assert_uint_eq(gl_decode_cbid_of_api(GL_API_COUNT), 0);
    ck_assert_uint_eq(gl_decode_api_of_cbid(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), GL_API_NONE);
    ck_assert_uint_eq(gl_decode_api_of_cbid(CUPTI_DRIVER_TRACE_CBID_SIZE), GL_API_NONE);
    ck_assert_uint_eq(gl_decode_api_of_cbid(0xffffffffu), GL_API_NONE);
}
END_TEST

START_TEST(test_untracked_calls)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    cuMemFree_v2_params p = {0x1000};
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, GL_SITE_ENTER, &p, &ev));
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, GL_SITE_EXIT, &p, &ev));
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_SIZE + 5, GL_SITE_ENTER, &p, &ev));
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, GL_SITE_ENTER, NULL, &ev));
    ck_assert_uint_eq(ev.type, GL_EV_NONE);
}
END_TEST

START_TEST(test_mem_kind_names)
{
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_DEVICE), "device memory");
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_HOST_PINNED), "pinned host memory");
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_VMM), "VMM physical memory");
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_NKINDS), "memory");
    for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
        ck_assert_ptr_nonnull(gl_mem_kind_name(k));
}
END_TEST

/* ---- array sizes ---- */

START_TEST(test_array_bytes)
{
    ck_assert_uint_eq(gl_decode_array_bytes(100, 100, 1, 1, CU_AD_FORMAT_FLOAT), 40000);
    ck_assert_uint_eq(gl_decode_array_bytes(100, 100, 0, 1, CU_AD_FORMAT_FLOAT), 40000);
    ck_assert_uint_eq(gl_decode_array_bytes(100, 100, 1, 4, CU_AD_FORMAT_FLOAT), 160000);
    ck_assert_uint_eq(gl_decode_array_bytes(10, 10, 10, 2, CU_AD_FORMAT_HALF), 4000);
    ck_assert_uint_eq(gl_decode_array_bytes(7, 0, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8), 7); /* 0 = 1 */
    ck_assert_uint_eq(gl_decode_array_bytes(0, 0, 0, 1, CU_AD_FORMAT_SIGNED_INT32), 4);
    /* BC1: 4 bits per texel, whatever the channel count. */
    ck_assert_uint_eq(gl_decode_array_bytes(64, 64, 1, 4, CU_AD_FORMAT_BC1_UNORM), 64 * 64 / 2);
    ck_assert_uint_eq(gl_decode_array_bytes(64, 64, 1, 1, CU_AD_FORMAT_BC1_UNORM), 64 * 64 / 2);
    ck_assert_uint_eq(gl_decode_array_bytes(4, 4, 1, 4, CU_AD_FORMAT_BC7_UNORM), 16);
    /* NV12: 12 bits per texel. */
    ck_assert_uint_eq(gl_decode_array_bytes(1920, 1080, 1, 3, CU_AD_FORMAT_NV12),
                      1920 * 1080 * 3 / 2);
    /* Packed formats carry their channels. */
    ck_assert_uint_eq(gl_decode_array_bytes(10, 10, 1, 4, CU_AD_FORMAT_UNORM_INT8X4), 400);
    ck_assert_uint_eq(gl_decode_array_bytes(10, 10, 1, 1, CU_AD_FORMAT_UNORM_INT16X4), 800);
    /* Partial bytes round up. */
    ck_assert_uint_eq(gl_decode_array_bytes(3, 1, 1, 1, CU_AD_FORMAT_BC4_UNORM), 2);
    ck_assert_uint_eq(gl_decode_array_bytes(1, 1, 1, 1, CU_AD_FORMAT_NV12), 2);
    /* Unknown formats. */
    ck_assert_uint_eq(gl_decode_array_bytes(100, 100, 1, 1, 0x7777), 0);
    ck_assert_uint_eq(gl_decode_array_bytes(100, 100, 1, 1, 0), 0);
}
END_TEST

static void handler_setup(void)
{
    gl_tracker_init();
    tu_pipeline_reset();
    gl_call_set_stacks(0);
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
}

static Suite *decode_suite(void)
{
    Suite *s = suite_create("decode");
    TCase *tc = tcase_create("decode");
    tcase_add_checked_fixture(tc, handler_setup, NULL);
    tcase_add_loop_test(tc, test_every_entry_point, 1, GL_API_COUNT);
    tcase_add_test(tc, test_tables);
    tcase_add_test(tc, test_alloc_entry_hint);
    tcase_add_test(tc, test_failed_alloc);
    tcase_add_test(tc, test_untracked_calls);
    tcase_add_test(tc, test_mem_kind_names);
    tcase_add_test(tc, test_array_bytes);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(decode_suite)
