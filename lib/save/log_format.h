/* SPDX-License-Identifier: MIT */
/* The saved event log's format (--save): what the writer (save/log_writer.h)
 * appends and the reader (save/log_reader.h) checks.  doc/manual.md, "The
 * saved event log", is the user's description; this is the contract.
 *
 * A file is a header, the staging ring (version 4 on), then records, each
 * 4-byte aligned:
 *
 *   header  64 bytes: magic "GPULEAKL", u16 version, u16 header size,
 *           u32 flags (0), u64 pid, u64 ppid, u64 start (Unix time, ns),
 *           u64 the writer's clock at start (ns, CLOCK_MONOTONIC), u64 the
 *           time-stamp counter then, then (version 4 on) u32 the ring's
 *           slots (a power of two) and u32 a slot's bytes (72); zeros
 *           before version 4.  Little-endian.  Events'
 *           times are ns since the clock reading, on the clock thread's
 *           word (base/ticker.h; the coarse clock before the thread ticks)
 *           (version 2 on), or ticks since the counter reading (version 1).
 *   ring    (version 4 on) slots of 72 bytes, right after the header.  A
 *           thread in a CUDA call stages its event there (one atomic add
 *           and 72 bytes stored, no encoding), and the writer's helper
 *           thread compacts slots, in the order they were taken, into
 *           EVENT_PACKED (or ERROR_STACK) records: one record per slot.
 *           Slot i (counting every slot ever taken, from 0) lies at
 *           i mod slots: the event as struct gl_event lays it out (64
 *           bytes: u8 type, u8 kind, u16 api, s16 device, u16 flags, u32
 *           tid, u32 stack, u64 key, size, seq, ctx, aux, time), then a u64
 *           stamp stored last: i + 1 (bits 0-55) and the slot's check
 *           (bits 56-63, gl_log_format_slot_check).  A type of
 *           GL_LOG_SLOT_ERROR_STACK is an ERROR_STACK (tid and stack).  A
 *           reader counts the slot records (EVENT_PACKED and ERROR_STACK)
 *           among the records, c of them, and takes slots c, c + 1... while
 *           each is stamped with its own number: those the process staged
 *           and never saw compacted (it died).  Slots are never reused
 *           before they are compacted, so that a process's death loses no
 *           staged event but those being stored at that instant.
 *   record  u32 head, then its body: head = type (bits 0-7) | check (bits
 *           8-15, gl_log_format_check of the body) | length (bits 16-31: the
 *           body's bytes, at most GL_LOG_MAX_BODY); the body, then zeros to the
 *           next multiple of 4.
 *
 * Why a head written last: writers reserve room with one atomic add and fill
 * it; the head is stored last, with release order, so a record is either
 * whole or its head reads 0.  The file is a shared mapping of the page cache,
 * so everything a thread stored survives the process's death (SIGKILL
 * included): at most the records that threads were filling at that instant
 * are lost, one per thread inside a CUDA call, and with them the records
 * after the first such hole (a reader stops at the first zero head).  What
 * the system's own crash loses is the page cache's business (no fsync).
 *
 * Body encodings: numbers are unsigned LEB128 varints (signed ones zigzag
 * first), strings a varint length then bytes (no NUL), byte strings likewise.
 *
 *   PROCESS   once, first: varint format flags (0), strings: gpuleak
 *             version, command line, executable, working directory, host,
 *             the options as given.
 *   EVENT_PACKED (13)  a struct gl_event: u8 type, u8 memory kind, u16 api,
 *             s16 device, u16 flags, u32 of 4-bit lengths of the wide fields
 *             (tid, stack, key, size, seq, ctx, aux, time; 0: the field is 0,
 *             left out), then each wide field present in that many bytes,
 *             little-endian.  What writers write.
 *   EVENT     the same, as the first builds wrote it (still read): u8 type, u16 presence mask (bit
 *             i: the i-th of kind, api, device (zigzag), flags, tid, stack,
 *             key, size, seq, ctx, aux, time follows; zero fields are left
 *             out), then the fields present as varints, in that order.
 *             The time as the header's version says.  (gl_log_format_event_*)
 *   CLOCK     varint ticks, varint ns, both since the header's: pairs written
 *             at the start (two, 2 ms apart), every MiB of the file and at
 *             the end; a reader of a file whose events are in ticks
 *             interpolates between them.  The events' order is the file's
 *             (one reservation each, in the order the calls happened), so
 *             their times need no finer clock than the coarse one.
 *   STACK     varint id (the depot's), varint n, n frames innermost first:
 *             varint where (0: a Python frame, then varint code id and varint
 *             byte offset; 1: an address outside every module, then varint
 *             address; m >= 2: module m - 2, then varint offset from its
 *             bias).  Written before the first event that names it, by the
 *             thread that first sees it; another thread's event may come
 *             first in the file: readers resolve ids after reading it all.
 *   MODULE    varint index (0, 1, 2... in the order written), varint bias
 *             (load address), varint start, varint end (its PT_LOAD span),
 *             bytes build-id (may be empty), string path.
 *   PYCODE    varint id, varint the code object's address, zigzag first
 *             line, zigzag line-table format, strings file and function,
 *             bytes line table: a Python code object as python/py_code.h
 *             copied it.
 *   MARK      varint number, varint seq mark, string name: a checkpoint
 *             (gpuleak_checkpoint or the leak-check client requests).
 *   VERDICT   at the exit check, per outstanding block: varint key, varint
 *             seq, u8 leak kind (enum gl_leak_kind).
 *   END       varint how (enum gl_log_end), zigzag status (exit status or
 *             signal number), varint blocks and bytes classified, varint 1 if
 *             the check could tell which blocks the program still pointed to
 *             (else 0, and string why not): written after the last VERDICT, so
 *             that a reader knows it has them all.
 *   LIMIT     the file reached --save-limit: nothing was written after.
 *   ERROR_STACK  varint tid, varint stack: where the thread's last EVENT
 *             before it made an API error (a free of an unknown address...),
 *             captured when the error was found, after its event was written.
 *   ANSWER    what the driver told the exit check (save/log_answers.h):
 *             varint question, varint argument, then two varints or a string.
 *
 * A reader skips records of a type it does not know (a newer writer of the
 * same version may add some); it refuses a newer version. */
