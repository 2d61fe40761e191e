/* SPDX-License-Identifier: MIT */
/* The dispatcher: the one seam between what observes the program and what
 * reacts to it.
 *
 *   producers                 dispatcher                consumers
 *   observe/cupti.c  ---\                            /-- route    track/graphs.c
 *   event/replay.c   ----+--> gl_dispatch*() -------+--- state    track/tracker.c
 *   lib/client_api.c ---/                            \-- observe  track/stats.c, ...
 *
 * A producer only turns what it observes into struct gl_event (event/event.h)
 * and hands it here; it never calls a consumer.  A consumer receives events
 * and never learns which producer made them.  Who the consumers are, in what
 * order, and what else keeps process state, is one list: the registry
 * (lib/components.c), which also drives reset (tests, replays) and the fork
 * child's clean-up.
 *
 * Each event passes three stages, in order:
 *
 *   route    a consumer may claim the event as its own: the graphs take the
 *            stream-ordered allocations and frees of a stream being captured
 *            (memory nodes, not blocks).  A claimed event goes to its
 *            claimer's take() and nowhere else, unless take() lets it go (the
 *            capture ended meanwhile, on another thread): then on to the state
 *            stage.  Routers are asked only while one of them is armed
 *            (gl_dispatch_arm), so the common case pays one relaxed load.
 *   state    the block table (track/tracker.c) resolves the event to the block
 *            it concerns: the block made, freed, released.  It completes the
 *            event (allocation numbers; a free's is the freed block's) and
 *            fills the block record the observers get.  Bulk changes (a
 *            context destroyed, a block found replaced, a handle freed by its
 *            last unmap) reach the observers as derived frees
 *            (gl_dispatch_effect), one per block, before the event itself.
 *   observe  every other consumer, in the registry's order, through its
 *            handler for the event's type: statistics, indexes, the API
 *            checks, outputs.  They get the event and the block (NULL: the
 *            event concerned no known block).
 *
 * Beside the stages, the recorder (one consumer: the saved event log,
 * save/log_writer.h) gets every event a producer made, whether a router
 * claimed it or not, in an order a replay can follow: an allocation once
 * complete (its number filled), just before the observers; a release at its
 * beginning, once the block is taken out (the driver may hand its address to
 * another thread before the call returns), and again at its end only if the
 * driver refused it (GL_EVF_FAILED).  Derived events a replay makes again;
 * of them the recorder gets only allocations (a graph launch's blocks), for
 * their allocation numbers.
 *
 * Releases are two-phase, because the driver may reuse an address as soon as
 * it is released and may refuse the release: gl_dispatch_begin() at the
 * call's entry takes the block out (another thread's allocation at that
 * address then finds it gone), and gl_dispatch_end() at its exit confirms or,
 * when the call failed (GL_EVF_FAILED), puts it back.  Everything else is
 * complete at once (gl_dispatch).
 *
 * Rules for consumers: handlers run on the thread that made the call, inside
 * the CUDA call when the producer is CUPTI: no CUDA call, no malloc, no lock
 * but a leaf spinlock held briefly; derived frees may be delivered while the
 * block table holds a shard's lock.  The first error of a kind is the
 * exception (track/errors.h).  The tables are built by gl_dispatch_start()
 * before events flow and read without locks. */
#ifndef GPULEAK_DISPATCH_H
#define GPULEAK_DISPATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "event/block.h"
#include "event/event.h"

/* ---- consumers ---- */

typedef void (*gl_event_fn)(const struct gl_event *ev, const struct gl_block_info *blk);
typedef bool (*gl_resolve_fn)(struct gl_event *ev, struct gl_block_info *blk);

