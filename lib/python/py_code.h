/* SPDX-License-Identifier: MIT */
/* Code objects of captured Python frames, copied while they are alive.
 *
 * A frame names its function through a code object, which Python frees at
 * finalization, before C atexit handlers and so before the exit report.  So
 * the first capture that sees a code object copies what a report needs - file
 * name, qualified name, first line and the raw line table - into tool memory
 * and names it by a small id; reports decode lines from the copy
 * (python/py_lines.h).
 *
 * A code object's address may be reused by another once it is freed, so an id
 * is found by the address together with the identity of its file name, name
 * and line table objects and its first line; any difference makes a new id.
 * Each thread keeps a small cache of recent code objects: a hit costs a few
 * loads and compares and no lock. */
#ifndef GPULEAK_PYTHON_CODE_H
#define GPULEAK_PYTHON_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What identifies a live code object: pointers into the interpreter, and a
 * few of its values.  Python's allocator hands a freed block of the same size
 * class to the next object, so a new code object and its new line table often
 * land at the addresses of old ones, with the same file name object: the sizes
 * and the table's first bytes tell them apart (with pointers alone, the review
 * of issue 8 saw captures given another function's lines). */
struct gl_py_code_key {
    uintptr_t code, filename, name, qualname, linetable;
    int64_t table_len;   /* the line table's length in bytes */
    int64_t code_units;  /* 3.11+: Py_SIZE of the code object; 0 before */
    uint64_t table_head; /* its first (up to) 8 bytes */
    int firstlineno;
};

/* What a report needs of it, as copied. */
struct gl_py_code {
    uintptr_t address; /* of the code object when it was seen */
    const char *file, *function;
    int firstlineno;
    int format;                    /* enum gl_py_line_format (python/py_lines.h), or: */
#define GL_PY_CODE_FIXED_LINE (-1) /* a synthetic code: its line is firstlineno */
    const uint8_t *table;
    uint32_t table_len;
};

/* Reads the strings and table of a live code object into *out (pointing into
 * the interpreter's memory, valid until the caller returns); false if they
 * cannot be read. */
typedef bool (*gl_py_code_reader)(const struct gl_py_code_key *k, struct gl_py_code *out,
                                  char *scratch, size_t scratch_len);

/* A thread's recent code objects, direct-mapped by address: a hit costs a few
 * loads and compares and no lock.  In the header so that the walk's hit is
 * inlined into it (a dozen frames a capture). */
#define GL_PY_CACHE_SIZE 256
struct gl_py_cache {
    struct gl_py_cache_slot {
        /* The watcher's epoch (python/py_watch.h) when the key was last
         * read and matched, 0 for none: while the epoch is still that, a
         * live frame naming key.code names this object, and the walk takes
         * id, units and first_traceable without reading it.  First: a
         * trusted walk reads the slot's first line only. */
        uint64_t epoch;
        uint32_t id;             /* 0: empty */
        int32_t first_traceable; /* co_firsttraceable (3.11+) */
        int64_t units;           /* Py_SIZE: code units (3.11+) */
        struct gl_py_code_key key;
    } slot[GL_PY_CACHE_SIZE];
};

/* The calling thread's cache; NULL for no thread, or when none could be
 * mapped.  A walk asks once, not per frame. */
struct gl_thread;
struct gl_py_cache *gl_py_code_cache(struct gl_thread *self);

/* Every field, without a branch each. */
static inline bool gl_py_code_same(const struct gl_py_code_key *a, const struct gl_py_code_key *b)
{
    uint64_t d = (a->code ^ b->code) | (a->filename ^ b->filename) | (a->name ^ b->name) |
                 (a->qualname ^ b->qualname) | (a->linetable ^ b->linetable) |
                 (uint64_t)(a->table_len ^ b->table_len) |
                 (uint64_t)(a->code_units ^ b->code_units) | (a->table_head ^ b->table_head) |
                 (uint32_t)(a->firstlineno ^ b->firstlineno);
    return d == 0;
}

static inline unsigned gl_py_code_slot(uintptr_t code)
{
    return (unsigned)((code >> 4) * 0x9e3779b97f4a7c15ULL >> 56) & (GL_PY_CACHE_SIZE - 1);
}

/* A miss in the thread's cache: the shared table, under its lock. */
uint32_t gl_py_code_intern_slow(struct gl_py_cache *cache, const struct gl_py_code_key *k,
                                gl_py_code_reader read);

/* The id of a live code object (1-based), interning it on first sight with
 * read; 0 if memory or ids ran out (counted: gl_py_code_dropped) or read
 * failed.  cache: the calling thread's (or NULL: every lookup takes the
 * lock).  Thread-safe. */
static inline uint32_t gl_py_code_intern_in(struct gl_py_cache *cache,
                                            const struct gl_py_code_key *k, gl_py_code_reader read)
{
    if (cache) {
        unsigned s = gl_py_code_slot(k->code);
        if (cache->slot[s].id && gl_py_code_same(&cache->slot[s].key, k))
            return cache->slot[s].id;
    }
    return gl_py_code_intern_slow(cache, k, read);
}

/* A code object made up by the caller (a framework's own record of a frame:
 * file, function and line, no table); its line is `line`. */
uint32_t gl_py_code_synthetic(const char *file, const char *function, int line);

/* A copy read back from a saved log (save/log_reader.h): a new id for it. */
uint32_t gl_py_code_restore(const struct gl_py_code *src);

/* The copy of an id; NULL if unknown.  Lock-free: copies are immutable. */
const struct gl_py_code *gl_py_code_get(uint32_t id);

/* After a fault while interning (python_frames.c's guard jumped out of it):
 * release the lock if the calling thread holds it. */
void gl_py_code_abandon(void);

/* In a fork child: the lock may have been held by a thread that is gone. */
void gl_py_code_after_fork_child(void);

/* How many code objects are interned, the tool memory they take, and how many
 * frames were left out of stacks because none could be interned. */
unsigned gl_py_code_count(void);
size_t gl_py_code_memory_bytes(void);
uint64_t gl_py_code_dropped(void);

#endif
