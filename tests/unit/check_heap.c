/* SPDX-License-Identifier: MIT */
/* lib/heap: the chunk table, interned callers and anonymous mappings, and the
 * interposed allocator itself: heap/hooks.c is linked into this program, so
 * every malloc here (Check's, libc's) goes through it, as in a program under
 * gpuleak. */
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "heap/anon_maps.h"
#include "heap/callers.h"
#include "heap/chunk_table.h"
#include "heap/heap.h"
#include "heap/heap_state.h"
#include "observe/driver.h"

/* ---- the chunk table ---- */

START_TEST(test_chunk_insert_lookup_remove)
{
    gl_chunk_table_reset();
    uint64_t base = 0x5000000000ULL;
    for (uint64_t i = 0; i < 100000; i++)
        gl_chunk_table_insert(base + i * 48, 40 + i % 7, (uint32_t)(i % 1000) + 1);
    ck_assert_uint_eq(gl_chunk_table_count(), 100000);
    uint64_t size;
    uint32_t caller;
    ck_assert(gl_chunk_table_lookup(base + 48 * 12345, &size, &caller));
    ck_assert_uint_eq(size, 40 + 12345 % 7);
    ck_assert_uint_eq(caller, 12345 % 1000 + 1);
    for (uint64_t i = 0; i < 100000; i += 2)
        ck_assert(gl_chunk_table_remove(base + i * 48));
    ck_assert(!gl_chunk_table_remove(base)); /* twice */
    ck_assert(!gl_chunk_table_lookup(base, NULL, NULL));
    ck_assert(gl_chunk_table_lookup(base + 48, NULL, NULL));
    ck_assert_uint_eq(gl_chunk_table_count(), 50000);
    /* Tombstones are reused and cleaned: churn does not grow the table. */
    size_t before = gl_chunk_table_memory_bytes();
    for (int round = 0; round < 20; round++)
        for (uint64_t i = 0; i < 100000; i += 2) {
            gl_chunk_table_insert(base + i * 48 + 8, 1, 1);
            gl_chunk_table_remove(base + i * 48 + 8);
        }
    ck_assert_uint_le(gl_chunk_table_memory_bytes(), before * 2);
    ck_assert_uint_eq(gl_chunk_table_count(), 50000);
    /* Insert at a live address replaces (a free the hooks missed). */
    gl_chunk_table_insert(base + 48, 999, 7);
    ck_assert_uint_eq(gl_chunk_table_count(), 50000);
    ck_assert(gl_chunk_table_lookup(base + 48, &size, &caller) && size == 999 && caller == 7);
    /* Addresses 0 and 1 are never chunks; huge sizes are capped. */
    gl_chunk_table_insert(0, 10, 1);
    gl_chunk_table_insert(1, 10, 1);
    ck_assert_uint_eq(gl_chunk_table_count(), 50000);
    gl_chunk_table_insert(base + 7, 1ULL << 50, 1);
    ck_assert(gl_chunk_table_lookup(base + 7, &size, NULL) && size == GL_CHUNK_SIZE_MAX);
    gl_chunk_table_reset();
}
END_TEST

struct sum {
    size_t n;
    uint64_t bytes;
};

static void add_up(uint64_t addr, uint64_t size, uint32_t caller, void *arg)
{
    (void)addr, (void)caller;
    struct sum *s = arg;
    s->n++;
    s->bytes += size;
}

START_TEST(test_chunk_foreach)
{
    gl_chunk_table_reset();
    for (uint64_t i = 0; i < 1000; i++)
        gl_chunk_table_insert(0x6000000000ULL + i * 64, 10, 1);
    struct sum s = {0, 0};
    gl_chunk_table_foreach(add_up, &s, false);
    ck_assert_uint_eq(s.n, 1000);
    ck_assert_uint_eq(s.bytes, 10000);
    s = (struct sum){0, 0};
    gl_chunk_table_foreach(add_up, &s, true);
    ck_assert_uint_eq(s.n, 1000);
    gl_chunk_table_reset();
}
END_TEST

static void count_range(uint64_t addr, uint64_t size, uint32_t caller, void *arg)
{
    (void)size, (void)caller;
    if (addr >= 0x7000000000ULL && addr < 0x7000000000ULL + 4 * 0x10000000ULL)
        ((struct sum *)arg)->n++;
}

