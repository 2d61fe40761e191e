/* SPDX-License-Identifier: MIT */
#include "check/pools.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/search.h"
#include "common/sort.h"
#include "common/util.h"
#include "event/event.h"
#include "base/tool.h"

/* A pool's key and its index among the blocks. */
struct pool_at {
    uint64_t key, index;
};

#define BY_KEY(a, b) ((a)->key < (b)->key)
GL_SORT_DEFINE(sort_pools, struct pool_at, BY_KEY)

int gl_pools_settle(struct gl_block_info *blocks, size_t n)
{
    size_t npools = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].flags & GL_BLK_POOL)
            npools++;
    if (npools == 0)
        return 0;
    /* Pools sorted by key: each sub-allocation finds its pool by binary search. */
    size_t bytes = npools * sizeof(struct pool_at);
    struct pool_at *idx = gl_tool_map(bytes);
    if (!idx)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].flags & GL_BLK_POOL)
            idx[k++] = (struct pool_at){blocks[i].key, i};
    sort_pools(idx, npools);
    GL_ASSERT(GL_SEARCH_IS_SORTED(idx, npools, key), "pools sorted by key");
    for (size_t i = 0; i < n; i++) {
        if (blocks[i].kind != GL_MEM_POOL_SUB)
            continue;
        size_t p = GL_SEARCH_LOWER_BOUND(idx, npools, key, blocks[i].aux);
        if (p == npools || idx[p].key != blocks[i].aux)
            continue; /* the pool went away while the snapshot was taken */
        struct gl_block_info *pool = &blocks[idx[p].index];
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
