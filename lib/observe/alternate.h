/* SPDX-License-Identifier: MIT */
/* GPULEAK_BENCH=alternate:NAME[:PAIRS]: what one consumer costs, measured
 * inside one process.  Every PAIRS frees (default 1000) the dispatcher's
 * tables are rebuilt with the consumer NAME (a component's name: history,
 * log_writer, stats, quarantine...; "observers": every observer, as
 * GPULEAK_BENCH=noobserve) left out, then put back, and the wall time of each
 * block of frees is kept.  Two adjacent blocks, one with and one without,
 * are a pair; the exit report gives the median of the pairs' differences.
 *
 * Why in one process: each vCPU of the GPU machine changes speed by 1.7x for
 * seconds at a time (bench/RESULTS.md), so two processes, even run in turns,
 * are often timed in different states; two blocks a millisecond apart almost
 * never are.  The figure is the consumer's cost to a program making the same
 * calls, its misses included (the block after a switch starts cold: the
 * first block after each switch is still counted, a few pairs in a thousand).
 *
 * For a benchmark of one thread (bench/alloc_pair ... 1) that frees what it
 * allocates within a block: the tables are rebuilt in place, which only a
 * program with one calling thread may see, and an observer that keeps
 * per-block state (statistics, quarantine, live ranges) sees only the
 * blocks of its own blocks.  The first free of a second thread stops the
 * alternation for good, with the observer as it was then (a rebuild with
 * that thread about would race its reads), and the report says so; until
 * then the second thread's calls race the rebuilds: do not.  A consumer
 * left out misses the events of its blocks: its outputs (--save,
 * --memory-viz) hold half the run.
 *
 * NAME "gpuleak" alternates the producer itself: every other block runs as
 * GPULEAK_BENCH=null (the hooks or CUPTI's callback stay, and return at
 * once), so the figure is all of gpuleak's work a pair, on the same vCPU as
 * the blocks without it.  What it leaves out is the producer's own floor:
 * the hook's frame around the driver's function (or CUPTI's callback),
 * close to what bench/run's "driver only" (or "cupti only") column measures
 * apart, neither the same; and the allocator hooks (heap.h), which run in
 * both kinds of block, for the host chunks the driver allocates and frees
 * inside its calls.  A block without tracks nothing: the program
 * must free, within a block, what it allocated in it.  Its blocks are
 * counted in exits of one entry point, the first one freed: the other entry
 * points' calls run in both kinds of block alike.  A call that straddles a
 * switch (only another thread's switch can make one) ends as it began: a
 * release begun is ended.  It goes with GPULEAK_BENCH=noobserve or nostate
 * (what is left of gpuleak, against nothing). */
#ifndef GPULEAK_ALTERNATE_H
#define GPULEAK_ALTERNATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse "NAME[:PAIRS]" (what follows "alternate:"): an observer attached
 * now (or "observers", or "gpuleak", which needs producer_null: the switch
 * that makes the producer do nothing, observe/call.h); false, with nothing
 * changed, when it is not one, or an alternation runs already. */
bool gl_alternate_configure(const char *spec, size_t len, void (*producer_null)(bool on));
bool gl_alternate_on(void);

/* Whether the mode is on and has not stopped: the hot path's one test. */
extern bool gl_alternate_active __attribute__((visibility("hidden")));
/* At the end of every call a producer ended (observe/driver.c, cupti.c),
 * on the calling thread, whether it tracked the call or did nothing (its
 * null path): the call's callback id, and whether it ended a release (a
 * token begun at its entry).  The measured thread is the first whose
 * counted call ends; any other's stops the alternation. */
void gl_alternate_after_exit(uint32_t cbid, bool release);
/* Whether an alternation of NAME "gpuleak" runs (GPULEAK_BENCH=null cannot
 * go with it). */
bool gl_alternate_whole(void);

struct gl_alternate_result {
    const char *name;
    unsigned pairs_per_block;
    size_t blocks;        /* pairs of blocks measured */
    double on_ns, off_ns; /* medians of the blocks' ns per pair */
    double diff_ns;       /* median of the pairs' differences, on - off */
    double q1_ns, q3_ns;  /* its quartiles */
    bool whole;           /* NAME "gpuleak": the producer alternated */
    bool stopped;         /* a second thread made calls */
    bool left_out;        /* the observer is out now (stopped in a block without) */
};
/* The figures so far; false when the mode is off. */
bool gl_alternate_result(struct gl_alternate_result *r);

#endif