struct gl_consumer {
    /* observe: one handler per event type it wants (NULL: not called). */
    gl_event_fn on[GL_EV_NTYPES];
    /* route: claim(ev) true takes ev out of the pipeline; take(ev) then gets
     * it, complete (for a release, at its end, maybe GL_EVF_FAILED), and says
     * whether it kept it: a complete event it let go (what it claimed for
     * ended meanwhile, on another thread) goes on to the state stage. */
    bool (*claim)(const struct gl_event *ev);
    bool (*take)(const struct gl_event *ev);
    /* state (one consumer): resolve an event of each type it keeps, filling
     * *blk when a block is concerned (returns true); releases in two phases,
     * begin returning a token (an aligned pointer, or 0: nothing taken out). */
    gl_resolve_fn resolve[GL_EV_NTYPES];
    uint64_t (*begin)(struct gl_event *ev);
    bool (*end)(uint64_t token, struct gl_event *ev, struct gl_block_info *blk);
    /* The recorder's (see above): every event a producer made, complete. */
    gl_event_fn record;
    /* At the entry of an allocation, whose event comes at its exit (ev->type
     * set, nothing else known): ask for the lines the handlers will touch
     * then (base/warm.h: gl_warm), changing nothing.  Releases do not warm
     * (observe/call.h says why).  NULL: nothing to warm. */
    void (*warm)(const struct gl_event *ev);
    /* Whether to attach it now (its options asked for it); NULL: always. */
    bool (*wanted)(void);
    unsigned flags; /* GL_CONSUMER_* */
};
#define GL_CONSUMER_TIMED 0x1 /* wants ev->time_ns (read once per event for all) */
/* Observes only while asked for (gl_dispatch_demand): after the other
 * observers, and while nobody asks, at the cost of one predictable branch
 * per event (the profiled regions, track/regions.h). */
#define GL_CONSUMER_ON_DEMAND 0x2
/* Wants the context of every event, releases included (it writes events out
 * for a replay: --save).  Without one, a producer may leave a release's
 * context unasked (GL_EVF_CTX_LATER): 25 ns a call saved on the driver's
 * path, and a release needs its context only for an error's device. */
#define GL_CONSUMER_CONTEXTS 0x4

/* What keeps process state inside the program: consumers, and services that
 * only need resetting (tests, replays) or cleaning up in a fork child. */
struct gl_component {
    const char *name;
    void (*reset)(void);      /* forget everything, keep the configuration */
    void (*after_fork)(void); /* in a fork child: locks a vanished thread may have held */
    const struct gl_consumer *consumer;
};

/* The registry (lib/components.c), NULL-terminated and in order: reset and
 * after_fork run in this order, and observers see events in it.  Named by the
 * runtime first thing (its constructor), so that a fork child is cleaned up
 * even before CUDA starts. */
void gl_dispatch_set_registry(const struct gl_component *const *list);

/* Attach every wanted consumer of the registry (or of list, for tests of the
 * dispatcher itself; NULL: the registry) and build the tables.  Call once the
 * options are set, before events flow. */
void gl_dispatch_start(const struct gl_component *const *list);
/* Every component's reset, in order. */
void gl_dispatch_reset(void);
/* Every component's after_fork, in order (a pthread_atfork child handler). */
void gl_dispatch_after_fork(void);
/* GPULEAK_BENCH=noobserve (observe/call.c): rebuild the tables with the
 * state stage and the routers only (on), or with every wanted consumer
 * again, so that a benchmark can tell what the observers cost the calling
 * thread.  Before events flow, as gl_dispatch_start.  Nothing is counted,
 * reported or written (--save, --memory-viz) while it is on. */
void gl_dispatch_bench_without_observers(bool on);
/* The same for one consumer, by its component's name ("observers": every
 * observer; "everything": every consumer, the state stage, routers and
 * recorder too, for GPULEAK_BENCH=nostate: what a producer alone costs the
 * calling thread, decoding and stacks included; NULL: none left out), for
 * GPULEAK_BENCH=alternate (observe/alternate.h), between two calls of a
 * program's one thread. */
void gl_dispatch_bench_leave_out(const char *name);
/* Whether name is one that can be left out: "observers", or a component of
 * the registry attached now that observes or records (never the state stage
 * or a router). */
bool gl_dispatch_bench_can_leave_out(const char *name);
/* Whether a consumer of that name is attached now (-v, tests). */
bool gl_dispatch_attached(const char *name);

