/* SPDX-License-Identifier: MIT */
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
 * (derived allocations, with allocation numbers of the launch) and applies its free
 * nodes; an allocation the same graph frees is counted as allocated and freed.
 *
 * A capture forks to other streams and joins back through CUDA events: an
 * event recorded in the capture (cuEventRecord on its stream, or on a stream
 * that joined it) and another stream made to wait for it (cuStreamWaitEvent)
 * joins that stream to the capture, and its stream-ordered allocations and
 * frees are the capture's nodes until the capture ends (not an external
 * record or wait, CU_EVENT_RECORD_EXTERNAL: a node of the graph; nor a
 * record on a default stream's handle by a thread other than the one that
 * began the capture).  Those two calls
 * make events only while a capture is in progress (event/event.h).  A
 * stream whose join was not seen is still found when it frees one of the
 * capture's allocations (graphs.c says why that is sure).  Not followed:
 * cuStreamUpdateCaptureDependencies, cuGraphExecUpdate,
 * cuGraphClone, cuGraphDestroyNode, child graph nodes, launches from the
 * device.  Captures are keyed by stream handle: two threads capturing their
 * per-thread default streams (_ptsz calls with stream 0) are not told apart.
 *
 * A consumer of events (event/dispatch.h): a router while a stream is being
 * captured (it claims that stream's stream-ordered allocations and frees as
 * nodes), an observer of the graphs' control calls and of memory nodes added
 * explicitly, and a producer of derived events at each launch.  Handlers run
 * inside CUDA calls: no CUDA, no malloc (tool memory), one spinlock held only
 * around the sets, never while a launch's blocks are dispatched.  Until a
 * capture begins, no allocation is offered to it. */
#ifndef GPULEAK_GRAPHS_H
#define GPULEAK_GRAPHS_H

#include <stdbool.h>

#include "event/dispatch.h"

/* reset forgets every capture, graph and executable graph. */
extern const struct gl_component gl_graphs_component;

/* Whether any stream is being captured now. */
bool gl_graphs_capturing(void);
/* Nodes currently recorded (tests). */
unsigned gl_graphs_node_count(void);

#endif
