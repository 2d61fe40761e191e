/* Graph memory: a graph's allocation nodes become blocks when a launch runs them.
 *
 * A memory node (cuGraphAddMemAllocNode, or cuMemAllocAsync on a stream being
 * captured) fixes an address when the graph is built, but memory exists there
 * only from a launch of an executable graph holding the node until a free node
 * of the graph runs, the program frees the address (cuMemFreeAsync, cuMemFree),
 * or the next launch of a graph instantiated with AUTO_FREE_ON_LAUNCH frees it.
 * Recording the node as a block when it is built would report a graph never
 * launched as a leak, and miss the memory of every launch after the first free.
 *
 * So this module keeps node sets: per stream while it is captured, per graph,
 * and per executable graph (copied at instantiation: programs destroy the graph
 * right after), each node with the address, size, device, API and the stack of
 * the call that built it.  A launch turns the set's allocation nodes into blocks
 * (gl_tracker_alloc, allocation numbers of the launch) and applies its free
 * nodes; an allocation the same graph frees is counted as allocated and freed.
 *
 * Not followed: streams that join a capture through events (their allocations
 * are recorded as ordinary stream-ordered blocks), cuGraphExecUpdate,
 * cuGraphClone, cuGraphDestroyNode, child graph nodes, launches from the
 * device.  Captures are keyed by stream handle: two threads capturing their
 * per-thread default streams (_ptsz calls with stream 0) are not told apart.
 *
 * All functions are called from CUPTI callbacks: no CUDA, no malloc (tool
 * memory), one spinlock held only around the sets, never while the tracker
 * runs.  gl_graphs_capturing() is one relaxed load, for the allocation hot path. */
#ifndef GPULEAK_GRAPHS_H
#define GPULEAK_GRAPHS_H

#include <stdbool.h>
#include <stdint.h>

#include "event/event.h"

/* Whether any stream is being captured now (cheap; false almost always). */
bool gl_graphs_capturing(void);

/* cuStreamBeginCapture* succeeded on stream. */
void gl_graphs_capture_begin(uint64_t stream);
/* cuStreamEndCapture returned: the nodes captured on stream join graph (0: the
 * capture failed, and they are dropped). */
void gl_graphs_capture_end(uint64_t stream, uint64_t graph);

/* Whether stream is being captured now. */
bool gl_graphs_stream_captured(uint64_t stream);

/* A stream-ordered allocation (ev: ALLOC, aux = stream, device and stack set)
 * or a free (FREE, aux = stream, key) on a stream being captured: recorded as a
 * node, and true; false when the stream is not being captured. */
bool gl_graphs_captured_alloc(const struct gl_event *ev);
bool gl_graphs_captured_free(const struct gl_event *ev);

/* A memory node added to a graph explicitly (ev->aux = the graph). */
void gl_graphs_node_alloc(const struct gl_event *ev);
void gl_graphs_node_free(const struct gl_event *ev);

/* cuGraphInstantiate*: exec holds a copy of graph's nodes. */
void gl_graphs_instantiate(uint64_t exec, uint64_t graph, uint64_t flags);
/* cuGraphLaunch succeeded: the launch's allocations become blocks and its free
 * nodes free theirs.  tid, ctx and stream describe the launch. */
void gl_graphs_launch(uint64_t exec, uint64_t stream, uint64_t ctx, uint32_t tid);
void gl_graphs_destroy(uint64_t graph);
void gl_graphs_exec_destroy(uint64_t exec);

/* A control event (GL_EV_CAPTURE_BEGIN ... GL_EV_GRAPH_EXEC_DESTROY, event.h)
 * dispatched to the functions above. */
void gl_graphs_apply(const struct gl_event *ev);

/* Nodes currently recorded (tests). */
unsigned gl_graphs_node_count(void);
/* Forget everything (tests, tracker reset). */
void gl_graphs_reset(void);
void gl_graphs_after_fork_child(void);

#endif
