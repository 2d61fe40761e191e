/* SPDX-License-Identifier: MIT */
/* Suppression files in Valgrind's grammar: reading, matching, and generating
 * entries, in one module with one data structure (Valgrind's m_errormgr.c is the
 * model).
 *
 *   {
 *      name (any text)
 *      gpuleak:Leak                 TOOL[,TOOL...]:KIND
 *      match-leak-kinds: definite   optional, for Leak and Cached entries
 *      fun:cudaMalloc               up to 24 frame lines: fun:NAME (demangled or
 *      obj:*libcublas.so*           mangled), obj:PATH, src:FILE[:LINE], or ...
 *      ...                          (any number of frames, none included);
 *   }                               NAME, PATH and FILE may use * and ? globs
 *
 * Lines are trimmed; blank lines and lines starting with '#' are comments.
 * Entries for other tools (Memcheck:Param with its extra line, Helgrind:Race,
 * drd:ConflictingAccess...) are skipped to their '}', so the files real projects
 * ship for Valgrind load as they are.  gpuleak's kinds:
 *   Leak    the matching loss records are suppressed
 *   Cached  the matching loss records are classified as cached
 *   InvalidFree, DoubleFree, MismatchedFree, InvalidRange, FreedRange,
 *   OutOfMemory (common/error_kind.h)
 *           the matching API errors are suppressed (matched against the
 *           stack where the error happened)
 *
 * Used by the launcher (to reject a bad file before the program runs) and by the
 * runtime at report time; both may allocate with malloc. */
#ifndef GPULEAK_SUPPRESSIONS_H
#define GPULEAK_SUPPRESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"

#define GL_SUPP_TOOL "gpuleak"
#define GL_SUPP_MAX_FRAMES 24

enum gl_supp_kind { GL_SUPP_LEAK, GL_SUPP_CACHED, GL_SUPP_ERROR };

enum gl_supp_frame_type { GL_SF_FUN, GL_SF_OBJ, GL_SF_SRC, GL_SF_ANY /* ... */ };

struct gl_supp_frame {
    enum gl_supp_frame_type type;
    char *pattern; /* glob; for src: the file part */
    int line;      /* src: line, 0 for any */
};

struct gl_supp {
    char *name;
    const char *file; /* the file it came from (owned by the set) */
    int line;         /* of its '{' */
    enum gl_supp_kind kind;
    unsigned error_kind; /* GL_SUPP_ERROR: enum gl_error_kind */
    unsigned leak_kinds; /* GL_LEAK_KIND_BIT set; all when no match-leak-kinds line */
    unsigned nframes;
    struct gl_supp_frame frames[GL_SUPP_MAX_FRAMES];
    /* What it suppressed in this run, for -v and the XML suppcounts. */
    uint64_t count, bytes, blocks;
};

struct gl_supp_set {
    struct gl_supp *v; /* gpuleak's entries, in file order */
    size_t n, cap;
    size_t other_tools; /* entries of other tools, read and ignored */
    char **files;
    size_t nfiles;
};

void gl_suppressions_set_init(struct gl_supp_set *s);
void gl_suppressions_set_free(struct gl_supp_set *s);

/* Read a file, adding gpuleak's entries to s.  Returns 0, or -1 with one line
 * "FILE:LINE: error: ..." in err (s keeps the entries read before the error). */
int gl_suppressions_load_file(struct gl_supp_set *s, const char *path, char *err, size_t errlen);

/* The same from memory; name is what errors call the file. */
int gl_suppressions_load_text(struct gl_supp_set *s, const char *text, size_t len, const char *name,
                              char *err, size_t errlen);

/* Does entry e match this stack (frames innermost first) for a record of leak
 * kind k?  Frames past the entry's last line do not matter, as in Valgrind. */
bool gl_suppressions_matches(const struct gl_supp *e, const struct gl_frame *frames, unsigned n,
                             unsigned leak_kind);

/* The first entry of the given kind that matches, or NULL. */
struct gl_supp *gl_suppressions_find(struct gl_supp_set *s, enum gl_supp_kind kind,
                                     const struct gl_frame *frames, unsigned n, unsigned leak_kind);

/* The first error entry of that error kind that matches, or NULL. */
struct gl_supp *gl_suppressions_find_error(struct gl_supp_set *s, unsigned error_kind,
                                           const struct gl_frame *frames, unsigned n);

/* Valgrind's glob: '*' any run of characters, '?' one character, '\' quotes the
 * next one. */
bool gl_suppressions_glob_match(const char *pattern, const char *text);

/* A ready-to-paste entry that suppresses exactly a record with these frames and
 * leak kind: one fun: line per frame (the symbol as in the object), obj: where
 * the function is unknown, obj:* where nothing is.  Returns the length written
 * (truncated to buflen like snprintf). */
size_t gl_suppressions_generate(char *buf, size_t buflen, const struct gl_frame *frames, unsigned n,
                                unsigned leak_kind);
/* The same for an API error of that kind (no match-leak-kinds line). */
size_t gl_suppressions_generate_error(char *buf, size_t buflen, const struct gl_frame *frames,
                                      unsigned n, unsigned error_kind);
/* Either entry whole, whatever its length, in malloc'ed memory (free it), its
 * length in *len; NULL if memory ran out.  error_kind 0 (GL_ERR_NONE): a leak
 * record's entry, of leak_kind. */
char *gl_suppressions_entry(const struct gl_frame *frames, unsigned n, unsigned error_kind,
                            unsigned leak_kind, size_t *len);

#endif
