/* SPDX-License-Identifier: MIT */
#include "python/py_code.h"

#include <stdatomic.h>
#include <string.h>

#include "base/gl_uthash.h"
#include "base/id_pages.h"
#include "base/spin.h"
#include "base/thread.h"
#include "common/util.h"

struct code_entry {
    UT_hash_handle hh; /* by code address: the newest entry for an address */
    struct gl_py_code_key key;
    uint32_t id;
    size_t bytes; /* of the entry and its copies */
    struct gl_py_code copy;
};

static _Atomic uint32_t next_id = 1;
static _Atomic size_t memory_bytes;
/* Entries by id (up to 2^24 code objects): readers index it without the lock. */
GL_ID_PAGES(by_id, 12, 1u << 12, &memory_bytes);
static gl_spinlock lock = GL_SPINLOCK_INIT;
/* The thread holding lock while it reads a code object (gl_py_code_abandon). */
static _Atomic(struct gl_thread *) lock_owner;
static struct code_entry *by_address;

/* Frames left out because no id could be made; once the ids are spent, no
 * more are tried (each try would take the lock and read the code). */
static _Atomic uint64_t dropped;
static _Atomic bool ids_spent;

/* One allocation holds the entry, its two strings and its table.  Called with
 * the lock held. */
static struct code_entry *make(const struct gl_py_code_key *k, const struct gl_py_code *src)
{
    size_t flen = src->file ? strlen(src->file) : 0,
           nlen = src->function ? strlen(src->function) : 0;
    size_t size = sizeof(struct code_entry) + flen + 1 + nlen + 1 + src->table_len;
    struct code_entry *e = gl_tool_alloc(size);
    if (!e)
        return NULL;
    char *p = (char *)(e + 1);
    e->key = *k;
    e->bytes = size;
    e->copy = *src;
    e->copy.address = k->code;
    e->copy.file = memcpy(p, src->file ? src->file : "", flen + 1);
    p += flen + 1;
    e->copy.function = memcpy(p, src->function ? src->function : "", nlen + 1);
    p += nlen + 1;
    e->copy.table = src->table_len ? memcpy(p, src->table, src->table_len) : NULL;
    e->id = atomic_load_explicit(&next_id, memory_order_relaxed);
    if (!gl_id_pages_put(&by_id, e->id, e)) {
        if (gl_id_pages_full(&by_id, e->id))
            atomic_store_explicit(&ids_spent, true, memory_order_relaxed);
        gl_tool_free(e, size);
        return NULL;
    }
    atomic_store_explicit(&next_id, e->id + 1, memory_order_release);
    atomic_fetch_add_explicit(&memory_bytes, size, memory_order_relaxed);
    return e;
}

/* A thread whose cache could not be mapped is marked so, and not retried
 * (a mapping tried per frame would be a system call per frame). */
#define NO_CACHE ((struct gl_py_cache *)1)

GL_HOT struct gl_py_cache *gl_py_code_cache(struct gl_thread *t)
{
    if (!t)
        return NULL;
    if (!t->py_cache) {
        struct gl_py_cache *c = gl_tool_map(sizeof(struct gl_py_cache));
        t->py_cache = c ? c : NO_CACHE;
    }
    return t->py_cache == NO_CACHE ? NULL : t->py_cache;
}

uint32_t gl_py_code_intern_slow(struct gl_py_cache *c, const struct gl_py_code_key *k,
                                gl_py_code_reader read)
{
    unsigned slot = gl_py_code_slot(k->code);
    if (atomic_load_explicit(&ids_spent, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        return 0;
    }

    gl_spin_lock(&lock);
    atomic_store_explicit(&lock_owner, gl_thread_cur, memory_order_relaxed);
    struct code_entry *e = NULL;
    HASH_FIND(hh, by_address, &k->code, sizeof k->code, e);
    if (!e || !gl_py_code_same(&e->key, k)) {
        /* New, or its address now holds another code object. */
        char scratch[1024];
        struct gl_py_code src = {0};
        struct code_entry *fresh = read(k, &src, scratch, sizeof scratch) ? make(k, &src) : NULL;
        if (fresh) {
            if (e)
                HASH_DELETE(hh, by_address, e); /* stays reachable by its id */
            HASH_ADD(hh, by_address, key.code, sizeof fresh->key.code, fresh);
        }
        e = fresh;
    }
    uint32_t id = e ? e->id : 0;
    atomic_store_explicit(&lock_owner, NULL, memory_order_relaxed);
    gl_spin_unlock(&lock);
    if (!id)
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
    if (c && id) {
        /* Untrusted first (python/py_watch.h): a signal handler's walk on
         * this thread meanwhile must not take the old object's answers for
         * the new key's. */
        c->slot[slot].epoch = 0;
        atomic_signal_fence(memory_order_seq_cst);
        c->slot[slot].key = *k;
        c->slot[slot].id = id;
    }
    return id;
}

uint32_t gl_py_code_synthetic(const char *file, const char *function, int line)
{
    /* Keyed by a made-up address no code object has: one entry per (file,
     * function, line) is what the caller's own cache is for. */
    struct gl_py_code src = {
        .file = file, .function = function, .firstlineno = line, .format = GL_PY_CODE_FIXED_LINE};
    struct gl_py_code_key k = {.firstlineno = line};
    gl_spin_lock(&lock);
    struct code_entry *e = make(&k, &src);
    gl_spin_unlock(&lock);
    return e ? e->id : 0;
}

uint32_t gl_py_code_restore(const struct gl_py_code *src)
{
    struct gl_py_code_key k = {.code = src->address, .firstlineno = src->firstlineno};
    gl_spin_lock(&lock);
    struct code_entry *e = make(&k, src);
    gl_spin_unlock(&lock);
    return e ? e->id : 0;
}

const struct gl_py_code *gl_py_code_get(uint32_t id)
{
    if (id == 0 || id >= atomic_load_explicit(&next_id, memory_order_acquire))
        return NULL;
    struct code_entry *e = gl_id_pages_get(&by_id, id);
    return e ? &e->copy : NULL;
}

unsigned gl_py_code_count(void) { return atomic_load(&next_id) - 1; }

uint64_t gl_py_code_dropped(void) { return atomic_load(&dropped); }

size_t gl_py_code_memory_bytes(void) { return atomic_load(&memory_bytes); }

void gl_py_code_abandon(void)
{
    struct gl_thread *self = gl_thread_cur;
    if (self && atomic_load_explicit(&lock_owner, memory_order_relaxed) == self) {
        /* The fault struck while reading the code object, before any change to
         * the table (the entry made, if any, is lost: tool memory, not state). */
        atomic_store_explicit(&lock_owner, NULL, memory_order_relaxed);
        gl_spin_unlock(&lock);
    }
}

void gl_py_code_after_fork_child(void)
{
    atomic_store(&lock_owner, NULL);
    gl_spin_reset(&lock);
}
