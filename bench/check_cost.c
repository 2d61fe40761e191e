/* SPDX-License-Identifier: MIT */
/* What a leak check asked for while the program runs costs (gpuleak.h), on any
 * machine (no GPU): N live blocks made as events over S distinct stacks, then
 * the time of a checkpoint, of gpuleak_count_leaks (all blocks, and since a
 * checkpoint after which nothing was allocated) and of a full check written
 * into a buffer.  Suppression files are off: with them, each loss record's
 * stack is also symbolized and matched (once per stack, then cached).
 *
 *   bench/check_cost [BLOCKS...]        default 10000 100000 1000000 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpuleak.h"
#include "check/checkpoints.h"
#include "client_api.h"
#include "check/leak_run.h"
#include "common/clock.h"
#include "components.h"
#include "runtime.h"
#include "event/api.h"
#include "stack/stack_depot.h"
#include "track/tracker.h"

#define STACKS 1000

static void populate(long n, const uint32_t *stacks)
{
    for (long i = 0; i < n; i++) {
        struct gl_event ev = {.type = GL_EV_ALLOC,
                              .kind = GL_MEM_DEVICE,
                              .api = GL_API_cuMemAlloc_v2,
                              .stack = stacks[i % STACKS],
                              .key = 0x7f0000000000ULL + (uint64_t)i * 4096,
                              .size = 4096};
        gl_dispatch(&ev);
    }
}

int main(int argc, char **argv)
{
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime.opt.default_suppressions = false;
    gl_runtime.pid = getpid();
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    gl_client_api_publish();
    gl_runtime_configure_tracking(gl_components);
    uint32_t stacks[STACKS];
    for (int s = 0; s < STACKS; s++) {
        uintptr_t f[8];
        for (int k = 0; k < 8; k++)
            f[k] = 0x400000 + (uintptr_t)s * 64 + (uintptr_t)k;
        stacks[s] = gl_stack_depot_intern(f, 8);
    }
    static char report[1 << 20];
    printf("%10s %12s %12s %12s %12s %12s\n", "blocks", "checkpoint", "count(all)", "count(since)",
           "check(full)", "bytes/block");
    long defaults[] = {10000, 100000, 1000000};
    int nsizes = argc > 1 ? argc - 1 : 3;
    for (int i = 0; i < nsizes; i++) {
        long n = argc > 1 ? atol(argv[i + 1]) : defaults[i];
        gl_dispatch_reset();
        populate(n, stacks);
        struct gpuleak_counts c;
        double t0 = gl_clock_s();
        gpuleak_checkpoint("bench");
        double t1 = gl_clock_s();
        gpuleak_count_leaks(NULL, &c);
        double t2 = gl_clock_s();
        gpuleak_count_leaks("bench", &c);
        double t3 = gl_clock_s();
        gpuleak_leak_check_to(GPULEAK_CHECK_FULL, NULL, report, sizeof report);
        double t4 = gl_clock_s();
        printf("%10ld %10.1f ms %10.1f ms %10.1f ms %10.1f ms %12.1f\n", n, (t1 - t0) * 1e3,
               (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3,
               (double)gl_tracker_memory_bytes() / (double)n);
    }
    return 0;
}
