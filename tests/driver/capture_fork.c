/* SPDX-License-Identifier: MIT */
/* A stream capture forked to other streams through events, through the
 * driver hooks (tests/driver.test).  Outside a capture, events recorded and
 * waited for fork nothing.  In one, a stream that waits for an event
 * recorded in it allocates graph nodes (the graph is never launched: no
 * block, no leak), and frees its node; a stream that waits for an external
 * record is not in the capture (its allocation is a block, freed).  A
 * second capture is launched once, and the allocation it keeps is freed by
 * the program.  Expected under gpuleak: no leak, no error. */
#include <cuda.h>
#include <stdio.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "capture_fork: %s failed\n", #x);                                      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    CHECK(cuInit(0));
    CUstream s1, s2, s3;
    CUevent fork, join, ext;
    CHECK(cuStreamCreate(&s1, 0));
    CHECK(cuStreamCreate(&s2, 0));
    CHECK(cuStreamCreate(&s3, 0));
    CHECK(cuEventCreate(&fork, 0));
    CHECK(cuEventCreate(&join, 0));
    CHECK(cuEventCreate(&ext, 0));
    /* Outside a capture: an ordinary pair on s2 after a wait. */
    CUdeviceptr p;
    CHECK(cuEventRecord(fork, s1));
    CHECK(cuStreamWaitEvent(s2, fork, 0));
    CHECK(cuMemAllocAsync(&p, 4096, s2));
    CHECK(cuMemFreeAsync(p, s2));

    /* Captured, never launched. */
    CUdeviceptr a, b, c, q;
    CUgraph g;
    CUgraphExec ge;
    CHECK(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuEventRecord(fork, s1));
    CHECK(cuStreamWaitEvent(s2, fork, 0));
    CHECK(cuMemAllocAsync(&a, 100000, s2)); /* a node: before s2 frees anything */
    CHECK(cuMemAllocAsync(&b, 200000, s2));
    CHECK(cuMemFreeAsync(b, s2));
    CHECK(cuEventRecordWithFlags(ext, s1, CU_EVENT_RECORD_EXTERNAL));
    CHECK(cuStreamWaitEvent(s3, ext, 0)); /* no fork */
    CHECK(cuMemAllocAsync(&c, 3000, s3));
    CHECK(cuMemFreeAsync(c, s3));
    CHECK(cuEventRecord(join, s2));
    CHECK(cuStreamWaitEvent(s1, join, 0));
    CHECK(cuMemFreeAsync(a, s1));
    CHECK(cuStreamEndCapture(s1, &g));
    CHECK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CHECK(cuGraphDestroy(g));
    CHECK(cuGraphExecDestroy(ge));

    /* Captured, launched once; the program frees what the graph keeps. */
    CHECK(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuEventRecord(fork, s1));
    CHECK(cuStreamWaitEvent(s2, fork, 0));
    CHECK(cuMemAllocAsync(&q, 5000, s2));
    CHECK(cuEventRecord(join, s2));
    CHECK(cuStreamWaitEvent(s1, join, 0));
    CHECK(cuStreamEndCapture(s1, &g));
    CHECK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CHECK(cuGraphDestroy(g));
    CHECK(cuGraphLaunch(ge, s1));
    CHECK(cuMemFreeAsync(q, s1));
    CHECK(cuGraphExecDestroy(ge));
    printf("capture_fork: done\n");
    return 0;
}
