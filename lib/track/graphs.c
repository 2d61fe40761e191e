/* SPDX-License-Identifier: MIT */
#include "track/graphs.h"

#include <stdatomic.h>
#include <string.h>

#include "event/api.h"
#include "base/gl_uthash.h"
#include "base/spin.h"
#include "base/tool.h"
#include "event/dispatch.h"
#include "track/tracker.h"

#define MAX_JOINED 16
#define MAX_EVENTS 32 /* events recorded in a capture, the latest kept */

struct node {
    uint64_t va, size;
    uint32_t stack;
    int16_t device;
    uint16_t api;
    uint16_t flags; /* the event's GL_EVF_IGNORED (gpuleak_disable) */
    bool is_free;
};

/* The nodes of one capture, graph or executable graph, by its handle. */
struct node_set {
    uint64_t handle;
    struct node *nodes;
    uint32_t n, cap;
    bool auto_free; /* an exec instantiated with AUTO_FREE_ON_LAUNCH */
    /* A capture's: streams that joined it, waiting on an event recorded in
     * it (or found freeing its allocations: claim()), whose stream-ordered
     * calls are its nodes too; and the events recorded in it, on its stream
     * or a joined one (a ring: a fork's event is waited on soon after). */
    uint32_t njoined, next_event;
    uint32_t tid; /* the thread that began it (a default stream's handle) */
    uint64_t joined[MAX_JOINED];
    uint64_t events[MAX_EVENTS];
    UT_hash_handle hh;
};

static struct node_set *captures, *graphs, *execs;
static gl_spinlock lock;
static atomic_int capturing;    /* streams in captures */
static atomic_int exec_sets;    /* sets in execs: launches of other graphs cost one load */
static atomic_uint total_nodes; /* for tests */

/* CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, without the header here. */
#define AUTO_FREE_ON_LAUNCH 1ull
/* CU_EVENT_RECORD_EXTERNAL and CU_EVENT_WAIT_EXTERNAL: a record or wait node
 * in the graph, not a fork or join of the capture. */
#define EVENT_EXTERNAL 1ull

bool gl_graphs_capturing(void)
{
    return atomic_load_explicit(&capturing, memory_order_relaxed) > 0;
}

static struct node_set *find(struct node_set *head, uint64_t handle)
{
    struct node_set *s = NULL;
    HASH_FIND(hh, head, &handle, sizeof handle, s);
    return s;
}

static struct node_set *find_or_add(struct node_set **head, uint64_t handle)
{
    struct node_set *s = find(*head, handle);
    if (s)
        return s;
    s = gl_tool_alloc(sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->handle = handle;
    HASH_ADD(hh, *head, handle, sizeof s->handle, s);
    if (!find(*head, handle)) { /* out of memory inside uthash */
        gl_tool_free(s, sizeof *s);
        return NULL;
    }
    return s;
}

static bool append(struct node_set *s, const struct node *n)
{
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 4;
        struct node *v = gl_tool_alloc(cap * sizeof *v);
        if (!v)
            return false;
        if (s->n)
            memcpy(v, s->nodes, s->n * sizeof *v);
        if (s->nodes)
            gl_tool_free(s->nodes, s->cap * sizeof *v);
        s->nodes = v;
        s->cap = cap;
    }
    s->nodes[s->n++] = *n;
    atomic_fetch_add(&total_nodes, 1);
    return true;
}

static void clear(struct node_set *s)
{
    atomic_fetch_sub(&total_nodes, s->n);
    s->n = 0;
    s->njoined = 0;
    s->next_event = 0;
    memset(s->events, 0, sizeof s->events);
}

static void drop(struct node_set **head, struct node_set *s)
{
    HASH_DEL(*head, s);
    clear(s);
    if (s->nodes)
        gl_tool_free(s->nodes, s->cap * sizeof *s->nodes);
    gl_tool_free(s, sizeof *s);
}

static struct node node_of(const struct gl_event *ev, bool is_free)
{
    return (struct node){.va = ev->key,
                         .size = ev->size,
                         .stack = ev->stack,
                         .device = ev->device,
                         .api = ev->api,
                         .flags = (uint16_t)(ev->flags & GL_EVF_IGNORED),
                         .is_free = is_free};
}

static void capture_begin(uint64_t stream, uint32_t tid)
{
    gl_spin_lock(&lock);
    bool existed = find(captures, stream) != NULL;
    struct node_set *s = find_or_add(&captures, stream);
    if (s) {
        clear(s);
        s->tid = tid;
    }
    gl_spin_unlock(&lock);
    if (s && !existed) {
        atomic_fetch_add(&capturing, 1);
        gl_dispatch_arm(1); /* its stream's allocations and frees are nodes now */
    }
}

