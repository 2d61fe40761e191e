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
 * A stream that joins a capture through an event (cuStreamWaitEvent) is
 * found when it frees one of the capture's allocations (graphs.c says why
 * that is sure): the free is a node, and so are the stream's allocations
 * after it.  Not followed: the allocations of a joined stream before that
 * (recorded as ordinary stream-ordered blocks), cuGraphExecUpdate,
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
