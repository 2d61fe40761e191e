/* SPDX-License-Identifier: MIT */
/* lib/check/reach.h: the reachability scan over fabricated memory: real
 * buffers of this process play module segments (roots), heap chunks
 * (objects) and CUDA-owned memory (objects that are not traversable); device
 * blocks are address ranges nothing here maps. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"
#include "check/reach.h"

#define DEV(i) (0x7e0000000000ULL + (uint64_t)(i)*0x100000ULL)
#define DEV_SIZE 0x1000

static uint64_t *buf(size_t words)
{
    uint64_t *p = calloc(words, 8);
    ck_assert_ptr_nonnull(p);
    return p;
}

static uint64_t addr(const void *p) { return (uint64_t)(uintptr_t)p; }

struct world {
    struct gl_reach_range roots[8];
    size_t nroots;
    uint64_t regs[4];
    size_t nregs;
    struct gl_reach_object objects[64];
    size_t nobjects;
    struct gl_reach_target targets[64];
    size_t ntargets;
};

static void add_object(struct world *w, const void *p, size_t bytes, bool traversable)
{
    w->objects[w->nobjects++] = (struct gl_reach_object){addr(p), addr(p) + bytes, traversable};
}

static void add_target(struct world *w, uint64_t start, uint64_t size, uint64_t handle,
                       uint32_t owner)
{
    w->targets[w->ntargets++] = (struct gl_reach_target){start, start + size, handle, owner, 0};
}

static void run(struct world *w, bool guard, struct gl_reach_stats *stats)
{
    gl_reach_sort_objects(w->objects, w->nobjects);
    gl_reach_sort_targets(w->targets, w->ntargets);
    struct gl_reach r = {
        .roots = w->roots,
        .nroots = w->nroots,
        .root_words = w->regs,
        .nroot_words = w->nregs,
        .objects = w->objects,
        .nobjects = w->nobjects,
        .targets = w->targets,
        .ntargets = w->ntargets,
        .guard_faults = guard,
    };
    size_t bytes = gl_reach_scratch_bytes(&r);
    void *scratch = calloc(1, bytes + 64);
    ck_assert_int_eq(gl_reach_run(&r, scratch, bytes), 0);
    if (bytes > 0)
        ck_assert_int_eq(gl_reach_run(&r, scratch, bytes - 1), -1);
    ck_assert_int_eq(gl_reach_run(&r, scratch, bytes), 0);
    free(scratch);
    if (stats)
        *stats = r.stats;
}

static uint8_t state_of(const struct world *w, uint32_t owner)
{
    uint8_t s = 0;
    for (size_t i = 0; i < w->ntargets; i++)
        if (w->targets[i].owner == owner && w->targets[i].state > s)
            s = w->targets[i].state;
    return s;
}

START_TEST(test_start_interior_none)
{
    struct world w;
    memset(&w, 0, sizeof w);
    uint64_t *global = buf(16);
    global[3] = DEV(0);       /* kept */
    global[7] = DEV(1) + 256; /* only ptr + 256 kept */
    w.roots[w.nroots++] = (struct gl_reach_range){addr(global), addr(global + 16)};
    for (uint32_t i = 0; i < 3; i++)
        add_target(&w, DEV(i), DEV_SIZE, 0, i);
    run(&w, false, NULL);
    ck_assert_uint_eq(state_of(&w, 0), GL_REACH_START);
    ck_assert_uint_eq(state_of(&w, 1), GL_REACH_INTERIOR);
    ck_assert_uint_eq(state_of(&w, 2), GL_REACH_NONE);
    free(global);
}
END_TEST

/* root -> a -> b -> the block; a and b point to each other (a cycle). */
START_TEST(test_chains_and_cycles)
{
    struct world w;
    memset(&w, 0, sizeof w);
    uint64_t *global = buf(4), *a = buf(8), *b = buf(8);
    global[0] = addr(a) + 16; /* an interior pointer enters a chunk too */
    a[1] = addr(b);
    b[2] = addr(a);
    b[5] = DEV(4);
    w.roots[w.nroots++] = (struct gl_reach_range){addr(global), addr(global + 4)};
    add_object(&w, a, 64, true);
    add_object(&w, b, 64, true);
    add_target(&w, DEV(4), DEV_SIZE, 0, 4);
    struct gl_reach_stats st;
    run(&w, false, &st);
    ck_assert_uint_eq(state_of(&w, 4), GL_REACH_START);
    ck_assert_uint_eq(st.objects_reached, 2); /* each once, cycle or not */
    ck_assert_uint_eq(st.object_bytes, 128);
    ck_assert_uint_eq(st.root_bytes, 32);
    free(global);
    free(a);
    free(b);
}
END_TEST

/* The driver's copy of a device pointer, in a chunk the driver made and the
 * program points to: never followed.  A freed chunk (no longer an object)
 * holding a stale copy: never followed either. */
