/* SPDX-License-Identifier: MIT */
/* lib/track/history.h: the allocation history behind --memory-viz, fed
 * through the dispatcher as the runtime feeds it. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "tracker_util.h"
#include "base/tool.h"
#include "event/api.h"
#include "track/history.h"

static void setup(void)
{
    gl_history_configure(8);
    tu_pipeline_reset();
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
}

static void teardown(void)
{
    gl_history_configure(0);
    tu_pipeline_restart();
}

static void alloc(uint64_t key, uint64_t size, enum gl_mem_kind kind, int device, uint32_t stack)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = (uint8_t)kind,
                          .key = key,
                          .size = size,
                          .device = (int16_t)device,
                          .stack = stack,
                          .tid = 7,
                          .ctx = 0x10};
    gl_dispatch(&ev);
}

static void release(uint64_t key)
{
    struct gl_event ev = {.type = GL_EV_FREE, .key = key, .tid = 7, .ctx = 0x10};
    gl_dispatch(&ev);
}

static size_t window(struct gl_history_entry **e, size_t *bytes, uint64_t *dropped)
{
    return gl_history_read(e, bytes, dropped);
}

START_TEST(test_off_keeps_nothing)
{
    gl_history_configure(0);
    tu_pipeline_restart();
    ck_assert(!gl_dispatch_attached("history"));
    alloc(0x1000, 4096, GL_MEM_DEVICE, 0, 3);
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    ck_assert_uint_eq(window(&e, &bytes, &dropped), 0);
    ck_assert_ptr_null(e);
}
END_TEST

/* Device memory in order, with what the viewer needs; host memory and custom
 * pools' sub-allocations are not device allocations of their own. */
