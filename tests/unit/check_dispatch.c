/* SPDX-License-Identifier: MIT */
/* event/dispatch.h on its own: a registry of fake components (a router, a
 * state stage, observers) stands for the runtime's, so that the dispatcher's
 * rules are checked apart from what the real consumers do. */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include "common/util.h"
#include "event/dispatch.h"
#include "testutil.h"

/* What happened, in order: one letter per call. */
static char trace[256];
static void note(const char *s) { strncat(trace, s, sizeof trace - strlen(trace) - 1); }

static bool router_armed_claims = true;
static bool router_keeps = true;
static struct gl_event taken;

static bool claim(const struct gl_event *ev)
{
    note("C");
    return router_armed_claims && ev->type == GL_EV_ALLOC;
}

static bool take(const struct gl_event *ev)
{
    note(router_keeps ? "T" : "t");
    taken = *ev;
    return router_keeps;
}

static bool resolve_alloc(struct gl_event *ev, struct gl_block_info *blk)
{
    note("S");
    ev->seq = 7;
    *blk = (struct gl_block_info){.key = ev->key, .size = ev->size, .seq = 7};
    return true;
}

static _Alignas(8) struct gl_block_info detached;

static uint64_t begin(struct gl_event *ev)
{
    note("B");
    detached = (struct gl_block_info){.key = ev->key, .size = 64, .seq = 3};
    return ev->key == 0x1000 ? (uint64_t)(uintptr_t)&detached : 0; /* 0: unknown */
}

static bool end(uint64_t token, struct gl_event *ev, struct gl_block_info *blk)
{
    note(ev->flags & GL_EVF_FAILED ? "e" : "E");
    if (!token)
        return false;
    ck_assert_ptr_eq((void *)(uintptr_t)token, &detached);
    *blk = detached;
    ev->seq = detached.seq;
    if (!(ev->flags & GL_EVF_FAILED)) { /* a bulk change, told before the event */
        struct gl_event gone = {.key = 0x2000, .api = ev->api};
        struct gl_block_info b = {.key = 0x2000, .size = 8};
        gl_dispatch_effect(&gone, &b);
    }
    return true;
}

static struct gl_event seen[16];
static struct gl_block_info seen_blk[16];
static bool seen_has_blk[16];
static unsigned nseen;

static void observe_first(const struct gl_event *ev, const struct gl_block_info *blk)
{
    note("1");
    if (nseen < GL_ARRAY_SIZE(seen)) {
        seen[nseen] = *ev;
        seen_has_blk[nseen] = blk != NULL;
        if (blk)
            seen_blk[nseen] = *blk;
    }
    nseen++;
}

static void observe_second(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)ev;
    (void)blk;
    note("2");
}

static int resets, forks;
static void reset_a(void) { note("r"), resets++; }
static void fork_a(void) { note("f"), forks++; }
static void reset_b(void) { note("R"), resets++; }
static bool never(void) { return false; }

static void observe_demanded(const struct gl_event *ev, const struct gl_block_info *blk)
{
    (void)ev;
    note(blk ? "D" : "d");
}

static const struct gl_consumer router = {.claim = claim, .take = take};
static const struct gl_consumer state = {
    .resolve = {[GL_EV_ALLOC] = resolve_alloc}, .begin = begin, .end = end};
static const struct gl_consumer first = {.on = {[GL_EV_ALLOC] = observe_first,
                                                [GL_EV_FREE] = observe_first,
                                                [GL_EV_GRAPH_LAUNCH] = observe_first},
                                         .flags = GL_CONSUMER_TIMED};
static const struct gl_consumer second = {.on = {[GL_EV_FREE] = observe_second}};
static const struct gl_consumer unwanted = {.on = {[GL_EV_ALLOC] = observe_second},
                                            .wanted = never};
static const struct gl_consumer demanded = {
    .on = {[GL_EV_ALLOC] = observe_demanded, [GL_EV_FREE] = observe_demanded},
    .flags = GL_CONSUMER_ON_DEMAND};

static const struct gl_component c_router = {"router", reset_a, fork_a, &router};
static const struct gl_component c_state = {"state", NULL, NULL, &state};
static const struct gl_component c_first = {"first", reset_b, NULL, &first};
static const struct gl_component c_second = {"second", NULL, fork_a, &second};
static const struct gl_component c_unwanted = {"unwanted", NULL, NULL, &unwanted};
/* Before the others in the registry, yet called after them. */
static const struct gl_component c_demanded = {"demanded", NULL, NULL, &demanded};
static const struct gl_component *const fakes[] = {&c_router, &c_demanded, &c_state, &c_first,
                                                   &c_second, &c_unwanted, NULL};

