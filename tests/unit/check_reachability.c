/* SPDX-License-Identifier: MIT */
/* lib/check/reachability.h in a live process, without a GPU: the allocator
 * hooks are linked into this program (as when gpuleak is preloaded), device
 * blocks are made as events at addresses nothing maps, and the program keeps
 * their addresses in the places a real one would: globals, heap chunks,
 * chains of chunks, its own mappings, another thread's stack and TLS, its own
 * TLS.  The leak run then classifies each block.  Memory the allocator hooks do
 * not see, just above a thread's stack in the same mapping (as the kernel merges
 * gpuleak's own tables with a stack below them), is not stack. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"
#include "tracker_util.h"
#include "check/checkpoints.h"
#include "check/reachability.h"
#include "common/util.h"
#include "heap/heap.h"
#include "check/leak_run.h"
#include "check/run_suppressions.h"
#include "runtime.h"
#include "event/api.h"
#include "track/tracker.h"

#define DEV(i) (0x7e0000000000ULL + (uint64_t)(i)*0x200000ULL)
#define SIZE 4096

static void alloc(uint64_t addr)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_DEVICE,
                          .api = GL_API_cuMemAlloc_v2,
                          .key = addr,
                          .size = SIZE};
    gl_dispatch(&ev);
}

/* Places the program keeps pointers (volatile: the compiler must store them). */
static volatile uint64_t g_direct;
static volatile uint64_t *volatile g_struct;
static volatile uint64_t *volatile g_chain;
static volatile uint64_t g_interior;
static volatile uint64_t *volatile g_freed;
static volatile uint64_t *volatile g_mapping;
static __thread volatile uint64_t t_main;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase;
static __thread volatile uint64_t t_other;

static void *holder(void *arg)
{
    (void)arg;
    volatile uint64_t on_stack = DEV(6);
    t_other = DEV(7);
    pthread_mutex_lock(&mu);
    phase |= 1;
    pthread_cond_broadcast(&cv);
    while ((phase & 3) != 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return (void *)(uintptr_t)on_stack;
}

/* A thread whose stack is the bottom of a mapping made with the system call (as
 * gpuleak's tool memory is: the hooks do not see it); the page above the stack
 * holds DEV(11). */
#define TAIL_STACK (256 * 1024)
static void *tail_mapping;

static void *tail_holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    phase |= 4;
    pthread_cond_broadcast(&cv);
    while (!(phase & 8))
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static pthread_t start_tail_holder(void)
{
    long r = syscall(SYS_mmap, NULL, TAIL_STACK + 4096, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(r != -1);
    tail_mapping = (void *)r;
    ((volatile uint64_t *)((char *)tail_mapping + TAIL_STACK))[3] = DEV(11);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    ck_assert_int_eq(pthread_attr_setstack(&attr, tail_mapping, TAIL_STACK), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, &attr, tail_holder, NULL), 0);
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&mu);
    while (!(phase & 4))
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return t;
}

/* A chunk that holds DEV(10) but that nothing holds: made in a function of its
 * own, so that no register or frame of the test keeps its address (a
 * conservative scan would take that for a reference, as LeakSanitizer does).
 * The chunk is lost, so DEV(10) is indirectly lost (Valgrind's rule: only a
 * lost block points to it), held through a 96-byte chunk made here. */
static __attribute__((noinline)) void make_lonely(void)
{
    uint64_t *l = malloc(96); /* not 64: it would take the freed chunk g_freed still names */
    l[0] = DEV(10);
    __asm__ volatile("" ::: "memory");
}

/* A stdio buffer made in a freed chunk: the chunk held DEV(12)'s interior in
 * every word, and the buffer, past the one character written, still does.
 * The FILE is kept (in a global), so its buffer is reached. */
static FILE *volatile g_file;

static __attribute__((noinline)) void make_stdio_buffer(void)
{
    FILE *fp = fopen("/dev/null", "w");
    ck_assert_ptr_nonnull(fp);
    /* glibc's buffer is st_blksize bytes, at most BUFSIZ, allocated at the
     * first write (_IO_file_doallocate): a chunk of that size, freed just
     * before, is what it gets. */
    struct stat st;
    ck_assert_int_eq(fstat(fileno(fp), &st), 0);
    size_t size = st.st_blksize > 0 && st.st_blksize < BUFSIZ ? (size_t)st.st_blksize : BUFSIZ;
    uint64_t *old = malloc(size);
    for (size_t i = 0; i < size / sizeof *old; i++)
        old[i] = DEV(12) + 256;
    free(old);
    fputc('x', fp);
    ck_assert_msg(fp->_IO_buf_base == (char *)old, "the buffer is not the freed chunk: %p, %p",
                  (void *)fp->_IO_buf_base, (void *)old);
    g_file = fp;
    __asm__ volatile("" ::: "memory");
}