START_TEST(test_records_device_memory)
{
    ck_assert(gl_dispatch_attached("history"));
    alloc(0x7f0000000000, 1 << 20, GL_MEM_DEVICE, 0, 3);
    alloc(0x7f0000200000, 4096, GL_MEM_HOST_PINNED, -1, 4);
    struct gl_event a = {.type = GL_EV_ALLOC,
                         .kind = GL_MEM_ASYNC,
                         .key = 0x7f0000400000,
                         .size = 512,
                         .device = 1,
                         .stack = 5,
                         .aux = 0xabc,
                         .ctx = 0x10};
    gl_dispatch(&a);
    release(0x7f0000000000);
    release(0x7f0000200000);
    struct gl_event oom = {.type = GL_EV_ALLOC_FAILED,
                           .kind = GL_MEM_DEVICE,
                           .size = 1ULL << 40,
                           .device = 0,
                           .stack = 6};
    gl_dispatch(&oom);

    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(dropped, 0);
    ck_assert_int_eq(e[0].action, GL_HIST_ALLOC);
    ck_assert_uint_eq(e[0].key, 0x7f0000000000);
    ck_assert_uint_eq(e[0].size, 1 << 20);
    ck_assert_uint_eq(e[0].stack, 3);
    ck_assert_int_eq(e[0].device, 0);
    ck_assert_uint_eq(e[0].seq, 1);
    ck_assert(e[0].time_ns != 0);
    ck_assert_int_eq(e[1].action, GL_HIST_ALLOC);
    ck_assert_uint_eq(e[1].stream, 0xabc);
    ck_assert_int_eq(e[1].device, 1);
    /* A free says what it freed: size, stack and number of the allocation. */
    ck_assert_int_eq(e[2].action, GL_HIST_FREE);
    ck_assert_uint_eq(e[2].size, 1 << 20);
    ck_assert_uint_eq(e[2].stack, 3);
    ck_assert_uint_eq(e[2].seq, 1);
    ck_assert(e[2].time_ns >= e[0].time_ns);
    ck_assert_int_eq(e[3].action, GL_HIST_OOM);
    ck_assert_uint_eq(e[3].size, 1ULL << 40);
    ck_assert_uint_eq(e[3].stack, 6);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* The last N: older events are counted, not kept. */
START_TEST(test_ring_keeps_the_last)
{
    for (uint64_t i = 0; i < 20; i++)
        alloc(0x7f0000000000 + (i << 20), 100 + i, GL_MEM_DEVICE, 0, 3);
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n, 8);
    ck_assert_uint_eq(dropped, 12);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(e[i].size, 100 + 12 + i);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* A context destroyed takes its blocks: one free each. */
START_TEST(test_context_sweep_frees)
{
    alloc(0x7f0000000000, 4096, GL_MEM_DEVICE, 0, 3);
    alloc(0x7f0000100000, 8192, GL_MEM_DEVICE, 0, 3);
    struct gl_event d = {.type = GL_EV_CTX_DESTROY, .ctx = 0x10};
    gl_dispatch(&d);
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(e[2].action, GL_HIST_FREE);
    ck_assert_int_eq(e[3].action, GL_HIST_FREE);
    ck_assert_uint_eq(e[2].size + e[3].size, 4096 + 8192);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* Threads fill chunks of their own; read back, the entries are in time
 * order, every free after its allocation, nothing lost. */
#define THREAD_PAIRS 2000
/* n pairs at addresses tag << 32 + i * 4096, each freed at once. */
static void pairs_n(void *tag, uint64_t n)
{
    uint64_t base = (uint64_t)(uintptr_t)tag << 32;
    for (uint64_t i = 0; i < n; i++) {
        alloc(base + (i << 12), 4096, GL_MEM_DEVICE, 0, 3);
        release(base + (i << 12));
    }
}

static void *pairs(void *tag)
{
    pairs_n(tag, THREAD_PAIRS);
    return NULL;
}

/* Four threads making THREAD_PAIRS pairs each, tagged tag, tag + 1...; the
 * first alone for stagger_ns before the others start (0: all at once).
 * Returns the window, every event in it and none dropped. */
static size_t four_threads(uintptr_t tag, long stagger_ns, struct gl_history_entry **e,
                           size_t *bytes)
{
    gl_history_configure(1 << 16);
    tu_pipeline_restart();
    pthread_t th[4];
    pthread_create(&th[0], NULL, pairs, (void *)tag);
    if (stagger_ns) {
        struct timespec pause = {0, stagger_ns};
        nanosleep(&pause, NULL);
    }
    for (uintptr_t i = 1; i < 4; i++)
        pthread_create(&th[i], NULL, pairs, (void *)(tag + i));
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    uint64_t dropped;
    size_t n = window(e, bytes, &dropped);
    ck_assert_uint_eq(n, 4 * 2 * THREAD_PAIRS);
    ck_assert_uint_eq(dropped, 0);
    return n;
}

START_TEST(test_threads_in_chunks)
{
    struct gl_history_entry *e;
    size_t bytes;
    size_t n = four_threads(0x7f00, 0, &e, &bytes);
    uint64_t live = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            ck_assert_uint_ge(e[i].time_ns, e[i - 1].time_ns);
        live = e[i].action == GL_HIST_ALLOC ? live + 4096 : live - 4096;
        top = live > top ? live : top;
    }
    ck_assert_uint_eq(live, 0);
    ck_assert_uint_le(top, 4 * 4096);
    gl_tool_unmap(e, bytes);
    /* Kept to 4096: the last ones, the others counted. */
    gl_history_configure(4096);
    tu_pipeline_restart();
    for (uintptr_t i = 0; i < 3; i++)
        pairs((void *)(0x7e00 + i));
    uint64_t dropped;
    n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n + dropped, 3 * 2 * THREAD_PAIRS);
    ck_assert_uint_ge(n, 4096 - 64);
    ck_assert_uint_le(n, 4096);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* Pairs whose block's size says its address: a window's entry whose size
 * and key disagree mixes two events' fields. */
static uint64_t size_for(uint64_t key) { return 4096 + (key >> 32 & 0xf) * 512 + (key >> 12 & 7); }

static _Atomic int sized_running;

static void *sized_pairs(void *tag)
{
    uint64_t base = (uint64_t)(uintptr_t)tag << 32;
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t key = base + (i << 12);
        alloc(key, size_for(key), GL_MEM_DEVICE, 0, 3);
        release(key);
    }
    atomic_fetch_sub(&sized_running, 1);
    return NULL;
}

static void check_sizes(const struct gl_history_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(e[i].size == size_for(e[i].key),
                      "entry %zu: key 0x%llx with size %llu, another event's", i,
                      (unsigned long long)e[i].key, (unsigned long long)e[i].size);
}

/* A ring of two entries and four threads: each slot is written by several
 * threads at once, all the time, and read while they write.  A writer
 * claims its slot first (or gives its entry up, counted as dropped), so
 * that no entry read is two writers' fields mixed. */
START_TEST(test_tiny_ring_no_mixed_entries)
{
    gl_history_configure(2);
    tu_pipeline_restart();
    atomic_store(&sized_running, 4);
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, sized_pairs, (void *)(0x7a00 + i));
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    while (atomic_load(&sized_running) > 0) {
        size_t n = window(&e, &bytes, &dropped);
        check_sizes(e, n);
        if (bytes)
            gl_tool_unmap(e, bytes);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_le(n, 2);
    ck_assert_uint_eq(n + dropped, 4 * 2 * 20000);
    check_sizes(e, n);
    gl_tool_unmap(e, bytes);
}
END_TEST

