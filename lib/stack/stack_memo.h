/* SPDX-License-Identifier: MIT */
/* A thread's recent allocation stacks, recognised without unwinding them.
 *
 * Why: a program allocates in loops, from the same few stacks again and again,
 * and the libunwind walk was most of what a stack cost gpuleak (the allocation
 * callback's largest phase under `GPULEAK_BENCH=profile`: bench/RESULTS.md,
 * "Stack memo").  Most of such a stack's frames are gpuleak's, CUPTI's and the
 * driver's; each step looks its frame up in libunwind's cache, cold again
 * after the driver ran.
 *
 * How: on x86-64 a frame's return address lies in a stack slot, 8 bytes below
 * the stack pointer its caller had at the call.  Once a stack has been walked
 * frame by frame (unw_step, which gives each frame's stack pointer, and costs
 * many times a cached unw_backtrace: so it is done only where the thread's
 * budget allows, below), the memo keeps
 * where each return address lies, relative to the capture's stack pointer, and
 * its value; and, for each frame whose frame pointer (rbp) points into the
 * stack, where that value was saved and what it was.  A later capture at the
 * same stack pointer whose slots all hold the same values has the same stack,
 * frame for frame: the unwinder finds a frame's caller from the frame's stack
 * pointer and return address, or, in a frame of variable size (alloca, a
 * realigned stack), from its frame pointer; the first frame is the capture's
 * own, at the same place; and by induction each next return address lies
 * where it lay before and holds what it held.
 *
 * The frame pointers are not optional: without them, one frame with a 300-byte
 * array and six recursive frames without one put the same return addresses at
 * the same two slots, and the memo took the one stack for the other
 * (check_stack_capture's test_memo_agrees_with_the_unwinder).  A frame pointer
 * that holds no stack address is rbp used as any register, cannot place a
 * frame, and is not compared: loop counters must not make every lookup miss.
 * GCC's realigned frames find their caller through the word below the frame
 * pointer (the DRAP), which is compared too; a frame that finds its caller
 * through any other register or memory would escape the checks (no compiler
 * known to us makes one).
 *
 * Stacks that hold a signal frame are not remembered: the interrupted frame's
 * position comes from the saved context, not from a slot.  A stack that ended
 * before the frames asked for also has its last frame's frame pointer checked
 * (where the walk stopped may depend on it).  Not checked: the word where the
 * next return address would lie, had the walk gone on.  Walks end where the
 * unwind tables say a thread's first frame is (glibc's _start, clone3,
 * __start_context), whatever the stack holds; a stack whose bottom frame has
 * no tables and ends on a zero return address, then later holds a real one
 * there, would be returned cut at the old bottom.
 *
 * What it reads: slots in order from the capture outwards, each frame's
 * return address and then the frame pointers it is found by, so each lies in
 * a frame whose callees all matched: in the live chain of the stack the capture
 * runs on, even where a coroutine's stack now lies at the address another
 * one's did (a review built that case: comparing the program's frames first
 * read past the end of the new stack).
 *
 * The budget: a walk costs what about 64 hits save, so each hit earns a token
 * and a walk takes 64; a miss left unwalked earns an eighth, so that a program
 * whose stacks settle after a start-up of many distinct ones learns again.  A
 * thread starts with enough for two memos' worth.  A program whose stacks
 * never repeat walks once in 512 misses.
 *
 * Each thread owns its memo (thread_state.h): no lock.  A signal handler's
 * capture on the same thread, while a lookup or a learn runs, leaves the memo
 * alone.  x86-64 only; elsewhere nothing is remembered and every capture
 * unwinds. */
#ifndef GPULEAK_STACK_MEMO_H
#define GPULEAK_STACK_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "stack/unwind.h"

#define GL_MEMO_ENTRIES 32
/* Frames a remembered stack may have: what a capture asks for, Python's reach
 * into the interpreter included (stack_capture.c). */
#define GL_MEMO_FRAMES 96
/* Hits a walk must pay for. */
#define GL_MEMO_LEARN_COST 64

struct gl_stack_memo;

/* A thread's memo, in tool memory; NULL if memory ran out. */
struct gl_stack_memo *gl_stack_memo_new(void);

