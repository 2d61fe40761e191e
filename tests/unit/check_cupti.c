/* SPDX-License-Identifier: MIT */
/* lib/observe/cupti.h: gl_cupti_callback driven by hand-built CUPTI callback
 * data, as CUPTI calls it around each driver call; results read back through the
 * tracker. */
#include <check.h>
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "runtime.h"
#include "event/api.h"
#include "observe/alternate.h"
#include "observe/call.h"
#include "observe/cupti.h"
#include "observe/contexts.h"
#include "track/graphs.h"
#include "stack/modules.h"
#include "stack/stack_capture.h"
#include "base/thread.h"
#include "base/tool.h"
#include "track/errors.h"
#include "track/live_ranges.h"
#include "track/quarantine.h"
#include "track/tracker.h"
#include "stack/unwind.h"

#define CTX_A ((CUcontext)(uintptr_t)0xc1000)
#define CTX_B ((CUcontext)(uintptr_t)0xc2000)

static int query_calls;

static int fake_device_of(uint64_t ctx)
{
    query_calls++;
    if (ctx == (uintptr_t)CTX_A)
        return 0;
    if (ctx == (uintptr_t)CTX_B)
        return 1;
    return -1;
}

static void setup(void)
{
    gl_tracker_init();
    tu_pipeline_reset();
    gl_contexts_component.reset();
    gl_contexts_set_query(fake_device_of);
    query_calls = 0;
    gl_call_set_stacks(0);
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
}

static void teardown(void)
{
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
    gl_contexts_set_query(NULL);
}

/* One driver call as CUPTI reports it: entry, then exit with rc.  The
 * correlation slot starts with garbage, as nothing promises it is zeroed. */
static void driver_call(CUpti_CallbackId cbid, const void *params, CUresult rc, CUcontext ctx)
{
    uint64_t corr = 0xdeadbeefULL;
    CUresult ret = (CUresult)-1; /* not yet returned at entry */
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.functionParams = params;
    cb.functionReturnValue = &ret;
    cb.correlationData = &corr;
    cb.context = ctx;
    cb.callbackSite = CUPTI_API_ENTER;
    cb.functionName = "cuSomething";
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
    ret = rc;
    cb.callbackSite = CUPTI_API_EXIT;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
}

static void resource_event(CUpti_CallbackId cbid, CUcontext ctx)
{
    CUpti_ResourceData rd;
    memset(&rd, 0, sizeof rd);
    rd.context = ctx;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

static void mem_alloc(CUdeviceptr addr, size_t size, CUresult rc, CUcontext ctx)
{
    CUdeviceptr out = addr;
    cuMemAlloc_v2_params p = {&out, size};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p, rc, ctx);
}

static void mem_free(CUdeviceptr addr, CUresult rc, CUcontext ctx)
{
    cuMemFree_v2_params p = {addr};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &p, rc, ctx);
}

START_TEST(test_alloc_then_free)
{
    mem_alloc(0x7f0000200000ULL, 1 << 20, CUDA_SUCCESS, CTX_A);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0000200000ULL, &b));
    ck_assert_uint_eq(b.size, 1 << 20);
    ck_assert_uint_eq(b.kind, GL_MEM_DEVICE);
    ck_assert_uint_eq(b.api, GL_API_cuMemAlloc_v2);
    ck_assert_uint_eq(b.ctx, (uintptr_t)CTX_A);
    ck_assert_int_eq(b.device, 0); /* from the context */
    ck_assert_uint_eq(b.tid, (uint32_t)syscall(SYS_gettid));
    ck_assert_uint_eq(b.stack, 0); /* stacks off */
    ck_assert_uint_eq(b.seq, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.live_bytes, 1 << 20);

    mem_free(0x7f0000200000ULL, CUDA_SUCCESS, CTX_A);
    ck_assert(!tu_live_block(0x7f0000200000ULL, NULL));
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
}
END_TEST

/* gpuleak_disable() on a thread: its allocations are recorded (frees must
 * still match them) but flagged never to be reported; other threads' are not. */
static void *alloc_on_other_thread(void *arg)
{
    (void)arg;
    mem_alloc(0x7f0000600000ULL, 64, CUDA_SUCCESS, CTX_A);
    return NULL;
}

START_TEST(test_disabled_thread_allocations_ignored)
{
    struct gl_thread *self = gl_thread_self();
    self->disabled = 1;
    mem_alloc(0x7f0000500000ULL, 4096, CUDA_SUCCESS, CTX_A);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_on_other_thread, NULL), 0);
    pthread_join(t, NULL);
    self->disabled = 0;
    mem_alloc(0x7f0000700000ULL, 32, CUDA_SUCCESS, CTX_A);

    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0000500000ULL, &b));
    ck_assert(b.flags & GL_BLK_IGNORED);
    ck_assert(tu_live_block(0x7f0000600000ULL, &b));
    ck_assert(!(b.flags & GL_BLK_IGNORED));
    ck_assert(tu_live_block(0x7f0000700000ULL, &b));
    ck_assert(!(b.flags & GL_BLK_IGNORED));
    /* Still a GPU allocation: counted, and its free is not an unknown one. */
    ck_assert_uint_eq(tu_tracker_stats().allocs, 3);
    mem_free(0x7f0000500000ULL, CUDA_SUCCESS, CTX_A);
    ck_assert_uint_eq(tu_tracker_stats().unknown_frees, 0);
}
END_TEST

