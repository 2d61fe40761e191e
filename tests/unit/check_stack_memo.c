/* SPDX-License-Identifier: MIT */
/* lib/stack/stack_memo.h: a thread's recent stacks, recognised by the return
 * addresses in their slots.  The stacks here are built by hand in an array:
 * each frame's return address written where a walk said it lies. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "stack/stack_memo.h"

#define FRAMES 12
#define FRAME0 0x1000     /* inside the capturing function */
#define WALKER_RA 0x1111  /* the walk's own first frame: the function that walked */
#define CAPTURE_RA 0x1222 /* and the capture's frame, before frames[1] */

/* A stack in memory: the capture's stack pointer at stack[0]. */
static uintptr_t stack[1 << 17]; /* 1 MiB: room past the memo's 512 KiB reach */

struct fake {
    uintptr_t frames[GL_MEMO_FRAMES + 8];
    unsigned n;
    struct gl_unwind_frame walk[GL_MEMO_FRAMES + 8];
    unsigned nwalk;
    struct gl_memo_key key;
};

/* A stack of n frames whose frame f (>= 1) has return address ret(f) at word
 * words[f] above the capture's stack pointer, and the walk of it. */
static void build(struct fake *s, unsigned n, uintptr_t base_ret, const unsigned *words)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    /* Asked for n frames and got them: the walk did not stop on its own. */
    s->key = (struct gl_memo_key){(uintptr_t)stack, n, 7};
    s->frames[0] = FRAME0;
    /* The walker's frame, inside the capture's; then the capture's.  Frame
     * pointers: rbp used as a plain register (no stack address) unless a test
     * sets them. */
    s->walk[0] = (struct gl_unwind_frame){WALKER_RA, (uintptr_t)stack - 64, 5, 0};
    s->walk[1] = (struct gl_unwind_frame){CAPTURE_RA, (uintptr_t)stack, 5, 0};
    for (unsigned f = 1; f < n; f++) {
        unsigned w = words ? words[f] : 4 * f + 3;
        uintptr_t ret = base_ret + f;
        s->frames[f] = ret;
        stack[w] = ret;
        /* The caller's stack pointer at the call is 8 above its return address. */
        s->walk[f + 1] = (struct gl_unwind_frame){ret, (uintptr_t)&stack[w] + 8, 5, 0};
    }
    s->nwalk = n + 1;
}

static bool learn(struct gl_stack_memo *m, const struct fake *s, uint32_t id)
{
    return gl_stack_memo_learn(m, &s->key, s->frames, s->n, s->walk, s->nwalk, id);
}

/* A lookup of s's key: frames found (0: a miss), their id and the frames. */
static uintptr_t found[GL_MEMO_FRAMES];
static uint32_t found_id;
static unsigned find(struct gl_stack_memo *m, const struct gl_memo_key *key)
{
    found_id = 0;
    return gl_stack_memo_find(m, key, true, found, &found_id);
}

static struct gl_stack_memo *memo;

static void setup(void)
{
    memset(stack, 0, sizeof stack);
    if (!memo)
        memo = gl_stack_memo_new();
    ck_assert_ptr_nonnull(memo);
    gl_stack_memo_clear(memo);
}

START_TEST(test_hit_gives_what_was_learnt)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    ck_assert(gl_stack_memo_may_learn(memo));
    ck_assert(learn(memo, &s, 42));
    ck_assert_uint_eq(find(memo, &s.key), FRAMES);
    ck_assert_uint_eq(found_id, 42);
    for (unsigned f = 0; f < FRAMES; f++)
        ck_assert_uint_eq(found[f], s.frames[f]);
    /* Without need_frames, the id alone; with no id, the frames anyway. */
    uintptr_t out[GL_MEMO_FRAMES] = {0};
    uint32_t id = 0;
    ck_assert_uint_eq(gl_stack_memo_find(memo, &s.key, false, out, &id), FRAMES);
    ck_assert_uint_eq(id, 42);
    ck_assert_uint_eq(out[1], 0);
    gl_stack_memo_clear(memo);
    ck_assert(learn(memo, &s, 0));
    ck_assert_uint_eq(gl_stack_memo_find(memo, &s.key, false, out, &id), FRAMES);
    ck_assert_uint_eq(id, 0);
    ck_assert_uint_eq(out[FRAMES - 1], s.frames[FRAMES - 1]);
}
END_TEST