static void setup(void)
{
    gl_dispatch_set_registry(fakes);
    gl_dispatch_start(NULL);
    gl_dispatch_reset();
    trace[0] = '\0';
    nseen = 0;
    resets = forks = 0;
    router_armed_claims = router_keeps = true;
}

static void teardown(void)
{
    gl_dispatch_set_registry(NULL);
    gl_dispatch_start(NULL);
}

START_TEST(test_stages_in_order)
{
    ck_assert(gl_dispatch_attached("state") && gl_dispatch_attached("second"));
    ck_assert(!gl_dispatch_attached("unwanted")); /* its options did not ask for it */
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000, .size = 64};
    ck_assert(gl_dispatch(&a));
    /* Not armed: the router is not asked; state, then the observers of ALLOC. */
    ck_assert_str_eq(trace, "S1");
    ck_assert_uint_eq(a.seq, 7);
    ck_assert(seen_has_blk[0]);
    ck_assert_uint_eq(seen_blk[0].seq, 7);
    ck_assert_uint_ne(seen[0].time_ns, 0); /* an observer asked for times */
    /* A type nobody resolves reaches the observers without a block. */
    trace[0] = '\0';
    struct gl_event l = {.type = GL_EV_GRAPH_LAUNCH};
    ck_assert(!gl_dispatch(&l));
    ck_assert_str_eq(trace, "1");
    ck_assert(!seen_has_blk[1]);
    /* Nor anything of a type out of range. */
    struct gl_event bad = {.type = GL_EV_NTYPES};
    ck_assert(!gl_dispatch(&bad));
    ck_assert_str_eq(trace, "1");
}
END_TEST

/* GPULEAK_BENCH=noobserve: the state stage and the routers, no observer. */
START_TEST(test_bench_without_observers)
{
    gl_dispatch_bench_without_observers(true);
    ck_assert(gl_dispatch_attached("state") && gl_dispatch_attached("router"));
    ck_assert(!gl_dispatch_attached("first") && !gl_dispatch_attached("second") &&
              !gl_dispatch_attached("demanded"));
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000, .size = 64};
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S");
    gl_dispatch_bench_without_observers(false);
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1");
}
END_TEST

/* GPULEAK_BENCH=nostate: no consumer at all, the state stage included; a
 * release is still begun and ended (a token, never 0). */
START_TEST(test_bench_nothing_after_the_producer)
{
    ck_assert(!gl_dispatch_bench_can_leave_out("everything")); /* not alternate's */
    gl_dispatch_bench_leave_out("everything");
    ck_assert(!gl_dispatch_attached("state") && !gl_dispatch_attached("router") &&
              !gl_dispatch_attached("first") && !gl_dispatch_attached("second"));
    router_armed_claims = true;
    gl_dispatch_arm(1);
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000, .size = 64};
    ck_assert(!gl_dispatch(&a));
    struct gl_event f = {.type = GL_EV_FREE, .key = 0x1000};
    uint64_t token = gl_dispatch_begin(&f);
    ck_assert_uint_ne(token, 0);
    gl_dispatch_end(token, &f);
    ck_assert_str_eq(trace, "");
    gl_dispatch_arm(-1);
    gl_dispatch_bench_leave_out(NULL);
    ck_assert(gl_dispatch_attached("state") && gl_dispatch_attached("first"));
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1");
}
END_TEST

/* GPULEAK_BENCH=alternate leaves one observer out by name, never the state
 * stage or a router. */
START_TEST(test_bench_leave_out_by_name)
{
    ck_assert(gl_dispatch_bench_can_leave_out("first"));
    ck_assert(gl_dispatch_bench_can_leave_out("observers"));
    ck_assert(!gl_dispatch_bench_can_leave_out("state"));
    ck_assert(!gl_dispatch_bench_can_leave_out("router"));
    ck_assert(!gl_dispatch_bench_can_leave_out("nobody"));
    gl_dispatch_bench_leave_out("first");
    ck_assert(!gl_dispatch_attached("first") && gl_dispatch_attached("second") &&
              gl_dispatch_attached("state"));
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000, .size = 64};
    router_armed_claims = false;
    gl_dispatch_arm(1);
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "CS");
    gl_dispatch_bench_leave_out("state"); /* not an observer: kept */
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "CS1");
    gl_dispatch_bench_leave_out(NULL);
    gl_dispatch_arm(-1);
    ck_assert(gl_dispatch_attached("first"));
}
END_TEST