static bool flags_of(const struct gl_leak_run *run, uint64_t key, uint8_t *flags)
{
    for (size_t i = 0; i < run->n; i++)
        if (run->blocks[i].key == key) {
            *flags = run->blocks[i].flags;
            return true;
        }
    return false;
}

static const char *kind_of(const struct gl_leak_run *run, uint64_t key)
{
    uint8_t f = 0;
    if (!flags_of(run, key, &f))
        return "missing";
    if (f & GL_BLK_REACH_START)
        return "reachable";
    if (f & GL_BLK_REACH_INTERIOR)
        return "possible";
    if (f & GL_BLK_INDIRECT)
        return "indirect";
    return "definite";
}

START_TEST(test_classification_in_a_live_process)
{
    ck_assert(gl_heap_active());
    gl_tracker_init();
    tu_pipeline_reset();
    gl_checkpoints_reset();
    gl_leak_run_close();
    gl_run_suppressions_unload();
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime.opt.default_suppressions = false;
    gl_runtime.pid = getpid();
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    for (int i = 0; i <= 12; i++)
        alloc(DEV(i));

    g_direct = DEV(0);
    uint64_t *s = malloc(64);
    s[1] = DEV(1);
    g_struct = s;
    uint64_t *a = malloc(48), *b = malloc(48);
    a[2] = (uint64_t)(uintptr_t)b + 8; /* interior pointers enter chunks too */
    b[3] = DEV(2);
    g_chain = a;
    g_interior = DEV(3) + 256;
    /* DEV(4): dropped. */
    uint64_t *f = malloc(64);
    f[0] = DEV(5);
    g_freed = f;
    free(f); /* a stale copy in freed memory is not a reference */
    uint64_t *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[5] = DEV(9);
    g_mapping = m;
    t_main = DEV(8);
    make_lonely();
    make_stdio_buffer();

    pthread_t tail = start_tail_holder();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, holder, NULL), 0);
    pthread_mutex_lock(&mu);
    while ((phase & 3) != 1)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);

    gl_leak_run_lock();
    struct gl_leak_run run;
    ck_assert_int_eq(gl_leak_run(&run, 0, NULL), 0);
    gl_leak_run_unlock();

    pthread_mutex_lock(&mu);
    phase = 2 | 4 | 8;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    void *ret;
    pthread_join(t, &ret);
    pthread_join(tail, NULL);
    syscall(SYS_munmap, tail_mapping, TAIL_STACK + 4096);

    ck_assert_msg(run.reach.available, "%s", run.reach.why_not ? run.reach.why_not : "?");
    ck_assert_uint_ge(run.reach.threads_stopped, 2);
    static const char *const want[] = {
        "reachable", "reachable", "reachable", "possible", "definite", "definite", "reachable",
        "reachable", "reachable", "reachable", "indirect", "definite", "definite"};
    for (int i = 0; i <= 12; i++)
        ck_assert_msg(strcmp(kind_of(&run, DEV(i)), want[i]) == 0, "block %d: %s, expected %s", i,
                      kind_of(&run, DEV(i)), want[i]);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_REACHABLE].blocks, 7);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_POSSIBLE].blocks, 1);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_DEFINITE].blocks, 4);
    ck_assert_uint_eq(run.leaks.kind[GL_LEAK_INDIRECT].blocks, 1);
    /* The host block that holds it, for the report: its size and its maker. */
    const struct gl_reach_holder *h = gl_reachability_holder(&run.reach, DEV(10));
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_ge(h->bytes, 96);
    ck_assert_msg(h->caller > (uintptr_t)make_lonely && h->caller < (uintptr_t)make_lonely + 256,
                  "held by a chunk allocated at %#lx, not in make_lonely (%p)",
                  (unsigned long)h->caller, (void *)make_lonely);
    ck_assert_ptr_null(gl_reachability_holder(&run.reach, DEV(4))); /* dropped: no holder */
    ck_assert_uint_gt(run.reach.root_bytes, 0);
    gl_leak_run_free(&run);
    free(s);
    free(a);
    free(b);
    munmap(m, 1 << 16);
    fclose(g_file);
    atomic_store(&gl_runtime.state, GL_RT_IDLE);
}
END_TEST

/* The words of a caller context with no register behind them (half of regs on
 * x86-64) are scanned too: they must not hold what the stack held before -
 * a stale block address there kept a lost block reachable. */
static volatile uint64_t stale = 0x7e00deadbee00000ULL; /* read where used: in no register */

