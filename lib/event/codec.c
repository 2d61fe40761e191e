/* SPDX-License-Identifier: MIT */
#include "event/codec.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "event/api.h"

/* ---- binary ---- */

_Static_assert(sizeof(struct gl_event) == GL_CODEC_RECORD, "a record is an event");

static void put(uint8_t **p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        (*p)[i] = (uint8_t)(v >> (8 * i));
    *p += bytes;
}

static uint64_t get(const uint8_t **p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)(*p)[i] << (8 * i);
    *p += bytes;
    return v;
}

void gl_codec_encode(const struct gl_event *ev, uint8_t out[GL_CODEC_RECORD])
{
    uint8_t *p = out;
    put(&p, ev->type, 1);
    put(&p, ev->kind, 1);
    put(&p, ev->api, 2);
    put(&p, (uint16_t)ev->device, 2);
    put(&p, ev->flags, 2);
    put(&p, ev->tid, 4);
    put(&p, ev->stack, 4);
    put(&p, ev->key, 8);
    put(&p, ev->size, 8);
    put(&p, ev->seq, 8);
    put(&p, ev->ctx, 8);
    put(&p, ev->aux, 8);
    put(&p, ev->time_ns, 8);
}

bool gl_codec_decode(const uint8_t in[GL_CODEC_RECORD], struct gl_event *ev)
{
    const uint8_t *p = in;
    ev->type = (uint8_t)get(&p, 1);
    ev->kind = (uint8_t)get(&p, 1);
    ev->api = (uint16_t)get(&p, 2);
    ev->device = (int16_t)(uint16_t)get(&p, 2);
    ev->flags = (uint16_t)get(&p, 2);
    ev->tid = (uint32_t)get(&p, 4);
    ev->stack = (uint32_t)get(&p, 4);
    ev->key = get(&p, 8);
    ev->size = get(&p, 8);
    ev->seq = get(&p, 8);
    ev->ctx = get(&p, 8);
    ev->aux = get(&p, 8);
    ev->time_ns = get(&p, 8);
    return ev->type != GL_EV_NONE && ev->type < GL_EV_NTYPES && ev->kind < GL_MEM_NKINDS;
}

/* ---- names ---- */

static const char *const type_names[GL_EV_NTYPES] = {
    [GL_EV_ALLOC] = "alloc",
    [GL_EV_FREE] = "free",
    [GL_EV_CTX_DESTROY] = "ctx_destroy",
    [GL_EV_VMM_MAP] = "vmm_map",
    [GL_EV_VMM_UNMAP] = "vmm_unmap",
    [GL_EV_VMM_RETAIN] = "vmm_retain",
    [GL_EV_VMM_RELEASE] = "vmm_release",
    [GL_EV_IGNORE] = "ignore",
    [GL_EV_POOL_CREATE] = "pool_create",
    [GL_EV_POOL_DESTROY] = "pool_destroy",
    [GL_EV_ACCESS] = "access",
    [GL_EV_CAPTURE_BEGIN] = "capture_begin",
    [GL_EV_CAPTURE_END] = "capture_end",
    [GL_EV_GRAPH_INSTANTIATE] = "graph_instantiate",
    [GL_EV_GRAPH_LAUNCH] = "graph_launch",
    [GL_EV_GRAPH_DESTROY] = "graph_destroy",
    [GL_EV_GRAPH_EXEC_DESTROY] = "graph_exec_destroy",
    [GL_EV_GRAPH_NODE_ALLOC] = "graph_node_alloc",
    [GL_EV_GRAPH_NODE_FREE] = "graph_node_free",
    [GL_EV_ALLOC_FAILED] = "alloc_failed",
    [GL_EV_OBSERVER_MISMATCH] = "observer_mismatch",
    [GL_EV_EVENT_RECORD] = "event_record",
    [GL_EV_STREAM_WAIT] = "stream_wait",
};

static const char *const kind_names[GL_MEM_NKINDS] = {
    [GL_MEM_NONE] = "none",
    [GL_MEM_DEVICE] = "device",
    [GL_MEM_PITCH] = "pitch",
    [GL_MEM_MANAGED] = "managed",
    [GL_MEM_HOST_PINNED] = "host_pinned",
    [GL_MEM_HOST_REGISTERED] = "host_registered",
    [GL_MEM_ASYNC] = "async",
    [GL_MEM_VMM] = "vmm",
    [GL_MEM_ARRAY] = "array",
    [GL_MEM_MIPMAPPED_ARRAY] = "mipmapped_array",
    [GL_MEM_IPC] = "ipc",
    [GL_MEM_GRAPH] = "graph",
    [GL_MEM_POOL_SUB] = "pool_sub",
    [GL_MEM_POOL_RESERVE] = "pool_reserve",
    [GL_MEM_GRAPH_RESERVE] = "graph_reserve",
};

