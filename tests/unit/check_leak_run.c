/* SPDX-License-Identifier: MIT */
/* lib/check/leak_run.h without a GPU: recorded events replayed into the
 * tracker, then the whole leak run, its driver questions answered by a
 * stand-in (driver_query.h), by one that cannot tell, or by none at all.
 *
 * With answers, every question the run asks shows in its blocks: devices'
 * default pools and graph memory become cached blocks, IPC memory and a
 * pool the program made get their sizes, devices their names, --scan-device
 * reads blocks in their contexts.  Without a driver the run is the one whose
 * driver cannot tell: the same blocks, the same report, byte for byte. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "check/checkpoints.h"
#include "check/leak_run.h"
#include "check/run_suppressions.h"
#include "event/api.h"
#include "heap/heap.h"
#include "report/report_text.h"
#include "runtime.h"
#include "stack/modules.h"
#include "stack/stack_depot.h"
#include "track/tracker.h"

#define DEV_BLOCK 0x7f0000200000ULL
#define IPC_BLOCK 0x7f5000000000ULL
#define USER_POOL 0x9000ULL
#define CTX 0xc1
#define MiB (1ULL << 20)

static void alloc(uint64_t key, uint64_t size, enum gl_mem_kind kind, unsigned api, int device,
                  uint16_t flags)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.key = key;
    ev.size = size;
    ev.kind = (uint8_t)kind;
    ev.api = (uint16_t)api;
    ev.device = (int16_t)device;
    ev.ctx = CTX;
    ev.tid = (uint32_t)getpid();
    ev.flags = flags;
    gl_dispatch(&ev);
}

/* A device block, memory opened through IPC (size unknown), a pool the
 * program made (size unknown until the driver says what it keeps). */
static void replay(void)
{
    alloc(DEV_BLOCK, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0, 0);
    alloc(IPC_BLOCK, 0, GL_MEM_IPC, GL_API_cuIpcOpenMemHandle_v2, 1, GL_EVF_SIZE_UNKNOWN);
    alloc(gl_key_make(GL_NS_MEMPOOL, USER_POOL), 0, GL_MEM_POOL_RESERVE, GL_API_cuMemPoolCreate, 0,
          GL_EVF_SIZE_UNKNOWN);
}

static void setup(void)
{
    gl_tracker_init();
    tu_pipeline_reset();
    gl_checkpoints_reset();
    gl_leak_run_close();
    gl_run_suppressions_unload();
    gl_heap_set_active(false); /* no scan: every outstanding block counts as lost */
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime.opt.default_suppressions = false;
    gl_runtime.pid = getpid();
    snprintf(gl_runtime.command, sizeof gl_runtime.command, "./app");
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    replay();
}

static void teardown(void)
{
    gl_leak_run_set_driver(gl_driver_query_cuda());
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
}

/* ---- a driver that answers ---- */

static unsigned reads;

static bool fake_count(int *n)
{
    *n = 2;
    return true;
}

static bool fake_name(int device, char *buf, size_t len)
{
    snprintf(buf, len, "Fake GPU %d", device);
    return true;
}

static bool fake_default_pool(int device, uint64_t *pool)
{
    *pool = 0xd000 + (uint64_t)device;
    return true;
}

static bool fake_pool_usage(uint64_t pool, uint64_t *reserved, uint64_t *used)
{
    if (pool == 0xd000) { /* device 0's default pool keeps 4 KiB unused */
        *reserved = 8192;
        *used = 4096;
    } else if (pool == USER_POOL) {
        *reserved = 65536;
        *used = 1024;
    } else { /* device 1's keeps nothing */
        *reserved = *used = 0;
    }
    return true;
}

static bool fake_graph_memory(int device, uint64_t *reserved, uint64_t *used)
{
    if (device != 1)
        return false;
    *reserved = 2 * MiB;
    *used = 0;
    return true;
}

static bool fake_address_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
    if (addr != IPC_BLOCK)
        return false;
    *base = addr;
    *size = MiB;
    return true;
}

static bool fake_read(uint64_t ctx, uint64_t addr, void *buf, size_t len)
{
    ck_assert_uint_eq(ctx, CTX);
    ck_assert(addr >= DEV_BLOCK);
    memset(buf, 0, len);
    reads++;
    return true;
}

static const struct gl_driver_query answering = {
    .device_count = fake_count,
    .device_name = fake_name,
    .default_pool = fake_default_pool,
    .pool_usage = fake_pool_usage,
    .graph_memory = fake_graph_memory,
    .address_range = fake_address_range,
    .read = fake_read,
};