START_TEST(test_decoys_ignored)
{
    struct world w;
    memset(&w, 0, sizeof w);
    uint64_t *global = buf(4), *cuda = buf(8), *freed = buf(8);
    global[0] = addr(cuda);
    global[1] = addr(freed);
    cuda[3] = DEV(5);
    freed[3] = DEV(6);
    w.roots[w.nroots++] = (struct gl_reach_range){addr(global), addr(global + 4)};
    add_object(&w, cuda, 64, false);
    add_target(&w, DEV(5), DEV_SIZE, 0, 5);
    add_target(&w, DEV(6), DEV_SIZE, 0, 6);
    struct gl_reach_stats st;
    run(&w, false, &st);
    ck_assert_uint_eq(state_of(&w, 5), GL_REACH_NONE);
    ck_assert_uint_eq(state_of(&w, 6), GL_REACH_NONE);
    ck_assert_uint_eq(st.objects_reached, 0);
    free(global);
    free(cuda);
    free(freed);
}
END_TEST

/* Handles (a VMM handle, a CUDA array) and registers. */
START_TEST(test_handles_and_registers)
{
    struct world w;
    memset(&w, 0, sizeof w);
    uint64_t *global = buf(4);
    global[2] = 0x123456789abcULL;
    w.roots[w.nroots++] = (struct gl_reach_range){addr(global), addr(global + 4)};
    add_target(&w, 0, 0, 0x123456789abcULL, 7);         /* an array: a handle, no range */
    add_target(&w, DEV(8), DEV_SIZE, 0x55550000ULL, 8); /* VMM: mapped range and handle */
    add_target(&w, DEV(9), DEV_SIZE, 0, 9);
    uint64_t *chunk = buf(4);
    chunk[0] = DEV(9) + 8;
    add_object(&w, chunk, 32, true);
    w.regs[w.nregs++] = 0x55550000ULL;   /* the handle, in a register */
    w.regs[w.nregs++] = addr(chunk) + 8; /* a register points into a chunk */
    run(&w, false, NULL);
    ck_assert_uint_eq(state_of(&w, 7), GL_REACH_START);
    ck_assert_uint_eq(state_of(&w, 8), GL_REACH_START);
    ck_assert_uint_eq(state_of(&w, 9), GL_REACH_INTERIOR);
    free(global);
    free(chunk);
}
END_TEST

/* One owner mapped at several addresses (VMM): any of them reaches it. */
START_TEST(test_several_targets_one_owner)
{
    struct world w;
    memset(&w, 0, sizeof w);
    uint64_t *global = buf(2);
    global[0] = DEV(21) + 64;
    w.roots[w.nroots++] = (struct gl_reach_range){addr(global), addr(global + 2)};
    add_target(&w, DEV(20), DEV_SIZE, 0, 3);
    add_target(&w, DEV(21), DEV_SIZE, 0, 3);
    run(&w, false, NULL);
    ck_assert_uint_eq(state_of(&w, 3), GL_REACH_INTERIOR);
    free(global);
}
END_TEST

/* Objects of 16 MiB and more, targets of 1 GiB and more, are indexed apart. */
START_TEST(test_big_objects_and_targets)
{
    struct world w;
    memset(&w, 0, sizeof w);
    size_t big = 17u << 20;
    uint64_t *arena = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(arena, MAP_FAILED);
    arena[big / 8 - 1] = DEV(10);
    arena[big / 8 - 2] = 0x7f0000000000ULL + (3ULL << 30); /* inside the 4 GiB target */
    uint64_t *global = buf(2);
    global[0] = addr(arena) + big / 2;
    w.roots[w.nroots++] = (struct gl_reach_range){addr(global), addr(global + 2)};
    add_object(&w, arena, big, true);
    add_target(&w, DEV(10), DEV_SIZE, 0, 10);
    add_target(&w, 0x7f0000000000ULL, 4ULL << 30, 0, 11);
    run(&w, false, NULL);
    ck_assert_uint_eq(state_of(&w, 10), GL_REACH_START);
    ck_assert_uint_eq(state_of(&w, 11), GL_REACH_INTERIOR);
    munmap(arena, big);
    free(global);
}
END_TEST

/* An object that cannot be read (unmapped since the snapshot) is skipped with
 * the fault guard; the scan goes on with the next root. */
START_TEST(test_fault_guard)
{
    struct world w;
    memset(&w, 0, sizeof w);
    char *gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(gone, MAP_FAILED);
    munmap(gone, 8192);
    uint64_t *g1 = buf(2), *g2 = buf(2);
    g1[0] = addr(gone);
    g2[0] = DEV(12);
    w.roots[w.nroots++] = (struct gl_reach_range){addr(g1), addr(g1 + 2)};
    w.roots[w.nroots++] = (struct gl_reach_range){addr(g2), addr(g2 + 2)};
    add_object(&w, gone, 8192, true);
    add_target(&w, DEV(12), DEV_SIZE, 0, 12);
    struct gl_reach_stats st;
    run(&w, true, &st);
    ck_assert_uint_eq(st.faults, 1);
    ck_assert_uint_eq(state_of(&w, 12), GL_REACH_START);
    free(g1);
    free(g2);
}
END_TEST

