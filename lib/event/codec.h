/* SPDX-License-Identifier: MIT */
/* Events as bytes and as text: the encodings a recording of events is written
 * in and read back from (observe/replay.h; the saved event log to come).
 *
 * Binary: one event is GL_CODEC_RECORD bytes, the fields of struct gl_event in
 * their order, little-endian, with no padding: the struct itself on x86-64,
 * so that a writer can copy events unchanged, and a reader on any machine
 * still decodes them.  Decoding checks what a reader must not trust: the
 * type, the memory kind.
 *
 * Text: one event a line, for recordings people write and read (unit tests'
 * fixtures, a dump of a log): the type's name, then name=value fields, those
 * that are 0 left out:
 *
 *   alloc key=0x7f0000200000 size=1024 kind=device api=cuMemAlloc_v2 device=0
 *         stack=1 tid=4242 ctx=0xc1
 *   free key=0x7f0000200000 api=cuMemFree_v2 flags=failed tid=4242
 *   vmm_map key=0x7f4000000000 size=2097152 aux=vmm:0x77
 *
 * Numbers are decimal or 0x hexadecimal; a key or aux in a handle namespace
 * (event/key.h) reads ns:value (vmm, array, mipmap, pool_sub, mempool,
 * graph_memory); kinds, APIs and flags by name. */
#ifndef GPULEAK_CODEC_H
#define GPULEAK_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/event.h"

#define GL_CODEC_RECORD 64

void gl_codec_encode(const struct gl_event *ev, uint8_t out[GL_CODEC_RECORD]);
/* False, with *ev unspecified, when the record cannot be an event (an unknown
 * type or memory kind: a newer writer, or damage). */
bool gl_codec_decode(const uint8_t in[GL_CODEC_RECORD], struct gl_event *ev);

/* The name of an event type ("alloc", "graph_launch"...); NULL if unknown. */
const char *gl_codec_type_name(unsigned type);

/* One line of text for ev (no newline), cut to fit len; returns the length it
 * needed, as snprintf does. */
size_t gl_codec_format(const struct gl_event *ev, char *buf, size_t len);
/* Parse one line (without its newline; leading blanks allowed).  Returns 0,
 * or -1 with what is wrong in err (the word at fault named). */
int gl_codec_parse(const char *line, struct gl_event *ev, char *err, size_t errlen);

#endif
