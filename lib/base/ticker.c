/* SPDX-License-Identifier: MIT */
#include "base/ticker.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/thread.h"
#include "common/clock.h"

struct gl_ticker gl_ticker;

#define PERIOD_NS 1000000 /* a tick a millisecond */
#define IDLE_TICKS 100    /* unread this many ticks: sleep */

static _Atomic bool started;      /* the thread exists in this process */
static _Atomic uint32_t sleeping; /* 1: the thread waits on this word */

static void *tick(void *arg)
{
    (void)arg;
    unsigned idle = 0;
    for (;;) {
        atomic_store(&gl_ticker.ns, gl_clock_ns());
        if (atomic_exchange(&gl_ticker.used, 0))
            idle = 0;
        else if (++idle >= IDLE_TICKS) {
            /* Asleep first, then not ticking: a reader that sees 0 finds the
             * thread asleep (or already woken by another reader). */
            atomic_store(&sleeping, 1);
            atomic_store(&gl_ticker.ns, 0);
            while (atomic_load(&sleeping) == 1)
                syscall(SYS_futex, &sleeping, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
            idle = 0;
            continue;
        }
        struct timespec period = {0, PERIOD_NS};
        nanosleep(&period, NULL);
    }
    return NULL;
}

bool gl_ticker_start(void)
{
    if (atomic_exchange(&started, true))
        return true;
    bool ok = gl_thread_start_tool("gpuleak-tick", tick, 64 << 10);
    if (!ok)
        atomic_store(&started, false);
    return ok;
}

uint64_t gl_ticker_read_slow(void)
{
    uint64_t now = gl_clock_coarse_ns();
    if (atomic_load_explicit(&sleeping, memory_order_relaxed) == 1 &&
        atomic_exchange(&sleeping, 0) == 1)
        syscall(SYS_futex, &sleeping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return now;
}

void gl_ticker_after_fork(void)
{
    atomic_store(&started, false);
    atomic_store(&sleeping, 0);
    atomic_store(&gl_ticker.ns, 0);
}

bool gl_ticker_ticking(void) { return atomic_load(&gl_ticker.ns) != 0; }