START_TEST(test_failed_free_keeps_block)
{
    mem_alloc(0x7f0000400000ULL, 4096, CUDA_SUCCESS, CTX_A);
    mem_free(0x7f0000400000ULL, CUDA_ERROR_INVALID_VALUE, CTX_A);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0000400000ULL, &b));
    ck_assert_uint_eq(b.size, 4096);
    ck_assert_uint_eq(b.seq, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 0);
    ck_assert_uint_eq(s.live_bytes, 4096);
    ck_assert_uint_eq(s.live_blocks, 1);
    /* It can still be freed afterwards. */
    mem_free(0x7f0000400000ULL, CUDA_SUCCESS, CTX_A);
    ck_assert(!tu_live_block(0x7f0000400000ULL, NULL));
    ck_assert_uint_eq(tu_tracker_stats().frees, 1);
}
END_TEST

START_TEST(test_failed_alloc_records_nothing)
{
    mem_alloc(0x7f0000600000ULL, 4096, CUDA_ERROR_OUT_OF_MEMORY, CTX_A);
    mem_alloc(0x7f0000800000ULL, 4096, CUDA_ERROR_NOT_INITIALIZED, CTX_A);
    ck_assert(!tu_live_block(0x7f0000600000ULL, NULL));
    ck_assert(!tu_live_block(0x7f0000800000ULL, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 0);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

START_TEST(test_exit_without_return_value)
{
    /* No return value: the call cannot be known to have succeeded. */
    CUdeviceptr out = 0x7f0000a00000ULL;
    cuMemAlloc_v2_params p = {&out, 64};
    uint64_t corr = 0;
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.functionParams = &p;
    cb.correlationData = &corr;
    cb.context = CTX_A;
    cb.callbackSite = CUPTI_API_ENTER;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &cb);
    cb.callbackSite = CUPTI_API_EXIT;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &cb);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
}
END_TEST

START_TEST(test_unknown_free)
{
    mem_free(0x7f0000c00000ULL, CUDA_SUCCESS, CTX_A);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.unknown_frees, 1);
    ck_assert_uint_eq(s.frees, 0);
    /* cuMemFree(0) is nothing at all. */
    mem_free(0, CUDA_SUCCESS, CTX_A);
    ck_assert_uint_eq(tu_tracker_stats().unknown_frees, 1);
}
END_TEST

START_TEST(test_host_and_async)
{
    void *host = (void *)0x7fff00001000ULL;
    cuMemAllocHost_v2_params ph = {&host, 100};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &ph, CUDA_SUCCESS, CTX_B);
    CUdeviceptr d = 0x7f0000e00000ULL;
    cuMemAllocAsync_params pa = {&d, 200, (CUstream)0x5eed000};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &pa, CUDA_SUCCESS, CTX_B);

    struct gl_block_info b;
    ck_assert(tu_live_block(0x7fff00001000ULL, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_HOST_PINNED);
    ck_assert_int_eq(b.device, -1); /* host memory: not the context's device */
    ck_assert_uint_eq(b.ctx, (uintptr_t)CTX_B);
    ck_assert(tu_live_block(0x7f0000e00000ULL, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_ASYNC);
    ck_assert_int_eq(b.device, 1);
    ck_assert_uint_eq(b.aux, 0x5eed000);

    cuMemFreeAsync_params pf = {0x7f0000e00000ULL, (CUstream)0x5eed000};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, &pf, CUDA_SUCCESS, CTX_B);
    cuMemFreeHost_params pfh = {host};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &pfh, CUDA_SUCCESS, CTX_B);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

START_TEST(test_unknown_context_device)
{
    mem_alloc(0x7f0001000000ULL, 10, CUDA_SUCCESS, (CUcontext)(uintptr_t)0xc9000);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0001000000ULL, &b));
    ck_assert_int_eq(b.device, -1);
    mem_alloc(0x7f0001200000ULL, 10, CUDA_SUCCESS, NULL);
    ck_assert(tu_live_block(0x7f0001200000ULL, &b));
    ck_assert_int_eq(b.device, -1);
    ck_assert_uint_eq(b.ctx, 0);
}
END_TEST

START_TEST(test_context_device_asked_once)
{
    resource_event(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_B);
    ck_assert_int_eq(query_calls, 1);
    for (int i = 0; i < 5; i++)
        mem_alloc(0x7f0002000000ULL + (uint64_t)i * 0x200000, 10, CUDA_SUCCESS, CTX_B);
    ck_assert_int_eq(query_calls, 1);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0002000000ULL, &b));
    ck_assert_int_eq(b.device, 1);
}
END_TEST