START_TEST(test_any_changed_slot_misses)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    ck_assert(learn(memo, &s, 42));
    for (unsigned f = 1; f < FRAMES; f++) {
        uintptr_t *slot = &stack[4 * f + 3];
        uintptr_t was = *slot;
        *slot = was + 0x10; /* another call site in the same function */
        ck_assert_msg(find(memo, &s.key) == 0, "frame %u changed, still a hit", f);
        *slot = was;
        ck_assert_uint_ne(find(memo, &s.key), 0);
    }
}
END_TEST

START_TEST(test_key_must_match)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    ck_assert(learn(memo, &s, 42));
    struct gl_memo_key k = s.key;
    k.sp += 16; /* a capture deeper or shallower: its slots are elsewhere */
    ck_assert_uint_eq(find(memo, &k), 0);
    k = s.key;
    k.want++; /* asked the unwinder for more frames: another answer */
    ck_assert_uint_eq(find(memo, &k), 0);
    k = s.key;
    k.generation++; /* modules loaded or unloaded since: roles may differ */
    ck_assert_uint_eq(find(memo, &k), 0);
    ck_assert_uint_ne(find(memo, &s.key), 0);
}
END_TEST

START_TEST(test_two_stacks_one_stack_pointer)
{
    struct fake a, b;
    build(&a, FRAMES, 0x9000, NULL);
    ck_assert(learn(memo, &a, 1));
    build(&b, FRAMES, 0xa000, NULL); /* the same slots, other return addresses */
    ck_assert_uint_eq(find(memo, &b.key), 0);
    ck_assert(learn(memo, &b, 2));
    ck_assert_uint_ne(find(memo, &b.key), 0);
    ck_assert_uint_eq(found_id, 2);
    build(&a, FRAMES, 0x9000, NULL); /* the stack goes back to the first one */
    ck_assert_uint_ne(find(memo, &a.key), 0);
    ck_assert_uint_eq(found_id, 1);
}
END_TEST

START_TEST(test_refuses_what_it_cannot_check)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    stack[4 * 5 + 3] = 0x4242; /* frame 5's return address is not in its slot: a signal frame */
    ck_assert(!learn(memo, &s, 1));
    ck_assert_uint_eq(find(memo, &s.key), 0);

    build(&s, FRAMES, 0x9000, NULL);
    s.walk[6].ip = 0x4343; /* the frame-by-frame walk disagrees with unw_backtrace */
    ck_assert(!learn(memo, &s, 1));

    build(&s, FRAMES, 0x9000, NULL);
    s.nwalk = FRAMES - 1; /* the walk stopped early */
    ck_assert(!learn(memo, &s, 1));

    build(&s, FRAMES, 0x9000, NULL);
    s.frames[1] = 0x7777; /* the walk never reaches the capture's caller */
    ck_assert(!learn(memo, &s, 1));

    unsigned words[FRAMES];
    for (unsigned f = 0; f < FRAMES; f++)
        words[f] = f < 8 ? 4 * f + 3 : 0x10000 + f; /* past 512 KiB from the capture */
    build(&s, FRAMES, 0x9000, words);
    ck_assert(!learn(memo, &s, 1));

    build(&s, FRAMES, 0x9000, NULL);
    s.walk[4].sp = (uintptr_t)stack - 64; /* a slot below the capture's stack pointer */
    ck_assert(!learn(memo, &s, 1));

    build(&s, FRAMES, 0x9000, NULL);
    s.walk[4].fp = (uintptr_t)&stack[100]; /* a frame pointer into the stack ... */
    s.walk[4].fp_at = 0;                   /* ... in no memory the walk knew */
    ck_assert(!learn(memo, &s, 1));

    build(&s, FRAMES, 0x9000, NULL);
    /* A signal trampoline: the next frame was interrupted, and its return
     * address slot may hold the address it had just returned to. */
    s.walk[6].signal = 1;
    ck_assert(!learn(memo, &s, 1));

    struct gl_stack_memo_counts c = {0};
    gl_stack_memo_add_counts(memo, &c);
    ck_assert_uint_eq(c.refused, 8);
    ck_assert_uint_eq(c.hits, 0);
}
END_TEST

