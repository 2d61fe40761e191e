/* SPDX-License-Identifier: MIT */
// CUDA graphs with memory nodes made by stream capture (cudaMallocAsync/cudaFreeAsync
// captured in global mode).  Default: four graphs, only one of which leaks.
// Expected: one loss record of 300,000 bytes whose stack is the capture-time
// cudaMallocAsync in capture_leak(), no API error.
//   graph_capture relaunch    a graph's allocation freed outside after each of 3 launches,
//                             then launched once more and not freed.  Expected: one loss
//                             record of 500,000 bytes (stack: the capture), no API error.
//   graph_capture unlaunched  a captured allocation whose graph is never launched.
//                             Expected: no loss record (no memory was ever allocated).
//   graph_capture reuse       a graph frees another graph's allocation, allocates (the driver
//                             may give it the freed address) and frees that; its exec is
//                             never destroyed.  Expected: no loss record
//                             but the graph memory the driver keeps (cached), no API error.
//   graph_capture reuse_kept  inside one graph: allocate, free, allocate again (same size,
//                             often the same address) and keep the second.  Expected: one
//                             loss record of 16,000,000 bytes from the second allocation.
//   graph_capture trim        allocated and freed inside, exec destroyed, then
//                             cudaDeviceGraphMemTrim.  Expected: kept_block()'s record only,
//                             no graph memory cached.
//   graph_capture fork        a stream forked from the capture through an event frees what
//                             the capturing stream allocated, then allocates and frees its
//                             own, and joins back (NVIDIA's graphMemoryNodes sample does the
//                             first); launched 3 times.  Expected: no loss record, no API error.
//   graph_capture fork_alloc  a stream forked from the capture allocates first: one buffer the
//                             capturing stream frees after the join, one the graph keeps and
//                             the program frees after each of 3 launches.  Expected: no loss
//                             record, no API error.
// Each reuse mode prints whether the address was reused.
#include <string.h>

#include "fixture.h"

static cudaStream_t stream;

__global__ void fill(int *p, int n, int v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

static void launch_fill_on(cudaStream_t s, int *p, int bytes, int v)
{
    int n = bytes / (int)sizeof(int);
    fill<<<(n + 255) / 256, 256, 0, s>>>(p, n, v);
    CHECK(cudaGetLastError());
}

static void launch_fill(int *p, int bytes, int v) { launch_fill_on(stream, p, bytes, v); }

static void begin(void) { CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal)); }

static cudaGraphExec_t end(unsigned long long flags)
{
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(stream, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiateWithFlags(&ge, g, flags));
    CHECK(cudaGraphDestroy(g));
    return ge;
}

/* 1: allocated and freed inside the graph, launched 100 times. */
NOINLINE static void alloc_and_free_inside(void)
{
    begin();
    int *p;
    CHECK(cudaMallocAsync((void **)&p, 100000, stream));
    launch_fill(p, 100000, 1);
    CHECK(cudaFreeAsync(p, stream));
    cudaGraphExec_t ge = end(0);
    for (int i = 0; i < 100; i++)
        CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge));
}

/* 2: allocated inside, launched once, freed outside after the launch. */
NOINLINE static void freed_outside(void)
{
    begin();
    int *p;
    CHECK(cudaMallocAsync((void **)&p, 200000, stream));
    launch_fill(p, 200000, 2);
    cudaGraphExec_t ge = end(0);
    CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaFreeAsync(p, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge));
}

/* 3: allocated inside, launched once, never freed: the leak.  Graph memory
 * outlives its graph until freed. */
NOINLINE static void capture_leak(void)
{
    begin();
    int *p;
    CHECK(cudaMallocAsync((void **)&p, 300000, stream)); // SITE:graph_capture_leak
    launch_fill(p, 300000, 3);
    memset(&p, 0, sizeof p); /* no copy of the pointer left behind */
    cudaGraphExec_t ge = end(0);
    CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge));
}

/* 4: auto free on launch: each relaunch frees the previous launch's allocation
 * (no API call the program makes); the last one is freed outside. */
