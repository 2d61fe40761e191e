/* SPDX-License-Identifier: MIT */
/* A thread's recent stacks with Python frames, and what each was made of.
 *
 * Why: a loop allocating from one line makes the same native and Python
 * frames each time, and merging the two (mixed_stack.h) and interning the
 * result again was a third of a Python capture's cost
 * (bench/RESULTS.md, "Python frames: the merged stack remembered").  An entry
 * keeps the merge's inputs and the depot id it gave: the same words in, the
 * same stack out, so a capture whose words match takes the id.  Exact: the
 * hash of the Python frames only picks which entries are compared whole.
 *
 * What an entry keeps of the native stack: the frames the merge read
 * (gl_mixed_stack's used).  Where the merge stopped at the outermost Python
 * frame kept, that is a prefix, which any stack beginning with it shares (a
 * "prefix entry": about thirty of a PyTorch allocation's ninety frames);
 * where the result depended on the stack's end, every frame (a "whole
 * entry": it answers only a stack of exactly those frames).  With a prefix
 * entry the entry also keeps raw_need, the raw frames a capture must check
 * to compare it: the internal run (gpuleak's, CUPTI's, the driver's), the
 * runtime's frames before the native ones, and the prefix itself.  A capture
 * asks gl_mixed_memo_need how far to look up its native stack, looks that
 * prefix up (stack_memo.h, gl_stack_memo_find_prefix), trims it as any
 * capture's, and compares with gl_mixed_memo_find_prefix: the native memo
 * then checks a third of the frames it would check for the whole stack.
 * The answer does not depend on raw_need being right: a prefix entry matches
 * only frames that begin with its own.  Too small a raw_need makes the probe
 * miss (the capture then looks the whole stack up, and gl_mixed_memo_find
 * raises it); too large reads frames for nothing.
 *
 * The layout: 64 entries, in 8 sets of 8 ways; a stack may go in either of
 * two sets picked by its hash, the least recently used of their 16 ways
 * replaced.  Tried and worse (bench/cold_train.py's 40 lines, bench/RESULTS.md
 * "The prefix a Python merge reads"): one entry (a training step allocates
 * from a few dozen lines in turn); one set of 16 (the least recently used is
 * always the next asked for on 25 lines in turn); placing by the hash alone
 * (6 of 10 lines collided in 16 slots); 16 sets of 4 (6 of 25 lines in one
 * set); one set of 8 ways a stack (nine of 40 lines hashed to one and
 * thrashed, a capture in 4 merged again).  A set's hashes and clocks share
 * one line, so a lookup reads one line, a second where the first does not
 * hold the stack, and the entries whose hash matches.  An entry's words (the
 * Python frames, their group ends, the native frames) are packed from its
 * start and line-aligned: a hit reads as many lines as the stack fills.
 * About 165 KiB of address space a thread, mapped (not from the tool's
 * slabs: their lock is no place for a signal handler's capture to meet the
 * thread it interrupted), touched as entries fill.
 *
 * Each thread owns its memo: no lock.  A write makes its count odd; a signal
 * handler's capture on the thread runs whole inside the thread's, so it
 * leaves a memo being written alone, and a lookup it interrupted sees the
 * count moved and misses. */
#ifndef GPULEAK_MIXED_MEMO_H
#define GPULEAK_MIXED_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "stack/mixed_stack.h"

/* The most frames an entry keeps: Python frames (and as many groups), and
 * native ones; a capture on the calling thread's stack fits (stack_capture.c
 * asserts it). */
#define GL_MIXED_MEMO_PYTHON 80
#define GL_MIXED_MEMO_NATIVE 225

struct gl_mixed_memo;

/* Whether a stack of n native frames and these Python frames fits an entry
 * (gl_mixed_memo_put remembers nothing larger). */
static inline bool gl_mixed_memo_fits(unsigned n, const struct gl_python_stack *py)
{
    return n <= GL_MIXED_MEMO_NATIVE && py->n <= GL_MIXED_MEMO_PYTHON &&
           py->ngroups <= GL_MIXED_MEMO_PYTHON;
}