static void capture_end(uint64_t stream, uint64_t graph)
{
    gl_spin_lock(&lock);
    struct node_set *s = find(captures, stream);
    if (!s) {
        gl_spin_unlock(&lock);
        return;
    }
    struct node_set *g = graph && s->n ? find_or_add(&graphs, graph) : NULL;
    for (uint32_t i = 0; g && i < s->n; i++)
        append(g, &s->nodes[i]);
    drop(&captures, s);
    gl_spin_unlock(&lock);
    atomic_fetch_sub(&capturing, 1);
    gl_dispatch_arm(-1);
}

/* The capture a stream is in: its own, or one it joined.  Under the lock. */
static struct node_set *capture_of(uint64_t stream)
{
    struct node_set *s = find(captures, stream), *tmp;
    if (s)
        return s;
    HASH_ITER(hh, captures, s, tmp)
    {
        for (uint32_t i = 0; i < s->njoined; i++)
            if (s->joined[i] == stream)
                return s;
    }
    return NULL;
}

/* The capture whose allocation node at va is still unfreed in it (its last
 * node there an allocation), or NULL.  Under the lock. */
static struct node_set *capture_holding(uint64_t va)
{
    struct node_set *s, *tmp;
    HASH_ITER(hh, captures, s, tmp)
    {
        for (uint32_t i = s->n; i-- > 0;)
            if (s->nodes[i].va == va) {
                if (!s->nodes[i].is_free)
                    return s;
                break;
            }
    }
    return NULL;
}

/* Whether stream is being captured: its own capture, or one it joined. */
static bool stream_captured(uint64_t stream)
{
    gl_spin_lock(&lock);
    bool found = capture_of(stream) != NULL;
    gl_spin_unlock(&lock);
    return found;
}

/* Join stream to capture s, unless it is in a capture already or a default
 * stream's handle (every thread's per-thread stream is 0 to the hooks:
 * graphs.h).  Under the lock. */
static void join(struct node_set *s, uint64_t stream)
{
    if (stream > 2 && !capture_of(stream) && s->njoined < MAX_JOINED)
        s->joined[s->njoined++] = stream;
}

/* A CUDA event recorded on stream by thread tid, while some capture is in
 * progress: in that capture if the stream is (its own or joined), and out of
 * any other it was recorded in before (a record replaces the event's last
 * one).  Not in it: an external record (a node of the graph that other work
 * may wait for, no fork), or a record on a default stream's handle by a
 * thread other than the capture's (every thread's per-thread stream has the
 * same handle, graphs.h).  A capture keeps its events in a ring, a
 * re-recorded one in its slot; only when all are taken is one given up, the
 * slots in turn. */
static void event_recorded(uint64_t event, uint64_t stream, uint32_t tid, uint64_t flags)
{
    if (!event)
        return;
    gl_spin_lock(&lock);
    struct node_set *s, *tmp, *in = capture_of(stream);
    if (in && ((flags & EVENT_EXTERNAL) || (stream <= 2 && in->tid != tid)))
        in = NULL;
    bool kept = false;
    HASH_ITER(hh, captures, s, tmp)
    {
        for (uint32_t i = 0; i < MAX_EVENTS; i++)
            if (s->events[i] == event) {
                if (s == in && !kept)
                    kept = true;
                else
                    s->events[i] = 0;
            }
    }
    for (uint32_t i = 0; in && !kept && i < MAX_EVENTS; i++)
        if (!in->events[i]) {
            in->events[i] = event;
            kept = true;
        }
    if (in && !kept)
        in->events[in->next_event++ % MAX_EVENTS] = event;
    gl_spin_unlock(&lock);
}

/* Stream made to wait for event: if the event was recorded in a capture,
 * the stream has joined it (the fork of a capture to a second stream; its
 * join back is the same call the other way, on the capture's own stream).
 * An external wait is a node of the graph, no join. */
static void stream_waited(uint64_t stream, uint64_t event, uint64_t flags)
{
    if ((flags & EVENT_EXTERNAL) || !event)
        return;
    gl_spin_lock(&lock);
    struct node_set *s, *tmp, *in = NULL;
    HASH_ITER(hh, captures, s, tmp)
    {
        for (uint32_t i = 0; i < MAX_EVENTS && !in; i++)
            if (s->events[i] == event)
                in = s;
    }
    if (in)
        join(in, stream);
    gl_spin_unlock(&lock);
}