static void *insert_many(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < 50000; i++)
        gl_chunk_table_insert(base + i * 16, 16, 1);
    for (uint64_t i = 0; i < 50000; i += 5)
        gl_chunk_table_remove(base + i * 16);
    return NULL;
}

START_TEST(test_chunk_threads)
{
    gl_chunk_table_reset();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, insert_many,
                       (void *)(uintptr_t)(0x7000000000ULL + (uint64_t)i * 0x10000000));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* (The threads' own allocations go through the hooks too: count ours.) */
    struct sum mine = {0, 0};
    gl_chunk_table_foreach(count_range, &mine, false);
    ck_assert_uint_eq(mine.n, 4 * 40000);
    gl_chunk_table_reset();
}
END_TEST

/* A shard's filter says "absent" without the lock: it must never say so of a
 * chunk present while another thread's inserts and removes rebuild its shard:
 * a small shard's filter recomputed, a large one made anew as the shard
 * grows, and cleaned in place at the same size. */
static atomic_bool churning;
static atomic_uint churned; /* rounds */

static void *churn(void *arg)
{
    uint64_t kept_each = (uint64_t)(uintptr_t)arg;
    /* New addresses each round: their tombstones pile up and the shards are
     * cleaned (rebuilt) over and over; kept_each more stay, and the shards
     * grow over the first rounds. */
    uint64_t kept = 0xb000000000ULL;
    for (uint64_t base = 0x9000000000ULL; atomic_load(&churning); base += 0x1000000) {
        if (kept_each) { /* all in, then all out: the tombstones pass half the
                          * array, which is cleaned at the same size */
            for (uint64_t i = 0; i < 40000; i++)
                gl_chunk_table_insert(base + i * 16, 16, 1);
            for (uint64_t i = 0; i < 40000; i++)
                gl_chunk_table_remove(base + i * 16);
        } else
            for (uint64_t i = 0; i < 20000; i++) {
                gl_chunk_table_insert(base + i * 16, 16, 1);
                gl_chunk_table_remove(base + i * 16);
            }
        if (atomic_load(&churned) < 12)
            for (uint64_t i = 0; i < kept_each; i++, kept += 16)
                gl_chunk_table_insert(kept, 16, 1);
        atomic_fetch_add(&churned, 1);
    }
    return NULL;
}

static void filter_through_rebuilds(uint64_t present, uint64_t kept_each)
{
    gl_chunk_table_reset();
    uint64_t base = 0x8000000000ULL;
    for (uint64_t i = 0; i < present; i++)
        gl_chunk_table_insert(base + i * 32, 32, 1);
    atomic_store(&churning, true);
    atomic_store(&churned, 0);
    pthread_t t;
    pthread_create(&t, NULL, churn, (void *)(uintptr_t)kept_each);
    unsigned missed = 0;
    while (atomic_load(&churned) < 20) /* some 3,000 rebuilds */
        for (uint64_t i = 0; i < present; i++)
            missed += !gl_chunk_table_lookup(base + i * 32, NULL, NULL);
    atomic_store(&churning, false);
    pthread_join(t, NULL);
    ck_assert_uint_eq(missed, 0);
    /* Absent addresses: never inserted, and removed. */
    ck_assert(!gl_chunk_table_remove(0xa000000000ULL));
    ck_assert(!gl_chunk_table_lookup(0x9000000000ULL, NULL, NULL));
    for (uint64_t i = 0; i < present; i++)
        ck_assert(gl_chunk_table_remove(base + i * 32));
    ck_assert(!gl_chunk_table_remove(base));
    gl_chunk_table_reset();
}

START_TEST(test_chunk_filter_through_rebuilds) { filter_through_rebuilds(2000, 0); }
END_TEST

START_TEST(test_chunk_large_filter_through_rebuilds) { filter_through_rebuilds(20000, 20000); }
END_TEST

/* The shards pass from the small filter to a page of their own while the
 * lookups run (2,000 chunks, 8 a shard, then 3,000 more a round). */
START_TEST(test_chunk_filter_grows_under_lookups) { filter_through_rebuilds(2000, 3000); }
END_TEST

/* A heap of a few thousand chunks (a CUDA program's, 30 and 110 a shard,
 * within a shard's first array), at addresses without a pattern: the small
 * filter's 64 counters passed 43% and 58% of absent addresses; a shard past
 * 16 chunks has a page of its own. */