static __attribute__((noinline)) void dirty_stack(void)
{
    volatile uint64_t junk[512];
    for (size_t i = 0; i < GL_ARRAY_SIZE(junk); i++)
        junk[i] = stale;
}

static __attribute__((noinline)) void take_context(struct gl_caller_context *out)
{
    struct gl_caller_context cc;
    GL_CALLER_CONTEXT(&cc);
    memcpy(out, &cc, sizeof cc);
}

START_TEST(test_caller_context_holds_no_stale_words)
{
    struct gl_caller_context cc;
    dirty_stack();
    take_context(&cc);
    for (size_t i = 0; i < GL_ARRAY_SIZE(cc.regs); i++)
        ck_assert_msg(cc.regs[i] != stale, "regs[%zu] holds the stack's stale contents", i);
}
END_TEST

/* Blocks a caching allocator's rule holds (suppress.h) are not searched for:
 * marked referenced, counted; with nothing else to search for, no thread is
 * stopped and nothing is read. */
START_TEST(test_held_blocks_not_searched)
{
    ck_assert(gl_heap_active());
    gl_tracker_init();
    struct gl_block_info b[3];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 3; i++)
        b[i] = (struct gl_block_info){
            .key = DEV(20 + i), .size = SIZE, .kind = GL_MEM_DEVICE, .device = 0};
    struct gl_caller_context cc;
    GL_CALLER_CONTEXT(&cc);
    struct gl_reachability r;

    /* One searched for (nothing points to it), two held. */
    const uint8_t some[3] = {0, 1, 1};
    gl_reachability(b, 3, some, &cc, NULL, NULL, &r);
    ck_assert_msg(r.available, "%s", r.why_not ? r.why_not : "?");
    ck_assert_uint_eq(r.held_by_rule, 2);
    ck_assert_uint_eq(r.searched, 1);
    ck_assert_uint_gt(r.root_bytes, 0); /* a scan ran, for DEV(20) */
    ck_assert_uint_eq(b[0].flags & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR), 0);
    ck_assert_uint_eq(b[1].flags & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR),
                      GL_BLK_REACH_START);
    ck_assert_uint_eq(b[2].flags & (GL_BLK_REACH_START | GL_BLK_REACH_INTERIOR),
                      GL_BLK_REACH_START);
    gl_reachability_free(&r);

    /* All held: the verdict without a scan. */
    for (int i = 0; i < 3; i++)
        b[i].flags = 0;
    const uint8_t all[3] = {1, 1, 1};
    gl_reachability(b, 3, all, &cc, NULL, NULL, &r);
    ck_assert(r.available);
    ck_assert_uint_eq(r.held_by_rule, 3);
    ck_assert_uint_eq(r.threads_stopped, 0);
    ck_assert_uint_eq(r.root_bytes + r.object_bytes, 0);
    ck_assert(r.seconds == 0);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(b[i].flags, GL_BLK_REACH_START);
    gl_reachability_free(&r);

    /* Ignored blocks and a custom pool's own are never searched for, held or
     * not: a rule's hold marks and counts neither (a pool marked referenced
     * would pass that on to every sub-allocation under --scan-device). */
    struct gl_block_info c[3] = {b[0], b[1], b[2]};
    for (int i = 0; i < 3; i++)
        c[i].flags = 0;
    c[1].flags = GL_BLK_IGNORED;
    c[2].flags = GL_BLK_POOL;
    gl_reachability(c, 3, all, &cc, NULL, NULL, &r);
    ck_assert(r.available);
    ck_assert_uint_eq(r.held_by_rule, 1);
    ck_assert_uint_eq(r.searched, 0);
    ck_assert_uint_eq(c[0].flags, GL_BLK_REACH_START);
    ck_assert_uint_eq(c[1].flags, GL_BLK_IGNORED);
    ck_assert_uint_eq(c[2].flags, GL_BLK_POOL);
    gl_reachability_free(&r);

    /* None held (NULL): every block searched for, as before. */
    for (int i = 0; i < 3; i++)
        b[i].flags = 0;
    gl_reachability(b, 3, NULL, &cc, NULL, NULL, &r);
    ck_assert(r.available);
    ck_assert_uint_eq(r.held_by_rule, 0);
    ck_assert_uint_eq(r.searched, 3);
    ck_assert_uint_gt(r.root_bytes, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(b[i].flags, 0);
    gl_reachability_free(&r);
}
END_TEST

static Suite *reachability_suite(void)
{
    Suite *s = suite_create("reachability");
    TCase *tc = tcase_create("live");
    tcase_add_test(tc, test_classification_in_a_live_process);
    tcase_add_test(tc, test_caller_context_holds_no_stale_words);
    tcase_add_test(tc, test_held_blocks_not_searched);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(reachability_suite)