START_TEST(test_vmm_through_callbacks)
{
    CUmemGenericAllocationHandle h = 0x4242;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 5;
    cuMemCreate_params pc = {&h, 2 << 20, &prop, 0};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &pc, CUDA_SUCCESS, CTX_A);
    const uint64_t key = gl_key_make(GL_NS_VMM_HANDLE, 0x4242);
    struct gl_block_info b;
    ck_assert(tu_live_block(key, &b));
    ck_assert_int_eq(b.device, 5); /* from the allocation's location, not the context */
    ck_assert_uint_eq(b.kind, GL_MEM_VMM);

    cuMemMap_params pm = {0x7f5000000000ULL, 2 << 20, 0, 0x4242, 0};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &pm, CUDA_SUCCESS, CTX_A);
    cuMemRelease_params pr = {0x4242};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &pr, CUDA_SUCCESS, CTX_A);
    ck_assert(tu_live_block(key, &b));
    ck_assert_uint_eq(b.flags & GL_BLK_RELEASED, GL_BLK_RELEASED);

    /* A failed unmap changes nothing. */
    cuMemUnmap_params pu = {0x7f5000000000ULL, 2 << 20};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &pu, CUDA_ERROR_INVALID_VALUE, CTX_A);
    ck_assert(tu_live_block(key, NULL));
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &pu, CUDA_SUCCESS, CTX_A);
    ck_assert(!tu_live_block(key, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
}
END_TEST

START_TEST(test_failed_vmm_release)
{
    CUmemGenericAllocationHandle h = 0x4343;
    cuMemCreate_params pc = {&h, 1 << 20, NULL, 0};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &pc, CUDA_SUCCESS, CTX_A);
    cuMemRelease_params pr = {0x4343};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &pr, CUDA_ERROR_INVALID_VALUE, CTX_A);
    struct gl_block_info b;
    ck_assert(tu_live_block(gl_key_make(GL_NS_VMM_HANDLE, 0x4343), &b));
    ck_assert_uint_eq(b.refs, 1);
    ck_assert_uint_eq(b.flags, 0);
    ck_assert_int_eq(b.device, 0); /* no location given: the context's */
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &pr, CUDA_SUCCESS, CTX_A);
    ck_assert(!tu_live_block(gl_key_make(GL_NS_VMM_HANDLE, 0x4343), NULL));
}
END_TEST

/* ---- graphs: memory nodes are blocks only while a launch's memory exists ---- */

#define GRAPH_A ((CUgraph)(uintptr_t)0x6a000)
#define GRAPH_B ((CUgraph)(uintptr_t)0x6b000)
#define EXEC_A ((CUgraphExec)(uintptr_t)0xea000)
#define EXEC_B ((CUgraphExec)(uintptr_t)0xeb000)
#define STREAM_S ((CUstream)(uintptr_t)0x5a000)
#define STREAM_T ((CUstream)(uintptr_t)0x5b000)
#define NODE_VA 0x7f6000000000ULL
#define NODE_VA2 0x7f6000200000ULL

static void add_alloc_node(CUgraph g, CUdeviceptr va, size_t size, int device)
{
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = device;
    np.bytesize = size;
    np.dptr = va; /* the driver's output */
    CUgraphNode node = NULL;
    cuGraphAddMemAllocNode_params p = {&node, g, NULL, 0, &np};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode, &p, CUDA_SUCCESS, CTX_A);
}

/* A free node through cuGraphAddNode_v2 (cuGraphAddMemFreeNode's twin). */
static void add_free_node(CUgraph g, CUdeviceptr va)
{
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    np.free.dptr = va;
    CUgraphNode node = NULL;
    cuGraphAddNode_v2_params p = {&node, g, NULL, NULL, 0, &np};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, &p, CUDA_SUCCESS, CTX_A);
}

static void instantiate(CUgraphExec exec, CUgraph g, unsigned long long flags)
{
    CUgraphExec out = exec;
    cuGraphInstantiateWithFlags_params p = {&out, g, flags};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &p, CUDA_SUCCESS, CTX_A);
}

static void launch(CUgraphExec exec, CUstream s)
{
    cuGraphLaunch_params p = {exec, s};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &p, CUDA_SUCCESS, CTX_A);
}

static void graph_destroy(CUgraph g)
{
    cuGraphDestroy_params p = {g};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy, &p, CUDA_SUCCESS, CTX_A);
}

static void exec_destroy(CUgraphExec exec)
{
    cuGraphExecDestroy_params p = {exec};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, &p, CUDA_SUCCESS, CTX_A);
}

static void begin_capture(CUstream s)
{
    cuStreamBeginCapture_v2_params p = {s, CU_STREAM_CAPTURE_MODE_GLOBAL};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &p, CUDA_SUCCESS, CTX_A);
}

/* *phGraph is what the driver left there: the graph, or on failure whatever it held. */
static void end_capture(CUstream s, CUgraph g, CUresult rc)
{
    CUgraph out = g;
    cuStreamEndCapture_params p = {s, &out};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, &p, rc, CTX_A);
}

static void alloc_async(CUdeviceptr va, size_t size, CUstream s)
{
    CUdeviceptr out = va;
    cuMemAllocAsync_params p = {&out, size, s};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &p, CUDA_SUCCESS, CTX_A);
}

static void free_async(CUdeviceptr va, CUstream s)
{
    cuMemFreeAsync_params p = {va, s};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, &p, CUDA_SUCCESS, CTX_A);
}

START_TEST(test_graph_node_is_a_block_once_launched)
{
    add_alloc_node(GRAPH_A, NODE_VA, 4096, 1);
    ck_assert(!tu_live_block(NODE_VA, NULL));
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    instantiate(EXEC_A, GRAPH_A, 0);
    ck_assert(!tu_live_block(NODE_VA, NULL));

    launch(EXEC_A, STREAM_S);
    struct gl_block_info b;
    ck_assert(tu_live_block(NODE_VA, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_GRAPH);
    ck_assert_uint_eq(b.size, 4096);
    ck_assert_int_eq(b.device, 1); /* the node's location, not the context's device 0 */
    ck_assert_uint_eq(b.api, GL_API_cuGraphAddMemAllocNode);
    ck_assert_uint_eq(b.ctx, (uintptr_t)CTX_A);
    ck_assert_uint_eq(b.aux, (uintptr_t)STREAM_S); /* the launch's stream */
    ck_assert_uint_eq(b.tid, (uint32_t)syscall(SYS_gettid));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.live_bytes, 4096);
    ck_assert_uint_eq(s.live_blocks, 1);
}
END_TEST