#ifndef GPULEAK_LOG_FORMAT_H
#define GPULEAK_LOG_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "event/event.h"

#define GL_LOG_MAGIC "GPULEAKL"
/* 5: the event types event_record and stream_wait (a capture's forks and
 * joins, event/event.h): a reader of 4 would call such a log damaged.
 * 4: the staging ring after the header (its size in the header).
 * 3: the record check of gl_log_format_check's version 3.
 * 2: events' times are ns since the header's clock reading, on the coarse
 * monotonic clock (common/clock.h).  1 (still read): ticks of the time-stamp
 * counter since the header's, which CLOCK records turn into ns.  A version,
 * not a flag: a reader of 1 would take ns for ticks without a word. */
#define GL_LOG_VERSION 5
#define GL_LOG_HEADER_SIZE 64
#define GL_LOG_MAX_BODY 65535u

enum gl_log_record {
    GL_LOG_PROCESS = 1,
    GL_LOG_EVENT,
    GL_LOG_STACK,
    GL_LOG_MODULE,
    GL_LOG_PYCODE,
    GL_LOG_MARK,
    GL_LOG_VERDICT,
    GL_LOG_END,
    GL_LOG_LIMIT,
    GL_LOG_ANSWER,
    GL_LOG_ERROR_STACK,
    GL_LOG_CLOCK,
    GL_LOG_EVENT_PACKED,
};

static inline bool gl_log_format_is_event(unsigned record)
{
    return record == GL_LOG_EVENT || record == GL_LOG_EVENT_PACKED;
}

/* How a process ended, as its END record says (a log without END: it died
 * without reaching its exit check). */
enum gl_log_end {
    GL_LOG_END_EXIT = 1, /* exit() or return from main; status = exit status */
    GL_LOG_END_SIGNAL,   /* a fatal signal gpuleak caught; status = its number */
    GL_LOG_END_OTHER,    /* _exit, quick_exit, an uncaught exception... */
};

struct gl_log_header {
    uint16_t version, header_size;
    uint32_t flags;
    uint64_t pid, ppid, start_unix_ns, clock0_ns, tsc0;
    uint32_t ring_slots, slot_size; /* version 4 on; 0 before */
};

/* Where the records begin: after the header and the ring. */
static inline uint64_t gl_log_format_records_at(const struct gl_log_header *h)
{
    return h->header_size + (uint64_t)h->ring_slots * h->slot_size;
}

void gl_log_format_header_encode(const struct gl_log_header *h, uint8_t out[GL_LOG_HEADER_SIZE]);
/* 0, or -1 with what is wrong in err: not a log, or a version this reader
 * does not read. */
int gl_log_format_header_decode(const uint8_t *in, size_t len, struct gl_log_header *h, char *err,
                                size_t errlen);

/* ---- records ---- */

/* The record's bytes in the file for a body of n bytes: head and padding. */
static inline size_t gl_log_format_span(size_t n) { return (4 + n + 3) & ~(size_t)3; }