static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

START_TEST(test_chunk_filter_mid_heap)
{
    for (uint64_t n = 8000; n <= 28000; n += 20000) {
        gl_chunk_table_reset();
        uint64_t seed = n, region = 0x5000000000ULL, mask = ((1ULL << 30) - 1) & ~15ULL;
        for (uint64_t i = 0; i < n; i++)
            gl_chunk_table_insert(region + (splitmix(&seed) & mask), 16, 1);
        unsigned passed = 0, asked = 0;
        while (asked < n) {
            uint64_t a = region + (splitmix(&seed) & mask);
            if (gl_chunk_table_lookup(a, NULL, NULL))
                continue; /* present after all */
            asked++;
            passed += gl_chunk_table_test_may_hold(a);
        }
        ck_assert_msg(passed < n / 10, "%u of %llu absent addresses passed the filter", passed,
                      (unsigned long long)n);
    }
    gl_chunk_table_reset();
}
END_TEST

/* Counters, not bits: a program that allocates and frees all the time
 * (a million distinct addresses here) leaves the filters as they were. */
START_TEST(test_chunk_filter_under_churn)
{
    gl_chunk_table_reset();
    uint64_t base = 0x5000000000ULL, absent = base + 32, churn = 0x7000000000ULL;
    for (uint64_t i = 0; i < 1000; i++)
        gl_chunk_table_insert(base + i * 64, 48, 1);
    for (uint64_t i = 0; i < 1000000; i++) {
        gl_chunk_table_insert(churn + i * 64, 16, 1);
        ck_assert(gl_chunk_table_remove(churn + i * 64));
    }
    unsigned passed = 0;
    for (uint64_t i = 0; i < 100000; i++)
        passed += gl_chunk_table_test_may_hold(absent + i * 64);
    for (uint64_t i = 0; i < 1000; i++)
        ck_assert(gl_chunk_table_test_may_hold(base + i * 64));
    ck_assert_msg(passed < 100000 / 10, "%u of 100,000 absent addresses passed the filter", passed);
    gl_chunk_table_reset();
}
END_TEST

/* A large program's heap (200,000 chunks, some 800 a shard) would set every
 * bit of a small filter; the large ones still turn most absent addresses
 * away.  Present ones always pass. */
START_TEST(test_chunk_large_filter)
{
    gl_chunk_table_reset();
    /* The absent addresses between the present ones, as the driver's chunks
     * lie among the program's. */
    uint64_t base = 0x5000000000ULL, absent = base + 64;
    for (uint64_t i = 0; i < 200000; i++)
        gl_chunk_table_insert(base + i * 128, 16, 1);
    unsigned passed = 0;
    for (uint64_t i = 0; i < 200000; i++) {
        ck_assert(gl_chunk_table_test_may_hold(base + i * 128));
        passed += gl_chunk_table_test_may_hold(absent + i * 128);
    }
    ck_assert_msg(passed < 200000 / 10, "%u of 200,000 absent addresses passed the filter", passed);
    /* Half removed, then their tombstones cleaned by more inserts and
     * removes: the filter loses their bits too. */
    for (uint64_t i = 0; i < 200000; i += 2)
        ck_assert(gl_chunk_table_remove(base + i * 128));
    for (uint64_t i = 0; i < 1000000; i++) {
        gl_chunk_table_insert(0x6000000000ULL + i * 64, 16, 1);
        gl_chunk_table_remove(0x6000000000ULL + i * 64);
    }
    unsigned removed_passed = 0;
    for (uint64_t i = 0; i < 200000; i++)
        if (i % 2)
            ck_assert(gl_chunk_table_test_may_hold(base + i * 128));
        else
            removed_passed += gl_chunk_table_test_may_hold(base + i * 128);
    ck_assert_msg(removed_passed < 100000 / 10, "%u of 100,000 removed chunks passed the filter",
                  removed_passed);
    gl_chunk_table_reset();
}
END_TEST

/* ---- callers ---- */

