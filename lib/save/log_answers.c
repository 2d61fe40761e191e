/* SPDX-License-Identifier: MIT */
#include "save/log_answers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "save/log_format.h"
#include "save/log_writer.h"

enum question { Q_COUNT = 1, Q_NAME, Q_POOL, Q_POOL_USAGE, Q_GRAPH, Q_RANGE, Q_END };

/* ---- recording ---- */

static const struct gl_driver_query *real;

static void answer(enum question q, uint64_t arg, uint64_t a, uint64_t b, const char *s)
{
    uint8_t body[4 * GL_LOG_VARINT_MAX + 256];
    size_t n = gl_log_format_put(body, q);
    n += gl_log_format_put(body + n, arg);
    if (s) {
        size_t len = strnlen(s, 255);
        n += gl_log_format_put(body + n, len);
        memcpy(body + n, s, len);
        n += len;
    } else {
        n += gl_log_format_put(body + n, a);
        n += gl_log_format_put(body + n, b);
    }
    gl_log_writer_record(GL_LOG_ANSWER, body, n);
}

static bool rec_count(int *count)
{
    bool ok = real->device_count && real->device_count(count);
    if (ok)
        answer(Q_COUNT, 0, (uint64_t)*count, 0, NULL);
    return ok;
}

static bool rec_name(int device, char *buf, size_t len)
{
    bool ok = real->device_name && real->device_name(device, buf, len);
    if (ok)
        answer(Q_NAME, (uint64_t)device, 0, 0, buf);
    return ok;
}

static bool rec_pool(int device, uint64_t *pool)
{
    bool ok = real->default_pool && real->default_pool(device, pool);
    if (ok)
        answer(Q_POOL, (uint64_t)device, *pool, 0, NULL);
    return ok;
}

static bool rec_pool_usage(uint64_t pool, uint64_t *reserved, uint64_t *used)
{
    bool ok = real->pool_usage && real->pool_usage(pool, reserved, used);
    if (ok)
        answer(Q_POOL_USAGE, pool, *reserved, *used, NULL);
    return ok;
}

static bool rec_graph(int device, uint64_t *reserved, uint64_t *used)
{
    bool ok = real->graph_memory && real->graph_memory(device, reserved, used);
    if (ok)
        answer(Q_GRAPH, (uint64_t)device, *reserved, *used, NULL);
    return ok;
}

static bool rec_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
    bool ok = real->address_range && real->address_range(addr, base, size);
    if (ok)
        answer(Q_RANGE, addr, *base, *size, NULL);
    return ok;
}

/* Contents are not saved: --read has no device to scan. */
static bool rec_read(uint64_t ctx, uint64_t addr, void *buf, size_t len)
{
    return real->read && real->read(ctx, addr, buf, len);
}

static const struct gl_driver_query recorder = {
    .device_count = rec_count,
    .device_name = rec_name,
    .default_pool = rec_pool,
    .pool_usage = rec_pool_usage,
    .graph_memory = rec_graph,
    .address_range = rec_range,
    .read = rec_read,
};

const struct gl_driver_query *gl_log_answers_recorder(const struct gl_driver_query *q)
{
    if (!q)
        return NULL;
    real = q;
    return &recorder;
}

/* ---- reading ---- */

struct entry {
    uint8_t q;
    uint64_t arg, a, b;
    char name[256];
};

struct gl_log_answers {
    struct entry *e;
    size_t n, cap;
};

struct gl_log_answers *gl_log_answers_new(void) { return calloc(1, sizeof(struct gl_log_answers)); }

void gl_log_answers_free(struct gl_log_answers *a)
{
    if (a) {
        free(a->e);
        free(a);
    }
}

bool gl_log_answers_add(struct gl_log_answers *a, const uint8_t *body, size_t n)
{
    struct gl_log_cursor c = {body, body + n, false};
    struct entry e = {0};
    uint64_t q = gl_log_format_get(&c);
    e.arg = gl_log_format_get(&c);
    if (q == Q_NAME) {
        size_t len;
        const uint8_t *s = gl_log_format_get_bytes(&c, &len);
        if (len >= sizeof e.name || memchr(s, 0, len))
            return false;
        memcpy(e.name, s, len);
    } else {
        e.a = gl_log_format_get(&c);
        e.b = gl_log_format_get(&c);
    }
    if (!gl_log_format_done(&c) || q == 0 || q >= Q_END)
        return false;
    e.q = (uint8_t)q;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        struct entry *v = realloc(a->e, cap * sizeof *v);
        if (!v)
            return false;
        a->e = v;
        a->cap = cap;
    }
    a->e[a->n++] = e;
    return true;
}

static const struct gl_log_answers *given;

/* The last answer to (q, arg): a later check's answer is the newer. */
static const struct entry *find(enum question q, uint64_t arg)
{
    for (size_t i = given ? given->n : 0; i-- > 0;)
        if (given->e[i].q == q && given->e[i].arg == arg)
            return &given->e[i];
    return NULL;
}

static bool ans_count(int *count)
{
    const struct entry *e = find(Q_COUNT, 0);
    if (e)
        *count = (int)e->a;
    return e != NULL;
}

static bool ans_name(int device, char *buf, size_t len)
{
    const struct entry *e = find(Q_NAME, (uint64_t)device);
    if (!e || !len)
        return false;
    snprintf(buf, len, "%s", e->name);
    return true;
}

static bool ans_pool(int device, uint64_t *pool)
{
    const struct entry *e = find(Q_POOL, (uint64_t)device);
    if (e)
        *pool = e->a;
    return e != NULL;
}

static bool two(enum question q, uint64_t arg, uint64_t *a, uint64_t *b)
{
    const struct entry *e = find(q, arg);
    if (e) {
        *a = e->a;
        *b = e->b;
    }
    return e != NULL;
}

static bool ans_pool_usage(uint64_t pool, uint64_t *reserved, uint64_t *used)
{
    return two(Q_POOL_USAGE, pool, reserved, used);
}

static bool ans_graph(int device, uint64_t *reserved, uint64_t *used)
{
    return two(Q_GRAPH, (uint64_t)device, reserved, used);
}

static bool ans_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
    return two(Q_RANGE, addr, base, size);
}

static const struct gl_driver_query answering = {
    .device_count = ans_count,
    .device_name = ans_name,
    .default_pool = ans_pool,
    .pool_usage = ans_pool_usage,
    .graph_memory = ans_graph,
    .address_range = ans_range,
};

const struct gl_driver_query *gl_log_answers_query(const struct gl_log_answers *a)
{
    given = a;
    return &answering;
}
