/* SPDX-License-Identifier: MIT */
#include "save/log_format.h"

#include <stdio.h>
#include <string.h>

#include "event/api.h"

/* ---- header ---- */

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void gl_log_format_header_encode(const struct gl_log_header *h, uint8_t out[GL_LOG_HEADER_SIZE])
{
    memset(out, 0, GL_LOG_HEADER_SIZE);
    memcpy(out, GL_LOG_MAGIC, 8);
    put_le(out + 8, h->version, 2);
    put_le(out + 10, h->header_size, 2);
    put_le(out + 12, h->flags, 4);
    put_le(out + 16, h->pid, 8);
    put_le(out + 24, h->ppid, 8);
    put_le(out + 32, h->start_unix_ns, 8);
    put_le(out + 40, h->clock0_ns, 8);
    put_le(out + 48, h->tsc0, 8);
    put_le(out + 56, h->ring_slots, 4);
    put_le(out + 60, h->slot_size, 4);
}

int gl_log_format_header_decode(const uint8_t *in, size_t len, struct gl_log_header *h, char *err,
                                size_t errlen)
{
    if (len < 8 || memcmp(in, GL_LOG_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a gpuleak event log (no \"%s\" at byte 0)", GL_LOG_MAGIC);
        return -1;
    }
    if (len < 16) {
        snprintf(err, errlen, "truncated at byte %zu, inside the header", len);
        return -1;
    }
    h->version = (uint16_t)get_le(in + 8, 2);
    h->header_size = (uint16_t)get_le(in + 10, 2);
    if (h->version > GL_LOG_VERSION || h->version == 0) {
        snprintf(err, errlen,
                 "format version %u at byte 8, this gpuleak reads version %u: read it with the "
                 "gpuleak that wrote it",
                 h->version, GL_LOG_VERSION);
        return -1;
    }
    if (h->header_size < GL_LOG_HEADER_SIZE || h->header_size % 4) {
        snprintf(err, errlen, "bad header size %u at byte 10", h->header_size);
        return -1;
    }
    if (len < h->header_size) {
        snprintf(err, errlen, "truncated at byte %zu, inside the header", len);
        return -1;
    }
    h->flags = (uint32_t)get_le(in + 12, 4);
    h->pid = get_le(in + 16, 8);
    h->ppid = get_le(in + 24, 8);
    h->start_unix_ns = get_le(in + 32, 8);
    h->clock0_ns = get_le(in + 40, 8);
    h->tsc0 = get_le(in + 48, 8);
    h->ring_slots = h->version >= 4 ? (uint32_t)get_le(in + 56, 4) : 0;
    h->slot_size = h->version >= 4 ? (uint32_t)get_le(in + 60, 4) : 0;
    if (h->ring_slots &&
        (h->ring_slots > GL_LOG_RING_MAX || (h->ring_slots & (h->ring_slots - 1)) ||
         h->slot_size != GL_LOG_SLOT_SIZE)) {
        snprintf(err, errlen, "bad staging ring (%u slots of %u bytes) at byte 56", h->ring_slots,
                 h->slot_size);
        return -1;
    }
    return 0;
}

/* ---- records ---- */

/* Version 1 and 2: a multiply-xor hash of the body's 8-byte words (the last
 * one padded with zeros), folded to 8 bits.  Each word waits for the last
 * multiply: 20 cycles of latency for an event of five words. */
static inline uint8_t fold(uint64_t h)
{
    h ^= h >> 32;
    h ^= h >> 16;
    return (uint8_t)(h ^ (h >> 8));
}

static uint8_t check_v2(const uint8_t *body, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, body + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, body + i, n - i);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
    }
    return fold(h);
}

uint8_t gl_log_format_check(unsigned version, const uint8_t *body, size_t n)
{
    if (version < 3)
        return check_v2(body, n);
    uint64_t x = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, body + i, 8);
        x ^= gl_log_format_rotl(w, i / 8);
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, body + i, n - i);
        x ^= gl_log_format_rotl(w, i / 8);
    }
    return gl_log_format_check_finish(x, n);
}

