/* SPDX-License-Identifier: MIT */
/* Profiled regions from CUDA C++ (gpuleak.h's gpuleak_profile_*), checked to
 * the byte against peaks computed by hand: 10 MiB, 30 MiB, free the 10, 50
 * MiB reaches 80 MiB above the region's start, with a region nested inside,
 * a block older than the regions freed inside, pinned host memory as a
 * device of its own, a second thread allocating inside a region (and
 * profiling its own, overlapping), and a region ended without sites.  Exit
 * status: 0, or 1 if an expectation failed (each one printed); the GPU suite
 * checks the exit report too. */
#include <stdint.h>
#include <string.h>

#include <thread>

#include "fixture.h"
#include "gpuleak.h"

static int failures;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "profile_api: line %d: expected %s\n", __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define EXPECT_EQ(a, b)                                                                            \
    do {                                                                                           \
        unsigned long long a_ = (a), b_ = (b);                                                     \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "profile_api: line %d: %s is %llu, expected %s = %llu\n", __LINE__,    \
                    #a, a_, #b, b_);                                                               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const unsigned long long MiB = 1ull << 20;

/* line: the caller's __LINE__, kept in *where: the line its frame names. */
NOINLINE static void *device_block(size_t n, int *where = nullptr, int line = 0)
{
    void *p;
    CHECK(cudaMalloc(&p, n));
    if (where)
        *where = line;
    return p;
}

struct Region {
    struct gpuleak_profile p;
    struct gpuleak_profile_device d[8];
    int n;
};

/* What every device of a region says adds up: open + allocated - freed is
 * close, and neither end is above the peak. */
static void expect_balanced(const Region &r)
{
    for (int i = 0; i < r.n; i++) {
        const struct gpuleak_profile_device &d = r.d[i];
        EXPECT_EQ(d.live_at_open + d.allocated - d.freed, d.live_at_close);
        EXPECT(d.peak >= d.live_at_open && d.peak >= d.live_at_close);
    }
}

static void end(int id, Region *r)
{
    memset(r, 0, sizeof *r);
    r->n = gpuleak_profile_end(id, &r->p, r->d, 8);
    EXPECT(r->n >= 1);
    expect_balanced(*r);
}

static const struct gpuleak_profile_device *device(const Region &r, int dev)
{
    for (int i = 0; i < r.n; i++)
        if (r.d[i].device == dev)
            return &r.d[i];
    fprintf(stderr, "profile_api: no device %d in the region\n", dev);
    failures++;
    static struct gpuleak_profile_device none;
    return &none;
}

/* The site's frames name main at this line of this file. */
static void expect_site(const struct gpuleak_profile_site &s, unsigned long long bytes, int line)
{
    EXPECT_EQ(s.bytes, bytes);
    EXPECT_EQ(s.blocks, 1);
    char text[16384], want[64];
    long len = gpuleak_profile_frames(s.stack, text, sizeof text);
    EXPECT(len > 0 && (size_t)len < sizeof text);
    snprintf(want, sizeof want, "profile_api.cu:%d:main\n", line);
    if (!strstr(text, want)) {
        fprintf(stderr, "profile_api: the site of %llu bytes is not at %s; its frames:\n%s", bytes,
                want, text);
        failures++;
    }
}

static void print(const char *name, const Region &r)
{
    for (int i = 0; i < r.n; i++) {
        const struct gpuleak_profile_device &d = r.d[i];
        printf("profile_api: %s device %d open %llu peak %llu close %llu allocated %llu freed %llu "
               "allocs %llu frees %llu peak_seq %llu peak_ns %llu flags %u sites %u\n",
               name, d.device, d.live_at_open, d.peak, d.live_at_close, d.allocated, d.freed,
               d.allocs, d.frees, d.peak_seq, d.peak_ns, d.flags, d.nsites);
    }
}

int main()
{
    CHECK(cudaFree(0)); /* start CUDA */
    int line_keep, line_b, line_c;
    void *keep = device_block(4 * MiB, &line_keep, __LINE__);

    int outer = gpuleak_profile_begin("outer");
    EXPECT(outer >= 0);
    void *a = device_block(10 * MiB);
    int inner = gpuleak_profile_begin("inner");
    EXPECT(inner >= 0 && inner != outer);
    void *b = device_block(30 * MiB, &line_b, __LINE__);
    CHECK(cudaFree(a));
    void *c = device_block(50 * MiB, &line_c, __LINE__);
    Region in;
    end(inner, &in);
    print("inner", in);
    const struct gpuleak_profile_device *d = device(in, 0);
    /* Opened with keep and a live: 30 - 10 + 50 = 70 MiB above. */
    EXPECT_EQ(d->peak - d->live_at_open, 70 * MiB);
    EXPECT_EQ(d->peak, d->live_at_close);
    EXPECT_EQ(d->allocated, 80 * MiB);
    EXPECT_EQ(d->freed, 10 * MiB);
    EXPECT_EQ(d->allocs, 2);
    EXPECT_EQ(d->frees, 1);
    EXPECT(d->peak_seq != 0);
    EXPECT(d->peak_ns > 0 && d->peak_ns <= in.p.duration_ns);
    EXPECT_EQ(d->flags, 0);
    EXPECT(d->nsites >= 3);
    expect_site(d->sites[0], 50 * MiB, line_c);
    expect_site(d->sites[1], 30 * MiB, line_b);
    expect_site(d->sites[2], 4 * MiB, line_keep);
    EXPECT_EQ(in.p.other_thread_events, 0);
    unsigned long long inner_peak_seq = d->peak_seq;
    /* Ended: its id names nothing now. */
    struct gpuleak_profile again;
    EXPECT(gpuleak_profile_end(inner, &again, NULL, 0) == -1);

    CHECK(cudaFree(b));
    CHECK(cudaFree(keep)); /* older than the region: freed in it */
    void *host;
    CHECK(cudaMallocHost(&host, 1 * MiB));
    void *e = device_block(5 * MiB);
    Region out;
    end(outer, &out);
    print("outer", out);
    d = device(out, 0);
    EXPECT_EQ(d->peak - d->live_at_open, 80 * MiB); /* the hand-computed peak */
    EXPECT_EQ(d->live_at_close - d->live_at_open, 51 * MiB);
    EXPECT_EQ(d->live_at_open + d->allocated - d->freed, d->live_at_close);
    EXPECT_EQ(d->allocated, 95 * MiB);
    EXPECT_EQ(d->freed, 44 * MiB);
    EXPECT_EQ(d->allocs, 4);
    EXPECT_EQ(d->frees, 3);
    EXPECT_EQ(d->peak_seq, inner_peak_seq); /* the 50 MiB block, both times */
    EXPECT_EQ(d->flags, 0);
    /* b and keep were freed after the peak: the sites are as they were then. */
    expect_site(d->sites[0], 50 * MiB, line_c);
    expect_site(d->sites[1], 30 * MiB, line_b);
    expect_site(d->sites[2], 4 * MiB, line_keep);
    const struct gpuleak_profile_device *h = device(out, -1);
    EXPECT_EQ(h->peak - h->live_at_open, 1 * MiB);
    EXPECT_EQ(h->allocs, 1);
    EXPECT(out.p.duration_ns >= in.p.duration_ns);
    CHECK(cudaFree(c));
    CHECK(cudaFree(e));
    CHECK(cudaFreeHost(host));

    /* Another thread allocates while main's region is open, inside a region
     * of its own: each counts both threads' events, and says whose. */
    int mine = gpuleak_profile_begin("main's");
    Region theirs;
    std::thread t([&theirs] {
        int id = gpuleak_profile_begin("thread's");
        void *p = device_block(2 * MiB);
        CHECK(cudaFree(p));
        end(id, &theirs);
    });
    t.join();
    void *f = device_block(3 * MiB);
    CHECK(cudaFree(f));
    Region main_r;
    end(mine, &main_r);
    print("threads", main_r);
    d = device(main_r, 0);
    EXPECT_EQ(d->allocated, 5 * MiB);
    EXPECT_EQ(d->allocs, 2);
    EXPECT_EQ(d->peak - d->live_at_open, 3 * MiB);
    EXPECT_EQ(main_r.p.other_thread_events, 2);
    d = device(theirs, 0);
    EXPECT_EQ(d->allocated, 2 * MiB);
    EXPECT_EQ(theirs.p.other_thread_events, 0);
    EXPECT(theirs.p.tid != main_r.p.tid);

    /* No sites asked for (gpuleak_profile_end_sites, 0): every figure, no
     * site (none computed), and the flag says so. */
    int quick = gpuleak_profile_begin("no sites");
    void *g = device_block(6 * MiB);
    Region q;
    memset(&q, 0, sizeof q);
    q.n = gpuleak_profile_end_sites(quick, &q.p, q.d, 8, 0);
    EXPECT(q.n >= 1);
    expect_balanced(q);
    d = device(q, 0);
    EXPECT_EQ(d->peak - d->live_at_open, 6 * MiB);
    EXPECT_EQ(d->allocated, 6 * MiB);
    EXPECT_EQ(d->nsites, 0);
    EXPECT_EQ(d->flags, GPULEAK_PROFILE_SITES_INEXACT);
    CHECK(cudaFree(g));

    printf("profile_api: done, %d failures\n", failures);
    return failures ? 1 : 0;
}