/* Frame f (raw index) uses its frame pointer the usual way: it points 16
 * below the caller's stack pointer, and the frame inside it saved it. */
static void give_frame_pointer(struct fake *s, unsigned f, unsigned saved_word)
{
    struct gl_unwind_frame *w = &s->walk[f + 1];
    w->fp = s->walk[f + 2].sp - 16;
    w->fp_at = (uintptr_t)&stack[saved_word];
    stack[saved_word] = w->fp;
}

START_TEST(test_frame_pointers_are_checked)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    give_frame_pointer(&s, 3, 2);
    give_frame_pointer(&s, 6, 20);
    ck_assert(learn(memo, &s, 9));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    /* Every return address where it was, but a frame pointer elsewhere: the
     * frame has another size this time, its caller's return address may lie
     * elsewhere too. */
    stack[20] += 64;
    ck_assert_uint_eq(find(memo, &s.key), 0);
    stack[20] -= 64;
    stack[2] -= 32;
    ck_assert_uint_eq(find(memo, &s.key), 0);
    stack[2] += 32;
    ck_assert_uint_ne(find(memo, &s.key), 0);
}
END_TEST

/* A prefix lookup checks the slots that place its frames and no others: a
 * change further out leaves it a hit, one inside makes it a miss. */
START_TEST(test_prefix_checks_its_frames_only)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    give_frame_pointer(&s, 3, 2); /* places frame 4 */
    ck_assert(learn(memo, &s, 0));
    uintptr_t out[GL_MEMO_FRAMES];
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 4, out), 4);
    for (unsigned f = 0; f < 4; f++)
        ck_assert_uint_eq(out[f], s.frames[f]);
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 1, out), 1);
    ck_assert_uint_eq(out[0], FRAME0);
    /* Past the stack's end: the whole stack, and no more. */
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, FRAMES + 5, out), FRAMES);
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 0, out), 0);

    uintptr_t *slot = &stack[4 * 8 + 3]; /* frame 8's return address */
    *slot += 0x10;
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 8, out), 8);
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 9, out), 0);
    ck_assert_uint_eq(find(memo, &s.key), 0);
    *slot -= 0x10;
    /* Frame 3's frame pointer places frame 4, not frame 3. */
    stack[2] += 64;
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 4, out), 4);
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 5, out), 0);
    stack[2] -= 64;
    ck_assert_uint_eq(gl_stack_memo_find_prefix(memo, &s.key, 5, out), 5);
    for (unsigned f = 1; f < FRAMES; f++) {
        uintptr_t *ra = &stack[4 * f + 3];
        *ra += 0x10;
        for (unsigned limit = 2; limit <= FRAMES; limit++)
            ck_assert_msg((gl_stack_memo_find_prefix(memo, &s.key, limit, out) != 0) ==
                              (limit <= f),
                          "frame %u changed, prefix of %u", f, limit);
        *ra -= 0x10;
    }
}
END_TEST

START_TEST(test_other_frame_pointer_values_are_not)
{
    /* rbp holding a count or a heap pointer, saved on the stack: each call
     * saves another value, and the stack is the same. */
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    s.walk[4].fp = 12345;
    s.walk[4].fp_at = (uintptr_t)&stack[2];
    stack[2] = 12345;
    ck_assert(learn(memo, &s, 9));
    stack[2] = 777;
    ck_assert_uint_ne(find(memo, &s.key), 0);
}
END_TEST