static const struct {
    uint16_t bit;
    const char *name;
} flag_names[] = {
    {GL_EVF_SIZE_UNKNOWN, "size_unknown"}, {GL_EVF_IMPORTED, "imported"},
    {GL_EVF_IGNORED, "ignored"},           {GL_EVF_FAILED, "failed"},
    {GL_EVF_DERIVED, "derived"},
};

/* Key namespaces (event/key.h) by their top four bits. */
static const char *const ns_names[16] = {
    [GL_NS_VMM_HANDLE] = "vmm",    [GL_NS_ARRAY] = "array",         [GL_NS_MIPMAP] = "mipmap",
    [GL_NS_POOL_SUB] = "pool_sub", [GL_NS_MEMPOOL] = "mempool", [GL_NS_GRAPH_MEMORY] = "graph_memory",
};

const char *gl_codec_type_name(unsigned type)
{
    return type < GL_EV_NTYPES ? type_names[type] : NULL;
}

static int lookup(const char *const *names, size_t n, const char *word, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] && strlen(names[i]) == len && strncmp(names[i], word, len) == 0)
            return (int)i;
    return -1;
}

/* ---- text out ---- */

struct text {
    char *buf;
    size_t len, need;
};

static void emit(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->need < t->len ? t->len - t->need : 0;
    int n = vsnprintf(room ? t->buf + t->need : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->need += (size_t)n;
}

static void emit_key(struct text *t, const char *field, uint64_t v)
{
    const char *ns = ns_names[v >> GL_KEY_NS_SHIFT];
    if (ns)
        emit(t, " %s=%s:0x%" PRIx64, field, ns, gl_key_value(v));
    else
        emit(t, " %s=0x%" PRIx64, field, v);
}

size_t gl_codec_format(const struct gl_event *ev, char *buf, size_t len)
{
    struct text t = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    const char *type = gl_codec_type_name(ev->type);
    if (type)
        emit(&t, "%s", type);
    else
        emit(&t, "type%u", ev->type);
    if (ev->key)
        emit_key(&t, "key", ev->key);
    if (ev->size)
        emit(&t, " size=%" PRIu64, ev->size);
    if (ev->kind)
        emit(&t, " kind=%s", ev->kind < GL_MEM_NKINDS ? kind_names[ev->kind] : "?");
    if (ev->api)
        emit(&t, " api=%s", gl_api_name(ev->api));
    if (ev->device)
        emit(&t, " device=%d", ev->device);
    if (ev->flags) {
        const char *sep = " flags=";
        for (size_t i = 0; i < GL_ARRAY_SIZE(flag_names); i++)
            if (ev->flags & flag_names[i].bit) {
                emit(&t, "%s%s", sep, flag_names[i].name);
                sep = "|";
            }
    }
    if (ev->stack)
        emit(&t, " stack=%" PRIu32, ev->stack);
    if (ev->seq)
        emit(&t, " seq=%" PRIu64, ev->seq);
    if (ev->tid)
        emit(&t, " tid=%" PRIu32, ev->tid);
    if (ev->ctx)
        emit(&t, " ctx=0x%" PRIx64, ev->ctx);
    if (ev->aux)
        emit_key(&t, "aux", ev->aux);
    if (ev->time_ns)
        emit(&t, " time=%" PRIu64, ev->time_ns);
    return t.need;
}

/* ---- text in ---- */

static int fail(char *err, size_t errlen, const char *fmt, const char *word, size_t len)
{
    char w[64];
    snprintf(w, sizeof w, "%.*s", (int)(len < 48 ? len : 48), word);
    snprintf(err, errlen, fmt, w);
    return -1;
}

/* A number, decimal or 0x hexadecimal, filling [s, s + len) exactly. */
static bool number(const char *s, size_t len, uint64_t *out)
{
    char buf[32], *end;
    if (!len || len >= sizeof buf || s[0] == '-' || s[0] == '+')
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    *out = strtoull(buf, &end, 0);
    return *end == '\0';
}

static bool key_value(const char *s, size_t len, uint64_t *out)
{
    const char *colon = memchr(s, ':', len);
    if (!colon)
        return number(s, len, out);
    int ns = lookup(ns_names, 16, s, (size_t)(colon - s));
    uint64_t v;
    if (ns < 0 || !number(colon + 1, len - (size_t)(colon - s) - 1, &v) ||
        (v & GL_KEY_NS_MASK) != 0)
        return false;
    *out = gl_key_make((enum gl_key_ns)ns, v);
    return true;
}

static bool flags_value(const char *s, size_t len, uint16_t *out)
{
    *out = 0;
    if (!len)
        return false;
    while (len) {
        const char *bar = memchr(s, '|', len);
        size_t n = bar ? (size_t)(bar - s) : len;
        size_t i = 0;
        while (i < GL_ARRAY_SIZE(flag_names) &&
               (strlen(flag_names[i].name) != n || strncmp(flag_names[i].name, s, n) != 0))
            i++;
        if (i == GL_ARRAY_SIZE(flag_names))
            return false;
        *out |= flag_names[i].bit;
        s += n + (bar != NULL);
        len -= n + (bar != NULL);
    }
    return true;
}

/* One name=value field into ev; false if the value does not read. */
static int field(const char *name, size_t nlen, const char *v, size_t vlen, struct gl_event *ev)
{
#define IS(s) (nlen == sizeof s - 1 && strncmp(name, s, nlen) == 0)
    uint64_t n;
    if (IS("key"))
        return key_value(v, vlen, &ev->key);
    if (IS("aux"))
        return key_value(v, vlen, &ev->aux);
    if (IS("size"))
        return number(v, vlen, &ev->size);
    if (IS("seq"))
        return number(v, vlen, &ev->seq);
    if (IS("ctx"))
        return number(v, vlen, &ev->ctx);
    if (IS("time"))
        return number(v, vlen, &ev->time_ns);
    if (IS("tid") || IS("stack")) {
        if (!number(v, vlen, &n) || n > UINT32_MAX)
            return false;
        *(IS("tid") ? &ev->tid : &ev->stack) = (uint32_t)n;
        return true;
    }
    if (IS("device")) {
        char buf[16], *end;
        if (!vlen || vlen >= sizeof buf)
            return false;
        memcpy(buf, v, vlen);
        buf[vlen] = '\0';
        long d = strtol(buf, &end, 10);
        if (*end || d < INT16_MIN || d > INT16_MAX)
            return false;
        ev->device = (int16_t)d;
        return true;
    }
    if (IS("kind")) {
        int k = lookup(kind_names, GL_MEM_NKINDS, v, vlen);
        ev->kind = (uint8_t)(k < 0 ? 0 : k);
        return k >= 0;
    }
    if (IS("api")) {
        char buf[64];
        if (vlen >= sizeof buf)
            return false;
        memcpy(buf, v, vlen);
        buf[vlen] = '\0';
        ev->api = (uint16_t)gl_api_of_name(buf);
        return ev->api != GL_API_NONE;
    }
    if (IS("flags"))
        return flags_value(v, vlen, &ev->flags);
    return -1; /* no such field */
#undef IS
}

int gl_codec_parse(const char *line, struct gl_event *ev, char *err, size_t errlen)
{
    memset(ev, 0, sizeof *ev);
    const char *p = line + strspn(line, " \t");
    size_t n = strcspn(p, " \t");
    int type = lookup(type_names, GL_EV_NTYPES, p, n);
    if (type <= 0)
        return fail(err, errlen, "unknown event type '%s'", p, n);
    ev->type = (uint8_t)type;
    for (p += n; *(p += strspn(p, " \t"));) {
        n = strcspn(p, " \t");
        const char *eq = memchr(p, '=', n);
        if (!eq)
            return fail(err, errlen, "'%s' is not name=value", p, n);
        size_t nlen = (size_t)(eq - p), vlen = n - nlen - 1;
        int ok = field(p, nlen, eq + 1, vlen, ev);
        if (ok < 0)
            return fail(err, errlen, "unknown field '%s'", p, nlen);
        if (!ok)
            return fail(err, errlen, "bad value in '%s'", p, n);
        p += n;
    }
    return 0;
}