/* ---- drivers that cannot tell ---- */

static bool no_count(int *n)
{
    (void)n;
    return false;
}
static bool no_name(int d, char *b, size_t l)
{
    (void)d, (void)b, (void)l;
    return false;
}
static bool no_pool(int d, uint64_t *p)
{
    (void)d, (void)p;
    return false;
}
static bool no_usage(uint64_t p, uint64_t *r, uint64_t *u)
{
    (void)p, (void)r, (void)u;
    return false;
}
static bool no_graph(int d, uint64_t *r, uint64_t *u)
{
    (void)d, (void)r, (void)u;
    return false;
}
static bool no_range(uint64_t a, uint64_t *b, uint64_t *s)
{
    (void)a, (void)b, (void)s;
    return false;
}
static bool no_read(uint64_t c, uint64_t a, void *b, size_t l)
{
    (void)c, (void)a, (void)b, (void)l;
    return false;
}

static const struct gl_driver_query unknowing = {
    .device_count = no_count,
    .device_name = no_name,
    .default_pool = no_pool,
    .pool_usage = no_usage,
    .graph_memory = no_graph,
    .address_range = no_range,
    .read = no_read,
};

static const struct gl_driver_query empty; /* every member NULL */

/* ---- helpers ---- */

static void run_with(const struct gl_driver_query *q, struct gl_leak_run *run)
{
    gl_leak_run_lock();
    gl_leak_run_set_driver(q);
    ck_assert_int_eq(gl_leak_run(run, 0, NULL), 0);
    gl_leak_run_unlock();
}

static const struct gl_block_info *find(const struct gl_leak_run *run, uint64_t key)
{
    for (size_t i = 0; i < run->n; i++)
        if (run->blocks[i].key == key)
            return &run->blocks[i];
    return NULL;
}

static const struct gl_block_info *find_kind(const struct gl_leak_run *run, enum gl_mem_kind kind,
                                             int device)
{
    for (size_t i = 0; i < run->n; i++)
        if (run->blocks[i].kind == kind && run->blocks[i].device == device &&
            run->blocks[i].api == GL_API_NONE)
            return &run->blocks[i];
    return NULL;
}

/* The exit report's text part for a run. */
static void report_text(const struct gl_leak_run *run, char *buf, size_t cap)
{
    struct gl_report_input in;
    gl_leak_run_input(run, &in);
    struct gl_out o;
    gl_out_init_mem(&o, buf, cap);
    gl_report_text_preamble(&o, &in);
    gl_report_text_leaks(&o, &in);
    gl_out_flush(&o);
    ck_assert(!o.truncated);
}

/* ---- tests ---- */

START_TEST(test_answers_reach_the_blocks)
{
    struct gl_leak_run run;
    run_with(&answering, &run);

    const struct gl_block_info *ipc = find(&run, IPC_BLOCK);
    ck_assert_ptr_nonnull(ipc);
    ck_assert_uint_eq(ipc->size, MiB);
    ck_assert(!(ipc->flags & GL_BLK_SIZE_UNKNOWN));

    const struct gl_block_info *user = find(&run, gl_key_make(GL_NS_MEMPOOL, USER_POOL));
    ck_assert_ptr_nonnull(user);
    ck_assert_uint_eq(user->size, 65536 - 1024);
    ck_assert_uint_eq(user->aux, 1024);

    const struct gl_block_info *pool0 = find_kind(&run, GL_MEM_POOL_RESERVE, 0);
    ck_assert_ptr_nonnull(pool0);
    ck_assert_uint_eq(pool0->key, gl_key_make(GL_NS_MEMPOOL, 0xd000));
    ck_assert_uint_eq(pool0->size, 4096);
    ck_assert_uint_eq(pool0->aux, 4096);
    ck_assert_ptr_null(find_kind(&run, GL_MEM_POOL_RESERVE, 1)); /* keeps nothing */

    const struct gl_block_info *graph = find_kind(&run, GL_MEM_GRAPH_RESERVE, 1);
    ck_assert_ptr_nonnull(graph);
    ck_assert_uint_eq(graph->size, 2 * MiB);
    ck_assert_ptr_null(find_kind(&run, GL_MEM_GRAPH_RESERVE, 0));

    ck_assert_uint_eq(run.n, 5);
    /* The pools' unused memory and graph memory are cached, whatever points
     * to them; the rest is lost (no scan here). */
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_CACHED].blocks, 3);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_CACHED].bytes, 65536 - 1024 + 4096 + 2 * MiB);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_DEFINITE].blocks, 2);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_DEFINITE].bytes, 4096 + MiB);

    struct gl_report_input in;
    gl_leak_run_input(&run, &in);
    ck_assert_str_eq(in.device_name(0, in.arg), "Fake GPU 0");
    ck_assert_str_eq(in.device_name(1, in.arg), "Fake GPU 1");
    gl_leak_run_free(&run);
}
END_TEST

