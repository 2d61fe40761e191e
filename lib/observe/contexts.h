/* SPDX-License-Identifier: MIT */
/* CUDA contexts and streams the producers saw, and the device each belongs to.
 *
 * An event's device is the one of the context current at the call (or of its
 * stream, for stream-ordered memory); producers place events with these
 * lookups, and consumers that need a device the producer left unresolved ask
 * through the dispatcher's placement (event/dispatch.h), never here.
 * The device is asked of CUPTI (cuptiGetDeviceId) once per context, when CUPTI
 * reports the context created, never through the driver API inside a callback.
 * Lookups are lock-free: contexts are few and their entries only ever get
 * published; streams are read under a sequence number (contexts.c). */
#ifndef GPULEAK_CONTEXTS_H
#define GPULEAK_CONTEXTS_H

#include <stdbool.h>
#include <stdint.h>

#include "event/dispatch.h"

/* How the device of a context is found: cuptiGetDeviceId in the runtime, a fake
 * in tests.  Returns the ordinal or -1. */
typedef int (*gl_ctx_device_query_fn)(uint64_t ctx);
void gl_contexts_set_query(gl_ctx_device_query_fn fn);

/* A context was created (resource callback): learn its device. */
void gl_contexts_created(uint64_t ctx);
/* A context is being destroyed: forget it (its pointer value may be reused). */
void gl_contexts_destroyed(uint64_t ctx);
/* Device of ctx, asking once for contexts never announced; -1 if unknown. */
int gl_contexts_device(uint64_t ctx);

/* Streams and their contexts (resource callbacks), so that a stream-ordered
 * call is placed on its stream's device, not the current one.  The default
 * streams (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) and unknown streams are
 * the current context's. */
void gl_contexts_stream_created(uint64_t stream, uint64_t ctx);
void gl_contexts_stream_destroyed(uint64_t stream);
/* The context a stream was created in; 0 for the default streams and for
 * streams not announced.  Stream-ordered memory comes from the pool of its
 * stream's device, and a stream stays in its context: an allocation on a
 * known stream needs no question to the driver (about 25 ns on an H200).
 * No lock unless a writer changes the streams meanwhile. */
uint64_t gl_contexts_stream_ctx(uint64_t stream);
#ifdef GL_ASSERTIONS
/* Tests: run by a lock-free stream lookup between its reads and its check of
 * the sequence number, where another thread's change would land. */
extern void (*gl_contexts_test_between_reads)(void);
#endif

/* What the producers learned of contexts, for consumers that place events on
 * devices (event/dispatch.h). */
extern const struct gl_placement gl_contexts_placement;
/* reset forgets every context and stream. */
extern const struct gl_component gl_contexts_component;

#endif