/* A stream-ordered free, on a stream other than a capture's own, of an
 * allocation a capture in progress made: a free node of that capture, on a
 * stream that joined it through an event (cuStreamWaitEvent on an event
 * recorded in the capture: the fork and join of NVIDIA's graphMemoryNodes
 * sample) where the join itself was not seen (an event recorded where the
 * hooks do not look).  Nothing else can free that address now: its memory
 * exists only once a graph holding the node is launched.  Once the driver
 * accepted it (take()), the stream has joined: its later stream-ordered
 * calls are the capture's nodes too, until the capture ends (what it
 * allocated before that was recorded as blocks). */
static bool joins_by_free(const struct gl_event *ev)
{
    gl_spin_lock(&lock);
    bool held = capture_holding(ev->key) != NULL;
    gl_spin_unlock(&lock);
    struct gl_block_info live;
    return held && !gl_tracker_lookup(ev->key, &live); /* a live block comes first */
}

/* The route stage: a stream-ordered allocation or free on a stream being
 * captured (its own capture or one it joined) is a node of the graph being
 * built, not a block. */
static bool claim(const struct gl_event *ev)
{
    if (!gl_graphs_capturing())
        return false;
    if (ev->type == GL_EV_ALLOC && ev->kind == GL_MEM_ASYNC)
        return stream_captured(ev->aux);
    if (ev->type == GL_EV_FREE && gl_api_is_stream_ordered_free(ev->api))
        return stream_captured(ev->aux) || joins_by_free(ev);
    return false;
}

/* A claimed call, complete: recorded as a node if it succeeded (a free is
 * claimed at its entry and taken at its exit).  False when the capture ended
 * since the claim, on another thread: the call is then no node.  A free the
 * driver refused is let go but on the capture's own stream (where the
 * capture is what the driver refused: it invalidates it): the checks report
 * it, and the stream is not taken to have joined. */
static bool take(const struct gl_event *ev)
{
    bool is_free = ev->type == GL_EV_FREE;
    bool failed = ev->flags & GL_EVF_FAILED;
    struct node n = node_of(ev, is_free);
    gl_spin_lock(&lock);
    struct node_set *s = capture_of(ev->aux);
    bool own = s && s->handle == ev->aux; /* its own stream, not a joined one */
    if (!s && is_free && !failed) {
        s = capture_holding(ev->key); /* on a stream that joined */
        if (s)
            join(s, ev->aux);
    }
    if (s && !failed)
        append(s, &n);
    gl_spin_unlock(&lock);
    return failed ? own : s != NULL;
}

static void node_added(const struct gl_event *ev, bool is_free)
{
    struct node n = node_of(ev, is_free);
    gl_spin_lock(&lock);
    struct node_set *g = find_or_add(&graphs, ev->aux);
    if (g)
        append(g, &n);
    gl_spin_unlock(&lock);
}

static void instantiate(uint64_t exec, uint64_t graph, uint64_t flags)
{
    gl_spin_lock(&lock);
    struct node_set *g = find(graphs, graph), *e = find(execs, exec);
    if (e) { /* a handle reused after a destroy gpuleak did not see */
        drop(&execs, e);
        atomic_fetch_sub(&exec_sets, 1);
    }
    /* Only graphs with memory nodes get a set: most launches look up nothing. */
    if (g && g->n && (e = find_or_add(&execs, exec))) {
        atomic_fetch_add(&exec_sets, 1);
        e->auto_free = flags & AUTO_FREE_ON_LAUNCH;
        for (uint32_t i = 0; i < g->n; i++)
            append(e, &g->nodes[i]);
    }
    gl_spin_unlock(&lock);
}

#define STEPS 32

/* A launch runs the exec's nodes in the order they were captured or added,
 * which follows the graph's dependencies: each allocation node makes a
 * block, each free node frees in its place (a block of the graph's own, or
 * one from outside the graph or an earlier launch), so that what the
 * graph's later frees give back counts beside what it allocates meanwhile,
 * and an address the graph gives back and hands out again is two blocks. */
