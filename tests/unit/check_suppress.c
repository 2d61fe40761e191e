/* SPDX-License-Identifier: MIT */
/* lib/check/suppress.h: suppression entries applied to loss records.
 *
 * Cached entries first (a matching record becomes cached), then Leak entries (a
 * matching record is suppressed); the first matching entry of each kind wins;
 * totals move with the records; each entry counts what it matched. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/suppress.h"
#include "testutil.h"

/* Stack ids name canned stacks. */
enum { STACK_NONE = 0, STACK_MALLOC = 1, STACK_POOL = 2, STACK_OTHER = 3, STACK_PYTHON = 4 };

static const struct gl_frame malloc_frames[] = {
    {0x401000, "cudaMalloc", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13", NULL},
    {0x401100, "make_buffer(unsigned long)", "app.cu", 8, "/work/app", "_Z11make_bufferm"},
    {0x401200, "main", "app.cu", 19, "/work/app", NULL},
};
static const struct gl_frame pool_frames[] = {
    {0x402000, "cudaMallocAsync", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13", NULL},
    {0x402100, "Pool::grow(int)", "pool.cc", 120, "/work/app", NULL},
    {0x402200, "main", "app.cu", 30, "/work/app", NULL},
};
static const struct gl_frame other_frames[] = {
    {0x403000, "cuMemAlloc_v2", NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL},
    {0x403100, NULL, NULL, 0, "/opt/lib/libthird.so", NULL},
};

/* A tensor allocated from Python: the CUDA call, PyTorch's C++, then Python
 * frames (no object; ip the code object's address). */
static const struct gl_frame python_frames[] = {
    {0x404000, "cudaMalloc", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13", NULL},
    {0x404100, "at::native::empty_cuda()", NULL, 0, "/opt/torch/lib/libtorch_cuda.so",
     "_ZN2at6native10empty_cudaEv"},
    {.ip = 0x7f0000001000,
     .function = "train_step",
     .file = "/home/u/train.py",
     .line = 42,
     .python = true},
    {.ip = 0x7f0000002000,
     .function = "<module>",
     .file = "/home/u/train.py",
     .line = 60,
     .python = true},
};

static unsigned calls, max_asked;

static unsigned fake_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    ck_assert_ptr_eq(arg, &calls);
    calls++;
    max_asked = max;
    const struct gl_frame *f;
    unsigned n;
    switch (stack) {
    case STACK_MALLOC:
        f = malloc_frames;
        n = 3;
        break;
    case STACK_POOL:
        f = pool_frames;
        n = 3;
        break;
    case STACK_OTHER:
        f = other_frames;
        n = 2;
        break;
    case STACK_PYTHON:
        f = python_frames;
        n = 4;
        break;
    default:
        return 0;
    }
    if (n > max)
        n = max;
    memcpy(out, f, n * sizeof *f);
    return n;
}

static struct gl_supp_set set;
static struct gl_leak_result lr;
static struct gl_loss_record recs[8];

static void setup(void)
{
    gl_suppressions_set_init(&set);
    memset(&lr, 0, sizeof lr);
    memset(recs, 0, sizeof recs);
    lr.records = recs;
    calls = max_asked = 0;
}

static void teardown(void) { gl_suppressions_set_free(&set); }

static void load(const char *text)
{
    char err[512];
    int rc = gl_suppressions_load_text(&set, text, strlen(text), "s.supp", err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
}

static struct gl_loss_record *add(enum gl_leak_kind kind, uint32_t stack, uint64_t bytes,
                                  uint64_t blocks)
{
    struct gl_loss_record *r = &recs[lr.nrecords++];
    r->kind = kind;
    r->stack = stack;
    r->bytes = bytes;
    r->blocks = blocks;
    lr.kind[kind].bytes += bytes;
    lr.kind[kind].blocks += blocks;
    lr.in_use.bytes += bytes;
    lr.in_use.blocks += blocks;
    return r;
}

static void suppress(void) { gl_suppress_records(&lr, &set, fake_frames, &calls); }

#define ASSERT_TOTALS(t, by, bl)                                                                   \
    do {                                                                                           \
        ck_assert_uint_eq((t).bytes, by);                                                          \
        ck_assert_uint_eq((t).blocks, bl);                                                         \
    } while (0)

#define ASSERT_COUNTS(e, c, by, bl)                                                                \
    do {                                                                                           \
        ck_assert_uint_eq((e)->count, c);                                                          \
        ck_assert_uint_eq((e)->bytes, by);                                                         \
        ck_assert_uint_eq((e)->blocks, bl);                                                        \
    } while (0)

START_TEST(test_leak_entry_suppresses)
{
    load("{\n hide-make-buffer\n gpuleak:Leak\n fun:cudaMalloc\n fun:make_buffer*\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_MALLOC, 1000, 4);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_POOL, 300, 1);
    struct gl_loss_record *c = add(GL_LEAK_POSSIBLE, STACK_MALLOC, 50, 2);
    suppress();
    ck_assert_ptr_eq(a->suppressed_by, &set.v[0]);
    ck_assert_ptr_null(b->suppressed_by);
    ck_assert_ptr_eq(c->suppressed_by, &set.v[0]);
    /* Kinds are kept; the totals move to "suppressed". */
    ck_assert_int_eq(a->kind, GL_LEAK_DEFINITE);
    ck_assert_int_eq(c->kind, GL_LEAK_POSSIBLE);
    ck_assert_ptr_null(a->cached_by);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 300, 1);
    ASSERT_TOTALS(lr.kind[GL_LEAK_POSSIBLE], 0, 0);
    ASSERT_TOTALS(lr.suppressed, 1050, 6);
    ASSERT_TOTALS(lr.in_use, 1350, 7); /* still in use */
    ASSERT_COUNTS(&set.v[0], 2, 1050, 6);
    ck_assert_uint_eq(calls, 3);
    ck_assert_uint_ge(max_asked, 24); /* all frames an entry can use */
}
END_TEST

START_TEST(test_cached_entry_reclassifies)
{
    load("{\n pool\n gpuleak:Cached\n fun:cudaMallocAsync\n fun:Pool::*\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_POOL, 4096, 2);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_MALLOC, 10, 1);
    struct gl_loss_record *c = add(GL_LEAK_REACHABLE, STACK_POOL, 100, 1);
    suppress();
    ck_assert_int_eq(a->kind, GL_LEAK_CACHED);
    ck_assert_ptr_eq(a->cached_by, &set.v[0]);
    ck_assert_ptr_null(a->suppressed_by);
    ck_assert_int_eq(b->kind, GL_LEAK_DEFINITE);
    ck_assert_ptr_null(b->cached_by);
    ck_assert_int_eq(c->kind, GL_LEAK_CACHED);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 10, 1);
    ASSERT_TOTALS(lr.kind[GL_LEAK_REACHABLE], 0, 0);
    ASSERT_TOTALS(lr.kind[GL_LEAK_CACHED], 4196, 3);
    ASSERT_TOTALS(lr.suppressed, 0, 0);
    ASSERT_TOTALS(lr.in_use, 4206, 4);
    ASSERT_COUNTS(&set.v[0], 2, 4196, 3);
}
END_TEST

START_TEST(test_cached_record_stays)
{
    /* A record already cached: a Cached entry changes nothing and counts nothing. */
    load("{\n pool\n gpuleak:Cached\n ...\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_CACHED, STACK_POOL, 64, 1);
    suppress();
    ck_assert_int_eq(a->kind, GL_LEAK_CACHED);
    ck_assert_ptr_null(a->cached_by);
    ASSERT_TOTALS(lr.kind[GL_LEAK_CACHED], 64, 1);
    ASSERT_COUNTS(&set.v[0], 0, 0, 0);
}
END_TEST

START_TEST(test_cached_then_leak)
{
    /* The Leak entry sees the record's new kind: only cached records. */
    load("{\n hide-cached\n gpuleak:Leak\n match-leak-kinds: cached\n ...\n fun:main\n}\n"
         "{\n pool\n gpuleak:Cached\n fun:cudaMallocAsync\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_POOL, 800, 8);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_MALLOC, 20, 1);
    suppress();
    ck_assert_int_eq(a->kind, GL_LEAK_CACHED);
    ck_assert_ptr_eq(a->cached_by, &set.v[1]);
    ck_assert_ptr_eq(a->suppressed_by, &set.v[0]);
    ck_assert_ptr_null(b->suppressed_by); /* definite: not the Leak entry's kind */
    ck_assert_int_eq(b->kind, GL_LEAK_DEFINITE);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 20, 1);
    ASSERT_TOTALS(lr.kind[GL_LEAK_CACHED], 0, 0);
    ASSERT_TOTALS(lr.suppressed, 800, 8);
    ASSERT_COUNTS(&set.v[0], 1, 800, 8);
    ASSERT_COUNTS(&set.v[1], 1, 800, 8);
}
END_TEST

START_TEST(test_cached_hides_from_definite_leak_entry)
{
    /* Reclassified first, a record no longer matches a Leak entry for definite. */
    load("{\n hide-definite\n gpuleak:Leak\n match-leak-kinds: definite\n ...\n}\n"
         "{\n pool\n gpuleak:Cached\n fun:cudaMallocAsync\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_POOL, 800, 8);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_MALLOC, 20, 1);
    suppress();
    ck_assert_int_eq(a->kind, GL_LEAK_CACHED);
    ck_assert_ptr_null(a->suppressed_by);
    ck_assert_ptr_eq(b->suppressed_by, &set.v[0]);
    ASSERT_TOTALS(lr.kind[GL_LEAK_CACHED], 800, 8);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 0, 0);
    ASSERT_TOTALS(lr.suppressed, 20, 1);
    ASSERT_COUNTS(&set.v[0], 1, 20, 1);
    ASSERT_COUNTS(&set.v[1], 1, 800, 8);
}
END_TEST

START_TEST(test_first_match_wins)
{
    load("{\n first\n gpuleak:Leak\n fun:cudaMalloc\n}\n"
         "{\n second\n gpuleak:Leak\n ...\n}\n"
         "{\n cached-first\n gpuleak:Cached\n obj:*libcuda.so*\n}\n"
         "{\n cached-second\n gpuleak:Cached\n ...\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_MALLOC, 100, 1);
    struct gl_loss_record *b = add(GL_LEAK_POSSIBLE, STACK_OTHER, 200, 2);
    suppress();
    ck_assert_ptr_eq(a->suppressed_by, &set.v[0]);
    ck_assert_ptr_eq(a->cached_by, &set.v[3]); /* libcudart is not libcuda */
    ck_assert_ptr_eq(b->cached_by, &set.v[2]);
    ck_assert_ptr_eq(b->suppressed_by, &set.v[1]);
    ASSERT_COUNTS(&set.v[0], 1, 100, 1);
    ASSERT_COUNTS(&set.v[1], 1, 200, 2);
    ASSERT_COUNTS(&set.v[2], 1, 200, 2);
    ASSERT_COUNTS(&set.v[3], 1, 100, 1);
    ASSERT_TOTALS(lr.suppressed, 300, 3);
    for (int k = 0; k < GL_LEAK_NKINDS; k++)
        ASSERT_TOTALS(lr.kind[k], 0, 0);
}
END_TEST

START_TEST(test_counters_per_entry)
{
    load("{\n malloc\n gpuleak:Leak\n fun:cudaMalloc\n}\n"
         "{\n unused\n gpuleak:Leak\n fun:nothing_calls_this\n}\n"
         "{\n third-party\n gpuleak:Leak\n match-leak-kinds: possible\n fun:cuMemAlloc_v2\n"
         " obj:/opt/lib/*\n}\n");
    add(GL_LEAK_DEFINITE, STACK_MALLOC, 1, 1);
    add(GL_LEAK_DEFINITE, STACK_MALLOC, 10, 2);
    add(GL_LEAK_REACHABLE, STACK_MALLOC, 100, 3);
    add(GL_LEAK_DEFINITE, STACK_OTHER, 1000, 4); /* not possible: shown */
    add(GL_LEAK_POSSIBLE, STACK_OTHER, 10000, 5);
    add(GL_LEAK_POSSIBLE, STACK_NONE, 100000, 6);
    suppress();
    ASSERT_COUNTS(&set.v[0], 3, 111, 6);
    ASSERT_COUNTS(&set.v[1], 0, 0, 0);
    ASSERT_COUNTS(&set.v[2], 1, 10000, 5);
    ck_assert_ptr_null(recs[3].suppressed_by);
    ck_assert_ptr_null(recs[5].suppressed_by);
    ASSERT_TOTALS(lr.suppressed, 10111, 11);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 1000, 4);
    ASSERT_TOTALS(lr.kind[GL_LEAK_REACHABLE], 0, 0);
    ASSERT_TOTALS(lr.kind[GL_LEAK_POSSIBLE], 100000, 6);
}
END_TEST

START_TEST(test_no_stack)
{
    /* A record without a stack: only an entry of "..." lines matches it. */
    load("{\n any-frame\n gpuleak:Leak\n obj:*\n}\n"
         "{\n anything\n gpuleak:Leak\n match-leak-kinds: indirect\n ...\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_NONE, 5, 1);
    struct gl_loss_record *b = add(GL_LEAK_INDIRECT, STACK_NONE, 7, 1);
    suppress();
    ck_assert_ptr_null(a->suppressed_by);
    ck_assert_ptr_eq(b->suppressed_by, &set.v[1]);
    /* No frames service: every stack is empty. */
    teardown();
    setup();
    load("{\n anything\n gpuleak:Leak\n ...\n}\n{\n a-frame\n gpuleak:Leak\n fun:*\n}\n");
    a = add(GL_LEAK_DEFINITE, STACK_MALLOC, 5, 1);
    gl_suppress_records(&lr, &set, NULL, NULL);
    ck_assert_ptr_eq(a->suppressed_by, &set.v[0]);
    ASSERT_COUNTS(&set.v[1], 0, 0, 0);
}
END_TEST

START_TEST(test_no_entries_no_change)
{
    add(GL_LEAK_DEFINITE, STACK_MALLOC, 1000, 4);
    add(GL_LEAK_CACHED, STACK_POOL, 300, 1);
    add(GL_LEAK_POSSIBLE, STACK_OTHER, 50, 2);
    struct gl_leak_result before;
    memcpy(&before, &lr, sizeof lr);
    struct gl_loss_record recs_before[8];
    memcpy(recs_before, recs, sizeof recs);
    suppress(); /* an empty set */
    ck_assert(memcmp(&before, &lr, sizeof lr) == 0);
    ck_assert(memcmp(recs_before, recs, sizeof recs) == 0);
    gl_suppress_records(&lr, NULL, fake_frames, &calls); /* no set */
    ck_assert(memcmp(&before, &lr, sizeof lr) == 0);
    ck_assert(memcmp(recs_before, recs, sizeof recs) == 0);
    /* Only other tools' entries: the same. */
    load("{\n m\n Memcheck:Leak\n fun:cudaMalloc\n}\n");
    ck_assert_uint_eq(set.other_tools, 1);
    suppress();
    ck_assert(memcmp(&before, &lr, sizeof lr) == 0);
    ck_assert(memcmp(recs_before, recs, sizeof recs) == 0);
    /* Entries that match nothing: the same. */
    load("{\n nothing\n gpuleak:Leak\n fun:no_such_function\n}\n"
         "{\n nothing-cached\n gpuleak:Cached\n obj:/no/such/object\n}\n");
    suppress();
    ck_assert(memcmp(&before, &lr, sizeof lr) == 0);
    ck_assert(memcmp(recs_before, recs, sizeof recs) == 0);
    ck_assert_uint_eq(set.v[0].count + set.v[1].count, 0);
}
END_TEST

START_TEST(test_matches_mangled_and_src)
{
    load("{\n by-mangled\n gpuleak:Leak\n fun:cudaMalloc\n fun:_Z11make_bufferm\n}\n"
         "{\n by-src\n gpuleak:Cached\n ...\n src:pool.cc:120\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_MALLOC, 1, 1);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_POOL, 2, 1);
    suppress();
    ck_assert_ptr_eq(a->suppressed_by, &set.v[0]);
    ck_assert_ptr_eq(b->cached_by, &set.v[1]);
    ck_assert_ptr_null(b->suppressed_by);
}
END_TEST

START_TEST(test_python_frames_cached_by_src)
{
    /* src: names a Python frame by its file's base name and line. */
    load("{\n py-src\n gpuleak:Cached\n ...\n src:train.py:42\n fun:<module>\n}\n"
         "{\n py-other-line\n gpuleak:Cached\n ...\n src:train.py:43\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_PYTHON, 4096, 1);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_MALLOC, 100, 1);
    struct gl_loss_record *c = add(GL_LEAK_REACHABLE, STACK_PYTHON, 512, 2);
    suppress();
    ck_assert_int_eq(a->kind, GL_LEAK_CACHED);
    ck_assert_ptr_eq(a->cached_by, &set.v[0]);
    ck_assert_int_eq(c->kind, GL_LEAK_CACHED);
    ck_assert_ptr_eq(c->cached_by, &set.v[0]);
    ck_assert_int_eq(b->kind, GL_LEAK_DEFINITE);
    ck_assert_ptr_null(b->cached_by);
    ASSERT_TOTALS(lr.kind[GL_LEAK_CACHED], 4608, 3);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 100, 1);
    ASSERT_COUNTS(&set.v[0], 2, 4608, 3);
    ASSERT_COUNTS(&set.v[1], 0, 0, 0);
}
END_TEST

START_TEST(test_python_frames_leak_entry)
{
    /* A Leak entry naming a Python frame suppresses the record whose stack
     * holds it; the first frame must still match the first line. */
    load("{\n py-first\n gpuleak:Leak\n fun:train_step\n}\n"
         "{\n py\n gpuleak:Leak\n fun:cudaMalloc\n ...\n fun:train_step\n}\n");
    struct gl_loss_record *a = add(GL_LEAK_DEFINITE, STACK_PYTHON, 4096, 1);
    struct gl_loss_record *b = add(GL_LEAK_DEFINITE, STACK_MALLOC, 100, 1);
    suppress();
    ck_assert_ptr_eq(a->suppressed_by, &set.v[1]);
    ck_assert_ptr_null(b->suppressed_by);
    ASSERT_TOTALS(lr.kind[GL_LEAK_DEFINITE], 100, 1);
    ASSERT_TOTALS(lr.suppressed, 4096, 1);
    ASSERT_COUNTS(&set.v[0], 0, 0, 0);
    ASSERT_COUNTS(&set.v[1], 1, 4096, 1);
}
END_TEST

/* ---- gl_suppress_held_blocks: what the scan need not search for ---- */

static size_t held_of(const uint32_t *stacks, size_t n, uint8_t *held)
{
    struct gl_block_info b[8];
    memset(b, 0, sizeof b);
    for (size_t i = 0; i < n; i++)
        b[i].stack = stacks[i];
    memset(held, 0xee, n); /* every byte written */
    return gl_suppress_held_blocks(&set, b, n, fake_frames, &calls, held);
}

START_TEST(test_held_by_cached_entry)
{
    load("{\n pool\n gpuleak:Cached\n fun:cudaMallocAsync\n fun:Pool::*\n}\n"
         "{\n hide\n gpuleak:Leak\n fun:cudaMalloc\n}\n");
    uint32_t st[] = {STACK_POOL, STACK_MALLOC, STACK_POOL, STACK_NONE, STACK_POOL};
    uint8_t held[5];
    ck_assert_uint_eq(held_of(st, 5, held), 3);
    uint8_t want[] = {1, 0, 1, 0, 1};
    ck_assert_mem_eq(held, want, 5);
    /* Each stack symbolized once, however many blocks share it. */
    ck_assert_uint_eq(calls, 3);
    /* Leak entries hold nothing: a suppressed leak is still searched for. */
    ck_assert_uint_eq(set.v[1].count, 0);
}
END_TEST

START_TEST(test_held_needs_every_kind)
{
    /* The first Cached entry the stack matches is restricted by kind: the
     * scan's verdict decides, so the block is searched for, even though a
     * later entry would hold it whatever the kind. */
    load("{\n only-reachable\n gpuleak:Cached\n match-leak-kinds: reachable\n"
         " fun:cudaMallocAsync\n}\n"
         "{\n pool\n gpuleak:Cached\n fun:cudaMallocAsync\n fun:Pool::*\n}\n"
         "{\n any-malloc\n gpuleak:Cached\n fun:cudaMalloc\n}\n");
    uint32_t st[] = {STACK_POOL, STACK_MALLOC, STACK_OTHER};
    uint8_t held[3];
    ck_assert_uint_eq(held_of(st, 3, held), 1);
    uint8_t want[] = {0, 1, 0};
    ck_assert_mem_eq(held, want, 3);
}
END_TEST

START_TEST(test_held_none_without_cached_entries)
{
    load("{\n hide\n gpuleak:Leak\n ...\n}\n");
    uint32_t st[] = {STACK_POOL, STACK_MALLOC};
    uint8_t held[2];
    ck_assert_uint_eq(held_of(st, 2, held), 0);
    uint8_t want[] = {0, 0};
    ck_assert_mem_eq(held, want, 2);
    ck_assert_uint_eq(calls, 0); /* nothing symbolized for nothing */
    ck_assert_uint_eq(gl_suppress_held_blocks(NULL, NULL, 0, fake_frames, &calls, held), 0);
}
END_TEST

START_TEST(test_held_agrees_with_records)
{
    /* Whatever kind the scan would have given a held block, the records'
     * pass calls it cached: holding it before the scan changes no verdict. */
    load("{\n pool\n gpuleak:Cached\n fun:cudaMallocAsync\n fun:Pool::*\n}\n");
    uint32_t st[] = {STACK_POOL};
    uint8_t held[1];
    ck_assert_uint_eq(held_of(st, 1, held), 1);
    for (int k = GL_LEAK_DEFINITE; k <= GL_LEAK_REACHABLE; k++) {
        memset(&lr, 0, sizeof lr);
        memset(recs, 0, sizeof recs);
        lr.records = recs;
        struct gl_loss_record *r = add((enum gl_leak_kind)k, STACK_POOL, 64, 1);
        suppress();
        ck_assert_int_eq(r->kind, GL_LEAK_CACHED);
    }
}
END_TEST

static Suite *suppress_suite(void)
{
    Suite *s = suite_create("suppress");
    TCase *tc = tcase_create("records");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_leak_entry_suppresses);
    tcase_add_test(tc, test_cached_entry_reclassifies);
    tcase_add_test(tc, test_cached_record_stays);
    tcase_add_test(tc, test_cached_then_leak);
    tcase_add_test(tc, test_cached_hides_from_definite_leak_entry);
    tcase_add_test(tc, test_first_match_wins);
    tcase_add_test(tc, test_counters_per_entry);
    tcase_add_test(tc, test_no_stack);
    tcase_add_test(tc, test_no_entries_no_change);
    tcase_add_test(tc, test_matches_mangled_and_src);
    tcase_add_test(tc, test_python_frames_cached_by_src);
    tcase_add_test(tc, test_python_frames_leak_entry);
    tcase_add_test(tc, test_held_by_cached_entry);
    tcase_add_test(tc, test_held_needs_every_kind);
    tcase_add_test(tc, test_held_none_without_cached_entries);
    tcase_add_test(tc, test_held_agrees_with_records);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suppress_suite)
