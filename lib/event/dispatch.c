/* SPDX-License-Identifier: MIT */
#include "event/dispatch.h"

#include <stddef.h>
#include <string.h>

#include "common/clock.h"
#include "common/util.h"

/* Built by gl_dispatch_start, read without locks by every event (the hot path
 * is inline, in the header). */
struct gl_dispatch_tables gl_dispatch_tables __attribute__((aligned(64)));

static const struct gl_component *const none[] = {NULL};
static const struct gl_component *const *the_registry = none;

static struct {
    const struct gl_component *const *list;
    const struct gl_consumer *routers[GL_DISPATCH_MAX + 1];
    const char *attached[GL_DISPATCH_MAX + 1];
} d;

static struct gl_placement placement;

/* Closed until the runtime names its state word. */
static const _Atomic int closed = !GL_DISPATCH_OPEN;
GL_READ_MOSTLY const _Atomic int *gl_dispatch_gate = &closed;

void gl_dispatch_set_gate(const _Atomic int *word) { gl_dispatch_gate = word ? word : &closed; }

void gl_dispatch_set_registry(const struct gl_component *const *list)
{
    the_registry = list ? list : none;
}

static const struct gl_component *const *registry(void) { return d.list ? d.list : the_registry; }

/* GPULEAK_BENCH=noobserve and alternate: a consumer left out, or every
 * observer ("observers"); nostate: every consumer ("everything"). */
static const char *left_out;

void gl_dispatch_bench_without_observers(bool on)
{
    gl_dispatch_bench_leave_out(on ? "observers" : NULL);
}

void gl_dispatch_bench_leave_out(const char *name)
{
    left_out = name;
    gl_dispatch_start(d.list);
}

/* State consumers and routers are never left out: without them the events
 * would mean something else (a free of an unknown block). */
static bool observer_only(const struct gl_consumer *k)
{
    return !k->begin && !k->end && !(k->claim && k->take);
}

static bool is_left_out(const struct gl_component *c)
{
    if (left_out && strcmp(left_out, "everything") == 0)
        return true;
    if (!left_out || !observer_only(c->consumer))
        return false;
    return strcmp(left_out, "observers") == 0 || (c->name && strcmp(c->name, left_out) == 0);
}

bool gl_dispatch_bench_can_leave_out(const char *name)
{
    if (strcmp(name, "observers") == 0)
        return true;
    for (const struct gl_component *const *c = registry(); *c; c++)
        if ((*c)->consumer && observer_only((*c)->consumer) && (*c)->name &&
            strcmp((*c)->name, name) == 0)
            return gl_dispatch_attached(name);
    return false;
}

static void attach(const struct gl_component *c, size_t index, size_t nobs[GL_EV_NTYPES],
                   size_t ndemand[GL_EV_NTYPES], size_t *nrouters, size_t *nwarm)
{
    struct gl_dispatch_tables *t = &gl_dispatch_tables;
    const struct gl_consumer *k = c->consumer;
    d.attached[index] = c->name;
    if (k->begin || k->end) {
        GL_ASSERT(!t->begin && k->begin && k->end, "one state consumer, with begin and end");
        t->begin = k->begin;
        t->end = k->end;
        memcpy(t->resolve, k->resolve, sizeof t->resolve);
    }
    if (k->record) {
        GL_ASSERT(!t->record, "one recorder");
        t->record = k->record;
    }
    if (k->claim && k->take)
        d.routers[(*nrouters)++] = k;
    if (k->warm) {
        GL_ASSERT(*nwarm < GL_DISPATCH_WARM_MAX, "at most GL_DISPATCH_WARM_MAX consumers warm");
        if (*nwarm < GL_DISPATCH_WARM_MAX)
            t->warm[(*nwarm)++] = k->warm;
    }
    bool on_demand = (k->flags & GL_CONSUMER_ON_DEMAND) != 0;
    for (unsigned type = 0; type < GL_EV_NTYPES; type++) {
        if (!k->on[type])
            continue;
        if (!on_demand) {
            t->observe[type][nobs[type]++] = k->on[type];
            continue;
        }
        GL_ASSERT(ndemand[type] < GL_DISPATCH_ON_DEMAND_MAX,
                  "at most GL_DISPATCH_ON_DEMAND_MAX observers on demand");
        if (ndemand[type] < GL_DISPATCH_ON_DEMAND_MAX)
            t->on_demand[type][ndemand[type]++] = k->on[type];
    }
    t->timed |= (k->flags & GL_CONSUMER_TIMED) != 0;
    t->contexts |= (k->flags & GL_CONSUMER_CONTEXTS) != 0;
}

/* The counts come last: a rebuild clears what precedes them and never touches
 * them, since a router or a profiled region may change them meanwhile (a
 * region may begin on another thread while the runtime starts). */