static void launch(const struct gl_event *cause)
{
    uint64_t exec = cause->key, stream = cause->aux, ctx = cause->ctx;
    uint32_t tid = cause->tid;
    if (!atomic_load_explicit(&exec_sets, memory_order_relaxed))
        return;
    struct node steps[STEPS];
    bool auto_free = false;
    /* Chunks copied out under the lock, applied outside it: the consumers of
     * the launch's blocks take their own locks and may report errors. */
    for (uint32_t from = 0;; from += STEPS) {
        uint32_t k = 0;
        gl_spin_lock(&lock);
        struct node_set *e = find(execs, exec);
        for (uint32_t i = from; e && i < e->n && k < STEPS; i++, k++)
            steps[k] = e->nodes[i];
        if (e)
            auto_free = e->auto_free;
        gl_spin_unlock(&lock);
        for (uint32_t i = 0; i < k; i++) {
            const struct node *n = &steps[i];
            struct gl_event free_ev = {.type = GL_EV_FREE,
                                       .api = GL_API_cuGraphAddMemFreeNode,
                                       .tid = tid,
                                       .key = n->va,
                                       .ctx = ctx,
                                       .aux = stream,
                                       .time_ns = cause->time_ns};
            if (n->is_free) {
                /* In its place among the graph's nodes, as the graph runs:
                 * what the graph frees later was held beside what it
                 * allocated meanwhile (the launch's peak). */
                gl_dispatch_derived(&free_ev);
                continue;
            }
            struct gl_block_info live;
            if (auto_free && gl_tracker_lookup(n->va, &live)) {
                /* This launch frees what the previous one allocated. */
                struct gl_event again = free_ev;
                again.api = GL_API_cuGraphLaunch;
                gl_dispatch_derived(&again);
            }
            struct gl_event ev = {.type = GL_EV_ALLOC,
                                  .kind = GL_MEM_GRAPH,
                                  .flags = n->flags,
                                  .api = n->api,
                                  .device = n->device,
                                  .tid = tid,
                                  .stack = n->stack,
                                  .key = n->va,
                                  .size = n->size,
                                  .ctx = ctx,
                                  .aux = stream,
                                  .time_ns = cause->time_ns};
            gl_dispatch_derived(&ev);
        }
        if (k < STEPS)
            return;
    }
}

static void destroy(uint64_t graph)
{
    gl_spin_lock(&lock);
    struct node_set *g = find(graphs, graph);
    if (g)
        drop(&graphs, g);
    gl_spin_unlock(&lock);
}

static void exec_destroy(uint64_t exec)
{
    gl_spin_lock(&lock);
    struct node_set *e = find(execs, exec);
    if (e) {
        drop(&execs, e);
        atomic_fetch_sub(&exec_sets, 1);
    }
    gl_spin_unlock(&lock);
}

/* ---- the observe stage: graphs' control calls ---- */

static void on_capture_begin(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    capture_begin(ev->aux, ev->tid);
}

static void on_capture_end(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    capture_end(ev->aux, ev->key);
}

static void on_event_record(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    event_recorded(ev->key, ev->aux, ev->tid, ev->size);
}

static void on_stream_wait(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    stream_waited(ev->aux, ev->key, ev->size);
}

static void on_instantiate(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    instantiate(ev->key, ev->aux, ev->size);
}

static void on_launch(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    launch(ev);
}

static void on_destroy(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    destroy(ev->key);
}

static void on_exec_destroy(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    exec_destroy(ev->key);
}

static void on_node_alloc(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    node_added(ev, false);
}

static void on_node_free(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)blk;
    node_added(ev, true);
}

unsigned gl_graphs_node_count(void) { return atomic_load(&total_nodes); }

static void reset(void)
{
    gl_spin_lock(&lock);
    struct node_set *s, *tmp;
    HASH_ITER(hh, captures, s, tmp) drop(&captures, s);
    HASH_ITER(hh, graphs, s, tmp) drop(&graphs, s);
    HASH_ITER(hh, execs, s, tmp) drop(&execs, s);
    atomic_store(&capturing, 0);
    atomic_store(&exec_sets, 0);
    gl_spin_unlock(&lock);
}

static void after_fork(void) { gl_spin_reset(&lock); }

static const struct gl_consumer consumer = {
    .claim = claim,
    .take = take,
    .on =
        {
            [GL_EV_CAPTURE_BEGIN] = on_capture_begin,
            [GL_EV_CAPTURE_END] = on_capture_end,
            [GL_EV_EVENT_RECORD] = on_event_record,
            [GL_EV_STREAM_WAIT] = on_stream_wait,
            [GL_EV_GRAPH_INSTANTIATE] = on_instantiate,
            [GL_EV_GRAPH_LAUNCH] = on_launch,
            [GL_EV_GRAPH_DESTROY] = on_destroy,
            [GL_EV_GRAPH_EXEC_DESTROY] = on_exec_destroy,
            [GL_EV_GRAPH_NODE_ALLOC] = on_node_alloc,
            [GL_EV_GRAPH_NODE_FREE] = on_node_free,
        },
};

const struct gl_component gl_graphs_component = {
    .name = "graphs",
    .reset = reset,
    .after_fork = after_fork,
    .consumer = &consumer,
};
