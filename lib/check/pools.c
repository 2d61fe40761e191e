#include "check/pools.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/event.h"
#include "base/tool.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int gl_pools_settle(struct gl_block_info *blocks, size_t n)
{
    size_t npools = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].flags & GL_BLK_POOL)
            npools++;
    if (npools == 0)
        return 0;
    /* (pool key, index) pairs sorted by key: each sub-allocation finds its pool
     * by binary search. */
    size_t bytes = npools * 2 * sizeof(uint64_t);
    uint64_t *idx = gl_tool_map(bytes);
    if (!idx)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].flags & GL_BLK_POOL) {
            idx[2 * k] = blocks[i].key;
            idx[2 * k + 1] = i;
            k++;
        }
    qsort(idx, npools, 2 * sizeof(uint64_t), cmp_u64);
    for (size_t i = 0; i < n; i++) {
        if (blocks[i].kind != GL_MEM_POOL_SUB)
            continue;
        const uint64_t *p = bsearch(&blocks[i].aux, idx, npools, 2 * sizeof(uint64_t), cmp_u64);
        if (!p)
            continue; /* the pool went away while the snapshot was taken */
        struct gl_block_info *pool = &blocks[p[1]];
        pool->size = pool->size > blocks[i].size ? pool->size - blocks[i].size : 0;
    }
    gl_tool_unmap(idx, bytes);
    return 0;
}

/* Names: few pools, rarely named; a list under a lock is plenty. */
struct pool_name {
    uint64_t key;
    char name[64];
    struct pool_name *next;
};

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_name *names;

void gl_pools_set_name(uint64_t pool_key, const char *name)
{
    pthread_mutex_lock(&names_lock);
    struct pool_name **pp = &names;
    while (*pp && (*pp)->key != pool_key)
        pp = &(*pp)->next;
    if (!name || !name[0]) {
        if (*pp) {
            struct pool_name *dead = *pp;
            *pp = dead->next;
            gl_tool_free(dead, sizeof *dead);
        }
    } else {
        struct pool_name *p = *pp;
        if (!p && (p = gl_tool_alloc(sizeof *p)) != NULL) {
            p->key = pool_key;
            p->next = names;
            names = p;
        }
        if (p)
            snprintf(p->name, sizeof p->name, "%s", name);
    }
    pthread_mutex_unlock(&names_lock);
}

bool gl_pools_name(uint64_t pool_key, char *buf, size_t len)
{
    bool found = false;
    pthread_mutex_lock(&names_lock);
    for (struct pool_name *p = names; p; p = p->next)
        if (p->key == pool_key) {
            snprintf(buf, len, "%s", p->name);
            found = true;
            break;
        }
    pthread_mutex_unlock(&names_lock);
    return found;
}

void gl_pools_prune_names(const struct gl_block_info *blocks, size_t n)
{
    pthread_mutex_lock(&names_lock);
    struct pool_name **pp = &names;
    while (*pp) {
        bool alive = false;
        for (size_t i = 0; i < n && !alive; i++)
            alive = blocks[i].key == (*pp)->key && (blocks[i].flags & GL_BLK_POOL);
        if (alive) {
            pp = &(*pp)->next;
        } else {
            struct pool_name *dead = *pp;
            *pp = dead->next;
            gl_tool_free(dead, sizeof *dead);
        }
    }
    pthread_mutex_unlock(&names_lock);
}

void gl_pools_reset(void)
{
    pthread_mutex_lock(&names_lock);
    while (names) {
        struct pool_name *dead = names;
        names = dead->next;
        gl_tool_free(dead, sizeof *dead);
    }
    pthread_mutex_unlock(&names_lock);
}

void gl_pools_after_fork_child(void)
{
    /* Another thread may have held the lock at fork: it is gone in the child. */
    pthread_mutex_init(&names_lock, NULL);
}