START_TEST(test_graph_freeing_its_own_allocation)
{
    add_alloc_node(GRAPH_A, NODE_VA, 4096, 0);
    add_free_node(GRAPH_A, NODE_VA);
    ck_assert_uint_eq(gl_graphs_node_count(), 2);
    instantiate(EXEC_A, GRAPH_A, 0);
    launch(EXEC_A, STREAM_S);
    ck_assert(!tu_live_block(NODE_VA, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.bytes_allocated, 4096);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    /* Every launch allocates and frees again. */
    launch(EXEC_A, STREAM_S);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

/* A free node the driver refused to add frees nothing at launch. */
START_TEST(test_graph_failed_free_node)
{
    add_alloc_node(GRAPH_A, NODE_VA, 4096, 0);
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    np.free.dptr = NODE_VA;
    CUgraphNode node = NULL;
    cuGraphAddNode_v2_params p = {&node, GRAPH_A, NULL, NULL, 0, &np};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, &p, CUDA_ERROR_INVALID_VALUE, CTX_A);
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    instantiate(EXEC_A, GRAPH_A, 0);
    launch(EXEC_A, STREAM_S);
    ck_assert(tu_live_block(NODE_VA, NULL));
}
END_TEST

START_TEST(test_graph_destroyed_without_launch)
{
    add_alloc_node(GRAPH_A, NODE_VA, 4096, 0);
    add_alloc_node(GRAPH_B, NODE_VA2, 4096, 0);
    instantiate(EXEC_B, GRAPH_B, 0);
    graph_destroy(GRAPH_A);
    graph_destroy(GRAPH_B);
    exec_destroy(EXEC_B);
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert(!tu_live_block(NODE_VA, NULL));
    ck_assert(!tu_live_block(NODE_VA2, NULL));
    /* Handles of destroyed graphs run nothing. */
    instantiate(EXEC_A, GRAPH_A, 0);
    launch(EXEC_A, STREAM_S);
    launch(EXEC_B, STREAM_S);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
}
END_TEST

START_TEST(test_graph_relaunch_after_program_free)
{
    add_alloc_node(GRAPH_A, NODE_VA, 4096, 0);
    instantiate(EXEC_A, GRAPH_A, 0);
    graph_destroy(GRAPH_A); /* the exec keeps its nodes */
    launch(EXEC_A, STREAM_S);
    struct gl_block_info b;
    ck_assert(tu_live_block(NODE_VA, &b));
    ck_assert_uint_eq(b.seq, 1);

    free_async(NODE_VA, STREAM_T); /* not being captured: an ordinary free */
    ck_assert(!tu_live_block(NODE_VA, NULL));
    ck_assert_uint_eq(tu_tracker_stats().frees, 1);

    launch(EXEC_A, STREAM_T);
    ck_assert(tu_live_block(NODE_VA, &b));
    ck_assert_uint_eq(b.seq, 2); /* a new allocation, numbered at the launch */
    ck_assert_uint_eq(b.aux, (uintptr_t)STREAM_T);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(s.replaced, 0);
}
END_TEST

START_TEST(test_graph_auto_free_on_launch)
{
    add_alloc_node(GRAPH_A, NODE_VA, 4096, 0);
    instantiate(EXEC_A, GRAPH_A, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    launch(EXEC_A, STREAM_S);
    ck_assert_uint_eq(tu_tracker_stats().frees, 0);
    launch(EXEC_A, STREAM_S); /* frees the first launch's memory, then allocates */
    struct gl_block_info b;
    ck_assert(tu_live_block(NODE_VA, &b));
    ck_assert_uint_eq(b.seq, 2);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_blocks, 1);
    ck_assert_uint_eq(s.live_bytes, 4096);
    ck_assert_uint_eq(s.replaced, 0);
}
END_TEST

START_TEST(test_stream_capture)
{
    alloc_async(NODE_VA2, 64, STREAM_T); /* before the capture: freed by the graph */
    begin_capture(STREAM_S);
    ck_assert(gl_graphs_capturing());
    alloc_async(NODE_VA, 512, STREAM_S);
    ck_assert(!tu_live_block(NODE_VA, NULL));
    free_async(NODE_VA2, STREAM_S);
    ck_assert(tu_live_block(NODE_VA2, NULL));
    ck_assert_uint_eq(tu_tracker_stats().allocs, 1);

    /* Another stream is not being captured: its allocation is a block at once. */
    alloc_async(0x7f6000400000ULL, 128, STREAM_T);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f6000400000ULL, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_ASYNC);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 2);

    end_capture(STREAM_S, GRAPH_A, CUDA_SUCCESS);
    ck_assert(!gl_graphs_capturing());
    ck_assert(!tu_live_block(NODE_VA, NULL));
    ck_assert(tu_live_block(NODE_VA2, NULL));
    instantiate(EXEC_A, GRAPH_A, 0);
    launch(EXEC_A, STREAM_S);
    ck_assert(tu_live_block(NODE_VA, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_GRAPH);
    ck_assert_uint_eq(b.size, 512);
    ck_assert_uint_eq(b.api, GL_API_cuMemAllocAsync);
    ck_assert(!tu_live_block(NODE_VA2, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 3);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.unknown_frees, 0);

    /* The capture is over: the stream's allocations are blocks again. */
    alloc_async(0x7f6000600000ULL, 256, STREAM_S);
    ck_assert(tu_live_block(0x7f6000600000ULL, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_ASYNC);
}
END_TEST

START_TEST(test_failed_end_capture)
{
    begin_capture(STREAM_S);
    alloc_async(NODE_VA, 512, STREAM_S);
    /* Invalidated: the driver left whatever the output held. */
    end_capture(STREAM_S, GRAPH_A, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert(!gl_graphs_capturing());
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    instantiate(EXEC_A, GRAPH_A, 0);
    launch(EXEC_A, STREAM_S);
    ck_assert(!tu_live_block(NODE_VA, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    /* Not captured any more. */
    alloc_async(NODE_VA, 512, STREAM_S);
    struct gl_block_info b;
    ck_assert(tu_live_block(NODE_VA, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_ASYNC);
}
END_TEST

/* A launched block's stack is its node's: the stack of the call that built the
 * graph, not the launch's.  Needs libunwind for real stacks; it is loaded after
 * test_stacks_enabled_without_unwinder, which needs it unloaded (CK_FORK=no). */
#define TEST_FN __attribute__((noinline, noipa, used, optimize("O0")))

static volatile int sink;

/* A node, then a plain cuMemAlloc, from one call site: the same stack. */
TEST_FN void node_and_plain_alloc_at_one_site(void)
{
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.bytesize = 4096;
    np.dptr = NODE_VA;
    CUgraphNode node = NULL;
    cuGraphAddMemAllocNode_params pn = {&node, GRAPH_A, NULL, 0, &np};
    CUdeviceptr out = 0x7f6000800000ULL;
    cuMemAlloc_v2_params pa = {&out, 4096};
    const CUpti_CallbackId cbid[2] = {CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode,
                                      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2};
    const void *params[2] = {&pn, &pa};
    for (int k = 0; k < 2; k++) {
        driver_call(cbid[k], params[k], CUDA_SUCCESS, CTX_A);
        sink++;
    }
}

TEST_FN void node_at_another_site(void)
{
    add_alloc_node(GRAPH_A, NODE_VA2, 4096, 0);
    sink++;
}

START_TEST(test_graph_block_has_node_stack)
{
    char err[256];
    if (!gl_unwind_load(err, sizeof err)) {
        fprintf(stderr, "check_cupti: %s: graph stack test skipped\n", err);
        return;
    }
    gl_modules_clear();
    gl_stack_capture_init(16);
    gl_call_set_stacks(1);
    node_and_plain_alloc_at_one_site();
    node_at_another_site();
    instantiate(EXEC_A, GRAPH_A, 0);
    launch(EXEC_A, STREAM_S);
    struct gl_block_info plain, first, second;
    ck_assert(tu_live_block(0x7f6000800000ULL, &plain));
    ck_assert(tu_live_block(NODE_VA, &first));
    ck_assert(tu_live_block(NODE_VA2, &second));
    ck_assert_uint_ne(plain.stack, 0);
    ck_assert_uint_eq(first.stack, plain.stack);
    ck_assert_uint_ne(second.stack, 0);
    ck_assert_uint_ne(second.stack, first.stack);
}
END_TEST

START_TEST(test_untracked_call_ignored)
{
    cuMemFree_v2_params p = {0x1234};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, CUDA_SUCCESS, CTX_A);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs + s.frees + s.unknown_frees, 0);
}
END_TEST

START_TEST(test_not_tracking_ignores_everything)
{
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
    mem_alloc(0x7f0003000000ULL, 10, CUDA_SUCCESS, CTX_A);
    atomic_store(&gl_runtime.state, GL_RT_REPORTED);
    mem_alloc(0x7f0003200000ULL, 10, CUDA_SUCCESS, CTX_A);
    resource_event(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
    ck_assert_int_eq(query_calls, 0);

    /* Tracking again: a NULL callback data is ignored. */
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                      NULL);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
}
END_TEST

START_TEST(test_context_destroy_resource)
{
    mem_alloc(0x7f0004000000ULL, 100, CUDA_SUCCESS, CTX_A);
    mem_alloc(0x7f0004200000ULL, 200, CUDA_SUCCESS, CTX_A);
    mem_alloc(0x7f0004400000ULL, 400, CUDA_SUCCESS, CTX_B);
    CUmemGenericAllocationHandle h = 0x77;
    cuMemCreate_params pc = {&h, 800, NULL, 0};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &pc, CUDA_SUCCESS, CTX_A);

    resource_event(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_A);
    ck_assert(!tu_live_block(0x7f0004000000ULL, NULL));
    ck_assert(!tu_live_block(0x7f0004200000ULL, NULL));
    ck_assert(tu_live_block(0x7f0004400000ULL, NULL));
    ck_assert(tu_live_block(gl_key_make(GL_NS_VMM_HANDLE, 0x77), NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.live_bytes, 1200);
    ck_assert_uint_eq(s.live_blocks, 2);
}
END_TEST

START_TEST(test_context_pointer_reused)
{
    /* A destroyed context's pointer value may come back on another device. */
    resource_event(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CTX_A);
    ck_assert_int_eq(gl_contexts_device((uintptr_t)CTX_A), 0);
    resource_event(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CTX_A);
    int calls = query_calls;
    mem_alloc(0x7f0005000000ULL, 10, CUDA_SUCCESS, CTX_A);
    ck_assert_int_eq(query_calls, calls + 1); /* asked again */
}
END_TEST

START_TEST(test_stacks_enabled_without_unwinder)
{
    /* libunwind is not loaded in this test: captures give no stack, the block is
     * still recorded. */
    gl_call_set_stacks(1);
    mem_alloc(0x7f0006000000ULL, 10, CUDA_SUCCESS, CTX_A);
    struct gl_block_info b;
    ck_assert(tu_live_block(0x7f0006000000ULL, &b));
    ck_assert_uint_eq(b.stack, 0);
}
END_TEST

START_TEST(test_bench_null_mode)
{
    char bad[64] = "";
    ck_assert(gl_call_bench_mode(NULL, bad, sizeof bad));
    ck_assert(!gl_call_bench_mode("bogus", bad, sizeof bad));
    ck_assert_str_eq(bad, "bogus");
    mem_alloc(0x7f0007000000ULL, 10, CUDA_SUCCESS, CTX_A);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 1);
    ck_assert(gl_call_bench_mode("null", bad, sizeof bad)); /* CUPTI's own cost only */
    ck_assert(!gl_call_bench_mode("alternate:gpuleak", bad, sizeof bad)); /* null already */
    mem_alloc(0x7f0007200000ULL, 10, CUDA_SUCCESS, CTX_A);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 1);
}
END_TEST

static void *free_elsewhere(void *arg)
{
    (void)arg;
    mem_alloc(0x7f0007400000ULL, 10, CUDA_SUCCESS, CTX_A);
    mem_free(0x7f0007400000ULL, CUDA_SUCCESS, CTX_A);
    return NULL;
}

/* n allocate/free pairs of one address. */
static void pairs_at(CUdeviceptr addr, int n)
{
    for (int i = 0; i < n; i++) {
        mem_alloc(addr, 10, CUDA_SUCCESS, CTX_A);
        mem_free(addr, CUDA_SUCCESS, CTX_A);
    }
}

/* A second thread's pair stops the alternation, in a block without. */
static void stopped_by_another_thread(struct gl_alternate_result *r)
{
    pthread_t t;
    pthread_create(&t, NULL, free_elsewhere, NULL);
    pthread_join(t, NULL);
    ck_assert(gl_alternate_result(r) && r->stopped && r->left_out);
}

/* GPULEAK_BENCH=alternate:quarantine:10: every 10 frees the quarantine is
 * left out or put back; pairs of blocks are kept after the warm-up; a call
 * from a second thread ends it with the consumer back. */
START_TEST(test_bench_alternate)
{
    char bad[64] = "";
    ck_assert(!gl_call_bench_mode("alternate:tracker", bad, sizeof bad)); /* the state stage */
    ck_assert_str_eq(bad, "alternate:tracker");
    ck_assert(!gl_call_bench_mode("alternate:quarantine:5", bad, sizeof bad));
    ck_assert(!gl_call_bench_mode("alternate:nobody", bad, sizeof bad));
    ck_assert(!gl_call_bench_mode("alternate:history", bad, sizeof bad)); /* not attached */
    ck_assert(!gl_alternate_on());
    gl_quarantine_configure(8, false);
    tu_pipeline_restart();
    ck_assert(gl_dispatch_attached("quarantine"));
    ck_assert(gl_call_bench_mode("alternate:quarantine:10", bad, sizeof bad));
    ck_assert(gl_alternate_on());
    /* What is left out is said once: a second word would undo it. */
    ck_assert(!gl_call_bench_mode("nostate", bad, sizeof bad));
    ck_assert(!gl_call_bench_mode("noobserve", bad, sizeof bad));
    ck_assert(gl_dispatch_attached("tracker"));
    CUdeviceptr addr = 0x7f0007300000ULL;
    for (int block = 0; block < 24; block++) {
        ck_assert_int_eq(gl_dispatch_attached("quarantine"), block % 2 == 0);
        pairs_at(addr, 10);
    }
    ck_assert(gl_dispatch_attached("quarantine"));
    struct gl_alternate_result r;
    ck_assert(gl_alternate_result(&r));
    ck_assert_str_eq(r.name, "quarantine");
    ck_assert_uint_eq(r.pairs_per_block, 10);
    /* 24 blocks: the first untimed, 4 of warm-up, a without-block alone. */
    ck_assert_uint_eq(r.blocks, 9);
    ck_assert(!r.stopped && r.on_ns > 0 && r.off_ns > 0);
    ck_assert(r.q1_ns <= r.diff_ns && r.diff_ns <= r.q3_ns);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 240);
    /* In a block without it, a second thread's free stops the alternation
     * with the tables as they are (no rebuild while it may read them). */
    pairs_at(addr, 10);
    ck_assert(!gl_dispatch_attached("quarantine"));
    stopped_by_another_thread(&r);
    pairs_at(addr, 30);
    ck_assert(!gl_dispatch_attached("quarantine"));
    struct gl_alternate_result after;
    ck_assert(gl_alternate_result(&after));
    ck_assert_uint_eq(after.blocks, r.blocks); /* nothing timed since */
}
END_TEST