/* The check of a body of n bytes, as the file's version computes it.
 * Version 3: the body's 8-byte words (the last padded with zeros), word i
 * rotated left by 5i bits (gl_log_format_rotl), xored together; then n xored in, one multiply,
 * and the 64 bits folded to 8.  The words are independent: a few cycles,
 * where version 2's chain of multiplies (still read) took twenty. */
uint8_t gl_log_format_check(unsigned version, const uint8_t *body, size_t n);

/* Word i's share: rotated left by 5i bits (mod 64); from word 64 on (bodies
 * over 512 bytes) the word plus (i / 64) times a constant first, so that
 * words 64 apart do not mix alike (a rotation repeats every 64 words). */
static inline __attribute__((always_inline)) uint64_t gl_log_format_rotl(uint64_t w, size_t i)
{
    w += (uint64_t)(i >> 6) * 0x9e3779b97f4a7c15u;
    unsigned r = (unsigned)(5 * i) & 63;
    return r ? w << r | w >> (64 - r) : w;
}

static inline uint8_t gl_log_format_check_finish(uint64_t x, size_t n)
{
    uint64_t h = (x ^ n ^ 0x9e3779b97f4a7c15u) * 0xff51afd7ed558ccdu;
    h ^= h >> 32;
    h ^= h >> 16;
    return (uint8_t)(h ^ (h >> 8));
}

/* The same (version 3) for a body of at most GL_LOG_PADDED_BYTES followed by
 * zeros up to its next multiple of 8: straight-line, for the hot path. */
#define GL_LOG_PADDED_BYTES 80
static inline uint64_t gl_log_format_word(const uint8_t *body, size_t i)
{
    uint64_t w;
    memcpy(&w, body + 8 * i, 8);
    return gl_log_format_rotl(w, i);
}
static inline uint8_t gl_log_format_check_padded(const uint8_t *body, size_t n)
{
    /* Written out: at -O2 the compiler keeps a loop of variable rotations. */
    uint64_t x = 0;
    switch ((n + 7) / 8) {
    case 10:
        x ^= gl_log_format_word(body, 9); /* fall through */
    case 9:
        x ^= gl_log_format_word(body, 8); /* fall through */
    case 8:
        x ^= gl_log_format_word(body, 7); /* fall through */
    case 7:
        x ^= gl_log_format_word(body, 6); /* fall through */
    case 6:
        x ^= gl_log_format_word(body, 5); /* fall through */
    case 5:
        x ^= gl_log_format_word(body, 4); /* fall through */
    case 4:
        x ^= gl_log_format_word(body, 3); /* fall through */
    case 3:
        x ^= gl_log_format_word(body, 2); /* fall through */
    case 2:
        x ^= gl_log_format_word(body, 1); /* fall through */
    case 1:
        x ^= gl_log_format_word(body, 0); /* fall through */
    default:
        break;
    }
    _Static_assert(GL_LOG_PADDED_BYTES == 80, "ten words");
    return gl_log_format_check_finish(x, n);
}

/* A record's head word: its type, its body's check and length. */
static inline uint32_t gl_log_format_pack_head(unsigned type, uint8_t check, size_t n)
{
    return (uint32_t)type | (uint32_t)check << 8 | (uint32_t)n << 16;
}

/* The head of a record written now (this version's check). */
static inline uint32_t gl_log_format_head(unsigned type, const uint8_t *body, size_t n)
{
    return gl_log_format_pack_head(type, gl_log_format_check(GL_LOG_VERSION, body, n), n);
}

/* ---- varints ---- */

#define GL_LOG_VARINT_MAX 10

static inline size_t gl_log_format_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline size_t gl_log_format_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint64_t gl_log_format_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t gl_log_format_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A cursor over a record's body: reads fail (and stay failed) past its end
 * or on a varint longer than 64 bits. */
struct gl_log_cursor {
    const uint8_t *p, *end;
    bool bad;
};
uint64_t gl_log_format_get(struct gl_log_cursor *c);
/* A string or byte string: its bytes (not NUL-terminated) and length. */
const uint8_t *gl_log_format_get_bytes(struct gl_log_cursor *c, size_t *len);
uint8_t gl_log_format_get_u8(struct gl_log_cursor *c);
/* Whether the body was read exactly to its end, without failing. */
static inline bool gl_log_format_done(const struct gl_log_cursor *c)
{
    return !c->bad && c->p == c->end;
}

/* ---- events ---- */

/* The longest compact event. */
/* Room for any encoded event, with the 8 bytes the encoder writes past its
 * last field. */