static void *pairs_500(void *tag)
{
    pairs_n(tag, 500);
    return NULL;
}

/* One thread alone: its positions order the window, the times are the coarse
 * clock's (several events share a tick).  Once a second thread records,
 * the counter orders everything after; the first thread's older entries
 * stay first. */
START_TEST(test_clock_switch)
{
    gl_history_configure(1 << 16);
    tu_pipeline_restart();
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    pairs_500((void *)0x7a00);
    pthread_t th;
    pthread_create(&th, NULL, pairs_500, (void *)0x7b00);
    pthread_join(th, NULL);
    pairs_500((void *)0x7c00);
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n, 3000);
    ck_assert_uint_eq(dropped, 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t base = i < 1000 ? 0x7a00 : i < 2000 ? 0x7b00 : 0x7c00;
        size_t j = i % 1000;
        ck_assert_uint_eq(e[i].key, (base << 32) + ((j / 2) << 12));
        ck_assert_int_eq(e[i].action, j % 2 ? GL_HIST_FREE : GL_HIST_ALLOC);
        if (i)
            ck_assert_uint_ge(e[i].time_ns, e[i - 1].time_ns);
    }
    /* Unix times, from the run's start on. */
    uint64_t start = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
    ck_assert_uint_ge(e[0].time_ns + 20000000u, start);
    ck_assert_uint_le(e[n - 1].time_ns, start + 60000000000ull);
    size_t repeats = 0;
    for (size_t i = 1; i < 1000; i++)
        repeats += e[i].time_ns == e[i - 1].time_ns;
    ck_assert_uint_gt(repeats, 0);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* Threads recording at once across the switch: one starts alone, three
 * join while it records.  Read back, every event is there once, each
 * thread's own events in the order it made them (its allocation before its
 * free, its pairs in turn), and times never go back. */
START_TEST(test_clock_switch_while_recording)
{
    struct gl_history_entry *e;
    size_t bytes;
    size_t n = four_threads(0x7100, 200000, &e, &bytes);
    uint64_t next[4] = {0};
    for (size_t i = 0; i < n; i++) {
        unsigned t = (unsigned)((e[i].key >> 32) - 0x7100);
        ck_assert_uint_lt(t, 4);
        uint64_t j = (e[i].key & 0xffffffffu) >> 12;
        bool is_free = e[i].action == GL_HIST_FREE;
        ck_assert_uint_eq(next[t], 2 * j + is_free);
        next[t]++;
        if (i)
            ck_assert_uint_ge(e[i].time_ns, e[i - 1].time_ns);
    }
    gl_tool_unmap(e, bytes);
}
END_TEST

/* A thread's chunks run across the ring's end many times (its slots are
 * counted on, not divided out, per event): every slot of the window is found
 * where its position says, the latest ones kept. */
START_TEST(test_chunks_across_the_end)
{
    gl_history_configure(1 << 16);
    tu_pipeline_restart();
    const uint64_t n_pairs = 3 * (1 << 16) / 2 + 777; /* 3 laps and a bit, in events */
    for (uint64_t i = 0; i < n_pairs; i++) {
        alloc(0x7d0000000000ull + (i << 12), 4096, GL_MEM_DEVICE, 0, 3);
        release(0x7d0000000000ull + (i << 12));
    }
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n + dropped, 2 * n_pairs);
    /* Holes: each time the thread was held up past CHUNK_TICKS (about a
     * millisecond: a loaded machine), the rest of its chunk, up to 63
     * positions, went unused; a few hundred such stalls at most. */
    ck_assert_uint_ge(n, (1 << 16) - 64 * 256);
    ck_assert_uint_le(n, 1 << 16);
    /* The newest pair is the last one made, and the window is in order. */
    ck_assert_uint_eq(e[n - 1].key, 0x7d0000000000ull + ((n_pairs - 1) << 12));
    for (size_t i = 1; i < n; i++)
        ck_assert_uint_ge(e[i].time_ns, e[i - 1].time_ns);
    gl_tool_unmap(e, bytes);
}
END_TEST

static struct gl_history_entry ent(uint8_t action, uint64_t key, uint64_t seq, uint64_t t)
{
    return (struct gl_history_entry){
        .action = action, .key = key, .seq = seq, .size = 64, .time_ns = t};
}