/* GPULEAK_BENCH=alternate:gpuleak:10: every 10 frees the producer itself
 * switches to doing nothing (GPULEAK_BENCH=null) and back, between two
 * pairs: the blocks without track nothing.  null and spin cannot go with
 * it; a second thread's free stops it as it is. */
START_TEST(test_bench_alternate_gpuleak)
{
    char bad[64] = "";
    ck_assert(gl_call_bench_mode("alternate:gpuleak:10", bad, sizeof bad));
    ck_assert(gl_alternate_on() && gl_alternate_whole());
    ck_assert(!gl_call_bench_mode("null", bad, sizeof bad));
    ck_assert_str_eq(bad, "null");
    ck_assert(!gl_call_bench_mode("spin:5", bad, sizeof bad));
    ck_assert(!gl_call_bench_null());
    CUdeviceptr addr = 0x7f0007500000ULL;
    for (int block = 0; block < 24; block++) {
        ck_assert_int_eq(gl_call_bench_null(), block % 2 == 1);
        for (int i = 0; i < 10; i++) {
            mem_alloc(addr + (CUdeviceptr)i * 0x1000, 10, CUDA_SUCCESS, CTX_A);
            mem_free(addr + (CUdeviceptr)i * 0x1000, CUDA_SUCCESS, CTX_A);
        }
        /* Another entry point's exits do not end a block without. */
        cuMemAllocHost_v2_params h = {NULL, 0};
        void *host = (void *)0x1000;
        h.pp = &host;
        h.bytesize = 64;
        driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &h, CUDA_SUCCESS, CTX_A);
        cuMemFreeHost_params fh = {host};
        driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &fh, CUDA_SUCCESS, CTX_A);
    }
    ck_assert(!gl_call_bench_null());
    /* Only the blocks with it tracked: 12 of 24, their host pairs too. */
    struct gl_tracker_stats st = tu_tracker_stats();
    ck_assert_uint_eq(st.allocs, 12 * 11);
    ck_assert_uint_eq(st.frees, 12 * 11);
    ck_assert_uint_eq(st.live_blocks, 0);
    ck_assert_uint_eq(st.unknown_frees, 0);
    struct gl_alternate_result r;
    ck_assert(gl_alternate_result(&r));
    ck_assert_str_eq(r.name, "gpuleak");
    ck_assert_uint_eq(r.blocks, 9);
    ck_assert(!r.stopped && r.on_ns > 0 && r.off_ns > 0);
    pairs_at(addr, 10);
    ck_assert(gl_call_bench_null());
    stopped_by_another_thread(&r);
    ck_assert(r.whole);
    pairs_at(addr, 30);
    ck_assert(gl_call_bench_null());                            /* stopped as it was */
    ck_assert_uint_eq(tu_tracker_stats().allocs, 12 * 11 + 10); /* and the 25th block */
    gl_call_set_null(false);
}
END_TEST

