/* SPDX-License-Identifier: MIT */
/* Decoding a driver call's parameters into an event.
 *
 * The parameters are laid out as CUPTI's *_params structs lay them out
 * (generated_cuda_meta.h), one struct per entry point with its arguments in
 * order, so a producer that sees the call's arguments directly can fill the
 * same struct.  Pure functions: no CUDA call, no global state, so unit tests
 * drive them with hand-built structs for every covered cbid. */
#ifndef GPULEAK_DECODE_H
#define GPULEAK_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "event/event.h"

enum gl_site { GL_SITE_ENTER, GL_SITE_EXIT };

/* The tracked API id of a CUPTI driver cbid, GL_API_NONE if not tracked. */
unsigned gl_decode_api_of_cbid(uint32_t cbid);

/* The CUPTI cbid of an API id (for enabling callbacks). */
uint32_t gl_decode_cbid_of_api(unsigned api);

/* Decode the call's parameters at one site.  Allocations, mappings, retains and
 * graphs' memory nodes are decoded at exit (their outputs exist then, and only
 * if the call succeeded; with GL_EVF_FAILED set in ev->flags, an allocation
 * decodes as its request); frees and releases at entry (two-phase,
 * event/dispatch.h), and again at exit.  Fills ev->type, key, size, kind,
 * device (GL_DEVICE_FROM_CONTEXT: the context's), aux, flags.  Returns false
 * when nothing is to be done at this site; at the entry of a device or host
 * allocation, with ev->type set to GL_EV_ALLOC, the event its exit will make
 * (the lines it will touch are warmed meanwhile: base/warm.h). */
bool gl_decode(uint32_t cbid, enum gl_site site, const void *params, struct gl_event *ev);

/* Bytes of a CUDA array described by width/height/depth (0 = 1), channels and
 * CUarray_format; 0 if the format's size is unknown. */
uint64_t gl_decode_array_bytes(uint64_t w, uint64_t h, uint64_t d, unsigned channels,
                               unsigned format);

#endif