NOINLINE static void auto_free_on_launch(void)
{
    begin();
    int *p;
    CHECK(cudaMallocAsync((void **)&p, 400000, stream));
    launch_fill(p, 400000, 4);
    cudaGraphExec_t ge = end(cudaGraphInstantiateFlagAutoFreeOnLaunch);
    for (int i = 0; i < 3; i++) {
        CHECK(cudaGraphLaunch(ge, stream));
        CHECK(cudaStreamSynchronize(stream));
    }
    CHECK(cudaFreeAsync(p, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge));
}

/* relaunch: the common output-buffer pattern.  Each launch allocates at the same
 * address (the graph's); the program frees it outside after each of 3 launches
 * (a graph whose allocation was freed may be launched again), then launches it a
 * 4th time and never frees what that launch allocated: the leak. */
NOINLINE static void relaunch_freed_outside(void)
{
    begin();
    int *p;
    CHECK(cudaMallocAsync((void **)&p, 500000, stream)); // SITE:relaunch_alloc
    launch_fill(p, 500000, 5);
    cudaGraphExec_t ge = end(0);
    for (int i = 0; i < 3; i++) {
        CHECK(cudaGraphLaunch(ge, stream));
        CHECK(cudaFreeAsync(p, stream));
        CHECK(cudaStreamSynchronize(stream));
    }
    CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaStreamSynchronize(stream));
    memset(&p, 0, sizeof p);
    CHECK(cudaGraphExecDestroy(ge));
}

/* unlaunched: the allocation node never runs, so no memory is ever allocated;
 * the graph is destroyed, and the address it reserved with it. */
NOINLINE static void never_launched(void)
{
    begin();
    int *p;
    CHECK(cudaMallocAsync((void **)&p, 600000, stream)); // SITE:unlaunched_alloc
    launch_fill(p, 600000, 6);
    cudaGraphExec_t ge = end(0);
    CHECK(cudaGraphExecDestroy(ge));
}

/* 1,000 bytes kept in a global to the end, so that the exit check runs (a
 * process with nothing left allocated has no records, cached ones included). */
static void *kept;
NOINLINE static void kept_block(void) { CHECK(cudaMalloc(&kept, 1000)); }

/* reuse: the loop pattern "free the last step's buffer, allocate this step's"
 * captured into a graph: the graph frees memory it did not allocate, and the
 * driver may hand the freed address to the graph's own allocation. */