/* One half of a driver call, as CUPTI reports it, with the caller's
 * correlation slot and return value. */
static void driver_half(CUpti_CallbackId cbid, const void *params, bool at_exit, CUresult *ret,
                        uint64_t *corr)
{
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.functionParams = params;
    cb.functionReturnValue = ret;
    cb.correlationData = corr;
    cb.context = CTX_A;
    cb.callbackSite = at_exit ? CUPTI_API_EXIT : CUPTI_API_ENTER;
    cb.functionName = "cuSomething";
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
}

static void *host_pair_elsewhere(void *arg)
{
    (void)arg;
    void *host = (void *)0x2000;
    cuMemAllocHost_v2_params h = {&host, 64};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &h, CUDA_SUCCESS, CTX_A);
    cuMemFreeHost_params fh = {host};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &fh, CUDA_SUCCESS, CTX_A);
    return NULL;
}

/* alternate:gpuleak, a call that straddles a switch (as only another
 * thread's switch makes one): a release begun on the tracked path is ended
 * on it though the exit comes while the producer does nothing; an entry on
 * the null path begins nothing, and its correlation slot says so to a
 * tracked exit (CUPTI leaves garbage there).  Then a second thread's free
 * through another entry point than the one counted stops the alternation. */
START_TEST(test_bench_alternate_gpuleak_straddle)
{
    char bad[64] = "";
    ck_assert(gl_call_bench_mode("alternate:gpuleak:1000", bad, sizeof bad));
    CUdeviceptr p = 0x7f0007600000ULL, q = 0x7f0007700000ULL;
    mem_alloc(p, 64, CUDA_SUCCESS, CTX_A);
    cuMemFree_v2_params fp = {p};
    CUresult ret = (CUresult)-1;
    uint64_t corr = 0xdeadbeefULL;
    driver_half(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fp, false, &ret, &corr);
    ck_assert(corr != 0 && corr != 0xdeadbeefULL); /* a release begun */
    gl_call_set_null(true);
    ret = CUDA_SUCCESS;
    driver_half(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fp, true, &ret, &corr);
    gl_call_set_null(false);
    struct gl_tracker_stats st = tu_tracker_stats();
    ck_assert_uint_eq(st.frees, 1);
    ck_assert_uint_eq(st.live_blocks, 0);
    mem_alloc(q, 64, CUDA_SUCCESS, CTX_A);
    cuMemFree_v2_params fq = {q};
    gl_call_set_null(true);
    corr = 0xdeadbeefULL;
    ret = (CUresult)-1;
    driver_half(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fq, false, &ret, &corr);
    ck_assert_uint_eq(corr, 0); /* nothing begun */
    gl_call_set_null(false);
    ret = CUDA_SUCCESS;
    driver_half(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fq, true, &ret, &corr);
    st = tu_tracker_stats();
    ck_assert_uint_eq(st.frees, 1); /* its free went unseen */
    ck_assert_uint_eq(st.live_blocks, 1);
    struct gl_alternate_result r;
    ck_assert(gl_alternate_result(&r) && !r.stopped);
    pthread_t t;
    pthread_create(&t, NULL, host_pair_elsewhere, NULL);
    pthread_join(t, NULL);
    ck_assert(gl_alternate_result(&r) && r.stopped && r.whole && !r.left_out);
}
END_TEST