/* A free whose observer ran after another thread got its address again. */
START_TEST(test_order_moves_late_free)
{
    struct gl_history_entry in[] = {
        ent(GL_HIST_ALLOC, 0xa000, 1, 10), ent(GL_HIST_ALLOC, 0xa000, 2, 20),
        ent(GL_HIST_FREE, 0xa000, 1, 25),  ent(GL_HIST_FREE, 0xb000, 9, 30),
        ent(GL_HIST_FREE, 0xa000, 2, 40),
    };
    struct gl_history_entry out[5];
    size_t n = gl_history_order(in, 5, out);
    ck_assert_uint_eq(n, 5);
    uint64_t seqs[5] = {1, 1, 2, 9, 2};
    uint8_t acts[5] = {GL_HIST_ALLOC, GL_HIST_FREE, GL_HIST_ALLOC, GL_HIST_FREE, GL_HIST_FREE};
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(out[i].seq, seqs[i]);
        ck_assert_int_eq(out[i].action, acts[i]);
    }
    ck_assert_uint_eq(out[1].time_ns, 20); /* at the reuse's moment */
}
END_TEST

/* In order already: unchanged, including frees of blocks older than the window. */
START_TEST(test_order_keeps_good_order)
{
    struct gl_history_entry in[] = {
        ent(GL_HIST_FREE, 0xc000, 3, 5),   ent(GL_HIST_ALLOC, 0xa000, 4, 10),
        ent(GL_HIST_FREE, 0xa000, 4, 20),  ent(GL_HIST_ALLOC, 0xa000, 5, 30),
        ent(GL_HIST_ALLOC, 0xc000, 6, 40),
    };
    struct gl_history_entry out[5];
    ck_assert_uint_eq(gl_history_order(in, 5, out), 5);
    ck_assert_mem_eq(in, out, sizeof in);
}
END_TEST

/* Each device's running sum, and the allocation that took it highest. */
START_TEST(test_peaks)
{
    struct gl_history_entry in[] = {
        ent(GL_HIST_ALLOC, 0xa000, 1, 10), ent(GL_HIST_ALLOC, 0xb000, 2, 20),
        ent(GL_HIST_FREE, 0xa000, 1, 30),  ent(GL_HIST_ALLOC, 0xc000, 3, 40),
        ent(GL_HIST_ALLOC, 0xd000, 4, 50), ent(GL_HIST_FREE, 0xb000, 2, 60),
    };
    in[1].size = 100;
    in[3].device = 1;
    in[3].size = 500;
    in[4].stack = 9;
    in[4].size = 10; /* device 0: 64 + 100, then 100 + 10: the peak stays 164 */
    struct gl_history_peak p[3];
    gl_history_peaks(in, 6, p, 3);
    ck_assert_uint_eq(p[0].bytes, 164);
    ck_assert_uint_eq(p[0].seq, 2);
    ck_assert_uint_eq(p[1].bytes, 500);
    ck_assert_uint_eq(p[1].seq, 3);
    ck_assert_uint_eq(p[2].bytes, 0);
    in[4].size = 200; /* now the fourth allocation reaches 300 */
    gl_history_peaks(in, 6, p, 3);
    ck_assert_uint_eq(p[0].bytes, 300);
    ck_assert_uint_eq(p[0].seq, 4);
    ck_assert_uint_eq(p[0].stack, 9);
}
END_TEST

/* A free of a block allocated before the window, seen after a newer block
 * took its address: moved before that allocation. */
START_TEST(test_order_moves_orphan_free)
{
    struct gl_history_entry in[] = {
        ent(GL_HIST_ALLOC, 0xa000, 9, 10),
        ent(GL_HIST_FREE, 0xa000, 5, 20),
        ent(GL_HIST_FREE, 0xa000, 9, 30),
    };
    struct gl_history_entry out[3];
    ck_assert_uint_eq(gl_history_order(in, 3, out), 3);
    ck_assert_uint_eq(out[0].seq, 5);
    ck_assert_int_eq(out[0].action, GL_HIST_FREE);
    ck_assert_uint_eq(out[0].time_ns, 10);
    ck_assert_uint_eq(out[1].seq, 9);
    ck_assert_int_eq(out[1].action, GL_HIST_ALLOC);
    ck_assert_uint_eq(out[2].seq, 9);
    /* A newer block's free is no orphan to move before an older block. */
    struct gl_history_entry in2[] = {
        ent(GL_HIST_ALLOC, 0xb000, 3, 10),
        ent(GL_HIST_FREE, 0xb000, 3, 20),
        ent(GL_HIST_FREE, 0xb000, 7, 30),
    };
    ck_assert_uint_eq(gl_history_order(in2, 3, out), 3);
    ck_assert_mem_eq(in2, out, sizeof in2);
}
END_TEST