START_TEST(test_releases_two_phase)
{
    struct gl_event f = {.type = GL_EV_FREE, .key = 0x1000, .api = 9};
    uint64_t token = gl_dispatch_begin(&f);
    ck_assert_uint_ne(token, 0);
    ck_assert_str_eq(trace, "B");
    gl_dispatch_end(token, &f);
    /* The bulk change first (derived), then the free itself, each to every
     * observer of FREE in order. */
    ck_assert_str_eq(trace, "BE1212");
    ck_assert_uint_eq(nseen, 2);
    ck_assert(seen[0].flags & GL_EVF_DERIVED);
    ck_assert_uint_eq(seen[0].type, GL_EV_FREE);
    ck_assert_uint_eq(seen_blk[0].key, 0x2000);
    ck_assert(!(seen[1].flags & GL_EVF_DERIVED));
    ck_assert_uint_eq(seen[1].seq, 3);
    ck_assert_uint_eq(seen_blk[1].key, 0x1000);
    /* Unknown and refused: a token all the same, the end without a block. */
    trace[0] = '\0';
    nseen = 0;
    struct gl_event u = {.type = GL_EV_FREE, .key = 0x5000, .flags = GL_EVF_FAILED};
    token = gl_dispatch_begin(&u);
    ck_assert_uint_ne(token, 0);
    gl_dispatch_end(token, &u);
    ck_assert_str_eq(trace, "Be12");
    ck_assert(!seen_has_blk[0]);
    /* A complete release is begun and ended at once. */
    trace[0] = '\0';
    struct gl_event c = {.type = GL_EV_FREE, .key = 0x1000};
    ck_assert(gl_dispatch(&c));
    ck_assert_str_eq(trace, "BE1212");
}
END_TEST

START_TEST(test_routing)
{
    gl_dispatch_arm(1);
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000};
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "CT"); /* claimed: nowhere else */
    ck_assert_uint_eq(taken.key, 0x1000);
    /* Let go (the capture ended meanwhile): on to the state stage. */
    trace[0] = '\0';
    router_keeps = false;
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "CtS1");
    /* A release claimed at its entry is taken at its exit. */
    trace[0] = '\0';
    router_keeps = true;
    router_armed_claims = false;
    struct gl_event f = {.type = GL_EV_FREE, .key = 0x1000};
    gl_dispatch_end(gl_dispatch_begin(&f), &f);
    ck_assert_str_eq(trace, "CBE1212"); /* asked, not claimed */
    /* Derived events skip the route stage. */
    trace[0] = '\0';
    router_armed_claims = true;
    struct gl_event d = {.type = GL_EV_ALLOC, .key = 0x1000};
    ck_assert(gl_dispatch_derived(&d));
    ck_assert_str_eq(trace, "S1");
    ck_assert(d.flags & GL_EVF_DERIVED);
    gl_dispatch_arm(-1);
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1"); /* disarmed: not asked */
}
END_TEST

START_TEST(test_registry_order)
{
    trace[0] = '\0';
    gl_dispatch_reset();
    ck_assert_str_eq(trace, "rR");
    gl_dispatch_after_fork();
    ck_assert_str_eq(trace, "rRff");
    ck_assert_int_eq(resets, 2);
    ck_assert_int_eq(forks, 2);
    /* No registry: nothing attached, nothing reset, events go nowhere. */
    gl_dispatch_set_registry(NULL);
    gl_dispatch_start(NULL);
    trace[0] = '\0';
    gl_dispatch_reset();
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 1};
    ck_assert(!gl_dispatch(&a));
    ck_assert_str_eq(trace, "");
}
END_TEST

/* A release's context left unasked (GL_EVF_CTX_LATER) is asked of the
 * placement when a consumer needs it, and only a consumer that writes events
 * out makes the producers ask it always. */
static int current_asked, device_asked_of;
static uint64_t current_context(void) { return current_asked++, 0xc0; }
static int context_device(uint64_t ctx) { return device_asked_of = (int)ctx, ctx == 0xc0 ? 3 : -1; }
static const struct gl_consumer writer = {.on = {[GL_EV_FREE] = observe_second},
                                          .flags = GL_CONSUMER_CONTEXTS};
static const struct gl_component c_writer = {"writer", NULL, NULL, &writer};

START_TEST(test_context_later)
{
    ck_assert(!gl_dispatch_wants_contexts());
    gl_dispatch_set_placement(&(struct gl_placement){.context_device = context_device});
    struct gl_event ev = {
        .type = GL_EV_FREE, .flags = GL_EVF_CTX_LATER, .device = GL_DEVICE_FROM_CONTEXT};
    /* No one to ask: no context, no device. */
    ck_assert_uint_eq(gl_dispatch_ctx(&ev), 0);
    ck_assert_int_eq(gl_dispatch_device_of(&ev), -1);
    gl_dispatch_set_placement(&(struct gl_placement){.context_device = context_device,
                                                     .current_context = current_context});
    ck_assert_int_eq(gl_dispatch_device_of(&ev), 3);
    ck_assert_int_eq(current_asked, 1);
    ck_assert_int_eq(device_asked_of, 0xc0);
    ev.flags = 0;
    ev.ctx = 0xd0; /* asked at the call: the event's own, the placement not asked */
    ck_assert_uint_eq(gl_dispatch_ctx(&ev), 0xd0);
    ck_assert_int_eq(current_asked, 1);
    gl_dispatch_set_placement(NULL);
    static const struct gl_component *const with_writer[] = {&c_state, &c_writer, NULL};
    gl_dispatch_start(with_writer);
    ck_assert(gl_dispatch_wants_contexts());
    gl_dispatch_start(NULL);
    ck_assert(!gl_dispatch_wants_contexts());
}
END_TEST