/* The errors of a release and of a copy name the device of the call's
 * context (device 1 here), found from the context only when an error needs
 * it: the producer leaves the device to the placement. */
START_TEST(test_release_error_names_the_context_device)
{
    gl_quarantine_configure(8, false);
    tu_pipeline_restart();
    mem_alloc(0x7f0000f00000ULL, 64, CUDA_SUCCESS, CTX_B);
    mem_free(0x7f0000f00000ULL, CUDA_SUCCESS, CTX_B);
    mem_free(0x7f0000f00000ULL, CUDA_ERROR_INVALID_VALUE, CTX_B); /* a double free */
    struct gl_error_context c[4];
    ck_assert_uint_eq(gl_errors_contexts(c, 4), 1);
    ck_assert_int_eq(c[0].first.kind, GL_ERR_DOUBLE_FREE);
    ck_assert_int_eq(c[0].first.device, 1);
    gl_quarantine_configure(0, false);
    tu_pipeline_restart();
}
END_TEST

/* A stream-ordered request refused for lack of memory, on a stream made in
 * context B while A is current: the out-of-memory error names B's device,
 * the pool's that ran out (as a granted allocation's block would). */
START_TEST(test_oom_on_a_stream_names_its_device)
{
    gl_contexts_created((uintptr_t)CTX_A);
    gl_contexts_created((uintptr_t)CTX_B);
    gl_contexts_stream_created(0x5eed000, (uintptr_t)CTX_B);
    CUdeviceptr d = 0;
    cuMemAllocAsync_params pa = {&d, 1ull << 40, (CUstream)0x5eed000};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &pa, CUDA_ERROR_OUT_OF_MEMORY, CTX_A);
    struct gl_error_context c[4];
    ck_assert_uint_eq(gl_errors_contexts(c, 4), 1);
    ck_assert_int_eq(c[0].first.kind, GL_ERR_OUT_OF_MEMORY);
    ck_assert_int_eq(c[0].first.device, 1);
}
END_TEST