/* A router has (+1) or no longer has (-1) something it may claim. */
void gl_dispatch_arm(int delta);
/* An observer on demand (GL_CONSUMER_ON_DEMAND) wants (+1) or no longer wants
 * (-1) events: while the count is 0, none is called.  A producer's thread may
 * see a change late: an event racing with the call may or may not reach it. */
void gl_dispatch_demand(int delta);

/* An event a consumer makes from another (a graph launch's blocks): state and
 * observe stages, marked GL_EVF_DERIVED. */
bool gl_dispatch_derived(struct gl_event *ev);
/* What the state stage found changed besides the event's own block (each
 * block a context took with it...): a derived FREE of blk, to the observers. */
void gl_dispatch_effect(struct gl_event *ev, const struct gl_block_info *blk);

/* ---- producers ---- */

/* The gate: events flow only while the word the runtime named holds
 * GL_DISPATCH_OPEN (not before CUDA starts, not after the exit report, not in
 * a fork child).  Producers ask before they decode anything. */
#define GL_DISPATCH_OPEN 1
extern const _Atomic int *gl_dispatch_gate __attribute__((visibility("hidden")));
void gl_dispatch_set_gate(const _Atomic int *word);
static inline bool gl_dispatch_open(void)
{
    return atomic_load_explicit(gl_dispatch_gate, memory_order_acquire) == GL_DISPATCH_OPEN;
}

/* A complete event (releases included: begun and ended at once).  Returns
 * whether it concerned a known block (a client API call reports a miss). */
static inline bool gl_dispatch(struct gl_event *ev);
/* A release (FREE, VMM_RELEASE) at the call's entry.  Returns a token for
 * gl_dispatch_end, never 0. */
static inline uint64_t gl_dispatch_begin(struct gl_event *ev);
/* Its exit: ev decoded again, GL_EVF_FAILED set when the driver refused. */
static inline void gl_dispatch_end(uint64_t token, struct gl_event *ev);

/* ---- placement: the device of an event, from what the producer knows ----
 * Producers leave device = GL_DEVICE_FROM_CONTEXT where the lookup would be
 * wasted on the hot path (a release's exit: the block knows its device); a
 * consumer that needs it (an error report) asks here.  The producer that
 * knows contexts installs the lookups; without one, devices are unknown. */
struct gl_placement {
    int (*context_device)(uint64_t ctx);
    /* The context current on the calling thread, for an event whose
     * producer left it unasked (GL_EVF_CTX_LATER); NULL: never left so. */
    uint64_t (*current_context)(void);
};
void gl_dispatch_set_placement(const struct gl_placement *p);
/* The context current on the calling thread, asked of the placement (0 when
 * none can tell): for a producer that asks only when needed. */
uint64_t gl_dispatch_current_context(void);
/* The event's context: ev->ctx, or asked now when the producer left it
 * unasked (GL_EVF_CTX_LATER: only on the call's thread, while it runs, as a
 * consumer's handler is). */
static inline uint64_t gl_dispatch_ctx(const struct gl_event *ev)
{
    return __builtin_expect(ev->flags & GL_EVF_CTX_LATER, 0) ? gl_dispatch_current_context()
                                                             : ev->ctx;
}
/* Whether an attached consumer wants every event's context. */
static inline bool gl_dispatch_wants_contexts(void);
int gl_dispatch_device_of(const struct gl_event *ev);

/* ---- the hot path, inlined into producers ----
 * The dispatcher's inside, in the header only so that a producer pays no call
 * of its own per event: a few loads and one indirect call per stage's
 * consumer.  Nothing below is for consumers. */

#define GL_DISPATCH_MAX 32 /* consumers (and routers) attached at once */

#define GL_DISPATCH_ON_DEMAND_MAX 4 /* observers on demand */

#define GL_DISPATCH_WARM_MAX 3 /* consumers that warm (gl_consumer.warm) */