START_TEST(test_callers)
{
    gl_callers_reset();
    uint32_t a = gl_callers_id(0x401000), b = gl_callers_id(0x402000);
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_ne(a, b);
    ck_assert_uint_eq(gl_callers_id(0x401000), a);
    ck_assert_uint_eq(gl_callers_ip(a), 0x401000);
    ck_assert_uint_eq(gl_callers_id(0), 0);
    ck_assert_uint_eq(gl_callers_ip(0), 0);
    /* Full (three quarters): new callers get 0, known ones keep their id. */
    uint32_t zeros = 0;
    for (uintptr_t ip = 0x10000000; ip < 0x10000000 + GL_CALLERS_MAX * 16ULL; ip += 16)
        zeros += gl_callers_id(ip) == 0;
    ck_assert_uint_gt(zeros, GL_CALLERS_MAX / 8);
    ck_assert_uint_eq(gl_callers_id(0x401000), a);
    gl_callers_reset();
}
END_TEST

/* ---- anonymous mappings ---- */

struct spans {
    uint64_t start[16], len[16];
    uint32_t caller[16];
    int n;
};

static void collect(uint64_t start, uint64_t len, uint32_t caller, void *arg)
{
    struct spans *s = arg;
    if (s->n < 16) {
        s->start[s->n] = start;
        s->len[s->n] = len;
        s->caller[s->n] = caller;
    }
    s->n++;
}

static struct spans spans_now(void)
{
    struct spans s;
    memset(&s, 0, sizeof s);
    gl_anon_maps_foreach(collect, &s, false);
    return s;
}

START_TEST(test_anon_maps_cut_and_split)
{
    gl_anon_maps_reset();
    gl_anon_maps_add(0x100000, 0x10000, 1);
    gl_anon_maps_add(0x200000, 0x10000, 2);
    struct spans s = spans_now();
    ck_assert_int_eq(s.n, 2);
    /* A hole in the middle splits. */
    gl_anon_maps_remove(0x104000, 0x1000);
    s = spans_now();
    ck_assert_int_eq(s.n, 3);
    ck_assert_uint_eq(s.start[0], 0x100000);
    ck_assert_uint_eq(s.len[0], 0x4000);
    ck_assert_uint_eq(s.start[1], 0x105000);
    ck_assert_uint_eq(s.len[1], 0xb000);
    ck_assert_uint_eq(s.caller[1], 1);
    /* A removal across intervals trims both ends and drops what is inside. */
    gl_anon_maps_remove(0x10f000, 0xf2000);
    s = spans_now();
    ck_assert_int_eq(s.n, 3);
    ck_assert_uint_eq(s.start[1], 0x105000);
    ck_assert_uint_eq(s.len[1], 0xa000);
    ck_assert_uint_eq(s.start[2], 0x201000);
    ck_assert_uint_eq(s.len[2], 0xf000);
    /* An add over existing ones replaces them (MAP_FIXED). */
    gl_anon_maps_add(0x0ff000, 0x200000, 9);
    s = spans_now();
    ck_assert_int_eq(s.n, 1);
    ck_assert_uint_eq(s.caller[0], 9);
    uint32_t caller = 0;
    ck_assert(gl_anon_maps_take(0x100000, 0x1000, &caller));
    ck_assert_uint_eq(caller, 9);
    ck_assert(!gl_anon_maps_take(0x100000, 0x1000, &caller));
    ck_assert_int_eq(spans_now().n, 2);
    gl_anon_maps_reset();
    ck_assert_uint_eq(gl_anon_maps_count(), 0);
}
END_TEST

START_TEST(test_anon_maps_many)
{
    gl_anon_maps_reset();
    for (uint64_t i = 0; i < 5000; i++)
        gl_anon_maps_add(0x10000000 + i * 0x20000, 0x10000, 1);
    ck_assert_uint_eq(gl_anon_maps_count(), 5000);
    for (uint64_t i = 0; i < 5000; i += 2)
        gl_anon_maps_remove(0x10000000 + i * 0x20000, 0x10000);
    ck_assert_uint_eq(gl_anon_maps_count(), 2500);
    gl_anon_maps_reset();
}
END_TEST

/* ---- the hooks, live ---- */

/* Is ip in this program (not libc, not a library)? */
static bool in_this_program(uintptr_t ip)
{
    Dl_info a, b;
    return dladdr((void *)ip, &a) && dladdr((void *)&in_this_program, &b) &&
           a.dli_fbase == b.dli_fbase;
}