START_TEST(test_access_error_names_the_context_device)
{
    gl_live_ranges_configure(true);
    tu_pipeline_restart();
    mem_alloc(0x7f0000f40000ULL, 16, CUDA_SUCCESS, CTX_B);
    static char host[64];
    cuMemcpyHtoD_v2_params p = {0x7f0000f40000ULL, host, 32};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &p, CUDA_SUCCESS, CTX_B);
    struct gl_error_context c[4];
    size_t n = gl_errors_contexts(c, 4);
    gl_live_ranges_configure(false);
    tu_pipeline_restart();
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(c[0].first.kind, GL_ERR_INVALID_RANGE);
    ck_assert_int_eq(c[0].first.device, 1);
}
END_TEST

static Suite *callback_suite(void)
{
    Suite *s = suite_create("cupti");
    TCase *tc = tcase_create("cupti");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_alloc_then_free);
    tcase_add_test(tc, test_release_error_names_the_context_device);
    tcase_add_test(tc, test_access_error_names_the_context_device);
    tcase_add_test(tc, test_oom_on_a_stream_names_its_device);
    tcase_add_test(tc, test_failed_free_keeps_block);
    tcase_add_test(tc, test_disabled_thread_allocations_ignored);
    tcase_add_test(tc, test_failed_alloc_records_nothing);
    tcase_add_test(tc, test_exit_without_return_value);
    tcase_add_test(tc, test_unknown_free);
    tcase_add_test(tc, test_host_and_async);
    tcase_add_test(tc, test_unknown_context_device);
    tcase_add_test(tc, test_context_device_asked_once);
    tcase_add_test(tc, test_vmm_through_callbacks);
    tcase_add_test(tc, test_failed_vmm_release);
    tcase_add_test(tc, test_graph_node_is_a_block_once_launched);
    tcase_add_test(tc, test_graph_freeing_its_own_allocation);
    tcase_add_test(tc, test_graph_failed_free_node);
    tcase_add_test(tc, test_graph_destroyed_without_launch);
    tcase_add_test(tc, test_graph_relaunch_after_program_free);
    tcase_add_test(tc, test_graph_auto_free_on_launch);
    tcase_add_test(tc, test_stream_capture);
    tcase_add_test(tc, test_failed_end_capture);
    tcase_add_test(tc, test_untracked_call_ignored);
    tcase_add_test(tc, test_not_tracking_ignores_everything);
    tcase_add_test(tc, test_context_destroy_resource);
    tcase_add_test(tc, test_context_pointer_reused);
    tcase_add_test(tc, test_stacks_enabled_without_unwinder);
    /* After test_stacks_enabled_without_unwinder: loads libunwind. */
    tcase_add_test(tc, test_graph_block_has_node_stack);
    tcase_add_test(tc, test_bench_alternate);
    tcase_add_test(tc, test_bench_alternate_gpuleak);
    tcase_add_test(tc, test_bench_alternate_gpuleak_straddle);
    tcase_add_test(tc, test_bench_null_mode); /* last: leaves the callback off */
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(callback_suite)