struct gl_dispatch_tables {
    /* First what every event or call entry reads, in one line: in a real
     * program it comes from the outer caches at each call (bench/cold). */
    uint64_t (*begin)(struct gl_event *ev);
    bool (*end)(uint64_t token, struct gl_event *ev, struct gl_block_info *blk);
    gl_event_fn record;
    bool timed;
    bool contexts; /* an attached consumer is GL_CONSUMER_CONTEXTS */
    /* The consumers' warm functions (gl_consumer.warm), NULL-ended. */
    void (*warm[GL_DISPATCH_WARM_MAX + 1])(const struct gl_event *ev);
    gl_resolve_fn resolve[GL_EV_NTYPES]; /* the state stage's */
    /* Per event type, the observers' handlers in registry order, NULL-ended. */
    gl_event_fn observe[GL_EV_NTYPES][GL_DISPATCH_MAX + 1];
    /* Those of the observers on demand, called while demand > 0. */
    gl_event_fn on_demand[GL_EV_NTYPES][GL_DISPATCH_ON_DEMAND_MAX + 1];
    /* Last, and never cleared by gl_dispatch_start: counts that change at
     * any time, from any thread (a rebuild keeps every change made to them). */
    _Atomic int armed;  /* routers with something to claim: while 0, none is asked */
    _Atomic int demand; /* beside armed: the line a routed event loads anyway */
};
/* Hidden: the runtime reaches it directly, not through the GOT. */
extern struct gl_dispatch_tables gl_dispatch_tables __attribute__((visibility("hidden")));
/* Out of line: what the hot path rarely needs. */
uint64_t gl_dispatch_clock_ns(void);
/* The router that claims ev, as an index + 1 (0: none). */
unsigned gl_dispatch_claimed_by(const struct gl_event *ev);
bool gl_dispatch_take(unsigned router, struct gl_event *ev);
/* A release claimed at its entry and let go at its exit (a capture ended on
 * another thread while the call was in the driver, which took the free as
 * an ordinary one or as the capture's last node: it cannot be told): a
 * block live at its key is released now, through the state stage and the
 * observers; none, and the key was a node's, with nothing to report.  True
 * if a block was released. */
bool gl_dispatch_release_late(struct gl_event *ev);
/* The observers on demand, while asked for. */
void gl_dispatch_observe_on_demand(const struct gl_event *ev, const struct gl_block_info *blk);

/* Tokens: a state token (an aligned pointer or 0) with bit 0 set, or a claim,
 * (router index << 3) | 2; never 0, so a producer can tell "begun" apart. */
#define GL_DISPATCH_TOKEN_STATE 1u
#define GL_DISPATCH_TOKEN_CLAIM 2u

#define GL_DISPATCH_HOT static inline __attribute__((always_inline))

GL_DISPATCH_HOT void gl_dispatch_stamp(struct gl_event *ev)
{
    if (__builtin_expect(gl_dispatch_tables.timed, 0) && !ev->time_ns)
        ev->time_ns = gl_dispatch_clock_ns();
}

GL_DISPATCH_HOT void gl_dispatch_observe(const struct gl_event *ev, const struct gl_block_info *blk)
{
    for (gl_event_fn const *f = gl_dispatch_tables.observe[ev->type]; *f; f++)
        (*f)(ev, blk);
    if (__builtin_expect(
            atomic_load_explicit(&gl_dispatch_tables.demand, memory_order_relaxed) != 0, 0))
        gl_dispatch_observe_on_demand(ev, blk);
}

GL_DISPATCH_HOT void gl_dispatch_record(const struct gl_event *ev)
{
    if (__builtin_expect(gl_dispatch_tables.record != NULL, 0) &&
        (!(ev->flags & GL_EVF_DERIVED) || ev->type == GL_EV_ALLOC))
        gl_dispatch_tables.record(ev, NULL);
}

/* Whether a router is armed (gl_dispatch_arm): the events only a router's
 * work needs (a capture's forks and joins, event/event.h) are made only then. */
GL_DISPATCH_HOT bool gl_dispatch_armed(void)
{
    return atomic_load_explicit(&gl_dispatch_tables.armed, memory_order_relaxed) != 0;
}

GL_DISPATCH_HOT unsigned gl_dispatch_route(const struct gl_event *ev, bool route)
{
    if (__builtin_expect(
            !route || !atomic_load_explicit(&gl_dispatch_tables.armed, memory_order_relaxed), 1))
        return 0;
    return gl_dispatch_claimed_by(ev);
}