NOINLINE static void reuse_after_outside_free(void)
{
    int *a, *b;
    begin();
    CHECK(cudaMallocAsync((void **)&a, 32000000, stream));
    launch_fill(a, 32000000, 7);
    cudaGraphExec_t first = end(0);
    CHECK(cudaGraphLaunch(first, stream));
    CHECK(cudaStreamSynchronize(stream));
    begin();
    CHECK(cudaFreeAsync(a, stream));
    CHECK(cudaMallocAsync((void **)&b, 32000000, stream));
    launch_fill(b, 32000000, 8);
    CHECK(cudaFreeAsync(b, stream));
    cudaGraphExec_t second = end(0);
    CHECK(cudaGraphLaunch(second, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("graph_capture reuse: address %s\n", a == b ? "reused" : "not reused");
    CHECK(cudaGraphExecDestroy(first));
    /* second is never destroyed: the memory the driver keeps for it is cached. */
}

/* reuse_kept: an address given back and handed out again inside one graph, the
 * second allocation kept after the launch and never freed. */
NOINLINE static void reuse_kept(void)
{
    int *a, *b;
    begin();
    CHECK(cudaMallocAsync((void **)&a, 16000000, stream));
    launch_fill(a, 16000000, 9);
    CHECK(cudaFreeAsync(a, stream));
    CHECK(cudaMallocAsync((void **)&b, 16000000, stream)); // SITE:reuse_kept
    launch_fill(b, 16000000, 10);
    cudaGraphExec_t ge = end(0);
    CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("graph_capture reuse_kept: address %s\n", a == b ? "reused" : "not reused");
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK(cudaGraphExecDestroy(ge));
}

/* trim: once no graph holds its memory, cudaDeviceGraphMemTrim gives the
 * driver's graph memory back to the system. */
NOINLINE static void trim(void)
{
    alloc_and_free_inside();
    CHECK(cudaDeviceGraphMemTrim(0));
}

/* A second stream a capture forks to (no capture begins on it), and the
 * events of the fork and the join back. */
struct side_fork {
    cudaStream_t side;
    cudaEvent_t forked, joined;
};

static struct side_fork fork_open(void)
{
    struct side_fork f;
    CHECK(cudaStreamCreateWithFlags(&f.side, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&f.forked, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&f.joined, cudaEventDisableTiming));
    return f;
}

/* The side stream waits for what the capture did so far. */
static void fork_to(const struct side_fork *f)
{
    CHECK(cudaEventRecord(f->forked, stream));
    CHECK(cudaStreamWaitEvent(f->side, f->forked, 0));
}

/* The capturing stream waits for what the side stream did. */
static void join_back(const struct side_fork *f)
{
    CHECK(cudaEventRecord(f->joined, f->side));
    CHECK(cudaStreamWaitEvent(stream, f->joined, 0));
}

static void fork_close(const struct side_fork *f)
{
    CHECK(cudaEventDestroy(f->forked));
    CHECK(cudaEventDestroy(f->joined));
    CHECK(cudaStreamDestroy(f->side));
}

/* fork: the capture forks to a second stream (an event recorded in it, the
 * stream waiting on it) and joins back; no capture begins on that stream. */
NOINLINE static void fork_join(void)
{
    struct side_fork f = fork_open();
    begin();
    int *p, *q;
    CHECK(cudaMallocAsync((void **)&p, 200000, stream));
    launch_fill(p, 200000, 3);
    fork_to(&f);
    CHECK(cudaFreeAsync(p, f.side));
    CHECK(cudaMallocAsync((void **)&q, 100000, f.side));
    CHECK(cudaFreeAsync(q, f.side));
    join_back(&f);
    cudaGraphExec_t ge = end(0);
    for (int i = 0; i < 3; i++)
        CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGraphExecDestroy(ge));
    fork_close(&f);
}

/* fork_alloc: the capture forks to a second stream that allocates before it
 * frees anything of the capture's: one buffer the capturing stream frees
 * after the join back, one the graph keeps, which the program frees after
 * each of 3 launches (cudaFree of graph memory). */
NOINLINE static void fork_alloc(void)
{
    struct side_fork f = fork_open();
    begin();
    int *a, *k;
    fork_to(&f);
    CHECK(cudaMallocAsync((void **)&a, 150000, f.side));
    CHECK(cudaMallocAsync((void **)&k, 70000, f.side));
    launch_fill_on(f.side, a, 150000, 4);
    join_back(&f);
    CHECK(cudaFreeAsync(a, stream));
    cudaGraphExec_t ge = end(0);
    for (int i = 0; i < 3; i++) {
        CHECK(cudaGraphLaunch(ge, stream));
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaFree(k));
    }
    CHECK(cudaGraphExecDestroy(ge));
    fork_close(&f);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (!strcmp(mode, "relaunch")) {
        relaunch_freed_outside();
    } else if (!strcmp(mode, "unlaunched")) {
        never_launched();
    } else if (!strcmp(mode, "reuse")) {
        reuse_after_outside_free();
        kept_block();
    } else if (!strcmp(mode, "reuse_kept")) {
        reuse_kept();
    } else if (!strcmp(mode, "trim")) {
        trim();
        kept_block();
    } else if (!strcmp(mode, "fork")) {
        fork_join();
    } else if (!strcmp(mode, "fork_alloc")) {
        fork_alloc();
    } else if (!*mode) {
        alloc_and_free_inside();
        freed_outside();
        capture_leak();
        auto_free_on_launch();
    } else {
        fprintf(stderr, "usage: graph_capture "
                        "[relaunch|unlaunched|reuse|reuse_kept|trim|fork|fork_alloc]\n");
        return 2;
    }
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    printf("graph_capture%s%s: done\n", *mode ? " " : "", mode);
    return 0;
}
