/* SPDX-License-Identifier: MIT */
/* lib/track/graphs.h: graphs' memory nodes kept per capture, graph and
 * executable graph, and turned into blocks (and frees) by launches; results read
 * back through the tracker. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "event/api.h"
#include "track/graphs.h"
#include "base/tool.h"
#include "track/errors.h"
#include "track/tracker.h"

#define S1 0x5a000ULL /* streams */
#define S2 0x5b000ULL
#define G1 0x6a000ULL /* graphs */
#define G2 0x6b000ULL
#define E1 0xea000ULL /* executable graphs */
#define E2 0xeb000ULL
#define CTX 0xc0000ULL
#define VA 0x7f6000000000ULL
#define AUTO_FREE_ON_LAUNCH 1ull /* CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */

static void setup(void) { tu_pipeline_reset(); }

/* A memory node's event, as a producer hands it over: aux is the graph (or
 * the stream, for a captured one). */
static struct gl_event node_ev(enum gl_event_type type, uint64_t va, uint64_t size, uint64_t aux)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.key = va;
    ev.aux = aux;
    if (type == GL_EV_GRAPH_NODE_ALLOC || type == GL_EV_ALLOC) {
        ev.kind = GL_MEM_GRAPH;
        ev.api = GL_API_cuGraphAddMemAllocNode;
        ev.size = size;
        ev.device = 0;
    } else {
        ev.api = GL_API_cuGraphAddMemFreeNode;
    }
    return ev;
}

/* Graphs' control calls, dispatched as the producer does. */
static void control(enum gl_event_type type, uint64_t key, uint64_t aux, uint64_t size,
                    uint32_t tid)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.key = key;
    ev.aux = aux;
    ev.size = size;
    ev.ctx = CTX;
    ev.tid = tid;
    gl_dispatch(&ev);
}

static void capture_begin(uint64_t stream) { control(GL_EV_CAPTURE_BEGIN, 0, stream, 0, 7); }
static void capture_end(uint64_t stream, uint64_t graph)
{
    control(GL_EV_CAPTURE_END, graph, stream, 0, 7);
}
static void instantiate(uint64_t exec, uint64_t graph, uint64_t flags)
{
    control(GL_EV_GRAPH_INSTANTIATE, exec, graph, flags, 7);
}
static void graph_destroy(uint64_t graph) { control(GL_EV_GRAPH_DESTROY, graph, 0, 0, 7); }
static void exec_destroy(uint64_t exec) { control(GL_EV_GRAPH_EXEC_DESTROY, exec, 0, 0, 7); }
static void launch_on(uint64_t exec, uint64_t stream, uint32_t tid)
{
    control(GL_EV_GRAPH_LAUNCH, exec, stream, 0, tid);
}

static void alloc_node(uint64_t graph, uint64_t va, uint64_t size)
{
    struct gl_event ev = node_ev(GL_EV_GRAPH_NODE_ALLOC, va, size, graph);
    gl_dispatch(&ev);
}

static void free_node(uint64_t graph, uint64_t va)
{
    struct gl_event ev = node_ev(GL_EV_GRAPH_NODE_FREE, va, 0, graph);
    gl_dispatch(&ev);
}

/* A stream-ordered allocation on stream: true when the graphs claimed it as a
 * node (no block was made). */
static bool captured_alloc(uint64_t stream, uint64_t va, uint64_t size)
{
    struct gl_event ev = node_ev(GL_EV_ALLOC, va, size, stream);
    ev.kind = GL_MEM_ASYNC;
    ev.api = GL_API_cuMemAllocAsync;
    unsigned before = gl_graphs_node_count();
    gl_dispatch(&ev);
    return gl_graphs_node_count() == before + 1;
}

static bool captured_free(uint64_t stream, uint64_t va)
{
    struct gl_event ev = node_ev(GL_EV_FREE, va, 0, stream);
    ev.api = GL_API_cuMemFreeAsync;
    unsigned before = gl_graphs_node_count();
    gl_dispatch(&ev);
    return gl_graphs_node_count() == before + 1;
}

static void launch(uint64_t exec) { launch_on(exec, S1, 42); }

/* ---- captures ---- */

START_TEST(test_capture_counting)
{
    ck_assert(!gl_graphs_capturing());
    capture_begin(S1);
    ck_assert(gl_graphs_capturing());
    capture_begin(S2);
    capture_end(S1, G1);
    ck_assert(gl_graphs_capturing()); /* S2 still is */
    capture_end(S2, G2);
    ck_assert(!gl_graphs_capturing());

    /* A stream begun twice counts once. */
    capture_begin(S1);
    capture_begin(S1);
    capture_end(S1, 0);
    ck_assert(!gl_graphs_capturing());

    /* An end without a begin counts nothing down. */
    capture_end(S2, G2);
    capture_begin(S1);
    ck_assert(gl_graphs_capturing());
    capture_end(S1, 0);
    ck_assert(!gl_graphs_capturing());
}
END_TEST