START_TEST(test_checks_since_a_checkpoint_leave_device_pools_alone)
{
    struct gl_leak_run run;
    gl_leak_run_lock();
    gl_leak_run_set_driver(&answering);
    ck_assert_int_eq(gl_leak_run(&run, 1, NULL), 0);
    gl_leak_run_unlock();
    ck_assert_ptr_null(find_kind(&run, GL_MEM_POOL_RESERVE, 0));
    ck_assert_ptr_null(find_kind(&run, GL_MEM_GRAPH_RESERVE, 1));
    ck_assert_uint_eq(run.n, 3);
    gl_leak_run_free(&run);
}
END_TEST

START_TEST(test_scan_device_reads_through_the_driver)
{
    gl_runtime.opt.scan_device = true;
    reads = 0;
    struct gl_leak_run run;
    run_with(&answering, &run);
    ck_assert(run.device_scanned);
    ck_assert_uint_gt(reads, 0);
    ck_assert_uint_gt(run.device.blocks_read, 0);
    gl_leak_run_free(&run);

    run_with(NULL, &run); /* nothing can be read: no block is */
    ck_assert_uint_eq(run.device.blocks_read, 0);
    gl_leak_run_free(&run);
}
END_TEST

START_TEST(test_no_driver_is_a_driver_that_cannot_tell)
{
    static char want[16384], got[16384];
    struct gl_leak_run run;
    run_with(&unknowing, &run);
    ck_assert_uint_eq(run.n, 3);
    ck_assert(find(&run, IPC_BLOCK)->flags & GL_BLK_SIZE_UNKNOWN);
    ck_assert(find(&run, gl_key_make(GL_NS_MEMPOOL, USER_POOL))->flags & GL_BLK_SIZE_UNKNOWN);
    report_text(&run, want, sizeof want);
    gl_leak_run_free(&run);
    ck_assert_ptr_nonnull(strstr(want, "on device 1: IPC-imported memory from "
                                       "cuIpcOpenMemHandle_v2, allocation #2, size unknown\n"));

    const struct gl_driver_query *none[] = {NULL, &empty};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        run_with(none[i], &run);
        ck_assert_uint_eq(run.n, 3);
        report_text(&run, got, sizeof got);
        tu_assert_text_eq(got, want);
        gl_leak_run_free(&run);
    }
}
END_TEST

/* ---- --leak-resolution: stacks compared as the report shows them ---- */

/* A static CUDA runtime's API and internals, and the program's frames, in
 * this program (symbolized as any): the report drops the internals and the
 * driver's entry point before the API the program called. */
#define TEST_FN __attribute__((noinline, noipa, used, optimize("O0")))
static volatile int sink;
TEST_FN void libcudart_static_fake_a(void) { sink++; }
TEST_FN void libcudart_static_fake_b(void) { sink++; }
TEST_FN void libcudart_static_fake_c(void) { sink++; }
TEST_FN void cudaMallocFake(void) { sink++; }
TEST_FN void fake_alloc_site(void) { sink++; }
TEST_FN void fake_other_site(void) { sink++; }
TEST_FN void fake_caller_one(void) { sink++; }
TEST_FN void fake_caller_two(void) { sink++; }

#define DRV_ENTRY 0x10001 /* in the made-up driver's range */
#define IN(fn) ((uintptr_t)(fn) + 1)

static void alloc_at(uint64_t key, uint64_t size, uint32_t stack)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GL_EV_ALLOC;
    ev.key = key;
    ev.size = size;
    ev.kind = GL_MEM_DEVICE;
    ev.api = GL_API_cuMemAlloc_v2;
    ev.ctx = CTX;
    ev.tid = (uint32_t)getpid();
    ev.stack = stack;
    gl_dispatch(&ev);
}

/* Shown, s1 and s2 are cudaMallocFake, fake_alloc_site, then each its own
 * caller: alike in 2 frames, though their stored frames differ from the 2nd
 * (other runtime internals).  s3 differs at the 2nd frame shown. */
static uint32_t s1, s2, s3;