START_TEST(test_realigned_frame)
{
    /* GCC's realigned frame: rbp is not 16 below the caller's stack pointer;
     * the frame finds its caller through the word below rbp. */
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    struct gl_unwind_frame *w = &s.walk[5]; /* frame 4: stack[20..24) */
    w->fp = w->sp + 8;                      /* stack[21]: not 16 below the caller's */
    w->fp_at = (uintptr_t)&stack[2];
    stack[2] = w->fp;
    uintptr_t *drap = (uintptr_t *)(w->fp - 8);
    *drap = s.walk[6].sp; /* the caller's stack pointer, kept in the frame */
    ck_assert(learn(memo, &s, 9));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    *drap += 16;
    ck_assert_uint_eq(find(memo, &s.key), 0);
}
END_TEST

/* Learn stack number i: its own stack pointer, so that each is its own entry. */
static void learn_nth(unsigned i, struct fake *s)
{
    build(s, 6, 0x10000 * (i + 1), NULL);
    s->key.sp -= 16 * (i + 1); /* the same slots, seen from another stack pointer */
    ck_assert(learn(memo, s, i + 1));
}

START_TEST(test_inherited_frame_pointer)
{
    /* A frame without a frame pointer of its own runs with its caller's rbp:
     * the word below it is the caller's (an -O0 loop counter), not a DRAP. */
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    struct gl_unwind_frame *w = &s.walk[5]; /* frame 4: stack[20..24) */
    w->fp = s.walk[6].sp + 8;               /* inside frame 5 */
    w->fp_at = (uintptr_t)&stack[2];
    stack[2] = w->fp;
    stack[24] = 0; /* the word below it */
    ck_assert(learn(memo, &s, 9));
    for (int k = 1; k < 4; k++) {
        stack[24] = (uintptr_t)k; /* the counter moves: the same stack */
        ck_assert_uint_ne(find(memo, &s.key), 0);
    }
}
END_TEST

START_TEST(test_stack_that_ended_early)
{
    /* Fewer frames than asked for: the walk stopped on its own, maybe by the
     * last frame's frame pointer (0 at the bottom of a frame-pointer chain). */
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    s.key.want = FRAMES + 10;
    ck_assert(!learn(memo, &s, 1)); /* its frame pointer lies nowhere known */
    s.walk[FRAMES].fp = 0;
    s.walk[FRAMES].fp_at = (uintptr_t)&stack[3];
    stack[3] = 0;
    ck_assert(learn(memo, &s, 1));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    stack[3] = (uintptr_t)&stack[200]; /* now a chain to follow: a longer stack */
    ck_assert_uint_eq(find(memo, &s.key), 0);
}
END_TEST

START_TEST(test_refused_learn_evicts_nothing)
{
    struct fake s[GL_MEMO_ENTRIES], bad;
    for (unsigned i = 0; i < GL_MEMO_ENTRIES; i++)
        learn_nth(i, &s[i]);
    build(&bad, FRAMES, 0x9000, NULL);
    bad.walk[6].signal = 1;
    ck_assert(!learn(memo, &bad, 1));
    for (unsigned i = 0; i < GL_MEMO_ENTRIES; i++) {
        build(&s[i], 6, 0x10000 * (i + 1), NULL);
        s[i].key.sp -= 16 * (i + 1);
        ck_assert_msg(find(memo, &s[i].key) != 0, "stack %u lost to a refused learn", i);
    }
}
END_TEST

/* A stack of n frames over two pages mapped here: frames 1..in_first in the
 * first page, the rest in the second (the page a test then takes away, as a
 * coroutine's stack is unmapped and a smaller one sits where the capture's
 * frame was).  Returns the mapping, 2 pages long. */