/* A call claimed while its stream was captured, whose capture another thread
 * ended before the claim was taken: let go, so that it is a block after all. */
START_TEST(test_claim_let_go_when_the_capture_ended)
{
    const struct gl_consumer *g = gl_graphs_component.consumer;
    capture_begin(S1);
    struct gl_event ev = node_ev(GL_EV_ALLOC, VA, 100, S1);
    ev.kind = GL_MEM_ASYNC;
    ev.api = GL_API_cuMemAllocAsync;
    ck_assert(g->claim(&ev));
    capture_end(S1, G1); /* on another thread, in between */
    ck_assert(!g->take(&ev));
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    /* Taken in time, it is a node. */
    capture_begin(S1);
    ck_assert(g->claim(&ev));
    ck_assert(g->take(&ev));
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
}
END_TEST

START_TEST(test_captured_alloc_and_free)
{
    ck_assert(!captured_alloc(S1, VA, 100));
    ck_assert(!captured_free(S1, VA));
    capture_begin(S1);
    ck_assert(captured_alloc(S1, VA, 100));
    ck_assert(captured_free(S1, VA + 0x1000));
    ck_assert(!captured_alloc(S2, VA + 0x2000, 100)); /* another stream */
    ck_assert(!captured_free(S2, VA + 0x3000));
    ck_assert_uint_eq(gl_graphs_node_count(), 2);
    /* Nodes, not blocks; the calls not claimed (before the capture, on
     * another stream) went on to the block table. */
    ck_assert_uint_eq(tu_tracker_stats().allocs, 2);
    ck_assert(!tu_live_block(VA, NULL));
    ck_assert(tu_live_block(VA + 0x2000, NULL));

    /* A second begin on the stream starts the capture afresh. */
    capture_begin(S1);
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert(captured_alloc(S1, VA, 100));

    capture_end(S1, G1);
    ck_assert_uint_eq(gl_graphs_node_count(), 1); /* now graph G1's */
    ck_assert(!captured_alloc(S1, VA + 0x4000, 100));
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
}
END_TEST