static void resolution_setup(void)
{
    gl_modules_add_range(0x10000, 0x20000, GL_MOD_DRIVER);
    const uintptr_t f1[] = {
        DRV_ENTRY,          IN(libcudart_static_fake_a), IN(libcudart_static_fake_b),
        IN(cudaMallocFake), IN(fake_alloc_site),         IN(fake_caller_one)};
    const uintptr_t f2[] = {DRV_ENTRY, IN(libcudart_static_fake_c), IN(cudaMallocFake),
                            IN(fake_alloc_site), IN(fake_caller_two)};
    const uintptr_t f3[] = {DRV_ENTRY, IN(libcudart_static_fake_a), IN(cudaMallocFake),
                            IN(fake_other_site), IN(fake_caller_one)};
    s1 = gl_stack_depot_intern(f1, 6);
    s2 = gl_stack_depot_intern(f2, 5);
    s3 = gl_stack_depot_intern(f3, 5);
    ck_assert(s1 && s1 < s2 && s2 < s3);
    alloc_at(DEV_BLOCK + 0x100000, 100, s2); /* the oldest, of the later stack */
    alloc_at(DEV_BLOCK + 0x200000, 200, s1);
    alloc_at(DEV_BLOCK + 0x300000, 400, s3);
}

/* The records of the three stacks: their sizes, in record order. */
static unsigned stacked_records(const struct gl_leak_run *run, uint64_t *bytes, uint32_t *stack)
{
    unsigned k = 0;
    for (size_t i = 0; i < run->leaks.nrecords; i++) {
        const struct gl_loss_record *r = &run->leaks.records[i];
        if (r->stack) {
            bytes[k] = r->bytes;
            stack[k++] = r->stack;
        }
    }
    return k;
}

static enum gl_leak_kind all_definite(const struct gl_block_info *b, void *arg)
{
    (void)b, (void)arg;
    return GL_LEAK_DEFINITE;
}

START_TEST(test_leak_resolution_compares_frames_shown)
{
    resolution_setup();
    uint64_t bytes[8];
    uint32_t stack[8];
    struct gl_leak_run run;
    for (int saved = 0; saved < 2; saved++) {
        /* This process, then a saved log's (--read): classified apart, merged alike. */
        const struct gl_leak_run_saved log = {.classify = all_definite, .main_tid = 1};
        gl_leak_run_lock();
        gl_leak_run_set_saved(saved ? &log : NULL);
        gl_leak_run_unlock();

        gl_runtime.opt.leak_resolution = GL_LEAK_RES_HIGH;
        run_with(NULL, &run);
        ck_assert_uint_eq(stacked_records(&run, bytes, stack), 3);
        gl_leak_run_free(&run);

        gl_runtime.opt.leak_resolution = GL_LEAK_RES_MED; /* 3 frames shown: all must agree */
        run_with(NULL, &run);
        ck_assert_uint_eq(stacked_records(&run, bytes, stack), 3);
        gl_leak_run_free(&run);

        gl_runtime.opt.leak_resolution = GL_LEAK_RES_LOW;
        run_with(NULL, &run);
        ck_assert_uint_eq(stacked_records(&run, bytes, stack), 2);
        ck_assert_uint_eq(bytes[0], 300); /* s1 and s2 */
        ck_assert_uint_eq(stack[0], s1);  /* the lowest id, not the oldest block's */
        ck_assert_uint_eq(bytes[1], 400);
        ck_assert_uint_eq(stack[1], s3);
        static char text[16384];
        report_text(&run, text, sizeof text);
        const char *rec = strstr(text, "300 bytes in 2 blocks are definitely lost");
        ck_assert_msg(rec != NULL, "%s", text);
        ck_assert_ptr_nonnull(strstr(rec, "at 0x"));
        ck_assert_ptr_nonnull(strstr(rec, ": cudaMallocFake"));
        ck_assert_ptr_nonnull(strstr(rec, ": fake_caller_one")); /* s1's */
        ck_assert_ptr_null(strstr(text, "libcudart_static_fake"));
        gl_leak_run_free(&run);
    }
    gl_leak_run_lock();
    gl_leak_run_set_saved(NULL);
    gl_leak_run_unlock();
    gl_modules_clear();
}
END_TEST

static Suite *leak_run_suite(void)
{
    Suite *s = suite_create("leak_run");
    TCase *tc = tcase_create("replay");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_answers_reach_the_blocks);
    tcase_add_test(tc, test_checks_since_a_checkpoint_leave_device_pools_alone);
    tcase_add_test(tc, test_scan_device_reads_through_the_driver);
    tcase_add_test(tc, test_no_driver_is_a_driver_that_cannot_tell);
    tcase_add_test(tc, test_leak_resolution_compares_frames_shown);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(leak_run_suite)