static char *two_page_stack(struct fake *s, unsigned n, unsigned in_first, long page)
{
    char *mem =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(mem, MAP_FAILED);
    uintptr_t *words = (uintptr_t *)mem;
    unsigned per_page = (unsigned)page / 8;
    memset(s, 0, sizeof *s);
    s->n = n;
    s->key = (struct gl_memo_key){(uintptr_t)mem, n, 7};
    s->frames[0] = FRAME0;
    s->walk[0] = (struct gl_unwind_frame){WALKER_RA, (uintptr_t)mem - 64, 5, 0, 0};
    s->walk[1] = (struct gl_unwind_frame){CAPTURE_RA, (uintptr_t)mem, 5, 0, 0};
    for (unsigned f = 1; f < n; f++) {
        unsigned w = f <= in_first ? 8 * f : per_page + 8 * f;
        s->frames[f] = 0x9000 + f;
        words[w] = s->frames[f];
        s->walk[f + 1] = (struct gl_unwind_frame){s->frames[f], (uintptr_t)&words[w] + 8, 5, 0, 0};
    }
    s->nwalk = n + 1;
    return mem;
}

START_TEST(test_reads_stop_at_the_first_mismatch)
{
    /* Frames 1..5 in one page, 6.. in the next; the next page goes away and
     * frame 3 differs: the lookup must stop there, inside the live frames,
     * before it reaches the missing page. */
    long page = sysconf(_SC_PAGESIZE);
    struct fake s;
    char *mem = two_page_stack(&s, 10, 5, page);
    uintptr_t *words = (uintptr_t *)mem;
    ck_assert(learn(memo, &s, 3));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    words[8 * 3] += 16;
    ck_assert_int_eq(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
    ck_assert_uint_eq(find(memo, &s.key), 0); /* a fault here ends the test */
    munmap(mem, 2 * (size_t)page);
}
END_TEST

START_TEST(test_frame_pointer_compared_before_the_next_frame)
{
    /* Frame 3 finds its caller by its frame pointer; frames 4.. lie in the
     * next page.  Its frame pointer changed (the frame has another size now)
     * and the next page went away: the lookup must stop at the frame pointer,
     * before it reads frame 4's slot where the old size put it. */
    long page = sysconf(_SC_PAGESIZE);
    struct fake s;
    char *mem = two_page_stack(&s, 8, 3, page);
    uintptr_t *words = (uintptr_t *)mem;
    struct gl_unwind_frame *w3 = &s.walk[4];
    w3->fp = s.walk[5].sp - 16;       /* the usual frame: 16 below its caller's stack pointer */
    w3->fp_at = (uintptr_t)&words[2]; /* saved by a frame it called, in the first page */
    words[2] = w3->fp;
    ck_assert(learn(memo, &s, 3));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    words[2] -= 64;
    ck_assert_int_eq(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
    ck_assert_uint_eq(find(memo, &s.key), 0); /* a fault here ends the test */
    munmap(mem, 2 * (size_t)page);
}
END_TEST

START_TEST(test_longest_stack)
{
    struct fake s;
    build(&s, GL_MEMO_FRAMES, 0x9000, NULL);
    ck_assert(learn(memo, &s, 5));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    build(&s, GL_MEMO_FRAMES + 1, 0xb000, NULL);
    ck_assert(!learn(memo, &s, 6));
}
END_TEST

START_TEST(test_eviction_keeps_what_is_used)
{
    struct fake s[GL_MEMO_ENTRIES + 1];
    for (unsigned i = 0; i < GL_MEMO_ENTRIES; i++)
        learn_nth(i, &s[i]);
    /* All 32 are there: each rebuilt (its slots rewritten) and found. */
    for (unsigned i = 0; i < GL_MEMO_ENTRIES; i++) {
        build(&s[i], 6, 0x10000 * (i + 1), NULL);
        s[i].key.sp -= 16 * (i + 1);
        ck_assert_msg(find(memo, &s[i].key) != 0, "stack %u lost", i);
    }
    /* Every entry was used since the clock's hand passed: it clears them all,
     * comes round, and takes the first; using it again moves the victim on. */
    learn_nth(GL_MEMO_ENTRIES, &s[GL_MEMO_ENTRIES]);
    build(&s[0], 6, 0x10000, NULL);
    s[0].key.sp -= 16;
    ck_assert_uint_eq(find(memo, &s[0].key), 0);
    build(&s[2], 6, 0x30000, NULL);
    s[2].key.sp -= 48;
    ck_assert_uint_ne(find(memo, &s[2].key), 0); /* referenced again */
    struct fake extra;
    learn_nth(GL_MEMO_ENTRIES + 1, &extra); /* takes entry 1 (unreferenced), not 2 */
    build(&s[2], 6, 0x30000, NULL);
    s[2].key.sp -= 48;
    ck_assert_uint_ne(find(memo, &s[2].key), 0);
    build(&s[1], 6, 0x20000, NULL);
    s[1].key.sp -= 32;
    ck_assert_uint_eq(find(memo, &s[1].key), 0);
}
END_TEST

START_TEST(test_budget)
{
    /* A fresh memo may walk 2 * GL_MEMO_ENTRIES times; then each walk must be
     * paid for by GL_MEMO_LEARN_COST hits, or by eight times as many misses
     * left unwalked. */
    struct fake s;
    unsigned walks = 0;
    while (gl_stack_memo_may_learn(memo)) {
        learn_nth(walks % 8, &s);
        walks++;
        ck_assert_uint_le(walks, 1000);
    }
    ck_assert_uint_eq(walks, 2 * GL_MEMO_ENTRIES); /* and one "no": an eighth */
    for (unsigned h = 0; h < GL_MEMO_LEARN_COST - 1; h++)
        ck_assert_uint_ne(find(memo, &s.key), 0); /* 63 hits and 2 eighths */
    ck_assert(!gl_stack_memo_may_learn(memo));
    ck_assert_uint_ne(find(memo, &s.key), 0);
    ck_assert(gl_stack_memo_may_learn(memo));
    learn_nth(3, &s); /* 514 - 512: 2 eighths left */
    unsigned no = 0;
    while (!gl_stack_memo_may_learn(memo))
        no++;
    ck_assert_uint_eq(no, 8 * GL_MEMO_LEARN_COST - 2);

    struct gl_stack_memo_counts c = {0};
    gl_stack_memo_add_counts(memo, &c);
    ck_assert_uint_eq(c.walks, 2 * GL_MEMO_ENTRIES + 1);
    ck_assert_uint_eq(c.hits, GL_MEMO_LEARN_COST);
    ck_assert_uint_eq(c.skipped, 2 + no);
}
END_TEST

START_TEST(test_clear)
{
    struct fake s;
    build(&s, FRAMES, 0x9000, NULL);
    ck_assert(learn(memo, &s, 42));
    gl_stack_memo_clear(memo);
    ck_assert_uint_eq(find(memo, &s.key), 0);
}
END_TEST

static Suite *stack_memo_suite(void)
{
    Suite *s = suite_create("stack_memo");
    TCase *tc = tcase_create("memo");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_hit_gives_what_was_learnt);
    tcase_add_test(tc, test_any_changed_slot_misses);
    tcase_add_test(tc, test_key_must_match);
    tcase_add_test(tc, test_two_stacks_one_stack_pointer);
    tcase_add_test(tc, test_refuses_what_it_cannot_check);
    tcase_add_test(tc, test_frame_pointers_are_checked);
    tcase_add_test(tc, test_prefix_checks_its_frames_only);
    tcase_add_test(tc, test_other_frame_pointer_values_are_not);
    tcase_add_test(tc, test_realigned_frame);
    tcase_add_test(tc, test_inherited_frame_pointer);
    tcase_add_test(tc, test_stack_that_ended_early);
    tcase_add_test(tc, test_refused_learn_evicts_nothing);
    tcase_add_test(tc, test_reads_stop_at_the_first_mismatch);
    tcase_add_test(tc, test_frame_pointer_compared_before_the_next_frame);
    tcase_add_test(tc, test_longest_stack);
    tcase_add_test(tc, test_eviction_keeps_what_is_used);
    tcase_add_test(tc, test_budget);
    tcase_add_test(tc, test_clear);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(stack_memo_suite)