START_TEST(test_failed_capture_drops_nodes)
{
    capture_begin(S1);
    ck_assert(captured_alloc(S1, VA, 100));
    capture_end(S1, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert(!gl_graphs_capturing());
}
END_TEST

START_TEST(test_captured_nodes_launch)
{
    capture_begin(S2);
    ck_assert(captured_alloc(S2, VA, 300));
    capture_end(S2, G1);
    instantiate(E1, G1, 0);
    launch(E1);
    struct gl_block_info b;
    ck_assert(tu_live_block(VA, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_GRAPH);
    ck_assert_uint_eq(b.size, 300);
    ck_assert_uint_eq(b.api, GL_API_cuMemAllocAsync);
}
END_TEST

/* A stream that joined the capture through an event (no capture begins on
 * it) frees one of the capture's allocations: a free node, and the stream's
 * allocations after that are nodes too, until the capture ends (NVIDIA's
 * graphMemoryNodes sample: allocated on the capturing stream, freed on a
 * forked one).  A block the stream allocated before, and a live block at a
 * node's address, are freed as blocks. */
START_TEST(test_joined_stream_frees_a_node)
{
    const uint64_t S3 = 0x5c000ULL;
    ck_assert(!captured_alloc(S1, VA + 0xa000, 64)); /* a block, before any capture */
    capture_begin(S1);
    ck_assert(!captured_alloc(S2, VA + 0x8000, 64)); /* S2 not in the capture yet */
    ck_assert(captured_alloc(S1, VA, 100));
    ck_assert(captured_alloc(S1, VA + 0x1000, 100));
    ck_assert(captured_alloc(S1, VA + 0xa000, 100)); /* stale: a live block is there */
    ck_assert(captured_free(S2, VA));                /* S2 joined */
    ck_assert(captured_alloc(S2, VA + 0x2000, 50));
    ck_assert(captured_free(S2, VA + 0x2000));
    /* Its own block, from before: a free node now (captured on S2), freed
     * by the launch. */
    ck_assert(captured_free(S2, VA + 0x8000));
    ck_assert(tu_live_block(VA + 0x8000, NULL));
    ck_assert(!captured_free(S3, VA));          /* freed in the capture already */
    ck_assert(!captured_free(S3, VA + 0xa000)); /* the live block comes first */
    ck_assert(!tu_live_block(VA + 0xa000, NULL));
    capture_end(S1, G1);
    ck_assert(!captured_alloc(S2, VA + 0x3000, 64)); /* the capture ended */
    instantiate(E1, G1, 0);
    launch(E1);
    /* Freed by the graph: VA (on S2), VA + 0x2000, the block at VA + 0x8000;
     * VA + 0x1000 outlives it. */
    ck_assert(!tu_live_block(VA, NULL));
    ck_assert(tu_live_block(VA + 0x1000, NULL));
    ck_assert(!tu_live_block(VA + 0x2000, NULL));
    ck_assert(!tu_live_block(VA + 0x8000, NULL));
}
END_TEST

static void event_record(uint64_t event, uint64_t stream)
{
    control(GL_EV_EVENT_RECORD, event, stream, 0, 7);
}
static void stream_wait(uint64_t stream, uint64_t event)
{
    control(GL_EV_STREAM_WAIT, event, stream, 0, 7);
}

/* A capture forks to S2 through an event and joins back (S1 waits for an
 * event S2 recorded): everything S2 allocates and frees meanwhile is a node,
 * before it frees anything of the capture's.  A stream forked from S2 joins
 * too; an event recorded outside the capture, or recorded again outside it,
 * joins nothing; and the joins end with the capture. */
START_TEST(test_fork_and_join_by_events)
{
    const uint64_t S3 = 0x5c000ULL, S4 = 0x5d000ULL, EV1 = 0xe1, EV2 = 0xe2, EV3 = 0xe3;
    event_record(EV3, S4); /* before any capture (decode makes no event then): no join */
    capture_begin(S1);
    event_record(EV1, S1);
    stream_wait(S2, EV1);
    ck_assert(captured_alloc(S2, VA, 100)); /* S2's own allocation, before any free */
    ck_assert(captured_alloc(S2, VA + 0x1000, 200));
    event_record(EV2, S2);
    stream_wait(S3, EV2); /* forked from the fork */
    ck_assert(captured_alloc(S3, VA + 0x2000, 300));
    ck_assert(captured_free(S3, VA + 0x2000));
    stream_wait(S4, EV3); /* an event from outside the capture */
    ck_assert(!captured_alloc(S4, VA + 0x3000, 64));
    event_record(EV1, S4); /* recorded again, outside: waiting for it joins nothing now */
    stream_wait(S4, EV1);
    ck_assert(!captured_alloc(S4, VA + 0x4000, 64));
    stream_wait(S1, EV2); /* the join back */
    ck_assert(captured_free(S1, VA));
    capture_end(S1, G1);
    ck_assert(!captured_alloc(S2, VA + 0x5000, 64)); /* the capture ended */
    ck_assert(!captured_alloc(S3, VA + 0x6000, 64));
    ck_assert(tu_live_block(VA + 0x5000, NULL));
    /* Nothing of the graph's is a block before its launch. */
    ck_assert(!tu_live_block(VA, NULL));
    ck_assert(!tu_live_block(VA + 0x1000, NULL));
    instantiate(E1, G1, 0);
    launch(E1);
    ck_assert(!tu_live_block(VA, NULL)); /* freed by the graph, on S1 */
    ck_assert(tu_live_block(VA + 0x1000, NULL));
    ck_assert(!tu_live_block(VA + 0x2000, NULL));
    /* The next capture starts with no joins and no events. */
    capture_begin(S1);
    ck_assert(!captured_alloc(S2, VA + 0x7000, 64));
    stream_wait(S2, EV2);
    ck_assert(!captured_alloc(S2, VA + 0x8000, 64));
    capture_end(S1, G2);
}
END_TEST

/* What is not a fork: an external record or wait (a node of the graph), a
 * record on a default stream's handle by a thread other than the capture's
 * (every thread's per-thread stream has that handle), and, with two captures
 * in progress, an event recorded in one joins waiting streams to that one. */
START_TEST(test_records_that_do_not_fork)
{
    const uint64_t S3 = 0x5c000ULL, S4 = 0x5d000ULL, PT = 2; /* CU_STREAM_PER_THREAD */
    capture_begin(S1);
    control(GL_EV_EVENT_RECORD, 0xe1, S1, 1 /* CU_EVENT_RECORD_EXTERNAL */, 7);
    stream_wait(S2, 0xe1);
    ck_assert(!captured_alloc(S2, VA, 64));
    event_record(0xe2, S1);
    control(GL_EV_STREAM_WAIT, 0xe2, S2, 1 /* CU_EVENT_WAIT_EXTERNAL */, 7);
    ck_assert(!captured_alloc(S2, VA + 0x1000, 64));
    control(GL_EV_CAPTURE_BEGIN, 0, PT, 0, 9);   /* thread 9 captures its per-thread stream */
    control(GL_EV_EVENT_RECORD, 0xe3, PT, 0, 8); /* thread 8's own per-thread stream */
    stream_wait(S3, 0xe3);
    ck_assert(!captured_alloc(S3, VA + 0x2000, 64));
    control(GL_EV_EVENT_RECORD, 0xe4, PT, 0, 9); /* thread 9's, in its capture */
    stream_wait(S3, 0xe4);
    ck_assert(captured_alloc(S3, VA + 0x3000, 64));
    stream_wait(1, 0xe2); /* CU_STREAM_LEGACY: a handle no capture joins */
    ck_assert(!captured_alloc(1, VA + 0x7000, 64));
    stream_wait(S4, 0xe2); /* recorded in S1's capture: S4 joins that one */
    ck_assert(captured_alloc(S4, VA + 0x4000, 64));
    capture_end(PT, G2);
    ck_assert(!captured_alloc(S3, VA + 0x5000, 64));
    ck_assert(captured_alloc(S4, VA + 0x6000, 64));
    capture_end(S1, G1);
}
END_TEST

/* A capture's events are a ring of 32: an event recorded again keeps its
 * slot, so many records of one event give up no fork event not yet waited
 * for; 32 other events do, the oldest first. */
START_TEST(test_event_ring)
{
    capture_begin(S1);
    event_record(0xf0, S1); /* the fork, waited for later */
    for (int i = 0; i < 100; i++)
        event_record(0xe1, S1);
    for (uint64_t e = 0x100; e < 0x100 + 30; e++)
        event_record(e, S1);
    stream_wait(S2, 0xf0);
    ck_assert(captured_alloc(S2, VA, 64));
    event_record(0xf1, S1);
    for (uint64_t e = 0x200; e < 0x200 + 32; e++)
        event_record(e, S1);
    stream_wait(0x5c000ULL, 0xf1); /* given up */
    ck_assert(!captured_alloc(0x5c000ULL, VA + 0x1000, 64));
    capture_end(S1, G1);
}
END_TEST

static int sink_errors;
static const void *count_errors(const struct gl_api_error *e)
{
    if (e)
        sink_errors++;
    return NULL;
}

/* A free the driver refused, on a stream no capture began on, of a
 * capture's allocation: no node, the checks report it, and the stream has
 * not joined (its allocations stay blocks).  On a stream that joined the
 * capture, a refused free is reported too; only the capture's own stream
 * keeps one (the driver refused the capture). */
START_TEST(test_refused_free_on_another_stream)
{
    const uint64_t S3 = 0x5c000ULL;
    gl_errors_sink = count_errors;
    sink_errors = 0;
    capture_begin(S1);
    ck_assert(captured_alloc(S1, VA, 100));
    struct gl_event ev = node_ev(GL_EV_FREE, VA, 0, S3);
    ev.api = GL_API_cuMemFreeAsync;
    uint64_t t = tu_release_begin(&ev);
    tu_release_end(t, false, &ev);
    gl_errors_sink = NULL;
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    ck_assert_int_eq(sink_errors, 1);
    ck_assert(!captured_alloc(S3, VA + 0x5000, 64));
    ck_assert(tu_live_block(VA + 0x5000, NULL));
    /* S2 joins through an event; its refused free is reported. */
    event_record(0xe1, S1);
    stream_wait(S2, 0xe1);
    ev = node_ev(GL_EV_FREE, VA + 0x6000, 0, S2);
    ev.api = GL_API_cuMemFreeAsync;
    ev.stack = 5; /* an error context of its own */
    gl_errors_sink = count_errors;
    t = tu_release_begin(&ev);
    tu_release_end(t, false, &ev);
    /* On the capture's own stream, a refused free is kept. */
    ev.aux = S1;
    ev.stack = 6;
    t = tu_release_begin(&ev);
    tu_release_end(t, false, &ev);
    gl_errors_sink = NULL;
    ck_assert_int_eq(sink_errors, 2);
}
END_TEST

/* The same race for a free, which is claimed at its entry and taken at its
 * exit: a block allocated before the capture, freed on the captured stream
 * while another thread ends the capture, is freed (the driver took the free
 * as an ordinary one, or as the capture's last node: either way its memory
 * goes), not left live to be reported lost at exit; a let-go free of a
 * captured allocation's address (no block) is no error. */
START_TEST(test_free_let_go_when_the_capture_ended)
{
    struct gl_event a = {.type = GL_EV_ALLOC,
                         .kind = GL_MEM_ASYNC,
                         .api = GL_API_cuMemAllocAsync,
                         .key = VA,
                         .size = 512,
                         .aux = S1,
                         .ctx = CTX};
    gl_dispatch(&a);
    capture_begin(S1);
    ck_assert(captured_alloc(S1, VA + 4096, 64)); /* a node: no block */
    struct gl_event f = node_ev(GL_EV_FREE, VA, 0, S1);
    f.api = GL_API_cuMemFreeAsync;
    f.ctx = CTX;
    uint64_t token = tu_release_begin(&f);
    struct gl_event g = node_ev(GL_EV_FREE, VA + 4096, 0, S1);
    g.api = GL_API_cuMemFreeAsync;
    g.ctx = CTX;
    uint64_t token_g = tu_release_begin(&g);
    ck_assert(tu_live_block(VA, NULL)); /* claimed: not taken out at the entry */
    capture_end(S1, G1);                /* on another thread, in between */
    gl_errors_sink = count_errors;
    sink_errors = 0;
    tu_release_end(token, true, &f);
    tu_release_end(token_g, true, &g);
    gl_errors_sink = NULL;
    ck_assert(!tu_live_block(VA, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_int_eq(sink_errors, 0);
}
END_TEST

/* ---- node sets ---- */

START_TEST(test_node_counts)
{
    alloc_node(G1, VA, 100);
    alloc_node(G1, VA + 0x1000, 100);
    free_node(G1, VA);
    alloc_node(G2, VA + 0x2000, 100);
    ck_assert_uint_eq(gl_graphs_node_count(), 4);
    instantiate(E1, G1, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 7); /* E1 holds a copy of G1's three */
    graph_destroy(G1);
    ck_assert_uint_eq(gl_graphs_node_count(), 4);
    graph_destroy(G1); /* twice: nothing */
    ck_assert_uint_eq(gl_graphs_node_count(), 4);
    exec_destroy(E1);
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    exec_destroy(E2); /* never instantiated */
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    graph_destroy(G2);
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
}
END_TEST

START_TEST(test_reset_forgets_everything)
{
    alloc_node(G1, VA, 100);
    instantiate(E1, G1, 0);
    capture_begin(S1);
    ck_assert(captured_alloc(S1, VA + 0x1000, 100));
    ck_assert_uint_eq(gl_graphs_node_count(), 3);
    gl_graphs_component.reset();
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert(!gl_graphs_capturing());
    launch(E1);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
    /* Usable afterwards. */
    alloc_node(G1, VA, 100);
    instantiate(E1, G1, 0);
    launch(E1);
    ck_assert(tu_live_block(VA, NULL));

    /* The tracker's reset resets the graphs too. */
    capture_begin(S1);
    tu_pipeline_reset();
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert(!gl_graphs_capturing());
}
END_TEST

START_TEST(test_instantiate_copies_nodes)
{
    struct gl_event ev = node_ev(GL_EV_ALLOC, VA, 4096, G1);
    ev.device = 2;
    ev.stack = 77;
    ev.tid = 5; /* the building thread: the launch's replaces it */
    ev.type = GL_EV_GRAPH_NODE_ALLOC;
    gl_dispatch(&ev);
    instantiate(E1, G1, 0);
    graph_destroy(G1); /* programs destroy the graph right away */
    ck_assert(!tu_live_block(VA, NULL));
    launch_on(E1, S2, 1234);
    struct gl_block_info b;
    ck_assert(tu_live_block(VA, &b));
    ck_assert_uint_eq(b.kind, GL_MEM_GRAPH);
    ck_assert_uint_eq(b.size, 4096);
    ck_assert_int_eq(b.device, 2);
    ck_assert_uint_eq(b.stack, 77);
    ck_assert_uint_eq(b.api, GL_API_cuGraphAddMemAllocNode);
    ck_assert_uint_eq(b.tid, 1234);
    ck_assert_uint_eq(b.ctx, CTX);
    ck_assert_uint_eq(b.aux, S2);
    ck_assert_uint_eq(b.seq, 1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.live_bytes, 4096);

    /* Nodes added to the graph after instantiation are not the exec's. */
    alloc_node(G2, VA + 0x10000, 100);
    instantiate(E2, G2, 0);
    alloc_node(G2, VA + 0x20000, 100);
    launch(E2);
    ck_assert(tu_live_block(VA + 0x10000, NULL));
    ck_assert(!tu_live_block(VA + 0x20000, NULL));
}
END_TEST

START_TEST(test_launch_without_memory_nodes)
{
    alloc_node(G2, VA + 0x10000, 100); /* another exec with nodes exists */
    instantiate(E2, G2, 0);
    instantiate(E1, G1, 0); /* G1: no memory nodes */
    ck_assert_uint_eq(gl_graphs_node_count(), 2);
    launch(E1);
    launch(0xe9999); /* never instantiated */
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 0);
    ck_assert_uint_eq(s.frees + s.unknown_frees, 0);
    ck_assert_uint_eq(s.live_blocks, 0);

    /* An exec handle instantiated again (its destroy unseen) is the new graph's. */
    instantiate(E2, G1, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    launch(E2);
    ck_assert_uint_eq(tu_tracker_stats().allocs, 0);
}
END_TEST

START_TEST(test_more_than_32_nodes)
{
    enum { N = 40, FREED = 5 };
    for (uint64_t i = 0; i < N; i++)
        alloc_node(G1, VA + i * 0x10000, 1000 + i);
    /* Free nodes for the first allocations, in the launch's second chunk. */
    for (uint64_t i = 0; i < FREED; i++)
        free_node(G1, VA + i * 0x10000);
    instantiate(E1, G1, 0);
    launch(E1);
    struct gl_block_info b;
    for (uint64_t i = 0; i < N; i++) {
        bool live = tu_live_block(VA + i * 0x10000, &b);
        ck_assert_msg(live == (i >= FREED), "node %llu: live %d", (unsigned long long)i, live);
        if (live)
            ck_assert_uint_eq(b.size, 1000 + i);
    }
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, N);
    ck_assert_uint_eq(s.frees, FREED);
    ck_assert_uint_eq(s.live_blocks, N - FREED);
    ck_assert_uint_eq(s.unknown_frees, 0);
}
END_TEST

/* Chunk boundaries: one full chunk, then two. */
START_TEST(test_exactly_32_then_64_nodes)
{
    for (uint64_t i = 0; i < 32; i++)
        alloc_node(G1, VA + i * 0x10000, 64);
    for (uint64_t i = 0; i < 64; i++)
        alloc_node(G2, VA + i * 0x10000 + 0x8000, 64);
    instantiate(E1, G1, 0);
    instantiate(E2, G2, 0);
    launch(E1);
    ck_assert_uint_eq(tu_tracker_stats().live_blocks, 32);
    launch(E2);
    ck_assert_uint_eq(tu_tracker_stats().live_blocks, 96);
    ck_assert(tu_live_block(VA + 31 * 0x10000, NULL));
    ck_assert(tu_live_block(VA + 32 * 0x10000 + 0x8000, NULL));
    ck_assert(tu_live_block(VA + 63 * 0x10000 + 0x8000, NULL));
}
END_TEST

START_TEST(test_free_node_of_outside_block)
{
    struct gl_event a = {.type = GL_EV_ALLOC,
                         .kind = GL_MEM_DEVICE,
                         .api = GL_API_cuMemAlloc_v2,
                         .key = VA,
                         .size = 512,
                         .ctx = CTX};
    gl_dispatch(&a);
    free_node(G1, VA);
    instantiate(E1, G1, 0);
    ck_assert(tu_live_block(VA, NULL));
    launch(E1);
    ck_assert(!tu_live_block(VA, NULL));
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 1);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.live_bytes, 0);
}
END_TEST

START_TEST(test_alloc_freed_by_same_graph)
{
    alloc_node(G1, VA, 2048);
    free_node(G1, VA);
    instantiate(E1, G1, 0);
    launch(E1);
    launch(E1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.bytes_allocated, 4096);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.peak_bytes, 2048);
}
END_TEST