/* A call's entry, for what its exit will bring (see gl_consumer.warm). */
GL_DISPATCH_HOT void gl_dispatch_warm(const struct gl_event *ev)
{
    for (void (*const *f)(const struct gl_event *) = gl_dispatch_tables.warm; *f; f++)
        (*f)(ev);
}

GL_DISPATCH_HOT bool gl_dispatch_is_release(const struct gl_event *ev)
{
    return ev->type == GL_EV_FREE || ev->type == GL_EV_VMM_RELEASE;
}

GL_DISPATCH_HOT uint64_t gl_dispatch_begin_at(struct gl_event *ev, bool route)
{
    gl_dispatch_stamp(ev);
    unsigned r = gl_dispatch_route(ev, route);
    if (__builtin_expect(r != 0, 0)) {
        gl_dispatch_record(ev);
        return (uint64_t)(r - 1) << 3 | GL_DISPATCH_TOKEN_CLAIM;
    }
    uint64_t raw = gl_dispatch_tables.begin ? gl_dispatch_tables.begin(ev) : 0;
    gl_dispatch_record(ev);
    return raw | GL_DISPATCH_TOKEN_STATE;
}

GL_DISPATCH_HOT bool gl_dispatch_end_at(uint64_t token, struct gl_event *ev)
{
    /* Recorded at its beginning (the driver may give the address to another
     * thread before this call returns); a refusal is recorded again. */
    if (__builtin_expect(ev->flags & GL_EVF_FAILED, 0))
        gl_dispatch_record(ev);
    if (__builtin_expect(!(token & GL_DISPATCH_TOKEN_STATE), 0)) {
        /* Claimed at the entry: the block (if any) was never taken out.  A
         * refused release let go took nothing out, and the observers (the
         * checks) see it as one that found no block; one that succeeded is
         * released now (gl_dispatch_release_late). */
        if (gl_dispatch_take((unsigned)(token >> 3), ev))
            return true;
        if (ev->flags & GL_EVF_FAILED) {
            gl_dispatch_observe(ev, NULL);
            return true;
        }
        return gl_dispatch_release_late(ev);
    }
    struct gl_block_info blk;
    bool found = gl_dispatch_tables.end &&
                 gl_dispatch_tables.end(token & ~(uint64_t)GL_DISPATCH_TOKEN_STATE, ev, &blk);
    gl_dispatch_observe(ev, found ? &blk : NULL);
    return found;
}

GL_DISPATCH_HOT bool gl_dispatch_run(struct gl_event *ev, bool route)
{
    if (__builtin_expect(ev->type >= GL_EV_NTYPES, 0))
        return false;
    if (gl_dispatch_is_release(ev))
        return gl_dispatch_end_at(gl_dispatch_begin_at(ev, route), ev);
    gl_dispatch_stamp(ev);
    unsigned r = gl_dispatch_route(ev, route);
    if (__builtin_expect(r != 0, 0)) {
        gl_dispatch_record(ev);
        if (gl_dispatch_take(r - 1, ev))
            return true;
        /* Let go: on to the state stage, recorded once already. */
        struct gl_block_info blk;
        gl_resolve_fn resolve = gl_dispatch_tables.resolve[ev->type];
        bool found = resolve && resolve(ev, &blk);
        gl_dispatch_observe(ev, found ? &blk : NULL);
        return found;
    }
    struct gl_block_info blk;
    gl_resolve_fn resolve = gl_dispatch_tables.resolve[ev->type];
    bool found = resolve && resolve(ev, &blk);
    gl_dispatch_record(ev);
    gl_dispatch_observe(ev, found ? &blk : NULL);
    return found;
}

GL_HOT static inline bool gl_dispatch(struct gl_event *ev) { return gl_dispatch_run(ev, true); }

static inline bool gl_dispatch_wants_contexts(void) { return gl_dispatch_tables.contexts; }

static inline uint64_t gl_dispatch_begin(struct gl_event *ev)
{
    return gl_dispatch_begin_at(ev, true);
}

static inline void gl_dispatch_end(uint64_t token, struct gl_event *ev)
{
    gl_dispatch_end_at(token, ev);
}

#endif