static uint32_t caller_of_chunk(void *p)
{
    uint32_t caller = 0;
    ck_assert_msg(gl_chunk_table_lookup((uint64_t)(uintptr_t)p, NULL, &caller),
                  "chunk %p not recorded", p);
    return caller;
}

START_TEST(test_hooks_malloc_family)
{
    ck_assert(gl_heap_active());
    void *a = malloc(100);
    uint64_t size = 0;
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)a, &size, NULL));
    ck_assert_uint_eq(size, 100);
    ck_assert(in_this_program(gl_callers_ip(caller_of_chunk(a))));
    void *c = calloc(10, 30);
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)c, &size, NULL) && size == 300);
    void *r = realloc(a, 100000);
    ck_assert(!gl_chunk_table_lookup((uint64_t)(uintptr_t)a, NULL, NULL) || r == a);
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)r, &size, NULL) && size == 100000);
    void *m = NULL;
    ck_assert_int_eq(posix_memalign(&m, 256, 1000), 0);
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)m, &size, NULL) && size == 1000);
    void *al = aligned_alloc(64, 640);
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)al, &size, NULL) && size == 640);
    /* Through libc: strdup's chunk is owned by libc. */
    char *d = strdup("hello");
    ck_assert(!in_this_program(gl_callers_ip(caller_of_chunk(d))));
    size_t before = gl_chunk_table_count();
    free(r);
    free(c);
    free(m);
    free(al);
    free(d);
    ck_assert_uint_eq(gl_chunk_table_count(), before - 5);
    ck_assert(!gl_chunk_table_lookup((uint64_t)(uintptr_t)r, NULL, NULL));
    /* realloc(p, 0) frees; realloc(NULL, n) allocates. */
    void *z = realloc(NULL, 50);
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)z, &size, NULL) && size == 50);
    z = realloc(z, 0);
    free(z);
}
END_TEST

/* The code whose chunks go unrecorded (the driver's, gl_heap_skip_code):
 * here the C library's, so that strdup stands for the driver's calloc. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uint64_t *range = arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libc.so"))
        return 0;
    range[0] = UINT64_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uint64_t start = info->dlpi_addr + ph->p_vaddr;
            if (start < range[0])
                range[0] = start;
            if (start + ph->p_memsz > range[1])
                range[1] = start + ph->p_memsz;
        }
    }
    return 1;
}

START_TEST(test_hooks_skip_code)
{
    uint64_t libc[2] = {0, 0};
    dl_iterate_phdr(find_libc, libc);
    ck_assert_uint_gt(libc[1], libc[0]);
    char *before = strdup("recorded");
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)before, NULL, NULL));
    gl_heap_skip_code(libc[0], libc[1]);
    gl_heap_skip_code(0x1000, 0x2000); /* the first call wins */
    char *d = strdup("the driver's");
    ck_assert(!gl_chunk_table_lookup((uint64_t)(uintptr_t)d, NULL, NULL));
    void *mine = malloc(64); /* this program's: still recorded */
    ck_assert(gl_chunk_table_lookup((uint64_t)(uintptr_t)mine, NULL, NULL));
    /* A chunk made before, freed now: its free still takes it out. */
    size_t n = gl_chunk_table_count();
    free(before);
    ck_assert(!gl_chunk_table_lookup((uint64_t)(uintptr_t)before, NULL, NULL));
    free(d); /* unrecorded: nothing to take out */
    free(mine);
    ck_assert_uint_eq(gl_chunk_table_count(), n - 2);
    atomic_store(&gl_heap_state_skip_len, 0); /* the C library's code recorded again */
}
END_TEST

/* The driver observer hands libcuda's code to the heap when it first finds
 * it (observe/driver.c): the records the driver keeps of its blocks (here the
 * fake driver's, tests/driver/fake_cuda.c) go unrecorded, and a stale entry
 * at a record's address (a free the hooks missed) goes with it. */