/* Two allocations a graph frees after both were made: a launch holds both
 * at once, and its peak says so (the frees in their place, not each right
 * after its allocation). */
START_TEST(test_launch_peak_holds_what_the_graph_frees_later)
{
    alloc_node(G1, VA, 3000);
    alloc_node(G1, VA + 0x10000, 5000);
    free_node(G1, VA);
    alloc_node(G1, VA + 0x20000, 1000);
    free_node(G1, VA + 0x10000);
    free_node(G1, VA + 0x20000);
    instantiate(E1, G1, 0);
    launch(E1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 3);
    ck_assert_uint_eq(s.frees, 3);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.peak_bytes, 8000);
}
END_TEST

/* A graph that frees memory from outside it (an earlier graph's launch) and
 * is given the same address for its own allocation, which it frees too: the
 * first free is the outside block's, and nothing is left. */
START_TEST(test_address_reused_after_freeing_outside_block)
{
    alloc_node(G1, VA, 4096); /* graph 1 allocates, never frees */
    instantiate(E1, G1, 0);
    launch(E1);
    ck_assert(tu_live_block(VA, NULL));
    free_node(G2, VA);        /* graph 2 frees it... */
    alloc_node(G2, VA, 8192); /* ...gets its address back... */
    free_node(G2, VA);        /* ...and frees that too */
    instantiate(E2, G2, 0);
    launch(E2);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.replaced, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.peak_bytes, 8192);
}
END_TEST