/* Many objects in one granule, and targets sorted from any order. */
START_TEST(test_many_small_objects)
{
    enum { N = 2000 };
    struct gl_reach_object *objs = calloc(N, sizeof *objs);
    struct gl_reach_target *tg = calloc(N, sizeof *tg);
    uint64_t *slab = buf(N * 4); /* N chunks of 32 bytes, each pointing to the next */
    for (size_t i = 0; i < N; i++) {
        size_t j = (i * 7919) % N; /* shuffled order */
        objs[i] = (struct gl_reach_object){addr(slab + j * 4), addr(slab + j * 4 + 4), true};
        if (j + 1 < N)
            slab[j * 4 + 1] = addr(slab + (j + 1) * 4) + 8;
        slab[j * 4 + 2] = DEV(100) + j * 64;
        tg[i] =
            (struct gl_reach_target){DEV(100) + j * 64, DEV(100) + j * 64 + 64, 0, (uint32_t)j, 0};
    }
    gl_reach_sort_objects(objs, N);
    gl_reach_sort_targets(tg, N);
    for (size_t i = 1; i < N; i++) {
        ck_assert_uint_lt(objs[i - 1].start, objs[i].start);
        ck_assert_uint_lt(tg[i - 1].start, tg[i].start);
    }
    uint64_t root[1] = {addr(slab)};
    struct gl_reach_range rr = {addr(root), addr(root + 1)};
    struct gl_reach r = {
        .roots = &rr, .nroots = 1, .objects = objs, .nobjects = N, .targets = tg, .ntargets = N};
    size_t bytes = gl_reach_scratch_bytes(&r);
    void *scratch = calloc(1, bytes);
    ck_assert_int_eq(gl_reach_run(&r, scratch, bytes), 0);
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(tg[i].state, GL_REACH_START);
    ck_assert_uint_eq(r.stats.objects_reached, N);
    free(scratch);
    free(objs);
    free(tg);
    free(slab);
}
END_TEST

/* Valgrind's rule: what only lost memory points to is indirectly lost.  A
 * chunk no root reaches holds a block directly, and through a second lost
 * chunk; a block both a reached chunk and a lost one point to is reachable. */
START_TEST(test_held_through_lost_objects)
{
    struct world w = {0};
    uint64_t *root = buf(4), *kept = buf(4), *lost_a = buf(4), *lost_b = buf(4);
    root[0] = addr(kept);
    kept[1] = DEV(3);
    lost_a[0] = DEV(1);
    lost_a[1] = addr(lost_b); /* a lost chunk's pointer does not make lost_b reached */
    lost_b[2] = DEV(2);
    lost_b[3] = DEV(3);
    w.roots[w.nroots++] = (struct gl_reach_range){addr(root), addr(root) + 32};
    add_object(&w, kept, 32, true);
    add_object(&w, lost_a, 32, true);
    add_object(&w, lost_b, 32, true);
    for (int i = 1; i <= 4; i++)
        add_target(&w, DEV(i), DEV_SIZE, 0, (uint32_t)i);
    struct gl_reach_stats st;
    run(&w, false, &st);
    ck_assert_uint_eq(state_of(&w, 1), GL_REACH_VIA_LOST);
    ck_assert_uint_eq(state_of(&w, 2), GL_REACH_VIA_LOST);
    ck_assert_uint_eq(state_of(&w, 3), GL_REACH_START); /* the reached chunk wins */
    ck_assert_uint_eq(state_of(&w, 4), GL_REACH_NONE);  /* nothing at all: definitely lost */
    ck_assert_uint_eq(st.objects_reached, 1);
    ck_assert_uint_eq(st.lost_bytes, 64);
    /* held_by names the lost object (sorted: found by address). */
    for (size_t i = 0; i < w.ntargets; i++) {
        const struct gl_reach_target *t = &w.targets[i];
        if (t->state != GL_REACH_VIA_LOST)
            continue;
        const struct gl_reach_object *o = &w.objects[t->held_by - 1];
        ck_assert_uint_eq(o->start, t->owner == 1 ? addr(lost_a) : addr(lost_b));
    }
    free(root);
    free(kept);
    free(lost_a);
    free(lost_b);
}
END_TEST

static Suite *reach_suite(void)
{
    Suite *s = suite_create("reach");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_start_interior_none);
    tcase_add_test(tc, test_chains_and_cycles);
    tcase_add_test(tc, test_decoys_ignored);
    tcase_add_test(tc, test_handles_and_registers);
    tcase_add_test(tc, test_several_targets_one_owner);
    tcase_add_test(tc, test_big_objects_and_targets);
    tcase_add_test(tc, test_fault_guard);
    tcase_add_test(tc, test_many_small_objects);
    tcase_add_test(tc, test_held_through_lost_objects);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(reach_suite)