uint64_t gl_log_format_get(struct gl_log_cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; !c->bad; shift += 7) {
        if (c->p >= c->end || shift > 63) {
            c->bad = true;
            break;
        }
        uint8_t b = *c->p++;
        if (shift == 63 && b > 1) {
            c->bad = true;
            break;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    return 0;
}

const uint8_t *gl_log_format_get_bytes(struct gl_log_cursor *c, size_t *len)
{
    uint64_t n = gl_log_format_get(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        c->bad = true;
        *len = 0;
        return (const uint8_t *)"";
    }
    const uint8_t *p = c->p;
    c->p += n;
    *len = (size_t)n;
    return p;
}

uint8_t gl_log_format_get_u8(struct gl_log_cursor *c)
{
    if (c->bad || c->p >= c->end) {
        c->bad = true;
        return 0;
    }
    return *c->p++;
}

/* ---- events ---- */

enum field {
    F_KIND,
    F_API,
    F_DEVICE,
    F_FLAGS,
    F_TID,
    F_STACK,
    F_KEY,
    F_SIZE,
    F_SEQ,
    F_CTX,
    F_AUX,
    F_TIME,
    F_COUNT
};

#define PACKED_HEAD GL_LOG_PACKED_HEAD
#define WIDE 8 /* F_TID .. F_TIME */

/* The fields into ev, checked: false when they cannot be an event's. */
static bool event_from(unsigned type, const uint64_t v[F_COUNT], struct gl_event *ev)
{
    int64_t device = gl_log_format_unzigzag(v[F_DEVICE]);
    bool api_ok = v[F_API] < GL_API_COUNT || v[F_API] == GL_API_CLIENT_POOL_ALLOC ||
                  v[F_API] == GL_API_CLIENT_POOL_FREE;
    if (type == GL_EV_NONE || type >= GL_EV_NTYPES || v[F_KIND] >= GL_MEM_NKINDS || !api_ok ||
        device < INT16_MIN || device > INT16_MAX || v[F_FLAGS] > UINT16_MAX ||
        v[F_TID] > UINT32_MAX || v[F_STACK] > UINT32_MAX)
        return false;
    ev->type = (uint8_t)type;
    ev->kind = (uint8_t)v[F_KIND];
    ev->api = (uint16_t)v[F_API];
    ev->device = (int16_t)device;
    ev->flags = (uint16_t)v[F_FLAGS];
    ev->tid = (uint32_t)v[F_TID];
    ev->stack = (uint32_t)v[F_STACK];
    ev->key = v[F_KEY];
    ev->size = v[F_SIZE];
    ev->seq = v[F_SEQ];
    ev->ctx = v[F_CTX];
    ev->aux = v[F_AUX];
    ev->time_ns = v[F_TIME];
    return true;
}

/* The first builds' EVENT: u8 type, u16 presence mask, varints. */
static bool decode_varints(const uint8_t *body, size_t n, struct gl_event *ev)
{
    struct gl_log_cursor c = {body, body + n, false};
    unsigned type = gl_log_format_get_u8(&c);
    uint64_t mask = gl_log_format_get_u8(&c);
    mask |= (uint64_t)gl_log_format_get_u8(&c) << 8;
    if (c.bad || mask >> F_COUNT)
        return false;
    uint64_t v[F_COUNT] = {0};
    for (unsigned i = 0; i < F_COUNT; i++)
        if (mask & (1u << i))
            v[i] = gl_log_format_get(&c);
    return gl_log_format_done(&c) && event_from(type, v, ev);
}

static bool decode_packed(const uint8_t *body, size_t n, struct gl_event *ev)
{
    if (n < PACKED_HEAD)
        return false;
    uint64_t head = 0, v[F_COUNT] = {0};
    uint32_t lens = 0;
    memcpy(&head, body, 8);
    memcpy(&lens, body + 8, 4);
    v[F_KIND] = (head >> 8) & 0xff;
    v[F_API] = (head >> 16) & 0xffff;
    v[F_DEVICE] = gl_log_format_zigzag((int16_t)(uint16_t)(head >> 32));
    v[F_FLAGS] = head >> 48;
    size_t at = PACKED_HEAD;
    for (unsigned i = 0; i < WIDE; i++) {
        unsigned len = (lens >> (4 * i)) & 0xf;
        uint64_t x = 0;
        if (len > 8 || at + len > n)
            return false;
        for (unsigned b = 0; b < len; b++)
            x |= (uint64_t)body[at + b] << (8 * b);
        if (len && !(x >> (8 * (len - 1)))) /* written in its fewest bytes */
            return false;
        v[F_TID + i] = x;
        at += len;
    }
    return at == n && event_from(head & 0xff, v, ev);
}

bool gl_log_format_event_decode(unsigned record, const uint8_t *body, size_t n, struct gl_event *ev)
{
    memset(ev, 0, sizeof *ev);
    return record == GL_LOG_EVENT_PACKED ? decode_packed(body, n, ev) : decode_varints(body, n, ev);
}

const char *gl_log_format_record_name(unsigned type)
{
    static const char *const names[] = {
        [GL_LOG_PROCESS] = "process",
        [GL_LOG_EVENT] = "event",
        [GL_LOG_EVENT_PACKED] = "event",
        [GL_LOG_STACK] = "stack",
        [GL_LOG_MODULE] = "module",
        [GL_LOG_PYCODE] = "pycode",
        [GL_LOG_MARK] = "mark",
        [GL_LOG_VERDICT] = "verdict",
        [GL_LOG_END] = "end",
        [GL_LOG_LIMIT] = "limit",
        [GL_LOG_ANSWER] = "answer",
        [GL_LOG_ERROR_STACK] = "error stack",
        [GL_LOG_CLOCK] = "clock",
    };
    return type < sizeof names / sizeof *names ? names[type] : NULL;
}

/* ---- the staging ring ---- */

/* A slot's stamp, as its writer stores it: one aligned word, read whole. */
static uint64_t slot_stamp(const uint8_t *slot, int order)
{
    uint64_t raw = __atomic_load_n((const uint64_t *)(slot + 64), order);
    return get_le((const uint8_t *)&raw, 8);
}

int gl_log_format_slot_decode(const uint8_t *slot, uint64_t index, struct gl_event *ev)
{
    /* The stamp before the bytes and again after them.  A writer clears it
     * before it stores a lap's bytes and stamps them last: read only after,
     * a stamp just stored could pair with the bytes the slot held before it
     * (a running process's writer reaching the reader at this slot), and
     * read as damage.  The same stamp both times, this index's, covers that
     * lap's bytes alone. */
    uint64_t stamp = slot_stamp(slot, __ATOMIC_ACQUIRE);
    if ((stamp & GL_LOG_STAMP_INDEX) != index + 1)
        return 0;
    uint64_t v[8];
    for (size_t i = 0; i < 8; i++)
        v[i] = get_le(slot + 8 * i, 8);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (slot_stamp(slot, __ATOMIC_RELAXED) != stamp)
        return 0; /* a later lap is being stored: this index's event is gone */
    if (gl_log_format_slot_check(v) != stamp >> 56)
        return -1;
    *ev = (struct gl_event){.type = (uint8_t)v[0],
                            .kind = (uint8_t)(v[0] >> 8),
                            .api = (uint16_t)(v[0] >> 16),
                            .device = (int16_t)(uint16_t)(v[0] >> 32),
                            .flags = (uint16_t)(v[0] >> 48),
                            .tid = (uint32_t)v[1],
                            .stack = (uint32_t)(v[1] >> 32),
                            .key = v[2],
                            .size = v[3],
                            .seq = v[4],
                            .ctx = v[5],
                            .aux = v[6],
                            .time_ns = v[7]};
    return 1;
}