/* What a capture is, besides its native frames. */
struct gl_mixed_key {
    const struct gl_python_stack *py;
    uint64_t hash;       /* gl_mixed_memo_hash(py) */
    unsigned keep;       /* the frames kept, native << 16 | Python */
    unsigned generation; /* of the module ranges the merge classifies frames with */
};

/* A memo, in tool memory, empty; NULL if memory ran out. */
struct gl_mixed_memo *gl_mixed_memo_new(void);

/* Forget every entry (the thread's struct goes to the next new thread).
 * Leaves a memo being written alone. */
void gl_mixed_memo_forget(struct gl_mixed_memo *m);

/* Ask for the line a lookup reads first (base/warm.h). */
void gl_mixed_memo_warm(const struct gl_mixed_memo *m);

/* Of the Python frames alone, never 0: a lookup finds the entries that may
 * match before it knows how many native frames to check. */
uint64_t gl_mixed_memo_hash(const struct gl_python_stack *py);

/* Debugging (GPULEAK_DEBUG_MIXED_COLLIDE=1, tests/python_frames.test): every
 * stack hashes alike, so that the whole compare must tell stacks apart. */
void gl_mixed_memo_collide(bool on);

/* The id remembered for the stack of these n native frames (trimmed, the
 * driver's entry point first where a capture puts it), or 0.  A whole entry
 * answers these frames exactly, a prefix entry any that begin with its own.
 * When a prefix entry answers, its raw_need is raised to raw_base (the raw
 * frames before native[0]) plus its frames, and at least to read (the raw
 * frames the trim read): the next capture of this stack finds it by the
 * probe. */
uint32_t gl_mixed_memo_find(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                            const uintptr_t *native, unsigned n, unsigned raw_base, unsigned read);

/* The probe's first half: how many raw frames the prefix entries of these
 * Python frames need checked, the most of any (0: none, or the memo is being
 * written).  It reads the sets and the entries' counts, not their frames: an
 * entry of other Python frames of the same hash and depth counts too (the
 * probe then reads more than it needs).  *stamp: what
 * gl_mixed_memo_find_prefix checks the memo by. */
unsigned gl_mixed_memo_need(const struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                            unsigned *stamp);

/* The probe's second half: the id of a prefix entry whose native frames begin
 * native[0..n) (the first frames of a stack, trimmed), or 0; 0 too if the memo
 * was written since gl_mixed_memo_need gave stamp.  Whole entries never
 * answer: a prefix cannot tell a whole stack. */
uint32_t gl_mixed_memo_find_prefix(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                                   const uintptr_t *native, unsigned n, unsigned stamp);

/* Remember id for the stack of these n native frames: its first used (all,
 * when used >= n: a whole entry), compared by checking the stack's first
 * raw_need raw frames.  Nothing if a way holds it already, if it is larger
 * than an entry keeps, if id is 0, or if the memo is being written. */
void gl_mixed_memo_put(struct gl_mixed_memo *m, const struct gl_mixed_key *k,
                       const uintptr_t *native, unsigned n, unsigned used, unsigned raw_need,
                       uint32_t id);

/* What the memos did, for -v's statistics (written by their owners, read
 * by the report: counts, not a snapshot). */
struct gl_mixed_memo_counts {
    uint64_t probe_hits; /* stacks found by the probe (a prefix checked) */
    uint64_t whole_hits; /* found by the whole compare, after the probe missed */
    uint64_t stores;     /* stacks merged and remembered */
};
/* Adds m's counts to *c; forgetting keeps them. */
void gl_mixed_memo_add_counts(const struct gl_mixed_memo *m, struct gl_mixed_memo_counts *c);

/* Give a memo nobody uses back (one of two mapped at once: a signal
 * handler's capture mapped the thread's meanwhile). */
void gl_mixed_memo_free(struct gl_mixed_memo *m);

#endif
