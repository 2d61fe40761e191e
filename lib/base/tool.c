/* SPDX-License-Identifier: MIT */
#include "base/tool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic size_t mapped_bytes;

void *gl_tool_map(size_t size)
{
    size = gl_tool_page_round(size);
    /* The system call itself, not mmap(): the runtime interposes mmap (heap/hooks.c),
     * and the tool's own memory must neither be recorded nor recurse into it. */
    long r =
        syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == -1) /* libc's syscall(): -1 and errno on failure */
        return NULL;
    void *p = (void *)r;
    atomic_fetch_add_explicit(&mapped_bytes, size, memory_order_relaxed);
    return p;
}

void gl_tool_populate(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t off = 0; off < bytes; off += 4096)
        ((volatile char *)p)[off] = 0;
}

void gl_tool_unmap(void *p, size_t size)
{
    if (!p)
        return;
    size = gl_tool_page_round(size);
    syscall(SYS_munmap, p, size);
    atomic_fetch_sub_explicit(&mapped_bytes, size, memory_order_relaxed);
}

size_t gl_tool_mapped_bytes(void)
{
    return atomic_load_explicit(&mapped_bytes, memory_order_relaxed);
}

/* ---- slabs ---- */

#define SLAB_CHUNK (64 * 1024)
#define CHUNK_HEADER 16 /* next chunk, chunk size */

void gl_tool_slab_init(struct gl_slab *s, size_t obj_size)
{
    memset(s, 0, sizeof *s);
    s->obj_size = (obj_size + 15) & ~(size_t)15;
}

void *gl_tool_slab_get(struct gl_slab *s)
{
    void *obj = s->free_list;
    if (obj) {
        s->free_list = *(void **)obj;
        memset(obj, 0, s->obj_size);
        return obj;
    }
    if ((size_t)(s->end - s->cur) < s->obj_size) { /* (no offset to a NULL cur) */
        size_t chunk = s->obj_size > SLAB_CHUNK / 4
                           ? gl_tool_page_round(s->obj_size * 4 + CHUNK_HEADER)
                           : SLAB_CHUNK;
        char *c = gl_tool_map(chunk); /* fresh mmap pages are zero */
        if (!c)
            return NULL;
        s->chunks_bytes += chunk;
        *(void **)c = s->chunks;
        *(size_t *)(c + sizeof(void *)) = chunk;
        s->chunks = c;
        s->cur = c + CHUNK_HEADER;
        s->end = c + chunk;
    }
    obj = s->cur;
    s->cur += s->obj_size;
    return obj;
}

void gl_tool_slab_put(struct gl_slab *s, void *obj)
{
    *(void **)obj = s->free_list;
    s->free_list = obj;
}

void gl_tool_slab_destroy(struct gl_slab *s)
{
    for (char *c = s->chunks; c;) {
        char *next = *(void **)c;
        gl_tool_unmap(c, *(size_t *)(c + sizeof(void *)));
        c = next;
    }
    gl_tool_slab_init(s, s->obj_size);
}

/* ---- size classes: 16, 32, 64, ... 64 KiB, one locked slab each ---- */

#define NCLASSES 13 /* 16 << 12 = 64 KiB */

static struct {
    pthread_mutex_t lock;
    struct gl_slab slab;
    int ready;
} classes[NCLASSES] = {
    [0 ... NCLASSES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

static int class_of(size_t size)
{
    size_t c = 16;
    for (int i = 0; i < NCLASSES; i++, c <<= 1)
        if (size <= c)
            return i;
    return -1;
}

void *gl_tool_alloc(size_t size)
{
    int c = class_of(size);
    if (c < 0)
        return gl_tool_map(size);
    pthread_mutex_lock(&classes[c].lock);
    if (!classes[c].ready) {
        gl_tool_slab_init(&classes[c].slab, (size_t)16 << c);
        classes[c].ready = 1;
    }
    void *p = gl_tool_slab_get(&classes[c].slab);
    pthread_mutex_unlock(&classes[c].lock);
    return p;
}

void gl_tool_free(void *p, size_t size)
{
    if (!p)
        return;
    int c = class_of(size);
    if (c < 0) {
        gl_tool_unmap(p, size);
        return;
    }
    pthread_mutex_lock(&classes[c].lock);
    gl_tool_slab_put(&classes[c].slab, p);
    pthread_mutex_unlock(&classes[c].lock);
}

void gl_tool_after_fork_child(void)
{
    for (int i = 0; i < NCLASSES; i++)
        pthread_mutex_init(&classes[i].lock, NULL);
}