#define TABLES_BUILT offsetof(struct gl_dispatch_tables, armed)
_Static_assert(offsetof(struct gl_dispatch_tables, warm[GL_DISPATCH_WARM_MAX + 1]) <= 64,
               "begin, end, record, timed and the warm functions in one line");
_Static_assert(offsetof(struct gl_dispatch_tables, timed) < TABLES_BUILT &&
                   offsetof(struct gl_dispatch_tables, demand) > TABLES_BUILT,
               "armed and demand are gl_dispatch_tables' last members");

void gl_dispatch_start(const struct gl_component *const *list)
{
    memset(&gl_dispatch_tables, 0, TABLES_BUILT);
    memset(&d, 0, sizeof d);
    d.list = list;
    size_t nattached = 0, nrouters = 0, nwarm = 0, nobs[GL_EV_NTYPES] = {0},
           ndemand[GL_EV_NTYPES] = {0};
    for (const struct gl_component *const *c = registry(); *c; c++) {
        const struct gl_consumer *k = (*c)->consumer;
        if (!k || (k->wanted && !k->wanted()))
            continue;
        if (is_left_out(*c))
            continue;
        GL_ASSERT(nattached < GL_DISPATCH_MAX, "at most GL_DISPATCH_MAX consumers");
        if (nattached >= GL_DISPATCH_MAX)
            break;
        attach(*c, nattached++, nobs, ndemand, &nrouters, &nwarm);
    }
}

bool gl_dispatch_attached(const char *name)
{
    for (const char *const *a = d.attached; *a; a++)
        if (strcmp(*a, name) == 0)
            return true;
    return false;
}

void gl_dispatch_reset(void)
{
    for (const struct gl_component *const *c = registry(); *c; c++)
        if ((*c)->reset)
            (*c)->reset();
    atomic_store(&gl_dispatch_tables.armed, 0);
    atomic_store(&gl_dispatch_tables.demand, 0);
}

void gl_dispatch_after_fork(void)
{
    for (const struct gl_component *const *c = registry(); *c; c++)
        if ((*c)->after_fork)
            (*c)->after_fork();
}

void gl_dispatch_arm(int delta)
{
    atomic_fetch_add_explicit(&gl_dispatch_tables.armed, delta, memory_order_relaxed);
}

void gl_dispatch_demand(int delta)
{
    atomic_fetch_add_explicit(&gl_dispatch_tables.demand, delta, memory_order_relaxed);
}

void gl_dispatch_observe_on_demand(const struct gl_event *ev, const struct gl_block_info *blk)
{
    for (gl_event_fn const *f = gl_dispatch_tables.on_demand[ev->type]; *f; f++)
        (*f)(ev, blk);
}

uint64_t gl_dispatch_clock_ns(void) { return gl_clock_ns(); }

unsigned gl_dispatch_claimed_by(const struct gl_event *ev)
{
    for (unsigned i = 0; d.routers[i]; i++)
        if (d.routers[i]->claim(ev))
            return i + 1;
    return 0;
}

bool gl_dispatch_take(unsigned router, struct gl_event *ev) { return d.routers[router]->take(ev); }

/* Leaving the block live would report it lost at exit, whatever the
 * program did.  Taking it out only now may take out another thread's new
 * block at the same address, should the driver have handed the address on
 * within this call's last instructions: far the narrower window.  A saved
 * log has the free once, recorded at its entry while the capture was in
 * progress: its replay makes it the capture's node. */
bool gl_dispatch_release_late(struct gl_event *ev)
{
    if (!gl_dispatch_tables.begin)
        return false;
    uint64_t raw = gl_dispatch_tables.begin(ev);
    struct gl_block_info blk;
    if (!raw || !gl_dispatch_tables.end(raw, ev, &blk))
        return false;
    gl_dispatch_observe(ev, &blk);
    return true;
}

bool gl_dispatch_derived(struct gl_event *ev)
{
    ev->flags |= GL_EVF_DERIVED;
    return gl_dispatch_run(ev, false);
}

void gl_dispatch_effect(struct gl_event *ev, const struct gl_block_info *blk)
{
    ev->type = GL_EV_FREE;
    ev->flags |= GL_EVF_DERIVED;
    gl_dispatch_observe(ev, blk);
}

/* ---- placement ---- */

void gl_dispatch_set_placement(const struct gl_placement *p)
{
    placement = p ? *p : (struct gl_placement){0};
}

GL_HOT uint64_t gl_dispatch_current_context(void)
{
    return placement.current_context ? placement.current_context() : 0;
}

int gl_dispatch_device_of(const struct gl_event *ev)
{
    if (ev->device != GL_DEVICE_FROM_CONTEXT)
        return ev->device;
    return placement.context_device ? placement.context_device(gl_dispatch_ctx(ev)) : -1;
}
