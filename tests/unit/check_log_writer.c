/* SPDX-License-Identifier: MIT */
/* lib/save/log_writer.h's reservations: threads writing records at once,
 * one joining while the other writes, leave a file whose every record
 * reads back, none lost or overlapping; the staging ring full, read while
 * staged, and compacted at close. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/thread.h"
#include "base/ticker.h"
#include "common/clock.h"
#include "event/mem_kind.h"
#include "save/log_format.h"
#include "save/log_reader.h"
#include "save/log_writer.h"
#include "testutil.h"

static char path[64];

static bool try_open_log(uint64_t limit, char *err, size_t errlen)
{
    snprintf(path, sizeof path, "/tmp/check_log_writer.XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    struct gl_log_process proc = {"test", "check_log_writer", ""};
    return gl_log_writer_open(fd, limit, &proc, err, errlen);
}

static void open_log(void)
{
    char err[256];
    ck_assert_msg(try_open_log(256u << 20, err, sizeof err), "%s", err);
}

/* Close the log and open it to read, its summary in *s. */
static struct gl_log_file *close_and_open(struct gl_log_summary *s)
{
    gl_log_writer_close();
    char err[512];
    struct gl_log_file *f = gl_log_reader_open(path, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    gl_log_reader_summary(f, s);
    return f;
}

/* Close and read back, every record whole: the marks and events counted. */
static void close_and_count(uint64_t *marks, uint64_t *events)
{
    struct gl_log_summary s;
    struct gl_log_file *f = close_and_open(&s);
    ck_assert_uint_eq(s.unread_bytes, 0);
    *marks = s.marks;
    *events = s.events;
    gl_log_reader_close(f);
    unlink(path);
}

static _Atomic int started;

static void *second_writer(void *arg)
{
    long n = (long)(intptr_t)arg;
    gl_thread_self();
    atomic_store(&started, 1);
    for (long i = 0; i < n; i++)
        gl_log_writer_mark((uint64_t)i + 1, 0, "second");
    return NULL;
}

START_TEST(test_one_writer_then_two)
{
    for (int round = 0; round < 20; round++) {
        open_log();
        gl_thread_self();
        for (int i = 0; i < 1000; i++)
            gl_log_writer_mark((uint64_t)i + 1, 0, "first");
        atomic_store(&started, 0);
        pthread_t t;
        pthread_create(&t, NULL, second_writer, (void *)(intptr_t)20000);
        /* The first keeps writing while the second starts. */
        long mine = 1000;
        while (!atomic_load(&started) || mine < 21000)
            gl_log_writer_mark((uint64_t)++mine, 0, "first");
        pthread_join(t, NULL);
        uint64_t marks, events;
        close_and_count(&marks, &events);
        ck_assert_uint_eq(marks, (uint64_t)mine + 20000);
    }
}
END_TEST

/* Events of every length (fields of 0 to 8 bytes) from two threads at once,
 * through the consumer as the dispatcher calls it: each body copied in words
 * up to its padding and checked as padded, every one read back. */
static void *events(void *arg)
{
    uint32_t tid = (uint32_t)(uintptr_t)arg;
    const struct gl_consumer *k = gl_log_writer_component.consumer;
    for (uint64_t i = 0; i < 30000; i++) {
        unsigned bytes = (unsigned)(i % 9); /* 0 to 8 */
        uint64_t wide = bytes ? (bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1) : 0;
        struct gl_event ev = {.type = i % 2 ? GL_EV_FREE : GL_EV_ALLOC,
                              .kind = GL_MEM_DEVICE,
                              .api = 1,
                              .tid = tid,
                              .key = wide,
                              .size = i,
                              .seq = wide >> 8,
                              .ctx = 0x1000 + i,
                              .aux = wide >> 16};
        k->record(&ev, NULL);
    }
    return NULL;
}

START_TEST(test_events_of_every_length)
{
    open_log();
    pthread_t a, b;
    pthread_create(&a, NULL, events, (void *)(uintptr_t)11);
    pthread_create(&b, NULL, events, (void *)(uintptr_t)12);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    uint64_t marks, n;
    close_and_count(&marks, &n);
    ck_assert_uint_eq(n, 60000);
}
END_TEST

/* The file read while its process still writes it: the events compacted
 * and those still staged, each once. */
static void read_live(uint64_t *events, uint64_t *staged)
{
    char err[512];
    struct gl_log_file *f = gl_log_reader_open(path, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    struct gl_log_summary s;
    gl_log_reader_summary(f, &s);
    *events = s.events;
    *staged = s.staged;
    gl_log_reader_close(f);
}

static void one_event(uint32_t tid, uint64_t i)
{
    struct gl_event ev = {.type = i % 2 ? GL_EV_FREE : GL_EV_ALLOC,
                          .kind = GL_MEM_DEVICE,
                          .api = 1,
                          .tid = tid,
                          .key = 0x7f0000000000ull + (uint64_t)tid * 0x10000000 + i / 2 * 512,
                          .size = i % 2 ? 0 : 512,
                          .seq = i / 2 + 1};
    gl_log_writer_component.consumer->record(&ev, NULL);
}

static void *many_events(void *arg)
{
    uint32_t tid = (uint32_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < 40000; i++)
        one_event(tid, i);
    return NULL;
}

/* The helper held: four threads fill the ring (65,536 slots) and compact it
 * themselves; every event reads back, staged or not. */
START_TEST(test_ring_full)
{
    open_log();
    gl_log_writer_hold_helper(true);
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, many_events, (void *)(i + 21));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    uint64_t events, staged;
    read_live(&events, &staged);
    ck_assert_uint_eq(events, 160000);
    ck_assert_uint_gt(staged, 0);
    ck_assert_uint_le(staged, GL_LOG_WRITER_RING_SLOTS);
    gl_log_writer_hold_helper(false);
    uint64_t marks;
    close_and_count(&marks, &events);
    ck_assert_uint_eq(events, 160000);
}
END_TEST

/* A few events, the helper never woken (half the ring is its cue): all
 * staged, read from the ring while the process runs; closed, all compacted
 * and the ring's blocks given back. */
START_TEST(test_staged_then_closed)
{
    open_log();
    const struct gl_consumer *k = gl_log_writer_component.consumer;
    for (uint64_t i = 0; i < 100; i++) {
        struct gl_event ev = {.type = GL_EV_ALLOC,
                              .kind = GL_MEM_DEVICE,
                              .api = 1,
                              .tid = 5,
                              .key = 0x7f0000000000ull + i * 4096,
                              .size = 4096,
                              .seq = i + 1};
        k->record(&ev, NULL);
    }
    uint64_t events, staged;
    read_live(&events, &staged);
    ck_assert_uint_eq(events, 100);
    ck_assert_uint_eq(staged, 100);
    gl_log_writer_close();
    read_live(&events, &staged);
    ck_assert_uint_eq(events, 100);
    ck_assert_uint_eq(staged, 0);
    /* The ring (4.5 MiB) takes no disk where the file system punches holes. */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    int probe = open(path, O_RDWR);
    bool punches =
        probe >= 0 && fallocate(probe, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096) == 0;
    if (probe >= 0)
        close(probe);
    if (punches)
        ck_assert_int_lt((long)st.st_blocks * 512, GL_LOG_WRITER_RING_SLOTS * 72);
    unlink(path);
}
END_TEST

/* --save-limit reached by direct records (checkpoints) while events wait in
 * the ring: staging stops with them there, and the reader takes them, so the
 * events from before the limit are all read back.  A limit below the ring's
 * size is refused at open, in a line naming the option. */
START_TEST(test_limit_keeps_staged_events)
{
    char err[256];
    ck_assert(!try_open_log(4u << 20, err, sizeof err));
    ck_assert_msg(strstr(err, "--save-limit: ") && strstr(err, "staging ring"), "%s", err);
    unlink(path);
    ck_assert_msg(try_open_log(6u << 20, err, sizeof err), "%s", err);
    gl_thread_self();
    for (uint64_t i = 0; i < 1000; i++)
        one_event(5, 2 * i); /* allocations, staged: the helper is not woken */
    for (uint64_t i = 0; i < 40000; i++)
        gl_log_writer_mark(i + 1, 0, "a checkpoint name of some length");
    for (uint64_t i = 0; i < 10; i++)
        one_event(5, 2 * (1000 + i)); /* after the limit: not staged */
    gl_log_writer_end(GL_LOG_END_EXIT, 0, 0, 0, true, NULL);
    gl_log_writer_close();
    struct gl_log_file *f = gl_log_reader_open(path, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    struct gl_log_summary s;
    gl_log_reader_summary(f, &s);
    ck_assert(s.limited);
    ck_assert(!s.ended);
    ck_assert_uint_gt(s.marks, 1000);
    ck_assert_uint_eq(s.events, 1000);
    ck_assert_uint_eq(s.staged, 1000);
    gl_log_reader_close(f);
    unlink(path);
}
END_TEST

/* A signal handler that makes a call while its thread compacts a full ring
 * (the helper held): signals wait until the compaction is over, so the
 * handler's event is staged like any other, none is dropped and nothing
 * stalls. */
static _Atomic uint64_t progress, handled;
static _Atomic bool writer_done;

static void on_signal(int sig)
{
    (void)sig;
    one_event(99, 2 * atomic_fetch_add(&handled, 1));
}

static void *busy_writer(void *arg)
{
    (void)arg;
    gl_thread_self();
    for (uint64_t i = 0; i < 400000; i++) {
        one_event(8, i);
        atomic_store(&progress, i);
    }
    atomic_store(&writer_done, true);
    return NULL;
}

START_TEST(test_signal_inside_compaction)
{
    open_log();
    gl_log_writer_hold_helper(true);
    struct sigaction sa = {.sa_handler = on_signal}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    atomic_store(&writer_done, false);
    pthread_t t;
    pthread_create(&t, NULL, busy_writer, NULL);
    uint64_t last = 0;
    int still = 0;
    while (!atomic_load(&writer_done)) {
        pthread_kill(t, SIGUSR1);
        usleep(200);
        uint64_t p = atomic_load(&progress);
        still = p == last ? still + 1 : 0;
        last = p;
        ck_assert_msg(still < 20000, "the writer stalled at event %llu", (unsigned long long)p);
    }
    pthread_join(t, NULL);
    sigaction(SIGUSR1, &old, NULL);
    gl_log_writer_hold_helper(false);
    ck_assert_uint_eq(gl_log_writer_dropped(), 0);
    ck_assert_uint_gt(atomic_load(&handled), 0);
    uint64_t marks, events;
    close_and_count(&marks, &events);
    ck_assert_uint_eq(events, 400000 + atomic_load(&handled));
}
END_TEST

/* A thread cancelled (pthread_cancel, deferred) while it compacts a full
 * ring, the helper held: the file's growth inside the compaction is a
 * cancellation point, and a thread cancelled there would hold the compactor
 * (and the file's growth) for good.  The request is acted on after the
 * writer's slow path: every event of the thread is written, and others
 * write on. */
static _Atomic bool cancel_sent;
#define CANCELLED_EVENTS 600000 /* 20 MB of records: the file grows twice */

static void *cancelled_writer(void *arg)
{
    (void)arg;
    gl_thread_self();
    int state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    while (!atomic_load(&cancel_sent))
        usleep(100);
    /* The request pending from here: the next cancellation point takes it. */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &state);
    for (uint64_t i = 0; i < CANCELLED_EVENTS; i++) {
        one_event(10, i);
        atomic_store(&progress, i + 1);
    }
    pthread_testcancel();
    return NULL;
}

START_TEST(test_cancel_inside_compaction)
{
    open_log();
    gl_log_writer_hold_helper(true);
    atomic_store(&progress, 0);
    atomic_store(&cancel_sent, false);
    pthread_t t;
    pthread_create(&t, NULL, cancelled_writer, NULL);
    pthread_cancel(t);
    atomic_store(&cancel_sent, true);
    void *ret;
    pthread_join(t, &ret);
    ck_assert_ptr_eq(ret, PTHREAD_CANCELED);
    uint64_t written = atomic_load(&progress); /* short: cancelled inside */
    ck_assert_uint_eq(written, CANCELLED_EVENTS);
    /* Another thread fills the ring again: the compactor is free. */
    pthread_t u;
    pthread_create(&u, NULL, many_events, (void *)(uintptr_t)11);
    pthread_join(u, NULL);
    gl_log_writer_hold_helper(false);
    ck_assert_uint_eq(gl_log_writer_dropped(), 0);
    uint64_t marks, events;
    close_and_count(&marks, &events);
    ck_assert_uint_eq(events, CANCELLED_EVENTS + 40000);
}
END_TEST

/* The file read again and again while a thread writes events and the helper
 * compacts them: every read succeeds (a record straddling the size the file
 * had when looked at, a slot caught while its next lap is stored: neither is
 * taken for damage, nor its bytes for another event's) and reads back no
 * more events than were written.  (How many: the reader reads a moving
 * file, and stops where the writers were when it got there.) */
static void *steady_writer(void *arg)
{
    (void)arg;
    gl_thread_self();
    /* Within the log's limit (256 MiB): a million and a half events. */
    for (uint64_t i = 0; i < 1500000 && !atomic_load(&writer_done); i++) {
        one_event(7, i);
        atomic_store(&progress, i + 1);
    }
    return NULL;
}

START_TEST(test_read_while_written)
{
    open_log();
    atomic_store(&writer_done, false);
    atomic_store(&progress, 0);
    pthread_t t;
    pthread_create(&t, NULL, steady_writer, NULL);
    uint64_t most = 0;
    for (int round = 0; round < 60; round++) {
        usleep(1000);
        char err[512];
        struct gl_log_file *f = gl_log_reader_open(path, err, sizeof err);
        ck_assert_msg(f != NULL, "read %d: %s", round, err);
        struct gl_log_summary s;
        gl_log_reader_summary(f, &s);
        /* The writer counts an event once it is stored: the one it stores
         * may be in the file before its count is. */
        uint64_t after = atomic_load(&progress);
        ck_assert_uint_le(s.events, after + 1);
        most = s.events > most ? s.events : most;
        gl_log_reader_close(f);
    }
    ck_assert_uint_gt(most, 0);
    atomic_store(&writer_done, true);
    pthread_join(t, NULL);
    uint64_t marks, events;
    close_and_count(&marks, &events);
    ck_assert_uint_eq(events, atomic_load(&progress));
}
END_TEST

/* The events' times (ns since the header's start) of the closed log. */
static size_t event_times(const struct gl_log_summary *s, const uint8_t *data, uint64_t *out,
                          size_t max)
{
    size_t k = 0;
    for (size_t off = gl_log_format_records_at(s->header); off < s->read_to;) {
        uint32_t head;
        memcpy(&head, data + off, 4);
        size_t n = head >> 16;
        struct gl_event ev;
        if (gl_log_format_is_event(head & 0xff) && k < max &&
            gl_log_format_event_decode(head & 0xff, data + off + 4, n, &ev))
            out[k++] = ev.time_ns;
        off += gl_log_format_span(n);
    }
    return k;
}

/* A clock thread the system ran late (its word 30 ms behind the clock as the
 * log opens): the start is its time, not the clock's, so the events' times
 * are the thread's exactly, never cut to the start (--read's times must be
 * the run's); and the Unix time of the start moves back with it. */
START_TEST(test_times_of_a_late_clock_thread)
{
    uint64_t lag = 30000000, mono = gl_clock_ns();
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    int64_t unix_minus_mono = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec - (int64_t)mono;
    uint64_t late = mono - lag;
    atomic_store(&gl_ticker.ns, late);
    atomic_store(&gl_ticker.used, 1);
    open_log();
    one_event(3, 0);
    atomic_store(&gl_ticker.ns, late + 5000000); /* its next tick, 5 ms on */
    one_event(3, 1);
    atomic_store(&gl_ticker.ns, 0);
    struct gl_log_summary s;
    struct gl_log_file *f = close_and_open(&s);
    int64_t skew =
        (int64_t)s.header->start_unix_ns - (int64_t)s.header->clock0_ns - unix_minus_mono;
    ck_assert_msg(skew > -5000000 && skew < 5000000, "start's Unix time off by %lld ns",
                  (long long)skew);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    uint8_t *data = malloc(s.size);
    ck_assert_int_eq(pread(fd, data, s.size, 0), (ssize_t)s.size);
    close(fd);
    uint64_t t[4];
    ck_assert_uint_eq(event_times(&s, data, t, 4), 2);
    ck_assert_uint_eq(t[0], 1); /* the start itself: 0 would mean "no time" */
    ck_assert_uint_eq(t[1], 5000000);
    ck_assert_uint_eq(s.header->clock0_ns, late);
    free(data);
    gl_log_reader_close(f);
    unlink(path);
}
END_TEST

static Suite *log_writer_suite(void)
{
    Suite *s = suite_create("log_writer");
    TCase *tc = tcase_create("log_writer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_one_writer_then_two);
    tcase_add_test(tc, test_events_of_every_length);
    tcase_add_test(tc, test_ring_full);
    tcase_add_test(tc, test_staged_then_closed);
    tcase_add_test(tc, test_limit_keeps_staged_events);
    tcase_add_test(tc, test_signal_inside_compaction);
    tcase_add_test(tc, test_cancel_inside_compaction);
    tcase_add_test(tc, test_read_while_written);
    tcase_add_test(tc, test_times_of_a_late_clock_thread);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(log_writer_suite)