/* An address given back and handed out again inside one graph, the second
 * allocation kept: it is live after the launch, with its own size. */
START_TEST(test_address_reused_inside_graph)
{
    alloc_node(G1, VA, 4096);
    free_node(G1, VA);
    alloc_node(G1, VA, 1000);
    instantiate(E1, G1, 0);
    launch(E1);
    struct gl_block_info b;
    ck_assert(tu_live_block(VA, &b));
    ck_assert_uint_eq(b.size, 1000);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 2);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_uint_eq(s.replaced, 0);
    ck_assert_uint_eq(s.live_blocks, 1);
}
END_TEST

/* Captured the same way: free of an outside block, reuse, free. */
START_TEST(test_captured_reuse_of_outside_address)
{
    struct gl_event a = {.type = GL_EV_ALLOC,
                         .kind = GL_MEM_ASYNC,
                         .api = GL_API_cuMemAllocAsync,
                         .key = VA,
                         .size = 32000000,
                         .ctx = CTX,
                         .aux = S1};
    gl_dispatch(&a);
    capture_begin(S1);
    ck_assert(captured_free(S1, VA));
    ck_assert(captured_alloc(S1, VA, 32000000));
    ck_assert(captured_free(S1, VA));
    capture_end(S1, G1);
    instantiate(E1, G1, 0);
    graph_destroy(G1);
    launch(E1);
    exec_destroy(E1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.live_blocks, 0);
    ck_assert_uint_eq(s.replaced, 0);
    ck_assert_uint_eq(s.unknown_frees, 0);
    ck_assert_uint_eq(s.frees, 2);
}
END_TEST