/* What a capture is, besides its stack: where its stack pointer was (a fixed
 * point of the capturing function), how many frames it asked the unwinder
 * for, and the generation of the module list (modules.h) its frames were
 * classified with. */
struct gl_memo_key {
    uintptr_t sp;
    unsigned want;
    unsigned generation;
};

/* Look a capture up.  On a hit returns the number of frames the unwinder
 * gave for it (> 0), sets *id to the depot id stored with it (0 if none) and,
 * if need_frames or there is no id, copies the frames into frames (room for
 * GL_MEMO_FRAMES); on a miss returns 0.  A hit earns budget. */
unsigned gl_stack_memo_find(struct gl_stack_memo *m, const struct gl_memo_key *key,
                            bool need_frames, uintptr_t *frames, uint32_t *id);

/* The first `limit` (> 0) frames of a capture, looked up: only the checks
 * that place those frames are made (by the induction above, a prefix whose
 * slots hold what they held is the same prefix, whatever lies further out).
 * Returns how many frames it copied into frames: min(limit, the remembered
 * stack's count), fewer than limit only when that is the whole stack; 0 on a
 * miss.  For a caller whose result depends on a stack's first frames only
 * (stack_capture.c: a Python capture's merge stops at the outermost Python
 * frame kept), which in a Python program are a third of what a capture
 * walks.  A hit earns budget. */
unsigned gl_stack_memo_find_prefix(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                   unsigned limit, uintptr_t *frames);

/* The whole stack at key, with its frames, looked up again by a capture
 * whose gl_stack_memo_find_prefix hit: as gl_stack_memo_find, but it earns
 * nothing (one capture, one hit in the budget and the counts). */
unsigned gl_stack_memo_find_again(struct gl_stack_memo *m, const struct gl_memo_key *key,
                                  uintptr_t *frames);

/* Ask for the lines a lookup reads (base/warm.h): the keys, and the
 * entry found last with its first checks. */
void gl_stack_memo_warm(const struct gl_stack_memo *m);

/* Whether the thread's budget allows a walk now; false also takes the attempt
 * into the counts. */
bool gl_stack_memo_may_learn(struct gl_stack_memo *m);

/* Remember a capture.  frames[0..n): what unw_backtrace returned, frames[0]
 * inside the capturing function; walk[0..nwalk): the same stack walked frame
 * by frame from a function it called.  id: the depot id to return on a hit,
 * 0 for none (a capture that held Python frames: its result depends on more
 * than the native stack).  Takes the budget's walk; returns false,
 * remembering nothing and evicting nothing, when the two unwinds disagree, the
 * stack holds a signal frame (the interrupted frame's return address is not
 * in a slot), a frame pointer into the stack was saved where the memo cannot
 * check it, or the stack is longer than the memo takes. */
bool gl_stack_memo_learn(struct gl_stack_memo *m, const struct gl_memo_key *key,
                         const uintptr_t *frames, unsigned n, const struct gl_unwind_frame *walk,
                         unsigned nwalk, uint32_t id);

/* The thread's room for captures deeper than its own stack should hold
 * (stack_capture.c, --num-callers above 76), kept beside its memo: bytes of
 * tool memory (the same size at every call), mapped on first use and kept for
 * the next thread the struct goes to; NULL if memory ran out.  Safe from a
 * signal handler: a handler that maps it first wins, the other mapping goes. */
void *gl_stack_memo_room(struct gl_stack_memo *m, size_t bytes);

/* Forget every capture and restore the budget: when its thread exits (the
 * struct goes to the next new thread), and in tests. */
void gl_stack_memo_clear(struct gl_stack_memo *m);

struct gl_stack_memo_counts {
    uint64_t hits;    /* captures that did not unwind */
    uint64_t walks;   /* captures walked to be remembered */
    uint64_t refused; /* walks whose stack could not be remembered */
    uint64_t skipped; /* misses the budget left unwalked */
    uint64_t bytes;   /* the memos' memory, their rooms included */
};
/* Adds m's counts to *c. */
void gl_stack_memo_add_counts(const struct gl_stack_memo *m, struct gl_stack_memo_counts *c);

#endif