#define GL_LOG_EVENT_MAX (12 + 8 * 8 + 8)
_Static_assert(12 + 8 * 8 <= GL_LOG_PADDED_BYTES, "an event's body is checked as padded");

/* The packed event (GL_LOG_EVENT_PACKED): a fixed head of 12 bytes - u8
 * type, u8 memory kind, u16 API, s16 device, u16 flags, then a u32 of 4-bit
 * lengths of the 8 wide fields (thread id, stack, key, size, allocation
 * number, context, aux, time; 0: the field is 0, left out) - then each wide
 * field present in that many bytes, little-endian.  A length is one count of
 * leading zeros and a field one unaligned store, without varints' byte loop
 * (bench/RESULTS.md). */
#define GL_LOG_PACKED_HEAD 12

static inline __attribute__((always_inline)) uint8_t *
gl_log_format_put_field(uint8_t *p, uint64_t v, unsigned i, uint32_t *lens)
{
    unsigned len = v ? (unsigned)(71 - __builtin_clzll(v)) >> 3 : 0;
    memcpy(p, &v, 8); /* the buffer has room: GL_LOG_EVENT_MAX */
    *lens |= (uint32_t)len << (4 * i);
    return p + len;
}

/* ev as an EVENT_PACKED body, with time (the writer's clock ticks since the
 * header: ev->time_ns is not used); returns its length.  Inline: the
 * writer's hot path. */
static inline __attribute__((always_inline)) size_t
gl_log_format_event_encode(const struct gl_event *ev, uint64_t time, uint8_t *out)
{
    uint32_t lens = 0;
    uint8_t *p = out + GL_LOG_PACKED_HEAD;
    p = gl_log_format_put_field(p, ev->tid, 0, &lens);
    p = gl_log_format_put_field(p, ev->stack, 1, &lens);
    p = gl_log_format_put_field(p, ev->key, 2, &lens);
    p = gl_log_format_put_field(p, ev->size, 3, &lens);
    p = gl_log_format_put_field(p, ev->seq, 4, &lens);
    p = gl_log_format_put_field(p, ev->ctx, 5, &lens);
    p = gl_log_format_put_field(p, ev->aux, 6, &lens);
    p = gl_log_format_put_field(p, time, 7, &lens);
    uint64_t head = (uint64_t)ev->type | (uint64_t)ev->kind << 8 | (uint64_t)ev->api << 16 |
                    (uint64_t)(uint16_t)ev->device << 32 | (uint64_t)ev->flags << 48;
    memcpy(out, &head, 8);
    memcpy(out + 8, &lens, 4);
    return (size_t)(p - out);
}
/* ---- the staging ring (version 4) ---- */

#define GL_LOG_SLOT_SIZE 72
#define GL_LOG_RING_MAX (1u << 24) /* slots a reader accepts */
/* A slot's type byte for an ERROR_STACK (no event type is this high). */
#define GL_LOG_SLOT_ERROR_STACK 0xff
#define GL_LOG_STAMP_INDEX ((UINT64_C(1) << 56) - 1)

/* A slot's check: its eight words rotated as a record's and folded.
 * Written out: a loop is not unrolled at -O2, and its variable rotations
 * cost three times the constant ones (bench/RESULTS.md). */
static inline __attribute__((always_inline)) uint8_t gl_log_format_slot_check(const uint64_t v[8])
{
    uint64_t x = v[0] ^ gl_log_format_rotl(v[1], 1) ^ gl_log_format_rotl(v[2], 2) ^
                 gl_log_format_rotl(v[3], 3) ^ gl_log_format_rotl(v[4], 4) ^
                 gl_log_format_rotl(v[5], 5) ^ gl_log_format_rotl(v[6], 6) ^
                 gl_log_format_rotl(v[7], 7);
    return gl_log_format_check_finish(x, 64);
}

/* What slot (72 bytes) holds for slot number index: 1 and its event in ev
 * (an error stack: type GL_LOG_SLOT_ERROR_STACK, tid and stack set); 0: not
 * stamped with index (not written, an older lap's, or being stored again);
 * -1: stamped, but its check does not match (damaged). */
int gl_log_format_slot_decode(const uint8_t *slot, uint64_t index, struct gl_event *ev);

/* An EVENT or EVENT_PACKED body (record: its type) back; false when it cannot
 * be one (an unknown type, kind or field, a field out of range or not in its
 * fewest bytes, bytes left over). */
bool gl_log_format_event_decode(unsigned record, const uint8_t *body, size_t n,
                                struct gl_event *ev);

/* The name of a record type ("event", "stack"...), for messages; NULL if unknown. */
const char *gl_log_format_record_name(unsigned type);

#endif