START_TEST(test_hooks_skip_the_driver)
{
    const char *dir = getenv("GPULEAK_BUILDDIR");
    ck_assert_msg(dir, "GPULEAK_BUILDDIR unset: run through make check");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/driver/.libs/libcuda.so.1", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    ck_assert_msg(h, "%s", dlerror());
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*alloc)(uint64_t *, size_t) = (int (*)(uint64_t *, size_t))dlsym(h, "cuMemAlloc_v2");
    int (*release)(uint64_t) = (int (*)(uint64_t))dlsym(h, "cuMemFree_v2");
    void *(*record_of)(uint64_t) = (void *(*)(uint64_t))dlsym(h, "fake_cuda_record");
    ck_assert(init && alloc && release && record_of);
    gl_driver_prepare();
    ck_assert(gl_heap_state_skipped((uintptr_t)init));
    ck_assert(gl_heap_state_skipped((uintptr_t)record_of));
    ck_assert(!gl_heap_state_skipped((uintptr_t)find_libc));
    ck_assert_int_eq(init(0), 0);
    /* Chunks of the program's, of a record's size, freed where the hooks do
     * not see them: their entries stay, and the allocator hands their
     * addresses to the next chunks of that size, the driver's records (more
     * than glibc's per-thread cache holds, which calloc does not take from). */
    void (*unseen_free)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    ck_assert(unseen_free && unseen_free != free);
    void *stale[16];
    for (int i = 0; i < 16; i++)
        stale[i] = malloc(16);
    for (int i = 0; i < 16; i++)
        unseen_free(stale[i]);
    size_t n = gl_chunk_table_count();
    uint64_t blocks[8];
    unsigned reused = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(alloc(&blocks[i], 4096), 0);
        void *record = record_of(blocks[i]);
        ck_assert_ptr_nonnull(record);
        ck_assert(!gl_chunk_table_lookup((uint64_t)(uintptr_t)record, NULL, NULL));
        for (int k = 0; k < 16; k++)
            reused += record == stale[k];
    }
    ck_assert_msg(reused > 0, "no record took a stale chunk's address");
    /* The stale entries under records gone (and any the C library's own
     * frees left there: its internal calls to free bypass the hooks), no
     * record in; the records' frees find nothing to take out. */
    size_t after = gl_chunk_table_count();
    ck_assert_uint_le(after, n - reused);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(release(blocks[i]), 0);
    ck_assert_uint_eq(gl_chunk_table_count(), after);
}
END_TEST

START_TEST(test_hooks_mmap)
{
    size_t len = 1 << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    uint32_t caller = 0;
    /* Recorded, owned by this program. */
    size_t n0 = gl_anon_maps_count();
    ck_assert_uint_ge(n0, 1);
    ck_assert_int_eq(munmap(p + 4096, 4096), 0);
    ck_assert_uint_eq(gl_anon_maps_count(), n0 + 1); /* split */
    char *q = mremap(p, 4096, 8192, MREMAP_MAYMOVE);
    ck_assert_ptr_ne(q, MAP_FAILED);
    ck_assert(gl_anon_maps_take((uint64_t)(uintptr_t)q, 8192, &caller));
    ck_assert(in_this_program(gl_callers_ip(caller)));
    munmap(q, 8192);
    munmap(p + 8192, len - 8192);
    /* Read-only or file mappings are not the program's heap. */
    size_t n1 = gl_anon_maps_count();
    void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_uint_eq(gl_anon_maps_count(), n1);
    munmap(ro, 4096);
    /* Nor is a thread stack: a dead thread's, cached by glibc, holds stale values. */
    void *st =
        mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    ck_assert_ptr_ne(st, MAP_FAILED);
    ck_assert_uint_eq(gl_anon_maps_count(), n1);
    munmap(st, 65536);
}
END_TEST

/* With an allocator preloaded (tests/heap_preload.test sets
 * GPULEAK_TEST_NEXT_MALLOC to its file name), the hooks forward to it, and what
 * they record is its chunks. */
START_TEST(test_hooks_forward_to_the_next_allocator)
{
    const char *want = getenv("GPULEAK_TEST_NEXT_MALLOC");
    void *next = dlsym(RTLD_NEXT, "malloc");
    ck_assert_ptr_nonnull(next);
    Dl_info info;
    ck_assert(dladdr(next, &info) && info.dli_fname);
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    if (want && *want)
        ck_assert_msg(strncmp(base, want, strlen(want)) == 0, "next malloc is %s's, not %s's", base,
                      want);
    else
        ck_assert_msg(strncmp(base, "libc.so", 7) == 0, "next malloc is %s's", base);
    size_t before = gl_chunk_table_count();
    void *v[64];
    for (int i = 0; i < 64; i++)
        v[i] = malloc(100 + (size_t)i * 1000);
    ck_assert_uint_ge(gl_chunk_table_count(), before + 64);
    for (int i = 0; i < 64; i++)
        free(v[i]);
    ck_assert_uint_le(gl_chunk_table_count(), before);
}
END_TEST