START_TEST(test_auto_free_on_launch)
{
    alloc_node(G1, VA, 2048);
    instantiate(E1, G1, AUTO_FREE_ON_LAUNCH);
    launch(E1);
    launch(E1);
    launch(E1);
    struct gl_tracker_stats s = tu_tracker_stats();
    ck_assert_uint_eq(s.allocs, 3);
    ck_assert_uint_eq(s.frees, 2);
    ck_assert_uint_eq(s.replaced, 0);
    ck_assert_uint_eq(s.live_blocks, 1);
    struct gl_block_info b;
    ck_assert(tu_live_block(VA, &b));
    ck_assert_uint_eq(b.seq, 3);

    /* Without the flag, nothing frees before a relaunch: it lands on live memory. */
    alloc_node(G2, VA + 0x10000, 64);
    instantiate(E2, G2, 0);
    launch(E2);
    launch(E2);
    s = tu_tracker_stats();
    ck_assert_uint_eq(s.replaced, 1);
    ck_assert_uint_eq(s.live_blocks, 2);
}
END_TEST

/* ---- control events ---- */

static void apply(enum gl_event_type type, uint64_t key, uint64_t aux, uint64_t size)
{
    control(type, key, aux, size, 7);
}

START_TEST(test_apply_dispatches_control_events)
{
    apply(GL_EV_CAPTURE_BEGIN, 0, S1, 0);
    ck_assert(gl_graphs_capturing());
    ck_assert(captured_alloc(S1, VA, 128));
    apply(GL_EV_CAPTURE_END, G1, S1, 0);
    ck_assert(!gl_graphs_capturing());
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    apply(GL_EV_GRAPH_INSTANTIATE, E1, G1, AUTO_FREE_ON_LAUNCH);
    ck_assert_uint_eq(gl_graphs_node_count(), 2);
    apply(GL_EV_GRAPH_DESTROY, G1, 0, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    apply(GL_EV_GRAPH_LAUNCH, E1, S2, 0);
    struct gl_block_info b;
    ck_assert(tu_live_block(VA, &b));
    ck_assert_uint_eq(b.aux, S2);
    ck_assert_uint_eq(b.ctx, CTX);
    ck_assert_uint_eq(b.tid, 7);
    apply(GL_EV_GRAPH_LAUNCH, E1, S2, 0); /* instantiated with AUTO_FREE_ON_LAUNCH */
    ck_assert_uint_eq(tu_tracker_stats().frees, 1);
    ck_assert_uint_eq(tu_tracker_stats().replaced, 0);
    apply(GL_EV_GRAPH_EXEC_DESTROY, E1, 0, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 0);

    /* Allocations and frees on streams not captured are not the graphs'. */
    apply(GL_EV_ALLOC, VA + 0x1000, G1, 64);
    apply(GL_EV_FREE, VA, 0, 0);
    ck_assert_uint_eq(gl_graphs_node_count(), 0);
    ck_assert(!tu_live_block(VA, NULL));
    ck_assert(tu_live_block(VA + 0x1000, NULL));
}
END_TEST

START_TEST(test_tracker_apply_routes_control_events)
{
    alloc_node(G1, VA, 64);
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_GRAPH_INSTANTIATE;
    ev.key = E1;
    ev.aux = G1;
    gl_dispatch(&ev);
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_GRAPH_LAUNCH;
    ev.key = E1;
    ev.aux = S1;
    gl_dispatch(&ev);
    ck_assert(tu_live_block(VA, NULL));
    ck_assert_uint_eq(tu_tracker_stats().allocs, 1);
}
END_TEST

/* ---- fork ----
 *
 * A thread takes and drops the graphs' lock without pause; a child forked
 * meanwhile inherits it held as often as not, and would spin forever on it but
 * for gl_graphs_after_fork_child. */

static atomic_bool stop;

static void *hold_lock_often(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        graph_destroy(0xdead); /* the lock, a lookup, nothing allocated */
    return NULL;
}

START_TEST(test_after_fork_child)
{
    /* A capture with room for more nodes: the child appends without allocating. */
    capture_begin(S1);
    ck_assert(captured_alloc(S1, VA, 64));
    ck_assert_uint_eq(gl_graphs_node_count(), 1);

    atomic_store(&stop, false);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, hold_lock_often, NULL), 0);
    int failed = -1;
    for (int i = 0; i < 20 && failed < 0; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(2); /* a child stuck on the lock dies of SIGALRM */
            gl_graphs_component.after_fork();
            bool ok = captured_alloc(S1, VA + 0x1000, 64) && gl_graphs_node_count() == 2;
            capture_end(S2, 0); /* not captured: the lock, a lookup */
            graph_destroy(G1);
            _exit(ok ? 0 : 3);
        }
        ck_assert_int_gt(pid, 0);
        int status = -1;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = status;
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    ck_assert_msg(failed < 0, "a child hung on the graphs' lock or lost its nodes (status %d)",
                  failed);

    /* In this process, the reset loses nothing and leaves the lock free. */
    gl_graphs_component.after_fork();
    ck_assert_uint_eq(gl_graphs_node_count(), 1);
    ck_assert(gl_graphs_capturing());
    ck_assert(captured_alloc(S1, VA + 0x2000, 64));
    capture_end(S1, G1);
    instantiate(E1, G1, 0);
    launch(E1);
    ck_assert_uint_eq(tu_tracker_stats().live_blocks, 2);
}
END_TEST