/* An observer on demand is called only while asked for, after the others;
 * derived frees reach it too; a reset takes every demand back. */
START_TEST(test_on_demand)
{
    ck_assert(gl_dispatch_attached("demanded"));
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000, .size = 64};
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1");
    gl_dispatch_demand(1);
    gl_dispatch_demand(1);
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1D");
    trace[0] = '\0';
    struct gl_event f = {.type = GL_EV_FREE, .key = 0x1000};
    ck_assert(gl_dispatch(&f));
    ck_assert_str_eq(trace, "BE12D12D"); /* the derived free, then the free */
    /* Asked for still: a restart of the tables keeps the count. */
    gl_dispatch_start(NULL);
    gl_dispatch_demand(-1);
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1D");
    gl_dispatch_demand(-1);
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1");
    gl_dispatch_demand(1);
    gl_dispatch_reset();
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "S1");
}
END_TEST

START_TEST(test_gate)
{
    _Atomic int word = 0;
    gl_dispatch_set_gate(&word);
    ck_assert(!gl_dispatch_open());
    atomic_store(&word, GL_DISPATCH_OPEN);
    ck_assert(gl_dispatch_open());
    gl_dispatch_set_gate(NULL); /* closed again, whatever the word says */
    ck_assert(!gl_dispatch_open());
}
END_TEST

/* A restart of the tables (the runtime starting) keeps what routers and
 * observers on demand were asked for meanwhile: armed and demand are never
 * cleared by it. */
START_TEST(test_restart_keeps_counts)
{
    gl_dispatch_arm(1);
    gl_dispatch_demand(1);
    gl_dispatch_start(NULL);
    ck_assert_int_eq(atomic_load(&gl_dispatch_tables.armed), 1);
    ck_assert_int_eq(atomic_load(&gl_dispatch_tables.demand), 1);
    struct gl_event a = {.type = GL_EV_ALLOC, .key = 0x1000, .size = 64};
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "CT"); /* the router still asked, and claims */
    router_armed_claims = false;
    trace[0] = '\0';
    ck_assert(gl_dispatch(&a));
    ck_assert_str_eq(trace, "CS1D"); /* the observer on demand still called */
    gl_dispatch_arm(-1);
    gl_dispatch_demand(-1);
}
END_TEST

/* gpuleak_profile_begin/_end on one thread while the runtime starts on
 * another: every +1 and -1 counts, however they interleave with the
 * rebuilds, and the counts end balanced. */
static _Atomic int racing;
static void *ask_and_give_back(void *arg)
{
    (void)arg;
    while (atomic_load(&racing)) {
        gl_dispatch_demand(+1);
        gl_dispatch_arm(+1);
        gl_dispatch_demand(-1);
        gl_dispatch_arm(-1);
    }
    return NULL;
}

START_TEST(test_restart_races_demand)
{
    gl_dispatch_demand(1); /* a region open all along */
    atomic_store(&racing, 1);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, ask_and_give_back, NULL), 0);
    for (unsigned i = 0; i < 50000; i++)
        gl_dispatch_start(NULL);
    atomic_store(&racing, 0);
    pthread_join(t, NULL);
    int demand = atomic_load(&gl_dispatch_tables.demand);
    int armed = atomic_load(&gl_dispatch_tables.armed);
    ck_assert_int_eq(demand, 1);
    ck_assert_int_eq(armed, 0);
    gl_dispatch_demand(-1);
}
END_TEST

static Suite *dispatch_suite(void)
{
    Suite *s = suite_create("dispatch");
    TCase *tc = tcase_create("dispatch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_stages_in_order);
    tcase_add_test(tc, test_bench_without_observers);
    tcase_add_test(tc, test_bench_leave_out_by_name);
    tcase_add_test(tc, test_bench_nothing_after_the_producer);
    tcase_add_test(tc, test_releases_two_phase);
    tcase_add_test(tc, test_routing);
    tcase_add_test(tc, test_registry_order);
    tcase_add_test(tc, test_on_demand);
    tcase_add_test(tc, test_gate);
    tcase_add_test(tc, test_restart_keeps_counts);
    tcase_add_test(tc, test_restart_races_demand);
    tcase_add_test(tc, test_context_later);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(dispatch_suite)