static void *thread_mallocs(void *arg)
{
    (void)arg;
    void *v[1000];
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 1000; i++)
            v[i] = malloc((size_t)(i % 200) + 1);
        for (int i = 0; i < 1000; i++)
            free(v[i]);
    }
    return NULL;
}

START_TEST(test_hooks_threads)
{
    size_t before = gl_chunk_table_count();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_mallocs, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* Every chunk the threads made was freed (their stacks' chunks too). */
    ck_assert_uint_le(gl_chunk_table_count(), before + 8);
}
END_TEST

/* fork() while a table's lock is held (here by the visitor of a foreach, as
 * another thread's malloc might hold it): the child inherits it held, and its
 * next malloc or mmap would spin forever unless the child handler
 * (gl_heap_after_fork_child, which the runtime registers) resets the locks. */
static int fork_status = -1;
static void fork_inside(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(5); /* a child stuck on a lock dies of SIGALRM */
        for (int i = 0; i < 20000; i++)
            free(malloc(16 + (size_t)(i % 4096)));
        for (int i = 0; i < 16; i++) {
            void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            munmap(m, 4096);
        }
        _exit(0);
    }
    waitpid(pid, &fork_status, 0);
}

static void fork_in_chunk_visit(uint64_t addr, uint64_t size, uint32_t caller, void *arg)
{
    (void)addr, (void)size, (void)caller;
    if (!*(int *)arg) {
        *(int *)arg = 1;
        fork_inside();
    }
}

static void fork_in_map_visit(uint64_t start, uint64_t len, uint32_t caller, void *arg)
{
    fork_in_chunk_visit(start, len, caller, arg);
}

START_TEST(test_fork_with_a_lock_held)
{
    pthread_atfork(NULL, NULL, gl_heap_after_fork_child);
    void *keep = malloc(100); /* at least one chunk to visit */
    int done = 0;
    gl_chunk_table_foreach(fork_in_chunk_visit, &done, false);
    ck_assert_int_eq(done, 1);
    ck_assert_msg(WIFEXITED(fork_status) && WEXITSTATUS(fork_status) == 0,
                  "the child hung on the chunk table's lock (status %d)", fork_status);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    done = 0;
    fork_status = -1;
    gl_anon_maps_foreach(fork_in_map_visit, &done, false);
    ck_assert_int_eq(done, 1);
    ck_assert_msg(WIFEXITED(fork_status) && WEXITSTATUS(fork_status) == 0,
                  "the child hung on the mappings' lock (status %d)", fork_status);
    munmap(m, 4096);
    free(keep);
}
END_TEST

static Suite *heap_suite(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = tcase_create("tables");
    tcase_add_test(tc, test_chunk_insert_lookup_remove);
    tcase_add_test(tc, test_chunk_foreach);
    tcase_add_test(tc, test_chunk_threads);
    tcase_add_test(tc, test_chunk_filter_through_rebuilds);
    tcase_add_test(tc, test_chunk_large_filter_through_rebuilds);
    tcase_add_test(tc, test_chunk_filter_grows_under_lookups);
    tcase_add_test(tc, test_chunk_filter_mid_heap);
    tcase_add_test(tc, test_chunk_large_filter);
    tcase_add_test(tc, test_chunk_filter_under_churn);
    tcase_add_test(tc, test_callers);
    tcase_add_test(tc, test_anon_maps_cut_and_split);
    tcase_add_test(tc, test_anon_maps_many);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    TCase *th = tcase_create("hooks");
    tcase_add_test(th, test_hooks_malloc_family);
    tcase_add_test(th, test_hooks_mmap);
    tcase_add_test(th, test_hooks_skip_code);
    tcase_add_test(th, test_hooks_skip_the_driver);
    tcase_add_test(th, test_hooks_forward_to_the_next_allocator);
    tcase_add_test(th, test_fork_with_a_lock_held);
    tcase_add_test(th, test_hooks_threads);
    suite_add_tcase(s, th);
    return s;
}

TU_MAIN(heap_suite)
