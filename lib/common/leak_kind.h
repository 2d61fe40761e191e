/* SPDX-License-Identifier: MIT */
/* Leak kinds: how an outstanding block at a leak check is classified.
 * Shared by option parsing (--show-leak-kinds), the leak check and the report. */
#ifndef GPULEAK_LEAK_KIND_H
#define GPULEAK_LEAK_KIND_H

enum gl_leak_kind {
    GL_LEAK_DEFINITE,  /* no pointer to the block anywhere the program can reach */
    GL_LEAK_INDIRECT,  /* only pointed to from inside other lost blocks */
    GL_LEAK_POSSIBLE,  /* only interior pointers */
    GL_LEAK_REACHABLE, /* a pointer to its start is still held */
    GL_LEAK_CACHED,    /* held by a pool or a framework's caching allocator */
    GL_LEAK_DEATH,     /* live when the process died: a saved log of a process that never
                          reached its exit check (no memory image, so no reachability) */
    GL_LEAK_NKINDS
};

#define GL_LEAK_KIND_BIT(k) (1u << (k))
#define GL_LEAK_KINDS_ALL ((1u << GL_LEAK_NKINDS) - 1)

/* Option spelling: "definite", "indirect", "possible", "reachable", "cached",
 * "death". */
const char *gl_leak_kind_option_name(enum gl_leak_kind k);
/* Report phrase: "definitely lost", ..., "still reachable", "cached", "live at
 * death" (as in "N bytes in M blocks are live at death in loss record ..."). */
const char *gl_leak_kind_phrase(enum gl_leak_kind k);

/* A set of kinds as --show-leak-kinds and match-leak-kinds: spell it:
 * "definite,possible", "all" or "none".  Returns 0, or -1 if text is empty or
 * not such a set. */
int gl_leak_kind_parse_set(const char *text, unsigned *out);

#endif