static Suite *graphs_suite(void)
{
    Suite *s = suite_create("graphs");
    TCase *tc = tcase_create("graphs");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_capture_counting);
    tcase_add_test(tc, test_captured_alloc_and_free);
    tcase_add_test(tc, test_claim_let_go_when_the_capture_ended);
    tcase_add_test(tc, test_free_let_go_when_the_capture_ended);
    tcase_add_test(tc, test_failed_capture_drops_nodes);
    tcase_add_test(tc, test_captured_nodes_launch);
    tcase_add_test(tc, test_joined_stream_frees_a_node);
    tcase_add_test(tc, test_fork_and_join_by_events);
    tcase_add_test(tc, test_records_that_do_not_fork);
    tcase_add_test(tc, test_event_ring);
    tcase_add_test(tc, test_refused_free_on_another_stream);
    tcase_add_test(tc, test_node_counts);
    tcase_add_test(tc, test_reset_forgets_everything);
    tcase_add_test(tc, test_instantiate_copies_nodes);
    tcase_add_test(tc, test_launch_without_memory_nodes);
    tcase_add_test(tc, test_more_than_32_nodes);
    tcase_add_test(tc, test_exactly_32_then_64_nodes);
    tcase_add_test(tc, test_free_node_of_outside_block);
    tcase_add_test(tc, test_alloc_freed_by_same_graph);
    tcase_add_test(tc, test_launch_peak_holds_what_the_graph_frees_later);
    tcase_add_test(tc, test_auto_free_on_launch);
    tcase_add_test(tc, test_address_reused_after_freeing_outside_block);
    tcase_add_test(tc, test_address_reused_inside_graph);
    tcase_add_test(tc, test_captured_reuse_of_outside_address);
    tcase_add_test(tc, test_apply_dispatches_control_events);
    tcase_add_test(tc, test_tracker_apply_routes_control_events);
    tcase_add_test(tc, test_after_fork_child);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(graphs_suite)