/* A thread that allocates now and then takes one position at a time: a
 * ring of 65,536 keeps every one of 1,100 sparse events (a chunk of 64 each
 * would need 70,400 positions). */
#define SPARSE 1100
START_TEST(test_sparse_events_all_kept)
{
    gl_history_configure(1 << 16);
    tu_pipeline_restart();
    for (uint64_t i = 0; i < SPARSE; i++) {
        alloc(0x7f0000000000 + (i << 12), 4096, GL_MEM_DEVICE, 0, 3);
        struct timespec ts = {0, 1200000}; /* longer than a chunk is kept */
        nanosleep(&ts, NULL);
    }
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    size_t n = window(&e, &bytes, &dropped);
    ck_assert_uint_eq(n, SPARSE);
    ck_assert_uint_eq(dropped, 0);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* Blocks of unknown size (IPC) are not drawn: not in the history either. */
START_TEST(test_size_unknown_left_out)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = GL_MEM_IPC,
                          .key = 0x7f0000000000,
                          .device = 0,
                          .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED,
                          .ctx = 0x10,
                          .stack = 3};
    gl_dispatch(&ev);
    alloc(0x7f0000100000, 4096, GL_MEM_DEVICE, 0, 3);
    struct gl_history_entry *e;
    size_t bytes;
    uint64_t dropped;
    ck_assert_uint_eq(window(&e, &bytes, &dropped), 1);
    ck_assert_uint_eq(e[0].key, 0x7f0000100000);
    gl_tool_unmap(e, bytes);
}
END_TEST

/* Reading the window while threads still write (the exit report with other
 * threads alive): every entry read is whole, none torn between two writers. */
static _Atomic bool writers_stop;

static void *writer(void *arg)
{
    uint64_t base = 0x7f0000000000ull + ((uint64_t)(uintptr_t)arg << 36);
    for (uint64_t i = 0; !atomic_load(&writers_stop); i = (i + 1) & 0xffff) {
        alloc(base + (i << 12), 4096 + (uintptr_t)arg, GL_MEM_DEVICE, 0, 3);
        release(base + (i << 12));
    }
    return NULL;
}

START_TEST(test_read_while_writing)
{
    gl_history_configure(1 << 16);
    tu_pipeline_restart();
    atomic_store(&writers_stop, false);
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, writer, (void *)(i + 1));
    for (int round = 0; round < 3; round++) {
        struct gl_history_entry *e;
        size_t bytes;
        uint64_t dropped;
        size_t n = window(&e, &bytes, &dropped);
        for (size_t i = 0; i < n; i++) {
            uint64_t who = (e[i].key - 0x7f0000000000ull) >> 36;
            ck_assert(e[i].action == GL_HIST_ALLOC || e[i].action == GL_HIST_FREE);
            ck_assert(who >= 1 && who <= 4);
            ck_assert_uint_eq(e[i].size, 4096 + who); /* a whole entry, of one writer */
            ck_assert_uint_eq(e[i].stack, 3);
            if (i)
                ck_assert_uint_ge(e[i].time_ns, e[i - 1].time_ns);
        }
        if (e)
            gl_tool_unmap(e, bytes);
    }
    atomic_store(&writers_stop, true);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
}
END_TEST

static Suite *history_suite(void)
{
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60); /* threads and sleeps, on a loaded 2-core machine */
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_off_keeps_nothing);
    tcase_add_test(tc, test_records_device_memory);
    tcase_add_test(tc, test_ring_keeps_the_last);
    tcase_add_test(tc, test_context_sweep_frees);
    tcase_add_test(tc, test_order_moves_late_free);
    tcase_add_test(tc, test_order_keeps_good_order);
    tcase_add_test(tc, test_peaks);
    tcase_add_test(tc, test_threads_in_chunks);
    tcase_add_test(tc, test_tiny_ring_no_mixed_entries);
    tcase_add_test(tc, test_chunks_across_the_end);
    tcase_add_test(tc, test_clock_switch);
    tcase_add_test(tc, test_clock_switch_while_recording);
    tcase_add_test(tc, test_order_moves_orphan_free);
    tcase_add_test(tc, test_sparse_events_all_kept);
    tcase_add_test(tc, test_size_unknown_left_out);
    tcase_add_test(tc, test_read_while_writing);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(history_suite)
